/* gemm.c — hidetc's matmul template against OpenBLAS cblas_sgemm, side by side.
 *
 * For each shape and thread count both libraries run the same product on the same data,
 * alternating (the order flips every repetition), until each has run for --time seconds
 * (at least 7 times). Reported: the median GFLOP/s of each and the median of the
 * per-repetition ratios hidetc / OpenBLAS. Writes a Markdown table (--out FILE).
 *
 * usage: bench_gemm [--out FILE] [--threads 1,2] [--time SECONDS] [--command TEXT]
 *                   [--shapes MxNxK,...] [--section TITLE]
 * --section writes only a "## TITLE" part (table and medians) for appending to a report. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "target/cpu/templates/matmul.h"

typedef struct shape {
    int64_t m, n, k;
    const char *group; /* "square" or "dl" */
} shape;

static const shape default_shapes[] = {
    {128, 128, 128, "square"},    {256, 256, 256, "square"},    {512, 512, 512, "square"},
    {1024, 1024, 1024, "square"}, {2048, 2048, 2048, "square"}, {1, 1000, 2048, "dl"},
    {128, 768, 768, "dl"},        {128, 3072, 768, "dl"},       {128, 768, 3072, "dl"},
    {3136, 64, 576, "dl"},        {784, 128, 1152, "dl"},       {196, 256, 2304, "dl"},
    {49, 512, 4608, "dl"},        {2039, 2039, 2039, "square"},
};

typedef struct result {
    shape s;
    int threads;
    hc_matmul_config cfg;
    double hc_gflops, blas_gflops, ratio, max_diff;
    int reps;
} result;

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static float *random_matrix(int64_t n, uint64_t seed) {
    float *x = aligned_alloc(64, (size_t)((n * 4 + 63) / 64 * 64));
    hc_rng r = {seed};
    for (int64_t i = 0; i < n; i++) x[i] = (float)hc_rng_uniform(&r, -1, 1);
    return x;
}

static void run_blas(const shape *s, const float *A, const float *B, float *C) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)s->m, (int)s->n, (int)s->k, 1.0f,
                A, (int)s->k, B, (int)s->n, 0.0f, C, (int)s->n);
}

static void measure(result *r, const hc_matmul_kernel *kern, double min_ms) {
    const shape *s = &r->s;
    float *A = random_matrix(s->m * s->k, 1), *B = random_matrix(s->k * s->n, 2);
    float *C1 = random_matrix(s->m * s->n, 3), *C2 = random_matrix(s->m * s->n, 4);
    openblas_set_num_threads(r->threads);
    for (int i = 0; i < 3; i++) hc_matmul_run(kern, A, B, C1), run_blas(s, A, B, C2);
    r->max_diff = 0;
    for (int64_t i = 0; i < s->m * s->n; i++)
        r->max_diff = fmax(r->max_diff, fabs((double)C1[i] - (double)C2[i]));
    enum { MAX_REPS = 2000 };
    static double th[MAX_REPS], tb[MAX_REPS], ratio[MAX_REPS];
    double spent_h = 0, spent_b = 0;
    int n = 0;
    while (n < MAX_REPS && (n < 7 || spent_h < min_ms || spent_b < min_ms)) {
        for (int turn = 0; turn < 2; turn++) {
            double t0 = hc_now_ms();
            if ((turn + n) % 2 == 0) hc_matmul_run(kern, A, B, C1);
            else run_blas(s, A, B, C2);
            double dt = hc_now_ms() - t0;
            if ((turn + n) % 2 == 0) th[n] = dt, spent_h += dt;
            else tb[n] = dt, spent_b += dt;
        }
        ratio[n] = tb[n] / th[n];
        n++;
    }
    double flops = 2.0 * (double)s->m * (double)s->n * (double)s->k;
    r->reps = n;
    r->ratio = median(ratio, n);
    r->hc_gflops = flops / median(th, n) * 1e-6;
    r->blas_gflops = flops / median(tb, n) * 1e-6;
    free(A), free(B), free(C1), free(C2);
}

static void cpu_model(char *out, size_t cap) {
    snprintf(out, cap, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) || !colon) continue;
        snprintf(out, cap, "%s", colon + 2);
        out[strcspn(out, "\n")] = 0;
        break;
    }
    fclose(f);
}

/* "L1d 32K, L2 1024K, ..." as the kernel reports them (sysconf can disagree in VMs) */
static void sys_caches(char *out, size_t cap) {
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < 8 && len < cap; i++) {
        char path[128], level[16] = "", type[32] = "", size[32] = "";
        const char *fields[3] = {"level", "type", "size"};
        char *vals[3] = {level, type, size};
        for (int j = 0; j < 3; j++) {
            snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/%s", i,
                     fields[j]);
            FILE *f = fopen(path, "r");
            if (!f) continue;
            if (!fgets(vals[j], 16, f)) vals[j][0] = 0;
            vals[j][strcspn(vals[j], "\n")] = 0;
            fclose(f);
        }
        if (!size[0] || !strcmp(type, "Instruction")) continue;
        len += (size_t)snprintf(out + len, cap - len, "%sL%s%s %s", len ? ", " : "", level,
                                !strcmp(type, "Data") ? "d" : "", size);
    }
    if (!len) snprintf(out, cap, "unknown");
}

static double group_median(const result *rs, int n, int threads, const char *group,
                           int64_t min_dim) {
    double v[64];
    int k = 0;
    for (int i = 0; i < n && k < 64; i++)
        if (rs[i].threads == threads && !strcmp(rs[i].s.group, group) && rs[i].s.m >= min_dim)
            v[k++] = rs[i].ratio;
    return k ? median(v, k) : NAN;
}

static void write_table(FILE *f, const result *rs, int n);

static char load_start[64], load_end[64];

static void read_loadavg(char *out, size_t cap) {
    snprintf(out, cap, "unknown");
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return;
    if (fgets(out, (int)cap, f)) out[strcspn(out, "\n")] = 0;
    fclose(f);
}

/* The whole report, or with `section` only a "## section" part to append to one. */
static void write_report(FILE *f, const result *rs, int n, const char *command,
                         const char *section) {
    const hc_target *t = hc_target_host();
    char cpu[256], date[64];
    cpu_model(cpu, sizeof cpu);
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    const char *cflags = t->cflags ? t->cflags : "";
    if (section) {
        fprintf(f, "\n## %s\n\n- Date: %s\n- Command: `%s`\n", section, date, command);
        fprintf(f, "- /proc/loadavg before: `%s`; after: `%s`\n\n", load_start, load_end);
        write_table(f, rs, n);
        return;
    }
    fprintf(f, "# GEMM: hidetc matmul template vs OpenBLAS sgemm\n\n");
    fprintf(f, "- Date: %s\n", date);
    char caches[256];
    sys_caches(caches, sizeof caches);
    fprintf(f, "- Machine: %s, %d cores, ISA %s, caches (sysfs, cpu0): %s\n", cpu, t->caps.num_cores,
            hc_isa_name(t->caps.isa), caches);
    fprintf(f, "- OpenBLAS: %s; core type %s\n", openblas_get_config(), openblas_get_corename());
    fprintf(f, "- hidetc kernels: default config per shape and thread count, compiled with `%s`\n",
            cflags);
    fprintf(f, "- Command: `%s`\n", command);
    fprintf(f, "- /proc/loadavg before: `%s`; after: `%s` (the machine is shared)\n", load_start,
            load_end);
    fprintf(f, "- Method: row-major C = A x B, fp32, inputs uniform in [-1, 1]; both libraries in "
               "one process, alternating every repetition; GFLOP/s from median times; ratio = "
               "median of per-repetition ratios (OpenBLAS time / hidetc time).\n");
    fprintf(f, "- Two threads on a 2-core machine: after each call idle OpenBLAS workers keep "
               "spinning with sched_yield (by default for up to 2^28 cycles) and take a core "
               "from hidetc's next run, while hidetc's idle OpenMP workers sleep "
               "(OMP_WAIT_POLICY=passive). Where a second table follows, it repeats the "
               "2-thread runs with OPENBLAS_THREAD_TIMEOUT=10 so that both sleep promptly.\n\n");
    write_table(f, rs, n);
}

static void write_table(FILE *f, const result *rs, int n) {
    fprintf(f, "| M x N x K | threads | hidetc GFLOP/s | OpenBLAS GFLOP/s | ratio | reps | "
               "max diff | hidetc config |\n");
    fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < n; i++) {
        const result *r = &rs[i];
        hc_sb sb;
        hc_sb_init(&sb);
        hc_matmul_config_print(&sb, &r->cfg);
        fprintf(f, "| %lldx%lldx%lld | %d | %.1f | %.1f | %.2f | %d | %.1e | %s |\n",
                (long long)r->s.m, (long long)r->s.n, (long long)r->s.k, r->threads, r->hc_gflops,
                r->blas_gflops, r->ratio, r->reps, r->max_diff, hc_sb_str(&sb));
        hc_sb_free(&sb);
    }
    fprintf(f, "\nMedian ratio (hidetc / OpenBLAS):\n\n");
    for (int th = 1; th <= HC_MATMUL_MAX_THREADS; th++) {
        double sq = group_median(rs, n, th, "square", 512), dl = group_median(rs, n, th, "dl", 0);
        if (isnan(sq) && isnan(dl)) continue;
        fprintf(f, "- %d thread%s: squares >= 512: %.2f; deep-learning shapes: %.2f\n", th,
                th > 1 ? "s" : "", sq, dl);
    }
}

static int parse_list(const char *s, int *out, int cap) {
    int n = 0;
    while (*s && n < cap) {
        out[n++] = atoi(s);
        s = strchr(s, ',');
        if (!s) break;
        s++;
    }
    return n;
}

static int parse_shapes(const char *s, shape *out, int cap) {
    int n = 0;
    while (*s && n < cap) {
        long long m, nn, k;
        if (sscanf(s, "%lldx%lldx%lld", &m, &nn, &k) != 3 || m < 1 || nn < 1 || k < 1) return -1;
        out[n++] = (shape){m, nn, k, m == nn && nn == k ? "square" : "dl"};
        s = strchr(s, ',');
        if (!s) break;
        s++;
    }
    return n;
}

int main(int argc, char **argv) {
    const char *out_path = NULL, *command = NULL, *section = NULL;
    int threads[8] = {1, 2}, nthreads = 2;
    double seconds = 1.0;
    shape shapes[64];
    int nshapes = (int)HC_ARRAY_LEN(default_shapes);
    memcpy(shapes, default_shapes, sizeof default_shapes);
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return fprintf(stderr, "bench_gemm: %s needs a value\n", argv[i]), 2;
        if (!strcmp(argv[i], "--out")) out_path = v;
        else if (!strcmp(argv[i], "--threads")) nthreads = parse_list(v, threads, 8);
        else if (!strcmp(argv[i], "--time")) seconds = atof(v);
        else if (!strcmp(argv[i], "--command")) command = v;
        else if (!strcmp(argv[i], "--section")) section = v;
        else if (!strcmp(argv[i], "--shapes")) nshapes = parse_shapes(v, shapes, 64);
        else return fprintf(stderr, "bench_gemm: unknown option %s\n", argv[i]), 2;
        if (nshapes < 1 || nthreads < 1) return fprintf(stderr, "bench_gemm: bad list\n"), 2;
        i++;
    }
    const hc_target *t = hc_target_host();
    int n = nshapes * nthreads;
    result *rs = calloc((size_t)n, sizeof *rs);
    char **sources = calloc((size_t)n, sizeof *sources);
    hc_jit_lib **libs = calloc((size_t)n, sizeof *libs);
    hc_error err;
    for (int i = 0; i < n; i++) {
        result *r = &rs[i];
        r->s = shapes[i / nthreads], r->threads = threads[i % nthreads];
        hc_matmul_shape ms = {1, r->s.m, r->s.n, r->s.k};
        r->cfg = hc_matmul_default_config(t, &ms);
        hc_matmul_config_set_threads(&r->cfg, &ms, r->threads);
        sources[i] = hc_matmul_source(&ms, &r->cfg, t, "matmul", &err);
        if (!sources[i]) return fprintf(stderr, "bench_gemm: %s\n", err.msg), 1;
    }
    fprintf(stderr, "building %d kernels...\n", n);
    read_loadavg(load_start, sizeof load_start);
    if (hc_jit_build_many(n, (const char *const *)sources, NULL, 0, libs, &err))
        return fprintf(stderr, "bench_gemm: %s\n", err.msg), 1;
    for (int i = 0; i < n; i++) {
        result *r = &rs[i];
        hc_matmul_kernel kern;
        if (hc_matmul_kernel_from_lib(libs[i], "matmul", &kern, &err))
            return fprintf(stderr, "bench_gemm: %s\n", err.msg), 1;
        measure(r, &kern, seconds * 1000);
        printf("%5lldx%5lldx%5lld t%d  hidetc %7.1f  openblas %7.1f  ratio %.2f  (%d reps, "
               "max diff %.1e)\n", (long long)r->s.m, (long long)r->s.n, (long long)r->s.k,
               r->threads, r->hc_gflops, r->blas_gflops, r->ratio, r->reps, r->max_diff);
        fflush(stdout);
        hc_jit_close(libs[i]);
        free(sources[i]);
    }
    read_loadavg(load_end, sizeof load_end);
    if (out_path) {
        FILE *f = fopen(out_path, "w");
        if (!f) return fprintf(stderr, "bench_gemm: cannot write %s\n", out_path), 1;
        write_report(f, rs, n, command ? command : "bench_gemm", section);
        fclose(f);
        printf("wrote %s\n", out_path);
    }
    free(rs), free(sources), free(libs);
    return 0;
}
