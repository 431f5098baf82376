/* training.c — the lower_training pass: the optimizers of ai.onnx.preview.training (Adagrad,
 * Adam, Momentum) rewritten into existing elementwise ops, in the arithmetic order of the
 * ONNX reference (onnx/reference/ops/aionnx_preview_training), each tensor in its own dtype:
 *   Adagrad  r = R / (1 + T * decay_factor); g = norm_coefficient * X + G;
 *            H_new = H + g * g; X_new = X - (r * g) / (sqrt(H_new) + epsilon)
 *   Adam     g = norm_coefficient * X + G; V_new = alpha * V + (1 - alpha) * g;
 *            H_new = beta * H + (1 - beta) * (g * g);
 *            r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R;
 *            X_new = (1 - norm_coefficient_post) * (X - r * (V_new / (sqrt(H_new) + epsilon)))
 *   Momentum g = norm_coefficient * X + G; b = T > 0 ? beta : 1; V_new = alpha * V + b * g;
 *            standard X_new = X - R * V_new; nesterov X_new = X - R * (g + alpha * V_new)
 * The scalar parts (r, b) are computed once per node, from R and T cast to X's dtype;
 * constants such as 1 - alpha in double, then rounded to that dtype (the reference's Python
 * floats). The fusion then makes one kernel of each tensor's chain. */
#include <string.h>

#include "passes/pass_util.h"

typedef hc_rewrite t_ctx;

static hc_tensor *bin(t_ctx *c, hc_op_kind op, hc_tensor *a, hc_tensor *b) {
    hc_tensor *in[2] = {a, b};
    return hc_rw_emit(c, op, 2, in, 0, NULL);
}

static hc_tensor *unary(t_ctx *c, hc_op_kind op, hc_tensor *x) {
    return hc_rw_emit(c, op, 1, &x, 0, NULL);
}

static hc_tensor *num(t_ctx *c, hc_dtype dt, double v) {
    return hc_pass_const_float(c->g, hc_rw_fresh(c, "k"), dt, 0, NULL, &v);
}

/* A one-element input as a scalar of dtype dt. */
static hc_tensor *scalar(t_ctx *c, hc_tensor *x, hc_dtype dt) {
    if (x->ndim) {
        hc_tensor *in[2] = {x, hc_pass_const_i64(c->g, hc_rw_fresh(c, "shape"), 0, NULL)};
        x = hc_rw_emit(c, HC_OPK_RESHAPE, 2, in, 0, NULL);
    }
    if (!x || x->dtype == dt) return x;
    hc_attr to = {.name = "to", .kind = HC_ATTR_INT, .i = dt == HC_F64 ? 11 : 1};
    return hc_rw_emit(c, HC_OPK_CAST, 1, &x, 1, &to);
}

/* T > 0 (T the int64 scalar), to pick between two scalars. */
static hc_tensor *pick(t_ctx *c, hc_tensor *t, hc_tensor *pos, hc_tensor *zero) {
    int64_t z = 0;
    hc_tensor *k0 = hc_graph_constant(c->g, hc_rw_fresh(c, "k"), HC_I64, 0, NULL, &z);
    hc_tensor *in[3] = {bin(c, HC_OPK_GREATER, t, k0), pos, zero};
    return hc_rw_emit(c, HC_OPK_WHERE, 3, in, 0, NULL);
}

static hc_status lower_one(hc_graph *g, hc_node *n, hc_error *err) {
    t_ctx c = {.g = g, .n = n, .err = err};
    int per = n->op == HC_OPK_ADAM ? 4 : 3, nt = (n->ninputs - 2) / per;
    hc_dtype dt = n->inputs[2]->dtype; /* the same for every tensor (checked by inference) */
    hc_tensor *r = scalar(&c, n->inputs[0], dt), *t = scalar(&c, n->inputs[1], HC_I64);
    hc_tensor *tf = t ? scalar(&c, t, dt) : NULL;
    double norm = hc_node_attr_float(n, "norm_coefficient", 0);
    double alpha = hc_node_attr_float(n, "alpha", 0.9), beta = hc_node_attr_float(n, "beta", 0.999);
    double eps = hc_node_attr_float(n, "epsilon", 1e-6);
    hc_tensor *rate = NULL; /* Adagrad's and Adam's learning rate, Momentum's beta_adjusted */
    if (n->op == HC_OPK_ADAGRAD) {
        double decay = hc_node_attr_float(n, "decay_factor", 0);
        rate = bin(&c, HC_OPK_DIV, r,
                   bin(&c, HC_OPK_ADD, num(&c, dt, 1), bin(&c, HC_OPK_MUL, tf, num(&c, dt, decay))));
    } else if (n->op == HC_OPK_ADAM) {
        hc_tensor *bt = bin(&c, HC_OPK_SUB, num(&c, dt, 1), bin(&c, HC_OPK_POW, num(&c, dt, beta), tf));
        hc_tensor *at = bin(&c, HC_OPK_SUB, num(&c, dt, 1), bin(&c, HC_OPK_POW, num(&c, dt, alpha), tf));
        hc_tensor *corr = bin(&c, HC_OPK_DIV, bin(&c, HC_OPK_MUL, r, unary(&c, HC_OPK_SQRT, bt)), at);
        rate = pick(&c, t, corr, r);
    } else {
        rate = pick(&c, t, num(&c, dt, beta), num(&c, dt, 1));
    }
    bool nesterov = n->op == HC_OPK_MOMENTUM &&
                    !strcmp(hc_node_attr_string(n, "mode", "standard"), "nesterov");
    hc_status st = HC_OK;
    for (int i = 0; i < nt && st == HC_OK; i++) {
        hc_tensor *x = n->inputs[2 + i], *gr = n->inputs[2 + nt + i], *a1 = n->inputs[2 + 2 * nt + i];
        hc_tensor *gg = bin(&c, HC_OPK_ADD, bin(&c, HC_OPK_MUL, num(&c, dt, norm), x), gr);
        hc_tensor *xn = NULL, *acc[2] = {NULL, NULL};
        if (n->op == HC_OPK_ADAGRAD) {
            acc[0] = bin(&c, HC_OPK_ADD, a1, bin(&c, HC_OPK_MUL, gg, gg));
            hc_tensor *hs = bin(&c, HC_OPK_ADD, unary(&c, HC_OPK_SQRT, acc[0]), num(&c, dt, eps));
            xn = bin(&c, HC_OPK_SUB, x, bin(&c, HC_OPK_DIV, bin(&c, HC_OPK_MUL, rate, gg), hs));
        } else if (n->op == HC_OPK_ADAM) {
            hc_tensor *h = n->inputs[2 + 3 * nt + i];
            acc[0] = bin(&c, HC_OPK_ADD, bin(&c, HC_OPK_MUL, num(&c, dt, alpha), a1),
                         bin(&c, HC_OPK_MUL, num(&c, dt, 1 - alpha), gg));
            acc[1] = bin(&c, HC_OPK_ADD, bin(&c, HC_OPK_MUL, num(&c, dt, beta), h),
                         bin(&c, HC_OPK_MUL, num(&c, dt, 1 - beta), bin(&c, HC_OPK_MUL, gg, gg)));
            hc_tensor *hs = bin(&c, HC_OPK_ADD, unary(&c, HC_OPK_SQRT, acc[1]), num(&c, dt, eps));
            xn = bin(&c, HC_OPK_SUB, x, bin(&c, HC_OPK_MUL, rate, bin(&c, HC_OPK_DIV, acc[0], hs)));
            double post = hc_node_attr_float(n, "norm_coefficient_post", 0);
            xn = bin(&c, HC_OPK_MUL, num(&c, dt, 1 - post), xn);
        } else {
            acc[0] = bin(&c, HC_OPK_ADD, bin(&c, HC_OPK_MUL, num(&c, dt, alpha), a1),
                         bin(&c, HC_OPK_MUL, rate, gg));
            hc_tensor *step = nesterov ? bin(&c, HC_OPK_ADD, gg, bin(&c, HC_OPK_MUL, num(&c, dt, alpha), acc[0]))
                                       : acc[0];
            xn = bin(&c, HC_OPK_SUB, x, bin(&c, HC_OPK_MUL, r, step));
        }
        st = hc_rw_replace(&c, i, xn);
        for (int k = 0; k < per - 2 && st == HC_OK; k++) st = hc_rw_replace(&c, (k + 1) * nt + i, acc[k]);
    }
    return st;
}

static bool is_training(const hc_node *n) {
    return n->op == HC_OPK_ADAGRAD || n->op == HC_OPK_ADAM || n->op == HC_OPK_MOMENTUM;
}

hc_status hc_pass_lower_training(hc_graph *g, hc_error *err) {
    return hc_pass_lower_each(g, is_training, lower_one, err);
}
