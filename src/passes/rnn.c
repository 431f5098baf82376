/* rnn.c — RNN, GRU and LSTM unrolled over their static sequence length into existing ops
 * (ONNX's equations, gate orders RNN: i; GRU: z r h; LSTM: i o f c; peepholes i o f):
 *   per direction  XW = MatMul(X as [seq*batch, input], W^T) + Wb + Rb   (one big MatMul:
 *                  the matmul template, W^T pre-packed when W is constant)
 *   per time step  G = XW[t] + MatMul(H, R^T); gates = Slice(G); activations, Mul, Add;
 *                  GRU's candidate gate reads (r * H) R_h^T, or r * (H R_h^T + Rb_h) with
 *                  linear_before_reset
 *   outputs        Y = Concat of the steps' H (time order), Y_h / Y_c the last ones;
 *                  layout 1 is a Transpose of X and of the outputs.
 * clip bounds every gate's pre-activation to [-clip, clip] (Min, Max), not LSTM's cell state. Constant weights are
 * sliced and transposed here at compile time; other operands get Slice/Transpose nodes
 * (constant folding takes what is constant). */
#include <string.h>

#include "graph/ops/rnn.h"
#include "passes/pass_util.h"

typedef struct rnn_ctx {
    hc_graph *g;
    hc_node *n;
    hc_error *err;
    hc_rnn_spec s;
    hc_dtype dt;
    int uid; /* names: node name + suffix + uid */
} rnn_ctx;

static const char *fresh(rnn_ctx *c, const char *suffix) {
    return hc_arena_printf(&c->g->arena, "%s_%s%d", c->n->name, suffix, c->uid++);
}

static hc_tensor *emit(rnn_ctx *c, hc_op_kind op, const char *suffix, int nin,
                       hc_tensor *const *in, int nattrs, const hc_attr *attrs) {
    for (int i = 0; i < nin; i++)
        if (!in[i]) return NULL; /* an earlier step failed (err is set) */
    hc_node *m = hc_pass_add_node(c->g, op, fresh(c, suffix), nin, in, nattrs, attrs, c->err);
    return m ? m->outputs[0] : NULL;
}

static hc_tensor *bin(rnn_ctx *c, hc_op_kind op, hc_tensor *a, hc_tensor *b) {
    hc_tensor *in[2] = {a, b};
    return emit(c, op, op == HC_OPK_MATMUL ? "mm" : "ew", 2, in, 0, NULL);
}

static hc_tensor *unary(rnn_ctx *c, hc_op_kind op, hc_tensor *x) {
    return emit(c, op, "act", 1, &x, 0, NULL);
}

static hc_tensor *scalar(rnn_ctx *c, double v) {
    return hc_pass_const_float(c->g, fresh(c, "k"), c->dt, 0, NULL, &v);
}

static hc_tensor *reshape(rnn_ctx *c, hc_tensor *x, int ndim, const int64_t *shape) {
    if (!x) return NULL;
    if (x->data) { /* constants are immutable: the view shares the bytes */
        hc_tensor *t = hc_graph_tensor(c->g, fresh(c, "view"), x->dtype, ndim, shape);
        t->data = x->data;
        return t;
    }
    hc_tensor *in[2] = {x, hc_pass_const_i64(c->g, fresh(c, "shape"), ndim, shape)};
    return emit(c, HC_OPK_RESHAPE, "reshape", 2, in, 0, NULL);
}

/* x[..., lo:hi, ...] along axis; a constant sliced along axis 0 is copied here. */
static hc_tensor *slice(rnn_ctx *c, hc_tensor *x, int axis, int64_t lo, int64_t hi) {
    if (!x) return NULL;
    if (x->data && axis == 0) {
        int64_t shape[HC_MAX_DIMS], row = 1;
        memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        for (int i = 1; i < x->ndim; i++) row *= x->shape[i];
        shape[0] = hi - lo;
        size_t es = (size_t)hc_dtype_size(x->dtype);
        return hc_graph_constant(c->g, fresh(c, "part"), x->dtype, x->ndim, shape,
                                 (const char *)x->data + (size_t)(lo * row) * es);
    }
    int64_t ax = axis;
    hc_tensor *in[4] = {x, hc_pass_const_i64(c->g, fresh(c, "lo"), 1, &lo),
                        hc_pass_const_i64(c->g, fresh(c, "hi"), 1, &hi),
                        hc_pass_const_i64(c->g, fresh(c, "axis"), 1, &ax)};
    return emit(c, HC_OPK_SLICE, "slice", 4, in, 0, NULL);
}

/* x[i] along axis, that axis dropped. */
static hc_tensor *take(rnn_ctx *c, hc_tensor *x, int axis, int64_t i) {
    hc_tensor *t = slice(c, x, axis, i, i + 1);
    if (!t) return NULL;
    int64_t shape[HC_MAX_DIMS];
    int nd = 0;
    for (int k = 0; k < x->ndim; k++)
        if (k != axis) shape[nd++] = x->shape[k];
    return reshape(c, t, nd, shape);
}

static hc_tensor *transpose(rnn_ctx *c, hc_tensor *x, int nd, const int64_t *perm) {
    if (!x) return NULL;
    if (x->data && nd == 2) { /* at compile time */
        int64_t shape[2] = {x->shape[1], x->shape[0]};
        hc_tensor *t = hc_graph_constant(c->g, fresh(c, "T"), x->dtype, 2, shape, NULL);
        size_t es = (size_t)hc_dtype_size(x->dtype);
        for (int64_t i = 0; i < x->shape[0]; i++)
            for (int64_t j = 0; j < x->shape[1]; j++)
                memcpy((char *)t->data + (size_t)(j * x->shape[0] + i) * es,
                       (const char *)x->data + (size_t)(i * x->shape[1] + j) * es, es);
        return t;
    }
    hc_attr a = {.name = "perm", .kind = HC_ATTR_INTS, .n = nd, .ints = (int64_t *)perm};
    return emit(c, HC_OPK_TRANSPOSE, "transpose", 1, &x, 1, &a);
}

static hc_tensor *transpose2(rnn_ctx *c, hc_tensor *x) {
    static const int64_t perm[2] = {1, 0};
    return transpose(c, x, 2, perm);
}

/* Concat along axis, in chunks below the op's input limit. */
static hc_tensor *concat(rnn_ctx *c, int n, hc_tensor **ts, int axis) {
    hc_attr a = {.name = "axis", .kind = HC_ATTR_INT, .i = axis};
    enum { CHUNK = 128 };
    while (n > 1) {
        int m = 0;
        for (int i = 0; i < n; i += CHUNK) {
            int k = n - i < CHUNK ? n - i : CHUNK;
            ts[m++] = k == 1 ? ts[i] : emit(c, HC_OPK_CONCAT, "concat", k, ts + i, 1, &a);
        }
        n = m;
    }
    return ts[0];
}

static hc_tensor *clip(rnn_ctx *c, hc_tensor *x) {
    if (!c->s.has_clip) return x;
    x = bin(c, HC_OPK_MIN, x, scalar(c, c->s.clip));
    return bin(c, HC_OPK_MAX, x, scalar(c, -c->s.clip));
}

static hc_tensor *act(rnn_ctx *c, int d, int k, hc_tensor *x) {
    return unary(c, c->s.act[d][k], clip(c, x));
}

/* The initial state of direction d as [batch, hidden] (zeros when absent). */
static hc_tensor *initial_state(rnn_ctx *c, int input, int d) {
    hc_tensor *t = input < c->n->ninputs ? c->n->inputs[input] : NULL;
    if (!t) {
        int64_t shape[2] = {c->s.batch, c->s.hidden};
        return hc_graph_constant(c->g, fresh(c, "zero"), c->dt, 2, shape, NULL);
    }
    return take(c, t, c->s.layout ? 1 : 0, d);
}

typedef struct dir_out {
    hc_tensor *h, *c; /* final states [batch, hidden] */
    hc_tensor *y;     /* [seq, 1, batch, hidden] */
} dir_out;

static hc_status direction(rnn_ctx *c, hc_tensor *xs, int d, dir_out *out) {
    const hc_rnn_spec *s = &c->s;
    hc_node *n = c->n;
    int64_t H = s->hidden, B = s->batch, S = s->seq, G = s->gates, GH = G * H;
    hc_tensor *bias = HC_RNN_B < n->ninputs ? n->inputs[HC_RNN_B] : NULL;
    hc_tensor *peep = HC_RNN_P < n->ninputs ? n->inputs[HC_RNN_P] : NULL;
    /* the input projection of every step at once */
    hc_tensor *xw = bin(c, HC_OPK_MATMUL, xs, transpose2(c, take(c, n->inputs[1], 0, d)));
    hc_tensor *rbh = NULL; /* GRU with linear_before_reset: Rb_h stays inside r * (...) */
    if (bias) {
        hc_tensor *bd = take(c, bias, 0, d);
        hc_tensor *wb = slice(c, bd, 0, 0, GH), *rb = slice(c, bd, 0, GH, 2 * GH);
        if (s->linear_before_reset) {
            rbh = slice(c, rb, 0, 2 * H, 3 * H);
            rb = slice(c, rb, 0, 0, 2 * H);
            int64_t zsh[1] = {H};
            hc_tensor *zh = hc_graph_constant(c->g, fresh(c, "zero"), c->dt, 1, zsh, NULL);
            hc_tensor *parts[2] = {rb, zh};
            rb = concat(c, 2, parts, 0);
        }
        xw = bin(c, HC_OPK_ADD, xw, bin(c, HC_OPK_ADD, wb, rb));
    }
    int64_t sbg[3] = {S, B, GH};
    xw = reshape(c, xw, 3, sbg);
    hc_tensor *r = take(c, n->inputs[2], 0, d); /* [GH, H] */
    hc_tensor *rt = NULL, *rzr_t = NULL, *rh_t = NULL;
    if (n->op == HC_OPK_GRU && !s->linear_before_reset) {
        rzr_t = transpose2(c, slice(c, r, 0, 0, 2 * H));
        rh_t = transpose2(c, slice(c, r, 0, 2 * H, 3 * H));
    } else {
        rt = transpose2(c, r);
    }
    hc_tensor *pi = NULL, *po = NULL, *pf = NULL;
    if (peep && n->op == HC_OPK_LSTM) {
        hc_tensor *pd = take(c, peep, 0, d);
        pi = slice(c, pd, 0, 0, H), po = slice(c, pd, 0, H, 2 * H), pf = slice(c, pd, 0, 2 * H, 3 * H);
    }
    hc_tensor *h = initial_state(c, HC_RNN_INIT_H, d);
    hc_tensor *cs = n->op == HC_OPK_LSTM ? initial_state(c, HC_RNN_INIT_C, d) : NULL;
    hc_tensor **ys = hc_arena_alloc(&c->g->arena, sizeof(hc_tensor *) * (size_t)S);
    bool rev = s->reverse || d == 1;
    bool want_y = n->noutputs > 0 && n->outputs[0];
    int64_t bgh[2] = {B, GH}, y4[4] = {1, 1, B, H};
    for (int64_t k = 0; k < S; k++) {
        int64_t t = rev ? S - 1 - k : k;
        hc_tensor *xt = reshape(c, slice(c, xw, 0, t, t + 1), 2, bgh);
        if (n->op == HC_OPK_RNN) {
            h = act(c, d, 0, bin(c, HC_OPK_ADD, xt, bin(c, HC_OPK_MATMUL, h, rt)));
        } else if (n->op == HC_OPK_LSTM) {
            hc_tensor *g = bin(c, HC_OPK_ADD, xt, bin(c, HC_OPK_MATMUL, h, rt));
            hc_tensor *gi = slice(c, g, 1, 0, H), *go = slice(c, g, 1, H, 2 * H);
            hc_tensor *gf = slice(c, g, 1, 2 * H, 3 * H), *gc = slice(c, g, 1, 3 * H, 4 * H);
            if (pi) {
                gi = bin(c, HC_OPK_ADD, gi, bin(c, HC_OPK_MUL, pi, cs));
                gf = bin(c, HC_OPK_ADD, gf, bin(c, HC_OPK_MUL, pf, cs));
            }
            hc_tensor *i = act(c, d, 0, gi), *f = act(c, d, 0, gf), *cc = act(c, d, 1, gc);
            cs = bin(c, HC_OPK_ADD, bin(c, HC_OPK_MUL, f, cs), bin(c, HC_OPK_MUL, i, cc));
            if (po) go = bin(c, HC_OPK_ADD, go, bin(c, HC_OPK_MUL, po, cs));
            /* clip bounds the gates, not the cell state h() reads (as ONNX Runtime) */
            h = bin(c, HC_OPK_MUL, act(c, d, 0, go), unary(c, s->act[d][2], cs));
        } else { /* GRU */
            hc_tensor *hr = bin(c, HC_OPK_MATMUL, h, rt ? rt : rzr_t); /* [B, 3H] or [B, 2H] */
            hc_tensor *z = act(c, d, 0, bin(c, HC_OPK_ADD, slice(c, xt, 1, 0, H),
                                            slice(c, hr, 1, 0, H)));
            hc_tensor *rg = act(c, d, 0, bin(c, HC_OPK_ADD, slice(c, xt, 1, H, 2 * H),
                                             slice(c, hr, 1, H, 2 * H)));
            hc_tensor *cand;
            if (s->linear_before_reset) {
                hc_tensor *lin = slice(c, hr, 1, 2 * H, 3 * H);
                if (rbh) lin = bin(c, HC_OPK_ADD, lin, rbh);
                cand = bin(c, HC_OPK_MUL, rg, lin);
            } else {
                cand = bin(c, HC_OPK_MATMUL, bin(c, HC_OPK_MUL, rg, h), rh_t);
            }
            hc_tensor *hh = act(c, d, 1, bin(c, HC_OPK_ADD, slice(c, xt, 1, 2 * H, 3 * H), cand));
            /* H = (1 - z) hh + z H = hh + z (H - hh) */
            h = bin(c, HC_OPK_ADD, hh, bin(c, HC_OPK_MUL, z, bin(c, HC_OPK_SUB, h, hh)));
        }
        if (!h) return c->err->status ? c->err->status : HC_ERR_INVALID;
        ys[t] = want_y ? reshape(c, h, 4, y4) : NULL;
    }
    out->h = h;
    out->c = cs;
    out->y = want_y ? concat(c, (int)S, ys, 0) : NULL;
    return HC_OK;
}

/* A per-direction state list [batch, hidden] x ndir as [ndir, batch, hidden] (layout 0)
 * or [batch, ndir, hidden] (layout 1). */
static hc_tensor *states(rnn_ctx *c, hc_tensor **st) {
    int64_t sh[3] = {1, c->s.batch, c->s.hidden};
    hc_tensor *parts[2];
    for (int d = 0; d < c->s.ndir; d++) parts[d] = reshape(c, st[d], 3, sh);
    hc_tensor *t = c->s.ndir == 1 ? parts[0] : concat(c, 2, parts, 0);
    static const int64_t perm[3] = {1, 0, 2};
    return c->s.layout ? transpose(c, t, 3, perm) : t;
}

static hc_status replace(rnn_ctx *c, int i, hc_tensor *y) {
    hc_tensor *old = i < c->n->noutputs ? c->n->outputs[i] : NULL;
    if (!old) return HC_OK;
    if (!y) return c->err->status ? c->err->status : HC_ERR_INVALID;
    if (y->ndim != old->ndim || memcmp(y->shape, old->shape, sizeof(int64_t) * (size_t)y->ndim))
        return hc_node_fail(c->n, HC_ERR_INVALID, c->err, "unrolled output %d has another "
                            "shape (internal error)", i);
    if (!hc_pass_bypass(c->g, old, y))
        return hc_node_fail(c->n, HC_ERR_UNSUPPORTED, c->err, "output '%s' cannot be "
                            "replaced by its unrolled value", old->name);
    return HC_OK;
}

static hc_status lower_one(hc_graph *g, hc_node *n, hc_error *err) {
    rnn_ctx c = {.g = g, .n = n, .err = err};
    if (hc_rnn_parse(n, &c.s, err)) return err->status;
    const hc_rnn_spec *s = &c.s;
    hc_tensor *x = n->inputs[0];
    c.dt = x->dtype;
    if (s->layout) { /* [batch, seq, input] -> [seq, batch, input] */
        static const int64_t perm[3] = {1, 0, 2};
        x = transpose(&c, x, 3, perm);
    }
    int64_t flat[2] = {s->seq * s->batch, s->input};
    hc_tensor *xs = reshape(&c, x, 2, flat);
    if (!xs) return err->status ? err->status : HC_ERR_INVALID;
    dir_out o[2] = {{0}};
    hc_tensor *hs[2], *cs[2], *ys[2];
    for (int d = 0; d < s->ndir; d++) {
        if (direction(&c, xs, d, &o[d])) return err->status;
        hs[d] = o[d].h, cs[d] = o[d].c, ys[d] = o[d].y;
    }
    if (n->noutputs > 0 && n->outputs[0]) {
        hc_tensor *y = s->ndir == 1 ? ys[0] : concat(&c, 2, ys, 1); /* [S, D, B, H] */
        static const int64_t perm[4] = {2, 0, 1, 3};
        if (s->layout) y = transpose(&c, y, 4, perm);
        if (replace(&c, 0, y)) return err->status;
    }
    if (n->noutputs > 1 && n->outputs[1] && replace(&c, 1, states(&c, hs))) return err->status;
    if (n->noutputs > 2 && n->outputs[2] && replace(&c, 2, states(&c, cs))) return err->status;
    return HC_OK;
}

static bool is_rnn(const hc_node *n) { return hc_op_is_recurrent(n->op); }

hc_status hc_pass_lower_rnn(hc_graph *g, hc_error *err) {
    return hc_pass_lower_each(g, is_rnn, lower_one, err);
}
