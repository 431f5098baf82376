/* target_cpu.c — the CPU target's operations: its templates, the auto-scheduler, C
 * emission, the cc build with its cache (jit.c) and the OpenMP executor with pinning. */
#include <omp.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "target/cpu/affinity.h"
#include "target/cpu/cpu.h"
#include "target/cpu/jit.h"

static hc_module *cpu_lower(hc_arena *a, const hc_module *m, const hc_target *t) {
    (void)t;
    return hc_lower_module(a, m);
}

static hc_status cpu_build(const hc_target *t, int n, const char *const *srcs,
                           const hc_jit_options *opt, int jobs, hc_jit_lib **out,
                           hc_error *err) {
    hc_jit_options o = opt ? *opt : (hc_jit_options){0};
    if (!o.cflags) o.cflags = t->cflags;
    return hc_jit_build_many(n, srcs, &o, jobs, out, err);
}

static hc_status cpu_build_one(const hc_target *t, int n, const char *const *srcs,
                               const hc_jit_options *opt, int jobs,
                               void (*progress)(void *ctx, int done, int total), void *ctx,
                               hc_jit_lib **out, hc_error *err) {
    hc_jit_options o = opt ? *opt : (hc_jit_options){0};
    if (!o.cflags) o.cflags = t->cflags;
    return hc_jit_build_parallel_progress(n, srcs, &o, jobs, progress, ctx, out, err);
}

/* ---- the executor ----------------------------------------------------------------- */
/* What a run changes on the calling thread, and gives back: its OpenMP thread count (the
 * nthreads-var of its data environment: the kernels' parallel regions without a
 * num_threads clause use it) and, when pinned, its CPU mask. */
typedef struct cpu_run {
    hc_pin pin;
    int omp_threads;
} cpu_run;
_Static_assert(sizeof(cpu_run) <= sizeof(hc_run_state), "hc_run_state too small for cpu_run");

static void cpu_begin(int threads, bool pin, hc_run_state *s) {
    cpu_run *r = (cpu_run *)s->bytes;
    r->omp_threads = omp_get_max_threads();
    omp_set_num_threads(threads);
    hc_pin_enter(threads, pin, &r->pin);
}

static void cpu_end(hc_run_state *s) {
    cpu_run *r = (cpu_run *)s->bytes;
    hc_pin_leave(&r->pin);
    omp_set_num_threads(r->omp_threads);
}

static void cpu_launch(hc_packed_fn fn, void **args) { fn(args); }

/* Every line of the buffers out of every cache level (the write-backs done before the
 * clock starts). Elsewhere than x86 nothing is evicted. */
static void cpu_evict(int n, const void *const *ptr, const size_t *bytes) {
#if defined(__x86_64__) || defined(__i386__)
    for (int i = 0; i < n; i++) {
        const char *p = ptr[i];
        for (size_t o = 0; o < bytes[i]; o += 64) _mm_clflush(p + o);
    }
    _mm_mfence();
#else
    (void)n, (void)ptr, (void)bytes;
#endif
}

static const hc_executor cpu_exec = {
    .alloc = hc_alloc_big,
    .release = free,
    .begin = cpu_begin,
    .launch = cpu_launch,
    .end = cpu_end,
    .evict = cpu_evict,
};

void hc_cpu_target_ops(hc_target *t) {
    t->find_template = hc_cpu_find_template;
    t->auto_schedule = hc_auto_schedule;
    t->lower = cpu_lower;
    t->emit = hc_emit_c;
    t->build = cpu_build;
    t->build_one = cpu_build_one;
    t->symbol = hc_jit_symbol;
    t->lib_path = hc_jit_path;
    t->lib_cached = hc_jit_was_cached;
    t->lib_close = hc_jit_close;
    t->exec = &cpu_exec;
    t->machine = hc_cpu_machine;
}
