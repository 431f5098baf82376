/* test_ops_nn.c — the nn operators: one-node graphs, shape inference and errors, the
 * reference interpreter on their Tasks against values computed here with plain loops,
 * and the scheduled programs (auto-scheduler, or the matmul template through MatMul's
 * schedule hook) compiled and run against the interpreter on awkward shapes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "target/cpu/cpu.h"
#include "graph/graph.h"
#include "target/cpu/jit.h"
#include "test.h"

static hc_error err;
static hc_rng rng = {2024};

#define NARGS(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define INTS(nm, ...) {.name = nm, .kind = HC_ATTR_INTS, .n = NARGS(__VA_ARGS__), \
                       .ints = (int64_t[]){__VA_ARGS__}}
#define INT(nm, v) {.name = nm, .kind = HC_ATTR_INT, .i = (v)}
#define FLT(nm, v) {.name = nm, .kind = HC_ATTR_FLOAT, .f = (v)}
#define STR(nm, v) {.name = nm, .kind = HC_ATTR_STRING, .s = (v)}
#define SHAPE(...) NARGS(__VA_ARGS__), (int64_t[]){__VA_ARGS__}

/* ---- harness ------------------------------------------------------------------------ */
static hc_tensor *input(hc_graph *g, const char *name, int nd, const int64_t *shape) {
    return hc_graph_add_input(g, name, HC_F32, nd, shape);
}

/* A node with nout outputs (created here), inferred; NULL when infer fails. */
static hc_node *node(hc_graph *g, hc_op_kind op, const char *name, int nin, hc_tensor **in,
                     int nout, int nattrs, const hc_attr *attrs) {
    hc_tensor *outs[3];
    for (int i = 0; i < nout; i++)
        outs[i] = hc_graph_tensor(g, hc_arena_printf(&g->arena, "%s_y%d", name, i), HC_F32, 0,
                                  NULL);
    hc_node *n = hc_graph_add_node(g, op, name, nin, in, nout, outs, nattrs, attrs, &err);
    HC_ASSERT_MSG(n, err.msg);
    return hc_op_get(op)->infer(n, &err) == HC_OK ? n : NULL;
}

static float *rand_buf(int64_t n) {
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++) p[i] = (float)hc_rng_uniform(&rng, -2, 2);
    return p;
}

/* Random data for every input of n. */
static void rand_inputs(const hc_node *n, void **in) {
    for (int i = 0; i < n->ninputs; i++) in[i] = rand_buf(hc_tensor_numel(n->inputs[i]));
}

static void alloc_outputs(const hc_node *n, void **out) {
    for (int i = 0; i < n->noutputs; i++) out[i] = calloc(1, hc_tensor_nbytes(n->outputs[i]) + 8);
}

static void free_bufs(int k, void **b) {
    for (int i = 0; i < k; i++) free(b[i]);
}

static bool interp(const hc_node *n, void **in, void **out) {
    hc_arena a;
    hc_arena_init(&a);
    hc_task *t = hc_op_get(n->op)->task(&a, n, &err);
    bool ok = t && hc_interpret_task(t, in, out, &err) == HC_OK;
    if (!ok) fprintf(stderr, "%s: %s\n", n->name, err.msg);
    hc_arena_free(&a);
    return ok;
}

#define CHECK_CLOSE(x, y, n, tol)                                                        \
    do {                                                                                 \
        double _e = max_rel_err((x), (y), (n));                                          \
        CHECK_MSG(_e <= (tol), "max error %g", _e);                                      \
    } while (0)

static void check_shape(const hc_tensor *t, int nd, const int64_t *shape) {
    CHECK_EQ_INT(t->ndim, nd);
    for (int i = 0; i < nd && i < t->ndim; i++) CHECK_EQ_INT(t->shape[i], shape[i]);
}

/* ---- Conv --------------------------------------------------------------------------- */
typedef struct conv_p {
    int64_t n, c, h, w, m, kh, kw, group, sh, sw, dh, dw, pt, pl, pb, pr;
} conv_p;

static void conv_ref(const conv_p *p, const float *x, const float *w, const float *b, float *y,
                     int64_t oh, int64_t ow) {
    int64_t cg = p->c / p->group, mg = p->m / p->group;
    for (int64_t n = 0; n < p->n; n++)
        for (int64_t m = 0; m < p->m; m++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    double s = b ? b[m] : 0;
                    for (int64_t c = 0; c < cg; c++)
                        for (int64_t u = 0; u < p->kh; u++)
                            for (int64_t v = 0; v < p->kw; v++) {
                                int64_t r = i * p->sh - p->pt + u * p->dh;
                                int64_t q = j * p->sw - p->pl + v * p->dw;
                                if (r < 0 || r >= p->h || q < 0 || q >= p->w) continue;
                                int64_t ch = (m / mg) * cg + c;
                                s += (double)x[((n * p->c + ch) * p->h + r) * p->w + q] *
                                     w[((m * cg + c) * p->kh + u) * p->kw + v];
                            }
                    y[((n * p->m + m) * oh + i) * ow + j] = (float)s;
                }
}

static void test_conv(void) {
    conv_p p = {2, 4, 7, 6, 6, 3, 2, 2, 2, 1, 1, 2, 1, 0, 2, 1};
    hc_graph *g = hc_graph_new("conv", 13);
    hc_tensor *in[3] = {input(g, "x", SHAPE(2, 4, 7, 6)), input(g, "w", SHAPE(6, 2, 3, 2)),
                        input(g, "b", SHAPE(6))};
    hc_attr at[] = {INT("group", 2), INTS("strides", 2, 1), INTS("dilations", 1, 2),
                    INTS("pads", 1, 0, 2, 1), INTS("kernel_shape", 3, 2)};
    hc_node *n = node(g, HC_OPK_CONV, "conv", 3, in, 1, 5, at);
    CHECK(n != NULL);
    /* (7 + 3 - 3) / 2 + 1 = 4 rows; (6 + 1 - 3) / 1 + 1 = 5 columns */
    check_shape(n->outputs[0], SHAPE(2, 6, 4, 5));
    void *bi[3], *bo[1];
    rand_inputs(n, bi), alloc_outputs(n, bo);
    float *ref = malloc(sizeof(float) * 2 * 6 * 4 * 5);
    conv_ref(&p, bi[0], bi[1], bi[2], ref, 4, 5);
    CHECK(interp(n, bi, bo));
    CHECK_CLOSE(bo[0], ref, 240, 1e-5);
    free(ref), free_bufs(3, bi), free_bufs(1, bo);

    /* SAME_LOWER puts the odd padding element first; SAME_UPPER last */
    const char *modes[2] = {"SAME_UPPER", "SAME_LOWER"};
    for (int k = 0; k < 2; k++) {
        hc_attr am[] = {STR("auto_pad", modes[k]), INTS("strides", 2, 2), INT("group", 2)};
        hc_node *s = node(g, HC_OPK_CONV, k ? "conv_sl" : "conv_su", 2, in, 1, 3, am);
        CHECK_MSG(s != NULL, "%s", err.msg);
        if (!s) continue;
        /* ceil(7/2) = 4, ceil(6/2) = 3; pads total rows 3*2+3-7 = 2, cols 2*2+2-6 = 0 */
        check_shape(s->outputs[0], SHAPE(2, 6, 4, 3));
    }
    hc_tensor *in1[2] = {input(g, "x1", SHAPE(1, 2, 5, 5)), input(g, "w1", SHAPE(3, 2, 2, 2))};
    hc_attr am[] = {STR("auto_pad", "SAME_LOWER")};
    hc_node *s = node(g, HC_OPK_CONV, "conv_lower", 2, in1, 1, 1, am);
    check_shape(s->outputs[0], SHAPE(1, 3, 5, 5));
    conv_p q = {1, 2, 5, 5, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0, 0};
    rand_inputs(s, bi), alloc_outputs(s, bo);
    ref = malloc(sizeof(float) * 75);
    conv_ref(&q, bi[0], bi[1], NULL, ref, 5, 5);
    CHECK(interp(s, bi, bo));
    CHECK_CLOSE(bo[0], ref, 75, 1e-5);
    free(ref), free_bufs(2, bi), free_bufs(1, bo);

    /* 1-D: the same memory as a 2-D conv over a height of 1 */
    hc_tensor *in1d[2] = {input(g, "x1d", SHAPE(2, 4, 9)), input(g, "w1d", SHAPE(6, 2, 3))};
    hc_attr a1[] = {INT("group", 2), INTS("strides", 2), INTS("pads", 2, 1),
                    INTS("dilations", 2)};
    hc_node *c1 = node(g, HC_OPK_CONV, "conv1d", 2, in1d, 1, 4, a1);
    /* (9 + 3 - 5) / 2 + 1 = 4 */
    check_shape(c1->outputs[0], SHAPE(2, 6, 4));
    conv_p p1 = {2, 4, 1, 9, 6, 1, 3, 2, 1, 2, 1, 2, 0, 2, 0, 1};
    rand_inputs(c1, bi), alloc_outputs(c1, bo);
    ref = malloc(sizeof(float) * 48);
    conv_ref(&p1, bi[0], bi[1], NULL, ref, 1, 4);
    CHECK(interp(c1, bi, bo));
    CHECK_CLOSE(bo[0], ref, 48, 1e-5);
    free(ref), free_bufs(2, bi), free_bufs(1, bo);
    hc_tensor *in3d[2] = {input(g, "x3d", SHAPE(1, 2, 4, 5, 6)),
                          input(g, "w3d", SHAPE(3, 2, 2, 3, 3))};
    hc_attr a3[] = {STR("auto_pad", "VALID"), INTS("strides", 1, 2, 3)};
    check_shape(node(g, HC_OPK_CONV, "conv3d", 2, in3d, 1, 2, a3)->outputs[0],
                SHAPE(1, 3, 3, 2, 2));

    /* errors name the node and the attribute */
    hc_attr bad[] = {INTS("kernel_shape", 3, 3, 3), INT("group", 2)};
    CHECK(node(g, HC_OPK_CONV, "conv1", 2, in, 1, 2, bad) == NULL);
    CHECK(strstr(err.msg, "node 'conv1' (Conv): kernel_shape has 3 values, expected 2") != NULL);
    hc_attr badg[] = {INT("group", 3)};
    CHECK(node(g, HC_OPK_CONV, "conv2", 2, in, 1, 1, badg) == NULL);
    CHECK(err.status == HC_ERR_INVALID && strstr(err.msg, "group 3") != NULL);
    hc_graph_free(g);
}

/* ---- ConvTranspose: scatter form (each input element adds into a window) ---------- */
static void test_conv_transpose(void) {
    hc_graph *g = hc_graph_new("convt", 13);
    hc_tensor *in[3] = {input(g, "x", SHAPE(1, 4, 3, 4)), input(g, "w", SHAPE(4, 3, 3, 2)),
                        input(g, "b", SHAPE(6))};
    hc_attr at[] = {INT("group", 2), INTS("strides", 2, 3), INTS("pads", 1, 0, 0, 1),
                    INTS("output_padding", 1, 0), INTS("dilations", 1, 2)};
    hc_node *n = node(g, HC_OPK_CONV_TRANSPOSE, "convt", 3, in, 1, 5, at);
    CHECK(n != NULL);
    /* rows 2*2 + 1 + 3 - 1 - 0 = 7; cols 3*3 + 0 + 3 - 0 - 1 = 11 */
    int64_t oh = 7, ow = 11;
    check_shape(n->outputs[0], SHAPE(1, 6, 7, 11));
    void *bi[3], *bo[1];
    rand_inputs(n, bi), alloc_outputs(n, bo);
    const float *x = bi[0], *w = bi[1], *b = bi[2];
    double acc[6 * 7 * 11];
    for (int64_t m = 0; m < 6; m++)
        for (int64_t k = 0; k < oh * ow; k++) acc[m * oh * ow + k] = b[m];
    for (int64_t c = 0; c < 4; c++)
        for (int64_t i = 0; i < 3; i++)
            for (int64_t j = 0; j < 4; j++)
                for (int64_t mm = 0; mm < 3; mm++)
                    for (int64_t u = 0; u < 3; u++)
                        for (int64_t v = 0; v < 2; v++) {
                            int64_t r = i * 2 + u - 1, q = j * 3 + v * 2 - 0;
                            if (r < 0 || r >= oh || q < 0 || q >= ow) continue;
                            int64_t m = (c / 2) * 3 + mm;
                            acc[(m * oh + r) * ow + q] += (double)x[(c * 3 + i) * 4 + j] *
                                                          w[((c * 3 + mm) * 3 + u) * 2 + v];
                        }
    float ref[6 * 7 * 11];
    for (int i = 0; i < 6 * 7 * 11; i++) ref[i] = (float)acc[i];
    CHECK(interp(n, bi, bo));
    CHECK_CLOSE(bo[0], ref, 6 * 7 * 11, 1e-5);
    free_bufs(3, bi), free_bufs(1, bo);
    hc_attr os[] = {INTS("output_shape", 8, 10), INTS("strides", 2, 3)};
    hc_node *s = node(g, HC_OPK_CONV_TRANSPOSE, "convt_os", 2, in, 1, 2, os);
    check_shape(s->outputs[0], SHAPE(1, 3, 8, 10));
    hc_graph_free(g);
}

/* ---- normalizations ----------------------------------------------------------------- */
static void test_batch_norm(void) {
    hc_graph *g = hc_graph_new("bn", 13);
    hc_tensor *in[5] = {input(g, "x", SHAPE(2, 3, 4)), input(g, "s", SHAPE(3)),
                        input(g, "b", SHAPE(3)), input(g, "m", SHAPE(3)), input(g, "v", SHAPE(3))};
    hc_attr at[] = {FLT("epsilon", 0.01)};
    hc_node *n = node(g, HC_OPK_BATCH_NORMALIZATION, "bn", 5, in, 1, 1, at);
    CHECK(n != NULL);
    void *bi[5], *bo[1];
    rand_inputs(n, bi), alloc_outputs(n, bo);
    float *v = bi[4], ref[24];
    for (int i = 0; i < 3; i++) v[i] = fabsf(v[i]);
    for (int i = 0; i < 24; i++) {
        int c = i / 4 % 3;
        const float *x = bi[0], *s = bi[1], *b = bi[2], *m = bi[3];
        ref[i] = (float)((x[i] - m[c]) / sqrt(v[c] + 0.01) * s[c] + b[c]);
    }
    CHECK(interp(n, bi, bo));
    CHECK_CLOSE(bo[0], ref, 24, 1e-5);
    free_bufs(5, bi), free_bufs(1, bo);
    /* training mode: inferred here, lowered by a pass (passes/batchnorm.c), no Task */
    hc_attr tm[] = {INT("training_mode", 1)};
    hc_node *bt = node(g, HC_OPK_BATCH_NORMALIZATION, "bn_train", 5, in, 3, 1, tm);
    CHECK(bt && bt->outputs[0]->ndim == 3 && bt->outputs[1]->ndim == 1 &&
          bt->outputs[1]->shape[0] == 3 && bt->outputs[2]->shape[0] == 3);
    if (bt) {
        hc_arena ta;
        hc_arena_init(&ta);
        CHECK(hc_op_get(bt->op)->task(&ta, bt, &err) == NULL && strstr(err.msg, "training mode"));
        hc_arena_free(&ta);
    }
    hc_graph_free(g);
}

/* mean and 1/sqrt(var + eps) of x[i * len .. (i + 1) * len) */
static void moments(const float *x, int64_t len, double eps, double *mean, double *inv) {
    double s = 0, q = 0;
    for (int64_t k = 0; k < len; k++) s += x[k];
    *mean = s / (double)len;
    for (int64_t k = 0; k < len; k++) q += (x[k] - *mean) * (x[k] - *mean);
    *inv = 1 / sqrt(q / (double)len + eps);
}

static void test_layer_and_instance_norm(void) {
    hc_graph *g = hc_graph_new("ln", 17);
    hc_tensor *in[3] = {input(g, "x", SHAPE(2, 3, 5)), input(g, "s", SHAPE(3, 5)),
                        input(g, "b", SHAPE(5))};
    hc_attr at[] = {INT("axis", -2), FLT("epsilon", 1e-3)};
    hc_node *n = node(g, HC_OPK_LAYER_NORMALIZATION, "ln", 3, in, 3, 2, at);
    CHECK(n != NULL);
    check_shape(n->outputs[1], SHAPE(2, 1, 1));
    void *bi[3], *bo[3];
    rand_inputs(n, bi), alloc_outputs(n, bo);
    float ref[30], rm[2], ri[2];
    const float *x = bi[0], *s = bi[1], *b = bi[2];
    for (int r = 0; r < 2; r++) {
        double mean, inv;
        moments(x + r * 15, 15, 1e-3, &mean, &inv);
        rm[r] = (float)mean, ri[r] = (float)inv;
        for (int k = 0; k < 15; k++)
            ref[r * 15 + k] = (float)((x[r * 15 + k] - mean) * inv * s[k] + b[k % 5]);
    }
    CHECK(interp(n, bi, bo));
    CHECK_CLOSE(bo[0], ref, 30, 1e-5);
    CHECK_CLOSE(bo[1], rm, 2, 1e-6);
    CHECK_CLOSE(bo[2], ri, 2, 1e-5);
    free_bufs(3, bi), free_bufs(3, bo);

    hc_tensor *iin[3] = {input(g, "xi", SHAPE(2, 3, 2, 3)), input(g, "si", SHAPE(3)),
                         input(g, "bi", SHAPE(3))};
    hc_node *m = node(g, HC_OPK_INSTANCE_NORMALIZATION, "in", 3, iin, 1, 0, NULL);
    rand_inputs(m, bi), alloc_outputs(m, bo);
    x = bi[0], s = bi[1], b = bi[2];
    float iref[36];
    for (int r = 0; r < 6; r++) {
        double mean, inv;
        moments(x + r * 6, 6, 1e-5, &mean, &inv);
        for (int k = 0; k < 6; k++)
            iref[r * 6 + k] = (float)((x[r * 6 + k] - mean) * inv * s[r % 3] + b[r % 3]);
    }
    CHECK(interp(m, bi, bo));
    CHECK_CLOSE(bo[0], iref, 36, 1e-5);
    free_bufs(3, bi), free_bufs(1, bo);
    hc_graph_free(g);
}

static void test_lp_mvn_lrn(void) {
    hc_graph *g = hc_graph_new("norms", 13);
    hc_tensor *x = input(g, "x", SHAPE(2, 5, 3, 2));
    void *bi[1], *bo[1];
    float ref[60];
    /* LpNormalization p=1 over axis 1 */
    hc_attr lp[] = {INT("axis", 1), INT("p", 1)};
    hc_node *n = node(g, HC_OPK_LP_NORMALIZATION, "lp", 1, &x, 1, 2, lp);
    rand_inputs(n, bi), alloc_outputs(n, bo);
    const float *xv = bi[0];
    for (int i = 0; i < 60; i++) {
        int b = i / 30, r = i % 6;
        double s = 0;
        for (int c = 0; c < 5; c++) s += fabs(xv[b * 30 + c * 6 + r]);
        ref[i] = (float)(xv[i] / s);
    }
    CHECK(interp(n, bi, bo));
    CHECK_CLOSE(bo[0], ref, 60, 1e-5);
    /* MeanVarianceNormalization over the default axes 0, 2, 3 */
    hc_node *mv = node(g, HC_OPK_MEAN_VARIANCE_NORMALIZATION, "mvn", 1, &x, 1, 0, NULL);
    for (int c = 0; c < 5; c++) {
        double s = 0, q = 0;
        for (int b = 0; b < 2; b++)
            for (int r = 0; r < 6; r++) s += xv[b * 30 + c * 6 + r];
        s /= 12;
        for (int b = 0; b < 2; b++)
            for (int r = 0; r < 6; r++) q += pow(xv[b * 30 + c * 6 + r] - s, 2);
        for (int b = 0; b < 2; b++)
            for (int r = 0; r < 6; r++) {
                int i = b * 30 + c * 6 + r;
                ref[i] = (float)((xv[i] - s) / (sqrt(q / 12) + 1e-9));
            }
    }
    CHECK(interp(mv, bi, bo));
    CHECK_CLOSE(bo[0], ref, 60, 1e-4);
    /* LRN size 3 across channels */
    hc_attr lr[] = {INT("size", 3), FLT("alpha", 0.5), FLT("beta", 0.6), FLT("bias", 2)};
    hc_node *l = node(g, HC_OPK_LRN, "lrn", 1, &x, 1, 4, lr);
    for (int i = 0; i < 60; i++) {
        int b = i / 30, c = i / 6 % 5, r = i % 6;
        double s = 0;
        for (int d = c - 1; d <= c + 1; d++)
            if (d >= 0 && d < 5) s += pow(xv[b * 30 + d * 6 + r], 2);
        ref[i] = (float)(xv[i] / pow(2 + 0.5 / 3 * s, 0.6));
    }
    CHECK(interp(l, bi, bo));
    CHECK_CLOSE(bo[0], ref, 60, 1e-5);
    free_bufs(1, bi), free_bufs(1, bo);
    hc_graph_free(g);
}

/* ---- matrix products ---------------------------------------------------------------- */
static void test_gemm_matmul(void) {
    hc_graph *g = hc_graph_new("mm", 13);
    hc_tensor *in[3] = {input(g, "a", SHAPE(4, 3)), input(g, "b", SHAPE(5, 4)),
                        input(g, "c", SHAPE(5))};
    hc_attr at[] = {INT("transA", 1), INT("transB", 1), FLT("alpha", 0.5), FLT("beta", 2)};
    hc_node *n = node(g, HC_OPK_GEMM, "gemm", 3, in, 1, 4, at);
    check_shape(n->outputs[0], SHAPE(3, 5));
    void *bi[3], *bo[1];
    rand_inputs(n, bi), alloc_outputs(n, bo);
    const float *a = bi[0], *b = bi[1], *c = bi[2];
    float ref[15];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++) {
            double s = 0;
            for (int k = 0; k < 4; k++) s += (double)a[k * 3 + i] * b[j * 4 + k];
            ref[i * 5 + j] = (float)(0.5 * s + 2 * c[j]);
        }
    CHECK(interp(n, bi, bo));
    CHECK_CLOSE(bo[0], ref, 15, 1e-5);
    free_bufs(3, bi), free_bufs(1, bo);

    /* MatMul with broadcast batch dims */
    hc_tensor *mi[2] = {input(g, "ma", SHAPE(2, 1, 3, 4)), input(g, "mb", SHAPE(3, 4, 5))};
    hc_node *m = node(g, HC_OPK_MATMUL, "matmul", 2, mi, 1, 0, NULL);
    check_shape(m->outputs[0], SHAPE(2, 3, 3, 5));
    rand_inputs(m, bi), alloc_outputs(m, bo);
    a = bi[0], b = bi[1];
    float mref[90];
    for (int p = 0; p < 2; p++)
        for (int q = 0; q < 3; q++)
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 5; j++) {
                    double s = 0;
                    for (int k = 0; k < 4; k++)
                        s += (double)a[(p * 3 + i) * 4 + k] * b[(q * 4 + k) * 5 + j];
                    mref[((p * 3 + q) * 3 + i) * 5 + j] = (float)s;
                }
    CHECK(interp(m, bi, bo));
    CHECK_CLOSE(bo[0], mref, 90, 1e-5);
    free_bufs(2, bi), free_bufs(1, bo);
    /* 1-D operands drop their dimension */
    hc_tensor *v1[2] = {input(g, "v", SHAPE(4)), input(g, "mb2", SHAPE(2, 4, 5))};
    check_shape(node(g, HC_OPK_MATMUL, "vecmat", 2, v1, 1, 0, NULL)->outputs[0], SHAPE(2, 5));
    hc_tensor *v2[2] = {input(g, "m2", SHAPE(3, 4)), input(g, "v2", SHAPE(4))};
    check_shape(node(g, HC_OPK_MATMUL, "matvec", 2, v2, 1, 0, NULL)->outputs[0], SHAPE(3));
    hc_tensor *bad[2] = {input(g, "p", SHAPE(3, 4)), input(g, "q", SHAPE(5, 2))};
    CHECK(node(g, HC_OPK_MATMUL, "mm_bad", 2, bad, 1, 0, NULL) == NULL);
    CHECK(strstr(err.msg, "node 'mm_bad' (MatMul): inner dimensions differ") != NULL);
    hc_graph_free(g);
}

static void test_einsum(void) {
    hc_graph *g = hc_graph_new("einsum", 13);
    hc_tensor *in[2] = {input(g, "a", SHAPE(2, 3, 4)), input(g, "b", SHAPE(2, 4, 5))};
    hc_attr bmm[] = {STR("equation", "bij, bjk -> bik")};
    hc_node *n = node(g, HC_OPK_EINSUM, "bmm", 2, in, 1, 1, bmm);
    check_shape(n->outputs[0], SHAPE(2, 3, 5));
    void *bi[2], *bo[1];
    rand_inputs(n, bi), alloc_outputs(n, bo);
    const float *a = bi[0], *b = bi[1];
    float ref[30];
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 5; k++) {
                double s = 0;
                for (int j = 0; j < 4; j++)
                    s += (double)a[(p * 3 + i) * 4 + j] * b[(p * 4 + j) * 5 + k];
                ref[(p * 3 + i) * 5 + k] = (float)s;
            }
    CHECK(interp(n, bi, bo));
    CHECK_CLOSE(bo[0], ref, 30, 1e-5);
    /* implicit output: the labels used once, sorted ("kij" -> "ijk" transposes) */
    hc_attr tr[] = {STR("equation", "kij")};
    hc_node *t = node(g, HC_OPK_EINSUM, "transpose", 1, in, 1, 1, tr);
    check_shape(t->outputs[0], SHAPE(3, 4, 2));
    float *tout = calloc(24, sizeof(float));
    CHECK(interp(t, bi, (void *[]){tout}));
    CHECK(tout[(1 * 4 + 2) * 2 + 1] == a[(1 * 3 + 1) * 4 + 2]);
    free(tout);
    /* sum over a label and a diagonal */
    hc_attr red[] = {STR("equation", "bij->i")};
    hc_node *r = node(g, HC_OPK_EINSUM, "reduce", 1, in, 1, 1, red);
    check_shape(r->outputs[0], SHAPE(3));
    float rout[3], rref[3] = {0, 0, 0};
    for (int i = 0; i < 24; i++) rref[i / 4 % 3] += a[i];
    CHECK(interp(r, bi, (void *[]){rout}));
    CHECK_CLOSE(rout, rref, 3, 1e-5);
    free_bufs(2, bi), free_bufs(1, bo);
    hc_tensor *sq = input(g, "sq", SHAPE(3, 3));
    hc_attr dg[] = {STR("equation", "ii->i")};
    hc_node *d = node(g, HC_OPK_EINSUM, "diag", 1, &sq, 1, 1, dg);
    float sv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, dv[3];
    CHECK(interp(d, (void *[]){sv}, (void *[]){dv}));
    CHECK(dv[0] == 1 && dv[1] == 5 && dv[2] == 9);
    /* ellipsis dims broadcast: [2, 1, 3, 4] x [5, 4, 2] -> [2, 5, 3, 2] */
    hc_tensor *el[2] = {input(g, "ea", SHAPE(2, 1, 3, 4)), input(g, "eb", SHAPE(5, 4, 2))};
    hc_attr ell[] = {STR("equation", "...ij,...jk->...ik")};
    hc_node *e = node(g, HC_OPK_EINSUM, "ellipsis", 2, el, 1, 1, ell);
    check_shape(e->outputs[0], SHAPE(2, 5, 3, 2));
    rand_inputs(e, bi), alloc_outputs(e, bo);
    a = bi[0], b = bi[1];
    float eref[60];
    for (int p = 0; p < 2; p++)
        for (int q = 0; q < 5; q++)
            for (int i = 0; i < 3; i++)
                for (int k = 0; k < 2; k++) {
                    double s = 0;
                    for (int j = 0; j < 4; j++)
                        s += (double)a[(p * 3 + i) * 4 + j] * b[(q * 4 + j) * 2 + k];
                    eref[((p * 5 + q) * 3 + i) * 2 + k] = (float)s;
                }
    CHECK(interp(e, bi, bo));
    CHECK_CLOSE(bo[0], eref, 60, 1e-5);
    free_bufs(2, bi), free_bufs(1, bo);
    hc_attr bad[] = {STR("equation", "ij,jk->iz")};
    CHECK(node(g, HC_OPK_EINSUM, "ein_bad", 2, in, 1, 1, bad) == NULL);
    CHECK(err.status == HC_ERR_INVALID);
    hc_graph_free(g);
}

/* ---- softmax family ------------------------------------------------------------------ */
static void test_softmax(void) {
    /* opset 11 coerces to 2-D at axis 1: softmax over the 12 trailing elements;
     * opset 13 normalizes over dim 1 only */
    for (int opset = 11; opset <= 13; opset += 2) {
        hc_graph *g = hc_graph_new("sm", opset);
        hc_tensor *x = input(g, "x", SHAPE(2, 3, 4));
        hc_attr at[] = {INT("axis", 1)};
        hc_node *n = node(g, HC_OPK_SOFTMAX, "sm", 1, &x, 1, 1, at);
        hc_node *l = node(g, HC_OPK_LOG_SOFTMAX, "lsm", 1, &x, 1, 1, at);
        void *bi[1], *bo[1];
        float lo[24], ref[24];
        rand_inputs(n, bi), alloc_outputs(n, bo);
        const float *xv = bi[0];
        for (int i = 0; i < 24; i++) {
            int b = i / 12, k = i % 4;
            double s = 0;
            for (int j = 0; j < 12; j++)
                if (opset == 11 || j % 4 == k) s += exp(xv[b * 12 + j]);
            ref[i] = (float)(exp(xv[i]) / s);
        }
        CHECK(interp(n, bi, bo));
        CHECK_CLOSE(bo[0], ref, 24, 1e-6);
        CHECK(interp(l, bi, (void *[]){lo}));
        for (int i = 0; i < 24; i++) ref[i] = logf(ref[i]);
        CHECK_CLOSE(lo, ref, 24, 1e-5);
        free_bufs(1, bi), free_bufs(1, bo);
        hc_graph_free(g);
    }
    /* Hardmax: the first of equal maxima wins */
    hc_graph *g = hc_graph_new("hm", 13);
    hc_tensor *x = input(g, "x", SHAPE(2, 3));
    hc_node *n = node(g, HC_OPK_HARDMAX, "hm", 1, &x, 1, 0, NULL);
    float xv[6] = {1, 3, 3, -1, -2, -1}, y[6], want[6] = {0, 1, 0, 1, 0, 0};
    CHECK(interp(n, (void *[]){xv}, (void *[]){y}));
    CHECK(memcmp(y, want, sizeof y) == 0);
    hc_graph_free(g);
}

/* ---- pooling ------------------------------------------------------------------------ */
static void test_pools(void) {
    hc_graph *g = hc_graph_new("pool", 13);
    hc_tensor *x = input(g, "x", SHAPE(1, 2, 5, 5));
    hc_attr mp[] = {INTS("kernel_shape", 3, 2), INTS("strides", 2, 2), INTS("pads", 1, 1, 1, 0),
                    INT("ceil_mode", 1), INT("storage_order", 1)};
    hc_node *n = node(g, HC_OPK_MAX_POOL, "mp", 1, &x, 2, 5, mp);
    /* rows ceil((5 + 2 - 3) / 2) + 1 = 3; cols ceil((5 + 1 - 2) / 2) + 1 = 3 */
    check_shape(n->outputs[0], SHAPE(1, 2, 3, 3));
    CHECK(n->outputs[1]->dtype == HC_I64);
    void *bi[1];
    float y[18], ay[18], ref[18], aref[18];
    int64_t idx[18], iref[18];
    rand_inputs(n, bi);
    const float *xv = bi[0];
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                float best = -INFINITY;
                int64_t at = -1;
                double s = 0;
                int cnt = 0;
                for (int u = 0; u < 3; u++)
                    for (int v = 0; v < 2; v++) {
                        int r = i * 2 - 1 + u, q = j * 2 - 1 + v;
                        if (r < 0 || r >= 5 || q < 0 || q >= 5) continue;
                        float e = xv[(c * 5 + r) * 5 + q];
                        s += e, cnt++;
                        /* storage_order 1: column-major index within the plane */
                        if (e > best) best = e, at = c * 25 + q * 5 + r;
                    }
                ref[(c * 3 + i) * 3 + j] = best, iref[(c * 3 + i) * 3 + j] = at;
                aref[(c * 3 + i) * 3 + j] = (float)(s / cnt);
            }
    CHECK(interp(n, bi, (void *[]){y, idx}));
    CHECK(memcmp(y, ref, sizeof y) == 0);
    CHECK(memcmp(idx, iref, sizeof idx) == 0);
    hc_node *ap = node(g, HC_OPK_AVERAGE_POOL, "ap", 1, &x, 1, 4, mp);
    CHECK(interp(ap, bi, (void *[]){ay}));
    CHECK_CLOSE(ay, aref, 18, 1e-6);
    /* count_include_pad: a 3x3 window with pad 1 always divides by 9 */
    hc_attr ip[] = {INTS("kernel_shape", 3, 3), INTS("pads", 1, 1, 1, 1),
                    INT("count_include_pad", 1)};
    hc_node *a9 = node(g, HC_OPK_AVERAGE_POOL, "ap9", 1, &x, 1, 3, ip);
    float y9[50];
    CHECK(interp(a9, bi, (void *[]){y9}));
    CHECK_NEAR(y9[0], (xv[0] + xv[1] + xv[5] + xv[6]) / 9.0, 1e-6);
    hc_node *gp = node(g, HC_OPK_GLOBAL_AVERAGE_POOL, "gap", 1, &x, 1, 0, NULL);
    hc_node *gm = node(g, HC_OPK_GLOBAL_MAX_POOL, "gmp", 1, &x, 1, 0, NULL);
    check_shape(gp->outputs[0], SHAPE(1, 2, 1, 1));
    float ga[2], gx[2];
    CHECK(interp(gp, bi, (void *[]){ga}) && interp(gm, bi, (void *[]){gx}));
    double s = 0, mx = -INFINITY;
    for (int i = 25; i < 50; i++) s += xv[i], mx = fmax(mx, xv[i]);
    CHECK_NEAR(ga[1], s / 25, 1e-6);
    CHECK(gx[1] == (float)mx);
    hc_attr nok[] = {INTS("strides", 1, 1)};
    CHECK(node(g, HC_OPK_MAX_POOL, "mp_bad", 1, &x, 1, 1, nok) == NULL);
    CHECK(strstr(err.msg, "node 'mp_bad' (MaxPool): kernel_shape is required") != NULL);
    free_bufs(1, bi);
    hc_graph_free(g);
}

/* ---- opset 18-23 norms and RotaryEmbedding --------------------------------------------- */
static void test_rms_group_norm(void) {
    hc_graph *g = hc_graph_new("norms23", 23);
    /* RMSNormalization over the last two dims, scale broadcast from [5] */
    hc_tensor *in[2] = {input(g, "x", SHAPE(2, 3, 5)), input(g, "s", SHAPE(5))};
    hc_attr at[] = {INT("axis", -2), FLT("epsilon", 1e-3)};
    hc_node *n = node(g, HC_OPK_RMS_NORMALIZATION, "rms", 2, in, 1, 2, at);
    CHECK(n != NULL);
    void *bi[3], *bo[1];
    rand_inputs(n, bi), alloc_outputs(n, bo);
    const float *x = bi[0], *sc = bi[1];
    float ref[36];
    for (int r = 0; r < 2; r++) {
        double ms = 0;
        for (int k = 0; k < 15; k++) ms += (double)x[r * 15 + k] * x[r * 15 + k];
        double inv = 1 / sqrt(ms / 15 + 1e-3);
        for (int k = 0; k < 15; k++) ref[r * 15 + k] = (float)(x[r * 15 + k] * inv * sc[k % 5]);
    }
    CHECK(interp(n, bi, bo));
    CHECK_CLOSE(bo[0], ref, 30, 1e-5);
    free_bufs(2, bi), free_bufs(1, bo);
    /* a scale that does not broadcast to the normalized dims */
    hc_tensor *bad[2] = {in[0], input(g, "s3", SHAPE(3))};
    CHECK(node(g, HC_OPK_RMS_NORMALIZATION, "rms_bad", 2, bad, 1, 0, NULL) == NULL);
    CHECK(strstr(err.msg, "node 'rms_bad' (RMSNormalization): input 1 ('s3') does not "
                          "broadcast") != NULL);

    /* GroupNormalization: version 21 (scale/bias per channel), then 18 (per group) */
    for (int v = 0; v < 2; v++) {
        g->opset = v == 0 ? 21 : 18;
        int64_t plen = v == 0 ? 4 : 2;
        hc_tensor *gi[3] = {input(g, v ? "gx18" : "gx21", SHAPE(2, 4, 3)),
                            input(g, v ? "gs18" : "gs21", 1, &plen),
                            input(g, v ? "gb18" : "gb21", 1, &plen)};
        hc_attr ga[] = {INT("num_groups", 2), FLT("epsilon", 1e-2)};
        hc_node *m = node(g, HC_OPK_GROUP_NORMALIZATION, v ? "gn18" : "gn21", 3, gi, 1, 2, ga);
        CHECK(m != NULL);
        rand_inputs(m, bi), alloc_outputs(m, bo);
        x = bi[0];
        const float *gs = bi[1], *gb = bi[2];
        for (int b = 0; b < 2; b++)
            for (int grp = 0; grp < 2; grp++) {
                double mean, inv; /* a group: 2 channels x 3 values, contiguous */
                const float *xs = x + (b * 4 + grp * 2) * 3;
                moments(xs, 6, 1e-2, &mean, &inv);
                for (int k = 0; k < 6; k++) {
                    int c = grp * 2 + k / 3, pi = v == 0 ? c : grp;
                    ref[(b * 4 + grp * 2) * 3 + k] = (float)((xs[k] - mean) * inv * gs[pi] + gb[pi]);
                }
            }
        CHECK(interp(m, bi, bo));
        CHECK_CLOSE(bo[0], ref, 24, 1e-5);
        free_bufs(3, bi), free_bufs(1, bo);
        /* the other version's parameter length is refused */
        int64_t wrong = v == 0 ? 2 : 4;
        hc_tensor *gw[3] = {gi[0], input(g, v ? "gw18" : "gw21", 1, &wrong), gi[2]};
        CHECK(node(g, HC_OPK_GROUP_NORMALIZATION, "gn_bad", 3, gw, 1, 2, ga) == NULL);
        CHECK_MSG(strstr(err.msg, "(GroupNormalization): input 1") != NULL, "%s", err.msg);
    }
    hc_attr g3[] = {INT("num_groups", 3)};
    hc_tensor *gx[3] = {input(g, "g3x", SHAPE(1, 4, 2)), input(g, "g3s", SHAPE(3)),
                        input(g, "g3b", SHAPE(3))};
    CHECK(node(g, HC_OPK_GROUP_NORMALIZATION, "gn3", 3, gx, 1, 1, g3) == NULL);
    CHECK(strstr(err.msg, "num_groups = 3 does not divide the 4 channels") != NULL);
    hc_graph_free(g);
}

/* RoPE reference on [B, H, S, D] data: out = rotate(x) with cos/sin rows per (b, s). */
static void rope_ref(const float *x, const float *cs, const float *sn, const int64_t *pos,
                     int64_t B, int64_t H, int64_t S, int64_t D, int64_t rd, bool inter,
                     bool bshd, float *y) {
    int64_t half = rd / 2;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t s = 0; s < S; s++) {
                int64_t base = bshd ? ((b * S + s) * H + h) * D : ((b * H + h) * S + s) * D;
                int64_t row = pos ? pos[b * S + s] : b * S + s;
                for (int64_t d = 0; d < D; d++) y[base + d] = x[base + d];
                for (int64_t j = 0; j < half; j++) {
                    int64_t d1 = inter ? 2 * j : j, d2 = inter ? 2 * j + 1 : j + half;
                    double c = cs[row * half + j], si = sn[row * half + j];
                    double x1 = x[base + d1], x2 = x[base + d2];
                    y[base + d1] = (float)(c * x1 - si * x2);
                    y[base + d2] = (float)(si * x1 + c * x2);
                }
            }
}

static void test_rotary(void) {
    hc_graph *g = hc_graph_new("rope", 23);
    /* 4-D, position ids, full rotation; both pairings */
    for (int inter = 0; inter < 2; inter++) {
        hc_tensor *ri[4] = {input(g, inter ? "rx1" : "rx0", SHAPE(2, 3, 4, 6)),
                            input(g, inter ? "rc1" : "rc0", SHAPE(7, 3)),
                            input(g, inter ? "rs1" : "rs0", SHAPE(7, 3)),
                            hc_graph_add_input(g, inter ? "rp1" : "rp0", HC_I64, SHAPE(2, 4))};
        hc_attr ra[] = {INT("interleaved", inter)};
        hc_node *n = node(g, HC_OPK_ROTARY_EMBEDDING, inter ? "rope_i" : "rope", 4, ri, 1, 1, ra);
        CHECK(n != NULL);
        float *x = rand_buf(144), *c = rand_buf(21), *s = rand_buf(21), y[144], ref[144];
        int64_t pos[8] = {0, 1, 2, 6, 5, 3, 3, 0};
        CHECK(interp(n, (void *[]){x, c, s, pos}, (void *[]){y}));
        rope_ref(x, c, s, pos, 2, 3, 4, 6, 6, inter, false, ref);
        CHECK_CLOSE(y, ref, 144, 1e-6);
        free(x), free(c), free(s);
    }
    /* 3-D with num_heads, partial rotation (rotary_embedding_dim 2 of head size 4), caches
     * per (batch, seq) without position ids */
    hc_tensor *ti[3] = {input(g, "tx", SHAPE(2, 3, 8)), input(g, "tc", SHAPE(2, 3, 1)),
                        input(g, "ts", SHAPE(2, 3, 1))};
    hc_attr ta[] = {INT("num_heads", 2), INT("rotary_embedding_dim", 2)};
    hc_node *t = node(g, HC_OPK_ROTARY_EMBEDDING, "rope3", 3, ti, 1, 2, ta);
    CHECK(t != NULL);
    float *x = rand_buf(48), *c = rand_buf(6), *s = rand_buf(6), y[48], ref[48];
    CHECK(interp(t, (void *[]){x, c, s}, (void *[]){y}));
    rope_ref(x, c, s, NULL, 2, 2, 3, 4, 2, false, true, ref);
    CHECK_CLOSE(y, ref, 48, 1e-6);
    free(x), free(c), free(s);
    /* errors: no num_heads for a 3-D input; an odd rotary dim; a cache of the wrong width */
    CHECK(node(g, HC_OPK_ROTARY_EMBEDDING, "rope_nh", 3, ti, 1, 0, NULL) == NULL);
    CHECK(strstr(err.msg, "node 'rope_nh' (RotaryEmbedding): num_heads") != NULL);
    hc_attr odd[] = {INT("num_heads", 2), INT("rotary_embedding_dim", 3)};
    CHECK(node(g, HC_OPK_ROTARY_EMBEDDING, "rope_odd", 3, ti, 1, 2, odd) == NULL);
    CHECK(strstr(err.msg, "rotary_embedding_dim 3 must be even") != NULL);
    hc_attr full[] = {INT("num_heads", 2)};
    CHECK(node(g, HC_OPK_ROTARY_EMBEDDING, "rope_w", 3, ti, 1, 1, full) == NULL);
    CHECK(strstr(err.msg, "input 1 ('tc') must have shape [batch, seq, rotary_dim / 2]") != NULL);
    hc_graph_free(g);
}

/* ---- RoiAlign ----------------------------------------------------------------------- */
typedef struct roi_p {
    int64_t N, C, H, W, R, oh, ow, sr;
    float scale;
    bool half, max;
} roi_p;

/* The ONNX reference's loops (onnx/reference/ops/op_roi_align.py) in f32; a batch index
 * outside [0, N) gives 0 (hidetc's rule; the reference reads out of bounds). */
static void roi_ref(const roi_p *p, const float *x, const float *rois, const int64_t *bi,
                    float *y) {
    for (int64_t r = 0; r < p->R; r++) {
        const float *b = rois + r * 4;
        float off = p->half ? 0.5f : 0.0f;
        float sw = b[0] * p->scale - off, sh = b[1] * p->scale - off;
        float rw = (b[2] * p->scale - off) - sw, rh = (b[3] * p->scale - off) - sh;
        if (!p->half) rw = 1.0f > rw ? 1.0f : rw, rh = 1.0f > rh ? 1.0f : rh;
        float bh = rh / (float)p->oh, bw = rw / (float)p->ow;
        int64_t gh = p->sr > 0 ? p->sr : (int64_t)ceilf(rh / (float)p->oh);
        int64_t gw = p->sr > 0 ? p->sr : (int64_t)ceilf(rw / (float)p->ow);
        int64_t count = gh * gw > 1 ? gh * gw : 1;
        for (int64_t c = 0; c < p->C; c++)
            for (int64_t ph = 0; ph < p->oh; ph++)
                for (int64_t pw = 0; pw < p->ow; pw++) {
                    float *out = y + ((r * p->C + c) * p->oh + ph) * p->ow + pw;
                    if (bi[r] < 0 || bi[r] >= p->N) {
                        *out = 0;
                        continue;
                    }
                    const float *xp = x + (bi[r] * p->C + c) * p->H * p->W;
                    double acc = 0;
                    float best = 0;
                    bool have = false;
                    for (int64_t iy = 0; iy < gh; iy++) {
                        float yy = sh + (float)ph * bh + ((float)iy + 0.5f) * bh / (float)gh;
                        for (int64_t ix = 0; ix < gw; ix++) {
                            float xx = sw + (float)pw * bw + ((float)ix + 0.5f) * bw / (float)gw;
                            float v = 0;
                            if (!(yy < -1 || yy > p->H || xx < -1 || xx > p->W)) {
                                float fy = yy > 0 ? yy : 0, fx = xx > 0 ? xx : 0;
                                int64_t yl = (int64_t)fy, xl = (int64_t)fx, yh, xh;
                                if (yl >= p->H - 1) yh = yl = p->H - 1, fy = (float)yl;
                                else yh = yl + 1;
                                if (xl >= p->W - 1) xh = xl = p->W - 1, fx = (float)xl;
                                else xh = xl + 1;
                                float ly = fy - (float)yl, lx = fx - (float)xl, hy = 1 - ly, hx = 1 - lx;
                                float t1 = hy * hx * xp[yl * p->W + xl], t2 = hy * lx * xp[yl * p->W + xh];
                                float t3 = ly * hx * xp[yh * p->W + xl], t4 = ly * lx * xp[yh * p->W + xh];
                                if (p->max) v = fmaxf(fmaxf(fmaxf(t1, t2), t3), t4);
                                else v = t1 + t2 + t3 + t4;
                            }
                            acc += v;
                            if (!have || v > best) best = v;
                            have = true;
                        }
                    }
                    *out = p->max ? best : (float)(acc / (double)count);
                }
    }
}

/* One RoiAlign node compiled (auto-scheduled, JIT) on (x, rois, bi) into y. */
static bool roi_compiled(const hc_node *n, void *x, void *rois, void *bi, void *y) {
    hc_arena a;
    hc_arena_init(&a);
    const hc_target *tg = hc_target_host();
    hc_task *t = hc_op_get(n->op)->task(&a, n, &err);
    hc_func *f = t ? hc_auto_schedule(&a, t, tg, &err) : NULL;
    bool ok = false;
    if (f) {
        char *src = hc_codegen_c(&a, hc_module_new(&a, "ops_roi", 1, &f), tg);
        hc_jit_lib *lib = NULL;
        if (hc_jit_build(src, NULL, &lib, &err) == HC_OK) {
            char sym[128];
            snprintf(sym, sizeof sym, "%s__packed", f->name);
            hc_packed_fn fn = (hc_packed_fn)hc_jit_symbol(lib, sym);
            if (fn) fn((void *[]){x, rois, bi, y}), ok = true;
            hc_jit_close(lib);
        }
        free(src);
    }
    if (!ok) fprintf(stderr, "%s: %s\n", n->name, err.msg);
    hc_arena_free(&a);
    return ok;
}

static void test_roi_align(void) {
    /* 2 batches, C = 3 (prime), a 7 x 6 image; rois inside, partly outside (each side),
     * tiny, inverted, taller and wider than the image (the adaptive window's second part),
     * batch indices selecting both batches */
    enum { N = 2, C = 3, H = 7, W = 6, R = 7 };
    const float rois[R * 4] = {0.5f, 1.0f, 4.5f, 6.0f,   -2.0f, -1.5f, 3.0f, 4.0f,
                               3.0f, 4.0f, 9.5f, 10.0f,  1.0f, 2.0f, 1.2f, 2.1f,
                               -3.0f, -2.0f, 12.0f, 11.0f, 4.0f, 5.0f, 2.0f, 1.0f,
                               -40.0f, -50.0f, 45.0f, 60.0f};
    const int64_t bis[R] = {0, 1, 1, 0, 1, 0, 1};
    float *x = rand_buf(N * C * H * W);
    hc_graph *g = hc_graph_new("roi", 16), *g10 = hc_graph_new("roi10", 10);
    hc_tensor *in[3] = {input(g, "rx", SHAPE(N, C, H, W)), input(g, "rr", SHAPE(R, 4)),
                        hc_graph_add_input(g, "rb", HC_I64, 1, (int64_t[]){R})};
    hc_tensor *in10[3] = {input(g10, "rx", SHAPE(N, C, H, W)), input(g10, "rr", SHAPE(R, 4)),
                          hc_graph_add_input(g10, "rb", HC_I64, 1, (int64_t[]){R})};
    enum { NY = R * C * 3 * 5 };
    float y[NY], yc[NY], ref[NY];
    for (int k = 0; k < 9; k++) {
        bool mx = k & 1, half = k & 2, sr2 = k & 4, v10 = k == 8;
        roi_p p = {N, C, H, W, R, 3, 5, sr2 ? 2 : 0, k == 3 || k == 4 ? 0.75f : 1.0f,
                   half && !v10, mx && !v10};
        char name[32];
        snprintf(name, sizeof name, "roi%d", k);
        hc_attr at[] = {STR("mode", p.max ? "max" : "avg"), INT("output_height", 3),
                        INT("output_width", 5), INT("sampling_ratio", p.sr),
                        FLT("spatial_scale", p.scale),
                        STR("coordinate_transformation_mode", half ? "half_pixel" : "output_half_pixel")};
        hc_node *n = node(v10 ? g10 : g, HC_OPK_ROI_ALIGN, name, 3, v10 ? in10 : in, 1, v10 ? 3 : 6,
                          v10 ? at + 1 : at);
        CHECK(n != NULL);
        if (!n) continue;
        check_shape(n->outputs[0], SHAPE(R, C, 3, 5));
        roi_ref(&p, x, rois, bis, ref);
        CHECK(interp(n, (void *[]){x, (void *)rois, (void *)bis}, (void *[]){y}));
        CHECK_CLOSE(y, ref, NY, 1e-5);
        CHECK(roi_compiled(n, x, (void *)rois, (void *)bis, yc));
        CHECK_CLOSE(yc, y, NY, 1e-5);
    }
    /* batch indices out of [0, N): 0, reads clamped; default attributes (1 x 1, avg) */
    const int64_t bad[R] = {2, -1, 1, 0, 7, 0, -5};
    hc_node *n = node(g, HC_OPK_ROI_ALIGN, "roi_bad", 3, in, 1, 0, NULL);
    float y1[R * C], y1c[R * C], r1[R * C];
    roi_p p = {N, C, H, W, R, 1, 1, 0, 1.0f, true, false};
    roi_ref(&p, x, rois, bad, r1);
    CHECK(interp(n, (void *[]){x, (void *)rois, (void *)bad}, (void *[]){y1}));
    CHECK(roi_compiled(n, x, (void *)rois, (void *)bad, y1c));
    CHECK_CLOSE(y1, r1, R * C, 1e-5);
    CHECK_CLOSE(y1c, y1, R * C, 1e-5);
    CHECK(y1[0] == 0 && y1[C] == 0 && y1[2 * C] != 0);
    /* an adaptive grid above 2^24 samples is NaN, not a silently truncated value */
    const float huge[4] = {0, 0, 1e8f, 3};
    hc_tensor *hin[3] = {in[0], input(g, "rh", SHAPE(1, 4)),
                         hc_graph_add_input(g, "rhb", HC_I64, 1, (int64_t[]){1})};
    hc_node *nh = node(g, HC_OPK_ROI_ALIGN, "roi_huge", 3, hin, 1, 0, NULL);
    float yh[C];
    CHECK(interp(nh, (void *[]){x, (void *)huge, (void *)bis}, (void *[]){yh}));
    CHECK(isnan(yh[0]) && isnan(yh[2]));
    /* errors name the node and the attribute or input */
    hc_attr bm[] = {STR("mode", "sum")};
    CHECK(node(g, HC_OPK_ROI_ALIGN, "roi_mode", 3, in, 1, 1, bm) == NULL);
    CHECK(strstr(err.msg, "node 'roi_mode' (RoiAlign): mode 'sum'") != NULL);
    hc_attr bc[] = {STR("coordinate_transformation_mode", "half_pixel")};
    CHECK(node(g10, HC_OPK_ROI_ALIGN, "roi_ctm", 3, in10, 1, 1, bc) == NULL);
    CHECK(strstr(err.msg, "coordinate_transformation_mode is an attribute from version 16") != NULL);
    hc_attr bs[] = {INT("sampling_ratio", -1)};
    CHECK(node(g, HC_OPK_ROI_ALIGN, "roi_sr", 3, in, 1, 1, bs) == NULL);
    CHECK(strstr(err.msg, "sampling_ratio -1 is negative") != NULL);
    hc_tensor *bad_in[3] = {in[0], input(g, "rr5", SHAPE(R, 5)), in[2]};
    CHECK(node(g, HC_OPK_ROI_ALIGN, "roi_shape", 3, bad_in, 1, 0, NULL) == NULL);
    CHECK(strstr(err.msg, "rois 'rr5' must be [num_rois, 4]") != NULL);
    hc_tensor *bad_bi[3] = {in[0], in[1], input(g, "rbf", SHAPE(R))};
    CHECK(node(g, HC_OPK_ROI_ALIGN, "roi_bi", 3, bad_bi, 1, 0, NULL) == NULL);
    CHECK(strstr(err.msg, "batch_indices 'rbf' must be i64") != NULL);
    free(x);
    hc_graph_free(g);
    hc_graph_free(g10);
}

/* ---- scheduled programs vs the interpreter ------------------------------------------- */
typedef struct jcase {
    hc_node *n;
    hc_func *f;
    bool templ; /* scheduled by the op's hook */
} jcase;

static void test_compiled(void) {
    hc_graph *g = hc_graph_new("jit", 13);
    jcase cs[40];
    int nc = 0;
    hc_tensor *cx[3] = {input(g, "cx", SHAPE(1, 6, 11, 7)), input(g, "cw", SHAPE(6, 2, 3, 3)),
                        input(g, "cb", SHAPE(6))};
    hc_attr ca[] = {INT("group", 3), INTS("pads", 1, 2, 0, 1), INTS("strides", 2, 1)};
    cs[nc++].n = node(g, HC_OPK_CONV, "j_conv", 3, cx, 1, 3, ca);
    hc_tensor *dw[2] = {cx[0], input(g, "dw", SHAPE(6, 1, 3, 3))};
    hc_attr da[] = {INT("group", 6), STR("auto_pad", "SAME_UPPER")};
    cs[nc++].n = node(g, HC_OPK_CONV, "j_depthwise", 2, dw, 1, 2, da);
    hc_tensor *tw[2] = {cx[0], input(g, "tw", SHAPE(6, 1, 2, 3))};
    hc_attr ta[] = {INT("group", 2), INTS("strides", 2, 2), INTS("output_padding", 1, 0)};
    cs[nc++].n = node(g, HC_OPK_CONV_TRANSPOSE, "j_convt", 2, tw, 1, 3, ta);
    hc_tensor *ma[2] = {input(g, "ma", SHAPE(2, 3, 13, 17)), input(g, "mb", SHAPE(2, 3, 17, 5))};
    cs[nc++].n = node(g, HC_OPK_MATMUL, "j_bmm", 2, ma, 1, 0, NULL);
    hc_tensor *mb[2] = {ma[0], input(g, "mb2", SHAPE(17, 19))};
    cs[nc++].n = node(g, HC_OPK_MATMUL, "j_mm_bcast", 2, mb, 1, 0, NULL);
    hc_tensor *mc[2] = {input(g, "mc", SHAPE(3, 1, 7, 5)), input(g, "md", SHAPE(4, 5, 3))};
    cs[nc++].n = node(g, HC_OPK_MATMUL, "j_mm_general", 2, mc, 1, 0, NULL);
    hc_tensor *ge[3] = {input(g, "ga", SHAPE(7, 13)), input(g, "gb", SHAPE(11, 13)),
                        input(g, "gc", SHAPE(7, 1))};
    hc_attr gea[] = {INT("transB", 1), FLT("beta", 0.5)};
    cs[nc++].n = node(g, HC_OPK_GEMM, "j_gemm", 3, ge, 1, 2, gea);
    hc_attr sa[] = {INT("axis", 2)};
    cs[nc++].n = node(g, HC_OPK_SOFTMAX, "j_softmax", 1, ma, 1, 1, sa);
    cs[nc++].n = node(g, HC_OPK_LOG_SOFTMAX, "j_logsoftmax", 1, ma, 1, 0, NULL);
    hc_attr pa[] = {INTS("kernel_shape", 3, 2), INTS("pads", 1, 0, 1, 1), INT("ceil_mode", 1),
                    INTS("strides", 2, 2)};
    cs[nc++].n = node(g, HC_OPK_MAX_POOL, "j_maxpool", 1, cx, 2, 4, pa);
    cs[nc++].n = node(g, HC_OPK_AVERAGE_POOL, "j_avgpool", 1, cx, 1, 4, pa);
    /* padded windows of stride 1: the guard becomes loop bounds (emit_guarded_update) or
     * the lanes of masked vector loads (emit_chunked_reduce) */
    int first_padded = nc;
    hc_attr pi[] = {INTS("kernel_shape", 3, 3), INTS("pads", 1, 1, 1, 1),
                    INT("count_include_pad", 1)};
    cs[nc++].n = node(g, HC_OPK_AVERAGE_POOL, "j_avgpool_incl", 1, cx, 1, 3, pi);
    hc_attr pe[] = {INTS("kernel_shape", 2, 5), INTS("pads", 0, 2, 1, 3)};
    cs[nc++].n = node(g, HC_OPK_AVERAGE_POOL, "j_avgpool_excl", 1, cx, 1, 2, pe);
    /* rows wider than a vector: whole chunks and a tail (37 = 16 + 16 + 5, 17 = 16 + 1) */
    hc_tensor *wide[1] = {input(g, "cxw", SHAPE(1, 3, 5, 37))};
    cs[nc++].n = node(g, HC_OPK_AVERAGE_POOL, "j_avgpool_wide", 1, wide, 1, 3, pi);
    hc_tensor *tail[1] = {input(g, "cxt", SHAPE(2, 2, 3, 17))};
    hc_attr pt[] = {INTS("kernel_shape", 1, 5), INTS("pads", 0, 2, 0, 2)};
    cs[nc++].n = node(g, HC_OPK_AVERAGE_POOL, "j_avgpool_tail", 1, tail, 1, 2, pt);
    hc_attr lp3[] = {INTS("kernel_shape", 2, 3), INTS("pads", 1, 0, 0, 2), INTS("strides", 2, 1),
                     INT("p", 3)};
    cs[nc++].n = node(g, HC_OPK_LP_POOL, "j_lppool_p3", 1, cx, 1, 4, lp3);
    cs[nc++].n = node(g, HC_OPK_LP_POOL, "j_lppool_p2", 1, tail, 1, 2, pt);
    hc_attr pm[] = {INTS("kernel_shape", 3, 4), INTS("pads", 2, 1, 1, 2)};
    cs[nc++].n = node(g, HC_OPK_MAX_POOL, "j_maxpool_pad", 1, cx, 1, 2, pm);
    /* strided windows: the guard on k*j + c still becomes loop bounds (floor/ceil) */
    hc_attr ps2[] = {INTS("kernel_shape", 3, 3), INTS("pads", 1, 1, 1, 1), INTS("strides", 2, 2)};
    cs[nc++].n = node(g, HC_OPK_MAX_POOL, "j_maxpool_s2", 1, wide, 1, 3, ps2);
    hc_attr ps3[] = {INTS("kernel_shape", 2, 4), INTS("pads", 1, 2, 0, 1), INTS("strides", 3, 3)};
    cs[nc++].n = node(g, HC_OPK_AVERAGE_POOL, "j_avgpool_s3", 1, wide, 1, 3, ps3);
    int last_padded = nc;
    /* GridSample: grid values in [-2, 2] reach every padding rule */
    hc_tensor *gs1[2] = {input(g, "gsx", SHAPE(1, 3, 5, 7)), input(g, "gsg", SHAPE(1, 4, 6, 2))};
    cs[nc++].n = node(g, HC_OPK_GRID_SAMPLE, "j_gridsample_linear", 2, gs1, 1, 0, NULL);
    hc_attr gsc[] = {{.name = "mode", .kind = HC_ATTR_STRING, .s = "bicubic"},
                     {.name = "padding_mode", .kind = HC_ATTR_STRING, .s = "reflection"},
                     INT("align_corners", 1)};
    hc_tensor *gs2[2] = {gs1[0], input(g, "gsg2", SHAPE(1, 3, 2, 2))};
    cs[nc++].n = node(g, HC_OPK_GRID_SAMPLE, "j_gridsample_cubic", 2, gs2, 1, 3, gsc);
    hc_attr gsn[] = {{.name = "mode", .kind = HC_ATTR_STRING, .s = "nearest"},
                     {.name = "padding_mode", .kind = HC_ATTR_STRING, .s = "border"}};
    hc_tensor *gs3[2] = {input(g, "gsx3", SHAPE(2, 2, 3, 4)), input(g, "gsg3", SHAPE(2, 5, 1, 2))};
    cs[nc++].n = node(g, HC_OPK_GRID_SAMPLE, "j_gridsample_nearest", 2, gs3, 1, 2, gsn);
    /* Col2Im: strides, dilations and uneven pads (blocks 4 x 2 of 2 x 3 on a 7 x 5 image) */
    const int64_t img[2] = {7, 5}, blk[2] = {2, 3};
    hc_tensor *c2[3] = {input(g, "c2x", SHAPE(1, 12, 8)),
                        hc_graph_constant(g, "c2img", HC_I64, 1, (int64_t[]){2}, img),
                        hc_graph_constant(g, "c2blk", HC_I64, 1, (int64_t[]){2}, blk)};
    hc_attr c2a[] = {INTS("dilations", 1, 2), INTS("strides", 2, 1), INTS("pads", 1, 0, 0, 1)};
    cs[nc++].n = node(g, HC_OPK_COL2IM, "j_col2im", 3, c2, 1, 3, c2a);
    hc_tensor *ln[3] = {ma[0], input(g, "ls", SHAPE(17)), input(g, "lb", SHAPE(17))};
    cs[nc++].n = node(g, HC_OPK_LAYER_NORMALIZATION, "j_layernorm", 3, ln, 1, 0, NULL);
    hc_attr ea[] = {STR("equation", "abij,abjk->abik")};
    cs[nc++].n = node(g, HC_OPK_EINSUM, "j_einsum", 2, ma, 1, 1, ea);
    hc_tensor *bn[5] = {cx[0], cx[2], input(g, "bb", SHAPE(6)), input(g, "bm", SHAPE(6)),
                        input(g, "bv", SHAPE(6))};
    cs[nc++].n = node(g, HC_OPK_BATCH_NORMALIZATION, "j_bn", 5, bn, 1, 0, NULL);
    /* opset 18-23 ops (auto-scheduled) */
    hc_graph *g23 = hc_graph_new("jit23", 23);
    hc_tensor *rn[2] = {input(g23, "rx", SHAPE(3, 7, 37)), input(g23, "rs", SHAPE(37))};
    cs[nc++].n = node(g23, HC_OPK_RMS_NORMALIZATION, "j_rmsnorm", 2, rn, 1, 0, NULL);
    hc_tensor *gn[3] = {input(g23, "gx", SHAPE(2, 6, 5, 7)), input(g23, "gs", SHAPE(6)),
                        input(g23, "gb", SHAPE(6))};
    hc_attr gna[] = {INT("num_groups", 3)};
    cs[nc++].n = node(g23, HC_OPK_GROUP_NORMALIZATION, "j_groupnorm", 3, gn, 1, 1, gna);
    hc_tensor *ro[3] = {input(g23, "qx", SHAPE(2, 3, 5, 8)), input(g23, "qc", SHAPE(2, 5, 3)),
                        input(g23, "qs", SHAPE(2, 5, 3))};
    hc_attr roa[] = {INT("rotary_embedding_dim", 6), INT("interleaved", 1)};
    cs[nc++].n = node(g23, HC_OPK_ROTARY_EMBEDDING, "j_rope", 3, ro, 1, 2, roa);

    HC_ASSERT(nc <= (int)HC_ARRAY_LEN(cs)); /* cs[] has room for every case */
    hc_arena a;
    hc_arena_init(&a);
    const hc_target *tg = hc_target_host();
    hc_func *fs[HC_ARRAY_LEN(cs)];
    for (int i = 0; i < nc; i++) {
        HC_ASSERT(cs[i].n);
        const hc_op_def *d = hc_op_get(cs[i].n->op);
        hc_task *t = d->task(&a, cs[i].n, &err);
        HC_ASSERT_MSG(t, err.msg);
        const hc_template *tp = hc_target_template(tg, cs[i].n->op);
        cs[i].f = tp ? tp->schedule(&a, cs[i].n, t, tg, cs[i].n->name, NULL, &err) : NULL;
        cs[i].templ = cs[i].f != NULL;
        if (!cs[i].f) cs[i].f = hc_auto_schedule(&a, t, tg, &err);
        CHECK_MSG(cs[i].f != NULL, "%s: %s", cs[i].n->name, err.msg);
        fs[i] = cs[i].f;
    }
    /* the template takes batched matmuls and a 2-D B broadcast over A's rows */
    CHECK(cs[3].templ && cs[4].templ && !cs[5].templ);
    for (int i = first_padded; i < last_padded; i++) { /* no guard left in the inner loop */
        hc_sb sb;
        hc_sb_init(&sb);
        hc_print_func(&sb, cs[i].f);
        const char *prog = hc_sb_str(&sb);
        /* sums over a stride-1 window: vector chunks with masked loads (emit_chunked_reduce)
         * on targets with 8 or more lanes; else the guard as loop bounds */
        bool chunked = cs[i].n->op == HC_OPK_AVERAGE_POOL && tg->caps.vector_bits >= 256 &&
                       strcmp(cs[i].n->name, "j_avgpool_s3") != 0;
        if (chunked)
            CHECK_MSG(strstr(prog, "vload_range") != NULL, "%s: no chunked window sum",
                      cs[i].n->name);
        else
            CHECK_MSG(strstr(prog, "jlo") != NULL, "%s: window guard not split",
                      cs[i].n->name);
        hc_sb_free(&sb);
    }
    char *src = hc_codegen_c(&a, hc_module_new(&a, "ops_nn", nc, fs), tg);
    hc_jit_lib *lib = NULL;
    CHECK(hc_jit_build(src, NULL, &lib, &err) == HC_OK);
    free(src);
    for (int i = 0; lib && i < nc; i++) {
        hc_node *n = cs[i].n;
        void *in[5], *out[2], *ref[2], *args[8];
        rand_inputs(n, in), alloc_outputs(n, out), alloc_outputs(n, ref);
        if (n->op == HC_OPK_BATCH_NORMALIZATION)
            for (int k = 0; k < 6; k++) ((float *)in[4])[k] = fabsf(((float *)in[4])[k]);
        CHECK(interp(n, in, ref));
        int na = 0;
        for (int k = 0; k < n->ninputs; k++) args[na++] = in[k];
        for (int k = 0; k < n->noutputs; k++) args[na++] = out[k];
        char sym[128];
        snprintf(sym, sizeof sym, "%s__packed", cs[i].f->name);
        hc_packed_fn fn = (hc_packed_fn)hc_jit_symbol(lib, sym);
        CHECK_MSG(fn != NULL, "%s", sym);
        if (fn) fn(args);
        CHECK_MSG(max_rel_err(out[0], ref[0], hc_tensor_numel(n->outputs[0])) < 1e-4, "%s",
                  n->name);
        if (n->noutputs > 1)
            CHECK(memcmp(out[1], ref[1], hc_tensor_nbytes(n->outputs[1])) == 0);
        free_bufs(n->ninputs, in), free_bufs(n->noutputs, out), free_bufs(n->noutputs, ref);
    }
    if (lib) hc_jit_close(lib);
    hc_arena_free(&a);
    hc_graph_free(g);
    hc_graph_free(g23);
}

/* ---- Det and DFT ------------------------------------------------------------------------ */
/* det by the Leibniz formula (a different algorithm from the Task's elimination) */
static double det_leibniz(const float *a, int m) {
    int perm[8];
    for (int i = 0; i < m; i++) perm[i] = i;
    double sum = 0;
    for (;;) {
        int inv = 0;
        double p = 1;
        for (int i = 0; i < m; i++) {
            p *= a[i * m + perm[i]];
            for (int j = i + 1; j < m; j++) inv += perm[i] > perm[j];
        }
        sum += inv % 2 ? -p : p;
        int i = m - 2; /* next permutation in lexicographic order */
        while (i >= 0 && perm[i] > perm[i + 1]) i--;
        if (i < 0) break;
        int j = m - 1;
        while (perm[j] < perm[i]) j--;
        int t = perm[i];
        perm[i] = perm[j], perm[j] = t;
        for (int l = i + 1, r = m - 1; l < r; l++, r--) t = perm[l], perm[l] = perm[r], perm[r] = t;
    }
    return sum;
}

/* The DFT of x [pre, n, post, c] along n into y [pre, k, post, 2] (1 for the IRFFT), in
 * double from the definitions: the IRFFT through the full Hermitian spectrum. */
static void dft_ref(const float *x, int64_t pre, int64_t n, int64_t post, int c, int64_t len,
                    bool inverse, bool onesided, float *y) {
    bool irfft = inverse && onesided;
    int64_t nout = onesided && !inverse ? len / 2 + 1 : len;
    int co = irfft ? 1 : 2;
    double *re = malloc(sizeof(double) * (size_t)len), *im = malloc(sizeof(double) * (size_t)len);
    for (int64_t p = 0; p < pre; p++)
        for (int64_t q = 0; q < post; q++) {
            for (int64_t m = 0; m < len; m++) {
                int64_t src = m;
                bool conj = false;
                if (irfft && m > len / 2) src = len - m, conj = true;
                bool in = src < n && (!irfft || src <= len / 2);
                const float *e = x + ((p * n + src) * post + q) * c;
                re[m] = in ? e[0] : 0;
                im[m] = in && c == 2 ? (conj ? -e[1] : e[1]) : 0;
                if (irfft && (m == 0 || 2 * m == len)) im[m] = 0;
            }
            for (int64_t k = 0; k < nout; k++) {
                double sr = 0, si = 0, sg = inverse ? 1 : -1;
                for (int64_t m = 0; m < len; m++) {
                    double t = 2 * 3.14159265358979323846 * (double)((k * m) % len) / (double)len;
                    sr += re[m] * cos(t) - sg * im[m] * sin(t);
                    si += im[m] * cos(t) + sg * re[m] * sin(t);
                }
                if (inverse) sr /= (double)len, si /= (double)len;
                float *o = y + ((p * nout + k) * post + q) * co;
                o[0] = (float)sr;
                if (co == 2) o[1] = (float)si;
            }
        }
    free(re), free(im);
}

typedef struct lcase {
    hc_node *n;
    void *in[3]; /* the present inputs' data */
    float *ref;
    double tol;
} lcase;

static void test_det_dft(void) {
    hc_graph *g = hc_graph_new("linalg", 22);
    lcase cs[16];
    int nc = 0;
    /* Det: a 1 x 1, a batch of three 5 x 5 (primes), singular 4 x 4 ones */
    hc_tensor *d1[1] = {input(g, "d1", SHAPE(1, 1))};
    cs[nc].n = node(g, HC_OPK_DET, "det_1x1", 1, d1, 1, 0, NULL);
    check_shape(cs[nc].n->outputs[0], 0, NULL);
    cs[nc].in[0] = rand_buf(1);
    cs[nc].ref = malloc(sizeof(float));
    cs[nc].ref[0] = ((float *)cs[nc].in[0])[0];
    cs[nc++].tol = 1e-6;
    hc_tensor *d5[1] = {input(g, "d5", SHAPE(3, 5, 5))};
    cs[nc].n = node(g, HC_OPK_DET, "det_5x5", 1, d5, 1, 0, NULL);
    check_shape(cs[nc].n->outputs[0], SHAPE(3));
    cs[nc].in[0] = rand_buf(75);
    cs[nc].ref = malloc(sizeof(float) * 3);
    for (int b = 0; b < 3; b++)
        cs[nc].ref[b] = (float)det_leibniz((float *)cs[nc].in[0] + 25 * b, 5);
    cs[nc++].tol = 1e-5;
    /* row 3 = row 0 + row 1 (exact in floats); a zero first column (the zero-pivot guard:
     * 0, not a NaN); all zeros; a permutation (pivoting swaps, det -1) */
    static const float sing[4][16] = {
        {1, 2, 3, 4, 2, -1, 0, 5, 7, 3, -2, 1, 3, 1, 3, 9},
        {0, 2, 3, 4, 0, -1, 0, 5, 0, 3, -2, 1, 0, 1, 3, 9},
        {0},
        {0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0},
    };
    hc_tensor *d4[1] = {input(g, "d4", SHAPE(2, 2, 4, 4))};
    cs[nc].n = node(g, HC_OPK_DET, "det_singular", 1, d4, 1, 0, NULL);
    cs[nc].in[0] = malloc(sizeof sing);
    memcpy(cs[nc].in[0], sing, sizeof sing);
    cs[nc].ref = malloc(sizeof(float) * 4);
    for (int b = 0; b < 4; b++) cs[nc].ref[b] = (float)det_leibniz(sing[b], 4);
    CHECK(cs[nc].ref[0] == 0 && cs[nc].ref[1] == 0 && cs[nc].ref[3] == -1);
    cs[nc++].tol = 1e-5;

    /* DFT-17: a real prime-length (7) signal along axis 1 (of [2, 7, 3, 1]), onesided,
     * inverse of a complex one */
    hc_graph *g17 = hc_graph_new("dft17", 17);
    hc_tensor *fr[1] = {input(g17, "fr", SHAPE(2, 7, 3, 1))};
    hc_tensor *fc[1] = {input(g17, "fc", SHAPE(2, 7, 3, 2))};
    float *xr = rand_buf(42), *xc = rand_buf(84);
    cs[nc].n = node(g17, HC_OPK_DFT, "dft_real7", 1, fr, 1, 0, NULL);
    check_shape(cs[nc].n->outputs[0], SHAPE(2, 7, 3, 2));
    cs[nc].in[0] = xr;
    cs[nc].ref = malloc(sizeof(float) * 84);
    dft_ref(xr, 2, 7, 3, 1, 7, false, false, cs[nc].ref);
    cs[nc++].tol = 1e-5;
    hc_attr one[] = {INT("onesided", 1)};
    cs[nc].n = node(g17, HC_OPK_DFT, "dft_onesided", 1, fr, 1, 1, one);
    check_shape(cs[nc].n->outputs[0], SHAPE(2, 4, 3, 2));
    cs[nc].in[0] = xr;
    cs[nc].ref = malloc(sizeof(float) * 48);
    dft_ref(xr, 2, 7, 3, 1, 7, false, true, cs[nc].ref);
    cs[nc++].tol = 1e-5;
    hc_attr inv[] = {INT("inverse", 1)};
    cs[nc].n = node(g17, HC_OPK_DFT, "dft_inverse", 1, fc, 1, 1, inv);
    cs[nc].in[0] = xc;
    cs[nc].ref = malloc(sizeof(float) * 84);
    dft_ref(xc, 2, 7, 3, 2, 7, true, false, cs[nc].ref);
    cs[nc++].tol = 1e-5;
    /* dft_length shorter (5: truncated) and longer (11: zero-padded) than N, along axis 2
     * of a complex [2, 3, 7, 2] */
    hc_tensor *fa[1] = {input(g17, "fa", SHAPE(2, 3, 7, 2))};
    hc_attr ax2[] = {INT("axis", 2)};
    for (int i = 0; i < 2; i++) {
        int64_t len = i ? 11 : 5;
        hc_tensor *in2[2] = {fa[0], hc_graph_constant(g17, i ? "len11" : "len5", HC_I64, 0,
                                                      NULL, &len)};
        cs[nc].n = node(g17, HC_OPK_DFT, i ? "dft_len11" : "dft_len5", 2, in2, 1, 1, ax2);
        check_shape(cs[nc].n->outputs[0], SHAPE(2, 3, len, 2));
        cs[nc].in[0] = xc;
        cs[nc].in[1] = in2[1]->data;
        cs[nc].ref = malloc(sizeof(float) * 12 * (size_t)len);
        dft_ref(xc, 6, 7, 1, 2, len, false, false, cs[nc].ref);
        cs[nc++].tol = 1e-5;
    }
    /* DFT-20: axis an input (-3 = 1); the IRFFT of a half spectrum of 4 bins, with the
     * default length 6 and an odd dft_length 7 (an int32) */
    hc_graph *g20 = hc_graph_new("dft20", 20);
    hc_tensor *fh = input(g20, "fh", SHAPE(2, 4, 3, 2));
    int64_t axm3 = -3;
    int32_t len7 = 7;
    hc_tensor *axt = hc_graph_constant(g20, "axm3", HC_I64, 1, (int64_t[]){1}, &axm3);
    hc_tensor *l7 = hc_graph_constant(g20, "len7", HC_I32, 0, NULL, &len7);
    hc_attr irf[] = {INT("inverse", 1), INT("onesided", 1)};
    for (int i = 0; i < 2; i++) {
        hc_tensor *in3[3] = {fh, i ? l7 : NULL, axt};
        cs[nc].n = node(g20, HC_OPK_DFT, i ? "irfft_len7" : "irfft_len6", 3, in3, 1, 2, irf);
        int64_t len = i ? 7 : 6;
        check_shape(cs[nc].n->outputs[0], SHAPE(2, len, 3, 1));
        cs[nc].in[0] = xc;
        int k = 1;
        if (i) cs[nc].in[k++] = l7->data;
        cs[nc].in[k] = axt->data;
        cs[nc].ref = malloc(sizeof(float) * 6 * (size_t)len);
        dft_ref(xc, 2, 4, 3, 2, len, true, true, cs[nc].ref);
        cs[nc++].tol = 1e-5;
    }
    HC_ASSERT(nc <= (int)HC_ARRAY_LEN(cs));

    /* the interpreter against the references, then the auto-scheduled programs */
    hc_arena a;
    hc_arena_init(&a);
    const hc_target *tg = hc_target_host();
    hc_func *fs[HC_ARRAY_LEN(cs)];
    for (int i = 0; i < nc; i++) {
        hc_node *n = cs[i].n;
        int64_t numel = hc_tensor_numel(n->outputs[0]);
        float *out = calloc(1, hc_tensor_nbytes(n->outputs[0]) + 8);
        void *outs[1] = {out};
        CHECK(interp(n, cs[i].in, outs));
        CHECK_MSG(max_rel_err(out, cs[i].ref, numel) <= cs[i].tol, "%s (interpreter): %g",
                  n->name, max_rel_err(out, cs[i].ref, numel));
        free(out);
        hc_task *t = hc_op_get(n->op)->task(&a, n, &err);
        HC_ASSERT_MSG(t, err.msg);
        fs[i] = hc_auto_schedule(&a, t, tg, &err);
        HC_ASSERT_MSG(fs[i], err.msg);
    }
    char *src = hc_codegen_c(&a, hc_module_new(&a, "ops_linalg", nc, fs), tg);
    hc_jit_lib *lib = NULL;
    CHECK(hc_jit_build(src, NULL, &lib, &err) == HC_OK);
    free(src);
    for (int i = 0; lib && i < nc; i++) {
        hc_node *n = cs[i].n;
        int64_t numel = hc_tensor_numel(n->outputs[0]);
        float *out = malloc(hc_tensor_nbytes(n->outputs[0]) + 8);
        for (int64_t k = 0; k < numel; k++) out[k] = NAN; /* garbage */
        void *args[4];
        int na = 0;
        for (int k = 0; k < n->ninputs; k++)
            if (n->inputs[k]) args[na] = cs[i].in[na], na++;
        args[na] = out;
        char sym[128];
        snprintf(sym, sizeof sym, "%s__packed", fs[i]->name);
        hc_packed_fn fn = (hc_packed_fn)hc_jit_symbol(lib, sym);
        CHECK_MSG(fn != NULL, "%s", sym);
        if (fn) fn(args);
        CHECK_MSG(max_rel_err(out, cs[i].ref, numel) <= cs[i].tol, "%s (compiled): %g", n->name,
                  max_rel_err(out, cs[i].ref, numel));
        if (!strcmp(n->name, "det_singular")) /* exact zeros: the guard, no NaN */
            CHECK(out[1] == 0 && out[2] == 0 && fabsf(out[0]) < 1e-5f && out[3] == -1);
        free(out);
    }
    if (lib) hc_jit_close(lib);
    hc_arena_free(&a);
    for (int i = 0; i < nc; i++) {
        if (cs[i].in[0] != xr && cs[i].in[0] != xc) free(cs[i].in[0]);
        free(cs[i].ref);
    }
    free(xr), free(xc);

    /* errors name the node and what is wrong */
    hc_tensor *rect[1] = {input(g, "rect", SHAPE(2, 3, 4))};
    CHECK(node(g, HC_OPK_DET, "det_rect", 1, rect, 1, 0, NULL) == NULL);
    CHECK(strstr(err.msg, "node 'det_rect' (Det): input 0 ('rect') must be [*, M, M]") != NULL);
    hc_tensor *big[1] = {input(g, "big", SHAPE(65, 65))};
    CHECK(node(g, HC_OPK_DET, "det_big", 1, big, 1, 0, NULL) == NULL);
    CHECK(err.status == HC_ERR_UNSUPPORTED && strstr(err.msg, "at most 64 x 64") != NULL);
    hc_tensor *d0[1] = {input(g, "d0", SHAPE(2, 0, 0))}; /* 0 x 0: 1, as numpy */
    hc_node *n0 = node(g, HC_OPK_DET, "det_0x0", 1, d0, 1, 0, NULL);
    float one0[2] = {0, 0};
    void *in0[1] = {one0}, *out0[1] = {one0};
    CHECK(n0 && interp(n0, in0, out0) && one0[0] == 1 && one0[1] == 1);
    hc_tensor *h16[1] = {hc_graph_add_input(g, "h16", HC_F16, 3, (int64_t[]){4, 3, 3})};
    hc_node *nh = node(g, HC_OPK_DET, "det_f16", 1, h16, 1, 0, NULL);
    CHECK(nh && nh->outputs[0]->dtype == HC_F16);
    hc_attr axl[] = {INT("axis", 3)};
    CHECK(node(g17, HC_OPK_DFT, "dft_axis_last", 1, fr, 1, 1, axl) == NULL);
    CHECK(strstr(err.msg, "node 'dft_axis_last' (DFT): axis 3 is not a signal dim") != NULL);
    CHECK(node(g17, HC_OPK_DFT, "dft_onesided_c", 1, fc, 1, 1, one) == NULL);
    CHECK(strstr(err.msg, "onesided=1 needs a real input 0 ('fc'") != NULL);
    CHECK(node(g17, HC_OPK_DFT, "irfft_real", 1, fr, 1, 2, irf) == NULL);
    CHECK(strstr(err.msg, "needs a complex input 0 ('fr'") != NULL);
    hc_tensor *dyn[2] = {fr[0], hc_graph_add_input(g17, "dynlen", HC_I64, 0, NULL)};
    CHECK(node(g17, HC_OPK_DFT, "dft_dynlen", 2, dyn, 1, 0, NULL) == NULL);
    CHECK(err.status == HC_ERR_UNSUPPORTED &&
          strstr(err.msg, "node 'dft_dynlen' (DFT): input 1 ('dynlen') must be a compile-time "
                          "constant") != NULL);
    hc_tensor *dax[3] = {fh, NULL, hc_graph_add_input(g20, "dynaxis", HC_I64, 0, NULL)};
    CHECK(node(g20, HC_OPK_DFT, "dft_dynaxis", 3, dax, 1, 0, NULL) == NULL);
    CHECK(strstr(err.msg, "input 2 ('dynaxis') must be a compile-time constant") != NULL);
    int64_t zero = 0;
    hc_tensor *zl[2] = {fr[0], hc_graph_constant(g17, "len0", HC_I64, 0, NULL, &zero)};
    CHECK(node(g17, HC_OPK_DFT, "dft_len0", 2, zl, 1, 0, NULL) == NULL);
    CHECK(strstr(err.msg, "dft_length 0 must be positive") != NULL);
    hc_graph_free(g);
    hc_graph_free(g17);
    hc_graph_free(g20);
}

int main(void) {
    test_conv();
    test_conv_transpose();
    test_batch_norm();
    test_layer_and_instance_norm();
    test_rms_group_norm();
    test_rotary();
    test_lp_mvn_lrn();
    test_gemm_matmul();
    test_einsum();
    test_softmax();
    test_pools();
    test_roi_align();
    test_compiled();
    test_det_dft();
    TEST_DONE();
}
