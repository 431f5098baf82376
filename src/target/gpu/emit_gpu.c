/* emit_gpu.c — lowered GPU kernels as CUDA C or OpenCL C: one printer, a dialect table.
 *
 *   what              CUDA C                              OpenCL C
 *   kernel            extern "C" __global__               __kernel + reqd_work_group_size
 *   buffer param      T *__restrict__ p                   __global T *p_b, ulong p_o (gpu.h)
 *   thread / block    threadIdx.x / blockIdx.x            get_local_id(0) / get_group_id(0)
 *   shared tensor     __shared__ T s[n]                   __local T s[n] (hoisted to the
 *                                                         kernel's scope, as 1.2 requires)
 *   barrier           __syncthreads()                     barrier(CLK_LOCAL_MEM_FENCE)
 *   i64 / bool        long long / bool                    long / uchar
 *   f32 math          expf, rsqrtf, ...                   exp, rsqrt, ... (overloaded)
 *
 * Semantics follow the CPU emitter's (emit_c.c) for every scalar operation: operands are
 * promoted to the IR's common type, sub-int results narrowed back, min/max are
 * `a < b ? a : b` (NaNs as the reference interpreter has them), float % is fmod, casts to
 * bool are `!= 0`. Vector types are not used by GPU programs yet (a program with one is
 * a compiler bug here: assert). The launch table (gpu.h) comes first in the source. */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "target/gpu/gpu.h"

typedef struct memo_ent {
    const hc_expr *e;
    bool v;
} memo_ent;

typedef struct gcg {
    hc_arena *a;
    hc_gpu_dialect d;
    hc_sb *out;
    int indent;
    HC_VEC(const hc_var *) names; /* per kernel: index = the name's number */
    /* 32-bit index arithmetic (see "indices" below) */
    bool narrow;                  /* this kernel's indices fit in int */
    HC_VEC(const hc_var *) ivars; /* its variables that hold indices */
    memo_ent *memo;               /* idx() by expression, open addressing */
    size_t memo_cap, memo_used;
    bool want_int;                /* the expression being emitted computes in int */
} gcg;

static void emit_expr(gcg *c, hc_sb *sb, const hc_expr *e);
static void emit_stmt(gcg *c, const hc_stmt *s);

static bool cuda(const gcg *c) { return c->d == HC_GPU_CUDA; }

static const char *var_name(gcg *c, const hc_var *v) {
    size_t i = 0;
    for (; i < c->names.len && c->names.data[i] != v; i++) {}
    if (i == c->names.len) hc_vec_push(&c->names, v);
    hc_sb sb;
    hc_sb_init(&sb);
    const char *n = v->name ? v->name : "v";
    if (!((*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z'))) hc_sb_putc(&sb, 'v');
    for (int k = 0; n[k] && k < 40; k++) {
        char ch = n[k];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        hc_sb_putc(&sb, ok ? ch : '_');
    }
    hc_sb_printf(&sb, "_%zu", i);
    const char *r = hc_arena_strdup(c->a, hc_sb_str(&sb));
    hc_sb_free(&sb);
    return r;
}

static void line(gcg *c, const char *fmt, ...) HC_PRINTF(2, 3);
static void line(gcg *c, const char *fmt, ...) {
    for (int i = 0; i < c->indent; i++) hc_sb_puts(c->out, "    ");
    va_list ap;
    va_start(ap, fmt);
    hc_sb_vprintf(c->out, fmt, ap);
    va_end(ap);
    hc_sb_putc(c->out, '\n');
}

/* ---- indices ----------------------------------------------------------------------- */
/* The IR computes indices in i64. GPUs have no 64-bit integer unit: a 64-bit multiply or
 * divide by a constant is several instructions, and each 64-bit value takes two registers.
 * So where every tensor of a kernel has fewer than 2^28 elements and every loop fewer
 * than 2^28 iterations, index arithmetic is emitted as int. An i64 expression is an index
 * (idx) when it is built from loop and mapping variables, worker builtins, small
 * constants and variables defined only from indices, by + - * / % min max and select;
 * a value loaded from a tensor never is (an i64 tensor's data stays 64-bit, and an index
 * flowing into a 64-bit context is widened). The bound leaves a factor of 8 below 2^31
 * for the intermediate values of offset arithmetic (padding, tails past the end). */
#define NARROW_MAX ((int64_t)1 << 28)

static bool ivar(const gcg *c, const hc_var *v) {
    for (size_t i = 0; i < c->ivars.len; i++)
        if (c->ivars.data[i] == v) return true;
    return false;
}

static bool idx(gcg *c, const hc_expr *e);

static bool small_int(const hc_expr *x) {
    hc_dtype d = x->type->dtype;
    return x->type->kind == HC_TY_SCALAR &&
           (d == HC_I32 || d == HC_I16 || d == HC_I8 || d == HC_U16 || d == HC_U8 || d == HC_BOOL);
}

/* an operand of an index expression: an index, or a narrower integer */
static bool idx_operand(gcg *c, const hc_expr *x) { return small_int(x) || idx(c, x); }

static bool idx_raw(gcg *c, const hc_expr *e) {
    if (!c->narrow || e->type->kind != HC_TY_SCALAR || e->type->dtype != HC_I64) return false;
    switch (e->kind) {
    case HC_E_CONST: return e->u.c.i > INT32_MIN && e->u.c.i <= INT32_MAX;
    case HC_E_VAR: return e->u.var->builtin != HC_BUILTIN_NONE || ivar(c, e->u.var);
    case HC_E_BINARY:
        switch (e->u.bin.op) {
        case HC_OP_ADD: case HC_OP_SUB: case HC_OP_MUL: case HC_OP_DIV: case HC_OP_MOD:
        case HC_OP_MIN: case HC_OP_MAX:
            return idx_operand(c, e->u.bin.a) && idx_operand(c, e->u.bin.b);
        default: return false;
        }
    case HC_E_SELECT: return idx_operand(c, e->u.sel.t) && idx_operand(c, e->u.sel.f);
    case HC_E_CAST: return small_int(e->u.cast.a) || idx(c, e->u.cast.a);
    case HC_E_UNARY: return e->u.un.op == HC_OP_NEG && idx(c, e->u.un.a);
    default: return false;
    }
}

static size_t memo_slot(const gcg *c, const hc_expr *e) {
    size_t h = ((uintptr_t)e >> 4) * 0x9E3779B97F4A7C15ull, i = h & (c->memo_cap - 1);
    while (c->memo[i].e && c->memo[i].e != e) i = (i + 1) & (c->memo_cap - 1);
    return i;
}

static bool idx(gcg *c, const hc_expr *e) {
    if (!c->narrow || e->type->kind != HC_TY_SCALAR || e->type->dtype != HC_I64) return false;
    if (!c->memo) return idx_raw(c, e); /* while the variables are being classified */
    if (2 * (c->memo_used + 1) > c->memo_cap) {
        memo_ent *old = c->memo;
        size_t oc = c->memo_cap;
        c->memo_cap *= 2;
        c->memo = hc_xcalloc(c->memo_cap, sizeof *c->memo);
        for (size_t i = 0; i < oc; i++)
            if (old[i].e) c->memo[memo_slot(c, old[i].e)] = old[i];
        free(old);
    }
    size_t i = memo_slot(c, e);
    if (c->memo[i].e) return c->memo[i].v;
    bool v = idx_raw(c, e);
    i = memo_slot(c, e); /* idx_raw may have grown the table */
    c->memo[i] = (memo_ent){e, v};
    c->memo_used++;
    return v;
}

typedef struct def {
    const hc_var *v;
    const hc_expr *value; /* NULL: a loop variable (always an index) */
} def;
typedef HC_VEC(def) def_vec;

static bool tensor_fits(gcg *c, const hc_type *t) {
    int64_t n = 0;
    hc_expr *size = hc_simplify_expr(c->a, hc_layout_storage_size(c->a, t->layout));
    return hc_expr_is_const_int(size, &n) && n < NARROW_MAX;
}

/* The definitions of the kernel's i64 variables; false when some size rules int out. */
static bool scan_defs(gcg *c, const hc_stmt *s, def_vec *ds) {
    if (!s) return true;
    int64_t n;
    switch (s->kind) {
    case HC_S_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            if (!scan_defs(c, s->u.seq.stmts[i], ds)) return false;
        return true;
    case HC_S_DECLARE: {
        const hc_var *v = s->u.decl.var;
        if (v->type->kind == HC_TY_TENSOR) return tensor_fits(c, v->type);
        if (hc_type_is_scalar(v->type, HC_I64)) hc_vec_push(ds, ((def){v, s->u.decl.init}));
        return true;
    }
    case HC_S_LET:
        if (hc_type_is_scalar(s->u.let.var->type, HC_I64))
            hc_vec_push(ds, ((def){s->u.let.var, s->u.let.value}));
        return scan_defs(c, s->u.let.body, ds);
    case HC_S_ASSIGN:
        if (hc_type_is_scalar(s->u.assign.var->type, HC_I64))
            hc_vec_push(ds, ((def){s->u.assign.var, s->u.assign.value}));
        return true;
    case HC_S_IF: return scan_defs(c, s->u.if_.then_s, ds) && scan_defs(c, s->u.if_.else_s, ds);
    case HC_S_FOR:
        if (!hc_expr_is_const_int(s->u.for_.extent, &n) || n >= NARROW_MAX) return false;
        if (hc_type_is_scalar(s->u.for_.var->type, HC_I64))
            hc_vec_push(ds, ((def){s->u.for_.var, NULL}));
        return scan_defs(c, s->u.for_.body, ds);
    default: return true;
    }
}

/* Decides c->narrow and c->ivars for kernel f: every candidate starts as an index, and
 * those defined (anywhere) from a non-index value leave, until none does. */
static void classify_indices(gcg *c, const hc_func *f, int64_t threads) {
    c->ivars.len = 0;
    free(c->memo);
    c->memo = NULL, c->memo_used = 0;
    def_vec ds = {0};
    c->narrow = threads < NARROW_MAX;
    for (int i = 0; i < f->nparams && c->narrow; i++) c->narrow = tensor_fits(c, f->params[i]->type);
    if (c->narrow) c->narrow = scan_defs(c, f->body, &ds);
    for (size_t i = 0; c->narrow && i < ds.len; i++)
        if (!ivar(c, ds.data[i].v)) hc_vec_push(&c->ivars, ds.data[i].v);
    for (bool changed = c->narrow; changed;) {
        changed = false;
        for (size_t i = 0; i < ds.len; i++) {
            const def *d = &ds.data[i];
            if (!d->value || !ivar(c, d->v) || idx_raw(c, d->value)) continue;
            for (size_t k = 0; k < c->ivars.len; k++)
                if (c->ivars.data[k] == d->v) c->ivars.data[k] = c->ivars.data[--c->ivars.len];
            changed = true;
        }
    }
    hc_vec_free(&ds);
    c->memo_cap = 1024;
    c->memo = hc_xcalloc(c->memo_cap, sizeof *c->memo);
}

/* Whether e's operands compute in int: e is an index, or compares two of them. */
static bool int_context(gcg *c, const hc_expr *e) {
    if (idx(c, e)) return true;
    if (!c->narrow || e->kind != HC_E_BINARY || !hc_binop_is_comparison(e->u.bin.op)) return false;
    const hc_expr *x = e->u.bin.a, *y = e->u.bin.b;
    return (idx(c, x) || idx(c, y)) && idx_operand(c, x) && idx_operand(c, y);
}

/* ---- types ------------------------------------------------------------------------- */
static const char *ctype(const gcg *c, hc_dtype t) {
    bool cu = cuda(c);
    switch (t) {
    case HC_BOOL: return cu ? "bool" : "uchar";
    case HC_I8: return cu ? "signed char" : "char";
    case HC_I16: return "short";
    case HC_I32: return "int";
    case HC_I64: return cu ? "long long" : "long";
    case HC_U8: return cu ? "unsigned char" : "uchar";
    case HC_U16: return cu ? "unsigned short" : "ushort";
    case HC_U32: return cu ? "unsigned int" : "uint";
    case HC_U64: return cu ? "unsigned long long" : "ulong";
    case HC_F32: return "float";
    case HC_F64: return "double";
    case HC_F16:
    case HC_BF16: return "float"; /* values are f32 in registers; see half_storage */
    default: HC_ASSERT_MSG(0, "GPU target: unsupported dtype");
    }
    hc_unreachable();
}

/* f16 and bf16 tensors in device memory hold 16-bit patterns (ushort) that loads widen to
 * f32 and stores round back (nearest even) with the prelude's bit conversions: the same
 * in both dialects, with no half arithmetic needed (OpenCL 1.2 has none without
 * cl_khr_fp16). Arithmetic runs in f32 and rounds where a value is cast to the half type
 * or stored, as the reference interpreter rounds at stores. */
static bool is_half(hc_dtype d) { return d == HC_F16 || d == HC_BF16; }
static bool half_storage(const hc_var *buf) {
    return is_half(buf->type->dtype) && buf->type->scope == HC_SCOPE_GLOBAL;
}
static const char *storage_type(const gcg *c, const hc_type *t) {
    return is_half(t->dtype) && t->scope == HC_SCOPE_GLOBAL ? (cuda(c) ? "unsigned short" : "ushort")
                                                            : ctype(c, t->dtype);
}

static const char *type_str(const gcg *c, const hc_type *t) {
    HC_ASSERT_MSG(t->kind == HC_TY_SCALAR || (t->kind == HC_TY_TENSOR && t->lanes <= 1),
                  "GPU target: vector or pointer value in a GPU program");
    return ctype(c, t->dtype);
}

/* The C type of a scalar variable: int for the kernel's index variables. */
static const char *var_type(const gcg *c, const hc_var *v) {
    return ivar(c, v) ? "int" : type_str(c, v->type);
}

static const char *expr_str(gcg *c, const hc_expr *e) {
    hc_sb sb;
    hc_sb_init(&sb);
    emit_expr(c, &sb, e);
    const char *s = hc_arena_strdup(c->a, hc_sb_str(&sb));
    hc_sb_free(&sb);
    return s;
}

static bool needs_narrowing(hc_dtype d) {
    return d == HC_I8 || d == HC_I16 || d == HC_U8 || d == HC_U16 || d == HC_BOOL;
}

/* ---- constants ----------------------------------------------------------------------- */
static void emit_float(const gcg *c, hc_sb *sb, double v, bool f32) {
    if (isnan(v) || isinf(v)) {
        const char *neg = v < 0 ? "-" : "";
        if (cuda(c) && f32) hc_sb_printf(sb, "%s__int_as_float(0x%s)", neg, isnan(v) ? "7fc00000" : "7f800000");
        else if (cuda(c)) hc_sb_printf(sb, "%s__longlong_as_double(0x%sLL)", neg,
                                       isnan(v) ? "7ff8000000000000" : "7ff0000000000000");
        else hc_sb_printf(sb, "%s(%s)%s", neg, f32 ? "float" : "double", isnan(v) ? "NAN" : "INFINITY");
        return;
    }
    char buf[64];
    snprintf(buf, sizeof buf, f32 ? "%.9g" : "%.17g", v);
    if (!strpbrk(buf, ".e")) strcat(buf, ".0");
    hc_sb_printf(sb, "%s%s", buf, f32 ? "f" : "");
}

static void emit_const(const gcg *c, hc_sb *sb, const hc_expr *e) {
    hc_value v = e->u.c;
    hc_dtype d = e->type->dtype;
    const char *l64 = cuda(c) ? "LL" : "L";
    switch (d) {
    case HC_BOOL: hc_sb_printf(sb, "((%s)%d)", ctype(c, d), v.i ? 1 : 0); return;
    case HC_I32:
        if (v.i == INT32_MIN) hc_sb_puts(sb, "(-2147483647 - 1)");
        else hc_sb_printf(sb, "%lld", (long long)v.i);
        return;
    case HC_I64:
        if (v.i == INT64_MIN) hc_sb_printf(sb, "(-9223372036854775807%s - 1)", l64);
        else if (v.i < INT32_MIN || v.i > INT32_MAX) hc_sb_printf(sb, "%lld%s", (long long)v.i, l64);
        else if (c->want_int) hc_sb_printf(sb, "%lld", (long long)v.i);
        else hc_sb_printf(sb, "((%s)%lld)", ctype(c, d), (long long)v.i);
        return;
    case HC_U32: hc_sb_printf(sb, "%lluu", (unsigned long long)(uint32_t)v.u); return;
    case HC_U64: hc_sb_printf(sb, "%llu%s", (unsigned long long)v.u, cuda(c) ? "ULL" : "UL"); return;
    case HC_I8:
    case HC_I16: hc_sb_printf(sb, "((%s)%lld)", ctype(c, d), (long long)v.i); return;
    case HC_U8:
    case HC_U16: hc_sb_printf(sb, "((%s)%llu)", ctype(c, d), (unsigned long long)v.u); return;
    case HC_F32: emit_float(c, sb, v.f, true); return;
    case HC_F64: emit_float(c, sb, v.f, false); return;
    case HC_F16:
    case HC_BF16: emit_float(c, sb, v.f, true); return; /* a value of the type: exact in f32 */
    default: HC_ASSERT_MSG(0, "GPU target: constant of unsupported dtype");
    }
}

/* ---- conversions --------------------------------------------------------------------- */
static void emit_as(gcg *c, hc_sb *sb, const hc_expr *x, hc_dtype to) {
    HC_ASSERT_MSG(x->type->kind == HC_TY_SCALAR, "GPU target: vector value in a GPU program");
    hc_dtype from = x->type->dtype;
    if (to == HC_I64 && c->want_int && (from == HC_I64 ? idx(c, x) : small_int(x))) {
        if (from == HC_I64 || from == HC_I32) emit_expr(c, sb, x); /* int already */
        else {
            hc_sb_puts(sb, "((int)(");
            emit_expr(c, sb, x);
            hc_sb_puts(sb, "))");
        }
    } else if (from == to && to == HC_I64 && idx(c, x)) { /* an index into a 64-bit value */
        hc_sb_printf(sb, "((%s)(", ctype(c, HC_I64));
        emit_expr(c, sb, x);
        hc_sb_puts(sb, "))");
    } else if (from == to) {
        emit_expr(c, sb, x);
    } else if (is_half(to)) { /* the value rounded to the type, kept in f32 */
        hc_sb_puts(sb, to == HC_F16 ? "hc_rh((float)(" : "hc_rb((float)(");
        emit_expr(c, sb, x);
        hc_sb_puts(sb, "))");
    } else if (to == HC_BOOL) {
        hc_sb_printf(sb, "((%s)((", ctype(c, HC_BOOL));
        emit_expr(c, sb, x);
        hc_sb_puts(sb, ") != 0))");
    } else {
        hc_sb_printf(sb, "((%s)(", ctype(c, to));
        emit_expr(c, sb, x);
        hc_sb_puts(sb, "))");
    }
}

/* ---- math ----------------------------------------------------------------------------- */
/* The dialects' math functions are the primitives' own names (overloaded in OpenCL C,
 * suffixed with f for f32 in CUDA), but for three. */
static const char *math_name(hc_prim p) {
    switch (p) {
    case HC_PRIM_ABS: return "fabs";
    case HC_PRIM_ROUND: return "rint"; /* half to even */
    case HC_PRIM_SIGMOID: return "hc_sigmoid";
    default: return hc_prim_is_vector(p) || p == HC_PRIM_ISNAN || p == HC_PRIM_ISINF ? NULL
                                                                                  : hc_prim_name(p);
    }
}

static void emit_math(gcg *c, hc_sb *sb, const hc_expr *e) {
    hc_prim p = e->u.call.prim;
    hc_expr *x = e->u.call.args[0], *y = e->u.call.nargs > 1 ? e->u.call.args[1] : NULL;
    hc_dtype d = x->type->dtype;
    if (p == HC_PRIM_ISNAN || p == HC_PRIM_ISINF) {
        if (!hc_dtype_is_float(d)) {
            hc_sb_printf(sb, "((%s)0)", ctype(c, HC_BOOL));
            return;
        }
        hc_sb_printf(sb, "((%s)(%s(", ctype(c, HC_BOOL), p == HC_PRIM_ISNAN ? "isnan" : "isinf");
        emit_expr(c, sb, x);
        hc_sb_puts(sb, ") != 0))");
        return;
    }
    if (p == HC_PRIM_ABS && !hc_dtype_is_float(d)) {
        hc_sb_printf(sb, "hc_abs_%s(", hc_dtype_name(d));
        emit_expr(c, sb, x);
        hc_sb_putc(sb, ')');
        return;
    }
    const char *fn = math_name(p);
    HC_ASSERT_MSG(fn, "GPU target: unknown math primitive");
    /* integers compute in double and convert back, as on the CPU */
    hc_dtype cd = is_half(d) ? HC_F32 : hc_dtype_is_float(d) ? d : HC_F64;
    bool f32 = cd == HC_F32;
    if (cd != d) hc_sb_printf(sb, "((%s)", ctype(c, d));
    if (!strcmp(fn, "hc_sigmoid")) hc_sb_printf(sb, "hc_sigmoid_%s(", hc_dtype_name(cd));
    else hc_sb_printf(sb, "%s%s(", fn, cuda(c) && f32 ? "f" : "");
    emit_as(c, sb, x, cd);
    if (y) {
        hc_sb_puts(sb, ", ");
        emit_as(c, sb, y, cd);
    }
    hc_sb_putc(sb, ')');
    if (cd != d) hc_sb_putc(sb, ')');
}

/* ---- expressions ---------------------------------------------------------------------- */
static void emit_builtin(gcg *c, hc_sb *sb, const hc_var *v) {
    static const char *const cu[] = {
        [HC_BUILTIN_THREAD_IDX_X] = "threadIdx.x", [HC_BUILTIN_THREAD_IDX_Y] = "threadIdx.y",
        [HC_BUILTIN_THREAD_IDX_Z] = "threadIdx.z", [HC_BUILTIN_BLOCK_IDX_X] = "blockIdx.x",
        [HC_BUILTIN_BLOCK_IDX_Y] = "blockIdx.y",   [HC_BUILTIN_BLOCK_IDX_Z] = "blockIdx.z",
        [HC_BUILTIN_BLOCK_DIM_X] = "blockDim.x",   [HC_BUILTIN_BLOCK_DIM_Y] = "blockDim.y",
        [HC_BUILTIN_BLOCK_DIM_Z] = "blockDim.z",   [HC_BUILTIN_GRID_DIM_X] = "gridDim.x",
        [HC_BUILTIN_GRID_DIM_Y] = "gridDim.y",     [HC_BUILTIN_GRID_DIM_Z] = "gridDim.z",
        [HC_BUILTIN_WARP_ID] = "(threadIdx.x >> 5)", [HC_BUILTIN_LANE_ID] = "(threadIdx.x & 31)",
    };
    static const char *const cl[] = {
        [HC_BUILTIN_THREAD_IDX_X] = "get_local_id(0)", [HC_BUILTIN_THREAD_IDX_Y] = "get_local_id(1)",
        [HC_BUILTIN_THREAD_IDX_Z] = "get_local_id(2)", [HC_BUILTIN_BLOCK_IDX_X] = "get_group_id(0)",
        [HC_BUILTIN_BLOCK_IDX_Y] = "get_group_id(1)",  [HC_BUILTIN_BLOCK_IDX_Z] = "get_group_id(2)",
        [HC_BUILTIN_BLOCK_DIM_X] = "get_local_size(0)", [HC_BUILTIN_BLOCK_DIM_Y] = "get_local_size(1)",
        [HC_BUILTIN_BLOCK_DIM_Z] = "get_local_size(2)", [HC_BUILTIN_GRID_DIM_X] = "get_num_groups(0)",
        [HC_BUILTIN_GRID_DIM_Y] = "get_num_groups(1)",  [HC_BUILTIN_GRID_DIM_Z] = "get_num_groups(2)",
        [HC_BUILTIN_WARP_ID] = "(get_local_id(0) >> 5)", [HC_BUILTIN_LANE_ID] = "(get_local_id(0) & 31)",
    };
    hc_builtin b = v->builtin;
    HC_ASSERT_MSG(b >= HC_BUILTIN_THREAD_IDX_X && b <= HC_BUILTIN_LANE_ID,
                  "GPU target: a CPU builtin in a GPU program");
    hc_sb_printf(sb, "((%s)%s)", c->narrow ? "int" : ctype(c, HC_I64), cuda(c) ? cu[b] : cl[b]);
}

static void emit_index(gcg *c, hc_sb *sb, const hc_var *buf, int n, hc_expr *const *idx);

static void emit_load(gcg *c, hc_sb *sb, const hc_var *buf, int n, hc_expr *const *idx) {
    if (!half_storage(buf)) {
        emit_index(c, sb, buf, n, idx);
        return;
    }
    hc_sb_puts(sb, buf->type->dtype == HC_F16 ? "hc_h2f(" : "hc_b2f(");
    emit_index(c, sb, buf, n, idx);
    hc_sb_putc(sb, ')');
}

static void emit_index(gcg *c, hc_sb *sb, const hc_var *buf, int n, hc_expr *const *idx) {
    HC_ASSERT_MSG(buf->type->kind == HC_TY_TENSOR, "GPU target: load through a pointer");
    HC_ASSERT_MSG(n == buf->type->ndim, "GPU target: index count != tensor rank");
    hc_expr *off = hc_simplify_expr(c->a, hc_layout_offset(c->a, buf->type->layout, idx));
    hc_sb_printf(sb, "%s[", var_name(c, buf));
    emit_expr(c, sb, off);
    hc_sb_putc(sb, ']');
}

static void emit_binary(gcg *c, hc_sb *sb, const hc_expr *e) {
    hc_binop op = e->u.bin.op;
    HC_ASSERT_MSG(e->type->kind == HC_TY_SCALAR && e->u.bin.a->type->kind == HC_TY_SCALAR &&
                      e->u.bin.b->type->kind == HC_TY_SCALAR,
                  "GPU target: vector or pointer arithmetic in a GPU program");
    const hc_type *ot = hc_type_promote(c->a, e->u.bin.a->type, e->u.bin.b->type);
    hc_dtype d = ot->dtype;
    if (op == HC_OP_SHL || op == HC_OP_SHR) d = e->type->dtype;
    if (op == HC_OP_AND || op == HC_OP_OR) d = HC_BOOL;
    if (op == HC_OP_MIN || op == HC_OP_MAX || (op == HC_OP_MOD && hc_dtype_is_float(d))) {
        if (op == HC_OP_MOD) hc_sb_printf(sb, "%s(", cuda(c) && d == HC_F32 ? "fmodf" : "fmod");
        else hc_sb_printf(sb, "hc_%s_%s(", op == HC_OP_MIN ? "min" : "max",
                          hc_dtype_name(d == HC_I64 && c->want_int ? HC_I32 : is_half(d) ? HC_F32 : d));
        emit_as(c, sb, e->u.bin.a, d);
        hc_sb_puts(sb, ", ");
        emit_as(c, sb, e->u.bin.b, d);
        hc_sb_putc(sb, ')');
        return;
    }
    bool cmp = hc_binop_is_comparison(op), logic = op == HC_OP_AND || op == HC_OP_OR;
    bool narrow = !cmp && !logic && needs_narrowing(e->type->dtype);
    if (cmp || logic) hc_sb_printf(sb, "((%s)", ctype(c, HC_BOOL));
    else if (narrow) hc_sb_printf(sb, "((%s)", ctype(c, e->type->dtype));
    hc_sb_putc(sb, '(');
    bool shift = op == HC_OP_SHL || op == HC_OP_SHR;
    if (shift) emit_expr(c, sb, e->u.bin.a);
    else emit_as(c, sb, e->u.bin.a, d);
    hc_sb_printf(sb, " %s ", hc_binop_symbol(op));
    if (shift) emit_expr(c, sb, e->u.bin.b);
    else emit_as(c, sb, e->u.bin.b, d);
    hc_sb_putc(sb, ')');
    if (cmp || logic || narrow) hc_sb_putc(sb, ')');
}

static void emit_unary(gcg *c, hc_sb *sb, const hc_expr *e) {
    const hc_expr *x = e->u.un.a;
    if (e->u.un.op == HC_OP_NOT) {
        hc_sb_printf(sb, "((%s)(!(", ctype(c, HC_BOOL));
        emit_expr(c, sb, x);
        hc_sb_puts(sb, ")))");
        return;
    }
    bool narrow = needs_narrowing(e->type->dtype);
    if (narrow) hc_sb_printf(sb, "((%s)", ctype(c, e->type->dtype));
    hc_sb_printf(sb, "(%s(", hc_unop_symbol(e->u.un.op));
    emit_expr(c, sb, x);
    hc_sb_puts(sb, "))");
    if (narrow) hc_sb_putc(sb, ')');
}

static void emit_expr_in(gcg *c, hc_sb *sb, const hc_expr *e);

static void emit_expr(gcg *c, hc_sb *sb, const hc_expr *e) {
    bool saved = c->want_int;
    c->want_int = int_context(c, e);
    emit_expr_in(c, sb, e);
    c->want_int = saved;
}

static void emit_expr_in(gcg *c, hc_sb *sb, const hc_expr *e) {
    switch (e->kind) {
    case HC_E_CONST: emit_const(c, sb, e); return;
    case HC_E_VAR:
        if (e->u.var->builtin != HC_BUILTIN_NONE) emit_builtin(c, sb, e->u.var);
        else hc_sb_puts(sb, var_name(c, e->u.var));
        return;
    case HC_E_BINARY: emit_binary(c, sb, e); return;
    case HC_E_UNARY: emit_unary(c, sb, e); return;
    case HC_E_SELECT:
        hc_sb_puts(sb, "((");
        emit_expr(c, sb, e->u.sel.cond);
        hc_sb_puts(sb, ") ? ");
        emit_as(c, sb, e->u.sel.t, e->type->dtype);
        hc_sb_puts(sb, " : ");
        emit_as(c, sb, e->u.sel.f, e->type->dtype);
        hc_sb_putc(sb, ')');
        return;
    case HC_E_CAST:
        HC_ASSERT_MSG(e->type->kind == HC_TY_SCALAR, "GPU target: vector cast");
        emit_as(c, sb, e->u.cast.a, e->type->dtype);
        return;
    case HC_E_CALL:
        HC_ASSERT_MSG(!hc_prim_is_vector(e->u.call.prim),
                      "GPU target: vector primitive in a GPU program");
        emit_math(c, sb, e);
        return;
    case HC_E_LOAD: emit_load(c, sb, e->u.load.buf, e->u.load.n, e->u.load.idx); return;
    case HC_E_ADDRESS: HC_ASSERT_MSG(0, "GPU target: address of an element in a GPU program");
    case HC_E_TENSOR_ACCESS:
    case HC_E_REDUCE: HC_ASSERT_MSG(0, "GPU target: task-level expression in a program");
    }
}

/* ---- statements ----------------------------------------------------------------------- */
static void block(gcg *c, const hc_stmt *s) {
    c->indent++;
    if (s) emit_stmt(c, s);
    c->indent--;
}

static int64_t tensor_elems(gcg *c, const hc_type *t) {
    int64_t n = 0;
    hc_expr *size = hc_simplify_expr(c->a, hc_layout_storage_size(c->a, t->layout));
    HC_ASSERT_MSG(hc_expr_is_const_int(size, &n), "GPU target: local tensor of non-constant size");
    return n > 0 ? n : 1;
}

static void emit_declare(gcg *c, const hc_stmt *s) {
    const hc_var *v = s->u.decl.var;
    const hc_type *t = v->type;
    if (t->kind == HC_TY_TENSOR) {
        HC_ASSERT_MSG(t->scope == HC_SCOPE_REGISTER || t->scope == HC_SCOPE_SHARED,
                      "GPU target: a global tensor declared inside a stage");
        if (t->scope == HC_SCOPE_SHARED) return; /* hoisted: emit_shared */
        line(c, "%s %s[%lld];", type_str(c, t), var_name(c, v), (long long)tensor_elems(c, t));
        return;
    }
    if (!s->u.decl.init) line(c, "%s %s;", var_type(c, v), var_name(c, v));
    else line(c, "%s %s = %s;", var_type(c, v), var_name(c, v),
              expr_str(c, hc_cast(c->a, t, s->u.decl.init)));
}

static void emit_shared(gcg *c, const hc_stmt *s) {
    if (!s) return;
    switch (s->kind) {
    case HC_S_SEQ:
        for (int i = 0; i < s->u.seq.n; i++) emit_shared(c, s->u.seq.stmts[i]);
        return;
    case HC_S_DECLARE: {
        const hc_type *t = s->u.decl.var->type;
        if (t->kind == HC_TY_TENSOR && t->scope == HC_SCOPE_SHARED)
            line(c, "%s %s %s[%lld];", cuda(c) ? "__shared__" : "__local", type_str(c, t),
                 var_name(c, s->u.decl.var), (long long)tensor_elems(c, t));
        return;
    }
    case HC_S_LET: emit_shared(c, s->u.let.body); return;
    case HC_S_IF:
        emit_shared(c, s->u.if_.then_s);
        emit_shared(c, s->u.if_.else_s);
        return;
    case HC_S_FOR: emit_shared(c, s->u.for_.body); return;
    default: return;
    }
}

static void emit_comment(gcg *c, const char *text) {
    hc_sb sb;
    hc_sb_init(&sb);
    for (const char *p = text; *p; p++) {
        if (*p == '\n') hc_sb_putc(&sb, ' ');
        else if (p[0] == '*' && p[1] == '/') hc_sb_puts(&sb, "* /"), p++;
        else hc_sb_putc(&sb, *p);
    }
    if (sb.len) line(c, "/* %s */", hc_sb_str(&sb));
    hc_sb_free(&sb);
}

static void emit_stmt(gcg *c, const hc_stmt *s) {
    switch (s->kind) {
    case HC_S_SEQ:
        for (int i = 0; i < s->u.seq.n; i++) emit_stmt(c, s->u.seq.stmts[i]);
        return;
    case HC_S_DECLARE: emit_declare(c, s); return;
    case HC_S_LET: {
        const hc_type *t = s->u.let.var->type;
        line(c, "{");
        line(c, "    const %s %s = %s;", var_type(c, s->u.let.var), var_name(c, s->u.let.var),
             expr_str(c, hc_cast(c->a, t, s->u.let.value)));
        block(c, s->u.let.body);
        line(c, "}");
        return;
    }
    case HC_S_ASSIGN:
        line(c, "%s = %s;", var_name(c, s->u.assign.var),
             expr_str(c, hc_cast(c->a, s->u.assign.var->type, s->u.assign.value)));
        return;
    case HC_S_STORE: {
        const hc_var *buf = s->u.store.buf;
        hc_sb lhs;
        hc_sb_init(&lhs);
        emit_index(c, &lhs, buf, s->u.store.n, s->u.store.idx);
        const char *v = expr_str(c, hc_cast(c->a, hc_type_scalar(buf->type->dtype), s->u.store.value));
        if (half_storage(buf))
            line(c, "%s = %s(%s);", hc_sb_str(&lhs), buf->type->dtype == HC_F16 ? "hc_f2h" : "hc_f2b", v);
        else line(c, "%s = %s;", hc_sb_str(&lhs), v);
        hc_sb_free(&lhs);
        return;
    }
    case HC_S_EVAL: line(c, "(void)(%s);", expr_str(c, s->u.eval.e)); return;
    case HC_S_IF:
        line(c, "if (%s) {", expr_str(c, s->u.if_.cond));
        block(c, s->u.if_.then_s);
        if (s->u.if_.else_s) {
            line(c, "} else {");
            block(c, s->u.if_.else_s);
        }
        line(c, "}");
        return;
    case HC_S_FOR: {
        const char *iv = var_name(c, s->u.for_.var);
        if (s->u.for_.attr.kind == HC_LOOP_UNROLL)
            line(c, s->u.for_.attr.factor > 0 ? "#pragma unroll %d" : "#pragma unroll",
                 s->u.for_.attr.factor);
        line(c, "for (%s %s = 0; %s < %s; %s++) {", var_type(c, s->u.for_.var), iv, iv,
             expr_str(c, s->u.for_.extent), iv);
        block(c, s->u.for_.body);
        line(c, "}");
        return;
    }
    case HC_S_FOR_MAPPING: HC_ASSERT_MSG(0, "GPU target: for-mapping left after lowering");
    case HC_S_BARRIER:
        HC_ASSERT_MSG(s->u.barrier.scope != HC_SCOPE_GLOBAL,
                      "GPU target: a global barrier inside a stage");
        line(c, cuda(c) ? "__syncthreads();" : "barrier(CLK_LOCAL_MEM_FENCE);");
        return;
    case HC_S_COMMENT: emit_comment(c, s->u.comment.text); return;
    }
}

/* ---- kernels and the launch table --------------------------------------------------- */
static int64_t const_dim(const hc_expr *e) {
    int64_t v = 1;
    if (e) HC_ASSERT_MSG(hc_expr_is_const_int(e, &v), "GPU target: non-constant launch size");
    return v;
}

static void emit_kernel(gcg *c, const hc_func *f) {
    c->names.len = 0;
    hc_sb head;
    hc_sb_init(&head);
    int64_t bx = const_dim(f->block_dim[0]), by = const_dim(f->block_dim[1]),
            bz = const_dim(f->block_dim[2]);
    int64_t threads = bx * by * bz;
    for (int d = 0; d < 3; d++) threads *= const_dim(f->grid_dim[d]);
    classify_indices(c, f, threads);
    if (cuda(c))
        hc_sb_printf(&head, "extern \"C\" __global__ void __launch_bounds__(%lld) %s(",
                     (long long)(bx * by * bz), f->name);
    else
        hc_sb_printf(&head, "__kernel __attribute__((reqd_work_group_size(%lld, %lld, %lld))) "
                            "void %s(", (long long)bx, (long long)by, (long long)bz, f->name);
    for (int i = 0; i < f->nparams; i++) {
        const hc_var *p = f->params[i];
        HC_ASSERT_MSG(p->type->kind == HC_TY_TENSOR, "GPU target: a kernel takes buffers only");
        const char *ts = storage_type(c, p->type), *n = var_name(c, p);
        if (i) hc_sb_puts(&head, ", ");
        if (cuda(c)) hc_sb_printf(&head, "%s *__restrict__ %s", ts, n);
        else hc_sb_printf(&head, "__global %s *%s_b, ulong %s_o", ts, n, n);
    }
    hc_sb_puts(&head, ") {");
    line(c, "%s", hc_sb_str(&head));
    hc_sb_free(&head);
    c->indent++;
    if (!cuda(c))
        for (int i = 0; i < f->nparams; i++) {
            const char *ts = storage_type(c, f->params[i]->type), *n = var_name(c, f->params[i]);
            line(c, "__global %s *restrict %s = (__global %s *)((__global char *)%s_b + %s_o);",
                 ts, n, ts, n, n);
        }
    emit_shared(c, f->body);
    emit_stmt(c, f->body);
    c->indent--;
    line(c, "}");
    line(c, "%s", "");
}

/* Helpers for every scalar type: min/max with the IR's NaN behaviour, integer abs. */
static void emit_prelude(gcg *c) {
    if (cuda(c)) {
        line(c, "#define HC_FN __device__ __forceinline__");
    } else {
        line(c, "#ifdef cl_khr_fp64");
        line(c, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable");
        line(c, "#endif");
        line(c, "#define HC_FN static inline");
    }
    static const hc_dtype ts[] = {HC_BOOL, HC_I8, HC_I16, HC_I32, HC_I64, HC_U8,
                                  HC_U16,  HC_U32, HC_U64, HC_F32, HC_F64};
    for (size_t i = 0; i < HC_ARRAY_LEN(ts); i++) {
        const char *t = ctype(c, ts[i]), *n = hc_dtype_name(ts[i]);
        line(c, "HC_FN %s hc_min_%s(%s a, %s b) { return a < b ? a : b; }", t, n, t, t);
        line(c, "HC_FN %s hc_max_%s(%s a, %s b) { return a > b ? a : b; }", t, n, t, t);
        if (hc_dtype_is_int(ts[i]) && hc_dtype_is_signed(ts[i]))
            line(c, "HC_FN %s hc_abs_%s(%s a) { return a < 0 ? (%s)-a : a; }", t, n, t, t);
        else if (!hc_dtype_is_float(ts[i]))
            line(c, "HC_FN %s hc_abs_%s(%s a) { return a; }", t, n, t);
    }
    line(c, "HC_FN float hc_sigmoid_f32(float x) { return 1.0f / (1.0f + %s(-x)); }",
         cuda(c) ? "expf" : "exp");
    /* f16 and bf16 patterns <-> f32, round to nearest even (see half_storage) */
    const char *us = cuda(c) ? "unsigned short" : "ushort", *ui = cuda(c) ? "unsigned int" : "uint";
    const char *asf = cuda(c) ? "__uint_as_float" : "as_float", *asu = cuda(c) ? "__float_as_uint" : "as_uint";
    line(c, "HC_FN float hc_b2f(%s b) { return %s((%s)b << 16); }", us, asf, ui);
    line(c, "HC_FN %s hc_f2b(float f) { %s u = %s(f); if ((u & 0x7fffffffu) > 0x7f800000u) "
            "return (%s)((u >> 16) | 0x40u); u += 0x7fffu + ((u >> 16) & 1u); return (%s)(u >> 16); }",
         us, ui, asu, us, us);
    line(c, "HC_FN float hc_h2f(%s h) { %s s = ((%s)h & 0x8000u) << 16, e = ((%s)h >> 10) & 0x1fu, "
            "m = (%s)h & 0x3ffu; if (e == 0) { float v = (float)m * 5.9604644775390625e-8f; "
            "return s ? -v : v; } if (e == 31) return %s(s | 0x7f800000u | (m << 13)); "
            "return %s(s | ((e + 112u) << 23) | (m << 13)); }", us, ui, ui, ui, ui, asf, asf);
    line(c, "HC_FN %s hc_f2h(float f) { %s u = %s(f), s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu; "
            "if (a > 0x7f800000u) return (%s)(s | 0x7e00u); if (a >= 0x477ff000u) return (%s)(s | "
            "0x7c00u); if (a < 0x38800000u) return (%s)(s | (%s)%s(%s(a) * 16777216.0f)); "
            "return (%s)(s | ((a + 0xc8000000u + 0xfffu + ((a >> 13) & 1u)) >> 13)); }",
         us, ui, asu, us, us, us, ui, cuda(c) ? "rintf" : "rint", asf, us);
    line(c, "HC_FN float hc_rh(float x) { return hc_h2f(hc_f2h(x)); }");
    line(c, "HC_FN float hc_rb(float x) { return hc_b2f(hc_f2b(x)); }");
    line(c, "HC_FN double hc_sigmoid_f64(double x) { return 1.0 / (1.0 + exp(-x)); }");
    line(c, "%s", "");
}

char *hc_gpu_emit(hc_arena *a, const hc_module *lm, hc_gpu_dialect d) {
    hc_sb out;
    hc_sb_init(&out);
    gcg c = {.a = a, .d = d, .out = &out};
    line(&c, "/* %s: generated by hidetc (%s C) */", lm->name, d == HC_GPU_CUDA ? "CUDA" : "OpenCL");
    for (int i = 0; i < lm->nfuncs; i++) { /* the launch table */
        const hc_func *f = lm->funcs[i];
        HC_ASSERT_MSG(f->program, "GPU target: a kernel that is no program's stage");
        if (f->stage == 0) {
            hc_sb_printf(&out, "//@hidetc program %s %d %d", f->program, f->nparams - f->nscratch,
                         f->nscratch);
            for (int s = 0; s < f->nscratch; s++) {
                const hc_type *t = f->params[f->nparams - f->nscratch + s]->type;
                hc_sb_printf(&out, " %lld",
                             (long long)(tensor_elems(&c, t) * hc_dtype_size(t->dtype)));
            }
            hc_sb_putc(&out, '\n');
        }
        hc_sb_printf(&out, "//@hidetc stage %s %s", f->program, f->name);
        for (int k = 0; k < 3; k++) hc_sb_printf(&out, " %lld", (long long)const_dim(f->grid_dim[k]));
        for (int k = 0; k < 3; k++) hc_sb_printf(&out, " %lld", (long long)const_dim(f->block_dim[k]));
        hc_sb_putc(&out, '\n');
    }
    emit_prelude(&c);
    for (int i = 0; i < lm->nfuncs; i++) emit_kernel(&c, lm->funcs[i]);
    hc_vec_free(&c.names);
    hc_vec_free(&c.ivars);
    free(c.memo);
    return hc_sb_take(&out);
}
