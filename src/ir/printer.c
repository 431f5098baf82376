/* printer.c — the IR's text form (docs/ir.md, "Text form").
 *
 * The output is stable: golden tests compare it byte for byte, so nothing here may depend
 * on addresses or on the process-wide variable ids. Names are assigned per print: the
 * first distinct variable with a given name keeps it, later ones get name_1, name_2, ... */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "task/task.h"

/* ---- per-print naming -------------------------------------------------------------- */
typedef struct name_slot {
    const hc_var *var;
    const char *name;
} name_slot;

typedef struct printer {
    hc_sb *sb;
    name_slot *vars; /* open addressing on the var pointer */
    size_t vcap, vlen;
    char **used; /* open addressing on the name string */
    size_t ucap, ulen;
} printer;

static size_t hash_ptr(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static size_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (size_t)h;
}

static void printer_init(printer *p, hc_sb *sb) { memset(p, 0, sizeof *p), p->sb = sb; }

static void printer_free(printer *p) {
    for (size_t i = 0; i < p->ucap; i++) free(p->used[i]);
    free(p->used);
    free(p->vars);
}

static bool name_used(const printer *p, const char *s) {
    if (!p->ucap) return false;
    for (size_t i = hash_str(s) & (p->ucap - 1);; i = (i + 1) & (p->ucap - 1)) {
        if (!p->used[i]) return false;
        if (!strcmp(p->used[i], s)) return true;
    }
}

/* Stores an owned string (which must not be present yet) in the used-name set. */
static void used_insert(printer *p, char *s) {
    size_t i = hash_str(s) & (p->ucap - 1);
    while (p->used[i]) i = (i + 1) & (p->ucap - 1);
    p->used[i] = s;
    p->ulen++;
}

/* Rehashing moves the strings: variables keep pointing at them. */
static void used_grow(printer *p) {
    char **old = p->used;
    size_t ocap = p->ucap;
    p->ucap = ocap ? 2 * ocap : 64;
    p->used = hc_xcalloc(p->ucap, sizeof(char *));
    p->ulen = 0;
    for (size_t i = 0; i < ocap; i++)
        if (old[i]) used_insert(p, old[i]);
    free(old);
}

static const char *name_add(printer *p, const char *s) {
    if (2 * (p->ulen + 1) > p->ucap) used_grow(p);
    char *copy = hc_xstrdup(s);
    used_insert(p, copy);
    return copy;
}

static void vars_grow(printer *p) {
    name_slot *old = p->vars;
    size_t ocap = p->vcap;
    p->vcap = ocap ? 2 * ocap : 64;
    p->vars = hc_xcalloc(p->vcap, sizeof(name_slot));
    for (size_t k = 0; k < ocap; k++) {
        if (!old[k].var) continue;
        size_t i = hash_ptr(old[k].var) & (p->vcap - 1);
        while (p->vars[i].var) i = (i + 1) & (p->vcap - 1);
        p->vars[i] = old[k];
    }
    free(old);
}

static const char *fresh_name(printer *p, const char *base) {
    if (!name_used(p, base)) return name_add(p, base);
    char buf[256];
    for (int k = 1;; k++) {
        snprintf(buf, sizeof buf, "%.200s_%d", base, k);
        if (!name_used(p, buf)) return name_add(p, buf);
    }
}

static const char *var_name(printer *p, const hc_var *v) {
    /* Every builtin variable object for threadIdx.x is the same hardware register. */
    if (v->builtin != HC_BUILTIN_NONE) return hc_builtin_name(v->builtin);
    if (2 * (p->vlen + 1) > p->vcap) vars_grow(p);
    size_t i = hash_ptr(v) & (p->vcap - 1);
    for (; p->vars[i].var; i = (i + 1) & (p->vcap - 1))
        if (p->vars[i].var == v) return p->vars[i].name;
    p->vars[i].var = v;
    p->vars[i].name = fresh_name(p, v->name && *v->name ? v->name : "v");
    p->vlen++;
    return p->vars[i].name;
}

/* ---- constants and types ------------------------------------------------------------ */
/* Shortest decimal that reads back to the same value, always with a '.' or exponent so
 * it cannot be mistaken for an integer. */
static void put_float(hc_sb *sb, double v, bool single) {
    if (!isfinite(v)) {
        hc_sb_puts(sb, isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
        return;
    }
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        double back = strtod(buf, NULL);
        if (single ? (float)back == (float)v : back == v) break;
    }
    hc_sb_puts(sb, buf);
    if (!strpbrk(buf, ".eE")) hc_sb_puts(sb, ".0");
}

static void print_const(hc_sb *sb, const hc_expr *e) {
    hc_dtype d = e->type->dtype;
    hc_value c = e->u.c;
    switch (d) {
    case HC_I64: hc_sb_printf(sb, "%lld", (long long)c.i); return;
    case HC_BOOL: hc_sb_puts(sb, c.i ? "true" : "false"); return;
    case HC_F32:
        if (!isfinite(c.f)) break;
        put_float(sb, c.f, true);
        hc_sb_putc(sb, 'f');
        return;
    case HC_F64:
        if (!isfinite(c.f)) break;
        put_float(sb, c.f, false);
        return;
    default: break;
    }
    hc_sb_printf(sb, "%s(", hc_dtype_name(d));
    if (hc_dtype_is_float(d)) put_float(sb, c.f, d != HC_F64);
    else if (hc_dtype_is_signed(d)) hc_sb_printf(sb, "%lld", (long long)c.i);
    else hc_sb_printf(sb, "%llu", (unsigned long long)c.u);
    hc_sb_putc(sb, ')');
}

static void print_expr(printer *p, const hc_expr *e);

static void print_list(printer *p, int n, hc_expr *const *xs) {
    for (int i = 0; i < n; i++) {
        if (i) hc_sb_puts(p->sb, ", ");
        print_expr(p, xs[i]);
    }
}

static void print_layout(printer *p, const hc_layout *l) {
    static const char *names[] = {"row_major", "col_major", "strided", "local", "swizzle"};
    if (l->kind == HC_LAYOUT_COMPOSE) {
        print_layout(p, l->outer);
        hc_sb_putc(p->sb, '.');
        print_layout(p, l->inner);
        return;
    }
    hc_sb_printf(p->sb, "%s(", names[l->kind]);
    print_list(p, l->ndim, l->shape);
    if (l->kind == HC_LAYOUT_STRIDED) {
        hc_sb_puts(p->sb, "; strides ");
        print_list(p, l->ndim, l->strides);
    }
    hc_sb_putc(p->sb, ')');
}

/* The default layout (row-major over the tensor's own shape) is left out. */
static bool layout_is_default(const hc_type *t) {
    const hc_layout *l = t->layout;
    if (!l || l->kind != HC_LAYOUT_ROW_MAJOR || l->ndim != t->ndim) return !l;
    for (int i = 0; i < t->ndim; i++)
        if (!hc_expr_equal(l->shape[i], t->shape[i])) return false;
    return true;
}

static void print_type(printer *p, const hc_type *t) {
    switch (t->kind) {
    case HC_TY_SCALAR: hc_sb_puts(p->sb, hc_dtype_name(t->dtype)); return;
    case HC_TY_VECTOR: hc_sb_printf(p->sb, "%sx%d", hc_dtype_name(t->dtype), t->lanes); return;
    case HC_TY_POINTER:
        print_type(p, t->pointee);
        hc_sb_putc(p->sb, '*');
        return;
    case HC_TY_TENSOR:
        hc_sb_printf(p->sb, "tensor<%s, [", hc_dtype_name(t->dtype));
        print_list(p, t->ndim, t->shape);
        hc_sb_printf(p->sb, "], %s", hc_scope_name(t->scope));
        if (!layout_is_default(t)) {
            hc_sb_puts(p->sb, ", ");
            print_layout(p, t->layout);
        }
        hc_sb_putc(p->sb, '>');
        return;
    }
}

/* ---- expressions ------------------------------------------------------------------ */
static void print_call(printer *p, const hc_expr *e) {
    hc_prim pr = e->u.call.prim;
    hc_sb_puts(p->sb, hc_prim_name(pr));
    /* These results are not determined by the arguments' types, so the type is shown. */
    if (pr == HC_PRIM_VLOAD || pr == HC_PRIM_VLOAD_MASK || pr == HC_PRIM_VLOAD_RANGE ||
        pr == HC_PRIM_VLOAD_STRIDED || pr == HC_PRIM_VBROADCAST || pr == HC_PRIM_VLOAD_BYTES ||
        pr == HC_PRIM_VBROADCAST_BYTES) {
        hc_sb_putc(p->sb, '<');
        print_type(p, e->type);
        hc_sb_putc(p->sb, '>');
    }
    hc_sb_putc(p->sb, '(');
    print_list(p, e->u.call.nargs, e->u.call.args);
    hc_sb_putc(p->sb, ')');
}

static void print_reduce(printer *p, const hc_expr *e) {
    int n = e->u.reduce.naxes;
    hc_sb_printf(p->sb, "%s(", hc_reduce_kind_name(e->u.reduce.kind));
    print_expr(p, e->u.reduce.value);
    hc_sb_puts(p->sb, n == 1 ? " for " : " for (");
    for (int i = 0; i < n; i++)
        hc_sb_printf(p->sb, "%s%s", i ? ", " : "", var_name(p, e->u.reduce.axes[i]));
    hc_sb_puts(p->sb, n == 1 ? " in range(" : ") in grid(");
    for (int i = 0; i < n; i++) {
        if (i) hc_sb_puts(p->sb, ", ");
        if (e->u.reduce.sext && e->u.reduce.sext[i]) print_expr(p, e->u.reduce.sext[i]);
        else hc_sb_printf(p->sb, "%lld", (long long)e->u.reduce.extents[i]);
    }
    hc_sb_puts(p->sb, "))");
}

static void print_indexed(printer *p, const char *name, int n, hc_expr *const *idx) {
    hc_sb_printf(p->sb, "%s[", name);
    print_list(p, n, idx);
    hc_sb_putc(p->sb, ']');
}

static void print_expr(printer *p, const hc_expr *e) {
    hc_sb *sb = p->sb;
    if (!e) {
        hc_sb_puts(sb, "<null>");
        return;
    }
    switch (e->kind) {
    case HC_E_CONST: print_const(sb, e); return;
    case HC_E_VAR: hc_sb_puts(sb, var_name(p, e->u.var)); return;
    case HC_E_BINARY: {
        hc_binop op = e->u.bin.op;
        bool fn = op == HC_OP_MIN || op == HC_OP_MAX;
        hc_sb_puts(sb, fn ? hc_binop_symbol(op) : "");
        hc_sb_putc(sb, '(');
        print_expr(p, e->u.bin.a);
        if (fn) hc_sb_puts(sb, ", ");
        else hc_sb_printf(sb, " %s ", hc_binop_symbol(op));
        print_expr(p, e->u.bin.b);
        hc_sb_putc(sb, ')');
        return;
    }
    case HC_E_UNARY:
        hc_sb_printf(sb, "(%s", hc_unop_symbol(e->u.un.op));
        print_expr(p, e->u.un.a);
        hc_sb_putc(sb, ')');
        return;
    case HC_E_SELECT:
        hc_sb_puts(sb, "select(");
        print_expr(p, e->u.sel.cond);
        hc_sb_puts(sb, ", ");
        print_expr(p, e->u.sel.t);
        hc_sb_puts(sb, ", ");
        print_expr(p, e->u.sel.f);
        hc_sb_putc(sb, ')');
        return;
    case HC_E_CAST:
        hc_sb_puts(sb, "cast<");
        print_type(p, e->type);
        hc_sb_puts(sb, ">(");
        print_expr(p, e->u.cast.a);
        hc_sb_putc(sb, ')');
        return;
    case HC_E_CALL: print_call(p, e); return;
    case HC_E_ADDRESS: hc_sb_putc(sb, '&'); /* fall through */
    case HC_E_LOAD:
        print_indexed(p, var_name(p, e->u.load.buf), e->u.load.n, e->u.load.idx);
        return;
    case HC_E_TENSOR_ACCESS: {
        const hc_tnode *t = e->u.access.tensor;
        print_indexed(p, t && t->name ? t->name : "?", e->u.access.n, e->u.access.idx);
        return;
    }
    case HC_E_REDUCE: print_reduce(p, e); return;
    }
}

/* ---- statements ------------------------------------------------------------------- */
static void print_stmt(printer *p, const hc_stmt *s, int ind);

static void print_attr(hc_sb *sb, hc_loop_attr at) {
    if (at.kind == HC_LOOP_SERIAL) return;
    hc_sb_puts(sb, at.kind == HC_LOOP_UNROLL ? " unroll" : " parallel");
    if (at.factor) hc_sb_printf(sb, "(%d)", at.factor);
}

static void print_body(printer *p, const hc_stmt *s, int ind) {
    hc_sb_puts(p->sb, ":\n");
    print_stmt(p, s, ind + 1);
}

static void print_comment(hc_sb *sb, const char *text, int ind) {
    const char *line = text ? text : "";
    for (;;) {
        const char *nl = strchr(line, '\n');
        int len = nl ? (int)(nl - line) : (int)strlen(line);
        hc_sb_indent(sb, ind);
        hc_sb_printf(sb, "#%s%.*s\n", len ? " " : "", len, line);
        if (!nl) break;
        line = nl + 1;
    }
}

static void print_fmap(printer *p, const hc_stmt *s, int ind) {
    int n = s->u.fmap.nvars;
    hc_sb_puts(p->sb, n == 1 ? "for " : "for (");
    for (int i = 0; i < n; i++)
        hc_sb_printf(p->sb, "%s%s", i ? ", " : "", var_name(p, s->u.fmap.vars[i]));
    hc_sb_puts(p->sb, n == 1 ? " in " : ") in ");
    hc_print_mapping(p->sb, s->u.fmap.mapping);
    hc_sb_puts(p->sb, " on ");
    print_expr(p, s->u.fmap.worker);
    print_body(p, s->u.fmap.body, ind);
}

static void print_decl(printer *p, const hc_var *v, const hc_expr *init, const char *kw) {
    hc_sb_printf(p->sb, "%s %s: ", kw, var_name(p, v));
    print_type(p, v->type);
    if (init) {
        hc_sb_puts(p->sb, " = ");
        print_expr(p, init);
    }
}

static void print_stmt(printer *p, const hc_stmt *s, int ind) {
    hc_sb *sb = p->sb;
    if (s && s->kind == HC_S_SEQ && s->u.seq.n > 0) {
        for (int i = 0; i < s->u.seq.n; i++) print_stmt(p, s->u.seq.stmts[i], ind);
        return;
    }
    if (s && s->kind == HC_S_COMMENT) {
        print_comment(sb, s->u.comment.text, ind);
        return;
    }
    hc_sb_indent(sb, ind);
    if (!s || s->kind == HC_S_SEQ) {
        hc_sb_puts(sb, "pass\n");
        return;
    }
    switch (s->kind) {
    case HC_S_SEQ:
    case HC_S_COMMENT: hc_unreachable();
    case HC_S_DECLARE: print_decl(p, s->u.decl.var, s->u.decl.init, "declare"); break;
    case HC_S_LET:
        print_decl(p, s->u.let.var, s->u.let.value, "let");
        print_body(p, s->u.let.body, ind);
        return;
    case HC_S_ASSIGN:
        hc_sb_printf(sb, "%s = ", var_name(p, s->u.assign.var));
        print_expr(p, s->u.assign.value);
        break;
    case HC_S_STORE:
        print_indexed(p, var_name(p, s->u.store.buf), s->u.store.n, s->u.store.idx);
        hc_sb_puts(sb, " = ");
        print_expr(p, s->u.store.value);
        break;
    case HC_S_EVAL: print_expr(p, s->u.eval.e); break;
    case HC_S_IF:
        hc_sb_puts(sb, "if ");
        print_expr(p, s->u.if_.cond);
        print_body(p, s->u.if_.then_s, ind);
        if (!s->u.if_.else_s) return;
        hc_sb_indent(sb, ind);
        hc_sb_puts(sb, "else");
        print_body(p, s->u.if_.else_s, ind);
        return;
    case HC_S_FOR:
        hc_sb_printf(sb, "for %s in range(", var_name(p, s->u.for_.var));
        print_expr(p, s->u.for_.extent);
        hc_sb_putc(sb, ')');
        print_attr(sb, s->u.for_.attr);
        print_body(p, s->u.for_.body, ind);
        return;
    case HC_S_FOR_MAPPING:
        print_fmap(p, s, ind);
        return;
    case HC_S_BARRIER: hc_sb_printf(sb, "barrier(%s)", hc_scope_name(s->u.barrier.scope)); break;
    }
    hc_sb_putc(sb, '\n');
}

/* ---- functions -------------------------------------------------------------------- */
static void print_dims(printer *p, const char *label, hc_expr *const *dims) {
    hc_sb_printf(p->sb, "%s=(", label);
    for (int i = 0; i < 3; i++) {
        if (i) hc_sb_puts(p->sb, ", ");
        if (dims[i]) print_expr(p, dims[i]);
        else hc_sb_putc(p->sb, '1');
    }
    hc_sb_putc(p->sb, ')');
}

static void print_decorator(printer *p, const hc_func *f) {
    static const char *kinds[] = {"cpu_kernel", "cpu_helper", "cuda_kernel", "cuda_device"};
    hc_sb_printf(p->sb, "@%s", kinds[f->kind]);
    if (f->kind == HC_FN_CUDA_KERNEL) {
        hc_sb_putc(p->sb, '(');
        print_dims(p, "grid", f->grid_dim);
        hc_sb_puts(p->sb, ", ");
        print_dims(p, "block", f->block_dim);
        if (f->shared_bytes) hc_sb_printf(p->sb, ", shared_bytes=%d", f->shared_bytes);
        hc_sb_putc(p->sb, ')');
    }
    hc_sb_putc(p->sb, '\n');
}

static void print_func(printer *p, const hc_func *f) {
    print_decorator(p, f);
    hc_sb_printf(p->sb, "def %s(", f->name);
    for (int i = 0; i < f->nparams; i++) {
        hc_sb_printf(p->sb, "%s%s: ", i ? ", " : "", var_name(p, f->params[i]));
        print_type(p, f->params[i]->type);
    }
    hc_sb_putc(p->sb, ')');
    if (f->ret && !hc_type_is_scalar(f->ret, HC_VOID)) {
        hc_sb_puts(p->sb, " -> ");
        print_type(p, f->ret);
    }
    print_body(p, f->body, 0);
}

/* ---- public entry points ---------------------------------------------------------- */
void hc_print_expr(hc_sb *sb, const hc_expr *e) {
    printer p;
    printer_init(&p, sb);
    print_expr(&p, e);
    printer_free(&p);
}

void hc_print_stmt(hc_sb *sb, const hc_stmt *s, int indent) {
    printer p;
    printer_init(&p, sb);
    print_stmt(&p, s, indent);
    printer_free(&p);
}

void hc_print_type(hc_sb *sb, const hc_type *t) {
    printer p;
    printer_init(&p, sb);
    print_type(&p, t);
    printer_free(&p);
}

void hc_print_func(hc_sb *sb, const hc_func *f) {
    printer p;
    printer_init(&p, sb);
    print_func(&p, f);
    printer_free(&p);
}

/* One naming scope per function: names in different functions are independent. */
void hc_print_module(hc_sb *sb, const hc_module *m) {
    hc_sb_printf(sb, "module %s\n", m->name ? m->name : "");
    for (int i = 0; i < m->nfuncs; i++) {
        hc_sb_putc(sb, '\n');
        hc_print_func(sb, m->funcs[i]);
    }
}
