/* registry_gpu.c — the GPU targets' templates, by op. */
#include "target/gpu/gpu.h"
#include "target/gpu/templates/templates_gpu.h"

const hc_template *hc_gpu_find_template(const hc_target *t, hc_op_kind op) {
    (void)t;
    if (op == HC_OPK_MATMUL) return &hc_gpu_matmul_template;
    if (op == HC_OPK_CONV) return &hc_gpu_conv_dw_template; /* declines other convs */
    return NULL;
}
