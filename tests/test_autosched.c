/* test_autosched.c — every task auto-scheduled, compiled (all kernels in one module, one
 * compiler run), run on random data with 1 and 2 threads, and compared with the
 * reference interpreter. Shapes are awkward on purpose: 1, primes, non-multiples of the
 * vector width, and sizes big enough to run in parallel.
 * HIDETC_TEST_VERBOSE=1 prints every scheduled program. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "target/cpu/cpu.h"
#include "target/cpu/jit.h"
#include "task/task.h"
#include "test.h"

static hc_arena A;
static hc_rng rng = {777};
static hc_error err;

typedef struct tcase {
    hc_task *t;
    double lo, hi; /* input value range */
    double tol;    /* relative tolerance for float outputs */
    hc_func *f;
} tcase;

static tcase cases[128];
static int ncases;

static void add(hc_task *t, double lo, double hi, double tol) {
    HC_ASSERT(ncases < (int)HC_ARRAY_LEN(cases));
    cases[ncases++] = (tcase){t, lo, hi, tol, NULL};
}

static hc_tnode *in(const char *name, hc_dtype t, int n, const int64_t *shape) {
    return hc_tensor_input(&A, name, t, n, shape);
}
#define SHAPE(...) (sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

/* ---- task builders ------------------------------------------------------------------ */
static void binop_case(const char *name, hc_binop op, hc_dtype t, int nx, const int64_t *sx,
                       int ny, const int64_t *sy) {
    hc_tnode *x = in("x", t, nx, sx), *y = in("y", t, ny, sy);
    hc_tnode *z = hc_compute_binop(&A, "z", op, x, y, &err);
    HC_ASSERT(z);
    add(hc_task_new(&A, name, 2, (hc_tnode *[]){x, y}, 1, &z), -3, 3, 1e-6);
}

static hc_expr *relu_fn(hc_arena *a, hc_expr *x, void *ctx) {
    return hc_max(a, x, hc_const_num(a, x->type->dtype, 0));
}

static void relu_case(const char *name, hc_dtype t, int n, const int64_t *s) {
    hc_tnode *x = in("x", t, n, s);
    add(hc_task1(&A, name, 1, &x, hc_compute_map1(&A, "y", x, relu_fn, NULL)), -3, 3, 0);
}

typedef struct perm_ctx {
    const hc_tnode *x;
    const int *perm; /* output dim d reads input dim perm[d] */
} perm_ctx;

static hc_expr *perm_fn(hc_arena *a, hc_var *const *ax, void *ctx) {
    const perm_ctx *c = ctx;
    hc_expr *idx[HC_MAX_DIMS];
    for (int d = 0; d < c->x->ndim; d++) idx[c->perm[d]] = hc_ref(a, ax[d]);
    return hc_at(a, c->x, idx);
}

static void transpose_case(const char *name, hc_dtype t, int n, const int64_t *s, const int *perm) {
    hc_tnode *x = in("x", t, n, s);
    int64_t os[HC_MAX_DIMS];
    for (int d = 0; d < n; d++) os[d] = s[perm[d]];
    perm_ctx c = {x, perm};
    hc_tnode *y = hc_compute(&A, "y", n, os, perm_fn, &c);
    add(hc_task1(&A, name, 1, &x, y), -100, 100, 0);
}

static void reduce_case(const char *name, hc_dtype t, hc_reduce_kind k, int n, const int64_t *s,
                        int naxes, const int *axes, bool keep) {
    hc_tnode *x = in("x", t, n, s);
    hc_tnode *y = hc_compute_reduce(&A, "y", x, naxes, axes, keep, k, &err);
    HC_ASSERT(y);
    bool prod = k == HC_REDUCE_PROD;
    double lo = hc_dtype_is_float(t) ? (prod ? 0.9 : -2) : (prod ? 1 : -20);
    double hi = hc_dtype_is_float(t) ? (prod ? 1.1 : 2) : (prod ? 2 : 20);
    add(hc_task1(&A, name, 1, &x, y), lo, hi, 2e-5);
}

static void softmax_case(const char *name, int64_t rows, int64_t cols) {
    hc_tnode *x = in("x", HC_F32, SHAPE(rows, cols));
    hc_tnode *m = hc_compute_reduce(&A, "m", x, 1, (int[]){-1}, true, HC_REDUCE_MAX, &err);
    hc_tnode *d = hc_compute_binop(&A, "d", HC_OP_SUB, x, m, &err);
    hc_tnode *e = hc_compute_prim(&A, "e", HC_PRIM_EXP, d);
    hc_tnode *s = hc_compute_reduce(&A, "s", e, 1, (int[]){-1}, true, HC_REDUCE_SUM, &err);
    hc_tnode *y = hc_compute_binop(&A, "y", HC_OP_DIV, e, s, &err);
    add(hc_task1(&A, name, 1, &x, y), -4, 4, 1e-5);
}

static hc_expr *add_eps(hc_arena *a, hc_expr *x, void *ctx) {
    return hc_add(a, x, hc_f32(a, 1e-5));
}

/* y = (x - mean) * rsqrt(var + eps) over the last axis, then a broadcast scale */
static void layernorm_case(const char *name, int64_t rows, int64_t cols) {
    hc_tnode *x = in("x", HC_F32, SHAPE(rows, cols)), *g = in("g", HC_F32, SHAPE(cols));
    hc_tnode *mean = hc_compute_reduce(&A, "mean", x, 1, (int[]){-1}, true, HC_REDUCE_AVG, &err);
    hc_tnode *d = hc_compute_binop(&A, "d", HC_OP_SUB, x, mean, &err);
    hc_tnode *sq = hc_compute_binop(&A, "sq", HC_OP_MUL, d, d, &err);
    hc_tnode *var = hc_compute_reduce(&A, "var", sq, 1, (int[]){-1}, true, HC_REDUCE_AVG, &err);
    hc_tnode *ve = hc_compute_map1(&A, "ve", var, add_eps, NULL);
    hc_tnode *r = hc_compute_prim(&A, "r", HC_PRIM_RSQRT, ve);
    hc_tnode *n = hc_compute_binop(&A, "n", HC_OP_MUL, d, r, &err);
    hc_tnode *y = hc_compute_binop(&A, "y", HC_OP_MUL, n, g, &err);
    add(hc_task_new(&A, name, 2, (hc_tnode *[]){x, g}, 1, &y), -2, 2, 1e-4);
}

typedef struct pool_ctx {
    const hc_tnode *x;
    hc_var *const *ax;
} pool_ctx;

static hc_expr *pool_body(hc_arena *a, hc_var *const *r, void *ctx) {
    const pool_ctx *c = ctx;
    hc_expr *h = hc_add(a, hc_sub(a, hc_mul(a, hc_ref(a, c->ax[1]), hc_int(a, 2)), hc_int(a, 1)),
                        hc_ref(a, r[0]));
    hc_expr *w = hc_add(a, hc_sub(a, hc_mul(a, hc_ref(a, c->ax[2]), hc_int(a, 2)), hc_int(a, 1)),
                        hc_ref(a, r[1]));
    hc_expr *hin = hc_and(a, hc_le(a, hc_int(a, 0), h), hc_lt(a, h, hc_int(a, c->x->shape[1])));
    hc_expr *win = hc_and(a, hc_le(a, hc_int(a, 0), w), hc_lt(a, w, hc_int(a, c->x->shape[2])));
    hc_expr *ok = hc_and(a, hin, win);
    return hc_select(a, ok, hc_at(a, c->x, (hc_expr *[]){hc_ref(a, c->ax[0]), h, w}),
                     hc_f32(a, -INFINITY));
}

static hc_expr *pool_fn(hc_arena *a, hc_var *const *ax, void *ctx) {
    pool_ctx c = {ctx, ax};
    return hc_reduce_expr(a, 2, (int64_t[]){3, 3}, pool_body, &c, HC_REDUCE_MAX);
}

/* 3x3 max pool, stride 2, padding 1 over [C, H, W] */
static void pool_case(const char *name, int64_t c, int64_t h, int64_t w) {
    hc_tnode *x = in("x", HC_F32, SHAPE(c, h, w));
    int64_t os[3] = {c, (h + 1) / 2, (w + 1) / 2};
    add(hc_task1(&A, name, 1, &x, hc_compute(&A, "y", 3, os, pool_fn, x)), -2, 2, 0);
}

typedef struct cat_ctx {
    const hc_tnode *a, *b;
} cat_ctx;

static hc_expr *cat_fn(hc_arena *a, hc_var *const *ax, void *ctx) {
    const cat_ctx *c = ctx;
    hc_expr *i = hc_ref(a, ax[0]), *j = hc_ref(a, ax[1]), *n = hc_int(a, c->a->shape[1]);
    return hc_select(a, hc_lt(a, j, n), hc_at(a, c->a, (hc_expr *[]){i, j}),
                     hc_at(a, c->b, (hc_expr *[]){i, hc_sub(a, j, n)}));
}

static void concat_case(const char *name, hc_dtype t, int64_t r, int64_t ca, int64_t cb) {
    cat_ctx c = {in("a", t, SHAPE(r, ca)), in("b", t, SHAPE(r, cb))};
    hc_tnode *y = hc_compute(&A, "y", 2, (int64_t[]){r, ca + cb}, cat_fn, &c);
    add(hc_task_new(&A, name, 2, (hc_tnode *[]){(hc_tnode *)c.a, (hc_tnode *)c.b}, 1, &y), -50,
        50, 0);
}

static void cast_case(const char *name, hc_dtype from, hc_dtype to, int n, const int64_t *s,
                      double lo, double hi) {
    hc_tnode *x = in("x", from, n, s);
    add(hc_task1(&A, name, 1, &x, hc_compute_cast(&A, "y", x, to)), lo, hi, 0);
}

typedef struct mm_ctx {
    const hc_tnode *a, *b;
    hc_var *const *ax;
} mm_ctx;

static hc_expr *mm_body(hc_arena *a, hc_var *const *r, void *ctx) {
    const mm_ctx *c = ctx;
    hc_expr *k = hc_ref(a, r[0]);
    return hc_mul(a, hc_at(a, c->a, (hc_expr *[]){hc_ref(a, c->ax[0]), k}),
                  hc_at(a, c->b, (hc_expr *[]){k, hc_ref(a, c->ax[1])}));
}

static hc_expr *mm_fn(hc_arena *a, hc_var *const *ax, void *ctx) {
    mm_ctx c = *(const mm_ctx *)ctx;
    c.ax = ax;
    return hc_reduce_expr(a, 1, &c.a->shape[1], mm_body, &c, HC_REDUCE_SUM);
}

static void matmul_case(const char *name, hc_dtype t, int64_t m, int64_t k, int64_t n) {
    mm_ctx c = {in("A", t, SHAPE(m, k)), in("B", t, SHAPE(k, n)), NULL};
    hc_tnode *y = hc_compute(&A, "C", 2, (int64_t[]){m, n}, mm_fn, &c);
    add(hc_task_new(&A, name, 2, (hc_tnode *[]){(hc_tnode *)c.a, (hc_tnode *)c.b}, 1, &y), -1, 1,
        2e-5);
}

/* out[i] = max_k x[i, k] - min_k x[i, k]: two reductions in one node */
static hc_expr *row_max(hc_arena *a, hc_var *const *r, void *ctx) {
    const mm_ctx *c = ctx;
    return hc_at(a, c->a, (hc_expr *[]){hc_ref(a, c->ax[0]), hc_ref(a, r[0])});
}

static hc_expr *range_fn(hc_arena *a, hc_var *const *ax, void *ctx) {
    mm_ctx c = {ctx, NULL, ax};
    hc_expr *mx = hc_reduce_expr(a, 1, &c.a->shape[1], row_max, &c, HC_REDUCE_MAX);
    hc_expr *mn = hc_reduce_expr(a, 1, &c.a->shape[1], row_max, &c, HC_REDUCE_MIN);
    return hc_sub(a, mx, mn);
}

/* out[i] = sum_k (x[i, k] - max_j x[i, j]): a reduce nested in a reduce's value */
static hc_expr *nested_body(hc_arena *a, hc_var *const *r, void *ctx) {
    const mm_ctx *c = ctx;
    hc_expr *mx = hc_reduce_expr(a, 1, &c->a->shape[1], row_max, (void *)c, HC_REDUCE_MAX);
    return hc_sub(a, hc_at(a, c->a, (hc_expr *[]){hc_ref(a, c->ax[0]), hc_ref(a, r[0])}), mx);
}

static hc_expr *nested_fn(hc_arena *a, hc_var *const *ax, void *ctx) {
    mm_ctx c = {ctx, NULL, ax};
    return hc_reduce_expr(a, 1, &c.a->shape[1], nested_body, &c, HC_REDUCE_SUM);
}

/* out[i] = i < rows(x) ? sum_k x[i, k] : -1 over more rows than x has: the reduce may
 * only run for valid rows */
static hc_expr *guarded_fn(hc_arena *a, hc_var *const *ax, void *ctx) {
    mm_ctx c = {ctx, NULL, ax};
    hc_expr *sum = hc_reduce_expr(a, 1, &c.a->shape[1], row_max, &c, HC_REDUCE_SUM);
    hc_expr *ok = hc_lt(a, hc_ref(a, ax[0]), hc_int(a, c.a->shape[0]));
    return hc_select(a, ok, sum, hc_f32(a, -1));
}

static void guarded_case(const char *name, int64_t r, int64_t cols, int64_t out_rows) {
    hc_tnode *x = in("x", HC_F32, SHAPE(r, cols));
    hc_tnode *y = hc_compute(&A, "y", 1, (int64_t[]){out_rows}, guarded_fn, x);
    add(hc_task1(&A, name, 1, &x, y), -2, 2, 1e-5);
}

static void row_case(const char *name, hc_compute_fn f, int64_t r, int64_t cols) {
    hc_tnode *x = in("x", HC_F32, SHAPE(r, cols));
    add(hc_task1(&A, name, 1, &x, hc_compute(&A, "y", 1, (int64_t[]){r}, f, x)), -2, 2, 1e-5);
}

static hc_expr *fma_fn(hc_arena *a, hc_expr *x, hc_expr *y, void *ctx) {
    return hc_add(a, hc_mul(a, x, y), x);
}

static void fma_case(const char *name, hc_dtype t, int n, const int64_t *s, double tol) {
    hc_tnode *x = in("x", t, n, s), *y = in("y", t, n, s);
    hc_tnode *z = hc_compute_map2(&A, "z", x, y, fma_fn, NULL, &err);
    add(hc_task_new(&A, name, 2, (hc_tnode *[]){x, y}, 1, &z), -4, 4, tol);
}

/* two outputs, the second reading the first (an output used by another node) */
static void two_outputs_case(const char *name, int64_t r, int64_t c) {
    hc_tnode *x = in("x", HC_F32, SHAPE(r, c));
    hc_tnode *e = hc_compute_prim(&A, "e", HC_PRIM_TANH, x);
    hc_tnode *s = hc_compute_reduce(&A, "s", e, 1, (int[]){0}, false, HC_REDUCE_SUM, &err);
    add(hc_task_new(&A, name, 1, &x, 2, (hc_tnode *[]){e, s}), -2, 2, 1e-5);
}

static hc_expr *where_fn(hc_arena *a, hc_expr *const *xs, void *ctx) {
    return hc_select(a, hc_lt(a, xs[0], hc_const_num(a, xs[0]->type->dtype, 0)), xs[1], xs[2]);
}

static void where_case(const char *name) {
    hc_tnode *c = in("c", HC_F32, SHAPE(5, 1, 1)), *x = in("x", HC_F32, SHAPE(1, 7, 33));
    hc_tnode *y = in("y", HC_F32, SHAPE(33));
    hc_tnode *w = hc_compute_mapn(&A, "w", 3, (const hc_tnode *[]){c, x, y}, where_fn, NULL, &err);
    add(hc_task_new(&A, name, 3, (hc_tnode *[]){c, x, y}, 1, &w), -1, 1, 0);
}

static void reshape_case(const char *name, int n, const int64_t *s, int m, const int64_t *to) {
    hc_tnode *x = in("x", HC_F32, n, s);
    hc_tnode *y = hc_compute_reshape(&A, "y", x, m, to, &err);
    HC_ASSERT(y);
    add(hc_task1(&A, name, 1, &x, y), -1, 1, 0);
}

/* Gather along axis 0 with ONNX negative-index normalization: y[i, j] = x[idx[i], j] */
typedef struct gather_ctx {
    const hc_tnode *x, *idx;
} gather_ctx;

static hc_expr *gather_fn(hc_arena *a, hc_var *const *ax, void *ctx) {
    const gather_ctx *c = ctx;
    hc_expr *k = hc_at(a, c->idx, (hc_expr *[]){hc_ref(a, ax[0])});
    hc_expr *n = hc_int(a, c->x->shape[0]);
    k = hc_select(a, hc_lt(a, k, hc_int(a, 0)), hc_add(a, k, n), k);
    return hc_at(a, c->x, (hc_expr *[]){k, hc_ref(a, ax[1])});
}

static void gather_case(const char *name, int64_t rows, int64_t cols, int64_t n) {
    gather_ctx c = {in("x", HC_F32, SHAPE(rows, cols)), in("idx", HC_I64, SHAPE(n))};
    hc_tnode *y = hc_compute(&A, "y", 2, (int64_t[]){n, cols}, gather_fn, &c);
    /* inputs in [-rows, rows): valid after normalization */
    add(hc_task_new(&A, name, 2, (hc_tnode *[]){(hc_tnode *)c.x, (hc_tnode *)c.idx}, 1, &y),
        (double)-rows, (double)rows, 0);
}

static void layout_cases(void) {
    hc_tnode *x = in("x", HC_F32, SHAPE(5, 7, 33)), *y = in("y", HC_F32, SHAPE(5, 2, 33));
    hc_tnode *z = in("z", HC_F32, SHAPE(5, 13, 33));
    hc_tnode *c = hc_compute_concat(&A, "c", 3, (const hc_tnode *[]){x, y, z}, 1, &err);
    add(hc_task_new(&A, "concat3", 3, (hc_tnode *[]){x, y, z}, 1, &c), -1, 1, 0);
    hc_tnode *xs = in("x", HC_F32, SHAPE(9, 40));
    hc_tnode *s = hc_compute_slice(&A, "s", xs, (int64_t[]){8, 3}, (int64_t[]){-3, 2},
                                   (int64_t[]){3, 17}, &err);
    add(hc_task1(&A, "slice", 1, &xs, s), -1, 1, 0);
    hc_tnode *xp = in("x", HC_F32, SHAPE(2, 13, 31));
    hc_tnode *p = hc_compute_pad(&A, "p", xp, (int64_t[]){0, 2, 1}, (int64_t[]){1, 3, -2}, 0.5,
                                 &err);
    add(hc_task1(&A, "pad", 1, &xp, p), -1, 1, 0);
    hc_tnode *xe = in("x", HC_I16, SHAPE(7, 1));
    hc_tnode *e = hc_compute_expand(&A, "e", xe, 3, (int64_t[]){3, 1, 129}, &err);
    add(hc_task1(&A, "expand", 1, &xe, e), -100, 100, 0);
}

/* 40 levels, each reading its producer twice: inlining alone would be 2^40 big */
static hc_expr *twice_fn(hc_arena *a, hc_var *const *ax, void *ctx) {
    hc_expr *prev = hc_at_axes(a, ctx, ax);
    return hc_mul(a, hc_add(a, prev, hc_math(a, HC_PRIM_ABS, prev, NULL)), hc_f32(a, 0.5));
}

static void deep_case(const char *name) {
    hc_tnode *x = in("x", HC_F32, SHAPE(3, 37)), *cur = x;
    for (int i = 0; i < 40; i++) cur = hc_compute(&A, "lvl", 2, x->shape, twice_fn, cur);
    add(hc_task1(&A, name, 1, &x, cur), -1, 1, 1e-6);
}

static void argmax_case(const char *name, hc_dtype t, int n, const int64_t *s, int axis,
                        bool is_max, bool last) {
    hc_tnode *x = in("x", t, n, s);
    hc_tnode *y = hc_compute_argreduce(&A, "y", x, axis, false, is_max, last, &err);
    HC_ASSERT(y);
    add(hc_task1(&A, name, 1, &x, y), -3, 3, 0);
}

static void build_cases(void) {
    argmax_case("argmax", HC_F32, SHAPE(7, 1031), -1, true, false);
    argmax_case("argmin_last", HC_I8, SHAPE(5, 33, 17), 1, false, true);
    deep_case("deep");
    layout_cases();
    gather_case("gather", 5, 37, 11);
    where_case("where3");
    reshape_case("reshape", SHAPE(6, 35), SHAPE(5, 42));
    reshape_case("reshape_4d", SHAPE(3, 1, 10, 7), SHAPE(2, 105));
    /* elementwise and broadcast */
    binop_case("add_bcast", HC_OP_ADD, HC_F32, SHAPE(7, 1, 13), SHAPE(5, 1));
    binop_case("add_one", HC_OP_ADD, HC_F32, SHAPE(1), SHAPE(1));
    binop_case("add_big", HC_OP_ADD, HC_F32, SHAPE(64, 1031), SHAPE(1031));
    binop_case("mul_i32", HC_OP_MUL, HC_I32, SHAPE(3, 31, 17), SHAPE(31, 1));
    binop_case("sub_i8", HC_OP_SUB, HC_I8, SHAPE(2, 3, 5, 7), SHAPE(7));
    binop_case("max_f64", HC_OP_MAX, HC_F64, SHAPE(13), SHAPE(13, 13));
    relu_case("relu_1", HC_F32, SHAPE(1));
    relu_case("relu_2d", HC_F32, SHAPE(31, 17));
    relu_case("relu_wide", HC_F32, SHAPE(2, 40009));
    relu_case("relu_flat", HC_F32, SHAPE(100003));
    relu_case("relu_i16", HC_I16, SHAPE(7, 13));
    relu_case("relu_empty", HC_F32, SHAPE(0, 5));
    transpose_case("transpose4d", HC_I32, SHAPE(2, 3, 5, 7), (int[]){0, 2, 3, 1});
    transpose_case("transpose2d", HC_F32, SHAPE(257, 129), (int[]){1, 0});
    transpose_case("transpose_f64", HC_F64, SHAPE(3, 37, 17), (int[]){0, 2, 1});
    transpose_case("transpose_3d", HC_I16, SHAPE(33, 2, 65), (int[]){2, 1, 0});
    /* reductions: every kind over different axes */
    const int sets[][2] = {{0}, {1}, {2}, {0, 2}};
    const int nsets[] = {1, 1, 1, 2};
    for (int k = HC_REDUCE_SUM; k <= HC_REDUCE_PROD; k++)
        for (int s = 0; s < 4; s++) {
            const char *nm = hc_arena_printf(&A, "r_%s_%d", hc_reduce_kind_name(k), s);
            reduce_case(nm, HC_F32, (hc_reduce_kind)k, SHAPE(7, 13, 31), nsets[s], sets[s], s & 1);
        }
    reduce_case("r_nchw_c", HC_F32, HC_REDUCE_SUM, SHAPE(4, 64, 257), 1, (int[]){1}, true);
    reduce_case("r_nchw_blocks", HC_F32, HC_REDUCE_AVG, SHAPE(2, 64, 1031), 1, (int[]){1}, false);
    reduce_case("r_rows_big", HC_F32, HC_REDUCE_MAX, SHAPE(1031, 3), 1, (int[]){0}, false);
    reduce_case("r_all", HC_F32, HC_REDUCE_SUM, SHAPE(1000), 0, NULL, false);
    reduce_case("r_all_avg", HC_F32, HC_REDUCE_AVG, SHAPE(5, 7), 0, NULL, true);
    reduce_case("r_1x1", HC_F32, HC_REDUCE_SUM, SHAPE(1, 1), 1, (int[]){1}, false);
    reduce_case("r_lane_2ax", HC_F32, HC_REDUCE_SUM, SHAPE(5, 3, 67), 2, (int[]){0, 2}, false);
    reduce_case("r_lane_i32", HC_I32, HC_REDUCE_SUM, SHAPE(3, 100), 1, (int[]){1}, false);
    reduce_case("r_lane_f64", HC_F64, HC_REDUCE_MIN, SHAPE(2, 37), 1, (int[]){1}, true);
    reduce_case("r_lane_prod", HC_F32, HC_REDUCE_PROD, SHAPE(2, 2, 97), 1, (int[]){2}, false);
    reduce_case("r_i64_sum", HC_I64, HC_REDUCE_SUM, SHAPE(13, 31), 1, (int[]){0}, false);
    reduce_case("r_i32_avg", HC_I32, HC_REDUCE_AVG, SHAPE(13, 7), 1, (int[]){1}, false);
    reduce_case("r_u8_max", HC_U8, HC_REDUCE_MAX, SHAPE(3, 5, 7, 11), 2, (int[]){1, 3}, false);
    reduce_case("r_i16_min", HC_I16, HC_REDUCE_MIN, SHAPE(17, 19), 1, (int[]){-1}, false);
    reduce_case("r_f16_sum", HC_F16, HC_REDUCE_SUM, SHAPE(5, 33), 1, (int[]){1}, false);
    /* multi-node tasks */
    softmax_case("softmax_small", 13, 31);
    softmax_case("softmax_big", 64, 1000);
    softmax_case("softmax_1", 1, 1);
    layernorm_case("layernorm", 37, 129);
    pool_case("maxpool", 3, 13, 17);
    pool_case("maxpool_big", 16, 64, 63);
    concat_case("concat_u8", HC_U8, 4, 3, 5);
    concat_case("concat_i16", HC_I16, 33, 17, 1);
    two_outputs_case("two_outputs", 29, 37);
    row_case("range", range_fn, 11, 23);
    row_case("nested", nested_fn, 7, 13);
    guarded_case("guarded", 5, 33, 8);
    guarded_case("guarded_short", 3, 7, 11);
    matmul_case("matmul_small", HC_F32, 13, 31, 7);
    matmul_case("matmul_big", HC_F32, 64, 128, 96);
    matmul_case("matmul_i32", HC_I32, 5, 7, 3);
    /* casts and narrow types */
    cast_case("cast_f32_f16", HC_F32, HC_F16, SHAPE(7, 13), -100, 100);
    cast_case("cast_f32_bf16", HC_F32, HC_BF16, SHAPE(3, 2, 31), -100, 100);
    cast_case("cast_f16_f32", HC_F16, HC_F32, SHAPE(31), -100, 100);
    cast_case("cast_bf16_f32", HC_BF16, HC_F32, SHAPE(31), -100, 100);
    cast_case("cast_f32_i16", HC_F32, HC_I16, SHAPE(5, 17), -1000, 1000);
    cast_case("cast_i32_u8", HC_I32, HC_U8, SHAPE(4, 1, 3, 5), -1000, 1000);
    cast_case("cast_u8_f32", HC_U8, HC_F32, SHAPE(19), 0, 255);
    cast_case("cast_i8_i64", HC_I8, HC_I64, SHAPE(2, 2, 2, 3), -100, 100);
    cast_case("cast_f32_bool", HC_F32, HC_BOOL, SHAPE(9), -1, 1);
    fma_case("fma_f16", HC_F16, SHAPE(3, 67), 4e-3);
    fma_case("fma_bf16", HC_BF16, SHAPE(67), 2e-2);
    fma_case("fma_f64", HC_F64, SHAPE(2, 2, 2, 2, 3), 1e-12);
}

/* ---- running ------------------------------------------------------------------------ */
static uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static void fill(void *buf, hc_dtype t, int64_t n, double lo, double hi) {
    for (int64_t i = 0; i < n; i++) {
        double v = hc_rng_uniform(&rng, lo, hi);
        switch (t) {
        case HC_F32: ((float *)buf)[i] = (float)v; break;
        case HC_F64: ((double *)buf)[i] = v; break;
        case HC_F16: ((_Float16 *)buf)[i] = (_Float16)v; break;
        case HC_BF16: ((uint16_t *)buf)[i] = to_bf16((float)v); break;
        case HC_BOOL: ((uint8_t *)buf)[i] = v > 0; break;
        case HC_I8: ((int8_t *)buf)[i] = (int8_t)floor(v); break;
        case HC_I16: ((int16_t *)buf)[i] = (int16_t)floor(v); break;
        case HC_I32: ((int32_t *)buf)[i] = (int32_t)floor(v); break;
        case HC_I64: ((int64_t *)buf)[i] = (int64_t)floor(v); break;
        case HC_U8: ((uint8_t *)buf)[i] = (uint8_t)floor(v); break;
        case HC_U16: ((uint16_t *)buf)[i] = (uint16_t)floor(v); break;
        case HC_U32: ((uint32_t *)buf)[i] = (uint32_t)floor(v); break;
        case HC_U64: ((uint64_t *)buf)[i] = (uint64_t)floor(v); break;
        default: HC_ASSERT(0);
        }
    }
}

static double as_double(const void *buf, hc_dtype t, int64_t i) {
    switch (t) {
    case HC_F32: return ((const float *)buf)[i];
    case HC_F64: return ((const double *)buf)[i];
    case HC_F16: return (double)((const _Float16 *)buf)[i];
    case HC_BF16: {
        uint32_t u = (uint32_t)((const uint16_t *)buf)[i] << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    default: return 0;
    }
}

/* Number of elements that differ (floats: beyond tol relative to 1 + |ref|). */
static int64_t compare(const void *got, const void *ref, hc_dtype t, int64_t n, double tol,
                       double *worst) {
    int64_t bad = 0;
    size_t sz = (size_t)hc_dtype_size(t);
    for (int64_t i = 0; i < n; i++) {
        if (hc_dtype_is_float(t)) {
            double g = as_double(got, t, i), r = as_double(ref, t, i);
            double e = (isinf(r) && g == r) ? 0 : fabs(g - r) / (1 + fabs(r));
            if (isnan(e) || e > tol) bad++;
            if (!isnan(e) && e > *worst) *worst = e;
        } else if (memcmp((const char *)got + i * sz, (const char *)ref + i * sz, sz)) {
            bad++;
        }
    }
    return bad;
}

static size_t nbytes(const hc_tnode *n) {
    return (size_t)hc_tnode_numel(n) * (size_t)hc_dtype_size(n->dtype) + 1;
}

/* The kernel of case c in lib (built for one target). */
static hc_packed_fn lookup(const tcase *c, hc_jit_lib *lib) {
    char sym[256];
    snprintf(sym, sizeof sym, "%s__packed", c->f->name);
    hc_packed_fn fn = (hc_packed_fn)hc_jit_symbol(lib, sym);
    CHECK_MSG(fn != NULL, "missing %s", sym);
    return fn;
}

static void run_case(tcase *c, int nlibs, hc_jit_lib *const *libs, const hc_target *const *tgs) {
    const hc_task *t = c->t;
    void *args[16], *ref[8];
    HC_ASSERT(t->ninputs + t->noutputs <= 16);
    for (int i = 0; i < t->ninputs; i++) {
        args[i] = hc_xmalloc(nbytes(t->inputs[i]));
        fill(args[i], t->inputs[i]->dtype, hc_tnode_numel(t->inputs[i]), c->lo, c->hi);
    }
    for (int i = 0; i < t->noutputs; i++) {
        ref[i] = hc_xcalloc(1, nbytes(t->outputs[i]));
        args[t->ninputs + i] = hc_xmalloc(nbytes(t->outputs[i]));
    }
    hc_error e = {0};
    hc_status st = hc_interpret_task(t, args, ref, &e);
    CHECK_MSG(st == HC_OK, "%s: %s", t->name, e.msg);
    for (int run = 0; run < 2 * nlibs && st == HC_OK; run++) {
        int threads = run % 2 + 1;
        hc_packed_fn fn = lookup(c, libs[run / 2]);
        if (!fn) break;
        omp_set_num_threads(threads);
        for (int i = 0; i < t->noutputs; i++) /* garbage, so unwritten elements show */
            memset(args[t->ninputs + i], 0xA5, nbytes(t->outputs[i]));
        fn(args);
        for (int i = 0; i < t->noutputs; i++) {
            const hc_tnode *o = t->outputs[i];
            double worst = 0;
            int64_t bad = compare(args[t->ninputs + i], ref[i], o->dtype, hc_tnode_numel(o),
                                  c->tol, &worst);
            CHECK_MSG(bad == 0, "%s output %s, %s, %d threads: %lld of %lld differ (worst %g)",
                      t->name, o->name, hc_isa_name(tgs[run / 2]->caps.isa), threads, (long long)bad,
                      (long long)hc_tnode_numel(o), worst);
        }
    }
    for (int i = 0; i < t->ninputs + t->noutputs; i++) free(args[i]);
    for (int i = 0; i < t->noutputs; i++) free(ref[i]);
}

/* ---- structure of the generated programs ------------------------------------------- */
static char *print_func(const hc_func *f) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_func(&sb, f);
    return hc_sb_take(&sb);
}

static const tcase *find(const char *name) {
    for (int i = 0; i < ncases; i++)
        if (!strcmp(cases[i].t->name, name)) return &cases[i];
    HC_ASSERT(0);
}

/* The case's program for a stated machine tg (scheduled again, not run). */
static char *print_for(const hc_target *tg, const char *name) {
    hc_error e = {0};
    hc_func *f = hc_auto_schedule(&A, find(name)->t, tg, &e);
    CHECK_MSG(f != NULL, "%s: %s", name, e.msg);
    return f ? print_func(f) : hc_xstrdup("");
}

/* The structure of the programs on a stated machine (the rules read its cores and lanes):
 * the parallel checks hold with 2 cores or more. */
static void check_structure(const hc_target *tg) {
    bool multi = tg->caps.num_cores > 1;
    char *p = print_for(tg, "softmax_big");
    /* max and sum are heap temporaries with loop nests of their own; exp is inlined */
    CHECK_MSG(count_str(p, "global") >= 3, "%s", p);
    CHECK_EQ_INT(count_str(p, "# m:") + count_str(p, "# s:") + count_str(p, "# y:"), 3);
    if (multi) CHECK_MSG(count_str(p, " parallel:") == 3, "%s", p);
    free(p);
    p = print_for(tg, "relu_1");
    CHECK_MSG(!strstr(p, "parallel"), "%s", p);
    free(p);
    p = print_for(tg, "relu_wide");
    /* 2 rows are too few work items for 2 threads: the inner dimension is blocked */
    if (multi) CHECK_MSG(strstr(p, "parallel") && strstr(p, "jb"), "%s", p);
    free(p);
    p = print_for(tg, "transpose2d"); /* reads along i, writes along j: tiles */
    CHECK_MSG(strstr(p, "tiled") != NULL, "%s", p);
    free(p);
    p = print_for(tg, "transpose4d"); /* too small to tile */
    CHECK_MSG(strstr(p, "tiled") == NULL, "%s", p);
    free(p);
    p = print_for(tg, "r_nchw_c");
    CHECK_MSG(strstr(p, "vector of accumulators") && strstr(p, "register"), "%s", p);
    free(p);
    p = print_for(tg, "r_nchw_blocks"); /* 2 rows: blocks of the accumulator vector */
    if (multi) CHECK_MSG(strstr(p, "vector of accumulators") && strstr(p, "jb"), "%s", p);
    free(p);
    p = print_for(tg, "matmul_big");
    CHECK_MSG(strstr(p, "vector of accumulators"), "%s", p);
    free(p);
    p = print_for(tg, "deep"); /* some levels are materialized to bound the size */
    CHECK_MSG(count_str(p, "global") > 2 && count_str(p, "global") < 40, "%s", p);
    free(p);
    p = print_for(tg, "r_sum_2"); /* reduce over the innermost axis: scalar */
    CHECK_MSG(!strstr(p, "vector of accumulators"), "%s", p);
    free(p);
    p = print_for(tg, "guarded"); /* the conditional reduce runs under an if */
    CHECK_MSG(strstr(p, "if ") != NULL, "%s", p);
    free(p);
    CHECK_STR(find("r_sum_0")->f->name, "r_sum_0");
    CHECK_STR(hc_sched_func_name(&A, "3x3 pool/v2"), "_3x3_pool_v2");
}

static void check_errors(void) {
    /* a node reading a tensor that is not among the task inputs */
    hc_tnode *x = in("x", HC_F32, SHAPE(4)), *ghost = in("ghost", HC_F32, SHAPE(4));
    hc_tnode *y = hc_compute_binop(&A, "y", HC_OP_ADD, x, ghost, &err);
    hc_task *t = hc_task1(&A, "bad", 1, &x, y);
    hc_error e = {0};
    CHECK(hc_auto_schedule(&A, t, hc_target_host(), &e) == NULL);
    CHECK_MSG(e.status == HC_ERR_INVALID && strstr(e.msg, "ghost"), "%s", e.msg);
}

/* Schedule every case for target tg into one module and build it. */
static hc_jit_lib *build_all(const hc_target *tg, bool keep, bool verbose) {
    hc_func *funcs[HC_ARRAY_LEN(cases)];
    int nf = 0;
    for (int i = 0; i < ncases; i++) {
        hc_error e = {0};
        hc_func *f = hc_auto_schedule(&A, cases[i].t, tg, &e);
        CHECK_MSG(f != NULL, "%s: %s", cases[i].t->name, e.msg);
        if (!f) continue;
        funcs[nf++] = f;
        if (keep) cases[i].f = f;
        hc_error ve = {0};
        CHECK_MSG(hc_verify_func(f, false, &ve) == HC_OK, "%s", ve.msg);
        if (verbose && keep) {
            char *p = print_func(f);
            printf("%s\n", p);
            free(p);
        }
    }
    if (nf != ncases) return NULL;
    char *src = hc_codegen_c(&A, hc_module_new(&A, "autosched_test", nf, funcs), tg);
    hc_jit_options opt = {.cflags = tg->cflags};
    hc_jit_lib *lib = NULL;
    hc_error e = {0};
    double t0 = hc_now_ms();
    CHECK_MSG(hc_jit_build(src, &opt, &lib, &e) == HC_OK, "%s", e.msg);
    if (verbose) printf("build for %s: %.0f ms\n", hc_isa_name(tg->caps.isa), hc_now_ms() - t0);
    free(src);
    return lib;
}

int main(void) {
    hc_arena_init(&A);
    build_cases();
    bool verbose = getenv("HIDETC_TEST_VERBOSE") != NULL;
    /* the host target, then the narrower ISAs it can also run (other vector widths) */
    const hc_target *tgs[3] = {hc_target_host()};
    int ntg = 1;
    for (int isa = HC_ISA_AVX2; isa >= HC_ISA_SCALAR; isa--)
        if (isa < (int)tgs[0]->caps.isa) tgs[ntg++] = hc_target_cpu((hc_isa)isa);
    hc_jit_lib *libs[3] = {NULL};
    int nlibs = 0;
    for (int k = 0; k < ntg; k++) {
        hc_jit_lib *lib = build_all(tgs[k], k == 0, verbose);
        if (!lib) break;
        libs[nlibs++] = lib;
        if (k == 0) {
            /* an AVX-512 Xeon and an AVX2 EPYC with 2 cores, and one with 16 */
            const hc_target machines[] = {
                hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 << 10, 2 << 20, 105 << 20),
                hc_target_cpu_describe(HC_ISA_AVX2, 2, 32 << 10, 1 << 20, 32 << 20),
                hc_target_cpu_describe(HC_ISA_AVX512, 16, 48 << 10, 2 << 20, 105 << 20),
            };
            for (size_t m = 0; m < HC_ARRAY_LEN(machines); m++) check_structure(&machines[m]);
            check_errors();
        }
    }
    if (nlibs == ntg)
        for (int i = 0; i < ncases; i++) run_case(&cases[i], nlibs, libs, tgs);
    for (int k = 0; k < nlibs; k++) hc_jit_close(libs[k]);
    hc_arena_free(&A);
    TEST_DONE();
}
