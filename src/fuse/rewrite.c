/* rewrite.c — the post-scheduling rewrite of a template's program (fuse.h).
 *
 * Prologue: every load of a prologued input param becomes the prologue's value at that
 * index: the producer's task expression with its axes substituted, recursively through
 * other prologue members, down to loads of group inputs.
 * Epilogue: every store of the anchor's output becomes a store of the epilogue's value
 * at the inverse-mapped index: for each epilogue node (a chain, or an elementwise DAG),
 * y = inverse(x) through one of its group inputs, value = the node's expression at y with
 * its reads of the group's tensors replaced by their values at that element (a read at
 * another element fails the rewrite).
 * Vector accesses (lanes along the last dim): the scalar expression is built for lane
 * variable L (last index + L), then vectorized: a load whose flat offset does not depend
 * on L is one scalar (broadcast), one with offset + L is a vector load, anything else
 * (or a non-f32 value) falls back to a register array filled lane by lane. */
#include <string.h>

#include "fuse/fuse.h"

typedef struct rw {
    hc_arena *a;
    const hc_group *grp;
    const hc_func *f;
    const char *why;
    /* tensor <-> param var */
    HC_VEC(const hc_tensor *) ptens;
    HC_VEC(hc_var *) pvars;
    /* anchor params rewritten away */
    HC_VEC(hc_var *) pro_vars;       /* prologued input params */
    HC_VEC(const hc_tensor *) pro_tens;
    HC_VEC(hc_var *) dup_from;       /* params duplicating another one (same tensor) */
    HC_VEC(hc_var *) dup_to;
    hc_var *out_var;                 /* epilogued output param, or NULL */
    const hc_tensor *out_tensor;
    /* member tasks */
    HC_VEC(const hc_node *) tnodes_of;
    HC_VEC(hc_task *) tasks;
    /* statements to put before the statement being rewritten (lane-by-lane gathers) */
    HC_VEC(hc_stmt *) pending;
    int depth; /* inlining depth guard */
} rw;

static bool fail(rw *c, const char *why) {
    if (!c->why) c->why = why;
    return false;
}

static hc_task *task_of(rw *c, const hc_node *n) {
    for (size_t i = 0; i < c->tnodes_of.len; i++)
        if (c->tnodes_of.data[i] == n) return c->tasks.data[i];
    hc_task *t = hc_fuse_node_task(c->a, n, NULL);
    hc_vec_push(&c->tnodes_of, n);
    hc_vec_push(&c->tasks, t);
    return t;
}

static bool is_prologue(const rw *c, const hc_node *n) {
    for (int i = 0; i < c->grp->nprologue; i++)
        if (c->grp->prologue[i] == n) return true;
    return false;
}

static hc_var *param_of(rw *c, const hc_tensor *t) {
    for (size_t i = 0; i < c->ptens.len; i++)
        if (c->ptens.data[i] == t) return c->pvars.data[i];
    int64_t one = 1;
    const hc_type *ty = hc_type_tensor_c(c->a, t->dtype, t->ndim ? t->ndim : 1,
                                         t->ndim ? t->shape : &one, HC_SCOPE_GLOBAL);
    hc_var *v = hc_var_new(c->a, t->name, ty);
    hc_vec_push(&c->ptens, t);
    hc_vec_push(&c->pvars, v);
    return v;
}

static hc_expr *load_tensor(rw *c, const hc_tensor *t, int n, hc_expr *const *idx) {
    hc_var *v = param_of(c, t);
    if (n == 0) return hc_load(c->a, v, 1, (hc_expr *[]){hc_int(c->a, 0)});
    return hc_load(c->a, v, n, idx);
}

/* ---- inlining task expressions ------------------------------------------------------ */
static hc_expr *value_of(rw *c, const hc_tensor *t, int n, hc_expr *const *idx);

/* An epilogue tensor already computed at the stored element: its value and index. */
typedef struct known {
    const hc_tensor *t;
    hc_expr *value;
    hc_expr **idx;
    int n;
} known;

typedef struct inl {
    rw *c;
    const hc_node *node;
    hc_task *task;
    /* epilogue: task inputs replaced by values computed earlier in the chain/DAG */
    int nchained;
    const hc_tnode **chained;
    const known **with;
    const known *from; /* the one whose inverse map gave the output element */
} inl;

static bool same_index(hc_arena *a, int n, hc_expr *const *x, hc_expr *const *y) {
    for (int d = 0; d < n; d++)
        if (!hc_expr_equal(x[d], y[d]) &&
            !hc_expr_equal(hc_simplify_expr(a, x[d]), hc_simplify_expr(a, y[d])))
            return false;
    return true;
}

static hc_expr *inline_tnode(inl *s, const hc_tnode *tn, int n, hc_expr *const *idx);

static hc_expr *inl_access(hc_mutator *m, hc_expr *e) {
    inl *s = m->ctx;
    if (s->c->why) return e;
    if (e->kind == HC_E_REDUCE) {
        fail(s->c, "a reduction inside a prologue or epilogue");
        return e;
    }
    if (e->kind != HC_E_TENSOR_ACCESS) return e;
    const hc_tnode *u = e->u.access.tensor;
    for (int i = 0; i < s->nchained; i++) {
        if (u != s->chained[i]) continue;
        const known *k = s->with[i];
        /* the input whose inverse map gave the element is read there by construction */
        if (k != s->from &&
            (e->u.access.n != k->n || !same_index(s->c->a, k->n, e->u.access.idx, k->idx))) {
            fail(s->c, "an epilogue node reads its group's tensor at another element");
            return e;
        }
        return k->value;
    }
    if (u->kind == HC_TN_COMPUTE) return inline_tnode(s, u, e->u.access.n, e->u.access.idx);
    for (int i = 0, slot = 0; i < s->node->ninputs; i++) {
        if (!s->node->inputs[i]) continue;
        if (s->task->inputs[slot] == u)
            return value_of(s->c, s->node->inputs[i], e->u.access.n, e->u.access.idx);
        slot++;
    }
    fail(s->c, "a task reads a tensor node it does not list");
    return e;
}

static hc_expr *inline_tnode(inl *s, const hc_tnode *tn, int n, hc_expr *const *idx) {
    if (++s->c->depth > 64) {
        fail(s->c, "prologue or epilogue nests too deeply");
        return hc_int(s->c->a, 0);
    }
    HC_ASSERT(n == tn->ndim);
    hc_expr *v = hc_subst_expr(s->c->a, tn->value, n, tn->axes, idx);
    hc_mutator m = {.a = s->c->a, .ctx = s, .expr = inl_access};
    v = hc_mutate_expr(&m, v);
    s->c->depth--;
    return v;
}

/* Element idx of tensor t: a prologue member's expression, or a load of a group input. */
static hc_expr *value_of(rw *c, const hc_tensor *t, int n, hc_expr *const *idx) {
    if (t->producer && is_prologue(c, t->producer)) {
        const hc_node *p = t->producer;
        hc_task *task = task_of(c, p);
        if (!task || task->noutputs != 1) {
            fail(c, "a prologue node without a single-output task");
            return hc_int(c->a, 0);
        }
        inl s = {.c = c, .node = p, .task = task};
        return inline_tnode(&s, task->outputs[0], n, idx);
    }
    return load_tensor(c, t, n, idx);
}

/* Apply the epilogue chain to `value` stored at idx of the anchor's output; returns the
 * final tensor and sets *out_idx / *out_n / the value. */
static const hc_tensor *epilogue(rw *c, hc_expr *const *idx, int n, hc_expr **value,
                                 hc_expr ***out_idx, int *out_n) {
    /* the tensors computed so far at the stored element: the anchor's output, then each
     * member's (a chain reads the previous one; a DAG member any earlier ones) */
    int nk = c->grp->nepilogue + 1;
    known *kn = HC_NEW_ARRAY(c->a, known, nk);
    kn[0] = (known){.t = c->out_tensor, .value = *value, .n = n,
                    .idx = HC_NEW_ARRAY(c->a, hc_expr *, n + 1)};
    memcpy(kn[0].idx, idx, sizeof(hc_expr *) * (size_t)n);
    int have = 1;
    for (int k = 0; k < c->grp->nepilogue && !c->why; k++) {
        const hc_node *e = c->grp->epilogue[k];
        hc_task *task = task_of(c, e);
        if (!task || task->noutputs != 1) {
            fail(c, "an epilogue node without a single-output task");
            break;
        }
        inl s = {.c = c, .node = e, .task = task,
                 .chained = HC_NEW_ARRAY(c->a, const hc_tnode *, task->ninputs + 1),
                 .with = HC_NEW_ARRAY(c->a, const known *, task->ninputs + 1)};
        const hc_inverse_map *inv = NULL;
        const known *from = NULL;
        for (int i = 0, slot = 0; i < e->ninputs; i++) {
            if (!e->inputs[i]) continue;
            for (int j = 0; j < have; j++) {
                if (e->inputs[i] != kn[j].t) continue;
                s.chained[s.nchained] = task->inputs[slot];
                s.with[s.nchained++] = &kn[j];
                const hc_inverse_map *iv = task->inverse[slot];
                if (!inv && iv && iv->ninput_axes == kn[j].n) inv = iv, from = &kn[j];
            }
            slot++;
        }
        if (!inv) {
            fail(c, "an epilogue node without an inverse map");
            break;
        }
        hc_expr **y = HC_NEW_ARRAY(c->a, hc_expr *, inv->noutput_dims + 1);
        for (int d = 0; d < inv->noutput_dims; d++)
            y[d] = hc_subst_expr(c->a, inv->output_idx[d], from->n, inv->input_axes, from->idx);
        s.from = from;
        hc_expr *v = inline_tnode(&s, task->outputs[0], inv->noutput_dims, y);
        const hc_tensor *next = NULL;
        for (int i = 0; i < e->noutputs; i++)
            if (e->outputs[i]) next = e->outputs[i];
        kn[have++] = (known){.t = next, .value = v, .idx = y, .n = inv->noutput_dims};
    }
    const known *fin = &kn[have - 1];
    const hc_tensor *cur = fin->t;
    hc_expr **ci = fin->idx;
    int cn = fin->n;
    *value = fin->value;
    if (cn == 0) { /* 0-d tensors are [1] buffers */
        ci = HC_NEW_ARRAY(c->a, hc_expr *, 1);
        ci[0] = hc_int(c->a, 0);
        cn = 1;
    }
    *out_idx = ci, *out_n = cn;
    return cur;
}

/* ---- linear forms: is an offset uniform or contiguous along lane L? ------------------ */
#define LIN_MAX 48
typedef struct lin {
    int n;
    const hc_expr *atom[LIN_MAX];
    int64_t coef[LIN_MAX];
    int64_t c;
    bool ok;
} lin;

static void lin_add_atom(lin *l, const hc_expr *e, int64_t k) {
    if (!k) return;
    for (int i = 0; i < l->n; i++)
        if (hc_expr_equal(l->atom[i], e)) {
            l->coef[i] += k;
            return;
        }
    if (l->n == LIN_MAX) {
        l->ok = false;
        return;
    }
    l->atom[l->n] = e, l->coef[l->n++] = k;
}

static void lin_of(lin *l, const hc_expr *e, int64_t k) {
    int64_t v;
    if (!l->ok || !k) return;
    if (hc_expr_is_const_int(e, &v)) {
        l->c += k * v;
        return;
    }
    if (e->kind == HC_E_BINARY) {
        const hc_expr *x = e->u.bin.a, *y = e->u.bin.b;
        switch (e->u.bin.op) {
        case HC_OP_ADD: lin_of(l, x, k), lin_of(l, y, k); return;
        case HC_OP_SUB: lin_of(l, x, k), lin_of(l, y, -k); return;
        case HC_OP_MUL:
            if (hc_expr_is_const_int(y, &v)) {
                lin_of(l, x, k * v);
                return;
            }
            if (hc_expr_is_const_int(x, &v)) {
                lin_of(l, y, k * v);
                return;
            }
            break;
        default: break;
        }
    }
    lin_add_atom(l, e, k);
}

/* (x / w) * w + x % w == x for C division: fold such pairs back into x. */
static void lin_fold_divmod(lin *l) {
    for (bool again = true; again && l->ok;) {
        again = false;
        for (int i = 0; i < l->n && !again; i++) {
            const hc_expr *d = l->atom[i];
            int64_t w;
            if (d->kind != HC_E_BINARY || d->u.bin.op != HC_OP_DIV ||
                !hc_expr_is_const_int(d->u.bin.b, &w) || w == 0)
                continue;
            for (int j = 0; j < l->n; j++) {
                const hc_expr *m = l->atom[j];
                int64_t w2;
                if (m->kind != HC_E_BINARY || m->u.bin.op != HC_OP_MOD ||
                    !hc_expr_is_const_int(m->u.bin.b, &w2) || w2 != w ||
                    !hc_expr_equal(m->u.bin.a, d->u.bin.a) || l->coef[i] != l->coef[j] * w)
                    continue;
                int64_t k = l->coef[j];
                const hc_expr *x = d->u.bin.a;
                l->coef[i] = l->coef[j] = 0;
                lin_of(l, x, k);
                again = true;
                break;
            }
        }
        int w = 0; /* drop zero terms */
        for (int i = 0; i < l->n; i++)
            if (l->coef[i]) l->atom[w] = l->atom[i], l->coef[w++] = l->coef[i];
        l->n = w;
    }
}

static bool mentions(const hc_expr *e, const hc_var *v);

static bool mentions_any(hc_expr *const *es, int n, const hc_var *v) {
    for (int i = 0; i < n; i++)
        if (mentions(es[i], v)) return true;
    return false;
}

static bool mentions(const hc_expr *e, const hc_var *v) {
    switch (e->kind) {
    case HC_E_CONST: return false;
    case HC_E_VAR: return e->u.var == v;
    case HC_E_BINARY: return mentions(e->u.bin.a, v) || mentions(e->u.bin.b, v);
    case HC_E_UNARY: return mentions(e->u.un.a, v);
    case HC_E_SELECT:
        return mentions(e->u.sel.cond, v) || mentions(e->u.sel.t, v) || mentions(e->u.sel.f, v);
    case HC_E_CAST: return mentions(e->u.cast.a, v);
    case HC_E_CALL: return mentions_any(e->u.call.args, e->u.call.nargs, v);
    case HC_E_LOAD:
    case HC_E_ADDRESS: return e->u.load.buf == v || mentions_any(e->u.load.idx, e->u.load.n, v);
    case HC_E_TENSOR_ACCESS: return mentions_any(e->u.access.idx, e->u.access.n, v);
    case HC_E_REDUCE: return mentions(e->u.reduce.value, v);
    }
    return true;
}

/* Coefficient of L in a linear form, after folding div/mod pairs; INT64_MIN when the form
 * is not affine in L (a term other than L itself mentions it). */
static int64_t lin_lane_coef(lin *l, const hc_var *L) {
    lin_fold_divmod(l);
    if (!l->ok) return INT64_MIN;
    int64_t k = 0;
    for (int i = 0; i < l->n; i++) {
        if (l->atom[i]->kind == HC_E_VAR && l->atom[i]->u.var == L) k += l->coef[i];
        else if (mentions(l->atom[i], L)) return INT64_MIN;
    }
    return k;
}

/* Coefficient of L in the row-major flat offset of idx into buf (INT64_MIN: not affine). */
static int64_t lane_coef(const hc_var *buf, int n, hc_expr *const *idx, const hc_var *L) {
    const hc_type *t = buf->type;
    lin l = {.ok = true};
    int64_t stride = 1;
    for (int d = n - 1; d >= 0; d--) {
        lin_of(&l, idx[d], stride);
        int64_t ext = 1;
        if (d < t->ndim) hc_expr_is_const_int(t->shape[d], &ext);
        stride *= ext;
    }
    return lin_lane_coef(&l, L);
}

/* Coefficient of L in e (INT64_MIN: not affine). */
static int64_t lane_coef1(const hc_expr *e, const hc_var *L) {
    lin l = {.ok = true};
    lin_of(&l, e, 1);
    return lin_lane_coef(&l, L);
}

/* ---- vectorizing a lane expression -------------------------------------------------- */
typedef struct vec {
    rw *c;
    hc_var *L;
    hc_var *vs;       /* scalar standing for the stored lane value (epilogue), or NULL */
    hc_expr *vvalue;  /* the vector value */
    hc_expr *count;   /* valid lanes (masked), or NULL */
    int lanes;
    const hc_type *vt;
    bool bad;
    /* Inside the branches of a select that became vector code, both branches are
     * evaluated for every lane: a load there is only allowed if it is also evaluated
     * unconditionally (it appears in an enclosing condition), since the condition may be
     * what keeps its index in bounds (Pad, Im2Col). */
    int guard;
    int nsafe;
    const hc_expr *safe[64];
} vec;

static void collect_safe_loads(vec *v, const hc_expr *e) {
    switch (e->kind) {
    case HC_E_LOAD:
        if (v->nsafe < 64) v->safe[v->nsafe++] = e;
        break;
    case HC_E_BINARY: collect_safe_loads(v, e->u.bin.a), collect_safe_loads(v, e->u.bin.b); break;
    case HC_E_UNARY: collect_safe_loads(v, e->u.un.a); break;
    case HC_E_CAST: collect_safe_loads(v, e->u.cast.a); break;
    case HC_E_SELECT:
        collect_safe_loads(v, e->u.sel.cond);
        break; /* branch loads are conditional */
    case HC_E_CALL:
        for (int i = 0; i < e->u.call.nargs; i++) collect_safe_loads(v, e->u.call.args[i]);
        break;
    default: break;
    }
}

/* A load at constant indices inside the buffer's constant shape (a scalar constant such
 * as a Where's fill value): reading it can never fault. */
static bool const_in_bounds(const hc_expr *e) {
    const hc_type *t = e->u.load.buf->type;
    if (t->kind != HC_TY_TENSOR || t->ndim != e->u.load.n) return false;
    for (int i = 0; i < e->u.load.n; i++) {
        int64_t x, d;
        if (!hc_expr_is_const_int(e->u.load.idx[i], &x) || !hc_expr_is_const_int(t->shape[i], &d) ||
            x < 0 || x >= d)
            return false;
    }
    return true;
}

static bool is_safe_load(const vec *v, const hc_expr *e) {
    if (const_in_bounds(e)) return true;
    for (int i = 0; i < v->nsafe; i++)
        if (hc_expr_equal(v->safe[i], e)) return true;
    return false;
}

/* A load in e that a guard would evaluate unconditionally without being safe. */
static bool has_unsafe_load(const vec *v, const hc_expr *e) {
    switch (e->kind) {
    case HC_E_LOAD: return !is_safe_load(v, e);
    case HC_E_BINARY: return has_unsafe_load(v, e->u.bin.a) || has_unsafe_load(v, e->u.bin.b);
    case HC_E_UNARY: return has_unsafe_load(v, e->u.un.a);
    case HC_E_CAST: return has_unsafe_load(v, e->u.cast.a);
    case HC_E_SELECT:
        return has_unsafe_load(v, e->u.sel.cond) || has_unsafe_load(v, e->u.sel.t) ||
               has_unsafe_load(v, e->u.sel.f);
    case HC_E_CALL:
        for (int i = 0; i < e->u.call.nargs; i++)
            if (has_unsafe_load(v, e->u.call.args[i])) return true;
        return false;
    default: return false;
    }
}

static hc_expr *zero_lane(vec *v, hc_expr *e) {
    hc_expr *z = hc_int(v->c->a, 0);
    return hc_subst_expr(v->c->a, e, 1, &v->L, &z);
}

static hc_expr *vcall(hc_arena *a, hc_prim p, const hc_type *t, int n, hc_expr *x, hc_expr *y,
                      hc_expr *z) {
    hc_expr *args[3] = {x, y, z};
    return hc_call(a, p, t, n, args);
}

/* Lanes lo <= i < hi of p[i * k], the others 0 and not read. */
static hc_expr *strided_load(hc_arena *a, const hc_type *vt, hc_expr *p, int64_t k, hc_expr *lo,
                             hc_expr *hi) {
    hc_expr *args[4] = {p, hc_int(a, k), lo, hi};
    return hc_call(a, HC_PRIM_VLOAD_STRIDED, vt, 4, args);
}

static hc_expr *as_vec(vec *v, hc_expr *e, bool isvec) {
    if (isvec) return e;
    if (!hc_type_is_scalar(e->type, HC_F32)) {
        v->bad = true;
        return e;
    }
    return vcall(v->c->a, HC_PRIM_VBROADCAST, v->vt, 1, e, NULL, NULL);
}

static bool uses_lane(vec *v, const hc_expr *e) {
    return mentions(e, v->L) || (v->vs && mentions(e, v->vs));
}

/* Returns the vectorized e; *isvec says whether it is a vector (else uniform scalar). */
static hc_expr *vectorize(vec *v, hc_expr *e, bool *isvec) {
    hc_arena *a = v->c->a;
    *isvec = false;
    if (v->bad) return e;
    if (!uses_lane(v, e)) {
        if (v->guard && has_unsafe_load(v, e)) v->bad = true;
        return e;
    }
    switch (e->kind) {
    case HC_E_VAR:
        if (v->vs && e->u.var == v->vs) {
            *isvec = true;
            return v->vvalue;
        }
        break; /* the lane index used as a value */
    case HC_E_LOAD: {
        /* f32 values; bools (a Where's condition) only contiguous along the lanes */
        bool boolean = hc_type_is_scalar(e->type, HC_BOOL);
        if (!hc_type_is_scalar(e->type, HC_F32) && !boolean) break;
        if (v->guard && !is_safe_load(v, e)) break;
        int64_t k = lane_coef(e->u.load.buf, e->u.load.n, e->u.load.idx, v->L);
        hc_expr **idx0 = HC_NEW_ARRAY(a, hc_expr *, e->u.load.n + 1);
        for (int i = 0; i < e->u.load.n; i++) idx0[i] = zero_lane(v, e->u.load.idx[i]);
        if (k == 0) return hc_load(a, e->u.load.buf, e->u.load.n, idx0);
        if (k == INT64_MIN || (boolean && k != 1)) break;
        hc_expr *p = hc_address(a, e->u.load.buf, e->u.load.n, idx0);
        *isvec = true;
        if (boolean) {
            const hc_type *bt = hc_type_vector(a, HC_BOOL, v->lanes);
            return v->count ? vcall(a, HC_PRIM_VLOAD_MASK, bt, 2, p, v->count, NULL)
                            : vcall(a, HC_PRIM_VLOAD, bt, 1, p, NULL, NULL);
        }
        if (k != 1) /* lane i at p[i * k]: a gather */
            return strided_load(a, v->vt, p, k, hc_int(a, 0),
                                v->count ? v->count : hc_int(a, v->lanes));
        return v->count ? vcall(a, HC_PRIM_VLOAD_MASK, v->vt, 2, p, v->count, NULL)
                        : vcall(a, HC_PRIM_VLOAD, v->vt, 1, p, NULL, NULL);
    }
    case HC_E_BINARY: {
        hc_binop op = e->u.bin.op;
        if (hc_binop_is_comparison(op) && hc_type_is_scalar(e->u.bin.a->type, HC_F32) &&
            hc_type_is_scalar(e->u.bin.b->type, HC_F32)) {
            bool vx, vy; /* a vector of bools (lane masks) */
            hc_expr *x = vectorize(v, e->u.bin.a, &vx), *y = vectorize(v, e->u.bin.b, &vy);
            if (v->bad) return e;
            if (!vx && !vy) return hc_binary(a, op, x, y);
            *isvec = true;
            return hc_binary(a, op, as_vec(v, x, vx), as_vec(v, y, vy));
        }
        if (op != HC_OP_ADD && op != HC_OP_SUB && op != HC_OP_MUL && op != HC_OP_DIV &&
            op != HC_OP_MIN && op != HC_OP_MAX)
            break;
        if (!hc_type_is_scalar(e->type, HC_F32)) break;
        bool vx, vy;
        hc_expr *x = vectorize(v, e->u.bin.a, &vx), *y = vectorize(v, e->u.bin.b, &vy);
        if (v->bad) return e;
        if (!vx && !vy) return hc_binary(a, op, x, y);
        *isvec = true;
        return hc_binary(a, op, as_vec(v, x, vx), as_vec(v, y, vy));
    }
    case HC_E_UNARY: {
        if (e->u.un.op != HC_OP_NEG || !hc_type_is_scalar(e->type, HC_F32)) break;
        bool vx;
        hc_expr *x = vectorize(v, e->u.un.a, &vx);
        *isvec = vx;
        return hc_unary(a, HC_OP_NEG, x);
    }
    case HC_E_SELECT: {
        if (!hc_type_is_scalar(e->type, HC_F32)) break;
        bool vc, vt, vf;
        hc_expr *c = vectorize(v, e->u.sel.cond, &vc);
        if (v->bad) return e;
        if (!vc && !uses_lane(v, e->u.sel.t) && !uses_lane(v, e->u.sel.f))
            return hc_select(a, c, e->u.sel.t, e->u.sel.f); /* scalar: stays lazy */
        if (!vc && !hc_type_is_scalar(c->type, HC_BOOL)) break;
        int saved = v->nsafe;
        collect_safe_loads(v, e->u.sel.cond);
        v->guard++;
        hc_expr *t = vectorize(v, e->u.sel.t, &vt), *f = vectorize(v, e->u.sel.f, &vf);
        v->guard--;
        v->nsafe = saved;
        if (v->bad) return e;
        *isvec = true;
        return hc_select(a, c, as_vec(v, t, vt), as_vec(v, f, vf));
    }
    case HC_E_CAST:
        if (!hc_type_is_scalar(e->type, HC_F32) || !hc_type_is_scalar(e->u.cast.a->type, HC_F32))
            break;
        return vectorize(v, e->u.cast.a, isvec);
    case HC_E_CALL: {
        hc_prim p = e->u.call.prim;
        if (hc_prim_is_vector(p) || p == HC_PRIM_ISNAN || p == HC_PRIM_ISINF) break;
        if (!hc_type_is_scalar(e->type, HC_F32)) break;
        bool any = false, vs_[3];
        hc_expr *args[3];
        for (int i = 0; i < e->u.call.nargs && i < 3; i++) {
            args[i] = vectorize(v, e->u.call.args[i], &vs_[i]);
            any |= vs_[i];
        }
        if (v->bad) return e;
        if (!any) return hc_call(a, p, e->type, e->u.call.nargs, args);
        for (int i = 0; i < e->u.call.nargs; i++) args[i] = as_vec(v, args[i], vs_[i]);
        *isvec = true;
        return hc_math(a, p, args[0], e->u.call.nargs > 1 ? args[1] : NULL);
    }
    default: break;
    }
    v->bad = true;
    return e;
}

/* ---- piecewise-contiguous gathers (im2col, pad) ------------------------------------- */
typedef struct piece {
    rw *c;
    hc_var *L;
    int lanes;
    hc_expr *ok;   /* runtime condition under which the rewritten expression is exact */
    bool bad;
    /* the one lane-dependent div/mod: x / w, x % w with x = x0 + L; this piece covers
     * the lanes with (x0 % w + L) / w == seg */
    const hc_expr *x;
    int64_t w;
    int seg;
} piece;

static void piece_and(piece *p, hc_expr *cond) {
    p->ok = p->ok ? hc_and(p->c->a, p->ok, cond) : cond;
}

static hc_expr *lane0(rw *c, hc_var *L, hc_expr *e) {
    hc_expr *z = hc_int(c->a, 0);
    return hc_subst_expr(c->a, e, 1, &L, &z);
}

/* x / w and x % w with x = x0 + L: when every lane stays in the same block of w, i.e.
 * x0 % w + lanes - 1 < w, they are x0 / w (uniform) and x0 % w + L (affine). */
static hc_expr *piece_expr(hc_mutator *m, hc_expr *e) {
    piece *p = m->ctx;
    int64_t w;
    if (e->kind != HC_E_BINARY || (e->u.bin.op != HC_OP_DIV && e->u.bin.op != HC_OP_MOD) ||
        !mentions(e->u.bin.a, p->L))
        return e;
    if (!hc_expr_is_const_int(e->u.bin.b, &w) || w <= 0 || lane_coef1(e->u.bin.a, p->L) != 1) {
        p->bad = true;
        return e;
    }
    if (p->x && (p->w != w || !hc_expr_equal(p->x, e->u.bin.a))) { /* a second divisor */
        p->bad = true;
        return e;
    }
    p->x = e->u.bin.a, p->w = w;
    hc_arena *a = p->c->a;
    hc_expr *x0 = lane0(p->c, p->L, e->u.bin.a), *W = hc_int(a, w);
    /* in piece seg: x / w = x0 / w + seg and x % w = x0 % w - seg * w + L */
    if (e->u.bin.op == HC_OP_DIV) return hc_add(a, hc_div(a, x0, W), hc_int(a, p->seg));
    return hc_add(a, hc_sub(a, hc_mod(a, x0, W), hc_int(a, p->seg * w)), hc_ref(a, p->L));
}

typedef struct lrange {
    hc_expr *lo, *hi; /* lanes [lo, hi) */
    hc_expr *uniform; /* lane-independent conjuncts, or NULL */
    /* conjuncts 0 <= x and x < bound with a constant bound: what they admit needs no
     * clamp of x to [0, bound - 1] (Pad, Im2Col clamp the index they guard) */
    int nlow, nhigh;
    const hc_expr *low[8], *high[8];
    int64_t bound[8];
} lrange;

/* Record t when it is 0 <= x (x >= 0) or x < c (x <= c - 1) with c a constant. */
static void note_bound(const hc_expr *t, lrange *r) {
    const hc_expr *x = t->u.bin.a, *y = t->u.bin.b;
    hc_binop op = t->u.bin.op;
    int64_t v;
    if (op == HC_OP_GT || op == HC_OP_GE) { /* y < x, y <= x */
        const hc_expr *s = x;
        x = y, y = s, op = op == HC_OP_GT ? HC_OP_LT : HC_OP_LE;
    }
    if (hc_expr_is_const_int(x, &v) && v == 0 && op == HC_OP_LE && r->nlow < 8)
        r->low[r->nlow++] = y;
    else if (hc_expr_is_const_int(y, &v) && r->nhigh < 8) {
        r->high[r->nhigh] = x;
        r->bound[r->nhigh++] = op == HC_OP_LT ? v : v + 1;
    }
}

/* Does r admit only lanes where 0 <= y < top + 1? */
static bool bounded_by(const lrange *r, const hc_expr *y, int64_t top) {
    bool low = false, high = false;
    for (int i = 0; i < r->nlow; i++) low |= hc_expr_equal(r->low[i], y);
    for (int i = 0; i < r->nhigh; i++) high |= r->bound[i] <= top + 1 && hc_expr_equal(r->high[i], y);
    return low && high;
}

/* Narrow r by one conjunct of a select condition; false when it is not of the form
 * (affine in L with coefficient +-1) CMP (uniform) or lane-independent. */
static bool range_term(rw *c, hc_var *L, const hc_expr *t, lrange *r) {
    hc_arena *a = c->a;
    if (!mentions(t, L)) {
        r->uniform = r->uniform ? hc_and(a, r->uniform, (hc_expr *)t) : (hc_expr *)t;
        return true;
    }
    if (t->kind != HC_E_BINARY) return false;
    hc_binop op = t->u.bin.op;
    if (op == HC_OP_AND)
        return range_term(c, L, t->u.bin.a, r) && range_term(c, L, t->u.bin.b, r);
    if (op != HC_OP_LT && op != HC_OP_LE && op != HC_OP_GT && op != HC_OP_GE) return false;
    if (!hc_dtype_is_int(t->u.bin.a->type->dtype) || !hc_dtype_is_int(t->u.bin.b->type->dtype))
        return false;
    note_bound(t, r);
    hc_expr *d = hc_sub(a, t->u.bin.a, t->u.bin.b); /* d CMP 0 */
    int64_t k = lane_coef1(d, L);
    if (k == INT64_MIN || k == 0) return false;
    hc_expr *d0 = lane0(c, L, d), *one = hc_int(a, 1);
    if (k != 1 && k != -1) { /* a strided index: d = d0 + k * L */
        /* as m * L <= B (upper) or m * L >= B (lower) with m = |k| > 0 */
        bool le = op == HC_OP_LT || op == HC_OP_LE; /* k * L <= -d0 (- 1 if strict) */
        hc_expr *B = hc_sub(a, hc_int(a, 0), d0);
        if (op == HC_OP_LT) B = hc_sub(a, B, one);
        if (op == HC_OP_GT) B = hc_add(a, B, one);
        if (k < 0) le = !le, B = hc_sub(a, hc_int(a, 0), B);
        int64_t m = k < 0 ? -k : k;
        hc_expr *M = hc_int(a, m), *zero = hc_int(a, 0);
        /* lanes are >= 0, so a negative bound only means "none" / "all": clamping it at 0
         * first makes C's truncating division a floor (hi) and a ceiling (lo) */
        if (le) r->hi = hc_min(a, r->hi, hc_div(a, hc_max(a, hc_add(a, B, M), zero), M));
        else r->lo = hc_max(a, r->lo, hc_div(a, hc_add(a, hc_max(a, B, zero), hc_int(a, m - 1)), M));
        return true;
    }
    /* k = +1: d = d0 + L;  k = -1: d = d0 - L */
    bool upper = (k == 1) == (op == HC_OP_LT || op == HC_OP_LE); /* bounds L from above */
    hc_expr *bound;
    if (k == 1) bound = hc_sub(a, hc_int(a, 0), d0); /* L CMP -d0 */
    else bound = d0;                                  /* L CMP' d0 (flipped) */
    bool strict = op == HC_OP_LT || op == HC_OP_GT;
    if (upper) r->hi = hc_min(a, r->hi, strict ? bound : hc_add(a, bound, one));
    else r->lo = hc_max(a, r->lo, strict ? hc_add(a, bound, one) : bound);
    return true;
}

/* Strip min(max(x, 0), e - 1) from a lane-dependent index, recording the lanes where it
 * is the identity into the fast-path condition. */
static hc_expr *unclamp(piece *p, hc_expr *x, lrange *r) {
    int64_t zero, top;
    if (x->kind == HC_E_BINARY && x->u.bin.op == HC_OP_MIN &&
        hc_expr_is_const_int(x->u.bin.b, &top) && x->u.bin.a->kind == HC_E_BINARY &&
        x->u.bin.a->u.bin.op == HC_OP_MAX && hc_expr_is_const_int(x->u.bin.a->u.bin.b, &zero) &&
        zero == 0) {
        hc_expr *y = x->u.bin.a->u.bin.a;
        int64_t k = lane_coef1(y, p->L);
        if (k == INT64_MIN || k == 0) return NULL;
        if (bounded_by(r, y, top)) return y; /* the select's own bounds: no check */
        hc_arena *a = p->c->a;
        hc_expr *y0 = lane0(p->c, p->L, y), *K = hc_int(a, k);
        /* lanes [lo, hi) must satisfy 0 <= y0 + k * L <= top (or be empty): y is smallest
         * at the first lane and largest at the last one when k > 0, the reverse if k < 0 */
        hc_expr *first = hc_add(a, y0, hc_mul(a, K, r->lo));
        hc_expr *last = hc_add(a, y0, hc_mul(a, K, hc_sub(a, r->hi, hc_int(a, 1))));
        if (k < 0) {
            hc_expr *t = first;
            first = last, last = t;
        }
        hc_expr *in = hc_and(a, hc_le(a, hc_int(a, 0), first), hc_le(a, last, hc_int(a, top)));
        piece_and(p, hc_binary(a, HC_OP_OR, hc_le(a, r->hi, r->lo), in));
        return y;
    }
    return lane_coef1(x, p->L) == INT64_MIN ? NULL : x;
}

/* select(cond, X[idx], 0) or X[idx] (f32), after the piecewise rewrite: one masked load
 * of the lanes the condition admits. NULL when the expression has another form. */
static hc_expr *range_load(piece *p, hc_expr *e, hc_expr *count, const hc_type *vt) {
    hc_arena *a = p->c->a;
    lrange r = {.lo = hc_int(a, 0), .hi = count ? hc_min(a, count, hc_int(a, p->lanes))
                                                : hc_int(a, p->lanes)};
    if (p->x) { /* the lanes of piece seg: seg * w - x0 % w <= L < (seg + 1) * w - x0 % w */
        hc_expr *m0 = hc_mod(a, lane0(p->c, p->L, (hc_expr *)p->x), hc_int(a, p->w));
        r.lo = hc_max(a, r.lo, hc_sub(a, hc_int(a, p->seg * p->w), m0));
        r.hi = hc_min(a, r.hi, hc_sub(a, hc_int(a, (p->seg + 1) * p->w), m0));
    }
    hc_expr *ld = e;
    if (e->kind == HC_E_SELECT) {
        const hc_expr *f = e->u.sel.f;
        bool fzero = f->kind == HC_E_CONST && hc_type_is_scalar(f->type, HC_F32) &&
                     f->u.c.f == 0.0;
        if (!fzero || !range_term(p->c, p->L, e->u.sel.cond, &r)) return NULL;
        ld = e->u.sel.t;
    }
    if (ld->kind == HC_E_CAST && hc_type_is_scalar(ld->u.cast.a->type, HC_F32)) ld = ld->u.cast.a;
    if (ld->kind != HC_E_LOAD || !hc_type_is_scalar(ld->type, HC_F32)) return NULL;
    if (r.uniform) r.hi = hc_select(a, r.uniform, r.hi, hc_int(a, 0));
    int n = ld->u.load.n;
    hc_expr **idx = HC_NEW_ARRAY(a, hc_expr *, n + 1);
    for (int d = 0; d < n; d++) {
        hc_expr *x = ld->u.load.idx[d];
        if (mentions(x, p->L)) {
            x = unclamp(p, x, &r);
            if (!x) return NULL;
        }
        idx[d] = x;
    }
    int64_t k = lane_coef(ld->u.load.buf, n, idx, p->L);
    if (k == INT64_MIN || k == 0) return NULL;
    for (int d = 0; d < n; d++) idx[d] = lane0(p->c, p->L, idx[d]);
    hc_expr *ptr = hc_address(a, ld->u.load.buf, n, idx);
    if (k != 1) return strided_load(a, vt, ptr, k, r.lo, r.hi); /* stride-k conv, Slice */
    hc_expr *args[3] = {ptr, r.lo, r.hi};
    return hc_call(a, HC_PRIM_VLOAD_RANGE, vt, 3, args);
}

/* ---- the statement rewrite ---------------------------------------------------------- */
static hc_var *new_lane(rw *c) { return hc_var_new(c->a, "lane", hc_type_scalar(HC_INDEX_TYPE)); }

static hc_expr **lane_idx(rw *c, int n, hc_expr *const *idx, hc_var *L) {
    hc_expr **o = HC_NEW_ARRAY(c->a, hc_expr *, n + 1);
    memcpy(o, idx, sizeof(hc_expr *) * (size_t)n);
    o[n - 1] = hc_add(c->a, idx[n - 1], hc_ref(c->a, L));
    return o;
}

static hc_var *register_array(rw *c, int lanes) {
    const hc_type *t = hc_type_tensor_c(c->a, HC_F32, 1, (int64_t[]){lanes}, HC_SCOPE_REGISTER);
    return hc_var_new(c->a, "lanes", t);
}

static hc_expr *at0(rw *c, hc_var *arr) {
    return hc_address(c->a, arr, 1, (hc_expr *[]){hc_int(c->a, 0)});
}

static hc_expr *min_lanes(rw *c, hc_expr *count, int lanes) {
    return count ? hc_min(c->a, count, hc_int(c->a, lanes)) : hc_int(c->a, lanes);
}

/* A vector load of a prologued param at idx (lanes along the last dim). */
static hc_expr *prologue_vload(rw *c, const hc_tensor *t, hc_expr *call) {
    hc_expr *addr = call->u.call.args[0];
    hc_expr *count = call->u.call.prim == HC_PRIM_VLOAD_MASK ? call->u.call.args[1] : NULL;
    int n = addr->u.load.n, lanes = call->type->lanes;
    if (!hc_type_is_scalar(hc_type_scalar(call->type->dtype), HC_F32) || n < 1) {
        fail(c, "a vector load that is not f32");
        return call;
    }
    hc_var *L = new_lane(c);
    hc_expr *s = value_of(c, t, n, lane_idx(c, n, addr->u.load.idx, L));
    if (c->why) return call;
    vec v = {.c = c, .L = L, .count = count, .lanes = lanes, .vt = call->type};
    bool isvec;
    hc_expr *r = vectorize(&v, s, &isvec);
    if (!v.bad) return isvec ? r : as_vec(&v, r, false);
    /* lane by lane into a register array; first, when the lanes stay within one block of
     * every div/mod (one row of an im2col or pad), as one masked load */
    hc_arena *a = c->a;
    /* one masked load per piece: the lanes of a vector span at most this many blocks of
     * the divisor (rows of an im2col); their loads cover disjoint lanes, so they add up */
    piece pc = {.c = c, .L = L, .lanes = lanes};
    hc_mutator pm = {.a = a, .ctx = &pc, .expr = piece_expr};
    hc_expr *s2 = hc_mutate_expr(&pm, s);
    hc_expr *fast = pc.bad ? NULL : range_load(&pc, s2, count, call->type);
    int nseg = pc.x ? (int)((lanes - 1 + pc.w - 1) / pc.w) + 1 : 1;
    for (int seg = 1; fast && seg < nseg && seg <= 16; seg++) {
        piece ps = {.c = c, .L = L, .lanes = lanes, .ok = pc.ok, .seg = seg};
        hc_mutator psm = {.a = a, .ctx = &ps, .expr = piece_expr};
        hc_expr *sp = hc_mutate_expr(&psm, s);
        hc_expr *part = ps.bad ? NULL : range_load(&ps, sp, count, call->type);
        fast = part ? hc_binary(a, HC_OP_ADD, fast, part) : NULL;
        pc.ok = ps.ok;
    }
    if (nseg > 17) fast = NULL;
    hc_var *arr = register_array(c, lanes);
    hc_vec_push(&c->pending, hc_declare(a, arr, NULL));
    if (fast && !pc.ok) { /* exact for every lane: no gather needed */
        c->pending.len--; /* the register array is not needed */
        return fast;
    }
    hc_builder b;
    hc_builder_init(&b, a);
    if (fast && pc.ok) {
        hc_b_if_begin(&b, pc.ok);
        hc_b_eval(&b, vcall(a, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2, at0(c, arr), fast,
                            NULL));
        hc_b_else(&b);
    }
    if (count) {
        hc_var *z = hc_var_new(a, "z", hc_type_scalar(HC_INDEX_TYPE));
        hc_stmt *zs = hc_store(a, arr, 1, (hc_expr *[]){hc_ref(a, z)}, hc_f32(a, 0));
        hc_b_emit(&b, hc_for(a, z, hc_int(a, lanes), hc_serial(), zs));
    }
    hc_var *l = hc_var_new(a, "l", hc_type_scalar(HC_INDEX_TYPE));
    hc_expr *sl = hc_subst_expr(a, s, 1, &L, (hc_expr *[]){hc_ref(a, l)});
    hc_stmt *st = hc_store(a, arr, 1, (hc_expr *[]){hc_ref(a, l)}, sl);
    hc_expr *ext = min_lanes(c, count, lanes);
    if (count) ext = hc_max(a, ext, hc_int(a, 0));
    hc_b_emit(&b, hc_for(a, l, ext, hc_serial(), st));
    if (fast && pc.ok) hc_b_end(&b);
    hc_vec_push(&c->pending, hc_builder_finish(&b));
    return vcall(a, HC_PRIM_VLOAD, call->type, 1, at0(c, arr), NULL, NULL);
}

/* A vector store of the anchor's output at idx. */
static hc_stmt *epilogue_vstore(rw *c, hc_expr *call) {
    hc_arena *a = c->a;
    hc_expr *addr = call->u.call.args[0], *val = call->u.call.args[1];
    hc_expr *count = call->u.call.prim == HC_PRIM_VSTORE_MASK ? call->u.call.args[2] : NULL;
    int n = addr->u.load.n, lanes = val->type->lanes;
    if (val->type->kind != HC_TY_VECTOR || val->type->dtype != HC_F32 || n < 1) {
        fail(c, "a vector store that is not f32");
        return NULL;
    }
    hc_var *L = new_lane(c);
    hc_var *vs = hc_var_new(a, "v", hc_type_scalar(HC_F32));
    hc_expr *s = hc_ref(a, vs), **yi;
    int yn;
    const hc_tensor *out = epilogue(c, lane_idx(c, n, addr->u.load.idx, L), n, &s, &yi, &yn);
    if (c->why) return NULL;
    hc_var *Y = param_of(c, out);
    /* the value is named once (it may be a whole expression) */
    hc_var *vv = hc_var_new(a, "acc", val->type);
    vec v = {.c = c, .L = L, .vs = vs, .vvalue = hc_ref(a, vv), .count = count, .lanes = lanes,
             .vt = val->type};
    int64_t k = out->dtype == HC_F32 ? lane_coef(Y, yn, yi, L) : -1;
    bool isvec = false;
    hc_expr *r = k == 1 ? vectorize(&v, s, &isvec) : NULL;
    hc_stmt *body;
    if (k == 1 && !v.bad) {
        hc_expr **y0 = HC_NEW_ARRAY(a, hc_expr *, yn + 1);
        for (int d = 0; d < yn; d++) y0[d] = zero_lane(&v, yi[d]);
        hc_expr *p = hc_address(a, Y, yn, y0);
        r = as_vec(&v, r, isvec);
        hc_expr *st = count ? vcall(a, HC_PRIM_VSTORE_MASK, hc_type_scalar(HC_VOID), 3, p, r, count)
                            : vcall(a, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2, p, r, NULL);
        body = hc_eval(a, st);
    } else { /* lane by lane through a register array */
        hc_var *arr = register_array(c, lanes);
        hc_stmt *spill = hc_eval(a, vcall(a, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2,
                                          at0(c, arr), hc_ref(a, vv), NULL));
        hc_var *l = hc_var_new(a, "l", hc_type_scalar(HC_INDEX_TYPE));
        hc_expr *lr = hc_ref(a, l);
        hc_expr *lane_val = hc_load(a, arr, 1, (hc_expr *[]){lr});
        hc_expr *sl = hc_subst_expr(a, s, 1, &L, &lr);
        sl = hc_subst_expr(a, sl, 1, &vs, &lane_val);
        hc_expr **yl = HC_NEW_ARRAY(a, hc_expr *, yn + 1);
        for (int d = 0; d < yn; d++) yl[d] = hc_subst_expr(a, yi[d], 1, &L, &lr);
        if (!hc_type_equal(sl->type, hc_type_scalar(out->dtype)))
            sl = hc_cast(a, hc_type_scalar(out->dtype), sl);
        hc_stmt *st = hc_store(a, Y, yn, yl, sl);
        hc_stmt *loop = hc_for(a, l, min_lanes(c, count, lanes), hc_serial(), st);
        body = hc_seq(a, 3, (hc_stmt *[]){hc_declare(a, arr, NULL), spill, loop});
    }
    return hc_let(a, vv, val, body);
}

static hc_stmt *epilogue_store(rw *c, hc_stmt *s) {
    hc_arena *a = c->a;
    hc_expr *v = s->u.store.value, **yi;
    int yn;
    const hc_tensor *out = epilogue(c, s->u.store.idx, s->u.store.n, &v, &yi, &yn);
    if (c->why) return s;
    if (!hc_type_equal(v->type, hc_type_scalar(out->dtype)))
        v = hc_cast(a, hc_type_scalar(out->dtype), v);
    return hc_store(a, param_of(c, out), yn, yi, v);
}

static int pro_index(const rw *c, const hc_var *v) {
    for (size_t i = 0; i < c->pro_vars.len; i++)
        if (c->pro_vars.data[i] == v) return (int)i;
    return -1;
}

static hc_var *dedup(const rw *c, hc_var *v) {
    for (size_t i = 0; i < c->dup_from.len; i++)
        if (c->dup_from.data[i] == v) return c->dup_to.data[i];
    return v;
}

static bool is_addr_of(const hc_expr *e, const hc_var *v) {
    return e->kind == HC_E_ADDRESS && e->u.load.buf == v;
}

static hc_expr *rw_expr(hc_mutator *m, hc_expr *e) {
    rw *c = m->ctx;
    if (c->why) return e;
    if ((e->kind == HC_E_LOAD || e->kind == HC_E_ADDRESS) && dedup(c, e->u.load.buf) != e->u.load.buf)
        return e->kind == HC_E_LOAD
                   ? hc_load(c->a, dedup(c, e->u.load.buf), e->u.load.n, e->u.load.idx)
                   : hc_address(c->a, dedup(c, e->u.load.buf), e->u.load.n, e->u.load.idx);
    if (e->kind == HC_E_LOAD) {
        int p = pro_index(c, e->u.load.buf);
        if (p >= 0) return value_of(c, c->pro_tens.data[p], e->u.load.n, e->u.load.idx);
        if (c->out_var && e->u.load.buf == c->out_var) fail(c, "the template reads its output");
        return e;
    }
    if (e->kind == HC_E_CALL && (e->u.call.prim == HC_PRIM_VLOAD ||
                                 e->u.call.prim == HC_PRIM_VLOAD_MASK)) {
        hc_expr *ad = e->u.call.args[0];
        if (ad->kind != HC_E_ADDRESS) return e;
        int p = pro_index(c, ad->u.load.buf);
        if (p >= 0) return prologue_vload(c, c->pro_tens.data[p], e);
        if (c->out_var && ad->u.load.buf == c->out_var) fail(c, "the template reads its output");
    }
    return e;
}

static hc_stmt *rw_stmt(hc_mutator *m, hc_stmt *s) {
    rw *c = m->ctx;
    if (c->why) return s;
    if (c->out_var && s->kind == HC_S_STORE && s->u.store.buf == c->out_var)
        s = epilogue_store(c, s);
    else if (c->out_var && s->kind == HC_S_EVAL && s->u.eval.e->kind == HC_E_CALL &&
             (s->u.eval.e->u.call.prim == HC_PRIM_VSTORE ||
              s->u.eval.e->u.call.prim == HC_PRIM_VSTORE_MASK) &&
             is_addr_of(s->u.eval.e->u.call.args[0], c->out_var)) {
        hc_stmt *r = epilogue_vstore(c, s->u.eval.e);
        if (r) s = r;
    } else if (s->kind == HC_S_STORE && dedup(c, s->u.store.buf) != s->u.store.buf) {
        s = hc_store(c->a, dedup(c, s->u.store.buf), s->u.store.n, s->u.store.idx,
                     s->u.store.value);
    }
    if (c->pending.len) {
        hc_vec_push(&c->pending, s);
        s = hc_seq(c->a, (int)c->pending.len, c->pending.data);
        c->pending.len = 0;
    }
    return s;
}

/* Does any statement or expression still use v? */
typedef struct scan {
    const hc_var *v;
    bool found;
} scan;

static hc_expr *scan_expr(hc_mutator *m, hc_expr *e) {
    scan *s = m->ctx;
    if ((e->kind == HC_E_LOAD || e->kind == HC_E_ADDRESS) && e->u.load.buf == s->v) s->found = true;
    if (e->kind == HC_E_VAR && e->u.var == s->v) s->found = true;
    return e;
}

static hc_stmt *scan_stmt(hc_mutator *m, hc_stmt *st) {
    scan *s = m->ctx;
    if (st->kind == HC_S_STORE && st->u.store.buf == s->v) s->found = true;
    return st;
}

static bool still_used(hc_arena *a, hc_stmt *body, const hc_var *v) {
    scan s = {.v = v};
    hc_mutator m = {.a = a, .ctx = &s, .expr = scan_expr, .stmt = scan_stmt};
    hc_mutate_stmt(&m, body);
    return s.found;
}

hc_func *hc_fuse_rewrite(hc_arena *a, const hc_group *grp, const hc_func *f, const char **why) {
    rw c = {.a = a, .grp = grp, .f = f};
    const hc_node *an = grp->anchor;
    int p = 0;
    hc_func *res = NULL;
    for (int i = 0; i < an->ninputs; i++) {
        const hc_tensor *t = an->inputs[i];
        if (!t) continue;
        if (p >= f->nparams) break;
        hc_var *v = f->params[p++];
        if (t->producer && is_prologue(&c, t->producer)) {
            hc_vec_push(&c.pro_vars, v);
            hc_vec_push(&c.pro_tens, t);
            continue;
        }
        hc_var *prev = NULL;
        for (size_t q = 0; q < c.ptens.len; q++)
            if (c.ptens.data[q] == t) prev = c.pvars.data[q];
        if (prev) {
            hc_vec_push(&c.dup_from, v);
            hc_vec_push(&c.dup_to, prev);
        } else {
            hc_vec_push(&c.ptens, t);
            hc_vec_push(&c.pvars, v);
        }
    }
    int nout = 0;
    for (int i = 0; i < an->noutputs; i++) {
        const hc_tensor *t = an->outputs[i];
        if (!t) continue;
        nout++;
        if (p >= f->nparams) break;
        hc_var *v = f->params[p++];
        if (grp->nepilogue) c.out_var = v, c.out_tensor = t;
        else {
            hc_vec_push(&c.ptens, t);
            hc_vec_push(&c.pvars, v);
        }
    }
    if (p != f->nparams || (grp->nepilogue && nout != 1)) {
        fail(&c, "the anchor's program does not take one parameter per input and output");
        goto out;
    }
    hc_mutator m = {.a = a, .ctx = &c, .expr = rw_expr, .stmt = rw_stmt};
    hc_stmt *body = hc_mutate_stmt(&m, f->body);
    if (c.why) goto out;
    for (size_t i = 0; i < c.pro_vars.len; i++)
        if (still_used(a, body, c.pro_vars.data[i])) {
            fail(&c, "the template uses a prologued input other than by loads");
            goto out;
        }
    if (c.out_var && still_used(a, body, c.out_var)) {
        fail(&c, "the template uses its output other than by stores");
        goto out;
    }
    int np = grp->ninputs + grp->noutputs;
    hc_var **params = HC_NEW_ARRAY(a, hc_var *, np + 1);
    for (int i = 0; i < grp->ninputs; i++) params[i] = param_of(&c, grp->inputs[i]);
    for (int i = 0; i < grp->noutputs; i++) params[grp->ninputs + i] = param_of(&c, grp->outputs[i]);
    /* every tensor the program touches must be a parameter */
    for (size_t i = 0; i < c.ptens.len; i++) {
        bool found = false;
        for (int j = 0; j < np && !found; j++) found = params[j] == c.pvars.data[i];
        if (!found && still_used(a, body, c.pvars.data[i])) {
            fail(&c, "the fused program reads a tensor that is not a group input");
            goto out;
        }
    }
    res = hc_func_new(a, f->name, f->kind, np, params, body);
    hc_error e = {0};
    if (hc_verify_func(res, false, &e) != HC_OK) {
        res = NULL;
        fail(&c, hc_arena_printf(a, "the fused program does not verify: %s", e.msg));
    }
out:
    if (why) *why = c.why;
    hc_vec_free(&c.ptens);
    hc_vec_free(&c.pvars);
    hc_vec_free(&c.pro_vars);
    hc_vec_free(&c.pro_tens);
    hc_vec_free(&c.dup_from);
    hc_vec_free(&c.dup_to);
    hc_vec_free(&c.tnodes_of);
    hc_vec_free(&c.tasks);
    hc_vec_free(&c.pending);
    return c.why ? NULL : res;
}
