/* dynamic_batch.c — a CNN with a symbolic batch compiled once against static compiles,
 * one per batch (docs/dynamic.md; bench/results/dynamic.md). The CLI cannot compile a
 * symbolic model yet, hence this driver over hc_model_compile / hc_model_run_dims.
 *
 *   dynamic_batch MODEL.onnx SYMBOL THREADS ROUNDS REPEAT B1 [B2 ...] [--check DIR ...]
 *
 * Compiles MODEL with SYMBOL kept symbolic, and once per batch B with --dim SYMBOL=B;
 * then ROUNDS alternated rounds (static B, symbolic at B, for each B), each the median
 * of REPEAT runs after 3 warm-ups; prints every round and the medians of the rounds.
 * --check DIR: DIR/inputs/INPUT.npy run by the symbolic model against
 * DIR/expected/OUTPUT.npy (the export's PyTorch outputs), and at every B the symbolic
 * model's outputs against the static one's (same random input). One input, one output.
 *
 * DYN_NO_WINOGRAD=1 compiles the static models without Winograd (the symbolic batch's
 * choice); DYN_VERBOSE=1 lists the kernels.
 *
 * Build: cc -O2 -fopenmp -Isrc bench/dynamic_batch.c build/libhidetc.a -lprotobuf-c -lm -ldl -o X */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/npy.h"
#include "frontend/onnx.h"
#include "passes/passes.h"
#include "runtime/runtime.h"

static hc_error err;

static void die(const char *what) {
    fprintf(stderr, "%s: %s\n", what, err.msg);
    exit(1);
}

static hc_model *compile(const char *path, const char *sym, int64_t batch, int threads) {
    hc_onnx_dim d = {sym, batch};
    hc_onnx_options o = {.symbolic = batch <= 0, .ndims = batch > 0, .dims = &d};
    hc_graph *g = NULL;
    if (hc_onnx_load_with(path, &o, &g, &err) != HC_OK) die("load");
    if (hc_pass_infer_shapes(g, &err) != HC_OK) die("infer");
    hc_compile_options co = {.num_threads = threads, .verbose = getenv("DYN_VERBOSE") != NULL};
    /* DYN_NO_WINOGRAD=1: the static compiles without Winograd too (as the symbolic batch
     * takes the direct blocked conv), to tell that choice from the rest */
    co.paths.no_winograd = batch > 0 && getenv("DYN_NO_WINOGRAD") != NULL;
    hc_model *m = NULL;
    double t0 = hc_now_ms();
    if (hc_model_compile(g, &co, &m, &err) != HC_OK) die("compile");
    int templ = 0;
    for (int i = 0; i < hc_model_num_kernels(m); i++) templ += hc_model_kernel_templated(m, i);
    fprintf(stderr, "compiled %s (%s): %d kernels, %d templated, %.0f ms\n", path,
            batch > 0 ? "static" : "symbolic", hc_model_num_kernels(m), templ, hc_now_ms() - t0);
    return m;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of `repeat` runs (3 warm-ups first). */
static double bench(hc_model *m, void *in, const int64_t *dims, void *out, int repeat) {
    const int64_t *dl[1] = {dims};
    void *ins[1] = {in}, *outs[1] = {out};
    double *t = malloc(sizeof(double) * (size_t)repeat);
    for (int i = 0; i < 3 + repeat; i++) {
        double t0 = hc_now_ms();
        if (hc_model_run_dims(m, ins, dl, outs, NULL, &err) != HC_OK) die("run");
        if (i >= 3) t[i - 3] = hc_now_ms() - t0;
    }
    qsort(t, (size_t)repeat, sizeof(double), cmp_d);
    double med = t[repeat / 2];
    free(t);
    return med;
}

static double max_diff(const float *x, const float *y, int64_t n) {
    double w = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)x[i] - y[i]) / (1 + fabs((double)y[i]));
        if (!(d <= w)) w = d;
    }
    return w;
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: %s MODEL.onnx SYMBOL THREADS ROUNDS REPEAT B1 [B2 ...] "
                        "[--check DIR ...]\n", argv[0]);
        return 2;
    }
    const char *path = argv[1], *sym = argv[2];
    int threads = atoi(argv[3]), rounds = atoi(argv[4]), repeat = atoi(argv[5]);
    int nb = 0, ncheck = 0;
    int64_t batches[16];
    const char *checks[16];
    for (int i = 6; i < argc; i++) {
        if (!strcmp(argv[i], "--check") && i + 1 < argc) {
            if (ncheck < 16) checks[ncheck++] = argv[++i];
        } else if (nb < 16) {
            batches[nb++] = atoll(argv[i]);
        }
    }
    hc_model *dyn = compile(path, sym, 0, threads);
    const hc_graph *g = hc_model_graph(dyn);
    const hc_tensor *it = g->inputs.data[0], *ot = g->outputs.data[0];
    for (int c = 0; c < ncheck; c++) { /* the export's PyTorch outputs */
        char p[4096];
        hc_npy x, y;
        snprintf(p, sizeof p, "%s/inputs/%s.npy", checks[c], it->name);
        if (hc_npy_read(p, &x, &err) != HC_OK) die(p);
        snprintf(p, sizeof p, "%s/expected/%s.npy", checks[c], ot->name);
        if (hc_npy_read(p, &y, &err) != HC_OK) die(p);
        float *out = calloc((size_t)hc_npy_numel(&y) + 1, sizeof(float));
        const int64_t *dl[1] = {x.shape};
        if (hc_model_run_dims(dyn, (void *[]){x.data}, dl, (void *[]){out}, NULL, &err) != HC_OK)
            die("run");
        printf("check %s: batch %lld, max rel diff against PyTorch %.2g\n", checks[c],
               (long long)x.shape[0], max_diff(out, y.data, hc_npy_numel(&y)));
        free(out);
        hc_npy_free(&x), hc_npy_free(&y);
    }
    hc_model *st[16];
    float *in[16], *o1[16], *o2[16];
    int64_t dims[16][HC_MAX_DIMS];
    for (int b = 0; b < nb; b++) {
        st[b] = compile(path, sym, batches[b], threads);
        memcpy(dims[b], it->shape, sizeof dims[b]);
        dims[b][0] = batches[b];
        int64_t n = 1, no = batches[b];
        for (int d = 0; d < it->ndim; d++) n *= dims[b][d];
        for (int d = 1; d < ot->ndim; d++) no *= ot->shape[d];
        in[b] = malloc(sizeof(float) * (size_t)n);
        o1[b] = calloc((size_t)no, sizeof(float)), o2[b] = calloc((size_t)no, sizeof(float));
        unsigned s = 12345;
        for (int64_t i = 0; i < n; i++) s = s * 1103515245u + 12345u, in[b][i] = (float)((s >> 9) % 2000) / 1000.0f - 1.0f;
        const int64_t *dl[1] = {dims[b]};
        if (hc_model_run_dims(st[b], (void *[]){in[b]}, dl, (void *[]){o1[b]}, NULL, &err) ||
            hc_model_run_dims(dyn, (void *[]){in[b]}, dl, (void *[]){o2[b]}, NULL, &err))
            die("run");
        printf("batch %lld: symbolic vs static max rel diff %.2g\n", (long long)batches[b],
               max_diff(o2[b], o1[b], no));
    }
    double *ts = calloc((size_t)(nb * rounds), sizeof(double)), *td = calloc((size_t)(nb * rounds), sizeof(double));
    for (int r = 0; r < rounds; r++)
        for (int b = 0; b < nb; b++) {
            ts[b * rounds + r] = bench(st[b], in[b], dims[b], o1[b], repeat);
            td[b * rounds + r] = bench(dyn, in[b], dims[b], o2[b], repeat);
            printf("round %d batch %lld: static %.2f ms, symbolic %.2f ms\n", r + 1,
                   (long long)batches[b], ts[b * rounds + r], td[b * rounds + r]);
            fflush(stdout);
        }
    for (int b = 0; b < nb; b++) {
        qsort(ts + b * rounds, (size_t)rounds, sizeof(double), cmp_d);
        qsort(td + b * rounds, (size_t)rounds, sizeof(double), cmp_d);
        double s = ts[b * rounds + rounds / 2], d = td[b * rounds + rounds / 2];
        printf("batch %lld: static %.2f ms, symbolic %.2f ms (%.2fx)\n", (long long)batches[b], s,
               d, d / s);
    }
    return 0;
}
