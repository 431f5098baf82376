/* nn_roi_align.c — RoiAlign (10, 16, 22).
 *
 * X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2, X's dtype), batch_indices [R] (i64) ->
 * Y [R, C, output_height, output_width]. rois and batch_indices are runtime tensors: the
 * sampling grid of an output element is data-dependent, its shape is not. The arithmetic
 * is the ONNX reference's (onnx/reference/ops/op_roi_align.py), per dimension (y shown):
 *   start = y1 * spatial_scale - off, len = y2 * spatial_scale - off - start, with
 *   off = 0.5 for half_pixel; output_half_pixel (version 10's only behaviour): off = 0
 *   and len = max(len, 1); bin = len / output_height; g = sampling_ratio, or ceil(bin)
 *   when it is 0 (adaptive); sample i of bin p: y = start + p * bin + (i + 0.5) * bin / g.
 *   A sample with y < -1 or y > H (or x < -1 or x > W) is 0. Else y = max(y, 0),
 *   y_low = int(y), and y_low >= H - 1 sets y, y_low and y_high to H - 1 (so y is y
 *   clamped to [0, H - 1]); bilinear weights w1 = hy hx, w2 = hy lx, w3 = ly hx,
 *   w4 = ly lx (l = y - y_low, h = 1 - l) of the corners v1..v4.
 *   avg: the sum over the gy x gx samples of w1 v1 + w2 v2 + w3 v3 + w4 v4, divided by
 *   max(gy gx, 1); max: the max over the samples of max(w1 v1, w2 v2, w3 v3, w4 v4) (the
 *   weighted corners, as the reference), an out-of-image sample giving 0, no sample 0.
 * Computed in f32 (f64 for f64; f16 and bf16 are cast back at the end).
 *
 * One Task. Per dimension, a table over (roi, bin, slot) holds each sample's low pixel
 * index, or -1 for a sample that does not count (out of the image, or past the grid),
 * and a table its fraction l; the output element reduces over its rows' slots and, inside
 * the rows that count, over the columns' slots (nested reduces: a row out of the image
 * costs one test). sampling_ratio > 0: the slots are the g samples. sampling_ratio = 0:
 * g is a runtime value, so the slots are a window of B = H + 4 sample indices starting at
 * i0, one before the first index with y >= -1 (computed from the roi), the slots past g
 * not counting. Samples before or after the window are out of the image, and the avg's
 * count and the max's 0 still count them: a bin holds at most H + 2 samples inside
 * [-1, H] (bins longer than H + 1 space their samples more than (H + 1) / (H + 2) apart),
 * so the window holds them all (with two slots of slack for the rounding of i0). The
 * reduction runs over the first b = min(ceil((H + 1) / output_height) + 2, B) slots, and
 * over the others only where the bin counts samples there (a per-bin count): only bins
 * longer than b - 2 (rois taller than output_height * (b - 2), about the image's height)
 * can, so ordinary rois pay for b slots, not B. Both ends of the window are checked with
 * the reference's coordinates (the sample before it must have y < -1, the one after it be
 * past the grid or have y > H): where they
 * are not, which only rounding could cause, the output element is NaN, never a silently
 * different value; likewise where g is above 2^24 (the f32 sample index is not exact).
 * A batch index outside [0, N) gives 0 for its outputs (reads are clamped into [0, N)).
 * NaN coordinates make samples out of the image (0); every read index is clamped into X. */
#include <math.h>
#include <string.h>

#include "graph/ops/nn_internal.h"

#define ROI_MAX_SAMPLING_RATIO 1024 /* g^2 terms per output element */
#define ROI_MAX_GRID 16777216.0     /* 2^24: adaptive counts above it are NaN */

typedef struct roi {
    bool max_mode, half_pixel;
    int64_t oh, ow, sr;
    double scale;
    int64_t N, C, H, W, R;
    int64_t slots[2], first[2]; /* per dimension (y, x): the window, the slots always reduced */
} roi;

static hc_status roi_parse(const hc_node *n, roi *r, hc_error *err) {
    const hc_tensor *x = hc_nn_in(n, 0), *rois = hc_nn_in(n, 1), *bi = hc_nn_in(n, 2);
    if (!x || !rois || !bi)
        return hc_node_fail(n, HC_ERR_INVALID, err, "X, rois and batch_indices are required");
    if (hc_nn_need_float(n, 0, err)) return err->status;
    if (x->ndim != 4)
        return hc_node_fail(n, HC_ERR_INVALID, err, "X '%s' must be 4-D [N, C, H, W] (rank %d)",
                            x->name, x->ndim);
    if (rois->dtype != x->dtype || rois->ndim != 2 || rois->shape[1] != 4)
        return hc_node_fail(n, HC_ERR_INVALID, err, "rois '%s' must be [num_rois, 4] of X's dtype %s",
                            rois->name, hc_dtype_name(x->dtype));
    if (bi->dtype != HC_I64 || bi->ndim != 1 || bi->shape[0] != rois->shape[0])
        return hc_node_fail(n, HC_ERR_INVALID, err, "batch_indices '%s' must be i64 [%lld] (one per roi)",
                            bi->name, (long long)rois->shape[0]);
    const char *m = hc_node_attr_string(n, "mode", "avg");
    if (!strcmp(m, "avg")) r->max_mode = false;
    else if (!strcmp(m, "max")) r->max_mode = true;
    else return hc_node_fail(n, HC_ERR_INVALID, err, "mode '%s' (avg or max)", m);
    if (n->opset < 16) {
        if (hc_node_attr(n, "coordinate_transformation_mode"))
            return hc_node_fail(n, HC_ERR_INVALID, err, "coordinate_transformation_mode is an "
                                "attribute from version 16 on (opset %d)", n->opset);
        r->half_pixel = false; /* version 10: output_half_pixel */
    } else {
        const char *c = hc_node_attr_string(n, "coordinate_transformation_mode", "half_pixel");
        if (!strcmp(c, "half_pixel")) r->half_pixel = true;
        else if (!strcmp(c, "output_half_pixel")) r->half_pixel = false;
        else return hc_node_fail(n, HC_ERR_INVALID, err, "coordinate_transformation_mode '%s' "
                                 "(half_pixel or output_half_pixel)", c);
    }
    r->oh = hc_node_attr_int(n, "output_height", 1);
    r->ow = hc_node_attr_int(n, "output_width", 1);
    r->sr = hc_node_attr_int(n, "sampling_ratio", 0);
    r->scale = hc_node_attr_float(n, "spatial_scale", 1.0);
    if (r->oh < 1 || r->ow < 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "output_height %lld and output_width %lld must be "
                            "positive", (long long)r->oh, (long long)r->ow);
    if (r->sr < 0)
        return hc_node_fail(n, HC_ERR_INVALID, err, "sampling_ratio %lld is negative", (long long)r->sr);
    if (r->sr > ROI_MAX_SAMPLING_RATIO)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "sampling_ratio %lld is above %d (its square "
                            "is the reduction per output element)", (long long)r->sr,
                            ROI_MAX_SAMPLING_RATIO);
    if (!isfinite(r->scale))
        return hc_node_fail(n, HC_ERR_INVALID, err, "spatial_scale is not finite");
    r->N = x->shape[0], r->C = x->shape[1], r->H = x->shape[2], r->W = x->shape[3];
    r->R = rois->shape[0];
    for (int k = 0; k < 2; k++) {
        int64_t size = k ? r->W : r->H, P = k ? r->ow : r->oh;
        if (r->sr > 0) {
            r->slots[k] = r->first[k] = r->sr;
        } else {
            int64_t b = (size + 1 + P - 1) / P + 2;
            r->slots[k] = size + 4;
            r->first[k] = b < size + 4 ? b : size + 4;
        }
    }
    return HC_OK;
}

hc_status hc_nn_infer_roi_align(hc_node *n, hc_error *err) {
    roi r;
    if (roi_parse(n, &r, err)) return err->status;
    int64_t shape[4] = {r.R, r.C, r.oh, r.ow};
    hc_node_set_output(n, 0, hc_nn_in(n, 0)->dtype, 4, shape);
    return HC_OK;
}

typedef struct roi_ctx {
    roi r;
    hc_arena *a;
    const hc_tnode *x, *rois, *bi;
    const hc_type *ct; /* f32 (f64 for f64) */
    int k;             /* the dimension a table being built is of (0: y, 1: x) */
    /* per dimension: [R, P, slots] low index or -1, [R, P, slots] fraction; [R, P]: g, the
     * counted samples (all slots; the first ones), the lost flag (NULL where not needed) */
    hc_tnode *low[2], *frac[2], *g[2], *nall[2], *nfirst[2], *lost[2];
    hc_reduce_kind kind; /* of the output's reduction */
    hc_var *const *axes; /* the output element's */
} roi_ctx;

/* One dimension of a bin's sampling grid. */
typedef struct roi_dim {
    hc_expr *base, *bin, *gf; /* start + p * bin; bin; g as a float */
    hc_expr *g, *i0;          /* g and the window's first sample index (i64) */
    int64_t size;             /* H (or W) */
} roi_dim;

static hc_expr *num(const roi_ctx *c, double v) { return hc_const_num(c->a, c->ct->dtype, v); }
static hc_expr *to_ct(const roi_ctx *c, hc_expr *e) { return hc_cast(c->a, c->ct, e); }
static hc_expr *to_i64(const roi_ctx *c, hc_expr *e) { return hc_cast(c->a, hc_type_scalar(HC_I64), e); }
static hc_expr *ge(const roi_ctx *c, hc_expr *x, hc_expr *y) { return hc_binary(c->a, HC_OP_GE, x, y); }
static hc_expr *or_e(const roi_ctx *c, hc_expr *x, hc_expr *y) { return hc_binary(c->a, HC_OP_OR, x, y); }
static hc_expr *at2(const roi_ctx *c, const hc_tnode *t, hc_expr *i, hc_expr *j) {
    return hc_at(c->a, t, (hc_expr *[]){i, j});
}
static hc_expr *at3(const roi_ctx *c, const hc_tnode *t, hc_expr *i, hc_expr *j, hc_expr *k) {
    return hc_at(c->a, t, (hc_expr *[]){i, j, k});
}

/* rois[n, k] * spatial_scale - offset */
static hc_expr *roi_coord(const roi_ctx *c, hc_var *nv, int k) {
    hc_arena *a = c->a;
    hc_expr *v = to_ct(c, at2(c, c->rois, hc_ref(a, nv), hc_int(a, k)));
    return hc_sub(a, hc_mul(a, v, num(c, c->r.scale)), num(c, c->r.half_pixel ? 0.5 : 0));
}

/* The coordinate of sample i (i64) of the bin: base + ((i + 0.5) * bin) / g. */
static hc_expr *sample_at(const roi_ctx *c, const roi_dim *d, hc_expr *i) {
    hc_arena *a = c->a;
    return hc_add(a, d->base, hc_div(a, hc_mul(a, hc_add(a, to_ct(c, i), num(c, 0.5)), d->bin), d->gf));
}

/* Dimension c->k of bin p of roi n (0: y, rois columns 1 and 3; 1: x, columns 0 and 2). */
static void roi_dim_make(const roi_ctx *c, hc_var *nv, hc_var *pv, roi_dim *d, hc_expr **ceil_bin) {
    hc_arena *a = c->a;
    const roi *r = &c->r;
    int k = c->k;
    int64_t P = k ? r->ow : r->oh;
    d->size = k ? r->W : r->H;
    hc_expr *start = roi_coord(c, nv, k ? 0 : 1), *end = roi_coord(c, nv, k ? 2 : 3);
    hc_expr *len = hc_sub(a, end, start);
    if (!r->half_pixel) len = hc_max(a, len, num(c, 1)); /* malformed rois are 1 x 1 */
    d->bin = hc_div(a, len, num(c, (double)P));
    d->base = hc_add(a, start, hc_mul(a, to_ct(c, hc_ref(a, pv)), d->bin));
    if (r->sr > 0) {
        d->gf = num(c, (double)r->sr);
        d->g = hc_int(a, r->sr);
        d->i0 = hc_int(a, 0);
        return;
    }
    hc_expr *gr = hc_math(a, HC_PRIM_CEIL, d->bin, NULL); /* the reference's ceil(len / P) */
    if (ceil_bin) *ceil_bin = gr;
    /* NaN and g < 1 give 0 (comparisons are false on NaN) */
    d->gf = hc_select(a, ge(c, gr, num(c, 1)), hc_min(a, gr, num(c, ROI_MAX_GRID)), num(c, 0));
    d->g = to_i64(c, d->gf);
    /* the first sample with y >= -1 has i >= (-1 - base) / bin * g - 0.5; one before it,
     * in [0, g] (bin > 0 where g >= 1) */
    hc_expr *est = hc_math(a, HC_PRIM_CEIL,
                           hc_sub(a, hc_mul(a, hc_div(a, hc_sub(a, num(c, -1), d->base), d->bin), d->gf),
                                  num(c, 0.5)), NULL);
    hc_expr *v = hc_sub(a, est, num(c, 1));
    d->i0 = to_i64(c, hc_select(a, ge(c, v, num(c, 0)), hc_min(a, v, d->gf), num(c, 0)));
}

/* The sample in slot t (axes n, p, t): whether it counts (in the grid and the image) and
 * its coordinate clamped to [0, size - 1]. */
static hc_expr *slot_sample(const roi_ctx *c, hc_var *const *axes, hc_expr **counts) {
    hc_arena *a = c->a;
    roi_dim d;
    roi_dim_make(c, axes[0], axes[1], &d, NULL);
    hc_expr *i = hc_add(a, d.i0, hc_ref(a, axes[2]));
    hc_expr *y = sample_at(c, &d, i);
    *counts = hc_and(a, ge(c, y, num(c, -1)), hc_le(a, y, num(c, (double)d.size)));
    if (c->r.sr == 0) *counts = hc_and(a, hc_lt(a, i, d.g), *counts);
    /* max(y, 0), and y_low >= size - 1 sets y to size - 1; NaN gives 0 */
    double hi = (double)d.size - 1;
    return hc_select(a, ge(c, y, num(c, 0)), hc_min(a, y, num(c, hi)), num(c, 0));
}

static hc_expr *low_value(hc_arena *a, hc_var *const *axes, void *vctx) {
    roi_ctx *c = vctx;
    c->a = a;
    hc_expr *counts, *y = slot_sample(c, axes, &counts);
    return hc_select(a, counts, to_i64(c, y), hc_int(a, -1));
}

static hc_expr *frac_value(hc_arena *a, hc_var *const *axes, void *vctx) {
    roi_ctx *c = vctx;
    c->a = a;
    hc_expr *counts, *y = slot_sample(c, axes, &counts);
    return hc_sub(a, y, to_ct(c, to_i64(c, y)));
}

static hc_expr *g_value(hc_arena *a, hc_var *const *axes, void *vctx) {
    roi_ctx *c = vctx;
    c->a = a;
    roi_dim d;
    roi_dim_make(c, axes[0], axes[1], &d, NULL);
    return d.g;
}

/* Samples lost to the window (adaptive): the one before it is at or after -1, or the one
 * after it is inside the grid and at or before the image's end; or g was capped. */
static hc_expr *lost_value(hc_arena *a, hc_var *const *axes, void *vctx) {
    roi_ctx *c = vctx;
    c->a = a;
    roi_dim d;
    hc_expr *gr;
    roi_dim_make(c, axes[0], axes[1], &d, &gr);
    hc_expr *end = hc_add(a, d.i0, hc_int(a, c->r.slots[c->k]));
    hc_expr *before = hc_and(a, ge(c, d.i0, hc_int(a, 1)),
                             ge(c, sample_at(c, &d, hc_sub(a, d.i0, hc_int(a, 1))), num(c, -1)));
    hc_expr *after = hc_and(a, hc_lt(a, end, d.g),
                            hc_le(a, sample_at(c, &d, end), num(c, (double)d.size)));
    return or_e(c, or_e(c, before, after), hc_lt(a, num(c, ROI_MAX_GRID), gr));
}

typedef struct count_ctx {
    const hc_tnode *low;
    int64_t slots;
} count_ctx;

/* The counted samples among the first `slots` slots of a bin. */
static hc_expr *count_value(hc_arena *a, hc_var *const *axes, void *vctx) {
    count_ctx *cc = vctx;
    hc_var *t = hc_axis(a, "t");
    hc_expr *l = hc_at(a, cc->low, (hc_expr *[]){hc_ref(a, axes[0]), hc_ref(a, axes[1]), hc_ref(a, t)});
    hc_expr *v = hc_select(a, hc_binary(a, HC_OP_GE, l, hc_int(a, 0)), hc_int(a, 1), hc_int(a, 0));
    return hc_reduce(a, HC_REDUCE_SUM, 1, &t, &cc->slots, v);
}

/* ---- the output element ------------------------------------------------------------ */
static hc_expr *identity(const roi_ctx *c) { return num(c, c->kind == HC_REDUCE_MAX ? -INFINITY : 0); }
static hc_expr *combine(const roi_ctx *c, hc_expr *x, hc_expr *y) {
    return c->kind == HC_REDUCE_MAX ? hc_max(c->a, x, y) : hc_add(c->a, x, y);
}

/* The output's bin index along dimension k (axes n, c, ph, pw). */
static hc_expr *bin_of(const roi_ctx *c, int k) { return hc_ref(c->a, c->axes[2 + k]); }

typedef hc_expr *(*slot_fn)(roi_ctx *c, hc_expr *t, hc_expr *ty);

/* The reduction over the slots t of dimension k of f(t): the first slots, then the rest
 * under the test that the bin counts samples there. */
static hc_expr *over_slots(roi_ctx *c, int k, slot_fn f, hc_expr *ty) {
    hc_arena *a = c->a;
    int64_t first = c->r.first[k], rest = c->r.slots[k] - first;
    hc_var *v = hc_axis(a, k ? "sx" : "sy");
    hc_expr *e = hc_reduce(a, c->kind, 1, &v, &first, f(c, hc_ref(a, v), ty));
    if (rest == 0) return e;
    hc_var *w = hc_axis(a, k ? "sx" : "sy");
    hc_expr *e2 = hc_reduce(a, c->kind, 1, &w, &rest, f(c, hc_add(a, hc_ref(a, w), hc_int(a, first)), ty));
    hc_expr *n = hc_ref(a, c->axes[0]), *p = bin_of(c, k);
    hc_expr *more = hc_lt(a, at2(c, c->nfirst[k], n, p), at2(c, c->nall[k], n, p));
    return combine(c, e, hc_select(a, more, e2, identity(c)));
}

/* The sample at slots (ty, tx), both counting: the bilinear value (avg) or the largest
 * weighted corner (max). */
static hc_expr *sample_value(roi_ctx *c, hc_expr *tx, hc_expr *ty) {
    hc_arena *a = c->a;
    const roi *r = &c->r;
    hc_expr *n = hc_ref(a, c->axes[0]);
    hc_expr *lo[2], *hi[2], *l[2], *h[2], *t[2] = {ty, tx};
    for (int k = 0; k < 2; k++) {
        int64_t size = k ? r->W : r->H;
        hc_expr *p = bin_of(c, k);
        lo[k] = hc_max(a, at3(c, c->low[k], n, p, t[k]), hc_int(a, 0)); /* counted: >= 0 */
        hi[k] = hc_min(a, hc_add(a, lo[k], hc_int(a, 1)), hc_int(a, size - 1));
        l[k] = at3(c, c->frac[k], n, p, t[k]);
        h[k] = hc_sub(a, num(c, 1), l[k]);
    }
    hc_expr *b = hc_at(a, c->bi, (hc_expr *[]){n});
    hc_expr *bc = hc_min(a, hc_max(a, b, hc_int(a, 0)), hc_int(a, r->N - 1));
    hc_expr *ch = hc_ref(a, c->axes[1]);
#define PX(yi, xi) to_ct(c, hc_at(a, c->x, (hc_expr *[]){bc, ch, (yi), (xi)}))
    hc_expr *t1 = hc_mul(a, hc_mul(a, h[0], h[1]), PX(lo[0], lo[1]));
    hc_expr *t2 = hc_mul(a, hc_mul(a, h[0], l[1]), PX(lo[0], hi[1]));
    hc_expr *t3 = hc_mul(a, hc_mul(a, l[0], h[1]), PX(hi[0], lo[1]));
    hc_expr *t4 = hc_mul(a, hc_mul(a, l[0], l[1]), PX(hi[0], hi[1]));
#undef PX
    if (c->kind == HC_REDUCE_MAX) return hc_max(a, hc_max(a, hc_max(a, t1, t2), t3), t4);
    return hc_add(a, hc_add(a, hc_add(a, t1, t2), t3), t4);
}

static hc_expr *guarded(roi_ctx *c, int k, hc_expr *t, hc_expr *v) {
    hc_arena *a = c->a;
    hc_expr *low = at3(c, c->low[k], hc_ref(a, c->axes[0]), bin_of(c, k), t);
    return hc_select(a, hc_binary(a, HC_OP_GE, low, hc_int(a, 0)), v, identity(c));
}

static hc_expr *col_fn(roi_ctx *c, hc_expr *tx, hc_expr *ty) {
    return guarded(c, 1, tx, sample_value(c, tx, ty));
}

static hc_expr *row_fn(roi_ctx *c, hc_expr *ty, hc_expr *unused) {
    (void)unused;
    return guarded(c, 0, ty, over_slots(c, 1, col_fn, ty));
}

static hc_expr *roi_value(hc_arena *a, hc_var *const *axes, void *vctx) {
    roi_ctx *c = vctx;
    c->a = a;
    c->axes = axes;
    const roi *r = &c->r;
    if (r->N * r->H * r->W == 0) return num(c, 0); /* nothing to read */
    hc_expr *n = hc_ref(a, axes[0]), *g[2];
    for (int k = 0; k < 2; k++) g[k] = r->sr > 0 ? hc_int(a, r->sr) : at2(c, c->g[k], n, bin_of(c, k));
    hc_expr *gg = hc_mul(a, g[0], g[1]);
    hc_expr *red = over_slots(c, 0, row_fn, NULL), *out;
    if (!r->max_mode) {
        out = hc_div(a, red, to_ct(c, hc_max(a, gg, hc_int(a, 1))));
    } else {
        /* samples out of the image are 0: there are some where fewer samples count than
         * the grid has; no sample at all is 0 */
        hc_expr *nc = hc_mul(a, at2(c, c->nall[0], n, bin_of(c, 0)), at2(c, c->nall[1], n, bin_of(c, 1)));
        out = hc_max(a, red, hc_select(a, hc_lt(a, nc, gg), num(c, 0), num(c, -INFINITY)));
        if (r->sr == 0)
            out = hc_select(a, hc_and(a, ge(c, g[0], hc_int(a, 1)), ge(c, g[1], hc_int(a, 1))), out, num(c, 0));
    }
    if (r->sr == 0)
        out = hc_select(a, or_e(c, at2(c, c->lost[0], n, bin_of(c, 0)), at2(c, c->lost[1], n, bin_of(c, 1))),
                        num(c, NAN), out);
    hc_expr *b = hc_at(a, c->bi, (hc_expr *[]){n});
    hc_expr *bvalid = hc_and(a, ge(c, b, hc_int(a, 0)), hc_lt(a, b, hc_int(a, r->N)));
    return hc_select(a, bvalid, out, num(c, 0));
}

hc_task *hc_nn_task_roi_align(hc_arena *a, const hc_node *n, hc_error *err) {
    roi_ctx c = {.a = a};
    if (roi_parse(n, &c.r, err)) return NULL;
    const roi *r = &c.r;
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    c.x = in[0], c.rois = in[1], c.bi = in[2];
    hc_dtype dt = c.x->dtype;
    c.ct = hc_type_scalar(dt == HC_F64 ? HC_F64 : HC_F32);
    c.kind = r->max_mode ? HC_REDUCE_MAX : HC_REDUCE_SUM;
    static const char *const names[2][6] = {{"roi_ylow", "roi_yfrac", "roi_gy", "roi_ny", "roi_nyfirst", "roi_losty"},
                                            {"roi_xlow", "roi_xfrac", "roi_gx", "roi_nx", "roi_nxfirst", "roi_lostx"}};
    count_ctx cc[2][2];
    for (int k = 0; k < 2 && r->N * r->H * r->W != 0; k++) {
        c.k = k;
        int64_t P = k ? r->ow : r->oh, tab[3] = {r->R, P, r->slots[k]};
        c.low[k] = hc_compute(a, names[k][0], 3, tab, low_value, &c);
        c.frac[k] = hc_compute(a, names[k][1], 3, tab, frac_value, &c);
        c.nall[k] = c.nfirst[k] = c.g[k] = c.lost[k] = NULL;
        cc[k][0] = (count_ctx){c.low[k], r->slots[k]};
        cc[k][1] = (count_ctx){c.low[k], r->first[k]};
        if (r->max_mode || r->first[k] < r->slots[k])
            c.nall[k] = hc_compute(a, names[k][3], 2, tab, count_value, &cc[k][0]);
        if (r->first[k] < r->slots[k])
            c.nfirst[k] = hc_compute(a, names[k][4], 2, tab, count_value, &cc[k][1]);
        if (r->sr == 0) {
            c.g[k] = hc_compute(a, names[k][2], 2, tab, g_value, &c);
            c.lost[k] = hc_compute(a, names[k][5], 2, tab, lost_value, &c);
        }
    }
    const hc_tensor *y = n->outputs[0];
    hc_tnode *out = hc_compute(a, dt == c.ct->dtype ? y->name : "roi", y->ndim, y->shape, roi_value, &c);
    if (dt != c.ct->dtype) out = hc_compute_cast(a, y->name, out, dt);
    return hc_node_task(a, n, nin, in, 1, &out);
}
