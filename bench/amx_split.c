/* amx_split.c — a probe, not part of the library: could AMX (bf16 tiles) run an f32
 * matmul faster than AVX-512 FMAs at f32 accuracy? An f32 value splits into bf16 terms
 * x = x0 + x1 + x2 (each the bf16 rounding of what the earlier terms left); a product
 * a * b then needs the terms down to the f32 rounding level: 6 bf16 products (a0b0,
 * a0b1, a1b0, a0b2, a1b1, a2b0) for about f32 accuracy, 3 (a0b0, a0b1, a1b0) for about
 * 16 bits, 1 for bf16. AMX accumulates in f32.
 *
 * It measures, in alternated rounds on 2 threads (medians of ROUNDS):
 *   - the AVX-512 f32 FMA peak (12 independent FMA chains a thread, no memory);
 *   - the AMX bf16 peak (TDPBF16PS on 4 accumulator tiles, no tile loads), and the same
 *     with the A and B tiles loaded from a 32 KiB ring each step (L1-resident);
 * the accuracy of 1, 3 and 6 split products on an M x N x K matmul (A in [-1, 1], B in
 * [-0.05, 0.05]), computed on AMX, against double, beside a plain f32 FMA loop; and the
 * median time of a blocked 6-product kernel on 2 threads (blocked_run: B split once, A
 * split on every run), to set beside `hidetc kernel matmul --m M --n N --k K --threads 2
 * --bench` in alternated runs. The f32-equivalent ceiling of P products is the AMX rate
 * / P, printed as a ratio to the FMA peak.
 *
 *   cc -O2 -Isrc -mavx512f -mavx512bf16 -mamx-tile -mamx-bf16 -fopenmp bench/amx_split.c \
 *      -o amx_split -lm          (GCC 11 or later; it runs only on CPUs with AMX-BF16)
 *   OMP_NUM_THREADS=2 OMP_PROC_BIND=true ./amx_split [M N K]   (multiples of 32)
 *
 * Measured 2026-12-06 on the Emerald Rapids VM of bench/results/compare_xeon.md ("Could
 * AMX ..."): FMA 304-353 GFLOP/s; AMX in two states that change within seconds, 4.9-5.5
 * TFLOP/s (14.6-15.5 x the FMA peak, near the hardware's 16 x) or 2.3 (7.3-7.5 x; 1.4-1.5
 * with the tile loads). Errors (128 x 768 x 768): f32 loop 2.1e-6; 1 product 4.2e-3, 3
 * products 7.3e-6, 6 products 7.4e-7. The blocked kernel against hidetc's f32 template on
 * BERT's shapes, per round: 1.35-1.98 x as fast in the fast AMX state (K = 3072: 0.99-1.55),
 * 0.74-1.09 in the slow one (one round 0.40); the median of all 32 rounds 0.98. */
#define _GNU_SOURCE
#include <cpuid.h>
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h" /* hc_f32_to_bf16, hc_bf16_to_f32 (static inline) */

#define ROUNDS 15
#define FMA_ITERS 200000L
#define AMX_ITERS 100000L
static int M = 128, N = 768, K = 768; /* multiples of 32 */

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((packed)) tile_config;

/* CPUID leaf 7: AMX-TILE (EDX bit 24), AMX-BF16 (EDX bit 22); subleaf 1: AVX512-BF16 (EAX
 * bit 5) */
static int has_amx_bf16(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d >> 24 & 1) || !(d >> 22 & 1)) return 0;
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 5 & 1);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* GFLOP/s of 12 FMA chains a thread */
static double fma_peak(void) {
    double t0 = now();
#pragma omp parallel
    {
        __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(1e-4f);
        /* distinct starting values: equal chains would be merged into one by the compiler */
        __m512 a0 = _mm512_set1_ps(0.00f), a1 = _mm512_set1_ps(0.01f), a2 = _mm512_set1_ps(0.02f),
               a3 = _mm512_set1_ps(0.03f), a4 = _mm512_set1_ps(0.04f), a5 = _mm512_set1_ps(0.05f),
               a6 = _mm512_set1_ps(0.06f), a7 = _mm512_set1_ps(0.07f), a8 = _mm512_set1_ps(0.08f),
               a9 = _mm512_set1_ps(0.09f), a10 = _mm512_set1_ps(0.10f), a11 = _mm512_set1_ps(0.11f);
        for (long i = 0; i < FMA_ITERS; i++) {
            a0 = _mm512_fmadd_ps(a0, x, y); a1 = _mm512_fmadd_ps(a1, x, y);
            a2 = _mm512_fmadd_ps(a2, x, y); a3 = _mm512_fmadd_ps(a3, x, y);
            a4 = _mm512_fmadd_ps(a4, x, y); a5 = _mm512_fmadd_ps(a5, x, y);
            a6 = _mm512_fmadd_ps(a6, x, y); a7 = _mm512_fmadd_ps(a7, x, y);
            a8 = _mm512_fmadd_ps(a8, x, y); a9 = _mm512_fmadd_ps(a9, x, y);
            a10 = _mm512_fmadd_ps(a10, x, y); a11 = _mm512_fmadd_ps(a11, x, y);
        }
        __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                                 _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
        s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
        if (_mm512_reduce_add_ps(s) == 1.0f) printf(" ");
    }
    return omp_get_max_threads() * FMA_ITERS * 12 * 16 * 2.0 / (now() - t0) * 1e-9;
}

/* GFLOP/s (bf16) of 4 TDPBF16PS a step on 16 x 16 x 32 tiles; with_loads: the A and B
 * tiles reloaded each step from the L1-resident ring */
static double amx_peak(int with_loads) {
    double t0 = now();
#pragma omp parallel
    {
        tile_config c;
        memset(&c, 0, sizeof c);
        c.palette = 1;
        for (int i = 0; i < 8; i++) c.rows[i] = 16, c.colsb[i] = 64;
        _tile_loadconfig(&c);
        uint16_t *b = aligned_alloc(64, 32 << 10); /* the ring: 32 KiB, its own a thread */
        memset(b, 0, 32 << 10);
        _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
        _tile_loadd(4, b, 64); _tile_loadd(5, b + 512, 64);
        _tile_loadd(6, b + 1024, 64); _tile_loadd(7, b + 1536, 64);
        for (long i = 0; i < AMX_ITERS; i++) {
            if (with_loads) {
                uint16_t *p = b + (i & 7) * 2048;
                _tile_loadd(4, p, 64); _tile_loadd(5, p + 512, 64);
                _tile_loadd(6, p + 1024, 64); _tile_loadd(7, p + 1536, 64);
            }
            _tile_dpbf16ps(0, 4, 6); _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(2, 5, 6); _tile_dpbf16ps(3, 5, 7);
        }
        _tile_stored(0, b, 64);
        _tile_release();
        free(b);
    }
    return omp_get_max_threads() * AMX_ITERS * 4 * 16 * 16 * 32 * 2.0 / (now() - t0) * 1e-9;
}

/* max |C - A x B| over every 7th row, A x B in double */
static double max_error(const float *A, const float *B, const float *C) {
    double worst = 0;
    for (int i = 0; i < M; i += 7)
        for (int j = 0; j < N; j++) {
            double exact = 0;
            for (int k = 0; k < K; k++) exact += (double)A[(long)i * K + k] * B[(long)k * N + j];
            if (fabs(C[(long)i * N + j] - exact) > worst) worst = fabs(C[(long)i * N + j] - exact);
        }
    return worst;
}

static const int pairs[6][2] = {{0, 0}, {0, 1}, {1, 0}, {0, 2}, {1, 1}, {2, 0}};

/* Tile layouts of the bf16 terms: A as [term][M/16][K/32][16 rows][32 k], B (VNNI) as
 * [term][N/16][K/32][16 k pairs][16 columns][2]; each 16 x 32 tile is 1 KiB contiguous. */
static long a_index(int t, int i, int k) {
    return (((long)t * (M / 16) + i / 16) * (K / 32) + k / 32) * 512 + i % 16 * 32 + k % 32;
}
static long b_index(int t, int k, int j) {
    return (((long)t * (N / 16) + j / 16) * (K / 32) + k / 32) * 512 + k % 32 / 2 * 32 + j % 16 * 2 +
           k % 2;
}
static void split_b(const float *B, int terms, uint16_t *bs) {
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) {
            float r = B[(long)k * N + j];
            for (int t = 0; t < terms; t++) {
                uint16_t h = hc_f32_to_bf16(r);
                bs[b_index(t, k, j)] = h;
                r -= hc_bf16_to_f32(h);
            }
        }
}
/* rows [i0, i1) of A, 16 at a time with AVX512-BF16 conversions (round to nearest even) */
static void split_a(const float *A, int terms, int i0, int i1, uint16_t *as) {
    for (int i = i0; i < i1; i++)
        for (int k = 0; k < K; k += 16) {
            __m512 r = _mm512_loadu_ps(A + (long)i * K + k);
            for (int t = 0; t < terms; t++) {
                __m256bh h = _mm512_cvtneps_pbh(r);
                _mm256_storeu_si256((__m256i *)(as + a_index(t, i, k)), (__m256i)h);
                r = _mm512_sub_ps(r, _mm512_cvtpbh_ps(h));
            }
        }
}
static void config_tiles(void) {
    tile_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int i = 0; i < 8; i++) c.rows[i] = 16, c.colsb[i] = 64;
    _tile_loadconfig(&c);
}

/* C = A x B with `products` bf16 split products on AMX (one thread, one 16 x 16 C tile at
 * a time); returns max |C - exact| over every 7th row */
static double split_error(const float *A, const float *B, int products) {
    int terms = products == 1 ? 1 : products == 3 ? 2 : 3, kb = K / 32;
    uint16_t *as = malloc(2L * terms * M * K), *bs = malloc(2L * terms * K * N);
    float *C = malloc(sizeof(float) * M * N);
    split_a(A, terms, 0, M, as);
    split_b(B, terms, bs);
    config_tiles();
    for (int ib = 0; ib < M / 16; ib++)
        for (int jb = 0; jb < N / 16; jb++) {
            _tile_zero(0);
            for (int k = 0; k < kb; k++)
                for (int p = 0; p < products; p++) {
                    _tile_loadd(1, as + a_index(pairs[p][0], ib * 16, k * 32), 64);
                    _tile_loadd(2, bs + b_index(pairs[p][1], k * 32, jb * 16), 64);
                    _tile_dpbf16ps(0, 1, 2);
                }
            _tile_stored(0, C + (long)ib * 16 * N + jb * 16, N * 4);
        }
    _tile_release();
    double worst = max_error(A, B, C);
    free(as);
    free(bs);
    free(C);
    return worst;
}

/* One blocked run of the 6-product matmul on 2 threads, B split beforehand (the weights):
 * A split at run time (each thread its rows), then each thread takes half of the 32-column
 * panels; for each K chunk of KCHUNK, panel and 32-row block, 2 x 2 C tiles (from memory
 * after the first chunk) meet the chunk's A and B terms: A term t with the B terms of the
 * pairs, 4 dot products a pair. The panel's B chunk (3 terms x KCHUNK x 32) stays in L1
 * across the row blocks. */
#define KCHUNK 128
static void blocked_run(const float *A, const uint16_t *bs, uint16_t *as, float *C) {
    int kb = K / 32, ks = KCHUNK / 32;
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), th = omp_get_thread_num();
        int mb = M / 16, r0 = mb * th / nt * 16, r1 = mb * (th + 1) / nt * 16;
        split_a(A, 3, r0, r1, as);
#pragma omp barrier
        config_tiles();
        int panels = N / 32, p0 = panels * th / nt, p1 = panels * (th + 1) / nt;
        for (int k0 = 0; k0 < kb; k0 += ks)
            for (int jp = p0; jp < p1; jp++)
                for (int ib = 0; ib < M / 32; ib++) {
                    float *c = C + (long)ib * 32 * N + jp * 32;
                    if (k0 == 0) {
                        _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
                    } else {
                        _tile_loadd(0, c, N * 4); _tile_loadd(1, c + 16, N * 4);
                        _tile_loadd(2, c + 16L * N, N * 4); _tile_loadd(3, c + 16L * N + 16, N * 4);
                    }
                    for (int k = k0; k < k0 + ks && k < kb; k++)
                        for (int p = 0, last = -1; p < 6; p++) {
                            if (pairs[p][0] != last) {
                                last = pairs[p][0];
                                _tile_loadd(4, as + a_index(last, ib * 32, k * 32), 64);
                                _tile_loadd(5, as + a_index(last, ib * 32 + 16, k * 32), 64);
                            }
                            _tile_loadd(6, bs + b_index(pairs[p][1], k * 32, jp * 32), 64);
                            _tile_loadd(7, bs + b_index(pairs[p][1], k * 32, jp * 32 + 16), 64);
                            _tile_dpbf16ps(0, 4, 6); _tile_dpbf16ps(1, 4, 7);
                            _tile_dpbf16ps(2, 5, 6); _tile_dpbf16ps(3, 5, 7);
                        }
                    _tile_stored(0, c, N * 4); _tile_stored(1, c + 16, N * 4);
                    _tile_stored(2, c + 16L * N, N * 4); _tile_stored(3, c + 16L * N + 16, N * 4);
                }
        _tile_release();
    }
}

int main(int argc, char **argv) {
    if (argc == 4) M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]);
    if ((argc != 1 && argc != 4) || M <= 0 || N <= 0 || K <= 0 || M % 32 || N % 32 || K % 32) {
        fprintf(stderr, "usage: amx_split [M N K]  (multiples of 32; default 128 768 768)\n");
        return 2;
    }
    if (!has_amx_bf16()) {
        fprintf(stderr, "amx_split: this CPU has no AMX-BF16 or AVX512-BF16\n");
        return 1;
    }
    if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */)) {
        fprintf(stderr, "amx_split: the kernel refuses AMX tile data to this process\n");
        return 1;
    }
    double fma[ROUNDS], amx[ROUNDS], amx_ld[ROUNDS];
    fma_peak(); /* warm-up: frequency */
    for (int r = 0; r < ROUNDS; r++) {
        fma[r] = fma_peak();
        amx[r] = amx_peak(0);
        amx_ld[r] = amx_peak(1);
    }
    double f = median(fma, ROUNDS), x = median(amx, ROUNDS), xl = median(amx_ld, ROUNDS);
    printf("%d threads, medians of %d alternated rounds (GFLOP/s):\n", omp_get_max_threads(), ROUNDS);
    printf("  AVX-512 f32 FMA peak          %7.0f\n", f);
    printf("  AMX bf16, no tile loads       %7.0f  (%.2f x the FMA peak)\n", x, x / f);
    printf("  AMX bf16, L1 tile loads       %7.0f  (%.2f x)\n", xl, xl / f);
    printf("f32-equivalent ceilings, as a share of the FMA peak (no loads / L1 loads):\n");
    for (int p = 1; p <= 6; p *= (p == 1 ? 3 : 2))
        printf("  %d bf16 product%s: %.2f / %.2f\n", p, p > 1 ? "s" : " ", x / p / f, xl / p / f);

    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
    srand(1);
    for (long i = 0; i < (long)M * K; i++) A[i] = rand() / (float)RAND_MAX * 2 - 1;
    for (long i = 0; i < (long)K * N; i++) B[i] = (rand() / (float)RAND_MAX * 2 - 1) * 0.05f;
    double f32err = 0;
    for (int i = 0; i < M; i += 7)
        for (int j = 0; j < N; j++) {
            float c = 0;
            double exact = 0;
            for (int k = 0; k < K; k++) {
                c = fmaf(A[(long)i * K + k], B[(long)k * N + j], c);
                exact += (double)A[(long)i * K + k] * B[(long)k * N + j];
            }
            if (fabs(c - exact) > f32err) f32err = fabs(c - exact);
        }
    printf("max |error| on a %d x %d x %d matmul against double: f32 FMA loop %.1e; "
           "1 product %.1e, 3 products %.1e, 6 products %.1e\n",
           M, N, K, f32err, split_error(A, B, 1), split_error(A, B, 3), split_error(A, B, 6));
    uint16_t *as = aligned_alloc(64, 2L * 3 * M * K), *bs = aligned_alloc(64, 2L * 3 * K * N);
    float *C = aligned_alloc(64, sizeof(float) * M * N);
    split_b(B, 3, bs);
    double ms[100];
    for (int r = 0; r < 3; r++) blocked_run(A, bs, as, C); /* warm-up */
    for (int r = 0; r < 100; r++) {
        double t0 = now();
        blocked_run(A, bs, as, C);
        ms[r] = (now() - t0) * 1e3;
    }
    double worst = max_error(A, B, C);
    double med = median(ms, 100);
    printf("blocked 6-product kernel, %d x %d x %d, A split included: median_ms %.4f "
           "(%.0f GFLOP/s f32-equivalent), max |error| %.1e\n",
           M, N, K, med, 2.0 * M * N * K / med * 1e-6, worst);
    free(as);
    free(bs);
    free(C);
    free(A);
    free(B);
    return 0;
}
