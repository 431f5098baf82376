/* math_reduce.c — reductions (ReduceSum ... ReduceLogSumExp), ArgMax/ArgMin, CumSum and
 * TopK. Axes, k and the CumSum axis must be known at compile time: when they come as
 * inputs that are not constant, infer asks for them with hc_node_need_const. */
#include <math.h>
#include <string.h>

#include "graph/ops/math_impl.h"

/* ---- reduce parameters ---------------------------------------------------------------- */
typedef struct reduce_params {
    int naxes; /* 0 (and !noop): every axis */
    int axes[HC_MAX_DIMS];
    bool keepdims;
    bool noop; /* empty axes with noop_with_empty_axes, or a 0-d input: the identity */
} reduce_params;

/* Raw axes values from input 1 (ReduceSum from opset 13) or the attribute. */
static hc_status raw_axes(const hc_node *n, int64_t *vals, int *count, hc_error *err) {
    const hc_tensor *t = n->ninputs > 1 ? n->inputs[1] : NULL;
    if (!t) {
        int c = 0;
        const int64_t *v = hc_node_attr_ints(n, "axes", &c);
        if (c > HC_MAX_DIMS)
            return hc_node_fail(n, HC_ERR_INVALID, err, "axes has %d values", c);
        if (c) memcpy(vals, v, sizeof(int64_t) * (size_t)c);
        *count = c;
        return HC_OK;
    }
    hc_status st = hc_math_input(n, 1, &t, err);
    if (st) return st;
    if (!hc_dtype_is_int(t->dtype))
        return hc_node_fail(n, HC_ERR_INVALID, err, "axes ('%s') is %s, expected int64",
                            t->name, hc_dtype_name(t->dtype));
    int64_t numel = hc_tensor_numel(t);
    if (numel > HC_MAX_DIMS)
        return hc_node_fail(n, HC_ERR_INVALID, err, "axes ('%s') has %lld values", t->name,
                            (long long)numel);
    *count = 0;
    if (numel == 0) return HC_OK; /* no value needed */
    int64_t c = hc_tensor_const_ints(t, vals, HC_MAX_DIMS);
    if (c < 0 && !(st = hc_node_need_const(n, 1, err)))
        st = hc_node_fail(n, HC_ERR_INVALID, err, "cannot read axes ('%s')", t->name);
    if (st) return st;
    *count = (int)c;
    return HC_OK;
}

static hc_status reduce_params_of(const hc_node *n, const hc_tensor *x, reduce_params *p,
                                  hc_error *err) {
    int64_t vals[HC_MAX_DIMS];
    int count = 0;
    hc_status st = raw_axes(n, vals, &count, err);
    if (st) return st;
    memset(p, 0, sizeof *p);
    p->keepdims = hc_node_attr_int(n, "keepdims", 1) != 0;
    p->noop = x->ndim == 0 || (count == 0 && hc_node_attr_int(n, "noop_with_empty_axes", 0));
    bool seen[HC_MAX_DIMS] = {false};
    for (int i = 0; i < count && !p->noop; i++) {
        int ax;
        if ((st = hc_node_axis(n, vals[i], x->ndim, &ax, err))) return st;
        if (seen[ax])
            return hc_node_fail(n, HC_ERR_INVALID, err, "axes repeats axis %lld",
                                (long long)vals[i]);
        seen[ax] = true;
        p->axes[p->naxes++] = ax;
    }
    return HC_OK;
}

static int reduce_out_shape(const hc_tensor *x, const reduce_params *p, int64_t *shape) {
    if (p->noop) {
        memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        return x->ndim;
    }
    bool mask[HC_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) mask[d] = p->naxes == 0;
    for (int i = 0; i < p->naxes; i++) mask[p->axes[i]] = true;
    int nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (!mask[d]) shape[nd++] = x->shape[d];
        else if (p->keepdims) shape[nd++] = 1;
    }
    return nd;
}

hc_status hc_math_infer_reduce(hc_node *n, hc_error *err) {
    const hc_tensor *x;
    reduce_params p;
    hc_status st = hc_math_input(n, 0, &x, err);
    if (st || (st = reduce_params_of(n, x, &p, err))) return st;
    /* ReduceMax/ReduceMin-20 take bool (any / all). */
    bool bool_ok = (n->op == HC_OPK_REDUCE_MAX || n->op == HC_OPK_REDUCE_MIN) && n->opset >= 20;
    if (x->dtype == HC_BOOL && !bool_ok)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input 0 ('%s') is bool, expected a "
                            "numeric type%s", x->name,
                            n->op == HC_OPK_REDUCE_MAX || n->op == HC_OPK_REDUCE_MIN
                                ? " (bool from opset 20)" : "");
    /* ReduceLogSum/ReduceLogSumExp-28 are defined on floats only. */
    if ((n->op == HC_OPK_REDUCE_LOG_SUM || n->op == HC_OPK_REDUCE_LOG_SUM_EXP) &&
        n->opset >= 28 && !hc_dtype_is_float(x->dtype))
        return hc_node_fail(n, HC_ERR_INVALID, err, "input 0 ('%s') is %s, expected a float "
                            "type (version 28)", x->name, hc_dtype_name(x->dtype));
    int64_t shape[HC_MAX_DIMS];
    int nd = reduce_out_shape(x, &p, shape);
    hc_node_set_output(n, 0, x->dtype, nd, shape);
    return HC_OK;
}

/* ---- reduce tasks --------------------------------------------------------------------- */
static hc_expr *copy_fn(hc_arena *a, hc_expr *x, void *ctx) { return x; }
static hc_expr *abs_fn(hc_arena *a, hc_expr *x, void *ctx) {
    return hc_dtype_is_float(x->type->dtype) || hc_dtype_is_signed(x->type->dtype)
               ? hc_math(a, HC_PRIM_ABS, x, NULL)
               : x;
}
static hc_expr *square_fn(hc_arena *a, hc_expr *x, void *ctx) { return hc_mul(a, x, x); }
static hc_expr *prim_fn(hc_arena *a, hc_expr *x, void *ctx) {
    return hc_math(a, *(const hc_prim *)ctx, x, NULL);
}

/* m + log(s), or m itself when m is infinite (all -inf, or a +inf element) */
static hc_expr *lse_fn(hc_arena *a, hc_expr *const *xs, void *ctx) {
    hc_expr *m = xs[0], *s = xs[1];
    hc_expr *sum = hc_add(a, m, hc_math(a, HC_PRIM_LOG, s, NULL));
    if (!hc_dtype_is_float(m->type->dtype)) return sum;
    return hc_select(a, hc_math(a, HC_PRIM_ISINF, m, NULL), m, sum);
}

/* log(sum(exp(x))) = m + log(sum(exp(x - m))) with m the max: no overflow. */
static hc_tnode *log_sum_exp(hc_arena *a, const char *name, hc_tnode *x, const reduce_params *p,
                             int ndim, const int64_t *shape, hc_error *err) {
    const char *mn = hc_arena_printf(a, "%s_max", name), *sn = hc_arena_printf(a, "%s_sum", name);
    hc_tnode *m = hc_compute_reduce(a, mn, x, p->naxes, p->axes, true, HC_REDUCE_MAX, err);
    hc_tnode *d = m ? hc_compute_binop(a, hc_arena_printf(a, "%s_d", name), HC_OP_SUB, x, m,
                                       err) : NULL;
    if (!d) return NULL;
    hc_prim ep = HC_PRIM_EXP;
    hc_tnode *e = hc_compute_map1(a, hc_arena_printf(a, "%s_exp", name), d, prim_fn, &ep);
    hc_tnode *s = hc_compute_reduce(a, sn, e, p->naxes, p->axes, true, HC_REDUCE_SUM, err);
    const hc_tnode *ms[2] = {m, s};
    const char *rn = p->keepdims ? name : hc_arena_printf(a, "%s_keep", name);
    hc_tnode *r = s ? hc_compute_mapn(a, rn, 2, ms, lse_fn, NULL, err) : NULL;
    if (!r || p->keepdims) return r;
    return hc_compute_reshape(a, name, r, ndim, shape, err);
}

static hc_tnode *reduce_then(hc_arena *a, const char *name, hc_tnode *x, const reduce_params *p,
                             hc_map1_fn pre, hc_reduce_kind kind, hc_prim post, hc_error *err) {
    const char *rn = post == HC_PRIM_COUNT ? name : hc_arena_printf(a, "%s_red", name);
    if (pre) x = hc_compute_map1(a, hc_arena_printf(a, "%s_pre", name), x, pre, NULL);
    hc_tnode *r = hc_compute_reduce(a, rn, x, p->naxes, p->axes, p->keepdims, kind, err);
    if (!r || post == HC_PRIM_COUNT) return r;
    return hc_compute_map1(a, name, r, prim_fn, &post);
}

static hc_tnode *reduce_node(hc_arena *a, const hc_node *n, const char *name, hc_tnode *x,
                             const reduce_params *p, hc_error *err) {
    const hc_prim none = HC_PRIM_COUNT;
    switch (n->op) {
    case HC_OPK_REDUCE_SUM: return reduce_then(a, name, x, p, NULL, HC_REDUCE_SUM, none, err);
    case HC_OPK_REDUCE_MEAN: return reduce_then(a, name, x, p, NULL, HC_REDUCE_AVG, none, err);
    case HC_OPK_REDUCE_MAX: return reduce_then(a, name, x, p, NULL, HC_REDUCE_MAX, none, err);
    case HC_OPK_REDUCE_MIN: return reduce_then(a, name, x, p, NULL, HC_REDUCE_MIN, none, err);
    case HC_OPK_REDUCE_PROD: return reduce_then(a, name, x, p, NULL, HC_REDUCE_PROD, none, err);
    case HC_OPK_REDUCE_L1: return reduce_then(a, name, x, p, abs_fn, HC_REDUCE_SUM, none, err);
    case HC_OPK_REDUCE_L2:
        return reduce_then(a, name, x, p, square_fn, HC_REDUCE_SUM, HC_PRIM_SQRT, err);
    case HC_OPK_REDUCE_SUM_SQUARE:
        return reduce_then(a, name, x, p, square_fn, HC_REDUCE_SUM, none, err);
    case HC_OPK_REDUCE_LOG_SUM:
        return reduce_then(a, name, x, p, NULL, HC_REDUCE_SUM, HC_PRIM_LOG, err);
    case HC_OPK_REDUCE_LOG_SUM_EXP: {
        int64_t shape[HC_MAX_DIMS];
        int nd = n->outputs[0]->ndim;
        memcpy(shape, n->outputs[0]->shape, sizeof(int64_t) * (size_t)nd);
        return log_sum_exp(a, name, x, p, nd, shape, err);
    }
    default: hc_unreachable();
    }
}

static bool needs_f32_accumulator(hc_op_kind op, hc_dtype t) {
    bool half = t == HC_F16 || t == HC_BF16;
    return half && op != HC_OPK_REDUCE_MAX && op != HC_OPK_REDUCE_MIN;
}

hc_task *hc_math_task_reduce(hc_arena *a, const hc_node *n, hc_error *err) {
    reduce_params p;
    if (reduce_params_of(n, n->inputs[0], &p, err)) return NULL;
    int nin;
    hc_tnode **ins = hc_node_input_tnodes(a, n, &nin);
    const char *name = hc_math_out_name(n, 0);
    hc_tnode *x = ins[0], *y;
    if (p.noop) {
        y = hc_compute_map1(a, name, x, copy_fn, NULL);
    } else if (x->dtype == HC_BOOL) {
        /* max = any, min = all: reduced as u8 (false < true; an empty max is false, an
         * empty min true, the identities of any and all) */
        x = hc_compute_cast(a, hc_arena_printf(a, "%s_u8in", name), x, HC_U8);
        y = reduce_node(a, n, hc_arena_printf(a, "%s_u8", name), x, &p, err);
        y = y ? hc_compute_cast(a, name, y, HC_BOOL) : NULL;
    } else if (needs_f32_accumulator(n->op, x->dtype)) {
        /* in f16, x * x overflows from |x| = 256 and exp from 11: compute in f32 */
        x = hc_compute_cast(a, hc_arena_printf(a, "%s_f32in", name), x, HC_F32);
        y = reduce_node(a, n, hc_arena_printf(a, "%s_f32", name), x, &p, err);
        y = y ? hc_compute_cast(a, name, y, ins[0]->dtype) : NULL;
    } else {
        y = reduce_node(a, n, name, x, &p, err);
    }
    return y ? hc_node_task(a, n, nin, ins, 1, &y) : NULL;
}

/* ---- ArgMax, ArgMin ------------------------------------------------------------------- */
static hc_status arg_params(const hc_node *n, const hc_tensor *x, int *axis, hc_error *err) {
    if (x->ndim == 0)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input 0 ('%s') is 0-d", x->name);
    return hc_node_axis(n, hc_node_attr_int(n, "axis", 0), x->ndim, axis, err);
}

hc_status hc_math_infer_argreduce(hc_node *n, hc_error *err) {
    const hc_tensor *x;
    int axis;
    hc_status st = hc_math_input(n, 0, &x, err);
    if (st || (st = arg_params(n, x, &axis, err))) return st;
    if (x->dtype == HC_BOOL)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input 0 ('%s') is bool", x->name);
    bool keep = hc_node_attr_int(n, "keepdims", 1) != 0;
    int64_t shape[HC_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (d != axis) shape[nd++] = x->shape[d];
        else if (keep) shape[nd++] = 1;
    }
    hc_node_set_output(n, 0, HC_I64, nd, shape);
    return HC_OK;
}

hc_task *hc_math_task_argreduce(hc_arena *a, const hc_node *n, hc_error *err) {
    int axis, nin;
    if (arg_params(n, n->inputs[0], &axis, err)) return NULL;
    hc_tnode **ins = hc_node_input_tnodes(a, n, &nin);
    bool keep = hc_node_attr_int(n, "keepdims", 1) != 0;
    bool last = hc_node_attr_int(n, "select_last_index", 0) != 0;
    hc_tnode *y = hc_compute_argreduce(a, hc_math_out_name(n, 0), ins[0], axis, keep,
                                       n->op == HC_OPK_ARG_MAX, last, err);
    return y ? hc_node_task(a, n, nin, ins, 1, &y) : NULL;
}

/* ---- compile-time scalar inputs (CumSum axis, TopK k) --------------------------------- */
static hc_status const_scalar_input(const hc_node *n, int i, const char *what, int64_t *v,
                                    hc_error *err) {
    const hc_tensor *t;
    hc_status st = hc_math_input(n, i, &t, err);
    if (st) return st;
    if (!hc_dtype_is_int(t->dtype) || hc_tensor_numel(t) != 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "%s ('%s') must be one integer, got %s "
                            "with %lld elements", what, t->name, hc_dtype_name(t->dtype),
                            (long long)hc_tensor_numel(t));
    if (hc_tensor_const_ints(t, v, 1) == 1) return HC_OK;
    if (!(st = hc_node_need_const(n, i, err)))
        st = hc_node_fail(n, HC_ERR_INVALID, err, "cannot read %s ('%s')", what, t->name);
    return st;
}

/* ---- CumSum --------------------------------------------------------------------------- */
static hc_status cumsum_axis(const hc_node *n, const hc_tensor *x, int *axis, hc_error *err) {
    int64_t v;
    hc_status st = const_scalar_input(n, 1, "axis", &v, err);
    if (st) return st;
    if (x->ndim == 0)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input 0 ('%s') is 0-d", x->name);
    return hc_node_axis(n, v, x->ndim, axis, err);
}

hc_status hc_math_infer_cumsum(hc_node *n, hc_error *err) {
    const hc_tensor *x;
    int axis;
    hc_status st = hc_math_input(n, 0, &x, err);
    if (st || (st = cumsum_axis(n, x, &axis, err))) return st;
    if (x->dtype == HC_BOOL)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input 0 ('%s') is bool", x->name);
    hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
    return HC_OK;
}

typedef struct cumsum_ctx {
    const hc_tnode *x;
    int axis;
    bool exclusive, reverse, prod; /* prod: CumProd */
} cumsum_ctx;

/* y[.., i, ..] = sum over r of x[.., r, ..] where r precedes i (or equals it when
 * inclusive) in the scan direction. */
static hc_expr *cumsum_fn(hc_arena *a, hc_var *const *axes, void *ctx) {
    const cumsum_ctx *c = ctx;
    hc_var *r = hc_axis(a, "r0");
    hc_expr *idx[HC_MAX_DIMS];
    for (int d = 0; d < c->x->ndim; d++) idx[d] = hc_ref(a, d == c->axis ? r : axes[d]);
    hc_expr *ri = hc_ref(a, r), *i = hc_ref(a, axes[c->axis]);
    hc_binop op = c->reverse ? (c->exclusive ? HC_OP_GT : HC_OP_GE)
                             : (c->exclusive ? HC_OP_LT : HC_OP_LE);
    hc_expr *v = hc_select(a, hc_binary(a, op, ri, i), hc_at(a, c->x, idx),
                           hc_const_num(a, c->x->dtype, c->prod ? 1 : 0));
    int64_t ext = c->x->shape[c->axis];
    return hc_reduce(a, c->prod ? HC_REDUCE_PROD : HC_REDUCE_SUM, 1, &r, &ext, v);
}

hc_task *hc_math_task_cumsum(hc_arena *a, const hc_node *n, hc_error *err) {
    cumsum_ctx c = {0};
    if (cumsum_axis(n, n->inputs[0], &c.axis, err)) return NULL;
    int nin;
    hc_tnode **ins = hc_node_input_tnodes(a, n, &nin);
    const char *name = hc_math_out_name(n, 0);
    bool half = needs_f32_accumulator(n->op, ins[0]->dtype);
    c.x = half ? hc_compute_cast(a, hc_arena_printf(a, "%s_f32in", name), ins[0], HC_F32)
               : ins[0];
    c.exclusive = hc_node_attr_int(n, "exclusive", 0) != 0;
    c.prod = n->op == HC_OPK_CUM_PROD;
    c.reverse = hc_node_attr_int(n, "reverse", 0) != 0;
    const char *yn = half ? hc_arena_printf(a, "%s_f32", name) : name;
    hc_tnode *y = hc_compute(a, yn, c.x->ndim, c.x->shape, cumsum_fn, &c);
    if (half) y = hc_compute_cast(a, name, y, ins[0]->dtype);
    return hc_node_task(a, n, nin, ins, 1, &y);
}

/* ---- TopK ------------------------------------------------------------------------------ */
static hc_status topk_params(const hc_node *n, const hc_tensor *x, int *axis, int64_t *k,
                             hc_error *err) {
    hc_status st;
    if (x->ndim == 0)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input 0 ('%s') is 0-d", x->name);
    if ((st = hc_node_axis(n, hc_node_attr_int(n, "axis", -1), x->ndim, axis, err))) return st;
    if (n->opset < 10) {
        if (!hc_node_attr(n, "k"))
            return hc_node_fail(n, HC_ERR_INVALID, err, "attribute k is missing");
        *k = hc_node_attr_int(n, "k", 0);
    } else if ((st = const_scalar_input(n, 1, "k", k, err))) {
        return st;
    }
    if (*k < 0 || *k > x->shape[*axis])
        return hc_node_fail(n, HC_ERR_INVALID, err, "k = %lld is outside [0, %lld] (dim %d)",
                            (long long)*k, (long long)x->shape[*axis], *axis);
    return HC_OK;
}

hc_status hc_math_infer_topk(hc_node *n, hc_error *err) {
    const hc_tensor *x;
    int axis;
    int64_t k, shape[HC_MAX_DIMS];
    hc_status st = hc_math_input(n, 0, &x, err);
    if (st || (st = topk_params(n, x, &axis, &k, err))) return st;
    if (x->dtype == HC_BOOL)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input 0 ('%s') is bool", x->name);
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[axis] = k;
    if (n->noutputs > 0 && n->outputs[0]) hc_node_set_output(n, 0, x->dtype, x->ndim, shape);
    if (n->noutputs > 1 && n->outputs[1]) hc_node_set_output(n, 1, HC_I64, x->ndim, shape);
    return HC_OK;
}

typedef struct topk_ctx {
    const hc_tnode *x, *rank, *idx;
    int axis;
    bool largest;
} topk_ctx;

/* Does element r come before element j in the output order? A strict total order:
 * larger (smaller) first, NaN before (after) every number, ties by the lower index. */
static hc_expr *topk_before(hc_arena *a, const topk_ctx *c, hc_expr *xr, hc_expr *xj,
                            hc_expr *r, hc_expr *j) {
    hc_binop first = c->largest ? HC_OP_GT : HC_OP_LT, second = c->largest ? HC_OP_LT : HC_OP_GT;
    hc_expr *lower = hc_lt(a, r, j);
    hc_expr *ahead = hc_binary(a, first, xr, xj);
    if (!hc_dtype_is_float(c->x->dtype))
        return hc_binary(a, HC_OP_BITOR, ahead, hc_binary(a, HC_OP_BITAND, hc_eq(a, xr, xj),
                                                          lower));
    hc_expr *nr = hc_math(a, HC_PRIM_ISNAN, xr, NULL), *nj = hc_math(a, HC_PRIM_ISNAN, xj, NULL);
    hc_expr *nan_ahead = c->largest ? hc_binary(a, HC_OP_BITAND, nr, hc_unary(a, HC_OP_NOT, nj))
                                    : hc_binary(a, HC_OP_BITAND, nj, hc_unary(a, HC_OP_NOT, nr));
    hc_expr *same = hc_binary(a, HC_OP_BITAND, hc_unary(a, HC_OP_NOT, hc_binary(a, first, xr, xj)),
                              hc_unary(a, HC_OP_NOT, hc_binary(a, second, xr, xj)));
    same = hc_binary(a, HC_OP_BITAND, same, hc_eq(a, nr, nj));
    hc_expr *tie = hc_binary(a, HC_OP_BITAND, same, lower);
    return hc_binary(a, HC_OP_BITOR, hc_binary(a, HC_OP_BITOR, ahead, nan_ahead), tie);
}

/* rank[.., j, ..] = number of elements before element j along the axis */
static hc_expr *topk_rank_fn(hc_arena *a, hc_var *const *axes, void *ctx) {
    const topk_ctx *c = ctx;
    hc_var *r = hc_axis(a, "r0");
    hc_expr *idx[HC_MAX_DIMS];
    for (int d = 0; d < c->x->ndim; d++) idx[d] = hc_ref(a, d == c->axis ? r : axes[d]);
    hc_expr *xr = hc_at(a, c->x, idx), *xj = hc_at_axes(a, c->x, axes);
    hc_expr *b = topk_before(a, c, xr, xj, hc_ref(a, r), hc_ref(a, axes[c->axis]));
    hc_expr *one = hc_select(a, b, hc_int(a, 1), hc_int(a, 0));
    int64_t ext = c->x->shape[c->axis];
    return hc_reduce(a, HC_REDUCE_SUM, 1, &r, &ext, one);
}

/* idx[.., p, ..] = the j whose rank is p (exactly one has it) */
static hc_expr *topk_idx_fn(hc_arena *a, hc_var *const *axes, void *ctx) {
    const topk_ctx *c = ctx;
    hc_var *j = hc_axis(a, "r0");
    hc_expr *idx[HC_MAX_DIMS];
    for (int d = 0; d < c->x->ndim; d++) idx[d] = hc_ref(a, d == c->axis ? j : axes[d]);
    hc_expr *hit = hc_eq(a, hc_at(a, c->rank, idx), hc_ref(a, axes[c->axis]));
    int64_t ext = c->x->shape[c->axis];
    return hc_reduce(a, HC_REDUCE_SUM, 1, &j, &ext,
                     hc_select(a, hit, hc_ref(a, j), hc_int(a, 0)));
}

static hc_expr *topk_val_fn(hc_arena *a, hc_var *const *axes, void *ctx) {
    const topk_ctx *c = ctx;
    hc_expr *idx[HC_MAX_DIMS];
    for (int d = 0; d < c->x->ndim; d++)
        idx[d] = d == c->axis ? hc_at_axes(a, c->idx, axes) : hc_ref(a, axes[d]);
    return hc_at(a, c->x, idx);
}

hc_task *hc_math_task_topk(hc_arena *a, const hc_node *n, hc_error *err) {
    topk_ctx c = {0};
    int64_t k, shape[HC_MAX_DIMS];
    if (topk_params(n, n->inputs[0], &c.axis, &k, err)) return NULL;
    int nin;
    hc_tnode **ins = hc_node_input_tnodes(a, n, &nin);
    c.x = ins[0];
    c.largest = hc_node_attr_int(n, "largest", 1) != 0;
    const char *vn = hc_math_out_name(n, 0), *in = hc_math_out_name(n, 1);
    c.rank = hc_compute(a, hc_arena_printf(a, "%s_rank", in), c.x->ndim, c.x->shape,
                        topk_rank_fn, &c);
    memcpy(shape, c.x->shape, sizeof(int64_t) * (size_t)c.x->ndim);
    shape[c.axis] = k;
    hc_tnode *outs[2];
    outs[1] = hc_compute(a, in, c.x->ndim, shape, topk_idx_fn, &c);
    c.idx = outs[1];
    outs[0] = hc_compute(a, vn, c.x->ndim, shape, topk_val_fn, &c);
    hc_tnode *present[2];
    int np = 0;
    for (int i = 0; i < 2; i++)
        if (i < n->noutputs && n->outputs[i]) present[np++] = outs[i];
    return hc_node_task(a, n, nin, ins, np, present);
}
