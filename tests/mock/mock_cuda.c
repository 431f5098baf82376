/* mock_cuda.c — a stand-in for libcuda.so.1 that runs no kernel: it checks the CUDA device
 * layer's (src/target/gpu/cuda_api.c) and the runtime's use of the driver API where no
 * NVIDIA GPU is attached. Memory is host memory; a launch, instead of running, appends
 * (kernel, grid, block, arguments) to a log; under stream capture launches go into the
 * graph being captured, and a graph launch appends its launches to the log again. The test
 * reads the log through mock_log_* (test_gpu_mock.c). Only what cuda_api.c calls exists;
 * MOCK_NO_GRAPHS=1 leaves out the graph entry points (an old driver). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long CUdeviceptr;
enum { OK = 0, ERR_INVALID = 1, ERR_NOT_SUPPORTED = 801, ERR_NOT_FOUND = 500 };

typedef struct launch {
    char kernel[128];
    unsigned grid[3], block[3];
    int nargs;
    CUdeviceptr args[16];
} launch;

#define MAX_LOG 100000
static launch log_[MAX_LOG];
static int nlog, capturing;
typedef struct graph {
    int n;
    launch l[4096];
} graph;
static graph *cap;
static int syncs, graph_launches;

/* the test's view */
int mock_log_count(void) { return nlog; }
const char *mock_log_kernel(int i) { return i >= 0 && i < nlog ? log_[i].kernel : NULL; }
unsigned long long mock_log_arg(int i, int a) { return log_[i].args[a]; }
int mock_log_nargs(int i) { return log_[i].nargs; }
int mock_graph_launches(void) { return graph_launches; }
int mock_syncs(void) { return syncs; }
void mock_log_reset(void) { nlog = 0, graph_launches = 0, syncs = 0; }

static int dummy;
int cuInit(unsigned f) { (void)f; return OK; }
int cuDriverGetVersion(int *v) { *v = 13000; return OK; }
int cuDeviceGetCount(int *n) { *n = 1; return OK; }
int cuDeviceGet(int *d, int i) { *d = i; return OK; }
int cuDeviceGetName(char *s, int n, int d) { (void)d; snprintf(s, (size_t)n, "Mock GPU (sm_90)"); return OK; }
int cuDeviceGetAttribute(int *v, int a, int d) {
    (void)d;
    switch (a) {
    case 1: *v = 1024; return OK;   /* max threads per block */
    case 8: *v = 49152; return OK;  /* shared memory per block */
    case 10: *v = 32; return OK;    /* warp size */
    case 12: *v = 65536; return OK; /* registers per block */
    case 16: *v = 132; return OK;   /* SMs */
    case 75: *v = 9; return OK;     /* compute capability */
    case 76: *v = 0; return OK;
    default: return ERR_INVALID;
    }
}
int cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = &dummy; return OK; }
int cuCtxSetCurrent(void *c) { (void)c; return OK; }
int cuStreamCreate(void **s, unsigned f) { (void)f; *s = &dummy; return OK; }
int cuStreamSynchronize(void *s) { (void)s; syncs++; return OK; }
int cuModuleLoadData(void **m, const void *img) {
    if (memcmp(img, "\177ELF", 4) != 0) return ERR_INVALID; /* NVRTC's cubins are ELF */
    *m = malloc(1);
    return OK;
}
int cuModuleUnload(void *m) { free(m); return OK; }
/* a function is its name, interned in a table that lives as long as the process */
static char names[4096][128];
static int nnames;
int cuModuleGetFunction(void **f, void *m, const char *name) {
    (void)m;
    for (int i = 0; i < nnames; i++)
        if (!strcmp(names[i], name)) return *f = names[i], OK;
    if (nnames == 4096 || strlen(name) >= 128) return ERR_NOT_FOUND;
    snprintf(names[nnames], 128, "%s", name);
    *f = names[nnames++];
    return OK;
}
int cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    void *q = calloc(1, n ? n : 1);
    *p = (CUdeviceptr)(size_t)q;
    return q ? OK : 2;
}
int cuMemFree_v2(CUdeviceptr p) { free((void *)(size_t)p); return OK; }
int cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, void *s) {
    (void)s;
    if (capturing) return ERR_INVALID; /* the runtime copies outside its graphs */
    memcpy((void *)(size_t)d, h, n);
    return OK;
}
int cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, void *s) {
    (void)s;
    if (capturing) return ERR_INVALID;
    memcpy(h, (void *)(size_t)d, n);
    return OK;
}
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned sh, void *s, void **params, void **extra) {
    (void)s, (void)sh;
    if (!f || extra || !params || bx * by * bz > 1024 || !gx) return ERR_INVALID;
    launch l = {.grid = {gx, gy, gz}, .block = {bx, by, bz}};
    snprintf(l.kernel, sizeof l.kernel, "%s", (const char *)f);
    /* the arguments are device pointers; the count is not passed: read up to a NULL-free
     * prefix the layer promises (it passes exactly the kernel's buffers) */
    for (int i = 0; i < 16 && params[i]; i++) l.args[l.nargs++] = *(CUdeviceptr *)params[i];
    if (capturing) {
        if (cap->n >= 4096) return ERR_INVALID;
        cap->l[cap->n++] = l;
        return OK;
    }
    if (nlog >= MAX_LOG) return ERR_INVALID;
    log_[nlog++] = l;
    return OK;
}
int cuEventCreate(void **e, unsigned f) { (void)f; *e = malloc(1); return OK; }
int cuEventRecord(void *e, void *s) { (void)e, (void)s; return OK; }
int cuEventSynchronize(void *e) { (void)e; return OK; }
int cuEventElapsedTime_v2(float *ms, void *a, void *b) { (void)a, (void)b; *ms = 0.25f; return OK; }
int cuEventDestroy_v2(void *e) { free(e); return OK; }
int cuGetErrorName(int r, const char **s) { *s = r == ERR_INVALID ? "CUDA_ERROR_INVALID_VALUE" : "CUDA_ERROR_MOCK"; return OK; }
int cuGetErrorString(int r, const char **s) { (void)r; *s = "mock driver error"; return OK; }
/* NVRTC asks the driver for this; the mock has none */
int cuGetExportTable(const void **t, const void *id) { (void)id; *t = NULL; return ERR_NOT_SUPPORTED; }

/* ---- graphs ------------------------------------------------------------------------- */
int cuStreamBeginCapture_v2(void *s, int mode) {
    (void)s, (void)mode;
    if (getenv("MOCK_NO_GRAPHS") || capturing) return ERR_NOT_SUPPORTED;
    cap = calloc(1, sizeof *cap);
    capturing = 1;
    return OK;
}
int cuStreamEndCapture(void *s, void **g) {
    (void)s;
    if (!capturing) return ERR_INVALID;
    capturing = 0;
    *g = cap;
    cap = NULL;
    return OK;
}
int cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long f) {
    (void)f;
    graph *c = malloc(sizeof *c);
    memcpy(c, g, sizeof *c);
    *e = c;
    return OK;
}
int cuGraphLaunch(void *e, void *s) {
    (void)s;
    const graph *g = e;
    graph_launches++;
    for (int i = 0; i < g->n && nlog < MAX_LOG; i++) log_[nlog++] = g->l[i];
    return OK;
}
int cuGraphExecDestroy(void *e) { free(e); return OK; }
int cuGraphDestroy(void *g) { free(g); return OK; }
