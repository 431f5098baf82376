/* ops_winograd.c — the Winograd transform nodes (WINO_INPUT/OUTPUT and their blocked
 * forms) on the CPU transform templates (winograd_cpu.c, winograd_nchwc_cpu.c). */
#include "graph/ops/geometry.h"
#include "target/cpu/templates/registry.h"
#include "target/cpu/templates/winograd.h"

/* Dynamic shapes: the blocked transforms take a symbolic batch (the image side's dim 0, T =
 * batch * tiles per image on the V / M side); *nsym is that batch (NULL when fixed). Any
 * other symbolic dim, and any symbolic dim of the NCHW transforms, is declined (false: the
 * auto-scheduler takes the node). */
static bool batch_only(hc_arena *a, const hc_tensor *img, const hc_tensor *tiles, bool blocked,
                       int64_t per_image, const hc_sym **nsym) {
    *nsym = NULL;
    bool sym = false;
    for (int d = 0; d < img->ndim; d++) sym |= img->sym && img->sym[d];
    for (int d = 0; d < tiles->ndim; d++) sym |= tiles->sym && tiles->sym[d];
    if (!sym) return true;
    if (!blocked || !img->sym || !img->sym[0] || !tiles->sym || !tiles->sym[1]) return false;
    for (int d = 1; d < img->ndim; d++)
        if (img->sym[d]) return false;
    if (tiles->sym[0] || tiles->sym[2]) return false;
    if (!hc_sym_equal(tiles->sym[1], hc_sym_mul_c(a, img->sym[0], per_image))) return false;
    *nsym = img->sym[0];
    return true;
}

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
    hc_wino_geom w;
    if (hc_wino_node_geom(n, &w, &e2) != HC_OK) return NULL;
    if (input) {
        if (hc_wino_node_pads(n, pad, &e2) != HC_OK) return NULL;
        s = (hc_wino_shape){x->shape[0],
                            x->shape[1] * block,
                            x->shape[2],
                            x->shape[3],
                            pad[0],
                            pad[1],
                            x->shape[2] + pad[0] + pad[2] - (w.h->r - 1),
                            x->shape[3] + pad[1] + pad[3] - (w.w->r - 1)};
    } else {
        s = (hc_wino_shape){.n = y->shape[0], .c = y->shape[1] * block, .oh = y->shape[2],
                            .ow = y->shape[3]};
    }
    s.m = (int)hc_node_attr_int(n, "tile", 2);
    s.kh = w.h->r, s.kw = w.w->r;
    int64_t per_image = hc_cdiv(s.oh, w.h->m) * hc_cdiv(s.ow, w.w->m);
    if (!batch_only(a, img, input ? y : x, blocked, per_image, &s.nsym)) return NULL;
    int threads = target->caps.num_cores > 0 ? target->caps.num_cores : 1;
    if (blocked)
        return input ? hc_wino_input_nchwc_cpu(a, fname, &s, (int)block, threads, &e2)
                     : hc_wino_output_nchwc_cpu(a, fname, &s, (int)block, threads, &e2);
    return input ? hc_wino_input_cpu(a, fname, &s, threads, &e2)
                 : hc_wino_output_cpu(a, fname, &s, threads, &e2);
}

#define WINO(op, sym) {"winograd", op, schedule_wino, NULL, NULL, .symbolic = sym}
/* symbolic: the blocked transforms take a symbolic batch (batch_only) */
const hc_template hc_cpu_template_wino[4] = {WINO(HC_OPK_WINO_INPUT, false),
                                             WINO(HC_OPK_WINO_OUTPUT, false),
                                             WINO(HC_OPK_WINO_INPUT_NCHWC, true),
                                             WINO(HC_OPK_WINO_OUTPUT_NCHWC, true)};
