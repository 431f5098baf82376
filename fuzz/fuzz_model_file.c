/* fuzz_model_file.c — the compiled-model file loader (src/runtime/model_file.c) through
 * hc_model_file_check: every check hc_model_load makes, and never a dlopen. Most inputs
 * get their header's size and checksum fixed first, so that mutations reach the parser
 * behind the checksum (a file with a wrong checksum is refused before anything else);
 * inputs whose size is a multiple of 16 go in as they are. */
#include "fuzz.h"

#include "runtime/runtime_internal.h"

FUZZ_ENTRY(model_file) {
    uint8_t *buf = malloc(size ? size : 1);
    if (size) memcpy(buf, data, size);
    if (size >= 32 && size % 16 != 0 && !memcmp(buf, "\x89HCMODEL", 8)) {
        uint64_t n = size, sum = hc_model_file_checksum(buf + 32, size - 32);
        for (int i = 0; i < 8; i++) buf[16 + i] = (uint8_t)(n >> 8 * i), buf[24 + i] = (uint8_t)(sum >> 8 * i);
    }
    hc_error err = {0};
    if (hc_model_file_check(buf, size, "fuzz.hcm", &err) != HC_OK) FUZZ_CHECK_ERROR(err, "fuzz.hcm");
    free(buf);
    return 0;
}
