/* flops.h — floating-point operations of one graph node, from its operator and shapes.
 *
 * An estimate for profiles (achieved GFLOP/s per kernel), cheap enough to call on every
 * node without building its Task:
 *   MatMul          2 * numel(Y) * K      (batch and broadcast included in numel(Y))
 *   Gemm            2 * M * N * K
 *   Conv            2 * numel(Y) * Cin/group * KH * KW   (any number of spatial dims)
 *   ConvTranspose   2 * numel(X) * Cout/group * KH * KW
 *   fused attention 2 * B * Hq * Sq * T * (D + Dv)   (the two products)
 *   pools           numel(Y) * window
 *   other reductions (softmax, norms, reduce, ...)   numel of the largest input
 *   elementwise arithmetic                           numel(Y)
 *   data movement (reshape, transpose, gather, pad, cast, im2col, ...)   0
 * Shapes must be known (after shape inference); an unknown shape counts 0. */
#ifndef HC_GRAPH_FLOPS_H
#define HC_GRAPH_FLOPS_H

#include "graph/graph.h"

double hc_node_flops(const hc_node *n);

#endif
