/* lower.c — the lowering pipeline that code generation runs on every function:
 *   1. task mappings -> loops (hc_lower_mappings)
 *   2. full unrolling of UNROLL loops with factor 0 and a constant extent
 *   3. simplification
 *   4. register promotion: a REGISTER tensor whose every access has a constant flat
 *      offset becomes one scalar (or vector) variable per element, so that the C
 *      compiler keeps e.g. a micro-kernel's accumulator tile in registers
 *   5. simplification again */
#include "ir/ir.h"
#include "ir/mapping.h"

#include <string.h>

/* Integer value of an expression built from integer constants only. Promotion and
 * unrolling decide on it directly, so they do not depend on how far the simplifier
 * folds. */
static bool eval_const(const hc_expr *e, int64_t *out) {
    if (hc_expr_is_const_int(e, out)) return true;
    int64_t x, y;
    if (e->kind == HC_E_CAST && hc_dtype_is_int(e->type->dtype) && e->type->kind == HC_TY_SCALAR)
        return eval_const(e->u.cast.a, out);
    if (e->kind == HC_E_UNARY && e->u.un.op == HC_OP_NEG && eval_const(e->u.un.a, &x)) {
        *out = -x;
        return true;
    }
    if (e->kind != HC_E_BINARY || !eval_const(e->u.bin.a, &x) || !eval_const(e->u.bin.b, &y))
        return false;
    switch (e->u.bin.op) {
    case HC_OP_ADD: *out = x + y; return true;
    case HC_OP_SUB: *out = x - y; return true;
    case HC_OP_MUL: *out = x * y; return true;
    case HC_OP_DIV: if (y == 0) return false; *out = x / y; return true;
    case HC_OP_MOD: if (y == 0) return false; *out = x % y; return true;
    case HC_OP_MIN: *out = HC_MIN(x, y); return true;
    case HC_OP_MAX: *out = HC_MAX(x, y); return true;
    case HC_OP_BITAND: *out = x & y; return true;
    case HC_OP_BITOR: *out = x | y; return true;
    case HC_OP_BITXOR: *out = x ^ y; return true;
    default: return false;
    }
}

/* ---- renaming of the variables a statement defines ------------------------------- */
/* Each unrolled copy of a loop body needs its own variables: a name declared twice in
 * one C block is an error, and the verifier rejects double definitions. */
typedef struct rename_map {
    HC_VEC(hc_var *) from;
    HC_VEC(hc_var *) to;
} rename_map;

static hc_var *renamed(const rename_map *r, hc_var *v) {
    for (size_t i = 0; i < r->from.len; i++)
        if (r->from.data[i] == v) return r->to.data[i];
    return v;
}

static void add_def(hc_arena *a, rename_map *r, hc_var *v) {
    if (renamed(r, v) != v) return;
    hc_vec_push(&r->from, v);
    hc_vec_push(&r->to, hc_var_new(a, v->name, v->type));
}

static void collect_defs(hc_arena *a, rename_map *r, const hc_stmt *s) {
    if (!s) return;
    switch (s->kind) {
    case HC_S_SEQ:
        for (int i = 0; i < s->u.seq.n; i++) collect_defs(a, r, s->u.seq.stmts[i]);
        return;
    case HC_S_DECLARE: add_def(a, r, s->u.decl.var); return;
    case HC_S_LET:
        add_def(a, r, s->u.let.var);
        collect_defs(a, r, s->u.let.body);
        return;
    case HC_S_IF:
        collect_defs(a, r, s->u.if_.then_s);
        collect_defs(a, r, s->u.if_.else_s);
        return;
    case HC_S_FOR:
        add_def(a, r, s->u.for_.var);
        collect_defs(a, r, s->u.for_.body);
        return;
    case HC_S_FOR_MAPPING:
        for (int i = 0; i < s->u.fmap.nvars; i++) add_def(a, r, s->u.fmap.vars[i]);
        collect_defs(a, r, s->u.fmap.body);
        return;
    default: return;
    }
}

static hc_expr *rename_expr(hc_mutator *m, hc_expr *e) {
    const rename_map *r = m->ctx;
    hc_var *v;
    if (e->kind == HC_E_VAR && (v = renamed(r, e->u.var)) != e->u.var) return hc_ref(m->a, v);
    if ((e->kind == HC_E_LOAD || e->kind == HC_E_ADDRESS) &&
        (v = renamed(r, e->u.load.buf)) != e->u.load.buf) {
        hc_expr *c = HC_NEW(m->a, hc_expr);
        *c = *e;
        c->u.load.buf = v;
        return c;
    }
    return e;
}

static hc_stmt *rename_stmt(hc_mutator *m, hc_stmt *s) {
    const rename_map *r = m->ctx;
    hc_var **slot = NULL;
    hc_stmt *c = HC_NEW(m->a, hc_stmt);
    *c = *s;
    switch (s->kind) {
    case HC_S_DECLARE: slot = &c->u.decl.var; break;
    case HC_S_LET: slot = &c->u.let.var; break;
    case HC_S_ASSIGN: slot = &c->u.assign.var; break;
    case HC_S_STORE: slot = &c->u.store.buf; break;
    case HC_S_FOR: slot = &c->u.for_.var; break;
    case HC_S_FOR_MAPPING: {
        c->u.fmap.vars = HC_NEW_ARRAY(m->a, hc_var *, s->u.fmap.nvars);
        for (int i = 0; i < s->u.fmap.nvars; i++) c->u.fmap.vars[i] = renamed(r, s->u.fmap.vars[i]);
        return c;
    }
    default: return s;
    }
    hc_var *v = renamed(r, *slot);
    if (v == *slot) return s;
    *slot = v;
    return c;
}

/* ---- full unrolling -------------------------------------------------------------- */
static hc_stmt *unroll_copy(hc_arena *a, const hc_stmt *loop, int64_t i) {
    rename_map r = {0};
    collect_defs(a, &r, loop->u.for_.body);
    hc_mutator m = {.a = a, .ctx = &r, .expr = rename_expr, .stmt = rename_stmt};
    hc_stmt *body = hc_mutate_stmt(&m, loop->u.for_.body);
    hc_vec_free(&r.from);
    hc_vec_free(&r.to);
    hc_var *iv = loop->u.for_.var;
    hc_expr *val = hc_int(a, i);
    return hc_subst_stmt(a, body, 1, &iv, &val);
}

/* Post-order callback: inner loops are already unrolled when the outer one is copied. */
static hc_stmt *unroll_cb(hc_mutator *m, hc_stmt *s) {
    int64_t n;
    if (s->kind != HC_S_FOR || s->u.for_.attr.kind != HC_LOOP_UNROLL ||
        s->u.for_.attr.factor != 0 || !eval_const(s->u.for_.extent, &n))
        return s;
    if (n <= 0) return hc_seq(m->a, 0, NULL);
    hc_stmt **copies = HC_NEW_ARRAY(m->a, hc_stmt *, n);
    for (int64_t i = 0; i < n; i++) copies[i] = unroll_copy(m->a, s, i);
    return hc_seq(m->a, (int)n, copies);
}

static hc_stmt *unroll_full(hc_arena *a, hc_stmt *s) {
    hc_mutator m = {.a = a, .stmt = unroll_cb};
    return hc_mutate_stmt(&m, s);
}

/* ---- register promotion ---------------------------------------------------------- */
/* Tensors of more elements stay arrays: that many live values would spill anyway. */
#define MAX_PROMOTED_ELEMS 4096

typedef struct reg_tensor {
    hc_var *var;
    int64_t size;
    bool ok;
    hc_var **elems; /* per flat offset, created for offsets that are used */
} reg_tensor;

typedef struct promo {
    hc_arena *a;
    HC_VEC(reg_tensor) ts;
} promo;

static reg_tensor *find_tensor(promo *p, const hc_var *v) {
    for (size_t i = 0; i < p->ts.len; i++)
        if (p->ts.data[i].var == v) return &p->ts.data[i];
    return NULL;
}

/* Flat offset of an access, or -1 when it is not a constant inside the tensor. */
static int64_t const_offset(hc_arena *a, const reg_tensor *t, int n, hc_expr *const *idx) {
    if (n != t->var->type->ndim) return -1;
    int64_t off;
    if (!eval_const(hc_layout_offset(a, t->var->type->layout, idx), &off)) return -1;
    return off >= 0 && off < t->size ? off : -1;
}

static void note_access(promo *p, hc_var *buf, int n, hc_expr *const *idx, bool address) {
    reg_tensor *t = find_tensor(p, buf);
    if (!t || !t->ok) return;
    int64_t off = address ? -1 : const_offset(p->a, t, n, idx);
    if (off < 0) {
        t->ok = false;
        return;
    }
    if (!t->elems[off]) {
        const hc_type *ty = t->var->type;
        const hc_type *et = ty->lanes > 1 ? hc_type_vector(p->a, ty->dtype, ty->lanes)
                                          : hc_type_scalar(ty->dtype);
        char name[96];
        snprintf(name, sizeof name, "%s_%lld", t->var->name, (long long)off);
        t->elems[off] = hc_var_new(p->a, name, et);
    }
}

static hc_expr *scan_expr(hc_mutator *m, hc_expr *e) {
    promo *p = m->ctx;
    if (e->kind == HC_E_LOAD || e->kind == HC_E_ADDRESS)
        note_access(p, e->u.load.buf, e->u.load.n, e->u.load.idx, e->kind == HC_E_ADDRESS);
    else if (e->kind == HC_E_VAR && find_tensor(p, e->u.var))
        find_tensor(p, e->u.var)->ok = false;
    return e;
}

static hc_stmt *scan_stmt(hc_mutator *m, hc_stmt *s) {
    promo *p = m->ctx;
    if (s->kind == HC_S_DECLARE) {
        const hc_type *t = s->u.decl.var->type;
        int64_t size;
        if (t->kind == HC_TY_TENSOR && t->scope == HC_SCOPE_REGISTER && !s->u.decl.init &&
            eval_const(hc_layout_storage_size(p->a, t->layout), &size) && size > 0 &&
            size <= MAX_PROMOTED_ELEMS && !find_tensor(p, s->u.decl.var)) {
            reg_tensor rt = {s->u.decl.var, size, true, HC_NEW_ARRAY(p->a, hc_var *, size)};
            hc_vec_push(&p->ts, rt);
        }
    } else if (s->kind == HC_S_STORE) {
        note_access(p, s->u.store.buf, s->u.store.n, s->u.store.idx, false);
    }
    return s;
}

/* Scanning is pre-order for declarations (stmt_pre) so uses that follow see them. */
static hc_stmt *scan_pre(hc_mutator *m, hc_stmt *s) {
    if (s->kind == HC_S_DECLARE) scan_stmt(m, s);
    return NULL;
}

static hc_stmt *scan_post(hc_mutator *m, hc_stmt *s) {
    if (s->kind != HC_S_DECLARE) scan_stmt(m, s);
    return s;
}

static reg_tensor *promoted(promo *p, const hc_var *v) {
    reg_tensor *t = find_tensor(p, v);
    return t && t->ok ? t : NULL;
}

static hc_expr *promote_expr(hc_mutator *m, hc_expr *e) {
    promo *p = m->ctx;
    reg_tensor *t;
    if (e->kind == HC_E_LOAD && (t = promoted(p, e->u.load.buf)))
        return hc_ref(m->a, t->elems[const_offset(m->a, t, e->u.load.n, e->u.load.idx)]);
    return e;
}

static hc_stmt *promote_stmt(hc_mutator *m, hc_stmt *s) {
    promo *p = m->ctx;
    reg_tensor *t;
    if (s->kind == HC_S_STORE && (t = promoted(p, s->u.store.buf))) {
        int64_t off = const_offset(m->a, t, s->u.store.n, s->u.store.idx);
        return hc_assign(m->a, t->elems[off], s->u.store.value);
    }
    if (s->kind == HC_S_DECLARE && (t = promoted(p, s->u.decl.var))) {
        HC_VEC(hc_stmt *) decls = {0};
        for (int64_t i = 0; i < t->size; i++)
            if (t->elems[i]) hc_vec_push(&decls, hc_declare(m->a, t->elems[i], NULL));
        hc_stmt *r = hc_seq(m->a, (int)decls.len, decls.data);
        hc_vec_free(&decls);
        return r;
    }
    return s;
}

static hc_stmt *promote_registers(hc_arena *a, hc_stmt *s) {
    promo p = {.a = a};
    hc_mutator scan = {.a = a, .ctx = &p, .expr = scan_expr, .stmt = scan_post,
                       .stmt_pre = scan_pre};
    hc_mutate_stmt(&scan, s);
    hc_mutator rw = {.a = a, .ctx = &p, .expr = promote_expr, .stmt = promote_stmt};
    hc_stmt *r = p.ts.len ? hc_mutate_stmt(&rw, s) : s;
    hc_vec_free(&p.ts);
    return r;
}

/* ---- constant lets ------------------------------------------------------------------ */
/* `let v = c in body` with an integer constant c (an unrolled repeat's position) becomes
 * body with v replaced, top-down so that chains of lets fold in one pass. */
static hc_stmt *fold_let_pre(hc_mutator *m, hc_stmt *s) {
    int64_t c;
    if (s->kind != HC_S_LET || s->u.let.var->type->kind != HC_TY_SCALAR) return NULL;
    hc_expr *v = hc_simplify_expr(m->a, s->u.let.value);
    if (!hc_expr_is_const_int(v, &c) || !hc_dtype_is_int(s->u.let.var->type->dtype)) return NULL;
    hc_stmt *body = hc_subst_stmt(m->a, s->u.let.body, 1, &s->u.let.var,
                                  (hc_expr *[]){hc_cast(m->a, s->u.let.var->type, v)});
    return hc_mutate_stmt(m, body);
}

static hc_stmt *fold_const_lets(hc_arena *a, hc_stmt *s) {
    hc_mutator m = {.a = a, .stmt_pre = fold_let_pre};
    return hc_mutate_stmt(&m, s);
}

/* ---- pipeline -------------------------------------------------------------------- */
hc_func *hc_lower_func(hc_arena *a, const hc_func *f) { return hc_lower_func_with(a, f, false); }

hc_func *hc_lower_func_with(hc_arena *a, const hc_func *f, bool fold_lets) {
    hc_stmt *s = f->body;
    s = hc_lower_mappings(a, s);
    s = unroll_full(a, s);
    s = hc_simplify_stmt(a, s);
    if (fold_lets) s = hc_simplify_stmt(a, fold_const_lets(a, s));
    s = promote_registers(a, s);
    s = hc_simplify_stmt(a, s);
    hc_func *g = HC_NEW(a, hc_func);
    *g = *f;
    g->body = s;
    return g;
}

hc_module *hc_lower_module(hc_arena *a, const hc_module *m) {
    hc_func **fs = HC_NEW_ARRAY(a, hc_func *, m->nfuncs > 0 ? m->nfuncs : 1);
    for (int i = 0; i < m->nfuncs; i++) fs[i] = hc_lower_func(a, m->funcs[i]);
    return hc_module_new(a, m->name, m->nfuncs, fs);
}
