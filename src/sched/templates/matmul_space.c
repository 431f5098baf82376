/* matmul_space.c — the matmul template's schedule space (level 0 only for now). */
#include "sched/matmul.h"

int hc_matmul_space(const hc_target *t, const hc_matmul_shape *s, int level,
                    hc_matmul_config *out, int max) {
    (void)level;
    if (out && max > 0) out[0] = hc_matmul_default_config(t, s);
    return 1;
}
