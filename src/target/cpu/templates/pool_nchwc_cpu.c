/* pool_nchwc_cpu.c — MaxPool / AveragePool on NCHW{b}c (pool_nchwc.h, docs/nchwc.md).
 *
 *   for t in [0, T) parallel:
 *     for (ti) in spatial(T) on t:
 *       for (it) in repeat(ceil(items / T)):     item = (n, cb, output row oy)
 *         for ox:
 *           acc = -inf or 0; cnt = 0
 *           for i, j: (iy, ix) = (oy*sh - pt + i*dh, ox*sw - pl + j*dw)
 *             inside X: acc = max(acc, X[n, cb, iy, ix, :]) or acc += X[...]
 *             avg: cnt += 1 where the position counts (inside X, or the padded X)
 *           Y[n, cb, oy, ox, :] = acc (max) or acc * (1 / cnt) (avg)  */
#include <math.h>

#include "ir/mapping.h"
#include "target/cpu/cpu.h"
#include "target/cpu/templates/dsl.h"
#include "target/cpu/templates/pool_nchwc.h"
#include "task/task.h"

typedef struct pl {
    hc_arena *a;
    hc_builder *b;
    const hc_pool_nchwc_shape *s;
    const hc_type *vec;
    hc_var *X, *Y;
} pl;

static hc_expr *in_range(pl *g, hc_expr *v, int64_t lo, int64_t hi) {
    return hc_and(g->a, hc_le(g->a, I(g, lo), v), hc_lt(g->a, v, I(g, hi)));
}

static void pixel(pl *g, hc_expr *n, hc_expr *cb, hc_expr *oy, hc_expr *ox) {
    const hc_pool_nchwc_shape *s = g->s;
    hc_arena *a = g->a;
    hc_expr *init = hc_f32(a, s->max ? -INFINITY : 0.0f);
    hc_var *acc = hc_b_declare(g->b, "acc", g->vec,
                               hc_call(a, HC_PRIM_VBROADCAST, g->vec, 1, (hc_expr *[]){init}));
    hc_var *cnt = s->max ? NULL : hc_b_declare(g->b, "cnt", hc_type_scalar(HC_INDEX_TYPE), I(g, 0));
    HC_FOR(g->b, i, "i", I(g, s->kh), hc_unroll(0)) {
        hc_expr *iy = let(g, "iy", ADD(SUB(MUL(oy, I(g, s->sh)), I(g, s->pt)),
                                       MUL(R(g, i), I(g, s->dh))));
        HC_FOR(g->b, j, "j", I(g, s->kw), hc_unroll(0)) {
            hc_expr *ix = let(g, "ix", ADD(SUB(MUL(ox, I(g, s->sw)), I(g, s->pl)),
                                           MUL(R(g, j), I(g, s->dw))));
            HC_IF(g->b, hc_and(a, in_range(g, iy, 0, s->h), in_range(g, ix, 0, s->w))) {
                hc_expr *p = hc_address(a, g->X, 5, (hc_expr *[]){n, cb, iy, ix, I(g, 0)});
                hc_expr *v = hc_call(a, HC_PRIM_VLOAD, g->vec, 1, (hc_expr *[]){p});
                hc_b_assign(g->b, acc, s->max ? hc_max(a, R(g, acc), v) : ADD(R(g, acc), v));
            }
            if (!s->max) {
                hc_expr *counts = s->include_pad
                                      ? hc_and(a, in_range(g, iy, -s->pt, s->h + s->pb),
                                               in_range(g, ix, -s->pl, s->w + s->pr))
                                      : hc_and(a, in_range(g, iy, 0, s->h), in_range(g, ix, 0, s->w));
                HC_IF(g->b, counts) { hc_b_assign(g->b, cnt, ADD(R(g, cnt), I(g, 1))); }
            }
        }
    }
    hc_expr *val = R(g, acc);
    if (!s->max) /* cnt >= 1: a window always overlaps X (or the padded X) */
        val = MUL(val, hc_div(a, hc_f32(a, 1.0f),
                              hc_cast(a, hc_type_scalar(HC_F32), hc_max(a, R(g, cnt), I(g, 1)))));
    hc_expr *p = hc_address(a, g->Y, 5, (hc_expr *[]){n, cb, oy, ox, I(g, 0)});
    hc_b_eval(g->b, hc_call(a, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2, (hc_expr *[]){p, val}));
}

/* Item = (n, cb, output row oy): every pixel of the row. */
static void item_body(void *ctx, hc_expr *w) {
    pl *g = ctx;
    hc_arena *a = g->a;
    const hc_pool_nchwc_shape *s = g->s;
    hc_expr *w0 = let(g, "item", w);
    hc_expr *oy = let(g, "oy", hc_mod(a, w0, I(g, s->oh)));
    hc_expr *plane = let(g, "plane", hc_div(a, w0, I(g, s->oh)));
    hc_expr *n = let(g, "n", hc_div(a, plane, I(g, s->cb)));
    hc_expr *cb = let(g, "cb", hc_mod(a, plane, I(g, s->cb)));
    HC_FOR(g->b, ox, "ox", I(g, s->ow), hc_serial()) { pixel(g, n, cb, oy, R(g, ox)); }
}

hc_func *hc_pool_nchwc_cpu(hc_arena *a, const char *name, const hc_pool_nchwc_shape *s,
                           int threads, hc_error *err) {
    const int64_t pos[] = {s->n, s->cb, s->h, s->w, s->oh, s->ow, s->kh, s->kw, s->sh, s->sw,
                           s->dh, s->dw};
    bool ok = s->block == 4 || s->block == 8 || s->block == 16;
    for (size_t i = 0; i < HC_ARRAY_LEN(pos); i++) ok = ok && pos[i] >= 1;
    ok = ok && s->pt >= 0 && s->pl >= 0 && s->pb >= 0 && s->pr >= 0;
    if (!ok) {
        hc_error_set(err, HC_ERR_INVALID, "pool_nchwc: invalid shape");
        return NULL;
    }
    hc_builder b;
    pl gs = {.a = a, .b = &b, .s = s, .vec = hc_type_vector(a, HC_F32, s->block)};
    pl *g = &gs;
    const int64_t xs[5] = {s->n, s->cb, s->h, s->w, s->block};
    const int64_t ys[5] = {s->n, s->cb, s->oh, s->ow, s->block};
    if (s->nsym) { /* the batch dim an expression of the symbols */
        hc_expr *xe[5] = {hc_sym_expr(a, s->nsym)}, *ye[5] = {xe[0]};
        for (int d = 1; d < 5; d++) xe[d] = hc_int(a, xs[d]), ye[d] = hc_int(a, ys[d]);
        g->X = hc_var_new(a, "X", hc_type_tensor(a, HC_F32, 5, xe, NULL, HC_SCOPE_GLOBAL));
        g->Y = hc_var_new(a, "Y", hc_type_tensor(a, HC_F32, 5, ye, NULL, HC_SCOPE_GLOBAL));
    } else {
        g->X = hc_var_new(a, "X", hc_type_tensor_c(a, HC_F32, 5, xs, HC_SCOPE_GLOBAL));
        g->Y = hc_var_new(a, "Y", hc_type_tensor_c(a, HC_F32, 5, ys, HC_SCOPE_GLOBAL));
    }
    hc_builder_init(&b, a);
    if (s->nsym)
        hc_sched_split_items_expr(&b, hc_mul(a, hc_sym_expr(a, s->nsym), I(g, s->cb * s->oh)),
                                  threads, NULL, item_body, g);
    else
        hc_sched_split_items(&b, s->n * s->cb * s->oh, threads, NULL, item_body, g);
    hc_stmt *body = hc_builder_finish(&b);
    hc_var *params[2] = {g->X, g->Y};
    return hc_func_new(a, name ? name : "pool_nchwc", HC_FN_CPU_KERNEL, 2, params, body);
}
