/* nn_rnn.c — RNN, GRU and LSTM: attributes and shapes (rnn.h). These ops have no Task
 * of their own: the lower_rnn pass (src/passes/rnn.c) unrolls the recurrence over the
 * static sequence length into MatMul and elementwise ops before anything evaluates or
 * schedules them. */
#include <string.h>
#include <strings.h>

#include "graph/ops/nn_internal.h"
#include "graph/ops/rnn.h"

int hc_rnn_max_steps = HC_RNN_MAX_STEPS;

bool hc_op_is_recurrent(hc_op_kind op) {
    return op == HC_OPK_RNN || op == HC_OPK_GRU || op == HC_OPK_LSTM;
}

/* The activations a recurrent node may name, and the op each becomes. Those that take
 * alpha/beta (HardSigmoid, LeakyRelu, Elu, ThresholdedRelu) run with their operator's
 * defaults; explicit activation_alpha/beta are refused in hc_rnn_parse. Affine and
 * ScaledTanh have no ONNX operator defaults and are refused. */
static const struct {
    const char *name;
    hc_op_kind op;
} acts[] = {
    {"Sigmoid", HC_OPK_SIGMOID},   {"Tanh", HC_OPK_TANH},
    {"Relu", HC_OPK_RELU},         {"HardSigmoid", HC_OPK_HARD_SIGMOID},
    {"LeakyRelu", HC_OPK_LEAKY_RELU}, {"Elu", HC_OPK_ELU},
    {"Softsign", HC_OPK_SOFTSIGN}, {"Softplus", HC_OPK_SOFTPLUS},
    {"ThresholdedRelu", HC_OPK_THRESHOLDED_RELU},
};

static hc_status parse_acts(const hc_node *n, hc_rnn_spec *s, hc_error *err) {
    static const hc_op_kind dflt[3][3] = {
        {HC_OPK_TANH}, {HC_OPK_SIGMOID, HC_OPK_TANH}, {HC_OPK_SIGMOID, HC_OPK_TANH, HC_OPK_TANH}};
    s->nact = n->op == HC_OPK_RNN ? 1 : n->op == HC_OPK_GRU ? 2 : 3;
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < s->nact; k++) s->act[d][k] = dflt[s->nact - 1][k];
    if (hc_node_attr(n, "activation_alpha") || hc_node_attr(n, "activation_beta"))
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "activation_alpha / activation_beta "
                            "are not supported (activations run with their defaults)");
    const hc_attr *a = hc_node_attr(n, "activations");
    if (!a) return HC_OK;
    if (a->kind != HC_ATTR_STRINGS)
        return hc_node_fail(n, HC_ERR_INVALID, err, "activations must be a list of strings");
    /* one list per direction; a bidirectional node may give one list for both */
    if (a->n != s->nact * s->ndir && a->n != s->nact)
        return hc_node_fail(n, HC_ERR_INVALID, err, "activations has %d names, expected %d",
                            a->n, s->nact * s->ndir);
    for (int d = 0; d < s->ndir; d++)
        for (int k = 0; k < s->nact; k++) {
            const char *name = a->strings[(a->n == s->nact ? 0 : d * s->nact) + k];
            size_t i = 0;
            while (i < sizeof acts / sizeof *acts && strcasecmp(acts[i].name, name ? name : ""))
                i++;
            if (i == sizeof acts / sizeof *acts)
                return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "activation '%s' is not "
                                    "supported (Sigmoid, Tanh, Relu, HardSigmoid, LeakyRelu, Elu, "
                                    "Softsign, Softplus, ThresholdedRelu are)", name ? name : "");
            s->act[d][k] = acts[i].op;
        }
    return HC_OK;
}

/* Input i, when present, has exactly this shape and X's dtype. */
static hc_status need_shape(const hc_node *n, int i, const char *what, int ndim,
                            const int64_t *shape, hc_error *err) {
    const hc_tensor *t = hc_nn_in(n, i), *x = hc_nn_in(n, 0);
    if (!t) return HC_OK;
    bool ok = t->ndim == ndim && t->dtype == x->dtype;
    for (int k = 0; ok && k < ndim; k++) ok = t->shape[k] == shape[k];
    if (ok) return HC_OK;
    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_shape(&sb, ndim, shape);
    hc_status st = hc_node_fail(n, HC_ERR_INVALID, err, "%s ('%s') must have shape %s and "
                                "dtype %s", what, t->name, sb.buf ? sb.buf : "",
                                hc_dtype_name(x->dtype));
    hc_sb_free(&sb);
    return st;
}

/* sequence_lens: only constant and equal to seq_length everywhere (the unrolled graph has
 * one length). A runtime value is asked for as a constant (the test runner binds it). */
static hc_status check_seq_lens(const hc_node *n, const hc_rnn_spec *s, hc_error *err) {
    const hc_tensor *t = hc_nn_in(n, HC_RNN_SEQ_LENS);
    if (!t) return HC_OK;
    if (t->ndim != 1 || t->shape[0] != s->batch || (t->dtype != HC_I32 && t->dtype != HC_I64))
        return hc_node_fail(n, HC_ERR_INVALID, err, "sequence_lens ('%s') must be an int32 "
                            "tensor of shape [%lld]", t->name, (long long)s->batch);
    if (!t->data) return hc_node_need_const(n, HC_RNN_SEQ_LENS, err);
    for (int64_t b = 0; b < s->batch; b++) {
        int64_t v = 0;
        hc_tensor_const_ints(t, &v, 1);
        v = t->dtype == HC_I32 ? ((const int32_t *)t->data)[b] : ((const int64_t *)t->data)[b];
        if (v != s->seq)
            return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "sequence_lens[%lld] = %lld: "
                                "sequences shorter than seq_length (%lld) are not supported",
                                (long long)b, (long long)v, (long long)s->seq);
    }
    return HC_OK;
}

hc_status hc_rnn_parse(const hc_node *n, hc_rnn_spec *s, hc_error *err) {
    memset(s, 0, sizeof *s);
    s->gates = n->op == HC_OPK_RNN ? 1 : n->op == HC_OPK_GRU ? 3 : 4;
    const char *dir = hc_node_attr_string(n, "direction", "forward");
    if (strcmp(dir, "forward") == 0) s->ndir = 1;
    else if (strcmp(dir, "reverse") == 0) s->ndir = 1, s->reverse = true;
    else if (strcmp(dir, "bidirectional") == 0) s->ndir = 2;
    else return hc_node_fail(n, HC_ERR_INVALID, err, "direction '%s' is not forward, reverse "
                             "or bidirectional", dir);
    int64_t layout = hc_node_attr_int(n, "layout", 0);
    if (layout != 0 && layout != 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "layout %lld is not 0 or 1",
                            (long long)layout);
    if (layout == 1 && n->opset < 14)
        return hc_node_fail(n, HC_ERR_INVALID, err, "layout exists from opset 14 on");
    s->layout = (int)layout;
    if (hc_node_attr_int(n, "input_forget", 0) != 0)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "input_forget=1 (coupled input and "
                            "forget gates) is not supported");
    const hc_attr *clip = hc_node_attr(n, "clip");
    if (clip) {
        s->has_clip = true;
        s->clip = hc_node_attr_float(n, "clip", 0);
        if (!(s->clip > 0))
            return hc_node_fail(n, HC_ERR_INVALID, err, "clip must be positive");
    }
    s->linear_before_reset = n->op == HC_OPK_GRU && hc_node_attr_int(n, "linear_before_reset", 0);
    if (n->ninputs > HC_RNN_INIT_C && n->op != HC_OPK_LSTM)
        return hc_node_fail(n, HC_ERR_INVALID, err, "has %d inputs, at most 6 expected",
                            n->ninputs);
    for (int i = 0; i < 3; i++)
        if (!hc_nn_in(n, i))
            return hc_node_fail(n, HC_ERR_INVALID, err, "input %d (X, W, R) is required", i);
    const hc_tensor *x = hc_nn_in(n, 0), *w = hc_nn_in(n, 1), *r = hc_nn_in(n, 2);
    if (hc_nn_need_float(n, 0, err)) return err->status;
    if (x->ndim != 3 || w->ndim != 3 || r->ndim != 3)
        return hc_node_fail(n, HC_ERR_INVALID, err, "X, W and R must have rank 3");
    s->seq = x->shape[s->layout ? 1 : 0];
    s->batch = x->shape[s->layout ? 0 : 1];
    s->input = x->shape[2];
    s->hidden = r->shape[2];
    int64_t hs = hc_node_attr_int(n, "hidden_size", s->hidden);
    if (hs != s->hidden || s->hidden <= 0)
        return hc_node_fail(n, HC_ERR_INVALID, err, "hidden_size %lld does not match R ('%s', "
                            "last dimension %lld)", (long long)hs, r->name,
                            (long long)s->hidden);
    if (s->seq <= 0 || s->batch <= 0 || s->input <= 0)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "X ('%s') needs static positive "
                            "sequence, batch and input sizes", x->name);
    /* Unrolled over time (src/passes/rnn.c): about 15 nodes per step and direction. A
     * bound keeps a hostile sequence length from making millions of nodes. */
    if (s->seq * s->ndir > hc_rnn_max_steps)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "sequence length %lld x %d direction(s): "
                            "recurrent ops are unrolled over time, at most %d steps",
                            (long long)s->seq, s->ndir, hc_rnn_max_steps);
    int64_t gh = s->gates * s->hidden, d = s->ndir, h = s->hidden, b = s->batch;
    int64_t wsh[3] = {d, gh, s->input}, rsh[3] = {d, gh, h}, bsh[2] = {d, 2 * gh};
    int64_t st_sh[3] = {s->layout ? b : d, s->layout ? d : b, h}, psh[2] = {d, 3 * h};
    if (need_shape(n, 1, "W", 3, wsh, err) || need_shape(n, 2, "R", 3, rsh, err) ||
        need_shape(n, HC_RNN_B, "B", 2, bsh, err) ||
        need_shape(n, HC_RNN_INIT_H, "initial_h", 3, st_sh, err) ||
        need_shape(n, HC_RNN_INIT_C, "initial_c", 3, st_sh, err) ||
        need_shape(n, HC_RNN_P, "P", 2, psh, err))
        return err->status;
    if (parse_acts(n, s, err) || check_seq_lens(n, s, err)) return err->status;
    return HC_OK;
}

hc_status hc_nn_infer_rnn(hc_node *n, hc_error *err) {
    hc_rnn_spec s;
    if (hc_rnn_parse(n, &s, err)) return err->status;
    hc_dtype dt = n->inputs[0]->dtype;
    int64_t y[4] = {s.seq, s.ndir, s.batch, s.hidden}, st[3] = {s.ndir, s.batch, s.hidden};
    if (s.layout) {
        int64_t yl[4] = {s.batch, s.seq, s.ndir, s.hidden}, stl[3] = {s.batch, s.ndir, s.hidden};
        memcpy(y, yl, sizeof y);
        memcpy(st, stl, sizeof st);
    }
    if (n->noutputs > 2 && n->op != HC_OPK_LSTM)
        return hc_node_fail(n, HC_ERR_INVALID, err, "has %d outputs, at most 2 expected",
                            n->noutputs);
    if (hc_nn_out_present(n, 0)) hc_node_set_output(n, 0, dt, 4, y);
    for (int i = 1; i < 3; i++)
        if (hc_nn_out_present(n, i)) hc_node_set_output(n, i, dt, 3, st);
    return HC_OK;
}

hc_task *hc_nn_task_rnn(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)a;
    hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "has no Task of its own: the lower_rnn pass "
                 "(hc_graph_optimize) unrolls it into MatMul and elementwise ops first");
    return NULL;
}
