/* attention.h — the CPU fp32 template for the fused attention op ATTENTION_FUSED
 * (src/graph/ops/nn_attention.c; made by the lower_attention pass, src/passes/attention.c):
 *
 *   Q [B, Hq, Sq, D], K [B, Hk, T, D], V [B, Hk, T, Dv], bias (optional, each dim 1 or the
 *   scores' [B, Hq, Sq, T]), nonpad (optional, i64 [B]) -> Y [B, Hq, Sq, Dv]
 *   S = scale * Q K^T (query head h reads KV head h / (Hq / Hk)), softcapped, plus the bias,
 *   keys outside the row's causal / window / padding range masked, softmax over the keys
 *   (a row with nothing left gives 0), Y = P V.
 *
 * One kernel: items (b, h, chunk of query rows) are split over the threads; per tile of rq
 * query rows, the scores of the tile's keys go to a thread-local scratch [rq][keys], the
 * softmax runs over those rows there, and P V accumulates in registers. The keys a tile
 * sees are one range (the masks of causal, window and padding are ranges of keys, monotone
 * in the row), so a causal tile computes only the keys its rows may see. Q K^T has two
 * forms: with `pack`, K^T of the item's keys is packed into a scratch [D][keys] once per
 * item and the tile is rq rows x kv key vectors (Q broadcast, the matmul micro-kernel);
 * without, the tile is rq rows x kv keys with vectors along D and one horizontal sum per
 * score (no packing: decode steps, where a row sees each key once).
 *
 * Symbolic B, Sq and T (dynamic shapes) take the same program with those extents as
 * expressions: the config is planned at the hints, the item count and the scratch rows
 * (sized by T) are expressions, the scratch a per-thread workspace buffer of that size
 * (emit_c.c: grown once, kept across calls). A symbolic Sq that the hints give one chunk
 * per head keeps one chunk (all of Sq) at every binding. */
#ifndef HC_TARGET_CPU_TEMPLATES_ATTENTION_H
#define HC_TARGET_CPU_TEMPLATES_ATTENTION_H

#include "target/cpu/cpu.h"
#include "ir/ir.h"

typedef struct hc_attn_shape {
    int64_t B, Hq, Hk, Sq, T, D, Dv;
    bool bias;               /* a bias input */
    int64_t bias_shape[4];   /* each 1 or the scores' dim */
    bool nonpad;             /* a nonpad input: keys j >= nonpad[b] masked, offset nonpad[b] - Sq */
    double scale, softcap;   /* softcap 0: none */
    bool causal;             /* keys j <= i + offset */
    int64_t offset;          /* the causal frontier (the cache length) without nonpad */
    int64_t left, right;     /* window: i + offset - left <= j <= i + offset + right; -1: unbounded */
    /* Dynamic shapes (docs/dynamic.md): the expressions of a symbolic batch, query count
     * and key count, NULL where fixed (B, Sq, T then hold their values at the hints, where
     * the config is planned); bias_sym: the bias dims' (each NULL or the scores' dim's
     * expression). The heads and head sizes are fixed. */
    const hc_sym *Bs, *Sqs, *Ts;
    const hc_sym *bias_sym[4];
    bool offset_kv;          /* the frontier offset is T - Sq (an expression where symbolic) */
} hc_attn_shape;

typedef struct hc_attn_config {
    int lanes;   /* f32 lanes per vector: the target's, 8 or 16 */
    bool pack;   /* Q K^T on packed K^T (vectors along the keys); else vectors along D */
    int rq;      /* query rows per register tile */
    int kv;      /* Q K^T tile: key vectors (pack) or keys (no pack) */
    int dv;      /* P V tile: vectors of Dv */
    int rows;    /* query rows per item (a multiple of rq, or all of Sq) */
    int threads; /* OpenMP threads over the items */
} hc_attn_config;

#define HC_ATTN_MAX_RQ 8
#define HC_ATTN_MAX_KV 16
#define HC_ATTN_MAX_DV 8
#define HC_ATTN_MAX_THREADS 256
/* Largest per-thread scratch (floats: scores plus packed K^T); beyond it the template does
 * not apply (the three-kernel lowering does). */
#define HC_ATTN_MAX_SCRATCH (1 << 22)

hc_status hc_attn_validate_shape(const hc_attn_shape *s, hc_error *err);
hc_status hc_attn_validate(const hc_attn_config *c, hc_error *err);
/* Whether both register tiles of c fit the target's registers. */
bool hc_attn_tile_fits(const hc_target *t, const hc_attn_config *c);
/* Scratch floats per thread for c. */
int64_t hc_attn_scratch_floats(const hc_attn_shape *s, const hc_attn_config *c);
/* Whether the template applies on t (f32 lanes 8 or 16, a scratch within the limit). */
bool hc_attn_applies(const hc_target *t, const hc_attn_shape *s);
hc_attn_config hc_attn_default_config(const hc_target *t, const hc_attn_shape *s);
/* The schedule space: level 0 the default alone, 1 a small space, 2 a larger one;
 * candidate 0 is the default; no duplicates. Writes up to max configs to out (may be NULL);
 * returns the count (0 where the template does not apply). */
int hc_attn_space(const hc_target *t, const hc_attn_shape *s, int level, hc_attn_config *out,
                  int max);
/* "pack rq6 kv4 dv4 rows128 t2" */
void hc_attn_config_print(hc_sb *sb, const hc_attn_config *c);

/* The scheduled program: an HC_FN_CPU_KERNEL with params Q, K, V, [bias], [nonpad], Y as
 * row-major GLOBAL tensors of the op's shapes. Y is stored once per element, by VSTORE(_MASK)
 * of ADDRESS(Y[b, h, i, e]) along e. NULL with err set on a bad shape or config. */
hc_func *hc_attn_cpu(hc_arena *a, const char *name, const hc_attn_shape *s,
                     const hc_attn_config *c, const hc_target *t, hc_error *err);

#endif
