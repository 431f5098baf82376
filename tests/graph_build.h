/* graph_build.h — building small test graphs with the graph API (include after test.h):
 *   y = OP(g, RELU, x);  y = OPA(g, CONV, attrs, nattrs, x, w, b);
 * A node the graph rejects is a failed check and aborts: the builder cannot go on. */
#ifndef HC_TESTS_GRAPH_BUILD_H
#define HC_TESTS_GRAPH_BUILD_H

#include <stdlib.h>

#include "graph/graph.h"

static inline hc_tensor *op(hc_graph *g, hc_op_kind k, int nin, hc_tensor **in, int nattrs,
                            const hc_attr *attrs) {
    hc_error err = {0};
    hc_node *n = hc_graph_add_node(g, k, NULL, nin, in, 0, NULL, nattrs, attrs, &err);
    CHECK_MSG(n != NULL, "add %s: %s", hc_op_name(k), err.msg);
    if (!n) abort();
    return n->outputs[0];
}

#define T(...) ((hc_tensor *[]){__VA_ARGS__})
#define NT(...) (int)(sizeof((hc_tensor *[]){__VA_ARGS__}) / sizeof(hc_tensor *))
#define OP(g, kind, ...) op((g), HC_OPK_##kind, NT(__VA_ARGS__), T(__VA_ARGS__), 0, NULL)
#define OPA(g, kind, attrs, nattrs, ...)                                                   \
    op((g), HC_OPK_##kind, NT(__VA_ARGS__), T(__VA_ARGS__), (nattrs), (attrs))

static inline hc_attr ints_attr(const char *name, int n, const int64_t *v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_INTS, .n = n, .ints = (int64_t *)v};
}
static inline hc_attr int_attr(const char *name, int64_t v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_INT, .i = v};
}

/* An f32 constant of random values in [-1, 1) drawn from rng. */
static inline hc_tensor *rand_const(hc_graph *g, hc_rng *rng, int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    float *v = malloc(sizeof(float) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) v[i] = (float)hc_rng_uniform(rng, -1, 1);
    hc_tensor *t = hc_graph_constant(g, NULL, HC_F32, ndim, shape, v);
    free(v);
    return t;
}

/* A 1-D i64 constant (shapes, axes, pads). */
static inline hc_tensor *i64_const(hc_graph *g, int n, const int64_t *v) {
    return hc_graph_constant(g, NULL, HC_I64, 1, (int64_t[]){n}, v);
}

#endif
