/* nn_softmax.c — Softmax, LogSoftmax and Hardmax. Before opset 13 the input is coerced
 * to 2-D at `axis` (default 1): the op runs over all dims from axis on. From opset 13
 * it runs over the single dim `axis` (default -1). */
#include "graph/ops/nn_internal.h"

/* The reduced dims: [axis, rank) before opset 13, {axis} after. */
static hc_status softmax_axes(const hc_node *n, int *axes, int *count, hc_error *err) {
    const hc_tensor *x = hc_nn_in(n, 0);
    bool old = n->opset > 0 && n->opset < 13;
    int axis;
    if (hc_node_axis(n, hc_node_attr_int(n, "axis", old ? 1 : -1), x->ndim, &axis, err))
        return err->status;
    *count = 0;
    for (int d = axis; d < (old ? x->ndim : axis + 1); d++) axes[(*count)++] = d;
    return HC_OK;
}

hc_status hc_nn_infer_softmax(hc_node *n, hc_error *err) {
    int axes[HC_MAX_DIMS], cnt;
    if (hc_nn_need_rank(n, 0, 1, err) || hc_nn_need_float(n, 0, err) ||
        softmax_axes(n, axes, &cnt, err))
        return err->status;
    const hc_tensor *x = hc_nn_in(n, 0);
    hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
    return HC_OK;
}

static hc_expr *sub_exp(hc_arena *a, hc_expr *x, hc_expr *m, void *ctx) {
    (void)ctx;
    return hc_math(a, HC_PRIM_EXP, hc_sub(a, x, m), NULL);
}

static hc_expr *log_softmax_fn(hc_arena *a, hc_expr *const *v, void *ctx) {
    (void)ctx; /* v: x, max, sum of exp */
    return hc_sub(a, hc_sub(a, v[0], v[1]), hc_math(a, HC_PRIM_LOG, v[2], NULL));
}

/* Row-major position of x's element within the reduced dims (idx: x's indices). */
static hc_expr *flat_pos(hc_arena *a, const hc_tnode *x, int nax, const int *axes,
                         hc_expr *const *idx) {
    hc_expr *f = NULL;
    for (int i = 0; i < nax; i++) {
        hc_expr *v = idx[axes[i]];
        f = f ? hc_add(a, hc_mul(a, f, hc_int(a, x->shape[axes[i]])), v) : v;
    }
    return f;
}

/* Hardmax: 1 at the first maximum (row-major over the reduced dims), else 0. */
static hc_tnode *hardmax(hc_arena *a, const hc_node *n, const hc_tnode *x, int nax,
                         const int *axes, hc_error *err) {
    hc_tnode *m = hc_compute_reduce(a, "max", x, nax, axes, true, HC_REDUCE_MAX, err);
    if (!m) return NULL;
    bool red[HC_MAX_DIMS] = {false};
    for (int i = 0; i < nax; i++) red[axes[i]] = true;
    int64_t total = 1, rext[HC_MAX_DIMS];
    hc_var *ax[HC_MAX_DIMS], *r[HC_MAX_DIMS];
    hc_expr *xi[HC_MAX_DIMS], *mi[HC_MAX_DIMS];
    for (int d = 0, k = 0; d < x->ndim; d++) {
        ax[d] = hc_axis(a, "i");
        if (red[d]) r[k] = hc_axis(a, "r"), rext[k] = x->shape[d], total *= x->shape[d];
        xi[d] = hc_ref(a, red[d] ? r[k] : ax[d]);
        mi[d] = red[d] ? hc_int(a, 0) : hc_ref(a, ax[d]);
        if (red[d]) k++;
    }
    hc_expr *hit = hc_eq(a, hc_at(a, x, xi), hc_at(a, m, mi));
    hc_expr *pos = hc_select(a, hit, flat_pos(a, x, nax, axes, xi), hc_int(a, total));
    hc_expr *first = hc_reduce(a, HC_REDUCE_MIN, nax, r, rext, pos);
    hc_tnode *f = hc_compute_with_axes(a, "first", x->ndim, m->shape, ax, first);
    hc_var *oax[HC_MAX_DIMS];
    hc_expr *oi[HC_MAX_DIMS], *fi[HC_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) {
        oax[d] = hc_axis(a, "i");
        oi[d] = hc_ref(a, oax[d]);
        fi[d] = red[d] ? hc_int(a, 0) : oi[d];
    }
    hc_expr *is = hc_eq(a, flat_pos(a, x, nax, axes, oi), hc_at(a, f, fi));
    hc_expr *v = hc_select(a, is, hc_const_num(a, x->dtype, 1), hc_const_num(a, x->dtype, 0));
    return hc_compute_with_axes(a, n->outputs[0]->name, x->ndim, x->shape, oax, v);
}

hc_task *hc_nn_task_softmax(hc_arena *a, const hc_node *n, hc_error *err) {
    int axes[HC_MAX_DIMS], cnt, nin;
    if (softmax_axes(n, axes, &cnt, err)) return NULL;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    const hc_tnode *x = in[0];
    hc_tnode *y;
    if (n->op == HC_OPK_HARDMAX) {
        y = hardmax(a, n, x, cnt, axes, err);
    } else {
        hc_tnode *m = hc_compute_reduce(a, "max", x, cnt, axes, true, HC_REDUCE_MAX, err);
        hc_tnode *e = m ? hc_compute_map2(a, "exp", x, m, sub_exp, NULL, err) : NULL;
        hc_tnode *s = e ? hc_compute_reduce(a, "sum", e, cnt, axes, true, HC_REDUCE_SUM, err)
                        : NULL;
        if (!s) return NULL;
        if (n->op == HC_OPK_SOFTMAX)
            y = hc_compute_binop(a, n->outputs[0]->name, HC_OP_DIV, e, s, err);
        else
            y = hc_compute_mapn(a, n->outputs[0]->name, 3, (const hc_tnode *[]){x, m, s},
                                log_softmax_fn, NULL, err);
    }
    return y ? hc_node_task(a, n, nin, in, 1, &y) : NULL;
}
