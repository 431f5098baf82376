/* ops_pool.c — MAX_POOL_NCHWC / AVERAGE_POOL_NCHWC nodes on the CPU blocked pool template
 * (pool_nchwc_cpu.c). */
#include "graph/ops/nn_internal.h"
#include "target/cpu/templates/pool_nchwc.h"
#include "target/cpu/templates/registry.h"

/* ---- the channel-blocked template (src/target/cpu/templates/pool_nchwc_cpu.c) ---------------- */
/* MAX_POOL_NCHWC / AVERAGE_POOL_NCHWC: MaxPool / AveragePool (same attributes, same
 * Tasks) of a 3-D f32 pool over [n, cb, h, w, b] whose window is 1 along the block (made
 * by the layout pass, docs/nchwc.md), with b the target's lanes; NULL otherwise (the
 * auto-scheduler). */
static hc_func *schedule_pool(hc_arena *a, const hc_node *n, const hc_task *t,
                              const hc_target *target, const char *fname, const hc_sched_opts *opts,
                              hc_error *err) {
    (void)opts;
    (void)err;
    const hc_tensor *x = hc_nn_in(n, 0), *y = n->outputs[0];
    if (!x || x->ndim != 5 || x->dtype != HC_F32 || t->noutputs != 1 || hc_nn_out_present(n, 1) ||
        x->shape[4] != hc_target_f32_lanes(target))
        return NULL;
    /* dynamic shapes: a symbolic batch only (symbolic spatial sizes: the auto-scheduler) */
    for (int d = 1; d < 5; d++)
        if ((x->sym && x->sym[d]) || (y->sym && y->sym[d])) return NULL;
    const hc_sym *nsym = x->sym ? x->sym[0] : NULL;
    if (nsym && (!y->sym || !y->sym[0] || !hc_sym_equal(nsym, y->sym[0]))) return NULL;
    hc_nn_window w;
    hc_error e = {0};
    if (hc_nn_pool_window(n, &w, &e) != HC_OK) return NULL;
    if (w.kernel[2] != 1 || w.stride[2] != 1 || w.dilation[2] != 1 || w.pad_begin[2] != 0 ||
        w.pad_end[2] != 0 || w.out[2] != x->shape[4] || y->shape[2] != w.out[0] ||
        y->shape[3] != w.out[1])
        return NULL;
    hc_pool_nchwc_shape s = {
        .n = x->shape[0], .cb = x->shape[1], .h = x->shape[2], .w = x->shape[3],
        .oh = w.out[0], .ow = w.out[1], .kh = w.kernel[0], .kw = w.kernel[1],
        .sh = w.stride[0], .sw = w.stride[1], .dh = w.dilation[0], .dw = w.dilation[1],
        .pt = w.pad_begin[0], .pl = w.pad_begin[1], .pb = w.pad_end[0], .pr = w.pad_end[1],
        .block = (int)x->shape[4], .max = n->op == HC_OPK_MAX_POOL_NCHWC,
        .include_pad = hc_node_attr_int(n, "count_include_pad", 0) != 0, .nsym = nsym};
    int64_t work = hc_tensor_numel(y) * s.kh * s.kw;
    int threads = work < HC_AUTOSCHED_PARALLEL_MIN_WORK ? 1 : HC_MAX(target->caps.num_cores, 1);
    return hc_pool_nchwc_cpu(a, fname, &s, threads, &e);
}

const hc_template hc_cpu_template_max_pool_nchwc = {"pool_nchwc", HC_OPK_MAX_POOL_NCHWC,
                                                    schedule_pool, NULL, NULL,
                                                    .symbolic = true /* a symbolic batch */};
const hc_template hc_cpu_template_average_pool_nchwc = {"pool_nchwc", HC_OPK_AVERAGE_POOL_NCHWC,
                                                        schedule_pool, NULL, NULL,
                                                        .symbolic = true};
