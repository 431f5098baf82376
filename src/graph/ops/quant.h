/* quant.h — the quantized operators' parameters, read from a node: for their shape
 * inference (nn_quant.c) and for the lower_quant pass that rewrites them into existing
 * ops (src/passes/quant.c). */
#ifndef HC_GRAPH_OPS_QUANT_H
#define HC_GRAPH_OPS_QUANT_H

#include "graph/graph.h"

/* How a scale / zero point applies to x: one value, one per index of `axis`, or one per
 * block of `block` indices along `axis` (the other dims as x's). */
typedef enum hc_qparam_kind { HC_QP_TENSOR, HC_QP_AXIS, HC_QP_BLOCK } hc_qparam_kind;

typedef struct hc_quant_spec {
    hc_qparam_kind kind;
    int axis;        /* normalized to [0, rank) */
    int64_t block;   /* HC_QP_BLOCK */
    hc_dtype out;    /* output dtype */
    hc_dtype compute; /* QuantizeLinear: the dtype x / scale is computed in (precision, 23) */
    bool has_zp;
} hc_quant_spec;

/* QuantizeLinear / DequantizeLinear: validates x, scale (input 1), zero point (input 2)
 * and the attributes; errors name the node. */
hc_status hc_quant_parse(const hc_node *n, hc_quant_spec *s, hc_error *err);
/* The integer range of a quantized dtype (u8, i8, u16, i16, i32). */
void hc_quant_range(hc_dtype d, double *lo, double *hi);
/* Whether op is one of the quantized operators lower_quant rewrites. */
bool hc_op_is_quantized(hc_op_kind op);

#endif
