/* winograd_nchwc_cpu.c — CPU templates for the Winograd F(2x2, 3x3) transforms on the
 * channel-blocked layout (winograd.h, docs/nchwc.md): the channels lie on the vector lanes,
 * so each transform is the scalar one of docs/winograd.md done on whole vectors.
 *
 *   for t in [0, T) parallel:
 *     for (ti) in spatial(T) on t:
 *       for (it) in repeat(ceil(items / T)):       item = (n, tile row ty)
 *         for tx, cb:
 *           input:  d[i][j] = X[n, cb, 2ty-pt+i, 2tx-pl+j, :]     (0 outside the image)
 *                   V[a*4+b, t, cb*L ..] = (B^T d B)[a, b]
 *           output: m[a][b] = M[a*4+b, t, cb*L ..]
 *                   Y[n, cb, 2ty+i, 2tx+j, :] = (A^T m A)[i, j]  (inside the output)
 *
 * V and M are [16, T, C] with the channels innermost: the batched matmul between them is
 * V x U^T with the transformed weights [16, C, OC] as its constant operand. Every access
 * is a whole vector along a tensor's last dimension; each Y element is stored once. */
#include "ir/mapping.h"
#include "sched/sched.h"
#include "sched/winograd.h"

typedef struct wb {
    hc_arena *a;
    hc_builder *b;
    const hc_wino_shape *s;
    int L;
    int64_t th, tw, cb;
    const hc_type *vec;
    bool input; /* the input transform (else the output one) */
    hc_var *in, *out;
    hc_expr *n, *ty, *t0, *row0;
} wb;

static hc_expr *I(wb *g, int64_t v) { return hc_int(g->a, v); }
static hc_expr *R(wb *g, hc_var *v) { return hc_ref(g->a, v); }
#define ADD(x, y) hc_add(g->a, (x), (y))
#define SUB(x, y) hc_sub(g->a, (x), (y))
#define MUL(x, y) hc_mul(g->a, (x), (y))

static hc_expr *let(wb *g, const char *name, hc_expr *value) {
    return R(g, hc_b_declare(g->b, name, hc_type_scalar(HC_INDEX_TYPE), value));
}
static hc_expr *letv(wb *g, const char *name, hc_expr *value) {
    return R(g, hc_b_declare(g->b, name, g->vec, value));
}
static hc_expr *vcall(wb *g, hc_prim p, const hc_type *t, int n, hc_expr *x, hc_expr *y) {
    hc_expr *args[2] = {x, y};
    return hc_call(g->a, p, t, n, args);
}
static void vstore(wb *g, hc_expr *ptr, hc_expr *v) {
    hc_expr *args[2] = {ptr, v};
    hc_b_eval(g->b, hc_call(g->a, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2, args));
}

/* ---- input transform ------------------------------------------------------------------ */
static void input_tile(wb *g, hc_expr *tx, hc_expr *c, bool guarded) {
    hc_arena *a = g->a;
    const hc_wino_shape *s = g->s;
    hc_expr *col0 = let(g, "col0", SUB(MUL(tx, I(g, 2)), I(g, s->pl)));
    hc_expr *d[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            hc_expr *r = ADD(g->row0, I(g, i)), *cc = ADD(col0, I(g, j));
            if (!guarded) {
                hc_expr *p = hc_address(a, g->in, 5, (hc_expr *[]){g->n, c, r, cc, I(g, 0)});
                d[i][j] = letv(g, "d", vcall(g, HC_PRIM_VLOAD, g->vec, 1, p, NULL));
                continue;
            }
            /* outside the image: a masked load of no lanes (zeros) at a clamped address */
            hc_expr *in = hc_and(a, hc_and(a, hc_le(a, I(g, 0), r), hc_lt(a, r, I(g, s->h))),
                                 hc_and(a, hc_le(a, I(g, 0), cc), hc_lt(a, cc, I(g, s->w))));
            hc_expr *rc = hc_min(a, hc_max(a, r, I(g, 0)), I(g, s->h - 1));
            hc_expr *ccl = hc_min(a, hc_max(a, cc, I(g, 0)), I(g, s->w - 1));
            hc_expr *p = hc_address(a, g->in, 5, (hc_expr *[]){g->n, c, rc, ccl, I(g, 0)});
            hc_expr *cnt = hc_select(a, in, I(g, g->L), I(g, 0));
            d[i][j] = letv(g, "d", vcall(g, HC_PRIM_VLOAD_MASK, g->vec, 2, p, cnt));
        }
    /* rows of B^T d, then columns: row a is (d0 - d2, d1 + d2, d2 - d1, d1 - d3)[a] */
    hc_expr *r[4][4];
    for (int j = 0; j < 4; j++) {
        r[0][j] = letv(g, "r", SUB(d[0][j], d[2][j]));
        r[1][j] = letv(g, "r", ADD(d[1][j], d[2][j]));
        r[2][j] = letv(g, "r", SUB(d[2][j], d[1][j]));
        r[3][j] = letv(g, "r", SUB(d[1][j], d[3][j]));
    }
    hc_expr *t = ADD(g->t0, tx), *ch = MUL(c, I(g, g->L));
    for (int i = 0; i < 4; i++) {
        hc_expr *v[4] = {SUB(r[i][0], r[i][2]), ADD(r[i][1], r[i][2]), SUB(r[i][2], r[i][1]),
                         SUB(r[i][1], r[i][3])};
        for (int j = 0; j < 4; j++)
            vstore(g, hc_address(a, g->out, 3, (hc_expr *[]){I(g, i * 4 + j), t, ch}), v[j]);
    }
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
    g->row0 = let(g, "row0", SUB(MUL(g->ty, I(g, 2)), I(g, s->pt)));
    /* tiles whose 4 columns 2tx - pl .. +3 are inside [0, w) */
    int64_t lo = (s->pl + 1) / 2, hi = s->w + s->pl - 4 >= 0 ? (s->w + s->pl - 4) / 2 + 1 : 0;
    lo = HC_MIN(lo, g->tw), hi = HC_MIN(hi, g->tw);
    if (hi <= lo) {
        input_tiles(g, 0, g->tw, true);
        return;
    }
    hc_b_if_begin(g->b, hc_and(a, hc_le(a, I(g, 0), g->row0),
                               hc_le(a, ADD(g->row0, I(g, 4)), I(g, s->h))));
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
    hc_expr *t = ADD(g->t0, tx), *ch = MUL(c, I(g, g->L)), *m[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            hc_expr *p = hc_address(a, g->in, 3, (hc_expr *[]){I(g, i * 4 + j), t, ch});
            m[i][j] = letv(g, "m", vcall(g, HC_PRIM_VLOAD, g->vec, 1, p, NULL));
        }
    for (int i = 0; i < rows; i++) {
        hc_expr *r[4]; /* row i of A^T m: (m0 + m1 + m2, m1 - m2 - m3)[i] */
        for (int j = 0; j < 4; j++)
            r[j] = letv(g, "r", i == 0 ? ADD(ADD(m[0][j], m[1][j]), m[2][j])
                                       : SUB(SUB(m[1][j], m[2][j]), m[3][j]));
        hc_expr *y[2] = {ADD(ADD(r[0], r[1]), r[2]), SUB(SUB(r[1], r[2]), r[3])};
        hc_expr *oh = ADD(MUL(g->ty, I(g, 2)), I(g, i));
        for (int j = 0; j < cols; j++) {
            hc_expr *ow = ADD(MUL(tx, I(g, 2)), I(g, j));
            vstore(g, hc_address(a, g->out, 5, (hc_expr *[]){g->n, c, oh, ow, I(g, 0)}), y[j]);
        }
    }
}

static void output_row(wb *g, int rows) {
    int64_t full = g->s->ow / 2;
    if (full > 0) {
        HC_FOR(g->b, x, "tx", I(g, full), hc_serial()) {
            HC_FOR(g->b, c, "cb", I(g, g->cb), hc_serial()) {
                output_tile(g, R(g, x), R(g, c), rows, 2);
            }
        }
    }
    if (g->s->ow % 2) {
        HC_FOR(g->b, c, "cb", I(g, g->cb), hc_serial()) {
            output_tile(g, I(g, full), R(g, c), rows, 1);
        }
    }
}

static void output_item(wb *g) {
    if (g->s->oh % 2 == 0) {
        output_row(g, 2);
        return;
    }
    hc_b_if_begin(g->b, hc_lt(g->a, g->ty, I(g, g->th - 1)));
    output_row(g, 2);
    hc_b_else(g->b);
    output_row(g, 1);
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
    bool ok = s->n >= 1 && s->c >= 1 && s->oh >= 1 && s->ow >= 1 && s->pt >= 0 && s->pl >= 0 &&
              (block == 4 || block == 8 || block == 16) && s->c % block == 0;
    if (input) ok = ok && s->h >= 1 && s->w >= 1;
    if (!ok) {
        hc_error_set(err, HC_ERR_INVALID, "winograd nchwc template: invalid shape");
        return NULL;
    }
    hc_builder b;
    wb gs = {.a = a, .b = &b, .s = s, .L = block, .th = (s->oh + 1) / 2, .tw = (s->ow + 1) / 2,
             .cb = s->c / block};
    wb *g = &gs;
    g->vec = hc_type_vector(a, HC_F32, block);
    int64_t tiles = s->n * g->th * g->tw;
    const int64_t xs[5] = {s->n, g->cb, input ? s->h : s->oh, input ? s->w : s->ow, block};
    const int64_t vs[3] = {16, tiles, s->c};
    const hc_type *xt = hc_type_tensor_c(a, HC_F32, 5, xs, HC_SCOPE_GLOBAL);
    const hc_type *vt = hc_type_tensor_c(a, HC_F32, 3, vs, HC_SCOPE_GLOBAL);
    g->in = hc_var_new(a, input ? "X" : "M", input ? xt : vt);
    g->out = hc_var_new(a, input ? "V" : "Y", input ? vt : xt);
    hc_builder_init(&b, a);
    g->input = input;
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
