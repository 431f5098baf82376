/* auto_sched_gpu.c — the rule-based GPU auto-scheduler: any task as a GPU program.
 *
 * Nodes become values as on the CPU (sched_util.h: injective intermediates inlined,
 * outputs and read reductions materialized). Each materialized node is one stage (a
 * kernel launch; stages are separated by global barriers, gpu.h); intermediates live in
 * the program's scratch. A stage is one of:
 *  - a thread per element: blocks of T threads over the flattened node, the tail guarded;
 *    reductions run serially inside the thread (guarded where C evaluates them only
 *    conditionally) — right for many elements or short reductions;
 *  - a block per element, for few elements with long reductions (softmax and norm rows,
 *    global pooling, ReduceX over a large extent): the T threads of a block each
 *    accumulate a strided share of every reduce (consecutive threads read consecutive
 *    elements), then a tree in shared memory combines the T partials; thread 0 stores.
 * DESIGN.md "Targets / GPU programs", docs/gpu.md. */
#include <string.h>

#include "ir/mapping.h"
#include "target/gpu/gpu.h"
#include "target/sched_util.h"

/* A block per element when the reduction per element is at least this long and the
 * elements are at most BLOCK_REDUCE_MAX_ELEMS (more: a thread each already fills the
 * GPU, 132 SMs x 2048 threads on an H200). */
#define BLOCK_REDUCE_MIN_WORK 128
#define BLOCK_REDUCE_MAX_ELEMS 16384
#define THREADS 256

/* idx[d] of flat index e over shape (row-major). */
static void unflatten(hc_arena *a, hc_expr *e, int ndim, const int64_t *shape, hc_expr **idx) {
    int64_t stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        hc_expr *q = stride > 1 ? hc_div(a, e, hc_int(a, stride)) : e;
        idx[d] = d > 0 ? hc_mod(a, q, hc_int(a, shape[d])) : q;
        stride *= shape[d];
    }
}

static int64_t node_numel(const hc_tnode *n) { return n->ndim ? hc_tnode_numel(n) : 1; }

static void node_store(hc_builder *b, const hc_as_node *ni, hc_expr *const *idx, hc_expr *v) {
    const hc_tnode *n = ni->node;
    hc_expr *zero = hc_int(b->a, 0);
    hc_b_store(b, ni->buf, n->ndim ? n->ndim : 1, n->ndim ? idx : &zero,
               hc_as_cast_to(b->a, n->dtype, v));
}

static hc_var *map1(hc_builder *b, int64_t workers, hc_builtin who, const char *name) {
    hc_var *v[1];
    const char *names[1] = {name};
    hc_b_for_map_begin(b, hc_map_spatial(b->a, 1, &workers), hc_ref(b->a, hc_var_builtin(b->a, who)),
                       1, v, names);
    return v[0];
}

static int threads_for(int64_t n) {
    int t = 32;
    while (t < THREADS && t < n) t *= 2;
    return t;
}

static void stage_per_thread(hc_builder *b, const hc_as_node *ni) {
    hc_arena *a = b->a;
    const hc_tnode *n = ni->node;
    int64_t E = node_numel(n);
    int T = threads_for(E);
    hc_var *bx = map1(b, hc_cdiv(E, T), HC_BUILTIN_BLOCK_IDX_X, "bx");
    hc_var *tx = map1(b, T, HC_BUILTIN_THREAD_IDX_X, "tx");
    hc_expr *e = hc_add(a, hc_mul(a, hc_ref(a, bx), hc_int(a, T)), hc_ref(a, tx));
    hc_var *ev = hc_b_declare(b, "e", hc_type_scalar(HC_INDEX_TYPE), e);
    if (E % T) hc_b_if_begin(b, hc_lt(a, hc_ref(a, ev), hc_int(a, E)));
    hc_expr *idx[HC_MAX_DIMS];
    int64_t one = 1;
    unflatten(a, hc_ref(a, ev), n->ndim ? n->ndim : 1, n->ndim ? n->shape : &one, idx);
    hc_expr *v = n->ndim ? hc_subst_expr(a, ni->value, n->ndim, n->axes, idx) : ni->value;
    v = hc_as_emit_scalar_reduces(b, v, 0);
    node_store(b, ni, idx, v);
    if (E % T) hc_b_end(b);
    hc_b_end(b), hc_b_end(b);
}

/* The reduce's value at flat position k of its domain. */
static hc_expr *reduce_value_at(hc_arena *a, const hc_expr *r, hc_expr *k) {
    hc_expr *to[HC_MAX_DIMS];
    unflatten(a, k, r->u.reduce.naxes, r->u.reduce.extents, to);
    return hc_subst_expr(a, r->u.reduce.value, r->u.reduce.naxes, r->u.reduce.axes, to);
}

static int64_t reduce_len(const hc_expr *r) {
    int64_t n = 1;
    for (int i = 0; i < r->u.reduce.naxes; i++) n *= r->u.reduce.extents[i];
    return n;
}

/* Partials of reduce r into red[T] (one per thread), then the tree; red[0] is the result
 * (before finishing) once the last barrier has passed. */
static void block_reduce(hc_builder *b, const hc_expr *r, hc_var *red, int T) {
    hc_arena *a = b->a;
    hc_reduce_kind k = r->u.reduce.kind;
    hc_dtype at = red->type->dtype;
    int64_t R = reduce_len(r);
    hc_var *tx = map1(b, T, HC_BUILTIN_THREAD_IDX_X, "tx");
    hc_expr *t = hc_ref(a, tx);
    hc_var *acc = hc_b_declare(b, "acc", hc_type_scalar(at), hc_as_reduce_init(a, k, at));
    hc_var *i = hc_b_for_begin(b, "i", hc_int(a, hc_cdiv(R, T)), hc_serial());
    hc_var *kv = hc_b_declare(b, "k", hc_type_scalar(HC_INDEX_TYPE),
                              hc_add(a, hc_mul(a, hc_ref(a, i), hc_int(a, T)), t));
    if (R % T) hc_b_if_begin(b, hc_lt(a, hc_ref(a, kv), hc_int(a, R)));
    hc_b_assign(b, acc, hc_as_reduce_combine(a, k, hc_ref(a, acc), reduce_value_at(a, r, hc_ref(a, kv))));
    if (R % T) hc_b_end(b);
    hc_b_end(b);
    hc_b_store(b, red, 1, &t, hc_ref(a, acc));
    hc_b_end(b);
    hc_b_emit(b, hc_barrier(a, HC_SCOPE_SHARED));
    for (int s = T / 2; s >= 1; s /= 2) {
        tx = map1(b, T, HC_BUILTIN_THREAD_IDX_X, "tx");
        t = hc_ref(a, tx);
        hc_b_if_begin(b, hc_lt(a, t, hc_int(a, s)));
        hc_expr *other = hc_add(a, t, hc_int(a, s));
        hc_b_store(b, red, 1, &t,
                   hc_as_reduce_combine(a, k, hc_load(a, red, 1, &t), hc_load(a, red, 1, &other)));
        hc_b_end(b);
        hc_b_end(b);
        hc_b_emit(b, hc_barrier(a, HC_SCOPE_SHARED));
    }
}

static void stage_per_block(hc_builder *b, const hc_as_node *ni, hc_expr_vec *rs) {
    hc_arena *a = b->a;
    const hc_tnode *n = ni->node;
    int64_t E = node_numel(n), R = 0;
    for (size_t i = 0; i < rs->len; i++) R = HC_MAX(R, reduce_len(rs->data[i]));
    int T = threads_for(R / 2);
    hc_var *bx = map1(b, E, HC_BUILTIN_BLOCK_IDX_X, "bx");
    hc_expr *idx[HC_MAX_DIMS];
    int64_t one = 1;
    unflatten(a, hc_ref(a, bx), n->ndim ? n->ndim : 1, n->ndim ? n->shape : &one, idx);
    hc_expr *v = n->ndim ? hc_subst_expr(a, ni->value, n->ndim, n->axes, idx) : ni->value;
    rs->len = 0;
    hc_as_top_reduces(v, rs);
    hc_expr **res = HC_NEW_ARRAY(a, hc_expr *, rs->len + 1);
    int64_t TT = T;
    for (size_t i = 0; i < rs->len; i++) {
        hc_expr *r = rs->data[i];
        hc_dtype at = hc_as_acc_dtype(r->type->dtype);
        hc_var *red = hc_b_declare(b, "red", hc_type_tensor_c(a, at, 1, &TT, HC_SCOPE_SHARED), NULL);
        block_reduce(b, r, red, T);
        res[i] = hc_as_reduce_finish(a, r, hc_load(a, red, 1, (hc_expr *[]){hc_int(a, 0)}));
    }
    hc_var *tx = map1(b, T, HC_BUILTIN_THREAD_IDX_X, "tx");
    hc_b_if_begin(b, hc_eq(a, hc_ref(a, tx), hc_int(a, 0)));
    node_store(b, ni, idx, hc_as_replace_exprs(a, v, (int)rs->len, rs->data, res));
    hc_b_end(b), hc_b_end(b), hc_b_end(b);
}

static bool per_block(const hc_as_node *ni, hc_expr_vec *rs) {
    hc_as_top_reduces(ni->value, rs);
    if (!rs->len || node_numel(ni->node) > BLOCK_REDUCE_MAX_ELEMS) return false;
    if (hc_as_reduce_under_condition(ni->value, false)) return false;
    int64_t work = 0;
    for (size_t i = 0; i < rs->len; i++) {
        if (hc_expr_has_reduce(rs->data[i]->u.reduce.value)) return false; /* nested */
        work = HC_MAX(work, reduce_len(rs->data[i]));
    }
    return work >= BLOCK_REDUCE_MIN_WORK;
}

hc_func *hc_gpu_auto_schedule(hc_arena *a, const hc_task *t, const hc_target *target,
                              hc_error *err) {
    hc_as_sched s;
    hc_var **params;
    int np, nnodes;
    hc_tnode **nodes = hc_as_begin(&s, a, t, target, err, &params, &np, &nnodes);
    if (!nodes) return NULL;
    hc_builder b;
    hc_builder_init(&b, a);
    for (int k = 0; k < nnodes; k++) { /* scratch for the materialized intermediates */
        hc_as_node *ni = &s.info[t->ninputs + k];
        if (ni->role == HC_AS_MATERIALIZE && !hc_as_is_output(t, ni->node))
            hc_b_emit(&b, hc_declare(a, ni->buf, NULL));
    }
    bool first = true;
    for (int k = 0; k < nnodes; k++) {
        hc_as_node *ni = &s.info[t->ninputs + k];
        if (ni->role != HC_AS_MATERIALIZE || hc_tnode_numel(ni->node) == 0) continue;
        if (!first) hc_b_emit(&b, hc_barrier(a, HC_SCOPE_GLOBAL)); /* the next stage */
        first = false;
        hc_b_comment(&b, hc_arena_printf(a, "%s", ni->node->name));
        hc_expr_vec rs = {0};
        if (per_block(ni, &rs)) stage_per_block(&b, ni, &rs);
        else stage_per_thread(&b, ni);
        hc_vec_free(&rs);
    }
    hc_stmt *body = hc_builder_finish(&b);
    return hc_func_new(a, hc_sched_func_name(a, t->name), HC_FN_CUDA_KERNEL, np, params, body);
}
