/* fuzz.h — shared by the libFuzzer harnesses (docs/reliability.md).
 *
 * Each harness defines FUZZ_ENTRY(name): LLVMFuzzerTestOneInput when built as a fuzzer
 * (fuzz/CMakeLists.txt), fuzz_<name> when tests/test_fuzz_regress.c includes it to replay
 * the kept crash inputs under tests/fuzz-regress/ in `make test`. A harness returns 0 and
 * aborts (FUZZ_CHECK) only when the library broke a promise: a failure without a
 * message, a round trip that changes the value. */
#ifndef HC_FUZZ_H
#define HC_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HC_FUZZ_REGRESS
#define FUZZ_ENTRY(name) int fuzz_##name(const uint8_t *data, size_t size)
#else
#define FUZZ_ENTRY(name) int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
#endif

#define FUZZ_CHECK(cond, ...)                                                                   \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "fuzz check failed at %s:%d: %s: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                                       \
            fputc('\n', stderr);                                                                \
            abort();                                                                            \
        }                                                                                       \
    } while (0)

/* A failure must say what failed, naming the input (`name`). */
#define FUZZ_CHECK_ERROR(err, name)                                                             \
    FUZZ_CHECK((err).msg[0] && strstr((err).msg, (name)), "message '%s' lacks '%s'",           \
               (err).msg, (name))

#endif
