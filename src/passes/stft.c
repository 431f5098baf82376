/* stft.c — the lower_stft pass: STFT (17) as the frames of the signal (a Gather with the
 * constant indices f * step + n, [F, L]), times the window (when given), and a DFT of
 * length L along the frame axis (onesided as the STFT's): the ONNX reference's
 * computation, and DFT's Task does the transform on every target. */
#include "graph/ops/nn_internal.h"
#include "passes/pass_util.h"

static bool is_stft(const hc_node *n) { return n->op == HC_OPK_STFT; }

static hc_status lower_one(hc_graph *g, hc_node *n, hc_error *err) {
    hc_rewrite c = {.g = g, .n = n, .err = err};
    int64_t step, len, frames;
    hc_status st = hc_nn_stft_params(n, &step, &len, &frames, err);
    if (st) return st;
    hc_tensor *x = n->inputs[0], *w = n->ninputs > 2 ? n->inputs[2] : NULL;
    if (frames * len > ((int64_t)1 << 31))
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "%lld frames of %lld samples",
                            (long long)frames, (long long)len);
    int64_t shape[2] = {frames, len};
    hc_tensor *idx = hc_graph_constant(g, hc_rw_fresh(&c, "frames"), HC_I64, 2, shape, NULL);
    int64_t *iv = idx->data;
    for (int64_t f = 0; f < frames; f++)
        for (int64_t k = 0; k < len; k++) iv[f * len + k] = f * step + k;
    hc_attr ax1 = {.name = "axis", .kind = HC_ATTR_INT, .i = 1};
    hc_tensor *gin[2] = {x, idx};
    hc_tensor *fr = hc_rw_emit(&c, HC_OPK_GATHER, 2, gin, 1, &ax1); /* [B, F, L, C] */
    if (w) {
        int64_t ws[4] = {1, 1, len, 1};
        hc_tensor *rin[2] = {w, hc_pass_const_i64(g, hc_rw_fresh(&c, "wshape"), 4, ws)};
        hc_tensor *wr = hc_rw_emit(&c, HC_OPK_RESHAPE, 2, rin, 0, NULL);
        hc_tensor *min[2] = {fr, wr};
        fr = hc_rw_emit(&c, HC_OPK_MUL, 2, min, 0, NULL);
    }
    /* DFT of length L along axis 2 (an attribute before opset 20, an input from 20) */
    int64_t axis = 2;
    hc_attr da[2] = {{.name = "onesided", .kind = HC_ATTR_INT, .i = hc_node_attr_int(n, "onesided", 1)},
                     {.name = "axis", .kind = HC_ATTR_INT, .i = axis}};
    hc_tensor *din[3] = {fr, hc_pass_const_i64(g, hc_rw_fresh(&c, "len"), 1, &len),
                         hc_pass_const_i64(g, hc_rw_fresh(&c, "axis"), 1, &axis)};
    hc_tensor *y = n->opset >= 20 ? hc_rw_emit(&c, HC_OPK_DFT, 3, din, 1, da)
                                  : hc_rw_emit(&c, HC_OPK_DFT, 2, din, 2, da);
    return hc_rw_replace(&c, 0, y);
}

hc_status hc_pass_lower_stft(hc_graph *g, hc_error *err) {
    return hc_pass_lower_each(g, is_stft, lower_one, err);
}
