/* host.c — the host CPU as a target: ISA, cores, caches, flags, model name and features;
 * the one reader of CPUID and /proc/cpuinfo in the library.
 *
 * Detection runs once (pthread_once) because cache sizes and the ISA feed cache keys
 * and schedule spaces: they must not change during a process. */
#include "target/cpu/cpu.h"

#include <pthread.h>
#include <sched.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- CPU features ----------------------------------------------------------------- */
/* Kernels are compiled with -march=native: besides the ISA level they may use any
 * extension of the compiling CPU. The file records those (as far as the ISA flags let
 * the compiler use them) and a loading CPU must have all of them. */
#define CPU_FEATURES(X)                                                                   \
    X(AVX, "avx", 0) X(AVX2, "avx2", 0) X(FMA, "fma", 0) X(F16C, "f16c", 0)              \
    X(BMI, "bmi", 0) X(BMI2, "bmi2", 0) X(POPCNT, "popcnt", 0) X(MOVBE, "movbe", 0)      \
    X(AVXVNNI, "avxvnni", 0) X(GFNI, "gfni", 0) X(VAES, "vaes", 0)                       \
    X(VPCLMULQDQ, "vpclmulqdq", 0) X(AMX_TILE, "amx-tile", 0)                            \
    X(AVX512F, "avx512f", 1) X(AVX512VL, "avx512vl", 1) X(AVX512BW, "avx512bw", 1)       \
    X(AVX512DQ, "avx512dq", 1) X(AVX512CD, "avx512cd", 1) X(AVX512VBMI, "avx512vbmi", 1) \
    X(AVX512IFMA, "avx512ifma", 1) X(AVX512VBMI2, "avx512vbmi2", 1)                      \
    X(AVX512VNNI, "avx512vnni", 1) X(AVX512BITALG, "avx512bitalg", 1)                    \
    X(AVX512VPOPCNTDQ, "avx512vpopcntdq", 1) X(AVX512BF16, "avx512bf16", 1)              \
    X(AVX512FP16, "avx512fp16", 1) X(AMX_BF16, "amx-bf16", 0)

enum {
#define X(id, s, avx512) FEAT_##id,
    CPU_FEATURES(X)
#undef X
        FEAT_COUNT
};
static const char *const feature_names[] = {
#define X(id, s, avx512) s,
    CPU_FEATURES(X)
#undef X
};
static const uint64_t avx512_features = 0
#define X(id, s, avx512) | ((uint64_t)(avx512) << FEAT_##id)
    CPU_FEATURES(X)
#undef X
    ;

/* AMX tile data is off in a Linux process until it asks (arch_prctl ARCH_REQ_XCOMP_PERM
 * for XFEATURE_XTILEDATA, Linux 5.16+); a tile instruction before that traps. Asked once,
 * for the whole process; where the kernel refuses, the CPU counts as without AMX. */
static bool amx_permitted;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;
static void request_amx(void) {
#if defined(__x86_64__) && defined(__linux__)
    amx_permitted = syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */,
                            18 /* XFEATURE_XTILEDATA */) == 0;
#endif
}

uint64_t hc_cpu_features(void) {
    uint64_t f = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
#define X(id, s, avx512)                                                                  \
    if (__builtin_cpu_supports(s)) f |= (uint64_t)1 << FEAT_##id;
    CPU_FEATURES(X)
#undef X
#endif
    uint64_t amx = (uint64_t)1 << FEAT_AMX_TILE | (uint64_t)1 << FEAT_AMX_BF16;
    if (f & amx) {
        pthread_once(&amx_once, request_amx);
        if (!amx_permitted) f &= ~amx;
    }
    return f;
}

bool hc_cpu_amx_usable(void) {
    uint64_t f = hc_cpu_features();
    return (f >> FEAT_AMX_TILE & 1) && (f >> FEAT_AMX_BF16 & 1);
}

/* The features code compiled for `isa` on this CPU may use: the scalar target compiles
 * without -march, the AVX2 one with -mno-avx512f (which disables all of AVX-512). */
uint64_t hc_cpu_features_for(hc_isa isa) {
    if (isa == HC_ISA_SCALAR) return 0;
    uint64_t f = hc_cpu_features();
    return isa == HC_ISA_AVX2 ? f & ~avx512_features : f;
}

const char *hc_cpu_feature_name(int bit) {
    return bit >= 0 && bit < FEAT_COUNT ? feature_names[bit] : "?";
}

int hc_cpu_feature_count(void) { return FEAT_COUNT; }

static char model_name[200] = "unknown CPU";
static pthread_once_t model_once = PTHREAD_ONCE_INIT;

static void read_model_name(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *v = strchr(line, ':');
        if (!v) continue;
        v++;
        v += strspn(v, " \t");
        snprintf(model_name, sizeof model_name, "%.*s", (int)strcspn(v, "\n"), v);
        break;
    }
    if (f) fclose(f);
}

const char *hc_cpu_model_name(void) {
    pthread_once(&model_once, read_model_name);
    return model_name;
}

static char machine[256];
static pthread_once_t machine_once = PTHREAD_ONCE_INIT;

static void read_machine(void) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const char *model = hc_cpu_model_name();
    /* the name tune keys have always hashed when /proc/cpuinfo has none */
    if (!strcmp(model, "unknown CPU")) model = "unknown cpu";
    snprintf(machine, sizeof machine, "%s, %ld cpus", model, cpus > 0 ? cpus : 1);
}

const char *hc_cpu_machine(void) {
    pthread_once(&machine_once, read_machine);
    return machine;
}

static hc_target targets[3]; /* indexed by hc_isa */
static hc_isa host_isa;
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

/* Size in bytes of cpu0's level-`level` data (or unified) cache under a sysfs root
 * ("/sys/devices/system/cpu"): cpu0/cache/indexN/size ("32K", "1024K", "32M"); 0 when
 * there is none. That is the size of the one cache instance cpu0 uses, which is what a
 * core can fill: glibc's sysconf reports the L3 from CPUID, which on AMD EPYC is the
 * whole package (256 MiB on a Zen 3 VM whose cores share a 32 MiB CCX slice). */
int64_t hc_cpu_sysfs_cache_size(const char *root, int level) {
    for (int idx = 0; idx < 8; idx++) {
        char path[512], buf[64];
        snprintf(path, sizeof path, "%s/cpu0/cache/index%d/level", root, idx);
        FILE *f = fopen(path, "r");
        if (!f) break;
        int lv = 0;
        bool ok = fscanf(f, "%d", &lv) == 1;
        fclose(f);
        if (!ok || lv != level) continue;
        snprintf(path, sizeof path, "%s/cpu0/cache/index%d/type", root, idx);
        f = fopen(path, "r");
        if (!f) continue;
        ok = fgets(buf, sizeof buf, f) != NULL;
        fclose(f);
        if (!ok || !strncmp(buf, "Instruction", 11)) continue;
        snprintf(path, sizeof path, "%s/cpu0/cache/index%d/size", root, idx);
        f = fopen(path, "r");
        if (!f) continue;
        long long n = 0;
        char unit = 0;
        int got = fscanf(f, "%lld%c", &n, &unit);
        fclose(f);
        if (got < 1 || n <= 0) continue;
        if (unit == 'K') n *= 1024;
        else if (unit == 'M') n *= 1024 * 1024;
        else if (unit == 'G') n *= 1024 * 1024 * 1024;
        return n;
    }
    return 0;
}

/* sysfs first (the instance a core uses), then sysconf (0 on some kernels/containers),
 * then the fallback. */
static int64_t cache_size(int level, int sc_name, int64_t fallback) {
    int64_t s = hc_cpu_sysfs_cache_size("/sys/devices/system/cpu", level);
    if (s > 0) return s;
    long v = sysconf(sc_name);
    return v > 0 ? v : fallback;
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

/* The core from CPUID's vendor string and display family and model (family 6 and 15 add
 * the extended model). Only cores some default rule was measured on are named. */
hc_cpu_core hc_cpu_core_of(const char *vendor, unsigned family, unsigned model) {
    if (vendor && !strcmp(vendor, "GenuineIntel") && family == 6 &&
        (model == 0x8F || model == 0xCF))
        return HC_CORE_INTEL_SPR;
    if (vendor && !strcmp(vendor, "AuthenticAMD") && family == 0x19 &&
        ((model >= 0x10 && model <= 0x1F) || (model >= 0x60 && model <= 0x7F) ||
         (model >= 0xA0 && model <= 0xAF)))
        return HC_CORE_AMD_ZEN4;
    if (vendor && !strcmp(vendor, "AuthenticAMD") && family == 0x1A) return HC_CORE_AMD_ZEN5;
    return HC_CORE_OTHER;
}

static hc_cpu_core detect_core(void) {
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    char vendor[13] = {0};
    if (!__get_cpuid(0, &a, &b, &c, &d)) return HC_CORE_OTHER;
    memcpy(vendor, &b, 4), memcpy(vendor + 4, &d, 4), memcpy(vendor + 8, &c, 4);
    if (!__get_cpuid(1, &a, &b, &c, &d)) return HC_CORE_OTHER;
    unsigned family = (a >> 8) & 0xF, model = (a >> 4) & 0xF;
    if (family == 0xF) family += (a >> 20) & 0xFF;
    if (family == 6 || family >= 0xF) model |= ((a >> 16) & 0xF) << 4;
    return hc_cpu_core_of(vendor, family, model);
#else
    return HC_CORE_OTHER;
#endif
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

/* The settings of an ISA: vector width, registers, compiler flags. */
static void set_isa(hc_target *t, hc_isa isa) {
    t->caps.isa = isa;
    switch (isa) {
    case HC_ISA_AVX512:
        t->caps.vector_bits = 512, t->caps.num_regs = 32, t->cflags = "-O3 -march=native";
        break;
    case HC_ISA_AVX2:
        t->caps.vector_bits = 256, t->caps.num_regs = 16;
        /* -march=native on an AVX-512 machine would let GCC use zmm registers and
         * AVX-512 instructions; the AVX2 target must really be AVX2 code. Always say so:
         * the compiler's idea of "native" can differ from ours (under valgrind, cpuid in
         * this process reports no AVX-512 while the compiler, run natively, sees it). */
        t->cflags = "-O3 -march=native -mno-avx512f";
        break;
    case HC_ISA_SCALAR:
        t->caps.vector_bits = 128, t->caps.num_regs = 16, t->cflags = "-O3";
        break;
    }
}

static hc_target emit_only[3]; /* indexed by hc_isa, not clamped to the CPU */
static hc_isa cpu_isa;

static void detect(void) {
    hc_isa cpu = detect_isa();
    hc_target base = {.name = "cpu", .kind = HC_TARGET_CPU};
    base.caps.num_cores = usable_cores();
    base.caps.l1_bytes = cache_size(1, _SC_LEVEL1_DCACHE_SIZE, 32 * 1024);
    base.caps.l2_bytes = cache_size(2, _SC_LEVEL2_CACHE_SIZE, 1024 * 1024);
    base.caps.l3_bytes = cache_size(3, _SC_LEVEL3_CACHE_SIZE, 8 * 1024 * 1024);
    base.caps.core = detect_core();
    hc_cpu_target_ops(&base);
    for (int i = 0; i < 3; i++) {
        targets[i] = base;
        set_isa(&targets[i], (hc_isa)i);
        emit_only[i] = targets[i];
    }
    /* int8 dot products, as far as each ISA's compiler flags let the code use them */
    for (int i = 1; i < 3; i++) {
        uint64_t f = hc_cpu_features_for((hc_isa)i);
        targets[i].caps.int8_dot = i == HC_ISA_AVX512 && (f >> FEAT_AVX512VNNI & 1) ? 2
                                   : (f >> FEAT_AVXVNNI & 1)                          ? 1
                                                                                      : 0;
        emit_only[i].caps.int8_dot = targets[i].caps.int8_dot;
    }
    /* AMX-BF16 for the f32 matmuls (split products, docs/matmul.md "AMX"): on the AVX-512
     * target (every AMX CPU has AVX-512; the AVX2 target stands for CPUs without it), where
     * the process may use the tiles, when HIDETC_AMX=1 asks for it; which matmuls take it
     * is hc_matmul_amx_pays's rule. Not by default: on the only AMX machine measured, a
     * 2-vCPU Emerald Rapids VM, the core's AMX unit was shared (its rate halved for seconds
     * at a time, even on one thread: another tenant on the other hyperthread); BERT and
     * GPT-2 at batch 1 ran 1.06-1.3x slower with it, and BERT at batch 8 1.27x faster in
     * two runs and 1.23x slower in a third (bench/results/compare_xeon.md, "AMX split
     * products in the models"). */
    const char *amx_env = getenv("HIDETC_AMX");
    if (hc_cpu_amx_usable() && amx_env && !strcmp(amx_env, "1"))
        targets[HC_ISA_AVX512].caps.amx_bf16 = emit_only[HC_ISA_AVX512].caps.amx_bf16 = 1;
    /* An emit-only target above the CPU's ISA compiles (it cannot run here): "native"
     * would not enable its instructions, so it names a CPU that has them. */
    if (cpu < HC_ISA_AVX512) emit_only[HC_ISA_AVX512].cflags = "-O3 -march=skylake-avx512";
    if (cpu < HC_ISA_AVX2) emit_only[HC_ISA_AVX2].cflags = "-O3 -march=haswell";
    cpu_isa = cpu;
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

const hc_target *hc_target_cpu_emit_only(hc_isa isa) {
    pthread_once(&detect_once, detect);
    HC_ASSERT(isa >= HC_ISA_SCALAR && isa <= HC_ISA_AVX512);
    return &emit_only[isa];
}

hc_isa hc_cpu_isa(void) {
    pthread_once(&detect_once, detect);
    return cpu_isa;
}

hc_target hc_target_cpu_describe(hc_isa isa, int cores, int64_t l1_bytes, int64_t l2_bytes,
                                 int64_t l3_bytes) {
    HC_ASSERT(isa >= HC_ISA_SCALAR && isa <= HC_ISA_AVX512 && cores >= 1);
    hc_target t = *hc_target_cpu_emit_only(isa);
    t.caps.num_cores = cores;
    t.caps.l1_bytes = l1_bytes, t.caps.l2_bytes = l2_bytes, t.caps.l3_bytes = l3_bytes;
    t.caps.core = HC_CORE_OTHER; /* a stated machine is no particular core unless set */
    t.caps.amx_bf16 = 0;         /* nor has AMX */
    return t;
}
