/* test_gpu_cuda.c — NVRTC (CUDA C to PTX and cubins, compile errors) and the CUDA device
 * layer: a clean failure without a driver, an end-to-end kernel with one.
 *
 * Runs anywhere: without libnvrtc the NVRTC checks, and without a CUDA device the
 * end-to-end checks, are reported as skipped (not counted as passed). */
#include "target/gpu/gpu.h"
#include "target/gpu/nvrtc.h"
#include "test.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char cache[256];
static int skipped;

#define SKIP(...)                                                                                  \
    do {                                                                                           \
        skipped++;                                                                                 \
        printf("skipped: ");                                                                       \
        printf(__VA_ARGS__);                                                                       \
        putchar('\n');                                                                             \
    } while (0)

/* Shared memory, barriers, the builtin indices and a loop: what emitted kernels use. */
static const char *block_sum_src =
    "extern \"C\" __global__ void block_sum(const float *x, float *y) {\n"
    "    __shared__ float buf[256];\n"
    "    int t = threadIdx.x;\n"
    "    buf[t] = x[blockIdx.x * 256 + t];\n"
    "    __syncthreads();\n"
    "    for (int s = 128; s > 0; s >>= 1) {\n"
    "        if (t < s) buf[t] += buf[t + s];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (t == 0) y[blockIdx.x] = buf[0];\n"
    "}\n";

static void test_nvrtc_ptx(void) {
    const char *archs[] = {"sm_80", "sm_90"};
    for (size_t i = 0; i < HC_ARRAY_LEN(archs); i++) {
        char *ptx = NULL;
        hc_error err;
        hc_status st = hc_nvrtc_compile(block_sum_src, archs[i], &ptx, &err);
        CHECK_MSG(st == HC_OK, "%s: %s", archs[i], err.msg);
        if (st != HC_OK) continue;
        char target[32];
        snprintf(target, sizeof target, ".target %s", archs[i]);
        CHECK_MSG(strstr(ptx, ".entry block_sum") != NULL, "no entry in:\n%.2000s", ptx);
        CHECK_MSG(strstr(ptx, target) != NULL, "no '%s' in:\n%.2000s", target, ptx);
        CHECK(strstr(ptx, ".shared") != NULL);
        CHECK(strstr(ptx, "bar.sync") != NULL || strstr(ptx, "barrier.sync") != NULL);
        free(ptx);
    }
    /* the toolkit's headers are found when NVRTC's toolkit has them (pip wheels may not) */
    const char *fp16 = "#include <cuda_fp16.h>\n"
                       "extern \"C\" __global__ void h(__half *x) { x[threadIdx.x] = "
                       "__hadd(x[threadIdx.x], __float2half(1.0f)); }\n";
    char *ptx = NULL;
    hc_error err;
    hc_status st = hc_nvrtc_compile(fp16, "sm_80", &ptx, &err);
    if (st != HC_OK && strstr(err.msg, "could not open source file"))
        SKIP("cuda_fp16.h: no toolkit headers beside libnvrtc");
    else
        CHECK_MSG(st == HC_OK && strstr(ptx, ".entry h"), "%s", err.msg);
    free(ptx);
    /* a cubin for a real architecture is an ELF image */
    char *bin = NULL;
    size_t n = 0;
    CHECK_EQ_INT(hc_nvrtc_build(block_sum_src, "sm_90", HC_NVRTC_CUBIN, NULL, &bin, &n, &err),
                 HC_OK);
    CHECK(bin && n > 4 && memcmp(bin, "\177ELF", 4) == 0);
    free(bin);
}

static void test_nvrtc_errors(void) {
    const char *bad = "extern \"C\" __global__ void f(float *x) { x[0] = undeclared_v + ; }\n";
    char *ptx = (char *)1;
    hc_error err;
    CHECK_EQ_INT(hc_nvrtc_compile(bad, "sm_80", &ptx, &err), HC_ERR_COMPILE);
    CHECK(ptx == NULL);
    CHECK_MSG(strstr(err.msg, "NVRTC: compile for sm_80 failed") != NULL, "%s", err.msg);
    CHECK_MSG(strstr(err.msg, "error") && strstr(err.msg, "undeclared_v"), "%s", err.msg);
    /* the source file named by the caller appears in the header and in the log */
    char *bin = NULL;
    CHECK_EQ_INT(
        hc_nvrtc_build(bad, "sm_90", HC_NVRTC_CUBIN, "/some/dir/k123.cu", &bin, NULL, &err),
        HC_ERR_COMPILE);
    CHECK_MSG(strstr(err.msg, "(source: /some/dir/k123.cu)") && strstr(err.msg, "k123.cu("), "%s",
              err.msg);
    /* an architecture NVRTC does not know: the log says why */
    CHECK_EQ_INT(hc_nvrtc_compile(block_sum_src, "sm_1", &ptx, &err), HC_ERR_COMPILE);
    CHECK_MSG(strstr(err.msg, "sm_1") != NULL, "%s", err.msg);
    /* a log longer than an hc_error keeps its header and is marked as cut */
    hc_sb sb;
    hc_sb_init(&sb);
    for (int i = 0; i < 300; i++) hc_sb_printf(&sb, "int f%d() { return undeclared_%d; }\n", i, i);
    char *many = hc_sb_take(&sb);
    CHECK_EQ_INT(hc_nvrtc_compile(many, "sm_80", &ptx, &err), HC_ERR_COMPILE);
    CHECK(strncmp(err.msg, "NVRTC: compile for sm_80 failed", 31) == 0);
    size_t len = strlen(err.msg);
    CHECK_MSG(len == sizeof err.msg - 1 && strstr(err.msg, "[... log truncated]"), "%zu", len);
    free(many);
}

/* Concurrent first use and compiles from several threads. */
static void *compile_main(void *p) {
    char *ptx = NULL;
    hc_error err;
    *(hc_status *)p = hc_nvrtc_compile(block_sum_src, "sm_80", &ptx, &err);
    free(ptx);
    return NULL;
}

static void test_nvrtc_threads(void) {
    pthread_t th[3];
    hc_status st[3];
    for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, compile_main, &st[i]);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(st[i], HC_OK);
    }
}

/* Without a working driver every entry point fails cleanly. */
static void test_cuda_down(const hc_error *init_err) {
    const hc_gpu_api *g = &hc_gpu_cuda;
    hc_error err;
    CHECK_MSG(strstr(init_err->msg, "CUDA") != NULL, "%s", init_err->msg);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        CHECK_MSG(strstr(init_err->msg, "libcuda.so.1 not found"), "%s", init_err->msg);
    else
        dlclose(h);
    CHECK(g->init(&err) != HC_OK); /* idempotent: the same answer */
    CHECK_STR(err.msg, init_err->msg);
    hc_gpu_device_info info;
    CHECK(g->device(&info, &err) != HC_OK);
    CHECK_MSG(strstr(err.msg, "not initialized") != NULL, "%s", err.msg);
    void *m = (void *)1;
    bool cached = true;
    CHECK(g->build(block_sum_src, cache, "k", &m, &cached, &err) != HC_OK);
    CHECK(m == NULL && !cached);
    CHECK(g->kernel(NULL, "f", &err) == NULL);
    CHECK(g->alloc(16) == NULL);
    g->release(NULL), g->module_free(NULL);
    char buf[4];
    CHECK(g->upload((void *)1, buf, 4, &err) != HC_OK);
    CHECK(g->download(buf, (void *)1, 4, &err) != HC_OK);
    int64_t one[3] = {1, 1, 1};
    CHECK(g->launch((void *)1, one, one, 0, NULL, &err) != HC_OK);
    CHECK(g->sync(&err) != HC_OK);
    CHECK(g->time(NULL, NULL) < 0);
}

#define N 1000
static const char *add_one_src = "extern \"C\" __global__ void add_one(float *x) {\n"
                                 "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                 "    if (i < 1000) x[i] += 1.0f;\n"
                                 "}\n";

typedef struct launch_ctx {
    void *fn, *buf;
} launch_ctx;

static void launch_add_one(void *p) {
    launch_ctx *c = p;
    int64_t grid[3] = {(N + 255) / 256, 1, 1}, block[3] = {256, 1, 1};
    hc_error err;
    CHECK_MSG(hc_gpu_cuda.launch(c->fn, grid, block, 1, &c->buf, &err) == HC_OK, "%s", err.msg);
}

/* A device: build (fresh, then cached), alloc, upload, launch, download, time. */
static void test_cuda_end_to_end(void) {
    const hc_gpu_api *g = &hc_gpu_cuda;
    hc_error err;
    hc_gpu_device_info info;
    CHECK_EQ_INT(g->device(&info, &err), HC_OK);
    printf("CUDA device: %s, sm_%d%d, %d SMs, %lld B shared/block, %d regs/thread\n", info.name,
           info.cc_major, info.cc_minor, info.num_sms, (long long)info.smem_per_block,
           info.regs_per_thread);
    CHECK(info.num_sms > 0 && info.warp_size == 32 && info.max_threads_per_block >= 256);
    CHECK(info.smem_per_block >= 16384 && info.regs_per_thread > 0 && info.cc_major >= 3);

    char key[64];
    snprintf(key, sizeof key, "add_one_%ld", (long)getpid());
    if (!hc_nvrtc_available()) {
        SKIP("CUDA end-to-end: no libnvrtc to build the kernel");
        return;
    }
    void *m = NULL, *m2 = NULL;
    bool cached = true;
    CHECK_MSG(g->build(add_one_src, cache, key, &m, &cached, &err) == HC_OK, "%s", err.msg);
    CHECK(m && !cached);
    CHECK_MSG(g->build(add_one_src, cache, key, &m2, &cached, &err) == HC_OK, "%s", err.msg);
    CHECK(m2 && cached);
    launch_ctx c = {.fn = m2 ? g->kernel(m2, "add_one", &err) : NULL};
    CHECK_MSG(c.fn != NULL, "%s", err.msg);
    CHECK(m2 == NULL || g->kernel(m2, "no_such_kernel", &err) == NULL);
    c.buf = g->alloc(N * sizeof(float));
    CHECK(c.buf != NULL);
    if (c.fn && c.buf) {
        float x[N], y[N];
        for (int i = 0; i < N; i++) x[i] = (float)i;
        CHECK_EQ_INT(g->upload(c.buf, x, sizeof x, &err), HC_OK);
        launch_add_one(&c);
        double ms = g->time(launch_add_one, &c); /* the second add */
        CHECK_MSG(ms >= 0, "time: %g", ms);
        CHECK_EQ_INT(g->sync(&err), HC_OK);
        CHECK_EQ_INT(g->download(y, c.buf, sizeof y, &err), HC_OK);
        int bad = 0;
        for (int i = 0; i < N; i++) bad += y[i] != x[i] + 2;
        CHECK_EQ_INT(bad, 0);
    }
    g->release(c.buf);
    g->module_free(m), g->module_free(m2);

    /* a compile error names the kept source */
    const char *bad = "extern \"C\" __global__ void f(float *x) { x[0] = oops + ; }\n";
    CHECK_EQ_INT(g->build(bad, cache, "bad_kernel", &m, &cached, &err), HC_ERR_COMPILE);
    const char *path = strstr(err.msg, "(source: ");
    CHECK_MSG(path && strstr(err.msg, "oops"), "%s", err.msg);
    if (path) {
        char p[512];
        snprintf(p, sizeof p, "%.*s", (int)strcspn(path + 9, ")"), path + 9);
        CHECK_MSG(access(p, R_OK) == 0 && strstr(p, "/gpu/bad_kernel.cu"), "kept source %s", p);
    }
}

static void test_cuda(void) {
    hc_error err;
    if (hc_gpu_cuda.init(&err) != HC_OK) {
        printf("CUDA unavailable here (%s)\n", err.msg);
        test_cuda_down(&err);
        SKIP("CUDA end-to-end: no CUDA device");
        return;
    }
    test_cuda_end_to_end();
}

/* Remove this run's cache (files and one level of subdirectories). */
static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

int main(void) {
    const char *base = getenv("HIDETC_CACHE_DIR");
    snprintf(cache, sizeof cache, "%s/gpu-cuda-test-%ld", base && *base ? base : "/tmp",
             (long)getpid());
    if (hc_nvrtc_available()) {
        test_nvrtc_ptx();
        test_nvrtc_errors();
        test_nvrtc_threads();
    } else {
        char *ptx = (char *)1;
        hc_error err;
        CHECK_EQ_INT(hc_nvrtc_compile(block_sum_src, "sm_80", &ptx, &err), HC_ERR_UNSUPPORTED);
        CHECK(ptx == NULL);
        CHECK_MSG(strstr(err.msg, "NVRTC: libnvrtc not found") != NULL, "%s", err.msg);
        SKIP("NVRTC checks (PTX, cubin, compile errors, threads): %s", err.msg);
    }
    test_cuda();
    remove_tree(cache);
    if (skipped) printf("%d group(s) of checks skipped (see 'skipped:' above)\n", skipped);
    TEST_DONE();
}
