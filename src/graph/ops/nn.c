/* nn.c — the nn operator table (convolution, normalization, matrix products, softmax
 * family, pooling) and the helpers the nn*.c files share. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "graph/ops/nn_internal.h"

const hc_op_def hc_ops_nn[] = {
    {HC_OPK_CONV, hc_nn_infer_conv, hc_nn_task_conv},
    {HC_OPK_CONV_TRANSPOSE, hc_nn_infer_conv_transpose, hc_nn_task_conv_transpose},
    {HC_OPK_BATCH_NORMALIZATION, hc_nn_infer_batch_norm, hc_nn_task_batch_norm},
    {HC_OPK_INSTANCE_NORMALIZATION, hc_nn_infer_instance_norm, hc_nn_task_instance_norm},
    {HC_OPK_LAYER_NORMALIZATION, hc_nn_infer_layer_norm, hc_nn_task_layer_norm},
    {HC_OPK_RMS_NORMALIZATION, hc_nn_infer_layer_norm, hc_nn_task_rms_norm},
    {HC_OPK_GROUP_NORMALIZATION, hc_nn_infer_group_norm, hc_nn_task_group_norm},
    {HC_OPK_ROTARY_EMBEDDING, hc_nn_infer_rotary, hc_nn_task_rotary},
    {HC_OPK_ATTENTION, hc_nn_infer_attention, hc_nn_task_attention},
    {HC_OPK_ATTENTION_CORE, hc_nn_infer_attention_core, hc_nn_task_attention_core},
    {HC_OPK_ATTENTION_FUSED, hc_nn_infer_attention_fused, hc_nn_task_attention_fused},
    {HC_OPK_RNN, hc_nn_infer_rnn, hc_nn_task_rnn},
    {HC_OPK_GRU, hc_nn_infer_rnn, hc_nn_task_rnn},
    {HC_OPK_LSTM, hc_nn_infer_rnn, hc_nn_task_rnn},
    {HC_OPK_LP_NORMALIZATION, hc_nn_infer_lp_norm, hc_nn_task_lp_norm},
    {HC_OPK_MEAN_VARIANCE_NORMALIZATION, hc_nn_infer_mvn, hc_nn_task_mvn},
    {HC_OPK_LRN, hc_nn_infer_lrn, hc_nn_task_lrn},
    {HC_OPK_GEMM, hc_nn_infer_gemm, hc_nn_task_gemm},
    {HC_OPK_MATMUL, hc_nn_infer_matmul, hc_nn_task_matmul},
    {HC_OPK_EINSUM, hc_nn_infer_einsum, hc_nn_task_einsum},
    {HC_OPK_DET, hc_nn_infer_det, hc_nn_task_det},
    {HC_OPK_DFT, hc_nn_infer_dft, hc_nn_task_dft},
    {HC_OPK_STFT, hc_nn_infer_stft, hc_nn_task_stft},
    {HC_OPK_SOFTMAX, hc_nn_infer_softmax, hc_nn_task_softmax},
    {HC_OPK_LOG_SOFTMAX, hc_nn_infer_softmax, hc_nn_task_softmax},
    {HC_OPK_HARDMAX, hc_nn_infer_softmax, hc_nn_task_softmax},
    {HC_OPK_MAX_POOL, hc_nn_infer_max_pool, hc_nn_task_max_pool},
    {HC_OPK_AVERAGE_POOL, hc_nn_infer_average_pool, hc_nn_task_average_pool},
    /* the same on NCHW{b}c data, made by the layout pass (docs/nchwc.md) */
    {HC_OPK_MAX_POOL_NCHWC, hc_nn_infer_max_pool, hc_nn_task_max_pool},
    {HC_OPK_AVERAGE_POOL_NCHWC, hc_nn_infer_average_pool, hc_nn_task_average_pool},
    {HC_OPK_LP_POOL, hc_nn_infer_lp_pool, hc_nn_task_lp_pool},
    {HC_OPK_GRID_SAMPLE, hc_nn_infer_grid_sample, hc_nn_task_grid_sample},
    {HC_OPK_COL2IM, hc_nn_infer_col2im, hc_nn_task_col2im},
    {HC_OPK_MAX_UNPOOL, hc_nn_infer_max_unpool, hc_nn_task_max_unpool},
    {HC_OPK_ROI_ALIGN, hc_nn_infer_roi_align, hc_nn_task_roi_align},
    {HC_OPK_IF_SELECT, hc_nn_infer_if_select, hc_nn_task_if_select},
    {HC_OPK_GLOBAL_AVERAGE_POOL, hc_nn_infer_global_pool, hc_nn_task_global_pool},
    {HC_OPK_GLOBAL_MAX_POOL, hc_nn_infer_global_pool, hc_nn_task_global_pool},
    /* quantized: lowered by the lower_quant pass (src/passes/quant.c) */
    {HC_OPK_NLL_LOSS, hc_nn_infer_loss, hc_nn_task_loss},
    {HC_OPK_SOFTMAX_CROSS_ENTROPY_LOSS, hc_nn_infer_loss, hc_nn_task_loss},
    /* ai.onnx.preview.training: lowered by the lower_training pass (src/passes/training.c) */
    {HC_OPK_ADAGRAD, hc_nn_infer_train, hc_nn_task_train},
    {HC_OPK_ADAM, hc_nn_infer_train, hc_nn_task_train},
    {HC_OPK_MOMENTUM, hc_nn_infer_train, hc_nn_task_train},
    {HC_OPK_QUANTIZE_LINEAR, hc_nn_infer_quantize, hc_nn_task_quantize},
    {HC_OPK_DEQUANTIZE_LINEAR, hc_nn_infer_dequantize, hc_nn_task_quantize},
    {HC_OPK_DYNAMIC_QUANTIZE_LINEAR, hc_nn_infer_dynamic_quantize, hc_nn_task_quantize},
    {HC_OPK_MATMUL_INTEGER, hc_nn_infer_matmul_integer, hc_nn_task_quantize},
    {HC_OPK_QLINEAR_MATMUL, hc_nn_infer_qlinear_matmul, hc_nn_task_quantize},
    {HC_OPK_CONV_INTEGER, hc_nn_infer_conv_integer, hc_nn_task_quantize},
    {HC_OPK_QLINEAR_CONV, hc_nn_infer_qlinear_conv, hc_nn_task_quantize},
    {0},
};


const hc_tensor *hc_nn_in(const hc_node *n, int i) {
    return i < n->ninputs ? n->inputs[i] : NULL;
}

bool hc_nn_out_present(const hc_node *n, int i) {
    return i < n->noutputs && n->outputs[i] != NULL;
}

hc_status hc_nn_need_float(const hc_node *n, int i, hc_error *err) {
    const hc_tensor *t = hc_nn_in(n, i);
    HC_ASSERT(t);
    if (!hc_dtype_is_float(t->dtype))
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "input %d ('%s') has dtype %s, expected a "
                       "float type", i, t->name, hc_dtype_name(t->dtype));
    return HC_OK;
}

hc_status hc_nn_need_rank(const hc_node *n, int i, int min, hc_error *err) {
    const hc_tensor *t = hc_nn_in(n, i);
    HC_ASSERT(t);
    if (t->ndim < min)
        return hc_node_fail(n, HC_ERR_INVALID, err,
                            "input %d ('%s') has rank %d, expected at least %d", i, t->name,
                            t->ndim, min);
    return HC_OK;
}

/* An INTS attribute with nsp values (or absent: every value dflt). */
static hc_status window_ints(const hc_node *n, const char *name, int want, int64_t dflt,
                             int64_t *out, hc_error *err) {
    int cnt = 0;
    const int64_t *v = hc_node_attr_ints(n, name, &cnt);
    if (!v || cnt == 0) {
        for (int i = 0; i < want; i++) out[i] = dflt;
        return HC_OK;
    }
    if (cnt != want)
        return hc_node_fail(n, HC_ERR_INVALID, err, "%s has %d values, expected %d", name, cnt,
                            want);
    for (int i = 0; i < want; i++) out[i] = v[i];
    return HC_OK;
}

hc_status hc_nn_window_attrs(const hc_node *n, hc_nn_window *w, bool kernel_from_attr,
                             hc_error *err) {
    int k = w->nsp;
    int64_t pads[2 * HC_MAX_DIMS], kernel[HC_MAX_DIMS];
    if (window_ints(n, "strides", k, 1, w->stride, err) ||
        window_ints(n, "dilations", k, 1, w->dilation, err) ||
        window_ints(n, "pads", 2 * k, 0, pads, err))
        return err ? err->status : HC_ERR_INVALID;
    int cnt = 0;
    const int64_t *ks = hc_node_attr_ints(n, "kernel_shape", &cnt);
    if (kernel_from_attr && !ks)
        return hc_node_fail(n, HC_ERR_INVALID, err, "kernel_shape is required");
    if (ks && window_ints(n, "kernel_shape", k, 1, kernel, err)) return err->status;
    for (int i = 0; i < k; i++) {
        if (ks && !kernel_from_attr && kernel[i] != w->kernel[i])
            return hc_node_fail(n, HC_ERR_INVALID, err,
                                "kernel_shape[%d] = %lld but the weight has "
                                "%lld",
                                i, (long long)kernel[i], (long long)w->kernel[i]);
        if (kernel_from_attr) w->kernel[i] = kernel[i];
        w->pad_begin[i] = pads[i], w->pad_end[i] = pads[k + i];
        if (w->kernel[i] < 1 || w->stride[i] < 1 || w->dilation[i] < 1)
            return hc_node_fail(n, HC_ERR_INVALID, err, "kernel, strides and dilations must be "
                           "positive (dim %d: %lld, %lld, %lld)", i, (long long)w->kernel[i],
                           (long long)w->stride[i], (long long)w->dilation[i]);
        if (pads[i] < 0 || pads[k + i] < 0)
            return hc_node_fail(n, HC_ERR_INVALID, err, "pads must be non-negative");
    }
    return HC_OK;
}

static int64_t ceil_div(int64_t x, int64_t y) {
    return x >= 0 ? (x + y - 1) / y : -((-x) / y);
}

/* Output size of one dim with explicit pads. */
static int64_t explicit_out(const hc_nn_window *w, int i, bool ceil_mode) {
    int64_t ek = (w->kernel[i] - 1) * w->dilation[i] + 1;
    int64_t span = w->in[i] + w->pad_begin[i] + w->pad_end[i] - ek;
    if (span < 0) return 0;
    int64_t out = (ceil_mode ? ceil_div(span, w->stride[i]) : span / w->stride[i]) + 1;
    /* a last window that starts in the end padding is dropped (as in the ONNX reference) */
    if (ceil_mode && (out - 1) * w->stride[i] >= w->in[i] + w->pad_begin[i]) out--;
    return out;
}

hc_status hc_nn_window_forward(const hc_node *n, hc_nn_window *w, bool ceil_mode, hc_error *err) {
    const char *ap = hc_node_attr_string(n, "auto_pad", "NOTSET");
    bool same_upper = strcmp(ap, "SAME_UPPER") == 0, same_lower = strcmp(ap, "SAME_LOWER") == 0;
    bool valid = strcmp(ap, "VALID") == 0;
    if (!same_upper && !same_lower && !valid && strcmp(ap, "NOTSET") != 0 && *ap)
        return hc_node_fail(n, HC_ERR_INVALID, err,
                            "auto_pad '%s' is not one of NOTSET, SAME_UPPER, "
                            "SAME_LOWER, VALID",
                            ap);
    for (int i = 0; i < w->nsp; i++) {
        int64_t ek = (w->kernel[i] - 1) * w->dilation[i] + 1;
        if (same_upper || same_lower) {
            w->out[i] = ceil_div(w->in[i], w->stride[i]);
            int64_t total = HC_MAX(0, (w->out[i] - 1) * w->stride[i] + ek - w->in[i]);
            w->pad_begin[i] = same_upper ? total / 2 : total - total / 2;
            w->pad_end[i] = total - w->pad_begin[i];
            continue;
        }
        if (valid) w->pad_begin[i] = w->pad_end[i] = 0;
        w->out[i] = explicit_out(w, i, ceil_mode);
        if (w->out[i] < 1)
            return hc_node_fail(n, HC_ERR_INVALID, err,
                                "spatial dim %d: window %lld does not fit the "
                                "padded input %lld",
                                i, (long long)ek,
                                (long long)(w->in[i] + w->pad_begin[i] + w->pad_end[i]));
    }
    return HC_OK;
}

hc_expr *hc_nn_guard(hc_arena *a, hc_expr *cond, hc_expr *v, hc_expr *other) {
    return cond ? hc_select(a, cond, v, other) : v;
}

hc_expr *hc_nn_and(hc_arena *a, hc_expr *c, hc_expr *x) {
    return c ? hc_and(a, c, x) : x;
}
