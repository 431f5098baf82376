/* tune.c — compile all candidates of a task into one shared object, benchmark them, keep
 * the fastest; records of the winners; the progress bar (tune.h, docs/tuning.md). */
#include "tune/tune.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- progress bar ------------------------------------------------------------------- */
#define BAR_WIDTH 20
#define REDRAW_MS 100.0 /* at most ten redraws a second, however fast the steps */

static void fmt_duration(char *buf, size_t n, double ms) {
    long s = (long)(ms / 1000 + 0.5);
    if (s >= 60) snprintf(buf, n, "%ldm%02lds", s / 60, s % 60);
    else snprintf(buf, n, "%lds", s);
}

static void draw(hc_progress *p, bool force) {
    if (!p || !p->active) return;
    double now = hc_now_ms();
    if (!force && now - p->last_draw_ms < REDRAW_MS) return;
    p->last_draw_ms = now;
    double elapsed = now - p->t0_ms;
    int filled = p->total > 0 ? (int)((int64_t)BAR_WIDTH * HC_MIN(p->done, p->total) / p->total)
                              : 0;
    char bar[BAR_WIDTH + 1], el[32], eta[32] = "?";
    for (int i = 0; i < BAR_WIDTH; i++) bar[i] = i < filled ? '#' : '.';
    bar[BAR_WIDTH] = '\0';
    fmt_duration(el, sizeof el, elapsed);
    if (p->done > 0 && p->total >= p->done)
        fmt_duration(eta, sizeof eta, elapsed / p->done * (p->total - p->done));
    fprintf(stderr, "\r%s [%s] %d/%d tasks, %d/%d candidates, %s elapsed, ETA %s\033[K",
            p->label ? p->label : "tuning", bar, p->tasks_done, p->tasks_total, p->done,
            p->total, el, eta);
    fflush(stderr);
}

void hc_progress_begin(hc_progress *p, const char *label, int tasks, int candidates) {
    memset(p, 0, sizeof *p);
    const char *quiet = getenv("HIDETC_NO_PROGRESS");
    p->active = isatty(STDERR_FILENO) && !(quiet && !strcmp(quiet, "1"));
    p->label = label;
    p->tasks_total = tasks, p->total = candidates;
    p->t0_ms = hc_now_ms();
    draw(p, true);
}

void hc_progress_step(hc_progress *p, int candidates_done) {
    if (!p) return;
    p->done += candidates_done;
    draw(p, false);
}

void hc_progress_task_done(hc_progress *p) {
    if (!p) return;
    p->tasks_done++;
    draw(p, false);
}

void hc_progress_end(hc_progress *p) {
    if (!p || !p->active) return;
    char el[32];
    fmt_duration(el, sizeof el, hc_now_ms() - p->t0_ms);
    fprintf(stderr, "\r%s: %d tasks, %d candidates in %s\033[K\n", p->label ? p->label : "tuning",
            p->tasks_done, p->done, el);
    fflush(stderr);
    p->active = false;
}

/* ---- machine and keys ---------------------------------------------------------------- */
const char *hc_tune_machine(const hc_target *t) { return t->machine(); }

void hc_tune_key(const char *signature, int level, const hc_target *t, char key[33]) {
    hc_hasher h;
    hc_hash_init(&h);
    hc_hash_str(&h, "tune record 3"); /* 2: the fastest run, not the median; 3: the default
                                        * always in the second pass */
    hc_hash_str(&h, signature ? signature : "");
    char buf[256];
    /* everything the schedule space is built from, so a record never outlives its space */
    snprintf(buf, sizeof buf, "level %d target %s isa %s bits %d cores %d regs %d l1 %lld l2 %lld "
             "l3 %lld core %d", level, t->name, hc_isa_name(t->caps.isa), t->caps.vector_bits,
             t->caps.num_cores, t->caps.num_regs, (long long)t->caps.l1_bytes,
             (long long)t->caps.l2_bytes, (long long)t->caps.l3_bytes, (int)t->caps.core);
    hc_hash_str(&h, buf);
    if (t->caps.amx_bf16) hc_hash_str(&h, "amx-bf16"); /* keys without AMX as they were */
    hc_hash_str(&h, hc_tune_machine(t));
    hc_hash_hex(&h, key);
}

/* ---- records ------------------------------------------------------------------------- */
/* <cache>/tune/<key>, a few lines of text:
 *   hidetc-tune 1
 *   best 3
 *   best_ms 0.412
 *   ncand 24
 *   desc candidate 3 of 24, 0.412 ms, <machine>            (for people; not read back) */
static char *record_path(const hc_jit_options *jit, const char *key) {
    char *dir = hc_cache_dir(jit);
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sb_printf(&sb, "%s/tune/%s", dir, key);
    free(dir);
    return hc_sb_take(&sb);
}

bool hc_tune_record_get(const hc_jit_options *jit, const char *key, hc_tune_record *out) {
    char *path = record_path(jit, key);
    char *text = NULL;
    size_t size = 0;
    bool ok = hc_read_file(path, &text, &size, NULL) == HC_OK;
    free(path);
    if (!ok) return false;
    ok = hc_tune_record_parse(text, out);
    free(text);
    return ok;
}

bool hc_tune_record_parse(char *text, hc_tune_record *out) {
    hc_tune_record r = {-1, -1, -1, {0}};
    int version = 0, tc;
    float tms;
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        if (next) *next++ = '\0';
        if (sscanf(line, "time %d %f", &tc, &tms) == 2) {
            if (tc >= 0 && tc < HC_TUNE_RECORD_TIMES && tms > 0 && tms < 1e9f) r.times[tc] = tms;
        } else if (sscanf(line, "hidetc-tune %d", &version) == 1) {
        } else if (sscanf(line, "best_ms %lf", &r.best_ms) == 1) {
        } else if (sscanf(line, "best %d", &r.best) == 1) {
        } else if (sscanf(line, "ncand %d", &r.ncand) == 1) {
        }
        line = next;
    }
    bool ok = version == 1 && r.ncand >= 1 && r.best >= 0 && r.best < r.ncand && r.best_ms >= 0;
    for (int c = r.ncand > 0 ? r.ncand : 0; ok && c < HC_TUNE_RECORD_TIMES; c++) r.times[c] = 0;
    if (ok && out) *out = r;
    return ok;
}

hc_status hc_tune_record_put(const hc_jit_options *jit, const char *key,
                             const hc_tune_record *r, hc_error *err) {
    if (r->ncand < 1 || r->best < 0 || r->best >= r->ncand)
        return hc_error_set(err, HC_ERR_INVALID, "tune record %s: best %d is not in [0, %d)", key,
                            r->best, r->ncand);
    char *path = record_path(jit, key);
    char *dir = hc_xstrdup(path);
    *strrchr(dir, '/') = '\0';
    hc_status st = hc_mkdirs(dir, err);
    free(dir);
    if (st != HC_OK) {
        free(path);
        return st;
    }
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sb_printf(&sb, "hidetc-tune 1\nbest %d\nbest_ms %.6f\nncand %d\n", r->best, r->best_ms,
                 r->ncand);
    for (int c = 0; c < r->ncand && c < HC_TUNE_RECORD_TIMES; c++)
        if (r->times[c] > 0) hc_sb_printf(&sb, "time %d %.6f\n", c, (double)r->times[c]);
    hc_sb_printf(&sb, "desc candidate %d of %d, %.4f ms\n", r->best, r->ncand, r->best_ms);
    /* unique per process and call: concurrent writers of one key each rename a whole file */
    static int counter;
    hc_sb tmp;
    hc_sb_init(&tmp);
    hc_sb_printf(&tmp, "%s.tmp.%ld.%d", path, (long)getpid(),
                 __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
    st = hc_write_file(hc_sb_str(&tmp), hc_sb_str(&sb), sb.len, err);
    if (st == HC_OK && rename(hc_sb_str(&tmp), path) != 0)
        st = hc_error_set(err, HC_ERR_IO, "rename %s: %s", hc_sb_str(&tmp), strerror(errno));
    if (st != HC_OK) unlink(hc_sb_str(&tmp));
    hc_sb_free(&tmp), hc_sb_free(&sb);
    free(path);
    return st;
}

/* ---- benchmarking -------------------------------------------------------------------- */
static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double hc_bench_median(hc_packed_fn fn, void *const *args, int warmup, int min_runs,
                       int max_runs, double budget_ms) {
    if (min_runs < 1) min_runs = 1;
    if (max_runs < min_runs) max_runs = min_runs;
    for (int i = 0; i < warmup; i++) fn((void **)args);
    double *ms = hc_xmalloc(sizeof(double) * (size_t)max_runs);
    int n = 0;
    double start = hc_now_ms();
    while (n < max_runs && (n < min_runs || hc_now_ms() - start < budget_ms)) {
        double t0 = hc_now_ms();
        fn((void **)args);
        ms[n++] = hc_now_ms() - t0;
    }
    double m = median(ms, n);
    free(ms);
    return m;
}

/* A candidate's time from its samples: the fastest run. On a shared machine noise only
 * adds time (a descheduled thread costs a time slice, a neighbour evicts the caches), and
 * more of it to kernels with more threads, which wait for the slowest; a median then
 * ranks configs by how the noise hit them. Two --tune 2 compiles of MobileNet-V2 in one
 * busy hour on Zen 3 picked different configs for 33 of its 53 tuned kernels by medians,
 * for 18 by the fastest run. */
static double fastest(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
    return m;
}

/* Benchmark settings of hc_tune_select. First pass, one candidate after the other: one
 * warm-up run, then at least 5 timed runs, more up to a 40 ms budget; a candidate whose
 * warm-up run takes over PRUNE times the best time so far cannot win and is not timed
 * further. Second pass, against noise (a shared machine descheduling one of the kernel's
 * threads costs a whole time slice): the FINALISTS best candidates run in turn, one run
 * each per round, for FINAL_ROUNDS rounds, and their times (`fastest`) are taken over
 * both passes.
 * A burst of noise then hits all finalists alike instead of one of them. The default
 * (candidate 0) is always a finalist (hc_tune_finalists): a burst during its first pass
 * would otherwise drop it for good. On Zen 3 GPT-2's logits matmul timed its default at
 * 102.8 ms in the first pass and picked a candidate at 79.0, while in the model the
 * default ran faster. */
#define BENCH_WARMUP 1
#define BENCH_MIN_RUNS 5
#define BENCH_MAX_RUNS 64
#define BENCH_BUDGET_MS 40.0
#define PRUNE 3.0
#define FINALISTS 4
#define FINAL_ROUNDS 7
#define FINAL_BUDGET_MS 400.0 /* the second pass stops early past this */

typedef struct samples {
    double *v;
    int n;
} samples;

static void add_sample(samples *s, double ms) {
    s->v = hc_xrealloc(s->v, sizeof(double) * (size_t)(s->n + 1));
    s->v[s->n++] = ms;
}

static double timed_run(const hc_executor *ex, hc_packed_fn fn, void *const *args,
                        const hc_tune_cold *cold) {
    if (cold) ex->evict(cold->n, cold->ptr, cold->bytes);
    if (ex->time) return ex->time(fn, (void **)args); /* a device's own clock (events) */
    double t0 = hc_now_ms();
    ex->launch(fn, (void **)args);
    return hc_now_ms() - t0;
}

/* The first pass for one candidate: its samples (only the warm-up when pruned). */
static void first_pass(const hc_executor *ex, hc_packed_fn fn, void *const *args,
                       const hc_tune_cold *cold, double best_ms, samples *s) {
    double warm = timed_run(ex, fn, args, cold);
    if (best_ms >= 0 && warm > PRUNE * best_ms) {
        add_sample(s, warm);
        return;
    }
    for (int i = 1; i < BENCH_WARMUP; i++) ex->launch(fn, (void **)args);
    double start = hc_now_ms();
    while (s->n < BENCH_MAX_RUNS && (s->n < BENCH_MIN_RUNS || hc_now_ms() - start < BENCH_BUDGET_MS))
        add_sample(s, timed_run(ex, fn, args, cold));
}

int hc_tune_finalists(int n, const double *ms, int *order) {
    for (int i = 0; i < n; i++) { /* insertion sort by time, ties by index: stable */
        int j = i;
        for (; j > 0 && ms[order[j - 1]] > ms[i]; j--) order[j] = order[j - 1];
        order[j] = i;
    }
    int k = HC_MIN(n, FINALISTS);
    for (int j = k; j < n; j++)
        if (order[j] == 0) { /* the default joins them, last */
            memmove(order + k + 1, order + k, sizeof(int) * (size_t)(j - k));
            order[k++] = 0;
            break;
        }
    return k;
}

/* The second pass: finalists in turn, round after round. */
static void final_pass(const hc_executor *ex, int n, hc_packed_fn *fns, void *const *const *args,
                       const hc_tune_cold *cold, samples *s, double *ms) {
    int *order = hc_xmalloc(sizeof(int) * (size_t)n);
    int k = hc_tune_finalists(n, ms, order);
    double start = hc_now_ms();
    for (int r = 0; r < FINAL_ROUNDS && k > 1 && hc_now_ms() - start < FINAL_BUDGET_MS; r++)
        for (int j = 0; j < k; j++)
            add_sample(&s[order[j]], timed_run(ex, fns[order[j]], args[order[j]],
                                               cold ? &cold[order[j]] : NULL));
    for (int j = 0; j < k; j++) ms[order[j]] = fastest(s[order[j]].v, s[order[j]].n);
    free(order);
}

static void on_compiled(void *ctx, int done, int total) {
    (void)done, (void)total;
    hc_progress_step(ctx, 0); /* a redraw: the elapsed time and the ETA move on */
}

hc_status hc_tune_select(hc_arena *a, int n, hc_func *const *cands, void *const *args,
                         const hc_target *t, const hc_jit_options *jit, hc_progress *progress,
                         hc_tune_result *out, hc_error *err) {
    void *const **each = hc_xmalloc(sizeof *each * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) each[i] = args;
    hc_status st = hc_tune_select_each(a, n, cands, each, NULL, t, jit, progress, out, err);
    free(each);
    return st;
}

hc_status hc_tune_select_each(hc_arena *a, int n, hc_func *const *cands,
                              void *const *const *args, const hc_tune_cold *cold,
                              const hc_target *t, const hc_jit_options *jit,
                              hc_progress *progress, hc_tune_result *out, hc_error *err) {
    memset(out, 0, sizeof *out);
    out->best = -1;
    if (n < 1) return hc_error_set(err, HC_ERR_INVALID, "tune: no candidates");
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(cands[i]->name, cands[j]->name))
                return hc_error_set(err, HC_ERR_INVALID,
                                    "tune: candidates %d and %d are both named '%s'", j, i,
                                    cands[i]->name);
    /* one module per core: each compiler parses the prelude once for its share */
    int jobs = HC_MAX(t->caps.num_cores, 1);
    int nmod = HC_MIN(jobs, n);
    char **srcs = hc_xcalloc((size_t)nmod, sizeof *srcs);
    for (int m = 0; m < nmod; m++) {
        int lo = n * m / nmod, hi = n * (m + 1) / nmod;
        const char *name = hc_arena_printf(a, "tune_%d", m);
        hc_module *mod = hc_module_new(a, name, hi - lo, cands + lo);
        srcs[m] = t->emit(a, t->lower(a, mod, t), t);
    }
    double t0 = hc_now_ms();
    hc_jit_lib *lib = NULL;
    hc_status st = t->build_one(t, nmod, (const char *const *)srcs, jit, jobs,
                                progress ? on_compiled : NULL, progress, &lib, err);
    out->compile_ms = hc_now_ms() - t0;
    for (int m = 0; m < nmod; m++) free(srcs[m]);
    free(srcs);
    if (st != HC_OK) return st;

    hc_packed_fn *fns = hc_xcalloc((size_t)n, sizeof *fns);
    for (int i = 0; i < n && st == HC_OK; i++) {
        char sym[256];
        snprintf(sym, sizeof sym, "%s__packed", cands[i]->name);
        fns[i] = (hc_packed_fn)t->symbol(lib, sym);
        if (!fns[i])
            st = hc_error_set(err, HC_ERR_COMPILE, "tune: candidate %d: symbol %s not found in %s",
                              i, sym, t->lib_path(lib));
    }
    if (st == HC_OK) {
        out->ms = hc_xmalloc(sizeof(double) * (size_t)n);
        samples *s = hc_xcalloc((size_t)n, sizeof *s);
        t0 = hc_now_ms();
        double best_ms = -1;
        for (int i = 0; i < n; i++) {
            first_pass(t->exec, fns[i], args[i], cold ? &cold[i] : NULL, best_ms, &s[i]);
            out->ms[i] = fastest(s[i].v, s[i].n);
            if (best_ms < 0 || out->ms[i] < best_ms) best_ms = out->ms[i];
            hc_progress_step(progress, 1);
        }
        final_pass(t->exec, n, fns, args, cold, s, out->ms);
        for (int i = 0; i < n; i++) {
            if (out->best < 0 || out->ms[i] < out->best_ms) out->best = i, out->best_ms = out->ms[i];
            free(s[i].v);
        }
        free(s);
        out->bench_ms = hc_now_ms() - t0;
    }
    free(fns);
    t->lib_close(lib);
    return st;
}
