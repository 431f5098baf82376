/* npy.c — the .npy file format: a magic string, a version, a header length, a Python
 * dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
 * spaces and a newline, then the raw array data. */
#include "core/npy.h"

#include <ctype.h>
#include <string.h>

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* .npy type codes (without the byte-order character) of the dtypes we support */
static const struct {
    hc_dtype dtype;
    const char *code;
} codes[] = {
    {HC_F16, "f2"}, {HC_F32, "f4"}, {HC_F64, "f8"}, {HC_I8, "i1"},  {HC_I16, "i2"},
    {HC_I32, "i4"}, {HC_I64, "i8"}, {HC_U8, "u1"},  {HC_U16, "u2"}, {HC_U32, "u4"},
    {HC_U64, "u8"}, {HC_BOOL, "b1"},
};

static const char *dtype_code(hc_dtype t) {
    for (size_t i = 0; i < HC_ARRAY_LEN(codes); i++)
        if (codes[i].dtype == t) return codes[i].code;
    return NULL;
}

/* Saturates at INT64_MAX (dimensions up to 2^48 each: their product overflows int64; the
 * npy fuzzer found it), which no file's data size matches. */
static int64_t shape_numel(int ndim, const int64_t *shape) {
    int64_t k = 1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0) return 0;
    for (int i = 0; i < ndim; i++)
        if (__builtin_mul_overflow(k, shape[i], &k)) return INT64_MAX;
    return k;
}

int64_t hc_npy_numel(const hc_npy *n) { return shape_numel(n->ndim, n->shape); }

void hc_npy_free(hc_npy *n) {
    free(n->data);
    n->data = NULL;
}

/* ---- header parsing ---------------------------------------------------------------- */
typedef struct cursor {
    const char *p, *end;
    const char *name; /* for messages */
} cursor;

static void skip_space(cursor *c) {
    while (c->p < c->end && isspace((unsigned char)*c->p)) c->p++;
}

static bool eat(cursor *c, char ch) {
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A quoted Python string; returns its length (0 on error or when empty, which no field
 * allows) and copies at most cap-1 bytes. */
static size_t parse_string(cursor *c, char *out, size_t cap) {
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return 0;
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (n + 1 < cap) out[n] = *c->p;
        n++, c->p++;
    }
    if (c->p >= c->end) return 0;
    c->p++;
    out[n < cap ? n : cap - 1] = 0;
    return n;
}

static hc_status parse_descr(cursor *c, hc_npy *out, hc_error *err) {
    char s[32];
    if (!parse_string(c, s, sizeof s))
        return hc_error_set(err, HC_ERR_INVALID, "%s: header field 'descr' is not a string",
                            c->name);
    char order = s[0];
    const char *code = s + 1;
    if (order == '>')
        return hc_error_set(err, HC_ERR_INVALID,
                            "%s: dtype '%s' is big-endian (only little-endian is supported)",
                            c->name, s);
    if (order != '<' && order != '|' && order != '=')
        return hc_error_set(err, HC_ERR_INVALID, "%s: unsupported dtype '%s'", c->name, s);
    for (size_t i = 0; i < HC_ARRAY_LEN(codes); i++) {
        if (strcmp(codes[i].code, code)) continue;
        out->dtype = codes[i].dtype;
        return HC_OK;
    }
    return hc_error_set(err, HC_ERR_INVALID, "%s: unsupported dtype '%s'", c->name, s);
}

static hc_status parse_bool(cursor *c, bool *v, hc_error *err) {
    skip_space(c);
    size_t left = (size_t)(c->end - c->p);
    if (left >= 4 && !strncmp(c->p, "True", 4)) *v = true, c->p += 4;
    else if (left >= 5 && !strncmp(c->p, "False", 5)) *v = false, c->p += 5;
    else
        return hc_error_set(err, HC_ERR_INVALID,
                            "%s: header field 'fortran_order' is not True or False", c->name);
    return HC_OK;
}

static hc_status parse_shape(cursor *c, hc_npy *out, hc_error *err) {
    if (!eat(c, '('))
        return hc_error_set(err, HC_ERR_INVALID, "%s: header field 'shape' is not a tuple",
                            c->name);
    out->ndim = 0;
    while (!eat(c, ')')) {
        skip_space(c);
        if (c->p >= c->end || !isdigit((unsigned char)*c->p))
            return hc_error_set(err, HC_ERR_INVALID,
                                "%s: header field 'shape' has a bad dimension", c->name);
        if (out->ndim == HC_MAX_DIMS)
            return hc_error_set(err, HC_ERR_INVALID, "%s: more than %d dimensions", c->name,
                                HC_MAX_DIMS);
        int64_t d = 0;
        while (c->p < c->end && isdigit((unsigned char)*c->p)) {
            if (d > ((int64_t)1 << 48))
                return hc_error_set(err, HC_ERR_INVALID, "%s: dimension too large", c->name);
            d = d * 10 + (*c->p++ - '0');
        }
        out->shape[out->ndim++] = d;
        skip_space(c);
        if (c->p < c->end && *c->p == 'L') c->p++; /* Python 2 long suffix */
        if (!eat(c, ',') && !(skip_space(c), c->p < c->end && *c->p == ')'))
            return hc_error_set(err, HC_ERR_INVALID,
                                "%s: header field 'shape' is not a tuple of integers", c->name);
    }
    return HC_OK;
}

static hc_status parse_header(cursor *c, hc_npy *out, hc_error *err) {
    bool seen[3] = {false, false, false}, fortran = false;
    if (!eat(c, '{'))
        return hc_error_set(err, HC_ERR_INVALID, "%s: header is not a dict", c->name);
    while (!eat(c, '}')) {
        char key[32];
        if (!parse_string(c, key, sizeof key) || !eat(c, ':'))
            return hc_error_set(err, HC_ERR_INVALID, "%s: malformed header dict", c->name);
        hc_status st;
        if (!strcmp(key, "descr")) st = parse_descr(c, out, err), seen[0] = true;
        else if (!strcmp(key, "fortran_order")) st = parse_bool(c, &fortran, err), seen[1] = true;
        else if (!strcmp(key, "shape")) st = parse_shape(c, out, err), seen[2] = true;
        else return hc_error_set(err, HC_ERR_INVALID, "%s: unknown header key '%s'", c->name, key);
        if (st) return st;
        if (!eat(c, ',') && !(skip_space(c), c->p < c->end && *c->p == '}'))
            return hc_error_set(err, HC_ERR_INVALID, "%s: malformed header dict", c->name);
    }
    static const char *const keys[3] = {"descr", "fortran_order", "shape"};
    for (int i = 0; i < 3; i++)
        if (!seen[i])
            return hc_error_set(err, HC_ERR_INVALID, "%s: header lacks '%s'", c->name, keys[i]);
    if (fortran && out->ndim > 1)
        return hc_error_set(err, HC_ERR_INVALID,
                            "%s: Fortran-order arrays are not supported (save with C order)",
                            c->name);
    return HC_OK;
}

static uint32_t read_le(const unsigned char *p, int n) {
    uint32_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

hc_status hc_npy_parse(const void *buf, size_t size, const char *name, hc_npy *out,
                       hc_error *err) {
    const unsigned char *p = buf;
    memset(out, 0, sizeof *out);
    if (size < 10 || memcmp(p, magic, sizeof magic))
        return hc_error_set(err, HC_ERR_INVALID, "%s: not a .npy file (bad magic)", name);
    int major = p[6];
    if (major < 1 || major > 3)
        return hc_error_set(err, HC_ERR_INVALID, "%s: unsupported .npy version %d.%d", name,
                            major, p[7]);
    int lenbytes = major == 1 ? 2 : 4;
    size_t start = 8 + (size_t)lenbytes;
    if (size < start)
        return hc_error_set(err, HC_ERR_INVALID, "%s: truncated header", name);
    size_t hlen = read_le(p + 8, lenbytes);
    if (hlen > size - start)
        return hc_error_set(err, HC_ERR_INVALID, "%s: header length %zu exceeds the file", name,
                            hlen);
    cursor c = {(const char *)p + start, (const char *)p + start + hlen, name};
    hc_status st = parse_header(&c, out, err);
    if (st) return st;
    int64_t numel = hc_npy_numel(out);
    size_t esize = (size_t)hc_dtype_size(out->dtype);
    size_t have = size - start - hlen;
    if (numel > (int64_t)(SIZE_MAX / 2 / esize) || (size_t)numel * esize != have)
        return hc_error_set(err, HC_ERR_INVALID,
                            "%s: data is %zu bytes but the shape needs %lld elements of %zu bytes",
                            name, have, (long long)numel, esize);
    out->data = hc_xmalloc(have ? have : 1);
    memcpy(out->data, p + start + hlen, have);
    return HC_OK;
}

hc_status hc_npy_read(const char *path, hc_npy *out, hc_error *err) {
    char *data;
    size_t size;
    memset(out, 0, sizeof *out);
    hc_status st = hc_read_file(path, &data, &size, err);
    if (st) return st;
    st = hc_npy_parse(data, size, path, out, err);
    free(data);
    return st;
}

/* ---- writing --------------------------------------------------------------------- */
char *hc_npy_encode(hc_dtype dtype, int ndim, const int64_t *shape, const void *data,
                    size_t *size, hc_error *err) {
    const char *code = dtype_code(dtype);
    if (!code) {
        hc_error_set(err, HC_ERR_UNSUPPORTED, "npy: dtype %s cannot be stored in .npy",
                     hc_dtype_name(dtype));
        return NULL;
    }
    if (ndim < 0 || ndim > HC_MAX_DIMS) {
        hc_error_set(err, HC_ERR_INVALID, "npy: %d dimensions (at most %d)", ndim, HC_MAX_DIMS);
        return NULL;
    }
    /* a zero dimension anywhere makes the array empty, whatever the others (the npy
     * fuzzer found (2^48, 2^48, 0): multiplying in order overflowed before the 0) */
    int64_t numel = shape_numel(ndim, shape);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) numel = -1;
    if (numel < 0 || numel == INT64_MAX ||
        (uint64_t)numel > SIZE_MAX / 2 / (size_t)hc_dtype_size(dtype)) {
        hc_error_set(err, HC_ERR_INVALID, "npy: shape of %d dimensions has no valid size", ndim);
        return NULL;
    }
    hc_sb h;
    hc_sb_init(&h);
    char order = hc_dtype_size(dtype) == 1 ? '|' : '<';
    hc_sb_printf(&h, "{'descr': '%c%s', 'fortran_order': False, 'shape': (", order, code);
    for (int i = 0; i < ndim; i++)
        hc_sb_printf(&h, "%lld%s", (long long)shape[i], ndim == 1 ? "," : i + 1 < ndim ? ", " : "");
    hc_sb_puts(&h, "), }");
    /* pad with spaces so that the data starts on a 64-byte boundary; end with '\n' */
    int lenbytes = h.len + 1 + 10 > 65535 ? 4 : 2;
    size_t prefix = 8 + (size_t)lenbytes;
    while ((prefix + h.len + 1) % 64) hc_sb_putc(&h, ' ');
    hc_sb_putc(&h, '\n');
    size_t bytes = (size_t)numel * (size_t)hc_dtype_size(dtype);
    *size = prefix + h.len + bytes;
    unsigned char *out = hc_xmalloc(*size);
    memcpy(out, magic, sizeof magic);
    out[6] = lenbytes == 2 ? 1 : 2, out[7] = 0;
    for (int i = 0; i < lenbytes; i++) out[8 + i] = (unsigned char)(h.len >> (8 * i));
    memcpy(out + prefix, h.buf, h.len);
    if (bytes) memcpy(out + prefix + h.len, data, bytes);
    hc_sb_free(&h);
    return (char *)out;
}

hc_status hc_npy_write(const char *path, hc_dtype dtype, int ndim, const int64_t *shape,
                       const void *data, hc_error *err) {
    size_t size;
    char *img = hc_npy_encode(dtype, ndim, shape, data, &size, err);
    if (!img) return err ? err->status : HC_ERR_INVALID;
    hc_status st = hc_write_file(path, img, size, err);
    free(img);
    return st;
}
