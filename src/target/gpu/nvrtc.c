/* nvrtc.c — CUDA C to PTX or cubin with NVRTC, loaded at run time.
 *
 * libnvrtc is dlopen'ed on first use (never linked), so the library builds and runs on
 * machines without the CUDA toolkit; emitting and checking CUDA C needs NVRTC but no GPU.
 * The types and entry points below are those of the NVRTC API (nvrtc.h), declared here so
 * that no CUDA header is needed to build. Options: the architecture, -default-device, and
 * the toolkit's include directory when one is found (for cuda_fp16.h and friends). */
#include "target/gpu/nvrtc.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* nvrtc.h: nvrtcResult (NVRTC_SUCCESS = 0, NVRTC_ERROR_COMPILATION = 6), nvrtcProgram. */
typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;
enum { NVRTC_SUCCESS = 0, NVRTC_ERROR_COMPILATION = 6 };

static struct {
    bool ok;
    char why[1024];     /* why not ok */
    char include[1040]; /* "--include-path=DIR" for the toolkit's headers, or "" */
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *src, const char *name, int nheaders,
                                 const char *const *headers, const char *const *include_names);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int nopts, const char *const *opts);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
    nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetPTX)(nvrtcProgram, char *);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *); /* NVRTC 11.1+; may be NULL */
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
    const char *(*GetErrorString)(nvrtcResult);
} nv;

static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

/* NVRTC knows the CUDA builtins but not the toolkit's headers (cuda_fp16.h, ...): give it
 * the include directory of its own toolkit (beside the library) or of CUDA_HOME. */
static void find_headers(const char *cuda_home) {
    char dirs[3][1024] = {""};
    Dl_info info;
    if (dladdr((void *)nv.CreateProgram, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        if (slash)
            snprintf(dirs[0], sizeof dirs[0], "%.*s/../include", (int)(slash - info.dli_fname),
                     info.dli_fname);
    }
    if (cuda_home && *cuda_home) snprintf(dirs[1], sizeof dirs[1], "%s/include", cuda_home);
    snprintf(dirs[2], sizeof dirs[2], "/usr/local/cuda/include");
    for (int i = 0; i < 3; i++) {
        char probe[1100];
        snprintf(probe, sizeof probe, "%.1024s/cuda_fp16.h", dirs[i]);
        if (*dirs[i] && access(probe, R_OK) == 0) {
            snprintf(nv.include, sizeof nv.include, "--include-path=%.1023s", dirs[i]);
            return;
        }
    }
}

/* The library stays loaded for the life of the process (it is never dlclose'd). */
static void nv_load(void) {
    char home[512] = "";
    const char *cuda_home = getenv("CUDA_HOME");
    if (cuda_home && *cuda_home) snprintf(home, sizeof home, "%s/lib64/libnvrtc.so", cuda_home);
    /* An explicit CUDA_HOME first, then the loader's search path (any major version we
     * know the API of), then the toolkit's default location, which is often not on it. */
    const char *names[] = {home,
                           "libnvrtc.so",
                           "libnvrtc.so.13",
                           "libnvrtc.so.12",
                           "libnvrtc.so.11.2",
                           "/usr/local/cuda/lib64/libnvrtc.so"};
    void *lib = NULL;
    const char *last = "";
    hc_sb tried;
    hc_sb_init(&tried);
    for (size_t i = 0; i < HC_ARRAY_LEN(names) && !lib; i++) {
        if (!*names[i] || (i > 0 && strcmp(names[i], home) == 0)) continue;
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib) last = dlerror();
        hc_sb_printf(&tried, "%s%s", tried.len ? ", " : "", names[i]);
    }
    if (!lib) {
        snprintf(nv.why, sizeof nv.why,
                 "NVRTC: libnvrtc not found (tried %s; install the CUDA toolkit's NVRTC or set "
                 "CUDA_HOME): dlopen: %s",
                 hc_sb_str(&tried), last ? last : "?");
        hc_sb_free(&tried);
        return;
    }
    hc_sb_free(&tried);
    struct {
        void **fn;
        const char *name;
        bool optional;
    } syms[] = {
        {(void **)&nv.CreateProgram, "nvrtcCreateProgram", false},
        {(void **)&nv.CompileProgram, "nvrtcCompileProgram", false},
        {(void **)&nv.GetProgramLogSize, "nvrtcGetProgramLogSize", false},
        {(void **)&nv.GetProgramLog, "nvrtcGetProgramLog", false},
        {(void **)&nv.GetPTXSize, "nvrtcGetPTXSize", false},
        {(void **)&nv.GetPTX, "nvrtcGetPTX", false},
        {(void **)&nv.GetCUBINSize, "nvrtcGetCUBINSize", true},
        {(void **)&nv.GetCUBIN, "nvrtcGetCUBIN", true},
        {(void **)&nv.DestroyProgram, "nvrtcDestroyProgram", false},
        {(void **)&nv.GetErrorString, "nvrtcGetErrorString", false},
    };
    for (size_t i = 0; i < HC_ARRAY_LEN(syms); i++) {
        *syms[i].fn = dlsym(lib, syms[i].name);
        if (!*syms[i].fn && !syms[i].optional) {
            snprintf(nv.why, sizeof nv.why, "NVRTC: libnvrtc has no %s (too old?)", syms[i].name);
            return;
        }
    }
    find_headers(cuda_home);
    nv.ok = true;
}

bool hc_nvrtc_available(void) {
    pthread_once(&nv_once, nv_load);
    return nv.ok;
}

/* The message is built whole, then cut to fit hc_error with a visible mark, so that a long
 * log loses its tail rather than the header that says what failed. */
static hc_status compile_error(hc_error *err, const char *arch, const char *src_path, nvrtcResult r,
                               const char *log) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sb_printf(&sb, "NVRTC: compile for %s failed", arch);
    if (src_path) hc_sb_printf(&sb, " (source: %s)", src_path);
    if (r != NVRTC_ERROR_COMPILATION) hc_sb_printf(&sb, ": %s", nv.GetErrorString(r));
    hc_sb_printf(&sb, ":\n%s", log && *log ? log : "(no log)");
    static const char mark[] = "\n[... log truncated]";
    char *msg = hc_sb_take(&sb);
    size_t cap = err ? sizeof err->msg : 0;
    if (cap && strlen(msg) >= cap) memcpy(msg + cap - sizeof mark, mark, sizeof mark);
    hc_status st = hc_error_set(err, HC_ERR_COMPILE, "%s", msg);
    free(msg);
    return st;
}

hc_status hc_nvrtc_build(const char *src, const char *arch, hc_nvrtc_output kind,
                         const char *src_path, char **out, size_t *size, hc_error *err) {
    *out = NULL;
    if (size) *size = 0;
    if (!hc_nvrtc_available()) return hc_error_set(err, HC_ERR_UNSUPPORTED, "%s", nv.why);
    if (kind == HC_NVRTC_CUBIN && !(nv.GetCUBINSize && nv.GetCUBIN))
        return hc_error_set(err, HC_ERR_UNSUPPORTED,
                            "NVRTC: this libnvrtc cannot make cubins (NVRTC 11.1 or later)");
    /* PTX is for a virtual architecture: sm_XY becomes compute_XY. */
    char opt_arch[64];
    if (kind == HC_NVRTC_PTX && strncmp(arch, "sm_", 3) == 0)
        snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=compute_%s", arch + 3);
    else
        snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=%s", arch);
    /* -default-device: helpers the emitter prints without __device__ are device code. */
    const char *opts[] = {opt_arch, "-default-device", nv.include};
    int nopts = *nv.include ? 3 : 2;
    const char *name = "kernel.cu";
    if (src_path) {
        const char *slash = strrchr(src_path, '/');
        name = slash ? slash + 1 : src_path;
    }

    nvrtcProgram prog = NULL;
    nvrtcResult r = nv.CreateProgram(&prog, src, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS)
        return hc_error_set(err, HC_ERR_COMPILE, "NVRTC: nvrtcCreateProgram: %s",
                            nv.GetErrorString(r));
    hc_status st = HC_OK;
    r = nv.CompileProgram(prog, nopts, opts);
    if (r != NVRTC_SUCCESS) { /* the log also explains a bad option (an unknown arch) */
        size_t n = 0;
        char *log = NULL;
        if (nv.GetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 0) {
            log = hc_xmalloc(n + 1);
            if (nv.GetProgramLog(prog, log) != NVRTC_SUCCESS) n = 0;
            log[n] = 0;
        }
        st = compile_error(err, arch, src_path, r, log);
        free(log);
    } else {
        size_t n = 0;
        bool ptx = kind == HC_NVRTC_PTX;
        r = ptx ? nv.GetPTXSize(prog, &n) : nv.GetCUBINSize(prog, &n);
        char *buf = hc_xmalloc(n + 1);
        if (r == NVRTC_SUCCESS) r = ptx ? nv.GetPTX(prog, buf) : nv.GetCUBIN(prog, buf);
        if (r != NVRTC_SUCCESS || n == 0) {
            free(buf);
            st = hc_error_set(err, HC_ERR_COMPILE, "NVRTC: no %s for %s: %s", ptx ? "PTX" : "cubin",
                              arch,
                              r != NVRTC_SUCCESS ? nv.GetErrorString(r)
                                                 : "empty output (a virtual architecture?)");
        } else {
            buf[n] = 0;
            if (ptx && n > 0 && buf[n - 1] == 0) n--; /* the PTX size counts its NUL */
            *out = buf;
            if (size) *size = n;
        }
    }
    nv.DestroyProgram(&prog);
    return st;
}

hc_status hc_nvrtc_compile(const char *src, const char *arch, char **ptx, hc_error *err) {
    return hc_nvrtc_build(src, arch, HC_NVRTC_PTX, NULL, ptx, NULL, err);
}
