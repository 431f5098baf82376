/* nn_conv.c — Conv and ConvTranspose as direct reduce definitions. The graph passes
 * lower group-1 convolutions to Im2Col + MatMul; these tasks are the oracle. Grouped and
 * depthwise 2-D f32 convolutions are scheduled by the CPU target's conv_dw template
 * (src/target/cpu/templates/ops_conv.c). */
#include <stdlib.h>
#include <string.h>

#include "graph/ops/nn_internal.h"

typedef struct conv_ctx {
    const hc_tnode *x, *w, *b;
    hc_nn_window win;
    int64_t cg, mg; /* input and output channels per group */
    bool transpose;
    hc_var *const *o; /* output axes: n, m, spatial... */
} conv_ctx;

/* Shapes shared by infer and task: fills the window and channel counts. */
static hc_status geometry(const hc_node *n, bool transpose, int xi, int wi, int bi,
                          bool check_types, hc_nn_window *w, int64_t *cg, int64_t *mg,
                          int64_t *m_out, hc_error *err) {
    if (hc_nn_need_rank(n, xi, 3, err) || (check_types && hc_nn_need_float(n, xi, err)))
        return err->status;
    const hc_tensor *x = hc_nn_in(n, xi), *wt = hc_nn_in(n, wi), *b = bi >= 0 ? hc_nn_in(n, bi) : NULL;
    if (!wt) return hc_node_fail(n, HC_ERR_INVALID, err, "the weight (input %d) is required", wi);
    memset(w, 0, sizeof *w);
    w->nsp = x->ndim - 2;
    if (wt->ndim != x->ndim)
        return hc_node_fail(n, HC_ERR_INVALID, err, "weight '%s' has rank %d, expected %d",
                            wt->name, wt->ndim, x->ndim);
    if (check_types && wt->dtype != x->dtype)
        return hc_node_fail(n, HC_ERR_INVALID, err, "weight dtype %s differs from input dtype %s",
                       hc_dtype_name(wt->dtype), hc_dtype_name(x->dtype));
    int64_t group = hc_node_attr_int(n, "group", 1), c = x->shape[1];
    if (group < 1 || c % group)
        return hc_node_fail(n, HC_ERR_INVALID, err, "group %lld does not divide the %lld input "
                       "channels", (long long)group, (long long)c);
    *cg = c / group;
    if (!transpose) {
        if (wt->shape[1] != *cg || wt->shape[0] % group)
            return hc_node_fail(n, HC_ERR_INVALID, err,
                                "weight shape [%lld, %lld, ...] does not fit "
                                "%lld input channels in %lld groups",
                                (long long)wt->shape[0], (long long)wt->shape[1], (long long)c,
                                (long long)group);
        *m_out = wt->shape[0], *mg = wt->shape[0] / group;
    } else {
        if (wt->shape[0] != c)
            return hc_node_fail(n, HC_ERR_INVALID, err, "weight has %lld input channels, input has "
                           "%lld", (long long)wt->shape[0], (long long)c);
        *mg = wt->shape[1], *m_out = wt->shape[1] * group;
    }
    if (b && (b->ndim != 1 || b->shape[0] != *m_out))
        return hc_node_fail(n, HC_ERR_INVALID, err, "bias '%s' must have shape [%lld]", b->name,
                       (long long)*m_out);
    for (int i = 0; i < w->nsp; i++) w->in[i] = x->shape[2 + i], w->kernel[i] = wt->shape[2 + i];
    return hc_nn_window_attrs(n, w, false, err);
}

hc_status hc_nn_conv_geometry(const hc_node *n, bool transpose, hc_nn_window *w, int64_t *cg,
                              int64_t *mg, int64_t *m_out, hc_error *err) {
    return geometry(n, transpose, 0, 1, 2, true, w, cg, mg, m_out, err);
}

hc_status hc_nn_conv_geometry_of(const hc_node *n, int xi, int wi, int bi, hc_nn_window *w,
                                 int64_t *cg, int64_t *mg, int64_t *m_out, hc_error *err) {
    return geometry(n, false, xi, wi, bi, false, w, cg, mg, m_out, err);
}

hc_status hc_nn_infer_conv(hc_node *n, hc_error *err) {
    hc_nn_window w;
    int64_t cg = 0, mg = 0, m = 0;
    if (hc_nn_conv_geometry(n, false, &w, &cg, &mg, &m, err) ||
        hc_nn_window_forward(n, &w, false, err))
        return err->status;
    const hc_tensor *x = hc_nn_in(n, 0);
    int64_t shape[HC_MAX_DIMS] = {x->shape[0], m};
    for (int i = 0; i < w.nsp; i++) shape[2 + i] = w.out[i];
    hc_node_set_output(n, 0, x->dtype, x->ndim, shape);
    return HC_OK;
}

/* ConvTranspose output sizes and pads (ONNX spec: output_shape wins over pads). */
static hc_status transpose_window(const hc_node *n, hc_nn_window *w, hc_error *err) {
    int k = w->nsp, cnt = 0, ocnt = 0;
    int64_t opad[HC_MAX_DIMS] = {0};
    const int64_t *op = hc_node_attr_ints(n, "output_padding", &cnt);
    if (op && cnt != k)
        return hc_node_fail(n, HC_ERR_INVALID, err, "output_padding has %d values, expected %d",
                            cnt, k);
    for (int i = 0; op && i < k; i++) opad[i] = op[i];
    const int64_t *os = hc_node_attr_ints(n, "output_shape", &ocnt);
    if (os && ocnt != k && ocnt != k + 2)
        return hc_node_fail(n, HC_ERR_INVALID, err, "output_shape has %d values, expected %d", ocnt,
                            k);
    if (os && ocnt == k + 2) os += 2;
    const char *ap = hc_node_attr_string(n, "auto_pad", "NOTSET");
    bool same = strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0;
    bool upper = strcmp(ap, "SAME_UPPER") == 0;
    if (!same && strcmp(ap, "VALID") != 0 && strcmp(ap, "NOTSET") != 0 && *ap)
        return hc_node_fail(n, HC_ERR_INVALID, err,
                            "auto_pad '%s' is not one of NOTSET, SAME_UPPER, "
                            "SAME_LOWER, VALID",
                            ap);
    for (int i = 0; i < k; i++) {
        int64_t ek = (w->kernel[i] - 1) * w->dilation[i] + 1;
        int64_t full = w->stride[i] * (w->in[i] - 1) + opad[i] + ek;
        if (strcmp(ap, "VALID") == 0) w->pad_begin[i] = w->pad_end[i] = 0;
        if (os || same) {
            w->out[i] = os ? os[i] : w->in[i] * w->stride[i];
            /* floor division, as the ONNX reference: a negative total (output_shape larger
             * than the full output) pads at the end */
            int64_t total = full - w->out[i], half = total >= 0 ? total / 2 : -((1 - total) / 2);
            w->pad_begin[i] = upper ? half : total - half;
            w->pad_end[i] = total - w->pad_begin[i];
        } else {
            w->out[i] = full - w->pad_begin[i] - w->pad_end[i];
        }
        if (w->out[i] < 1)
            return hc_node_fail(n, HC_ERR_INVALID, err, "spatial dim %d: output size %lld", i,
                           (long long)w->out[i]);
    }
    return HC_OK;
}

hc_status hc_nn_infer_conv_transpose(hc_node *n, hc_error *err) {
    hc_nn_window w;
    int64_t cg = 0, mg = 0, m = 0;
    if (hc_nn_conv_geometry(n, true, &w, &cg, &mg, &m, err) || transpose_window(n, &w, err))
        return err->status;
    const hc_tensor *x = hc_nn_in(n, 0);
    int64_t shape[HC_MAX_DIMS] = {x->shape[0], m};
    for (int i = 0; i < w.nsp; i++) shape[2 + i] = w.out[i];
    hc_node_set_output(n, 0, x->dtype, x->ndim, shape);
    return HC_OK;
}

/* One term of the forward convolution: r = (c, k1..kn). */
static hc_expr *conv_term(hc_arena *a, hc_var *const *r, void *vctx) {
    const conv_ctx *c = vctx;
    const hc_nn_window *w = &c->win;
    hc_expr *m = hc_ref(a, c->o[1]), *ok = NULL;
    hc_expr *xi[HC_MAX_DIMS], *wi[HC_MAX_DIMS];
    xi[0] = hc_ref(a, c->o[0]);
    xi[1] = hc_ref(a, r[0]);
    if (c->cg != c->x->shape[1]) /* grouped: the group of output channel m */
        xi[1] = hc_add(a, hc_mul(a, hc_div(a, m, hc_int(a, c->mg)), hc_int(a, c->cg)), xi[1]);
    wi[0] = m, wi[1] = hc_ref(a, r[0]);
    for (int i = 0; i < w->nsp; i++) {
        hc_expr *pos = hc_add(a, hc_mul(a, hc_ref(a, c->o[2 + i]), hc_int(a, w->stride[i])),
                              hc_mul(a, hc_ref(a, r[1 + i]), hc_int(a, w->dilation[i])));
        pos = hc_sub(a, pos, hc_int(a, w->pad_begin[i]));
        int64_t last = (w->out[i] - 1) * w->stride[i] - w->pad_begin[i] +
                       (w->kernel[i] - 1) * w->dilation[i];
        if (w->pad_begin[i] > 0) ok = hc_nn_and(a, ok, hc_le(a, hc_int(a, 0), pos));
        if (last >= w->in[i]) ok = hc_nn_and(a, ok, hc_lt(a, pos, hc_int(a, w->in[i])));
        xi[2 + i] = pos;
        wi[2 + i] = hc_ref(a, r[1 + i]);
    }
    hc_expr *prod = hc_mul(a, hc_at(a, c->x, xi), hc_at(a, c->w, wi));
    return hc_nn_guard(a, ok, prod, hc_const_num(a, c->x->dtype, 0));
}

/* One term of the transposed convolution: output o reads input i where
 * o + pad - k * dilation == i * stride. */
static hc_expr *conv_transpose_term(hc_arena *a, hc_var *const *r, void *vctx) {
    const conv_ctx *c = vctx;
    const hc_nn_window *w = &c->win;
    hc_expr *m = hc_ref(a, c->o[1]), *ok = NULL;
    hc_expr *ci = hc_ref(a, r[0]), *mi = m;
    if (c->cg != c->x->shape[1]) {
        hc_expr *g = hc_div(a, m, hc_int(a, c->mg));
        ci = hc_add(a, hc_mul(a, g, hc_int(a, c->cg)), ci);
        mi = hc_mod(a, m, hc_int(a, c->mg));
    }
    hc_expr *xi[HC_MAX_DIMS] = {hc_ref(a, c->o[0]), ci}, *wi[HC_MAX_DIMS] = {ci, mi};
    for (int i = 0; i < w->nsp; i++) {
        hc_expr *t = hc_add(a, hc_ref(a, c->o[2 + i]), hc_int(a, w->pad_begin[i]));
        t = hc_sub(a, t, hc_mul(a, hc_ref(a, r[1 + i]), hc_int(a, w->dilation[i])));
        ok = hc_nn_and(a, ok, hc_le(a, hc_int(a, 0), t));
        hc_expr *s = hc_int(a, w->stride[i]);
        if (w->stride[i] > 1) ok = hc_nn_and(a, ok, hc_eq(a, hc_mod(a, t, s), hc_int(a, 0)));
        hc_expr *in = w->stride[i] > 1 ? hc_div(a, t, s) : t;
        ok = hc_nn_and(a, ok, hc_lt(a, in, hc_int(a, w->in[i])));
        xi[2 + i] = in;
        wi[2 + i] = hc_ref(a, r[1 + i]);
    }
    hc_expr *prod = hc_mul(a, hc_at(a, c->x, xi), hc_at(a, c->w, wi));
    return hc_nn_guard(a, ok, prod, hc_const_num(a, c->x->dtype, 0));
}

static hc_expr *conv_out(hc_arena *a, hc_var *const *axes, void *vctx) {
    conv_ctx *c = vctx;
    c->o = axes;
    int64_t ext[HC_MAX_DIMS] = {c->cg};
    for (int i = 0; i < c->win.nsp; i++) ext[1 + i] = c->win.kernel[i];
    hc_expr *v = hc_reduce_expr(a, 1 + c->win.nsp, ext,
                                c->transpose ? conv_transpose_term : conv_term, c,
                                HC_REDUCE_SUM);
    if (c->b) v = hc_add(a, v, hc_at(a, c->b, (hc_expr *[]){hc_ref(a, axes[1])}));
    return v;
}

static hc_task *conv_task(hc_arena *a, const hc_node *n, bool transpose, hc_error *err) {
    conv_ctx c = {.transpose = transpose};
    int64_t m;
    if (hc_nn_conv_geometry(n, transpose, &c.win, &c.cg, &c.mg, &m, err)) return NULL;
    if (transpose ? transpose_window(n, &c.win, err) : hc_nn_window_forward(n, &c.win, false, err))
        return NULL;
    int nin = 0;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    c.x = in[0], c.w = in[1], c.b = nin > 2 ? in[2] : NULL;
    const hc_tensor *y = n->outputs[0];
    hc_tnode *out = hc_compute(a, y->name, y->ndim, y->shape, conv_out, &c);
    return hc_node_task(a, n, nin, in, 1, &out);
}

hc_task *hc_nn_task_conv(hc_arena *a, const hc_node *n, hc_error *err) {
    return conv_task(a, n, false, err);
}

hc_task *hc_nn_task_conv_transpose(hc_arena *a, const hc_node *n, hc_error *err) {
    return conv_task(a, n, true, err);
}
