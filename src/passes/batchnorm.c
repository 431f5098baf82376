/* batchnorm.c — BatchNormalization (inference) folded into the Conv, Gemm or MatMul
 * before it: y = (x - mean) * s + beta with s = scale / sqrt(var + eps) is linear per
 * channel, so it moves into the producer's weights (scaled per output channel) and bias.
 * Only when the producer's output feeds nothing but the BN and its weights are constant;
 * new weights are new constants (the old ones may be shared). */
#include <math.h>
#include <string.h>

#include "passes/pass_util.h"

typedef struct bn_params {
    int64_t c;       /* channels */
    double *s;       /* scale / sqrt(var + eps) */
    double *shift;   /* beta - mean * s */
} bn_params;

static bool is_float_const(const hc_tensor *t) {
    return t && t->data && hc_dtype_is_float(t->dtype);
}

/* The BN's per-channel affine map, or false when its parameters are not usable. */
static bool bn_read(const hc_node *bn, bn_params *p) {
    if (bn->ninputs != 5) return false;
    for (int i = 1; i < 5; i++)
        if (!is_float_const(bn->inputs[i])) return false;
    for (int i = 1; i < bn->noutputs; i++)
        if (bn->outputs[i]) return false; /* training outputs: not an inference BN */
    if (hc_node_attr_int(bn, "training_mode", 0) != 0) return false;
    if (hc_node_attr_int(bn, "spatial", 1) != 1) return false;
    const hc_tensor *x = bn->inputs[0];
    if (x->ndim < 2 || !x->shape_known) return false;
    p->c = x->shape[1];
    for (int i = 1; i < 5; i++)
        if (hc_tensor_numel(bn->inputs[i]) != p->c) return false;
    double eps = hc_node_attr_float(bn, "epsilon", 1e-5);
    p->s = hc_xmalloc(sizeof(double) * (size_t)p->c);
    p->shift = hc_xmalloc(sizeof(double) * (size_t)p->c);
    for (int64_t k = 0; k < p->c; k++) {
        double scale = hc_tensor_const_at(bn->inputs[1], k);
        double beta = hc_tensor_const_at(bn->inputs[2], k);
        double mean = hc_tensor_const_at(bn->inputs[3], k);
        double var = hc_tensor_const_at(bn->inputs[4], k);
        p->s[k] = scale / sqrt(var + eps);
        p->shift[k] = beta - mean * p->s[k];
    }
    return true;
}

/* w scaled by s along dimension `axis` (the output channel), as a new constant. */
static hc_tensor *scale_weight(hc_graph *g, const hc_tensor *w, int axis, const double *s) {
    int64_t n = hc_tensor_numel(w), inner = 1;
    for (int d = axis + 1; d < w->ndim; d++) inner *= w->shape[d];
    int64_t c = w->shape[axis];
    char *name = hc_arena_printf(&g->arena, "%s_bnfold", w->name);
    if (w->dtype == HC_F32) { /* the common case, directly: models have millions of weights */
        hc_tensor *t = hc_graph_constant(g, name, w->dtype, w->ndim, w->shape, NULL);
        const float *src = w->data;
        float *dst = t->data;
        for (int64_t base = 0; base < n; base += c * inner) /* [outer, c, inner] */
            for (int64_t k = 0; k < c; k++)
                for (int64_t i = base + k * inner; i < base + (k + 1) * inner; i++)
                    dst[i] = (float)(src[i] * s[k]);
        return t;
    }
    double *v = hc_xmalloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = hc_tensor_const_at(w, i) * s[(i / inner) % c];
    hc_tensor *t = hc_pass_const_float(g, name, w->dtype, w->ndim, w->shape, v);
    free(v);
    return t;
}

/* New bias b' = b * s + shift (b NULL: zero; b may be a scalar broadcast). */
static hc_tensor *fold_bias(hc_graph *g, const hc_tensor *b, double bscale, const bn_params *p,
                            hc_dtype dt, const char *base) {
    double *v = hc_xmalloc(sizeof(double) * (size_t)p->c);
    int64_t nb = b ? hc_tensor_numel(b) : 0;
    for (int64_t k = 0; k < p->c; k++) {
        double bk = b ? hc_tensor_const_at(b, nb == 1 ? 0 : k) * bscale : 0.0;
        v[k] = bk * p->s[k] + p->shift[k];
    }
    int64_t shape[1] = {p->c};
    hc_tensor *t = hc_pass_const_float(g, hc_arena_printf(&g->arena, "%s_bnbias", base), dt, 1,
                                       shape, v);
    free(v);
    return t;
}

static void set_input(hc_graph *g, hc_node *n, int i, hc_tensor *t) {
    if (i >= n->ninputs) {
        hc_tensor **in = HC_NEW_ARRAY(&g->arena, hc_tensor *, i + 1);
        memcpy(in, n->inputs, sizeof(hc_tensor *) * (size_t)n->ninputs);
        n->inputs = in;
        n->ninputs = i + 1;
    }
    n->inputs[i] = t;
}

static void set_float_attr(hc_graph *g, hc_node *n, const char *name, double v) {
    for (int i = 0; i < n->nattrs; i++) {
        if (strcmp(n->attrs[i].name, name) != 0) continue;
        n->attrs[i].kind = HC_ATTR_FLOAT;
        n->attrs[i].f = v;
        return;
    }
    hc_attr *a = HC_NEW_ARRAY(&g->arena, hc_attr, n->nattrs + 1);
    memcpy(a, n->attrs, sizeof(hc_attr) * (size_t)n->nattrs);
    a[n->nattrs] = (hc_attr){.name = hc_arena_strdup(&g->arena, name), .kind = HC_ATTR_FLOAT,
                             .f = v};
    n->attrs = a;
    n->nattrs++;
}

static bool fold_conv(hc_graph *g, hc_node *conv, const bn_params *p) {
    hc_tensor *w = conv->inputs[1];
    hc_tensor *b = conv->ninputs > 2 ? conv->inputs[2] : NULL;
    if (!is_float_const(w) || w->shape[0] != p->c) return false;
    if (b && (!is_float_const(b) || hc_tensor_numel(b) != p->c)) return false;
    conv->inputs[1] = scale_weight(g, w, 0, p->s);
    set_input(g, conv, 2, fold_bias(g, b, 1.0, p, w->dtype, conv->name));
    return true;
}

static bool fold_gemm(hc_graph *g, hc_node *gemm, const bn_params *p) {
    hc_tensor *w = gemm->inputs[1];
    hc_tensor *c = gemm->ninputs > 2 ? gemm->inputs[2] : NULL;
    if (!is_float_const(w) || w->ndim != 2 || gemm->outputs[0]->ndim != 2) return false;
    int axis = hc_node_attr_int(gemm, "transB", 0) ? 0 : 1;
    if (w->shape[axis] != p->c) return false;
    /* C must be per column (or a scalar); a full [M, N] C is left alone */
    bool per_column = c && hc_tensor_numel(c) == p->c && c->shape[c->ndim - 1] == p->c;
    if (c && (!is_float_const(c) || (hc_tensor_numel(c) != 1 && !per_column))) return false;
    double beta = hc_node_attr_float(gemm, "beta", 1.0);
    gemm->inputs[1] = scale_weight(g, w, axis, p->s);
    set_input(g, gemm, 2, fold_bias(g, c, beta, p, w->dtype, gemm->name));
    set_float_attr(g, gemm, "beta", 1.0);
    return true;
}

/* MatMul has no bias input: the shift becomes an Add after it. */
static bool fold_matmul(hc_graph *g, hc_node *mm, hc_node *bn, const bn_params *p,
                        hc_error *err) {
    hc_tensor *w = mm->inputs[1];
    if (!is_float_const(w) || w->ndim != 2 || mm->outputs[0]->ndim != 2 || w->shape[1] != p->c)
        return false;
    mm->inputs[1] = scale_weight(g, w, 1, p->s);
    hc_tensor *in[2] = {mm->outputs[0], fold_bias(g, NULL, 0, p, w->dtype, mm->name)};
    hc_node *add = hc_pass_add_node(g, HC_OPK_ADD, hc_arena_printf(&g->arena, "%s_bn", bn->name),
                                    2, in, 0, NULL, err);
    HC_ASSERT(add); /* shapes [M, C] + [C] always broadcast */
    bn->inputs[0] = add->outputs[0]; /* the caller bypasses the BN onto its input */
    return true;
}

static bool try_fold(hc_graph *g, hc_node *bn, hc_error *err) {
    hc_tensor *x = bn->inputs[0];
    hc_node *prod = x->producer;
    if (!prod || prod->noutputs < 1 || prod->outputs[0] != x) return false;
    if (hc_graph_num_uses(g, x) != 1 || hc_pass_is_graph_output(g, x)) return false;
    if (!hc_dtype_is_float(x->dtype)) return false;
    bn_params p = {0};
    if (!bn_read(bn, &p)) return false;
    bool ok = false;
    if (prod->op == HC_OPK_CONV) ok = fold_conv(g, prod, &p);
    else if (prod->op == HC_OPK_GEMM) ok = fold_gemm(g, prod, &p);
    else if (prod->op == HC_OPK_MATMUL) ok = fold_matmul(g, prod, bn, &p, err);
    free(p.s);
    free(p.shift);
    /* the BN's input is a fresh or single-use intermediate: the bypass cannot be refused */
    if (ok) HC_ASSERT(hc_pass_bypass(g, bn->outputs[0], bn->inputs[0]));
    return ok;
}

hc_status hc_pass_fold_batchnorm(hc_graph *g, hc_error *err) {
    size_t n0 = g->nodes.len;
    char *gone = hc_xcalloc(n0 + 1, 1);
    for (size_t k = 0; k < n0; k++) {
        hc_node *n = g->nodes.data[k];
        if (n->op == HC_OPK_BATCH_NORMALIZATION && try_fold(g, n, err)) gone[k] = 1;
    }
    /* nodes appended by the folds come after n0 and are kept */
    char *rm = hc_xcalloc(g->nodes.len + 1, 1);
    memcpy(rm, gone, n0);
    hc_pass_remove_nodes(g, rm);
    free(gone);
    free(rm);
    return hc_graph_toposort(g, err);
}

/* ---- training mode (14, 15) ---------------------------------------------------------- */
/* BatchNormalization with training_mode=1, as the reference: the batch's mean and
 * (population) variance over every dim but 1, y = (x - mean) / sqrt(var + eps) * scale +
 * B, and the running statistics input * momentum + batch * (1 - momentum). */
typedef struct bt_ctx {
    hc_graph *g;
    hc_node *n;
    hc_error *err;
    int uid;
} bt_ctx;

static hc_tensor *bt_emit(bt_ctx *c, hc_op_kind op, int nin, hc_tensor *const *in, int nattrs,
                          const hc_attr *attrs) {
    for (int i = 0; i < nin; i++)
        if (!in[i]) return NULL;
    const char *name = hc_arena_printf(&c->g->arena, "%s_bt%d", c->n->name, c->uid++);
    hc_node *m = hc_pass_add_node(c->g, op, name, nin, in, nattrs, attrs, c->err);
    return m ? m->outputs[0] : NULL;
}

static hc_tensor *bt_bin(bt_ctx *c, hc_op_kind op, hc_tensor *a, hc_tensor *b) {
    hc_tensor *in[2] = {a, b};
    return bt_emit(c, op, 2, in, 0, NULL);
}

static hc_tensor *bt_reshape(bt_ctx *c, hc_tensor *x, int nd, const int64_t *shape) {
    if (!x) return NULL;
    const char *name = hc_arena_printf(&c->g->arena, "%s_btshape%d", c->n->name, c->uid++);
    hc_tensor *in[2] = {x, hc_pass_const_i64(c->g, name, nd, shape)};
    return bt_emit(c, HC_OPK_RESHAPE, 2, in, 0, NULL);
}

static hc_tensor *bt_scalar(bt_ctx *c, hc_dtype dt, double v) {
    const char *name = hc_arena_printf(&c->g->arena, "%s_btk%d", c->n->name, c->uid++);
    return hc_pass_const_float(c->g, name, dt, 0, NULL, &v);
}

static hc_status bt_replace(bt_ctx *c, int i, hc_tensor *y) {
    hc_tensor *old = i < c->n->noutputs ? c->n->outputs[i] : NULL;
    if (!old) return HC_OK;
    if (!y) return c->err->status ? c->err->status : HC_ERR_INVALID;
    if (!hc_pass_bypass(c->g, old, y))
        return hc_node_fail(c->n, HC_ERR_UNSUPPORTED, c->err, "output '%s' cannot be replaced",
                            old->name);
    return HC_OK;
}

static hc_status lower_training(hc_graph *g, hc_node *n, hc_error *err) {
    bt_ctx c = {.g = g, .n = n, .err = err};
    hc_tensor *x = n->inputs[0];
    hc_dtype dt = x->dtype;
    int nd = x->ndim;
    int64_t axes[HC_MAX_DIMS], na = 0, cs[HC_MAX_DIMS], C = x->shape[1];
    for (int d = 0; d < nd; d++) {
        if (d != 1) axes[na++] = d;
        cs[d] = d == 1 ? C : 1;
    }
    hc_attr ra[2] = {{.name = "axes", .kind = HC_ATTR_INTS, .n = (int)na, .ints = axes},
                     {.name = "keepdims", .kind = HC_ATTR_INT, .i = 1}};
    hc_tensor *mean = bt_emit(&c, HC_OPK_REDUCE_MEAN, 1, &x, 2, ra);
    hc_tensor *d = bt_bin(&c, HC_OPK_SUB, x, mean);
    hc_tensor *dd = bt_bin(&c, HC_OPK_MUL, d, d);
    hc_tensor *var = bt_emit(&c, HC_OPK_REDUCE_MEAN, 1, &dd, 2, ra);
    double eps = hc_node_attr_float(n, "epsilon", 1e-5), mom = hc_node_attr_float(n, "momentum", 0.9);
    hc_tensor *in1[1] = {bt_bin(&c, HC_OPK_ADD, var, bt_scalar(&c, dt, eps))};
    hc_tensor *sd = bt_emit(&c, HC_OPK_SQRT, 1, in1, 0, NULL);
    hc_tensor *y = bt_bin(&c, HC_OPK_DIV, d, sd);
    y = bt_bin(&c, HC_OPK_MUL, y, bt_reshape(&c, n->inputs[1], nd, cs));
    y = bt_bin(&c, HC_OPK_ADD, y, bt_reshape(&c, n->inputs[2], nd, cs));
    if (bt_replace(&c, 0, y)) return err->status;
    for (int k = 1; k <= 2; k++) {
        if (k >= n->noutputs || !n->outputs[k]) continue;
        hc_tensor *batch = bt_reshape(&c, k == 1 ? mean : var, 1, &C);
        hc_tensor *r = bt_bin(&c, HC_OPK_ADD, bt_bin(&c, HC_OPK_MUL, n->inputs[2 + k], bt_scalar(&c, dt, mom)),
                              bt_bin(&c, HC_OPK_MUL, batch, bt_scalar(&c, dt, 1 - mom)));
        if (bt_replace(&c, k, r)) return err->status;
    }
    return HC_OK;
}

static bool is_training_bn(const hc_node *n) { return n->op == HC_OPK_BATCH_NORMALIZATION && hc_node_attr_int(n, "training_mode", 0); }

hc_status hc_pass_lower_batchnorm_training(hc_graph *g, hc_error *err) {
    return hc_pass_lower_each(g, is_training_bn, lower_training, err);
}
