/* sym.c — symbolic integer expressions (sym.h): canonical polynomials over atoms.
 *
 * Canonical form. A polynomial is c0 plus terms sorted by monomial; a monomial is a
 * sorted list of atoms (with repetition for powers). The order (hc_sym_compare):
 *   - atoms by kind (VAR < FLOORDIV < MOD < MIN < MAX), symbols by name (strcmp), the
 *     other atoms by their first argument, then the second;
 *   - monomials of more factors first (higher degree first), then factor by factor;
 *   - polynomials term by term (monomial, then coefficient), a polynomial with more
 *     terms first (so a constant sorts after anything with a symbol), then c0.
 *
 * Simplification is exact for all integer values, with two documented assumptions from
 * sym.h: symbols are >= 1 (min/max of a polynomial in symbols with positive
 * coefficients and a constant), and a monomial divisor is nonzero (floor(m*q / (c*m)) is
 * floor(q / c), m*q mod c*m is m*(q mod c)).
 *
 * Division by a positive constant c is normalized: x = c*Q + R, where a term coefficient
 * splits by truncation (|r| < c, the sign kept) and the constant by floor division
 * (0 <= r0 < c); floor(x / c) = Q + floor(R / c) and x mod c = R mod c, with R further
 * divided by the gcd of its coefficients and c. So floor((2*s + 1) / 2) is s,
 * floor((3*s + 1) / 2) is s + floor((s + 1) / 2), floor((s - 1) / 2) is
 * floor((s + 1) / 2) - 1, (2*s + 2) mod 4 is 2*((s + 1) mod 2), floor(-s / 4) stays.
 * A negative constant divisor is turned positive (floor(x / c) = floor(-x / -c),
 * x mod c = -((-x) mod -c)). ceil(x / c) for a constant c > 0 is floor((x + c - 1) / c).
 *
 * Overflow. Coefficient arithmetic uses __builtin_*_overflow. When an exact result does
 * not fit (a coefficient or the constant beyond int64), or when an expansion would be
 * too large (more than SYM_MAX_TERMS terms or SYM_MAX_FACTORS factors in a monomial),
 * the operands are "held": an operand p becomes the atom floor(p / 1), which the
 * simplifier never creates otherwise, and the result is hold(x) + hold(y), hold(x) *
 * hold(y) or c * hold(x). That is exact (its value is the value of the operation; eval
 * returns false where an intermediate overflows) but not canonical: two such results
 * equal as integers need not be equal structurally. Constant folding that overflows
 * (INT64_MIN // -1) keeps the floordiv atom.
 *
 * Results may share atoms and term arrays with their arguments (expressions are
 * immutable); hc_sym_subst rebuilds everything in its arena. */
#include "graph/sym.h"

#include <inttypes.h>
#include <string.h>

#define SYM_MAX_TERMS 256
#define SYM_MAX_FACTORS 32
#define SYM_PARSE_DEPTH 200

/* ---- integer helpers ------------------------------------------------------------- */
/* Python floor division; b != 0 and not (INT64_MIN, -1) */
static int64_t py_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) q--;
    return q;
}
/* Python modulo (the divisor's sign); b != 0 */
static int64_t py_mod(int64_t a, int64_t b) {
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
/* a / c when exact and representable */
static bool div_exact(int64_t a, int64_t c, int64_t *q) {
    if (c == -1) return !__builtin_sub_overflow((int64_t)0, a, q);
    if (a % c != 0) return false;
    *q = a / c;
    return true;
}
/* gcd of nonnegative values */
static int64_t gcd_nn(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b, b = t;
    }
    return a;
}

/* ---- allocation -------------------------------------------------------------------- */
static hc_sym *new_sym(hc_arena *ar, hc_sym_kind k) {
    hc_sym *s = HC_NEW(ar, hc_sym);
    s->kind = k;
    return s;
}
static const hc_sym *mk_const(hc_arena *ar, int64_t c) {
    hc_sym *s = new_sym(ar, HC_SYM_POLY);
    s->c0 = c;
    return s;
}
static const hc_sym *mk_atom(hc_arena *ar, hc_sym_kind k, const hc_sym *a, const hc_sym *b) {
    hc_sym *s = new_sym(ar, k);
    s->a = a, s->b = b;
    return s;
}
/* a polynomial owning t[0..n) (already canonical) */
static const hc_sym *mk_poly(hc_arena *ar, int64_t c0, const hc_sym_term *t, int n) {
    hc_sym *s = new_sym(ar, HC_SYM_POLY);
    s->c0 = c0;
    s->nterms = n;
    s->terms = n ? t : NULL;
    return s;
}
/* coef * monomial */
static const hc_sym *mk_term(hc_arena *ar, int64_t coef, int nf, const hc_sym *const *f) {
    hc_sym_term *t = HC_NEW(ar, hc_sym_term);
    t->coef = coef, t->nf = nf, t->f = f;
    return mk_poly(ar, 0, t, 1);
}
static const hc_sym *const *one_factor(hc_arena *ar, const hc_sym *atom) {
    const hc_sym **f = HC_NEW_ARRAY(ar, const hc_sym *, 1);
    f[0] = atom;
    return f;
}
static const hc_sym *atom_poly(hc_arena *ar, const hc_sym *atom) {
    return mk_term(ar, 1, 1, one_factor(ar, atom));
}
/* an atom handed to a constructor is read as the polynomial 1*atom */
static const hc_sym *as_poly(hc_arena *ar, const hc_sym *x) {
    return x->kind == HC_SYM_POLY ? x : atom_poly(ar, x);
}
static bool is_const(const hc_sym *x, int64_t *c) {
    if (x->kind != HC_SYM_POLY || x->nterms) return false;
    *c = x->c0;
    return true;
}
static bool is_single_term(const hc_sym *x) {
    return x->kind == HC_SYM_POLY && x->nterms == 1 && x->c0 == 0;
}
/* the operand as an atom: itself when it is one atom, else floor(x / 1) */
static const hc_sym *hold(hc_arena *ar, const hc_sym *x) {
    if (is_single_term(x) && x->terms[0].coef == 1 && x->terms[0].nf == 1) return x->terms[0].f[0];
    return mk_atom(ar, HC_SYM_FLOORDIV, x, mk_const(ar, 1));
}

/* ---- order --------------------------------------------------------------------------- */
static int cmp_mono(int na, const hc_sym *const *fa, int nb, const hc_sym *const *fb) {
    if (na != nb) return na > nb ? -1 : 1;
    for (int i = 0; i < na; i++) {
        int c = hc_sym_compare(fa[i], fb[i]);
        if (c) return c;
    }
    return 0;
}
static int cmp_term_mono(const hc_sym_term *a, const hc_sym_term *b) {
    return cmp_mono(a->nf, a->f, b->nf, b->f);
}
static int qsort_term(const void *a, const void *b) { return cmp_term_mono(a, b); }

int hc_sym_compare(const hc_sym *x, const hc_sym *y) {
    if (x == y) return 0;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    switch (x->kind) {
    case HC_SYM_POLY: {
        int n = HC_MIN(x->nterms, y->nterms);
        for (int i = 0; i < n; i++) {
            int c = cmp_term_mono(&x->terms[i], &y->terms[i]);
            if (c) return c;
            if (x->terms[i].coef != y->terms[i].coef)
                return x->terms[i].coef < y->terms[i].coef ? -1 : 1;
        }
        if (x->nterms != y->nterms) return x->nterms > y->nterms ? -1 : 1;
        if (x->c0 != y->c0) return x->c0 < y->c0 ? -1 : 1;
        return 0;
    }
    case HC_SYM_VAR: {
        int c = strcmp(x->name, y->name);
        return c < 0 ? -1 : c > 0;
    }
    default: {
        int c = hc_sym_compare(x->a, y->a);
        return c ? c : hc_sym_compare(x->b, y->b);
    }
    }
}

bool hc_sym_equal(const hc_sym *x, const hc_sym *y) { return hc_sym_compare(x, y) == 0; }

/* Sort t[0..n), merge like terms, drop zeros: the polynomial, or NULL when a coefficient
 * overflows or there are more than SYM_MAX_TERMS terms. t must be in the arena (owned). */
static const hc_sym *normalize(hc_arena *ar, int64_t c0, hc_sym_term *t, int n) {
    if (n > 1) qsort(t, (size_t)n, sizeof *t, qsort_term);
    int w = 0;
    for (int i = 0; i < n; i++) {
        if (w > 0 && cmp_term_mono(&t[w - 1], &t[i]) == 0) {
            if (__builtin_add_overflow(t[w - 1].coef, t[i].coef, &t[w - 1].coef)) return NULL;
        } else {
            t[w++] = t[i];
        }
    }
    int k = 0;
    for (int i = 0; i < w; i++)
        if (t[i].coef != 0) t[k++] = t[i];
    if (k > SYM_MAX_TERMS) return NULL;
    return mk_poly(ar, c0, t, k);
}

/* ---- + - * --------------------------------------------------------------------------- */
static const hc_sym *addsub(hc_arena *ar, const hc_sym *x, const hc_sym *y, bool sub) {
    int64_t c0;
    bool ovf = sub ? __builtin_sub_overflow(x->c0, y->c0, &c0)
                   : __builtin_add_overflow(x->c0, y->c0, &c0);
    int nx = x->nterms, ny = y->nterms, n = 0;
    hc_sym_term *t = NULL;
    if (!ovf && nx + ny > 0) {
        t = HC_NEW_ARRAY(ar, hc_sym_term, nx + ny);
        int i = 0, j = 0;
        while (!ovf && (i < nx || j < ny)) {
            int c = i == nx ? 1 : j == ny ? -1 : cmp_term_mono(&x->terms[i], &y->terms[j]);
            if (c < 0) {
                t[n++] = x->terms[i++];
            } else if (c > 0) {
                hc_sym_term u = y->terms[j++];
                if (sub) ovf = __builtin_sub_overflow((int64_t)0, u.coef, &u.coef);
                t[n++] = u;
            } else {
                hc_sym_term u = x->terms[i++];
                int64_t cy = y->terms[j++].coef;
                ovf = sub ? __builtin_sub_overflow(u.coef, cy, &u.coef)
                          : __builtin_add_overflow(u.coef, cy, &u.coef);
                if (u.coef != 0) t[n++] = u;
            }
        }
    }
    if (!ovf && n <= SYM_MAX_TERMS) return mk_poly(ar, c0, t, n);
    /* hold(x) +- hold(y): coefficients 1 and +-1 */
    hc_sym_term *h = HC_NEW_ARRAY(ar, hc_sym_term, 2);
    h[0] = (hc_sym_term){1, 1, one_factor(ar, hold(ar, x))};
    h[1] = (hc_sym_term){sub ? -1 : 1, 1, one_factor(ar, hold(ar, y))};
    const hc_sym *r = normalize(ar, 0, h, 2);
    HC_ASSERT(r);
    return r;
}

/* x * c */
static const hc_sym *scale(hc_arena *ar, const hc_sym *x, int64_t c) {
    if (c == 0) return mk_const(ar, 0);
    if (c == 1) return x;
    int64_t c0;
    bool ovf = __builtin_mul_overflow(x->c0, c, &c0);
    hc_sym_term *t = x->nterms ? HC_NEW_ARRAY(ar, hc_sym_term, x->nterms) : NULL;
    for (int i = 0; i < x->nterms && !ovf; i++) {
        t[i] = x->terms[i];
        ovf = __builtin_mul_overflow(t[i].coef, c, &t[i].coef);
    }
    if (!ovf) return mk_poly(ar, c0, t, x->nterms);
    return mk_term(ar, c, 1, one_factor(ar, hold(ar, x)));
}

/* the sorted union (with repetition) of two sorted factor lists; NULL when too long */
static const hc_sym *const *merge_factors(hc_arena *ar, int na, const hc_sym *const *fa, int nb,
                                          const hc_sym *const *fb) {
    if (na == 0) return fb;
    if (nb == 0) return fa;
    if (na + nb > SYM_MAX_FACTORS) return NULL;
    const hc_sym **f = HC_NEW_ARRAY(ar, const hc_sym *, na + nb);
    int i = 0, j = 0, k = 0;
    while (i < na || j < nb) {
        if (j == nb || (i < na && hc_sym_compare(fa[i], fb[j]) <= 0)) f[k++] = fa[i++];
        else f[k++] = fb[j++];
    }
    return f;
}

static const hc_sym *mul(hc_arena *ar, const hc_sym *x, const hc_sym *y) {
    int64_t c;
    if (is_const(x, &c)) return scale(ar, y, c);
    if (is_const(y, &c)) return scale(ar, x, c);
    /* both have terms; the constant is a term with no factors */
    int px = x->nterms + (x->c0 != 0), py = y->nterms + (y->c0 != 0);
    if ((int64_t)px * py <= 4 * SYM_MAX_TERMS) {
        hc_sym_term *t = HC_NEW_ARRAY(ar, hc_sym_term, px * py);
        int64_t c0 = 0;
        int n = 0;
        bool bad = false;
        for (int i = 0; i < px && !bad; i++) {
            hc_sym_term a = i < x->nterms ? x->terms[i] : (hc_sym_term){x->c0, 0, NULL};
            for (int j = 0; j < py && !bad; j++) {
                hc_sym_term b = j < y->nterms ? y->terms[j] : (hc_sym_term){y->c0, 0, NULL};
                hc_sym_term u;
                if (__builtin_mul_overflow(a.coef, b.coef, &u.coef)) {
                    bad = true;
                    break;
                }
                u.nf = a.nf + b.nf;
                if (u.nf == 0) {
                    bad = __builtin_add_overflow(c0, u.coef, &c0);
                    continue;
                }
                u.f = merge_factors(ar, a.nf, a.f, b.nf, b.f);
                if (!u.f) bad = true;
                else t[n++] = u;
            }
        }
        if (!bad) {
            const hc_sym *r = normalize(ar, c0, t, n);
            if (r) return r;
        }
    }
    const hc_sym *hx = hold(ar, x), *hy = hold(ar, y);
    const hc_sym **f = HC_NEW_ARRAY(ar, const hc_sym *, 2);
    bool swap = hc_sym_compare(hx, hy) > 0;
    f[0] = swap ? hy : hx, f[1] = swap ? hx : hy;
    return mk_term(ar, 1, 2, f);
}

/* ---- exact division ---------------------------------------------------------------------- */
/* f with the factors of m removed (multiset difference of sorted lists); false when f
 * lacks one of them */
static bool mono_div(hc_arena *ar, int nf, const hc_sym *const *f, int nm,
                     const hc_sym *const *m, int *nout, const hc_sym *const **out) {
    if (nm > nf) return false;
    const hc_sym **r = nf - nm ? HC_NEW_ARRAY(ar, const hc_sym *, nf - nm) : NULL;
    int j = 0, k = 0;
    for (int i = 0; i < nf; i++) {
        int c = j < nm ? hc_sym_compare(f[i], m[j]) : -1;
        if (c == 0) j++;
        else if (c > 0) return false;
        else {
            if (k == nf - nm) return false;
            r[k++] = f[i];
        }
    }
    if (j != nm) return false;
    *nout = k, *out = r;
    return true;
}

static const hc_sym *exact_div(hc_arena *ar, const hc_sym *x, const hc_sym *y) {
    int64_t c;
    int nm = 0;
    const hc_sym *const *m = NULL;
    if (y->nterms == 0) c = y->c0;
    else if (is_single_term(y)) c = y->terms[0].coef, nm = y->terms[0].nf, m = y->terms[0].f;
    else return NULL;
    if (c == 0) return NULL;
    int64_t c0 = 0;
    if (x->c0 != 0 && (nm > 0 || !div_exact(x->c0, c, &c0))) return NULL;
    hc_sym_term *t = x->nterms ? HC_NEW_ARRAY(ar, hc_sym_term, x->nterms) : NULL;
    int n = 0;
    for (int i = 0; i < x->nterms; i++) {
        hc_sym_term u;
        if (!div_exact(x->terms[i].coef, c, &u.coef)) return NULL;
        if (!mono_div(ar, x->terms[i].nf, x->terms[i].f, nm, m, &u.nf, &u.f)) return NULL;
        if (u.nf == 0) c0 = u.coef; /* only one term can be m itself; then x->c0 is 0 */
        else t[n++] = u;
    }
    /* distinct monomials stay distinct: normalize only sorts */
    const hc_sym *r = normalize(ar, c0, t, n);
    HC_ASSERT(r);
    return r;
}

/* the monomial of a single term, coefficient 1 */
static const hc_sym *monomial_of(hc_arena *ar, const hc_sym *y) {
    return mk_term(ar, 1, y->terms[0].nf, y->terms[0].f);
}

/* ---- floor division and modulo ------------------------------------------------------------ */
/* x = Q*c + R (c > 1): a term coefficient splits by truncation (the remainder keeps its
 * sign, so -s stays -s), the constant by floor division (0 <= r0 < c); *g: the gcd of c
 * and |R's coefficients| and r0 */
static void split_mod(hc_arena *ar, const hc_sym *x, int64_t c, const hc_sym **q,
                      hc_sym_term **rt, int *nr, int64_t *r0, int64_t *g) {
    hc_sym_term *qt = x->nterms ? HC_NEW_ARRAY(ar, hc_sym_term, x->nterms) : NULL;
    *rt = x->nterms ? HC_NEW_ARRAY(ar, hc_sym_term, x->nterms) : NULL;
    int nq = 0;
    *nr = 0;
    *g = c;
    for (int i = 0; i < x->nterms; i++) {
        hc_sym_term u = x->terms[i];
        int64_t qq = u.coef / c, rr = u.coef % c; /* c > 1: no overflow */
        if (qq) qt[nq] = u, qt[nq++].coef = qq;
        if (rr) (*rt)[*nr] = u, (*rt)[(*nr)++].coef = rr, *g = gcd_nn(*g, rr < 0 ? -rr : rr);
    }
    *r0 = py_mod(x->c0, c);
    *g = gcd_nn(*g, *r0);
    *q = mk_poly(ar, py_floordiv(x->c0, c), qt, nq);
}

static const hc_sym *floordiv(hc_arena *ar, const hc_sym *x, const hc_sym *y);
static const hc_sym *mod(hc_arena *ar, const hc_sym *x, const hc_sym *y);

static const hc_sym *floordiv_pos(hc_arena *ar, const hc_sym *x, int64_t c) {
    const hc_sym *q;
    hc_sym_term *rt;
    int nr;
    int64_t r0, g;
    split_mod(ar, x, c, &q, &rt, &nr, &r0, &g);
    if (nr == 0) return q; /* floor(r0 / c) = 0 */
    for (int i = 0; i < nr; i++) rt[i].coef /= g;
    const hc_sym *r = mk_poly(ar, r0 / g, rt, nr);
    return addsub(ar, q, atom_poly(ar, mk_atom(ar, HC_SYM_FLOORDIV, r, mk_const(ar, c / g))),
                  false);
}

static const hc_sym *floordiv(hc_arena *ar, const hc_sym *x, const hc_sym *y) {
    int64_t c, a;
    if (is_const(y, &c)) {
        if (c == 0) return NULL;
        if (is_const(x, &a)) {
            if (a == INT64_MIN && c == -1) return atom_poly(ar, mk_atom(ar, HC_SYM_FLOORDIV, x, y));
            return mk_const(ar, py_floordiv(a, c));
        }
        if (c == 1) return x;
        if (c == INT64_MIN) {
            const hc_sym *q = exact_div(ar, x, y);
            return q ? q : atom_poly(ar, mk_atom(ar, HC_SYM_FLOORDIV, x, y));
        }
        if (c < 0) return floordiv(ar, scale(ar, x, -1), mk_const(ar, -c));
        return floordiv_pos(ar, x, c);
    }
    if (is_single_term(y)) {
        /* floor(m*q / (c*m)) = floor(q / c) (m != 0) */
        const hc_sym *q = exact_div(ar, x, monomial_of(ar, y));
        if (q) return floordiv(ar, q, mk_const(ar, y->terms[0].coef));
    }
    return atom_poly(ar, mk_atom(ar, HC_SYM_FLOORDIV, x, y));
}

static const hc_sym *mod(hc_arena *ar, const hc_sym *x, const hc_sym *y) {
    int64_t c, a;
    if (is_const(y, &c)) {
        if (c == 0) return NULL;
        if (is_const(x, &a)) return mk_const(ar, py_mod(a, c));
        if (c == 1 || c == -1) return mk_const(ar, 0);
        if (c == INT64_MIN) {
            const hc_sym *q = exact_div(ar, x, y);
            return q ? mk_const(ar, 0) : atom_poly(ar, mk_atom(ar, HC_SYM_MOD, x, y));
        }
        if (c < 0) return scale(ar, mod(ar, scale(ar, x, -1), mk_const(ar, -c)), -1);
        const hc_sym *q;
        hc_sym_term *rt;
        int nr;
        int64_t r0, g;
        split_mod(ar, x, c, &q, &rt, &nr, &r0, &g);
        if (nr == 0) return mk_const(ar, r0);
        for (int i = 0; i < nr; i++) rt[i].coef /= g;
        const hc_sym *r = mk_poly(ar, r0 / g, rt, nr);
        return scale(ar, atom_poly(ar, mk_atom(ar, HC_SYM_MOD, r, mk_const(ar, c / g))), g);
    }
    if (is_single_term(y)) {
        /* (m*q) mod (c*m) = m*(q mod c) (m != 0) */
        const hc_sym *m = monomial_of(ar, y);
        const hc_sym *q = exact_div(ar, x, m);
        if (q) return mul(ar, m, mod(ar, q, mk_const(ar, y->terms[0].coef)));
    }
    return atom_poly(ar, mk_atom(ar, HC_SYM_MOD, x, y));
}

/* ---- min and max ------------------------------------------------------------------------- */
/* sign * d >= 0 given every symbol >= 1: d is a polynomial in symbols only whose terms
 * all have the sign of `sign`, and c0 + (sum of the coefficients) has it too */
static bool signed_by_assumption(const hc_sym *d, int sign) {
    int64_t s = d->c0;
    bool big = false; /* the bound overflowed in the direction of sign: it holds */
    for (int i = 0; i < d->nterms; i++) {
        const hc_sym_term *t = &d->terms[i];
        if (sign > 0 ? t->coef < 0 : t->coef > 0) return false;
        for (int k = 0; k < t->nf; k++)
            if (t->f[k]->kind != HC_SYM_VAR) return false;
        if (!big && __builtin_add_overflow(s, t->coef, &s)) big = true;
    }
    return big || (sign > 0 ? s >= 0 : s <= 0);
}

static const hc_sym *minmax(hc_arena *ar, const hc_sym *x, const hc_sym *y, bool is_max) {
    if (hc_sym_equal(x, y)) return x;
    const hc_sym *d = addsub(ar, x, y, true);
    int64_t k;
    int ge = 0; /* 1: x >= y, -1: x <= y */
    if (is_const(d, &k)) ge = k >= 0 ? 1 : -1;
    else if (signed_by_assumption(d, 1)) ge = 1;
    else if (signed_by_assumption(d, -1)) ge = -1;
    if (ge) return (ge > 0) == is_max ? x : y;
    if (hc_sym_compare(x, y) > 0) {
        const hc_sym *t = x;
        x = y, y = t;
    }
    return atom_poly(ar, mk_atom(ar, is_max ? HC_SYM_MAX : HC_SYM_MIN, x, y));
}

/* ---- public construction ----------------------------------------------------------------- */
const hc_sym *hc_sym_const(hc_arena *ar, int64_t c) { return mk_const(ar, c); }

static const hc_sym *var_n(hc_arena *ar, const char *name, size_t len) {
    hc_sym *v = new_sym(ar, HC_SYM_VAR);
    char *s = hc_arena_alloc(ar, len + 1);
    memcpy(s, name, len);
    v->name = s;
    return atom_poly(ar, v);
}
const hc_sym *hc_sym_var(hc_arena *ar, const char *name) {
    HC_ASSERT(name);
    return var_n(ar, name, strlen(name));
}

#define P(x) as_poly(ar, (x))
const hc_sym *hc_sym_add(hc_arena *ar, const hc_sym *x, const hc_sym *y) {
    return x && y ? addsub(ar, P(x), P(y), false) : NULL;
}
const hc_sym *hc_sym_sub(hc_arena *ar, const hc_sym *x, const hc_sym *y) {
    return x && y ? addsub(ar, P(x), P(y), true) : NULL;
}
const hc_sym *hc_sym_mul(hc_arena *ar, const hc_sym *x, const hc_sym *y) {
    return x && y ? mul(ar, P(x), P(y)) : NULL;
}
const hc_sym *hc_sym_neg(hc_arena *ar, const hc_sym *x) { return x ? scale(ar, P(x), -1) : NULL; }
const hc_sym *hc_sym_add_c(hc_arena *ar, const hc_sym *x, int64_t c) {
    return x ? addsub(ar, P(x), mk_const(ar, c), false) : NULL;
}
const hc_sym *hc_sym_mul_c(hc_arena *ar, const hc_sym *x, int64_t c) {
    return x ? scale(ar, P(x), c) : NULL;
}
const hc_sym *hc_sym_floordiv(hc_arena *ar, const hc_sym *x, const hc_sym *y) {
    return x && y ? floordiv(ar, P(x), P(y)) : NULL;
}
const hc_sym *hc_sym_mod(hc_arena *ar, const hc_sym *x, const hc_sym *y) {
    return x && y ? mod(ar, P(x), P(y)) : NULL;
}
const hc_sym *hc_sym_ceildiv(hc_arena *ar, const hc_sym *x, const hc_sym *y) {
    if (!x || !y) return NULL;
    x = P(x), y = P(y);
    int64_t c;
    /* ceil(x / c) = floor((x + c - 1) / c): "(s + 3) // 4", not "-(-s // 4)" */
    if (is_const(y, &c) && c > 0) return floordiv(ar, addsub(ar, x, mk_const(ar, c - 1), false), y);
    const hc_sym *q = floordiv(ar, scale(ar, x, -1), y);
    return q ? scale(ar, q, -1) : NULL;
}
const hc_sym *hc_sym_min(hc_arena *ar, const hc_sym *x, const hc_sym *y) {
    return x && y ? minmax(ar, P(x), P(y), false) : NULL;
}
const hc_sym *hc_sym_max(hc_arena *ar, const hc_sym *x, const hc_sym *y) {
    return x && y ? minmax(ar, P(x), P(y), true) : NULL;
}
const hc_sym *hc_sym_exact_div(hc_arena *ar, const hc_sym *x, const hc_sym *y) {
    return x && y ? exact_div(ar, P(x), P(y)) : NULL;
}
#undef P

/* ---- inspection ---------------------------------------------------------------------------- */
bool hc_sym_is_const(const hc_sym *x, int64_t *c) {
    int64_t v;
    if (!is_const(x, &v)) return false;
    if (c) *c = v;
    return true;
}

const char *hc_sym_as_var(const hc_sym *x) {
    if (!is_single_term(x)) return NULL;
    const hc_sym_term *t = &x->terms[0];
    if (t->coef != 1 || t->nf != 1 || t->f[0]->kind != HC_SYM_VAR) return NULL;
    return t->f[0]->name;
}

bool hc_sym_mentions(const hc_sym *x, const char *name) {
    switch (x->kind) {
    case HC_SYM_POLY:
        for (int i = 0; i < x->nterms; i++)
            for (int k = 0; k < x->terms[i].nf; k++)
                if (hc_sym_mentions(x->terms[i].f[k], name)) return true;
        return false;
    case HC_SYM_VAR: return strcmp(x->name, name) == 0;
    default: return hc_sym_mentions(x->a, name) || hc_sym_mentions(x->b, name);
    }
}

void hc_sym_vars(const hc_sym *x, const char **names, int *n, int cap) {
    switch (x->kind) {
    case HC_SYM_POLY:
        for (int i = 0; i < x->nterms; i++)
            for (int k = 0; k < x->terms[i].nf; k++) hc_sym_vars(x->terms[i].f[k], names, n, cap);
        return;
    case HC_SYM_VAR: {
        int lo = 0, hi = *n; /* names[0..*n) is sorted: binary search */
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            int c = strcmp(names[mid], x->name);
            if (c == 0) return;
            if (c < 0) lo = mid + 1;
            else hi = mid;
        }
        if (*n >= cap) return;
        memmove(names + lo + 1, names + lo, sizeof *names * (size_t)(*n - lo));
        names[lo] = x->name;
        (*n)++;
        return;
    }
    default:
        hc_sym_vars(x->a, names, n, cap);
        hc_sym_vars(x->b, names, n, cap);
        return;
    }
}

/* ---- evaluation ---------------------------------------------------------------------------- */
bool hc_sym_eval(const hc_sym *x, const hc_sym_binding *b, int64_t *out) {
    int64_t va, vb;
    switch (x->kind) {
    case HC_SYM_POLY: {
        int64_t acc = x->c0;
        for (int i = 0; i < x->nterms; i++) {
            const hc_sym_term *t = &x->terms[i];
            int64_t p = t->coef;
            for (int k = 0; k < t->nf; k++) {
                int64_t v;
                if (!hc_sym_eval(t->f[k], b, &v) || __builtin_mul_overflow(p, v, &p)) return false;
            }
            if (__builtin_add_overflow(acc, p, &acc)) return false;
        }
        *out = acc;
        return true;
    }
    case HC_SYM_VAR:
        for (int i = 0; b && i < b->n; i++)
            if (strcmp(b->names[i], x->name) == 0) {
                *out = b->values[i];
                return true;
            }
        return false;
    default: break;
    }
    if (!hc_sym_eval(x->a, b, &va) || !hc_sym_eval(x->b, b, &vb)) return false;
    switch (x->kind) {
    case HC_SYM_FLOORDIV:
        if (vb == 0 || (va == INT64_MIN && vb == -1)) return false;
        *out = py_floordiv(va, vb);
        return true;
    case HC_SYM_MOD:
        if (vb == 0) return false;
        *out = py_mod(va, vb);
        return true;
    case HC_SYM_MIN: *out = va < vb ? va : vb; return true;
    case HC_SYM_MAX: *out = va > vb ? va : vb; return true;
    default: hc_unreachable();
    }
}

static const hc_sym *subst_atom(hc_arena *ar, const hc_sym *f, const hc_sym_binding *b);

static const hc_sym *subst_poly(hc_arena *ar, const hc_sym *x, const hc_sym_binding *b) {
    if (x->kind != HC_SYM_POLY) return subst_atom(ar, x, b);
    const hc_sym *acc = mk_const(ar, x->c0);
    for (int i = 0; i < x->nterms; i++) {
        const hc_sym_term *t = &x->terms[i];
        const hc_sym *p = mk_const(ar, t->coef);
        for (int k = 0; k < t->nf; k++) p = mul(ar, p, subst_atom(ar, t->f[k], b));
        acc = addsub(ar, acc, p, false);
    }
    return acc;
}

static const hc_sym *subst_atom(hc_arena *ar, const hc_sym *f, const hc_sym_binding *b) {
    if (f->kind == HC_SYM_VAR) {
        for (int i = 0; b && i < b->n; i++)
            if (strcmp(b->names[i], f->name) == 0) return mk_const(ar, b->values[i]);
        return var_n(ar, f->name, strlen(f->name));
    }
    const hc_sym *a = subst_poly(ar, f->a, b), *d = subst_poly(ar, f->b, b), *r = NULL;
    switch (f->kind) {
    case HC_SYM_FLOORDIV: r = floordiv(ar, a, d); break;
    case HC_SYM_MOD: r = mod(ar, a, d); break;
    case HC_SYM_MIN: r = minmax(ar, a, d, false); break;
    case HC_SYM_MAX: r = minmax(ar, a, d, true); break;
    default: hc_unreachable();
    }
    /* a divisor that became 0: keep the atom (its evaluation fails, as before) */
    return r ? r : atom_poly(ar, mk_atom(ar, f->kind, a, d));
}

const hc_sym *hc_sym_subst(hc_arena *ar, const hc_sym *x, const hc_sym_binding *b) {
    return x ? subst_poly(ar, x, b) : NULL;
}

/* ---- printing ---------------------------------------------------------------------------- */
static bool is_alpha_(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_ident(char c) { return is_alpha_(c) || is_digit(c) || c == '.'; }

static bool plain_name(const char *s) {
    if (!is_alpha_(s[0])) return false;
    for (const char *p = s + 1; *p; p++)
        if (!is_ident(*p)) return false;
    return strcmp(s, "min") != 0 && strcmp(s, "max") != 0;
}

void hc_sym_print_name(hc_sb *sb, const char *s) {
    if (plain_name(s)) {
        hc_sb_puts(sb, s);
        return;
    }
    hc_sb_putc(sb, '\'');
    for (const char *p = s; *p; p++) {
        if (*p == '\'' || *p == '\\') hc_sb_putc(sb, '\\');
        hc_sb_putc(sb, *p);
    }
    hc_sb_putc(sb, '\'');
}

/* how an operand prints: ATOM (a number >= 0, a name, a call), NEG (leading unary minus),
 * PROD (a top-level * // %), SUM (a top-level binary + or -) */
enum { CL_ATOM, CL_NEG, CL_PROD, CL_SUM };
static int sym_class(const hc_sym *x) {
    if (x->kind != HC_SYM_POLY)
        return x->kind == HC_SYM_FLOORDIV || x->kind == HC_SYM_MOD ? CL_PROD : CL_ATOM;
    if (x->nterms + (x->c0 != 0) >= 2) return CL_SUM;
    if (x->nterms == 0) return x->c0 < 0 ? CL_NEG : CL_ATOM;
    const hc_sym_term *t = &x->terms[0];
    if (t->coef < 0) return CL_NEG;
    if (t->coef == 1 && t->nf == 1) return sym_class(t->f[0]);
    return CL_PROD;
}

static void print_sym(hc_sb *sb, const hc_sym *x);

static void print_atom(hc_sb *sb, const hc_sym *f, bool in_product) {
    switch (f->kind) {
    case HC_SYM_VAR: hc_sym_print_name(sb, f->name); return;
    case HC_SYM_MIN:
    case HC_SYM_MAX:
        hc_sb_puts(sb, f->kind == HC_SYM_MIN ? "min(" : "max(");
        print_sym(sb, f->a);
        hc_sb_puts(sb, ", ");
        print_sym(sb, f->b);
        hc_sb_putc(sb, ')');
        return;
    case HC_SYM_FLOORDIV:
    case HC_SYM_MOD: {
        if (in_product) hc_sb_putc(sb, '(');
        bool pa = sym_class(f->a) == CL_SUM, pb = sym_class(f->b) != CL_ATOM;
        if (pa) hc_sb_putc(sb, '(');
        print_sym(sb, f->a);
        if (pa) hc_sb_putc(sb, ')');
        hc_sb_puts(sb, f->kind == HC_SYM_FLOORDIV ? " // " : " % ");
        if (pb) hc_sb_putc(sb, '(');
        print_sym(sb, f->b);
        if (pb) hc_sb_putc(sb, ')');
        if (in_product) hc_sb_putc(sb, ')');
        return;
    }
    case HC_SYM_POLY: print_sym(sb, f); return;
    }
}

/* |coef| * monomial; neg_lead: a unary minus was just written */
static void print_term_body(hc_sb *sb, uint64_t mag, const hc_sym_term *t, bool neg_lead) {
    if (mag == 1 && t->nf == 1) {
        bool paren = neg_lead && (t->f[0]->kind == HC_SYM_FLOORDIV || t->f[0]->kind == HC_SYM_MOD);
        if (paren) hc_sb_putc(sb, '(');
        print_atom(sb, t->f[0], false);
        if (paren) hc_sb_putc(sb, ')');
        return;
    }
    if (mag != 1) hc_sb_printf(sb, "%" PRIu64, mag);
    for (int k = 0; k < t->nf; k++) {
        if (k > 0 || mag != 1) hc_sb_putc(sb, '*');
        print_atom(sb, t->f[k], true);
    }
}

static uint64_t magnitude(int64_t c) { return c < 0 ? (uint64_t)0 - (uint64_t)c : (uint64_t)c; }

static void print_sym(hc_sb *sb, const hc_sym *x) {
    if (x->kind != HC_SYM_POLY) {
        print_atom(sb, x, false);
        return;
    }
    if (x->nterms == 0) {
        hc_sb_printf(sb, "%" PRId64, x->c0);
        return;
    }
    for (int i = 0; i < x->nterms; i++) {
        const hc_sym_term *t = &x->terms[i];
        if (i == 0) {
            if (t->coef < 0) hc_sb_putc(sb, '-');
        } else {
            /* |INT64_MIN| does not parse back as a literal: " + -9223372036854775808" */
            hc_sb_puts(sb, t->coef > 0 ? " + " : t->coef == INT64_MIN ? " + -" : " - ");
        }
        print_term_body(sb, magnitude(t->coef), t, i == 0 && t->coef < 0);
    }
    if (x->c0 > 0) hc_sb_printf(sb, " + %" PRId64, x->c0);
    else if (x->c0 == INT64_MIN) hc_sb_printf(sb, " + %" PRId64, x->c0);
    else if (x->c0 < 0) hc_sb_printf(sb, " - %" PRIu64, magnitude(x->c0));
}

void hc_sym_print(hc_sb *sb, const hc_sym *x) {
    if (!x) hc_sb_puts(sb, "(null)");
    else print_sym(sb, x);
}

const char *hc_sym_str(hc_arena *ar, const hc_sym *x) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sym_print(&sb, x);
    char *s = hc_arena_strdup(ar, hc_sb_str(&sb));
    hc_sb_free(&sb);
    return s;
}

/* ---- parsing ------------------------------------------------------------------------------ */
typedef struct parser {
    const char *s;
    size_t i;
    hc_arena *ar;
    hc_error *err;
    int depth;
    bool bad;
} parser;

static void skip_space(parser *p) {
    while (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')
        p->i++;
}

static void describe(char *buf, size_t n, const char *s, size_t i) {
    unsigned char c = (unsigned char)s[i];
    if (c == 0) snprintf(buf, n, "end of text");
    else if (c >= 0x20 && c < 0x7f && c != '\'') snprintf(buf, n, "'%c'", c);
    else if (c == '\'') snprintf(buf, n, "a quote");
    else snprintf(buf, n, "byte 0x%02x", c);
}

static const hc_sym *perr(parser *p, size_t at, const char *fmt, ...) HC_PRINTF(3, 4);
static const hc_sym *perr(parser *p, size_t at, const char *fmt, ...) {
    if (!p->bad) {
        char msg[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        hc_error_set(p->err, HC_ERR_INVALID, "symbolic expression: at offset %zu: %s", at, msg);
        p->bad = true;
    }
    return NULL;
}
static const hc_sym *expected(parser *p, const char *what) {
    char got[32];
    describe(got, sizeof got, p->s, p->i);
    return perr(p, p->i, "expected %s, got %s", what, got);
}

static const hc_sym *parse_expr(parser *p);

static const hc_sym *parse_int(parser *p, bool neg) {
    size_t start = p->i;
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v = 0;
    while (is_digit(p->s[p->i])) {
        uint64_t d = (uint64_t)(p->s[p->i] - '0');
        if (v > (limit - d) / 10)
            return perr(p, start, "integer literal out of range (beyond 64-bit signed)");
        v = v * 10 + d;
        p->i++;
    }
    int64_t c = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    return mk_const(p->ar, c);
}

static const hc_sym *parse_quoted(parser *p) {
    size_t start = p->i++;
    hc_sb sb;
    hc_sb_init(&sb);
    for (;;) {
        char c = p->s[p->i];
        if (c == 0) {
            hc_sb_free(&sb);
            return perr(p, start, "unterminated quoted name (expected a closing ')");
        }
        if (c == '\'') {
            p->i++;
            break;
        }
        if (c == '\\') {
            char e = p->s[p->i + 1];
            if (e != '\'' && e != '\\') {
                hc_sb_free(&sb);
                return perr(p, p->i, "expected \\' or \\\\ in a quoted name");
            }
            c = e;
            p->i++;
        }
        hc_sb_putc(&sb, c);
        p->i++;
    }
    const hc_sym *v = var_n(p->ar, hc_sb_str(&sb), sb.len);
    hc_sb_free(&sb);
    return v;
}

static const hc_sym *parse_primary(parser *p) {
    skip_space(p);
    char c = p->s[p->i];
    if (is_digit(c)) return parse_int(p, false);
    if (c == '\'') return parse_quoted(p);
    if (c == '(') {
        p->i++;
        const hc_sym *x = parse_expr(p);
        if (!x) return NULL;
        skip_space(p);
        if (p->s[p->i] != ')') return expected(p, "')'");
        p->i++;
        return x;
    }
    if (is_alpha_(c)) {
        size_t start = p->i;
        while (is_ident(p->s[p->i])) p->i++;
        size_t len = p->i - start;
        bool is_min = len == 3 && memcmp(p->s + start, "min", 3) == 0;
        bool is_max = len == 3 && memcmp(p->s + start, "max", 3) == 0;
        if (is_min || is_max) {
            size_t after = p->i;
            skip_space(p);
            if (p->s[p->i] == '(') {
                p->i++;
                const hc_sym *a = parse_expr(p);
                if (!a) return NULL;
                skip_space(p);
                if (p->s[p->i] != ',') return expected(p, is_min ? "',' in min(a, b)" : "',' in max(a, b)");
                p->i++;
                const hc_sym *b = parse_expr(p);
                if (!b) return NULL;
                skip_space(p);
                if (p->s[p->i] != ')') return expected(p, is_min ? "')' closing min(" : "')' closing max(");
                p->i++;
                return minmax(p->ar, a, b, is_max);
            }
            p->i = after; /* a symbol named min or max */
        }
        return var_n(p->ar, p->s + start, len);
    }
    return expected(p, "a number, a symbol, '(', min( or max(");
}

static const hc_sym *parse_unary(parser *p) {
    skip_space(p);
    char c = p->s[p->i];
    if (c != '-' && c != '+') return parse_primary(p);
    if (++p->depth > SYM_PARSE_DEPTH) {
        p->depth--;
        return perr(p, p->i, "nested deeper than %d levels", SYM_PARSE_DEPTH);
    }
    p->i++;
    skip_space(p);
    const hc_sym *x;
    if (c == '-' && is_digit(p->s[p->i])) x = parse_int(p, true); /* -9223372036854775808 */
    else {
        x = parse_unary(p);
        if (x && c == '-') x = scale(p->ar, x, -1);
    }
    p->depth--;
    return x;
}

static const hc_sym *parse_term(parser *p) {
    const hc_sym *x = parse_unary(p);
    while (x) {
        skip_space(p);
        char c = p->s[p->i];
        size_t at = p->i;
        if (c == '*') p->i++;
        else if (c == '%') p->i++;
        else if (c == '/') {
            if (p->s[p->i + 1] != '/') return perr(p, at, "expected '//' (floor division), got '/'");
            p->i += 2;
        } else break;
        const hc_sym *y = parse_unary(p);
        if (!y) return NULL;
        if (c == '*') x = mul(p->ar, x, y);
        else {
            x = c == '/' ? floordiv(p->ar, x, y) : mod(p->ar, x, y);
            if (!x) return perr(p, at, c == '/' ? "division by zero" : "modulo by zero");
        }
    }
    return x;
}

static const hc_sym *parse_expr(parser *p) {
    if (++p->depth > SYM_PARSE_DEPTH) {
        p->depth--;
        return perr(p, p->i, "nested deeper than %d levels", SYM_PARSE_DEPTH);
    }
    const hc_sym *x = parse_term(p);
    while (x) {
        skip_space(p);
        char c = p->s[p->i];
        if (c != '+' && c != '-') break;
        p->i++;
        const hc_sym *y = parse_term(p);
        x = y ? addsub(p->ar, x, y, c == '-') : NULL;
    }
    p->depth--;
    return x;
}

const hc_sym *hc_sym_parse(hc_arena *ar, const char *text, hc_error *err) {
    if (!text) {
        hc_error_set(err, HC_ERR_INVALID, "symbolic expression: no text");
        return NULL;
    }
    parser p = {.s = text, .ar = ar, .err = err};
    const hc_sym *x = parse_expr(&p);
    if (x) {
        skip_space(&p);
        if (text[p.i] != 0) x = expected(&p, "an operator or end of text");
    }
    return p.bad ? NULL : x;
}
