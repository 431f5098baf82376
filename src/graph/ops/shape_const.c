/* shape_const.c — operators whose values are known at compile time or are conversions:
 * Shape, Size, Constant, ConstantOfShape, Range (SOURCE ops, folded by the passes: their
 * Tasks compute the values without reading the data of any non-constant input), Cast
 * and CastLike. */
#include <math.h>
#include <string.h>

#include "graph/ops/shape_internal.h"

/* Constants are built as select trees over the flat index (a Task has no constant
 * arrays); beyond this many elements that is too slow to be worth it. */
#define CONST_TABLE_MAX (1 << 16)

static const char *out_name(const hc_node *n) { return n->outputs[0]->name; }

/* A one-output task whose value is flat element i of vals. */
static hc_task *table_task(hc_arena *a, const hc_node *n, const hc_value *vals) {
    const hc_tensor *o = n->outputs[0];
    hc_var *ax[HC_MAX_DIMS];
    hc_shp_make_axes(a, o->ndim, ax);
    hc_expr *flat = hc_shp_flat_index(a, o->ndim, o->shape, ax);
    hc_expr *v = hc_shp_const_table(a, o->dtype, hc_tensor_numel(o), vals, flat);
    hc_tnode *y = hc_compute_with_axes(a, out_name(n), o->ndim, o->shape, ax, v);
    return hc_shp_task1(a, n, y);
}

/* ---- Shape / Size --------------------------------------------------------------------- */
static void shape_range(const hc_node *n, int64_t *start, int64_t *end) {
    int64_t r = n->inputs[0]->ndim;
    *start = n->opset >= 15 ? hc_node_attr_int(n, "start", 0) : 0;
    *end = n->opset >= 15 ? hc_node_attr_int(n, "end", r) : r;
    if (*start < 0) *start += r;
    if (*end < 0) *end += r;
    *start = HC_MIN(HC_MAX(*start, 0), r);
    *end = HC_MIN(HC_MAX(*end, *start), r);
}

hc_status hc_shp_infer_shape(hc_node *n, hc_error *err) {
    (void)err;
    int64_t start, end;
    shape_range(n, &start, &end);
    int64_t len = end - start;
    hc_node_set_output(n, 0, HC_I64, 1, &len);
    return HC_OK;
}

hc_task *hc_shp_task_shape(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)err;
    int64_t start, end;
    hc_value vals[HC_MAX_DIMS];
    shape_range(n, &start, &end);
    int cnt;
    hc_tnode *x = hc_node_input_tnodes(a, n, &cnt)[0];
    if (end > start) { /* the dims (expressions when symbolic), by index */
        hc_var *ax = hc_axis(a, "i");
        hc_expr *v = hc_tnode_extent(a, x, (int)end - 1);
        for (int64_t d = end - 2; d >= start; d--)
            v = hc_select(a, hc_eq(a, hc_ref(a, ax), hc_int(a, d - start)),
                          hc_tnode_extent(a, x, (int)d), v);
        return hc_shp_task1(a, n, hc_compute_with_axes(a, out_name(n), 1,
                                                       (int64_t[]){end - start}, &ax, v));
    }
    for (int64_t d = start; d < end; d++)
        vals[d - start] = hc_shp_int_value(HC_I64, n->inputs[0]->shape[d]);
    return table_task(a, n, vals);
}

hc_status hc_shp_infer_size(hc_node *n, hc_error *err) {
    (void)err;
    hc_node_set_output(n, 0, HC_I64, 0, NULL);
    return HC_OK;
}

hc_task *hc_shp_task_size(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)err;
    int cnt;
    hc_tnode *x = hc_node_input_tnodes(a, n, &cnt)[0];
    hc_tnode *y = hc_compute_with_axes(a, out_name(n), 0, NULL, NULL, hc_tnode_numel_expr(a, x));
    return hc_shp_task1(a, n, y);
}

/* ---- Cast / CastLike -------------------------------------------------------------------- */
hc_status hc_shp_infer_cast(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    if (!hc_node_attr(n, "to"))
        return hc_node_fail(n, HC_ERR_INVALID, err, "attribute to is missing");
    int64_t code = hc_node_attr_int(n, "to", 1);
    hc_dtype t = hc_shp_onnx_dtype(code);
    if (t == HC_DTYPE_COUNT)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "cast to ONNX type %lld (%s) is not "
                            "supported", (long long)code, hc_shp_onnx_type_name(code));
    hc_node_set_output(n, 0, t, x->ndim, x->shape);
    return HC_OK;
}

/* ONNX up to opset 18 (the ONNX 1.12 reference and its backend test data) converts
 * float to bfloat16 by truncating the mantissa, not by rounding; from Cast-19 (ONNX 1.14
 * on: the reference and the test data of opsets 19 and later) it rounds to nearest even,
 * as hc_compute_cast does. y = round(x) is off by
 * at most one unit when it rounded away from zero; then the bfloat16 just below |y|
 * is round(y * (1 - 2^-8)): that product lies within half a unit of it (y holds 8
 * significant bits, so the product is exact in f32). */
static hc_expr *truncate_to_bf16(hc_arena *a, hc_expr *x) {
    const hc_type *bf = hc_type_scalar(HC_BF16), *f64 = hc_type_scalar(HC_F64);
    hc_expr *y = hc_cast(a, bf, x), *yd = hc_cast(a, f64, y);
    hc_expr *away = hc_binary(a, HC_OP_GT, hc_math(a, HC_PRIM_ABS, yd, NULL),
                              hc_math(a, HC_PRIM_ABS, hc_cast(a, f64, x), NULL));
    hc_expr *below = hc_cast(a, bf, hc_mul(a, yd, hc_f64(a, 1.0 - 1.0 / 256)));
    return hc_select(a, away, below, y);
}

static hc_task *cast_task(hc_arena *a, const hc_node *n) {
    int count;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    hc_dtype to = n->outputs[0]->dtype;
    hc_tnode *y;
    if (to == HC_BF16 && (p[0]->dtype == HC_F32 || p[0]->dtype == HC_F64) && n->opset < 19) {
        hc_var *ax[HC_MAX_DIMS];
        hc_shp_make_axes(a, p[0]->ndim, ax);
        y = hc_compute_with_axes(a, out_name(n), p[0]->ndim, p[0]->shape, ax,
                                 truncate_to_bf16(a, hc_at_axes(a, p[0], ax)));
    } else {
        y = hc_compute_cast(a, out_name(n), p[0], to);
    }
    return hc_node_task(a, n, count, p, 1, &y);
}

hc_task *hc_shp_task_cast(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)err;
    return cast_task(a, n);
}

hc_status hc_shp_infer_cast_like(hc_node *n, hc_error *err) {
    (void)err;
    const hc_tensor *x = n->inputs[0];
    hc_node_set_output(n, 0, n->inputs[1]->dtype, x->ndim, x->shape);
    return HC_OK;
}

hc_task *hc_shp_task_cast_like(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)err;
    return cast_task(a, n);
}

/* ---- Constant ------------------------------------------------------------------------- */
static const char *const unsupported_values[] = {"sparse_value", "value_string",
                                                 "value_strings"};

hc_status hc_shp_infer_constant(hc_node *n, hc_error *err) {
    const hc_attr *at;
    for (size_t i = 0; i < HC_ARRAY_LEN(unsupported_values); i++)
        if (hc_node_attr(n, unsupported_values[i]))
            return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "attribute %s is not supported",
                            unsupported_values[i]);
    int64_t len;
    if ((at = hc_node_attr(n, "value")) && at->kind == HC_ATTR_TENSOR && at->t) {
        hc_node_set_output(n, 0, at->t->dtype, at->t->ndim, at->t->shape);
    } else if ((at = hc_node_attr(n, "value_float"))) {
        hc_node_set_output(n, 0, HC_F32, 0, NULL);
    } else if ((at = hc_node_attr(n, "value_int"))) {
        hc_node_set_output(n, 0, HC_I64, 0, NULL);
    } else if ((at = hc_node_attr(n, "value_floats"))) {
        len = at->n;
        hc_node_set_output(n, 0, HC_F32, 1, &len);
    } else if ((at = hc_node_attr(n, "value_ints"))) {
        len = at->n;
        hc_node_set_output(n, 0, HC_I64, 1, &len);
    } else {
        return hc_node_fail(n, HC_ERR_INVALID, err, "no value attribute");
    }
    if (hc_tensor_numel(n->outputs[0]) > CONST_TABLE_MAX)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "a Constant node of %lld elements (make it "
                        "an initializer)", (long long)hc_tensor_numel(n->outputs[0]));
    return HC_OK;
}

hc_task *hc_shp_task_constant(hc_arena *a, const hc_node *n, hc_error *err) {
    const hc_attr *at;
    int64_t len = hc_tensor_numel(n->outputs[0]);
    hc_dtype t = n->outputs[0]->dtype;
    hc_value *vals = HC_NEW_ARRAY(a, hc_value, len > 0 ? len : 1);
    if ((at = hc_node_attr(n, "value")) && at->kind == HC_ATTR_TENSOR && at->t) {
        if (len > 0 && !at->t->data) {
            hc_node_fail(n, HC_ERR_INVALID, err, "value has no data");
            return NULL;
        }
        vals = hc_shp_tensor_values(a, at->t, t);
    } else if ((at = hc_node_attr(n, "value_float"))) {
        vals[0] = hc_shp_num_value(t, at->f);
    } else if ((at = hc_node_attr(n, "value_int"))) {
        vals[0] = hc_shp_int_value(t, at->i);
    } else if ((at = hc_node_attr(n, "value_floats"))) {
        for (int64_t i = 0; i < len; i++) vals[i] = hc_shp_num_value(t, at->floats[i]);
    } else if ((at = hc_node_attr(n, "value_ints"))) {
        for (int64_t i = 0; i < len; i++) vals[i] = hc_shp_int_value(t, at->ints[i]);
    }
    return table_task(a, n, vals);
}

/* ---- ConstantOfShape ------------------------------------------------------------------ */
static hc_status cos_value(const hc_node *n, hc_dtype *t, double *v, hc_error *err) {
    const hc_attr *at = hc_node_attr(n, "value");
    *t = HC_F32, *v = 0;
    if (!at) return HC_OK;
    if (at->kind != HC_ATTR_TENSOR || !at->t || hc_tensor_numel(at->t) != 1 || !at->t->data)
        return hc_node_fail(n, HC_ERR_INVALID, err, "value must be a one-element tensor");
    *t = at->t->dtype, *v = hc_tensor_const_at(at->t, 0);
    return HC_OK;
}

hc_status hc_shp_infer_constant_of_shape(hc_node *n, hc_error *err) {
    int64_t s[SHP_MAX_VALUES];
    int cnt;
    hc_dtype t = HC_F32;
    double v;
    hc_status st = hc_shp_const_ints(n, 0, s, HC_MAX_DIMS, &cnt, err);
    if (st || (st = cos_value(n, &t, &v, err))) return st;
    for (int d = 0; d < cnt; d++)
        if (s[d] < 0) return hc_node_fail(n, HC_ERR_INVALID, err, "shape[%d] is negative", d);
    hc_node_set_output(n, 0, t, cnt, s);
    return HC_OK;
}

hc_task *hc_shp_task_constant_of_shape(hc_arena *a, const hc_node *n, hc_error *err) {
    hc_dtype t = HC_F32;
    double v;
    if (cos_value(n, &t, &v, err)) return NULL;
    const hc_tensor *o = n->outputs[0];
    const hc_attr *at = hc_node_attr(n, "value");
    hc_value c = at ? hc_shp_tensor_values(a, at->t, t)[0] : hc_shp_num_value(t, 0);
    hc_var *ax[HC_MAX_DIMS];
    hc_shp_make_axes(a, o->ndim, ax);
    hc_tnode *y = hc_compute_with_axes(a, out_name(n), o->ndim, o->shape, ax, hc_const(a, t, c));
    return hc_shp_task1(a, n, y);
}

/* ---- Range ---------------------------------------------------------------------------- */
static hc_status range_args(const hc_node *n, double *v, int64_t *len, hc_error *err) {
    for (int i = 0; i < 3; i++) {
        int cnt;
        hc_status st = hc_shp_const_doubles(n, i, &v[i], 1, &cnt, err);
        if (st) return st;
        if (cnt != 1) return hc_node_fail(n, HC_ERR_INVALID, err, "input %d must be a scalar", i);
        if (n->inputs[i]->dtype != n->inputs[0]->dtype)
            return hc_node_fail(n, HC_ERR_INVALID, err, "inputs differ in type");
    }
    if (v[2] == 0) return hc_node_fail(n, HC_ERR_INVALID, err, "delta is 0");
    double c = ceil((v[1] - v[0]) / v[2]);
    if (!(c < 1e9)) {
        if (c > 0) return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "more than 1e9 elements");
        c = 0;
    }
    *len = c > 0 ? (int64_t)c : 0;
    return HC_OK;
}

hc_status hc_shp_infer_range(hc_node *n, hc_error *err) {
    double v[3];
    int64_t len;
    hc_status st = range_args(n, v, &len, err);
    if (st) return st;
    hc_node_set_output(n, 0, n->inputs[0]->dtype, 1, &len);
    return HC_OK;
}

hc_task *hc_shp_task_range(hc_arena *a, const hc_node *n, hc_error *err) {
    double v[3];
    int64_t len;
    if (range_args(n, v, &len, err)) return NULL;
    hc_dtype t = n->outputs[0]->dtype;
    hc_var *ax[1];
    hc_shp_make_axes(a, 1, ax);
    /* start + i * delta, evaluated in the output type like the ONNX reference */
    hc_expr *i = hc_cast(a, hc_type_scalar(t), hc_ref(a, ax[0]));
    hc_expr *val = hc_add(a, hc_const_num(a, t, v[0]), hc_mul(a, i, hc_const_num(a, t, v[2])));
    hc_tnode *y = hc_compute_with_axes(a, out_name(n), 1, &len, ax, val);
    return hc_shp_task1(a, n, y);
}

/* ---- HannWindow, HammingWindow, BlackmanWindow (17) ------------------------------------ */
/* y[i] = a0 - a1 cos(2 pi i / N') + a2 cos(4 pi i / N') for i < size, N' = size (periodic,
 * the default) or size - 1 (symmetric): Hann 0.5, 0.5, 0; Hamming 25/46, 21/46, 0 (the
 * spec's alpha and beta); Blackman 0.42, 0.5, 0.08. The size must be a compile-time
 * constant (the output's shape); the values are computed in f64, then cast to
 * output_datatype (default float). */
static hc_status window_args(const hc_node *n, int64_t *len, hc_dtype *t, hc_error *err) {
    double v;
    int cnt;
    hc_status st = hc_shp_const_doubles(n, 0, &v, 1, &cnt, err);
    if (st) return st;
    if (cnt != 1 || (n->inputs[0]->dtype != HC_I32 && n->inputs[0]->dtype != HC_I64))
        return hc_node_fail(n, HC_ERR_INVALID, err, "size must be one int32 or int64 value");
    if (!(v >= 0 && v <= 1e9))
        return hc_node_fail(n, v < 0 ? HC_ERR_INVALID : HC_ERR_UNSUPPORTED, err,
                            "size %g is not in [0, 1e9]", v);
    int64_t code = hc_node_attr_int(n, "output_datatype", 1);
    *t = hc_shp_onnx_dtype(code);
    if (*t == HC_DTYPE_COUNT || *t == HC_BOOL)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "output_datatype %lld (%s) is not "
                            "supported", (long long)code, hc_shp_onnx_type_name(code));
    *len = (int64_t)v;
    return HC_OK;
}

hc_status hc_shp_infer_window(hc_node *n, hc_error *err) {
    int64_t len;
    hc_dtype t = HC_F32;
    hc_status st = window_args(n, &len, &t, err);
    if (st) return st;
    hc_node_set_output(n, 0, t, 1, &len);
    return HC_OK;
}

hc_task *hc_shp_task_window(hc_arena *a, const hc_node *n, hc_error *err) {
    int64_t len;
    hc_dtype t = HC_F32;
    if (window_args(n, &len, &t, err)) return NULL;
    double a0 = 0.5, a1 = 0.5, a2 = 0;
    if (n->op == HC_OPK_HAMMING_WINDOW) a0 = 25.0 / 46, a1 = 21.0 / 46;
    if (n->op == HC_OPK_BLACKMAN_WINDOW) a0 = 0.42, a1 = 0.5, a2 = 0.08;
    bool periodic = hc_node_attr_int(n, "periodic", 1) != 0;
    double np = periodic ? (double)len : (double)len - 1;
    hc_var *ax[1];
    hc_shp_make_axes(a, 1, ax);
    hc_expr *i = hc_cast(a, hc_type_scalar(HC_F64), hc_ref(a, ax[0]));
    /* symmetric with size 1: N' = 0, the one value is a0 - a1 + a2 (the reference's 0/0
     * becomes a cosine of 0 here: the angle's factor is 0) */
    double w = np > 0 ? 2 * M_PI / np : 0;
    hc_expr *th = hc_mul(a, i, hc_const_num(a, HC_F64, w));
    hc_expr *v = hc_sub(a, hc_const_num(a, HC_F64, a0),
                        hc_mul(a, hc_const_num(a, HC_F64, a1), hc_math(a, HC_PRIM_COS, th, NULL)));
    if (a2 != 0)
        v = hc_add(a, v, hc_mul(a, hc_const_num(a, HC_F64, a2),
                                hc_math(a, HC_PRIM_COS, hc_mul(a, th, hc_const_num(a, HC_F64, 2)),
                                        NULL)));
    hc_tnode *y = hc_compute_with_axes(a, out_name(n), 1, &len, ax,
                                       hc_cast(a, hc_type_scalar(t), v));
    return hc_shp_task1(a, n, y);
}
