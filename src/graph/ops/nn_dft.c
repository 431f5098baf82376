/* nn_dft.c — DFT (17, 20): the discrete Fourier transform along one axis.
 *
 * X [.., N, .., C] (C = 1: real, C = 2: complex, the last dim), along `axis` (17: the
 * attribute, default 1; 20: the optional input, default -2; both must name a signal dim,
 * [-r, -2] or [0, r-2]). dft_length L (the optional input, default N; 2 (N - 1) for the
 * IRFFT) zero-pads or truncates the signal. As the ONNX reference (numpy's fft, ifft,
 * rfft, irfft):
 *   forward    Y[k] = sum_{n < min(N, L)} x[n] e^{-2 pi i k n / L}, k < L, complex out;
 *   onesided   the same for k <= L / 2 (real input only);
 *   inverse    Y[t] = 1/L sum_{n < min(N, L)} x[n] e^{+2 pi i t n / L}, complex out;
 *   inverse + onesided (IRFFT, complex input only): the half spectrum's Hermitian
 *              extension, a real output of length L:
 *              Y[t] = 1/L sum_{k < min(N, L/2 + 1)} w_k Re(x[k] e^{2 pi i k t / L}),
 *              w_k = 1 for k = 0 and k = L/2, else 2 (imaginary parts of those two
 *              ignored, as numpy's c2r transform does).
 * One Task: a table of the L twiddles cos/sin(2 pi j / L) in f64 (materialized: every
 * output reads it N times), and each output element a sum over the signal that reads
 * the twiddle at (k n) mod L (exact integer reduction of the angle), accumulated in f64
 * and cast to X's type at the end. O(N) per output element, O(L N) per signal: a direct
 * transform, not an FFT. dft_length and axis must be compile-time constants. */
#include <math.h>
#include <string.h>

#include "graph/ops/nn_internal.h"

typedef struct dft_p {
    int axis;        /* normalized */
    int64_t n_in;    /* X's length along axis */
    int64_t len;     /* L */
    int64_t n_out;   /* Y's length along axis */
    int64_t terms;   /* the reduction's extent */
    bool inverse, onesided, cplx; /* cplx: X is complex */
} dft_p;

/* One integer of constant input i (a scalar or a 1-element tensor). */
static hc_status const_int_input(const hc_node *n, int i, const char *what, int64_t *v,
                                 hc_error *err) {
    const hc_tensor *t = hc_nn_in(n, i);
    if (!hc_dtype_is_int(t->dtype) || hc_tensor_numel(t) != 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "%s ('%s') must be one integer, got %s with "
                            "%lld elements", what, t->name, hc_dtype_name(t->dtype),
                            (long long)hc_tensor_numel(t));
    if (!t->data) return hc_node_need_const(n, i, err);
    hc_tensor_const_ints(t, v, 1);
    return HC_OK;
}

static hc_status dft_params(const hc_node *n, dft_p *p, hc_error *err) {
    const hc_tensor *x = hc_nn_in(n, 0);
    if (!x) return hc_node_fail(n, HC_ERR_INVALID, err, "input 0 is missing");
    hc_status st = hc_nn_need_float(n, 0, err);
    if (st || (st = hc_nn_need_rank(n, 0, 2, err))) return st;
    int r = x->ndim;
    int64_t c = x->shape[r - 1];
    if (c != 1 && c != 2)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input 0 ('%s') must end in a dim of 1 (real) "
                            "or 2 (complex), not %lld", x->name, (long long)c);
    p->cplx = c == 2;
    p->inverse = hc_node_attr_int(n, "inverse", 0) != 0;
    p->onesided = hc_node_attr_int(n, "onesided", 0) != 0;
    int64_t axis = n->opset >= 20 ? -2 : hc_node_attr_int(n, "axis", 1);
    if (n->opset >= 20 && hc_nn_in(n, 2) && (st = const_int_input(n, 2, "axis", &axis, err)))
        return st;
    if (axis < -r || axis == -1 || axis > r - 2)
        return hc_node_fail(n, HC_ERR_INVALID, err, "axis %lld is not a signal dim of input 0 "
                            "('%s', rank %d): it must be in [%d, -2] or [0, %d]", (long long)axis,
                            x->name, r, -r, r - 2);
    p->axis = (int)(axis < 0 ? axis + r : axis);
    p->n_in = x->shape[p->axis];
    bool irfft = p->inverse && p->onesided;
    if (p->onesided && !p->inverse && p->cplx)
        return hc_node_fail(n, HC_ERR_INVALID, err, "onesided=1 needs a real input 0 ('%s' is "
                            "complex)", x->name);
    if (irfft && !p->cplx)
        return hc_node_fail(n, HC_ERR_INVALID, err, "onesided=1 with inverse=1 (IRFFT) needs a "
                            "complex input 0 ('%s' is real)", x->name);
    p->len = irfft ? 2 * (p->n_in - 1) : p->n_in;
    if (hc_nn_in(n, 1) && (st = const_int_input(n, 1, "dft_length", &p->len, err))) return st;
    if (p->len < 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "dft_length %lld must be positive%s",
                            (long long)p->len, hc_nn_in(n, 1) ? "" : " (the IRFFT's default "
                            "2 * (N - 1) of a length-1 input)");
    p->n_out = p->onesided && !p->inverse ? p->len / 2 + 1 : p->len;
    int64_t used = irfft ? p->len / 2 + 1 : p->len; /* input bins the transform reads */
    p->terms = p->n_in < used ? p->n_in : used;
    return HC_OK;
}

hc_status hc_nn_infer_dft(hc_node *n, hc_error *err) {
    dft_p p;
    if (dft_params(n, &p, err)) return err->status;
    const hc_tensor *x = n->inputs[0];
    int64_t shape[HC_MAX_DIMS];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[p.axis] = p.n_out;
    shape[x->ndim - 1] = p.inverse && p.onesided ? 1 : 2;
    hc_node_set_output(n, 0, x->dtype, x->ndim, shape);
    return HC_OK;
}

typedef struct dft_ctx {
    dft_p p;
    const hc_tnode *x, *tw;
    hc_dtype out;
} dft_ctx;

/* tw[j, 0] = cos(2 pi j / L), tw[j, 1] = sin(2 pi j / L) */
static hc_expr *twiddle_fn(hc_arena *a, hc_var *const *axes, void *ctx) {
    const dft_ctx *c = ctx;
    const hc_type *f64 = hc_type_scalar(HC_F64);
    hc_expr *ang = hc_mul(a, hc_cast(a, f64, hc_ref(a, axes[0])),
                          hc_f64(a, 6.283185307179586476925286766559 / (double)c->p.len));
    return hc_select(a, hc_eq(a, hc_ref(a, axes[1]), hc_int(a, 0)), hc_math(a, HC_PRIM_COS, ang, NULL),
                     hc_math(a, HC_PRIM_SIN, ang, NULL));
}

static hc_expr *dft_fn(hc_arena *a, hc_var *const *axes, void *ctx) {
    const dft_ctx *c = ctx;
    const dft_p *p = &c->p;
    int r = c->x->ndim;
    const hc_type *f64 = hc_type_scalar(HC_F64);
    hc_var *nv = hc_axis(a, "n");
    hc_expr *idx[HC_MAX_DIMS];
    for (int d = 0; d < r - 1; d++) idx[d] = hc_ref(a, d == p->axis ? nv : axes[d]);
    idx[r - 1] = hc_int(a, 0);
    hc_expr *xr = hc_cast(a, f64, hc_at(a, c->x, idx)), *xi = NULL;
    if (p->cplx) {
        hc_expr *ii[HC_MAX_DIMS];
        memcpy(ii, idx, sizeof(hc_expr *) * (size_t)r);
        ii[r - 1] = hc_int(a, 1);
        xi = hc_cast(a, f64, hc_at(a, c->x, ii));
    }
    hc_expr *n = hc_ref(a, nv), *k = hc_ref(a, axes[p->axis]);
    hc_expr *j = hc_mod(a, hc_mul(a, k, n), hc_int(a, p->len));
    hc_expr *cs = hc_at(a, c->tw, (hc_expr *[]){j, hc_int(a, 0)});
    hc_expr *sn = hc_at(a, c->tw, (hc_expr *[]){j, hc_int(a, 1)});
    hc_expr *term;
    if (p->inverse && p->onesided) { /* w_n Re(x[n] e^{i theta}) */
        hc_expr *re = hc_sub(a, hc_mul(a, xr, cs), hc_mul(a, xi, sn));
        hc_expr *single = hc_binary(a, HC_OP_OR, hc_eq(a, n, hc_int(a, 0)),
                                    hc_eq(a, hc_mul(a, n, hc_int(a, 2)), hc_int(a, p->len)));
        term = hc_mul(a, hc_select(a, single, hc_f64(a, 1), hc_f64(a, 2)), re);
    } else { /* x[n] e^{+-i theta}: (xr + i xi)(cos +- i sin) */
        bool inv = p->inverse;
        hc_expr *re = hc_mul(a, xr, cs), *im = hc_mul(a, xr, sn);
        if (!inv) im = hc_unary(a, HC_OP_NEG, im);
        if (xi) {
            re = hc_binary(a, inv ? HC_OP_SUB : HC_OP_ADD, re, hc_mul(a, xi, sn));
            im = hc_add(a, im, hc_mul(a, xi, cs));
        }
        term = hc_select(a, hc_eq(a, hc_ref(a, axes[r - 1]), hc_int(a, 0)), re, im);
    }
    hc_expr *s = hc_reduce(a, HC_REDUCE_SUM, 1, &nv, &p->terms, term);
    if (p->inverse) s = hc_div(a, s, hc_f64(a, (double)p->len));
    return c->out == HC_F64 ? s : hc_cast(a, hc_type_scalar(c->out), s);
}

hc_task *hc_nn_task_dft(hc_arena *a, const hc_node *n, hc_error *err) {
    dft_ctx c = {0};
    if (dft_params(n, &c.p, err)) return NULL;
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    const hc_tensor *y = n->outputs[0];
    c.x = in[0];
    c.out = y->dtype;
    c.tw = hc_compute(a, hc_arena_printf(a, "%s_twiddle", y->name), 2,
                      (int64_t[]){c.p.len, 2}, twiddle_fn, &c);
    hc_tnode *out = hc_compute(a, y->name, y->ndim, y->shape, dft_fn, &c);
    return hc_node_task(a, n, nin, in, 1, &out);
}

/* ---- STFT (17) ------------------------------------------------------------------------ */
/* signal [B, S, 1 or 2], frame_step (a constant), window [L] (optional), frame_length (a
 * constant, optional; L when both are given): Y [B, F, K, 2] with F = (S - L) / step + 1
 * frames and K = L / 2 + 1 bins (onesided, the default; real signals only) or L:
 *   Y[b, f, k] = sum_{n < L} x[b, f * step + n] w[n] e^{-2 pi i k n / L}
 * Lowered (passes/stft.c) into a Gather of the frames, the window's Mul and a DFT. */
hc_status hc_nn_stft_params(const hc_node *n, int64_t *step, int64_t *len, int64_t *frames,
                            hc_error *err) {
    const hc_tensor *x = hc_nn_in(n, 0), *w = hc_nn_in(n, 2);
    hc_status st = hc_nn_need_float(n, 0, err);
    if (st) return st;
    if (x->ndim != 3 || (x->shape[2] != 1 && x->shape[2] != 2))
        return hc_node_fail(n, HC_ERR_INVALID, err, "signal ('%s') must be [batch, length, 1 or "
                            "2], not of rank %d", x->name, x->ndim);
    if ((st = const_int_input(n, 1, "frame_step", step, err))) return st;
    if (*step < 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "frame_step %lld must be positive",
                            (long long)*step);
    *len = -1;
    if (w) {
        if (w->ndim != 1 || w->dtype != x->dtype)
            return hc_node_fail(n, HC_ERR_INVALID, err, "window ('%s') must be 1-D of the "
                                "signal's type", w->name);
        *len = w->shape[0];
    }
    if (hc_nn_in(n, 3)) {
        int64_t fl;
        if ((st = const_int_input(n, 3, "frame_length", &fl, err))) return st;
        if (*len >= 0 && fl != *len)
            return hc_node_fail(n, HC_ERR_INVALID, err, "frame_length %lld differs from the "
                                "window's %lld", (long long)fl, (long long)*len);
        *len = fl;
    }
    if (*len < 0)
        return hc_node_fail(n, HC_ERR_INVALID, err, "neither a window nor a frame_length");
    if (*len < 1 || *len > x->shape[1])
        return hc_node_fail(n, HC_ERR_INVALID, err, "frame length %lld is not in [1, %lld] (the "
                            "signal's length)", (long long)*len, (long long)x->shape[1]);
    if (hc_node_attr_int(n, "onesided", 1) && x->shape[2] == 2)
        return hc_node_fail(n, HC_ERR_INVALID, err, "onesided=1 needs a real signal");
    *frames = (x->shape[1] - *len) / *step + 1;
    return HC_OK;
}

hc_status hc_nn_infer_stft(hc_node *n, hc_error *err) {
    int64_t step = 0, len = 0, frames = 0;
    hc_status st = hc_nn_stft_params(n, &step, &len, &frames, err);
    if (st) return st;
    const hc_tensor *x = hc_nn_in(n, 0);
    int64_t bins = hc_node_attr_int(n, "onesided", 1) ? len / 2 + 1 : len;
    hc_node_set_output(n, 0, x->dtype, 4, (int64_t[]){x->shape[0], frames, bins, 2});
    return HC_OK;
}

hc_task *hc_nn_task_stft(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)a;
    hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "STFT has no Task of its own: the lower_stft pass "
                 "rewrites it into Gather, Mul and DFT first");
    return NULL;
}
