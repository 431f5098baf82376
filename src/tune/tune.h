/* tune.h — the tuner (DESIGN.md, "JIT, cache, tuning").
 *
 * A template declares a schedule space per node (hc_template.space); every candidate is a
 * complete program with the same parameters. The tuner compiles all candidates of one
 * task into one shared object (parallel compiler jobs), benchmarks each on the task's
 * real shapes (warm-up, then the fastest of the timed runs) and keeps the fastest. Records
 * (task signature, level, target, machine) -> winner persist in the JIT cache directory,
 * so a second compile reuses them without benchmarking.
 *
 * Usage (the runtime does this per fused group whose anchor has a space):
 *   char key[33]; hc_tune_key(sig, level, target, key);
 *   if (!hc_tune_record_get(jit, key, &rec)) {
 *       ... schedule candidates 0..n-1 ...
 *       hc_tune_select(arena, n, funcs, args, target, jit, &progress, &res, &err);
 *       hc_tune_record_put(jit, key, &(hc_tune_record){res.best, res.best_ms, n, {...}}, &err);
 *   }
 */
#ifndef HC_TUNE_H
#define HC_TUNE_H

#include "ir/ir.h"
#include "target/target.h"

/* ---- progress bar ------------------------------------------------------------------- */
/* One line on stderr, redrawn in place: "tuning [#####.....] 12/40 tasks, 130/520
 * candidates, 1m05s elapsed, ETA 3m10s". Silent when stderr is not a terminal or
 * HIDETC_NO_PROGRESS=1. */
typedef struct hc_progress {
    bool active;
    const char *label;
    int total, done;  /* candidates */
    int tasks_total, tasks_done;
    double t0_ms, last_draw_ms;
} hc_progress;
void hc_progress_begin(hc_progress *p, const char *label, int tasks, int candidates);
void hc_progress_step(hc_progress *p, int candidates_done); /* adds */
void hc_progress_task_done(hc_progress *p);
void hc_progress_end(hc_progress *p); /* final line with the total time, then newline */

/* ---- records ------------------------------------------------------------------------ */
enum { HC_TUNE_RECORD_TIMES = 64 };
typedef struct hc_tune_record {
    int best;       /* candidate index at that level */
    double best_ms; /* its time (the fastest run) */
    int ncand;      /* the space size when tuned (a record whose ncand differs is stale) */
    /* every candidate's time (ms; 0: not measured), for the first
     * HC_TUNE_RECORD_TIMES candidates ("time C MS" lines; none in older records: all 0):
     * the dispatch table weighs configs at each binding by them (docs/dynamic.md) */
    float times[HC_TUNE_RECORD_TIMES];
} hc_tune_record;

/* A short description of the machine t runs on (CPU: model name and core count). */
const char *hc_tune_machine(const hc_target *t);
/* key = hex hash of (signature, level, target name/isa/vector bits/num_cores/registers/
 * cache sizes, machine): everything the schedule space is built from. */
void hc_tune_key(const char *signature, int level, const hc_target *t, char key[33]);
/* Look up / store a record under <cache>/tune/<key> (atomic write: tmp + rename). The
 * file is text: "hidetc-tune 1", "best N", "best_ms X", "ncand N" and a "desc" line for
 * people. A missing, unreadable or inconsistent file (best outside [0, ncand)) reads as
 * no record. */
bool hc_tune_record_get(const hc_jit_options *jit, const char *key, hc_tune_record *out);
/* The record in a file's text (NUL-terminated; its lines are cut in place): false for
 * anything but a consistent version-1 record. */
bool hc_tune_record_parse(char *text, hc_tune_record *out);
hc_status hc_tune_record_put(const hc_jit_options *jit, const char *key,
                             const hc_tune_record *r, hc_error *err);

/* ---- benchmarking ------------------------------------------------------------------- */
typedef struct hc_tune_result {
    int best;
    double best_ms;
    double *ms;        /* per candidate time, the fastest run (malloc'ed, caller frees; may be NULL) */
    double compile_ms; /* wall time of building the shared object */
    double bench_ms;   /* wall time of benchmarking */
} hc_tune_result;

/* Compile the n candidates (distinct function names required) into one shared object
 * with parallel compiler jobs (one module per core, hc_jit_build_parallel), run each on
 * args (one buffer per parameter, shared by all candidates: inputs hold data, outputs are
 * scratch), and pick the one with the smallest time: its fastest run (noise on a shared
 * machine only adds time). First pass: candidates in turn, one warm-up run, then at least
 * 5 timed runs up to a 40 ms budget; a candidate whose warm-up run is over 3x the best
 * time so far is not timed further (its ms is that run). Second pass: the 4 fastest, and
 * candidate 0 (the default) with them, run in turn for a few rounds and their times take
 * in those runs too, so that noise from a shared machine hits them alike.
 * progress may be NULL (else: a redraw after each compiled module, a step after each
 * candidate benchmarked). The library is closed before returning. */
hc_status hc_tune_select(hc_arena *a, int n, hc_func *const *cands, void *const *args,
                         const hc_target *t, const hc_jit_options *jit, hc_progress *progress,
                         hc_tune_result *out, hc_error *err);
/* Buffers evicted from the caches (every line flushed) before each timed run of one
 * candidate: weights that the model reads from memory because all of its weights do not
 * fit in the last-level cache (docs/tuning.md, "Weights from memory"). */
typedef struct hc_tune_cold {
    int n;
    const void *const *ptr;
    const size_t *bytes;
} hc_tune_cold;

/* The same with one argument array per candidate (args[i] for candidate i): candidates
 * whose parameters differ in layout (weights pre-packed for each config) are measured on
 * what they will run with. cold (NULL, or one list per candidate) names the buffers to
 * evict before each of candidate i's timed runs. */
hc_status hc_tune_select_each(hc_arena *a, int n, hc_func *const *cands,
                              void *const *const *args, const hc_tune_cold *cold,
                              const hc_target *t, const hc_jit_options *jit,
                              hc_progress *progress, hc_tune_result *out, hc_error *err);

/* The candidates of the second pass, given every candidate's first-pass time ms[0..n):
 * their indices in order[0..k), k returned: the 4 fastest in order of time (ties: the
 * lower index first), then candidate 0 (the template's default) when it is not among
 * them. order[k..n) holds the others, fastest first. */
int hc_tune_finalists(int n, const double *ms, int *order);

/* Median time (ms) of fn(args) after `warmup` runs: at least min_runs timed runs, more
 * until about budget_ms has passed (at most max_runs). */
double hc_bench_median(hc_packed_fn fn, void *const *args, int warmup, int min_runs,
                       int max_runs, double budget_ms);

#endif
