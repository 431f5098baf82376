/* nn_matmul.c — Gemm, MatMul (numpy batch broadcast, 1-D operands), Einsum, and
 * their Tasks. */
#include <string.h>

#include "graph/ops/nn_internal.h"

/* ---- Gemm --------------------------------------------------------------------------- */
typedef struct gemm_dims {
    int64_t m, n, k;
    bool ta, tb;
} gemm_dims;

static hc_status gemm_dims_of(const hc_node *n, gemm_dims *d, hc_error *err) {
    const hc_tensor *A = hc_nn_in(n, 0), *B = hc_nn_in(n, 1), *C = hc_nn_in(n, 2);
    if (A->ndim != 2 || B->ndim != 2)
        return hc_node_fail(n, HC_ERR_INVALID, err, "A and B must be 2-D (got rank %d and %d)",
                            A->ndim, B->ndim);
    if (A->dtype != B->dtype || (C && C->dtype != A->dtype))
        return hc_node_fail(n, HC_ERR_INVALID, err, "inputs have different dtypes");
    if (A->dtype == HC_BOOL)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "bool inputs are not supported");
    d->ta = hc_node_attr_int(n, "transA", 0) != 0, d->tb = hc_node_attr_int(n, "transB", 0) != 0;
    d->m = A->shape[d->ta ? 1 : 0], d->k = A->shape[d->ta ? 0 : 1];
    int64_t kb = B->shape[d->tb ? 1 : 0];
    d->n = B->shape[d->tb ? 0 : 1];
    if (kb != d->k)
        return hc_node_fail(n, HC_ERR_INVALID, err, "inner dimensions differ: A gives K = %lld, B "
                       "gives %lld", (long long)d->k, (long long)kb);
    if (C) {
        int nd;
        int64_t out[HC_MAX_DIMS], mn[2] = {d->m, d->n};
        if (C->ndim > 2 || hc_broadcast_shape(2, mn, C->ndim, C->shape, &nd, out, NULL) ||
            out[0] != d->m || out[1] != d->n)
            return hc_node_fail(n, HC_ERR_INVALID, err,
                                "C ('%s') does not broadcast to [%lld, %lld]", C->name,
                                (long long)d->m, (long long)d->n);
    }
    return HC_OK;
}

hc_status hc_nn_infer_gemm(hc_node *n, hc_error *err) {
    gemm_dims d = {0};
    if (gemm_dims_of(n, &d, err)) return err->status;
    /* versions 1 and 6: C is required, and broadcasts only with broadcast=1 */
    const hc_tensor *c = n->ninputs > 2 ? n->inputs[2] : NULL;
    bool legacy = hc_node_attr(n, "legacy_broadcast") != NULL; /* marked by the importer */
    if (legacy && !c)
        return hc_node_fail(n, HC_ERR_INVALID, err, "C is required before opset 7");
    if (legacy && !hc_node_attr_int(n, "legacy_broadcast", 0) &&
        (c->ndim != 2 || c->shape[0] != d.m || c->shape[1] != d.n))
        return hc_node_fail(n, HC_ERR_INVALID, err, "C must be %lldx%lld without broadcast=1 "
                            "(opset %d)", (long long)d.m, (long long)d.n, n->opset);
    hc_node_set_output(n, 0, hc_nn_in(n, 0)->dtype, 2, (int64_t[]){d.m, d.n});
    return HC_OK;
}

typedef struct gemm_ctx {
    const hc_tnode *A, *B, *C;
    gemm_dims d;
    double alpha, beta;
    hc_var *const *o;
} gemm_ctx;

static hc_expr *gemm_term(hc_arena *a, hc_var *const *r, void *vctx) {
    const gemm_ctx *c = vctx;
    hc_expr *i = hc_ref(a, c->o[0]), *j = hc_ref(a, c->o[1]), *k = hc_ref(a, r[0]);
    hc_expr *x = hc_at(a, c->A, c->d.ta ? (hc_expr *[]){k, i} : (hc_expr *[]){i, k});
    hc_expr *y = hc_at(a, c->B, c->d.tb ? (hc_expr *[]){j, k} : (hc_expr *[]){k, j});
    return hc_mul(a, x, y);
}

static hc_expr *gemm_out(hc_arena *a, hc_var *const *axes, void *vctx) {
    gemm_ctx *c = vctx;
    c->o = axes;
    hc_dtype t = c->A->dtype;
    hc_expr *v = hc_reduce_expr(a, 1, &c->d.k, gemm_term, c, HC_REDUCE_SUM);
    int kd = c->d.ta ? 0 : 1;
    if (c->A->sym[kd]) hc_reduce_set_extent(a, v, 0, hc_tnode_extent(a, c->A, kd));
    if (c->alpha != 1.0) v = hc_mul(a, hc_const_num(a, t, c->alpha), v);
    if (c->C && c->beta != 0.0) {
        hc_expr *cv = hc_at_broadcast(a, c->C, 2, axes);
        if (c->beta != 1.0) cv = hc_mul(a, hc_const_num(a, t, c->beta), cv);
        v = hc_add(a, v, cv);
    }
    return v;
}

hc_task *hc_nn_task_gemm(hc_arena *a, const hc_node *n, hc_error *err) {
    gemm_ctx c = {.alpha = hc_node_attr_float(n, "alpha", 1.0),
                  .beta = hc_node_attr_float(n, "beta", 1.0)};
    if (gemm_dims_of(n, &c.d, err)) return NULL;
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    c.A = in[0], c.B = in[1], c.C = nin > 2 ? in[2] : NULL;
    const hc_tensor *y = n->outputs[0];
    hc_tnode *out = hc_compute(a, y->name, 2, y->shape, gemm_out, &c);
    return hc_node_task(a, n, nin, in, 1, &out);
}

/* ---- MatMul ------------------------------------------------------------------------- */
/* Output batch dims (numpy broadcast of A's and B's leading dims), M, N, K. */


hc_status hc_nn_matmul_dims(const hc_node *n, hc_nn_mm_dims *d, hc_error *err) {
    return hc_nn_matmul_dims_of(n, hc_nn_in(n, 0), hc_nn_in(n, 1), true, d, err);
}

hc_status hc_nn_matmul_dims_of(const hc_node *n, const hc_tensor *A, const hc_tensor *B,
                               bool same_dtype, hc_nn_mm_dims *d, hc_error *err) {
    if (A->ndim < 1 || B->ndim < 1)
        return hc_node_fail(n, HC_ERR_INVALID, err, "operands must have rank >= 1");
    if (same_dtype && A->dtype != B->dtype)
        return hc_node_fail(n, HC_ERR_INVALID, err, "A is %s but B is %s", hc_dtype_name(A->dtype),
                       hc_dtype_name(B->dtype));
    if (A->dtype == HC_BOOL)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "bool inputs are not supported");
    d->a_vec = A->ndim == 1, d->b_vec = B->ndim == 1;
    d->m = d->a_vec ? 1 : A->shape[A->ndim - 2];
    d->k = A->shape[A->ndim - 1];
    int64_t kb = d->b_vec ? B->shape[0] : B->shape[B->ndim - 2];
    d->n = d->b_vec ? 1 : B->shape[B->ndim - 1];
    if (kb != d->k)
        return hc_node_fail(n, HC_ERR_INVALID, err, "inner dimensions differ: %lld vs %lld",
                       (long long)d->k, (long long)kb);
    int na = d->a_vec ? 0 : A->ndim - 2, nb = d->b_vec ? 0 : B->ndim - 2;
    hc_error e2 = {0};
    if (hc_broadcast_shape(na, A->shape, nb, B->shape, &d->nb, d->batch, &e2))
        return hc_node_fail(n, HC_ERR_INVALID, err, "batch dims: %s", e2.msg);
    int out = d->nb + !d->a_vec + !d->b_vec;
    if (out > HC_MAX_DIMS)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "rank %d too large", out);
    return HC_OK;
}

hc_status hc_nn_infer_matmul(hc_node *n, hc_error *err) {
    hc_nn_mm_dims d;
    if (hc_nn_matmul_dims(n, &d, err)) return err->status;
    int64_t shape[HC_MAX_DIMS];
    int nd = d.nb;
    memcpy(shape, d.batch, sizeof(int64_t) * (size_t)d.nb);
    if (!d.a_vec) shape[nd++] = d.m;
    if (!d.b_vec) shape[nd++] = d.n;
    hc_node_set_output(n, 0, hc_nn_in(n, 0)->dtype, nd, shape);
    return HC_OK;
}

typedef struct mm_ctx {
    const hc_tnode *A, *B;
    hc_nn_mm_dims d;
    hc_var *const *o;
    const hc_sym *const *osym; /* the output's symbolic dims, or NULL */
} mm_ctx;

/* Index of operand t (rank nd_mat matrix dims at the end) for output batch axes, then
 * the two matrix indices (only those the operand has). */
static hc_expr *mm_at(hc_arena *a, const mm_ctx *c, const hc_tnode *t, int nmat, hc_expr *r0,
                      hc_expr *r1) {
    hc_expr *idx[HC_MAX_DIMS];
    int tb = t->ndim - nmat;
    for (int i = 0; i < tb; i++) {
        int oi = c->d.nb - tb + i;
        idx[i] = hc_broadcast_index(a, t, i, c->o[oi], c->osym ? c->osym[oi] : NULL);
    }
    if (nmat == 2) idx[tb] = r0, idx[tb + 1] = r1;
    else idx[tb] = r0;
    return hc_at(a, t, idx);
}

static hc_expr *mm_term(hc_arena *a, hc_var *const *r, void *vctx) {
    const mm_ctx *c = vctx;
    int p = c->d.nb;
    hc_expr *k = hc_ref(a, r[0]);
    hc_expr *i = c->d.a_vec ? NULL : hc_ref(a, c->o[p++]);
    hc_expr *j = c->d.b_vec ? NULL : hc_ref(a, c->o[p]);
    hc_expr *x = c->d.a_vec ? mm_at(a, c, c->A, 1, k, NULL) : mm_at(a, c, c->A, 2, i, k);
    hc_expr *y = c->d.b_vec ? mm_at(a, c, c->B, 1, k, NULL) : mm_at(a, c, c->B, 2, k, j);
    return hc_mul(a, x, y);
}

static hc_expr *mm_out(hc_arena *a, hc_var *const *axes, void *vctx) {
    mm_ctx *c = vctx;
    c->o = axes;
    hc_expr *r = hc_reduce_expr(a, 1, &c->d.k, mm_term, c, HC_REDUCE_SUM);
    int kd = c->A->ndim - 1;
    if (c->A->sym[kd]) hc_reduce_set_extent(a, r, 0, hc_tnode_extent(a, c->A, kd));
    return r;
}

hc_task *hc_nn_task_matmul(hc_arena *a, const hc_node *n, hc_error *err) {
    mm_ctx c;
    if (hc_nn_matmul_dims(n, &c.d, err)) return NULL;
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    c.A = in[0], c.B = in[1];
    c.osym = hc_node_output_sym(n, 0);
    const hc_tensor *y = n->outputs[0];
    hc_tnode *out = hc_compute(a, y->name, y->ndim, y->shape, mm_out, &c);
    return hc_node_task(a, n, nin, in, 1, &out);
}

/* ---- Einsum ------------------------------------------------------------------------- */
#define EIN_LETTERS 52
#define EIN_LABELS (EIN_LETTERS + HC_MAX_DIMS) /* letters, then ellipsis dims */

typedef struct ein {
    int nops;
    int ndims[HC_MAX_DIMS];
    int label[HC_MAX_DIMS][HC_MAX_DIMS]; /* per operand and dim */
    int nout;
    int out[HC_MAX_DIMS];
    int64_t size[EIN_LABELS];
    bool used[EIN_LABELS];
    int nred;
    int red[HC_MAX_DIMS];
} ein;

static int ein_letter(char ch) {
    if (ch >= 'a' && ch <= 'z') return ch - 'a';
    if (ch >= 'A' && ch <= 'Z') return 26 + ch - 'A';
    return -1;
}

/* Parse one term (operand rank r, or -1 for the output) into labels; ell = ellipsis rank. */
static hc_status ein_term(const hc_node *n, const char *s, size_t len, int r, int ell, int *labels,
                          int *count, hc_error *err) {
    int letters = 0, cnt = 0;
    bool has_ell = false;
    for (size_t i = 0; i < len; i++) letters += ein_letter(s[i]) >= 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (has_ell || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
                return hc_node_fail(n, HC_ERR_INVALID, err, "bad ellipsis in equation");
            has_ell = true, i += 2;
            int e = r >= 0 ? r - letters : ell;
            if (e < 0 || e > ell)
                return hc_node_fail(n, HC_ERR_INVALID, err, "ellipsis covers %d dims", e);
            for (int j = 0; j < e && cnt < HC_MAX_DIMS; j++)
                labels[cnt++] = EIN_LETTERS + ell - e + j;
            continue;
        }
        int l = ein_letter(s[i]);
        if (l < 0)
            return hc_node_fail(n, HC_ERR_INVALID, err, "equation has character '%c'", s[i]);
        if (cnt == HC_MAX_DIMS) return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "too many dims");
        labels[cnt++] = l;
    }
    if (r >= 0 && cnt != r)
        return hc_node_fail(n, HC_ERR_INVALID, err, "term '%.*s' has %d labels for a rank-%d input",
                       (int)len, s, cnt, r);
    *count = cnt;
    return HC_OK;
}

static hc_status ein_parse(const hc_node *n, ein *e, hc_error *err) {
    const char *eq0 = hc_node_attr_string(n, "equation", NULL);
    if (!eq0) return hc_node_fail(n, HC_ERR_INVALID, err, "equation is required");
    char eq[256];
    size_t len = 0;
    for (const char *p = eq0; *p && len + 1 < sizeof eq; p++)
        if (*p != ' ') eq[len++] = *p;
    eq[len] = 0;
    memset(e, 0, sizeof *e);
    e->nops = n->ninputs;
    if (e->nops > HC_MAX_DIMS) return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "too many operands");
    const char *arrow = strstr(eq, "->");
    size_t lhs = arrow ? (size_t)(arrow - eq) : len;
    int ell = 0, counts[HC_MAX_DIMS] = {0};
    const char *p = eq;
    for (int i = 0; i < e->nops; i++) {
        const char *end = memchr(p, ',', (size_t)(eq + lhs - p));
        if (!end) end = eq + lhs;
        if (i + 1 < e->nops && end == eq + lhs)
            return hc_node_fail(n, HC_ERR_INVALID, err, "equation has fewer terms than %d inputs",
                           e->nops);
        const hc_tensor *t = hc_nn_in(n, i);
        int letters = 0;
        for (const char *q = p; q < end; q++) letters += ein_letter(*q) >= 0;
        counts[i] = t->ndim - letters;
        p = end + 1;
    }
    if (p < eq + lhs)
        return hc_node_fail(n, HC_ERR_INVALID, err, "equation has more terms than inputs");
    for (int i = 0; i < e->nops; i++) /* ellipsis rank: the largest an operand implies */
        ell = HC_MAX(ell, counts[i]);
    p = eq;
    for (int i = 0; i < e->nops; i++) {
        const char *end = memchr(p, ',', (size_t)(eq + lhs - p));
        if (!end) end = eq + lhs;
        const hc_tensor *t = hc_nn_in(n, i);
        if (ein_term(n, p, (size_t)(end - p), t->ndim, ell, e->label[i], &e->ndims[i], err))
            return err->status;
        for (int d = 0; d < t->ndim; d++) {
            int l = e->label[i][d];
            int64_t sz = t->shape[d];
            bool is_ell = l >= EIN_LETTERS;
            if (e->used[l] && e->size[l] != sz && !(is_ell && (sz == 1 || e->size[l] == 1)))
                return hc_node_fail(n, HC_ERR_INVALID, err, "label sizes differ (%lld vs %lld)",
                               (long long)e->size[l], (long long)sz);
            if (!e->used[l] || e->size[l] == 1) e->size[l] = sz;
            e->used[l] = true;
        }
        p = end + 1;
    }
    bool in_out[EIN_LABELS] = {false};
    if (arrow) {
        if (ein_term(n, arrow + 2, strlen(arrow + 2), -1, ell, e->out, &e->nout, err))
            return err->status;
        for (int i = 0; i < e->nout; i++) {
            int l = e->out[i];
            if (!e->used[l] || in_out[l])
                return hc_node_fail(n, HC_ERR_INVALID, err, "output label %d is not an input label "
                               "or repeats", l);
            in_out[l] = true;
        }
    } else { /* implicit: ellipsis dims, then letters used once, in alphabetical order */
        int times[EIN_LABELS] = {0};
        for (int i = 0; i < e->nops; i++)
            for (int d = 0; d < e->ndims[i]; d++) times[e->label[i][d]]++;
        for (int j = 0; j < ell; j++) e->out[e->nout++] = EIN_LETTERS + j;
        static const char order[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        for (int c = 0; order[c]; c++) {
            int l = ein_letter(order[c]);
            if (times[l] != 1) continue;
            if (e->nout == HC_MAX_DIMS) return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "rank > 8");
            e->out[e->nout++] = l;
        }
        for (int i = 0; i < e->nout; i++) in_out[e->out[i]] = true;
    }
    for (int l = 0; l < EIN_LABELS; l++) {
        if (!e->used[l] || in_out[l]) continue;
        if (e->nred == HC_MAX_DIMS)
            return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "more than %d summed labels",
                                HC_MAX_DIMS);
        e->red[e->nred++] = l;
    }
    return HC_OK;
}

hc_status hc_nn_einsum_labels(const hc_node *n, int *nout, int *out_label,
                              int (*label)[HC_MAX_DIMS], hc_error *err) {
    ein e;
    if (ein_parse(n, &e, err)) return err->status;
    *nout = e.nout;
    memcpy(out_label, e.out, sizeof(int) * (size_t)e.nout);
    for (int k = 0; k < e.nops; k++)
        memcpy(label[k], e.label[k], sizeof(int) * (size_t)e.ndims[k]);
    return HC_OK;
}

hc_status hc_nn_infer_einsum(hc_node *n, hc_error *err) {
    for (int i = 1; i < n->ninputs; i++)
        if (hc_nn_in(n, i)->dtype != hc_nn_in(n, 0)->dtype)
            return hc_node_fail(n, HC_ERR_INVALID, err, "inputs have different dtypes");
    if (hc_nn_in(n, 0)->dtype == HC_BOOL)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "bool inputs are not supported");
    ein e;
    if (ein_parse(n, &e, err)) return err->status;
    int64_t shape[HC_MAX_DIMS];
    for (int i = 0; i < e.nout; i++) shape[i] = e.size[e.out[i]];
    hc_node_set_output(n, 0, hc_nn_in(n, 0)->dtype, e.nout, shape);
    return HC_OK;
}

hc_task *hc_nn_task_einsum(hc_arena *a, const hc_node *n, hc_error *err) {
    ein e;
    if (ein_parse(n, &e, err)) return NULL;
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    hc_var *var[EIN_LABELS] = {NULL}, *oaxes[HC_MAX_DIMS], *raxes[HC_MAX_DIMS];
    int64_t oshape[HC_MAX_DIMS], rext[HC_MAX_DIMS];
    for (int i = 0; i < e.nout; i++) {
        oaxes[i] = var[e.out[i]] = hc_axis(a, "i");
        oshape[i] = e.size[e.out[i]];
    }
    for (int i = 0; i < e.nred; i++) {
        raxes[i] = var[e.red[i]] = hc_axis(a, "r");
        rext[i] = e.size[e.red[i]];
    }
    hc_expr *v = NULL;
    for (int i = 0; i < nin; i++) {
        hc_expr *idx[HC_MAX_DIMS];
        for (int d = 0; d < in[i]->ndim; d++) {
            int l = e.label[i][d];
            bool bcast = in[i]->shape[d] == 1 && e.size[l] != 1;
            idx[d] = bcast ? hc_int(a, 0) : hc_ref(a, var[l]);
        }
        hc_expr *x = hc_at(a, in[i], idx);
        v = v ? hc_mul(a, v, x) : x;
    }
    if (e.nred) v = hc_reduce(a, HC_REDUCE_SUM, e.nred, raxes, rext, v);
    hc_tnode *out = hc_compute_with_axes(a, n->outputs[0]->name, e.nout, oshape, oaxes, v);
    return hc_node_task(a, n, nin, in, 1, &out);
}
