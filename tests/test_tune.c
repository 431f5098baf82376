/* test_tune.c — the tuner: records, keys, benchmarking, one shared object for many
 * candidates (hc_jit_build_parallel), hc_tune_select, the progress bar. */
#include "target/cpu/cpu.h"
#include "target/cpu/templates/matmul.h"
#include "test.h"
#include "tune/tune.h"

#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char cache[64];

/* ---- records and keys ---------------------------------------------------------------- */
static void test_records(void) {
    hc_jit_options opt = {.cache_dir = cache};
    const hc_target *t = hc_target_host();
    char k1[33], k2[33], k3[33], k4[33];
    hc_tune_key("matmul 1x64x64x64", 2, t, k1);
    hc_tune_key("matmul 1x64x64x64", 2, t, k2);
    hc_tune_key("matmul 1x64x64x64", 1, t, k3);
    hc_tune_key("matmul 1x64x64x65", 2, t, k4);
    CHECK_EQ_INT(strlen(k1), 32);
    CHECK_STR(k1, k2);
    CHECK(strcmp(k1, k3) != 0 && strcmp(k1, k4) != 0);
    hc_target other = *t;
    other.caps.num_cores = t->caps.num_cores + 1;
    hc_tune_key("matmul 1x64x64x64", 2, &other, k2);
    CHECK(strcmp(k1, k2) != 0);

    const char *m = hc_tune_machine(t);
    CHECK_MSG(m && strstr(m, "cpus") && strlen(m) > 6, "machine: %s", m ? m : "(null)");
    CHECK(hc_tune_machine(t) == m); /* read once */

    hc_tune_record r = {-1, -1, -1};
    CHECK(!hc_tune_record_get(&opt, k1, &r)); /* nothing yet */
    hc_error err;
    hc_tune_record w = {5, 0.123456, 17};
    CHECK_EQ_INT(hc_tune_record_put(&opt, k1, &w, &err), HC_OK);
    CHECK(hc_tune_record_get(&opt, k1, &r));
    CHECK_EQ_INT(r.best, 5);
    CHECK_EQ_INT(r.ncand, 17);
    CHECK_NEAR(r.best_ms, 0.123456, 1e-9);
    CHECK(!hc_tune_record_get(&opt, k3, &r)); /* another key */
    /* overwrite */
    w = (hc_tune_record){0, 2.5, 1};
    CHECK_EQ_INT(hc_tune_record_put(&opt, k1, &w, &err), HC_OK);
    CHECK(hc_tune_record_get(&opt, k1, &r) && r.best == 0 && r.ncand == 1);
    /* the file is text a person can read, and no temporary is left behind */
    char path[256], *text = NULL;
    size_t size = 0;
    snprintf(path, sizeof path, "%s/tune/%s", cache, k1);
    CHECK(hc_read_file(path, &text, &size, NULL) == HC_OK);
    CHECK(text && strstr(text, "best 0\n") && strstr(text, "ncand 1\n") && strstr(text, "desc "));
    CHECK(text && !strstr(text, "time ")); /* no times given: none written */
    free(text);
    /* every candidate's time (the dispatch table weighs configs by them); unknown: 0 */
    w = (hc_tune_record){2, 0.5, 4, {1.25f, 0, 0.5f, 3.0f}};
    CHECK_EQ_INT(hc_tune_record_put(&opt, k1, &w, &err), HC_OK);
    CHECK(hc_tune_record_get(&opt, k1, &r) && r.best == 2 && r.ncand == 4);
    CHECK_NEAR(r.times[0], 1.25, 1e-6);
    CHECK_NEAR(r.times[1], 0, 0);
    CHECK_NEAR(r.times[2], 0.5, 1e-6);
    CHECK_NEAR(r.times[3], 3.0, 1e-6);
    char rec[] = "hidetc-tune 1\nbest 1\nbest_ms 2\nncand 2\ntime 0 4.5\ntime 1 -3\ntime 9 1\ntime 70 1\n";
    CHECK(hc_tune_record_parse(rec, &r) && r.times[0] == 4.5f && r.times[1] == 0 && r.times[9] == 0);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls '%s/tune' | grep tmp)\"", cache);
    CHECK(system(cmd) == 0);
    /* a bad record is refused; a corrupt file reads as no record */
    w = (hc_tune_record){3, 1.0, 3};
    CHECK_EQ_INT(hc_tune_record_put(&opt, k4, &w, &err), HC_ERR_INVALID);
    CHECK(strstr(err.msg, k4) != NULL);
    CHECK(hc_write_file(path, "hidetc-tune 1\nbest 7\nncand 3\nbest_ms 1\n", 38, NULL) == HC_OK);
    CHECK(!hc_tune_record_get(&opt, k1, &r));
    CHECK(hc_write_file(path, "", 0, NULL) == HC_OK);
    CHECK(!hc_tune_record_get(&opt, k1, &r));
    /* a cache that cannot be created */
    hc_jit_options nodir = {.cache_dir = "/proc/hidetc-no-such-dir"};
    w = (hc_tune_record){0, 1.0, 1};
    CHECK(hc_tune_record_put(&nodir, k1, &w, &err) != HC_OK);
    CHECK(strstr(err.msg, "/proc/hidetc-no-such-dir") != NULL);
}

/* ---- benchmarking -------------------------------------------------------------------- */
static int calls;
static void count_call(void **args) {
    (void)args;
    calls++;
}

static void test_bench(void) {
    calls = 0;
    double ms = hc_bench_median(count_call, NULL, 2, 5, 7, 0);
    CHECK_EQ_INT(calls, 2 + 5); /* budget spent: the minimum */
    CHECK(ms >= 0 && ms < 1);
    calls = 0;
    hc_bench_median(count_call, NULL, 0, 3, 9, 1e9);
    CHECK_EQ_INT(calls, 9); /* budget left: up to the maximum */
    calls = 0;
    hc_bench_median(count_call, NULL, 1, 0, 0, 1e9);
    CHECK_EQ_INT(calls, 2); /* at least one timed run */
}

/* ---- one shared object from several sources ----------------------------------------- */
static char *getter(const char *name, int value) {
    hc_sb sb;
    hc_sb_init(&sb);
    /* the pid and time make the first build of each run a real compile */
    hc_sb_printf(&sb, "/* %ld %f */\nstatic int helper(void) { return %d; }\n"
                 "int %s(void) { return helper(); }\n", (long)getpid(), hc_now_ms(), value, name);
    return hc_sb_take(&sb);
}

static int call(hc_jit_lib *lib, const char *name) {
    int (*f)(void) = (int (*)(void))hc_jit_symbol(lib, name);
    CHECK_MSG(f != NULL, "symbol %s", name);
    return f ? f() : -1;
}

static void test_parallel_build(void) {
    hc_jit_options opt = {.cache_dir = cache};
    enum { N = 5 };
    char *srcs[N], name[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(name[i], sizeof name[i], "get_%d", i);
        srcs[i] = getter(name[i], 10 + i);
    }
    hc_jit_lib *lib = NULL, *again = NULL;
    hc_error err;
    CHECK_EQ_INT(hc_jit_build_parallel(N, (const char *const *)srcs, &opt, 2, &lib, &err), HC_OK);
    CHECK(lib && !hc_jit_was_cached(lib));
    for (int i = 0; lib && i < N; i++) CHECK_EQ_INT(call(lib, name[i]), 10 + i);
    CHECK_EQ_INT(hc_jit_build_parallel(N, (const char *const *)srcs, &opt, 0, &again, &err),
                 HC_OK);
    CHECK(again && hc_jit_was_cached(again));
    if (lib && again) CHECK_STR(hc_jit_path(lib), hc_jit_path(again));
    hc_jit_close(again);
    /* the same sources in another order: another library, same answers */
    char *swapped[N];
    for (int i = 0; i < N; i++) swapped[i] = srcs[N - 1 - i];
    CHECK_EQ_INT(hc_jit_build_parallel(N, (const char *const *)swapped, &opt, 3, &again, &err),
                 HC_OK);
    if (lib && again) {
        CHECK(strcmp(hc_jit_path(lib), hc_jit_path(again)) != 0);
        CHECK_EQ_INT(call(again, "get_3"), 13);
    }
    hc_jit_close(again), hc_jit_close(lib);

    /* a compile error: no library, the compiler's message and the kept source */
    free(srcs[2]);
    srcs[2] = hc_xstrdup("int broken(void) { return undeclared_thing; }\n");
    lib = (hc_jit_lib *)1;
    CHECK_EQ_INT(hc_jit_build_parallel(N, (const char *const *)srcs, &opt, 2, &lib, &err),
                 HC_ERR_COMPILE);
    CHECK(lib == NULL);
    CHECK_MSG(strstr(err.msg, "undeclared_thing") && strstr(err.msg, cache), "%s", err.msg);
    /* two sources defining one symbol: the link fails and says so */
    free(srcs[2]);
    srcs[2] = getter("get_1", 99);
    CHECK_EQ_INT(hc_jit_build_parallel(N, (const char *const *)srcs, &opt, 2, &lib, &err),
                 HC_ERR_COMPILE);
    CHECK_MSG(strstr(err.msg, "linking") && strstr(err.msg, "get_1"), "%s", err.msg);
    /* no sources; a compiler that is not there */
    CHECK_EQ_INT(hc_jit_build_parallel(0, NULL, &opt, 2, &lib, &err), HC_ERR_INVALID);
    hc_jit_options nocc = {.cache_dir = cache, .cc = "/nonexistent/cc"};
    CHECK_EQ_INT(hc_jit_build_parallel(1, (const char *const *)srcs, &nocc, 2, &lib, &err),
                 HC_ERR_COMPILE);
    CHECK(strstr(err.msg, "/nonexistent/cc") != NULL);
    for (int i = 0; i < N; i++) free(srcs[i]);
}

/* Generated modules link together: their prelude helpers are static. */
static void test_parallel_matmuls(void) {
    const hc_target *t = hc_target_host();
    hc_matmul_shape s = {1, 9, 21, 17};
    hc_matmul_config c[16];
    int n = hc_matmul_space(t, &s, 1, c, 16);
    n = HC_MIN(n, 16);
    char **srcs = calloc((size_t)n, sizeof *srcs);
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "mm_%d", i);
        srcs[i] = hc_matmul_source(&s, &c[i], t, name, NULL);
        CHECK(srcs[i] != NULL);
    }
    hc_jit_options opt = {.cache_dir = cache};
    hc_jit_lib *lib = NULL;
    hc_error err;
    CHECK_MSG(hc_jit_build_parallel(n, (const char *const *)srcs, &opt, 2, &lib, &err) == HC_OK,
              "%s", err.msg);
    for (int i = 0; lib && i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "mm_%d", i);
        hc_matmul_kernel k;
        CHECK_MSG(hc_matmul_kernel_from_lib(lib, name, &k, &err) == HC_OK, "%s", err.msg);
    }
    hc_jit_close(lib);
    for (int i = 0; i < n; i++) free(srcs[i]);
    free(srcs);
}

/* ---- hc_tune_select ------------------------------------------------------------------ */
static float *random_buffer(int64_t n, uint64_t seed) {
    float *x = malloc(sizeof(float) * (size_t)n);
    hc_rng r = {seed};
    for (int64_t i = 0; i < n; i++) x[i] = (float)hc_rng_uniform(&r, -1, 1);
    return x;
}


/* max |A B - C| over C, the reference in double */
static double product_error(const hc_matmul_shape *s, const float *A, const float *B,
                            const float *C) {
    double maxerr = 0;
    for (int64_t i = 0; i < s->m; i++)
        for (int64_t j = 0; j < s->n; j++) {
            double ref = 0;
            for (int64_t k = 0; k < s->k; k++) ref += (double)A[i * s->k + k] * B[k * s->n + j];
            maxerr = fmax(maxerr, fabs(ref - C[i * s->n + j]));
        }
    return maxerr;
}

static void test_select(void) {
    const hc_target *t = hc_target_host();
    hc_matmul_shape s = {1, 96, 200, 160};
    hc_matmul_config c[64];
    int n = HC_MIN(hc_matmul_space(t, &s, 2, c, 64), 6);
    CHECK(n >= 3);
    hc_arena a;
    hc_arena_init(&a);
    hc_func *f[64];
    hc_error err;
    for (int i = 0; i < n; i++) {
        f[i] = hc_matmul_cpu(&a, hc_arena_printf(&a, "cand_%d", i), &s, &c[i], t, &err);
        CHECK(f[i] != NULL);
    }
    float *A = random_buffer(s.m * s.k, 1), *B = random_buffer(s.k * s.n, 2);
    float *C = malloc(sizeof(float) * (size_t)(s.m * s.n));
    void *args[3] = {A, B, C};
    hc_jit_options opt = {.cache_dir = cache};
    hc_progress p;
    hc_progress_begin(&p, "test", 1, n);
    hc_tune_result r;
    CHECK_MSG(hc_tune_select(&a, n, f, args, t, &opt, &p, &r, &err) == HC_OK, "%s", err.msg);
    CHECK(r.best >= 0 && r.best < n && r.ms != NULL);
    CHECK_EQ_INT(p.done, n); /* one step per candidate benchmarked */
    if (r.ms && r.best >= 0 && r.best < n) {
        for (int i = 0; i < n; i++) CHECK_MSG(r.ms[i] > 0 && r.ms[r.best] <= r.ms[i],
                                              "candidate %d: %g ms, best %d: %g ms", i, r.ms[i],
                                              r.best, r.ms[r.best]);
        CHECK(r.best_ms == r.ms[r.best]);
    }
    CHECK(r.compile_ms > 0 && r.bench_ms > 0);
    /* the scratch output holds a correct product (every candidate ran on it) */
    double maxerr = product_error(&s, A, B, C);
    CHECK_MSG(maxerr < 1e-3, "max error %g", maxerr);
    free(r.ms);

    /* B evicted from the caches before every timed run: still a valid choice and a
     * correct product, B untouched */
    float *B0 = malloc(sizeof(float) * (size_t)(s.k * s.n));
    memcpy(B0, B, sizeof(float) * (size_t)(s.k * s.n));
    memset(C, 0, sizeof(float) * (size_t)(s.m * s.n));
    const void *cold_ptr[1] = {B};
    size_t cold_bytes[1] = {sizeof(float) * (size_t)(s.k * s.n)};
    hc_tune_cold cold[64];
    void *const *each[64];
    for (int i = 0; i < n; i++) cold[i] = (hc_tune_cold){1, cold_ptr, cold_bytes}, each[i] = args;
    hc_tune_result rc;
    CHECK_MSG(hc_tune_select_each(&a, n, f, each, cold, t, &opt, NULL, &rc, &err) == HC_OK, "%s",
              err.msg);
    CHECK(rc.best >= 0 && rc.best < n && rc.best_ms > 0);
    CHECK(!memcmp(B0, B, sizeof(float) * (size_t)(s.k * s.n)));
    double coldmax = product_error(&s, A, B, C);
    CHECK_MSG(coldmax < 1e-3, "cold: max error %g", coldmax);
    free(rc.ms), free(B0);

    /* the second time the shared object comes from the cache: compiling costs little */
    hc_tune_result r2;
    CHECK(hc_tune_select(&a, n, f, args, t, &opt, NULL, &r2, &err) == HC_OK);
    CHECK_MSG(r2.compile_ms < r.compile_ms, "cached build %g ms, first %g ms", r2.compile_ms,
              r.compile_ms);
    free(r2.ms);
    /* a single candidate */
    CHECK(hc_tune_select(&a, 1, f, args, t, &opt, NULL, &r2, &err) == HC_OK && r2.best == 0);
    free(r2.ms);
    /* two candidates with one name */
    hc_func *dup[2] = {f[0], f[0]};
    CHECK_EQ_INT(hc_tune_select(&a, 2, dup, args, t, &opt, NULL, &r2, &err), HC_ERR_INVALID);
    CHECK(strstr(err.msg, "cand_0") != NULL);
    CHECK_EQ_INT(hc_tune_select(&a, 0, f, args, t, &opt, NULL, &r2, &err), HC_ERR_INVALID);
    hc_arena_free(&a);
    free(A), free(B), free(C);
}

/* The second pass's finalists: the 4 fastest, then the default (candidate 0) when slower */
static void test_finalists(void) {
    int order[8];
    /* the default among the fastest: 4 finalists, by time, ties by index */
    const double a[6] = {2.0, 5.0, 1.0, 2.0, 9.0, 3.0};
    CHECK_EQ_INT(hc_tune_finalists(6, a, order), 4);
    CHECK(order[0] == 2 && order[1] == 0 && order[2] == 3 && order[3] == 5);
    CHECK(order[4] == 1 && order[5] == 4);
    /* the default the slowest: it joins the 4 fastest, last */
    const double b[7] = {102.8, 87.6, 104.7, 79.0, 86.9, 125.9, 80.4};
    CHECK_EQ_INT(hc_tune_finalists(7, b, order), 5);
    CHECK(order[0] == 3 && order[1] == 6 && order[2] == 4 && order[3] == 1 && order[4] == 0);
    CHECK(order[5] == 2 && order[6] == 5); /* the rest, fastest first */
    /* fewer candidates than finalists: all of them */
    const double c[2] = {3.0, 1.0};
    CHECK_EQ_INT(hc_tune_finalists(2, c, order), 2);
    CHECK(order[0] == 1 && order[1] == 0);
    CHECK_EQ_INT(hc_tune_finalists(1, c, order), 1);
    CHECK(order[0] == 0);
}

/* ---- progress bar -------------------------------------------------------------------- */
static char *read_fd_file(const char *path) {
    char *text = NULL;
    size_t size = 0;
    if (hc_read_file(path, &text, &size, NULL) != HC_OK) return hc_xstrdup("");
    return text ? text : hc_xstrdup("");
}

static void test_progress(void) {
    char path[128];
    snprintf(path, sizeof path, "%s/stderr.txt", cache);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    /* stderr is a file: silent */
    hc_progress p;
    hc_progress_begin(&p, "tuning", 3, 10);
    CHECK(!p.active);
    for (int i = 0; i < 10; i++) hc_progress_step(&p, 1);
    hc_progress_task_done(&p);
    hc_progress_end(&p);
    CHECK_EQ_INT(p.done, 10);
    CHECK_EQ_INT(p.tasks_done, 1);
    hc_progress_step(NULL, 1), hc_progress_task_done(NULL), hc_progress_end(NULL);
    fflush(stderr);
    char *text = read_fd_file(path);
    CHECK_STR(text, "");
    free(text);
    /* drawn (as on a terminal): the bar, the counts, the ETA and a final line */
    hc_progress_begin(&p, "tuning", 2, 4);
    p.active = true;
    hc_progress_step(&p, 2);
    p.last_draw_ms = 0; /* no throttling for the test */
    hc_progress_task_done(&p);
    p.done = 7; /* more than announced must not break the bar */
    p.last_draw_ms = 0;
    hc_progress_step(&p, 0);
    hc_progress_end(&p);
    CHECK(!p.active);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    text = read_fd_file(path);
    CHECK_MSG(strstr(text, "tuning [##########..........] 1/2 tasks, 2/4 candidates") &&
                  strstr(text, "ETA ") && strstr(text, "elapsed") &&
                  strstr(text, "[####################] 1/2 tasks, 7/4") &&
                  strstr(text, "tuning: 1 tasks, 7 candidates in ") &&
                  text[strlen(text) - 1] == '\n',
              "progress output: %s", text);
    free(text);
    /* HIDETC_NO_PROGRESS=1 silences even a terminal */
    setenv("HIDETC_NO_PROGRESS", "1", 1);
    hc_progress_begin(&p, NULL, 1, 1);
    CHECK(!p.active);
    unsetenv("HIDETC_NO_PROGRESS");
}

/* Writes `text` to root/rel (its directories made). */
static void put_file(const char *root, const char *rel, const char *text) {
    char path[512], cmd[600];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    CHECK(system(cmd) == 0);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* Cache sizes come from the cache instance cpu0 uses, as sysfs states it: a stated AMD
 * EPYC Zen 3 tree (L1i and L1d, L2, a 32 MiB L3 slice; glibc's sysconf says 256 MiB
 * for the package there). Instruction caches are skipped; a missing level is 0. */
static void test_sysfs_caches(void) {
    char root[512];
    snprintf(root, sizeof root, "%s/sysfs", cache);
    const char *idx[][3] = {{"1", "Instruction", "64K"}, {"1", "Data", "32K"},
                            {"2", "Unified", "512K"}, {"3", "Unified", "32768K"}};
    for (int i = 0; i < 4; i++) {
        char rel[128];
        const char *what[3] = {"level", "type", "size"};
        for (int j = 0; j < 3; j++) {
            snprintf(rel, sizeof rel, "cpu0/cache/index%d/%s", i, what[j]);
            char text[32];
            snprintf(text, sizeof text, "%s\n", idx[i][j]);
            put_file(root, rel, text);
        }
    }
    CHECK(hc_cpu_sysfs_cache_size(root, 1) == 32 * 1024);
    CHECK(hc_cpu_sysfs_cache_size(root, 2) == 512 * 1024);
    CHECK(hc_cpu_sysfs_cache_size(root, 3) == 32LL * 1024 * 1024);
    CHECK(hc_cpu_sysfs_cache_size(root, 4) == 0);
    put_file(root, "cpu0/cache/index3/size", "2M\n"); /* the unit "M" */
    CHECK(hc_cpu_sysfs_cache_size(root, 3) == 2LL * 1024 * 1024);
    put_file(root, "cpu0/cache/index3/size", "garbage\n"); /* unreadable: none */
    CHECK(hc_cpu_sysfs_cache_size(root, 3) == 0);
    char missing[600];
    snprintf(missing, sizeof missing, "%s/none", root);
    CHECK(hc_cpu_sysfs_cache_size(missing, 1) == 0);
}

int main(void) {
    snprintf(cache, sizeof cache, "/tmp/hidetc-test-tune-XXXXXX");
    if (!mkdtemp(cache)) {
        perror("mkdtemp");
        return 1;
    }
    test_records();
    test_bench();
    test_parallel_build();
    test_parallel_matmuls();
    test_select();
    test_finalists();
    test_progress();
    test_sysfs_caches();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
    CHECK(system(cmd) == 0);
    TEST_DONE();
}
