/* ir.c — constructors, type rules, layouts, the builder and generic traversal. */
#include "ir/ir.h"

#include <stdatomic.h>
#include <string.h>

/* ---- dtypes ---------------------------------------------------------------------- */
static const struct {
    const char *name, *ctype;
    int size, is_float, is_signed;
} dtype_info[] = {
#define X(n, s, c, b, f, sg) {s, c, b, f, sg},
    HC_DTYPES(X)
#undef X
};
_Static_assert(HC_ARRAY_LEN(dtype_info) == HC_DTYPE_COUNT, "dtype table");

const char *hc_dtype_name(hc_dtype t) { return dtype_info[t].name; }
const char *hc_dtype_ctype(hc_dtype t) { return dtype_info[t].ctype; }
int hc_dtype_size(hc_dtype t) { return dtype_info[t].size; }
bool hc_dtype_is_float(hc_dtype t) { return dtype_info[t].is_float; }
bool hc_dtype_is_signed(hc_dtype t) { return dtype_info[t].is_signed; }
bool hc_dtype_is_int(hc_dtype t) { return t >= HC_I8 && t <= HC_U64; }
hc_dtype hc_dtype_parse(const char *s) {
    for (int i = 0; i < HC_DTYPE_COUNT; i++)
        if (!strcmp(s, dtype_info[i].name)) return (hc_dtype)i;
    return HC_DTYPE_COUNT;
}

double hc_elem_get(const void *buf, hc_dtype t, int64_t i) {
    switch (t) {
    case HC_BOOL: return ((const uint8_t *)buf)[i] != 0;
    case HC_I8: return ((const int8_t *)buf)[i];
    case HC_I16: return ((const int16_t *)buf)[i];
    case HC_I32: return ((const int32_t *)buf)[i];
    case HC_I64: return (double)((const int64_t *)buf)[i];
    case HC_U8: return ((const uint8_t *)buf)[i];
    case HC_U16: return ((const uint16_t *)buf)[i];
    case HC_U32: return ((const uint32_t *)buf)[i];
    case HC_U64: return (double)((const uint64_t *)buf)[i];
    case HC_F16: return (double)((const _Float16 *)buf)[i];
    case HC_BF16: {
        uint32_t u = (uint32_t)((const uint16_t *)buf)[i] << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case HC_F32: return ((const float *)buf)[i];
    case HC_F64: return ((const double *)buf)[i];
    default: hc_unreachable();
    }
}

/* v as an integer without undefined behaviour: truncated toward zero, clamped to the i64
 * range (NaN: 0), then wrapped to the type's width (C's conversion to unsigned). */
static uint64_t int_bits(double v) {
    if (!(v == v)) return 0;
    if (v >= 18446744073709551616.0) return UINT64_MAX;
    if (v >= 9223372036854775808.0) return (uint64_t)v; /* u64 above i64 */
    if (v <= -9223372036854775808.0) return (uint64_t)INT64_MIN;
    return (uint64_t)(int64_t)v;
}

void hc_elem_set(void *buf, hc_dtype t, int64_t i, double v) {
    switch (t) {
    case HC_BOOL: ((uint8_t *)buf)[i] = v != 0; return;
    case HC_I8: ((uint8_t *)buf)[i] = (uint8_t)int_bits(v); return;
    case HC_I16: ((uint16_t *)buf)[i] = (uint16_t)int_bits(v); return;
    case HC_I32: ((uint32_t *)buf)[i] = (uint32_t)int_bits(v); return;
    case HC_I64: ((uint64_t *)buf)[i] = int_bits(v); return;
    case HC_U8: ((uint8_t *)buf)[i] = (uint8_t)int_bits(v); return;
    case HC_U16: ((uint16_t *)buf)[i] = (uint16_t)int_bits(v); return;
    case HC_U32: ((uint32_t *)buf)[i] = (uint32_t)int_bits(v); return;
    case HC_U64: ((uint64_t *)buf)[i] = int_bits(v); return;
    case HC_F16: ((_Float16 *)buf)[i] = (_Float16)v; return;
    case HC_BF16: ((uint16_t *)buf)[i] = hc_f32_to_bf16((float)v); return;
    case HC_F32: ((float *)buf)[i] = (float)v; return;
    case HC_F64: ((double *)buf)[i] = v; return;
    default: hc_unreachable();
    }
}

const char *hc_scope_name(hc_scope s) {
    switch (s) {
    case HC_SCOPE_GLOBAL: return "global";
    case HC_SCOPE_SHARED: return "shared";
    case HC_SCOPE_REGISTER: return "register";
    }
    return "?";
}

static const char *builtin_names[] = {
#define X(n, s) s,
    HC_BUILTINS(X)
#undef X
};
_Static_assert(HC_ARRAY_LEN(builtin_names) == HC_BUILTIN_COUNT, "builtin table");
const char *hc_builtin_name(hc_builtin b) { return builtin_names[b]; }

static const struct {
    const char *sym;
    int cmp;
} binop_info[] = {
#define X(n, s, c) {s, c},
    HC_BINOPS(X)
#undef X
};
_Static_assert(HC_ARRAY_LEN(binop_info) == HC_BINOP_COUNT, "binop table");
const char *hc_binop_symbol(hc_binop op) { return binop_info[op].sym; }
bool hc_binop_is_comparison(hc_binop op) { return binop_info[op].cmp; }

const char *hc_unop_symbol(hc_unop op) {
    switch (op) {
    case HC_OP_NEG: return "-";
    case HC_OP_NOT: return "!";
    case HC_OP_BITNOT: return "~";
    }
    return "?";
}

static const struct {
    const char *name;
    int arity, vector;
} prim_info[] = {
#define X(n, s, a, k) {s, a, k},
    HC_PRIMS(X)
#undef X
};
_Static_assert(HC_ARRAY_LEN(prim_info) == HC_PRIM_COUNT, "prim table");
const char *hc_prim_name(hc_prim p) { return prim_info[p].name; }
int hc_prim_arity(hc_prim p) { return prim_info[p].arity; }
bool hc_prim_is_vector(hc_prim p) { return prim_info[p].vector; }
bool hc_prim_has_effect(hc_prim p) {
    switch (p) {
    case HC_PRIM_VSTORE:
    case HC_PRIM_VSTORE_MASK:
    case HC_PRIM_PREFETCH:
    case HC_PRIM_VSTORE_BF16:
    case HC_PRIM_TILE_CONFIG:
    case HC_PRIM_TILE_RELEASE:
    case HC_PRIM_TILE_ZERO:
    case HC_PRIM_TILE_LOAD:
    case HC_PRIM_TILE_STORE:
    case HC_PRIM_TILE_DP_BF16: return true;
    default: return false;
    }
}

const char *hc_reduce_kind_name(hc_reduce_kind k) {
    switch (k) {
    case HC_REDUCE_SUM: return "sum";
    case HC_REDUCE_MAX: return "max";
    case HC_REDUCE_MIN: return "min";
    case HC_REDUCE_AVG: return "avg";
    case HC_REDUCE_PROD: return "prod";
    }
    return "?";
}

/* ---- types ----------------------------------------------------------------------- */
static const hc_type scalar_types[] = {
#define X(n, s, c, b, f, sg) {.kind = HC_TY_SCALAR, .dtype = HC_##n},
    HC_DTYPES(X)
#undef X
};

const hc_type *hc_type_scalar(hc_dtype t) {
    HC_ASSERT(t < HC_DTYPE_COUNT);
    return &scalar_types[t];
}

const hc_type *hc_type_vector(hc_arena *a, hc_dtype t, int lanes) {
    hc_type *ty = HC_NEW(a, hc_type);
    ty->kind = HC_TY_VECTOR, ty->dtype = t, ty->lanes = lanes;
    return ty;
}

const hc_type *hc_type_pointer(hc_arena *a, const hc_type *pointee) {
    hc_type *ty = HC_NEW(a, hc_type);
    ty->kind = HC_TY_POINTER, ty->pointee = pointee;
    ty->dtype = pointee->kind == HC_TY_POINTER ? HC_VOID : pointee->dtype;
    return ty;
}

const hc_type *hc_type_tensor(hc_arena *a, hc_dtype t, int ndim, hc_expr *const *shape,
                              const hc_layout *layout, hc_scope scope) {
    HC_ASSERT(ndim >= 0 && ndim <= HC_MAX_DIMS);
    hc_type *ty = HC_NEW(a, hc_type);
    ty->kind = HC_TY_TENSOR, ty->dtype = t, ty->ndim = ndim, ty->scope = scope;
    ty->shape = hc_arena_memdup(a, shape, sizeof(hc_expr *) * (size_t)ndim);
    ty->layout = layout ? layout : hc_layout_row_major(a, ndim, ty->shape);
    return ty;
}

const hc_type *hc_type_tensor_c(hc_arena *a, hc_dtype t, int ndim, const int64_t *shape,
                                hc_scope scope) {
    hc_expr *dims[HC_MAX_DIMS];
    for (int i = 0; i < ndim; i++) dims[i] = hc_int(a, shape[i]);
    return hc_type_tensor(a, t, ndim, dims, NULL, scope);
}

const hc_type *hc_type_tensor_vec(hc_arena *a, hc_dtype t, int lanes, int ndim,
                                  hc_expr *const *shape, const hc_layout *layout, hc_scope scope) {
    hc_type *ty = (hc_type *)hc_type_tensor(a, t, ndim, shape, layout, scope);
    ty->lanes = lanes > 1 ? lanes : 0;
    return ty;
}

bool hc_type_equal(const hc_type *x, const hc_type *y) {
    if (x == y) return true;
    if (x->kind != y->kind || x->dtype != y->dtype) return false;
    switch (x->kind) {
    case HC_TY_SCALAR: return true;
    case HC_TY_VECTOR: return x->lanes == y->lanes;
    case HC_TY_POINTER: return hc_type_equal(x->pointee, y->pointee);
    case HC_TY_TENSOR:
        if (x->ndim != y->ndim || x->scope != y->scope || x->lanes != y->lanes) return false;
        for (int i = 0; i < x->ndim; i++)
            if (!hc_expr_equal(x->shape[i], y->shape[i])) return false;
        return true;
    }
    return false;
}

static int dtype_rank(hc_dtype t) {
    switch (t) {
    case HC_BOOL: return 0;
    case HC_I8: case HC_U8: return 1;
    case HC_I16: case HC_U16: return 2;
    case HC_I32: case HC_U32: return 3;
    case HC_I64: case HC_U64: return 4;
    case HC_F16: case HC_BF16: return 5;
    case HC_F32: return 6;
    case HC_F64: return 7;
    default: return -1;
    }
}

const hc_type *hc_type_promote(hc_arena *a, const hc_type *x, const hc_type *y) {
    if (hc_type_equal(x, y)) return x;
    if (x->kind == HC_TY_POINTER) return x; /* pointer arithmetic */
    if (y->kind == HC_TY_POINTER) return y;
    int lanes = 0;
    if (x->kind == HC_TY_VECTOR) lanes = x->lanes;
    if (y->kind == HC_TY_VECTOR) lanes = y->lanes;
    hc_dtype d = x->dtype;
    if (dtype_rank(y->dtype) > dtype_rank(x->dtype)) d = y->dtype;
    /* float beats int even when narrower; keep the wider float. */
    if (hc_dtype_is_float(x->dtype) && !hc_dtype_is_float(y->dtype)) d = x->dtype;
    if (hc_dtype_is_float(y->dtype) && !hc_dtype_is_float(x->dtype)) d = y->dtype;
    /* A vector's element type wins over a scalar of another type (e.g. f32x16 * f64 const). */
    if (x->kind == HC_TY_VECTOR && y->kind != HC_TY_VECTOR) d = x->dtype;
    if (y->kind == HC_TY_VECTOR && x->kind != HC_TY_VECTOR) d = y->dtype;
    return lanes ? hc_type_vector(a, d, lanes) : hc_type_scalar(d);
}

/* ---- layouts --------------------------------------------------------------------- */
static hc_layout *layout_new(hc_arena *a, hc_layout_kind k, int ndim, hc_expr *const *shape) {
    hc_layout *l = HC_NEW(a, hc_layout);
    l->kind = k, l->ndim = ndim;
    l->shape = hc_arena_memdup(a, shape, sizeof(hc_expr *) * (size_t)ndim);
    return l;
}
const hc_layout *hc_layout_row_major(hc_arena *a, int ndim, hc_expr *const *shape) {
    return layout_new(a, HC_LAYOUT_ROW_MAJOR, ndim, shape);
}
const hc_layout *hc_layout_col_major(hc_arena *a, int ndim, hc_expr *const *shape) {
    return layout_new(a, HC_LAYOUT_COL_MAJOR, ndim, shape);
}
const hc_layout *hc_layout_strided(hc_arena *a, int ndim, hc_expr *const *shape,
                                   hc_expr *const *strides) {
    hc_layout *l = layout_new(a, HC_LAYOUT_STRIDED, ndim, shape);
    l->strides = hc_arena_memdup(a, strides, sizeof(hc_expr *) * (size_t)ndim);
    return l;
}
const hc_layout *hc_layout_local(hc_arena *a, int ndim, hc_expr *const *shape) {
    return layout_new(a, HC_LAYOUT_LOCAL, ndim, shape);
}
const hc_layout *hc_layout_swizzle(hc_arena *a, hc_expr *rows, hc_expr *cols) {
    hc_expr *shape[2] = {rows, cols};
    return layout_new(a, HC_LAYOUT_SWIZZLE, 2, shape);
}
const hc_layout *hc_layout_compose(hc_arena *a, const hc_layout *outer, const hc_layout *inner) {
    HC_ASSERT(outer->ndim == inner->ndim);
    hc_expr *shape[HC_MAX_DIMS];
    for (int i = 0; i < outer->ndim; i++) shape[i] = hc_mul(a, outer->shape[i], inner->shape[i]);
    hc_layout *l = layout_new(a, HC_LAYOUT_COMPOSE, outer->ndim, shape);
    l->outer = outer, l->inner = inner;
    return l;
}

hc_expr *hc_layout_storage_size(hc_arena *a, const hc_layout *l) {
    switch (l->kind) {
    case HC_LAYOUT_LOCAL: return hc_int(a, 1);
    case HC_LAYOUT_STRIDED: {
        /* 1 + sum (shape_i - 1) * stride_i */
        hc_expr *s = hc_int(a, 1);
        for (int i = 0; i < l->ndim; i++)
            s = hc_add(a, s, hc_mul(a, hc_sub(a, l->shape[i], hc_int(a, 1)), l->strides[i]));
        return s;
    }
    case HC_LAYOUT_COMPOSE:
        return hc_mul(a, hc_layout_storage_size(a, l->outer), hc_layout_storage_size(a, l->inner));
    default: {
        hc_expr *s = hc_int(a, 1);
        for (int i = 0; i < l->ndim; i++) s = hc_mul(a, s, l->shape[i]);
        return s;
    }
    }
}

hc_expr *hc_layout_offset(hc_arena *a, const hc_layout *l, hc_expr *const *idx) {
    int n = l->ndim;
    switch (l->kind) {
    case HC_LAYOUT_ROW_MAJOR: {
        hc_expr *off = n ? idx[0] : hc_int(a, 0);
        for (int i = 1; i < n; i++) off = hc_add(a, hc_mul(a, off, l->shape[i]), idx[i]);
        return off;
    }
    case HC_LAYOUT_COL_MAJOR: {
        hc_expr *off = n ? idx[n - 1] : hc_int(a, 0);
        for (int i = n - 2; i >= 0; i--) off = hc_add(a, hc_mul(a, off, l->shape[i]), idx[i]);
        return off;
    }
    case HC_LAYOUT_STRIDED: {
        hc_expr *off = hc_int(a, 0);
        for (int i = 0; i < n; i++) off = hc_add(a, off, hc_mul(a, idx[i], l->strides[i]));
        return off;
    }
    case HC_LAYOUT_LOCAL: return hc_int(a, 0);
    case HC_LAYOUT_SWIZZLE: {
        hc_expr *row = idx[0], *col = idx[1], *cols = l->shape[1];
        hc_expr *sw = hc_binary(a, HC_OP_BITXOR, col, hc_mod(a, row, cols));
        return hc_add(a, hc_mul(a, row, cols), sw);
    }
    case HC_LAYOUT_COMPOSE: {
        hc_expr *oi[HC_MAX_DIMS], *ii[HC_MAX_DIMS];
        for (int i = 0; i < n; i++) {
            oi[i] = hc_div(a, idx[i], l->inner->shape[i]);
            ii[i] = hc_mod(a, idx[i], l->inner->shape[i]);
        }
        return hc_add(a,
                      hc_mul(a, hc_layout_offset(a, l->outer, oi),
                             hc_layout_storage_size(a, l->inner)),
                      hc_layout_offset(a, l->inner, ii));
    }
    }
    hc_unreachable();
}

/* ---- variables ------------------------------------------------------------------- */
static atomic_int next_var_id = 1;

hc_var *hc_var_new(hc_arena *a, const char *name, const hc_type *type) {
    hc_var *v = HC_NEW(a, hc_var);
    v->name = hc_arena_strdup(a, name && *name ? name : "v");
    v->type = type;
    v->id = atomic_fetch_add(&next_var_id, 1);
    return v;
}

hc_var *hc_var_builtin(hc_arena *a, hc_builtin b) {
    hc_var *v = hc_var_new(a, hc_builtin_name(b), hc_type_scalar(HC_INDEX_TYPE));
    v->builtin = b;
    return v;
}

/* ---- expressions ----------------------------------------------------------------- */
static hc_expr *expr_new(hc_arena *a, hc_expr_kind k, const hc_type *t) {
    hc_expr *e = HC_NEW(a, hc_expr);
    e->kind = k, e->type = t;
    return e;
}

hc_expr *hc_const(hc_arena *a, hc_dtype t, hc_value v) {
    hc_expr *e = expr_new(a, HC_E_CONST, hc_type_scalar(t));
    e->u.c = v;
    return e;
}
hc_expr *hc_int(hc_arena *a, int64_t v) { return hc_const(a, HC_I64, (hc_value){.i = v}); }
hc_expr *hc_i32(hc_arena *a, int32_t v) { return hc_const(a, HC_I32, (hc_value){.i = v}); }
hc_expr *hc_f32(hc_arena *a, double v) { return hc_const(a, HC_F32, (hc_value){.f = (float)v}); }
hc_expr *hc_f64(hc_arena *a, double v) { return hc_const(a, HC_F64, (hc_value){.f = v}); }
hc_expr *hc_bool(hc_arena *a, bool v) { return hc_const(a, HC_BOOL, (hc_value){.i = v}); }

hc_expr *hc_ref(hc_arena *a, hc_var *v) {
    hc_expr *e = expr_new(a, HC_E_VAR, v->type);
    e->u.var = v;
    return e;
}

hc_expr *hc_binary(hc_arena *a, hc_binop op, hc_expr *x, hc_expr *y) {
    HC_ASSERT(x && y);
    const hc_type *t;
    if (hc_binop_is_comparison(op) || op == HC_OP_AND || op == HC_OP_OR) {
        const hc_type *p = hc_type_promote(a, x->type, y->type);
        t = p->kind == HC_TY_VECTOR ? hc_type_vector(a, HC_BOOL, p->lanes) : hc_type_scalar(HC_BOOL);
    } else if (op == HC_OP_SHL || op == HC_OP_SHR) {
        t = x->type;
    } else {
        t = hc_type_promote(a, x->type, y->type);
    }
    hc_expr *e = expr_new(a, HC_E_BINARY, t);
    e->u.bin.op = op, e->u.bin.a = x, e->u.bin.b = y;
    return e;
}

hc_expr *hc_unary(hc_arena *a, hc_unop op, hc_expr *x) {
    hc_expr *e = expr_new(a, HC_E_UNARY, op == HC_OP_NOT ? hc_type_scalar(HC_BOOL) : x->type);
    e->u.un.op = op, e->u.un.a = x;
    return e;
}

hc_expr *hc_select(hc_arena *a, hc_expr *cond, hc_expr *t, hc_expr *f) {
    hc_expr *e = expr_new(a, HC_E_SELECT, hc_type_promote(a, t->type, f->type));
    e->u.sel.cond = cond, e->u.sel.t = t, e->u.sel.f = f;
    return e;
}

hc_expr *hc_cast(hc_arena *a, const hc_type *to, hc_expr *x) {
    hc_expr *e = expr_new(a, HC_E_CAST, to);
    e->u.cast.a = x;
    return e;
}

hc_expr *hc_call(hc_arena *a, hc_prim p, const hc_type *result, int nargs, hc_expr **args) {
    HC_ASSERT_MSG(nargs == hc_prim_arity(p), hc_prim_name(p));
    hc_expr *e = expr_new(a, HC_E_CALL, result);
    e->u.call.prim = p, e->u.call.nargs = nargs;
    e->u.call.args = hc_arena_memdup(a, args, sizeof(hc_expr *) * (size_t)nargs);
    return e;
}

hc_expr *hc_math(hc_arena *a, hc_prim p, hc_expr *x, hc_expr *y) {
    hc_expr *args[2] = {x, y};
    const hc_type *t = x->type;
    if (y) t = hc_type_promote(a, x->type, y->type);
    if (p == HC_PRIM_ISNAN || p == HC_PRIM_ISINF)
        t = x->type->kind == HC_TY_VECTOR ? hc_type_vector(a, HC_BOOL, x->type->lanes)
                                          : hc_type_scalar(HC_BOOL);
    return hc_call(a, p, t, y ? 2 : 1, args);
}

static const hc_type *element_type(hc_arena *a, hc_var *buf) {
    const hc_type *t = buf->type;
    if (t->kind == HC_TY_TENSOR)
        return t->lanes > 1 ? hc_type_vector(a, t->dtype, t->lanes) : hc_type_scalar(t->dtype);
    HC_ASSERT_MSG(t->kind == HC_TY_POINTER, "load/store through a non-buffer variable");
    return t->pointee;
}

hc_expr *hc_load(hc_arena *a, hc_var *buf, int n, hc_expr *const *idx) {
    hc_expr *e = expr_new(a, HC_E_LOAD, element_type(a, buf));
    e->u.load.buf = buf, e->u.load.n = n;
    e->u.load.idx = hc_arena_memdup(a, idx, sizeof(hc_expr *) * (size_t)n);
    return e;
}

hc_expr *hc_address(hc_arena *a, hc_var *buf, int n, hc_expr *const *idx) {
    hc_expr *e = expr_new(a, HC_E_ADDRESS, hc_type_pointer(a, element_type(a, buf)));
    e->u.load.buf = buf, e->u.load.n = n;
    e->u.load.idx = hc_arena_memdup(a, idx, sizeof(hc_expr *) * (size_t)n);
    return e;
}

hc_expr *hc_reduce(hc_arena *a, hc_reduce_kind k, int naxes, hc_var *const *axes,
                   const int64_t *extents, hc_expr *value) {
    hc_expr *e = expr_new(a, HC_E_REDUCE, value->type);
    e->u.reduce.kind = k, e->u.reduce.naxes = naxes, e->u.reduce.value = value;
    e->u.reduce.axes = hc_arena_memdup(a, axes, sizeof(hc_var *) * (size_t)naxes);
    e->u.reduce.extents = hc_arena_memdup(a, extents, sizeof(int64_t) * (size_t)naxes);
    return e;
}

hc_expr *hc_reduce_sym(hc_arena *a, hc_reduce_kind k, int naxes, hc_var *const *axes,
                       const int64_t *extents, hc_expr *const *sext, hc_expr *value) {
    hc_expr *e = hc_reduce(a, k, naxes, axes, extents, value);
    bool any = false;
    for (int i = 0; sext && i < naxes; i++) any |= sext[i] != NULL;
    if (any) e->u.reduce.sext = hc_arena_memdup(a, sext, sizeof(hc_expr *) * (size_t)naxes);
    return e;
}

hc_expr *hc_reduce_extent(hc_arena *a, const hc_expr *r, int i) {
    HC_ASSERT(r->kind == HC_E_REDUCE && i >= 0 && i < r->u.reduce.naxes);
    if (r->u.reduce.sext && r->u.reduce.sext[i]) return r->u.reduce.sext[i];
    return hc_int(a, r->u.reduce.extents[i]);
}

bool hc_reduce_is_symbolic(const hc_expr *r) { return r->u.reduce.sext != NULL; }

void hc_reduce_set_extent(hc_arena *a, hc_expr *r, int i, hc_expr *e) {
    HC_ASSERT(r->kind == HC_E_REDUCE && i >= 0 && i < r->u.reduce.naxes);
    if (!e) return;
    if (!r->u.reduce.sext) r->u.reduce.sext = HC_NEW_ARRAY(a, hc_expr *, r->u.reduce.naxes);
    r->u.reduce.sext[i] = e;
}

/* hc_tensor_access lives in src/task/task.c: it needs the tensor node's dtype. */

bool hc_expr_is_const_int(const hc_expr *e, int64_t *v) {
    if (e->kind != HC_E_CONST || e->type->kind != HC_TY_SCALAR) return false;
    if (!hc_dtype_is_int(e->type->dtype) && e->type->dtype != HC_BOOL) return false;
    if (v) *v = e->u.c.i;
    return true;
}

/* ---- statements ------------------------------------------------------------------ */
static hc_stmt *stmt_new(hc_arena *a, hc_stmt_kind k) {
    hc_stmt *s = HC_NEW(a, hc_stmt);
    s->kind = k;
    return s;
}
hc_stmt *hc_seq(hc_arena *a, int n, hc_stmt *const *stmts) {
    hc_stmt *s = stmt_new(a, HC_S_SEQ);
    s->u.seq.n = n;
    s->u.seq.stmts = hc_arena_memdup(a, stmts, sizeof(hc_stmt *) * (size_t)n);
    return s;
}
hc_stmt *hc_declare(hc_arena *a, hc_var *v, hc_expr *init) {
    hc_stmt *s = stmt_new(a, HC_S_DECLARE);
    s->u.decl.var = v, s->u.decl.init = init;
    return s;
}
hc_stmt *hc_let(hc_arena *a, hc_var *v, hc_expr *value, hc_stmt *body) {
    hc_stmt *s = stmt_new(a, HC_S_LET);
    s->u.let.var = v, s->u.let.value = value, s->u.let.body = body;
    return s;
}
hc_stmt *hc_assign(hc_arena *a, hc_var *v, hc_expr *value) {
    hc_stmt *s = stmt_new(a, HC_S_ASSIGN);
    s->u.assign.var = v, s->u.assign.value = value;
    return s;
}
hc_stmt *hc_store(hc_arena *a, hc_var *buf, int n, hc_expr *const *idx, hc_expr *value) {
    hc_stmt *s = stmt_new(a, HC_S_STORE);
    s->u.store.buf = buf, s->u.store.n = n, s->u.store.value = value;
    s->u.store.idx = hc_arena_memdup(a, idx, sizeof(hc_expr *) * (size_t)n);
    return s;
}
hc_stmt *hc_eval(hc_arena *a, hc_expr *e) {
    hc_stmt *s = stmt_new(a, HC_S_EVAL);
    s->u.eval.e = e;
    return s;
}
hc_stmt *hc_if(hc_arena *a, hc_expr *cond, hc_stmt *then_s, hc_stmt *else_s) {
    hc_stmt *s = stmt_new(a, HC_S_IF);
    s->u.if_.cond = cond, s->u.if_.then_s = then_s, s->u.if_.else_s = else_s;
    return s;
}
hc_stmt *hc_for(hc_arena *a, hc_var *v, hc_expr *extent, hc_loop_attr attr, hc_stmt *body) {
    hc_stmt *s = stmt_new(a, HC_S_FOR);
    s->u.for_.var = v, s->u.for_.extent = extent, s->u.for_.attr = attr, s->u.for_.body = body;
    return s;
}
hc_stmt *hc_for_mapping(hc_arena *a, const hc_mapping *m, hc_expr *worker, int nvars,
                        hc_var *const *vars, hc_stmt *body) {
    HC_ASSERT(nvars == m->ndim);
    hc_stmt *s = stmt_new(a, HC_S_FOR_MAPPING);
    s->u.fmap.mapping = m, s->u.fmap.worker = worker, s->u.fmap.nvars = nvars;
    s->u.fmap.vars = hc_arena_memdup(a, vars, sizeof(hc_var *) * (size_t)nvars);
    s->u.fmap.body = body;
    return s;
}
hc_stmt *hc_barrier(hc_arena *a, hc_scope scope) {
    hc_stmt *s = stmt_new(a, HC_S_BARRIER);
    s->u.barrier.scope = scope;
    return s;
}
hc_stmt *hc_comment(hc_arena *a, const char *text) {
    hc_stmt *s = stmt_new(a, HC_S_COMMENT);
    s->u.comment.text = hc_arena_strdup(a, text);
    return s;
}

/* ---- functions and modules ------------------------------------------------------- */
hc_func *hc_func_new(hc_arena *a, const char *name, hc_func_kind kind, int nparams,
                     hc_var *const *params, hc_stmt *body) {
    hc_func *f = HC_NEW(a, hc_func);
    f->name = hc_arena_strdup(a, name);
    f->kind = kind, f->nparams = nparams, f->body = body;
    f->params = hc_arena_memdup(a, params, sizeof(hc_var *) * (size_t)nparams);
    f->ret = hc_type_scalar(HC_VOID);
    return f;
}

hc_module *hc_module_new(hc_arena *a, const char *name, int nfuncs, hc_func *const *funcs) {
    hc_module *m = HC_NEW(a, hc_module);
    m->name = hc_arena_strdup(a, name);
    m->nfuncs = nfuncs;
    m->funcs = hc_arena_memdup(a, funcs, sizeof(hc_func *) * (size_t)nfuncs);
    return m;
}

/* ---- builder --------------------------------------------------------------------- */
void hc_builder_init(hc_builder *b, hc_arena *a) {
    memset(b, 0, sizeof *b);
    b->a = a;
    b->depth = 1; /* block 0 is the root */
}

static hc_stmt *close_block(hc_builder *b) {
    HC_ASSERT(b->depth > 0);
    int d = --b->depth;
    hc_stmt *s = b->blocks[d].len == 1 ? b->blocks[d].data[0]
                                        : hc_seq(b->a, (int)b->blocks[d].len, b->blocks[d].data);
    hc_vec_free(&b->blocks[d]);
    return s;
}

hc_stmt *hc_builder_finish(hc_builder *b) {
    HC_ASSERT_MSG(b->depth == 1, "unclosed block in builder");
    return close_block(b);
}

void hc_b_emit(hc_builder *b, hc_stmt *s) { hc_vec_push(&b->blocks[b->depth - 1], s); }

hc_var *hc_b_declare(hc_builder *b, const char *name, const hc_type *t, hc_expr *init) {
    hc_var *v = hc_var_new(b->a, name, t);
    hc_b_emit(b, hc_declare(b->a, v, init));
    return v;
}
void hc_b_assign(hc_builder *b, hc_var *v, hc_expr *value) {
    hc_b_emit(b, hc_assign(b->a, v, value));
}
void hc_b_store(hc_builder *b, hc_var *buf, int n, hc_expr *const *idx, hc_expr *value) {
    hc_b_emit(b, hc_store(b->a, buf, n, idx, value));
}
void hc_b_eval(hc_builder *b, hc_expr *e) { hc_b_emit(b, hc_eval(b->a, e)); }
void hc_b_comment(hc_builder *b, const char *text) { hc_b_emit(b, hc_comment(b->a, text)); }

static void open_block(hc_builder *b, hc_stmt *owner) {
    HC_ASSERT_MSG(b->depth < HC_BUILDER_MAX_DEPTH, "builder nesting too deep");
    b->open[b->depth] = owner;
    b->if_else[b->depth] = 0;
    b->depth++;
}

hc_var *hc_b_for_begin(hc_builder *b, const char *name, hc_expr *extent, hc_loop_attr attr) {
    hc_var *v = hc_var_new(b->a, name, hc_type_scalar(HC_INDEX_TYPE));
    hc_stmt *s = hc_for(b->a, v, extent, attr, NULL);
    hc_b_emit(b, s);
    open_block(b, s);
    return v;
}

void hc_b_for_map_begin(hc_builder *b, const hc_mapping *m, hc_expr *worker, int nvars,
                        hc_var **vars_out, const char *const *names) {
    for (int i = 0; i < nvars; i++) {
        const char *nm = names && names[i] ? names[i] : "t";
        vars_out[i] = hc_var_new(b->a, nm, hc_type_scalar(HC_INDEX_TYPE));
    }
    hc_stmt *s = hc_for_mapping(b->a, m, worker, nvars, vars_out, NULL);
    hc_b_emit(b, s);
    open_block(b, s);
}

void hc_b_if_begin(hc_builder *b, hc_expr *cond) {
    hc_stmt *s = hc_if(b->a, cond, NULL, NULL);
    hc_b_emit(b, s);
    open_block(b, s);
}

static hc_stmt *block_or_empty(hc_builder *b) {
    if (b->blocks[b->depth - 1].len == 0) hc_b_emit(b, hc_seq(b->a, 0, NULL));
    return close_block(b);
}

void hc_b_else(hc_builder *b) {
    hc_stmt *owner = b->open[b->depth - 1];
    HC_ASSERT(owner->kind == HC_S_IF && !b->if_else[b->depth - 1]);
    owner->u.if_.then_s = block_or_empty(b);
    open_block(b, owner);
    b->if_else[b->depth - 1] = 1;
}

void hc_b_end(hc_builder *b) {
    hc_stmt *owner = b->open[b->depth - 1];
    int in_else = b->if_else[b->depth - 1];
    hc_stmt *body = block_or_empty(b);
    switch (owner->kind) {
    case HC_S_FOR: owner->u.for_.body = body; break;
    case HC_S_FOR_MAPPING: owner->u.fmap.body = body; break;
    case HC_S_IF:
        if (in_else) owner->u.if_.else_s = body;
        else owner->u.if_.then_s = body;
        break;
    default: hc_unreachable();
    }
}

/* ---- generic traversal ----------------------------------------------------------- */
static hc_expr **mutate_list(hc_mutator *m, int n, hc_expr **xs, bool *changed) {
    hc_expr **out = xs;
    for (int i = 0; i < n; i++) {
        hc_expr *y = hc_mutate_expr(m, xs[i]);
        if (y != xs[i]) {
            if (out == xs) out = hc_arena_memdup(m->a, xs, sizeof(hc_expr *) * (size_t)n);
            out[i] = y;
            *changed = true;
        }
    }
    return out;
}

hc_expr *hc_mutate_expr(hc_mutator *m, hc_expr *e) {
    if (!e) return NULL;
    hc_expr tmp = *e;
    bool changed = false;
    switch (e->kind) {
    case HC_E_CONST:
    case HC_E_VAR: break;
    case HC_E_BINARY:
        tmp.u.bin.a = hc_mutate_expr(m, e->u.bin.a);
        tmp.u.bin.b = hc_mutate_expr(m, e->u.bin.b);
        changed = tmp.u.bin.a != e->u.bin.a || tmp.u.bin.b != e->u.bin.b;
        break;
    case HC_E_UNARY:
        tmp.u.un.a = hc_mutate_expr(m, e->u.un.a);
        changed = tmp.u.un.a != e->u.un.a;
        break;
    case HC_E_SELECT:
        tmp.u.sel.cond = hc_mutate_expr(m, e->u.sel.cond);
        tmp.u.sel.t = hc_mutate_expr(m, e->u.sel.t);
        tmp.u.sel.f = hc_mutate_expr(m, e->u.sel.f);
        changed = tmp.u.sel.cond != e->u.sel.cond || tmp.u.sel.t != e->u.sel.t ||
                  tmp.u.sel.f != e->u.sel.f;
        break;
    case HC_E_CAST:
        tmp.u.cast.a = hc_mutate_expr(m, e->u.cast.a);
        changed = tmp.u.cast.a != e->u.cast.a;
        break;
    case HC_E_CALL:
        tmp.u.call.args = mutate_list(m, e->u.call.nargs, e->u.call.args, &changed);
        break;
    case HC_E_LOAD:
    case HC_E_ADDRESS:
        tmp.u.load.idx = mutate_list(m, e->u.load.n, e->u.load.idx, &changed);
        break;
    case HC_E_TENSOR_ACCESS:
        tmp.u.access.idx = mutate_list(m, e->u.access.n, e->u.access.idx, &changed);
        break;
    case HC_E_REDUCE:
        tmp.u.reduce.value = hc_mutate_expr(m, e->u.reduce.value);
        changed = tmp.u.reduce.value != e->u.reduce.value;
        break;
    }
    hc_expr *r = e;
    if (changed) {
        r = HC_NEW(m->a, hc_expr);
        *r = tmp;
    }
    return m->expr ? m->expr(m, r) : r;
}

hc_stmt *hc_mutate_stmt(hc_mutator *m, hc_stmt *s) {
    if (!s) return NULL;
    if (m->stmt_pre) {
        hc_stmt *r = m->stmt_pre(m, s);
        if (r) return r;
    }
    hc_stmt tmp = *s;
    bool changed = false;
#define MX(field)                                                                        \
    do {                                                                                 \
        tmp.field = hc_mutate_expr(m, s->field);                                         \
        changed |= tmp.field != s->field;                                                \
    } while (0)
#define MS(field)                                                                        \
    do {                                                                                 \
        tmp.field = hc_mutate_stmt(m, s->field);                                         \
        changed |= tmp.field != s->field;                                                \
    } while (0)
    switch (s->kind) {
    case HC_S_SEQ: {
        hc_stmt **out = s->u.seq.stmts;
        for (int i = 0; i < s->u.seq.n; i++) {
            hc_stmt *y = hc_mutate_stmt(m, s->u.seq.stmts[i]);
            if (y != s->u.seq.stmts[i]) {
                if (out == s->u.seq.stmts)
                    out = hc_arena_memdup(m->a, out, sizeof(hc_stmt *) * (size_t)s->u.seq.n);
                out[i] = y;
                changed = true;
            }
        }
        tmp.u.seq.stmts = out;
        break;
    }
    case HC_S_DECLARE: MX(u.decl.init); break;
    case HC_S_LET:
        MX(u.let.value);
        MS(u.let.body);
        break;
    case HC_S_ASSIGN: MX(u.assign.value); break;
    case HC_S_STORE:
        tmp.u.store.idx = mutate_list(m, s->u.store.n, s->u.store.idx, &changed);
        MX(u.store.value);
        break;
    case HC_S_EVAL: MX(u.eval.e); break;
    case HC_S_IF:
        MX(u.if_.cond);
        MS(u.if_.then_s);
        MS(u.if_.else_s);
        break;
    case HC_S_FOR:
        MX(u.for_.extent);
        MS(u.for_.body);
        break;
    case HC_S_FOR_MAPPING:
        MX(u.fmap.worker);
        MS(u.fmap.body);
        break;
    case HC_S_BARRIER:
    case HC_S_COMMENT: break;
    }
#undef MX
#undef MS
    hc_stmt *r = s;
    if (changed) {
        r = HC_NEW(m->a, hc_stmt);
        *r = tmp;
    }
    return m->stmt ? m->stmt(m, r) : r;
}

typedef struct subst_ctx {
    int n;
    hc_var *const *from;
    hc_expr *const *to;
} subst_ctx;

static hc_expr *subst_cb(hc_mutator *m, hc_expr *e) {
    const subst_ctx *c = m->ctx;
    if (e->kind == HC_E_VAR)
        for (int i = 0; i < c->n; i++)
            if (e->u.var == c->from[i]) return c->to[i];
    return e;
}

hc_expr *hc_subst_expr(hc_arena *a, hc_expr *e, int n, hc_var *const *from, hc_expr *const *to) {
    subst_ctx c = {n, from, to};
    hc_mutator m = {.a = a, .ctx = &c, .expr = subst_cb};
    return hc_mutate_expr(&m, e);
}

hc_stmt *hc_subst_stmt(hc_arena *a, hc_stmt *s, int n, hc_var *const *from, hc_expr *const *to) {
    subst_ctx c = {n, from, to};
    hc_mutator m = {.a = a, .ctx = &c, .expr = subst_cb};
    return hc_mutate_stmt(&m, s);
}

static bool list_equal(int n, hc_expr *const *x, hc_expr *const *y) {
    for (int i = 0; i < n; i++)
        if (!hc_expr_equal(x[i], y[i])) return false;
    return true;
}

bool hc_expr_equal(const hc_expr *x, const hc_expr *y) {
    if (x == y) return true;
    if (!x || !y || x->kind != y->kind || !hc_type_equal(x->type, y->type)) return false;
    switch (x->kind) {
    case HC_E_CONST: return x->u.c.u == y->u.c.u;
    case HC_E_VAR: return x->u.var == y->u.var;
    case HC_E_BINARY:
        return x->u.bin.op == y->u.bin.op && hc_expr_equal(x->u.bin.a, y->u.bin.a) &&
               hc_expr_equal(x->u.bin.b, y->u.bin.b);
    case HC_E_UNARY: return x->u.un.op == y->u.un.op && hc_expr_equal(x->u.un.a, y->u.un.a);
    case HC_E_SELECT:
        return hc_expr_equal(x->u.sel.cond, y->u.sel.cond) && hc_expr_equal(x->u.sel.t, y->u.sel.t) &&
               hc_expr_equal(x->u.sel.f, y->u.sel.f);
    case HC_E_CAST: return hc_expr_equal(x->u.cast.a, y->u.cast.a);
    case HC_E_CALL:
        return x->u.call.prim == y->u.call.prim && x->u.call.nargs == y->u.call.nargs &&
               list_equal(x->u.call.nargs, x->u.call.args, y->u.call.args);
    case HC_E_LOAD:
    case HC_E_ADDRESS:
        return x->u.load.buf == y->u.load.buf && x->u.load.n == y->u.load.n &&
               list_equal(x->u.load.n, x->u.load.idx, y->u.load.idx);
    case HC_E_TENSOR_ACCESS:
        return x->u.access.tensor == y->u.access.tensor && x->u.access.n == y->u.access.n &&
               list_equal(x->u.access.n, x->u.access.idx, y->u.access.idx);
    case HC_E_REDUCE: return false; /* reductions bind their own axes: compare by identity */
    }
    return false;
}

bool hc_exprs_mention(hc_expr *const *es, int n, const hc_var *v) {
    for (int i = 0; i < n; i++)
        if (hc_expr_mentions(es[i], v)) return true;
    return false;
}

bool hc_expr_mentions(const hc_expr *e, const hc_var *v) {
    switch (e->kind) {
    case HC_E_CONST: return false;
    case HC_E_VAR: return e->u.var == v;
    case HC_E_BINARY: return hc_expr_mentions(e->u.bin.a, v) || hc_expr_mentions(e->u.bin.b, v);
    case HC_E_UNARY: return hc_expr_mentions(e->u.un.a, v);
    case HC_E_SELECT:
        return hc_expr_mentions(e->u.sel.cond, v) || hc_expr_mentions(e->u.sel.t, v) ||
               hc_expr_mentions(e->u.sel.f, v);
    case HC_E_CAST: return hc_expr_mentions(e->u.cast.a, v);
    case HC_E_CALL: return hc_exprs_mention(e->u.call.args, e->u.call.nargs, v);
    case HC_E_LOAD:
    case HC_E_ADDRESS:
        return e->u.load.buf == v || hc_exprs_mention(e->u.load.idx, e->u.load.n, v);
    case HC_E_TENSOR_ACCESS: return hc_exprs_mention(e->u.access.idx, e->u.access.n, v);
    case HC_E_REDUCE: return hc_expr_mentions(e->u.reduce.value, v);
    }
    return true;
}

hc_expr *hc_call3(hc_arena *a, hc_prim p, const hc_type *result, int n, hc_expr *x, hc_expr *y,
                  hc_expr *z) {
    HC_ASSERT(n >= 0 && n <= 3);
    hc_expr *args[3] = {x, y, z};
    return hc_call(a, p, result, n, args);
}

bool hc_stmt_has_barrier(const hc_stmt *s) {
    if (!s) return false;
    switch (s->kind) {
    case HC_S_BARRIER: return true;
    case HC_S_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            if (hc_stmt_has_barrier(s->u.seq.stmts[i])) return true;
        return false;
    case HC_S_LET: return hc_stmt_has_barrier(s->u.let.body);
    case HC_S_IF: return hc_stmt_has_barrier(s->u.if_.then_s) || hc_stmt_has_barrier(s->u.if_.else_s);
    case HC_S_FOR: return hc_stmt_has_barrier(s->u.for_.body);
    case HC_S_FOR_MAPPING: return hc_stmt_has_barrier(s->u.fmap.body);
    default: return false;
    }
}
