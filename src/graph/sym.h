/* sym.h — symbolic integer expressions: the dimensions of dynamic shapes (DESIGN.md,
 * "Dynamic shapes").
 *
 * A symbol is a named positive integer (an ONNX dim_param: `batch`, `seq`). A symbolic
 * expression is built from symbols and integer constants with + - *, floor division,
 * modulo, min and max. Expressions are kept in a canonical form, so that two
 * expressions that are equal as polynomials are equal structurally (hc_sym_equal):
 *
 *   a polynomial  c0 + c1*m1 + c2*m2 + ...   (integer coefficients, monomials sorted)
 *   a monomial    a product of atoms, sorted (a repeated atom is a power)
 *   an atom       a symbol, or floor(p / q), p mod q, min(p, q), max(p, q) of canonical
 *                 polynomials that did not simplify
 *
 * Every expression handed out is a polynomial (a constant has no terms). Division and
 * modulo follow Python: floor division, a remainder with the divisor's sign. Symbols are
 * assumed >= 1 by the simplifier where it says so (min/max of a symbol and 0 or 1; more
 * generally min/max where x - y is a polynomial in symbols whose coefficients have one
 * sign and whose value at all symbols 1 has it too), and a monomial divisor is assumed
 * nonzero (floor(m*q / (c*m)) is floor(q / c)).
 * Simplification is exact, never approximate: floor((4*s + 8) / 4) is s + 2,
 * floor(6*b*s / (2*s)) is 3*b, floor((2*s + 1) / 2) is s, floor((s + 1) / 2) stays an
 * atom.
 *
 * Constructors given a NULL argument return NULL. A coefficient that would overflow int64,
 * or an expansion beyond a size limit (sym.c), is not folded: the operands are kept
 * inside a floor(p / 1) atom, which is exact (eval fails where a value overflows) but not
 * canonical. A result may share parts of its arguments; hc_sym_subst rebuilds all of it
 * in its arena. Simplification keeps the value wherever the original is defined; it may
 * drop a division whose divisor could be zero (0 // y is 0, (s*x) // s is x).
 *
 * Expressions live in an arena and are immutable; symbols are compared by name (strcmp),
 * so expressions of different arenas compare and combine. */
#ifndef HC_SYM_H
#define HC_SYM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"

typedef enum hc_sym_kind {
    HC_SYM_POLY,     /* c0 + sum of terms */
    HC_SYM_VAR,      /* atom: a symbol */
    HC_SYM_FLOORDIV, /* atom: floor(a / b) */
    HC_SYM_MOD,      /* atom: a mod b */
    HC_SYM_MIN,      /* atom: min(a, b) */
    HC_SYM_MAX,      /* atom: max(a, b) */
} hc_sym_kind;

typedef struct hc_sym hc_sym;

typedef struct hc_sym_term {
    int64_t coef;          /* != 0 */
    int nf;                /* >= 1 factors, sorted by hc_sym_compare */
    const hc_sym *const *f; /* atoms (never POLY) */
} hc_sym_term;

struct hc_sym {
    hc_sym_kind kind;
    /* POLY */
    int64_t c0;
    int nterms; /* sorted: by monomial (hc_sym_compare of the factor lists) */
    const hc_sym_term *terms;
    /* VAR */
    const char *name;
    /* FLOORDIV, MOD, MIN, MAX: canonical polynomials */
    const hc_sym *a, *b;
};

/* ---- construction (results are canonical polynomials, in arena ar) ----------------- */
const hc_sym *hc_sym_const(hc_arena *ar, int64_t c);
const hc_sym *hc_sym_var(hc_arena *ar, const char *name); /* name is copied */
const hc_sym *hc_sym_add(hc_arena *ar, const hc_sym *x, const hc_sym *y);
const hc_sym *hc_sym_sub(hc_arena *ar, const hc_sym *x, const hc_sym *y);
const hc_sym *hc_sym_mul(hc_arena *ar, const hc_sym *x, const hc_sym *y);
const hc_sym *hc_sym_neg(hc_arena *ar, const hc_sym *x);
const hc_sym *hc_sym_add_c(hc_arena *ar, const hc_sym *x, int64_t c);
const hc_sym *hc_sym_mul_c(hc_arena *ar, const hc_sym *x, int64_t c);
/* floor(x / y), x mod y (Python semantics). NULL when y is the constant 0. */
const hc_sym *hc_sym_floordiv(hc_arena *ar, const hc_sym *x, const hc_sym *y);
const hc_sym *hc_sym_mod(hc_arena *ar, const hc_sym *x, const hc_sym *y);
/* ceil(x / y) = -floor(-x / y) (built as floor((x + y - 1) / y) for a constant y > 0).
 * NULL when y is the constant 0. */
const hc_sym *hc_sym_ceildiv(hc_arena *ar, const hc_sym *x, const hc_sym *y);
const hc_sym *hc_sym_min(hc_arena *ar, const hc_sym *x, const hc_sym *y);
const hc_sym *hc_sym_max(hc_arena *ar, const hc_sym *x, const hc_sym *y);
/* x / y when y divides x exactly as polynomials (x = y * q with integer coefficients,
 * y a single term or a constant): q; else NULL. floor(x / y) would keep an atom. */
const hc_sym *hc_sym_exact_div(hc_arena *ar, const hc_sym *x, const hc_sym *y);

/* ---- inspection ------------------------------------------------------------------ */
/* true and *c when x is a constant */
bool hc_sym_is_const(const hc_sym *x, int64_t *c);
/* x is exactly one symbol (coefficient 1, no constant): its name, else NULL */
const char *hc_sym_as_var(const hc_sym *x);
bool hc_sym_equal(const hc_sym *x, const hc_sym *y);
/* A total order on canonical expressions (<0, 0, >0); 0 exactly when equal. */
int hc_sym_compare(const hc_sym *x, const hc_sym *y);
/* Whether symbol `name` occurs in x. */
bool hc_sym_mentions(const hc_sym *x, const char *name);
/* The distinct symbols of x, appended to names[*n...] (up to cap; sorted by name, no
 * duplicates across calls). */
void hc_sym_vars(const hc_sym *x, const char **names, int *n, int cap);

/* ---- evaluation ------------------------------------------------------------------ */
/* A binding of symbols to values. */
typedef struct hc_sym_binding {
    int n;
    const char *const *names;
    const int64_t *values;
} hc_sym_binding;
/* The value of x under b. false (and *out untouched) when a symbol of x is not bound,
 * a division or modulo is by zero, or an intermediate value overflows int64. */
bool hc_sym_eval(const hc_sym *x, const hc_sym_binding *b, int64_t *out);
/* x with the bound symbols replaced by their values (the others stay symbols). */
const hc_sym *hc_sym_subst(hc_arena *ar, const hc_sym *x, const hc_sym_binding *b);

/* ---- text ------------------------------------------------------------------------ */
/* Python-like: "batch*seq", "2*seq + 1", "seq // 2 + 1", "seq % 4", "min(seq, 1024)",
 * "-seq + 7"; a constant prints as its digits. hc_sym_parse reads this syntax back
 * (spaces anywhere, parentheses, + - * // % min max, integers); a symbol is
 * [A-Za-z_][A-Za-z0-9_.]* or, for any other name (ONNX allows any string), single-quoted
 * with \' and \\ escaped, as hc_sym_print writes it. NULL and a message in err on a
 * malformed text. */
void hc_sym_print(hc_sb *sb, const hc_sym *x);
/* A symbol's name as hc_sym_print writes it (quoted when it is not plain). */
void hc_sym_print_name(hc_sb *sb, const char *name);
const char *hc_sym_str(hc_arena *ar, const hc_sym *x);
const hc_sym *hc_sym_parse(hc_arena *ar, const char *text, hc_error *err);

#endif
