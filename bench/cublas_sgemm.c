/* cublas_sgemm M N K [--repeat R] — the cuBLAS baseline for hidetc's GPU matmul
 * (bench/gpu_check.sh).
 *
 * Times cuBLAS SGEMM in fp32 without tensor cores (CUBLAS_DEFAULT_MATH, which for fp32
 * inputs never uses TF32; NVIDIA_TF32_OVERRIDE=0 is also set before cuBLAS loads), row-major
 * C = A B with A MxK, B KxN (as column-major C^T = B^T A^T: one cublasSgemm call with the
 * operands swapped, no transposes). Each run is timed on the device with CUDA events
 * around one call on the default stream; 3 warm-ups, then R timed runs (default 50).
 * Before timing, 64 sampled entries of C are checked against a double-precision dot
 * product (|inputs| <= 1): a wrong layout fails (exit 1), an error above hidetc's fp32
 * tolerance (1e-5 + 2e-6 K, tools/cmd_kernel.c) only warns on stderr.
 *
 * Output, exactly one line on stdout:
 *   median_ms: X gflops: Y
 * Exit status: 0 done; 1 a CUDA/cuBLAS call failed or the result is wrong; 2 usage, or no
 * CUDA runtime / cuBLAS / device here (a message on stderr says which).
 *
 * No CUDA headers: libcudart and libcublas are dlopen'ed and the few functions used are
 * declared below, so it builds anywhere with
 *   cc -O2 bench/cublas_sgemm.c -ldl -o build/cublas_sgemm
 * The runtime is the first of libcudart.so.13, .so.12, .so, /usr/local/cuda/lib64/libcudart.so
 * that loads and sees a device (one newer than the driver says "insufficient driver": the
 * next is tried); cuBLAS the libcublas.so.<that runtime's major> first, then the same list. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the CUDA runtime and cuBLAS, declared by hand (stable C ABI) ------------------ */
typedef int cudaError_t;          /* 0 = cudaSuccess */
typedef void *cudaEvent_t;
typedef void *cudaStream_t;
typedef int cublasStatus_t;       /* 0 = CUBLAS_STATUS_SUCCESS */
typedef void *cublasHandle_t;
enum { CUDA_MEMCPY_H2D = 1, CUDA_MEMCPY_D2H = 2 };
enum { CUBLAS_OP_N = 0 };
enum { CUBLAS_DEFAULT_MATH = 0 };

typedef struct cuda_fns {
    cudaError_t (*GetDeviceCount)(int *);
    cudaError_t (*SetDevice)(int);
    const char *(*GetErrorString)(cudaError_t);
    cudaError_t (*Malloc)(void **, size_t);
    cudaError_t (*Free)(void *);
    cudaError_t (*Memcpy)(void *, const void *, size_t, int);
    cudaError_t (*DeviceSynchronize)(void);
    cudaError_t (*EventCreate)(cudaEvent_t *);
    cudaError_t (*EventRecord)(cudaEvent_t, cudaStream_t);
    cudaError_t (*EventSynchronize)(cudaEvent_t);
    cudaError_t (*EventElapsedTime)(float *, cudaEvent_t, cudaEvent_t);
    cudaError_t (*EventDestroy)(cudaEvent_t);
    cudaError_t (*RuntimeGetVersion)(int *);
} cuda_fns;

typedef struct cublas_fns {
    cublasStatus_t (*Create)(cublasHandle_t *);
    cublasStatus_t (*Destroy)(cublasHandle_t);
    cublasStatus_t (*SetMathMode)(cublasHandle_t, int);
    cublasStatus_t (*Sgemm)(cublasHandle_t, int, int, int, int, int, const float *,
                            const float *, int, const float *, int, const float *, float *,
                            int);
    const char *(*GetStatusString)(cublasStatus_t); /* optional (cuBLAS >= 11.4) */
} cublas_fns;

static cuda_fns cu;
static cublas_fns cb;

#define PROG "cublas_sgemm"

static void usage(FILE *f) {
    fprintf(f, "usage: " PROG " M N K [--repeat R]\n"
               "  times row-major C[MxN] = A[MxK] B[KxN] in fp32 (no TF32) with cuBLAS;\n"
               "  prints 'median_ms: X gflops: Y' (median of R runs after 3 warm-ups, "
               "default R = 50)\n");
}

static int parse_long(const char *what, const char *s, long lo, long hi, long *out) {
    char *end = NULL;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi) {
        fprintf(stderr, PROG ": %s expects an integer in [%ld, %ld], got '%s'\n", what, lo, hi,
                s ? s : "(nothing)");
        return 0;
    }
    *out = v;
    return 1;
}

/* Resolve `name` into *slot; returns 0 and prints a message when it is missing. */
static int sym(void *lib, const char *libname, const char *name, void *slot, int required) {
    void *p = dlsym(lib, name);
    memcpy(slot, &p, sizeof p);
    if (!p && required) {
        fprintf(stderr, PROG ": %s has no symbol %s\n", libname, name);
        return 0;
    }
    return 1;
}

static const char *const cudart_names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so",
                                           "/usr/local/cuda/lib64/libcudart.so"};
static const char *const cublas_names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                                           "/usr/local/cuda/lib64/libcublas.so"};
#define NLIBS 4

/* The CUDA runtime: the first of cudart_names that loads and sees a device (a runtime newer
 * than the driver reports "insufficient driver": the next, older one may work). Returns 0
 * with *ndev > 0, or the exit code after a message. */
static int load_cudart(int *ndev, int *major) {
    char why[512] = "";
    cudaError_t first_err = 0;
    const char *first_name = NULL, *first_msg = NULL;
    int loaded = 0;
    for (int i = 0; i < NLIBS; i++) {
        const char *name = cudart_names[i];
        void *rt = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (!rt) {
            const char *e = dlerror();
            if (!loaded) snprintf(why, sizeof why, "%s", e ? e : name);
            continue;
        }
        loaded = 1;
        int ok = 1;
        ok &= sym(rt, name, "cudaGetDeviceCount", &cu.GetDeviceCount, 1);
        ok &= sym(rt, name, "cudaSetDevice", &cu.SetDevice, 1);
        ok &= sym(rt, name, "cudaGetErrorString", &cu.GetErrorString, 1);
        ok &= sym(rt, name, "cudaMalloc", &cu.Malloc, 1);
        ok &= sym(rt, name, "cudaFree", &cu.Free, 1);
        ok &= sym(rt, name, "cudaMemcpy", &cu.Memcpy, 1);
        ok &= sym(rt, name, "cudaDeviceSynchronize", &cu.DeviceSynchronize, 1);
        ok &= sym(rt, name, "cudaEventCreate", &cu.EventCreate, 1);
        ok &= sym(rt, name, "cudaEventRecord", &cu.EventRecord, 1);
        ok &= sym(rt, name, "cudaEventSynchronize", &cu.EventSynchronize, 1);
        ok &= sym(rt, name, "cudaEventElapsedTime", &cu.EventElapsedTime, 1);
        ok &= sym(rt, name, "cudaEventDestroy", &cu.EventDestroy, 1);
        ok &= sym(rt, name, "cudaRuntimeGetVersion", &cu.RuntimeGetVersion, 0);
        if (!ok) continue;
        *ndev = 0;
        cudaError_t e = cu.GetDeviceCount(ndev);
        if (e == 0 && *ndev > 0) {
            int v = 0;
            *major = cu.RuntimeGetVersion && cu.RuntimeGetVersion(&v) == 0 ? v / 1000 : 0;
            return 0;
        }
        if (!first_name) first_name = name, first_err = e, first_msg = e ? cu.GetErrorString(e) : NULL;
        /* rt stays open: first_msg points into it */
    }
    if (!loaded) {
        fprintf(stderr, PROG ": no CUDA runtime (libcudart): %s\n", why);
        return 2;
    }
    if (!first_name) return 2; /* a symbol was missing: said above */
    if (first_err)
        fprintf(stderr, PROG ": no CUDA device (cudaGetDeviceCount: %s, error %d; %s)\n",
                first_msg, first_err, first_name);
    else fprintf(stderr, PROG ": no CUDA device (cudaGetDeviceCount: 0 devices; %s)\n", first_name);
    return 2;
}

/* cuBLAS with a handle: libcublas.so.<major of the runtime> first, then the others in
 * order, the first whose cublasCreate succeeds. Returns 0, or the exit code. */
static int load_cublas(int major, cublasHandle_t *h) {
    const char *order[NLIBS + 1];
    char want[32];
    int n = 0;
    snprintf(want, sizeof want, "libcublas.so.%d", major);
    if (major > 0) order[n++] = want;
    for (int i = 0; i < NLIBS; i++)
        if (strcmp(cublas_names[i], want)) order[n++] = cublas_names[i];
    char why[512] = "";
    int loaded = 0;
    cublasStatus_t last = 0;
    for (int i = 0; i < n; i++) {
        void *bl = dlopen(order[i], RTLD_NOW | RTLD_LOCAL);
        if (!bl) {
            const char *e = dlerror();
            if (!loaded) snprintf(why, sizeof why, "%s", e ? e : order[i]);
            continue;
        }
        loaded = 1;
        int ok = 1;
        ok &= sym(bl, order[i], "cublasCreate_v2", &cb.Create, 1);
        ok &= sym(bl, order[i], "cublasDestroy_v2", &cb.Destroy, 1);
        ok &= sym(bl, order[i], "cublasSetMathMode", &cb.SetMathMode, 1);
        ok &= sym(bl, order[i], "cublasSgemm_v2", &cb.Sgemm, 1);
        ok &= sym(bl, order[i], "cublasGetStatusString", &cb.GetStatusString, 0);
        if (!ok) continue;
        last = cb.Create(h);
        if (last == 0) return 0;
        fprintf(stderr, PROG ": note: cublasCreate with %s failed (status %d); trying the next\n",
                order[i], last);
    }
    if (!loaded) fprintf(stderr, PROG ": no cuBLAS (libcublas): %s\n", why);
    else fprintf(stderr, PROG ": no usable cuBLAS (cublasCreate: status %d)\n", last);
    return 2;
}

static int cuda_ok(cudaError_t e, const char *what) {
    if (e == 0) return 1;
    fprintf(stderr, PROG ": %s: %s (error %d)\n", what, cu.GetErrorString(e), e);
    return 0;
}

static int cublas_ok(cublasStatus_t s, const char *what) {
    if (s == 0) return 1;
    fprintf(stderr, PROG ": %s: %s (status %d)\n", what,
            cb.GetStatusString ? cb.GetStatusString(s) : "cuBLAS error", s);
    return 0;
}

static int cmp_float(const void *x, const void *y) {
    float a = *(const float *)x, b = *(const float *)y;
    return a < b ? -1 : a > b;
}

/* uniform in [-1, 1), xorshift64* */
static void fill_random(float *x, size_t n, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
        uint64_t r = s * 0x2545F4914F6CDD1Dull;
        x[i] = (float)((double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
}

int main(int argc, char **argv) {
    long dims[3], repeat = 50;
    int ndims = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return usage(stdout), 0;
        if (!strcmp(argv[i], "--repeat")) {
            if (!parse_long("--repeat", i + 1 < argc ? argv[i + 1] : NULL, 1, 100000, &repeat))
                return 2;
            i++;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, PROG ": unknown option '%s'\n", argv[i]);
            return usage(stderr), 2;
        } else if (ndims == 3) {
            fprintf(stderr, PROG ": more than three sizes ('%s')\n", argv[i]);
            return usage(stderr), 2;
        } else {
            static const char *const names[3] = {"M", "N", "K"};
            if (!parse_long(names[ndims], argv[i], 1, 1L << 20, &dims[ndims])) return 2;
            ndims++;
        }
    }
    if (ndims != 3) return usage(stderr), 2;
    const long M = dims[0], N = dims[1], K = dims[2];

    int ndev = 0, major = 0;
    int rc = load_cudart(&ndev, &major);
    if (rc) return rc;
    if (!cuda_ok(cu.SetDevice(0), "cudaSetDevice(0)")) return 1;
    /* fp32 GEMMs stay fp32 even if the environment asks for TF32 (read by cuBLAS) */
    setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
    cublasHandle_t h = NULL;
    rc = load_cublas(major, &h);
    if (rc) return rc;

    size_t na = (size_t)M * (size_t)K, nb = (size_t)K * (size_t)N, nc = (size_t)M * (size_t)N;
    float *A = malloc(na * sizeof *A), *B = malloc(nb * sizeof *B), *C = malloc(nc * sizeof *C);
    float *ms = malloc((size_t)repeat * sizeof *ms);
    if (!A || !B || !C || !ms) {
        fprintf(stderr, PROG ": out of host memory\n");
        return 1;
    }
    fill_random(A, na, 1), fill_random(B, nb, 2);

    void *dA = NULL, *dB = NULL, *dC = NULL;
    cudaEvent_t ev0 = NULL, ev1 = NULL;
    rc = 1;
    if (!cuda_ok(cu.Malloc(&dA, na * sizeof(float)), "cudaMalloc(A)") ||
        !cuda_ok(cu.Malloc(&dB, nb * sizeof(float)), "cudaMalloc(B)") ||
        !cuda_ok(cu.Malloc(&dC, nc * sizeof(float)), "cudaMalloc(C)") ||
        !cuda_ok(cu.Memcpy(dA, A, na * sizeof(float), CUDA_MEMCPY_H2D), "cudaMemcpy(A)") ||
        !cuda_ok(cu.Memcpy(dB, B, nb * sizeof(float), CUDA_MEMCPY_H2D), "cudaMemcpy(B)") ||
        !cuda_ok(cu.EventCreate(&ev0), "cudaEventCreate") ||
        !cuda_ok(cu.EventCreate(&ev1), "cudaEventCreate") ||
        !cublas_ok(cb.SetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode(DEFAULT_MATH)"))
        goto done;

    const float alpha = 1.0f, beta = 0.0f;
    /* row-major C (MxN) = A B is column-major C^T (NxM) = B^T (NxK) A^T (KxM): the row-major
     * buffers of B and A are B^T and A^T column-major, with leading dimensions N and K */
#define SGEMM()                                                                                \
    cb.Sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, (int)M, (int)K, &alpha, (const float *)dB,     \
             (int)N, (const float *)dA, (int)K, &beta, (float *)dC, (int)N)

    /* warm-ups (the first also picks cuBLAS's kernel), then the check */
    for (int i = 0; i < 3; i++)
        if (!cublas_ok(SGEMM(), "cublasSgemm")) goto done;
    if (!cuda_ok(cu.DeviceSynchronize(), "cudaDeviceSynchronize")) goto done;
    if (!cuda_ok(cu.Memcpy(C, dC, nc * sizeof(float), CUDA_MEMCPY_D2H), "cudaMemcpy(C)"))
        goto done;
    double maxerr = 0, tol = 1e-5 + 2e-6 * (double)K;
    for (int s = 0; s < 64; s++) {
        size_t i = (size_t)((uint64_t)s * 2654435761u % (uint64_t)M);
        size_t j = (size_t)((uint64_t)s * 40503u % (uint64_t)N);
        if (s == 63) i = (size_t)M - 1, j = (size_t)N - 1;
        double ref = 0;
        for (long p = 0; p < K; p++) ref += (double)A[i * (size_t)K + (size_t)p] * B[(size_t)p * (size_t)N + j];
        double err = fabs((double)C[i * (size_t)N + j] - ref);
        if (!(err <= maxerr)) maxerr = isnan(err) ? INFINITY : err;
    }
    if (!(maxerr <= 100 * tol)) {
        fprintf(stderr, PROG ": wrong result: max error %.3g over 64 sampled entries "
                "(fp32 tolerance %.3g)\n", maxerr, tol);
        goto done;
    }
    if (maxerr > tol)
        fprintf(stderr, PROG ": warning: max error %.3g over 64 sampled entries exceeds the fp32 "
                "tolerance %.3g (TF32?)\n", maxerr, tol);

    for (long r = 0; r < repeat; r++) {
        if (!cuda_ok(cu.EventRecord(ev0, NULL), "cudaEventRecord") ||
            !cublas_ok(SGEMM(), "cublasSgemm") ||
            !cuda_ok(cu.EventRecord(ev1, NULL), "cudaEventRecord") ||
            !cuda_ok(cu.EventSynchronize(ev1), "cudaEventSynchronize") ||
            !cuda_ok(cu.EventElapsedTime(&ms[r], ev0, ev1), "cudaEventElapsedTime"))
            goto done;
    }
#undef SGEMM
    qsort(ms, (size_t)repeat, sizeof *ms, cmp_float);
    double med = repeat % 2 ? ms[repeat / 2] : 0.5 * ((double)ms[repeat / 2 - 1] + ms[repeat / 2]);
    double flops = 2.0 * (double)M * (double)N * (double)K;
    printf("median_ms: %.4f gflops: %.2f\n", med, med > 0 ? flops / med * 1e-6 : 0.0);
    rc = 0;
done:
    if (h) cb.Destroy(h);
    if (ev0) cu.EventDestroy(ev0);
    if (ev1) cu.EventDestroy(ev1);
    if (dA) cu.Free(dA);
    if (dB) cu.Free(dB);
    if (dC) cu.Free(dC);
    free(A), free(B), free(C), free(ms);
    return rc;
}
