/* cpu.h — the CPU target (src/target/cpu/): host detection, the templates and their
 * spaces, the rule-based auto-scheduler, the C emitter, the cc build (jit.c) and the
 * OpenMP executor with pinning. Generic stages reach all of it through hc_target
 * (target.h); this header is for the CPU target's own files, the API and the tools.
 *
 * The auto-scheduler (auto_sched.c) handles injective and reduction tasks (elementwise,
 * broadcast, transpose, pooling, softmax, norms); anchors such as matmul have templates
 * (templates/). docs/task.md describes the rules with an example. */
#ifndef HC_TARGET_CPU_H
#define HC_TARGET_CPU_H

#include "target/target.h"
#include "task/task.h"

/* ---- host and targets ------------------------------------------------------------- */
/* The host CPU, detected once (pthread_once: cache sizes and the ISA feed cache keys and
 * schedule spaces, so they never change in a process). HIDETC_ISA=avx512|avx2|scalar
 * forces a lower ISA (for testing the fallbacks); the flags then restrict the compiler. */
const hc_target *hc_target_host(void);
/* A runnable target for a given ISA (the host's caches and cores; an ISA above the CPU's
 * is clamped to it). */
const hc_target *hc_target_cpu(hc_isa isa);
/* A target for a given ISA even above the CPU's (its kernels can be emitted and built,
 * not run, on this host). */
const hc_target *hc_target_cpu_emit_only(hc_isa isa);
/* The CPU's own ISA, whatever HIDETC_ISA says. */
hc_isa hc_cpu_isa(void);
/* A CPU target that states a machine: the host's operations with the given ISA, cores
 * and cache sizes (tests inject it to check a rule on the machine it names). */
hc_target hc_target_cpu_describe(hc_isa isa, int cores, int64_t l1_bytes, int64_t l2_bytes,
                                 int64_t l3_bytes);
/* The core a CPUID vendor string ("GenuineIntel") and display family and model name
 * (HC_CORE_OTHER for every core no rule was measured on). */
hc_cpu_core hc_cpu_core_of(const char *vendor, unsigned family, unsigned model);
/* Size in bytes of cpu0's level-`level` data cache as sysfs under `root` states it
 * ("/sys/devices/system/cpu" on Linux; tests give a tree of their own), 0 if none. */
int64_t hc_cpu_sysfs_cache_size(const char *root, int level);
/* Fills the CPU target's operations (target_cpu.c). */
void hc_cpu_target_ops(hc_target *t);
/* The CPU's model name ("Intel(R) Xeon(R) Processor"; "unknown CPU"), read once. */
const char *hc_cpu_model_name(void);
/* "<model name>, <N> cpus": the machine tune records are kept for. */
const char *hc_cpu_machine(void);
/* CPUID feature bits of this CPU that -march=native lets the C compiler use (host.c's
 * table), those that code compiled for `isa` may use, and their names. */
uint64_t hc_cpu_features(void);
uint64_t hc_cpu_features_for(hc_isa isa);
const char *hc_cpu_feature_name(int bit);
int hc_cpu_feature_count(void);
/* Whether this process can run AMX-TILE and AMX-BF16 code (the CPU has them and the
 * kernel granted the tile state). Kernels with tile primitives emulate them otherwise. */
bool hc_cpu_amx_usable(void);

/* The C emitter: lower and print a module as one C translation unit (malloc'ed string).
 * Every HC_FN_CPU_KERNEL `f` is exported twice: `f(params...)` with typed parameters and
 * `f__packed(void **args)` where args[i] is the buffer pointer of a tensor/pointer
 * parameter or the address of a scalar parameter's value. */
char *hc_codegen_c(hc_arena *a, const hc_module *m, const hc_target *t);
/* The same for a module lowered already (hc_lower_module). */
char *hc_emit_c(hc_arena *a, const hc_module *lowered, const hc_target *t);

/* The CPU target's template table (templates/registry.c). */
const hc_template *hc_cpu_find_template(const hc_target *t, hc_op_kind op);

/* ---- the auto-scheduler ------------------------------------------------------------ */
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
/* The same over a count of items that is an expression (dynamic shapes: a multiple of a
 * symbolic batch): the threads are decided by the caller (at the hint values) and each
 * runs ceil(items / T) items, guarded by w < items; threads beyond the items idle. With a
 * constant `items` it is hc_sched_split_items. Returns T (at least 1). */
int hc_sched_split_items_expr(hc_builder *b, hc_expr *items, int threads,
                              hc_items_setup_fn setup, hc_items_body_fn body, void *ctx);

/* Schedule any Task for the CPU target: an HC_FN_CPU_KERNEL named after the task
 * (sanitized to a C identifier) whose parameters are the task's inputs, then its outputs,
 * as GLOBAL row-major tensors of constant shape (a 0-d tensor is passed as shape [1]).
 * Injective intermediate nodes are inlined into their consumers; nodes with a reduce
 * that others read become heap temporaries computed first. Returns NULL and sets err
 * for tasks it cannot schedule. */
hc_func *hc_auto_schedule(hc_arena *a, const hc_task *t, const hc_target *target,
                          hc_error *err);

#endif
