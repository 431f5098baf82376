/* shape_resize.c — Resize (versions 10, 11, 13, 18, 19) and Upsample: nearest (every
 * nearest_mode), linear and cubic interpolation over any number of dimensions, with every
 * coordinate_transformation_mode (tf_crop_and_resize with its roi and extrapolation_value;
 * half_pixel_symmetric from version 19), and version 18's `axes` (roi, scales and sizes
 * for those dims only) and keep_aspect_ratio_policy. antialias (18) is refused.
 *
 * The Task computes, per output element, the source coordinate of each resized dimension
 * (in f64, from the output index), the taps around it (indices clamped into the input,
 * which is what the ONNX reference's edge padding amounts to) and their weights; the
 * result is the weighted sum over all tap combinations. */
#include <math.h>
#include <string.h>

#include "graph/ops/shape_internal.h"

typedef enum coord_mode {
    CM_HALF_PIXEL,
    CM_PYTORCH_HALF_PIXEL,
    CM_ALIGN_CORNERS,
    CM_ASYMMETRIC,
    CM_TF_HALF_PIXEL_FOR_NN,
    CM_TF_CROP_AND_RESIZE,
    CM_HALF_PIXEL_SYMMETRIC,
} coord_mode;

typedef enum interp_mode { IM_NEAREST, IM_LINEAR, IM_CUBIC } interp_mode;
typedef enum nearest_mode {
    NM_ROUND_PREFER_FLOOR,
    NM_ROUND_PREFER_CEIL,
    NM_FLOOR,
    NM_CEIL
} nearest_mode;

typedef struct resize_cfg {
    int ndim;
    int64_t out[HC_MAX_DIMS];
    double scale[HC_MAX_DIMS];
    double roi[2 * HC_MAX_DIMS];
    interp_mode mode;
    coord_mode coord;
    nearest_mode nearest;
    double cubic_a, extrapolation;
    bool exclude_outside;
} resize_cfg;

static const char *const coord_names[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                          "asymmetric", "tf_half_pixel_for_nn",
                                          "tf_crop_and_resize", "half_pixel_symmetric"};
static const char *const nearest_names[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                            "ceil"};

static int lookup(const char *s, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

static hc_status parse_mode(const hc_node *n, resize_cfg *c, hc_error *err) {
    const char *m = hc_node_attr_string(n, "mode", "nearest");
    if (!strcmp(m, "nearest")) c->mode = IM_NEAREST;
    else if (!strcmp(m, "linear") || !strcmp(m, "bilinear")) c->mode = IM_LINEAR;
    else if (!strcmp(m, "cubic") && n->op == HC_OPK_RESIZE) c->mode = IM_CUBIC;
    else return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "mode '%s' is not supported", m);
    return HC_OK;
}

/* Attributes of Resize (opset 11+); opset 10 and Upsample behave like asymmetric/floor. */
static hc_status parse_attrs(const hc_node *n, resize_cfg *c, hc_error *err) {
    hc_status st = parse_mode(n, c, err);
    if (st) return st;
    c->coord = CM_ASYMMETRIC, c->nearest = NM_FLOOR;
    c->cubic_a = hc_node_attr_float(n, "cubic_coeff_a", -0.75);
    c->exclude_outside = hc_node_attr_int(n, "exclude_outside", 0) != 0;
    c->extrapolation = hc_node_attr_float(n, "extrapolation_value", 0);
    if (n->op != HC_OPK_RESIZE || n->opset < 11) return HC_OK;
    const char *cm = hc_node_attr_string(n, "coordinate_transformation_mode", "half_pixel");
    const char *nm = hc_node_attr_string(n, "nearest_mode", "round_prefer_floor");
    int ci = lookup(cm, coord_names, (int)HC_ARRAY_LEN(coord_names) - (n->opset < 19));
    int ni = lookup(nm, nearest_names, (int)HC_ARRAY_LEN(nearest_names));
    if (ci < 0)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "coordinate_transformation_mode '%s' is "
                        "not supported", cm);
    if (ni < 0) return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "nearest_mode '%s' is not "
                                "supported", nm);
    if (hc_node_attr_int(n, "antialias", 0))
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "antialias is not supported");
    c->coord = (coord_mode)ci, c->nearest = (nearest_mode)ni;
    return HC_OK;
}

/* Resize-18's axes: the dims that roi, scales and sizes list (default: all). */
static hc_status resize_axes(const hc_node *n, int *axes, int *naxes, hc_error *err) {
    int rank = n->inputs[0]->ndim, cnt = 0;
    const int64_t *v = n->op == HC_OPK_RESIZE && n->opset >= 18
                           ? hc_node_attr_ints(n, "axes", &cnt) : NULL;
    if (!v) {
        for (int d = 0; d < rank; d++) axes[d] = d;
        *naxes = rank;
        return HC_OK;
    }
    if (cnt > rank)
        return hc_node_fail(n, HC_ERR_INVALID, err, "axes has %d values for rank %d", cnt, rank);
    *naxes = cnt;
    return hc_shp_axes(n, "axes", v, cnt, rank, axes, err);
}

/* Output sizes from scales (floor(in * scale)) or from sizes (scale = out / in), over the
 * dims `axes` (the others keep their size, scale 1); keep_aspect_ratio_policy not_larger /
 * not_smaller (Resize-18) gives every listed dim the smallest / largest of their scales
 * and the size round(in * scale), half up, as the reference does. */
static hc_status sizes_from(const hc_node *n, resize_cfg *c, int scales_in, int sizes_in,
                            const int *axes, int naxes, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    double sc[SHP_MAX_VALUES];
    int64_t sz[SHP_MAX_VALUES];
    int cnt;
    hc_status st;
    for (int d = 0; d < x->ndim; d++) c->out[d] = x->shape[d], c->scale[d] = 1.0;
    bool have_scales = scales_in >= 0 && hc_shp_in(n, scales_in) && !hc_shp_in_empty(n, scales_in);
    bool have_sizes = sizes_in >= 0 && hc_shp_in(n, sizes_in) && !hc_shp_in_empty(n, sizes_in);
    if (have_scales == have_sizes)
        return hc_node_fail(n, HC_ERR_INVALID, err,
                            "exactly one of scales and sizes must be given");
    if (have_sizes) {
        if ((st = hc_shp_const_ints(n, sizes_in, sz, SHP_MAX_VALUES, &cnt, err))) return st;
        if (cnt != naxes)
            return hc_node_fail(n, HC_ERR_INVALID, err, "sizes has %d values, expected %d", cnt,
                            naxes);
        const char *policy = n->op == HC_OPK_RESIZE && n->opset >= 18
                                 ? hc_node_attr_string(n, "keep_aspect_ratio_policy", "stretch")
                                 : "stretch";
        bool larger = !strcmp(policy, "not_smaller");
        if (!larger && strcmp(policy, "stretch") && strcmp(policy, "not_larger"))
            return hc_node_fail(n, HC_ERR_INVALID, err, "keep_aspect_ratio_policy '%s' (expected "
                                "stretch, not_larger or not_smaller)", policy);
        double common = 0;
        for (int i = 0; i < naxes; i++) {
            int d = axes[i];
            if (sz[i] < 0) return hc_node_fail(n, HC_ERR_INVALID, err, "sizes[%d] is negative", i);
            c->out[d] = sz[i];
            c->scale[d] = x->shape[d] ? (double)sz[i] / (double)x->shape[d] : 1.0;
            if (i == 0 || (larger ? c->scale[d] > common : c->scale[d] < common))
                common = c->scale[d];
        }
        if (strcmp(policy, "stretch"))
            for (int i = 0; i < naxes; i++) {
                int d = axes[i];
                c->scale[d] = common;
                c->out[d] = (int64_t)(common * (double)x->shape[d] + 0.5);
            }
        return HC_OK;
    }
    if ((st = hc_shp_const_doubles(n, scales_in, sc, SHP_MAX_VALUES, &cnt, err))) return st;
    if (cnt != naxes)
        return hc_node_fail(n, HC_ERR_INVALID, err, "scales has %d values, expected %d", cnt,
                        naxes);
    for (int i = 0; i < naxes; i++) {
        int d = axes[i];
        if (!(sc[i] > 0))
            return hc_node_fail(n, HC_ERR_INVALID, err, "scales[%d] is not positive", i);
        c->scale[d] = sc[i];
        c->out[d] = (int64_t)floor((double)x->shape[d] * sc[i]);
    }
    return HC_OK;
}

static hc_status resize_cfg_of(const hc_node *n, resize_cfg *c, hc_error *err) {
    memset(c, 0, sizeof *c);
    c->ndim = n->inputs[0]->ndim;
    hc_status st = parse_attrs(n, c, err);
    if (st) return st;
    int axes[HC_MAX_DIMS], naxes = 0;
    if ((st = resize_axes(n, axes, &naxes, err))) return st;
    if (n->op == HC_OPK_UPSAMPLE) {
        if (n->opset >= 9) return sizes_from(n, c, 1, -1, axes, naxes, err);
        int cnt;
        const double *f = hc_node_attr_floats(n, "scales", &cnt);
        if (!f || cnt != c->ndim)
            return hc_node_fail(n, HC_ERR_INVALID, err, "scales must have %d values", c->ndim);
        for (int d = 0; d < c->ndim; d++) {
            c->scale[d] = f[d];
            c->out[d] = (int64_t)floor((double)n->inputs[0]->shape[d] * f[d]);
        }
        return HC_OK;
    }
    if (n->opset < 11) return sizes_from(n, c, 1, -1, axes, naxes, err);
    if (c->coord == CM_TF_CROP_AND_RESIZE) {
        int cnt;
        double roi[2 * HC_MAX_DIMS];
        if (!hc_shp_in(n, 1)) return hc_node_fail(n, HC_ERR_INVALID, err, "roi is missing");
        if ((st = hc_shp_const_doubles(n, 1, roi, 2 * HC_MAX_DIMS, &cnt, err))) return st;
        if (cnt != 2 * naxes)
            return hc_node_fail(n, HC_ERR_INVALID, err, "roi has %d values, expected %d", cnt,
                            2 * naxes);
        for (int d = 0; d < c->ndim; d++) c->roi[d] = 0, c->roi[d + c->ndim] = 1;
        for (int i = 0; i < naxes; i++)
            c->roi[axes[i]] = roi[i], c->roi[axes[i] + c->ndim] = roi[naxes + i];
    }
    return sizes_from(n, c, 2, 3, axes, naxes, err);
}

hc_status hc_shp_infer_resize(hc_node *n, hc_error *err) {
    resize_cfg c;
    hc_status st = resize_cfg_of(n, &c, err);
    if (st) return st;
    hc_node_set_output(n, 0, n->inputs[0]->dtype, c.ndim, c.out);
    return HC_OK;
}

hc_status hc_shp_infer_upsample(hc_node *n, hc_error *err) { return hc_shp_infer_resize(n, err); }

/* ---- the Task ------------------------------------------------------------------------- */
/* Source coordinate (f64) of output index i along dim d. */
static hc_expr *source_coord(hc_arena *a, const resize_cfg *c, int d, int64_t in, hc_var *i) {
    hc_expr *x = hc_cast(a, hc_type_scalar(HC_F64), hc_ref(a, i));
    double s = c->scale[d], out_f = s * (double)in; /* as the reference: scale * input */
    switch (c->coord) {
    case CM_HALF_PIXEL:
        return hc_sub(a, hc_div(a, hc_add(a, x, hc_f64(a, 0.5)), hc_f64(a, s)), hc_f64(a, 0.5));
    case CM_HALF_PIXEL_SYMMETRIC: {
        /* half_pixel shifted so that the output's centre maps to the input's centre */
        double offset = (double)in / 2 * (1 - (double)c->out[d] / out_f);
        return hc_add(a, hc_f64(a, offset - 0.5),
                      hc_div(a, hc_add(a, x, hc_f64(a, 0.5)), hc_f64(a, s)));
    }
    case CM_PYTORCH_HALF_PIXEL:
        if (c->out[d] <= 1) return hc_f64(a, 0);
        return hc_sub(a, hc_div(a, hc_add(a, x, hc_f64(a, 0.5)), hc_f64(a, s)), hc_f64(a, 0.5));
    case CM_ALIGN_CORNERS:
        if (out_f == 1) return hc_f64(a, 0);
        return hc_div(a, hc_mul(a, x, hc_f64(a, (double)(in - 1))), hc_f64(a, out_f - 1));
    case CM_ASYMMETRIC: return hc_div(a, x, hc_f64(a, s));
    case CM_TF_HALF_PIXEL_FOR_NN: return hc_div(a, hc_add(a, x, hc_f64(a, 0.5)), hc_f64(a, s));
    case CM_TF_CROP_AND_RESIZE: {
        double lo = c->roi[d], hi = c->roi[d + c->ndim], span = (hi - lo) * (double)(in - 1);
        hc_expr *base = hc_f64(a, lo * (double)(in - 1));
        if (c->out[d] == 1) return hc_f64(a, lo * (double)(in - 1) + span / 2);
        return hc_add(a, base, hc_div(a, hc_mul(a, x, hc_f64(a, span)),
                                       hc_f64(a, (double)(c->out[d] - 1))));
    }
    }
    hc_unreachable();
}

static hc_expr *clamp_index(hc_arena *a, hc_expr *i, int64_t in) {
    return hc_min(a, hc_max(a, i, hc_int(a, 0)), hc_int(a, in - 1));
}

static hc_expr *to_index(hc_arena *a, hc_expr *f) {
    return hc_cast(a, hc_type_scalar(HC_I64), f);
}

/* Keys' cubic convolution kernel at distance t >= 0 (expression in f64). */
static hc_expr *cubic_w(hc_arena *a, hc_expr *t, double A) {
    hc_expr *t2 = hc_mul(a, t, t), *t3 = hc_mul(a, t2, t);
    hc_expr *near = hc_add(a, hc_sub(a, hc_mul(a, hc_f64(a, A + 2), t3),
                                     hc_mul(a, hc_f64(a, A + 3), t2)), hc_f64(a, 1));
    hc_expr *far = hc_sub(a, hc_add(a, hc_sub(a, hc_mul(a, hc_f64(a, A), t3),
                                              hc_mul(a, hc_f64(a, 5 * A), t2)),
                                    hc_mul(a, hc_f64(a, 8 * A), t)), hc_f64(a, 4 * A));
    return hc_select(a, hc_le(a, t, hc_f64(a, 1)), near, far);
}

typedef struct taps {
    int n;
    hc_expr *idx[4], *w[4]; /* w NULL: weight 1 */
} taps;

/* The taps of one resized dimension for the output index i, as expressions over i. */
static void dim_taps(hc_arena *a, const resize_cfg *c, int d, int64_t in, hc_var *i, taps *t) {
    hc_expr *x = source_coord(a, c, d, in, i);
    if (c->mode == IM_NEAREST) {
        hc_expr *r;
        switch (c->nearest) {
        case NM_ROUND_PREFER_FLOOR:
            r = hc_math(a, HC_PRIM_CEIL, hc_sub(a, x, hc_f64(a, 0.5)), NULL);
            break;
        case NM_ROUND_PREFER_CEIL:
            r = hc_math(a, HC_PRIM_FLOOR, hc_add(a, x, hc_f64(a, 0.5)), NULL);
            break;
        case NM_FLOOR: r = hc_math(a, HC_PRIM_FLOOR, x, NULL); break;
        default: r = hc_math(a, HC_PRIM_CEIL, x, NULL); break;
        }
        t->n = 1, t->idx[0] = clamp_index(a, to_index(a, r), in), t->w[0] = NULL;
        return;
    }
    hc_expr *x0 = hc_math(a, HC_PRIM_FLOOR, x, NULL), *r = hc_sub(a, x, x0);
    hc_expr *i0 = to_index(a, x0);
    if (c->mode == IM_LINEAR) {
        t->n = 2;
        t->idx[0] = clamp_index(a, i0, in), t->w[0] = hc_sub(a, hc_f64(a, 1), r);
        t->idx[1] = clamp_index(a, hc_add(a, i0, hc_int(a, 1)), in), t->w[1] = r;
        return;
    }
    t->n = 4;
    hc_expr *sum = NULL;
    for (int k = 0; k < 4; k++) {
        hc_expr *pos = hc_add(a, i0, hc_int(a, k - 1));
        hc_expr *dist = hc_math(a, HC_PRIM_ABS, hc_sub(a, r, hc_f64(a, k - 1)), NULL);
        t->idx[k] = clamp_index(a, pos, in);
        t->w[k] = cubic_w(a, dist, c->cubic_a);
        if (c->exclude_outside) {
            hc_expr *inside = hc_and(a, hc_le(a, hc_int(a, 0), pos), hc_lt(a, pos, hc_int(a, in)));
            t->w[k] = hc_select(a, inside, t->w[k], hc_f64(a, 0));
        }
        sum = sum ? hc_add(a, sum, t->w[k]) : t->w[k];
    }
    if (c->exclude_outside)
        for (int k = 0; k < 4; k++) t->w[k] = hc_div(a, t->w[k], sum);
}

/* The taps of dim d as 1-d tables over the output index (tap indices and weights): the
 * weights are computed once per output row/column, not once per element, and the
 * element expression stays small. Returns the reads of those tables at axis i. */
static void dim_tables(hc_arena *a, const resize_cfg *c, const char *name, int d, int64_t in,
                       hc_var *i, taps *t) {
    hc_var *o = hc_axis(a, "o");
    taps e;
    dim_taps(a, c, d, in, o, &e);
    t->n = e.n;
    hc_expr *at[1] = {hc_ref(a, i)};
    for (int k = 0; k < e.n; k++) {
        hc_tnode *ti = hc_compute_with_axes(a, hc_arena_printf(a, "%s_i%d_%d", name, d, k), 1,
                                            &c->out[d], &o, e.idx[k]);
        t->idx[k] = hc_at(a, ti, at);
        t->w[k] = NULL;
        if (!e.w[k]) continue;
        hc_tnode *tw = hc_compute_with_axes(a, hc_arena_printf(a, "%s_w%d_%d", name, d, k), 1,
                                            &c->out[d], &o, e.w[k]);
        t->w[k] = hc_at(a, tw, at);
    }
}

/* Outside the roi in some dim (tf_crop_and_resize): the extrapolation value. */
static hc_expr *outside_roi(hc_arena *a, const resize_cfg *c, const hc_tnode *x, hc_var **ax,
                            const bool *resized) {
    hc_expr *out = NULL;
    for (int d = 0; d < c->ndim; d++) {
        if (!resized[d]) continue;
        hc_expr *s = source_coord(a, c, d, x->shape[d], ax[d]);
        hc_expr *o = hc_binary(a, HC_OP_OR, hc_lt(a, s, hc_f64(a, 0)),
                               hc_binary(a, HC_OP_GT, s, hc_f64(a, (double)(x->shape[d] - 1))));
        out = out ? hc_binary(a, HC_OP_OR, out, o) : o;
    }
    return out;
}

/* A balanced sum keeps the expression shallow (16 taps: depth 4, not 16). */
static hc_expr *sum_tree(hc_arena *a, hc_expr **terms, int n) {
    if (n == 1) return terms[0];
    return hc_add(a, sum_tree(a, terms, n / 2), sum_tree(a, terms + n / 2, n - n / 2));
}

static hc_task *resize_task(hc_arena *a, const hc_node *n, hc_error *err) {
    resize_cfg c;
    int count;
    if (resize_cfg_of(n, &c, err)) return NULL;
    hc_tnode **p = hc_node_input_tnodes(a, n, &count);
    const hc_tnode *x = p[0];
    const hc_tensor *o = n->outputs[0];
    hc_var *ax[HC_MAX_DIMS];
    taps t[HC_MAX_DIMS];
    bool resized[HC_MAX_DIMS];
    int combos = 1;
    hc_shp_make_axes(a, c.ndim, ax);
    for (int d = 0; d < c.ndim; d++) {
        resized[d] = c.out[d] != x->shape[d] || c.scale[d] != 1.0 ||
                     c.coord == CM_TF_CROP_AND_RESIZE;
        if (resized[d]) dim_tables(a, &c, o->name, d, x->shape[d], ax[d], &t[d]);
        else t[d].n = 1, t[d].idx[0] = hc_ref(a, ax[d]), t[d].w[0] = NULL;
        combos *= t[d].n;
    }
    if (combos > 256) {
        hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "%d interpolation taps per element", combos);
        return NULL;
    }
    hc_expr **terms = HC_NEW_ARRAY(a, hc_expr *, combos);
    for (int k = 0; k < combos; k++) {
        hc_expr *idx[HC_MAX_DIMS], *w = NULL;
        for (int d = 0, rest = k; d < c.ndim; d++) {
            int j = rest % t[d].n;
            rest /= t[d].n;
            idx[d] = t[d].idx[j];
            if (t[d].w[j]) w = w ? hc_mul(a, w, t[d].w[j]) : t[d].w[j];
        }
        terms[k] = hc_at(a, x, idx);
        if (w) terms[k] = hc_mul(a, hc_cast(a, hc_type_scalar(HC_F64), terms[k]), w);
    }
    hc_expr *sum = sum_tree(a, terms, combos);
    if (sum->type->dtype != x->dtype) sum = hc_cast(a, hc_type_scalar(x->dtype), sum);
    if (c.coord == CM_TF_CROP_AND_RESIZE)
        sum = hc_select(a, outside_roi(a, &c, x, ax, resized),
                        hc_const_num(a, x->dtype, c.extrapolation), sum);
    hc_tnode *y = hc_compute_with_axes(a, o->name, o->ndim, o->shape, ax, sum);
    return hc_node_task(a, n, count, p, 1, &y);
}

hc_task *hc_shp_task_resize(hc_arena *a, const hc_node *n, hc_error *err) {
    return resize_task(a, n, err);
}

hc_task *hc_shp_task_upsample(hc_arena *a, const hc_node *n, hc_error *err) {
    return resize_task(a, n, err);
}
