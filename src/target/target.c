/* target.c — finding a target by name, and the names shared by every target. */
#include "target/target.h"

#include <stdlib.h>
#include <string.h>

#include "target/cpu/cpu.h"
#include "target/gpu/gpu.h"

const char *hc_isa_name(hc_isa isa) {
    switch (isa) {
    case HC_ISA_SCALAR: return "scalar";
    case HC_ISA_AVX2: return "avx2";
    case HC_ISA_AVX512: return "avx512";
    }
    return "?";
}

const hc_target *hc_target_default(void) { return hc_target_host(); }

const char *hc_target_names(void) {
    return "cpu, cpu:avx512, cpu:avx2, cpu:scalar, opencl, cuda, cuda:sm_80, cuda:sm_90";
}

hc_status hc_target_find(const char *name, const hc_target **out, bool *runnable,
                         hc_error *err) {
    *out = NULL;
    if (runnable) *runnable = false;
    if (!name || !*name || !strcmp(name, "cpu")) {
        *out = hc_target_default();
        if (runnable) *runnable = true;
        return HC_OK;
    }
    static const struct { const char *name; hc_isa isa; } cpus[] = {
        {"cpu:avx512", HC_ISA_AVX512}, {"cpu:avx2", HC_ISA_AVX2}, {"cpu:scalar", HC_ISA_SCALAR}};
    for (size_t i = 0; i < sizeof cpus / sizeof cpus[0]; i++) {
        if (strcmp(name, cpus[i].name)) continue;
        *out = hc_target_cpu_emit_only(cpus[i].isa);
        if (runnable) *runnable = cpus[i].isa <= hc_cpu_isa();
        return HC_OK;
    }
    if (!strcmp(name, "opencl") || !strcmp(name, "cuda") || !strcmp(name, "cuda:sm_80") ||
        !strcmp(name, "cuda:sm_90"))
        return hc_target_gpu(name, out, runnable, NULL);
    return hc_error_set(err, HC_ERR_INVALID, "unknown target '%s' (known targets: %s)", name,
                        hc_target_names());
}

const char *hc_target_why_not_runnable(const hc_target *t) {
    static _Thread_local hc_error why;
    bool runnable = false;
    const hc_target *found = NULL;
    if (t->kind == HC_TARGET_GPU) {
        why = (hc_error){0};
        if (hc_target_gpu(t->name, &found, &runnable, &why) != HC_OK || runnable) return NULL;
        return why.msg[0] ? why.msg : "no device";
    }
    if (t->caps.isa <= hc_cpu_isa()) return NULL;
    snprintf(why.msg, sizeof why.msg, "target %s: this CPU has only %s", t->name,
             hc_isa_name(hc_cpu_isa()));
    return why.msg;
}

static const char *const stage_names[] = {
    [HC_STAGE_NONE] = "none",         [HC_STAGE_SCHEDULED] = "scheduled",
    [HC_STAGE_FUSED] = "fused",       [HC_STAGE_LOWERED] = "lowered",
    [HC_STAGE_SOURCE] = "source",
};

hc_stage hc_stage_parse(const char *name) {
    for (int s = HC_STAGE_SCHEDULED; s <= HC_STAGE_SOURCE; s++)
        if (name && !strcmp(name, stage_names[s])) return (hc_stage)s;
    return HC_STAGE_NONE;
}

const char *hc_stage_name(hc_stage s) {
    return s >= HC_STAGE_NONE && s <= HC_STAGE_SOURCE ? stage_names[s] : "?";
}

const char *hc_sched_func_name(hc_arena *a, const char *task_name) {
    const char *src = task_name && *task_name ? task_name : "task";
    bool digit = src[0] >= '0' && src[0] <= '9';
    char *s = hc_arena_printf(a, "%s%s", digit ? "_" : "", src);
    for (char *p = s; *p; p++) {
        bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (*p >= '0' && *p <= '9') || *p == '_';
        if (!ok) *p = '_';
    }
    return s;
}

char *hc_cache_dir(const hc_jit_options *opt) {
    if (opt && opt->cache_dir && *opt->cache_dir) return hc_xstrdup(opt->cache_dir);
    const char *env = getenv("HIDETC_CACHE_DIR");
    if (env && *env) return hc_xstrdup(env);
    const char *home = getenv("HOME");
    hc_sb sb;
    hc_sb_init(&sb);
    if (home && *home) hc_sb_printf(&sb, "%s/.cache/hidetc", home);
    else hc_sb_puts(&sb, "/tmp/hidetc-cache");
    return hc_sb_take(&sb);
}
