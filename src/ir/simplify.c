/* simplify.c — constant folding, identities and bound-based div/mod simplification for
 * index arithmetic (docs/ir.md, "Simplifier").
 *
 * Soundness rules: constants fold with C semantics in the expression's type, never when
 * C would be undefined (division by zero, signed overflow, out-of-range float->int) or
 * when the float result could differ from run time (f16/bf16, non-finite values).
 * Interval reasoning is done only on signed integers, whose overflow is undefined, so
 * intervals may assume none. A subexpression with a side effect (vstore) is never
 * dropped. */
#include <math.h>
#include <string.h>

#include "ir/ir.h"

typedef __int128 i128;

/* ---- intervals ---------------------------------------------------------------------- */
typedef struct ival {
    int64_t lo, hi;
} ival;

typedef struct binding {
    const hc_var *var;
    ival range;
} binding;

typedef struct simp {
    hc_arena *a;
    HC_VEC(binding) binds; /* innermost last */
} simp;

static bool is_sint(const hc_type *t) {
    return t->kind == HC_TY_SCALAR && hc_dtype_is_int(t->dtype) && hc_dtype_is_signed(t->dtype);
}
static bool is_scalar_int(const hc_type *t) {
    return t->kind == HC_TY_SCALAR && hc_dtype_is_int(t->dtype);
}

static int dtype_bits(hc_dtype d) { return 8 * hc_dtype_size(d); }

static ival full_range(void) { return (ival){INT64_MIN, INT64_MAX}; }

/* Range of a type's values as int64; unsigned 64-bit and non-integers are unknown. */
static ival type_range(const hc_type *t) {
    if (t->kind != HC_TY_SCALAR) return full_range();
    hc_dtype d = t->dtype;
    if (d == HC_BOOL) return (ival){0, 1};
    if (!hc_dtype_is_int(d) || d == HC_I64 || d == HC_U64) return full_range();
    int bits = dtype_bits(d);
    if (hc_dtype_is_signed(d))
        return (ival){-((int64_t)1 << (bits - 1)), ((int64_t)1 << (bits - 1)) - 1};
    return (ival){0, (int64_t)(((uint64_t)1 << bits) - 1)};
}

static int64_t clamp(i128 v) {
    return v < INT64_MIN ? INT64_MIN : v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static ival ival_of4(i128 a, i128 b, i128 c, i128 d) {
    i128 lo = a, hi = a;
    i128 xs[3] = {b, c, d};
    for (int i = 0; i < 3; i++) lo = xs[i] < lo ? xs[i] : lo, hi = xs[i] > hi ? xs[i] : hi;
    return (ival){clamp(lo), clamp(hi)};
}

static ival bound(simp *S, const hc_expr *e);

static ival var_bound(simp *S, const hc_var *v) {
    for (size_t i = S->binds.len; i-- > 0;)
        if (S->binds.data[i].var == v) return S->binds.data[i].range;
    if (v->builtin == HC_BUILTIN_LANE_ID) return (ival){0, 31};
    if (v->builtin != HC_BUILTIN_NONE) return (ival){0, INT64_MAX};
    return type_range(v->type);
}

static ival bound_div(ival x, ival y) {
    if (y.lo <= 0 && y.hi >= 0) return full_range();
    /* Truncating division is monotone in each argument while the divisor keeps its sign,
     * so the extremes are at the corners. */
    return ival_of4((i128)x.lo / y.lo, (i128)x.lo / y.hi, (i128)x.hi / y.lo, (i128)x.hi / y.hi);
}

static ival bound_mod(ival x, ival y) {
    i128 m = HC_MAX(-(i128)y.lo, (i128)y.hi); /* largest |divisor| */
    if (y.lo == 0 && y.hi == 0) return full_range();
    int64_t top = clamp(m - 1);
    if (x.lo >= 0) return (ival){0, x.hi < m ? x.hi : top};
    if (x.hi <= 0) return (ival){x.lo > -m ? x.lo : -top, 0};
    return (ival){-top, top};
}

static ival bound_binary(simp *S, const hc_expr *e) {
    ival x = bound(S, e->u.bin.a), y = bound(S, e->u.bin.b);
    switch (e->u.bin.op) {
    case HC_OP_ADD: return (ival){clamp((i128)x.lo + y.lo), clamp((i128)x.hi + y.hi)};
    case HC_OP_SUB: return (ival){clamp((i128)x.lo - y.hi), clamp((i128)x.hi - y.lo)};
    case HC_OP_MUL:
        return ival_of4((i128)x.lo * y.lo, (i128)x.lo * y.hi, (i128)x.hi * y.lo,
                        (i128)x.hi * y.hi);
    case HC_OP_DIV: return bound_div(x, y);
    case HC_OP_MOD: return bound_mod(x, y);
    case HC_OP_MIN: return (ival){HC_MIN(x.lo, y.lo), HC_MIN(x.hi, y.hi)};
    case HC_OP_MAX: return (ival){HC_MAX(x.lo, y.lo), HC_MAX(x.hi, y.hi)};
    case HC_OP_BITAND:
        if (x.lo >= 0 && y.lo >= 0) return (ival){0, HC_MIN(x.hi, y.hi)};
        return type_range(e->type);
    case HC_OP_SHR: {
        int64_t k;
        if (x.lo >= 0 && hc_expr_is_const_int(e->u.bin.b, &k) && k >= 0 && k < 63)
            return (ival){x.lo >> k, x.hi >> k};
        return type_range(e->type);
    }
    default: return type_range(e->type);
    }
}

static bool fits(ival inner, ival outer) { return inner.lo >= outer.lo && inner.hi <= outer.hi; }

/* Interval of an integer expression's value (for other types: the type's range). */
static ival bound(simp *S, const hc_expr *e) {
    ival r = type_range(e->type);
    if (!is_scalar_int(e->type) && !hc_type_is_scalar(e->type, HC_BOOL)) return r;
    ival b = r;
    switch (e->kind) {
    case HC_E_CONST: {
        int64_t v;
        if (is_sint(e->type) && hc_expr_is_const_int(e, &v)) return (ival){v, v};
        return r;
    }
    case HC_E_VAR: b = var_bound(S, e->u.var); break;
    case HC_E_BINARY:
        if (!is_sint(e->type)) return r;
        b = bound_binary(S, e);
        break;
    case HC_E_UNARY:
        if (e->u.un.op != HC_OP_NEG || !is_sint(e->type)) return r;
        b = bound(S, e->u.un.a);
        b = (ival){clamp(-(i128)b.hi), clamp(-(i128)b.lo)};
        break;
    case HC_E_SELECT: {
        ival t = bound(S, e->u.sel.t), f = bound(S, e->u.sel.f);
        b = (ival){HC_MIN(t.lo, f.lo), HC_MAX(t.hi, f.hi)};
        break;
    }
    case HC_E_CAST: {
        const hc_type *from = e->u.cast.a->type;
        if (!is_scalar_int(from) && !hc_type_is_scalar(from, HC_BOOL)) return r;
        ival fr = type_range(from);
        /* A value-preserving cast keeps the operand's interval. */
        if (from->dtype == HC_U64 || !fits(fr, r)) return r;
        b = bound(S, e->u.cast.a);
        break;
    }
    default: return r;
    }
    /* Intersect with the type's range: values of the type cannot lie outside it. */
    return (ival){HC_MAX(b.lo, r.lo), HC_MIN(b.hi, r.hi)};
}

/* ---- side effects ------------------------------------------------------------------- */
static bool has_effect(const hc_expr *e) {
    if (!e) return false;
    switch (e->kind) {
    case HC_E_BINARY: return has_effect(e->u.bin.a) || has_effect(e->u.bin.b);
    case HC_E_UNARY: return has_effect(e->u.un.a);
    case HC_E_SELECT:
        return has_effect(e->u.sel.cond) || has_effect(e->u.sel.t) || has_effect(e->u.sel.f);
    case HC_E_CAST: return has_effect(e->u.cast.a);
    case HC_E_CALL:
        if (hc_prim_has_effect(e->u.call.prim)) return true;
        for (int i = 0; i < e->u.call.nargs; i++)
            if (has_effect(e->u.call.args[i])) return true;
        return false;
    case HC_E_LOAD:
    case HC_E_ADDRESS:
        for (int i = 0; i < e->u.load.n; i++)
            if (has_effect(e->u.load.idx[i])) return true;
        return false;
    default: return false;
    }
}

/* ---- constant conversion and folding ------------------------------------------------ */
static bool is_exact_float(hc_dtype d) { return d == HC_F32 || d == HC_F64; }

static i128 int_value(hc_value v, hc_dtype d) {
    return hc_dtype_is_signed(d) || d == HC_BOOL ? (i128)v.i : (i128)v.u;
}

static i128 dtype_min(hc_dtype d) {
    if (!hc_dtype_is_signed(d)) return 0;
    return -((i128)1 << (dtype_bits(d) - 1));
}
static i128 dtype_max(hc_dtype d) {
    if (d == HC_BOOL) return 1;
    int bits = dtype_bits(d) - (hc_dtype_is_signed(d) ? 1 : 0);
    return ((i128)1 << bits) - 1;
}

/* An integer result in type d, or false when C leaves it undefined (signed overflow). */
static bool int_result(i128 w, hc_dtype d, hc_value *out) {
    if (d == HC_BOOL) {
        out->i = w != 0;
        return true;
    }
    if (hc_dtype_is_signed(d)) {
        if (w < dtype_min(d) || w > dtype_max(d)) return false;
        out->i = (int64_t)w;
        return true;
    }
    uint64_t mask = dtype_bits(d) == 64 ? ~(uint64_t)0 : ((uint64_t)1 << dtype_bits(d)) - 1;
    out->u = (uint64_t)w & mask; /* unsigned arithmetic wraps */
    return true;
}

static double round_to(double v, hc_dtype d) { return d == HC_F32 ? (double)(float)v : v; }

/* C conversion of constant v from type s to type d; false when not folded. */
static bool convert(hc_value v, hc_dtype s, hc_dtype d, hc_value *out) {
    if (s == d) {
        *out = v;
        return true;
    }
    bool sf = hc_dtype_is_float(s), df = hc_dtype_is_float(d);
    if ((sf && !is_exact_float(s)) || (df && !is_exact_float(d)) || d == HC_VOID || s == HC_VOID)
        return false;
    if (sf && !isfinite(v.f)) return false;
    if (sf) v.f = round_to(v.f, s); /* an f32 constant built from a double means its f32 */
    if (d == HC_BOOL) {
        out->i = sf ? v.f != 0 : int_value(v, s) != 0;
        return true;
    }
    if (df) {
        if (sf) out->f = round_to(v.f, d);
        else if (hc_dtype_is_signed(s) || s == HC_BOOL)
            out->f = d == HC_F32 ? (double)(float)v.i : (double)v.i;
        else out->f = d == HC_F32 ? (double)(float)v.u : (double)v.u;
        return true;
    }
    if (sf) {
        double t = trunc(v.f);
        if (t < -0x1p64 || t >= 0x1p64) return false;
        if (t < (double)dtype_min(d) || t > (double)dtype_max(d)) return false;
        return int_result(t < 0 ? (i128)(int64_t)t : (i128)(uint64_t)t, d, out);
    }
    i128 w = int_value(v, s);
    /* Narrowing to a signed type is implementation-defined in C: not folded. */
    if (hc_dtype_is_signed(d) && (w < dtype_min(d) || w > dtype_max(d))) return false;
    return int_result(w, d, out);
}

static bool fold_int(hc_binop op, hc_dtype d, i128 x, i128 y, hc_dtype yd, hc_value *out) {
    bool sg = hc_dtype_is_signed(d);
    int bits = dtype_bits(d);
    switch (op) {
    case HC_OP_ADD: return int_result(x + y, d, out);
    case HC_OP_SUB: return int_result(x - y, d, out);
    case HC_OP_MUL:
        if (!sg) return int_result((i128)((uint64_t)x * (uint64_t)y), d, out);
        return int_result(x * y, d, out);
    case HC_OP_DIV:
    case HC_OP_MOD:
        if (y == 0 || (sg && x == dtype_min(d) && y == -1)) return false;
        return int_result(op == HC_OP_DIV ? x / y : x % y, d, out);
    case HC_OP_MIN: return int_result(x < y ? x : y, d, out);
    case HC_OP_MAX: return int_result(x > y ? x : y, d, out);
    case HC_OP_BITAND: return int_result(x & y, d, out);
    case HC_OP_BITOR: return int_result(x | y, d, out);
    case HC_OP_BITXOR: return int_result(x ^ y, d, out);
    case HC_OP_SHL:
    case HC_OP_SHR:
        (void)yd;
        /* Negative counts, counts >= width and shifts of negative values are UB or
         * implementation-defined. */
        if (y < 0 || y >= bits || x < 0) return false;
        return int_result(op == HC_OP_SHL ? x << y : x >> y, d, out);
    case HC_OP_AND: return int_result(x && y, d, out);
    case HC_OP_OR: return int_result(x || y, d, out);
    default: return false;
    }
}

static bool compare(hc_binop op, int c) { /* c = sign of (x - y) */
    switch (op) {
    case HC_OP_LT: return c < 0;
    case HC_OP_LE: return c <= 0;
    case HC_OP_GT: return c > 0;
    case HC_OP_GE: return c >= 0;
    case HC_OP_EQ: return c == 0;
    case HC_OP_NE: return c != 0;
    default: hc_unreachable();
    }
}

static bool fold_float(hc_binop op, hc_dtype d, double x, double y, hc_value *out) {
    double r;
    switch (op) {
    case HC_OP_ADD: r = x + y; break;
    case HC_OP_SUB: r = x - y; break;
    case HC_OP_MUL: r = x * y; break;
    case HC_OP_DIV:
        if (y == 0) return false;
        r = x / y;
        break;
    case HC_OP_MIN:
    case HC_OP_MAX:
        if (x == y) return false; /* -0 vs +0 depends on how min is emitted */
        r = (op == HC_OP_MIN) == (x < y) ? x : y;
        break;
    default: return false;
    }
    /* Rounding the exact double result of + - * / once more to f32 is correctly rounded:
     * double carries more than 2 * 24 + 2 bits. */
    r = round_to(r, d);
    if (!isfinite(r)) return false;
    out->f = r;
    return true;
}

/* Type in which a binary operator computes (C's usual conversions as the IR states). */
static hc_dtype op_dtype(simp *S, const hc_expr *e) {
    hc_binop op = e->u.bin.op;
    if (op == HC_OP_AND || op == HC_OP_OR) return HC_BOOL;
    if (op == HC_OP_SHL || op == HC_OP_SHR) return e->type->dtype;
    if (hc_binop_is_comparison(op))
        return hc_type_promote(S->a, e->u.bin.a->type, e->u.bin.b->type)->dtype;
    return e->type->dtype;
}

static hc_expr *fold_binary(simp *S, const hc_expr *e) {
    const hc_expr *a = e->u.bin.a, *b = e->u.bin.b;
    if (a->kind != HC_E_CONST || b->kind != HC_E_CONST || e->type->kind != HC_TY_SCALAR)
        return NULL;
    hc_binop op = e->u.bin.op;
    hc_dtype d = op_dtype(S, e), ad = a->type->dtype, bd = b->type->dtype;
    hc_value x, y, out;
    bool shift = op == HC_OP_SHL || op == HC_OP_SHR;
    if (!convert(a->u.c, ad, d, &x)) return NULL;
    if (shift) y = b->u.c, bd = b->type->dtype;
    else if (!convert(b->u.c, bd, d, &y)) return NULL;
    else bd = d;
    if (hc_dtype_is_float(d)) {
        if (!is_exact_float(d)) return NULL;
        x.f = round_to(x.f, d), y.f = round_to(y.f, d); /* run time sees f32 operands */
        if (hc_binop_is_comparison(op)) {
            out.i = compare(op, (x.f > y.f) - (x.f < y.f));
            return hc_const(S->a, HC_BOOL, out);
        }
        return fold_float(op, d, x.f, y.f, &out) ? hc_const(S->a, d, out) : NULL;
    }
    i128 xi = int_value(x, d), yi = int_value(y, bd);
    if (hc_binop_is_comparison(op)) {
        out.i = compare(op, (xi > yi) - (xi < yi));
        return hc_const(S->a, HC_BOOL, out);
    }
    if (!fold_int(op, d, xi, yi, bd, &out)) return NULL;
    return hc_const(S->a, e->type->dtype, out);
}

static hc_expr *fold_unary(simp *S, const hc_expr *e) {
    const hc_expr *x = e->u.un.a;
    if (x->kind != HC_E_CONST || e->type->kind != HC_TY_SCALAR) return NULL;
    hc_dtype d = x->type->dtype;
    hc_value v = x->u.c, out;
    switch (e->u.un.op) {
    case HC_OP_NOT:
        if (!convert(v, d, HC_BOOL, &out)) return NULL;
        out.i = !out.i;
        return hc_const(S->a, HC_BOOL, out);
    case HC_OP_NEG:
        if (hc_dtype_is_float(d)) {
            if (!is_exact_float(d)) return NULL;
            out.f = -v.f;
            return hc_const(S->a, d, out);
        }
        /* signed: fails on the minimum (overflow); unsigned: wraps */
        if (d == HC_BOOL || !int_result(-int_value(v, d), d, &out)) return NULL;
        return hc_const(S->a, d, out);
    case HC_OP_BITNOT:
        if (!hc_dtype_is_int(d)) return NULL;
        if (hc_dtype_is_signed(d)) out.i = ~v.i;
        else if (!int_result((i128)~v.u, d, &out)) return NULL;
        return hc_const(S->a, d, out);
    }
    return NULL;
}

/* ---- construction helpers ----------------------------------------------------------- */
/* Rewrites build their results with simp_top, which applies the rules to one new node
 * whose children are already simplified: re-simplifying whole subtrees after each
 * rewrite would cost time exponential in the expression's depth. */
static hc_expr *simp_expr(simp *S, hc_expr *e);
static hc_expr *simp_top(simp *S, hc_expr *e);

static hc_expr *int_const(simp *S, hc_dtype d, int64_t v) {
    return hc_const(S->a, d, (hc_value){.i = v});
}

/* e converted to type t (constants fold), so a rewrite never changes a node's type. */
static hc_expr *as_type(simp *S, hc_expr *e, const hc_type *t) {
    if (hc_type_equal(e->type, t)) return e;
    hc_value out;
    if (e->kind == HC_E_CONST && t->kind == HC_TY_SCALAR &&
        convert(e->u.c, e->type->dtype, t->dtype, &out))
        return hc_const(S->a, t->dtype, out);
    return hc_cast(S->a, t, e);
}

static bool is_int_const(const hc_expr *e, int64_t *v) {
    return e->kind == HC_E_CONST && is_scalar_int(e->type) && hc_expr_is_const_int(e, v) &&
           (hc_dtype_is_signed(e->type->dtype) || e->u.c.u <= INT64_MAX);
}
static bool is_const_k(const hc_expr *e, int64_t k) {
    int64_t v;
    return is_int_const(e, &v) && v == k;
}
static bool is_float_const(const hc_expr *e, double f) {
    return e->kind == HC_E_CONST && e->type->kind == HC_TY_SCALAR &&
           is_exact_float(e->type->dtype) && e->u.c.f == f && !signbit(e->u.c.f);
}
static bool is_bool_const(const hc_expr *e, bool *v) {
    if (e->kind != HC_E_CONST || !hc_type_is_scalar(e->type, HC_BOOL)) return false;
    *v = e->u.c.i != 0;
    return true;
}

/* x + k for a signed constant k, written as x - |k| when k < 0. */
static hc_expr *add_offset(simp *S, hc_expr *x, int64_t k) {
    hc_dtype d = x->type->dtype;
    if (k == 0) return x;
    if (k < 0 && k != INT64_MIN) return simp_top(S, hc_sub(S->a, x, int_const(S, d, -k)));
    return simp_top(S, hc_add(S->a, x, int_const(S, d, k)));
}

/* Splits e into base + offset when e is (base +/- constant) of e's own type. */
static bool split_offset(const hc_expr *e, hc_expr **base, int64_t *off) {
    int64_t k;
    if (e->kind != HC_E_BINARY || !is_int_const(e->u.bin.b, &k)) return false;
    if (!hc_type_equal(e->u.bin.a->type, e->type) || !hc_type_equal(e->u.bin.b->type, e->type))
        return false;
    if (e->u.bin.op == HC_OP_ADD) *off = k;
    else if (e->u.bin.op == HC_OP_SUB && k != INT64_MIN) *off = -k;
    else return false;
    *base = e->u.bin.a;
    return true;
}

static bool fits_type(i128 v, hc_dtype d) { return v >= dtype_min(d) && v <= dtype_max(d); }

/* ---- rewrite rules ------------------------------------------------------------------ */
/* (x + c1) + c2 -> x + (c1 + c2), (x * c1) * c2 -> x * (c1 * c2), and constants moved
 * outwards through sums so that they meet. Signed integers only (no wrap to respect). */
static hc_expr *reassociate(simp *S, hc_expr *e) {
    hc_binop op = e->u.bin.op;
    hc_expr *a = e->u.bin.a, *b = e->u.bin.b, *base;
    hc_dtype d = e->type->dtype;
    int64_t k, off;
    if (!hc_type_equal(a->type, e->type) || !hc_type_equal(b->type, e->type)) return NULL;
    if ((op == HC_OP_ADD || op == HC_OP_SUB) && is_int_const(b, &k) &&
        split_offset(a, &base, &off)) {
        i128 t = (i128)off + (op == HC_OP_ADD ? (i128)k : -(i128)k);
        if (!fits_type(t, d)) return NULL;
        return add_offset(S, base, (int64_t)t);
    }
    if (op == HC_OP_MUL && is_int_const(b, &k) && a->kind == HC_E_BINARY &&
        a->u.bin.op == HC_OP_MUL && is_int_const(a->u.bin.b, &off) &&
        hc_type_equal(a->u.bin.a->type, e->type)) {
        i128 t = (i128)off * k;
        if (!fits_type(t, d)) return NULL;
        return simp_top(S, hc_mul(S->a, a->u.bin.a, int_const(S, d, (int64_t)t)));
    }
    if (op == HC_OP_ADD && b->kind != HC_E_CONST && split_offset(a, &base, &off))
        return add_offset(S, simp_top(S, hc_add(S->a, base, b)), off);
    if ((op == HC_OP_ADD || op == HC_OP_SUB) && split_offset(b, &base, &off)) {
        hc_expr *inner = simp_top(S, hc_binary(S->a, op, a, base));
        return add_offset(S, inner, op == HC_OP_ADD ? off : -off);
    }
    return NULL;
}

/* Splits a sum n (signed type T) into Q * c + R: terms whose coefficient is a multiple of
 * c go to Q (divided by c); constants split by floor division; the rest stay in R. */
static void split_multiple(simp *S, hc_expr *n, int64_t c, hc_expr **q, hc_expr **r) {
    hc_dtype d = n->type->dtype;
    int64_t k;
    *q = *r = NULL;
    if (is_int_const(n, &k)) {
        int64_t fq = k / c - ((k % c) < 0); /* floor */
        int64_t fr = k - fq * c;
        if (fq) *q = int_const(S, d, fq);
        if (fr) *r = int_const(S, d, fr);
        return;
    }
    if (n->kind != HC_E_BINARY || !hc_type_equal(n->u.bin.a->type, n->type) ||
        !hc_type_equal(n->u.bin.b->type, n->type) || has_effect(n)) {
        *r = n;
        return;
    }
    hc_binop op = n->u.bin.op;
    if (op == HC_OP_MUL && is_int_const(n->u.bin.b, &k) && k % c == 0) {
        *q = k == c ? n->u.bin.a : simp_top(S, hc_mul(S->a, n->u.bin.a, int_const(S, d, k / c)));
        return;
    }
    if (op != HC_OP_ADD && op != HC_OP_SUB) {
        *r = n;
        return;
    }
    hc_expr *qa, *ra, *qb, *rb;
    split_multiple(S, n->u.bin.a, c, &qa, &ra);
    split_multiple(S, n->u.bin.b, c, &qb, &rb);
    hc_expr *zero = int_const(S, d, 0);
    *q = qa || qb ? simp_top(S, hc_binary(S->a, op, qa ? qa : zero, qb ? qb : zero)) : NULL;
    *r = ra || rb ? simp_top(S, hc_binary(S->a, op, ra ? ra : zero, rb ? rb : zero)) : NULL;
}

/* x / c and x % c for a positive constant c, by bounds and by splitting multiples. */
static hc_expr *divmod_by_bounds(simp *S, hc_expr *e, int64_t c) {
    hc_expr *x = e->u.bin.a;
    bool div = e->u.bin.op == HC_OP_DIV;
    ival bx = bound(S, x);
    if (!has_effect(x)) {
        /* Truncating division by c > 0 is monotone: equal ends give a constant. */
        if (div && bx.lo / c == bx.hi / c) return int_const(S, e->type->dtype, bx.lo / c);
        if (!div && bx.lo > -c && bx.hi < c) return as_type(S, x, e->type);
    }
    if (bx.lo < 0) return NULL; /* C truncation differs from floor: keep as written */
    hc_expr *q, *r;
    split_multiple(S, x, c, &q, &r);
    if (!q) return NULL;
    if (r && bound(S, r).lo < 0) return NULL;
    hc_expr *cc = e->u.bin.b;
    if (!r) return div ? q : int_const(S, e->type->dtype, 0);
    if (!div) return simp_top(S, hc_mod(S->a, r, cc));
    return simp_top(S, hc_add(S->a, q, simp_top(S, hc_div(S->a, r, cc))));
}

/* Comparisons and min/max decided by intervals. */
static hc_expr *decide_by_bounds(simp *S, hc_expr *e) {
    hc_expr *a = e->u.bin.a, *b = e->u.bin.b;
    if (!is_sint(a->type) || !is_sint(b->type)) return NULL;
    ival x = bound(S, a), y = bound(S, b);
    hc_binop op = e->u.bin.op;
    int known = 2; /* 1 true, 0 false, 2 unknown */
    switch (op) {
    case HC_OP_MIN:
    case HC_OP_MAX:
        if (x.hi <= y.lo) return as_type(S, op == HC_OP_MIN ? a : b, e->type);
        if (y.hi <= x.lo) return as_type(S, op == HC_OP_MIN ? b : a, e->type);
        return NULL;
    case HC_OP_LT: known = x.hi < y.lo ? 1 : x.lo >= y.hi ? 0 : 2; break;
    case HC_OP_LE: known = x.hi <= y.lo ? 1 : x.lo > y.hi ? 0 : 2; break;
    case HC_OP_GT: known = x.lo > y.hi ? 1 : x.hi <= y.lo ? 0 : 2; break;
    case HC_OP_GE: known = x.lo >= y.hi ? 1 : x.hi < y.lo ? 0 : 2; break;
    case HC_OP_EQ:
    case HC_OP_NE: {
        bool disjoint = x.hi < y.lo || y.hi < x.lo;
        bool same = x.lo == x.hi && y.lo == y.hi && x.lo == y.lo;
        if (disjoint || same) known = (same == (op == HC_OP_EQ));
        break;
    }
    default: return NULL;
    }
    if (known == 2 || has_effect(a) || has_effect(b)) return NULL;
    return hc_bool(S->a, known == 1);
}

static bool commutative(hc_binop op) {
    switch (op) {
    case HC_OP_ADD: case HC_OP_MUL: case HC_OP_MIN: case HC_OP_MAX: case HC_OP_BITAND:
    case HC_OP_BITOR: case HC_OP_BITXOR: case HC_OP_EQ: case HC_OP_NE: return true;
    default: return false;
    }
}

/* && and || with a constant operand; a constant left operand short-circuits. */
static hc_expr *logic_identity(simp *S, hc_expr *e) {
    hc_expr *a = e->u.bin.a, *b = e->u.bin.b;
    bool and = e->u.bin.op == HC_OP_AND, v;
    if (!hc_type_is_scalar(a->type, HC_BOOL) || !hc_type_is_scalar(b->type, HC_BOOL))
        return NULL;
    if (is_bool_const(a, &v)) return v == and ? b : a;
    if (is_bool_const(b, &v)) {
        if (v == and) return a;
        return has_effect(a) ? NULL : b;
    }
    return NULL;
}

static bool is_binop(const hc_expr *e, hc_binop op) {
    return e->kind == HC_E_BINARY && e->u.bin.op == op;
}

/* Whether q is (x / y) * y (or y * (x / y)) and r is x % y: q + r is then x, for C's
 * truncating division and any y (the unflattening of a row index over a symbolic dim,
 * row / seq and row % seq, flattened again). */
static bool divmod_recombines(const hc_expr *q, const hc_expr *r) {
    if (!is_binop(q, HC_OP_MUL) || !is_binop(r, HC_OP_MOD)) return false;
    const hc_expr *x = r->u.bin.a, *y = r->u.bin.b;
    for (int side = 0; side < 2; side++) {
        const hc_expr *d = side ? q->u.bin.b : q->u.bin.a, *m = side ? q->u.bin.a : q->u.bin.b;
        if (is_binop(d, HC_OP_DIV) && hc_expr_equal(d->u.bin.a, x) && hc_expr_equal(d->u.bin.b, y) &&
            hc_expr_equal(m, y) && hc_type_equal(d->type, r->type))
            return true;
    }
    return false;
}

static hc_expr *int_identity(simp *S, hc_expr *e) {
    hc_expr *a = e->u.bin.a, *b = e->u.bin.b;
    const hc_type *t = e->type;
    hc_dtype d = t->dtype;
    bool pure = !has_effect(a) && !has_effect(b);
    switch (e->u.bin.op) {
    case HC_OP_ADD:
        if (is_const_k(b, 0)) return as_type(S, a, t);
        if (pure && divmod_recombines(a, b)) return as_type(S, b->u.bin.a, t);
        if (pure && divmod_recombines(b, a)) return as_type(S, a->u.bin.a, t);
        return NULL;
    case HC_OP_SUB:
        if (is_const_k(b, 0)) return as_type(S, a, t);
        return pure && hc_expr_equal(a, b) ? int_const(S, d, 0) : NULL;
    case HC_OP_MUL:
        if (is_const_k(b, 1)) return as_type(S, a, t);
        return is_const_k(b, 0) && pure ? int_const(S, d, 0) : NULL;
    case HC_OP_DIV: return is_const_k(b, 1) ? as_type(S, a, t) : NULL;
    case HC_OP_MOD:
        return (is_const_k(b, 1) || (is_const_k(b, -1) && hc_dtype_is_signed(d))) && pure
                   ? int_const(S, d, 0)
                   : NULL;
    case HC_OP_MIN:
    case HC_OP_MAX: return pure && hc_expr_equal(a, b) ? as_type(S, a, t) : NULL;
    default: return NULL;
    }
}

/* Exact float identities only: x * 1, x / 1, x - (+0). (x + 0 is not: -0 + 0 = +0.) */
static hc_expr *float_identity(simp *S, hc_expr *e) {
    hc_expr *a = e->u.bin.a, *b = e->u.bin.b;
    if (!hc_type_equal(a->type, e->type)) return NULL;
    switch (e->u.bin.op) {
    case HC_OP_MUL:
    case HC_OP_DIV: return is_float_const(b, 1.0) ? a : NULL;
    case HC_OP_SUB: return is_float_const(b, 0.0) ? a : NULL;
    default: return NULL;
    }
}

static hc_expr *simp_binary(simp *S, hc_expr *e) {
    hc_expr *r = fold_binary(S, e);
    if (r || e->type->kind != HC_TY_SCALAR) return r ? r : e;
    hc_binop op = e->u.bin.op;
    hc_expr *a = e->u.bin.a, *b = e->u.bin.b;
    if (op == HC_OP_AND || op == HC_OP_OR) return (r = logic_identity(S, e)) ? r : e;
    if (commutative(op) && a->kind == HC_E_CONST && b->kind != HC_E_CONST &&
        is_scalar_int(a->type)) {
        e = hc_binary(S->a, op, b, a);
        a = e->u.bin.a, b = e->u.bin.b;
    }
    if (hc_dtype_is_float(e->type->dtype)) return (r = float_identity(S, e)) ? r : e;
    if (is_scalar_int(e->type) && (r = int_identity(S, e))) return r;
    if (!is_sint(e->type) && !hc_binop_is_comparison(op)) return e;
    if ((r = decide_by_bounds(S, e))) return r;
    if (!is_sint(e->type)) return e;
    int64_t c;
    if ((op == HC_OP_DIV || op == HC_OP_MOD) && is_int_const(b, &c) && c > 0 &&
        hc_type_equal(a->type, e->type) && (r = divmod_by_bounds(S, e, c)))
        return r;
    if ((op == HC_OP_ADD || op == HC_OP_SUB || op == HC_OP_MUL) && (r = reassociate(S, e)))
        return r;
    return e;
}

static hc_expr *simp_unary(simp *S, hc_expr *e) {
    hc_expr *r = fold_unary(S, e), *x = e->u.un.a;
    if (r) return r;
    /* !!x and -(-x) cancel (bool / signed integers: no wrap involved). */
    if (x->kind == HC_E_UNARY && x->u.un.op == e->u.un.op &&
        hc_type_equal(x->u.un.a->type, e->type)) {
        if (e->u.un.op == HC_OP_NOT && hc_type_is_scalar(e->type, HC_BOOL)) return x->u.un.a;
        if (e->u.un.op == HC_OP_NEG && is_sint(e->type)) return x->u.un.a;
    }
    return e;
}

static hc_expr *simp_select(simp *S, hc_expr *e) {
    bool v;
    hc_expr *t = e->u.sel.t, *f = e->u.sel.f;
    if (is_bool_const(e->u.sel.cond, &v) && !has_effect(v ? f : t))
        return as_type(S, v ? t : f, e->type);
    if (hc_expr_equal(t, f) && !has_effect(e->u.sel.cond)) return as_type(S, t, e->type);
    return e;
}

static hc_expr *simp_cast(simp *S, hc_expr *e) {
    hc_expr *x = e->u.cast.a;
    if (hc_type_equal(x->type, e->type)) return x;
    hc_value out;
    if (x->kind == HC_E_CONST && e->type->kind == HC_TY_SCALAR &&
        convert(x->u.c, x->type->dtype, e->type->dtype, &out))
        return hc_const(S->a, e->type->dtype, out);
    return e;
}

/* ---- expression traversal ----------------------------------------------------------- */
static hc_expr **simp_list(simp *S, int n, hc_expr **xs, bool *changed) {
    hc_expr **out = xs;
    for (int i = 0; i < n; i++) {
        hc_expr *y = simp_expr(S, xs[i]);
        if (y == xs[i]) continue;
        if (out == xs) out = hc_arena_memdup(S->a, xs, sizeof(hc_expr *) * (size_t)n);
        out[i] = y;
        *changed = true;
    }
    return out;
}

static void bind(simp *S, const hc_var *v, ival r) { hc_vec_push(&S->binds, ((binding){v, r})); }

static hc_expr *simp_children(simp *S, hc_expr *e) {
    hc_expr tmp = *e;
    bool ch = false;
    switch (e->kind) {
    case HC_E_CONST:
    case HC_E_VAR: return e;
    case HC_E_BINARY:
        tmp.u.bin.a = simp_expr(S, e->u.bin.a), tmp.u.bin.b = simp_expr(S, e->u.bin.b);
        ch = tmp.u.bin.a != e->u.bin.a || tmp.u.bin.b != e->u.bin.b;
        break;
    case HC_E_UNARY:
        tmp.u.un.a = simp_expr(S, e->u.un.a);
        ch = tmp.u.un.a != e->u.un.a;
        break;
    case HC_E_SELECT:
        tmp.u.sel.cond = simp_expr(S, e->u.sel.cond);
        tmp.u.sel.t = simp_expr(S, e->u.sel.t), tmp.u.sel.f = simp_expr(S, e->u.sel.f);
        ch = tmp.u.sel.cond != e->u.sel.cond || tmp.u.sel.t != e->u.sel.t ||
             tmp.u.sel.f != e->u.sel.f;
        break;
    case HC_E_CAST:
        tmp.u.cast.a = simp_expr(S, e->u.cast.a);
        ch = tmp.u.cast.a != e->u.cast.a;
        break;
    case HC_E_CALL: tmp.u.call.args = simp_list(S, e->u.call.nargs, e->u.call.args, &ch); break;
    case HC_E_LOAD:
    case HC_E_ADDRESS: tmp.u.load.idx = simp_list(S, e->u.load.n, e->u.load.idx, &ch); break;
    case HC_E_TENSOR_ACCESS:
        tmp.u.access.idx = simp_list(S, e->u.access.n, e->u.access.idx, &ch);
        break;
    case HC_E_REDUCE: {
        size_t mark = S->binds.len;
        for (int i = 0; i < e->u.reduce.naxes; i++)
            bind(S, e->u.reduce.axes[i],
                 (ival){0, e->u.reduce.sext && e->u.reduce.sext[i]
                               ? INT64_MAX : e->u.reduce.extents[i] - 1});
        tmp.u.reduce.value = simp_expr(S, e->u.reduce.value);
        S->binds.len = mark;
        ch = tmp.u.reduce.value != e->u.reduce.value;
        break;
    }
    }
    if (!ch) return e;
    hc_expr *r = HC_NEW(S->a, hc_expr);
    *r = tmp;
    return r;
}

static hc_expr *simp_expr(simp *S, hc_expr *e) {
    return e ? simp_top(S, simp_children(S, e)) : NULL;
}

static hc_expr *simp_top(simp *S, hc_expr *e) {
    switch (e->kind) {
    case HC_E_BINARY: return simp_binary(S, e);
    case HC_E_UNARY: return simp_unary(S, e);
    case HC_E_SELECT: return simp_select(S, e);
    case HC_E_CAST: return simp_cast(S, e);
    default: return e;
    }
}

/* ---- statements --------------------------------------------------------------------- */
static hc_stmt *simp_stmt(simp *S, hc_stmt *s);

static hc_stmt *empty(simp *S) { return hc_seq(S->a, 0, NULL); }
static bool is_empty(const hc_stmt *s) { return s->kind == HC_S_SEQ && s->u.seq.n == 0; }

static hc_stmt *simp_seq(simp *S, hc_stmt *s) {
    HC_VEC(hc_stmt *) out = {0};
    bool changed = false;
    for (int i = 0; i < s->u.seq.n; i++) {
        hc_stmt *c = simp_stmt(S, s->u.seq.stmts[i]);
        changed |= c != s->u.seq.stmts[i];
        if (c->kind == HC_S_SEQ) {
            changed = true; /* nested blocks are flattened into this one */
            for (int j = 0; j < c->u.seq.n; j++) hc_vec_push(&out, c->u.seq.stmts[j]);
        } else {
            hc_vec_push(&out, c);
        }
    }
    hc_stmt *r = s;
    if (out.len == 1) r = out.data[0];
    else if (changed) r = hc_seq(S->a, (int)out.len, out.data);
    hc_vec_free(&out);
    return r;
}

static hc_stmt *simp_for(simp *S, hc_stmt *s) {
    hc_expr *ext = simp_expr(S, s->u.for_.extent);
    ival be = bound(S, ext);
    if (be.hi <= 0 && !has_effect(ext)) return empty(S);
    int64_t one;
    if (is_int_const(ext, &one) && one == 1) {
        hc_var *v = s->u.for_.var;
        hc_expr *zero = as_type(S, hc_int(S->a, 0), v->type);
        return simp_stmt(S, hc_subst_stmt(S->a, s->u.for_.body, 1, &v, &zero));
    }
    size_t mark = S->binds.len;
    bind(S, s->u.for_.var, (ival){0, be.hi == INT64_MAX ? INT64_MAX : be.hi - 1});
    hc_stmt *body = simp_stmt(S, s->u.for_.body);
    S->binds.len = mark;
    if (ext == s->u.for_.extent && body == s->u.for_.body) return s;
    return hc_for(S->a, s->u.for_.var, ext, s->u.for_.attr, body);
}

static void mapping_shape(const hc_mapping *m, int64_t *shape) {
    if (m->kind != HC_MAP_COMPOSE) {
        for (int i = 0; i < m->ndim; i++) shape[i] = m->shape[i];
        return;
    }
    int64_t o[HC_MAX_DIMS], in[HC_MAX_DIMS];
    mapping_shape(m->outer, o);
    mapping_shape(m->inner, in);
    for (int i = 0; i < m->ndim; i++) shape[i] = o[i] * in[i];
}

static hc_stmt *simp_fmap(simp *S, hc_stmt *s) {
    hc_expr *w = simp_expr(S, s->u.fmap.worker);
    int64_t shape[HC_MAX_DIMS];
    mapping_shape(s->u.fmap.mapping, shape);
    size_t mark = S->binds.len;
    for (int i = 0; i < s->u.fmap.nvars; i++) bind(S, s->u.fmap.vars[i], (ival){0, shape[i] - 1});
    hc_stmt *body = simp_stmt(S, s->u.fmap.body);
    S->binds.len = mark;
    if (w == s->u.fmap.worker && body == s->u.fmap.body) return s;
    return hc_for_mapping(S->a, s->u.fmap.mapping, w, s->u.fmap.nvars, s->u.fmap.vars, body);
}

static hc_stmt *simp_if(simp *S, hc_stmt *s) {
    hc_expr *c = simp_expr(S, s->u.if_.cond);
    bool v;
    if (is_bool_const(c, &v)) {
        hc_stmt *branch = v ? s->u.if_.then_s : s->u.if_.else_s;
        return branch ? simp_stmt(S, branch) : empty(S);
    }
    hc_stmt *t = simp_stmt(S, s->u.if_.then_s);
    hc_stmt *f = s->u.if_.else_s ? simp_stmt(S, s->u.if_.else_s) : NULL;
    if (f && is_empty(f)) f = NULL;
    if (c == s->u.if_.cond && t == s->u.if_.then_s && f == s->u.if_.else_s) return s;
    return hc_if(S->a, c, t, f);
}

static hc_stmt *simp_let(simp *S, hc_stmt *s) {
    hc_expr *v = simp_expr(S, s->u.let.value);
    size_t mark = S->binds.len;
    if (is_sint(s->u.let.var->type)) bind(S, s->u.let.var, bound(S, v));
    hc_stmt *body = simp_stmt(S, s->u.let.body);
    S->binds.len = mark;
    if (v == s->u.let.value && body == s->u.let.body) return s;
    return hc_let(S->a, s->u.let.var, v, body);
}

static hc_stmt *simp_simple(simp *S, hc_stmt *s) {
    hc_stmt tmp = *s;
    bool ch = false;
    switch (s->kind) {
    case HC_S_DECLARE: tmp.u.decl.init = simp_expr(S, s->u.decl.init); break;
    case HC_S_ASSIGN: tmp.u.assign.value = simp_expr(S, s->u.assign.value); break;
    case HC_S_STORE:
        tmp.u.store.idx = simp_list(S, s->u.store.n, s->u.store.idx, &ch);
        tmp.u.store.value = simp_expr(S, s->u.store.value);
        break;
    case HC_S_EVAL: tmp.u.eval.e = simp_expr(S, s->u.eval.e); break;
    default: return s;
    }
    ch |= memcmp(&tmp, s, sizeof tmp) != 0;
    if (!ch) return s;
    hc_stmt *r = HC_NEW(S->a, hc_stmt);
    *r = tmp;
    return r;
}

static hc_stmt *simp_stmt(simp *S, hc_stmt *s) {
    if (!s) return empty(S);
    switch (s->kind) {
    case HC_S_SEQ: return simp_seq(S, s);
    case HC_S_FOR: return simp_for(S, s);
    case HC_S_FOR_MAPPING: return simp_fmap(S, s);
    case HC_S_IF: return simp_if(S, s);
    case HC_S_LET: return simp_let(S, s);
    default: return simp_simple(S, s);
    }
}

/* ---- public entry points ------------------------------------------------------------ */
hc_expr *hc_simplify_expr(hc_arena *a, hc_expr *e) {
    simp S = {.a = a};
    hc_expr *r = simp_expr(&S, e);
    hc_vec_free(&S.binds);
    return r;
}

hc_stmt *hc_simplify_stmt(hc_arena *a, hc_stmt *s) {
    simp S = {.a = a};
    hc_stmt *r = simp_stmt(&S, s);
    hc_vec_free(&S.binds);
    return r;
}

hc_func *hc_simplify_func(hc_arena *a, const hc_func *f) {
    simp S = {.a = a};
    hc_func *r = HC_NEW(a, hc_func);
    *r = *f;
    r->body = simp_stmt(&S, f->body);
    for (int i = 0; i < 3; i++) {
        r->grid_dim[i] = simp_expr(&S, f->grid_dim[i]);
        r->block_dim[i] = simp_expr(&S, f->block_dim[i]);
    }
    hc_vec_free(&S.binds);
    return r;
}
