/* dynamic_matmul.c — a static compile against the symbolic compile of one linear layer
 * with bias + GELU (through Erf, as exporters write it) at the same shapes (issue 18:
 * a symbolic kernel within 5% of the static one). bench/results/dynamic.md has the
 * figures and the command.
 *
 *   x [M, K] (or [2, M/2, K] with --3d) x W [K, N] + b [N] -> GELU
 *
 * static: the graph with M fixed; symbolic: M (or batch and seq) a symbol with its hint
 * at the same value (--hint H: another value), run through hc_model_run_dims. Each round
 * times `reps` runs of one model then of the other (alternating which goes first); the
 * result is the median over rounds of each round's median.
 *
 *   bench_dynamic_matmul M N [K] [--reps R] [--rounds N] [--threads T] [--hint H] [--3d]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "passes/passes.h"
#include "runtime/runtime.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static hc_error err;

static hc_tensor *op(hc_graph *g, hc_op_kind k, const char *name, int n, hc_tensor **in) {
    hc_node *nd = hc_graph_add_node(g, k, name, n, in, 0, NULL, 0, NULL, &err);
    if (!nd) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        exit(2);
    }
    return nd->outputs[0];
}

static hc_tensor *scalar(hc_graph *g, const char *name, float v) {
    return hc_graph_constant(g, name, HC_F32, 0, NULL, &v);
}

/* The layer; symbolic: the rows (or batch and seq) are symbols with these hints. */
static hc_graph *build(int64_t m, int64_t n, int64_t k, bool three_d, bool symbolic, int64_t hint) {
    hc_graph *g = hc_graph_new("linear_gelu", 17);
    hc_tensor *x;
    if (three_d) {
        int64_t shape[3] = {2, m / 2, k};
        x = hc_graph_add_input(g, "x", HC_F32, 3, shape);
        if (symbolic) {
            const hc_sym *d[3] = {hc_sym_var(&g->arena, hc_graph_symbol(g, "batch", 2)),
                                  hc_sym_var(&g->arena, hc_graph_symbol(g, "seq", hint / 2)),
                                  hc_sym_const(&g->arena, k)};
            hc_tensor_set_sym_shape(x, 3, d);
        }
    } else {
        int64_t shape[2] = {m, k};
        x = hc_graph_add_input(g, "x", HC_F32, 2, shape);
        if (symbolic) {
            const hc_sym *d[2] = {hc_sym_var(&g->arena, hc_graph_symbol(g, "rows", hint)),
                                  hc_sym_const(&g->arena, k)};
            hc_tensor_set_sym_shape(x, 2, d);
        }
    }
    float *w = malloc(sizeof(float) * (size_t)(k * n)), *b = malloc(sizeof(float) * (size_t)n);
    srand(1);
    for (int64_t i = 0; i < k * n; i++) w[i] = (float)rand() / RAND_MAX * 0.1f - 0.05f;
    for (int64_t i = 0; i < n; i++) b[i] = (float)rand() / RAND_MAX - 0.5f;
    hc_tensor *W = hc_graph_constant(g, "W", HC_F32, 2, (int64_t[]){k, n}, w);
    hc_tensor *B = hc_graph_constant(g, "b", HC_F32, 1, &n, b);
    free(w), free(b);
    hc_tensor *y = op(g, HC_OPK_ADD, "bias", 2, (hc_tensor *[]){op(g, HC_OPK_MATMUL, "mm", 2, (hc_tensor *[]){x, W}), B});
    hc_tensor *e = op(g, HC_OPK_ERF, "erf", 1,
                      (hc_tensor *[]){op(g, HC_OPK_DIV, "div", 2, (hc_tensor *[]){y, scalar(g, "sqrt2", 1.4142135f)})});
    hc_tensor *p = op(g, HC_OPK_ADD, "one", 2, (hc_tensor *[]){e, scalar(g, "c1", 1.0f)});
    hc_tensor *h = op(g, HC_OPK_MUL, "mul", 2, (hc_tensor *[]){y, p});
    hc_graph_add_output(g, op(g, HC_OPK_MUL, "half", 2, (hc_tensor *[]){h, scalar(g, "c05", 0.5f)}));
    if (hc_pass_infer_shapes(g, &err)) {
        fprintf(stderr, "infer: %s\n", err.msg);
        exit(2);
    }
    return g;
}

static hc_model *compile(hc_graph *g, int threads) {
    hc_model *m = NULL;
    hc_compile_options o = {.num_threads = threads};
    if (hc_model_compile(g, &o, &m, &err)) {
        fprintf(stderr, "compile: %s\n", err.msg);
        exit(2);
    }
    return m;
}

static double run_once(hc_model *m, bool dims, void **in, const int64_t **d, void **out) {
    double t0 = now_ms();
    hc_status st = dims ? hc_model_run_dims(m, in, d, out, NULL, &err) : hc_model_run(m, in, out, &err);
    double t = now_ms() - t0;
    if (st) {
        fprintf(stderr, "run: %s\n", err.msg);
        exit(2);
    }
    return t;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s M N [K] [--reps R] [--rounds N] [--threads T] [--hint H] [--3d]\n",
                argv[0]);
        return 2;
    }
    int64_t m = atoll(argv[1]), n = atoll(argv[2]), k = 768, hint = -1;
    int reps = 30, rounds = 7, threads = 2, i = 3;
    bool three_d = false;
    if (argc > 3 && argv[3][0] != '-') k = atoll(argv[3]), i = 4;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hint") && i + 1 < argc) hint = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--3d")) three_d = true;
        else {
            fprintf(stderr, "unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (hint < 0) hint = m;
    if (three_d && (m % 2 || hint % 2)) {
        fprintf(stderr, "--3d needs an even M and hint\n");
        return 2;
    }
    hc_model *ms = compile(build(m, n, k, three_d, false, 0), threads);
    hc_model *md = compile(build(m, n, k, three_d, true, hint), threads);
    if (!hc_model_is_symbolic(md) || !hc_model_kernel_templated(md, 0) ||
        !hc_model_kernel_templated(ms, 0)) {
        fprintf(stderr, "expected templated kernels (symbolic model: %d)\n", hc_model_is_symbolic(md));
        return 1;
    }
    size_t xb = sizeof(float) * (size_t)(m * k), yb = sizeof(float) * (size_t)(m * n);
    float *x = malloc(xb), *ys = malloc(yb), *yd = malloc(yb);
    for (int64_t e = 0; e < m * k; e++) x[e] = (float)rand() / RAND_MAX * 2 - 1;
    int64_t shape3[3] = {2, m / 2, k}, shape2[2] = {m, k};
    const int64_t *dims[1] = {three_d ? shape3 : shape2};
    void *in[1] = {x}, *outs[1] = {ys}, *outd[1] = {yd};
    for (int w = 0; w < 3; w++) run_once(ms, false, in, dims, outs), run_once(md, true, in, dims, outd);
    double worst = 0;
    for (int64_t e = 0; e < m * n; e++) worst = fmax(worst, fabs(ys[e] - yd[e]));
    double *t = malloc(sizeof(double) * (size_t)reps), *rs = malloc(sizeof(double) * (size_t)rounds),
           *rd = malloc(sizeof(double) * (size_t)rounds);
    for (int r = 0; r < rounds; r++) {
        for (int which = 0; which < 2; which++) {
            bool dyn = (which + r) % 2; /* alternate which model goes first */
            for (int q = 0; q < reps; q++)
                t[q] = dyn ? run_once(md, true, in, dims, outd) : run_once(ms, false, in, dims, outs);
            (dyn ? rd : rs)[r] = median(t, reps);
        }
    }
    double s = median(rs, rounds), d = median(rd, rounds);
    printf("M %lld N %lld K %lld%s hint %lld threads %d: static %.3f ms, symbolic %.3f ms, "
           "ratio %.3f (max |diff| %.2g)\n",
           (long long)m, (long long)n, (long long)k, three_d ? " (2 x M/2 rows)" : "",
           (long long)hint, threads, s, d, d / s, worst);
    hc_model_free(ms), hc_model_free(md);
    free(x), free(ys), free(yd), free(t), free(rs), free(rd);
    return 0;
}
