/* target_gpu.c — the GPU targets' operations over a device layer (hc_gpu_api): build a
 * source into a module and read its launch table, resolve programs, and the executor
 * that runs a program's stages on the one queue.
 *
 * Targets: "opencl" (any OpenCL 1.2 device; PoCL on this machine's CPU), "cuda" (the
 * first NVIDIA GPU), "cuda:sm_80" / "cuda:sm_90" (CUDA C for that architecture: emitted
 * and NVRTC-compiled anywhere, run only on such a device). A target is found even when no
 * device is there (for --print-source and inspect); it is runnable only with one. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/gpu/gpu.h"

/* ---- the launch table ------------------------------------------------------------------ */
static hc_gpu_program *find_program(hc_gpu_program *ps, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(ps[i].name, name)) return &ps[i];
    return NULL;
}

hc_status hc_gpu_parse_programs(const char *src, hc_gpu_program **out, int *n, hc_error *err) {
    HC_VEC(hc_gpu_program) ps = {0};
    hc_status st = HC_OK;
    for (const char *p = src; p && *p && st == HC_OK; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, "//@hidetc ", 10)) continue;
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char buf[4096], name[HC_GPU_NAME_MAX], kern[HC_GPU_NAME_MAX];
        if (len >= sizeof buf) {
            st = hc_error_set(err, HC_ERR_INVALID, "GPU source: launch-table line too long");
            break;
        }
        memcpy(buf, p, len);
        buf[len] = 0;
        int np, ns, used = 0;
        long long v[6];
        if (sscanf(buf, "//@hidetc program %127s %d %d%n", name, &np, &ns, &used) == 3) {
            if (np < 0 || ns < 0 || ns > HC_GPU_MAX_SCRATCH || find_program(ps.data, (int)ps.len, name)) {
                st = hc_error_set(err, HC_ERR_INVALID, "GPU source: bad program line '%s'", buf);
                break;
            }
            hc_gpu_program pr = {.nparams = np, .nscratch = ns};
            snprintf(pr.name, sizeof pr.name, "%s", name);
            const char *q = buf + used;
            for (int i = 0; i < ns && st == HC_OK; i++) {
                int k = 0;
                long long b = 0;
                if (sscanf(q, " %lld%n", &b, &k) != 1 || b < 0)
                    st = hc_error_set(err, HC_ERR_INVALID, "GPU source: bad scratch in '%s'", buf);
                pr.scratch_bytes[i] = b;
                q += k;
            }
            hc_vec_push(&ps, pr);
        } else if (sscanf(buf, "//@hidetc stage %127s %127s %lld %lld %lld %lld %lld %lld", name,
                          kern, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) == 8) {
            hc_gpu_program *pr = find_program(ps.data, (int)ps.len, name);
            if (!pr || pr->nstages >= HC_GPU_MAX_STAGES) {
                st = hc_error_set(err, HC_ERR_INVALID, "GPU source: stage of an unknown program "
                                  "or too many stages: '%s'", buf);
                break;
            }
            hc_gpu_stage *sg = &pr->stages[pr->nstages++];
            snprintf(sg->kernel, sizeof sg->kernel, "%s", kern);
            for (int d = 0; d < 3; d++) sg->grid[d] = v[d], sg->block[d] = v[3 + d];
        } else {
            st = hc_error_set(err, HC_ERR_INVALID, "GPU source: bad launch-table line '%s'", buf);
        }
    }
    if (st != HC_OK) {
        hc_vec_free(&ps);
        return st;
    }
    *out = ps.data;
    *n = (int)ps.len;
    return HC_OK;
}

/* ---- libraries ---------------------------------------------------------------------- */
typedef struct gpu_lib {
    const hc_gpu_api *api;
    int nmodules;
    void **modules;
    int nprograms;
    hc_gpu_program *programs;
    bool cached; /* every module was found in the cache */
    char path[256];
} gpu_lib;

static const hc_gpu_api *api_of(const hc_target *t) {
    return hc_gpu_target_dialect(t) == HC_GPU_CUDA ? &hc_gpu_cuda : &hc_gpu_opencl;
}

static void lib_close(hc_jit_lib *l) {
    gpu_lib *g = (gpu_lib *)l;
    if (!g) return;
    for (int i = 0; i < g->nprograms; i++) {
        hc_gpu_program *p = &g->programs[i];
        for (int s = 0; s < p->nscratch; s++) g->api->release(p->scratch[s]);
        for (int s = 0; s < p->nstages && g->api->kernel_free; s++) g->api->kernel_free(p->stages[s].fn);
    }
    for (int i = 0; i < g->nmodules; i++) g->api->module_free(g->modules[i]);
    free(g->modules);
    free(g->programs);
    free(g);
}

/* Adds one source's module and programs to g. */
static hc_status add_source(gpu_lib *g, const char *src, const hc_jit_options *opt, hc_error *err) {
    hc_gpu_program *ps = NULL;
    int np = 0;
    hc_status st = hc_gpu_parse_programs(src, &ps, &np, err);
    if (st != HC_OK) return st;
    hc_hasher h;
    hc_hash_init(&h);
    hc_hash_str(&h, g->api->name);
    hc_hash_str(&h, src);
    char key[33];
    hc_hash_hex(&h, key);
    char *dir = hc_cache_dir(opt);
    void *mod = NULL;
    bool cached = false;
    st = g->api->build(src, dir, key, &mod, &cached, err);
    free(dir);
    if (st != HC_OK) {
        free(ps);
        return st;
    }
    g->modules = realloc(g->modules, sizeof(void *) * (size_t)(g->nmodules + 1));
    HC_ASSERT(g->modules);
    g->modules[g->nmodules++] = mod;
    g->cached = g->cached && cached;
    snprintf(g->path, sizeof g->path, "%s module %s", g->api->name, key);
    for (int i = 0; i < np && st == HC_OK; i++) {
        hc_gpu_program *p = &ps[i];
        p->api = g->api;
        for (int s = 0; s < p->nstages && st == HC_OK; s++)
            if (!(p->stages[s].fn = g->api->kernel(mod, p->stages[s].kernel, err)))
                st = err && err->status ? err->status : HC_ERR_COMPILE;
        for (int s = 0; s < p->nscratch && st == HC_OK; s++)
            if (!(p->scratch[s] = g->api->alloc((size_t)p->scratch_bytes[s])))
                st = hc_error_set(err, HC_ERR_NOMEM, "%s: program %s: no device memory for "
                                  "%lld bytes of scratch", g->api->name, p->name,
                                  (long long)p->scratch_bytes[s]);
    }
    g->programs = realloc(g->programs, sizeof(hc_gpu_program) * (size_t)(g->nprograms + np + 1));
    HC_ASSERT(g->programs);
    memcpy(g->programs + g->nprograms, ps, sizeof(hc_gpu_program) * (size_t)np);
    g->nprograms += np;
    free(ps);
    return st;
}

static hc_status gpu_build_one(const hc_target *t, int n, const char *const *srcs,
                               const hc_jit_options *opt, int jobs,
                               void (*progress)(void *ctx, int done, int total), void *ctx,
                               hc_jit_lib **out, hc_error *err) {
    *out = NULL;
    gpu_lib *g = hc_xcalloc(1, sizeof *g);
    g->api = api_of(t);
    g->cached = true;
    hc_status st = g->api->init(err);
    for (int i = 0; i < n && st == HC_OK; i++) {
        st = add_source(g, srcs[i], opt, err);
        if (progress) progress(ctx, i + 1, n);
    }
    if (st != HC_OK) {
        lib_close((hc_jit_lib *)g);
        return st;
    }
    *out = (hc_jit_lib *)g;
    return HC_OK;
}

static hc_status gpu_build(const hc_target *t, int n, const char *const *srcs,
                           const hc_jit_options *opt, int jobs, hc_jit_lib **out, hc_error *err) {
    hc_status st = HC_OK;
    for (int i = 0; i < n; i++) out[i] = NULL;
    for (int i = 0; i < n && st == HC_OK; i++)
        st = gpu_build_one(t, 1, &srcs[i], opt, jobs, NULL, NULL, &out[i], err);
    return st;
}

/* Programs are looked up by the CPU's entry name, `<program>__packed`. */
static void *gpu_symbol(hc_jit_lib *l, const char *name) {
    gpu_lib *g = (gpu_lib *)l;
    char buf[HC_GPU_NAME_MAX + 16];
    snprintf(buf, sizeof buf, "%s", name);
    char *suffix = strstr(buf, "__packed");
    if (suffix && !suffix[8]) *suffix = 0;
    return find_program(g->programs, g->nprograms, buf);
}

static const char *gpu_lib_path(const hc_jit_lib *l) { return ((const gpu_lib *)l)->path; }
static bool gpu_lib_cached(const hc_jit_lib *l) { return ((const gpu_lib *)l)->cached; }

/* ---- the executor -------------------------------------------------------------------- */
/* The first launch error since the last check (per thread: each run checks its own). */
static _Thread_local hc_error launch_err;

static void run_program(const hc_gpu_program *p, void **args) {
    void *all[64 + HC_GPU_MAX_SCRATCH];
    HC_ASSERT_MSG(p->nparams <= 64, "GPU program with more than 64 buffers");
    memcpy(all, args, sizeof(void *) * (size_t)p->nparams);
    memcpy(all + p->nparams, p->scratch, sizeof(void *) * (size_t)p->nscratch);
    for (int s = 0; s < p->nstages && launch_err.status == HC_OK; s++)
        p->api->launch(p->stages[s].fn, p->stages[s].grid, p->stages[s].block,
                       p->nparams + p->nscratch, all, &launch_err);
}

static void gpu_launch(hc_packed_fn fn, void **args) { run_program((const hc_gpu_program *)(void *)fn, args); }

typedef struct timed {
    hc_packed_fn fn;
    void **args;
} timed;

static void timed_launch(void *ctx) {
    timed *t = ctx;
    gpu_launch(t->fn, t->args);
}

/* A failed launch times as infinite: the tuner never picks it (check reports it). */
static double time_with(const hc_gpu_api *api, hc_packed_fn fn, void **args) {
    timed t = {fn, args};
    double ms = api->time(timed_launch, &t);
    return launch_err.status == HC_OK && ms >= 0 ? ms : INFINITY;
}
static double ocl_time(hc_packed_fn fn, void **args) { return time_with(&hc_gpu_opencl, fn, args); }
static double cu_time(hc_packed_fn fn, void **args) { return time_with(&hc_gpu_cuda, fn, args); }
static void gpu_begin(int threads, bool pin, hc_run_state *s) { (void)threads, (void)pin, (void)s; }
static void gpu_evict(int n, const void *const *ptr, const size_t *bytes) { (void)n, (void)ptr, (void)bytes; }

static hc_status check_with(const hc_gpu_api *api, hc_error *err) {
    if (launch_err.status == HC_OK) api->sync(&launch_err);
    hc_status st = launch_err.status;
    if (st != HC_OK) {
        if (err) *err = launch_err;
        launch_err = (hc_error){0};
    }
    return st;
}

/* The executors: thin wrappers, so that each is a constant table. */
static hc_status ocl_up(void *d, const void *h, size_t n, hc_error *e) { return hc_gpu_opencl.upload(d, h, n, e); }
static hc_status ocl_down(void *h, const void *d, size_t n, hc_error *e) { return hc_gpu_opencl.download(h, d, n, e); }
static hc_status cu_up(void *d, const void *h, size_t n, hc_error *e) { return hc_gpu_cuda.upload(d, h, n, e); }
static hc_status cu_down(void *h, const void *d, size_t n, hc_error *e) { return hc_gpu_cuda.download(h, d, n, e); }
static void *ocl_alloc_w(size_t b) { return hc_gpu_opencl.alloc(b); }
static void ocl_release_w(void *p) { hc_gpu_opencl.release(p); }
static void *cu_alloc_w(size_t b) { return hc_gpu_cuda.alloc(b); }
static void cu_release_w(void *p) { hc_gpu_cuda.release(p); }
static void gpu_end(hc_run_state *s) { (void)s; }
static hc_status ocl_check(hc_error *err) { return check_with(&hc_gpu_opencl, err); }
static hc_status cu_check(hc_error *err) { return check_with(&hc_gpu_cuda, err); }

/* CUDA graphs. A launch error while recording belongs to the recording: it is dropped
 * with it, and the caller's direct launches meet (and report) it again. */
static bool cu_record_begin(void) { return hc_gpu_cuda.capture_begin(NULL) == HC_OK; }

static void *cu_record_end(void) {
    void *g = NULL;
    hc_status st = hc_gpu_cuda.capture_end(&g, NULL);
    if (st != HC_OK || launch_err.status != HC_OK) {
        if (g) hc_gpu_cuda.graph_free(g);
        launch_err = (hc_error){0};
        return NULL;
    }
    return g;
}

static void cu_replay(void *g) {
    if (launch_err.status == HC_OK) hc_gpu_cuda.graph_launch(g, &launch_err);
}

static void cu_replay_free(void *g) { hc_gpu_cuda.graph_free(g); }

static const hc_executor ocl_exec = {
    .alloc = ocl_alloc_w, .release = ocl_release_w, .begin = gpu_begin, .launch = gpu_launch,
    .end = gpu_end, .evict = gpu_evict, .upload = ocl_up, .download = ocl_down,
    .check = ocl_check, .time = ocl_time};
static const hc_executor cu_exec = {
    .alloc = cu_alloc_w, .release = cu_release_w, .begin = gpu_begin, .launch = gpu_launch,
    .end = gpu_end, .evict = gpu_evict, .upload = cu_up, .download = cu_down,
    .check = cu_check, .time = cu_time, .record_begin = cu_record_begin,
    .record_end = cu_record_end, .replay = cu_replay, .replay_free = cu_replay_free};

/* ---- targets ----------------------------------------------------------------------- */
static hc_module *gpu_lower(hc_arena *a, const hc_module *m, const hc_target *t) {
    return hc_gpu_lower(a, m, t);
}

static char *gpu_emit(hc_arena *a, const hc_module *lm, const hc_target *t) {
    return hc_gpu_emit(a, lm, hc_gpu_target_dialect(t));
}

hc_gpu_dialect hc_gpu_target_dialect(const hc_target *t) {
    return !strncmp(t->name, "cuda", 4) ? HC_GPU_CUDA : HC_GPU_OPENCL;
}

static char ocl_machine_buf[300], cu_machine_buf[300];
static const char *ocl_machine(void) { return ocl_machine_buf; }
static const char *cu_machine(void) { return cu_machine_buf; }

static void gpu_ops(hc_target *t, hc_gpu_dialect d) {
    t->kind = HC_TARGET_GPU;
    t->find_template = hc_gpu_find_template;
    t->auto_schedule = hc_gpu_auto_schedule;
    t->lower = gpu_lower;
    t->check = hc_gpu_check_program;
    t->emit = gpu_emit;
    t->build = gpu_build;
    t->build_one = gpu_build_one;
    t->symbol = gpu_symbol;
    t->lib_path = gpu_lib_path;
    t->lib_cached = gpu_lib_cached;
    t->lib_close = lib_close;
    t->exec = d == HC_GPU_CUDA ? &cu_exec : &ocl_exec;
    t->machine = d == HC_GPU_CUDA ? cu_machine : ocl_machine;
}

hc_target hc_target_gpu_describe(hc_gpu_dialect d, int num_sms, int64_t smem_per_block,
                                 int regs_per_thread, int max_threads_per_block) {
    hc_target t = {.name = d == HC_GPU_CUDA ? "cuda" : "opencl", .cflags = ""};
    t.caps = (hc_target_caps){.num_sms = num_sms, .smem_per_block = smem_per_block,
                              .regs_per_thread = regs_per_thread, .regs_per_block = 65536,
                              .warp_size = 32,
                              .max_threads_per_block = max_threads_per_block, .num_cores = 1,
                              .vector_bits = 128};
    gpu_ops(&t, d);
    return t;
}

/* Static shared memory is at most 48 KiB a block in CUDA without opting in; the templates
 * stay within it on every device, so that one program serves both dialects. */
#define SMEM_STATIC_MAX (48 * 1024)

typedef struct gpu_slot {
    pthread_once_t once;
    hc_target t;
    bool present;
    hc_error why;
    char name[32];
} gpu_slot;

static gpu_slot slots[4] = {{PTHREAD_ONCE_INIT}, {PTHREAD_ONCE_INIT}, {PTHREAD_ONCE_INIT},
                            {PTHREAD_ONCE_INIT}};
static const char *const slot_names[] = {"opencl", "cuda", "cuda:sm_80", "cuda:sm_90"};

static void init_slot(gpu_slot *s, int i) {
    hc_gpu_dialect d = i == 0 ? HC_GPU_OPENCL : HC_GPU_CUDA;
    const hc_gpu_api *api = d == HC_GPU_CUDA ? &hc_gpu_cuda : &hc_gpu_opencl;
    /* reference devices when none is present: PoCL-like for OpenCL; A100 (sm_80) and
     * H100/H200 (sm_90) for CUDA */
    int sms = d == HC_GPU_OPENCL ? 2 : i == 3 ? 132 : 108;
    s->t = hc_target_gpu_describe(d, sms, SMEM_STATIC_MAX, 255, 1024);
    snprintf(s->name, sizeof s->name, "%s", slot_names[i]);
    s->t.name = s->name;
    s->t.cflags = i == 2 ? "sm_80" : i == 3 ? "sm_90" : "";
    hc_gpu_device_info info = {0};
    s->present = api->init(&s->why) == HC_OK && api->device(&info, &s->why) == HC_OK;
    char *mbuf = d == HC_GPU_CUDA ? cu_machine_buf : ocl_machine_buf;
    if (!s->present) {
        if (!mbuf[0]) snprintf(mbuf, 300, "%s: no device", api->name);
        return;
    }
    snprintf(mbuf, 300, "%s: %s", api->name, info.name);
    if (i >= 2) { /* an architecture: runnable on a device of that architecture */
        int want = i == 2 ? 80 : 90, have = info.cc_major * 10 + info.cc_minor;
        if (have != want) {
            s->present = false;
            hc_error_set(&s->why, HC_ERR_UNSUPPORTED, "target %s: the device is %s (sm_%d)",
                         s->name, info.name, have);
            return;
        }
    }
    s->t.caps.num_sms = info.num_sms > 0 ? info.num_sms : sms;
    s->t.caps.smem_per_block = HC_MIN(info.smem_per_block > 0 ? info.smem_per_block : SMEM_STATIC_MAX,
                                      SMEM_STATIC_MAX);
    if (info.regs_per_thread > 0) s->t.caps.regs_per_thread = info.regs_per_thread;
    if (info.regs_per_block > 0) s->t.caps.regs_per_block = info.regs_per_block;
    if (info.max_threads_per_block > 0) s->t.caps.max_threads_per_block = info.max_threads_per_block;
}

static void init0(void) { init_slot(&slots[0], 0); }
static void init1(void) { init_slot(&slots[1], 1); }
static void init2(void) { init_slot(&slots[2], 2); }
static void init3(void) { init_slot(&slots[3], 3); }

hc_status hc_target_gpu(const char *name, const hc_target **out, bool *runnable, hc_error *why_not) {
    static void (*const inits[])(void) = {init0, init1, init2, init3};
    for (int i = 0; i < 4; i++) {
        if (strcmp(name, slot_names[i])) continue;
        pthread_once(&slots[i].once, inits[i]);
        *out = &slots[i].t;
        if (runnable) *runnable = slots[i].present;
        if (!slots[i].present && why_not) *why_not = slots[i].why;
        return HC_OK;
    }
    return hc_error_set(why_not, HC_ERR_INVALID, "unknown GPU target '%s'", name);
}
