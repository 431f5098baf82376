/* pipeline.c — the pass pipeline (straight-line, DESIGN.md) and the graph verifier that
 * runs after each pass when HIDETC_VERIFY=1. */
#include <string.h>

#include "passes/pass_util.h"

static hc_status verify_node(const hc_graph *g, const hc_node *n, const char *ready,
                             hc_error *err) {
    int nin = hc_op_min_inputs(n->op), xin = hc_op_max_inputs(n->op);
    if (n->ninputs < nin || (xin != HC_MANY && n->ninputs > xin))
        return hc_error_set(err, HC_ERR_INVALID, "verify: node '%s' has %d inputs", n->name,
                            n->ninputs);
    for (int j = 0; j < n->ninputs; j++) {
        const hc_tensor *t = n->inputs[j];
        if (!t) continue;
        if (t->id < 0 || (size_t)t->id >= g->tensors.len || g->tensors.data[t->id] != t)
            return hc_error_set(err, HC_ERR_INVALID,
                                "verify: node '%s' reads '%s', not in the graph",
                                n->name, t->name);
        if (!t->data && !ready[t->id])
            return hc_error_set(err, HC_ERR_INVALID,
                                "verify: node '%s' reads '%s' before it is produced", n->name,
                                t->name);
    }
    for (int j = 0; j < n->noutputs; j++) {
        const hc_tensor *t = n->outputs[j];
        if (!t) continue;
        if (t->producer != n || t->data || !t->shape_known)
            return hc_error_set(err, HC_ERR_INVALID,
                                "verify: output '%s' of node '%s' (producer, constant or shape)",
                                t->name, n->name);
    }
    return HC_OK;
}

hc_status hc_graph_verify(const hc_graph *g, hc_error *err) {
    char *ready = hc_xcalloc(g->tensors.len + 1, 1);
    for (size_t i = 0; i < g->inputs.len; i++) ready[g->inputs.data[i]->id] = 1;
    hc_status st = HC_OK;
    for (size_t k = 0; k < g->nodes.len && st == HC_OK; k++) {
        const hc_node *n = g->nodes.data[k];
        st = verify_node(g, n, ready, err);
        for (int j = 0; j < n->noutputs && st == HC_OK; j++) {
            const hc_tensor *t = n->outputs[j];
            if (!t) continue;
            if (ready[t->id])
                st = hc_error_set(err, HC_ERR_INVALID, "verify: tensor '%s' produced twice",
                                  t->name);
            ready[t->id] = 1;
        }
    }
    for (size_t i = 0; i < g->outputs.len && st == HC_OK; i++) {
        const hc_tensor *t = g->outputs.data[i];
        if (!t->data && !ready[t->id])
            st = hc_error_set(err, HC_ERR_INVALID, "verify: graph output '%s' is never produced",
                              t->name);
    }
    free(ready);
    return st;
}

static hc_status check(const hc_graph *g, const char *pass, hc_status st, hc_error *err) {
    if (st != HC_OK) return st;
    const char *v = getenv("HIDETC_VERIFY");
    if (!v || strcmp(v, "1") != 0) return HC_OK;
    st = hc_graph_verify(g, err);
    if (st != HC_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        hc_error_set(err, st, "after pass %s: %s", pass, msg);
    }
    return st;
}

hc_status hc_graph_optimize(hc_graph *g, hc_error *err) {
    return hc_graph_optimize_with(g, NULL, err);
}

hc_status hc_graph_optimize_with(hc_graph *g, const hc_optimize_options *opt, hc_error *err) {
    hc_optimize_options dflt = {0};
    if (!opt) opt = &dflt;
    hc_status st = HC_OK;
    st = check(g, "infer_shapes", hc_pass_infer_shapes(g, err), err);
    if (st == HC_OK) st = check(g, "lower_rnn", hc_pass_lower_rnn(g, err), err);
    if (st == HC_OK) st = check(g, "int8_conv", hc_pass_int8_conv(g, opt, err), err);
    if (st == HC_OK) st = check(g, "lower_quant", hc_pass_lower_quant(g, err), err);
    if (st == HC_OK) st = check(g, "lower_losses", hc_pass_lower_losses(g, err), err);
    if (st == HC_OK) st = check(g, "lower_stft", hc_pass_lower_stft(g, err), err);
    if (st == HC_OK) st = check(g, "lower_training", hc_pass_lower_training(g, err), err);
    if (st == HC_OK) st = check(g, "lower_attention", hc_pass_lower_attention_with(g, opt, err), err);
    if (st == HC_OK)
        st = check(g, "lower_batchnorm_training", hc_pass_lower_batchnorm_training(g, err), err);
    if (st == HC_OK) st = check(g, "simplify", hc_pass_simplify(g, err), err);
    if (st == HC_OK) st = check(g, "fold_constants", hc_pass_fold_constants(g, err), err);
    if (st == HC_OK) st = check(g, "fold_batchnorm", hc_pass_fold_batchnorm(g, err), err);
    if (st == HC_OK) st = check(g, "merge_matmuls", hc_pass_merge_matmuls(g, err), err);
    if (st == HC_OK) st = check(g, "fuse_attention", hc_pass_fuse_attention(g, opt, err), err);
    if (st == HC_OK) st = check(g, "split_to_slices", hc_pass_split_to_slices(g, err), err);
    if (st == HC_OK && opt->nchwc_block > 1)
        st = check(g, "layout_nchwc", hc_pass_layout_nchwc(g, opt, err), err);
    if (st == HC_OK) st = check(g, "lower_anchors", hc_pass_lower_anchors_with(g, opt, err), err);
    /* the lowering made new reshapes (simplify merges them) and constant operands */
    if (st == HC_OK) st = check(g, "simplify", hc_pass_simplify(g, err), err);
    if (st == HC_OK) st = check(g, "fold_constants", hc_pass_fold_constants(g, err), err);
    if (st == HC_OK) hc_graph_remove_dead(g);
    return st;
}
