/* test_gpu_mock.c — the CUDA path of the runtime without a GPU: the test runs against a
 * stand-in libcuda.so.1 (tests/mock/mock_cuda.c, first on LD_LIBRARY_PATH) that runs no
 * kernel but logs every launch. Checked: a model compiled for --target cuda is built by
 * NVRTC and loaded, its first run is recorded as a CUDA graph and every run after replays
 * it (the same launches with the same arguments, one graph launch a run); --no-cuda-graph
 * launches every kernel on every run; a driver without graphs falls back to launching;
 * the profile path launches directly. Results are not checked (the mock computes
 * nothing): test_gpu does that on OpenCL. Exits 77 without NVRTC or without the mock. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "runtime/runtime.h"
#include "target/gpu/gpu.h"
#include "test.h"
#include "graph_build.h"

static int (*log_count)(void);
static const char *(*log_kernel)(int);
static unsigned long long (*log_arg)(int, int);
static int (*log_nargs)(int);
static int (*graph_launches)(void);
static void (*log_reset)(void);

static hc_graph *small_model(void) {
    hc_graph *g = hc_graph_new("mock", 17);
    hc_rng r = {7};
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){5, 33});
    hc_tensor *w = rand_const(g, &r, 2, (int64_t[]){33, 17});
    hc_tensor *b = rand_const(g, &r, 1, (int64_t[]){17});
    hc_tensor *y = OP(g, RELU, OP(g, ADD, OP(g, MATMUL, x, w), b));
    hc_graph_add_output(g, OPA(g, SOFTMAX, (hc_attr[]){int_attr("axis", -1)}, 1, y));
    return g;
}

/* The launches of log entries [a, a + n) equal those of [b, b + n). */
static bool same_launches(int a, int b, int n) {
    for (int i = 0; i < n; i++) {
        if (strcmp(log_kernel(a + i), log_kernel(b + i)) || log_nargs(a + i) != log_nargs(b + i))
            return false;
        for (int k = 0; k < log_nargs(a + i); k++)
            if (log_arg(a + i, k) != log_arg(b + i, k)) return false;
    }
    return true;
}

static void run_n(hc_model *m, int n) {
    float x[5 * 33], y[5 * 17];
    for (int i = 0; i < 5 * 33; i++) x[i] = (float)i / 100;
    void *in[1] = {x}, *out[1] = {y};
    for (int i = 0; i < n; i++) {
        hc_error err = {0};
        CHECK_MSG(hc_model_run(m, in, out, &err) == HC_OK, "run %d: %s", i, err.msg);
    }
}

static hc_model *compile(const hc_target *t, bool no_graph) {
    hc_model *m = NULL;
    hc_error err = {0};
    hc_compile_options o = {.target = t, .no_graph = no_graph};
    CHECK_MSG(hc_model_compile(small_model(), &o, &m, &err) == HC_OK, "compile: %s", err.msg);
    return m;
}

static void test_graphs(const hc_target *t) {
    hc_model *m = compile(t, false);
    if (!m) return;
    log_reset();
    run_n(m, 1); /* recorded, then replayed once */
    int per_run = log_count();
    CHECK_MSG(per_run >= hc_model_num_kernels(m), "%d launches for %d kernels", per_run,
              hc_model_num_kernels(m));
    CHECK_EQ_INT(graph_launches(), 1);
    run_n(m, 3);
    CHECK_EQ_INT(graph_launches(), 4);
    CHECK_EQ_INT(log_count(), 4 * per_run);
    CHECK(same_launches(0, 3 * per_run, per_run));
    /* the profile path times each kernel: launched, not replayed */
    double ms[64];
    float x[5 * 33] = {0}, y[5 * 17];
    void *in[1] = {x}, *out[1] = {y};
    hc_error err = {0};
    CHECK(hc_model_num_kernels(m) <= 64);
    CHECK(hc_model_run_profile(m, in, out, ms, &err) == HC_OK);
    CHECK_EQ_INT(graph_launches(), 4);
    CHECK_EQ_INT(log_count(), 5 * per_run);
    CHECK(same_launches(0, 4 * per_run, per_run));
    hc_model_free(m);

    m = compile(t, true); /* --no-cuda-graph */
    if (!m) return;
    log_reset();
    run_n(m, 3);
    CHECK_EQ_INT(graph_launches(), 0);
    CHECK_EQ_INT(log_count(), 3 * per_run);
    hc_model_free(m);

    setenv("MOCK_NO_GRAPHS", "1", 1); /* capture refused: launched every time */
    m = compile(t, false);
    if (!m) return;
    log_reset();
    run_n(m, 2);
    CHECK_EQ_INT(graph_launches(), 0);
    CHECK_EQ_INT(log_count(), 2 * per_run);
    CHECK(same_launches(0, per_run, per_run));
    hc_model_free(m);
    unsetenv("MOCK_NO_GRAPHS");
}

int main(void) {
    if (!hc_nvrtc_available()) {
        printf("SKIP: NVRTC not found: the CUDA path cannot build kernels\n");
        return 77;
    }
    void *mock = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!mock) mock = dlopen("libcuda.so.1", RTLD_NOW);
    *(void **)&log_count = mock ? dlsym(mock, "mock_log_count") : NULL;
    if (!log_count) {
        printf("SKIP: the mock libcuda.so.1 is not first on LD_LIBRARY_PATH\n");
        return 77;
    }
    *(void **)&log_kernel = dlsym(mock, "mock_log_kernel");
    *(void **)&log_arg = dlsym(mock, "mock_log_arg");
    *(void **)&log_nargs = dlsym(mock, "mock_log_nargs");
    *(void **)&graph_launches = dlsym(mock, "mock_graph_launches");
    *(void **)&log_reset = dlsym(mock, "mock_log_reset");
    const hc_target *t = NULL;
    bool runnable = false;
    hc_error why = {0};
    CHECK(hc_target_find("cuda", &t, &runnable, &why) == HC_OK);
    CHECK_MSG(runnable, "the mock device is not runnable: %s", why.msg);
    if (runnable) test_graphs(t);
    TEST_DONE();
}
