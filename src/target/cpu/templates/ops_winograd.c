/* ops_winograd.c — the Winograd transform nodes (WINO_INPUT/OUTPUT and their blocked
 * forms) on the CPU transform templates (winograd_cpu.c, winograd_nchwc_cpu.c). */
#include "graph/ops/geometry.h"
#include "target/cpu/templates/registry.h"
#include "target/cpu/templates/winograd.h"

/* NULL: the auto-scheduler. */
static hc_func *schedule_wino(hc_arena *a, const hc_node *n, const hc_task *t,
                              const hc_target *target, const char *fname,
                              const hc_sched_opts *opts, hc_error *err) {
    (void)opts;
    (void)err;
    if (t->ninputs != 1 || t->noutputs != 1 || n->outputs[0]->dtype != HC_F32) return NULL;
    bool input = n->op == HC_OPK_WINO_INPUT || n->op == HC_OPK_WINO_INPUT_NCHWC;
    bool blocked = n->op == HC_OPK_WINO_INPUT_NCHWC || n->op == HC_OPK_WINO_OUTPUT_NCHWC;
    const hc_tensor *x = n->inputs[0], *y = n->outputs[0];
    const hc_tensor *img = input ? x : y; /* the NCHW or NCHW{b}c side */
    int64_t block = blocked ? img->shape[4] : 1;
    if (blocked && block != hc_target_f32_lanes(target)) return NULL;
    hc_wino_shape s = {0};
    int64_t pad[4] = {0, 0, 0, 0};
    hc_error e2 = {0};
    const hc_wino_mats *w = hc_wino_node_mats(n, &e2);
    if (!w) return NULL;
    if (input) {
        if (hc_wino_node_pads(n, pad, &e2) != HC_OK) return NULL;
        s = (hc_wino_shape){x->shape[0], x->shape[1] * block, x->shape[2], x->shape[3], pad[0],
                            pad[1], x->shape[2] + pad[0] + pad[2] - 2,
                            x->shape[3] + pad[1] + pad[3] - 2};
    } else {
        s = (hc_wino_shape){.n = y->shape[0], .c = y->shape[1] * block, .oh = y->shape[2],
                            .ow = y->shape[3]};
    }
    s.m = w->m;
    int threads = target->caps.num_cores > 0 ? target->caps.num_cores : 1;
    if (blocked)
        return input ? hc_wino_input_nchwc_cpu(a, fname, &s, (int)block, threads, &e2)
                     : hc_wino_output_nchwc_cpu(a, fname, &s, (int)block, threads, &e2);
    return input ? hc_wino_input_cpu(a, fname, &s, threads, &e2)
                 : hc_wino_output_cpu(a, fname, &s, threads, &e2);
}

#define WINO(op) {"winograd", op, schedule_wino, NULL, NULL}
const hc_template hc_cpu_template_wino[4] = {WINO(HC_OPK_WINO_INPUT), WINO(HC_OPK_WINO_OUTPUT),
                                             WINO(HC_OPK_WINO_INPUT_NCHWC),
                                             WINO(HC_OPK_WINO_OUTPUT_NCHWC)};
