/* winograd_nchwc_cpu.c — CPU templates for the Winograd F(m x m, 3 x 3) transforms (m = 2
 * or 4, tiles of a = m + 2) on the channel-blocked layout (winograd.h, docs/nchwc.md): the
 * channels lie on the vector lanes, so each transform is the scalar one of
 * docs/winograd.md done on whole vectors.
 *
 *   for t in [0, T) parallel:
 *     for (ti) in spatial(T) on t:
 *       for (it) in repeat(ceil(items / T)):       item = (n, tile row ty)
 *         for tx, cb:
 *           input:  d[i][j] = X[n, cb, m*ty-pt+i, m*tx-pl+j, :]   (0 outside the image)
 *                   V[p*a+q, t, cb*L ..] = (B^T d B)[p, q]
 *           output: u[p][q] = M[p*a+q, t, cb*L ..]
 *                   Y[n, cb, m*ty+i, m*tx+j, :] = (A^T u A)[i, j]  (inside the output)
 *
 * V and M are [a*a, T, C] with the channels innermost: the batched matmul between them is
 * V x U^T with the transformed weights [a*a, C, OC] as its constant operand. Every access
 * is a whole vector along a tensor's last dimension; each Y element is stored once. The
 * matrix products are unrolled over the nonzero entries of B^T and A^T (hc_wino_matrices):
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
    const hc_wino_mats *w; /* the transform matrices: tile m x m from a x a */
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
    const int m = g->w->m, n = g->w->a;
    hc_expr *col0 = let(g, "col0", SUB(MUL(tx, I(g, m)), I(g, s->pl)));
    hc_expr *d[6][6];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
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
    /* rows of B^T d, then columns */
    hc_expr *r[6][6];
    for (int p = 0; p < n; p++)
        for (int j = 0; j < n; j++) {
            hc_expr *col[6];
            for (int i = 0; i < n; i++) col[i] = d[i][j];
            r[p][j] = letv(g, "r", combine(g, g->w->bt[p], col, n));
        }
    hc_expr *t = ADD(g->t0, tx), *ch = MUL(c, I(g, g->L));
    for (int p = 0; p < n; p++)
        for (int q = 0; q < n; q++)
            vstore(g, hc_address(a, g->out, 3, (hc_expr *[]){I(g, p * n + q), t, ch}),
                   combine(g, g->w->bt[q], r[p], n));
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
    const int m = g->w->m, n = g->w->a;
    g->row0 = let(g, "row0", SUB(MUL(g->ty, I(g, m)), I(g, s->pt)));
    /* tiles whose n columns m*tx - pl .. + n - 1 are inside [0, w) */
    int64_t lo = hc_cdiv(s->pl, m), hi = s->w + s->pl - n >= 0 ? (s->w + s->pl - n) / m + 1 : 0;
    lo = HC_MIN(lo, g->tw), hi = HC_MIN(hi, g->tw);
    if (hi <= lo) {
        input_tiles(g, 0, g->tw, true);
        return;
    }
    hc_b_if_begin(g->b, hc_and(a, hc_le(a, I(g, 0), g->row0),
                               hc_le(a, ADD(g->row0, I(g, n)), I(g, s->h))));
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
    const int m = g->w->m, n = g->w->a;
    hc_expr *t = ADD(g->t0, tx), *ch = MUL(c, I(g, g->L)), *u[6][6];
    for (int p = 0; p < n; p++)
        for (int q = 0; q < n; q++) {
            hc_expr *ptr = hc_address(a, g->in, 3, (hc_expr *[]){I(g, p * n + q), t, ch});
            u[p][q] = letv(g, "u", vcall(g, HC_PRIM_VLOAD, g->vec, 1, ptr, NULL, NULL));
        }
    for (int i = 0; i < rows; i++) {
        hc_expr *r[6]; /* row i of A^T u */
        for (int q = 0; q < n; q++) {
            hc_expr *col[6];
            for (int p = 0; p < n; p++) col[p] = u[p][q];
            r[q] = letv(g, "r", combine(g, g->w->at[i], col, n));
        }
        hc_expr *oh = ADD(MUL(g->ty, I(g, m)), I(g, i));
        for (int j = 0; j < cols; j++) {
            hc_expr *ow = ADD(MUL(tx, I(g, m)), I(g, j));
            vstore(g, hc_address(a, g->out, 5, (hc_expr *[]){g->n, c, oh, ow, I(g, 0)}),
                   combine(g, g->w->at[j], r, n));
        }
    }
}

static void output_row(wb *g, int rows) {
    const int m = g->w->m;
    int64_t full = g->s->ow / m;
    if (full > 0) {
        HC_FOR(g->b, x, "tx", I(g, full), hc_serial()) {
            HC_FOR(g->b, c, "cb", I(g, g->cb), hc_serial()) {
                output_tile(g, R(g, x), R(g, c), rows, m);
            }
        }
    }
    if (g->s->ow % m) {
        HC_FOR(g->b, c, "cb", I(g, g->cb), hc_serial()) {
            output_tile(g, I(g, full), R(g, c), rows, (int)(g->s->ow % m));
        }
    }
}

static void output_item(wb *g) {
    const int m = g->w->m;
    if (g->s->oh % m == 0) {
        output_row(g, m);
        return;
    }
    hc_b_if_begin(g->b, hc_lt(g->a, g->ty, I(g, g->th - 1)));
    output_row(g, m);
    hc_b_else(g->b);
    output_row(g, (int)(g->s->oh % m));
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
    const hc_wino_mats *w = hc_wino_matrices(s->m ? s->m : 2);
    bool ok = w && s->n >= 1 && s->c >= 1 && s->oh >= 1 && s->ow >= 1 && s->pt >= 0 &&
              s->pl >= 0 && (block == 4 || block == 8 || block == 16) && s->c % block == 0;
    if (input) ok = ok && s->h >= 1 && s->w >= 1;
    if (!ok) {
        hc_error_set(err, HC_ERR_INVALID, "winograd nchwc template: invalid shape");
        return NULL;
    }
    hc_builder b;
    wb gs = {.a = a, .b = &b, .s = s, .w = w, .L = block, .th = hc_cdiv(s->oh, w->m),
             .tw = hc_cdiv(s->ow, w->m), .cb = s->c / block};
    wb *g = &gs;
    g->vec = hc_type_vector(a, HC_F32, block);
    int64_t tiles = s->n * g->th * g->tw;
    const int64_t xs[5] = {s->n, g->cb, input ? s->h : s->oh, input ? s->w : s->ow, block};
    const int64_t vs[3] = {(int64_t)w->a * w->a, tiles, s->c};
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
