/* hidetc.h — the public C API of hidetc, a deep-learning compiler built on task-mapping
 * tensor programs (see README.md and docs/).
 *
 * Usage: a batched fp32 matmul compiled for this CPU (cached on disk) and run:
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

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hidetc_status {
    HIDETC_OK = 0,
    HIDETC_ERR_INVALID = 1,     /* bad argument, model or file content */
    HIDETC_ERR_IO = 2,          /* a file could not be read or written */
    HIDETC_ERR_COMPILE = 3,     /* the system C compiler failed */
    HIDETC_ERR_UNSUPPORTED = 4, /* valid input that hidetc does not handle */
    HIDETC_ERR_NOMEM = 5,
} hidetc_status;

/* "0.1.0" */
const char *hidetc_version(void);
/* The message of the last failed call on this thread ("" if none). */
const char *hidetc_last_error(void);

typedef struct hidetc_options {
    const char *cache_dir; /* kernel cache; NULL: $HIDETC_CACHE_DIR or ~/.cache/hidetc */
    int num_threads;       /* <= 0: all cores */
} hidetc_options;

/* ---- matmul: C[b] = A[b] x B[b], row-major fp32, A [batch,m,k], B [batch,k,n] ---------- */
typedef struct hidetc_matmul hidetc_matmul;

hidetc_status hidetc_matmul_init(hidetc_matmul **out, int64_t batch, int64_t m, int64_t n,
                                 int64_t k, const hidetc_options *opt);
hidetc_status hidetc_matmul_run(hidetc_matmul *mm, const float *A, const float *B, float *C);
void hidetc_matmul_free(hidetc_matmul *mm);

#ifdef __cplusplus
}
#endif
#endif
