/* test_rnn.c — RNN, GRU and LSTM (src/graph/ops/nn_rnn.c, src/passes/rnn.c): one-node
 * graphs compiled through the whole pipeline (the recurrence unrolled into MatMuls through
 * the matmul template and elementwise ops) and run, against a plain C loop of ONNX's
 * equations; awkward sizes (hidden 1 and primes, sequence 1, batch 1 and 3), both layouts,
 * all directions, initial states, biases, peepholes, clip, linear_before_reset, weights
 * as constants and as graph inputs; and the refusals, which must name the node. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "test.h"

enum { K_RNN, K_GRU, K_LSTM };
enum { A_SIG, A_TANH, A_RELU };

typedef struct rcase {
    int kind, dir; /* dir: 0 forward, 1 reverse, 2 bidirectional */
    int layout;
    int S, B, I, H;
    bool bias, init, peep, lbr, w_input; /* w_input: W and R are graph inputs */
    double clip;                         /* 0: none */
    int acts[3];                         /* per direction (the same for both); -1: defaults */
} rcase;

static const char *act_name[] = {"Sigmoid", "Tanh", "Relu"};

static double act(int a, double x) {
    if (a == A_SIG) return 1 / (1 + exp(-x));
    if (a == A_TANH) return tanh(x);
    return x > 0 ? x : 0;
}

static int gates_of(int kind) { return kind == K_RNN ? 1 : kind == K_GRU ? 3 : 4; }

/* Plain loops of ONNX's equations; time-major index helpers per layout. */
typedef struct ref_io {
    const float *x, *w, *r, *b, *h0, *c0, *p;
    float *y, *yh, *yc;
} ref_io;

static void reference(const rcase *k, const int *acts, const ref_io *io) {
    int S = k->S, B = k->B, I = k->I, H = k->H, G = gates_of(k->kind), D = k->dir == 2 ? 2 : 1;
    double *h = calloc((size_t)(B * H), sizeof(double)), *c = calloc((size_t)(B * H), sizeof(double));
    double *g = calloc((size_t)(B * G * H), sizeof(double)), *hn = calloc((size_t)(B * H), sizeof(double));
    for (int d = 0; d < D; d++) {
        const float *w = io->w + (size_t)d * G * H * I, *r = io->r + (size_t)d * G * H * H;
        const float *wb = io->b ? io->b + (size_t)d * 2 * G * H : NULL, *rb = wb ? wb + G * H : NULL;
        const float *p = io->p ? io->p + (size_t)d * 3 * H : NULL;
        for (int bb = 0; bb < B; bb++)
            for (int j = 0; j < H; j++) {
                size_t si = k->layout ? ((size_t)bb * D + d) * H + j : ((size_t)d * B + bb) * H + j;
                h[bb * H + j] = io->h0 ? io->h0[si] : 0;
                c[bb * H + j] = io->c0 ? io->c0[si] : 0;
            }
        bool rev = k->dir == 1 || d == 1;
        for (int step = 0; step < S; step++) {
            int t = rev ? S - 1 - step : step;
            for (int bb = 0; bb < B; bb++) {
                const float *xt = io->x + (k->layout ? ((size_t)bb * S + t) * I : ((size_t)t * B + bb) * I);
                for (int q = 0; q < G * H; q++) { /* x W^T + Wb (+ h R^T + Rb, not GRU's h gate) */
                    double s = wb ? wb[q] : 0;
                    for (int i = 0; i < I; i++) s += xt[i] * w[(size_t)q * I + i];
                    bool inner = k->kind == K_GRU && q >= 2 * H; /* GRU's h gate: below */
                    if (!inner) {
                        s += rb ? rb[q] : 0;
                        for (int i = 0; i < H; i++) s += h[bb * H + i] * r[(size_t)q * H + i];
                    }
                    g[bb * G * H + q] = s;
                }
            }
            double cl = k->clip;
#define CL(v) (cl > 0 ? fmin(fmax((v), -cl), cl) : (v))
            for (int bb = 0; bb < B; bb++) {
                double *gg = g + bb * G * H, *hb = h + bb * H, *cb = c + bb * H;
                for (int j = 0; j < H; j++) {
                    if (k->kind == K_RNN) {
                        hn[bb * H + j] = act(acts[0], CL(gg[j]));
                    } else if (k->kind == K_LSTM) {
                        double gi = gg[j], go = gg[H + j], gf = gg[2 * H + j], gc = gg[3 * H + j];
                        if (p) gi += p[j] * cb[j], gf += p[2 * H + j] * cb[j];
                        double i = act(acts[0], CL(gi)), f = act(acts[0], CL(gf));
                        double cc = act(acts[1], CL(gc));
                        double cn = f * cb[j] + i * cc;
                        if (p) go += p[H + j] * cn;
                        double o = act(acts[0], CL(go));
                        hn[bb * H + j] = o * act(acts[2], cn);
                        gg[3 * H + j] = cn; /* c after the step (read below) */
                    } else {
                        double z = act(acts[0], CL(gg[j])), rr = act(acts[0], CL(gg[H + j]));
                        double lin = 0;
                        const float *rh = r + (size_t)(2 * H + j) * H;
                        if (k->lbr) {
                            for (int i = 0; i < H; i++) lin += hb[i] * rh[i];
                            lin = rr * (lin + (rb ? rb[2 * H + j] : 0));
                        } else { /* (r . H) R_h^T: r at the summed index */
                            for (int i = 0; i < H; i++)
                                lin += act(acts[0], CL(gg[H + i])) * hb[i] * rh[i];
                            lin += rb ? rb[2 * H + j] : 0;
                        }
                        double hh = act(acts[1], CL(gg[2 * H + j] + lin));
                        hn[bb * H + j] = (1 - z) * hh + z * hb[j];
                    }
                }
            }
#undef CL
            for (int bb = 0; bb < B; bb++)
                for (int j = 0; j < H; j++) {
                    h[bb * H + j] = hn[bb * H + j];
                    if (k->kind == K_LSTM) c[bb * H + j] = g[bb * G * H + 3 * H + j];
                    size_t yi = k->layout ? (((size_t)bb * S + t) * D + d) * H + j
                                          : (((size_t)t * D + d) * B + bb) * H + j;
                    io->y[yi] = (float)h[bb * H + j];
                }
        }
        for (int bb = 0; bb < B; bb++)
            for (int j = 0; j < H; j++) {
                size_t si = k->layout ? ((size_t)bb * D + d) * H + j : ((size_t)d * B + bb) * H + j;
                io->yh[si] = (float)h[bb * H + j];
                if (io->yc) io->yc[si] = (float)c[bb * H + j];
            }
    }
    free(h), free(c), free(g), free(hn);
}

static float *rand_vals(hc_rng *rng, int64_t n) {
    float *v = malloc(sizeof(float) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) v[i] = (float)hc_rng_uniform(rng, -1, 1);
    return v;
}

static int64_t numel(int nd, const int64_t *s) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= s[i];
    return n;
}

static void run_case(int ci, const rcase *k) {
    hc_rng rng = {(uint64_t)(100 + ci)};
    int S = k->S, B = k->B, I = k->I, H = k->H, G = gates_of(k->kind), D = k->dir == 2 ? 2 : 1;
    int nact = k->kind == K_RNN ? 1 : k->kind == K_GRU ? 2 : 3;
    static const int dflt[3][3] = {{A_TANH}, {A_SIG, A_TANH}, {A_SIG, A_TANH, A_TANH}};
    int acts[3];
    for (int i = 0; i < nact; i++) acts[i] = k->acts[0] < 0 ? dflt[nact - 1][i] : k->acts[i];
    int64_t xs[3] = {k->layout ? B : S, k->layout ? S : B, I};
    int64_t ws[3] = {D, G * H, I}, rs[3] = {D, G * H, H}, bs[2] = {D, 2 * G * H};
    int64_t hs[3] = {k->layout ? B : D, k->layout ? D : B, H}, ps[2] = {D, 3 * H};
    float *x = rand_vals(&rng, numel(3, xs)), *w = rand_vals(&rng, numel(3, ws));
    float *r = rand_vals(&rng, numel(3, rs)), *b = rand_vals(&rng, numel(2, bs));
    float *h0 = rand_vals(&rng, numel(3, hs)), *c0 = rand_vals(&rng, numel(3, hs));
    float *p = rand_vals(&rng, numel(2, ps));

    hc_graph *g = hc_graph_new("rnn", 14);
    hc_tensor *in[8] = {hc_graph_add_input(g, "X", HC_F32, 3, xs)};
    in[1] = k->w_input ? hc_graph_add_input(g, "W", HC_F32, 3, ws)
                       : hc_graph_constant(g, "W", HC_F32, 3, ws, w);
    in[2] = k->w_input ? hc_graph_add_input(g, "R", HC_F32, 3, rs)
                       : hc_graph_constant(g, "R", HC_F32, 3, rs, r);
    in[3] = k->bias ? hc_graph_constant(g, "B", HC_F32, 2, bs, b) : NULL;
    in[4] = NULL;
    in[5] = k->init ? hc_graph_constant(g, "h0", HC_F32, 3, hs, h0) : NULL;
    in[6] = k->init && k->kind == K_LSTM ? hc_graph_constant(g, "c0", HC_F32, 3, hs, c0) : NULL;
    in[7] = k->peep ? hc_graph_constant(g, "P", HC_F32, 2, ps, p) : NULL;
    int nin = k->kind == K_LSTM ? 8 : 6, nout = k->kind == K_LSTM ? 3 : 2;
    static const char *dirs[] = {"forward", "reverse", "bidirectional"};
    const char *anames[6];
    for (int d = 0; d < D; d++)
        for (int i = 0; i < nact; i++) anames[d * nact + i] = act_name[acts[i]];
    hc_attr attrs[6];
    int na = 0;
    attrs[na++] = (hc_attr){.name = "hidden_size", .kind = HC_ATTR_INT, .i = H};
    attrs[na++] = (hc_attr){.name = "direction", .kind = HC_ATTR_STRING, .s = dirs[k->dir]};
    attrs[na++] = (hc_attr){.name = "layout", .kind = HC_ATTR_INT, .i = k->layout};
    if (k->acts[0] >= 0)
        attrs[na++] = (hc_attr){.name = "activations", .kind = HC_ATTR_STRINGS, .n = D * nact,
                                .strings = anames};
    if (k->clip > 0) attrs[na++] = (hc_attr){.name = "clip", .kind = HC_ATTR_FLOAT, .f = k->clip};
    if (k->lbr) attrs[na++] = (hc_attr){.name = "linear_before_reset", .kind = HC_ATTR_INT, .i = 1};
    hc_op_kind op = k->kind == K_RNN ? HC_OPK_RNN : k->kind == K_GRU ? HC_OPK_GRU : HC_OPK_LSTM;
    hc_error err = {0};
    hc_node *n = hc_graph_add_node(g, op, "rnn0", nin, in, nout, NULL, na, attrs, &err);
    CHECK_MSG(n != NULL, "case %d: %s", ci, err.msg);
    if (!n) return;
    for (int i = 0; i < nout; i++) hc_graph_add_output(g, n->outputs[i]);
    hc_model *m = NULL;
    hc_compile_options opt = {.num_threads = 2};
    hc_status st = hc_model_compile(g, &opt, &m, &err);
    CHECK_MSG(st == HC_OK, "case %d: compile: %s", ci, err.msg);
    int64_t yn = (int64_t)S * D * B * H, hn = (int64_t)D * B * H;
    float *y = calloc((size_t)yn, 4), *yh = calloc((size_t)hn, 4), *yc = calloc((size_t)hn, 4);
    float *ry = calloc((size_t)yn, 4), *ryh = calloc((size_t)hn, 4), *ryc = calloc((size_t)hn, 4);
    if (st == HC_OK) {
        void *ins[3] = {x, w, r}, *outs[3] = {y, yh, yc};
        st = hc_model_run(m, ins, outs, &err);
        CHECK_MSG(st == HC_OK, "case %d: run: %s", ci, err.msg);
        ref_io io = {x, w, r, k->bias ? b : NULL, k->init ? h0 : NULL,
                     k->init && k->kind == K_LSTM ? c0 : NULL, k->peep ? p : NULL, ry, ryh,
                     k->kind == K_LSTM ? ryc : NULL};
        reference(k, acts, &io);
        double e = fmax(max_rel_err(y, ry, yn), max_rel_err(yh, ryh, hn));
        if (k->kind == K_LSTM) e = fmax(e, max_rel_err(yc, ryc, hn));
        CHECK_MSG(e < 1e-4, "case %d (kind %d dir %d layout %d S%d B%d I%d H%d): max rel err %g",
                  ci, k->kind, k->dir, k->layout, S, B, I, H, e);
    }
    hc_model_free(m);
    free(x), free(w), free(r), free(b), free(h0), free(c0), free(p);
    free(y), free(yh), free(yc), free(ry), free(ryh), free(ryc);
}

/* A refused node: compile fails, the message names the node and says what. */
static void refused(const char *label, hc_op_kind op, int nattrs, const hc_attr *attrs,
                    const int32_t *seq_lens, const char *want) {
    hc_graph *g = hc_graph_new("rnn", 14);
    int S = 3, B = 2, I = 2, H = 3, G = op == HC_OPK_LSTM ? 4 : op == HC_OPK_GRU ? 3 : 1;
    hc_tensor *in[6] = {hc_graph_add_input(g, "X", HC_F32, 3, (int64_t[]){S, B, I}),
                        hc_graph_constant(g, "W", HC_F32, 3, (int64_t[]){1, G * H, I}, NULL),
                        hc_graph_constant(g, "R", HC_F32, 3, (int64_t[]){1, G * H, H}, NULL),
                        NULL,
                        seq_lens ? hc_graph_constant(g, "sl", HC_I32, 1, (int64_t[]){B}, seq_lens)
                                 : NULL,
                        NULL};
    hc_error err = {0};
    hc_node *n = hc_graph_add_node(g, op, "bad_rnn", 6, in, 2, NULL, nattrs, attrs, &err);
    CHECK_MSG(n != NULL, "%s: %s", label, err.msg);
    if (!n) return;
    hc_graph_add_output(g, n->outputs[1]);
    hc_model *m = NULL;
    hc_status st = hc_model_compile(g, &(hc_compile_options){.num_threads = 1}, &m, &err);
    CHECK_MSG(st != HC_OK, "%s: compiled", label);
    CHECK_MSG(strstr(err.msg, "bad_rnn") && strstr(err.msg, want), "%s: message '%s'", label,
              err.msg);
    hc_model_free(m);
}

int main(void) {
    static const rcase cases[] = {
        /* kind  dir lay S  B  I  H  bias  init  peep  lbr   w_in  clip acts */
        {K_LSTM, 0, 0, 1, 1, 1, 1, false, false, false, false, false, 0, {-1}},
        {K_LSTM, 2, 1, 4, 3, 5, 7, true, true, true, false, false, 0.7, {-1}},
        {K_LSTM, 1, 0, 3, 3, 2, 3, false, true, false, false, false, 0, {-1}},
        {K_LSTM, 0, 1, 5, 1, 3, 13, true, true, false, false, true, 0, {A_SIG, A_RELU, A_TANH}},
        {K_LSTM, 2, 0, 2, 3, 4, 2, true, false, true, false, true, 0, {-1}},
        {K_GRU, 0, 0, 5, 3, 3, 5, true, false, false, false, false, 0, {-1}},
        {K_GRU, 2, 1, 2, 1, 4, 1, true, true, false, true, false, 0, {-1}},
        {K_GRU, 1, 0, 3, 3, 7, 2, false, false, false, true, false, 0, {A_SIG, A_RELU}},
        {K_GRU, 2, 0, 4, 3, 2, 11, true, true, false, false, true, 0.5, {-1}},
        {K_GRU, 0, 1, 1, 3, 2, 3, true, true, false, true, true, 0, {-1}},
        {K_RNN, 0, 0, 1, 3, 3, 5, false, false, false, false, false, 0, {-1}},
        {K_RNN, 2, 1, 6, 3, 2, 11, true, true, false, false, false, 0, {A_RELU}},
        {K_RNN, 1, 0, 4, 1, 5, 1, true, false, false, false, true, 0.3, {A_SIG}},
        {K_RNN, 2, 0, 3, 3, 3, 7, true, true, false, false, true, 0, {-1}},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof *cases); i++) run_case(i, &cases[i]);

    const char *bad_act[] = {"Tanh", "Gelu"}, *sc[] = {"ScaledTanh"};
    hc_attr a1[] = {{.name = "activations", .kind = HC_ATTR_STRINGS, .n = 2, .strings = bad_act}};
    refused("activation", HC_OPK_GRU, 1, a1, NULL, "activation 'Gelu' is not supported");
    hc_attr a2[] = {{.name = "activations", .kind = HC_ATTR_STRINGS, .n = 1, .strings = sc}};
    refused("scaled tanh", HC_OPK_RNN, 1, a2, NULL, "activation 'ScaledTanh'");
    hc_attr a3[] = {{.name = "input_forget", .kind = HC_ATTR_INT, .i = 1}};
    refused("input_forget", HC_OPK_LSTM, 1, a3, NULL, "input_forget");
    refused("short sequence", HC_OPK_LSTM, 0, NULL, (const int32_t[]){3, 2},
            "shorter than seq_length");
    hc_attr a4[] = {{.name = "hidden_size", .kind = HC_ATTR_INT, .i = 4}};
    refused("hidden_size", HC_OPK_RNN, 1, a4, NULL, "hidden_size 4");
    hc_attr a5[] = {{.name = "direction", .kind = HC_ATTR_STRING, .s = "sideways"}};
    refused("direction", HC_OPK_GRU, 1, a5, NULL, "direction 'sideways'");
    hc_attr a6[] = {{.name = "activation_alpha", .kind = HC_ATTR_FLOATS, .n = 1,
                     .floats = (double[]){0.5}}};
    refused("alpha", HC_OPK_RNN, 1, a6, NULL, "activation_alpha");
    TEST_DONE();
}
