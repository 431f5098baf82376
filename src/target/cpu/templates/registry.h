/* registry.h — the CPU target's templates, one hc_template per op (registry.c). */
#ifndef HC_TARGET_CPU_REGISTRY_H
#define HC_TARGET_CPU_REGISTRY_H

#include "target/cpu/cpu.h"

extern const hc_template hc_cpu_template_matmul;
extern const hc_template hc_cpu_template_conv;
extern const hc_template hc_cpu_template_conv_nchwc;
extern const hc_template hc_cpu_template_conv_q8;
extern const hc_template hc_cpu_template_max_pool_nchwc;
extern const hc_template hc_cpu_template_average_pool_nchwc;
extern const hc_template hc_cpu_template_wino[4];
extern const hc_template hc_cpu_template_attention;

#endif
