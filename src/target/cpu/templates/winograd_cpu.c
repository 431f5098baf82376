/* winograd_cpu.c — CPU templates for the Winograd F(2x2, 3x3) transforms (winograd.h,
 * docs/winograd.md).
 *
 *   for t in [0, T) parallel:
 *     for (ti) in spatial(T) on t:
 *       for (it) in repeat(ceil(items / T)):        item = (n, c, block of tile rows)
 *         input:  for ty in the block, tx in the tile row: d = X[n, c, 2ty-pt .. +4, 2tx-pl .. +4]
 *                   scratch[a*4+b, (ty - ty0)*TW + tx] = (B^T d B)[a, b]
 *                 V[e, c, t0 ..] = scratch[e, ..]     (16 contiguous runs)
 *         output: for tx in the tile row: m[a, b] = M[a*4+b, c, t0 + tx]
 *                   Y[n, c, 2ty + i, 2tx + j] = (A^T m A)[i, j]
 *
 * The tile loop is a plain loop over tx whose V (resp. M) accesses are contiguous in tx
 * and whose X (resp. Y) accesses are two interleaved stride-2 streams per row: the C
 * compiler vectorizes it (interleaved load/store groups). Borders are taken out of the
 * inner loop: the input transform runs its unguarded body on the tiles that lie inside
 * the image and a guarded one (zero outside) elsewhere; the output transform stores
 * whole 2x2 tiles except in the last tile column / row of an odd OW / OH. Each output
 * element is stored once (epilogues land at the stores). */
#include "ir/mapping.h"
#include "target/cpu/cpu.h"
#include "target/cpu/templates/dsl.h"
#include "target/cpu/templates/winograd.h"

typedef struct wg {
    hc_arena *a;
    hc_builder *b;
    const hc_wino_shape *s;
    int64_t th, tw;
    int64_t rb;        /* input: tile rows per item */
    int64_t nblk;      /* blocks of rb tile rows per plane */
    bool input;        /* the input transform (else the output one) */
    hc_var *in, *out;
    hc_var *scr;       /* input: the item's tiles [16, rb * tw], copied to V at its end */
    hc_expr *n, *c, *ty, *t0, *row0, *srow; /* item state */
} wg;

static hc_expr *letf(wg *g, const char *name, hc_expr *value) {
    return hc_dsl_let(g->a, g->b, name, hc_type_scalar(HC_F32), value);
}

/* ---- input transform ------------------------------------------------------------------ */
static void input_tile(wg *g, hc_expr *tx, bool guarded) {
    hc_arena *a = g->a;
    const hc_wino_shape *s = g->s;
    hc_expr *col0 = let(g, "col0", SUB(MUL(tx, I(g, 2)), I(g, s->pl)));
    hc_expr *d[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            hc_expr *r = ADD(g->row0, I(g, i)), *c = ADD(col0, I(g, j));
            if (!guarded) {
                d[i][j] = letf(g, "d", hc_load(a, g->in, 4, (hc_expr *[]){g->n, g->c, r, c}));
                continue;
            }
            hc_expr *in = hc_and(a, hc_and(a, hc_le(a, I(g, 0), r), hc_lt(a, r, I(g, s->h))),
                                 hc_and(a, hc_le(a, I(g, 0), c), hc_lt(a, c, I(g, s->w))));
            hc_expr *rc = hc_min(a, hc_max(a, r, I(g, 0)), I(g, s->h - 1));
            hc_expr *cc = hc_min(a, hc_max(a, c, I(g, 0)), I(g, s->w - 1));
            hc_expr *x = hc_load(a, g->in, 4, (hc_expr *[]){g->n, g->c, rc, cc});
            d[i][j] = letf(g, "d", hc_select(a, in, x, hc_f32(a, 0)));
        }
    /* rows of B^T d, then columns: row a is (d0 - d2, d1 + d2, d2 - d1, d1 - d3)[a] */
    hc_expr *r[4][4];
    for (int j = 0; j < 4; j++) {
        r[0][j] = letf(g, "r", SUB(d[0][j], d[2][j]));
        r[1][j] = letf(g, "r", ADD(d[1][j], d[2][j]));
        r[2][j] = letf(g, "r", SUB(d[2][j], d[1][j]));
        r[3][j] = letf(g, "r", SUB(d[1][j], d[3][j]));
    }
    hc_expr *t = ADD(g->srow, tx);
    for (int i = 0; i < 4; i++) {
        hc_expr *v[4] = {SUB(r[i][0], r[i][2]), ADD(r[i][1], r[i][2]), SUB(r[i][2], r[i][1]),
                         SUB(r[i][1], r[i][3])};
        for (int j = 0; j < 4; j++)
            hc_b_store(g->b, g->scr, 2, (hc_expr *[]){I(g, i * 4 + j), t}, v[j]);
    }
}

/* Tiles [lo, hi) of the item's row (constant bounds). */
static void input_tiles(wg *g, int64_t lo, int64_t hi, bool guarded) {
    if (hi <= lo) return;
    HC_FOR(g->b, x, "tx", I(g, hi - lo), hc_serial()) {
        input_tile(g, ADD(R(g, x), I(g, lo)), guarded);
    }
}

static void input_row(wg *g) {
    const hc_wino_shape *s = g->s;
    g->row0 = let(g, "row0", SUB(MUL(g->ty, I(g, 2)), I(g, s->pt)));
    /* tiles whose 4 columns 2tx - pl .. +3 are inside [0, w) */
    int64_t lo = hc_cdiv(s->pl, 2), hi = s->w + s->pl - 4 >= 0 ? (s->w + s->pl - 4) / 2 + 1 : 0;
    lo = HC_MIN(lo, g->tw), hi = HC_MIN(hi, g->tw);
    if (hi <= lo) {
        input_tiles(g, 0, g->tw, true);
        return;
    }
    hc_arena *a = g->a;
    hc_b_if_begin(g->b, hc_and(a, hc_le(a, I(g, 0), g->row0),
                               hc_le(a, ADD(g->row0, I(g, 4)), I(g, s->h))));
    input_tiles(g, 0, lo, true);
    input_tiles(g, lo, hi, false);
    input_tiles(g, hi, g->tw, true);
    hc_b_else(g->b);
    input_tiles(g, 0, g->tw, true);
    hc_b_end(g->b);
}

/* Tile rows ty0 .. ty0 + rb of plane (n, c) into the scratch, then the scratch to V: 16
 * contiguous runs. Storing the 16 values of a tile straight to V would write 16 streams
 * C*T floats apart, which share L1 sets whenever C*T*4 is a multiple of 4096 (56x56 and
 * 7x7 layers of ResNet-50: 9x slower). */
static void input_item(wg *g, hc_expr *blk) {
    hc_arena *a = g->a;
    hc_expr *ty0 = let(g, "ty0", MUL(blk, I(g, g->rb)));
    bool ragged = g->th % g->rb != 0;
    HC_FOR(g->b, r, "r", I(g, g->rb), hc_serial()) {
        if (ragged) hc_b_if_begin(g->b, hc_lt(a, ADD(ty0, R(g, r)), I(g, g->th)));
        g->ty = let(g, "ty", ADD(ty0, R(g, r)));
        g->srow = let(g, "srow", MUL(R(g, r), I(g, g->tw)));
        input_row(g);
        if (ragged) hc_b_end(g->b);
    }
    hc_expr *t0 = let(g, "t0", MUL(ADD(MUL(g->n, I(g, g->th)), ty0), I(g, g->tw)));
    hc_expr *len = I(g, g->rb * g->tw);
    if (ragged)
        len = let(g, "len", MUL(hc_min(a, I(g, g->rb), SUB(I(g, g->th), ty0)), I(g, g->tw)));
    HC_FOR(g->b, e, "e", I(g, 16), hc_serial()) {
        HC_FOR(g->b, k, "k", len, hc_serial()) {
            hc_b_store(g->b, g->out, 3, (hc_expr *[]){R(g, e), g->c, ADD(t0, R(g, k))},
                       hc_load(a, g->scr, 2, (hc_expr *[]){R(g, e), R(g, k)}));
        }
    }
}

/* ---- output transform ----------------------------------------------------------------- */
/* The rows x cols top-left part of tile tx of the item's row. */
static void output_tile(wg *g, hc_expr *tx, int rows, int cols) {
    hc_arena *a = g->a;
    hc_expr *t = ADD(g->t0, tx), *m[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            m[i][j] = letf(g, "m", hc_load(a, g->in, 3, (hc_expr *[]){I(g, i * 4 + j), g->c, t}));
    for (int i = 0; i < rows; i++) {
        hc_expr *r[4]; /* row i of A^T m: (m0 + m1 + m2, m1 - m2 - m3)[i] */
        for (int j = 0; j < 4; j++)
            r[j] = letf(g, "r", i == 0 ? ADD(ADD(m[0][j], m[1][j]), m[2][j])
                                       : SUB(SUB(m[1][j], m[2][j]), m[3][j]));
        hc_expr *y[2] = {ADD(ADD(r[0], r[1]), r[2]), SUB(SUB(r[1], r[2]), r[3])};
        hc_expr *oh = ADD(MUL(g->ty, I(g, 2)), I(g, i));
        for (int j = 0; j < cols; j++) {
            hc_expr *ow = ADD(MUL(tx, I(g, 2)), I(g, j));
            hc_b_store(g->b, g->out, 4, (hc_expr *[]){g->n, g->c, oh, ow}, y[j]);
        }
    }
}

static void output_row(wg *g, int rows) {
    int64_t full = g->s->ow / 2;
    if (full > 0) {
        HC_FOR(g->b, x, "tx", I(g, full), hc_serial()) { output_tile(g, R(g, x), rows, 2); }
    }
    if (g->s->ow % 2) output_tile(g, I(g, full), rows, 1);
}

static void output_item(wg *g) {
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
/* Per thread (input): the scratch of the item's tiles. */
static void thread_setup(void *ctx) {
    wg *g = ctx;
    g->scr = hc_b_declare(g->b, "scr",
                          hc_type_tensor_c(g->a, HC_F32, 2, (int64_t[]){16, g->rb * g->tw},
                                           HC_SCOPE_SHARED),
                          NULL);
}

/* Item = (n, c, block of tile rows). */
static void item_body(void *ctx, hc_expr *w) {
    wg *g = ctx;
    hc_arena *a = g->a;
    const hc_wino_shape *s = g->s;
    hc_expr *w0 = let(g, "item", w);
    hc_expr *blk = let(g, "blk", hc_mod(a, w0, I(g, g->nblk)));
    hc_expr *plane = let(g, "plane", hc_div(a, w0, I(g, g->nblk)));
    g->n = let(g, "n", hc_div(a, plane, I(g, s->c)));
    g->c = let(g, "c", hc_mod(a, plane, I(g, s->c)));
    if (g->input) {
        input_item(g, blk);
    } else {
        g->ty = blk;
        g->t0 = let(g, "t0", MUL(ADD(MUL(g->n, I(g, g->th)), g->ty), I(g, g->tw)));
        output_item(g);
    }
}

static bool valid(const hc_wino_shape *s, bool input, hc_error *err) {
    bool ok = s->n >= 1 && s->c >= 1 && s->oh >= 1 && s->ow >= 1 && s->pt >= 0 && s->pl >= 0 &&
              (s->m == 0 || s->m == 2); /* F(2x2, 3x3) only (the blocked templates do 4) */
    if (input) ok = ok && s->h >= 1 && s->w >= 1;
    if (!ok) hc_error_set(err, HC_ERR_INVALID, "winograd template: invalid shape");
    return ok;
}

static hc_func *build(hc_arena *a, const char *name, const hc_wino_shape *s, int threads,
                      bool input, hc_error *err) {
    if (!valid(s, input, err)) return NULL;
    hc_builder b;
    wg gs = {.a = a, .b = &b, .s = s, .th = hc_cdiv(s->oh, 2), .tw = hc_cdiv(s->ow, 2)};
    wg *g = &gs;
    int64_t tiles = s->n * g->th * g->tw;
    const int64_t xs[4] = {s->n, s->c, input ? s->h : s->oh, input ? s->w : s->ow};
    const int64_t vs[3] = {16, s->c, tiles};
    const hc_type *xt = hc_type_tensor_c(a, HC_F32, 4, xs, HC_SCOPE_GLOBAL);
    const hc_type *vt = hc_type_tensor_c(a, HC_F32, 3, vs, HC_SCOPE_GLOBAL);
    g->in = hc_var_new(a, input ? "X" : "M", input ? xt : vt);
    g->out = hc_var_new(a, input ? "V" : "Y", input ? vt : xt);
    hc_builder_init(&b, a);
    /* input: tile rows per item so that the scratch stays within 16 KB */
    g->rb = input ? HC_MAX(1, HC_MIN(g->th, 256 / g->tw)) : 1;
    g->nblk = hc_cdiv(g->th, g->rb);
    g->input = input;
    hc_sched_split_items(&b, s->n * s->c * g->nblk, threads, input ? thread_setup : NULL,
                         item_body, g);
    hc_stmt *body = hc_builder_finish(&b);
    hc_var *params[2] = {g->in, g->out};
    return hc_func_new(a, name ? name : (input ? "wino_input" : "wino_output"), HC_FN_CPU_KERNEL,
                       2, params, body);
}

hc_func *hc_wino_input_cpu(hc_arena *a, const char *name, const hc_wino_shape *s, int threads,
                           hc_error *err) {
    return build(a, name, s, threads, true, err);
}

hc_func *hc_wino_output_cpu(hc_arena *a, const char *name, const hc_wino_shape *s, int threads,
                            hc_error *err) {
    return build(a, name, s, threads, false, err);
}
