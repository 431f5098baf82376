/* registry.c — which op the CPU target schedules with which template. */
#include "target/cpu/templates/registry.h"

const hc_template *hc_cpu_find_template(const hc_target *t, hc_op_kind op) {
    (void)t;
    static const hc_template *const all[] = {
        &hc_cpu_template_matmul,          &hc_cpu_template_conv,
        &hc_cpu_template_conv_nchwc,      &hc_cpu_template_max_pool_nchwc,
        &hc_cpu_template_average_pool_nchwc, &hc_cpu_template_wino[0],
        &hc_cpu_template_wino[1],         &hc_cpu_template_wino[2],
        &hc_cpu_template_wino[3],         &hc_cpu_template_conv_q8,
        &hc_cpu_template_attention,
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->op == op) return all[i];
    return NULL;
}
