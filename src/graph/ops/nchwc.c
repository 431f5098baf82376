/* nchwc.c — the channel-blocked layout NCHW{b}c (docs/nchwc.md): ops that only the layout
 * pass (src/passes/layout.c) creates.
 *
 * TO_NCHWC    x [N, C, H, W] -> y [N, ceil(C/b), H, W, b], attribute block b:
 *             y[n, cb, h, w, l] = x[n, cb*b + l, h, w], 0 for cb*b + l >= C (the padded
 *             lanes of a C that b does not divide)
 * FROM_NCHWC  y [N, CB, H, W, b] -> x [N, C, H, W], attribute channels C (default CB*b;
 *             (CB-1)*b < C <= CB*b): the inverse, the padded lanes dropped
 * CONV_NCHWC  X [N, CB, H, W, b], W [MB, CB, KH, KW, b, b], B [MB, b] (optional)
 *             -> Y [N, MB, OH, OW, b], attributes strides, dilations (2 each) and pads
 *             [top, left, bottom, right] (explicit):
 *             Y[n, o, y, x, m] = B[o, m] + sum_{ci, i, j, l} X[n, ci, y*sh - pt + i*dh,
 *                                   x*sw - pl + j*dw, l] * W[o, ci, i, j, l, m]
 *             (X read as 0 outside the image). With attribute group = CB*b (depthwise,
 *             MB = CB), W is [MB, 1, KH, KW, 1, b] and Y[n, o, y, x, m] = B[o, m] +
 *             sum_{i, j} X[n, o, .., .., m] * W[o, 0, i, j, 0, m]. With a plain NCHW
 *             X [N, C, H, W] (a stem's few channels, group 1), W is [MB, C, KH, KW, 1, b]
 *             and X[n, ci, ..] stands for X[n, ci, .., .., 0] above. Scheduled by the
 *             conv_nchwc template. */
#include <stdlib.h>

#include "graph/graph.h"
#include "graph/ops/geometry.h"

static hc_status need_rank(const hc_node *n, int i, int rank, hc_error *err) {
    const hc_tensor *t = n->inputs[i];
    if (!t || t->ndim != rank)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input %d has rank %d, expected %d", i,
                            t ? t->ndim : 0, rank);
    return HC_OK;
}

/* ---- reorders --------------------------------------------------------------------- */
static hc_status infer_to_nchwc(hc_node *n, hc_error *err) {
    if (need_rank(n, 0, 4, err)) return err->status;
    const hc_tensor *x = n->inputs[0];
    int64_t b = hc_node_attr_int(n, "block", 0);
    if (b < 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "block %lld is not positive", (long long)b);
    int64_t shape[5] = {x->shape[0], hc_cdiv(x->shape[1], b), x->shape[2], x->shape[3], b};
    hc_node_set_output(n, 0, x->dtype, 5, shape);
    return HC_OK;
}

static hc_task *task_to_nchwc(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)err;
    int nin = 0;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    const hc_tensor *y = n->outputs[0];
    hc_var *ax[5] = {hc_axis(a, "n"), hc_axis(a, "cb"), hc_axis(a, "h"), hc_axis(a, "w"),
                     hc_axis(a, "l")};
    hc_expr *c = hc_add(a, hc_mul(a, hc_ref(a, ax[1]), hc_int(a, y->shape[4])), hc_ref(a, ax[4]));
    hc_expr *idx[4] = {hc_ref(a, ax[0]), c, hc_ref(a, ax[2]), hc_ref(a, ax[3])};
    hc_expr *v = hc_at(a, in[0], idx);
    int64_t ch = n->inputs[0]->shape[1];
    if (ch % y->shape[4]) /* the padded lanes read 0 */
        v = hc_select(a, hc_lt(a, c, hc_int(a, ch)), v, hc_const_num(a, y->dtype, 0));
    hc_tnode *out = hc_compute_with_axes(a, y->name, 5, y->shape, ax, v);
    return hc_node_task(a, n, nin, in, 1, &out);
}

static hc_status infer_from_nchwc(hc_node *n, hc_error *err) {
    if (need_rank(n, 0, 5, err)) return err->status;
    const hc_tensor *y = n->inputs[0];
    int64_t full = y->shape[1] * y->shape[4], ch = hc_node_attr_int(n, "channels", full);
    if (ch > full || ch <= full - y->shape[4])
        return hc_node_fail(n, HC_ERR_INVALID, err, "channels %lld do not fill %lld blocks of %lld",
                            (long long)ch, (long long)y->shape[1], (long long)y->shape[4]);
    int64_t shape[4] = {y->shape[0], ch, y->shape[2], y->shape[3]};
    hc_node_set_output(n, 0, y->dtype, 4, shape);
    return HC_OK;
}

static hc_task *task_from_nchwc(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)err;
    int nin = 0;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    const hc_tensor *x = n->outputs[0];
    int64_t b = n->inputs[0]->shape[4];
    hc_var *ax[4] = {hc_axis(a, "n"), hc_axis(a, "c"), hc_axis(a, "h"), hc_axis(a, "w")};
    hc_expr *c = hc_ref(a, ax[1]);
    hc_expr *idx[5] = {hc_ref(a, ax[0]), hc_div(a, c, hc_int(a, b)), hc_ref(a, ax[2]),
                       hc_ref(a, ax[3]), hc_mod(a, c, hc_int(a, b))};
    hc_tnode *out = hc_compute_with_axes(a, x->name, 4, x->shape, ax, hc_at(a, in[0], idx));
    return hc_node_task(a, n, nin, in, 1, &out);
}

/* ---- the blocked convolution ---------------------------------------------------------- */
static hc_status pair(const hc_node *n, const char *name, int64_t *out, hc_error *err) {
    int cnt = 0;
    const int64_t *v = hc_node_attr_ints(n, name, &cnt);
    if (!v) {
        out[0] = out[1] = 1;
        return HC_OK;
    }
    if (cnt != 2 || v[0] < 1 || v[1] < 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "%s must be 2 positive values", name);
    out[0] = v[0], out[1] = v[1];
    return HC_OK;
}

static hc_status geometry(const hc_node *n, hc_conv_nchwc_shape *s, hc_error *err);

/* The template's shape from the node (also the geometry infer and the Task use). */
hc_status hc_conv_nchwc_shape_of(const hc_node *n, hc_conv_nchwc_shape *s, hc_error *err) {
    /* X [N, C, H, W] (plain NCHW: the weights' input lanes are 1) or [N, CB, H, W, b] */
    bool nchw_in = n->ninputs > 0 && n->inputs[0] && n->inputs[0]->ndim == 4;
    if (need_rank(n, 0, nchw_in ? 4 : 5, err) || need_rank(n, 1, 6, err)) return err->status;
    const hc_tensor *x = n->inputs[0], *w = n->inputs[1];
    const hc_tensor *b = n->ninputs > 2 ? n->inputs[2] : NULL;
    int64_t blk = nchw_in ? w->shape[5] : x->shape[4];
    int64_t group = hc_node_attr_int(n, "group", 1);
    bool dw = group != 1;
    if (nchw_in && (dw || w->shape[1] != x->shape[1] || w->shape[4] != 1))
        return hc_node_fail(n, HC_ERR_INVALID, err,
                            "an NCHW input [%lld, %lld, %lld, %lld] needs group 1 and a weight "
                            "[MB, %lld, KH, KW, 1, b], got group %lld and [%lld, %lld, %lld, "
                            "%lld, %lld, %lld]",
                            (long long)x->shape[0], (long long)x->shape[1],
                            (long long)x->shape[2], (long long)x->shape[3],
                            (long long)x->shape[1], (long long)group, (long long)w->shape[0],
                            (long long)w->shape[1], (long long)w->shape[2], (long long)w->shape[3],
                            (long long)w->shape[4], (long long)w->shape[5]);
    if (dw && (group != x->shape[1] * blk || w->shape[0] != x->shape[1] || w->shape[1] != 1 ||
               w->shape[4] != 1 || w->shape[5] != blk))
        return hc_node_fail(n, HC_ERR_INVALID, err,
                            "group %lld: only depthwise (group = channels = %lld) with weight "
                            "[%lld, 1, KH, KW, 1, %lld] is supported",
                            (long long)group, (long long)(x->shape[1] * blk),
                            (long long)x->shape[1], (long long)blk);
    if (!dw && !nchw_in && (w->shape[1] != x->shape[1] || w->shape[4] != blk || w->shape[5] != blk))
        return hc_node_fail(n, HC_ERR_INVALID, err,
                            "weight [%lld, %lld, %lld, %lld, %lld, %lld] does not fit input "
                            "blocks [%lld x %lld]",
                            (long long)w->shape[0], (long long)w->shape[1], (long long)w->shape[2],
                            (long long)w->shape[3], (long long)w->shape[4], (long long)w->shape[5],
                            (long long)x->shape[1], (long long)blk);
    if (b && (b->ndim != 2 || b->shape[0] != w->shape[0] || b->shape[1] != blk))
        return hc_node_fail(n, HC_ERR_INVALID, err, "bias '%s' must be [%lld, %lld]", b->name,
                            (long long)w->shape[0], (long long)blk);
    if (x->dtype != w->dtype || (b && b->dtype != x->dtype) || !hc_dtype_is_float(x->dtype))
        return hc_node_fail(n, HC_ERR_INVALID, err, "inputs must share one float dtype");
    *s = (hc_conv_nchwc_shape){.n = x->shape[0], .cb = x->shape[1], .h = x->shape[2],
                               .w = x->shape[3], .mb = w->shape[0], .kh = w->shape[2],
                               .kw = w->shape[3], .block = (int)blk, .bias = b != NULL,
                               .depthwise = dw, .nchw_in = nchw_in};
    return geometry(n, s, err);
}

/* Strides, dilations, pads and the output size of s (its input and kernel sizes set). */
static hc_status geometry(const hc_node *n, hc_conv_nchwc_shape *s, hc_error *err) {
    int64_t st[2] = {1, 1}, dl[2] = {1, 1};
    if (pair(n, "strides", st, err) || pair(n, "dilations", dl, err)) return err->status;
    int cnt = 0;
    const int64_t *p = hc_node_attr_ints(n, "pads", &cnt);
    if (p && cnt != 4)
        return hc_node_fail(n, HC_ERR_INVALID, err, "pads has %d values, expected 4", cnt);
    int64_t pads[4] = {0, 0, 0, 0};
    for (int i = 0; p && i < 4; i++) pads[i] = p[i];
    s->sh = st[0], s->sw = st[1], s->dh = dl[0], s->dw = dl[1];
    s->pt = pads[0], s->pl = pads[1], s->pb = pads[2], s->pr = pads[3];
    int64_t eh = (s->kh - 1) * s->dh + 1, ew = (s->kw - 1) * s->dw + 1;
    int64_t rh = s->h + s->pt + s->pb - eh, rw = s->w + s->pl + s->pr - ew;
    for (int i = 0; i < 4; i++)
        if (pads[i] < 0) return hc_node_fail(n, HC_ERR_INVALID, err, "pads must be >= 0");
    if (rh < 0 || rw < 0)
        return hc_node_fail(n, HC_ERR_INVALID, err, "the window does not fit the input");
    s->oh = rh / s->sh + 1, s->ow = rw / s->sw + 1;
    return HC_OK;
}

static hc_status infer_conv_nchwc(hc_node *n, hc_error *err) {
    hc_conv_nchwc_shape s;
    if (hc_conv_nchwc_shape_of(n, &s, err)) return err->status;
    int64_t shape[5] = {s.n, s.mb, s.oh, s.ow, s.block};
    hc_node_set_output(n, 0, n->inputs[0]->dtype, 5, shape);
    return HC_OK;
}

typedef struct conv_ctx {
    const hc_tnode *x, *w, *b;
    hc_conv_nchwc_shape s;
    hc_var *const *o;
} conv_ctx;

/* Output pixel (o[2], o[3])'s tap (r[1], r[2]) in the input: whether it lies inside (the
 * result) and its position clamped into the input (pos), so that the read is in bounds
 * where a select discards it. Shared by CONV_NCHWC's and CONV_NCHWC_Q8's Tasks. */
static hc_expr *tap_pos(hc_arena *a, const hc_conv_nchwc_shape *s, hc_var *const *o,
                        hc_var *const *r, hc_expr **pos) {
    hc_expr *ok = NULL;
    const int64_t st[2] = {s->sh, s->sw}, dl[2] = {s->dh, s->dw}, pb[2] = {s->pt, s->pl};
    const int64_t in[2] = {s->h, s->w};
    for (int i = 0; i < 2; i++) {
        hc_expr *p = hc_add(a, hc_mul(a, hc_ref(a, o[2 + i]), hc_int(a, st[i])),
                            hc_mul(a, hc_ref(a, r[1 + i]), hc_int(a, dl[i])));
        p = hc_sub(a, p, hc_int(a, pb[i]));
        hc_expr *inside = hc_and(a, hc_le(a, hc_int(a, 0), p), hc_lt(a, p, hc_int(a, in[i])));
        ok = ok ? hc_and(a, ok, inside) : inside;
        pos[i] = hc_min(a, hc_max(a, p, hc_int(a, 0)), hc_int(a, in[i] - 1));
    }
    return ok;
}

/* r = (c, i, j): input channel c (block c / b, lane c % b; NCHW input: channel c), tap
 * (i, j) */
static hc_expr *conv_term(hc_arena *a, hc_var *const *r, void *vctx) {
    const conv_ctx *c = vctx;
    const hc_conv_nchwc_shape *s = &c->s;
    hc_expr *ch = hc_ref(a, r[0]);
    hc_expr *pos[2], *ok = tap_pos(a, s, c->o, r, pos);
    if (s->nchw_in) {
        hc_expr *x4[4] = {hc_ref(a, c->o[0]), ch, pos[0], pos[1]};
        hc_expr *w6[6] = {hc_ref(a, c->o[1]), ch, hc_ref(a, r[1]), hc_ref(a, r[2]),
                          hc_int(a, 0), hc_ref(a, c->o[4])};
        hc_expr *prod = hc_mul(a, hc_at(a, c->x, x4), hc_at(a, c->w, w6));
        return hc_select(a, ok, prod, hc_const_num(a, c->x->dtype, 0));
    }
    hc_expr *blk = hc_int(a, s->block);
    hc_expr *cb = hc_div(a, ch, blk), *l = hc_mod(a, ch, blk);
    hc_expr *xi[5] = {hc_ref(a, c->o[0]), cb, pos[0], pos[1], l};
    hc_expr *wi[6] = {hc_ref(a, c->o[1]), cb, hc_ref(a, r[1]), hc_ref(a, r[2]), l,
                      hc_ref(a, c->o[4])};
    if (s->depthwise) { /* channel (o, m) of the output reads channel (o, m) of the input */
        xi[1] = hc_ref(a, c->o[1]), xi[4] = hc_ref(a, c->o[4]);
        wi[1] = hc_int(a, 0), wi[4] = hc_int(a, 0);
    }
    hc_expr *prod = hc_mul(a, hc_at(a, c->x, xi), hc_at(a, c->w, wi));
    return hc_select(a, ok, prod, hc_const_num(a, c->x->dtype, 0));
}

static hc_expr *conv_out(hc_arena *a, hc_var *const *axes, void *vctx) {
    conv_ctx *c = vctx;
    c->o = axes;
    int64_t ext[3] = {c->s.depthwise ? 1 : c->s.cb * hc_conv_nchwc_in_lanes(&c->s), c->s.kh,
                      c->s.kw};
    hc_expr *v = hc_reduce_expr(a, 3, ext, conv_term, c, HC_REDUCE_SUM);
    if (c->b) v = hc_add(a, v, hc_at(a, c->b, (hc_expr *[]){hc_ref(a, axes[1]), hc_ref(a, axes[4])}));
    return v;
}

static hc_task *task_conv_nchwc(hc_arena *a, const hc_node *n, hc_error *err) {
    conv_ctx c = {0};
    if (hc_conv_nchwc_shape_of(n, &c.s, err)) return NULL;
    int nin = 0;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    c.x = in[0], c.w = in[1], c.b = nin > 2 ? in[2] : NULL;
    const hc_tensor *y = n->outputs[0];
    hc_tnode *out = hc_compute(a, y->name, 5, y->shape, conv_out, &c);
    return hc_node_task(a, n, nin, in, 1, &out);
}

/* ---- CONV_NCHWC_Q8: the int8 conv of a QDQ model (passes/qconv.c) -------------------- */
/* X [N, CB, H, W, b] f32 (a DequantizeLinear's values: (q - zx) * sx), W [MB, CB, KH, KW,
 * b/4, b, 4] i8 (W[o, ci, i, j, g, m, k] = weight (o*b + m, ci*b + 4g + k, i, j)), K, S, B
 * [MB, b] (i32, f32, f32); attrs x_scale (sx), x_zero (z: the zero point, + 128 for int8
 * activations), the conv's strides, dilations, pads:
 *   u(x) = round_half_even(x * f32(1 / sx)) + z      (the u8 value; padding reads z)
 *   Y[n, o, y, x, m] = S[o, m] * f32(K[o, m] + sum_{c, i, j} u(Xpad) * W) + B[o, m]
 * with K = -z * sum(W[o, ...]): the sum over the taps inside X of (q - zx) * w, in int32. */
hc_status hc_conv_q8_shape_of(const hc_node *n, hc_conv_nchwc_shape *s, hc_error *err) {
    if (need_rank(n, 0, 5, err) || need_rank(n, 1, 7, err) || need_rank(n, 2, 2, err) ||
        need_rank(n, 3, 2, err) || need_rank(n, 4, 2, err))
        return err->status;
    const hc_tensor *x = n->inputs[0], *w = n->inputs[1];
    int64_t blk = x->shape[4];
    if (x->dtype != HC_F32 || w->dtype != HC_I8 || n->inputs[2]->dtype != HC_I32 ||
        n->inputs[3]->dtype != HC_F32 || n->inputs[4]->dtype != HC_F32)
        return hc_node_fail(n, HC_ERR_INVALID, err, "inputs must be f32, i8, i32, f32, f32");
    if (blk % 4 || w->shape[1] != x->shape[1] || w->shape[4] != blk / 4 || w->shape[5] != blk ||
        w->shape[6] != 4)
        return hc_node_fail(n, HC_ERR_INVALID, err, "weight does not fit input blocks of %lld",
                            (long long)blk);
    for (int i = 2; i < 5; i++)
        if (n->inputs[i]->shape[0] != w->shape[0] || n->inputs[i]->shape[1] != blk)
            return hc_node_fail(n, HC_ERR_INVALID, err, "input %d must be [%lld, %lld]", i,
                                (long long)w->shape[0], (long long)blk);
    if (!(hc_node_attr_float(n, "x_scale", 0) > 0))
        return hc_node_fail(n, HC_ERR_INVALID, err, "x_scale must be positive");
    int64_t z = hc_node_attr_int(n, "x_zero", 0);
    if (z < 0 || z > 255) return hc_node_fail(n, HC_ERR_INVALID, err, "x_zero %lld", (long long)z);
    *s = (hc_conv_nchwc_shape){.n = x->shape[0], .cb = x->shape[1], .h = x->shape[2],
                               .w = x->shape[3], .mb = w->shape[0], .kh = w->shape[2],
                               .kw = w->shape[3], .block = (int)blk, .bias = true};
    return geometry(n, s, err);
}

static hc_status infer_conv_q8(hc_node *n, hc_error *err) {
    hc_conv_nchwc_shape s;
    if (hc_conv_q8_shape_of(n, &s, err)) return err->status;
    int64_t shape[5] = {s.n, s.mb, s.oh, s.ow, s.block};
    hc_node_set_output(n, 0, HC_F32, 5, shape);
    return HC_OK;
}

typedef struct q8_ctx {
    const hc_tnode *x, *w, *k, *s, *b;
    hc_conv_nchwc_shape g;
    float inv;
    int64_t z;
    hc_var *const *o;
} q8_ctx;

/* r = (c, i, j): u(X) * W as i32 */
static hc_expr *q8_term(hc_arena *a, hc_var *const *r, void *vctx) {
    const q8_ctx *c = vctx;
    const hc_conv_nchwc_shape *s = &c->g;
    hc_expr *ch = hc_ref(a, r[0]), *blk = hc_int(a, s->block);
    hc_expr *cb = hc_div(a, ch, blk), *l = hc_mod(a, ch, blk);
    hc_expr *pos[2], *ok = tap_pos(a, s, c->o, r, pos);
    hc_expr *xi[5] = {hc_ref(a, c->o[0]), cb, pos[0], pos[1], l};
    hc_expr *q = hc_math(a, HC_PRIM_ROUND, hc_mul(a, hc_at(a, c->x, xi), hc_f32(a, c->inv)), NULL);
    hc_expr *u = hc_add(a, hc_cast(a, hc_type_scalar(HC_I32), q), hc_const_num(a, HC_I32, (double)c->z));
    u = hc_select(a, ok, u, hc_const_num(a, HC_I32, (double)c->z));
    hc_expr *wi[7] = {hc_ref(a, c->o[1]), cb, hc_ref(a, r[1]), hc_ref(a, r[2]),
                      hc_div(a, l, hc_int(a, 4)), hc_ref(a, c->o[4]), hc_mod(a, l, hc_int(a, 4))};
    return hc_mul(a, u, hc_cast(a, hc_type_scalar(HC_I32), hc_at(a, c->w, wi)));
}

static hc_expr *q8_out(hc_arena *a, hc_var *const *axes, void *vctx) {
    q8_ctx *c = vctx;
    c->o = axes;
    int64_t ext[3] = {c->g.cb * c->g.block, c->g.kh, c->g.kw};
    hc_expr *om[2] = {hc_ref(a, axes[1]), hc_ref(a, axes[4])};
    hc_expr *acc = hc_add(a, hc_reduce_expr(a, 3, ext, q8_term, c, HC_REDUCE_SUM),
                          hc_at(a, c->k, om));
    hc_expr *v = hc_mul(a, hc_at(a, c->s, om), hc_cast(a, hc_type_scalar(HC_F32), acc));
    return hc_add(a, v, hc_at(a, c->b, om));
}

static hc_task *task_conv_q8(hc_arena *a, const hc_node *n, hc_error *err) {
    q8_ctx c = {0};
    if (hc_conv_q8_shape_of(n, &c.g, err)) return NULL;
    int nin = 0;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    c.x = in[0], c.w = in[1], c.k = in[2], c.s = in[3], c.b = in[4];
    c.inv = (float)(1.0 / hc_node_attr_float(n, "x_scale", 1));
    c.z = hc_node_attr_int(n, "x_zero", 0);
    const hc_tensor *y = n->outputs[0];
    hc_tnode *out = hc_compute(a, y->name, 5, y->shape, q8_out, &c);
    return hc_node_task(a, n, nin, in, 1, &out);
}

const hc_op_def hc_ops_nchwc[] = {
    {HC_OPK_TO_NCHWC, infer_to_nchwc, task_to_nchwc},
    {HC_OPK_FROM_NCHWC, infer_from_nchwc, task_from_nchwc},
    {HC_OPK_CONV_NCHWC, infer_conv_nchwc, task_conv_nchwc},
    {HC_OPK_CONV_NCHWC_Q8, infer_conv_q8, task_conv_q8},
    {HC_OPK_COUNT, NULL, NULL},
};
