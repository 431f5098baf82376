/* onnx_tensor.c — TensorProto decoding: dtypes, dims, raw_data, the typed data fields,
 * external data files, and hc_onnx_load_tensor for the backend tests' .pb files.
 *
 * Every count and length read from the file is checked before it is used: a tensor
 * claims a shape, and the bytes that back it must be exactly that many. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/onnx_internal.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "raw_data is little-endian: the importer assumes a little-endian host"
#endif

/* Tensors beyond this are refused before any allocation (a corrupt dim would otherwise
 * overflow the byte count). 2^40 bytes is far above any model this project runs. */
#define HC_ONNX_MAX_BYTES ((int64_t)1 << 40)

hc_dtype hc_onnx_dtype(int32_t t) {
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return HC_F32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return HC_U8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return HC_I8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: return HC_U16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: return HC_I16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return HC_I32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return HC_I64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return HC_BOOL;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return HC_F16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return HC_F64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: return HC_U32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: return HC_U64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return HC_BF16;
    default: return HC_DTYPE_COUNT;
    }
}

const char *hc_onnx_dtype_name(int32_t t, char buf[32]) {
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__UNDEFINED: return "undefined";
    case ONNX__TENSOR_PROTO__DATA_TYPE__STRING: return "string";
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64: return "complex64";
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX128: return "complex128";
    default: break;
    }
    /* Types newer than the system's onnx.proto (ONNX 1.14 to 1.23), by their number. */
    static const char *const newer[] = {"float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
                                        "float8e5m2fnuz", "uint4", "int4", "float4e2m1",
                                        "float8e8m0", "uint2", "int2", "float6e2m3",
                                        "float6e3m2"};
    if (t >= 17 && t < 17 + (int32_t)(sizeof newer / sizeof *newer)) return newer[t - 17];
    hc_dtype d = hc_onnx_dtype(t);
    if (d != HC_DTYPE_COUNT) return hc_dtype_name(d);
    snprintf(buf, 32, "type %d", (int)t);
    return buf;
}

/* ---- shape ------------------------------------------------------------------------ */
static hc_status decode_shape(const hc_onnx_src *src, const Onnx__TensorProto *tp,
                              const char *what, hc_onnx_dense *out, hc_error *err) {
    if (tp->n_dims > HC_MAX_DIMS)
        return hc_error_set(err, HC_ERR_UNSUPPORTED, "%s: %s has %zu dimensions (at most %d "
                            "are supported)", src->path, what, tp->n_dims, HC_MAX_DIMS);
    int64_t numel = 1, esize = hc_dtype_size(out->dtype);
    out->ndim = (int)tp->n_dims;
    for (int i = 0; i < out->ndim; i++) {
        int64_t d = tp->dims[i];
        if (d < 0)
            return hc_error_set(err, HC_ERR_INVALID, "%s: %s has a negative dimension (%lld "
                                "at index %d)", src->path, what, (long long)d, i);
        if (d > 0 && numel > HC_ONNX_MAX_BYTES / esize / d)
            return hc_error_set(err, HC_ERR_INVALID, "%s: %s is too large (dims exceed 2^40 "
                                "bytes)", src->path, what);
        numel *= d;
        out->shape[i] = d;
    }
    out->nbytes = (size_t)(numel * esize);
    return HC_OK;
}

/* ---- typed data fields -------------------------------------------------------------- */
/* Store v (an int32_data or uint64_data entry) as one element of dtype d. int32_data
 * carries the bits of f16/bf16 and the values of the narrow integers and bool. */
static void store_int(hc_dtype d, void *dst, int64_t i, uint64_t v) {
    switch (d) {
    case HC_BOOL: ((uint8_t *)dst)[i] = v != 0; break;
    case HC_I8: ((int8_t *)dst)[i] = (int8_t)v; break;
    case HC_U8: ((uint8_t *)dst)[i] = (uint8_t)v; break;
    case HC_I16: ((int16_t *)dst)[i] = (int16_t)v; break;
    case HC_U16:
    case HC_F16:
    case HC_BF16: ((uint16_t *)dst)[i] = (uint16_t)v; break;
    case HC_I32: ((int32_t *)dst)[i] = (int32_t)v; break;
    case HC_U32: ((uint32_t *)dst)[i] = (uint32_t)v; break;
    case HC_U64: ((uint64_t *)dst)[i] = v; break;
    default: hc_unreachable();
    }
}

/* Which typed field holds dtype d, per onnx.proto; its count and base pointer. */
static const char *typed_field(const Onnx__TensorProto *tp, hc_dtype d, size_t *count) {
    switch (d) {
    case HC_F32: *count = tp->n_float_data; return "float_data";
    case HC_F64: *count = tp->n_double_data; return "double_data";
    case HC_I64: *count = tp->n_int64_data; return "int64_data";
    case HC_U32:
    case HC_U64: *count = tp->n_uint64_data; return "uint64_data";
    default: *count = tp->n_int32_data; return "int32_data";
    }
}

static void copy_typed(const Onnx__TensorProto *tp, hc_dtype d, void *dst, int64_t n) {
    switch (d) {
    case HC_F32: memcpy(dst, tp->float_data, (size_t)n * 4); return;
    case HC_F64: memcpy(dst, tp->double_data, (size_t)n * 8); return;
    case HC_I64: memcpy(dst, tp->int64_data, (size_t)n * 8); return;
    case HC_U32:
    case HC_U64:
        for (int64_t i = 0; i < n; i++) store_int(d, dst, i, tp->uint64_data[i]);
        return;
    default:
        for (int64_t i = 0; i < n; i++) store_int(d, dst, i, (uint64_t)(int64_t)tp->int32_data[i]);
        return;
    }
}

static hc_status decode_typed(const hc_onnx_src *src, const Onnx__TensorProto *tp,
                              const char *what, hc_onnx_dense *out, hc_error *err) {
    int64_t numel = (int64_t)(out->nbytes / hc_dtype_size(out->dtype));
    size_t count;
    const char *field = typed_field(tp, out->dtype, &count);
    if (count == 0 && numel > 0)
        return hc_error_set(err, HC_ERR_INVALID, "%s: %s has no data (%lld elements "
                            "expected in raw_data or %s)", src->path, what, (long long)numel,
                            field);
    if ((int64_t)count != numel)
        return hc_error_set(err, HC_ERR_INVALID, "%s: %s has %zu values in %s, but its "
                            "shape holds %lld", src->path, what, count, field,
                            (long long)numel);
    if (numel == 0) return HC_OK;
    out->data = hc_xmalloc(out->nbytes);
    copy_typed(tp, out->dtype, out->data, numel);
    return HC_OK;
}

/* ---- external data ------------------------------------------------------------------ */
static hc_status parse_size(const hc_onnx_src *src, const char *what, const char *key,
                            const char *text, int64_t *out, hc_error *err) {
    char *end = NULL;
    errno = 0;
    long long v = text ? strtoll(text, &end, 10) : -1;
    if (!text || !*text || *end || errno || v < 0)
        return hc_error_set(err, HC_ERR_INVALID, "%s: %s: external data %s '%s' is not a "
                            "non-negative integer", src->path, what, key, text ? text : "");
    *out = v;
    return HC_OK;
}

/* The location must be a relative path with no ".." component, and must still be inside
 * the model's folder once symlinks are resolved. Returns the resolved path (malloc'ed). */
static hc_status resolve_location(hc_onnx_src *src, const char *what, const char *loc,
                                  char **out, hc_error *err) {
    if (!*loc)
        return hc_error_set(err, HC_ERR_INVALID, "%s: %s: empty external data location",
                            src->path, what);
    if (loc[0] == '/')
        return hc_error_set(err, HC_ERR_INVALID, "%s: %s: external data location '%s' is an "
                            "absolute path (it must be relative to the model's folder)",
                            src->path, what, loc);
    for (const char *p = loc; *p;) {
        size_t len = strcspn(p, "/");
        if (len == 2 && p[0] == '.' && p[1] == '.')
            return hc_error_set(err, HC_ERR_INVALID, "%s: %s: external data location '%s' "
                                "leaves the model's folder ('..')", src->path, what, loc);
        p += len + (p[len] == '/');
    }
    if (!src->dir) {
        char *copy = hc_xstrdup(src->path), *slash = strrchr(copy, '/');
        const char *dir = slash ? (slash == copy ? "/" : (*slash = 0, copy)) : ".";
        src->dir = realpath(dir, NULL);
        free(copy);
        if (!src->dir)
            return hc_error_set(err, HC_ERR_IO, "%s: cannot resolve the model's folder: %s",
                                src->path, strerror(errno));
    }
    char *joined = hc_xmalloc(strlen(src->dir) + strlen(loc) + 2);
    sprintf(joined, "%s/%s", src->dir, loc);
    char *real = realpath(joined, NULL);
    int e = errno;
    free(joined);
    if (!real)
        return hc_error_set(err, HC_ERR_IO, "%s: %s: external data file '%s': %s", src->path,
                            what, loc, strerror(e));
    size_t dl = strlen(src->dir);
    bool inside = !strncmp(real, src->dir, dl) && (real[dl] == '/' || src->dir[dl - 1] == '/');
    if (!inside) {
        free(real);
        return hc_error_set(err, HC_ERR_INVALID, "%s: %s: external data file '%s' resolves "
                            "outside the model's folder (symlink)", src->path, what, loc);
    }
    *out = real;
    return HC_OK;
}

static hc_status read_range(const hc_onnx_src *src, const char *what, const char *file,
                            int64_t offset, hc_onnx_dense *out, hc_error *err) {
    FILE *f = fopen(file, "rb");
    if (!f)
        return hc_error_set(err, HC_ERR_IO, "%s: %s: cannot open external data file '%s': %s",
                            src->path, what, file, strerror(errno));
    struct stat st;
    hc_status s = HC_OK;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        s = hc_error_set(err, HC_ERR_IO, "%s: %s: external data '%s' is not a regular file",
                         src->path, what, file);
    } else if (offset > st.st_size || (int64_t)out->nbytes > st.st_size - offset) {
        s = hc_error_set(err, HC_ERR_INVALID, "%s: %s: external data file '%s' has %lld "
                         "bytes; %zu bytes at offset %lld do not fit", src->path, what, file,
                         (long long)st.st_size, out->nbytes, (long long)offset);
    } else if (out->nbytes > 0) {
        out->data = hc_xmalloc(out->nbytes);
        if (fseeko(f, offset, SEEK_SET) != 0 || fread(out->data, 1, out->nbytes, f) != out->nbytes)
            s = hc_error_set(err, HC_ERR_IO, "%s: %s: read error in external data file '%s'",
                             src->path, what, file);
    }
    fclose(f);
    return s;
}

static hc_status decode_external(hc_onnx_src *src, const Onnx__TensorProto *tp,
                                 const char *what, hc_onnx_dense *out, hc_error *err) {
    const char *loc = NULL, *offs = NULL, *lens = NULL;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        if (!e->key) continue;
        if (!strcmp(e->key, "location")) loc = e->value ? e->value : "";
        else if (!strcmp(e->key, "offset")) offs = e->value ? e->value : "";
        else if (!strcmp(e->key, "length")) lens = e->value ? e->value : "";
    }
    if (!loc)
        return hc_error_set(err, HC_ERR_INVALID, "%s: %s: external data without a 'location'",
                            src->path, what);
    int64_t offset = 0, length = -1;
    hc_status s;
    if (offs && (s = parse_size(src, what, "offset", offs, &offset, err))) return s;
    if (lens && (s = parse_size(src, what, "length", lens, &length, err))) return s;
    if (length >= 0 && length != (int64_t)out->nbytes)
        return hc_error_set(err, HC_ERR_INVALID, "%s: %s: external data length %lld does not "
                            "match its shape (%zu bytes)", src->path, what, (long long)length,
                            out->nbytes);
    char *file = NULL;
    if ((s = resolve_location(src, what, loc, &file, err))) return s;
    s = read_range(src, what, file, offset, out, err);
    free(file);
    return s;
}

/* ---- a whole tensor ------------------------------------------------------------------ */
hc_status hc_onnx_decode_tensor(hc_onnx_src *src, const Onnx__TensorProto *tp,
                                const char *what, hc_onnx_dense *out, hc_error *err) {
    memset(out, 0, sizeof *out);
    char buf[32];
    if (!tp->has_data_type || tp->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__UNDEFINED)
        return hc_error_set(err, HC_ERR_INVALID, "%s: %s has no data type", src->path, what);
    out->dtype = hc_onnx_dtype(tp->data_type);
    if (out->dtype == HC_DTYPE_COUNT)
        return hc_error_set(err, HC_ERR_UNSUPPORTED, "%s: %s has data type %s, which is not "
                            "supported", src->path, what, hc_onnx_dtype_name(tp->data_type, buf));
    if (tp->segment)
        return hc_error_set(err, HC_ERR_UNSUPPORTED, "%s: %s is a segment of a tensor "
                            "(not supported)", src->path, what);
    hc_status s = decode_shape(src, tp, what, out, err);
    if (s) return s;
    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        s = decode_external(src, tp, what, out, err);
    else if (tp->has_raw_data) {
        if (tp->raw_data.len != out->nbytes)
            return hc_error_set(err, HC_ERR_INVALID, "%s: %s has %zu bytes of raw_data, but "
                                "its shape and type need %zu", src->path, what,
                                tp->raw_data.len, out->nbytes);
        if (out->nbytes) {
            out->data = hc_xmalloc(out->nbytes);
            memcpy(out->data, tp->raw_data.data, out->nbytes);
        }
    } else
        s = decode_typed(src, tp, what, out, err);
    if (s) {
        free(out->data);
        out->data = NULL;
    }
    return s;
}

/* ---- backend test tensors -------------------------------------------------------------- */
hc_status hc_onnx_load_tensor(const char *path, hc_host_tensor *out, hc_error *err) {
    hc_error local;
    if (!err) err = &local;
    memset(out, 0, sizeof *out);
    char *bytes = NULL;
    size_t size = 0;
    hc_status s = hc_read_file(path, &bytes, &size, err);
    if (s) return s;
    const uint8_t *u = (const uint8_t *)bytes;
    Onnx__TensorProto *tp = hc_onnx_nesting_ok(&onnx__tensor_proto__descriptor, u, size, 0)
                                ? onnx__tensor_proto__unpack(NULL, size, u)
                                : NULL;
    free(bytes);
    if (!tp)
        return hc_error_set(err, HC_ERR_INVALID, "%s: not a valid TensorProto (protobuf "
                            "decoding failed: truncated or malformed file)", path);
    hc_onnx_src src = {path, NULL};
    hc_onnx_dense d;
    char what[300];
    snprintf(what, sizeof what, "tensor '%.200s'", tp->name ? tp->name : "");
    s = hc_onnx_decode_tensor(&src, tp, what, &d, err);
    if (!s) {
        out->name = hc_xstrdup(tp->name ? tp->name : "");
        out->dtype = d.dtype;
        out->ndim = d.ndim;
        memcpy(out->shape, d.shape, sizeof d.shape);
        /* Never NULL, so callers can pass it as a buffer even for empty tensors. */
        out->data = d.data ? d.data : hc_xcalloc(1, 1);
    }
    free(src.dir);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return s;
}

void hc_host_tensor_free(hc_host_tensor *t) {
    if (!t) return;
    free(t->name);
    free(t->data);
    memset(t, 0, sizeof *t);
}
