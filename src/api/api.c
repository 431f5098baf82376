/* api.c — the public API (include/hidetc.h) over the internal modules. */
#include "hidetc.h"

#include <omp.h>
#include <string.h>

#include "target/cpu/templates/matmul.h"

_Static_assert((int)HIDETC_ERR_NOMEM == (int)HC_ERR_NOMEM, "status codes match");
_Static_assert((int)HIDETC_ERR_DEVICE == (int)HC_ERR_DEVICE, "status codes match");

static _Thread_local char last_error[4096];

static hidetc_status fail(const hc_error *err) {
    snprintf(last_error, sizeof last_error, "%s", err->msg);
    return (hidetc_status)err->status;
}

/* Shared with the other API files (graph_api.c): record err as the last error. */
hidetc_status hc_api_fail(const hc_error *err);
hidetc_status hc_api_fail(const hc_error *err) { return fail(err); }

const char *hidetc_version(void) { return "0.1.0"; }
const char *hidetc_last_error(void) { return last_error; }

struct hidetc_matmul {
    hc_matmul_kernel kernel;
    int num_threads;
};

hidetc_status hidetc_matmul_init(hidetc_matmul **out, int64_t batch, int64_t m, int64_t n,
                                 int64_t k, const hidetc_options *opt) {
    hc_error err = {0};
    if (!out) {
        hc_error_set(&err, HC_ERR_INVALID, "hidetc_matmul_init: out is NULL");
        return fail(&err);
    }
    *out = NULL;
    hc_matmul_shape s = {batch, m, n, k};
    if (hc_matmul_validate_shape(&s, &err) != HC_OK) return fail(&err);
    const hc_target *t = hc_target_host();
    int threads = opt && opt->num_threads > 0 ? opt->num_threads : t->caps.num_cores;
    hc_matmul_config c = hc_matmul_default_config(t, &s);
    hc_matmul_config_set_threads(&c, &s, threads);
    hc_jit_options jo = {.cache_dir = opt ? opt->cache_dir : NULL};
    hidetc_matmul *mm = hc_xcalloc(1, sizeof *mm);
    if (hc_matmul_build(&s, &c, t, &jo, &mm->kernel, &err) != HC_OK) {
        free(mm);
        return fail(&err);
    }
    mm->num_threads = threads;
    *out = mm;
    return HIDETC_OK;
}

hidetc_status hidetc_matmul_run(hidetc_matmul *mm, const float *A, const float *B, float *C) {
    if (!mm || !A || !B || !C) {
        hc_error err;
        hc_error_set(&err, HC_ERR_INVALID, "hidetc_matmul_run: NULL argument");
        return fail(&err);
    }
    int saved = omp_get_max_threads(); /* the caller's own count comes back */
    omp_set_num_threads(mm->num_threads);
    hc_matmul_run(&mm->kernel, A, B, C);
    omp_set_num_threads(saved);
    return HIDETC_OK;
}

void hidetc_matmul_free(hidetc_matmul *mm) {
    if (!mm) return;
    hc_matmul_kernel_close(&mm->kernel);
    free(mm);
}
