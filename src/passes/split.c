/* split.c — the split_to_slices pass: a Split of at most 4 outputs becomes one Slice per
 * output. A Split is a kernel of its own (it has several outputs, so post-scheduling
 * fusion takes it as an anchor) that copies its input once; a Slice has one output and is
 * injective, so the partition fuses it as a prologue into the kernel that reads it, which
 * then reads its part of the input in place. GPT-2's c_attn output [1, S, 2304] went
 * through a Split into Q, K and V for the attention of every layer: now the attention
 * reads them from the matmul's output. Splits with more outputs keep their one kernel
 * (a kernel per part would cost more launches than the copy). */
#include "passes/pass_util.h"

enum { MAX_PARTS = 4 };

static bool is_small_split(const hc_node *n) {
    if (n->op != HC_OPK_SPLIT || n->noutputs < 2 || n->noutputs > MAX_PARTS) return false;
    const hc_tensor *x = n->inputs[0];
    if (!x || !x->shape_known || x->ndim < 1) return false;
    for (int i = 0; i < n->noutputs; i++)
        if (!n->outputs[i] || !n->outputs[i]->shape_known) return false;
    return true;
}

static hc_status to_slices(hc_graph *g, hc_node *n, hc_error *err) {
    hc_rewrite c = {.g = g, .n = n, .err = err};
    const hc_tensor *x = n->inputs[0];
    int64_t axis = hc_node_attr_int(n, "axis", 0);
    if (axis < 0) axis += x->ndim;
    if (axis < 0 || axis >= x->ndim) return HC_OK; /* inference refused it already */
    int64_t start = 0;
    for (int i = 0; i < n->noutputs; i++) {
        int64_t end = start + n->outputs[i]->shape[axis];
        hc_status st = hc_rw_replace(&c, i, hc_rw_slice(&c, n->inputs[0], axis, start, end));
        if (st != HC_OK) return st;
        start = end;
    }
    return HC_OK;
}

hc_status hc_pass_split_to_slices(hc_graph *g, hc_error *err) {
    return hc_pass_lower_each(g, is_small_split, to_slices, err);
}
