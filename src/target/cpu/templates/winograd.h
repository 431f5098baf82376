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
    int m;              /* output tile m x m: F(m x m, 3 x 3); 0 means 2 (the NCHW templates
                         * have only 2, the blocked ones 2 and 4) */
    const struct hc_sym *nsym; /* a symbolic batch (the blocked templates only; n is then
                                * its hint): NULL when fixed */
} hc_wino_shape;

/* Work items (image, channel, tile rows) split evenly over `threads` threads. */
hc_func *hc_wino_input_cpu(hc_arena *a, const char *name, const hc_wino_shape *s, int threads,
                           hc_error *err);
hc_func *hc_wino_output_cpu(hc_arena *a, const char *name, const hc_wino_shape *s, int threads,
                            hc_error *err);

/* The same transforms on the channel-blocked layout (winograd_nchwc_cpu.c, docs/nchwc.md),
 * for F(2x2, 3x3) and F(4x4, 3x3) (s->m; a = m + 2):
 *   input:  X [n, c/block, h, w, block] -> V [a*a, T, c]      params X, V
 *   output: M [a*a, T, c] -> Y [n, c/block, oh, ow, block]     params M, Y
 * with the channels on the vector lanes (block = the target's f32 lanes), T = n *
 * ceil(oh/m) * ceil(ow/m), the input tile of (ty, tx) at row m*ty - pt, column m*tx - pl.
 * With s->nsym (dynamic shapes) the batch dim of X and Y is its expression, T that times
 * the tiles per image, and the items (image, tile row) that times ceil(oh/m). */
hc_func *hc_wino_input_nchwc_cpu(hc_arena *a, const char *name, const hc_wino_shape *s,
                                 int block, int threads, hc_error *err);
hc_func *hc_wino_output_nchwc_cpu(hc_arena *a, const char *name, const hc_wino_shape *s,
                                  int block, int threads, hc_error *err);

#endif
