/* ops_nchwc.c — CONV_NCHWC nodes on the CPU channel-blocked conv template
 * (conv_nchwc_cpu.c). */
#include "target/cpu/templates/conv_nchwc.h"
#include "graph/ops/geometry.h"
#include "target/cpu/templates/registry.h"
#include "target/cpu/templates/select.h"

/* Dynamic shapes: a symbolic batch (the outermost dim of X and Y) is the template's
 * s->nsym; any other symbolic dim (spatial sizes) is declined: the auto-scheduler takes
 * the node. */
static bool batch_only(const hc_node *n, hc_conv_nchwc_shape *s) {
    const hc_tensor *x = n->inputs[0], *y = n->outputs[0];
    s->nsym = NULL;
    for (int d = 1; d < x->ndim; d++)
        if (x->sym && x->sym[d]) return false;
    for (int d = 1; y && d < y->ndim; d++)
        if (y->sym && y->sym[d]) return false;
    for (int i = 1; i < n->ninputs; i++)
        if (n->inputs[i] && n->inputs[i]->sym) return false;
    if (x->sym && x->sym[0]) {
        if (!y || !y->sym || !y->sym[0] || !hc_sym_equal(x->sym[0], y->sym[0])) return false;
        s->nsym = x->sym[0];
    }
    return true;
}

static bool template_shape(const hc_node *n, const hc_target *target, hc_conv_nchwc_shape *s) {
    hc_error e = {0};
    if (hc_conv_nchwc_shape_of(n, s, &e) != HC_OK || n->inputs[0]->dtype != HC_F32) return false;
    return batch_only(n, s) && s->block == hc_target_f32_lanes(target) &&
           hc_conv_nchwc_validate_shape(s, &e) == HC_OK;
}

static int space_conv_nchwc(const hc_node *n, const hc_target *target, int level) {
    hc_conv_nchwc_shape s;
    if (!template_shape(n, target, &s)) return 0;
    return hc_conv_nchwc_space(target, &s, level, NULL, 0);
}

static hc_func *schedule_conv_nchwc(hc_arena *a, const hc_node *n, const hc_task *t,
                                    const hc_target *target, const char *fname,
                                    const hc_sched_opts *opts, hc_error *err) {
    hc_conv_nchwc_shape s;
    if (!template_shape(n, target, &s) || t->ninputs != (s.bias ? 3 : 2) || t->noutputs != 1)
        return NULL;
    hc_conv_nchwc_config cfg = hc_conv_nchwc_default_config(target, &s);
    if (!HC_CPU_SELECT_CONFIG(cfg, hc_conv_nchwc_space, target, &s, n, opts, err)) return NULL;
    hc_error e2 = {0};
    hc_func *f = hc_conv_nchwc_cpu(a, fname, &s, &cfg, target, &e2); /* NULL: the auto-scheduler */
    HC_CPU_DESCRIBE_CONFIG(a, f, hc_conv_nchwc_config_print, cfg);
    return f;
}

const hc_template hc_cpu_template_conv_nchwc = {"conv_nchwc", HC_OPK_CONV_NCHWC,
                                                schedule_conv_nchwc, space_conv_nchwc, NULL,
                                                .symbolic = true /* a symbolic batch */};

/* ---- CONV_NCHWC_Q8: the int8 program ------------------------------------------------- */
static bool q8_shape(const hc_node *n, const hc_target *target, hc_conv_nchwc_shape *s) {
    hc_error e = {0};
    if (hc_conv_q8_shape_of(n, s, &e) != HC_OK || target->caps.isa < HC_ISA_AVX2) return false;
    return batch_only(n, s) && s->block == hc_target_f32_lanes(target) && hc_conv_nchwc_validate_shape(s, &e) == HC_OK;
}

static int space_conv_q8(const hc_node *n, const hc_target *target, int level) {
    hc_conv_nchwc_shape s;
    if (!q8_shape(n, target, &s)) return 0;
    return hc_conv_q8_space(target, &s, level, NULL, 0);
}

static hc_func *schedule_conv_q8(hc_arena *a, const hc_node *n, const hc_task *t,
                                 const hc_target *target, const char *fname,
                                 const hc_sched_opts *opts, hc_error *err) {
    hc_conv_nchwc_shape s;
    if (!q8_shape(n, target, &s) || t->ninputs != 5 || t->noutputs != 1) return NULL;
    hc_conv_nchwc_config cfg = hc_conv_q8_default_config(target, &s);
    if (!HC_CPU_SELECT_CONFIG(cfg, hc_conv_q8_space, target, &s, n, opts, err)) return NULL;
    float inv = (float)(1.0 / hc_node_attr_float(n, "x_scale", 1));
    hc_error e2 = {0};
    hc_func *f = hc_conv_q8_cpu(a, fname, &s, inv, hc_node_attr_int(n, "x_zero", 0), &cfg,
                                target, &e2); /* NULL: the auto-scheduler */
    HC_CPU_DESCRIBE_CONFIG(a, f, hc_conv_nchwc_config_print, cfg);
    return f;
}

const hc_template hc_cpu_template_conv_q8 = {"conv_q8", HC_OPK_CONV_NCHWC_Q8, schedule_conv_q8,
                                             space_conv_q8, NULL,
                                             .symbolic = true /* a symbolic batch */};
