/* hidetc.h — the public C API of hidetc, a deep-learning compiler built on task-mapping
 * tensor programs (see README.md and docs/).
 *
 * Usage 1: a model built op by op, compiled for this CPU (kernels cached on disk), run:
 *
 *     #include <hidetc.h>
 *     hidetc_graph *g;
 *     hidetc_graph_init(&g, "tiny");
 *     int64_t xs[2] = {1, 4}, ws[2] = {4, 3};
 *     hidetc_value x = hidetc_graph_input(g, "x", HIDETC_F32, 2, xs);
 *     hidetc_value w = hidetc_graph_constant(g, "w", HIDETC_F32, 2, ws, weights);
 *     hidetc_value y, in[2] = {x, w};
 *     hidetc_graph_op(g, "MatMul", 2, in, 0, NULL, 1, &y);    // ONNX operators
 *     hidetc_attr alpha = {.name = "alpha", .kind = HIDETC_ATTR_FLOAT, .f = 0.1};
 *     hidetc_graph_op(g, "LeakyRelu", 1, &y, 1, &alpha, 1, &y);
 *     hidetc_graph_output(g, y, "y");
 *     hidetc_model *m;
 *     if (hidetc_model_compile(&m, g, NULL) != HIDETC_OK) {  // takes g, even on failure
 *         fprintf(stderr, "%s\n", hidetc_last_error());
 *         return 1;
 *     }
 *     const void *inputs[1] = {x_data};                      // dense, row-major
 *     void *outputs[1] = {y_data};
 *     hidetc_model_run(m, inputs, outputs);
 *     hidetc_model_free(m);
 *
 * An ONNX file: hidetc_model_load_onnx(&m, "model.onnx", NULL), then the same run/free;
 * hidetc_model_num_inputs / _input_name / _input_shape / _input_dtype describe the
 * buffers it expects (the same for outputs).
 *
 * Usage 2: a batched fp32 matmul compiled for this CPU (cached on disk) and run:
 *
 *     #include <hidetc.h>
 *     hidetc_matmul *mm;
 *     hidetc_options opt = {.num_threads = 2};           // zero fields: defaults
 *     if (hidetc_matmul_init(&mm, 1, 128, 768, 768, &opt) != HIDETC_OK) {
 *         fprintf(stderr, "%s\n", hidetc_last_error());
 *         return 1;
 *     }
 *     hidetc_matmul_run(mm, A, B, C);                    // C[128x768] = A[128x768] B[768x768]
 *     hidetc_matmul_free(mm);
 *
 * Conventions: opaque handles; hidetc_<noun>_<verb>; every init has a free; functions
 * that can fail return a status and leave a message for hidetc_last_error(). The library
 * never exits the process. */
#ifndef HIDETC_H
#define HIDETC_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library's exported functions (it is built with -fvisibility=hidden: nothing else is
 * visible outside the shared library). */
#if defined(__GNUC__)
#define HIDETC_API __attribute__((visibility("default")))
#else
#define HIDETC_API
#endif

typedef enum hidetc_status {
    HIDETC_OK = 0,
    HIDETC_ERR_INVALID = 1,     /* bad argument, model or file content */
    HIDETC_ERR_IO = 2,          /* a file could not be read or written */
    HIDETC_ERR_COMPILE = 3,     /* the system C compiler failed */
    HIDETC_ERR_UNSUPPORTED = 4, /* valid input that hidetc does not handle */
    HIDETC_ERR_NOMEM = 5,
    HIDETC_ERR_DEVICE = 6,      /* a GPU call failed (launch, copy, device memory) */
} hidetc_status;

/* "0.1.0" */
HIDETC_API const char *hidetc_version(void);
/* The message of the last failed call on this thread ("" if none). */
HIDETC_API const char *hidetc_last_error(void);

typedef struct hidetc_options {
    const char *cache_dir; /* kernel cache; NULL: $HIDETC_CACHE_DIR or ~/.cache/hidetc */
    int num_threads;       /* <= 0: all cores */
    int verbose;           /* model compilation: progress on stderr */
} hidetc_options;

/* ---- matmul: C[b] = A[b] x B[b], row-major fp32, A [batch,m,k], B [batch,k,n] ---------- */
typedef struct hidetc_matmul hidetc_matmul;

HIDETC_API hidetc_status hidetc_matmul_init(hidetc_matmul **out, int64_t batch, int64_t m,
                                            int64_t n, int64_t k, const hidetc_options *opt);
HIDETC_API hidetc_status hidetc_matmul_run(hidetc_matmul *mm, const float *A, const float *B,
                                           float *C);
HIDETC_API void hidetc_matmul_free(hidetc_matmul *mm);

/* ---- element types ------------------------------------------------------------------ */
typedef enum hidetc_dtype {
    HIDETC_BOOL = 1, /* one byte, 0 or 1 */
    HIDETC_I8,
    HIDETC_I16,
    HIDETC_I32,
    HIDETC_I64,
    HIDETC_U8,
    HIDETC_U16,
    HIDETC_U32,
    HIDETC_U64,
    HIDETC_F16,
    HIDETC_BF16,
    HIDETC_F32,
    HIDETC_F64,
} hidetc_dtype;

#define HIDETC_MAX_DIMS 8

/* ---- graphs: build a model op by op --------------------------------------------------- */
/* Operators are ONNX operators (op_type and attributes as in the ONNX spec, default opset
 * 17). Values are handles of tensors in one graph; -1 means "none" (an omitted optional
 * input) and is what the value-returning functions give on error. */
typedef struct hidetc_graph hidetc_graph;
typedef int32_t hidetc_value;

typedef enum hidetc_attr_kind {
    HIDETC_ATTR_INT,
    HIDETC_ATTR_FLOAT,
    HIDETC_ATTR_STRING,
    HIDETC_ATTR_INTS,
    HIDETC_ATTR_FLOATS,
} hidetc_attr_kind;

typedef struct hidetc_attr {
    const char *name;
    hidetc_attr_kind kind;
    int64_t i;           /* INT */
    double f;            /* FLOAT */
    const char *s;       /* STRING */
    int n;               /* INTS / FLOATS: count */
    const int64_t *ints; /* INTS */
    const double *floats; /* FLOATS */
} hidetc_attr;

HIDETC_API hidetc_status hidetc_graph_init(hidetc_graph **out, const char *name);
/* Operator semantics follow this ONNX opset (default 17; 7..17). */
HIDETC_API hidetc_status hidetc_graph_set_opset(hidetc_graph *g, int opset);
HIDETC_API void hidetc_graph_free(hidetc_graph *g);
/* A graph input (fed at run time); the shape is static. */
HIDETC_API hidetc_value hidetc_graph_input(hidetc_graph *g, const char *name, hidetc_dtype dtype,
                                           int ndim, const int64_t *shape);
/* A constant (weights): data, dense row-major, is copied (NULL: zeros). name may be NULL. */
HIDETC_API hidetc_value hidetc_graph_constant(hidetc_graph *g, const char *name, hidetc_dtype dtype,
                                              int ndim, const int64_t *shape, const void *data);
/* Append an operator: inputs in ONNX order (-1 for an omitted optional input); writes
 * noutputs value handles to outputs. The output shapes are inferred right away, so an
 * invalid operator fails here, with a message naming it. */
HIDETC_API hidetc_status hidetc_graph_op(hidetc_graph *g, const char *op_type, int ninputs,
                                         const hidetc_value *inputs, int nattrs,
                                         const hidetc_attr *attrs, int noutputs,
                                         hidetc_value *outputs);
/* Mark v as a graph output, named `name` (NULL: keep the value's name). */
HIDETC_API hidetc_status hidetc_graph_output(hidetc_graph *g, hidetc_value v, const char *name);
/* The inferred dtype and shape of v: the rank is returned (-1 on a bad handle), shape
 * receives up to HIDETC_MAX_DIMS sizes (may be NULL). */
HIDETC_API int hidetc_graph_value_shape(const hidetc_graph *g, hidetc_value v, hidetc_dtype *dtype,
                                        int64_t *shape);
/* The graph as text, one line per operator (malloc'ed; free() it). */
HIDETC_API char *hidetc_graph_to_string(const hidetc_graph *g);

/* ---- models: compiled graphs ------------------------------------------------------- */
typedef struct hidetc_model hidetc_model;

/* Optimize and compile g for this CPU. The model takes g: it is freed, also on failure. */
HIDETC_API hidetc_status hidetc_model_compile(hidetc_model **out, hidetc_graph *g,
                                              const hidetc_options *opt);
/* Import an ONNX file (opsets 7..17) and compile it. */
HIDETC_API hidetc_status hidetc_model_load_onnx(hidetc_model **out, const char *path,
                                                const hidetc_options *opt);
/* Run once: inputs[i] / outputs[i] are dense row-major buffers of the model's input and
 * output dtypes and shapes, owned by the caller. */
HIDETC_API hidetc_status hidetc_model_run(hidetc_model *m, const void *const *inputs,
                                          void *const *outputs);
HIDETC_API void hidetc_model_free(hidetc_model *m);

HIDETC_API int hidetc_model_num_inputs(const hidetc_model *m);
HIDETC_API int hidetc_model_num_outputs(const hidetc_model *m);
/* Name, dtype and shape of input / output i (shape: up to HIDETC_MAX_DIMS sizes; the
 * rank is returned, -1 when i is out of range). */
HIDETC_API const char *hidetc_model_input_name(const hidetc_model *m, int i);
HIDETC_API const char *hidetc_model_output_name(const hidetc_model *m, int i);
HIDETC_API hidetc_dtype hidetc_model_input_dtype(const hidetc_model *m, int i);
HIDETC_API hidetc_dtype hidetc_model_output_dtype(const hidetc_model *m, int i);
HIDETC_API int hidetc_model_input_shape(const hidetc_model *m, int i, int64_t *shape);
HIDETC_API int hidetc_model_output_shape(const hidetc_model *m, int i, int64_t *shape);
/* Bytes of the memory plan (one arena for every intermediate tensor). */
HIDETC_API size_t hidetc_model_arena_bytes(const hidetc_model *m);

/* A compiled model as one file (kernels' shared objects, memory plan, weights):
 * hidetc_model_load reads it back on a machine with the same CPU features and runs it
 * without a C compiler or the kernel cache (the same outputs, bit for bit). A file
 * holds machine code: load only files you trust. */
HIDETC_API hidetc_status hidetc_model_save(const hidetc_model *m, const char *path);
HIDETC_API hidetc_status hidetc_model_load(hidetc_model **out, const char *path);

/* ==== sessions: the embedding API (ONNX Runtime's shape) ============================== *
 *
 *     hidetc_session_options o;
 *     hidetc_session_options_init(&o);          // defaults; then set what you need
 *     o.num_threads = 2;
 *     hidetc_dim dims[1] = {{"batch", 8}};       // fix symbolic dimensions (dim_param)
 *     o.dims = dims, o.num_dims = 1;
 *     hidetc_session *s;
 *     if (hidetc_session_create(&s, "model.onnx", &o) != HIDETC_OK) {
 *         fprintf(stderr, "%s\n", hidetc_last_error());
 *         return 1;
 *     }
 *     hidetc_tensor *x;                          // wraps the caller's memory: no copy
 *     hidetc_tensor_wrap(&x, HIDETC_F32, 4, (int64_t[]){8, 3, 224, 224}, data);
 *     const char *in_names[1] = {"input"};
 *     hidetc_tensor *y = NULL;                   // NULL: the session allocates it
 *     hidetc_session_run(s, 1, in_names, &x, 0, NULL, &y);  // every output, in order
 *     float *probs = hidetc_tensor_data(y);
 *     hidetc_tensor_free(y), hidetc_tensor_free(x);
 *     hidetc_session_free(s);
 *
 * A session holds one compiled model (an ONNX file or bytes compiled at creation, or a
 * file written by hidetc_model_save / `hidetc compile`, told by its magic bytes). Its runs
 * may be called from several threads at once: each concurrent run gets its own
 * intermediate memory (a pool of arenas, one per run in flight, kept for the next runs);
 * the weights and kernels are shared. On a GPU target runs are serialized. A run uses
 * `num_threads` worker threads of its own OpenMP team; N sessions running at once use N
 * teams (N x num_threads threads: give each num_threads = cores / N). The library changes
 * no process-wide state: the calling thread's OpenMP thread count is restored after each
 * run, and threads are pinned to CPUs only when pin_threads is set (or HIDETC_BIND=1).
 *
 * ABI: HIDETC_ABI_VERSION changes when a struct's layout or a function's meaning
 * changes incompatibly; options structs only grow at their end. A session is created
 * only when the caller's header (o.abi_version, set by hidetc_session_options_init) is
 * one this library implements (version 1 callers: their options end before
 * num_tune_shapes). */
#define HIDETC_ABI_VERSION 2
/* The oldest ABI version this library still serves (the shared library's SOVERSION):
 * callers built against versions HIDETC_ABI_OLDEST to HIDETC_ABI_VERSION all work. */
#define HIDETC_ABI_OLDEST 1
/* The ABI version of the library (HIDETC_ABI_VERSION of the header it was built with). */
HIDETC_API int hidetc_abi_version(void);
/* A constant English name of a status ("HIDETC_ERR_NOMEM: out of memory"). */
HIDETC_API const char *hidetc_status_string(hidetc_status s);

/* A symbolic dimension (ONNX dim_param) fixed to a value at compile time. */
typedef struct hidetc_dim {
    const char *name;
    int64_t value;
} hidetc_dim;

/* An input's whole shape fixed at compile time (for dimensions without a name too). */
typedef struct hidetc_input_shape {
    const char *input;
    int ndim;
    const int64_t *dims;
} hidetc_input_shape;

/* The values a symbolic dimension takes when the kernels are tuned (tune_shapes). */
typedef struct hidetc_tune_shape {
    const char *name; /* the symbol (ONNX dim_param) */
    int num_values;
    const int64_t *values;
} hidetc_tune_shape;

/* Compile progress: stage is "import", "optimize", "schedule", "tune", "build" or
 * "done"; done of total steps of that stage. */
typedef void (*hidetc_progress_fn)(void *user, const char *stage, int done, int total);

typedef struct hidetc_session_options {
    int abi_version;        /* HIDETC_ABI_VERSION (hidetc_session_options_init sets it) */
    int num_threads;        /* <= 0: all cores */
    int tune_level;         /* 0 (default configs), 1 or 2: the tuner's space (docs/tuning.md) */
    const char *target;     /* NULL or "cpu": this CPU; "cpu:avx2", "opencl", "cuda", ... */
    const char *cache_dir;  /* kernel cache; NULL: $HIDETC_CACHE_DIR or ~/.cache/hidetc */
    int num_dims;           /* symbolic dimensions fixed at compile time */
    const hidetc_dim *dims;
    int num_shapes;         /* whole input shapes fixed at compile time */
    const hidetc_input_shape *shapes;
    int pin_threads;        /* 1: pin the run's threads to CPUs (docs/runtime.md) */
    int verbose;            /* compile notes on stderr */
    hidetc_progress_fn progress; /* NULL: none */
    void *progress_user;
    size_t max_memory;      /* bytes a run may hold; 0: no limit */
    /* ABI 2: with tune_level > 0, a model with symbolic dimensions has its kernels tuned
     * at every combination of these values (the other symbols at their hints; none: at
     * the hints); a kernel whose best config differs keeps one program per size range,
     * and each run picks the one tuned nearest its shape (docs/dynamic.md, dispatch) */
    int num_tune_shapes;
    const hidetc_tune_shape *tune_shapes;
} hidetc_session_options;

/* Defaults: all cores, level 0, this CPU, the default cache, no overrides. */
HIDETC_API void hidetc_session_options_init(hidetc_session_options *o);

typedef struct hidetc_session hidetc_session;

/* From a file: an ONNX model, "builtin:NAME", or a compiled-model file. opt may be NULL. */
HIDETC_API hidetc_status hidetc_session_create(hidetc_session **out, const char *path,
                                               const hidetc_session_options *opt);
/* From bytes in memory (an ONNX model or a compiled-model file), copied as needed: the
 * caller may free them on return. External data of an ONNX model is not available. */
HIDETC_API hidetc_status hidetc_session_create_from_bytes(hidetc_session **out,
                                                          const void *data, size_t size,
                                                          const hidetc_session_options *opt);
HIDETC_API void hidetc_session_free(hidetc_session *s);
/* Write the session's compiled model to a file (hidetc_model_save's format): a later
 * hidetc_session_create on it loads without compiling. */
HIDETC_API hidetc_status hidetc_session_save(const hidetc_session *s, const char *path);

/* An input or output: name, dtype, rank and dims. dims[d] is -1 for a dimension that is
 * symbolic at run time (a symbol that dims/shapes left open: docs/dynamic.md), and then
 * dim_names[d] is its expression ("batch", "batch*seq"); else dim_names[d] is the ONNX
 * symbol a fixed dimension came from (NULL: none). Pointers live as long as the session.
 * A session with symbolic dimensions runs at the dims of the tensors given to
 * hidetc_session_run (its outputs' dims follow; errors name the input, the dimension and
 * the expected value); hidetc_session_run_buffers needs static dims. */
typedef struct hidetc_value_info {
    const char *name;
    hidetc_dtype dtype;
    int ndim;
    int64_t dims[HIDETC_MAX_DIMS];
    const char *dim_names[HIDETC_MAX_DIMS];
} hidetc_value_info;

HIDETC_API int hidetc_session_num_inputs(const hidetc_session *s);
HIDETC_API int hidetc_session_num_outputs(const hidetc_session *s);
HIDETC_API hidetc_status hidetc_session_input_info(const hidetc_session *s, int i,
                                                   hidetc_value_info *info);
HIDETC_API hidetc_status hidetc_session_output_info(const hidetc_session *s, int i,
                                                    hidetc_value_info *info);
/* Index of the input / output named name, -1 if none. */
HIDETC_API int hidetc_session_input_index(const hidetc_session *s, const char *name);
HIDETC_API int hidetc_session_output_index(const hidetc_session *s, const char *name);
/* The target the session's kernels run on ("cpu:avx512", "opencl", ...). */
HIDETC_API const char *hidetc_session_target(const hidetc_session *s);

/* ---- tensors ---- */
typedef struct hidetc_tensor hidetc_tensor;

/* A tensor over the caller's dense row-major memory (not copied, not freed). */
HIDETC_API hidetc_status hidetc_tensor_wrap(hidetc_tensor **out, hidetc_dtype dtype, int ndim,
                                            const int64_t *dims, void *data);
/* A tensor whose memory the library allocates (64-byte aligned, zeroed). */
HIDETC_API hidetc_status hidetc_tensor_alloc(hidetc_tensor **out, hidetc_dtype dtype, int ndim,
                                             const int64_t *dims);
/* Frees the tensor, and its memory when the library allocated it. */
HIDETC_API void hidetc_tensor_free(hidetc_tensor *t);
HIDETC_API void *hidetc_tensor_data(const hidetc_tensor *t);
HIDETC_API hidetc_dtype hidetc_tensor_dtype(const hidetc_tensor *t);
/* The rank; dims (may be NULL) receives the sizes. */
HIDETC_API int hidetc_tensor_dims(const hidetc_tensor *t, int64_t *dims);
HIDETC_API size_t hidetc_tensor_bytes(const hidetc_tensor *t);

/* Run by names. inputs[i] feeds the input named input_names[i] (every input exactly
 * once; input_names NULL: inputs in the session's order). outputs[j] receives the output
 * named output_names[j] (output_names NULL and noutputs 0 or the output count: every
 * output in order). An outputs[j] left NULL is allocated and returned (free it with
 * hidetc_tensor_free); a given one must have the output's dtype and dims and is written
 * in place. Every dtype and dim is checked: a mismatch is HIDETC_ERR_INVALID naming the
 * input, the dimension and the expected value. */
HIDETC_API hidetc_status hidetc_session_run(hidetc_session *s, int ninputs,
                                            const char *const *input_names,
                                            hidetc_tensor *const *inputs, int noutputs,
                                            const char *const *output_names,
                                            hidetc_tensor **outputs);
/* The positional fast path: dense buffers in the session's input and output order, of
 * the dtypes and dims hidetc_session_input_info gives (no checks beyond NULLs). */
HIDETC_API hidetc_status hidetc_session_run_buffers(hidetc_session *s,
                                                    const void *const *inputs,
                                                    void *const *outputs);

#ifdef __cplusplus
}
#endif
#endif
