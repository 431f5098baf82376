/* templates_gpu.h — the GPU templates (src/target/gpu/templates/). */
#ifndef HC_TARGET_GPU_TEMPLATES_H
#define HC_TARGET_GPU_TEMPLATES_H

#include "target/target.h"

/* The paper's SIMT matmul (matmul_gpu.c). */
extern const hc_template hc_gpu_matmul_template;
/* Depthwise 2-D convs with the input window in shared memory (conv_dw_gpu.c). */
extern const hc_template hc_gpu_conv_dw_template;

#endif
