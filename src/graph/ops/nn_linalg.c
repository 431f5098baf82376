/* nn_linalg.c — Det (11, 22): the determinant of each M x M matrix of X [*, M, M].
 *
 * Gaussian elimination with partial pivoting, as LAPACK's getrf (numpy.linalg.det)
 * does it, in f64 whatever X's float type. A Task is a set of pure compute nodes (no
 * local arrays, no in-place updates), so the elimination is unrolled over the columns,
 * M being a compile-time constant: step k turns the trailing matrix A_k [*, s, s]
 * (s = M - k; A_0 = X) into A_{k+1} [*, s - 1, s - 1] through three nodes:
 *   amax_k[b] = max_r |A_k[b, r, 0]|
 *   piv_k[b]  = the first r with |A_k[b, r, 0]| == amax_k[b] (s - 1 when none: NaN)
 *   A_{k+1}[b, i, j] = A'[b, i+1, j+1] - A'[b, i+1, 0] / p * A_k[b, piv, j+1]
 * where A' is A_k with rows 0 and piv swapped and p = A_k[b, piv, 0] the pivot; the
 * factor is 0 when p is 0 (the whole column is then 0: the matrix is singular, its
 * determinant 0, and no division by a zero pivot makes a NaN). The output is the
 * product of the pivots, each negated when its step swapped two rows, times the last
 * 1 x 1 matrix. Each A_k is materialized by the auto-schedulers (read several times
 * per element, with a division), so the work is the elimination's O(M^3) per matrix,
 * and the temporaries hold about M^3 / 3 doubles per matrix: M is limited to
 * HC_DET_MAX_M. A 0 x 0 matrix has determinant 1 (numpy's). */
#include <string.h>

#include "graph/ops/nn_internal.h"

/* The unrolled elimination has 3 (M - 1) nodes: beyond this, refuse. */
#define HC_DET_MAX_M 64

hc_status hc_nn_infer_det(hc_node *n, hc_error *err) {
    const hc_tensor *x = hc_nn_in(n, 0);
    if (!x) return hc_node_fail(n, HC_ERR_INVALID, err, "input 0 is missing");
    hc_status st = hc_nn_need_float(n, 0, err);
    if (st || (st = hc_nn_need_rank(n, 0, 2, err))) return st;
    int64_t m = x->shape[x->ndim - 1];
    if (x->shape[x->ndim - 2] != m)
        return hc_node_fail(n, HC_ERR_INVALID, err,
                            "input 0 ('%s') must be [*, M, M]: its last two dims are %lld x %lld",
                            x->name, (long long)x->shape[x->ndim - 2], (long long)m);
    if (m > HC_DET_MAX_M)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err,
                            "input 0 ('%s') has %lld x %lld matrices: at most %d x %d (the "
                            "elimination is unrolled, one step per column)",
                            x->name, (long long)m, (long long)m, HC_DET_MAX_M, HC_DET_MAX_M);
    hc_node_set_output(n, 0, x->dtype, x->ndim - 2, x->shape);
    return HC_OK;
}

typedef struct det_ctx {
    int nb;                /* batch dims */
    int64_t s;             /* size of the current trailing matrix */
    const hc_tnode *mat;   /* A_k [*, s, s], f64 */
    const hc_tnode *amax;  /* amax_k [*] */
    const hc_tnode *piv;   /* piv_k [*], i64 */
    int steps;             /* M - 1 */
    const hc_tnode **mats; /* A_0 .. A_{M-1} */
    const hc_tnode **pivs; /* piv_0 .. piv_{M-2} */
    hc_dtype out;
    hc_var *const *b;      /* batch axes of the element being defined */
} det_ctx;

/* A[b..., row, col] */
static hc_expr *elem(hc_arena *a, const det_ctx *c, const hc_tnode *m, hc_expr *row,
                     hc_expr *col) {
    hc_expr *idx[HC_MAX_DIMS];
    for (int d = 0; d < c->nb; d++) idx[d] = hc_ref(a, c->b[d]);
    idx[c->nb] = row;
    idx[c->nb + 1] = col;
    return hc_at(a, m, idx);
}

/* |A_k[b, r, 0]| */
static hc_expr *col_abs(hc_arena *a, const det_ctx *c, hc_var *r) {
    return hc_math(a, HC_PRIM_ABS, elem(a, c, c->mat, hc_ref(a, r), hc_int(a, 0)), NULL);
}

static hc_expr *amax_fn(hc_arena *a, hc_var *const *axes, void *ctx) {
    det_ctx *c = ctx;
    c->b = axes;
    hc_var *r = hc_axis(a, "r");
    return hc_reduce(a, HC_REDUCE_MAX, 1, &r, &c->s, col_abs(a, c, r));
}

static hc_expr *piv_fn(hc_arena *a, hc_var *const *axes, void *ctx) {
    det_ctx *c = ctx;
    c->b = axes;
    hc_var *r = hc_axis(a, "r");
    hc_expr *hit = hc_eq(a, col_abs(a, c, r), hc_at_axes(a, c->amax, axes));
    hc_expr *v = hc_select(a, hit, hc_ref(a, r), hc_int(a, c->s - 1));
    return hc_reduce(a, HC_REDUCE_MIN, 1, &r, &c->s, v);
}

static hc_expr *step_fn(hc_arena *a, hc_var *const *axes, void *ctx) {
    det_ctx *c = ctx;
    c->b = axes;
    hc_expr *piv = hc_at_axes(a, c->piv, axes);
    hc_expr *row = hc_add(a, hc_ref(a, axes[c->nb]), hc_int(a, 1));
    hc_expr *col = hc_add(a, hc_ref(a, axes[c->nb + 1]), hc_int(a, 1));
    /* row `row` of A': A's row 0 where row is the pivot's row, else A's row itself */
    hc_expr *src = hc_select(a, hc_eq(a, row, piv), hc_int(a, 0), row);
    hc_expr *p = elem(a, c, c->mat, piv, hc_int(a, 0));
    hc_expr *zero = hc_f64(a, 0);
    hc_expr *f = hc_select(a, hc_binary(a, HC_OP_NE, p, zero),
                           hc_div(a, elem(a, c, c->mat, src, hc_int(a, 0)), p), zero);
    return hc_sub(a, elem(a, c, c->mat, src, col), hc_mul(a, f, elem(a, c, c->mat, piv, col)));
}

/* prod over k of (piv_k == 0 ? p_k : -p_k), times A_{M-1}[b, 0, 0] */
static hc_expr *det_fn(hc_arena *a, hc_var *const *axes, void *ctx) {
    det_ctx *c = ctx;
    c->b = axes;
    hc_expr *d = elem(a, c, c->mats[c->steps], hc_int(a, 0), hc_int(a, 0));
    for (int k = c->steps - 1; k >= 0; k--) {
        hc_expr *piv = hc_at_axes(a, c->pivs[k], axes);
        hc_expr *p = elem(a, c, c->mats[k], piv, hc_int(a, 0));
        p = hc_select(a, hc_eq(a, piv, hc_int(a, 0)), p, hc_unary(a, HC_OP_NEG, p));
        d = hc_mul(a, p, d);
    }
    return c->out == HC_F64 ? d : hc_cast(a, hc_type_scalar(c->out), d);
}

static hc_expr *one_fn(hc_arena *a, hc_var *const *axes, void *ctx) {
    (void)axes;
    return hc_const_num(a, ((det_ctx *)ctx)->out, 1);
}

hc_task *hc_nn_task_det(hc_arena *a, const hc_node *n, hc_error *err) {
    (void)err;
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    const hc_tensor *y = n->outputs[0];
    int64_t m = in[0]->shape[in[0]->ndim - 1];
    det_ctx c = {.nb = in[0]->ndim - 2, .out = y->dtype, .steps = (int)(m > 0 ? m - 1 : 0)};
    hc_tnode *out;
    if (m == 0) {
        out = hc_compute(a, y->name, y->ndim, y->shape, one_fn, &c);
        return hc_node_task(a, n, nin, in, 1, &out);
    }
    c.mats = HC_NEW_ARRAY(a, const hc_tnode *, c.steps + 1);
    c.pivs = HC_NEW_ARRAY(a, const hc_tnode *, c.steps + 1);
    c.mats[0] = in[0]->dtype == HC_F64
                    ? in[0]
                    : hc_compute_cast(a, hc_arena_printf(a, "%s_a0", y->name), in[0], HC_F64);
    int64_t shape[HC_MAX_DIMS];
    memcpy(shape, y->shape, sizeof(int64_t) * (size_t)c.nb);
    for (int k = 0; k < c.steps; k++) {
        c.s = m - k;
        c.mat = c.mats[k];
        c.amax = hc_compute(a, hc_arena_printf(a, "%s_amax%d", y->name, k), c.nb, shape,
                            amax_fn, &c);
        c.piv = hc_compute(a, hc_arena_printf(a, "%s_piv%d", y->name, k), c.nb, shape, piv_fn,
                           &c);
        c.pivs[k] = c.piv;
        shape[c.nb] = shape[c.nb + 1] = c.s - 1;
        c.mats[k + 1] = hc_compute(a, hc_arena_printf(a, "%s_a%d", y->name, k + 1), c.nb + 2,
                                   shape, step_fn, &c);
    }
    out = hc_compute(a, y->name, y->ndim, y->shape, det_fn, &c);
    return hc_node_task(a, n, nin, in, 1, &out);
}
