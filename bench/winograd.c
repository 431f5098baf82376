/* winograd.c — per-layer comparison of the two lowerings of a 3x3 stride-1 conv: im2col
 * (implicit GEMM) against Winograd F(2x2, 3x3) (docs/winograd.md). For each layer shape of
 * ResNet-50 and Inception-V3, the graph conv(+bias) -> ReLU [-> 1x1 conv, its consumer in
 * ResNet-50's bottleneck, where the output transform can land as a prologue] is compiled
 * both ways and run in alternation (rounds of `reps` runs each); medians of the per-round
 * medians are printed. Build: see docs/winograd.md ("Measuring"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_bench.h"
#include "passes/passes.h"
#include "runtime/runtime.h"

typedef struct layer {
    const char *name;
    int64_t c, h, w, oc, pad;
} layer;

static const layer layers[] = {
    {"r50 56x56 64->64", 64, 56, 56, 64, 1},       {"r50 28x28 128->128", 128, 28, 28, 128, 1},
    {"r50 14x14 256->256", 256, 14, 14, 256, 1},   {"r50 7x7 512->512", 512, 7, 7, 512, 1},
    {"inc 149x149 32->32 p0", 32, 149, 149, 32, 0}, {"inc 147x147 32->64", 32, 147, 147, 64, 1},
    {"inc 73x73 80->192 p0", 80, 73, 73, 192, 0},  {"inc 35x35 64->96", 64, 35, 35, 96, 1},
    {"inc 35x35 96->96", 96, 35, 35, 96, 1},       {"inc 8x8 448->384", 448, 8, 8, 384, 1},
    /* probes for the rule's edges: few channels, small images */
    {"probe 56x56 16->16", 16, 56, 56, 16, 1},     {"probe 56x56 8->32", 8, 56, 56, 32, 1},
    {"probe 112x112 3->64", 3, 112, 112, 64, 1},   {"probe 28x28 32->32", 32, 28, 28, 32, 1},
    {"probe 5x5 256->256", 256, 5, 5, 256, 1},     {"probe 4x4 256->256", 256, 4, 4, 256, 1},
    {"probe 3x3 256->256", 256, 3, 3, 256, 1},     {"probe 2x2 512->512", 512, 2, 2, 512, 1},
    {"probe 28x28 64->8", 64, 28, 28, 8, 1},       {"probe 28x28 64->4", 64, 28, 28, 4, 1},
    {"probe 6x6 256->256", 256, 6, 6, 256, 1},     {"probe 28x28 4->64", 4, 28, 28, 64, 1},
};

static hc_graph *build(const layer *l, bool consumer) {
    hc_rng r = {42};
    hc_graph *g = hc_graph_new("layer", 17);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, l->c, l->h, l->w});
    int64_t pads[4] = {l->pad, l->pad, l->pad, l->pad};
    hc_attr pa = {.name = "pads", .kind = HC_ATTR_INTS, .n = 4, .ints = pads};
    hc_tensor *in[3] = {x, rand_const(g, &r, 4, (int64_t[]){l->oc, l->c, 3, 3}),
                        rand_const(g, &r, 1, &l->oc)};
    hc_tensor *y = node(g, HC_OPK_CONV, 3, in, 1, &pa);
    y = node(g, HC_OPK_RELU, 1, &y, 0, NULL);
    if (consumer) {
        hc_tensor *in2[2] = {y, rand_const(g, &r, 4, (int64_t[]){l->oc, l->oc, 1, 1})};
        y = node(g, HC_OPK_CONV, 2, in2, 0, NULL);
    }
    hc_graph_add_output(g, y);
    return g;
}

int main(int argc, char **argv) {
    /* bench_winograd [ROUNDS [REPS [LAYER-SUBSTRING [THREADS [CONSUMER 0|1|2]]]]] */
    int rounds = argc > 1 ? atoi(argv[1]) : 5, reps = argc > 2 ? atoi(argv[2]) : 20;
    int which = argc > 5 ? atoi(argv[5]) : 2; /* 0: alone, 1: +1x1, 2: both */
    const char *only = argc > 3 ? argv[3] : NULL;
    int threads = argc > 4 ? atoi(argv[4]) : 0;
    printf("%-24s %-6s %8s %8s %6s %8s %8s %6s   (medians, then minima, of the rounds' medians)\n",
           "layer", "graph", "im2col", "wino", "ratio", "im2col", "wino", "ratio");
    for (size_t li = 0; li < sizeof layers / sizeof layers[0]; li++) {
        const layer *l = &layers[li];
        if (only && !strstr(l->name, only)) continue;
        for (int consumer = 0; consumer < 2; consumer++) {
            if (which != 2 && consumer != which) continue;
            hc_model *m[2];
            hc_error err = {0};
            for (int v = 0; v < 2; v++) {
                hc_compile_options o = {.paths = {.no_winograd = v == 0, .force_winograd = v == 1},
                                        .num_threads = threads};
                if (hc_model_compile(build(l, consumer), &o, &m[v], &err) != HC_OK) {
                    fprintf(stderr, "%s: %s\n", l->name, err.msg);
                    return 1;
                }
            }
            const hc_tensor *xt = hc_model_input(m[0], 0), *yt = hc_model_output(m[0], 0);
            float *x = calloc((size_t)hc_tensor_numel(xt), sizeof(float));
            float *y = calloc((size_t)hc_tensor_numel(yt), sizeof(float));
            void *ins[1] = {x}, *outs[1] = {y};
            double *round_med[2], *t = malloc(sizeof(double) * (size_t)reps);
            for (int v = 0; v < 2; v++) {
                round_med[v] = malloc(sizeof(double) * (size_t)rounds);
                for (int w = 0; w < 3; w++) hc_model_run(m[v], ins, outs, &err);
            }
            for (int rd = 0; rd < rounds; rd++)
                for (int v = 0; v < 2; v++) {
                    for (int k = 0; k < reps; k++) {
                        double t0 = hc_now_ms();
                        hc_model_run(m[v], ins, outs, &err);
                        t[k] = hc_now_ms() - t0;
                    }
                    round_med[v][rd] = median(t, reps);
                }
            double a = median(round_med[0], rounds), b = median(round_med[1], rounds);
            double amin = round_med[0][0], bmin = round_med[1][0]; /* sorted by median() */
            printf("%-24s %-6s %8.3f %8.3f %6.2f %8.3f %8.3f %6.2f", l->name,
                   consumer ? "+1x1" : "alone", a, b, a / b, amin, bmin, amin / bmin);
            /* per kernel, median over reps profiled runs: im2col | winograd */
            for (int v = 0; v < 2; v++) {
                int nk = hc_model_num_kernels(m[v]);
                double *ms = malloc(sizeof(double) * (size_t)nk * (size_t)reps);
                double *one = malloc(sizeof(double) * (size_t)nk), *col = malloc(sizeof(double) * (size_t)reps);
                for (int k = 0; k < reps; k++) {
                    hc_model_run_profile(m[v], ins, outs, one, &err);
                    for (int q = 0; q < nk; q++) ms[q * reps + k] = one[q];
                }
                printf(" %s", v ? "| wino:" : "  im2col:");
                for (int q = 0; q < nk; q++) {
                    memcpy(col, ms + q * reps, sizeof(double) * (size_t)reps);
                    printf(" %s=%.3f", hc_op_name(hc_model_kernel_node(m[v], q)->op), median(col, reps));
                }
                free(ms), free(one), free(col);
            }
            printf("\n");
            fflush(stdout);
            for (int v = 0; v < 2; v++) hc_model_free(m[v]), free(round_med[v]);
            free(t), free(x), free(y);
        }
    }
    return 0;
}
