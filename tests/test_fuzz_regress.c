/* test_fuzz_regress.c — every input kept under tests/fuzz-regress/<harness>/ (crashes the
 * fuzzers found, fixed since; docs/reliability.md) replayed through its harness, built
 * here without libFuzzer: a harness aborts on a broken promise, a crash is a crash. Also
 * a few fixed inputs per harness, so that each harness runs even with no crash kept. */
#define HC_FUZZ_REGRESS
#include "../fuzz/fuzz_mapping.c"
#include "../fuzz/fuzz_model_file.c"
#include "../fuzz/fuzz_npy.c"
#include "../fuzz/fuzz_onnx.c"
#include "../fuzz/fuzz_records.c"

#include <dirent.h>

#include "test.h"

typedef int (*harness_fn)(const uint8_t *, size_t);

static int replay_dir(const char *name, harness_fn fn) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fuzz-regress/%s", HC_SOURCE_DIR, name);
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *bytes = NULL;
        size_t size = 0;
        if (hc_read_file(path, &bytes, &size, NULL) != HC_OK) continue;
        fprintf(stderr, "replay %s\n", path);
        CHECK(fn((const uint8_t *)bytes, size) == 0); /* a crash ends the test instead */
        free(bytes);
        n++;
    }
    closedir(d);
    return n;
}

static void run_text(harness_fn fn, const char *text) {
    CHECK(fn((const uint8_t *)text, strlen(text)) == 0);
}

int main(void) {
    int kept = 0;
    kept += replay_dir("onnx", fuzz_onnx);
    kept += replay_dir("npy", fuzz_npy);
    kept += replay_dir("model-file", fuzz_model_file);
    kept += replay_dir("mapping", fuzz_mapping);
    kept += replay_dir("records", fuzz_records);
    fprintf(stderr, "%d kept inputs replayed\n", kept);
    /* each harness once on inputs of each kind: good, bad, empty */
    run_text(fuzz_mapping, "spatial(4,8).repeat(2u,2)");
    run_text(fuzz_mapping, "auto_map((8,96),64)");
    run_text(fuzz_mapping, "spatial(9223372036854775807,2)");
    run_text(fuzz_mapping, "");
    run_text(fuzz_records, "hidetc-tune 1\nbest 3\nbest_ms 0.5\nncand 24\n");
    run_text(fuzz_records, "hidetc-so 1\nsize 12\nhash 0123456789abcdef0123456789abcdef\n");
    run_text(fuzz_records, "hidetc-tune 1\nbest 30\nncand 24\n");
    run_text(fuzz_npy, "\x93NUMPY\x01");
    run_text(fuzz_model_file, "\x89HCMODEL");
    run_text(fuzz_onnx, "\x08\x07");
    int64_t shape[2] = {2, 3};
    float v[6] = {1, 2, 3, 4, 5, 6};
    size_t n = 0;
    char *img = hc_npy_encode(HC_F32, 2, shape, v, &n, NULL);
    CHECK(img && fuzz_npy((const uint8_t *)img, n) == 0);
    free(img);
    TEST_DONE();
}
