/* npy.h — read and write NumPy .npy files (format versions 1.0, 2.0 and 3.0).
 *
 * Supported: little-endian (or byte-order-free) C-order arrays of f16, f32, f64, i8..i64,
 * u8..u64 and bool, up to HC_MAX_DIMS dimensions. Anything else (big-endian data, Fortran
 * order, object or structured dtypes, a truncated file) is an HC_ERR_INVALID with a
 * message naming the file and the field. Writing uses version 1.0 (2.0 if the header
 * would not fit), with the header padded to a multiple of 64 bytes as NumPy does. */
#ifndef HC_NPY_H
#define HC_NPY_H

#include "core/core.h"
#include "ir/ir.h"

typedef struct hc_npy {
    hc_dtype dtype;
    int ndim; /* 0 for a scalar array */
    int64_t shape[HC_MAX_DIMS];
    void *data; /* malloc'ed, hc_npy_numel * element size bytes, host byte order */
} hc_npy;

/* Read `path` into *out (freed with hc_npy_free). */
hc_status hc_npy_read(const char *path, hc_npy *out, hc_error *err);
/* Parse an in-memory .npy image; `name` labels error messages. The data is copied. */
hc_status hc_npy_parse(const void *buf, size_t size, const char *name, hc_npy *out,
                       hc_error *err);
hc_status hc_npy_write(const char *path, hc_dtype dtype, int ndim, const int64_t *shape,
                       const void *data, hc_error *err);
/* The file image hc_npy_write would write (malloc'ed; *size set). NULL on a dtype that
 * .npy cannot hold (bf16, void) or a bad shape, with err set. */
char *hc_npy_encode(hc_dtype dtype, int ndim, const int64_t *shape, const void *data,
                    size_t *size, hc_error *err);
void hc_npy_free(hc_npy *n);
int64_t hc_npy_numel(const hc_npy *n);

#endif
