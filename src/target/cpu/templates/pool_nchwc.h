/* pool_nchwc.h — the CPU template for MaxPool / AveragePool on the channel-blocked layout
 * (docs/nchwc.md): the layout pass turns a 2-D pool of NCHW{b}c data into a 3-D pool with
 * a window of 1 along the block, which this template computes with the channels on the
 * vector lanes (src/target/cpu/templates/pool_nchwc_cpu.c).
 *
 *   X [n, cb, h, w, b] -> Y [n, cb, oh, ow, b]
 *   max: the largest X in the window (positions outside X skipped; -inf if none)
 *   avg: the sum over the window's positions inside X, divided by their count, or with
 *        include_pad by the count of positions inside the padded X (ONNX AveragePool). */
#ifndef HC_SCHED_POOL_NCHWC_H
#define HC_SCHED_POOL_NCHWC_H

#include "ir/ir.h"

typedef struct hc_pool_nchwc_shape {
    int64_t n, cb, h, w, oh, ow;
    int64_t kh, kw, sh, sw, dh, dw;
    int64_t pt, pl, pb, pr; /* pads: top, left, bottom, right */
    int block;
    bool max;         /* MaxPool; else AveragePool */
    bool include_pad; /* AveragePool's count_include_pad */
    /* Dynamic shapes: the batch's expression when it is symbolic (n holds its hint value,
     * for the thread count only); NULL when fixed. */
    const struct hc_sym *nsym;
} hc_pool_nchwc_shape;

/* Params X, Y (f32 GLOBAL; their first dim the batch's expression when s->nsym). Items
 * (image, block, output row) split over `threads`; each Y
 * element stored once by VSTORE along its last dim, X read by VLOAD along its last dim.
 * NULL with err set on a bad shape. */
hc_func *hc_pool_nchwc_cpu(hc_arena *a, const char *name, const hc_pool_nchwc_shape *s,
                           int threads, hc_error *err);

#endif
