/* matmul_cpu.c — the CPU fp32 batched matmul template (BLIS structure).
 *
 *   for t in [0, T) parallel:                        T = tb * tm * tn OpenMP threads
 *     for (tbi, ti, tj) in spatial(tb, tm, tn) on t: batches x macro tile of C per thread
 *       for b, jc (NC), pc (KC):  pack B block -> Bp[NC/NR][KC][NR]
 *         for ic (MC):            pack A block -> Ap[MC/MR][KC][MR]
 *           for (jr, ir) in repeat(NC/NR, MC/MR):    register tiles, in order (rows_first:
 *                                                     repeat(MC/MR, NC/NR), ir outer)
 *             acc[MR][NR/L] (REGISTER f32xL) += Ap panel x Bp panel, k by k
 *             store acc to C (masked on the tails)
 *
 * Tails: packing pads partial panels with zeros (A rows beyond M, B columns beyond N), so
 * the micro-kernel always runs a full MR x NR tile; only its stores are predicated. When a
 * panel is read in place (pack_a / pack_b off), A rows are clamped to M - 1 (their results
 * are never stored) and B columns use masked loads. */
#include <math.h>
#include <string.h>

#include "ir/mapping.h"
#include "target/cpu/templates/matmul.h"
#include "target/cpu/templates/dsl.h"

/* ---- configs -------------------------------------------------------------------------- */

int64_t hc_matmul_part_extent(int64_t extent, int64_t tile, int parts) {
    return hc_cdiv(hc_cdiv(extent, tile), parts) * tile;
}

/* A rough cost of a split: the padded work of the slowest thread plus the packing every
 * thread repeats (each thread row packs its own B columns, each column its A rows), at
 * a_cost / b_cost multiply-adds per packed element. */
static double split_cost(const hc_matmul_config *c, const hc_matmul_shape *s, int tb, int tm,
                         int tn, double a_cost, double b_cost) {
    double batches = (double)hc_cdiv(s->batch, tb);
    double rows = (double)hc_matmul_part_extent(s->m, c->mr, tm);
    double cols = (double)hc_matmul_part_extent(s->n, c->nr, tn);
    double compute = rows * cols * (double)s->k;
    double packing = (c->pack_b ? b_cost * cols * (double)s->k : 0) +
                     (c->pack_a ? a_cost * rows * (double)s->k : 0);
    return batches * (compute + packing);
}

void hc_matmul_config_set_threads_costed(hc_matmul_config *c, const hc_matmul_shape *s,
                                         int threads, double a_cost, double b_cost) {
    if (threads < 1) threads = 1;
    c->tb = 1, c->tm = threads, c->tn = 1;
    double best = -1;
    for (int tb = threads; tb >= 1; tb--) { /* ties go to whole batches per thread */
        for (int tm = 1; tm <= threads / tb; tm++) {
            if (threads % (tb * tm)) continue;
            int tn = threads / (tb * tm);
            double cost = split_cost(c, s, tb, tm, tn, a_cost, b_cost);
            if (best < 0 || cost < best) best = cost, c->tb = tb, c->tm = tm, c->tn = tn;
        }
    }
}

void hc_matmul_config_set_threads(hc_matmul_config *c, const hc_matmul_shape *s, int threads) {
    hc_matmul_config_set_threads_costed(c, s, threads, HC_MATMUL_PACK_COST,
                                        HC_MATMUL_PACK_COST);
}

/* kc, and mc from it: the A block (mc x kc) takes a modest share of L2 (an eighth) next to
 * the streaming B panels, in whole row tiles. */
static void set_kc_mc(hc_matmul_config *c, const hc_target *t, int64_t kc) {
    c->kc = kc;
    int64_t mc = hc_clamp64(hc_target_l2_bytes(t) / 8 / (kc * 4), c->mr, 1 << 16);
    c->mc = HC_MAX(mc / c->mr * c->mr, c->mr);
}

/* kc from the share of L1 its B micro-panel (kc x nr floats) aims at, balanced so that K
 * splits into equal blocks, and mc from kc. */
void hc_matmul_config_set_kc(hc_matmul_config *c, const hc_matmul_shape *s, const hc_target *t,
                             double l1_share) {
    int64_t panel_bytes = (int64_t)((double)hc_target_l1_bytes(t) * l1_share);
    int64_t kc = hc_clamp64(panel_bytes / (c->nr * 4) / 16 * 16, 64, 1024);
    set_kc_mc(c, t, hc_round_up(hc_cdiv(s->k, hc_cdiv(s->k, kc)), 8)); /* balanced K blocks */
}

void hc_matmul_config_set_one_kblock(hc_matmul_config *c, const hc_matmul_shape *s,
                                     const hc_target *t) {
    set_kc_mc(c, t, hc_round_up(HC_MAX(s->k, 1), 8));
}

/* The B micro-panel of half of L1 on Sapphire/Emerald Rapids with AVX-512, where B is
 * constant weights and A is not, one B for all rows (activations x weights: the
 * transformers' linear layers; not the Winograd matmuls' B per tile position), several
 * row tiles reuse each B panel (M > 4 mr, as for packing B; a GEMV reads it once) and a
 * thread's share of C fits in half of L2 (the partial sums of the extra K blocks stay
 * there). It reads nothing that the pre-packing of either operand changes: the packed
 * layout follows kc.
 * The default (hc_matmul_default_config) aims at about 1.5 x L1, streaming through it,
 * from the study on Zen 4 (32 KiB L1, kc 256-384 with 32 columns on a plateau). On an
 * Emerald Rapids Xeon (48 KiB L1, 12 ways) that gave kc 384 at K = 768 and 512 at
 * K = 3072: a panel of about all of L1, with no room for the A micro-panels. bench/ab.py
 * against the default, medians of the per-round new / old (all rounds; the faster half;
 * the slower half): BERT 0.939 (0.958, 0.927), 0.945 (0.997, 0.920), back to back 0.951
 * (0.943, 0.981); GPT-2 0.936 (0.938, 0.931), 0.992 (1.003, 0.991), back to back 0.983
 * (0.972, 0.986). That VM's slow regime (another tenant on its cores) gains most; the fast
 * one, the nearest to a machine of one's own, is level or better. kc 256 was 2-8% behind
 * kc 192 and kc 96 slower than the default. Where the conditions fail it did not pay:
 * GPT-2's LM head (12.9 MB of C a thread: the extra K blocks' partial sums went to
 * memory) about 8% slower per kernel, MobileNet-V2's N = 49 convs and its classifier
 * GEMV (the model 1.02-1.07), AVX2 code on that core 1.006-1.035 on the CNNs.
 * bench/results/compare_xeon.md. */
/* The conditions both K-block rules share (activations x weights with AVX-512, several
 * row tiles; each rule names the cores it was measured on); *c_share: a thread's bytes of
 * C. */
static bool avx512_weights(const hc_matmul_config *c, const hc_matmul_shape *s, const hc_target *t,
                           bool a_const, bool b_const, int64_t *c_share) {
    if (t->caps.isa != HC_ISA_AVX512 || !b_const || a_const || s->batch != 1 || s->m <= 4 * c->mr)
        return false;
    *c_share = s->m * s->n * 4 / HC_MAX((int64_t)c->tb * c->tm * c->tn, 1);
    return true;
}

bool hc_matmul_half_l1_panel_pays(const hc_matmul_config *c, const hc_matmul_shape *s,
                                  const hc_target *t, bool a_const, bool b_const) {
    int64_t l2 = hc_target_l2_bytes(t), share;
    return t->caps.core == HC_CORE_INTEL_SPR && avx512_weights(c, s, t, a_const, b_const, &share) &&
           share <= l2 / 2;
}

/* One K block where the other rule's C condition fails (a thread's share of C exceeds half
 * of L2: BERT at batch 8, 1024 rows) and the whole K's B micro-panel (K x nr) takes at
 * most twice L1 (K = 768 with 32 columns on 48 KiB). With several K blocks, the partial
 * sums of every block but the last go out to C, or to the scratch of C's shape that
 * epilogue fusion needs (matmul_cpu.c, c_write_once), and come back: a round trip of the
 * thread's C share through memory per extra block, while one block stores C once and
 * reads its B panel from L2. BERT at batch 8 on an Emerald Rapids VM, against kc 384 (2
 * blocks) in the same rounds (bench/ab.py, median of the per-round new / old): 0.967
 * (faster half 1.137, slower 0.959), 24 rounds 0.968 (0.885, 0.982), and 0.981 (0.966,
 * 1.032) in a third run (BERT b1, unchanged, read 1.023 there); its FFN-in
 * with the GELU fused, alone (min of 100 runs, 6 alternated rounds): 16.0-17.0 ms
 * against 18.3-19.2. On Zen 5 (48 KiB of L1, 1 MiB of L2) where a thread's C exceeds all of
 * L2: GPT-2's LM head (12.9 MB a thread) 20.6 ms against 23.1-23.5 at kc 384 alone, GPT-2
 * 0.986 per round (bench/ab.py), BERT at batch 8 0.988 and 0.998; C shares of
 * 590-786 KB (batch 1) level or up to 3% slower, so not there. docs/matmul.md. */
/* The C share past which one K block pays, on the cores it was measured on; -1 elsewhere. */
static int64_t one_kblock_min_c_share(const hc_target *t) {
    int64_t l2 = hc_target_l2_bytes(t);
    switch (t->caps.core) {
    case HC_CORE_INTEL_SPR: return l2 / 2;
    case HC_CORE_AMD_ZEN5: return l2; /* below it the partial sums stay in L2 */
    default: return -1;
    }
}

bool hc_matmul_one_kblock_pays(const hc_matmul_config *c, const hc_matmul_shape *s,
                               const hc_target *t, bool a_const, bool b_const) {
    int64_t l1 = hc_target_l1_bytes(t), c_min = one_kblock_min_c_share(t), share;
    return c_min >= 0 && avx512_weights(c, s, t, a_const, b_const, &share) && share > c_min &&
           s->k > c->kc && hc_round_up(s->k, 8) * c->nr * 4 <= 2 * l1;
}

/* B-stationary blocks: constant weights as B, activations as A, several row tiles, and a
 * default A block of fewer than 4 register-tile rows (a small L2 against kc: 512 KiB on Zen
 * 3 gives 18 rows at kc 768) that leaves each thread several A blocks, while its B block
 * (kc x its columns) exceeds half of L2. The default then streams the B block from L3 once
 * per A block, each B panel serving 3 tiles: BERT's FFN-in at batch 1 re-reads 4.7 MB 8
 * times a thread, and another tenant in L3 sends those reads to memory. Instead: the
 * default's kc, a B block of 3/8 of L2 (768 x 64 on 512 KiB), A read in place (not packed)
 * as one block of all the thread's rows, rows first: each B micro-panel sweeps the thread's
 * rows with the B block in L2, B is read from memory once, and the A rows (activations,
 * 0.4 MB at 128 x 768, 3 MB at batch 8) are what goes round again, once per B block, in
 * place. Packing A is what made an earlier form of this rule (kc 256 from half of L1, 256 x
 * 128 blocks, A packed) lose in isolation: A was packed again for every B block, 12 times
 * a thread (FFN-in 3.58 ms against the default's 3.11, B warm in L3); read in place at 768
 * x 64 it is level with the default there (3.10-3.12; FFN-out 3.15 against 3.24-3.29,
 * 128 x 768 x 768 0.77 against 0.80). In the model (B cold), Zen 3, bench/ab.py against
 * the earlier form, per round new / old (faster half, slower half): BERT 0.904 (0.884,
 * 0.925), GPT-2 0.899 (0.895, 0.939), BERT at batch 8 0.963 (0.757, 0.997); docs/matmul.md
 * and bench/results/ab_zen3.md have the history. */
bool hc_matmul_b_stationary_pays(const hc_matmul_config *c, const hc_matmul_shape *s,
                                 const hc_target *t, bool a_const, bool b_const) {
    if (!b_const || a_const || s->batch != 1 || s->m <= 4 * (int64_t)c->mr) return false;
    int64_t mpt = hc_matmul_part_extent(s->m, c->mr, c->tm);
    int64_t npt = hc_matmul_part_extent(s->n, c->nr, c->tn);
    return c->mc < 4 * (int64_t)c->mr && mpt > c->mc &&
           HC_MIN(c->kc, s->k) * npt * 4 > hc_target_l2_bytes(t) / 2;
}

void hc_matmul_config_set_b_stationary(hc_matmul_config *c, const hc_matmul_shape *s,
                                       const hc_target *t) {
    int64_t l2 = hc_target_l2_bytes(t);
    int64_t kc = HC_MIN(c->kc, s->k);
    int64_t nc = l2 * 3 / 8 / (kc * 4);
    c->nc = HC_MAX(nc / c->nr * c->nr, c->nr);
    c->mc = hc_matmul_part_extent(s->m, c->mr, c->tm); /* whole tiles: the thread's rows */
    c->pack_a = false;
    c->rows_first = true;
}

/* The default with nvec vectors per row and at most rows_cap rows (hc_matmul_default_config:
 * 2 and 8; hc_matmul_narrow_config: 1 and 16). */
static hc_matmul_config default_config(const hc_target *t, const hc_matmul_shape *s, int nvec,
                                       int rows_cap) {
    hc_matmul_config c = {0};
    c.lanes = hc_target_f32_lanes(t);
    c.nr = nvec * c.lanes;
    /* accumulators + the B vectors + one broadcast must fit the registers; past 8 rows
     * GCC gains nothing on Zen 4 (measured: 8x32 ~ 12x32 ~ 14x32) */
    int mr_max = (int)HC_MIN((t->caps.num_regs - nvec - 1) / nvec, rows_cap);
    /* when the padding costs more than 5%, the fewest padded rows among the tallest tiles
     * (49 rows: 7 tiles of 7, not 7 tiles of 8), never below HC_MATMUL_MIN_CHAINS
     * accumulators (independent FMA chains: 2 FMA pipes x 4 cycles of latency keep 8 in
     * flight, and the loads sit between them). On AVX2 (2 vectors a row) that is 5 rows:
     * mr 4 (8 chains) lost to mr 6 and its padded rows wherever --tune 2 met it on Zen 3
     * (M = 16, 18 rows: ResNet-50's layer4 Winograd matmuls 1.21 -> 1.05 ms; M = 32, 36
     * rows: MobileNet-V2's 32-channel projections 0.15 -> 0.10 ms), while mr 5 (10
     * chains) won over mr 6 at M = 49 (50 rows against 54). */
    c.mr = mr_max;
    int mr_min = HC_MAX(HC_MAX(mr_max - 3, 1), HC_MIN(mr_max, (HC_MATMUL_MIN_CHAINS + nvec - 1) / nvec));
    if ((hc_round_up(s->m, mr_max) - s->m) * 20 > s->m)
        for (int mr = mr_max - 1; mr >= mr_min; mr--)
            if (hc_round_up(s->m, mr) < hc_round_up(s->m, c.mr)) c.mr = mr;
    if (s->m < c.mr) c.mr = (int)HC_MAX(s->m, 1); /* no padded FMA rows for tiny M */
    /* the B micro-panel (kc x nr) streams through L1 about 1.5 times over */
    hc_matmul_config_set_kc(&c, s, t, 1.5);
    c.nc = HC_MAX((int64_t)4096 / c.nr * c.nr, c.nr);
    /* A panels pay off when many column tiles reuse them; with few (n <= 8 nr, measured
     * on Zen 4: n = 64..256 runs ~10% faster) broadcasting from A in place is cheaper */
    c.pack_a = s->n > 8 * c.nr;
    /* B panels pay off only when several register-tile rows reuse them */
    c.pack_b = s->m > 4 * c.mr;
    /* blocks larger than a thread's tile are clipped by hc_matmul_cpu */
    hc_matmul_config_set_threads(&c, s, HC_MAX(t->caps.num_cores, 1));
    c.rows_first = hc_matmul_rows_first_pays(&c, s, t);
    return c;
}

hc_matmul_config hc_matmul_default_config(const hc_target *t, const hc_matmul_shape *s) {
    /* two vectors per row: enough independent FMAs, B loads amortized */
    return default_config(t, s, 2, 8);
}

/* Constant weights as A and activations as B with fewer than 16 vectors of columns: an
 * NCHW conv as a matmul (M output channels, N pixels: MobileNet-V2's 14x14 and 7x7 1x1
 * convs, N = 196 and 49, ResNet-50's layer3/4 ones), on Zen 4 with AVX-512. There one
 * vector per row and up to 16 rows (16 accumulators, as 8 x 2 vectors) and B read in place
 * below NARROW_PACK_B_TILES row tiles per core is what --tune 2 picked for most of them
 * (MobileNet-V2: 0.100 against the default's 0.141-0.155 ms at [96, 196] x 576), the
 * B-packing rule (M > 4 mr) packed a B that 3 to 6 row tiles a thread reuse (`hidetc kernel
 * matmul --m 96 --n 196 --k 576 --tm 2 --tn 1 --pack-a 1 --bench`: 0.118 ms packed, 0.103
 * in place). Per-kernel minima, 16 alternated rounds, two runs (bench/kernel_minima.py):
 * MobileNet-V2 4.23 / 4.08 -> 3.84 / 3.81 ms (the narrow tile alone 4.01 / 3.89, B in
 * place alone 4.02 / 3.93); ResNet-50 32.05 -> 31.36. Not where B is the constant (the
 * Winograd matmuls: N = output channels, one vector per row lost 3% on Inception-V3), nor
 * with AVX2 code on that core (MobileNet-V2 4.07 -> 4.20 with the narrow tile), nor
 * measured on another AVX-512 core (level on Zen 5: MobileNet-V2 1.602 against 1.599 ms,
 * ResNet-50 16.17 against 16.37 with it). */
#define NARROW_PACK_B_TILES 32
bool hc_matmul_narrow_pays(const hc_target *t, const hc_matmul_shape *s, bool a_const,
                           bool b_const) {
    return t->caps.core == HC_CORE_AMD_ZEN4 && t->caps.isa == HC_ISA_AVX512 && a_const &&
           !b_const && s->n < 16 * (int64_t)hc_target_f32_lanes(t);
}

/* Its threads split the rows where each gets a row tile (one matrix): each reads its share
 * of the constant A (the weights, the larger operand here) and all of the small B, where a
 * split of the columns (N = 49 in two) had each read all of A. Zen 4, per-kernel minima of
 * 16 / 10 alternated rounds (bench/kernel_minima.py): MobileNet-V2 3.83 -> 3.74 ms
 * (features.18, [1280, 49] x 320, 0.235 -> 0.199, what --tune 2 picked), ResNet-50 31.94
 * -> 31.35. */
hc_matmul_config hc_matmul_narrow_config(const hc_target *t, const hc_matmul_shape *s) {
    hc_matmul_config c = default_config(t, s, 1, 16);
    int threads = HC_MAX(t->caps.num_cores, 1);
    c.pack_b = c.pack_b && hc_cdiv(s->m, c.mr) >= NARROW_PACK_B_TILES * threads;
    if (s->batch == 1 && threads > 1 && hc_cdiv(s->m, c.mr) >= threads)
        c.tb = 1, c.tm = threads, c.tn = 1;
    else
        hc_matmul_config_set_threads(&c, s, threads); /* the split for B as packed now */
    c.rows_first = hc_matmul_rows_first_pays(&c, s, t);
    return c;
}

/* Whether x's bf16 rounding is finite (an x past 3.39e38 rounds to an infinity). */
static bool bf16_finite(float x) { return (hc_f32_to_bf16(x) & 0x7f80u) != 0x7f80u; }

/* f32 elements one term of the AMX split of B takes in one batch: K and N padded to 32,
 * 2 bytes a value (hc_matmul_packed_size has the layout). */
static int64_t amx_b_term(const hc_matmul_shape *s) {
    return hc_round_up(s->k, 32) * hc_round_up(s->n, 32) / 2;
}

hc_matmul_config hc_matmul_amx_config(const hc_target *t, const hc_matmul_shape *s) {
    hc_matmul_config c = {0};
    c.lanes = hc_target_f32_lanes(t);
    c.mr = c.nr = 32;
    c.kc = 128;
    c.amx = c.pre_b = true;
    hc_matmul_config_set_threads_costed(&c, s, HC_MAX(t->caps.num_cores, 1), 0, 0);
    /* an M block of up to 128 rows (its A chunk, 96 KiB, in L2) and an N block whose
     * partial sums take up to half of L2 */
    int64_t l2 = hc_target_l2_bytes(t);
    c.mc = HC_MIN(128, hc_matmul_part_extent(s->m, 32, c.tm));
    c.nc = hc_clamp64(l2 / 2 / (c.mc * 4) / 32 * 32, 32, hc_matmul_part_extent(s->n, 32, c.tn));
    return c;
}

/* The conditions of matmul.h; every value of B is checked (a compile-time scan of the
 * weights). Whether the CPU runs AMX at all is the target's caps.amx_bf16 (host.c: only
 * with HIDETC_AMX=1).
 * The rows: split, the weights take 1.5 times their f32 bytes, and the tiles run the
 * multiply-adds about twice as fast, so each weight needs about 3 times the rows of the
 * FMA template to keep the kernel from waiting on them. BERT on a 2-core Emerald Rapids
 * VM, AMX against the FMA default in the same rounds (bench/ab.py, median of the
 * per-round AMX / FMA): batch 1 (128 rows) 1.06, 2 (256) 0.96, 4 (512) 0.88, 8 (1024)
 * 0.79 and, in another run, 0.82; GPT-2 at batch 1 1.06. The kernel alone, with B hot in
 * the caches, wins at 128 rows too (128 x 768 x 768: 0.39 against 0.49 ms). A third
 * BERT batch-8 run, minutes later, read 1.23: this VM's AMX unit is shared with another
 * tenant (host.c). */
bool hc_matmul_amx_pays(const hc_matmul_shape *s, const hc_target *t, bool a_const,
                        const float *b_data) {
    if (!t->caps.amx_bf16 || !b_data || a_const || s->m < HC_MATMUL_AMX_MIN_ROWS ||
        s->n < 64 || s->k < 64)
        return false;
    for (int64_t i = 0, n = s->batch * s->k * s->n; i < n; i++)
        if (!bf16_finite(b_data[i])) return false;
    return true;
}

/* Row tiles first where K is short (at most 128: few FMAs per element of C, so writing C
 * is much of the cost), C's rows are long (a thread's at least 512 columns) and the
 * thread's B block (kc x its columns) takes at most half of L2: C is then written along
 * its rows, and every A micro-panel sweeps a B block that stays in L2. Measured in
 * ResNet-50 (hidetc bench --profile, the same configs both ways, 3 runs): at batch 1 the
 * K = 64 1x1 convs on 56x56 0.44-0.48 -> 0.37-0.39 ms and the Winograd matmuls of layer1
 * (K = 64, 784 columns) 0.48-0.60 -> 0.37-0.39; at batch 8 the K = 64 1x1 convs 5.9 ->
 * 3.1 ms, the K = 128 ones 3.9 -> 3.0. Slower: K = 256 and more (layer2.0 conv1 0.71 ->
 * 0.81 ms, batch 8 layer1 conv1 4.7 -> 6.9), and short rows (layer2's Winograd matmuls,
 * K = 128 on 196 columns, 0.37 -> 0.57). */
bool hc_matmul_rows_first_pays(const hc_matmul_config *c, const hc_matmul_shape *s,
                               const hc_target *t) {
    int64_t l2 = hc_target_l2_bytes(t);
    int64_t kcb = HC_MIN(c->kc, s->k), npt = hc_matmul_part_extent(s->n, c->nr, c->tn);
    return kcb <= 128 && npt >= 512 && kcb * HC_MIN(c->nc, npt) * 4 <= l2 / 2;
}

hc_status hc_matmul_validate(const hc_matmul_config *c, hc_error *err) {
    if (c->lanes != 4 && c->lanes != 8 && c->lanes != 16)
        return hc_error_set(err, HC_ERR_INVALID, "matmul config: lanes %d is not 4, 8 or 16",
                            c->lanes);
    if (c->mr < 1 || c->mr > HC_MATMUL_MAX_MR)
        return hc_error_set(err, HC_ERR_INVALID, "matmul config: mr %d is not in [1, %d]", c->mr,
                            HC_MATMUL_MAX_MR);
    if (c->nr < c->lanes || c->nr % c->lanes)
        return hc_error_set(err, HC_ERR_INVALID,
                            "matmul config: nr %d is not a positive multiple of lanes %d", c->nr,
                            c->lanes);
    if (c->amx && (c->mr != 32 || c->nr != 32 || c->kc % 32 || c->nc % 32 || !c->pre_b ||
                   c->pre_a))
        return hc_error_set(err, HC_ERR_INVALID,
                            "matmul config: amx needs mr = nr = 32, kc and nc multiples of 32 "
                            "and B pre-packed (A not)");
    if (!c->amx && (int64_t)c->mr * (c->nr / c->lanes) > HC_MATMUL_MAX_VECS)
        return hc_error_set(err, HC_ERR_INVALID,
                            "matmul config: register tile %dx%d needs more than %d vectors", c->mr,
                            c->nr, HC_MATMUL_MAX_VECS);
    if (c->kc < 1 || c->kc > (1 << 20))
        return hc_error_set(err, HC_ERR_INVALID, "matmul config: kc %lld is not in [1, 2^20]",
                            (long long)c->kc);
    if (c->mc < c->mr || c->mc % c->mr || c->mc > (1 << 20))
        return hc_error_set(err, HC_ERR_INVALID,
                            "matmul config: mc %lld is not a multiple of mr %d (at most 2^20)",
                            (long long)c->mc, c->mr);
    if (c->nc < c->nr || c->nc % c->nr || c->nc > (1 << 20))
        return hc_error_set(err, HC_ERR_INVALID,
                            "matmul config: nc %lld is not a multiple of nr %d (at most 2^20)",
                            (long long)c->nc, c->nr);
    if (c->tb < 1 || c->tm < 1 || c->tn < 1 ||
        (int64_t)c->tb * c->tm * c->tn > HC_MATMUL_MAX_THREADS)
        return hc_error_set(err, HC_ERR_INVALID,
                            "matmul config: thread grid %dx%dx%d is not in [1, %d] threads",
                            c->tb, c->tm, c->tn, HC_MATMUL_MAX_THREADS);
    return HC_OK;
}

hc_status hc_matmul_validate_shape(const hc_matmul_shape *s, hc_error *err) {
    const int64_t dims[4] = {s->batch, s->m, s->n, s->k};
    const char *names[4] = {"batch", "m", "n", "k"};
    for (int i = 0; i < 4; i++)
        if (dims[i] < 1 || dims[i] > ((int64_t)1 << 31))
            return hc_error_set(err, HC_ERR_INVALID, "matmul shape: %s = %lld is not in [1, 2^31]",
                                names[i], (long long)dims[i]);
    return HC_OK;
}

void hc_matmul_config_print(hc_sb *sb, const hc_matmul_config *c) {
    hc_sb_printf(sb, "mr%d nr%d kc%lld mc%lld nc%lld t%dx%dx%d pa%d pb%d", c->mr, c->nr,
                 (long long)c->kc, (long long)c->mc, (long long)c->nc, c->tb, c->tm, c->tn,
                 c->pack_a, c->pack_b);
    if (c->rows_first) hc_sb_puts(sb, " rows");
    if (c->amx) hc_sb_puts(sb, " amx");
    if (c->pre_a || c->pre_b)
        hc_sb_printf(sb, " pre%s%s%s", c->pre_a ? "A" : "", c->pre_b ? "B" : "",
                     c->a_shared ? " a_shared" : "");
}

/* ---- the program ---------------------------------------------------------------------- */
typedef struct mm {
    hc_arena *a;
    hc_builder *b;
    const hc_matmul_shape *s;
    const hc_matmul_config *c;
    int64_t npt;              /* columns of C per thread */
    hc_expr *mpt;             /* rows of C per thread (an expression when M is symbolic) */
    hc_expr *M, *NB;          /* rows and batches: constants, or the symbols' expressions */
    hc_expr *Mlast;           /* M - 1, the last row */
    int64_t kcb, mcb, ncb;    /* cache blocks, clipped to the shape */
    int nv;                   /* vectors per register-tile row */
    int64_t nkb;              /* K blocks */
    const hc_type *vec;       /* f32 x lanes */
    hc_var *A, *B, *C, *Ap, *Bp, *Cs; /* Cs: partial sums when C is written once */
    int64_t mpad, npad;       /* m, n rounded up to mr, nr (pre-packed operands) */
    /* loop state, set as the nest is built */
    hc_expr *bi, *k0, *kc, *m0, *mc, *n0, *nc, *pc;
} mm;

static hc_expr *addr3(mm *g, hc_var *buf, hc_expr *i, hc_expr *j, hc_expr *k) {
    return hc_address(g->a, buf, 3, (hc_expr *[]){i, j, k});
}
static hc_expr *vload(mm *g, hc_expr *ptr) { return vcall(g, HC_PRIM_VLOAD, g->vec, 1, ptr, 0, 0); }
static hc_expr *vload_n(mm *g, hc_expr *ptr, hc_expr *n) {
    return vcall(g, HC_PRIM_VLOAD_MASK, g->vec, 2, ptr, n, 0);
}

/* Bp[jr][k][:] = B[b, k0 + k, n0 + jr*NR + :], zero beyond the block's nc columns. */
static void pack_b(mm *g) {
    const hc_matmul_config *c = g->c;
    hc_arena *a = g->a;
    hc_var *jr[1];
    const hc_mapping *panels = hc_map_repeat(a, 1, (int64_t[]){g->ncb / c->nr}, NULL);
    static const char *const names[1] = {"pjr"};
    HC_FOR_MAP(g->b, panels, I(g, 0), 1, jr, names) {
        hc_expr *col = MUL(R(g, jr[0]), I(g, c->nr));
        HC_IF(g->b, LT(col, g->nc)) {
            HC_FOR(g->b, k, "pk", g->kc, hc_serial()) {
                HC_FOR(g->b, v, "pv", I(g, g->nv), hc_unroll(0)) {
                    hc_expr *cv = ADD(col, MUL(R(g, v), I(g, c->lanes)));
                    hc_expr *src = addr3(g, g->B, g->bi, ADD(g->k0, R(g, k)), ADD(g->n0, cv));
                    hc_expr *left = MAX(SUB(g->nc, cv), I(g, 0));
                    hc_expr *dst = addr3(g, g->Bp, R(g, jr[0]), R(g, k),
                                         MUL(R(g, v), I(g, c->lanes)));
                    vstore(g, dst, vload_n(g, src, left));
                }
            }
        }
    }
}

/* Row `i` of register tile `ir` in A, clamped so that padded rows read valid memory. */
static hc_expr *a_row(mm *g, hc_expr *ir, hc_expr *i) {
    hc_expr *row = ADD(g->m0, ADD(MUL(ir, I(g, g->c->mr)), i));
    return MIN(row, g->Mlast);
}

/* Ap[ir][k][i] = A[b, m0 + ir*MR + i, k0 + k], zero beyond the block's mc rows. */
static void pack_a(mm *g) {
    const hc_matmul_config *c = g->c;
    hc_arena *a = g->a;
    hc_var *ir[1];
    const hc_mapping *panels = hc_map_repeat(a, 1, (int64_t[]){g->mcb / c->mr}, NULL);
    static const char *const names[1] = {"pir"};
    HC_FOR_MAP(g->b, panels, I(g, 0), 1, ir, names) {
        hc_expr *row0 = MUL(R(g, ir[0]), I(g, c->mr));
        HC_IF(g->b, LT(row0, g->mc)) {
            HC_FOR(g->b, k, "pk", g->kc, hc_serial()) {
                HC_FOR(g->b, i, "pi", I(g, c->mr), hc_unroll(0)) {
                    hc_expr *x = hc_load(a, g->A, 3,
                                         (hc_expr *[]){g->bi, a_row(g, R(g, ir[0]), R(g, i)),
                                                       ADD(g->k0, R(g, k))});
                    hc_expr *val = hc_select(a, LT(ADD(row0, R(g, i)), g->mc), x, hc_f32(a, 0));
                    hc_b_store(g->b, g->Ap, 3, (hc_expr *[]){R(g, ir[0]), R(g, k), R(g, i)}, val);
                }
            }
        }
    }
}

typedef struct tile {
    hc_expr *ir, *jr;   /* register tile coordinates in the block */
    hc_expr *row, *col; /* its first element of C */
    hc_expr *mr, *nr;   /* valid rows and columns */
    hc_var *acc;        /* REGISTER [MR][NV] of vectors */
} tile;

/* Pre-packed B: the offset of row k of panel n0/nr + jr in this K block. */
static hc_expr *pre_b_offset(mm *g, const tile *t, hc_expr *k) {
    hc_expr *panel = ADD(hc_div(g->a, g->n0, I(g, g->c->nr)), t->jr);
    hc_expr *off = ADD(MUL(g->bi, I(g, g->s->k * g->npad)), MUL(g->k0, I(g, g->npad)));
    off = ADD(off, MUL(MUL(panel, g->kc), I(g, g->c->nr)));
    return ADD(off, MUL(k, I(g, g->c->nr)));
}

/* Pre-packed A: the offset of column k of panel m0/mr + ir in this K block. */
static hc_expr *pre_a_offset(mm *g, const tile *t, hc_expr *k) {
    hc_expr *panel = ADD(hc_div(g->a, g->m0, I(g, g->c->mr)), t->ir);
    hc_expr *b = g->c->a_shared ? I(g, 0) : g->bi;
    hc_expr *off = ADD(MUL(b, I(g, g->s->k * g->mpad)), MUL(g->k0, I(g, g->mpad)));
    off = ADD(off, MUL(MUL(panel, g->kc), I(g, g->c->mr)));
    return ADD(off, MUL(k, I(g, g->c->mr)));
}

/* The vector of B for tile columns v*L.. at step k: packed panel or B in place. */
static hc_expr *b_vector(mm *g, const tile *t, hc_expr *k, hc_expr *v, bool masked) {
    hc_expr *cv = MUL(v, I(g, g->c->lanes));
    if (g->c->pre_b) { /* panel n0/nr + jr of this K block, row k */
        hc_expr *off = ADD(pre_b_offset(g, t, k), cv);
        return vload(g, hc_address(g->a, g->B, 1, &off));
    }
    if (g->c->pack_b) return vload(g, addr3(g, g->Bp, t->jr, k, cv));
    hc_expr *p = addr3(g, g->B, g->bi, ADD(g->k0, k), ADD(ADD(g->n0, t->col), cv));
    return masked ? vload_n(g, p, MAX(SUB(t->nr, cv), I(g, 0))) : vload(g, p);
}

static hc_expr *a_scalar(mm *g, const tile *t, hc_expr *k, hc_expr *i) {
    if (g->c->pre_a) { /* panel m0/mr + ir of this K block, column k */
        hc_expr *off = ADD(pre_a_offset(g, t, k), i);
        return hc_load(g->a, g->A, 1, &off);
    }
    if (g->c->pack_a) return hc_load(g->a, g->Ap, 3, (hc_expr *[]){t->ir, k, i});
    return hc_load(g->a, g->A, 3, (hc_expr *[]){g->bi, a_row(g, t->ir, i), ADD(g->k0, k)});
}

/* for k in [0, kc): acc[i][v] += a[i] * b[v] — fully unrolled over i and v so that the
 * lowering keeps acc and b in vector registers. */
static void prefetch(mm *g, hc_var *buf, hc_expr *off, int floats) {
    for (int q = 0; q < floats; q += 16) { /* one per 64-byte line */
        hc_expr *o = ADD(off, I(g, q));
        hc_b_eval(g->b, vcall(g, HC_PRIM_PREFETCH, hc_type_scalar(HC_VOID), 1,
                              hc_address(g->a, buf, 1, &o), 0, 0));
    }
}

/* Pre-packed operands are streamed from memory the first time a tile reads them (the
 * weights: 100-600 MB per inference), faster than the hardware prefetcher brings them
 * in. At step k the tile asks for what a later tile reads at step k. For A: the panel of
 * tile ir + 1 (the next panel in memory, kc * mr floats on; past the block it is the next
 * block's first panel, which is read next too). For B: the panel of column tile jr + 1,
 * whose row k is asked for by row tile k mod (the block's row tiles), so the whole next
 * panel arrives spread over the current panel's row tiles — two lines per k step from a
 * single row tile (the first version) asked for more than the memory delivers and that
 * tile stalled. In row order (rows_first) the first row tile reads every B panel of the
 * block first, so it asks for the next one at every step. Measured in docs/matmul.md. */
static void prefetch_next(mm *g, const tile *t, hc_expr *k, hc_var *pf) {
    const hc_matmul_config *c = g->c;
    if (c->pre_a) prefetch(g, g->A, ADD(pre_a_offset(g, t, k), MUL(g->kc, I(g, c->mr))), c->mr);
    if (!c->pre_b) return;
    hc_expr *next = ADD(pre_b_offset(g, t, k), MUL(g->kc, I(g, c->nr)));
    if (!pf) { /* rows first: the first row tile sweeps every panel of the block */
        HC_IF(g->b, hc_eq(g->a, t->ir, I(g, 0))) { prefetch(g, g->B, next, c->nr); }
        return;
    }
    HC_IF(g->b, hc_eq(g->a, k, R(g, pf))) { /* row k from row tile k mod (row tiles) */
        prefetch(g, g->B, next, c->nr);
        hc_expr *tiles = ADD(hc_div(g->a, SUB(g->mc, I(g, 1)), I(g, c->mr)), I(g, 1));
        hc_b_assign(g->b, pf, ADD(R(g, pf), tiles));
    }
}

/* The spread B prefetch of one register tile: the next row k it asks for (declared before
 * its k loop), or NULL when the tile does not prefetch B that way. */
static hc_var *prefetch_begin(mm *g, const tile *t) {
    if (!g->c->pre_b || g->c->rows_first) return NULL;
    return hc_b_declare(g->b, "pfk", hc_type_scalar(HC_I64), t->ir);
}

static void k_loop(mm *g, const tile *t, bool masked) {
    hc_arena *a = g->a;
    int nv = g->nv, mr = g->c->mr;
    hc_var *pf = prefetch_begin(g, t);
    HC_FOR(g->b, k, "k", g->kc, hc_serial()) {
        prefetch_next(g, t, R(g, k), pf);
        hc_var *bv = hc_b_declare(
            g->b, "bv", hc_type_tensor_vec(a, HC_F32, g->c->lanes, 1, (hc_expr *[]){I(g, nv)},
                                           NULL, HC_SCOPE_REGISTER), NULL);
        HC_FOR(g->b, v, "v", I(g, nv), hc_unroll(0)) {
            hc_expr *bk = b_vector(g, t, R(g, k), R(g, v), masked);
            hc_b_store(g->b, bv, 1, (hc_expr *[]){R(g, v)}, bk);
        }
        HC_FOR(g->b, i, "i", I(g, mr), hc_unroll(0)) {
            hc_expr *bc = vcall(g, HC_PRIM_VBROADCAST, g->vec, 1, a_scalar(g, t, R(g, k), R(g, i)),
                                0, 0);
            hc_var *av = hc_b_declare(g->b, "av", g->vec, bc);
            HC_FOR(g->b, v, "v", I(g, nv), hc_unroll(0)) {
                hc_expr *idx[2] = {R(g, i), R(g, v)};
                hc_expr *fma = vcall(g, HC_PRIM_VFMA, g->vec, 3, R(g, av),
                                     hc_load(a, bv, 1, (hc_expr *[]){R(g, v)}),
                                     hc_load(a, t->acc, 2, idx));
                hc_b_store(g->b, t->acc, 2, idx, fma);
            }
        }
    }
}

/* One vector of the C tile: = acc on the first K block, += acc on the others. `left` is
 * NULL for a full vector, else the number of valid lanes. With c_write_once and several
 * K blocks, the partial sums live in the scratch Cs and C is stored once, on the last
 * block: epilogue fusion rewrites exactly those stores (they hold final values). */
static void vstore_any(mm *g, hc_expr *p, hc_expr *v, hc_expr *left) {
    if (left) vstore_n(g, p, v, left);
    else vstore(g, p, v);
}
static hc_expr *vload_any(mm *g, hc_expr *p, hc_expr *left) {
    return left ? vload_n(g, p, left) : vload(g, p);
}

static void store_vector(mm *g, hc_expr *p, hc_expr *ps, hc_expr *acc, hc_expr *left) {
    if (g->nkb == 1) {
        vstore_any(g, p, acc, left);
        return;
    }
    hc_expr *q = ps ? ps : p; /* where partial sums live */
    hc_b_if_begin(g->b, hc_eq(g->a, g->pc, I(g, 0)));
    vstore_any(g, q, acc, left);
    hc_b_else(g->b);
    if (ps) {
        hc_b_if_begin(g->b, LT(g->pc, I(g, g->nkb - 1)));
        vstore_any(g, ps, ADD(vload_any(g, ps, left), acc), left);
        hc_b_else(g->b);
        vstore_any(g, p, ADD(vload_any(g, ps, left), acc), left);
        hc_b_end(g->b);
    } else {
        vstore_any(g, p, ADD(vload_any(g, p, left), acc), left);
    }
    hc_b_end(g->b);
}

/* Store the register tile; `tail` predicates its rows and columns. */
static void store_tile(mm *g, const tile *t, bool tail) {
    hc_arena *a = g->a;
    HC_FOR(g->b, i, "si", I(g, g->c->mr), hc_unroll(0)) {
        if (tail) hc_b_if_begin(g->b, LT(R(g, i), t->mr));
        HC_FOR(g->b, v, "sv", I(g, g->nv), hc_unroll(0)) {
            hc_expr *cv = MUL(R(g, v), I(g, g->c->lanes));
            hc_expr *row = ADD(ADD(g->m0, t->row), R(g, i)), *col = ADD(ADD(g->n0, t->col), cv);
            hc_expr *p = addr3(g, g->C, g->bi, row, col);
            hc_expr *ps = g->Cs ? addr3(g, g->Cs, g->bi, row, col) : NULL;
            hc_expr *acc = hc_load(a, t->acc, 2, (hc_expr *[]){R(g, i), R(g, v)});
            if (tail) {
                hc_expr *left = SUB(t->nr, cv);
                HC_IF(g->b, LT(I(g, 0), left)) { store_vector(g, p, ps, acc, left); }
            } else {
                store_vector(g, p, ps, acc, NULL);
            }
        }
        if (tail) hc_b_end(g->b);
    }
}

/* On the K blocks after the first, a tile's stores add to partial sums (in Cs, or C)
 * written a whole pass over the thread's block earlier: for a large block (BERT's
 * 1024 x 3072 FFN: 6 MB per thread) they come from memory, one row of the tile per page,
 * where the hardware prefetcher does not follow. A plain store hides those misses behind
 * the next ones, but a fused epilogue with math between the load and the store (GELU's
 * erf: ~55 dependent instructions a vector) leaves only a few in flight: 1024x768x3072
 * with bias + GELU took 22.7 ms against 19.4 without the GELU. Asked for before the k
 * loop (into L2: the loop's panels would push them out of L1), the lines arrive while it
 * runs, and the GELU costs ~0.5 ms. `cols` valid columns from t->col; rows and columns
 * are clamped into the matrix. */
static void prefetch_c_tile(mm *g, const tile *t, int cols) {
    if (g->nkb == 1) return;
    hc_var *q = g->Cs ? g->Cs : g->C;
    HC_IF(g->b, LT(I(g, 0), g->pc)) {
        HC_FOR(g->b, i, "pci", I(g, g->c->mr), hc_unroll(0)) {
            hc_expr *row = MIN(ADD(ADD(g->m0, t->row), R(g, i)), g->Mlast);
            for (int j = 0; j < cols; j += 16) { /* one per 64-byte line */
                hc_expr *col = MIN(ADD(ADD(g->n0, t->col), I(g, j)), I(g, g->s->n - 1));
                hc_b_eval(g->b, vcall(g, HC_PRIM_PREFETCH, hc_type_scalar(HC_VOID), 1,
                                      addr3(g, q, g->bi, row, col), 0, 0));
            }
        }
    }
}

/* ---- narrow tiles: the column kernel ------------------------------------------------ */
/* A tile with few valid columns (the last one of a thread's range: N = 196 leaves 4 of 32,
 * N = 289 leaves 1) costs a whole register tile in the row kernel above, since its lanes
 * run along the columns. The column kernel turns the tile around: one accumulator per
 * column, its lanes along the tile's rows (the A panel holds mr rows per k contiguously),
 * each step one A vector and a broadcast of B per column. It runs narrow_cols(c) columns
 * (nr / 4: 8 of 32), the FMAs of a quarter of the row kernel's; the columns past the
 * valid ones read zero padding (packed B) or a clamped column (B in place) and are never
 * stored. Its results leave through a small spill buffer and scalar stores, which
 * epilogue fusion rewrites like the vector ones. Used when A comes in panels (packed or
 * pre-packed). */
static int narrow_cols(const hc_matmul_config *c) { return c->nr / 4; } /* nr >= lanes >= 4 */

static bool column_kernel_applies(const mm *g) { return g->c->pack_a || g->c->pre_a; }

/* B[k0 + k, n0 + col + j] as a scalar: packed panel, pre-packed panel or in place. */
static hc_expr *b_scalar(mm *g, const tile *t, hc_expr *k, hc_expr *j) {
    if (g->c->pre_b) {
        hc_expr *off = ADD(pre_b_offset(g, t, k), j);
        return hc_load(g->a, g->B, 1, &off);
    }
    if (g->c->pack_b) return hc_load(g->a, g->Bp, 3, (hc_expr *[]){t->jr, k, j});
    hc_expr *col = MIN(ADD(ADD(g->n0, t->col), j), I(g, g->s->n - 1));
    return hc_load(g->a, g->B, 3, (hc_expr *[]){g->bi, ADD(g->k0, k), col});
}

/* The address of rows u*L.. of the A panel of tile ir at step k. */
static hc_expr *a_panel(mm *g, const tile *t, hc_expr *k, int u) {
    hc_expr *lane0 = I(g, (int64_t)u * g->c->lanes);
    if (g->c->pre_a) {
        hc_expr *off = ADD(pre_a_offset(g, t, k), lane0);
        return hc_address(g->a, g->A, 1, &off);
    }
    return addr3(g, g->Ap, t->ir, k, lane0);
}

/* C[row, col] = v on the first K block, += v on the others (partial sums in Cs when C is
 * written once): store_vector for one element. */
static void store_scalar(mm *g, hc_expr *row, hc_expr *col, hc_expr *v) {
    hc_expr *idx[3] = {g->bi, row, col};
    if (g->nkb == 1) {
        hc_b_store(g->b, g->C, 3, idx, v);
        return;
    }
    hc_var *q = g->Cs ? g->Cs : g->C;
    hc_b_if_begin(g->b, hc_eq(g->a, g->pc, I(g, 0)));
    hc_b_store(g->b, q, 3, idx, v);
    hc_b_else(g->b);
    if (g->Cs) {
        hc_b_if_begin(g->b, LT(g->pc, I(g, g->nkb - 1)));
        hc_b_store(g->b, g->Cs, 3, idx, ADD(hc_load(g->a, g->Cs, 3, idx), v));
        hc_b_else(g->b);
        hc_b_store(g->b, g->C, 3, idx, ADD(hc_load(g->a, g->Cs, 3, idx), v));
        hc_b_end(g->b);
    } else {
        hc_b_store(g->b, g->C, 3, idx, ADD(hc_load(g->a, g->C, 3, idx), v));
    }
    hc_b_end(g->b);
}

static void column_kernel(mm *g, const tile *t) {
    hc_arena *a = g->a;
    const hc_matmul_config *c = g->c;
    int nt = narrow_cols(c), L = c->lanes, mv = (int)hc_cdiv(c->mr, L);
    hc_expr *shape[2] = {I(g, nt), I(g, mv)};
    hc_var *acc = hc_b_declare(
        g->b, "cacc", hc_type_tensor_vec(a, HC_F32, L, 2, shape, NULL, HC_SCOPE_REGISTER), NULL);
    hc_expr *zero = vcall(g, HC_PRIM_VBROADCAST, g->vec, 1, hc_f32(a, 0), 0, 0);
    HC_FOR(g->b, j, "czj", I(g, nt), hc_unroll(0)) {
        HC_FOR(g->b, u, "czu", I(g, mv), hc_unroll(0)) {
            hc_b_store(g->b, acc, 2, (hc_expr *[]){R(g, j), R(g, u)}, zero);
        }
    }
    prefetch_c_tile(g, t, nt);
    hc_var *pf = prefetch_begin(g, t);
    HC_FOR(g->b, k, "ck", g->kc, hc_serial()) {
        prefetch_next(g, t, R(g, k), pf);
        hc_var *av = hc_b_declare(
            g->b, "cav",
            hc_type_tensor_vec(a, HC_F32, L, 1, (hc_expr *[]){I(g, mv)}, NULL, HC_SCOPE_REGISTER),
            NULL);
        for (int u = 0; u < mv; u++) { /* rows past mr: masked off (the panel ends there) */
            int rows = (int)HC_MIN(L, c->mr - u * L);
            hc_expr *p = a_panel(g, t, R(g, k), u);
            hc_b_store(g->b, av, 1, (hc_expr *[]){I(g, u)},
                       rows == L ? vload(g, p) : vload_n(g, p, I(g, rows)));
        }
        HC_FOR(g->b, j, "cj", I(g, nt), hc_unroll(0)) {
            hc_var *bc = hc_b_declare(g->b, "cbv", g->vec,
                                      vcall(g, HC_PRIM_VBROADCAST, g->vec, 1,
                                            b_scalar(g, t, R(g, k), R(g, j)), 0, 0));
            HC_FOR(g->b, u, "cu", I(g, mv), hc_unroll(0)) {
                hc_expr *idx[2] = {R(g, j), R(g, u)};
                hc_expr *fma = vcall(g, HC_PRIM_VFMA, g->vec, 3,
                                     hc_load(a, av, 1, (hc_expr *[]){R(g, u)}), R(g, bc),
                                     hc_load(a, acc, 2, idx));
                hc_b_store(g->b, acc, 2, idx, fma);
            }
        }
    }
    /* spill, then the valid rows of the valid columns one element at a time */
    hc_var *cs = hc_b_declare(
        g->b, "cspill",
        hc_type_tensor_c(a, HC_F32, 2, (int64_t[]){nt, (int64_t)mv * L}, HC_SCOPE_REGISTER),
        NULL);
    HC_FOR(g->b, j, "csj", I(g, nt), hc_unroll(0)) {
        HC_FOR(g->b, u, "csu", I(g, mv), hc_unroll(0)) {
            vstore(g, hc_address(a, cs, 2, (hc_expr *[]){R(g, j), MUL(R(g, u), I(g, L))}),
                   hc_load(a, acc, 2, (hc_expr *[]){R(g, j), R(g, u)}));
        }
    }
    HC_FOR(g->b, j, "cwj", t->nr, hc_serial()) {
        HC_FOR(g->b, i, "cwi", t->mr, hc_serial()) {
            hc_expr *row = ADD(ADD(g->m0, t->row), R(g, i));
            hc_expr *col = ADD(ADD(g->n0, t->col), R(g, j));
            store_scalar(g, row, col, hc_load(a, cs, 2, (hc_expr *[]){R(g, j), R(g, i)}));
        }
    }
}

static void row_kernel(mm *g, tile *t);

static void micro_kernel(mm *g, tile *t) {
    if (!column_kernel_applies(g)) {
        row_kernel(g, t);
        return;
    }
    hc_b_if_begin(g->b, hc_binary(g->a, HC_OP_LE, t->nr, I(g, narrow_cols(g->c))));
    column_kernel(g, t);
    hc_b_else(g->b);
    row_kernel(g, t);
    hc_b_end(g->b);
}

/* The register tile with its lanes along the columns. */
static void row_kernel(mm *g, tile *t) {
    hc_arena *a = g->a;
    const hc_matmul_config *c = g->c;
    hc_expr *shape[2] = {I(g, c->mr), I(g, g->nv)};
    const hc_type *tile_t =
        hc_type_tensor_vec(a, HC_F32, c->lanes, 2, shape, NULL, HC_SCOPE_REGISTER);
    t->acc = hc_b_declare(g->b, "acc", tile_t, NULL);
    hc_expr *zero = vcall(g, HC_PRIM_VBROADCAST, g->vec, 1, hc_f32(a, 0), 0, 0);
    HC_FOR(g->b, i, "zi", I(g, c->mr), hc_unroll(0)) {
        HC_FOR(g->b, v, "zv", I(g, g->nv), hc_unroll(0)) {
            hc_b_store(g->b, t->acc, 2, (hc_expr *[]){R(g, i), R(g, v)}, zero);
        }
    }
    hc_expr *full = hc_and(a, hc_eq(a, t->mr, I(g, c->mr)), hc_eq(a, t->nr, I(g, c->nr)));
    prefetch_c_tile(g, t, c->nr);
    if (c->pack_b || c->pre_b) {
        k_loop(g, t, false);
    } else { /* B in place: masked loads only on the last column panel */
        hc_b_if_begin(g->b, hc_eq(a, t->nr, I(g, c->nr)));
        k_loop(g, t, false);
        hc_b_else(g->b);
        k_loop(g, t, true);
        hc_b_end(g->b);
    }
    hc_b_if_begin(g->b, full);
    store_tile(g, t, false);
    hc_b_else(g->b);
    store_tile(g, t, true);
    hc_b_end(g->b);
}

/* for (jr, ir) in repeat(NC/NR, MC/MR) (rows_first: (ir, jr) in repeat(MC/MR, NC/NR)): one
 * register tile each, skipped past the block */
static void register_tiles(mm *g) {
    const hc_matmul_config *c = g->c;
    hc_var *v[2];
    int64_t cols = g->ncb / c->nr, rows = g->mcb / c->mr;
    const hc_mapping *tiles = c->rows_first ? hc_map_repeat2(g->a, rows, cols)
                                            : hc_map_repeat2(g->a, cols, rows);
    static const char *const by_cols[2] = {"jr", "ir"}, *const by_rows[2] = {"ir", "jr"};
    HC_FOR_MAP(g->b, tiles, I(g, 0), 2, v, c->rows_first ? by_rows : by_cols) {
        tile t = c->rows_first ? (tile){.jr = R(g, v[1]), .ir = R(g, v[0])}
                               : (tile){.jr = R(g, v[0]), .ir = R(g, v[1])};
        t.col = MUL(t.jr, I(g, c->nr));
        t.row = MUL(t.ir, I(g, c->mr));
        HC_IF(g->b, hc_and(g->a, LT(t.col, g->nc), LT(t.row, g->mc))) {
            t.mr = let(g, "tmr", MIN(I(g, c->mr), SUB(g->mc, t.row)));
            t.nr = let(g, "tnr", MIN(I(g, c->nr), SUB(g->nc, t.col)));
            micro_kernel(g, &t);
        }
    }
}

/* ceil(x / d) for x >= 0: a constant when x is one. */
static hc_expr *cdiv_e(mm *g, hc_expr *x, int64_t d) {
    int64_t v;
    if (hc_expr_is_const_int(x, &v)) return I(g, hc_cdiv(v, d));
    return d == 1 ? x : hc_div(g->a, ADD(x, I(g, d - 1)), I(g, d));
}

/* The loops of one thread over its batches [tbi*bpt, ...) and its macro tile
 * [ti*mpt, ...) x [tj*npt, ...). */
static void thread_body(mm *g, hc_expr *tbi, hc_expr *ti, hc_expr *tj) {
    const hc_matmul_shape *s = g->s;
    hc_expr *m_end = MIN(MUL(ADD(ti, I(g, 1)), g->mpt), g->M);
    hc_expr *n_end = MIN(MUL(ADD(tj, I(g, 1)), I(g, g->npt)), I(g, s->n));
    hc_expr *bpt = cdiv_e(g, g->NB, g->c->tb);
    HC_FOR(g->b, bj, "bj", bpt, hc_serial()) {
        hc_expr *bi = ADD(MUL(tbi, bpt), R(g, bj));
        hc_b_if_begin(g->b, LT(bi, g->NB));
        g->bi = let(g, "bi", bi);
        HC_FOR(g->b, jc, "jc", I(g, hc_cdiv(g->npt, g->ncb)), hc_serial()) {
            hc_expr *n0 = ADD(MUL(tj, I(g, g->npt)), MUL(R(g, jc), I(g, g->ncb)));
            HC_IF(g->b, LT(n0, n_end)) {
                g->n0 = let(g, "n0", n0);
                g->nc = let(g, "nc", MIN(I(g, g->ncb), SUB(n_end, g->n0)));
                HC_FOR(g->b, pc, "pc", I(g, hc_cdiv(s->k, g->kcb)), hc_serial()) {
                    g->pc = R(g, pc);
                    g->k0 = let(g, "k0", MUL(g->pc, I(g, g->kcb)));
                    g->kc = let(g, "kc", MIN(I(g, g->kcb), SUB(I(g, s->k), g->k0)));
                    if (g->c->pack_b && !g->c->pre_b) pack_b(g);
                    HC_FOR(g->b, ic, "ic", cdiv_e(g, g->mpt, g->mcb), hc_serial()) {
                        hc_expr *m0 = ADD(MUL(ti, g->mpt), MUL(R(g, ic), I(g, g->mcb)));
                        HC_IF(g->b, LT(m0, m_end)) {
                            g->m0 = let(g, "m0", m0);
                            g->mc = let(g, "mc", MIN(I(g, g->mcb), SUB(m_end, g->m0)));
                            if (g->c->pack_a && !g->c->pre_a) pack_a(g);
                            register_tiles(g);
                        }
                    }
                }
            }
        }
        hc_b_end(g->b); /* if bi < batch */
    }
}

/* ---- AMX split products ---------------------------------------------------------------- */
/* A 1-D f32 heap temporary of n elements (the thread's workspace). */
static hc_var *flat_buffer(mm *g, const char *name, int64_t n) {
    return hc_b_declare(g->b, name, hc_type_tensor_c(g->a, HC_F32, 1, &n, HC_SCOPE_GLOBAL), NULL);
}

/* The 6 products of 3-term splits, as (A term, B term): the terms of both operands'
 * first two levels, and the first term of each with the other's third. In this order a
 * K step reloads its A tiles 5 times, not 3 (by A term), and ran about 3% faster (the
 * reloads of one term's tiles sit apart; 128 x 768 x 768, one thread). */
static const int amx_pairs[6][2] = {{0, 0}, {0, 1}, {1, 0}, {0, 2}, {1, 1}, {2, 0}};

/* A primitive without a value (a tile call, a bf16 store) as a statement. */
static void tile_stmt(mm *g, hc_prim p, int n, hc_expr *x, hc_expr *y, hc_expr *z) {
    hc_b_eval(g->b, vcall(g, p, hc_type_scalar(HC_VOID), n, x, y, z));
}
static hc_expr *flat_addr(mm *g, hc_var *buf, hc_expr *off) {
    return hc_address(g->a, buf, 1, &off);
}

/* The f32 offset in the packed B of tile (nt, kt) of term 0 (16 columns from 16 nt, 32
 * k from 32 kt) in batch bi; term t is t * amx_b_term(s) further. */
static hc_expr *amx_b_tile(mm *g, hc_expr *nt, hc_expr *kt) {
    int64_t KT = hc_cdiv(g->s->k, 32);
    return ADD(MUL(g->bi, I(g, 3 * amx_b_term(g->s))), MUL(ADD(MUL(nt, I(g, KT)), kt), I(g, 256)));
}

/* The K chunk [k0, k0 + 32 ktc) of rows [m0, m_end) of batch bi of A (an M block of mcb
 * rows), split into 3 bf16 terms, into the thread's As: tile (mt, kt) of term t, 16 rows x
 * 32 k, at f32 element t*at + (mt*ktc + kt)*256 (at = mcb/16 * ktc * 256), row r at +
 * r*16 (32 bf16 = 16 f32).
 * Rows past m_end and k past K are zeros (their Af 0). Af[r] of a block row r adds up (from the first
 * chunk) NaN where the row holds an infinity, a NaN or a value whose bf16 rounding is
 * infinite (the sum of (x - bf16(x)) * 0 over it), else 0. */
static void amx_split_a(mm *g, hc_var *As, hc_var *Af, hc_expr *m0, hc_expr *m_end,
                        hc_expr *k0, int64_t ktc) {
    const hc_matmul_config *c = g->c;
    int L = c->lanes;
    int64_t K = g->s->k, at = g->mcb / 16 * ktc * 256; /* f32 elements between terms */
    hc_expr *zero = vcall(g, HC_PRIM_VBROADCAST, g->vec, 1, hc_f32(g->a, 0), 0, 0);
    /* vectors of the chunk with data (the others: K's padding to a multiple of 32) */
    hc_expr *kv_data = let(g, "akvn", MIN(I(g, ktc * 32 / L),
                                          hc_div(g->a, ADD(SUB(I(g, K), k0), I(g, L - 1)), I(g, L))));
    HC_FOR(g->b, mt, "amt", I(g, g->mcb / 16), hc_serial()) {
        HC_FOR(g->b, r, "ar", I(g, 16), hc_serial()) {
            hc_expr *lrow = let(g, "alrow", ADD(MUL(R(g, mt), I(g, 16)), R(g, r)));
            hc_expr *row = let(g, "arow", ADD(m0, lrow));
            /* the element offset of (row, chunk column kl) in term 0, kl a multiple of L */
#define AS_OFF(kl)                                                                                \
    ADD(MUL(ADD(MUL(R(g, mt), I(g, ktc)), hc_div(g->a, (kl), I(g, 32))), I(g, 256)),              \
        ADD(MUL(R(g, r), I(g, 16)), hc_div(g->a, hc_mod(g->a, (kl), I(g, 32)), I(g, 2))))
            /* vectors with data in this row: none past the block's rows (all zeros) */
            hc_expr *have = let(g, "akvh", hc_select(g->a, LT(row, m_end), kv_data, I(g, 0)));
            hc_var *nf = hc_b_declare(g->b, "anf", g->vec, zero);
            HC_FOR(g->b, kv, "akv", have, hc_serial()) {
                hc_expr *kl = let(g, "akl", MUL(R(g, kv), I(g, L)));
                hc_expr *k = ADD(k0, kl);
                hc_expr *src = addr3(g, g->A, g->bi, row, k);
                hc_expr *x = hc_dsl_let(g->a, g->b, "ax", g->vec,
                                        K % L ? vload_n(g, src, SUB(I(g, K), k)) : vload(g, src));
                hc_expr *off = let(g, "aoff", AS_OFF(kl));
                for (int t = 0; t < 3; t++) {
                    hc_expr *dst = flat_addr(g, As, ADD(off, I(g, t * at)));
                    tile_stmt(g, HC_PRIM_VSTORE_BF16, 2, dst, x, NULL);
                    if (t < 2)
                        x = hc_dsl_let(g->a, g->b, "ax", g->vec,
                                       vcall(g, HC_PRIM_VBF16_REST, g->vec, 1, x, 0, 0));
                    /* the first rest is not finite where x is not or bf16(x) is not */
                    if (t == 0) hc_b_assign(g->b, nf, ADD(R(g, nf), MUL(x, zero)));
                }
            }
            hc_expr *before = hc_select(g->a, hc_binary(g->a, HC_OP_EQ, g->pc, I(g, 0)),
                                        hc_f32(g->a, 0), hc_load(g->a, Af, 1, &lrow));
            hc_b_store(g->b, Af, 1, &lrow,
                       ADD(before, vcall(g, HC_PRIM_VREDUCE_ADD, hc_type_scalar(HC_F32), 1,
                                         R(g, nf), 0, 0)));
            HC_FOR(g->b, kv, "akz", SUB(I(g, ktc * 32 / L), have), hc_serial()) {
                hc_expr *off = let(g, "aoff", AS_OFF(MUL(ADD(R(g, kv), have), I(g, L))));
                for (int t = 0; t < 3; t++)
                    tile_stmt(g, HC_PRIM_VSTORE_BF16, 2, flat_addr(g, As, ADD(off, I(g, t * at))),
                              zero, NULL);
            }
#undef AS_OFF
        }
    }
}

/* Rows of A with an infinity, a NaN or a value past bf16's largest: the split products
 * would meet an infinity with a zero term of B (inf * 0 = NaN where f32 gives inf), or
 * split a finite value into infinities, so such a row's sums are redone in
 * f32 FMAs over all of K, B's values read back from its packed terms (their sum is
 * exact). Rare: only Ct's row is rewritten. */
static void amx_nonfinite_rows(mm *g, hc_var *Af, hc_var *Ct, hc_expr *m_lo, hc_expr *rows_left,
                               hc_expr *row, hc_expr *nt) {
    int L = g->c->lanes, nv = 32 / L;
    int64_t bt = amx_b_term(g->s); /* f32 elements between terms */
    hc_expr *zero = vcall(g, HC_PRIM_VBROADCAST, g->vec, 1, hc_f32(g->a, 0), 0, 0);
    HC_FOR(g->b, i, "fi", MIN(I(g, 32), rows_left), hc_serial()) {
        hc_expr *lrow = ADD(row, R(g, i));
        HC_IF(g->b, hc_binary(g->a, HC_OP_NE, hc_load(g->a, Af, 1, &lrow), hc_f32(g->a, 0))) {
            hc_expr *ct = MUL(R(g, i), I(g, 32));
            for (int v = 0; v < nv; v++) vstore(g, flat_addr(g, Ct, ADD(ct, I(g, v * L))), zero);
            HC_FOR(g->b, kk, "fk", I(g, g->s->k), hc_serial()) {
                hc_expr *k = R(g, kk);
                hc_expr *x = hc_load(g->a, g->A, 3, (hc_expr *[]){g->bi, ADD(m_lo, lrow), k});
                hc_expr *xv = hc_dsl_let(g->a, g->b, "fx", g->vec,
                                         vcall(g, HC_PRIM_VBROADCAST, g->vec, 1, x, 0, 0));
                hc_expr *hi = let(g, "fhi", hc_mod(g->a, k, I(g, 2)));
                for (int v = 0; v < nv; v++) {
                    int c0 = v * L; /* the vector's first column in the 32 */
                    hc_expr *base = amx_b_tile(g, ADD(nt, I(g, c0 / 16)), hc_div(g->a, k, I(g, 32)));
                    /* k's pair row in the tile, then the vector's columns */
                    base = ADD(base, ADD(MUL(hc_div(g->a, hc_mod(g->a, k, I(g, 32)), I(g, 2)),
                                             I(g, 16)),
                                         I(g, c0 % 16)));
                    hc_expr *y = NULL;
                    for (int t = 0; t < 3; t++) {
                        hc_expr *term = vcall(g, HC_PRIM_VLOAD_BF16X2, g->vec, 2,
                                              flat_addr(g, g->B, ADD(base, I(g, t * bt))), hi, 0);
                        y = y ? ADD(y, term) : term;
                    }
                    hc_expr *p = flat_addr(g, Ct, ADD(ct, I(g, c0)));
                    vstore(g, p, vcall(g, HC_PRIM_VFMA, g->vec, 3, xv, y, vload(g, p)));
                }
            }
        }
    }
}

/* One 32 x 32 register tile (2 x 2 C tiles) at rows [row, row + 32) of the thread's block
 * and columns [n0 + col, ...) over K tiles [kt0, kt0 + ktn): from zero (the first K
 * block) or the partial sums in Pt (block blk of the panel), 6 products a K step, then
 * back to Pt, or after the last K block through the thread's Ct (32 x 32 f32) to C by
 * vector stores: each element of C is stored once, with its final value, and those are
 * the stores epilogue fusion rewrites. */
static void amx_tile(mm *g, hc_var *As, hc_var *Af, hc_var *Ct, hc_var *Pt, hc_expr *blk,
                     hc_expr *m_lo, hc_expr *rows_left, hc_expr *row, hc_expr *col,
                     hc_expr *cols_left, hc_expr *kt0, hc_expr *ktn, int64_t KT) {
    const hc_matmul_config *c = g->c;
    static const int corner[4] = {0, 16, 16 * 32, 16 * 32 + 16};
    hc_expr *pt = Pt ? let(g, "ptoff", MUL(blk, I(g, 32 * 32))) : NULL;
    if (Pt) hc_b_if_begin(g->b, hc_binary(g->a, HC_OP_EQ, g->pc, I(g, 0)));
    for (int t = 0; t < 4; t++) tile_stmt(g, HC_PRIM_TILE_ZERO, 1, I(g, t), NULL, NULL);
    if (Pt) { /* the partial sums of the K blocks before, from the thread's Pt */
        hc_b_else(g->b);
        for (int t = 0; t < 4; t++)
            tile_stmt(g, HC_PRIM_TILE_LOAD, 3, I(g, t), flat_addr(g, Pt, ADD(pt, I(g, corner[t]))),
                      I(g, 128));
        hc_b_end(g->b);
    }
    hc_expr *nt = hc_div(g->a, ADD(g->n0, col), I(g, 16)); /* the first 16-column tile */
    hc_expr *mt = hc_div(g->a, row, I(g, 16));
    hc_expr *stride = I(g, 64);
    int64_t ktc = g->kcb / 32, at = g->mcb / 16 * ktc * 256; /* between A's terms */
    int64_t bt = amx_b_term(g->s);                                   /* between B's terms */
    HC_FOR(g->b, kk, "kt", ktn, hc_serial()) {
        hc_expr *kt = let(g, "ktg", ADD(kt0, R(g, kk)));
        hc_expr *a0 = let(g, "aoff0", MUL(ADD(MUL(mt, I(g, ktc)), R(g, kk)), I(g, 256)));
        hc_expr *a1 = let(g, "aoff1", ADD(a0, I(g, ktc * 256)));
        hc_expr *b0 = let(g, "boff0", amx_b_tile(g, nt, kt));
        hc_expr *b1 = let(g, "boff1", ADD(b0, I(g, KT * 256)));
        int last_a = -1;
        for (int p = 0; p < 6; p++) {
            int ta = amx_pairs[p][0], tb = amx_pairs[p][1];
            if (ta != last_a) {
                tile_stmt(g, HC_PRIM_TILE_LOAD, 3, I(g, 4), flat_addr(g, As, ADD(a0, I(g, ta * at))), stride);
                tile_stmt(g, HC_PRIM_TILE_LOAD, 3, I(g, 5), flat_addr(g, As, ADD(a1, I(g, ta * at))), stride);
                last_a = ta;
            }
            tile_stmt(g, HC_PRIM_TILE_LOAD, 3, I(g, 6), flat_addr(g, g->B, ADD(b0, I(g, tb * bt))), stride);
            tile_stmt(g, HC_PRIM_TILE_LOAD, 3, I(g, 7), flat_addr(g, g->B, ADD(b1, I(g, tb * bt))), stride);
            tile_stmt(g, HC_PRIM_TILE_DP_BF16, 3, I(g, 0), I(g, 4), I(g, 6));
            tile_stmt(g, HC_PRIM_TILE_DP_BF16, 3, I(g, 1), I(g, 4), I(g, 7));
            tile_stmt(g, HC_PRIM_TILE_DP_BF16, 3, I(g, 2), I(g, 5), I(g, 6));
            tile_stmt(g, HC_PRIM_TILE_DP_BF16, 3, I(g, 3), I(g, 5), I(g, 7));
        }
    }
    if (Pt) { /* not the last K block: the sums stay in Pt */
        hc_b_if_begin(g->b, LT(g->pc, I(g, g->nkb - 1)));
        for (int t = 0; t < 4; t++)
            tile_stmt(g, HC_PRIM_TILE_STORE, 3, I(g, t), flat_addr(g, Pt, ADD(pt, I(g, corner[t]))),
                      I(g, 128));
        hc_b_else(g->b);
    }
    for (int t = 0; t < 4; t++)
        tile_stmt(g, HC_PRIM_TILE_STORE, 3, I(g, t), flat_addr(g, Ct, I(g, corner[t])), I(g, 128));
    amx_nonfinite_rows(g, Af, Ct, m_lo, rows_left, row, nt);
    int nv = 32 / c->lanes;
    HC_FOR(g->b, i, "ci", MIN(I(g, 32), rows_left), hc_serial()) {
        hc_expr *crow = ADD(m_lo, ADD(row, R(g, i)));
        for (int v = 0; v < nv; v++) {
            hc_expr *acc = vload(g, flat_addr(g, Ct, ADD(MUL(R(g, i), I(g, 32)), I(g, v * c->lanes))));
            hc_expr *ccol = ADD(ADD(g->n0, col), I(g, v * c->lanes));
            hc_expr *p = addr3(g, g->C, g->bi, crow, ccol);
            hc_expr *left = SUB(cols_left, I(g, v * c->lanes));
            hc_b_if_begin(g->b, LT(I(g, (v + 1) * c->lanes - 1), cols_left));
            vstore_any(g, p, acc, NULL);
            hc_b_else(g->b);
            HC_IF(g->b, LT(I(g, 0), left)) { vstore_any(g, p, acc, left); }
            hc_b_end(g->b);
        }
    }
    if (Pt) hc_b_end(g->b);
}

/* A thread's program on AMX, per batch, M block of mc rows and N block of nc columns (a
 * block's partial sums, Pt, mc x nc f32, stay in L2): per K chunk of kc, split the block
 * rows' A chunk (As: mc x kc x 3 bf16, in L2; split again for each N block), then for
 * each 32-column tile of the N block every 32-row block (the tile's B terms, kc x 32 x 3
 * bf16, stay in L1 across them). B streams through once per M block. */
static void amx_thread_body(mm *g, hc_expr *tbi, hc_expr *ti, hc_expr *tj) {
    const hc_matmul_shape *s = g->s;
    const hc_matmul_config *c = g->c;
    int64_t KT = hc_cdiv(s->k, 32), ktb = g->kcb / 32, mpt, mcb = g->mcb, ncb = g->ncb;
    hc_expr_is_const_int(g->mpt, &mpt);
    hc_var *As = flat_buffer(g, "As", mcb / 16 * ktb * 3 * 256);
    hc_var *Ct = flat_buffer(g, "Ct", 32 * 32);
    hc_var *Af = flat_buffer(g, "Af", mcb);
    /* the partial sums of the block's tiles between K chunks, in tile order */
    hc_var *Pt = g->nkb > 1 ? flat_buffer(g, "Pt", mcb / 32 * (ncb / 32) * 32 * 32) : NULL;
    tile_stmt(g, HC_PRIM_TILE_CONFIG, 0, NULL, NULL, NULL);
    hc_expr *m_lo = let(g, "m_lo", MUL(ti, g->mpt));
    hc_expr *m_end = let(g, "m_end", MIN(ADD(m_lo, g->mpt), g->M));
    hc_expr *n_end = MIN(MUL(ADD(tj, I(g, 1)), I(g, g->npt)), I(g, s->n));
    hc_expr *bpt = cdiv_e(g, g->NB, c->tb);
    HC_FOR(g->b, bj, "bj", bpt, hc_serial()) {
        hc_expr *bi = ADD(MUL(tbi, bpt), R(g, bj));
        hc_b_if_begin(g->b, LT(bi, g->NB));
        g->bi = let(g, "bi", bi);
        HC_FOR(g->b, ic, "ic", I(g, hc_cdiv(mpt, mcb)), hc_serial()) {
            hc_expr *m0 = let(g, "m0", ADD(m_lo, MUL(R(g, ic), I(g, mcb))));
            HC_IF(g->b, LT(m0, m_end)) {
                hc_expr *mb_end = let(g, "mb_end", MIN(ADD(m0, I(g, mcb)), m_end));
                hc_expr *rows = let(g, "rows", SUB(mb_end, m0));
                HC_FOR(g->b, jc, "jc", I(g, hc_cdiv(g->npt, ncb)), hc_serial()) {
                    hc_expr *n0 = ADD(MUL(tj, I(g, g->npt)), MUL(R(g, jc), I(g, ncb)));
                    HC_IF(g->b, LT(n0, n_end)) {
                        g->n0 = let(g, "n0", n0);
                        g->nc = let(g, "nc", MIN(I(g, ncb), SUB(n_end, g->n0)));
                        HC_FOR(g->b, pc, "pc", I(g, g->nkb), hc_serial()) {
                            g->pc = R(g, pc);
                            hc_expr *kt0 = let(g, "kt0", MUL(g->pc, I(g, ktb)));
                            hc_expr *ktn = let(g, "ktn", MIN(I(g, ktb), SUB(I(g, KT), kt0)));
                            amx_split_a(g, As, Af, m0, mb_end, MUL(kt0, I(g, 32)), ktb);
                            HC_FOR(g->b, jr, "jr", I(g, ncb / 32), hc_serial()) {
                                hc_expr *col = let(g, "col", MUL(R(g, jr), I(g, 32)));
                                HC_IF(g->b, LT(col, g->nc)) {
                                    hc_expr *cols_left = let(g, "cleft", MIN(I(g, 32), SUB(g->nc, col)));
                                    HC_FOR(g->b, ib, "ib", I(g, mcb / 32), hc_serial()) {
                                        hc_expr *row = let(g, "row", MUL(R(g, ib), I(g, 32)));
                                        HC_IF(g->b, LT(row, rows)) {
                                            hc_expr *blk = ADD(MUL(R(g, ib), I(g, ncb / 32)), R(g, jr));
                                            amx_tile(g, As, Af, Ct, Pt, blk, m0, SUB(rows, row),
                                                     row, col, cols_left, kt0, ktn, KT);
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        hc_b_end(g->b);
    }
    tile_stmt(g, HC_PRIM_TILE_RELEASE, 0, NULL, NULL, NULL);
}

static hc_var *param(mm *g, const char *name, hc_expr *d0, hc_expr *d1, hc_expr *d2) {
    return hc_var_new(g->a, name,
                      hc_type_tensor(g->a, HC_F32, 3, (hc_expr *[]){d0, d1, d2}, NULL,
                                     HC_SCOPE_GLOBAL));
}

static hc_var *flat_param(mm *g, const char *name, int64_t n) {
    return hc_var_new(g->a, name, hc_type_tensor_c(g->a, HC_F32, 1, &n, HC_SCOPE_GLOBAL));
}

static hc_var *heap_buffer(mm *g, const char *name, hc_expr *d0, hc_expr *d1, hc_expr *d2) {
    const hc_type *t =
        hc_type_tensor(g->a, HC_F32, 3, (hc_expr *[]){d0, d1, d2}, NULL, HC_SCOPE_GLOBAL);
    return hc_b_declare(g->b, name, t, NULL);
}

/* A dimension of the shape: the constant, or the symbol expression where it is one. */
static hc_expr *dim_e(mm *g, const hc_sym *sym, int64_t v) {
    return sym ? hc_sym_expr(g->a, sym) : I(g, v);
}

hc_func *hc_matmul_cpu(hc_arena *a, const char *name, const hc_matmul_shape *s,
                       const hc_matmul_config *c, const hc_target *t, hc_error *err) {
    return hc_matmul_cpu_sym(a, name, s, NULL, c, t, err);
}

hc_func *hc_matmul_cpu_sym(hc_arena *a, const char *name, const hc_matmul_shape *s,
                           const hc_matmul_sym *sym, const hc_matmul_config *c,
                           const hc_target *t, hc_error *err) {
    const hc_sym *msym = sym ? sym->m : NULL, *bsym = sym ? sym->batch : NULL;
    if (hc_matmul_validate_shape(s, err) || hc_matmul_validate(c, err)) return NULL;
    if (c->lanes != hc_target_f32_lanes(t)) {
        hc_error_set(err, HC_ERR_INVALID, "matmul config: lanes %d but target %s has %d f32 lanes",
                     c->lanes, t->name, hc_target_f32_lanes(t));
        return NULL;
    }
    /* a packed operand is laid out once, at compile time: it cannot depend on a symbol */
    if (c->amx && (!t->caps.amx_bf16 || msym || bsym)) {
        hc_error_set(err, HC_ERR_INVALID, "matmul: amx on %s",
                     t->caps.amx_bf16 ? "symbolic shapes" : "a target without AMX-BF16");
        return NULL;
    }
    if ((c->pre_a && (msym || (bsym && !c->a_shared))) || (c->pre_b && bsym)) {
        hc_error_set(err, HC_ERR_INVALID, "matmul: a pre-packed %s with symbolic %s",
                     c->pre_b && bsym ? "B" : "A", msym ? "rows" : "batches");
        return NULL;
    }
    hc_builder b;
    hc_builder_init(&b, a);
    mm g = {.a = a, .b = &b, .s = s, .c = c, .nv = c->nr / c->lanes};
    g.vec = hc_type_vector(a, HC_F32, c->lanes);
    g.M = dim_e(&g, msym, s->m);
    g.NB = dim_e(&g, bsym, s->batch);
    g.Mlast = msym ? hc_sub(a, g.M, I(&g, 1)) : I(&g, s->m - 1);
    /* rows per thread: whole mr tiles, ceil(ceil(M / mr) / tm) of them */
    g.mpt = msym ? hc_mul(a, cdiv_e(&g, cdiv_e(&g, g.M, c->mr), c->tm), I(&g, c->mr))
                    : I(&g, hc_matmul_part_extent(s->m, c->mr, c->tm));
    g.npt = hc_matmul_part_extent(s->n, c->nr, c->tn);
    g.kcb = HC_MIN(c->kc, c->amx ? hc_round_up(s->k, 32) : s->k);
    /* a symbolic M keeps the whole M block: the hint's rows say nothing of the others' */
    g.mcb = msym ? c->mc : HC_MIN(c->mc, hc_matmul_part_extent(s->m, c->mr, c->tm));
    g.ncb = HC_MIN(c->nc, g.npt);
    g.mpad = hc_round_up(s->m, c->mr);
    g.npad = hc_round_up(s->n, c->nr);
    g.A = c->pre_a ? flat_param(&g, "A", hc_matmul_packed_size(s, c, 0))
                   : param(&g, "A", g.NB, g.M, I(&g, s->k));
    g.B = c->pre_b ? flat_param(&g, "B", hc_matmul_packed_size(s, c, 1))
                   : param(&g, "B", g.NB, I(&g, s->k), I(&g, s->n));
    g.C = param(&g, "C", g.NB, g.M, I(&g, s->n));
    g.nkb = hc_cdiv(c->amx ? hc_round_up(s->k, 32) : s->k, g.kcb);
    if (c->c_write_once && g.nkb > 1 && !c->amx) /* amx: partial sums in its tiles' Pt */
        g.Cs = heap_buffer(&g, "Cs", g.NB, g.M, I(&g, s->n));

    int threads = c->tb * c->tm * c->tn;
    hc_loop_attr attr = threads > 1 ? hc_parallel(threads) : hc_serial();
    HC_FOR(&b, th, "t", I(&g, threads), attr) {
        hc_var *tv[3];
        const hc_mapping *grid = hc_map_spatial(a, 3, (int64_t[]){c->tb, c->tm, c->tn});
        static const char *const names[3] = {"tb", "ti", "tj"};
        HC_FOR_MAP(&b, grid, R(&g, th), 3, tv, names) {
            if (c->amx) {
                amx_thread_body(&g, R(&g, tv[0]), R(&g, tv[1]), R(&g, tv[2]));
                continue;
            }
            if (c->pack_a && !c->pre_a)
                g.Ap = heap_buffer(&g, "Ap", I(&g, g.mcb / c->mr), I(&g, g.kcb), I(&g, c->mr));
            if (c->pack_b && !c->pre_b)
                g.Bp = heap_buffer(&g, "Bp", I(&g, g.ncb / c->nr), I(&g, g.kcb), I(&g, c->nr));
            thread_body(&g, R(&g, tv[0]), R(&g, tv[1]), R(&g, tv[2]));
        }
    }
    hc_stmt *body = hc_builder_finish(&b);
    return hc_func_new(a, name ? name : "matmul", HC_FN_CPU_KERNEL, 3,
                       (hc_var *[]){g.A, g.B, g.C}, body);
}

/* ---- pre-packed operands -------------------------------------------------------------- */
int64_t hc_matmul_packed_size(const hc_matmul_shape *s, const hc_matmul_config *c, int which) {
    if (which == 1 && c->amx) return s->batch * 3 * amx_b_term(s);
    if (which == 0) return (c->a_shared ? 1 : s->batch) * s->k * hc_round_up(s->m, c->mr);
    return s->batch * s->k * hc_round_up(s->n, c->nr);
}

/* Rows x cols row-major `src` (one batch) into panels of `w` rows (A: rows = m, the panel
 * holds w rows of every k; B is packed from its transpose view: rows = n, cols = k, and
 * src is read with strides rs (between rows) and cs (between cols)). */
static void pack_panels(const float *src, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                        int64_t w, int64_t kb, float *dst) {
    int64_t rpad = hc_round_up(rows, w);
    for (int64_t k0 = 0; k0 < cols; k0 += kb) {
        int64_t kcur = HC_MIN(kb, cols - k0);
        float *blk = dst + k0 * rpad;
        for (int64_t p = 0; p < rpad / w; p++) {
            float *pan = blk + p * kcur * w;
            for (int64_t k = 0; k < kcur; k++)
                for (int64_t r = 0; r < w; r++) {
                    int64_t row = p * w + r;
                    pan[k * w + r] = row < rows ? src[row * rs + (k0 + k) * cs] : 0.0f;
                }
        }
    }
}

/* B's 3-term split into tiles (hc_matmul_packed_size has the layout). */
static void prepack_amx_b(const hc_matmul_shape *s, const float *src, float *dst) {
    int64_t Kp = hc_round_up(s->k, 32), Np = hc_round_up(s->n, 32), KT = Kp / 32;
    int64_t term = amx_b_term(s) * 2; /* in 2-byte values */
    for (int64_t b = 0; b < s->batch; b++) {
        uint16_t *d = (uint16_t *)dst + b * 3 * term;
        const float *B = src + b * s->k * s->n;
        for (int64_t k = 0; k < Kp; k++)
            for (int64_t n = 0; n < Np; n++) {
                float x = k < s->k && n < s->n ? B[k * s->n + n] : 0.0f;
                int64_t tile = ((n / 16) * KT + k / 32) * 512;
                int64_t at = (k % 32 / 2) * 32 + (n % 16) * 2 + k % 2;
                for (int t = 0; t < 3; t++) { /* hc_matmul_amx_pays: every bf16(x) finite */
                    uint16_t h = hc_f32_to_bf16(x);
                    d[tile + t * term + at] = h;
                    x -= hc_bf16_to_f32(h); /* exact */
                }
            }
    }
}

void hc_matmul_prepack(const hc_matmul_shape *s, const hc_matmul_config *c, int which,
                       const float *src, float *dst) {
    if (which == 1 && c->amx) {
        prepack_amx_b(s, src, dst);
        return;
    }
    int64_t kb = HC_MIN(c->kc, s->k);
    if (which == 0) {
        int64_t nb = c->a_shared ? 1 : s->batch, per = s->k * hc_round_up(s->m, c->mr);
        for (int64_t b = 0; b < nb; b++)
            pack_panels(src + b * s->m * s->k, s->m, s->k, s->k, 1, c->mr, kb, dst + b * per);
    } else {
        int64_t per = s->k * hc_round_up(s->n, c->nr);
        for (int64_t b = 0; b < s->batch; b++)
            pack_panels(src + b * s->k * s->n, s->n, s->k, 1, s->n, c->nr, kb, dst + b * per);
    }
}

/* ---- building and running ------------------------------------------------------------ */
char *hc_matmul_source(const hc_matmul_shape *s, const hc_matmul_config *c, const hc_target *t,
                       const char *name, hc_error *err) {
    hc_arena a;
    hc_arena_init(&a);
    char *src = NULL;
    hc_func *f = hc_matmul_cpu(&a, name, s, c, t, err);
    if (f) src = hc_codegen_c(&a, hc_module_new(&a, "matmul", 1, &f), t);
    hc_arena_free(&a);
    return src;
}

hc_status hc_matmul_kernel_from_lib(hc_jit_lib *lib, const char *name, hc_matmul_kernel *out,
                                    hc_error *err) {
    char sym[256];
    snprintf(sym, sizeof sym, "%s__packed", name ? name : "matmul");
    out->lib = lib;
    out->fn = (hc_packed_fn)hc_jit_symbol(lib, sym);
    if (!out->fn)
        return hc_error_set(err, HC_ERR_INVALID, "matmul: symbol %s not found in %s", sym,
                            hc_jit_path(lib));
    return HC_OK;
}

hc_status hc_matmul_build(const hc_matmul_shape *s, const hc_matmul_config *c,
                          const hc_target *t, const hc_jit_options *opt, hc_matmul_kernel *out,
                          hc_error *err) {
    memset(out, 0, sizeof *out);
    char *src = hc_matmul_source(s, c, t, "matmul", err);
    if (!src) return err ? err->status : HC_ERR_INVALID;
    hc_jit_lib *lib = NULL;
    hc_status st = hc_jit_build(src, opt, &lib, err);
    free(src);
    if (st) return st;
    st = hc_matmul_kernel_from_lib(lib, "matmul", out, err);
    if (st) hc_jit_close(lib), out->lib = NULL;
    return st;
}

void hc_matmul_run(const hc_matmul_kernel *k, const float *A, const float *B, float *C) {
    void *args[3] = {(void *)A, (void *)B, C};
    k->fn(args);
}

void hc_matmul_kernel_close(hc_matmul_kernel *k) {
    if (k->lib) hc_jit_close(k->lib);
    k->lib = NULL, k->fn = NULL;
}

/* ---- the reference definition --------------------------------------------------------- */
typedef struct mm_def {
    hc_tnode *A, *B;
    hc_var *const *axes; /* b, i, j of the output */
} mm_def;

static hc_expr *product(hc_arena *a, hc_var *const *r, void *ctx) {
    mm_def *d = ctx;
    hc_expr *b = hc_ref(a, d->axes[0]), *k = hc_ref(a, r[0]);
    hc_expr *x = hc_tensor_access(a, d->A, 3, (hc_expr *[]){b, hc_ref(a, d->axes[1]), k});
    hc_expr *y = hc_tensor_access(a, d->B, 3, (hc_expr *[]){b, k, hc_ref(a, d->axes[2])});
    return hc_mul(a, x, y);
}

static hc_expr *output(hc_arena *a, hc_var *const *axes, void *ctx) {
    mm_def *d = ctx;
    d->axes = axes;
    return hc_reduce_expr(a, 1, (int64_t[]){d->B->shape[1]}, product, d, HC_REDUCE_SUM);
}

hc_task *hc_matmul_task(hc_arena *a, const hc_matmul_shape *s) {
    mm_def d = {0};
    d.A = hc_tensor_input(a, "A", HC_F32, 3, (int64_t[]){s->batch, s->m, s->k});
    d.B = hc_tensor_input(a, "B", HC_F32, 3, (int64_t[]){s->batch, s->k, s->n});
    hc_tnode *C = hc_compute(a, "C", 3, (int64_t[]){s->batch, s->m, s->n}, output, &d);
    return hc_task_new(a, "matmul", 2, (hc_tnode *[]){d.A, d.B}, 1, (hc_tnode *[]){C});
}
