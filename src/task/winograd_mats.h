/* winograd_mats.h — the Winograd transform matrices: math shared by the transform Tasks
 * (src/graph/ops/internal.c), the conv lowering pass and the targets' templates. */
#ifndef HC_TASK_WINOGRAD_MATS_H
#define HC_TASK_WINOGRAD_MATS_H

/* The transform matrices of F(m x m, 3 x 3), m = 2 or 4, tiles of a = m + 2 inputs:
 * Y = A^T [(G g G^T) . (B^T d B)] A for a 3x3 filter g and an a x a input tile d
 * (Lavin and Gray 2015; the m = 4 points 0, +-1, +-2, infinity). */
typedef struct hc_wino_mats {
    int m, a;
    double bt[6][6]; /* a x a */
    double g[6][3];  /* a x 3 */
    double at[4][6]; /* m x a */
} hc_wino_mats;
/* NULL unless m is 2 or 4. */
const hc_wino_mats *hc_wino_matrices(int m);

#endif
