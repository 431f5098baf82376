/* sched.h — scheduling: a Task becomes a tensor program.
 *
 * The rule-based auto-scheduler (auto_sched.c) handles injective and reduction tasks
 * (elementwise, broadcast, transpose, pooling, softmax, norms) on CPU; anchors such as
 * matmul have their own templates (src/sched/templates). docs/task.md describes the
 * rules with an example. */
#ifndef HC_SCHED_H
#define HC_SCHED_H

#include "task/task.h"

struct hc_target;

/* How a template schedules one anchor.
 *  level/candidate: the config is candidate `candidate` of the template's schedule space
 *    at `level` (0: the one default config; 1: a small space; 2: the full space).
 *    Candidate 0 of every level is the default config.
 *  write_once: each output element must be stored exactly once, with its final value,
 *    and outputs never loaded (post-scheduling epilogue fusion rewrites those stores).
 *  prepacked: see below.
 * Templates access their params only through LOAD / STORE of one element and
 * VLOAD / VLOAD_MASK / VSTORE / VSTORE_MASK of ADDRESS(param[idx]) whose lanes run along
 * the param's last dimension and stay inside it: the fusion rewrite (src/fuse) relies on
 * that and refuses (falls back to separate kernels) on anything else. */
typedef struct hc_sched_opts {
    int level;
    int candidate;
    bool write_once;
    /* Bit i: the anchor's input i is a constant the runtime packs once, at compile time,
     * with the op's prepack hook (hc_op_def.prepack) for this same level and candidate;
     * the program's parameter for it is then the packed 1-D tensor the hook describes,
     * read only by the template (never by a prologue or epilogue). */
    unsigned prepacked;
} hc_sched_opts;

/* Work (output elements x reduction length) below which a loop nest stays serial:
 * starting a parallel region costs a few microseconds. */
#define HC_AUTOSCHED_PARALLEL_MIN_WORK 32768
/* Longest vector of accumulators kept on the stack for a reduction over a
 * non-innermost axis (elements). */
#define HC_AUTOSCHED_MAX_ACC 512

/* The thread structure of the CPU templates: `items` work items split over `threads`
 * threads in contiguous runs,
 *   for t in [0, T) parallel(T):
 *     for (ti) in spatial(T) on t:         setup(ctx): per-thread declarations (scratch)
 *       for (it) in repeat(ceil(items / T)):
 *         w = ti * ceil(items / T) + it;  body(ctx, w)  (guarded by w < items when ragged)
 * T is `threads` clipped to [1, items]; returns it. setup may be NULL. */
typedef void (*hc_items_setup_fn)(void *ctx);
typedef void (*hc_items_body_fn)(void *ctx, hc_expr *item);
int hc_sched_split_items(hc_builder *b, int64_t items, int threads, hc_items_setup_fn setup,
                         hc_items_body_fn body, void *ctx);

/* Schedule any Task for the CPU target: an HC_FN_CPU_KERNEL named after the task
 * (sanitized to a C identifier) whose parameters are the task's inputs, then its outputs,
 * as GLOBAL row-major tensors of constant shape (a 0-d tensor is passed as shape [1]).
 * Injective intermediate nodes are inlined into their consumers; nodes with a reduce
 * that others read become heap temporaries computed first. Returns NULL and sets err
 * for tasks it cannot schedule. */
hc_func *hc_auto_schedule(hc_arena *a, const hc_task *t, const struct hc_target *target,
                          hc_error *err);

/* The C identifier hc_auto_schedule names the kernel after (arena string). */
const char *hc_sched_func_name(hc_arena *a, const char *task_name);

#endif
