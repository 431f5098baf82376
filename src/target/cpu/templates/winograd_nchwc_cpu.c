/* winograd_nchwc_cpu.c — CPU templates for the Winograd F(mh x mw, kh x kw) transforms (3x3
 * with m = 2 or 4, 5x5, and the 1-D kernels 1xk / kx1 of 3, 5 or 7 taps: tiles of ah x aw
 * inputs, ah = mh + kh - 1) on the channel-blocked layout (winograd.h, docs/nchwc.md): the
 * channels lie on the vector lanes, so each transform is the scalar one of
 * docs/winograd.md done on whole vectors.
 *
 *   for t in [0, T) parallel:
 *     for (ti) in spatial(T) on t:
 *       for (it) in repeat(ceil(items / T)):       item = (n, tile row ty)
 *         for tx, cb:
 *           input:  d[i][j] = X[n, cb, mh*ty-pt+i, mw*tx-pl+j, :]   (0 outside the image)
 *                   V[p*aw+q, t, cb*L ..] = (B_h^T d B_w)[p, q]
 *           output: u[p][q] = M[p*aw+q, t, cb*L ..]
 *                   Y[n, cb, mh*ty+i, mw*tx+j, :] = (A_h^T u A_w)[i, j]  (inside the output)
 *
 * V and M are [ah*aw, T, C] with the channels innermost: the batched matmul between them
 * is V x U^T with the transformed weights [ah*aw, C, OC] as its constant operand. Every access
 * is a whole vector along a tensor's last dimension; each Y element is stored once. The
 * matrix products are unrolled over the nonzero entries of B^T and A^T (hc_wino_axis):
 * +-1 entries are adds and subtracts, the others multiply-adds by a broadcast constant.
 *
 * A symbolic batch (s->nsym, dynamic shapes): the batch dim of X / Y, the T of V / M and
 * the item count are expressions of it; nothing else depends on the batch (the tiles per
 * image, the unrolled tiles and their guards are constants), so the split over the threads
 * is the only thing computed at run time. */
#include "ir/mapping.h"
#include "target/cpu/cpu.h"
#include "target/cpu/templates/dsl.h"
#include "target/cpu/templates/winograd.h"
#include "task/task.h"

typedef struct wb {
    hc_arena *a;
    hc_builder *b;
    const hc_wino_shape *s;
    const hc_wino_mats *wh, *ww; /* along the rows F(mh, kh), the columns F(mw, kw) */
    int L;
    int64_t th, tw, cb;
    const hc_type *vec;
    bool input; /* the input transform (else the output one) */
    hc_var *in, *out;
    hc_expr *n, *ty, *t0, *row0;
} wb;

static hc_expr *letv(wb *g, const char *name, hc_expr *value) {
    return hc_dsl_let(g->a, g->b, name, g->vec, value);
}

/* sum_k coef[k] * x[k] over the nonzero coefficients (n of them; every row of B^T and A^T
 * has some), vectors: +-1 entries add or subtract, the others multiply by a broadcast
 * constant. */
static hc_expr *combine(wb *g, const double *coef, hc_expr *const *x, int n) {
    hc_expr *acc = NULL;
    for (int pass = 0; pass < 2; pass++) /* positive terms first: no negation at the start */
        for (int k = 0; k < n; k++) {
            double c = coef[k];
            if (c == 0 || (pass == 0) != (c > 0)) continue;
            double m = c < 0 ? -c : c;
            hc_expr *t = m == 1 ? x[k]
                                : MUL(vcall(g, HC_PRIM_VBROADCAST, g->vec, 1, hc_f32(g->a, m),
                                            NULL, NULL),
                                      x[k]);
            if (!acc) acc = c > 0 ? t : SUB(vcall(g, HC_PRIM_VBROADCAST, g->vec, 1,
                                                  hc_f32(g->a, 0), NULL, NULL), t);
            else acc = c > 0 ? ADD(acc, t) : SUB(acc, t);
        }
    HC_ASSERT_MSG(acc, "a transform row without a nonzero entry");
    return acc;
}

/* ---- input transform ------------------------------------------------------------------ */
static void input_tile(wb *g, hc_expr *tx, hc_expr *c, bool guarded) {
    hc_arena *a = g->a;
    const hc_wino_shape *s = g->s;
    const int mw = g->ww->m, ah = g->wh->a, aw = g->ww->a;
    hc_expr *col0 = let(g, "col0", SUB(MUL(tx, I(g, mw)), I(g, s->pl)));
    hc_expr *d[HC_WINO_MAX_A][HC_WINO_MAX_A];
    for (int i = 0; i < ah; i++)
        for (int j = 0; j < aw; j++) {
            hc_expr *r = ADD(g->row0, I(g, i)), *cc = ADD(col0, I(g, j));
            if (!guarded) {
                hc_expr *p = hc_address(a, g->in, 5, (hc_expr *[]){g->n, c, r, cc, I(g, 0)});
                d[i][j] = letv(g, "d", vcall(g, HC_PRIM_VLOAD, g->vec, 1, p, NULL, NULL));
                continue;
            }
            /* outside the image: a masked load of no lanes (zeros) at a clamped address */
            hc_expr *in = hc_and(a, hc_and(a, hc_le(a, I(g, 0), r), hc_lt(a, r, I(g, s->h))),
                                 hc_and(a, hc_le(a, I(g, 0), cc), hc_lt(a, cc, I(g, s->w))));
            hc_expr *rc = hc_min(a, hc_max(a, r, I(g, 0)), I(g, s->h - 1));
            hc_expr *ccl = hc_min(a, hc_max(a, cc, I(g, 0)), I(g, s->w - 1));
            hc_expr *p = hc_address(a, g->in, 5, (hc_expr *[]){g->n, c, rc, ccl, I(g, 0)});
            hc_expr *cnt = hc_select(a, in, I(g, g->L), I(g, 0));
            d[i][j] = letv(g, "d", vcall(g, HC_PRIM_VLOAD_MASK, g->vec, 2, p, cnt, NULL));
        }
    /* rows of B_h^T d, then columns (an axis of one tap: the identity, no operation) */
    hc_expr *r[HC_WINO_MAX_A][HC_WINO_MAX_A];
    for (int p = 0; p < ah; p++)
        for (int j = 0; j < aw; j++) {
            hc_expr *col[HC_WINO_MAX_A];
            for (int i = 0; i < ah; i++) col[i] = d[i][j];
            r[p][j] = ah == 1 ? d[0][j] : letv(g, "r", combine(g, g->wh->bt[p], col, ah));
        }
    hc_expr *t = ADD(g->t0, tx), *ch = MUL(c, I(g, g->L));
    for (int p = 0; p < ah; p++)
        for (int q = 0; q < aw; q++)
            vstore(g, hc_address(a, g->out, 3, (hc_expr *[]){I(g, p * aw + q), t, ch}),
                   aw == 1 ? r[p][0] : combine(g, g->ww->bt[q], r[p], aw));
}

/* Tiles [lo, hi) of the item's row (constant bounds), all channel blocks. */
static void input_tiles(wb *g, int64_t lo, int64_t hi, bool guarded) {
    if (hi <= lo) return;
    HC_FOR(g->b, x, "tx", I(g, hi - lo), hc_serial()) {
        HC_FOR(g->b, c, "cb", I(g, g->cb), hc_serial()) {
            input_tile(g, ADD(R(g, x), I(g, lo)), R(g, c), guarded);
        }
    }
}

static void input_item(wb *g) {
    const hc_wino_shape *s = g->s;
    hc_arena *a = g->a;
    const int mh = g->wh->m, mw = g->ww->m, ah = g->wh->a, aw = g->ww->a;
    g->row0 = let(g, "row0", SUB(MUL(g->ty, I(g, mh)), I(g, s->pt)));
    /* tiles whose aw columns mw*tx - pl .. + aw - 1 are inside [0, w) */
    int64_t lo = hc_cdiv(s->pl, mw), hi = s->w + s->pl - aw >= 0 ? (s->w + s->pl - aw) / mw + 1 : 0;
    lo = HC_MIN(lo, g->tw), hi = HC_MIN(hi, g->tw);
    if (hi <= lo) {
        input_tiles(g, 0, g->tw, true);
        return;
    }
    hc_b_if_begin(
        g->b, hc_and(a, hc_le(a, I(g, 0), g->row0), hc_le(a, ADD(g->row0, I(g, ah)), I(g, s->h))));
    input_tiles(g, 0, lo, true);
    input_tiles(g, lo, hi, false);
    input_tiles(g, hi, g->tw, true);
    hc_b_else(g->b);
    input_tiles(g, 0, g->tw, true);
    hc_b_end(g->b);
}

/* ---- output transform ----------------------------------------------------------------- */
/* The rows x cols top-left part of tile tx of the item's row, channel block c. */
static void output_tile(wb *g, hc_expr *tx, hc_expr *c, int rows, int cols) {
    hc_arena *a = g->a;
    const int mh = g->wh->m, mw = g->ww->m, ah = g->wh->a, aw = g->ww->a;
    hc_expr *t = ADD(g->t0, tx), *ch = MUL(c, I(g, g->L)), *u[HC_WINO_MAX_A][HC_WINO_MAX_A];
    for (int p = 0; p < ah; p++)
        for (int q = 0; q < aw; q++) {
            hc_expr *ptr = hc_address(a, g->in, 3, (hc_expr *[]){I(g, p * aw + q), t, ch});
            u[p][q] = letv(g, "u", vcall(g, HC_PRIM_VLOAD, g->vec, 1, ptr, NULL, NULL));
        }
    for (int i = 0; i < rows; i++) {
        hc_expr *r[HC_WINO_MAX_A]; /* row i of A_h^T u */
        for (int q = 0; q < aw; q++) {
            hc_expr *col[HC_WINO_MAX_A];
            for (int p = 0; p < ah; p++) col[p] = u[p][q];
            r[q] = ah == 1 ? u[0][q] : letv(g, "r", combine(g, g->wh->at[i], col, ah));
        }
        hc_expr *oh = ADD(MUL(g->ty, I(g, mh)), I(g, i));
        for (int j = 0; j < cols; j++) {
            hc_expr *ow = ADD(MUL(tx, I(g, mw)), I(g, j));
            vstore(g, hc_address(a, g->out, 5, (hc_expr *[]){g->n, c, oh, ow, I(g, 0)}),
                   aw == 1 ? r[0] : combine(g, g->ww->at[j], r, aw));
        }
    }
}

static void output_row(wb *g, int rows) {
    const int mw = g->ww->m;
    int64_t full = g->s->ow / mw;
    if (full > 0) {
        HC_FOR(g->b, x, "tx", I(g, full), hc_serial()) {
            HC_FOR(g->b, c, "cb", I(g, g->cb), hc_serial()) {
                output_tile(g, R(g, x), R(g, c), rows, mw);
            }
        }
    }
    if (g->s->ow % mw) {
        HC_FOR(g->b, c, "cb", I(g, g->cb), hc_serial()) {
            output_tile(g, I(g, full), R(g, c), rows, (int)(g->s->ow % mw));
        }
    }
}

static void output_item(wb *g) {
    const int mh = g->wh->m;
    if (g->s->oh % mh == 0) {
        output_row(g, mh);
        return;
    }
    hc_b_if_begin(g->b, hc_lt(g->a, g->ty, I(g, g->th - 1)));
    output_row(g, mh);
    hc_b_else(g->b);
    output_row(g, (int)(g->s->oh % mh));
    hc_b_end(g->b);
}

/* ---- the program ------------------------------------------------------------------------ */
/* Item = (n, tile row ty). */
static void item_body(void *ctx, hc_expr *w) {
    wb *g = ctx;
    hc_expr *w0 = let(g, "item", w);
    g->n = let(g, "n", hc_div(g->a, w0, I(g, g->th)));
    g->ty = let(g, "ty", hc_mod(g->a, w0, I(g, g->th)));
    g->t0 = let(g, "t0", MUL(ADD(MUL(g->n, I(g, g->th)), g->ty), I(g, g->tw)));
    if (g->input) input_item(g);
    else output_item(g);
}

static hc_func *build(hc_arena *a, const char *name, const hc_wino_shape *s, int block,
                      int threads, bool input, hc_error *err) {
    int m = s->m ? s->m : 2, kh = s->kh ? s->kh : 3, kw = s->kw ? s->kw : 3;
    const hc_wino_mats *wh = kh >= 1 && kh <= HC_WINO_MAX_R ? hc_wino_axis(m, kh) : NULL;
    const hc_wino_mats *ww = kw >= 1 && kw <= HC_WINO_MAX_R ? hc_wino_axis(m, kw) : NULL;
    bool ok = wh && ww && s->n >= 1 && s->c >= 1 && s->oh >= 1 && s->ow >= 1 && s->pt >= 0 &&
              s->pl >= 0 && (block == 4 || block == 8 || block == 16) && s->c % block == 0;
    if (input) ok = ok && s->h >= 1 && s->w >= 1;
    if (!ok) {
        hc_error_set(err, HC_ERR_INVALID, "winograd nchwc template: invalid shape");
        return NULL;
    }
    hc_builder b;
    wb gs = {.a = a,
             .b = &b,
             .s = s,
             .wh = wh,
             .ww = ww,
             .L = block,
             .th = hc_cdiv(s->oh, wh->m),
             .tw = hc_cdiv(s->ow, ww->m),
             .cb = s->c / block};
    wb *g = &gs;
    g->vec = hc_type_vector(a, HC_F32, block);
    int64_t tiles = s->n * g->th * g->tw;
    const int64_t xs[5] = {s->n, g->cb, input ? s->h : s->oh, input ? s->w : s->ow, block};
    const int64_t vs[3] = {(int64_t)wh->a * ww->a, tiles, s->c};
    const hc_type *xt, *vt;
    if (s->nsym) { /* the batch, T and the items: multiples of the batch's expression */
        hc_expr *nb = hc_sym_expr(a, s->nsym), *xe[5] = {nb}, *ve[3];
        for (int d = 1; d < 5; d++) xe[d] = I(g, xs[d]);
        ve[0] = I(g, vs[0]), ve[1] = MUL(nb, I(g, g->th * g->tw)), ve[2] = I(g, vs[2]);
        xt = hc_type_tensor(a, HC_F32, 5, xe, NULL, HC_SCOPE_GLOBAL);
        vt = hc_type_tensor(a, HC_F32, 3, ve, NULL, HC_SCOPE_GLOBAL);
    } else {
        xt = hc_type_tensor_c(a, HC_F32, 5, xs, HC_SCOPE_GLOBAL);
        vt = hc_type_tensor_c(a, HC_F32, 3, vs, HC_SCOPE_GLOBAL);
    }
    g->in = hc_var_new(a, input ? "X" : "M", input ? xt : vt);
    g->out = hc_var_new(a, input ? "V" : "Y", input ? vt : xt);
    hc_builder_init(&b, a);
    g->input = input;
    if (s->nsym)
        hc_sched_split_items_expr(&b, MUL(hc_sym_expr(a, s->nsym), I(g, g->th)), threads, NULL,
                                  item_body, g);
    else
        hc_sched_split_items(&b, s->n * g->th, threads, NULL, item_body, g);
    hc_stmt *body = hc_builder_finish(&b);
    hc_var *params[2] = {g->in, g->out};
    return hc_func_new(a, name ? name : (input ? "wino_input_nchwc" : "wino_output_nchwc"),
                       HC_FN_CPU_KERNEL, 2, params, body);
}

hc_func *hc_wino_input_nchwc_cpu(hc_arena *a, const char *name, const hc_wino_shape *s,
                                 int block, int threads, hc_error *err) {
    return build(a, name, s, block, threads, true, err);
}

hc_func *hc_wino_output_nchwc_cpu(hc_arena *a, const char *name, const hc_wino_shape *s,
                                  int block, int threads, hc_error *err) {
    return build(a, name, s, block, threads, false, err);
}
