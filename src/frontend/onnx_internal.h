/* onnx_internal.h — shared by the ONNX importer's files (not a public interface). */
#ifndef HC_ONNX_INTERNAL_H
#define HC_ONNX_INTERNAL_H

#include "frontend/onnx.h"
#include "onnx.pb-c.h"

/* The folder that external data must stay inside, and the file name for messages. */
typedef struct hc_onnx_src {
    const char *path; /* the model (or tensor) file as the caller named it */
    char *dir;        /* realpath of its folder (malloc'ed), NULL until first needed */
} hc_onnx_src;

/* A decoded tensor: dtype, shape and dense row-major data (malloc'ed; NULL when empty). */
typedef struct hc_onnx_dense {
    hc_dtype dtype;
    int ndim;
    int64_t shape[HC_MAX_DIMS];
    size_t nbytes;
    void *data;
} hc_onnx_dense;

/* ONNX TensorProto.DataType -> dtype; HC_DTYPE_COUNT when it has no equivalent. */
hc_dtype hc_onnx_dtype(int32_t onnx_type);
/* A readable name for an ONNX data type code ("string", "complex64", "type 99"). */
const char *hc_onnx_dtype_name(int32_t onnx_type, char buf[32]);

/* Decode tp (raw_data, typed fields or external data). `what` names the tensor in
 * messages ("initializer 'w'"); every message starts with src->path. */
hc_status hc_onnx_decode_tensor(hc_onnx_src *src, const Onnx__TensorProto *tp,
                                const char *what, hc_onnx_dense *out, hc_error *err);

/* False when the wire data in p[0..n) of a message of type desc nests messages deeper
 * than any model does (protobuf-c would recurse without limit). */
bool hc_onnx_nesting_ok(const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t n,
                        int depth);

#endif
