/* test_sym.c — symbolic integer expressions (graph/sym.h): canonical equality, each
 * simplification and its negative cases, Python floor/mod semantics over a grid,
 * substitution, printing, parsing (round trips of random expressions, errors, limits),
 * overflow, and a randomized check of eval against a direct evaluation of the same
 * expression tree. */
#include <inttypes.h>
#include <stdlib.h>

#include "graph/sym.h"
#include "test.h"

static hc_arena A;

#define K(c) hc_sym_const(&A, (c))
#define V(n) hc_sym_var(&A, (n))
#define ADD(x, y) hc_sym_add(&A, (x), (y))
#define SUB(x, y) hc_sym_sub(&A, (x), (y))
#define MUL(x, y) hc_sym_mul(&A, (x), (y))
#define FDIV(x, y) hc_sym_floordiv(&A, (x), (y))
#define CDIV(x, y) hc_sym_ceildiv(&A, (x), (y))
#define MOD(x, y) hc_sym_mod(&A, (x), (y))
#define MIN(x, y) hc_sym_min(&A, (x), (y))
#define MAX(x, y) hc_sym_max(&A, (x), (y))
#define STR(x) hc_sym_str(&A, (x))
#define EQ(x, y) hc_sym_equal((x), (y))

static int64_t py_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) q--;
    return q;
}
static int64_t py_mod(int64_t a, int64_t b) { return a - b * py_div(a, b); }

/* eval with s, t, u (and b) bound */
static const char *const NAMES[4] = {"s", "t", "u", "b"};
static bool ev4(const hc_sym *x, int64_t s, int64_t t, int64_t u, int64_t b, int64_t *out) {
    int64_t vals[4] = {s, t, u, b};
    hc_sym_binding bd = {4, NAMES, vals};
    return hc_sym_eval(x, &bd, out);
}
static int64_t ev(const hc_sym *x, int64_t s) {
    int64_t v = INT64_MIN + 12345;
    if (!ev4(x, s, 0, 0, 0, &v)) return INT64_MIN + 999;
    return v;
}

/* the canonical-form invariants of sym.h, recursively */
static bool canonical(const hc_sym *x, bool top) {
    if (top && x->kind != HC_SYM_POLY) return false;
    switch (x->kind) {
    case HC_SYM_POLY:
        for (int i = 0; i < x->nterms; i++) {
            const hc_sym_term *t = &x->terms[i];
            if (t->coef == 0 || t->nf < 1) return false;
            for (int k = 0; k < t->nf; k++) {
                if (t->f[k]->kind == HC_SYM_POLY || !canonical(t->f[k], false)) return false;
                if (k > 0 && hc_sym_compare(t->f[k - 1], t->f[k]) > 0) return false;
            }
            if (i > 0) { /* strictly increasing monomials: compare as 1*monomial */
                hc_sym_term a = x->terms[i - 1], b = *t;
                a.coef = b.coef = 1;
                hc_sym pa = {.kind = HC_SYM_POLY, .nterms = 1, .terms = &a};
                hc_sym pb = {.kind = HC_SYM_POLY, .nterms = 1, .terms = &b};
                if (hc_sym_compare(&pa, &pb) >= 0) return false;
            }
        }
        return true;
    case HC_SYM_VAR: return x->name != NULL;
    default: return x->a && x->b && x->a->kind == HC_SYM_POLY && x->b->kind == HC_SYM_POLY &&
                    canonical(x->a, true) && canonical(x->b, true);
    }
}

/* ---- canonical equality ------------------------------------------------------------- */
static void test_canonical(void) {
    const hc_sym *s = V("s"), *b = V("b"), *t = V("t");
    const hc_sym *sq = MUL(ADD(b, K(1)), ADD(b, K(1)));
    const hc_sym *ex = ADD(ADD(MUL(b, b), hc_sym_mul_c(&A, b, 2)), K(1));
    CHECK(EQ(sq, ex));
    CHECK(hc_sym_compare(sq, ex) == 0);
    CHECK_STR(STR(sq), "b*b + 2*b + 1");
    CHECK(EQ(MUL(s, b), MUL(b, s)));
    CHECK_STR(STR(MUL(s, b)), "b*s");
    CHECK(EQ(ADD(s, t), ADD(t, s)));
    CHECK(EQ(SUB(ADD(s, t), s), t));
    CHECK(hc_sym_as_var(SUB(ADD(s, t), s)) && strcmp(hc_sym_as_var(SUB(ADD(s, t), s)), "t") == 0);
    int64_t c = -1;
    CHECK(hc_sym_is_const(SUB(MUL(s, t), MUL(t, s)), &c) && c == 0);
    CHECK(hc_sym_is_const(K(-42), &c) && c == -42);
    CHECK(!hc_sym_is_const(s, &c));
    CHECK(hc_sym_as_var(hc_sym_mul_c(&A, s, 2)) == NULL);
    CHECK(hc_sym_as_var(hc_sym_add_c(&A, s, 1)) == NULL);
    CHECK(hc_sym_as_var(K(3)) == NULL);
    /* (s - t)(s + t) = s*s - t*t */
    CHECK(EQ(MUL(SUB(s, t), ADD(s, t)), SUB(MUL(s, s), MUL(t, t))));
    CHECK_STR(STR(MUL(SUB(s, t), ADD(s, t))), "s*s - t*t");
    /* distributivity through atoms: (s//2)*(t + 1) = t*(s//2) + s//2 */
    const hc_sym *h = FDIV(s, K(2));
    CHECK(EQ(MUL(h, ADD(t, K(1))), ADD(MUL(t, h), h)));
    CHECK_STR(STR(MUL(h, ADD(t, K(1)))), "t*(s // 2) + s // 2");
    /* the structure itself */
    const hc_sym *p = ADD(ADD(MUL(hc_sym_mul_c(&A, t, 3), s), hc_sym_mul_c(&A, s, -2)), K(5));
    CHECK(p->kind == HC_SYM_POLY && p->nterms == 2 && p->c0 == 5);
    CHECK(canonical(p, true));
    CHECK(p->terms[0].nf == 2 && p->terms[0].coef == 3);
    CHECK(strcmp(p->terms[0].f[0]->name, "s") == 0 && strcmp(p->terms[0].f[1]->name, "t") == 0);
    CHECK(K(7)->kind == HC_SYM_POLY && K(7)->nterms == 0);
    /* different arenas combine and compare */
    hc_arena B;
    hc_arena_init(&B);
    const hc_sym *sb = hc_sym_var(&B, "s");
    CHECK(EQ(sb, s));
    CHECK(EQ(hc_sym_sub(&B, ADD(s, t), sb), t));
    const hc_sym *copy = hc_sym_subst(&A, hc_sym_mul(&B, sb, sb), NULL); /* rebuilt in A */
    hc_arena_free(&B);
    CHECK(EQ(copy, MUL(s, s)));
    /* NULL propagates */
    CHECK(ADD(NULL, s) == NULL && MUL(s, NULL) == NULL && hc_sym_neg(&A, NULL) == NULL);
    CHECK(MIN(FDIV(s, K(0)), s) == NULL);
}

/* ---- printing ---------------------------------------------------------------------- */
static void test_print(void) {
    const hc_sym *seq = V("seq"), *batch = V("batch"), *s = V("s"), *t = V("t");
    CHECK_STR(STR(ADD(hc_sym_mul_c(&A, seq, 2), K(1))), "2*seq + 1");
    CHECK_STR(STR(MUL(seq, batch)), "batch*seq");
    CHECK_STR(STR(ADD(hc_sym_neg(&A, seq), K(7))), "-seq + 7");
    CHECK_STR(STR(ADD(FDIV(seq, K(2)), K(1))), "seq // 2 + 1");
    CHECK_STR(STR(FDIV(ADD(seq, K(1)), K(2))), "(seq + 1) // 2");
    CHECK_STR(STR(MOD(seq, K(4))), "seq % 4");
    CHECK_STR(STR(MIN(seq, K(1024))), "min(seq, 1024)");
    CHECK_STR(STR(MIN(K(1024), seq)), "min(seq, 1024)");
    CHECK_STR(STR(MAX(K(1024), seq)), "max(seq, 1024)");
    CHECK_STR(STR(MUL(MUL(s, s), s)), "s*s*s");
    CHECK_STR(STR(K(0)), "0");
    CHECK_STR(STR(K(-5)), "-5");
    CHECK_STR(STR(hc_sym_add_c(&A, s, -5)), "s - 5");
    CHECK_STR(STR(SUB(K(2), hc_sym_mul_c(&A, s, 3))), "-3*s + 2");
    CHECK_STR(STR(SUB(V("a"), hc_sym_mul_c(&A, s, 3))), "a - 3*s");
    CHECK_STR(STR(SUB(K(1), FDIV(s, K(2)))), "-(s // 2) + 1");
    CHECK_STR(STR(SUB(t, FDIV(s, K(2)))), "t - s // 2");
    CHECK_STR(STR(hc_sym_mul_c(&A, FDIV(s, K(2)), 3)), "3*(s // 2)");
    CHECK_STR(STR(hc_sym_mul_c(&A, FDIV(s, K(2)), -3)), "-3*(s // 2)");
    CHECK_STR(STR(MUL(t, MOD(s, K(3)))), "t*(s % 3)");
    CHECK_STR(STR(FDIV(s, hc_sym_mul_c(&A, t, 2))), "s // (2*t)");
    CHECK_STR(STR(FDIV(s, ADD(t, K(1)))), "s // (t + 1)");
    CHECK_STR(STR(MOD(hc_sym_mul_c(&A, s, 3), t)), "3*s % t");
    CHECK_STR(STR(FDIV(FDIV(s, K(3)), t)), "s // 3 // t");
    CHECK_STR(STR(FDIV(s, FDIV(t, K(3)))), "s // (t // 3)");
    CHECK_STR(STR(FDIV(hc_sym_neg(&A, s), t)), "-s // t");
    CHECK_STR(STR(FDIV(s, MIN(t, K(4)))), "s // min(t, 4)");
    CHECK_STR(STR(MAX(ADD(s, t), K(3))), "max(s + t, 3)");
    CHECK_STR(STR(MUL(hc_sym_mul_c(&A, MIN(s, t), 2), s)), "2*s*min(s, t)");
    /* names */
    CHECK_STR(STR(V("my dim")), "'my dim'");
    CHECK_STR(STR(V("it's")), "'it\\'s'");
    CHECK_STR(STR(V("a\\b")), "'a\\\\b'");
    CHECK_STR(STR(V("min")), "'min'");
    CHECK_STR(STR(V("max")), "'max'");
    CHECK_STR(STR(V("")), "''");
    CHECK_STR(STR(V("9x")), "'9x'");
    CHECK_STR(STR(V("a.b_2")), "a.b_2");
    CHECK_STR(STR(V("_")), "_");
    CHECK_STR(STR(hc_sym_mul_c(&A, V("x-y"), 2)), "2*'x-y'");
    /* extremes */
    CHECK_STR(STR(K(INT64_MIN)), "-9223372036854775808");
    CHECK_STR(STR(hc_sym_add_c(&A, s, INT64_MIN)), "s + -9223372036854775808");
    CHECK_STR(STR(hc_sym_mul_c(&A, s, INT64_MIN)), "-9223372036854775808*s");
    CHECK_STR(STR(SUB(t, hc_sym_mul_c(&A, s, INT64_MAX))), "-9223372036854775807*s + t");
    CHECK_STR(STR(ADD(t, hc_sym_mul_c(&A, s, INT64_MIN))), "-9223372036854775808*s + t");
    CHECK_STR(STR(ADD(V("a"), hc_sym_mul_c(&A, s, INT64_MIN))), "a + -9223372036854775808*s");
    char buf[64];
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sym_print(&sb, NULL);
    snprintf(buf, sizeof buf, "%s", hc_sb_str(&sb));
    hc_sb_free(&sb);
    CHECK_STR(buf, "(null)");
}

/* ---- simplification ------------------------------------------------------------------ */
static void test_fold(void) {
    int64_t c;
    static const int64_t xs[] = {-9, -8, -7, -1, 0, 1, 6, 7, 8, 9};
    static const int64_t ds[] = {-4, -3, -2, -1, 1, 2, 3, 4};
    for (size_t i = 0; i < HC_ARRAY_LEN(xs); i++)
        for (size_t j = 0; j < HC_ARRAY_LEN(ds); j++) {
            int64_t a = xs[i], d = ds[j];
            CHECK(hc_sym_is_const(FDIV(K(a), K(d)), &c) && c == py_div(a, d));
            CHECK(hc_sym_is_const(MOD(K(a), K(d)), &c) && c == py_mod(a, d));
            CHECK(hc_sym_is_const(CDIV(K(a), K(d)), &c) && c == -py_div(-a, d));
            CHECK(hc_sym_is_const(MIN(K(a), K(d)), &c) && c == (a < d ? a : d));
            CHECK(hc_sym_is_const(MAX(K(a), K(d)), &c) && c == (a > d ? a : d));
        }
    CHECK(hc_sym_is_const(FDIV(K(-7), K(2)), &c) && c == -4);
    CHECK(hc_sym_is_const(MOD(K(-7), K(2)), &c) && c == 1);
    CHECK(hc_sym_is_const(MOD(K(7), K(-2)), &c) && c == -1);
    CHECK(hc_sym_is_const(ADD(K(3), K(4)), &c) && c == 7);
    CHECK(hc_sym_is_const(MUL(K(-3), K(4)), &c) && c == -12);
    CHECK(hc_sym_is_const(hc_sym_neg(&A, K(5)), &c) && c == -5);
    CHECK(FDIV(V("s"), K(0)) == NULL && MOD(V("s"), K(0)) == NULL && CDIV(K(1), K(0)) == NULL);
    CHECK(FDIV(K(0), K(0)) == NULL && MOD(K(3), SUB(V("s"), V("s"))) == NULL);
}

static void test_floordiv(void) {
    const hc_sym *s = V("s"), *b = V("b"), *t = V("t");
    const hc_sym *s4 = ADD(hc_sym_mul_c(&A, s, 4), K(8));
    CHECK(EQ(FDIV(s4, K(4)), hc_sym_add_c(&A, s, 2))); /* floor((4s + 8) / 4) */
    CHECK(EQ(FDIV(s4, K(2)), ADD(hc_sym_mul_c(&A, s, 2), K(4))));
    CHECK(EQ(FDIV(s4, K(1)), s4));
    CHECK(EQ(FDIV(s4, K(-1)), hc_sym_neg(&A, s4)));
    CHECK(EQ(FDIV(s4, K(-4)), hc_sym_add_c(&A, hc_sym_neg(&A, s), -2)));
    /* c divides the terms, not c0: q + floor(c0 / c) */
    CHECK(EQ(FDIV(hc_sym_add_c(&A, hc_sym_mul_c(&A, s, 2), 1), K(2)), s));
    CHECK(EQ(FDIV(hc_sym_add_c(&A, hc_sym_mul_c(&A, s, 2), 3), K(2)), hc_sym_add_c(&A, s, 1)));
    CHECK(EQ(FDIV(hc_sym_add_c(&A, hc_sym_mul_c(&A, s, 2), -1), K(2)), hc_sym_add_c(&A, s, -1)));
    CHECK(EQ(FDIV(hc_sym_add_c(&A, hc_sym_mul_c(&A, s, 6), 3), K(-2)),
             hc_sym_add_c(&A, hc_sym_mul_c(&A, s, -3), -2)));
    /* does not simplify: an atom, whose value is still right */
    const hc_sym *h = FDIV(hc_sym_add_c(&A, s, 1), K(2));
    CHECK(h->nterms == 1 && h->terms[0].f[0]->kind == HC_SYM_FLOORDIV);
    CHECK(canonical(h, true));
    CHECK_STR(STR(h), "(s + 1) // 2");
    for (int v = -7; v <= 7; v++) CHECK_EQ_INT(ev(h, v), py_div(v + 1, 2));
    /* partial: floor((3s + 1) / 2) = s + floor((s + 1) / 2); the gcd: (2s + 2) // 4 */
    const hc_sym *p = FDIV(hc_sym_add_c(&A, hc_sym_mul_c(&A, s, 3), 1), K(2));
    CHECK_STR(STR(p), "s + (s + 1) // 2");
    CHECK(EQ(FDIV(hc_sym_add_c(&A, hc_sym_mul_c(&A, s, 2), 2), K(4)), h));
    CHECK(EQ(FDIV(hc_sym_add_c(&A, hc_sym_mul_c(&A, s, 2), 6), K(4)), hc_sym_add_c(&A, h, 1)));
    CHECK(EQ(FDIV(hc_sym_add_c(&A, s, 1), K(-2)), FDIV(hc_sym_add_c(&A, hc_sym_neg(&A, s), -1), K(2))));
    for (int v = -9; v <= 9; v++) {
        CHECK_EQ_INT(ev(p, v), py_div(3 * v + 1, 2));
        CHECK_EQ_INT(ev(FDIV(hc_sym_add_c(&A, s, 1), K(-2)), v), py_div(v + 1, -2));
        CHECK_EQ_INT(ev(FDIV(hc_sym_add_c(&A, hc_sym_mul_c(&A, s, 5), -3), K(-3)), v), py_div(5 * v - 3, -3));
    }
    /* by a single term */
    const hc_sym *bs6 = hc_sym_mul_c(&A, MUL(b, s), 6);
    CHECK(EQ(FDIV(bs6, hc_sym_mul_c(&A, s, 2)), hc_sym_mul_c(&A, b, 3))); /* 6bs / 2s */
    CHECK(EQ(FDIV(bs6, MUL(b, s)), K(6)));
    CHECK_STR(STR(FDIV(bs6, hc_sym_mul_c(&A, s, 4))), "b + b // 2");      /* floor(3b / 2) */
    CHECK_STR(STR(FDIV(bs6, hc_sym_mul_c(&A, s, -4))), "-b + -b // 2"); /* floor(-3b / 2) */
    for (int v = 1; v <= 7; v++) {
        int64_t got;
        CHECK(ev4(FDIV(bs6, hc_sym_mul_c(&A, s, -4)), v, 0, 0, 3, &got) && got == py_div(-18 * v, 4 * v));
    }
    CHECK_STR(STR(FDIV(ADD(bs6, K(1)), s)), "(6*b*s + 1) // s"); /* c0: not divisible */
    CHECK_STR(STR(FDIV(b, s)), "b // s");
    CHECK_STR(STR(FDIV(MUL(b, s), MUL(s, s))), "b*s // (s*s)"); /* multiplicity */
    CHECK(EQ(FDIV(MUL(MUL(s, s), b), MUL(s, s)), b));
    CHECK_STR(STR(FDIV(s, ADD(t, s))), "s // (s + t)");
    CHECK(EQ(FDIV(K(0), ADD(t, s)), ADD(FDIV(K(0), ADD(s, t)), K(0))));
    /* ceildiv */
    CHECK(EQ(CDIV(hc_sym_add_c(&A, hc_sym_mul_c(&A, s, 4), 3), K(4)), hc_sym_add_c(&A, s, 1)));
    CHECK(EQ(CDIV(hc_sym_mul_c(&A, s, 4), K(4)), s));
    const hc_sym *cd = CDIV(s, K(4));
    CHECK_STR(STR(cd), "(s + 3) // 4");
    CHECK_STR(STR(CDIV(s, t)), "-(-s // t)");
    CHECK_STR(STR(FDIV(hc_sym_neg(&A, s), K(4))), "-s // 4");
    CHECK_STR(STR(FDIV(hc_sym_add_c(&A, s, -1), K(2))), "(s + 1) // 2 - 1");
    CHECK_STR(STR(FDIV(hc_sym_add_c(&A, hc_sym_mul_c(&A, s, -5), 1), K(2))), "-2*s + (-s + 1) // 2");
    for (int v = -9; v <= 9; v++) {
        int64_t got;
        CHECK(ev4(CDIV(s, t), v, 3, 0, 0, &got) && got == -py_div(-v, 3));
        CHECK_EQ_INT(ev(FDIV(hc_sym_add_c(&A, hc_sym_mul_c(&A, s, -5), 1), K(2)), v), py_div(1 - 5 * v, 2));
    }
    for (int v = -9; v <= 9; v++) {
        CHECK_EQ_INT(ev(cd, v), -py_div(-v, 4));
        CHECK_EQ_INT(ev(CDIV(s, K(-3)), v), -py_div(-v, -3));
    }
}

static void test_mod(void) {
    const hc_sym *s = V("s"), *b = V("b"), *t = V("t");
    int64_t c;
    CHECK(hc_sym_is_const(MOD(ADD(hc_sym_mul_c(&A, s, 4), K(6)), K(4)), &c) && c == 2);
    CHECK(hc_sym_is_const(MOD(ADD(hc_sym_mul_c(&A, s, 4), K(-1)), K(4)), &c) && c == 3);
    CHECK(hc_sym_is_const(MOD(ADD(hc_sym_mul_c(&A, s, 4), K(-1)), K(-4)), &c) && c == -1);
    CHECK(hc_sym_is_const(MOD(s, K(1)), &c) && c == 0);
    CHECK(hc_sym_is_const(MOD(s, K(-1)), &c) && c == 0);
    CHECK(EQ(MOD(hc_sym_add_c(&A, s, 4), K(4)), MOD(s, K(4))));
    CHECK(EQ(MOD(hc_sym_add_c(&A, hc_sym_mul_c(&A, s, 5), 4), K(4)), MOD(s, K(4))));
    CHECK_STR(STR(MOD(hc_sym_add_c(&A, hc_sym_mul_c(&A, s, 2), 2), K(4))), "2*((s + 1) % 2)");
    const hc_sym *m = MOD(s, K(4));
    CHECK(m->nterms == 1 && m->terms[0].f[0]->kind == HC_SYM_MOD);
    CHECK_STR(STR(MOD(s, K(-3))), "-(-s % 3)");
    for (int v = -9; v <= 9; v++) {
        CHECK_EQ_INT(ev(m, v), py_mod(v, 4));
        CHECK_EQ_INT(ev(MOD(s, K(-3)), v), py_mod(v, -3));
        CHECK_EQ_INT(ev(MOD(hc_sym_add_c(&A, hc_sym_mul_c(&A, s, 7), -2), K(-5)), v), py_mod(7 * v - 2, -5));
        CHECK_EQ_INT(ev(MOD(hc_sym_add_c(&A, hc_sym_mul_c(&A, s, 2), 2), K(4)), v), py_mod(2 * v + 2, 4));
    }
    /* y divides x: 0 */
    CHECK(hc_sym_is_const(MOD(hc_sym_mul_c(&A, MUL(b, s), 6), hc_sym_mul_c(&A, s, 2)), &c) && c == 0);
    CHECK(hc_sym_is_const(MOD(MUL(b, s), s), &c) && c == 0);
    CHECK(hc_sym_is_const(MOD(SUB(MUL(b, s), s), s), &c) && c == 0);
    /* (m*q) mod (c*m) = m*(q mod c) */
    CHECK_STR(STR(MOD(hc_sym_mul_c(&A, MUL(b, s), 3), hc_sym_mul_c(&A, s, 2))), "s*(b % 2)");
    CHECK_STR(STR(MOD(s, t)), "s % t");
    CHECK_STR(STR(MOD(ADD(s, K(1)), t)), "(s + 1) % t");
    CHECK_STR(STR(MOD(s, ADD(t, K(1)))), "s % (t + 1)");
}

static void test_exact_div(void) {
    const hc_sym *s = V("s"), *b = V("b");
    const hc_sym *x = ADD(hc_sym_mul_c(&A, s, 4), K(8));
    CHECK(EQ(hc_sym_exact_div(&A, x, K(4)), hc_sym_add_c(&A, s, 2)));
    CHECK(EQ(hc_sym_exact_div(&A, x, K(-4)), hc_sym_add_c(&A, hc_sym_neg(&A, s), -2)));
    CHECK(hc_sym_exact_div(&A, x, K(3)) == NULL);
    CHECK(hc_sym_exact_div(&A, hc_sym_add_c(&A, hc_sym_mul_c(&A, s, 2), 1), K(2)) == NULL);
    CHECK(hc_sym_exact_div(&A, x, K(0)) == NULL);
    const hc_sym *y = ADD(hc_sym_mul_c(&A, MUL(b, s), 6), hc_sym_mul_c(&A, s, 4));
    CHECK(EQ(hc_sym_exact_div(&A, y, hc_sym_mul_c(&A, s, 2)), ADD(hc_sym_mul_c(&A, b, 3), K(2))));
    CHECK(hc_sym_exact_div(&A, ADD(y, K(4)), hc_sym_mul_c(&A, s, 2)) == NULL);
    CHECK(hc_sym_exact_div(&A, y, hc_sym_mul_c(&A, s, 4)) == NULL);
    CHECK(hc_sym_exact_div(&A, y, b) == NULL);
    CHECK(hc_sym_exact_div(&A, MUL(b, s), MUL(s, s)) == NULL);
    CHECK(EQ(hc_sym_exact_div(&A, MUL(MUL(s, s), b), MUL(s, s)), b));
    CHECK(hc_sym_exact_div(&A, y, hc_sym_add_c(&A, s, 1)) == NULL); /* not a single term */
    CHECK(hc_sym_exact_div(&A, y, y) == NULL);
    CHECK(EQ(hc_sym_exact_div(&A, K(0), s), K(0)));
    CHECK(EQ(hc_sym_exact_div(&A, K(12), K(-3)), K(-4)));
    CHECK(hc_sym_exact_div(&A, K(INT64_MIN), K(-1)) == NULL); /* overflow */
    const hc_sym *h = FDIV(s, K(3));
    CHECK(EQ(hc_sym_exact_div(&A, MUL(MUL(h, b), K(6)), MUL(h, K(2))), hc_sym_mul_c(&A, b, 3)));
}

static void test_minmax(void) {
    const hc_sym *s = V("s"), *t = V("t");
    int64_t c;
    CHECK(EQ(MIN(s, s), s) && EQ(MAX(ADD(s, t), ADD(t, s)), ADD(s, t)));
    CHECK(EQ(MIN(s, hc_sym_add_c(&A, s, 1)), s));
    CHECK(EQ(MIN(hc_sym_add_c(&A, s, 1), s), s));
    CHECK(EQ(MAX(s, hc_sym_add_c(&A, s, 1)), hc_sym_add_c(&A, s, 1)));
    CHECK(EQ(MAX(hc_sym_add_c(&A, s, -3), s), s));
    CHECK(hc_sym_is_const(MIN(K(2), K(5)), &c) && c == 2);
    CHECK(hc_sym_is_const(MAX(K(-3), K(-7)), &c) && c == -3);
    /* symbols >= 1 */
    CHECK(hc_sym_is_const(MIN(s, K(1)), &c) && c == 1);
    CHECK(hc_sym_is_const(MIN(K(0), s), &c) && c == 0);
    CHECK(EQ(MAX(s, K(1)), s) && EQ(MAX(K(-5), s), s));
    CHECK(hc_sym_is_const(MIN(ADD(s, t), K(2)), &c) && c == 2);
    CHECK(EQ(MAX(MUL(s, t), K(1)), MUL(s, t)));
    CHECK(EQ(MIN(hc_sym_mul_c(&A, s, 2), hc_sym_add_c(&A, s, 1)), hc_sym_add_c(&A, s, 1)));
    CHECK(EQ(MAX(K(1), SUB(K(2), s)), K(1)));
    /* not decided: atoms, in canonical argument order */
    CHECK_STR(STR(MIN(s, K(2))), "min(s, 2)");
    CHECK_STR(STR(MIN(s, t)), "min(s, t)");
    CHECK(EQ(MIN(s, t), MIN(t, s)) && EQ(MAX(s, t), MAX(t, s)));
    CHECK(!EQ(MIN(s, t), MAX(s, t)));
    CHECK_STR(STR(MIN(MUL(s, t), s)), "min(s*t, s)");
    CHECK_STR(STR(MAX(FDIV(s, K(2)), K(1))), "max(s // 2, 1)"); /* s // 2 may be 0 */
    CHECK_STR(STR(MIN(SUB(s, t), K(0))), "min(s - t, 0)");
    for (int v = 1; v <= 6; v++)
        for (int w = 1; w <= 6; w++) {
            int64_t got;
            CHECK(ev4(MIN(s, t), v, w, 0, 0, &got) && got == (v < w ? v : w));
            CHECK(ev4(MAX(SUB(s, t), K(0)), v, w, 0, 0, &got) && got == (v - w > 0 ? v - w : 0));
        }
}

/* ---- eval, vars, subst ---------------------------------------------------------------- */
static void test_eval(void) {
    const hc_sym *s = V("s"), *t = V("t");
    /* Python semantics over a grid, with negative values and divisors */
    int bad = 0;
    for (int k = -6; k <= 6; k++)
        for (int d = -5; d <= 5; d++) {
            if (d == 0) continue;
            const hc_sym *x = hc_sym_add_c(&A, s, k);
            const hc_sym *q = FDIV(x, K(d)), *r = MOD(x, K(d)), *cq = CDIV(x, K(d));
            const hc_sym *q3 = FDIV(hc_sym_add_c(&A, hc_sym_mul_c(&A, s, 3), k), K(d));
            const hc_sym *qt = FDIV(x, hc_sym_mul_c(&A, t, d)), *rt = MOD(x, hc_sym_mul_c(&A, t, d));
            for (int v = -8; v <= 8; v++)
                for (int w = 1; w <= 3; w++) {
                    int64_t g1, g2, g3, g4, g5, g6;
                    bool ok = ev4(q, v, w, 0, 0, &g1) && ev4(r, v, w, 0, 0, &g2) &&
                              ev4(cq, v, w, 0, 0, &g3) && ev4(q3, v, w, 0, 0, &g4) &&
                              ev4(qt, v, w, 0, 0, &g5) && ev4(rt, v, w, 0, 0, &g6);
                    if (!ok || g1 != py_div(v + k, d) || g2 != py_mod(v + k, d) ||
                        g3 != -py_div(-(v + k), d) || g4 != py_div(3 * v + k, d) ||
                        g5 != py_div(v + k, w * d) || g6 != py_mod(v + k, w * d)) {
                        if (bad++ < 5)
                            fprintf(stderr, "grid mismatch k=%d d=%d s=%d t=%d\n", k, d, v, w);
                    }
                }
        }
    CHECK_EQ_INT(bad, 0);
    /* failures: unbound, division by zero, out untouched */
    int64_t out = 77;
    hc_sym_binding none = {0, NULL, NULL};
    CHECK(!hc_sym_eval(s, &none, &out) && out == 77);
    CHECK(!hc_sym_eval(s, NULL, &out) && out == 77);
    CHECK(hc_sym_eval(K(5), NULL, &out) && out == 5);
    CHECK(!ev4(ADD(s, V("zz")), 1, 1, 1, 1, &out));
    CHECK(!ev4(FDIV(s, SUB(t, K(1))), 5, 1, 0, 0, &out));
    CHECK(!ev4(MOD(s, SUB(t, K(1))), 5, 1, 0, 0, &out));
    CHECK(ev4(FDIV(s, SUB(t, K(1))), 5, 3, 0, 0, &out) && out == 2);
    CHECK(!ev4(FDIV(s, t), INT64_MIN, -1, 0, 0, &out));
    CHECK(ev4(MOD(s, t), INT64_MIN, -1, 0, 0, &out) && out == 0);
    CHECK(!ev4(MUL(s, t), INT64_MAX, 2, 0, 0, &out));
    CHECK(!ev4(MUL(s, s), (int64_t)1 << 32, 0, 0, 0, &out));
    CHECK(!ev4(ADD(s, t), INT64_MAX, 1, 0, 0, &out));
    CHECK(ev4(ADD(s, t), INT64_MAX, -1, 0, 0, &out) && out == INT64_MAX - 1);
    CHECK(!ev4(hc_sym_neg(&A, s), INT64_MIN, 0, 0, 0, &out));
    /* the first binding of a name wins */
    const char *names[2] = {"s", "s"};
    int64_t vals[2] = {3, 4};
    hc_sym_binding dup = {2, names, vals};
    CHECK(hc_sym_eval(hc_sym_mul_c(&A, s, 2), &dup, &out) && out == 6);
}

static void test_vars_mentions(void) {
    const hc_sym *e = ADD(hc_sym_mul_c(&A, MUL(V("b"), V("s")), 2), FDIV(MIN(V("t"), V("a")), K(3)));
    const char *names[8];
    int n = 0;
    hc_sym_vars(e, names, &n, 8);
    CHECK_EQ_INT(n, 4);
    if (n == 4) {
        CHECK_STR(names[0], "a");
        CHECK_STR(names[1], "b");
        CHECK_STR(names[2], "s");
        CHECK_STR(names[3], "t");
    }
    hc_sym_vars(ADD(V("c"), V("s")), names, &n, 8); /* appended, no duplicates, sorted */
    CHECK_EQ_INT(n, 5);
    if (n == 5) CHECK_STR(names[2], "c");
    hc_sym_vars(K(4), names, &n, 8);
    CHECK_EQ_INT(n, 5);
    int m = 0;
    hc_sym_vars(e, names, &m, 2); /* cap */
    CHECK_EQ_INT(m, 2);
    CHECK(m == 2 && strcmp(names[0], names[1]) < 0);
    CHECK(hc_sym_mentions(e, "a") && hc_sym_mentions(e, "s") && !hc_sym_mentions(e, "c"));
    CHECK(!hc_sym_mentions(K(3), "s"));
    CHECK(hc_sym_mentions(MOD(K(3), V("q")), "q"));
}

static void test_subst(void) {
    const hc_sym *s = V("s"), *t = V("t");
    const char *names[2] = {"s", "t"};
    int64_t vals[2] = {3, 1};
    hc_sym_binding bs = {1, names, vals}, bst = {2, names, vals};
    CHECK(EQ(hc_sym_subst(&A, ADD(hc_sym_mul_c(&A, s, 2), t), &bs), hc_sym_add_c(&A, t, 6)));
    CHECK(EQ(hc_sym_subst(&A, FDIV(hc_sym_add_c(&A, s, 1), K(2)), &bs), K(2)));
    CHECK(EQ(hc_sym_subst(&A, MUL(FDIV(ADD(s, t), K(2)), t), &bs), MUL(FDIV(hc_sym_add_c(&A, t, 3), K(2)), t)));
    CHECK(EQ(hc_sym_subst(&A, MIN(s, t), &bst), K(1)));
    CHECK(EQ(hc_sym_subst(&A, MIN(s, t), &bs), MIN(t, K(3))));
    CHECK(EQ(hc_sym_subst(&A, MOD(t, s), &bs), MOD(t, K(3))));
    CHECK(EQ(hc_sym_subst(&A, FDIV(MUL(s, t), s), &bs), t));
    /* a divisor that becomes 0 stays an atom whose evaluation fails */
    const hc_sym *z = hc_sym_subst(&A, FDIV(t, SUB(s, K(3))), &bs);
    CHECK(z != NULL);
    CHECK_STR(STR(z), "t // 0");
    int64_t out;
    CHECK(!ev4(z, 3, 1, 0, 0, &out));
    CHECK(hc_sym_subst(&A, MOD(t, SUB(s, K(3))), &bs) != NULL);
    /* no binding: an equal copy */
    const hc_sym *e = ADD(MUL(FDIV(s, K(3)), MAX(s, t)), MOD(MUL(s, t), hc_sym_add_c(&A, t, 2)));
    CHECK(EQ(hc_sym_subst(&A, e, NULL), e));
}

/* ---- overflow ------------------------------------------------------------------------- */
static void test_overflow(void) {
    const hc_sym *s = V("s"), *t = V("t");
    int64_t c, out;
    const hc_sym *x = hc_sym_add_c(&A, K(INT64_MAX), 1);
    CHECK(!hc_sym_is_const(x, &c));
    CHECK(canonical(x, true));
    CHECK(!hc_sym_eval(x, NULL, &out));
    CHECK(EQ(hc_sym_parse(&A, STR(x), NULL), x));
    /* INT64_MIN // -1 and -INT64_MIN are not folded; INT64_MIN % -1 is 0 */
    const hc_sym *q = FDIV(K(INT64_MIN), K(-1));
    CHECK(!hc_sym_is_const(q, &c) && !hc_sym_eval(q, NULL, &out));
    CHECK_STR(STR(q), "-9223372036854775808 // (-1)");
    CHECK(EQ(hc_sym_parse(&A, STR(q), NULL), q));
    CHECK(hc_sym_is_const(MOD(K(INT64_MIN), K(-1)), &c) && c == 0);
    CHECK(!hc_sym_is_const(hc_sym_neg(&A, K(INT64_MIN)), &c));
    CHECK(!hc_sym_eval(hc_sym_neg(&A, K(INT64_MIN)), NULL, &out));
    CHECK(hc_sym_is_const(SUB(K(INT64_MIN), K(INT64_MIN)), &c) && c == 0);
    CHECK(hc_sym_is_const(ADD(K(INT64_MIN), K(INT64_MAX)), &c) && c == -1);
    /* a coefficient: 2^63 * s is kept exact, its value overflows except at s = 0 */
    const hc_sym *big = hc_sym_mul_c(&A, s, INT64_MAX);
    const hc_sym *y = ADD(big, s);
    CHECK(canonical(y, true));
    CHECK(ev4(y, 0, 0, 0, 0, &out) && out == 0);
    CHECK(!ev4(y, 1, 0, 0, 0, &out));
    CHECK(ev4(SUB(y, s), 1, 0, 0, 0, &out) && out == INT64_MAX);
    CHECK(EQ(SUB(big, big), K(0)));
    CHECK(EQ(SUB(hc_sym_mul_c(&A, s, INT64_MIN), hc_sym_mul_c(&A, s, INT64_MIN)), K(0)));
    const hc_sym *y2 = hc_sym_mul_c(&A, big, 4);
    CHECK(ev4(y2, 0, 0, 0, 0, &out) && out == 0 && !ev4(y2, 1, 0, 0, 0, &out));
    CHECK(ev4(hc_sym_mul_c(&A, ADD(big, t), 1), 1, -5, 0, 0, &out) && out == INT64_MAX - 5);
    CHECK(ev4(MUL(big, ADD(big, s)), 0, 0, 0, 0, &out) && out == 0);
    CHECK(!ev4(MUL(big, ADD(big, s)), 1, 0, 0, 0, &out));
    const hc_sym *nm = hc_sym_neg(&A, hc_sym_mul_c(&A, s, INT64_MIN));
    CHECK(ev4(nm, 0, 0, 0, 0, &out) && out == 0 && !ev4(nm, 1, 0, 0, 0, &out));
    CHECK(EQ(hc_sym_parse(&A, STR(y), NULL), y));
    CHECK(EQ(hc_sym_parse(&A, STR(nm), NULL), nm));
    /* large expansions are kept as products, exactly */
    const hc_sym *p = ADD(ADD(ADD(s, t), V("u")), K(1)), *e = K(1);
    for (int i = 0; i < 12; i++) e = MUL(e, p);
    CHECK(canonical(e, true));
    for (int v = -2; v <= 2; v++) {
        int64_t want = 1;
        for (int i = 0; i < 12; i++) want *= (v + 1 + 2 * v + 1 - v);
        CHECK(ev4(e, v, 2 * v + 1, -v, 0, &out) && out == want);
    }
    const hc_sym *pw = K(1);
    for (int i = 0; i < 100; i++) pw = MUL(pw, s);
    CHECK(canonical(pw, true));
    CHECK(ev4(pw, 1, 0, 0, 0, &out) && out == 1);
    CHECK(ev4(pw, -1, 0, 0, 0, &out) && out == 1);
    CHECK(!ev4(pw, 2, 0, 0, 0, &out));
    /* held forms are exact but not canonical: their text parses back to an expression
     * of the same value, not necessarily the same structure */
    const hc_sym *pwp = hc_sym_parse(&A, STR(pw), NULL);
    CHECK(pwp && ev4(pwp, -1, 0, 0, 0, &out) && out == 1 && !ev4(pwp, 2, 0, 0, 0, &out));
}

/* ---- parsing ----------------------------------------------------------------------------- */
static const hc_sym *PARSE(const char *text) {
    hc_error err = {0};
    const hc_sym *x = hc_sym_parse(&A, text, &err);
    if (!x) fprintf(stderr, "parse %.200s: %s\n", text, err.msg);
    return x;
}

static void check_error(const char *text, const char *want_substr) {
    hc_error err = {0};
    const hc_sym *x = hc_sym_parse(&A, text, &err);
    CHECK_MSG(x == NULL, "parsed %s", text);
    CHECK_MSG(err.status == HC_ERR_INVALID && strstr(err.msg, want_substr) != NULL,
              "%s: %s (wanted '%s')", text, err.msg, want_substr);
}

static void test_parse(void) {
    const hc_sym *s = V("s"), *t = V("t");
    int64_t c;
    CHECK(EQ(PARSE("2*seq+1"), ADD(hc_sym_mul_c(&A, V("seq"), 2), K(1))));
    CHECK(EQ(PARSE("  s  *  t  "), MUL(s, t)));
    CHECK(hc_sym_is_const(PARSE("1 + 2*3"), &c) && c == 7);
    CHECK(hc_sym_is_const(PARSE("(1 + 2)*3"), &c) && c == 9);
    CHECK(hc_sym_is_const(PARSE("7 - 2 - 1"), &c) && c == 4);
    CHECK(hc_sym_is_const(PARSE("100 // 7 // 2"), &c) && c == 7);
    CHECK(hc_sym_is_const(PARSE("100 // (7 // 2)"), &c) && c == 33);
    CHECK(hc_sym_is_const(PARSE("17 % 5 * 3"), &c) && c == 6);
    CHECK(hc_sym_is_const(PARSE("-7 // 2"), &c) && c == -4); /* Python: (-7) // 2 */
    CHECK(hc_sym_is_const(PARSE("- 7 % 3"), &c) && c == 2);
    CHECK(hc_sym_is_const(PARSE("2*-3"), &c) && c == -6);
    CHECK(hc_sym_is_const(PARSE("--3"), &c) && c == 3);
    CHECK(hc_sym_is_const(PARSE("-(3)"), &c) && c == -3);
    CHECK(hc_sym_is_const(PARSE("+4 - +1"), &c) && c == 3);
    CHECK(hc_sym_is_const(PARSE("min(3, -4) + max(2, 9)"), &c) && c == 5);
    CHECK(hc_sym_is_const(PARSE("-9223372036854775808"), &c) && c == INT64_MIN);
    CHECK(hc_sym_is_const(PARSE("9223372036854775807"), &c) && c == INT64_MAX);
    CHECK(hc_sym_is_const(PARSE("007"), &c) && c == 7);
    CHECK(EQ(PARSE("-s // 2"), FDIV(hc_sym_neg(&A, s), K(2))));
    CHECK(EQ(PARSE("-(s // 2)"), hc_sym_neg(&A, FDIV(s, K(2)))));
    CHECK(EQ(PARSE("t - s // 2"), SUB(t, FDIV(s, K(2)))));
    CHECK(EQ(PARSE("s*t // 2"), FDIV(MUL(s, t), K(2))));
    CHECK(EQ(PARSE("s*(t // 2)"), MUL(s, FDIV(t, K(2)))));
    CHECK(EQ(PARSE("(s+1)//2"), FDIV(hc_sym_add_c(&A, s, 1), K(2))));
    CHECK(EQ(PARSE("min ( s , t )"), MIN(s, t)));
    CHECK(EQ(PARSE("max(t,s)"), MAX(s, t)));
    CHECK(EQ(PARSE("\ts\n+\r1"), hc_sym_add_c(&A, s, 1)));
    CHECK(EQ(PARSE("'my dim' * 2"), hc_sym_mul_c(&A, V("my dim"), 2)));
    CHECK(EQ(PARSE("'it\\'s'"), V("it's")));
    CHECK(EQ(PARSE("'a\\\\b'"), V("a\\b")));
    CHECK(EQ(PARSE("''"), V("")));
    CHECK(EQ(PARSE("'min'"), V("min")));
    CHECK(EQ(PARSE("min + 1"), hc_sym_add_c(&A, V("min"), 1))); /* a symbol without ( */
    CHECK(EQ(PARSE("a.b_2*x"), MUL(V("a.b_2"), V("x"))));
    CHECK(EQ(PARSE("minimum"), V("minimum")));
    /* errors: position and what was expected */
    check_error("", "offset 0: expected a number, a symbol");
    check_error("   ", "offset 3: expected a number");
    check_error("s +", "offset 3: expected a number, a symbol, '(', min( or max(, got end of text");
    check_error("s + * t", "offset 4: expected a number");
    check_error("(s + 1", "offset 6: expected ')', got end of text");
    check_error("s + 1)", "offset 5: expected an operator or end of text, got ')'");
    check_error("s t", "offset 2: expected an operator or end of text, got 't'");
    check_error("2s", "offset 1: expected an operator or end of text");
    check_error("s / 2", "offset 2: expected '//'");
    check_error("s ** 2", "offset 3: expected a number");
    check_error("min(s)", "offset 5: expected ',' in min(a, b), got ')'");
    check_error("max(s, t", "expected ')' closing max(, got end of text");
    check_error("min(s,", "offset 6: expected a number");
    check_error("1 // 0", "offset 2: division by zero");
    check_error("s % (t - t)", "offset 2: modulo by zero");
    check_error("9223372036854775808", "offset 0: integer literal out of range");
    check_error("-9223372036854775809", "integer literal out of range");
    check_error("99999999999999999999999", "integer literal out of range");
    check_error("'abc", "offset 0: unterminated quoted name");
    check_error("'a\\x'", "offset 2: expected \\' or \\\\");
    check_error("'a\\", "expected \\' or \\\\");
    check_error("s @ 2", "got '@'");
    check_error("s + \x01", "got byte 0x01");
    check_error("s + \xff", "got byte 0xff");
    check_error("#", "offset 0");
    hc_error err = {0};
    CHECK(hc_sym_parse(&A, NULL, &err) == NULL && err.status == HC_ERR_INVALID);
    CHECK(hc_sym_parse(&A, "s +", NULL) == NULL); /* no error channel: still fine */
    /* nesting limit */
    char deep[2000];
    for (int depth = 150; depth <= 260; depth += 110) {
        int k = 0;
        for (int i = 0; i < depth; i++) deep[k++] = '(';
        deep[k++] = 's';
        for (int i = 0; i < depth; i++) deep[k++] = ')';
        deep[k] = 0;
        hc_error e2 = {0};
        const hc_sym *x = hc_sym_parse(&A, deep, &e2);
        if (depth == 150) CHECK(x && EQ(x, s));
        else CHECK(!x && strstr(e2.msg, "nested deeper than 200"));
    }
    memset(deep, '-', 1000);
    deep[1000] = 's', deep[1001] = 0;
    check_error(deep, "nested deeper than 200");
    memset(deep, '(', 1999);
    deep[1999] = 0;
    check_error(deep, "nested deeper than 200");
    int k = 0;
    for (int i = 0; i < 150; i++) deep[k++] = '-';
    deep[k++] = 's', deep[k] = 0;
    CHECK(EQ(PARSE(deep), s)); /* 150 minus signs: an even count */
    for (k = 0; k < 120; k++) memcpy(deep + 8 * k, "min(s, (", 8);
    deep[8 * k] = 0;
    check_error(deep, "nested deeper than 200");
    /* long inputs */
    size_t n = 200000;
    char *lng = malloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) lng[2 * i] = 's', lng[2 * i + 1] = '+';
    lng[2 * n - 1] = 0;
    CHECK(EQ(PARSE(lng), hc_sym_mul_c(&A, s, (int64_t)n)));
    for (size_t i = 0; i < n; i++) lng[2 * i + 1] = '*';
    lng[2 * n - 1] = 0;
    const hc_sym *pw = PARSE(lng);
    CHECK(pw != NULL);
    int64_t out;
    CHECK(pw && ev4(pw, 1, 0, 0, 0, &out) && out == 1 && !ev4(pw, 2, 0, 0, 0, &out));
    free(lng);
    /* 5000 distinct symbols */
    hc_sb sb;
    hc_sb_init(&sb);
    for (int i = 0; i < 5000; i++) hc_sb_printf(&sb, "%sv%d", i ? " + " : "", i);
    const hc_sym *sum = PARSE(hc_sb_str(&sb));
    hc_sb_free(&sb);
    CHECK(sum != NULL);
    if (sum) {
        const char **names = malloc(5000 * sizeof *names);
        int64_t *vals = malloc(5000 * sizeof *vals);
        char (*store)[8] = malloc(5000 * sizeof *store);
        for (int i = 0; i < 5000; i++) {
            snprintf(store[i], 8, "v%d", i);
            names[i] = store[i], vals[i] = i;
        }
        hc_sym_binding bd = {5000, names, vals};
        CHECK(hc_sym_eval(sum, &bd, &out) && out == 4999 * 5000 / 2);
        int nv = 0;
        const char **vs = malloc(6000 * sizeof *vs);
        hc_sym_vars(sum, vs, &nv, 6000);
        CHECK_EQ_INT(nv, 5000);
        free(vs);
        free(names), free(vals), free(store);
    }
}

/* ---- random expressions -------------------------------------------------------------------- */
typedef enum { R_CONST, R_VAR, R_ADD, R_SUB, R_MUL, R_NEG, R_DIV, R_MOD, R_CDIV, R_MIN, R_MAX } rop;
typedef struct rnode {
    rop op;
    int64_t c;
    int var;
    struct rnode *l, *r;
} rnode;

static hc_rng R;
static int rnd(int n) { return (int)(hc_rng_next(&R) % (uint64_t)n); }

static rnode *gen(int depth) {
    rnode *n = HC_NEW(&A, rnode);
    int k = depth <= 0 ? rnd(2) : rnd(14);
    switch (k) {
    case 0: n->op = R_CONST, n->c = rnd(11) - 5; return n;
    case 1: n->op = R_VAR, n->var = rnd(3); return n;
    case 2: case 3: n->op = R_ADD; break;
    case 4: n->op = R_SUB; break;
    case 5: case 6: n->op = R_MUL; break;
    case 7: n->op = R_NEG; break;
    case 8: case 9: n->op = R_DIV; break;
    case 10: n->op = R_MOD; break;
    case 11: n->op = R_CDIV; break;
    case 12: n->op = R_MIN; break;
    default: n->op = R_MAX; break;
    }
    n->l = gen(depth - 1);
    if (n->op == R_NEG) return n;
    if ((n->op == R_DIV || n->op == R_MOD || n->op == R_CDIV) && rnd(2)) {
        rnode *d = HC_NEW(&A, rnode);
        d->op = R_CONST;
        do d->c = rnd(13) - 6;
        while (d->c == 0);
        if (rnd(3) == 0) { /* c * symbol */
            rnode *m = HC_NEW(&A, rnode), *v = HC_NEW(&A, rnode);
            v->op = R_VAR, v->var = rnd(3);
            m->op = R_MUL, m->l = d, m->r = v;
            d = m;
        }
        n->r = d;
    } else {
        n->r = gen(depth - 1);
    }
    return n;
}

static const char *const RV[3] = {"s", "t", "u"};

static const hc_sym *build(const rnode *n) {
    switch (n->op) {
    case R_CONST: return K(n->c);
    case R_VAR: return V(RV[n->var]);
    case R_NEG: return hc_sym_neg(&A, build(n->l));
    default: break;
    }
    const hc_sym *a = build(n->l), *b = build(n->r);
    switch (n->op) {
    case R_ADD: return ADD(a, b);
    case R_SUB: return SUB(a, b);
    case R_MUL: return MUL(a, b);
    case R_DIV: return FDIV(a, b);
    case R_MOD: return MOD(a, b);
    case R_CDIV: return CDIV(a, b);
    case R_MIN: return MIN(a, b);
    case R_MAX: return MAX(a, b);
    default: hc_unreachable();
    }
}

/* direct evaluation (values stay small: no overflow checks needed at these sizes) */
static bool reval(const rnode *n, const int64_t *v, int64_t *out) {
    int64_t a, b;
    switch (n->op) {
    case R_CONST: *out = n->c; return true;
    case R_VAR: *out = v[n->var]; return true;
    case R_NEG: if (!reval(n->l, v, &a)) return false; *out = -a; return true;
    default: break;
    }
    if (!reval(n->l, v, &a) || !reval(n->r, v, &b)) return false;
    if (a > (1 << 20) || a < -(1 << 20) || b > (1 << 20) || b < -(1 << 20)) return false;
    switch (n->op) {
    case R_ADD: *out = a + b; return true;
    case R_SUB: *out = a - b; return true;
    case R_MUL: *out = a * b; return true;
    case R_DIV: if (!b) return false; *out = py_div(a, b); return true;
    case R_MOD: if (!b) return false; *out = py_mod(a, b); return true;
    case R_CDIV: if (!b) return false; *out = -py_div(-a, b); return true;
    case R_MIN: *out = a < b ? a : b; return true;
    case R_MAX: *out = a > b ? a : b; return true;
    default: hc_unreachable();
    }
}

/* the tree in Python syntax, fully parenthesized (not canonical) */
static const hc_sym *build(const rnode *n);
static void rprint(hc_sb *sb, const rnode *n) {
    static const char *const ops[] = {"", "", " + ", " - ", "*", "", " // ", " % "};
    switch (n->op) {
    case R_CONST: hc_sb_printf(sb, "%" PRId64, n->c); return;
    case R_VAR: hc_sb_puts(sb, RV[n->var]); return;
    case R_NEG: hc_sb_puts(sb, "-("); rprint(sb, n->l); hc_sb_putc(sb, ')'); return;
    case R_CDIV: { /* (a + c - 1) // c for a constant c > 0 (as hc_sym_ceildiv), else -(-a // b) */
        int64_t c;
        if (hc_sym_is_const(build(n->r), &c) && c > 0) {
            hc_sb_puts(sb, "(("); rprint(sb, n->l); hc_sb_printf(sb, ") + %" PRId64 ") // (", c - 1);
            rprint(sb, n->r); hc_sb_putc(sb, ')');
            return;
        }
        hc_sb_puts(sb, "-(-("); rprint(sb, n->l); hc_sb_puts(sb, ") // ("); rprint(sb, n->r);
        hc_sb_puts(sb, "))");
        return;
    }
    case R_MIN: case R_MAX:
        hc_sb_puts(sb, n->op == R_MIN ? "min(" : "max(");
        rprint(sb, n->l); hc_sb_puts(sb, ", "); rprint(sb, n->r); hc_sb_putc(sb, ')');
        return;
    default:
        hc_sb_putc(sb, '('); rprint(sb, n->l); hc_sb_puts(sb, ") ");
        hc_sb_puts(sb, ops[n->op]); hc_sb_puts(sb, " ("); rprint(sb, n->r); hc_sb_putc(sb, ')');
        return;
    }
}

static void test_random(void) {
    R.s = 20240611;
    int built = 0, evals = 0, bad_eval = 0, bad_round = 0, bad_str = 0, bad_canon = 0,
        bad_cmp = 0, bad_subst = 0, bad_tree = 0, atoms = 0;
    const hc_sym *prev[8] = {0};
    for (int it = 0; it < 1500 && built < 1000; it++) {
        rnode *tree = gen(1 + rnd(4));
        const hc_sym *e = build(tree);
        if (!e) continue; /* a constant divisor 0 somewhere */
        built++;
        if (!canonical(e, true)) bad_canon++;
        const char *str = STR(e);
        if (strstr(str, "//") || strstr(str, "%") || strstr(str, "min") || strstr(str, "max")) atoms++;
        hc_error err = {0};
        const hc_sym *p = hc_sym_parse(&A, str, &err);
        if (!p || !EQ(p, e)) {
            if (bad_round++ < 5) fprintf(stderr, "round trip: %s -> %s (%s)\n", str, p ? STR(p) : "NULL", err.msg);
            continue;
        }
        if (strcmp(STR(p), str) != 0) bad_str++;
        /* the tree's own (parenthesized) text parses to the same canonical form */
        hc_sb sb;
        hc_sb_init(&sb);
        rprint(&sb, tree);
        const hc_sym *pt = hc_sym_parse(&A, hc_sb_str(&sb), &err);
        if (!pt || !EQ(pt, e)) {
            if (bad_tree++ < 5) fprintf(stderr, "tree text: %s -> %s vs %s\n", hc_sb_str(&sb), pt ? STR(pt) : err.msg, str);
        }
        hc_sb_free(&sb);
        if (!EQ(hc_sym_subst(&A, e, NULL), e)) bad_subst++;
        /* equal agrees with compare, compare is antisymmetric */
        for (int j = 0; j < 8; j++)
            if (prev[j]) {
                int c1 = hc_sym_compare(e, prev[j]), c2 = hc_sym_compare(prev[j], e);
                if ((c1 == 0) != EQ(e, prev[j]) || (c1 > 0) != (c2 < 0) || (c1 == 0) != (c2 == 0)) bad_cmp++;
                if ((c1 == 0) != (strcmp(STR(prev[j]), str) == 0)) bad_cmp++;
            }
        prev[built % 8] = e;
        for (int bi = 0; bi < 6; bi++) {
            int64_t v[3] = {1 + rnd(6), 1 + rnd(6), 1 + rnd(6)};
            hc_sym_binding bd = {3, RV, v};
            int64_t want, got, got_p, got_s;
            bool ok = hc_sym_eval(e, &bd, &got);
            bool okp = hc_sym_eval(p, &bd, &got_p);
            if (ok != okp || (ok && got != got_p)) bad_eval++;
            /* partial substitution then evaluation */
            hc_sym_binding b1 = {1, RV, v};
            const hc_sym *es = hc_sym_subst(&A, e, &b1);
            bool oks = hc_sym_eval(es, &bd, &got_s);
            /* simplification may drop a division by zero (0 // y is 0), never add one */
            if (ok && (!oks || got_s != got)) {
                if (bad_subst++ < 5) fprintf(stderr, "subst: %s -> %s\n", str, STR(es));
            }
            if (reval(tree, v, &want)) {
                evals++;
                if (!ok || got != want) {
                    if (bad_eval++ < 5)
                        fprintf(stderr, "eval %s at s=%" PRId64 " t=%" PRId64 " u=%" PRId64
                                        ": %s%" PRId64 ", want %" PRId64 "\n",
                                str, v[0], v[1], v[2], ok ? "" : "failed ", ok ? got : 0, want);
                }
            }
        }
    }
    CHECK_EQ_INT(built, 1000);
    CHECK(evals > 3000);
    CHECK(atoms > 200);
    CHECK_EQ_INT(bad_canon, 0);
    CHECK_EQ_INT(bad_round, 0);
    CHECK_EQ_INT(bad_str, 0);
    CHECK_EQ_INT(bad_tree, 0);
    CHECK_EQ_INT(bad_subst, 0);
    CHECK_EQ_INT(bad_cmp, 0);
    CHECK_EQ_INT(bad_eval, 0);
    printf("random: %d expressions, %d evaluations against the tree, %d with atoms\n", built, evals, atoms);
}

int main(void) {
    hc_arena_init(&A);
    test_canonical();
    test_print();
    test_fold();
    test_floordiv();
    test_mod();
    test_exact_div();
    test_minmax();
    test_eval();
    test_vars_mentions();
    test_subst();
    test_overflow();
    test_parse();
    test_random();
    hc_arena_free(&A);
    TEST_DONE();
}
