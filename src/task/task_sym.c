/* task_sym.c — Tasks with symbolic extents (dynamic shapes, docs/dynamic.md): the symbol
 * variables, symbol expressions as index expressions, specialization at a binding, the
 * structural comparison that checks an operator's symbolic Task against its static one,
 * and the binding of a program's symbols to a kernel argument. */
#include <pthread.h>
#include <string.h>

#include "task/task.h"

/* ---- symbol variables -------------------------------------------------------------- */
/* One variable per symbol name for the whole process: every Task and program that uses
 * `seq` refers to the same hc_var, so expressions compare by identity as usual. They
 * live as long as the process (a model file's kernels are compiled code and need none). */
typedef struct sym_entry {
    const char *name;
    hc_var *var;
} sym_entry;

static pthread_mutex_t sym_lock = PTHREAD_MUTEX_INITIALIZER;
static hc_arena sym_arena;
static bool sym_arena_ready;
static HC_VEC(sym_entry) sym_table;

/* A C identifier for the name: [A-Za-z0-9_] kept, others '_', prefixed so that it never
 * starts with a digit or clashes with a keyword. */
static const char *ident(hc_arena *a, const char *name) {
    size_t n = strlen(name);
    char *s = hc_arena_alloc(a, n + 3);
    s[0] = 'n', s[1] = '_';
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        s[i + 2] = ok ? c : '_';
    }
    s[n + 2] = 0;
    return s;
}

hc_var *hc_sym_ir_var(const char *name) {
    pthread_mutex_lock(&sym_lock);
    hc_var *v = NULL;
    for (size_t i = 0; i < sym_table.len && !v; i++)
        if (!strcmp(sym_table.data[i].name, name)) v = sym_table.data[i].var;
    if (!v) {
        if (!sym_arena_ready) hc_arena_init(&sym_arena), sym_arena_ready = true;
        v = hc_var_new(&sym_arena, ident(&sym_arena, name), hc_type_scalar(HC_INDEX_TYPE));
        sym_entry e = {hc_arena_strdup(&sym_arena, name), v};
        hc_vec_push(&sym_table, e);
    }
    pthread_mutex_unlock(&sym_lock);
    return v;
}

const char *hc_sym_ir_name(const hc_var *v) {
    if (!v || v->builtin != HC_BUILTIN_NONE || strncmp(v->name, "n_", 2) != 0) return NULL;
    pthread_mutex_lock(&sym_lock);
    const char *name = NULL;
    for (size_t i = 0; i < sym_table.len && !name; i++)
        if (sym_table.data[i].var == v) name = sym_table.data[i].name;
    pthread_mutex_unlock(&sym_lock);
    return name;
}

/* ---- symbol expressions as index expressions --------------------------------------- */
/* floor(x / y) and x mod y with Python's signs from C's truncating / and %. */
static hc_expr *floordiv(hc_arena *a, hc_expr *x, hc_expr *y) {
    hc_expr *q = hc_div(a, x, y), *r = hc_mod(a, x, y), *zero = hc_int(a, 0);
    hc_expr *fix = hc_and(a, hc_binary(a, HC_OP_NE, r, zero),
                          hc_binary(a, HC_OP_NE, hc_lt(a, r, zero), hc_lt(a, y, zero)));
    return hc_sub(a, q, hc_select(a, fix, hc_int(a, 1), zero));
}

static hc_expr *floormod(hc_arena *a, hc_expr *x, hc_expr *y) {
    hc_expr *r = hc_mod(a, x, y), *zero = hc_int(a, 0);
    hc_expr *fix = hc_and(a, hc_binary(a, HC_OP_NE, r, zero),
                          hc_binary(a, HC_OP_NE, hc_lt(a, r, zero), hc_lt(a, y, zero)));
    return hc_add(a, r, hc_select(a, fix, y, zero));
}

static hc_expr *atom_expr(hc_arena *a, const hc_sym *x) {
    switch (x->kind) {
    case HC_SYM_VAR: return hc_ref(a, hc_sym_ir_var(x->name));
    case HC_SYM_FLOORDIV: return floordiv(a, hc_sym_expr(a, x->a), hc_sym_expr(a, x->b));
    case HC_SYM_MOD: return floormod(a, hc_sym_expr(a, x->a), hc_sym_expr(a, x->b));
    case HC_SYM_MIN: return hc_min(a, hc_sym_expr(a, x->a), hc_sym_expr(a, x->b));
    case HC_SYM_MAX: return hc_max(a, hc_sym_expr(a, x->a), hc_sym_expr(a, x->b));
    case HC_SYM_POLY: return hc_sym_expr(a, x);
    }
    hc_unreachable();
}

hc_expr *hc_sym_expr(hc_arena *a, const hc_sym *x) {
    HC_ASSERT(x);
    if (x->kind != HC_SYM_POLY) return atom_expr(a, x);
    hc_expr *sum = NULL;
    for (int i = 0; i < x->nterms; i++) {
        const hc_sym_term *t = &x->terms[i];
        hc_expr *m = NULL;
        for (int k = 0; k < t->nf; k++) {
            hc_expr *f = atom_expr(a, t->f[k]);
            m = m ? hc_mul(a, m, f) : f;
        }
        if (t->coef != 1) m = hc_mul(a, hc_int(a, t->coef), m);
        sum = sum ? hc_add(a, sum, m) : m;
    }
    if (!sum) return hc_int(a, x->c0);
    return x->c0 ? hc_add(a, sum, hc_int(a, x->c0)) : sum;
}

/* ---- tnode helpers ------------------------------------------------------------------ */
hc_tnode *hc_tnode_set_sym(hc_tnode *t, const hc_sym *const *sym) {
    for (int d = 0; d < t->ndim; d++) {
        int64_t c;
        t->sym[d] = sym && sym[d] && !hc_sym_is_const(sym[d], &c) ? sym[d] : NULL;
    }
    return t;
}

hc_expr *hc_tnode_extent(hc_arena *a, const hc_tnode *t, int d) {
    HC_ASSERT(d >= 0 && d < t->ndim);
    return t->sym[d] ? hc_sym_expr(a, t->sym[d]) : hc_int(a, t->shape[d]);
}

const hc_sym *hc_tnode_dim_sym(hc_arena *a, const hc_tnode *t, int d) {
    HC_ASSERT(d >= 0 && d < t->ndim);
    return t->sym[d] ? t->sym[d] : hc_sym_const(a, t->shape[d]);
}

bool hc_tnode_is_symbolic(const hc_tnode *t) {
    for (int d = 0; d < t->ndim; d++)
        if (t->sym[d]) return true;
    return false;
}

bool hc_tnode_dims_equal(const hc_tnode *x, int da, const hc_tnode *y, int db) {
    const hc_sym *sx = x->sym[da], *sy = y->sym[db];
    if (!sx && !sy) return x->shape[da] == y->shape[db];
    return sx && sy && hc_sym_equal(sx, sy);
}

hc_expr *hc_tnode_numel_expr(hc_arena *a, const hc_tnode *t) {
    if (!hc_tnode_is_symbolic(t)) return hc_int(a, hc_tnode_numel(t));
    hc_expr *n = NULL;
    int64_t fixed = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (!t->sym[d]) fixed *= t->shape[d];
        else n = n ? hc_mul(a, n, hc_sym_expr(a, t->sym[d])) : hc_sym_expr(a, t->sym[d]);
    }
    return fixed == 1 ? n : hc_mul(a, n, hc_int(a, fixed));
}

static const hc_sym *numel_sym(hc_arena *a, const hc_tnode *t) {
    const hc_sym *n = hc_sym_const(a, 1);
    for (int d = 0; d < t->ndim; d++) n = hc_sym_mul(a, n, hc_tnode_dim_sym(a, t, d));
    return n;
}

bool hc_tnode_numel_equal(const hc_tnode *x, const hc_tnode *y) {
    if (!hc_tnode_is_symbolic(x) && !hc_tnode_is_symbolic(y))
        return hc_tnode_numel(x) == hc_tnode_numel(y);
    hc_arena a;
    hc_arena_init(&a);
    bool eq = hc_sym_equal(numel_sym(&a, x), numel_sym(&a, y));
    hc_arena_free(&a);
    return eq;
}

/* ---- walking a task ------------------------------------------------------------------ */
typedef struct sym_scan {
    bool found;
} sym_scan;

static hc_expr *scan_cb(hc_mutator *m, hc_expr *e) {
    sym_scan *c = m->ctx;
    if (e->kind == HC_E_REDUCE && e->u.reduce.sext) c->found = true;
    if (e->kind == HC_E_VAR && hc_sym_ir_name(e->u.var)) c->found = true;
    return e;
}

bool hc_task_is_symbolic(const hc_task *t) {
    for (int i = 0; i < t->ninputs; i++)
        if (hc_tnode_is_symbolic(t->inputs[i])) return true;
    hc_arena a;
    hc_arena_init(&a);
    int n;
    hc_tnode **nodes = hc_task_compute_nodes(&a, t, &n);
    sym_scan c = {false};
    hc_mutator m = {.a = &a, .ctx = &c, .expr = scan_cb};
    for (int k = 0; k < n && !c.found; k++) {
        if (hc_tnode_is_symbolic(nodes[k])) c.found = true;
        else hc_mutate_expr(&m, nodes[k]->value);
    }
    hc_arena_free(&a);
    return c.found;
}

/* ---- specialization ------------------------------------------------------------------ */
typedef struct spec_ctx {
    const hc_sym_binding *b;
    int n;
    const hc_tnode **from;
    hc_tnode **to;
    bool failed;
    const char *unbound;
} spec_ctx;

static hc_tnode *spec_lookup(const spec_ctx *c, const hc_tnode *t) {
    for (int i = 0; i < c->n; i++)
        if (c->from[i] == t) return c->to[i];
    return NULL;
}

static bool bound_value(const hc_sym_binding *b, const char *name, int64_t *v) {
    for (int i = 0; i < b->n; i++)
        if (!strcmp(b->names[i], name)) return *v = b->values[i], true;
    return false;
}

static hc_expr *spec_expr_cb(hc_mutator *m, hc_expr *e);

/* An index expression over symbol variables, evaluated under the binding. */
static bool spec_const(spec_ctx *c, hc_arena *a, hc_expr *e, int64_t *v) {
    hc_mutator m = {.a = a, .ctx = c, .expr = spec_expr_cb};
    hc_expr *r = hc_simplify_expr(a, hc_mutate_expr(&m, e));
    return !c->failed && hc_expr_is_const_int(r, v);
}

static hc_expr *spec_expr_cb(hc_mutator *m, hc_expr *e) {
    spec_ctx *c = m->ctx;
    const char *name;
    if (e->kind == HC_E_VAR && (name = hc_sym_ir_name(e->u.var))) {
        int64_t v;
        if (!bound_value(c->b, name, &v)) {
            c->failed = true, c->unbound = name;
            return e;
        }
        return hc_int(m->a, v);
    }
    if (e->kind == HC_E_TENSOR_ACCESS) {
        hc_tnode *t = spec_lookup(c, e->u.access.tensor);
        HC_ASSERT(t);
        return hc_tensor_access(m->a, t, e->u.access.n, e->u.access.idx);
    }
    if (e->kind == HC_E_REDUCE && e->u.reduce.sext) {
        int n = e->u.reduce.naxes;
        int64_t *ext = HC_NEW_ARRAY(m->a, int64_t, n);
        for (int i = 0; i < n; i++) {
            ext[i] = e->u.reduce.extents[i];
            if (e->u.reduce.sext[i] && !spec_const(c, m->a, e->u.reduce.sext[i], &ext[i]))
                c->failed = true;
        }
        return hc_reduce(m->a, e->u.reduce.kind, n, e->u.reduce.axes, ext, e->u.reduce.value);
    }
    return e;
}

static hc_tnode *spec_node(hc_arena *a, spec_ctx *c, const hc_tnode *t, hc_error *err) {
    int64_t shape[HC_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) {
        shape[d] = t->shape[d];
        if (t->sym[d] && !hc_sym_eval(t->sym[d], c->b, &shape[d])) {
            hc_error_set(err, HC_ERR_INVALID, "task node %s: dimension %d (%s) cannot be "
                         "evaluated at this binding", t->name, d, hc_sym_str(a, t->sym[d]));
            return NULL;
        }
        if (shape[d] < 0) {
            hc_error_set(err, HC_ERR_INVALID, "task node %s: dimension %d (%s) is %lld",
                         t->name, d, hc_sym_str(a, t->sym[d]), (long long)shape[d]);
            return NULL;
        }
    }
    if (t->kind == HC_TN_INPUT) return hc_tensor_input(a, t->name, t->dtype, t->ndim, shape);
    hc_mutator m = {.a = a, .ctx = c, .expr = spec_expr_cb};
    hc_expr *v = hc_simplify_expr(a, hc_mutate_expr(&m, t->value));
    if (c->failed) {
        hc_error_set(err, HC_ERR_INVALID, "task node %s: %s%s", t->name,
                     c->unbound ? "symbol not bound: " : "a reduce extent cannot be evaluated",
                     c->unbound ? c->unbound : "");
        return NULL;
    }
    return hc_compute_with_axes(a, t->name, t->ndim, shape, t->axes, v);
}

hc_task *hc_task_specialize(hc_arena *a, const hc_task *t, const hc_sym_binding *b,
                            hc_error *err) {
    int n;
    hc_tnode **nodes = hc_task_compute_nodes(a, t, &n);
    int total = t->ninputs + n;
    spec_ctx c = {.b = b, .from = HC_NEW_ARRAY(a, const hc_tnode *, total + 1),
                  .to = HC_NEW_ARRAY(a, hc_tnode *, total + 1)};
    for (int i = 0; i < total; i++) {
        const hc_tnode *o = i < t->ninputs ? t->inputs[i] : nodes[i - t->ninputs];
        hc_tnode *s = spec_node(a, &c, o, err);
        if (!s) return NULL;
        c.from[c.n] = o, c.to[c.n++] = s;
    }
    hc_tnode **ins = HC_NEW_ARRAY(a, hc_tnode *, t->ninputs + 1);
    hc_tnode **outs = HC_NEW_ARRAY(a, hc_tnode *, t->noutputs + 1);
    for (int i = 0; i < t->ninputs; i++) ins[i] = spec_lookup(&c, t->inputs[i]);
    for (int i = 0; i < t->noutputs; i++) outs[i] = spec_lookup(&c, t->outputs[i]);
    hc_task *r = hc_task_new(a, t->name, t->ninputs, ins, t->noutputs, outs);
    hc_mutator m = {.a = a, .ctx = &c, .expr = spec_expr_cb};
    for (int i = 0; i < t->ninputs; i++) {
        const hc_inverse_map *im = t->inverse[i];
        r->inverse[i] = NULL;
        if (!im) continue;
        hc_expr **idx = HC_NEW_ARRAY(a, hc_expr *, im->noutput_dims + 1);
        for (int k = 0; k < im->noutput_dims; k++)
            idx[k] = hc_simplify_expr(a, hc_mutate_expr(&m, im->output_idx[k]));
        hc_task_set_inverse(a, r, i, im->ninput_axes, im->input_axes, im->noutput_dims, idx);
    }
    return r;
}

/* ---- comparison ---------------------------------------------------------------------- */
typedef struct same_ctx {
    HC_VEC(const hc_var *) vx;
    HC_VEC(const hc_var *) vy;
    HC_VEC(const hc_tnode *) tx;
    HC_VEC(const hc_tnode *) ty;
    const char *why;
} same_ctx;

static bool same_node(same_ctx *c, const hc_tnode *x, const hc_tnode *y);

static bool same_var(same_ctx *c, const hc_var *x, const hc_var *y) {
    for (size_t i = 0; i < c->vx.len; i++)
        if (c->vx.data[i] == x) return c->vy.data[i] == y;
    for (size_t i = 0; i < c->vy.len; i++)
        if (c->vy.data[i] == y) return false;
    return x == y; /* free variables (symbols): the same */
}

static void pair_var(same_ctx *c, const hc_var *x, const hc_var *y) {
    hc_vec_push(&c->vx, x);
    hc_vec_push(&c->vy, y);
}

static bool same_expr(same_ctx *c, const hc_expr *x, const hc_expr *y) {
    if (x == y) return true;
    if (!x || !y || x->kind != y->kind || !hc_type_equal(x->type, y->type)) return false;
    switch (x->kind) {
    case HC_E_CONST: return memcmp(&x->u.c, &y->u.c, sizeof x->u.c) == 0;
    case HC_E_VAR: return same_var(c, x->u.var, y->u.var);
    case HC_E_BINARY:
        return x->u.bin.op == y->u.bin.op && same_expr(c, x->u.bin.a, y->u.bin.a) &&
               same_expr(c, x->u.bin.b, y->u.bin.b);
    case HC_E_UNARY: return x->u.un.op == y->u.un.op && same_expr(c, x->u.un.a, y->u.un.a);
    case HC_E_SELECT:
        return same_expr(c, x->u.sel.cond, y->u.sel.cond) && same_expr(c, x->u.sel.t, y->u.sel.t) &&
               same_expr(c, x->u.sel.f, y->u.sel.f);
    case HC_E_CAST: return same_expr(c, x->u.cast.a, y->u.cast.a);
    case HC_E_CALL:
        if (x->u.call.prim != y->u.call.prim || x->u.call.nargs != y->u.call.nargs) return false;
        for (int i = 0; i < x->u.call.nargs; i++)
            if (!same_expr(c, x->u.call.args[i], y->u.call.args[i])) return false;
        return true;
    case HC_E_LOAD:
    case HC_E_ADDRESS:
        if (x->u.load.n != y->u.load.n || !same_var(c, x->u.load.buf, y->u.load.buf)) return false;
        for (int i = 0; i < x->u.load.n; i++)
            if (!same_expr(c, x->u.load.idx[i], y->u.load.idx[i])) return false;
        return true;
    case HC_E_TENSOR_ACCESS:
        if (x->u.access.n != y->u.access.n ||
            !same_node(c, x->u.access.tensor, y->u.access.tensor))
            return false;
        for (int i = 0; i < x->u.access.n; i++)
            if (!same_expr(c, x->u.access.idx[i], y->u.access.idx[i])) return false;
        return true;
    case HC_E_REDUCE: {
        int n = x->u.reduce.naxes;
        if (x->u.reduce.kind != y->u.reduce.kind || n != y->u.reduce.naxes) return false;
        for (int i = 0; i < n; i++) {
            bool sx = x->u.reduce.sext && x->u.reduce.sext[i];
            bool sy = y->u.reduce.sext && y->u.reduce.sext[i];
            if (sx != sy || (!sx && x->u.reduce.extents[i] != y->u.reduce.extents[i]) ||
                (sx && !same_expr(c, x->u.reduce.sext[i], y->u.reduce.sext[i]))) {
                c->why = "a reduction's extent differs";
                return false;
            }
            pair_var(c, x->u.reduce.axes[i], y->u.reduce.axes[i]);
        }
        return same_expr(c, x->u.reduce.value, y->u.reduce.value);
    }
    }
    return false;
}

static bool same_shape(const hc_tnode *x, const hc_tnode *y) {
    if (x->kind != y->kind || x->dtype != y->dtype || x->ndim != y->ndim) return false;
    for (int d = 0; d < x->ndim; d++)
        if (!hc_tnode_dims_equal(x, d, y, d)) return false;
    return true;
}

static bool same_node(same_ctx *c, const hc_tnode *x, const hc_tnode *y) {
    for (size_t i = 0; i < c->tx.len; i++)
        if (c->tx.data[i] == x) return c->ty.data[i] == y;
    if (!same_shape(x, y)) {
        c->why = "a tensor's shape differs";
        return false;
    }
    hc_vec_push(&c->tx, x);
    hc_vec_push(&c->ty, y);
    if (x->kind == HC_TN_INPUT) return true;
    for (int d = 0; d < x->ndim; d++) pair_var(c, x->axes[d], y->axes[d]);
    hc_arena a;
    hc_arena_init(&a);
    bool eq = same_expr(c, hc_simplify_expr(&a, x->value), hc_simplify_expr(&a, y->value));
    hc_arena_free(&a);
    if (!eq && !c->why) c->why = "a value differs";
    return eq;
}

bool hc_task_same(const hc_task *x, const hc_task *y, const char **why) {
    same_ctx c = {0};
    bool eq = x->ninputs == y->ninputs && x->noutputs == y->noutputs;
    if (!eq) c.why = "the inputs or outputs differ";
    for (int i = 0; eq && i < x->ninputs; i++) eq = same_node(&c, x->inputs[i], y->inputs[i]);
    for (int i = 0; eq && i < x->noutputs; i++) eq = same_node(&c, x->outputs[i], y->outputs[i]);
    if (why) *why = eq ? NULL : c.why ? c.why : "they differ";
    hc_vec_free(&c.vx);
    hc_vec_free(&c.vy);
    hc_vec_free(&c.tx);
    hc_vec_free(&c.ty);
    return eq;
}

/* ---- the symbols a program uses ---------------------------------------------------- */
typedef struct sym_uses {
    HC_VEC(hc_var *) vars;
} sym_uses;

static hc_expr *collect_symbol(hc_mutator *m, hc_expr *e) {
    sym_uses *c = m->ctx;
    if (e->kind == HC_E_VAR && hc_sym_ir_name(e->u.var)) {
        for (size_t i = 0; i < c->vars.len; i++)
            if (c->vars.data[i] == e->u.var) return e;
        hc_vec_push(&c->vars, e->u.var);
    }
    return e;
}

hc_func *hc_func_with_symbols(hc_arena *a, const hc_func *f, const char *const *names,
                              const int *slots, int n) {
    if (n <= 0) return (hc_func *)f;
    hc_var **ps = HC_NEW_ARRAY(a, hc_var *, f->nparams + n + 1);
    memcpy(ps, f->params, sizeof(hc_var *) * (size_t)f->nparams);
    for (int j = 0; j < n; j++) ps[f->nparams + j] = hc_sym_ir_var(names[slots[j]]);
    hc_func *g = HC_NEW(a, hc_func);
    *g = *f;
    g->nparams += n, g->params = ps;
    return g;
}

int hc_program_symbols(hc_arena *a, const hc_func *f, int nsyms, const char *const *names,
                       int *slots, hc_error *err) {
    sym_uses c = {0};
    hc_mutator m = {.a = a, .ctx = &c, .expr = collect_symbol};
    hc_mutate_stmt(&m, f->body);
    for (int i = 0; i < f->nparams; i++) { /* buffer shapes name them too */
        const hc_type *t = f->params[i]->type;
        for (int d = 0; t->kind == HC_TY_TENSOR && d < t->ndim; d++) hc_mutate_expr(&m, t->shape[d]);
    }
    int n = 0;
    for (int k = 0; k < nsyms; k++) /* in the model's order */
        for (size_t i = 0; i < c.vars.len; i++)
            if (!strcmp(names[k], hc_sym_ir_name(c.vars.data[i]))) slots[n++] = k;
    if (n != (int)c.vars.len) {
        for (size_t i = 0; i < c.vars.len; i++) {
            bool known = false;
            for (int k = 0; k < nsyms; k++) known |= !strcmp(names[k], hc_sym_ir_name(c.vars.data[i]));
            if (!known)
                hc_error_set(err, HC_ERR_INVALID, "program %s uses the symbol '%s', which the "
                             "model does not have", f->name, hc_sym_ir_name(c.vars.data[i]));
        }
        n = -1;
    }
    hc_vec_free(&c.vars);
    return n;
}
