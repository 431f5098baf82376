/* target.h — the target interface: what a machine offers (capabilities) and what a target
 * does with a program (find a template, auto-schedule, lower, emit, build, execute).
 *
 * Generic stages (graph, passes, fuse, compile, tune, runtime) call only this interface:
 * no x86 or CUDA fact lives outside src/target/. Each target is one folder
 * (src/target/cpu/ first) and one hc_target value; a rule measured on one machine is a
 * formula of `caps`, so a test can state the machine it checks by injecting a target
 * (hc_target_cpu_describe). DESIGN.md, "Targets". */
#ifndef HC_TARGET_H
#define HC_TARGET_H

#include "graph/graph.h"
#include "ir/ir.h"

typedef enum hc_isa { HC_ISA_SCALAR, HC_ISA_AVX2, HC_ISA_AVX512 } hc_isa;
/* The CPU core, where a default rule was measured to differ between cores with the same
 * ISA and caches (CPUID vendor, family and model; host.c). HC_CORE_OTHER: every core no
 * rule names, and every stated target (hc_target_cpu_describe) unless a test sets it. */
typedef enum hc_cpu_core {
    HC_CORE_OTHER,
    HC_CORE_INTEL_SPR, /* Sapphire Rapids and Emerald Rapids Xeons (family 6, 0x8F, 0xCF) */
    HC_CORE_AMD_ZEN4,  /* AMD Zen 4, AVX-512 on 256-bit datapaths (family 0x19, models
                        * 0x10-0x1F Genoa, 0x60-0x7F Raphael / Phoenix, 0xA0-0xAF Bergamo) */
    HC_CORE_AMD_ZEN5,  /* AMD Zen 5, AVX-512 on 512-bit datapaths, 48 KiB of L1d (family
                        * 0x1A, every model: Turin, Granite Ridge, Strix) */
} hc_cpu_core;
const char *hc_isa_name(hc_isa isa);

typedef enum hc_target_kind { HC_TARGET_CPU, HC_TARGET_GPU } hc_target_kind;

/* What the machine offers. CPU fields are 0 on GPUs and GPU fields 0 on CPUs. */
typedef struct hc_target_caps {
    /* CPU */
    hc_isa isa;
    int vector_bits; /* 512 (AVX-512), 256 (AVX2), 128 (plain C: vector types emulated) */
    int num_cores;   /* cores the compiled program runs on (the run's threads) */
    int num_regs;    /* vector registers: 32 (AVX-512), 16 (AVX2/plain) */
    int64_t l1_bytes, l2_bytes, l3_bytes; /* data cache sizes per core (l3: shared) */
    int int8_dot;    /* u8 x s8 dot products: 2 AVX-512 VNNI, 1 AVX-VNNI (ymm), 0 neither
                      * (emulated with 16-bit multiplies) */
    int amx_bf16;    /* 1: AMX tiles with bf16 dot products (the f32 matmul may run as
                      * split bf16 products on them); 0: none */
    hc_cpu_core core;
    /* GPU */
    int num_sms;
    int64_t smem_per_block; /* bytes of shared memory a block may use */
    int regs_per_thread;
    int regs_per_block;     /* the register file a block shares (65536 on NVIDIA GPUs) */
    int warp_size;
    int max_threads_per_block;
} hc_target_caps;

/* f32 lanes of the target's natural vector: 16, 8 or 4. */
static inline int hc_caps_f32_lanes(const hc_target_caps *c) { return c->vector_bits / 32; }

/* The stages a program goes through in the compile pipeline (--dump-ir STAGE). */
typedef enum hc_stage {
    HC_STAGE_NONE = 0,
    HC_STAGE_SCHEDULED, /* the anchor's template or the auto-scheduler */
    HC_STAGE_FUSED,     /* after the post-scheduling fusion rewrite */
    HC_STAGE_LOWERED,   /* mappings to loops, layouts to indices, target lowering */
    HC_STAGE_SOURCE,    /* the emitted source */
} hc_stage;
/* "scheduled" -> HC_STAGE_SCHEDULED; HC_STAGE_NONE when unknown. */
hc_stage hc_stage_parse(const char *name);
const char *hc_stage_name(hc_stage s);
/* The stage names, comma separated, for usage messages. */
#define HC_STAGE_NAMES "scheduled, fused, lowered, source"

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
     * with the template's prepack operation for this same level and candidate; the
     * program's parameter for it is then the packed 1-D tensor prepack describes, read
     * only by the template (never by a prologue or epilogue). */
    unsigned prepacked;
    /* Bit i: the anchor's input i is read through a fused prologue (an im2col, a layout
     * reorder): the template's loads of it cost more than plain loads (set by the fusion,
     * hc_fuse_schedule; a template may weigh it in its default config). */
    unsigned prologued;
    /* The anchor's output feeds a kernel whose threads take contiguous ranges of its
     * outermost dimension (a depthwise conv's channel planes; set by the fusion from
     * hc_group.feeds_depthwise): a default that splits the output's rows the same way
     * leaves each thread's next input in its own L2. */
    bool rows_to_consumer;
    /* Called with each program as it leaves a stage (SCHEDULED: the anchor's program as
     * the template or the auto-scheduler made it; FUSED: after the fusion rewrite), for
     * --dump-ir and HIDETC_VERIFY; NULL: nobody watches. */
    void (*observe)(void *ctx, hc_stage stage, const hc_func *f);
    void *observe_ctx;
} hc_sched_opts;

struct hc_target;

/* A template: the hand-written schedule of one op on one target, with its
 * hardware-centric space. */
typedef struct hc_template {
    const char *name; /* "matmul", "conv_direct", ... */
    hc_op_kind op;
    /* The scheduled program for node n, an HC_FN_CPU_KERNEL (or the target's kernel
     * kind) with params = task inputs then task outputs. NULL with err->status == HC_OK:
     * the template does not apply to this node (the auto-scheduler takes it). */
    hc_func *(*schedule)(hc_arena *a, const hc_node *n, const hc_task *t,
                         const struct hc_target *target, const char *fname,
                         const hc_sched_opts *opts, hc_error *err);
    /* Optional: the number of candidates of the space for this node at `level` (0, 1 or
     * 2); candidate i is scheduled with opts->candidate = i. 0 when the template does not
     * apply. NULL: one candidate. */
    int (*space)(const hc_node *n, const struct hc_target *target, int level);
    /* Optional: weight pre-packing. For input `input` of this node, scheduled with
     * `opts` (level and candidate; opts->prepacked ignored), the number of f32 elements
     * of its packed form, or 0 when that input cannot arrive pre-packed. With src and dst
     * non-NULL, also packs src (the input's data) into dst. */
    int64_t (*prepack)(const hc_node *n, const struct hc_target *target,
                       const hc_sched_opts *opts, int input, const void *src, void *dst);
    /* Whether schedule() handles Tasks with symbolic extents (dynamic shapes): others
     * are not offered one, and the auto-scheduler takes the node. */
    bool symbolic;
} hc_template;

/* Options of a target's build step (the kernel cache and the compiler). */
typedef struct hc_jit_options {
    const char *cache_dir; /* NULL: $HIDETC_CACHE_DIR or ~/.cache/hidetc */
    const char *cc;        /* NULL: $HIDETC_CC or "cc" (the CPU target's compiler) */
    const char *cflags;    /* NULL: the target's flags */
    bool verbose;          /* print compiler commands to stderr */
} hc_jit_options;

/* The kernel cache directory these options resolve to (malloc'ed): the option, else
 * $HIDETC_CACHE_DIR, else ~/.cache/hidetc. Built kernels and tune records live there. */
char *hc_cache_dir(const hc_jit_options *opt);

/* A built set of kernels (the CPU's: a dlopen'ed shared object). */
typedef struct hc_jit_lib hc_jit_lib;
/* A kernel's entry: args[i] is the buffer of a tensor parameter or the address of a
 * scalar parameter's value. */
typedef void (*hc_packed_fn)(void **args);

/* What one run saves in `begin` for `end` (the CPU: the caller's affinity). */
typedef struct hc_run_state {
    _Alignas(16) unsigned char bytes[256];
} hc_run_state;

/* Running built kernels: memory, launches, timing. */
typedef struct hc_executor {
    void *(*alloc)(size_t bytes); /* the memory plan's arena; NULL when out of memory */
    void (*release)(void *p);
    /* Around a run of `threads` workers (pinned to CPUs when `pin`: src/target/cpu/
     * affinity.c); begin changes nothing the caller's code sees after end: the calling
     * thread's OpenMP thread count and CPU mask come back. */
    void (*begin)(int threads, bool pin, hc_run_state *s);
    void (*launch)(hc_packed_fn fn, void **args);
    void (*end)(hc_run_state *s);
    /* Evicts n buffers from every cache level (the tuner's cold-weight runs). */
    void (*evict)(int n, const void *const *ptr, const size_t *bytes);
    /* Device targets (GPUs): memory from alloc is the device's, which host code never
     * touches; it is reached through these copies. NULL on the CPU. */
    hc_status (*upload)(void *dev, const void *host, size_t bytes, hc_error *err);
    hc_status (*download)(void *host, const void *dev, size_t bytes, hc_error *err);
    /* The first error of the launches since the previous call (device launches fail
     * apart from the call that made them); NULL: launches cannot fail. */
    hc_status (*check)(hc_error *err);
    /* Milliseconds one launch of fn takes on the device, timed with its events (the
     * tuner); NULL: the host's clock around launch. */
    double (*time)(hc_packed_fn fn, void **args);
    /* Replay (CUDA graphs): after record_begin, launches are recorded, not run; record_end
     * returns what replay runs again, all in one call (NULL when recording failed: nothing
     * ran, launch again); replay_free releases it. NULL: no replay on this target. */
    bool (*record_begin)(void);
    void *(*record_end)(void);
    void (*replay)(void *rec);
    void (*replay_free)(void *rec);
} hc_executor;

/* Whether a target's memory is a device's (copies at graph inputs and outputs). */
static inline bool hc_exec_is_device(const hc_executor *ex) { return ex->upload != NULL; }


typedef struct hc_target {
    const char *name; /* "cpu", "cpu:avx2", "opencl", "cuda:sm_90", ... */
    hc_target_kind kind;
    hc_target_caps caps;
    const char *cflags; /* the CPU build's compiler flags, e.g. "-O3 -march=native" */
    /* The template of op on this target, or NULL (then the auto-scheduler). */
    const hc_template *(*find_template)(const struct hc_target *t, hc_op_kind op);
    /* Any Task as a program (injective and reduction tasks; anchors without a template). */
    hc_func *(*auto_schedule)(hc_arena *a, const hc_task *task, const struct hc_target *t,
                              hc_error *err);
    /* Target lowering of a module: mappings to loops, layouts to flat indices, and what the
     * target needs besides (the CPU: nothing more; GPUs: shared memory, barriers). */
    hc_module *(*lower)(hc_arena *a, const hc_module *m, const struct hc_target *t);
    /* Optional: whether one scheduled program fits what lower and the runtime can take
     * (GPUs: at most HC_GPU_MAX_STAGES grid-wide stages and HC_GPU_MAX_SCRATCH scratch
     * tensors); an error otherwise (the compile names the node). NULL: every one fits. */
    hc_status (*check)(const hc_func *f, const struct hc_target *t, hc_error *err);
    /* A lowered module as one source (malloc'ed). */
    char *(*emit)(hc_arena *a, const hc_module *lowered, const struct hc_target *t);
    /* Build n sources (or find them in the cache) with up to `jobs` parallel jobs. */
    hc_status (*build)(const struct hc_target *t, int n, const char *const *srcs,
                       const hc_jit_options *opt, int jobs, hc_jit_lib **out, hc_error *err);
    /* Build n sources into one library (the tuner's candidates). */
    hc_status (*build_one)(const struct hc_target *t, int n, const char *const *srcs,
                           const hc_jit_options *opt, int jobs,
                           void (*progress)(void *ctx, int done, int total), void *ctx,
                           hc_jit_lib **out, hc_error *err);
    void *(*symbol)(hc_jit_lib *lib, const char *name); /* NULL if absent */
    const char *(*lib_path)(const hc_jit_lib *lib);     /* the built file */
    bool (*lib_cached)(const hc_jit_lib *lib);          /* found without building */
    void (*lib_close)(hc_jit_lib *lib);
    const hc_executor *exec;
    /* The machine this target's kernels run on ("<model>, <N> cpus"): tune records are
     * kept per machine. */
    const char *(*machine)(void);
} hc_target;

/* The target called `name`: "cpu" (the host CPU), "cpu:avx512", "cpu:avx2", "cpu:scalar",
 * "opencl" (the first OpenCL device), "cuda" (the first CUDA device), "cuda:sm_80",
 * "cuda:sm_90" (CUDA C for that architecture; runnable on such a device).
 * An ISA above the host's is accepted for emitting source (golden tests) but its kernels
 * cannot run here: `runnable` says whether they can. Errors name the target and list the
 * known ones. */
hc_status hc_target_find(const char *name, const hc_target **out, bool *runnable,
                         hc_error *err);
/* Why kernels of t cannot run here (no device, an ISA above the CPU's), or NULL when
 * they can. */
const char *hc_target_why_not_runnable(const hc_target *t);
/* The default target: the host CPU (HIDETC_ISA may lower its ISA). */
const hc_target *hc_target_default(void);
/* The known target names, comma separated, for usage messages. */
const char *hc_target_names(void);
/* f32 lanes of the target's natural vector. */
static inline int hc_target_f32_lanes(const hc_target *t) { return hc_caps_f32_lanes(&t->caps); }
/* The target's L1d / L2 bytes per core, or 32 KiB / 1 MiB where it states none. */
static inline int64_t hc_target_l1_bytes(const hc_target *t) {
    return t->caps.l1_bytes > 0 ? t->caps.l1_bytes : 32768;
}
static inline int64_t hc_target_l2_bytes(const hc_target *t) {
    return t->caps.l2_bytes > 0 ? t->caps.l2_bytes : 1 << 20;
}

/* The C identifier a program for a task or node called task_name is named after (arena
 * string). */
const char *hc_sched_func_name(hc_arena *a, const char *task_name);

/* The template of op on t, NULL when none. */
static inline const hc_template *hc_target_template(const hc_target *t, hc_op_kind op) {
    return t->find_template ? t->find_template(t, op) : NULL;
}

#endif
