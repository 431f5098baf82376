/* test.h — a minimal test harness: CHECK macros count failures; each test program ends
 * with TEST_DONE(), which prints "N passed, N failed" and returns non-zero on failure. */
#ifndef HC_TEST_H
#define HC_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int test_passed, test_failed;

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (cond) test_passed++;                                                         \
        else {                                                                           \
            test_failed++;                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);     \
        }                                                                                \
    } while (0)
#define CHECK_MSG(cond, ...)                                                             \
    do {                                                                                 \
        if (cond) test_passed++;                                                         \
        else {                                                                           \
            test_failed++;                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
        }                                                                                \
    } while (0)
#define CHECK_EQ_INT(a, b)                                                               \
    do {                                                                                 \
        long long _a = (long long)(a), _b = (long long)(b);                              \
        CHECK_MSG(_a == _b, "%lld != %lld", _a, _b);                                     \
    } while (0)
#define CHECK_STR(a, b)                                                                  \
    do {                                                                                 \
        const char *_a = (a), *_b = (b);                                                 \
        CHECK_MSG(strcmp(_a, _b) == 0, "\n--- got:\n%s\n--- expected:\n%s", _a, _b);      \
    } while (0)
#define CHECK_NEAR(a, b, tol)                                                            \
    do {                                                                                 \
        double _a = (a), _b = (b);                                                       \
        CHECK_MSG(fabs(_a - _b) <= (tol), "%g vs %g (tol %g)", _a, _b, (double)(tol));   \
    } while (0)

/* max |x - y| / max(1, |y|) over n elements (y: the reference); a NaN anywhere (an element
 * never written) makes it infinite */
static inline double max_rel_err(const float *x, const float *y, long long n) {
    double e = 0;
    for (long long i = 0; i < n; i++) {
        double d = fabs((double)x[i] - (double)y[i]) / fmax(1.0, fabs((double)y[i]));
        if (isnan(d) || d > e) e = isnan(d) ? INFINITY : d;
    }
    return e;
}

/* Non-overlapping occurrences of needle in hay. */
static inline int count_str(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

#define TEST_DONE()                                                                      \
    do {                                                                                 \
        printf("%d passed, %d failed\n", test_passed, test_failed);                     \
        return test_failed ? 1 : 0;                                                      \
    } while (0)

#endif
