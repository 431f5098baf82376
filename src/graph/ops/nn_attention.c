/* nn_attention.c — Attention (opsets 23, 24, 25) and the internal op it is lowered to.
 *
 * ONNX's Attention: shape inference here; the lower_attention pass (src/passes/attention.c)
 * brings 3-D inputs to [B, heads, seq, head_size], concatenates the KV cache (past_key,
 * past_value: the present_* outputs), turns a bool mask into 0 / -inf and pads it to the
 * total sequence, and leaves one ATTENTION_CORE node per output it needs.
 *
 * The scores go through the matmul template: S = (Q * c) @ (K * c)^T with c = sqrt(scale),
 * GQA by viewing Q as [B, Hkv, (Hq / Hkv) * Sq, D] (query heads of one group are adjacent),
 * then ATTENTION_CORE, and Y = P @ V through the matmul template again (P viewed the same
 * way). ATTENTION_CORE is one fused Task (one kernel on every target) over the scores: the
 * softcap, the bias of the mask, the causal frontier, the sliding window and the padding of
 * nonpad_kv_seqlen, and the softmax over the keys (a row whose bias is all -inf gives 0,
 * as the reference's guard), written without loads under select branches so that its
 * loops vectorize (exp included). It is computed in f32 for f16/bf16 scores (f64 for f64). A
 * one-kernel Task for the whole of attention (scores, softmax and P @ V) measured 6 to 8
 * times slower than this (the auto-scheduler neither register-blocks Q K^T nor fuses the
 * loop nests per query row; docs/ops_nn.md), so the products stay with the template.
 * With attribute qk_mode >= 0 ATTENTION_CORE gives the qk_matmul_output of that mode
 * instead of P (0, 1: the softcapped scores, as the reference; 2: with the bias; 3: P).
 *
 * Inputs of ATTENTION_CORE: S [B, Hq, Sq, T], bias (optional: S's dtype, rank 4, each dim
 * 1 or the full size), nonpad (optional: i64 [B]). Attributes: softcap, causal, offset
 * (the causal frontier: j <= i + offset, the cache length; ignored with nonpad: its
 * nonpad[b] - Sq), left, right (window sizes, -1: unbounded), qk_mode.
 *
 * ATTENTION_FUSED(Q [B, Hq, Sq, D], K [B, Hk, T, D], V [B, Hk, T, Dv], bias, nonpad) is all
 * of it in one op: Y = core(scale * Q K^T) V with ATTENTION_CORE's attributes plus scale
 * (query head h reads KV head h / (Hq / Hk)). Its Task is the three steps above composed
 * (the reference, and the auto-schedulers of targets without its template); the CPU's
 * template (src/target/cpu/templates/attention_cpu.c) is the one-kernel program that the
 * lower_attention and fuse_attention passes make it for. */
#include <math.h>
#include <string.h>

#include "graph/ops/nn_internal.h"

/* ---- ONNX Attention ------------------------------------------------------------------- */
hc_status hc_nn_infer_attention(hc_node *n, hc_error *err) {
    const hc_tensor *q = hc_nn_in(n, 0), *k = hc_nn_in(n, 1), *v = hc_nn_in(n, 2);
    const hc_tensor *mask = hc_nn_in(n, 3), *pk = hc_nn_in(n, 4), *pv = hc_nn_in(n, 5);
    const hc_tensor *np = hc_nn_in(n, 6);
    if (!q || !k || !v) return hc_node_fail(n, HC_ERR_INVALID, err, "Q, K and V are required");
    if (hc_nn_need_float(n, 0, err)) return err->status;
    if (k->dtype != q->dtype || v->dtype != q->dtype)
        return hc_node_fail(n, HC_ERR_INVALID, err, "Q, K and V must have one dtype");
    if (q->ndim != k->ndim || q->ndim != v->ndim || (q->ndim != 3 && q->ndim != 4))
        return hc_node_fail(n, HC_ERR_INVALID, err, "Q, K and V must all be 3-D or all 4-D");
    int64_t qh = hc_node_attr_int(n, "q_num_heads", 0), kh = hc_node_attr_int(n, "kv_num_heads", 0);
    int64_t B = q->shape[0], Hq, Hk, Sq, S, D, Dv;
    if (q->ndim == 3) {
        if (qh <= 0 || kh <= 0)
            return hc_node_fail(n, HC_ERR_INVALID, err, "3-D inputs need q_num_heads and "
                                "kv_num_heads");
        if (q->shape[2] % qh || k->shape[2] % kh || v->shape[2] % kh)
            return hc_node_fail(n, HC_ERR_INVALID, err, "hidden sizes %lld, %lld, %lld are not "
                                "multiples of the head counts %lld, %lld",
                                (long long)q->shape[2], (long long)k->shape[2],
                                (long long)v->shape[2], (long long)qh, (long long)kh);
        Hq = qh, Hk = kh, Sq = q->shape[1], S = k->shape[1];
        D = q->shape[2] / qh, Dv = v->shape[2] / kh;
        if (k->shape[2] / kh != D)
            return hc_node_fail(n, HC_ERR_INVALID, err, "Q and K head sizes differ");
        if (v->shape[1] != S || k->shape[0] != B || v->shape[0] != B)
            return hc_node_fail(n, HC_ERR_INVALID, err, "K and V must agree in batch and sequence");
    } else {
        if (n->opset >= 25 && (hc_node_attr(n, "q_num_heads") || hc_node_attr(n, "kv_num_heads")))
            return hc_node_fail(n, HC_ERR_INVALID, err, "q_num_heads and kv_num_heads are for "
                                "3-D inputs (opset 25)");
        Hq = q->shape[1], Hk = k->shape[1], Sq = q->shape[2], S = k->shape[2];
        D = q->shape[3], Dv = v->shape[3];
        if (k->shape[3] != D)
            return hc_node_fail(n, HC_ERR_INVALID, err, "Q and K head sizes differ (%lld, %lld)",
                                (long long)D, (long long)k->shape[3]);
        if (k->shape[0] != B || v->shape[0] != B || v->shape[1] != Hk || v->shape[2] != S)
            return hc_node_fail(n, HC_ERR_INVALID, err, "K [%lld, %lld, %lld, ...] and V must agree "
                                "with Q's batch and each other", (long long)k->shape[0],
                                (long long)k->shape[1], (long long)k->shape[2]);
    }
    if (Hk <= 0 || Hq % Hk)
        return hc_node_fail(n, HC_ERR_INVALID, err, "%lld query heads are not a multiple of %lld "
                            "key/value heads", (long long)Hq, (long long)Hk);
    if ((pk == NULL) != (pv == NULL))
        return hc_node_fail(n, HC_ERR_INVALID, err, "past_key and past_value go together");
    int64_t P = 0;
    if (pk) {
        if (pk->ndim != 4 || pv->ndim != 4 || pk->shape[0] != B || pk->shape[1] != Hk ||
            pk->shape[3] != D || pv->shape[0] != B || pv->shape[1] != Hk ||
            pv->shape[2] != pk->shape[2] || pv->shape[3] != Dv || pk->dtype != q->dtype ||
            pv->dtype != q->dtype)
            return hc_node_fail(n, HC_ERR_INVALID, err, "past_key must be [%lld, %lld, P, %lld] "
                                "and past_value [%lld, %lld, P, %lld] of Q's dtype",
                                (long long)B, (long long)Hk, (long long)D, (long long)B,
                                (long long)Hk, (long long)Dv);
        P = pk->shape[2];
    }
    int64_t T = P + S;
    if (np) {
        if (pk)
            return hc_node_fail(n, HC_ERR_INVALID, err, "nonpad_kv_seqlen cannot be combined "
                                "with past_key / past_value");
        if (np->ndim != 1 || np->shape[0] != B || np->dtype != HC_I64)
            return hc_node_fail(n, HC_ERR_INVALID, err, "nonpad_kv_seqlen must be i64 [%lld]",
                                (long long)B);
    }
    if (mask) {
        if (mask->dtype != HC_BOOL && mask->dtype != q->dtype)
            return hc_node_fail(n, HC_ERR_INVALID, err, "attn_mask '%s' is %s (bool or Q's %s)",
                                mask->name, hc_dtype_name(mask->dtype), hc_dtype_name(q->dtype));
        if (mask->ndim < 1 || mask->ndim > 4 || mask->shape[mask->ndim - 1] > T)
            return hc_node_fail(n, HC_ERR_INVALID, err, "attn_mask '%s' must have rank 1 to 4 and "
                                "at most %lld columns", mask->name, (long long)T);
        const int64_t full[4] = {B, Hq, Sq, T};
        for (int d = 0; d < mask->ndim - 1; d++) {
            int64_t md = mask->shape[d], want = full[4 - mask->ndim + d];
            if (md != 1 && md != want)
                return hc_node_fail(n, HC_ERR_INVALID, err, "attn_mask '%s' does not broadcast to "
                                    "[%lld, %lld, %lld, %lld]", mask->name, (long long)B,
                                    (long long)Hq, (long long)Sq, (long long)T);
        }
    }
    int64_t mode = hc_node_attr_int(n, "qk_matmul_output_mode", 0);
    if (mode < 0 || mode > 3)
        return hc_node_fail(n, HC_ERR_INVALID, err, "qk_matmul_output_mode %lld (0 to 3)",
                            (long long)mode);
    if (hc_node_attr_int(n, "left_window_size", -1) < -1 ||
        hc_node_attr_int(n, "right_window_size", -1) < -1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "window sizes must be -1 or >= 0");
    hc_dtype dt = q->dtype;
    if (q->ndim == 3) hc_node_set_output(n, 0, dt, 3, (int64_t[]){B, Sq, Hq * Dv});
    else hc_node_set_output(n, 0, dt, 4, (int64_t[]){B, Hq, Sq, Dv});
    if (n->noutputs > 1) hc_node_set_output(n, 1, dt, 4, (int64_t[]){B, Hk, T, D});
    if (n->noutputs > 2) hc_node_set_output(n, 2, dt, 4, (int64_t[]){B, Hk, T, Dv});
    if (n->noutputs > 3) hc_node_set_output(n, 3, dt, 4, (int64_t[]){B, Hq, Sq, T});
    return HC_OK;
}

hc_task *hc_nn_task_attention(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)a;
    hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "has no Task of its own: the lower_attention pass "
                 "(hc_graph_optimize) rewrites it into the fused attention op first");
    return NULL;
}

/* ---- ATTENTION_CORE ------------------------------------------------------------------- */
hc_status hc_nn_infer_attention_core(hc_node *n, hc_error *err) {
    const hc_tensor *sc = hc_nn_in(n, 0), *bias = hc_nn_in(n, 1), *np = hc_nn_in(n, 2);
    if (!sc || sc->ndim != 4 || !hc_dtype_is_float(sc->dtype))
        return hc_node_fail(n, HC_ERR_INVALID, err, "the scores must be 4-D floats");
    if (bias) {
        bool ok = bias->ndim == 4 && bias->dtype == sc->dtype;
        for (int d = 0; ok && d < 4; d++) ok = bias->shape[d] == 1 || bias->shape[d] == sc->shape[d];
        if (!ok) return hc_node_fail(n, HC_ERR_INVALID, err, "bias must broadcast to the scores");
    }
    if (np && (np->ndim != 1 || np->shape[0] != sc->shape[0] || np->dtype != HC_I64))
        return hc_node_fail(n, HC_ERR_INVALID, err, "nonpad must be i64 [%lld]",
                            (long long)sc->shape[0]);
    hc_node_set_output(n, 0, sc->dtype, 4, sc->shape);
    return HC_OK;
}

typedef struct att {
    hc_arena *a;
    const hc_tnode *bias, *np;
    const hc_type *ct; /* the compute type */
    int64_t Sq;
    bool causal;
    int64_t offset, left, right;
    /* dynamic shapes: the scores' symbolic dims [B, Hq, Sq, T] (NULL where fixed), and the
     * frontier offset's expression where it is one (offset_kv: T - Sq) */
    const hc_sym *const *ssym;
    const hc_sym *off_sym;
} att;

static hc_expr *cnum(const att *t, double v) { return hc_const_num(t->a, t->ct->dtype, v); }

/* e in the compute type (no cast when it is one already: an identity cast keeps the
 * vectorizer from the loop, and exp from its vector form). */
static hc_expr *to_ct(const att *t, hc_expr *e) {
    return e->type->dtype == t->ct->dtype ? e : hc_cast(t->a, t->ct, e);
}

/* The frontier offset of row (b): nonpad[b] - Sq, or the cache length. */
static hc_expr *offset_of(const att *t, hc_expr *b) {
    hc_arena *a = t->a;
    if (t->np)
        return hc_sub(a, hc_at(a, t->np, (hc_expr *[]){b}),
                      t->ssym && t->ssym[2] ? hc_sym_expr(a, t->ssym[2]) : hc_int(a, t->Sq));
    return t->off_sym ? hc_sym_expr(a, t->off_sym) : hc_int(a, t->offset);
}

/* The bias at (b, h, i, j): the mask's value plus -inf where the causal frontier, the
 * window or the padding exclude j. */
static hc_expr *bias_at(const att *t, hc_expr *b, hc_expr *h, hc_expr *i, hc_expr *j) {
    hc_arena *a = t->a;
    hc_expr *v = cnum(t, 0);
    if (t->bias) {
        hc_expr *idx[4] = {b, h, i, j};
        for (int d = 0; d < 4; d++) {
            const hc_sym *bs = t->bias->sym[d], *full = t->ssym ? t->ssym[d] : NULL;
            if (!bs && t->bias->shape[d] == 1) idx[d] = hc_int(a, 0);
            else if (bs && !(full && hc_sym_equal(bs, full))) /* may be 1 at run time */
                idx[d] = hc_select(a, hc_eq(a, hc_sym_expr(a, bs), hc_int(a, 1)), hc_int(a, 0), idx[d]);
        }
        v = to_ct(t, hc_at(a, t->bias, idx));
    }
    hc_expr *ok = NULL;
    hc_expr *diff = hc_sub(a, hc_add(a, i, offset_of(t, b)), j); /* i + offset - j */
    if (t->causal) ok = hc_nn_and(a, ok, hc_binary(a, HC_OP_GE, diff, hc_int(a, 0)));
    if (t->left >= 0) ok = hc_nn_and(a, ok, hc_le(a, diff, hc_int(a, t->left)));
    if (t->right >= 0)
        ok = hc_nn_and(a, ok, hc_le(a, hc_unary(a, HC_OP_NEG, diff), hc_int(a, t->right)));
    if (t->np) ok = hc_nn_and(a, ok, hc_lt(a, j, hc_at(a, t->np, (hc_expr *[]){b})));
    /* v + (ok ? 0 : -inf): no load under a select branch (emit_c.c compiles a function
     * with one without loop if-conversion, which would keep exp scalar) */
    return ok ? hc_add(a, v, hc_select(a, ok, cnum(t, 0), cnum(t, -INFINITY))) : v;
}

/* Fresh axes for a 4-D compute node. */
static void map4(hc_arena *a, hc_var **ax) {
    for (int d = 0; d < 4; d++) ax[d] = hc_axis(a, "i");
}

/* The attention probabilities (or, with mode >= 0, the qk_matmul_output of that mode) of
 * the scores s [B, Hq, Sq, T]: softcapped, biased and masked, softmax over the keys. In
 * the compute type; `pname` names P. */
static hc_tnode *core_of(att *t, const hc_tnode *s, double softcap, int64_t mode,
                         const char *pname, hc_error *err) {
    hc_arena *a = t->a;
    const int64_t *shape = s->shape;
    hc_var *ax[4];
    /* the scores in the compute type, softcapped */
    map4(a, ax);
    hc_expr *sv = to_ct(t, hc_at_axes(a, s, ax));
    if (softcap > 0)
        sv = hc_mul(a, hc_math(a, HC_PRIM_TANH, hc_div(a, sv, cnum(t, softcap)), NULL),
                    cnum(t, softcap));
    const hc_sym *const *ss = s->sym, *rsym[4] = {s->sym[0], s->sym[1], s->sym[2], NULL};
    hc_tnode *sc = hc_tnode_set_sym(hc_compute_with_axes(a, "capped", 4, shape, ax, sv), ss);
    /* z = scores + bias; the bias's own row maximum tells a fully masked row */
    bool any_bias = t->bias || t->np || t->causal || t->left >= 0 || t->right >= 0;
    hc_tnode *bias = NULL, *z = sc;
    if (any_bias) {
        map4(a, ax);
        bias = hc_tnode_set_sym(hc_compute_with_axes(a, "bias", 4, shape, ax,
                                                     bias_at(t, hc_ref(a, ax[0]), hc_ref(a, ax[1]),
                                                             hc_ref(a, ax[2]), hc_ref(a, ax[3]))),
                                ss);
        z = hc_compute_binop(a, "z", HC_OP_ADD, sc, bias, err);
        if (!z) return NULL;
    }
    if (mode == 0 || mode == 1) return sc;
    if (mode == 2) return z;
    /* per row: safe = (max == -inf ? 0 : max); e = exp(z - safe); rinv = (fully
     * masked ? 0 : 1 / (sum == 0 ? 1 : sum)); p = e * rinv. The row values are nodes
     * of their own (materialized: read once per key), so the loops over the keys are
     * the plain vector loops of a softmax. */
    hc_tnode *m = hc_compute_reduce(a, "max", z, 1, (int[]){3}, true, HC_REDUCE_MAX, err);
    if (!m) return NULL;
    const int64_t rshape[4] = {shape[0], shape[1], shape[2], 1};
    map4(a, ax);
    /* max(max, lowest finite): the reference's 0 for a row of -inf gives the same 0s
     * (every exp is exp(-inf)), without a select over a load */
    double lowest = t->ct->dtype == HC_F64 ? -1.7976931348623157e308 : -3.4028234663852886e38;
    hc_tnode *safe = hc_tnode_set_sym(
        hc_compute_with_axes(a, "safe_max", 4, rshape, ax, hc_max(a, hc_at_axes(a, m, ax), cnum(t, lowest))),
        rsym);
    map4(a, ax);
    hc_expr *row[4] = {hc_ref(a, ax[0]), hc_ref(a, ax[1]), hc_ref(a, ax[2]), hc_int(a, 0)};
    hc_tnode *e = hc_tnode_set_sym(
        hc_compute_with_axes(
            a, "exp", 4, shape, ax,
            hc_math(a, HC_PRIM_EXP, hc_sub(a, hc_at_axes(a, z, ax), hc_at(a, safe, row)), NULL)),
        ss);
    hc_tnode *l = hc_compute_reduce(a, "sum", e, 1, (int[]){3}, true, HC_REDUCE_SUM, err);
    if (!l) return NULL;
    map4(a, ax);
    /* 1 / (sum == 0 ? 1 : sum), as sum + (sum == 0); sum is 0 or in [1, T] */
    hc_expr *lv = hc_at_axes(a, l, ax);
    hc_expr *r = hc_div(a, cnum(t, 1), hc_add(a, lv, hc_cast(a, t->ct, hc_eq(a, lv, cnum(t, 0)))));
    if (any_bias) {
        hc_tnode *bm = hc_compute_reduce(a, "bmax", bias, 1, (int[]){3}, true, HC_REDUCE_MAX, err);
        if (!bm) return NULL;
        hc_expr *bv = hc_at_axes(a, bm, ax);
        hc_expr *dead = hc_and(a, hc_math(a, HC_PRIM_ISINF, bv, NULL), hc_lt(a, bv, cnum(t, 0)));
        r = hc_mul(a, r, hc_select(a, dead, cnum(t, 0), cnum(t, 1))); /* r is finite */
    }
    hc_tnode *rinv = hc_tnode_set_sym(hc_compute_with_axes(a, "rinv", 4, rshape, ax, r), rsym);
    map4(a, ax);
    hc_expr *prow[4] = {hc_ref(a, ax[0]), hc_ref(a, ax[1]), hc_ref(a, ax[2]), hc_int(a, 0)};
    hc_expr *pv = hc_mul(a, hc_at_axes(a, e, ax), hc_at(a, rinv, prow));
    return hc_tnode_set_sym(hc_compute_with_axes(a, pname, 4, shape, ax, pv), ss);
}

/* The attributes the core shares with the fused op. */
/* The attributes the core shares with the fused op; s: the scores. offset_kv 1 says the
 * offset is T - Sq, from the dims (symbolic ones: the expression). */
static void att_attrs(att *t, const hc_node *n, const hc_tnode *s) {
    t->causal = hc_node_attr_int(n, "causal", 0) != 0;
    t->offset = hc_node_attr_int(n, "offset", 0);
    t->left = hc_node_attr_int(n, "left", -1), t->right = hc_node_attr_int(n, "right", -1);
    t->ssym = hc_tnode_is_symbolic(s) ? s->sym : NULL;
    if (hc_node_attr_int(n, "offset_kv", 0)) {
        t->offset = s->shape[3] - s->shape[2];
        if (t->ssym) {
            const hc_sym *off = hc_sym_sub(t->a, hc_tnode_dim_sym(t->a, s, 3), hc_tnode_dim_sym(t->a, s, 2));
            int64_t c;
            if (!hc_sym_is_const(off, &c)) t->off_sym = off;
        }
    }
}

hc_task *hc_nn_task_attention_core(hc_arena *a, const hc_node *n, hc_error *err) {
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    const hc_tnode *s = in[0];
    att t = {.a = a};
    int next = 1;
    if (hc_nn_in(n, 1)) t.bias = in[next++];
    if (hc_nn_in(n, 2)) t.np = in[next++];
    hc_dtype dt = s->dtype;
    t.ct = hc_type_scalar(dt == HC_F64 ? HC_F64 : HC_F32);
    t.Sq = s->shape[2];
    att_attrs(&t, n, s);
    int64_t mode = hc_node_attr_int(n, "qk_mode", -1);
    hc_tnode *out = core_of(&t, s, hc_node_attr_float(n, "softcap", 0), mode,
                            dt == t.ct->dtype ? n->outputs[0]->name : "probs", err);
    if (!out) return NULL;
    hc_tnode *y = out->dtype == dt && mode == 3 ? out
                  : out->dtype == dt && mode < 0 ? out
                                                 : hc_compute_cast(a, n->outputs[0]->name, out, dt);
    return hc_node_task(a, n, nin, in, 1, &y);
}

/* ---- ATTENTION_FUSED ------------------------------------------------------------------ */
hc_status hc_nn_infer_attention_fused(hc_node *n, hc_error *err) {
    const hc_tensor *q = hc_nn_in(n, 0), *k = hc_nn_in(n, 1), *v = hc_nn_in(n, 2);
    const hc_tensor *bias = hc_nn_in(n, 3), *np = hc_nn_in(n, 4);
    if (!q || !k || !v || q->ndim != 4 || k->ndim != 4 || v->ndim != 4 ||
        !hc_dtype_is_float(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype)
        return hc_node_fail(n, HC_ERR_INVALID, err, "Q, K and V must be 4-D floats of one dtype");
    int64_t B = q->shape[0], Hq = q->shape[1], Sq = q->shape[2], D = q->shape[3];
    int64_t Hk = k->shape[1], T = k->shape[2];
    if (k->shape[0] != B || v->shape[0] != B || v->shape[1] != Hk || v->shape[2] != T ||
        k->shape[3] != D || Hk <= 0 || Hq % Hk)
        return hc_node_fail(n, HC_ERR_INVALID, err, "K [%lld, %lld, %lld, %lld] and V do not fit "
                            "Q [%lld, %lld, %lld, %lld]", (long long)k->shape[0],
                            (long long)Hk, (long long)T, (long long)k->shape[3], (long long)B,
                            (long long)Hq, (long long)Sq, (long long)D);
    const int64_t full[4] = {B, Hq, Sq, T};
    if (bias) {
        bool ok = bias->ndim == 4 && bias->dtype == q->dtype;
        for (int d = 0; ok && d < 4; d++) ok = bias->shape[d] == 1 || bias->shape[d] == full[d];
        if (!ok) return hc_node_fail(n, HC_ERR_INVALID, err, "bias must broadcast to the scores");
    }
    if (np && (np->ndim != 1 || np->shape[0] != B || np->dtype != HC_I64))
        return hc_node_fail(n, HC_ERR_INVALID, err, "nonpad must be i64 [%lld]", (long long)B);
    hc_node_set_output(n, 0, q->dtype, 4, (int64_t[]){B, Hq, Sq, v->shape[3]});
    return HC_OK;
}

typedef struct fused_ctx {
    const att *t;
    const hc_tnode *x, *y; /* the product's operands: Q and K, or P and V */
    int64_t grp;           /* query heads per KV head */
    int64_t len;           /* the reduced extent */
    const hc_sym *lsym;    /* its expression where symbolic (the keys of P @ V) */
    bool second;           /* P @ V (else Q K^T) */
    double scale;          /* of Q K^T */
    hc_var *const *o;      /* the output axes */
} fused_ctx;

/* Q[b, h, i, r] * K[b, h / grp, j, r], or P[b, h, i, r] * V[b, h / grp, r, e]. */
static hc_expr *fused_term(hc_arena *a, hc_var *const *r, void *vctx) {
    const fused_ctx *c = vctx;
    hc_expr *b = hc_ref(a, c->o[0]), *h = hc_ref(a, c->o[1]), *i = hc_ref(a, c->o[2]);
    hc_expr *j = hc_ref(a, c->o[3]), *k = hc_ref(a, r[0]);
    hc_expr *kh = hc_div(a, h, hc_int(a, c->grp));
    hc_expr *x = to_ct(c->t, hc_at(a, c->x, (hc_expr *[]){b, h, i, k}));
    hc_expr *y = c->second ? hc_at(a, c->y, (hc_expr *[]){b, kh, k, j})
                           : hc_at(a, c->y, (hc_expr *[]){b, kh, j, k});
    return hc_mul(a, x, to_ct(c->t, y));
}

static hc_expr *fused_out(hc_arena *a, hc_var *const *axes, void *vctx) {
    fused_ctx *c = vctx;
    c->o = axes;
    hc_var *r = hc_axis(a, "r0"); /* as hc_reduce_expr names it */
    hc_expr *sext = c->lsym ? hc_sym_expr(a, c->lsym) : NULL;
    hc_expr *sum = hc_reduce_sym(a, HC_REDUCE_SUM, 1, &r, &c->len, &sext, fused_term(a, &r, c));
    return c->second ? sum : hc_mul(a, sum, cnum(c->t, c->scale));
}

/* Y = softmax-core(scale * Q K^T) V, as ATTENTION_CORE computes the middle: the reference
 * interpreter and the auto-schedulers (GPU targets) run this; the CPU template
 * (src/target/cpu/templates/attention_cpu.c) computes the same in one kernel. */
hc_task *hc_nn_task_attention_fused(hc_arena *a, const hc_node *n, hc_error *err) {
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    const hc_tnode *q = in[0], *k = in[1], *v = in[2];
    att t = {.a = a};
    int next = 3;
    if (hc_nn_in(n, 3)) t.bias = in[next++];
    if (hc_nn_in(n, 4)) t.np = in[next++];
    hc_dtype dt = q->dtype;
    t.ct = hc_type_scalar(dt == HC_F64 ? HC_F64 : HC_F32);
    t.Sq = q->shape[2];
    int64_t grp = q->shape[1] / k->shape[1];
    const int64_t sshape[4] = {q->shape[0], q->shape[1], q->shape[2], k->shape[2]};
    const hc_sym *ssym[4] = {q->sym[0], q->sym[1], q->sym[2], k->sym[2]};
    fused_ctx c1 = {&t, q, k, grp, q->shape[3], NULL, false, hc_node_attr_float(n, "scale", 1), NULL};
    hc_tnode *scores = hc_tnode_set_sym(hc_compute(a, "scores", 4, sshape, fused_out, &c1), ssym);
    att_attrs(&t, n, scores);
    hc_tnode *p = core_of(&t, scores, hc_node_attr_float(n, "softcap", 0), -1, "probs", err);
    if (!p) return NULL;
    fused_ctx c2 = {&t, p, v, grp, k->shape[2], k->sym[2], true, 1, NULL};
    const int64_t yshape[4] = {q->shape[0], q->shape[1], q->shape[2], v->shape[3]};
    const hc_sym *ysym[4] = {q->sym[0], q->sym[1], q->sym[2], v->sym[3]};
    bool same = dt == t.ct->dtype;
    hc_tnode *y = hc_tnode_set_sym(
        hc_compute(a, same ? n->outputs[0]->name : "y", 4, yshape, fused_out, &c2), ysym);
    if (!same) y = hc_compute_cast(a, n->outputs[0]->name, y, dt);
    return hc_node_task(a, n, nin, in, 1, &y);
}
