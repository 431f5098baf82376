/* onnx.h — ONNX import through protobuf-c (code generated at build time from the
 * system's /usr/include/onnx/onnx.proto). */
#ifndef HC_ONNX_H
#define HC_ONNX_H

#include "graph/graph.h"

/* Load a model file into a graph: opsets 1..28, initializers, Constant nodes, default
 * attributes per the ONNX spec, external data (paths must stay inside the model's
 * folder). A model with unsupported operators is refused with one message listing every
 * unsupported op type with a node name. Malformed or truncated files give a clear error.
 * Graph inputs must have static shapes (a symbolic dimension is an error naming the
 * input and the dimension) unless hc_onnx_options.symbolic keeps them as symbols. */
hc_status hc_onnx_load(const char *path, hc_graph **out, hc_error *err);

/* Symbolic input dimensions fixed at import (ONNX Runtime's free-dimension overrides):
 * every dimension whose dim_param is dims[i].name becomes dims[i].value, and the input
 * named shapes[j].input gets the whole shape shapes[j] (its rank, and every dimension that
 * the file fixes, must agree). An override that names no symbol or input of the model is
 * an error listing what the model has. */
typedef struct hc_onnx_dim {
    const char *name;
    int64_t value;
} hc_onnx_dim;
typedef struct hc_onnx_shape {
    const char *input;
    int ndim;
    int64_t dims[HC_MAX_DIMS];
} hc_onnx_shape;
typedef struct hc_onnx_options {
    int ndims;
    const hc_onnx_dim *dims;
    int nshapes;
    const hc_onnx_shape *shapes;
    /* Keep the dimensions that no override fixes as symbols (docs/dynamic.md): a
     * dim_param is the symbol of that name, a dimension without value or name the symbol
     * "INPUT_dD". false: such a dimension is an error (the compiler builds static kernels). */
    bool symbolic;
    /* Hint values of symbols (the binding at which symbolic shapes are also computed
     * concretely); a symbol without one gets 16 + 8 * (its index). */
    int nhints;
    const hc_onnx_dim *hints;
    /* Testing the symbolic rules (tests/test_sym_infer.c): with `symbolic`, every fixed
     * input dimension above 1 becomes a symbol too ("INPUT_dD"), its hint the file's value. */
    bool all_symbolic;
} hc_onnx_options;
/* The Loop / Scan body hook (hc_graph.inline_body, src/graph/graph.h). */
hc_status hc_onnx_inline_body(hc_graph *g, const hc_node *n, const char *prefix, int nformal,
                              hc_tensor *const *formal, int nout, hc_tensor **outs, hc_error *err);
/* hc_onnx_load / hc_onnx_load_memory with overrides (o may be NULL). */
hc_status hc_onnx_load_with(const char *path, const hc_onnx_options *o, hc_graph **out,
                            hc_error *err);
hc_status hc_onnx_load_memory_with(const void *bytes, size_t size, const char *path,
                                   const hc_onnx_options *o, hc_graph **out, hc_error *err);
/* Parse "NAME=VALUE" (--dim) and "INPUT=D0,D1,..." (--shape) into d / s; false with a
 * message in err on a malformed one. s->input and d->name point into arg. */
bool hc_onnx_parse_dim(const char *arg, hc_onnx_dim *d, char *name_buf, size_t cap, hc_error *err);
bool hc_onnx_parse_shape(const char *arg, hc_onnx_shape *s, char *name_buf, size_t cap,
                         hc_error *err);
/* The same from the file's bytes; path names it in messages and locates external data
 * (the fuzz harness, fuzz/fuzz_onnx.c). */
hc_status hc_onnx_load_memory(const void *bytes, size_t size, const char *path, hc_graph **out,
                              hc_error *err);

/* Read a serialized TensorProto (the backend tests' input_N.pb / output_N.pb) into a
 * malloc'ed dense buffer. */
typedef struct hc_host_tensor {
    char *name;
    hc_dtype dtype;
    int ndim;
    int64_t shape[HC_MAX_DIMS];
    void *data; /* malloc'ed */
} hc_host_tensor;
hc_status hc_onnx_load_tensor(const char *path, hc_host_tensor *out, hc_error *err);
void hc_host_tensor_free(hc_host_tensor *t);

#endif
