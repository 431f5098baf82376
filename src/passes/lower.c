/* lower.c — anchors rewritten into the one anchor the CPU has a template for, MatMul:
 *   Conv (2-D, group 1)  -> Im2Col (or a Reshape for a 1x1 stride-1 unpadded kernel)
 *                           + MatMul with the weight viewed as [OC, C*KH*KW]
 *                           + bias Add + Reshape to [N, OC, OH, OW]
 *   Conv 3x3 stride 1    -> where it pays, Winograd F(2x2, 3x3): WinoInput + batched
 *                           MatMul with the transformed weights + WinoOutput + bias Add
 *   Gemm                 -> MatMul of the (transposed) operands + alpha Mul + beta*C Add
 * Transposes of constant operands are done here, at compile time. Each rewrite builds
 * new nodes, then moves the readers of the old output to the new one. */
#include <string.h>

#include "passes/pass_util.h"
#include "target/target.h"
#include "task/winograd_mats.h"

typedef struct lower_ctx {
    hc_graph *g;
    hc_node *n; /* the node being lowered (names derive from it) */
    hc_error *err;
    const hc_optimize_options *opt;
} lower_ctx;

static hc_tensor *emit(lower_ctx *c, hc_op_kind op, const char *suffix, int nin,
                       hc_tensor *const *in, int nattrs, const hc_attr *attrs) {
    const char *name = hc_arena_printf(&c->g->arena, "%s_%s", c->n->name, suffix);
    hc_node *m = hc_pass_add_node(c->g, op, name, nin, in, nattrs, attrs, c->err);
    return m ? m->outputs[0] : NULL;
}

/* x viewed with another shape: a constant shares x's data, otherwise a Reshape node. */
static hc_tensor *reshape(lower_ctx *c, hc_tensor *x, const char *suffix, int ndim,
                          const int64_t *shape) {
    if (x->data) {
        const char *name = hc_arena_printf(&c->g->arena, "%s_%s", x->name, suffix);
        hc_tensor *t = hc_graph_tensor(c->g, name, x->dtype, ndim, shape);
        t->data = x->data; /* constants are immutable: sharing is safe */
        return t;
    }
    const char *sname = hc_arena_printf(&c->g->arena, "%s_%s_shape", c->n->name, suffix);
    int64_t v[HC_MAX_DIMS];
    memcpy(v, shape, sizeof(int64_t) * (size_t)ndim);
    /* a symbolic batch (only dim 0 symbolic) stays symbolic: -1 where the view keeps it */
    bool only_batch = x->sym && x->sym[0];
    for (int d = 1; only_batch && d < x->ndim; d++) only_batch = !x->sym[d];
    if (only_batch && ndim > 0 && shape[0] == x->shape[0]) v[0] = -1;
    hc_tensor *in[2] = {x, hc_pass_const_i64(c->g, sname, ndim, v)};
    return emit(c, HC_OPK_RESHAPE, suffix, 2, in, 0, NULL);
}

/* ---- Conv --------------------------------------------------------------------- */
/* Explicit pads [top, left, bottom, right], auto_pad resolved. */
void hc_pass_conv_pads(const hc_node *n, const int64_t *k, const int64_t *s, const int64_t *d,
                       int64_t *pads) {
    const char *ap = hc_node_attr_string(n, "auto_pad", "NOTSET");
    int cnt = 0;
    const int64_t *p = hc_node_attr_ints(n, "pads", &cnt);
    for (int i = 0; i < 4; i++) pads[i] = p && cnt == 4 ? p[i] : 0;
    bool upper = strcmp(ap, "SAME_UPPER") == 0, lower = strcmp(ap, "SAME_LOWER") == 0;
    if (strcmp(ap, "VALID") == 0) memset(pads, 0, 4 * sizeof(int64_t));
    if (!upper && !lower) return;
    for (int i = 0; i < 2; i++) {
        int64_t in = n->inputs[0]->shape[2 + i];
        int64_t out = (in + s[i] - 1) / s[i];
        int64_t total = (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in;
        if (total < 0) total = 0;
        int64_t small = total / 2, big = total - small;
        pads[i] = upper ? small : big;
        pads[i + 2] = upper ? big : small;
    }
}

static bool conv_lowerable(const hc_node *n) {
    const hc_tensor *x = n->inputs[0], *w = n->inputs[1], *y = n->outputs[0];
    if (!y || !y->shape_known || x->ndim != 4 || w->ndim != 4) return false;
    if (!hc_dtype_is_float(x->dtype) || hc_node_attr_int(n, "group", 1) != 1) return false;
    return w->shape[1] == x->shape[1];
}

static void attr_pair(const hc_node *n, const char *name, int64_t *out) {
    int cnt = 0;
    const int64_t *v = hc_node_attr_ints(n, name, &cnt);
    out[0] = v && cnt == 2 ? v[0] : 1;
    out[1] = v && cnt == 2 ? v[1] : 1;
}

/* The column matrix: [N, C*KH*KW, OH*OW], or [C*KH*KW, OH*OW] when N == 1. */
static hc_tensor *conv_columns(lower_ctx *c, const int64_t *k, const int64_t *s,
                               const int64_t *d, const int64_t *pads) {
    hc_tensor *x = c->n->inputs[0];
    const hc_tensor *y = c->n->outputs[0];
    int64_t nb = x->shape[0], ck = x->shape[1] * k[0] * k[1], p = y->shape[2] * y->shape[3];
    /* a symbolic batch keeps its dim even when its hint is 1 */
    bool one = nb == 1 && !(x->sym && x->sym[0]);
    bool pointwise = k[0] == 1 && k[1] == 1 && s[0] == 1 && s[1] == 1;
    for (int i = 0; i < 4; i++) pointwise &= pads[i] == 0;
    int64_t mat[2] = {ck, p}, batched[3] = {nb, ck, p};
    if (pointwise) /* the columns are x itself */
        return one ? reshape(c, x, "cols", 2, mat) : reshape(c, x, "cols", 3, batched);
    hc_attr attrs[5] = {
        {.name = "kernel_shape", .kind = HC_ATTR_INTS, .n = 2, .ints = (int64_t *)k},
        {.name = "strides", .kind = HC_ATTR_INTS, .n = 2, .ints = (int64_t *)s},
        {.name = "dilations", .kind = HC_ATTR_INTS, .n = 2, .ints = (int64_t *)d},
        {.name = "pads", .kind = HC_ATTR_INTS, .n = 4, .ints = (int64_t *)pads},
        {.name = "squeeze_batch", .kind = HC_ATTR_INT, .i = 1},
    };
    return emit(c, HC_OPK_IM2COL, "im2col", 1, &x, one ? 5 : 4, attrs);
}

/* ---- Conv by Winograd F(2x2, 3x3) (docs/winograd.md) ----------------------------- */
/* Stride 1, dilation 1, group 1, f32, constant weights; the kernel 3x3, or on the
 * channel-blocked path also 5x5 and the 1-D kernels 1xk and kx1 of 3, 5 or 7 taps (the
 * blocked transforms take F(mh, kh) x F(mw, kw), docs/winograd.md). */
static bool winograd_kernel(const int64_t *k, bool blocked) {
    if (k[0] == 3 && k[1] == 3) return true;
    if (!blocked) return false;
    if (k[0] == 5 && k[1] == 5) return true;
    int64_t lo = HC_MIN(k[0], k[1]), hi = HC_MAX(k[0], k[1]);
    return lo == 1 && (hi == 3 || hi == 5 || hi == 7);
}
static bool winograd_eligible(const hc_node *n, const int64_t *k, const int64_t *s,
                              const int64_t *d, bool blocked) {
    const hc_tensor *x = n->inputs[0], *w = n->inputs[1];
    return x->dtype == HC_F32 && w->dtype == HC_F32 && w->data && winograd_kernel(k, blocked) &&
           s[0] == 1 && s[1] == 1 && d[0] == 1 && d[1] == 1;
}

/* Tiles of an eligible conv's output with the tile attribute m (hc_wino_axis along each
 * axis): per image th x tw, covering th*mh x tw*mw outputs, and the transformed values per
 * channel pair ah * aw. */
typedef struct wino_tiling {
    int64_t th, tw, covered, per_pair;
} wino_tiling;
static wino_tiling tiling(const hc_node *n, int m) {
    const hc_tensor *w = n->inputs[1], *y = n->outputs[0];
    const hc_wino_mats *h = hc_wino_axis(m, (int)w->shape[2]);
    const hc_wino_mats *v = hc_wino_axis(m, (int)w->shape[3]);
    HC_ASSERT(h && v);
    wino_tiling t = {hc_cdiv(y->shape[2], h->m), hc_cdiv(y->shape[3], v->m), 0,
                     (int64_t)h->a * v->a};
    t.covered = t.th * h->m * t.tw * v->m;
    return t;
}

/* Where the Winograd path beats the implicit GEMM (docs/winograd.md, "The rule", has the
 * measurements): at least 8 input and 4 output channels (the batched matmul has K = C_in;
 * below that the transforms' traffic dominates), at least 9 tiles per batch entry (the
 * matmul's N), and tiles that overhang the output by at most a quarter. These are shape
 * thresholds (how much work the transforms add against what the matmul saves), not facts
 * of one machine: no cache size, core count or lane count enters them. */
static bool winograd_pays(const hc_node *n) {
    const hc_tensor *w = n->inputs[1], *y = n->outputs[0];
    wino_tiling t = tiling(n, 2);
    int64_t oh = y->shape[2], ow = y->shape[3], tiles = y->shape[0] * t.th * t.tw;
    return w->shape[1] >= 8 && w->shape[0] >= 4 && tiles >= 9 && oh * ow * 4 >= 3 * t.covered;
}

/* U[p*aw + q, oc, c] = (G_h g G_w^T)[p, q] for the kh x kw filter g = w[oc, c], with the
 * transforms F(mh, kh) and F(mw, kw) of the tile m (hc_wino_axis; mh = m unless kh
 * is 1); computed in double, stored in f32. Transposed (the channel-blocked path,
 * docs/nchwc.md): U[p*aw + q, c, oc]. */
hc_tensor *hc_pass_winograd_weights(hc_graph *g, const hc_tensor *w, int m, bool transposed) {
    const int kh = (int)w->shape[2], kw = (int)w->shape[3];
    const hc_wino_mats *wh = hc_wino_axis(m, kh), *ww = hc_wino_axis(m, kw);
    HC_ASSERT(wh && ww);
    const int ah = wh->a, aw = ww->a;
    int64_t oc = w->shape[0], ic = w->shape[1];
    int64_t shape[3] = {(int64_t)ah * aw, transposed ? ic : oc, transposed ? oc : ic};
    const char *name = kh == 3 && kw == 3
                           ? hc_arena_printf(&g->arena, "%s_wino%s%s", w->name, m == 4 ? "4" : "",
                                             transposed ? "T" : "")
                           : hc_arena_printf(&g->arena, "%s_wino%d_%dx%d%s", w->name, m, kh, kw,
                                             transposed ? "T" : "");
    hc_tensor *u = hc_graph_constant(g, name, HC_F32, 3, shape, NULL);
    const float *src = w->data;
    float *dst = u->data;
    for (int64_t o = 0; o < oc; o++)
        for (int64_t i = 0; i < ic; i++) {
            const float *f = src + (o * ic + i) * kh * kw;
            double gt[HC_WINO_MAX_A][HC_WINO_MAX_R]; /* G_h f */
            for (int p = 0; p < ah; p++)
                for (int q = 0; q < kw; q++) {
                    double v = 0;
                    for (int r = 0; r < kh; r++) v += wh->g[p][r] * f[r * kw + q];
                    gt[p][q] = v;
                }
            for (int p = 0; p < ah; p++)
                for (int q = 0; q < aw; q++) {
                    double v = 0;
                    for (int r = 0; r < kw; r++) v += gt[p][r] * ww->g[q][r];
                    dst[transposed ? ((p * aw + q) * ic + i) * oc + o
                                   : ((p * aw + q) * oc + o) * ic + i] = (float)v;
                }
        }
    return u;
}

const hc_target *hc_pass_target(const hc_optimize_options *o) {
    return o && o->target ? o->target : hc_target_default();
}

/* F(4x4, 3x3) against F(2x2, 3x3) on the blocked path (docs/winograd.md, "F(4x4, 3x3)"):
 * 0.56x the matmul's multiply-adds, but 36 transformed weights per channel pair instead of
 * 16, which the matmul streams once per inference for all the images of the batch. It
 * pays where those weights fit the L2 of the cores the model runs on, per image of the
 * batch — caps.l2_bytes * caps.num_cores (a target that states no L2 keeps F(2x2)) — or
 * where the multiply-adds it saves per byte of the extra weights (16 x the 2x2 tiles - 36
 * x the 4x4 tiles, over 80 bytes, per channel pair: a count of the image's tiles, not of
 * its channels) outnumber what the cores compute while memory delivers a byte,
 * WINO_MADDS_PER_BYTE per core: ResNet-50's 28x28 layers (17 per byte) on Zen 3's 2 x
 * 512 KiB of L2; not its 14x14 ones at batch 1 (2.6; measured slower on both machines).
 * And, as the F(2x2) rule asks of its tiles (shape thresholds), there are at least 9
 * tiles of 4x4 and they overhang the output by at most a quarter. The other kernels of the
 * blocked path (5x5, 1xk, kx1: docs/winograd.md, "Other kernels") count the same way with
 * their own tiles and transformed weights per channel pair (ah * aw: F(4, 7) 10 against
 * F(2, 7)'s 8, F(4x4, 5x5) 64 against 36), and so does F(6, 7) (12) against F(4, 7) for
 * the 1x7 / 7x1 kernels: on a 17-wide axis 3 tiles of 6 against 5 of 4, 0.72x the
 * multiply-adds. A larger tile is taken only where it does fewer multiply-adds. */
#define WINO_MADDS_PER_BYTE 6
static int64_t wino_max_weights(const hc_target *t) {
    int64_t l2 = t->caps.l2_bytes > 0 ? t->caps.l2_bytes : 0;
    return l2 * HC_MAX(t->caps.num_cores, 1);
}

/* The tile m has a transform along both axes of n's kernel (F(6) only for 1x7 / 7x1). */
static bool wino_has_tile(const hc_node *n, int m) {
    const hc_tensor *w = n->inputs[1];
    return hc_wino_axis(m, (int)w->shape[2]) && hc_wino_axis(m, (int)w->shape[3]);
}

/* Whether the larger tile `to` beats `from` (the counts above, F(4) against F(2) or F(6)
 * against F(4)): fewer multiply-adds, its transformed weights fitting the cores' L2 per
 * image or saving WINO_MADDS_PER_BYTE per extra byte per core, and at least 9 tiles that
 * overhang the output by at most a quarter. */
static bool wino_tile_beats(const hc_node *n, const hc_target *t, int from, int to) {
    const hc_tensor *w = n->inputs[1], *y = n->outputs[0];
    int64_t oh = y->shape[2], ow = y->shape[3];
    wino_tiling a = tiling(n, from), b = tiling(n, to);
    int64_t ta = y->shape[0] * a.th * a.tw, tb = y->shape[0] * b.th * b.tw;
    int64_t bytes = b.per_pair * w->shape[0] * w->shape[1] * 4;
    bool fewer = b.per_pair * tb < a.per_pair * ta;
    bool fits = bytes <= wino_max_weights(t) * y->shape[0];
    int64_t saved = a.per_pair * ta - b.per_pair * tb, extra = (b.per_pair - a.per_pair) * 4;
    bool saves =
        t->caps.l2_bytes > 0 && saved >= extra * WINO_MADDS_PER_BYTE * HC_MAX(t->caps.num_cores, 1);
    bool tiles = tb >= 9 && oh * ow * 4 >= 3 * b.covered;
    return fewer && (fits || saves) && tiles;
}

int hc_pass_winograd_tile(const hc_node *n, const hc_optimize_options *o) {
    if (o && (o->wino_tile == 2 || o->wino_tile == 4 || o->wino_tile == 6)) {
        /* forced: the largest tile up to the one asked for that has a table for n */
        int m = o->wino_tile;
        while (m > 2 && !wino_has_tile(n, m)) m -= 2;
        return m;
    }
    const hc_target *t = hc_pass_target(o);
    int m = 2;
    for (int to = 4; to <= HC_WINO_MAX_M; to += 2)
        if (wino_has_tile(n, to) && wino_tile_beats(n, t, m, to)) m = to;
    return m;
}

/* V = WINO_INPUT(x) [16, C, T]; M = U x V [16, OC, T] (batched MatMul); y =
 * WINO_OUTPUT(M) [N, OC, OH, OW]; + bias. */
static hc_tensor *lower_conv_winograd(lower_ctx *c, const int64_t *pads) {
    hc_node *n = c->n;
    hc_tensor *x = n->inputs[0], *w = n->inputs[1], *b = n->ninputs > 2 ? n->inputs[2] : NULL;
    const hc_tensor *y = n->outputs[0];
    hc_attr pa = {.name = "pads", .kind = HC_ATTR_INTS, .n = 4, .ints = (int64_t *)pads};
    hc_tensor *v = emit(c, HC_OPK_WINO_INPUT, "wino_in", 1, &x, 1, &pa);
    hc_tensor *in[2] = {hc_pass_winograd_weights(c->g, w, 2, false), v};
    hc_tensor *m = v ? emit(c, HC_OPK_MATMUL, "wino_mm", 2, in, 0, NULL) : NULL;
    int64_t hw[2] = {y->shape[2], y->shape[3]};
    hc_attr oa = {.name = "out_hw", .kind = HC_ATTR_INTS, .n = 2, .ints = hw};
    hc_tensor *out = m ? emit(c, HC_OPK_WINO_OUTPUT, "wino_out", 1, &m, 1, &oa) : NULL;
    if (out && b) {
        int64_t bshape[3] = {w->shape[0], 1, 1};
        in[0] = out;
        in[1] = reshape(c, b, "bcol3", 3, bshape);
        out = in[1] ? emit(c, HC_OPK_ADD, "bias", 2, in, 0, NULL) : NULL;
    }
    return out;
}

/* ---- Conv kept for the direct template (src/target/cpu/templates/conv_dw_cpu.c) ---------- */
/* 2-D f32 with constant weights: the direct template reads the input in place (one
 * zero-padded, stride-deinterleaved copy of the rows per item) and computes mb output
 * channels x rb rows x nv vectors per register block. */
static bool direct_eligible(const hc_node *n) {
    const hc_tensor *x = n->inputs[0], *w = n->inputs[1];
    return x->dtype == HC_F32 && w->dtype == HC_F32 && w->data &&
           (n->ninputs < 3 || !n->inputs[2] || n->inputs[2]->dtype == HC_F32);
}

/* Where the direct template beats im2col + matmul and Winograd (docs/conv_dw.md, "Dense
 * convolutions", has the measurements): fewer than 64 input channels and a kernel larger
 * than 1x1; where Winograd applies too, more output than input channels; on the
 * channel-blocked path not where F(4x4) applies (it wins there). 64 input channels is a
 * shape threshold (from there on the matmul's K is long enough for its blocking to beat
 * re-reading the input rows per channel block): no cache size, core or lane count enters
 * it; it was measured on AVX-512 only. */
static bool direct_pays(const hc_node *n, const int64_t *k, const int64_t *s, const int64_t *d,
                        const hc_optimize_options *o, bool blocked) {
    const hc_tensor *w = n->inputs[1];
    if (w->shape[1] >= 64 || k[0] * k[1] <= 1) return false;
    if (!winograd_eligible(n, k, s, d, blocked)) return true;
    /* on the channel-blocked path F(4x4) wins where it applies (docs/winograd.md) */
    if (blocked && !o->no_winograd && winograd_pays(n) && hc_pass_winograd_tile(n, o) >= 4)
        return false;
    return w->shape[0] > w->shape[1];
}

static hc_conv_path conv_path(const hc_node *n, const hc_optimize_options *o, bool blocked) {
    const hc_tensor *w = n->inputs[1];
    int64_t k[2] = {w->shape[2], w->shape[3]}, s[2], d[2];
    attr_pair(n, "strides", s);
    attr_pair(n, "dilations", d);
    /* forced paths first (direct over Winograd), then the rules (direct over Winograd) */
    bool direct = o && !o->no_direct && direct_eligible(n);
    bool wino = o && !o->no_winograd && winograd_eligible(n, k, s, d, blocked);
    if (direct && o->force_direct) return HC_CONV_DIRECT;
    if (wino && o->force_winograd) return HC_CONV_WINOGRAD;
    if (direct && direct_pays(n, k, s, d, o, blocked)) return HC_CONV_DIRECT;
    if (wino && winograd_pays(n)) return HC_CONV_WINOGRAD;
    return HC_CONV_IM2COL;
}

hc_conv_path hc_pass_conv_path(const hc_node *n, const hc_optimize_options *o) {
    return conv_path(n, o, false);
}

hc_conv_path hc_pass_conv_path_blocked(const hc_node *n, const hc_optimize_options *o) {
    return conv_path(n, o, true);
}

static hc_tensor *lower_conv(lower_ctx *c) {
    hc_node *n = c->n;
    hc_tensor *w = n->inputs[1], *b = n->ninputs > 2 ? n->inputs[2] : NULL;
    const hc_tensor *y = n->outputs[0];
    int64_t k[2] = {w->shape[2], w->shape[3]}, s[2], d[2], pads[4];
    attr_pair(n, "strides", s);
    attr_pair(n, "dilations", d);
    hc_pass_conv_pads(n, k, s, d, pads);
    hc_conv_path path = hc_pass_conv_path(n, c->opt);
    if (path == HC_CONV_DIRECT) return n->outputs[0]; /* kept */
    if (path == HC_CONV_WINOGRAD) return lower_conv_winograd(c, pads);
    int64_t oc = w->shape[0], ck = w->shape[1] * k[0] * k[1];
    hc_tensor *cols = conv_columns(c, k, s, d, pads);
    int64_t wshape[2] = {oc, ck};
    hc_tensor *wm = cols ? reshape(c, w, "wmat", 2, wshape) : NULL;
    hc_tensor *in[2] = {wm, cols};
    hc_tensor *out = wm ? emit(c, HC_OPK_MATMUL, "mm", 2, in, 0, NULL) : NULL;
    if (out && b) {
        int64_t bshape[2] = {oc, 1};
        in[0] = out;
        in[1] = reshape(c, b, "bcol", 2, bshape);
        out = in[1] ? emit(c, HC_OPK_ADD, "bias", 2, in, 0, NULL) : NULL;
    }
    return out ? reshape(c, out, "nchw", 4, y->shape) : NULL;
}

/* ---- Gemm --------------------------------------------------------------------- */
static hc_tensor *transpose2(lower_ctx *c, hc_tensor *x, const char *suffix) {
    int64_t shape[2] = {x->shape[1], x->shape[0]};
    if (x->data) { /* at compile time */
        const char *name = hc_arena_printf(&c->g->arena, "%s_%s", x->name, suffix);
        hc_tensor *t = hc_graph_constant(c->g, name, x->dtype, 2, shape, NULL);
        size_t es = (size_t)hc_dtype_size(x->dtype);
        for (int64_t i = 0; i < x->shape[0]; i++)
            for (int64_t j = 0; j < x->shape[1]; j++)
                memcpy((char *)t->data + (size_t)(j * x->shape[0] + i) * es,
                       (const char *)x->data + (size_t)(i * x->shape[1] + j) * es, es);
        return t;
    }
    int64_t perm[2] = {1, 0};
    hc_attr a = {.name = "perm", .kind = HC_ATTR_INTS, .n = 2, .ints = perm};
    return emit(c, HC_OPK_TRANSPOSE, suffix, 1, &x, 1, &a);
}

static hc_tensor *scalar(lower_ctx *c, const char *suffix, hc_dtype dt, double v) {
    const char *name = hc_arena_printf(&c->g->arena, "%s_%s", c->n->name, suffix);
    return hc_pass_const_float(c->g, name, dt, 0, NULL, &v);
}

/* beta * C: folded when C is constant. */
static hc_tensor *scaled_c(lower_ctx *c, hc_tensor *cc, double beta) {
    if (beta == 1.0) return cc;
    if (cc->data) {
        int64_t n = hc_tensor_numel(cc);
        double *v = hc_xmalloc(sizeof(double) * (size_t)(n ? n : 1));
        for (int64_t i = 0; i < n; i++) v[i] = beta * hc_tensor_const_at(cc, i);
        const char *name = hc_arena_printf(&c->g->arena, "%s_betac", c->n->name);
        hc_tensor *t = hc_pass_const_float(c->g, name, cc->dtype, cc->ndim, cc->shape, v);
        free(v);
        return t;
    }
    hc_tensor *in[2] = {cc, scalar(c, "beta", cc->dtype, beta)};
    return emit(c, HC_OPK_MUL, "betamul", 2, in, 0, NULL);
}

static hc_tensor *lower_gemm(lower_ctx *c) {
    hc_node *n = c->n;
    hc_tensor *a = n->inputs[0], *b = n->inputs[1], *cc = n->ninputs > 2 ? n->inputs[2] : NULL;
    if (hc_node_attr_int(n, "transA", 0)) a = transpose2(c, a, "aT");
    if (a && hc_node_attr_int(n, "transB", 0)) b = transpose2(c, b, "bT");
    if (!a || !b) return NULL;
    hc_tensor *in[2] = {a, b};
    hc_tensor *y = emit(c, HC_OPK_MATMUL, "mm", 2, in, 0, NULL);
    double alpha = hc_node_attr_float(n, "alpha", 1.0), beta = hc_node_attr_float(n, "beta", 1.0);
    if (y && alpha != 1.0) {
        in[0] = y;
        in[1] = scalar(c, "alpha", y->dtype, alpha);
        y = emit(c, HC_OPK_MUL, "alphamul", 2, in, 0, NULL);
    }
    if (y && cc && beta != 0.0) {
        in[0] = y;
        in[1] = scaled_c(c, cc, beta);
        y = in[1] ? emit(c, HC_OPK_ADD, "addc", 2, in, 0, NULL) : NULL;
    }
    return y;
}

static bool gemm_lowerable(const hc_node *n) {
    const hc_tensor *a = n->inputs[0], *b = n->inputs[1], *y = n->outputs[0];
    return y && y->shape_known && a->ndim == 2 && b->ndim == 2 && hc_dtype_is_float(y->dtype);
}

hc_status hc_pass_lower_anchors(hc_graph *g, hc_error *err) {
    return hc_pass_lower_anchors_with(g, &(hc_optimize_options){0}, err);
}

hc_status hc_pass_lower_anchors_with(hc_graph *g, const hc_optimize_options *opt,
                                     hc_error *err) {
    /* a path both forced and turned off is a mistake, not a choice to make silently */
    const char *no = NULL, *force = NULL;
    if (opt && opt->no_winograd && opt->force_winograd)
        no = "no_winograd (--no-winograd)", force = "force_winograd (--winograd-all)";
    if (opt && opt->no_direct && opt->force_direct)
        no = "no_direct (--no-direct)", force = "force_direct (--direct-all)";
    if (no)
        return hc_error_set(err, HC_ERR_INVALID, "options %s and %s contradict each other", no,
                            force);
    size_t n0 = g->nodes.len;
    for (size_t k = 0; k < n0; k++) {
        hc_node *n = g->nodes.data[k];
        lower_ctx c = {g, n, err, opt};
        hc_tensor *y = NULL;
        if (n->op == HC_OPK_CONV && conv_lowerable(n)) y = lower_conv(&c);
        else if (n->op == HC_OPK_GEMM && gemm_lowerable(n)) y = lower_gemm(&c);
        else continue;
        if (!y) return err && err->status != HC_OK ? err->status : HC_ERR_INVALID;
        if (y == n->outputs[0]) continue; /* kept as it is */
        HC_ASSERT(y->ndim == n->outputs[0]->ndim);
        HC_ASSERT(hc_pass_bypass(g, n->outputs[0], y)); /* y is a fresh intermediate */
    }
    hc_status st = hc_graph_toposort(g, err);
    if (st == HC_OK) hc_graph_remove_dead(g);
    return st;
}
