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

/* Work (output elements x reduction length) below which a loop nest stays serial:
 * starting a parallel region costs a few microseconds. */
#define HC_AUTOSCHED_PARALLEL_MIN_WORK 32768
/* Longest vector of accumulators kept on the stack for a reduction over a
 * non-innermost axis (elements). */
#define HC_AUTOSCHED_MAX_ACC 512

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
