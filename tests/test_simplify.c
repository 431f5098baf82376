/* test_simplify.c — each simplifier rule, its negative cases, and a randomized check that
 * simplification preserves the value of integer expressions inside their bounds. */
#include <stdlib.h>

#include "ir/mapping.h"
#include "test.h"

static hc_arena A;

static char *show(const hc_expr *e) {
    static char buf[4][512];
    static int k;
    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_expr(&sb, e);
    char *out = buf[k++ % 4];
    snprintf(out, 512, "%s", hc_sb_str(&sb));
    hc_sb_free(&sb);
    return out;
}

static char *show_stmt(const hc_stmt *s) {
    static char buf[2048];
    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_stmt(&sb, s, 0);
    snprintf(buf, sizeof buf, "%s", hc_sb_str(&sb));
    hc_sb_free(&sb);
    return buf;
}

#define SIMP(e) show(hc_simplify_expr(&A, (e)))
#define I(v) hc_int(&A, (v))
#define V(x) hc_ref(&A, (x))

static hc_expr *typed(hc_dtype d, int64_t v) { return hc_const(&A, d, (hc_value){.i = v}); }

/* ---- folding ------------------------------------------------------------------------ */
static void test_fold_int(void) {
    CHECK_STR(SIMP(hc_mul(&A, hc_add(&A, I(3), I(4)), I(2))), "14");
    CHECK_STR(SIMP(hc_div(&A, I(7), I(2))), "3");
    CHECK_STR(SIMP(hc_div(&A, I(-7), I(2))), "-3"); /* C truncates toward zero */
    CHECK_STR(SIMP(hc_mod(&A, I(-7), I(2))), "-1");
    CHECK_STR(SIMP(hc_min(&A, I(-7), I(2))), "-7");
    CHECK_STR(SIMP(hc_binary(&A, HC_OP_BITXOR, I(6), I(3))), "5");
    CHECK_STR(SIMP(hc_binary(&A, HC_OP_SHL, I(1), I(3))), "8");
    CHECK_STR(SIMP(hc_binary(&A, HC_OP_SHR, I(17), I(2))), "4");
    CHECK_STR(SIMP(hc_lt(&A, I(3), I(4))), "true");
    CHECK_STR(SIMP(hc_binary(&A, HC_OP_NE, I(3), I(3))), "false");
    CHECK_STR(SIMP(hc_unary(&A, HC_OP_NEG, I(5))), "-5");
    CHECK_STR(SIMP(hc_unary(&A, HC_OP_BITNOT, I(5))), "-6");
    CHECK_STR(SIMP(hc_unary(&A, HC_OP_NOT, hc_bool(&A, true))), "false");
    CHECK_STR(SIMP(hc_and(&A, hc_bool(&A, true), hc_lt(&A, I(1), I(0)))), "false");
    /* unsigned arithmetic wraps in its own width */
    CHECK_STR(SIMP(hc_add(&A, typed(HC_U8, 200), typed(HC_U8, 100))), "u8(44)");
    CHECK_STR(SIMP(hc_sub(&A, typed(HC_U32, 1), typed(HC_U32, 2))), "u32(4294967295)");
    /* i32 + i64 computes in i64 */
    CHECK_STR(SIMP(hc_add(&A, hc_i32(&A, 5), I(6))), "11");
}

static void test_fold_int_negative(void) {
    /* division by zero, signed overflow and undefined shifts stay for run time */
    CHECK_STR(SIMP(hc_div(&A, I(1), I(0))), "(1 / 0)");
    CHECK_STR(SIMP(hc_mod(&A, I(1), I(0))), "(1 % 0)");
    CHECK_STR(SIMP(hc_add(&A, I(INT64_MAX), I(1))), "(9223372036854775807 + 1)");
    CHECK_STR(SIMP(hc_mul(&A, hc_i32(&A, 65536), hc_i32(&A, 65536))),
              "(i32(65536) * i32(65536))");
    CHECK_STR(SIMP(hc_div(&A, I(INT64_MIN), I(-1))), "(-9223372036854775808 / -1)");
    CHECK_STR(SIMP(hc_binary(&A, HC_OP_SHL, I(1), I(64))), "(1 << 64)");
    CHECK_STR(SIMP(hc_binary(&A, HC_OP_SHR, I(-8), I(1))), "(-8 >> 1)");
    CHECK_STR(SIMP(hc_unary(&A, HC_OP_NEG, I(INT64_MIN))), "(--9223372036854775808)");
}

static void test_fold_float_and_cast(void) {
    CHECK_STR(SIMP(hc_mul(&A, hc_f32(&A, 1.5), hc_f32(&A, 2))), "3.0f");
    /* f32 folding rounds like f32 arithmetic does */
    volatile float x = 0.1f, y = 0.2f;
    hc_expr *sum = hc_simplify_expr(&A, hc_add(&A, hc_f32(&A, 0.1), hc_f32(&A, 0.2)));
    CHECK(sum->kind == HC_E_CONST && (float)sum->u.c.f == (float)(x + y));
    CHECK_STR(SIMP(hc_add(&A, hc_f64(&A, 0.5), hc_f64(&A, 0.25))), "0.75");
    /* an f32 constant holding an unrounded double still computes as its f32 value */
    hc_expr *raw = hc_const(&A, HC_F32, (hc_value){.f = 0.1});
    hc_expr *prod = hc_simplify_expr(&A, hc_mul(&A, raw, hc_f32(&A, 3)));
    volatile float tenth = 0.1f, three = 3.0f;
    CHECK(prod->kind == HC_E_CONST && prod->u.c.f == (double)(float)(tenth * three));
    hc_expr *widened = hc_simplify_expr(&A, hc_cast(&A, hc_type_scalar(HC_F64), raw));
    CHECK(widened->kind == HC_E_CONST && widened->u.c.f == (double)tenth);
    CHECK_STR(SIMP(hc_div(&A, hc_f32(&A, 1), hc_f32(&A, 0))), "(1.0f / 0.0f)");
    CHECK_STR(SIMP(hc_lt(&A, hc_f64(&A, 0.5), hc_f64(&A, 0.25))), "false");
    hc_expr *h = hc_const(&A, HC_F16, (hc_value){.f = 1});
    CHECK_STR(SIMP(hc_add(&A, h, h)), "(f16(1.0) + f16(1.0))"); /* f16 rounding: left alone */
    CHECK_STR(SIMP(hc_cast(&A, hc_type_scalar(HC_I32), hc_f64(&A, 3.7))), "i32(3)");
    CHECK_STR(SIMP(hc_cast(&A, hc_type_scalar(HC_I32), hc_f64(&A, -3.7))), "i32(-3)");
    CHECK_STR(SIMP(hc_cast(&A, hc_type_scalar(HC_F32), I(3))), "3.0f");
    CHECK_STR(SIMP(hc_cast(&A, hc_type_scalar(HC_U8), I(300))), "u8(44)");
    CHECK_STR(SIMP(hc_cast(&A, hc_type_scalar(HC_BOOL), I(7))), "true");
    /* out of range: implementation-defined or undefined in C */
    CHECK_STR(SIMP(hc_cast(&A, hc_type_scalar(HC_I8), I(300))), "cast<i8>(300)");
    CHECK_STR(SIMP(hc_cast(&A, hc_type_scalar(HC_I32), hc_f64(&A, 1e30))), "cast<i32>(1e+30)");
}

/* ---- identities --------------------------------------------------------------------- */
static void test_identities(void) {
    hc_var *x = hc_var_new(&A, "x", hc_type_scalar(HC_I64));
    hc_var *b = hc_var_new(&A, "b", hc_type_scalar(HC_BOOL));
    hc_var *f = hc_var_new(&A, "f", hc_type_scalar(HC_F32));
    CHECK_STR(SIMP(hc_add(&A, V(x), I(0))), "x");
    CHECK_STR(SIMP(hc_add(&A, I(0), V(x))), "x");
    CHECK_STR(SIMP(hc_mul(&A, I(1), V(x))), "x");
    CHECK_STR(SIMP(hc_mul(&A, V(x), I(0))), "0");
    CHECK_STR(SIMP(hc_sub(&A, V(x), V(x))), "0");
    CHECK_STR(SIMP(hc_div(&A, V(x), I(1))), "x");
    CHECK_STR(SIMP(hc_mod(&A, V(x), I(1))), "0");
    CHECK_STR(SIMP(hc_min(&A, V(x), V(x))), "x");
    CHECK_STR(SIMP(hc_max(&A, V(x), V(x))), "x");
    CHECK_STR(SIMP(hc_select(&A, hc_bool(&A, true), V(x), I(3))), "x");
    CHECK_STR(SIMP(hc_select(&A, hc_bool(&A, false), V(x), I(3))), "3");
    CHECK_STR(SIMP(hc_select(&A, V(b), V(x), V(x))), "x");
    CHECK_STR(SIMP(hc_and(&A, V(b), hc_bool(&A, true))), "b");
    CHECK_STR(SIMP(hc_and(&A, hc_bool(&A, false), V(b))), "false");
    CHECK_STR(SIMP(hc_binary(&A, HC_OP_OR, V(b), hc_bool(&A, true))), "true");
    CHECK_STR(SIMP(hc_binary(&A, HC_OP_OR, hc_bool(&A, false), V(b))), "b");
    CHECK_STR(SIMP(hc_unary(&A, HC_OP_NOT, hc_unary(&A, HC_OP_NOT, V(b)))), "b");
    /* an i32 operand keeps the i64 type of the sum it replaces */
    hc_var *k = hc_var_new(&A, "k", hc_type_scalar(HC_I32));
    CHECK_STR(SIMP(hc_add(&A, V(k), I(0))), "cast<i64>(k)");
    /* floats: only exact identities */
    CHECK_STR(SIMP(hc_mul(&A, V(f), hc_f32(&A, 0))), "(f * 0.0f)");
    CHECK_STR(SIMP(hc_add(&A, V(f), hc_f32(&A, 0))), "(f + 0.0f)");
    CHECK_STR(SIMP(hc_sub(&A, V(f), V(f))), "(f - f)");
    CHECK_STR(SIMP(hc_mul(&A, V(f), hc_f32(&A, 1))), "f");
    CHECK_STR(SIMP(hc_sub(&A, V(f), hc_f32(&A, 0))), "f");
}

static void test_side_effects_kept(void) {
    hc_var *p = hc_var_new(&A, "p", hc_type_pointer(&A, hc_type_scalar(HC_F32)));
    const hc_type *vt = hc_type_vector(&A, HC_F32, 8);
    hc_expr *bc = hc_call(&A, HC_PRIM_VBROADCAST, vt, 1, (hc_expr *[]){hc_f32(&A, 0)});
    hc_expr *st = hc_call(&A, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2,
                          (hc_expr *[]){V(p), bc});
    hc_expr *as_int = hc_cast(&A, hc_type_scalar(HC_I64), st);
    hc_expr *e = hc_simplify_expr(&A, hc_mul(&A, as_int, I(0)));
    CHECK(e->kind == HC_E_BINARY);
    e = hc_simplify_expr(&A, hc_sub(&A, as_int, as_int));
    CHECK(e->kind == HC_E_BINARY);
    hc_stmt *s = hc_simplify_stmt(&A, hc_seq(&A, 2, (hc_stmt *[]){hc_eval(&A, st),
                                                                    hc_seq(&A, 0, NULL)}));
    CHECK(s->kind == HC_S_EVAL && s->u.eval.e == st);
}

static void test_reassociate(void) {
    hc_var *x = hc_var_new(&A, "x", hc_type_scalar(HC_I64));
    hc_var *y = hc_var_new(&A, "y", hc_type_scalar(HC_I64));
    CHECK_STR(SIMP(hc_add(&A, hc_add(&A, V(x), I(3)), I(4))), "(x + 7)");
    CHECK_STR(SIMP(hc_mul(&A, hc_mul(&A, V(x), I(2)), I(3))), "(x * 6)");
    CHECK_STR(SIMP(hc_sub(&A, hc_add(&A, V(x), I(3)), I(5))), "(x - 2)");
    CHECK_STR(SIMP(hc_add(&A, hc_sub(&A, V(x), I(3)), I(3))), "x");
    CHECK_STR(SIMP(hc_add(&A, I(4), hc_add(&A, V(x), I(3)))), "(x + 7)");
    CHECK_STR(SIMP(hc_add(&A, hc_add(&A, V(x), I(1)), hc_add(&A, V(y), I(2)))), "((x + y) + 3)");
    /* reassociating would overflow the constant: left alone */
    CHECK_STR(SIMP(hc_add(&A, hc_add(&A, V(x), I(INT64_MAX)), I(1))),
              "((x + 9223372036854775807) + 1)");
}

/* ---- bounds ------------------------------------------------------------------------- */
/* Simplifies `e` as the value stored inside `for v_k in range(ext_k)` loops and returns
 * the simplified value. */
static hc_var *loop_vars[4];
static hc_var *out_buf;

static const hc_expr *in_loops(int n, const int64_t *ext, hc_expr *e) {
    hc_stmt *s = hc_store(&A, out_buf, 1, (hc_expr *[]){I(0)}, e);
    for (int k = n - 1; k >= 0; k--) s = hc_for(&A, loop_vars[k], I(ext[k]), hc_serial(), s);
    s = hc_simplify_stmt(&A, s);
    while (s->kind != HC_S_STORE) {
        if (s->kind == HC_S_FOR) s = s->u.for_.body;
        else if (s->kind == HC_S_LET) s = s->u.let.body;
        else if (s->kind == HC_S_SEQ && s->u.seq.n == 1) s = s->u.seq.stmts[0];
        else return NULL;
    }
    return s->u.store.value;
}

static void test_divmod_bounds(void) {
    const int64_t ext[2] = {16, 4};
    hc_expr *i = V(loop_vars[0]), *j = V(loop_vars[1]);
    hc_var *n = hc_var_new(&A, "n", hc_type_scalar(HC_I64));
    hc_expr *ij = hc_add(&A, hc_mul(&A, i, I(4)), j);
    CHECK_STR(show(in_loops(2, ext, hc_div(&A, ij, I(4)))), "i");
    CHECK_STR(show(in_loops(2, ext, hc_mod(&A, ij, I(4)))), "j");
    CHECK_STR(show(in_loops(2, ext, hc_div(&A, j, I(4)))), "0");
    CHECK_STR(show(in_loops(2, ext, hc_mod(&A, j, I(4)))), "j");
    CHECK_STR(show(in_loops(2, ext, hc_div(&A, i, I(4)))), "(i / 4)");
    CHECK_STR(show(in_loops(2, ext, hc_mod(&A, i, I(4)))), "(i % 4)");
    /* a multiple of the divisor's multiple: (i*8 + j) / 4 = i*2 + j/4 = i*2 */
    hc_expr *i8j = hc_add(&A, hc_mul(&A, i, I(8)), j);
    CHECK_STR(show(in_loops(2, ext, hc_div(&A, i8j, I(4)))), "(i * 2)");
    CHECK_STR(show(in_loops(2, ext, hc_mod(&A, i8j, I(4)))), "j");
    /* the remainder is not below the divisor: j/2 stays */
    CHECK_STR(show(in_loops(2, ext, hc_div(&A, hc_add(&A, hc_mul(&A, i, I(2)), j), I(2)))),
              "(i + (j / 2))");
    /* a constant term splits too: (i*4 + 5) / 4 = i + 1 */
    CHECK_STR(show(in_loops(2, ext, hc_div(&A, hc_add(&A, hc_mul(&A, i, I(4)), I(5)), I(4)))),
              "(i + 1)");
    /* negative cases: x may be negative, so truncation is not floor */
    CHECK_STR(SIMP(hc_div(&A, hc_add(&A, hc_mul(&A, V(n), I(4)), I(1)), I(4))),
              "(((n * 4) + 1) / 4)");
    CHECK_STR(SIMP(hc_div(&A, V(n), I(4))), "(n / 4)");
    CHECK_STR(show(in_loops(2, ext, hc_div(&A, hc_sub(&A, i, I(8)), I(4)))), "((i - 8) / 4)");
    CHECK_STR(show(in_loops(2, ext, hc_div(&A, hc_add(&A, hc_mul(&A, i, I(4)), hc_sub(&A, j, I(2))),
                                          I(4)))),
              "((((i * 4) + j) - 2) / 4)");
    /* but (j - 2) in [-2, 1] is inside (-4, 4), so C's % leaves it as is */
    CHECK_STR(show(in_loops(2, ext, hc_mod(&A, hc_sub(&A, j, I(2)), I(4)))), "(j - 2)");
    /* (x / y) * y + x % y = x for any y (a row unflattened over a symbolic dim and
     * flattened again), in either order; not when the operands differ */
    hc_var *s = hc_var_new(&A, "s", hc_type_scalar(HC_I64));
    hc_expr *x = hc_add(&A, V(n), I(3));
    hc_expr *q = hc_mul(&A, hc_div(&A, x, V(s)), V(s)), *r = hc_mod(&A, x, V(s));
    CHECK_STR(SIMP(hc_add(&A, q, r)), "(n + 3)");
    CHECK_STR(SIMP(hc_add(&A, r, hc_mul(&A, V(s), hc_div(&A, x, V(s))))), "(n + 3)");
    CHECK_STR(SIMP(hc_add(&A, hc_mul(&A, hc_div(&A, x, V(s)), V(n)), r)),
              "((((n + 3) / s) * n) + ((n + 3) % s))");
    CHECK_STR(SIMP(hc_add(&A, q, hc_mod(&A, V(n), V(s)))),
              "((((n + 3) / s) * s) + (n % s))");
}

static void test_compare_minmax(void) {
    const int64_t ext[2] = {16, 4};
    hc_expr *i = V(loop_vars[0]), *j = V(loop_vars[1]);
    hc_var *n = hc_var_new(&A, "n", hc_type_scalar(HC_I64));
    CHECK_STR(show(in_loops(2, ext, hc_cast(&A, hc_type_scalar(HC_I64), hc_lt(&A, i, I(16))))),
              "1");
    hc_expr *sel = hc_select(&A, hc_lt(&A, i, I(15)), I(1), I(2));
    CHECK_STR(show(in_loops(2, ext, sel)), "select((i < 15), 1, 2)");
    sel = hc_select(&A, hc_binary(&A, HC_OP_GE, i, I(0)), j, I(2));
    CHECK_STR(show(in_loops(2, ext, sel)), "j");
    sel = hc_select(&A, hc_eq(&A, j, I(4)), I(1), i);
    CHECK_STR(show(in_loops(2, ext, sel)), "i");
    CHECK_STR(show(in_loops(2, ext, hc_min(&A, j, I(8)))), "j");
    CHECK_STR(show(in_loops(2, ext, hc_max(&A, i, I(0)))), "i");
    CHECK_STR(show(in_loops(2, ext, hc_min(&A, i, I(8)))), "min(i, 8)");
    CHECK_STR(show(in_loops(2, ext, hc_min(&A, j, V(n)))), "min(j, n)");
}

static void test_let_and_builtins(void) {
    hc_var *t = hc_var_new(&A, "t", hc_type_scalar(HC_I64));
    hc_var *j = loop_vars[1];
    hc_expr *use = hc_div(&A, V(t), I(8));
    hc_stmt *st = hc_store(&A, out_buf, 1, (hc_expr *[]){I(0)}, use);
    hc_stmt *s = hc_for(&A, j, I(4), hc_serial(),
                        hc_let(&A, t, hc_add(&A, V(j), I(1)), st));
    s = hc_simplify_stmt(&A, s);
    CHECK_STR(show_stmt(s), "for j in range(4):\n  let t: i64 = (j + 1):\n    out[0] = 0\n");

    hc_var *tx = hc_var_builtin(&A, HC_BUILTIN_THREAD_IDX_X);
    hc_var *lane = hc_var_builtin(&A, HC_BUILTIN_LANE_ID);
    CHECK_STR(SIMP(hc_binary(&A, HC_OP_GE, V(tx), I(0))), "true");
    CHECK_STR(SIMP(hc_mod(&A, V(tx), I(32))), "(threadIdx.x % 32)");
    CHECK_STR(SIMP(hc_div(&A, hc_add(&A, hc_mul(&A, V(tx), I(32)), V(lane)), I(32))),
              "threadIdx.x");
}

static void test_mapping_and_reduce_bounds(void) {
    /* spatial(4,8).repeat(2,2): task shape (8, 16) */
    const hc_mapping *m = hc_map_compose(&A, hc_map_spatial2(&A, 4, 8), hc_map_repeat2(&A, 2, 2));
    hc_var *rc[2] = {hc_var_new(&A, "r", hc_type_scalar(HC_I64)),
                     hc_var_new(&A, "c", hc_type_scalar(HC_I64))};
    hc_expr *e = hc_add(&A, hc_div(&A, V(rc[0]), I(8)), hc_mod(&A, V(rc[1]), I(16)));
    hc_expr *keep = hc_div(&A, V(rc[1]), I(8));
    hc_stmt *body = hc_seq(&A, 2, (hc_stmt *[]){hc_store(&A, out_buf, 1, (hc_expr *[]){e}, I(0)),
                                                hc_store(&A, out_buf, 1, (hc_expr *[]){keep},
                                                         I(0))});
    hc_stmt *s = hc_for_mapping(&A, m, I(0), 2, rc, body);
    s = hc_simplify_stmt(&A, s);
    CHECK_STR(show_stmt(s), "for (r, c) in spatial(4,8).repeat(2,2) on 0:\n"
                            "  out[c] = 0\n  out[(c / 8)] = 0\n");
    /* a reduce axis is bounded by its extent inside the reduction */
    hc_var *k = hc_var_new(&A, "k", hc_type_scalar(HC_I64));
    hc_expr *red = hc_reduce(&A, HC_REDUCE_SUM, 1, &k, (int64_t[]){4},
                             hc_add(&A, hc_div(&A, V(k), I(4)), V(k)));
    CHECK_STR(SIMP(red), "sum(k for k in range(4))");
}

/* ---- statements --------------------------------------------------------------------- */
static void test_statements(void) {
    hc_var *x = hc_var_new(&A, "x", hc_type_scalar(HC_I64));
    hc_var *i = hc_var_new(&A, "i", hc_type_scalar(HC_I64));
    hc_stmt *s1 = hc_store(&A, out_buf, 1, (hc_expr *[]){I(1)}, V(x));
    hc_stmt *s2 = hc_store(&A, out_buf, 1, (hc_expr *[]){I(2)}, V(x));
    hc_stmt *si = hc_store(&A, out_buf, 1, (hc_expr *[]){hc_add(&A, V(i), I(3))}, V(i));
    hc_expr *t = hc_lt(&A, I(1), I(2));
    CHECK_STR(show_stmt(hc_simplify_stmt(&A, hc_if(&A, t, s1, s2))), "out[1] = x\n");
    CHECK_STR(show_stmt(hc_simplify_stmt(&A, hc_if(&A, hc_unary(&A, HC_OP_NOT, t), s1, s2))),
              "out[2] = x\n");
    CHECK_STR(show_stmt(hc_simplify_stmt(&A, hc_if(&A, hc_unary(&A, HC_OP_NOT, t), s1, NULL))),
              "pass\n");
    CHECK_STR(show_stmt(hc_simplify_stmt(&A, hc_for(&A, i, I(0), hc_serial(), s1))), "pass\n");
    CHECK_STR(show_stmt(hc_simplify_stmt(&A, hc_for(&A, i, hc_sub(&A, I(3), I(2)),
                                                    hc_serial(), si))),
              "out[3] = 0\n");
    hc_stmt *inner = hc_seq(&A, 3, (hc_stmt *[]){s1, hc_seq(&A, 0, NULL), s2});
    hc_stmt *outer = hc_seq(&A, 3, (hc_stmt *[]){hc_seq(&A, 0, NULL), inner, s1});
    hc_stmt *r = hc_simplify_stmt(&A, outer);
    CHECK(r->kind == HC_S_SEQ && r->u.seq.n == 3);
    CHECK_STR(show_stmt(r), "out[1] = x\nout[2] = x\nout[1] = x\n");
    /* an unchanged tree is returned as is (subtrees shared) */
    CHECK(hc_simplify_stmt(&A, s1) == s1);
}

static void test_func(void) {
    hc_var *n = hc_var_new(&A, "n", hc_type_scalar(HC_I64));
    hc_stmt *body = hc_store(&A, out_buf, 1, (hc_expr *[]){hc_add(&A, V(n), I(0))}, V(n));
    hc_func *f = hc_func_new(&A, "f", HC_FN_CUDA_KERNEL, 2, (hc_var *[]){out_buf, n}, body);
    f->grid_dim[0] = hc_mul(&A, I(4), I(8));
    hc_func *g = hc_simplify_func(&A, f);
    CHECK(g != f && g->nparams == 2 && g->kind == HC_FN_CUDA_KERNEL);
    CHECK_STR(show(g->grid_dim[0]), "32");
    CHECK_STR(show_stmt(g->body), "out[n] = n\n");
    CHECK_STR(show(f->grid_dim[0]), "(4 * 8)"); /* the input is not modified */
}

/* ---- randomized --------------------------------------------------------------------- */
#define NV 3
typedef struct env {
    hc_var *vars[NV];
    int64_t val[NV];
} env;

/* Evaluates an i64/bool expression as C would; false on division by zero. */
static bool eval(const env *E, const hc_expr *e, int64_t *out) {
    int64_t a, b, c;
    switch (e->kind) {
    case HC_E_CONST: *out = e->u.c.i; return true;
    case HC_E_VAR:
        for (int k = 0; k < NV; k++)
            if (E->vars[k] == e->u.var) return *out = E->val[k], true;
        return false;
    case HC_E_CAST: return eval(E, e->u.cast.a, out);
    case HC_E_UNARY:
        if (!eval(E, e->u.un.a, &a)) return false;
        *out = e->u.un.op == HC_OP_NEG ? -a : e->u.un.op == HC_OP_NOT ? !a : ~a;
        return true;
    case HC_E_SELECT:
        if (!eval(E, e->u.sel.cond, &c) || !eval(E, e->u.sel.t, &a) ||
            !eval(E, e->u.sel.f, &b))
            return false;
        *out = c ? a : b;
        return true;
    case HC_E_BINARY: break;
    default: return false;
    }
    if (!eval(E, e->u.bin.a, &a) || !eval(E, e->u.bin.b, &b)) return false;
    switch (e->u.bin.op) {
    case HC_OP_ADD: *out = a + b; return true;
    case HC_OP_SUB: *out = a - b; return true;
    case HC_OP_MUL: *out = a * b; return true;
    case HC_OP_DIV: return b ? (*out = a / b, true) : false;
    case HC_OP_MOD: return b ? (*out = a % b, true) : false;
    case HC_OP_MIN: *out = a < b ? a : b; return true;
    case HC_OP_MAX: *out = a > b ? a : b; return true;
    case HC_OP_LT: *out = a < b; return true;
    case HC_OP_LE: *out = a <= b; return true;
    case HC_OP_GT: *out = a > b; return true;
    case HC_OP_GE: *out = a >= b; return true;
    case HC_OP_EQ: *out = a == b; return true;
    case HC_OP_NE: *out = a != b; return true;
    case HC_OP_AND: *out = a && b; return true;
    case HC_OP_OR: *out = a || b; return true;
    default: return false;
    }
}

static int64_t rnd(hc_rng *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)(hc_rng_next(r) % (uint64_t)(hi - lo + 1));
}

static hc_expr *gen(hc_rng *r, const env *E, int depth) {
    int pick = (int)rnd(r, 0, depth <= 0 ? 1 : 12);
    switch (pick) {
    case 0: return I(rnd(r, -6, 9));
    case 1: return V(E->vars[rnd(r, 0, NV - 1)]);
    case 2: return hc_add(&A, gen(r, E, depth - 1), gen(r, E, depth - 1));
    case 3: return hc_sub(&A, gen(r, E, depth - 1), gen(r, E, depth - 1));
    case 4: return hc_mul(&A, gen(r, E, depth - 1), I(rnd(r, -3, 8)));
    case 5: return hc_mul(&A, gen(r, E, depth - 1), gen(r, E, depth - 2));
    case 6: return hc_div(&A, gen(r, E, depth - 1), I(rnd(r, 1, 9)));
    case 7: return hc_mod(&A, gen(r, E, depth - 1), I(rnd(r, 1, 9)));
    case 8: return hc_div(&A, gen(r, E, depth - 1), gen(r, E, depth - 2));
    case 9: return hc_min(&A, gen(r, E, depth - 1), gen(r, E, depth - 1));
    case 10: return hc_max(&A, gen(r, E, depth - 1), gen(r, E, depth - 1));
    case 11: {
        hc_binop cmp = (hc_binop)rnd(r, HC_OP_LT, HC_OP_NE);
        hc_expr *c = hc_binary(&A, cmp, gen(r, E, depth - 2), gen(r, E, depth - 2));
        return hc_select(&A, c, gen(r, E, depth - 1), gen(r, E, depth - 1));
    }
    default: { /* the shape the div/mod rules look for: (x * c + y) / c */
        int64_t c = rnd(r, 1, 8);
        hc_expr *n = hc_add(&A, hc_mul(&A, gen(r, E, depth - 1), I(c * rnd(r, 1, 3))),
                            gen(r, E, depth - 1));
        return rnd(r, 0, 1) ? hc_div(&A, n, I(c)) : hc_mod(&A, n, I(c));
    }
    }
}

/* Points are enumerated over for-loop counters r_k in [0, ext_k); var k is bound by
 * `let x_k = r_k + lo_k`, so its interval is [lo_k, lo_k + ext_k - 1]. */
static void test_random(void) {
    hc_rng rng = {12345};
    int checked = 0, mismatches = 0, changed = 0;
    for (int iter = 0; iter < 1500; iter++) {
        env E;
        hc_var *ctr[NV];
        int64_t lo[NV], ext[NV];
        for (int k = 0; k < NV; k++) {
            E.vars[k] = hc_var_new(&A, "x", hc_type_scalar(HC_I64));
            ctr[k] = hc_var_new(&A, "r", hc_type_scalar(HC_I64));
            lo[k] = rnd(&rng, 0, 2) ? 0 : rnd(&rng, -7, 3);
            ext[k] = rnd(&rng, 2, 7);
        }
        hc_expr *e = gen(&rng, &E, 4);
        hc_stmt *s = hc_store(&A, out_buf, 1, (hc_expr *[]){I(0)}, e);
        for (int k = NV - 1; k >= 0; k--) {
            s = hc_let(&A, E.vars[k], hc_add(&A, V(ctr[k]), I(lo[k])), s);
            s = hc_for(&A, ctr[k], I(ext[k]), hc_serial(), s);
        }
        hc_stmt *t = hc_simplify_stmt(&A, s);
        while (t->kind == HC_S_FOR || t->kind == HC_S_LET)
            t = t->kind == HC_S_FOR ? t->u.for_.body : t->u.let.body;
        HC_ASSERT(t->kind == HC_S_STORE);
        const hc_expr *se = t->u.store.value;
        changed += se != e;
        for (int64_t p = 0; p < ext[0] * ext[1] * ext[2]; p++) {
            E.val[0] = lo[0] + p % ext[0];
            E.val[1] = lo[1] + p / ext[0] % ext[1];
            E.val[2] = lo[2] + p / (ext[0] * ext[1]);
            int64_t want, got;
            if (!eval(&E, e, &want)) continue;
            checked++;
            if (!eval(&E, se, &got) || got != want) {
                if (mismatches++ < 5)
                    fprintf(stderr, "mismatch at (%lld, %lld, %lld): %s = %lld, %s = %lld\n",
                            (long long)E.val[0], (long long)E.val[1], (long long)E.val[2],
                            show(e), (long long)want, show(se), (long long)got);
            }
        }
    }
    CHECK_EQ_INT(mismatches, 0);
    CHECK(checked > 100000);
    CHECK(changed > 700); /* the test exercises the simplifier, not only the evaluator */
}

int main(void) {
    hc_arena_init(&A);
    const char *names[4] = {"i", "j", "k", "l"};
    for (int k = 0; k < 4; k++) loop_vars[k] = hc_var_new(&A, names[k], hc_type_scalar(HC_I64));
    out_buf = hc_var_new(&A, "out", hc_type_pointer(&A, hc_type_scalar(HC_I64)));
    test_fold_int();
    test_fold_int_negative();
    test_fold_float_and_cast();
    test_identities();
    test_side_effects_kept();
    test_reassociate();
    test_divmod_bounds();
    test_compare_minmax();
    test_let_and_builtins();
    test_mapping_and_reduce_bounds();
    test_statements();
    test_func();
    test_random();
    hc_arena_free(&A);
    TEST_DONE();
}
