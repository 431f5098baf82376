/* internal.c — operators that only graph passes create (no ONNX name).
 *
 * IM2COL: x [N, C, H, W] -> columns [N, C*KH*KW, OH*OW] for a 2-D convolution with the
 * attributes kernel_shape [KH, KW], strides, pads [top, left, bottom, right] and
 * dilations (explicit: the lowering pass resolves auto_pad). Row r = (c, kh, kw) and
 * column p = (oh, ow) hold x[n, c, oh*sh - top + kh*dh, ow*sw - left + kw*dw], or 0 in
 * the padding, so that the convolution is the matmul W[OC, C*KH*KW] x columns. With
 * squeeze_batch = 1 (N must be 1) the columns are [C*KH*KW, OH*OW]: a plain 2-D matmul
 * operand, without a Reshape kernel in between. */
#include "graph/graph.h"

typedef struct im2col_geom {
    int64_t k[2], s[2], d[2], pad[4];
    int64_t in[2], out[2];
} im2col_geom;

static hc_status attr_pair(const hc_node *n, const char *name, int64_t dflt, int64_t *out,
                           hc_error *err) {
    int cnt = 0;
    const int64_t *v = hc_node_attr_ints(n, name, &cnt);
    if (!v) {
        out[0] = out[1] = dflt;
        return HC_OK;
    }
    if (cnt != 2)
        return hc_error_set(err, HC_ERR_INVALID, "node '%s' (Im2Col): %s has %d values, expected 2",
                            n->name, name, cnt);
    out[0] = v[0];
    out[1] = v[1];
    return HC_OK;
}

static hc_status geometry(const hc_node *n, im2col_geom *g, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    if (x->ndim != 4)
        return hc_error_set(err, HC_ERR_INVALID,
                            "node '%s' (Im2Col): input has rank %d, expected 4",
                            n->name, x->ndim);
    if (!hc_node_attr_ints(n, "kernel_shape", NULL))
        return hc_error_set(err, HC_ERR_INVALID, "node '%s' (Im2Col): kernel_shape missing",
                            n->name);
    hc_status st = attr_pair(n, "kernel_shape", 1, g->k, err);
    if (st == HC_OK) st = attr_pair(n, "strides", 1, g->s, err);
    if (st == HC_OK) st = attr_pair(n, "dilations", 1, g->d, err);
    if (st != HC_OK) return st;
    int cnt = 0;
    const int64_t *p = hc_node_attr_ints(n, "pads", &cnt);
    if (p && cnt != 4)
        return hc_error_set(err, HC_ERR_INVALID,
                            "node '%s' (Im2Col): pads has %d values, expected 4",
                            n->name, cnt);
    for (int i = 0; i < 4; i++) g->pad[i] = p ? p[i] : 0;
    for (int i = 0; i < 2; i++) {
        g->in[i] = x->shape[2 + i];
        int64_t span = (g->k[i] - 1) * g->d[i] + 1;
        int64_t room = g->in[i] + g->pad[i] + g->pad[i + 2] - span;
        if (g->k[i] < 1 || g->s[i] < 1 || g->d[i] < 1 || room < 0)
            return hc_error_set(err, HC_ERR_INVALID,
                                "node '%s' (Im2Col): window does not fit spatial dim %d",
                                n->name, i);
        g->out[i] = room / g->s[i] + 1;
    }
    return HC_OK;
}

static hc_status infer_im2col(hc_node *n, hc_error *err) {
    im2col_geom g;
    hc_status st = geometry(n, &g, err);
    if (st != HC_OK) return st;
    const hc_tensor *x = n->inputs[0];
    int64_t shape[3] = {x->shape[0], x->shape[1] * g.k[0] * g.k[1], g.out[0] * g.out[1]};
    bool squeeze = hc_node_attr_int(n, "squeeze_batch", 0) != 0;
    if (squeeze && x->shape[0] != 1)
        return hc_error_set(err, HC_ERR_INVALID,
                            "node '%s' (Im2Col): squeeze_batch with a batch of %lld", n->name,
                            (long long)x->shape[0]);
    hc_node_set_output(n, 0, x->dtype, squeeze ? 2 : 3, squeeze ? shape + 1 : shape);
    return HC_OK;
}

/* Input coordinate along spatial dim i for output position o and kernel offset k. */
static hc_expr *in_coord(hc_arena *a, const im2col_geom *g, int i, hc_expr *o, hc_expr *k) {
    hc_expr *base = hc_sub(a, hc_mul(a, o, hc_int(a, g->s[i])), hc_int(a, g->pad[i]));
    return hc_add(a, base, hc_mul(a, k, hc_int(a, g->d[i])));
}

static hc_expr *inside(hc_arena *a, hc_expr *v, int64_t extent) {
    return hc_and(a, hc_le(a, hc_int(a, 0), v), hc_lt(a, v, hc_int(a, extent)));
}

static hc_expr *clamp(hc_arena *a, hc_expr *v, int64_t extent) {
    return hc_min(a, hc_max(a, v, hc_int(a, 0)), hc_int(a, extent - 1));
}

static hc_task *task_im2col(hc_arena *a, const hc_node *n, hc_error *err) {
    im2col_geom g;
    if (geometry(n, &g, err) != HC_OK) return NULL;
    int nin = 0;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    const hc_tensor *y = n->outputs[0];
    bool squeeze = y->ndim == 2; /* squeeze_batch: no batch axis, batch index 0 */
    hc_var *ax[3] = {hc_axis(a, "n"), hc_axis(a, "r"), hc_axis(a, "p")};
    hc_var *const *oax = squeeze ? ax + 1 : ax;
    hc_expr *r = hc_ref(a, ax[1]), *p = hc_ref(a, ax[2]);
    int64_t kk = g.k[0] * g.k[1];
    hc_expr *c = hc_div(a, r, hc_int(a, kk));
    hc_expr *kh = hc_mod(a, hc_div(a, r, hc_int(a, g.k[1])), hc_int(a, g.k[0]));
    hc_expr *kw = hc_mod(a, r, hc_int(a, g.k[1]));
    hc_expr *ih = in_coord(a, &g, 0, hc_div(a, p, hc_int(a, g.out[1])), kh);
    hc_expr *iw = in_coord(a, &g, 1, hc_mod(a, p, hc_int(a, g.out[1])), kw);
    /* clamped so that the read is in bounds even where the select discards it */
    hc_expr *batch = squeeze ? hc_int(a, 0) : hc_ref(a, ax[0]);
    hc_expr *idx[4] = {batch, c, clamp(a, ih, g.in[0]), clamp(a, iw, g.in[1])};
    hc_expr *cond = hc_and(a, inside(a, ih, g.in[0]), inside(a, iw, g.in[1]));
    hc_expr *v = hc_select(a, cond, hc_at(a, in[0], idx), hc_const_num(a, y->dtype, 0));
    hc_tnode *out = hc_compute_with_axes(a, y->name, y->ndim, y->shape, oax, v);
    return hc_node_task(a, n, nin, in, 1, &out);
}

const hc_op_def hc_ops_internal[] = {
    {HC_OPK_IM2COL, infer_im2col, task_im2col, NULL},
    {HC_OPK_COUNT, NULL, NULL, NULL},
};
