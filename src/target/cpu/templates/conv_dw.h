/* conv_dw.h — the CPU fp32 direct template for 2-D convolution (NCHW): depthwise, grouped
 * and, where src/passes/lower.c keeps them (direct_pays), group-1 convolutions.
 *
 *   Y[n, m, oh, ow] = B[m] + sum_{c < cg, kh, kw} X[n, g*cg + c, oh*sh - pt + kh*dh,
 *                                                  ow*sw - pl + kw*dw] * W[m, c, kh, kw]
 *   with g = m / mg (cg input and mg output channels per group), out-of-range X read as 0.
 *
 * Threads (spatial) own items of (batch x group) x row tiles; each item copies the input
 * rows it needs into a zero-padded, stride-deinterleaved scratch (so the inner loop has no
 * borders and reads contiguous vectors for any stride), then walks register blocks of mb
 * output channels x rb rows x nv vectors, a REGISTER tensor of f32 vectors, over all the
 * group's output channels. docs/conv_dw.md describes the program and the measurements.
 *
 * Usage:
 *   hc_conv_dw_shape s = {...};   // filled from a Conv node by nn_conv.c
 *   hc_conv_dw_config c = hc_conv_dw_default_config(hc_target_host(), &s);
 *   hc_func *f = hc_conv_dw_cpu(arena, "dw", &s, &c, hc_target_host(), &err);
 *   // params X, W, [B,] Y
 */
#ifndef HC_SCHED_CONV_DW_H
#define HC_SCHED_CONV_DW_H

#include "target/cpu/cpu.h"
#include "ir/ir.h"

typedef struct hc_conv_dw_shape {
    int64_t n, c, h, w;     /* input X: [n, c, h, w] */
    int64_t m, group;       /* output channels; groups (divides c and m) */
    int64_t kh, kw;         /* W: [m, c / group, kh, kw] */
    int64_t sh, sw, dh, dw; /* strides and dilations */
    int64_t pt, pl, pb, pr; /* pads: top, left, bottom, right */
    int64_t oh, ow;         /* Y: [n, m, oh, ow] */
    bool bias;              /* B: [m] present */
    /* Dynamic shapes: the batch's expression when it is symbolic (n holds its hint value,
     * for the heuristics only; the rows are split as for one image); NULL when fixed. */
    const struct hc_sym *nsym;
} hc_conv_dw_shape;

typedef struct hc_conv_dw_config {
    int lanes;   /* f32 lanes per vector; must be the target's (16, 8 or 4) */
    int mb;      /* output channels per register block (of one group; 1 for depthwise):
                  * each input vector loaded feeds mb FMAs */
    int rb;      /* output rows per register block */
    int nv;      /* vectors per register-block row (columns: nv * lanes) */
    int rt;      /* output rows per item (a multiple of rb): the rows whose input one copy
                  * into the scratch serves */
    int threads; /* OpenMP threads over the items */
    int flat;    /* 1: stride 1 only (rb is then 1): vectors run along the item's rows laid end
                  * to end in the scratch (row stride w + pl + pr), so a row of 35 outputs
                  * does not take 3 vectors of 16; the few columns between rows are
                  * computed and dropped (docs/conv_dw.md, "Flat blocks") */
} hc_conv_dw_config;

#define HC_CONV_DW_MAX_RB 16
#define HC_CONV_DW_MAX_NV 8
#define HC_CONV_DW_MAX_MB 16
#define HC_CONV_DW_MAX_VECS 48 /* mb * rb * nv accumulators */
#define HC_CONV_DW_MAX_THREADS 256
/* Largest per-thread scratch (floats) the template accepts; beyond it: NULL (fallback). */
#define HC_CONV_DW_MAX_SCRATCH (1 << 22)

/* Check a shape: sizes >= 1, pads >= 0, group divides c and m, and the output sizes are
 * those of the window. */
hc_status hc_conv_dw_validate_shape(const hc_conv_dw_shape *s, hc_error *err);
hc_status hc_conv_dw_validate(const hc_conv_dw_config *c, hc_error *err);
/* The default config from the target's vector width, register count and core count. */
hc_conv_dw_config hc_conv_dw_default_config(const hc_target *t, const hc_conv_dw_shape *s);
/* The schedule space: level 0 the default alone, 1 a small space, 2 the full space;
 * candidate 0 is always the default; configs are deduplicated after clipping to the
 * shape. Writes up to max configs to out (out may be NULL); returns the count. */
int hc_conv_dw_space(const hc_target *t, const hc_conv_dw_shape *s, int level,
                     hc_conv_dw_config *out, int max);
/* "mb4 rb8 nv1 rt56 t2", " flat" appended for flat blocks */
void hc_conv_dw_config_print(hc_sb *sb, const hc_conv_dw_config *c);

/* The scheduled program: an HC_FN_CPU_KERNEL named `name` (NULL: "conv_dw") with params
 * X, W, B (only when s->bias), Y as f32 row-major GLOBAL tensors. NULL with err set on a
 * bad shape or config, a config that does not fit the target, or a scratch larger than
 * HC_CONV_DW_MAX_SCRATCH. Each element of Y is stored exactly once (VSTORE/VSTORE_MASK
 * along its last dim) and never loaded; X, W and B are read only by LOAD, or VLOAD /
 * VLOAD_MASK along X's last dim, so post-scheduling fusion can rewrite them. */
hc_func *hc_conv_dw_cpu(hc_arena *a, const char *name, const hc_conv_dw_shape *s,
                        const hc_conv_dw_config *c, const hc_target *t, hc_error *err);

#endif
