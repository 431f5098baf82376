/* math_elem.c — elementwise operators of the math category: activations, unary math,
 * binary and variadic arithmetic with numpy broadcasting, comparison and logic, Where and
 * Clip. Each op is one expression over its inputs' elements (unary_expr, nary_expr); the
 * infer functions check the ONNX type constraints and compute the broadcast shape. */
#include <math.h>
#include <string.h>

#include "graph/ops/math_impl.h"

/* ---- dtype classes ------------------------------------------------------------------ */
enum { T_FLOAT = 1, T_SINT = 2, T_UINT = 4, T_BOOL = 8 };
#define T_INT (T_SINT | T_UINT)
#define T_NUM (T_FLOAT | T_INT)

static int dtype_class(hc_dtype t) {
    if (t == HC_BOOL) return T_BOOL;
    if (hc_dtype_is_float(t)) return T_FLOAT;
    return hc_dtype_is_signed(t) ? T_SINT : T_UINT;
}

static const char *class_text(int cls) {
    switch (cls) {
    case T_FLOAT: return "a float type";
    case T_FLOAT | T_SINT: return "a float or signed integer type";
    case T_NUM: return "a numeric type";
    case T_NUM | T_BOOL: return "a numeric or bool type";
    case T_BOOL: return "bool";
    default: return "another type";
    }
}

static hc_status check_class(const hc_node *n, int i, const hc_tensor *t, int cls,
                             hc_error *err) {
    if (dtype_class(t->dtype) & cls) return HC_OK;
    return hc_node_fail(n, HC_ERR_INVALID, err, "input %d ('%s') is %s, expected %s", i,
                        t->name, hc_dtype_name(t->dtype), class_text(cls));
}

/* Opsets 1-6 (the importer marks legacy_broadcast): binary ops broadcast only with
 * broadcast=1, B against A, aligned at `axis`
 * (default: B a suffix of A). Without it the shapes must be equal; with it and no axis,
 * or the axis that makes B a suffix of A, numpy's rules compute the same. Another axis is
 * refused. */
static hc_status check_legacy_broadcast(const hc_node *n, hc_error *err) {
    /* marked by the importer, or a node built at opset 1-6 with the attribute itself (the
     * graph API); the nodes passes derive inherit the opset but not the attribute */
    const hc_attr *mark = hc_node_attr(n, "legacy_broadcast");
    if (!mark && n->opset > 0 && n->opset < 7) mark = hc_node_attr(n, "broadcast");
    if (!mark || n->ninputs != 2 || !n->inputs[0] || !n->inputs[1]) return HC_OK;
    const hc_tensor *x = n->inputs[0], *y = n->inputs[1];
    if (!(mark->kind == HC_ATTR_INT && mark->i != 0)) {
        if (x->ndim != y->ndim || memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->ndim))
        {
            hc_sb sb;
            hc_sb_init(&sb);
            hc_print_shape(&sb, x->ndim, x->shape);
            hc_sb_puts(&sb, " and ");
            hc_print_shape(&sb, y->ndim, y->shape);
            hc_node_fail(n, HC_ERR_INVALID, err, "inputs of shapes %s without broadcast=1 "
                         "(opset %d needs equal shapes)", hc_sb_str(&sb), n->opset);
            hc_sb_free(&sb);
            return err->status;
        }
        return HC_OK;
    }
    if (y->ndim > x->ndim)
        return hc_node_fail(n, HC_ERR_INVALID, err, "B of rank %d broadcasts to A of rank %d",
                            y->ndim, x->ndim);
    if (hc_node_attr(n, "axis") && hc_node_attr_int(n, "axis", 0) != x->ndim - y->ndim)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err,
                            "legacy broadcast at axis %lld (B of rank %d, A of rank %d; only B "
                            "as A's suffix, opset %d) is not supported",
                            (long long)hc_node_attr_int(n, "axis", 0), y->ndim, x->ndim, n->opset);
    return HC_OK;
}

/* ---- unary operators ---------------------------------------------------------------- */
static int unary_classes(hc_op_kind op) {
    switch (op) {
    case HC_OPK_RELU:
    case HC_OPK_NEG: return T_FLOAT | T_SINT;
    case HC_OPK_ERF:
    case HC_OPK_SHRINK:
    case HC_OPK_ABS:
    case HC_OPK_SIGN: return T_NUM;
    case HC_OPK_NOT: return T_BOOL;
    case HC_OPK_BITWISE_NOT: return T_INT;
    default: return T_FLOAT;
    }
}

static bool unary_gives_bool(hc_op_kind op) {
    return op == HC_OPK_IS_NAN || op == HC_OPK_IS_INF || op == HC_OPK_NOT;
}

hc_status hc_math_infer_unary(hc_node *n, hc_error *err) {
    const hc_tensor *x;
    hc_status st = hc_math_input(n, 0, &x, err);
    if (st || (st = check_class(n, 0, x, unary_classes(n->op), err))) return st;
    hc_dtype out = unary_gives_bool(n->op) ? HC_BOOL : x->dtype;
    hc_node_set_output(n, 0, out, x->ndim, x->shape);
    return HC_OK;
}

#define NUM(v) hc_math_num(a, x, (v))
#define SEL(c, t, f) hc_select(a, (c), (t), (f))
#define LT(p, q) hc_binary(a, HC_OP_LT, (p), (q))
#define GT(p, q) hc_binary(a, HC_OP_GT, (p), (q))
#define ATTR(name, dflt) hc_node_attr_float(n, (name), (dflt))

/* min(max(v, 0), 1) that keeps NaN (numpy's clip does) */
static hc_expr *clamp01(hc_arena *a, hc_expr *x) {
    return SEL(LT(x, NUM(0)), NUM(0), SEL(GT(x, NUM(1)), NUM(1), x));
}

static hc_expr *sign_expr(hc_arena *a, hc_expr *x) {
    hc_expr *rest = dtype_class(x->type->dtype) == T_FLOAT ? x : NUM(0); /* keeps -0, NaN */
    if (dtype_class(x->type->dtype) != T_UINT) rest = SEL(LT(x, NUM(0)), NUM(-1), rest);
    return SEL(GT(x, NUM(0)), NUM(1), rest);
}

static hc_expr *is_inf_expr(hc_arena *a, const hc_node *n, hc_expr *x) {
    bool pos = hc_node_attr_int(n, "detect_positive", 1) != 0;
    bool neg = hc_node_attr_int(n, "detect_negative", 1) != 0;
    if (pos && neg) return hc_math(a, HC_PRIM_ISINF, x, NULL);
    if (!pos && !neg) return hc_bool(a, false);
    return hc_eq(a, x, NUM(pos ? INFINITY : -INFINITY));
}

/* x < -lambd: x + bias; x > lambd: x - bias; else 0 (integers are computed in f64) */
static hc_expr *shrink_expr(hc_arena *a, const hc_node *n, hc_expr *x) {
    const hc_type *t = x->type;
    if (!hc_dtype_is_float(t->dtype)) x = hc_cast(a, hc_type_scalar(HC_F64), x);
    double lambd = ATTR("lambd", 0.5), bias = ATTR("bias", 0.0);
    hc_expr *v = SEL(LT(x, NUM(-lambd)), hc_add(a, x, NUM(bias)),
                     SEL(GT(x, NUM(lambd)), hc_sub(a, x, NUM(bias)), NUM(0)));
    return v->type == t ? v : hc_cast(a, t, v);
}

/* Activations with attributes. */
static hc_expr *activation_expr(hc_arena *a, const hc_node *n, hc_expr *x) {
    switch (n->op) {
    case HC_OPK_LEAKY_RELU: return SEL(LT(x, NUM(0)), hc_mul(a, NUM(ATTR("alpha", 0.01)), x), x);
    case HC_OPK_HARD_SIGMOID:
        return clamp01(a, hc_add(a, hc_mul(a, NUM(ATTR("alpha", 0.2)), x),
                                 NUM(ATTR("beta", 0.5))));
    case HC_OPK_ELU: {
        hc_expr *em1 = hc_sub(a, hc_math(a, HC_PRIM_EXP, x, NULL), NUM(1));
        return SEL(LT(x, NUM(0)), hc_mul(a, NUM(ATTR("alpha", 1.0)), em1), x);
    }
    case HC_OPK_SELU: {
        double alpha = ATTR("alpha", 1.67326319217681884765625);
        hc_expr *gamma = NUM(ATTR("gamma", 1.05070102214813232421875));
        hc_expr *neg = hc_sub(a, hc_mul(a, NUM(alpha), hc_math(a, HC_PRIM_EXP, x, NULL)),
                              NUM(alpha));
        return SEL(hc_le(a, x, NUM(0)), hc_mul(a, gamma, neg), hc_mul(a, gamma, x));
    }
    case HC_OPK_CELU: {
        /* max(0, x) + min(0, alpha * (exp(x / alpha) - 1)): one term is 0 on each side */
        hc_expr *alpha = NUM(ATTR("alpha", 1.0));
        hc_expr *e = hc_math(a, HC_PRIM_EXP, hc_div(a, x, alpha), NULL);
        return SEL(LT(x, NUM(0)), hc_mul(a, alpha, hc_sub(a, e, NUM(1))), x);
    }
    case HC_OPK_THRESHOLDED_RELU: return SEL(GT(x, NUM(ATTR("alpha", 1.0))), x, NUM(0));
    case HC_OPK_SHRINK: return shrink_expr(a, n, x);
    default: hc_unreachable();
    }
}

static hc_expr *unary_expr(hc_arena *a, hc_expr *x, void *ctx) {
    const hc_node *n = ctx;
    hc_prim p = HC_PRIM_COUNT;
    switch (n->op) {
    case HC_OPK_RELU: return SEL(LT(x, NUM(0)), NUM(0), x); /* NaN stays NaN */
    case HC_OPK_HARD_SWISH:
        return hc_mul(a, x, clamp01(a, hc_add(a, hc_mul(a, NUM(1.0 / 6.0), x), NUM(0.5))));
    case HC_OPK_SOFTPLUS: {
        /* log(1 + exp(x)) = max(x, 0) + log(1 + exp(-|x|)), without overflow */
        hc_expr *e = hc_math(a, HC_PRIM_EXP, hc_unary(a, HC_OP_NEG, hc_math(a, HC_PRIM_ABS, x,
                                                                               NULL)), NULL);
        return hc_add(a, SEL(GT(x, NUM(0)), x, NUM(0)),
                      hc_math(a, HC_PRIM_LOG, hc_add(a, NUM(1), e), NULL));
    }
    case HC_OPK_SOFTSIGN:
        return hc_div(a, x, hc_add(a, NUM(1), hc_math(a, HC_PRIM_ABS, x, NULL)));
    case HC_OPK_NEG: return hc_unary(a, HC_OP_NEG, x);
    case HC_OPK_ABS:
        return dtype_class(x->type->dtype) == T_UINT ? x : hc_math(a, HC_PRIM_ABS, x, NULL);
    case HC_OPK_RECIPROCAL: return hc_div(a, NUM(1), x);
    case HC_OPK_SIGN: return sign_expr(a, x);
    case HC_OPK_IS_INF: return is_inf_expr(a, n, x);
    case HC_OPK_NOT: return hc_unary(a, HC_OP_NOT, x);
    case HC_OPK_BITWISE_NOT: return hc_cast(a, x->type, hc_unary(a, HC_OP_BITNOT, x));
    case HC_OPK_GELU: {
        hc_expr *h = hc_mul(a, NUM(0.5), x);
        if (!strcmp(hc_node_attr_string(n, "approximate", "none"), "tanh")) {
            /* 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
            hc_expr *x3 = hc_mul(a, hc_mul(a, x, x), x);
            hc_expr *in = hc_mul(a, NUM(0.7978845608028654), hc_add(a, x, hc_mul(a, NUM(0.044715), x3)));
            return hc_mul(a, h, hc_add(a, NUM(1), hc_math(a, HC_PRIM_TANH, in, NULL)));
        }
        hc_expr *e = hc_math(a, HC_PRIM_ERF, hc_mul(a, x, NUM(0.7071067811865476)), NULL);
        return hc_mul(a, h, hc_add(a, NUM(1), e));
    }
    case HC_OPK_SWISH:
        return hc_mul(a, x, hc_math(a, HC_PRIM_SIGMOID, hc_mul(a, NUM(ATTR("alpha", 1.0)), x), NULL));
    case HC_OPK_SIGMOID: p = HC_PRIM_SIGMOID; break;
    case HC_OPK_TANH: p = HC_PRIM_TANH; break;
    case HC_OPK_ERF: p = HC_PRIM_ERF; break;
    case HC_OPK_SQRT: p = HC_PRIM_SQRT; break;
    case HC_OPK_EXP: p = HC_PRIM_EXP; break;
    case HC_OPK_LOG: p = HC_PRIM_LOG; break;
    case HC_OPK_FLOOR: p = HC_PRIM_FLOOR; break;
    case HC_OPK_CEIL: p = HC_PRIM_CEIL; break;
    case HC_OPK_ROUND: p = HC_PRIM_ROUND; break; /* half to even, as ONNX */
    case HC_OPK_SIN: p = HC_PRIM_SIN; break;
    case HC_OPK_COS: p = HC_PRIM_COS; break;
    case HC_OPK_TAN: p = HC_PRIM_TAN; break;
    case HC_OPK_ASIN: p = HC_PRIM_ASIN; break;
    case HC_OPK_ACOS: p = HC_PRIM_ACOS; break;
    case HC_OPK_ATAN: p = HC_PRIM_ATAN; break;
    case HC_OPK_SINH: p = HC_PRIM_SINH; break;
    case HC_OPK_COSH: p = HC_PRIM_COSH; break;
    case HC_OPK_ASINH: p = HC_PRIM_ASINH; break;
    case HC_OPK_ACOSH: p = HC_PRIM_ACOSH; break;
    case HC_OPK_ATANH: p = HC_PRIM_ATANH; break;
    case HC_OPK_IS_NAN: p = HC_PRIM_ISNAN; break;
    default: return activation_expr(a, n, x);
    }
    return hc_math(a, p, x, NULL);
}

/* f16 and bf16 activations are computed in f32 and rounded once, as the ONNX reference
 * (numpy) does: rounding after every step of a composite one (Celu, Selu, Softplus, ...)
 * is off by an ulp of the half type. Bool results (IsNaN, IsInf) need no rounding. */
static hc_expr *unary_half_expr(hc_arena *a, hc_expr *x, void *ctx) {
    hc_dtype t = x->type->dtype;
    if (t != HC_F16 && t != HC_BF16) return unary_expr(a, x, ctx);
    hc_expr *e = unary_expr(a, hc_cast(a, hc_type_scalar(HC_F32), x), ctx);
    return e->type->dtype == HC_F32 ? hc_cast(a, hc_type_scalar(t), e) : e;
}

hc_task *hc_math_task_unary(hc_arena *a, const hc_node *n, hc_error *err) {
    int nin;
    hc_tnode **ins = hc_node_input_tnodes(a, n, &nin);
    HC_ASSERT(nin == 1);
    hc_tnode *y = hc_compute_map1(a, hc_math_out_name(n, 0), ins[0], unary_half_expr, (void *)n);
    return hc_node_task(a, n, 1, ins, 1, &y);
}

/* ---- binary, variadic and ternary operators ----------------------------------------- */
typedef struct nary_rule {
    int cls;          /* allowed dtype classes of the data inputs */
    bool same_dtype;  /* data inputs share one dtype */
    bool gives_bool;  /* comparison and logic */
    int arity;        /* exact number of inputs, 0 for variadic */
} nary_rule;

static nary_rule nary_rule_of(hc_op_kind op) {
    switch (op) {
    case HC_OPK_POW: return (nary_rule){T_NUM, false, false, 2};
    case HC_OPK_PRELU:
    case HC_OPK_ADD:
    case HC_OPK_SUB:
    case HC_OPK_MUL:
    case HC_OPK_DIV:
    case HC_OPK_MOD: return (nary_rule){T_NUM, true, false, 2};
    case HC_OPK_EQUAL: return (nary_rule){T_NUM | T_BOOL, true, true, 2};
    case HC_OPK_LESS:
    case HC_OPK_GREATER:
    case HC_OPK_LESS_OR_EQUAL:
    case HC_OPK_GREATER_OR_EQUAL: return (nary_rule){T_NUM, true, true, 2};
    case HC_OPK_AND:
    case HC_OPK_OR:
    case HC_OPK_XOR: return (nary_rule){T_BOOL, true, true, 2};
    case HC_OPK_BITWISE_AND:
    case HC_OPK_BITWISE_OR:
    case HC_OPK_BITWISE_XOR: return (nary_rule){T_INT, true, false, 2};
    case HC_OPK_BIT_SHIFT: return (nary_rule){T_INT, true, false, 2};
    case HC_OPK_WHERE: return (nary_rule){T_NUM | T_BOOL, true, false, 3};
    default: return (nary_rule){T_NUM, true, false, 0}; /* Min, Max, Mean, Sum */
    }
}

/* Where's condition (input 0) is bool and not part of the data inputs. */
static int first_data_input(hc_op_kind op) { return op == HC_OPK_WHERE ? 1 : 0; }

static hc_status check_nary_types(const hc_node *n, nary_rule r, const hc_tensor **xs,
                                  int nin, hc_error *err) {
    int first = first_data_input(n->op);
    hc_status st;
    if (first == 1 && (st = check_class(n, 0, xs[0], T_BOOL, err))) return st;
    for (int i = first; i < nin; i++) {
        if ((st = check_class(n, i, xs[i], r.cls, err))) return st;
        if (r.same_dtype && xs[i]->dtype != xs[first]->dtype)
            return hc_node_fail(n, HC_ERR_INVALID, err, "input %d ('%s') is %s but input %d "
                                "('%s') is %s", i, xs[i]->name, hc_dtype_name(xs[i]->dtype),
                                first, xs[first]->name, hc_dtype_name(xs[first]->dtype));
    }
    return HC_OK;
}

/* Output shape: numpy broadcast of all inputs; PRelu's slope broadcasts to X only. */
static hc_status nary_shape(const hc_node *n, const hc_tensor **xs, int nin, int *nd,
                            int64_t *shape, hc_error *err) {
    *nd = 0;
    for (int i = 0; i < nin; i++) {
        int64_t next[HC_MAX_DIMS];
        hc_error e = {0};
        if (xs[i]->ndim > HC_MAX_DIMS ||
            hc_broadcast_shape(*nd, shape, xs[i]->ndim, xs[i]->shape, nd, next, &e))
            return hc_node_fail(n, HC_ERR_INVALID, err, "input %d ('%s'): %s", i,
                                xs[i]->name, e.msg);
        memcpy(shape, next, sizeof(int64_t) * (size_t)*nd);
    }
    bool same = *nd == xs[0]->ndim;
    for (int d = 0; same && d < *nd; d++) same = shape[d] == xs[0]->shape[d];
    if (n->op == HC_OPK_PRELU && !same)
        return hc_node_fail(n, HC_ERR_INVALID, err, "slope '%s' does not broadcast to the "
                            "shape of X '%s'", xs[1]->name, xs[0]->name);
    return HC_OK;
}

static hc_status check_shift(const hc_node *n, hc_error *err) {
    const char *dir = hc_node_attr_string(n, "direction", "");
    if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
        return hc_node_fail(n, HC_ERR_INVALID, err, "direction '%s' (LEFT or RIGHT)", dir);
    if (n->opset < 28 && n->ninputs > 0 && n->inputs[0] && hc_dtype_is_signed(n->inputs[0]->dtype))
        return hc_node_fail(n, HC_ERR_INVALID, err, "signed integers from opset 28 (opset %d)",
                            n->opset);
    return HC_OK;
}

hc_status hc_math_infer_nary(hc_node *n, hc_error *err) {
    nary_rule r = nary_rule_of(n->op);
    const hc_tensor *xs[HC_MANY];
    int nin = 0;
    hc_status st;
    if (hc_node_num_present_inputs(n) != n->ninputs)
        return hc_node_fail(n, HC_ERR_INVALID, err, "an input is missing");
    if (r.arity && n->ninputs != r.arity)
        return hc_node_fail(n, HC_ERR_INVALID, err, "has %d inputs, expected %d", n->ninputs,
                            r.arity);
    if (n->ninputs < 1 || n->ninputs > HC_MANY)
        return hc_node_fail(n, HC_ERR_INVALID, err, "has %d inputs", n->ninputs);
    for (; nin < n->ninputs; nin++)
        if ((st = hc_math_input(n, nin, &xs[nin], err))) return st;
    if ((st = check_nary_types(n, r, xs, nin, err)) || (st = check_legacy_broadcast(n, err)))
        return st;
    if (n->op == HC_OPK_BIT_SHIFT && (st = check_shift(n, err))) return st;
    int nd;
    int64_t shape[HC_MAX_DIMS];
    if ((st = nary_shape(n, xs, nin, &nd, shape, err))) return st;
    hc_dtype out = r.gives_bool ? HC_BOOL : xs[first_data_input(n->op)]->dtype;
    hc_node_set_output(n, 0, out, nd, shape);
    return HC_OK;
}

/* Integer x / y and x % y without traps: y == 0 gives 0, and y == -1 (signed) is done
 * without the division, which overflows for the type's minimum. */
static hc_expr *int_divmod(hc_arena *a, hc_binop op, hc_expr *x, hc_expr *y) {
    bool sgn = hc_dtype_is_signed(y->type->dtype);
    hc_expr *zero = hc_math_num(a, y, 0), *one = hc_math_num(a, y, 1);
    hc_expr *m1 = sgn ? hc_eq(a, y, hc_math_num(a, y, -1)) : NULL;
    hc_expr *bad = hc_eq(a, y, zero);
    if (m1) bad = hc_binary(a, HC_OP_OR, bad, m1);
    hc_expr *r = hc_binary(a, op, x, hc_select(a, bad, one, y)); /* x % 1 is the 0 we need */
    if (op == HC_OP_MOD) return r;
    if (m1) r = hc_select(a, m1, hc_sub(a, zero, x), r);
    return hc_select(a, hc_eq(a, y, zero), zero, r);
}

/* Mod: fmod=1 truncates like C; fmod=0 gives the remainder the sign of the divisor. */
static hc_expr *mod_expr(hc_arena *a, const hc_node *n, hc_expr *x, hc_expr *y) {
    bool is_float = hc_dtype_is_float(x->type->dtype);
    hc_expr *r = is_float ? hc_math(a, HC_PRIM_FMOD, x, y) : int_divmod(a, HC_OP_MOD, x, y);
    if (hc_node_attr_int(n, "fmod", 0) || dtype_class(x->type->dtype) == T_UINT) return r;
    hc_expr *zero = hc_math_num(a, x, 0);
    hc_expr *differ = hc_binary(a, HC_OP_NE, LT(r, zero), LT(y, zero));
    hc_expr *fix = hc_binary(a, HC_OP_AND, hc_binary(a, HC_OP_NE, r, zero), differ);
    return hc_select(a, fix, hc_add(a, r, y), r);
}

/* A constant exponent of 1, 2 or 3 (x^2 in norms, x^3 in tanh-GELU): multiplications,
 * which vectorize where pow does not. 0 when the exponent is anything else. */
static int small_const_exponent(const hc_node *n) {
    const hc_tensor *e = n->inputs[1];
    if (!e->data || hc_tensor_numel(e) != 1) return 0;
    double v = hc_tensor_const_at(e, 0);
    return v == 1 || v == 2 || v == 3 ? (int)v : 0;
}

/* Pow: the result has x's type; mixed or integer operands are computed in f64. */
static hc_expr *pow_expr(hc_arena *a, const hc_node *n, hc_expr *x, hc_expr *y) {
    int k = hc_dtype_is_float(x->type->dtype) ? small_const_exponent(n) : 0;
    if (k) {
        hc_expr *r = x;
        for (int i = 1; i < k; i++) r = hc_mul(a, r, x);
        return r;
    }
    if (hc_dtype_is_float(x->type->dtype) && x->type->dtype == y->type->dtype)
        return hc_math(a, HC_PRIM_POW, x, y);
    const hc_type *f64 = hc_type_scalar(HC_F64);
    hc_expr *r = hc_math(a, HC_PRIM_POW, hc_cast(a, f64, x), hc_cast(a, f64, y));
    return hc_cast(a, x->type, r);
}

/* x < 0 ? slope * x : x, written so that the slope is read outside any select: GCC 12.2
 * at -O3 miscompiles a loop whose select reads another array in one branch under a
 * float compare (the masked loads of unrolled vectors all get the first vector's mask),
 * which turned negative outputs into -0. Differs from the select only for a non-finite
 * slope where x >= 0. */
static hc_expr *prelu_expr(hc_arena *a, hc_expr *x, hc_expr *slope) {
    hc_expr *neg = LT(x, NUM(0));
    return hc_add(a, SEL(neg, NUM(0), x), hc_mul(a, slope, SEL(neg, x, NUM(0))));
}

/* x << y or x >> y (direction LEFT / RIGHT) in 64 bits, cast back to x's type, so that
 * no narrow type is promoted to a signed int that overflows; a shift by the type's width
 * or more gives 0, as numpy's does (C leaves it undefined). Signed types (28): the
 * bits, as two's complement (an arithmetic right shift). */
static hc_expr *shift_expr(hc_arena *a, const hc_node *n, hc_expr *x, hc_expr *y) {
    bool left = !strcmp(hc_node_attr_string(n, "direction", ""), "LEFT");
    hc_dtype d = x->type->dtype;
    bool sgn = hc_dtype_is_signed(d);
    const hc_type *w = hc_type_scalar(sgn ? HC_I64 : HC_U64);
    int bits = 8 * hc_dtype_size(d);
    /* the count compared in its own signedness: a u64 count of 2^63 or more is not a
     * negative i64 */
    hc_expr *wy = hc_cast(a, w, y);
    hc_expr *ok = hc_binary(a, HC_OP_LT, wy, hc_cast(a, w, hc_int(a, bits)));
    if (sgn) ok = hc_and(a, ok, hc_binary(a, HC_OP_GE, wy, hc_cast(a, w, hc_int(a, 0))));
    hc_expr *safe = hc_cast(a, hc_type_scalar(HC_I64), SEL(ok, wy, hc_cast(a, w, hc_int(a, 0))));
    hc_expr *v = hc_binary(a, left ? HC_OP_SHL : HC_OP_SHR, hc_cast(a, w, x), safe);
    hc_expr *over = left || !sgn ? hc_cast(a, w, NUM(0))
                                 : SEL(LT(x, NUM(0)), hc_cast(a, w, NUM(-1)), hc_cast(a, w, NUM(0)));
    return hc_cast(a, x->type, SEL(ok, v, over));
}

static hc_expr *fold(hc_arena *a, hc_binop op, hc_expr *const *xs, int n) {
    hc_expr *v = xs[0];
    for (int i = 1; i < n; i++) v = hc_binary(a, op, v, xs[i]);
    return v;
}

static hc_expr *nary_expr(hc_arena *a, hc_expr *const *xs, void *ctx) {
    const hc_node *n = ctx;
    hc_expr *x = xs[0], *y = n->ninputs > 1 ? xs[1] : NULL;
    bool is_int = !hc_dtype_is_float(x->type->dtype);
    switch (n->op) {
    case HC_OPK_ADD: return hc_add(a, x, y);
    case HC_OPK_SUB: return hc_sub(a, x, y);
    case HC_OPK_MUL: return hc_mul(a, x, y);
    case HC_OPK_DIV: return is_int ? int_divmod(a, HC_OP_DIV, x, y) : hc_div(a, x, y);
    case HC_OPK_MOD: return mod_expr(a, n, x, y);
    case HC_OPK_POW: return pow_expr(a, n, x, y);
    case HC_OPK_PRELU: return prelu_expr(a, x, y);
    case HC_OPK_MIN: return fold(a, HC_OP_MIN, xs, n->ninputs);
    case HC_OPK_MAX: return fold(a, HC_OP_MAX, xs, n->ninputs);
    case HC_OPK_SUM: return fold(a, HC_OP_ADD, xs, n->ninputs);
    case HC_OPK_MEAN: return hc_div(a, fold(a, HC_OP_ADD, xs, n->ninputs), NUM(n->ninputs));
    case HC_OPK_EQUAL: return hc_eq(a, x, y);
    case HC_OPK_LESS: return LT(x, y);
    case HC_OPK_GREATER: return GT(x, y);
    case HC_OPK_LESS_OR_EQUAL: return hc_le(a, x, y);
    case HC_OPK_GREATER_OR_EQUAL: return hc_binary(a, HC_OP_GE, x, y);
    /* bitwise on bools: no short circuit, so the loops vectorize */
    case HC_OPK_AND: return hc_binary(a, HC_OP_BITAND, x, y);
    case HC_OPK_OR: return hc_binary(a, HC_OP_BITOR, x, y);
    case HC_OPK_XOR: return hc_binary(a, HC_OP_NE, x, y);
    case HC_OPK_WHERE: return SEL(x, y, xs[2]);
    case HC_OPK_BITWISE_AND: return hc_binary(a, HC_OP_BITAND, x, y);
    case HC_OPK_BITWISE_OR: return hc_binary(a, HC_OP_BITOR, x, y);
    case HC_OPK_BITWISE_XOR: return hc_binary(a, HC_OP_BITXOR, x, y);
    case HC_OPK_BIT_SHIFT: return shift_expr(a, n, x, y);
    default: hc_unreachable();
    }
}

hc_task *hc_math_task_nary(hc_arena *a, const hc_node *n, hc_error *err) {
    int nin;
    hc_tnode **ins = hc_node_input_tnodes(a, n, &nin);
    hc_tnode *y = hc_compute_mapn(a, hc_math_out_name(n, 0), nin, (const hc_tnode *const *)ins,
                                  nary_expr, (void *)n, err);
    return y ? hc_node_task(a, n, nin, ins, 1, &y) : NULL;
}

/* ---- Clip ----------------------------------------------------------------------------- */
/* Bounds: attributes min/max before opset 11, optional scalar inputs 1 and 2 after. */
hc_status hc_math_infer_clip(hc_node *n, hc_error *err) {
    const hc_tensor *x;
    hc_status st = hc_math_input(n, 0, &x, err);
    int cls = n->opset >= 12 ? T_NUM : T_FLOAT;
    if (st || (st = check_class(n, 0, x, cls, err))) return st;
    if (n->opset < 11 && hc_node_num_present_inputs(n) > 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "min and max are attributes before "
                            "opset 11, not inputs (opset %d)", n->opset);
    for (int i = 1; i < n->ninputs; i++) {
        const hc_tensor *b = n->inputs[i];
        if (!b) continue;
        if ((st = hc_math_input(n, i, &b, err))) return st;
        if (b->dtype != x->dtype || hc_tensor_numel(b) != 1)
            return hc_node_fail(n, HC_ERR_INVALID, err, "%s ('%s') must be one %s value, got "
                                "%s with %lld elements", i == 1 ? "min" : "max", b->name,
                                hc_dtype_name(x->dtype), hc_dtype_name(b->dtype),
                                (long long)hc_tensor_numel(b));
    }
    hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
    return HC_OK;
}

typedef struct clip_ctx {
    const hc_node *n;
    const hc_tnode *lo, *hi; /* bound inputs (NULL: from attributes or none) */
} clip_ctx;

static hc_expr *clip_bound(hc_arena *a, const clip_ctx *c, const hc_tnode *t, const char *name,
                           hc_expr *x) {
    if (t) {
        hc_expr *idx[HC_MAX_DIMS] = {NULL};
        for (int d = 0; d < t->ndim; d++) idx[d] = hc_int(a, 0);
        return hc_at(a, t, idx);
    }
    const hc_attr *at = c->n->opset < 11 ? hc_node_attr(c->n, name) : NULL;
    return at ? NUM(hc_node_attr_float(c->n, name, 0)) : NULL;
}

/* max first, then min: numpy's clip, which gives max when min > max */
static hc_expr *clip_expr(hc_arena *a, hc_expr *x, void *ctx) {
    const clip_ctx *c = ctx;
    hc_expr *lo = clip_bound(a, c, c->lo, "min", x), *hi = clip_bound(a, c, c->hi, "max", x);
    if (lo) x = SEL(LT(x, lo), lo, x);
    if (hi) x = SEL(GT(x, hi), hi, x);
    return x;
}

hc_task *hc_math_task_clip(hc_arena *a, const hc_node *n, hc_error *err) {
    int nin;
    hc_tnode **ins = hc_node_input_tnodes(a, n, &nin);
    clip_ctx c = {n, NULL, NULL};
    for (int i = 1, k = 1; i < n->ninputs; i++) {
        if (!n->inputs[i]) continue;
        if (i == 1) c.lo = ins[k++];
        else c.hi = ins[k++];
    }
    hc_tnode *y = hc_compute_map1(a, hc_math_out_name(n, 0), ins[0], clip_expr, &c);
    return hc_node_task(a, n, nin, ins, 1, &y);
}
