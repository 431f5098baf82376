/* flops.c — see flops.h. Multiply-adds count 2; everything else is a rough per-element
 * figure, because the profile only needs to tell compute-bound kernels from the rest. */
#include "graph/flops.h"

static bool known(const hc_tensor *t) { return t && (t->shape_known || t->data); }

static double numel(const hc_tensor *t) { return known(t) ? (double)hc_tensor_numel(t) : 0; }

static double prod(const int64_t *v, int n) {
    double p = 1;
    for (int i = 0; i < n; i++) p *= (double)v[i];
    return p;
}

/* Operators that only move or reinterpret data. */
static bool moves_data(hc_op_kind op) {
    switch (op) {
    case HC_OPK_RESHAPE: case HC_OPK_FLATTEN: case HC_OPK_TRANSPOSE: case HC_OPK_CONCAT:
    case HC_OPK_SPLIT: case HC_OPK_SLICE: case HC_OPK_GATHER: case HC_OPK_GATHER_ELEMENTS:
    case HC_OPK_GATHER_ND: case HC_OPK_SCATTER_ELEMENTS: case HC_OPK_SCATTER_ND:
    case HC_OPK_SQUEEZE: case HC_OPK_UNSQUEEZE: case HC_OPK_EXPAND: case HC_OPK_TILE:
    case HC_OPK_PAD: case HC_OPK_DEPTH_TO_SPACE: case HC_OPK_SPACE_TO_DEPTH:
    case HC_OPK_TRILU: case HC_OPK_ONE_HOT: case HC_OPK_EYE_LIKE: case HC_OPK_CAST:
    case HC_OPK_CAST_LIKE: case HC_OPK_IDENTITY: case HC_OPK_DROPOUT: case HC_OPK_IM2COL:
    case HC_OPK_WINO_INPUT: case HC_OPK_WINO_OUTPUT: case HC_OPK_TO_NCHWC:
    case HC_OPK_FROM_NCHWC: case HC_OPK_WINO_INPUT_NCHWC: case HC_OPK_WINO_OUTPUT_NCHWC:
        return true;
    default:
        return false;
    }
}

static double matmul_flops(const hc_node *n) {
    const hc_tensor *a = n->inputs[0];
    if (!known(a) || a->ndim < 1) return 0;
    return 2 * numel(n->outputs[0]) * (double)a->shape[a->ndim - 1];
}

static double gemm_flops(const hc_node *n) {
    const hc_tensor *a = n->inputs[0];
    if (!known(a) || a->ndim != 2) return 0;
    int64_t k = hc_node_attr_int(n, "transA", 0) ? a->shape[0] : a->shape[1];
    return 2 * numel(n->outputs[0]) * (double)k;
}

/* W is [Cout, Cin/group, k...] for Conv, [Cin, Cout/group, k...] for ConvTranspose: each
 * element of the outer tensor (Y, resp. X) takes prod(W.shape[1:]) multiply-adds. */
static double conv_flops(const hc_node *n, const hc_tensor *outer) {
    const hc_tensor *w = n->inputs[1];
    if (!known(w) || w->ndim < 2) return 0;
    return 2 * numel(outer) * prod(w->shape + 1, w->ndim - 1);
}

static double pool_flops(const hc_node *n) {
    int cnt = 0;
    const int64_t *k = hc_node_attr_ints(n, "kernel_shape", &cnt);
    return numel(n->outputs[0]) * (k ? prod(k, cnt) : 1);
}

double hc_node_flops(const hc_node *n) {
    if (!n || n->noutputs < 1 || !known(n->outputs[0])) return 0;
    switch (n->op) {
    case HC_OPK_MATMUL: return matmul_flops(n);
    case HC_OPK_GEMM: return gemm_flops(n);
    case HC_OPK_CONV: return conv_flops(n, n->outputs[0]);
    case HC_OPK_CONV_TRANSPOSE: return conv_flops(n, n->inputs[0]);
    case HC_OPK_CONV_NCHWC: /* W [MB, CB, KH, KW, b, b]: CB*KH*KW*b per output element */
        return known(n->inputs[1]) && n->inputs[1]->ndim == 6
                   ? 2 * numel(n->outputs[0]) * prod(n->inputs[1]->shape + 1, 4)
                   : 0;
    case HC_OPK_CONV_NCHWC_Q8: /* W [MB, CB, KH, KW, b/4, b, 4]: CB*KH*KW*b per output */
        return known(n->inputs[1]) && n->inputs[1]->ndim == 7
                   ? 2 * numel(n->outputs[0]) * prod(n->inputs[1]->shape + 1, 3) *
                         n->inputs[1]->shape[5]
                   : 0;
    case HC_OPK_ATTENTION_FUSED: { /* Q K^T and P V: 2 * B*Hq*Sq * T * (D + Dv) */
        const hc_tensor *q = n->inputs[0], *k = n->inputs[1];
        if (!known(q) || !known(k) || q->ndim != 4 || k->ndim != 4) return 0;
        const hc_tensor *y = n->outputs[0];
        return 2 * numel(q) / (double)q->shape[3] * (double)k->shape[2] *
               (double)(q->shape[3] + y->shape[3]);
    }
    case HC_OPK_MAX_POOL: case HC_OPK_AVERAGE_POOL: case HC_OPK_MAX_POOL_NCHWC:
    case HC_OPK_AVERAGE_POOL_NCHWC:
        return pool_flops(n);
    default: break;
    }
    if (moves_data(n->op)) return 0;
    switch (hc_op_class_of(n->op)) {
    case HC_OPC_SOURCE: return 0;
    case HC_OPC_INJECTIVE: return numel(n->outputs[0]);
    case HC_OPC_REDUCE:
    case HC_OPC_ANCHOR: { /* anchors without a formula (Einsum): the largest input */
        double m = 0;
        for (int i = 0; i < n->ninputs; i++)
            if (numel(n->inputs[i]) > m) m = numel(n->inputs[i]);
        return m;
    }
    }
    return 0;
}
