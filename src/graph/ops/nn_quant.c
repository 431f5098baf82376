/* nn_quant.c — the quantized operators' shape and dtype inference (QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger,
 * QLinearConv). They have no Task: the lower_quant pass (src/passes/quant.c) rewrites
 * them into existing ops (casts, elementwise arithmetic, MatMul, Conv) before anything
 * is scheduled, so they compute exactly what the ONNX reference does. */
#include <string.h>

#include "graph/ops/nn_internal.h"
#include "graph/ops/quant.h"
#include "graph/ops/shape_internal.h" /* hc_shp_onnx_dtype, hc_shp_onnx_type_name */

bool hc_op_is_quantized(hc_op_kind op) {
    switch (op) {
    case HC_OPK_QUANTIZE_LINEAR:
    case HC_OPK_DEQUANTIZE_LINEAR:
    case HC_OPK_DYNAMIC_QUANTIZE_LINEAR:
    case HC_OPK_MATMUL_INTEGER:
    case HC_OPK_QLINEAR_MATMUL:
    case HC_OPK_CONV_INTEGER:
    case HC_OPK_QLINEAR_CONV: return true;
    default: return false;
    }
}

static bool is_qtype(hc_dtype d) {
    return d == HC_U8 || d == HC_I8 || d == HC_U16 || d == HC_I16;
}

static bool is_8bit(hc_dtype d) { return d == HC_U8 || d == HC_I8; }

void hc_quant_range(hc_dtype d, double *lo, double *hi) {
    switch (d) {
    case HC_U8: *lo = 0, *hi = 255; return;
    case HC_I8: *lo = -128, *hi = 127; return;
    case HC_U16: *lo = 0, *hi = 65535; return;
    case HC_I16: *lo = -32768, *hi = 32767; return;
    default: *lo = -2147483648.0, *hi = 2147483647.0; return;
    }
}

/* The dtype of ONNX type code attribute `name` (0 / absent: HC_DTYPE_COUNT). */
static hc_status attr_dtype(const hc_node *n, const char *name, hc_dtype *out, hc_error *err) {
    int64_t code = hc_node_attr_int(n, name, 0);
    *out = HC_DTYPE_COUNT;
    if (!code) return HC_OK;
    *out = hc_shp_onnx_dtype(code);
    if (*out == HC_DTYPE_COUNT)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "%s %lld (%s) is not supported", name,
                            (long long)code, hc_shp_onnx_type_name(code));
    return HC_OK;
}

/* The wider of two float dtypes, as numpy promotes them (an integer with f32: f64). */
static hc_dtype promote(hc_dtype a, hc_dtype b) {
    if (!hc_dtype_is_float(a)) return b == HC_F64 || b == HC_F32 ? HC_F64 : HC_F32;
    if (a == b) return a;
    if (a == HC_F64 || b == HC_F64) return HC_F64;
    return HC_F32; /* f32 with f16 / bf16, or f16 with bf16 */
}

/* How scale-like input i applies to x under s (axis, block); sets s->kind. */
static hc_status check_param(const hc_node *n, int i, const char *what, const hc_tensor *x,
                             hc_quant_spec *s, hc_error *err) {
    const hc_tensor *p = hc_nn_in(n, i);
    if (hc_tensor_numel(p) == 1 && p->ndim <= 1) return HC_OK; /* the kind stays */
    if (s->kind == HC_QP_TENSOR && hc_tensor_numel(p) == 1) return HC_OK;
    if (x->ndim == 0 || s->axis < 0 || s->axis >= x->ndim)
        return hc_node_fail(n, HC_ERR_INVALID, err, "axis %d is out of range for rank %d",
                            s->axis, x->ndim);
    int64_t d = x->shape[s->axis];
    if (s->block == 0) {
        if (p->ndim != 1 || p->shape[0] != d)
            return hc_node_fail(n, HC_ERR_INVALID, err, "%s '%s' must be a scalar or 1-D of "
                                "size %lld (x's dimension %d)", what, p->name, (long long)d,
                                s->axis);
        s->kind = HC_QP_AXIS;
        return HC_OK;
    }
    bool ok = p->ndim == x->ndim;
    for (int k = 0; ok && k < x->ndim; k++)
        ok = k == s->axis ? p->shape[k] == (d + s->block - 1) / s->block : p->shape[k] == x->shape[k];
    if (!ok)
        return hc_node_fail(n, HC_ERR_INVALID, err, "%s '%s' does not fit blocks of %lld along "
                            "axis %d of x", what, p->name, (long long)s->block, s->axis);
    s->kind = HC_QP_BLOCK;
    return HC_OK;
}

hc_status hc_quant_parse(const hc_node *n, hc_quant_spec *s, hc_error *err) {
    bool q = n->op == HC_OPK_QUANTIZE_LINEAR;
    memset(s, 0, sizeof *s);
    const hc_tensor *x = hc_nn_in(n, 0), *sc = hc_nn_in(n, 1), *zp = hc_nn_in(n, 2);
    if (!x || !sc) return hc_node_fail(n, HC_ERR_INVALID, err, "x and the scale are required");
    s->has_zp = zp != NULL;
    s->axis = (int)hc_node_attr_int(n, "axis", 1);
    if (s->axis < 0) s->axis += x->ndim;
    s->block = hc_node_attr_int(n, "block_size", 0);
    if (s->block < 0)
        return hc_node_fail(n, HC_ERR_INVALID, err, "block_size %lld", (long long)s->block);
    if (!hc_dtype_is_float(sc->dtype))
        return hc_node_fail(n, HC_ERR_INVALID, err, "scale '%s' is %s, not a float", sc->name,
                            hc_dtype_name(sc->dtype));
    s->kind = HC_QP_TENSOR;
    if (check_param(n, 1, "scale", x, s, err)) return err->status;
    if (zp) { /* one shape, or one value each ([1] and []: ONNX Runtime's quantizer writes
               * such pairs for biases) */
        bool one = hc_tensor_numel(zp) == 1 && hc_tensor_numel(sc) == 1 && zp->ndim <= 1 &&
                   sc->ndim <= 1;
        if (!one && (zp->ndim != sc->ndim ||
                     memcmp(zp->shape, sc->shape, sizeof(int64_t) * (size_t)sc->ndim)))
            return hc_node_fail(n, HC_ERR_INVALID, err, "zero point '%s' and scale '%s' have "
                                "different shapes", zp->name, sc->name);
    }
    hc_dtype od;
    if (attr_dtype(n, "output_dtype", &od, err)) return err->status;
    if (q) {
        if (!hc_dtype_is_float(x->dtype) && x->dtype != HC_I32)
            return hc_node_fail(n, HC_ERR_INVALID, err, "x is %s (float or int32 expected)",
                                hc_dtype_name(x->dtype));
        if (zp && od != HC_DTYPE_COUNT && od != zp->dtype)
            return hc_node_fail(n, HC_ERR_INVALID, err, "output_dtype %s differs from the zero "
                                "point's %s", hc_dtype_name(od), hc_dtype_name(zp->dtype));
        s->out = zp ? zp->dtype : od != HC_DTYPE_COUNT ? od : HC_U8;
        if (!is_qtype(s->out))
            return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "quantization to %s is not supported "
                                "(uint8, int8, uint16, int16 are)", hc_dtype_name(s->out));
        hc_dtype prec;
        if (attr_dtype(n, "precision", &prec, err)) return err->status;
        s->compute = prec != HC_DTYPE_COUNT ? prec : promote(x->dtype, sc->dtype);
        if (!hc_dtype_is_float(s->compute))
            return hc_node_fail(n, HC_ERR_INVALID, err, "precision %s is not a float type",
                                hc_dtype_name(s->compute));
    } else {
        if (!is_qtype(x->dtype) && x->dtype != HC_I32)
            return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "dequantization of %s is not "
                                "supported (uint8, int8, uint16, int16, int32 are)",
                                hc_dtype_name(x->dtype));
        if (zp && zp->dtype != x->dtype)
            return hc_node_fail(n, HC_ERR_INVALID, err, "zero point '%s' is %s, x is %s",
                                zp->name, hc_dtype_name(zp->dtype), hc_dtype_name(x->dtype));
        s->out = od != HC_DTYPE_COUNT ? od : sc->dtype;
        if (!hc_dtype_is_float(s->out))
            return hc_node_fail(n, HC_ERR_INVALID, err, "output_dtype %s is not a float type",
                                hc_dtype_name(s->out));
        s->compute = HC_F32;
    }
    return HC_OK;
}

hc_status hc_nn_infer_quantize(hc_node *n, hc_error *err) {
    hc_quant_spec s;
    if (hc_quant_parse(n, &s, err)) return err->status;
    const hc_tensor *x = hc_nn_in(n, 0);
    hc_node_set_output(n, 0, s.out, x->ndim, x->shape);
    return HC_OK;
}

hc_status hc_nn_infer_dequantize(hc_node *n, hc_error *err) { return hc_nn_infer_quantize(n, err); }

hc_status hc_nn_infer_dynamic_quantize(hc_node *n, hc_error *err) {
    const hc_tensor *x = hc_nn_in(n, 0);
    if (!x) return hc_node_fail(n, HC_ERR_INVALID, err, "x is required");
    if (x->dtype != HC_F32)
        return hc_node_fail(n, HC_ERR_INVALID, err, "x is %s (float expected)",
                            hc_dtype_name(x->dtype));
    if (hc_tensor_numel(x) == 0)
        return hc_node_fail(n, HC_ERR_INVALID, err, "x '%s' is empty: its range is undefined",
                            x->name);
    hc_node_set_output(n, 0, HC_U8, x->ndim, x->shape);
    hc_node_set_output(n, 1, HC_F32, 0, NULL);
    hc_node_set_output(n, 2, HC_U8, 0, NULL);
    return HC_OK;
}

/* A zero point or scale of a matrix operand: one value, or one per row of A (per_row) /
 * per column of B: 1-D of that size, or the operand's rank (numpy broadcasting, checked
 * by the lowering's ops). */
static hc_status mm_param(const hc_node *n, int i, const char *what, const hc_tensor *op,
                          hc_dtype want, bool per_row, hc_error *err) {
    const hc_tensor *p = hc_nn_in(n, i);
    if (!p) return HC_OK;
    if (want != HC_DTYPE_COUNT && p->dtype != want)
        return hc_node_fail(n, HC_ERR_INVALID, err, "%s '%s' is %s, expected %s", what, p->name,
                            hc_dtype_name(p->dtype), hc_dtype_name(want));
    if (hc_tensor_numel(p) == 1) return HC_OK;
    int64_t size = op->ndim < 2 ? -1 : op->shape[op->ndim - (per_row ? 2 : 1)];
    if (p->ndim == 1 && p->shape[0] == size) return HC_OK;
    if (p->ndim == op->ndim && op->ndim >= 2) return HC_OK; /* broadcast: checked when lowered */
    return hc_node_fail(n, HC_ERR_INVALID, err, "%s '%s' must be a scalar or 1-D of size %lld "
                        "(one per %s)", what, p->name, (long long)size,
                        per_row ? "row of A" : "column of B");
}

static hc_status mm_output(hc_node *n, const hc_tensor *A, const hc_tensor *B, hc_dtype out,
                           hc_error *err) {
    hc_nn_mm_dims d;
    if (hc_nn_matmul_dims_of(n, A, B, false, &d, err)) return err->status;
    int64_t shape[HC_MAX_DIMS];
    int nd = d.nb;
    memcpy(shape, d.batch, sizeof(int64_t) * (size_t)d.nb);
    if (!d.a_vec) shape[nd++] = d.m;
    if (!d.b_vec) shape[nd++] = d.n;
    hc_node_set_output(n, 0, out, nd, shape);
    return HC_OK;
}

static hc_status need_8bit(const hc_node *n, int i, const char *what, hc_error *err) {
    const hc_tensor *t = hc_nn_in(n, i);
    if (!t) return hc_node_fail(n, HC_ERR_INVALID, err, "%s (input %d) is required", what, i);
    if (!is_8bit(t->dtype))
        return hc_node_fail(n, HC_ERR_INVALID, err, "%s '%s' is %s (uint8 or int8 expected)", what,
                            t->name, hc_dtype_name(t->dtype));
    return HC_OK;
}

static hc_status need_float_param(const hc_node *n, int i, const char *what, hc_error *err) {
    const hc_tensor *t = hc_nn_in(n, i);
    if (!t) return hc_node_fail(n, HC_ERR_INVALID, err, "%s (input %d) is required", what, i);
    if (!hc_dtype_is_float(t->dtype))
        return hc_node_fail(n, HC_ERR_INVALID, err, "%s '%s' is %s, not a float", what, t->name,
                            hc_dtype_name(t->dtype));
    return HC_OK;
}

hc_status hc_nn_infer_matmul_integer(hc_node *n, hc_error *err) {
    if (need_8bit(n, 0, "A", err) || need_8bit(n, 1, "B", err)) return err->status;
    const hc_tensor *A = hc_nn_in(n, 0), *B = hc_nn_in(n, 1);
    if (mm_param(n, 2, "a_zero_point", A, A->dtype, true, err) ||
        mm_param(n, 3, "b_zero_point", B, B->dtype, false, err))
        return err->status;
    return mm_output(n, A, B, HC_I32, err);
}

hc_status hc_nn_infer_qlinear_matmul(hc_node *n, hc_error *err) {
    if (need_8bit(n, 0, "a", err) || need_8bit(n, 3, "b", err) || need_8bit(n, 7, "y_zero_point", err) ||
        need_float_param(n, 1, "a_scale", err) || need_float_param(n, 4, "b_scale", err) ||
        need_float_param(n, 6, "y_scale", err))
        return err->status;
    const hc_tensor *A = hc_nn_in(n, 0), *B = hc_nn_in(n, 3), *yzp = hc_nn_in(n, 7);
    if (mm_param(n, 1, "a_scale", A, HC_DTYPE_COUNT, true, err) ||
        mm_param(n, 2, "a_zero_point", A, A->dtype, true, err) ||
        mm_param(n, 4, "b_scale", B, HC_DTYPE_COUNT, false, err) ||
        mm_param(n, 5, "b_zero_point", B, B->dtype, false, err))
        return err->status;
    if (hc_tensor_numel(hc_nn_in(n, 6)) != 1 || hc_tensor_numel(yzp) != 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "y_scale and y_zero_point must be scalars");
    return mm_output(n, A, B, yzp->dtype, err);
}

/* ConvInteger / QLinearConv: X input xi, W input wi, bias bi (-1: none). */
static hc_status conv_output(hc_node *n, int xi, int wi, int bi, hc_dtype out, hc_error *err) {
    hc_nn_window w;
    int64_t cg, mg, m;
    if (hc_nn_conv_geometry_of(n, xi, wi, bi, &w, &cg, &mg, &m, err) ||
        hc_nn_window_forward(n, &w, false, err))
        return err->status;
    const hc_tensor *x = hc_nn_in(n, xi);
    int64_t shape[HC_MAX_DIMS] = {x->shape[0], m};
    for (int i = 0; i < w.nsp; i++) shape[2 + i] = w.out[i];
    hc_node_set_output(n, 0, out, x->ndim, shape);
    return HC_OK;
}

/* A conv's per-tensor or per-output-channel parameter (w's zero point / scale). */
static hc_status conv_param(const hc_node *n, int i, const char *what, int64_t m, bool scalar_only,
                            hc_error *err) {
    const hc_tensor *p = hc_nn_in(n, i);
    if (!p || hc_tensor_numel(p) == 1) return HC_OK;
    if (!scalar_only && p->ndim == 1 && p->shape[0] == m) return HC_OK;
    return hc_node_fail(n, HC_ERR_INVALID, err, "%s '%s' must be a scalar%s", what, p->name,
                        scalar_only ? "" : " or 1-D with one value per output channel");
}

hc_status hc_nn_infer_conv_integer(hc_node *n, hc_error *err) {
    if (need_8bit(n, 0, "x", err) || need_8bit(n, 1, "w", err)) return err->status;
    const hc_tensor *x = hc_nn_in(n, 0), *w = hc_nn_in(n, 1);
    const hc_tensor *xz = hc_nn_in(n, 2), *wz = hc_nn_in(n, 3);
    if ((xz && xz->dtype != x->dtype) || (wz && wz->dtype != w->dtype))
        return hc_node_fail(n, HC_ERR_INVALID, err, "zero points must have their inputs' dtypes");
    if (conv_param(n, 2, "x_zero_point", 0, true, err) ||
        conv_param(n, 3, "w_zero_point", w->ndim ? w->shape[0] : 0, false, err))
        return err->status;
    return conv_output(n, 0, 1, -1, HC_I32, err);
}

hc_status hc_nn_infer_qlinear_conv(hc_node *n, hc_error *err) {
    if (need_8bit(n, 0, "x", err) || need_8bit(n, 3, "w", err) || need_8bit(n, 7, "y_zero_point", err) ||
        need_float_param(n, 1, "x_scale", err) || need_float_param(n, 4, "w_scale", err) ||
        need_float_param(n, 6, "y_scale", err))
        return err->status;
    const hc_tensor *x = hc_nn_in(n, 0), *w = hc_nn_in(n, 3), *b = hc_nn_in(n, 8);
    int64_t m = w->ndim ? w->shape[0] : 0;
    if (hc_nn_in(n, 2)->dtype != x->dtype || hc_nn_in(n, 5)->dtype != w->dtype)
        return hc_node_fail(n, HC_ERR_INVALID, err, "zero points must have their inputs' dtypes");
    if (conv_param(n, 1, "x_scale", m, true, err) || conv_param(n, 2, "x_zero_point", m, true, err) ||
        conv_param(n, 4, "w_scale", m, false, err) || conv_param(n, 5, "w_zero_point", m, false, err) ||
        conv_param(n, 6, "y_scale", m, true, err) || conv_param(n, 7, "y_zero_point", m, true, err))
        return err->status;
    if (b && b->dtype != HC_I32)
        return hc_node_fail(n, HC_ERR_INVALID, err, "bias '%s' is %s (int32 expected)", b->name,
                            hc_dtype_name(b->dtype));
    return conv_output(n, 0, 3, 8, hc_nn_in(n, 7)->dtype, err);
}

hc_task *hc_nn_task_quantize(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)a;
    hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "has no Task of its own: the lower_quant pass "
                 "(hc_graph_optimize) rewrites it into casts, arithmetic, MatMul and Conv first");
    return NULL;
}
