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
 * variable L (last index + L), then vectorized (vectorize.c); what cannot be falls back
 * to a register array filled lane by lane. */
#include <string.h>

#include "fuse/fuse.h"
#include "fuse/vectorize.h"

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
    if (hc_tensor_is_symbolic(t)) { /* dynamic shapes: dims over the symbol variables */
        hc_expr *dims[HC_MAX_DIMS];
        for (int d = 0; d < t->ndim; d++) dims[d] = hc_sym_expr(c->a, hc_tensor_dim(t, d));
        ty = hc_type_tensor(c->a, t->dtype, t->ndim, dims, NULL, HC_SCOPE_GLOBAL);
    }
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
    hc_lanes ln = {.a = c->a, .L = L, .count = count, .lanes = lanes, .vt = call->type};
    bool isvec;
    hc_expr *r = hc_lanes_vectorize(&ln, s, &isvec);
    if (r && (r = hc_lanes_as_vector(&ln, r, isvec))) return r;
    /* lane by lane into a register array; first, when the lanes stay within one block of
     * every div/mod (one row of an im2col or pad), as masked loads */
    hc_arena *a = c->a;
    hc_expr *ok = NULL;
    hc_expr *fast = hc_lanes_range_load(&ln, s, &ok);
    hc_var *arr = register_array(c, lanes);
    hc_vec_push(&c->pending, hc_declare(a, arr, NULL));
    if (fast && !ok) { /* exact for every lane: no gather needed */
        c->pending.len--; /* the register array is not needed */
        return fast;
    }
    hc_builder b;
    hc_builder_init(&b, a);
    if (fast && ok) {
        hc_b_if_begin(&b, ok);
        hc_b_eval(&b, hc_call3(a, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2, at0(c, arr), fast,
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
    if (fast && ok) hc_b_end(&b);
    hc_vec_push(&c->pending, hc_builder_finish(&b));
    return hc_call3(a, HC_PRIM_VLOAD, call->type, 1, at0(c, arr), NULL, NULL);
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
    hc_lanes ln = {.a = a, .L = L, .vs = vs, .vvalue = hc_ref(a, vv), .count = count,
                   .lanes = lanes, .vt = val->type};
    int64_t k = out->dtype == HC_F32 ? hc_offset_coef(Y, yn, yi, L) : -1;
    bool isvec = false;
    hc_expr *r = k == 1 ? hc_lanes_vectorize(&ln, s, &isvec) : NULL;
    if (r) r = hc_lanes_as_vector(&ln, r, isvec);
    hc_stmt *body;
    if (r) {
        hc_expr **y0 = HC_NEW_ARRAY(a, hc_expr *, yn + 1);
        for (int d = 0; d < yn; d++) y0[d] = hc_lanes_at0(&ln, yi[d]);
        hc_expr *p = hc_address(a, Y, yn, y0);
        const hc_type *vd = hc_type_scalar(HC_VOID);
        hc_expr *st = count ? hc_call3(a, HC_PRIM_VSTORE_MASK, vd, 3, p, r, count)
                            : hc_call3(a, HC_PRIM_VSTORE, vd, 2, p, r, NULL);
        body = hc_eval(a, st);
    } else { /* lane by lane through a register array */
        hc_var *arr = register_array(c, lanes);
        hc_stmt *spill = hc_eval(a, hc_call3(a, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2,
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
    if ((e->kind == HC_E_LOAD || e->kind == HC_E_ADDRESS) &&
        dedup(c, e->u.load.buf) != e->u.load.buf)
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
    for (int i = 0; i < grp->noutputs; i++)
        params[grp->ninputs + i] = param_of(&c, grp->outputs[i]);
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
    res->config = f->config;
    hc_error e = {0};
    /* Dynamic shapes: the symbols' variables become parameters later (compile.c,
     * bind_kernel_symbols); the program is verified with them. */
    const hc_func *chk = res;
    const hc_graph *sg = grp->anchor->noutputs && grp->anchor->outputs[0]
                             ? grp->anchor->outputs[0]->graph : NULL;
    if (sg && sg->sym_names.len) {
        int ns = (int)sg->sym_names.len, *slots = HC_NEW_ARRAY(a, int, ns + 1);
        int nsy = hc_program_symbols(a, res, ns, sg->sym_names.data, slots, &e);
        chk = hc_func_with_symbols(a, res, sg->sym_names.data, slots, nsy);
    }
    if (hc_verify_func(chk, false, &e) != HC_OK) {
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
