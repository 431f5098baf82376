/* cpuid_avx2.c — an LD_PRELOAD library that hides AVX-512 from a process's CPUID, so that
 * every library in it (ONNX Runtime's MLAS, OpenVINO's oneDNN, hidetc's host detection)
 * picks its AVX2 code on an AVX-512 machine. bench/compare --isa avx2 builds and preloads
 * it (docs/bench.md).
 *
 * How: Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID 0, where the CPU flag cpuid_fault
 * is present) turns every CPUID instruction of the thread into a SIGSEGV; threads created
 * afterwards inherit the setting, and exec clears it. The handler recognises the
 * instruction (0F A2 at the faulting address), runs the real CPUID with faulting switched
 * off for the moment, clears the AVX-512 feature bits of leaf 7 in the result, and steps
 * over the instruction. XGETBV is not masked: a library sees the OS save the ZMM state but
 * no CPU feature that uses it, and the AVX-512 features are what they test first.
 *
 * The programs the process starts run unmasked: the library takes itself out of LD_PRELOAD
 * (hidetc's compile runs the C compiler, whose own SIGSEGV handler would meet a trapping
 * CPUID); hidetc compiles its kernels for AVX2 by its own flags (HIDETC_ISA=avx2, set too).
 *
 * Limits: a process that installs its own SIGSEGV handler replaces this one (a CPUID after
 * that dies): the probe `cpuid_avx2_probe` (main() below, built with -DHC_CPUID_PROBE)
 * tells whether masking works on this machine. Environment: HC_CPUID_AVX2_QUIET=1 silences
 * the one line printed to stderr when masking cannot be switched on. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef ARCH_GET_CPUID
#define ARCH_GET_CPUID 0x1011
#endif
#ifndef ARCH_SET_CPUID
#define ARCH_SET_CPUID 0x1012
#endif

/* Leaf 7 subleaf 0: EBX AVX512F 16, DQ 17, IFMA 21, PF 26, ER 27, CD 28, BW 30, VL 31;
 * ECX VBMI 1, VBMI2 6, VNNI 11, BITALG 12, VPOPCNTDQ 14; EDX 4VNNIW 2, 4FMAPS 3,
 * VP2INTERSECT 8, FP16 23. Leaf 7 subleaf 1: EAX BF16 5. */
#define EBX7_MASK                                                                                  \
    ((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) | (1u << 30) |    \
     (1u << 31))
#define ECX7_MASK ((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14))
#define EDX7_MASK ((1u << 2) | (1u << 3) | (1u << 8) | (1u << 23))
#define EAX71_MASK (1u << 5)

static long arch_prctl2(int code, unsigned long arg) { return syscall(SYS_arch_prctl, code, arg); }

static void real_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    __asm__ volatile("cpuid"
                     : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
                     : "a"(leaf), "c"(sub));
}

#ifndef HC_CPUID_PROBE
static void masked_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    real_cpuid(leaf, sub, r);
    if (leaf == 7 && sub == 0) {
        r[1] &= ~EBX7_MASK;
        r[2] &= ~ECX7_MASK;
        r[3] &= ~EDX7_MASK;
    } else if (leaf == 7 && sub == 1) {
        r[0] &= ~EAX71_MASK;
    }
}
#endif

#ifndef HC_CPUID_PROBE
static struct sigaction previous;

static void on_segv(int sig, siginfo_t *si, void *ctx_) {
    ucontext_t *ctx = ctx_;
    greg_t *g = ctx->uc_mcontext.gregs;
    const unsigned char *ip = (const unsigned char *)g[REG_RIP];
    if (ip && ip[0] == 0x0F && ip[1] == 0xA2) {
        uint32_t r[4];
        arch_prctl2(ARCH_SET_CPUID, 1);
        masked_cpuid((uint32_t)g[REG_RAX], (uint32_t)g[REG_RCX], r);
        arch_prctl2(ARCH_SET_CPUID, 0);
        g[REG_RAX] = r[0];
        g[REG_RBX] = r[1];
        g[REG_RCX] = r[2];
        g[REG_RDX] = r[3];
        g[REG_RIP] += 2;
        return;
    }
    /* not ours: the previous handler, or the default action (a core dump, as without us) */
    if (previous.sa_flags & SA_SIGINFO && previous.sa_sigaction) {
        previous.sa_sigaction(sig, si, ctx_);
        return;
    }
    if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(sig);
        return;
    }
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
}

/* Take this library out of LD_PRELOAD, so that the programs this process runs (hidetc's C
 * compiler, which installs its own SIGSEGV handler and then executes CPUID) start
 * unmasked, as exec leaves them anyway (it switches CPUID faulting off). */
static void leave_environment(void) {
    const char *pre = getenv("LD_PRELOAD");
    if (!pre) return;
    char *keep = calloc(strlen(pre) + 1, 1);
    if (!keep) return;
    const char *p = pre;
    while (*p) {
        size_t n = strcspn(p, ": ");
        if (n && !(memmem(p, n, "cpuid_avx2", 10))) {
            if (*keep) strcat(keep, ":");
            strncat(keep, p, n);
        }
        p += n;
        if (*p) p++;
    }
    if (*keep)
        setenv("LD_PRELOAD", keep, 1);
    else
        unsetenv("LD_PRELOAD");
    free(keep);
}

__attribute__((constructor)) static void cpuid_avx2_init(void) {
    leave_environment();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &previous) != 0 || arch_prctl2(ARCH_SET_CPUID, 0) != 0) {
        const char *q = getenv("HC_CPUID_AVX2_QUIET");
        if (!q || strcmp(q, "1") != 0)
            fprintf(stderr, "cpuid_avx2: CPUID faulting unavailable; AVX-512 not hidden\n");
    }
}

#else
/* The probe: prints what CPUID leaf 7 says of AVX-512F and AVX2, and whether faulting is
 * on (under LD_PRELOAD of the library: "avx512f 0 avx2 1 faulting 1"). */
int main(void) {
    uint32_t r[4];
    real_cpuid(7, 0, r);
    long on = arch_prctl2(ARCH_GET_CPUID, 0);
    printf("avx512f %u avx2 %u faulting %d\n", (r[1] >> 16) & 1u, (r[1] >> 5) & 1u, on == 0);
    return 0;
}
#endif
