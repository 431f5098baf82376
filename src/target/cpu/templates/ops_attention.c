/* ops_attention.c — ATTENTION_FUSED nodes on the CPU attention template (attention_cpu.c):
 * the template's shape for a node, its space and its program. The program's parameters
 * are the task's tensors themselves (Q, K, V, [bias], [nonpad], Y of the node's shapes),
 * so no rebinding is needed. */
#include "graph/ops/nn_internal.h"
#include "target/cpu/templates/attention.h"
#include "target/cpu/templates/registry.h"
#include "target/cpu/templates/select.h"

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
    return true;
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
    return hc_attn_cpu(a, fname, &s, &cfg, target, &e2); /* NULL: the auto-scheduler */
}

const hc_template hc_cpu_template_attention = {"attention", HC_OPK_ATTENTION_FUSED,
                                               schedule_attention, space_attention, NULL};
