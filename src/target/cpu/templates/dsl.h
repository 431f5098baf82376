/* dsl.h — the shorthand the CPU templates build their IR with. Each template keeps its
 * state in its own context struct `g` with the arena in g->a and the builder in g->b;
 * the macros below take that context (the operators use the `g` in scope):
 *
 *   I(g, 3)            an index constant           R(g, v)        a reference to v
 *   ADD SUB MUL DIV    MIN MAX LT (x, y)           index arithmetic and comparisons
 *   let(g, "i", e)     e bound to a fresh index variable for the rest of the block
 *   vcall(g, p, t, n, x, y, z)   primitive p of result type t on the first n of x, y, z
 *   vstore(g, p, v), vstore_n(g, p, v, n)   a (masked: first n lanes) vector store
 *
 * Each macro is one call of a static inline function below. */
#ifndef HC_TARGET_CPU_TEMPLATES_DSL_H
#define HC_TARGET_CPU_TEMPLATES_DSL_H

#include "ir/ir.h"

static inline hc_expr *hc_dsl_let(hc_arena *a, hc_builder *b, const char *name, const hc_type *t,
                                  hc_expr *value) {
    return hc_ref(a, hc_b_declare(b, name, t, value));
}
static inline void hc_dsl_vstore(hc_arena *a, hc_builder *b, hc_expr *ptr, hc_expr *v) {
    hc_b_eval(b, hc_call3(a, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2, ptr, v, 0));
}
static inline void hc_dsl_vstore_n(hc_arena *a, hc_builder *b, hc_expr *ptr, hc_expr *v,
                                   hc_expr *n) {
    hc_b_eval(b, hc_call3(a, HC_PRIM_VSTORE_MASK, hc_type_scalar(HC_VOID), 3, ptr, v, n));
}

#define I(g, v) hc_int((g)->a, (v))
#define R(g, v) hc_ref((g)->a, (v))
#define ADD(x, y) hc_add(g->a, (x), (y))
#define SUB(x, y) hc_sub(g->a, (x), (y))
#define MUL(x, y) hc_mul(g->a, (x), (y))
#define DIV(x, y) hc_div(g->a, (x), (y))
#define MIN(x, y) hc_min(g->a, (x), (y))
#define MAX(x, y) hc_max(g->a, (x), (y))
#define LT(x, y) hc_lt(g->a, (x), (y))
#define let(g, name, value)                                                                        \
    hc_dsl_let((g)->a, (g)->b, (name), hc_type_scalar(HC_INDEX_TYPE), (value))
#define vcall(g, p, t, n, x, y, z) hc_call3((g)->a, (p), (t), (n), (x), (y), (z))
#define vstore(g, ptr, v) hc_dsl_vstore((g)->a, (g)->b, (ptr), (v))
#define vstore_n(g, ptr, v, n) hc_dsl_vstore_n((g)->a, (g)->b, (ptr), (v), (n))

#endif
