/* test_ops_math.c — operators of the math category (src/graph/ops/math*.c).
 *
 * 1. One-node graphs: infer, then the task in the reference interpreter, against values
 *    computed here independently (libm, plain loops with their own broadcasting).
 * 2. Errors: bad dtypes, shapes and axes name the node; inputs needed at compile time
 *    that are not constant give UNSUPPORTED and are recorded by hc_node_need_const.
 * 3. Every op auto-scheduled, compiled in one module and run against the interpreter on
 *    random data with awkward shapes (1, primes, broadcasting). */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "target/cpu/cpu.h"
#include "graph/graph.h"
#include "target/cpu/jit.h"
#include "test.h"

static hc_arena A;
static hc_rng rng = {4242};
static hc_graph *graphs[512];
static int ngraphs;
static int node_counter;

#define S(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}
#define S0 0, (int64_t[]){0}

static hc_attr fattr(const char *name, double v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_FLOAT, .f = v};
}
static hc_attr iattr(const char *name, int64_t v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_INT, .i = v};
}
static hc_attr intsattr(const char *name, int n, int64_t *v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_INTS, .n = n, .ints = v};
}

/* ---- one-node graphs --------------------------------------------------------------- */
typedef struct built {
    hc_graph *g;
    hc_node *n;
    hc_status st; /* of infer */
    hc_error err;
} built;

static hc_graph *new_graph(int opset) {
    HC_ASSERT(ngraphs < (int)HC_ARRAY_LEN(graphs));
    return graphs[ngraphs++] = hc_graph_new("g", opset);
}

static hc_tensor *in(hc_graph *g, hc_dtype t, int nd, const int64_t *shape) {
    static const int64_t scalar[1] = {0}; /* a NULL shape would mean "unknown" */
    return hc_graph_add_input(g, NULL, t, nd, shape ? shape : scalar);
}

/* Add the node (a unique name from the op) and run its infer. */
static built node(hc_graph *g, hc_op_kind op, int nin, hc_tensor **ins, int nout, int nattrs,
                  const hc_attr *attrs) {
    built b = {.g = g};
    const char *name = hc_arena_printf(&A, "%s_%d", hc_op_onnx_name(op), node_counter++);
    b.n = hc_graph_add_node(g, op, name, nin, ins, nout, NULL, nattrs, attrs, &b.err);
    HC_ASSERT_MSG(b.n, b.err.msg);
    const hc_op_def *d = hc_op_get(op);
    CHECK_MSG(d != NULL, "%s has no definition", hc_op_onnx_name(op));
    b.st = d ? d->infer(b.n, &b.err) : HC_ERR_UNSUPPORTED;
    return b;
}

static hc_task *task_of(built *b) {
    if (b->st != HC_OK) return NULL;
    hc_task *t = hc_op_get(b->n->op)->task(&A, b->n, &b->err);
    CHECK_MSG(t != NULL, "%s: %s", b->n->name, b->err.msg);
    return t;
}

static size_t nbytes(const hc_tnode *t) {
    return (size_t)hc_tnode_numel(t) * (size_t)hc_dtype_size(t->dtype);
}

static void *buf_of(const hc_tnode *t) { return hc_xcalloc(1, nbytes(t) + 8); }

/* Interpret with inputs ins[] (copied); outputs are malloc'ed into outs[]. */
static bool interp(const hc_task *t, const void *const *ins, void **outs) {
    void *bi[16], *bo[4];
    for (int i = 0; i < t->ninputs; i++) {
        bi[i] = buf_of(t->inputs[i]);
        if (ins[i]) memcpy(bi[i], ins[i], nbytes(t->inputs[i]));
    }
    for (int i = 0; i < t->noutputs; i++) bo[i] = outs[i] = buf_of(t->outputs[i]);
    hc_error e = {0};
    hc_status st = hc_interpret_task(t, bi, bo, &e);
    CHECK_MSG(st == HC_OK, "%s: %s", t->name, e.msg);
    for (int i = 0; i < t->ninputs; i++) free(bi[i]);
    return st == HC_OK;
}

static double rel_err(double got, double ref) {
    if (isnan(ref) && isnan(got)) return 0;
    if (isinf(ref) && got == ref) return 0;
    return fabs(got - ref) / (1 + fabs(ref));
}

static void check_f32(const char *what, const float *got, const double *ref, int n, double tol) {
    int bad = 0;
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double e = rel_err(got[i], ref[i]);
        if (!(e <= tol) && bad++ < 3)
            fprintf(stderr, "  %s[%d] = %.9g, expected %.9g\n", what, i, got[i], ref[i]);
        if (e > worst) worst = e;
    }
    CHECK_MSG(bad == 0, "%s: %d of %d wrong (worst %g)", what, bad, n, worst);
}

static void check_i64(const char *what, const int64_t *got, const int64_t *ref, int n) {
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (got[i] != ref[i] && bad++ < 3)
            fprintf(stderr, "  %s[%d] = %lld, expected %lld\n", what, i, (long long)got[i],
                    (long long)ref[i]);
    CHECK_MSG(bad == 0, "%s: %d of %d wrong", what, bad, n);
}

/* ---- unary float ops vs libm ------------------------------------------------------ */
static double r_relu(double x) { return x > 0 ? x : 0; }
static double r_leaky(double x) { return x < 0 ? 0.3 * x : x; }
static double r_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double r_hsig(double x) { return fmax(0, fmin(1, 0.3 * x + 0.4)); }
static double r_hswish(double x) { return x * fmax(0, fmin(1, x / 6 + 0.5)); }
static double r_softplus(double x) { return log(exp(x) + 1); }
static double r_softsign(double x) { return x / (1 + fabs(x)); }
static double r_elu(double x) { return x < 0 ? 0.7 * (exp(x) - 1) : x; }
static double r_selu(double x) {
    const double al = 1.67326319217681884765625, ga = 1.05070102214813232421875;
    return x <= 0 ? ga * (al * exp(x) - al) : ga * x;
}
static double r_celu(double x) { return fmax(0, x) + fmin(0, 1.5 * (exp(x / 1.5) - 1)); }
static double r_thr(double x) { return x > 0.8 ? x : 0; }
static double r_shrink(double x) { return x < -1 ? x + 0.5 : x > 1 ? x - 0.5 : 0; }
static double r_neg(double x) { return -x; }
static double r_recip(double x) { return 1 / x; }
static double r_sign(double x) { return (x > 0) - (x < 0); }

typedef struct unary_case {
    hc_op_kind op;
    double (*f)(double);
    double lo, hi;
    int nattrs;
    hc_attr attrs[2];
} unary_case;

static void test_unary_float(void) {
    const unary_case cases[] = {
        {HC_OPK_RELU, r_relu, -3, 3, 0, {{0}}},
        {HC_OPK_LEAKY_RELU, r_leaky, -3, 3, 1, {fattr("alpha", 0.3)}},
        {HC_OPK_SIGMOID, r_sigmoid, -8, 8, 0, {{0}}},
        {HC_OPK_HARD_SIGMOID, r_hsig, -5, 5, 2, {fattr("alpha", 0.3), fattr("beta", 0.4)}},
        {HC_OPK_HARD_SWISH, r_hswish, -5, 5, 0, {{0}}},
        {HC_OPK_TANH, tanh, -4, 4, 0, {{0}}},
        {HC_OPK_ERF, erf, -3, 3, 0, {{0}}},
        {HC_OPK_SOFTPLUS, r_softplus, -10, 10, 0, {{0}}},
        {HC_OPK_SOFTSIGN, r_softsign, -5, 5, 0, {{0}}},
        {HC_OPK_ELU, r_elu, -3, 3, 1, {fattr("alpha", 0.7)}},
        {HC_OPK_SELU, r_selu, -3, 3, 0, {{0}}},
        {HC_OPK_CELU, r_celu, -3, 3, 1, {fattr("alpha", 1.5)}},
        {HC_OPK_THRESHOLDED_RELU, r_thr, -2, 2, 1, {fattr("alpha", 0.8)}},
        {HC_OPK_SHRINK, r_shrink, -3, 3, 2, {fattr("lambd", 1), fattr("bias", 0.5)}},
        {HC_OPK_SQRT, sqrt, 0, 9, 0, {{0}}},
        {HC_OPK_EXP, exp, -5, 5, 0, {{0}}},
        {HC_OPK_LOG, log, 0.01, 50, 0, {{0}}},
        {HC_OPK_NEG, r_neg, -3, 3, 0, {{0}}},
        {HC_OPK_ABS, fabs, -3, 3, 0, {{0}}},
        {HC_OPK_RECIPROCAL, r_recip, 0.1, 5, 0, {{0}}},
        {HC_OPK_FLOOR, floor, -3, 3, 0, {{0}}},
        {HC_OPK_CEIL, ceil, -3, 3, 0, {{0}}},
        {HC_OPK_SIGN, r_sign, -3, 3, 0, {{0}}},
        {HC_OPK_SIN, sin, -4, 4, 0, {{0}}},
        {HC_OPK_COS, cos, -4, 4, 0, {{0}}},
        {HC_OPK_TAN, tan, -1.4, 1.4, 0, {{0}}},
        {HC_OPK_ASIN, asin, -1, 1, 0, {{0}}},
        {HC_OPK_ACOS, acos, -1, 1, 0, {{0}}},
        {HC_OPK_ATAN, atan, -5, 5, 0, {{0}}},
        {HC_OPK_SINH, sinh, -3, 3, 0, {{0}}},
        {HC_OPK_COSH, cosh, -3, 3, 0, {{0}}},
        {HC_OPK_ASINH, asinh, -5, 5, 0, {{0}}},
        {HC_OPK_ACOSH, acosh, 1, 6, 0, {{0}}},
        {HC_OPK_ATANH, atanh, -0.95, 0.95, 0, {{0}}},
    };
    enum { N = 13 };
    for (size_t c = 0; c < HC_ARRAY_LEN(cases); c++) {
        const unary_case *uc = &cases[c];
        hc_graph *g = new_graph(17);
        hc_tensor *x = in(g, HC_F32, S(N));
        built b = node(g, uc->op, 1, &x, 0, uc->nattrs, uc->attrs);
        CHECK_MSG(b.st == HC_OK, "%s", b.err.msg);
        hc_task *t = task_of(&b);
        if (!t) continue;
        float xv[N];
        double ref[N];
        for (int i = 0; i < N; i++) {
            xv[i] = (float)(uc->lo + (uc->hi - uc->lo) * i / (N - 1));
            ref[i] = uc->f(xv[i]);
        }
        void *out;
        if (!interp(t, (const void *[]){xv}, &out)) continue;
        check_f32(hc_op_onnx_name(uc->op), out, ref, N, 2e-6);
        free(out);
    }
}

/* A unary op on a typed buffer; returns the output (malloc'ed) or NULL. */
static void *run_unary(hc_op_kind op, hc_dtype t, int n, const void *x, int nattrs,
                       const hc_attr *attrs, int opset) {
    hc_graph *g = new_graph(opset);
    hc_tensor *xt = in(g, t, S(n));
    built b = node(g, op, 1, &xt, 0, nattrs, attrs);
    CHECK_MSG(b.st == HC_OK, "%s", b.err.msg);
    hc_task *tk = task_of(&b);
    void *out = NULL;
    if (tk && !interp(tk, (const void *[]){x}, &out)) out = NULL;
    return out;
}

static void test_unary_special(void) {
    /* Round: half to even */
    float rx[10] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 0.49f, 2.51f, -2.7f, 7.0f};
    double rr[10] = {0, 2, 2, -0.0, -2, -2, 0, 3, -3, 7};
    float *ro = run_unary(HC_OPK_ROUND, HC_F32, 10, rx, 0, NULL, 11);
    if (ro) check_f32("Round", ro, rr, 10, 0);
    free(ro);
    /* IsNaN / IsInf with detect flags */
    float sx[5] = {NAN, INFINITY, -INFINITY, 0.0f, -3.0f};
    const bool nan_ref[5] = {1, 0, 0, 0, 0}, inf_ref[5] = {0, 1, 1, 0, 0};
    const bool pos_ref[5] = {0, 1, 0, 0, 0}, neg_ref[5] = {0, 0, 1, 0, 0};
    uint8_t *o = run_unary(HC_OPK_IS_NAN, HC_F32, 5, sx, 0, NULL, 13);
    for (int i = 0; o && i < 5; i++) CHECK_EQ_INT(o[i], nan_ref[i]);
    free(o);
    o = run_unary(HC_OPK_IS_INF, HC_F32, 5, sx, 0, NULL, 13);
    for (int i = 0; o && i < 5; i++) CHECK_EQ_INT(o[i], inf_ref[i]);
    free(o);
    hc_attr nopos = iattr("detect_positive", 0), noneg = iattr("detect_negative", 0);
    o = run_unary(HC_OPK_IS_INF, HC_F32, 5, sx, 1, &noneg, 13);
    for (int i = 0; o && i < 5; i++) CHECK_EQ_INT(o[i], pos_ref[i]);
    free(o);
    o = run_unary(HC_OPK_IS_INF, HC_F32, 5, sx, 1, &nopos, 13);
    for (int i = 0; o && i < 5; i++) CHECK_EQ_INT(o[i], neg_ref[i]);
    free(o);
    /* Relu keeps NaN; Sign keeps NaN and zero */
    float *fo = run_unary(HC_OPK_RELU, HC_F32, 5, sx, 0, NULL, 14);
    CHECK(fo && isnan(fo[0]) && fo[1] == INFINITY && fo[2] == 0 && fo[4] == 0);
    free(fo);
    fo = run_unary(HC_OPK_SIGN, HC_F32, 5, sx, 0, NULL, 13);
    CHECK(fo && isnan(fo[0]) && fo[1] == 1 && fo[2] == -1 && fo[3] == 0 && fo[4] == -1);
    free(fo);
    /* Not */
    uint8_t bx[3] = {0, 1, 0};
    o = run_unary(HC_OPK_NOT, HC_BOOL, 3, bx, 0, NULL, 1);
    CHECK(o && o[0] == 1 && o[1] == 0 && o[2] == 1);
    free(o);
}

static void test_unary_int(void) {
    int32_t ix[6] = {-7, -1, 0, 1, 5, INT32_MIN + 1};
    int32_t *o = run_unary(HC_OPK_RELU, HC_I32, 6, ix, 0, NULL, 14);
    for (int i = 0; o && i < 6; i++) CHECK_EQ_INT(o[i], ix[i] > 0 ? ix[i] : 0);
    free(o);
    o = run_unary(HC_OPK_SIGN, HC_I32, 6, ix, 0, NULL, 13);
    for (int i = 0; o && i < 6; i++) CHECK_EQ_INT(o[i], (ix[i] > 0) - (ix[i] < 0));
    free(o);
    o = run_unary(HC_OPK_ABS, HC_I32, 6, ix, 0, NULL, 13);
    for (int i = 0; o && i < 6; i++) CHECK_EQ_INT(o[i], ix[i] < 0 ? -ix[i] : ix[i]);
    free(o);
    int64_t lx[3] = {-5, 0, INT64_C(1) << 40};
    int64_t *lo = run_unary(HC_OPK_NEG, HC_I64, 3, lx, 0, NULL, 13);
    for (int i = 0; lo && i < 3; i++) CHECK_EQ_INT(lo[i], -lx[i]);
    free(lo);
    uint8_t ux[4] = {0, 1, 200, 255};
    uint8_t *uo = run_unary(HC_OPK_SIGN, HC_U8, 4, ux, 0, NULL, 13);
    for (int i = 0; uo && i < 4; i++) CHECK_EQ_INT(uo[i], ux[i] > 0);
    free(uo);
    uo = run_unary(HC_OPK_ABS, HC_U8, 4, ux, 0, NULL, 13);
    for (int i = 0; uo && i < 4; i++) CHECK_EQ_INT(uo[i], ux[i]);
    free(uo);
}

/* ---- broadcasting reference ------------------------------------------------------- */
/* Flat index into an input of shape (nd, s) for output flat index i of shape (on, os). */
static int64_t bcast_index(int64_t i, int on, const int64_t *os, int nd, const int64_t *s) {
    int64_t idx = 0, stride = 1;
    for (int d = on - 1; d >= 0; d--) {
        int64_t c = i % os[d];
        i /= os[d];
        int k = d - (on - nd);
        if (k < 0) continue;
        if (s[k] != 1) idx += c * stride;
        stride *= s[k];
    }
    return idx;
}

typedef struct bin_run {
    built b;
    void *out;
    int64_t numel;
} bin_run;

/* Build and run an n-ary op whose inputs are graph inputs with data vals[i]. */
static bin_run run_nary(hc_op_kind op, int opset, int nin, const hc_dtype *dts, const int *nds,
                        const int64_t *const *shapes, const void *const *vals, int nattrs,
                        const hc_attr *attrs) {
    hc_graph *g = new_graph(opset);
    hc_tensor *xs[8];
    for (int i = 0; i < nin; i++) xs[i] = in(g, dts[i], nds[i], shapes[i]);
    bin_run r = {.b = node(g, op, nin, xs, 0, nattrs, attrs)};
    CHECK_MSG(r.b.st == HC_OK, "%s", r.b.err.msg);
    hc_task *t = task_of(&r.b);
    if (t && !interp(t, vals, &r.out)) r.out = NULL;
    if (r.out) r.numel = hc_tensor_numel(r.b.n->outputs[0]);
    return r;
}

static bin_run run2(hc_op_kind op, hc_dtype dt, int nx, const int64_t *sx, const void *x, int ny,
                    const int64_t *sy, const void *y, int nattrs, const hc_attr *attrs) {
    return run_nary(op, 17, 2, (hc_dtype[]){dt, dt}, (int[]){nx, ny},
                    (const int64_t *const[]){sx, sy}, (const void *const[]){x, y}, nattrs, attrs);
}

static double r_pymod(double x, double y) {
    double r = fmod(x, y);
    return (r != 0 && (r < 0) != (y < 0)) ? r + y : r;
}

static void test_binary_float(void) {
    const int64_t sx[2] = {2, 3}, sy[1] = {3};
    float x[6] = {1.5f, -2, 3.25f, 0, -7.5f, 4}, y[3] = {2, -0.5f, 3};
    const hc_op_kind ops[] = {HC_OPK_ADD, HC_OPK_SUB, HC_OPK_MUL, HC_OPK_DIV, HC_OPK_POW,
                              HC_OPK_MOD, HC_OPK_PRELU};
    for (size_t k = 0; k < HC_ARRAY_LEN(ops); k++) {
        hc_attr fm = iattr("fmod", 1);
        bin_run r = run2(ops[k], HC_F32, 2, sx, x, 1, sy, y, ops[k] == HC_OPK_MOD, &fm);
        if (!r.out) continue;
        CHECK_EQ_INT(r.numel, 6);
        double ref[6];
        for (int i = 0; i < 6; i++) {
            double a = x[i], b = y[bcast_index(i, 2, sx, 1, sy)];
            switch (ops[k]) {
            case HC_OPK_ADD: ref[i] = a + b; break;
            case HC_OPK_SUB: ref[i] = a - b; break;
            case HC_OPK_MUL: ref[i] = a * b; break;
            case HC_OPK_DIV: ref[i] = a / b; break;
            case HC_OPK_POW: ref[i] = pow(a, b); break;
            case HC_OPK_MOD: ref[i] = fmod(a, b); break;
            default: ref[i] = a < 0 ? a * b : a; break;
            }
        }
        check_f32(hc_op_onnx_name(ops[k]), r.out, ref, 6, 1e-6);
        free(r.out);
    }
    /* Mod with fmod=0 on floats: the sign of the divisor */
    bin_run r = run2(HC_OPK_MOD, HC_F32, 2, sx, x, 1, sy, y, 0, NULL);
    if (r.out) {
        double ref[6];
        for (int i = 0; i < 6; i++) ref[i] = r_pymod(x[i], y[i % 3]);
        check_f32("Mod fmod=0", r.out, ref, 6, 1e-6);
    }
    free(r.out);
    /* PRelu with a per-channel slope [C, 1, 1] on [N, C, H, W] */
    float px[2 * 3 * 2], ps[3] = {0.1f, -2, 0.5f};
    for (int i = 0; i < 12; i++) px[i] = (float)(i % 5) - 2.5f;
    r = run2(HC_OPK_PRELU, HC_F32, 4, (int64_t[]){1, 3, 2, 2}, px, 3, (int64_t[]){3, 1, 1}, ps,
             0, NULL);
    if (r.out) {
        double ref[12];
        for (int i = 0; i < 12; i++) ref[i] = px[i] < 0 ? px[i] * ps[i / 4] : px[i];
        check_f32("PRelu channel", r.out, ref, 12, 1e-6);
    }
    free(r.out);
}

static void test_binary_int(void) {
    int32_t x[10] = {7, -7, 7, -7, 5, INT32_MIN, 9, -9, 6, -6};
    int32_t y[10] = {2, 2, -2, -2, 0, -1, 4, 0, -1, -1};
    const int64_t s[1] = {10};
    bin_run d = run2(HC_OPK_DIV, HC_I32, 1, s, x, 1, s, y, 0, NULL);
    bin_run m = run2(HC_OPK_MOD, HC_I32, 1, s, x, 1, s, y, 0, NULL);
    hc_attr fm = iattr("fmod", 1);
    bin_run f = run2(HC_OPK_MOD, HC_I32, 1, s, x, 1, s, y, 1, &fm);
    for (int i = 0; d.out && m.out && f.out && i < 10; i++) {
        int64_t a = x[i], b = y[i];
        /* truncating division; division by zero gives 0 instead of trapping */
        int64_t q = b == 0 ? 0 : (int32_t)(uint32_t)(a / b);
        int64_t rt = b == 0 ? 0 : a % b;
        int64_t rp = rt != 0 && (rt < 0) != (b < 0) ? rt + b : rt;
        CHECK_MSG(((int32_t *)d.out)[i] == q, "Div %lld / %lld = %d", (long long)a,
                  (long long)b, ((int32_t *)d.out)[i]);
        CHECK_MSG(((int32_t *)f.out)[i] == rt, "fmod %lld %% %lld", (long long)a, (long long)b);
        CHECK_MSG(((int32_t *)m.out)[i] == rp, "mod %lld %% %lld = %d", (long long)a,
                  (long long)b, ((int32_t *)m.out)[i]);
    }
    free(d.out), free(m.out), free(f.out);
    /* uint8 arithmetic wraps */
    uint8_t ux[3] = {250, 3, 17}, uy[3] = {10, 5, 4};
    const int64_t s3[1] = {3};
    bin_run add = run2(HC_OPK_ADD, HC_U8, 1, s3, ux, 1, s3, uy, 0, NULL);
    bin_run sub = run2(HC_OPK_SUB, HC_U8, 1, s3, ux, 1, s3, uy, 0, NULL);
    bin_run um = run2(HC_OPK_MOD, HC_U8, 1, s3, ux, 1, s3, uy, 0, NULL);
    for (int i = 0; add.out && sub.out && um.out && i < 3; i++) {
        CHECK_EQ_INT(((uint8_t *)add.out)[i], (uint8_t)(ux[i] + uy[i]));
        CHECK_EQ_INT(((uint8_t *)sub.out)[i], (uint8_t)(ux[i] - uy[i]));
        CHECK_EQ_INT(((uint8_t *)um.out)[i], ux[i] % uy[i]);
    }
    free(add.out), free(sub.out), free(um.out);
    /* Pow with mixed types: the result has the base's type */
    int32_t pb[4] = {2, 3, -2, 4};
    float pe[4] = {5, 2, 3, 0.5f};
    bin_run p = run_nary(HC_OPK_POW, 15, 2, (hc_dtype[]){HC_I32, HC_F32}, (int[]){1, 1},
                         (const int64_t *const[]){(int64_t[]){4}, (int64_t[]){4}},
                         (const void *const[]){pb, pe}, 0, NULL);
    CHECK(p.b.n->outputs[0]->dtype == HC_I32);
    for (int i = 0; p.out && i < 4; i++)
        CHECK_EQ_INT(((int32_t *)p.out)[i], (int32_t)pow(pb[i], pe[i]));
    free(p.out);
    float fb[3] = {1.5f, -2, 9};
    int64_t ie[3] = {2, 3, 0};
    p = run_nary(HC_OPK_POW, 15, 2, (hc_dtype[]){HC_F32, HC_I64}, (int[]){1, 1},
                 (const int64_t *const[]){(int64_t[]){3}, (int64_t[]){3}},
                 (const void *const[]){fb, ie}, 0, NULL);
    CHECK(p.b.n->outputs[0]->dtype == HC_F32);
    if (p.out) check_f32("Pow f32^i64", p.out, (double[]){2.25, -8, 1}, 3, 0);
    free(p.out);
}

/* Pow by a constant 1, 2 or 3 is multiplication; other constants stay pow. */
static void test_pow_const_exponent(void) {
    float x[5] = {-2.5f, -1, 0, 0.3f, 7};
    const float exps[4] = {1, 2, 3, 2.5f};
    for (int k = 0; k < 4; k++) {
        hc_graph *g = new_graph(15);
        hc_tensor *xt = in(g, HC_F32, S(5));
        hc_tensor *et = hc_graph_constant(g, NULL, HC_F32, 0, NULL, &exps[k]);
        built b = node(g, HC_OPK_POW, 2, (hc_tensor *[]){xt, et}, 0, 0, NULL);
        hc_task *t = task_of(&b);
        void *out;
        if (!t || !interp(t, (const void *[]){x, &exps[k]}, &out)) continue;
        double ref[5];
        for (int i = 0; i < 5; i++) ref[i] = pow(x[i], exps[k]);
        check_f32("Pow constant exponent", out, ref, 5, 1e-6);
        free(out);
        hc_sb sb;
        hc_sb_init(&sb);
        hc_print_task(&sb, t);
        CHECK_MSG((strstr(hc_sb_str(&sb), "pow(") != NULL) == (k == 3), "%s", hc_sb_str(&sb));
        hc_sb_free(&sb);
    }
}

static void test_compare_logic(void) {
    const int64_t sx[2] = {2, 3}, sy[1] = {3};
    float x[6] = {1, 2, 3, 3, 2, 1}, y[3] = {2, 2, 2};
    const hc_op_kind ops[] = {HC_OPK_EQUAL, HC_OPK_LESS, HC_OPK_GREATER, HC_OPK_LESS_OR_EQUAL,
                              HC_OPK_GREATER_OR_EQUAL};
    for (size_t k = 0; k < HC_ARRAY_LEN(ops); k++) {
        bin_run r = run2(ops[k], HC_F32, 2, sx, x, 1, sy, y, 0, NULL);
        CHECK(r.b.n->outputs[0]->dtype == HC_BOOL);
        for (int i = 0; r.out && i < 6; i++) {
            double a = x[i], b = y[i % 3];
            bool want = ops[k] == HC_OPK_EQUAL     ? a == b
                        : ops[k] == HC_OPK_LESS    ? a < b
                        : ops[k] == HC_OPK_GREATER ? a > b
                        : ops[k] == HC_OPK_LESS_OR_EQUAL ? a <= b
                                                         : a >= b;
            CHECK_MSG(((uint8_t *)r.out)[i] == want, "%s at %d", hc_op_onnx_name(ops[k]), i);
        }
        free(r.out);
    }
    /* bool logic with two-sided broadcasting: [2, 1, 3] and [4, 1] -> [2, 4, 3] */
    uint8_t bx[6] = {0, 1, 1, 0, 0, 1}, by[4] = {1, 0, 1, 0};
    const int64_t bsx[3] = {2, 1, 3}, bsy[2] = {4, 1}, bso[3] = {2, 4, 3};
    const hc_op_kind lops[] = {HC_OPK_AND, HC_OPK_OR, HC_OPK_XOR};
    for (size_t k = 0; k < HC_ARRAY_LEN(lops); k++) {
        bin_run r = run2(lops[k], HC_BOOL, 3, bsx, bx, 2, bsy, by, 0, NULL);
        CHECK_EQ_INT(r.numel, 24);
        for (int i = 0; r.out && i < 24; i++) {
            bool a = bx[bcast_index(i, 3, bso, 3, bsx)], b = by[bcast_index(i, 3, bso, 2, bsy)];
            bool want = lops[k] == HC_OPK_AND ? a && b : lops[k] == HC_OPK_OR ? a || b : a != b;
            CHECK_MSG(((uint8_t *)r.out)[i] == want, "%s at %d", hc_op_onnx_name(lops[k]), i);
        }
        free(r.out);
    }
    /* Where: condition [2, 1], x [3], y scalar */
    uint8_t c[2] = {1, 0};
    int64_t wx[3] = {10, 20, 30}, wy[1] = {-1};
    bin_run w = run_nary(HC_OPK_WHERE, 16, 3, (hc_dtype[]){HC_BOOL, HC_I64, HC_I64},
                         (int[]){2, 1, 0},
                         (const int64_t *const[]){(int64_t[]){2, 1}, (int64_t[]){3}, NULL},
                         (const void *const[]){c, wx, wy}, 0, NULL);
    CHECK_EQ_INT(w.numel, 6);
    if (w.out) check_i64("Where", w.out, (int64_t[]){10, 20, 30, -1, -1, -1}, 6);
    free(w.out);
}

static void test_variadic(void) {
    /* [3], [2, 1] and [1] -> [2, 3] */
    float a[3] = {1, 5, -2}, b[2] = {0, 3}, c[1] = {2};
    const int64_t sa[1] = {3}, sb[2] = {2, 1}, sc[1] = {1}, so[2] = {2, 3};
    const hc_op_kind ops[] = {HC_OPK_MIN, HC_OPK_MAX, HC_OPK_MEAN, HC_OPK_SUM};
    for (size_t k = 0; k < HC_ARRAY_LEN(ops); k++) {
        bin_run r = run_nary(ops[k], 13, 3, (hc_dtype[]){HC_F32, HC_F32, HC_F32},
                             (int[]){1, 2, 1}, (const int64_t *const[]){sa, sb, sc},
                             (const void *const[]){a, b, c}, 0, NULL);
        CHECK_EQ_INT(r.numel, 6);
        double ref[6];
        for (int i = 0; i < 6; i++) {
            double v[3] = {a[bcast_index(i, 2, so, 1, sa)], b[bcast_index(i, 2, so, 2, sb)], c[0]};
            ref[i] = ops[k] == HC_OPK_MIN   ? fmin(fmin(v[0], v[1]), v[2])
                     : ops[k] == HC_OPK_MAX ? fmax(fmax(v[0], v[1]), v[2])
                     : ops[k] == HC_OPK_SUM ? v[0] + v[1] + v[2]
                                            : (v[0] + v[1] + v[2]) / 3;
        }
        if (r.out) check_f32(hc_op_onnx_name(ops[k]), r.out, ref, 6, 1e-6);
        free(r.out);
    }
    /* one input: a copy */
    bin_run r = run_nary(HC_OPK_SUM, 13, 1, (hc_dtype[]){HC_I16}, (int[]){1},
                         (const int64_t *const[]){(int64_t[]){2}},
                         (const void *const[]){(int16_t[]){-3, 9}}, 0, NULL);
    CHECK(r.out && ((int16_t *)r.out)[0] == -3 && ((int16_t *)r.out)[1] == 9);
    free(r.out);
    /* unsigned 64-bit Max above INT64_MAX */
    uint64_t ua[2] = {UINT64_MAX - 1, 3}, ub[2] = {5, UINT64_MAX};
    r = run_nary(HC_OPK_MAX, 13, 2, (hc_dtype[]){HC_U64, HC_U64}, (int[]){1, 1},
                 (const int64_t *const[]){(int64_t[]){2}, (int64_t[]){2}},
                 (const void *const[]){ua, ub}, 0, NULL);
    const uint64_t *uo = r.out;
    CHECK(uo && uo[0] == UINT64_MAX - 1 && uo[1] == UINT64_MAX);
    free(r.out);
}

static void test_clip(void) {
    float x[6] = {-5, -1, 0, 0.5f, 2, 9};
    float lo = -1.5f, hi = 1;
    const int64_t s[1] = {6};
    /* opset 13: optional inputs; min only, max only, both */
    hc_graph *g = new_graph(13);
    hc_tensor *xt = in(g, HC_F32, 1, s), *lt = in(g, HC_F32, S0), *ht = in(g, HC_F32, S0);
    const struct {
        hc_tensor *ins[3];
        double l, h;
    } v[3] = {{{xt, lt, NULL}, lo, INFINITY},
              {{xt, NULL, ht}, -INFINITY, hi},
              {{xt, lt, ht}, lo, hi}};
    for (int k = 0; k < 3; k++) {
        built b = node(g, HC_OPK_CLIP, 3, (hc_tensor **)v[k].ins, 0, 0, NULL);
        CHECK_MSG(b.st == HC_OK, "%s", b.err.msg);
        hc_task *t = task_of(&b);
        const void *vals[3] = {x};
        int m = 1;
        if (v[k].ins[1]) vals[m++] = &lo;
        if (v[k].ins[2]) vals[m++] = &hi;
        void *out;
        if (!t || !interp(t, vals, &out)) continue;
        double ref[6];
        for (int i = 0; i < 6; i++) ref[i] = fmin(fmax(x[i], v[k].l), v[k].h);
        check_f32("Clip", out, ref, 6, 0);
        free(out);
    }
    /* opset 6: attributes */
    hc_attr at[2] = {fattr("min", -0.5), fattr("max", 0.75)};
    float *o = run_unary(HC_OPK_CLIP, HC_F32, 6, x, 2, at, 6);
    double ref[6];
    for (int i = 0; i < 6; i++) ref[i] = fmin(fmax(x[i], -0.5), 0.75);
    if (o) check_f32("Clip opset 6", o, ref, 6, 0);
    free(o);
    /* int8 with a max only */
    int8_t ix[4] = {-128, -3, 4, 127}, imax = 2;
    g = new_graph(13);
    hc_tensor *it = in(g, HC_I8, S(4)), *mt = in(g, HC_I8, S0);
    built b = node(g, HC_OPK_CLIP, 3, (hc_tensor *[]){it, NULL, mt}, 0, 0, NULL);
    hc_task *t = task_of(&b);
    void *out;
    if (t && interp(t, (const void *[]){ix, &imax}, &out)) {
        for (int i = 0; i < 4; i++) CHECK_EQ_INT(((int8_t *)out)[i], ix[i] > 2 ? 2 : ix[i]);
        free(out);
    }
}

/* ---- reductions ------------------------------------------------------------------- */
/* Reference reduce of x [2, 3, 4] over mask (bit d = axis d reduced). */
static void ref_reduce(hc_op_kind op, const float *x, int mask, double *out) {
    const int64_t s[3] = {2, 3, 4};
    int64_t os[3];
    for (int d = 0; d < 3; d++) os[d] = (mask >> d) & 1 ? 1 : s[d];
    int64_t on = os[0] * os[1] * os[2];
    for (int64_t o = 0; o < on; o++) {
        int64_t oi[3] = {o / (os[1] * os[2]), o / os[2] % os[1], o % os[2]};
        double acc = op == HC_OPK_REDUCE_PROD ? 1 : op == HC_OPK_REDUCE_MAX ? -INFINITY
                     : op == HC_OPK_REDUCE_MIN ? INFINITY : 0;
        int cnt = 0;
        for (int64_t i = 0; i < 24; i++) {
            int64_t ii[3] = {i / 12, i / 4 % 3, i % 4};
            bool hit = true;
            for (int d = 0; d < 3; d++) hit &= (mask >> d) & 1 || ii[d] == oi[d];
            if (!hit) continue;
            double v = x[i];
            cnt++;
            switch (op) {
            case HC_OPK_REDUCE_MAX: acc = fmax(acc, v); break;
            case HC_OPK_REDUCE_MIN: acc = fmin(acc, v); break;
            case HC_OPK_REDUCE_PROD: acc *= v; break;
            case HC_OPK_REDUCE_L1: acc += fabs(v); break;
            case HC_OPK_REDUCE_L2:
            case HC_OPK_REDUCE_SUM_SQUARE: acc += v * v; break;
            case HC_OPK_REDUCE_LOG_SUM_EXP: acc += exp(v); break;
            default: acc += v; break;
            }
        }
        if (op == HC_OPK_REDUCE_MEAN) acc /= cnt;
        if (op == HC_OPK_REDUCE_L2) acc = sqrt(acc);
        if (op == HC_OPK_REDUCE_LOG_SUM || op == HC_OPK_REDUCE_LOG_SUM_EXP) acc = log(acc);
        out[o] = acc;
    }
}

static void test_reduce(void) {
    float x[24];
    for (int i = 0; i < 24; i++) x[i] = (float)(0.25 + 0.1 * ((i * 7) % 11)); /* positive */
    const hc_op_kind ops[] = {HC_OPK_REDUCE_MEAN, HC_OPK_REDUCE_SUM, HC_OPK_REDUCE_MAX,
                              HC_OPK_REDUCE_MIN, HC_OPK_REDUCE_PROD, HC_OPK_REDUCE_L1,
                              HC_OPK_REDUCE_L2, HC_OPK_REDUCE_LOG_SUM,
                              HC_OPK_REDUCE_LOG_SUM_EXP, HC_OPK_REDUCE_SUM_SQUARE};
    /* axes, keepdims and the expected output rank */
    const struct {
        int naxes;
        int64_t axes[2];
        int keep, mask, out_rank;
    } cfg[] = {{1, {1}, 0, 2, 2}, {1, {-1}, 1, 4, 3}, {2, {2, 0}, 0, 5, 1}, {0, {0}, 1, 7, 3},
               {0, {0}, 0, 7, 0}};
    for (size_t k = 0; k < HC_ARRAY_LEN(ops); k++) {
        for (size_t c = 0; c < HC_ARRAY_LEN(cfg); c++) {
            int64_t axes[2] = {cfg[c].axes[0], cfg[c].axes[1]};
            hc_attr at[2] = {iattr("keepdims", cfg[c].keep), intsattr("axes", cfg[c].naxes, axes)};
            hc_graph *g = new_graph(11); /* axes as an attribute for every reduce */
            hc_tensor *xt = in(g, HC_F32, S(2, 3, 4));
            built b = node(g, ops[k], 1, &xt, 0, cfg[c].naxes ? 2 : 1, at);
            CHECK_MSG(b.st == HC_OK, "%s", b.err.msg);
            if (b.st) continue;
            CHECK_EQ_INT(b.n->outputs[0]->ndim, cfg[c].out_rank);
            hc_task *t = task_of(&b);
            void *out;
            if (!t || !interp(t, (const void *[]){x}, &out)) continue;
            double ref[24];
            ref_reduce(ops[k], x, cfg[c].mask, ref);
            char what[64];
            snprintf(what, sizeof what, "%s cfg %d", hc_op_onnx_name(ops[k]), (int)c);
            check_f32(what, out, ref, (int)hc_tensor_numel(b.n->outputs[0]), 2e-6);
            free(out);
        }
    }
}

/* Reduce-18: every reduce takes axes as an input; ReduceMax/Min-20 take bool. */
static void test_reduce_opset18(void) {
    float x[24];
    for (int i = 0; i < 24; i++) x[i] = (float)(0.25 + 0.1 * ((i * 7) % 11));
    const hc_op_kind ops[] = {HC_OPK_REDUCE_MEAN, HC_OPK_REDUCE_MAX, HC_OPK_REDUCE_MIN,
                              HC_OPK_REDUCE_PROD, HC_OPK_REDUCE_L1, HC_OPK_REDUCE_L2,
                              HC_OPK_REDUCE_LOG_SUM, HC_OPK_REDUCE_LOG_SUM_EXP,
                              HC_OPK_REDUCE_SUM_SQUARE};
    int64_t ax[2] = {2, 0};
    for (size_t k = 0; k < HC_ARRAY_LEN(ops); k++) {
        hc_graph *g = new_graph(18);
        hc_tensor *xt = in(g, HC_F32, S(2, 3, 4));
        hc_tensor *at = hc_graph_constant(g, "axes", HC_I64, 1, (int64_t[]){2}, ax);
        hc_attr keep0 = iattr("keepdims", 0);
        built b = node(g, ops[k], 2, (hc_tensor *[]){xt, at}, 0, 1, &keep0);
        CHECK_MSG(b.st == HC_OK, "%s", b.err.msg);
        if (b.st) continue;
        CHECK(b.n->outputs[0]->ndim == 1 && b.n->outputs[0]->shape[0] == 3);
        hc_task *t = task_of(&b);
        void *out;
        if (!t || !interp(t, (const void *[]){x, ax}, &out)) continue;
        double ref[3];
        ref_reduce(ops[k], x, 5, ref);
        char what[64];
        snprintf(what, sizeof what, "%s axes input (opset 18)", hc_op_onnx_name(ops[k]));
        check_f32(what, out, ref, 3, 2e-6);
        free(out);
    }
    /* bool ReduceMax (any) and ReduceMin (all) over the last axis, and over nothing (an
     * empty dim: false and true); refused before opset 20 */
    bool bv[6] = {false, true, false, false, false, false};
    for (int opset = 18; opset <= 20; opset += 2)
        for (int mx = 0; mx < 2; mx++) {
            hc_graph *g = new_graph(opset);
            hc_tensor *bt = in(g, HC_BOOL, S(2, 3));
            hc_attr keep0 = iattr("keepdims", 0);
            built b = node(g, mx ? HC_OPK_REDUCE_MAX : HC_OPK_REDUCE_MIN, 1, &bt, 0, 1, &keep0);
            if (opset < 20) {
                CHECK(b.st == HC_ERR_INVALID && strstr(b.err.msg, "bool from opset 20"));
                continue;
            }
            hc_tensor *ab = hc_graph_constant(g, "ab", HC_I64, 1, (int64_t[]){1}, (int64_t[]){-1});
            b = node(g, mx ? HC_OPK_REDUCE_MAX : HC_OPK_REDUCE_MIN, 2, (hc_tensor *[]){bt, ab},
                     0, 1, &keep0);
            CHECK_MSG(b.st == HC_OK && b.n->outputs[0]->dtype == HC_BOOL, "%s", b.err.msg);
            hc_task *t = task_of(&b);
            void *out;
            if (t && interp(t, (const void *[]){bv, NULL}, &out)) {
                const bool *o = out;
                CHECK_MSG(mx ? o[0] && !o[1] : !o[0] && !o[1], "bool Reduce%s", mx ? "Max" : "Min");
                free(out);
            }
            hc_tensor *et = in(g, HC_BOOL, S(2, 0));
            b = node(g, mx ? HC_OPK_REDUCE_MAX : HC_OPK_REDUCE_MIN, 2, (hc_tensor *[]){et, ab},
                     0, 1, &keep0);
            t = task_of(&b);
            if (t && interp(t, (const void *[]){NULL, NULL}, &out)) {
                const bool *o = out;
                CHECK_MSG(mx ? !o[0] && !o[1] : o[0] && o[1], "empty bool Reduce%s",
                          mx ? "Max" : "Min");
                free(out);
            }
        }
    /* ReduceLogSumExp-28 is defined on floats only */
    hc_graph *g = new_graph(28);
    hc_tensor *it = in(g, HC_I32, S(4));
    built b = node(g, HC_OPK_REDUCE_LOG_SUM_EXP, 1, &it, 0, 0, NULL);
    CHECK(b.st == HC_ERR_INVALID && strstr(b.err.msg, "expected a float type (version 28)"));
}

static void test_reduce_sum_input_axes(void) {
    float x[24];
    for (int i = 0; i < 24; i++) x[i] = (float)i;
    /* opset 13: axes as a constant input */
    hc_graph *g = new_graph(13);
    hc_tensor *xt = in(g, HC_F32, S(2, 3, 4));
    int64_t ax[2] = {0, -1};
    hc_tensor *at = hc_graph_constant(g, "axes", HC_I64, 1, (int64_t[]){2}, ax);
    hc_attr keep0 = iattr("keepdims", 0);
    built b = node(g, HC_OPK_REDUCE_SUM, 2, (hc_tensor *[]){xt, at}, 0, 1, &keep0);
    CHECK_MSG(b.st == HC_OK, "%s", b.err.msg);
    CHECK(b.n->outputs[0]->ndim == 1 && b.n->outputs[0]->shape[0] == 3);
    hc_task *t = task_of(&b);
    void *out;
    if (t && interp(t, (const void *[]){x, ax}, &out)) {
        double ref[3];
        ref_reduce(HC_OPK_REDUCE_SUM, x, 5, ref);
        check_f32("ReduceSum axes input", out, ref, 3, 0);
        free(out);
    }
    /* empty axes: every axis, or the identity with noop_with_empty_axes */
    hc_tensor *empty = in(g, HC_I64, S(0)); /* an empty runtime input needs no value */
    b = node(g, HC_OPK_REDUCE_SUM, 2, (hc_tensor *[]){xt, empty}, 0, 0, NULL);
    CHECK_MSG(b.st == HC_OK && b.n->outputs[0]->ndim == 3 && hc_tensor_numel(b.n->outputs[0]) == 1,
              "%s", b.err.msg);
    hc_attr noop = iattr("noop_with_empty_axes", 1);
    b = node(g, HC_OPK_REDUCE_SUM, 2, (hc_tensor *[]){xt, empty}, 0, 1, &noop);
    CHECK_MSG(b.st == HC_OK && hc_tensor_numel(b.n->outputs[0]) == 24, "%s", b.err.msg);
    t = task_of(&b);
    if (t && interp(t, (const void *[]){x, NULL}, &out)) {
        double ref[24];
        for (int i = 0; i < 24; i++) ref[i] = x[i];
        check_f32("ReduceSum noop", out, ref, 24, 0);
        free(out);
    }
    /* axes from a runtime tensor: UNSUPPORTED, and the runner learns which input */
    hc_tensor *rt = in(g, HC_I64, S(1));
    hc_clear_need_const();
    b = node(g, HC_OPK_REDUCE_SUM, 2, (hc_tensor *[]){xt, rt}, 0, 0, NULL);
    CHECK(b.st == HC_ERR_UNSUPPORTED);
    CHECK(hc_last_need_const() && !strcmp(hc_last_need_const(), rt->name));
    hc_clear_need_const();
    /* integer ReduceMean truncates like the integer division it is */
    int32_t iv[4] = {1, 2, 2, -8};
    hc_graph *g2 = new_graph(11);
    hc_tensor *it = in(g2, HC_I32, S(4));
    b = node(g2, HC_OPK_REDUCE_MEAN, 1, &it, 0, 0, NULL);
    t = task_of(&b);
    if (t && interp(t, (const void *[]){iv}, &out)) {
        CHECK_EQ_INT(((int32_t *)out)[0], 0); /* (1 + 2 + 2 - 8) / 4 = -0.75 truncates */
        free(out);
    }
}

/* f16 squares and exps beyond the f16 range are computed in f32 */
static void test_reduce_f16(void) {
    _Float16 x[300];
    for (int i = 0; i < 300; i++) x[i] = (_Float16)300;
    const hc_op_kind ops[2] = {HC_OPK_REDUCE_L2, HC_OPK_REDUCE_LOG_SUM_EXP};
    const double ref[2] = {300 * sqrt(300.0), 300 + log(300.0)};
    for (int k = 0; k < 2; k++) {
        hc_graph *g = new_graph(13);
        hc_tensor *xt = in(g, HC_F16, S(300));
        built b = node(g, ops[k], 1, &xt, 0, 0, NULL);
        hc_task *t = task_of(&b);
        void *out;
        if (!t || !interp(t, (const void *[]){x}, &out)) continue;
        CHECK_MSG(rel_err((double)((_Float16 *)out)[0], ref[k]) < 1e-3, "%s: %g",
                  hc_op_onnx_name(ops[k]), (double)((_Float16 *)out)[0]);
        free(out);
    }
}

static void test_log_sum_exp_stable(void) {
    double x[4] = {1000, 1000, -INFINITY, 999};
    double ref = 1000 + log(2 + exp(-1.0));
    hc_graph *g = new_graph(13);
    hc_tensor *xt = in(g, HC_F64, S(4));
    built b = node(g, HC_OPK_REDUCE_LOG_SUM_EXP, 1, &xt, 0, 0, NULL);
    hc_task *t = task_of(&b);
    void *out;
    if (t && interp(t, (const void *[]){x}, &out)) {
        CHECK_NEAR(((double *)out)[0], ref, 1e-9);
        free(out);
    }
    double y[2] = {-INFINITY, -INFINITY};
    hc_tensor *yt = in(g, HC_F64, S(2));
    b = node(g, HC_OPK_REDUCE_LOG_SUM_EXP, 1, &yt, 0, 0, NULL);
    t = task_of(&b);
    if (t && interp(t, (const void *[]){y}, &out)) {
        CHECK(((double *)out)[0] == -INFINITY);
        free(out);
    }
}

static void test_argreduce(void) {
    /* ties: first index, or last with select_last_index */
    float x[8] = {3, 1, 3, 0, /**/ -1, 5, 5, -1};
    for (int last = 0; last < 2; last++) {
        for (int is_max = 0; is_max < 2; is_max++) {
            hc_attr at[3] = {iattr("axis", -1), iattr("keepdims", 0),
                             iattr("select_last_index", last)};
            hc_graph *g = new_graph(13);
            hc_tensor *xt = in(g, HC_F32, S(2, 4));
            built b = node(g, is_max ? HC_OPK_ARG_MAX : HC_OPK_ARG_MIN, 1, &xt, 0, 3, at);
            CHECK(b.st == HC_OK && b.n->outputs[0]->dtype == HC_I64 && b.n->outputs[0]->ndim == 1);
            hc_task *t = task_of(&b);
            void *out;
            if (!t || !interp(t, (const void *[]){x}, &out)) continue;
            for (int r = 0; r < 2; r++) {
                int best = last ? 3 : 0;
                for (int j = last ? 3 : 0; last ? j >= 0 : j < 4; j += last ? -1 : 1) {
                    float v = x[r * 4 + j], bv = x[r * 4 + best];
                    if (is_max ? v > bv : v < bv) best = j;
                }
                CHECK_EQ_INT(((int64_t *)out)[r], best);
            }
            free(out);
        }
    }
    /* default axis 0 with keepdims */
    hc_graph *g = new_graph(13);
    hc_tensor *xt = in(g, HC_F32, S(2, 4));
    built b = node(g, HC_OPK_ARG_MAX, 1, &xt, 0, 0, NULL);
    CHECK(b.n->outputs[0]->ndim == 2 && b.n->outputs[0]->shape[0] == 1);
    hc_task *t = task_of(&b);
    void *out;
    if (t && interp(t, (const void *[]){x}, &out)) {
        check_i64("ArgMax axis 0", out, (int64_t[]){0, 1, 1, 0}, 4);
        free(out);
    }
}

static void test_cumsum(void) {
    double x[6] = {1, 2, 3, 4, 5, 6};
    for (int axis = -1; axis <= 0; axis++) {
        for (int mode = 0; mode < 4; mode++) {
            bool excl = mode & 1, rev = mode & 2;
            hc_attr at[2] = {iattr("exclusive", excl), iattr("reverse", rev)};
            hc_graph *g = new_graph(14);
            hc_tensor *xt = in(g, HC_F64, S(2, 3));
            int32_t av = axis;
            hc_tensor *ax = hc_graph_constant(g, "axis", HC_I32, 0, NULL, &av);
            built b = node(g, HC_OPK_CUM_SUM, 2, (hc_tensor *[]){xt, ax}, 0, 2, at);
            CHECK_MSG(b.st == HC_OK, "%s", b.err.msg);
            hc_task *t = task_of(&b);
            void *out;
            if (!t || !interp(t, (const void *[]){x, &av}, &out)) continue;
            double ref[6];
            int d = axis < 0 ? 1 : 0, len = d ? 3 : 2;
            for (int i = 0; i < 6; i++) {
                int pos = d ? i % 3 : i / 3;
                double s = 0;
                for (int r = 0; r < len; r++) {
                    bool take = rev ? (excl ? r > pos : r >= pos) : (excl ? r < pos : r <= pos);
                    if (take) s += x[d ? i - pos + r : r * 3 + i % 3];
                }
                ref[i] = s;
            }
            char what[64];
            snprintf(what, sizeof what, "CumSum axis %d mode %d", axis, mode);
            for (int i = 0; i < 6; i++) CHECK_MSG(((double *)out)[i] == ref[i], "%s [%d]", what, i);
            free(out);
        }
    }
}

/* NaN is the largest value; equal values go by the lower index */
static bool topk_ref_before(double a, int ia, double b, int ib, bool largest) {
    if (isnan(a) || isnan(b)) {
        if (isnan(a) && isnan(b)) return ia < ib;
        return largest ? isnan(a) : isnan(b);
    }
    if (a != b) return largest ? a > b : a < b;
    return ia < ib;
}

static void test_topk(void) {
    /* ties go to the lower index, for largest and smallest alike */
    float x[10] = {3, 7, 3, -1, 7, /**/ 0, 0, 2, NAN, -4};
    for (int largest = 0; largest < 2; largest++) {
        hc_graph *g = new_graph(11);
        hc_tensor *xt = in(g, HC_F32, S(2, 5));
        int64_t k = 3;
        hc_tensor *kt = hc_graph_constant(g, "k", HC_I64, 1, (int64_t[]){1}, &k);
        hc_attr at[2] = {iattr("axis", 1), iattr("largest", largest)};
        built b = node(g, HC_OPK_TOP_K, 2, (hc_tensor *[]){xt, kt}, 2, 2, at);
        CHECK_MSG(b.st == HC_OK, "%s", b.err.msg);
        CHECK(b.n->outputs[1]->dtype == HC_I64 && b.n->outputs[0]->shape[1] == 3);
        hc_task *t = task_of(&b);
        void *outs[2];
        if (!t || !interp(t, (const void *[]){x, &k}, outs)) continue;
        /* expected by repeated selection */
        int64_t ref_i[6];
        double ref_v[6];
        for (int r = 0; r < 2; r++) {
            bool used[5] = {false};
            for (int p = 0; p < 3; p++) {
                int best = -1;
                for (int j = 0; j < 5; j++)
                    if (!used[j] && (best < 0 || topk_ref_before(x[r * 5 + j], j,
                                                                 x[r * 5 + best], best, largest)))
                        best = j;
                used[best] = true;
                ref_i[r * 3 + p] = best;
                ref_v[r * 3 + p] = x[r * 5 + best];
            }
        }
        check_i64(largest ? "TopK largest idx" : "TopK smallest idx", outs[1], ref_i, 6);
        check_f32(largest ? "TopK largest val" : "TopK smallest val", outs[0], ref_v, 6, 0);
        free(outs[0]), free(outs[1]);
    }
    /* k from a runtime tensor is needed at compile time */
    hc_graph *g = new_graph(11);
    hc_tensor *xt = in(g, HC_F32, S(2, 5)), *kt = in(g, HC_I64, S(1));
    built b = node(g, HC_OPK_TOP_K, 2, (hc_tensor *[]){xt, kt}, 2, 0, NULL);
    CHECK(b.st == HC_ERR_UNSUPPORTED);
    hc_clear_need_const();
}

/* ---- errors -------------------------------------------------------------------------- */
static void test_errors(void) {
    hc_graph *g = new_graph(13);
    hc_tensor *f = in(g, HC_F32, S(2, 3)), *i = in(g, HC_I32, S(2, 3)), *v4 = in(g, HC_F32, S(4));
    built b = node(g, HC_OPK_ADD, 2, (hc_tensor *[]){f, i}, 0, 0, NULL);
    CHECK_MSG(b.st == HC_ERR_INVALID && strstr(b.err.msg, "(Add)") && strstr(b.err.msg, "i32"),
              "%s", b.err.msg);
    b = node(g, HC_OPK_MUL, 2, (hc_tensor *[]){f, v4}, 0, 0, NULL);
    CHECK_MSG(b.st == HC_ERR_INVALID && strstr(b.err.msg, "broadcast"), "%s", b.err.msg);
    b = node(g, HC_OPK_SQRT, 1, &i, 0, 0, NULL);
    CHECK_MSG(b.st == HC_ERR_INVALID && strstr(b.err.msg, "Sqrt_") && strstr(b.err.msg, "float"),
              "%s", b.err.msg);
    b = node(g, HC_OPK_AND, 2, (hc_tensor *[]){f, f}, 0, 0, NULL);
    CHECK_MSG(b.st == HC_ERR_INVALID && strstr(b.err.msg, "bool"), "%s", b.err.msg);
    hc_tensor *s23 = in(g, HC_F32, S(2, 3)), *s13 = in(g, HC_F32, S(1, 3));
    b = node(g, HC_OPK_PRELU, 2, (hc_tensor *[]){s13, s23}, 0, 0, NULL); /* X would grow */
    CHECK_MSG(b.st == HC_ERR_INVALID && strstr(b.err.msg, "slope"), "%s", b.err.msg);
    hc_attr bad_axis = iattr("axis", 2);
    b = node(g, HC_OPK_ARG_MAX, 1, &f, 0, 1, &bad_axis);
    CHECK_MSG(b.st == HC_ERR_INVALID && strstr(b.err.msg, "ArgMax_"), "%s", b.err.msg);
    int64_t dup[2] = {1, -1};
    hc_attr dup_axes = intsattr("axes", 2, dup);
    b = node(g, HC_OPK_REDUCE_MAX, 1, &f, 0, 1, &dup_axes);
    CHECK_MSG(b.st == HC_ERR_INVALID && strstr(b.err.msg, "repeats"), "%s", b.err.msg);
    int64_t kbig = 9;
    hc_tensor *kt = hc_graph_constant(g, NULL, HC_I64, 1, (int64_t[]){1}, &kbig);
    b = node(g, HC_OPK_TOP_K, 2, (hc_tensor *[]){f, kt}, 2, 0, NULL);
    CHECK_MSG(b.st == HC_ERR_INVALID && strstr(b.err.msg, "k = 9"), "%s", b.err.msg);
    hc_tensor *m2 = in(g, HC_F32, S(2));
    b = node(g, HC_OPK_CLIP, 2, (hc_tensor *[]){f, m2}, 0, 0, NULL);
    CHECK_MSG(b.st == HC_ERR_INVALID && strstr(b.err.msg, "min"), "%s", b.err.msg);
    /* opset-6 broadcast from an axis is valid ONNX we do not handle */
    hc_graph *g6 = new_graph(6);
    hc_tensor *a6 = in(g6, HC_F32, S(2, 3)), *b6 = in(g6, HC_F32, S(2));
    hc_attr legacy[2] = {iattr("broadcast", 1), iattr("axis", 0)};
    b = node(g6, HC_OPK_ADD, 2, (hc_tensor *[]){a6, b6}, 0, 2, legacy);
    CHECK_MSG(b.st == HC_ERR_UNSUPPORTED && strstr(b.err.msg, "legacy"), "%s", b.err.msg);
}

/* ---- compiled kernels vs the interpreter --------------------------------------------- */
typedef struct jcase {
    hc_graph *g; /* where the task's constant inputs are */
    hc_task *t;
    double lo, hi;
    double tol;
    hc_func *f;
} jcase;

static jcase jcases[256];
static int njcases;

static void jadd_task(hc_graph *g, hc_task *t, double lo, double hi, double tol) {
    if (!t) return;
    HC_ASSERT(njcases < (int)HC_ARRAY_LEN(jcases));
    jcases[njcases++] = (jcase){g, t, lo, hi, tol, NULL};
}

/* One node over fresh inputs (constants where consts[i] is not NULL). */
static void jadd(hc_op_kind op, int opset, int nin, const hc_dtype *dts, const int *nds,
                 const int64_t *const *shapes, const void *const *consts, int nout, int nattrs,
                 const hc_attr *attrs, double lo, double hi, double tol) {
    hc_graph *g = new_graph(opset);
    hc_tensor *xs[8];
    for (int i = 0; i < nin; i++)
        xs[i] = consts && consts[i]
                    ? hc_graph_constant(g, NULL, dts[i], nds[i], shapes[i], consts[i])
                    : in(g, dts[i], nds[i], shapes[i]);
    built b = node(g, op, nin, xs, nout, nattrs, attrs);
    CHECK_MSG(b.st == HC_OK, "%s", b.err.msg);
    jadd_task(g, task_of(&b), lo, hi, tol);
}

static void jadd1(hc_op_kind op, hc_dtype dt, int nd, const int64_t *s, int nattrs,
                  const hc_attr *attrs, double lo, double hi) {
    double tol = dt == HC_F16 ? 4e-3 : 2e-6;
    jadd(op, 17, 1, &dt, &nd, &s, NULL, 0, nattrs, attrs, lo, hi, tol);
}

static void jadd2(hc_op_kind op, hc_dtype dt, int nx, const int64_t *sx, int ny,
                  const int64_t *sy, int nattrs, const hc_attr *attrs, double lo, double hi) {
    double tol = dt == HC_F16 ? 4e-3 : 2e-6;
    jadd(op, 17, 2, (hc_dtype[]){dt, dt}, (int[]){nx, ny}, (const int64_t *const[]){sx, sy},
         NULL, 0, nattrs, attrs, lo, hi, tol);
}

static void build_jit_cases(void) {
    const int64_t s1[1] = {1}, s13[1] = {13}, s3x1x5[3] = {3, 1, 5}, s7x5[2] = {7, 5};
    const int64_t s2x17[2] = {2, 17}, s17[1] = {17};
    /* unary float ops on awkward shapes, f32 and a few f16/f64 */
    for (int op = 0; op < HC_OPK_COUNT; op++) {
        const hc_op_def *d = hc_op_get((hc_op_kind)op);
        if (!d || d->infer != hc_ops_math[0].infer) continue; /* unary ops share Relu's */
        if (op == HC_OPK_NOT || op == HC_OPK_BITWISE_NOT) continue; /* integers and bools */
        double lo = -3, hi = 3;
        if (op == HC_OPK_ACOSH) lo = 1, hi = 5;
        if (op == HC_OPK_ASIN || op == HC_OPK_ACOS || op == HC_OPK_ATANH) lo = -0.99, hi = 0.99;
        if (op == HC_OPK_SQRT || op == HC_OPK_LOG || op == HC_OPK_RECIPROCAL) lo = 0.05, hi = 8;
        jadd1((hc_op_kind)op, HC_F32, 3, s3x1x5, 0, NULL, lo, hi);
        jadd1((hc_op_kind)op, HC_F32, 1, s1, 0, NULL, lo, hi);
    }
    hc_attr alpha = fattr("alpha", 0.25);
    jadd1(HC_OPK_LEAKY_RELU, HC_F16, 1, s13, 1, &alpha, -3, 3);
    jadd1(HC_OPK_ELU, HC_F64, 1, s13, 1, &alpha, -3, 3);
    jadd1(HC_OPK_TANH, HC_F64, 1, s13, 0, NULL, -3, 3);
    jadd1(HC_OPK_SIGMOID, HC_F16, 1, s13, 0, NULL, -6, 6);
    jadd1(HC_OPK_ROUND, HC_F32, 2, s7x5, 0, NULL, -4, 4);
    jadd1(HC_OPK_RELU, HC_I32, 1, s13, 0, NULL, -9, 9);
    jadd1(HC_OPK_ABS, HC_I8, 1, s13, 0, NULL, -128, 127);
    jadd1(HC_OPK_SIGN, HC_I64, 1, s13, 0, NULL, -9, 9);
    jadd1(HC_OPK_NEG, HC_I16, 1, s13, 0, NULL, -99, 99);
    jadd1(HC_OPK_NOT, HC_BOOL, 2, s7x5, 0, NULL, 0, 2);
    hc_attr inf_pos = iattr("detect_negative", 0);
    jadd1(HC_OPK_IS_INF, HC_F32, 1, s13, 1, &inf_pos, -3, 3);
    /* binary and variadic: broadcasting across awkward shapes */
    const hc_op_kind bin[] = {HC_OPK_ADD, HC_OPK_SUB, HC_OPK_MUL, HC_OPK_DIV, HC_OPK_POW,
                              HC_OPK_MIN, HC_OPK_MAX, HC_OPK_MEAN, HC_OPK_SUM, HC_OPK_PRELU,
                              HC_OPK_EQUAL, HC_OPK_LESS, HC_OPK_GREATER_OR_EQUAL};
    for (size_t k = 0; k < HC_ARRAY_LEN(bin); k++) {
        double lo = bin[k] == HC_OPK_POW ? 0.1 : -3;
        if (bin[k] == HC_OPK_PRELU) jadd2(bin[k], HC_F32, 2, s7x5, 1, s1, 0, NULL, lo, 3);
        else jadd2(bin[k], HC_F32, 3, s3x1x5, 2, s7x5, 0, NULL, lo, 3);
        jadd2(bin[k], HC_F32, 1, s1, 1, s1, 0, NULL, lo, 3);
    }
    jadd2(HC_OPK_PRELU, HC_F32, 2, s7x5, 2, s7x5, 0, NULL, -3, 3); /* slope as big as X */
    jadd2(HC_OPK_ADD, HC_F16, 2, s2x17, 1, s17, 0, NULL, -3, 3);
    jadd2(HC_OPK_DIV, HC_F64, 2, s2x17, 1, s1, 0, NULL, 0.5, 3);
    hc_attr fm1 = iattr("fmod", 1);
    jadd2(HC_OPK_MOD, HC_F32, 2, s2x17, 1, s17, 1, &fm1, -5, 5);
    jadd2(HC_OPK_MOD, HC_F64, 2, s2x17, 1, s17, 0, NULL, -5, 5);
    const hc_dtype ints[] = {HC_I8, HC_I32, HC_I64, HC_U8, HC_U32};
    for (size_t k = 0; k < HC_ARRAY_LEN(ints); k++) { /* zero divisors included */
        double lo = hc_dtype_is_signed(ints[k]) ? -9 : 0;
        jadd2(HC_OPK_DIV, ints[k], 2, s2x17, 1, s17, 0, NULL, lo, 9);
        jadd2(HC_OPK_MOD, ints[k], 2, s2x17, 1, s17, 0, NULL, lo, 9);
        jadd2(HC_OPK_MOD, ints[k], 2, s2x17, 1, s17, 1, &fm1, lo, 9);
        jadd2(HC_OPK_MAX, ints[k], 2, s2x17, 1, s17, 0, NULL, lo, 9);
    }
    jadd(HC_OPK_POW, 15, 2, (hc_dtype[]){HC_I32, HC_F32}, (int[]){1, 1},
         (const int64_t *const[]){s13, s13}, NULL, 0, 0, NULL, 0, 4, 0);
    jadd(HC_OPK_POW, 15, 2, (hc_dtype[]){HC_F32, HC_I64}, (int[]){1, 1},
         (const int64_t *const[]){s13, s1}, NULL, 0, 0, NULL, 0.5, 3, 2e-6);
    const float three = 3;
    jadd(HC_OPK_POW, 15, 2, (hc_dtype[]){HC_F32, HC_F32}, (int[]){2, 0},
         (const int64_t *const[]){s7x5, NULL}, (const void *const[]){NULL, &three}, 0, 0, NULL,
         -3, 3, 2e-6);
    /* bitwise ops and shifts on integers (shifts past the width included), Gelu's tanh form */
    jadd1(HC_OPK_BITWISE_NOT, HC_I16, 1, s13, 0, NULL, -99, 99);
    jadd1(HC_OPK_BITWISE_NOT, HC_U8, 2, s7x5, 0, NULL, 0, 255);
    const hc_op_kind bits[] = {HC_OPK_BITWISE_AND, HC_OPK_BITWISE_OR, HC_OPK_BITWISE_XOR};
    for (size_t k = 0; k < HC_ARRAY_LEN(bits); k++) {
        jadd2(bits[k], HC_I32, 2, s2x17, 1, s17, 0, NULL, -999, 999);
        jadd2(bits[k], HC_U8, 3, s3x1x5, 2, s7x5, 0, NULL, 0, 255);
    }
    hc_attr left = {.name = "direction", .kind = HC_ATTR_STRING, .s = "LEFT"};
    hc_attr right = {.name = "direction", .kind = HC_ATTR_STRING, .s = "RIGHT"};
    jadd2(HC_OPK_BIT_SHIFT, HC_U8, 2, s2x17, 1, s17, 1, &left, 0, 12);
    jadd2(HC_OPK_BIT_SHIFT, HC_U16, 2, s2x17, 1, s17, 1, &left, 0, 20);
    jadd2(HC_OPK_BIT_SHIFT, HC_U64, 2, s2x17, 1, s17, 1, &right, 0, 70);
    jadd(HC_OPK_BIT_SHIFT, 28, 2, (hc_dtype[]){HC_I16, HC_I16}, (int[]){2, 1},
         (const int64_t *const[]){s2x17, s17}, NULL, 0, 1, &right, -99, 99, 0);
    hc_attr tanh_form = {.name = "approximate", .kind = HC_ATTR_STRING, .s = "tanh"};
    jadd1(HC_OPK_GELU, HC_F32, 2, s7x5, 1, &tanh_form, -4, 4);
    const hc_op_kind logic[] = {HC_OPK_AND, HC_OPK_OR, HC_OPK_XOR, HC_OPK_EQUAL};
    for (size_t k = 0; k < HC_ARRAY_LEN(logic); k++)
        jadd2(logic[k], HC_BOOL, 3, s3x1x5, 2, s7x5, 0, NULL, 0, 2);
    jadd(HC_OPK_WHERE, 16, 3, (hc_dtype[]){HC_BOOL, HC_F32, HC_F32}, (int[]){2, 3, 1},
         (const int64_t *const[]){s7x5, s3x1x5, s1}, NULL, 0, 0, NULL, 0, 2, 0);
    jadd(HC_OPK_SUM, 13, 3, (hc_dtype[]){HC_F32, HC_F32, HC_F32}, (int[]){3, 2, 1},
         (const int64_t *const[]){s3x1x5, s7x5, s1}, NULL, 0, 0, NULL, -3, 3, 2e-6);
    jadd(HC_OPK_CLIP, 13, 3, (hc_dtype[]){HC_F32, HC_F32, HC_F32}, (int[]){2, 0, 0},
         (const int64_t *const[]){s7x5, NULL, NULL}, NULL, 0, 0, NULL, -3, 3, 0);
    jadd(HC_OPK_CLIP, 13, 3, (hc_dtype[]){HC_I32, HC_I32, HC_I32}, (int[]){2, 0, 0},
         (const int64_t *const[]){s7x5, NULL, NULL}, NULL, 0, 0, NULL, -9, 9, 0);
    /* reductions: every kind over an inner, an outer and all axes */
    int64_t ax_in[1] = {-1}, ax_out[2] = {0, 1};
    hc_attr rin[2] = {intsattr("axes", 1, ax_in), iattr("keepdims", 0)};
    hc_attr rout[2] = {intsattr("axes", 2, ax_out), iattr("keepdims", 1)};
    const int64_t s5x3x37[3] = {5, 3, 37};
    for (int op = HC_OPK_REDUCE_MEAN; op <= HC_OPK_REDUCE_SUM_SQUARE; op++) {
        const int64_t *sp = s5x3x37;
        int nd = 3;
        double lo = op == HC_OPK_REDUCE_LOG_SUM ? 0.1 : op == HC_OPK_REDUCE_PROD ? 0.8 : -2;
        double hi = op == HC_OPK_REDUCE_PROD ? 1.2 : 2, tol = 2e-5;
        jadd((hc_op_kind)op, 11, 1, (hc_dtype[]){HC_F32}, &nd, &sp, NULL, 0, 2, rin, lo, hi, tol);
        jadd((hc_op_kind)op, 11, 1, (hc_dtype[]){HC_F32}, &nd, &sp, NULL, 0, 2, rout, lo, hi, tol);
        jadd((hc_op_kind)op, 11, 1, (hc_dtype[]){HC_F32}, &nd, &sp, NULL, 0, 0, NULL, lo, hi, tol);
    }
    /* f16 sums of thousands of elements */
    const int64_t s3x4099[2] = {3, 4099};
    hc_attr rlast[1] = {intsattr("axes", 1, ax_in)};
    jadd(HC_OPK_REDUCE_SUM, 11, 1, (hc_dtype[]){HC_F16}, (int[]){2},
         (const int64_t *const[]){s3x4099}, NULL, 0, 1, rlast, 0.9, 1.1, 2e-3);
    jadd(HC_OPK_REDUCE_MEAN, 11, 1, (hc_dtype[]){HC_F16}, (int[]){2},
         (const int64_t *const[]){s3x4099}, NULL, 0, 1, rlast, 0.9, 1.1, 2e-3);
    jadd(HC_OPK_REDUCE_MAX, 11, 1, (hc_dtype[]){HC_I32}, (int[]){3},
         (const int64_t *const[]){s5x3x37}, NULL, 0, 2, rin, -99, 99, 0);
    hc_attr am[2] = {iattr("axis", 1), iattr("select_last_index", 1)};
    jadd(HC_OPK_ARG_MAX, 13, 1, (hc_dtype[]){HC_I32}, (int[]){3},
         (const int64_t *const[]){s5x3x37}, NULL, 0, 2, am, -3, 3, 0);
    jadd(HC_OPK_ARG_MIN, 13, 1, (hc_dtype[]){HC_F32}, (int[]){3},
         (const int64_t *const[]){s5x3x37}, NULL, 0, 0, NULL, -3, 3, 0);
    int64_t ax1 = 1;
    hc_attr cs[2] = {iattr("exclusive", 1), iattr("reverse", 1)};
    jadd(HC_OPK_CUM_SUM, 14, 2, (hc_dtype[]){HC_F32, HC_I64}, (int[]){2, 0},
         (const int64_t *const[]){s2x17, NULL}, (const void *const[]){NULL, &ax1}, 0, 2, cs,
         -3, 3, 2e-5);
    jadd(HC_OPK_CUM_SUM, 14, 2, (hc_dtype[]){HC_I32, HC_I64}, (int[]){2, 0},
         (const int64_t *const[]){s7x5, NULL}, (const void *const[]){NULL, &ax1}, 0, 0, NULL,
         -9, 9, 0);
    jadd(HC_OPK_CUM_PROD, 26, 2, (hc_dtype[]){HC_F32, HC_I64}, (int[]){2, 0},
         (const int64_t *const[]){s2x17, NULL}, (const void *const[]){NULL, &ax1}, 0, 2, cs,
         0.5, 1.5, 2e-5);
    jadd(HC_OPK_CUM_PROD, 26, 2, (hc_dtype[]){HC_I64, HC_I64}, (int[]){2, 0},
         (const int64_t *const[]){s7x5, NULL}, (const void *const[]){NULL, &ax1}, 0, 0, NULL,
         -3, 3, 0);
    const int64_t s2x600[2] = {2, 600};
    jadd(HC_OPK_CUM_SUM, 14, 2, (hc_dtype[]){HC_F16, HC_I64}, (int[]){2, 0},
         (const int64_t *const[]){s2x600, NULL}, (const void *const[]){NULL, &ax1}, 0, 0, NULL,
         0.9, 1.1, 2e-3);
    int64_t k4 = 4;
    hc_attr tk[1] = {iattr("axis", 0)};
    jadd(HC_OPK_TOP_K, 11, 2, (hc_dtype[]){HC_F32, HC_I64}, (int[]){2, 1},
         (const int64_t *const[]){s7x5, s1}, (const void *const[]){NULL, &k4}, 2, 1, tk, -3, 3,
         0);
    hc_attr tks[1] = {iattr("largest", 0)};
    jadd(HC_OPK_TOP_K, 11, 2, (hc_dtype[]){HC_I32, HC_I64}, (int[]){2, 1},
         (const int64_t *const[]){s2x17, s1}, (const void *const[]){NULL, &k4}, 2, 1, tks, -5, 5,
         0);
}

static void fill(void *buf, hc_dtype t, int64_t n, double lo, double hi) {
    for (int64_t i = 0; i < n; i++) {
        double v = hc_rng_uniform(&rng, lo, hi);
        switch (t) {
        case HC_F32: ((float *)buf)[i] = (float)v; break;
        case HC_F64: ((double *)buf)[i] = v; break;
        case HC_F16: ((_Float16 *)buf)[i] = (_Float16)v; break;
        case HC_BOOL: ((uint8_t *)buf)[i] = v >= (lo + hi) / 2; break;
        case HC_I8: ((int8_t *)buf)[i] = (int8_t)floor(v); break;
        case HC_I16: ((int16_t *)buf)[i] = (int16_t)floor(v); break;
        case HC_I32: ((int32_t *)buf)[i] = (int32_t)floor(v); break;
        case HC_I64: ((int64_t *)buf)[i] = (int64_t)floor(v); break;
        case HC_U8: ((uint8_t *)buf)[i] = (uint8_t)floor(v); break;
        case HC_U32: ((uint32_t *)buf)[i] = (uint32_t)floor(v); break;
        case HC_U16: ((uint16_t *)buf)[i] = (uint16_t)floor(v); break;
        case HC_U64: ((uint64_t *)buf)[i] = (uint64_t)floor(v) * 0x9E3779B97F4A7C15ull; break;
        default: HC_ASSERT(0);
        }
    }
}

static double as_double(const void *buf, hc_dtype t, int64_t i) {
    switch (t) {
    case HC_F32: return ((const float *)buf)[i];
    case HC_F64: return ((const double *)buf)[i];
    case HC_F16: return (double)((const _Float16 *)buf)[i];
    default: return 0;
    }
}

static int64_t count_bad(const void *got, const void *ref, hc_dtype t, int64_t n, double tol) {
    int64_t bad = 0;
    size_t sz = (size_t)hc_dtype_size(t);
    for (int64_t i = 0; i < n; i++) {
        if (hc_dtype_is_float(t)) {
            double e = rel_err(as_double(got, t, i), as_double(ref, t, i));
            bad += !(e <= tol);
        } else {
            bad += memcmp((const char *)got + i * sz, (const char *)ref + i * sz, sz) != 0;
        }
    }
    return bad;
}

static void run_jcase(jcase *c, hc_jit_lib *lib) {
    const hc_task *t = c->t;
    void *args[16], *ref[4];
    for (int i = 0; i < t->ninputs; i++) {
        const hc_tnode *x = t->inputs[i];
        args[i] = buf_of(x);
        const hc_tensor *gt = hc_graph_find_tensor(c->g, x->name); /* constants: their data */
        if (gt && gt->data) memcpy(args[i], gt->data, hc_tensor_nbytes(gt));
        else fill(args[i], x->dtype, hc_tnode_numel(x), c->lo, c->hi);
    }
    for (int i = 0; i < t->noutputs; i++) {
        ref[i] = buf_of(t->outputs[i]);
        args[t->ninputs + i] = buf_of(t->outputs[i]);
    }
    hc_error e = {0};
    hc_status st = hc_interpret_task(t, args, ref, &e);
    CHECK_MSG(st == HC_OK, "%s: %s", t->name, e.msg);
    char sym[256];
    snprintf(sym, sizeof sym, "%s__packed", c->f->name);
    hc_packed_fn fn = (hc_packed_fn)hc_jit_symbol(lib, sym);
    CHECK_MSG(fn != NULL, "missing %s", sym);
    for (int threads = 1; threads <= 2 && fn && st == HC_OK; threads++) {
        omp_set_num_threads(threads);
        for (int i = 0; i < t->noutputs; i++)
            memset(args[t->ninputs + i], 0xA5, nbytes(t->outputs[i]));
        fn(args);
        for (int i = 0; i < t->noutputs; i++) {
            const hc_tnode *o = t->outputs[i];
            int64_t bad = count_bad(args[t->ninputs + i], ref[i], o->dtype, hc_tnode_numel(o),
                                    c->tol);
            CHECK_MSG(bad == 0, "%s output %s (%s), %d threads: %lld of %lld differ", t->name,
                      o->name, hc_dtype_name(o->dtype), threads, (long long)bad,
                      (long long)hc_tnode_numel(o));
        }
    }
    for (int i = 0; i < t->ninputs + t->noutputs; i++) free(args[i]);
    for (int i = 0; i < t->noutputs; i++) free(ref[i]);
}

static void test_jit(void) {
    build_jit_cases();
    const hc_target *tg = hc_target_host();
    hc_func **funcs = HC_NEW_ARRAY(&A, hc_func *, njcases);
    int nf = 0;
    for (int i = 0; i < njcases; i++) {
        hc_error e = {0};
        jcases[i].f = hc_auto_schedule(&A, jcases[i].t, tg, &e);
        CHECK_MSG(jcases[i].f != NULL, "%s: %s", jcases[i].t->name, e.msg);
        if (jcases[i].f) funcs[nf++] = jcases[i].f;
    }
    if (nf != njcases) return;
    char *src = hc_codegen_c(&A, hc_module_new(&A, "ops_math_test", nf, funcs), tg);
    hc_jit_options opt = {.cflags = tg->cflags};
    hc_jit_lib *lib = NULL;
    hc_error e = {0};
    CHECK_MSG(hc_jit_build(src, &opt, &lib, &e) == HC_OK, "%s", e.msg);
    free(src);
    if (!lib) return;
    for (int i = 0; i < njcases; i++) run_jcase(&jcases[i], lib);
    printf("%d compiled kernels checked\n", njcases);
    hc_jit_close(lib);
}

int main(void) {
    hc_arena_init(&A);
    test_unary_float();
    test_unary_special();
    test_unary_int();
    test_binary_float();
    test_binary_int();
    test_pow_const_exponent();
    test_compare_logic();
    test_variadic();
    test_clip();
    test_reduce();
    test_reduce_sum_input_axes();
    test_reduce_opset18();
    test_log_sum_exp_stable();
    test_reduce_f16();
    test_argreduce();
    test_cumsum();
    test_topk();
    test_errors();
    test_jit();
    for (int i = 0; i < ngraphs; i++) hc_graph_free(graphs[i]);
    hc_arena_free(&A);
    TEST_DONE();
}
