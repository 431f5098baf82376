/* conv_dw_cpu.c — the CPU fp32 direct template for 2-D convolution: depthwise, grouped,
 * and group-1 where src/passes/lower.c keeps the Conv (direct_pays).
 *
 *   for t in [0, T) parallel:
 *     for (ti) in spatial(T) on t:                    one scratch per thread
 *       for (it) in repeat(ceil(items / T)):          item = (n, group, tile of rt rows)
 *         copy the rows of X[n, group] the tile reads into the scratch:
 *           xs[c][q][r][j] = Xpad[r0 + r][j * sw + q]  (zero padded; sw column phases)
 *         for (rbi, cb, mbi) in repeat(rt / rb, col blocks, channel blocks):
 *           acc[mb][rb][nv] (REGISTER f32xL) = bias     mb channels x rb rows x nv vectors
 *           for c, kh, kw:  wv[j] = W[m_j, c, kh, kw] (broadcast)
 *                           x = xs[c][kw*dw % sw][row + r*sh + kh*dh][col + v*L + kw*dw / sw]
 *                           acc[j][r][v] += x * wv[j]
 *           store acc to Y (masked on the last column block; rows past OH and channels
 *           past the group skipped)
 *
 * The scratch takes the borders and the strides out of the inner loop: every tap of every
 * output vector is one contiguous, in-bounds vector load, whatever the padding (asymmetric
 * too), stride or dilation. The copy costs about one load and store per input element of
 * the tile (plus the rows the kernel overlaps between tiles), against mg * kh * kw FMAs
 * per output element; a tile is a whole plane unless the threads need more items or the
 * scratch would not fit in a share of L2. Depthwise convolutions have mb = 1; with several
 * output channels per group each input vector loaded feeds mb FMAs. */
#include <string.h>

#include "ir/mapping.h"
#include "target/cpu/templates/conv_dw.h"
#include "target/cpu/templates/dsl.h"
#include "target/cpu/cpu.h"
#include "task/task.h"

static int64_t floor_div(int64_t x, int64_t y) { return x >= 0 ? x / y : -((-x + y - 1) / y); }

/* ---- shapes and configs ------------------------------------------------------------- */
hc_status hc_conv_dw_validate_shape(const hc_conv_dw_shape *s, hc_error *err) {
    const int64_t pos[] = {s->n, s->c, s->h, s->w, s->m, s->group, s->kh, s->kw,
                           s->sh, s->sw, s->dh, s->dw, s->oh, s->ow};
    const char *names[] = {"n", "c", "h", "w", "m", "group", "kh", "kw",
                           "sh", "sw", "dh", "dw", "oh", "ow"};
    for (size_t i = 0; i < HC_ARRAY_LEN(pos); i++)
        if (pos[i] < 1 || pos[i] > ((int64_t)1 << 30))
            return hc_error_set(err, HC_ERR_INVALID, "conv_dw shape: %s = %lld is not in [1, 2^30]",
                                names[i], (long long)pos[i]);
    const int64_t pads[] = {s->pt, s->pl, s->pb, s->pr};
    for (int i = 0; i < 4; i++)
        if (pads[i] < 0 || pads[i] > ((int64_t)1 << 30))
            return hc_error_set(err, HC_ERR_INVALID, "conv_dw shape: pad %d = %lld is negative",
                                i, (long long)pads[i]);
    if (s->c % s->group || s->m % s->group)
        return hc_error_set(err, HC_ERR_INVALID,
                            "conv_dw shape: group %lld does not divide c %lld and m %lld",
                            (long long)s->group, (long long)s->c, (long long)s->m);
    int64_t oh = (s->h + s->pt + s->pb - (s->kh - 1) * s->dh - 1) / s->sh + 1;
    int64_t ow = (s->w + s->pl + s->pr - (s->kw - 1) * s->dw - 1) / s->sw + 1;
    if (s->h + s->pt + s->pb < (s->kh - 1) * s->dh + 1 || oh != s->oh ||
        s->w + s->pl + s->pr < (s->kw - 1) * s->dw + 1 || ow != s->ow)
        return hc_error_set(err, HC_ERR_INVALID,
                            "conv_dw shape: output %lldx%lld does not match the window",
                            (long long)s->oh, (long long)s->ow);
    return HC_OK;
}

hc_status hc_conv_dw_validate(const hc_conv_dw_config *c, hc_error *err) {
    if (c->lanes != 4 && c->lanes != 8 && c->lanes != 16)
        return hc_error_set(err, HC_ERR_INVALID, "conv_dw config: lanes %d is not 4, 8 or 16",
                            c->lanes);
    if (c->mb < 1 || c->mb > HC_CONV_DW_MAX_MB || c->rb < 1 || c->rb > HC_CONV_DW_MAX_RB ||
        c->nv < 1 || c->nv > HC_CONV_DW_MAX_NV || c->mb * c->rb * c->nv > HC_CONV_DW_MAX_VECS)
        return hc_error_set(err, HC_ERR_INVALID,
                            "conv_dw config: register block mb %d x rb %d x nv %d is not within "
                            "%d x %d x %d and %d vectors",
                            c->mb, c->rb, c->nv, HC_CONV_DW_MAX_MB, HC_CONV_DW_MAX_RB,
                            HC_CONV_DW_MAX_NV, HC_CONV_DW_MAX_VECS);
    if (c->rt < c->rb || c->rt % c->rb)
        return hc_error_set(err, HC_ERR_INVALID,
                            "conv_dw config: row tile rt %d is not a multiple of rb %d", c->rt,
                            c->rb);
    if (c->threads < 1 || c->threads > HC_CONV_DW_MAX_THREADS)
        return hc_error_set(err, HC_ERR_INVALID, "conv_dw config: threads %d is not in [1, %d]",
                            c->threads, HC_CONV_DW_MAX_THREADS);
    return HC_OK;
}

void hc_conv_dw_config_print(hc_sb *sb, const hc_conv_dw_config *c) {
    hc_sb_printf(sb, "mb%d rb%d nv%d rt%d t%d%s", c->mb, c->rb, c->nv, c->rt, c->threads,
                 c->flat ? " flat" : "");
}

/* Flat blocks: the scratch row is the padded input row exactly (stride 1). */
static int64_t flat_width(const hc_conv_dw_shape *s) { return s->w + s->pl + s->pr; }

/* Clip a config to the shape: no more rows or vectors than the output has, a row tile
 * that is a multiple of rb and at most the rows, no more threads than items (so that
 * equal programs compare equal in the space). */
static hc_conv_dw_config clip(hc_conv_dw_config c, const hc_conv_dw_shape *s) {
    int64_t nvec = hc_cdiv(s->ow, c.lanes), mg = s->m / s->group;
    if (c.flat && (s->sh != 1 || s->sw != 1)) c.flat = false;
    if (c.flat) { /* vectors along the rows end to end: rows of one block, as many as the
                   * tile's rows take */
        c.rb = 1;
        nvec = hc_cdiv(s->oh * flat_width(s), c.lanes);
    }
    if (c.nv > nvec) c.nv = (int)nvec;
    if (c.mb > mg) c.mb = (int)mg;
    if (c.rb > s->oh) c.rb = (int)s->oh;
    if (c.rt < c.rb) c.rt = c.rb;
    c.rt = (int)HC_MIN(hc_round_up(c.rt, c.rb), hc_round_up(s->oh, c.rb));
    int64_t items = s->n * s->group * hc_cdiv(hc_cdiv(s->oh, c.rb), c.rt / c.rb);
    if (c.threads > items) c.threads = (int)items;
    return c;
}

/* Row tiles per plane: the rows in blocks of rb, split into tiles of at most rt / rb
 * blocks, and into more tiles (never more than the blocks) until the items (planes x
 * tiles) split evenly over the threads. Tile i holds blocks [i * nrb / nrt, (i + 1) * nrb
 * / nrt), so the tiles differ by at most one block and each thread gets the same number
 * of blocks to within one tile: 147 rows in 74 blocks of 2, rt 20 rows, 2 threads: 8
 * tiles of 9 or 10 blocks, 37 blocks per thread (tiles of exactly 10 blocks gave 40 and
 * 34). */
static int64_t row_tiles(const hc_conv_dw_shape *s, const hc_conv_dw_config *c) {
    int64_t nrb = hc_cdiv(s->oh, c->rb), nrt = hc_cdiv(nrb, c->rt / c->rb);
    int64_t planes = (s->nsym ? 1 : s->n) * s->group; /* a symbolic batch may be 1 */
    while (nrt < nrb && (planes * nrt) % c->threads) nrt++;
    return nrt;
}

/* Scratch geometry of a config: rows per channel and phase, columns per row. */
static int64_t scratch_rows(const hc_conv_dw_shape *s, int64_t rt) {
    return (rt - 1) * s->sh + (s->kh - 1) * s->dh + 1;
}
/* Padded output lanes of one plane: rows x whole vectors per row, or flat (the plane's
 * rows end to end, less the last row's trailing columns, in whole blocks). */
static int64_t padded_lanes(const hc_conv_dw_shape *s, int lanes, int rb, int nv, bool flat) {
    int64_t bw = (int64_t)nv * lanes;
    if (flat) return hc_round_up(s->oh * flat_width(s) - (flat_width(s) - s->ow), bw);
    return hc_round_up(s->oh, rb) * hc_round_up(s->ow, bw);
}

static int64_t scratch_cols(const hc_conv_dw_shape *s, int lanes, int nv) {
    int64_t bw = (int64_t)nv * lanes;
    int64_t need = hc_cdiv(s->ow, bw) * bw + (s->kw - 1) * s->dw / s->sw;
    if (s->sw == 1) need = HC_MAX(need, s->pl + hc_round_up(s->w, lanes));
    return hc_round_up(need, lanes);
}

/* Rows per item: a whole plane when there are groups enough for the threads (4 items
 * each) and its scratch takes at most half of L2; else fewer rows. */
static int default_rt(const hc_target *t, const hc_conv_dw_shape *s, int rb, int nv,
                      int threads) {
    int64_t planes = (s->nsym ? 1 : s->n) * s->group, k = 1; /* a symbolic batch may be 1 */
    while (threads > 1 && planes * k < 4 * threads && k * rb < s->oh) k++;
    int64_t rt = hc_round_up(hc_cdiv(s->oh, k), rb);
    int64_t l2 = hc_target_l2_bytes(t);
    int64_t row_bytes = (s->c / s->group) * s->sw * scratch_cols(s, hc_target_f32_lanes(t), nv) * 4;
    while (rt > rb && scratch_rows(s, rt) * row_bytes > l2 / 2) rt -= rb;
    return (int)HC_MIN(rt, 1 << 20);
}

/* Threads: the cores, unless the work is below what pays for a parallel region. */
static int default_threads(const hc_target *t, const hc_conv_dw_shape *s) {
    int64_t work = s->n * s->m * s->oh * s->ow * (s->c / s->group) * s->kh * s->kw;
    return work < HC_AUTOSCHED_PARALLEL_MIN_WORK ? 1 : HC_MAX(t->caps.num_cores, 1);
}

/* Whether a register block fits the target's vector registers: the accumulators, the mb
 * weight broadcasts and the input vector; depthwise (mb 1) keeps 4 for the loads. */
static bool block_fits(const hc_target *t, int mb, int rb, int nv) {
    if (mb == 1) return rb * nv <= t->caps.num_regs - 4;
    return mb * (rb * nv + 1) + 1 <= t->caps.num_regs;
}

/* Several output channels per group: register blocks of mb channels x rb rows x nv
 * vectors, each input vector loaded once for mb FMAs and each weight broadcast once for
 * rb * nv. Default with 32 registers: 2 vectors as rows x vectors 1 x 2 or 2 x 1,
 * whichever pads the output least (first wins a tie), and channels for half the vector
 * registers in accumulators (8 x 2 = 16). Measured at 2 threads on the layers that take
 * this template (bench/conv.c, docs/conv_dw.md): ResNet-50's 7x7/2 stem 0.69 ms (4 x 4 x
 * 1: 0.97), Inception's 3x3/2 1a 0.16 (4 x 2 x 2: 0.19), its 5x5 0.69 (5 x 1 x 3: 0.87),
 * its 147x147 2b 2.58 (4 x 2 x 2: 2.44, the one layer where 4 vectors did better).
 * With 16 (AVX2): one vector and the most channels that leave 4 registers spare, 6 x 1 x
 * 1 (6 accumulators, 6 broadcasts, the input vector). On Zen 3 (2 threads, per-kernel
 * minima of 12 alternated rounds, the configs forced through tune records) against the
 * former 4 x 1 x 2 / 4 x 2 x 1: ResNet-50's 7x7/2 stem 2.64 -> 2.00 ms, MobileNet-V2's
 * 3x3/2 stem 0.313 -> 0.258, Inception-V3's 3x3/2 1a 0.488 -> 0.429; it was the fastest
 * of the six blocks tried on two of them, and 14% behind 2 x 2 x 2 on MobileNet-V2's. */
static hc_conv_dw_config dense_default(const hc_target *t, const hc_conv_dw_shape *s) {
    hc_conv_dw_config c = {.lanes = hc_target_f32_lanes(t)};
    int64_t nvec = hc_cdiv(s->ow, c.lanes), best = -1, mg = s->m / s->group;
    if (t->caps.num_regs < 32) { /* 16 registers: one vector, 6 channels */
        c.rb = c.nv = 1;
        c.mb = (int)HC_MAX(1, HC_MIN(mg, (t->caps.num_regs - 4) / 2));
    } else {
        for (int nv = 2; nv >= 1; nv--) {
            int v = (int)HC_MIN(nv, nvec), rb = (int)HC_MIN(2 / nv, s->oh);
            int64_t padded = hc_round_up(s->oh, rb) * hc_round_up(nvec, v);
            if (best < 0 || padded < best) best = padded, c.nv = v, c.rb = rb;
        }
        c.mb = (int)HC_MAX(1, HC_MIN(mg, (t->caps.num_regs / 2) / (c.rb * c.nv)));
    }
    while (c.mb > 1 && !block_fits(t, c.mb, c.rb, c.nv)) c.mb--;
    /* flat blocks of 1 x 2 vectors when they pad at least 5% less (stride 1: Inception's
     * 35-wide 5x5 rows, 48 lanes for 35, or 147-wide rows, 160 for 147) */
    if (s->sh == 1 && s->sw == 1) {
        int nvf = 2, mbf = (int)HC_MAX(1, HC_MIN(mg, (t->caps.num_regs / 2) / nvf));
        while (mbf > 1 && !block_fits(t, mbf, 1, nvf)) mbf--;
        if (padded_lanes(s, c.lanes, 1, nvf, true) * 20 <
            padded_lanes(s, c.lanes, c.rb, c.nv, false) * 19)
            c.flat = true, c.rb = 1, c.nv = nvf, c.mb = mbf;
    }
    c.threads = default_threads(t, s);
    c.rt = default_rt(t, s, c.rb, c.nv, c.threads);
    return clip(c, s);
}

/* Depthwise register blocks, rb rows x nv vectors: the fewest padded output lanes (rows x
 * vectors), then more accumulators, then one vector (taller blocks share each weight
 * broadcast among more rows). With 32 registers 2 vectors (or the row's one) x 4, 3 or 2
 * rows: the rows share the broadcast, 8 accumulators, the unrolled taps stay small
 * (measured on MobileNet-V2's layers, docs/conv_dw.md: taller or wider blocks are no
 * faster). With 16 (AVX2) at most 4 accumulators, 4, 3 or 2 rows x 1 vector or 2 x 2:
 * 4 x 2 left too few registers for the input vectors and broadcasts. On Zen 3 (2 threads,
 * minima of 3 x 200 runs): 192 x 28 x 28 0.073 -> 0.056 ms (4 x 1), 32 x 112 x 112 0.185
 * -> 0.117 (4 x 1); 14-wide rows keep 2 x 2 and 7-wide 4 x 1, as before. */
static void dw_block(const hc_target *t, const hc_conv_dw_shape *s, int lanes, int *rb_out,
                     int *nv_out) {
    bool regs16 = t->caps.num_regs < 32;
    int64_t nvec = hc_cdiv(s->ow, lanes), best = -1;
    /* With 16 registers, a plane of at most 8 one-vector rows in one block (7x7: 7 x 1,
     * not 4 x 1 over 8 padded rows). MobileNet-V2's 960 x 7 x 7 layers on Zen 3, per-kernel
     * minima of 10 alternated rounds (quiet): 0.078 -> 0.052 ms and 0.053 -> 0.038.
     * (--tune 2 also picked 1 x 4 for its 28-wide rows, 0.067 -> 0.037 ms, but only after
     * an expand conv that split its output channels across the threads, so that each
     * thread read its own writes; 1 x 4 alone did not move: 0.067 -> 0.064.) */
    if (regs16 && nvec == 1 && s->oh <= 8) {
        *rb_out = (int)s->oh, *nv_out = 1;
        return;
    }
    int nv_max = (int)HC_MIN(2, nvec);
    int best_acc = 0;
    for (int nv = regs16 ? 1 : nv_max; nv <= nv_max; nv++) {
        int rb_max = regs16 ? 4 / nv : 4;
        for (int rb = rb_max; rb >= HC_MAX(rb_max / 2, 1); rb--) {
            int r = (int)HC_MIN(rb, s->oh), acc = r * nv;
            int64_t padded = hc_round_up(s->oh, r) * hc_round_up(nvec, nv);
            if (best < 0 || padded < best || (padded == best && acc > best_acc))
                best = padded, best_acc = acc, *rb_out = r, *nv_out = nv;
        }
    }
}

hc_conv_dw_config hc_conv_dw_default_config(const hc_target *t, const hc_conv_dw_shape *s) {
    if (s->m > s->group) return dense_default(t, s);
    hc_conv_dw_config c = {.lanes = hc_target_f32_lanes(t), .mb = 1};
    dw_block(t, s, c.lanes, &c.rb, &c.nv);
    c.threads = default_threads(t, s);
    c.rt = default_rt(t, s, c.rb, c.nv, c.threads);
    return clip(c, s);
}

static bool same_config(const hc_conv_dw_config *x, const hc_conv_dw_config *y) {
    return x->mb == y->mb && x->rb == y->rb && x->nv == y->nv && x->rt == y->rt &&
           x->threads == y->threads && x->flat == y->flat;
}

/* Several output channels per group: the channels per block and the register block,
 * threads and row tiles as the default's. Level 1: mb 4, 6, 8 x rb 1, 2 x nv 1, 2, 4 with
 * at most 16 accumulators; level 2: mb 2, 4, 6, 8 x rb 1, 2, 4 x nv 1 to 4 with at most
 * 24 (more spilled on every layer measured). */
static int dense_space(const hc_target *t, const hc_conv_dw_shape *s, int level,
                       hc_conv_dw_config *all, int n, int cap) {
    static const int mb1[] = {4, 6, 8}, mb2[] = {2, 4, 6, 8};
    static const int rb1[] = {1, 2}, rb2[] = {1, 2, 4}, nv1[] = {1, 2, 4}, nv2[] = {1, 2, 3, 4};
    bool two = level >= 2;
    const int *mbs = two ? mb2 : mb1, *rbs = two ? rb2 : rb1, *nvs = two ? nv2 : nv1;
    int nmb = two ? 4 : 3, nrb = two ? 3 : 2, nnv = two ? 4 : 3, most = two ? 24 : 16;
    for (int mi = 0; mi < nmb; mi++)
        for (int i = 0; i < nrb; i++)
            for (int j = 0; j < nnv; j++) {
                hc_conv_dw_config c = {.lanes = all[0].lanes,
                                       .mb = mbs[mi],
                                       .rb = rbs[i],
                                       .nv = nvs[j],
                                       .threads = all[0].threads};
                if (c.mb * c.rb * c.nv > most || !block_fits(t, c.mb, c.rb, c.nv)) continue;
                c.rt = default_rt(t, s, HC_MIN(c.rb, (int)s->oh), c.nv, c.threads);
                for (int flat = 0; flat < (s->sh == 1 && s->sw == 1 && c.rb == 1 ? 2 : 1);
                     flat++) {
                    c.flat = flat;
                    hc_conv_dw_config k = clip(c, s);
                    bool dup = false;
                    for (int q = 0; q < n && !dup; q++) dup = same_config(&all[q], &k);
                    if (!dup && n < cap) all[n++] = k;
                }
            }
    return n;
}

int hc_conv_dw_space(const hc_target *t, const hc_conv_dw_shape *s, int level,
                     hc_conv_dw_config *out, int max) {
    hc_conv_dw_config all[256];
    int n = 0;
    all[n++] = hc_conv_dw_default_config(t, s);
    if (level >= 1 && s->m > s->group) n = dense_space(t, s, level, all, n, 256);
    static const int rb1[] = {2, 4, 8}, nv1[] = {1, 2, 4};
    static const int rb2[] = {1, 2, 3, 4, 5, 6, 7, 8}, nv2[] = {1, 2, 3, 4};
    const int *rbs = level >= 2 ? rb2 : rb1, *nvs = level >= 2 ? nv2 : nv1;
    int nrb = level >= 2 ? 8 : 3, nnv = level >= 2 ? 4 : 3;
    int cores = HC_MAX(t->caps.num_cores, 1);
    int threads[2] = {all[0].threads, all[0].threads > 1 ? 1 : cores};
    /* depthwise: level 2 also tries one register block of rows per item (least scratch) */
    for (int ti = 0; level >= 1 && s->m == s->group && ti < (level >= 2 ? 2 : 1); ti++)
        for (int i = 0; i < nrb; i++)
            for (int j = 0; j < nnv; j++)
                for (int small = 0; small < (level >= 2 ? 2 : 1); small++) {
                    hc_conv_dw_config c = {.lanes = all[0].lanes,
                                           .mb = 1,
                                           .rb = rbs[i],
                                           .nv = nvs[j],
                                           .threads = threads[ti]};
                    if (!block_fits(t, c.mb, c.rb, c.nv)) continue;
                    if (c.rb > s->oh) c.rb = (int)s->oh;
                    c.rt = small ? c.rb : default_rt(t, s, c.rb, c.nv, c.threads);
                    c = clip(c, s);
                    bool dup = false;
                    for (int k = 0; k < n && !dup; k++) dup = same_config(&all[k], &c);
                    if (!dup && n < (int)HC_ARRAY_LEN(all)) all[n++] = c;
                }
    for (int i = 0; out && i < n && i < max; i++) out[i] = all[i];
    return n;
}

/* ---- the program ---------------------------------------------------------------------- */
typedef struct dw {
    hc_arena *a;
    hc_builder *b;
    const hc_conv_dw_shape *s;
    const hc_conv_dw_config *c;
    int L;                /* lanes */
    int64_t cg, mg;       /* input / output channels per group */
    int64_t rows_in;      /* scratch rows per channel and phase */
    int64_t wq;           /* scratch columns per row (a multiple of L) */
    int64_t nrt, nrb;      /* row tiles per plane (row_tiles), row blocks per plane */
    int64_t ncb, nmb;      /* column blocks, channel blocks per group */
    const hc_type *vec;
    hc_var *X, *W, *B, *Y, *xs;
    /* item state */
    hc_expr *n, *mg0, *cin0, *ot0; /* item: batch, first output and input channel of the
                                    * group, first row */
    hc_expr *tblocks;              /* item: row blocks of its tile */
    hc_expr *oh0, *rows, *row0;    /* register block: first row, valid rows, scratch row */
    hc_expr *mc;                   /* register block: first channel's offset in the group */
    int64_t scratch_shape[4], slack; /* per-thread scratch [chans, sw, rows_in, wq] */
} dw;

static hc_expr *addr4(dw *g, hc_var *buf, hc_expr *i, hc_expr *j, hc_expr *k, hc_expr *l) {
    return hc_address(g->a, buf, 4, (hc_expr *[]){i, j, k, l});
}

/* Zero xs[c, q, r, lo .. hi) (constant bounds): whole vectors, then a masked one. */
static void zero_cols(dw *g, hc_expr *c, int64_t q, hc_expr *r, int64_t lo, int64_t hi) {
    if (hi <= lo) return;
    hc_expr *zero = vcall(g, HC_PRIM_VBROADCAST, g->vec, 1, hc_f32(g->a, 0), 0, 0);
    int64_t full = (hi - lo) / g->L;
    if (full > 0) {
        HC_FOR(g->b, k, "cz", I(g, full), hc_serial()) {
            vstore(g, addr4(g, g->xs, c, I(g, q), r, ADD(MUL(R(g, k), I(g, g->L)), I(g, lo))),
                   zero);
        }
    }
    if ((hi - lo) % g->L)
        vstore_n(g, addr4(g, g->xs, c, I(g, q), r, I(g, lo + full * g->L)), zero,
                 I(g, (hi - lo) % g->L));
}

/* Scratch row (c, q, r) = padded input row ot0*sh + r, columns j*sw + q: the in-range
 * columns of X, zeros around them. sw == 1: vector copies at offset pl (the last one
 * brings zeros up to a whole vector); else scalar copies. */
static void copy_rows(dw *g) {
    const hc_conv_dw_shape *s = g->s;
    hc_arena *a = g->a;
    HC_FOR(g->b, c, "cc", I(g, g->cg), hc_serial()) {
        hc_expr *cin = ADD(g->cin0, R(g, c));
        HC_FOR(g->b, r, "cr", I(g, g->rows_in), hc_serial()) {
            hc_expr *ih = let(g, "ih", SUB(ADD(MUL(g->ot0, I(g, s->sh)), R(g, r)), I(g, s->pt)));
            hc_expr *inside = hc_and(a, hc_le(a, I(g, 0), ih), LT(ih, I(g, s->h)));
            for (int64_t q = 0; q < s->sw; q++) {
                /* j with 0 <= j*sw + q - pl < w, inside the scratch row */
                int64_t lo = HC_MAX(floor_div(s->pl - q + s->sw - 1, s->sw), 0);
                int64_t hi = HC_MIN(floor_div(s->w - 1 + s->pl - q, s->sw) + 1, g->wq);
                hc_b_if_begin(g->b, inside);
                if (s->sw == 1) {
                    int64_t full = s->w / g->L, end = s->pl + hc_round_up(s->w, g->L);
                    zero_cols(g, R(g, c), 0, R(g, r), 0, s->pl);
                    HC_FOR(g->b, k, "cv", I(g, full), hc_serial()) {
                        hc_expr *iw = MUL(R(g, k), I(g, g->L));
                        hc_expr *x = vcall(g, HC_PRIM_VLOAD, g->vec, 1,
                                           addr4(g, g->X, g->n, cin, ih, iw), 0, 0);
                        vstore(g, addr4(g, g->xs, R(g, c), I(g, 0), R(g, r), ADD(iw, I(g, s->pl))),
                               x);
                    }
                    if (s->w % g->L) {
                        int64_t iw = full * g->L;
                        hc_expr *x = vcall(g, HC_PRIM_VLOAD_MASK, g->vec, 2,
                                           addr4(g, g->X, g->n, cin, ih, I(g, iw)),
                                           I(g, s->w - iw), 0);
                        vstore(g, addr4(g, g->xs, R(g, c), I(g, 0), R(g, r), I(g, iw + s->pl)), x);
                    }
                    zero_cols(g, R(g, c), 0, R(g, r), end, g->wq);
                } else {
                    zero_cols(g, R(g, c), q, R(g, r), 0, HC_MIN(lo, g->wq));
                    if (hi > lo) {
                        HC_FOR(g->b, j, "cj", I(g, hi - lo), hc_serial()) {
                            hc_expr *jj = ADD(R(g, j), I(g, lo));
                            hc_expr *iw = ADD(MUL(jj, I(g, s->sw)), I(g, q - s->pl));
                            hc_expr *x = hc_load(a, g->X, 4, (hc_expr *[]){g->n, cin, ih, iw});
                            hc_b_store(g->b, g->xs, 4, (hc_expr *[]){R(g, c), I(g, q), R(g, r), jj},
                                       x);
                        }
                    }
                    zero_cols(g, R(g, c), q, R(g, r), HC_MAX(hi, lo), g->wq);
                }
                hc_b_else(g->b);
                zero_cols(g, R(g, c), q, R(g, r), 0, g->wq);
                hc_b_end(g->b);
            }
        }
    }
}

/* Output channel j of the register block, clamped into the group (a channel block that
 * overhangs the group computes its last channel again and does not store it). */
static hc_expr *chan(dw *g, hc_expr *j) {
    hc_expr *k = ADD(g->mc, j);
    if (g->mg % g->c->mb) k = hc_min(g->a, k, I(g, g->mg - 1));
    return ADD(g->mg0, k);
}

/* acc[j][r][v] += xs[...] * W[m_j, c, kh, kw] over c, kh, kw for the block at (row0, ow0):
 * per tap, mb weight broadcasts and rb * nv input vectors, each used mb times. */
static void taps(dw *g, hc_var *acc, hc_expr *ow0) {
    const hc_conv_dw_shape *s = g->s;
    hc_arena *a = g->a;
    int mb = g->c->mb;
    hc_loop_attr kw_attr = s->kw <= 7 ? hc_unroll(0) : hc_serial();
    hc_var *wv = hc_b_declare(
        g->b, "wv",
        hc_type_tensor_vec(a, HC_F32, g->L, 1, (hc_expr *[]){I(g, mb)}, NULL, HC_SCOPE_REGISTER),
        NULL);
    /* With a row stride, taps kh and kh + sh of consecutive rows r read the same input
     * row; rolled, GCC's predictive commoning carried those vectors across kh iterations
     * and spilled them (MobileNet-V2's stride-2 depthwise conv at 28x28, rb 4: 30 stack
     * operands per 24 FMAs). Unrolled (kh <= 3) the loads are plain common
     * subexpressions: none. Stride 1 keeps the loop (unrolled, features.1's depthwise conv
     * went from none to 15 per 36 FMAs). */
    hc_loop_attr kh_attr = s->sh > 1 && s->kh <= 3 ? hc_unroll(0) : hc_serial();
    HC_FOR(g->b, c, "c", I(g, g->cg), hc_serial()) {
        HC_FOR(g->b, kh, "kh", I(g, s->kh), kh_attr) {
            HC_FOR(g->b, kw, "kw", I(g, s->kw), kw_attr) {
                HC_FOR(g->b, j, "j", I(g, mb), hc_unroll(0)) {
                    hc_expr *wk = hc_load(
                        a, g->W, 4, (hc_expr *[]){chan(g, R(g, j)), R(g, c), R(g, kh), R(g, kw)});
                    hc_b_store(g->b, wv, 1, (hc_expr *[]){R(g, j)},
                               vcall(g, HC_PRIM_VBROADCAST, g->vec, 1, wk, 0, 0));
                }
                hc_expr *tap = MUL(R(g, kw), I(g, s->dw));
                hc_expr *q = s->sw > 1 ? hc_mod(a, tap, I(g, s->sw)) : I(g, 0);
                hc_expr *jo = s->sw > 1 ? hc_div(a, tap, I(g, s->sw)) : tap;
                HC_FOR(g->b, r, "r", I(g, g->c->rb), hc_unroll(0)) {
                    hc_expr *row = ADD(g->row0, ADD(MUL(R(g, r), I(g, s->sh)),
                                                    MUL(R(g, kh), I(g, s->dh))));
                    HC_FOR(g->b, v, "v", I(g, g->c->nv), hc_unroll(0)) {
                        hc_expr *col = ADD(ADD(ow0, MUL(R(g, v), I(g, g->L))), jo);
                        hc_var *x =
                            hc_b_declare(g->b, "xv", g->vec,
                                         vcall(g, HC_PRIM_VLOAD, g->vec, 1,
                                               addr4(g, g->xs, R(g, c), q, row, col), 0, 0));
                        HC_FOR(g->b, j, "j", I(g, mb), hc_unroll(0)) {
                            hc_expr *idx[3] = {R(g, j), R(g, r), R(g, v)};
                            hc_b_store(g->b, acc, 3, idx,
                                       vcall(g, HC_PRIM_VFMA, g->vec, 3, R(g, x),
                                             hc_load(a, wv, 1, (hc_expr *[]){R(g, j)}),
                                             hc_load(a, acc, 3, idx)));
                        }
                    }
                }
            }
        }
    }
}

/* Y[n, m_j, oh0 + r, ow0 + v*L ..] = acc[j][r][v]; `tail`: the block crosses OW;
 * channels past the group and rows past OH are not stored. */
static void store_block(dw *g, hc_var *acc, hc_expr *ow0, bool tail) {
    hc_arena *a = g->a;
    bool row_tail = g->s->oh % g->c->rb != 0, chan_tail = g->mg % g->c->mb != 0;
    HC_FOR(g->b, j, "sj", I(g, g->c->mb), hc_unroll(0)) {
        if (chan_tail) hc_b_if_begin(g->b, LT(ADD(g->mc, R(g, j)), I(g, g->mg)));
        hc_expr *m = ADD(g->mg0, ADD(g->mc, R(g, j)));
        HC_FOR(g->b, r, "sr", I(g, g->c->rb), hc_unroll(0)) {
            if (row_tail) hc_b_if_begin(g->b, LT(R(g, r), g->rows));
            HC_FOR(g->b, v, "sv", I(g, g->c->nv), hc_unroll(0)) {
                hc_expr *col = ADD(ow0, MUL(R(g, v), I(g, g->L)));
                hc_expr *p = addr4(g, g->Y, g->n, m, ADD(g->oh0, R(g, r)), col);
                hc_expr *val = hc_load(a, acc, 3, (hc_expr *[]){R(g, j), R(g, r), R(g, v)});
                if (tail) {
                    hc_expr *left = SUB(I(g, g->s->ow), col);
                    HC_IF(g->b, LT(I(g, 0), left)) { vstore_n(g, p, val, left); }
                } else {
                    vstore(g, p, val);
                }
            }
            if (row_tail) hc_b_end(g->b);
        }
        if (chan_tail) hc_b_end(g->b);
    }
}

/* The register block acc[mb][rb][nv], each channel's vectors set to its bias (0 without
 * one). */
static hc_var *bias_acc(dw *g, int rb) {
    hc_arena *a = g->a;
    int mb = g->c->mb;
    hc_expr *shape[3] = {I(g, mb), I(g, rb), I(g, g->c->nv)};
    hc_var *acc = hc_b_declare(
        g->b, "acc", hc_type_tensor_vec(a, HC_F32, g->L, 3, shape, NULL, HC_SCOPE_REGISTER), NULL);
    HC_FOR(g->b, j, "zj", I(g, mb), hc_unroll(0)) {
        hc_expr *init = g->B ? hc_load(a, g->B, 1, (hc_expr *[]){chan(g, R(g, j))}) : hc_f32(a, 0);
        hc_var *bv = hc_b_declare(g->b, "bias", g->vec,
                                  vcall(g, HC_PRIM_VBROADCAST, g->vec, 1, init, 0, 0));
        HC_FOR(g->b, r, "zr", I(g, rb), hc_unroll(0)) {
            HC_FOR(g->b, vv, "zv", I(g, g->c->nv), hc_unroll(0)) {
                hc_b_store(g->b, acc, 3, (hc_expr *[]){R(g, j), R(g, r), R(g, vv)}, R(g, bv));
            }
        }
    }
    return acc;
}

/* for (rbi, cb) in repeat(rt / rb, col blocks): one register block each, rows past OH
 * skipped. */
static void blocks(dw *g) {
    hc_arena *a = g->a;
    const hc_conv_dw_shape *s = g->s;
    int rb = g->c->rb, mb = g->c->mb;
    int64_t bw = (int64_t)g->c->nv * g->L;
    hc_var *v[3];
    static const char *const names[3] = {"rbi", "cb", "mbi"};
    const hc_mapping *map = hc_map_repeat(a, 3, (int64_t[]){g->c->rt / rb, g->ncb, g->nmb}, NULL);
    HC_FOR_MAP(g->b, map, I(g, 0), 3, v, names) {
        hc_expr *local = MUL(R(g, v[0]), I(g, rb));
        /* tiles of fewer than rt / rb blocks skip the rest */
        bool tile_tail = g->nrb != g->nrt * (g->c->rt / rb);
        if (tile_tail) hc_b_if_begin(g->b, LT(R(g, v[0]), g->tblocks));
        g->oh0 = let(g, "oh0", ADD(g->ot0, local));
        g->row0 = let(g, "row0", MUL(local, I(g, s->sh)));
        g->rows = let(g, "rows", hc_min(a, I(g, rb), SUB(I(g, s->oh), g->oh0)));
        hc_expr *ow0 = let(g, "ow0", MUL(R(g, v[1]), I(g, bw)));
        g->mc = let(g, "mc", MUL(R(g, v[2]), I(g, mb)));
        hc_var *acc = bias_acc(g, rb);
        taps(g, acc, ow0);
        if (s->ow % bw == 0) {
            store_block(g, acc, ow0, false);
        } else {
            hc_b_if_begin(g->b, hc_le(a, ADD(ow0, I(g, bw)), I(g, s->ow)));
            store_block(g, acc, ow0, false);
            hc_b_else(g->b);
            store_block(g, acc, ow0, true);
            hc_b_end(g->b);
        }
        if (tile_tail) hc_b_end(g->b);
    }
}

/* ---- flat blocks ---------------------------------------------------------------------- */
/* Stride 1 (config flat): the scratch rows are the padded input rows exactly, wq = w + pl +
 * pr, one after the other, so output pixel (r, col) of the tile reads scratch element
 * (r + kh*dh) * wq + col + kw*dw: with p = r * wq + col, the taps of the pixels p .. p+L
 * are one contiguous vector whatever the row. A block is nv vectors of such p over all
 * the item's rows; the wq - ow columns p at the end of each row are computed and dropped.
 * The accumulators are spilled to a small buffer and each output row's segment of the
 * block is stored from there with vector stores (masked at the segment ends). */
static void store_flat(dw *g, hc_var *acc, hc_expr *p0) {
    hc_arena *a = g->a;
    const hc_conv_dw_shape *s = g->s;
    int mb = g->c->mb, nv = g->c->nv, L = g->L;
    int64_t bw = (int64_t)nv * L, wq = g->wq;
    hc_var *ys = hc_b_declare(
        g->b, "ys", hc_type_tensor_c(a, HC_F32, 2, (int64_t[]){mb, bw}, HC_SCOPE_REGISTER), NULL);
    HC_FOR(g->b, j, "yj", I(g, mb), hc_unroll(0)) {
        HC_FOR(g->b, v, "yv", I(g, nv), hc_unroll(0)) {
            vstore(g, hc_address(a, ys, 2, (hc_expr *[]){R(g, j), MUL(R(g, v), I(g, L))}),
                   hc_load(a, acc, 3, (hc_expr *[]){R(g, j), I(g, 0), R(g, v)}));
        }
    }
    hc_expr *r_lo = let(g, "frl", hc_div(a, p0, I(g, wq)));
    hc_expr *r_hi = let(g, "frh", hc_min(a, hc_div(a, ADD(p0, I(g, bw - 1)), I(g, wq)),
                                         SUB(g->tblocks, I(g, 1))));
    bool chan_tail = g->mg % mb != 0;
    HC_FOR(g->b, j, "fj", I(g, mb), hc_serial()) {
        if (chan_tail) hc_b_if_begin(g->b, LT(ADD(g->mc, R(g, j)), I(g, g->mg)));
        hc_expr *m = ADD(g->mg0, ADD(g->mc, R(g, j)));
        HC_FOR(g->b, r, "fr", ADD(SUB(r_hi, r_lo), I(g, 1)), hc_serial()) {
            hc_expr *rr = let(g, "frr", ADD(r_lo, R(g, r)));
            hc_expr *rs = MUL(rr, I(g, wq));
            hc_expr *lo = let(g, "flo", hc_max(a, p0, rs));
            hc_expr *hi = let(g, "fhi", hc_min(a, ADD(p0, I(g, bw)), ADD(rs, I(g, s->ow))));
            HC_IF(g->b, LT(lo, hi)) {
                hc_expr *len = let(g, "flen", SUB(hi, lo));
                HC_FOR(g->b, q, "fq", hc_div(a, ADD(len, I(g, L - 1)), I(g, L)), hc_serial()) {
                    hc_expr *off = MUL(R(g, q), I(g, L));
                    hc_expr *cnt = let(g, "fcnt", hc_min(a, I(g, L), SUB(len, off)));
                    hc_expr *src = hc_address(a, ys, 2,
                                              (hc_expr *[]){R(g, j), ADD(SUB(lo, p0), off)});
                    hc_var *val = hc_b_declare(g->b, "fv", g->vec,
                                               vcall(g, HC_PRIM_VLOAD_MASK, g->vec, 2, src, cnt, 0));
                    hc_expr *col = ADD(SUB(lo, rs), off);
                    vstore_n(g, addr4(g, g->Y, g->n, m, ADD(g->ot0, rr), col), R(g, val), cnt);
                }
            }
        }
        if (chan_tail) hc_b_end(g->b);
    }
}

/* for (fb, mbi) in repeat(flat blocks, channel blocks): blocks past the item's rows
 * skipped. */
static void blocks_flat(dw *g) {
    hc_arena *a = g->a;
    const hc_conv_dw_shape *s = g->s;
    int mb = g->c->mb, nv = g->c->nv;
    int64_t bw = (int64_t)nv * g->L, wq = g->wq;
    hc_expr *extent = let(g, "fext", SUB(MUL(g->tblocks, I(g, wq)), I(g, wq - s->ow)));
    hc_var *v[2];
    static const char *const names[2] = {"fb", "mbi"};
    const hc_mapping *map =
        hc_map_repeat(a, 2, (int64_t[]){hc_cdiv((int64_t)g->c->rt * wq, bw), g->nmb}, NULL);
    HC_FOR_MAP(g->b, map, I(g, 0), 2, v, names) {
        hc_expr *p0v = MUL(R(g, v[0]), I(g, bw));
        HC_IF(g->b, LT(p0v, extent)) {
            hc_expr *p0 = let(g, "p0", p0v);
            g->row0 = I(g, 0);
            g->mc = let(g, "mc", MUL(R(g, v[1]), I(g, mb)));
            hc_var *acc = bias_acc(g, 1);
            taps(g, acc, p0);
            store_flat(g, acc, p0);
        }
    }
}

/* Zero the scratch past the last channel's rows, which the last flat blocks read into
 * (their results are dropped; zeros keep them finite). */
static void zero_slack(dw *g, int64_t slack) {
    hc_expr *zero = vcall(g, HC_PRIM_VBROADCAST, g->vec, 1, hc_f32(g->a, 0), 0, 0);
    HC_FOR(g->b, k, "zs", I(g, hc_cdiv(slack, g->L)), hc_serial()) {
        vstore(g, addr4(g, g->xs, I(g, g->cg), I(g, 0), I(g, 0), MUL(R(g, k), I(g, g->L))),
               zero);
    }
}

/* One item: group (n, grp) and row tile rti, all the group's output channels. */
static void item(dw *g, hc_expr *w) {
    const hc_conv_dw_shape *s = g->s;
    hc_expr *plane = let(g, "plane", hc_div(g->a, w, I(g, g->nrt)));
    hc_expr *rti = let(g, "rti", hc_mod(g->a, w, I(g, g->nrt)));
    g->n = let(g, "n", hc_div(g->a, plane, I(g, s->group)));
    hc_expr *grp = let(g, "grp", hc_mod(g->a, plane, I(g, s->group)));
    g->mg0 = let(g, "mg0", MUL(grp, I(g, g->mg)));
    g->cin0 = let(g, "cin0", MUL(grp, I(g, g->cg)));
    hc_expr *b0 = let(g, "b0", hc_div(g->a, MUL(rti, I(g, g->nrb)), I(g, g->nrt)));
    hc_expr *b1 = hc_div(g->a, MUL(ADD(rti, I(g, 1)), I(g, g->nrb)), I(g, g->nrt));
    g->tblocks = let(g, "tblocks", SUB(b1, b0));
    g->ot0 = let(g, "ot0", MUL(b0, I(g, g->c->rb)));
    copy_rows(g);
    if (g->c->flat) blocks_flat(g);
    else blocks(g);
}

/* Per thread: the scratch (and the flat blocks' zeroed slack). */
static void thread_setup(void *ctx) {
    dw *g = ctx;
    g->xs = hc_b_declare(g->b, "xs",
                         hc_type_tensor_c(g->a, HC_F32, 4, g->scratch_shape, HC_SCOPE_GLOBAL),
                         NULL);
    if (g->c->flat) zero_slack(g, g->slack);
}
static void item_body(void *ctx, hc_expr *w) { item(ctx, w); }

static hc_var *param(dw *g, const char *name, int nd, const int64_t *shape) {
    return hc_var_new(g->a, name, hc_type_tensor_c(g->a, HC_F32, nd, shape, HC_SCOPE_GLOBAL));
}
/* X or Y: [n, ...] with n the batch's expression when it is symbolic. */
static hc_var *batch_param(dw *g, const char *name, const int64_t *shape) {
    if (!g->s->nsym) return param(g, name, 4, shape);
    hc_expr *dims[4] = {hc_sym_expr(g->a, g->s->nsym)};
    for (int d = 1; d < 4; d++) dims[d] = hc_int(g->a, shape[d]);
    return hc_var_new(g->a, name, hc_type_tensor(g->a, HC_F32, 4, dims, NULL, HC_SCOPE_GLOBAL));
}

hc_func *hc_conv_dw_cpu(hc_arena *a, const char *name, const hc_conv_dw_shape *s,
                        const hc_conv_dw_config *cfg, const hc_target *t, hc_error *err) {
    if (hc_conv_dw_validate_shape(s, err) || hc_conv_dw_validate(cfg, err)) return NULL;
    if (cfg->lanes != hc_target_f32_lanes(t)) {
        hc_error_set(err, HC_ERR_INVALID, "conv_dw config: lanes %d but target %s has %d f32 lanes",
                     cfg->lanes, t->name, hc_target_f32_lanes(t));
        return NULL;
    }
    hc_conv_dw_config c = clip(*cfg, s);
    hc_builder b;
    dw g = {.a = a, .b = &b, .s = s, .c = &c, .L = c.lanes};
    g.cg = s->c / s->group, g.mg = s->m / s->group;
    g.vec = hc_type_vector(a, HC_F32, c.lanes);
    g.ncb = hc_cdiv(s->ow, (int64_t)c.nv * c.lanes), g.nrt = row_tiles(s, &c);
    g.nrb = hc_cdiv(s->oh, c.rb);
    g.nmb = hc_cdiv(g.mg, c.mb);
    g.rows_in = scratch_rows(s, c.rt);
    g.wq = c.flat ? flat_width(s) : scratch_cols(s, c.lanes, c.nv);
    /* flat: the last blocks read up to a block plus the taps past the last row */
    int64_t slack = c.flat ? hc_round_up((int64_t)c.nv * c.lanes + (s->kw - 1) * s->dw + c.lanes,
                                      c.lanes)
                           : 0;
    int64_t chans = g.cg + hc_cdiv(slack, g.rows_in * g.wq); /* flat: whole channels of slack */
    int64_t scratch = chans * s->sw * g.rows_in * g.wq;
    if (scratch > HC_CONV_DW_MAX_SCRATCH) {
        hc_error_set(err, HC_ERR_UNSUPPORTED,
                     "conv_dw: scratch of %lld floats per thread exceeds %d", (long long)scratch,
                     HC_CONV_DW_MAX_SCRATCH);
        return NULL;
    }
    hc_builder_init(&b, a);
    g.X = batch_param(&g, "X", (int64_t[]){s->n, s->c, s->h, s->w});
    g.W = param(&g, "W", 4, (int64_t[]){s->m, g.cg, s->kh, s->kw});
    g.B = s->bias ? param(&g, "B", 1, (int64_t[]){s->m}) : NULL;
    g.Y = batch_param(&g, "Y", (int64_t[]){s->n, s->m, s->oh, s->ow});

    g.scratch_shape[0] = chans, g.scratch_shape[1] = s->sw, g.scratch_shape[2] = g.rows_in;
    g.scratch_shape[3] = g.wq, g.slack = slack;
    if (s->nsym)
        hc_sched_split_items_expr(&b, hc_mul(a, hc_sym_expr(a, s->nsym), I(&g, s->group * g.nrt)),
                                  c.threads, thread_setup, item_body, &g);
    else
        hc_sched_split_items(&b, s->n * s->group * g.nrt, c.threads, thread_setup, item_body, &g);
    hc_stmt *body = hc_builder_finish(&b);
    hc_var *params[4] = {g.X, g.W, g.B ? g.B : g.Y, g.Y};
    return hc_func_new(a, name ? name : "conv_dw", HC_FN_CPU_KERNEL, g.B ? 4 : 3, params, body);
}
