/* test_verify.c — the verifier accepts well-formed programs and rejects each kind of
 * broken one with a message naming the function and the offending node. */
#include "ir/mapping.h"
#include "test.h"

static hc_arena A;

#define I(v) hc_int(&A, (v))
#define V(x) hc_ref(&A, (x))
#define IDX(...) ((hc_expr *[]){__VA_ARGS__})

static const hc_type *i64, *f32, *v8;
static hc_var *Tn, *P, *n; /* params: T: tensor<f32,[4,n]>, P: f32*, n: i64 */

static hc_func *fn(hc_stmt *body) {
    return hc_func_new(&A, "kern", HC_FN_CPU_KERNEL, 3, (hc_var *[]){Tn, P, n}, body);
}

static hc_stmt *seq2(hc_stmt *a, hc_stmt *b) { return hc_seq(&A, 2, (hc_stmt *[]){a, b}); }

/* Expects rejection with a message containing each of the given fragments. */
#define REJECT(f, task, ...)                                                             \
    do {                                                                                 \
        hc_error err = {0};                                                              \
        hc_status st_ = hc_verify_func((f), (task), &err);                                \
        CHECK_EQ_INT(st_, HC_ERR_INVALID);                                               \
        const char *frags[] = {"function 'kern'", __VA_ARGS__};                          \
        for (size_t q = 0; q < HC_ARRAY_LEN(frags); q++)                                 \
            CHECK_MSG(strstr(err.msg, frags[q]), "'%s' not in: %s", frags[q], err.msg);  \
    } while (0)

#define ACCEPT(f, task)                                                                  \
    do {                                                                                 \
        hc_error err = {0};                                                              \
        hc_status st_ = hc_verify_func((f), (task), &err);                                \
        CHECK_MSG(st_ == HC_OK, "%s", err.msg);                                          \
    } while (0)

static void test_valid(void) {
    hc_builder b;
    hc_builder_init(&b, &A);
    hc_var *acc = hc_b_declare(&b, "acc", v8, hc_call(&A, HC_PRIM_VBROADCAST, v8, 1,
                                                      IDX(hc_f32(&A, 0))));
    hc_var *reg = hc_b_declare(&b, "reg", hc_type_tensor_c(&A, HC_F32, 1, (int64_t[]){8},
                                                           HC_SCOPE_REGISTER), NULL);
    HC_FOR(&b, i, "i", I(4), hc_unroll(0)) {
        hc_var *rc[2];
        const hc_mapping *m = hc_map_spatial2(&A, 2, 2);
        HC_FOR_MAP(&b, m, V(hc_var_builtin(&A, HC_BUILTIN_CPU_THREAD)), 2, rc, NULL) {
            hc_expr *p = hc_address(&A, P, 1, IDX(hc_mul(&A, V(rc[0]), I(8))));
            hc_expr *ld = hc_call(&A, HC_PRIM_VLOAD, v8, 1, IDX(p));
            hc_b_assign(&b, acc, hc_call(&A, HC_PRIM_VFMA, v8, 3, IDX(ld, ld, V(acc))));
            hc_b_eval(&b, hc_call(&A, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2,
                                  IDX(p, V(acc))));
        }
        HC_FOR(&b, j, "j", V(n), hc_serial()) {
            hc_expr *sel = hc_select(&A, hc_lt(&A, V(j), I(3)), hc_load(&A, Tn, 2,
                                                                      IDX(V(i), V(j))),
                                     hc_f32(&A, 1));
            hc_b_store(&b, Tn, 2, IDX(V(i), V(j)), sel);
            hc_b_store(&b, reg, 1, IDX(hc_mod(&A, V(j), I(8))), hc_math(&A, HC_PRIM_EXP,
                                                                        sel, NULL));
        }
        HC_IF(&b, hc_eq(&A, V(i), I(0))) {
            hc_var *t = hc_b_declare(&b, "t", i64, hc_mul(&A, V(i), I(2)));
            hc_b_store(&b, P, 1, IDX(V(t)), hc_call(&A, HC_PRIM_VREDUCE_ADD, f32, 1,
                                                    IDX(V(acc))));
        }
    }
    hc_var *t = hc_var_new(&A, "t", i64);
    hc_b_emit(&b, hc_let(&A, t, hc_add(&A, V(n), I(1)),
                         hc_store(&A, P, 1, IDX(V(t)), hc_f32(&A, 2))));
    hc_b_emit(&b, hc_barrier(&A, HC_SCOPE_GLOBAL));
    hc_b_comment(&b, "done");
    hc_func *f = fn(hc_builder_finish(&b));
    ACCEPT(f, false);
    ACCEPT(hc_simplify_func(&A, f), false);
    hc_module *m = hc_module_new(&A, "mod", 1, &f);
    hc_error err;
    CHECK_EQ_INT(hc_verify_module(m, &err), HC_OK);
    /* a NULL error pointer is allowed */
    CHECK_EQ_INT(hc_verify_func(fn(hc_assign(&A, n, hc_f32(&A, 1))), false, NULL),
                 HC_ERR_INVALID);
}

static void test_scoping(void) {
    hc_var *x = hc_var_new(&A, "x", i64);
    hc_var *i = hc_var_new(&A, "i", i64);
    hc_stmt *use_x = hc_store(&A, P, 1, IDX(V(x)), hc_f32(&A, 0));
    REJECT(fn(use_x), false, "variable used outside its scope", "x");
    /* used before its declaration */
    REJECT(fn(seq2(use_x, hc_declare(&A, x, I(0)))), false, "outside its scope");
    ACCEPT(fn(seq2(hc_declare(&A, x, I(0)), use_x)), false);
    /* a loop variable is gone after its loop */
    hc_stmt *loop = hc_for(&A, i, I(4), hc_serial(), hc_comment(&A, "empty"));
    hc_stmt *use_i = hc_store(&A, P, 1, IDX(V(i)), hc_f32(&A, 0));
    REJECT(fn(seq2(loop, use_i)), false, "outside its scope", "P[i] = 0.0f");
    /* a declaration inside an if branch is gone after it */
    hc_stmt *branch = hc_if(&A, hc_bool(&A, true), hc_declare(&A, x, I(1)), NULL);
    REJECT(fn(seq2(branch, use_x)), false, "outside its scope");
    /* the same variable object defined twice, even in sibling scopes */
    REJECT(fn(seq2(loop, loop)), false, "defined twice", "i: i64");
    hc_var *y = hc_var_new(&A, "y", i64);
    REJECT(fn(hc_let(&A, y, V(y), hc_comment(&A, "c"))), false, "outside its scope");
    REJECT(fn(hc_declare(&A, n, I(0))), false, "defined twice", "n");
    /* buffers are variables too */
    hc_var *q = hc_var_new(&A, "Q", hc_type_pointer(&A, f32));
    REJECT(fn(hc_store(&A, q, 1, IDX(I(0)), hc_f32(&A, 0))), false, "outside its scope");
    /* builtins need no definition, but cannot be assigned */
    hc_var *tx = hc_var_builtin(&A, HC_BUILTIN_THREAD_IDX_X);
    ACCEPT(fn(hc_store(&A, P, 1, IDX(V(tx)), hc_f32(&A, 0))), false);
    REJECT(fn(hc_assign(&A, tx, I(0))), false, "assignment to a builtin");
}

static void test_indices_and_types(void) {
    REJECT(fn(hc_store(&A, Tn, 1, IDX(I(0)), hc_f32(&A, 0))), false,
           "wrong number of indices", "T[0] = 0.0f");
    REJECT(fn(hc_store(&A, P, 2, IDX(I(0), I(1)), hc_f32(&A, 0))), false,
           "wrong number of indices");
    hc_expr *bad = hc_load(&A, Tn, 2, IDX(I(0), hc_f32(&A, 1)));
    REJECT(fn(hc_store(&A, P, 1, IDX(I(0)), bad)), false, "index is not an integer",
           "T[0, 1.0f]");
    hc_expr *ld3 = hc_load(&A, P, 1, IDX(I(0)));
    ld3->u.load.n = 0;
    REJECT(fn(hc_eval(&A, ld3)), false, "wrong number of indices");
    REJECT(fn(hc_store(&A, P, 1, IDX(I(0)), I(1))), false, "stored value's type");
    hc_var *fv = hc_var_new(&A, "fv", f32);
    hc_var *vv = hc_var_new(&A, "vv", v8);
    REJECT(fn(seq2(hc_declare(&A, fv, NULL), hc_assign(&A, fv, I(3)))), false,
           "assigned value's type", "fv = 3");
    REJECT(fn(seq2(hc_declare(&A, vv, NULL), hc_assign(&A, vv, hc_f32(&A, 3)))), false,
           "assigned value's type", "vv = 3.0f");
    REJECT(fn(hc_declare(&A, fv, hc_f64(&A, 1))), false, "initial value's type");
    hc_var *t = hc_var_new(&A, "t", i64);
    REJECT(fn(hc_let(&A, t, hc_i32(&A, 1), hc_comment(&A, "c"))), false, "let value's type");
    REJECT(fn(hc_if(&A, V(n), hc_comment(&A, "c"), NULL)), false, "if condition", "if n:");
    hc_expr *sel = hc_select(&A, V(n), hc_f32(&A, 1), hc_f32(&A, 2));
    REJECT(fn(hc_store(&A, P, 1, IDX(I(0)), sel)), false, "select condition",
           "select(n, 1.0f, 2.0f)");
    hc_var *i = hc_var_new(&A, "i", i64);
    REJECT(fn(hc_for(&A, i, hc_f32(&A, 4), hc_serial(), hc_comment(&A, "c"))), false,
           "loop extent is not an integer", "for i in range(4.0f):");
    REJECT(fn(hc_assign(&A, Tn, I(0))), false, "assignment to a whole tensor");
    hc_expr *lg = hc_and(&A, V(n), hc_bool(&A, true));
    REJECT(fn(hc_if(&A, lg, hc_comment(&A, "c"), NULL)), false, "logical operator");
    hc_expr *fm = hc_mod(&A, hc_f32(&A, 1), hc_f32(&A, 2));
    REJECT(fn(hc_store(&A, P, 1, IDX(I(0)), fm)), false, "integer operator on float");
}

static void test_mapping_and_calls(void) {
    hc_var *r = hc_var_new(&A, "r", i64);
    hc_stmt *fm = hc_for_mapping(&A, hc_map_spatial(&A, 1, (int64_t[]){4}), I(0), 1, &r,
                                 hc_comment(&A, "c"));
    ACCEPT(fn(fm), false);
    fm->u.fmap.mapping = hc_map_spatial2(&A, 2, 2); /* rank 2, one variable */
    REJECT(fn(fm), false, "mapping's rank");
    hc_expr *ex = hc_math(&A, HC_PRIM_EXP, hc_f32(&A, 1), NULL);
    ex->u.call.nargs = 2;
    ex->u.call.args = IDX(hc_f32(&A, 1), hc_f32(&A, 2));
    REJECT(fn(hc_store(&A, P, 1, IDX(I(0)), ex)), false, "wrong number of arguments");
    hc_expr *vl = hc_call(&A, HC_PRIM_VLOAD, v8, 1, IDX(hc_f32(&A, 1)));
    REJECT(fn(hc_eval(&A, vl)), false, "vload of a non-pointer", "vload<f32x8>(1.0f)");
    hc_expr *pf = hc_call(&A, HC_PRIM_PREFETCH, hc_type_scalar(HC_VOID), 1, IDX(hc_f32(&A, 1)));
    REJECT(fn(hc_eval(&A, pf)), false, "prefetch of a non-pointer");
    hc_expr *pp = hc_call(&A, HC_PRIM_PREFETCH, hc_type_scalar(HC_VOID), 1,
                          IDX(hc_address(&A, P, 1, IDX(I(3)))));
    ACCEPT(fn(hc_eval(&A, pp)), false);
    const hc_type *v4 = hc_type_vector(&A, HC_F32, 4);
    hc_expr *b8 = hc_call(&A, HC_PRIM_VBROADCAST, v8, 1, IDX(hc_f32(&A, 1)));
    hc_expr *b4 = hc_call(&A, HC_PRIM_VBROADCAST, v4, 1, IDX(hc_f32(&A, 1)));
    hc_expr *fma = hc_call(&A, HC_PRIM_VFMA, v8, 3, IDX(b8, b4, b8));
    REJECT(fn(hc_eval(&A, fma)), false, "vfma needs three vectors");
    hc_expr *bi = hc_call(&A, HC_PRIM_VBROADCAST, v8, 1, IDX(I(1)));
    REJECT(fn(hc_eval(&A, bi)), false, "vbroadcast");
    hc_expr *st = hc_call(&A, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2,
                          IDX(hc_address(&A, P, 1, IDX(I(0))), b4));
    ACCEPT(fn(hc_eval(&A, st)), false);
    hc_expr *sti = hc_call(&A, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2,
                           IDX(hc_address(&A, P, 1, IDX(I(0))), I(3)));
    REJECT(fn(hc_eval(&A, sti)), false, "vstore value");
    hc_expr *cv = hc_cast(&A, v8, hc_f32(&A, 1));
    REJECT(fn(hc_eval(&A, cv)), false, "cast between scalar and vector");
}

static void test_task_level_and_register(void) {
    hc_var *k = hc_var_new(&A, "k", i64);
    hc_expr *red = hc_reduce(&A, HC_REDUCE_SUM, 1, &k, (int64_t[]){4},
                             hc_load(&A, Tn, 2, IDX(V(k), I(0))));
    hc_stmt *s = hc_store(&A, P, 1, IDX(I(0)), red);
    REJECT(fn(s), false, "task-level reduce", "sum(T[k, 0] for k in range(4))");
    ACCEPT(fn(s), true);
    /* the reduce axis is only visible inside the reduction */
    hc_stmt *after = hc_store(&A, P, 1, IDX(V(k)), hc_f32(&A, 0));
    REJECT(fn(seq2(s, after)), true, "outside its scope");
    hc_expr *dyn[1] = {V(n)};
    hc_var *r = hc_var_new(&A, "r", hc_type_tensor(&A, HC_F32, 1, dyn, NULL,
                                                    HC_SCOPE_REGISTER));
    REJECT(fn(hc_declare(&A, r, NULL)), false, "register tensor with a non-constant shape",
           "declare r: tensor<f32, [n], register>");
    hc_var *g = hc_var_new(&A, "g", hc_type_tensor(&A, HC_F32, 1, dyn, NULL, HC_SCOPE_GLOBAL));
    ACCEPT(fn(hc_declare(&A, g, NULL)), false);
}

/* Hundreds of variables: the verifier's tables grow while scopes are open. */
static void test_many_vars(void) {
    enum { N = 300 };
    hc_stmt *stmts[2 * N];
    hc_var *vars[N];
    for (int k = 0; k < N; k++) {
        vars[k] = hc_var_new(&A, "x", i64);
        stmts[k] = hc_declare(&A, vars[k], k ? V(vars[k - 1]) : I(0));
    }
    for (int k = 0; k < N; k++)
        stmts[N + k] = hc_store(&A, P, 1, IDX(V(vars[N - 1 - k])), hc_f32(&A, 0));
    ACCEPT(fn(hc_seq(&A, 2 * N, stmts)), false);
    stmts[N + 5] = hc_declare(&A, vars[7], NULL);
    REJECT(fn(hc_seq(&A, 2 * N, stmts)), false, "defined twice");
}

static void test_module(void) {
    hc_func *f = fn(hc_comment(&A, "ok"));
    hc_func *g = fn(hc_assign(&A, n, hc_f32(&A, 1)));
    hc_error err = {0};
    CHECK_EQ_INT(hc_verify_module(hc_module_new(&A, "m", 2, (hc_func *[]){f, f}), &err),
                 HC_ERR_INVALID);
    CHECK(strstr(err.msg, "defined twice") && strstr(err.msg, "'kern'"));
    CHECK_EQ_INT(hc_verify_module(hc_module_new(&A, "m", 1, &g), &err), HC_ERR_INVALID);
    CHECK(strstr(err.msg, "assigned value's type") != NULL);
}

int main(void) {
    hc_arena_init(&A);
    i64 = hc_type_scalar(HC_I64);
    f32 = hc_type_scalar(HC_F32);
    v8 = hc_type_vector(&A, HC_F32, 8);
    n = hc_var_new(&A, "n", i64);
    Tn = hc_var_new(&A, "T", hc_type_tensor(&A, HC_F32, 2, IDX(I(4), V(n)), NULL,
                                             HC_SCOPE_GLOBAL));
    P = hc_var_new(&A, "P", hc_type_pointer(&A, f32));
    test_valid();
    test_scoping();
    test_indices_and_types();
    test_mapping_and_calls();
    test_task_level_and_register();
    test_many_vars();
    test_module();
    hc_arena_free(&A);
    TEST_DONE();
}
