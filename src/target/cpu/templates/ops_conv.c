/* ops_conv.c — Conv nodes on the CPU direct conv template (conv_dw_cpu.c). */
#include "graph/ops/nn_internal.h"
#include "target/cpu/templates/conv_dw.h"
#include "target/cpu/templates/registry.h"
#include "target/cpu/templates/select.h"

/* ---- the direct conv template ------------------------------------------------------ */
/* The template's shape for a 2-D f32 Conv; false for anything else (the auto-scheduler).
 * Group-1 convs reach it only where src/passes/lower.c keeps them (direct_pays). */
static bool direct_template_shape(const hc_node *n, hc_conv_dw_shape *s) {
    const hc_tensor *x = hc_nn_in(n, 0), *wt = hc_nn_in(n, 1), *b = hc_nn_in(n, 2),
                    *y = n->outputs[0];
    if (n->op != HC_OPK_CONV || !x || !wt || !y || !y->shape_known || x->ndim != 4 ||
        x->dtype != HC_F32 || wt->dtype != HC_F32 || (b && b->dtype != HC_F32))
        return false;
    hc_nn_window w;
    int64_t cg, mg, m;
    hc_error e = {0};
    if (hc_nn_conv_geometry(n, false, &w, &cg, &mg, &m, &e) ||
        hc_nn_window_forward(n, &w, false, &e))
        return false;
    *s = (hc_conv_dw_shape){
        .n = x->shape[0], .c = x->shape[1], .h = x->shape[2], .w = x->shape[3],
        .m = m, .group = hc_node_attr_int(n, "group", 1),
        .kh = w.kernel[0], .kw = w.kernel[1], .sh = w.stride[0], .sw = w.stride[1],
        .dh = w.dilation[0], .dw = w.dilation[1],
        .pt = w.pad_begin[0], .pl = w.pad_begin[1], .pb = w.pad_end[0], .pr = w.pad_end[1],
        .oh = w.out[0], .ow = w.out[1], .bias = b != NULL};
    /* dynamic shapes: a symbolic batch only (symbolic spatial sizes: the auto-scheduler) */
    for (int d = 1; d < 4; d++)
        if ((x->sym && x->sym[d]) || (y->sym && y->sym[d])) return false;
    if (wt->sym || (b && b->sym)) return false;
    if (x->sym && x->sym[0]) {
        if (!y->sym || !y->sym[0] || !hc_sym_equal(x->sym[0], y->sym[0])) return false;
        s->nsym = x->sym[0];
    }
    return y->shape[2] == s->oh && y->shape[3] == s->ow &&
           hc_conv_dw_validate_shape(s, &e) == HC_OK;
}

static int space_conv(const hc_node *n, const hc_target *target, int level) {
    hc_conv_dw_shape s;
    if (!direct_template_shape(n, &s)) return 0;
    return hc_conv_dw_space(target, &s, level, NULL, 0);
}

static hc_func *schedule_conv(hc_arena *a, const hc_node *n, const hc_task *t,
                              const hc_target *target, const char *fname, const hc_sched_opts *opts,
                              hc_error *err) {
    hc_conv_dw_shape s;
    if (!direct_template_shape(n, &s) || t->ninputs != (s.bias ? 3 : 2) || t->noutputs != 1)
        return NULL;
    hc_conv_dw_config cfg = hc_conv_dw_default_config(target, &s);
    if (!HC_CPU_SELECT_CONFIG(cfg, hc_conv_dw_space, target, &s, n, opts, err)) return NULL;
    /* every output element is stored once with its final value: write_once holds */
    hc_error e2 = {0};
    hc_func *f = hc_conv_dw_cpu(a, fname, &s, &cfg, target, &e2); /* NULL: the auto-scheduler */
    HC_CPU_DESCRIBE_CONFIG(a, f, hc_conv_dw_config_print, cfg);
    return f;
}

const hc_template hc_cpu_template_conv = {"conv_direct", HC_OPK_CONV, schedule_conv, space_conv,
                                          NULL, .symbolic = true /* a symbolic batch */};
