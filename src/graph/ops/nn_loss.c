/* nn_loss.c — NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: shape and dtype
 * inference. They have no Task: the lower_losses pass (src/passes/loss.c) rewrites them
 * into GatherElements, Gather, Where and reductions first. */
#include <string.h>

#include "graph/ops/nn_internal.h"

hc_status hc_nn_infer_loss(hc_node *n, hc_error *err) {
    const hc_tensor *x = hc_nn_in(n, 0), *t = hc_nn_in(n, 1), *w = hc_nn_in(n, 2);
    if (!x || !t) return hc_node_fail(n, HC_ERR_INVALID, err, "the input and the target are required");
    if (hc_nn_need_float(n, 0, err)) return err->status;
    if (x->ndim < 2)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input '%s' has rank %d, at least 2 expected "
                            "([N, C, d1, ...])", x->name, x->ndim);
    if (!hc_dtype_is_int(t->dtype))
        return hc_node_fail(n, HC_ERR_INVALID, err, "target '%s' is %s (an integer type expected)",
                            t->name, hc_dtype_name(t->dtype));
    bool ok = t->ndim == x->ndim - 1 && t->shape[0] == x->shape[0];
    for (int d = 1; ok && d < t->ndim; d++) ok = t->shape[d] == x->shape[d + 1];
    if (!ok)
        return hc_node_fail(n, HC_ERR_INVALID, err, "target '%s' must have the input's shape "
                            "without dimension 1 (C)", t->name);
    if (w && (w->ndim != 1 || w->shape[0] != x->shape[1] || w->dtype != x->dtype))
        return hc_node_fail(n, HC_ERR_INVALID, err, "weight '%s' must be [%lld] of %s", w->name,
                            (long long)x->shape[1], hc_dtype_name(x->dtype));
    const char *red = hc_node_attr_string(n, "reduction", "mean");
    bool none = !strcmp(red, "none");
    if (!none && strcmp(red, "sum") && strcmp(red, "mean"))
        return hc_node_fail(n, HC_ERR_INVALID, err, "reduction '%s' (none, sum or mean)", red);
    if (none) hc_node_set_output(n, 0, x->dtype, t->ndim, t->shape);
    else hc_node_set_output(n, 0, x->dtype, 0, NULL);
    if (n->noutputs > 1) hc_node_set_output(n, 1, x->dtype, x->ndim, x->shape); /* log_prob */
    return HC_OK;
}

hc_task *hc_nn_task_loss(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)a;
    hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "has no Task of its own: the lower_losses pass "
                 "(hc_graph_optimize) rewrites it into gathers and reductions first");
    return NULL;
}
