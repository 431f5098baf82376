/* codegen_c.c — print a lowered module as one C11 (gnu11) translation unit.
 *
 * Conventions of the generated code (docs/codegen.md):
 *  - vectors are GCC vector types `hc_<dtype>x<lanes>`; arithmetic uses the vector
 *    operators, and operations C has no operator for are lane loops written as
 *    statement expressions, which GCC vectorizes; f32x16 (AVX-512) and f32x8 (AVX2)
 *    loads, stores, masks, fma and reductions use intrinsics;
 *  - bool vectors hold 0/1 in int32 lanes, so converting them to numbers is exact;
 *  - every variable is printed as its sanitized name plus a per-function counter, so the
 *    text (and the JIT cache key) does not depend on process-global variable ids;
 *  - temporaries of the generated code start with `_`; user names never do. */
#include "target/cpu/cpu.h"

#include <math.h>
#include <string.h>

typedef struct name_slot {
    const hc_var *var;
    const char *name;
} name_slot;

typedef struct cg {
    hc_arena *a;
    const hc_target *t;
    hc_sb *out;
    int indent;
    name_slot *names; /* open addressing by var pointer */
    size_t cap, used;
    int counter, tmp;
    bool intrinsics; /* some intrinsic was printed: the prelude needs immintrin.h */
    bool amx;        /* a tile or bf16-split primitive was printed: prelude_amx */
    HC_VEC(const hc_var *) heap; /* GLOBAL temporaries of the open C blocks */
    int ws_slots;                /* workspace slots the module needs: the deepest heap */
    bool in_helper;              /* emitting a HC_FN_CPU_HELPER */
    /* math on vectors, one out-of-line helper per (primitive, vector type) used */
    struct { hc_prim prim; const hc_type *vt; int nargs; } vmath[64];
    int nvmath;
    unsigned vfam; /* bit log2(lanes): the inline f32 vector math of that width is used */
} cg;

static void emit_expr(cg *c, hc_sb *sb, const hc_expr *e);
static void emit_stmt(cg *c, const hc_stmt *s);

/* ---- names --------------------------------------------------------------------- */
static size_t slot_of(const cg *c, const hc_var *v) {
    size_t h = ((uintptr_t)v >> 4) * 0x9E3779B97F4A7C15ull;
    size_t i = h & (c->cap - 1);
    while (c->names[i].var && c->names[i].var != v) i = (i + 1) & (c->cap - 1);
    return i;
}

static void names_grow(cg *c) {
    name_slot *old = c->names;
    size_t oldcap = c->cap;
    c->cap = oldcap ? oldcap * 2 : 256;
    c->names = hc_xcalloc(c->cap, sizeof *c->names);
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].var) c->names[slot_of(c, old[i].var)] = old[i];
    free(old);
}

static void names_reset(cg *c) {
    free(c->names);
    c->names = NULL, c->cap = c->used = 0, c->counter = 0;
}

/* Identifier for v: letters, digits and `_`, starting with a letter, plus `_<n>`. */
static const char *var_name(cg *c, const hc_var *v) {
    if (2 * (c->used + 1) > c->cap) names_grow(c);
    size_t i = slot_of(c, v);
    if (c->names[i].var) return c->names[i].name;
    hc_sb sb;
    hc_sb_init(&sb);
    const char *n = v->name ? v->name : "v";
    if (!((*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z'))) hc_sb_putc(&sb, 'v');
    for (int k = 0; n[k] && k < 40; k++) {
        char ch = n[k];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        hc_sb_putc(&sb, ok ? ch : '_');
    }
    hc_sb_printf(&sb, "_%d", c->counter++);
    c->names[i].var = v;
    c->names[i].name = hc_arena_strdup(c->a, hc_sb_str(&sb));
    c->used++;
    hc_sb_free(&sb);
    return c->names[i].name;
}

static void line(cg *c, const char *fmt, ...) HC_PRINTF(2, 3);
static void line(cg *c, const char *fmt, ...) {
    for (int i = 0; i < c->indent; i++) hc_sb_puts(c->out, "    ");
    va_list ap;
    va_start(ap, fmt);
    hc_sb_vprintf(c->out, fmt, ap);
    va_end(ap);
    hc_sb_putc(c->out, '\n');
}

/* ---- types --------------------------------------------------------------------- */
static bool valid_lanes(int lanes) {
    return lanes == 2 || lanes == 4 || lanes == 8 || lanes == 16 || lanes == 32 || lanes == 64;
}

static void vec_name(hc_sb *sb, hc_dtype d, int lanes) {
    HC_ASSERT_MSG(valid_lanes(lanes), "C target: vector lanes must be a power of 2 in 2..64");
    HC_ASSERT_MSG(d != HC_BF16 && d != HC_VOID, "C target: no bf16/void vectors");
    hc_sb_printf(sb, "hc_%sx%d", hc_dtype_name(d), lanes);
}

static void emit_type(hc_sb *sb, const hc_type *t) {
    switch (t->kind) {
    case HC_TY_SCALAR: hc_sb_puts(sb, hc_dtype_ctype(t->dtype)); return;
    case HC_TY_VECTOR: vec_name(sb, t->dtype, t->lanes); return;
    case HC_TY_POINTER:
        emit_type(sb, t->pointee);
        hc_sb_puts(sb, " *");
        return;
    case HC_TY_TENSOR: /* the element type: tensors are arrays or pointers of it */
        if (t->lanes > 1) vec_name(sb, t->dtype, t->lanes);
        else hc_sb_puts(sb, hc_dtype_ctype(t->dtype));
        return;
    }
}

static const char *type_str(cg *c, const hc_type *t) {
    hc_sb sb;
    hc_sb_init(&sb);
    emit_type(&sb, t);
    char *s = hc_arena_strdup(c->a, hc_sb_str(&sb));
    hc_sb_free(&sb);
    return s;
}

static const char *scalar_ctype(hc_dtype d) { return hc_dtype_ctype(d); }

static const char *expr_str(cg *c, const hc_expr *e) {
    hc_sb sb;
    hc_sb_init(&sb);
    emit_expr(c, &sb, e);
    char *s = hc_arena_strdup(c->a, hc_sb_str(&sb));
    hc_sb_free(&sb);
    return s;
}

static bool is_vec(const hc_type *t) { return t->kind == HC_TY_VECTOR; }
static bool is_bf16(const hc_type *t) { return t->kind == HC_TY_SCALAR && t->dtype == HC_BF16; }

/* Sub-int results of C arithmetic are int: cast back so wrap-around matches the IR. */
static bool needs_narrowing(hc_dtype d) {
    return d == HC_I8 || d == HC_I16 || d == HC_U8 || d == HC_U16 || d == HC_F16 ||
           d == HC_BOOL;
}

/* ---- constants ----------------------------------------------------------------- */
static void emit_float(hc_sb *sb, double v, bool f32) {
    if (isnan(v)) {
        hc_sb_puts(sb, f32 ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")");
        return;
    }
    if (isinf(v)) {
        hc_sb_printf(sb, "%s%s", v < 0 ? "-" : "", f32 ? "__builtin_inff()" : "__builtin_inf()");
        return;
    }
    char buf[64];
    snprintf(buf, sizeof buf, f32 ? "%.9g" : "%.17g", v);
    if (!strpbrk(buf, ".e")) strcat(buf, ".0");
    hc_sb_printf(sb, "%s%s", buf, f32 ? "f" : "");
}

static void emit_const(hc_sb *sb, const hc_expr *e) {
    hc_value v = e->u.c;
    hc_dtype d = e->type->dtype;
    switch (d) {
    case HC_BOOL: hc_sb_puts(sb, v.i ? "true" : "false"); return;
    case HC_I32:
    case HC_I64:
        /* Literals outside int range need a 64-bit suffix; INT_MIN has no literal. */
        if (v.i == INT64_MIN) hc_sb_puts(sb, "(-INT64_C(9223372036854775807) - 1)");
        else if (v.i == INT32_MIN) hc_sb_puts(sb, "(-2147483647 - 1)");
        else if (v.i < INT32_MIN || v.i > INT32_MAX)
            hc_sb_printf(sb, "INT64_C(%lld)", (long long)v.i);
        else hc_sb_printf(sb, "%lld", (long long)v.i);
        return;
    case HC_U32: hc_sb_printf(sb, "%lluu", (unsigned long long)(uint32_t)v.u); return;
    case HC_U64: hc_sb_printf(sb, "UINT64_C(%llu)", (unsigned long long)v.u); return;
    case HC_I8:
    case HC_I16: hc_sb_printf(sb, "((%s)%lld)", scalar_ctype(d), (long long)v.i); return;
    case HC_U8:
    case HC_U16: hc_sb_printf(sb, "((%s)%llu)", scalar_ctype(d), (unsigned long long)v.u); return;
    case HC_F32: emit_float(sb, v.f, true); return;
    case HC_F64: emit_float(sb, v.f, false); return;
    case HC_F16: /* from a double literal: one rounding, not two */
        hc_sb_puts(sb, "((hc_f16)");
        emit_float(sb, v.f, false);
        hc_sb_putc(sb, ')');
        return;
    case HC_BF16: hc_sb_printf(sb, "((hc_bf16){0x%04x})", hc_f32_to_bf16((float)v.f)); return;
    default: HC_ASSERT_MSG(0, "C target: constant of unsupported dtype");
    }
}

/* ---- conversions of operands ----------------------------------------------------- */
/* x converted to type `to` (scalar or vector): broadcast scalars into vectors, convert
 * lanes, go through f32 for bf16. */
static void emit_as(cg *c, hc_sb *sb, const hc_expr *x, const hc_type *to);

static void emit_f32_of(cg *c, hc_sb *sb, const hc_expr *x) {
    if (is_bf16(x->type)) {
        hc_sb_puts(sb, "hc_bf16_to_f32(");
        emit_expr(c, sb, x);
        hc_sb_putc(sb, ')');
    } else {
        hc_sb_puts(sb, "((float)(");
        emit_expr(c, sb, x);
        hc_sb_puts(sb, "))");
    }
}

static void emit_scalar_cast(cg *c, hc_sb *sb, const hc_expr *x, hc_dtype to) {
    hc_dtype from = x->type->dtype;
    if (from == to) {
        emit_expr(c, sb, x);
    } else if (to == HC_BF16) {
        hc_sb_puts(sb, "hc_f32_to_bf16(");
        emit_f32_of(c, sb, x);
        hc_sb_putc(sb, ')');
    } else if (to == HC_BOOL) {
        hc_sb_puts(sb, "(");
        if (from == HC_BF16) emit_f32_of(c, sb, x);
        else emit_expr(c, sb, x);
        hc_sb_puts(sb, " != 0)");
    } else if (from == HC_BF16) {
        hc_sb_printf(sb, "((%s)hc_bf16_to_f32(", scalar_ctype(to));
        emit_expr(c, sb, x);
        hc_sb_puts(sb, "))");
    } else {
        hc_sb_printf(sb, "((%s)(", scalar_ctype(to));
        emit_expr(c, sb, x);
        hc_sb_puts(sb, "))");
    }
}

static void emit_broadcast(cg *c, hc_sb *sb, const hc_expr *x, const hc_type *vt) {
    int k = c->tmp++;
    const char *vs = type_str(c, vt);
    hc_sb_printf(sb, "({ %s _r%d; %s _x%d = ", vs, k, scalar_ctype(vt->dtype), k);
    emit_scalar_cast(c, sb, x, vt->dtype);
    hc_sb_printf(sb, "; for (int _l%d = 0; _l%d < %d; _l%d++) _r%d[_l%d] = _x%d; _r%d; })", k,
                 k, vt->lanes, k, k, k, k, k);
}

static void emit_as(cg *c, hc_sb *sb, const hc_expr *x, const hc_type *to) {
    const hc_type *from = x->type;
    if (hc_type_equal(from, to)) {
        emit_expr(c, sb, x);
    } else if (to->kind == HC_TY_SCALAR && from->kind == HC_TY_SCALAR) {
        emit_scalar_cast(c, sb, x, to->dtype);
    } else if (is_vec(to) && !is_vec(from)) {
        emit_broadcast(c, sb, x, to);
    } else if (is_vec(to) && is_vec(from)) {
        HC_ASSERT_MSG(to->lanes == from->lanes, "C target: vector conversion changes lanes");
        if (to->dtype == HC_BOOL) {
            hc_sb_puts(sb, "(__builtin_convertvector((");
            emit_expr(c, sb, x);
            hc_sb_printf(sb, ") != 0, %s) & 1)", type_str(c, to));
        } else {
            hc_sb_puts(sb, "__builtin_convertvector(");
            emit_expr(c, sb, x);
            hc_sb_printf(sb, ", %s)", type_str(c, to));
        }
    } else {
        hc_sb_printf(sb, "((%s)(", type_str(c, to));
        emit_expr(c, sb, x);
        hc_sb_puts(sb, "))");
    }
}

/* Operand of a vector operation of type vt: scalars stay scalars (GCC broadcasts them
 * in vector arithmetic) but get the element type; vectors are converted lane-wise. */
static void emit_vec_operand(cg *c, hc_sb *sb, const hc_expr *x, const hc_type *vt) {
    if (!is_vec(x->type)) emit_scalar_cast(c, sb, x, vt->dtype);
    else emit_as(c, sb, x, vt);
}

/* ---- math primitives ------------------------------------------------------------- */
/* The libm (double) name of a math primitive, or NULL for ones with no libm function. */
static const char *libm_name(hc_prim p) {
    switch (p) {
    case HC_PRIM_EXP: return "exp";
    case HC_PRIM_LOG: return "log";
    case HC_PRIM_SQRT: return "sqrt";
    case HC_PRIM_RSQRT: return "hc_rsqrt";
    case HC_PRIM_ABS: return "fabs";
    case HC_PRIM_FLOOR: return "floor";
    case HC_PRIM_CEIL: return "ceil";
    case HC_PRIM_ROUND: return "nearbyint"; /* default rounding mode: half to even */
    case HC_PRIM_TANH: return "tanh";
    case HC_PRIM_ERF: return "erf";
    case HC_PRIM_SIGMOID: return "hc_sigmoid";
    case HC_PRIM_SIN: return "sin";
    case HC_PRIM_COS: return "cos";
    case HC_PRIM_TAN: return "tan";
    case HC_PRIM_ASIN: return "asin";
    case HC_PRIM_ACOS: return "acos";
    case HC_PRIM_ATAN: return "atan";
    case HC_PRIM_SINH: return "sinh";
    case HC_PRIM_COSH: return "cosh";
    case HC_PRIM_ASINH: return "asinh";
    case HC_PRIM_ACOSH: return "acosh";
    case HC_PRIM_ATANH: return "atanh";
    case HC_PRIM_POW: return "pow";
    case HC_PRIM_FMOD: return "fmod";
    default: return NULL;
    }
}

/* Scalar math of dtype d on argument texts x (and y). */
static void math_scalar(hc_sb *sb, hc_prim p, hc_dtype d, const char *x, const char *y) {
    bool two = hc_prim_arity(p) == 2;
    if (p == HC_PRIM_ISNAN || p == HC_PRIM_ISINF) {
        const char *fn = p == HC_PRIM_ISNAN ? "isnan" : "isinf";
        if (!hc_dtype_is_float(d)) hc_sb_printf(sb, "((void)(%s), false)", x);
        else if (d == HC_BF16) hc_sb_printf(sb, "(%s(hc_bf16_to_f32(%s)) != 0)", fn, x);
        else hc_sb_printf(sb, "(%s(%s) != 0)", fn, x);
        return;
    }
    const char *fn = libm_name(p);
    HC_ASSERT_MSG(fn, "C target: unknown math primitive");
    /* f32 (and f16/bf16, computed in f32) exp, log, tanh, erf: our vectorizable ones */
    const char *fnf = p == HC_PRIM_EXP    ? "hc_exp"
                      : p == HC_PRIM_LOG  ? "hc_log"
                      : p == HC_PRIM_TANH ? "hc_tanh"
                      : p == HC_PRIM_ERF  ? "hc_erf"
                                          : fn;
    if (p == HC_PRIM_ABS && !hc_dtype_is_float(d)) {
        hc_sb_printf(sb, "hc_abs_%s(%s)", hc_dtype_name(d), x);
        return;
    }
    switch (d) {
    case HC_F64:
        if (two) hc_sb_printf(sb, "%s(%s, %s)", fn, x, y);
        else hc_sb_printf(sb, "%s(%s)", fn, x);
        return;
    case HC_F32:
        if (two) hc_sb_printf(sb, "%sf(%s, %s)", fnf, x, y);
        else hc_sb_printf(sb, "%sf(%s)", fnf, x);
        return;
    case HC_F16:
        if (two) hc_sb_printf(sb, "((hc_f16)%sf((float)(%s), (float)(%s)))", fnf, x, y);
        else hc_sb_printf(sb, "((hc_f16)%sf((float)(%s)))", fnf, x);
        return;
    case HC_BF16:
        if (two)
            hc_sb_printf(sb, "hc_f32_to_bf16(%sf(hc_bf16_to_f32(%s), hc_bf16_to_f32(%s)))", fnf,
                         x, y);
        else hc_sb_printf(sb, "hc_f32_to_bf16(%sf(hc_bf16_to_f32(%s)))", fnf, x);
        return;
    default: /* integers and bool: compute in double, convert back */
        if (two)
            hc_sb_printf(sb, "((%s)%s((double)(%s), (double)(%s)))", scalar_ctype(d), fn, x, y);
        else hc_sb_printf(sb, "((%s)%s((double)(%s)))", scalar_ctype(d), fn, x);
        return;
    }
}

/* f32 exp, log, tanh, erf and sigmoid on a whole vector: the scalar functions of the
 * prelude (same steps, same polynomials, so the same results up to FMA contraction)
 * written with GCC vector operators, selects as bit masks. Straight-line code, so it is
 * inlined into the kernel without the lane loop that the kernels' no-tree-loop-if-convert
 * would keep scalar: no call per vector. A call per vector in a matmul's store path
 * (the noinline helpers below) cost 3 ms on 1024x768x3072 with a GELU epilogue, 15% of
 * the matmul, and the same with an empty helper body; inline, the erf costs its
 * instructions. $V, $I and $N stand for the f32 and i32 vector types and the lanes. */
static const char vmath_family[] =
    "#define HC_VSEL$N(m, a, b) (($V)((($I)(a) & (m)) | (($I)(b) & ~(m))))\n"
    "#define HC_VI static inline __attribute__((always_inline))\n"
    "HC_VI $V hc_vexp_reduced$N($V x, $V *n) {\n"
    "    $V k = (x * 1.44269504f + 12582912.0f) - 12582912.0f;\n"
    "    $V r = x - k * 0.693145752f;\n"
    "    r = r - k * 1.42860682e-06f;\n"
    "    *n = k;\n"
    "    return HC_EXP_POLY(r);\n"
    "}\n"
    "HC_VI $V hc_vpow2i$N($I n) { return ($V)((n + 127) << 23); }\n"
    "HC_VI $V hc_vabs$N($V x) { return ($V)(($I)x & 0x7fffffff); }\n"
    "HC_VI $V hc_vcopysign$N($V a, $V x) {\n"
    "    return ($V)((($I)a & 0x7fffffff) | (($I)x & ~0x7fffffff));\n"
    "}\n"
    "HC_VI $V hc_vexp_unguarded$N($V x) {\n"
    "    $V n, p = hc_vexp_reduced$N(x, &n);\n"
    "    return p * hc_vpow2i$N(__builtin_convertvector(n, $I));\n"
    "}\n"
    "/* below -104 (hc_expf's clamp, where its result is 0) the lanes compute e^0 and\n"
    " * are set to 0 after: a subnormal product costs a microcode assist (a softmax's\n"
    " * masked -inf scores made BERT's attention 2x slower) */\n"
    "HC_VI $V hc_vexp$N($V x) {\n"
    "    $I ok = x == x, low = x < -104.0f;\n"
    "    $V xs = HC_VSEL$N(ok & ~low, x, ($V){0});\n"
    "    xs = HC_VSEL$N(xs > 89.0f, ($V){0} + 89.0f, xs);\n"
    "    $V n, p = hc_vexp_reduced$N(xs, &n);\n"
    "    $I ni = __builtin_convertvector(n, $I), n1 = ni >> 1, n2 = ni - n1;\n"
    "    $V res = HC_VSEL$N(low, ($V){0}, p * hc_vpow2i$N(n1) * hc_vpow2i$N(n2));\n"
    "    return HC_VSEL$N(ok, res, x);\n"
    "}\n"
    "HC_VI $V hc_vsigmoid$N($V x) { return 1.0f / (1.0f + hc_vexp$N(-x)); }\n"
    "HC_VI $V hc_vtanh$N($V x) {\n"
    "    $V ax = hc_vabs$N(x);\n"
    "    $V a = HC_VSEL$N(ax < 9.0f, ax, ($V){0} + 9.0f), z = a * a;\n"
    "    $V p = HC_TANH_POLY(z);\n"
    "    $V small = a + a * z * p;\n"
    "    $V big = 1.0f - 2.0f / (hc_vexp_unguarded$N(a + a) + 1.0f);\n"
    "    $V res = HC_VSEL$N(ax < 0.55f, small, big);\n"
    "    res = hc_vcopysign$N(HC_VSEL$N(ax < 9.0f, res, ($V){0} + 1.0f), x);\n"
    "    return HC_VSEL$N(x == x, res, x);\n"
    "}\n"
    "HC_VI $V hc_vlog$N($V x) {\n"
    "    $I tiny = x < 1.17549435e-38f;\n"
    "    $I u = ($I)HC_VSEL$N(tiny, x * 8388608.0f, x);\n"
    "    $I e = ((u >> 23) & 0xff) - 127 - (tiny & 23);\n"
    "    $V m = ($V)((u & 0x7fffff) | 0x3f800000);\n"
    "    $I big = m > 1.41421356f;\n"
    "    e = e - big; /* big lanes are -1 */\n"
    "    m = HC_VSEL$N(big, m * 0.5f, m);\n"
    "    $V s = (m - 1.0f) / (m + 1.0f), z = s * s;\n"
    "    $V p = HC_LOG_POLY(z);\n"
    "    $V fe = __builtin_convertvector(e, $V);\n"
    "    $V r = fe * 0.693145752f + (fe * 1.42860682e-06f + (2.0f * s + s * z * p));\n"
    "    r = HC_VSEL$N(x == 0.0f, ($V){0} - __builtin_inff(), r);\n"
    "    r = HC_VSEL$N(x < 0.0f, ($V){0} + __builtin_nanf(\"\"), r);\n"
    "    r = HC_VSEL$N(x == __builtin_inff(), x, r);\n"
    "    return HC_VSEL$N(x == x, r, x);\n"
    "}\n"
    "HC_VI $V hc_verf$N($V x) {\n"
    "    $V ax = hc_vabs$N(x);\n"
    "    ax = HC_VSEL$N(ax < 4.0f, ax, ($V){0} + 4.0f);\n"
    "    $I i = __builtin_convertvector(ax * 2.0f, $I);\n"
    "    i -= i >> 3;\n"
    "    $V t = ax - (__builtin_convertvector(i, $V) * 0.5f + 0.25f);\n"
    "    $V p = hc_vtab$N(hc_erf_tab[6], i);\n"
    "    p = p * t + hc_vtab$N(hc_erf_tab[5], i);\n"
    "    p = p * t + hc_vtab$N(hc_erf_tab[4], i);\n"
    "    p = p * t + hc_vtab$N(hc_erf_tab[3], i);\n"
    "    p = p * t + hc_vtab$N(hc_erf_tab[2], i);\n"
    "    p = p * t + hc_vtab$N(hc_erf_tab[1], i);\n"
    "    p = p * t + hc_vtab$N(hc_erf_tab[0], i);\n"
    "    $V res = hc_vcopysign$N(HC_VSEL$N(i == 0, ax * p, 1.0f + p), x);\n"
    "    return HC_VSEL$N(x == x, res, x);\n"
    "}\n"
    "#undef HC_VI\n";

/* The family's name of prim, or NULL when it has none. */
static const char *vmath_family_name(hc_prim p) {
    switch (p) {
    case HC_PRIM_EXP: return "exp";
    case HC_PRIM_LOG: return "log";
    case HC_PRIM_TANH: return "tanh";
    case HC_PRIM_ERF: return "erf";
    case HC_PRIM_SIGMOID: return "sigmoid";
    default: return NULL;
    }
}

/* f32 vectors that fit the target's registers (wider ones have no by-value ABI there). */
static bool vmath_family_applies(const cg *c, const hc_expr *e) {
    const hc_type *vt = e->u.call.args[0]->type;
    return vt->dtype == HC_F32 && hc_type_equal(e->type, vt) &&
           vmath_family_name(e->u.call.prim) && vt->lanes * 32 <= c->t->caps.vector_bits;
}

/* hc_vtab_N(row, i): lanes l of row[i[l]], i in [0, 8): the erf's coefficients. One
 * VPERMPS with the row as its memory operand for 8 and 16 lanes (GCC's __builtin_shuffle;
 * clang spells it through its x86 builtins), a lane loop below (the scalar target). */
static void emit_vtab(cg *c, int lanes) {
    hc_sb *o = c->out;
    hc_sb_printf(o,
                 "static inline __attribute__((always_inline)) hc_f32x%d "
                 "hc_vtab_%d(const float *row, hc_i32x%d i) {\n",
                 lanes, lanes, lanes);
    if (lanes == 8 || lanes == 16) {
        hc_sb_printf(o, "    hc_f32x%d t;\n    __builtin_memcpy(&t, row, sizeof t);\n", lanes);
        hc_sb_printf(o,
                     "#if defined(__clang__)\n"
                     "    return (hc_f32x%d)__builtin_ia32_permvarsf%d(t, i);\n"
                     "#else\n"
                     "    return __builtin_shuffle(t, i);\n"
                     "#endif\n}\n",
                     lanes, lanes * 32);
        return;
    }
    hc_sb_printf(o,
                 "    hc_f32x%d r;\n    for (int l = 0; l < %d; l++) r[l] = row[i[l] & 7];\n"
                 "    return r;\n}\n",
                 lanes, lanes);
}

static void emit_vmath_family(cg *c, int lanes) {
    char v[16], i[16], n[8];
    snprintf(v, sizeof v, "hc_f32x%d", lanes);
    snprintf(i, sizeof i, "hc_i32x%d", lanes);
    snprintf(n, sizeof n, "_%d", lanes);
    emit_vtab(c, lanes);
    for (const char *p = vmath_family; *p; p++) {
        if (*p != '$') {
            hc_sb_putc(c->out, *p);
            continue;
        }
        p++;
        hc_sb_puts(c->out, *p == 'V' ? v : *p == 'I' ? i : n);
    }
}

/* ({ RT _r; AT _a = x; [AT _b = y;] for (l) _r[l] = math(_a[l], _b[l]); _r; }) */
/* Other math on a vector (other primitives, f64 and f16, f32 vectors wider than the
 * registers) is a lane loop over the scalar function. Inline, that loop is part of
 * the calling kernel, whose attributes may keep it scalar (no-tree-loop-if-convert turns
 * the branch-free select chains of hc_tanhf & co. back into branches): 16 scalar tanh per
 * vector in a matmul's fused GELU epilogue made it 2x slower. So each (primitive, vector
 * type) gets a noinline helper, hc_vm<k>, that GCC vectorizes on its own terms. */
static int vmath_helper(cg *c, const hc_expr *e) {
    const hc_type *vt = e->u.call.args[0]->type;
    for (int i = 0; i < c->nvmath; i++)
        if (c->vmath[i].prim == e->u.call.prim && hc_type_equal(c->vmath[i].vt, vt) &&
            c->vmath[i].nargs == e->u.call.nargs)
            return i;
    if (c->nvmath == (int)HC_ARRAY_LEN(c->vmath)) return -1;
    c->vmath[c->nvmath].prim = e->u.call.prim;
    c->vmath[c->nvmath].vt = vt;
    c->vmath[c->nvmath].nargs = e->u.call.nargs;
    return c->nvmath++;
}

static void emit_vmath_helpers(cg *c) {
    for (int l = 0; l < 32; l++)
        if (c->vfam & (1u << l)) emit_vmath_family(c, 1 << l);
    for (int i = 0; i < c->nvmath; i++) {
        const char *ts = type_str(c, c->vmath[i].vt);
        bool two = c->vmath[i].nargs == 2;
        /* through pointers: vectors wider than the target's registers have no by-value ABI;
         * a vector of 512 bits is computed in 512-bit registers (GCC prefers 256) */
        bool w512 = c->t->caps.isa == HC_ISA_AVX512 &&
                    c->vmath[i].vt->lanes * hc_dtype_size(c->vmath[i].vt->dtype) == 64;
        hc_sb_printf(c->out, "static __attribute__((noinline%s)) void hc_vm%d(%s *restrict r, "
                             "const %s *restrict a",
                     w512 ? ", target(\"prefer-vector-width=512\")" : "", i, ts, ts);
        if (two) hc_sb_printf(c->out, ", const %s *restrict b", ts);
        hc_sb_printf(c->out, ") {\n    for (int l = 0; l < %d; l++) (*r)[l] = ",
                     c->vmath[i].vt->lanes);
        math_scalar(c->out, c->vmath[i].prim, c->vmath[i].vt->dtype, "(*a)[l]", "(*b)[l]");
        hc_sb_puts(c->out, ";\n}\n");
    }
}

static void math_vector(cg *c, hc_sb *sb, const hc_expr *e) {
    const hc_expr *x = e->u.call.args[0];
    const hc_type *vt = x->type;
    HC_ASSERT_MSG(is_vec(vt), "C target: vector math on a scalar argument");
    if (vmath_family_applies(c, e)) {
        c->vfam |= 1u << __builtin_ctz((unsigned)vt->lanes);
        hc_sb_printf(sb, "hc_v%s_%d(", vmath_family_name(e->u.call.prim), vt->lanes);
        emit_expr(c, sb, x);
        hc_sb_putc(sb, ')');
        return;
    }
    int h = hc_type_equal(e->type, vt) ? vmath_helper(c, e) : -1;
    int k = c->tmp++;
    if (h >= 0) {
        const char *ts = type_str(c, vt);
        hc_sb_printf(sb, "({ %s _r%d, _a%d = ", ts, k, k);
        emit_expr(c, sb, x);
        if (e->u.call.nargs == 2) {
            hc_sb_printf(sb, ", _b%d = ", k);
            emit_vec_operand(c, sb, e->u.call.args[1], vt);
        }
        hc_sb_printf(sb, "; hc_vm%d(&_r%d, &_a%d", h, k, k);
        if (e->u.call.nargs == 2) hc_sb_printf(sb, ", &_b%d", k);
        hc_sb_printf(sb, "); _r%d; })", k);
        return;
    }
    hc_sb_printf(sb, "({ %s _r%d; %s _a%d = ", type_str(c, e->type), k, type_str(c, vt), k);
    emit_expr(c, sb, x);
    hc_sb_putc(sb, ';');
    char xa[32], ya[32];
    snprintf(xa, sizeof xa, "_a%d[_l%d]", k, k);
    snprintf(ya, sizeof ya, "_b%d[_l%d]", k, k);
    if (e->u.call.nargs == 2) {
        hc_sb_printf(sb, " %s _b%d = ", type_str(c, vt), k);
        emit_vec_operand(c, sb, e->u.call.args[1], vt);
        hc_sb_putc(sb, ';');
    }
    hc_sb_printf(sb, " for (int _l%d = 0; _l%d < %d; _l%d++) _r%d[_l%d] = ", k, k, vt->lanes, k,
                 k, k);
    math_scalar(sb, e->u.call.prim, vt->dtype, xa, ya);
    hc_sb_printf(sb, "; _r%d; })", k);
}

static void emit_math(cg *c, hc_sb *sb, const hc_expr *e) {
    const hc_expr *x = e->u.call.args[0];
    if (is_vec(x->type)) {
        math_vector(c, sb, e);
        return;
    }
    const char *xs = expr_str(c, x);
    const char *ys = NULL;
    if (e->u.call.nargs == 2) {
        hc_sb tmp;
        hc_sb_init(&tmp);
        emit_as(c, &tmp, e->u.call.args[1], x->type);
        ys = hc_arena_strdup(c->a, hc_sb_str(&tmp));
        hc_sb_free(&tmp);
    }
    math_scalar(sb, e->u.call.prim, x->type->dtype, xs, ys);
}

/* ---- vector primitives ----------------------------------------------------------- */
/* Which intrinsic family handles vectors of type vt on this target (0: none). */
static int simd_width(cg *c, const hc_type *vt) {
    int w = 0;
    if (vt->kind != HC_TY_VECTOR || vt->dtype != HC_F32) w = 0;
    else if (vt->lanes == 16 && c->t->caps.isa == HC_ISA_AVX512) w = 512;
    else if (vt->lanes == 8 && c->t->caps.isa >= HC_ISA_AVX2) w = 256;
    c->intrinsics |= w != 0;
    return w;
}

static void emit_args(cg *c, hc_sb *sb, const hc_expr *e) {
    for (int i = 0; i < e->u.call.nargs; i++) {
        if (i) hc_sb_puts(sb, ", ");
        emit_expr(c, sb, e->u.call.args[i]);
    }
}

static void emit_vload(cg *c, hc_sb *sb, const hc_expr *e, bool masked) {
    const hc_type *vt = e->type;
    int w = simd_width(c, vt);
    const hc_expr *ptr = e->u.call.args[0];
    if ((w == 512 || w == 256) && vt->dtype == HC_F32) {
        const char *p = expr_str(c, ptr);
        if (!masked) hc_sb_printf(sb, "_mm%d_loadu_ps(%s)", w, p);
        else if (w == 512)
            hc_sb_printf(sb, "_mm512_maskz_loadu_ps(hc_mask16(%s), %s)",
                         expr_str(c, e->u.call.args[1]), p);
        else
            hc_sb_printf(sb, "_mm256_maskload_ps(%s, hc_mask8(%s))", p,
                         expr_str(c, e->u.call.args[1]));
        return;
    }
    int k = c->tmp++;
    hc_sb_printf(sb, "({ %s _r%d = {0}; const %s *_p%d = ", type_str(c, vt), k,
                 scalar_ctype(vt->dtype), k);
    emit_expr(c, sb, ptr);
    hc_sb_printf(sb, "; int64_t _n%d = ", k);
    if (masked) emit_expr(c, sb, e->u.call.args[1]);
    else hc_sb_printf(sb, "%d", vt->lanes);
    hc_sb_printf(sb, "; for (int _l%d = 0; _l%d < %d && _l%d < _n%d; _l%d++) "
                     "_r%d[_l%d] = _p%d[_l%d]; _r%d; })",
                 k, k, vt->lanes, k, k, k, k, k, k, k, k);
}

/* Lanes lo <= i < hi; the others are zero and never read (masked loads do not fault on
 * masked-off lanes, so the base pointer may lie outside the buffer). */
static void emit_vload_range(cg *c, hc_sb *sb, const hc_expr *e) {
    const hc_type *vt = e->type;
    int w = simd_width(c, vt), k = c->tmp++;
    const char *p = expr_str(c, e->u.call.args[0]);
    const char *lo = expr_str(c, e->u.call.args[1]);
    const char *hi = expr_str(c, e->u.call.args[2]);
    if (w == 512) {
        hc_sb_printf(sb, "_mm512_maskz_loadu_ps((__mmask16)(hc_mask16(%s) & ~hc_mask16(%s)), %s)",
                     hi, lo, p);
        return;
    }
    if (w == 256) {
        hc_sb_printf(sb, "_mm256_maskload_ps(%s, _mm256_andnot_si256(hc_mask8(%s), hc_mask8(%s)))",
                     p, lo, hi);
        return;
    }
    hc_sb_printf(sb, "({ %s _r%d = {0}; const %s *_p%d = %s; int64_t _lo%d = %s, _hi%d = %s; "
                     "for (int _l%d = 0; _l%d < %d; _l%d++) if (_l%d >= _lo%d && _l%d < _hi%d) "
                     "_r%d[_l%d] = _p%d[_l%d]; _r%d; })",
                 type_str(c, vt), k, scalar_ctype(vt->dtype), k, p, k, lo, k, hi, k, k,
                 vt->lanes, k, k, k, k, k, k, k, k, k, k);
}

/* Lane i in [lo, hi) reads ptr[i * s]; the others are zero and never read. A masked
 * gather does not touch masked-off lanes; its indices i * s are relative to ptr, so they
 * fit 32 bits whenever |s| * (lanes - 1) does (checked, else the scalar loop). Stride 2 on
 * AVX-512 is two masked loads of the even elements and a permute (cheaper than a gather).
 * On AVX2 no gather: 8 scalar loads into _mm256_setr_ps when all 8 lanes are wanted (an
 * im2col row of a strided conv away from its ends); else the wanted lanes' loads with the
 * others' indices clamped to the nearest wanted lane (valid addresses, whatever the base
 * pointer), zeroed by the lane mask; none wanted, zero. On Zen 3 VGATHERDPS takes 6.2-6.9
 * ns against 2.5-2.9 ns for 8 scalar loads (any stride), and a masked one 6.3-8.0 ns
 * against 4.8-5.4 for the clamped form (the lanes of an im2col vector that crosses a row);
 * Inception-V3's Mixed_6a 3x3/2 conv alone (all lanes), 3 rounds, minima of 100 runs:
 * 5.65, 4.28, 4.68 -> 4.97, 4.05, 4.51 ms. */
/* _r<k> = the 8 lanes _p<k>[l * _s<k>] (AVX2's strided load); clamped: lane l reads lane
 * min(max(l, _a<k>), _b<k>) instead, the nearest wanted one. */
static void emit_setr_lanes(hc_sb *sb, int k, const char *ty, bool clamped) {
    hc_sb_printf(sb, "_r%d = (%s)_mm256_setr_ps(", k, ty);
    for (int l = 0; l < 8; l++) {
        if (clamped)
            hc_sb_printf(sb, "%s_p%d[(%d < _a%d ? _a%d : %d > _b%d ? _b%d : %d) * _s%d]",
                         l ? ", " : "", k, l, k, k, l, k, k, l, k);
        else hc_sb_printf(sb, "%s_p%d[%d * _s%d]", l ? ", " : "", k, l, k);
    }
    hc_sb_puts(sb, ");");
}

static void emit_vload_strided(cg *c, hc_sb *sb, const hc_expr *e) {
    const hc_type *vt = e->type;
    int w = simd_width(c, vt), k = c->tmp++;
    const char *p = expr_str(c, e->u.call.args[0]);
    const char *s = expr_str(c, e->u.call.args[1]);
    const char *lo = expr_str(c, e->u.call.args[2]);
    const char *hi = expr_str(c, e->u.call.args[3]);
    int64_t sc = 0;
    bool cst = hc_expr_is_const_int(e->u.call.args[1], &sc);
    int64_t lim = INT32_MAX / (vt->lanes > 1 ? vt->lanes - 1 : 1);
    bool fits = cst && sc >= -lim && sc <= lim;
    hc_sb_printf(sb, "({ %s _r%d; const %s *_p%d = %s; int64_t _s%d = %s, _lo%d = %s, "
                     "_hi%d = %s; ",
                 type_str(c, vt), k, scalar_ctype(vt->dtype), k, p, k, s, k, lo, k, hi);
    if (w == 512 && cst && sc == 2) {
        /* bit 2i of m: lane i wanted; loads of the even elements of p[0..15], p[16..31] */
        hc_sb_printf(sb,
                     "uint32_t _m%d = (uint32_t)(((1ull << (2 * hc_clamp_lanes(_hi%d, 16))) - 1) & "
                     "~((1ull << (2 * hc_clamp_lanes(_lo%d, 16))) - 1)) & 0x55555555u; "
                     "__m512 _a%d = _mm512_maskz_loadu_ps((__mmask16)_m%d, _p%d), "
                     "_b%d = _mm512_maskz_loadu_ps((__mmask16)(_m%d >> 16), _p%d + 16); "
                     "_r%d = (%s)_mm512_permutex2var_ps(_a%d, _mm512_setr_epi32(0, 2, 4, 6, 8, "
                     "10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30), _b%d); (void)_s%d; _r%d; })",
                     k, k, k, k, k, k, k, k, k, k, type_str(c, vt), k, k, k, k);
        return;
    }
    if (w == 256 && c->t->caps.isa == HC_ISA_AVX2) { /* scalar loads, any stride */
        const char *ty = type_str(c, vt);
        hc_sb_printf(sb, "if (_lo%d <= 0 && _hi%d >= 8) ", k, k);
        emit_setr_lanes(sb, k, ty, false);
        hc_sb_printf(sb, " else { int64_t _a%d = _lo%d < 0 ? 0 : _lo%d, _b%d = (_hi%d > 8 ? 8 : "
                         "_hi%d) - 1; if (_b%d < _a%d) _r%d = (%s)_mm256_setzero_ps(); else { ",
                     k, k, k, k, k, k, k, k, k, ty);
        emit_setr_lanes(sb, k, ty, true);
        hc_sb_printf(sb, " _r%d = (%s)_mm256_and_ps((__m256)_r%d, _mm256_castsi256_ps("
                         "_mm256_andnot_si256(hc_mask8(_lo%d), hc_mask8(_hi%d)))); } } _r%d; })",
                     k, ty, k, k, k, k);
        return;
    }
    if ((w == 512 || w == 256) && (fits || !cst)) { /* a masked gather, stride*lane offsets */
        if (!cst) hc_sb_printf(sb, "if (_s%d >= -%lld && _s%d <= %lld) ", k, (long long)lim, k,
                               (long long)lim);
        if (w == 512)
            hc_sb_printf(sb,
                         "_r%d = (%s)_mm512_mask_i32gather_ps(_mm512_setzero_ps(), "
                         "(__mmask16)(hc_mask16(_hi%d) & ~hc_mask16(_lo%d)), "
                         "_mm512_mullo_epi32(_mm512_set1_epi32((int)_s%d), _mm512_setr_epi32(0, 1, "
                         "2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)), _p%d, 4);",
                         k, type_str(c, vt), k, k, k, k);
        else
            hc_sb_printf(sb,
                         "_r%d = (%s)_mm256_mask_i32gather_ps(_mm256_setzero_ps(), _p%d, "
                         "_mm256_mullo_epi32(_mm256_set1_epi32((int)_s%d), _mm256_setr_epi32(0, 1, "
                         "2, 3, 4, 5, 6, 7)), _mm256_castsi256_ps(_mm256_andnot_si256("
                         "hc_mask8(_lo%d), hc_mask8(_hi%d))), 4);",
                         k, type_str(c, vt), k, k, k, k);
        if (cst) {
            hc_sb_printf(sb, " _r%d; })", k);
            return;
        }
        hc_sb_puts(sb, " else ");
    }
    hc_sb_printf(sb, "for (int _l%d = 0; _l%d < %d; _l%d++) _r%d[_l%d] = _l%d >= _lo%d && "
                     "_l%d < _hi%d ? _p%d[_l%d * _s%d] : 0; _r%d; })",
                 k, k, vt->lanes, k, k, k, k, k, k, k, k, k, k, k);
}

/* The bf16-split and tile primitives: calls of prelude_amx's helpers and macros, which
 * use AMX where the compiler targets it and emulate it elsewhere. */
static void emit_amx(cg *c, hc_sb *sb, const hc_expr *e) {
    hc_expr *const *a = e->u.call.args;
    c->amx = true;
    switch (e->u.call.prim) {
    case HC_PRIM_VSTORE_BF16:
        hc_sb_printf(sb, "hc_store_bf16_%d((void *)(%s), %s)", a[1]->type->lanes,
                     expr_str(c, a[0]), expr_str(c, a[1]));
        return;
    case HC_PRIM_VBF16_REST:
        hc_sb_printf(sb, "hc_bf16_rest_%d(%s)", e->type->lanes, expr_str(c, a[0]));
        return;
    case HC_PRIM_VLOAD_BF16X2:
        hc_sb_printf(sb, "hc_load_bf16x2_%d((const void *)(%s), %s)", e->type->lanes,
                     expr_str(c, a[0]), expr_str(c, a[1]));
        return;
    case HC_PRIM_TILE_CONFIG: hc_sb_puts(sb, "HC_TILE_CONFIG()"); return;
    case HC_PRIM_TILE_RELEASE: hc_sb_puts(sb, "HC_TILE_RELEASE()"); return;
    case HC_PRIM_TILE_ZERO: hc_sb_printf(sb, "HC_TILE_ZERO(%s)", expr_str(c, a[0])); return;
    case HC_PRIM_TILE_LOAD:
    case HC_PRIM_TILE_STORE:
        hc_sb_printf(sb, "HC_TILE_%s(%s, (%svoid *)(%s), (int64_t)(%s))",
                     e->u.call.prim == HC_PRIM_TILE_LOAD ? "LOAD" : "STORE", expr_str(c, a[0]),
                     e->u.call.prim == HC_PRIM_TILE_LOAD ? "const " : "", expr_str(c, a[1]),
                     expr_str(c, a[2]));
        return;
    default:
        hc_sb_printf(sb, "HC_TILE_DP_BF16(%s, %s, %s)", expr_str(c, a[0]), expr_str(c, a[1]),
                     expr_str(c, a[2]));
        return;
    }
}

static void emit_vstore(cg *c, hc_sb *sb, const hc_expr *e, bool masked) {
    const hc_expr *ptr = e->u.call.args[0], *v = e->u.call.args[1];
    const hc_type *vt = v->type;
    int w = simd_width(c, vt);
    if (w == 512 || w == 256) {
        const char *p = expr_str(c, ptr), *vs = expr_str(c, v);
        if (!masked) hc_sb_printf(sb, "_mm%d_storeu_ps(%s, %s)", w, p, vs);
        else if (w == 512)
            hc_sb_printf(sb, "_mm512_mask_storeu_ps(%s, hc_mask16(%s), %s)", p,
                         expr_str(c, e->u.call.args[2]), vs);
        else if (c->t->caps.isa == HC_ISA_AVX512) /* AVX-512VL: a k-masked store */
            hc_sb_printf(sb, "_mm256_mask_storeu_ps(%s, (__mmask8)hc_mask16(%s), %s)", p,
                         expr_str(c, e->u.call.args[2]), vs);
        else /* not vmaskmovps: see hc_store8_n */
            hc_sb_printf(sb, "hc_store8_n(%s, %s, %s)", p, vs, expr_str(c, e->u.call.args[2]));
        return;
    }
    HC_ASSERT_MSG(is_vec(vt), "C target: vstore of a non-vector");
    int k = c->tmp++;
    hc_sb_printf(sb, "({ %s *_p%d = ", scalar_ctype(vt->dtype), k);
    emit_expr(c, sb, ptr);
    hc_sb_printf(sb, "; %s _v%d = ", type_str(c, vt), k);
    emit_expr(c, sb, v);
    hc_sb_printf(sb, "; int64_t _n%d = ", k);
    if (masked) emit_expr(c, sb, e->u.call.args[2]);
    else hc_sb_printf(sb, "%d", vt->lanes);
    hc_sb_printf(sb, "; for (int _l%d = 0; _l%d < %d && _l%d < _n%d; _l%d++) "
                     "_p%d[_l%d] = _v%d[_l%d]; (void)0; })",
                 k, k, vt->lanes, k, k, k, k, k, k, k);
}

static void emit_vreduce(cg *c, hc_sb *sb, const hc_expr *e) {
    const hc_expr *v = e->u.call.args[0];
    hc_prim p = e->u.call.prim;
    if (simd_width(c, v->type) == 512) {
        const char *fn = p == HC_PRIM_VREDUCE_ADD   ? "add"
                         : p == HC_PRIM_VREDUCE_MAX ? "max"
                                                    : "min";
        hc_sb_printf(sb, "_mm512_reduce_%s_ps(%s)", fn, expr_str(c, v));
        return;
    }
    int k = c->tmp++;
    hc_dtype d = v->type->dtype;
    const char *op = p == HC_PRIM_VREDUCE_ADD ? "+" : NULL;
    hc_sb_printf(sb, "({ %s _v%d = ", type_str(c, v->type), k);
    emit_expr(c, sb, v);
    hc_sb_printf(sb, "; %s _s%d = _v%d[0]; for (int _l%d = 1; _l%d < %d; _l%d++) ",
                 scalar_ctype(d), k, k, k, k, v->type->lanes, k);
    if (op) hc_sb_printf(sb, "_s%d = _s%d + _v%d[_l%d];", k, k, k, k);
    else
        hc_sb_printf(sb, "_s%d = hc_%s_%s(_s%d, _v%d[_l%d]);", k,
                     p == HC_PRIM_VREDUCE_MAX ? "max" : "min", hc_dtype_name(d), k, k, k);
    hc_sb_printf(sb, " _s%d; })", k);
}

/* ---- int8 dot products (the int8 conv template: conv_nchwc_cpu.c) -------------------- */
/* Vector width of an i32 vector with intrinsics (512, 256) or 0: plain C. */
static int i32_width(cg *c, const hc_type *vt) {
    int w = 0;
    if (vt->kind == HC_TY_VECTOR && vt->dtype == HC_I32) {
        if (vt->lanes == 16 && c->t->caps.isa == HC_ISA_AVX512) w = 512;
        else if (vt->lanes == 8 && c->t->caps.isa >= HC_ISA_AVX2) w = 256;
    }
    c->intrinsics |= w != 0;
    return w;
}

static void emit_byte_prim(cg *c, hc_sb *sb, const hc_expr *e) {
    const hc_type *vt = e->type;
    const char *vs = type_str(c, vt), *p = expr_str(c, e->u.call.args[0]);
    int w = i32_width(c, vt), k = c->tmp++;
    if (e->u.call.prim == HC_PRIM_VLOAD_BYTES) {
        if (w == 512) hc_sb_printf(sb, "((%s)_mm512_loadu_si512((const void *)(%s)))", vs, p);
        else if (w == 256)
            hc_sb_printf(sb, "((%s)_mm256_loadu_si256((const __m256i *)(const void *)(%s)))", vs, p);
        else
            hc_sb_printf(sb, "({ %s _r%d; __builtin_memcpy(&_r%d, (const void *)(%s), sizeof _r%d); "
                             "_r%d; })", vs, k, k, p, k, k);
        return;
    }
    /* VBROADCAST_BYTES */
    hc_sb_printf(sb, "({ int32_t _t%d; __builtin_memcpy(&_t%d, (const void *)(%s), 4); ", k, k, p);
    if (w) hc_sb_printf(sb, "(%s)_mm%d_set1_epi32(_t%d); })", vs, w, k);
    else
        hc_sb_printf(sb, "%s _r%d; for (int _l%d = 0; _l%d < %d; _l%d++) _r%d[_l%d] = _t%d; "
                         "_r%d; })", vs, k, k, k, vt->lanes, k, k, k, k, k);
}

/* acc + sum over 4 bytes of u8(a) * s8(b) per i32 lane: vpdpbusd where the target has VNNI
 * (AVX-512 VNNI on zmm, AVX-VNNI on ymm), else exactly with 16-bit multiplies: the even
 * and odd bytes widened to 16 bits (a zero-extended, b sign-extended), vpmaddwd adding
 * pairs into 32 bits (no saturation, unlike vpmaddubsw). */
static void emit_vdot(cg *c, hc_sb *sb, const hc_expr *e) {
    const hc_type *vt = e->type;
    const char *vs = type_str(c, vt);
    const char *acc = expr_str(c, e->u.call.args[0]), *x = expr_str(c, e->u.call.args[1]),
               *y = expr_str(c, e->u.call.args[2]);
    int w = i32_width(c, vt), k = c->tmp++, dot = c->t->caps.int8_dot;
    if (w == 512 && dot >= 2) {
        hc_sb_printf(sb, "((%s)_mm512_dpbusd_epi32((__m512i)(%s), (__m512i)(%s), (__m512i)(%s)))",
                     vs, acc, x, y);
    } else if (w == 256 && dot >= 1) {
        hc_sb_printf(sb, "((%s)_mm256_dpbusd_avx_epi32((__m256i)(%s), (__m256i)(%s), "
                         "(__m256i)(%s)))", vs, acc, x, y);
    } else if (w) {
        const char *v = w == 512 ? "__m512i" : "__m256i";
        hc_sb_printf(sb, "({ %s _a%d = (%s)(%s), _b%d = (%s)(%s); "
                         "%s _ae%d = _mm%d_and_si%d(_a%d, _mm%d_set1_epi16(0xff)), "
                         "_ao%d = _mm%d_srli_epi16(_a%d, 8), "
                         "_be%d = _mm%d_srai_epi16(_mm%d_slli_epi16(_b%d, 8), 8), "
                         "_bo%d = _mm%d_srai_epi16(_b%d, 8); "
                         "(%s)_mm%d_add_epi32((%s)(%s), _mm%d_add_epi32(_mm%d_madd_epi16(_ae%d, "
                         "_be%d), _mm%d_madd_epi16(_ao%d, _bo%d))); })",
                     v, k, v, x, k, v, y, v, k, w, w, k, w, k, w, k, k, w, w, k, k, w, k, vs, w,
                     v, acc, w, w, k, k, w, k, k);
    } else {
        hc_sb_printf(sb, "({ %s _r%d = %s, _a%d = %s, _b%d = %s; for (int _l%d = 0; _l%d < %d; "
                         "_l%d++) for (int _k%d = 0; _k%d < 4; _k%d++) _r%d[_l%d] += "
                         "(int32_t)(uint8_t)((uint32_t)_a%d[_l%d] >> (8 * _k%d)) * "
                         "(int32_t)(int8_t)((uint32_t)_b%d[_l%d] >> (8 * _k%d)); _r%d; })",
                     vs, k, acc, k, x, k, y, k, k, vt->lanes, k, k, k, k, k, k, k, k, k, k, k,
                     k, k);
    }
}

static void emit_vector_prim(cg *c, hc_sb *sb, const hc_expr *e) {
    switch (e->u.call.prim) {
    case HC_PRIM_VLOAD_BYTES:
    case HC_PRIM_VBROADCAST_BYTES: emit_byte_prim(c, sb, e); return;
    case HC_PRIM_VDOT_U8S8: emit_vdot(c, sb, e); return;
    case HC_PRIM_VSTORE_BF16:
    case HC_PRIM_VBF16_REST:
    case HC_PRIM_VLOAD_BF16X2:
    case HC_PRIM_TILE_CONFIG:
    case HC_PRIM_TILE_RELEASE:
    case HC_PRIM_TILE_ZERO:
    case HC_PRIM_TILE_LOAD:
    case HC_PRIM_TILE_STORE:
    case HC_PRIM_TILE_DP_BF16: emit_amx(c, sb, e); return;
    case HC_PRIM_VLOAD: emit_vload(c, sb, e, false); return;
    case HC_PRIM_VLOAD_MASK: emit_vload(c, sb, e, true); return;
    case HC_PRIM_VLOAD_RANGE: emit_vload_range(c, sb, e); return;
    case HC_PRIM_VLOAD_STRIDED: emit_vload_strided(c, sb, e); return;
    case HC_PRIM_VSTORE: emit_vstore(c, sb, e, false); return;
    case HC_PRIM_VSTORE_MASK: emit_vstore(c, sb, e, true); return;
    case HC_PRIM_PREFETCH: /* into L2 (locality 2): the data is wanted by the next tile */
        hc_sb_puts(sb, "__builtin_prefetch((const void *)(");
        emit_expr(c, sb, e->u.call.args[0]);
        hc_sb_puts(sb, "), 0, 2)");
        return;
    case HC_PRIM_VBROADCAST: {
        int w = simd_width(c, e->type);
        if (w) {
            hc_sb_printf(sb, "_mm%d_set1_ps(", w);
            emit_scalar_cast(c, sb, e->u.call.args[0], HC_F32);
            hc_sb_putc(sb, ')');
        } else {
            emit_broadcast(c, sb, e->u.call.args[0], e->type);
        }
        return;
    }
    case HC_PRIM_VFMA: {
        int w = simd_width(c, e->type);
        if (w) {
            hc_sb_printf(sb, "_mm%d_fmadd_ps(", w);
            emit_args(c, sb, e);
            hc_sb_putc(sb, ')');
            return;
        }
        /* GCC contracts a * b + c into an fma where the ISA has one. */
        hc_sb_puts(sb, "(");
        for (int i = 0; i < 3; i++) {
            if (i) hc_sb_puts(sb, i == 1 ? " * " : " + ");
            hc_sb_putc(sb, '(');
            emit_vec_operand(c, sb, e->u.call.args[i], e->type);
            hc_sb_putc(sb, ')');
        }
        hc_sb_puts(sb, ")");
        return;
    }
    case HC_PRIM_VREDUCE_ADD:
    case HC_PRIM_VREDUCE_MAX:
    case HC_PRIM_VREDUCE_MIN: emit_vreduce(c, sb, e); return;
    default: hc_unreachable();
    }
}

/* ---- expressions ----------------------------------------------------------------- */
static void emit_builtin(hc_sb *sb, const hc_var *v) {
    switch (v->builtin) {
    case HC_BUILTIN_CPU_THREAD: hc_sb_puts(sb, "((int64_t)omp_get_thread_num())"); return;
    case HC_BUILTIN_CPU_NUM_THREADS: hc_sb_puts(sb, "((int64_t)omp_get_num_threads())"); return;
    default: HC_ASSERT_MSG(0, "C target: CUDA builtin variable in a CPU program");
    }
}

static void emit_index(cg *c, hc_sb *sb, const hc_expr *e) {
    const hc_var *buf = e->u.load.buf;
    hc_sb_printf(sb, "%s[", var_name(c, buf));
    if (buf->type->kind == HC_TY_TENSOR) {
        HC_ASSERT_MSG(e->u.load.n == buf->type->ndim, "C target: index count != tensor rank");
        hc_expr *off = hc_layout_offset(c->a, buf->type->layout, e->u.load.idx);
        emit_expr(c, sb, hc_simplify_expr(c->a, off));
    } else {
        HC_ASSERT_MSG(e->u.load.n == 1, "C target: a pointer takes one index");
        emit_expr(c, sb, e->u.load.idx[0]);
    }
    hc_sb_putc(sb, ']');
}

/* Vector binary operation C has no operator for: a lane loop. */
static void binary_lanes(cg *c, hc_sb *sb, const hc_expr *e, const hc_type *vt) {
    int k = c->tmp++;
    const char *vs = type_str(c, vt);
    hc_sb_printf(sb, "({ %s _a%d = ", vs, k);
    emit_vec_operand(c, sb, e->u.bin.a, vt);
    hc_sb_printf(sb, "; %s _b%d = ", vs, k);
    emit_vec_operand(c, sb, e->u.bin.b, vt);
    hc_sb_printf(sb, "; %s _r%d; for (int _l%d = 0; _l%d < %d; _l%d++) _r%d[_l%d] = ", vs, k, k,
                 k, vt->lanes, k, k, k);
    char xa[32], ya[32];
    snprintf(xa, sizeof xa, "_a%d[_l%d]", k, k);
    snprintf(ya, sizeof ya, "_b%d[_l%d]", k, k);
    hc_binop op = e->u.bin.op;
    if (op == HC_OP_MOD) math_scalar(sb, HC_PRIM_FMOD, vt->dtype, xa, ya);
    else hc_sb_printf(sb, "hc_%s_%s(%s, %s)", op == HC_OP_MIN ? "min" : "max",
                      hc_dtype_name(vt->dtype), xa, ya);
    hc_sb_printf(sb, "; _r%d; })", k);
}

static void binary_vector(cg *c, hc_sb *sb, const hc_expr *e) {
    hc_binop op = e->u.bin.op;
    const hc_type *ot = hc_type_promote(c->a, e->u.bin.a->type, e->u.bin.b->type);
    bool fl = hc_dtype_is_float(ot->dtype);
    /* f32 min/max: MINPS/MAXPS return their second operand unless the first is smaller
     * (larger), which is hc_min/hc_max's `a < b ? a : b` exactly, NaNs included */
    int w = (op == HC_OP_MIN || op == HC_OP_MAX) ? simd_width(c, ot) : 0;
    if (w) {
        hc_sb_printf(sb, "_mm%d_%s_ps(", w, op == HC_OP_MIN ? "min" : "max");
        for (int i = 0; i < 2; i++) {
            const hc_expr *x = i ? e->u.bin.b : e->u.bin.a;
            if (i) hc_sb_puts(sb, ", ");
            if (is_vec(x->type)) {
                emit_as(c, sb, x, ot);
                continue;
            }
            hc_sb_printf(sb, "_mm%d_set1_ps(", w);
            emit_scalar_cast(c, sb, x, HC_F32);
            hc_sb_putc(sb, ')');
        }
        hc_sb_putc(sb, ')');
        return;
    }
    if (op == HC_OP_MIN || op == HC_OP_MAX || (op == HC_OP_MOD && fl)) {
        binary_lanes(c, sb, e, ot);
        return;
    }
    const char *sym = op == HC_OP_AND ? "&" : op == HC_OP_OR ? "|" : hc_binop_symbol(op);
    bool cmp = hc_binop_is_comparison(op);
    hc_sb_puts(sb, cmp ? "(__builtin_convertvector((" : "((");
    emit_vec_operand(c, sb, e->u.bin.a, ot);
    hc_sb_printf(sb, ") %s (", sym);
    emit_vec_operand(c, sb, e->u.bin.b, ot);
    if (cmp) hc_sb_printf(sb, "), %s) & 1)", type_str(c, e->type));
    else hc_sb_puts(sb, "))");
}

/* Pointer arithmetic and pointer comparisons: C's own rules, no conversions. */
static void binary_raw(cg *c, hc_sb *sb, const hc_expr *e) {
    hc_sb_putc(sb, '(');
    emit_expr(c, sb, e->u.bin.a);
    hc_sb_printf(sb, " %s ", hc_binop_symbol(e->u.bin.op));
    emit_expr(c, sb, e->u.bin.b);
    hc_sb_putc(sb, ')');
}

static void binary_scalar(cg *c, hc_sb *sb, const hc_expr *e) {
    hc_binop op = e->u.bin.op;
    if (e->u.bin.a->type->kind == HC_TY_POINTER || e->u.bin.b->type->kind == HC_TY_POINTER) {
        binary_raw(c, sb, e);
        return;
    }
    const hc_type *ot = hc_type_promote(c->a, e->u.bin.a->type, e->u.bin.b->type);
    if (op == HC_OP_SHL || op == HC_OP_SHR) ot = e->type;
    if (op == HC_OP_AND || op == HC_OP_OR) ot = hc_type_scalar(HC_BOOL);
    hc_dtype d = ot->dtype;
    /* bf16 has no C arithmetic: compute in f32 and round back. */
    if (d == HC_BF16) {
        hc_sb_puts(sb, e->type->dtype == HC_BF16 ? "hc_f32_to_bf16(" : "(");
        binary_scalar(c, sb, hc_binary(c->a, op, hc_cast(c->a, hc_type_scalar(HC_F32), e->u.bin.a),
                                       hc_cast(c->a, hc_type_scalar(HC_F32), e->u.bin.b)));
        hc_sb_putc(sb, ')');
        return;
    }
    if (op == HC_OP_MIN || op == HC_OP_MAX || (op == HC_OP_MOD && hc_dtype_is_float(d))) {
        if (op == HC_OP_MOD)
            hc_sb_printf(sb, "%s%s(", d == HC_F16 ? "(hc_f16)" : "",
                         d == HC_F64 ? "fmod" : "fmodf");
        else hc_sb_printf(sb, "hc_%s_%s(", op == HC_OP_MIN ? "min" : "max", hc_dtype_name(d));
        emit_as(c, sb, e->u.bin.a, ot);
        hc_sb_puts(sb, ", ");
        emit_as(c, sb, e->u.bin.b, ot);
        hc_sb_putc(sb, ')');
        return;
    }
    bool narrow = !hc_binop_is_comparison(op) && op != HC_OP_AND && op != HC_OP_OR &&
                  needs_narrowing(e->type->dtype);
    if (narrow) hc_sb_printf(sb, "((%s)", scalar_ctype(e->type->dtype));
    hc_sb_putc(sb, '(');
    /* Two constants: make the first one typed so C does not compute in int. */
    if (e->u.bin.a->kind == HC_E_CONST && e->u.bin.b->kind == HC_E_CONST)
        hc_sb_printf(sb, "(%s)", scalar_ctype(d));
    if (op == HC_OP_SHL || op == HC_OP_SHR) emit_expr(c, sb, e->u.bin.a);
    else emit_as(c, sb, e->u.bin.a, ot);
    hc_sb_printf(sb, " %s ", hc_binop_symbol(op));
    if (op == HC_OP_SHL || op == HC_OP_SHR) emit_expr(c, sb, e->u.bin.b);
    else emit_as(c, sb, e->u.bin.b, ot);
    hc_sb_putc(sb, ')');
    if (narrow) hc_sb_putc(sb, ')');
}

static void emit_unary(cg *c, hc_sb *sb, const hc_expr *e) {
    const hc_expr *x = e->u.un.a;
    switch (e->u.un.op) {
    case HC_OP_NEG:
        if (is_bf16(x->type)) {
            hc_sb_puts(sb, "hc_f32_to_bf16(-");
            emit_f32_of(c, sb, x);
            hc_sb_putc(sb, ')');
            return;
        }
        break;
    case HC_OP_NOT:
        if (is_vec(x->type)) {
            hc_sb_puts(sb, "((");
            emit_expr(c, sb, x);
            hc_sb_puts(sb, ") ^ 1)");
            return;
        }
        hc_sb_puts(sb, "(!(");
        emit_expr(c, sb, x);
        hc_sb_puts(sb, "))");
        return;
    case HC_OP_BITNOT: break;
    }
    bool narrow = e->type->kind == HC_TY_SCALAR && needs_narrowing(e->type->dtype);
    if (narrow) hc_sb_printf(sb, "((%s)", scalar_ctype(e->type->dtype));
    hc_sb_printf(sb, "(%s(", hc_unop_symbol(e->u.un.op));
    emit_expr(c, sb, x);
    hc_sb_puts(sb, "))");
    if (narrow) hc_sb_putc(sb, ')');
}

static void emit_select(cg *c, hc_sb *sb, const hc_expr *e) {
    const hc_expr *cond = e->u.sel.cond;
    if (!is_vec(cond->type)) {
        hc_sb_puts(sb, "((");
        emit_expr(c, sb, cond);
        hc_sb_puts(sb, ") ? ");
        emit_as(c, sb, e->u.sel.t, e->type);
        hc_sb_puts(sb, " : ");
        emit_as(c, sb, e->u.sel.f, e->type);
        hc_sb_putc(sb, ')');
        return;
    }
    int k = c->tmp++;
    const char *vs = type_str(c, e->type);
    if (hc_dtype_size(e->type->dtype) == 4 && cond->type->dtype == HC_BOOL) {
        /* a bitwise blend: the 0/1 lanes negated are all-zero/all-one masks (no loop,
         * which functions built with no-tree-loop-if-convert would keep as branches) */
        const char *is = type_str(c, hc_type_vector(c->a, HC_I32, e->type->lanes));
        hc_sb_printf(sb, "({ %s _m%d = -(%s)(", is, k, is);
        emit_expr(c, sb, cond);
        hc_sb_printf(sb, "); %s _a%d = ", vs, k);
        emit_vec_operand(c, sb, e->u.sel.t, e->type);
        hc_sb_printf(sb, "; %s _b%d = ", vs, k);
        emit_vec_operand(c, sb, e->u.sel.f, e->type);
        hc_sb_printf(sb, "; (%s)(((%s)_a%d & _m%d) | ((%s)_b%d & ~_m%d)); })", vs, is, k, k, is,
                     k, k);
        return;
    }
    hc_sb_printf(sb, "({ %s _c%d = ", type_str(c, cond->type), k);
    emit_expr(c, sb, cond);
    hc_sb_printf(sb, "; %s _a%d = ", vs, k);
    emit_vec_operand(c, sb, e->u.sel.t, e->type);
    hc_sb_printf(sb, "; %s _b%d = ", vs, k);
    emit_vec_operand(c, sb, e->u.sel.f, e->type);
    hc_sb_printf(sb, "; %s _r%d; for (int _l%d = 0; _l%d < %d; _l%d++) "
                     "_r%d[_l%d] = _c%d[_l%d] ? _a%d[_l%d] : _b%d[_l%d]; _r%d; })",
                 vs, k, k, k, e->type->lanes, k, k, k, k, k, k, k, k, k, k);
}

static void emit_expr(cg *c, hc_sb *sb, const hc_expr *e) {
    switch (e->kind) {
    case HC_E_CONST: emit_const(sb, e); return;
    case HC_E_VAR:
        if (e->u.var->builtin != HC_BUILTIN_NONE) emit_builtin(sb, e->u.var);
        else hc_sb_puts(sb, var_name(c, e->u.var));
        return;
    case HC_E_BINARY:
        if (is_vec(e->type) || is_vec(e->u.bin.a->type) || is_vec(e->u.bin.b->type))
            binary_vector(c, sb, e);
        else binary_scalar(c, sb, e);
        return;
    case HC_E_UNARY: emit_unary(c, sb, e); return;
    case HC_E_SELECT: emit_select(c, sb, e); return;
    case HC_E_CAST: emit_as(c, sb, e->u.cast.a, e->type); return;
    case HC_E_CALL:
        if (hc_prim_is_vector(e->u.call.prim)) emit_vector_prim(c, sb, e);
        else emit_math(c, sb, e);
        return;
    case HC_E_LOAD: emit_index(c, sb, e); return;
    case HC_E_ADDRESS:
        hc_sb_puts(sb, "(&");
        emit_index(c, sb, e);
        hc_sb_putc(sb, ')');
        return;
    case HC_E_TENSOR_ACCESS:
    case HC_E_REDUCE: HC_ASSERT_MSG(0, "C target: task-level expression in a program");
    }
}

/* ---- statements ------------------------------------------------------------------ */
/* A C block: heap temporaries declared directly in it end with it (their workspace
 * slots are free again for later declarations). */
static void block(cg *c, const hc_stmt *s) {
    size_t mark = c->heap.len;
    c->indent++;
    if (s) emit_stmt(c, s);
    c->heap.len = mark;
    c->indent--;
}

static void emit_declare(cg *c, const hc_stmt *s) {
    const hc_var *v = s->u.decl.var;
    const hc_type *t = v->type;
    const char *name = var_name(c, v);
    if (t->kind != HC_TY_TENSOR) {
        if (!s->u.decl.init) {
            line(c, "%s %s;", type_str(c, t), name);
        } else {
            hc_sb init;
            hc_sb_init(&init);
            emit_as(c, &init, s->u.decl.init, t);
            line(c, "%s %s = %s;", type_str(c, t), name, hc_sb_str(&init));
            hc_sb_free(&init);
        }
        return;
    }
    hc_expr *size = hc_simplify_expr(c->a, hc_layout_storage_size(c->a, t->layout));
    const char *et = type_str(c, t);
    if (t->scope != HC_SCOPE_GLOBAL) {
        int64_t n = 0;
        HC_ASSERT_MSG(hc_expr_is_const_int(size, &n),
                      "C target: local tensor of non-constant size");
        line(c, "%s %s[%lld] __attribute__((aligned(64)));", et, name, (long long)(n > 0 ? n : 1));
        return;
    }
    /* Heap temporary: a buffer of the calling thread's workspace (prelude_workspace). Its
     * slot is the number of temporaries alive at the declaration, so those alive together
     * never share one, and every kernel reuses the slots from 0. A helper is inlined into
     * kernels at any depth: it has no slot of its own. */
    HC_ASSERT_MSG(!c->in_helper, "C target: heap temporary in a helper function");
    int slot = (int)c->heap.len;
    line(c, "%s *restrict %s = (%s *)hc_ws_get(%d, ((size_t)(%s) * sizeof(%s) + 63) / 64 * 64"
            " + 64);", et, name, et, slot, expr_str(c, size), et);
    hc_vec_push(&c->heap, v);
    c->ws_slots = HC_MAX(c->ws_slots, slot + 1);
}

static void emit_for(cg *c, const hc_stmt *s) {
    const char *iv = var_name(c, s->u.for_.var);
    const char *ext = expr_str(c, s->u.for_.extent);
    hc_loop_attr at = s->u.for_.attr;
    if (at.kind == HC_LOOP_PARALLEL && hc_stmt_has_barrier(s->u.for_.body)) {
        int64_t n = 0;
        HC_ASSERT_MSG(hc_expr_is_const_int(s->u.for_.extent, &n),
                      "C target: a parallel loop with barriers needs a constant extent");
        line(c, "#pragma omp parallel num_threads(%lld)", (long long)n);
        line(c, "{");
        line(c, "    const int64_t %s = omp_get_thread_num();", iv);
        block(c, s->u.for_.body);
        line(c, "}");
        return;
    }
    if (at.kind == HC_LOOP_PARALLEL) {
        if (at.factor > 0) line(c, "#pragma omp parallel for schedule(static) num_threads(%d)",
                                at.factor);
        else line(c, "#pragma omp parallel for schedule(static)");
        line(c, "for (int64_t %s = 0; %s < %s; %s++) {", iv, iv, ext, iv);
    } else {
        if (at.kind == HC_LOOP_UNROLL && at.factor > 0) line(c, "#pragma GCC unroll %d", at.factor);
        int k = c->tmp++;
        line(c, "for (int64_t %s = 0, _e%d = %s; %s < _e%d; %s++) {", iv, k, ext, iv, k, iv);
    }
    block(c, s->u.for_.body);
    line(c, "}");
}

static void emit_store(cg *c, const hc_stmt *s) {
    const hc_var *buf = s->u.store.buf;
    hc_expr tmp = {.kind = HC_E_LOAD};
    tmp.u.load.buf = (hc_var *)buf, tmp.u.load.n = s->u.store.n, tmp.u.load.idx = s->u.store.idx;
    const hc_type *et = buf->type->kind == HC_TY_TENSOR
                            ? (buf->type->lanes > 1 ? hc_type_vector(c->a, buf->type->dtype,
                                                                     buf->type->lanes)
                                                    : hc_type_scalar(buf->type->dtype))
                            : buf->type->pointee;
    hc_sb lhs, rhs;
    hc_sb_init(&lhs), hc_sb_init(&rhs);
    emit_index(c, &lhs, &tmp);
    emit_as(c, &rhs, s->u.store.value, et);
    line(c, "%s = %s;", hc_sb_str(&lhs), hc_sb_str(&rhs));
    hc_sb_free(&lhs), hc_sb_free(&rhs);
}

static void emit_comment(cg *c, const char *text) {
    hc_sb sb;
    hc_sb_init(&sb);
    for (const char *p = text; *p; p++) {
        if (*p == '\n') hc_sb_putc(&sb, ' ');
        else if (p[0] == '*' && p[1] == '/') hc_sb_puts(&sb, "* /"), p++;
        else hc_sb_putc(&sb, *p);
    }
    line(c, "/* %s */", hc_sb_str(&sb));
    hc_sb_free(&sb);
}

static void emit_stmt(cg *c, const hc_stmt *s) {
    switch (s->kind) {
    case HC_S_SEQ:
        for (int i = 0; i < s->u.seq.n; i++) emit_stmt(c, s->u.seq.stmts[i]);
        return;
    case HC_S_DECLARE: emit_declare(c, s); return;
    case HC_S_LET: {
        const hc_type *t = s->u.let.var->type;
        HC_ASSERT_MSG(t->kind != HC_TY_TENSOR, "C target: let of a tensor");
        hc_sb v;
        hc_sb_init(&v);
        emit_as(c, &v, s->u.let.value, t);
        line(c, "{");
        line(c, "    %s const %s = %s;", type_str(c, t), var_name(c, s->u.let.var), hc_sb_str(&v));
        hc_sb_free(&v);
        block(c, s->u.let.body);
        line(c, "}");
        return;
    }
    case HC_S_ASSIGN: {
        hc_sb v;
        hc_sb_init(&v);
        emit_as(c, &v, s->u.assign.value, s->u.assign.var->type);
        line(c, "%s = %s;", var_name(c, s->u.assign.var), hc_sb_str(&v));
        hc_sb_free(&v);
        return;
    }
    case HC_S_STORE: emit_store(c, s); return;
    case HC_S_EVAL: line(c, "%s;", expr_str(c, s->u.eval.e)); return;
    case HC_S_IF:
        line(c, "if (%s) {", expr_str(c, s->u.if_.cond));
        block(c, s->u.if_.then_s);
        if (s->u.if_.else_s) {
            line(c, "} else {");
            block(c, s->u.if_.else_s);
        }
        line(c, "}");
        return;
    case HC_S_FOR: emit_for(c, s); return;
    case HC_S_FOR_MAPPING: HC_ASSERT_MSG(0, "C target: for-mapping left after lowering");
    case HC_S_BARRIER: line(c, "#pragma omp barrier"); return;
    case HC_S_COMMENT: emit_comment(c, s->u.comment.text); return;
    }
}

/* ---- functions ------------------------------------------------------------------- */
static void emit_param(cg *c, hc_sb *sb, const hc_var *p) {
    const char *n = var_name(c, p);
    if (p->type->kind == HC_TY_TENSOR) hc_sb_printf(sb, "%s *restrict %s", type_str(c, p->type), n);
    else hc_sb_printf(sb, "%s %s", type_str(c, p->type), n);
}

static void emit_packed(cg *c, const hc_func *f) {
    line(c, "void %s__packed(void **args) {", f->name);
    hc_sb call;
    hc_sb_init(&call);
    hc_sb_printf(&call, "%s(", f->name);
    for (int i = 0; i < f->nparams; i++) {
        const hc_type *t = f->params[i]->type;
        const char *ts = type_str(c, t);
        if (i) hc_sb_puts(&call, ", ");
        if (t->kind == HC_TY_TENSOR) hc_sb_printf(&call, "(%s *)args[%d]", ts, i);
        else if (t->kind == HC_TY_POINTER) hc_sb_printf(&call, "(%s)args[%d]", ts, i);
        else hc_sb_printf(&call, "*(%s *)args[%d]", ts, i);
    }
    line(c, "    %s);", hc_sb_str(&call));
    hc_sb_free(&call);
    line(c, "}");
}

/* Function names are exported symbols: they must already be C identifiers. */
static bool is_identifier(const char *s) {
    if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return false;
    return true;
}

/* GCC 12.2 miscompiles if-converted loops whose conditional code loads memory: the
 * masked loads of a vectorized `o[i] = x[i] < 0 ? s[i] : 1` over a 7x5 nest all use the
 * first vector's mask, so some elements read 0 (reproduced with plain C at -O3
 * -march=native; -fno-tree-loop-if-convert avoids it). Functions with a load under a
 * select branch or under an if without loops inside are compiled without loop
 * if-conversion; the others keep it. */
/* What a subtree holds: loads, loops. */
typedef struct holds {
    bool loads, loops;
} holds;

static hc_expr *holds_expr(hc_mutator *m, hc_expr *e) {
    if (e->kind == HC_E_LOAD) ((holds *)m->ctx)->loads = true;
    return e;
}
static hc_stmt *holds_stmt(hc_mutator *m, hc_stmt *s) {
    if (s->kind == HC_S_FOR || s->kind == HC_S_FOR_MAPPING) ((holds *)m->ctx)->loops = true;
    return s;
}
static void scan_expr(hc_expr *e, holds *h) {
    hc_mutator m = {.ctx = h, .expr = holds_expr, .stmt = holds_stmt};
    if (e) hc_mutate_expr(&m, e);
}
static void scan_stmt(hc_stmt *s, holds *h) {
    hc_mutator m = {.ctx = h, .expr = holds_expr, .stmt = holds_stmt};
    if (s) hc_mutate_stmt(&m, s);
}

static hc_expr *cond_load_expr(hc_mutator *m, hc_expr *e) {
    holds h = {0};
    if (e->kind == HC_E_SELECT) scan_expr(e->u.sel.t, &h), scan_expr(e->u.sel.f, &h);
    if (h.loads) *(bool *)m->ctx = true;
    return e;
}
/* An if whose branches hold a loop is not part of an innermost loop's body, which is all
 * that loop if-conversion touches (a guard around a window row's loop stays a branch). */
static hc_stmt *cond_load_stmt(hc_mutator *m, hc_stmt *s) {
    holds h = {0};
    if (s->kind == HC_S_IF) scan_stmt(s->u.if_.then_s, &h), scan_stmt(s->u.if_.else_s, &h);
    if (h.loads && !h.loops) *(bool *)m->ctx = true;
    return s;
}
static bool has_conditional_load(hc_stmt *body) {
    bool found = false;
    hc_mutator m = {.ctx = &found, .expr = cond_load_expr, .stmt = cond_load_stmt};
    hc_mutate_stmt(&m, body);
    return found;
}

/* GCC vectorizes with 256-bit registers on these CPUs unless told otherwise. Scalar
 * kernels (the auto-scheduler's) of long rows or 16-lane blocks run faster with 512-bit
 * vectors; short rows do not (docs/codegen.md has the measurements). The scan below
 * looks at the innermost loops (no loop inside): one must run whole 512-bit vectors of
 * f32 (at least WIDE_ROW iterations, or a multiple of 16: the 16-lane partial sums of a
 * chunked reduction) and none may veto: a short row (17 to WIDE_ROW, not a multiple of
 * 16: 16-lane vectors leave a big tail), an unknown extent, or any vector-typed
 * expression (a template's explicit vectors keep their width and its scalar loops,
 * packing and copies, stay as they were measured). Unrolled loops are straight-line
 * code; loops below 16 (a window, a horizontal sum) are not vectorized along themselves. */
#define WIDE_ROW 128

typedef struct wide_scan {
    bool wide, veto;
} wide_scan;

static hc_stmt *wide_stmt(hc_mutator *m, hc_stmt *s) {
    wide_scan *w = m->ctx;
    if (s->kind != HC_S_FOR || s->u.for_.attr.kind == HC_LOOP_UNROLL) return s;
    holds h = {0};
    scan_stmt(s->u.for_.body, &h);
    if (h.loops) return s;
    int64_t n = 0;
    if (!hc_expr_is_const_int(s->u.for_.extent, &n))
        w->veto = true;
    else if (n >= WIDE_ROW || n % 16 == 0)
        w->wide = true;
    else if (n > 16)
        w->veto = true;
    return s;
}

static hc_expr *wide_expr(hc_mutator *m, hc_expr *e) {
    if (e->type && e->type->kind == HC_TY_VECTOR) ((wide_scan *)m->ctx)->veto = true;
    return e;
}

static bool wide_rows(const cg *c, hc_stmt *body) {
    if (c->t->caps.isa != HC_ISA_AVX512) return false;
    wide_scan w = {0};
    hc_mutator m = {.ctx = &w, .expr = wide_expr, .stmt = wide_stmt};
    hc_mutate_stmt(&m, body);
    return w.wide && !w.veto;
}

static void emit_func(cg *c, const hc_func *f) {
    HC_ASSERT_MSG(f->kind == HC_FN_CPU_KERNEL || f->kind == HC_FN_CPU_HELPER,
                  "C target: CUDA function in a CPU module");
    HC_ASSERT_MSG(is_identifier(f->name), "C target: function name is not a C identifier");
    names_reset(c);
    c->in_helper = f->kind == HC_FN_CPU_HELPER;
    hc_sb head;
    hc_sb_init(&head);
    if (has_conditional_load(f->body))
        hc_sb_puts(&head, "__attribute__((optimize(\"no-tree-loop-if-convert\"))) ");
    if (wide_rows(c, f->body))
        hc_sb_puts(&head, "__attribute__((target(\"prefer-vector-width=512\"))) ");
    hc_sb_printf(&head, "%svoid %s(", f->kind == HC_FN_CPU_HELPER ? "static inline " : "", f->name);
    for (int i = 0; i < f->nparams; i++) {
        if (i) hc_sb_puts(&head, ", ");
        emit_param(c, &head, f->params[i]);
    }
    if (!f->nparams) hc_sb_puts(&head, "void");
    line(c, "%s) {", hc_sb_str(&head));
    hc_sb_free(&head);
    block(c, f->body);
    line(c, "}");
    if (f->kind == HC_FN_CPU_KERNEL) emit_packed(c, f);
    line(c, "%s", "");
}

/* ---- prelude --------------------------------------------------------------------- */
static const char prelude_common[] =
    "#include <stdbool.h>\n"
    "#include <stddef.h>\n"
    "#include <stdint.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#include <math.h>\n"
    "#include <omp.h>\n"
    "%s"
    "\n"
    "typedef _Float16 hc_f16;\n"
    "typedef struct hc_bf16 { uint16_t bits; } hc_bf16;\n"
    "static inline float hc_bf16_to_f32(hc_bf16 x) {\n"
    "    uint32_t u = (uint32_t)x.bits << 16; float f; memcpy(&f, &u, 4); return f;\n"
    "}\n"
    "/* round to nearest even; NaN stays a (quiet) NaN */\n"
    "static inline hc_bf16 hc_f32_to_bf16(float f) {\n"
    "    uint32_t u; memcpy(&u, &f, 4); hc_bf16 r;\n"
    "    if ((u & 0x7fffffffu) > 0x7f800000u) {\n"
    "        r.bits = (uint16_t)((u >> 16) | 0x40); return r;\n"
    "    }\n"
    "    u += 0x7fffu + ((u >> 16) & 1u); r.bits = (uint16_t)(u >> 16); return r;\n"
    "}\n"
    "#define HC_MINMAX(T, N) \\\n"
    "    static inline T hc_min_##N(T a, T b) { return a < b ? a : b; } \\\n"
    "    static inline T hc_max_##N(T a, T b) { return a > b ? a : b; }\n"
    "HC_MINMAX(bool, bool) HC_MINMAX(int8_t, i8) HC_MINMAX(int16_t, i16)\n"
    "HC_MINMAX(int32_t, i32) HC_MINMAX(int64_t, i64) HC_MINMAX(uint8_t, u8)\n"
    "HC_MINMAX(uint16_t, u16) HC_MINMAX(uint32_t, u32) HC_MINMAX(uint64_t, u64)\n"
    "HC_MINMAX(hc_f16, f16) HC_MINMAX(float, f32) HC_MINMAX(double, f64)\n"
    "#define HC_ABS(T, N) static inline T hc_abs_##N(T a) { return a < 0 ? (T)-a : a; }\n"
    "#define HC_ABS_U(T, N) static inline T hc_abs_##N(T a) { return a; }\n"
    "HC_ABS(int8_t, i8) HC_ABS(int16_t, i16) HC_ABS(int32_t, i32) HC_ABS(int64_t, i64)\n"
    "HC_ABS_U(bool, bool) HC_ABS_U(uint8_t, u8) HC_ABS_U(uint16_t, u16)\n"
    "HC_ABS_U(uint32_t, u32) HC_ABS_U(uint64_t, u64)\n"
    "/* The polynomials of exp, tanh, log and erf (Horner), on a float or a vector of\n"
    " * floats: the scalar functions below and the vector ones (hc_v*) share them. */\n"
    "#define HC_EXP_POLY(r) (1.0f + (r) * (1.0f + (r) * (0.5f + (r) * (1.66666667e-1f\\\n"
    "    + (r) * (4.16666667e-2f + (r) * (8.33333333e-3f + (r) * (1.38888889e-3f\\\n"
    "    + (r) * 1.98412698e-4f)))))))\n"
    "#define HC_TANH_POLY(z) ((((((((-9.29569e5f / 6.38512875e8f) * (z) + 2.1844e4f / "
    "6.081075e6f)\\\n"
    "    * (z) - 1382.0f / 155925.0f) * (z) + 62.0f / 2835.0f) * (z) - 17.0f / 315.0f) * (z)\\\n"
    "    + 2.0f / 15.0f) * (z) - 1.0f / 3.0f))\n"
    "#define HC_LOG_POLY(z) (((((((2.0f / 13.0f) * (z) + 2.0f / 11.0f) * (z) + 2.0f / 9.0f) * "
    "(z)\\\n"
    "    + 2.0f / 7.0f) * (z) + 2.0f / 5.0f) * (z) + 2.0f / 3.0f))\n"
    "/* erf: per interval i = floor(2 |x|) of [0, 4], |x| clamped to 4, the coefficients of\n"
    " * power j of its polynomial in t = |x| - (i / 2 + 1 / 4) (hc_erff; scripts/fit_erf.py);\n"
    " * each row twice, so that 16 lanes load it as one vector */\n"
    "#define HC_ERF_C0 \\\n"
    "    1.105305552e+00f, -2.888443768e-01f, -7.709986717e-02f, -1.332832873e-02f, \\\n"
    "    -1.462716842e-03f, -1.006218954e-04f, -4.302753950e-06f, -1.137236509e-07f\n"
    "#define HC_ERF_C1 \\\n"
    "    -1.811654866e-01f, 6.429315209e-01f, 2.365212142e-01f, 5.277483910e-02f, \\\n"
    "    7.142300252e-03f, 5.862942198e-04f, 2.919363942e-05f, 8.818856259e-07f\n"
    "#define HC_ERF_C2 \\\n"
    "    -3.353507817e-01f, -4.821980298e-01f, -2.956520617e-01f, -9.235616773e-02f, \\\n"
    "    -1.607010141e-02f, -1.612271881e-03f, -9.487388161e-05f, -3.306713552e-06f\n"
    "#define HC_ERF_C3 \\\n"
    "    1.046918780e-01f, 2.672734670e-02f, 1.675233394e-01f, 9.017763287e-02f, \\\n"
    "    2.172694355e-02f, 2.758209826e-03f, 1.952197781e-04f, 7.911792636e-06f\n"
    "#define HC_ERF_C4 \\\n"
    "    8.901059628e-02f, 1.506701559e-01f, -6.118967198e-03f, -4.810708761e-02f, \\\n"
    "    -1.909061335e-02f, -3.257520497e-03f, -2.859752567e-04f, -1.375799548e-05f\n"
    "#define HC_ERF_C5 \\\n"
    "    -3.497109562e-02f, -5.126251280e-02f, -4.678008333e-02f, 5.969923455e-03f, \\\n"
    "    1.058158278e-02f, 2.825799864e-03f, 3.326095757e-04f, 2.020443208e-05f\n"
    "#define HC_ERF_C6 \\\n"
    "    -1.790407114e-02f, -2.652435191e-02f, 2.045764960e-02f, 9.066136554e-03f, \\\n"
    "    -2.754350426e-03f, -1.669874066e-03f, -2.758293995e-04f, -2.098481491e-05f\n"
    "static const float hc_erf_tab[7][16] __attribute__((unused, aligned(64))) = {\n"
    "    {HC_ERF_C0, HC_ERF_C0}, {HC_ERF_C1, HC_ERF_C1}, {HC_ERF_C2, HC_ERF_C2},\n"
    "    {HC_ERF_C3, HC_ERF_C3}, {HC_ERF_C4, HC_ERF_C4}, {HC_ERF_C5, HC_ERF_C5},\n"
    "    {HC_ERF_C6, HC_ERF_C6}};\n"
    "/* exp without calls or branches, so that loops around it vectorize (expf does not\n"
    " * without -ffast-math). x = n ln2 + r with |r| <= ln2/2 (two-part ln2: n * hi is\n"
    " * exact), e^r by its degree-7 Taylor polynomial (truncation < 1e-8 relative): e^r is\n"
    " * returned, n through *n. n is rounded by adding and subtracting 1.5 * 2^23 (needs no\n"
    " * -ffast-math). */\n"
    "static inline float hc_exp_reduced(float x, float *n) {\n"
    "    float k = (x * 1.44269504f + 12582912.0f) - 12582912.0f;\n"
    "    float r = x - k * 0.693145752f;\n"
    "    r = r - k * 1.42860682e-06f;\n"
    "    *n = k;\n"
    "    return HC_EXP_POLY(r);\n"
    "}\n"
    "/* 2^n for an integer n in [-126, 127] */\n"
    "static inline float hc_pow2i(int32_t n) {\n"
    "    uint32_t b = (uint32_t)(n + 127) << 23;\n"
    "    float s;\n"
    "    memcpy(&s, &b, 4);\n"
    "    return s;\n"
    "}\n"
    "/* e^x for x in [-87, 88] (a normal result, one power of two), no NaN: the exponential\n"
    " * of tanh, whose range needs none of hc_expf's guards */\n"
    "static inline float hc_expf_unguarded(float x) {\n"
    "    float n, p = hc_exp_reduced(x, &n);\n"
    "    return p * hc_pow2i((int32_t)n);\n"
    "}\n"
    "/* exp, error < 1 ulp: 2^n applied in two halves so that subnormal results round\n"
    " * once; NaN kept, the argument clamped where the result is 0 or infinite anyway. */\n"
    "static inline float hc_expf(float x) {\n"
    "    float xs = x == x ? x : 0.0f;\n"
    "    xs = xs < -104.0f ? -104.0f : xs;\n"
    "    xs = xs > 89.0f ? 89.0f : xs;\n"
    "    float n, p = hc_exp_reduced(xs, &n);\n"
    "    int32_t ni = (int32_t)n, n1 = ni >> 1, n2 = ni - n1;\n"
    "    float res = p * hc_pow2i(n1) * hc_pow2i(n2);\n"
    "    return x == x ? res : x;\n"
    "}\n"
    "static inline float hc_sigmoidf(float x) { return 1.0f / (1.0f + hc_expf(-x)); }\n"
    "/* tanh, vectorizable like hc_expf, under 1.6 ulp: the odd Taylor series below 0.55\n"
    " * (terms shrink by (2x/pi)^2 < 0.13), else 1 - 2 / (e^(2|x|) + 1); +-1 beyond 9.\n"
    " * 2|x| lies in [1.1, 18]: hc_expf_unguarded (51 instructions per 16 lanes against 76\n"
    " * through hc_expf; a GELU loop 0.165 -> 0.111 ms). */\n"
    "static inline float hc_tanhf(float x) {\n"
    "    float ax = __builtin_fabsf(x);\n"
    "    float a = ax < 9.0f ? ax : 9.0f, z = a * a;\n"
    "    float p = HC_TANH_POLY(z);\n"
    "    float small = a + a * z * p;\n"
    "    float big = 1.0f - 2.0f / (hc_expf_unguarded(a + a) + 1.0f);\n"
    "    float res = ax < 0.55f ? small : big;\n"
    "    res = __builtin_copysignf(ax < 9.0f ? res : 1.0f, x);\n"
    "    return x == x ? res : x;\n"
    "}\n"
    "/* log, vectorizable, under 2 ulp: x = 2^e m with m in [sqrt(1/2), sqrt(2)) (subnormal\n"
    " * x scaled by 2^23 first), log m = 2 atanh(s) = 2 (s + s^3/3 + ...) with\n"
    " * s = (m - 1) / (m + 1), |s| < 0.172, and e ln2 added in two parts. */\n"
    "static inline float hc_logf(float x) {\n"
    "    bool tiny = x < 1.17549435e-38f;\n"
    "    float xs = tiny ? x * 8388608.0f : x;\n"
    "    uint32_t u;\n"
    "    memcpy(&u, &xs, 4);\n"
    "    int32_t e = (int32_t)((u >> 23) & 0xffu) - 127 - (tiny ? 23 : 0);\n"
    "    uint32_t mu = (u & 0x7fffffu) | 0x3f800000u;\n"
    "    float m;\n"
    "    memcpy(&m, &mu, 4);\n"
    "    e = m > 1.41421356f ? e + 1 : e;\n"
    "    m = m > 1.41421356f ? m * 0.5f : m;\n"
    "    float s = (m - 1.0f) / (m + 1.0f), z = s * s;\n"
    "    float p = HC_LOG_POLY(z);\n"
    "    float fe = (float)e;\n"
    "    float r = fe * 0.693145752f + (fe * 1.42860682e-06f + (2.0f * s + s * z * p));\n"
    "    r = x == 0.0f ? -__builtin_inff() : r;\n"
    "    r = x < 0.0f ? __builtin_nanf(\"\") : r;\n"
    "    r = x == __builtin_inff() ? x : r;\n"
    "    return x == x ? r : x;\n"
    "}\n"
    "/* erf, vectorizable, under 1.6 ulp: |x| clamped to 4 (erf rounds to 1 past 3.84), cut\n"
    " * in 8 intervals of 1/2, i = floor(2 |x|) (4 counts as interval 7), on each a polynomial\n"
    " * P of degree 6 in t = |x| - (i / 2 + 1 / 4), |t| <= 1/4: erf = |x| P on [0, 1/2) (P\n"
    " * fits erf(x) / x, relative error 8e-9), 1 + P beyond (P fits -erfc, absolute error\n"
    " * under 2e-8); the sign put back. Minimax fits, scripts/fit_erf.py. One polynomial a\n"
    " * lane, its coefficients looked up: the vector form (hc_verf) permutes them from the\n"
    " * table's rows, no branch computed twice and no exponential (in BERT's GELU epilogue\n"
    " * the erf of two branches and an exponential cost 8.5%% of the matmul with AVX2). */\n"
    "static inline float hc_erff(float x) {\n"
    "    float ax = __builtin_fabsf(x);\n"
    "    ax = ax < 4.0f ? ax : 4.0f; /* NaN: 4, and NaN again at the end */\n"
    "    int32_t i = (int32_t)(ax * 2.0f);\n"
    "    i -= i >> 3; /* 8 (|x| = 4) -> 7 */\n"
    "    float t = ax - ((float)i * 0.5f + 0.25f);\n"
    "    float p = hc_erf_tab[6][i];\n"
    "    for (int j = 5; j >= 0; j--) p = p * t + hc_erf_tab[j][i];\n"
    "    float res = i == 0 ? ax * p : 1.0f + p;\n"
    "    res = __builtin_copysignf(res, x);\n"
    "    return x == x ? res : x;\n"
    "}\n"
    "static inline double hc_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }\n"
    "static inline float hc_rsqrtf(float x) { return 1.0f / sqrtf(x); }\n"
    "static inline double hc_rsqrt(double x) { return 1.0 / sqrt(x); }\n"
    "static inline int64_t hc_clamp_lanes(int64_t n, int64_t lanes) {\n"
    "    return n < 0 ? 0 : n > lanes ? lanes : n;\n"
    "}\n";

/* A masked 8-lane store without a mask (AVX2 without AVX-512): VMASKMOVPS's store form
 * is microcoded on AMD Zen 1-3, 14.5-16 ns a store on Zen 3 against 1.1-1.7 ns for the
 * 4 + 2 + 1 stores of the valid lanes (whatever n: 6720 stores of 1, 3, 6 or 7 lanes);
 * a full vector is one plain store. The branches on n repeat along a row (every row of
 * a plane has the same tail), so they predict. */
static const char prelude_avx2[] =
    "/* lanes [0, n) of an 8 x i32 mask for maskload */\n"
    "static inline __m256i hc_mask8(int64_t n) {\n"
    "    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hc_clamp_lanes(n, 8)),\n"
    "                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));\n"
    "}\n"
    "/* lanes [0, n) of v to p: plain stores of 8, or of 4, 2 and 1 lanes */\n"
    "static inline void hc_store8_n(float *p, __m256 v, int64_t n) {\n"
    "    if (n >= 8) { _mm256_storeu_ps(p, v); return; }\n"
    "    __m128 h = _mm256_castps256_ps128(v);\n"
    "    if (n >= 4) { _mm_storeu_ps(p, h); h = _mm256_extractf128_ps(v, 1); p += 4; n -= 4; }\n"
    "    if (n >= 2) { _mm_storel_pi((__m64 *)p, h); h = _mm_movehl_ps(h, h); p += 2; n -= 2; }\n"
    "    if (n >= 1) _mm_store_ss(p, h);\n"
    "}\n";

static const char prelude_avx512[] =
    "static inline __mmask16 hc_mask16(int64_t n) {\n"
    "    return (__mmask16)((1u << hc_clamp_lanes(n, 16)) - 1u);\n"
    "}\n";

/* Heap temporaries (GLOBAL tensors declared in a function) come from a workspace per
 * thread that persists across calls, so a kernel call allocates nothing once the slots
 * have grown to its sizes (a fresh aligned_alloc per call and thread faulted its pages
 * in again on every call). Slot k holds the temporary declared while k others are alive;
 * it grows to the largest request of any kernel of the module and never shrinks.
 * A workspace belongs to one thread at a time, and only that thread replaces its
 * buffers, so a kernel running on several threads at once is fine. When its thread
 * exits (the destructor of the pthread key that holds it) a workspace becomes idle, and the next thread without
 * one takes it: libgomp ends its surplus workers whenever a parallel region asks for
 * fewer threads than the one before and starts new ones later, and those should not
 * grow fresh buffers. So there are at most as many workspaces as threads that ever ran
 * the module's kernels at once. All are on one list (under a mutex, touched only when
 * a thread takes or leaves one or a buffer grows) and are freed when the library is
 * unloaded (dlclose, or process exit); unloading while a kernel runs is an error (as
 * for any code). */
static const char prelude_workspace[] =
    "#include <pthread.h>\n"
    "#include <sys/mman.h>\n"
    "\n"
    "enum { HC_WS_SLOTS = %d };\n"
    "typedef struct hc_ws {\n"
    "    void *buf[HC_WS_SLOTS];\n"
    "    size_t cap[HC_WS_SLOTS];\n"
    "    struct hc_ws *next;\n"
    "    bool idle; /* its thread has exited */\n"
    "} hc_ws;\n"
    "static hc_ws *hc_ws_all; /* every workspace, under hc_ws_lock */\n"
    "static pthread_mutex_t hc_ws_lock = PTHREAD_MUTEX_INITIALIZER;\n"
    "static pthread_once_t hc_ws_once = PTHREAD_ONCE_INIT;\n"
    "/* a thread's workspace is its value of this key (not _Thread_local: LeakSanitizer\n"
    " * crashes on the dynamic TLS of unloaded libraries) */\n"
    "static pthread_key_t hc_ws_key;\n"
    "static bool hc_ws_key_ok;\n"
    "static void hc_ws_thread_exit(void *w) {\n"
    "    pthread_mutex_lock(&hc_ws_lock);\n"
    "    ((hc_ws *)w)->idle = true;\n"
    "    pthread_mutex_unlock(&hc_ws_lock);\n"
    "}\n"
    "static void hc_ws_key_init(void) {\n"
    "    __atomic_store_n(&hc_ws_key_ok, pthread_key_create(&hc_ws_key, hc_ws_thread_exit) == 0,\n"
    "                     __ATOMIC_RELEASE);\n"
    "}\n"
    "__attribute__((destructor)) static void hc_ws_unload(void) {\n"
    "    if (hc_ws_key_ok) pthread_key_delete(hc_ws_key);\n"
    "    pthread_mutex_lock(&hc_ws_lock);\n"
    "    for (hc_ws *w = hc_ws_all, *next; w; w = next) {\n"
    "        next = w->next;\n"
    "        for (int i = 0; i < HC_WS_SLOTS; i++) free(w->buf[i]);\n"
    "        free(w);\n"
    "    }\n"
    "    hc_ws_all = NULL;\n"
    "    pthread_mutex_unlock(&hc_ws_lock);\n"
    "}\n"
    "static inline hc_ws *hc_ws_self(void) {\n"
    "    return __atomic_load_n(&hc_ws_key_ok, __ATOMIC_ACQUIRE) ? pthread_getspecific(hc_ws_key)\n"
    "                                                            : NULL;\n"
    "}\n"
    "/* the calling thread's workspace: an idle one, else a new one; NULL if out of memory\n"
    " * (or of pthread keys) */\n"
    "static hc_ws *hc_ws_take(void) {\n"
    "    pthread_once(&hc_ws_once, hc_ws_key_init);\n"
    "    if (!hc_ws_key_ok) return NULL;\n"
    "    pthread_mutex_lock(&hc_ws_lock);\n"
    "    hc_ws *w = hc_ws_all;\n"
    "    while (w && !w->idle) w = w->next;\n"
    "    if (w) w->idle = false;\n"
    "    else if ((w = calloc(1, sizeof *w))) w->next = hc_ws_all, hc_ws_all = w;\n"
    "    pthread_mutex_unlock(&hc_ws_lock);\n"
    "    if (w) pthread_setspecific(hc_ws_key, w);\n"
    "    return w;\n"
    "}\n"
    "/* slot's buffer of at least `bytes` (a multiple of 64); NULL if out of memory */\n"
    "__attribute__((noinline, cold)) static void *hc_ws_grow(hc_ws *w, int slot, size_t bytes) {\n"
    "    if (!w && !(w = hc_ws_take())) return NULL;\n"
    "    if (w->cap[slot] >= bytes) return w->buf[slot]; /* an idle workspace's */\n"
    "    free(w->buf[slot]); /* first: the old and new buffers are never held together */\n"
    "    /* from 2 MiB: 2 MiB aligned, on transparent huge pages (fewer TLB misses) */\n"
    "    size_t align = bytes >= ((size_t)2 << 20) ? ((size_t)2 << 20) : 64;\n"
    "    w->buf[slot] = aligned_alloc(align, (bytes + align - 1) / align * align);\n"
    "#ifdef MADV_HUGEPAGE\n"
    "    if (w->buf[slot] && align > 64) (void)madvise(w->buf[slot], bytes, MADV_HUGEPAGE);\n"
    "#endif\n"
    "    w->cap[slot] = w->buf[slot] ? bytes : 0;\n"
    "    return w->buf[slot];\n"
    "}\n"
    "static inline void *hc_ws_get(int slot, size_t bytes) {\n"
    "    hc_ws *w = hc_ws_self();\n"
    "    return w && w->cap[slot] >= bytes ? w->buf[slot] : hc_ws_grow(w, slot, bytes);\n"
    "}\n";

/* The tile primitives on AMX (where the compiler targets AMX-TILE and AMX-BF16:
 * -march=native on such a CPU) or emulated in plain C (elsewhere, or with
 * -DHC_AMX_EMULATE: the tests run the same programs on any x86). A process must ask the
 * kernel for the tile state once (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA,
 * Linux 5.16+); the library's host detection does so before it lets a template use AMX
 * (src/target/cpu/host.c), and the first configuration here does too, for kernels loaded
 * by other means. The emulation keeps the eight tiles in the configuring block's stack
 * frame (TILE_CONFIG opens it: the IR puts it in a block around all tile calls).
 * The bf16 split (VSTORE_BF16, VBF16_REST) is GCC vector code on every ISA: it
 * vectorizes to the target's integer instructions. */
static const char prelude_amx[] =
    "#if defined(__AVX512BF16__) && defined(__AVX512F__)\n"
    "#include <immintrin.h>\n"
    "#endif\n"
    "#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && !defined(HC_AMX_EMULATE)\n"
    "#include <immintrin.h>\n"
    "#include <stdio.h>\n"
    "#include <sys/syscall.h>\n"
    "#include <unistd.h>\n"
    "typedef struct {\n"
    "    uint8_t palette, start_row, reserved[14];\n"
    "    uint16_t colsb[16];\n"
    "    uint8_t rows[16];\n"
    "} __attribute__((packed)) hc_tilecfg;\n"
    "static int hc_amx_permitted;\n"
    "static inline void hc_tile_config(void) {\n"
    "    if (!__atomic_load_n(&hc_amx_permitted, __ATOMIC_ACQUIRE)) {\n"
    "        if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */)) {\n"
    "            fputs(\"hidetc: this process may not use AMX tiles (arch_prctl refused)\\n\", stderr);\n"
    "            abort();\n"
    "        }\n"
    "        __atomic_store_n(&hc_amx_permitted, 1, __ATOMIC_RELEASE);\n"
    "    }\n"
    "    hc_tilecfg c;\n"
    "    memset(&c, 0, sizeof c);\n"
    "    c.palette = 1;\n"
    "    for (int i = 0; i < 8; i++) c.rows[i] = 16, c.colsb[i] = 64;\n"
    "    _tile_loadconfig(&c);\n"
    "}\n"
    "#define HC_TILE_CONFIG() hc_tile_config()\n"
    "#define HC_TILE_RELEASE() _tile_release()\n"
    "#define HC_TILE_ZERO(t) _tile_zero(t)\n"
    "#define HC_TILE_LOAD(t, p, s) _tile_loadd(t, p, s)\n"
    "#define HC_TILE_STORE(t, p, s) _tile_stored(t, p, s)\n"
    "#define HC_TILE_DP_BF16(c, a, b) _tile_dpbf16ps(c, a, b)\n"
    "#else\n"
    "#define HC_TILE_CONFIG() \\\n"
    "    unsigned char hc_tiles_[8][1024] __attribute__((aligned(64))); \\\n"
    "    memset(hc_tiles_, 0, sizeof hc_tiles_)\n"
    "#define HC_TILE_RELEASE() (void)hc_tiles_\n"
    "#define HC_TILE_ZERO(t) memset(hc_tiles_[t], 0, 1024)\n"
    "#define HC_TILE_LOAD(t, p, s) hc_tile_move(hc_tiles_[t], 64, p, s)\n"
    "#define HC_TILE_STORE(t, p, s) hc_tile_move(p, s, hc_tiles_[t], 64)\n"
    "#define HC_TILE_DP_BF16(c, a, b) hc_tile_dp_emu(hc_tiles_[c], hc_tiles_[a], hc_tiles_[b])\n"
    "static inline void hc_tile_move(void *d, int64_t ds, const void *s, int64_t ss) {\n"
    "    for (int r = 0; r < 16; r++) memcpy((char *)d + r * ds, (const char *)s + r * ss, 64);\n"
    "}\n"
    "static inline float hc_bf16_value(uint16_t h) {\n"
    "    uint32_t u = (uint32_t)h << 16;\n"
    "    float x;\n"
    "    memcpy(&x, &u, 4);\n"
    "    return x;\n"
    "}\n"
    "/* c[m][n] += sum over p of a[m][2p] b[p][2n] + a[m][2p+1] b[p][2n+1] */\n"
    "static void hc_tile_dp_emu(unsigned char *c, const unsigned char *a, const unsigned char *b) {\n"
    "    float cf[16][16];\n"
    "    uint16_t af[16][32], bf[16][32];\n"
    "    memcpy(cf, c, sizeof cf), memcpy(af, a, sizeof af), memcpy(bf, b, sizeof bf);\n"
    "    for (int m = 0; m < 16; m++)\n"
    "        for (int n = 0; n < 16; n++)\n"
    "            for (int p = 0; p < 16; p++)\n"
    "                cf[m][n] += hc_bf16_value(af[m][2 * p]) * hc_bf16_value(bf[p][2 * n]) +\n"
    "                            hc_bf16_value(af[m][2 * p + 1]) * hc_bf16_value(bf[p][2 * n + 1]);\n"
    "    memcpy(c, cf, sizeof cf);\n"
    "}\n"
    "#endif\n"
    "/* bf16(x) as f32 bits, to nearest even (x not finite, or rounding to infinity: a\n"
    " * value not finite, which the split's users check for) */\n"
    "#define HC_BF16_SPLIT(L) \\\n"
    "static inline hc_u32x##L hc_bf16_bits_##L(hc_f32x##L x) { \\\n"
    "    hc_u32x##L u; \\\n"
    "    memcpy(&u, &x, sizeof u); \\\n"
    "    return (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u; \\\n"
    "} \\\n"
    "static inline void hc_store_bf16_##L(void *p, hc_f32x##L x) { \\\n"
    "    hc_u16x##L h = __builtin_convertvector(hc_bf16_bits_##L(x) >> 16, hc_u16x##L); \\\n"
    "    memcpy(p, &h, sizeof h); \\\n"
    "} \\\n"
    "static inline hc_f32x##L hc_bf16_rest_##L(hc_f32x##L x) { \\\n"
    "    hc_u32x##L b = hc_bf16_bits_##L(x); \\\n"
    "    hc_f32x##L h; \\\n"
    "    memcpy(&h, &b, sizeof h); \\\n"
    "    return x - h; \\\n"
    "} \\\n"
    "static inline hc_f32x##L hc_load_bf16x2_##L(const void *p, int64_t hi) { \\\n"
    "    hc_u32x##L u; \\\n"
    "    hc_f32x##L r; \\\n"
    "    memcpy(&u, p, sizeof u); \\\n"
    "    u = hi ? u & 0xffff0000u : u << 16; \\\n"
    "    memcpy(&r, &u, sizeof r); \\\n"
    "    return r; \\\n"
    "}\n"
    "HC_BF16_SPLIT(4)\n"
    "HC_BF16_SPLIT(8)\n"
    "#if defined(__AVX512BF16__) && defined(__AVX512F__)\n"
    "/* 16 lanes in one VCVTNEPS2BF16 (to nearest even, NaNs quiet, the same values) */\n"
    "static inline void hc_store_bf16_16(void *p, hc_f32x16 x) {\n"
    "    _mm256_storeu_si256((__m256i *)p, (__m256i)_mm512_cvtneps_pbh((__m512)x));\n"
    "}\n"
    "static inline hc_f32x16 hc_bf16_rest_16(hc_f32x16 x) {\n"
    "    __m256i h = (__m256i)_mm512_cvtneps_pbh((__m512)x);\n"
    "    return x - (hc_f32x16)_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);\n"
    "}\n"
    "static inline hc_f32x16 hc_load_bf16x2_16(const void *p, int64_t hi) {\n"
    "    hc_u32x16 u;\n"
    "    hc_f32x16 r;\n"
    "    memcpy(&u, p, sizeof u);\n"
    "    u = hi ? u & 0xffff0000u : u << 16;\n"
    "    memcpy(&r, &u, sizeof r);\n"
    "    return r;\n"
    "}\n"
    "#else\n"
    "HC_BF16_SPLIT(16)\n"
    "#endif\n";

/* immintrin.h is a third of a small kernel's compile time: only include it when used. */
static void emit_prelude(cg *c) {
    bool avx = c->t->caps.isa >= HC_ISA_AVX2 && c->intrinsics;
    hc_sb_printf(c->out, "/* generated by hidetc for target cpu/%s */\n", hc_isa_name(c->t->caps.isa));
    hc_sb_printf(c->out, prelude_common, avx ? "#include <immintrin.h>\n" : "");
    if (avx) hc_sb_puts(c->out, prelude_avx2);
    if (avx && c->t->caps.isa == HC_ISA_AVX512) hc_sb_puts(c->out, prelude_avx512);
    if (c->ws_slots) hc_sb_printf(c->out, prelude_workspace, c->ws_slots);
    /* Every vector type the IR can name; typedefs cost the compiler nothing. */
    static const int lanes[] = {2, 4, 8, 16, 32, 64};
    for (int d = HC_BOOL; d < HC_DTYPE_COUNT; d++) {
        if (d == HC_BF16) continue;
        const char *et = d == HC_BOOL ? "int32_t" : hc_dtype_ctype((hc_dtype)d);
        int bytes = d == HC_BOOL ? 4 : hc_dtype_size((hc_dtype)d);
        for (size_t i = 0; i < HC_ARRAY_LEN(lanes); i++)
            hc_sb_printf(c->out, "typedef %s hc_%sx%d __attribute__((vector_size(%d)));\n", et,
                         hc_dtype_name((hc_dtype)d), lanes[i], bytes * lanes[i]);
    }
    /* emulated where this process cannot run AMX (the kernels run here) */
    if (c->amx && !hc_cpu_amx_usable()) hc_sb_puts(c->out, "#define HC_AMX_EMULATE 1\n");
    if (c->amx) hc_sb_puts(c->out, prelude_amx);
    emit_vmath_helpers(c);
    hc_sb_putc(c->out, '\n');
}

char *hc_emit_c(hc_arena *a, const hc_module *lm, const hc_target *t) {
    hc_sb out, body;
    hc_sb_init(&out), hc_sb_init(&body);
    cg c = {.a = a, .t = t, .out = &body};
    /* helpers first: kernels may call them */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < lm->nfuncs; i++)
            if ((lm->funcs[i]->kind == HC_FN_CPU_HELPER) == (pass == 0))
                emit_func(&c, lm->funcs[i]);
    c.out = &out;
    emit_prelude(&c); /* after the functions: it depends on what they used */
    hc_sb_puts(&out, hc_sb_str(&body));
    hc_sb_free(&body);
    names_reset(&c);
    hc_vec_free(&c.heap);
    return hc_sb_take(&out);
}

char *hc_codegen_c(hc_arena *a, const hc_module *m, const hc_target *t) {
    hc_module *lm = hc_lower_module(a, m);
    hc_error err;
    if (hc_verify_module(lm, &err) != HC_OK) HC_ASSERT_MSG(0, err.msg);
    return hc_emit_c(a, lm, t);
}
