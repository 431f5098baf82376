/* A select that loads in one branch, inside a 7x5 loop nest: GCC 12.2 at -O3
 * -march=native vectorizes it with wrongly masked loads unless loop if-conversion is off
 * for the function (codegen_c.c). This reproduces the miscompile through our own
 * pipeline and checks every element; and checks that a function without conditional
 * loads keeps if-conversion. */
#include <string.h>

#include "target/cpu/cpu.h"
#include "target/cpu/jit.h"
#include "test.h"

int main(void) {
    hc_arena a;
    hc_arena_init(&a);
    hc_arena *A = &a;
    const int64_t shape[2] = {7, 5};
    hc_var *x = hc_var_new(A, "x", hc_type_tensor_c(A, HC_F32, 2, shape, HC_SCOPE_GLOBAL));
    hc_var *s = hc_var_new(A, "s", hc_type_tensor_c(A, HC_F32, 2, shape, HC_SCOPE_GLOBAL));
    hc_var *o = hc_var_new(A, "o", hc_type_tensor_c(A, HC_F32, 2, shape, HC_SCOPE_GLOBAL));
    hc_builder b;
    hc_builder_init(&b, A);
    HC_FOR(&b, i, "i", hc_int(A, 7), hc_serial()) {
        HC_FOR(&b, j, "j", hc_int(A, 5), hc_serial()) {
            hc_expr *idx[2] = {hc_ref(A, i), hc_ref(A, j)};
            hc_expr *neg = hc_lt(A, hc_load(A, x, 2, idx), hc_f32(A, 0));
            hc_b_store(&b, o, 2, idx, hc_select(A, neg, hc_load(A, s, 2, idx), hc_f32(A, 1)));
        }
    }
    hc_var *params[3] = {x, s, o};
    hc_func *f = hc_func_new(A, "sel", HC_FN_CPU_KERNEL, 3, params, hc_builder_finish(&b));
    hc_var *y = hc_var_new(A, "y", hc_type_tensor_c(A, HC_F32, 2, shape, HC_SCOPE_GLOBAL));
    hc_builder_init(&b, A);
    HC_FOR(&b, i, "i", hc_int(A, 35), hc_serial()) {
        hc_expr *idx[2] = {hc_div(A, hc_ref(A, i), hc_int(A, 5)), hc_mod(A, hc_ref(A, i), hc_int(A, 5))};
        hc_b_store(&b, y, 2, idx, hc_add(A, hc_load(A, x, 2, idx), hc_f32(A, 1)));
    }
    hc_var *params2[2] = {x, y};
    hc_func *g = hc_func_new(A, "plain", HC_FN_CPU_KERNEL, 2, params2, hc_builder_finish(&b));
    hc_func *fs[2] = {f, g};
    hc_module *m = hc_module_new(A, "select_bug", 2, fs);
    char *src = hc_codegen_c(A, m, hc_target_host());
    const char *attr = "no-tree-loop-if-convert";
    const char *first = strstr(src, attr);
    CHECK_MSG(first != NULL, "the kernel with a conditional load has no attribute");
    CHECK_MSG(first && !strstr(first + 1, attr), "the plain kernel got the attribute too");
    hc_jit_lib *lib = NULL;
    hc_error err = {0};
    CHECK_MSG(hc_jit_build(src, NULL, &lib, &err) == HC_OK, "%s", err.msg);
    if (lib) {
        hc_packed_fn fn = (hc_packed_fn)hc_jit_symbol(lib, "sel__packed");
        float xs[35], ss[35], os[35];
        for (int i = 0; i < 35; i++) xs[i] = i % 3 == 0 ? -1.0f : 1.0f, ss[i] = 100.0f + i;
        void *args[3] = {xs, ss, os};
        fn(args);
        int bad = 0;
        for (int i = 0; i < 35; i++) bad += os[i] != (xs[i] < 0 ? ss[i] : 1.0f);
        CHECK_EQ_INT(bad, 0);
        hc_jit_close(lib);
    }
    free(src);
    hc_arena_free(&a);
    TEST_DONE();
}
