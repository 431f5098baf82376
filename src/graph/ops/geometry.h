/* geometry.h — the geometry of the internal ops that passes create, read from a node: for
 * their Tasks (src/graph/ops) and for the targets' templates that schedule them. */
#ifndef HC_GRAPH_OPS_GEOMETRY_H
#define HC_GRAPH_OPS_GEOMETRY_H

#include "graph/graph.h"
#include "task/winograd_mats.h"

/* CONV_NCHWC (nchwc.c, docs/nchwc.md). */
typedef struct hc_conv_nchwc_shape {
    int64_t n, cb, h, w;    /* X: [n, cb, h, w, block] */
    int64_t mb;             /* output channel blocks: Y [n, mb, oh, ow, block] */
    int64_t kh, kw;         /* W: [mb, cb, kh, kw, block, block] */
    int64_t sh, sw, dh, dw; /* strides and dilations */
    int64_t pt, pl, pb, pr; /* pads: top, left, bottom, right */
    int64_t oh, ow;
    int block;              /* channels per block (the target's f32 lanes) */
    bool bias;              /* B: [mb, block] present */
    bool depthwise;         /* one input channel per output channel (mb == cb): W is
                             * [mb, 1, kh, kw, 1, block], Y[n, o, y, x, m] = B[o, m] +
                             * sum_{i, j} Xpad[n, o, .., .., m] * W[o, 0, i, j, 0, m] */
    bool nchw_in;           /* the input is plain NCHW (a stem's few channels): X is
                             * [n, cb, h, w] with cb the input channels, W is [mb, cb, kh,
                             * kw, 1, block]; dense only. docs/nchwc.md, "Blocked stems" */
    /* Dynamic shapes (docs/dynamic.md): the batch's expression when it is symbolic (n then
     * holds its hint value, for the heuristics only); NULL when fixed. Only the batch may
     * be symbolic. */
    const struct hc_sym *nsym;
} hc_conv_nchwc_shape;
/* Lanes of one input block: 1 for an NCHW input (its cb are channels), else the block. */
static inline int64_t hc_conv_nchwc_in_lanes(const hc_conv_nchwc_shape *s) {
    return s->nchw_in ? 1 : s->block;
}
/* The shape of a CONV_NCHWC node; errors name the node. */
hc_status hc_conv_nchwc_shape_of(const hc_node *n, hc_conv_nchwc_shape *s, hc_error *err);
/* CONV_NCHWC_Q8's (src/graph/ops/nchwc.c): block, sizes and geometry; bias is set. */
hc_status hc_conv_q8_shape_of(const hc_node *n, hc_conv_nchwc_shape *s, hc_error *err);

/* WINO_INPUT / WINO_OUTPUT and their NCHW{b}c forms (internal.c): the input transform's
 * pads [top, left, bottom, right], and the transforms along the rows and the columns:
 * F(mh, kh) and F(mw, kw) for the kernel [kh, kw] (attribute kernel, default [3, 3]; the
 * NCHW ops: 3 x 3 only) and the tile m (attribute tile, default 2; the NCHW ops: 2 only),
 * mh = m unless kh is 1 (then 1, the identity), mw alike. */
typedef struct hc_wino_geom {
    const hc_wino_mats *h, *w; /* F(mh, kh) and F(mw, kw) */
} hc_wino_geom;
hc_status hc_wino_node_pads(const hc_node *n, int64_t *pad, hc_error *err);
hc_status hc_wino_node_geom(const hc_node *n, hc_wino_geom *g, hc_error *err);

#endif
