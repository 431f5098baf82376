/* conv.c — per-layer comparison of the ways hidetc runs a group-1 2-D conv: im2col +
 * matmul (implicit GEMM), Winograd F(2x2, 3x3) (3x3 stride 1 only) and the direct
 * template (src/target/cpu/templates/conv_dw_cpu.c). For each layer shape of ResNet-50 and
 * Inception-V3 the graph conv(+bias) -> ReLU is compiled each way (the same tuning level)
 * and run in alternation, rounds of `reps` runs each; the medians of the per-round medians
 * are printed, with the path the default rules pick (src/passes/lower.c); helpers shared
 * with bench/winograd.c in bench/layer_bench.h. Build and run:
 * docs/conv_dw.md ("Dense convolutions"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_bench.h"
#include "passes/passes.h"
#include "runtime/runtime.h"

typedef struct layer {
    const char *name;
    int64_t c, h, w, oc, kh, kw, s, ph, pw;
} layer;

static const layer layers[] = {
    /* ResNet-50 */
    {"r50 conv1 7x7/2 3->64", 3, 224, 224, 64, 7, 7, 2, 3, 3},
    {"r50 56 3x3 64->64", 64, 56, 56, 64, 3, 3, 1, 1, 1},
    {"r50 56 3x3/2 128", 128, 56, 56, 128, 3, 3, 2, 1, 1},
    {"r50 28 3x3 128->128", 128, 28, 28, 128, 3, 3, 1, 1, 1},
    {"r50 28 3x3/2 256", 256, 28, 28, 256, 3, 3, 2, 1, 1},
    {"r50 14 3x3 256->256", 256, 14, 14, 256, 3, 3, 1, 1, 1},
    {"r50 14 3x3/2 512", 512, 14, 14, 512, 3, 3, 2, 1, 1},
    {"r50 56 1x1 64->256", 64, 56, 56, 256, 1, 1, 1, 0, 0},
    {"r50 56 1x1 256->64", 256, 56, 56, 64, 1, 1, 1, 0, 0},
    /* Inception-V3 */
    {"inc 1a 3x3/2 3->32", 3, 299, 299, 32, 3, 3, 2, 0, 0},
    {"inc 2a 3x3 32->32 p0", 32, 149, 149, 32, 3, 3, 1, 0, 0},
    {"inc 2b 3x3 32->64", 32, 147, 147, 64, 3, 3, 1, 1, 1},
    {"inc 3b 1x1 64->80", 64, 73, 73, 80, 1, 1, 1, 0, 0},
    {"inc 4a 3x3 80->192 p0", 80, 73, 73, 192, 3, 3, 1, 0, 0},
    {"inc 5x5 48->64", 48, 35, 35, 64, 5, 5, 1, 2, 2},
    {"inc 35 3x3 64->96", 64, 35, 35, 96, 3, 3, 1, 1, 1},
    {"inc 35 3x3 96->96", 96, 35, 35, 96, 3, 3, 1, 1, 1},
    {"inc 6a 3x3/2 288->384", 288, 35, 35, 384, 3, 3, 2, 0, 0},
    {"inc 17 1x7 128->128", 128, 17, 17, 128, 1, 7, 1, 0, 3},
    {"inc 17 7x1 192->192", 192, 17, 17, 192, 7, 1, 1, 3, 0},
    {"inc 8 1x3 384->384", 384, 8, 8, 384, 1, 3, 1, 0, 1},
};

static hc_graph *build(const layer *l) {
    hc_rng r = {42};
    hc_graph *g = hc_graph_new("layer", 17);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, l->c, l->h, l->w});
    int64_t pads[4] = {l->ph, l->pw, l->ph, l->pw}, st[2] = {l->s, l->s};
    hc_attr at[2] = {{.name = "pads", .kind = HC_ATTR_INTS, .n = 4, .ints = pads},
                     {.name = "strides", .kind = HC_ATTR_INTS, .n = 2, .ints = st}};
    hc_tensor *in[3] = {x, rand_const(g, &r, 4, (int64_t[]){l->oc, l->c, l->kh, l->kw}),
                        rand_const(g, &r, 1, &l->oc)};
    hc_tensor *y = node(g, HC_OPK_CONV, 3, in, 2, at);
    y = node(g, HC_OPK_RELU, 1, &y, 0, NULL);
    hc_graph_add_output(g, y);
    return g;
}

/* The path a compiled model took: its kernels' anchor ops. */
static const char *path_of(hc_model *m) {
    for (int q = 0; q < hc_model_num_kernels(m); q++) {
        hc_op_kind k = hc_model_kernel_node(m, q)->op;
        if (k == HC_OPK_WINO_INPUT || k == HC_OPK_WINO_OUTPUT) return "wino";
        if (k == HC_OPK_CONV) return "direct";
    }
    return "im2col";
}

int main(int argc, char **argv) {
    /* bench_conv [ROUNDS [REPS [LAYER-SUBSTRING [THREADS [TUNE]]]]] */
    int rounds = argc > 1 ? atoi(argv[1]) : 5, reps = argc > 2 ? atoi(argv[2]) : 20;
    const char *only = argc > 3 && argv[3][0] ? argv[3] : NULL;
    int threads = argc > 4 ? atoi(argv[4]) : 0, tune = argc > 5 ? atoi(argv[5]) : 0;
    static const char *const names[3] = {"im2col", "wino", "direct"};
    printf("%-24s %8s %8s %8s  %-7s %s\n", "layer", names[0], names[1], names[2], "rules",
           "(ms, medians of the rounds' medians; GFLOP/s of the best)");
    for (size_t li = 0; li < sizeof layers / sizeof layers[0]; li++) {
        const layer *l = &layers[li];
        if (only && !strstr(l->name, only)) continue;
        bool wino = l->kh == 3 && l->kw == 3 && l->s == 1;
        hc_model *m[4] = {0};
        hc_error err = {0};
        for (int v = 0; v < 4; v++) {
            if (v == 1 && !wino) continue;
            hc_compile_options o = {.num_threads = threads, .tune_level = tune};
            if (v == 0) o.paths.no_winograd = o.paths.no_direct = true;
            if (v == 1) o.paths.force_winograd = o.paths.no_direct = true;
            if (v == 2) o.paths.force_direct = true;
            if (hc_model_compile(build(l), &o, &m[v], &err) != HC_OK) {
                fprintf(stderr, "%s: %s\n", l->name, err.msg);
                return 1;
            }
        }
        const hc_tensor *xt = hc_model_input(m[0], 0), *yt = hc_model_output(m[0], 0);
        float *x = calloc((size_t)hc_tensor_numel(xt), sizeof(float));
        float *y = calloc((size_t)hc_tensor_numel(yt), sizeof(float));
        for (int64_t i = 0; i < hc_tensor_numel(xt); i++) x[i] = (float)(i % 7) * 0.1f;
        void *ins[1] = {x}, *outs[1] = {y};
        double *round_med[3], *t = malloc(sizeof(double) * (size_t)reps), med[3] = {0};
        for (int v = 0; v < 3; v++) {
            round_med[v] = malloc(sizeof(double) * (size_t)rounds);
            for (int w = 0; m[v] && w < 3; w++) hc_model_run(m[v], ins, outs, &err);
        }
        for (int rd = 0; rd < rounds; rd++)
            for (int v = 0; v < 3; v++) {
                if (!m[v]) continue;
                for (int k = 0; k < reps; k++) {
                    double t0 = hc_now_ms();
                    hc_model_run(m[v], ins, outs, &err);
                    t[k] = hc_now_ms() - t0;
                }
                round_med[v][rd] = median(t, reps);
            }
        double best = 1e30;
        printf("%-24s", l->name);
        for (int v = 0; v < 3; v++) {
            if (!m[v]) {
                printf(" %8s", "-");
                continue;
            }
            med[v] = median(round_med[v], rounds);
            if (med[v] < best) best = med[v];
            printf(" %8.3f", med[v]);
        }
        int64_t oh = (l->h + 2 * l->ph - l->kh) / l->s + 1,
                ow = (l->w + 2 * l->pw - l->kw) / l->s + 1;
        double gf = 2.0 * l->oc * oh * ow * l->c * l->kh * l->kw / (best * 1e6);
        printf("  %-7s %.0f\n", path_of(m[3]), gf);
        fflush(stdout);
        for (int v = 0; v < 4; v++)
            if (m[v]) hc_model_free(m[v]);
        for (int v = 0; v < 3; v++) free(round_med[v]);
        free(t), free(x), free(y);
    }
    return 0;
}
