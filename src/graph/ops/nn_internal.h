/* nn_internal.h — helpers shared by the nn operator files (src/graph/ops/nn*.c). */
#ifndef HC_NN_INTERNAL_H
#define HC_NN_INTERNAL_H

#include "graph/graph.h"

/* Set err to "node 'NAME' (OpType): <message>" with status st; returns st. */
/* Input i of n, NULL when absent or beyond the node's inputs. */
const hc_tensor *hc_nn_in(const hc_node *n, int i);
/* Einsum's labels (nn_matmul.c): for output dim i, label_of[i]; for operand k and its dim
 * d, label[k][d] (ellipsis dims have labels >= 52: they broadcast). */
hc_status hc_nn_einsum_labels(const hc_node *n, int *nout, int *out_label,
                              int (*label)[HC_MAX_DIMS], hc_error *err);
/* Output i is present (the node wants it). */
bool hc_nn_out_present(const hc_node *n, int i);
/* Float dtypes the nn ops compute in (f16, bf16, f32, f64); error names the node. */
hc_status hc_nn_need_float(const hc_node *n, int i, hc_error *err);
/* Rank of input i must be at least `min`; error names the node. */
hc_status hc_nn_need_rank(const hc_node *n, int i, int min, hc_error *err);

/* Spatial window geometry shared by Conv, ConvTranspose and the pools. */
typedef struct hc_nn_window {
    int nsp;                        /* spatial dims */
    int64_t in[HC_MAX_DIMS];        /* input spatial sizes */
    int64_t out[HC_MAX_DIMS];       /* output spatial sizes */
    int64_t kernel[HC_MAX_DIMS];
    int64_t stride[HC_MAX_DIMS];
    int64_t dilation[HC_MAX_DIMS];
    int64_t pad_begin[HC_MAX_DIMS];
    int64_t pad_end[HC_MAX_DIMS];
} hc_nn_window;

/* Read strides, dilations, pads (nsp values each, defaults 1/1/0) into w; errors name
 * the attribute. kernel_shape is read when `kernel_from_attr` (pools) and checked against
 * w->kernel when already set (Conv's weight). */
hc_status hc_nn_window_attrs(const hc_node *n, hc_nn_window *w, bool kernel_from_attr,
                             hc_error *err);
/* Forward output sizes and pads for auto_pad/NOTSET (Conv, pools); ceil_mode for pools. */
hc_status hc_nn_window_forward(const hc_node *n, hc_nn_window *w, bool ceil_mode, hc_error *err);

/* Reduce-expression helper: `select(cond, v, other)` where cond may be NULL. */
hc_expr *hc_nn_guard(hc_arena *a, hc_expr *cond, hc_expr *v, hc_expr *other);
/* c = c && x (c may be NULL). */
hc_expr *hc_nn_and(hc_arena *a, hc_expr *c, hc_expr *x);

/* Geometry of the ops, for their Tasks and for the targets' templates. */
/* Conv / ConvTranspose: window, input channels per group (cg), output channels per group
 * (mg) and output channels (m_out); errors name the node. */
hc_status hc_nn_conv_geometry(const hc_node *n, bool transpose, hc_nn_window *w, int64_t *cg,
                           int64_t *mg, int64_t *m_out, hc_error *err);
/* MaxPool / AveragePool (and their NCHW{b}c forms): the window. */
hc_status hc_nn_pool_window(const hc_node *n, hc_nn_window *w, hc_error *err);
/* MatMul with numpy batch broadcasting and 1-D operands. */
typedef struct hc_nn_mm_dims {
    int nb;
    int64_t batch[HC_MAX_DIMS];
    int64_t m, n, k;
    bool a_vec, b_vec; /* 1-D operands (their M or N dimension is dropped) */
} hc_nn_mm_dims;
hc_status hc_nn_matmul_dims(const hc_node *n, hc_nn_mm_dims *d, hc_error *err);
/* The same for operands A and B of n (QLinearMatMul's are inputs 0 and 3), their dtypes
 * checked equal when same_dtype. */
hc_status hc_nn_matmul_dims_of(const hc_node *n, const hc_tensor *A, const hc_tensor *B,
                               bool same_dtype, hc_nn_mm_dims *d, hc_error *err);
/* hc_nn_conv_geometry for a forward conv whose X, W and bias are inputs xi, wi and bi of n
 * (bi < 0: no bias), with no dtype checks (ConvInteger, QLinearConv). */
hc_status hc_nn_conv_geometry_of(const hc_node *n, int xi, int wi, int bi, hc_nn_window *w,
                                 int64_t *cg, int64_t *mg, int64_t *m_out, hc_error *err);

/* Op definitions, one file per family. */
#define NN_DECL(x)                                                                       \
    hc_status hc_nn_infer_##x(hc_node *n, hc_error *err);                                   \
    hc_task *hc_nn_task_##x(hc_arena *a, const hc_node *n, hc_error *err);
NN_DECL(conv)
NN_DECL(conv_transpose)
NN_DECL(batch_norm)
NN_DECL(instance_norm)
NN_DECL(layer_norm)
NN_DECL(rms_norm)
NN_DECL(group_norm)
NN_DECL(rotary)
NN_DECL(rnn)
NN_DECL(lp_norm)
NN_DECL(mvn)
NN_DECL(lrn)
NN_DECL(gemm)
NN_DECL(matmul)
NN_DECL(einsum)
NN_DECL(det)
NN_DECL(dft)
NN_DECL(softmax)
NN_DECL(max_pool)
NN_DECL(average_pool)
NN_DECL(global_pool)
NN_DECL(lp_pool)
NN_DECL(grid_sample)
NN_DECL(col2im)
NN_DECL(max_unpool)
NN_DECL(roi_align)
NN_DECL(if_select)
NN_DECL(loss)
NN_DECL(train)
NN_DECL(attention)
NN_DECL(attention_core)
NN_DECL(attention_fused)
NN_DECL(quantize)
/* the other quantized ops: inference only (hc_nn_task_quantize refuses them all) */
hc_status hc_nn_infer_dequantize(hc_node *n, hc_error *err);
hc_status hc_nn_infer_dynamic_quantize(hc_node *n, hc_error *err);
hc_status hc_nn_infer_matmul_integer(hc_node *n, hc_error *err);
hc_status hc_nn_infer_qlinear_matmul(hc_node *n, hc_error *err);
hc_status hc_nn_infer_conv_integer(hc_node *n, hc_error *err);
hc_status hc_nn_infer_qlinear_conv(hc_node *n, hc_error *err);
#undef NN_DECL
/* STFT (nn_dft.c): its constants; the lowering (passes/stft.c) uses them too. */
hc_status hc_nn_stft_params(const hc_node *n, int64_t *step, int64_t *len, int64_t *frames,
                            hc_error *err);
hc_status hc_nn_infer_stft(hc_node *n, hc_error *err);
hc_task *hc_nn_task_stft(hc_arena *a, const hc_node *n, hc_error *err);

#endif
