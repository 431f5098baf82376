/* sched_util.c — see sched_util.h. */
#include <math.h>
#include <string.h>

#include "ir/mapping.h"
#include "target/sched_util.h"

/* ---- expression utilities ---------------------------------------------------------- */
int hc_as_children(const hc_expr *e, hc_expr **out) {
    switch (e->kind) {
    case HC_E_CONST:
    case HC_E_VAR: return 0;
    case HC_E_BINARY: out[0] = e->u.bin.a, out[1] = e->u.bin.b; return 2;
    case HC_E_UNARY: out[0] = e->u.un.a; return 1;
    case HC_E_SELECT: out[0] = e->u.sel.cond, out[1] = e->u.sel.t, out[2] = e->u.sel.f; return 3;
    case HC_E_CAST: out[0] = e->u.cast.a; return 1;
    case HC_E_CALL:
        memcpy(out, e->u.call.args, sizeof(hc_expr *) * (size_t)e->u.call.nargs);
        return e->u.call.nargs;
    case HC_E_LOAD:
    case HC_E_ADDRESS:
        memcpy(out, e->u.load.idx, sizeof(hc_expr *) * (size_t)e->u.load.n);
        return e->u.load.n;
    case HC_E_TENSOR_ACCESS:
        memcpy(out, e->u.access.idx, sizeof(hc_expr *) * (size_t)e->u.access.n);
        return e->u.access.n;
    case HC_E_REDUCE: out[0] = e->u.reduce.value; return 1;
    }
    hc_unreachable();
}


int64_t hc_as_expr_size(const hc_expr *e) {
    hc_expr *c[HC_AS_MAX_CHILDREN];
    int n = hc_as_children(e, c);
    int64_t s = 1;
    for (int i = 0; i < n; i++) s += hc_as_expr_size(c[i]);
    return s;
}


/* Distinct reduces of e that are not inside another reduce, in visit order. */
void hc_as_top_reduces(hc_expr *e, hc_expr_vec *out) {
    if (e->kind == HC_E_REDUCE) {
        for (size_t i = 0; i < out->len; i++)
            if (out->data[i] == e) return;
        hc_vec_push(out, e);
        return;
    }
    hc_expr *c[HC_AS_MAX_CHILDREN];
    int n = hc_as_children(e, c);
    for (int i = 0; i < n; i++) hc_as_top_reduces(c[i], out);
}

/* Reduction work per output element: iterations of all (nested) reduce loops. */
int64_t hc_as_reduce_work(hc_expr *e) {
    if (e->kind == HC_E_REDUCE) {
        int64_t it = 1;
        for (int i = 0; i < e->u.reduce.naxes; i++) it *= e->u.reduce.extents[i];
        return it * HC_MAX(1, hc_as_reduce_work(e->u.reduce.value));
    }
    hc_expr *c[HC_AS_MAX_CHILDREN];
    int n = hc_as_children(e, c);
    int64_t w = 0;
    for (int i = 0; i < n; i++) w += hc_as_reduce_work(c[i]);
    return w;
}

/* A reduce evaluated only conditionally (select branch, right side of && / ||) cannot
 * get a loop nest of its own without changing which elements are read. Nested reduces
 * are not looked into (callers reject them separately). */
bool hc_as_reduce_under_condition(const hc_expr *e, bool lazy) {
    if (e->kind == HC_E_REDUCE) return lazy;
    hc_expr *c[HC_AS_MAX_CHILDREN];
    int n = hc_as_children(e, c);
    bool logic = e->kind == HC_E_BINARY && (e->u.bin.op == HC_OP_AND || e->u.bin.op == HC_OP_OR);
    for (int i = 0; i < n; i++) {
        bool branch = (e->kind == HC_E_SELECT && i > 0) || (logic && i == 1);
        if (hc_as_reduce_under_condition(c[i], lazy || branch)) return true;
    }
    return false;
}

/* Does a load's innermost index mention v (contiguous along v)? */
bool hc_as_contiguous_in(const hc_expr *e, const hc_var *v) {
    if (e->kind == HC_E_LOAD && e->u.load.n > 0 &&
        hc_expr_mentions(e->u.load.idx[e->u.load.n - 1], v))
        return true;
    hc_expr *c[HC_AS_MAX_CHILDREN];
    int n = hc_as_children(e, c);
    for (int i = 0; i < n; i++)
        if (hc_as_contiguous_in(c[i], v)) return true;
    return false;
}

/* ---- translation of task expressions to program expressions -------------------------- */
hc_as_node *hc_as_find_info(hc_as_sched *s, const hc_tnode *n) {
    for (int i = 0; i < s->ninfo; i++)
        if (s->info[i].node == n) return &s->info[i];
    return NULL;
}

void hc_as_sched_fail(hc_as_sched *s, hc_status st, const char *what, const char *name) {
    if (s->st) return;
    s->st = hc_error_set(s->err, st, "auto_schedule %s: %s%s%s", s->task->name, what,
                         name ? " " : "", name ? name : "");
}

static hc_expr *translate_cb(hc_mutator *m, hc_expr *e) {
    hc_as_sched *s = m->ctx;
    if (e->type->kind != HC_TY_SCALAR || e->type->dtype == HC_VOID) {
        hc_as_sched_fail(s, HC_ERR_UNSUPPORTED, "non-scalar expression in", "a task");
        return e;
    }
    if (e->kind == HC_E_LOAD || e->kind == HC_E_ADDRESS) {
        hc_as_sched_fail(s, HC_ERR_INVALID, "program-level load in a task definition", NULL);
        return e;
    }
    if (e->kind == HC_E_REDUCE) {
        int64_t it = 1;
        for (int i = 0; i < e->u.reduce.naxes; i++) it *= e->u.reduce.extents[i];
        if (it <= 0 && e->u.reduce.kind == HC_REDUCE_AVG)
            hc_as_sched_fail(s, HC_ERR_INVALID, "average over an empty range", NULL);
        return e;
    }
    if (e->kind != HC_E_TENSOR_ACCESS) return e;
    const hc_tnode *t = e->u.access.tensor;
    hc_as_node *ni = hc_as_find_info(s, t);
    if (!ni) {
        hc_as_sched_fail(s, HC_ERR_INVALID, "reads a tensor that is not a task input:", t->name);
        return e;
    }
    if (ni->role == HC_AS_INLINE)
        return hc_subst_expr(s->a, ni->value, t->ndim, t->axes, e->u.access.idx);
    if (t->ndim == 0) return hc_load(s->a, ni->buf, 1, (hc_expr *[]){hc_int(s->a, 0)});
    return hc_load(s->a, ni->buf, t->ndim, e->u.access.idx);
}

hc_expr *hc_as_translate(hc_as_sched *s, hc_expr *e) {
    hc_mutator m = {.a = s->a, .ctx = s, .expr = translate_cb};
    return hc_mutate_expr(&m, e);
}

/* ---- planning -------------------------------------------------------------------- */
const hc_type *hc_as_buffer_type(hc_arena *a, const hc_tnode *n) {
    int64_t one = 1;
    if (hc_tnode_is_symbolic(n)) { /* dims as expressions of the symbol variables */
        hc_expr *shape[HC_MAX_DIMS];
        for (int d = 0; d < n->ndim; d++) shape[d] = hc_tnode_extent(a, n, d);
        return hc_type_tensor(a, n->dtype, n->ndim, shape, NULL, HC_SCOPE_GLOBAL);
    }
    return n->ndim == 0 ? hc_type_tensor_c(a, n->dtype, 1, &one, HC_SCOPE_GLOBAL)
                        : hc_type_tensor_c(a, n->dtype, n->ndim, n->shape, HC_SCOPE_GLOBAL);
}

bool hc_as_is_output(const hc_task *t, const hc_tnode *n) {
    for (int i = 0; i < t->noutputs; i++)
        if (t->outputs[i] == n) return true;
    return false;
}

static double numel_of(const hc_tnode *n) {
    double e = 1;
    for (int d = 0; d < n->ndim; d++) e *= (double)n->shape[d];
    return e;
}

/* Whether e computes more than a few loads and additions: a math call or a division. */
static bool expensive(const hc_expr *e) {
    if (e->kind == HC_E_CALL || (e->kind == HC_E_BINARY && (e->u.bin.op == HC_OP_DIV ||
                                                            e->u.bin.op == HC_OP_MOD)))
        return true;
    if (e->kind == HC_E_TENSOR_ACCESS) return false; /* another node: judged on its own */
    hc_expr *c[HC_AS_MAX_CHILDREN];
    int n = hc_as_children((hc_expr *)e, c);
    for (int i = 0; i < n; i++)
        if (expensive(c[i])) return true;
    return false;
}

/* reads[k] += per * (iterations of the reduces around each access of nodes[k] in e): per
 * is how often e is evaluated. */
static void count_reads(const hc_expr *e, double per, hc_tnode **nodes, int nnodes,
                        double *reads) {
    if (e->kind == HC_E_REDUCE) {
        for (int i = 0; i < e->u.reduce.naxes; i++) per *= (double)e->u.reduce.extents[i];
    } else if (e->kind == HC_E_TENSOR_ACCESS) {
        for (int k = 0; k < nnodes; k++)
            if (nodes[k] == e->u.access.tensor) reads[k] += per;
    }
    hc_expr *c[HC_AS_MAX_CHILDREN];
    int n = hc_as_children((hc_expr *)e, c);
    for (int i = 0; i < n; i++) count_reads(c[i], per, nodes, nnodes, reads);
}

/* Injective nodes that inlining would evaluate many times per element: consumers from
 * last to first, each evaluated once per element when materialized and as often as it is
 * read when inlined; a node read more than twice per element on average whose own value
 * is expensive (exp, a division, ...) is materialized instead: inlining a softmax's
 * probabilities into the product with V would recompute every exp head_size times. */
static bool *amplified_nodes(hc_as_sched *s, hc_tnode **nodes, int nnodes) {
    double *reads = hc_xcalloc((size_t)nnodes + 1, sizeof(double));
    bool *mat = hc_xcalloc((size_t)nnodes + 1, sizeof(bool));
    for (int k = nnodes - 1; k >= 0; k--) {
        const hc_tnode *n = nodes[k];
        double size = numel_of(n);
        bool out = hc_as_is_output(s->task, n), red = hc_expr_has_reduce(n->value);
        mat[k] = !out && !red && reads[k] > 2 * size && expensive(n->value);
        double evals = out || red || mat[k] ? size : reads[k];
        count_reads(n->value, evals, nodes, nnodes, reads); /* each evaluation reads them */
    }
    free(reads);
    return mat;
}

void hc_as_assign_roles(hc_as_sched *s, hc_tnode **nodes, int nnodes) {
    bool *amplified = amplified_nodes(s, nodes, nnodes);
    for (int k = 0; k < nnodes && !s->st; k++) {
        hc_as_node *ni = &s->info[s->task->ninputs + k];
        const hc_tnode *n = nodes[k];
        ni->node = n;
        if (n->dtype == HC_VOID || n->dtype >= HC_DTYPE_COUNT)
            hc_as_sched_fail(s, HC_ERR_INVALID, "node without a value type:", n->name);
        ni->value = hc_as_translate(s, n->value);
        bool inl = !hc_as_is_output(s->task, n) && !hc_expr_has_reduce(n->value) &&
                   !amplified[k] && hc_as_expr_size(ni->value) <= HC_AS_INLINE_MAX_NODES;
        ni->role = inl ? HC_AS_INLINE : HC_AS_MATERIALIZE;
        for (int i = 0; i < s->task->noutputs; i++)
            if (s->task->outputs[i] == n) ni->buf = s->out_params[i];
        if (!inl && !ni->buf) ni->buf = hc_var_new(s->a, n->name, hc_as_buffer_type(s->a, n));
        /* info entries after k are not yet filled: translation only sees producers */
        s->ninfo = s->task->ninputs + k + 1;
    }
    free(amplified);
}

hc_dtype hc_as_acc_dtype(hc_dtype t) { return t == HC_F16 || t == HC_BF16 ? HC_F32 : t; }

hc_expr *hc_as_reduce_init(hc_arena *a, hc_reduce_kind k, hc_dtype t) {
    int bits = hc_dtype_size(t) * 8;
    bool is_f = hc_dtype_is_float(t), sgn = hc_dtype_is_signed(t) && !is_f;
    hc_value v = {0};
    switch (k) {
    case HC_REDUCE_SUM:
    case HC_REDUCE_AVG: return hc_const_num(a, t, 0);
    case HC_REDUCE_PROD: return hc_const_num(a, t, 1);
    case HC_REDUCE_MAX:
        if (is_f) return hc_const_num(a, t, -INFINITY);
        if (sgn) v.i = bits == 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1));
        return hc_const(a, t, v); /* unsigned and bool: 0 */
    case HC_REDUCE_MIN:
        if (is_f) return hc_const_num(a, t, INFINITY);
        if (t == HC_BOOL) v.i = 1;
        else if (sgn) v.i = bits == 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1;
        else v.u = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
        return hc_const(a, t, v);
    }
    hc_unreachable();
}

hc_expr *hc_as_cast_to(hc_arena *a, hc_dtype t, hc_expr *e) {
    return e->type->dtype == t ? e : hc_cast(a, hc_type_scalar(t), e);
}

hc_expr *hc_as_reduce_combine(hc_arena *a, hc_reduce_kind k, hc_expr *acc, hc_expr *v) {
    v = hc_as_cast_to(a, acc->type->dtype, v);
    switch (k) {
    case HC_REDUCE_SUM:
    case HC_REDUCE_AVG: return hc_as_cast_to(a, acc->type->dtype, hc_add(a, acc, v));
    case HC_REDUCE_PROD: return hc_as_cast_to(a, acc->type->dtype, hc_mul(a, acc, v));
    case HC_REDUCE_MAX: return hc_max(a, acc, v); /* NaN in v is skipped, as in interp.c */
    case HC_REDUCE_MIN: return hc_min(a, acc, v);
    }
    hc_unreachable();
}

/* The reduce's result from its accumulator: average divides, then round to the type. */
hc_expr *hc_as_reduce_finish(hc_arena *a, const hc_expr *r, hc_expr *acc) {
    if (r->u.reduce.kind == HC_REDUCE_AVG) {
        if (hc_reduce_is_symbolic(r)) {
            hc_expr *count = hc_int(a, 1);
            for (int i = 0; i < r->u.reduce.naxes; i++)
                count = hc_mul(a, count, hc_reduce_extent(a, r, i));
            acc = hc_div(a, acc, hc_cast(a, acc->type, count));
        } else {
            int64_t count = 1;
            for (int i = 0; i < r->u.reduce.naxes; i++) count *= r->u.reduce.extents[i];
            acc = hc_div(a, acc, hc_const_num(a, acc->type->dtype, (double)count));
        }
    }
    return hc_as_cast_to(a, r->type->dtype, acc);
}

/* Open one serial loop per reduce axis; fresh variables replace the reduce's own. */
hc_expr *hc_as_open_reduce_loops(hc_builder *b, const hc_expr *r) {
    hc_expr *to[HC_MAX_DIMS];
    for (int i = 0; i < r->u.reduce.naxes; i++) {
        hc_var *v = hc_b_for_begin(b, r->u.reduce.axes[i]->name,
                                   hc_reduce_extent(b->a, r, i), hc_serial());
        to[i] = hc_ref(b->a, v);
    }
    return hc_subst_expr(b->a, r->u.reduce.value, r->u.reduce.naxes, r->u.reduce.axes, to);
}

void hc_as_close_loops(hc_builder *b, int n) {
    for (int i = 0; i < n; i++) hc_b_end(b);
}

typedef struct replace_ctx {
    int n;
    hc_expr **from, **to;
} replace_ctx;

static hc_expr *replace_cb(hc_mutator *m, hc_expr *e) {
    replace_ctx *c = m->ctx;
    for (int i = 0; i < c->n; i++)
        if (c->from[i] == e) return c->to[i];
    return e;
}

hc_expr *hc_as_replace_exprs(hc_arena *a, hc_expr *e, int n, hc_expr **from, hc_expr **to) {
    replace_ctx c = {n, from, to};
    hc_mutator m = {.a = a, .ctx = &c, .expr = replace_cb};
    return hc_mutate_expr(&m, e);
}

/* Open serial loops over the reduce's axes except the innermost; returns the value over
 * the fresh loop variables and `last` (an expression for the innermost reduce axis). */
static hc_expr *open_outer_reduce_loops(hc_builder *b, const hc_expr *r, hc_expr *last) {
    hc_expr *to[HC_MAX_DIMS];
    int n = r->u.reduce.naxes;
    for (int i = 0; i + 1 < n; i++) {
        hc_var *v = hc_b_for_begin(b, r->u.reduce.axes[i]->name,
                                   hc_reduce_extent(b->a, r, i), hc_serial());
        to[i] = hc_ref(b->a, v);
    }
    to[n - 1] = last;
    return hc_subst_expr(b->a, r->u.reduce.value, n, r->u.reduce.axes, to);
}

/* Lanes of partial accumulators for a reduction along contiguous data: the lane loop
 * is elementwise, so it vectorizes; 0 when the plain scalar loop is used instead. */
static int partial_lanes(const hc_expr *r, int vector_bits) {
    int n = r->u.reduce.naxes;
    int lanes = vector_bits / (8 * hc_dtype_size(hc_as_acc_dtype(r->type->dtype)));
    if (lanes < 2 || r->u.reduce.extents[n - 1] < 2 * lanes) return 0;
    if (r->u.reduce.sext && r->u.reduce.sext[n - 1]) return 0; /* blocks of a fixed K only */
    if (hc_expr_has_reduce(r->u.reduce.value)) return 0;
    return hc_as_contiguous_in(r->u.reduce.value, r->u.reduce.axes[n - 1]) ? lanes : 0;
}

/* acc[l] = combine(acc[l], v at kk = base + l) for l < count */
static void lane_update(hc_builder *b, hc_reduce_kind k, hc_var *acc, hc_expr *v, hc_var *kk,
                        hc_expr *base, int64_t count) {
    hc_arena *a = b->a;
    hc_var *l = hc_b_for_begin(b, "l", hc_int(a, count), hc_serial());
    hc_expr *li[1] = {hc_ref(a, l)};
    v = hc_subst_expr(a, v, 1, &kk, (hc_expr *[]){hc_add(a, base, li[0])});
    hc_b_store(b, acc, 1, li, hc_as_reduce_combine(a, k, hc_load(a, acc, 1, li), v));
    hc_b_end(b);
}

static hc_expr *emit_lane_reduce(hc_builder *b, const hc_expr *r, int lanes) {
    hc_arena *a = b->a;
    hc_reduce_kind k = r->u.reduce.kind;
    hc_dtype at = hc_as_acc_dtype(r->type->dtype);
    int64_t L = lanes, K = r->u.reduce.extents[r->u.reduce.naxes - 1];
    hc_var *acc = hc_b_declare(b, "acc", hc_type_tensor_c(a, at, 1, &L, HC_SCOPE_REGISTER), NULL);
    hc_var *l = hc_b_for_begin(b, "l", hc_int(a, L), hc_serial());
    hc_b_store(b, acc, 1, (hc_expr *[]){hc_ref(a, l)}, hc_as_reduce_init(a, k, at));
    hc_b_end(b);
    /* outer reduce axes, then blocks of L along the innermost, then the lane loop */
    hc_var *kk = hc_axis(a, "kk");
    hc_expr *v = open_outer_reduce_loops(b, r, hc_ref(a, kk));
    hc_var *kb = hc_b_for_begin(b, "kb", hc_int(a, K / L), hc_serial());
    lane_update(b, k, acc, v, kk, hc_mul(a, hc_ref(a, kb), hc_int(a, L)), L);
    hc_b_end(b);
    if (K % L) lane_update(b, k, acc, v, kk, hc_int(a, K / L * L), K % L);
    hc_as_close_loops(b, r->u.reduce.naxes - 1);
    hc_var *sum = hc_b_declare(b, "acc", hc_type_scalar(at),
                               hc_load(a, acc, 1, (hc_expr *[]){hc_int(a, 0)}));
    l = hc_b_for_begin(b, "l", hc_int(a, L - 1), hc_serial());
    hc_expr *next = hc_load(a, acc, 1, (hc_expr *[]){hc_add(a, hc_ref(a, l), hc_int(a, 1))});
    hc_b_assign(b, sum, hc_as_reduce_combine(a, k, hc_ref(a, sum), next));
    hc_b_end(b);
    return hc_as_reduce_finish(a, r, hc_ref(a, sum));
}

/* Top-level reduces of e with the condition under which C semantics evaluate them
 * (select branches and the right side of && / ||); guard NULL means always. */
typedef struct guarded {
    hc_expr_vec rs, guards;
} guarded;

static hc_expr *guard_and(hc_arena *a, hc_expr *g, hc_expr *c) { return g ? hc_and(a, g, c) : c; }

static void collect_guarded(hc_arena *a, hc_expr *e, hc_expr *g, guarded *out) {
    if (e->kind == HC_E_REDUCE) {
        for (size_t i = 0; i < out->rs.len; i++) {
            if (out->rs.data[i] != e) continue;
            hc_expr *old = out->guards.data[i];
            if (old != g) /* needed under either condition */
                out->guards.data[i] = old && g ? hc_binary(a, HC_OP_OR, old, g) : NULL;
            return;
        }
        hc_vec_push(&out->rs, e);
        hc_vec_push(&out->guards, g);
        return;
    }
    if (e->kind == HC_E_SELECT) {
        hc_expr *c = e->u.sel.cond;
        collect_guarded(a, c, g, out);
        collect_guarded(a, e->u.sel.t, guard_and(a, g, c), out);
        collect_guarded(a, e->u.sel.f, guard_and(a, g, hc_unary(a, HC_OP_NOT, c)), out);
        return;
    }
    if (e->kind == HC_E_BINARY && (e->u.bin.op == HC_OP_AND || e->u.bin.op == HC_OP_OR)) {
        hc_expr *l = e->u.bin.a;
        collect_guarded(a, l, g, out);
        hc_expr *c = e->u.bin.op == HC_OP_AND ? l : hc_unary(a, HC_OP_NOT, l);
        collect_guarded(a, e->u.bin.b, guard_and(a, g, c), out);
        return;
    }
    hc_expr *c[HC_AS_MAX_CHILDREN];
    int n = hc_as_children(e, c);
    for (int i = 0; i < n; i++) collect_guarded(a, c[i], g, out);
}

/* Accumulate one reduce; returns the expression of its result. */
static hc_expr *emit_one_reduce(hc_builder *b, hc_expr *r, int vector_bits) {
    int lanes = partial_lanes(r, vector_bits);
    if (lanes) return emit_lane_reduce(b, r, lanes);
    hc_dtype at = hc_as_acc_dtype(r->type->dtype);
    hc_expr *init = hc_as_reduce_init(b->a, r->u.reduce.kind, at);
    hc_var *acc = hc_b_declare(b, "acc", hc_type_scalar(at), init);
    hc_expr *v = hc_as_emit_scalar_reduces(b, hc_as_open_reduce_loops(b, r), vector_bits);
    hc_b_assign(b, acc, hc_as_reduce_combine(b->a, r->u.reduce.kind, hc_ref(b->a, acc), v));
    hc_as_close_loops(b, r->u.reduce.naxes);
    return hc_as_reduce_finish(b->a, r, hc_ref(b->a, acc));
}

/* Emit accumulation loops for every reduce of e (nested ones inside their parent's loop;
 * conditional ones inside an if, so they read only what C semantics would read) and
 * return e with the reduces replaced by their results. */
hc_expr *hc_as_emit_scalar_reduces(hc_builder *b, hc_expr *e, int vector_bits) {
    hc_arena *a = b->a;
    guarded gs = {{0}, {0}};
    collect_guarded(a, e, NULL, &gs);
    size_t n = gs.rs.len;
    hc_expr **res = HC_NEW_ARRAY(a, hc_expr *, n + 1);
    for (size_t i = 0; i < n; i++) {
        hc_expr *r = gs.rs.data[i], *g = gs.guards.data[i];
        if (!g) {
            res[i] = emit_one_reduce(b, r, vector_bits);
            continue;
        }
        /* guards only mention reduces collected before this one */
        g = hc_as_replace_exprs(a, g, (int)i, gs.rs.data, res);
        hc_var *out = hc_b_declare(b, "red", r->type, hc_const_num(a, r->type->dtype, 0));
        hc_b_if_begin(b, g);
        hc_b_assign(b, out, emit_one_reduce(b, r, vector_bits));
        hc_b_end(b);
        res[i] = hc_ref(a, out);
    }
    hc_expr *out = n ? hc_as_replace_exprs(a, e, (int)n, gs.rs.data, res) : e;
    hc_vec_free(&gs.rs);
    hc_vec_free(&gs.guards);
    return out;
}

hc_status hc_as_check_outputs(hc_as_sched *s) {
    const hc_task *t = s->task;
    for (int i = 0; i < t->noutputs; i++)
        for (int j = 0; j < i; j++)
            if (t->outputs[i] == t->outputs[j])
                hc_as_sched_fail(s, HC_ERR_UNSUPPORTED, "the same node is listed twice as output:",
                           t->outputs[i]->name);
    return s->st;
}

hc_tnode **hc_as_begin(hc_as_sched *s, hc_arena *a, const hc_task *t, const hc_target *target,
                       hc_error *err, hc_var ***params_out, int *np, int *nnodes) {
    *s = (hc_as_sched){.a = a, .task = t, .target = target, .err = err};
    if (hc_as_check_outputs(s)) return NULL;
    hc_tnode **nodes = hc_task_compute_nodes(a, t, nnodes);
    s->info = HC_NEW_ARRAY(a, hc_as_node, t->ninputs + *nnodes + 1);
    *np = t->ninputs + t->noutputs;
    hc_var **params = HC_NEW_ARRAY(a, hc_var *, *np + 1);
    for (int i = 0; i < t->ninputs; i++) {
        const hc_tnode *in = t->inputs[i];
        s->info[i] = (hc_as_node){.node = in, .role = HC_AS_INPUT};
        s->info[i].buf = params[i] = hc_var_new(a, in->name, hc_as_buffer_type(a, in));
    }
    for (int i = 0; i < t->noutputs; i++)
        params[t->ninputs + i] =
            hc_var_new(a, t->outputs[i]->name, hc_as_buffer_type(a, t->outputs[i]));
    s->out_params = params + t->ninputs;
    s->ninfo = t->ninputs;
    hc_as_assign_roles(s, nodes, *nnodes);
    if (s->st) return NULL;
    *params_out = params;
    return nodes;
}
