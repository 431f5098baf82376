/* hidetc kernel matmul — build the matmul template for one shape, run it on random data,
 * check it against a reference and optionally time it.
 *
 * Output (relied on by scripts):
 *   max_error: X (tolerance T)
 *   min_ms: X gflops_best: Y        (the fastest run, with --bench)
 *   median_ms: X gflops: Y          (last line, with --bench) */
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/npy.h"
#include "target/cpu/templates/matmul.h"

/* Problems with more multiply-adds than this are checked against a plain double loop
 * instead of the (slow, tree-walking) reference interpreter. */
#define INTERP_MAX_MACS ((int64_t)1 << 22)

typedef struct kernel_args {
    hc_matmul_shape shape;
    int threads;
    bool print_ir, print_source, bench;
    bool amx; /* --amx: the AMX split-product config, B pre-packed */
    const char *dump;
    const hc_target *target; /* --target; default: this CPU */
    bool runnable;           /* its kernels can run here */
    int64_t level, candidate; /* GPU targets: the candidate of the space at that level */
    /* config overrides; -1 = default */
    int64_t mr, nr, kc, mc, nc, tb, tm, tn, pack_a, pack_b, rows, pre_b;
} kernel_args;

static void usage(FILE *f) {
    fprintf(f,
            "usage: hidetc kernel matmul --m M --n N --k K [--batch B] [--threads T]\n"
            "                            [--print-ir] [--print-source] [--dump DIR] [--bench]\n"
            "                            [--target cpu|cpu:avx512|cpu:avx2|cpu:scalar|opencl|cuda|\n"
            "                                      cuda:sm_80|cuda:sm_90]\n"
            "  GPU targets: [--tune L] [--candidate C] (candidate C of the space at level L)\n"
            "  config overrides: [--mr R] [--nr R] [--kc K] [--mc M] [--nc N] [--tb T]\n"
            "                    [--tm T] [--tn T] [--pack-a 0|1] [--pack-b 0|1]\n"
            "                    [--rows 0|1] (row tiles first) [--pre-b 0|1] (B pre-packed)\n"
            "  [--amx]: AMX split products (B pre-packed; the overrides apply, the tile stays 32)\n");
}

static bool parse_int(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    errno = 0;
    long long v = s ? strtoll(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "hidetc kernel: %s expects an integer in [%lld, %lld], got '%s'\n", opt,
                (long long)lo, (long long)hi, s ? s : "(nothing)");
        return false;
    }
    *out = v;
    return true;
}

/* Returns 0 on success, else the exit code. */
static int parse_args(int argc, char **argv, kernel_args *k) {
    memset(k, 0, sizeof *k);
    k->shape.batch = 1;
    int64_t *overrides[] = {&k->mr, &k->nr, &k->kc, &k->mc, &k->nc,
                            &k->tb, &k->tm, &k->tn, &k->pack_a, &k->pack_b,
                            &k->rows, &k->pre_b};
    static const char *const override_names[] = {"--mr", "--nr", "--kc", "--mc", "--nc",
                                                  "--tb", "--tm", "--tn", "--pack-a", "--pack-b",
                                                  "--rows", "--pre-b"};
    for (size_t i = 0; i < HC_ARRAY_LEN(overrides); i++) *overrides[i] = -1;
    int64_t threads = 0;
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t *dst = NULL, lo = 1, hi = (int64_t)1 << 31;
        if (!strcmp(o, "--m")) dst = &k->shape.m;
        else if (!strcmp(o, "--n")) dst = &k->shape.n;
        else if (!strcmp(o, "--k")) dst = &k->shape.k;
        else if (!strcmp(o, "--batch")) dst = &k->shape.batch;
        else if (!strcmp(o, "--tune")) dst = &k->level, lo = 0, hi = 2;
        else if (!strcmp(o, "--candidate")) dst = &k->candidate, lo = 0;
        else if (!strcmp(o, "--threads")) dst = &threads, hi = HC_MATMUL_MAX_THREADS;
        else if (!strcmp(o, "--print-ir")) k->print_ir = true;
        else if (!strcmp(o, "--print-source")) k->print_source = true;
        else if (!strcmp(o, "--bench")) k->bench = true;
        else if (!strcmp(o, "--amx")) k->amx = true;
        else if (!strcmp(o, "--target")) {
            hc_error e = {0};
            if (!val || hc_target_find(val, &k->target, &k->runnable, &e) != HC_OK) {
                fprintf(stderr, "hidetc kernel: --target: %s\n", val ? e.msg : "expects a name");
                return 2;
            }
            i++;
        }
        else if (!strcmp(o, "--dump")) {
            if (!val) return fprintf(stderr, "hidetc kernel: --dump needs a directory\n"), 2;
            k->dump = val, i++;
        } else {
            for (size_t j = 0; j < HC_ARRAY_LEN(overrides); j++)
                if (!strcmp(o, override_names[j])) dst = overrides[j];
            if (!dst) {
                fprintf(stderr, "hidetc kernel: unknown option '%s'\n", o);
                usage(stderr);
                return 2;
            }
            if (dst == &k->pack_a || dst == &k->pack_b || dst == &k->rows || dst == &k->pre_b)
                lo = 0, hi = 1;
        }
        if (dst) {
            if (!parse_int(o, val, lo, hi, dst)) return 2;
            i++;
        }
    }
    if (!k->shape.m || !k->shape.n || !k->shape.k) {
        fprintf(stderr, "hidetc kernel: --m, --n and --k are required\n");
        usage(stderr);
        return 2;
    }
    k->threads = (int)threads;
    if (!k->target) k->target = hc_target_default(), k->runnable = true;
    if (!k->runnable && (!k->print_source || k->bench || k->dump)) {
        fprintf(stderr, "hidetc kernel: target '%s' cannot run here (%s): only --print-source "
                "/ --print-ir apply\n", k->target->name, hc_target_why_not_runnable(k->target));
        return 2;
    }
    if (k->amx && k->pre_b >= 0) { /* not silently dropped: AMX's B is always pre-packed */
        fprintf(stderr, "hidetc kernel: --pre-b does not apply with --amx (its B is always pre-packed)\n");
        return 2;
    }
    if (k->amx && (k->target->kind != HC_TARGET_CPU || !k->target->caps.amx_bf16)) {
        fprintf(stderr, "hidetc kernel: --amx: target '%s' has no AMX-BF16 (on an AMX CPU: HIDETC_AMX=1)\n",
                k->target->name);
        return 2;
    }
    if (k->target->kind != HC_TARGET_GPU && (k->level || k->candidate)) {
        fprintf(stderr, "hidetc kernel: --tune and --candidate are for GPU targets (the CPU "
                "matmul takes its config overrides)\n");
        return 2;
    }
    return 0;
}

static hc_matmul_config make_config(const kernel_args *k, const hc_target *t) {
    /* --amx: B pre-packed, so its packing costs the thread split nothing; its tile is
     * fixed (an --mr or --nr other than 32 fails validation with the reason) */
    hc_matmul_config c = k->amx ? hc_matmul_amx_config(t, &k->shape)
                                : hc_matmul_default_config(t, &k->shape);
    /* a new tile keeps the default blocks valid: rounded to multiples of it */
    if (k->mr > 0) c.mr = (int)k->mr, c.mc = (c.mc + c.mr - 1) / c.mr * c.mr;
    if (k->nr > 0) c.nr = (int)k->nr, c.nc = (c.nc + c.nr - 1) / c.nr * c.nr;
    if (k->kc > 0) c.kc = k->kc;
    if (k->mc > 0) c.mc = k->mc;
    if (k->nc > 0) c.nc = k->nc;
    if (k->pack_a >= 0) c.pack_a = k->pack_a;
    if (k->pack_b >= 0) c.pack_b = k->pack_b;
    if (k->threads > 0 && k->amx)
        hc_matmul_config_set_threads_costed(&c, &k->shape, k->threads, 0, 0);
    else if (k->threads > 0)
        hc_matmul_config_set_threads(&c, &k->shape, k->threads);
    if (k->tb > 0) c.tb = (int)k->tb;
    if (k->tm > 0) c.tm = (int)k->tm;
    if (k->tn > 0) c.tn = (int)k->tn;
    /* the loop order as the default rule gives it for the final blocks, unless stated */
    c.rows_first = k->rows >= 0 ? k->rows == 1 : hc_matmul_rows_first_pays(&c, &k->shape, t);
    if (k->pre_b >= 0) c.pre_b = k->pre_b == 1, c.pack_b = c.pack_b || c.pre_b;
    return c;
}

static void fill_random(float *x, int64_t n, uint64_t seed) {
    hc_rng r = {seed};
    for (int64_t i = 0; i < n; i++) x[i] = (float)hc_rng_uniform(&r, -1.0, 1.0);
}

/* C = A x B in double, per batch; the reference for large problems. */
static void reference_loop(const hc_matmul_shape *s, const float *A, const float *B, float *C) {
    int64_t M = s->m, N = s->n, K = s->k;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < s->batch; b++) {
        for (int64_t i = 0; i < M; i++) {
            double *row = calloc((size_t)N, sizeof *row);
            for (int64_t p = 0; p < K; p++) {
                double a = A[(b * M + i) * K + p];
                const float *brow = B + (b * K + p) * N;
                for (int64_t j = 0; j < N; j++) row[j] += a * brow[j];
            }
            for (int64_t j = 0; j < N; j++) C[(b * M + i) * N + j] = (float)row[j];
            free(row);
        }
    }
}

static hc_status reference(const hc_matmul_shape *s, const float *A, const float *B, float *C,
                           const char **how, hc_error *err) {
    if (s->batch * s->m * s->n * s->k > INTERP_MAX_MACS) {
        *how = "double-accumulating loop";
        reference_loop(s, A, B, C);
        return HC_OK;
    }
    *how = "interpreter (hc_matmul_task)";
    hc_arena a;
    hc_arena_init(&a);
    hc_task *task = hc_matmul_task(&a, s);
    void *in[2] = {(void *)A, (void *)B}, *out[1] = {C};
    hc_status st = hc_interpret_task(task, in, out, err);
    hc_arena_free(&a);
    return st;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static void bench(const hc_matmul_kernel *kern, const hc_matmul_shape *s, const float *A,
                  const float *B, float *C) {
    double flops = 2.0 * (double)s->batch * (double)s->m * (double)s->n * (double)s->k;
    for (int i = 0; i < 3; i++) hc_matmul_run(kern, A, B, C);
    enum { MAX_REPS = 500 };
    static double ms[MAX_REPS];
    int n = 0;
    double start = hc_now_ms();
    while (n < MAX_REPS && (n < 10 || hc_now_ms() - start < 1000)) {
        double t0 = hc_now_ms();
        hc_matmul_run(kern, A, B, C);
        ms[n++] = hc_now_ms() - t0;
    }
    qsort(ms, (size_t)n, sizeof ms[0], cmp_double);
    double med = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    printf("runs: %d\n", n);
    /* the fastest run: on a shared machine, interference only adds time */
    printf("min_ms: %.4f gflops_best: %.2f\n", ms[0], flops / ms[0] * 1e-6);
    printf("median_ms: %.4f gflops: %.2f\n", med, flops / med * 1e-6);
}

static int dump(const char *dir, const hc_matmul_shape *s, const float *A, const float *B,
                const float *C) {
    hc_error err;
    char path[4096];
    const float *data[3] = {A, B, C};
    const char *names[3] = {"a.npy", "b.npy", "c.npy"};
    int64_t shapes[3][3] = {{s->batch, s->m, s->k}, {s->batch, s->k, s->n}, {s->batch, s->m, s->n}};
    if (hc_mkdirs(dir, &err)) return fprintf(stderr, "hidetc kernel: %s\n", err.msg), 1;
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (hc_npy_write(path, HC_F32, 3, shapes[i], data[i], &err))
            return fprintf(stderr, "hidetc kernel: %s\n", err.msg), 1;
    }
    printf("dumped: %s/{a,b,c}.npy\n", dir);
    return 0;
}

static int run_matmul(const kernel_args *k) {
    const hc_target *t = k->target;
    const hc_matmul_shape *s = &k->shape;
    hc_matmul_config c = make_config(k, t);
    hc_error err = {0};
    if (hc_matmul_validate(&c, &err)) return fprintf(stderr, "hidetc kernel: %s\n", err.msg), 2;
    hc_sb sb;
    hc_sb_init(&sb);
    hc_matmul_config_print(&sb, &c);
    printf("matmul batch=%lld m=%lld n=%lld k=%lld target=%s config: %s\n", (long long)s->batch,
           (long long)s->m, (long long)s->n, (long long)s->k, hc_isa_name(t->caps.isa), hc_sb_str(&sb));
    hc_sb_free(&sb);
    if (k->print_ir) {
        hc_arena a;
        hc_arena_init(&a);
        hc_func *f = hc_matmul_cpu(&a, "matmul", s, &c, t, &err);
        if (f) {
            hc_sb_init(&sb);
            hc_print_func(&sb, f);
            fputs(hc_sb_str(&sb), stdout);
            hc_sb_free(&sb);
        }
        hc_arena_free(&a);
        if (!f) return fprintf(stderr, "hidetc kernel: %s\n", err.msg), 1;
    }
    char *src = hc_matmul_source(s, &c, t, "matmul", &err);
    if (!src) return fprintf(stderr, "hidetc kernel: %s\n", err.msg), 1;
    if (k->print_source) fputs(src, stdout);
    if (!k->runnable) return free(src), 0; /* emitted for another CPU: nothing runs here */
    hc_jit_lib *lib = NULL;
    hc_matmul_kernel kern;
    if (hc_jit_build(src, &(hc_jit_options){.cflags = t->cflags}, &lib, &err) ||
        hc_matmul_kernel_from_lib(lib, "matmul", &kern, &err)) {
        free(src);
        if (lib) hc_jit_close(lib);
        return fprintf(stderr, "hidetc kernel: %s\n", err.msg), 1;
    }
    free(src);

    int64_t na = s->batch * s->m * s->k, nb = s->batch * s->k * s->n, nc = s->batch * s->m * s->n;
    float *A = hc_xmalloc(sizeof(float) * (size_t)na), *B = hc_xmalloc(sizeof(float) * (size_t)nb);
    float *C = hc_xmalloc(sizeof(float) * (size_t)nc), *R = hc_xmalloc(sizeof(float) * (size_t)nc);
    fill_random(A, na, 1), fill_random(B, nb, 2);
    for (int64_t i = 0; i < nc; i++) C[i] = NAN; /* every element must be written */
    float *Bp = NULL; /* B as the kernel takes it: pre-packed (--amx) */
    if (c.pre_b) {
        Bp = hc_xmalloc(sizeof(float) * (size_t)hc_matmul_packed_size(s, &c, 1));
        hc_matmul_prepack(s, &c, 1, B, Bp);
    }
    hc_matmul_run(&kern, A, Bp ? Bp : B, C);
    const char *how = "";
    int rc = 0;
    if (reference(s, A, B, R, &how, &err)) {
        fprintf(stderr, "hidetc kernel: reference failed: %s\n", err.msg);
        rc = 1;
    } else {
        double maxerr = 0, tol = 1e-5 + 2e-6 * (double)s->k; /* |inputs| <= 1 */
        for (int64_t i = 0; i < nc; i++) {
            double e = fabs((double)C[i] - (double)R[i]);
            if (!(e <= maxerr)) maxerr = isnan(e) ? INFINITY : e;
        }
        printf("reference: %s\n", how);
        printf("max_error: %.3g (tolerance %.3g)\n", maxerr, tol);
        if (!(maxerr <= tol)) {
            fprintf(stderr, "hidetc kernel: result exceeds the tolerance\n");
            rc = 1;
        }
    }
    if (!rc && k->dump) rc = dump(k->dump, s, A, B, C);
    if (!rc && k->bench) bench(&kern, s, A, Bp ? Bp : B, C);
    free(A), free(B), free(Bp), free(C), free(R);
    hc_matmul_kernel_close(&kern);
    return rc;
}

int cmd_kernel(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "matmul")) {
        fprintf(stderr, "hidetc kernel: unknown kernel '%s' (available: matmul)\n", argv[1]);
        return 2;
    }
    kernel_args k;
    int rc = parse_args(argc, argv, &k);
    if (rc) return rc;
    if (k.target->kind == HC_TARGET_GPU)
        return kernel_matmul_gpu(k.target, k.runnable, k.shape.batch, k.shape.m, k.shape.n,
                                 k.shape.k, (int)k.level, (int)k.candidate, k.print_ir,
                                 k.print_source, k.bench);
    if (k.threads > 0) omp_set_num_threads(k.threads);
    return run_matmul(&k);
}
