/* linear.c — affine forms of index expressions: the coefficient of a variable in an
 * expression or in a flat offset (ir.h). Sums, differences and constant multiples are
 * collected term by term; (x / w) * w + x % w folds back into x. */
#include "ir/ir.h"

#define LIN_MAX 48
typedef struct lin {
    int n;
    const hc_expr *atom[LIN_MAX];
    int64_t coef[LIN_MAX];
    int64_t c;
    bool ok;
} lin;

static void lin_add_atom(lin *l, const hc_expr *e, int64_t k) {
    if (!k) return;
    for (int i = 0; i < l->n; i++)
        if (hc_expr_equal(l->atom[i], e)) {
            l->coef[i] += k;
            return;
        }
    if (l->n == LIN_MAX) {
        l->ok = false;
        return;
    }
    l->atom[l->n] = e, l->coef[l->n++] = k;
}

static void lin_of(lin *l, const hc_expr *e, int64_t k) {
    int64_t v;
    if (!l->ok || !k) return;
    if (hc_expr_is_const_int(e, &v)) {
        l->c += k * v;
        return;
    }
    if (e->kind == HC_E_BINARY) {
        const hc_expr *x = e->u.bin.a, *y = e->u.bin.b;
        switch (e->u.bin.op) {
        case HC_OP_ADD: lin_of(l, x, k), lin_of(l, y, k); return;
        case HC_OP_SUB: lin_of(l, x, k), lin_of(l, y, -k); return;
        case HC_OP_MUL:
            if (hc_expr_is_const_int(y, &v)) {
                lin_of(l, x, k * v);
                return;
            }
            if (hc_expr_is_const_int(x, &v)) {
                lin_of(l, y, k * v);
                return;
            }
            break;
        default: break;
        }
    }
    lin_add_atom(l, e, k);
}

/* (x / w) * w + x % w == x for C division: fold such pairs back into x. */
static void lin_fold_divmod(lin *l) {
    for (bool again = true; again && l->ok;) {
        again = false;
        for (int i = 0; i < l->n && !again; i++) {
            const hc_expr *d = l->atom[i];
            int64_t w;
            if (d->kind != HC_E_BINARY || d->u.bin.op != HC_OP_DIV ||
                !hc_expr_is_const_int(d->u.bin.b, &w) || w == 0)
                continue;
            for (int j = 0; j < l->n; j++) {
                const hc_expr *m = l->atom[j];
                int64_t w2;
                if (m->kind != HC_E_BINARY || m->u.bin.op != HC_OP_MOD ||
                    !hc_expr_is_const_int(m->u.bin.b, &w2) || w2 != w ||
                    !hc_expr_equal(m->u.bin.a, d->u.bin.a) || l->coef[i] != l->coef[j] * w)
                    continue;
                int64_t k = l->coef[j];
                const hc_expr *x = d->u.bin.a;
                l->coef[i] = l->coef[j] = 0;
                lin_of(l, x, k);
                again = true;
                break;
            }
        }
        int w = 0; /* drop zero terms */
        for (int i = 0; i < l->n; i++)
            if (l->coef[i]) l->atom[w] = l->atom[i], l->coef[w++] = l->coef[i];
        l->n = w;
    }
}

/* Coefficient of L in a linear form, after folding div/mod pairs; INT64_MIN when the form
 * is not affine in L (a term other than L itself mentions it). */
static int64_t lin_lane_coef(lin *l, const hc_var *L) {
    lin_fold_divmod(l);
    if (!l->ok) return INT64_MIN;
    int64_t k = 0;
    for (int i = 0; i < l->n; i++) {
        if (l->atom[i]->kind == HC_E_VAR && l->atom[i]->u.var == L) k += l->coef[i];
        else if (hc_expr_mentions(l->atom[i], L)) return INT64_MIN;
    }
    return k;
}

int64_t hc_offset_coef(const hc_var *buf, int n, hc_expr *const *idx, const hc_var *L) {
    const hc_type *t = buf->type;
    lin l = {.ok = true};
    int64_t stride = 1;
    bool known = true; /* the stride is a constant: no symbolic extent inside */
    for (int d = n - 1; d >= 0; d--) {
        /* past a symbolic extent (dynamic shapes) the strides are expressions: an index
         * there that moves with L makes the offset non-affine in L for us; one that does
         * not only shifts it */
        if (!known) {
            if (hc_expr_mentions(idx[d], L)) return INT64_MIN;
            continue;
        }
        lin_of(&l, idx[d], stride);
        int64_t ext = 1;
        if (d < t->ndim && !hc_expr_is_const_int(t->shape[d], &ext)) known = false;
        stride *= ext;
    }
    return lin_lane_coef(&l, L);
}

int64_t hc_expr_coef(const hc_expr *e, const hc_var *L) {
    lin l = {.ok = true};
    lin_of(&l, e, 1);
    return lin_lane_coef(&l, L);
}
