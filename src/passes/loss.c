/* loss.c — the lower_losses pass: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
 * rewritten into existing ops, as the ONNX reference computes them:
 *   log_prob = (x - max) - log(sum(exp(x - max)))       over C (SoftmaxCrossEntropyLoss)
 *   t'       = t where t != ignore_index, else 0; clamped into [0, C) (never read outside)
 *   loss     = -GatherElements(x or log_prob, t', axis 1) * w, with w = weight[t'] and/or
 *              0 where t == ignore_index
 *   none: loss; sum: sum(loss); mean: sum(loss) / sum(w) (with a weight or ignore_index),
 *   else the mean of loss. */
#include <string.h>

#include "passes/pass_util.h"

typedef hc_rewrite l_ctx;

static const char *fresh(l_ctx *c, const char *suffix) { return hc_rw_fresh(c, suffix); }

static hc_tensor *emit(l_ctx *c, hc_op_kind op, int nin, hc_tensor *const *in, int nattrs,
                       const hc_attr *attrs) {
    return hc_rw_emit(c, op, nin, in, nattrs, attrs);
}

static hc_tensor *bin(l_ctx *c, hc_op_kind op, hc_tensor *a, hc_tensor *b) {
    hc_tensor *in[2] = {a, b};
    return emit(c, op, 2, in, 0, NULL);
}

static hc_tensor *unary(l_ctx *c, hc_op_kind op, hc_tensor *x) { return emit(c, op, 1, &x, 0, NULL); }

static hc_tensor *scalar(l_ctx *c, hc_dtype dt, double v) {
    hc_tensor *t = hc_graph_constant(c->g, fresh(c, "k"), dt, 0, NULL, NULL);
    hc_elem_set(t->data, dt, 0, v);
    t->shape_known = true;
    return t;
}

static hc_tensor *reshape(l_ctx *c, hc_tensor *x, int ndim, const int64_t *shape) {
    if (!x) return NULL;
    hc_tensor *in[2] = {x, hc_pass_const_i64(c->g, fresh(c, "shape"), ndim, shape)};
    return emit(c, HC_OPK_RESHAPE, 2, in, 0, NULL);
}

/* Reduce over dimension 1 (keepdims) or over everything (axis < 0, to a scalar); the
 * axes as an attribute, which every opset's reduction reads. */
static hc_tensor *reduce(l_ctx *c, hc_op_kind op, hc_tensor *x, int axis) {
    int64_t ax = axis;
    hc_attr a[2] = {{.name = "keepdims", .kind = HC_ATTR_INT, .i = axis >= 0},
                    {.name = "axes", .kind = HC_ATTR_INTS, .n = 1, .ints = &ax}};
    return emit(c, op, 1, &x, axis >= 0 ? 2 : 1, a);
}

static hc_tensor *log_softmax(l_ctx *c, hc_tensor *x) {
    hc_tensor *z = bin(c, HC_OPK_SUB, x, reduce(c, HC_OPK_REDUCE_MAX, x, 1));
    return bin(c, HC_OPK_SUB, z, unary(c, HC_OPK_LOG, reduce(c, HC_OPK_REDUCE_SUM,
                                                            unary(c, HC_OPK_EXP, z), 1)));
}

static hc_status replace(l_ctx *c, int i, hc_tensor *y) { return hc_rw_replace(c, i, y); }

static hc_status lower_one(hc_graph *g, hc_node *n, hc_error *err) {
    l_ctx c = {.g = g, .n = n, .err = err};
    hc_tensor *x = n->inputs[0], *t = n->inputs[1], *w = n->ninputs > 2 ? n->inputs[2] : NULL;
    hc_dtype dt = x->dtype, it = t->dtype;
    bool sce = n->op == HC_OPK_SOFTMAX_CROSS_ENTROPY_LOSS;
    hc_tensor *lp = sce ? log_softmax(&c, x) : x;
    const hc_attr *ig = hc_node_attr(n, "ignore_index");
    int64_t ignore = hc_node_attr_int(n, "ignore_index", 0), C = x->shape[1];
    if (ig && hc_dtype_size(it) < 8) { /* a value the targets cannot hold ignores nothing */
        int64_t bits = 8 * hc_dtype_size(it);
        bool sgn = hc_dtype_is_signed(it);
        int64_t lo = sgn ? -((int64_t)1 << (bits - 1)) : 0;
        int64_t hi = sgn ? ((int64_t)1 << (bits - 1)) - 1 : ((int64_t)1 << bits) - 1;
        if (ignore < lo || ignore > hi) ig = NULL;
    }
    hc_tensor *keep = NULL, *tt = t; /* keep: 1 where t != ignore_index (x's dtype) */
    if (ig) {
        hc_tensor *is = bin(&c, HC_OPK_EQUAL, t, scalar(&c, it, (double)ignore));
        hc_tensor *w3[3] = {is, scalar(&c, dt, 0), scalar(&c, dt, 1)};
        keep = emit(&c, HC_OPK_WHERE, 3, w3, 0, NULL);
        hc_tensor *t3[3] = {is, scalar(&c, it, 0), t};
        tt = emit(&c, HC_OPK_WHERE, 3, t3, 0, NULL);
    }
    tt = bin(&c, HC_OPK_MAX, bin(&c, HC_OPK_MIN, tt, scalar(&c, it, (double)(C - 1))), scalar(&c, it, 0));
    int64_t sh[HC_MAX_DIMS];
    sh[0] = x->shape[0], sh[1] = 1;
    for (int d = 1; d < t->ndim; d++) sh[d + 1] = t->shape[d];
    hc_attr ax = {.name = "axis", .kind = HC_ATTR_INT, .i = 1};
    hc_tensor *gin[2] = {lp, reshape(&c, tt, x->ndim, sh)};
    hc_tensor *loss = unary(&c, HC_OPK_NEG, reshape(&c, emit(&c, HC_OPK_GATHER_ELEMENTS, 2, gin, 1, &ax),
                                                     t->ndim, t->shape));
    hc_tensor *wt = NULL;
    if (w) {
        hc_tensor *win[2] = {w, tt};
        wt = emit(&c, HC_OPK_GATHER, 2, win, 0, NULL);
        if (keep) wt = bin(&c, HC_OPK_MUL, wt, keep);
    } else wt = keep;
    if (wt) loss = bin(&c, HC_OPK_MUL, loss, wt);
    const char *red = hc_node_attr_string(n, "reduction", "mean");
    if (!strcmp(red, "sum")) loss = reduce(&c, HC_OPK_REDUCE_SUM, loss, -1);
    else if (!strcmp(red, "mean"))
        loss = wt ? bin(&c, HC_OPK_DIV, reduce(&c, HC_OPK_REDUCE_SUM, loss, -1),
                        reduce(&c, HC_OPK_REDUCE_SUM, wt, -1))
                  : reduce(&c, HC_OPK_REDUCE_MEAN, loss, -1);
    hc_status st = replace(&c, 0, loss);
    if (st == HC_OK && sce) st = replace(&c, 1, lp);
    return st;
}

static bool is_loss(const hc_node *n) { return n->op == HC_OPK_NLL_LOSS || n->op == HC_OPK_SOFTMAX_CROSS_ENTROPY_LOSS; }

hc_status hc_pass_lower_losses(hc_graph *g, hc_error *err) {
    return hc_pass_lower_each(g, is_loss, lower_one, err);
}
