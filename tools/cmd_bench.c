/* hidetc bench MODEL [--threads T] [--warmup W] [--repeat R] [--profile N] [--verbose]
 *
 * Compiles once, feeds the deterministic random inputs of `hidetc run`, runs W untimed
 * and R timed iterations. --profile N then times each kernel over R more runs and lists
 * the N slowest. Output (relied on by scripts), the last line being:
 *   median_ms: X min_ms: Y max_ms: Z */
#include <string.h>

#include "cli.h"
#include "model_load.h"

typedef struct bench_args {
    const char *model;
    long threads, warmup, repeat, profile;
    bool verbose;
} bench_args;

static void usage(FILE *f) {
    fprintf(f, "usage: hidetc bench MODEL [--threads T] [--warmup W] [--repeat R] [--profile N]\n"
               "                          [--verbose]\n"
               "  MODEL: an ONNX file or builtin:NAME; defaults: all cores, W = 3, R = 10\n"
               "  --profile N: list the N slowest kernels\n");
}

static int parse_args(int argc, char **argv, bench_args *r) {
    memset(r, 0, sizeof *r);
    r->warmup = 3, r->repeat = 10;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        long *dst = NULL, lo = 0;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) return usage(stdout), -1;
        if (!strcmp(o, "--verbose")) r->verbose = true;
        else if (!strcmp(o, "--threads")) dst = &r->threads, lo = 1;
        else if (!strcmp(o, "--warmup")) dst = &r->warmup;
        else if (!strcmp(o, "--repeat")) dst = &r->repeat, lo = 1;
        else if (!strcmp(o, "--profile")) dst = &r->profile, lo = 1;
        else if (o[0] == '-' && o[1]) {
            fprintf(stderr, "hidetc bench: unknown option '%s'\n", o);
            return usage(stderr), 2;
        } else if (r->model) {
            fprintf(stderr, "hidetc bench: more than one MODEL ('%s', '%s')\n", r->model, o);
            return 2;
        } else r->model = o;
        if (dst) {
            if (!cli_parse_int("bench", o, val, lo, 100000, dst)) return 2;
            i++;
        }
    }
    if (!r->model) return usage(stderr), 2;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct kernel_time {
    int kernel;
    double ms;
} kernel_time;

static int slower_first(const void *a, const void *b) {
    double x = ((const kernel_time *)a)->ms, y = ((const kernel_time *)b)->ms;
    return x > y ? -1 : x < y;
}

static void print_kernel(const hc_model *m, const kernel_time *k, double total, long runs) {
    const hc_node *n = hc_model_kernel_node(m, k->kernel);
    const char *op = hc_op_onnx_name(n->op)[0] ? hc_op_onnx_name(n->op) : hc_op_name(n->op);
    hc_sb sb;
    hc_sb_init(&sb);
    for (int i = 0; i < n->noutputs; i++)
        if (n->outputs[i]) hc_print_shape(&sb, n->outputs[i]->ndim, n->outputs[i]->shape);
    printf("  %9.3f ms %5.1f%%  %s (%s, %s) -> %s\n", k->ms / (double)runs,
           total > 0 ? 100 * k->ms / total : 0, n->name, op,
           hc_model_kernel_templated(m, k->kernel) ? "template" : "auto", hc_sb_str(&sb));
    hc_sb_free(&sb);
}

/* Per-kernel times summed over R runs; the N slowest kernels, per run. */
static int profile_kernels(const bench_args *r, hc_model *m, cli_buffers *b) {
    int nk = hc_model_num_kernels(m);
    kernel_time *kt = hc_xcalloc((size_t)nk + 1, sizeof *kt);
    double *ms = hc_xcalloc((size_t)nk + 1, sizeof(double)), total = 0;
    hc_error err = {0};
    for (int i = 0; i < nk; i++) kt[i].kernel = i;
    for (long run = 0; run < r->repeat; run++) {
        if (hc_model_run_profile(m, b->in, b->out, ms, &err) != HC_OK) {
            fprintf(stderr, "hidetc bench: %s\n", err.msg);
            free(kt), free(ms);
            return 1;
        }
        for (int i = 0; i < nk; i++) kt[i].ms += ms[i], total += ms[i];
    }
    qsort(kt, (size_t)nk, sizeof *kt, slower_first);
    printf("profile: %d kernels, %.3f ms per run in kernels; the slowest:\n", nk,
           total / (double)r->repeat);
    for (int i = 0; i < nk && i < r->profile; i++) print_kernel(m, &kt[i], total, r->repeat);
    free(kt), free(ms);
    return 0;
}

static int time_runs(const bench_args *r, hc_model *m, cli_buffers *b) {
    hc_error err = {0};
    double *ms = hc_xcalloc((size_t)r->repeat, sizeof(double));
    int rc = 0;
    for (long i = 0; !rc && i < r->warmup + r->repeat; i++) {
        double t0 = hc_now_ms();
        if (hc_model_run(m, b->in, b->out, &err) != HC_OK) {
            fprintf(stderr, "hidetc bench: %s\n", err.msg);
            rc = 1;
        }
        if (i >= r->warmup) ms[i - r->warmup] = hc_now_ms() - t0;
    }
    if (!rc && r->profile) rc = profile_kernels(r, m, b);
    if (!rc) {
        qsort(ms, (size_t)r->repeat, sizeof(double), cmp_double);
        long n = r->repeat;
        double median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
        printf("median_ms: %.3f min_ms: %.3f max_ms: %.3f\n", median, ms[0], ms[n - 1]);
    }
    free(ms);
    return rc;
}

int cmd_bench(int argc, char **argv) {
    bench_args r;
    int rc = parse_args(argc, argv, &r);
    if (rc) return rc < 0 ? 0 : rc;
    hc_error err = {0};
    hc_graph *g;
    if (cli_load_model(r.model, &g, &err) != HC_OK) {
        fprintf(stderr, "hidetc bench: %s\n", err.msg);
        return 1;
    }
    hc_compile_options opt = {.num_threads = (int)r.threads, .verbose = r.verbose};
    hc_model *m;
    double t0 = hc_now_ms();
    if (hc_model_compile(g, &opt, &m, &err) != HC_OK) {
        fprintf(stderr, "hidetc bench: %s\n", err.msg);
        return 1;
    }
    printf("model: %s\ncompile_ms: %.0f\nkernels: %d\narena_bytes: %zu\n", r.model,
           hc_now_ms() - t0, hc_model_num_kernels(m), hc_model_arena_bytes(m));
    printf("threads: %ld warmup: %ld repeat: %ld\n",
           r.threads ? r.threads : (long)hc_target_host()->num_cores, r.warmup, r.repeat);
    fflush(stdout);
    cli_buffers b;
    cli_buffers_alloc(m, &b);
    cli_random_inputs(m, &b);
    rc = time_runs(&r, m, &b);
    cli_buffers_free(&b);
    hc_model_free(m);
    return rc;
}
