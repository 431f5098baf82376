/* attention_match.c — the fuse_attention pass: the attention that exported transformers
 * (BERT, GPT-2 through PyTorch, src/models/bert.c) write as separate ops,
 *
 *   S = MatMul(Q, Kt);  S = S / c  or  S * c  (c a constant scalar; optional);
 *   S = S + M  (either order) or Where(cond, S, fill) (optional);
 *   P = Softmax(S) over the last axis;  Y = MatMul(P, V)
 *
 * with Q [B, H, Sq, D], Kt [B, H, D, T], V [B, H, T, Dv] (4-D, f32, no broadcast between
 * them) and M broadcast to the scores, becomes Y = ATTENTION_FUSED(Q, K, V, M) with scale
 * 1 / c (or c) and K = Kt's transpose: composed with the Transpose that made Kt where there
 * is one, so that K is one Transpose of the heads (the exported graphs transpose the keys
 * by (0, 2, 3, 1) from [B, T, H, D]). Only where the target's template takes the node (the
 * fused op's Task alone, the auto-scheduler's one kernel, is slower than three kernels,
 * src/passes/attention.c) and where S, its scaled and masked forms and P have no other
 * reader. M stays as it is (a padding mask [B, 1, 1, T] is read once per row). GPT-2's
 * Where(cond, S, finfo.min) with a constant causal cond becomes the causal attribute (the
 * kernel then skips the keys past each tile's last row); another cond, the bias
 * Where(cond, 0, fill), for fills of at most -1e30 (which swallow any score: the same
 * probabilities, a row masked whole uniform in both), or -inf with the causal cond only
 * (no row masked whole: Softmax gives NaN there, the fused op 0).
 *
 * Symbolic blocks (dynamic shapes) match the same way, their dims compared as expressions
 * (equal at every binding); the causal cond is then no constant but a constant causal
 * table sliced from 0 to the sequence (GPT-2's causal[:, :, :seq, :seq]), offset 0. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_util.h"
#include "target/target.h"

static int uses(const hc_graph *g, const hc_tensor *t) {
    int c = hc_pass_is_graph_output(g, t) ? 2 : 0; /* an output has a reader outside */
    for (size_t i = 0; i < g->nodes.len; i++) {
        const hc_node *n = g->nodes.data[i];
        for (int k = 0; k < n->ninputs; k++) c += n->inputs[k] == t;
    }
    return c;
}

static bool single_use(const hc_graph *g, const hc_tensor *t) { return t && uses(g, t) == 1; }

/* The value of a constant f32 scalar (any shape of one element). */
static bool const_scalar(const hc_tensor *t, double *v) {
    if (!t || !t->data || t->dtype != HC_F32 || hc_tensor_numel(t) != 1) return false;
    *v = ((const float *)t->data)[0];
    return true;
}

static bool is_4d_f32(const hc_tensor *t) { return t && t->ndim == 4 && t->dtype == HC_F32; }

/* Whether 4-D x and y have the same dims: equal numbers, or equal expressions of the
 * symbols (dynamic shapes: equal at every binding). */
static bool same_dims4(const hc_tensor *x, const hc_tensor *y) {
    for (int d = 0; d < 4; d++)
        if (!hc_tensor_dims_equal(x, d, y, d)) return false;
    return true;
}

/* Whether dim d of t is the constant 1. */
static bool dim_is_one(const hc_tensor *t, int d) { return !(t->sym && t->sym[d]) && t->shape[d] == 1; }

/* t = MatMul(Q, Kt) [* c | / c]: the MatMul node and the scale; every step single-use. */
static hc_node *scores_of(const hc_graph *g, const hc_tensor *t, double *scale) {
    *scale = 1;
    hc_node *p = t->producer;
    if (!p || !single_use(g, t)) return NULL;
    double c;
    if (p->op == HC_OPK_MUL || p->op == HC_OPK_DIV) {
        hc_tensor *x = p->inputs[0], *y = p->inputs[1];
        if (p->op == HC_OPK_MUL && const_scalar(x, &c)) x = p->inputs[1];
        else if (!const_scalar(y, &c)) return NULL;
        if (c == 0 || !single_use(g, x) || !x->producer) return NULL;
        *scale = p->op == HC_OPK_MUL ? c : 1.0 / c;
        p = x->producer;
        if (x->ndim != 4 || !same_dims4(x, t)) return NULL; /* no broadcast */
    }
    return p->op == HC_OPK_MATMUL ? p : NULL;
}

/* Whether m (rank 1 to 4) broadcasts to the scores z without growing them: each dim 1 or
 * z's (symbolic: the same expression; one that may be 1 at run time is not taken). */
static bool shape_fits(const hc_tensor *m, const hc_tensor *z) {
    if (!m || m->ndim < 1 || m->ndim > 4) return false;
    for (int d = 0; d < m->ndim; d++)
        if (!dim_is_one(m, d) && !hc_tensor_dims_equal(m, d, z, 4 - m->ndim + d)) return false;
    return true;
}

/* Whether the constant bool c is the causal mask of Sq queries over T keys (only its last
 * two dims above 1): key j visible to query i iff j <= i + T - Sq, the offset. */
static bool causal_of(const hc_tensor *c, int64_t Sq, int64_t T, int64_t *offset) {
    if (!c->data || c->ndim < 2 || c->shape[c->ndim - 2] != Sq || c->shape[c->ndim - 1] != T ||
        T < Sq)
        return false;
    for (int d = 0; d < c->ndim - 2; d++)
        if (c->shape[d] != 1) return false;
    *offset = T - Sq;
    for (int64_t i = 0; i < Sq; i++)
        for (int64_t j = 0; j < T; j++)
            if ((hc_elem_get(c->data, HC_BOOL, i * T + j) != 0) != (j <= i + *offset)) return false;
    return true;
}

/* Whether m (rank <= 4, f32) broadcasts to the scores z without growing them; a mask of
 * rank < 4 (made 4-D by a Reshape) with at most one symbolic dim (the Reshape's -1). */
static bool mask_fits(const hc_tensor *m, const hc_tensor *z) {
    if (!m || m->dtype != HC_F32 || !shape_fits(m, z)) return false;
    int nsym = 0;
    for (int d = 0; d < m->ndim; d++) nsym += m->sym && m->sym[d];
    return m->ndim == 4 || nsym <= 1;
}

/* Whether integer tensor t is a constant whose every value is v. */
static bool const_all(const hc_tensor *t, int64_t v) {
    if (!t || !t->data || t->sym || (t->dtype != HC_I64 && t->dtype != HC_I32)) return false;
    for (int64_t i = 0; i < hc_tensor_numel(t); i++)
        if (hc_elem_get(t->data, t->dtype, i) != v) return false;
    return true;
}

/* Whether the bool c with symbolic dims [1.., Sq, T] is a constant causal table sliced from
 * its start (the exporters' buffer cut to the sequence, GPT-2's causal[:, :, :seq, :seq]):
 * a chain of Slices starting at 0 with step 1 of a constant whose leading dims are 1 and
 * whose entry [i][j] is j <= i, so that c's is too (the offset 0). */
static bool causal_slice(const hc_tensor *c) {
    const hc_tensor *t = c;
    while (t->producer && t->producer->op == HC_OPK_SLICE && t->producer->opset >= 10) {
        const hc_node *s = t->producer;
        if (s->ninputs < 3 || !const_all(s->inputs[1], 0) ||
            (s->ninputs > 4 && s->inputs[4] && !const_all(s->inputs[4], 1)))
            return false;
        t = s->inputs[0];
    }
    if (t == c || !t->data || t->sym || t->dtype != HC_BOOL || t->ndim != c->ndim || t->ndim < 2)
        return false;
    for (int d = 0; d < t->ndim - 2; d++)
        if (t->shape[d] != 1) return false;
    int64_t R = t->shape[t->ndim - 2], C = t->shape[t->ndim - 1];
    for (int64_t i = 0; i < R; i++)
        for (int64_t j = 0; j < C; j++)
            if ((hc_elem_get(t->data, HC_BOOL, i * C + j) != 0) != (j <= i)) return false;
    return true;
}

static hc_tensor *add(hc_graph *g, const hc_node *n, hc_op_kind op, const char *suffix, int nin,
                      hc_tensor *const *in, int nattrs, const hc_attr *attrs, hc_error *err) {
    hc_node *m = hc_pass_add_node(g, op, hc_arena_printf(&g->arena, "%s_%s", n->name, suffix),
                                  nin, in, nattrs, attrs, err);
    return m ? m->outputs[0] : NULL;
}

/* Rewrites the attention ending in MatMul(P, V) at node mv; *done says whether it did. */
static hc_status match_one(hc_graph *g, hc_node *mv, const hc_target *target, bool *done,
                           hc_error *err) {
    *done = false;
    hc_tensor *p = mv->inputs[0], *v = mv->inputs[1];
    hc_node *sm = p->producer;
    if (!sm || sm->op != HC_OPK_SOFTMAX || !single_use(g, p) || !is_4d_f32(p) || !is_4d_f32(v))
        return HC_OK;
    /* before opset 13 the default axis is 1 (and the input is coerced to 2-D there: the
     * last axis still means per row) */
    int64_t axis = hc_node_attr_int(sm, "axis", sm->opset >= 13 ? -1 : 1);
    if (axis != -1 && axis != 3) return HC_OK;
    hc_tensor *z = sm->inputs[0], *mask = NULL;
    double scale = 1;
    bool causal = false;
    int64_t offset = 0;
    hc_node *qk = NULL;
    if (z->producer && z->producer->op == HC_OPK_ADD && single_use(g, z)) {
        hc_node *ad = z->producer;
        for (int side = 0; side < 2 && !qk; side++) {
            hc_tensor *s = ad->inputs[side], *m = ad->inputs[1 - side];
            if (s->ndim == 4 && same_dims4(s, z) && mask_fits(m, z) &&
                (qk = scores_of(g, s, &scale)))
                mask = m;
        }
    } else if (z->producer && z->producer->op == HC_OPK_WHERE && single_use(g, z)) {
        /* Where(cond, S, fill), fill a huge negative constant (GPT-2: finfo.min) */
        hc_node *w = z->producer;
        hc_tensor *cond = w->inputs[0], *s = w->inputs[1];
        double fill;
        if (const_scalar(w->inputs[2], &fill) && fill <= -1e30 && cond->dtype == HC_BOOL &&
            s->ndim == 4 && same_dims4(s, z) && shape_fits(cond, z) &&
            (qk = scores_of(g, s, &scale))) {
            if (causal_of(cond, z->shape[2], z->shape[3], &offset)) {
                causal = true;
            } else if (hc_tensor_is_symbolic(cond) && cond->ndim >= 2 &&
                       hc_tensor_dims_equal(cond, cond->ndim - 2, z, 2) &&
                       hc_tensor_dims_equal(cond, cond->ndim - 1, z, 3) && causal_slice(cond)) {
                causal = true, offset = 0;
            } else if (isinf(fill)) {
                qk = NULL; /* a row masked whole is NaN there, 0 here */
            } else {
                /* S + (cond ? 0 : fill): fill swallows any score (|S| is far below its
                 * unit in the last place), so a row masked whole is uniform in both */
                const char *zn = hc_arena_printf(&g->arena, "%s_zero", mv->name);
                hc_tensor *wi[3] = {cond, hc_pass_const_float(g, zn, HC_F32, 0, NULL, (double[]){0}),
                                    w->inputs[2]};
                mask = add(g, mv, HC_OPK_WHERE, "bias", 3, wi, 0, NULL, err);
                if (!mask) return err->status;
            }
        }
    } else {
        qk = z->producer ? scores_of(g, z, &scale) : NULL;
        if (qk && !single_use(g, z)) qk = NULL;
    }
    if (!qk) return HC_OK;
    hc_tensor *q = qk->inputs[0], *kt = qk->inputs[1];
    if (!is_4d_f32(q) || !is_4d_f32(kt)) return HC_OK;
    /* dims compared as expressions where symbolic: Q [B, H, Sq, D], Kt [B, H, D, T],
     * V [B, H, T, Dv], the scores [.., Sq, T] */
    if (!hc_tensor_dims_equal(kt, 0, q, 0) || !hc_tensor_dims_equal(kt, 1, q, 1) ||
        !hc_tensor_dims_equal(kt, 2, q, 3) || !hc_tensor_dims_equal(v, 0, q, 0) ||
        !hc_tensor_dims_equal(v, 1, q, 1) || !hc_tensor_dims_equal(v, 2, kt, 3) ||
        !hc_tensor_dims_equal(z, 2, q, 2) || !hc_tensor_dims_equal(z, 3, kt, 3))
        return HC_OK;
    /* K = transpose(Kt, (0, 1, 3, 2)), composed with Kt's own Transpose */
    hc_tensor *src = kt;
    int64_t perm[4] = {0, 1, 3, 2};
    hc_node *kp = kt->producer;
    const hc_attr *pa = kp && kp->op == HC_OPK_TRANSPOSE ? hc_node_attr(kp, "perm") : NULL;
    if (pa && pa->kind == HC_ATTR_INTS && pa->n == 4 && single_use(g, kt)) {
        int64_t composed[4] = {pa->ints[0], pa->ints[1], pa->ints[3], pa->ints[2]};
        memcpy(perm, composed, sizeof perm);
        src = kp->inputs[0];
    }
    hc_attr ta = {.name = "perm", .kind = HC_ATTR_INTS, .n = 4, .ints = perm};
    hc_tensor *k = add(g, mv, HC_OPK_TRANSPOSE, "keys", 1, &src, 1, &ta, err);
    if (!k) return err->status;
    if (mask && mask->ndim < 4) {
        int nsym = 0;
        for (int d = 0; d < mask->ndim; d++) nsym += mask->sym && mask->sym[d];
        if (nsym > 1) return HC_OK; /* no one Reshape makes it 4-D (the new nodes are dead) */
        int64_t sh[4] = {1, 1, 1, 1};
        for (int d = 0; d < mask->ndim; d++) /* a symbolic dim (one at most): the -1 */
            sh[4 - mask->ndim + d] = mask->sym && mask->sym[d] ? -1 : mask->shape[d];
        hc_tensor *in[2] = {mask, hc_pass_const_i64(g, hc_arena_printf(&g->arena, "%s_mshape",
                                                                       mv->name), 4, sh)};
        mask = add(g, mv, HC_OPK_RESHAPE, "mask4", 2, in, 0, NULL, err);
        if (!mask) return err->status;
    }
    hc_attr at[6] = {{.name = "scale", .kind = HC_ATTR_FLOAT, .f = scale},
                     {.name = "softcap", .kind = HC_ATTR_FLOAT, .f = 0},
                     {.name = "causal", .kind = HC_ATTR_INT, .i = causal},
                     {.name = "offset", .kind = HC_ATTR_INT, .i = offset},
                     {.name = "left", .kind = HC_ATTR_INT, .i = -1},
                     {.name = "right", .kind = HC_ATTR_INT, .i = -1}};
    hc_tensor *in[4] = {q, k, v, mask};
    hc_node *f = hc_pass_add_node(g, HC_OPK_ATTENTION_FUSED,
                                  hc_arena_printf(&g->arena, "%s_attention", mv->name),
                                  mask ? 4 : 3, in, 6, at, err);
    if (!f) return err->status;
    const hc_template *tp = hc_target_template(target, HC_OPK_ATTENTION_FUSED);
    /* a node the template refuses stays unused: remove_dead drops it with K's transpose */
    if (tp && tp->space && tp->space(f, target, 0) > 0 && hc_pass_bypass(g, mv->outputs[0], f->outputs[0]))
        *done = true;
    return HC_OK;
}

hc_status hc_pass_fuse_attention(hc_graph *g, const hc_optimize_options *opt, hc_error *err) {
    const char *off = getenv("HIDETC_NO_FUSE_ATTENTION"); /* measurements: bench/attention.sh */
    if (off && strcmp(off, "1") == 0) return HC_OK;
    const hc_target *target = hc_pass_target(opt);
    const hc_template *tp = hc_target_template(target, HC_OPK_ATTENTION_FUSED);
    if (!tp || !tp->space) return HC_OK;
    size_t n0 = g->nodes.len;
    bool any = false;
    for (size_t i = 0; i < n0; i++) {
        hc_node *n = g->nodes.data[i];
        if (n->op != HC_OPK_MATMUL) continue;
        bool done;
        hc_status st = match_one(g, n, target, &done, err);
        if (st != HC_OK) return st;
        any |= done;
    }
    if (!any) return HC_OK;
    hc_status st = hc_graph_toposort(g, err);
    if (st == HC_OK) hc_graph_remove_dead(g);
    return st;
}
