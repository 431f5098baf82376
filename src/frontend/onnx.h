/* onnx.h — ONNX import through protobuf-c (code generated at build time from the
 * system's /usr/include/onnx/onnx.proto). */
#ifndef HC_ONNX_H
#define HC_ONNX_H

#include "graph/graph.h"

/* Load a model file into a graph: opsets 7..17, initializers, Constant nodes, default
 * attributes per the ONNX spec, external data (paths must stay inside the model's
 * folder). A model with unsupported operators is refused with one message listing every
 * unsupported op type with a node name. Malformed or truncated files give a clear error.
 * Graph inputs must have static shapes (a symbolic dimension is an error naming the
 * input and the dimension). */
hc_status hc_onnx_load(const char *path, hc_graph **out, hc_error *err);
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
