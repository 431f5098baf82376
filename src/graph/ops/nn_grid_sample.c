/* nn_grid_sample.c — the sampling ops: GridSample and Col2Im (at the end).
 *
 * GridSample (16, 20, 22): X [N, C, D1..Dk] sampled at the normalized
 * coordinates of grid [N, O1..Ok, k] (the last entry indexes X's last spatial dim, as the
 * reference reads them reversed) into Y [N, C, O1..Ok]. One Task: each output element is a
 * reduction over the interpolation taps (1 for nearest, 2^k linear, 4^k cubic), the weight
 * of a tap the product of its per-dim weights, the pixel read with the padding mode's rule,
 * as the ONNX reference (onnx/reference/ops/op_grid_sample.py) computes it:
 *   coordinates: align_corners ? (g + 1) / 2 (D - 1) : ((g + 1) D - 1) / 2; nearest rounds
 *     half to even; out of [lo, hi] (align ? [0, D-1] : [-0.5, D-0.5]) they are clamped
 *     to [0, D-1] (border) or reflected into [lo, hi] (reflection);
 *   pixels: zeros: 0 outside; border: the index clamped; reflection: reflected;
 *   cubic: Keys' kernel with a = -0.75 on the taps floor(x) - 1 .. floor(x) + 2. */
#include <math.h>
#include <string.h>

#include "graph/ops/nn_internal.h"

typedef enum { GS_NEAREST, GS_LINEAR, GS_CUBIC } gs_mode;
typedef enum { GS_ZEROS, GS_BORDER, GS_REFLECTION } gs_pad;

typedef struct gs {
    gs_mode mode;
    gs_pad pad;
    bool align;
    int k; /* spatial dims */
} gs;

static hc_status gs_parse(const hc_node *n, gs *g, hc_error *err) {
    const hc_tensor *x = hc_nn_in(n, 0), *grid = hc_nn_in(n, 1);
    if (!x || !grid) return hc_node_fail(n, HC_ERR_INVALID, err, "X and grid are required");
    if (hc_nn_need_float(n, 0, err) || hc_nn_need_float(n, 1, err)) return err->status;
    const char *m = hc_node_attr_string(n, "mode", n->opset >= 20 ? "linear" : "bilinear");
    const char *p = hc_node_attr_string(n, "padding_mode", "zeros");
    if (!strcmp(m, "nearest")) g->mode = GS_NEAREST;
    else if (!strcmp(m, "linear") || !strcmp(m, "bilinear")) g->mode = GS_LINEAR;
    else if (!strcmp(m, "cubic") || !strcmp(m, "bicubic")) g->mode = GS_CUBIC;
    else return hc_node_fail(n, HC_ERR_INVALID, err, "mode '%s'", m);
    if (!strcmp(p, "zeros")) g->pad = GS_ZEROS;
    else if (!strcmp(p, "border")) g->pad = GS_BORDER;
    else if (!strcmp(p, "reflection")) g->pad = GS_REFLECTION;
    else return hc_node_fail(n, HC_ERR_INVALID, err, "padding_mode '%s'", p);
    g->align = hc_node_attr_int(n, "align_corners", 0) != 0;
    g->k = x->ndim - 2;
    if (g->k < 1 || (n->opset < 20 && g->k != 2))
        return hc_node_fail(n, HC_ERR_INVALID, err, "X must be %s (rank %d)",
                            n->opset < 20 ? "4-D before opset 20" : "at least 3-D", x->ndim);
    if (g->mode == GS_CUBIC && g->k != 2)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "cubic mode is for 4-D X only");
    if (grid->ndim != x->ndim || grid->shape[0] != x->shape[0] || grid->shape[grid->ndim - 1] != g->k)
        return hc_node_fail(n, HC_ERR_INVALID, err, "grid '%s' must be [%lld, O1..O%d, %d]",
                            grid->name, (long long)x->shape[0], g->k, g->k);
    return HC_OK;
}

hc_status hc_nn_infer_grid_sample(hc_node *n, hc_error *err) {
    gs g;
    if (gs_parse(n, &g, err)) return err->status;
    const hc_tensor *x = hc_nn_in(n, 0), *grid = hc_nn_in(n, 1);
    int64_t shape[HC_MAX_DIMS] = {x->shape[0], x->shape[1]};
    for (int i = 0; i < g.k; i++) shape[2 + i] = grid->shape[1 + i];
    hc_node_set_output(n, 0, x->dtype, x->ndim, shape);
    return HC_OK;
}

typedef struct gs_ctx {
    gs g;
    hc_arena *a;
    const hc_tnode *x, *grid;
    const hc_type *ct; /* f32 (f64 for f64) */
} gs_ctx;

static hc_expr *num(const gs_ctx *c, double v) { return hc_const_num(c->a, c->ct->dtype, v); }

static hc_expr *floor_e(const gs_ctx *c, hc_expr *v) { return hc_math(c->a, HC_PRIM_FLOOR, v, NULL); }

/* The reference's reflection of v into [lo, hi] (floats). */
static hc_expr *reflect(const gs_ctx *c, hc_expr *v, double lo, double hi) {
    hc_arena *a = c->a;
    double rng = hi - lo;
    if (rng <= 0) return num(c, lo);
    hc_expr *below = hc_lt(a, v, num(c, lo));
    hc_expr *dx = hc_select(a, below, hc_sub(a, num(c, lo), v), hc_sub(a, v, num(c, hi)));
    hc_expr *k = floor_e(c, hc_div(a, dx, num(c, rng)));
    hc_expr *r = hc_sub(a, dx, hc_mul(a, k, num(c, rng)));
    hc_expr *even = hc_eq(a, hc_sub(a, k, hc_mul(a, num(c, 2), floor_e(c, hc_div(a, k, num(c, 2))))),
                          num(c, 0));
    hc_expr *from_lo = hc_add(a, num(c, lo), r), *from_hi = hc_sub(a, num(c, hi), r);
    hc_expr *out = hc_select(a, below, hc_select(a, even, from_lo, from_hi),
                             hc_select(a, even, from_hi, from_lo));
    hc_expr *inside = hc_and(a, hc_le(a, num(c, lo), v), hc_le(a, v, num(c, hi)));
    return hc_select(a, inside, v, out);
}

static hc_expr *clampf(const gs_ctx *c, hc_expr *v, double lo, double hi) {
    return hc_min(c->a, hc_max(c->a, v, num(c, lo)), num(c, hi));
}

/* Index i (an integer-valued float) of a dim of size d under the padding mode: the index
 * to read (in range) and, for zeros, whether the pixel is inside. */
static hc_expr *pixel_index(const gs_ctx *c, hc_expr *i, int64_t d, hc_expr **valid) {
    hc_arena *a = c->a;
    double lo = c->g.align ? 0 : -0.5, hi = c->g.align ? (double)d - 1 : (double)d - 0.5;
    if (c->g.pad == GS_REFLECTION) i = reflect(c, i, lo, hi);
    else if (c->g.pad == GS_ZEROS)
        *valid = hc_nn_and(a, *valid, hc_and(a, hc_le(a, num(c, 0), i), hc_le(a, i, num(c, (double)d - 1))));
    i = clampf(c, i, 0, (double)d - 1);
    return hc_cast(a, hc_type_scalar(HC_I64), i); /* truncation, as the reference's int() */
}

/* Keys' cubic weight (a = -0.75) of a tap at distance |t| (0 <= |t| < 2). */
static hc_expr *cubic_w(const gs_ctx *c, hc_expr *t) {
    hc_arena *a = c->a;
    hc_expr *x = hc_math(a, HC_PRIM_ABS, t, NULL);
    const double al = -0.75;
    /* |x| <= 1: ((a + 2) x - (a + 3)) x^2 + 1; 1 < |x| < 2: ((a x - 5a) x + 8a) x - 4a */
    hc_expr *near = hc_add(a, hc_mul(a, hc_sub(a, hc_mul(a, num(c, al + 2), x), num(c, al + 3)),
                                     hc_mul(a, x, x)), num(c, 1));
    hc_expr *far = hc_sub(a, hc_mul(a, hc_add(a, hc_mul(a, hc_sub(a, hc_mul(a, num(c, al), x),
                                                                    num(c, 5 * al)), x),
                                              num(c, 8 * al)), x), num(c, 4 * al));
    return hc_select(a, hc_le(a, x, num(c, 1)), near, far);
}

static hc_expr *sample(hc_arena *a, hc_var *const *axes, void *vctx) {
    gs_ctx *c = vctx;
    c->a = a;
    const gs *g = &c->g;
    int k = g->k;
    int64_t taps = g->mode == GS_NEAREST ? 1 : g->mode == GS_LINEAR ? 2 : 4;
    hc_var *t[HC_MAX_DIMS];
    int64_t ext[HC_MAX_DIMS];
    for (int i = 0; i < k; i++) t[i] = hc_axis(a, "t"), ext[i] = taps;
    hc_expr *xi[HC_MAX_DIMS] = {hc_ref(a, axes[0]), hc_ref(a, axes[1])};
    hc_expr *w = NULL, *valid = NULL;
    for (int i = 0; i < k; i++) {
        int64_t d = c->x->shape[2 + i];
        hc_expr *gi[HC_MAX_DIMS];
        gi[0] = hc_ref(a, axes[0]);
        for (int j = 0; j < k; j++) gi[1 + j] = hc_ref(a, axes[2 + j]);
        gi[1 + k] = hc_int(a, k - 1 - i); /* grid's entries run from the last dim */
        hc_expr *gv = hc_cast(a, c->ct, hc_at(a, c->grid, gi));
        hc_expr *x = g->align ? hc_mul(a, hc_div(a, hc_add(a, gv, num(c, 1)), num(c, 2)), num(c, (double)d - 1))
                              : hc_div(a, hc_sub(a, hc_mul(a, hc_add(a, gv, num(c, 1)), num(c, (double)d)),
                                                 num(c, 1)), num(c, 2));
        if (g->mode == GS_NEAREST) x = hc_math(a, HC_PRIM_ROUND, x, NULL);
        double lo = g->align ? 0 : -0.5, hi = g->align ? (double)d - 1 : (double)d - 0.5;
        if (g->pad == GS_BORDER)
            x = hc_select(a, hc_binary(a, HC_OP_OR, hc_lt(a, x, num(c, lo)), hc_lt(a, num(c, hi), x)),
                          clampf(c, x, 0, (double)d - 1), x);
        else if (g->pad == GS_REFLECTION) x = reflect(c, x, lo, hi);
        hc_expr *tap = hc_cast(a, c->ct, hc_ref(a, t[i])), *wi, *pos;
        if (g->mode == GS_NEAREST) {
            /* the reference's int(): toward zero */
            pos = hc_cast(a, c->ct, hc_cast(a, hc_type_scalar(HC_I64), x));
            wi = NULL;
        } else {
            hc_expr *x0 = floor_e(c, x), *f = hc_sub(a, x, x0);
            if (g->mode == GS_LINEAR) {
                pos = hc_add(a, x0, tap);
                wi = hc_select(a, hc_eq(a, hc_ref(a, t[i]), hc_int(a, 0)), hc_sub(a, num(c, 1), f), f);
            } else {
                pos = hc_add(a, x0, hc_sub(a, tap, num(c, 1)));
                wi = cubic_w(c, hc_sub(a, f, hc_sub(a, tap, num(c, 1))));
            }
        }
        xi[2 + i] = pixel_index(c, pos, d, &valid);
        if (wi) w = w ? hc_mul(a, w, wi) : wi;
    }
    hc_expr *px = hc_cast(a, c->ct, hc_at(a, c->x, xi));
    if (valid) px = hc_select(a, valid, px, num(c, 0));
    hc_expr *v = w ? hc_mul(a, w, px) : px;
    return hc_reduce(a, HC_REDUCE_SUM, k, t, ext, v);
}

hc_task *hc_nn_task_grid_sample(hc_arena *a, const hc_node *n, hc_error *err) {
    gs_ctx c = {.a = a};
    if (gs_parse(n, &c.g, err)) return NULL;
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    c.x = in[0], c.grid = in[1];
    hc_dtype dt = c.x->dtype;
    c.ct = hc_type_scalar(dt == HC_F64 ? HC_F64 : HC_F32);
    const hc_tensor *y = n->outputs[0];
    hc_tnode *out = hc_compute(a, dt == c.ct->dtype ? y->name : "gs", y->ndim, y->shape, sample, &c);
    if (dt != c.ct->dtype) out = hc_compute_cast(a, y->name, out, dt);
    return hc_node_task(a, n, nin, in, 1, &out);
}

/* ---- Col2Im (18) ---------------------------------------------------------------------- */
/* X [N, C * prod(block), L] (L = the sliding blocks, row-major over the block grid) summed
 * back into Y [N, C, image...]: y[n, c, p] = sum over kernel offsets k with
 * p + pad_begin - k * dilation = q * stride for a block position q inside the grid of
 * x[n, c * K + flat(k), flat(q)]. image_shape and block_shape must be constants. */
typedef struct c2i {
    int nsp;
    int64_t img[HC_MAX_DIMS], blk[HC_MAX_DIMS], dil[HC_MAX_DIMS], str[HC_MAX_DIMS];
    int64_t pb[HC_MAX_DIMS], pe[HC_MAX_DIMS], grid[HC_MAX_DIMS], K, C;
    const hc_tnode *x;
} c2i;

static hc_status c2i_parse(const hc_node *n, c2i *c, hc_error *err) {
    const hc_tensor *x = hc_nn_in(n, 0), *is = hc_nn_in(n, 1), *bs = hc_nn_in(n, 2);
    if (!x || !is || !bs) return hc_node_fail(n, HC_ERR_INVALID, err, "input, image_shape and block_shape are required");
    if (x->ndim != 3) return hc_node_fail(n, HC_ERR_INVALID, err, "input '%s' must be 3-D", x->name);
    if (!is->data) return hc_node_need_const(n, 1, err); /* shapes: values needed */
    if (!bs->data) return hc_node_need_const(n, 2, err);
    int64_t ni = hc_tensor_const_ints(is, c->img, HC_MAX_DIMS), nb = hc_tensor_const_ints(bs, c->blk, HC_MAX_DIMS);
    if (ni < 0 || nb < 0)
        return hc_node_fail(n, HC_ERR_INVALID, err, "image_shape and block_shape must hold integers");
    if (ni != nb || ni < 1 || ni > HC_MAX_DIMS - 2)
        return hc_node_fail(n, HC_ERR_INVALID, err, "image_shape and block_shape of one length (1 to %d)",
                            HC_MAX_DIMS - 2);
    c->nsp = (int)ni;
    int nd = 0, ns = 0, np = 0;
    const int64_t *d = hc_node_attr_ints(n, "dilations", &nd), *s = hc_node_attr_ints(n, "strides", &ns);
    const int64_t *p = hc_node_attr_ints(n, "pads", &np);
    if ((nd && nd != c->nsp) || (ns && ns != c->nsp) || (np && np != 2 * c->nsp))
        return hc_node_fail(n, HC_ERR_INVALID, err, "dilations, strides or pads of the wrong length");
    c->K = 1, c->C = 0;
    int64_t L = 1;
    for (int i = 0; i < c->nsp; i++) {
        c->dil[i] = nd ? d[i] : 1, c->str[i] = ns ? s[i] : 1;
        c->pb[i] = np ? p[i] : 0, c->pe[i] = np ? p[i + c->nsp] : 0;
        if (c->blk[i] < 1 || c->img[i] < 1 || c->dil[i] < 1 || c->str[i] < 1 || c->pb[i] < 0 || c->pe[i] < 0)
            return hc_node_fail(n, HC_ERR_INVALID, err, "dimension %d: sizes, dilations and strides "
                                "must be positive, pads not negative", i);
        c->grid[i] = (c->img[i] + c->pb[i] + c->pe[i] - c->dil[i] * (c->blk[i] - 1) - 1) / c->str[i] + 1;
        if (c->grid[i] < 1)
            return hc_node_fail(n, HC_ERR_INVALID, err, "dimension %d: no sliding block fits", i);
        c->K *= c->blk[i], L *= c->grid[i];
    }
    if (x->shape[1] % c->K || x->shape[2] != L)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input '%s' [%lld, %lld, %lld] does not hold %lld-element "
                            "blocks at %lld positions", x->name, (long long)x->shape[0],
                            (long long)x->shape[1], (long long)x->shape[2], (long long)c->K, (long long)L);
    c->C = x->shape[1] / c->K;
    return HC_OK;
}

hc_status hc_nn_infer_col2im(hc_node *n, hc_error *err) {
    c2i c;
    if (c2i_parse(n, &c, err)) return err->status;
    const hc_tensor *x = hc_nn_in(n, 0);
    int64_t shape[HC_MAX_DIMS] = {x->shape[0], c.C};
    for (int i = 0; i < c.nsp; i++) shape[2 + i] = c.img[i];
    hc_node_set_output(n, 0, x->dtype, 2 + c.nsp, shape);
    return HC_OK;
}

static hc_expr *c2i_value(hc_arena *a, hc_var *const *axes, void *vctx) {
    c2i *c = vctx;
    hc_var *k[HC_MAX_DIMS];
    hc_expr *ok = NULL, *kf = NULL, *qf = NULL;
    for (int i = 0; i < c->nsp; i++) {
        k[i] = hc_axis(a, "k");
        /* t = p + pad - k * dil must be a multiple of the stride, q = t / stride in range */
        hc_expr *t = hc_sub(a, hc_add(a, hc_ref(a, axes[2 + i]), hc_int(a, c->pb[i])),
                            hc_mul(a, hc_ref(a, k[i]), hc_int(a, c->dil[i])));
        hc_expr *st = hc_int(a, c->str[i]);
        ok = hc_nn_and(a, ok, hc_le(a, hc_int(a, 0), t));
        ok = hc_nn_and(a, ok, hc_eq(a, hc_mod(a, t, st), hc_int(a, 0)));
        hc_expr *q = hc_div(a, t, st);
        ok = hc_nn_and(a, ok, hc_lt(a, q, hc_int(a, c->grid[i])));
        /* clamped so that the read stays inside x where ok is false */
        q = hc_min(a, hc_max(a, q, hc_int(a, 0)), hc_int(a, c->grid[i] - 1));
        kf = kf ? hc_add(a, hc_mul(a, kf, hc_int(a, c->blk[i])), hc_ref(a, k[i])) : hc_ref(a, k[i]);
        qf = qf ? hc_add(a, hc_mul(a, qf, hc_int(a, c->grid[i])), q) : q;
    }
    hc_expr *ch = hc_add(a, hc_mul(a, hc_ref(a, axes[1]), hc_int(a, c->K)), kf);
    hc_expr *v = hc_at(a, c->x, (hc_expr *[]){hc_ref(a, axes[0]), ch, qf});
    v = hc_select(a, ok, v, hc_const_num(a, c->x->dtype, 0));
    return hc_reduce(a, HC_REDUCE_SUM, c->nsp, k, c->blk, v);
}

hc_task *hc_nn_task_col2im(hc_arena *a, const hc_node *n, hc_error *err) {
    c2i c;
    if (c2i_parse(n, &c, err)) return NULL;
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    c.x = in[0];
    const hc_tensor *y = n->outputs[0];
    hc_tnode *out = hc_compute(a, y->name, y->ndim, y->shape, c2i_value, &c);
    return hc_node_task(a, n, nin, in, 1, &out);
}

/* ---- IF_SELECT: an If's output (src/frontend/onnx.c computes both branches) ----------- */
/* y = cond ? a : b, cond one bool; the branches must agree in dtype and shape (hidetc
 * compiles static shapes: an If whose branches differ is refused, naming them). */
hc_status hc_nn_infer_if_select(hc_node *n, hc_error *err) {
    const hc_tensor *c = hc_nn_in(n, 0), *t = hc_nn_in(n, 1), *e = hc_nn_in(n, 2);
    if (!c || !t || !e) return hc_node_fail(n, HC_ERR_INVALID, err, "cond and both branches are required");
    if (c->dtype != HC_BOOL || hc_tensor_numel(c) != 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "cond '%s' must be one bool", c->name);
    if (c->data) { /* a constant condition: only the taken branch matters */
        const hc_tensor *b = hc_tensor_const_at(c, 0) != 0 ? t : e;
        if (!b->shape_known)
            return hc_node_fail(n, HC_ERR_INVALID, err, "branch value '%s' has no shape", b->name);
        hc_node_set_output(n, 0, b->dtype, b->ndim, b->shape);
        return HC_OK;
    }
    if (!t->shape_known || !e->shape_known)
        return hc_node_fail(n, HC_ERR_INVALID, err, "a branch value ('%s' or '%s') has no shape",
                            t->name, e->name);
    bool same = t->dtype == e->dtype && t->ndim == e->ndim &&
                !memcmp(t->shape, e->shape, sizeof(int64_t) * (size_t)t->ndim);
    if (!same) {
        hc_sb a, b;
        hc_sb_init(&a), hc_sb_init(&b);
        hc_print_shape(&a, t->ndim, t->shape), hc_print_shape(&b, e->ndim, e->shape);
        hc_status st = hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "the branches give %s %s ('%s') and "
                                    "%s %s ('%s'); hidetc needs one dtype and shape",
                                    hc_dtype_name(t->dtype), hc_sb_str(&a), t->name,
                                    hc_dtype_name(e->dtype), hc_sb_str(&b), e->name);
        hc_sb_free(&a), hc_sb_free(&b);
        return st;
    }
    hc_node_set_output(n, 0, t->dtype, t->ndim, t->shape);
    return HC_OK;
}

static hc_expr *if_pick(hc_arena *a, hc_var *const *axes, void *vctx) {
    const hc_tnode *const *in = vctx;
    hc_expr *zero[HC_MAX_DIMS];
    for (int d = 0; d < in[0]->ndim; d++) zero[d] = hc_int(a, 0);
    return hc_select(a, hc_at(a, in[0], zero), hc_at_axes(a, in[1], axes), hc_at_axes(a, in[2], axes));
}

hc_task *hc_nn_task_if_select(hc_arena *a, const hc_node *n, hc_error *err) {
    if (hc_nn_infer_if_select((hc_node *)n, err)) return NULL;
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    const hc_tensor *y = n->outputs[0];
    hc_tnode *out = hc_compute(a, y->name, y->ndim, y->shape, if_pick, in);
    return hc_node_task(a, n, nin, in, 1, &out);
}

/* ---- MaxUnpool (9, 11, 22) -------------------------------------------------------------- */
/* Y zero but for Y.flat[I[q]] = X[q] (I: MaxPool's flat indices into Y). As a gather: each
 * output element sums, over its (n, c) plane of X, the elements whose index names it
 * (O(plane^2) per plane: MaxUnpool's planes in models are small). Y's spatial size:
 * output_shape (a constant input, 11) or (in - 1) * stride - pads + kernel. */
typedef struct unpool {
    int nsp;
    int64_t out[HC_MAX_DIMS]; /* Y's shape */
    int64_t inf[HC_MAX_DIMS]; /* the inferred shape I's flat indices refer to (the reference
                               * places it at Y's origin when output_shape is larger) */
    const hc_tnode *x, *ind;
} unpool;

static hc_status unpool_shape(const hc_node *n, int64_t *out, int64_t *inf, hc_error *err) {
    const hc_tensor *x = hc_nn_in(n, 0), *ind = hc_nn_in(n, 1), *os = hc_nn_in(n, 2);
    if (!x || !ind) return hc_node_fail(n, HC_ERR_INVALID, err, "X and I are required");
    if (hc_nn_need_rank(n, 0, 3, err) || hc_nn_need_float(n, 0, err)) return err->status;
    if (ind->dtype != HC_I64 || ind->ndim != x->ndim ||
        memcmp(ind->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim))
        return hc_node_fail(n, HC_ERR_INVALID, err, "I '%s' must be i64 of X's shape", ind->name);
    int nsp = x->ndim - 2, nk = 0, ns = 0, np = 0;
    const int64_t *k = hc_node_attr_ints(n, "kernel_shape", &nk), *s = hc_node_attr_ints(n, "strides", &ns);
    const int64_t *p = hc_node_attr_ints(n, "pads", &np);
    if (nk != nsp || (ns && ns != nsp) || (np && np != 2 * nsp))
        return hc_node_fail(n, HC_ERR_INVALID, err, "kernel_shape, strides or pads of the wrong length");
    out[0] = inf[0] = x->shape[0], out[1] = inf[1] = x->shape[1];
    for (int i = 0; i < nsp; i++)
        inf[2 + i] = (x->shape[2 + i] - 1) * (ns ? s[i] : 1) - (np ? p[i] + p[i + nsp] : 0) + k[i];
    if (os) {
        if (!os->data) return hc_node_need_const(n, 2, err);
        int64_t v[HC_MAX_DIMS];
        if (hc_tensor_const_ints(os, v, HC_MAX_DIMS) != x->ndim)
            return hc_node_fail(n, HC_ERR_INVALID, err, "output_shape must have %d values", x->ndim);
        for (int d = 0; d < x->ndim; d++) out[d] = v[d];
        if (out[0] != x->shape[0] || out[1] != x->shape[1])
            return hc_node_fail(n, HC_ERR_INVALID, err, "output_shape changes N or C");
    } else {
        for (int i = 0; i < nsp; i++) out[2 + i] = inf[2 + i];
    }
    for (int d = 2; d < x->ndim; d++)
        if (out[d] < 1 || inf[d] < 1) return hc_node_fail(n, HC_ERR_INVALID, err, "output dimension %d is %lld", d,
                                            (long long)out[d]);
    return HC_OK;
}

hc_status hc_nn_infer_max_unpool(hc_node *n, hc_error *err) {
    int64_t out[HC_MAX_DIMS], inf[HC_MAX_DIMS];
    if (unpool_shape(n, out, inf, err)) return err->status;
    const hc_tensor *x = hc_nn_in(n, 0);
    hc_node_set_output(n, 0, x->dtype, x->ndim, out);
    return HC_OK;
}

static hc_expr *unpool_value(hc_arena *a, hc_var *const *axes, void *vctx) {
    unpool *u = vctx;
    int nd = u->x->ndim;
    hc_expr *flat = NULL, *inside = NULL; /* this element's flat index in the inferred shape */
    for (int d = 0; d < nd; d++) {
        flat = flat ? hc_add(a, hc_mul(a, flat, hc_int(a, u->inf[d])), hc_ref(a, axes[d])) : hc_ref(a, axes[d]);
        if (u->out[d] > u->inf[d]) inside = hc_nn_and(a, inside, hc_lt(a, hc_ref(a, axes[d]), hc_int(a, u->inf[d])));
    }
    hc_var *q[HC_MAX_DIMS];
    hc_expr *xi[HC_MAX_DIMS] = {hc_ref(a, axes[0]), hc_ref(a, axes[1])};
    for (int i = 0; i < u->nsp; i++) q[i] = hc_axis(a, "q"), xi[2 + i] = hc_ref(a, q[i]);
    hc_expr *hit = hc_eq(a, hc_at(a, u->ind, xi), flat);
    if (inside) hit = hc_and(a, inside, hit);
    hc_expr *v = hc_select(a, hit, hc_at(a, u->x, xi), hc_const_num(a, u->x->dtype, 0));
    return hc_reduce(a, HC_REDUCE_SUM, u->nsp, q, &u->x->shape[2], v);
}

hc_task *hc_nn_task_max_unpool(hc_arena *a, const hc_node *n, hc_error *err) {
    unpool u;
    if (unpool_shape(n, u.out, u.inf, err)) return NULL;
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    u.x = in[0], u.ind = in[1], u.nsp = in[0]->ndim - 2;
    const hc_tensor *y = n->outputs[0];
    hc_tnode *out = hc_compute(a, y->name, y->ndim, y->shape, unpool_value, &u);
    return hc_node_task(a, n, nin, in, 1, &out);
}
