/* winograd_mats.h — the Winograd transform matrices: math shared by the transform Tasks
 * (src/graph/ops/internal.c), the conv lowering pass and the targets' templates. */
#ifndef HC_TASK_WINOGRAD_MATS_H
#define HC_TASK_WINOGRAD_MATS_H

#define HC_WINO_MAX_A 12 /* inputs per tile along one axis: F(6, 7) */
#define HC_WINO_MAX_R 7  /* taps along one axis */
#define HC_WINO_MAX_M 6  /* outputs per tile along one axis */

/* The 1-D transform F(m, r): m outputs of an r-tap correlation from a = m + r - 1 inputs,
 * y = A^T [(G g) . (B^T d)] for the filter g and the input run d. A 2-D kernel of kh x kw
 * taps uses F(mh, kh) along the rows and F(mw, kw) along the columns: y = A_h^T [(G_h g
 * G_w^T) . (B_h^T d B_w)] A_w, F(1, 1) (the identity) along an axis of one tap. */
typedef struct hc_wino_mats {
    int m, r, a;
    double bt[HC_WINO_MAX_A][HC_WINO_MAX_A]; /* a x a */
    double g[HC_WINO_MAX_A][HC_WINO_MAX_R];  /* a x r */
    double at[HC_WINO_MAX_M][HC_WINO_MAX_A]; /* m x a */
} hc_wino_mats;

/* F(m, r) for (m, r) = (1, 1), (2, 3), (4, 3) (Lavin and Gray 2015: the points 0, +-1,
 * +-2, infinity), (2, 5), (4, 5), (2, 7), (4, 7) and (6, 7) (Toom-Cook over 0, +-1, +-2,
 * +-1/2, for F(4, 7) +-3/2 and for F(6, 7) +-3/2 and +-2/3, with infinity:
 * scripts/wino_mats.py); NULL otherwise. Tile 6 has the one table: the 1-D kernels of 7
 * taps (1x7, 7x1), where it covers a 17-wide axis with 18 outputs against F(4, 7)'s 20. */
const hc_wino_mats *hc_wino_matrices_r(int m, int r);

/* The output tile along an axis of r taps for the tile attribute m: 1 for one tap (the
 * identity), else m. */
static inline int hc_wino_axis_m(int m, int r) { return r == 1 ? 1 : m; }
/* The transform along an axis of r taps for the tile attribute m: F(hc_wino_axis_m(m, r),
 * r), the one every user of a tile and a kernel takes (ops, templates, weights, rules);
 * NULL where there is no table. */
static inline const hc_wino_mats *hc_wino_axis(int m, int r) {
    return hc_wino_matrices_r(hc_wino_axis_m(m, r), r);
}

#endif
