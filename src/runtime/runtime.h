/* runtime.h — a compiled graph: kernels (one scheduled program per node, compiled by
 * the JIT), a memory plan (one arena for all intermediate tensors, offsets from a
 * liveness analysis) and the weights (constant tensors, loaded once). */
#ifndef HC_RUNTIME_H
#define HC_RUNTIME_H

#include "graph/graph.h"
#include "passes/passes.h"
#include "target/target.h"

/* Where the tuner's candidates find the weights (docs/tuning.md, "Weights from memory").
 * AUTO: evicted from the caches before every timed run when the kernels' constants add up
 * to more than the last-level cache (the model then reads them from memory), else left
 * in the caches as the runs leave them. */
typedef enum hc_tune_weights {
    HC_TUNE_WEIGHTS_AUTO = 0,
    HC_TUNE_WEIGHTS_CACHED,
    HC_TUNE_WEIGHTS_COLD,
} hc_tune_weights;

/* Dynamic shapes: the values a symbol takes when symbolic kernels are tuned
 * (docs/dynamic.md, "Tuning and dispatch"). */
typedef struct hc_tune_shape {
    const char *name; /* one of the graph's symbols */
    int nvalues;
    const int64_t *values;
} hc_tune_shape;

typedef struct hc_compile_options {
    const hc_target *target;   /* NULL: hc_target_default() (the host CPU) */
    int num_threads;           /* <= 0: all of the target's cores */
    const hc_jit_options *jit; /* NULL: defaults */
    bool verbose;              /* progress and per-kernel notes on stderr */
    bool no_fusion;            /* one kernel per node */
    bool no_graph;             /* device targets with replay (CUDA graphs): launch every
                                  kernel on every run instead of replaying the first run's */
    bool no_prepack;           /* templates pack constant weights on every call instead of
                                  once at compile time */
    hc_optimize_options paths; /* which convs go by Winograd or the direct template
                                  (src/passes/passes.h; default: the measured rules) */
    int tune_level;            /* 0: default configs; 1: small spaces; 2: full spaces */
    hc_tune_weights tune_weights; /* the cache state of the weights while tuning */
    /* dynamic shapes, with tune_level > 0: symbolic kernels are tuned at every combination
     * of these values (the other symbols at their hints; none given: at the hints), and a
     * kernel whose winners differ keeps one program per winner, the run picking the one
     * tuned nearest its binding (a dispatch table: docs/dynamic.md) */
    int tune_nshapes;
    const hc_tune_shape *tune_shapes;
    bool schedule_only;        /* stop before code generation (for inspection: the model
                                  cannot run) */
    bool emit_source;          /* with schedule_only: also lower and emit every program
                                  into one source (hc_model_source), built nowhere */
    hc_stage dump_stage;       /* print every program at this stage to stderr (0: none;
                                  HIDETC_DUMP=STAGE sets it too) */
    bool verify;               /* verify every program between stages (HIDETC_VERIFY=1 too) */
    bool pin_threads;          /* pin a run's threads to CPUs (src/target/cpu/affinity.c;
                                  HIDETC_BIND=0/1 overrides) */
    /* compile progress: stage "optimize", "schedule", "tune", "build", "done" */
    void (*progress)(void *user, const char *stage, int done, int total);
    void *progress_user;
    size_t max_memory;         /* bytes one run may hold (arena, constants, inputs, outputs);
                                  a plan over it is an error naming the largest tensor
                                  (0: no limit; src/runtime/budget.c) */
} hc_compile_options;

typedef struct hc_model hc_model;

/* Optimize (hc_graph_optimize), schedule, generate code, compile and plan memory. The
 * model takes ownership of g (also on failure: g is freed). */
hc_status hc_model_compile(hc_graph *g, const hc_compile_options *opt, hc_model **out,
                           hc_error *err);
void hc_model_free(hc_model *m);
/* The source emit_source made (NULL without it). */
const char *hc_model_source(const hc_model *m);

/* The target its kernels were built for and run on. */
const hc_target *hc_model_target(const hc_model *m);
int hc_model_num_inputs(const hc_model *m);
int hc_model_num_outputs(const hc_model *m);
const hc_tensor *hc_model_input(const hc_model *m, int i);  /* name, dtype, shape */
const hc_tensor *hc_model_output(const hc_model *m, int i);
const hc_graph *hc_model_graph(const hc_model *m);          /* the optimized graph */
int hc_model_num_kernels(const hc_model *m);
/* Distinct compiled programs (kernels with identical programs share one). */
int hc_model_num_programs(const hc_model *m);
size_t hc_model_arena_bytes(const hc_model *m);             /* the memory plan's size */

/* Run once. inputs[i] / outputs[i]: dense row-major buffers of the declared dtype and
 * shape, owned by the caller. Safe to call from several threads at once (each run in
 * flight gets its own arena; a device model runs one at a time). */
hc_status hc_model_run(hc_model *m, void *const *inputs, void *const *outputs, hc_error *err);
/* Dynamic shapes (docs/dynamic.md): run with the inputs' dimensions, dims[i] pointing at
 * input i's (its rank of them). A symbolic model binds its symbols from them (errors name
 * the input, the dimension and the expected value) and plans its memory for that binding
 * once; a static model checks they are its own. ms: as hc_model_run_profile, or NULL. */
hc_status hc_model_run_dims(hc_model *m, void *const *inputs, const int64_t *const *dims,
                            void *const *outputs, double *ms, hc_error *err);
/* Whether some kernel's extents are symbolic (then runs need hc_model_run_dims). */
bool hc_model_is_symbolic(const hc_model *m);
/* Output i's dimensions when the inputs have dims (as for hc_model_run_dims). */
hc_status hc_model_output_dims(const hc_model *m, const int64_t *const *dims, int i,
                               int64_t *out, hc_error *err);

/* Run once, timing each kernel: ms[i] for kernel i (hc_model_num_kernels entries). */
hc_status hc_model_run_profile(hc_model *m, void *const *inputs, void *const *outputs, double *ms,
                               hc_error *err);
/* The anchor node of kernel i, and whether a template (not the auto-scheduler) made it. */
const hc_node *hc_model_kernel_node(const hc_model *m, int i);
/* The fused group kernel i computes (src/fuse/fuse.h). */
const struct hc_group *hc_model_kernel_group(const hc_model *m, int i);
/* The distinct program kernel i runs (0 <= p < hc_model_num_programs). */
int hc_model_kernel_program(const hc_model *m, int i);
/* Tuning of kernel i: level used, number of candidates (1: not tuned), the chosen one, and
 * whether it came from a record. */
void hc_model_kernel_tuning(const hc_model *m, int i, int *ncand, int *chosen, bool *cached);
bool hc_model_kernel_templated(const hc_model *m, int i);
/* The config kernel i's template printed for its program ("mr6 nr16 ... t1x2x1 ..."), or
 * NULL (auto-scheduled, or a model read from a file). */
const char *hc_model_kernel_config(const hc_model *m, int i);
/* Bit j set: kernel i's anchor reads its input j pre-packed at compile time (weights); 0
 * for a model read from a file. */
unsigned hc_model_kernel_prepacked(const hc_model *m, int i);
/* Dispatch (dynamic shapes, docs/dynamic.md): kernel i's set of alternatives, the
 * kernels first .. first + *nalt - 1 (*nalt 0: it has none), and the bindings its config
 * was tuned best at (*npoints of them, each hc_model's symbols' values, in graph order;
 * the pointer lives as long as the model). */
void hc_model_kernel_dispatch(const hc_model *m, int i, int *first, int *nalt, int *npoints,
                              const int64_t **points);
/* The symbols' values (graph order) that the inputs' dims bind, as a run binds them. */
hc_status hc_model_bind(const hc_model *m, const int64_t *const *dims, int64_t *values,
                        hc_error *err);
/* Which kernels run with the inputs' dims (as hc_model_run_dims): runs[i] per kernel. A
 * static model runs every kernel. Errors as a run's for dims that bind no symbol. */
hc_status hc_model_kernels_at(hc_model *m, const int64_t *const *dims, bool *runs,
                              hc_error *err);

/* ---- memory plan (exposed for tests and tools) ------------------------------------ */
/* Place n buffers of bytes[i] bytes, live from kernel step first[i] to last[i]
 * (inclusive), in one arena: offsets[i] are multiples of 64 and buffers whose live
 * ranges intersect never overlap. Returns the arena size. */
size_t hc_plan_memory(int n, const size_t *bytes, const int *first, const int *last,
                      size_t *offsets);

/* One intermediate tensor of a compiled model: its place in the arena and its live range
 * (kernel indices). An input of an in-place Concat (its producer writes straight into the
 * Concat's output, which then needs no kernel) lies inside that output's entry: alias_of
 * is the index of that (earlier) entry, whose live range covers the alias's; -1 for the
 * entries the planner places. */
typedef struct hc_plan_entry {
    const hc_tensor *tensor;
    size_t offset, bytes;
    int first, last;
    int alias_of;
    /* a symbolic tensor's bytes as an expression of the symbols (bytes and offset are
     * then the hint binding's); NULL for a static one */
    const hc_sym *sym_bytes;
} hc_plan_entry;
const hc_plan_entry *hc_model_plan(const hc_model *m, int *count);
/* Sum of the sizes of all intermediate tensors (what the arena would be without reuse). */
size_t hc_model_intermediate_bytes(const hc_model *m);

/* ---- compiled-model files (model_file.c, docs/model_file.md) ----------------------- */
/* Write m (kernels' shared objects, plan, weights, inputs and outputs) to one file;
 * written to a temporary name and renamed. A loaded model can be saved again. */
hc_status hc_model_save(const hc_model *m, const char *path, hc_error *err);
/* hc_model_load from the file's bytes (copied); name names it in messages. */
hc_status hc_model_load_memory(const void *data, size_t size, const char *name, hc_model **out,
                               hc_error *err);
/* Whether the bytes start with the compiled-model magic bytes. */
bool hc_model_file_is_bytes(const void *data, size_t size);
/* Load a file written by hc_model_save: no compiler and no kernel cache are used. Errors
 * (status and a message naming the file): not a model file, another format version, a
 * truncated or damaged file, a CPU without the ISA or extensions it was compiled for.
 * The loaded model answers every accessor above; what it lacks: the graph holds only
 * the inputs, outputs, plan tensors and one node per kernel (its anchor: name, operator,
 * shapes, attributes; no constant data), kernel groups have no prologue/epilogue lists,
 * and no hc_func programs. It runs with the thread count it was compiled for. */
hc_status hc_model_load(const char *path, hc_model **out, hc_error *err);
/* Every check hc_model_load makes on a file's bytes (header, checksum, target, plan,
 * kernels, argument locations), without allocating its arena or loading (dlopening) any
 * of its libraries: HC_OK when hc_model_load would go on to load them (the fuzz harness,
 * fuzz/fuzz_model_file.c). */
hc_status hc_model_file_check(const void *data, size_t size, const char *name, hc_error *err);
/* Whether path starts with the compiled-model magic bytes. */
bool hc_model_file_is(const char *path);
/* Whether m came from hc_model_load. */
bool hc_model_is_loaded(const hc_model *m);
/* The OpenMP thread count m runs with (compiled: the option or all cores; loaded: the
 * file's). */
int hc_model_num_threads(const hc_model *m);
/* Pin the runs' threads to CPUs (a loaded model: off until set). */
void hc_model_set_pin_threads(hc_model *m, bool pin);
/* How many run contexts (arenas) m has made: 1 + the most runs in flight at once - 1. */
int hc_model_num_run_contexts(const hc_model *m);

#endif
