/* hidetc bench MODEL [--threads T] [--warmup W] [--repeat R] [--profile N] [--gap-ms G]
 *                    [--input NAME=FILE.npy ...] [--serve] [--verbose]
 *
 * Compiles once, feeds the deterministic random inputs of `hidetc run` (or the --input
 * files), runs W untimed and R timed iterations. --profile N then times each kernel over
 * R more runs and lists the N slowest, with the GFLOP/s each achieves (hc_node_flops of
 * the kernel's anchor node) against the machine's peak, measured first by timing a large
 * fp32 matmul (hidetc's matmul template, the same threads). --gap-ms G sleeps G ms before
 * every timed or profiled run: a server's requests arrive apart, and what a back-to-back
 * loop keeps warm (the cores' clocks, the caches) has cooled by then (docs/bench.md). Output (relied on by
 * scripts), the last line being:
 *   median_ms: X min_ms: Y max_ms: Z
 * With --profile, before it:
 *   peak_gflops: P (...)
 *   profile: K kernels, T ms per run in kernels, F GFLOP per run (...); the slowest:
 *     (per kernel: ...)
 *     T ms S%  G GFLOP/s  Q%  NAME (OP, template|auto) -> [SHAPE]
 *
 * --serve (for bench/compare, which drives several systems round by round): after the
 * compile lines, prints "ready" and then answers one line per request read from stdin:
 *   run          -> "ms X"   (one timed run)
 *   save DIR     -> "ok"     (outputs written as DIR/out<i>.npy, i = output index)
 *   quit or EOF  -> exit 0
 * A failure answers "error MESSAGE" and exits 1. */
#include <string.h>
#include <time.h>

#include "cli.h"
#include "core/npy.h"
#include "graph/flops.h"
#include "hidetc.h"
#include "model_load.h"

#define MAX_INPUT_ARGS 16

typedef struct bench_args {
    const char *model;
    long threads, warmup, repeat, profile, gap_ms;
    bool verbose, serve;
    hc_compile_options co;
    int ninputs;
    const char *input_names[MAX_INPUT_ARGS], *input_files[MAX_INPUT_ARGS];
} bench_args;

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: hidetc bench MODEL [--threads T] [--warmup W] [--repeat R] [--profile N]\n"
        "                          [--gap-ms G] [--input NAME=FILE.npy ...] [--serve] " CLI_COMPILE_OPTIONS_USAGE
        " [--verbose]\n"
        "  MODEL: an ONNX file, builtin:NAME or a file written by hidetc compile;\n"
        "  defaults: all cores, W = 3, R = 10\n" CLI_COMPILE_OPTIONS_HELP
        "  --profile N: list the N slowest kernels, with GFLOP/s against the peak\n"
        "  --gap-ms G: sleep G ms before each timed run (requests that arrive apart)\n"
        "  --input: an input's values (others are random)\n"
        "  --serve: answer 'run', 'save DIR' and 'quit' requests on stdin\n");
}

/* --input NAME=FILE.npy; val is argv memory, split in place. */
static int parse_input_arg(bench_args *r, char *val) {
    char *eq = val ? strchr(val, '=') : NULL;
    if (!eq || eq == val || !eq[1]) {
        fprintf(stderr, "hidetc bench: --input expects NAME=FILE.npy, got '%s'\n",
                val ? val : "(nothing)");
        return 2;
    }
    if (r->ninputs == MAX_INPUT_ARGS) {
        fprintf(stderr, "hidetc bench: more than %d --input options\n", MAX_INPUT_ARGS);
        return 2;
    }
    *eq = '\0';
    r->input_names[r->ninputs] = val;
    r->input_files[r->ninputs++] = eq + 1;
    return 0;
}

static int parse_args(int argc, char **argv, bench_args *r) {
    memset(r, 0, sizeof *r);
    r->warmup = 3, r->repeat = 10;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        long *dst = NULL, lo = 0;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) return usage(stdout), -1;
        int co = cli_compile_option("bench", o, val, &r->co);
        if (co < 0) return 2;
        if (co) {
            i += co - 1;
            continue;
        }
        if (!strcmp(o, "--verbose")) r->verbose = true;
        else if (!strcmp(o, "--serve")) r->serve = true;
        else if (!strcmp(o, "--threads")) dst = &r->threads, lo = 1;
        else if (!strcmp(o, "--warmup")) dst = &r->warmup;
        else if (!strcmp(o, "--repeat")) dst = &r->repeat, lo = 1;
        else if (!strcmp(o, "--profile")) dst = &r->profile, lo = 1;
        else if (!strcmp(o, "--gap-ms")) dst = &r->gap_ms;
        else if (!strcmp(o, "--input")) {
            int rc = parse_input_arg(r, i + 1 < argc ? argv[i + 1] : NULL);
            if (rc) return rc;
            i++;
        } else if (o[0] == '-' && o[1]) {
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

/* ---- the machine's peak ---------------------------------------------------------- */
#define PEAK_SIZE 1024
#define PEAK_RUNS 10

/* GFLOP/s of hidetc's fp32 matmul template on PEAK_SIZE^3 with T threads, the best of
 * PEAK_RUNS runs after one warm-up: what the kernels of a model can hope to reach. 0 and
 * a message on stderr when the matmul cannot be built (the profile still prints). */
static double measure_peak(long threads) {
    hidetc_options opt = {.num_threads = (int)threads};
    hidetc_matmul *mm;
    if (hidetc_matmul_init(&mm, 1, PEAK_SIZE, PEAK_SIZE, PEAK_SIZE, &opt) != HIDETC_OK) {
        fprintf(stderr, "hidetc bench: peak matmul: %s\n", hidetc_last_error());
        return 0;
    }
    size_t n = (size_t)PEAK_SIZE * PEAK_SIZE;
    float *a = hc_xcalloc(n, sizeof *a), *b = hc_xcalloc(n, sizeof *b), *c = hc_xcalloc(n, sizeof *c);
    for (size_t i = 0; i < n; i++) a[i] = (float)(i % 7) * 0.25f, b[i] = (float)(i % 5) * 0.5f;
    double best = 0;
    for (int run = 0; run <= PEAK_RUNS; run++) {
        double t0 = hc_now_ms();
        hidetc_matmul_run(mm, a, b, c);
        double ms = hc_now_ms() - t0;
        if (run > 0 && (best == 0 || ms < best)) best = ms;
    }
    hidetc_matmul_free(mm);
    free(a), free(b), free(c);
    return best > 0 ? 2.0 * PEAK_SIZE * PEAK_SIZE * PEAK_SIZE / best * 1e-6 : 0;
}

/* ---- profile ------------------------------------------------------------------- */
typedef struct kernel_time {
    int kernel;
    double ms; /* summed over the runs */
} kernel_time;

static int slower_first(const void *a, const void *b) {
    double x = ((const kernel_time *)a)->ms, y = ((const kernel_time *)b)->ms;
    return x > y ? -1 : x < y;
}

static double gflops(double flops, double ms) { return ms > 0 ? flops / ms * 1e-6 : 0; }

/* Kernel k's anchor: its FLOPs and output shapes (a symbolic model's at the run's
 * binding: the shapes evaluated there for the count, then put back). */
typedef struct kernel_desc {
    double flops;
    char *shape;
} kernel_desc;

static kernel_desc describe_kernel(const hc_model *m, int k, const hc_sym_binding *b) {
    hc_node *n = (hc_node *)hc_model_kernel_node(m, k);
    enum { MAXT = 64 };
    int64_t saved[MAXT][HC_MAX_DIMS];
    hc_tensor *ts[MAXT];
    int nt = 0;
    for (int pass = 0; pass < 2 && b; pass++)
        for (int i = 0; i < (pass ? n->noutputs : n->ninputs); i++) {
            hc_tensor *t = pass ? n->outputs[i] : n->inputs[i];
            if (!t || !t->sym || nt == MAXT) continue;
            ts[nt] = t;
            memcpy(saved[nt++], t->shape, sizeof(int64_t) * (size_t)t->ndim);
            for (int d = 0; d < t->ndim; d++)
                if (t->sym[d]) hc_sym_eval(t->sym[d], b, &t->shape[d]);
        }
    kernel_desc kd = {hc_node_flops(n), NULL};
    hc_sb sb;
    hc_sb_init(&sb);
    for (int i = 0; i < n->noutputs; i++)
        if (n->outputs[i]) hc_print_shape(&sb, n->outputs[i]->ndim, n->outputs[i]->shape);
    kd.shape = hc_sb_take(&sb);
    for (int q = 0; q < nt; q++) memcpy(ts[q]->shape, saved[q], sizeof(int64_t) * (size_t)ts[q]->ndim);
    return kd;
}

static void print_kernel(const hc_model *m, const kernel_time *k, const kernel_desc *kd,
                         double total, long runs, double peak) {
    const hc_node *n = hc_model_kernel_node(m, k->kernel);
    const char *op = hc_op_onnx_name(n->op)[0] ? hc_op_onnx_name(n->op) : hc_op_name(n->op);
    double ms = k->ms / (double)runs, gf = gflops(kd->flops, ms);
    printf("  %9.3f ms %5.1f%%  %8.2f GFLOP/s %5.1f%%  %s (%s, %s) -> %s\n", ms,
           total > 0 ? 100 * k->ms / total : 0, gf, peak > 0 ? 100 * gf / peak : 0, n->name,
           op, hc_model_kernel_templated(m, k->kernel) ? "template" : "auto", kd->shape);
}

/* The inputs' dims of every run (a symbolic model's, at --bind or the hints). */
static const int64_t *const *g_dims;
static const hc_tensor *g_views; /* the inputs with those dims */

/* --gap-ms: the pause before a timed or profiled run, outside its time. */
static void gap(const bench_args *r) {
    if (r->gap_ms > 0)
        nanosleep(&(struct timespec){r->gap_ms / 1000, r->gap_ms % 1000 * 1000000L}, NULL);
}

/* Per-kernel times summed over R runs; the N slowest kernels, per run. */
static int profile_kernels(const bench_args *r, hc_model *m, cli_buffers *b) {
    long threads = r->threads ? r->threads : (long)hc_model_num_threads(m);
    double peak = measure_peak(threads);
    printf("peak_gflops: %.2f (fp32 matmul %dx%dx%d, hidetc's template, %ld threads, best of "
           "%d runs)\n", peak, PEAK_SIZE, PEAK_SIZE, PEAK_SIZE, threads, PEAK_RUNS);
    int nk = hc_model_num_kernels(m);
    kernel_time *kt = hc_xcalloc((size_t)nk + 1, sizeof *kt);
    double *ms = hc_xcalloc((size_t)nk + 1, sizeof(double)), total = 0, flops = 0;
    hc_error err = {0};
    /* a symbolic model tuned at several shapes runs one entry of each dispatch set */
    bool *runs = hc_xcalloc((size_t)nk + 1, sizeof(bool));
    if (hc_model_kernels_at(m, g_dims, runs, &err) != HC_OK) {
        fprintf(stderr, "hidetc bench: %s\n", err.msg);
        free(kt), free(ms), free(runs);
        return 1;
    }
    const hc_graph *g = hc_model_graph(m);
    int64_t *values = hc_xcalloc(g->sym_names.len + 1, sizeof(int64_t));
    hc_sym_binding bind = {(int)g->sym_names.len, g->sym_names.data, values};
    if (hc_model_bind(m, g_dims, values, &err) != HC_OK) {
        fprintf(stderr, "hidetc bench: %s\n", err.msg);
        free(kt), free(ms), free(runs), free(values);
        return 1;
    }
    kernel_desc *kd = hc_xcalloc((size_t)nk + 1, sizeof *kd);
    int nrun = 0;
    for (int i = 0; i < nk; i++) {
        if (!runs[i]) continue;
        kd[i] = describe_kernel(m, i, g->sym_names.len ? &bind : NULL);
        kt[nrun++].kernel = i, flops += kd[i].flops;
    }
    free(runs), free(values);
    for (long run = 0; run < r->repeat; run++) {
        gap(r);
        if (hc_model_run_dims(m, b->in, g_dims, b->out, ms, &err) != HC_OK) {
            fprintf(stderr, "hidetc bench: %s\n", err.msg);
            for (int i = 0; i < nk; i++) free(kd[i].shape);
            free(kt), free(ms), free(kd);
            return 1;
        }
        for (int i = 0; i < nrun; i++) kt[i].ms += ms[kt[i].kernel], total += ms[kt[i].kernel];
    }
    qsort(kt, (size_t)nrun, sizeof *kt, slower_first);
    double per_run = total / (double)r->repeat, gf = gflops(flops, per_run);
    printf("profile: %d kernels, %.3f ms per run in kernels, %.6f GFLOP per run (%.2f GFLOP/s, "
           "%.1f%% of peak); the slowest:\n", nrun, per_run, flops * 1e-9, gf,
           peak > 0 ? 100 * gf / peak : 0);
    printf("  (per kernel: ms per run, share of the kernel time, GFLOP/s, share of the peak, "
           "anchor node (op, template|auto) -> output shape)\n");
    for (int i = 0; i < nrun && i < r->profile; i++)
        print_kernel(m, &kt[i], &kd[kt[i].kernel], total, r->repeat, peak);
    if (nrun < nk)
        printf("  (dispatch: %d kernels are alternatives tuned for other shapes, not run at this "
               "one)\n", nk - nrun);
    for (int i = 0; i < nk; i++) free(kd[i].shape);
    free(kt), free(ms), free(kd);
    return 0;
}

/* ---- timing ---------------------------------------------------------------------- */
static int time_runs(const bench_args *r, hc_model *m, cli_buffers *b) {
    hc_error err = {0};
    double *ms = hc_xcalloc((size_t)r->repeat, sizeof(double));
    int rc = 0;
    for (long i = 0; !rc && i < r->warmup + r->repeat; i++) {
        if (i >= r->warmup) gap(r);
        double t0 = hc_now_ms();
        if (hc_model_run_dims(m, b->in, g_dims, b->out, NULL, &err) != HC_OK) {
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

/* ---- inputs from files ------------------------------------------------------------ */
static bool same_shape(const hc_tensor *t, const hc_npy *n) {
    if (t->ndim != n->ndim) return false;
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] != n->shape[d]) return false;
    return true;
}

/* Copies each --input file into the buffer of the model input of that name. */
static int load_inputs(const bench_args *r, const hc_model *m, cli_buffers *b) {
    for (int k = 0; k < r->ninputs; k++) {
        int i = 0;
        while (i < b->nin && strcmp(hc_model_input(m, i)->name, r->input_names[k])) i++;
        if (i == b->nin) {
            fprintf(stderr, "hidetc bench: the model has no input '%s'\n", r->input_names[k]);
            return 1;
        }
        const hc_tensor *t = g_views ? &g_views[i] : hc_model_input(m, i);
        hc_npy npy;
        hc_error err = {0};
        if (hc_npy_read(r->input_files[k], &npy, &err) != HC_OK) {
            fprintf(stderr, "hidetc bench: input '%s': %s\n", t->name, err.msg);
            return 1;
        }
        bool ok = npy.dtype == t->dtype && same_shape(t, &npy);
        if (ok) memcpy(b->in[i], npy.data, hc_tensor_nbytes(t));
        else {
            hc_sb want, got;
            hc_sb_init(&want), hc_sb_init(&got);
            hc_print_shape(&want, t->ndim, t->shape);
            hc_print_shape(&got, npy.ndim, npy.shape);
            fprintf(stderr, "hidetc bench: input '%s': %s holds %s %s, the model expects %s %s\n",
                    t->name, r->input_files[k], hc_dtype_name(npy.dtype), hc_sb_str(&got),
                    hc_dtype_name(t->dtype), hc_sb_str(&want));
            hc_sb_free(&want), hc_sb_free(&got);
        }
        hc_npy_free(&npy);
        if (!ok) return 1;
    }
    return 0;
}

/* ---- --serve ------------------------------------------------------------------- */
static int save_outputs(const hc_model *m, const cli_buffers *b, const char *dir, hc_error *err) {
    for (int i = 0; i < b->nout; i++) {
        const hc_tensor *t = hc_model_output(m, i);
        hc_sb path;
        hc_sb_init(&path);
        hc_sb_printf(&path, "%s/out%d.npy", dir, i);
        hc_status st = hc_npy_write(hc_sb_str(&path), t->dtype, t->ndim, t->shape, b->out[i], err);
        hc_sb_free(&path);
        if (st != HC_OK) return 1;
    }
    return 0;
}

static int serve(hc_model *m, cli_buffers *b) {
    char line[4096];
    printf("ready\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = '\0';
        hc_error err = {0};
        if (!strcmp(line, "quit")) break;
        if (!strcmp(line, "run")) {
            double t0 = hc_now_ms();
            if (hc_model_run_dims(m, b->in, g_dims, b->out, NULL, &err) != HC_OK) return printf("error %s\n", err.msg), 1;
            printf("ms %.4f\n", hc_now_ms() - t0);
        } else if (!strncmp(line, "save ", 5) && line[5]) {
            if (save_outputs(m, b, line + 5, &err)) return printf("error %s\n", err.msg), 1;
            printf("ok\n");
        } else {
            printf("error unknown request '%s' (run, save DIR, quit)\n", line);
            return 1;
        }
        fflush(stdout);
    }
    return 0;
}

int cmd_bench(int argc, char **argv) {
    bench_args r;
    int rc = parse_args(argc, argv, &r);
    if (rc) return rc < 0 ? 0 : rc;
    hc_error err = {0};
    hc_compile_options opt = r.co;
    opt.num_threads = (int)r.threads, opt.verbose = r.verbose;
    hc_model *m;
    double t0 = hc_now_ms();
    if (cli_open_model(r.model, &opt, &m, &err) != HC_OK) { /* compile, or load a file */
        fprintf(stderr, "hidetc bench: %s\n", err.msg);
        return 1;
    }
    printf("model: %s\ncompile_ms: %.0f\nkernels: %d\narena_bytes: %zu\n", r.model,
           hc_now_ms() - t0, hc_model_num_kernels(m), hc_model_arena_bytes(m));
    printf("threads: %ld warmup: %ld repeat: %ld\n",
           r.threads ? r.threads : (long)hc_model_num_threads(m), r.warmup, r.repeat);
    fflush(stdout);
    cli_io io;
    if (cli_io_make(m, 0, NULL, NULL, NULL, &io, &err) != HC_OK) {
        fprintf(stderr, "hidetc bench: %s\n", err.msg);
        hc_model_free(m);
        return 1;
    }
    if (io.binding) printf("symbols: %s\n", io.binding);
    g_dims = io.dims, g_views = io.in;
    cli_buffers b;
    cli_buffers_alloc_io(&io, &b);
    for (int i = 0; i < b.nin; i++) cli_fill_random(&io.in[i], b.in[i], CLI_RANDOM_SEED + (uint64_t)i);
    rc = load_inputs(&r, m, &b);
    if (!rc) rc = r.serve ? serve(m, &b) : time_runs(&r, m, &b);
    cli_buffers_free(&b);
    cli_io_free(&io);
    hc_model_free(m);
    return rc;
}
