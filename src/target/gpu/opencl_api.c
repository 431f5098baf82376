/* opencl_api.c — the OpenCL device layer (hc_gpu_opencl): the ICD loader opened with
 * dlopen (the library builds and starts where OpenCL is absent), the first device of the
 * first platform that has one, one in-order queue.
 *
 * OpenCL 1.2 has no device pointers: a kernel takes buffer objects. So that the runtime
 * can treat device memory as addresses (offsets into the memory plan, constants packed
 * into one upload), every allocation gets a range of *virtual* addresses here; a kernel
 * argument is turned into (buffer object, byte offset) at launch, and the kernels take
 * each buffer as that pair (emit_gpu.c). No CL header is needed: the few types and
 * constants used are declared below with the names of the OpenCL 1.2 specification. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target/gpu/gpu.h"

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef uint64_t cl_bitfield;
typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_program *cl_program;
typedef struct _cl_kernel *cl_kernel;
typedef struct _cl_event *cl_event;

enum {
    CL_SUCCESS = 0,
    CL_BUILD_PROGRAM_FAILURE = -11,
    CL_TRUE = 1,
    CL_DEVICE_MAX_COMPUTE_UNITS = 0x1002,
    CL_DEVICE_MAX_WORK_GROUP_SIZE = 0x1004,
    CL_DEVICE_LOCAL_MEM_SIZE = 0x1023,
    CL_DEVICE_NAME = 0x102B,
    CL_DRIVER_VERSION = 0x102D,
    CL_PROGRAM_BINARY_SIZES = 0x1165,
    CL_PROGRAM_BINARIES = 0x1166,
    CL_PROGRAM_BUILD_LOG = 0x1183,
};
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFFu
#define CL_MEM_READ_WRITE ((cl_bitfield)1)

#define CL_FUNCS(X)                                                                             \
    X(cl_int, clGetPlatformIDs, (cl_uint, cl_platform_id *, cl_uint *))                         \
    X(cl_int, clGetDeviceIDs, (cl_platform_id, cl_bitfield, cl_uint, cl_device_id *, cl_uint *)) \
    X(cl_int, clGetDeviceInfo, (cl_device_id, cl_uint, size_t, void *, size_t *))               \
    X(cl_context, clCreateContext,                                                              \
      (const intptr_t *, cl_uint, const cl_device_id *, void *, void *, cl_int *))              \
    X(cl_command_queue, clCreateCommandQueue, (cl_context, cl_device_id, cl_bitfield, cl_int *)) \
    X(cl_mem, clCreateBuffer, (cl_context, cl_bitfield, size_t, void *, cl_int *))              \
    X(cl_int, clReleaseMemObject, (cl_mem))                                                     \
    X(cl_int, clEnqueueWriteBuffer, (cl_command_queue, cl_mem, cl_uint, size_t, size_t,         \
                                     const void *, cl_uint, const cl_event *, cl_event *))      \
    X(cl_int, clEnqueueReadBuffer, (cl_command_queue, cl_mem, cl_uint, size_t, size_t, void *,  \
                                    cl_uint, const cl_event *, cl_event *))                     \
    X(cl_program, clCreateProgramWithSource,                                                    \
      (cl_context, cl_uint, const char **, const size_t *, cl_int *))                           \
    X(cl_program, clCreateProgramWithBinary,                                                    \
      (cl_context, cl_uint, const cl_device_id *, const size_t *, const unsigned char **,       \
       cl_int *, cl_int *))                                                                     \
    X(cl_int, clBuildProgram,                                                                   \
      (cl_program, cl_uint, const cl_device_id *, const char *, void *, void *))                \
    X(cl_int, clGetProgramBuildInfo, (cl_program, cl_device_id, cl_uint, size_t, void *, size_t *)) \
    X(cl_int, clGetProgramInfo, (cl_program, cl_uint, size_t, void *, size_t *))                \
    X(cl_int, clReleaseProgram, (cl_program))                                                   \
    X(cl_kernel, clCreateKernel, (cl_program, const char *, cl_int *))                          \
    X(cl_int, clReleaseKernel, (cl_kernel))                                                     \
    X(cl_int, clSetKernelArg, (cl_kernel, cl_uint, size_t, const void *))                       \
    X(cl_int, clEnqueueNDRangeKernel,                                                           \
      (cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *, const size_t *,    \
       cl_uint, const cl_event *, cl_event *))                                                  \
    X(cl_int, clFinish, (cl_command_queue))

static struct {
#define X(ret, name, args) ret(*name) args;
    CL_FUNCS(X)
#undef X
} cl;

static struct {
    pthread_once_t once;
    hc_status st;
    char why[512];
    void *lib;
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    hc_gpu_device_info info;
    char ident[512]; /* device name and driver version: part of the binary cache key */
} g = {.once = PTHREAD_ONCE_INIT};

/* ---- virtual addresses --------------------------------------------------------------- */
typedef struct vrange {
    uintptr_t base;
    size_t bytes;
    cl_mem mem; /* NULL once released */
} vrange;

static pthread_mutex_t vlock = PTHREAD_MUTEX_INITIALIZER;
static HC_VEC(vrange) vranges; /* increasing base */
static uintptr_t vnext = (uintptr_t)1 << 44;

/* The allocation holding address p and p's offset in it. */
static cl_mem resolve(const void *p, size_t *off) {
    uintptr_t a = (uintptr_t)p;
    cl_mem m = NULL;
    pthread_mutex_lock(&vlock);
    size_t lo = 0, hi = vranges.len;
    while (lo < hi) { /* the last range with base <= a */
        size_t mid = (lo + hi) / 2;
        if (vranges.data[mid].base <= a) lo = mid + 1;
        else hi = mid;
    }
    if (lo > 0) {
        const vrange *r = &vranges.data[lo - 1];
        if (r->mem && a - r->base < HC_MAX(r->bytes, 1)) m = r->mem, *off = a - r->base;
    }
    pthread_mutex_unlock(&vlock);
    return m;
}

static const char *cl_err(cl_int e) {
    static _Thread_local char buf[32];
    switch (e) {
    case -1: return "CL_DEVICE_NOT_FOUND";
    case -4: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case -5: return "CL_OUT_OF_RESOURCES";
    case -6: return "CL_OUT_OF_HOST_MEMORY";
    case -11: return "CL_BUILD_PROGRAM_FAILURE";
    case -30: return "CL_INVALID_VALUE";
    case -38: return "CL_INVALID_MEM_OBJECT";
    case -46: return "CL_INVALID_KERNEL_NAME";
    case -48: return "CL_INVALID_KERNEL";
    case -51: return "CL_INVALID_ARG_SIZE";
    case -52: return "CL_INVALID_KERNEL_ARGS";
    case -54: return "CL_INVALID_WORK_GROUP_SIZE";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: snprintf(buf, sizeof buf, "OpenCL error %d", (int)e); return buf;
    }
}

/* ---- init ---------------------------------------------------------------------------- */
static void fail(const char *fmt, const char *a, const char *b) {
    snprintf(g.why, sizeof g.why, fmt, a, b);
    g.st = HC_ERR_UNSUPPORTED;
}

static void do_init(void) {
    const char *names[] = {"libOpenCL.so.1", "libOpenCL.so"};
    for (size_t i = 0; i < HC_ARRAY_LEN(names) && !g.lib; i++) g.lib = dlopen(names[i], RTLD_NOW);
    if (!g.lib) {
        fail("OpenCL: the ICD loader libOpenCL.so.1 is not installed (Debian: "
             "ocl-icd-libopencl1 and a driver such as pocl-opencl-icd)%s%s", "", "");
        return;
    }
#define X(ret, name, args)                                                                     \
    if (!(cl.name = (ret(*) args)dlsym(g.lib, #name))) {                                       \
        fail("OpenCL: %s has no %s", "libOpenCL.so.1", #name);                                 \
        return;                                                                                \
    }
    CL_FUNCS(X)
#undef X
    cl_platform_id plats[16];
    cl_uint np = 0;
    cl_int e = cl.clGetPlatformIDs(16, plats, &np);
    if (e != CL_SUCCESS || np == 0) {
        fail("OpenCL: no platform (%s): no OpenCL driver is installed (Debian: "
             "pocl-opencl-icd)%s", e ? cl_err(e) : "0 platforms", "");
        return;
    }
    for (cl_uint i = 0; i < np && !g.dev; i++) {
        cl_uint nd = 0;
        if (cl.clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &g.dev, &nd) != CL_SUCCESS || !nd)
            g.dev = NULL;
    }
    if (!g.dev) {
        fail("OpenCL: no device on any of the platforms%s%s", "", "");
        return;
    }
    g.ctx = cl.clCreateContext(NULL, 1, &g.dev, NULL, NULL, &e);
    if (g.ctx) g.q = cl.clCreateCommandQueue(g.ctx, g.dev, 0, &e);
    if (!g.ctx || !g.q) {
        fail("OpenCL: cannot create a context and queue: %s%s", cl_err(e), "");
        return;
    }
    cl_uint cu = 0;
    size_t wg = 0;
    cl_ulong lmem = 0;
    char drv[128] = "";
    cl.clGetDeviceInfo(g.dev, CL_DEVICE_NAME, sizeof g.info.name - 1, g.info.name, NULL);
    cl.clGetDeviceInfo(g.dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    cl.clGetDeviceInfo(g.dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    cl.clGetDeviceInfo(g.dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL);
    cl.clGetDeviceInfo(g.dev, CL_DRIVER_VERSION, sizeof drv - 1, drv, NULL);
    g.info.num_sms = (int)cu;
    g.info.max_threads_per_block = (int)HC_MIN(wg, 1024);
    g.info.smem_per_block = (int64_t)lmem;
    g.info.warp_size = 32;
    snprintf(g.ident, sizeof g.ident, "%s|%s", g.info.name, drv);
    g.st = HC_OK;
}

static hc_status ocl_init(hc_error *err) {
    pthread_once(&g.once, do_init);
    if (g.st != HC_OK) return hc_error_set(err, g.st, "%s", g.why);
    return HC_OK;
}

static hc_status ocl_device(hc_gpu_device_info *out, hc_error *err) {
    hc_status st = ocl_init(err);
    if (st == HC_OK) *out = g.info;
    return st;
}

/* ---- programs ------------------------------------------------------------------------ */
static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n > 0 && fseek(f, 0, SEEK_SET) == 0) {
            buf = hc_xmalloc((size_t)n);
            if (fread(buf, 1, (size_t)n, f) != (size_t)n) free(buf), buf = NULL;
            else *len = (size_t)n;
        }
    }
    fclose(f);
    return buf;
}

/* Written to a temporary name and renamed: a reader sees the whole file or none. */
static void write_file(const char *path, const void *data, size_t len) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return;
    bool ok = fwrite(data, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) remove(tmp);
}

static hc_status build_error(cl_program p, cl_int e, const char *src_path, hc_error *err) {
    size_t n = 0;
    cl.clGetProgramBuildInfo(p, g.dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = hc_xmalloc(n + 1);
    log[0] = 0;
    cl.clGetProgramBuildInfo(p, g.dev, CL_PROGRAM_BUILD_LOG, n, log, NULL);
    log[n] = 0;
    hc_status st = hc_error_set(err, HC_ERR_COMPILE, "OpenCL: build failed (%s); source kept at "
                                "%s:\n%.3000s", cl_err(e), src_path, log);
    free(log);
    return st;
}

static hc_status ocl_build(const char *src, const char *cache_dir, const char *key, void **module,
                           bool *cached, hc_error *err) {
    *module = NULL;
    *cached = false;
    hc_status st = ocl_init(err);
    if (st != HC_OK) return st;
    hc_hasher h;
    hc_hash_init(&h);
    hc_hash_str(&h, key);
    hc_hash_str(&h, g.ident);
    char hex[33];
    hc_hash_hex(&h, hex);
    char dir[4096], bin_path[4200], src_path[4200];
    snprintf(dir, sizeof dir, "%s/gpu", cache_dir);
    mkdir(cache_dir, 0755);
    mkdir(dir, 0755);
    snprintf(bin_path, sizeof bin_path, "%s/%s.clbin", dir, hex);
    snprintf(src_path, sizeof src_path, "%s/%s.cl", dir, hex);
    cl_int e = CL_SUCCESS, be = CL_SUCCESS;
    size_t blen = 0;
    unsigned char *bin = (unsigned char *)read_file(bin_path, &blen);
    cl_program p = NULL;
    if (bin) { /* a cached binary; a damaged one is rebuilt from the source */
        p = cl.clCreateProgramWithBinary(g.ctx, 1, &g.dev, &blen, (const unsigned char **)&bin,
                                         &be, &e);
        if (p && (e != CL_SUCCESS || be != CL_SUCCESS ||
                  cl.clBuildProgram(p, 1, &g.dev, "", NULL, NULL) != CL_SUCCESS)) {
            cl.clReleaseProgram(p);
            p = NULL;
        }
        free(bin);
        if (p) {
            *cached = true;
            *module = p;
            return HC_OK;
        }
    }
    size_t len = strlen(src);
    p = cl.clCreateProgramWithSource(g.ctx, 1, &src, &len, &e);
    if (!p) return hc_error_set(err, HC_ERR_COMPILE, "OpenCL: clCreateProgramWithSource: %s",
                                cl_err(e));
    e = cl.clBuildProgram(p, 1, &g.dev, "-cl-std=CL1.2", NULL, NULL);
    if (e != CL_SUCCESS) {
        write_file(src_path, src, len);
        st = build_error(p, e, src_path, err);
        cl.clReleaseProgram(p);
        return st;
    }
    size_t bsize = 0;
    if (cl.clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof bsize, &bsize, NULL) == CL_SUCCESS &&
        bsize > 0) {
        unsigned char *out = hc_xmalloc(bsize);
        if (cl.clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof out, &out, NULL) == CL_SUCCESS)
            write_file(bin_path, out, bsize);
        free(out);
    }
    *module = p;
    return HC_OK;
}

static void *ocl_kernel(void *module, const char *name, hc_error *err) {
    cl_int e = CL_SUCCESS;
    cl_kernel k = cl.clCreateKernel((cl_program)module, name, &e);
    if (!k) hc_error_set(err, HC_ERR_COMPILE, "OpenCL: kernel '%s': %s", name, cl_err(e));
    return k;
}

static void ocl_kernel_free(void *kernel) {
    if (kernel) cl.clReleaseKernel((cl_kernel)kernel);
}

static void ocl_module_free(void *module) {
    if (module) cl.clReleaseProgram((cl_program)module);
}

/* ---- memory ------------------------------------------------------------------------ */
static void *ocl_alloc(size_t bytes) {
    if (ocl_init(NULL) != HC_OK) return NULL;
    cl_int e = CL_SUCCESS;
    cl_mem m = cl.clCreateBuffer(g.ctx, CL_MEM_READ_WRITE, HC_MAX(bytes, 64), NULL, &e);
    if (!m) return NULL;
    pthread_mutex_lock(&vlock);
    vrange r = {vnext, bytes, m};
    size_t span = (HC_MAX(bytes, 64) + ((size_t)1 << 20)) & ~(((size_t)1 << 20) - 1);
    vnext += span + ((size_t)1 << 20); /* a gap: an address past one range is in none */
    hc_vec_push(&vranges, r);
    pthread_mutex_unlock(&vlock);
    return (void *)r.base;
}

static void ocl_release(void *dev) {
    if (!dev) return;
    pthread_mutex_lock(&vlock);
    for (size_t i = 0; i < vranges.len; i++)
        if (vranges.data[i].base == (uintptr_t)dev && vranges.data[i].mem) {
            cl.clReleaseMemObject(vranges.data[i].mem);
            vranges.data[i].mem = NULL;
        }
    pthread_mutex_unlock(&vlock);
}

static hc_status bad_address(const char *what, const void *p, hc_error *err) {
    return hc_error_set(err, HC_ERR_INVALID, "OpenCL: %s: %p is not device memory", what, p);
}

static hc_status ocl_upload(void *dev, const void *host, size_t bytes, hc_error *err) {
    size_t off = 0;
    cl_mem m = resolve(dev, &off);
    if (!m) return bad_address("upload", dev, err);
    if (!bytes) return HC_OK;
    cl_int e = cl.clEnqueueWriteBuffer(g.q, m, CL_TRUE, off, bytes, host, 0, NULL, NULL);
    if (e) return hc_error_set(err, HC_ERR_DEVICE, "OpenCL: write of %zu bytes: %s", bytes,
                               cl_err(e));
    return HC_OK;
}

static hc_status ocl_download(void *host, const void *dev, size_t bytes, hc_error *err) {
    size_t off = 0;
    cl_mem m = resolve(dev, &off);
    if (!m) return bad_address("download", dev, err);
    if (!bytes) return HC_OK;
    cl_int e = cl.clEnqueueReadBuffer(g.q, m, CL_TRUE, off, bytes, host, 0, NULL, NULL);
    if (e) return hc_error_set(err, HC_ERR_DEVICE, "OpenCL: read of %zu bytes: %s", bytes,
                               cl_err(e));
    return HC_OK;
}

/* ---- launches ---------------------------------------------------------------------- */
static hc_status ocl_launch(void *kernel, const int64_t grid[3], const int64_t block[3], int nargs,
                            void *const *args, hc_error *err) {
    cl_kernel k = kernel;
    for (int i = 0; i < nargs; i++) {
        size_t off = 0;
        cl_mem m = resolve(args[i], &off);
        if (!m) return bad_address("kernel argument", args[i], err);
        cl_ulong o = off;
        cl_int e = cl.clSetKernelArg(k, (cl_uint)(2 * i), sizeof m, &m);
        if (!e) e = cl.clSetKernelArg(k, (cl_uint)(2 * i + 1), sizeof o, &o);
        if (e) return hc_error_set(err, HC_ERR_DEVICE, "OpenCL: argument %d: %s", i, cl_err(e));
    }
    size_t gs[3], ls[3];
    for (int d = 0; d < 3; d++) {
        ls[d] = (size_t)HC_MAX(block[d], 1);
        gs[d] = (size_t)HC_MAX(grid[d], 1) * ls[d];
    }
    cl_int e = cl.clEnqueueNDRangeKernel(g.q, k, 3, NULL, gs, ls, 0, NULL, NULL);
    if (e) return hc_error_set(err, HC_ERR_DEVICE, "OpenCL: launch of %lldx%lld blocks of %lld "
                               "threads: %s", (long long)grid[0], (long long)grid[1],
                               (long long)block[0], cl_err(e));
    return HC_OK;
}

static hc_status ocl_sync(hc_error *err) {
    cl_int e = cl.clFinish(g.q);
    if (e) return hc_error_set(err, HC_ERR_DEVICE, "OpenCL: clFinish: %s", cl_err(e));
    return HC_OK;
}

/* Host time around fn and a finish: PoCL runs on the CPU, whose clock is the device's. */
static double ocl_time(void (*fn)(void *ctx), void *ctx) {
    cl.clFinish(g.q);
    double t0 = hc_now_ms();
    fn(ctx);
    cl.clFinish(g.q);
    return hc_now_ms() - t0;
}

const hc_gpu_api hc_gpu_opencl = {
    .name = "opencl",
    .init = ocl_init,
    .device = ocl_device,
    .build = ocl_build,
    .kernel = ocl_kernel,
    .kernel_free = ocl_kernel_free,
    .module_free = ocl_module_free,
    .alloc = ocl_alloc,
    .release = ocl_release,
    .upload = ocl_upload,
    .download = ocl_download,
    .launch = ocl_launch,
    .sync = ocl_sync,
    .time = ocl_time,
};
