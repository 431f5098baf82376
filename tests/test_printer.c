/* test_printer.c — the IR text form. Whole programs are compared with golden files in
 * tests/golden/ (HIDETC_UPDATE_GOLDEN=1 rewrites them); small cases are checked inline. */
#include <stdlib.h>

#include "ir/mapping.h"
#include "task/task.h"
#include "test.h"

static hc_arena A;

#define I(v) hc_int(&A, (v))
#define V(x) hc_ref(&A, (x))
#define IDX(...) ((hc_expr *[]){__VA_ARGS__})

static const hc_type *scalar(hc_dtype d) { return hc_type_scalar(d); }

static void check_golden(const char *name, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/golden/%s.txt", HC_SOURCE_DIR, name);
    const char *upd = getenv("HIDETC_UPDATE_GOLDEN");
    hc_error err;
    if (upd && *upd == '1') {
        CHECK(hc_write_file(path, text, strlen(text), &err) == HC_OK);
        return;
    }
    char *want = NULL;
    size_t n;
    if (hc_read_file(path, &want, &n, &err) != HC_OK) {
        CHECK_MSG(0, "cannot read %s (run with HIDETC_UPDATE_GOLDEN=1): %s", path, err.msg);
        return;
    }
    CHECK_STR(text, want);
    free(want);
}

static char *show_expr(const hc_expr *e) {
    static char buf[8][8192];
    static int k;
    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_expr(&sb, e);
    char *out = buf[k++ % 8];
    snprintf(out, 8192, "%s", hc_sb_str(&sb));
    hc_sb_free(&sb);
    return out;
}

static char *show_type(const hc_type *t) {
    static char buf[256];
    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_type(&sb, t);
    snprintf(buf, sizeof buf, "%s", hc_sb_str(&sb));
    hc_sb_free(&sb);
    return buf;
}

/* ---- inline cases --------------------------------------------------------------- */
static void test_constants(void) {
    CHECK_STR(show_expr(I(-42)), "-42");
    CHECK_STR(show_expr(hc_f32(&A, 1.5)), "1.5f");
    CHECK_STR(show_expr(hc_f32(&A, 0.1)), "0.1f"); /* shortest form that reads back */
    CHECK_STR(show_expr(hc_f32(&A, 3)), "3.0f");
    CHECK_STR(show_expr(hc_f32(&A, 1e-8)), "1e-08f");
    CHECK_STR(show_expr(hc_f64(&A, 1.0 / 3)), "0.3333333333333333");
    CHECK_STR(show_expr(hc_f64(&A, -2)), "-2.0");
    CHECK_STR(show_expr(hc_f64(&A, NAN)), "f64(nan)");
    CHECK_STR(show_expr(hc_f32(&A, -INFINITY)), "f32(-inf)");
    CHECK_STR(show_expr(hc_bool(&A, true)), "true");
    CHECK_STR(show_expr(hc_bool(&A, false)), "false");
    CHECK_STR(show_expr(hc_i32(&A, -7)), "i32(-7)");
    CHECK_STR(show_expr(hc_const(&A, HC_I8, (hc_value){.i = 3})), "i8(3)");
    CHECK_STR(show_expr(hc_const(&A, HC_U64, (hc_value){.u = UINT64_MAX})),
              "u64(18446744073709551615)");
    CHECK_STR(show_expr(hc_const(&A, HC_F16, (hc_value){.f = 0.5})), "f16(0.5)");
}

static void test_types(void) {
    CHECK_STR(show_type(scalar(HC_BF16)), "bf16");
    CHECK_STR(show_type(hc_type_vector(&A, HC_F32, 16)), "f32x16");
    CHECK_STR(show_type(hc_type_pointer(&A, scalar(HC_F32))), "f32*");
    CHECK_STR(show_type(hc_type_pointer(&A, hc_type_pointer(&A, scalar(HC_U8)))), "u8**");
    CHECK_STR(show_type(hc_type_tensor_c(&A, HC_F32, 2, (int64_t[]){16, 8}, HC_SCOPE_GLOBAL)),
              "tensor<f32, [16, 8], global>");
    hc_expr *shp[2] = {I(4), I(8)};
    const hc_type *t = hc_type_tensor(&A, HC_F16, 2, shp, hc_layout_col_major(&A, 2, shp),
                                      HC_SCOPE_SHARED);
    CHECK_STR(show_type(t), "tensor<f16, [4, 8], shared, col_major(4, 8)>");
    t = hc_type_tensor(&A, HC_F32, 2, shp,
                       hc_layout_strided(&A, 2, shp, IDX(I(1), I(5))), HC_SCOPE_REGISTER);
    CHECK_STR(show_type(t), "tensor<f32, [4, 8], register, strided(4, 8; strides 1, 5)>");
    /* a row-major layout over a different shape than the tensor's is shown */
    hc_expr *other[2] = {I(2), I(16)};
    t = hc_type_tensor(&A, HC_F32, 2, shp, hc_layout_row_major(&A, 2, other), HC_SCOPE_GLOBAL);
    CHECK_STR(show_type(t), "tensor<f32, [4, 8], global, row_major(2, 16)>");
    t = hc_type_tensor(&A, HC_I8, 0, NULL, NULL, HC_SCOPE_REGISTER);
    CHECK_STR(show_type(t), "tensor<i8, [], register>");
}

static void test_names(void) {
    hc_var *x1 = hc_var_new(&A, "x", scalar(HC_I64));
    hc_var *x2 = hc_var_new(&A, "x", scalar(HC_I64));
    hc_var *x_1 = hc_var_new(&A, "x_1", scalar(HC_I64));
    hc_var *x3 = hc_var_new(&A, "x", scalar(HC_I64));
    hc_expr *e = hc_add(&A, hc_add(&A, V(x1), V(x2)), hc_add(&A, V(x_1), hc_add(&A, V(x3),
                                                                              V(x1))));
    /* x_1 is taken by the second x when the literal x_1 arrives */
    CHECK_STR(show_expr(e), "((x + x_1) + (x_1_1 + (x_2 + x)))");
    /* independent prints restart naming, and two builtin objects are one register */
    CHECK_STR(show_expr(V(x2)), "x");
    hc_expr *t = hc_add(&A, V(hc_var_builtin(&A, HC_BUILTIN_THREAD_IDX_X)),
                        V(hc_var_builtin(&A, HC_BUILTIN_THREAD_IDX_X)));
    CHECK_STR(show_expr(t), "(threadIdx.x + threadIdx.x)");
    CHECK_STR(show_expr(V(hc_var_new(&A, "", scalar(HC_I64)))), "v");
    /* enough names to grow the printer's tables while earlier names are in use */
    hc_var *first = hc_var_new(&A, "y", scalar(HC_I64));
    hc_expr *sum = V(first);
    for (int k = 1; k < 300; k++) sum = hc_add(&A, sum, V(hc_var_new(&A, "y", scalar(HC_I64))));
    sum = hc_add(&A, sum, V(first));
    const char *text = show_expr(sum);
    CHECK(strncmp(text, "((((", 4) == 0);
    size_t len = strlen(text);
    const char *tail = " + y_299) + y)";
    CHECK_MSG(len > strlen(tail) && !strcmp(text + len - strlen(tail), tail), "%s", text);
}

/* ---- golden programs ---------------------------------------------------------------- */
/* A CPU matmul-like kernel touching every statement kind and most expressions. */
static hc_func *build_cpu_program(void) {
    const hc_type *f32 = scalar(HC_F32);
    const hc_type *v16 = hc_type_vector(&A, HC_F32, 16);
    hc_var *Av = hc_var_new(&A, "A", hc_type_tensor_c(&A, HC_F32, 2, (int64_t[]){16, 8},
                                                       HC_SCOPE_GLOBAL));
    hc_var *n = hc_var_new(&A, "n", scalar(HC_I64));
    hc_expr *bshape[2] = {I(8), V(n)};
    hc_var *Bv = hc_var_new(&A, "B", hc_type_tensor(&A, HC_F32, 2, bshape,
                                                     hc_layout_col_major(&A, 2, bshape),
                                                     HC_SCOPE_GLOBAL));
    hc_var *Cp = hc_var_new(&A, "C", hc_type_pointer(&A, f32));
    hc_builder b;
    hc_builder_init(&b, &A);
    hc_b_comment(&b, "accumulators live in registers");
    hc_var *acc = hc_b_declare(&b, "acc", hc_type_tensor_c(&A, HC_F32, 2, (int64_t[]){6, 2},
                                                           HC_SCOPE_REGISTER), NULL);
    hc_var *vz = hc_b_declare(&b, "v", v16,
                              hc_call(&A, HC_PRIM_VBROADCAST, v16, 1, IDX(hc_f32(&A, 0))));
    hc_expr *loc_shape[2] = {I(2), I(2)};
    const hc_layout *tile = hc_layout_compose(&A, hc_layout_local(&A, 2, loc_shape),
                                              hc_layout_row_major(&A, 2, loc_shape));
    hc_expr *tshape[2] = {I(4), I(4)};
    hc_b_declare(&b, "tile", hc_type_tensor(&A, HC_F32, 2, tshape, tile, HC_SCOPE_REGISTER),
                 NULL);
    hc_expr *sw[2] = {I(8), I(32)};
    hc_b_declare(&b, "sw", hc_type_tensor(&A, HC_F32, 2, sw, hc_layout_swizzle(&A, sw[0], sw[1]),
                                          HC_SCOPE_SHARED), NULL);
    const hc_mapping *m = hc_map_compose(&A, hc_map_spatial2(&A, 4, 8),
                                         hc_map_repeat(&A, 2, (int64_t[]){2, 2},
                                                       (hc_loop_attr[]){hc_unroll(0),
                                                                        hc_serial()}));
    HC_FOR(&b, i, "i", I(16), hc_unroll(0)) {
        hc_var *rc[2];
        hc_expr *w = V(hc_var_builtin(&A, HC_BUILTIN_CPU_THREAD));
        HC_FOR_MAP(&b, m, w, 2, rc, ((const char *[]){"r", "c"})) {
            HC_FOR(&b, k, "k", V(n), hc_parallel(2)) {
                hc_expr *prod = hc_mul(&A, hc_load(&A, Av, 2, IDX(V(rc[0]), V(k))),
                                       hc_load(&A, Bv, 2, IDX(V(k), V(rc[1]))));
                hc_b_store(&b, acc, 2, IDX(hc_mod(&A, V(rc[0]), I(6)), I(0)), prod);
            }
            /* a second loop variable named i */
            HC_FOR(&b, i2, "i", I(4), hc_unroll(4)) {
                hc_expr *p = hc_address(&A, Cp, 1, IDX(hc_mul(&A, V(i2), I(16))));
                hc_expr *ld = hc_call(&A, HC_PRIM_VLOAD, v16, 1, IDX(p));
                hc_expr *fma = hc_call(&A, HC_PRIM_VFMA, v16, 3, IDX(ld, V(vz), V(vz)));
                hc_b_assign(&b, vz, fma);
                hc_b_eval(&b, hc_call(&A, HC_PRIM_VSTORE, scalar(HC_VOID), 2, IDX(p, V(vz))));
            }
        }
        hc_b_if_begin(&b, hc_and(&A, hc_lt(&A, V(i), V(n)),
                                 hc_unary(&A, HC_OP_NOT, hc_eq(&A, V(i), I(3)))));
        {
            hc_expr *red = hc_call(&A, HC_PRIM_VREDUCE_ADD, f32, 1, IDX(V(vz)));
            hc_expr *sel = hc_select(&A, hc_binary(&A, HC_OP_GE, V(i), I(8)), red,
                                     hc_unary(&A, HC_OP_NEG, hc_f32(&A, 2.5)));
            hc_b_store(&b, Cp, 1, IDX(V(i)), hc_math(&A, HC_PRIM_EXP, sel, NULL));
        }
        hc_b_else(&b);
        {
            hc_expr *c = hc_cast(&A, f32, hc_max(&A, V(i), hc_min(&A, V(n), I(2))));
            hc_b_store(&b, Cp, 1, IDX(V(i)), hc_math(&A, HC_PRIM_POW, c, hc_f32(&A, 0.5)));
        }
        hc_b_end(&b);
        HC_IF(&b, hc_binary(&A, HC_OP_NE, hc_binary(&A, HC_OP_BITAND, V(i), I(1)), I(0))) {
            hc_b_comment(&b, "odd rows\nare skipped");
        }
    }
    hc_var *t = hc_var_new(&A, "t", scalar(HC_I64));
    hc_stmt *let_body = hc_store(&A, Cp, 1, IDX(V(t)), hc_f32(&A, 0));
    hc_expr *tv = hc_binary(&A, HC_OP_SHL, hc_unary(&A, HC_OP_BITNOT, V(n)), I(2));
    hc_b_emit(&b, hc_let(&A, t, tv, let_body));
    hc_b_emit(&b, hc_barrier(&A, HC_SCOPE_GLOBAL));
    hc_stmt *body = hc_builder_finish(&b);
    return hc_func_new(&A, "matmul", HC_FN_CPU_KERNEL, 4, (hc_var *[]){Av, Bv, Cp, n}, body);
}

/* A module with a CUDA kernel (launch dims, shared memory) and a device helper. */
static hc_module *build_cuda_module(void) {
    const hc_type *f32 = scalar(HC_F32);
    hc_var *x = hc_var_new(&A, "x", f32);
    hc_func *helper = hc_func_new(&A, "square", HC_FN_CUDA_DEVICE, 1, &x,
                                  hc_comment(&A, "returns x * x"));
    helper->ret = f32;
    hc_var *n = hc_var_new(&A, "n", scalar(HC_I32));
    hc_var *out = hc_var_new(&A, "out", hc_type_pointer(&A, f32));
    hc_builder b;
    hc_builder_init(&b, &A);
    hc_var *sh = hc_b_declare(&b, "buf", hc_type_tensor_c(&A, HC_F32, 1, (int64_t[]){256},
                                                          HC_SCOPE_SHARED), NULL);
    hc_expr *tx = V(hc_var_builtin(&A, HC_BUILTIN_THREAD_IDX_X));
    hc_expr *bx = V(hc_var_builtin(&A, HC_BUILTIN_BLOCK_IDX_X));
    hc_expr *gi = hc_add(&A, hc_mul(&A, bx, I(256)), tx);
    hc_b_store(&b, sh, 1, IDX(tx), hc_cast(&A, f32, gi));
    hc_b_emit(&b, hc_barrier(&A, HC_SCOPE_SHARED));
    hc_var *lane[1];
    HC_FOR_MAP(&b, hc_map_spatial(&A, 1, (int64_t[]){32}), V(hc_var_builtin(
                   &A, HC_BUILTIN_LANE_ID)), 1, lane, ((const char *[]){"l"})) {
        HC_IF(&b, hc_lt(&A, gi, hc_cast(&A, scalar(HC_I64), V(n)))) {
            hc_expr *v = hc_load(&A, sh, 1, IDX(hc_binary(&A, HC_OP_BITXOR, tx, V(lane[0]))));
            hc_b_store(&b, out, 1, IDX(gi), hc_binary(&A, HC_OP_DIV, v, hc_f32(&A, 3)));
        }
    }
    hc_func *k = hc_func_new(&A, "scale", HC_FN_CUDA_KERNEL, 2, (hc_var *[]){out, n},
                             hc_builder_finish(&b));
    k->grid_dim[0] = hc_div(&A, hc_add(&A, hc_cast(&A, scalar(HC_I64), V(n)), I(255)), I(256));
    k->block_dim[0] = I(256);
    k->shared_bytes = 1024;
    hc_func *empty = hc_func_new(&A, "nothing", HC_FN_CPU_HELPER, 0, NULL, hc_seq(&A, 0, NULL));
    return hc_module_new(&A, "cuda_demo", 3, (hc_func *[]){helper, k, empty});
}

/* Index lists stored in nodes must outlive the builder function. */
static hc_expr **arena_idx(int n, hc_expr *const *idx) {
    return hc_arena_memdup(&A, idx, sizeof(hc_expr *) * (size_t)n);
}

/* Task-level nodes: a compute body with tensor accesses and reductions. */
static hc_func *build_task_level(void) {
    static hc_tnode X = {.kind = HC_TN_INPUT, .name = "X", .dtype = HC_F32, .ndim = 2,
                         .shape = {4, 8}};
    static hc_tnode W = {.kind = HC_TN_INPUT, .name = "W", .dtype = HC_F32, .ndim = 1,
                         .shape = {8}};
    hc_var *i = hc_var_new(&A, "i", scalar(HC_I64));
    hc_var *k = hc_var_new(&A, "k", scalar(HC_I64));
    hc_var *p = hc_var_new(&A, "p", scalar(HC_I64)), *q = hc_var_new(&A, "q", scalar(HC_I64));
    hc_expr *ax = HC_NEW(&A, hc_expr);
    ax->kind = HC_E_TENSOR_ACCESS, ax->type = scalar(HC_F32);
    ax->u.access.tensor = &X, ax->u.access.n = 2, ax->u.access.idx = arena_idx(2, IDX(V(i), V(k)));
    hc_expr *aw = HC_NEW(&A, hc_expr);
    aw->kind = HC_E_TENSOR_ACCESS, aw->type = scalar(HC_F32);
    aw->u.access.tensor = &W, aw->u.access.n = 1, aw->u.access.idx = arena_idx(1, IDX(V(k)));
    hc_expr *sum = hc_reduce(&A, HC_REDUCE_SUM, 1, &k, (int64_t[]){8}, hc_mul(&A, ax, aw));
    hc_expr *ax2 = HC_NEW(&A, hc_expr);
    *ax2 = *ax;
    ax2->u.access.idx = arena_idx(2, IDX(V(p), V(q)));
    hc_expr *mx = hc_reduce(&A, HC_REDUCE_MAX, 2, (hc_var *[]){p, q}, (int64_t[]){4, 8}, ax2);
    hc_var *Y = hc_var_new(&A, "Y", hc_type_tensor_c(&A, HC_F32, 1, (int64_t[]){4},
                                                      HC_SCOPE_GLOBAL));
    hc_stmt *st = hc_store(&A, Y, 1, IDX(V(i)), hc_sub(&A, sum, mx));
    hc_stmt *loop = hc_for(&A, i, I(4), hc_parallel(0), st);
    return hc_func_new(&A, "row_dot", HC_FN_CPU_KERNEL, 1, &Y, loop);
}

static char *print_func(const hc_func *f) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_func(&sb, f);
    return hc_sb_take(&sb);
}

static void test_goldens(void) {
    char *s = print_func(build_cpu_program());
    check_golden("cpu_program", s);
    /* printing twice gives the same text (no state leaks between prints) */
    char *again = print_func(build_cpu_program());
    CHECK_STR(s, again);
    free(s), free(again);

    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_module(&sb, build_cuda_module());
    check_golden("cuda_module", hc_sb_str(&sb));
    hc_sb_free(&sb);

    s = print_func(build_task_level());
    check_golden("task_level", s);
    free(s);
}

static void test_stmt_indent(void) {
    hc_var *i = hc_var_new(&A, "i", scalar(HC_I64));
    hc_stmt *s = hc_for(&A, i, I(3), hc_serial(), hc_seq(&A, 0, NULL));
    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_stmt(&sb, s, 2);
    CHECK_STR(hc_sb_str(&sb), "    for i in range(3):\n      pass\n");
    hc_sb_free(&sb);
}

int main(void) {
    hc_arena_init(&A);
    test_constants();
    test_types();
    test_names();
    test_stmt_indent();
    test_goldens();
    hc_arena_free(&A);
    TEST_DONE();
}
