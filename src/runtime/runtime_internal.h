/* runtime_internal.h — the compiled model's representation, shared by runtime.c (compile,
 * run) and model_file.c (save, load). Not part of the public API. */
#ifndef HC_RUNTIME_INTERNAL_H
#define HC_RUNTIME_INTERNAL_H

#include <pthread.h>

#include "fuse/fuse.h"
#include "runtime/runtime.h"

typedef enum loc_kind { LOC_NONE, LOC_EMPTY, LOC_CONST, LOC_INPUT, LOC_OUTPUT, LOC_ARENA } loc_kind;

typedef struct loc {
    loc_kind kind;
    int index; /* INPUT/OUTPUT: graph input/output index; ARENA: plan entry */
} loc;

typedef struct kernel {
    const hc_node *node; /* the group's anchor */
    hc_group group;
    int ncand, chosen;   /* tuning: candidates at the level, the one used */
    bool tune_cached;
    hc_func *func;
    int unique;    /* index of the compiled function it runs (shared by identical ones) */
    bool templated;
    unsigned prepacked;  /* bit i: the anchor's input i is read pre-packed */
    /* dynamic shapes: its last nsyms arguments are the values of the model's symbols
     * sym_slots[0..nsyms) (scalar parameters, passed by address) */
    int nsyms;
    int *sym_slots;
    /* dispatch (dynamic shapes, docs/dynamic.md): a symbolic kernel tuned to different
     * configs at different bindings is a set of alternatives, nalt (>= 2) consecutive
     * entries of m->kernels with the same group, the first at index alt; nalt is 0 for a
     * kernel without. points: the npoints bindings (each the model's nsym values, the
     * symbols the kernel does not take at their hints) at which this entry's config won.
     * A run executes the entry with the point nearest its binding (hc_rt_dispatch). */
    int alt, nalt, npoints;
    int64_t *points;
    hc_packed_fn fn;
    int nargs;
    void **args;
    loc *arg_locs; /* per argument (the symbols' slots: LOC_NONE) */
} kernel;

typedef struct unique_fn {
    hc_func *func;
    char key[33];
    size_t cost; /* length of the printed program: a proxy for compile time */
    int chunk;
} unique_fn;

/* A run-time argument slot filled with a caller buffer: argument `arg` of kernel
 * `kernel` is graph input (or output) `index`. */
typedef struct binding {
    int kernel, arg;
    int index;
    bool output;
} binding;

/* What one run in flight owns (runtime.c, "Runs in flight"): an arena of the plan's size
 * and every kernel's argument array, pointing into it. The model's own (mem and the
 * kernels' args) is the first; runs that find every context busy make another, kept for
 * later runs. */
typedef struct run_ctx {
    struct run_ctx *next; /* the next free one */
    void *mem;
    void ***args;         /* per kernel */
    void **all_args;      /* own: the arrays, end to end */
    bool own;             /* mem and args are this context's (not the model's) */
    /* symbolic models: the plan the arguments point into, the arena's size, and the
     * symbols' values the kernels read */
    const struct sym_plan *plan;
    size_t mem_bytes;
    int64_t *syms;
} run_ctx;

/* Graph outputs that no kernel writes: copied after the kernels ran. */
typedef enum copy_src { COPY_CONST, COPY_INPUT, COPY_OUTPUT } copy_src;
typedef struct out_copy {
    int output;
    copy_src src;
    int index;        /* INPUT/OUTPUT: the index to copy from */
    const void *data; /* CONST */
    size_t bytes;
} out_copy;

struct hc_model {
    hc_graph *g;
    const hc_target *target; /* what the kernels were built for and run on */
    hc_arena arena; /* programs, kernel records, argument arrays */
    int num_threads;
    bool verbose;
    hc_compile_options opt;
    HC_VEC(kernel) kernels;
    HC_VEC(unique_fn) uniques;
    int nlibs;
    hc_jit_lib **libs;
    loc *locs; /* per tensor id */
    /* per tensor id: the tensor it is a slice of (an in-place Concat's output) or NULL,
     * and the slice's byte offset in it; NULL for a loaded model */
    const hc_tensor **alias_parent;
    size_t *alias_delta;
    HC_VEC(hc_plan_entry) plan;
    size_t arena_bytes, intermediate_bytes;
    void *mem;
    HC_VEC(binding) binds;
    /* Runs in flight: the free contexts, every context made, and the lock over both;
     * device models run one at a time under run_lock. */
    pthread_mutex_t ctx_lock, run_lock;
    run_ctx *free_ctx;
    HC_VEC(run_ctx *) ctxs;
    bool pin_threads;
    HC_VEC(out_copy) copies;
    /* Device targets (hc_exec_is_device): the graph inputs' and outputs' device buffers
     * (NULL for empty ones), every constant a kernel reads, uploaded once into dev_consts,
     * and a dummy for empty tensors. The arena (mem) is device memory too. */
    void **dev_in, **dev_out;
    void *dev_consts, *dev_empty;
    char *source; /* compile option emit_source */
    char **sources; /* GPU targets: the source of each library (nlibs), for model files */
    /* The first run's launches recorded for replay (CUDA graphs; exec->record_begin), and
     * whether recording failed (then every run launches). */
    void *replay;
    bool replay_failed;
    /* Dynamic shapes (dynamic.c): some kernel takes the symbols' values; the memory plans
     * of the bindings run so far (sym_plan, cached: a shape seen before costs nothing). */
    bool symbolic;
    HC_VEC(struct sym_plan *) sym_plans;
    /* A model read by hc_model_load (model_file.c): its private state (the file's bytes,
     * library handles), and what hc_model_free calls to release it. NULL when compiled. */
    struct mf_loaded *loaded;
    void (*release)(hc_model *m);
};

/* ---- shared by the compile pipeline (src/compile) and the runtime (runtime.c) ------- */
/* A zeroed model with its locks made (compile.c and model_file.c start from it). */
hc_model *hc_rt_model_new(void);
static inline bool hc_rt_is_empty(const hc_tensor *t) { return hc_tensor_numel(t) == 0; }
static inline bool hc_rt_is_const(const hc_tensor *t) { return t->data != NULL; }
/* A node runs as a kernel unless all its outputs are constant (folded) or empty. */
hc_status hc_rt_node_needs_kernel(const hc_node *n, bool *out, hc_error *err);
/* Concats whose inputs are slices of their output laid end to end run no kernel: decide
 * which (before partitioning), and whether n is one of them. */
void hc_rt_plan_inplace_concats(hc_model *m);
bool hc_rt_concat_in_place(const hc_model *m, const hc_node *n);
/* Locations of every tensor and the memory plan (arena offsets by liveness). */
hc_status hc_rt_plan_memory(hc_model *m, hc_error *err);
/* budget.c: the plan's arena, constants, inputs and outputs against opt.max_memory (0: no
 * budget); over it, HC_ERR_NOMEM naming the largest tensor. */
hc_status hc_rt_check_budget(const hc_model *m, hc_error *err);
/* The arena, and every kernel's argument array (caller buffers bound at run time; on a
 * device, the device buffers of the graph's inputs and outputs, and the constants
 * uploaded). NOMEM when the arena cannot be allocated. */
hc_status hc_rt_prepare_args(hc_model *m, hc_error *err);
/* Device targets: the buffers of the graph's inputs and outputs, and the placeholder
 * for empty tensors (m->dev_in, dev_out, dev_empty). */
hc_status hc_rt_alloc_device_io(hc_model *m, hc_error *err);
/* Dispatch: for each kernel whether it runs at binding values (the model's symbols):
 * every kernel without alternatives, and of each set the entry with the point nearest
 * the binding (the sum over the kernel's symbols of |log v - log p|; ties: the first). */
void hc_rt_dispatch(const hc_model *m, const int64_t *values, bool *runs);
/* "hidetc: memory plan: ..." on stderr. */
void hc_rt_report_plan(const hc_model *m);

/* The checksum a model file's header holds over the bytes after the header (model_file.c;
 * exposed so that tests can damage a file's body and still reach the parser). */
uint64_t hc_model_file_checksum(const void *data, size_t n);


#endif
