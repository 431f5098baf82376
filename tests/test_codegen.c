/* test_codegen.c — programs built with the IR builder, lowered, printed as C, compiled
 * by the JIT and run; results are compared with values computed here. */
#include "target/cpu/cpu.h"
#include "ir/mapping.h"
#include "target/cpu/jit.h"
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static hc_arena A_;
static hc_arena *A = &A_;

#define IDX1(x) ((hc_expr *[]){(x)})
#define REF(v) hc_ref(A, (v))
#define INT(v) hc_int(A, (v))

static hc_var *tensor1(const char *name, hc_dtype d, int64_t n) {
    return hc_var_new(A, name, hc_type_tensor_c(A, d, 1, (int64_t[]){n}, HC_SCOPE_GLOBAL));
}

static hc_expr *ld(hc_var *buf, hc_expr *i) { return hc_load(A, buf, 1, IDX1(i)); }
static hc_expr *addr(hc_var *buf, hc_expr *i) { return hc_address(A, buf, 1, IDX1(i)); }

static hc_func *kernel(const char *name, int n, hc_var **params, hc_stmt *body) {
    return hc_func_new(A, name, HC_FN_CPU_KERNEL, n, params, body);
}

/* Generate, compile and load a module of kernels for target t; NULL on failure. */
static hc_jit_lib *build(int n, hc_func **fs, const hc_target *t, char **src_out) {
    hc_module *m = hc_module_new(A, "test", n, fs);
    char *src = hc_codegen_c(A, m, t);
    hc_jit_options opt = {.cflags = t->cflags};
    hc_jit_lib *lib = NULL;
    hc_error err;
    hc_status st = hc_jit_build(src, &opt, &lib, &err);
    CHECK_MSG(st == HC_OK, "%s", err.msg);
    if (src_out) *src_out = src;
    else free(src);
    return st == HC_OK ? lib : NULL;
}

/* The generated C compiles without warnings (unused variables aside: programs may
 * declare what they do not use). */
static void check_warning_free(const char *src, const hc_target *t) {
    char flags[256];
    snprintf(flags, sizeof flags, "%s -Wall -Wextra -Werror -Wno-unused", t->cflags);
    hc_jit_options opt = {.cflags = flags};
    hc_jit_lib *lib = NULL;
    hc_error err;
    CHECK_MSG(hc_jit_build(src, &opt, &lib, &err) == HC_OK, "%s: %s", hc_isa_name(t->caps.isa),
              err.msg);
    hc_jit_close(lib);
}

static hc_packed_fn packed(hc_jit_lib *lib, const char *name) {
    char sym[128];
    snprintf(sym, sizeof sym, "%s__packed", name);
    hc_packed_fn f = (hc_packed_fn)hc_jit_symbol(lib, sym);
    CHECK_MSG(f != NULL, "missing %s", sym);
    return f;
}

/* ---- scalar programs ------------------------------------------------------------- */
/* out[i] = a[i] * 2 + 1 for i < n (n a scalar parameter, here 37: no multiple of
 * anything) and a parallel loop out2[i] = i * 3. */
static hc_func *f_elementwise(void) {
    hc_var *a = tensor1("a", HC_F32, 37), *out = tensor1("out", HC_F32, 37);
    hc_var *n = hc_var_new(A, "n", hc_type_scalar(HC_I64));
    hc_var *out2 = tensor1("out2", HC_I64, 1000);
    hc_builder b;
    hc_builder_init(&b, A);
    HC_FOR(&b, i, "i", REF(n), hc_serial()) {
        hc_b_store(&b, out, 1, IDX1(REF(i)),
                   hc_add(A, hc_mul(A, ld(a, REF(i)), hc_f32(A, 2)), hc_f32(A, 1)));
    }
    HC_FOR(&b, i, "i", INT(1000), hc_parallel(0)) {
        hc_b_store(&b, out2, 1, IDX1(REF(i)), hc_mul(A, REF(i), INT(3)));
    }
    HC_FOR(&b, i, "i", INT(10), hc_parallel(2)) {
        hc_b_store(&b, out2, 1, IDX1(REF(i)), hc_add(A, hc_mul(A, REF(i), INT(3)), INT(1)));
    }
    return kernel("elementwise", 4, (hc_var *[]){a, out, n, out2}, hc_builder_finish(&b));
}

static void run_elementwise(hc_jit_lib *lib) {
    float a[37], out[37];
    int64_t out2[1000], n = 37;
    for (int i = 0; i < 37; i++) a[i] = (float)i * 0.5f - 3, out[i] = -1;
    packed(lib, "elementwise")((void *[]){a, out, &n, out2});
    int bad = 0;
    for (int i = 0; i < 37; i++) bad += out[i] != a[i] * 2 + 1;
    for (int i = 0; i < 1000; i++) bad += out2[i] != i * 3 + (i < 10);
    CHECK_EQ_INT(bad, 0);
}

/* Full unroll of a loop whose body declares a variable, plus a let/if/select. */
static hc_func *f_control(void) {
    hc_var *a = tensor1("a", HC_F32, 16), *out = tensor1("out", HC_F32, 16);
    hc_var *u = tensor1("u", HC_I32, 4);
    hc_builder b;
    hc_builder_init(&b, A);
    HC_FOR(&b, j, "j", INT(4), hc_unroll(0)) {
        hc_var *t = hc_b_declare(&b, "t", hc_type_scalar(HC_I32),
                                 hc_cast(A, hc_type_scalar(HC_I32), hc_mul(A, REF(j), REF(j))));
        hc_b_store(&b, u, 1, IDX1(REF(j)), hc_add(A, REF(t), hc_i32(A, 5)));
    }
    HC_FOR(&b, i, "i", INT(16), hc_unroll(4)) {
        hc_var *t = hc_var_new(A, "t", hc_type_scalar(HC_F32));
        hc_expr *neg = hc_unary(A, HC_OP_NEG, REF(t));
        hc_expr *even = hc_eq(A, hc_mod(A, REF(i), INT(2)), INT(0));
        hc_stmt *then_s = hc_store(A, out, 1, IDX1(REF(i)), hc_select(A, even, REF(t), neg));
        hc_stmt *else_s = hc_store(A, out, 1, IDX1(REF(i)), hc_f32(A, 0));
        hc_expr *big = hc_binary(A, HC_OP_GT, REF(t), hc_f32(A, 3));
        hc_b_emit(&b, hc_let(A, t, hc_mul(A, ld(a, REF(i)), hc_f32(A, 2)),
                             hc_if(A, big, then_s, else_s)));
    }
    return kernel("control", 3, (hc_var *[]){a, out, u}, hc_builder_finish(&b));
}

static void run_control(hc_jit_lib *lib, const char *src) {
    float a[16], out[16];
    int32_t u[4];
    for (int i = 0; i < 16; i++) a[i] = (float)i - 4;
    packed(lib, "control")((void *[]){a, out, u});
    int bad = 0;
    for (int i = 0; i < 16; i++) {
        float t = a[i] * 2, want = t > 3 ? (i % 2 == 0 ? t : -t) : 0;
        bad += out[i] != want;
    }
    for (int j = 0; j < 4; j++) bad += u[j] != j * j + 5;
    CHECK_EQ_INT(bad, 0);
    CHECK(strstr(src, "#pragma GCC unroll 4") != NULL);
    /* the fully unrolled loop is gone: no loop over an induction variable named j */
    const char *body = strstr(src, "void control("), *end = strstr(src, "void control__packed");
    CHECK(body && end);
    const char *loop = body ? strstr(body, "for (int64_t j_") : NULL;
    CHECK(!loop || loop > end);
}

/* ---- casts ----------------------------------------------------------------------- */
static float bf16_round(float f) { /* reference: round to nearest even, then back */
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&f, &u, 4);
    return f;
}

#define NCAST 12
static hc_func *f_casts(void) {
    hc_var *x = tensor1("x", HC_F32, NCAST);
    hc_var *h = tensor1("h", HC_F32, NCAST), *bf = tensor1("bf", HC_F32, NCAST);
    hc_var *bfs = tensor1("bfs", HC_BF16, NCAST), *i32 = tensor1("i32", HC_I32, NCAST);
    hc_var *back = tensor1("back", HC_F64, NCAST), *bo = tensor1("bo", HC_U8, NCAST);
    hc_var *hsum = tensor1("hsum", HC_F32, NCAST);
    const hc_type *f32 = hc_type_scalar(HC_F32), *f16 = hc_type_scalar(HC_F16);
    const hc_type *b16 = hc_type_scalar(HC_BF16);
    hc_builder b;
    hc_builder_init(&b, A);
    HC_FOR(&b, i, "i", INT(NCAST), hc_serial()) {
        hc_expr *xi = ld(x, REF(i));
        hc_b_store(&b, h, 1, IDX1(REF(i)), hc_cast(A, f32, hc_cast(A, f16, xi)));
        hc_b_store(&b, bfs, 1, IDX1(REF(i)), hc_cast(A, b16, xi));
        hc_b_store(&b, bf, 1, IDX1(REF(i)), hc_cast(A, f32, ld(bfs, REF(i))));
        hc_expr *iv = hc_cast(A, hc_type_scalar(HC_I32), xi);
        hc_b_store(&b, i32, 1, IDX1(REF(i)), iv);
        hc_b_store(&b, back, 1, IDX1(REF(i)), hc_cast(A, hc_type_scalar(HC_F64), iv));
        hc_b_store(&b, bo, 1, IDX1(REF(i)),
                   hc_cast(A, hc_type_scalar(HC_U8), hc_cast(A, hc_type_scalar(HC_BOOL), xi)));
        /* f16 arithmetic: (h + h) in half precision */
        hc_expr *hh = hc_cast(A, f16, xi);
        hc_b_store(&b, hsum, 1, IDX1(REF(i)), hc_cast(A, f32, hc_add(A, hh, hh)));
    }
    return kernel("casts", 8, (hc_var *[]){x, h, bf, bfs, i32, back, bo, hsum},
                  hc_builder_finish(&b));
}

static void run_casts(hc_jit_lib *lib) {
    float x[NCAST] = {0, 1, -1.5f, 2.7f, -2.7f, 1000.25f, 3.14159265f, 1e-3f,
                      65504, 1.00390625f, -0.0f, 123456.789f};
    float h[NCAST], bf[NCAST], hsum[NCAST];
    uint16_t bfs[NCAST];
    int32_t i32[NCAST];
    double back[NCAST];
    uint8_t bo[NCAST];
    packed(lib, "casts")((void *[]){x, h, bf, bfs, i32, back, bo, hsum});
    int bad = 0;
    for (int i = 0; i < NCAST; i++) {
        float want_h = (float)(_Float16)x[i];
        bad += h[i] != want_h;
        bad += bf[i] != bf16_round(x[i]);
        bad += i32[i] != (int32_t)x[i];
        bad += back[i] != (double)(int32_t)x[i];
        bad += bo[i] != (x[i] != 0);
        bad += hsum[i] != (float)(_Float16)((_Float16)x[i] + (_Float16)x[i]);
        if (bad) fprintf(stderr, "cast mismatch at %d (x=%g)\n", i, x[i]), bad = 0, test_failed++;
    }
    CHECK(bf[9] == 1.0f); /* 1 + 2^-8 is a tie: rounds to the even 1.0 */
    CHECK(h[2] == -1.5f);
}

/* ---- math ------------------------------------------------------------------------ */
static const hc_prim math_prims[] = {
    HC_PRIM_EXP, HC_PRIM_LOG, HC_PRIM_SQRT, HC_PRIM_RSQRT, HC_PRIM_ABS, HC_PRIM_FLOOR,
    HC_PRIM_CEIL, HC_PRIM_ROUND, HC_PRIM_TANH, HC_PRIM_ERF, HC_PRIM_SIGMOID, HC_PRIM_SIN,
    HC_PRIM_ATAN, HC_PRIM_POW, HC_PRIM_FMOD,
};
#define NPRIM ((int)HC_ARRAY_LEN(math_prims))
#define NMATH 8

static double ref_math(hc_prim p, double x, double y) {
    switch (p) {
    case HC_PRIM_EXP: return exp(x);
    case HC_PRIM_LOG: return log(x);
    case HC_PRIM_SQRT: return sqrt(x);
    case HC_PRIM_RSQRT: return 1 / sqrt(x);
    case HC_PRIM_ABS: return fabs(x);
    case HC_PRIM_FLOOR: return floor(x);
    case HC_PRIM_CEIL: return ceil(x);
    case HC_PRIM_ROUND: return nearbyint(x);
    case HC_PRIM_TANH: return tanh(x);
    case HC_PRIM_ERF: return erf(x);
    case HC_PRIM_SIGMOID: return 1 / (1 + exp(-x));
    case HC_PRIM_SIN: return sin(x);
    case HC_PRIM_ATAN: return atan(x);
    case HC_PRIM_POW: return pow(x, y);
    case HC_PRIM_FMOD: return fmod(x, y);
    default: return NAN;
    }
}

/* out[p][i] = prim(x[i], y[i]) in dtype d (f32 or f64). */
static hc_func *f_math(const char *name, hc_dtype d) {
    hc_var *x = tensor1("x", d, NMATH), *y = tensor1("y", d, NMATH);
    hc_var *out = tensor1("out", d, NMATH * NPRIM);
    hc_builder b;
    hc_builder_init(&b, A);
    HC_FOR(&b, i, "i", INT(NMATH), hc_serial()) {
        for (int p = 0; p < NPRIM; p++) {
            bool two = hc_prim_arity(math_prims[p]) == 2;
            hc_expr *v = hc_math(A, math_prims[p], ld(x, REF(i)), two ? ld(y, REF(i)) : NULL);
            hc_b_store(&b, out, 1, IDX1(hc_add(A, INT(p * NMATH), REF(i))), v);
        }
    }
    return kernel(name, 3, (hc_var *[]){x, y, out}, hc_builder_finish(&b));
}

static void run_math(hc_jit_lib *lib) {
    double xs[NMATH] = {0.5, 1.5, 2.5, 3.7, 0.01, 7.25, 1.0, 2.0};
    double ys[NMATH] = {2, 0.5, 1.5, 2, 3, -1, 0.3, 0.75};
    float xf[NMATH], yf[NMATH], of[NMATH * NPRIM];
    double od[NMATH * NPRIM];
    for (int i = 0; i < NMATH; i++) xf[i] = (float)xs[i], yf[i] = (float)ys[i];
    packed(lib, "math_f32")((void *[]){xf, yf, of});
    packed(lib, "math_f64")((void *[]){xs, ys, od});
    for (int p = 0; p < NPRIM; p++) {
        for (int i = 0; i < NMATH; i++) {
            double rd = ref_math(math_prims[p], xs[i], ys[i]);
            double rf = ref_math(math_prims[p], xf[i], yf[i]);
            CHECK_MSG(fabs(od[p * NMATH + i] - rd) <= 1e-14 * (1 + fabs(rd)), "%s f64(%g)",
                      hc_prim_name(math_prims[p]), xs[i]);
            CHECK_MSG(fabs(of[p * NMATH + i] - rf) <= 2e-6 * (1 + fabs(rf)), "%s f32(%g): %g vs %g",
                      hc_prim_name(math_prims[p]), xs[i], of[p * NMATH + i], rf);
        }
    }
    /* round is half to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2 */
    int r = 7 * NMATH;
    CHECK(math_prims[7] == HC_PRIM_ROUND);
    CHECK(of[r + 0] == 0 && of[r + 1] == 2 && of[r + 2] == 2);
}

/* f32 exp, tanh and erf are the generated code's own (vectorizable) ones: sweep them
 * against libm in double. out = {exp(x), tanh(x / 8), erf(x / 16), log(|x|)}. */
#define NEXP 4100
static hc_func *f_exp_sweep(void) {
    hc_var *x = tensor1("x", HC_F32, NEXP), *out = tensor1("out", HC_F32, 4 * NEXP);
    hc_builder b;
    hc_builder_init(&b, A);
    HC_FOR(&b, i, "i", INT(NEXP), hc_serial()) {
        hc_expr *xi = ld(x, REF(i));
        hc_b_store(&b, out, 1, IDX1(REF(i)), hc_math(A, HC_PRIM_EXP, xi, NULL));
        hc_b_store(&b, out, 1, IDX1(hc_add(A, REF(i), INT(NEXP))),
                   hc_math(A, HC_PRIM_TANH, hc_div(A, xi, hc_f32(A, 8)), NULL));
        hc_b_store(&b, out, 1, IDX1(hc_add(A, REF(i), INT(2 * NEXP))),
                   hc_math(A, HC_PRIM_ERF, hc_div(A, xi, hc_f32(A, 16)), NULL));
        hc_b_store(&b, out, 1, IDX1(hc_add(A, REF(i), INT(3 * NEXP))),
                   hc_math(A, HC_PRIM_LOG, hc_math(A, HC_PRIM_ABS, xi, NULL), NULL));
    }
    return kernel("exp_sweep", 2, (hc_var *[]){x, out}, hc_builder_finish(&b));
}

/* |got - ref| in units of the last place of ref rounded to float */
static double ulps(float got, double ref) {
    float rf = (float)ref;
    if (got == rf) return 0;
    float a = fabsf(rf);
    return fabs((double)got - ref) / (double)(nextafterf(a, INFINITY) - a);
}

static void run_exp_sweep(hc_jit_lib *lib) {
    static float x[NEXP], out[4 * NEXP];
    for (int i = 0; i < NEXP - 4; i++) x[i] = -106.0f + 196.0f * (float)i / (NEXP - 4);
    x[2000] = 1e-40f, x[2001] = 1.0f + 1e-7f, x[2002] = 0.75f; /* subnormal, near 1 */
    x[NEXP - 4] = NAN, x[NEXP - 3] = INFINITY, x[NEXP - 2] = -INFINITY, x[NEXP - 1] = 0;
    packed(lib, "exp_sweep")((void *[]){x, out});
    double worst[4] = {0, 0, 0, 0};
    for (int i = 0; i < NEXP - 4; i++) {
        worst[0] = fmax(worst[0], ulps(out[i], exp((double)x[i])));
        worst[1] = fmax(worst[1], ulps(out[NEXP + i], tanh((double)(x[i] / 8))));
        worst[2] = fmax(worst[2], ulps(out[2 * NEXP + i], erf((double)(x[i] / 16))));
        worst[3] = fmax(worst[3], ulps(out[3 * NEXP + i], log(fabs((double)x[i]))));
    }
    CHECK_MSG(worst[0] <= 1, "exp: %g ulp", worst[0]);
    CHECK_MSG(worst[1] <= 2, "tanh: %g ulp", worst[1]);
    CHECK_MSG(worst[2] <= 2, "erf: %g ulp", worst[2]); /* 1.57 by scripts/fit_erf.py */
    CHECK_MSG(worst[3] <= 2, "log: %g ulp", worst[3]);
    const float *lg = out + 4 * NEXP - 4; /* log |nan|, |inf|, |-inf|, 0 */
    CHECK(isnan(lg[0]) && lg[1] == INFINITY && lg[2] == INFINITY && lg[3] == -INFINITY);
    for (int k = 0; k < 3; k++) {
        const float *o = out + k * NEXP + NEXP - 4;
        CHECK_MSG(isnan(o[0]) && o[3] == (k == 0 ? 1 : 0), "special values of %d", k);
        CHECK_MSG(k == 0 ? (isinf(o[1]) && o[2] == 0) : (o[1] == 1 && o[2] == -1),
                  "prim %d: f(inf) = %g, f(-inf) = %g", k, o[1], o[2]);
    }
}

/* The same functions on whole vectors (emit_c.c, vmath_family): vectors of the target's
 * f32 lanes, out[p][i] = prim_p(x[p][i]) for exp, tanh, erf, log and sigmoid, against libm
 * in double over the scalar sweep's ranges plus special values; the source must call the
 * inline family (no hc_vm helper). Every ISA is emitted and compiled; those this CPU has
 * run. */
enum { NVP = 5, NVX = 4096 + 32 };
static const hc_prim vec_prims[NVP] = {HC_PRIM_EXP, HC_PRIM_TANH, HC_PRIM_ERF, HC_PRIM_LOG,
                                       HC_PRIM_SIGMOID};

static hc_func *f_vec_math(int lanes) {
    hc_var *x = tensor1("x", HC_F32, NVP * NVX), *out = tensor1("out", HC_F32, NVP * NVX);
    const hc_type *vt = hc_type_vector(A, HC_F32, lanes);
    hc_builder b;
    hc_builder_init(&b, A);
    HC_FOR(&b, i, "i", INT(NVX / lanes), hc_serial()) {
        for (int p = 0; p < NVP; p++) {
            hc_expr *off = hc_add(A, INT(p * NVX), hc_mul(A, REF(i), INT(lanes)));
            hc_expr *v = hc_call(A, HC_PRIM_VLOAD, vt, 1, (hc_expr *[]){addr(x, off)});
            hc_b_eval(&b, hc_call(A, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2,
                                  (hc_expr *[]){addr(out, off), hc_math(A, vec_prims[p], v, NULL)}));
        }
    }
    return kernel("vec_math", 2, (hc_var *[]){x, out}, hc_builder_finish(&b));
}

static double ref_vec(int p, double x) {
    switch (p) {
    case 0: return exp(x);
    case 1: return tanh(x);
    case 2: return erf(x);
    case 3: return log(x);
    default: return 1 / (1 + exp(-x));
    }
}

static void run_vec_math(hc_jit_lib *lib, const char *isa) {
    static float x[NVP * NVX], out[NVP * NVX];
    static const float special[16] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-40f,
                                      1e30f, -1e30f, 88.5f, -87.5f, 1e-7f, 3.93f, -3.93f, 9.0f,
                                      0.55f};
    for (int p = 0; p < NVP; p++) {
        float *xp = x + p * NVX;
        double lo = p == 0 ? -106 : p == 3 ? 0 : -20, hi = p == 0 ? 90 : p == 3 ? 100 : 20;
        for (int i = 0; i < NVX - 32; i++) xp[i] = (float)(lo + (hi - lo) * i / (NVX - 32));
        if (p == 3) /* log: tiny, subnormal and huge arguments too */
            for (int i = 0; i < 512; i++) xp[i] = ldexpf(1.0f + (float)i / 512, i / 2 - 149);
        if (p == 1) { /* tanh: a fine grid over [-9.5, 9.5], its branch points (0.55, 9)
                       * and a spread of other points, each with its float neighbours */
            static const float edge[9] = {0.55f, 9.0f, 0.375f, 0.75f, 1, 1.5f, 2, 3, 6};
            for (int i = 0; i < 2048; i++) xp[i] = -9.5f + 19.0f * (float)i / 2047;
            for (int k = 0; k < 9; k++) {
                xp[2048 + 4 * k] = nextafterf(edge[k], 0), xp[2048 + 4 * k + 1] = edge[k];
                xp[2048 + 4 * k + 2] = nextafterf(edge[k], 10), xp[2048 + 4 * k + 3] = -edge[k];
            }
        }
        if (p == 2) { /* erf: a fine grid over [-4.2, 4.2] and each interval's ends */
            for (int i = 0; i < 2048; i++) xp[i] = -4.2f + 8.4f * (float)i / 2047;
            for (int k = 0; k <= 8; k++) {
                float e = 0.5f * (float)k;
                xp[2048 + 4 * k] = nextafterf(e, 0), xp[2048 + 4 * k + 1] = e;
                xp[2048 + 4 * k + 2] = nextafterf(e, 5), xp[2048 + 4 * k + 3] = -e;
            }
        }
        for (int i = 0; i < 16; i++) xp[NVX - 32 + i] = special[i], xp[NVX - 16 + i] = -special[i];
    }
    packed(lib, "vec_math")((void *[]){x, out});
    static const double bound[NVP] = {1, 2, 2, 2, 2.5}; /* ulp; the scalar sweep's bounds */
    for (int p = 0; p < NVP; p++) {
        double worst = 0;
        int bad = 0;
        for (int i = 0; i < NVX; i++) {
            float xi = x[p * NVX + i], got = out[p * NVX + i];
            double ref = ref_vec(p, xi);
            if (isnan(ref) || isinf(ref) || ref == 0) { /* exact: NaN, inf, 0 */
                bool ok = isnan(ref) ? isnan(got) : got == (float)ref;
                if (!ok && bad++ < 3)
                    fprintf(stderr, "%s %s(%g) = %g, want %g\n", isa,
                            hc_prim_name(vec_prims[p]), xi, got, ref);
                continue;
            }
            worst = fmax(worst, ulps(got, ref));
        }
        CHECK_MSG(!bad && worst <= bound[p], "%s %s: %g ulp, %d wrong special values", isa,
                  hc_prim_name(vec_prims[p]), worst, bad);
    }
}

static void test_vec_math(void) {
    for (int isa = HC_ISA_SCALAR; isa <= HC_ISA_AVX512; isa++) {
        const hc_target *t = hc_target_cpu_emit_only((hc_isa)isa);
        int lanes = hc_target_f32_lanes(t);
        hc_func *f = f_vec_math(lanes);
        char *src = hc_codegen_c(A, hc_module_new(A, "vec_math", 1, &f), t);
        char want[32];
        snprintf(want, sizeof want, "hc_verf_%d(", lanes);
        CHECK_MSG(strstr(src, want) && !strstr(src, "hc_vm0"), "%s: no inline vector math",
                  hc_isa_name(t->caps.isa));
        check_warning_free(src, t);
        free(src);
        if (isa > (int)hc_cpu_isa()) continue;
        hc_jit_lib *lib = build(1, &f, t, NULL);
        if (lib) run_vec_math(lib, hc_isa_name(t->caps.isa)), hc_jit_close(lib);
    }
}

/* ---- heap temporary, mapping, barrier --------------------------------------------- */
static hc_func *f_heap(void) {
    enum { N = 300 };
    hc_var *a = tensor1("a", HC_F32, N), *out = tensor1("out", HC_F32, N);
    hc_builder b;
    hc_builder_init(&b, A);
    hc_var *tmp = hc_b_declare(&b, "tmp", hc_type_tensor_c(A, HC_F32, 1, (int64_t[]){N},
                                                           HC_SCOPE_GLOBAL), NULL);
    HC_FOR(&b, i, "i", INT(N), hc_serial()) {
        hc_b_store(&b, tmp, 1, IDX1(REF(i)), hc_add(A, ld(a, REF(i)), hc_f32(A, 1)));
    }
    HC_FOR(&b, i, "i", INT(N), hc_serial()) {
        hc_b_store(&b, out, 1, IDX1(REF(i)), ld(tmp, hc_sub(A, INT(N - 1), REF(i))));
    }
    return kernel("heap", 2, (hc_var *[]){a, out}, hc_builder_finish(&b));
}

static void run_heap(hc_jit_lib *lib, const char *src) {
    float a[300], out[300];
    for (int i = 0; i < 300; i++) a[i] = (float)i;
    packed(lib, "heap")((void *[]){a, out});
    int bad = 0;
    for (int i = 0; i < 300; i++) bad += out[i] != a[299 - i] + 1;
    CHECK_EQ_INT(bad, 0);
    /* the temporary is slot 0 of the thread's workspace, never freed by the kernel */
    CHECK(strstr(src, "hc_ws_get(0, ") != NULL && strstr(src, "free(tmp_") == NULL);
}

/* spatial(4, 2).repeat(2, 3): 8 workers over a 8 x 6 task grid; each task records the
 * worker that ran it. Workers run as a parallel loop over the worker index. */
static hc_func *f_mapping(void) {
    hc_var *owner = hc_var_new(A, "owner", hc_type_tensor_c(A, HC_I32, 2, (int64_t[]){8, 6},
                                                              HC_SCOPE_GLOBAL));
    const hc_mapping *m = hc_map_compose(A, hc_map_spatial2(A, 4, 2), hc_map_repeat2(A, 2, 3));
    hc_builder b;
    hc_builder_init(&b, A);
    HC_FOR(&b, w, "w", INT(8), hc_parallel(0)) {
        hc_var *ij[2];
        HC_FOR_MAP(&b, m, REF(w), 2, ij, ((const char *[]){"i", "j"})) {
            hc_b_store(&b, owner, 2, ((hc_expr *[]){REF(ij[0]), REF(ij[1])}),
                       hc_cast(A, hc_type_scalar(HC_I32), REF(w)));
        }
    }
    return kernel("mapping", 1, (hc_var *[]){owner}, hc_builder_finish(&b));
}

static void run_mapping(hc_jit_lib *lib) {
    int32_t owner[48];
    for (int i = 0; i < 48; i++) owner[i] = -1;
    packed(lib, "mapping")((void *[]){owner});
    /* worker w = (w / 2, w % 2) of spatial(4,2) owns rows 2*(w/2)..+1, cols 3*(w%2)..+2 */
    int bad = 0;
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 6; j++) bad += owner[i * 6 + j] != (i / 2) * 2 + j / 3;
    CHECK_EQ_INT(bad, 0);
}

/* Two threads: each writes its slot, waits at the barrier, then reads the other's. */
static hc_func *f_barrier(void) {
    hc_var *out = tensor1("out", HC_I64, 2), *nt = tensor1("nt", HC_I64, 2);
    hc_builder b;
    hc_builder_init(&b, A);
    HC_FOR(&b, t, "t", INT(2), hc_parallel(0)) {
        hc_b_store(&b, nt, 1, IDX1(REF(t)), REF(hc_var_builtin(A, HC_BUILTIN_CPU_NUM_THREADS)));
        hc_b_store(&b, out, 1, IDX1(REF(t)), hc_add(A, REF(t), INT(100)));
        hc_b_emit(&b, hc_barrier(A, HC_SCOPE_GLOBAL));
        hc_var *other = hc_b_declare(&b, "other", hc_type_scalar(HC_I64),
                                     ld(out, hc_sub(A, INT(1), REF(t))));
        hc_b_emit(&b, hc_barrier(A, HC_SCOPE_GLOBAL));
        hc_b_store(&b, out, 1, IDX1(REF(t)), REF(other));
    }
    return kernel("barrier", 2, (hc_var *[]){out, nt}, hc_builder_finish(&b));
}

static void run_barrier(hc_jit_lib *lib, const char *src) {
    int64_t out[2] = {0, 0}, nt[2] = {0, 0};
    packed(lib, "barrier")((void *[]){out, nt});
    CHECK_EQ_INT(out[0], 101);
    CHECK_EQ_INT(out[1], 100);
    CHECK_EQ_INT(nt[0], 2);
    CHECK(strstr(src, "#pragma omp barrier") != NULL);
}


/* ---- integers, parameters, layouts ----------------------------------------------- */
/* C integer semantics: narrow types wrap, division truncates, wide constants. */
static hc_func *f_ints(void) {
    hc_var *out = tensor1("out", HC_I64, 12);
    hc_var *x = hc_var_new(A, "x", hc_type_scalar(HC_I32)); /* -7 at run time */
    hc_var *scale = hc_var_new(A, "scale", hc_type_scalar(HC_F64));
    hc_var *flag = hc_var_new(A, "flag", hc_type_scalar(HC_BOOL));
    hc_var *p = hc_var_new(A, "p", hc_type_pointer(A, hc_type_scalar(HC_F32)));
    const hc_type *i8 = hc_type_scalar(HC_I8), *i64 = hc_type_scalar(HC_I64);
    hc_expr *c100 = hc_const(A, HC_I8, (hc_value){.i = 100});
    hc_expr *vals[12] = {
        hc_binary(A, HC_OP_ADD, c100, hc_cast(A, i8, REF(x))), /* 93 */
        /* (i8)100 + 100 wraps */
        hc_binary(A, HC_OP_ADD, hc_cast(A, i8, hc_add(A, REF(x), hc_i32(A, 107))), c100),
        hc_div(A, REF(x), hc_i32(A, 2)),
        hc_mod(A, REF(x), hc_i32(A, 2)),
        hc_binary(A, HC_OP_SHL, hc_cast(A, i64, REF(x)), INT(40)),
        hc_add(A, INT(INT64_C(5000000000)), REF(x)),
        hc_min(A, REF(x), hc_i32(A, 3)),
        hc_max(A, REF(x), hc_i32(A, 3)),
        hc_math(A, HC_PRIM_ABS, REF(x), NULL),
        hc_binary(A, HC_OP_BITXOR, REF(x), hc_i32(A, 0xff)),
        hc_cast(A, i64, hc_mul(A, REF(scale), hc_f64(A, 10))),
        hc_select(A, REF(flag), hc_cast(A, i64, hc_load(A, p, 1, IDX1(INT(1)))), INT(-1)),
    };
    hc_builder b;
    hc_builder_init(&b, A);
    for (int i = 0; i < 12; i++) hc_b_store(&b, out, 1, IDX1(INT(i)), hc_cast(A, i64, vals[i]));
    hc_b_store(&b, p, 1, IDX1(INT(0)), hc_f32(A, 2.5));
    /* pointer arithmetic: q = p + 2; q[0] = 4 */
    hc_var *q = hc_b_declare(&b, "q", p->type, hc_add(A, REF(p), INT(2)));
    hc_b_store(&b, q, 1, IDX1(INT(0)), hc_f32(A, 4));
    return kernel("ints", 5, (hc_var *[]){out, x, scale, flag, p}, hc_builder_finish(&b));
}

static void run_ints(hc_jit_lib *lib) {
    int64_t out[12];
    int32_t x = -7;
    double scale = 4.25;
    bool flag = true;
    float pbuf[3] = {0, 9.75f, 0};
    packed(lib, "ints")((void *[]){out, &x, &scale, &flag, pbuf});
    int64_t want[12] = {93, (int8_t)(int8_t)(100 + 100), -3, -1, (int64_t)-7 * ((int64_t)1 << 40),
                        5000000000 - 7, -7, 3, 7, -7 ^ 0xff, 42, 9};
    for (int i = 0; i < 12; i++) CHECK_MSG(out[i] == want[i], "ints[%d]: %lld vs %lld", i,
                                           (long long)out[i], (long long)want[i]);
    CHECK(pbuf[0] == 2.5f && pbuf[2] == 4.0f);
}

/* Column-major and strided parameters; a REGISTER tensor indexed by a loop variable
 * (cannot be promoted: stays an array); a SHARED tensor (a local array on CPU); a
 * helper function. */
static hc_func *f_layouts(void) {
    hc_expr *shape[2] = {INT(3), INT(4)};
    hc_var *cm = hc_var_new(A, "cm", hc_type_tensor(A, HC_F32, 2, shape,
                                                    hc_layout_col_major(A, 2, shape),
                                                    HC_SCOPE_GLOBAL));
    hc_expr *strides[2] = {INT(10), INT(2)};
    hc_var *st = hc_var_new(A, "st", hc_type_tensor(A, HC_F32, 2, shape,
                                                    hc_layout_strided(A, 2, shape, strides),
                                                    HC_SCOPE_GLOBAL));
    hc_var *out = hc_var_new(A, "out", hc_type_tensor_c(A, HC_F32, 2, (int64_t[]){3, 4},
                                                        HC_SCOPE_GLOBAL));
    hc_builder b;
    hc_builder_init(&b, A);
    hc_var *row = hc_b_declare(&b, "rowbuf", hc_type_tensor_c(A, HC_F32, 1, (int64_t[]){4},
                                                              HC_SCOPE_REGISTER), NULL);
    hc_var *sh = hc_b_declare(&b, "sh", hc_type_tensor_c(A, HC_F32, 1, (int64_t[]){4},
                                                         HC_SCOPE_SHARED), NULL);
    HC_FOR(&b, i, "i", INT(3), hc_serial()) {
        HC_FOR(&b, j, "j", INT(4), hc_serial()) {
            hc_expr *ij[2] = {REF(i), REF(j)};
            hc_b_store(&b, row, 1, IDX1(REF(j)), hc_load(A, cm, 2, ij));
            hc_b_store(&b, sh, 1, IDX1(REF(j)), hc_load(A, st, 2, ij));
        }
        HC_FOR(&b, j, "j", INT(4), hc_serial()) {
            hc_b_store(&b, out, 2, ((hc_expr *[]){REF(i), REF(j)}),
                       hc_add(A, hc_mul(A, ld(row, REF(j)), hc_f32(A, 100)), ld(sh, REF(j))));
        }
    }
    return kernel("layouts", 3, (hc_var *[]){cm, st, out}, hc_builder_finish(&b));
}

static hc_func *f_helper(void) {
    hc_var *o = tensor1("o", HC_F32, 1);
    hc_stmt *body = hc_store(A, o, 1, IDX1(INT(0)), hc_f32(A, 1));
    return hc_func_new(A, "a_helper", HC_FN_CPU_HELPER, 1, (hc_var *[]){o}, body);
}

/* A REGISTER tensor whose address is taken stays an array (and still works). */
static hc_func *f_addressed(void) {
    hc_var *out = tensor1("out", HC_F32, 8);
    const hc_type *vt = hc_type_vector(A, HC_F32, 8);
    hc_builder b;
    hc_builder_init(&b, A);
    hc_var *r = hc_b_declare(&b, "raddr", hc_type_tensor_c(A, HC_F32, 1, (int64_t[]){8},
                                                           HC_SCOPE_REGISTER), NULL);
    HC_FOR(&b, i, "i", INT(8), hc_unroll(0)) {
        hc_b_store(&b, r, 1, IDX1(REF(i)), hc_cast(A, hc_type_scalar(HC_F32), REF(i)));
    }
    hc_expr *v = hc_call(A, HC_PRIM_VLOAD, vt, 1, (hc_expr *[]){addr(r, INT(0))});
    hc_b_eval(&b, hc_call(A, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2,
                          (hc_expr *[]){addr(out, INT(0)), hc_mul(A, v, hc_f32(A, 3))}));
    return kernel("addressed", 1, (hc_var *[]){out}, hc_builder_finish(&b));
}

static void run_addressed(hc_jit_lib *lib, const char *src) {
    float out[8];
    packed(lib, "addressed")((void *[]){out});
    int bad = 0;
    for (int i = 0; i < 8; i++) bad += out[i] != 3.0f * (float)i;
    CHECK_EQ_INT(bad, 0);
    CHECK(strstr(src, "float raddr_") != NULL && strstr(src, "[8] __attribute__") != NULL);
}

/* The lowering pipeline on its own: mappings and unrolled loops are gone, the
 * accumulator tile is promoted to 4 vector locals. */
static int count_stmts(const hc_stmt *s, hc_stmt_kind k, bool tensors_only) {
    if (!s) return 0;
    int n = s->kind == k && (!tensors_only || s->u.decl.var->type->kind == HC_TY_TENSOR);
    switch (s->kind) {
    case HC_S_SEQ:
        for (int i = 0; i < s->u.seq.n; i++) n += count_stmts(s->u.seq.stmts[i], k, tensors_only);
        return n;
    case HC_S_LET: return n + count_stmts(s->u.let.body, k, tensors_only);
    case HC_S_IF:
        return n + count_stmts(s->u.if_.then_s, k, tensors_only) +
               count_stmts(s->u.if_.else_s, k, tensors_only);
    case HC_S_FOR: return n + count_stmts(s->u.for_.body, k, tensors_only);
    case HC_S_FOR_MAPPING: return n + count_stmts(s->u.fmap.body, k, tensors_only);
    default: return n;
    }
}

static void test_lower(hc_func *tile, hc_func *mapping) {
    hc_func *lt = hc_lower_func(A, tile);
    CHECK_EQ_INT(count_stmts(tile->body, HC_S_DECLARE, true), 1);
    CHECK_EQ_INT(count_stmts(lt->body, HC_S_DECLARE, true), 0);
    CHECK_EQ_INT(count_stmts(lt->body, HC_S_DECLARE, false), 4);
    CHECK_EQ_INT(count_stmts(lt->body, HC_S_FOR, false), 1); /* only the k loop is left */
    hc_func *lm = hc_lower_func(A, mapping);
    CHECK_EQ_INT(count_stmts(mapping->body, HC_S_FOR_MAPPING, false), 1);
    CHECK_EQ_INT(count_stmts(lm->body, HC_S_FOR_MAPPING, false), 0);
    hc_error err;
    CHECK_MSG(hc_verify_func(lt, false, &err) == HC_OK, "%s", err.msg);
    CHECK_MSG(hc_verify_func(lm, false, &err) == HC_OK, "%s", err.msg);
}

static void run_layouts(hc_jit_lib *lib, const char *src) {
    float cm[12], st[40], out[12];
    for (int i = 0; i < 12; i++) cm[i] = (float)i;
    for (int i = 0; i < 40; i++) st[i] = (float)i * 0.5f;
    packed(lib, "layouts")((void *[]){cm, st, out});
    int bad = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            bad += out[i * 4 + j] != cm[j * 3 + i] * 100 + st[i * 10 + j * 2];
    CHECK_EQ_INT(bad, 0);
    CHECK(strstr(src, "float rowbuf_") != NULL && strstr(src, "float sh_") != NULL);
    CHECK(strstr(src, "static inline void a_helper(") != NULL);
    CHECK(hc_jit_symbol(lib, "a_helper__packed") == NULL);
}

/* ---- vector comparisons, selects, casts, math ------------------------------------- */
#define VM 5 /* outputs per lane block */
static hc_func *f_vec_misc(const char *name, int lanes) {
    hc_var *a = tensor1("a", HC_F32, lanes), *bb = tensor1("b", HC_F32, lanes);
    hc_var *out = tensor1("out", HC_F32, VM * lanes);
    const hc_type *vt = hc_type_vector(A, HC_F32, lanes);
    const hc_type *it = hc_type_vector(A, HC_I32, lanes);
    hc_builder b;
    hc_builder_init(&b, A);
    hc_var *x = hc_b_declare(&b, "x", vt, hc_call(A, HC_PRIM_VLOAD, vt, 1,
                                                   (hc_expr *[]){addr(a, INT(0))}));
    hc_var *y = hc_b_declare(&b, "y", vt, hc_call(A, HC_PRIM_VLOAD, vt, 1,
                                                   (hc_expr *[]){addr(bb, INT(0))}));
    hc_expr *lt = hc_lt(A, REF(x), REF(y));
    hc_expr *res[VM] = {
        hc_select(A, lt, REF(x), REF(y)),
        hc_cast(A, vt, hc_cast(A, it, REF(x))),
        hc_math(A, HC_PRIM_EXP, REF(x), NULL),
        hc_cast(A, vt, hc_and(A, lt, hc_binary(A, HC_OP_GT, REF(x), hc_f32(A, -1)))),
        hc_sub(A, hc_mul(A, REF(x), hc_f64(A, 2)), hc_i32(A, 1)),
    };
    for (int k = 0; k < VM; k++)
        hc_b_eval(&b, hc_call(A, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2,
                              (hc_expr *[]){addr(out, INT(k * lanes)), res[k]}));
    return kernel(name, 3, (hc_var *[]){a, bb, out}, hc_builder_finish(&b));
}

static void run_vec_misc(hc_jit_lib *lib, const char *name, int lanes, const char *isa) {
    float a[16], bv[16], out[VM * 16];
    for (int i = 0; i < lanes; i++)
        a[i] = (float)(i % 5) * 0.75f - 1.6f, bv[i] = (float)(i % 3) - 1;
    packed(lib, name)((void *[]){a, bv, out});
    int bad = 0;
    for (int i = 0; i < lanes; i++) {
        bad += out[i] != (a[i] < bv[i] ? a[i] : bv[i]);
        bad += out[lanes + i] != (float)(int32_t)a[i];
        bad += fabsf(out[2 * lanes + i] - expf(a[i])) > 1e-6f * expf(a[i]);
        bad += out[3 * lanes + i] != (float)(a[i] < bv[i] && a[i] > -1);
        bad += out[4 * lanes + i] != a[i] * 2 - 1;
    }
    CHECK_MSG(bad == 0, "%s %s: %d bad", isa, name, bad);
}

/* ---- vectors --------------------------------------------------------------------- */
#define VN 37 /* elements: a multiple of neither 8 nor 16 */

/* out[i] = a[i] * s + b[i] with masked tails; red = {sum, max, min} of a. */
static hc_func *f_vector(const char *name, int lanes) {
    hc_var *a = tensor1("a", HC_F32, VN), *bb = tensor1("b", HC_F32, VN);
    hc_var *out = tensor1("out", HC_F32, VN), *red = tensor1("red", HC_F32, 3);
    hc_var *s = hc_var_new(A, "s", hc_type_scalar(HC_F32));
    const hc_type *vt = hc_type_vector(A, HC_F32, lanes);
    hc_builder b;
    hc_builder_init(&b, A);
    hc_var *acc = hc_b_declare(&b, "acc", vt, hc_call(A, HC_PRIM_VBROADCAST, vt, 1,
                                                        (hc_expr *[]){hc_f32(A, 0)}));
    hc_var *mx = hc_b_declare(&b, "mx", vt, hc_call(A, HC_PRIM_VBROADCAST, vt, 1,
                                                     (hc_expr *[]){hc_f32(A, -1e30)}));
    hc_var *mn = hc_b_declare(&b, "mn", vt, hc_call(A, HC_PRIM_VBROADCAST, vt, 1,
                                                     (hc_expr *[]){hc_f32(A, 1e30)}));
    int64_t chunks = (VN + lanes - 1) / lanes;
    HC_FOR(&b, i, "i", INT(chunks), hc_serial()) {
        hc_expr *base = hc_mul(A, REF(i), INT(lanes));
        hc_expr *rem = hc_sub(A, INT(VN), base);
        hc_expr *va = hc_call(A, HC_PRIM_VLOAD_MASK, vt, 2, (hc_expr *[]){addr(a, base), rem});
        hc_expr *vb = hc_call(A, HC_PRIM_VLOAD_MASK, vt, 2, (hc_expr *[]){addr(bb, base), rem});
        hc_expr *vs = hc_call(A, HC_PRIM_VBROADCAST, vt, 1, (hc_expr *[]){REF(s)});
        hc_var *x = hc_b_declare(&b, "x", vt, va);
        hc_expr *f = hc_call(A, HC_PRIM_VFMA, vt, 3, (hc_expr *[]){REF(x), vs, vb});
        hc_b_eval(&b, hc_call(A, HC_PRIM_VSTORE_MASK, hc_type_scalar(HC_VOID), 3,
                              (hc_expr *[]){addr(out, base), f, rem}));
        hc_b_assign(&b, acc, hc_add(A, REF(acc), REF(x)));
        /* lanes past the tail hold 0 after the masked load: keep them out of max/min */
        HC_IF(&b, hc_le(A, INT(lanes), rem)) {
            hc_b_assign(&b, mx, hc_max(A, REF(mx), REF(x)));
            hc_b_assign(&b, mn, hc_min(A, REF(mn), REF(x)));
        }
    }
    const hc_type *f32 = hc_type_scalar(HC_F32);
    hc_b_store(&b, red, 1, IDX1(INT(0)), hc_call(A, HC_PRIM_VREDUCE_ADD, f32, 1,
                                                 (hc_expr *[]){REF(acc)}));
    hc_b_store(&b, red, 1, IDX1(INT(1)), hc_call(A, HC_PRIM_VREDUCE_MAX, f32, 1,
                                                 (hc_expr *[]){REF(mx)}));
    hc_b_store(&b, red, 1, IDX1(INT(2)), hc_call(A, HC_PRIM_VREDUCE_MIN, f32, 1,
                                                 (hc_expr *[]){REF(mn)}));
    return kernel(name, 5, (hc_var *[]){a, bb, out, red, s}, hc_builder_finish(&b));
}

static void run_vector(hc_jit_lib *lib, const char *name, int lanes, const char *isa) {
    float a[VN + 16], bv[VN + 16], out[VN + 16], red[3], s = 1.5f;
    for (int i = 0; i < VN + 16; i++) a[i] = (float)((i * 7) % 11) - 5, bv[i] = (float)i;
    for (int i = 0; i < VN + 16; i++) out[i] = -777;
    packed(lib, name)((void *[]){a, bv, out, red, &s});
    int bad = 0;
    for (int i = 0; i < VN; i++) bad += fabsf(out[i] - (a[i] * s + bv[i])) > 1e-5f;
    for (int i = VN; i < VN + 16; i++) bad += out[i] != -777; /* masked tail untouched */
    CHECK_MSG(bad == 0, "%s lanes %d: %d bad", isa, lanes, bad);
    float sum = 0, mx = -1e30f, mn = 1e30f;
    int full = VN / lanes * lanes;
    for (int i = 0; i < VN; i++) sum += a[i];
    for (int i = 0; i < full; i++) mx = fmaxf(mx, a[i]), mn = fminf(mn, a[i]);
    CHECK_MSG(fabsf(red[0] - sum) < 1e-4f, "%s sum %g vs %g", isa, red[0], sum);
    CHECK_MSG(red[1] == mx && red[2] == mn, "%s max/min %g %g vs %g %g", isa, red[1], red[2],
              mx, mn);
}

/* Masked stores of every count: slot c (SC_STRIDE apart) gets lanes [0, c - 1) of
 * src + 100 * c, for c - 1 = -1 .. lanes + 1 (a run-time count, the loop variable), and
 * the last slot a constant count of 3. */
#define SC_SLOTS(lanes) ((lanes) + 4)
#define SC_STRIDE(lanes) ((lanes) + 4)

static int occurrences(const char *s, const char *what) {
    int n = 0;
    for (const char *q = strstr(s, what); q; q = strstr(q + 1, what)) n++;
    return n;
}

static hc_func *f_store_counts(const char *name, int lanes) {
    int stride = SC_STRIDE(lanes), slots = SC_SLOTS(lanes);
    hc_var *src = tensor1("src", HC_F32, lanes);
    hc_var *out = tensor1("out", HC_F32, (int64_t)stride * (slots + 1));
    const hc_type *vt = hc_type_vector(A, HC_F32, lanes);
    hc_builder b;
    hc_builder_init(&b, A);
    hc_expr *v0 = hc_call(A, HC_PRIM_VLOAD, vt, 1, (hc_expr *[]){addr(src, INT(0))});
    HC_FOR(&b, c, "c", INT(slots), hc_serial()) {
        hc_expr *add = hc_call(A, HC_PRIM_VBROADCAST, vt, 1,
                               (hc_expr *[]){hc_cast(A, hc_type_scalar(HC_F32), hc_mul(A, REF(c), INT(100)))});
        hc_b_eval(&b, hc_call(A, HC_PRIM_VSTORE_MASK, hc_type_scalar(HC_VOID), 3,
                              (hc_expr *[]){addr(out, hc_mul(A, REF(c), INT(stride))),
                                            hc_add(A, v0, add), hc_sub(A, REF(c), INT(1))}));
    }
    hc_b_eval(&b, hc_call(A, HC_PRIM_VSTORE_MASK, hc_type_scalar(HC_VOID), 3,
                          (hc_expr *[]){addr(out, INT((int64_t)slots * stride)), v0, INT(3)}));
    return kernel(name, 2, (hc_var *[]){src, out}, hc_builder_finish(&b));
}

static void run_store_counts(hc_jit_lib *lib, const char *name, int lanes, const char *isa) {
    int stride = SC_STRIDE(lanes), slots = SC_SLOTS(lanes), n = stride * (slots + 1);
    float src[16], out[SC_STRIDE(16) * (SC_SLOTS(16) + 1)];
    for (int l = 0; l < lanes; l++) src[l] = (float)(l + 1);
    for (int i = 0; i < n; i++) out[i] = -777;
    packed(lib, name)((void *[]){src, out});
    int bad = 0;
    for (int c = 0; c <= slots; c++) {
        int cnt = c == slots ? 3 : HC_MAX(0, HC_MIN(c - 1, lanes));
        float add = c == slots ? 0 : 100.0f * (float)c;
        for (int l = 0; l < stride; l++) {
            float want = l < cnt ? src[l] + add : -777;
            if (out[c * stride + l] != want) {
                if (bad++ < 4)
                    fprintf(stderr, "%s %s: slot %d lane %d: %g, want %g\n", isa, name, c, l,
                            out[c * stride + l], want);
            }
        }
    }
    CHECK_MSG(bad == 0, "%s %s: %d bad lanes", isa, name, bad);
}

/* On AVX2 a masked store is plain stores of the valid lanes (hc_store8_n), never
 * VMASKMOVPS (microcoded on AMD: 15 ns a store on Zen 3); with AVX-512 a k-masked one. */
static void test_store_counts(void) {
    for (int isa = HC_ISA_SCALAR; isa <= HC_ISA_AVX512; isa++) {
        const hc_target *t = hc_target_cpu_emit_only((hc_isa)isa);
        hc_func *fs[2] = {f_store_counts("sc8", 8), f_store_counts("sc16", 16)};
        char *src = hc_codegen_c(A, hc_module_new(A, "store_counts", 2, fs), t);
        CHECK_MSG(!strstr(src, "_mm256_maskstore_ps"), "%s: VMASKMOVPS store", hc_isa_name(isa));
        /* calls, past the prelude's definition (AVX2 and AVX-512 emit it) */
        CHECK_EQ_INT(occurrences(src, "hc_store8_n(") > occurrences(src, "void hc_store8_n("),
                     isa == HC_ISA_AVX2);
        CHECK_EQ_INT(strstr(src, "_mm256_mask_storeu_ps(") != NULL, isa == HC_ISA_AVX512);
        CHECK_EQ_INT(strstr(src, "_mm512_mask_storeu_ps(") != NULL, isa == HC_ISA_AVX512);
        check_warning_free(src, t);
        free(src);
        if (isa > (int)hc_cpu_isa()) continue;
        hc_jit_lib *lib = build(2, fs, t, NULL);
        if (lib) {
            run_store_counts(lib, "sc8", 8, hc_isa_name(isa));
            run_store_counts(lib, "sc16", 16, hc_isa_name(isa));
            hc_jit_close(lib);
        }
    }
}

/* A 2 x 2 tile of f32xL accumulators in a REGISTER tensor, indexed only by fully
 * unrolled loop variables: C[2][2L] = A[2][K] x B[K][2L]. */
static hc_func *f_regtile(const char *name, int lanes) {
    enum { K = 5 };
    int nc = 2 * lanes;
    hc_var *a = tensor1("a", HC_F32, 2 * K), *bm = tensor1("bm", HC_F32, K * nc);
    hc_var *c = tensor1("c", HC_F32, 2 * nc);
    const hc_type *vt = hc_type_vector(A, HC_F32, lanes);
    hc_builder b;
    hc_builder_init(&b, A);
    hc_expr *two[2] = {INT(2), INT(2)};
    hc_var *acc = hc_b_declare(&b, "acc", hc_type_tensor_vec(A, HC_F32, lanes, 2, two, NULL,
                                                              HC_SCOPE_REGISTER), NULL);
    HC_FOR(&b, i, "i", INT(2), hc_unroll(0)) {
        HC_FOR(&b, j, "j", INT(2), hc_unroll(0)) {
            hc_b_store(&b, acc, 2, ((hc_expr *[]){REF(i), REF(j)}),
                       hc_call(A, HC_PRIM_VBROADCAST, vt, 1, (hc_expr *[]){hc_f32(A, 0)}));
        }
    }
    HC_FOR(&b, k, "k", INT(K), hc_serial()) {
        HC_FOR(&b, i, "i", INT(2), hc_unroll(0)) {
            hc_expr *aik = ld(a, hc_add(A, hc_mul(A, REF(i), INT(K)), REF(k)));
            hc_expr *ai = hc_call(A, HC_PRIM_VBROADCAST, vt, 1, (hc_expr *[]){aik});
            HC_FOR(&b, j, "j", INT(2), hc_unroll(0)) {
                hc_expr *boff =
                    hc_add(A, hc_mul(A, REF(k), INT(nc)), hc_mul(A, REF(j), INT(lanes)));
                hc_expr *bj = hc_call(A, HC_PRIM_VLOAD, vt, 1, (hc_expr *[]){addr(bm, boff)});
                hc_expr *ij[2] = {REF(i), REF(j)};
                hc_expr *old = hc_load(A, acc, 2, ij);
                hc_b_store(&b, acc, 2, ij,
                           hc_call(A, HC_PRIM_VFMA, vt, 3, (hc_expr *[]){ai, bj, old}));
            }
        }
    }
    HC_FOR(&b, i, "i", INT(2), hc_unroll(0)) {
        HC_FOR(&b, j, "j", INT(2), hc_unroll(0)) {
            hc_expr *coff = hc_add(A, hc_mul(A, REF(i), INT(nc)), hc_mul(A, REF(j), INT(lanes)));
            hc_expr *v = hc_load(A, acc, 2, ((hc_expr *[]){REF(i), REF(j)}));
            hc_b_eval(&b, hc_call(A, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2,
                                  (hc_expr *[]){addr(c, coff), v}));
        }
    }
    return kernel(name, 3, (hc_var *[]){a, bm, c}, hc_builder_finish(&b));
}

static void run_regtile(hc_jit_lib *lib, const char *name, int lanes, const char *src) {
    enum { K = 5 };
    int nc = 2 * lanes;
    float a[2 * K], bm[K * 32], c[2 * 32];
    for (int i = 0; i < 2 * K; i++) a[i] = (float)(i % 4) - 1.5f;
    for (int i = 0; i < K * nc; i++) bm[i] = (float)((i * 5) % 9) * 0.25f;
    packed(lib, name)((void *[]){a, bm, c});
    int bad = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < nc; j++) {
            float want = 0;
            for (int k = 0; k < K; k++) want += a[i * K + k] * bm[k * nc + j];
            bad += fabsf(c[i * nc + j] - want) > 1e-4f;
        }
    CHECK_MSG(bad == 0, "%s: %d bad", name, bad);
    /* promoted: the accumulators are 4 locals, not an array */
    char decl[64];
    snprintf(decl, sizeof decl, "hc_f32x%d acc_", lanes);
    const char *p = strstr(src, decl);
    CHECK_MSG(p != NULL, "no accumulator locals in %s", name);
    int arrays = 0;
    for (; p; p = strstr(p + 1, decl)) arrays += p[strcspn(p, ";[")] == '[';
    CHECK_EQ_INT(arrays, 0);
}

/* ---- strided loads (gathers) ------------------------------------------------------ */
/* x lies on a page between two inaccessible ones: a lane outside [lo, hi) that read
 * memory would fault. Each case is (base, stride, lo, hi); its lanes in [lo, hi) read
 * inside x. Each is loaded with the stride as a constant and as a run-time value. */
#define XN 1024
static const int64_t strided_cases[][4] = {
    {0, 2, 0, 64},    {1020, 2, 0, 2},  {1, -2, 0, 1},    {-6, 3, 2, 64},  {1000, 3, 3, 5},
    {5, 2, 4, 3},     {0, 2, -3, 40},   {1023, -1, 0, 64}, {1023, -64, 0, 1}, {0, 64, 0, 64},
    {4, 2, 0, 0},     {0, 3000000000LL, 0, 1}, {1015, 2, 1, 5}, {9, 7, 1, 64},
};
#define NSC (int)HC_ARRAY_LEN(strided_cases)

static hc_func *f_strided(const char *name, int lanes) {
    hc_var *x = tensor1("x", HC_F32, XN), *q = tensor1("q", HC_I64, 3 * NSC);
    hc_var *out = tensor1("out", HC_F32, 2 * NSC * lanes);
    const hc_type *vt = hc_type_vector(A, HC_F32, lanes);
    hc_builder b;
    hc_builder_init(&b, A);
    for (int c = 0; c < NSC; c++) {
        const int64_t *k = strided_cases[c];
        hc_expr *lo = ld(q, INT(3 * c)), *hie = ld(q, INT(3 * c + 1));
        hc_expr *strides[2] = {INT(k[1]), ld(q, INT(3 * c + 2))};
        for (int r = 0; r < 2; r++) {
            hc_expr *g = hc_call(A, HC_PRIM_VLOAD_STRIDED, vt, 4,
                                 (hc_expr *[]){addr(x, INT(k[0])), strides[r], lo, hie});
            hc_b_eval(&b, hc_call(A, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2,
                                  (hc_expr *[]){addr(out, INT((2 * c + r) * lanes)), g}));
        }
    }
    return kernel(name, 3, (hc_var *[]){x, q, out}, hc_builder_finish(&b));
}

static void run_strided(hc_jit_lib *lib, const char *name, int lanes, const char *isa) {
    long pg = sysconf(_SC_PAGESIZE);
    CHECK((long)(XN * sizeof(float)) <= pg);
    char *map = mmap(NULL, (size_t)pg * 3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    CHECK(map != MAP_FAILED);
    if (map == MAP_FAILED) return;
    /* x ends where the page ends; the pages before and after are off limits */
    float *x = (float *)(map + 2 * pg) - XN;
    CHECK(mprotect(map, (size_t)pg, PROT_NONE) == 0 &&
          mprotect(map + 2 * pg, (size_t)pg, PROT_NONE) == 0);
    for (int i = 0; i < XN; i++) x[i] = (float)i * 0.5f + 1;
    int64_t q[3 * NSC];
    float out[2 * NSC * 16];
    for (int c = 0; c < NSC; c++) {
        const int64_t *k = strided_cases[c];
        q[3 * c] = k[2], q[3 * c + 1] = k[3], q[3 * c + 2] = k[1];
    }
    packed(lib, name)((void *[]){x, q, out});
    int bad = 0;
    for (int c = 0; c < NSC; c++) {
        const int64_t *k = strided_cases[c];
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < lanes; i++) {
                float want = i >= k[2] && i < k[3] ? x[k[0] + i * k[1]] : 0;
                float got = out[(2 * c + r) * lanes + i];
                if (got != want && bad++ < 5)
                    fprintf(stderr, "%s %s case %d (%s stride) lane %d: %g, want %g\n", isa, name,
                            c, r ? "run-time" : "constant", i, got, want);
            }
    }
    CHECK_MSG(bad == 0, "%s %s: %d bad lanes", isa, name, bad);
    munmap(map, (size_t)pg * 3);
}

static void test_vectors(hc_isa isa) {
    const hc_target *t = hc_target_cpu(isa);
    if (t->caps.isa != isa) {
        printf("skipping vector tests for %s: the CPU lacks it\n", hc_isa_name(isa));
        return;
    }
    hc_func *fs[8] = {f_vector("vec16", 16),  f_vector("vec8", 8),     f_regtile("tile16", 16),
                      f_regtile("tile8", 8),   f_vec_misc("misc16", 16), f_vec_misc("misc8", 8),
                      f_strided("strided16", 16), f_strided("strided8", 8)};
    char *src = NULL;
    hc_jit_lib *lib = build(8, fs, t, &src);
    if (lib) {
        run_strided(lib, "strided16", 16, hc_isa_name(isa));
        run_strided(lib, "strided8", 8, hc_isa_name(isa));
        CHECK_EQ_INT(strstr(src, "_mm512_mask_i32gather_ps") != NULL, isa == HC_ISA_AVX512);
        CHECK_EQ_INT(strstr(src, "_mm512_permutex2var_ps") != NULL, isa == HC_ISA_AVX512);
        /* AVX2: scalar loads, never a gather (emit_vload_strided); AVX-512's 8 lanes gather */
        CHECK_EQ_INT(strstr(src, "_mm256_mask_i32gather_ps") != NULL, isa == HC_ISA_AVX512);
        CHECK_EQ_INT(strstr(src, "_mm256_setr_ps(_p") != NULL, isa == HC_ISA_AVX2);
        run_vec_misc(lib, "misc16", 16, hc_isa_name(isa));
        run_vec_misc(lib, "misc8", 8, hc_isa_name(isa));
        run_vector(lib, "vec16", 16, hc_isa_name(isa));
        run_vector(lib, "vec8", 8, hc_isa_name(isa));
        run_regtile(lib, "tile16", 16, src);
        run_regtile(lib, "tile8", 8, src);
        bool intrin512 = strstr(src, "_mm512_fmadd_ps") != NULL;
        bool intrin256 = strstr(src, "_mm256_maskload_ps") != NULL;
        CHECK_EQ_INT(intrin512, isa == HC_ISA_AVX512);
        CHECK_EQ_INT(intrin256, isa >= HC_ISA_AVX2);
        CHECK_EQ_INT(strstr(src, "immintrin.h") != NULL, isa != HC_ISA_SCALAR);
        hc_jit_close(lib);
        check_warning_free(src, t);
    }
    free(src);
}

/* HIDETC_ISA is read once per process: check it in children. */
static int isa_in_child(const char *value) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("HIDETC_ISA", value, 1);
        _exit((int)hc_target_host()->caps.isa);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_isa_env(void) {
    int cpu = isa_in_child("");
    CHECK(cpu >= HC_ISA_SCALAR && cpu <= HC_ISA_AVX512);
    CHECK_EQ_INT(isa_in_child("scalar"), HC_ISA_SCALAR);
    CHECK_EQ_INT(isa_in_child("avx2"), HC_MIN(cpu, HC_ISA_AVX2));
    CHECK_EQ_INT(isa_in_child("avx512"), cpu); /* never raises the ISA */
    CHECK_EQ_INT(isa_in_child("sse9"), cpu);   /* unknown: warning, ignored */
    if (cpu == HC_ISA_AVX512)
        CHECK(strstr(hc_target_cpu(HC_ISA_AVX2)->cflags, "-mno-avx512f") != NULL);
}

/* 512-bit auto-vectorization (codegen_c.c, wide_rows): a scalar kernel of long rows gets
 * target("prefer-vector-width=512") on AVX-512, one of short rows (35) or with explicit
 * vectors does not, nor does anything on AVX2; the AVX-512 module compiles and runs. */
static hc_func *f_row(const char *name, int64_t n, bool vector) {
    hc_var *x = tensor1("x", HC_F32, n), *y = tensor1("y", HC_F32, n);
    hc_builder b;
    hc_builder_init(&b, A);
    if (vector) {
        const hc_type *vt = hc_type_vector(A, HC_F32, 16);
        HC_FOR(&b, i, "i", INT(n / 16), hc_serial()) {
            hc_expr *p = addr(x, hc_mul(A, REF(i), INT(16)));
            hc_expr *v = hc_call(A, HC_PRIM_VLOAD, vt, 1, (hc_expr *[]){p});
            hc_expr *q = addr(y, hc_mul(A, REF(i), INT(16)));
            hc_b_eval(&b, hc_call(A, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2,
                                  (hc_expr *[]){q, hc_add(A, v, v)}));
        }
    } else {
        HC_FOR(&b, i, "i", INT(n), hc_serial()) {
            hc_b_store(&b, y, 1, IDX1(REF(i)), hc_math(A, HC_PRIM_TANH, ld(x, REF(i)), NULL));
        }
    }
    return kernel(name, 2, (hc_var *[]){x, y}, hc_builder_finish(&b));
}

static void test_wide_rows(void) {
    const char *attr = "prefer-vector-width=512\"))) void ";
    for (int isa = HC_ISA_AVX2; isa <= HC_ISA_AVX512; isa++) {
        const hc_target *t = hc_target_cpu((hc_isa)isa);
        hc_func *fs[3] = {f_row("row768", 768, false), f_row("row35", 35, false),
                          f_row("vec768", 768, true)};
        char *src = hc_codegen_c(A, hc_module_new(A, "rows", 3, fs), t);
        int tagged = 0;
        for (const char *p = strstr(src, attr); p; p = strstr(p + 1, attr)) {
            tagged++;
            CHECK_MSG(!strncmp(p + strlen(attr), "row768(", 7), "%s: tagged %.20s",
                      hc_isa_name(t->caps.isa), p + strlen(attr));
        }
        CHECK_EQ_INT(tagged, t->caps.isa == HC_ISA_AVX512 ? 1 : 0); /* t: at most the host ISA */
        free(src);
    }
    if (hc_target_host()->caps.isa == HC_ISA_AVX512) {
        hc_func *fs[1] = {f_row("row768", 768, false)};
        hc_jit_lib *lib = build(1, fs, hc_target_host(), NULL);
        if (lib) {
            float x[768], y[768];
            for (int i = 0; i < 768; i++) x[i] = (float)(i - 384) / 64.0f;
            packed(lib, "row768")((void *[]){x, y});
            int bad = 0;
            for (int i = 0; i < 768; i++) bad += fabsf(y[i] - tanhf(x[i])) > 1e-6f;
            CHECK_EQ_INT(bad, 0);
            hc_jit_close(lib);
        }
    }
}

int main(void) {
    hc_arena_init(A);
    test_isa_env(); /* first: the children read HIDETC_ISA before the host target is cached */
    test_wide_rows();
    test_vec_math();
    const hc_target *host = hc_target_host();
    CHECK(host->caps.num_cores >= 1 && host->caps.l1_bytes > 0 && host->caps.l2_bytes > 0);
    CHECK(host->caps.num_regs == (host->caps.isa == HC_ISA_AVX512 ? 32 : 16));
    CHECK_EQ_INT(hc_target_f32_lanes(hc_target_cpu(HC_ISA_SCALAR)), 4);
    CHECK(strstr(hc_target_cpu(HC_ISA_SCALAR)->cflags, "march") == NULL);

    hc_func *fs[] = {f_elementwise(), f_control(), f_casts(), f_math("math_f32", HC_F32),
                     f_math("math_f64", HC_F64), f_heap(), f_mapping(), f_barrier(),
                     f_ints(), f_layouts(), f_helper(), f_exp_sweep(), f_addressed()};
    char *src = NULL;
    hc_jit_lib *lib = build((int)HC_ARRAY_LEN(fs), fs, host, &src);
    if (lib) {
        run_elementwise(lib);
        run_control(lib, src);
        run_casts(lib);
        run_math(lib);
        run_heap(lib, src);
        run_mapping(lib);
        run_barrier(lib, src);
        run_ints(lib);
        run_layouts(lib, src);
        run_exp_sweep(lib);
        run_addressed(lib, src);
        hc_jit_close(lib);
    }
    if (src) check_warning_free(src, host);
    if (getenv("HC_TEST_DUMP")) fputs(src, stderr);
    test_lower(f_regtile("lower_tile", 16), f_mapping());
    free(src);
    for (int isa = HC_ISA_SCALAR; isa <= HC_ISA_AVX512; isa++) test_vectors((hc_isa)isa);
    test_store_counts();
    hc_arena_free(A);
    TEST_DONE();
}
