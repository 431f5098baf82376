/* build.c — sticky-error helpers for writing the builtin models (build.h). */
#include "models/build.h"

#include <string.h>

void hc_mb_init(hc_mb *b, hc_graph *g, uint64_t seed, hc_error *err) {
    b->g = g;
    b->rng.s = seed;
    b->err = err;
    b->failed = false;
}

bool hc_mb_failed(const hc_mb *b) { return b->failed; }

hc_attr hc_mb_int(const char *name, int64_t v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_INT, .i = v};
}

hc_attr hc_mb_float(const char *name, double v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_FLOAT, .f = v};
}

hc_attr hc_mb_ints(hc_mb *b, const char *name, int n, const int64_t *v) {
    int64_t *copy = hc_arena_memdup(&b->g->arena, v, sizeof(int64_t) * (size_t)n);
    return (hc_attr){.name = name, .kind = HC_ATTR_INTS, .n = n, .ints = copy};
}

hc_attr hc_mb_ints2(hc_mb *b, const char *name, int64_t v0, int64_t v1) {
    int64_t v[2] = {v0, v1};
    return hc_mb_ints(b, name, 2, v);
}

hc_attr hc_mb_ints4(hc_mb *b, const char *name, int64_t v) {
    int64_t vs[4] = {v, v, v, v};
    return hc_mb_ints(b, name, 4, vs);
}

static hc_tensor *fail_nomem(hc_mb *b, const char *name) {
    hc_error_set(b->err, HC_ERR_NOMEM, "builtin model: cannot create constant '%s'", name);
    b->failed = true;
    return NULL;
}

hc_tensor *hc_mb_uniform(hc_mb *b, const char *name, int ndim, const int64_t *shape,
                         double lo, double hi) {
    if (b->failed) return NULL;
    hc_tensor *t = hc_graph_constant(b->g, name, HC_F32, ndim, shape, NULL);
    if (!t || !t->data) return fail_nomem(b, name);
    float *p = t->data;
    int64_t n = hc_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) p[i] = (float)hc_rng_uniform(&b->rng, lo, hi);
    return t;
}

hc_tensor *hc_mb_scalar(hc_mb *b, const char *name, float v) {
    if (b->failed) return NULL;
    hc_tensor *t = hc_graph_constant(b->g, name, HC_F32, 0, NULL, &v);
    return t ? t : fail_nomem(b, name);
}

hc_tensor *hc_mb_shape(hc_mb *b, const char *name, int n, const int64_t *dims) {
    if (b->failed) return NULL;
    int64_t len = n;
    hc_tensor *t = hc_graph_constant(b->g, name, HC_I64, 1, &len, dims);
    return t ? t : fail_nomem(b, name);
}

hc_tensor *hc_mb_op(hc_mb *b, hc_op_kind op, const char *name, const char *out_name,
                    int ninputs, hc_tensor *const *inputs, int nattrs, const hc_attr *attrs) {
    if (b->failed) return NULL;
    for (int i = 0; i < ninputs; i++) {
        /* A builder bug, not bad input: every failure path sets b->failed first. */
        HC_ASSERT_MSG(inputs[i] != NULL, name);
    }
    hc_tensor *out = hc_graph_tensor(b->g, out_name, HC_F32, 0, NULL);
    hc_node *n = hc_graph_add_node(b->g, op, name, ninputs, inputs, 1, &out, nattrs, attrs,
                                   b->err);
    if (!n) {
        b->failed = true;
        return NULL;
    }
    if (n->opset == 0) n->opset = b->g->opset;
    return n->outputs[0];
}

hc_tensor *hc_mb_op1(hc_mb *b, hc_op_kind op, const char *name, hc_tensor *x) {
    return hc_mb_op(b, op, name, NULL, 1, &x, 0, NULL);
}

hc_tensor *hc_mb_op2(hc_mb *b, hc_op_kind op, const char *name, hc_tensor *x, hc_tensor *y) {
    hc_tensor *in[2] = {x, y};
    return hc_mb_op(b, op, name, NULL, 2, in, 0, NULL);
}
