/* shape_move.c — reshapes, copies and slices: Reshape, Flatten, Squeeze, Unsqueeze,
 * Transpose, Concat, Split, Slice, Expand, Tile, Pad, DepthToSpace, SpaceToDepth,
 * Identity, Dropout (inference). Shape-determining inputs must be constants. */
#include <stdint.h>
#include <string.h>

#include "graph/ops/shape_internal.h"

static const char *out_name(const hc_node *n, int i) {
    return n->outputs[i] ? n->outputs[i]->name : n->name;
}

/* Tasks of ops whose output is the input's elements in row-major order. */
static hc_task *reshape_task(hc_arena *a, const hc_node *n, hc_error *err) {
    int count;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    const hc_tensor *o = n->outputs[0];
    hc_tnode *y = hc_compute_reshape_sym(a, out_name(n, 0), p[0], o->ndim, o->shape,
                                         hc_node_output_sym(n, 0), err);
    hc_task *t = y ? hc_node_task(a, n, count, p, 1, &y) : NULL;
    if (t) { /* the inverse map: the same element, seen through the output's shape */
        hc_var *xa[HC_MAX_DIMS];
        hc_expr *xi[HC_MAX_DIMS], *yi[HC_MAX_DIMS];
        for (int d = 0; d < p[0]->ndim; d++) {
            xa[d] = hc_axis(a, "x");
            xi[d] = hc_ref(a, xa[d]);
        }
        if (hc_tnode_is_symbolic(p[0]) || hc_tnode_is_symbolic(y)) {
            /* by the dims' expressions: the numbers are the hints', where a symbol at 1
             * would read as a size-1 dim (index 0) */
            const hc_sym *xs[HC_MAX_DIMS], *ys[HC_MAX_DIMS];
            for (int d = 0; d < p[0]->ndim; d++) xs[d] = hc_tnode_dim_sym(a, p[0], d);
            for (int d = 0; d < y->ndim; d++) ys[d] = hc_tnode_dim_sym(a, y, d);
            hc_reshape_index_sym(a, p[0]->ndim, xs, xi, y->ndim, ys, yi);
        } else {
            hc_reshape_index(a, p[0]->ndim, p[0]->shape, xi, o->ndim, o->shape, yi);
        }
        hc_task_set_inverse(a, t, 0, p[0]->ndim, xa, o->ndim, yi);
    }
    return t;
}

/* ---- Reshape ----------------------------------------------------------------------- */
hc_status hc_shp_infer_reshape(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    if (!hc_shp_in(n, 1)) return hc_node_fail(n, HC_ERR_INVALID, err, "the shape input is missing");
    int64_t s[SHP_MAX_VALUES];
    int cnt;
    hc_status st = hc_shp_const_ints(n, 1, s, HC_MAX_DIMS, &cnt, err);
    if (st) return st;
    bool allowzero = hc_node_attr_int(n, "allowzero", 0) != 0;
    int infer_at = -1;
    int64_t known = 1;
    for (int i = 0; i < cnt; i++) {
        if (s[i] == 0 && !allowzero) {
            if (i >= x->ndim)
                return hc_node_fail(n, HC_ERR_INVALID, err, "shape[%d] = 0 copies a dimension "
                                "that the %d-d input lacks", i, x->ndim);
            s[i] = x->shape[i];
        } else if (s[i] == -1) {
            if (infer_at >= 0)
                return hc_node_fail(n, HC_ERR_INVALID, err, "shape has more than one -1");
            infer_at = i;
            continue;
        } else if (s[i] < 0) {
            return hc_node_fail(n, HC_ERR_INVALID, err, "shape[%d] = %lld is negative", i,
                            (long long)s[i]);
        }
        if (__builtin_mul_overflow(known, s[i], &known))
            return hc_node_fail(n, HC_ERR_INVALID, err, "shape's element count overflows int64 "
                                "(at shape[%d] = %lld)", i, (long long)s[i]);
    }
    int64_t numel = hc_tensor_numel(x);
    if (infer_at >= 0) {
        if (known == 0 || numel % known != 0)
            return hc_node_fail(n, HC_ERR_INVALID, err, "cannot infer the -1 of shape: %lld "
                            "elements over %lld", (long long)numel, (long long)known);
        s[infer_at] = numel / known;
    } else if (known != numel) {
        return hc_node_fail(n, HC_ERR_INVALID, err, "shape has %lld elements, the input %lld",
                        (long long)known, (long long)numel);
    }
    hc_node_set_output(n, 0, x->dtype, cnt, s);
    return HC_OK;
}

hc_task *hc_shp_task_reshape(hc_arena *a, const hc_node *n, hc_error *err) {
    return reshape_task(a, n, err);
}

/* ---- Flatten ----------------------------------------------------------------------- */
hc_status hc_shp_infer_flatten(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    int64_t axis = hc_node_attr_int(n, "axis", 1);
    if (axis < 0) axis += x->ndim;
    if (axis < 0 || axis > x->ndim)
        return hc_node_fail(n, HC_ERR_INVALID, err, "axis %lld is out of range for rank %d",
                        (long long)hc_node_attr_int(n, "axis", 1), x->ndim);
    int64_t s[2] = {1, 1};
    for (int d = 0; d < x->ndim; d++) s[d >= axis] *= x->shape[d];
    hc_node_set_output(n, 0, x->dtype, 2, s);
    return HC_OK;
}

hc_task *hc_shp_task_flatten(hc_arena *a, const hc_node *n, hc_error *err) {
    return reshape_task(a, n, err);
}

/* ---- Squeeze / Unsqueeze ------------------------------------------------------------- */
/* axes from the attribute (opset < 13) or input 1; *count = -1 when absent. */
static hc_status axes_arg(const hc_node *n, int64_t *axes, int *count, hc_error *err) {
    *count = -1;
    if (n->opset < 13) {
        const int64_t *v = hc_node_attr_ints(n, "axes", count);
        if (!hc_node_attr(n, "axes")) *count = -1;
        if (*count > SHP_MAX_VALUES)
            return hc_node_fail(n, HC_ERR_INVALID, err, "axes has %d values", *count);
        if (*count > 0) memcpy(axes, v, sizeof(int64_t) * (size_t)*count);
        return HC_OK;
    }
    if (!hc_shp_in(n, 1)) return HC_OK;
    return hc_shp_const_ints(n, 1, axes, SHP_MAX_VALUES, count, err);
}

hc_status hc_shp_infer_squeeze(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    int64_t axes[SHP_MAX_VALUES], s[HC_MAX_DIMS];
    int cnt, ax[HC_MAX_DIMS], on = 0;
    bool drop[HC_MAX_DIMS] = {false};
    hc_status st = axes_arg(n, axes, &cnt, err);
    if (st) return st;
    if (cnt > x->ndim) return hc_node_fail(n, HC_ERR_INVALID, err, "more axes than dimensions");
    if (cnt > 0 && (st = hc_shp_axes(n, "axes", axes, cnt, x->ndim, ax, err))) return st;
    for (int i = 0; i < cnt; i++) {
        if (x->shape[ax[i]] != 1)
            return hc_node_fail(n, HC_ERR_INVALID, err, "axis %d has size %lld, not 1", ax[i],
                            (long long)x->shape[ax[i]]);
        drop[ax[i]] = true;
    }
    for (int d = 0; d < x->ndim; d++)
        if (!(cnt < 0 ? x->shape[d] == 1 : drop[d])) s[on++] = x->shape[d];
    hc_node_set_output(n, 0, x->dtype, on, s);
    return HC_OK;
}

hc_task *hc_shp_task_squeeze(hc_arena *a, const hc_node *n, hc_error *err) {
    return reshape_task(a, n, err);
}

hc_status hc_shp_infer_unsqueeze(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    int64_t axes[SHP_MAX_VALUES], s[HC_MAX_DIMS];
    int cnt, ax[HC_MAX_DIMS];
    bool ins[HC_MAX_DIMS] = {false};
    hc_status st = axes_arg(n, axes, &cnt, err);
    if (st) return st;
    if (cnt < 0) return hc_node_fail(n, HC_ERR_INVALID, err, "axes is missing");
    int on = x->ndim + cnt;
    if (on > HC_MAX_DIMS)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "output rank %d exceeds %d", on,
                            HC_MAX_DIMS);
    if ((st = hc_shp_axes(n, "axes", axes, cnt, on, ax, err))) return st;
    for (int i = 0; i < cnt; i++) ins[ax[i]] = true;
    for (int d = 0, k = 0; d < on; d++) s[d] = ins[d] ? 1 : x->shape[k++];
    hc_node_set_output(n, 0, x->dtype, on, s);
    return HC_OK;
}

hc_task *hc_shp_task_unsqueeze(hc_arena *a, const hc_node *n, hc_error *err) {
    return reshape_task(a, n, err);
}

/* ---- Transpose ------------------------------------------------------------------------ */
static hc_status transpose_perm(const hc_node *n, int *perm, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    int cnt;
    const int64_t *p = hc_node_attr_ints(n, "perm", &cnt);
    if (!p) {
        for (int d = 0; d < x->ndim; d++) perm[d] = x->ndim - 1 - d;
        return HC_OK;
    }
    if (cnt != x->ndim)
        return hc_node_fail(n, HC_ERR_INVALID, err, "perm has %d values, expected %d", cnt,
                            x->ndim);
    return hc_shp_axes(n, "perm", p, cnt, x->ndim, perm, err);
}

hc_status hc_shp_infer_transpose(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    int perm[HC_MAX_DIMS];
    int64_t s[HC_MAX_DIMS];
    hc_status st = transpose_perm(n, perm, err);
    if (st) return st;
    for (int d = 0; d < x->ndim; d++) s[d] = x->shape[perm[d]];
    hc_node_set_output(n, 0, x->dtype, x->ndim, s);
    return HC_OK;
}

hc_task *hc_shp_task_transpose(hc_arena *a, const hc_node *n, hc_error *err) {
    int perm[HC_MAX_DIMS];
    int count;
    if (transpose_perm(n, perm, err)) return NULL;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    hc_tnode *y = hc_compute_transpose(a, out_name(n, 0), p[0], perm, err);
    return y ? hc_node_task(a, n, count, p, 1, &y) : NULL;
}

/* ---- Concat --------------------------------------------------------------------------- */
static hc_status concat_axis(const hc_node *n, int *axis, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    if (!x) return hc_node_fail(n, HC_ERR_INVALID, err, "the first input is missing");
    if (!hc_node_attr(n, "axis")) return hc_node_fail(n, HC_ERR_INVALID, err, "axis is missing");
    int64_t ax = hc_node_attr_int(n, "axis", 0);
    return hc_shp_axes(n, "axis", &ax, 1, x->ndim, axis, err);
}

hc_status hc_shp_infer_concat(hc_node *n, hc_error *err) {
    int axis;
    hc_status st = concat_axis(n, &axis, err);
    if (st) return st;
    const hc_tensor *x = n->inputs[0];
    int64_t s[HC_MAX_DIMS];
    hc_shp_shape_of(x, s);
    s[axis] = 0;
    for (int i = 0; i < n->ninputs; i++) {
        const hc_tensor *t = n->inputs[i];
        if (!t) continue;
        bool ok = t->ndim == x->ndim && t->dtype == x->dtype;
        for (int d = 0; ok && d < x->ndim; d++) ok = d == axis || t->shape[d] == x->shape[d];
        if (!ok)
            return hc_node_fail(n, HC_ERR_INVALID, err, "input %d ('%s') does not match input 0 "
                            "('%s') in dtype or outside axis %d", i, t->name, x->name, axis);
        s[axis] += t->shape[axis];
    }
    hc_node_set_output(n, 0, x->dtype, x->ndim, s);
    return HC_OK;
}

typedef struct concat_ctx {
    hc_tnode **xs;
    const int64_t *off;     /* off[i]: first output index of input i along axis */
    const hc_sym *const *soff; /* the same as expressions of the symbols (NULL: static) */
    hc_var **ax;
    int axis;
} concat_ctx;

static hc_expr *concat_off(hc_arena *a, const concat_ctx *c, int i) {
    return c->soff ? hc_sym_expr(a, c->soff[i]) : hc_int(a, c->off[i]);
}

/* Inputs lo..hi-1 as a balanced select tree on the axis index: depth log2(n), so long
 * concatenations stay shallow expressions. */
static hc_expr *concat_tree(hc_arena *a, const concat_ctx *c, int lo, int hi) {
    if (hi - lo == 1) {
        const hc_tnode *x = c->xs[lo];
        hc_expr *idx[HC_MAX_DIMS];
        for (int d = 0; d < x->ndim; d++) idx[d] = hc_ref(a, c->ax[d]);
        idx[c->axis] = hc_sub(a, idx[c->axis], concat_off(a, c, lo));
        return hc_at(a, x, idx);
    }
    int mid = lo + (hi - lo) / 2;
    hc_expr *left = hc_lt(a, hc_ref(a, c->ax[c->axis]), concat_off(a, c, mid));
    return hc_select(a, left, concat_tree(a, c, lo, mid), concat_tree(a, c, mid, hi));
}

hc_task *hc_shp_task_concat(hc_arena *a, const hc_node *n, hc_error *err) {
    int axis, count;
    if (concat_axis(n, &axis, err)) return NULL;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    const hc_tensor *o = n->outputs[0];
    int64_t *off = HC_NEW_ARRAY(a, int64_t, count + 1);
    for (int i = 0; i < count; i++) off[i + 1] = off[i] + p[i]->shape[axis];
    /* a symbolic axis (a KV cache of any length): the offsets are expressions */
    const hc_sym **soff = NULL;
    bool sym = false;
    for (int i = 0; i < count; i++) sym |= hc_tnode_is_symbolic(p[i]);
    if (sym) {
        soff = HC_NEW_ARRAY(a, const hc_sym *, count + 1);
        soff[0] = hc_sym_const(a, 0);
        for (int i = 0; i < count; i++)
            soff[i + 1] = hc_sym_add(a, soff[i], hc_tnode_dim_sym(a, p[i], axis));
    }
    hc_var *ax[HC_MAX_DIMS];
    hc_shp_make_axes(a, o->ndim, ax);
    concat_ctx c = {p, off, soff, ax, axis};
    hc_tnode *y = hc_compute_with_axes(a, out_name(n, 0), o->ndim, o->shape, ax,
                                       concat_tree(a, &c, 0, count));
    if (sym) hc_tnode_set_sym(y, hc_node_output_sym(n, 0));
    return hc_node_task(a, n, count, p, 1, &y);
}

/* ---- Split ---------------------------------------------------------------------------- */
static hc_status split_sizes(const hc_node *n, int *axis, int64_t *sizes, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    int64_t ax = hc_node_attr_int(n, "axis", 0);
    hc_status st = hc_shp_axes(n, "axis", &ax, 1, x->ndim, axis, err);
    if (st) return st;
    int cnt = 0;
    if (n->opset < 13) {
        const int64_t *v = hc_node_attr_ints(n, "split", &cnt);
        if (cnt > SHP_MAX_VALUES) return hc_node_fail(n, HC_ERR_INVALID, err, "split too long");
        if (cnt) memcpy(sizes, v, sizeof(int64_t) * (size_t)cnt);
    } else if (hc_shp_in(n, 1) && !hc_shp_in_empty(n, 1)) {
        if ((st = hc_shp_const_ints(n, 1, sizes, SHP_MAX_VALUES, &cnt, err))) return st;
    }
    int64_t dim = x->shape[*axis], total = 0;
    const hc_attr *num = n->opset >= 18 ? hc_node_attr(n, "num_outputs") : NULL;
    if (num && cnt)
        return hc_node_fail(n, HC_ERR_INVALID, err, "both the split input and num_outputs are "
                            "given");
    if (num && num->i != n->noutputs)
        return hc_node_fail(n, HC_ERR_INVALID, err, "num_outputs is %lld but the node has %d "
                            "outputs", (long long)num->i, n->noutputs);
    if (cnt == 0 && n->opset >= 18 && dim % n->noutputs != 0) {
        /* Split-18: chunks of ceil(dim / outputs), the last one smaller */
        int64_t chunk = dim / n->noutputs + 1, last = dim - chunk * (n->noutputs - 1);
        if (last < 0)
            return hc_node_fail(n, HC_ERR_INVALID, err, "dimension %lld does not split into %d "
                                "chunks of %lld", (long long)dim, n->noutputs, (long long)chunk);
        for (int i = 0; i < n->noutputs; i++) sizes[i] = i + 1 < n->noutputs ? chunk : last;
        return HC_OK;
    }
    if (cnt == 0) {
        if (dim % n->noutputs != 0)
            return hc_node_fail(n, HC_ERR_INVALID, err, "dimension %lld does not split into %d "
                            "equal parts", (long long)dim, n->noutputs);
        for (int i = 0; i < n->noutputs; i++) sizes[i] = dim / n->noutputs;
        return HC_OK;
    }
    if (cnt != n->noutputs)
        return hc_node_fail(n, HC_ERR_INVALID, err, "split has %d values for %d outputs", cnt,
                        n->noutputs);
    for (int i = 0; i < cnt; i++) {
        if (sizes[i] < 0)
            return hc_node_fail(n, HC_ERR_INVALID, err, "split[%d] is negative", i);
        total += sizes[i];
    }
    if (total != dim)
        return hc_node_fail(n, HC_ERR_INVALID, err, "split sums to %lld, the axis has %lld",
                        (long long)total, (long long)dim);
    return HC_OK;
}

hc_status hc_shp_infer_split(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    int axis;
    int64_t sizes[SHP_MAX_VALUES], s[HC_MAX_DIMS];
    if (n->noutputs > SHP_MAX_VALUES)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "more than %d outputs", SHP_MAX_VALUES);
    hc_status st = split_sizes(n, &axis, sizes, err);
    if (st) return st;
    hc_shp_shape_of(x, s);
    for (int i = 0; i < n->noutputs; i++) {
        s[axis] = sizes[i];
        if (n->outputs[i]) hc_node_set_output(n, i, x->dtype, x->ndim, s);
    }
    return HC_OK;
}

hc_task *hc_shp_task_split(hc_arena *a, const hc_node *n, hc_error *err) {
    int axis, count, nout = 0;
    int64_t sizes[SHP_MAX_VALUES], starts[HC_MAX_DIMS] = {0}, steps[HC_MAX_DIMS];
    if (split_sizes(n, &axis, sizes, err)) return NULL;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    hc_tnode **outs = HC_NEW_ARRAY(a, hc_tnode *, n->noutputs);
    for (int d = 0; d < HC_MAX_DIMS; d++) steps[d] = 1;
    for (int i = 0; i < n->noutputs; i++) {
        const hc_tensor *o = n->outputs[i];
        if (o) {
            outs[nout] = hc_compute_slice(a, o->name, p[0], starts, steps, o->shape, err);
            if (!outs[nout++]) return NULL;
        }
        starts[axis] += sizes[i];
    }
    return hc_node_task(a, n, count, p, nout, outs);
}

/* ---- Slice ---------------------------------------------------------------------------- */
typedef struct slice_args {
    int64_t starts[SHP_MAX_VALUES], ends[SHP_MAX_VALUES], axes[SHP_MAX_VALUES],
        steps[SHP_MAX_VALUES];
    int ns, ne, na, nst;
} slice_args;

static hc_status slice_read(const hc_node *n, slice_args *s, hc_error *err) {
    const int64_t *v;
    s->na = s->nst = -1;
    if (n->opset < 10) {
        if (!(v = hc_node_attr_ints(n, "starts", &s->ns)) ||
            s->ns > SHP_MAX_VALUES)
            return hc_node_fail(n, HC_ERR_INVALID, err, "starts is missing or too long");
        memcpy(s->starts, v, sizeof(int64_t) * (size_t)s->ns);
        if (!(v = hc_node_attr_ints(n, "ends", &s->ne)) || s->ne > SHP_MAX_VALUES)
            return hc_node_fail(n, HC_ERR_INVALID, err, "ends is missing or too long");
        memcpy(s->ends, v, sizeof(int64_t) * (size_t)s->ne);
        if ((v = hc_node_attr_ints(n, "axes", &s->na)) && s->na <= SHP_MAX_VALUES)
            memcpy(s->axes, v, sizeof(int64_t) * (size_t)s->na);
        else s->na = -1;
        return HC_OK;
    }
    hc_status st;
    if (!hc_shp_in(n, 1) || !hc_shp_in(n, 2))
        return hc_node_fail(n, HC_ERR_INVALID, err, "starts or ends input is missing");
    if ((st = hc_shp_const_ints(n, 1, s->starts, SHP_MAX_VALUES, &s->ns, err))) return st;
    if ((st = hc_shp_const_ints(n, 2, s->ends, SHP_MAX_VALUES, &s->ne, err))) return st;
    if (hc_shp_in(n, 3) && (st = hc_shp_const_ints(n, 3, s->axes, SHP_MAX_VALUES, &s->na, err)))
        return st;
    if (hc_shp_in(n, 4) && (st = hc_shp_const_ints(n, 4, s->steps, SHP_MAX_VALUES, &s->nst, err)))
        return st;
    return HC_OK;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Per-dimension first index, step and length, with ONNX's clamping of starts/ends. */
static hc_status slice_params(const hc_node *n, int64_t *start, int64_t *step, int64_t *len,
                              hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    slice_args s;
    hc_status st = slice_read(n, &s, err);
    if (st) return st;
    for (int d = 0; d < x->ndim; d++) start[d] = 0, step[d] = 1, len[d] = x->shape[d];
    if (s.ne != s.ns || (s.na >= 0 && s.na != s.ns) || (s.nst >= 0 && s.nst != s.ns))
        return hc_node_fail(n, HC_ERR_INVALID, err,
                            "starts, ends, axes and steps differ in length");
    int ax[SHP_MAX_VALUES];
    if (s.ns > x->ndim) return hc_node_fail(n, HC_ERR_INVALID, err, "more starts than dimensions");
    for (int i = 0; i < s.ns; i++) ax[i] = i;
    if (s.na >= 0 && (st = hc_shp_axes(n, "axes", s.axes, s.na, x->ndim, ax, err))) return st;
    for (int i = 0; i < s.ns; i++) {
        int d = ax[i];
        int64_t dim = x->shape[d], k = s.nst >= 0 ? s.steps[i] : 1;
        int64_t b = s.starts[i], e = s.ends[i];
        if (k == 0) return hc_node_fail(n, HC_ERR_INVALID, err, "steps[%d] is 0", i);
        if (b < 0) b = b < -dim ? -dim - 1 : b + dim; /* no overflow for INT64_MIN */
        if (e < 0) e = e < -dim ? -dim - 1 : e + dim;
        /* lengths as (distance - 1) / |step| + 1: no overflow for huge steps */
        if (k > 0) {
            b = clamp64(b, 0, dim), e = clamp64(e, 0, dim);
            len[d] = e > b ? (e - b - 1) / k + 1 : 0;
        } else {
            b = clamp64(b, 0, dim - 1), e = clamp64(e, -1, dim - 1);
            int64_t ak = k == INT64_MIN ? INT64_MAX : -k;
            len[d] = b > e ? (b - e - 1) / ak + 1 : 0;
        }
        start[d] = len[d] > 0 ? b : 0, step[d] = k;
    }
    return HC_OK;
}

hc_status hc_shp_infer_slice(hc_node *n, hc_error *err) {
    int64_t start[HC_MAX_DIMS], step[HC_MAX_DIMS], len[HC_MAX_DIMS];
    hc_status st = slice_params(n, start, step, len, err);
    if (st) return st;
    hc_node_set_output(n, 0, n->inputs[0]->dtype, n->inputs[0]->ndim, len);
    return HC_OK;
}

hc_task *hc_shp_task_slice(hc_arena *a, const hc_node *n, hc_error *err) {
    int64_t start[HC_MAX_DIMS], step[HC_MAX_DIMS], len[HC_MAX_DIMS];
    int count;
    if (slice_params(n, start, step, len, err)) return NULL;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    hc_tnode *y = hc_compute_slice(a, out_name(n, 0), p[0], start, step, len, err);
    return y ? hc_node_task(a, n, count, p, 1, &y) : NULL;
}

/* ---- Expand --------------------------------------------------------------------------- */
static hc_status expand_shape(const hc_node *n, int *nd, int64_t *out, hc_error *err) {
    int64_t s[SHP_MAX_VALUES];
    int cnt;
    const hc_tensor *x = n->inputs[0];
    hc_status st = hc_shp_const_ints(n, 1, s, HC_MAX_DIMS, &cnt, err);
    if (st) return st;
    hc_error e2 = {0};
    if (hc_broadcast_shape(x->ndim, x->shape, cnt, s, nd, out, &e2))
        return hc_node_fail(n, HC_ERR_INVALID, err, "%s", e2.msg);
    return HC_OK;
}

hc_status hc_shp_infer_expand(hc_node *n, hc_error *err) {
    int nd;
    int64_t s[HC_MAX_DIMS];
    hc_status st = expand_shape(n, &nd, s, err);
    if (st) return st;
    hc_node_set_output(n, 0, n->inputs[0]->dtype, nd, s);
    return HC_OK;
}

hc_task *hc_shp_task_expand(hc_arena *a, const hc_node *n, hc_error *err) {
    int count;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    const hc_tensor *o = n->outputs[0];
    hc_tnode *y = hc_compute_expand(a, out_name(n, 0), p[0], o->ndim, o->shape, err);
    return y ? hc_node_task(a, n, count, p, 1, &y) : NULL;
}

/* ---- Tile ----------------------------------------------------------------------------- */
hc_status hc_shp_infer_tile(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    int64_t r[SHP_MAX_VALUES], s[HC_MAX_DIMS];
    int cnt;
    hc_status st = hc_shp_const_ints(n, 1, r, HC_MAX_DIMS, &cnt, err);
    if (st) return st;
    if (cnt != x->ndim)
        return hc_node_fail(n, HC_ERR_INVALID, err, "repeats has %d values, expected %d", cnt,
                        x->ndim);
    for (int d = 0; d < x->ndim; d++) {
        if (r[d] < 0) return hc_node_fail(n, HC_ERR_INVALID, err, "repeats[%d] is negative", d);
        s[d] = x->shape[d] * r[d];
    }
    hc_node_set_output(n, 0, x->dtype, x->ndim, s);
    return HC_OK;
}

hc_task *hc_shp_task_tile(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)err;
    int count;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    const hc_tensor *o = n->outputs[0];
    hc_var *ax[HC_MAX_DIMS];
    hc_expr *idx[HC_MAX_DIMS];
    hc_shp_make_axes(a, o->ndim, ax);
    for (int d = 0; d < o->ndim; d++)
        idx[d] = p[0]->shape[d] == o->shape[d] ? hc_ref(a, ax[d])
                                               : hc_mod(a, hc_ref(a, ax[d]),
                                                        hc_int(a, p[0]->shape[d]));
    hc_tnode *y = hc_compute_with_axes(a, out_name(n, 0), o->ndim, o->shape, ax,
                                       hc_at(a, p[0], idx));
    return hc_node_task(a, n, count, p, 1, &y);
}

/* ---- Pad ------------------------------------------------------------------------------ */
typedef enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } pad_mode;

static hc_status pad_args(const hc_node *n, int64_t *pads, double *value, pad_mode *mode,
                          hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    const char *m = hc_node_attr_string(n, "mode", "constant");
    if (!strcmp(m, "constant")) *mode = PAD_CONSTANT;
    else if (!strcmp(m, "reflect")) *mode = PAD_REFLECT;
    else if (!strcmp(m, "edge")) *mode = PAD_EDGE;
    else if (!strcmp(m, "wrap") && n->opset >= 19) *mode = PAD_WRAP; /* Pad-19 */
    else return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "mode '%s' is not supported", m);
    int cnt = 0;
    hc_status st;
    *value = 0;
    if (n->opset < 11) {
        const int64_t *v = hc_node_attr_ints(n, "pads", &cnt);
        if (!v) return hc_node_fail(n, HC_ERR_INVALID, err, "pads is missing");
        if (cnt == 2 * x->ndim) memcpy(pads, v, sizeof(int64_t) * (size_t)cnt);
        *value = hc_node_attr_float(n, "value", 0);
    } else {
        if (!hc_shp_in(n, 1))
            return hc_node_fail(n, HC_ERR_INVALID, err, "the pads input is missing");
        if ((st = hc_shp_const_ints(n, 1, pads, SHP_MAX_VALUES, &cnt, err))) return st;
        if (hc_shp_in(n, 2) && !hc_shp_in_empty(n, 2)) {
            int vc;
            if ((st = hc_shp_const_doubles(n, 2, value, 1, &vc, err))) return st;
        }
        if (hc_shp_in(n, 3)) { /* Pad-18: pads lists the begins, then the ends, of axes */
            int64_t ax[SHP_MAX_VALUES], given[SHP_MAX_VALUES];
            int nax, axi[HC_MAX_DIMS];
            if ((st = hc_shp_const_ints(n, 3, ax, SHP_MAX_VALUES, &nax, err))) return st;
            if (nax > x->ndim)
                return hc_node_fail(n, HC_ERR_INVALID, err, "axes has %d values for rank %d",
                                    nax, x->ndim);
            if ((st = hc_shp_axes(n, "axes", ax, nax, x->ndim, axi, err))) return st;
            if (cnt != 2 * nax)
                return hc_node_fail(n, HC_ERR_INVALID, err, "pads has %d values, expected %d "
                                    "(2 per axis)", cnt, 2 * nax);
            memcpy(given, pads, sizeof(int64_t) * (size_t)cnt);
            for (int d = 0; d < 2 * x->ndim; d++) pads[d] = 0;
            for (int i = 0; i < nax; i++)
                pads[axi[i]] = given[i], pads[axi[i] + x->ndim] = given[nax + i];
            cnt = 2 * x->ndim;
        }
    }
    if (cnt != 2 * x->ndim)
        return hc_node_fail(n, HC_ERR_INVALID, err, "pads has %d values, expected %d", cnt,
                        2 * x->ndim);
    return HC_OK;
}

hc_status hc_shp_infer_pad(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    int64_t pads[SHP_MAX_VALUES], s[HC_MAX_DIMS];
    double v;
    pad_mode mode;
    hc_status st = pad_args(n, pads, &v, &mode, err);
    if (st) return st;
    for (int d = 0; d < x->ndim; d++) {
        s[d] = x->shape[d] + pads[d] + pads[d + x->ndim];
        if (s[d] < 0) return hc_node_fail(n, HC_ERR_INVALID, err, "pads crop dim %d below 0", d);
        if (mode != PAD_CONSTANT && x->shape[d] == 0 && s[d] > 0)
            return hc_node_fail(n, HC_ERR_INVALID, err, "cannot pad empty dim %d in mode %s", d,
                            mode == PAD_EDGE ? "edge" : mode == PAD_WRAP ? "wrap" : "reflect");
    }
    hc_node_set_output(n, 0, x->dtype, x->ndim, s);
    return HC_OK;
}

/* Index into a dim of size len for a position p that may lie outside it. */
static hc_expr *pad_index(hc_arena *a, hc_expr *p, int64_t len, pad_mode mode) {
    if (mode == PAD_WRAP) {
        hc_expr *l = hc_int(a, len);
        return hc_mod(a, hc_add(a, hc_mod(a, p, l), l), l);
    }
    if (mode == PAD_EDGE || len == 1)
        return hc_min(a, hc_max(a, p, hc_int(a, 0)), hc_int(a, len - 1));
    /* reflect: period 2 (len - 1), mirrored in its second half */
    hc_expr *per = hc_int(a, 2 * (len - 1));
    hc_expr *q = hc_mod(a, hc_add(a, hc_mod(a, p, per), per), per);
    return hc_select(a, hc_lt(a, q, hc_int(a, len)), q, hc_sub(a, per, q));
}

hc_task *hc_shp_task_pad(hc_arena *a, const hc_node *n, hc_error *err) {
    int64_t pads[SHP_MAX_VALUES];
    double v;
    pad_mode mode;
    int count;
    if (pad_args(n, pads, &v, &mode, err)) return NULL;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    const hc_tnode *x = p[0];
    hc_tnode *y;
    if (mode == PAD_CONSTANT) {
        y = hc_compute_pad(a, out_name(n, 0), x, pads, pads + x->ndim, v, err);
        return y ? hc_node_task(a, n, count, p, 1, &y) : NULL;
    }
    const hc_tensor *o = n->outputs[0];
    hc_var *ax[HC_MAX_DIMS];
    hc_expr *idx[HC_MAX_DIMS];
    hc_shp_make_axes(a, o->ndim, ax);
    for (int d = 0; d < x->ndim; d++) {
        hc_expr *pos = hc_sub(a, hc_ref(a, ax[d]), hc_int(a, pads[d]));
        bool inside = pads[d] <= 0 && pads[d + x->ndim] <= 0;
        idx[d] = inside ? pos : pad_index(a, pos, x->shape[d], mode);
    }
    y = hc_compute_with_axes(a, out_name(n, 0), o->ndim, o->shape, ax, hc_at(a, x, idx));
    return hc_node_task(a, n, count, p, 1, &y);
}

/* ---- CenterCropPad (18) ------------------------------------------------------------- */
/* Per dim: the constant pads (negative: a crop) that center x in the target shape, the
 * reference's: a crop starts at (D - t) / 2, a pad puts (t - D) / 2 before. */
static hc_status center_pads(const hc_node *n, int64_t *before, int64_t *after, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    int64_t shape[HC_MAX_DIMS];
    int cnt = 0, axes[HC_MAX_DIMS], nax = 0;
    hc_status st = hc_shp_const_ints(n, 1, shape, HC_MAX_DIMS, &cnt, err);
    if (st) return st;
    int na = 0;
    const int64_t *av = hc_node_attr_ints(n, "axes", &na);
    if (na) {
        if ((st = hc_shp_axes(n, "axes", av, na, x->ndim, axes, err))) return st;
        nax = na;
    } else {
        for (int d = 0; d < x->ndim; d++) axes[nax++] = d;
    }
    if (cnt != nax)
        return hc_node_fail(n, HC_ERR_INVALID, err, "shape has %d values for %d axes", cnt, nax);
    for (int d = 0; d < x->ndim; d++) before[d] = after[d] = 0;
    for (int k = 0; k < nax; k++) {
        int d = axes[k];
        int64_t t = shape[k], D = x->shape[d];
        if (t < 0) return hc_node_fail(n, HC_ERR_INVALID, err, "shape[%d] is %lld", k, (long long)t);
        if (t <= D) before[d] = -((D - t) / 2), after[d] = -(D - t - (D - t) / 2);
        else before[d] = (t - D) / 2, after[d] = t - D - (t - D) / 2;
    }
    return HC_OK;
}

hc_status hc_shp_infer_center_crop_pad(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    int64_t b[HC_MAX_DIMS], e[HC_MAX_DIMS], s[HC_MAX_DIMS];
    hc_status st = center_pads(n, b, e, err);
    if (st) return st;
    for (int d = 0; d < x->ndim; d++) s[d] = x->shape[d] + b[d] + e[d];
    hc_node_set_output(n, 0, x->dtype, x->ndim, s);
    return HC_OK;
}

hc_task *hc_shp_task_center_crop_pad(hc_arena *a, const hc_node *n, hc_error *err) {
    int64_t b[HC_MAX_DIMS], e[HC_MAX_DIMS];
    int count;
    if (center_pads(n, b, e, err)) return NULL;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    hc_tnode *y = hc_compute_pad(a, out_name(n, 0), p[0], b, e, 0, err);
    return y ? hc_node_task(a, n, count, p, 1, &y) : NULL;
}

/* ---- DepthToSpace / SpaceToDepth ---------------------------------------------------- */
static hc_status block_args(const hc_node *n, int64_t *b, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    if (!hc_node_attr(n, "blocksize"))
        return hc_node_fail(n, HC_ERR_INVALID, err, "blocksize is missing");
    *b = hc_node_attr_int(n, "blocksize", 1);
    if (*b <= 0) return hc_node_fail(n, HC_ERR_INVALID, err, "blocksize %lld", (long long)*b);
    if (x->ndim != 4)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input has rank %d, expected 4", x->ndim);
    return HC_OK;
}

static hc_status d2s_mode(const hc_node *n, bool *crd, hc_error *err) {
    const char *m = hc_node_attr_string(n, "mode", "DCR");
    *crd = !strcmp(m, "CRD");
    if (!*crd && strcmp(m, "DCR"))
        return hc_node_fail(n, HC_ERR_INVALID, err, "mode '%s' (expected DCR or CRD)", m);
    return HC_OK;
}

hc_status hc_shp_infer_depth_to_space(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    int64_t b = 1;
    bool crd;
    hc_status st = block_args(n, &b, err);
    if (st || (st = d2s_mode(n, &crd, err))) return st;
    if (x->shape[1] % (b * b))
        return hc_node_fail(n, HC_ERR_INVALID, err, "channels %lld are not a multiple of "
                        "blocksize^2 = %lld", (long long)x->shape[1], (long long)(b * b));
    int64_t s[4] = {x->shape[0], x->shape[1] / (b * b), x->shape[2] * b, x->shape[3] * b};
    hc_node_set_output(n, 0, x->dtype, 4, s);
    return HC_OK;
}

hc_task *hc_shp_task_depth_to_space(hc_arena *a, const hc_node *n, hc_error *err) {
    int64_t b = 1;
    bool crd;
    int count;
    if (block_args(n, &b, err) || d2s_mode(n, &crd, err)) return NULL;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    const hc_tensor *o = n->outputs[0];
    hc_var *ax[4];
    hc_shp_make_axes(a, 4, ax);
    hc_expr *B = hc_int(a, b), *i = hc_mod(a, hc_ref(a, ax[2]), B);
    hc_expr *j = hc_mod(a, hc_ref(a, ax[3]), B), *c = hc_ref(a, ax[1]);
    hc_expr *ij = hc_add(a, hc_mul(a, i, B), j);
    /* DCR: channel = (i * b + j) * C' + c;  CRD: channel = c * b * b + i * b + j */
    hc_expr *ch = crd ? hc_add(a, hc_mul(a, c, hc_int(a, b * b)), ij)
                      : hc_add(a, hc_mul(a, ij, hc_int(a, o->shape[1])), c);
    hc_expr *idx[4] = {hc_ref(a, ax[0]), ch, hc_div(a, hc_ref(a, ax[2]), B),
                       hc_div(a, hc_ref(a, ax[3]), B)};
    hc_tnode *y = hc_compute_with_axes(a, out_name(n, 0), 4, o->shape, ax, hc_at(a, p[0], idx));
    return hc_node_task(a, n, count, p, 1, &y);
}

/* SpaceToDepth has a mode from version 28 (DCR before). */
static hc_status s2d_mode(const hc_node *n, bool *crd, hc_error *err) {
    *crd = false;
    if (n->opset < 28) return HC_OK;
    return d2s_mode(n, crd, err);
}

hc_status hc_shp_infer_space_to_depth(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    int64_t b = 1;
    bool crd;
    hc_status st = block_args(n, &b, err);
    if (st || (st = s2d_mode(n, &crd, err))) return st;
    if (x->shape[2] % b || x->shape[3] % b)
        return hc_node_fail(n, HC_ERR_INVALID, err, "height and width must be multiples of "
                        "blocksize %lld", (long long)b);
    int64_t s[4] = {x->shape[0], x->shape[1] * b * b, x->shape[2] / b, x->shape[3] / b};
    hc_node_set_output(n, 0, x->dtype, 4, s);
    return HC_OK;
}

hc_task *hc_shp_task_space_to_depth(hc_arena *a, const hc_node *n, hc_error *err) {
    int64_t b = 1;
    int count;
    bool crd;
    if (block_args(n, &b, err) || s2d_mode(n, &crd, err)) return NULL;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    const hc_tensor *o = n->outputs[0];
    hc_var *ax[4];
    hc_shp_make_axes(a, 4, ax);
    /* output channel: DCR (i * b + j) * C + c;  CRD c * b * b + i * b + j */
    hc_expr *C = hc_int(a, p[0]->shape[1]), *B = hc_int(a, b), *oc = hc_ref(a, ax[1]);
    hc_expr *BB = hc_int(a, b * b);
    hc_expr *ij = crd ? hc_mod(a, oc, BB) : hc_div(a, oc, C);
    hc_expr *c = crd ? hc_div(a, oc, BB) : hc_mod(a, oc, C);
    hc_expr *idx[4] = {
        hc_ref(a, ax[0]), c,
        hc_add(a, hc_mul(a, hc_ref(a, ax[2]), B), hc_div(a, ij, B)),
        hc_add(a, hc_mul(a, hc_ref(a, ax[3]), B), hc_mod(a, ij, B)),
    };
    hc_tnode *y = hc_compute_with_axes(a, out_name(n, 0), 4, o->shape, ax, hc_at(a, p[0], idx));
    return hc_node_task(a, n, count, p, 1, &y);
}

/* ---- Identity / Dropout ------------------------------------------------------------- */
hc_status hc_shp_infer_identity(hc_node *n, hc_error *err) {
    (void)err;
    const hc_tensor *x = n->inputs[0];
    hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
    return HC_OK;
}

static hc_tnode *copy_of(hc_arena *a, const char *name, const hc_tnode *x) {
    hc_var *ax[HC_MAX_DIMS];
    hc_shp_make_axes(a, x->ndim, ax);
    return hc_compute_with_axes(a, name, x->ndim, x->shape, ax, hc_at_axes(a, x, ax));
}

hc_task *hc_shp_task_identity(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)err;
    int count;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    hc_tnode *y = copy_of(a, out_name(n, 0), p[0]);
    return hc_node_task(a, n, count, p, 1, &y);
}

hc_status hc_shp_infer_dropout(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    /* versions 1 and 6: training unless is_test (default 0; the importer marks it) */
    if (hc_node_attr_int(n, "legacy_training", 0) &&
        hc_node_attr_float(n, "ratio", 0.5) != 0)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "is_test is 0 with a nonzero ratio "
                            "(training; opset %d; only inference is supported)", n->opset);
    if (n->opset >= 12 && hc_shp_in(n, 2)) {
        double train = 0;
        int cnt;
        hc_status st = hc_shp_const_doubles(n, 2, &train, 1, &cnt, err);
        if (st) return st;
        /* training with ratio 0 drops nothing: still the identity */
        double ratio = 0.5;
        int rc = 0;
        if (cnt == 1 && train != 0 && hc_shp_in(n, 1) &&
            (st = hc_shp_const_doubles(n, 1, &ratio, 1, &rc, err)))
            return st;
        if (cnt == 1 && train != 0 && !(rc == 1 && ratio == 0))
            return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "training_mode is true with a "
                            "nonzero ratio (only inference is supported)");
    }
    hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
    /* the mask is bool from opset 10, the input's type before */
    if (n->noutputs > 1 && n->outputs[1])
        hc_node_set_output(n, 1, n->opset >= 10 ? HC_BOOL : x->dtype, x->ndim, x->shape);
    return HC_OK;
}

hc_task *hc_shp_task_dropout(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)err;
    int count, nout = 0;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count), *outs[2];
    outs[nout++] = copy_of(a, out_name(n, 0), p[0]);
    if (n->noutputs > 1 && n->outputs[1]) {
        const hc_tensor *m = n->outputs[1];
        hc_var *ax[HC_MAX_DIMS];
        hc_shp_make_axes(a, m->ndim, ax);
        outs[nout++] = hc_compute_with_axes(a, m->name, m->ndim, m->shape, ax,
                                            hc_const_num(a, m->dtype, 1));
    }
    return hc_node_task(a, n, count, p, nout, outs);
}
