/* test_winograd.c — 3x3 stride-1 convs through Winograd F(2x2, 3x3) (docs/winograd.md):
 * graphs with a conv (random weights, bias, ReLU, residual add) on awkward shapes (1x1,
 * 2x2, odd sizes, primes, padding 0 and 1 and asymmetric, batch 1 and 3, channels 1, 3,
 * 17, 64), compiled with Winograd forced (1 and 2 threads) and checked against the
 * reference evaluator on the original graph; the lowering alone checked through the
 * interpreter (the transforms' Task definitions); the path asserted (the optimized graph
 * has the new ops, and no Im2Col), and --no-winograd asserted to keep im2col. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuse/fuse.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "task/winograd_mats.h"
#include "test.h"
/* after test.h (it uses CHECK_MSG) */
#include "graph_build.h"

typedef struct wcase {
    int64_t n, c, h, w, oc;
    int64_t pads[4]; /* top, left, bottom, right */
    bool bias, relu, residual;
} wcase;

static const wcase cases[] = {
    {1, 1, 1, 1, 1, {1, 1, 1, 1}, true, false, false},   /* 1x1 image */
    {1, 3, 2, 2, 3, {1, 1, 1, 1}, true, true, false},    /* 2x2 */
    {1, 3, 3, 3, 1, {0, 0, 0, 0}, false, false, false},  /* 3x3 valid: one output */
    {1, 17, 7, 11, 17, {1, 1, 1, 1}, true, true, true},  /* primes */
    {3, 3, 5, 9, 17, {1, 1, 1, 1}, true, true, false},   /* batch 3, odd sizes */
    {3, 17, 7, 11, 3, {0, 0, 0, 0}, true, false, true},  /* batch 3, valid */
    {1, 64, 9, 9, 64, {1, 1, 1, 1}, true, true, true},   /* 64 channels, odd tiles */
    {1, 64, 14, 14, 17, {0, 0, 0, 0}, false, true, false},
    {2, 17, 6, 13, 64, {0, 2, 1, 0}, true, false, false}, /* asymmetric pads */
    {1, 1, 13, 7, 3, {1, 1, 1, 1}, false, false, true},
};

static int64_t out_dim(int64_t in, int64_t lo, int64_t hi) { return in + lo + hi - 2; }

static hc_graph *build(const wcase *w, uint64_t seed) {
    hc_rng rng = {seed};
    hc_graph *g = hc_graph_new("wino", 17);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){w->n, w->c, w->h, w->w});
    hc_tensor *wt = rand_const(g, &rng, 4, (int64_t[]){w->oc, w->c, 3, 3});
    hc_attr at[2] = {ints_attr("pads", 4, w->pads),
                     ints_attr("kernel_shape", 2, (int64_t[]){3, 3})};
    hc_tensor *y = w->bias ? OPA(g, CONV, at, 2, x, wt, rand_const(g, &rng, 1, &w->oc))
                           : OPA(g, CONV, at, 2, x, wt);
    if (w->residual) {
        int64_t oh = out_dim(w->h, w->pads[0], w->pads[2]);
        int64_t ow = out_dim(w->w, w->pads[1], w->pads[3]);
        y = OP(g, ADD, y, hc_graph_add_input(g, "r", HC_F32, 4, (int64_t[]){w->n, w->oc, oh, ow}));
    }
    if (w->relu) y = OP(g, RELU, y);
    hc_graph_add_output(g, y);
    return g;
}

static int count_op(const hc_graph *g, hc_op_kind k) {
    int c = 0;
    for (size_t i = 0; i < g->nodes.len; i++) c += g->nodes.data[i]->op == k;
    return c;
}

typedef struct buffers {
    int nin;
    void *in[2], *want, *got;
    int64_t nout;
} buffers;

static void buffers_init(buffers *b, const hc_graph *ref, uint64_t seed) {
    hc_rng r = {seed};
    b->nin = (int)ref->inputs.len;
    for (int i = 0; i < b->nin; i++) {
        const hc_tensor *t = ref->inputs.data[i];
        float *f = malloc(hc_tensor_nbytes(t) + 4);
        for (int64_t k = 0; k < hc_tensor_numel(t); k++) f[k] = (float)hc_rng_uniform(&r, -1, 1);
        b->in[i] = f;
    }
    b->nout = hc_tensor_numel(ref->outputs.data[0]);
    b->want = calloc((size_t)b->nout + 1, sizeof(float));
    b->got = calloc((size_t)b->nout + 1, sizeof(float));
}

static void buffers_free(buffers *b) {
    for (int i = 0; i < b->nin; i++) free(b->in[i]);
    free(b->want), free(b->got);
}

/* Max error relative to the largest reference value (at least 1). */
static double rel_error(const buffers *b) {
    const float *x = b->got, *y = b->want;
    double worst = 0, scale = 1;
    for (int64_t k = 0; k < b->nout; k++) scale = fmax(scale, fabs(y[k]));
    for (int64_t k = 0; k < b->nout; k++) worst = fmax(worst, fabs((double)x[k] - y[k]));
    return worst / scale;
}

/* The lowering alone, evaluated by the interpreter: the Tasks of the transforms. */
static void check_lowering(const wcase *w, int ci) {
    hc_error err = {0};
    hc_graph *ref = build(w, 100 + (uint64_t)ci), *g = build(w, 100 + (uint64_t)ci);
    CHECK(hc_pass_infer_shapes(ref, &err) == HC_OK);
    CHECK(hc_pass_infer_shapes(g, &err) == HC_OK);
    hc_optimize_options o = {.force_winograd = true};
    CHECK_MSG(hc_pass_lower_anchors_with(g, &o, &err) == HC_OK, "case %d: %s", ci, err.msg);
    CHECK_MSG(count_op(g, HC_OPK_WINO_INPUT) == 1 && count_op(g, HC_OPK_WINO_OUTPUT) == 1 &&
                  count_op(g, HC_OPK_CONV) == 0,
              "case %d: not lowered to Winograd", ci);
    buffers b;
    buffers_init(&b, ref, 7 + (uint64_t)ci);
    CHECK(hc_graph_eval_reference(ref, b.in, &b.want, &err) == HC_OK);
    CHECK_MSG(hc_graph_eval_reference(g, b.in, &b.got, &err) == HC_OK, "case %d: %s", ci,
              err.msg);
    double e = rel_error(&b);
    CHECK_MSG(e <= 1e-5, "case %d: lowered graph (interpreter) error %g", ci, e);
    buffers_free(&b);
    hc_graph_free(ref);
    hc_graph_free(g);
}

/* Compiled with Winograd forced (or turned off), against the original graph. */
static void check_compiled(const wcase *w, int ci, int threads, bool off) {
    hc_error err = {0};
    uint64_t seed = 200 + (uint64_t)ci;
    hc_graph *ref = build(w, seed), *g = build(w, seed);
    CHECK(hc_pass_infer_shapes(ref, &err) == HC_OK);
    hc_compile_options opt = {.num_threads = threads,
                              .paths = {.force_winograd = !off, .no_winograd = off,
                                        .no_nchwc = true}};
    hc_model *m = NULL;
    hc_status st = hc_model_compile(g, &opt, &m, &err);
    CHECK_MSG(st == HC_OK, "case %d: compile: %s", ci, err.msg);
    if (st != HC_OK) {
        hc_graph_free(ref);
        return;
    }
    const hc_graph *og = hc_model_graph(m);
    int win = count_op(og, HC_OPK_WINO_INPUT), wout = count_op(og, HC_OPK_WINO_OUTPUT);
    CHECK_MSG(off ? win + wout == 0 : win == 1 && wout == 1, "case %d: %d/%d Winograd ops",
              ci, win, wout);
    CHECK_MSG(count_op(og, HC_OPK_IM2COL) == off, "case %d: Im2Col present: %d", ci,
              count_op(og, HC_OPK_IM2COL));
    /* bias, residual and ReLU fuse into the kernel that produces y: the kernels are the
     * input transform (alone or the matmul's prologue), the matmul, the output group */
    int kernels = hc_model_num_kernels(m), fallbacks = 0;
    for (int i = 0; i < kernels; i++) fallbacks += hc_model_kernel_group(m, i)->fallback != NULL;
    CHECK_MSG(fallbacks == 0, "case %d: %d unfused kernels", ci, fallbacks);
    if (!off) CHECK_MSG(kernels >= 2 && kernels <= 3, "case %d: %d kernels", ci, kernels);
    buffers b;
    buffers_init(&b, ref, seed * 3);
    CHECK(hc_graph_eval_reference(ref, b.in, &b.want, &err) == HC_OK);
    st = hc_model_run(m, b.in, &b.got, &err);
    CHECK_MSG(st == HC_OK, "case %d: run: %s", ci, err.msg);
    double e = rel_error(&b);
    CHECK_MSG(e <= 1e-5, "case %d (%d threads%s): error %g", ci, threads, off ? ", off" : "", e);
    buffers_free(&b);
    hc_model_free(m);
    hc_graph_free(ref);
}

/* The default rule (lower.c, winograd_pays): 8 input and 4 output channels, 9 tiles, 3/4
 * of the tiles' outputs inside the image; --no-winograd turns it off. */
static void check_rule(void) {
    static const struct {
        wcase w;
        bool wino;
    } rule[] = {
        {{1, 1, 1, 1, 1, {1, 1, 1, 1}, false, false, false}, false},
        {{1, 4, 14, 14, 64, {1, 1, 1, 1}, false, false, false}, false},  /* 4 channels in */
        {{1, 8, 14, 14, 4, {1, 1, 1, 1}, false, false, false}, true},    /* 8 in, 4 out */
        {{1, 64, 14, 14, 3, {1, 1, 1, 1}, false, false, false}, false},  /* 3 out */
        {{1, 64, 5, 5, 64, {1, 1, 1, 1}, false, false, false}, false},   /* 5x5: 25 of 36 */
        {{1, 64, 4, 4, 64, {1, 1, 1, 1}, false, false, false}, false},   /* 4 tiles */
        {{3, 64, 4, 4, 64, {1, 1, 1, 1}, false, false, false}, true},    /* 12 tiles */
        {{1, 64, 6, 6, 64, {1, 1, 1, 1}, false, false, false}, true},    /* 9 tiles */
        {{1, 64, 7, 7, 64, {1, 1, 1, 1}, false, false, false}, true},    /* 7x7: 49 of 64 */
        {{2, 32, 14, 14, 64, {1, 1, 1, 1}, true, true, false}, true},
        {{1, 96, 37, 37, 64, {0, 0, 0, 0}, true, false, false}, true},
    };
    for (int i = 0; i < (int)HC_ARRAY_LEN(rule); i++)
        for (int off = 0; off < 2; off++) {
            hc_error err = {0};
            hc_graph *g = build(&rule[i].w, 1);
            hc_optimize_options o = {.no_winograd = off, .no_direct = true};
            CHECK(hc_graph_optimize_with(g, &o, &err) == HC_OK);
            CHECK_MSG(count_op(g, HC_OPK_WINO_INPUT) == (rule[i].wino && !off),
                      "rule case %d (off %d)", i, off);
            hc_graph_free(g);
        }
    /* with the direct template's rule (lower.c, direct_pays): fewer than 64 input channels
     * and more output than input channels go direct (32 -> 64), else Winograd (8 -> 4) */
    for (int i = 2; i <= 9; i += 7) {
        hc_error err = {0};
        hc_graph *g = build(&rule[i].w, 1);
        CHECK(hc_graph_optimize_with(g, &(hc_optimize_options){0}, &err) == HC_OK);
        CHECK_MSG(count_op(g, HC_OPK_WINO_INPUT) == (i == 2) &&
                      count_op(g, HC_OPK_CONV) == (i == 9),
                  "rule case %d with the direct template", i);
        hc_graph_free(g);
    }
}

/* Strided, dilated and non-3x3 convs never take the NCHW Winograd path, even forced (5x5
 * and the 1-D kernels take the blocked one: test_nchwc). */
static void check_ineligible(void) {
    for (int v = 0; v < 3; v++) {
        hc_rng rng = {9};
        hc_graph *g = hc_graph_new("no_wino", 17);
        hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 16, 15, 15});
        int64_t k = v == 2 ? 5 : 3, two[2] = {2, 2}, pads[4] = {1, 1, 1, 1};
        hc_tensor *w = rand_const(g, &rng, 4, (int64_t[]){16, 16, k, k});
        hc_attr at[2] = {ints_attr("pads", 4, pads),
                         ints_attr(v == 0 ? "strides" : "dilations", 2, two)};
        hc_graph_add_output(g, OPA(g, CONV, at, v == 2 ? 1 : 2, x, w));
        hc_error err = {0};
        hc_optimize_options o = {.force_winograd = true, .no_direct = true};
        CHECK(hc_graph_optimize_with(g, &o, &err) == HC_OK);
        CHECK_MSG(count_op(g, HC_OPK_WINO_INPUT) == 0 && count_op(g, HC_OPK_IM2COL) == 1,
                  "variant %d", v);
        hc_graph_free(g);
    }
}

/* Every transform table F(m, r) (src/task/winograd_mats.c) computes the r-tap correlation:
 * y = A^T [(G g) . (B^T d)] against sum_j d[i + j] g[j], in double on random data; the
 * sizes the tables state; NULL for the pairs without a table. */
static void check_matrices(void) {
    static const int pairs[][2] = {{1, 1}, {2, 3}, {4, 3}, {2, 5}, {4, 5}, {2, 7}, {4, 7}, {6, 7}};
    hc_rng rng = {5};
    for (size_t k = 0; k < HC_ARRAY_LEN(pairs); k++) {
        int m = pairs[k][0], r = pairs[k][1];
        const hc_wino_mats *w = hc_wino_matrices_r(m, r);
        CHECK_MSG(w && w->m == m && w->r == r && w->a == m + r - 1, "F(%d, %d): table", m, r);
        if (!w) continue;
        for (int trial = 0; trial < 4; trial++) {
            double d[HC_WINO_MAX_A], g[HC_WINO_MAX_R], u[HC_WINO_MAX_A], v[HC_WINO_MAX_A];
            for (int i = 0; i < w->a; i++) d[i] = hc_rng_uniform(&rng, -1, 1);
            for (int j = 0; j < r; j++) g[j] = hc_rng_uniform(&rng, -1, 1);
            for (int p = 0; p < w->a; p++) {
                u[p] = v[p] = 0;
                for (int j = 0; j < r; j++) u[p] += w->g[p][j] * g[j];
                for (int i = 0; i < w->a; i++) v[p] += w->bt[p][i] * d[i];
            }
            for (int i = 0; i < m; i++) {
                double y = 0, want = 0;
                for (int p = 0; p < w->a; p++) y += w->at[i][p] * u[p] * v[p];
                for (int j = 0; j < r; j++) want += d[i + j] * g[j];
                CHECK_MSG(fabs(y - want) <= 1e-12 * 64, "F(%d, %d) output %d: %g, expected %g", m,
                          r, i, y, want);
            }
        }
    }
    CHECK(!hc_wino_matrices_r(3, 3) && !hc_wino_matrices_r(2, 9) && !hc_wino_matrices_r(4, 1) &&
          !hc_wino_matrices_r(6, 3) && !hc_wino_matrices_r(6, 5) && !hc_wino_matrices_r(8, 7));
    CHECK(hc_wino_axis_m(4, 1) == 1 && hc_wino_axis_m(4, 7) == 4);
    CHECK(hc_wino_axis(4, 1) == hc_wino_matrices_r(1, 1) &&
          hc_wino_axis(4, 7) == hc_wino_matrices_r(4, 7) && !hc_wino_axis(6, 3) &&
          hc_wino_axis(6, 7) == hc_wino_matrices_r(6, 7) &&
          hc_wino_axis(6, 1) == hc_wino_axis(2, 1));
}

int main(void) {
    setenv("HIDETC_VERIFY", "1", 1);
    check_matrices();
    for (int i = 0; i < (int)HC_ARRAY_LEN(cases); i++) check_lowering(&cases[i], i);
    for (int i = 0; i < (int)HC_ARRAY_LEN(cases); i++) {
        check_compiled(&cases[i], i, 1, false);
        check_compiled(&cases[i], i, 2, false);
    }
    check_compiled(&cases[3], 3, 2, true);
    check_rule();
    check_ineligible();
    TEST_DONE();
}
