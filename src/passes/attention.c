/* attention.c — the lower_attention pass: ONNX Attention (23-25) as two matmuls around the
 * fused softmax op ATTENTION_CORE (src/graph/ops/nn_attention.c): 3-D Q, K, V reshaped and
 * transposed to [B, heads, seq, head_size] (and Y back), the KV cache concatenated
 * (present_key, present_value), S = (Q c) @ (K c)^T with c = sqrt(scale) and GQA by a view
 * of Q as [B, Hkv, grp * Sq, D] (so both products are the matmul template's, K's transpose and
 * the scalings fused into it), a bool mask made 0 / -inf and padded with -inf to the total
 * sequence, P = ATTENTION_CORE(S, mask, nonpad), Y = P @ V (P viewed the same way); one more
 * ATTENTION_CORE for qk_matmul_output when that output is wanted.
 *
 * Where the target has a template for ATTENTION_FUSED that takes the node (the CPU's, for
 * f32: src/target/cpu/templates/attention_cpu.c), Y is instead one ATTENTION_FUSED(Q, K, V,
 * mask, nonpad) node: one kernel, no score matrix in memory (the scores of qk_matmul_output,
 * when wanted, still take the two-kernel path above). GPU targets keep the three kernels:
 * their auto-scheduler would run the fused op's Task as one unblocked kernel. */
#include <math.h>
#include <string.h>

#include "passes/pass_util.h"
#include "target/target.h"

typedef hc_rewrite a_ctx;

static const char *fresh(a_ctx *c, const char *suffix) { return hc_rw_fresh(c, suffix); }

static hc_tensor *emit(a_ctx *c, hc_op_kind op, int nin, hc_tensor *const *in, int nattrs,
                       const hc_attr *attrs) {
    for (int i = 0; i < nin; i++)
        if (!in[i] && !(op == HC_OPK_ATTENTION_CORE && i >= 1) &&
            !(op == HC_OPK_ATTENTION_FUSED && i >= 3))
            return NULL;
    hc_node *m = hc_pass_add_node(c->g, op, fresh(c, "a"), nin, in, nattrs, attrs, c->err);
    return m ? m->outputs[0] : NULL;
}

static hc_tensor *reshape(a_ctx *c, hc_tensor *x, int ndim, const int64_t *shape) {
    if (!x) return NULL;
    hc_tensor *in[2] = {x, hc_pass_const_i64(c->g, fresh(c, "shape"), ndim, shape)};
    return emit(c, HC_OPK_RESHAPE, 2, in, 0, NULL);
}

static hc_tensor *transpose0213(a_ctx *c, hc_tensor *x) {
    static const int64_t perm[4] = {0, 2, 1, 3};
    hc_attr a = {.name = "perm", .kind = HC_ATTR_INTS, .n = 4, .ints = (int64_t *)perm};
    return emit(c, HC_OPK_TRANSPOSE, 1, &x, 1, &a);
}

/* [B, S, H * d] -> [B, H, S, d] (symbolic B and S: kept by 0s, no hint baked in) */
static hc_tensor *to_heads(a_ctx *c, hc_tensor *x, int64_t heads) {
    bool sym = hc_tensor_is_symbolic(x);
    int64_t sh[4] = {sym ? 0 : x->shape[0], sym ? 0 : x->shape[1], heads, x->shape[2] / heads};
    return transpose0213(c, reshape(c, x, 4, sh));
}

/* Whether dim d of t is symbolic. */
static bool sym_dim(const hc_tensor *t, int d) { return t && t->sym && t->sym[d]; }

static hc_tensor *scalar(a_ctx *c, hc_dtype dt, double v) {
    return hc_pass_const_float(c->g, fresh(c, "k"), dt, 0, NULL, &v);
}

/* The mask as a 4-D additive bias over [B, Hq, Sq, T] (k: the keys, [B, Hk, T, D]). */
static hc_tensor *bias_of(a_ctx *c, hc_tensor *mask, hc_dtype dt, const hc_tensor *k) {
    if (!mask) return NULL;
    int64_t T = k->shape[2];
    hc_tensor *m = mask;
    if (hc_tensor_is_symbolic(m) || sym_dim(k, 2)) {
        /* symbolic: the columns must be all of T (a pad of a symbolic width is no constant),
         * and a rank below 4 has one symbolic dim at most (the Reshape's -1) */
        int nsym = 0;
        for (int d = 0; d < m->ndim; d++) nsym += sym_dim(m, d);
        if (!hc_tensor_dims_equal(m, m->ndim - 1, k, 2) || (m->ndim < 4 && nsym > 1)) {
            hc_node_fail(c->n, HC_ERR_UNSUPPORTED, c->err, "a mask of symbolic dims other than "
                         "[.., total sequence] (fix the symbols with --dim or --shape)");
            return NULL;
        }
    }
    if (m->dtype == HC_BOOL) {
        hc_tensor *w[3] = {m, scalar(c, dt, 0), scalar(c, dt, -INFINITY)};
        m = emit(c, HC_OPK_WHERE, 3, w, 0, NULL);
        if (!m) return NULL;
    }
    int nd = m->ndim;
    int64_t last = m->shape[nd - 1];
    if (last < T) { /* the columns past the mask are masked */
        int64_t sh[HC_MAX_DIMS];
        memcpy(sh, m->shape, sizeof(int64_t) * (size_t)nd);
        sh[nd - 1] = T - last;
        hc_tensor *pad = hc_graph_constant(c->g, fresh(c, "pad"), dt, nd, sh, NULL);
        for (int64_t i = 0; i < hc_tensor_numel(pad); i++) hc_elem_set(pad->data, dt, i, -INFINITY);
        hc_attr ax = {.name = "axis", .kind = HC_ATTR_INT, .i = nd - 1};
        hc_tensor *in[2] = {m, pad};
        m = emit(c, HC_OPK_CONCAT, 2, in, 1, &ax);
        if (!m) return NULL;
    }
    if (nd < 4) {
        int64_t sh[4] = {1, 1, 1, 1};
        for (int d = 0; d < nd; d++) sh[4 - nd + d] = sym_dim(m, d) ? -1 : m->shape[d];
        m = reshape(c, m, 4, sh);
    }
    return m;
}

static hc_status replace(a_ctx *c, int i, hc_tensor *y) { return hc_rw_replace(c, i, y); }

/* Y as one ATTENTION_FUSED node where the target's template takes it, else NULL (a node
 * the template refuses is left unused: remove_dead drops it). */
static hc_tensor *fused(a_ctx *c, const hc_target *target, hc_tensor *const *in, int nattrs,
                        const hc_attr *attrs) {
    const hc_template *tp = hc_target_template(target, HC_OPK_ATTENTION_FUSED);
    if (!tp || !tp->space || in[0]->dtype != HC_F32) return NULL;
    int nin = in[4] ? 5 : in[3] ? 4 : 3;
    hc_node *m = hc_pass_add_node(c->g, HC_OPK_ATTENTION_FUSED, fresh(c, "a"), nin, in, nattrs,
                                  attrs, c->err);
    if (!m) return NULL;
    return tp->space(m, target, 0) > 0 ? m->outputs[0] : NULL;
}

static hc_status lower_one(hc_graph *g, hc_node *n, const hc_target *target, hc_error *err) {
    a_ctx c = {.g = g, .n = n, .err = err};
    hc_tensor *in[7] = {NULL};
    for (int i = 0; i < n->ninputs && i < 7; i++) in[i] = n->inputs[i];
    hc_tensor *q = in[0], *k = in[1], *v = in[2];
    bool three = q->ndim == 3;
    int64_t qh = hc_node_attr_int(n, "q_num_heads", 0), kh = hc_node_attr_int(n, "kv_num_heads", 0);
    if (three) q = to_heads(&c, q, qh), k = to_heads(&c, k, kh), v = to_heads(&c, v, kh);
    if (!q || !k || !v) return err->status;
    int64_t P = in[4] ? in[4]->shape[2] : 0;
    /* A causal frontier behind a KV cache of symbolic length is offset_kv's T - Sq: the
     * past length (ONNX's offset) only where there are as many new keys as queries */
    if (in[4] && sym_dim(in[4], 2) && hc_node_attr_int(n, "is_causal", 0) &&
        !hc_sym_equal(hc_tensor_dim(k, 2), hc_tensor_dim(q, 2)))
        return hc_error_set(err, HC_ERR_UNSUPPORTED,
                            "node '%s' (Attention): causal with a KV cache of symbolic length "
                            "needs as many new keys as queries (%s against %s); fix the "
                            "lengths with --dim or --shape",
                            n->name, hc_sym_str(&g->arena, hc_tensor_dim(k, 2)),
                            hc_sym_str(&g->arena, hc_tensor_dim(q, 2)));
    hc_attr cat = {.name = "axis", .kind = HC_ATTR_INT, .i = 2};
    if (in[4]) {
        hc_tensor *kk[2] = {in[4], k}, *vv[2] = {in[5], v};
        k = emit(&c, HC_OPK_CONCAT, 2, kk, 1, &cat);
        v = emit(&c, HC_OPK_CONCAT, 2, vv, 1, &cat);
        if (!k || !v) return err->status;
    }
    int64_t T = k->shape[2], B = q->shape[0], Hq = q->shape[1], Sq = q->shape[2], D = q->shape[3];
    int64_t Hk = k->shape[1], Dv = v->shape[3], grp = Hq / Hk;
    /* symbolic batch and sequences: the Reshapes keep them by 0 and -1, and a symbolic
     * cache length is the frontier T - Sq (offset_kv) */
    bool sym = hc_tensor_is_symbolic(q) || hc_tensor_is_symbolic(k);
    bool sym_past = in[4] && sym_dim(in[4], 2);
    hc_tensor *bias = bias_of(&c, in[3], q->dtype, k);
    if (in[3] && !bias) return err->status;
    /* S = (Q c) @ (K c)^T, the query heads of one KV head as rows of one product */
    double scale = hc_node_attr_float(n, "scale", 0);
    if (scale == 0) scale = 1.0 / sqrt((double)D);
    hc_tensor *cs = scalar(&c, q->dtype, sqrt(scale));
    hc_tensor *qm[2] = {q, cs}, *km[2] = {k, cs};
    hc_tensor *qc = emit(&c, HC_OPK_MUL, 2, qm, 0, NULL), *kc = emit(&c, HC_OPK_MUL, 2, km, 0, NULL);
    static const int64_t kperm[4] = {0, 1, 3, 2};
    hc_attr kp = {.name = "perm", .kind = HC_ATTR_INTS, .n = 4, .ints = (int64_t *)kperm};
    hc_tensor *kt = emit(&c, HC_OPK_TRANSPOSE, 1, &kc, 1, &kp);
    hc_tensor *mm[2] = {reshape(&c, qc, 4, sym ? (int64_t[]){0, Hk, -1, D}
                                               : (int64_t[]){B, Hk, grp * Sq, D}), kt};
    hc_tensor *scores = reshape(&c, emit(&c, HC_OPK_MATMUL, 2, mm, 0, NULL), 4,
                                sym ? (int64_t[]){0, Hq, -1, 0} : (int64_t[]){B, Hq, Sq, T});
    if (!scores) return err->status;
    hc_attr at[7] = {
        {.name = "softcap", .kind = HC_ATTR_FLOAT, .f = hc_node_attr_float(n, "softcap", 0)},
        {.name = "causal", .kind = HC_ATTR_INT, .i = hc_node_attr_int(n, "is_causal", 0)},
        {.name = "offset", .kind = HC_ATTR_INT, .i = P},
        {.name = "left", .kind = HC_ATTR_INT, .i = hc_node_attr_int(n, "left_window_size", -1)},
        {.name = "right", .kind = HC_ATTR_INT, .i = hc_node_attr_int(n, "right_window_size", -1)},
        {.name = "qk_mode", .kind = HC_ATTR_INT, .i = -1},
        {.name = "offset_kv", .kind = HC_ATTR_INT, .i = 1},
    };
    int nat = sym_past ? 7 : 6; /* offset_kv only where the cache length is a symbol */
    hc_tensor *core[3] = {scores, bias, in[6]};
    int ncore = in[6] ? 3 : bias ? 2 : 1;
    hc_tensor *fy = NULL;
    if (n->outputs[0]) {
        hc_attr fa[7] = {{.name = "scale", .kind = HC_ATTR_FLOAT, .f = scale}, at[0], at[1],
                         at[2], at[3], at[4], at[6]};
        hc_tensor *fin[5] = {q, k, v, bias, in[6]};
        fy = fused(&c, target, fin, nat, fa);
        if (!fy && err->status != HC_OK) return err->status;
    }
    if (fy) {
        if (three)
            fy = reshape(&c, transpose0213(&c, fy), 3,
                         sym ? (int64_t[]){0, 0, Hq * Dv} : (int64_t[]){B, Sq, Hq * Dv});
        if (replace(&c, 0, fy)) return err->status;
    } else if (n->outputs[0]) {
        hc_tensor *p = emit(&c, HC_OPK_ATTENTION_CORE, ncore, core, nat, at);
        hc_tensor *pv[2] = {reshape(&c, p, 4, sym ? (int64_t[]){0, Hk, -1, 0}
                                                  : (int64_t[]){B, Hk, grp * Sq, T}), v};
        hc_tensor *y = reshape(&c, emit(&c, HC_OPK_MATMUL, 2, pv, 0, NULL), 4,
                               sym ? (int64_t[]){0, Hq, -1, Dv} : (int64_t[]){B, Hq, Sq, Dv});
        if (y && three)
            y = reshape(&c, transpose0213(&c, y), 3,
                        sym ? (int64_t[]){0, 0, Hq * Dv} : (int64_t[]){B, Sq, Hq * Dv});
        if (replace(&c, 0, y)) return err->status;
    }
    if (replace(&c, 1, k) || replace(&c, 2, v)) return err->status;
    if (n->noutputs > 3 && n->outputs[3]) {
        at[5].i = hc_node_attr_int(n, "qk_matmul_output_mode", 0);
        if (replace(&c, 3, emit(&c, HC_OPK_ATTENTION_CORE, ncore, core, nat, at))) return err->status;
    }
    return HC_OK;
}

static bool is_attention(const hc_node *n) { return n->op == HC_OPK_ATTENTION; }

static hc_status lower_attention_node(hc_graph *g, hc_node *n, void *target, hc_error *err) {
    return lower_one(g, n, target, err);
}

hc_status hc_pass_lower_attention(hc_graph *g, hc_error *err) {
    return hc_pass_lower_attention_with(g, NULL, err);
}

hc_status hc_pass_lower_attention_with(hc_graph *g, const hc_optimize_options *opt,
                                       hc_error *err) {
    const hc_target *target = hc_pass_target(opt);
    return hc_pass_lower_each_ctx(g, is_attention, lower_attention_node, (void *)target, err);
}
