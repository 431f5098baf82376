/* task.c — computation definitions: tensor nodes, tasks, derived inverse maps, the
 * concise builders operators are defined with, and the printed form of a task. */
#include "task/task.h"

#include <string.h>

/* ---- nodes ----------------------------------------------------------------------- */
hc_expr *hc_tensor_access(hc_arena *a, const struct hc_tnode *t, int n, hc_expr *const *idx) {
    HC_ASSERT_MSG(n == t->ndim, t->name);
    hc_expr *e = HC_NEW(a, hc_expr);
    e->kind = HC_E_TENSOR_ACCESS;
    e->type = hc_type_scalar(t->dtype);
    e->u.access.tensor = t, e->u.access.n = n;
    e->u.access.idx = hc_arena_memdup(a, idx, sizeof(hc_expr *) * (size_t)n);
    return e;
}

static hc_tnode *tnode_new(hc_arena *a, hc_tnode_kind k, const char *name, hc_dtype dtype,
                           int ndim, const int64_t *shape) {
    HC_ASSERT(ndim >= 0 && ndim <= HC_MAX_DIMS);
    hc_tnode *t = HC_NEW(a, hc_tnode);
    t->kind = k, t->dtype = dtype, t->ndim = ndim;
    t->name = hc_arena_strdup(a, name && *name ? name : "t");
    for (int i = 0; i < ndim; i++) {
        HC_ASSERT_MSG(shape[i] >= 0, t->name);
        t->shape[i] = shape[i];
    }
    return t;
}

hc_tnode *hc_tensor_input(hc_arena *a, const char *name, hc_dtype dtype, int ndim,
                          const int64_t *shape) {
    return tnode_new(a, HC_TN_INPUT, name, dtype, ndim, shape);
}

hc_var *hc_axis(hc_arena *a, const char *name) {
    return hc_var_new(a, name, hc_type_scalar(HC_INDEX_TYPE));
}

/* Readable default axis names: i, j, k, l, ... (the printer disambiguates repeats). */
static const char *const axis_names[HC_MAX_DIMS] = {"i", "j", "k", "l", "m", "n", "o", "p"};

static void make_axes(hc_arena *a, int ndim, hc_var **axes, const char *prefix) {
    for (int i = 0; i < ndim; i++)
        axes[i] = hc_axis(a, prefix ? hc_arena_printf(a, "%s%d", prefix, i) : axis_names[i]);
}

hc_tnode *hc_compute_with_axes(hc_arena *a, const char *name, int ndim, const int64_t *shape,
                               hc_var *const *axes, hc_expr *value) {
    HC_ASSERT_MSG(value && value->type->kind == HC_TY_SCALAR, "compute value must be scalar");
    hc_tnode *t = tnode_new(a, HC_TN_COMPUTE, name, value->type->dtype, ndim, shape);
    t->axes = hc_arena_memdup(a, axes, sizeof(hc_var *) * (size_t)ndim);
    t->value = value;
    return t;
}

hc_tnode *hc_compute(hc_arena *a, const char *name, int ndim, const int64_t *shape,
                     hc_compute_fn f, void *ctx) {
    hc_var *axes[HC_MAX_DIMS];
    HC_ASSERT(ndim >= 0 && ndim <= HC_MAX_DIMS);
    make_axes(a, ndim, axes, NULL);
    return hc_compute_with_axes(a, name, ndim, shape, axes, f(a, axes, ctx));
}

hc_expr *hc_reduce_expr(hc_arena *a, int ndim, const int64_t *shape, hc_compute_fn f, void *ctx,
                        hc_reduce_kind kind) {
    hc_var *axes[HC_MAX_DIMS];
    HC_ASSERT(ndim >= 1 && ndim <= HC_MAX_DIMS);
    make_axes(a, ndim, axes, "r");
    return hc_reduce(a, kind, ndim, axes, shape, f(a, axes, ctx));
}

int64_t hc_tnode_numel(const hc_tnode *n) {
    int64_t s = 1;
    for (int i = 0; i < n->ndim; i++) s *= n->shape[i];
    return s;
}

/* ---- traversal ------------------------------------------------------------------- */
typedef void (*visit_fn)(const hc_expr *e, void *ctx);

/* Pre-order visit of every sub-expression (not through tensor accesses). */
static void walk(const hc_expr *e, visit_fn f, void *ctx) {
    if (!e) return;
    f(e, ctx);
    switch (e->kind) {
    case HC_E_CONST:
    case HC_E_VAR: break;
    case HC_E_BINARY: walk(e->u.bin.a, f, ctx), walk(e->u.bin.b, f, ctx); break;
    case HC_E_UNARY: walk(e->u.un.a, f, ctx); break;
    case HC_E_SELECT:
        walk(e->u.sel.cond, f, ctx), walk(e->u.sel.t, f, ctx), walk(e->u.sel.f, f, ctx);
        break;
    case HC_E_CAST: walk(e->u.cast.a, f, ctx); break;
    case HC_E_CALL:
        for (int i = 0; i < e->u.call.nargs; i++) walk(e->u.call.args[i], f, ctx);
        break;
    case HC_E_LOAD:
    case HC_E_ADDRESS:
        for (int i = 0; i < e->u.load.n; i++) walk(e->u.load.idx[i], f, ctx);
        break;
    case HC_E_TENSOR_ACCESS:
        for (int i = 0; i < e->u.access.n; i++) walk(e->u.access.idx[i], f, ctx);
        break;
    case HC_E_REDUCE: walk(e->u.reduce.value, f, ctx); break;
    }
}

static void find_reduce(const hc_expr *e, void *ctx) {
    if (e->kind == HC_E_REDUCE) *(bool *)ctx = true;
}

bool hc_expr_has_reduce(const hc_expr *e) {
    bool found = false;
    walk(e, find_reduce, &found);
    return found;
}

typedef struct topo_ctx {
    HC_VEC(hc_tnode *) order;
} topo_ctx;

static bool topo_seen(const topo_ctx *c, const hc_tnode *n) {
    for (size_t i = 0; i < c->order.len; i++)
        if (c->order.data[i] == n) return true;
    return false;
}

static void topo_visit(hc_tnode *n, topo_ctx *c);

static void topo_access(const hc_expr *e, void *ctx) {
    if (e->kind == HC_E_TENSOR_ACCESS) topo_visit((hc_tnode *)e->u.access.tensor, ctx);
}

/* Post-order DFS: producers are pushed before their consumers. Values are built before
 * their node, so the graph cannot have cycles. */
static void topo_visit(hc_tnode *n, topo_ctx *c) {
    if (n->kind != HC_TN_COMPUTE || topo_seen(c, n)) return;
    walk(n->value, topo_access, c);
    if (!topo_seen(c, n)) hc_vec_push(&c->order, n);
}

hc_tnode **hc_task_compute_nodes(hc_arena *a, const hc_task *t, int *count) {
    topo_ctx c = {0};
    for (int i = 0; i < t->noutputs; i++) topo_visit(t->outputs[i], &c);
    hc_tnode **out = HC_NEW_ARRAY(a, hc_tnode *, c.order.len + 1);
    if (c.order.len) memcpy(out, c.order.data, sizeof(hc_tnode *) * c.order.len);
    *count = (int)c.order.len;
    hc_vec_free(&c.order);
    return out;
}

bool hc_task_is_injective(const hc_task *t) {
    hc_arena a;
    hc_arena_init(&a);
    int n;
    hc_tnode **nodes = hc_task_compute_nodes(&a, t, &n);
    bool inj = true;
    for (int i = 0; i < n && inj; i++) inj = !hc_expr_has_reduce(nodes[i]->value);
    hc_arena_free(&a);
    return inj;
}

/* ---- tasks and inverse maps ------------------------------------------------------ */
typedef struct access_ctx {
    const hc_tnode *target;
    const hc_expr *first;
    bool mismatch;
} access_ctx;

static void collect_access(const hc_expr *e, void *ctx) {
    access_ctx *c = ctx;
    if (e->kind != HC_E_TENSOR_ACCESS || e->u.access.tensor != c->target) return;
    if (!c->first) c->first = e;
    else if (!hc_expr_equal(c->first, e)) c->mismatch = true;
}

/* perm[p] = output dim whose axis indexes input dim p (-1: a size-1 input dim read at
 * index 0); false unless every element of the output reads a distinct input element and
 * all of the input is read (a bijection: output dims not indexed have size 1). */
static bool access_permutation(const hc_tnode *out, const hc_tnode *in, const hc_expr *acc,
                               int *perm) {
    bool used[HC_MAX_DIMS] = {false};
    for (int p = 0; p < in->ndim; p++) {
        const hc_expr *ix = acc->u.access.idx[p];
        int64_t c;
        perm[p] = -1;
        if (in->shape[p] == 1 && hc_expr_is_const_int(ix, &c) && c == 0) continue;
        for (int k = 0; k < out->ndim && ix->kind == HC_E_VAR; k++)
            if (ix->u.var == out->axes[k] && !used[k]) perm[p] = k;
        if (perm[p] < 0 || in->shape[p] != out->shape[perm[p]]) return false;
        used[perm[p]] = true;
    }
    for (int k = 0; k < out->ndim; k++)
        if (!used[k] && out->shape[k] != 1) return false;
    return true;
}

static void derive_inverse(hc_arena *a, hc_task *t, int input, const hc_expr *value) {
    const hc_tnode *out = t->outputs[0], *in = t->inputs[input];
    access_ctx c = {.target = in};
    walk(value, collect_access, &c);
    int perm[HC_MAX_DIMS];
    if (!c.first || c.mismatch || !access_permutation(out, in, c.first, perm)) return;
    hc_var *in_axes[HC_MAX_DIMS];
    hc_expr *out_idx[HC_MAX_DIMS];
    make_axes(a, in->ndim, in_axes, "x");
    for (int k = 0; k < out->ndim; k++) out_idx[k] = hc_int(a, 0);
    for (int p = 0; p < in->ndim; p++)
        if (perm[p] >= 0) out_idx[perm[p]] = hc_ref(a, in_axes[p]);
    hc_task_set_inverse(a, t, input, in->ndim, in_axes, out->ndim, out_idx);
}

/* Substituting intermediate nodes may grow expressions exponentially; past this many
 * substitutions the inverse maps are not derived. */
#define INLINE_BUDGET 4096

typedef struct inline_ctx {
    int budget;
} inline_ctx;

static hc_expr *inline_cb(hc_mutator *m, hc_expr *e) {
    inline_ctx *c = m->ctx;
    if (e->kind != HC_E_TENSOR_ACCESS || e->u.access.tensor->kind != HC_TN_COMPUTE) return e;
    if (--c->budget < 0) return e;
    const hc_tnode *n = e->u.access.tensor;
    hc_expr *v = hc_subst_expr(m->a, n->value, n->ndim, n->axes, e->u.access.idx);
    return hc_mutate_expr(m, v);
}

/* The output's value with every intermediate node substituted (NULL if too big). */
static hc_expr *inline_all(hc_arena *a, hc_expr *value) {
    inline_ctx c = {INLINE_BUDGET};
    hc_mutator m = {.a = a, .ctx = &c, .expr = inline_cb};
    hc_expr *r = hc_mutate_expr(&m, value);
    return c.budget < 0 ? NULL : r;
}

hc_task *hc_task_new(hc_arena *a, const char *name, int ninputs, hc_tnode *const *inputs,
                     int noutputs, hc_tnode *const *outputs) {
    hc_task *t = HC_NEW(a, hc_task);
    t->name = hc_arena_strdup(a, name && *name ? name : "task");
    t->ninputs = ninputs, t->noutputs = noutputs;
    t->inputs = hc_arena_memdup(a, inputs, sizeof(hc_tnode *) * (size_t)ninputs);
    t->outputs = hc_arena_memdup(a, outputs, sizeof(hc_tnode *) * (size_t)noutputs);
    t->inverse = HC_NEW_ARRAY(a, hc_inverse_map *, ninputs + 1);
    for (int i = 0; i < ninputs; i++) HC_ASSERT_MSG(inputs[i]->kind == HC_TN_INPUT, name);
    for (int i = 0; i < noutputs; i++) HC_ASSERT_MSG(outputs[i]->kind == HC_TN_COMPUTE, name);
    if (noutputs != 1 || !hc_task_is_injective(t)) return t;
    hc_expr *value = inline_all(a, outputs[0]->value);
    for (int i = 0; i < ninputs && value; i++) derive_inverse(a, t, i, value);
    return t;
}

hc_task *hc_task1(hc_arena *a, const char *name, int ninputs, hc_tnode *const *inputs,
                  hc_tnode *out) {
    return hc_task_new(a, name, ninputs, inputs, 1, &out);
}

void hc_task_set_inverse(hc_arena *a, hc_task *t, int input, int ninput_axes,
                         hc_var *const *input_axes, int noutput_dims, hc_expr *const *output_idx) {
    HC_ASSERT(input >= 0 && input < t->ninputs);
    hc_inverse_map *m = HC_NEW(a, hc_inverse_map);
    m->ninput_axes = ninput_axes, m->noutput_dims = noutput_dims;
    m->input_axes = hc_arena_memdup(a, input_axes, sizeof(hc_var *) * (size_t)ninput_axes);
    m->output_idx = hc_arena_memdup(a, output_idx, sizeof(hc_expr *) * (size_t)noutput_dims);
    t->inverse[input] = m;
}

/* ---- concise builders ------------------------------------------------------------ */
hc_expr *hc_at(hc_arena *a, const hc_tnode *t, hc_expr *const *idx) {
    return hc_tensor_access(a, t, t->ndim, idx);
}

hc_expr *hc_at_axes(hc_arena *a, const hc_tnode *t, hc_var *const *axes) {
    hc_expr *idx[HC_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) idx[i] = hc_ref(a, axes[i]);
    return hc_tensor_access(a, t, t->ndim, idx);
}

/* osym: the output's symbolic dims (NULL: unknown). A symbolic input dimension that is
 * not the output's reads select(dim == 1, 0, axis): it may be 1 at run time (the graph's
 * broadcast constraints allow it) or the output's size. */
static hc_expr *at_broadcast(hc_arena *a, const hc_tnode *t, int out_ndim, hc_var *const *axes,
                             const hc_sym *const *osym) {
    HC_ASSERT_MSG(t->ndim <= out_ndim, t->name);
    hc_expr *idx[HC_MAX_DIMS];
    int lead = out_ndim - t->ndim;
    for (int i = 0; i < t->ndim; i++)
        idx[i] = hc_broadcast_index(a, t, i, axes[lead + i], osym ? osym[lead + i] : NULL);
    return hc_tensor_access(a, t, t->ndim, idx);
}

hc_expr *hc_broadcast_index(hc_arena *a, const hc_tnode *t, int d, hc_var *axis,
                            const hc_sym *out_dim) {
    hc_expr *ax = hc_ref(a, axis);
    if (!t->sym[d]) return t->shape[d] == 1 ? hc_int(a, 0) : ax;
    if (out_dim && hc_sym_equal(out_dim, t->sym[d])) return ax;
    return hc_select(a, hc_eq(a, hc_sym_expr(a, t->sym[d]), hc_int(a, 1)), hc_int(a, 0), ax);
}

hc_expr *hc_at_broadcast(hc_arena *a, const hc_tnode *t, int out_ndim, hc_var *const *axes) {
    return at_broadcast(a, t, out_ndim, axes, NULL);
}

/* The symbolic dims of the broadcast of xs (n of them) to nd dims: a fixed size other
 * than 1 wins; else the first symbolic one. */
static void broadcast_sym(int n, const hc_tnode *const *xs, int nd, const hc_sym **out) {
    for (int d = 0; d < nd; d++) {
        out[d] = NULL;
        bool fixed = false;
        for (int i = 0; i < n; i++) {
            int k = xs[i]->ndim - nd + d;
            if (k < 0) continue;
            if (!xs[i]->sym[k]) fixed |= xs[i]->shape[k] != 1;
            else if (!out[d]) out[d] = xs[i]->sym[k];
        }
        if (fixed) out[d] = NULL;
    }
}

static void shape_str(char *buf, size_t cap, int n, const int64_t *s) {
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)s[i]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
}

hc_status hc_broadcast_shape(int nx, const int64_t *sx, int ny, const int64_t *sy, int *nout,
                             int64_t *out, hc_error *err) {
    int n = HC_MAX(nx, ny);
    for (int i = 0; i < n; i++) {
        int ix = nx - n + i, iy = ny - n + i;
        int64_t dx = ix >= 0 ? sx[ix] : 1, dy = iy >= 0 ? sy[iy] : 1;
        if (dx != dy && dx != 1 && dy != 1) {
            char bx[160], by[160];
            shape_str(bx, sizeof bx, nx, sx), shape_str(by, sizeof by, ny, sy);
            return hc_error_set(err, HC_ERR_INVALID, "shapes %s and %s do not broadcast (dim %d)",
                                bx, by, i);
        }
        out[i] = dx == 1 ? dy : dx;
    }
    *nout = n;
    return HC_OK;
}

hc_tnode *hc_compute_map1(hc_arena *a, const char *name, const hc_tnode *x, hc_map1_fn f,
                          void *ctx) {
    hc_var *axes[HC_MAX_DIMS];
    make_axes(a, x->ndim, axes, NULL);
    hc_expr *v = f(a, hc_at_axes(a, x, axes), ctx);
    return hc_tnode_set_sym(hc_compute_with_axes(a, name, x->ndim, x->shape, axes, v), x->sym);
}

hc_tnode *hc_compute_map2(hc_arena *a, const char *name, const hc_tnode *x, const hc_tnode *y,
                          hc_map2_fn f, void *ctx, hc_error *err) {
    int n;
    int64_t shape[HC_MAX_DIMS];
    if (hc_broadcast_shape(x->ndim, x->shape, y->ndim, y->shape, &n, shape, err)) {
        size_t len = strlen(err ? err->msg : "");
        if (err) snprintf(err->msg + len, sizeof err->msg - len, " in %s", name);
        return NULL;
    }
    hc_var *axes[HC_MAX_DIMS];
    const hc_sym *osym[HC_MAX_DIMS];
    make_axes(a, n, axes, NULL);
    broadcast_sym(2, (const hc_tnode *[]){x, y}, n, osym);
    hc_expr *v = f(a, at_broadcast(a, x, n, axes, osym), at_broadcast(a, y, n, axes, osym), ctx);
    return hc_tnode_set_sym(hc_compute_with_axes(a, name, n, shape, axes, v), osym);
}

hc_tnode *hc_compute_mapn(hc_arena *a, const char *name, int n, const hc_tnode *const *xs,
                          hc_mapn_fn f, void *ctx, hc_error *err) {
    int nd = 0;
    int64_t shape[HC_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        int64_t next[HC_MAX_DIMS];
        if (hc_broadcast_shape(nd, shape, xs[i]->ndim, xs[i]->shape, &nd, next, err)) {
            size_t len = strlen(err ? err->msg : "");
            if (err) snprintf(err->msg + len, sizeof err->msg - len, " in %s", name);
            return NULL;
        }
        memcpy(shape, next, sizeof(int64_t) * (size_t)nd);
    }
    hc_var *axes[HC_MAX_DIMS];
    const hc_sym *osym[HC_MAX_DIMS];
    make_axes(a, nd, axes, NULL);
    broadcast_sym(n, xs, nd, osym);
    hc_expr **vals = HC_NEW_ARRAY(a, hc_expr *, n + 1);
    for (int i = 0; i < n; i++) vals[i] = at_broadcast(a, xs[i], nd, axes, osym);
    return hc_tnode_set_sym(hc_compute_with_axes(a, name, nd, shape, axes, f(a, vals, ctx)), osym);
}

hc_tnode *hc_compute_transpose(hc_arena *a, const char *name, const hc_tnode *x,
                               const int *perm, hc_error *err) {
    bool seen[HC_MAX_DIMS] = {false};
    int64_t shape[HC_MAX_DIMS];
    const hc_sym *sym[HC_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) {
        if (perm[d] < 0 || perm[d] >= x->ndim || seen[perm[d]]) {
            hc_error_set(err, HC_ERR_INVALID, "%s: perm[%d] = %d is not a permutation of %d dims",
                         name, d, perm[d], x->ndim);
            return NULL;
        }
        seen[perm[d]] = true;
        shape[d] = x->shape[perm[d]];
        sym[d] = x->sym[perm[d]];
    }
    hc_var *axes[HC_MAX_DIMS];
    hc_expr *idx[HC_MAX_DIMS];
    make_axes(a, x->ndim, axes, NULL);
    for (int d = 0; d < x->ndim; d++) idx[perm[d]] = hc_ref(a, axes[d]);
    return hc_tnode_set_sym(hc_compute_with_axes(a, name, x->ndim, shape, axes, hc_at(a, x, idx)),
                            sym);
}

hc_tnode *hc_compute_reshape(hc_arena *a, const char *name, const hc_tnode *x, int ndim,
                             const int64_t *shape, hc_error *err) {
    return hc_compute_reshape_sym(a, name, x, ndim, shape, NULL, err);
}

hc_tnode *hc_compute_reshape_sym(hc_arena *a, const char *name, const hc_tnode *x, int ndim,
                                 const int64_t *shape, const hc_sym *const *sym, hc_error *err) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    bool symbolic = hc_tnode_is_symbolic(x);
    for (int d = 0; sym && d < ndim; d++) symbolic |= sym[d] != NULL;
    if (symbolic) {
        const hc_sym *ds[HC_MAX_DIMS], *ss[HC_MAX_DIMS], *nd = hc_sym_const(a, 1), *ns = nd;
        for (int d = 0; d < ndim; d++)
            nd = hc_sym_mul(a, nd, ds[d] = sym && sym[d] ? sym[d] : hc_sym_const(a, shape[d]));
        for (int d = 0; d < x->ndim; d++) ns = hc_sym_mul(a, ns, ss[d] = hc_tnode_dim_sym(a, x, d));
        if (ndim < 0 || ndim > HC_MAX_DIMS || !hc_sym_equal(nd, ns)) {
            hc_error_set(err, HC_ERR_INVALID, "%s: cannot reshape %s (%s elements) to %d dims "
                         "of %s elements", name, x->name, hc_sym_str(a, ns), ndim,
                         hc_sym_str(a, nd));
            return NULL;
        }
        hc_var *axes[HC_MAX_DIMS];
        make_axes(a, ndim, axes, NULL);
        hc_expr *ax[HC_MAX_DIMS], *idx[HC_MAX_DIMS];
        for (int d = 0; d < ndim; d++) ax[d] = hc_ref(a, axes[d]);
        hc_reshape_index_sym(a, ndim, ds, ax, x->ndim, ss, idx);
        hc_tnode *t = hc_compute_with_axes(a, name, ndim, shape, axes, hc_at(a, x, idx));
        return hc_tnode_set_sym(t, ds);
    }
    if (ndim < 0 || ndim > HC_MAX_DIMS || n != hc_tnode_numel(x)) {
        hc_error_set(err, HC_ERR_INVALID, "%s: cannot reshape %s (%lld elements) to %d dims "
                     "of %lld elements", name, x->name, (long long)hc_tnode_numel(x), ndim,
                     (long long)n);
        return NULL;
    }
    hc_var *axes[HC_MAX_DIMS];
    make_axes(a, ndim, axes, NULL);
    hc_expr *ax[HC_MAX_DIMS], *idx[HC_MAX_DIMS];
    for (int d = 0; d < ndim; d++) ax[d] = hc_ref(a, axes[d]);
    hc_reshape_index(a, ndim, shape, ax, x->ndim, x->shape, idx);
    return hc_compute_with_axes(a, name, ndim, shape, axes, hc_at(a, x, idx));
}

static bool concat_check(const char *name, int n, const hc_tnode *const *xs, int axis,
                         hc_error *err) {
    if (n < 1 || axis < 0 || axis >= xs[0]->ndim) {
        hc_error_set(err, HC_ERR_INVALID, "%s: bad concat axis or no inputs", name);
        return false;
    }
    for (int i = 1; i < n; i++) {
        bool ok = xs[i]->dtype == xs[0]->dtype && xs[i]->ndim == xs[0]->ndim;
        for (int d = 0; ok && d < xs[0]->ndim; d++)
            ok = d == axis || xs[i]->shape[d] == xs[0]->shape[d];
        if (!ok) {
            hc_error_set(err, HC_ERR_INVALID, "%s: %s does not match %s outside axis %d", name,
                         xs[i]->name, xs[0]->name, axis);
            return false;
        }
    }
    return true;
}

hc_tnode *hc_compute_concat(hc_arena *a, const char *name, int n, const hc_tnode *const *xs,
                            int axis, hc_error *err) {
    if (n >= 1 && axis < 0) axis += xs[0]->ndim;
    if (!concat_check(name, n, xs, axis, err)) return NULL;
    int nd = xs[0]->ndim;
    int64_t shape[HC_MAX_DIMS], off[64];
    if (n > 64) {
        hc_error_set(err, HC_ERR_UNSUPPORTED, "%s: more than 64 inputs", name);
        return NULL;
    }
    memcpy(shape, xs[0]->shape, sizeof(int64_t) * (size_t)nd);
    shape[axis] = 0;
    for (int i = 0; i < n; i++) off[i] = shape[axis], shape[axis] += xs[i]->shape[axis];
    hc_var *axes[HC_MAX_DIMS];
    make_axes(a, nd, axes, NULL);
    hc_expr *idx[HC_MAX_DIMS], *v = NULL;
    for (int d = 0; d < nd; d++) idx[d] = hc_ref(a, axes[d]);
    /* the last input is the fallback; earlier ones are selected by the axis index */
    for (int i = n - 1; i >= 0; i--) {
        idx[axis] = hc_sub(a, hc_ref(a, axes[axis]), hc_int(a, off[i]));
        hc_expr *xi = hc_at(a, xs[i], idx);
        v = v ? hc_select(a, hc_lt(a, hc_ref(a, axes[axis]), hc_int(a, off[i + 1])), xi, v) : xi;
    }
    return hc_compute_with_axes(a, name, nd, shape, axes, v);
}

hc_tnode *hc_compute_slice(hc_arena *a, const char *name, const hc_tnode *x,
                           const int64_t *starts, const int64_t *steps, const int64_t *shape,
                           hc_error *err) {
    hc_var *axes[HC_MAX_DIMS];
    hc_expr *idx[HC_MAX_DIMS];
    make_axes(a, x->ndim, axes, NULL);
    for (int d = 0; d < x->ndim; d++) {
        int64_t last = starts[d] + (shape[d] - 1) * steps[d];
        if (shape[d] < 0 || (shape[d] > 0 && (starts[d] < 0 || starts[d] >= x->shape[d] ||
                                              last < 0 || last >= x->shape[d]))) {
            hc_error_set(err, HC_ERR_INVALID, "%s: slice of dim %d (start %lld, step %lld, "
                         "%lld elements) leaves %s (size %lld)", name, d, (long long)starts[d],
                         (long long)steps[d], (long long)shape[d], x->name,
                         (long long)x->shape[d]);
            return NULL;
        }
        hc_expr *step = hc_mul(a, hc_ref(a, axes[d]), hc_int(a, steps[d]));
        idx[d] = hc_add(a, hc_int(a, starts[d]), step);
    }
    return hc_compute_with_axes(a, name, x->ndim, shape, axes, hc_at(a, x, idx));
}

hc_tnode *hc_compute_pad(hc_arena *a, const char *name, const hc_tnode *x,
                         const int64_t *before, const int64_t *after, double value,
                         hc_error *err) {
    hc_var *axes[HC_MAX_DIMS];
    hc_expr *idx[HC_MAX_DIMS], *ok = NULL;
    int64_t shape[HC_MAX_DIMS];
    make_axes(a, x->ndim, axes, NULL);
    for (int d = 0; d < x->ndim; d++) {
        shape[d] = before[d] + x->shape[d] + after[d];
        if (shape[d] < 0) {
            hc_error_set(err, HC_ERR_INVALID, "%s: padding dim %d of %s gives size %lld", name,
                         d, x->name, (long long)shape[d]);
            return NULL;
        }
        idx[d] = hc_sub(a, hc_ref(a, axes[d]), hc_int(a, before[d]));
        /* bounds checks only where padding adds elements */
        hc_expr *lo = before[d] > 0 ? hc_le(a, hc_int(a, 0), idx[d]) : NULL;
        hc_expr *hi = after[d] > 0 ? hc_lt(a, idx[d], hc_int(a, x->shape[d])) : NULL;
        if (lo) ok = ok ? hc_and(a, ok, lo) : lo;
        if (hi) ok = ok ? hc_and(a, ok, hi) : hi;
    }
    hc_expr *v = hc_at(a, x, idx);
    if (ok) v = hc_select(a, ok, v, hc_const_num(a, x->dtype, value));
    return hc_compute_with_axes(a, name, x->ndim, shape, axes, v);
}

hc_tnode *hc_compute_expand(hc_arena *a, const char *name, const hc_tnode *x, int ndim,
                            const int64_t *shape, hc_error *err) {
    int nd;
    int64_t out[HC_MAX_DIMS];
    if (hc_broadcast_shape(x->ndim, x->shape, ndim, shape, &nd, out, err)) return NULL;
    hc_var *axes[HC_MAX_DIMS];
    const hc_sym *osym[HC_MAX_DIMS];
    make_axes(a, nd, axes, NULL);
    broadcast_sym(1, &x, nd, osym);
    for (int d = 0; d < nd; d++) /* a target dim > 1 where x has 1: fixed */
        if (osym[d] && d - (nd - ndim) >= 0 && shape[d - (nd - ndim)] != 1 &&
            shape[d - (nd - ndim)] != x->shape[d - (nd - x->ndim)])
            osym[d] = NULL;
    return hc_tnode_set_sym(hc_compute_with_axes(a, name, nd, out, axes,
                                                 at_broadcast(a, x, nd, axes, osym)), osym);
}

static hc_expr *binop_fn(hc_arena *a, hc_expr *x, hc_expr *y, void *ctx) {
    return hc_binary(a, *(const hc_binop *)ctx, x, y);
}

hc_tnode *hc_compute_binop(hc_arena *a, const char *name, hc_binop op, const hc_tnode *x,
                           const hc_tnode *y, hc_error *err) {
    return hc_compute_map2(a, name, x, y, binop_fn, &op, err);
}

static hc_expr *prim_fn(hc_arena *a, hc_expr *x, void *ctx) {
    return hc_math(a, *(const hc_prim *)ctx, x, NULL);
}

hc_tnode *hc_compute_prim(hc_arena *a, const char *name, hc_prim p, const hc_tnode *x) {
    HC_ASSERT_MSG(hc_prim_arity(p) == 1 && !hc_prim_is_vector(p), hc_prim_name(p));
    return hc_compute_map1(a, name, x, prim_fn, &p);
}

static hc_expr *cast_fn(hc_arena *a, hc_expr *x, void *ctx) {
    return hc_cast(a, hc_type_scalar(*(const hc_dtype *)ctx), x);
}

hc_tnode *hc_compute_cast(hc_arena *a, const char *name, const hc_tnode *x, hc_dtype to) {
    return hc_compute_map1(a, name, x, cast_fn, &to);
}

/* Which input dims are reduced; false (with err) for a bad axis. */
static bool reduce_mask(const hc_tnode *x, int naxes, const int *axes, bool *mask, const char *name,
                        hc_error *err) {
    for (int d = 0; d < x->ndim; d++) mask[d] = naxes == 0;
    for (int i = 0; i < naxes; i++) {
        int d = axes[i] < 0 ? axes[i] + x->ndim : axes[i];
        if (d < 0 || d >= x->ndim || mask[d]) {
            hc_error_set(err, HC_ERR_INVALID, "%s: bad or repeated reduce axis %d for %d-d %s",
                         name, axes[i], x->ndim, x->name);
            return false;
        }
        mask[d] = true;
    }
    return true;
}

hc_tnode *hc_compute_reduce(hc_arena *a, const char *name, const hc_tnode *x, int naxes,
                            const int *axes, bool keepdims, hc_reduce_kind kind, hc_error *err) {
    bool mask[HC_MAX_DIMS];
    if (!reduce_mask(x, naxes, axes, mask, name, err)) return NULL;
    int64_t oshape[HC_MAX_DIMS], rext[HC_MAX_DIMS];
    const hc_sym *osym[HC_MAX_DIMS];
    hc_expr *rsym[HC_MAX_DIMS];
    int on = 0, rn = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (mask[d]) rsym[rn] = x->sym[d] ? hc_sym_expr(a, x->sym[d]) : NULL, rext[rn++] = x->shape[d];
        if (!mask[d] || keepdims) osym[on] = mask[d] ? NULL : x->sym[d];
        if (!mask[d] || keepdims) oshape[on++] = mask[d] ? 1 : x->shape[d];
    }
    if (rn == 0) {
        hc_error_set(err, HC_ERR_INVALID, "%s: nothing to reduce in 0-d %s", name, x->name);
        return NULL;
    }
    hc_var *oaxes[HC_MAX_DIMS], *raxes[HC_MAX_DIMS];
    hc_expr *idx[HC_MAX_DIMS];
    make_axes(a, on, oaxes, NULL);
    make_axes(a, rn, raxes, "r");
    for (int d = 0, o = 0, r = 0; d < x->ndim; d++) {
        if (mask[d]) idx[d] = hc_ref(a, raxes[r++]);
        else idx[d] = hc_ref(a, oaxes[o]);
        if (!mask[d] || keepdims) o++;
    }
    hc_expr *v = hc_reduce_sym(a, kind, rn, raxes, rext, rsym, hc_at(a, x, idx));
    return hc_tnode_set_sym(hc_compute_with_axes(a, name, on, oshape, oaxes, v), osym);
}

hc_tnode *hc_compute_argreduce(hc_arena *a, const char *name, const hc_tnode *x, int axis,
                               bool keepdims, bool is_max, bool select_last, hc_error *err) {
    const char *mname = hc_arena_printf(a, "%s_value", name);
    hc_tnode *m = hc_compute_reduce(a, mname, x, 1, &axis, true,
                                    is_max ? HC_REDUCE_MAX : HC_REDUCE_MIN, err);
    if (!m) return NULL;
    int d = axis < 0 ? axis + x->ndim : axis, on = keepdims ? x->ndim : x->ndim - 1;
    int64_t oshape[HC_MAX_DIMS], k = x->shape[d];
    const hc_sym *osym[HC_MAX_DIMS];
    hc_var *oaxes[HC_MAX_DIMS], *r = hc_axis(a, "r0");
    hc_expr *xi[HC_MAX_DIMS], *mi[HC_MAX_DIMS];
    make_axes(a, on, oaxes, NULL);
    for (int i = 0, o = 0; i < x->ndim; i++) {
        bool red = i == d;
        if (!red || keepdims) oshape[o] = red ? 1 : x->shape[i];
        if (!red || keepdims) osym[o] = red ? NULL : x->sym[i];
        xi[i] = red ? hc_ref(a, r) : hc_ref(a, oaxes[o]);
        mi[i] = red ? hc_int(a, 0) : hc_ref(a, oaxes[o]);
        if (!red || keepdims) o++;
    }
    /* indices not holding the extreme give a value that loses the second reduction */
    hc_expr *hit = hc_eq(a, hc_at(a, x, xi), hc_at(a, m, mi));
    hc_expr *kx = hc_tnode_extent(a, x, d);
    hc_expr *v = hc_select(a, hit, hc_ref(a, r), select_last ? hc_int(a, -1) : kx);
    hc_expr *idx = hc_reduce_sym(a, select_last ? HC_REDUCE_MAX : HC_REDUCE_MIN, 1, &r, &k,
                                 x->sym[d] ? &kx : NULL, v);
    return hc_tnode_set_sym(hc_compute_with_axes(a, name, on, oshape, oaxes, idx), osym);
}

hc_expr *hc_const_num(hc_arena *a, hc_dtype t, double v) {
    hc_value c = {0};
    if (hc_dtype_is_float(t)) c.f = t == HC_F32 ? (double)(float)v : v;
    else if (t == HC_BOOL) c.i = v != 0;
    else if (hc_dtype_is_signed(t)) c.i = (int64_t)v;
    else c.u = v < 0 ? (uint64_t)(int64_t)v : (uint64_t)v;
    return hc_const(a, t, c);
}

/* ---- printing -------------------------------------------------------------------- */
static void print_shape(hc_sb *sb, const hc_tnode *n) {
    hc_sb_printf(sb, "%s[", hc_dtype_name(n->dtype));
    for (int i = 0; i < n->ndim; i++)
        hc_sb_printf(sb, "%s%lld", i ? ", " : "", (long long)n->shape[i]);
    hc_sb_puts(sb, "]");
}

static bool is_output(const hc_task *t, const hc_tnode *n) {
    for (int i = 0; i < t->noutputs; i++)
        if (t->outputs[i] == n) return true;
    return false;
}

void hc_print_task(hc_sb *sb, const hc_task *t) {
    hc_sb_printf(sb, "task %s(", t->name);
    for (int i = 0; i < t->ninputs; i++) {
        hc_sb_printf(sb, "%s%s: ", i ? ", " : "", t->inputs[i]->name);
        print_shape(sb, t->inputs[i]);
    }
    hc_sb_puts(sb, ") -> (");
    for (int i = 0; i < t->noutputs; i++)
        hc_sb_printf(sb, "%s%s", i ? ", " : "", t->outputs[i]->name);
    hc_sb_puts(sb, ")\n");
    hc_arena a;
    hc_arena_init(&a);
    int n;
    hc_tnode **nodes = hc_task_compute_nodes(&a, t, &n);
    for (int k = 0; k < n; k++) {
        const hc_tnode *c = nodes[k];
        hc_sb_printf(sb, "  %s%s[", is_output(t, c) ? "output " : "", c->name);
        for (int i = 0; i < c->ndim; i++) hc_sb_printf(sb, "%s%s", i ? ", " : "", c->axes[i]->name);
        hc_sb_puts(sb, "]: ");
        print_shape(sb, c);
        hc_sb_puts(sb, " = ");
        hc_print_expr(sb, c->value);
        hc_sb_putc(sb, '\n');
    }
    for (int i = 0; i < t->ninputs; i++) {
        const hc_inverse_map *m = t->inverse[i];
        if (!m) continue;
        hc_sb_printf(sb, "  inverse %s: (", t->inputs[i]->name);
        for (int j = 0; j < m->ninput_axes; j++)
            hc_sb_printf(sb, "%s%s", j ? ", " : "", m->input_axes[j]->name);
        hc_sb_puts(sb, ") -> (");
        for (int j = 0; j < m->noutput_dims; j++) {
            if (j) hc_sb_puts(sb, ", ");
            hc_print_expr(sb, m->output_idx[j]);
        }
        hc_sb_puts(sb, ")\n");
    }
    hc_arena_free(&a);
}

/* ---- reshape index ---------------------------------------------------------------- */
/* Dims as symbol expressions (constants when fixed); a dim is "one" when it is the
 * constant 1. */
static bool is_one(const hc_sym *d) {
    int64_t c;
    return hc_sym_is_const(d, &c) && c == 1;
}

static hc_expr *dim_expr(hc_arena *a, const hc_sym *d) {
    int64_t c;
    return hc_sym_is_const(d, &c) ? hc_int(a, c) : hc_sym_expr(a, d);
}

/* Row-major flat index of idx[lo..hi] within shape[lo..hi], skipping size-1 dims. */
static hc_expr *group_flat(hc_arena *a, const hc_sym *const *shape, hc_expr *const *idx,
                           int lo, int hi) {
    hc_expr *flat = NULL;
    for (int d = lo; d <= hi; d++) {
        if (is_one(shape[d])) continue;
        flat = flat ? hc_add(a, hc_mul(a, flat, dim_expr(a, shape[d])), idx[d]) : idx[d];
    }
    return flat ? flat : hc_int(a, 0);
}

/* flat over shape[lo..hi] -> one index per dim (div/mod only where needed). */
static void group_unflat(hc_arena *a, const hc_sym *const *shape, hc_expr *flat, int lo, int hi,
                         hc_expr **out) {
    int nontrivial = 0;
    for (int d = lo; d <= hi; d++) nontrivial += !is_one(shape[d]);
    const hc_sym *inner = hc_sym_const(a, 1);
    for (int d = hi; d >= lo; d--) {
        if (is_one(shape[d])) out[d] = hc_int(a, 0);
        else if (nontrivial == 1) out[d] = flat;
        else {
            hc_expr *q = is_one(inner) ? flat : hc_div(a, flat, dim_expr(a, inner));
            bool outermost = true;
            for (int e = lo; e < d; e++) outermost &= is_one(shape[e]);
            out[d] = outermost ? q : hc_mod(a, q, dim_expr(a, shape[d]));
        }
        inner = hc_sym_mul(a, inner, shape[d]);
    }
}

/* Whether the product p must grow to reach q: q is p times more (q / p exact and not 1),
 * or, for constants, p < q. */
static bool grows_to(hc_arena *a, const hc_sym *p, const hc_sym *q) {
    int64_t x, y;
    if (hc_sym_is_const(p, &x) && hc_sym_is_const(q, &y)) return x < y;
    const hc_sym *r = hc_sym_exact_div(a, q, p);
    return r && !is_one(r);
}

void hc_reshape_index_sym(hc_arena *a, int ns, const hc_sym *const *ss, hc_expr *const *si,
                          int nd, const hc_sym *const *ds, hc_expr **out) {
    int i = ns - 1, j = nd - 1;
    while (j >= 0) {
        while (i >= 0 && is_one(ss[i])) i--; /* size-1 dims carry no index */
        if (is_one(ds[j])) {
            out[j--] = hc_int(a, 0);
            continue;
        }
        if (i < 0) { /* cannot happen for equal element counts */
            out[j--] = hc_int(a, 0);
            continue;
        }
        int i0 = i, j0 = j;
        const hc_sym *ps = ss[i], *pd = ds[j];
        while (!hc_sym_equal(ps, pd)) {
            if (grows_to(a, ps, pd)) {
                if (--i < 0) break;
                ps = hc_sym_mul(a, ps, ss[i]);
            } else if (grows_to(a, pd, ps)) {
                if (--j < 0) break;
                pd = hc_sym_mul(a, pd, ds[j]);
            } else { /* symbolic groups that do not nest: flatten all that is left */
                i = j = -1;
                break;
            }
        }
        if (i < 0 || j < 0) { /* mismatched counts: flatten all that is left */
            i = 0, j = 0;
        }
        hc_expr *flat = group_flat(a, ss, si, i, i0);
        group_unflat(a, ds, flat, j, j0, out);
        i--, j--;
    }
}

void hc_reshape_index(hc_arena *a, int ns, const int64_t *ss, hc_expr *const *si, int nd,
                      const int64_t *ds, hc_expr **out) {
    const hc_sym *s[HC_MAX_DIMS], *d[HC_MAX_DIMS];
    for (int k = 0; k < ns; k++) s[k] = hc_sym_const(a, ss[k]);
    for (int k = 0; k < nd; k++) d[k] = hc_sym_const(a, ds[k]);
    hc_reshape_index_sym(a, ns, s, si, nd, d, out);
}
