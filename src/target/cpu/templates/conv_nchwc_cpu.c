/* conv_nchwc_cpu.c — the CPU fp32 template for 2-D convolution in NCHW{b}c
 * (src/target/cpu/templates/conv_nchwc.h, docs/nchwc.md).
 *
 *   for t in [0, T) parallel:
 *     for (ti) in spatial(T) on t:                     one scratch per thread (padding only)
 *       for (it) in repeat(ceil(items / T)):           item = (n, chunk, tile of rt rows)
 *         [padding: copy the input rows the tile reads into xs, zeros around them]
 *         for (g, p) in repeat(chunk's groups, pixel tiles):   g: ot output blocks
 *           acc[px][ot] (REGISTER f32xL) = B[g*ot + o]
 *           for ci, i, j, l:  wv[o] = W[g*ot + o, ci, i, j, l, :]          (vector loads)
 *                             acc[q][o] += broadcast(X[pixel q's tap (i, j), channel l]) * wv[o]
 *           Y[n, g*ot + o, pixel q, :] = acc[q][o]       (pixels past the tile not stored)
 *
 * The pixels of a register tile are consecutive in the item's rows laid end to end, so a
 * tile may cross a row end (no padding of the output rows to a multiple of px). */
#include "ir/mapping.h"
#include "target/cpu/templates/conv_nchwc.h"
#include "target/cpu/templates/dsl.h"
#include "target/cpu/cpu.h"
#include "task/task.h"

hc_status hc_conv_nchwc_validate_shape(const hc_conv_nchwc_shape *s, hc_error *err) {
    const int64_t pos[] = {s->n, s->cb, s->h, s->w, s->mb, s->kh, s->kw,
                           s->sh, s->sw, s->dh, s->dw, s->oh, s->ow};
    const char *names[] = {"n", "cb", "h", "w", "mb", "kh", "kw", "sh", "sw", "dh", "dw",
                           "oh", "ow"};
    for (size_t i = 0; i < HC_ARRAY_LEN(pos); i++)
        if (pos[i] < 1 || pos[i] > ((int64_t)1 << 30))
            return hc_error_set(err, HC_ERR_INVALID,
                                "conv_nchwc shape: %s = %lld is not in [1, 2^30]", names[i],
                                (long long)pos[i]);
    const int64_t pads[] = {s->pt, s->pl, s->pb, s->pr};
    for (int i = 0; i < 4; i++)
        if (pads[i] < 0 || pads[i] > ((int64_t)1 << 30))
            return hc_error_set(err, HC_ERR_INVALID, "conv_nchwc shape: pad %d = %lld", i,
                                (long long)pads[i]);
    if (s->depthwise && s->mb != s->cb)
        return hc_error_set(err, HC_ERR_INVALID,
                            "conv_nchwc shape: depthwise with %lld input and %lld output blocks",
                            (long long)s->cb, (long long)s->mb);
    if (s->nchw_in && s->depthwise)
        return hc_error_set(err, HC_ERR_INVALID, "conv_nchwc shape: an NCHW input is for dense "
                            "convs only, not depthwise");
    if (s->block != 4 && s->block != 8 && s->block != 16)
        return hc_error_set(err, HC_ERR_INVALID, "conv_nchwc shape: block %d is not 4, 8 or 16",
                            s->block);
    int64_t eh = (s->kh - 1) * s->dh + 1, ew = (s->kw - 1) * s->dw + 1;
    if (s->h + s->pt + s->pb < eh || s->w + s->pl + s->pr < ew ||
        (s->h + s->pt + s->pb - eh) / s->sh + 1 != s->oh ||
        (s->w + s->pl + s->pr - ew) / s->sw + 1 != s->ow)
        return hc_error_set(err, HC_ERR_INVALID,
                            "conv_nchwc shape: output %lldx%lld does not match the window",
                            (long long)s->oh, (long long)s->ow);
    return HC_OK;
}

hc_status hc_conv_nchwc_validate(const hc_conv_nchwc_config *c, hc_error *err) {
    if (c->lanes != 4 && c->lanes != 8 && c->lanes != 16)
        return hc_error_set(err, HC_ERR_INVALID, "conv_nchwc config: lanes %d is not 4, 8 or 16",
                            c->lanes);
    if (c->px < 1 || c->px > HC_CONV_NCHWC_MAX_PX || c->ot < 1 || c->ot > HC_CONV_NCHWC_MAX_OT)
        return hc_error_set(err, HC_ERR_INVALID,
                            "conv_nchwc config: tile px %d x ot %d is not within %d x %d", c->px,
                            c->ot, HC_CONV_NCHWC_MAX_PX, HC_CONV_NCHWC_MAX_OT);
    if (c->rt < 1 || c->osplit < 1)
        return hc_error_set(err, HC_ERR_INVALID, "conv_nchwc config: rt %d, osplit %d", c->rt,
                            c->osplit);
    if (c->threads < 1 || c->threads > HC_CONV_NCHWC_MAX_THREADS)
        return hc_error_set(err, HC_ERR_INVALID, "conv_nchwc config: threads %d is not in [1, %d]",
                            c->threads, HC_CONV_NCHWC_MAX_THREADS);
    return HC_OK;
}

void hc_conv_nchwc_config_print(hc_sb *sb, const hc_conv_nchwc_config *c) {
    hc_sb_printf(sb, "px%d ot%d rt%d os%d t%d", c->px, c->ot, c->rt, c->osplit, c->threads);
}

bool hc_conv_nchwc_tile_fits(const hc_target *t, int px, int ot) {
    return px * ot + ot + 1 <= t->caps.num_regs;
}

static bool padded(const hc_conv_nchwc_shape *s) {
    return s->pt || s->pl || s->pb || s->pr;
}
/* Whether an unpadded dense conv (scratch_copy asks) copies the input rows an item reads
 * into a scratch anyway: a reduction (more input blocks than output blocks) whose input
 * is well beyond the cores' L2 (twice their sum), so that it comes from L3 or memory. A reduction's item rows are
 * swept by few groups of output blocks, and the first sweep reads cb planes at once, a
 * plane apart (100 KB at 56x56), in pieces of a few pixels that the hardware prefetchers
 * do not follow; the copy streams each plane's rows instead. Measured on Zen 3 (512 KiB
 * L2, 2 threads, per-kernel minima over alternated rounds, docs/nchwc.md): ResNet-50 at
 * batch 8 256 -> 64 at 56x56 (26 MB of input) 12.4 -> 6.5 ms, 512 -> 128 at 28x28 9.6 ->
 * 5.4 ms, 1024 -> 256 at 14x14 6.6 -> 6.0 ms; at batch 1 the 3.2 MB reductions were 0-18%
 * faster, but MobileNet-V2's 1.2-1.8 MB projections (144 -> 24) 25% slower and
 * Inception-V3's 35x35 reductions (1 MB) within +-20%, and expansions (64 -> 256) 10-20%
 * slower at either batch. */
static bool copy_pays(const hc_target *t, const hc_conv_nchwc_shape *s) {
    if (s->cb <= s->mb) return false;
    int64_t l2 = hc_target_l2_bytes(t);
    int64_t x_bytes = s->n * s->cb * s->h * s->w * hc_conv_nchwc_in_lanes(s) * 4;
    return x_bytes > 2 * l2 * HC_MAX(t->caps.num_cores, 1);
}
/* Whether the program copies the input rows it reads into a scratch: dense convs with
 * padding (then no tap needs a bounds check), and where copy_pays. */
static bool scratch_copy(const hc_target *t, const hc_conv_nchwc_shape *s) {
    return !s->depthwise && (padded(s) || copy_pays(t, s));
}
static int64_t rows_in(const hc_conv_nchwc_shape *s, int64_t rt) {
    return (rt - 1) * s->sh + (s->kh - 1) * s->dh + 1;
}
/* Scratch floats per thread: [cb][rows_in][w + pl + pr][input lanes] (when copying). */
static int64_t scratch_floats(const hc_conv_nchwc_shape *s, int64_t rt) {
    return s->cb * rows_in(s, rt) * (s->w + s->pl + s->pr) * hc_conv_nchwc_in_lanes(s);
}

/* Row tiles per image: ceil(oh / rt). */
static int64_t row_tiles(const hc_conv_nchwc_shape *s, const hc_conv_nchwc_config *c) {
    return hc_cdiv(s->oh, c->rt);
}

static hc_conv_nchwc_config clip(hc_conv_nchwc_config c, const hc_conv_nchwc_shape *s) {
    if (c.ot > s->mb) c.ot = (int)s->mb;
    if (c.osplit > s->mb) c.osplit = (int)s->mb;
    if (c.rt > s->oh) c.rt = (int)s->oh;
    int64_t pixels = (int64_t)c.rt * s->ow;
    if (c.px > pixels) c.px = (int)pixels;
    int64_t items = s->n * c.osplit * row_tiles(s, &c);
    if (c.threads > items) c.threads = (int)items;
    return c;
}

/* Whether one output-channel chunk per thread suits the shape: each thread then reads only
 * its share of the weights. A depthwise chunk also reads only its own input channels, so
 * chunks that split into whole groups of ot blocks cost nothing there. A dense chunk reads
 * every input channel: each thread streams the whole input instead of its rows, so chunks
 * pay only where the weights outweigh the input (small images, many channels). Measured on
 * Zen 3 (512 KiB L2, ResNet-50's 256 -> 64 1x1 convs at 56x56, 3.2 MB of input against
 * 64 KB of weights): chunks 0.78-0.84 ms, rows 0.64-0.68 ms. Never chunks smaller than a
 * group (the group would compute clamped copies). */
static bool chunks_pay(const hc_conv_nchwc_shape *s, int ot, int threads) {
    int64_t per = s->mb / threads;
    if (per < ot) return false;
    if (s->depthwise && s->mb % threads == 0 && per % ot == 0) return true;
    int64_t il = hc_conv_nchwc_in_lanes(s);
    int64_t wbytes = s->mb * s->block * s->kh * s->kw * (s->depthwise ? 1 : s->cb * il);
    int64_t xbytes = s->n * s->cb * s->h * s->w * il;
    return wbytes >= xbytes;
}

/* The input floats one item of rt rows reads: a dense conv's groups of ot output blocks
 * each sweep all of them (every input channel of the rows the item reads, the padded
 * scratch or the tensor's rows); a depthwise group reads only its own channels, once. */
static int64_t item_input_floats(const hc_conv_nchwc_shape *s, int64_t rt) {
    return s->depthwise ? 0 : scratch_floats(s, rt);
}

/* Rows per item halved until the input rows an item reads take at most half of L2, so
 * that every group after the first finds them there (ResNet-50's 56x56 1x1 convs of 256
 * channels on a 512 KiB L2: 28 rows, 1.6 MB, were read from L3 by each of the 11 groups). */
static void fit_rows_to_l2(const hc_target *t, const hc_conv_nchwc_shape *s,
                           hc_conv_nchwc_config *c) {
    int64_t l2 = hc_target_l2_bytes(t);
    while (c->rt > 1 && item_input_floats(s, c->rt) * 4 > l2 / 2) c->rt = (int)hc_cdiv(c->rt, 2);
}

/* Rows per item and chunks: output-channel chunks where chunks_pay, else the rows split
 * over the threads. Rows shrink until an item's input rows take at most half of L2. */
static void default_split(const hc_target *t, const hc_conv_nchwc_shape *s,
                          hc_conv_nchwc_config *c) {
    int threads = c->threads;
    c->osplit = 1;
    c->rt = (int)HC_MIN(s->oh, 1 << 20);
    /* a symbolic batch may be 1 (or any count the threads do not divide): split within
     * an image as for a batch the threads do not divide */
    if (threads > 1 && (s->nsym || s->n % threads != 0)) {
        if (chunks_pay(s, c->ot, threads)) c->osplit = threads;
        else c->rt = (int)hc_cdiv(s->oh, threads);
    }
    fit_rows_to_l2(t, s, c);
}

/* The register tile of the default config: ot output blocks x px pixels, from the
 * target's vector registers (px * ot accumulators + ot weight vectors + 1 broadcast).
 *
 * Dense: the tile with the most FMAs per load (px * ot / (px + ot): each inner step
 * loads ot weight vectors and px broadcasts for px * ot FMAs) among the groups of 2 or
 * more blocks that divide mb; where none does, among all, weighted by the square of the
 * fraction of the computed blocks that are real (a group of ot blocks overhanging mb
 * computes clamped copies); at most 4 blocks and 14 pixels, DENSE_SPARE_REGS vector
 * register left spare; on ties the more accumulators, then the wider ot. Between the two,
 * a group of 5-8 blocks that divides mb with at least 12 accumulators (5 x 5 on 5 blocks
 * with 32 registers: Inception-V3's 64 -> 80 1x1 conv 0.163 -> 0.129 ms, what --tune 2
 * picked). With 32 registers that is 4 x 6 (24 accumulators, measured with
 * bench/nchwc_1x1.c) where 4 divides mb, 3 x 9 where 3 does; with 16 (AVX2) 2 x 6 (the former default, 4 x 2, had
 * 8 accumulators). Measured on a real AVX2 CPU (Zen 3): the weighting alone took 3 x 4
 * on 32 blocks (3% of its last group wasted), 30% slower than 2 x 6 on ResNet-50's
 * 256-channel 1x1 convs; and 3 x 4 fills all 16 registers, so `--tune 2` picked 2 x 6
 * for every dense 1x1 conv of MobileNet-V2, 3 dividing their blocks or not (16 -> 96 on
 * 112x112: 0.54 -> 0.46 ms). On an Intel AVX-512 CPU, AVX2 code (built with
 * -mno-avx512f: the same 16 ymm registers) goes the other way: `--tune 2` picks 3 x 4 for
 * most 1x1 convs there (MobileNet-V2's 14x14 expands 0.198 -> 0.146 ms, ResNet-50's within
 * 0.84-1.11x, a shared VM: bench/results/compare_xeon.md), so the difference is not the
 * register count; this rule follows the real AVX2 CPU.
 * Depthwise: every tap loads px * ot input vectors and ot weight vectors for px * ot FMAs,
 * so a wide tile of one block loads the fewest per FMA (1 + 1/px). With 32 registers,
 * where the split gives the threads whole channel chunks of such groups (chunks_pay, with
 * ot 1: the blocks a multiple of the cores): one block
 * and a whole output row of up to HC_CONV_NCHWC_MAX_PX pixels, 14 of a wider row, more
 * blocks (up to 12 chains) for a row of fewer than 12. MobileNet-V2 on the AVX-512 Xeon
 * (kernel minima, 10 alternated rounds, ms): the 14x14 layers 0.013-0.028 -> 0.009-0.015,
 * the 7x7 one 0.015 -> 0.006, the 28x28 ones 0.026 -> 0.025, the stride-2 one to 56x56
 * 0.121 -> 0.114; its depthwise convs 0.451 -> 0.395 in all (--tune 2: 0.407). Rows of 28
 * of a 56-pixel row lost (0.119 -> 0.127), so did one block with the rows split (its
 * 9-block 56x56 layer 0.056 -> 0.096 at 28 pixels, 0.063 at 14), and its stride-2 28 ->
 * 14 layer, 0.011 -> 0.014. Elsewhere, and with 16 registers (measured on Zen 3: 3 x 4,
 * what the tuner picked there), 12 independent FMA chains, the widest ot that fits, the
 * same waste weighting. */
#define DENSE_SPARE_REGS 1
static void default_tile(const hc_target *t, const hc_conv_nchwc_shape *s, int64_t mb,
                         int *px_out, int *ot_out) {
    int regs = t->caps.num_regs > 0 ? t->caps.num_regs : 16;
    /* the split's own rule: one-block groups in whole channel chunks per thread */
    if (s->depthwise && regs >= 32 && chunks_pay(s, 1, HC_MAX(t->caps.num_cores, 1))) {
        int px = (int)(s->ow <= HC_CONV_NCHWC_MAX_PX ? s->ow : 14), ot = 1;
        while (px > 1 && !hc_conv_nchwc_tile_fits(t, px, 1)) px--;
        while (px * ot < 12 && ot < mb && hc_conv_nchwc_tile_fits(t, px, ot + 1)) ot++;
        *px_out = px, *ot_out = ot;
        return;
    }
    /* A stem's short reduction (an NCHW input, fewer than 64 multiply-adds per output) with
     * 16 registers: one block and 12 pixels, each tile's 12 stores contiguous in one block's
     * plane. The 1.6 MB of output of a 3 -> 32 stem at 112 x 112 weighs against only 27
     * multiply-adds per output. Zen 3 (2 threads, per-kernel minima of 8 alternated
     * rounds, the configs forced through tune records): MobileNet-V2's 3x3/2 stem 0.208 ->
     * 0.175 and 0.208 -> 0.186 ms, Inception-V3's (no padding, 149 x 149) 0.347 -> 0.283,
     * against 2 blocks x 6 pixels; 13 and 14 pixels in between. ResNet-50's 7x7/2 stem (147
     * per output) keeps 2 x 6, what --tune 2 picked for it. With 32 registers 2 blocks x 7
     * pixels (14 accumulators, not the dense rule's 2 x 14, which fills 31 registers):
     * what --tune 2 picked on an AVX-512 Zen 4 (2 x 7 for MobileNet-V2, 2 x 6 for
     * Inception-V3); there, per-kernel minima over 10 / 8 alternated rounds
     * (bench/kernel_minima.py), MobileNet-V2's stem 0.222 -> 0.139 ms, Inception-V3's
     * 0.314 -> 0.239. An odd number of blocks takes one block and 12 pixels, as with 16.
     * With 32 registers a long reduction too: ResNet-50's 7x7/2 stem (147 per output) took
     * the dense rule's 4 x 6 until --tune 2 picked 2 x 7 on an AVX-512 Zen 5, per-kernel
     * minima (10 alternated rounds) 0.585 -> 0.487 ms (tuned: 0.491), as it picked 2 x 6,
     * the same shape, with 16 registers on Zen 3. Not measured on Zen 4 or the Xeon. */
    if (s->nchw_in && (regs >= 32 || s->cb * s->kh * s->kw < 64)) {
        bool one_block = regs < 32 || mb % 2;
        int px = one_block ? 12 : 7, ot = one_block ? 1 : 2;
        while (px > 1 && !hc_conv_nchwc_tile_fits(t, px, ot)) px--;
        *px_out = px, *ot_out = ot;
        return;
    }
    double best = -1;
    int bpx = 1, bot = 1;
    /* mb: the blocks a thread's groups cover (all of them, or a chunk's).
     * pass 0: the groups that divide mb (no overhang), when one of at least 2 blocks
     * fits; pass 1 (dense): where none does, a wider group of up to HC_CONV_NCHWC_MAX_OT
     * blocks that divides mb, with at least 12 accumulators; pass 2: every group of at
     * most 4, weighted by what its overhang wastes */
    for (int pass = 0; pass < 3 && best < 0; pass++)
        for (int ot = (int)HC_MIN(mb, pass == 1 ? HC_CONV_NCHWC_MAX_OT : 4);
             ot >= (pass == 1 ? 5 : pass == 2 ? 1 : 2); ot--) {
            int px = s->depthwise ? 12 / ot : HC_MIN((regs - DENSE_SPARE_REGS - ot - 1) / ot, 14);
            if (px < 1 || !hc_conv_nchwc_tile_fits(t, px, ot)) continue;
            if (pass < 2 && mb % ot) continue;
            if (pass == 1 && (s->depthwise || px * ot < 12)) continue;
            double used = (double)mb / (double)(hc_cdiv(mb, ot) * ot);
            double score = (s->depthwise ? 1.0 : (double)(px * ot) / (px + ot)) * used * used;
            if (score > best + 1e-9 ||
                (score > best - 1e-9 && px * ot > bpx * bot)) /* ties: more chains */
                best = score, bpx = px, bot = ot;
        }
    *px_out = bpx, *ot_out = bot;
}

hc_conv_nchwc_config hc_conv_nchwc_default_config(const hc_target *t,
                                                  const hc_conv_nchwc_shape *s) {
    hc_conv_nchwc_config c = {.lanes = hc_target_f32_lanes(t)};
    default_tile(t, s, s->mb, &c.px, &c.ot);
    int64_t work = s->n * s->mb * s->block * s->oh * s->ow * s->kh * s->kw *
                   (s->depthwise ? 1 : s->cb * hc_conv_nchwc_in_lanes(s));
    c.threads = work < HC_AUTOSCHED_PARALLEL_MIN_WORK ? 1 : HC_MAX(t->caps.num_cores, 1);
    default_split(t, s, &c);
    /* Output-channel chunks: a dense conv's groups of ot blocks tile each chunk, and a
     * group overhanging its chunk computes clamped copies, so the tile is chosen again for
     * the chunk's blocks. Inception-V3's 17x17 1x7 / 7x1 convs on an AVX-512 Xeon, 2
     * chunks: 192 -> 192 channels (6 blocks a chunk) computed 8 with 4 x 6 tiles, 0.71-0.74
     * ms; 160 -> 160 (5 a chunk) 6 with 2 x 14, 0.48-0.51 ms; `--tune 2` picked groups
     * that divide the chunk (6 x 4, 3 x 5-7, 5 x 5): 0.50-0.54 and 0.34-0.37 ms. */
    if (!s->depthwise && c.osplit > 1 && s->mb % c.osplit == 0) {
        int px, ot;
        default_tile(t, s, s->mb / c.osplit, &px, &ot);
        c.px = px, c.ot = ot;
    }
    return clip(c, s);
}

static bool same_config(const hc_conv_nchwc_config *x, const hc_conv_nchwc_config *y) {
    return x->px == y->px && x->ot == y->ot && x->rt == y->rt && x->osplit == y->osplit &&
           x->threads == y->threads;
}

int hc_conv_nchwc_space(const hc_target *t, const hc_conv_nchwc_shape *s, int level,
                        hc_conv_nchwc_config *out, int max) {
    hc_conv_nchwc_config all[256];
    int n = 0;
    all[n++] = hc_conv_nchwc_default_config(t, s);
    static const int tiles1[][2] = {{6, 4}, {8, 3}, {12, 2}, {14, 2}, {4, 4}, {7, 3}};
    static const int ot2[] = {1, 2, 3, 4, 5, 6};
    for (int v = 0; level >= 1 && v < 2; v++) {
        int nt = level >= 2 ? 6 * 28 : (int)HC_ARRAY_LEN(tiles1);
        for (int k = 0; k < nt; k++) {
            hc_conv_nchwc_config c = all[0];
            if (level >= 2) c.ot = ot2[k / 28], c.px = k % 28 + 1;
            else c.px = tiles1[k][0], c.ot = tiles1[k][1];
            if (!hc_conv_nchwc_tile_fits(t, c.px, c.ot) || c.px < 2) continue;
            if (level >= 2 && c.px * c.ot < 12) continue;
            if (v == 1) { /* the other split: rows instead of chunks, or chunks instead of rows */
                int threads = HC_MAX(c.threads, 1);
                if (c.osplit > 1) c.osplit = 1, c.rt = (int)hc_cdiv(s->oh, threads);
                else if (s->mb >= (int64_t)threads * c.ot) c.osplit = threads, c.rt = (int)s->oh;
                else continue;
                fit_rows_to_l2(t, s, &c);
            } else {
                default_split(t, s, &c);
            }
            hc_conv_nchwc_config k2 = clip(c, s);
            bool dup = false;
            for (int q = 0; q < n && !dup; q++) dup = same_config(&all[q], &k2);
            if (!dup && n < (int)HC_ARRAY_LEN(all)) all[n++] = k2;
        }
    }
    for (int i = 0; out && i < n && i < max; i++) out[i] = all[i];
    return n;
}

/* ---- the program ---------------------------------------------------------------------- */
typedef struct nc {
    hc_arena *a;
    hc_builder *b;
    const hc_conv_nchwc_shape *s;
    const hc_conv_nchwc_config *c;
    int L;
    bool copy;            /* the item's input rows are copied into the scratch xs */
    int64_t wp, rin;      /* scratch row width (pixels) and rows */
    int64_t nrt;          /* row tiles per image */
    const hc_type *vec;
    hc_var *X, *W, *B, *Y, *xs;
    hc_expr *n, *ot0, *rows; /* item: image, first output row, rows */
    hc_expr *b0, *b1;        /* item: its output blocks [b0, b1) */
    int64_t scratch_shape[4]; /* per-thread scratch [cb, rows_in, wp, L] (padding only) */
    bool chan_tail;          /* a group of ot blocks may overhang its chunk */
    /* int8 (CONV_NCHWC_Q8): the scratch holds u8 values quantized from X, the taps are
     * vdot_u8s8 of 4 input channels' bytes and 4 bytes of W per output lane */
    bool q8;
    float inv;               /* f32(1 / x_scale) */
    int64_t z;               /* x_zero: the u8 value of padding */
    hc_var *K, *S;           /* [mb, L] i32 and f32 */
    const hc_type *ivec, *uvec; /* i32 x L, u8 x L */
} nc;

static hc_expr *addr(nc *g, hc_var *buf, int nd, hc_expr **idx) {
    return hc_address(g->a, buf, nd, idx);
}

/* xs[c][r][j] (vectors of L) = padded input row ot0*sh - pt + r, column j - pl of channel
 * block c: zeros outside X. */
/* The value copied into the scratch: x, or (q8) u(x) = round(x * inv) + z as u8. */
static hc_expr *scratch_value(nc *g, hc_expr *x) {
    if (!g->q8) return x;
    hc_arena *a = g->a;
    hc_expr *q = hc_math(a, HC_PRIM_ROUND, hc_mul(a, x, hc_f32(a, g->inv)), NULL);
    hc_expr *i = hc_add(a, hc_cast(a, g->ivec, q), hc_const_num(a, HC_I32, (double)g->z));
    return hc_cast(a, g->uvec, i);
}

/* X[n, ci, row, col, l] as a float: lane l of an input block, or (NCHW input) the pixel */
static hc_expr *x_at(nc *g, hc_expr *ci, hc_expr *row, hc_expr *col, hc_expr *l) {
    if (g->s->nchw_in) return hc_load(g->a, g->X, 4, (hc_expr *[]){g->n, ci, row, col});
    return hc_load(g->a, g->X, 5, (hc_expr *[]){g->n, ci, row, col, l});
}

/* xs[idx] = v: a vector of the scratch's lanes, or (NCHW input: one lane) a float */
static void put(nc *g, hc_expr **idx, hc_expr *v) {
    if (g->s->nchw_in) hc_b_store(g->b, g->xs, 4, idx, v);
    else vstore(g, addr(g, g->xs, 4, idx), v);
}

static void copy_rows(nc *g) {
    const hc_conv_nchwc_shape *s = g->s;
    hc_arena *a = g->a;
    hc_expr *zero = g->q8        ? vcall(g, HC_PRIM_VBROADCAST, g->uvec, 1,
                                         hc_const_num(a, HC_U8, (double)g->z), 0, 0)
                    : s->nchw_in ? hc_f32(a, 0)
                                 : vcall(g, HC_PRIM_VBROADCAST, g->vec, 1, hc_f32(a, 0), 0, 0);
    hc_expr *need = let(g, "rin", hc_min(a, I(g, g->rin),
                                         ADD(MUL(SUB(g->rows, I(g, 1)), I(g, s->sh)),
                                             I(g, (s->kh - 1) * s->dh + 1))));
    HC_FOR(g->b, c, "cc", I(g, s->cb), hc_serial()) {
        HC_FOR(g->b, r, "cr", need, hc_serial()) {
            hc_expr *ih = let(g, "ih", SUB(ADD(MUL(g->ot0, I(g, s->sh)), R(g, r)), I(g, s->pt)));
            hc_expr *inside = hc_and(a, hc_le(a, I(g, 0), ih), LT(ih, I(g, s->h)));
            hc_b_if_begin(g->b, inside);
            {
                for (int64_t j = 0; j < s->pl; j++)
                    put(g, (hc_expr *[]){R(g, c), R(g, r), I(g, j), I(g, 0)}, zero);
                HC_FOR(g->b, j, "cj", I(g, s->w), hc_serial()) {
                    /* a vector of the block's lanes, or (NCHW input) the pixel's one float */
                    hc_expr *x =
                        s->nchw_in
                            ? x_at(g, R(g, c), ih, R(g, j), NULL)
                            : vcall(g, HC_PRIM_VLOAD, g->vec, 1,
                                    addr(g, g->X, 5,
                                         (hc_expr *[]){g->n, R(g, c), ih, R(g, j), I(g, 0)}),
                                    0, 0);
                    put(g, (hc_expr *[]){R(g, c), R(g, r), ADD(R(g, j), I(g, s->pl)), I(g, 0)},
                        scratch_value(g, x));
                }
                for (int64_t j = s->pl + s->w; j < g->wp; j++)
                    put(g, (hc_expr *[]){R(g, c), R(g, r), I(g, j), I(g, 0)}, zero);
            }
            hc_b_else(g->b);
            HC_FOR(g->b, j, "cz", I(g, g->wp), hc_serial()) {
                put(g, (hc_expr *[]){R(g, c), R(g, r), R(g, j), I(g, 0)}, zero);
            }
            hc_b_end(g->b);
        }
    }
}

/* A register tile's pixels: output row (in the item) and column, and the window's origin
 * (row and column in the scratch or in X; may be negative); full: all px pixels exist
 * (none lies past the item). */
typedef struct tile_px {
    hc_expr *orow[HC_CONV_NCHWC_MAX_PX], *ocol[HC_CONV_NCHWC_MAX_PX];
    hc_expr *prow[HC_CONV_NCHWC_MAX_PX], *pcol[HC_CONV_NCHWC_MAX_PX];
    bool full;
} tile_px;

static void store_tile(nc *g, hc_var *acc, hc_expr *first, hc_expr *q0, hc_expr *npix,
                       hc_expr *const *ob, const tile_px *p, hc_expr *const *sv,
                       hc_expr *const *bv);

/* Depthwise: acc[q][o] += X[n, ob[o], pixel q's tap (i, j), :] * W[ob[o], 0, i, j, 0, :]
 * over the taps; a tap outside the image is a masked load of no lanes (zeros) at a clamped
 * address. prow/pcol: the pixels' window origins in X (row, column; may be negative). */
static void depthwise_taps_with(nc *g, hc_var *acc, hc_var *wv, hc_expr *const *ob,
                                hc_expr *const *prow, hc_expr *const *pcol, bool pad);

/* Tiles whose every tap lies inside the image take the unguarded loads. */
static void depthwise_taps(nc *g, hc_var *acc, hc_var *wv, hc_expr *const *ob,
                           hc_expr *const *prow, hc_expr *const *pcol) {
    const hc_conv_nchwc_shape *s = g->s;
    hc_arena *a = g->a;
    if (!padded(s)) {
        depthwise_taps_with(g, acc, wv, ob, prow, pcol, false);
        return;
    }
    int64_t eh = (s->kh - 1) * s->dh, ew = (s->kw - 1) * s->dw;
    hc_expr *inside = NULL;
    for (int i = 0; i < g->c->px; i++) {
        hc_expr *in = hc_and(a, hc_and(a, hc_le(a, I(g, 0), prow[i]),
                                       LT(ADD(prow[i], I(g, eh)), I(g, s->h))),
                             hc_and(a, hc_le(a, I(g, 0), pcol[i]),
                                    LT(ADD(pcol[i], I(g, ew)), I(g, s->w))));
        inside = inside ? hc_and(a, inside, in) : in;
    }
    hc_b_if_begin(g->b, inside);
    depthwise_taps_with(g, acc, wv, ob, prow, pcol, false);
    hc_b_else(g->b);
    depthwise_taps_with(g, acc, wv, ob, prow, pcol, true);
    hc_b_end(g->b);
}

static void depthwise_taps_with(nc *g, hc_var *acc, hc_var *wv, hc_expr *const *ob,
                                hc_expr *const *prow, hc_expr *const *pcol, bool pad) {
    const hc_conv_nchwc_shape *s = g->s;
    hc_arena *a = g->a;
    int px = g->c->px, ot = g->c->ot;
    hc_loop_attr kw_attr = s->kw <= 7 ? hc_unroll(0) : hc_serial();
    HC_FOR(g->b, kh, "kh", I(g, s->kh), hc_serial()) {
        HC_FOR(g->b, kw, "kw", I(g, s->kw), kw_attr) {
            for (int o = 0; o < ot; o++) {
                hc_expr *idx[6] = {ob[o], I(g, 0), R(g, kh), R(g, kw), I(g, 0), I(g, 0)};
                hc_b_store(g->b, wv, 1, (hc_expr *[]){I(g, o)},
                           vcall(g, HC_PRIM_VLOAD, g->vec, 1, addr(g, g->W, 6, idx), 0, 0));
            }
            hc_expr *dr = MUL(R(g, kh), I(g, s->dh)), *dc = MUL(R(g, kw), I(g, s->dw));
            for (int i = 0; i < px; i++) {
                hc_expr *row = ADD(prow[i], dr), *col = ADD(pcol[i], dc);
                hc_expr *inside = NULL;
                if (pad) {
                    inside = hc_and(a, hc_and(a, hc_le(a, I(g, 0), row), LT(row, I(g, s->h))),
                                    hc_and(a, hc_le(a, I(g, 0), col), LT(col, I(g, s->w))));
                    inside = let(g, "in", hc_select(a, inside, I(g, g->L), I(g, 0)));
                    row = hc_min(a, hc_max(a, row, I(g, 0)), I(g, s->h - 1));
                    col = hc_min(a, hc_max(a, col, I(g, 0)), I(g, s->w - 1));
                }
                for (int o = 0; o < ot; o++) {
                    hc_expr *p = addr(g, g->X, 5, (hc_expr *[]){g->n, ob[o], row, col, I(g, 0)});
                    hc_expr *x = pad ? vcall(g, HC_PRIM_VLOAD_MASK, g->vec, 2, p, inside, 0)
                                     : vcall(g, HC_PRIM_VLOAD, g->vec, 1, p, 0, 0);
                    hc_expr *idx[2] = {I(g, i), I(g, o)};
                    hc_b_store(g->b, acc, 2, idx,
                               vcall(g, HC_PRIM_VFMA, g->vec, 3, x,
                                     hc_load(a, wv, 1, (hc_expr *[]){I(g, o)}),
                                     hc_load(a, acc, 2, idx)));
                }
            }
        }
    }
}

/* The int8 tile: acc[q][o] (i32 x L) = K[ob[o]] + sum over ci, taps and the L/4 groups of
 * 4 input channels of vdot_u8s8(the 4 scratch bytes of pixel q's tap, W's 4L bytes);
 * stored as S[ob] * f32(acc) + B[ob]. */
static void tile_q8(nc *g, hc_expr *first, hc_expr *q0, hc_expr *npix, hc_expr *const *ob,
                    const tile_px *p) {
    const hc_conv_nchwc_shape *s = g->s;
    hc_arena *a = g->a;
    int px = g->c->px, ot = g->c->ot;
    hc_var *acc = hc_b_declare(
        g->b, "acc",
        hc_type_tensor_vec(a, HC_I32, g->L, 2, (hc_expr *[]){I(g, px), I(g, ot)}, NULL,
                           HC_SCOPE_REGISTER),
        NULL);
    for (int o = 0; o < ot; o++) {
        hc_var *kv = hc_b_declare(g->b, "kinit", g->ivec,
                                  vcall(g, HC_PRIM_VLOAD, g->ivec, 1,
                                        addr(g, g->K, 2, (hc_expr *[]){ob[o], I(g, 0)}), 0, 0));
        for (int i = 0; i < px; i++)
            hc_b_store(g->b, acc, 2, (hc_expr *[]){I(g, i), I(g, o)}, R(g, kv));
    }
    hc_var *wv = hc_b_declare(
        g->b, "wv",
        hc_type_tensor_vec(a, HC_I32, g->L, 1, (hc_expr *[]){I(g, ot)}, NULL, HC_SCOPE_REGISTER),
        NULL);
    hc_loop_attr kw_attr = s->kw <= 7 ? hc_unroll(0) : hc_serial();
    HC_FOR(g->b, ci, "ci", I(g, s->cb), hc_serial()) {
        HC_FOR(g->b, kh, "kh", I(g, s->kh), hc_serial()) {
            HC_FOR(g->b, kw, "kw", I(g, s->kw), kw_attr) {
                HC_FOR(g->b, l, "l4", I(g, g->L / 4), hc_serial()) {
                    for (int o = 0; o < ot; o++) {
                        hc_expr *idx[7] = {ob[o], R(g, ci), R(g, kh), R(g, kw), R(g, l), I(g, 0),
                                           I(g, 0)};
                        hc_b_store(g->b, wv, 1, (hc_expr *[]){I(g, o)},
                                   vcall(g, HC_PRIM_VLOAD_BYTES, g->ivec, 1, addr(g, g->W, 7, idx),
                                         0, 0));
                    }
                    hc_expr *dr = MUL(R(g, kh), I(g, s->dh)), *dc = MUL(R(g, kw), I(g, s->dw));
                    for (int i = 0; i < px; i++) {
                        hc_expr *row = ADD(p->prow[i], dr), *col = ADD(p->pcol[i], dc);
                        hc_expr *p = addr(g, g->xs, 4,
                                          (hc_expr *[]){R(g, ci), row, col, MUL(R(g, l), I(g, 4))});
                        hc_var *xb = hc_b_declare(g->b, "xb", g->ivec,
                                                  vcall(g, HC_PRIM_VBROADCAST_BYTES, g->ivec, 1, p,
                                                        0, 0));
                        for (int o = 0; o < ot; o++) {
                            hc_expr *idx[2] = {I(g, i), I(g, o)};
                            hc_b_store(g->b, acc, 2, idx,
                                       vcall(g, HC_PRIM_VDOT_U8S8, g->ivec, 3,
                                             hc_load(a, acc, 2, idx), R(g, xb),
                                             hc_load(a, wv, 1, (hc_expr *[]){I(g, o)})));
                        }
                    }
                }
            }
        }
    }
    hc_expr *sv[HC_CONV_NCHWC_MAX_OT], *bv[HC_CONV_NCHWC_MAX_OT];
    for (int o = 0; o < ot; o++) {
        hc_expr *ix[2] = {ob[o], I(g, 0)};
        sv[o] = hc_ref(a, hc_b_declare(g->b, "scale", g->vec,
                                       vcall(g, HC_PRIM_VLOAD, g->vec, 1, addr(g, g->S, 2, ix), 0, 0)));
        bv[o] = hc_ref(a, hc_b_declare(g->b, "bias", g->vec,
                                       vcall(g, HC_PRIM_VLOAD, g->vec, 1, addr(g, g->B, 2, ix), 0, 0)));
    }
    store_tile(g, acc, first, q0, npix, ob, p, sv, bv);
}

static void tile_with(nc *g, hc_expr *first, hc_expr *q0, hc_expr *npix, hc_expr *const *ob,
                      const tile_px *p);

/* Pixel q's window origin in the scratch (copied: padded rows) or in X (which is not
 * padded: a depthwise conv reads it with masked loads). */
static hc_expr *window_row(nc *g, hc_expr *orow) {
    const hc_conv_nchwc_shape *s = g->s;
    if (g->copy) return MUL(orow, I(g, s->sh));
    return SUB(MUL(ADD(g->ot0, orow), I(g, s->sh)), I(g, s->pt));
}
static hc_expr *window_col(nc *g, hc_expr *ocol) {
    const hc_conv_nchwc_shape *s = g->s;
    return SUB(MUL(ocol, I(g, s->sw)), I(g, g->copy ? 0 : s->pl));
}

/* One register tile: pixels q0 .. q0+px of the item (clamped to its last pixel), output
 * blocks first .. first+ot (clamped to the chunk's last block).
 *
 * A tile may cross the end of an output row; then each pixel has its own row and column,
 * and the px addresses of its broadcasts are px run-time offsets. Beyond about 10 pixels
 * they no longer fit the 16 general registers, and GCC reloads them from the stack inside
 * the reduction loop (MobileNet-V2's 32 -> 16 projection at 112 x 112, px 14: 18 stack
 * loads per 14 FMAs). So a tile that lies in one row and inside the item (every tile
 * where px divides the row width) takes a copy of the body whose pixels are one row and
 * consecutive columns: one base address and constant displacements. Rows that px does
 * not divide branch per tile between that copy and the general one. */
static void tile(nc *g, hc_expr *first, hc_expr *q0, hc_expr *npix) {
    const hc_conv_nchwc_shape *s = g->s;
    hc_arena *a = g->a;
    int px = g->c->px, ot = g->c->ot;
    bool chan_tail = g->chan_tail;
    hc_expr *ob[HC_CONV_NCHWC_MAX_OT];
    for (int o = 0; o < ot; o++) {
        hc_expr *k = ADD(first, I(g, o));
        ob[o] = chan_tail ? let(g, "ob", hc_min(a, k, SUB(g->b1, I(g, 1)))) : let(g, "ob", k);
    }
    tile_px p = {.full = true};
    bool always = s->ow % px == 0; /* every tile starts a row's multiple of px: in a row */
    bool never = px > s->ow;
    hc_expr *fast = NULL;
    if (!never) {
        hc_expr *r0 = let(g, "orow", DIV(q0, I(g, s->ow)));
        hc_expr *c0 = let(g, "ocol", hc_mod(a, q0, I(g, s->ow)));
        hc_expr *pr = let(g, "prow", window_row(g, r0));
        hc_expr *pc = let(g, "pcol", window_col(g, c0));
        for (int i = 0; i < px; i++) {
            p.orow[i] = r0, p.prow[i] = pr;
            p.ocol[i] = ADD(c0, I(g, i));
            p.pcol[i] = ADD(pc, I(g, i * s->sw));
        }
        if (!always)
            fast = hc_and(a, hc_le(a, ADD(q0, I(g, px)), npix),
                          hc_le(a, ADD(c0, I(g, px)), I(g, s->ow)));
        if (fast) hc_b_if_begin(g->b, fast);
        tile_with(g, first, q0, npix, ob, &p);
        if (!fast) return;
        hc_b_else(g->b);
    }
    for (int i = 0; i < px; i++) {
        hc_expr *q = let(g, "q", hc_min(a, ADD(q0, I(g, i)), SUB(npix, I(g, 1))));
        p.orow[i] = let(g, "orow", DIV(q, I(g, s->ow)));
        p.ocol[i] = let(g, "ocol", hc_mod(a, q, I(g, s->ow)));
        p.prow[i] = let(g, "prow", window_row(g, p.orow[i]));
        p.pcol[i] = let(g, "pcol", window_col(g, p.ocol[i]));
    }
    p.full = false;
    tile_with(g, first, q0, npix, ob, &p);
    if (fast) hc_b_end(g->b);
}

/* The tile's body for the given pixels. */
static void tile_with(nc *g, hc_expr *first, hc_expr *q0, hc_expr *npix, hc_expr *const *ob,
                      const tile_px *p) {
    const hc_conv_nchwc_shape *s = g->s;
    hc_arena *a = g->a;
    int px = g->c->px, ot = g->c->ot;
    if (g->q8) {
        tile_q8(g, first, q0, npix, ob, p);
        return;
    }
    hc_var *acc = hc_b_declare(
        g->b, "acc",
        hc_type_tensor_vec(a, HC_F32, g->L, 2, (hc_expr *[]){I(g, px), I(g, ot)}, NULL,
                           HC_SCOPE_REGISTER),
        NULL);
    for (int o = 0; o < ot; o++) {
        hc_expr *init = g->B ? vcall(g, HC_PRIM_VLOAD, g->vec, 1,
                                     addr(g, g->B, 2, (hc_expr *[]){ob[o], I(g, 0)}), 0, 0)
                             : vcall(g, HC_PRIM_VBROADCAST, g->vec, 1, hc_f32(a, 0), 0, 0);
        hc_var *bv = hc_b_declare(g->b, "bias", g->vec, init);
        for (int i = 0; i < px; i++)
            hc_b_store(g->b, acc, 2, (hc_expr *[]){I(g, i), I(g, o)}, R(g, bv));
    }
    hc_var *wv = hc_b_declare(
        g->b, "wv",
        hc_type_tensor_vec(a, HC_F32, g->L, 1, (hc_expr *[]){I(g, ot)}, NULL, HC_SCOPE_REGISTER),
        NULL);
    hc_loop_attr kw_attr = s->kw <= 7 ? hc_unroll(0) : hc_serial();
    if (s->depthwise) {
        depthwise_taps(g, acc, wv, ob, p->prow, p->pcol);
        store_tile(g, acc, first, q0, npix, ob, p, NULL, NULL);
        return;
    }
    HC_FOR(g->b, ci, "ci", I(g, s->cb), hc_serial()) {
        HC_FOR(g->b, kh, "kh", I(g, s->kh), hc_serial()) {
            HC_FOR(g->b, kw, "kw", I(g, s->kw), kw_attr) {
                HC_FOR(g->b, l, "l", I(g, hc_conv_nchwc_in_lanes(s)), hc_serial()) {
                    for (int o = 0; o < ot; o++) {
                        hc_expr *idx[6] = {ob[o], R(g, ci), R(g, kh), R(g, kw), R(g, l), I(g, 0)};
                        hc_b_store(g->b, wv, 1, (hc_expr *[]){I(g, o)},
                                   vcall(g, HC_PRIM_VLOAD, g->vec, 1, addr(g, g->W, 6, idx), 0, 0));
                    }
                    hc_expr *dr = MUL(R(g, kh), I(g, s->dh)), *dc = MUL(R(g, kw), I(g, s->dw));
                    for (int i = 0; i < px; i++) {
                        hc_expr *row = ADD(p->prow[i], dr), *col = ADD(p->pcol[i], dc);
                        hc_expr *x =
                            g->copy ? hc_load(a, g->xs, 4, (hc_expr *[]){R(g, ci), row, col, R(g, l)})
                                    : x_at(g, R(g, ci), row, col, R(g, l));
                        hc_var *xb = hc_b_declare(g->b, "xb", g->vec,
                                                  vcall(g, HC_PRIM_VBROADCAST, g->vec, 1, x, 0, 0));
                        for (int o = 0; o < ot; o++) {
                            hc_expr *idx[2] = {I(g, i), I(g, o)};
                            hc_b_store(g->b, acc, 2, idx,
                                       vcall(g, HC_PRIM_VFMA, g->vec, 3, R(g, xb),
                                             hc_load(a, wv, 1, (hc_expr *[]){I(g, o)}),
                                             hc_load(a, acc, 2, idx)));
                        }
                    }
                }
            }
        }
    }
    store_tile(g, acc, first, q0, npix, ob, p, NULL, NULL);
}

/* Y[n, ob[o], pixel i] = acc[i][o] (int8: S[ob] * f32(acc[i][o]) + B[ob], sv and bv the
 * S and B vectors; NULL for f32): pixels past the item and blocks past the chunk not
 * stored. */
static void store_tile(nc *g, hc_var *acc, hc_expr *first, hc_expr *q0, hc_expr *npix,
                       hc_expr *const *ob, const tile_px *p, hc_expr *const *sv,
                       hc_expr *const *bv) {
    hc_arena *a = g->a;
    int px = g->c->px, ot = g->c->ot;
    bool chan_tail = g->chan_tail;
    for (int i = 0; i < px; i++) {
        bool maybe_past = i > 0 && !p->full;
        if (maybe_past) hc_b_if_begin(g->b, LT(ADD(q0, I(g, i)), npix));
        for (int o = 0; o < ot; o++) {
            bool ct = chan_tail && o > 0;
            if (ct) hc_b_if_begin(g->b, LT(ADD(first, I(g, o)), g->b1));
            hc_expr *v = hc_load(a, acc, 2, (hc_expr *[]){I(g, i), I(g, o)});
            if (sv) v = vcall(g, HC_PRIM_VFMA, g->vec, 3, hc_cast(a, g->vec, v), sv[o], bv[o]);
            hc_expr *idx[5] = {g->n, ob[o], ADD(g->ot0, p->orow[i]), p->ocol[i], I(g, 0)};
            vstore(g, addr(g, g->Y, 5, idx), v);
            if (ct) hc_b_end(g->b);
        }
        if (maybe_past) hc_b_end(g->b);
    }
}

/* One item: image n, output chunk, row tile. */
static void item(nc *g, hc_expr *w) {
    const hc_conv_nchwc_shape *s = g->s;
    hc_arena *a = g->a;
    int os = g->c->osplit;
    hc_expr *rti = let(g, "rti", hc_mod(a, w, I(g, g->nrt)));
    hc_expr *rest = let(g, "rest", DIV(w, I(g, g->nrt)));
    hc_expr *chunk = let(g, "chunk", hc_mod(a, rest, I(g, os)));
    g->n = let(g, "n", DIV(rest, I(g, os)));
    /* the chunk's output blocks [b0, b1): balanced to within one block */
    g->b0 = let(g, "b0", DIV(MUL(chunk, I(g, s->mb)), I(g, os)));
    g->b1 = let(g, "b1", DIV(MUL(ADD(chunk, I(g, 1)), I(g, s->mb)), I(g, os)));
    g->ot0 = let(g, "ot0", MUL(rti, I(g, g->c->rt)));
    g->rows = let(g, "rows", hc_min(a, I(g, g->c->rt), SUB(I(g, s->oh), g->ot0)));
    if (g->copy) copy_rows(g);
    hc_expr *npix = let(g, "npix", MUL(g->rows, I(g, s->ow)));
    hc_expr *ntiles = let(g, "ntiles", DIV(ADD(npix, I(g, g->c->px - 1)), I(g, g->c->px)));
    int ot = g->c->ot;
    hc_expr *ngr = let(g, "ngr", DIV(ADD(SUB(g->b1, g->b0), I(g, ot - 1)), I(g, ot)));
    HC_FOR(g->b, gi, "grp", ngr, hc_serial()) {
        hc_expr *first = let(g, "first", ADD(g->b0, MUL(R(g, gi), I(g, ot))));
        HC_FOR(g->b, p, "pt", ntiles, hc_serial()) {
            hc_expr *q0 = let(g, "q0", MUL(R(g, p), I(g, g->c->px)));
            tile(g, first, q0, npix);
        }
    }
}

/* Per thread (padding only): the scratch of padded rows. */
static void thread_setup(void *ctx) {
    nc *g = ctx;
    g->xs = hc_b_declare(g->b, "xs",
                         hc_type_tensor_c(g->a, g->q8 ? HC_U8 : HC_F32, 4, g->scratch_shape,
                                          HC_SCOPE_GLOBAL),
                         NULL);
}
static void item_body(void *ctx, hc_expr *w) { item(ctx, w); }

static hc_var *param_of(nc *g, const char *name, hc_dtype t, int nd, const int64_t *shape) {
    return hc_var_new(g->a, name, hc_type_tensor_c(g->a, t, nd, shape, HC_SCOPE_GLOBAL));
}
static hc_var *param(nc *g, const char *name, int nd, const int64_t *shape) {
    return param_of(g, name, HC_F32, nd, shape);
}
/* X or Y: [n, dims...] (nd of 4 or 5 dims) with n the batch's expression when it is
 * symbolic. */
static hc_var *batch_param(nc *g, const char *name, int nd, const int64_t *shape) {
    if (!g->s->nsym) return param(g, name, nd, shape);
    hc_expr *dims[5] = {hc_sym_expr(g->a, g->s->nsym)};
    for (int d = 1; d < nd; d++) dims[d] = hc_int(g->a, shape[d]);
    return hc_var_new(g->a, name, hc_type_tensor(g->a, HC_F32, nd, dims, NULL, HC_SCOPE_GLOBAL));
}
/* The items (image, chunk, row tile): a multiple of the batch's expression when symbolic. */
static int split(nc *g, hc_builder *b, hc_items_setup_fn setup) {
    int64_t per_image = g->c->osplit * g->nrt;
    if (!g->s->nsym)
        return hc_sched_split_items(b, g->s->n * per_image, g->c->threads, setup, item_body, g);
    hc_expr *items = hc_mul(g->a, hc_sym_expr(g->a, g->s->nsym), hc_int(g->a, per_image));
    return hc_sched_split_items_expr(b, items, g->c->threads, setup, item_body, g);
}

hc_func *hc_conv_nchwc_cpu(hc_arena *a, const char *name, const hc_conv_nchwc_shape *s,
                           const hc_conv_nchwc_config *cfg, const hc_target *t, hc_error *err) {
    if (hc_conv_nchwc_validate_shape(s, err) || hc_conv_nchwc_validate(cfg, err)) return NULL;
    if (cfg->lanes != hc_target_f32_lanes(t) || cfg->lanes != s->block) {
        hc_error_set(err, HC_ERR_INVALID,
                     "conv_nchwc config: lanes %d, block %d, target %s has %d f32 lanes",
                     cfg->lanes, s->block, t->name, hc_target_f32_lanes(t));
        return NULL;
    }
    if (!hc_conv_nchwc_tile_fits(t, cfg->px, cfg->ot)) {
        hc_error_set(err, HC_ERR_INVALID,
                     "conv_nchwc config: tile px %d x ot %d does not fit %d registers", cfg->px,
                     cfg->ot, t->caps.num_regs);
        return NULL;
    }
    hc_conv_nchwc_config c = clip(*cfg, s);
    hc_builder b;
    nc g = {.a = a, .b = &b, .s = s, .c = &c, .L = c.lanes, .copy = scratch_copy(t, s)};
    g.vec = hc_type_vector(a, HC_F32, c.lanes);
    g.wp = s->w + s->pl + s->pr;
    g.rin = rows_in(s, c.rt);
    g.nrt = row_tiles(s, &c);
    g.chan_tail = s->mb % c.osplit != 0 || (s->mb / c.osplit) % c.ot != 0;
    int64_t scratch = g.copy ? scratch_floats(s, c.rt) : 0;
    if (scratch > HC_CONV_NCHWC_MAX_SCRATCH && !padded(s)) /* the copy is optional there */
        g.copy = false, scratch = 0;
    if (scratch > HC_CONV_NCHWC_MAX_SCRATCH) {
        hc_error_set(err, HC_ERR_UNSUPPORTED,
                     "conv_nchwc: scratch of %lld floats per thread exceeds %d",
                     (long long)scratch, HC_CONV_NCHWC_MAX_SCRATCH);
        return NULL;
    }
    int64_t L = s->block, il = hc_conv_nchwc_in_lanes(s);
    hc_builder_init(&b, a);
    g.X = batch_param(&g, "X", s->nchw_in ? 4 : 5, (int64_t[]){s->n, s->cb, s->h, s->w, L});
    g.W = s->depthwise ? param(&g, "W", 6, (int64_t[]){s->mb, 1, s->kh, s->kw, 1, L})
                       : param(&g, "W", 6, (int64_t[]){s->mb, s->cb, s->kh, s->kw, il, L});
    g.B = s->bias ? param(&g, "B", 2, (int64_t[]){s->mb, L}) : NULL;
    g.Y = batch_param(&g, "Y", 5, (int64_t[]){s->n, s->mb, s->oh, s->ow, L});

    g.scratch_shape[0] = s->cb, g.scratch_shape[1] = g.rin, g.scratch_shape[2] = g.wp;
    g.scratch_shape[3] = il;
    split(&g, &b, g.copy ? thread_setup : NULL);
    hc_stmt *body = hc_builder_finish(&b);
    hc_var *params[4] = {g.X, g.W, g.B ? g.B : g.Y, g.Y};
    return hc_func_new(a, name ? name : "conv_nchwc", HC_FN_CPU_KERNEL, g.B ? 4 : 3, params, body);
}

/* ---- the int8 program (CONV_NCHWC_Q8) --------------------------------------------------- */
bool hc_conv_q8_tile_fits(const hc_target *t, int px, int ot) {
    /* without VNNI each dot product needs 4 more registers (the widened bytes) */
    int extra = t->caps.int8_dot >= (t->caps.isa == HC_ISA_AVX512 ? 2 : 1) ? 0 : 4;
    return px * ot + ot + 1 + extra <= t->caps.num_regs;
}

hc_conv_nchwc_config hc_conv_q8_default_config(const hc_target *t, const hc_conv_nchwc_shape *s) {
    hc_conv_nchwc_config c = hc_conv_nchwc_default_config(t, s);
    while (c.px > 1 && !hc_conv_q8_tile_fits(t, c.px, c.ot)) c.px--;
    return c;
}

int hc_conv_q8_space(const hc_target *t, const hc_conv_nchwc_shape *s, int level,
                     hc_conv_nchwc_config *out, int max) {
    hc_conv_nchwc_config all[256];
    int n = hc_conv_nchwc_space(t, s, level, all, (int)HC_ARRAY_LEN(all)), m = 0;
    all[0] = hc_conv_q8_default_config(t, s);
    for (int i = 0; i < n && i < (int)HC_ARRAY_LEN(all); i++) {
        if (!hc_conv_q8_tile_fits(t, all[i].px, all[i].ot)) continue;
        bool dup = false;
        for (int q = 0; q < m && !dup; q++) dup = same_config(&all[q], &all[i]);
        if (dup) continue;
        if (out && m < max) out[m] = all[i];
        all[m++] = all[i];
    }
    return m;
}

hc_func *hc_conv_q8_cpu(hc_arena *a, const char *name, const hc_conv_nchwc_shape *s, float inv,
                        int64_t z, const hc_conv_nchwc_config *cfg, const hc_target *t,
                        hc_error *err) {
    if (hc_conv_nchwc_validate_shape(s, err) || hc_conv_nchwc_validate(cfg, err)) return NULL;
    if (cfg->lanes != hc_target_f32_lanes(t) || cfg->lanes != s->block || s->block % 4 ||
        s->depthwise || s->nchw_in || !s->bias) {
        hc_error_set(err, HC_ERR_INVALID,
                     "conv_q8 config: lanes %d, block %d, target %s has %d f32 lanes",
                     cfg->lanes, s->block, t->name, hc_target_f32_lanes(t));
        return NULL;
    }
    if (!hc_conv_q8_tile_fits(t, cfg->px, cfg->ot)) {
        hc_error_set(err, HC_ERR_INVALID, "conv_q8 config: tile px %d x ot %d does not fit %d "
                     "registers", cfg->px, cfg->ot, t->caps.num_regs);
        return NULL;
    }
    hc_conv_nchwc_config c = clip(*cfg, s);
    hc_builder b;
    nc g = {.a = a, .b = &b, .s = s, .c = &c, .L = c.lanes, .copy = true, .q8 = true,
            .inv = inv, .z = z};
    g.vec = hc_type_vector(a, HC_F32, c.lanes);
    g.ivec = hc_type_vector(a, HC_I32, c.lanes);
    g.uvec = hc_type_vector(a, HC_U8, c.lanes);
    g.wp = s->w + s->pl + s->pr;
    g.rin = rows_in(s, c.rt);
    g.nrt = row_tiles(s, &c);
    g.chan_tail = s->mb % c.osplit != 0 || (s->mb / c.osplit) % c.ot != 0;
    int64_t L = s->block, scratch = s->cb * g.rin * g.wp * L;
    if (scratch > 4 * (int64_t)HC_CONV_NCHWC_MAX_SCRATCH) {
        hc_error_set(err, HC_ERR_UNSUPPORTED, "conv_q8: scratch of %lld bytes per thread",
                     (long long)scratch);
        return NULL;
    }
    hc_builder_init(&b, a);
    g.X = batch_param(&g, "X", 5, (int64_t[]){s->n, s->cb, s->h, s->w, L});
    g.W = param_of(&g, "W", HC_I8, 7, (int64_t[]){s->mb, s->cb, s->kh, s->kw, L / 4, L, 4});
    g.K = param_of(&g, "K", HC_I32, 2, (int64_t[]){s->mb, L});
    g.S = param(&g, "S", 2, (int64_t[]){s->mb, L});
    g.B = param(&g, "B", 2, (int64_t[]){s->mb, L});
    g.Y = batch_param(&g, "Y", 5, (int64_t[]){s->n, s->mb, s->oh, s->ow, L});
    g.scratch_shape[0] = s->cb, g.scratch_shape[1] = g.rin, g.scratch_shape[2] = g.wp;
    g.scratch_shape[3] = L;
    split(&g, &b, thread_setup);
    hc_stmt *body = hc_builder_finish(&b);
    hc_var *params[6] = {g.X, g.W, g.K, g.S, g.B, g.Y};
    return hc_func_new(a, name ? name : "conv_q8", HC_FN_CPU_KERNEL, 6, params, body);
}
