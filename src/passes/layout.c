/* layout.c — the channel-blocked layout pass (docs/nchwc.md).
 *
 * 1. Every eligible Conv (2-D, group 1, f32, constant weights and bias, input and output
 *    channels multiples of the block b, or padded to one) becomes
 *        FROM_NCHWC(CONV_NCHWC(TO_NCHWC(x), W', B'))
 *    with the weights reordered at compile time to [OC/b, C/b, KH, KW, b, b]; a stem (fewer
 *    input channels than b) FROM_NCHWC(CONV_NCHWC(x, W', B')) on its NCHW input, with W'
 *    [OC/b, C, KH, KW, 1, b].
 * 2. The reorders are pushed through the ops that compute the same on the blocked layout
 *    and cancelled where they meet: TO_NCHWC(FROM_NCHWC(y)) is y; an elementwise op whose
 *    tensor inputs all come from FROM_NCHWC (constants: scalars or per-channel [C, 1, 1])
 *    runs on the blocked tensors with one FROM_NCHWC after it; so do a channel Concat of
 *    blocked pieces and 2-D MaxPool / AveragePool (as 3-D pools with a window of 1 along
 *    the block). A chain of convolutions with their ReLUs, residual Adds, pools and
 *    concats is then blocked from end to end, with one reorder where it starts and one
 *    where it ends. */
#include <math.h>
#include <string.h>

#include "passes/pass_util.h"
#include "target/target.h"

/* Non-Winograd dense convs with at most this many output pixels (batch x height x width)
 * stay NCHW (hc_optimize_options.nchwc_small_pixels overrides it) on a core with 2 MiB of
 * L2; a smaller L2 keeps larger images NCHW, by the square of the ratio, at most 4096
 * (small_pixels). The matmul path blocks K and streams each weight once; the blocked conv
 * reads every input row of an item once per group of output blocks and a group's weights
 * once per pixel tile, so it needs the larger caches. Two measured points (docs/nchwc.md,
 * "Measurements"): 2 MiB (Xeon, AVX-512): 64 (14x14 wins blocked, 8x8 and 7x7 lose);
 * 512 KiB (Zen 3, AVX2): 1024 for 1x1 convs (28x28 loses blocked). The growth is for 1x1
 * convs only: a conv of several taps pays the matmul path's im2col (each input element
 * packed once per tap, per thread and K block), which the blocked conv does not, and keeps
 * the 2 MiB threshold on every L2 (Zen 3: ResNet-50's stride-2 3x3 convs on 28x28 and
 * 14x14 outputs 16% and 6% faster blocked, Inception-V3's 1x7 / 7x1 convs on 17x17 about
 * 9%; docs/nchwc.md). */
#define HC_NCHWC_SMALL_PIXELS 64
#define HC_NCHWC_SMALL_L2 ((int64_t)2 << 20)

static int64_t small_pixels(const hc_optimize_options *opt, const hc_node *conv) {
    if (opt->nchwc_small_pixels) return opt->nchwc_small_pixels;
    const hc_tensor *w = conv->inputs[1]; /* [OC, C, KH, KW] */
    if (w->shape[2] * w->shape[3] > 1) return HC_NCHWC_SMALL_PIXELS;
    const hc_target *t = hc_pass_target(opt);
    int64_t l2 = t->caps.l2_bytes > 0 ? t->caps.l2_bytes : HC_NCHWC_SMALL_L2;
    double r = (double)HC_NCHWC_SMALL_L2 / (double)l2;
    double p = HC_NCHWC_SMALL_PIXELS * r * r;
    return p <= HC_NCHWC_SMALL_PIXELS ? HC_NCHWC_SMALL_PIXELS : p >= 4096 ? 4096 : (int64_t)p;
}

typedef struct lctx {
    hc_graph *g;
    hc_error *err;
    int64_t block;
    int counter;
    const hc_optimize_options *opt;
} lctx;

static const char *fresh(lctx *c, const char *base, const char *what) {
    return hc_arena_printf(&c->g->arena, "%s_%s%d", base, what, c->counter++);
}

/* A node like `like` (same op, opset and attributes unless given) on other inputs. */
static hc_tensor *add(lctx *c, hc_op_kind op, const hc_node *like, const char *name, int nin,
                      hc_tensor *const *in, int nattrs, const hc_attr *attrs) {
    hc_node *m = hc_graph_add_node(c->g, op, name, nin, in, 0, NULL, nattrs, attrs, c->err);
    if (!m) return NULL;
    if (like) m->opset = like->opset;
    if (hc_pass_infer_node(m, c->err) != HC_OK) return NULL;
    return m->outputs[0];
}

static hc_tensor *to_blocked(lctx *c, hc_tensor *x, const char *base) {
    hc_attr a = {.name = "block", .kind = HC_ATTR_INT, .i = c->block};
    return add(c, HC_OPK_TO_NCHWC, NULL, fresh(c, base, "to_nchwc"), 1, &x, 1, &a);
}
/* FROM_NCHWC(y) with `channels` of its blocks' lanes (the rest padding) */
static hc_tensor *from_blocked(lctx *c, hc_tensor *y, const char *base, int64_t channels) {
    hc_attr a = {.name = "channels", .kind = HC_ATTR_INT, .i = channels};
    bool padded = channels != y->shape[1] * y->shape[4];
    return add(c, HC_OPK_FROM_NCHWC, NULL, fresh(c, base, "from_nchwc"), 1, &y, padded, &a);
}

/* Channels padded up to whole blocks */
static int64_t padded(const lctx *c, int64_t ch) { return hc_round_up(ch, c->block); }

static bool is_from(const hc_tensor *t);

/* ---- 1. convolutions --------------------------------------------------------------- */
static void attr_pair(const hc_node *n, const char *name, int64_t *out) {
    int cnt = 0;
    const int64_t *v = hc_node_attr_ints(n, name, &cnt);
    out[0] = v && cnt == 2 ? v[0] : 1;
    out[1] = v && cnt == 2 ? v[1] : 1;
}

/* Channels that the block does not divide are padded with zero lanes (docs/nchwc.md,
 * "Padded channels") where that adds at most a third: MobileNet-V2's 24 channels as 32
 * with blocks of 16 (measured: its 24-channel layers blocked, 0.95x the time), 36 as 48;
 * not 20 as 32 or 3 as 16 (not measured; the stem's 3 channels would be 5x the work). */
static bool padding_pays(const lctx *c, int64_t ch) {
    return ch % c->block == 0 || (ch >= c->block && 3 * padded(c, ch) <= 4 * ch);
}

/* A stem: a dense conv on fewer input channels than a block (an image's 3), too few to pad
 * (padding_pays). It reads its NCHW input as it is (CONV_NCHWC with an NCHW input, weights
 * [OC/b, C, KH, KW, 1, b]) and writes blocks, so that the pools and convs after it run
 * blocked with no reorder between (docs/nchwc.md, "Blocked stems"). */
static bool nchw_stem(const lctx *c, const hc_node *n) {
    return hc_node_attr_int(n, "group", 1) == 1 && n->inputs[0]->shape[1] < c->block;
}

static bool conv_eligible(const lctx *c, const hc_node *n) {
    if (n->op != HC_OPK_CONV || n->ninputs < 2) return false;
    const hc_tensor *x = n->inputs[0], *w = n->inputs[1], *y = n->outputs[0];
    const hc_tensor *b = n->ninputs > 2 ? n->inputs[2] : NULL;
    if (!y || !y->shape_known || x->ndim != 4 || w->ndim != 4 || x->dtype != HC_F32 ||
        w->dtype != HC_F32 || !w->data || (b && (!b->data || b->dtype != HC_F32)))
        return false;
    int64_t group = hc_node_attr_int(n, "group", 1), ch = x->shape[1];
    bool depthwise = group == ch && w->shape[0] == ch && w->shape[1] == 1;
    if ((group != 1 || w->shape[1] != ch) && !depthwise) return false;
    return (padding_pays(c, ch) || nchw_stem(c, n)) && padding_pays(c, w->shape[0]);
}

/* Whether a conv's channels (input or output) leave padded lanes */
static bool conv_padded(const lctx *c, const hc_node *n) {
    return n->inputs[0]->shape[1] % c->block || n->inputs[1]->shape[0] % c->block;
}

/* Depthwise W [C, 1, KH, KW] -> [ceil(C/b), 1, KH, KW, 1, b] (padded lanes 0) */
static hc_tensor *blocked_dw_weights(lctx *c, const hc_tensor *w) {
    int64_t b = c->block, ch = w->shape[0], kk = w->shape[2] * w->shape[3];
    int64_t shape[6] = {hc_cdiv(ch, b), 1, w->shape[2], w->shape[3], 1, b};
    hc_tensor *t = hc_graph_constant(c->g, fresh(c, w->name, "nchwc"), HC_F32, 6, shape, NULL);
    const float *src = w->data;
    float *dst = t->data;
    memset(dst, 0, hc_tensor_nbytes(t));
    for (int64_t o = 0; o < ch; o++)
        for (int64_t r = 0; r < kk; r++) dst[((o / b) * kk + r) * b + o % b] = src[o * kk + r];
    return t;
}

/* W [OC, C, KH, KW] -> [ceil(OC/b), ceil(C/ib), KH, KW, ib(c), b(oc)] (padded lanes 0),
 * with ib = b, or 1 for a stem's NCHW input */
static hc_tensor *blocked_weights(lctx *c, const hc_tensor *w, int64_t ib) {
    int64_t b = c->block, oc = w->shape[0], ic = w->shape[1], kh = w->shape[2], kw = w->shape[3];
    int64_t cb = hc_cdiv(ic, ib);
    int64_t shape[6] = {hc_cdiv(oc, b), cb, kh, kw, ib, b};
    hc_tensor *t = hc_graph_constant(c->g, fresh(c, w->name, "nchwc"), HC_F32, 6, shape, NULL);
    const float *src = w->data;
    float *dst = t->data;
    memset(dst, 0, hc_tensor_nbytes(t));
    for (int64_t o = 0; o < oc; o++)
        for (int64_t i = 0; i < ic; i++)
            for (int64_t r = 0; r < kh * kw; r++)
                dst[((((o / b) * cb + i / ib) * kh * kw + r) * ib + i % ib) * b + o % b] =
                    src[(o * ic + i) * kh * kw + r];
    return t;
}

/* A per-channel constant of ch values viewed with another shape (same data: constants
 * are immutable), or copied with zeros after them where the shape pads the channels. */
static hc_tensor *view(lctx *c, const hc_tensor *t, int ndim, const int64_t *shape) {
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) numel *= shape[i];
    if (numel == hc_tensor_numel(t)) {
        hc_tensor *v = hc_graph_tensor(c->g, fresh(c, t->name, "nchwc"), t->dtype, ndim, shape);
        v->data = t->data;
        return v;
    }
    hc_tensor *v = hc_graph_constant(c->g, fresh(c, t->name, "nchwc"), t->dtype, ndim, shape,
                                     NULL);
    memset(v->data, 0, hc_tensor_nbytes(v));
    memcpy(v->data, t->data, hc_tensor_nbytes(t));
    return v;
}

/* Winograd F(mh x mw, kh x kw) on the blocked input (m = hc_pass_winograd_tile: 2, 4 or 6;
 * mh = m unless kh is 1; tiles of ah x aw inputs, ah = mh + kh - 1): V [ah*aw, T, C] =
 * WINO_INPUT_NCHWC(xb); M [ah*aw, T, OC] = V x U^T (batched MatMul, the transformed weights
 * [ah*aw, C, OC] as B); yb = WINO_OUTPUT_NCHWC(M) [N, OC/b, OH, OW, b] (+ the bias as
 * [OC/b, 1, 1, b]). */
static hc_tensor *winograd(lctx *c, hc_node *n, hc_tensor *xb, const int64_t *pads) {
    hc_tensor *w = n->inputs[1], *b = n->ninputs > 2 ? n->inputs[2] : NULL;
    const hc_tensor *y = n->outputs[0];
    int tile = hc_pass_winograd_tile(n, c->opt);
    int64_t kernel[2] = {w->shape[2], w->shape[3]};
    hc_attr pa[3] = {{.name = "pads", .kind = HC_ATTR_INTS, .n = 4, .ints = (int64_t *)pads},
                     {.name = "tile", .kind = HC_ATTR_INT, .i = tile},
                     {.name = "kernel", .kind = HC_ATTR_INTS, .n = 2, .ints = kernel}};
    hc_tensor *v =
        add(c, HC_OPK_WINO_INPUT_NCHWC, NULL, fresh(c, n->name, "wino_in"), 1, &xb, 3, pa);
    if (!v) return NULL;
    hc_tensor *in[2] = {v, hc_pass_winograd_weights(c->g, w, tile, true)};
    hc_tensor *m = add(c, HC_OPK_MATMUL, NULL, fresh(c, n->name, "wino_mm"), 2, in, 0, NULL);
    if (!m) return NULL;
    int64_t hw[2] = {y->shape[2], y->shape[3]};
    hc_attr oa[4] = {{.name = "out_hw", .kind = HC_ATTR_INTS, .n = 2, .ints = hw},
                     {.name = "block", .kind = HC_ATTR_INT, .i = c->block},
                     {.name = "tile", .kind = HC_ATTR_INT, .i = tile},
                     {.name = "kernel", .kind = HC_ATTR_INTS, .n = 2, .ints = kernel}};
    hc_tensor *yb =
        add(c, HC_OPK_WINO_OUTPUT_NCHWC, NULL, fresh(c, n->name, "wino_out"), 1, &m, 4, oa);
    if (yb && b) {
        int64_t shape[4] = {w->shape[0] / c->block, 1, 1, c->block};
        in[0] = yb;
        in[1] = view(c, b, 4, shape);
        yb = add(c, HC_OPK_ADD, NULL, fresh(c, n->name, "bias"), 2, in, 0, NULL);
    }
    return yb;
}

static hc_status convert_conv(lctx *c, hc_node *n, bool wino) {
    hc_tensor *x = n->inputs[0], *w = n->inputs[1], *b = n->ninputs > 2 ? n->inputs[2] : NULL;
    int64_t k[2] = {w->shape[2], w->shape[3]}, s[2], d[2], pads[4];
    attr_pair(n, "strides", s);
    attr_pair(n, "dilations", d);
    hc_pass_conv_pads(n, k, s, d, pads);
    bool stem = nchw_stem(c, n);
    hc_tensor *xb = stem ? x : to_blocked(c, x, n->name);
    if (!xb) return c->err->status;
    hc_tensor *yb = NULL;
    if (wino) {
        yb = winograd(c, n, xb, pads);
    } else {
        int64_t group = hc_node_attr_int(n, "group", 1);
        if (group > 1) group = padded(c, group); /* depthwise: every lane a group */
        hc_tensor *in[3] = {xb,
                            group > 1 ? blocked_dw_weights(c, w)
                                      : blocked_weights(c, w, stem ? 1 : c->block),
                            NULL};
        int64_t shape[2] = {hc_cdiv(w->shape[0], c->block), c->block};
        if (b) in[2] = view(c, b, 2, shape); /* [OC] is [OC/b, b] in the same order */
        hc_attr attrs[4] = {
            {.name = "strides", .kind = HC_ATTR_INTS, .n = 2, .ints = s},
            {.name = "dilations", .kind = HC_ATTR_INTS, .n = 2, .ints = d},
            {.name = "pads", .kind = HC_ATTR_INTS, .n = 4, .ints = pads},
            {.name = "group", .kind = HC_ATTR_INT, .i = group},
        };
        yb = add(c, HC_OPK_CONV_NCHWC, NULL, fresh(c, n->name, "nchwc"), b ? 3 : 2, in, 4, attrs);
    }
    hc_tensor *y = yb ? from_blocked(c, yb, n->name, w->shape[0]) : NULL;
    if (!y) return c->err->status;
    HC_ASSERT(y->ndim == 4 && memcmp(y->shape, n->outputs[0]->shape, sizeof(int64_t) * 4) == 0);
    HC_ASSERT(hc_pass_bypass(c->g, n->outputs[0], y));
    return HC_OK;
}

/* ---- 2. propagation --------------------------------------------------------------- */
static bool is_from(const hc_tensor *t) {
    return t && t->producer && t->producer->op == HC_OPK_FROM_NCHWC;
}

static bool unary_elementwise(hc_op_kind op) {
    switch (op) {
    case HC_OPK_RELU: case HC_OPK_LEAKY_RELU: case HC_OPK_SIGMOID: case HC_OPK_HARD_SIGMOID:
    case HC_OPK_HARD_SWISH: case HC_OPK_TANH: case HC_OPK_ERF: case HC_OPK_SOFTPLUS:
    case HC_OPK_SOFTSIGN: case HC_OPK_ELU: case HC_OPK_SELU: case HC_OPK_CELU:
    case HC_OPK_THRESHOLDED_RELU: case HC_OPK_SHRINK: case HC_OPK_CLIP: case HC_OPK_SQRT:
    case HC_OPK_EXP: case HC_OPK_LOG: case HC_OPK_NEG: case HC_OPK_ABS: case HC_OPK_IDENTITY:
    /* and what the quantized ops are lowered to (passes/quant.c): a QDQ model's
     * QuantizeLinear -> DequantizeLinear pairs between convs stay blocked */
    case HC_OPK_ROUND: case HC_OPK_CAST: case HC_OPK_FLOOR: case HC_OPK_CEIL:
    case HC_OPK_RECIPROCAL: case HC_OPK_SIGN:
        return true;
    default:
        return false;
    }
}

/* Whether t is FROM_NCHWC of blocks with padded lanes */
static bool padded_from(const hc_tensor *t) {
    const hc_tensor *y = is_from(t) ? t->producer->inputs[0] : NULL;
    return y && t->shape[1] != y->shape[1] * y->shape[4];
}

/* Whether a Pad's constant is finite (its attribute value, opset < 11, or its optional
 * constant input; 0 without either). */
static bool pad_value_finite(const hc_node *n) {
    if (hc_node_attr_ints(n, "pads", NULL)) return isfinite(hc_node_attr_float(n, "value", 0));
    const hc_tensor *v = n->ninputs > 2 ? n->inputs[2] : NULL;
    return !v || (v->data && v->dtype == HC_F32 && hc_tensor_numel(v) == 1 &&
                  isfinite(*(const float *)v->data));
}

/* Whether node n may run on blocks with padded lanes: finite padding must stay finite (the
 * padded lanes meet zero weights in every conv that reads them, and 0 * inf would be a
 * NaN in a real channel). The elementwise ops that keep a finite value finite, the pools
 * and a Pad of a finite value; not Div, Log, Sqrt, Reciprocal, Exp and the like, nor the
 * quantizing ops (the int8 convs take whole blocks only), nor a Concat (the pieces'
 * padding would lie inside the result). */
static bool runs_padded(const hc_node *n) {
    switch (n->op) {
    case HC_OPK_RELU: case HC_OPK_LEAKY_RELU: case HC_OPK_SIGMOID: case HC_OPK_HARD_SIGMOID:
    case HC_OPK_HARD_SWISH: case HC_OPK_TANH: case HC_OPK_ERF: case HC_OPK_SOFTSIGN:
    case HC_OPK_CLIP: case HC_OPK_NEG: case HC_OPK_ABS: case HC_OPK_IDENTITY:
    case HC_OPK_ADD: case HC_OPK_SUB: case HC_OPK_MUL: case HC_OPK_MIN: case HC_OPK_MAX:
    case HC_OPK_SUM: case HC_OPK_MEAN: case HC_OPK_MAX_POOL: case HC_OPK_AVERAGE_POOL:
        return true;
    case HC_OPK_PAD:
        return pad_value_finite(n);
    default:
        return false;
    }
}

static bool binary_elementwise(hc_op_kind op) {
    switch (op) {
    case HC_OPK_ADD: case HC_OPK_SUB: case HC_OPK_MUL: case HC_OPK_DIV: case HC_OPK_MIN:
    case HC_OPK_MAX: case HC_OPK_SUM: case HC_OPK_MEAN:
        return true;
    default:
        return false;
    }
}

/* The blocked form of operand t of a 4-D elementwise op with output shape `out`: a
 * blocked producer's input (same shape as the output), a scalar constant as it is, a
 * per-channel constant ([C, 1, 1] or [1, C, 1, 1]) viewed as [C/b, 1, 1, b] (padded with
 * zeros where b does not divide C); NULL if none. */
static hc_tensor *blocked_operand(lctx *c, hc_tensor *t, const hc_tensor *out) {
    if (is_from(t))
        return memcmp(t->shape, out->shape, sizeof(int64_t) * 4) == 0 && t->ndim == 4
                   ? t->producer->inputs[0]
                   : NULL;
    if (!t->data || t->dtype != out->dtype) return NULL;
    int64_t numel = hc_tensor_numel(t);
    if (numel == 1 && t->ndim <= 4) return t;
    const int64_t *sh = t->shape;
    bool chan = (t->ndim == 3 && sh[0] == out->shape[1] && sh[1] == 1 && sh[2] == 1) ||
                (t->ndim == 4 && sh[0] == 1 && sh[1] == out->shape[1] && sh[2] == 1 && sh[3] == 1);
    if (!chan) return NULL;
    int64_t shape[4] = {hc_cdiv(out->shape[1], c->block), 1, 1, c->block};
    return view(c, t, 4, shape); /* channel order is the blocked order */
}

/* 3-D pool attributes: the 2-D window with a window of 1 along the block. */
static bool pool_attrs(const hc_node *n, hc_attr *out, int *nout, int64_t *store) {
    const char *ap = hc_node_attr_string(n, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") != 0 && strcmp(ap, "VALID") != 0 && *ap) return false;
    bool valid = strcmp(ap, "VALID") == 0;
    int cnt = 0;
    const int64_t *k = hc_node_attr_ints(n, "kernel_shape", &cnt);
    if (!k || cnt != 2) return false;
    int64_t *ks = store, *st = store + 3, *dl = store + 6, *pd = store + 9;
    int64_t s2[2], d2[2];
    attr_pair(n, "strides", s2);
    attr_pair(n, "dilations", d2);
    const int64_t *p = hc_node_attr_ints(n, "pads", &cnt);
    if (p && cnt != 4) return false;
    ks[0] = k[0], ks[1] = k[1], ks[2] = 1;
    st[0] = s2[0], st[1] = s2[1], st[2] = 1;
    dl[0] = d2[0], dl[1] = d2[1], dl[2] = 1;
    for (int i = 0; i < 2; i++) {
        pd[i] = p && !valid ? p[i] : 0;
        pd[3 + i] = p && !valid ? p[2 + i] : 0;
    }
    pd[2] = pd[5] = 0;
    int m = 0;
    out[m++] = (hc_attr){.name = "kernel_shape", .kind = HC_ATTR_INTS, .n = 3, .ints = ks};
    out[m++] = (hc_attr){.name = "strides", .kind = HC_ATTR_INTS, .n = 3, .ints = st};
    out[m++] = (hc_attr){.name = "dilations", .kind = HC_ATTR_INTS, .n = 3, .ints = dl};
    out[m++] = (hc_attr){.name = "pads", .kind = HC_ATTR_INTS, .n = 6, .ints = pd};
    for (int i = 0; i < n->nattrs; i++) { /* ceil_mode, count_include_pad */
        const char *nm = n->attrs[i].name;
        if (strcmp(nm, "ceil_mode") == 0 || strcmp(nm, "count_include_pad") == 0)
            out[m++] = n->attrs[i];
    }
    *nout = m;
    return true;
}

/* A constant-mode Pad of the spatial dims of FROM_NCHWC(y): the same Pad of y (pads of 0
 * along the block). */
static bool push_pad(lctx *c, hc_node *n, hc_status *st) {
    hc_tensor *x = n->inputs[0], *out = n->outputs[0];
    if (!is_from(x) || strcmp(hc_node_attr_string(n, "mode", "constant"), "constant") != 0)
        return false;
    int cnt = 0;
    const int64_t *ap = hc_node_attr_ints(n, "pads", &cnt); /* opset < 11 */
    const hc_tensor *pt = n->ninputs > 1 ? n->inputs[1] : NULL;
    if (n->ninputs > 3 && n->inputs[3]) return false; /* axes */
    if (!ap) {
        if (!pt || !pt->data || pt->dtype != HC_I64 || hc_tensor_numel(pt) != 8) return false;
        ap = pt->data;
    } else if (cnt != 8) {
        return false;
    }
    if (ap[0] || ap[1] || ap[4] || ap[5]) return false; /* batch or channels padded */
    int64_t p5[10] = {0, 0, ap[2], ap[3], 0, 0, 0, ap[6], ap[7], 0};
    hc_tensor *in[3] = {x->producer->inputs[0], NULL, NULL};
    int nin = 1, nattrs = 0;
    hc_attr attrs[2];
    for (int i = 0; i < n->nattrs; i++)
        if (strcmp(n->attrs[i].name, "pads") != 0) attrs[nattrs++] = n->attrs[i];
    if (hc_node_attr_ints(n, "pads", NULL)) {
        attrs[nattrs++] = (hc_attr){.name = "pads", .kind = HC_ATTR_INTS, .n = 10, .ints = p5};
    } else {
        in[nin++] = hc_pass_const_i64(c->g, fresh(c, n->name, "pads"), 10, p5);
        if (n->ninputs > 2 && n->inputs[2]) in[nin++] = n->inputs[2];
    }
    if (nattrs > 2) return false;
    hc_tensor *y = add(c, HC_OPK_PAD, n, fresh(c, n->name, "nchwc"), nin, in, nattrs, attrs);
    hc_tensor *z = y ? from_blocked(c, y, n->name, out->shape[1]) : NULL;
    if (!z) return (*st = c->err->status), false;
    return hc_pass_bypass(c->g, out, z);
}

/* One rewrite at node n; true when it changed the graph. */
static bool push(lctx *c, hc_node *n, hc_status *st) {
    hc_graph *g = c->g;
    if (n->noutputs < 1 || !n->outputs[0]) return false;
    hc_tensor *out = n->outputs[0];
    if (n->op == HC_OPK_TO_NCHWC) {
        hc_tensor *x = n->inputs[0];
        if (!is_from(x) || x->producer->inputs[0]->shape[4] != out->shape[4]) return false;
        return hc_pass_bypass(g, out, x->producer->inputs[0]);
    }
    if (out->ndim != 4 || !out->shape_known) return false;
    for (int i = 0; i < n->ninputs; i++)
        if (padded_from(n->inputs[i]) && !runs_padded(n)) return false;
    const int64_t ch = out->shape[1];
    hc_tensor *in[8];
    int nin = n->ninputs;
    if (nin > 8) return false;
    bool any = false;
    if (unary_elementwise(n->op)) {
        if (!is_from(n->inputs[0]) || hc_node_num_present_inputs(n) != (n->op == HC_OPK_CLIP ? nin : 1))
            return false;
        for (int i = 0; i < nin; i++) {
            in[i] = n->inputs[i];
            if (i > 0 && (!in[i] || !in[i]->data || hc_tensor_numel(in[i]) != 1)) return false;
        }
        in[0] = n->inputs[0]->producer->inputs[0];
        any = true;
    } else if (binary_elementwise(n->op)) {
        for (int i = 0; i < nin; i++) {
            if (!n->inputs[i]) return false;
            any |= is_from(n->inputs[i]);
            in[i] = blocked_operand(c, n->inputs[i], out);
            if (!in[i]) return false;
        }
    } else if (n->op == HC_OPK_CONCAT) {
        int64_t axis = hc_node_attr_int(n, "axis", 0);
        if (axis != 1 && axis != -3) return false;
        for (int i = 0; i < nin; i++) {
            if (!is_from(n->inputs[i])) return false;
            in[i] = n->inputs[i]->producer->inputs[0];
            if (in[i]->shape[4] != c->block) return false;
        }
        hc_attr a = {.name = "axis", .kind = HC_ATTR_INT, .i = 1};
        hc_tensor *y = add(c, HC_OPK_CONCAT, n, fresh(c, n->name, "nchwc"), nin, in, 1, &a);
        hc_tensor *z = y ? from_blocked(c, y, n->name, ch) : NULL;
        if (!z) return (*st = c->err->status), false;
        return hc_pass_bypass(g, out, z);
    } else if (n->op == HC_OPK_PAD) {
        return push_pad(c, n, st);
    } else if (n->op == HC_OPK_MAX_POOL || n->op == HC_OPK_AVERAGE_POOL) {
        if (!is_from(n->inputs[0]) || hc_node_num_present_inputs(n) != 1) return false;
        for (int i = 1; i < n->noutputs; i++)
            if (n->outputs[i]) return false; /* MaxPool's Indices */
        hc_attr attrs[8];
        int64_t store[16];
        int na = 0;
        if (!pool_attrs(n, attrs, &na, store)) return false;
        in[0] = n->inputs[0]->producer->inputs[0];
        hc_op_kind op = n->op == HC_OPK_MAX_POOL ? HC_OPK_MAX_POOL_NCHWC : HC_OPK_AVERAGE_POOL_NCHWC;
        hc_tensor *y = add(c, op, n, fresh(c, n->name, "nchwc"), 1, in, na, attrs);
        hc_tensor *z = y ? from_blocked(c, y, n->name, ch) : NULL;
        if (!z) return (*st = c->err->status), false;
        return hc_pass_bypass(g, out, z);
    } else {
        return false;
    }
    if (!any) return false;
    hc_tensor *y = add(c, n->op, n, fresh(c, n->name, "nchwc"), nin, in, n->nattrs, n->attrs);
    if (y && y->ndim != 5) /* cannot happen: every operand is blocked or broadcasts */
        hc_error_set(c->err, HC_ERR_UNSUPPORTED, "layout: node '%s' gave a %d-d result on blocked "
                     "inputs", n->name, y->ndim);
    hc_tensor *z = y && y->ndim == 5 ? from_blocked(c, y, n->name, ch) : NULL;
    if (!z) {
        *st = c->err->status;
        return false;
    }
    return hc_pass_bypass(g, out, z);
}

/* Push the reorders until nothing changes. */
static hc_status propagate(lctx *c) {
    hc_graph *g = c->g;
    hc_status st = hc_graph_toposort(g, c->err);
    if (st != HC_OK) return st;
    hc_graph_remove_dead(g);
    for (int round = 0; round < 64; round++) {
        bool changed = false;
        size_t len = g->nodes.len;
        for (size_t k = 0; k < len; k++) {
            hc_node *n = g->nodes.data[k];
            if (n->noutputs < 1 || !n->outputs[0]) continue;
            bool reads_reorder = false; /* push moves only reorders (FROM_NCHWC) it reads */
            for (int i = 0; i < n->ninputs; i++) reads_reorder |= is_from(n->inputs[i]);
            if (!reads_reorder) continue; /* before counting uses: a scan of the graph */
            if (hc_graph_num_uses(g, n->outputs[0]) == 0 &&
                !hc_pass_is_graph_output(g, n->outputs[0]))
                continue; /* dead: bypassed earlier in this round */
            changed |= push(c, n, &st);
            if (st != HC_OK) return st;
        }
        st = hc_graph_toposort(g, c->err);
        if (st != HC_OK) return st;
        hc_graph_remove_dead(g);
        if (!changed) break;
    }
    return HC_OK;
}

/* Whether n is a depthwise conv the pass may block (group = channels). */
static bool depthwise_conv(const lctx *c, const hc_node *n) {
    return n && conv_eligible(c, n) && hc_node_attr_int(n, "group", 1) != 1;
}

/* Whether dense conv n is a link of a depthwise chain that pays blocked on small images:
 * its input comes from a depthwise conv, or its output goes to one, through unary
 * elementwise ops (MobileNet-V2's expand 1x1 -> Clip -> depthwise 3x3 -> Clip -> project
 * 1x1), on blocks of 16 lanes. Such a conv is blocked whatever its size, which blocks the
 * depthwise conv too (it follows its input's layout): an NCHW depthwise conv on a small
 * plane puts one row on a vector (a 7-wide row fills 7 of 16 lanes) and copies each plane
 * into a padded scratch; the blocked one has 16 channels on the lanes. Measured on Zen 4
 * (AVX-512, 1 MiB of L2, where 1x1 convs up to 256 pixels stay NCHW), per-kernel minima:
 * MobileNet-V2's 14x14 and 7x7 depthwise convs 2.5-3.6x faster blocked, its 14x14 1x1
 * convs the same, its 7x7 ones 5-18% slower; the model 0.90x per round. With AVX2's blocks
 * of 8 (the same machine, HIDETC_ISA=avx2) the NCHW depthwise conv loses fewer lanes
 * (7 of 8) and the blocked 1x1 convs on 7x7 were 10-28% slower: the model's kernel minima
 * 4.29 -> 4.37 ms, so blocks of 8 keep the small-image rule (docs/nchwc.md). */
static bool in_depthwise_chain(const lctx *c, const hc_node *n) {
    if (c->block < 16) return false;
    const hc_tensor *t = n->inputs[0];
    for (int hop = 0; hop < 4 && t && t->producer; hop++) {
        const hc_node *p = t->producer;
        if (depthwise_conv(c, p)) return true;
        if (!unary_elementwise(p->op)) break;
        t = p->inputs[0];
    }
    t = n->outputs[0];
    for (int hop = 0; hop < 4 && t && !hc_pass_is_graph_output(c->g, t); hop++) {
        const hc_node *r = hc_graph_sole_reader(c->g, t);
        if (!r || r->inputs[0] != t) break;
        if (depthwise_conv(c, r)) return true;
        if (!unary_elementwise(r->op)) break;
        t = r->outputs[0];
    }
    return false;
}

/* Convert the eligible convs of one kind (dense, or depthwise), then propagate. A
 * depthwise conv follows its input's layout: blocked after a blocked producer, else it
 * stays (a reorder in front of it would cost more than it saves: its template reads the
 * input by vectors, which a fused reorder turns into gathers); so the depthwise convs go
 * second, once the dense convs' reorders have been pushed to them. */
static hc_status convert_all(lctx *c, bool depthwise) {
    const hc_optimize_options *opt = c->opt;
    size_t n0 = c->g->nodes.len;
    for (size_t k = 0; k < n0; k++) {
        hc_node *n = c->g->nodes.data[k];
        if (!conv_eligible(c, n)) continue;
        bool dw = hc_node_attr_int(n, "group", 1) != 1;
        if (dw != depthwise || (dw && !is_from(n->inputs[0]))) continue;
        /* A symbolic batch (dynamic shapes) decides as a fixed one at its hint (the shapes'
         * numbers are the hint's): the Winograd transforms and their batched matmul (M =
         * the tiles of every image) take a symbolic batch. docs/dynamic.md */
        bool wino = !dw && !nchw_stem(c, n) &&
                    hc_pass_conv_path_blocked(n, opt) == HC_CONV_WINOGRAD;
        /* padded channels: the direct blocked conv only (the Winograd transforms and their
         * weights take whole blocks); such a Winograd conv stays NCHW */
        if (wino && conv_padded(c, n)) continue;
        /* Small images (small_pixels): the matmul path (pixels on the lanes,
         * each weight streamed once) beats the blocked direct conv there; Winograd stays
         * blocked (its blocked transforms win at every size). docs/nchwc.md
         * A symbolic batch counts as one image here, whatever its hint: the rule is for
         * latency at small batches, where a wrong blocked layout costs most (ResNet-50's
         * layer4 at batch 1: 9% at a hint of 16), and the NCHW path it keeps runs every
         * batch (bench/results/dynamic.md). */
        const hc_tensor *y = n->outputs[0];
        int64_t images = y->sym && y->sym[0] ? 1 : y->shape[0];
        if (!dw && !wino && images * y->shape[2] * y->shape[3] <= small_pixels(opt, n) &&
            !in_depthwise_chain(c, n))
            continue;
        hc_status st = convert_conv(c, n, wino);
        if (st != HC_OK) return st;
    }
    return propagate(c);
}

hc_status hc_pass_layout_nchwc(hc_graph *g, const hc_optimize_options *opt, hc_error *err) {
    int64_t block = opt ? opt->nchwc_block : 0;
    if (block <= 1) return HC_OK;
    lctx c = {g, err, block, 0, opt};
    hc_status st = convert_all(&c, false);
    return st == HC_OK ? convert_all(&c, true) : st;
}
