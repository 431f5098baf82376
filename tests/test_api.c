/* The public API: a matmul through include/hidetc.h against a naive loop, and errors. */
#include <hidetc.h>
#include <stdlib.h>

#include "test.h"

static void naive(int64_t b, int64_t m, int64_t n, int64_t k, const float *A, const float *B,
                  float *C) {
    for (int64_t q = 0; q < b; q++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < k; p++)
                    s += (double)A[(q * m + i) * k + p] * B[(q * k + p) * n + j];
                C[(q * m + i) * n + j] = (float)s;
            }
}

static void check_shape(int64_t b, int64_t m, int64_t n, int64_t k, int threads) {
    float *A = malloc(sizeof(float) * b * m * k), *B = malloc(sizeof(float) * b * k * n);
    float *C = malloc(sizeof(float) * b * m * n), *R = malloc(sizeof(float) * b * m * n);
    unsigned s = 7;
    for (int64_t i = 0; i < b * m * k; i++) A[i] = (float)((s = s * 1103515245 + 12345) % 1000) / 500 - 1;
    for (int64_t i = 0; i < b * k * n; i++) B[i] = (float)((s = s * 1103515245 + 12345) % 1000) / 500 - 1;
    hidetc_matmul *mm = NULL;
    hidetc_options opt = {.num_threads = threads};
    CHECK_MSG(hidetc_matmul_init(&mm, b, m, n, k, &opt) == HIDETC_OK, "%s", hidetc_last_error());
    if (mm) {
        CHECK(hidetc_matmul_run(mm, A, B, C) == HIDETC_OK);
        naive(b, m, n, k, A, B, R);
        double worst = 0;
        for (int64_t i = 0; i < b * m * n; i++) worst = fmax(worst, fabs(C[i] - R[i]));
        CHECK_MSG(worst < 1e-3 * (1 + sqrt((double)k)), "b%lld m%lld n%lld k%lld: err %g",
                  (long long)b, (long long)m, (long long)n, (long long)k, worst);
        hidetc_matmul_free(mm);
    }
    free(A), free(B), free(C), free(R);
}

int main(void) {
    CHECK_STR(hidetc_version(), "0.1.0");
    check_shape(1, 37, 53, 29, 1);
    check_shape(3, 5, 17, 1, 2);
    check_shape(1, 1, 1, 1, 2);

    hidetc_matmul *mm = (hidetc_matmul *)&mm;
    CHECK(hidetc_matmul_init(&mm, 1, 0, 4, 4, NULL) == HIDETC_ERR_INVALID);
    CHECK(mm == NULL);
    CHECK(strlen(hidetc_last_error()) > 0);
    CHECK(hidetc_matmul_init(NULL, 1, 4, 4, 4, NULL) == HIDETC_ERR_INVALID);
    CHECK(hidetc_matmul_run(NULL, NULL, NULL, NULL) == HIDETC_ERR_INVALID);
    hidetc_matmul_free(NULL);
    TEST_DONE();
}
