/* winograd.h — CPU templates for the two transforms of Winograd F(2x2, 3x3)
 * (docs/winograd.md; the ops WINO_INPUT and WINO_OUTPUT in src/graph/ops/internal.c).
 *
 *   hc_wino_input_cpu:  X [n, c, h, w] -> V [16, c, T]   params X, V
 *   hc_wino_output_cpu: M [16, c, T] -> Y [n, c, oh, ow] params M, Y
 *
 * T = n * ceil(oh/2) * ceil(ow/2) tiles, t = (n*TH + ty)*TW + tx; the input tile of
 * (ty, tx) starts at row 2*ty - pt, column 2*tx - pl (zeros outside the image). */
#ifndef HC_SCHED_WINOGRAD_H
#define HC_SCHED_WINOGRAD_H

#include "ir/ir.h"
#include "task/winograd_mats.h"

typedef struct hc_wino_shape {
    int64_t n, c, h, w; /* input (for the output transform, h and w are unused) */
    int64_t pt, pl;     /* top and left padding (input transform) */
    int64_t oh, ow;     /* convolution output */
    int m;              /* the tile attribute: F(m x m, 3 x 3); 0 means 2 (the NCHW templates
                         * have only 2, the blocked ones 2 and 4) */
    int kh, kw;         /* the kernel (the blocked templates; 0 means 3): F(mh, kh) along
                         * the rows, F(mw, kw) along the columns, mh = m unless kh is 1
                         * (hc_wino_axis_m); the NCHW templates: 3 x 3 only */
    const struct hc_sym *nsym; /* a symbolic batch (the blocked templates only; n is then
                                * its hint): NULL when fixed */
} hc_wino_shape;

/* Work items (image, channel, tile rows) split evenly over `threads` threads. */
hc_func *hc_wino_input_cpu(hc_arena *a, const char *name, const hc_wino_shape *s, int threads,
                           hc_error *err);
hc_func *hc_wino_output_cpu(hc_arena *a, const char *name, const hc_wino_shape *s, int threads,
                            hc_error *err);

/* The same transforms on the channel-blocked layout (winograd_nchwc_cpu.c, docs/nchwc.md),
 * for F(mh x mw, kh x kw) (s->m, s->kh, s->kw; tiles of ah x aw inputs, ah = mh + kh - 1):
 *   input:  X [n, c/block, h, w, block] -> V [ah*aw, T, c]      params X, V
 *   output: M [ah*aw, T, c] -> Y [n, c/block, oh, ow, block]     params M, Y
 * with the channels on the vector lanes (block = the target's f32 lanes), T = n *
 * ceil(oh/mh) * ceil(ow/mw), the input tile of (ty, tx) at row mh*ty - pt, column mw*tx -
 * pl. With s->nsym (dynamic shapes) the batch dim of X and Y is its expression, T that
 * times the tiles per image, and the items (image, tile row) that times ceil(oh/mh). */
hc_func *hc_wino_input_nchwc_cpu(hc_arena *a, const char *name, const hc_wino_shape *s,
                                 int block, int threads, hc_error *err);
hc_func *hc_wino_output_nchwc_cpu(hc_arena *a, const char *name, const hc_wino_shape *s,
                                  int block, int threads, hc_error *err);

#endif
