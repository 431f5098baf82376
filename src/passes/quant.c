/* quant.c — the lower_quant pass: the quantized operators rewritten into existing ops, in
 * the arithmetic of the ONNX reference (onnx/reference/ops), so that they compute what it
 * does, bit for bit:
 *   QuantizeLinear    y = cast(clamp(round(x / s) + zp, qmin, qmax)); x / s in the
 *                     promoted float type of x and s (or `precision`), round half to even
 *   DequantizeLinear  y = cast_out((f32(x) - f32(zp)) * s)
 *   Dynamic...        the reference's min/max, scale and zero point, then QuantizeLinear
 *   MatMulInteger     (i32(A) - azp) @ (i32(B) - bzp), in int32
 *   QLinearMatMul     that, times as * bs / ys (in the scales' type) in f64, + yzp, rounded
 *                     and clamped
 *   ConvInteger       the conv of i32(x) - xzp and i32(w) - wzp, computed in f32 when every
 *                     partial sum is an integer below 2^24 (then exact), else in f64
 *   QLinearConv       that (+ the int32 bias), times xs * ws / ys in f64, + yzp, rounded and
 *                     clamped
 * Scales and zero points are broadcast to x (per tensor, per axis, per block); constant
 * ones fold at compile time. The rest of the pipeline fuses the elementwise parts into
 * the MatMul / Conv kernels as prologues and epilogues. */
#include <math.h>
#include <string.h>

#include "graph/ops/quant.h"
#include "passes/pass_util.h"

typedef hc_rewrite q_ctx;

static const char *fresh(q_ctx *c, const char *suffix) { return hc_rw_fresh(c, suffix); }

static hc_tensor *emit(q_ctx *c, hc_op_kind op, int nin, hc_tensor *const *in, int nattrs,
                       const hc_attr *attrs) {
    return hc_rw_emit(c, op, nin, in, nattrs, attrs);
}

static hc_tensor *bin(q_ctx *c, hc_op_kind op, hc_tensor *a, hc_tensor *b) {
    hc_tensor *in[2] = {a, b};
    return emit(c, op, 2, in, 0, NULL);
}

static hc_tensor *unary(q_ctx *c, hc_op_kind op, hc_tensor *x) { return emit(c, op, 1, &x, 0, NULL); }

static int64_t onnx_code(hc_dtype d) {
    switch (d) {
    case HC_F32: return 1;
    case HC_U8: return 2;
    case HC_I8: return 3;
    case HC_U16: return 4;
    case HC_I16: return 5;
    case HC_I32: return 6;
    case HC_I64: return 7;
    case HC_BOOL: return 9;
    case HC_F16: return 10;
    case HC_F64: return 11;
    case HC_U32: return 12;
    case HC_U64: return 13;
    case HC_BF16: return 16;
    default: return 0;
    }
}

static hc_tensor *cast(q_ctx *c, hc_tensor *x, hc_dtype to) {
    if (!x || x->dtype == to) return x;
    hc_attr a = {.name = "to", .kind = HC_ATTR_INT, .i = onnx_code(to)};
    return emit(c, HC_OPK_CAST, 1, &x, 1, &a);
}

static hc_tensor *num(q_ctx *c, hc_dtype dt, double v) {
    if (hc_dtype_is_float(dt)) return hc_pass_const_float(c->g, fresh(c, "k"), dt, 0, NULL, &v);
    hc_tensor *t = hc_graph_constant(c->g, fresh(c, "k"), dt, 0, NULL, NULL);
    hc_elem_set(t->data, dt, 0, v);
    return t;
}

static hc_tensor *reshape(q_ctx *c, hc_tensor *x, int ndim, const int64_t *shape) {
    if (!x) return NULL;
    if (x->ndim == ndim && (!ndim || !memcmp(x->shape, shape, sizeof(int64_t) * (size_t)ndim)))
        return x;
    if (x->data) { /* constants are immutable: the view shares the bytes */
        hc_tensor *t = hc_graph_tensor(c->g, fresh(c, "view"), x->dtype, ndim, shape);
        t->data = x->data;
        t->shape_known = true;
        return t;
    }
    hc_tensor *in[2] = {x, hc_pass_const_i64(c->g, fresh(c, "shape"), ndim, shape)};
    return emit(c, HC_OPK_RESHAPE, 2, in, 0, NULL);
}

/* clamp(x, lo, hi) as Min then Max (no opset-dependent Clip form). */
static hc_tensor *clamp(q_ctx *c, hc_tensor *x, double lo, double hi) {
    if (!x) return NULL;
    return bin(c, HC_OPK_MAX, bin(c, HC_OPK_MIN, x, num(c, x->dtype, hi)), num(c, x->dtype, lo));
}

/* A scale or zero point p laid out to broadcast against x under s. */
static hc_tensor *bcast(q_ctx *c, hc_tensor *p, const hc_tensor *x, const hc_quant_spec *s) {
    if (!p) return NULL;
    if (hc_tensor_numel(p) == 1) return reshape(c, p, 0, NULL);
    int r = x->ndim, ax = s->axis;
    int64_t shape[HC_MAX_DIMS];
    if (s->kind == HC_QP_AXIS) {
        for (int k = 0; k < r; k++) shape[k] = k == ax ? x->shape[ax] : 1;
        return reshape(c, p, r, shape);
    }
    /* blocks: p [.., nb, ..] -> [.., nb, 1, ..] -> expand [.., nb, block, ..] ->
     * [.., nb * block, ..] -> the first x.shape[ax] along ax */
    if (r + 1 > HC_MAX_DIMS) {
        hc_node_fail(c->n, HC_ERR_UNSUPPORTED, c->err, "blocked quantization of rank %d", r);
        return NULL;
    }
    int64_t nb = p->shape[ax], ins[HC_MAX_DIMS], ex[HC_MAX_DIMS];
    for (int k = 0, j = 0; k < r; k++) {
        ins[j] = p->shape[k], ex[j++] = p->shape[k];
        if (k == ax) ins[j] = 1, ex[j++] = s->block;
    }
    hc_tensor *t = reshape(c, p, r + 1, ins);
    hc_tensor *in[2] = {t, hc_pass_const_i64(c->g, fresh(c, "shape"), r + 1, ex)};
    t = emit(c, HC_OPK_EXPAND, 2, in, 0, NULL);
    memcpy(shape, p->shape, sizeof(int64_t) * (size_t)r);
    shape[ax] = nb * s->block;
    t = reshape(c, t, r, shape);
    if (shape[ax] != x->shape[ax]) {
        int64_t lo = 0, hi = x->shape[ax], axis = ax;
        hc_tensor *sl[4] = {t, hc_pass_const_i64(c->g, fresh(c, "lo"), 1, &lo),
                            hc_pass_const_i64(c->g, fresh(c, "hi"), 1, &hi),
                            hc_pass_const_i64(c->g, fresh(c, "axis"), 1, &axis)};
        t = emit(c, HC_OPK_SLICE, 4, sl, 0, NULL);
    }
    return t;
}

static hc_status replace(q_ctx *c, int i, hc_tensor *y) { return hc_rw_replace(c, i, y); }

/* round half to even, + zp, clamped to out's range, cast: q in f32 (f64 when wide is). */
static hc_tensor *requantize(q_ctx *c, hc_tensor *q, hc_tensor *zp, hc_dtype out) {
    if (!q) return NULL;
    hc_dtype acc = q->dtype == HC_F64 ? HC_F64 : HC_F32;
    q = cast(c, unary(c, HC_OPK_ROUND, q), acc);
    if (zp) q = bin(c, HC_OPK_ADD, q, cast(c, zp, acc));
    double lo, hi;
    hc_quant_range(out, &lo, &hi);
    return cast(c, clamp(c, q, lo, hi), out);
}

static hc_status lower_quantize(q_ctx *c) {
    hc_quant_spec s;
    if (hc_quant_parse(c->n, &s, c->err)) return c->err->status;
    hc_tensor *x = c->n->inputs[0], *sc = c->n->inputs[1];
    hc_tensor *zp = c->n->ninputs > 2 ? c->n->inputs[2] : NULL;
    hc_tensor *q = bin(c, HC_OPK_DIV, cast(c, x, s.compute), cast(c, bcast(c, sc, x, &s), s.compute));
    return replace(c, 0, requantize(c, q, zp ? bcast(c, zp, x, &s) : NULL, s.out));
}

static hc_status lower_dequantize(q_ctx *c) {
    hc_quant_spec s;
    if (hc_quant_parse(c->n, &s, c->err)) return c->err->status;
    hc_tensor *x = c->n->inputs[0], *sc = c->n->inputs[1];
    hc_tensor *zp = c->n->ninputs > 2 ? c->n->inputs[2] : NULL;
    hc_tensor *dx = cast(c, x, HC_F32);
    if (zp) dx = bin(c, HC_OPK_SUB, dx, cast(c, bcast(c, zp, x, &s), HC_F32));
    hc_dtype mt = sc->dtype == HC_F64 ? HC_F64 : HC_F32; /* numpy: f32 * scale's type */
    hc_tensor *y = bin(c, HC_OPK_MUL, cast(c, dx, mt), cast(c, bcast(c, sc, x, &s), mt));
    return replace(c, 0, cast(c, y, s.out));
}

static hc_tensor *reduce_all(q_ctx *c, hc_op_kind op, hc_tensor *x) {
    hc_attr keep = {.name = "keepdims", .kind = HC_ATTR_INT, .i = 0};
    return emit(c, op, 1, &x, 1, &keep);
}

static hc_status lower_dynamic(q_ctx *c) {
    hc_tensor *x = c->n->inputs[0];
    hc_tensor *mx = bin(c, HC_OPK_MAX, reduce_all(c, HC_OPK_REDUCE_MAX, x), num(c, HC_F32, 0));
    hc_tensor *mn = bin(c, HC_OPK_MIN, reduce_all(c, HC_OPK_REDUCE_MIN, x), num(c, HC_F32, 0));
    hc_tensor *w[3] = {bin(c, HC_OPK_EQUAL, mx, mn), num(c, HC_F32, 1), bin(c, HC_OPK_SUB, mx, mn)};
    hc_tensor *scale = bin(c, HC_OPK_DIV, emit(c, HC_OPK_WHERE, 3, w, 0, NULL), num(c, HC_F32, 255));
    hc_tensor *zp = bin(c, HC_OPK_SUB, num(c, HC_F32, 0), bin(c, HC_OPK_DIV, mn, scale));
    zp = unary(c, HC_OPK_ROUND, clamp(c, zp, 0, 255));
    hc_tensor *y = requantize(c, bin(c, HC_OPK_DIV, x, scale), zp, HC_U8);
    if (replace(c, 0, y) || replace(c, 1, scale) || replace(c, 2, cast(c, zp, HC_U8)))
        return c->err->status;
    return HC_OK;
}

/* i32(t) - zp, zp laid out for a matrix operand (per row of A: [M] -> [M, 1]). */
static hc_tensor *centered(q_ctx *c, hc_tensor *t, hc_tensor *zp, bool per_row) {
    hc_tensor *v = cast(c, t, HC_I32);
    if (!zp) return v;
    hc_tensor *z = cast(c, zp, HC_I32);
    if (hc_tensor_numel(zp) == 1) z = reshape(c, z, 0, NULL);
    else if (zp->ndim == 1 && per_row) z = reshape(c, z, 2, (int64_t[]){zp->shape[0], 1});
    return bin(c, HC_OPK_SUB, v, z);
}

static hc_tensor *in_or_null(const hc_node *n, int i) { return i < n->ninputs ? n->inputs[i] : NULL; }

/* A matrix operand's scale laid out like its zero point. */
static hc_tensor *mm_scale(q_ctx *c, hc_tensor *s, bool per_row) {
    if (hc_tensor_numel(s) == 1) return reshape(c, s, 0, NULL);
    if (s->ndim == 1 && per_row) return reshape(c, s, 2, (int64_t[]){s->shape[0], 1});
    return s;
}

static hc_status lower_matmul_integer(q_ctx *c) {
    const hc_node *n = c->n;
    hc_tensor *a = centered(c, n->inputs[0], in_or_null(n, 2), true);
    hc_tensor *b = centered(c, n->inputs[1], in_or_null(n, 3), false);
    return replace(c, 0, bin(c, HC_OPK_MATMUL, a, b));
}

static hc_status lower_qlinear_matmul(q_ctx *c) {
    const hc_node *n = c->n;
    hc_tensor *a = centered(c, n->inputs[0], n->inputs[2], true);
    hc_tensor *b = centered(c, n->inputs[3], n->inputs[5], false);
    hc_tensor *acc = bin(c, HC_OPK_MATMUL, a, b);
    hc_tensor *f = bin(c, HC_OPK_DIV,
                       bin(c, HC_OPK_MUL, mm_scale(c, n->inputs[1], true), mm_scale(c, n->inputs[4], false)),
                       reshape(c, n->inputs[6], 0, NULL));
    hc_tensor *d = bin(c, HC_OPK_MUL, cast(c, acc, HC_F64), cast(c, f, HC_F64));
    hc_tensor *yzp = reshape(c, n->inputs[7], 0, NULL);
    return replace(c, 0, requantize(c, d, yzp, yzp ? yzp->dtype : HC_U8));
}

/* The largest |v - zp| over constant t (its zero point zp constant or absent, per output
 * channel when 1-D); `dflt` when either is not constant. */
static double max_centered(const hc_tensor *t, const hc_tensor *zp, double dflt) {
    if (!t->data || (zp && !zp->data)) return dflt;
    int64_t n = hc_tensor_numel(t), per = t->ndim && t->shape[0] ? n / t->shape[0] : 1;
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double z = !zp ? 0 : hc_tensor_numel(zp) == 1 ? hc_tensor_const_at(zp, 0)
                                                     : hc_tensor_const_at(zp, i / per);
        m = fmax(m, fabs(hc_tensor_const_at(t, i) - z));
    }
    return m;
}

/* The conv of centered x and w (+ bias) in f32 when exact, else f64. */
static hc_tensor *conv_exact(q_ctx *c, int xi, int xzi, int wi, int wzi, int bi) {
    const hc_node *n = c->n;
    hc_tensor *x = n->inputs[xi], *w = n->inputs[wi];
    hc_tensor *xz = in_or_null(n, xzi), *wz = in_or_null(n, wzi), *b = bi >= 0 ? in_or_null(n, bi) : NULL;
    double k = 1;
    for (int d = 1; d < w->ndim; d++) k *= (double)w->shape[d]; /* C / group * kernel */
    double bound = k * 255.0 * max_centered(w, wz, 255.0);
    if (b) bound += b->data ? max_centered(b, NULL, 0) : 2147483648.0;
    hc_dtype ct = bound < 16777216.0 ? HC_F32 : HC_F64;
    hc_tensor *xc = cast(c, x, HC_I32), *wc = cast(c, w, HC_I32);
    if (xz) xc = bin(c, HC_OPK_SUB, xc, reshape(c, cast(c, xz, HC_I32), 0, NULL));
    if (wz) {
        hc_tensor *z = cast(c, wz, HC_I32);
        if (hc_tensor_numel(wz) == 1) z = reshape(c, z, 0, NULL);
        else {
            int64_t shape[HC_MAX_DIMS] = {wz->shape[0]};
            for (int d = 1; d < w->ndim; d++) shape[d] = 1;
            z = reshape(c, z, w->ndim, shape);
        }
        wc = bin(c, HC_OPK_SUB, wc, z);
    }
    hc_tensor *in[3] = {cast(c, xc, ct), cast(c, wc, ct), b ? cast(c, b, ct) : NULL};
    if (!in[0] || !in[1] || (b && !in[2])) return NULL;
    return emit(c, HC_OPK_CONV, b ? 3 : 2, in, n->nattrs, n->attrs);
}

static hc_status lower_conv_integer(q_ctx *c) {
    return replace(c, 0, cast(c, conv_exact(c, 0, 2, 1, 3, -1), HC_I32));
}

static hc_status lower_qlinear_conv(q_ctx *c) {
    const hc_node *n = c->n;
    hc_tensor *acc = conv_exact(c, 0, 2, 3, 5, 8);
    if (!acc) return c->err->status ? c->err->status : HC_ERR_INVALID;
    hc_tensor *ws = n->inputs[4];
    if (hc_tensor_numel(ws) == 1) ws = reshape(c, ws, 0, NULL);
    else { /* per output channel: [M] -> [1, M, 1, ...] */
        int64_t shape[HC_MAX_DIMS] = {1, ws->shape[0]};
        for (int d = 2; d < acc->ndim; d++) shape[d] = 1;
        ws = reshape(c, ws, acc->ndim, shape);
    }
    hc_tensor *f = bin(c, HC_OPK_DIV, bin(c, HC_OPK_MUL, reshape(c, n->inputs[1], 0, NULL), ws),
                       reshape(c, n->inputs[6], 0, NULL));
    hc_tensor *d = bin(c, HC_OPK_MUL, cast(c, acc, HC_F64), cast(c, f, HC_F64));
    hc_tensor *yzp = reshape(c, n->inputs[7], 0, NULL);
    return replace(c, 0, requantize(c, d, yzp, n->inputs[7]->dtype));
}

static hc_status lower_one(hc_graph *g, hc_node *n, hc_error *err) {
    q_ctx c = {.g = g, .n = n, .err = err};
    switch (n->op) {
    case HC_OPK_QUANTIZE_LINEAR: return lower_quantize(&c);
    case HC_OPK_DEQUANTIZE_LINEAR: return lower_dequantize(&c);
    case HC_OPK_DYNAMIC_QUANTIZE_LINEAR: return lower_dynamic(&c);
    case HC_OPK_MATMUL_INTEGER: return lower_matmul_integer(&c);
    case HC_OPK_QLINEAR_MATMUL: return lower_qlinear_matmul(&c);
    case HC_OPK_CONV_INTEGER: return lower_conv_integer(&c);
    case HC_OPK_QLINEAR_CONV: return lower_qlinear_conv(&c);
    default: return HC_OK;
    }
}

static bool is_quant(const hc_node *n) { return hc_op_is_quantized(n->op); }

hc_status hc_pass_lower_quant(hc_graph *g, hc_error *err) {
    return hc_pass_lower_each(g, is_quant, lower_one, err);
}
