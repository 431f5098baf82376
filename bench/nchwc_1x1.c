/* nchwc_1x1.c — a probe, not part of the library: a 1x1 convolution (+ ReLU) in the
 * channel-blocked layout NCHW16c, with the output channels on the vector lanes and no
 * packing of either operand, to measure what such a conv template could reach on ResNet-50's
 * 1x1 shapes against hidetc's im2col/matmul path (which packs the activations into B panels
 * on every call) and ONNX Runtime's NCHWc convs. A register tile is PT pixels x OB output
 * blocks of 16 channels (24 accumulators): per input channel, OB weight vectors and PT
 * broadcasts of input pixels feed PT * OB FMAs. 2 threads split the pixel tiles. It checks
 * 200 outputs against a reference in double and prints best / median time and GFLOP/s.
 *
 *   cc -O3 -march=native -fopenmp [-DC=256 -DOC=64 -DP=3136] bench/nchwc_1x1.c -o nchwc_1x1 -lm
 *   OMP_NUM_THREADS=2 OMP_PROC_BIND=close ./nchwc_1x1
 *
 * Measured (2026-12-01, this 2-core AVX-512 machine, medians of 200 runs): C -> OC on P
 * pixels: 256 -> 64 on 3136 0.234-0.260 ms (395-440 GFLOP/s over 4 runs), 64 -> 256 on 3136 0.263 (391),
 * 1024 -> 256 on 196 0.313 (328), 128 -> 512 on 784 0.274 (375), 512 -> 128 on 784 0.271
 * (380). hidetc's matmul path on the same shapes alone: 0.39, 0.31, 0.34-0.36, 0.30 (512 x
 * 784 x 128) ms (`hidetc kernel matmul --bench`, 240-300 GFLOP/s). */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#ifndef C
#define C 256
#endif
#ifndef OC
#define OC 64
#endif
#ifndef P
#define P 3136
#endif
#define PT 6   // pixels per tile
#define OB 4   // output-channel blocks per tile (OB*16 = 64 channels)
static float *X, *W, *Y;
static void conv(void) {
    // X[C/16][P][16], W[OC/16][C][16], Y[OC/16][P][16]
    #pragma omp parallel for schedule(static)
    for (int pt = 0; pt < P / PT + (P % PT != 0); pt++) {
        int p0 = pt * PT, np = P - p0 < PT ? P - p0 : PT;
        for (int ob0 = 0; ob0 < OC / 16; ob0 += OB) {
            __m512 acc[PT][OB];
            for (int i = 0; i < PT; i++) for (int o = 0; o < OB; o++) acc[i][o] = _mm512_setzero_ps();
            for (int cb = 0; cb < C / 16; cb++) {
                const float *xb = X + ((size_t)cb * P + p0) * 16;
                for (int cc = 0; cc < 16; cc++) {
                    int c = cb * 16 + cc;
                    __m512 w[OB];
                    for (int o = 0; o < OB; o++) w[o] = _mm512_load_ps(W + ((size_t)(ob0 + o) * C + c) * 16);
                    for (int i = 0; i < PT; i++) {
                        __m512 x = _mm512_set1_ps(xb[(i < np ? i : 0) * 16 + cc]);
                        for (int o = 0; o < OB; o++) acc[i][o] = _mm512_fmadd_ps(x, w[o], acc[i][o]);
                    }
                }
            }
            for (int i = 0; i < np; i++)
                for (int o = 0; o < OB; o++)
                    _mm512_store_ps(Y + ((size_t)(ob0 + o) * P + p0 + i) * 16, _mm512_max_ps(acc[i][o], _mm512_setzero_ps()));
        }
    }
}
int main(void) {
    X = aligned_alloc(64, sizeof(float) * C * P); W = aligned_alloc(64, sizeof(float) * OC * C);
    Y = aligned_alloc(64, sizeof(float) * OC * P);
    for (int i = 0; i < C * P; i++) X[i] = (float)((i * 37u) % 101) / 101.0f - 0.5f;
    for (int i = 0; i < OC * C; i++) W[i] = (float)((i * 53u) % 103) / 103.0f - 0.5f;
    conv();
    // check a few outputs against a plain reference (X[c][p] = X[c/16][p][c%16], W[oc][c] = W[oc/16][c][oc%16])
    double maxerr = 0;
    for (int t = 0; t < 200; t++) {
        int oc = (t * 7) % OC, p = (t * 131) % P; double s = 0;
        for (int c = 0; c < C; c++) s += (double)X[((c / 16) * P + p) * 16 + c % 16] * W[((oc / 16) * C + c) * 16 + oc % 16];
        if (s < 0) s = 0;
        double e = fabs(s - Y[((oc / 16) * P + p) * 16 + oc % 16]); if (e > maxerr) maxerr = e;
    }
    double best = 1e9, times[200];
    for (int r = 0; r < 200; r++) { double t = omp_get_wtime(); conv(); times[r] = omp_get_wtime() - t; if (times[r] < best) best = times[r]; }
    // median
    for (int i = 0; i < 200; i++) for (int j = i + 1; j < 200; j++) if (times[j] < times[i]) { double x = times[i]; times[i] = times[j]; times[j] = x; }
    printf("max err %.2g; best %.4f ms, median %.4f ms, %.0f GFLOP/s (median)\n", maxerr, best * 1e3, times[100] * 1e3, 2.0 * C * OC * P / times[100] / 1e9);
    free(X), free(W), free(Y);
    return maxerr < 1e-4 ? 0 : 1;
}
