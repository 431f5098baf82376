/* matmul.h — the CPU fp32 batched matmul template (BLIS structure, task mappings).
 *
 *   C[b] = A[b] x B[b]   A: [batch, m, k], B: [batch, k, n], C: [batch, m, n], row-major
 *
 * The program states its schedule with task mappings: threads (spatial) own macro tiles
 * of C, each thread walks its tile in NC x KC x MC cache blocks, packs panels of A and B,
 * and runs repeat mappings over MR x NR register tiles whose accumulators are a REGISTER
 * tensor of vectors (see docs/matmul.md). Every field of hc_matmul_config is a knob of
 * the schedule space; any shape works (tails are zero-padded or masked).
 *
 * Usage:
 *   hc_matmul_shape s = {1, 512, 512, 512};
 *   hc_matmul_config c = hc_matmul_default_config(hc_target_host(), &s);
 *   hc_func *f = hc_matmul_cpu(arena, &s, &c, hc_target_host(), &err); // params A, B, C
 */
#ifndef HC_SCHED_MATMUL_H
#define HC_SCHED_MATMUL_H

#include "target/cpu/cpu.h"
#include "ir/ir.h"
#include "target/cpu/jit.h"
#include "task/task.h"

typedef struct hc_matmul_shape {
    int64_t batch, m, n, k; /* C[b] = A[b] x B[b], row-major */
} hc_matmul_shape;

/* Dynamic shapes (docs/dynamic.md): the batch count and the row count as expressions of
 * the symbols, or NULL when fixed. The shape's batch and m then hold their values at the
 * graph's hint binding, where the config is decided (register tile, blocks, thread grid,
 * packing); the program's batch and M loops, M blocks and M tails run to the
 * expressions. n and k are always fixed. */
typedef struct hc_matmul_sym {
    const hc_sym *batch, *m;
} hc_matmul_sym;

typedef struct hc_matmul_config {
    int lanes;          /* f32 lanes per vector; must be the target's (16, 8 or 4) */
    int mr, nr;         /* register tile: mr rows x nr columns, nr a multiple of lanes */
    int64_t kc, mc, nc; /* cache blocks; mc a multiple of mr, nc a multiple of nr */
    int tb, tm, tn;     /* thread grid: tb x tm x tn threads split batches x rows x columns */
    bool pack_a;        /* copy A blocks into mr-interleaved panels (else read A in place) */
    bool pack_b;        /* copy B blocks into nr-wide panels (else read B rows in place) */
    /* register tiles row by row (each A micro-panel sweeps every B panel of the block:
     * C written along its rows, the B block re-read from L2) instead of column panel by
     * column panel (each B panel meets every A micro-panel of the block) */
    bool rows_first;
    /* Not a knob: set when C's stores must each hold a final value (epilogue fusion);
     * with several K blocks the partial sums then go to a scratch buffer. */
    bool c_write_once;
    /* Not knobs: operands that arrive pre-packed (hc_matmul_prepack, done once at compile
     * time for constant weights) instead of row-major. The param is then a 1-D tensor of
     * hc_matmul_packed_size elements and the kernel packs nothing for it (pack_a / pack_b
     * are ignored for that operand). a_shared: one A for every batch (conv weights at
     * batch > 1), packed once. */
    bool pre_a, pre_b, a_shared;
    /* AMX split products (docs/matmul.md, "AMX"): C from 16 x 16 f32 tiles, each f32
     * product as 6 bf16 products of 3-term splits of A and B (x = x0 + x1 + x2, each term
     * the bf16 rounding of what the others leave), as accurate as f32 FMAs or more. Needs
     * a target with amx_bf16, mr = nr = 32 (2 x 2 tiles), kc and nc multiples of 32, B
     * pre-packed (its split, hc_matmul_prepack) and fixed shapes. Each thread splits its
     * rows of A (all of K) into a scratch buffer first; pack_a, pack_b, mc and rows_first
     * are then unused. */
    bool amx;
} hc_matmul_config;

/* Limits that validation enforces (register tile and thread grid). */
#define HC_MATMUL_MAX_MR 32
#define HC_MATMUL_MAX_VECS 64   /* mr * nr / lanes accumulators */
#define HC_MATMUL_MAX_THREADS 256

/* Accumulators (FMA chains) the default's register tile keeps at least, where the
 * target's registers allow them (hc_matmul_default_config). */
#define HC_MATMUL_MIN_CHAINS 10

/* The AMX config (amx set) for this shape with t->caps.num_cores threads: 32 x 32
 * register tiles, a K block of 128 (a panel's B terms, 24 KiB, stay in L1 across the
 * thread's row blocks) and panels of 32 columns. */
hc_matmul_config hc_matmul_amx_config(const hc_target *t, const hc_matmul_shape *s);
/* The fewest rows (M) whose matmul the default runs as AMX split products. */
#define HC_MATMUL_AMX_MIN_ROWS 256
/* Whether the default should run a matmul as AMX split products: a target with AMX-BF16,
 * constant B (b_data: its batch x k x n values; NULL when B is not constant) whose values
 * all round to finite bf16 values (an infinity in B would meet zero terms of A's split:
 * NaN where f32 gives an infinity; the kernel redoes rows of A with one in f32), A not
 * constant, at least HC_MATMUL_AMX_MIN_ROWS rows (each weight's reuse: its split streams
 * 1.5 times the f32 bytes) and enough columns and depth (64) that the padding to tiles
 * costs little (matmul_cpu.c has the measurements). */
bool hc_matmul_amx_pays(const hc_matmul_shape *s, const hc_target *t, bool a_const,
                        const float *b_data);

/* A config from the target's vector width, register count and cache sizes, with
 * t->caps.num_cores threads; blocks are clipped to the shape. */
hc_matmul_config hc_matmul_default_config(const hc_target *t, const hc_matmul_shape *s);
/* Whether the default takes hc_matmul_narrow_config instead (constant A, activations as a
 * B of few columns, on Zen 4 with AVX-512: matmul_cpu.c), and that config: one vector per
 * row, up to 16 rows, B in place unless many row tiles reuse it, the rows split over the
 * threads. */
bool hc_matmul_narrow_pays(const hc_target *t, const hc_matmul_shape *s, bool a_const,
                           bool b_const);
hc_matmul_config hc_matmul_narrow_config(const hc_target *t, const hc_matmul_shape *s);
/* kc (balanced K blocks) from the share of L1 its B micro-panel (kc x nr) aims at, and mc
 * from kc; the default aims at 1.5 x L1. */
void hc_matmul_config_set_kc(hc_matmul_config *c, const hc_matmul_shape *s, const hc_target *t,
                             double l1_share);
/* Whether the default's panel should be half of L1 instead, for this many threads and
 * these constant operands (matmul_cpu.c has the measurements). */
bool hc_matmul_half_l1_panel_pays(const hc_matmul_config *c, const hc_matmul_shape *s,
                                  const hc_target *t, bool a_const, bool b_const);
/* Whether the default should take all of K in one block instead (kc = K: a thread's share
 * of C exceeds half of L2 and K's B micro-panel fits in twice L1; matmul_cpu.c), and the
 * config change that does it (kc, and mc from kc). */
bool hc_matmul_one_kblock_pays(const hc_matmul_config *c, const hc_matmul_shape *s,
                               const hc_target *t, bool a_const, bool b_const);
void hc_matmul_config_set_one_kblock(hc_matmul_config *c, const hc_matmul_shape *s,
                                     const hc_target *t);
/* Whether the default should keep a block of constant B in L2 and sweep the thread's rows
 * of A past it instead (its A block holds fewer than 4 register-tile rows, so each B panel
 * read from L3 serves few tiles; matmul_cpu.c has the measurements), and the config change
 * that does it (the default's kc, a B block of 3/8 of L2, A read in place as one block of
 * the thread's rows, rows first). */
bool hc_matmul_b_stationary_pays(const hc_matmul_config *c, const hc_matmul_shape *s,
                                 const hc_target *t, bool a_const, bool b_const);
void hc_matmul_config_set_b_stationary(hc_matmul_config *c, const hc_matmul_shape *s,
                                       const hc_target *t);
/* The default's loop order rule: rows first where K is short and the thread's B block
 * fits in half of L2 (src/target/cpu/templates/matmul_cpu.c has the measurements). */
bool hc_matmul_rows_first_pays(const hc_matmul_config *c, const hc_matmul_shape *s,
                               const hc_target *t);
/* The hardware-centric schedule space (src/target/cpu/templates/matmul_space.c): configs
 * built from the target's vector width, register count, L1/L2/L3 sizes and core count,
 * filtered by validity rules and deduplicated after clipping to the shape. level 0: the
 * default config alone; 1: a small space; 2: the full space. Candidate 0 is always
 * hc_matmul_default_config. Writes up to `max` configs to out (out may be NULL) and
 * returns the number of candidates. */
int hc_matmul_space(const hc_target *t, const hc_matmul_shape *s, int level,
                    hc_matmul_config *out, int max);
/* Rows (cols) per thread when `parts` threads split `extent` in whole `tile` units. */
int64_t hc_matmul_part_extent(int64_t extent, int64_t tile, int parts);
/* Choose the tb x tm x tn split of `threads` for this shape (threads >= 1): the least
 * padded work of the slowest thread plus the packing each thread repeats, a packed
 * element costing HC_MATMUL_PACK_COST multiply-adds. */
void hc_matmul_config_set_threads(hc_matmul_config *c, const hc_matmul_shape *s, int threads);
/* The same with the packing of an A and a B element costing a_cost and b_cost. */
void hc_matmul_config_set_threads_costed(hc_matmul_config *c, const hc_matmul_shape *s,
                                         int threads, double a_cost, double b_cost);
/* Multiply-adds a packed element costs: a copy (HC_MATMUL_PACK_COST), or an element read
 * through a fused prologue (HC_MATMUL_PROLOGUE_PACK_COST: an im2col's index arithmetic
 * and masked or gathered loads took 25-30% of the conv kernels it fed on Zen 3, M = 128
 * and 192 output channels: 40-60 multiply-adds an element; perf annotate). */
#define HC_MATMUL_PACK_COST 8.0
#define HC_MATMUL_PROLOGUE_PACK_COST 48.0
hc_status hc_matmul_validate(const hc_matmul_config *c, hc_error *err);
hc_status hc_matmul_validate_shape(const hc_matmul_shape *s, hc_error *err);
/* "mr8 nr32 kc384 mc96 nc2048 t1x1x2 pa1 pb1" (threads tb x tm x tn) */
void hc_matmul_config_print(hc_sb *sb, const hc_matmul_config *c);

/* Pre-packed operands. With amx, B (which = 1) is split into 3 bf16 terms, K padded to
 * Kp (a multiple of 32) and N to Np (of 32), as 1 KiB tiles (16 k pairs x 16 columns x
 * 2: the TDPBF16PS layout): term t of rows [32 kt, 32 kt + 32) x columns [16 j, 16 j +
 * 16) of batch b at f32 element b*3*Kp*Np/2 + t*Kp*Np/2 + (j*Kp/32 + kt)*256; in it
 * B[k][n] at 2-byte offset (k%32/2)*32 + (n%16)*2 + k%2. The layout of a packed A (which = 0) for a config with register
 * tile mr x nr and K block kb = min(kc, k):
 *   A[b, m, k] -> b*K*Mp + k0*Mp + (m/mr)*kcur*mr + (k-k0)*mr + m%mr
 * where k0 = k/kb*kb, kcur = min(kb, K - k0), Mp = m rounded up to mr (rows past m are 0);
 * B (which = 1) likewise with panels of nr columns:
 *   B[b, k, n] -> b*K*Np + k0*Np + (n/nr)*kcur*nr + (k-k0)*nr + n%nr.
 * Each register tile's panel of one K block is contiguous, in the order the micro-kernel
 * reads it. Batches: 1 for a shared A, else s->batch. */
int64_t hc_matmul_packed_size(const hc_matmul_shape *s, const hc_matmul_config *c, int which);
/* Pack src (row-major [batches][m][k] for A, [batches][k][n] for B) into dst, which holds
 * hc_matmul_packed_size elements. */
void hc_matmul_prepack(const hc_matmul_shape *s, const hc_matmul_config *c, int which,
                       const float *src, float *dst);

/* The scheduled program: an HC_FN_CPU_KERNEL named `name` (NULL: "matmul") with params
 * A, B, C (f32 tensors of the shapes above). NULL with err set on a bad shape or config,
 * or a config that does not fit the target. */
hc_func *hc_matmul_cpu(hc_arena *a, const char *name, const hc_matmul_shape *s,
                       const hc_matmul_config *c, const hc_target *t, hc_error *err);
/* The same with symbolic batches and rows (sym NULL, or its fields NULL: hc_matmul_cpu):
 * the batch and row dims of A, B, C and of the scratch of partial sums are those
 * expressions over the symbol variables (hc_sym_ir_var), and the M cache block is the
 * config's mc, not clipped to the hint's rows. Also NULL with err set for an operand
 * pre-packed whose packed form would depend on a symbol. */
hc_func *hc_matmul_cpu_sym(hc_arena *a, const char *name, const hc_matmul_shape *s,
                           const hc_matmul_sym *sym, const hc_matmul_config *c,
                           const hc_target *t, hc_error *err);

/* The generated C of the kernel (malloc'ed), or NULL with err set. */
char *hc_matmul_source(const hc_matmul_shape *s, const hc_matmul_config *c, const hc_target *t,
                       const char *name, hc_error *err);

/* A compiled kernel; run it with hc_matmul_run. */
typedef struct hc_matmul_kernel {
    hc_jit_lib *lib;
    hc_packed_fn fn; /* args: A, B, C */
} hc_matmul_kernel;
/* Build (or load from the JIT cache) the kernel named "matmul". opt may be NULL. */
hc_status hc_matmul_build(const hc_matmul_shape *s, const hc_matmul_config *c,
                          const hc_target *t, const hc_jit_options *opt, hc_matmul_kernel *out,
                          hc_error *err);
/* Resolve the entry point of an already loaded library holding kernel `name`. */
hc_status hc_matmul_kernel_from_lib(hc_jit_lib *lib, const char *name, hc_matmul_kernel *out,
                                    hc_error *err);
void hc_matmul_run(const hc_matmul_kernel *k, const float *A, const float *B, float *C);
void hc_matmul_kernel_close(hc_matmul_kernel *k);

/* The reference definition: inputs A, B; output C (the interpreter's oracle). */
hc_task *hc_matmul_task(hc_arena *a, const hc_matmul_shape *s);

#endif
