/* target.c — the host CPU as a code generation target: ISA, cores, caches, flags.
 *
 * Detection runs once (pthread_once) because cache sizes and the ISA feed cache keys
 * and schedule spaces: they must not change during a process. */
#include "codegen/codegen.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

const char *hc_isa_name(hc_isa isa) {
    switch (isa) {
    case HC_ISA_SCALAR: return "scalar";
    case HC_ISA_AVX2: return "avx2";
    case HC_ISA_AVX512: return "avx512";
    }
    return "?";
}

static hc_target targets[3]; /* indexed by hc_isa */
static hc_isa host_isa;
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

/* Size in bytes from /sys/devices/system/cpu/cpu0/cache/indexN ("32K", "1024K", "32M"),
 * used when sysconf does not know (it returns 0 on some kernels/containers). */
static int64_t sysfs_cache_size(int level) {
    for (int idx = 0; idx < 8; idx++) {
        char path[128], buf[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", idx);
        FILE *f = fopen(path, "r");
        if (!f) break;
        int lv = 0;
        bool ok = fscanf(f, "%d", &lv) == 1;
        fclose(f);
        if (!ok || lv != level) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", idx);
        f = fopen(path, "r");
        if (!f) continue;
        ok = fgets(buf, sizeof buf, f) != NULL;
        fclose(f);
        if (!ok || !strncmp(buf, "Instruction", 11)) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        f = fopen(path, "r");
        if (!f) continue;
        long long n = 0;
        char unit = 0;
        int got = fscanf(f, "%lld%c", &n, &unit);
        fclose(f);
        if (got < 1) continue;
        if (unit == 'K') n *= 1024;
        else if (unit == 'M') n *= 1024 * 1024;
        return n;
    }
    return 0;
}

static int64_t cache_size(int level, int sc_name, int64_t fallback) {
    long v = sysconf(sc_name);
    if (v > 0) return v;
    int64_t s = sysfs_cache_size(level);
    return s > 0 ? s : fallback;
}

/* Cores this process may run on: a container or taskset may allow fewer than are
 * online, and more threads than that only time-slice. */
static int usable_cores(void) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int n = online > 0 ? (int)online : 1;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        n = HC_MIN(n, CPU_COUNT(&set));
    return n;
}

static hc_isa detect_isa(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return HC_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return HC_ISA_AVX2;
#endif
    return HC_ISA_SCALAR;
}

/* HIDETC_ISA may only lower the ISA: asking for more than the CPU has would produce
 * code that traps with SIGILL. */
static hc_isa apply_env_isa(hc_isa detected) {
    const char *env = getenv("HIDETC_ISA");
    if (!env || !*env) return detected;
    hc_isa want;
    if (!strcmp(env, "avx512")) want = HC_ISA_AVX512;
    else if (!strcmp(env, "avx2")) want = HC_ISA_AVX2;
    else if (!strcmp(env, "scalar")) want = HC_ISA_SCALAR;
    else {
        fprintf(stderr, "hidetc: warning: ignoring unknown HIDETC_ISA=%s "
                        "(expected avx512, avx2 or scalar)\n", env);
        return detected;
    }
    return want < detected ? want : detected;
}

static void detect(void) {
    hc_isa cpu = detect_isa();
    hc_target base = {
        .name = "cpu",
        .num_cores = usable_cores(),
        .l1_bytes = cache_size(1, _SC_LEVEL1_DCACHE_SIZE, 32 * 1024),
        .l2_bytes = cache_size(2, _SC_LEVEL2_CACHE_SIZE, 1024 * 1024),
        .l3_bytes = cache_size(3, _SC_LEVEL3_CACHE_SIZE, 8 * 1024 * 1024),
    };
    for (int i = 0; i < 3; i++) targets[i] = base;
    targets[HC_ISA_AVX512].isa = HC_ISA_AVX512;
    targets[HC_ISA_AVX512].vector_bits = 512;
    targets[HC_ISA_AVX512].num_regs = 32;
    targets[HC_ISA_AVX512].cflags = "-O3 -march=native";
    targets[HC_ISA_AVX2].isa = HC_ISA_AVX2;
    targets[HC_ISA_AVX2].vector_bits = 256;
    targets[HC_ISA_AVX2].num_regs = 16;
    /* -march=native on an AVX-512 machine would let GCC use zmm registers and
     * AVX-512 instructions; the AVX2 target must really be AVX2 code. Always say so: the
     * compiler's idea of "native" can differ from ours (under valgrind, cpuid in this
     * process reports no AVX-512 while the compiler, run natively, sees it). */
    targets[HC_ISA_AVX2].cflags = "-O3 -march=native -mno-avx512f";
    targets[HC_ISA_SCALAR].isa = HC_ISA_SCALAR;
    targets[HC_ISA_SCALAR].vector_bits = 128;
    targets[HC_ISA_SCALAR].num_regs = 16;
    targets[HC_ISA_SCALAR].cflags = "-O3";
    host_isa = apply_env_isa(cpu);
    /* A target above the CPU's ISA cannot run here: clamp requests to the CPU. */
    for (int i = cpu + 1; i < 3; i++) targets[i] = targets[cpu];
}

const hc_target *hc_target_host(void) {
    pthread_once(&detect_once, detect);
    return &targets[host_isa];
}

const hc_target *hc_target_cpu(hc_isa isa) {
    pthread_once(&detect_once, detect);
    HC_ASSERT(isa >= HC_ISA_SCALAR && isa <= HC_ISA_AVX512);
    return &targets[isa];
}
