/* codegen.h — code generation targets. Each target is a struct of settings (and, for
 * the CUDA backend later, function pointers); the C backend writes C11 with OpenMP and
 * GCC vector types, using AVX-512 or AVX2 intrinsics where the target has them. */
#ifndef HC_CODEGEN_H
#define HC_CODEGEN_H

#include "ir/ir.h"

typedef enum hc_isa { HC_ISA_SCALAR, HC_ISA_AVX2, HC_ISA_AVX512 } hc_isa;
const char *hc_isa_name(hc_isa isa);

typedef struct hc_target {
    const char *name;   /* "cpu" */
    hc_isa isa;
    int vector_bits;    /* 512 (AVX-512), 256 (AVX2), 128 (plain C: vector types emulated) */
    int num_cores;      /* online cores */
    int num_regs;       /* vector registers: 32 (AVX-512), 16 (AVX2/plain) */
    int64_t l1_bytes, l2_bytes, l3_bytes; /* data cache sizes per core (l3 shared) */
    const char *cflags; /* flags for the system compiler, e.g. "-O3 -march=native" */
} hc_target;

/* The host CPU, detected once. HIDETC_ISA=avx512|avx2|scalar forces a lower ISA (for
 * testing the fallbacks); the flags then restrict the compiler accordingly. */
const hc_target *hc_target_host(void);
/* A target for a given ISA (same caches and cores as the host). */
const hc_target *hc_target_cpu(hc_isa isa);
/* f32 lanes of the target's natural vector: 16, 8 or 4. */
static inline int hc_target_f32_lanes(const hc_target *t) { return t->vector_bits / 32; }

/* Lower and print a module as one C translation unit (malloc'ed string). Every
 * HC_FN_CPU_KERNEL `f` is exported twice: `f(params...)` with typed parameters and
 * `f__packed(void **args)` where args[i] is the buffer pointer of a tensor/pointer
 * parameter or the address of a scalar parameter's value. */
char *hc_codegen_c(hc_arena *a, const hc_module *m, const hc_target *t);

typedef void (*hc_packed_fn)(void **args);

#endif
