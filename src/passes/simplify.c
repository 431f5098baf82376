/* simplify.c — nodes that move no data go away: Identity, Dropout (inference), and chains
 * of Reshape/Flatten/Squeeze/Unsqueeze, which all keep the row-major element order and so
 * collapse into one Reshape from the chain's first input to the last shape. */
#include <string.h>

#include "passes/pass_util.h"

static bool same_shape(const hc_tensor *a, const hc_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (!hc_tensor_dims_equal(a, d, b, d)) return false;
    return true;
}

/* A symbolic output's shape as Reshape values of origin: a fixed dim as itself, a
 * symbolic one as 0 (copy) where origin has the same dim there, one other as -1. false
 * when that cannot say it (two such dims, or a fixed 0 beside a 0 that copies). */
static bool sym_shape_values(const hc_tensor *origin, const hc_tensor *y, int64_t *v) {
    bool minus = false, copy = false, zero = false;
    for (int d = 0; d < y->ndim; d++) {
        if (!y->sym || !y->sym[d]) {
            v[d] = y->shape[d];
            zero |= v[d] == 0;
        } else if (d < origin->ndim && hc_tensor_dims_equal(origin, d, y, d)) {
            v[d] = 0, copy = true;
        } else if (!minus) {
            v[d] = -1, minus = true;
        } else {
            return false;
        }
    }
    return !(zero && copy);
}

static bool output_used(const hc_graph *g, const hc_tensor *t) {
    return t && (hc_graph_num_uses(g, t) > 0 || hc_pass_is_graph_output(g, t));
}

/* Dropout is the identity at inference, unless its mask is wanted or training is on. */
static bool dropout_is_identity(const hc_graph *g, const hc_node *n) {
    if (n->noutputs > 1 && output_used(g, n->outputs[1])) return false;
    if (n->ninputs > 2 && n->inputs[2]) {
        const hc_tensor *tm = n->inputs[2];
        if (!tm->data || hc_tensor_numel(tm) != 1 || hc_tensor_const_at(tm, 0) != 0) return false;
    }
    return true;
}

/* Rewrite n into Reshape(origin, constant output shape). */
static hc_status to_reshape(hc_graph *g, hc_node *n, hc_tensor *origin, hc_error *err) {
    const hc_tensor *y = n->outputs[0];
    bool has_zero = false;
    for (int d = 0; d < y->ndim; d++) has_zero |= y->shape[d] == 0;
    hc_tensor **in = HC_NEW_ARRAY(&g->arena, hc_tensor *, 2);
    in[0] = origin;
    in[1] = hc_pass_const_i64(g, hc_arena_printf(&g->arena, "%s_shape", n->name), y->ndim,
                              y->shape);
    n->op = HC_OPK_RESHAPE;
    n->inputs = in;
    n->ninputs = 2;
    /* a 0 in the shape means "copy that dimension" unless allowzero is set */
    n->nattrs = 0;
    if (has_zero) {
        n->attrs = HC_NEW(&g->arena, hc_attr);
        n->attrs[0] = (hc_attr){.name = "allowzero", .kind = HC_ATTR_INT, .i = 1};
        n->nattrs = 1;
        if (n->opset < 14) n->opset = 14;
    }
    return hc_pass_infer_node(n, err);
}

static bool is_canonical_reshape(const hc_node *n, const hc_tensor *origin) {
    if (n->op != HC_OPK_RESHAPE || n->inputs[0] != origin || n->ninputs < 2) return false;
    const hc_tensor *s = n->inputs[1];
    const hc_tensor *y = n->outputs[0];
    if (!s || !s->data || hc_tensor_numel(s) != y->ndim || n->nattrs) return false;
    int64_t v[HC_MAX_DIMS];
    hc_tensor_const_ints(s, v, HC_MAX_DIMS);
    for (int d = 0; d < y->ndim; d++)
        if (v[d] != y->shape[d] || v[d] <= 0) return false;
    return true;
}

static hc_status simplify_reshape(hc_graph *g, hc_node *n, hc_error *err) {
    hc_tensor *origin = n->inputs[0];
    while (origin->producer && hc_op_is_reshape_like(origin->producer->op))
        origin = origin->producer->inputs[0];
    if (same_shape(origin, n->outputs[0]) && hc_pass_bypass(g, n->outputs[0], origin))
        return HC_OK;
    const hc_tensor *y = n->outputs[0];
    if (y->sym) { /* the shape values must stay expressions of the symbols */
        int64_t v[HC_MAX_DIMS];
        if (origin == n->inputs[0] && n->op == HC_OPK_RESHAPE) return HC_OK;
        if (!sym_shape_values(origin, y, v)) return HC_OK;
        hc_tensor **in = HC_NEW_ARRAY(&g->arena, hc_tensor *, 2);
        in[0] = origin;
        in[1] = hc_pass_const_i64(g, hc_arena_printf(&g->arena, "%s_shape", n->name), y->ndim, v);
        n->op = HC_OPK_RESHAPE, n->inputs = in, n->ninputs = 2, n->nattrs = 0;
        return hc_pass_infer_node(n, err);
    }
    if (is_canonical_reshape(n, origin)) return HC_OK;
    return to_reshape(g, n, origin, err);
}

hc_status hc_pass_simplify(hc_graph *g, hc_error *err) {
    hc_status st = HC_OK;
    for (size_t k = 0; k < g->nodes.len && st == HC_OK; k++) {
        hc_node *n = g->nodes.data[k];
        if (!n->outputs[0] || !n->outputs[0]->shape_known) continue;
        if (n->op == HC_OPK_IDENTITY) hc_pass_bypass(g, n->outputs[0], n->inputs[0]);
        else if (n->op == HC_OPK_DROPOUT && dropout_is_identity(g, n))
            hc_pass_bypass(g, n->outputs[0], n->inputs[0]);
        else if (hc_op_is_reshape_like(n->op))
            st = simplify_reshape(g, n, err);
        else if (n->op == HC_OPK_IF_SELECT && n->inputs[0]->data) /* a constant If: one branch */
            hc_pass_bypass(g, n->outputs[0],
                           n->inputs[hc_tensor_const_at(n->inputs[0], 0) != 0 ? 1 : 2]);
    }
    if (st == HC_OK) hc_graph_remove_dead(g);
    return st;
}
