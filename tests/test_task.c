/* test_task.c — task definitions and the reference interpreter, checked against loops
 * written directly in this file. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "task/task.h"
#include "test.h"

static hc_arena A;
static hc_rng rng = {12345};

static void fill(float *x, int64_t n, double lo, double hi) {
    for (int64_t i = 0; i < n; i++) x[i] = (float)hc_rng_uniform(&rng, lo, hi);
}

static hc_tnode *input(const char *name, hc_dtype t, int n, int64_t s0, int64_t s1, int64_t s2) {
    int64_t s[3] = {s0, s1, s2};
    return hc_tensor_input(&A, name, t, n, s);
}

static int run(const hc_task *t, void *const *in, void *const *out) {
    hc_error err = {0};
    hc_status st = hc_interpret_task(t, in, out, &err);
    if (st) fprintf(stderr, "interpret %s: %s\n", t->name, err.msg);
    return st;
}

static void test_broadcast_add(void) {
    hc_error err = {0};
    hc_tnode *a = input("a", HC_F32, 3, 3, 1, 5), *b = input("b", HC_F32, 2, 4, 5, 0);
    hc_tnode *c = hc_compute_binop(&A, "c", HC_OP_ADD, a, b, &err);
    CHECK(c && c->ndim == 3 && c->shape[0] == 3 && c->shape[1] == 4 && c->shape[2] == 5);
    hc_task *t = hc_task_new(&A, "badd", 2, (hc_tnode *[]){a, b}, 1, &c);
    float x[15], y[20], z[60];
    fill(x, 15, -1, 1), fill(y, 20, -1, 1);
    CHECK(run(t, (void *[]){x, y}, (void *[]){z}) == HC_OK);
    int bad = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 5; k++)
                bad += z[(i * 4 + j) * 5 + k] != x[i * 5 + k] + y[j * 5 + k];
    CHECK_EQ_INT(bad, 0);
    /* a is broadcast along dim 1, so it has no inverse map; b neither (missing dim 0) */
    CHECK(t->inverse[0] == NULL && t->inverse[1] == NULL);
    CHECK(hc_task_is_injective(t));
    /* incompatible shapes are an error naming both shapes */
    hc_tnode *d = input("d", HC_F32, 1, 3, 0, 0);
    CHECK(hc_compute_binop(&A, "bad", HC_OP_ADD, b, d, &err) == NULL);
    CHECK(strstr(err.msg, "[4, 5]") && strstr(err.msg, "[3]"));
}

static hc_expr *relu_fn(hc_arena *a, hc_expr *x, void *ctx) {
    return hc_max(a, x, hc_f32(a, 0));
}

static void test_relu_and_inverse(void) {
    hc_tnode *x = input("x", HC_F32, 2, 6, 7, 0);
    hc_tnode *y = hc_compute_map1(&A, "y", x, relu_fn, NULL);
    hc_task *t = hc_task1(&A, "relu", 1, &x, y);
    float in[42], out[42];
    fill(in, 42, -1, 1);
    CHECK(run(t, (void *[]){in}, (void *[]){out}) == HC_OK);
    int bad = 0;
    for (int i = 0; i < 42; i++) bad += out[i] != (in[i] > 0 ? in[i] : 0.0f);
    CHECK_EQ_INT(bad, 0);
    /* elementwise: identity inverse map */
    hc_inverse_map *m = t->inverse[0];
    CHECK(m && m->ninput_axes == 2 && m->noutput_dims == 2);
    if (m) {
        CHECK(m->output_idx[0]->kind == HC_E_VAR && m->output_idx[0]->u.var == m->input_axes[0]);
        CHECK(m->output_idx[1]->kind == HC_E_VAR && m->output_idx[1]->u.var == m->input_axes[1]);
    }
}

/* out[i, j, k] = x[k, i, j]: a permutation (2, 0, 1) of x's dims */
static hc_expr *transpose_fn(hc_arena *a, hc_var *const *ax, void *ctx) {
    const hc_tnode *x = ctx;
    return hc_at(a, x, (hc_expr *[]){hc_ref(a, ax[2]), hc_ref(a, ax[0]), hc_ref(a, ax[1])});
}

static void test_transpose(void) {
    hc_tnode *x = input("x", HC_I32, 3, 3, 5, 7);
    hc_tnode *y = hc_compute(&A, "y", 3, (int64_t[]){5, 7, 3}, transpose_fn, x);
    hc_task *t = hc_task1(&A, "transpose", 1, &x, y);
    int32_t in[105], out[105];
    for (int i = 0; i < 105; i++) in[i] = (int32_t)(hc_rng_next(&rng) % 1000) - 500;
    CHECK(run(t, (void *[]){in}, (void *[]){out}) == HC_OK);
    int bad = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 7; j++)
            for (int k = 0; k < 3; k++) bad += out[(i * 7 + j) * 3 + k] != in[(k * 5 + i) * 7 + j];
    CHECK_EQ_INT(bad, 0);
    /* inverse: x[x0, x1, x2] lands at y[x1, x2, x0] */
    hc_inverse_map *m = t->inverse[0];
    CHECK(m != NULL);
    if (m) {
        CHECK(m->output_idx[0]->u.var == m->input_axes[1]);
        CHECK(m->output_idx[1]->u.var == m->input_axes[2]);
        CHECK(m->output_idx[2]->u.var == m->input_axes[0]);
    }
}

/* Reference reduction over a [3, 4, 5] tensor with a mask of reduced dims. */
static void ref_reduce(const float *x, const bool *mask, hc_reduce_kind k, double *out) {
    int64_t s[3] = {3, 4, 5};
    int64_t os[3];
    for (int d = 0; d < 3; d++) os[d] = mask[d] ? 1 : s[d];
    int64_t on = os[0] * os[1] * os[2];
    double cnt = 1;
    for (int d = 0; d < 3; d++) cnt *= mask[d] ? (double)s[d] : 1;
    for (int64_t o = 0; o < on; o++) {
        double acc = k == HC_REDUCE_PROD  ? 1
                     : k == HC_REDUCE_MAX ? -1e30
                     : k == HC_REDUCE_MIN ? 1e30
                                          : 0;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                for (int l = 0; l < 5; l++) {
                    int64_t oi = (mask[0] ? 0 : i), oj = (mask[1] ? 0 : j), ol = (mask[2] ? 0 : l);
                    if ((oi * os[1] + oj) * os[2] + ol != o) continue;
                    double v = x[(i * 4 + j) * 5 + l];
                    if (k == HC_REDUCE_SUM || k == HC_REDUCE_AVG) acc += v;
                    else if (k == HC_REDUCE_PROD) acc *= v;
                    else if (k == HC_REDUCE_MAX) acc = v > acc ? v : acc;
                    else acc = v < acc ? v : acc;
                }
        out[o] = k == HC_REDUCE_AVG ? acc / cnt : acc;
    }
}

static void test_reduce_kinds(void) {
    float x[60], y[60];
    double ref[60];
    fill(x, 60, 0.8, 1.2);
    const int axes_sets[][3] = {{0}, {1}, {2}, {0, 2}, {-1, 0}};
    const int naxes[] = {1, 1, 1, 2, 2};
    for (int k = HC_REDUCE_SUM; k <= HC_REDUCE_PROD; k++)
        for (int s = 0; s < 5; s++)
            for (int keep = 0; keep < 2; keep++) {
                hc_error err = {0};
                hc_tnode *in = input("x", HC_F32, 3, 3, 4, 5);
                hc_tnode *out = hc_compute_reduce(&A, "y", in, naxes[s], axes_sets[s], keep,
                                                  (hc_reduce_kind)k, &err);
                CHECK(out != NULL);
                if (!out) continue;
                bool mask[3] = {false, false, false};
                for (int i = 0; i < naxes[s]; i++) mask[(axes_sets[s][i] + 3) % 3] = true;
                CHECK_EQ_INT(out->ndim, keep ? 3 : 3 - naxes[s]);
                hc_task *t = hc_task1(&A, "reduce", 1, &in, out);
                CHECK(!hc_task_is_injective(t) && t->inverse[0] == NULL);
                CHECK(run(t, (void *[]){x}, (void *[]){y}) == HC_OK);
                ref_reduce(x, mask, (hc_reduce_kind)k, ref);
                int64_t n = hc_tnode_numel(out);
                double maxerr = 0;
                for (int64_t i = 0; i < n; i++) maxerr = fmax(maxerr, fabs(y[i] - ref[i]));
                CHECK_MSG(maxerr < 1e-5, "kind %s set %d keep %d err %g",
                          hc_reduce_kind_name((hc_reduce_kind)k), s, keep, maxerr);
            }
    /* full reduction to a 0-d tensor, and integer max with negative values */
    hc_error err = {0};
    hc_tnode *xi = input("xi", HC_I16, 2, 6, 9, 0);
    hc_tnode *mx = hc_compute_reduce(&A, "mx", xi, 0, NULL, false, HC_REDUCE_MAX, &err);
    CHECK(mx && mx->ndim == 0);
    int16_t vi[54], res = 0, want = INT16_MIN;
    for (int i = 0; i < 54; i++) {
        vi[i] = (int16_t)(-30000 + (int)(hc_rng_next(&rng) % 1000));
        want = vi[i] > want ? vi[i] : want;
    }
    hc_task *t = hc_task1(&A, "maxall", 1, &xi, mx);
    CHECK(run(t, (void *[]){vi}, (void *[]){&res}) == HC_OK);
    CHECK_EQ_INT(res, want);
    /* bad axes */
    CHECK(hc_compute_reduce(&A, "bad", xi, 2, (int[]){1, -1}, false, HC_REDUCE_SUM, &err) == NULL);
    CHECK(strstr(err.msg, "bad") != NULL);
    CHECK(hc_compute_reduce(&A, "bad", xi, 1, (int[]){2}, false, HC_REDUCE_SUM, &err) == NULL);
}

/* softmax over the last axis of x[R, C] as four nodes: max, exp, sum, div */
typedef struct sm_ctx {
    const hc_tnode *x, *m, *e, *s;
    int64_t cols;
} sm_ctx;

static hc_expr *sm_max_body(hc_arena *a, hc_var *const *r, void *ctx);
static hc_expr *sm_sum_body(hc_arena *a, hc_var *const *r, void *ctx);
static hc_var *sm_row; /* the row axis the reduce bodies refer to */

static hc_expr *sm_max_body(hc_arena *a, hc_var *const *r, void *ctx) {
    sm_ctx *c = ctx;
    return hc_at(a, c->x, (hc_expr *[]){hc_ref(a, sm_row), hc_ref(a, r[0])});
}
static hc_expr *sm_sum_body(hc_arena *a, hc_var *const *r, void *ctx) {
    sm_ctx *c = ctx;
    return hc_at(a, c->e, (hc_expr *[]){hc_ref(a, sm_row), hc_ref(a, r[0])});
}
static hc_expr *sm_max(hc_arena *a, hc_var *const *ax, void *ctx) {
    sm_row = ax[0];
    return hc_reduce_expr(a, 1, &((sm_ctx *)ctx)->cols, sm_max_body, ctx, HC_REDUCE_MAX);
}
static hc_expr *sm_exp(hc_arena *a, hc_var *const *ax, void *ctx) {
    sm_ctx *c = ctx;
    hc_expr *v = hc_sub(a, hc_at_axes(a, c->x, ax), hc_at_axes(a, c->m, ax));
    return hc_math(a, HC_PRIM_EXP, v, NULL);
}
static hc_expr *sm_sum(hc_arena *a, hc_var *const *ax, void *ctx) {
    sm_row = ax[0];
    return hc_reduce_expr(a, 1, &((sm_ctx *)ctx)->cols, sm_sum_body, ctx, HC_REDUCE_SUM);
}
static hc_expr *sm_div(hc_arena *a, hc_var *const *ax, void *ctx) {
    sm_ctx *c = ctx;
    return hc_div(a, hc_at_axes(a, c->e, ax), hc_at_axes(a, c->s, ax));
}

static void test_softmax(void) {
    enum { R = 5, C = 7 };
    sm_ctx c = {.cols = C};
    c.x = input("x", HC_F32, 2, R, C, 0);
    c.m = hc_compute(&A, "m", 1, (int64_t[]){R}, sm_max, &c);
    c.e = hc_compute(&A, "e", 2, (int64_t[]){R, C}, sm_exp, &c);
    c.s = hc_compute(&A, "s", 1, (int64_t[]){R}, sm_sum, &c);
    hc_tnode *y = hc_compute(&A, "y", 2, (int64_t[]){R, C}, sm_div, &c);
    hc_task *t = hc_task1(&A, "softmax", 1, (hc_tnode **)&c.x, y);
    int n;
    hc_tnode **nodes = hc_task_compute_nodes(&A, t, &n);
    CHECK_EQ_INT(n, 4);
    CHECK(n == 4 && nodes[0] == c.m && nodes[3] == y); /* producers first */
    float x[R * C], out[R * C];
    fill(x, R * C, -3, 3);
    CHECK(run(t, (void *[]){x}, (void *[]){out}) == HC_OK);
    double maxerr = 0;
    for (int i = 0; i < R; i++) {
        double mx = -1e30, sum = 0;
        for (int j = 0; j < C; j++) mx = fmax(mx, x[i * C + j]);
        for (int j = 0; j < C; j++) sum += exp(x[i * C + j] - mx);
        for (int j = 0; j < C; j++)
            maxerr = fmax(maxerr, fabs(out[i * C + j] - exp(x[i * C + j] - mx) / sum));
    }
    CHECK_MSG(maxerr < 1e-6, "softmax err %g", maxerr);
    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_task(&sb, t);
    const char *p = hc_sb_str(&sb);
    CHECK(strstr(p, "task softmax(x: f32[5, 7]) -> (y)") != NULL);
    CHECK(strstr(p, "output y[") != NULL && strstr(p, "  s[") != NULL);
    CHECK(strstr(p, "exp") != NULL && strstr(p, "max") != NULL);
    hc_sb_free(&sb);
}

/* 3x3 max pool, stride 2, padding 1 over x[C, H, W]; padding reads are masked by a
 * select whose false branch is -inf (the out-of-bounds access must not be evaluated) */
typedef struct pool_ctx {
    const hc_tnode *x;
    hc_var *const *ax;
} pool_ctx;

static hc_expr *pool_body(hc_arena *a, hc_var *const *r, void *ctx) {
    pool_ctx *c = ctx;
    hc_expr *h = hc_add(a, hc_sub(a, hc_mul(a, hc_ref(a, c->ax[1]), hc_int(a, 2)), hc_int(a, 1)),
                        hc_ref(a, r[0]));
    hc_expr *w = hc_add(a, hc_sub(a, hc_mul(a, hc_ref(a, c->ax[2]), hc_int(a, 2)), hc_int(a, 1)),
                        hc_ref(a, r[1]));
    hc_expr *hin = hc_and(a, hc_le(a, hc_int(a, 0), h), hc_lt(a, h, hc_int(a, c->x->shape[1])));
    hc_expr *win = hc_and(a, hc_le(a, hc_int(a, 0), w), hc_lt(a, w, hc_int(a, c->x->shape[2])));
    hc_expr *in = hc_and(a, hin, win);
    hc_expr *v = hc_at(a, c->x, (hc_expr *[]){hc_ref(a, c->ax[0]), h, w});
    return hc_select(a, in, v, hc_f32(a, -INFINITY));
}

static hc_expr *pool_fn(hc_arena *a, hc_var *const *ax, void *ctx) {
    pool_ctx c = {ctx, ax};
    return hc_reduce_expr(a, 2, (int64_t[]){3, 3}, pool_body, &c, HC_REDUCE_MAX);
}

static void test_pool(void) {
    enum { C = 2, H = 9, W = 11, OH = 5, OW = 6 };
    hc_tnode *x = input("x", HC_F32, 3, C, H, W);
    hc_tnode *y = hc_compute(&A, "y", 3, (int64_t[]){C, OH, OW}, pool_fn, x);
    hc_task *t = hc_task1(&A, "maxpool", 1, &x, y);
    float in[C * H * W], out[C * OH * OW];
    fill(in, C * H * W, -1, 1);
    CHECK(run(t, (void *[]){in}, (void *[]){out}) == HC_OK);
    int bad = 0;
    for (int c = 0; c < C; c++)
        for (int i = 0; i < OH; i++)
            for (int j = 0; j < OW; j++) {
                float m = -INFINITY;
                for (int r = 0; r < 3; r++)
                    for (int s = 0; s < 3; s++) {
                        int h = 2 * i - 1 + r, w = 2 * j - 1 + s;
                        if (h >= 0 && h < H && w >= 0 && w < W && in[(c * H + h) * W + w] > m)
                            m = in[(c * H + h) * W + w];
                    }
                bad += out[(c * OH + i) * OW + j] != m;
            }
    CHECK_EQ_INT(bad, 0);
}

/* concat along dim 1: out[i, j] = j < 3 ? a[i, j] : b[i, j - 3] */
typedef struct cat_ctx {
    const hc_tnode *a, *b;
} cat_ctx;

static hc_expr *cat_fn(hc_arena *a, hc_var *const *ax, void *ctx) {
    cat_ctx *c = ctx;
    hc_expr *i = hc_ref(a, ax[0]), *j = hc_ref(a, ax[1]);
    hc_expr *n = hc_int(a, c->a->shape[1]);
    return hc_select(a, hc_lt(a, j, n), hc_at(a, c->a, (hc_expr *[]){i, j}),
                     hc_at(a, c->b, (hc_expr *[]){i, hc_sub(a, j, n)}));
}

static void test_concat(void) {
    cat_ctx c = {input("a", HC_U8, 2, 4, 3, 0), input("b", HC_U8, 2, 4, 5, 0)};
    hc_tnode *y = hc_compute(&A, "y", 2, (int64_t[]){4, 8}, cat_fn, &c);
    hc_task *t = hc_task_new(&A, "concat", 2, (hc_tnode *[]){(hc_tnode *)c.a, (hc_tnode *)c.b}, 1,
                             &y);
    uint8_t a[12], b[20], out[32];
    for (int i = 0; i < 12; i++) a[i] = (uint8_t)hc_rng_next(&rng);
    for (int i = 0; i < 20; i++) b[i] = (uint8_t)hc_rng_next(&rng);
    CHECK(run(t, (void *[]){a, b}, (void *[]){out}) == HC_OK);
    int bad = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++)
            bad += out[i * 8 + j] != (j < 3 ? a[i * 3 + j] : b[i * 5 + j - 3]);
    CHECK_EQ_INT(bad, 0);
}

static uint16_t bits16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static void test_casts(void) {
    enum { N = 6 };
    /* f32 -> bf16: exact halfway cases must round to even */
    float in[N] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -2.5f, 65504.0f, 1e-3f, 3.14159f};
    hc_tnode *x = input("x", HC_F32, 1, N, 0, 0);
    hc_tnode *b = hc_compute_cast(&A, "b", x, HC_BF16);
    hc_tnode *h = hc_compute_cast(&A, "h", x, HC_F16);
    hc_tnode *hb = hc_compute_cast(&A, "hb", h, HC_BF16); /* f16 -> bf16 */
    hc_tnode *bf = hc_compute_cast(&A, "bf", b, HC_F32);
    hc_task *t = hc_task_new(&A, "casts", 1, &x, 4, (hc_tnode *[]){b, h, hb, bf});
    uint16_t ob[N], ohb[N];
    _Float16 oh[N];
    float obf[N];
    CHECK(run(t, (void *[]){in}, (void *[]){ob, oh, ohb, obf}) == HC_OK);
    CHECK_EQ_INT(ob[0], bits16(1.0f));                 /* tie -> even (down) */
    CHECK_EQ_INT(ob[1], bits16(1.0f + 2 * 0x1p-7f));   /* tie -> even (up) */
    CHECK_EQ_INT(ob[2], bits16(-2.5f));
    CHECK_EQ_INT(ob[3], bits16(65536.0f));             /* 65504 rounds up to 2^16 */
    for (int i = 0; i < N; i++) {
        CHECK(oh[i] == (_Float16)in[i]);
        float fb;
        uint32_t u = (uint32_t)ob[i] << 16;
        memcpy(&fb, &u, 4);
        CHECK(obf[i] == fb);
    }
    /* 1e-3 in f16 is inexact; its bf16 rounding goes through the f16 value */
    float h5 = (float)(_Float16)1e-3f;
    uint32_t u5;
    memcpy(&u5, &h5, 4);
    u5 += 0x7FFF + ((u5 >> 16) & 1);
    CHECK_EQ_INT(ohb[4], u5 >> 16);

    /* int casts follow C: float -> int truncates; to unsigned wraps modulo 2^n */
    int32_t iv[N] = {300, -1, 127, -129, 70000, -70000};
    float fv[N] = {2.9f, -2.9f, 127.5f, -0.5f, 100.25f, -100.75f};
    hc_tnode *xi = input("xi", HC_I32, 1, N, 0, 0), *xf = input("xf", HC_F32, 1, N, 0, 0);
    hc_tnode *u8 = hc_compute_cast(&A, "u8", xi, HC_U8);
    hc_tnode *i16 = hc_compute_cast(&A, "i16", xi, HC_I16);
    hc_tnode *i8 = hc_compute_cast(&A, "i8", xf, HC_I8);
    hc_tnode *f64 = hc_compute_cast(&A, "f64", xi, HC_F64);
    hc_tnode *bl = hc_compute_cast(&A, "bl", xf, HC_BOOL);
    hc_task *ti = hc_task_new(&A, "intcasts", 2, (hc_tnode *[]){xi, xf}, 5,
                              (hc_tnode *[]){u8, i16, i8, f64, bl});
    uint8_t ou8[N], obl[N];
    int16_t oi16[N];
    int8_t oi8[N];
    double of64[N];
    CHECK(run(ti, (void *[]){iv, fv}, (void *[]){ou8, oi16, oi8, of64, obl}) == HC_OK);
    for (int i = 0; i < N; i++) {
        CHECK_EQ_INT(ou8[i], (uint8_t)iv[i]);
        CHECK_EQ_INT(oi16[i], (int16_t)iv[i]);
        CHECK_EQ_INT(oi8[i], (int8_t)fv[i]);
        CHECK(of64[i] == (double)iv[i]);
        CHECK_EQ_INT(obl[i], fv[i] != 0);
    }
}

/* integer arithmetic in the node's own width, C semantics */
static hc_expr *int_ops(hc_arena *a, hc_expr *x, hc_expr *y, void *ctx) {
    int which = *(int *)ctx;
    switch (which) {
    case 0: return hc_div(a, x, y);
    case 1: return hc_mod(a, x, y);
    case 2: return hc_add(a, x, y);
    default: return hc_binary(a, HC_OP_SHR, x, hc_cast(a, x->type, hc_int(a, 2)));
    }
}

static void test_int_semantics(void) {
    enum { N = 5 };
    int8_t x[N] = {100, -100, 7, -7, -128}, y[N] = {100, 100, -2, 2, 3};
    hc_error err = {0};
    for (int w = 0; w < 4; w++) {
        hc_tnode *a = input("a", HC_I8, 1, N, 0, 0), *b = input("b", HC_I8, 1, N, 0, 0);
        hc_tnode *c = hc_compute_map2(&A, "c", a, b, int_ops, &w, &err);
        CHECK(c && c->dtype == HC_I8);
        hc_task *t = hc_task_new(&A, "intops", 2, (hc_tnode *[]){a, b}, 1, &c);
        int8_t out[N];
        CHECK(run(t, (void *[]){x, y}, (void *[]){out}) == HC_OK);
        for (int i = 0; i < N; i++) {
            int want = w == 0 ? x[i] / y[i] : w == 1 ? x[i] % y[i] : w == 2 ? (int8_t)(x[i] + y[i])
                                                                           : x[i] >> 2;
            CHECK_MSG(out[i] == want, "op %d elem %d: %d vs %d", w, i, out[i], want);
        }
    }
    /* integer division by zero is an error, not a crash */
    hc_tnode *a = input("a", HC_I32, 1, 2, 0, 0), *b = input("b", HC_I32, 1, 2, 0, 0);
    int zero = 0;
    hc_tnode *c = hc_compute_map2(&A, "q", a, b, int_ops, &zero, &err);
    hc_task *t = hc_task_new(&A, "div0", 2, (hc_tnode *[]){a, b}, 1, &c);
    int32_t xa[2] = {1, 2}, xb[2] = {1, 0}, out[2];
    CHECK(hc_interpret_task(t, (void *[]){xa, xb}, (void *[]){out}, &err) == HC_ERR_INVALID);
    CHECK(strstr(err.msg, "division by zero") && strstr(err.msg, "q"));
}

static hc_expr *f16_mul(hc_arena *a, hc_expr *x, hc_expr *y, void *ctx) {
    return hc_add(a, hc_mul(a, x, y), x);
}

static void test_f16_arith(void) {
    enum { N = 64 };
    hc_error err = {0};
    hc_tnode *a = input("a", HC_F16, 1, N, 0, 0), *b = input("b", HC_F16, 1, N, 0, 0);
    hc_tnode *c = hc_compute_map2(&A, "c", a, b, f16_mul, NULL, &err);
    CHECK(c && c->dtype == HC_F16);
    hc_task *t = hc_task_new(&A, "f16", 2, (hc_tnode *[]){a, b}, 1, &c);
    _Float16 x[N], y[N], out[N];
    for (int i = 0; i < N; i++) {
        x[i] = (_Float16)hc_rng_uniform(&rng, -4, 4);
        y[i] = (_Float16)hc_rng_uniform(&rng, -4, 4);
    }
    CHECK(run(t, (void *[]){x, y}, (void *[]){out}) == HC_OK);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        _Float16 p = (_Float16)((float)x[i] * (float)y[i]); /* each op rounds to f16 */
        bad += out[i] != (_Float16)((float)p + (float)x[i]);
    }
    CHECK_EQ_INT(bad, 0);
}

/* C[i, j] = sum_k A[i, k] * B[k, j] */
typedef struct mm_ctx {
    const hc_tnode *a, *b;
    hc_var *const *ax;
} mm_ctx;

static hc_expr *mm_body(hc_arena *a, hc_var *const *r, void *ctx) {
    mm_ctx *c = ctx;
    hc_expr *k = hc_ref(a, r[0]);
    return hc_mul(a, hc_at(a, c->a, (hc_expr *[]){hc_ref(a, c->ax[0]), k}),
                  hc_at(a, c->b, (hc_expr *[]){k, hc_ref(a, c->ax[1])}));
}

static hc_expr *mm_fn(hc_arena *a, hc_var *const *ax, void *ctx) {
    mm_ctx c = *(mm_ctx *)ctx;
    c.ax = ax;
    return hc_reduce_expr(a, 1, &c.a->shape[1], mm_body, &c, HC_REDUCE_SUM);
}

static void test_matmul(void) {
    enum { M = 5, K = 7, N = 3 };
    mm_ctx c = {input("A", HC_F32, 2, M, K, 0), input("B", HC_F32, 2, K, N, 0), NULL};
    hc_tnode *y = hc_compute(&A, "C", 2, (int64_t[]){M, N}, mm_fn, &c);
    hc_task *t = hc_task_new(&A, "matmul", 2, (hc_tnode *[]){(hc_tnode *)c.a, (hc_tnode *)c.b},
                             1, &y);
    float a[M * K], b[K * N], out[M * N];
    fill(a, M * K, -1, 1), fill(b, K * N, -1, 1);
    CHECK(run(t, (void *[]){a, b}, (void *[]){out}) == HC_OK);
    double maxerr = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += (double)a[i * K + k] * b[k * N + j];
            maxerr = fmax(maxerr, fabs(s - out[i * N + j]));
        }
    CHECK_MSG(maxerr < 1e-5, "matmul err %g", maxerr);
}

static hc_expr *where_fn(hc_arena *a, hc_expr *const *xs, void *ctx) {
    return hc_select(a, xs[0], xs[1], xs[2]);
}

static void test_shape_helpers(void) {
    hc_error err = {0};
    /* Where(cond[4, 1], x[1, 5], y[5]) -> [4, 5] */
    hc_tnode *c = input("c", HC_BOOL, 2, 4, 1, 0), *x = input("x", HC_F32, 2, 1, 5, 0);
    hc_tnode *y = input("y", HC_F32, 1, 5, 0, 0);
    hc_tnode *w = hc_compute_mapn(&A, "w", 3, (const hc_tnode *[]){c, x, y}, where_fn, NULL, &err);
    CHECK(w && w->ndim == 2 && w->shape[0] == 4 && w->shape[1] == 5);
    hc_task *t = hc_task_new(&A, "where", 3, (hc_tnode *[]){c, x, y}, 1, &w);
    uint8_t cv[4] = {1, 0, 0, 1};
    float xv[5], yv[5], out[20];
    fill(xv, 5, -1, 1), fill(yv, 5, -1, 1);
    CHECK(run(t, (void *[]){cv, xv, yv}, (void *[]){out}) == HC_OK);
    int bad = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++) bad += out[i * 5 + j] != (cv[i] ? xv[j] : yv[j]);
    CHECK_EQ_INT(bad, 0);
    hc_tnode *z = input("z", HC_F32, 1, 3, 0, 0);
    CHECK(!hc_compute_mapn(&A, "w2", 2, (const hc_tnode *[]){x, z}, where_fn, NULL, &err));
    CHECK(strstr(err.msg, "w2") != NULL);

    /* transpose helper: y dim d = x dim perm[d]; its inverse map is derived */
    hc_tnode *x3 = input("x3", HC_I32, 3, 2, 3, 4);
    hc_tnode *tr = hc_compute_transpose(&A, "tr", x3, (int[]){2, 0, 1}, &err);
    CHECK(tr && tr->shape[0] == 4 && tr->shape[1] == 2 && tr->shape[2] == 3);
    hc_task *tt = hc_task1(&A, "tr", 1, &x3, tr);
    CHECK(tt->inverse[0] != NULL);
    int32_t in[24], o[24];
    for (int i = 0; i < 24; i++) in[i] = i * 7 - 50;
    CHECK(run(tt, (void *[]){in}, (void *[]){o}) == HC_OK);
    bad = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 3; k++) bad += o[(i * 2 + j) * 3 + k] != in[(j * 3 + k) * 4 + i];
    CHECK_EQ_INT(bad, 0);
    CHECK(!hc_compute_transpose(&A, "bad", x3, (int[]){0, 0, 1}, &err));
    CHECK(strstr(err.msg, "permutation") != NULL);

    /* reshape keeps the row-major order */
    hc_tnode *rs = hc_compute_reshape(&A, "rs", x3, 2, (int64_t[]){6, 4}, &err);
    CHECK(rs != NULL);
    hc_task *tr2 = hc_task1(&A, "reshape", 1, &x3, rs);
    CHECK(run(tr2, (void *[]){in}, (void *[]){o}) == HC_OK);
    CHECK(memcmp(in, o, sizeof in) == 0);
    CHECK(!hc_compute_reshape(&A, "rs2", x3, 2, (int64_t[]){5, 5}, &err));
    CHECK(strstr(err.msg, "rs2") && strstr(err.msg, "24"));
}

static void test_layout_helpers(void) {
    hc_error err = {0};
    hc_tnode *x = input("x", HC_I32, 2, 3, 4, 0), *y = input("y", HC_I32, 2, 3, 2, 0);
    hc_tnode *z = input("z", HC_I32, 2, 3, 1, 0);
    int32_t xv[12], yv[6], zv[3], out[64];
    for (int i = 0; i < 12; i++) xv[i] = 100 + i;
    for (int i = 0; i < 6; i++) yv[i] = 200 + i;
    for (int i = 0; i < 3; i++) zv[i] = 300 + i;
    /* concat of three along the last axis */
    hc_tnode *c = hc_compute_concat(&A, "cat", 3, (const hc_tnode *[]){x, y, z}, -1, &err);
    CHECK(c && c->shape[0] == 3 && c->shape[1] == 7);
    hc_task *t = hc_task_new(&A, "cat3", 3, (hc_tnode *[]){x, y, z}, 1, &c);
    CHECK(run(t, (void *[]){xv, yv, zv}, (void *[]){out}) == HC_OK);
    int bad = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 7; j++) {
            int want = j < 4 ? xv[i * 4 + j] : j < 6 ? yv[i * 2 + j - 4] : zv[i];
            bad += out[i * 7 + j] != want;
        }
    CHECK_EQ_INT(bad, 0);
    hc_tnode *w = input("w", HC_I32, 2, 2, 4, 0);
    CHECK(!hc_compute_concat(&A, "cat_bad", 2, (const hc_tnode *[]){x, w}, 1, &err));
    CHECK(strstr(err.msg, "cat_bad") && strstr(err.msg, "w"));
    /* slice rows 2, 0 (step -2) and columns 1, 2, 3 */
    hc_tnode *sl = hc_compute_slice(&A, "sl", x, (int64_t[]){2, 1}, (int64_t[]){-2, 1},
                                    (int64_t[]){2, 3}, &err);
    CHECK(sl != NULL);
    t = hc_task1(&A, "slice", 1, &x, sl);
    CHECK(run(t, (void *[]){xv}, (void *[]){out}) == HC_OK);
    bad = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) bad += out[i * 3 + j] != xv[(2 - 2 * i) * 4 + 1 + j];
    CHECK_EQ_INT(bad, 0);
    CHECK(!hc_compute_slice(&A, "sl_bad", x, (int64_t[]){0, 1}, (int64_t[]){1, 2},
                            (int64_t[]){3, 3}, &err));
    CHECK(strstr(err.msg, "sl_bad") != NULL);
    /* pad 1 before / 2 after on rows, crop one column at the end */
    hc_tnode *pd = hc_compute_pad(&A, "pd", x, (int64_t[]){1, 0}, (int64_t[]){2, -1}, -7, &err);
    CHECK(pd && pd->shape[0] == 6 && pd->shape[1] == 3);
    t = hc_task1(&A, "pad", 1, &x, pd);
    CHECK(run(t, (void *[]){xv}, (void *[]){out}) == HC_OK);
    bad = 0;
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 3; j++)
            bad += out[i * 3 + j] != (i >= 1 && i < 4 ? xv[(i - 1) * 4 + j] : -7);
    CHECK_EQ_INT(bad, 0);
    /* expand [3, 1] to [2, 3, 5] */
    hc_tnode *ex = hc_compute_expand(&A, "ex", z, 3, (int64_t[]){2, 1, 5}, &err);
    CHECK(ex && ex->ndim == 3 && ex->shape[0] == 2 && ex->shape[1] == 3 && ex->shape[2] == 5);
    t = hc_task1(&A, "expand", 1, &z, ex);
    CHECK(run(t, (void *[]){zv}, (void *[]){out}) == HC_OK);
    bad = 0;
    for (int i = 0; i < 30; i++) bad += out[i] != zv[(i / 5) % 3];
    CHECK_EQ_INT(bad, 0);
}

static hc_expr *scale_fn(hc_arena *a, hc_expr *x, void *ctx) {
    return hc_mul(a, x, hc_f32(a, 2));
}

/* inverse maps are derived through intermediate injective nodes */
static void test_inverse_through_nodes(void) {
    hc_error err = {0};
    hc_tnode *x = input("x", HC_F32, 2, 3, 5, 0), *b = input("b", HC_F32, 1, 3, 0, 0);
    hc_tnode *tr = hc_compute_transpose(&A, "tr", x, (int[]){1, 0}, &err);
    hc_tnode *sc = hc_compute_map1(&A, "sc", tr, scale_fn, NULL);
    hc_tnode *y = hc_compute_binop(&A, "y", HC_OP_ADD, sc, b, &err); /* [5, 3] + [3] */
    hc_task *t = hc_task_new(&A, "chain", 2, (hc_tnode *[]){x, b}, 1, &y);
    hc_inverse_map *m = t->inverse[0];
    CHECK(m != NULL && t->inverse[1] == NULL);
    if (m) { /* x[x0, x1] lands at y[x1, x0] */
        CHECK(m->output_idx[0]->u.var == m->input_axes[1]);
        CHECK(m->output_idx[1]->u.var == m->input_axes[0]);
    }
    /* x + transpose(transpose(x)) reads x[i, j] twice: the same element, still invertible */
    hc_tnode *back = hc_compute_transpose(&A, "t2", tr, (int[]){1, 0}, &err);
    hc_tnode *sum = hc_compute_binop(&A, "s", HC_OP_ADD, x, back, &err);
    CHECK(hc_task1(&A, "twice", 1, &x, sum)->inverse[0] != NULL);
    /* sq + transpose(sq) reads two different elements: no inverse */
    hc_tnode *sq = input("sq", HC_F32, 2, 4, 4, 0);
    hc_tnode *sqt = hc_compute_transpose(&A, "sqt", sq, (int[]){1, 0}, &err);
    hc_tnode *sym = hc_compute_binop(&A, "sym", HC_OP_ADD, sq, sqt, &err);
    CHECK(hc_task1(&A, "sym", 1, &sq, sym)->inverse[0] == NULL);
}

static void test_argreduce(void) {
    hc_error err = {0};
    /* small integers so ties happen */
    hc_tnode *x = input("x", HC_I8, 3, 3, 6, 4);
    int8_t xv[72];
    for (int i = 0; i < 72; i++) xv[i] = (int8_t)(hc_rng_next(&rng) % 4);
    for (int mode = 0; mode < 4; mode++) {
        bool is_max = mode & 1, last = mode & 2;
        hc_tnode *y = hc_compute_argreduce(&A, "arg", x, -2, mode == 1, is_max, last, &err);
        CHECK(y && y->dtype == HC_I64 && y->ndim == (mode == 1 ? 3 : 2));
        if (!y) continue;
        hc_task *t = hc_task1(&A, "arg", 1, &x, y);
        int64_t out[12];
        CHECK(run(t, (void *[]){xv}, (void *[]){out}) == HC_OK);
        int bad = 0;
        for (int i = 0; i < 3; i++)
            for (int l = 0; l < 4; l++) {
                int best = 0;
                for (int j = 1; j < 6; j++) {
                    int v = xv[(i * 6 + j) * 4 + l], b = xv[(i * 6 + best) * 4 + l];
                    bool better = is_max ? v > b : v < b;
                    if (better || (last && v == b)) best = j;
                }
                bad += out[i * 4 + l] != best;
            }
        CHECK_MSG(bad == 0, "mode %d", mode);
    }
    CHECK(!hc_compute_argreduce(&A, "bad", x, 3, false, true, false, &err));
}

/* shift by one reads past the end: the error names the tensor and the index */
static hc_expr *shift_fn(hc_arena *a, hc_var *const *ax, void *ctx) {
    return hc_at(a, ctx, (hc_expr *[]){hc_add(a, hc_ref(a, ax[0]), hc_int(a, 1))});
}

static void test_out_of_bounds(void) {
    hc_tnode *x = input("xs", HC_F32, 1, 4, 0, 0);
    hc_tnode *y = hc_compute(&A, "shifted", 1, (int64_t[]){4}, shift_fn, x);
    hc_task *t = hc_task1(&A, "oob", 1, &x, y);
    float in[4] = {1, 2, 3, 4}, out[4];
    hc_error err = {0};
    CHECK(hc_interpret_task(t, (void *[]){in}, (void *[]){out}, &err) == HC_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "xs") && strstr(err.msg, "[4]") && strstr(err.msg, "shifted"),
              "%s", err.msg);
    CHECK(t->inverse[0] == NULL); /* x[i + 1] is not a permutation of the axes */
}

/* Each level reads the previous one twice: without materializing intermediates the
 * interpreter would need 2^40 evaluations. */
static hc_expr *twice_fn(hc_arena *a, hc_var *const *ax, void *ctx) {
    hc_expr *prev = hc_at_axes(a, ctx, ax);
    return hc_mul(a, hc_add(a, prev, prev), hc_f32(a, 0.5));
}

static void test_materialize_once(void) {
    hc_tnode *x = input("x", HC_F32, 1, 8, 0, 0), *cur = x;
    for (int i = 0; i < 40; i++) cur = hc_compute(&A, "lvl", 1, x->shape, twice_fn, cur);
    hc_task *t = hc_task1(&A, "deep", 1, &x, cur);
    float in[8], out[8];
    fill(in, 8, -1, 1);
    double t0 = hc_now_ms();
    CHECK(run(t, (void *[]){in}, (void *[]){out}) == HC_OK);
    CHECK(hc_now_ms() - t0 < 1000);
    int bad = 0;
    for (int i = 0; i < 8; i++) bad += out[i] != in[i];
    CHECK_EQ_INT(bad, 0);
}

int main(void) {
    hc_arena_init(&A);
    test_broadcast_add();
    test_relu_and_inverse();
    test_transpose();
    test_reduce_kinds();
    test_softmax();
    test_pool();
    test_concat();
    test_casts();
    test_int_semantics();
    test_f16_arith();
    test_matmul();
    test_shape_helpers();
    test_layout_helpers();
    test_inverse_through_nodes();
    test_argreduce();
    test_out_of_bounds();
    test_materialize_once();
    hc_arena_free(&A);
    TEST_DONE();
}
