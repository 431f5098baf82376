/* shape_internal.h — helpers shared by the shape / data-movement / constant operators
 * (shape.c and shape_*.c). Not a public header. */
#ifndef HC_SHAPE_INTERNAL_H
#define HC_SHAPE_INTERNAL_H

#include "graph/graph.h"

/* Most values a shape-determining input may hold (ranks are <= HC_MAX_DIMS, but Pad
 * has two per dim and Split one per output). */
#define SHP_MAX_VALUES 256

/* Sets err to "node 'NAME' (OpType): <message>" and returns st. */
/* Input slot i, or NULL when absent (omitted or beyond ninputs). */
hc_tensor *hc_shp_in(const hc_node *n, int i);
/* true when input i is present and has no elements (ONNX's "empty" optional inputs). */
bool hc_shp_in_empty(const hc_node *n, int i);
/* Values of the constant integer input i (need_const when not constant). */
hc_status hc_shp_const_ints(const hc_node *n, int i, int64_t *out, int max, int *count,
                         hc_error *err);
/* Values of the constant numeric input i as doubles. */
hc_status hc_shp_const_doubles(const hc_node *n, int i, double *out, int max, int *count,
                            hc_error *err);
/* ONNX TensorProto.DataType code -> dtype; HC_DTYPE_COUNT for strings, complex and
 * unknown codes. */
hc_dtype hc_shp_onnx_dtype(int64_t code);
hc_status hc_shp_infer_window(hc_node *n, hc_error *err);
hc_task *hc_shp_task_window(hc_arena *a, const hc_node *n, hc_error *err);
/* The ONNX name of a TensorProto data type code ("float8e4m3fn"); also for types hidetc
 * has no dtype for. */
const char *hc_shp_onnx_type_name(int64_t code);
/* Normalize axes (negative count from the end) against rank; duplicates are errors. */
hc_status hc_shp_axes(const hc_node *n, const char *what, const int64_t *axes, int count,
                   int rank, int *out, hc_error *err);
/* Copy the shape of input tensor t into out; returns its rank. */
int hc_shp_shape_of(const hc_tensor *t, int64_t *out);

/* Task helper for outputs that read no input (constants, Shape): the node's inputs
 * as fresh tensor_input tnodes, then the one output. */
hc_task *hc_shp_task1(hc_arena *a, const hc_node *n, hc_tnode *out);
/* Fresh axes i0..i(n-1). */
void hc_shp_make_axes(hc_arena *a, int n, hc_var **axes);
/* An index read from a data tensor (any integer type) as i64, negative values wrapped by
 * dim and the result clamped into [0, dim) so that generated code never reads outside
 * the tensor on bad data. */
hc_expr *hc_shp_wrap_index(hc_arena *a, hc_expr *v, hc_expr *dim);
/* A constant-valued tensor (flat element i is vals[i]) as a balanced select tree on
 * the flat index. */
hc_expr *hc_shp_const_table(hc_arena *a, hc_dtype t, int64_t n, const hc_value *vals,
                         hc_expr *flat);
/* Constant values of dtype t from a double or an int64 (exact). */
hc_value hc_shp_num_value(hc_dtype t, double d);
hc_value hc_shp_int_value(hc_dtype t, int64_t i);
/* Every element of the constant tensor t as a value of dtype `to` (integers exact). */
hc_value *hc_shp_tensor_values(hc_arena *a, const hc_tensor *t, hc_dtype to);
/* Row-major flat index of axes over shape. */
hc_expr *hc_shp_flat_index(hc_arena *a, int ndim, const int64_t *shape, hc_var *const *axes);

/* infer / task pairs (one per operator) */
#define SHP_OPS(X)                                                                       \
    X(reshape) X(flatten) X(transpose) X(concat) X(split) X(slice) X(squeeze)             \
    X(unsqueeze) X(expand) X(tile) X(pad) X(center_crop_pad) X(depth_to_space)            \
    X(space_to_depth)                                                                     \
    X(identity) X(dropout)                                                                \
    X(gather) X(gather_elements) X(gather_nd) X(scatter_elements) X(scatter_nd)           \
    X(reverse_sequence)                                                                   \
    X(trilu) X(one_hot) X(eye_like)                                                       \
    X(resize) X(upsample)                                                                 \
    X(shape) X(size) X(cast) X(cast_like) X(constant) X(constant_of_shape) X(range)

#define X(op)                                                                            \
    hc_status hc_shp_infer_##op(hc_node *n, hc_error *err);                                 \
    hc_task *hc_shp_task_##op(hc_arena *a, const hc_node *n, hc_error *err);
SHP_OPS(X)
#undef X

#endif
