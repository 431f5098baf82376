/* nn_train.c — the optimizers of the domain ai.onnx.preview.training, version 1: Adagrad,
 * Adam and Momentum. Inputs R (learning rate) and T (update count), both one element, then
 * for n optimized tensors X_1..X_n, their gradients G_1..G_n and their accumulators (Adagrad
 * H_1..H_n, Adam V_1..V_n then H_1..H_n, Momentum V_1..V_n); outputs X_new_1..X_new_n, then
 * the new accumulators in the inputs' order. Shape and dtype inference and the checks only:
 * the lower_training pass (src/passes/training.c) rewrites them into elementwise ops, so they
 * have no Task. */
#include <string.h>

#include "graph/ops/nn_internal.h"

/* What follows X and G for each tensor. */
static const char *accumulators(hc_op_kind op) {
    return op == HC_OPK_ADAM ? "V and H" : op == HC_OPK_ADAGRAD ? "H" : "V";
}

static hc_status need_scalar(const hc_node *n, int i, const char *what, hc_error *err) {
    const hc_tensor *t = n->inputs[i];
    if (hc_tensor_numel(t) != 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input %d ('%s', %s) has %lld elements, a "
                            "scalar expected", i, t->name, what, (long long)hc_tensor_numel(t));
    return HC_OK;
}

static bool real(hc_dtype t) { return t == HC_F32 || t == HC_F64; }

hc_status hc_nn_infer_train(hc_node *n, hc_error *err) {
    int per = n->op == HC_OPK_ADAM ? 4 : 3; /* X, G and the accumulators of one tensor */
    int rest = n->ninputs - 2;
    if (rest < per || rest % per)
        return hc_node_fail(n, HC_ERR_INVALID, err, "%d inputs: R, T, then X, G and %s of each "
                            "optimized tensor expected (2 + %d per tensor)", n->ninputs,
                            accumulators(n->op), per);
    int nt = rest / per;
    if (n->noutputs > (per - 1) * nt)
        return hc_node_fail(n, HC_ERR_INVALID, err, "%d outputs for %d optimized tensor%s: at "
                            "most %d (X_new, then the new %s of each)", n->noutputs, nt,
                            nt > 1 ? "s" : "", (per - 1) * nt, accumulators(n->op));
    const hc_tensor *r = n->inputs[0], *t = n->inputs[1];
    if (need_scalar(n, 0, "R", err) || need_scalar(n, 1, "T", err)) return err->status;
    if (!real(r->dtype))
        return hc_node_fail(n, HC_ERR_INVALID, err, "input 0 ('%s', R) is %s, float or double "
                            "expected", r->name, hc_dtype_name(r->dtype));
    if (t->dtype != HC_I64)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input 1 ('%s', T) is %s, int64 expected",
                            t->name, hc_dtype_name(t->dtype));
    static const char *const roles[3][4] = {{"X", "G", "H"}, {"X", "G", "V", "H"}, {"X", "G", "V"}};
    const char *const *role = roles[n->op == HC_OPK_ADAGRAD ? 0 : n->op == HC_OPK_ADAM ? 1 : 2];
    for (int i = 0; i < nt; i++) {
        const hc_tensor *x = n->inputs[2 + i];
        if (!real(x->dtype))
            return hc_node_fail(n, HC_ERR_INVALID, err, "input %d ('%s', X_%d) is %s, float or "
                                "double expected", 2 + i, x->name, i + 1, hc_dtype_name(x->dtype));
        if (x->dtype != n->inputs[2]->dtype) /* one type T3 for every tensor */
            return hc_node_fail(n, HC_ERR_INVALID, err, "input %d ('%s', X_%d) is %s, X_1 ('%s') "
                                "%s: every tensor must have the same dtype", 2 + i, x->name, i + 1,
                                hc_dtype_name(x->dtype), n->inputs[2]->name,
                                hc_dtype_name(n->inputs[2]->dtype));
        for (int k = 1; k < per; k++) {
            int j = 2 + k * nt + i;
            const hc_tensor *y = n->inputs[j];
            bool same = y->dtype == x->dtype && y->ndim == x->ndim &&
                        (!x->ndim || !memcmp(y->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim));
            if (same) continue;
            hc_sb a, b;
            hc_sb_init(&a), hc_sb_init(&b);
            hc_print_shape(&a, y->ndim, y->shape), hc_print_shape(&b, x->ndim, x->shape);
            hc_node_fail(n, HC_ERR_INVALID, err, "input %d ('%s', %s_%d) is %s %s, X_%d ('%s') %s "
                         "%s: they must have the same dtype and shape", j, y->name, role[k], i + 1,
                         hc_dtype_name(y->dtype), hc_sb_str(&a), i + 1, x->name,
                         hc_dtype_name(x->dtype), hc_sb_str(&b));
            hc_sb_free(&a), hc_sb_free(&b);
            return err->status;
        }
    }
    if (n->op == HC_OPK_MOMENTUM) { /* no defaults in the spec */
        static const char *const req[] = {"alpha", "beta", "norm_coefficient", "mode"};
        for (size_t k = 0; k < HC_ARRAY_LEN(req); k++)
            if (!hc_node_attr(n, req[k]))
                return hc_node_fail(n, HC_ERR_INVALID, err, "attribute '%s' is required", req[k]);
        const char *mode = hc_node_attr_string(n, "mode", "");
        if (strcmp(mode, "standard") && strcmp(mode, "nesterov"))
            return hc_node_fail(n, HC_ERR_INVALID, err, "mode '%s' (standard or nesterov "
                                "expected)", mode);
    }
    for (int o = 0; o < n->noutputs; o++) {
        if (!n->outputs[o]) continue;
        const hc_tensor *x = n->inputs[2 + o % nt];
        hc_node_set_output(n, o, x->dtype, x->ndim, x->shape);
    }
    return HC_OK;
}

hc_task *hc_nn_task_train(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)a;
    hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "has no Task of its own: the lower_training pass "
                 "(hc_graph_optimize) rewrites it into elementwise ops first");
    return NULL;
}
