/* layer_bench.h — helpers of the per-layer benchmarks (bench/winograd.c, bench/conv.c):
 * random constants, one-node graph building, medians. Header-only (each benchmark is a
 * single C file built by hand, see docs/winograd.md and docs/conv_dw.md). */
#ifndef HC_BENCH_LAYER_BENCH_H
#define HC_BENCH_LAYER_BENCH_H

#include <stdio.h>
#include <stdlib.h>

#include "graph/graph.h"

static hc_tensor *rand_const(hc_graph *g, hc_rng *r, int nd, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    float *v = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) v[i] = (float)hc_rng_uniform(r, -0.1, 0.1);
    hc_tensor *t = hc_graph_constant(g, NULL, HC_F32, nd, shape, v);
    free(v);
    return t;
}

static hc_tensor *node(hc_graph *g, hc_op_kind k, int nin, hc_tensor **in, int na,
                       const hc_attr *at) {
    hc_error err = {0};
    hc_node *n = hc_graph_add_node(g, k, NULL, nin, in, 0, NULL, na, at, &err);
    if (!n) {
        fprintf(stderr, "%s\n", err.msg);
        abort();
    }
    return n->outputs[0];
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
