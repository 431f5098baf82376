/* nn_norm.c — BatchNormalization (inference), InstanceNormalization,
 * LayerNormalization, LpNormalization, MeanVarianceNormalization and LRN. */
#include <string.h>

#include "graph/ops/nn_internal.h"

/* ---- shared pieces ------------------------------------------------------------------ */
/* x viewed so that a per-channel vector (shape [C]) broadcasts along dim 1 of a rank-r
 * tensor: reshaped to [C, 1, ..., 1] (r - 1 dims), cast to dtype. */
static hc_tnode *channel_view(hc_arena *a, const hc_tnode *v, int rank, hc_dtype dtype,
                              hc_error *err) {
    int64_t shape[HC_MAX_DIMS];
    shape[0] = v->shape[0];
    for (int i = 1; i < rank - 1; i++) shape[i] = 1;
    hc_tnode *r = hc_compute_reshape(a, hc_arena_printf(a, "%s_c", v->name), v, rank - 1, shape,
                                     err);
    if (r && v->dtype != dtype) r = hc_compute_cast(a, hc_arena_printf(a, "%s_f", v->name), r,
                                                    dtype);
    return r;
}

/* Input i must be 1-D with `len` elements. */
static hc_status need_vector(const hc_node *n, int i, int64_t len, hc_error *err) {
    const hc_tensor *t = hc_nn_in(n, i);
    if (!t || t->ndim != 1 || t->shape[0] != len)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input %d ('%s') must have shape [%lld]", i,
                       t ? t->name : "", (long long)len);
    if (!hc_dtype_is_float(t->dtype))
        return hc_node_fail(n, HC_ERR_INVALID, err, "input %d ('%s') must be a float tensor", i,
                       t->name);
    return HC_OK;
}

static hc_expr *rsqrt_eps(hc_arena *a, hc_expr *v, void *ctx) {
    double eps = *(const double *)ctx;
    hc_dtype t = v->type->dtype;
    hc_expr *s = hc_math(a, HC_PRIM_SQRT, hc_add(a, v, hc_const_num(a, t, eps)), NULL);
    return hc_div(a, hc_const_num(a, t, 1), s);
}

/* Mean and variance of x over `axes` (kept as size-1 dims) and the centred x. */
typedef struct moments {
    hc_tnode *mean, *centred, *var;
} moments;

static bool moments_of(hc_arena *a, const hc_tnode *x, int naxes, const int *axes, moments *m,
                       hc_error *err) {
    m->mean = hc_compute_reduce(a, "mean", x, naxes, axes, true, HC_REDUCE_AVG, err);
    if (!m->mean) return false;
    m->centred = hc_compute_binop(a, "centred", HC_OP_SUB, x, m->mean, err);
    hc_tnode *sq = m->centred ? hc_compute_binop(a, "sq", HC_OP_MUL, m->centred, m->centred, err)
                              : NULL;
    m->var = sq ? hc_compute_reduce(a, "var", sq, naxes, axes, true, HC_REDUCE_AVG, err) : NULL;
    return m->var != NULL;
}

/* Output tnode named after the node's output i. */
static hc_tnode *named(hc_arena *a, const hc_node *n, int i, hc_tnode *t) {
    if (t) t->name = n->outputs[i]->name;
    return t;
}

/* ---- BatchNormalization ------------------------------------------------------------- */
hc_status hc_nn_infer_batch_norm(hc_node *n, hc_error *err) {
    if (hc_nn_need_rank(n, 0, 2, err) || hc_nn_need_float(n, 0, err)) return err->status;
    const hc_tensor *x = hc_nn_in(n, 0);
    if (hc_node_attr_int(n, "training_mode", 0) != 0) { /* 14+: lowered (passes/batchnorm.c) */
        if (n->noutputs > 3)
            return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "training mode with %d outputs "
                                "(Y, running_mean, running_var are supported)", n->noutputs);
        for (int i = 1; i < 5; i++)
            if (need_vector(n, i, x->shape[1], err)) return err->status;
        hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
        for (int i = 1; i < n->noutputs; i++)
            if (hc_nn_out_present(n, i)) hc_node_set_output(n, i, x->dtype, 1, &x->shape[1]);
        return HC_OK;
    }
    if (hc_node_attr_int(n, "spatial", 1) != 1)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "spatial=0 is not supported");
    /* versions 1 and 6: training (the batch's statistics) unless is_test (default 0; the
     * importer marks legacy_training) */
    if (hc_node_attr_int(n, "legacy_training", 0))
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "is_test is 0 (training mode, opset %d; "
                            "only inference is supported)", n->opset);
    for (int i = 1; i < n->noutputs; i++)
        if (hc_nn_out_present(n, i))
            return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "training-mode outputs (running mean "
                           "and variance) are not supported");
    for (int i = 1; i < 5; i++)
        if (need_vector(n, i, x->shape[1], err)) return err->status;
    hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
    return HC_OK;
}

typedef struct bn_ctx {
    double eps;
} bn_ctx;

static hc_expr *bn_fn(hc_arena *a, hc_expr *const *v, void *vctx) {
    const bn_ctx *c = vctx;
    hc_dtype t = v[0]->type->dtype;
    hc_expr *den = hc_math(a, HC_PRIM_SQRT, hc_add(a, v[4], hc_const_num(a, t, c->eps)), NULL);
    hc_expr *y = hc_div(a, hc_sub(a, v[0], v[3]), den);
    return hc_add(a, hc_mul(a, y, v[1]), v[2]);
}

hc_task *hc_nn_task_batch_norm(hc_arena *a, const hc_node *n, hc_error *err) {
    if (hc_node_attr_int(n, "training_mode", 0) != 0) {
        hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "training mode has no Task of its own: the "
                     "lower_batchnorm_training pass rewrites it into reductions first");
        return NULL;
    }
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    const hc_tnode *xs[5] = {in[0]};
    for (int i = 1; i < 5; i++)
        if (!(xs[i] = channel_view(a, in[i], in[0]->ndim, in[0]->dtype, err))) return NULL;
    bn_ctx c = {hc_node_attr_float(n, "epsilon", 1e-5)};
    hc_tnode *y = named(a, n, 0, hc_compute_mapn(a, "y", 5, xs, bn_fn, &c, err));
    return y ? hc_node_task(a, n, nin, in, 1, &y) : NULL;
}

/* ---- InstanceNormalization ---------------------------------------------------------- */
hc_status hc_nn_infer_instance_norm(hc_node *n, hc_error *err) {
    if (hc_nn_need_rank(n, 0, 3, err) || hc_nn_need_float(n, 0, err)) return err->status;
    const hc_tensor *x = hc_nn_in(n, 0);
    if (need_vector(n, 1, x->shape[1], err) || need_vector(n, 2, x->shape[1], err))
        return err->status;
    hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
    return HC_OK;
}

static hc_expr *scale_shift(hc_arena *a, hc_expr *const *v, void *ctx) {
    (void)ctx; /* v: centred, inverse std, scale, bias */
    return hc_add(a, hc_mul(a, hc_mul(a, v[0], v[1]), v[2]), v[3]);
}

hc_task *hc_nn_task_instance_norm(hc_arena *a, const hc_node *n, hc_error *err) {
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    const hc_tnode *x = in[0];
    int axes[HC_MAX_DIMS], nax = x->ndim - 2;
    for (int i = 0; i < nax; i++) axes[i] = 2 + i;
    moments m;
    double eps = hc_node_attr_float(n, "epsilon", 1e-5);
    if (!moments_of(a, x, nax, axes, &m, err)) return NULL;
    hc_tnode *inv = hc_compute_map1(a, "inv_std", m.var, rsqrt_eps, &eps);
    const hc_tnode *xs[4] = {m.centred, inv, channel_view(a, in[1], x->ndim, x->dtype, err),
                             channel_view(a, in[2], x->ndim, x->dtype, err)};
    if (!xs[2] || !xs[3]) return NULL;
    hc_tnode *y = named(a, n, 0, hc_compute_mapn(a, "y", 4, xs, scale_shift, NULL, err));
    return y ? hc_node_task(a, n, nin, in, 1, &y) : NULL;
}

/* ---- LayerNormalization ------------------------------------------------------------- */
/* Normalized dims [axis, rank); Mean and InvStdDev keep them as size 1. */
static hc_status layer_norm_axis(const hc_node *n, int *axis, hc_error *err) {
    const hc_tensor *x = hc_nn_in(n, 0);
    return hc_node_axis(n, hc_node_attr_int(n, "axis", -1), x->ndim, axis, err);
}

/* Computation dtype: stash_type 1 computes in f32. */
static hc_dtype layer_norm_stash(const hc_node *n) {
    return hc_node_attr_int(n, "stash_type", 1) == 1 ? HC_F32 : hc_nn_in(n, 0)->dtype;
}

hc_status hc_nn_infer_layer_norm(hc_node *n, hc_error *err) {
    int axis;
    if (hc_nn_need_rank(n, 0, 1, err) || hc_nn_need_float(n, 0, err) ||
        layer_norm_axis(n, &axis, err))
        return err->status;
    const hc_tensor *x = hc_nn_in(n, 0);
    int nd;
    int64_t bs[HC_MAX_DIMS];
    for (int i = 1; i < 3; i++) {
        const hc_tensor *p = hc_nn_in(n, i);
        if (!p) continue;
        if (p->ndim > x->ndim - axis ||
            hc_broadcast_shape(x->ndim, x->shape, p->ndim, p->shape, &nd, bs, NULL) ||
            memcmp(bs, x->shape, sizeof(int64_t) * (size_t)x->ndim) != 0)
            return hc_node_fail(n, HC_ERR_INVALID, err, "input %d ('%s') does not broadcast to the "
                           "normalized dims of the input", i, p->name);
    }
    hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
    int64_t st[HC_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) st[i] = i < axis ? x->shape[i] : 1;
    for (int i = 1; i < 3; i++)
        if (hc_nn_out_present(n, i)) hc_node_set_output(n, i, layer_norm_stash(n), x->ndim, st);
    return HC_OK;
}

static hc_tnode *cast_to(hc_arena *a, const hc_tnode *t, hc_dtype d) {
    if (t->dtype == d) return (hc_tnode *)t;
    return hc_compute_cast(a, hc_arena_printf(a, "%s_cast", t->name), t, d);
}

hc_task *hc_nn_task_layer_norm(hc_arena *a, const hc_node *n, hc_error *err) {
    int axis, nin;
    if (layer_norm_axis(n, &axis, err)) return NULL;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    hc_dtype xt = in[0]->dtype, ct = layer_norm_stash(n);
    const hc_tnode *x = cast_to(a, in[0], ct);
    int axes[HC_MAX_DIMS], nax = x->ndim - axis;
    for (int i = 0; i < nax; i++) axes[i] = axis + i;
    moments m;
    double eps = hc_node_attr_float(n, "epsilon", 1e-5);
    if (!moments_of(a, x, nax, axes, &m, err)) return NULL;
    hc_tnode *inv = hc_compute_map1(a, "inv_std", m.var, rsqrt_eps, &eps);
    hc_tnode *y = hc_compute_binop(a, "normed", HC_OP_MUL, m.centred, inv, err);
    const hc_tensor *bias = hc_nn_in(n, 2);
    if (y) y = hc_compute_binop(a, "scaled", HC_OP_MUL, y, cast_to(a, in[1], ct), err);
    if (y && bias) y = hc_compute_binop(a, "shifted", HC_OP_ADD, y, cast_to(a, in[2], ct), err);
    if (!y) return NULL;
    hc_tnode *outs[3];
    int nout = 0;
    outs[nout++] = named(a, n, 0, y->dtype == xt ? y : hc_compute_cast(a, "y", y, xt));
    if (hc_nn_out_present(n, 1)) outs[nout++] = named(a, n, 1, m.mean);
    if (hc_nn_out_present(n, 2)) outs[nout++] = named(a, n, 2, inv);
    return hc_node_task(a, n, nin, in, nout, outs);
}

/* ---- LpNormalization ---------------------------------------------------------------- */
hc_status hc_nn_infer_lp_norm(hc_node *n, hc_error *err) {
    int axis;
    if (hc_nn_need_rank(n, 0, 1, err) || hc_nn_need_float(n, 0, err)) return err->status;
    const hc_tensor *x = hc_nn_in(n, 0);
    if (hc_node_axis(n, hc_node_attr_int(n, "axis", -1), x->ndim, &axis, err)) return err->status;
    int64_t p = hc_node_attr_int(n, "p", 2);
    if (p != 1 && p != 2)
        return hc_node_fail(n, HC_ERR_INVALID, err, "p = %lld, expected 1 or 2", (long long)p);
    hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
    return HC_OK;
}

static hc_expr *lp_term(hc_arena *a, hc_expr *x, void *ctx) {
    return *(const int64_t *)ctx == 1 ? hc_math(a, HC_PRIM_ABS, x, NULL) : hc_mul(a, x, x);
}

/* x / norm, and 0 where the norm is 0 (a zero vector), as the ONNX reference does (from
 * ONNX 1.17: LpNormalization-22's test data), instead of 0/0 = NaN. */
static hc_expr *lp_div(hc_arena *a, hc_expr *const *v, void *ctx) {
    (void)ctx;
    hc_expr *zero = hc_const_num(a, v[0]->type->dtype, 0);
    return hc_select(a, hc_binary(a, HC_OP_EQ, v[1], zero), zero, hc_div(a, v[0], v[1]));
}

hc_task *hc_nn_task_lp_norm(hc_arena *a, const hc_node *n, hc_error *err) {
    int axis, nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    if (hc_node_axis(n, hc_node_attr_int(n, "axis", -1), in[0]->ndim, &axis, err)) return NULL;
    int64_t p = hc_node_attr_int(n, "p", 2);
    hc_tnode *t = hc_compute_map1(a, "term", in[0], lp_term, &p);
    hc_tnode *norm = hc_compute_reduce(a, "norm", t, 1, &axis, true, HC_REDUCE_SUM, err);
    if (norm && p == 2) norm = hc_compute_prim(a, "norm2", HC_PRIM_SQRT, norm);
    const hc_tnode *xs[2] = {in[0], norm};
    hc_tnode *y = norm ? hc_compute_mapn(a, "y", 2, xs, lp_div, NULL, err) : NULL;
    return y ? hc_node_task(a, n, nin, in, 1, (hc_tnode *[]){named(a, n, 0, y)}) : NULL;
}

/* ---- MeanVarianceNormalization ------------------------------------------------------ */
static hc_status mvn_axes(const hc_node *n, int *axes, int *count, hc_error *err) {
    const hc_tensor *x = hc_nn_in(n, 0);
    int cnt = 0;
    const int64_t *v = hc_node_attr_ints(n, "axes", &cnt);
    static const int64_t dflt[3] = {0, 2, 3};
    if (!v) v = dflt, cnt = 3;
    if (cnt > x->ndim)
        return hc_node_fail(n, HC_ERR_INVALID, err, "axes has %d values for a rank-%d input", cnt,
                       x->ndim);
    for (int i = 0; i < cnt; i++) {
        if (hc_node_axis(n, v[i], x->ndim, &axes[i], err)) return err->status;
        for (int j = 0; j < i; j++)
            if (axes[j] == axes[i])
                return hc_node_fail(n, HC_ERR_INVALID, err, "axes repeats axis %d", axes[i]);
    }
    *count = cnt;
    return HC_OK;
}

hc_status hc_nn_infer_mvn(hc_node *n, hc_error *err) {
    int axes[HC_MAX_DIMS], cnt;
    if (hc_nn_need_rank(n, 0, 1, err) || hc_nn_need_float(n, 0, err) ||
        mvn_axes(n, axes, &cnt, err))
        return err->status;
    const hc_tensor *x = hc_nn_in(n, 0);
    hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
    return HC_OK;
}

/* (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9), the ONNX function body; the variance is
 * clamped at 0 so that rounding cannot make the square root NaN. */
static hc_expr *mvn_fn(hc_arena *a, hc_expr *const *v, void *ctx) {
    (void)ctx; /* v: x, E[x], E[x^2] */
    hc_dtype t = v[0]->type->dtype;
    hc_expr *var = hc_sub(a, v[2], hc_mul(a, v[1], v[1]));
    var = hc_max(a, var, hc_const_num(a, t, 0));
    hc_expr *sd = hc_add(a, hc_math(a, HC_PRIM_SQRT, var, NULL), hc_const_num(a, t, 1e-9));
    return hc_div(a, hc_sub(a, v[0], v[1]), sd);
}

hc_task *hc_nn_task_mvn(hc_arena *a, const hc_node *n, hc_error *err) {
    int axes[HC_MAX_DIMS], cnt, nin;
    if (mvn_axes(n, axes, &cnt, err)) return NULL;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    hc_tnode *mean = hc_compute_reduce(a, "mean", in[0], cnt, axes, true, HC_REDUCE_AVG, err);
    hc_tnode *sq = hc_compute_binop(a, "sq", HC_OP_MUL, in[0], in[0], err);
    hc_tnode *msq = sq ? hc_compute_reduce(a, "mean_sq", sq, cnt, axes, true, HC_REDUCE_AVG, err)
                       : NULL;
    if (!mean || !msq) return NULL;
    const hc_tnode *xs[3] = {in[0], mean, msq};
    hc_tnode *y = named(a, n, 0, hc_compute_mapn(a, "y", 3, xs, mvn_fn, NULL, err));
    return y ? hc_node_task(a, n, nin, in, 1, &y) : NULL;
}

/* ---- LRN ---------------------------------------------------------------------------- */
hc_status hc_nn_infer_lrn(hc_node *n, hc_error *err) {
    if (hc_nn_need_rank(n, 0, 2, err) || hc_nn_need_float(n, 0, err)) return err->status;
    if (!hc_node_attr(n, "size") || hc_node_attr_int(n, "size", 0) < 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "size must be given and positive");
    const hc_tensor *x = hc_nn_in(n, 0);
    hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
    return HC_OK;
}

typedef struct lrn_ctx {
    const hc_tnode *x;
    int64_t size;
    double alpha, beta, bias;
    hc_var *const *o;
} lrn_ctx;

/* x[n, c - (size-1)/2 + r, ...]^2 where that channel exists. */
static hc_expr *lrn_term(hc_arena *a, hc_var *const *r, void *vctx) {
    const lrn_ctx *c = vctx;
    hc_expr *idx[HC_MAX_DIMS];
    for (int i = 0; i < c->x->ndim; i++) idx[i] = hc_ref(a, c->o[i]);
    hc_expr *ch = hc_add(a, hc_sub(a, idx[1], hc_int(a, (c->size - 1) / 2)), hc_ref(a, r[0]));
    hc_expr *ok = hc_and(a, hc_le(a, hc_int(a, 0), ch), hc_lt(a, ch, hc_int(a, c->x->shape[1])));
    idx[1] = ch;
    hc_expr *v = hc_at(a, c->x, idx);
    return hc_select(a, ok, hc_mul(a, v, v), hc_const_num(a, c->x->dtype, 0));
}

static hc_expr *lrn_out(hc_arena *a, hc_var *const *axes, void *vctx) {
    lrn_ctx *c = vctx;
    c->o = axes;
    hc_dtype t = c->x->dtype;
    hc_expr *s = hc_reduce_expr(a, 1, &c->size, lrn_term, c, HC_REDUCE_SUM);
    hc_expr *base = hc_add(a, hc_const_num(a, t, c->bias),
                           hc_mul(a, hc_const_num(a, t, c->alpha / (double)c->size), s));
    hc_expr *den = hc_math(a, HC_PRIM_POW, base, hc_const_num(a, t, c->beta));
    return hc_div(a, hc_at_axes(a, c->x, axes), den);
}

hc_task *hc_nn_task_lrn(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)err;
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    lrn_ctx c = {in[0], hc_node_attr_int(n, "size", 1), hc_node_attr_float(n, "alpha", 1e-4),
                 hc_node_attr_float(n, "beta", 0.75), hc_node_attr_float(n, "bias", 1.0), NULL};
    const hc_tensor *y = n->outputs[0];
    hc_tnode *out = hc_compute(a, y->name, y->ndim, y->shape, lrn_out, &c);
    return hc_node_task(a, n, nin, in, 1, &out);
}

/* ---- RMSNormalization (opset 23) ------------------------------------------------------ */
/* x / sqrt(mean(x^2 over [axis, rank)) + epsilon) * scale: the ONNX function body, in f32
 * when stash_type is 1 (the default), cast back to x's type at the end. The inputs and the
 * output are those of LayerNormalization without B, Mean and InvStdDev, so its infer serves
 * (axis, float input, scale broadcasting to the normalized dims). */
hc_task *hc_nn_task_rms_norm(hc_arena *a, const hc_node *n, hc_error *err) {
    int axis, nin;
    if (layer_norm_axis(n, &axis, err)) return NULL;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    hc_dtype xt = in[0]->dtype, ct = layer_norm_stash(n);
    const hc_tnode *x = cast_to(a, in[0], ct);
    int axes[HC_MAX_DIMS], nax = x->ndim - axis;
    for (int i = 0; i < nax; i++) axes[i] = axis + i;
    double eps = hc_node_attr_float(n, "epsilon", 1e-5);
    hc_tnode *sq = hc_compute_binop(a, "sq", HC_OP_MUL, x, x, err);
    hc_tnode *ms = sq ? hc_compute_reduce(a, "mean_sq", sq, nax, axes, true, HC_REDUCE_AVG, err)
                      : NULL;
    if (!ms) return NULL;
    hc_tnode *inv = hc_compute_map1(a, "inv_rms", ms, rsqrt_eps, &eps);
    hc_tnode *y = hc_compute_binop(a, "normed", HC_OP_MUL, x, inv, err);
    if (y) y = hc_compute_binop(a, "scaled", HC_OP_MUL, y, cast_to(a, in[1], ct), err);
    if (!y) return NULL;
    y = named(a, n, 0, y->dtype == xt ? y : hc_compute_cast(a, "y", y, xt));
    return hc_node_task(a, n, nin, in, 1, &y);
}

/* ---- GroupNormalization (versions 18 and 21) ------------------------------------------ */
/* Mean and variance per (instance, group of C / num_groups channels) over those channels
 * and the spatial dims; stage one in f32 when stash_type is 1 (the default; version 18 has
 * no stash_type and is computed in f32 too), cast back to x's type; then scale and bias in
 * x's type. Version 21: scale and bias per channel ([C]); version 18: per group
 * ([num_groups]), each applied to all channels of its group. */
static hc_status group_norm_groups(const hc_node *n, int64_t *groups, hc_error *err) {
    const hc_tensor *x = hc_nn_in(n, 0);
    if (!hc_node_attr(n, "num_groups"))
        return hc_node_fail(n, HC_ERR_INVALID, err, "num_groups is missing");
    *groups = hc_node_attr_int(n, "num_groups", 1);
    if (*groups <= 0 || x->shape[1] % *groups)
        return hc_node_fail(n, HC_ERR_INVALID, err, "num_groups = %lld does not divide the %lld "
                            "channels", (long long)*groups, (long long)x->shape[1]);
    return HC_OK;
}

hc_status hc_nn_infer_group_norm(hc_node *n, hc_error *err) {
    int64_t groups;
    if (hc_nn_need_rank(n, 0, 2, err) || hc_nn_need_float(n, 0, err) ||
        group_norm_groups(n, &groups, err))
        return err->status;
    const hc_tensor *x = hc_nn_in(n, 0);
    int64_t len = n->opset >= 21 ? x->shape[1] : groups;
    if (need_vector(n, 1, len, err) || need_vector(n, 2, len, err)) return err->status;
    hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
    return HC_OK;
}

typedef struct group_param_ctx {
    const hc_tnode *v;
    int64_t per_group;
} group_param_ctx;

/* v[c / per_group] at [c, 0, ..., 0] */
static hc_expr *group_param_at(hc_arena *a, hc_var *const *axes, void *vctx) {
    const group_param_ctx *c = vctx;
    hc_expr *g = hc_div(a, hc_ref(a, axes[0]), hc_int(a, c->per_group));
    return hc_at(a, c->v, &g);
}

/* scale or bias viewed as [C, 1, ..., 1] in dtype */
static hc_tnode *group_param(hc_arena *a, const hc_node *n, const hc_tnode *v, int rank,
                             int64_t channels, int64_t groups, hc_dtype dtype, hc_error *err) {
    if (n->opset >= 21) return channel_view(a, v, rank, dtype, err);
    int64_t shape[HC_MAX_DIMS];
    shape[0] = channels;
    for (int i = 1; i < rank - 1; i++) shape[i] = 1;
    group_param_ctx c = {v, channels / groups};
    hc_tnode *r = hc_compute(a, hc_arena_printf(a, "%s_c", v->name), rank - 1, shape,
                             group_param_at, &c);
    return r->dtype == dtype ? r : hc_compute_cast(a, hc_arena_printf(a, "%s_f", v->name), r,
                                                   dtype);
}

static hc_expr *mul_add(hc_arena *a, hc_expr *const *v, void *ctx) {
    (void)ctx; /* v: x, scale, bias */
    return hc_add(a, hc_mul(a, v[0], v[1]), v[2]);
}

hc_task *hc_nn_task_group_norm(hc_arena *a, const hc_node *n, hc_error *err) {
    int64_t groups;
    int nin;
    if (group_norm_groups(n, &groups, err)) return NULL;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    hc_dtype xt = in[0]->dtype, ct = layer_norm_stash(n);
    const hc_tnode *x = cast_to(a, in[0], ct);
    int64_t rest = hc_tensor_numel(n->inputs[0]) / (x->shape[0] ? x->shape[0] : 1) / groups;
    if (x->shape[0] == 0) rest = 0;
    int64_t gshape[3] = {x->shape[0], groups, rest};
    hc_tnode *xg = hc_compute_reshape(a, "grouped", x, 3, gshape, err);
    moments m;
    double eps = hc_node_attr_float(n, "epsilon", 1e-5);
    int ax = 2;
    if (!xg || !moments_of(a, xg, 1, &ax, &m, err)) return NULL;
    hc_tnode *inv = hc_compute_map1(a, "inv_std", m.var, rsqrt_eps, &eps);
    hc_tnode *normed = hc_compute_binop(a, "normed", HC_OP_MUL, m.centred, inv, err);
    if (normed) normed = hc_compute_reshape(a, "normed_x", normed, x->ndim, x->shape, err);
    if (!normed) return NULL;
    if (normed->dtype != xt) normed = hc_compute_cast(a, "normed_t", normed, xt);
    const hc_tnode *xs[3] = {normed,
                             group_param(a, n, in[1], x->ndim, x->shape[1], groups, xt, err),
                             group_param(a, n, in[2], x->ndim, x->shape[1], groups, xt, err)};
    if (!xs[1] || !xs[2]) return NULL;
    hc_tnode *y = named(a, n, 0, hc_compute_mapn(a, "y", 3, xs, mul_add, NULL, err));
    return y ? hc_node_task(a, n, nin, in, 1, &y) : NULL;
}
