/* attention_cpu.c — the CPU fp32 template for ATTENTION_FUSED
 * (src/target/cpu/templates/attention.h).
 *
 *   for t in [0, T) parallel:
 *     for (ti) in spatial(T) on t:          scratch per thread: S [rq][tp], Kt [D][tp], rs [rq]
 *       for (it) in repeat(ceil(items / T)):            item = (b, h, chunk of query rows)
 *         [pack: Kt[d][j] = K[b, h / grp, kb + j, d] for the keys the chunk sees]
 *         for each tile of rq rows i0 ..:               keys [klo, klo + nk) seen by the tile
 *           S[r][j]  = Q[i0 + r] . K[klo + j]            register tile (rq x kv)
 *           per row r: z = cap(scale * S) + bias, -inf outside the row's keys;
 *                      S[r][j] = exp(z - max), rs[r] = 1 / sum (0 for an empty sum)
 *           Y[i0 + r][e] = rs[r] * sum_j S[r][j] V[klo + j][e]   register tile (rq x dv)
 *
 * The keys a row may see are one range [lo(i), hi(i)): the causal frontier, the window and
 * the padding each bound it on one side, and both bounds grow with i, so the tile's keys
 * are [lo(i0), hi(last row)) and each row masks the few outside its own range. A row
 * whose range is empty, or whose bias is -inf over it, sums to 0 and gives 0, as
 * ATTENTION_CORE's guard. Rows of a tile past the chunk are computed on the last row
 * (clamped) and not stored; the scores' scratch rows are padded to whole key tiles, whose
 * lanes past the tile's keys are never read as probabilities. */
#include <math.h>

#include "ir/mapping.h"
#include "target/cpu/templates/attention.h"
#include "target/cpu/templates/dsl.h"

hc_status hc_attn_validate_shape(const hc_attn_shape *s, hc_error *err) {
    const int64_t pos[] = {s->B, s->Hq, s->Hk, s->Sq, s->T, s->D, s->Dv};
    const char *names[] = {"B", "Hq", "Hk", "Sq", "T", "D", "Dv"};
    for (size_t i = 0; i < HC_ARRAY_LEN(pos); i++)
        if (pos[i] < 1 || pos[i] > ((int64_t)1 << 30))
            return hc_error_set(err, HC_ERR_INVALID, "attention shape: %s = %lld is not in "
                                "[1, 2^30]", names[i], (long long)pos[i]);
    if (s->Hq % s->Hk)
        return hc_error_set(err, HC_ERR_INVALID, "attention shape: %lld query heads, %lld KV "
                            "heads", (long long)s->Hq, (long long)s->Hk);
    const int64_t full[4] = {s->B, s->Hq, s->Sq, s->T};
    for (int d = 0; s->bias && d < 4; d++)
        if (s->bias_shape[d] != 1 && s->bias_shape[d] != full[d])
            return hc_error_set(err, HC_ERR_INVALID, "attention shape: bias dim %d is %lld", d,
                                (long long)s->bias_shape[d]);
    if (s->left < -1 || s->right < -1 || s->softcap < 0)
        return hc_error_set(err, HC_ERR_INVALID, "attention shape: window %lld, %lld, softcap %g",
                            (long long)s->left, (long long)s->right, s->softcap);
    return HC_OK;
}

hc_status hc_attn_validate(const hc_attn_config *c, hc_error *err) {
    if (c->lanes != 8 && c->lanes != 16)
        return hc_error_set(err, HC_ERR_INVALID, "attention config: lanes %d is not 8 or 16",
                            c->lanes);
    if (c->rq < 1 || c->rq > HC_ATTN_MAX_RQ || c->kv < 1 || c->kv > HC_ATTN_MAX_KV || c->dv < 1 ||
        c->dv > HC_ATTN_MAX_DV)
        return hc_error_set(err, HC_ERR_INVALID, "attention config: rq %d, kv %d, dv %d are not "
                            "within %d, %d, %d", c->rq, c->kv, c->dv, HC_ATTN_MAX_RQ,
                            HC_ATTN_MAX_KV, HC_ATTN_MAX_DV);
    if (c->rows < 1 || c->threads < 1 || c->threads > HC_ATTN_MAX_THREADS)
        return hc_error_set(err, HC_ERR_INVALID, "attention config: rows %d, threads %d",
                            c->rows, c->threads);
    return HC_OK;
}

void hc_attn_config_print(hc_sb *sb, const hc_attn_config *c) {
    hc_sb_printf(sb, "%s rq%d kv%d dv%d rows%d t%d", c->pack ? "pack" : "dot", c->rq, c->kv,
                 c->dv, c->rows, c->threads);
}

/* Registers of the Q K^T tile: accumulators, the key vectors (pack) or the query vectors
 * (dot), one broadcast or key vector; and of the P V tile: accumulators, V vectors, one
 * broadcast. */
static bool qk_fits(int regs, bool pack, int rq, int kv) {
    return rq * kv + (pack ? kv : rq) + 1 <= regs;
}
static bool pv_fits(int regs, int rq, int dv) { return rq * dv + dv + 1 <= regs; }

bool hc_attn_tile_fits(const hc_target *t, const hc_attn_config *c) {
    return qk_fits(t->caps.num_regs, c->pack, c->rq, c->kv) &&
           pv_fits(t->caps.num_regs, c->rq, c->dv);
}

/* Keys per Q K^T tile. */
static int64_t key_tile(const hc_attn_config *c) { return c->pack ? (int64_t)c->kv * c->lanes : c->kv; }

/* Scratch row length: the keys rounded up to whole vectors plus one key tile (a tile may
 * start anywhere and is written whole). */
static int64_t row_len(const hc_attn_shape *s, const hc_attn_config *c) {
    return hc_round_up(s->T, c->lanes) + hc_round_up(key_tile(c), c->lanes);
}

int64_t hc_attn_scratch_floats(const hc_attn_shape *s, const hc_attn_config *c) {
    int64_t tp = row_len(s, c);
    return (c->rq + (c->pack ? s->D : 0)) * tp + c->rq;
}

static hc_attn_config clip(hc_attn_config c, const hc_attn_shape *s) {
    if (c.rq > s->Sq) c.rq = (int)s->Sq;
    if (c.rows > s->Sq) c.rows = (int)s->Sq;
    if (c.rows < s->Sq) c.rows = (int)hc_round_up(c.rows, c.rq);
    if (c.rows > s->Sq) c.rows = (int)s->Sq;
    int64_t dvec = hc_cdiv(s->Dv, c.lanes);
    if (c.dv > dvec) c.dv = (int)dvec;
    if (!c.pack && c.kv > s->T) c.kv = (int)s->T;
    int64_t items = s->B * s->Hq * hc_cdiv(s->Sq, c.rows);
    if (c.threads > items) c.threads = (int)items;
    return c;
}

/* The largest P V tile width (at most 4 vectors) that fits beside rq rows. */
static int pv_width(int regs, int rq) {
    int dv = 4;
    while (dv > 1 && !pv_fits(regs, rq, dv)) dv--;
    return dv;
}

/* Rows per item: all of Sq, unless there are fewer than two items per thread (then the
 * rows split so that there are). */
static int default_rows(const hc_attn_shape *s, int threads, int rq) {
    int64_t heads = s->B * s->Hq, rows = s->Sq;
    if (threads > 1 && heads < 2 * (int64_t)threads) {
        int64_t chunks = hc_cdiv(2 * (int64_t)threads, heads);
        rows = hc_round_up(hc_cdiv(s->Sq, chunks), rq);
    }
    return (int)HC_MIN(rows, s->Sq);
}

hc_attn_config hc_attn_default_config(const hc_target *t, const hc_attn_shape *s) {
    int regs = t->caps.num_regs;
    hc_attn_config c = {.lanes = hc_target_f32_lanes(t)};
    /* K^T packed once per item costs T x D scalar moves; with vectors along D each score
     * costs a horizontal sum instead (a few instructions, whatever D): packing pays from
     * Sq ~ 3 D / 8 rows on. Measured (--tune 1, B1 H12 T512 D64, AVX-512, 2 threads): the
     * vectors along D won at Sq 1 to 16, the packed K^T at 32 and 64 (and at Sq = T = 128) */
    c.pack = 8 * s->Sq >= 3 * s->D;
    if (c.pack) {
        c.rq = 6; /* 6 x 4 vectors (AVX-512), as the matmul's micro-kernel */
        c.kv = 4;
        while (c.kv > 1 && !qk_fits(regs, true, c.rq, c.kv)) c.kv--;
    } else {
        c.rq = (int)HC_MIN(s->Sq, 4); /* 4 x 4 keys: the tuner's pick at Sq 4 to 16 */
        c.kv = 4;
        while (c.kv > 1 && !qk_fits(regs, false, c.rq, c.kv)) c.kv--;
    }
    c.rq = (int)HC_MIN(c.rq, s->Sq);
    c.dv = pv_width(regs, c.rq);
    int64_t work = s->B * s->Hq * s->Sq * s->T * (s->D + s->Dv);
    c.threads = work < HC_AUTOSCHED_PARALLEL_MIN_WORK ? 1 : HC_MAX(t->caps.num_cores, 1);
    c.rows = default_rows(s, c.threads, c.rq);
    return clip(c, s);
}

bool hc_attn_applies(const hc_target *t, const hc_attn_shape *s) {
    int L = hc_target_f32_lanes(t);
    if (t->kind != HC_TARGET_CPU || t->caps.isa < HC_ISA_AVX2 || (L != 8 && L != 16) ||
        hc_attn_validate_shape(s, NULL) != HC_OK)
        return false;
    hc_attn_config c = hc_attn_default_config(t, s);
    return hc_attn_scratch_floats(s, &c) <= HC_ATTN_MAX_SCRATCH;
}

static bool same_config(const hc_attn_config *x, const hc_attn_config *y) {
    return x->pack == y->pack && x->rq == y->rq && x->kv == y->kv && x->dv == y->dv &&
           x->rows == y->rows && x->threads == y->threads;
}

int hc_attn_space(const hc_target *t, const hc_attn_shape *s, int level, hc_attn_config *out,
                  int max) {
    if (!hc_attn_applies(t, s)) return 0;
    hc_attn_config all[128];
    int n = 0, regs = t->caps.num_regs;
    all[n++] = hc_attn_default_config(t, s);
    /* (pack, rq, kv): level 1 the tiles of both Q K^T forms near the default's, level 2
     * every fitting rq x kv */
    static const int tiles1[][3] = {{1, 4, 4}, {1, 6, 2}, {1, 8, 3}, {1, 4, 2},
                                    {0, 1, 8}, {0, 2, 8}, {0, 4, 4}, {0, 2, 4},
                                    {0, 1, 4}, {0, 1, 12}};
    int ntiles = level >= 2 ? 2 * HC_ATTN_MAX_RQ * 8 : level >= 1 ? (int)HC_ARRAY_LEN(tiles1) : 0;
    for (int k = 0; k < ntiles; k++) {
        hc_attn_config c = all[0];
        if (level >= 2) {
            c.pack = k / (HC_ATTN_MAX_RQ * 8) == 0;
            c.rq = k / 8 % HC_ATTN_MAX_RQ + 1;
            c.kv = c.pack ? k % 8 / 2 + 1 : (k % 8 + 1) * 2; /* 1..4 vectors, 2..16 keys */
            if (k % 2 && c.pack) continue;
        } else {
            c.pack = tiles1[k][0], c.rq = tiles1[k][1], c.kv = tiles1[k][2];
        }
        if (c.rq > s->Sq || !qk_fits(regs, c.pack, c.rq, c.kv)) continue;
        c.dv = pv_width(regs, c.rq);
        c.rows = default_rows(s, c.threads, c.rq);
        hc_attn_config k2 = clip(c, s);
        if (hc_attn_scratch_floats(s, &k2) > HC_ATTN_MAX_SCRATCH) continue;
        bool dup = false;
        for (int q = 0; q < n && !dup; q++) dup = same_config(&all[q], &k2);
        if (!dup && n < (int)HC_ARRAY_LEN(all)) all[n++] = k2;
    }
    for (int i = 0; out && i < n && i < max; i++) out[i] = all[i];
    return n;
}

/* ---- the program ---------------------------------------------------------------------- */
typedef struct at {
    hc_arena *a;
    hc_builder *b;
    const hc_attn_shape *s;
    const hc_attn_config *c;
    int L;
    int64_t tp, nchunks, grp;
    const hc_type *vec;
    hc_var *Q, *K, *V, *Bias, *Np, *Y;
    hc_var *S, *Kt, *rs;                /* per-thread scratch */
    hc_expr *bi, *h, *hk, *off, *npb;   /* the item's batch, heads, frontier offset, nonpad */
    hc_expr *kb;                        /* the first key packed in Kt */
    /* extents: constants, or the symbols' expressions (dynamic shapes) */
    hc_expr *Be, *Sqe, *Te, *tpe, *nch, *rowse;
} at;

static hc_expr *addr(at *g, hc_var *buf, int nd, hc_expr **idx) {
    return hc_address(g->a, buf, nd, idx);
}
static hc_expr *bcast(at *g, hc_expr *x) { return vcall(g, HC_PRIM_VBROADCAST, g->vec, 1, x, 0, 0); }
static hc_expr *vf(at *g, double v) { return bcast(g, hc_f32(g->a, v)); }
static hc_expr *vload(at *g, hc_expr *p) { return vcall(g, HC_PRIM_VLOAD, g->vec, 1, p, 0, 0); }
static hc_expr *vload_n(at *g, hc_expr *p, hc_expr *n) {
    return vcall(g, HC_PRIM_VLOAD_MASK, g->vec, 2, p, n, 0);
}
static hc_expr *vfma(at *g, hc_expr *x, hc_expr *y, hc_expr *z) {
    return vcall(g, HC_PRIM_VFMA, g->vec, 3, x, y, z);
}
static hc_var *regs(at *g, const char *name, int n0, int n1) {
    hc_expr *shape[2] = {I(g, n0), I(g, n1)};
    return hc_b_declare(g->b, name,
                        hc_type_tensor_vec(g->a, HC_F32, g->L, n1 ? 2 : 1, shape, NULL,
                                           HC_SCOPE_REGISTER),
                        NULL);
}
static hc_expr *at2(at *g, hc_var *t, int i, int j) {
    return hc_load(g->a, t, 2, (hc_expr *[]){I(g, i), I(g, j)});
}
static void set2(at *g, hc_var *t, int i, int j, hc_expr *v) {
    hc_b_store(g->b, t, 2, (hc_expr *[]){I(g, i), I(g, j)}, v);
}

/* The first key row i may see, and one past its last (both may leave [0, T]: the tile
 * clamps the count). */
static hc_expr *lo_of(at *g, hc_expr *i) {
    if (g->s->left < 0) return I(g, 0);
    return MAX(I(g, 0), SUB(ADD(i, g->off), I(g, g->s->left)));
}
static hc_expr *hi_of(at *g, hc_expr *i) {
    const hc_attn_shape *s = g->s;
    hc_expr *hi = g->Te;
    if (s->causal) hi = MIN(hi, ADD(ADD(i, g->off), I(g, 1)));
    if (s->right >= 0) hi = MIN(hi, ADD(ADD(i, g->off), I(g, s->right + 1)));
    if (s->nonpad) hi = MIN(hi, g->npb);
    return hi;
}

/* Kt[d][j] = K[b, hk, kb + j, d] for j < nk. */
static void pack_kt(at *g, hc_expr *nk) {
    HC_FOR(g->b, j, "pj", nk, hc_serial()) {
        HC_FOR(g->b, d, "pd", I(g, g->s->D), hc_serial()) {
            hc_expr *k = hc_load(g->a, g->K, 4, (hc_expr *[]){g->bi, g->hk, ADD(g->kb, R(g, j)),
                                                             R(g, d)});
            hc_b_store(g->b, g->Kt, 2, (hc_expr *[]){R(g, d), R(g, j)}, k);
        }
    }
}

/* S[r][j] = Q[ir[r]] . K[klo + j] for j < nk (whole key tiles): Q broadcast against rows of
 * the packed K^T. */
static void qk_packed(at *g, hc_expr *const *ir, hc_expr *klo, hc_expr *nk) {
    int rq = g->c->rq, kv = g->c->kv, L = g->L;
    int64_t kt = (int64_t)kv * L;
    hc_expr *ntile = let(g, "nkt", DIV(ADD(nk, I(g, kt - 1)), I(g, kt)));
    HC_FOR(g->b, t, "kt", ntile, hc_serial()) {
        hc_expr *col = let(g, "col", MUL(R(g, t), I(g, kt)));
        hc_expr *kc = let(g, "kc", ADD(SUB(klo, g->kb), col));
        hc_var *acc = regs(g, "acc", rq, kv), *kvv = regs(g, "kv", kv, 0);
        for (int r = 0; r < rq; r++)
            for (int v = 0; v < kv; v++) set2(g, acc, r, v, vf(g, 0));
        HC_FOR(g->b, d, "d", I(g, g->s->D), hc_serial()) {
            for (int v = 0; v < kv; v++)
                hc_b_store(g->b, kvv, 1, (hc_expr *[]){I(g, v)},
                           vload(g, addr(g, g->Kt, 2,
                                         (hc_expr *[]){R(g, d), ADD(kc, I(g, (int64_t)v * L))})));
            for (int r = 0; r < rq; r++) {
                hc_expr *q = hc_load(g->a, g->Q, 4, (hc_expr *[]){g->bi, g->h, ir[r], R(g, d)});
                hc_var *qb = hc_b_declare(g->b, "qb", g->vec, bcast(g, q));
                for (int v = 0; v < kv; v++)
                    set2(g, acc, r, v,
                         vfma(g, R(g, qb), hc_load(g->a, kvv, 1, (hc_expr *[]){I(g, v)}),
                             at2(g, acc, r, v)));
            }
        }
        for (int r = 0; r < rq; r++)
            for (int v = 0; v < kv; v++)
                vstore(g, addr(g, g->S, 2, (hc_expr *[]){I(g, r), ADD(col, I(g, (int64_t)v * L))}),
                       at2(g, acc, r, v));
    }
}

/* The same with vectors along D: per tile of kv keys (the last clamped to the last key),
 * rq x kv accumulators over D, one horizontal sum per score. */
static void qk_dot(at *g, hc_expr *const *ir, hc_expr *klo, hc_expr *nk) {
    const hc_attn_shape *s = g->s;
    int rq = g->c->rq, kv = g->c->kv, L = g->L;
    int64_t full = s->D / L, tail = s->D % L;
    hc_expr *ntile = let(g, "nkt", DIV(ADD(nk, I(g, kv - 1)), I(g, kv)));
    HC_FOR(g->b, t, "kt", ntile, hc_serial()) {
        hc_expr *col = let(g, "col", MUL(R(g, t), I(g, kv)));
        hc_expr *jk[HC_ATTN_MAX_KV];
        for (int k = 0; k < kv; k++)
            jk[k] = let(g, "jk", ADD(klo, MIN(ADD(col, I(g, k)), SUB(nk, I(g, 1)))));
        hc_var *acc = regs(g, "acc", rq, kv), *qv = regs(g, "qv", rq, 0);
        for (int r = 0; r < rq; r++)
            for (int k = 0; k < kv; k++) set2(g, acc, r, k, vf(g, 0));
        /* one chunk of L elements of D at d0: full chunks in a loop, the tail masked */
        for (int part = 0; part < 2; part++) {
            if (part == 1 && !tail) break;
            hc_var *dc = NULL;
            if (part == 0) {
                if (!full) continue;
                dc = hc_b_for_begin(g->b, "dc", I(g, full), hc_serial());
            }
            hc_expr *d0 = part == 0 ? MUL(R(g, dc), I(g, L)) : I(g, full * L);
            for (int r = 0; r < rq; r++) {
                hc_expr *p = addr(g, g->Q, 4, (hc_expr *[]){g->bi, g->h, ir[r], d0});
                hc_b_store(g->b, qv, 1, (hc_expr *[]){I(g, r)},
                           part == 0 ? vload(g, p) : vload_n(g, p, I(g, tail)));
            }
            for (int k = 0; k < kv; k++) {
                hc_expr *p = addr(g, g->K, 4, (hc_expr *[]){g->bi, g->hk, jk[k], d0});
                hc_var *kk = hc_b_declare(g->b, "kk", g->vec,
                                          part == 0 ? vload(g, p) : vload_n(g, p, I(g, tail)));
                for (int r = 0; r < rq; r++)
                    set2(g, acc, r, k,
                         vfma(g, hc_load(g->a, qv, 1, (hc_expr *[]){I(g, r)}), R(g, kk),
                             at2(g, acc, r, k)));
            }
            if (part == 0) hc_b_end(g->b);
        }
        for (int r = 0; r < rq; r++)
            for (int k = 0; k < kv; k++)
                hc_b_store(g->b, g->S, 2, (hc_expr *[]){I(g, r), ADD(col, I(g, k))},
                           vcall(g, HC_PRIM_VREDUCE_ADD, hc_type_scalar(HC_F32), 1,
                                 at2(g, acc, r, k), 0, 0));
    }
}

/* The bias vector at keys klo + j .. (lanes past T read as 0: they are masked anyway). */
static hc_expr *bias_vec(at *g, hc_expr *i, hc_expr *j) {
    const hc_attn_shape *s = g->s;
    const int64_t *bs = s->bias_shape;
    bool one[4];
    for (int d = 0; d < 4; d++) one[d] = bs[d] == 1 && !s->bias_sym[d];
    hc_expr *idx[4] = {one[0] ? I(g, 0) : g->bi, one[1] ? I(g, 0) : g->h, one[2] ? I(g, 0) : i,
                       one[3] ? I(g, 0) : j};
    if (one[3]) return bcast(g, hc_load(g->a, g->Bias, 4, idx));
    return vload_n(g, addr(g, g->Bias, 4, idx), SUB(g->Te, j));
}

/* Row r (query row i) of the tile: the scores' nvec vectors become probabilities times
 * the row sum, and rs[r] the inverse of that sum (0 for an empty one). */
static void softmax_row(at *g, hc_expr *r, hc_expr *i, hc_expr *klo, hc_expr *nvec) {
    const hc_attn_shape *s = g->s;
    hc_arena *a = g->a;
    int L = g->L;
    HC_FOR(g->b, v, "sv", nvec, hc_serial()) {
        hc_expr *j = let(g, "sj", MUL(R(g, v), I(g, L)));
        hc_expr *p = addr(g, g->S, 2, (hc_expr *[]){r, j});
        hc_expr *x = MUL(vload(g, p), vf(g, s->scale));
        if (s->softcap > 0)
            x = MUL(hc_math(a, HC_PRIM_TANH, MUL(x, vf(g, 1.0 / s->softcap)), NULL),
                    vf(g, s->softcap));
        if (s->bias) x = ADD(x, bias_vec(g, i, ADD(klo, j)));
        vstore(g, p, x);
    }
    /* -inf before the row's first key and from its end to the end of the vectors */
    hc_expr *end = let(g, "send", MUL(nvec, I(g, L)));
    hc_expr *first = let(g, "sfirst", MIN(SUB(lo_of(g, i), klo), end));
    hc_expr *stop = let(g, "sstop", MAX(MIN(SUB(hi_of(g, i), klo), end), first));
    bool may_lead = s->left >= 0, may_trail = true;
    if (may_lead) {
        HC_FOR(g->b, j, "mj", first, hc_serial()) {
            hc_b_store(g->b, g->S, 2, (hc_expr *[]){r, R(g, j)}, hc_f32(a, -INFINITY));
        }
    }
    if (may_trail) {
        HC_FOR(g->b, j, "mt", SUB(end, stop), hc_serial()) {
            hc_b_store(g->b, g->S, 2, (hc_expr *[]){r, ADD(stop, R(g, j))}, hc_f32(a, -INFINITY));
        }
    }
    hc_var *m = hc_b_declare(g->b, "m", g->vec, vf(g, -INFINITY));
    HC_FOR(g->b, v, "mv", nvec, hc_serial()) {
        hc_expr *p = addr(g, g->S, 2, (hc_expr *[]){r, MUL(R(g, v), I(g, L))});
        hc_b_assign(g->b, m, MAX(R(g, m), vload(g, p)));
    }
    /* max(max, lowest finite): a row of -inf gives exp(-inf) = 0s, no NaN */
    hc_expr *ms = hc_dsl_let(a, g->b, "ms", hc_type_scalar(HC_F32),
                             MAX(vcall(g, HC_PRIM_VREDUCE_MAX, hc_type_scalar(HC_F32), 1, R(g, m),
                                       0, 0),
                                 hc_f32(a, -3.4028234663852886e38)));
    hc_var *msv = hc_b_declare(g->b, "msv", g->vec, bcast(g, ms));
    hc_var *sum = hc_b_declare(g->b, "sum", g->vec, vf(g, 0));
    HC_FOR(g->b, v, "ev", nvec, hc_serial()) {
        hc_expr *p = addr(g, g->S, 2, (hc_expr *[]){r, MUL(R(g, v), I(g, L))});
        hc_var *e = hc_b_declare(g->b, "e", g->vec,
                                 hc_math(a, HC_PRIM_EXP, SUB(vload(g, p), R(g, msv)), NULL));
        vstore(g, p, R(g, e));
        hc_b_assign(g->b, sum, ADD(R(g, sum), R(g, e)));
    }
    hc_expr *l = hc_dsl_let(a, g->b, "l", hc_type_scalar(HC_F32),
                            vcall(g, HC_PRIM_VREDUCE_ADD, hc_type_scalar(HC_F32), 1, R(g, sum), 0, 0));
    hc_b_store(g->b, g->rs, 1, (hc_expr *[]){r},
               hc_select(a, hc_eq(a, l, hc_f32(a, 0)), hc_f32(a, 0), DIV(hc_f32(a, 1), l)));
}

/* Y[i0 + r][c0 ..] = rs[r] * sum_j S[r][j] V[klo + j][c0 ..] per tile of dv vectors of Dv
 * (a static loop: the tail vectors are known). */
static void pv(at *g, hc_expr *i0, hc_expr *nrows, hc_expr *klo, hc_expr *nk) {
    const hc_attn_shape *s = g->s;
    int rq = g->c->rq, dv = g->c->dv, L = g->L;
    int64_t tile = (int64_t)dv * L, ntiles = hc_cdiv(s->Dv, tile);
    for (int64_t dt = 0; dt < ntiles; dt++) {
        int64_t c0 = dt * tile;
        int nv = (int)HC_MIN(dv, hc_cdiv(s->Dv - c0, L)); /* vectors with a column < Dv */
        hc_var *acc = regs(g, "pacc", rq, nv), *vv = regs(g, "vv", nv, 0);
        for (int r = 0; r < rq; r++)
            for (int v = 0; v < nv; v++) set2(g, acc, r, v, vf(g, 0));
        HC_FOR(g->b, j, "pj", nk, hc_serial()) {
            for (int v = 0; v < nv; v++) {
                int64_t col = c0 + (int64_t)v * L;
                hc_expr *p = addr(g, g->V, 4, (hc_expr *[]){g->bi, g->hk, ADD(klo, R(g, j)), I(g, col)});
                hc_b_store(g->b, vv, 1, (hc_expr *[]){I(g, v)},
                           col + L <= s->Dv ? vload(g, p) : vload_n(g, p, I(g, s->Dv - col)));
            }
            for (int r = 0; r < rq; r++) {
                hc_expr *pr = hc_load(g->a, g->S, 2, (hc_expr *[]){I(g, r), R(g, j)});
                hc_var *pb = hc_b_declare(g->b, "pb", g->vec, bcast(g, pr));
                for (int v = 0; v < nv; v++)
                    set2(g, acc, r, v,
                         vfma(g, R(g, pb), hc_load(g->a, vv, 1, (hc_expr *[]){I(g, v)}),
                             at2(g, acc, r, v)));
            }
        }
        for (int r = 0; r < rq; r++) {
            if (r > 0) hc_b_if_begin(g->b, LT(I(g, r), nrows));
            hc_var *ri = hc_b_declare(
                g->b, "ri", g->vec, bcast(g, hc_load(g->a, g->rs, 1, (hc_expr *[]){I(g, r)})));
            for (int v = 0; v < nv; v++) {
                int64_t col = c0 + (int64_t)v * L;
                hc_expr *y = MUL(at2(g, acc, r, v), R(g, ri));
                hc_expr *p = addr(g, g->Y, 4, (hc_expr *[]){g->bi, g->h, ADD(i0, I(g, r)), I(g, col)});
                if (col + L <= s->Dv) vstore(g, p, y);
                else vstore_n(g, p, y, I(g, s->Dv - col));
            }
            if (r > 0) hc_b_end(g->b);
        }
    }
}

/* One tile: query rows i0 .. i0 + nrows (nrows <= rq). */
static void tile(at *g, hc_expr *i0, hc_expr *nrows) {
    int rq = g->c->rq;
    hc_expr *last = let(g, "ilast", SUB(ADD(i0, nrows), I(g, 1)));
    hc_expr *klo = let(g, "klo", lo_of(g, i0));
    hc_expr *nk = let(g, "nk", MAX(SUB(hi_of(g, last), klo), I(g, 0)));
    hc_expr *ir[HC_ATTN_MAX_RQ];
    for (int r = 0; r < rq; r++) ir[r] = r ? let(g, "ir", MIN(ADD(i0, I(g, r)), last)) : i0;
    if (g->c->pack) qk_packed(g, ir, klo, nk);
    else qk_dot(g, ir, klo, nk);
    hc_expr *nvec = let(g, "nvec", DIV(ADD(nk, I(g, g->L - 1)), I(g, g->L)));
    HC_FOR(g->b, r, "sr", nrows, hc_serial()) {
        softmax_row(g, R(g, r), ADD(i0, R(g, r)), klo, nvec);
    }
    pv(g, i0, nrows, klo, nk);
}

/* One item: batch b, query head h, chunk of rows. */
static void item(at *g, hc_expr *w) {
    const hc_attn_shape *s = g->s;
    hc_arena *a = g->a;
    int rq = g->c->rq;
    hc_expr *chunk = let(g, "chunk", hc_mod(a, w, g->nch));
    hc_expr *rest = let(g, "rest", DIV(w, g->nch));
    g->h = let(g, "h", hc_mod(a, rest, I(g, s->Hq)));
    g->bi = let(g, "b", DIV(rest, I(g, s->Hq)));
    g->hk = g->grp == 1 ? g->h : let(g, "hk", DIV(g->h, I(g, g->grp)));
    if (s->nonpad) {
        g->npb = let(g, "npb", hc_load(a, g->Np, 1, (hc_expr *[]){g->bi}));
        g->off = let(g, "off", SUB(g->npb, g->Sqe));
    } else if (s->offset_kv && (s->Ts || s->Sqs)) {
        g->off = let(g, "off", SUB(g->Te, g->Sqe));
    } else {
        g->off = I(g, s->offset);
    }
    hc_expr *ib = let(g, "ib", MUL(chunk, g->rowse));
    hc_expr *nri = let(g, "nri", MIN(g->rowse, SUB(g->Sqe, ib)));
    if (g->c->pack) {
        g->kb = let(g, "kb", lo_of(g, ib));
        pack_kt(g, MAX(SUB(hi_of(g, ADD(ib, SUB(nri, I(g, 1)))), g->kb), I(g, 0)));
    }
    hc_expr *ntile = let(g, "ntile", DIV(ADD(nri, I(g, rq - 1)), I(g, rq)));
    HC_FOR(g->b, t, "rt", ntile, hc_serial()) {
        hc_expr *i0 = let(g, "i0", ADD(ib, MUL(R(g, t), I(g, rq))));
        tile(g, i0, let(g, "nrows", MIN(I(g, rq), SUB(ADD(ib, nri), i0))));
    }
}

/* A per-thread scratch [rows][tp]: tp a constant, or the expression of a symbolic T. */
static const hc_type *scratch_type(at *g, int64_t rows) {
    if (!g->s->Ts)
        return hc_type_tensor_c(g->a, HC_F32, 2, (int64_t[]){rows, g->tp}, HC_SCOPE_GLOBAL);
    return hc_type_tensor(g->a, HC_F32, 2, (hc_expr *[]){I(g, rows), g->tpe}, NULL, HC_SCOPE_GLOBAL);
}

static void thread_setup(void *ctx) {
    at *g = ctx;
    g->S = hc_b_declare(g->b, "S", scratch_type(g, g->c->rq), NULL);
    if (g->c->pack) g->Kt = hc_b_declare(g->b, "Kt", scratch_type(g, g->s->D), NULL);
    g->rs = hc_b_declare(g->b, "rs",
                         hc_type_tensor_c(g->a, HC_F32, 1, (int64_t[]){g->c->rq}, HC_SCOPE_GLOBAL),
                         NULL);
}
static void item_body(void *ctx, hc_expr *w) { item(ctx, w); }

/* A parameter of shape `shape`; sym (may be NULL): the dims' expressions, NULL where fixed. */
static hc_var *param(at *g, const char *name, hc_dtype t, int nd, const int64_t *shape,
                     const hc_sym *const *sym) {
    bool any = false;
    for (int d = 0; sym && d < nd; d++) any |= sym[d] != NULL;
    if (!any) return hc_var_new(g->a, name, hc_type_tensor_c(g->a, t, nd, shape, HC_SCOPE_GLOBAL));
    hc_expr *dims[4];
    for (int d = 0; d < nd; d++) dims[d] = sym[d] ? hc_sym_expr(g->a, sym[d]) : I(g, shape[d]);
    return hc_var_new(g->a, name, hc_type_tensor(g->a, t, nd, dims, NULL, HC_SCOPE_GLOBAL));
}

/* x's expression, or the constant v where x is NULL. */
static hc_expr *dim_e(at *g, const hc_sym *x, int64_t v) { return x ? hc_sym_expr(g->a, x) : I(g, v); }

/* The extents as expressions: constants, or those of the symbols. */
static void extents(at *g) {
    const hc_attn_shape *s = g->s;
    const hc_attn_config *c = g->c;
    g->Be = dim_e(g, s->Bs, s->B), g->Sqe = dim_e(g, s->Sqs, s->Sq), g->Te = dim_e(g, s->Ts, s->T);
    /* the scratch rows: T rounded up to whole vectors, plus one key tile (row_len) */
    if (s->Ts)
        g->tpe = ADD(MUL(DIV(ADD(g->Te, I(g, g->L - 1)), I(g, g->L)), I(g, g->L)),
                     I(g, hc_round_up(key_tile(c), g->L)));
    /* a symbolic Sq whose hint is one chunk stays one chunk (all of Sq) */
    bool whole = s->Sqs && c->rows >= s->Sq;
    g->rowse = whole ? g->Sqe : I(g, c->rows);
    g->nch = !s->Sqs || whole ? I(g, whole ? 1 : g->nchunks)
                              : DIV(ADD(g->Sqe, I(g, c->rows - 1)), I(g, c->rows));
}

hc_func *hc_attn_cpu(hc_arena *a, const char *name, const hc_attn_shape *s,
                     const hc_attn_config *cfg, const hc_target *t, hc_error *err) {
    if (hc_attn_validate_shape(s, err) || hc_attn_validate(cfg, err)) return NULL;
    if (cfg->lanes != hc_target_f32_lanes(t)) {
        hc_error_set(err, HC_ERR_INVALID, "attention config: lanes %d, target %s has %d f32 lanes",
                     cfg->lanes, t->name, hc_target_f32_lanes(t));
        return NULL;
    }
    if (!hc_attn_tile_fits(t, cfg)) {
        hc_error_set(err, HC_ERR_INVALID, "attention config: tiles rq %d x kv %d, dv %d do not "
                     "fit %d registers", cfg->rq, cfg->kv, cfg->dv, t->caps.num_regs);
        return NULL;
    }
    hc_attn_config c = clip(*cfg, s);
    int64_t scratch = hc_attn_scratch_floats(s, &c);
    if (scratch > HC_ATTN_MAX_SCRATCH) {
        hc_error_set(err, HC_ERR_UNSUPPORTED, "attention: scratch of %lld floats per thread "
                     "exceeds %d", (long long)scratch, HC_ATTN_MAX_SCRATCH);
        return NULL;
    }
    hc_builder b;
    at g = {.a = a, .b = &b, .s = s, .c = &c, .L = c.lanes};
    g.vec = hc_type_vector(a, HC_F32, c.lanes);
    g.tp = row_len(s, &c);
    g.nchunks = hc_cdiv(s->Sq, c.rows);
    g.grp = s->Hq / s->Hk;
    hc_builder_init(&b, a);
    extents(&g);
    const hc_sym *bq[4] = {s->Bs, NULL, s->Sqs, NULL}, *bk[4] = {s->Bs, NULL, s->Ts, NULL};
    g.Q = param(&g, "Q", HC_F32, 4, (int64_t[]){s->B, s->Hq, s->Sq, s->D}, bq);
    g.K = param(&g, "K", HC_F32, 4, (int64_t[]){s->B, s->Hk, s->T, s->D}, bk);
    g.V = param(&g, "V", HC_F32, 4, (int64_t[]){s->B, s->Hk, s->T, s->Dv}, bk);
    g.Bias = s->bias ? param(&g, "bias", HC_F32, 4, s->bias_shape, s->bias_sym) : NULL;
    g.Np = s->nonpad ? param(&g, "nonpad", HC_I64, 1, (int64_t[]){s->B}, bq) : NULL;
    g.Y = param(&g, "Y", HC_F32, 4, (int64_t[]){s->B, s->Hq, s->Sq, s->Dv}, bq);
    if (s->Bs || s->Sqs)
        hc_sched_split_items_expr(&b, hc_mul(a, hc_mul(a, g.Be, I(&g, s->Hq)), g.nch), c.threads,
                                  thread_setup, item_body, &g);
    else
        hc_sched_split_items(&b, s->B * s->Hq * g.nchunks, c.threads, thread_setup, item_body, &g);
    hc_stmt *body = hc_builder_finish(&b);
    hc_var *params[6];
    int np = 0;
    params[np++] = g.Q, params[np++] = g.K, params[np++] = g.V;
    if (g.Bias) params[np++] = g.Bias;
    if (g.Np) params[np++] = g.Np;
    params[np++] = g.Y;
    return hc_func_new(a, name ? name : "attention", HC_FN_CPU_KERNEL, np, params, body);
}
