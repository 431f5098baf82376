/* shape_index.c — data-dependent indexing and index masks: Gather, GatherElements,
 * GatherND, ScatterElements, ScatterND, Trilu, OneHot, EyeLike.
 *
 * Index tensors are read inside the Task (run-time values); negative indices wrap
 * around, and every index is clamped into its dimension so that generated code never
 * reads outside a tensor on bad data. Scatters are gathers from the output's point of
 * view: each output element searches the updates that land on it (a reduction), which
 * keeps the Task a pure function of its inputs. */
#include <string.h>

#include "graph/ops/shape_internal.h"

static const char *out_name(const hc_node *n) { return n->outputs[0]->name; }

static bool is_index_type(hc_dtype t) { return t == HC_I32 || t == HC_I64; }

static hc_status check_indices(const hc_node *n, int i, hc_error *err) {
    const hc_tensor *t = n->inputs[i];
    if (!is_index_type(t->dtype))
        return hc_node_fail(n, HC_ERR_INVALID, err, "indices '%s' are %s, expected i32 or i64",
                        t->name, hc_dtype_name(t->dtype));
    return HC_OK;
}

static hc_status get_axis(const hc_node *n, int rank, int *axis, hc_error *err) {
    int64_t ax = hc_node_attr_int(n, "axis", 0);
    return hc_shp_axes(n, "axis", &ax, 1, rank, axis, err);
}

/* ---- Gather --------------------------------------------------------------------------- */
hc_status hc_shp_infer_gather(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0], *ind = n->inputs[1];
    int axis;
    hc_status st = check_indices(n, 1, err);
    if (st || (st = get_axis(n, x->ndim, &axis, err))) return st;
    int on = x->ndim - 1 + ind->ndim;
    if (on > HC_MAX_DIMS)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "output rank %d exceeds %d", on,
                            HC_MAX_DIMS);
    int64_t s[HC_MAX_DIMS];
    int k = 0;
    for (int d = 0; d < axis; d++) s[k++] = x->shape[d];
    for (int d = 0; d < ind->ndim; d++) s[k++] = ind->shape[d];
    for (int d = axis + 1; d < x->ndim; d++) s[k++] = x->shape[d];
    hc_node_set_output(n, 0, x->dtype, on, s);
    return HC_OK;
}

hc_task *hc_shp_task_gather(hc_arena *a, const hc_node *n, hc_error *err) {
    int count, axis;
    if (get_axis(n, n->inputs[0]->ndim, &axis, err)) return NULL;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    const hc_tnode *x = p[0], *ind = p[1];
    const hc_tensor *o = n->outputs[0];
    hc_var *ax[HC_MAX_DIMS];
    hc_expr *xi[HC_MAX_DIMS], *ii[HC_MAX_DIMS];
    hc_shp_make_axes(a, o->ndim, ax);
    for (int d = 0; d < ind->ndim; d++) ii[d] = hc_ref(a, ax[axis + d]);
    for (int d = 0; d < x->ndim; d++) {
        if (d < axis) xi[d] = hc_ref(a, ax[d]);
        else if (d > axis) xi[d] = hc_ref(a, ax[d - 1 + ind->ndim]);
    }
    xi[axis] = hc_shp_wrap_index(a, hc_at(a, ind, ii), hc_tnode_extent(a, x, axis));
    hc_tnode *y = hc_compute_with_axes(a, out_name(n), o->ndim, o->shape, ax, hc_at(a, x, xi));
    return hc_node_task(a, n, count, p, 1, &y);
}

/* ---- GatherElements ------------------------------------------------------------------- */
hc_status hc_shp_infer_gather_elements(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0], *ind = n->inputs[1];
    int axis;
    hc_status st = check_indices(n, 1, err);
    if (st || (st = get_axis(n, x->ndim, &axis, err))) return st;
    if (ind->ndim != x->ndim)
        return hc_node_fail(n, HC_ERR_INVALID, err, "indices have rank %d, data %d", ind->ndim,
                        x->ndim);
    hc_node_set_output(n, 0, x->dtype, ind->ndim, ind->shape);
    return HC_OK;
}

hc_task *hc_shp_task_gather_elements(hc_arena *a, const hc_node *n, hc_error *err) {
    int count, axis;
    if (get_axis(n, n->inputs[0]->ndim, &axis, err)) return NULL;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    const hc_tnode *x = p[0], *ind = p[1];
    hc_var *ax[HC_MAX_DIMS];
    hc_expr *xi[HC_MAX_DIMS];
    hc_shp_make_axes(a, ind->ndim, ax);
    for (int d = 0; d < x->ndim; d++)
        xi[d] = hc_min(a, hc_ref(a, ax[d]), hc_int(a, x->shape[d] - 1));
    xi[axis] = hc_shp_wrap_index(a, hc_at_axes(a, ind, ax), hc_tnode_extent(a, x, axis));
    hc_tnode *y = hc_compute_with_axes(a, out_name(n), ind->ndim, ind->shape, ax,
                                       hc_at(a, x, xi));
    return hc_node_task(a, n, count, p, 1, &y);
}

/* ---- ReverseSequence (10, 28) ----------------------------------------------------------- */
/* y[.., t, .., b, ..] = x[.., len[b] - 1 - t, .., b, ..] for t < len[b], else x itself
 * (len clamped into [0, T] so that bad lengths never read outside x). */
static hc_status reverse_axes(const hc_node *n, int *ta, int *ba, hc_error *err) {
    const hc_tensor *x = n->inputs[0], *l = n->inputs[1];
    int64_t t = hc_node_attr_int(n, "time_axis", 0), b = hc_node_attr_int(n, "batch_axis", 1);
    if (x->ndim < 2 || !((t == 0 && b == 1) || (t == 1 && b == 0)))
        return hc_node_fail(n, HC_ERR_INVALID, err, "time_axis %lld and batch_axis %lld must be 0 "
                            "and 1 (in either order) of a tensor of rank >= 2", (long long)t,
                            (long long)b);
    if (l->ndim != 1 || l->shape[0] != x->shape[b] || !hc_dtype_is_int(l->dtype))
        return hc_node_fail(n, HC_ERR_INVALID, err, "sequence_lens '%s' must be integers [%lld]",
                            l->name, (long long)x->shape[b]);
    *ta = (int)t, *ba = (int)b;
    return HC_OK;
}

hc_status hc_shp_infer_reverse_sequence(hc_node *n, hc_error *err) {
    int t, b;
    if (reverse_axes(n, &t, &b, err)) return err->status;
    const hc_tensor *x = n->inputs[0];
    hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
    return HC_OK;
}

hc_task *hc_shp_task_reverse_sequence(hc_arena *a, const hc_node *n, hc_error *err) {
    int t = 0, b = 0, count;
    if (reverse_axes(n, &t, &b, err)) return NULL;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    const hc_tnode *x = p[0], *lens = p[1];
    hc_var *ax[HC_MAX_DIMS];
    hc_expr *xi[HC_MAX_DIMS];
    hc_shp_make_axes(a, x->ndim, ax);
    for (int d = 0; d < x->ndim; d++) xi[d] = hc_ref(a, ax[d]);
    int64_t T = x->shape[t];
    hc_expr *len = hc_cast(a, hc_type_scalar(HC_I64), hc_at(a, lens, (hc_expr *[]){hc_ref(a, ax[b])}));
    len = hc_min(a, hc_max(a, len, hc_int(a, 0)), hc_int(a, T));
    hc_expr *ti = hc_ref(a, ax[t]);
    xi[t] = hc_select(a, hc_lt(a, ti, len), hc_sub(a, hc_sub(a, len, hc_int(a, 1)), ti), ti);
    hc_tnode *y = hc_compute_with_axes(a, out_name(n), x->ndim, x->shape, ax, hc_at(a, x, xi));
    return hc_node_task(a, n, count, p, 1, &y);
}

/* ---- GatherND ------------------------------------------------------------------------- */
static hc_status gather_nd_args(const hc_node *n, int *b, int *k, hc_error *err) {
    const hc_tensor *x = n->inputs[0], *ind = n->inputs[1];
    int64_t bd = hc_node_attr_int(n, "batch_dims", 0);
    if (ind->dtype != HC_I64)
        return hc_node_fail(n, HC_ERR_INVALID, err, "indices are %s, expected i64",
                        hc_dtype_name(ind->dtype));
    if (ind->ndim < 1 || bd < 0 || bd >= ind->ndim || bd >= x->ndim)
        return hc_node_fail(n, HC_ERR_INVALID, err, "batch_dims %lld does not fit ranks %d and %d",
                        (long long)bd, x->ndim, ind->ndim);
    *b = (int)bd;
    *k = (int)ind->shape[ind->ndim - 1];
    if (*k < 1 || *k > x->ndim - *b)
        return hc_node_fail(n, HC_ERR_INVALID, err, "indices.shape[-1] = %d, expected 1..%d", *k,
                        x->ndim - *b);
    for (int d = 0; d < *b; d++)
        if (x->shape[d] != ind->shape[d])
            return hc_node_fail(n, HC_ERR_INVALID, err, "batch dim %d differs: %lld vs %lld", d,
                            (long long)x->shape[d], (long long)ind->shape[d]);
    return HC_OK;
}

hc_status hc_shp_infer_gather_nd(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0], *ind = n->inputs[1];
    int b, k;
    hc_status st = gather_nd_args(n, &b, &k, err);
    if (st) return st;
    int64_t s[HC_MAX_DIMS];
    int on = 0;
    if (ind->ndim - 1 + x->ndim - b - k > HC_MAX_DIMS)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "output rank exceeds %d", HC_MAX_DIMS);
    for (int d = 0; d < ind->ndim - 1; d++) s[on++] = ind->shape[d];
    for (int d = b + k; d < x->ndim; d++) s[on++] = x->shape[d];
    hc_node_set_output(n, 0, x->dtype, on, s);
    return HC_OK;
}

hc_task *hc_shp_task_gather_nd(hc_arena *a, const hc_node *n, hc_error *err) {
    int b, k, count;
    if (gather_nd_args(n, &b, &k, err)) return NULL;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    const hc_tnode *x = p[0], *ind = p[1];
    const hc_tensor *o = n->outputs[0];
    int q = ind->ndim;
    hc_var *ax[HC_MAX_DIMS];
    hc_expr *xi[HC_MAX_DIMS], *ii[HC_MAX_DIMS];
    hc_shp_make_axes(a, o->ndim, ax);
    for (int d = 0; d < q - 1; d++) ii[d] = hc_ref(a, ax[d]);
    for (int d = 0; d < b; d++) xi[d] = hc_ref(a, ax[d]);
    for (int t = 0; t < k; t++) {
        ii[q - 1] = hc_int(a, t);
        xi[b + t] = hc_shp_wrap_index(a, hc_at(a, ind, ii), hc_tnode_extent(a, x, b + t));
    }
    for (int d = b + k; d < x->ndim; d++) xi[d] = hc_ref(a, ax[q - 1 + d - b - k]);
    hc_tnode *y = hc_compute_with_axes(a, out_name(n), o->ndim, o->shape, ax, hc_at(a, x, xi));
    return hc_node_task(a, n, count, p, 1, &y);
}

/* ---- scatters ------------------------------------------------------------------------- */
typedef enum scatter_red { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } scatter_red;

static hc_status scatter_reduction(const hc_node *n, scatter_red *r, hc_error *err) {
    const char *s = hc_node_attr_string(n, "reduction", "none");
    static const char *names[] = {"none", "add", "mul", "max", "min"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, names[i])) {
            *r = (scatter_red)i;
            return HC_OK;
        }
    return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "reduction '%s' is not supported", s);
}

/* Where an update lands for one output element: `match` (over the output axes ax and
 * the reduce axes rv) says whether update rv lands on it, `upd` is that update's value,
 * `flat` its flat position; at(pos, axes) reads the update at flat position pos for an
 * output element with the given axes. */
typedef struct scatter_spec {
    int nr;
    hc_var **rv;
    int64_t *ext;
    hc_expr *match, *upd, *flat;
    hc_expr *(*at)(hc_arena *a, hc_expr *pos, hc_var *const *axes, const void *ctx);
    const void *ctx;
} scatter_spec;

/* out = data combined with the updates that land on each element. */
static hc_task *scatter_task(hc_arena *a, const hc_node *n, scatter_red red, int count,
                             hc_tnode **p, hc_var *const *ax, const scatter_spec *s) {
    const hc_tensor *o = n->outputs[0];
    const hc_tnode *x = p[0];
    hc_tnode *y;
    if (red == RED_NONE) {
        /* the last matching update wins: find its flat position first */
        hc_expr *pos = hc_select(a, s->match, s->flat, hc_int(a, -1));
        hc_expr *last = hc_reduce(a, HC_REDUCE_MAX, s->nr, s->rv, s->ext, pos);
        hc_tnode *l = hc_compute_with_axes(a, hc_arena_printf(a, "%s_last", o->name), o->ndim,
                                           o->shape, ax, last);
        hc_var *ax2[HC_MAX_DIMS];
        hc_shp_make_axes(a, o->ndim, ax2);
        hc_expr *lv = hc_at_axes(a, l, ax2);
        hc_expr *v = hc_select(a, hc_le(a, hc_int(a, 0), lv), s->at(a, lv, ax2, s->ctx),
                               hc_at_axes(a, x, ax2));
        y = hc_compute_with_axes(a, o->name, o->ndim, o->shape, ax2, v);
        return hc_node_task(a, n, count, p, 1, &y);
    }
    static const hc_reduce_kind kinds[] = {HC_REDUCE_SUM, HC_REDUCE_SUM, HC_REDUCE_PROD,
                                           HC_REDUCE_MAX, HC_REDUCE_MIN};
    static const hc_binop ops[] = {HC_OP_ADD, HC_OP_ADD, HC_OP_MUL, HC_OP_MAX, HC_OP_MIN};
    hc_expr *xv = hc_at_axes(a, x, ax);
    /* updates that do not land contribute the identity (the data itself for max/min) */
    hc_expr *ident = red == RED_ADD   ? hc_const_num(a, x->dtype, 0)
                     : red == RED_MUL ? hc_const_num(a, x->dtype, 1)
                                      : xv;
    hc_expr *r = hc_reduce(a, kinds[red], s->nr, s->rv, s->ext,
                           hc_select(a, s->match, s->upd, ident));
    y = hc_compute_with_axes(a, o->name, o->ndim, o->shape, ax, hc_binary(a, ops[red], xv, r));
    return hc_node_task(a, n, count, p, 1, &y);
}

static hc_status scatter_check(const hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0], *u = n->inputs[2];
    hc_status st = check_indices(n, 1, err);
    if (st) return st;
    if (u->dtype != x->dtype)
        return hc_node_fail(n, HC_ERR_INVALID, err, "updates are %s, data %s",
                        hc_dtype_name(u->dtype), hc_dtype_name(x->dtype));
    scatter_red r;
    return scatter_reduction(n, &r, err);
}

hc_status hc_shp_infer_scatter_elements(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0], *ind = n->inputs[1], *u = n->inputs[2];
    int axis;
    hc_status st = scatter_check(n, err);
    if (st || (st = get_axis(n, x->ndim, &axis, err))) return st;
    bool ok = ind->ndim == x->ndim && u->ndim == x->ndim;
    for (int d = 0; ok && d < x->ndim; d++)
        ok = ind->shape[d] == u->shape[d] && (d == axis || u->shape[d] <= x->shape[d]);
    if (!ok)
        return hc_node_fail(n, HC_ERR_INVALID, err, "indices and updates must have the same shape, "
                        "within data's outside the axis");
    hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
    return HC_OK;
}

typedef struct se_ctx {
    const hc_tnode *u;
    int axis;
} se_ctx;

/* updates[axes with axis -> pos], other indices clamped into updates */
static hc_expr *se_at(hc_arena *a, hc_expr *pos, hc_var *const *axes, const void *vctx) {
    const se_ctx *c = vctx;
    hc_expr *idx[HC_MAX_DIMS];
    for (int d = 0; d < c->u->ndim; d++)
        idx[d] = hc_min(a, hc_ref(a, axes[d]), hc_int(a, HC_MAX(c->u->shape[d] - 1, 0)));
    idx[c->axis] = hc_min(a, hc_max(a, pos, hc_int(a, 0)),
                          hc_int(a, HC_MAX(c->u->shape[c->axis] - 1, 0)));
    return hc_at(a, c->u, idx);
}

hc_task *hc_shp_task_scatter_elements(hc_arena *a, const hc_node *n, hc_error *err) {
    int count, axis;
    scatter_red red = RED_NONE;
    if (get_axis(n, n->inputs[0]->ndim, &axis, err) || scatter_reduction(n, &red, err))
        return NULL;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    const hc_tnode *x = p[0], *ind = p[1], *u = p[2];
    hc_var *ax[HC_MAX_DIMS], *r = hc_axis(a, "r0");
    hc_expr *ui[HC_MAX_DIMS], *inside = hc_bool(a, true);
    int64_t ext = u->shape[axis];
    hc_shp_make_axes(a, x->ndim, ax);
    /* update i (axis index r) lands on the element with i[axis] = indices[i], when the
     * element's other indices lie inside updates */
    for (int d = 0; d < x->ndim; d++) {
        ui[d] = hc_min(a, hc_ref(a, ax[d]), hc_int(a, HC_MAX(u->shape[d] - 1, 0)));
        if (d != axis && u->shape[d] < x->shape[d])
            inside = hc_and(a, inside, hc_lt(a, hc_ref(a, ax[d]), hc_int(a, u->shape[d])));
    }
    ui[axis] = hc_ref(a, r);
    hc_expr *target = hc_shp_wrap_index(a, hc_at(a, ind, ui), hc_tnode_extent(a, x, axis));
    se_ctx c = {u, axis};
    scatter_spec s = {
        .nr = 1, .rv = &r, .ext = &ext,
        .match = hc_and(a, inside, hc_eq(a, target, hc_ref(a, ax[axis]))),
        .upd = hc_at(a, u, ui), .flat = hc_ref(a, r), .at = se_at, .ctx = &c,
    };
    return scatter_task(a, n, red, count, p, ax, &s);
}

hc_status hc_shp_infer_scatter_nd(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0], *ind = n->inputs[1], *u = n->inputs[2];
    hc_status st = scatter_check(n, err);
    if (st) return st;
    if (ind->dtype != HC_I64)
        return hc_node_fail(n, HC_ERR_INVALID, err, "indices are %s, expected i64",
                        hc_dtype_name(ind->dtype));
    int q = ind->ndim, k = q ? (int)ind->shape[q - 1] : 0;
    bool ok = q >= 1 && k >= 1 && k <= x->ndim && u->ndim == q - 1 + x->ndim - k;
    for (int d = 0; ok && d < q - 1; d++) ok = u->shape[d] == ind->shape[d];
    for (int d = k; ok && d < x->ndim; d++) ok = u->shape[q - 1 + d - k] == x->shape[d];
    if (!ok)
        return hc_node_fail(n, HC_ERR_INVALID, err, "updates must have shape indices.shape[:-1] + "
                        "data.shape[indices.shape[-1]:]");
    hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
    return HC_OK;
}

typedef struct snd_ctx {
    const hc_tnode *u;
    int nb, k; /* batch (update) dims, index length */
} snd_ctx;

/* updates[unflatten(pos), axes[k:]] */
static hc_expr *snd_at(hc_arena *a, hc_expr *pos, hc_var *const *axes, const void *vctx) {
    const snd_ctx *c = vctx;
    hc_expr *idx[HC_MAX_DIMS];
    hc_expr *q = hc_max(a, pos, hc_int(a, 0));
    for (int d = c->nb - 1; d >= 0; d--) {
        hc_expr *len = hc_int(a, c->u->shape[d]);
        idx[d] = hc_mod(a, q, len);
        q = hc_div(a, q, len);
    }
    for (int d = c->nb; d < c->u->ndim; d++) idx[d] = hc_ref(a, axes[c->k + d - c->nb]);
    return hc_at(a, c->u, idx);
}

hc_task *hc_shp_task_scatter_nd(hc_arena *a, const hc_node *n, hc_error *err) {
    int count;
    scatter_red red = RED_NONE;
    if (scatter_reduction(n, &red, err)) return NULL;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    const hc_tnode *x = p[0], *ind = p[1], *u = p[2];
    int q = ind->ndim, k = (int)ind->shape[q - 1], nb = q - 1;
    hc_var *ax[HC_MAX_DIMS], *rv[HC_MAX_DIMS];
    int64_t ext[HC_MAX_DIMS];
    hc_expr *ii[HC_MAX_DIMS], *ui[HC_MAX_DIMS], *match = NULL;
    hc_shp_make_axes(a, x->ndim, ax);
    /* reduce over the update positions (one dummy position when indices is 1-d) */
    int nr = nb > 0 ? nb : 1;
    for (int d = 0; d < nr; d++) {
        rv[d] = hc_axis(a, hc_arena_printf(a, "r%d", d));
        ext[d] = nb > 0 ? ind->shape[d] : 1;
    }
    for (int d = 0; d < nb; d++) ii[d] = ui[d] = hc_ref(a, rv[d]);
    for (int t = 0; t < k; t++) {
        ii[q - 1] = hc_int(a, t);
        hc_expr *eq = hc_eq(a, hc_shp_wrap_index(a, hc_at(a, ind, ii), hc_tnode_extent(a, x, t)),
                            hc_ref(a, ax[t]));
        match = match ? hc_and(a, match, eq) : eq;
    }
    for (int d = k; d < x->ndim; d++) ui[nb + d - k] = hc_ref(a, ax[d]);
    snd_ctx c = {u, nb, k};
    scatter_spec s = {
        .nr = nr, .rv = rv, .ext = ext, .match = match, .upd = hc_at(a, u, ui),
        .flat = nb > 0 ? hc_shp_flat_index(a, nb, ind->shape, rv) : hc_int(a, 0),
        .at = snd_at, .ctx = &c,
    };
    return scatter_task(a, n, red, count, p, ax, &s);
}

/* ---- Trilu ---------------------------------------------------------------------------- */
static hc_status trilu_k(const hc_node *n, int64_t *k, hc_error *err) {
    *k = 0;
    if (n->inputs[0]->ndim < 2)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input has rank %d, expected >= 2",
                        n->inputs[0]->ndim);
    if (!hc_shp_in(n, 1) || hc_shp_in_empty(n, 1)) return HC_OK;
    int cnt;
    hc_status st = hc_shp_const_ints(n, 1, k, 1, &cnt, err);
    if (!st && cnt != 1) return hc_node_fail(n, HC_ERR_INVALID, err, "k must be a scalar");
    return st;
}

hc_status hc_shp_infer_trilu(hc_node *n, hc_error *err) {
    int64_t k;
    hc_status st = trilu_k(n, &k, err);
    if (st) return st;
    const hc_tensor *x = n->inputs[0];
    hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
    return HC_OK;
}

hc_task *hc_shp_task_trilu(hc_arena *a, const hc_node *n, hc_error *err) {
    int64_t k;
    int count;
    if (trilu_k(n, &k, err)) return NULL;
    bool upper = hc_node_attr_int(n, "upper", 1) != 0;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    const hc_tnode *x = p[0];
    hc_var *ax[HC_MAX_DIMS];
    hc_shp_make_axes(a, x->ndim, ax);
    /* keep (i, j) when j - i >= k (upper) or j - i <= k (lower) */
    hc_expr *diff = hc_sub(a, hc_ref(a, ax[x->ndim - 1]), hc_ref(a, ax[x->ndim - 2]));
    hc_expr *keep = upper ? hc_le(a, hc_int(a, k), diff) : hc_le(a, diff, hc_int(a, k));
    hc_expr *v = hc_select(a, keep, hc_at_axes(a, x, ax), hc_const_num(a, x->dtype, 0));
    hc_tnode *y = hc_compute_with_axes(a, out_name(n), x->ndim, x->shape, ax, v);
    return hc_node_task(a, n, count, p, 1, &y);
}

/* ---- OneHot --------------------------------------------------------------------------- */
static hc_status one_hot_args(const hc_node *n, int64_t *depth, int *axis, hc_error *err) {
    const hc_tensor *ind = n->inputs[0], *vals = n->inputs[2];
    double d;
    int cnt;
    hc_status st = hc_shp_const_doubles(n, 1, &d, 1, &cnt, err);
    if (st) return st;
    if (cnt != 1 || d < 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "depth must be one value >= 1");
    *depth = (int64_t)d;
    if (hc_tensor_numel(vals) != 2)
        return hc_node_fail(n, HC_ERR_INVALID, err, "values must hold 2 elements (off, on)");
    if (ind->ndim + 1 > HC_MAX_DIMS)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "output rank exceeds %d", HC_MAX_DIMS);
    int64_t ax = hc_node_attr_int(n, "axis", -1);
    return hc_shp_axes(n, "axis", &ax, 1, ind->ndim + 1, axis, err);
}

hc_status hc_shp_infer_one_hot(hc_node *n, hc_error *err) {
    int64_t depth, s[HC_MAX_DIMS];
    int axis;
    hc_status st = one_hot_args(n, &depth, &axis, err);
    if (st) return st;
    const hc_tensor *ind = n->inputs[0];
    for (int d = 0, k = 0; d <= ind->ndim; d++) s[d] = d == axis ? depth : ind->shape[k++];
    hc_node_set_output(n, 0, n->inputs[2]->dtype, ind->ndim + 1, s);
    return HC_OK;
}

hc_task *hc_shp_task_one_hot(hc_arena *a, const hc_node *n, hc_error *err) {
    int64_t depth;
    int axis, count;
    if (one_hot_args(n, &depth, &axis, err)) return NULL;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    const hc_tnode *ind = p[0], *vals = p[2];
    const hc_tensor *o = n->outputs[0];
    hc_var *ax[HC_MAX_DIMS];
    hc_expr *ii[HC_MAX_DIMS];
    hc_shp_make_axes(a, o->ndim, ax);
    for (int d = 0, k = 0; d < o->ndim; d++)
        if (d != axis) ii[k++] = hc_ref(a, ax[d]);
    /* indices may be any numeric type; negative ones count from depth */
    hc_expr *iv = hc_cast(a, hc_type_scalar(HC_I64), hc_at(a, ind, ii));
    iv = hc_select(a, hc_lt(a, iv, hc_int(a, 0)), hc_add(a, iv, hc_int(a, depth)), iv);
    hc_expr *hit = hc_eq(a, iv, hc_ref(a, ax[axis]));
    hc_expr *v1[1] = {hc_int(a, 1)}, *v0[1] = {hc_int(a, 0)};
    hc_expr *v = hc_select(a, hit, hc_at(a, vals, v1), hc_at(a, vals, v0));
    hc_tnode *y = hc_compute_with_axes(a, o->name, o->ndim, o->shape, ax, v);
    return hc_node_task(a, n, count, p, 1, &y);
}

/* ---- EyeLike -------------------------------------------------------------------------- */
hc_status hc_shp_infer_eye_like(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    if (x->ndim != 2)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input has rank %d, expected 2", x->ndim);
    hc_dtype t = x->dtype;
    if (hc_node_attr(n, "dtype")) {
        int64_t code = hc_node_attr_int(n, "dtype", 1);
        if ((t = hc_shp_onnx_dtype(code)) == HC_DTYPE_COUNT)
            return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "dtype %lld (%s) is not supported",
                                (long long)code, hc_shp_onnx_type_name(code));
    }
    hc_node_set_output(n, 0, t, 2, x->shape);
    return HC_OK;
}

hc_task *hc_shp_task_eye_like(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)err;
    int count;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    const hc_tensor *o = n->outputs[0];
    int64_t k = hc_node_attr_int(n, "k", 0);
    hc_var *ax[2];
    hc_shp_make_axes(a, 2, ax);
    hc_expr *on = hc_eq(a, hc_sub(a, hc_ref(a, ax[1]), hc_ref(a, ax[0])), hc_int(a, k));
    hc_expr *v = hc_select(a, on, hc_const_num(a, o->dtype, 1), hc_const_num(a, o->dtype, 0));
    hc_tnode *y = hc_compute_with_axes(a, o->name, 2, o->shape, ax, v);
    return hc_node_task(a, n, count, p, 1, &y);
}
