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

#ifdef __cplusplus
}
#endif
#endif
