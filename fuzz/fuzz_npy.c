/* fuzz_npy.c — the .npy reader (src/core/npy.c): any bytes give an array or an error
 * naming the file; an array read encodes and reads back to the same dtype, shape and
 * bytes. */
#include "fuzz.h"

#include "core/npy.h"

FUZZ_ENTRY(npy) {
    hc_npy a = {0};
    hc_error err = {0};
    if (hc_npy_parse(data, size, "fuzz.npy", &a, &err) != HC_OK) {
        FUZZ_CHECK_ERROR(err, "fuzz.npy");
        return 0;
    }
    FUZZ_CHECK(a.ndim >= 0 && a.ndim <= HC_MAX_DIMS, "ndim %d", a.ndim);
    size_t bytes = (size_t)hc_npy_numel(&a) * (size_t)hc_dtype_size(a.dtype);
    FUZZ_CHECK(bytes <= size, "%zu data bytes from a %zu-byte file", bytes, size);
    size_t n = 0;
    char *img = hc_npy_encode(a.dtype, a.ndim, a.shape, a.data, &n, &err);
    FUZZ_CHECK(img, "cannot encode what was read: %s", err.msg);
    hc_npy b = {0};
    FUZZ_CHECK(hc_npy_parse(img, n, "again.npy", &b, &err) == HC_OK, "re-read: %s", err.msg);
    FUZZ_CHECK(b.dtype == a.dtype && b.ndim == a.ndim, "dtype or rank changed");
    for (int i = 0; i < a.ndim; i++) FUZZ_CHECK(a.shape[i] == b.shape[i], "dimension %d", i);
    FUZZ_CHECK(!bytes || !memcmp(a.data, b.data, bytes), "data changed");
    free(img);
    hc_npy_free(&a);
    hc_npy_free(&b);
    return 0;
}
