/* nn_pool.c — MaxPool (with Indices), AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool. */
#include <math.h>
#include <string.h>

#include "graph/ops/nn_internal.h"

/* Window of a pool node from its input and attributes. */
hc_status hc_nn_pool_window(const hc_node *n, hc_nn_window *w, hc_error *err) {
    if (hc_nn_need_rank(n, 0, 3, err)) return err->status;
    const hc_tensor *x = hc_nn_in(n, 0);
    bool is_max = n->op == HC_OPK_MAX_POOL || n->op == HC_OPK_MAX_POOL_NCHWC;
    bool int8 = x->dtype == HC_I8 || x->dtype == HC_U8;
    if (!hc_dtype_is_float(x->dtype) && !(is_max && int8))
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "dtype %s is not supported",
                       hc_dtype_name(x->dtype));
    memset(w, 0, sizeof *w);
    w->nsp = x->ndim - 2;
    for (int i = 0; i < w->nsp; i++) w->in[i] = x->shape[2 + i];
    if (hc_nn_window_attrs(n, w, true, err)) return err->status;
    int64_t so = hc_node_attr_int(n, "storage_order", 0);
    if (so != 0 && so != 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "storage_order %lld, expected 0 or 1",
                       (long long)so);
    return hc_nn_window_forward(n, w, hc_node_attr_int(n, "ceil_mode", 0) != 0, err);
}

static void pool_shape(const hc_node *n, const hc_nn_window *w, int64_t *shape) {
    const hc_tensor *x = hc_nn_in(n, 0);
    shape[0] = x->shape[0], shape[1] = x->shape[1];
    for (int i = 0; i < w->nsp; i++) shape[2 + i] = w->out[i];
}

hc_status hc_nn_infer_max_pool(hc_node *n, hc_error *err) {
    hc_nn_window w;
    if (hc_nn_pool_window(n, &w, err)) return err->status;
    int64_t shape[HC_MAX_DIMS];
    pool_shape(n, &w, shape);
    const hc_tensor *x = hc_nn_in(n, 0);
    hc_node_set_output(n, 0, x->dtype, x->ndim, shape);
    if (hc_nn_out_present(n, 1)) hc_node_set_output(n, 1, HC_I64, x->ndim, shape);
    return HC_OK;
}

hc_status hc_nn_infer_average_pool(hc_node *n, hc_error *err) {
    hc_nn_window w;
    if (hc_nn_pool_window(n, &w, err)) return err->status;
    int64_t shape[HC_MAX_DIMS];
    pool_shape(n, &w, shape);
    hc_node_set_output(n, 0, hc_nn_in(n, 0)->dtype, hc_nn_in(n, 0)->ndim, shape);
    return HC_OK;
}

typedef struct pool_ctx {
    const hc_tnode *x, *y; /* y: the max (Indices) */
    hc_nn_window w;
    bool include_pad, col_major;
    double lp; /* LpPool: the terms are |x|^lp */
    hc_var *const *o;
    hc_expr *valid; /* set by pool_index: the position is inside x */
    hc_expr *pos[HC_MAX_DIMS];
} pool_ctx;

/* x indices for window element r; c->valid says whether they are inside x. */
static void pool_index(hc_arena *a, pool_ctx *c, hc_var *const *r, hc_expr **idx) {
    const hc_nn_window *w = &c->w;
    idx[0] = hc_ref(a, c->o[0]), idx[1] = hc_ref(a, c->o[1]);
    c->valid = NULL;
    for (int i = 0; i < w->nsp; i++) {
        hc_expr *p = hc_add(a, hc_mul(a, hc_ref(a, c->o[2 + i]), hc_int(a, w->stride[i])),
                            hc_mul(a, hc_ref(a, r[i]), hc_int(a, w->dilation[i])));
        p = hc_sub(a, p, hc_int(a, w->pad_begin[i]));
        int64_t last = (w->out[i] - 1) * w->stride[i] - w->pad_begin[i] +
                       (w->kernel[i] - 1) * w->dilation[i];
        if (w->pad_begin[i] > 0) c->valid = hc_nn_and(a, c->valid, hc_le(a, hc_int(a, 0), p));
        if (last >= w->in[i]) c->valid = hc_nn_and(a, c->valid, hc_lt(a, p, hc_int(a, w->in[i])));
        idx[2 + i] = c->pos[i] = p;
    }
}

static hc_expr *lowest(hc_arena *a, hc_dtype t) {
    if (hc_dtype_is_float(t)) return hc_const_num(a, t, -INFINITY);
    return hc_const_num(a, t, t == HC_I8 ? -128 : 0);
}

static hc_expr *max_term(hc_arena *a, hc_var *const *r, void *vctx) {
    pool_ctx *c = vctx;
    hc_expr *idx[HC_MAX_DIMS];
    pool_index(a, c, r, idx);
    return hc_nn_guard(a, c->valid, hc_at(a, c->x, idx), lowest(a, c->x->dtype));
}

static hc_expr *max_out(hc_arena *a, hc_var *const *axes, void *vctx) {
    pool_ctx *c = vctx;
    c->o = axes;
    return hc_reduce_expr(a, c->w.nsp, c->w.kernel, max_term, c, HC_REDUCE_MAX);
}

/* Flat index of a window element in x (row-major, or column-major over the spatial
 * dims with storage_order 1), when it holds the maximum; else a value that loses. */
static hc_expr *argmax_term(hc_arena *a, hc_var *const *r, void *vctx) {
    pool_ctx *c = vctx;
    hc_expr *idx[HC_MAX_DIMS];
    pool_index(a, c, r, idx);
    const hc_tnode *x = c->x;
    int64_t plane = 1;
    for (int i = 0; i < c->w.nsp; i++) plane *= x->shape[2 + i];
    hc_expr *f = hc_mul(a, hc_add(a, hc_mul(a, idx[0], hc_int(a, x->shape[1])), idx[1]),
                        hc_int(a, plane));
    hc_expr *sp = NULL;
    for (int k = 0; k < c->w.nsp; k++) {
        int i = c->col_major ? c->w.nsp - 1 - k : k;
        sp = sp ? hc_add(a, hc_mul(a, sp, hc_int(a, x->shape[2 + i])), c->pos[i]) : c->pos[i];
    }
    f = hc_add(a, f, sp);
    hc_expr *oi[HC_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) oi[i] = hc_ref(a, c->o[i]);
    hc_expr *big = hc_int(a, INT64_MAX);
    hc_expr *hit = hc_select(a, hc_eq(a, hc_at(a, x, idx), hc_at(a, c->y, oi)), f, big);
    return hc_nn_guard(a, c->valid, hit, big);
}

static hc_expr *argmax_out(hc_arena *a, hc_var *const *axes, void *vctx) {
    pool_ctx *c = vctx;
    c->o = axes;
    return hc_reduce_expr(a, c->w.nsp, c->w.kernel, argmax_term, c, HC_REDUCE_MIN);
}

hc_task *hc_nn_task_max_pool(hc_arena *a, const hc_node *n, hc_error *err) {
    pool_ctx c = {.col_major = hc_node_attr_int(n, "storage_order", 0) == 1};
    if (hc_nn_pool_window(n, &c.w, err)) return NULL;
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    c.x = in[0];
    const hc_tensor *y = n->outputs[0];
    hc_tnode *outs[2];
    outs[0] = hc_compute(a, y->name, y->ndim, y->shape, max_out, &c);
    int nout = 1;
    if (hc_nn_out_present(n, 1)) {
        c.y = outs[0];
        outs[nout++] = hc_compute(a, n->outputs[1]->name, y->ndim, y->shape, argmax_out, &c);
    }
    return hc_node_task(a, n, nin, in, nout, outs);
}

/* ---- AveragePool -------------------------------------------------------------------- */
/* Window elements counted in dim i at output position o: inside x, or inside the padded
 * x with count_include_pad. */
static int64_t dim_count(const hc_nn_window *w, int i, int64_t o, bool include_pad) {
    int64_t lo = include_pad ? -w->pad_begin[i] : 0;
    int64_t hi = include_pad ? w->in[i] + w->pad_end[i] : w->in[i], cnt = 0;
    for (int64_t j = 0; j < w->kernel[i]; j++) {
        int64_t p = o * w->stride[i] - w->pad_begin[i] + j * w->dilation[i];
        cnt += p >= lo && p < hi;
    }
    return cnt;
}

/* The divisor when it is the same for every output, else 0 (the Task then divides by the
 * counting reduction, which is right for any window). The check costs out x kernel steps
 * per dim, so dims beyond 2^20 of them are not checked: a fuzzed AveragePool with a pad of
 * 2^25 and an output 2^25 wide spent seconds here. */
static int64_t constant_count(const hc_nn_window *w, bool include_pad) {
    int64_t total = 1;
    for (int i = 0; i < w->nsp; i++) {
        if (w->out[i] > ((int64_t)1 << 20) / HC_MAX(w->kernel[i], 1)) return 0;
        int64_t c0 = dim_count(w, i, 0, include_pad);
        if (c0 == 0) return 0; /* the product would be 0: no constant divisor */
        for (int64_t o = 1; o < w->out[i]; o++)
            if (dim_count(w, i, o, include_pad) != c0) return 0;
        total *= c0;
    }
    return total;
}

static hc_expr *sum_term(hc_arena *a, hc_var *const *r, void *vctx) {
    pool_ctx *c = vctx;
    hc_expr *idx[HC_MAX_DIMS];
    pool_index(a, c, r, idx);
    hc_expr *v = hc_at(a, c->x, idx);
    if (c->lp == 2) v = hc_mul(a, v, v);
    else if (c->lp > 0)
        v = hc_math(a, HC_PRIM_POW, hc_math(a, HC_PRIM_ABS, v, NULL), hc_const_num(a, c->x->dtype, c->lp));
    return hc_nn_guard(a, c->valid, v, hc_const_num(a, c->x->dtype, 0));
}

/* 1 where the window element counts towards the divisor. */
static hc_expr *count_term(hc_arena *a, hc_var *const *r, void *vctx) {
    pool_ctx *c = vctx;
    hc_expr *idx[HC_MAX_DIMS];
    pool_index(a, c, r, idx);
    hc_expr *ok = c->valid;
    if (c->include_pad) {
        ok = NULL;
        for (int i = 0; i < c->w.nsp; i++) {
            ok = hc_nn_and(a, ok, hc_le(a, hc_int(a, -c->w.pad_begin[i]), c->pos[i]));
            ok = hc_nn_and(a, ok, hc_lt(a, c->pos[i], hc_int(a, c->w.in[i] + c->w.pad_end[i])));
        }
    }
    hc_dtype t = c->x->dtype;
    return hc_nn_guard(a, ok, hc_const_num(a, t, 1), hc_const_num(a, t, 0));
}

static hc_expr *avg_out(hc_arena *a, hc_var *const *axes, void *vctx) {
    pool_ctx *c = vctx;
    c->o = axes;
    hc_expr *s = hc_reduce_expr(a, c->w.nsp, c->w.kernel, sum_term, c, HC_REDUCE_SUM);
    int64_t k = constant_count(&c->w, c->include_pad);
    if (k > 0) return hc_div(a, s, hc_const_num(a, c->x->dtype, (double)k));
    return hc_div(a, s, hc_reduce_expr(a, c->w.nsp, c->w.kernel, count_term, c, HC_REDUCE_SUM));
}

/* LpPool: (sum of |x|^p over the window's elements inside x)^(1/p) (the reference's
 * kernel size times an average that counts the pads). */
static hc_expr *lp_out(hc_arena *a, hc_var *const *axes, void *vctx) {
    pool_ctx *c = vctx;
    c->o = axes;
    hc_dtype t = c->x->dtype;
    hc_expr *s = hc_reduce_expr(a, c->w.nsp, c->w.kernel, sum_term, c, HC_REDUCE_SUM);
    if (c->lp == 2) return hc_math(a, HC_PRIM_SQRT, s, NULL);
    return hc_math(a, HC_PRIM_POW, s, hc_const_num(a, t, 1.0 / c->lp));
}

static double lp_of(const hc_node *n) {
    const hc_attr *p = hc_node_attr(n, "p");
    if (!p) return 2;
    return p->kind == HC_ATTR_INT ? (double)p->i : p->f;
}

hc_status hc_nn_infer_lp_pool(hc_node *n, hc_error *err) {
    if (!(lp_of(n) > 0))
        return hc_node_fail(n, HC_ERR_INVALID, err, "p %g must be positive", lp_of(n));
    return hc_nn_infer_average_pool(n, err);
}

hc_task *hc_nn_task_lp_pool(hc_arena *a, const hc_node *n, hc_error *err) {
    pool_ctx c = {.lp = lp_of(n)};
    if (hc_nn_pool_window(n, &c.w, err)) return NULL;
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    c.x = in[0];
    const hc_tensor *y = n->outputs[0];
    hc_tnode *out = hc_compute(a, y->name, y->ndim, y->shape, lp_out, &c);
    return hc_node_task(a, n, nin, in, 1, &out);
}

hc_task *hc_nn_task_average_pool(hc_arena *a, const hc_node *n, hc_error *err) {
    pool_ctx c = {.include_pad = hc_node_attr_int(n, "count_include_pad", 0) != 0};
    if (hc_nn_pool_window(n, &c.w, err)) return NULL;
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    c.x = in[0];
    const hc_tensor *y = n->outputs[0];
    hc_tnode *out = hc_compute(a, y->name, y->ndim, y->shape, avg_out, &c);
    return hc_node_task(a, n, nin, in, 1, &out);
}

/* ---- global pools ------------------------------------------------------------------- */
hc_status hc_nn_infer_global_pool(hc_node *n, hc_error *err) {
    if (hc_nn_need_rank(n, 0, 3, err) || hc_nn_need_float(n, 0, err)) return err->status;
    const hc_tensor *x = hc_nn_in(n, 0);
    int64_t shape[HC_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) shape[i] = i < 2 ? x->shape[i] : 1;
    hc_node_set_output(n, 0, x->dtype, x->ndim, shape);
    return HC_OK;
}

hc_task *hc_nn_task_global_pool(hc_arena *a, const hc_node *n, hc_error *err) {
    int nin, axes[HC_MAX_DIMS];
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    for (int i = 0; i < in[0]->ndim - 2; i++) axes[i] = 2 + i;
    hc_reduce_kind k = n->op == HC_OPK_GLOBAL_MAX_POOL ? HC_REDUCE_MAX : HC_REDUCE_AVG;
    hc_tnode *y = hc_compute_reduce(a, n->outputs[0]->name, in[0], in[0]->ndim - 2, axes, true,
                                    k, err);
    return y ? hc_node_task(a, n, nin, in, 1, &y) : NULL;
}
