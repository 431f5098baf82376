/* math_impl.h — shared by the math operator files (src/graph/ops/math*.c), private to them.
 *
 * The math category: activations, elementwise arithmetic, comparison and logic
 * (math_elem.c), reductions, ArgMax/ArgMin, CumSum and TopK (math_reduce.c). The table
 * hc_ops_math is in math.c. docs/ops_math.md lists the semantics chosen where ONNX leaves
 * them open. */
#ifndef HC_MATH_IMPL_H
#define HC_MATH_IMPL_H

#include "graph/graph.h"

/* Error "node 'NAME' (OpType): MESSAGE" with status st; returns st. */
/* Input i, which must be present and have a known shape. */
hc_status hc_math_input(const hc_node *n, int i, const hc_tensor **out, hc_error *err);
/* Name for output tnode i (the output tensor's name). */
const char *hc_math_out_name(const hc_node *n, int i);
/* A constant of e's dtype. */
hc_expr *hc_math_num(hc_arena *a, const hc_expr *e, double v);

/* math_elem.c */
hc_status hc_math_infer_unary(hc_node *n, hc_error *err);
hc_task *hc_math_task_unary(hc_arena *a, const hc_node *n, hc_error *err);
hc_status hc_math_infer_nary(hc_node *n, hc_error *err);
hc_task *hc_math_task_nary(hc_arena *a, const hc_node *n, hc_error *err);
hc_status hc_math_infer_clip(hc_node *n, hc_error *err);
hc_task *hc_math_task_clip(hc_arena *a, const hc_node *n, hc_error *err);

/* math_reduce.c */
hc_status hc_math_infer_reduce(hc_node *n, hc_error *err);
hc_task *hc_math_task_reduce(hc_arena *a, const hc_node *n, hc_error *err);
hc_status hc_math_infer_argreduce(hc_node *n, hc_error *err);
hc_task *hc_math_task_argreduce(hc_arena *a, const hc_node *n, hc_error *err);
hc_status hc_math_infer_cumsum(hc_node *n, hc_error *err);
hc_task *hc_math_task_cumsum(hc_arena *a, const hc_node *n, hc_error *err);
hc_status hc_math_infer_topk(hc_node *n, hc_error *err);
hc_task *hc_math_task_topk(hc_arena *a, const hc_node *n, hc_error *err);

#endif
