/* auto_sched.c — the rule-based CPU auto-scheduler for injective and reduction tasks.
 *
 * Rules (DESIGN.md "Scheduling", docs/task.md):
 *  - injective intermediate nodes are inlined into their consumers (unless the inlined
 *    expression grows too large, then they are materialized);
 *  - outputs, and nodes with a reduce that other nodes read, get their own loop nest,
 *    in producer-before-consumer order; intermediates live in heap temporaries;
 *  - a loop nest fuses the outer dimensions (and, when that is not enough work for the
 *    threads, blocks of the innermost one) into one loop over work items, parallel when
 *    there is enough work; a spatial task mapping on that loop's variable recovers the
 *    indices (a repeat mapping when serial); the innermost dimension is a serial loop
 *    the C compiler vectorizes;
 *  - reductions accumulate per work item (so per thread): a vector of accumulators
 *    along the innermost output dimension when the reduced data is contiguous along it
 *    (reduce over a non-innermost axis, matmul-like), else one scalar per element. */
#include <math.h>
#include <string.h>

#include "target/cpu/cpu.h"
#include "ir/mapping.h"
#include "target/cpu/cpu.h"

/* Inlining stops once a node's expression exceeds this many IR nodes. */
#define INLINE_MAX_NODES 256

typedef enum node_role { ROLE_INPUT, ROLE_INLINE, ROLE_MATERIALIZE } node_role;

typedef struct node_info {
    const hc_tnode *node;
    node_role role;
    hc_var *buf;    /* INPUT and MATERIALIZE: the buffer */
    hc_expr *value; /* compute nodes: the value with accesses translated, over node->axes */
} node_info;

typedef struct sched {
    hc_arena *a;
    const hc_task *task;
    const hc_target *target;
    node_info *info;
    int ninfo;
    hc_var **out_params;
    hc_error *err;
    hc_status st;
} sched;

/* ---- expression utilities ---------------------------------------------------------- */
static int children(const hc_expr *e, hc_expr **out) {
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

#define MAX_CHILDREN (HC_MAX_DIMS > 3 ? HC_MAX_DIMS : 3)

static int64_t expr_size(const hc_expr *e) {
    hc_expr *c[MAX_CHILDREN];
    int n = children(e, c);
    int64_t s = 1;
    for (int i = 0; i < n; i++) s += expr_size(c[i]);
    return s;
}

typedef HC_VEC(hc_expr *) expr_vec;

/* Distinct reduces of e that are not inside another reduce, in visit order. */
static void top_reduces(hc_expr *e, expr_vec *out) {
    if (e->kind == HC_E_REDUCE) {
        for (size_t i = 0; i < out->len; i++)
            if (out->data[i] == e) return;
        hc_vec_push(out, e);
        return;
    }
    hc_expr *c[MAX_CHILDREN];
    int n = children(e, c);
    for (int i = 0; i < n; i++) top_reduces(c[i], out);
}

/* Reduction work per output element: iterations of all (nested) reduce loops. */
static int64_t reduce_work(hc_expr *e) {
    if (e->kind == HC_E_REDUCE) {
        int64_t it = 1;
        for (int i = 0; i < e->u.reduce.naxes; i++) it *= e->u.reduce.extents[i];
        return it * HC_MAX(1, reduce_work(e->u.reduce.value));
    }
    hc_expr *c[MAX_CHILDREN];
    int n = children(e, c);
    int64_t w = 0;
    for (int i = 0; i < n; i++) w += reduce_work(c[i]);
    return w;
}

/* A reduce evaluated only conditionally (select branch, right side of && / ||) cannot
 * get a loop nest of its own without changing which elements are read. Nested reduces
 * are not looked into (callers reject them separately). */
static bool reduce_under_condition(const hc_expr *e, bool lazy) {
    if (e->kind == HC_E_REDUCE) return lazy;
    hc_expr *c[MAX_CHILDREN];
    int n = children(e, c);
    bool logic = e->kind == HC_E_BINARY && (e->u.bin.op == HC_OP_AND || e->u.bin.op == HC_OP_OR);
    for (int i = 0; i < n; i++) {
        bool branch = (e->kind == HC_E_SELECT && i > 0) || (logic && i == 1);
        if (reduce_under_condition(c[i], lazy || branch)) return true;
    }
    return false;
}

/* Does a load's innermost index mention v (contiguous along v)? */
static bool contiguous_in(const hc_expr *e, const hc_var *v);

static bool contiguous_in(const hc_expr *e, const hc_var *v) {
    if (e->kind == HC_E_LOAD && e->u.load.n > 0 &&
        hc_expr_mentions(e->u.load.idx[e->u.load.n - 1], v))
        return true;
    hc_expr *c[MAX_CHILDREN];
    int n = children(e, c);
    for (int i = 0; i < n; i++)
        if (contiguous_in(c[i], v)) return true;
    return false;
}

/* ---- translation of task expressions to program expressions -------------------------- */
static node_info *find_info(sched *s, const hc_tnode *n) {
    for (int i = 0; i < s->ninfo; i++)
        if (s->info[i].node == n) return &s->info[i];
    return NULL;
}

static void sched_fail(sched *s, hc_status st, const char *what, const char *name) {
    if (s->st) return;
    s->st = hc_error_set(s->err, st, "auto_schedule %s: %s%s%s", s->task->name, what,
                         name ? " " : "", name ? name : "");
}

static hc_expr *translate_cb(hc_mutator *m, hc_expr *e) {
    sched *s = m->ctx;
    if (e->type->kind != HC_TY_SCALAR || e->type->dtype == HC_VOID) {
        sched_fail(s, HC_ERR_UNSUPPORTED, "non-scalar expression in", "a task");
        return e;
    }
    if (e->kind == HC_E_LOAD || e->kind == HC_E_ADDRESS) {
        sched_fail(s, HC_ERR_INVALID, "program-level load in a task definition", NULL);
        return e;
    }
    if (e->kind == HC_E_REDUCE) {
        int64_t it = 1;
        for (int i = 0; i < e->u.reduce.naxes; i++) it *= e->u.reduce.extents[i];
        if (it <= 0 && e->u.reduce.kind == HC_REDUCE_AVG)
            sched_fail(s, HC_ERR_INVALID, "average over an empty range", NULL);
        return e;
    }
    if (e->kind != HC_E_TENSOR_ACCESS) return e;
    const hc_tnode *t = e->u.access.tensor;
    node_info *ni = find_info(s, t);
    if (!ni) {
        sched_fail(s, HC_ERR_INVALID, "reads a tensor that is not a task input:", t->name);
        return e;
    }
    if (ni->role == ROLE_INLINE)
        return hc_subst_expr(s->a, ni->value, t->ndim, t->axes, e->u.access.idx);
    if (t->ndim == 0) return hc_load(s->a, ni->buf, 1, (hc_expr *[]){hc_int(s->a, 0)});
    return hc_load(s->a, ni->buf, t->ndim, e->u.access.idx);
}

static hc_expr *translate(sched *s, hc_expr *e) {
    hc_mutator m = {.a = s->a, .ctx = s, .expr = translate_cb};
    return hc_mutate_expr(&m, e);
}

/* ---- planning -------------------------------------------------------------------- */
static const hc_type *buffer_type(hc_arena *a, const hc_tnode *n) {
    int64_t one = 1;
    return n->ndim == 0 ? hc_type_tensor_c(a, n->dtype, 1, &one, HC_SCOPE_GLOBAL)
                        : hc_type_tensor_c(a, n->dtype, n->ndim, n->shape, HC_SCOPE_GLOBAL);
}

static bool is_output(const hc_task *t, const hc_tnode *n) {
    for (int i = 0; i < t->noutputs; i++)
        if (t->outputs[i] == n) return true;
    return false;
}

static void assign_roles(sched *s, hc_tnode **nodes, int nnodes) {
    for (int k = 0; k < nnodes && !s->st; k++) {
        node_info *ni = &s->info[s->task->ninputs + k];
        const hc_tnode *n = nodes[k];
        ni->node = n;
        if (n->dtype == HC_VOID || n->dtype >= HC_DTYPE_COUNT)
            sched_fail(s, HC_ERR_INVALID, "node without a value type:", n->name);
        ni->value = translate(s, n->value);
        bool inl = !is_output(s->task, n) && !hc_expr_has_reduce(n->value) &&
                   expr_size(ni->value) <= INLINE_MAX_NODES;
        ni->role = inl ? ROLE_INLINE : ROLE_MATERIALIZE;
        for (int i = 0; i < s->task->noutputs; i++)
            if (s->task->outputs[i] == n) ni->buf = s->out_params[i];
        if (!inl && !ni->buf) ni->buf = hc_var_new(s->a, n->name, buffer_type(s->a, n));
        /* info entries after k are not yet filled: translation only sees producers */
        s->ninfo = s->task->ninputs + k + 1;
    }
}

/* The loop nest of one materialized node. */
typedef struct nest {
    int ndim;                  /* >= 1: a 0-d node is computed as shape [1] */
    int64_t dims[HC_MAX_DIMS];
    int64_t inner, outer, blk, nblk, nwork;
    bool parallel, vector_acc;
    int tile_dim; /* >= 0: tiles of tile x tile over (tile_dim, innermost) */
    int64_t tile;
} nest;

static void plan_nest(const sched *s, const hc_tnode *n, int64_t work, bool vector_acc,
                      int tile_dim, nest *p) {
    p->ndim = n->ndim ? n->ndim : 1;
    for (int i = 0; i < p->ndim; i++) p->dims[i] = n->ndim ? n->shape[i] : 1;
    p->inner = p->dims[p->ndim - 1];
    p->tile_dim = tile_dim;
    p->tile = hc_dtype_size(n->dtype) <= 4 ? 32 : 16;
    p->outer = 1;
    for (int i = 0; i + 1 < p->ndim; i++)
        p->outer *= i == tile_dim ? hc_cdiv(p->dims[i], p->tile) : p->dims[i];
    int threads = s->target ? HC_MAX(1, s->target->caps.num_cores) : 1;
    int lanes = s->target ? HC_MAX(1, hc_target_f32_lanes(s->target)) : 8;
    p->vector_acc = vector_acc;
    p->parallel = threads > 1 && work >= HC_AUTOSCHED_PARALLEL_MIN_WORK;
    p->blk = vector_acc ? HC_MIN(p->inner, HC_AUTOSCHED_MAX_ACC) : p->inner;
    if (tile_dim >= 0) p->blk = HC_MIN(p->inner, p->tile);
    /* Too few outer work items for the threads: also split the innermost dimension, in
     * blocks that stay multiples of the vector width. */
    if (p->parallel && p->outer * hc_cdiv(p->inner, p->blk) < 2 * threads) {
        int64_t want = hc_cdiv(2 * threads, p->outer);
        int64_t b = hc_cdiv(p->inner, want);
        b = hc_round_up(b, lanes);
        if (b < p->blk) p->blk = b;
    }
    p->nblk = hc_cdiv(p->inner, p->blk);
    p->nwork = p->outer * p->nblk;
    if (p->nwork < 2) p->parallel = false;
}

/* ---- emission -------------------------------------------------------------------- */
static hc_dtype acc_dtype(hc_dtype t) { return t == HC_F16 || t == HC_BF16 ? HC_F32 : t; }

static hc_expr *reduce_init(hc_arena *a, hc_reduce_kind k, hc_dtype t) {
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

static hc_expr *cast_to(hc_arena *a, hc_dtype t, hc_expr *e) {
    return e->type->dtype == t ? e : hc_cast(a, hc_type_scalar(t), e);
}

static hc_expr *reduce_combine(hc_arena *a, hc_reduce_kind k, hc_expr *acc, hc_expr *v) {
    v = cast_to(a, acc->type->dtype, v);
    switch (k) {
    case HC_REDUCE_SUM:
    case HC_REDUCE_AVG: return cast_to(a, acc->type->dtype, hc_add(a, acc, v));
    case HC_REDUCE_PROD: return cast_to(a, acc->type->dtype, hc_mul(a, acc, v));
    case HC_REDUCE_MAX: return hc_max(a, acc, v); /* NaN in v is skipped, as in interp.c */
    case HC_REDUCE_MIN: return hc_min(a, acc, v);
    }
    hc_unreachable();
}

/* The reduce's result from its accumulator: average divides, then round to the type. */
static hc_expr *reduce_finish(hc_arena *a, const hc_expr *r, hc_expr *acc) {
    if (r->u.reduce.kind == HC_REDUCE_AVG) {
        int64_t count = 1;
        for (int i = 0; i < r->u.reduce.naxes; i++) count *= r->u.reduce.extents[i];
        acc = hc_div(a, acc, hc_const_num(a, acc->type->dtype, (double)count));
    }
    return cast_to(a, r->type->dtype, acc);
}

/* Open one serial loop per reduce axis; fresh variables replace the reduce's own. */
static hc_expr *open_reduce_loops(hc_builder *b, const hc_expr *r) {
    hc_expr *to[HC_MAX_DIMS];
    for (int i = 0; i < r->u.reduce.naxes; i++) {
        hc_var *v = hc_b_for_begin(b, r->u.reduce.axes[i]->name,
                                   hc_int(b->a, r->u.reduce.extents[i]), hc_serial());
        to[i] = hc_ref(b->a, v);
    }
    return hc_subst_expr(b->a, r->u.reduce.value, r->u.reduce.naxes, r->u.reduce.axes, to);
}

static void close_loops(hc_builder *b, int n) {
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

static hc_expr *replace_exprs(hc_arena *a, hc_expr *e, int n, hc_expr **from, hc_expr **to) {
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
                                   hc_int(b->a, r->u.reduce.extents[i]), hc_serial());
        to[i] = hc_ref(b->a, v);
    }
    to[n - 1] = last;
    return hc_subst_expr(b->a, r->u.reduce.value, n, r->u.reduce.axes, to);
}

/* Lanes of partial accumulators for a reduction along contiguous data: the lane loop
 * is elementwise, so it vectorizes; 0 when the plain scalar loop is used instead. */
static int partial_lanes(const hc_expr *r, int vector_bits) {
    int n = r->u.reduce.naxes;
    int lanes = vector_bits / (8 * hc_dtype_size(acc_dtype(r->type->dtype)));
    if (lanes < 2 || r->u.reduce.extents[n - 1] < 2 * lanes) return 0;
    if (hc_expr_has_reduce(r->u.reduce.value)) return 0;
    return contiguous_in(r->u.reduce.value, r->u.reduce.axes[n - 1]) ? lanes : 0;
}

/* acc[l] = combine(acc[l], v at kk = base + l) for l < count */
static void lane_update(hc_builder *b, hc_reduce_kind k, hc_var *acc, hc_expr *v, hc_var *kk,
                        hc_expr *base, int64_t count) {
    hc_arena *a = b->a;
    hc_var *l = hc_b_for_begin(b, "l", hc_int(a, count), hc_serial());
    hc_expr *li[1] = {hc_ref(a, l)};
    v = hc_subst_expr(a, v, 1, &kk, (hc_expr *[]){hc_add(a, base, li[0])});
    hc_b_store(b, acc, 1, li, reduce_combine(a, k, hc_load(a, acc, 1, li), v));
    hc_b_end(b);
}

static hc_expr *emit_lane_reduce(hc_builder *b, const hc_expr *r, int lanes) {
    hc_arena *a = b->a;
    hc_reduce_kind k = r->u.reduce.kind;
    hc_dtype at = acc_dtype(r->type->dtype);
    int64_t L = lanes, K = r->u.reduce.extents[r->u.reduce.naxes - 1];
    hc_var *acc = hc_b_declare(b, "acc", hc_type_tensor_c(a, at, 1, &L, HC_SCOPE_REGISTER), NULL);
    hc_var *l = hc_b_for_begin(b, "l", hc_int(a, L), hc_serial());
    hc_b_store(b, acc, 1, (hc_expr *[]){hc_ref(a, l)}, reduce_init(a, k, at));
    hc_b_end(b);
    /* outer reduce axes, then blocks of L along the innermost, then the lane loop */
    hc_var *kk = hc_axis(a, "kk");
    hc_expr *v = open_outer_reduce_loops(b, r, hc_ref(a, kk));
    hc_var *kb = hc_b_for_begin(b, "kb", hc_int(a, K / L), hc_serial());
    lane_update(b, k, acc, v, kk, hc_mul(a, hc_ref(a, kb), hc_int(a, L)), L);
    hc_b_end(b);
    if (K % L) lane_update(b, k, acc, v, kk, hc_int(a, K / L * L), K % L);
    close_loops(b, r->u.reduce.naxes - 1);
    hc_var *sum = hc_b_declare(b, "acc", hc_type_scalar(at),
                               hc_load(a, acc, 1, (hc_expr *[]){hc_int(a, 0)}));
    l = hc_b_for_begin(b, "l", hc_int(a, L - 1), hc_serial());
    hc_expr *next = hc_load(a, acc, 1, (hc_expr *[]){hc_add(a, hc_ref(a, l), hc_int(a, 1))});
    hc_b_assign(b, sum, reduce_combine(a, k, hc_ref(a, sum), next));
    hc_b_end(b);
    return reduce_finish(a, r, hc_ref(a, sum));
}

/* Top-level reduces of e with the condition under which C semantics evaluate them
 * (select branches and the right side of && / ||); guard NULL means always. */
typedef struct guarded {
    expr_vec rs, guards;
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
    hc_expr *c[MAX_CHILDREN];
    int n = children(e, c);
    for (int i = 0; i < n; i++) collect_guarded(a, c[i], g, out);
}

static hc_expr *emit_scalar_reduces(hc_builder *b, hc_expr *e, int vector_bits);

/* Accumulate one reduce; returns the expression of its result. */
static hc_expr *emit_one_reduce(hc_builder *b, hc_expr *r, int vector_bits) {
    int lanes = partial_lanes(r, vector_bits);
    if (lanes) return emit_lane_reduce(b, r, lanes);
    hc_dtype at = acc_dtype(r->type->dtype);
    hc_expr *init = reduce_init(b->a, r->u.reduce.kind, at);
    hc_var *acc = hc_b_declare(b, "acc", hc_type_scalar(at), init);
    hc_expr *v = emit_scalar_reduces(b, open_reduce_loops(b, r), vector_bits);
    hc_b_assign(b, acc, reduce_combine(b->a, r->u.reduce.kind, hc_ref(b->a, acc), v));
    close_loops(b, r->u.reduce.naxes);
    return reduce_finish(b->a, r, hc_ref(b->a, acc));
}

/* Emit accumulation loops for every reduce of e (nested ones inside their parent's loop;
 * conditional ones inside an if, so they read only what C semantics would read) and
 * return e with the reduces replaced by their results. */
static hc_expr *emit_scalar_reduces(hc_builder *b, hc_expr *e, int vector_bits) {
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
        g = replace_exprs(a, g, (int)i, gs.rs.data, res);
        hc_var *out = hc_b_declare(b, "red", r->type, hc_const_num(a, r->type->dtype, 0));
        hc_b_if_begin(b, g);
        hc_b_assign(b, out, emit_one_reduce(b, r, vector_bits));
        hc_b_end(b);
        res[i] = hc_ref(a, out);
    }
    hc_expr *out = n ? replace_exprs(a, e, (int)n, gs.rs.data, res) : e;
    hc_vec_free(&gs.rs);
    hc_vec_free(&gs.guards);
    return out;
}

/* State shared by the body emitters of one loop nest. */
typedef struct body {
    const node_info *ni;
    const nest *p;
    hc_expr *idx[HC_MAX_DIMS]; /* store index; the innermost entry is j0 + jph */
    hc_var *jph;               /* placeholder for the position inside the inner block */
    hc_expr *jn;               /* extent of the inner loop */
    hc_expr *value;            /* node value over idx */
    int vector_bits;           /* of the target: sizes partial accumulators */
} body;

static hc_expr *at_j(hc_arena *a, const body *bd, hc_expr *e, hc_var *jj) {
    return hc_subst_expr(a, e, 1, (hc_var *[]){bd->jph}, (hc_expr *[]){hc_ref(a, jj)});
}

static void store_at_j(hc_builder *b, const body *bd, hc_var *jj, hc_expr *v) {
    hc_expr *idx[HC_MAX_DIMS];
    int n = bd->p->ndim;
    for (int i = 0; i < n; i++) idx[i] = at_j(b->a, bd, bd->idx[i], jj);
    hc_b_store(b, bd->ni->buf, n, idx, cast_to(b->a, bd->ni->node->dtype, v));
}

static void emit_scalar_body(hc_builder *b, const body *bd) {
    hc_var *jj = hc_b_for_begin(b, "j", bd->jn, hc_serial());
    hc_expr *v = emit_scalar_reduces(b, at_j(b->a, bd, bd->value, jj), bd->vector_bits);
    store_at_j(b, bd, jj, v);
    hc_b_end(b);
}

/* e = k * jj + c with a constant k > 0 and c free of jj: c (and *k), else NULL. */
static hc_expr *offset_of(hc_arena *a, hc_expr *e, hc_var *jj, int64_t *k) {
    *k = hc_expr_coef(e, jj);
    if (*k <= 0 || *k == INT64_MIN) return NULL;
    return hc_subst_expr(a, e, 1, &jj, (hc_expr *[]){hc_int(a, 0)});
}

/* floor(x / k) and ceil(x / k) for k > 0 and x of any sign (C's / truncates). */
static hc_expr *floor_div(hc_arena *a, hc_expr *x, int64_t k) {
    if (k == 1) return x;
    hc_expr *neg = hc_sub(a, hc_int(a, 0),
                          hc_div(a, hc_sub(a, hc_int(a, k - 1), x), hc_int(a, k)));
    return hc_select(a, hc_le(a, hc_int(a, 0), x), hc_div(a, x, hc_int(a, k)), neg);
}
static hc_expr *ceil_div(hc_arena *a, hc_expr *x, int64_t k) {
    if (k == 1) return x;
    return hc_sub(a, hc_int(a, 0), floor_div(a, hc_sub(a, hc_int(a, 0), x), k));
}

/* Split a conjunction over the inner index jj: conjuncts free of jj go to *inv, bounds
 * lo <= jj < hi from `x <= k*jj + c`, `x < k*jj + c`, `k*jj + c < x`, `k*jj + c <= x`
 * (constant k > 0: a window of stride k) narrow *lo / *hi. false when some conjunct is
 * neither. */
static bool split_guard(hc_arena *a, hc_expr *g, hc_var *jj, hc_expr **inv, hc_expr **lo,
                        hc_expr **hi) {
    if (!hc_expr_mentions(g, jj)) {
        *inv = *inv ? hc_and(a, *inv, g) : g;
        return true;
    }
    if (g->kind != HC_E_BINARY) return false;
    hc_binop op = g->u.bin.op;
    hc_expr *x = g->u.bin.a, *y = g->u.bin.b;
    if (op == HC_OP_AND)
        return split_guard(a, x, jj, inv, lo, hi) && split_guard(a, y, jj, inv, lo, hi);
    if (op != HC_OP_LT && op != HC_OP_LE) return false;
    bool lt = op == HC_OP_LT;
    int64_t k;
    if (!hc_expr_mentions(x, jj)) { /* x < k jj + c: jj >= floor((x-c)/k) + 1;  <=: ceil((x-c)/k) */
        hc_expr *c = offset_of(a, y, jj, &k);
        if (!c) return false;
        hc_expr *d = hc_sub(a, x, c);
        hc_expr *l = lt ? hc_add(a, floor_div(a, d, k), hc_int(a, 1)) : ceil_div(a, d, k);
        *lo = hc_max(a, *lo, l);
        return true;
    }
    if (!hc_expr_mentions(y, jj)) { /* k jj + c < y: jj < ceil((y-c)/k);  <=: floor((y-c)/k) + 1 */
        hc_expr *c = offset_of(a, x, jj, &k);
        if (!c) return false;
        hc_expr *d = hc_sub(a, y, c);
        hc_expr *h = lt ? ceil_div(a, d, k) : hc_add(a, floor_div(a, d, k), hc_int(a, 1));
        *hi = hc_min(a, *hi, h);
        return true;
    }
    return false;
}

/* acc[jj] = combine(acc[jj], select(g, x, identity)) for jj < jn, when the guard g splits
 * into a part free of jj and a range of jj: `if (part) for jj in range: acc[jj] =
 * combine(acc[jj], x)`. The elements skipped would combine the identity, so this is
 * exact; the loop left has no condition and vectorizes (a padded pooling window's
 * inner loop). false (nothing emitted) when v is not of that form. */
static bool emit_guarded_update(hc_builder *b, const body *bd, hc_var *acc, hc_reduce_kind k,
                                hc_expr *identity, hc_expr *v) {
    hc_arena *a = b->a;
    if (v->kind != HC_E_SELECT || !hc_expr_equal(v->u.sel.f, identity)) return false;
    if (k != HC_REDUCE_SUM && k != HC_REDUCE_AVG && k != HC_REDUCE_MAX && k != HC_REDUCE_MIN)
        return false;
    hc_expr *inv = NULL, *lo = hc_int(a, 0), *hi = bd->jn;
    if (!split_guard(a, v->u.sel.cond, bd->jph, &inv, &lo, &hi)) return false;
    if (inv) hc_b_if_begin(b, inv);
    hc_var *l = hc_b_declare(b, "jlo", hc_type_scalar(HC_INDEX_TYPE), hc_simplify_expr(a, lo));
    hc_expr *n = hc_max(a, hc_sub(a, hc_simplify_expr(a, hi), hc_ref(a, l)), hc_int(a, 0));
    hc_var *jj = hc_b_for_begin(b, "j", n, hc_serial());
    hc_expr *j = hc_add(a, hc_ref(a, l), hc_ref(a, jj));
    hc_expr *x = hc_subst_expr(a, v->u.sel.t, 1, (hc_var *[]){bd->jph}, (hc_expr *[]){j});
    hc_b_store(b, acc, 1, &j, reduce_combine(a, k, hc_load(a, acc, 1, &j), x));
    hc_b_end(b);
    if (inv) hc_b_end(b);
    return true;
}

/* A SUM/AVG reduction over at most 256 elements (a window) whose value is a float load
 * contiguous along the inner index, or such a load under a guard that split_guard
 * splits: x on success, with the guard's
 * parts in *inv, *lo, *hi (lo <= jph < hi), else NULL. */
static hc_expr *chunkable(hc_arena *a, const body *bd, const hc_expr *r, hc_expr *v,
                          hc_expr **inv, hc_expr **lo, hc_expr **hi) {
    hc_reduce_kind k = r->u.reduce.kind;
    if ((k != HC_REDUCE_SUM && k != HC_REDUCE_AVG) || r->type->dtype != HC_F32) return NULL;
    int64_t extent = 1; /* small windows only: a long reduction streams its rows better */
    for (int i = 0; i < r->u.reduce.naxes; i++) extent *= r->u.reduce.extents[i];
    if (extent > 256) return NULL;
    *inv = NULL, *lo = hc_int(a, 0), *hi = bd->jn;
    hc_expr *x = v;
    if (v->kind == HC_E_SELECT) {
        if (!hc_expr_equal(v->u.sel.f, reduce_init(a, k, HC_F32)) ||
            !split_guard(a, v->u.sel.cond, bd->jph, inv, lo, hi))
            return NULL;
        x = v->u.sel.t;
    }
    if (x->kind != HC_E_LOAD || x->type->kind != HC_TY_SCALAR || x->type->dtype != HC_F32)
        return NULL;
    int n = x->u.load.n;
    for (int i = 0; i + 1 < n; i++)
        if (hc_expr_mentions(x->u.load.idx[i], bd->jph)) return NULL;
    return n > 0 && hc_expr_coef(x->u.load.idx[n - 1], bd->jph) == 1 ? x : NULL;
}

/* The accumulation of a chunkable reduction in vector registers, `lanes` positions of the
 * inner block at a time: per chunk c0 = c * lanes, the reduction loops inside, and
 * vacc += vload_range(&x[jph = c0], lo - c0, hi - c0) (the lanes the guard admits, the
 * others add zero), then acc[c0 .. c0 + lanes) = vacc. Unlike the loop per element
 * below, the partial sums stay in a register across the reduction (a padded pooling
 * window: 9 masked vector loads and adds per 16 outputs). acc has room for whole chunks. */
static void emit_chunked_reduce(hc_builder *b, const body *bd, const hc_expr *r, hc_var *acc,
                                int lanes) {
    hc_arena *a = b->a;
    const hc_type *vt = hc_type_vector(a, HC_F32, lanes);
    hc_expr *nchunks = hc_div(a, hc_add(a, bd->jn, hc_int(a, lanes - 1)), hc_int(a, lanes));
    hc_var *c = hc_b_for_begin(b, "c", hc_simplify_expr(a, nchunks), hc_serial());
    hc_expr *c0 = hc_mul(a, hc_ref(a, c), hc_int(a, lanes));
    hc_expr *zero = hc_call(a, HC_PRIM_VBROADCAST, vt, 1, (hc_expr *[]){hc_f32(a, 0)});
    hc_var *vacc = hc_b_declare(b, "vacc", vt, zero);
    hc_expr *inv, *lo, *hi;
    hc_expr *x = chunkable(a, bd, r, open_reduce_loops(b, r), &inv, &lo, &hi);
    HC_ASSERT(x);
    if (inv) hc_b_if_begin(b, inv);
    int n = x->u.load.n;
    hc_expr **idx = HC_NEW_ARRAY(a, hc_expr *, n);
    for (int i = 0; i < n; i++) idx[i] = hc_subst_expr(a, x->u.load.idx[i], 1, &bd->jph, &c0);
    hc_expr *hi_c = hc_min(a, hi, bd->jn);
    hc_expr *args[3] = {hc_address(a, x->u.load.buf, n, idx),
                        hc_simplify_expr(a, hc_sub(a, lo, c0)),
                        hc_simplify_expr(a, hc_sub(a, hi_c, c0))};
    hc_expr *ld = hc_call(a, HC_PRIM_VLOAD_RANGE, vt, 3, args);
    hc_b_assign(b, vacc, hc_add(a, hc_ref(a, vacc), ld));
    if (inv) hc_b_end(b);
    close_loops(b, r->u.reduce.naxes);
    hc_expr *st[2] = {hc_address(a, acc, 1, &c0), hc_ref(a, vacc)};
    hc_b_eval(b, hc_call(a, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2, st));
    hc_b_end(b);
}

/* One accumulator per element of the inner block: the inner loop stays a plain
 * elementwise loop (vectorizable without reassociating floating-point sums). */
static void emit_vector_body(hc_builder *b, const body *bd) {
    hc_arena *a = b->a;
    expr_vec rs = {0};
    top_reduces(bd->value, &rs);
    hc_expr **res = HC_NEW_ARRAY(a, hc_expr *, rs.len);
    hc_var **accs = HC_NEW_ARRAY(a, hc_var *, rs.len);
    for (size_t i = 0; i < rs.len; i++) {
        hc_expr *r = rs.data[i];
        hc_reduce_kind k = r->u.reduce.kind;
        hc_dtype at = acc_dtype(r->type->dtype);
        int lanes = bd->vector_bits / 32;
        hc_expr *inv, *lo, *hi;
        bool chunks = lanes >= 8 && chunkable(a, bd, r, r->u.reduce.value, &inv, &lo, &hi);
        int64_t len = chunks ? hc_round_up(bd->p->blk, lanes) : bd->p->blk;
        const hc_type *tt = hc_type_tensor_c(a, at, 1, &len, HC_SCOPE_REGISTER);
        hc_var *acc = accs[i] = hc_b_declare(b, "acc", tt, NULL);
        if (chunks) {
            emit_chunked_reduce(b, bd, r, acc, lanes);
            res[i] = reduce_finish(a, r, hc_load(a, acc, 1, (hc_expr *[]){hc_ref(a, bd->jph)}));
            continue;
        }
        hc_var *jj = hc_b_for_begin(b, "j", bd->jn, hc_serial());
        hc_expr *ji[1] = {hc_ref(a, jj)};
        hc_b_store(b, acc, 1, ji, reduce_init(a, k, at));
        hc_b_end(b);
        hc_expr *v = open_reduce_loops(b, r);
        if (!emit_guarded_update(b, bd, acc, k, reduce_init(a, k, at), v)) {
            jj = hc_b_for_begin(b, "j", bd->jn, hc_serial());
            ji[0] = hc_ref(a, jj);
            hc_b_store(b, acc, 1, ji,
                       reduce_combine(a, k, hc_load(a, acc, 1, ji), at_j(a, bd, v, jj)));
            hc_b_end(b);
        }
        close_loops(b, r->u.reduce.naxes);
        res[i] = reduce_finish(a, r, hc_load(a, acc, 1, (hc_expr *[]){hc_ref(a, bd->jph)}));
    }
    hc_expr *v = replace_exprs(a, bd->value, (int)rs.len, rs.data, res);
    hc_var *jj = hc_b_for_begin(b, "j", bd->jn, hc_serial());
    store_at_j(b, bd, jj, at_j(a, bd, v, jj));
    hc_b_end(b);
    hc_vec_free(&rs);
}

static bool want_vector_acc(const node_info *ni) {
    const hc_tnode *n = ni->node;
    if (n->ndim == 0 || n->shape[n->ndim - 1] < 2 || !hc_expr_has_reduce(ni->value)) return false;
    if (reduce_under_condition(ni->value, false)) return false;
    expr_vec rs = {0};
    top_reduces(ni->value, &rs);
    bool nested = false, contiguous = false;
    for (size_t i = 0; i < rs.len; i++) {
        nested |= hc_expr_has_reduce(rs.data[i]->u.reduce.value);
        contiguous |= contiguous_in(rs.data[i]->u.reduce.value, n->axes[n->ndim - 1]);
    }
    hc_vec_free(&rs);
    return !nested && contiguous;
}

/* The output dimension along which some load is contiguous while it strides along the
 * innermost one (a transpose): tiling both keeps the reads and the writes in cache.
 * Loads that do not depend on the innermost axis (broadcasts) do not count. */
static int load_transposed_dim(const hc_expr *e, const hc_tnode *n) {
    int found = -1, m = e->kind == HC_E_LOAD ? e->u.load.n : 0;
    const hc_var *j = n->axes[n->ndim - 1];
    bool strided = false;
    for (int i = 0; i + 1 < m; i++) strided |= hc_expr_mentions(e->u.load.idx[i], j);
    if (strided && !hc_expr_mentions(e->u.load.idx[m - 1], j))
        for (int d = 0; d + 1 < n->ndim; d++)
            if (hc_expr_mentions(e->u.load.idx[m - 1], n->axes[d])) found = d;
    hc_expr *c[MAX_CHILDREN];
    int k = children(e, c);
    for (int i = 0; i < k; i++) found = HC_MAX(found, load_transposed_dim(c[i], n));
    return found;
}

static int transposed_dim(const node_info *ni) {
    const hc_tnode *n = ni->node;
    if (n->ndim < 2 || hc_expr_has_reduce(ni->value)) return -1;
    int d = load_transposed_dim(ni->value, n);
    int64_t t = hc_dtype_size(n->dtype) <= 4 ? 32 : 16;
    return d >= 0 && n->shape[d] >= t && n->shape[n->ndim - 1] >= t ? d : -1;
}

/* Loops over work items; returns the number of blocks opened. Sets the outer indices
 * and the inner block's start. */
static int open_outer(hc_builder *b, const nest *p, const hc_tnode *n, hc_expr **idx,
                      hc_expr **j0) {
    hc_arena *a = b->a;
    int64_t md[HC_MAX_DIMS + 1];
    const char *names[HC_MAX_DIMS + 1];
    int nm = 0;
    for (int i = 0; i + 1 < p->ndim; i++) {
        bool t = i == p->tile_dim;
        md[nm] = t ? hc_cdiv(p->dims[i], p->tile) : p->dims[i];
        names[nm++] = t ? "tb" : n->axes[i]->name;
    }
    if (p->nblk > 1) md[nm] = p->nblk, names[nm++] = "jb";
    *j0 = hc_int(a, 0);
    if (nm == 0) return 0;
    hc_var *vars[HC_MAX_DIMS + 1];
    int opened = 0;
    if (p->parallel) {
        hc_var *w = hc_b_for_begin(b, "w", hc_int(a, p->nwork), hc_parallel(0));
        hc_b_for_map_begin(b, hc_map_spatial(a, nm, md), hc_ref(a, w), nm, vars, names);
        opened = 2;
    } else {
        hc_b_for_map_begin(b, hc_map_repeat(a, nm, md, NULL), hc_int(a, 0), nm, vars, names);
        opened = 1;
    }
    for (int i = 0; i + 1 < p->ndim; i++) idx[i] = hc_ref(a, vars[i]);
    if (p->nblk > 1) *j0 = hc_mul(a, hc_ref(a, vars[nm - 1]), hc_int(a, p->blk));
    if (p->tile_dim >= 0) { /* the rows of a tile, outside the contiguous inner loop */
        int d = p->tile_dim;
        hc_expr *t0 = hc_mul(a, idx[d], hc_int(a, p->tile));
        hc_expr *ext = hc_min(a, hc_int(a, p->tile), hc_sub(a, hc_int(a, p->dims[d]), t0));
        idx[d] = hc_add(a, t0, hc_ref(a, hc_b_for_begin(b, "t", ext, hc_serial())));
        opened++;
    }
    return opened;
}

static void emit_node(sched *s, hc_builder *b, const node_info *ni) {
    hc_arena *a = s->a;
    const hc_tnode *n = ni->node;
    if (hc_tnode_numel(n) == 0) return;
    nest p;
    bool vec = want_vector_acc(ni);
    int tile_dim = vec ? -1 : transposed_dim(ni);
    plan_nest(s, n, hc_tnode_numel(n) * HC_MAX(1, reduce_work(ni->value)), vec, tile_dim, &p);
    hc_b_comment(b, hc_arena_printf(a, "%s: %s%s%s", n->name, p.parallel ? "parallel" : "serial",
                                    vec ? ", vector of accumulators" : "",
                                    tile_dim >= 0 ? ", tiled" : ""));
    body bd = {.ni = ni, .p = &p, .jph = hc_axis(a, "jj")};
    bd.vector_bits = s->target ? s->target->caps.vector_bits : 256;
    hc_expr *j0;
    int opened = open_outer(b, &p, n, bd.idx, &j0);
    bd.idx[p.ndim - 1] = p.nblk > 1 ? hc_add(a, j0, hc_ref(a, bd.jph)) : hc_ref(a, bd.jph);
    bd.jn = p.nblk > 1 ? hc_min(a, hc_int(a, p.blk), hc_sub(a, hc_int(a, p.inner), j0))
                       : hc_int(a, p.inner);
    bd.value = n->ndim ? hc_subst_expr(a, ni->value, n->ndim, n->axes, bd.idx) : ni->value;
    if (vec) emit_vector_body(b, &bd);
    else emit_scalar_body(b, &bd);
    close_loops(b, opened);
}

/* ---- entry ----------------------------------------------------------------------- */
static hc_status check_outputs(sched *s) {
    const hc_task *t = s->task;
    for (int i = 0; i < t->noutputs; i++)
        for (int j = 0; j < i; j++)
            if (t->outputs[i] == t->outputs[j])
                sched_fail(s, HC_ERR_UNSUPPORTED, "the same node is listed twice as output:",
                           t->outputs[i]->name);
    return s->st;
}

hc_func *hc_auto_schedule(hc_arena *a, const hc_task *t, const struct hc_target *target,
                          hc_error *err) {
    sched s = {.a = a, .task = t, .target = target, .err = err};
    if (check_outputs(&s)) return NULL;
    int nnodes;
    hc_tnode **nodes = hc_task_compute_nodes(a, t, &nnodes);
    s.info = HC_NEW_ARRAY(a, node_info, t->ninputs + nnodes + 1);
    int np = t->ninputs + t->noutputs;
    hc_var **params = HC_NEW_ARRAY(a, hc_var *, np + 1);
    for (int i = 0; i < t->ninputs; i++) {
        const hc_tnode *in = t->inputs[i];
        s.info[i] = (node_info){.node = in, .role = ROLE_INPUT};
        s.info[i].buf = params[i] = hc_var_new(a, in->name, buffer_type(a, in));
    }
    for (int i = 0; i < t->noutputs; i++)
        params[t->ninputs + i] = hc_var_new(a, t->outputs[i]->name, buffer_type(a, t->outputs[i]));
    s.out_params = params + t->ninputs;
    s.ninfo = t->ninputs;
    assign_roles(&s, nodes, nnodes);
    if (s.st) return NULL;
    hc_builder b;
    hc_builder_init(&b, a);
    /* heap temporaries for the materialized intermediates */
    for (int k = 0; k < nnodes; k++) {
        node_info *ni = &s.info[t->ninputs + k];
        if (ni->role == ROLE_MATERIALIZE && !is_output(t, ni->node))
            hc_b_emit(&b, hc_declare(a, ni->buf, NULL));
    }
    for (int k = 0; k < nnodes; k++) {
        node_info *ni = &s.info[t->ninputs + k];
        if (ni->role == ROLE_MATERIALIZE) emit_node(&s, &b, ni);
    }
    hc_stmt *body = hc_builder_finish(&b);
    return hc_func_new(a, hc_sched_func_name(a, t->name), HC_FN_CPU_KERNEL, np, params, body);
}
