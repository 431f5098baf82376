/* interp.c — the reference interpreter: evaluates any Task element by element.
 *
 * It is the oracle every scheduled program is tested against, so it favours plain,
 * checkable semantics over speed: floats are computed in double and rounded to the
 * expression's type after each operation (as C does for f32/f64), integers in 64 bits and
 * wrapped to their width, reductions accumulate in double / 64-bit integers. Compute
 * nodes that other nodes read are evaluated once into a temporary buffer on first use.
 * Bad programs or data (out-of-bounds index, division by zero) return a status. */
#include <math.h>
#include <string.h>

#include "task/task.h"

typedef struct binding {
    const hc_var *var;
    int64_t value;
} binding;

enum { NODE_PENDING, NODE_BUSY, NODE_DONE };

typedef struct node_state {
    const hc_tnode *node;
    void *buf;
    bool owned; /* a temporary (not an output buffer) */
    int state;
} node_state;

typedef struct interp {
    const hc_task *task;
    void *const *inputs;
    node_state *nodes;
    int nnodes;
    HC_VEC(binding) env;
    const hc_tnode *cur; /* node being evaluated, for messages */
    hc_arena arena;
    hc_error *err;
} interp;

/* ---- scalar conversions ------------------------------------------------------------ */
static double round_float(double v, hc_dtype t) {
    switch (t) {
    case HC_F32: return (float)v;
    case HC_F16: return (double)(_Float16)v;
    case HC_BF16: return hc_bf16_to_f32(hc_f32_to_bf16((float)v));
    default: return v;
    }
}

/* Keep the low bits of x that type t holds (sign-extended for signed types). */
static hc_value wrap_int(uint64_t x, hc_dtype t) {
    hc_value r;
    int bits = hc_dtype_size(t) * 8;
    if (t == HC_BOOL) {
        r.i = x != 0;
        return r;
    }
    if (bits < 64) {
        uint64_t mask = (UINT64_C(1) << bits) - 1;
        x &= mask;
        if (hc_dtype_is_signed(t) && (x >> (bits - 1)) & 1) x |= ~mask;
    }
    r.u = x;
    return r;
}

static double to_double(hc_value v, hc_dtype t) {
    if (hc_dtype_is_float(t)) return v.f;
    if (hc_dtype_is_signed(t) || t == HC_BOOL) return (double)v.i;
    return (double)v.u;
}

/* Integer bits of v (floats truncate toward zero, saturating; NaN is 0). */
static uint64_t to_bits(hc_value v, hc_dtype t) {
    if (!hc_dtype_is_float(t)) return v.u;
    double d = v.f;
    if (isnan(d)) return 0;
    if (d >= 9223372036854775807.0) return d >= 18446744073709551615.0 ? UINT64_MAX
                                                                        : (uint64_t)d;
    if (d <= -9223372036854775808.0) return (uint64_t)INT64_MIN;
    return (uint64_t)(int64_t)d;
}

static hc_value convert(hc_value v, hc_dtype from, hc_dtype to) {
    hc_value r;
    if (hc_dtype_is_float(to)) {
        r.f = round_float(to_double(v, from), to);
        return r;
    }
    if (to == HC_BOOL) {
        r.i = hc_dtype_is_float(from) ? v.f != 0 : v.u != 0;
        return r;
    }
    return wrap_int(to_bits(v, from), to);
}

static bool truth(hc_value v, hc_dtype t) { return hc_dtype_is_float(t) ? v.f != 0 : v.u != 0; }

/* ---- buffers --------------------------------------------------------------------- */
static hc_value read_elem(const void *buf, hc_dtype t, int64_t i) {
    hc_value r = {0};
    switch (t) {
    case HC_BOOL: r.i = ((const uint8_t *)buf)[i] != 0; break;
    case HC_I8: r.i = ((const int8_t *)buf)[i]; break;
    case HC_I16: r.i = ((const int16_t *)buf)[i]; break;
    case HC_I32: r.i = ((const int32_t *)buf)[i]; break;
    case HC_I64: r.i = ((const int64_t *)buf)[i]; break;
    case HC_U8: r.u = ((const uint8_t *)buf)[i]; break;
    case HC_U16: r.u = ((const uint16_t *)buf)[i]; break;
    case HC_U32: r.u = ((const uint32_t *)buf)[i]; break;
    case HC_U64: r.u = ((const uint64_t *)buf)[i]; break;
    case HC_F16: r.f = (double)((const _Float16 *)buf)[i]; break;
    case HC_BF16: r.f = hc_bf16_to_f32(((const uint16_t *)buf)[i]); break;
    case HC_F32: r.f = ((const float *)buf)[i]; break;
    case HC_F64: r.f = ((const double *)buf)[i]; break;
    default: hc_unreachable();
    }
    return r;
}

/* v must already be of type t (converted). */
static void write_elem(void *buf, hc_dtype t, int64_t i, hc_value v) {
    switch (t) {
    case HC_BOOL: ((uint8_t *)buf)[i] = v.i != 0; break;
    case HC_I8: ((int8_t *)buf)[i] = (int8_t)v.i; break;
    case HC_I16: ((int16_t *)buf)[i] = (int16_t)v.i; break;
    case HC_I32: ((int32_t *)buf)[i] = (int32_t)v.i; break;
    case HC_I64: ((int64_t *)buf)[i] = v.i; break;
    case HC_U8: ((uint8_t *)buf)[i] = (uint8_t)v.u; break;
    case HC_U16: ((uint16_t *)buf)[i] = (uint16_t)v.u; break;
    case HC_U32: ((uint32_t *)buf)[i] = (uint32_t)v.u; break;
    case HC_U64: ((uint64_t *)buf)[i] = v.u; break;
    case HC_F16: ((_Float16 *)buf)[i] = (_Float16)v.f; break;
    case HC_BF16: ((uint16_t *)buf)[i] = hc_f32_to_bf16((float)v.f); break;
    case HC_F32: ((float *)buf)[i] = (float)v.f; break;
    case HC_F64: ((double *)buf)[i] = v.f; break;
    default: hc_unreachable();
    }
}

/* ---- evaluation ------------------------------------------------------------------ */
static hc_status eval(interp *ip, const hc_expr *e, hc_value *out);

static hc_status fail(interp *ip, hc_status st, const char *what) {
    return hc_error_set(ip->err, st, "interpreter: %s (in %s of task %s)", what,
                        ip->cur ? ip->cur->name : "?", ip->task->name);
}

static hc_status check_scalar(interp *ip, const hc_expr *e) {
    if (e->type->kind == HC_TY_SCALAR && e->type->dtype != HC_VOID) return HC_OK;
    return fail(ip, HC_ERR_UNSUPPORTED, "only scalar expressions can be interpreted");
}

static hc_status lookup(interp *ip, const hc_var *v, hc_value *out) {
    for (size_t i = ip->env.len; i-- > 0;)
        if (ip->env.data[i].var == v) {
            out->i = ip->env.data[i].value;
            return HC_OK;
        }
    char msg[200];
    snprintf(msg, sizeof msg, "unbound variable '%s'", v->name);
    return fail(ip, HC_ERR_INVALID, msg);
}

/* Evaluate e and convert it to dtype t. */
static hc_status eval_as(interp *ip, const hc_expr *e, hc_dtype t, hc_value *out) {
    hc_value v;
    hc_status st = eval(ip, e, &v);
    if (st) return st;
    *out = convert(v, e->type->dtype, t);
    return HC_OK;
}

static hc_status float_binary(interp *ip, hc_binop op, double x, double y, double *r) {
    switch (op) {
    case HC_OP_ADD: *r = x + y; break;
    case HC_OP_SUB: *r = x - y; break;
    case HC_OP_MUL: *r = x * y; break;
    case HC_OP_DIV: *r = x / y; break;
    case HC_OP_MOD: *r = fmod(x, y); break;
    /* As the generated code: a NaN on the left loses, on the right wins. */
    case HC_OP_MIN: *r = x < y ? x : y; break;
    case HC_OP_MAX: *r = x > y ? x : y; break;
    default: return fail(ip, HC_ERR_INVALID, "bitwise operator on a float");
    }
    return HC_OK;
}

static hc_status int_divmod(interp *ip, hc_binop op, hc_value x, hc_value y, bool sgn,
                            uint64_t *r) {
    if (y.u == 0) return fail(ip, HC_ERR_INVALID, "integer division by zero");
    if (!sgn) {
        *r = op == HC_OP_DIV ? x.u / y.u : x.u % y.u;
    } else if (x.i == INT64_MIN && y.i == -1) {
        *r = op == HC_OP_DIV ? (uint64_t)INT64_MIN : 0; /* wraps, as the hardware would */
    } else {
        *r = (uint64_t)(op == HC_OP_DIV ? x.i / y.i : x.i % y.i);
    }
    return HC_OK;
}

static hc_status int_binary(interp *ip, hc_binop op, hc_value x, hc_value y, hc_dtype t,
                            uint64_t *r) {
    bool sgn = hc_dtype_is_signed(t) || t == HC_BOOL;
    switch (op) {
    case HC_OP_ADD: *r = x.u + y.u; break;
    case HC_OP_SUB: *r = x.u - y.u; break;
    case HC_OP_MUL: *r = x.u * y.u; break;
    case HC_OP_DIV:
    case HC_OP_MOD: return int_divmod(ip, op, x, y, sgn, r);
    case HC_OP_MIN: *r = (sgn ? y.i < x.i : y.u < x.u) ? y.u : x.u; break;
    case HC_OP_MAX: *r = (sgn ? y.i > x.i : y.u > x.u) ? y.u : x.u; break;
    case HC_OP_BITAND: *r = x.u & y.u; break;
    case HC_OP_BITOR: *r = x.u | y.u; break;
    case HC_OP_BITXOR: *r = x.u ^ y.u; break;
    default: hc_unreachable();
    }
    return HC_OK;
}

static bool compare(hc_binop op, hc_value x, hc_value y, hc_dtype t) {
    int c;
    if (hc_dtype_is_float(t)) {
        switch (op) {
        case HC_OP_LT: return x.f < y.f;
        case HC_OP_LE: return x.f <= y.f;
        case HC_OP_GT: return x.f > y.f;
        case HC_OP_GE: return x.f >= y.f;
        case HC_OP_EQ: return x.f == y.f;
        default: return x.f != y.f;
        }
    }
    if (hc_dtype_is_signed(t) || t == HC_BOOL) c = x.i < y.i ? -1 : x.i > y.i;
    else c = x.u < y.u ? -1 : x.u > y.u;
    switch (op) {
    case HC_OP_LT: return c < 0;
    case HC_OP_LE: return c <= 0;
    case HC_OP_GT: return c > 0;
    case HC_OP_GE: return c >= 0;
    case HC_OP_EQ: return c == 0;
    default: return c != 0;
    }
}

static hc_status eval_shift(interp *ip, const hc_expr *e, hc_value *out) {
    hc_dtype t = e->type->dtype;
    hc_value x, y;
    hc_status st;
    if (!hc_dtype_is_int(t)) return fail(ip, HC_ERR_INVALID, "shift of a non-integer");
    if ((st = eval_as(ip, e->u.bin.a, t, &x)) || (st = eval_as(ip, e->u.bin.b, HC_I64, &y)))
        return st;
    int bits = hc_dtype_size(t) * 8;
    if (y.i < 0 || y.i >= bits) return fail(ip, HC_ERR_INVALID, "shift count out of range");
    uint64_t r;
    if (e->u.bin.op == HC_OP_SHL) r = x.u << y.i;
    else if (hc_dtype_is_signed(t)) r = (uint64_t)(x.i < 0 ? ~(~x.i >> y.i) : x.i >> y.i);
    else r = x.u >> y.i;
    *out = wrap_int(r, t);
    return HC_OK;
}

static hc_status eval_logical(interp *ip, const hc_expr *e, hc_value *out) {
    hc_value x, y;
    hc_status st = eval(ip, e->u.bin.a, &x);
    if (st) return st;
    bool a = truth(x, e->u.bin.a->type->dtype), is_and = e->u.bin.op == HC_OP_AND;
    /* C short-circuits: the right side may only be valid when the left allows it. */
    if (a != is_and) {
        out->i = a;
        return HC_OK;
    }
    if ((st = eval(ip, e->u.bin.b, &y))) return st;
    out->i = truth(y, e->u.bin.b->type->dtype);
    return HC_OK;
}

static hc_status eval_binary(interp *ip, const hc_expr *e, hc_value *out) {
    hc_binop op = e->u.bin.op;
    if (op == HC_OP_AND || op == HC_OP_OR) return eval_logical(ip, e, out);
    if (op == HC_OP_SHL || op == HC_OP_SHR) return eval_shift(ip, e, out);
    bool cmp = hc_binop_is_comparison(op);
    hc_dtype t = cmp ? hc_type_promote(&ip->arena, e->u.bin.a->type, e->u.bin.b->type)->dtype
                     : e->type->dtype;
    hc_value x, y;
    hc_status st;
    if ((st = eval_as(ip, e->u.bin.a, t, &x)) || (st = eval_as(ip, e->u.bin.b, t, &y))) return st;
    if (cmp) {
        out->i = compare(op, x, y, t);
        return HC_OK;
    }
    if (hc_dtype_is_float(t)) {
        double r = 0;
        if ((st = float_binary(ip, op, x.f, y.f, &r))) return st;
        out->f = round_float(r, t);
        return HC_OK;
    }
    uint64_t r = 0;
    if ((st = int_binary(ip, op, x, y, t, &r))) return st;
    *out = wrap_int(r, t);
    return HC_OK;
}

static hc_status eval_unary(interp *ip, const hc_expr *e, hc_value *out) {
    hc_dtype t = e->type->dtype;
    hc_value x;
    hc_status st = eval(ip, e->u.un.a, &x);
    if (st) return st;
    hc_dtype xt = e->u.un.a->type->dtype;
    switch (e->u.un.op) {
    case HC_OP_NOT: out->i = !truth(x, xt); return HC_OK;
    case HC_OP_NEG:
        x = convert(x, xt, t);
        if (hc_dtype_is_float(t)) out->f = -x.f;
        else *out = wrap_int(0 - x.u, t);
        return HC_OK;
    case HC_OP_BITNOT:
        if (hc_dtype_is_float(t)) return fail(ip, HC_ERR_INVALID, "bitwise not of a float");
        *out = wrap_int(~convert(x, xt, t).u, t);
        return HC_OK;
    }
    hc_unreachable();
}

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

static double math1(hc_prim p, double x) {
    switch (p) {
    case HC_PRIM_EXP: return exp(x);
    case HC_PRIM_LOG: return log(x);
    case HC_PRIM_SQRT: return sqrt(x);
    case HC_PRIM_RSQRT: return 1.0 / sqrt(x);
    case HC_PRIM_ABS: return fabs(x);
    case HC_PRIM_FLOOR: return floor(x);
    case HC_PRIM_CEIL: return ceil(x);
    case HC_PRIM_ROUND: return nearbyint(x);
    case HC_PRIM_TANH: return tanh(x);
    case HC_PRIM_ERF: return erf(x);
    case HC_PRIM_SIGMOID: return sigmoid(x);
    case HC_PRIM_SIN: return sin(x);
    case HC_PRIM_COS: return cos(x);
    case HC_PRIM_TAN: return tan(x);
    case HC_PRIM_ASIN: return asin(x);
    case HC_PRIM_ACOS: return acos(x);
    case HC_PRIM_ATAN: return atan(x);
    case HC_PRIM_SINH: return sinh(x);
    case HC_PRIM_COSH: return cosh(x);
    case HC_PRIM_ASINH: return asinh(x);
    case HC_PRIM_ACOSH: return acosh(x);
    case HC_PRIM_ATANH: return atanh(x);
    default: hc_unreachable();
    }
}

static hc_status eval_call(interp *ip, const hc_expr *e, hc_value *out) {
    hc_prim p = e->u.call.prim;
    if (hc_prim_is_vector(p)) return fail(ip, HC_ERR_UNSUPPORTED, "vector primitive in a task");
    hc_value x, y = {0};
    hc_status st;
    const hc_expr *xa = e->u.call.args[0];
    hc_dtype xt = xa->type->dtype, t = e->type->dtype;
    if ((st = eval(ip, xa, &x))) return st;
    if (e->u.call.nargs > 1 && (st = eval_as(ip, e->u.call.args[1], xt, &y))) return st;
    if (p == HC_PRIM_ABS && hc_dtype_is_int(xt)) { /* integer abs stays exact */
        *out = wrap_int(hc_dtype_is_signed(xt) && x.i < 0 ? 0 - x.u : x.u, t);
        return HC_OK;
    }
    double d = to_double(x, xt), r;
    if (p == HC_PRIM_ISNAN || p == HC_PRIM_ISINF) {
        out->i = p == HC_PRIM_ISNAN ? isnan(d) : isinf(d);
        return HC_OK;
    }
    if (p == HC_PRIM_POW) r = pow(d, to_double(y, xt));
    else if (p == HC_PRIM_FMOD) r = fmod(d, to_double(y, xt));
    else r = math1(p, d);
    *out = convert((hc_value){.f = r}, HC_F64, t);
    return HC_OK;
}

static hc_status eval_select(interp *ip, const hc_expr *e, hc_value *out) {
    hc_value c;
    hc_status st = eval(ip, e->u.sel.cond, &c);
    if (st) return st;
    /* Only the chosen branch is evaluated (it may index out of bounds otherwise). */
    const hc_expr *b = truth(c, e->u.sel.cond->type->dtype) ? e->u.sel.t : e->u.sel.f;
    return eval_as(ip, b, e->type->dtype, out);
}

static node_state *find_node(interp *ip, const hc_tnode *n) {
    for (int i = 0; i < ip->nnodes; i++)
        if (ip->nodes[i].node == n) return &ip->nodes[i];
    return NULL;
}

static hc_status materialize(interp *ip, node_state *ns);

static hc_status bounds_error(interp *ip, const hc_tnode *n, const int64_t *idx) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sb_puts(&sb, "index [");
    for (int i = 0; i < n->ndim; i++) hc_sb_printf(&sb, "%s%lld", i ? ", " : "", (long long)idx[i]);
    hc_sb_printf(&sb, "] out of bounds of %s[", n->name);
    for (int i = 0; i < n->ndim; i++)
        hc_sb_printf(&sb, "%s%lld", i ? ", " : "", (long long)n->shape[i]);
    hc_sb_puts(&sb, "]");
    hc_status st = fail(ip, HC_ERR_INVALID, hc_sb_str(&sb));
    hc_sb_free(&sb);
    return st;
}

/* The buffer holding node n (materializing a compute node on first use). */
static hc_status node_buffer(interp *ip, const hc_tnode *n, const void **buf) {
    char msg[200];
    if (n->kind == HC_TN_INPUT) {
        for (int i = 0; i < ip->task->ninputs; i++)
            if (ip->task->inputs[i] == n) {
                *buf = ip->inputs[i];
                return HC_OK;
            }
        snprintf(msg, sizeof msg, "tensor %s is not an input of the task", n->name);
        return fail(ip, HC_ERR_INVALID, msg);
    }
    node_state *ns = find_node(ip, n);
    HC_ASSERT(ns);
    if (ns->state == NODE_BUSY) {
        snprintf(msg, sizeof msg, "%s depends on itself", n->name);
        return fail(ip, HC_ERR_INVALID, msg);
    }
    hc_status st = ns->state == NODE_DONE ? HC_OK : materialize(ip, ns);
    *buf = ns->buf;
    return st;
}

static hc_status eval_access(interp *ip, const hc_expr *e, hc_value *out) {
    const hc_tnode *n = e->u.access.tensor;
    int64_t idx[HC_MAX_DIMS], flat = 0;
    hc_status st;
    for (int i = 0; i < n->ndim; i++) {
        const hc_expr *ix = e->u.access.idx[i];
        if (ix->type->kind != HC_TY_SCALAR || !hc_dtype_is_int(ix->type->dtype))
            return fail(ip, HC_ERR_INVALID, "tensor index is not an integer");
        hc_value v;
        if ((st = eval_as(ip, ix, HC_I64, &v))) return st;
        idx[i] = v.i;
    }
    for (int i = 0; i < n->ndim; i++) {
        if (idx[i] < 0 || idx[i] >= n->shape[i]) return bounds_error(ip, n, idx);
        flat = flat * n->shape[i] + idx[i];
    }
    const void *buf = NULL;
    if ((st = node_buffer(ip, n, &buf))) return st;
    *out = read_elem(buf, n->dtype, flat);
    return HC_OK;
}

/* ---- reductions ------------------------------------------------------------------ */
typedef struct accum {
    hc_reduce_kind kind;
    hc_dtype t;
    hc_value v;
    int64_t count;
} accum;

static void accum_init(accum *a, hc_reduce_kind k, hc_dtype t) {
    a->kind = k, a->t = t, a->count = 0;
    bool is_f = hc_dtype_is_float(t), sgn = hc_dtype_is_signed(t);
    switch (k) {
    case HC_REDUCE_SUM:
    case HC_REDUCE_AVG: a->v.u = 0; break; /* 0 and 0.0 have the same bits */
    case HC_REDUCE_PROD:
        if (is_f) a->v.f = 1;
        else a->v.u = 1;
        break;
    case HC_REDUCE_MAX:
        if (is_f) a->v.f = -INFINITY;
        else a->v.u = sgn ? (uint64_t)INT64_MIN : 0;
        break;
    case HC_REDUCE_MIN:
        if (is_f) a->v.f = INFINITY;
        else a->v.u = sgn ? (uint64_t)INT64_MAX : UINT64_MAX;
        break;
    }
}

static void accum_add(accum *a, hc_value x) {
    bool is_f = hc_dtype_is_float(a->t), sgn = hc_dtype_is_signed(a->t) || a->t == HC_BOOL;
    a->count++;
    switch (a->kind) {
    case HC_REDUCE_SUM:
    case HC_REDUCE_AVG:
        if (is_f) a->v.f += x.f;
        else a->v.u += x.u;
        break;
    case HC_REDUCE_PROD:
        if (is_f) a->v.f *= x.f;
        else a->v.u *= x.u;
        break;
    case HC_REDUCE_MAX:
        if (is_f ? x.f > a->v.f : sgn ? x.i > a->v.i : x.u > a->v.u) a->v = x;
        break;
    case HC_REDUCE_MIN:
        if (is_f ? x.f < a->v.f : sgn ? x.i < a->v.i : x.u < a->v.u) a->v = x;
        break;
    }
}

static hc_status accum_result(interp *ip, accum *a, hc_value *out) {
    hc_value v = a->v;
    if (a->kind == HC_REDUCE_AVG) {
        if (a->count == 0) return fail(ip, HC_ERR_INVALID, "average over an empty range");
        if (hc_dtype_is_float(a->t)) v.f /= (double)a->count;
        else if (hc_dtype_is_signed(a->t)) v.i = (int64_t)v.u / a->count;
        else v.u /= (uint64_t)a->count;
    }
    if (hc_dtype_is_float(a->t)) out->f = round_float(v.f, a->t);
    else *out = wrap_int(v.u, a->t);
    return HC_OK;
}

static hc_status eval_reduce(interp *ip, const hc_expr *e, hc_value *out) {
    int n = e->u.reduce.naxes;
    const int64_t *ext = e->u.reduce.extents;
    accum acc = {0};
    accum_init(&acc, e->u.reduce.kind, e->type->dtype);
    int64_t total = 1;
    for (int i = 0; i < n; i++) total *= ext[i] > 0 ? ext[i] : 0;
    size_t base = ip->env.len;
    for (int i = 0; i < n; i++) hc_vec_push(&ip->env, ((binding){e->u.reduce.axes[i], 0}));
    hc_status st = HC_OK;
    for (int64_t it = 0; it < total && !st; it++) {
        int64_t rest = it; /* row-major odometer over the reduce axes */
        for (int i = n - 1; i >= 0; i--) {
            ip->env.data[base + i].value = rest % ext[i];
            rest /= ext[i];
        }
        hc_value v;
        if (!(st = eval_as(ip, e->u.reduce.value, acc.t, &v))) accum_add(&acc, v);
    }
    ip->env.len = base;
    return st ? st : accum_result(ip, &acc, out);
}

static hc_status eval(interp *ip, const hc_expr *e, hc_value *out) {
    hc_status st = check_scalar(ip, e);
    if (st) return st;
    switch (e->kind) {
    case HC_E_CONST: /* a constant holds a double or 64 bits: round it to its type */
        *out = convert(e->u.c, e->type->dtype, e->type->dtype);
        return HC_OK;
    case HC_E_VAR: return lookup(ip, e->u.var, out);
    case HC_E_BINARY: return eval_binary(ip, e, out);
    case HC_E_UNARY: return eval_unary(ip, e, out);
    case HC_E_SELECT: return eval_select(ip, e, out);
    case HC_E_CAST: return eval_as(ip, e->u.cast.a, e->type->dtype, out);
    case HC_E_CALL: return eval_call(ip, e, out);
    case HC_E_TENSOR_ACCESS: return eval_access(ip, e, out);
    case HC_E_REDUCE: return eval_reduce(ip, e, out);
    case HC_E_LOAD:
    case HC_E_ADDRESS: return fail(ip, HC_ERR_INVALID, "program-level load in a task");
    }
    hc_unreachable();
}

/* ---- nodes ----------------------------------------------------------------------- */
static hc_status materialize(interp *ip, node_state *ns) {
    const hc_tnode *n = ns->node, *saved = ip->cur;
    int64_t numel = hc_tnode_numel(n);
    if (!ns->buf) {
        ns->buf = hc_xcalloc((size_t)(numel > 0 ? numel : 1), (size_t)hc_dtype_size(n->dtype));
        ns->owned = true;
    }
    ns->state = NODE_BUSY;
    ip->cur = n;
    size_t base = ip->env.len;
    for (int i = 0; i < n->ndim; i++) hc_vec_push(&ip->env, ((binding){n->axes[i], 0}));
    hc_status st = HC_OK;
    for (int64_t flat = 0; flat < numel && !st; flat++) {
        int64_t rest = flat;
        for (int i = n->ndim - 1; i >= 0; i--) {
            ip->env.data[base + i].value = rest % n->shape[i];
            rest /= n->shape[i];
        }
        hc_value v;
        if (!(st = eval_as(ip, n->value, n->dtype, &v))) write_elem(ns->buf, n->dtype, flat, v);
    }
    ip->env.len = base;
    ip->cur = saved;
    ns->state = NODE_DONE;
    return st;
}

static bool dtype_ok(hc_dtype t) { return t > HC_VOID && t < HC_DTYPE_COUNT; }

static hc_status check_task(interp *ip, int nnodes, hc_tnode **nodes) {
    char msg[200];
    for (int i = 0; i < ip->task->ninputs; i++)
        if (!dtype_ok(ip->task->inputs[i]->dtype) || !ip->inputs[i]) {
            snprintf(msg, sizeof msg, "input %s: bad dtype or NULL buffer",
                     ip->task->inputs[i]->name);
            return fail(ip, HC_ERR_INVALID, msg);
        }
    for (int i = 0; i < nnodes; i++)
        if (!dtype_ok(nodes[i]->dtype)) {
            snprintf(msg, sizeof msg, "node %s has no value type", nodes[i]->name);
            return fail(ip, HC_ERR_INVALID, msg);
        }
    return HC_OK;
}

hc_status hc_interpret_task(const hc_task *t, void *const *inputs, void *const *outputs,
                            hc_error *err) {
    interp ip = {.task = t, .inputs = inputs, .err = err};
    hc_arena_init(&ip.arena);
    hc_tnode **nodes = hc_task_compute_nodes(&ip.arena, t, &ip.nnodes);
    ip.nodes = HC_NEW_ARRAY(&ip.arena, node_state, ip.nnodes + 1);
    for (int i = 0; i < ip.nnodes; i++) ip.nodes[i].node = nodes[i];
    hc_status st = check_task(&ip, ip.nnodes, nodes);
    /* Outputs are computed straight into the caller's buffers. */
    for (int i = 0; i < t->noutputs && !st; i++) {
        node_state *ns = find_node(&ip, t->outputs[i]);
        if (!outputs[i]) st = fail(&ip, HC_ERR_INVALID, "NULL output buffer");
        else if (!ns->buf) ns->buf = outputs[i];
    }
    for (int i = 0; i < t->noutputs && !st; i++) {
        node_state *ns = find_node(&ip, t->outputs[i]);
        if (ns->state != NODE_DONE) st = materialize(&ip, ns);
        if (!st && ns->buf != outputs[i]) /* the same node listed twice as an output */
            memcpy(outputs[i], ns->buf,
                   (size_t)hc_tnode_numel(ns->node) * (size_t)hc_dtype_size(ns->node->dtype));
    }
    for (int i = 0; i < ip.nnodes; i++)
        if (ip.nodes[i].owned) free(ip.nodes[i].buf);
    hc_vec_free(&ip.env);
    hc_arena_free(&ip.arena);
    return st;
}
