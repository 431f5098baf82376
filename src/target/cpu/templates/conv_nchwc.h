/* conv_nchwc.h — the CPU fp32 template for 2-D convolution in the channel-blocked layout
 * NCHW{b}c (docs/nchwc.md; the op CONV_NCHWC in src/graph/ops/nchwc.c, made by the layout
 * pass src/passes/layout.c). With b = the target's f32 lanes:
 *
 *   X [n, cb, h, w, b]                 input channel c = cbi * b + l at X[., cbi, ., ., l]
 *   W [mb, cb, kh, kw, b, b]           W[o, ci, i, j, l, m] = weight (o*b + m, ci*b + l, i, j)
 *   B [mb, b]                          bias of output channel o*b + m
 *   Y [n, mb, oh, ow, b]
 *   Y[n, o, y, x, m] = B[o, m] + sum_{ci, i, j, l} Xpad[n, ci, y*sh - pt + i*dh,
 *                                                  x*sw - pl + j*dw, l] * W[o, ci, i, j, l, m]
 *
 * The output channels lie on the vector lanes: a register tile is px output pixels x ot
 * output-channel blocks; per input channel and tap, ot weight vectors (contiguous in W) and
 * px broadcasts of input pixels feed px * ot FMAs. Neither operand is packed: the blocked
 * layout is the packed one. Items (image, output-channel chunk, tile of rt output rows)
 * are split over the threads; with padding, an item first copies the input rows it reads
 * into a zero-padded scratch (so the taps need no bounds checks). Depthwise: per tap, px x
 * ot input vectors times ot weight vectors, the padding by masked loads (no scratch). */
#ifndef HC_SCHED_CONV_NCHWC_H
#define HC_SCHED_CONV_NCHWC_H

#include "target/cpu/cpu.h"
#include "graph/ops/geometry.h"
#include "ir/ir.h"


typedef struct hc_conv_nchwc_config {
    int lanes;   /* f32 lanes per vector; must equal the block and the target's */
    int px;      /* output pixels per register tile (consecutive in the item's rows) */
    int ot;      /* output-channel blocks per register tile */
    int rt;      /* output rows per item */
    int osplit;  /* output-channel chunks: items are (image, chunk, row tile) */
    int threads; /* OpenMP threads over the items */
} hc_conv_nchwc_config;

#define HC_CONV_NCHWC_MAX_PX 28
#define HC_CONV_NCHWC_MAX_OT 8
#define HC_CONV_NCHWC_MAX_THREADS 256
/* Largest per-thread scratch (floats); beyond it: NULL (fallback). */
#define HC_CONV_NCHWC_MAX_SCRATCH (1 << 23)

hc_status hc_conv_nchwc_validate_shape(const hc_conv_nchwc_shape *s, hc_error *err);
hc_status hc_conv_nchwc_validate(const hc_conv_nchwc_config *c, hc_error *err);
/* Whether a px x ot tile fits the target's registers (accumulators, ot weight vectors and
 * one broadcast). */
bool hc_conv_nchwc_tile_fits(const hc_target *t, int px, int ot);
hc_conv_nchwc_config hc_conv_nchwc_default_config(const hc_target *t,
                                                  const hc_conv_nchwc_shape *s);
/* The schedule space: level 0 the default alone, 1 a small space, 2 the full space;
 * candidate 0 is always the default; deduplicated after clipping to the shape. Writes up
 * to max configs to out (may be NULL); returns the count. */
int hc_conv_nchwc_space(const hc_target *t, const hc_conv_nchwc_shape *s, int level,
                        hc_conv_nchwc_config *out, int max);
/* "px6 ot4 rt56 os1 t2" */
void hc_conv_nchwc_config_print(hc_sb *sb, const hc_conv_nchwc_config *c);

/* The scheduled program: an HC_FN_CPU_KERNEL with params X, W, B (only with s->bias), Y as
 * f32 row-major GLOBAL tensors. Each element of Y is stored once by VSTORE of
 * ADDRESS(Y[n, o, y, x, 0]) (lanes along the last dim) and never loaded; X is read by
 * scalar LOADs (broadcast), W and B by VLOADs along their last dim. NULL with err set on a
 * bad shape or config, or a scratch over HC_CONV_NCHWC_MAX_SCRATCH. */
hc_func *hc_conv_nchwc_cpu(hc_arena *a, const char *name, const hc_conv_nchwc_shape *s,
                           const hc_conv_nchwc_config *c, const hc_target *t, hc_error *err);

/* The int8 program of CONV_NCHWC_Q8 (src/graph/ops/nchwc.c; made from QDQ convs by
 * passes/qconv.c): the same items, tiles and splits, but each item quantizes the input rows
 * it reads into a u8 scratch (u = round(x * inv) + z, padding z) and the taps are
 * vdot_u8s8 (vpdpbusd with VNNI) of 4 input channels against W's bytes, int32 accumulators
 * starting at K, stored as S * f32(acc) + B. Params X, W (i8 [mb, cb, kh, kw, b/4, b, 4]), K
 * (i32), S, B (f32 [mb, b]), Y. The tiles need 4 registers more without VNNI. */
bool hc_conv_q8_tile_fits(const hc_target *t, int px, int ot);
hc_conv_nchwc_config hc_conv_q8_default_config(const hc_target *t, const hc_conv_nchwc_shape *s);
int hc_conv_q8_space(const hc_target *t, const hc_conv_nchwc_shape *s, int level,
                     hc_conv_nchwc_config *out, int max);
hc_func *hc_conv_q8_cpu(hc_arena *a, const char *name, const hc_conv_nchwc_shape *s, float inv,
                        int64_t z, const hc_conv_nchwc_config *c, const hc_target *t,
                        hc_error *err);

#endif
