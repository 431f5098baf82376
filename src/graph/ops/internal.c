/* internal.c — operators that only graph passes create (no ONNX name).
 *
 * IM2COL: x [N, C, H, W] -> columns [N, C*KH*KW, OH*OW] for a 2-D convolution with the
 * attributes kernel_shape [KH, KW], strides, pads [top, left, bottom, right] and
 * dilations (explicit: the lowering pass resolves auto_pad). Row r = (c, kh, kw) and
 * column p = (oh, ow) hold x[n, c, oh*sh - top + kh*dh, ow*sw - left + kw*dw], or 0 in
 * the padding, so that the convolution is the matmul W[OC, C*KH*KW] x columns. With
 * squeeze_batch = 1 (N must be 1) the columns are [C*KH*KW, OH*OW]: a plain 2-D matmul
 * operand, without a Reshape kernel in between.
 *
 * WINO_INPUT and WINO_OUTPUT: the two transforms of Winograd F(2x2, 3x3) for a 3x3
 * stride-1 convolution (docs/winograd.md; the lowering pass makes them, the weight
 * transform U = G g G^T is done at compile time):
 *   WINO_INPUT  x [N, C, H, W] -> V [16, C, T], attribute pads [top, left, bottom, right].
 *               Output OH = H + top + bottom - 2 (OW alike), tiles TH = ceil(OH/2),
 *               TW = ceil(OW/2), T = N*TH*TW, t = (n*TH + ty)*TW + tx. V[a*4+b, c, t] =
 *               (B^T d B)[a, b] where d is the 4x4 input tile at row 2*ty - top, column
 *               2*tx - left of image n, channel c (0 outside the image).
 *   WINO_OUTPUT m [16, K, T] -> y [N, K, OH, OW], attribute out_hw [OH, OW] (N = T/(TH*TW)).
 *               y[n, k, 2*ty+i, 2*tx+j] = (A^T m_t A)[i, j] for tile t, cropped to OH x OW.
 * With B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1] and A^T = [1 1 1 0; 0 1 -1 -1]
 * (hc_wino_matrices_r(2, 3)). Both layouts share one Task builder per transform, written over
 * the matrices' entries.
 *
 * WINO_INPUT_NCHWC and WINO_OUTPUT_NCHWC: the same on the channel-blocked layout
 * (docs/nchwc.md), for F(mh x mw, kh x kw): the attribute kernel [kh, kw] (default [3, 3];
 * 3x3, 5x5, and 1xk / kx1 for k = 3, 5, 7) and the attribute tile m (2, the default, or 4)
 * for the axes of more than one tap (mh = 1 where kh = 1: the identity); tiles of ah x aw
 * inputs, ah = mh + kh - 1, the matrices of hc_wino_matrices_r (hc_wino_node_geom):
 *   WINO_INPUT_NCHWC  x [N, C/b, H, W, b] -> V [ah*aw, T, C], T = N*ceil(OH/mh)*ceil(OW/mw),
 *                     V[p*aw+q, t, c] = (B_h^T d B_w)[p, q], d the ah x aw tile at row
 *                     mh*ty - top, column mw*tx - left;
 *   WINO_OUTPUT_NCHWC m [ah*aw, T, K] -> y [N, K/b, OH, OW, b] (attributes out_hw, block),
 *                     y[n, k, mh*ty+i, mw*tx+j] = (A_h^T u_t A_w)[i, j]. */
#include "graph/graph.h"
#include "graph/ops/geometry.h"

typedef struct im2col_geom {
    int64_t k[2], s[2], d[2], pad[4];
    int64_t in[2], out[2];
} im2col_geom;

static hc_status attr_pair(const hc_node *n, const char *name, int64_t dflt, int64_t *out,
                           hc_error *err) {
    int cnt = 0;
    const int64_t *v = hc_node_attr_ints(n, name, &cnt);
    if (!v) {
        out[0] = out[1] = dflt;
        return HC_OK;
    }
    if (cnt != 2)
        return hc_error_set(err, HC_ERR_INVALID, "node '%s' (Im2Col): %s has %d values, expected 2",
                            n->name, name, cnt);
    out[0] = v[0];
    out[1] = v[1];
    return HC_OK;
}

static hc_status geometry(const hc_node *n, im2col_geom *g, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    if (x->ndim != 4)
        return hc_error_set(err, HC_ERR_INVALID,
                            "node '%s' (Im2Col): input has rank %d, expected 4",
                            n->name, x->ndim);
    if (!hc_node_attr_ints(n, "kernel_shape", NULL))
        return hc_error_set(err, HC_ERR_INVALID, "node '%s' (Im2Col): kernel_shape missing",
                            n->name);
    hc_status st = attr_pair(n, "kernel_shape", 1, g->k, err);
    if (st == HC_OK) st = attr_pair(n, "strides", 1, g->s, err);
    if (st == HC_OK) st = attr_pair(n, "dilations", 1, g->d, err);
    if (st != HC_OK) return st;
    int cnt = 0;
    const int64_t *p = hc_node_attr_ints(n, "pads", &cnt);
    if (p && cnt != 4)
        return hc_error_set(err, HC_ERR_INVALID,
                            "node '%s' (Im2Col): pads has %d values, expected 4",
                            n->name, cnt);
    for (int i = 0; i < 4; i++) g->pad[i] = p ? p[i] : 0;
    for (int i = 0; i < 2; i++) {
        g->in[i] = x->shape[2 + i];
        int64_t span = (g->k[i] - 1) * g->d[i] + 1;
        int64_t room = g->in[i] + g->pad[i] + g->pad[i + 2] - span;
        if (g->k[i] < 1 || g->s[i] < 1 || g->d[i] < 1 || room < 0)
            return hc_error_set(err, HC_ERR_INVALID,
                                "node '%s' (Im2Col): window does not fit spatial dim %d",
                                n->name, i);
        g->out[i] = room / g->s[i] + 1;
    }
    return HC_OK;
}

static hc_status infer_im2col(hc_node *n, hc_error *err) {
    im2col_geom g;
    hc_status st = geometry(n, &g, err);
    if (st != HC_OK) return st;
    const hc_tensor *x = n->inputs[0];
    int64_t shape[3] = {x->shape[0], x->shape[1] * g.k[0] * g.k[1], g.out[0] * g.out[1]};
    bool squeeze = hc_node_attr_int(n, "squeeze_batch", 0) != 0;
    if (squeeze && x->shape[0] != 1)
        return hc_error_set(err, HC_ERR_INVALID,
                            "node '%s' (Im2Col): squeeze_batch with a batch of %lld", n->name,
                            (long long)x->shape[0]);
    hc_node_set_output(n, 0, x->dtype, squeeze ? 2 : 3, squeeze ? shape + 1 : shape);
    return HC_OK;
}

/* Input coordinate along spatial dim i for output position o and kernel offset k. */
static hc_expr *in_coord(hc_arena *a, const im2col_geom *g, int i, hc_expr *o, hc_expr *k) {
    hc_expr *base = hc_sub(a, hc_mul(a, o, hc_int(a, g->s[i])), hc_int(a, g->pad[i]));
    return hc_add(a, base, hc_mul(a, k, hc_int(a, g->d[i])));
}

static hc_expr *inside(hc_arena *a, hc_expr *v, int64_t extent) {
    return hc_and(a, hc_le(a, hc_int(a, 0), v), hc_lt(a, v, hc_int(a, extent)));
}

static hc_expr *clamp(hc_arena *a, hc_expr *v, int64_t extent) {
    return hc_min(a, hc_max(a, v, hc_int(a, 0)), hc_int(a, extent - 1));
}

static hc_task *task_im2col(hc_arena *a, const hc_node *n, hc_error *err) {
    im2col_geom g;
    if (geometry(n, &g, err) != HC_OK) return NULL;
    int nin = 0;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    const hc_tensor *y = n->outputs[0];
    bool squeeze = y->ndim == 2; /* squeeze_batch: no batch axis, batch index 0 */
    hc_var *ax[3] = {hc_axis(a, "n"), hc_axis(a, "r"), hc_axis(a, "p")};
    hc_var *const *oax = squeeze ? ax + 1 : ax;
    hc_expr *r = hc_ref(a, ax[1]), *p = hc_ref(a, ax[2]);
    int64_t kk = g.k[0] * g.k[1];
    hc_expr *c = hc_div(a, r, hc_int(a, kk));
    hc_expr *kh = hc_mod(a, hc_div(a, r, hc_int(a, g.k[1])), hc_int(a, g.k[0]));
    hc_expr *kw = hc_mod(a, r, hc_int(a, g.k[1]));
    hc_expr *ih = in_coord(a, &g, 0, hc_div(a, p, hc_int(a, g.out[1])), kh);
    hc_expr *iw = in_coord(a, &g, 1, hc_mod(a, p, hc_int(a, g.out[1])), kw);
    /* clamped so that the read is in bounds even where the select discards it */
    hc_expr *batch = squeeze ? hc_int(a, 0) : hc_ref(a, ax[0]);
    hc_expr *idx[4] = {batch, c, clamp(a, ih, g.in[0]), clamp(a, iw, g.in[1])};
    hc_expr *cond = hc_and(a, inside(a, ih, g.in[0]), inside(a, iw, g.in[1]));
    hc_expr *v = hc_select(a, cond, hc_at(a, in[0], idx), hc_const_num(a, y->dtype, 0));
    hc_tnode *out = hc_compute_with_axes(a, y->name, y->ndim, y->shape, oax, v);
    return hc_node_task(a, n, nin, in, 1, &out);
}

/* ---- Winograd transforms --------------------------------------------------------- */
hc_status hc_wino_node_pads(const hc_node *n, int64_t *pad, hc_error *err) {
    int cnt = 0;
    const int64_t *p = hc_node_attr_ints(n, "pads", &cnt);
    if (p && cnt != 4)
        return hc_node_fail(n, HC_ERR_INVALID, err, "pads has %d values, expected 4", cnt);
    for (int i = 0; i < 4; i++) pad[i] = p ? p[i] : 0;
    return HC_OK;
}

hc_status hc_wino_node_geom(const hc_node *n, hc_wino_geom *g, hc_error *err) {
    bool blocked = n->op == HC_OPK_WINO_INPUT_NCHWC || n->op == HC_OPK_WINO_OUTPUT_NCHWC;
    int64_t m = blocked ? hc_node_attr_int(n, "tile", 2) : 2, k[2] = {3, 3};
    int cnt = 0;
    const int64_t *kv = blocked ? hc_node_attr_ints(n, "kernel", &cnt) : NULL;
    if (kv && cnt != 2)
        return hc_node_fail(n, HC_ERR_INVALID, err, "kernel has %d values, expected 2", cnt);
    if (kv) k[0] = kv[0], k[1] = kv[1];
    if (m != 2 && m != 4 && m != 6)
        return hc_node_fail(n, HC_ERR_INVALID, err, "tile is %lld, expected 2, 4 or 6",
                            (long long)m);
    g->h = k[0] >= 1 && k[0] <= HC_WINO_MAX_R ? hc_wino_axis((int)m, (int)k[0]) : NULL;
    g->w = k[1] >= 1 && k[1] <= HC_WINO_MAX_R ? hc_wino_axis((int)m, (int)k[1]) : NULL;
    if (!g->h || !g->w)
        return hc_node_fail(n, HC_ERR_INVALID, err,
                            "no Winograd transform for kernel [%lld, %lld] with tile %lld "
                            "(taps 1, 3, 5 or 7 per axis)",
                            (long long)k[0], (long long)k[1], (long long)m);
    return HC_OK;
}

static hc_status infer_wino_input(hc_node *n, hc_error *err) {
    const hc_tensor *x = n->inputs[0];
    int64_t pad[4];
    hc_status st = hc_wino_node_pads(n, pad, err);
    if (st != HC_OK) return st;
    bool blocked = n->op == HC_OPK_WINO_INPUT_NCHWC;
    if (x->ndim != (blocked ? 5 : 4))
        return hc_node_fail(n, HC_ERR_INVALID, err, "input has rank %d, expected %d", x->ndim,
                            blocked ? 5 : 4);
    hc_wino_geom w;
    if ((st = hc_wino_node_geom(n, &w, err)) != HC_OK) return st;
    int64_t oh = x->shape[2] + pad[0] + pad[2] - (w.h->r - 1);
    int64_t ow = x->shape[3] + pad[1] + pad[3] - (w.w->r - 1);
    if (oh < 1 || ow < 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "a %dx%d window does not fit the input", w.h->r,
                            w.w->r);
    int64_t c = x->shape[1] * (blocked ? x->shape[4] : 1);
    int64_t t = x->shape[0] * ((oh + w.h->m - 1) / w.h->m) * ((ow + w.w->m - 1) / w.w->m);
    int64_t shape[3] = {(int64_t)w.h->a * w.w->a, blocked ? t : c, blocked ? c : t};
    hc_node_set_output(n, 0, x->dtype, 3, shape);
    return HC_OK;
}

typedef struct wino_tile {
    const hc_tnode *x;
    hc_expr *n, *c, *row0, *col0; /* image, channel, tile origin (may be outside) */
    hc_dtype dt;
} wino_tile;

/* d[r, s] of the tile: x at (row0 + r, col0 + s), 0 outside the image. x is NCHW, or
 * NCHW{b}c (5-D: channel c at block c / b, lane c % b). */
static hc_expr *tile_at(hc_arena *a, const wino_tile *w, hc_expr *r, hc_expr *s) {
    hc_expr *ih = hc_add(a, w->row0, r), *iw = hc_add(a, w->col0, s);
    int64_t h = w->x->shape[2], wd = w->x->shape[3];
    hc_expr *idx[5] = {w->n, w->c, clamp(a, ih, h), clamp(a, iw, wd), NULL};
    if (w->x->ndim == 5) {
        hc_expr *b = hc_int(a, w->x->shape[4]);
        idx[1] = hc_div(a, w->c, b);
        idx[4] = hc_mod(a, w->c, b);
    }
    return hc_select(a, hc_and(a, inside(a, ih, h), inside(a, iw, wd)), hc_at(a, w->x, idx),
                     hc_const_num(a, w->dt, 0));
}

/* select(i == 0, v[0], select(i == 1, v[1], ...)) over the first count entries of v (at
 * stride `stride`): a matrix entry chosen by an index expression. */
static hc_expr *pick(hc_arena *a, hc_expr *i, const double *v, int count, int stride,
                     hc_dtype dt) {
    hc_expr *e = hc_const_num(a, dt, v[(count - 1) * stride]);
    for (int k = count - 2; k >= 0; k--)
        e = hc_select(a, hc_eq(a, i, hc_int(a, k)), hc_const_num(a, dt, v[k * stride]), e);
    return e;
}

/* The input transform for either layout and any tile: V[p*a+q, c, t] (NCHW) or
 * V[p*a+q, t, c] (blocked) = sum_ij B^T[p][i] d[i][j] B^T[q][j], the entries chosen by
 * index expressions (the templates unroll the nonzero ones; the sums agree up to
 * rounding). */
static hc_task *task_wino_input(hc_arena *a, const hc_node *n, hc_error *err) {
    int64_t pad[4];
    if (hc_wino_node_pads(n, pad, err) != HC_OK) return NULL;
    hc_wino_geom wm;
    if (hc_wino_node_geom(n, &wm, err) != HC_OK) return NULL;
    int nin = 0;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    const hc_tensor *x = n->inputs[0], *y = n->outputs[0];
    int64_t oh = x->shape[2] + pad[0] + pad[2] - (wm.h->r - 1);
    int64_t ow = x->shape[3] + pad[1] + pad[3] - (wm.w->r - 1);
    int64_t th = (oh + wm.h->m - 1) / wm.h->m, tw = (ow + wm.w->m - 1) / wm.w->m;
    int64_t ah = wm.h->a, aw = wm.w->a;
    /* NCHW{b}c input: V is [ah*aw, T, C] (the matmul's A operand, channels innermost) */
    bool blocked = n->op == HC_OPK_WINO_INPUT_NCHWC;
    hc_var *ax[3] = {hc_axis(a, "e"), hc_axis(a, blocked ? "t" : "c"),
                     hc_axis(a, blocked ? "c" : "t")};
    hc_expr *e = hc_ref(a, ax[0]), *t = hc_ref(a, ax[blocked ? 1 : 2]);
    hc_expr *p = hc_div(a, e, hc_int(a, aw)), *q = hc_mod(a, e, hc_int(a, aw));
    hc_expr *ty = hc_mod(a, hc_div(a, t, hc_int(a, tw)), hc_int(a, th));
    hc_expr *tx = hc_mod(a, t, hc_int(a, tw));
    wino_tile w = {in[0],
                   hc_div(a, t, hc_int(a, th * tw)),
                   hc_ref(a, ax[blocked ? 2 : 1]),
                   hc_sub(a, hc_mul(a, ty, hc_int(a, wm.h->m)), hc_int(a, pad[0])),
                   hc_sub(a, hc_mul(a, tx, hc_int(a, wm.w->m)), hc_int(a, pad[1])),
                   y->dtype};
    hc_expr *v = NULL;
    for (int i = 0; i < ah; i++) {
        hc_expr *row = NULL; /* sum_j d[i][j] B_w^T[q][j] */
        for (int j = 0; j < aw; j++) {
            hc_expr *term = hc_mul(a, pick(a, q, &wm.w->bt[0][j], (int)aw, HC_WINO_MAX_A, y->dtype),
                                   tile_at(a, &w, hc_int(a, i), hc_int(a, j)));
            row = row ? hc_add(a, row, term) : term;
        }
        hc_expr *term =
            hc_mul(a, pick(a, p, &wm.h->bt[0][i], (int)ah, HC_WINO_MAX_A, y->dtype), row);
        v = v ? hc_add(a, v, term) : term;
    }
    hc_tnode *out = hc_compute_with_axes(a, y->name, 3, y->shape, ax, v);
    return hc_node_task(a, n, nin, in, 1, &out);
}

static hc_status wino_out_hw(const hc_node *n, int64_t *hw, hc_error *err) {
    int cnt = 0;
    const int64_t *v = hc_node_attr_ints(n, "out_hw", &cnt);
    if (!v || cnt != 2 || v[0] < 1 || v[1] < 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "out_hw missing or invalid");
    hw[0] = v[0], hw[1] = v[1];
    return HC_OK;
}

static hc_status infer_wino_output(hc_node *n, hc_error *err) {
    const hc_tensor *m = n->inputs[0];
    int64_t hw[2] = {0, 0};
    hc_status st = wino_out_hw(n, hw, err);
    if (st != HC_OK) return st;
    hc_wino_geom w;
    if ((st = hc_wino_node_geom(n, &w, err)) != HC_OK) return st;
    int64_t tiles = ((hw[0] + w.h->m - 1) / w.h->m) * ((hw[1] + w.w->m - 1) / w.w->m);
    int64_t na = (int64_t)w.h->a * w.w->a;
    if (n->op == HC_OPK_WINO_OUTPUT_NCHWC) { /* m [ah*aw, N*tiles, K] -> [N, K/b, OH, OW, b] */
        int64_t b = hc_node_attr_int(n, "block", 0);
        if (m->ndim != 3 || m->shape[0] != na || m->shape[1] % tiles != 0 || b < 1 ||
            m->shape[2] % b != 0)
            return hc_node_fail(n, HC_ERR_INVALID, err,
                                "input must be [%lld, N*%lld, K] with K a multiple of block %lld "
                                "for out_hw [%lld, %lld] and tiles %dx%d",
                                (long long)na, (long long)tiles, (long long)b, (long long)hw[0],
                                (long long)hw[1], w.h->m, w.w->m);
        int64_t shape[5] = {m->shape[1] / tiles, m->shape[2] / b, hw[0], hw[1], b};
        hc_node_set_output(n, 0, m->dtype, 5, shape);
        return HC_OK;
    }
    if (m->ndim != 3 || m->shape[0] != 16 || m->shape[2] % tiles != 0)
        return hc_node_fail(n, HC_ERR_INVALID, err,
                            "input must be [16, K, N*%lld] for out_hw [%lld, %lld]",
                            (long long)tiles, (long long)hw[0], (long long)hw[1]);
    int64_t shape[4] = {m->shape[2] / tiles, m->shape[1], hw[0], hw[1]};
    hc_node_set_output(n, 0, m->dtype, 4, shape);
    return HC_OK;
}

/* The output transform for either layout and any tiles: y[n, k, mh*ty+i, mw*tx+j] (NCHW,
 * from M [ah*aw, K, T]) or y[n, k/b, mh*ty+i, mw*tx+j, k%b] (blocked, from M [ah*aw, T, K])
 * = sum_pq A_h^T[i][p] u[p*aw+q] A_w^T[j][q]. */
static hc_task *task_wino_output(hc_arena *a, const hc_node *n, hc_error *err) {
    int64_t hw[2] = {0, 0};
    if (wino_out_hw(n, hw, err) != HC_OK) return NULL;
    hc_wino_geom wm;
    if (hc_wino_node_geom(n, &wm, err) != HC_OK) return NULL;
    int nin = 0;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    const hc_tensor *y = n->outputs[0];
    bool blocked = n->op == HC_OPK_WINO_OUTPUT_NCHWC;
    int64_t mh = wm.h->m, mw = wm.w->m, th = (hw[0] + mh - 1) / mh, tw = (hw[1] + mw - 1) / mw;
    hc_var *ax[5] = {hc_axis(a, "n"), hc_axis(a, "k"), hc_axis(a, "h"), hc_axis(a, "w"),
                     hc_axis(a, "l")};
    hc_expr *kk = blocked ? hc_add(a, hc_mul(a, hc_ref(a, ax[1]), hc_int(a, y->shape[4])),
                                   hc_ref(a, ax[4]))
                          : hc_ref(a, ax[1]);
    hc_expr *h = hc_ref(a, ax[2]), *wv = hc_ref(a, ax[3]);
    hc_expr *mhe = hc_int(a, mh), *mwe = hc_int(a, mw);
    hc_expr *i = hc_mod(a, h, mhe), *j = hc_mod(a, wv, mwe);
    hc_expr *t =
        hc_add(a,
               hc_mul(a, hc_add(a, hc_mul(a, hc_ref(a, ax[0]), hc_int(a, th)), hc_div(a, h, mhe)),
                      hc_int(a, tw)),
               hc_div(a, wv, mwe));
    hc_expr *v = NULL;
    for (int p = 0; p < wm.h->a; p++) {
        hc_expr *row = NULL; /* sum_q u[p][q] A_w^T[j][q] */
        for (int q = 0; q < wm.w->a; q++) {
            hc_expr *e = hc_int(a, p * wm.w->a + q);
            hc_expr *idx[3] = {e, blocked ? t : kk, blocked ? kk : t};
            hc_expr *term = hc_mul(a, pick(a, j, &wm.w->at[0][q], (int)mw, HC_WINO_MAX_A, y->dtype),
                                   hc_at(a, in[0], idx));
            row = row ? hc_add(a, row, term) : term;
        }
        hc_expr *term =
            hc_mul(a, pick(a, i, &wm.h->at[0][p], (int)mh, HC_WINO_MAX_A, y->dtype), row);
        v = v ? hc_add(a, v, term) : term;
    }
    hc_tnode *out = hc_compute_with_axes(a, y->name, y->ndim, y->shape, ax, v);
    return hc_node_task(a, n, nin, in, 1, &out);
}

const hc_op_def hc_ops_internal[] = {
    {HC_OPK_IM2COL, infer_im2col, task_im2col},
    {HC_OPK_WINO_INPUT, infer_wino_input, task_wino_input},
    {HC_OPK_WINO_OUTPUT, infer_wino_output, task_wino_output},
    {HC_OPK_WINO_INPUT_NCHWC, infer_wino_input, task_wino_input},
    {HC_OPK_WINO_OUTPUT_NCHWC, infer_wino_output, task_wino_output},
    {HC_OPK_COUNT, NULL, NULL},
};
