/* qconv.c — the int8 convs of QDQ models (the pass int8_conv, before lower_quant).
 *
 * A statically quantized model (onnxruntime.quantization.quantize_static, QDQ format)
 * computes each conv as Conv(DequantizeLinear(xq, sx, zx), DequantizeLinear(wq, sw), B),
 * B a constant or DequantizeLinear(bq int32, sb). Where
 *   - xq is u8 or i8 with one scale sx (a normal f32) and zero point zx,
 *   - wq a constant i8 [OC, C, KH, KW] with zero points 0 and a scale per tensor or per
 *     output channel (axis 0),
 *   - the conv is 2-D, group 1, and C and OC are multiples of the block b,
 * the conv becomes FROM_NCHWC(CONV_NCHWC_Q8(TO_NCHWC(x), W8, K, S, B')) (src/graph/ops/
 * nchwc.c): the int8 template reads x = (q - zx) * sx, recovers q exactly (round(x / sx)
 * + zx), sums (q - zx) * wq in int32 and scales by sx * sw. The DequantizeLinear stays (it is
 * lowered, and its elementwise ops move into the blocked layout with the layout pass),
 * so the model's other readers of x are unchanged.
 *   W8 [OC/b, C/b, KH, KW, b/4, b, 4] i8   W8[o, ci, i, j, g, m, k] = wq[o*b+m, ci*b+4g+k, i, j]
 *   z = zx (u8) or zx + 128 (i8: the template works on u8 values q + 128)
 *   K[o] = -z * sum(wq[o]), S[o] = f32(sx * sw[o]), B'[o] = B[o] (dequantized) or 0
 * The result differs from the f32 conv of the dequantized values only by rounding: the sum
 * is exact in int32 (the f32 conv rounds every partial sum). On by default on CPU targets
 * with AVX2 or AVX-512 (hc_optimize_options.int8_block, 0 with --no-int8). */
#include <math.h>
#include <string.h>

#include "graph/ops/quant.h"
#include "passes/pass_util.h"

/* The DequantizeLinear producing t with one scale (and zero point) for the whole tensor
 * or per index of axis 0; NULL otherwise. */
static const hc_node *dq_of(const hc_tensor *t, bool per_axis0) {
    const hc_node *d = t ? t->producer : NULL;
    if (!d || d->op != HC_OPK_DEQUANTIZE_LINEAR || d->ninputs < 2) return NULL;
    hc_quant_spec s;
    hc_error e = {0};
    if (hc_quant_parse(d, &s, &e) != HC_OK || s.out != HC_F32) return NULL;
    const hc_tensor *sc = d->inputs[1], *zp = d->ninputs > 2 ? d->inputs[2] : NULL;
    if (!sc->data || sc->dtype != HC_F32 || (zp && !zp->data)) return NULL;
    if (s.kind == HC_QP_BLOCK || (s.kind == HC_QP_AXIS && (!per_axis0 || s.axis != 0)))
        return NULL;
    return d;
}

static double zp_at(const hc_node *d, int64_t i) {
    const hc_tensor *zp = d->ninputs > 2 ? d->inputs[2] : NULL;
    if (!zp) return 0;
    return hc_tensor_const_at(zp, hc_tensor_numel(zp) == 1 ? 0 : i);
}

static double scale_at(const hc_node *d, int64_t i) {
    const hc_tensor *sc = d->inputs[1];
    return hc_tensor_const_at(sc, hc_tensor_numel(sc) == 1 ? 0 : i);
}

typedef struct qc {
    hc_rewrite rw;
    int64_t L;
    const hc_node *dx, *dw, *db;
    const hc_tensor *bias; /* a constant f32 bias (no DequantizeLinear) */
} qc;

static bool eligible(qc *c, const hc_node *n) {
    if (n->op != HC_OPK_CONV || n->ninputs < 2 || !n->outputs[0] || !n->outputs[0]->shape_known)
        return false;
    const hc_tensor *x = n->inputs[0], *w = n->inputs[1];
    const hc_tensor *b = n->ninputs > 2 ? n->inputs[2] : NULL;
    if (x->ndim != 4 || w->ndim != 4 || hc_node_attr_int(n, "group", 1) != 1 ||
        w->shape[1] != x->shape[1] || x->shape[1] % c->L || w->shape[0] % c->L)
        return false;
    c->dx = dq_of(x, false);
    c->dw = dq_of(w, true);
    if (!c->dx || !c->dw) return false;
    const hc_tensor *xq = c->dx->inputs[0], *wq = c->dw->inputs[0];
    if ((xq->dtype != HC_U8 && xq->dtype != HC_I8) || wq->dtype != HC_I8 || !wq->data)
        return false;
    double sx = scale_at(c->dx, 0);
    if (!(sx >= 1e-30 && sx <= 1e30)) return false; /* x / sx must give q back exactly */
    for (int64_t o = 0; o < w->shape[0]; o++)
        if (zp_at(c->dw, o) != 0 || !isfinite(scale_at(c->dw, o))) return false;
    c->db = NULL, c->bias = NULL;
    if (b) {
        const hc_node *d = b->producer;
        if (b->data && b->dtype == HC_F32 && hc_tensor_numel(b) == w->shape[0]) c->bias = b;
        else if (d && d->op == HC_OPK_DEQUANTIZE_LINEAR && d->inputs[0]->data &&
                 d->inputs[0]->dtype == HC_I32 && (c->db = dq_of(b, true)) &&
                 hc_tensor_numel(b) == w->shape[0])
            ;
        else
            return false;
    }
    return true;
}

static hc_tensor *block_const(qc *c, hc_dtype dt, int64_t mb, const void *data) {
    int64_t shape[2] = {mb, c->L};
    return hc_graph_constant(c->rw.g, hc_rw_fresh(&c->rw, "q8c"), dt, 2, shape, data);
}

static hc_status rewrite(qc *c, hc_node *n) {
    c->rw = (hc_rewrite){.g = c->rw.g, .n = n, .err = c->rw.err};
    hc_tensor *x = n->inputs[0], *w = n->inputs[1];
    const hc_tensor *wq = c->dw->inputs[0];
    int64_t L = c->L, oc = w->shape[0], ic = w->shape[1], kh = w->shape[2], kw = w->shape[3];
    int64_t mb = oc / L, cb = ic / L, kk = kh * kw;
    bool sgn = c->dx->inputs[0]->dtype == HC_I8;
    double sx = scale_at(c->dx, 0);
    int64_t z = (int64_t)zp_at(c->dx, 0) + (sgn ? 128 : 0);
    /* W8 and the per-channel constants */
    int64_t w8s[7] = {mb, cb, kh, kw, L / 4, L, 4};
    hc_tensor *w8 = hc_graph_constant(c->rw.g, hc_rw_fresh(&c->rw, "q8w"), HC_I8, 7, w8s, NULL);
    const int8_t *src = wq->data;
    int8_t *dst = w8->data;
    int32_t *kv = hc_xcalloc((size_t)oc, sizeof(int32_t));
    float *sv = hc_xmalloc(sizeof(float) * (size_t)oc), *bv = hc_xcalloc((size_t)oc, sizeof(float));
    for (int64_t o = 0; o < oc; o++) {
        int64_t sum = 0;
        for (int64_t i = 0; i < ic; i++)
            for (int64_t r = 0; r < kk; r++) {
                int8_t v = src[(o * ic + i) * kk + r];
                sum += v;
                int64_t l = i % L;
                dst[((((o / L) * cb + i / L) * kk + r) * (L / 4) + l / 4) * L * 4 + (o % L) * 4 +
                    l % 4] = v;
            }
        kv[o] = (int32_t)(-z * sum); /* |z * sum| <= 255 * 128 * C * KH * KW: checked below */
        sv[o] = (float)(sx * scale_at(c->dw, o));
        if (c->bias) bv[o] = ((const float *)c->bias->data)[o];
        if (c->db) /* the reference's DequantizeLinear: (f32(q) - zp) * scale in f32 */
            bv[o] = ((float)((const int32_t *)c->db->inputs[0]->data)[o] - (float)zp_at(c->db, o)) *
                    (float)scale_at(c->db, o);
    }
    hc_tensor *kt = block_const(c, HC_I32, mb, kv), *st = block_const(c, HC_F32, mb, sv),
              *bt = block_const(c, HC_F32, mb, bv);
    free(kv), free(sv), free(bv);
    int64_t k[2] = {kh, kw}, s[2], d[2], pads[4];
    int cnt = 0;
    const int64_t *v = hc_node_attr_ints(n, "strides", &cnt);
    s[0] = v && cnt == 2 ? v[0] : 1, s[1] = v && cnt == 2 ? v[1] : 1;
    v = hc_node_attr_ints(n, "dilations", &cnt);
    d[0] = v && cnt == 2 ? v[0] : 1, d[1] = v && cnt == 2 ? v[1] : 1;
    hc_pass_conv_pads(n, k, s, d, pads);
    hc_attr ba = {.name = "block", .kind = HC_ATTR_INT, .i = L};
    hc_tensor *xb = hc_rw_emit(&c->rw, HC_OPK_TO_NCHWC, 1, &x, 1, &ba);
    hc_attr at[5] = {{.name = "strides", .kind = HC_ATTR_INTS, .n = 2, .ints = s},
                     {.name = "dilations", .kind = HC_ATTR_INTS, .n = 2, .ints = d},
                     {.name = "pads", .kind = HC_ATTR_INTS, .n = 4, .ints = pads},
                     {.name = "x_scale", .kind = HC_ATTR_FLOAT, .f = sx},
                     {.name = "x_zero", .kind = HC_ATTR_INT, .i = z}};
    hc_tensor *in[5] = {xb, w8, kt, st, bt};
    hc_tensor *yb = hc_rw_emit(&c->rw, HC_OPK_CONV_NCHWC_Q8, 5, in, 5, at);
    hc_tensor *y = hc_rw_emit(&c->rw, HC_OPK_FROM_NCHWC, 1, &yb, 0, NULL);
    return hc_rw_replace(&c->rw, 0, y);
}

hc_status hc_pass_int8_conv(hc_graph *g, const hc_optimize_options *opt, hc_error *err) {
    int64_t L = opt ? opt->int8_block : 0;
    if (L < 8 || L % 4) return HC_OK;
    qc c = {.rw = {.g = g, .err = err}, .L = L};
    size_t n0 = g->nodes.len;
    bool any = false;
    for (size_t i = 0; i < n0; i++) {
        hc_node *n = g->nodes.data[i];
        if (!eligible(&c, n)) continue;
        /* the compensation K must fit int32: 255 * 128 * C * KH * KW */
        const hc_tensor *w = n->inputs[1];
        if (255.0 * 128.0 * (double)(w->shape[1] * w->shape[2] * w->shape[3]) > 2147483647.0)
            continue;
        hc_status st = rewrite(&c, n);
        if (st) return st;
        any = true;
    }
    if (!any) return HC_OK;
    hc_status st = hc_graph_toposort(g, err);
    if (st == HC_OK) hc_graph_remove_dead(g);
    return st;
}
