/* ops_attention.c — ATTENTION_FUSED nodes on the CPU attention template (attention_cpu.c):
 * the template's shape for a node, its space and its program. The program's parameters
 * are the task's tensors themselves (Q, K, V, [bias], [nonpad], Y of the node's shapes),
 * so no rebinding is needed. */
#include "graph/ops/nn_internal.h"
#include "target/cpu/templates/attention.h"
#include "target/cpu/templates/registry.h"
#include "target/cpu/templates/select.h"

/* x, or NULL where it is a constant. */
static const hc_sym *sym_or_null(const hc_sym *x) {
    int64_t c;
    return hc_sym_is_const(x, &c) ? NULL : x;
}

/* The symbolic extents of s (dynamic shapes): a symbolic batch, query count and key count
 * are the template's (the same expressions wherever the op repeats them); false for
 * symbolic heads or head sizes, and for a bias dim that is not 1 or the scores' own
 * expression (a fixed one against a symbolic dim would hold at the hints only). */
static bool attn_sym_of(const hc_node *n, hc_attn_shape *s) {
    const hc_tensor *q = hc_nn_in(n, 0), *k = hc_nn_in(n, 1), *v = hc_nn_in(n, 2);
    const hc_tensor *bias = hc_nn_in(n, 3), *np = hc_nn_in(n, 4);
    if (!hc_tensor_is_symbolic(q) && !hc_tensor_is_symbolic(k) && !hc_tensor_is_symbolic(v) &&
        !hc_tensor_is_symbolic(bias) && !hc_tensor_is_symbolic(np))
        return true;
    const hc_tensor *fixed[3] = {q, k, v};
    for (int i = 0; i < 3; i++)
        if (fixed[i]->sym && (fixed[i]->sym[1] || fixed[i]->sym[3])) return false;
    const hc_sym *B = hc_tensor_dim(q, 0), *Sq = hc_tensor_dim(q, 2), *T = hc_tensor_dim(k, 2);
    if (!hc_sym_equal(hc_tensor_dim(k, 0), B) || !hc_sym_equal(hc_tensor_dim(v, 0), B) ||
        !hc_sym_equal(hc_tensor_dim(v, 2), T) || (np && !hc_sym_equal(hc_tensor_dim(np, 0), B)))
        return false;
    s->Bs = sym_or_null(B), s->Sqs = sym_or_null(Sq), s->Ts = sym_or_null(T);
    const hc_sym *full[4] = {s->Bs, NULL, s->Sqs, s->Ts};
    for (int d = 0; bias && d < 4; d++) {
        const hc_sym *bd = sym_or_null(hc_tensor_dim(bias, d));
        if (bd ? !full[d] || !hc_sym_equal(bd, full[d]) : full[d] && bias->shape[d] != 1)
            return false;
        s->bias_sym[d] = bd;
    }
    return true;
}

/* The template shape of node n, or false when the template does not take it (not f32). */
static bool attn_shape_of(const hc_node *n, hc_attn_shape *s) {
    const hc_tensor *q = hc_nn_in(n, 0), *k = hc_nn_in(n, 1), *v = hc_nn_in(n, 2);
    const hc_tensor *bias = hc_nn_in(n, 3), *np = hc_nn_in(n, 4);
    if (!q || !k || !v || q->ndim != 4 || k->ndim != 4 || v->ndim != 4 || q->dtype != HC_F32 ||
        k->dtype != HC_F32 || v->dtype != HC_F32 || (bias && (bias->dtype != HC_F32 || bias->ndim != 4)))
        return false;
    *s = (hc_attn_shape){.B = q->shape[0], .Hq = q->shape[1], .Hk = k->shape[1],
                         .Sq = q->shape[2], .T = k->shape[2], .D = q->shape[3],
                         .Dv = v->shape[3], .bias = bias != NULL, .nonpad = np != NULL,
                         .scale = hc_node_attr_float(n, "scale", 1),
                         .softcap = hc_node_attr_float(n, "softcap", 0),
                         .causal = hc_node_attr_int(n, "causal", 0) != 0,
                         .offset = hc_node_attr_int(n, "offset", 0),
                         .left = hc_node_attr_int(n, "left", -1),
                         .right = hc_node_attr_int(n, "right", -1)};
    for (int d = 0; d < 4; d++) s->bias_shape[d] = bias ? bias->shape[d] : 1;
    s->offset_kv = hc_node_attr_int(n, "offset_kv", 0) != 0;
    if (s->offset_kv) s->offset = s->T - s->Sq;
    return attn_sym_of(n, s);
}

static int space_attention(const hc_node *n, const hc_target *target, int level) {
    hc_attn_shape s;
    if (!attn_shape_of(n, &s)) return 0;
    return hc_attn_space(target, &s, level, NULL, 0);
}

static hc_func *schedule_attention(hc_arena *a, const hc_node *n, const hc_task *t,
                                   const hc_target *target, const char *fname,
                                   const hc_sched_opts *opts, hc_error *err) {
    hc_attn_shape s;
    if (!attn_shape_of(n, &s) || !hc_attn_applies(target, &s) ||
        t->ninputs != 3 + s.bias + s.nonpad || t->noutputs != 1)
        return NULL;
    hc_attn_config cfg = hc_attn_default_config(target, &s);
    if (!HC_CPU_SELECT_CONFIG(cfg, hc_attn_space, target, &s, n, opts, err)) return NULL;
    hc_error e2 = {0};
    hc_func *f = hc_attn_cpu(a, fname, &s, &cfg, target, &e2); /* NULL: the auto-scheduler */
    HC_CPU_DESCRIBE_CONFIG(a, f, hc_attn_config_print, cfg);
    return f;
}

/* symbolic: a symbolic batch, query count and key count */
const hc_template hc_cpu_template_attention = {"attention", HC_OPK_ATTENTION_FUSED,
                                               schedule_attention, space_attention, NULL, true};
