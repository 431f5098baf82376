/* cuda_api.c — the CUDA device layer (hc_gpu_cuda) on the CUDA driver API.
 *
 * libcuda.so.1 is dlopen'ed by init, never linked, so the library builds and starts on
 * machines without an NVIDIA driver: there init fails fast with a message naming what is
 * missing, and every other entry point fails cleanly ("not initialized") instead of
 * crashing. The driver API types, constants and entry points are declared below (names as
 * in cuda.h) so that no CUDA header is needed to build.
 *
 * One device (the first), its primary context (shared with any CUDA runtime user in the
 * process) and one stream. The context is made current on each calling thread on first
 * use, as the driver API's current context is per thread.
 *
 * Kernels are compiled by NVRTC (nvrtc.c) to a cubin for the device's own architecture and
 * cached at <cache_dir>/gpu/<key>.sm_XY.cubin beside the source <key>.cu; files are written
 * under a name unique to the process and call, then renamed, so concurrent builders race
 * harmlessly and a reader never sees half a file. */
#include "target/gpu/nvrtc.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* cuda.h: CUresult (CUDA_SUCCESS = 0), CUdevice, CUdeviceptr and the opaque handles. */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
enum { CUDA_SUCCESS = 0 };
/* CUstreamCaptureMode: only this thread's calls are checked against the capture */
enum { CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1 };
/* CUdevice_attribute values used by device(). */
enum {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};
enum { CU_STREAM_NON_BLOCKING = 1, CU_EVENT_DEFAULT = 0 };

static struct {
    /* entry points (the _v2 ABI where the driver has one, as cuda.h maps them) */
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned shared_bytes, CUstream, void **params, void **extra);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*GetErrorString)(CUresult, const char **);
    /* CUDA graphs (optional: NULL on a driver without them) */
    CUresult (*StreamBeginCapture)(CUstream, int mode);
    CUresult (*StreamEndCapture)(CUstream, CUgraph *);
    CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long flags);
    CUresult (*GraphLaunch)(CUgraphExec, CUstream);
    CUresult (*GraphExecDestroy)(CUgraphExec);
    CUresult (*GraphDestroy)(CUgraph);

    hc_status status; /* of init, kept for every later call */
    char why[1024];
    bool ready;
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    hc_gpu_device_info info;
    char arch[16]; /* "sm_90" */
} cu;

static pthread_once_t cu_once = PTHREAD_ONCE_INIT;
static _Thread_local bool ctx_bound; /* this thread has cu.ctx current */
static atomic_uint tmp_counter;

/* "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected" */
static const char *cu_str(CUresult r, char *buf, size_t n) {
    const char *name = NULL, *desc = NULL;
    if (cu.GetErrorName) cu.GetErrorName(r, &name);
    if (cu.GetErrorString) cu.GetErrorString(r, &desc);
    if (name && desc)
        snprintf(buf, n, "%s: %s", name, desc);
    else
        snprintf(buf, n, "CUresult %d", r);
    return buf;
}

static hc_status cu_fail(hc_error *err, const char *call, CUresult r) {
    char s[256];
    return hc_error_set(err, HC_ERR_DEVICE, "CUDA: %s: %s", call, cu_str(r, s, sizeof s));
}

static void init_fail(const char *fmt, const char *call, CUresult r) {
    char s[256];
    snprintf(cu.why, sizeof cu.why, fmt, call, cu_str(r, s, sizeof s));
    cu.status = HC_ERR_UNSUPPORTED;
}

static int attr(int which) {
    int v = 0;
    return cu.DeviceGetAttribute(&v, which, cu.dev) == CUDA_SUCCESS ? v : 0;
}

static void cu_load(void) {
    cu.status = HC_ERR_UNSUPPORTED;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(cu.why, sizeof cu.why,
                 "CUDA: libcuda.so.1 not found (no NVIDIA driver on this machine): dlopen: %s",
                 dlerror());
        return;
    }
    struct {
        void **fn;
        const char *name, *fallback; /* fallback: the pre-_v2 name, for older drivers */
    } syms[] = {
        {(void **)&cu.Init, "cuInit", NULL},
        {(void **)&cu.DriverGetVersion, "cuDriverGetVersion", NULL},
        {(void **)&cu.DeviceGetCount, "cuDeviceGetCount", NULL},
        {(void **)&cu.DeviceGet, "cuDeviceGet", NULL},
        {(void **)&cu.DeviceGetName, "cuDeviceGetName", NULL},
        {(void **)&cu.DeviceGetAttribute, "cuDeviceGetAttribute", NULL},
        {(void **)&cu.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL},
        {(void **)&cu.CtxSetCurrent, "cuCtxSetCurrent", NULL},
        {(void **)&cu.StreamCreate, "cuStreamCreate", NULL},
        {(void **)&cu.StreamSynchronize, "cuStreamSynchronize", NULL},
        {(void **)&cu.ModuleLoadData, "cuModuleLoadData", NULL},
        {(void **)&cu.ModuleUnload, "cuModuleUnload", NULL},
        {(void **)&cu.ModuleGetFunction, "cuModuleGetFunction", NULL},
        {(void **)&cu.MemAlloc, "cuMemAlloc_v2", NULL},
        {(void **)&cu.MemFree, "cuMemFree_v2", NULL},
        {(void **)&cu.MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", NULL},
        {(void **)&cu.MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", NULL},
        {(void **)&cu.LaunchKernel, "cuLaunchKernel", NULL},
        {(void **)&cu.EventCreate, "cuEventCreate", NULL},
        {(void **)&cu.EventRecord, "cuEventRecord", NULL},
        {(void **)&cu.EventSynchronize, "cuEventSynchronize", NULL},
        {(void **)&cu.EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"},
        {(void **)&cu.EventDestroy, "cuEventDestroy_v2", NULL},
        {(void **)&cu.GetErrorName, "cuGetErrorName", NULL},
        {(void **)&cu.GetErrorString, "cuGetErrorString", NULL},
    };
    struct {
        void **fn;
        const char *name;
    } graph_syms[] = {
        {(void **)&cu.StreamBeginCapture, "cuStreamBeginCapture_v2"},
        {(void **)&cu.StreamEndCapture, "cuStreamEndCapture"},
        {(void **)&cu.GraphInstantiate, "cuGraphInstantiateWithFlags"},
        {(void **)&cu.GraphLaunch, "cuGraphLaunch"},
        {(void **)&cu.GraphExecDestroy, "cuGraphExecDestroy"},
        {(void **)&cu.GraphDestroy, "cuGraphDestroy"},
    };
    bool graphs = true;
    for (size_t i = 0; i < HC_ARRAY_LEN(graph_syms); i++)
        graphs = (*graph_syms[i].fn = dlsym(lib, graph_syms[i].name)) && graphs;
    if (!graphs) cu.StreamBeginCapture = NULL; /* all or none */
    for (size_t i = 0; i < HC_ARRAY_LEN(syms); i++) {
        *syms[i].fn = dlsym(lib, syms[i].name);
        if (!*syms[i].fn && syms[i].fallback) *syms[i].fn = dlsym(lib, syms[i].fallback);
        if (!*syms[i].fn) {
            snprintf(cu.why, sizeof cu.why,
                     "CUDA: libcuda.so.1 has no %s (driver too old for this library)",
                     syms[i].name);
            return;
        }
    }
    CUresult r;
    int count = 0;
    if ((r = cu.Init(0)) != CUDA_SUCCESS)
        return init_fail("CUDA: no usable CUDA device (%s: %s)", "cuInit", r);
    if ((r = cu.DeviceGetCount(&count)) != CUDA_SUCCESS || count == 0)
        return init_fail("CUDA: no CUDA device (%s: %s)", "cuDeviceGetCount",
                         r ? r : 100 /* CUDA_ERROR_NO_DEVICE */);
    if ((r = cu.DeviceGet(&cu.dev, 0)) != CUDA_SUCCESS)
        return init_fail("CUDA: %s: %s", "cuDeviceGet", r);
    if ((r = cu.DevicePrimaryCtxRetain(&cu.ctx, cu.dev)) != CUDA_SUCCESS)
        return init_fail("CUDA: cannot create a context (%s: %s)", "cuDevicePrimaryCtxRetain", r);
    if ((r = cu.CtxSetCurrent(cu.ctx)) != CUDA_SUCCESS)
        return init_fail("CUDA: %s: %s", "cuCtxSetCurrent", r);
    ctx_bound = true;
    /* non-blocking: our work does not serialize with the legacy default stream of others */
    if ((r = cu.StreamCreate(&cu.stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
        return init_fail("CUDA: %s: %s", "cuStreamCreate", r);

    hc_gpu_device_info *d = &cu.info;
    if (cu.DeviceGetName(d->name, (int)sizeof d->name, cu.dev) != CUDA_SUCCESS)
        snprintf(d->name, sizeof d->name, "CUDA device 0");
    d->num_sms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    /* The static __shared__ limit (48 KiB), not the opt-in maximum: kernels declare their
     * shared memory statically and are launched without raising the limit. */
    d->smem_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    d->warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    d->max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    /* What a full-size block may use per thread; 255 is the ISA's cap per thread. */
    int regs = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    /* the per-thread maximum of every architecture since sm_35; what a block may use in
     * all is the register file of a block (regs), which the templates' spaces check */
    d->regs_per_thread = 255;
    d->regs_per_block = regs;
    d->cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    d->cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    snprintf(cu.arch, sizeof cu.arch, "sm_%d%d", d->cc_major, d->cc_minor);
    cu.status = HC_OK;
    cu.ready = true;
}

static hc_status cu_init(hc_error *err) {
    pthread_once(&cu_once, cu_load);
    return cu.ready ? HC_OK : hc_error_set(err, cu.status, "%s", cu.why);
}

/* Every entry point but init: the layer is up and the context current on this thread. */
static hc_status ready(hc_error *err) {
    if (!cu.ready)
        return hc_error_set(err, HC_ERR_INVALID, "CUDA: not initialized (hc_gpu_cuda.init)");
    if (!ctx_bound) {
        CUresult r = cu.CtxSetCurrent(cu.ctx);
        if (r != CUDA_SUCCESS) return cu_fail(err, "cuCtxSetCurrent", r);
        ctx_bound = true;
    }
    return HC_OK;
}

static hc_status cu_device(hc_gpu_device_info *out, hc_error *err) {
    hc_status st = ready(err);
    if (st != HC_OK) return st;
    *out = cu.info;
    return HC_OK;
}

static char *path_of(const char *dir, const char *key, const char *suffix) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sb_printf(&sb, "%s/%s%s", dir, key, suffix);
    return hc_sb_take(&sb);
}

/* Writes path through a name unique to this process and call, then renames it. */
static hc_status write_atomic(const char *path, const void *data, size_t n, hc_error *err) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sb_printf(&sb, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&tmp_counter, 1));
    char *tmp = hc_sb_take(&sb);
    hc_status st = hc_write_file(tmp, data, n, err);
    if (st == HC_OK && rename(tmp, path) != 0)
        st = hc_error_set(err, HC_ERR_IO, "rename %s: %s", tmp, strerror(errno));
    if (st != HC_OK) unlink(tmp);
    free(tmp);
    return st;
}

/* `what` names the image in the error: its cache file, or the source it was built from. */
static hc_status load(const void *image, CUmodule *m, const char *what, hc_error *err) {
    CUresult r = cu.ModuleLoadData(m, image);
    if (r == CUDA_SUCCESS) return HC_OK;
    *m = NULL;
    char s[256];
    int v = 0;
    cu.DriverGetVersion(&v);
    return hc_error_set(err, HC_ERR_COMPILE,
                        "CUDA: cuModuleLoadData (the %s cubin of %s): %s (driver: CUDA %d.%d)",
                        cu.arch, what, cu_str(r, s, sizeof s), v / 1000, v % 1000 / 10);
}

static hc_status cu_build(const char *src, const char *cache_dir, const char *key, void **module,
                          bool *cached, hc_error *err) {
    *module = NULL;
    if (cached) *cached = false;
    hc_status st = ready(err);
    if (st != HC_OK) return st;
    char *dir = path_of(cache_dir, "gpu", "");
    char suffix[32];
    snprintf(suffix, sizeof suffix, ".%s.cubin", cu.arch);
    char *bin_path = path_of(dir, key, suffix), *src_path = path_of(dir, key, ".cu");
    CUmodule m = NULL;
    char *bin = NULL;
    size_t n = 0;
    st = hc_mkdirs(dir, err);
    /* A cached cubin the driver rejects (damaged, or from another driver) is rebuilt. */
    if (st == HC_OK && hc_read_file(bin_path, &bin, &n, NULL) == HC_OK &&
        load(bin, &m, bin_path, NULL) == HC_OK) {
        if (cached) *cached = true;
    } else if (st == HC_OK) {
        free(bin);
        bin = NULL;
        /* The source is kept beside its cubin, so a compile error names a file to read. */
        st = write_atomic(src_path, src, strlen(src), err);
        if (st == HC_OK) st = hc_nvrtc_build(src, cu.arch, HC_NVRTC_CUBIN, src_path, &bin, &n, err);
        if (st == HC_OK) st = load(bin, &m, src_path, err);
        if (st == HC_OK) st = write_atomic(bin_path, bin, n, err);
        if (st != HC_OK && m) cu.ModuleUnload(m), m = NULL;
    }
    free(bin), free(dir), free(bin_path), free(src_path);
    *module = m;
    return st;
}

static void *cu_kernel(void *module, const char *name, hc_error *err) {
    if (ready(err) != HC_OK) return NULL;
    CUfunction f = NULL;
    CUresult r = cu.ModuleGetFunction(&f, (CUmodule)module, name);
    if (r != CUDA_SUCCESS) {
        char s[256];
        hc_error_set(err, HC_ERR_INVALID, "CUDA: no kernel %s in the module (%s)", name,
                     cu_str(r, s, sizeof s));
        return NULL;
    }
    return f;
}

static void cu_module_free(void *module) {
    if (module && ready(NULL) == HC_OK) cu.ModuleUnload((CUmodule)module);
}

/* A zero-byte request gets a real (1-byte) allocation: NULL means out of memory. */
static void *cu_alloc(size_t bytes) {
    CUdeviceptr p = 0;
    if (ready(NULL) != HC_OK || cu.MemAlloc(&p, bytes ? bytes : 1) != CUDA_SUCCESS) return NULL;
    return (void *)(uintptr_t)p;
}

static void cu_release(void *dev) {
    if (dev && ready(NULL) == HC_OK) cu.MemFree((CUdeviceptr)(uintptr_t)dev);
}

/* Copies are queued on our stream, so they are ordered with the kernels on it, and
 * waited for: when a copy returns, the host buffer may be reused and the data read. An
 * error of an earlier kernel surfaces here too (the driver reports it at the next sync). */
static hc_status cu_copy(bool up, void *host, CUdeviceptr dev, size_t bytes, hc_error *err) {
    hc_status st = ready(err);
    if (st != HC_OK) return st;
    if (!bytes) return HC_OK;
    CUresult r = up ? cu.MemcpyHtoDAsync(dev, host, bytes, cu.stream)
                    : cu.MemcpyDtoHAsync(host, dev, bytes, cu.stream);
    if (r != CUDA_SUCCESS) return cu_fail(err, up ? "cuMemcpyHtoDAsync" : "cuMemcpyDtoHAsync", r);
    r = cu.StreamSynchronize(cu.stream);
    return r == CUDA_SUCCESS ? HC_OK : cu_fail(err, "cuStreamSynchronize (after a copy)", r);
}

static hc_status cu_upload(void *dev, const void *host, size_t bytes, hc_error *err) {
    return cu_copy(true, (void *)host, (CUdeviceptr)(uintptr_t)dev, bytes, err);
}

static hc_status cu_download(void *host, const void *dev, size_t bytes, hc_error *err) {
    return cu_copy(false, host, (CUdeviceptr)(uintptr_t)dev, bytes, err);
}

#define HC_CUDA_MAX_ARGS 512 /* 4 KiB of pointer parameters: the classic launch limit */

static hc_status cu_launch(void *kernel, const int64_t grid[3], const int64_t block[3], int nargs,
                           void *const *args, hc_error *err) {
    hc_status st = ready(err);
    if (st != HC_OK) return st;
    if (nargs < 0 || nargs > HC_CUDA_MAX_ARGS)
        return hc_error_set(err, HC_ERR_INVALID, "CUDA: %d kernel arguments (at most %d)", nargs,
                            HC_CUDA_MAX_ARGS);
    for (int i = 0; i < 3; i++)
        if (grid[i] < 1 || grid[i] > UINT32_MAX || block[i] < 1 || block[i] > UINT32_MAX)
            return hc_error_set(err, HC_ERR_INVALID,
                                "CUDA: bad launch grid %lldx%lldx%lld block "
                                "%lldx%lldx%lld",
                                (long long)grid[0], (long long)grid[1], (long long)grid[2],
                                (long long)block[0], (long long)block[1], (long long)block[2]);
    /* The driver reads each parameter's value through a pointer: the device addresses are
     * the parameters, so parameter i points at args[i]. */
    void *params[HC_CUDA_MAX_ARGS + 1];
    for (int i = 0; i < nargs; i++) params[i] = (void *)&args[i];
    params[nargs] = NULL; /* the driver reads the kernel's count; a NULL ends the list for tools */
    CUresult r = cu.LaunchKernel((CUfunction)kernel, (unsigned)grid[0], (unsigned)grid[1],
                                 (unsigned)grid[2], (unsigned)block[0], (unsigned)block[1],
                                 (unsigned)block[2], 0, cu.stream, params, NULL);
    if (r == CUDA_SUCCESS) return HC_OK;
    char s[256];
    return hc_error_set(
        err, HC_ERR_DEVICE, "CUDA: cuLaunchKernel (grid %lldx%lldx%lld, block %lldx%lldx%lld): %s",
        (long long)grid[0], (long long)grid[1], (long long)grid[2], (long long)block[0],
        (long long)block[1], (long long)block[2], cu_str(r, s, sizeof s));
}

static hc_status cu_sync(hc_error *err) {
    hc_status st = ready(err);
    if (st != HC_OK) return st;
    CUresult r = cu.StreamSynchronize(cu.stream);
    return r == CUDA_SUCCESS ? HC_OK
                             : cu_fail(err, "cuStreamSynchronize (the stream's kernels)", r);
}

static double cu_time(void (*fn)(void *ctx), void *ctx) {
    if (ready(NULL) != HC_OK) return -1;
    CUevent a = NULL, b = NULL;
    float ms = -1;
    if (cu.EventCreate(&a, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
        cu.EventCreate(&b, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
        cu.EventRecord(a, cu.stream) == CUDA_SUCCESS) {
        fn(ctx);
        if (cu.EventRecord(b, cu.stream) != CUDA_SUCCESS ||
            cu.EventSynchronize(b) != CUDA_SUCCESS ||
            cu.EventElapsedTime(&ms, a, b) != CUDA_SUCCESS)
            ms = -1;
    }
    if (a) cu.EventDestroy(a);
    if (b) cu.EventDestroy(b);
    return ms;
}

/* ---- CUDA graphs: a run's launches captured once, replayed after ----------------------- */
static hc_status cu_capture_begin(hc_error *err) {
    hc_status st = ready(err);
    if (st != HC_OK) return st;
    if (!cu.StreamBeginCapture)
        return hc_error_set(err, HC_ERR_UNSUPPORTED, "CUDA: the driver has no graphs");
    CUresult r = cu.StreamBeginCapture(cu.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    return r == CUDA_SUCCESS ? HC_OK : cu_fail(err, "cuStreamBeginCapture", r);
}

/* Ends the capture whatever happened in it (the stream must leave capture mode). */
static hc_status cu_capture_end(void **graph, hc_error *err) {
    *graph = NULL;
    CUgraph g = NULL;
    CUgraphExec e = NULL;
    CUresult r = cu.StreamEndCapture(cu.stream, &g);
    if (r != CUDA_SUCCESS) return cu_fail(err, "cuStreamEndCapture", r);
    r = cu.GraphInstantiate(&e, g, 0);
    cu.GraphDestroy(g);
    if (r != CUDA_SUCCESS) return cu_fail(err, "cuGraphInstantiate", r);
    *graph = e;
    return HC_OK;
}

static hc_status cu_graph_launch(void *graph, hc_error *err) {
    hc_status st = ready(err);
    if (st != HC_OK) return st;
    CUresult r = cu.GraphLaunch((CUgraphExec)graph, cu.stream);
    return r == CUDA_SUCCESS ? HC_OK : cu_fail(err, "cuGraphLaunch", r);
}

static void cu_graph_free(void *graph) {
    if (graph && cu.GraphExecDestroy) cu.GraphExecDestroy((CUgraphExec)graph);
}

const hc_gpu_api hc_gpu_cuda = {
    .name = "cuda",
    .init = cu_init,
    .device = cu_device,
    .build = cu_build,
    .kernel = cu_kernel,
    .module_free = cu_module_free,
    .alloc = cu_alloc,
    .release = cu_release,
    .upload = cu_upload,
    .download = cu_download,
    .launch = cu_launch,
    .sync = cu_sync,
    .time = cu_time,
    .capture_begin = cu_capture_begin,
    .capture_end = cu_capture_end,
    .graph_launch = cu_graph_launch,
    .graph_free = cu_graph_free,
};
