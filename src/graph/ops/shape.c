/* shape.c — the table of shape, data-movement and constant operators (hc_ops_shape) and
 * the helpers they share. The operators themselves live in shape_move.c (reshapes,
 * copies, slices, pads), shape_index.c (gathers, scatters, masks), shape_resize.c
 * (Resize, Upsample) and shape_const.c (Shape, Cast, constants). docs/ops_shape.md
 * lists what each supports. */
#include <math.h>
#include <string.h>

#include "graph/ops/shape_internal.h"

const hc_op_def hc_ops_shape[] = {
    {HC_OPK_RESHAPE, hc_shp_infer_reshape, hc_shp_task_reshape},
    {HC_OPK_FLATTEN, hc_shp_infer_flatten, hc_shp_task_flatten},
    {HC_OPK_TRANSPOSE, hc_shp_infer_transpose, hc_shp_task_transpose},
    {HC_OPK_CONCAT, hc_shp_infer_concat, hc_shp_task_concat},
    {HC_OPK_SPLIT, hc_shp_infer_split, hc_shp_task_split},
    {HC_OPK_SLICE, hc_shp_infer_slice, hc_shp_task_slice},
    {HC_OPK_GATHER, hc_shp_infer_gather, hc_shp_task_gather},
    {HC_OPK_GATHER_ELEMENTS, hc_shp_infer_gather_elements, hc_shp_task_gather_elements},
    {HC_OPK_GATHER_ND, hc_shp_infer_gather_nd, hc_shp_task_gather_nd},
    {HC_OPK_SCATTER_ELEMENTS, hc_shp_infer_scatter_elements, hc_shp_task_scatter_elements},
    {HC_OPK_SCATTER_ND, hc_shp_infer_scatter_nd, hc_shp_task_scatter_nd},
    {HC_OPK_SQUEEZE, hc_shp_infer_squeeze, hc_shp_task_squeeze},
    {HC_OPK_UNSQUEEZE, hc_shp_infer_unsqueeze, hc_shp_task_unsqueeze},
    {HC_OPK_EXPAND, hc_shp_infer_expand, hc_shp_task_expand},
    {HC_OPK_TILE, hc_shp_infer_tile, hc_shp_task_tile},
    {HC_OPK_PAD, hc_shp_infer_pad, hc_shp_task_pad},
    {HC_OPK_CENTER_CROP_PAD, hc_shp_infer_center_crop_pad, hc_shp_task_center_crop_pad},
    {HC_OPK_SCATTER, hc_shp_infer_scatter_elements, hc_shp_task_scatter_elements},
    {HC_OPK_REVERSE_SEQUENCE, hc_shp_infer_reverse_sequence, hc_shp_task_reverse_sequence},
    {HC_OPK_RESIZE, hc_shp_infer_resize, hc_shp_task_resize},
    {HC_OPK_UPSAMPLE, hc_shp_infer_upsample, hc_shp_task_upsample},
    {HC_OPK_DEPTH_TO_SPACE, hc_shp_infer_depth_to_space, hc_shp_task_depth_to_space},
    {HC_OPK_SPACE_TO_DEPTH, hc_shp_infer_space_to_depth, hc_shp_task_space_to_depth},
    {HC_OPK_TRILU, hc_shp_infer_trilu, hc_shp_task_trilu},
    {HC_OPK_ONE_HOT, hc_shp_infer_one_hot, hc_shp_task_one_hot},
    {HC_OPK_EYE_LIKE, hc_shp_infer_eye_like, hc_shp_task_eye_like},
    {HC_OPK_SHAPE, hc_shp_infer_shape, hc_shp_task_shape},
    {HC_OPK_SIZE, hc_shp_infer_size, hc_shp_task_size},
    {HC_OPK_CAST, hc_shp_infer_cast, hc_shp_task_cast},
    {HC_OPK_CAST_LIKE, hc_shp_infer_cast_like, hc_shp_task_cast_like},
    {HC_OPK_CONSTANT, hc_shp_infer_constant, hc_shp_task_constant},
    {HC_OPK_CONSTANT_OF_SHAPE, hc_shp_infer_constant_of_shape, hc_shp_task_constant_of_shape},
    {HC_OPK_RANGE, hc_shp_infer_range, hc_shp_task_range},
    {HC_OPK_HANN_WINDOW, hc_shp_infer_window, hc_shp_task_window},
    {HC_OPK_HAMMING_WINDOW, hc_shp_infer_window, hc_shp_task_window},
    {HC_OPK_BLACKMAN_WINDOW, hc_shp_infer_window, hc_shp_task_window},
    {HC_OPK_IDENTITY, hc_shp_infer_identity, hc_shp_task_identity},
    {HC_OPK_DROPOUT, hc_shp_infer_dropout, hc_shp_task_dropout},
    {0},
};

/* ---- errors and inputs ---------------------------------------------------------- */

hc_tensor *hc_shp_in(const hc_node *n, int i) {
    return i >= 0 && i < n->ninputs ? n->inputs[i] : NULL;
}

bool hc_shp_in_empty(const hc_node *n, int i) {
    const hc_tensor *t = hc_shp_in(n, i);
    return t && t->shape_known && hc_tensor_numel(t) == 0;
}

static hc_status const_input(const hc_node *n, int i, int max, int64_t *count, hc_error *err) {
    const hc_tensor *t = hc_shp_in(n, i);
    HC_ASSERT(t);
    if (!t->data && hc_tensor_numel(t) != 0) return hc_node_need_const(n, i, err);
    *count = hc_tensor_numel(t);
    if (*count > max)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "input %d ('%s') has %lld values, at most "
                        "%d are supported", i, t->name, (long long)*count, max);
    return HC_OK;
}

hc_status hc_shp_const_ints(const hc_node *n, int i, int64_t *out, int max, int *count,
                         hc_error *err) {
    int64_t c = 0;
    hc_status st = const_input(n, i, max, &c, err);
    if (st) return st;
    const hc_tensor *t = n->inputs[i];
    if (c > 0 && hc_tensor_const_ints(t, out, max) != c)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input %d ('%s') must hold integers, not %s",
                        i, t->name, hc_dtype_name(t->dtype));
    *count = (int)c;
    return HC_OK;
}

hc_status hc_shp_const_doubles(const hc_node *n, int i, double *out, int max, int *count,
                            hc_error *err) {
    int64_t c = 0;
    hc_status st = const_input(n, i, max, &c, err);
    if (st) return st;
    for (int64_t k = 0; k < c; k++) out[k] = hc_tensor_const_at(n->inputs[i], k);
    *count = (int)c;
    return HC_OK;
}

hc_dtype hc_shp_onnx_dtype(int64_t code) {
    switch (code) {
    case 1: return HC_F32;
    case 2: return HC_U8;
    case 3: return HC_I8;
    case 4: return HC_U16;
    case 5: return HC_I16;
    case 6: return HC_I32;
    case 7: return HC_I64;
    case 9: return HC_BOOL;
    case 10: return HC_F16;
    case 11: return HC_F64;
    case 12: return HC_U32;
    case 13: return HC_U64;
    case 16: return HC_BF16;
    default: return HC_DTYPE_COUNT;
    }
}

const char *hc_shp_onnx_type_name(int64_t code) {
    static const char *const names[] = {
        "undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64",
        "string", "bool", "float16", "double", "uint32", "uint64", "complex64",
        "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
        "float8e5m2fnuz", "uint4", "int4", "float4e2m1", "float8e8m0", "uint2", "int2",
        "float6e2m3", "float6e3m2"};
    if (code < 0 || code >= (int64_t)(sizeof names / sizeof *names)) return "an unknown type";
    return names[code];
}

hc_status hc_shp_axes(const hc_node *n, const char *what, const int64_t *axes, int count,
                   int rank, int *out, hc_error *err) {
    bool seen[HC_MAX_DIMS] = {false};
    for (int i = 0; i < count; i++) {
        int64_t ax = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (ax < 0 || ax >= rank)
            return hc_node_fail(n, HC_ERR_INVALID, err, "%s[%d] = %lld is out of range for rank %d",
                            what, i, (long long)axes[i], rank);
        if (seen[ax])
            return hc_node_fail(n, HC_ERR_INVALID, err, "%s repeats axis %lld", what,
                                (long long)ax);
        seen[ax] = true;
        out[i] = (int)ax;
    }
    return HC_OK;
}

int hc_shp_shape_of(const hc_tensor *t, int64_t *out) {
    memcpy(out, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    return t->ndim;
}

/* ---- task helpers ----------------------------------------------------------------- */
hc_task *hc_shp_task1(hc_arena *a, const hc_node *n, hc_tnode *out) {
    int count;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    return hc_node_task(a, n, count, p, 1, &out);
}

void hc_shp_make_axes(hc_arena *a, int n, hc_var **axes) {
    for (int i = 0; i < n; i++) axes[i] = hc_axis(a, hc_arena_printf(a, "i%d", i));
}

hc_expr *hc_shp_wrap_index(hc_arena *a, hc_expr *v, hc_expr *dim) {
    hc_expr *i = hc_cast(a, hc_type_scalar(HC_I64), v);
    hc_expr *w = hc_select(a, hc_lt(a, i, hc_int(a, 0)), hc_add(a, i, dim), i);
    int64_t c;
    hc_expr *last = hc_expr_is_const_int(dim, &c) ? hc_int(a, c > 0 ? c - 1 : 0)
                                                  : hc_max(a, hc_sub(a, dim, hc_int(a, 1)), hc_int(a, 0));
    return hc_min(a, hc_max(a, w, hc_int(a, 0)), last);
}

hc_value hc_shp_num_value(hc_dtype t, double d) {
    hc_value v = {0};
    if (hc_dtype_is_float(t)) v.f = t == HC_F32 ? (double)(float)d : d;
    else if (t == HC_BOOL) v.i = d != 0;
    else if (hc_dtype_is_signed(t)) v.i = (int64_t)d;
    else v.u = d < 0 ? (uint64_t)(int64_t)d : (uint64_t)d;
    return v;
}

hc_value hc_shp_int_value(hc_dtype t, int64_t i) {
    hc_value v = {0};
    if (hc_dtype_is_float(t)) v.f = t == HC_F32 ? (double)(float)i : (double)i;
    else if (t == HC_BOOL) v.i = i != 0;
    else if (hc_dtype_is_signed(t)) v.i = i;
    else v.u = (uint64_t)i;
    return v;
}

hc_value *hc_shp_tensor_values(hc_arena *a, const hc_tensor *t, hc_dtype to) {
    int64_t n = hc_tensor_numel(t);
    hc_value *v = HC_NEW_ARRAY(a, hc_value, n > 0 ? n : 1);
    if (n > 0 && !hc_dtype_is_float(t->dtype)) {
        /* integers exactly: int64 values beyond 2^53 do not survive a double */
        int64_t *iv = HC_NEW_ARRAY(a, int64_t, n);
        HC_ASSERT(hc_tensor_const_ints(t, iv, n) == n);
        for (int64_t i = 0; i < n; i++) v[i] = hc_shp_int_value(to, iv[i]);
        return v;
    }
    for (int64_t i = 0; i < n; i++) v[i] = hc_shp_num_value(to, hc_tensor_const_at(t, i));
    return v;
}

static hc_expr *table_rec(hc_arena *a, hc_dtype t, int64_t lo, int64_t hi, const hc_value *vals,
                          hc_expr *flat) {
    if (hi - lo == 1) return hc_const(a, t, vals[lo]);
    int64_t mid = lo + (hi - lo) / 2;
    return hc_select(a, hc_lt(a, flat, hc_int(a, mid)), table_rec(a, t, lo, mid, vals, flat),
                     table_rec(a, t, mid, hi, vals, flat));
}

hc_expr *hc_shp_const_table(hc_arena *a, hc_dtype t, int64_t n, const hc_value *vals,
                         hc_expr *flat) {
    if (n <= 0) return hc_const_num(a, t, 0);
    return table_rec(a, t, 0, n, vals, flat);
}

hc_expr *hc_shp_flat_index(hc_arena *a, int ndim, const int64_t *shape, hc_var *const *axes) {
    hc_expr *flat = hc_int(a, 0);
    for (int d = 0; d < ndim; d++)
        flat = hc_add(a, hc_mul(a, flat, hc_int(a, shape[d])), hc_ref(a, axes[d]));
    return flat;
}
