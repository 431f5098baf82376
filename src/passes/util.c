/* util.c — helpers shared by the graph passes. */
#include <string.h>

#include "passes/pass_util.h"

hc_status hc_pass_infer_node(hc_node *n, hc_error *err) {
    const hc_op_def *def = hc_op_get(n->op);
    if (!def) {
        const char *on = hc_op_onnx_name(n->op);
        return hc_error_set(err, HC_ERR_UNSUPPORTED, "node '%s': operator %s is not supported",
                            n->name, *on ? on : hc_op_name(n->op));
    }
    bool sym = hc_node_reads_symbols(n);
    for (int i = 0; i < n->noutputs; i++)
        if (n->outputs[i]) n->outputs[i]->sym = n->outputs[i]->symval = NULL;
    hc_status st = sym ? hc_node_infer_concrete(n, err) : def->infer(n, err);
    if (st != HC_OK) return st;
    for (int i = 0; i < n->noutputs; i++) {
        const hc_tensor *t = n->outputs[i];
        HC_ASSERT_MSG(!t || t->shape_known, "infer left a shape unset");
        if (t && hc_shape_too_large(t->dtype, t->ndim, t->shape)) {
            hc_sb sb;
            hc_sb_init(&sb);
            hc_print_shape(&sb, t->ndim, t->shape);
            st = hc_error_set(err, HC_ERR_INVALID, "node '%s' (%s): output '%s' of shape %s "
                              "is too large (more than 2^40 bytes, or an element count that "
                              "overflows int64)", n->name,
                              *hc_op_onnx_name(n->op) ? hc_op_onnx_name(n->op) : hc_op_name(n->op),
                              t->name,
                              hc_sb_str(&sb));
            hc_sb_free(&sb);
            return st;
        }
    }
    return sym ? hc_node_infer_symbolic(n, err) : HC_OK;
}

bool hc_pass_is_graph_output(const hc_graph *g, const hc_tensor *t) {
    for (size_t i = 0; i < g->outputs.len; i++)
        if (g->outputs.data[i] == t) return true;
    return false;
}

bool hc_pass_is_graph_input(const hc_graph *g, const hc_tensor *t) {
    for (size_t i = 0; i < g->inputs.len; i++)
        if (g->inputs.data[i] == t) return true;
    return false;
}

bool hc_pass_bypass(hc_graph *g, hc_tensor *from, hc_tensor *to) {
    if (from == to) return true;
    if (hc_pass_is_graph_output(g, from)) {
        if (to->data || hc_pass_is_graph_input(g, to) || hc_pass_is_graph_output(g, to))
            return false;
        /* the caller sees outputs by name: the surviving tensor inherits it */
        const char *name = from->name;
        from->name = hc_arena_printf(&g->arena, "%s__bypassed%d", name, from->id);
        to->name = name;
    }
    hc_graph_replace_uses(g, from, to);
    return true;
}

hc_node *hc_pass_add_node(hc_graph *g, hc_op_kind op, const char *name, int ninputs,
                          hc_tensor *const *inputs, int nattrs, const hc_attr *attrs,
                          hc_error *err) {
    hc_node *n = hc_graph_add_node(g, op, name, ninputs, inputs, 0, NULL, nattrs, attrs, err);
    if (!n) return NULL;
    if (hc_pass_infer_node(n, err) != HC_OK) return NULL;
    return n;
}

hc_tensor *hc_pass_const_i64(hc_graph *g, const char *name, int n, const int64_t *v) {
    int64_t shape[1] = {n};
    return hc_graph_constant(g, name, HC_I64, 1, shape, v);
}

hc_tensor *hc_pass_const_float(hc_graph *g, const char *name, hc_dtype dt, int ndim,
                               const int64_t *shape, const double *v) {
    hc_tensor *t = hc_graph_constant(g, name, dt, ndim, shape, NULL);
    int64_t n = hc_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case HC_F16: ((_Float16 *)t->data)[i] = (_Float16)v[i]; break;
        case HC_BF16: ((uint16_t *)t->data)[i] = hc_f32_to_bf16((float)v[i]); break;
        case HC_F32: ((float *)t->data)[i] = (float)v[i]; break;
        case HC_F64: ((double *)t->data)[i] = v[i]; break;
        default: hc_unreachable();
        }
    }
    return t;
}

void hc_pass_remove_nodes(hc_graph *g, const char *remove) {
    size_t w = 0;
    for (size_t k = 0; k < g->nodes.len; k++)
        if (!remove[k]) g->nodes.data[w++] = g->nodes.data[k];
    g->nodes.len = w;
}

hc_status hc_pass_lower_each_ctx(hc_graph *g, bool (*match)(const hc_node *n),
                                 hc_status (*lower)(hc_graph *g, hc_node *n, void *ctx,
                                                    hc_error *err),
                                 void *ctx, hc_error *err) {
    size_t n0 = g->nodes.len;
    bool any = false;
    for (size_t k = 0; k < n0; k++) {
        hc_node *n = g->nodes.data[k];
        if (!match(n)) continue;
        hc_status st = lower(g, n, ctx, err);
        if (st != HC_OK) return st;
        any = true;
    }
    if (!any) return HC_OK;
    hc_status st = hc_graph_toposort(g, err);
    if (st == HC_OK) hc_graph_remove_dead(g);
    return st;
}

typedef hc_status (*plain_lower)(hc_graph *g, hc_node *n, hc_error *err);
typedef struct plain_ctx {
    plain_lower fn;
} plain_ctx;

static hc_status call_plain(hc_graph *g, hc_node *n, void *ctx, hc_error *err) {
    return ((plain_ctx *)ctx)->fn(g, n, err);
}

hc_status hc_pass_lower_each(hc_graph *g, bool (*match)(const hc_node *n),
                             hc_status (*lower)(hc_graph *g, hc_node *n, hc_error *err),
                             hc_error *err) {
    plain_ctx c = {lower};
    return hc_pass_lower_each_ctx(g, match, call_plain, &c, err);
}

const char *hc_rw_fresh(hc_rewrite *c, const char *suffix) {
    return hc_arena_printf(&c->g->arena, "%s_%s%d", c->n->name, suffix, c->uid++);
}

hc_tensor *hc_rw_emit(hc_rewrite *c, hc_op_kind op, int nin, hc_tensor *const *in, int nattrs,
                      const hc_attr *attrs) {
    for (int i = 0; i < nin; i++)
        if (!in[i]) return NULL; /* an earlier step failed (err is set) */
    hc_node *m = hc_pass_add_node(c->g, op, hc_rw_fresh(c, "rw"), nin, in, nattrs, attrs, c->err);
    return m ? m->outputs[0] : NULL;
}

hc_tensor *hc_rw_slice(hc_rewrite *c, hc_tensor *x, int64_t axis, int64_t start, int64_t end) {
    if (c->g->opset < 10) { /* new nodes take the graph's opset: Slice-1 has attributes */
        hc_attr at[3] = {{.name = "starts", .kind = HC_ATTR_INTS, .n = 1, .ints = &start},
                         {.name = "ends", .kind = HC_ATTR_INTS, .n = 1, .ints = &end},
                         {.name = "axes", .kind = HC_ATTR_INTS, .n = 1, .ints = &axis}};
        return hc_rw_emit(c, HC_OPK_SLICE, 1, &x, 3, at);
    }
    hc_tensor *in[4] = {x, hc_pass_const_i64(c->g, hc_rw_fresh(c, "st"), 1, &start),
                        hc_pass_const_i64(c->g, hc_rw_fresh(c, "en"), 1, &end),
                        hc_pass_const_i64(c->g, hc_rw_fresh(c, "ax"), 1, &axis)};
    return hc_rw_emit(c, HC_OPK_SLICE, 4, in, 0, NULL);
}

hc_status hc_rw_replace(hc_rewrite *c, int i, hc_tensor *y) {
    hc_tensor *old = i < c->n->noutputs ? c->n->outputs[i] : NULL;
    if (!old) return HC_OK;
    if (!y) return c->err->status ? c->err->status : HC_ERR_INVALID;
    if (y->dtype != old->dtype || y->ndim != old->ndim ||
        (y->ndim && memcmp(y->shape, old->shape, sizeof(int64_t) * (size_t)y->ndim)))
        return hc_node_fail(c->n, HC_ERR_INVALID, c->err, "lowered output %d has another dtype "
                            "or shape (internal error)", i);
    if (hc_pass_bypass(c->g, old, y)) return HC_OK;
    hc_tensor *id = hc_rw_emit(c, HC_OPK_IDENTITY, 1, &y, 0, NULL); /* y is a graph input */
    if (id && hc_pass_bypass(c->g, old, id)) return HC_OK;
    return hc_node_fail(c->n, HC_ERR_UNSUPPORTED, c->err, "output '%s' cannot be replaced by its "
                        "lowered value", old->name);
}
