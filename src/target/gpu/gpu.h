/* gpu.h — the GPU targets (src/target/gpu/): CUDA C and OpenCL C from the same programs.
 *
 * A GPU program is an HC_FN_CUDA_KERNEL function whose body is one or more *stages*
 * separated by top-level global barriers (hc_barrier(a, HC_SCOPE_GLOBAL)): each stage is a
 * kernel launch. Inside a stage, task mappings on the builtin workers (blockIdx.x,
 * threadIdx.x, warp_id, lane_id) say who does what; shared-memory tensors (HC_SCOPE_SHARED)
 * and barriers (HC_SCOPE_SHARED) are a block's; register tensors a thread's. A tensor
 * declared with HC_SCOPE_GLOBAL at the top level is the program's *scratch*: device memory
 * the runtime allocates once per program, passed to every stage after the buffers.
 *
 * Target lowering (lower_gpu.c) splits the stages, derives each one's grid and block from
 * its mappings (the largest worker count on each builtin), guards mappings with fewer
 * workers than the launch, and lowers mappings to index arithmetic. The emitter
 * (emit_gpu.c) prints the lowered kernels in a dialect (the table in emit_gpu.c) and, as
 * comments both dialects accept, the launch table that the device layer reads back:
 *
 *   //@hidetc program NAME NPARAMS NSCRATCH BYTES0 BYTES1 ...
 *   //@hidetc stage NAME KERNEL GX GY GZ BX BY BZ
 *
 * Stage kernels take NPARAMS buffers then NSCRATCH buffers. On OpenCL a buffer is passed
 * as (__global T *base, ulong byte_offset): device addresses are the device layer's
 * virtual addresses (see hc_gpu_api), which become (buffer object, offset) at launch.
 * DESIGN.md "Targets / GPU programs", docs/gpu.md. */
#ifndef HC_TARGET_GPU_H
#define HC_TARGET_GPU_H

#include "target/target.h"
#include "task/task.h"

typedef enum hc_gpu_dialect { HC_GPU_CUDA, HC_GPU_OPENCL } hc_gpu_dialect;

#define HC_GPU_MAX_STAGES 32
#define HC_GPU_MAX_SCRATCH 32
/* Whether f's stages and scratch tensors fit the limits above (the target's check hook). */
struct hc_func;
struct hc_target;
hc_status hc_gpu_check_program(const struct hc_func *f, const struct hc_target *t,
                               hc_error *err);
#define HC_GPU_NAME_MAX 128

/* ---- the device layer: one per API (opencl_api.c, cuda_api.c) ----------------------- */
typedef struct hc_gpu_device_info {
    char name[256];              /* "NVIDIA H200", "pthread-skylake-avx512-..." */
    int num_sms;                 /* compute units */
    int64_t smem_per_block;      /* bytes */
    int regs_per_thread;         /* the most one thread may use; 0: unknown */
    int regs_per_block;          /* the register file a block's threads share; 0: unknown */
    int warp_size;               /* 32 on NVIDIA; OpenCL: 32 (a warp is a program concept) */
    int max_threads_per_block;
    int cc_major, cc_minor;      /* CUDA compute capability; 0 on OpenCL */
} hc_gpu_device_info;

typedef struct hc_gpu_api {
    const char *name; /* "opencl", "cuda" */
    /* Opens the API's library (dlopen), picks the first device, makes the context and the
     * one queue/stream. Idempotent; the error names what is missing (library, device). */
    hc_status (*init)(hc_error *err);
    /* Errors: HC_ERR_UNSUPPORTED when the library or a device is missing, HC_ERR_COMPILE
     * for a failed build (the message carries the compiler's log), HC_ERR_DEVICE for a failed call at run
     * time (HC_ERR_INVALID: a call before a successful init), HC_ERR_IO for the cache. */
    hc_status (*device)(hc_gpu_device_info *out, hc_error *err);
    /* Builds a source (or loads the binary cached under `key` in cache_dir) into a module. */
    hc_status (*build)(const char *src, const char *cache_dir, const char *key, void **module,
                       bool *cached, hc_error *err);
    void *(*kernel)(void *module, const char *name, hc_error *err);
    void (*kernel_free)(void *kernel); /* NULL: kernels go with their module */
    void (*module_free)(void *module);
    /* Device memory: the returned address is a device address (CUDA: a CUdeviceptr;
     * OpenCL: a virtual address the layer maps to a buffer object and an offset). Host
     * code never dereferences it. NULL when out of memory. */
    void *(*alloc)(size_t bytes);
    void (*release)(void *dev);
    hc_status (*upload)(void *dev, const void *host, size_t bytes, hc_error *err);
    hc_status (*download)(void *host, const void *dev, size_t bytes, hc_error *err);
    /* Enqueues a kernel on `nargs` buffer arguments (device addresses). */
    hc_status (*launch)(void *kernel, const int64_t grid[3], const int64_t block[3], int nargs,
                        void *const *args, hc_error *err);
    hc_status (*sync)(hc_error *err);
    /* Milliseconds of device time of fn(ctx) (events around it); negative: unsupported. */
    double (*time)(void (*fn)(void *ctx), void *ctx);
    /* Graphs (CUDA): after capture_begin the launches are recorded, not run; capture_end
     * makes them one executable graph (ending the capture even on failure); graph_launch
     * runs it. NULL: the API has no graphs (OpenCL). */
    hc_status (*capture_begin)(hc_error *err);
    hc_status (*capture_end)(void **graph, hc_error *err);
    hc_status (*graph_launch)(void *graph, hc_error *err);
    void (*graph_free)(void *graph);
} hc_gpu_api;

extern const hc_gpu_api hc_gpu_opencl;
extern const hc_gpu_api hc_gpu_cuda;

/* ---- programs: the launch table of an emitted source -------------------------------- */
typedef struct hc_gpu_stage {
    char kernel[HC_GPU_NAME_MAX];
    int64_t grid[3], block[3];
    void *fn; /* the device layer's kernel handle */
} hc_gpu_stage;

typedef struct hc_gpu_program {
    char name[HC_GPU_NAME_MAX];
    int nparams, nscratch, nstages;
    int64_t scratch_bytes[HC_GPU_MAX_SCRATCH];
    hc_gpu_stage stages[HC_GPU_MAX_STAGES];
    void *scratch[HC_GPU_MAX_SCRATCH]; /* device addresses, allocated with the library */
    const hc_gpu_api *api;
} hc_gpu_program;

/* The programs of an emitted source (its //@hidetc lines); malloc'ed array. */
hc_status hc_gpu_parse_programs(const char *src, hc_gpu_program **out, int *n, hc_error *err);

/* ---- compilation ------------------------------------------------------------------- */
/* GPU target lowering of a module of GPU programs (lower_gpu.c): one HC_FN_CUDA_KERNEL per
 * stage, named PROGRAM_s<i>, with grid_dim/block_dim set and the program recorded. */
hc_module *hc_gpu_lower(hc_arena *a, const hc_module *m, const hc_target *t);
/* A lowered module as CUDA C or OpenCL C with its launch table (emit_gpu.c). */
char *hc_gpu_emit(hc_arena *a, const hc_module *lowered, hc_gpu_dialect d);
/* The GPU auto-scheduler (auto_sched_gpu.c): any task as a GPU program. */
hc_func *hc_gpu_auto_schedule(hc_arena *a, const hc_task *task, const hc_target *t,
                              hc_error *err);
/* The GPU templates (templates/registry_gpu.c). */
const hc_template *hc_gpu_find_template(const hc_target *t, hc_op_kind op);

/* NVRTC (dlopen'ed; no GPU needed): CUDA C to PTX for arch "sm_80", "sm_90", ... The PTX
 * (malloc'ed) or an error carrying the compiler log. */
hc_status hc_nvrtc_compile(const char *src, const char *arch, char **ptx, hc_error *err);
bool hc_nvrtc_available(void);

/* The GPU targets: "opencl" (the first OpenCL device), "cuda" (the first CUDA device;
 * "cuda:sm_80" / "cuda:sm_90" name an architecture for emitting without a device). The
 * target's caps are the device's when one is present, else those of a reference device
 * (an A100-class GPU for cuda, PoCL-like for opencl). `runnable` says whether a device is
 * present; err says why not. */
hc_status hc_target_gpu(const char *name, const hc_target **out, bool *runnable,
                        hc_error *why_not);
/* A GPU target with stated capabilities (tests: the space on the device it names). */
hc_target hc_target_gpu_describe(hc_gpu_dialect d, int num_sms, int64_t smem_per_block,
                                 int regs_per_thread, int max_threads_per_block);
/* The dialect of a GPU target. */
hc_gpu_dialect hc_gpu_target_dialect(const hc_target *t);

#endif
