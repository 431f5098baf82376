/* test_matmul.c — the CPU matmul template against the reference interpreter, its config
 * validation, and the .npy reader/writer (src/core/npy.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/npy.h"
#include "target/cpu/cpu.h"
#include "target/cpu/templates/matmul.h"
#include "test.h"

/* ---- .npy ------------------------------------------------------------------------- */
static void test_npy_roundtrip(void) {
    static const hc_dtype dtypes[] = {HC_F16, HC_F32, HC_F64, HC_I8,  HC_I16, HC_I32,
                                      HC_I64, HC_U8,  HC_U16, HC_U32, HC_U64, HC_BOOL};
    int64_t shapes[3][3] = {{0}, {5}, {2, 3, 4}};
    int ndims[3] = {0, 1, 3};
    for (size_t d = 0; d < HC_ARRAY_LEN(dtypes); d++) {
        for (int s = 0; s < 3; s++) {
            int64_t n = 1;
            for (int i = 0; i < ndims[s]; i++) n *= shapes[s][i];
            size_t bytes = (size_t)n * (size_t)hc_dtype_size(dtypes[d]);
            unsigned char *data = malloc(bytes);
            for (size_t i = 0; i < bytes; i++) data[i] = (unsigned char)(i * 37 + d);
            if (dtypes[d] == HC_BOOL)
                for (size_t i = 0; i < bytes; i++) data[i] &= 1;
            size_t size;
            hc_error err;
            char *img = hc_npy_encode(dtypes[d], ndims[s], shapes[s], data, &size, &err);
            CHECK(img != NULL);
            if (!img) continue;
            CHECK_EQ_INT((size - bytes) % 64, 0); /* data starts on a 64-byte boundary */
            CHECK(img[size - bytes - 1] == '\n');
            hc_npy arr;
            hc_status st = hc_npy_parse(img, size, "mem", &arr, &err);
            CHECK_MSG(st == HC_OK, "%s", err.msg);
            if (!st) {
                CHECK_EQ_INT(arr.dtype, dtypes[d]);
                CHECK_EQ_INT(arr.ndim, ndims[s]);
                for (int i = 0; i < ndims[s]; i++) CHECK_EQ_INT(arr.shape[i], shapes[s][i]);
                CHECK(memcmp(arr.data, data, bytes) == 0);
                hc_npy_free(&arr);
            }
            free(img);
            free(data);
        }
    }
}

/* A hand-written file (as NumPy writes it) with header text `dict` and `nbytes` of data. */
static char *make_npy(const char *dict, int major, size_t nbytes, size_t *size) {
    size_t hlen = strlen(dict), pre = major == 1 ? 10 : 12;
    *size = pre + hlen + nbytes;
    char *p = calloc(1, *size);
    memcpy(p, "\x93NUMPY", 6);
    p[6] = (char)major;
    for (size_t i = 0; i < pre - 8; i++) p[8 + i] = (char)(hlen >> (8 * i));
    memcpy(p + pre, dict, hlen);
    for (size_t i = 0; i < nbytes; i++) p[pre + hlen + i] = (char)i;
    return p;
}

static void expect_npy_error(const char *dict, int major, size_t nbytes, const char *needle) {
    size_t size;
    char *img = make_npy(dict, major, nbytes, &size);
    hc_npy arr;
    hc_error err = {0};
    hc_status st = hc_npy_parse(img, size, "x.npy", &arr, &err);
    CHECK_MSG(st == HC_ERR_INVALID, "accepted: %s", dict);
    CHECK_MSG(strstr(err.msg, needle) && strstr(err.msg, "x.npy"), "%s: message '%s' lacks '%s'",
              dict, err.msg, needle);
    free(img);
}

static void test_npy_files(void) {
    /* hand-written headers in the styles NumPy produces (v1 and v2, spacing, 1-tuples) */
    size_t size;
    char *img = make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }   \n", 1,
                         24, &size);
    hc_npy arr;
    hc_error err;
    CHECK(hc_npy_parse(img, size, "x.npy", &arr, &err) == HC_OK);
    CHECK(arr.dtype == HC_F32 && arr.ndim == 2 && arr.shape[0] == 2 && arr.shape[1] == 3);
    CHECK(((unsigned char *)arr.data)[23] == 23);
    hc_npy_free(&arr);
    free(img);
    img = make_npy("{\"descr\":\"|u1\",\"fortran_order\":True,\"shape\":(7,)}\n", 2, 7, &size);
    CHECK(hc_npy_parse(img, size, "x.npy", &arr, &err) == HC_OK); /* 1-D Fortran = C order */
    CHECK(arr.dtype == HC_U8 && arr.ndim == 1 && arr.shape[0] == 7);
    hc_npy_free(&arr);
    free(img);

    expect_npy_error("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 1, 8,
                     "big-endian");
    expect_npy_error("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 1, 16, "c8");
    expect_npy_error("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 1, 16,
                     "Fortran");
    expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 1, 20,
                     "data is 20 bytes");
    expect_npy_error("{'descr': '<f4', 'shape': (2,), }", 1, 8, "fortran_order");
    expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", 1, 8,
                     "shape");
    expect_npy_error("['descr']", 1, 0, "dict");

    char bad[16] = "\x93NUMPZ\x01\x00\x00\x00";
    CHECK(hc_npy_parse(bad, sizeof bad, "x.npy", &arr, &err) == HC_ERR_INVALID);
    CHECK(strstr(err.msg, "magic") != NULL);
    img = make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 1, 4, &size);
    img[8] = (char)0xff, img[9] = (char)0x7f; /* header length past the end */
    CHECK(hc_npy_parse(img, size, "x.npy", &arr, &err) == HC_ERR_INVALID);
    CHECK(strstr(err.msg, "header length") != NULL);
    free(img);

    /* files: write, read back, and a missing file */
    char path[256];
    snprintf(path, sizeof path, "/tmp/hc_test_npy_%d.npy", (int)getpid());
    double vals[6] = {1.5, -2, 3, 1e300, -0.0, 7};
    CHECK(hc_npy_write(path, HC_F64, 2, (int64_t[]){3, 2}, vals, &err) == HC_OK);
    CHECK(hc_npy_read(path, &arr, &err) == HC_OK);
    CHECK(arr.dtype == HC_F64 && hc_npy_numel(&arr) == 6);
    CHECK(memcmp(arr.data, vals, sizeof vals) == 0);
    hc_npy_free(&arr);
    remove(path);
    CHECK(hc_npy_read(path, &arr, &err) == HC_ERR_IO);
    CHECK(hc_npy_write(path, HC_BF16, 1, (int64_t[]){1}, vals, &err) == HC_ERR_UNSUPPORTED);
}

/* ---- configs ----------------------------------------------------------------------- */
static void test_configs(void) {
    const hc_target *t = hc_target_host();
    hc_matmul_shape shapes[] = {{1, 1, 1, 1}, {1, 1, 1000, 2048}, {4, 128, 768, 3072},
                                {1, 3136, 64, 576}, {1, 2039, 2039, 2039}};
    hc_error err;
    for (size_t i = 0; i < HC_ARRAY_LEN(shapes); i++) {
        hc_matmul_config c = hc_matmul_default_config(t, &shapes[i]);
        CHECK_MSG(hc_matmul_validate(&c, &err) == HC_OK, "%s", err.msg);
        CHECK_EQ_INT(c.lanes, hc_target_f32_lanes(t));
        CHECK(c.tb * c.tm * c.tn == HC_MAX(t->caps.num_cores, 1));
        for (int th = 1; th <= 6; th++) {
            hc_matmul_config_set_threads(&c, &shapes[i], th);
            CHECK_EQ_INT(c.tb * c.tm * c.tn, th);
        }
    }
    /* many small matrices: threads take whole batches; one tall-thin matrix: rows. On
     * stated machines with 16 and 8 lanes (with 4 lanes the tall matrix's 16 columns are
     * two whole 8-column tiles and its rows pad, so the split cost picks columns) */
    const hc_target machines[] = {
        hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 << 10, 2 << 20, 105 << 20),
        hc_target_cpu_describe(HC_ISA_AVX2, 2, 32 << 10, 1 << 20, 32 << 20),
    };
    hc_matmul_shape many = {8, 16, 16, 16}, tall = {1, 4096, 16, 64}, wide = {1, 1, 4096, 64};
    hc_matmul_config c;
    for (size_t mi = 0; mi < HC_ARRAY_LEN(machines); mi++) {
        const hc_target *m = &machines[mi];
        const char *isa = hc_isa_name(m->caps.isa);
        c = hc_matmul_default_config(m, &many);
        hc_matmul_config_set_threads(&c, &many, 2);
        CHECK_MSG(c.tb == 2 && c.tm == 1 && c.tn == 1, "%s", isa);
        c = hc_matmul_default_config(m, &tall);
        hc_matmul_config_set_threads(&c, &tall, 2);
        CHECK_MSG(c.tb == 1 && c.tm == 2 && c.tn == 1, "%s", isa);
        c = hc_matmul_default_config(m, &wide);
        hc_matmul_config_set_threads(&c, &wide, 2);
        CHECK_MSG(c.tb == 1 && c.tm == 1 && c.tn == 2, "%s", isa);
    }
    /* register tile rows: the fewest padded rows past 5% of padding, never fewer than 10
     * accumulators (AVX2: 5 rows of 2 vectors; AVX-512: 8 rows, down to 5), all of a
     * tiny M */
    static const struct {
        int machine;
        int64_t m;
        int mr;
    } rows[] = {{1, 16, 6}, {1, 32, 5}, {1, 49, 5}, {1, 128, 6}, {1, 3, 3},
                {0, 49, 7}, {0, 16, 8}, {0, 20, 5}, {0, 128, 8}, {0, 2, 2}};
    for (size_t i = 0; i < HC_ARRAY_LEN(rows); i++) {
        hc_matmul_shape r = {1, rows[i].m, 512, 256};
        c = hc_matmul_default_config(&machines[rows[i].machine], &r);
        CHECK_MSG(c.mr == rows[i].mr, "%s, M = %lld: mr %d, want %d",
                  hc_isa_name(machines[rows[i].machine].caps.isa), (long long)rows[i].m, c.mr,
                  rows[i].mr);
    }
    /* K blocks: a B micro-panel of 1.5 x L1 before K splits into equal blocks, whatever
     * the core (the A block's share of L2 follows kc); half of L1 where
     * hc_matmul_half_l1_panel_pays: Sapphire/Emerald Rapids, AVX-512, constant B and
     * not A, a thread's share of C in half of L2 */
    static const struct {
        hc_isa isa;
        int64_t l1, k, kc, mc, half_kc, half_mc;
    } kblocks[] = {
        {HC_ISA_AVX512, 48 << 10, 768, 384, 168, 192, 336},
        {HC_ISA_AVX512, 48 << 10, 3072, 512, 128, 192, 336},
        {HC_ISA_AVX512, 48 << 10, 100, 104, 624, 104, 624},
        {HC_ISA_AVX512, 32 << 10, 768, 384, 168, 128, 512},
        {HC_ISA_AVX2, 48 << 10, 768, 768, 84, 384, 168},
    };
    for (size_t i = 0; i < HC_ARRAY_LEN(kblocks); i++) {
        hc_target m = hc_target_cpu_describe(kblocks[i].isa, 2, kblocks[i].l1, 2 << 20, 105 << 20);
        CHECK_EQ_INT(m.caps.core, HC_CORE_OTHER); /* a stated machine names no core */
        for (int core = 0; core < 2; core++) {
            m.caps.core = core ? HC_CORE_INTEL_SPR : HC_CORE_OTHER;
            hc_matmul_shape ks = {1, 128, 3072, kblocks[i].k};
            c = hc_matmul_default_config(&m, &ks);
            CHECK_MSG(c.kc == kblocks[i].kc && c.mc == kblocks[i].mc,
                      "%s L1 %lld K %lld core %d: kc %lld mc %lld, want %lld %lld",
                      hc_isa_name(kblocks[i].isa), (long long)kblocks[i].l1,
                      (long long)kblocks[i].k, core, (long long)c.kc, (long long)c.mc,
                      (long long)kblocks[i].kc, (long long)kblocks[i].mc);
            hc_matmul_config_set_kc(&c, &ks, &m, 0.5);
            CHECK_MSG(c.kc == kblocks[i].half_kc && c.mc == kblocks[i].half_mc,
                      "%s L1 %lld K %lld, half of L1: kc %lld mc %lld, want %lld %lld",
                      hc_isa_name(kblocks[i].isa), (long long)kblocks[i].l1,
                      (long long)kblocks[i].k, (long long)c.kc, (long long)c.mc,
                      (long long)kblocks[i].half_kc, (long long)kblocks[i].half_mc);
        }
    }
    {
        hc_target spr = hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 << 10, 2 << 20, 105 << 20);
        hc_target spr2 = hc_target_cpu_describe(HC_ISA_AVX2, 2, 48 << 10, 2 << 20, 105 << 20);
        hc_target other = spr;
        spr.caps.core = spr2.caps.core = HC_CORE_INTEL_SPR;
        hc_matmul_shape ffn = {1, 128, 3072, 768}, head = {1, 128, 50257, 768},
                        ffn8 = {1, 1024, 3072, 768}, batched = {8, 128, 3072, 768};
        c = hc_matmul_default_config(&spr, &ffn); /* 2 threads: 786 KB of C each */
        CHECK(hc_matmul_half_l1_panel_pays(&c, &ffn, &spr, false, true));
        CHECK(!hc_matmul_half_l1_panel_pays(&c, &ffn, &spr, true, true));   /* A constant */
        CHECK(!hc_matmul_half_l1_panel_pays(&c, &ffn, &spr, false, false)); /* B not */
        CHECK(!hc_matmul_half_l1_panel_pays(&c, &ffn, &other, false, true)); /* other core */
        c = hc_matmul_default_config(&spr2, &ffn);
        CHECK(!hc_matmul_half_l1_panel_pays(&c, &ffn, &spr2, false, true)); /* AVX2 code */
        c = hc_matmul_default_config(&spr, &head); /* an LM head: 12.9 MB of C a thread */
        CHECK(!hc_matmul_half_l1_panel_pays(&c, &head, &spr, false, true));
        hc_matmul_shape gemv = {1, 1, 1000, 1280}, short_m = {1, 32, 3072, 768};
        c = hc_matmul_default_config(&spr, &gemv); /* one row: B read once */
        CHECK(!hc_matmul_half_l1_panel_pays(&c, &gemv, &spr, false, true));
        c = hc_matmul_default_config(&spr, &short_m); /* 4 row tiles of 8 */
        CHECK(!hc_matmul_half_l1_panel_pays(&c, &short_m, &spr, false, true));
        c = hc_matmul_default_config(&spr, &ffn8);
        CHECK(!hc_matmul_half_l1_panel_pays(&c, &ffn8, &spr, false, true));
        c = hc_matmul_default_config(&spr, &batched); /* a B per batch (Winograd) */
        CHECK(!hc_matmul_half_l1_panel_pays(&c, &batched, &spr, false, true));
        hc_matmul_config_set_threads(&c, &ffn, 1); /* one thread: 1.5 MB of C */
        CHECK(!hc_matmul_half_l1_panel_pays(&c, &ffn, &spr, false, true));
        /* one K block where a thread's C exceeds half of L2 and K x 32 columns take at most
         * twice L1: BERT's K = 768 matmuls at batch 8, the LM head; not K = 3072, not
         * where the half-L1 rule holds, nor on another core, for AVX2 code, for constant A
         * or for non-constant B */
        hc_matmul_shape ffn8_out = {1, 1024, 768, 3072}, k800 = {1, 1024, 3072, 800};
        c = hc_matmul_default_config(&spr, &ffn8);
        CHECK(hc_matmul_one_kblock_pays(&c, &ffn8, &spr, false, true));
        hc_matmul_config_set_one_kblock(&c, &ffn8, &spr);
        CHECK_EQ_INT(c.kc, 768);
        CHECK_EQ_INT(c.mc, 80); /* 2 MiB / 8 / (768 x 4), in whole register tiles */
        CHECK(!hc_matmul_one_kblock_pays(&c, &ffn8, &spr, false, true)); /* kc is K now */
        c = hc_matmul_default_config(&spr, &head);
        CHECK(hc_matmul_one_kblock_pays(&c, &head, &spr, false, true));
        c = hc_matmul_default_config(&spr, &ffn8_out);
        CHECK(!hc_matmul_one_kblock_pays(&c, &ffn8_out, &spr, false, true));
        c = hc_matmul_default_config(&spr, &k800); /* 102400 bytes > 2 x 48 KiB */
        CHECK(!hc_matmul_one_kblock_pays(&c, &k800, &spr, false, true));
        c = hc_matmul_default_config(&spr, &ffn);
        CHECK(!hc_matmul_one_kblock_pays(&c, &ffn, &spr, false, true));
        c = hc_matmul_default_config(&spr, &ffn8);
        CHECK(!hc_matmul_one_kblock_pays(&c, &ffn8, &other, false, true));
        CHECK(!hc_matmul_one_kblock_pays(&c, &ffn8, &spr, true, true));
        CHECK(!hc_matmul_one_kblock_pays(&c, &ffn8, &spr, false, false));
        c = hc_matmul_default_config(&spr2, &ffn8);
        CHECK(!hc_matmul_one_kblock_pays(&c, &ffn8, &spr2, false, true));
        /* Zen 5 (48 KiB of L1, 1 MiB of L2): one K block where a thread's C exceeds all of
         * L2 (BERT at batch 8: 6.3 MB, the LM head: 12.9 MB), not at 786 KB (BERT's FFN-in
         * at batch 1, where the partial sums stay in L2); never the half-L1 rule */
        hc_target zen5 = hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 << 10, 1 << 20, 32 << 20);
        hc_target zen5_avx2 = hc_target_cpu_describe(HC_ISA_AVX2, 2, 48 << 10, 1 << 20, 32 << 20);
        zen5.caps.core = zen5_avx2.caps.core = HC_CORE_AMD_ZEN5;
        c = hc_matmul_default_config(&zen5, &ffn8);
        CHECK(hc_matmul_one_kblock_pays(&c, &ffn8, &zen5, false, true));
        CHECK(!hc_matmul_half_l1_panel_pays(&c, &ffn8, &zen5, false, true));
        c = hc_matmul_default_config(&zen5, &head);
        CHECK(hc_matmul_one_kblock_pays(&c, &head, &zen5, false, true));
        hc_matmul_config_set_one_kblock(&c, &head, &zen5);
        CHECK_EQ_INT(c.kc, 768);
        CHECK_EQ_INT(c.mc, 40); /* 1 MiB / 8 / (768 x 4), in whole register tiles */
        c = hc_matmul_default_config(&zen5, &ffn);
        CHECK(!hc_matmul_one_kblock_pays(&c, &ffn, &zen5, false, true));
        CHECK(!hc_matmul_half_l1_panel_pays(&c, &ffn, &zen5, false, true));
        c = hc_matmul_default_config(&zen5, &ffn8_out); /* K = 3072: 384 KiB a panel */
        CHECK(!hc_matmul_one_kblock_pays(&c, &ffn8_out, &zen5, false, true));
        c = hc_matmul_default_config(&zen5_avx2, &ffn8);
        CHECK(!hc_matmul_one_kblock_pays(&c, &ffn8, &zen5_avx2, false, true));
    }
    /* B kept in L2 (hc_matmul_b_stationary_pays) where the default's A block holds fewer
     * than 4 row tiles: a 2-core AVX2 machine with 512 KiB of L2 (Zen 3; 18 rows at kc
     * 768), for constant B and not A, several row tiles, a thread's B block past half of
     * L2; not with 2 MiB (84 rows), nor on the AVX-512 machine */
    {
        hc_target zen3 = hc_target_cpu_describe(HC_ISA_AVX2, 2, 32 << 10, 512 << 10, 32 << 20);
        hc_target avx2_2m = hc_target_cpu_describe(HC_ISA_AVX2, 2, 32 << 10, 2 << 20, 32 << 20);
        hc_target avx512 = hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 << 10, 2 << 20, 105 << 20);
        hc_matmul_shape ffn = {1, 128, 3072, 768}, ffn8 = {1, 1024, 3072, 768},
                        out = {1, 128, 768, 3072}, narrow = {1, 128, 64, 768},
                        short_m = {1, 24, 3072, 768}, batched = {8, 128, 3072, 768};
        c = hc_matmul_default_config(&zen3, &ffn);
        CHECK(c.mc == 18 && c.kc == 768 && c.tn == 2);
        CHECK(hc_matmul_b_stationary_pays(&c, &ffn, &zen3, false, true));
        CHECK(!hc_matmul_b_stationary_pays(&c, &ffn, &zen3, true, true));   /* A constant */
        CHECK(!hc_matmul_b_stationary_pays(&c, &ffn, &zen3, false, false)); /* B not */
        hc_matmul_config_set_b_stationary(&c, &ffn, &zen3);
        /* the default's kc 768, 64 columns (192 KiB of B: 3/8 of L2), the thread's 128 rows
         * (132 in tiles of 6) in one A block read in place, rows first */
        CHECK_MSG(c.kc == 768 && c.nc == 64 && c.mc == 132 && !c.pack_a && c.rows_first &&
                      c.tn == 2,
                  "B-stationary FFN-in: kc %lld nc %lld mc %lld pack_a %d rows %d", (long long)c.kc,
                  (long long)c.nc, (long long)c.mc, (int)c.pack_a, (int)c.rows_first);
        /* batch 8: 1024 rows a thread in one block, A read in place (nothing to pack per
         * B block) */
        c = hc_matmul_default_config(&zen3, &ffn8);
        CHECK(hc_matmul_b_stationary_pays(&c, &ffn8, &zen3, false, true));
        hc_matmul_config_set_b_stationary(&c, &ffn8, &zen3);
        CHECK_MSG(c.mc == 1026 && !c.pack_a, "batch 8: mc %lld, want 1026", (long long)c.mc);
        c = hc_matmul_default_config(&zen3, &out); /* K = 3072: kc 768 as well */
        CHECK(hc_matmul_b_stationary_pays(&c, &out, &zen3, false, true));
        hc_matmul_config_set_b_stationary(&c, &out, &zen3);
        CHECK(c.kc == 768 && c.nc == 64 && c.mc == 132 && !c.pack_a);
        c = hc_matmul_default_config(&zen3, &narrow); /* 32 columns a thread: 96 KiB of B */
        CHECK(!hc_matmul_b_stationary_pays(&c, &narrow, &zen3, false, true));
        c = hc_matmul_default_config(&zen3, &short_m); /* 4 row tiles */
        CHECK(!hc_matmul_b_stationary_pays(&c, &short_m, &zen3, false, true));
        c = hc_matmul_default_config(&zen3, &batched); /* a B per batch */
        CHECK(!hc_matmul_b_stationary_pays(&c, &batched, &zen3, false, true));
        c = hc_matmul_default_config(&avx2_2m, &ffn);
        CHECK(c.mc == 84 && !hc_matmul_b_stationary_pays(&c, &ffn, &avx2_2m, false, true));
        c = hc_matmul_default_config(&avx512, &ffn8);
        CHECK(!hc_matmul_b_stationary_pays(&c, &ffn8, &avx512, false, true));
    }
    /* the core from CPUID's vendor, family and model */
    CHECK_EQ_INT(hc_cpu_core_of("GenuineIntel", 6, 0xCF), HC_CORE_INTEL_SPR);
    CHECK_EQ_INT(hc_cpu_core_of("GenuineIntel", 6, 0x8F), HC_CORE_INTEL_SPR);
    CHECK_EQ_INT(hc_cpu_core_of("GenuineIntel", 6, 0x55), HC_CORE_OTHER);    /* Skylake-SP */
    CHECK_EQ_INT(hc_cpu_core_of("AuthenticAMD", 25, 0x11), HC_CORE_AMD_ZEN4); /* Genoa */
    CHECK_EQ_INT(hc_cpu_core_of("AuthenticAMD", 25, 0x61), HC_CORE_AMD_ZEN4); /* Raphael */
    CHECK_EQ_INT(hc_cpu_core_of("AuthenticAMD", 25, 0xA0), HC_CORE_AMD_ZEN4); /* Bergamo */
    CHECK_EQ_INT(hc_cpu_core_of("AuthenticAMD", 25, 0x01), HC_CORE_OTHER);    /* Zen 3 */
    CHECK_EQ_INT(hc_cpu_core_of("AuthenticAMD", 25, 0x21), HC_CORE_OTHER);    /* Zen 3 */
    CHECK_EQ_INT(hc_cpu_core_of("AuthenticAMD", 26, 0x02), HC_CORE_AMD_ZEN5); /* Turin */
    CHECK_EQ_INT(hc_cpu_core_of("AuthenticAMD", 26, 0x11), HC_CORE_AMD_ZEN5); /* Turin dense */
    CHECK_EQ_INT(hc_cpu_core_of("AuthenticAMD", 26, 0x44), HC_CORE_AMD_ZEN5); /* Granite R. */
    CHECK_EQ_INT(hc_cpu_core_of("GenuineIntel", 26, 0x02), HC_CORE_OTHER);
    CHECK_EQ_INT(hc_cpu_core_of("AuthenticAMD", 27, 0x02), HC_CORE_OTHER); /* not measured */
    CHECK_EQ_INT(hc_cpu_core_of("GenuineIntel", 25, 0x11), HC_CORE_OTHER);
    {
        /* the narrow tile: constant A, a B of fewer than 16 vectors of columns, Zen 4 with
         * AVX-512 only; B in place below 32 row tiles a core */
        hc_target zen4 = hc_target_cpu_describe(HC_ISA_AVX512, 2, 32 << 10, 1 << 20, 32 << 20);
        hc_target zen4_avx2 = hc_target_cpu_describe(HC_ISA_AVX2, 2, 32 << 10, 1 << 20, 32 << 20);
        hc_target xeon = zen4;
        zen4.caps.core = zen4_avx2.caps.core = HC_CORE_AMD_ZEN4;
        hc_matmul_shape p196 = {1, 96, 196, 576}, p49 = {1, 1280, 49, 320},
                        wide = {1, 96, 256, 576};
        CHECK(hc_matmul_narrow_pays(&zen4, &p196, true, false));
        CHECK(hc_matmul_narrow_pays(&zen4, &p49, true, false));
        CHECK(!hc_matmul_narrow_pays(&zen4, &wide, true, false));      /* 16 vectors */
        CHECK(!hc_matmul_narrow_pays(&zen4, &p196, false, true));      /* B constant */
        CHECK(!hc_matmul_narrow_pays(&zen4, &p196, true, true));       /* both */
        CHECK(!hc_matmul_narrow_pays(&zen4, &p196, false, false));     /* neither */
        CHECK(!hc_matmul_narrow_pays(&xeon, &p196, true, false));      /* another core */
        CHECK(!hc_matmul_narrow_pays(&zen4_avx2, &p196, true, false)); /* AVX2 code */
        c = hc_matmul_narrow_config(&zen4, &p196);
        CHECK(c.tb == 1 && c.tm == 2 && c.tn == 1); /* the rows split */
        CHECK_MSG(c.nr == 16 && c.mr == 16 && !c.pack_b && c.kc == 576,
                  "narrow [96, 196] x 576: mr %d nr %d kc %lld pack_b %d", c.mr, c.nr,
                  (long long)c.kc, c.pack_b);
        c = hc_matmul_narrow_config(&zen4, &p49); /* 80 row tiles: B packed */
        CHECK(c.tb == 1 && c.tm == 2 && c.tn == 1);
        CHECK_MSG(c.nr == 16 && c.mr == 16 && c.pack_b, "narrow [1280, 49]: mr %d nr %d pb %d",
                  c.mr, c.nr, c.pack_b);
        hc_matmul_shape p7 = {1, 7, 49, 32}; /* fewer rows than a tile */
        c = hc_matmul_narrow_config(&zen4, &p7);
        CHECK(c.mr == 7 && c.nr == 16 && !c.pack_b);
    }
    CHECK_EQ_INT(hc_cpu_core_of("AuthenticAMD", 6, 0xCF), HC_CORE_OTHER);
    CHECK_EQ_INT(hc_cpu_core_of(NULL, 6, 0xCF), HC_CORE_OTHER);
    hc_matmul_shape s = {1, 64, 64, 64};
    hc_matmul_config good = hc_matmul_default_config(t, &s);
    struct {
        const char *field;
        hc_matmul_config c;
    } bad[9];
    for (int i = 0; i < 9; i++) bad[i].c = good;
    bad[0].field = "lanes", bad[0].c.lanes = 5;
    bad[1].field = "mr", bad[1].c.mr = 0;
    bad[2].field = "nr", bad[2].c.nr = good.lanes + 1;
    bad[3].field = "mc", bad[3].c.mc = good.mr * 3 + (good.mr > 1);
    bad[4].field = "nc", bad[4].c.nc = good.nr + 1;
    bad[5].field = "kc", bad[5].c.kc = 0;
    bad[6].field = "thread", bad[6].c.tb = 0;
    bad[7].field = "thread", bad[7].c.tm = 300;
    bad[8].field = "register tile", bad[8].c.mr = 32, bad[8].c.nr = good.lanes * 4;
    for (int i = 0; i < 9; i++) {
        hc_status st = hc_matmul_validate(&bad[i].c, &err);
        CHECK_MSG(st == HC_ERR_INVALID && strstr(err.msg, bad[i].field), "case %d: %s", i,
                  st ? err.msg : "accepted");
    }
    hc_arena a;
    hc_arena_init(&a);
    CHECK(hc_matmul_cpu(&a, NULL, &s, &bad[3].c, t, &err) == NULL);
    hc_matmul_config other = good;
    other.lanes = good.lanes == 16 ? 8 : 16, other.nr = other.lanes * 2;
    CHECK(hc_matmul_cpu(&a, NULL, &s, &other, t, &err) == NULL && strstr(err.msg, "lanes"));
    hc_matmul_shape zero = {1, 0, 4, 4};
    CHECK(hc_matmul_cpu(&a, NULL, &zero, &good, t, &err) == NULL && strstr(err.msg, "m = 0"));
    CHECK(hc_matmul_cpu(&a, NULL, &s, &good, t, &err) != NULL);
    hc_arena_free(&a);
}

/* ---- kernels against the interpreter ----------------------------------------------- */
typedef enum cfg_kind {
    DEFAULT,  /* the default config */
    SMALL,    /* tiny blocks: every loop has several blocks and a tail at small sizes */
    SMALL_NP, /* SMALL with A and B read in place */
    NOPACK_A,
    NOPACK_B,
    WIDE,      /* one row of four vectors */
    TALL,      /* 14 rows of two vectors */
    NARROW,    /* A packed, 3 K blocks: last column tiles of 1..nr/4 columns (the column kernel) */
    NARROW_NP, /* the same with B read in place */
    NARROW_WO, /* the same with C written once (partial sums in a scratch) */
    ROWS,      /* small blocks, register tiles row by row */
    NARROW1,   /* hc_matmul_narrow_config: one vector per row, up to 16 rows, B in place */
    BSTAT,     /* hc_matmul_config_set_b_stationary for caches small enough to give blocks
                * with tails at these sizes (A read in place, one block of the thread's
                * rows); B pre-packed, as for constant weights */
} cfg_kind;

typedef struct mm_case {
    hc_matmul_shape s;
    cfg_kind kind;
    int tm, tn; /* tn == 0: tm threads split by hc_matmul_config_set_threads */
    int tb;     /* with tn != 0: batch split (0 = 1) */
} mm_case;

static hc_matmul_config case_config(const mm_case *mc, const hc_target *t) {
    hc_matmul_config c = hc_matmul_default_config(t, &mc->s);
    int L = c.lanes;
    switch (mc->kind) {
    case DEFAULT: break;
    case SMALL:
    case SMALL_NP:
        c.mr = 3, c.nr = L, c.kc = 8, c.mc = 6, c.nc = 2 * L;
        c.pack_a = c.pack_b = mc->kind == SMALL;
        break;
    case NOPACK_A: c.pack_a = false, c.pack_b = true; break;
    case NOPACK_B: c.pack_a = true, c.pack_b = false; break;
    case WIDE: c.mr = 1, c.nr = 4 * L, c.mc = 4, c.nc = 8 * L, c.kc = 16; break;
    case TALL: c.mr = 14, c.nr = 2 * L, c.mc = 28, c.kc = 32, c.nc = 4 * L; break;
    case NARROW:
    case NARROW_NP:
    case NARROW_WO:
        c.kc = (mc->s.k + 2) / 3, c.pack_a = true, c.pack_b = mc->kind != NARROW_NP;
        c.c_write_once = mc->kind == NARROW_WO;
        break;
    case ROWS:
        c.mr = 3, c.nr = L, c.kc = 8, c.mc = 6, c.nc = 2 * L, c.pack_a = c.pack_b = true;
        c.rows_first = true;
        break;
    case BSTAT: break; /* after the threads: the A blocks follow the thread's rows */
    case NARROW1: c = hc_matmul_narrow_config(t, &mc->s); break;
    }
    if (mc->tn) c.tb = mc->tb ? mc->tb : 1, c.tm = mc->tm, c.tn = mc->tn;
    else hc_matmul_config_set_threads(&c, &mc->s, mc->tm ? mc->tm : 1);
    if (mc->kind == BSTAT) {
        /* K blocks of 64 (a default's kc on a small L1) with tails; B blocks of one tile */
        hc_target tiny = *t;
        tiny.caps.l1_bytes = 2 << 10, tiny.caps.l2_bytes = 16 << 10;
        c.kc = 64;
        hc_matmul_config_set_b_stationary(&c, &mc->s, &tiny);
        c.pre_b = true;
    }
    return c;
}

static const mm_case cases[] = {
    /* default config, one thread: 1, primes, non-multiples of MR/NR/KC */
    {{1, 1, 1, 1}, DEFAULT, 1, 0},
    {{1, 1, 17, 1}, DEFAULT, 1, 0},
    {{1, 2, 3, 5}, DEFAULT, 1, 0},
    {{1, 7, 13, 11}, DEFAULT, 1, 0},
    {{1, 17, 31, 19}, DEFAULT, 1, 0},
    {{1, 31, 33, 64}, DEFAULT, 1, 0},
    {{1, 64, 64, 64}, DEFAULT, 1, 0},
    {{1, 97, 101, 103}, DEFAULT, 1, 0},
    {{1, 8, 32, 1}, DEFAULT, 1, 0},
    {{1, 9, 33, 2}, DEFAULT, 1, 0},
    {{1, 1, 1000, 37}, DEFAULT, 1, 0},
    {{1, 1, 5, 700}, DEFAULT, 1, 0},
    {{1, 43, 1, 29}, DEFAULT, 1, 0},
    {{1, 53, 67, 401}, DEFAULT, 1, 0},
    {{1, 131, 47, 23}, DEFAULT, 1, 0},
    {{1, 16, 48, 800}, DEFAULT, 1, 0},
    /* batch > 1 */
    {{3, 5, 7, 9}, DEFAULT, 1, 0},
    {{2, 33, 65, 17}, DEFAULT, 1, 0},
    {{4, 1, 19, 3}, DEFAULT, 2, 0},
    {{2, 29, 37, 41}, SMALL, 2, 0},
    /* small blocks: tails in every cache block loop */
    {{1, 1, 1, 1}, SMALL, 1, 0},
    {{1, 13, 70, 21}, SMALL, 1, 0},
    {{1, 7, 33, 17}, SMALL, 1, 0},
    {{1, 19, 65, 40}, SMALL, 1, 0},
    {{1, 6, 32, 8}, SMALL, 1, 0},
    {{1, 37, 5, 61}, SMALL, 1, 0},
    {{1, 2, 100, 9}, SMALL, 1, 0},
    {{1, 23, 47, 3}, SMALL_NP, 1, 0},
    {{1, 13, 70, 21}, SMALL_NP, 1, 0},
    {{1, 41, 83, 19}, SMALL_NP, 1, 0},
    {{1, 1, 1, 1}, SMALL_NP, 1, 0},
    /* packing variants */
    {{1, 29, 71, 37}, NOPACK_A, 1, 0},
    {{1, 5, 131, 300}, NOPACK_B, 1, 0},
    {{1, 67, 59, 45}, NOPACK_B, 1, 0},
    {{2, 11, 17, 13}, NOPACK_A, 1, 0},
    /* other register tiles */
    {{1, 3, 150, 33}, WIDE, 1, 0},
    {{1, 1, 63, 64}, WIDE, 1, 0},
    {{1, 29, 66, 71}, TALL, 1, 0},
    {{1, 15, 33, 35}, TALL, 1, 0},
    /* two threads: the default split and both explicit grids */
    {{1, 1, 1, 1}, DEFAULT, 2, 0},
    {{1, 7, 13, 11}, DEFAULT, 2, 0},
    {{1, 97, 101, 103}, DEFAULT, 2, 0},
    {{1, 61, 29, 31}, DEFAULT, 2, 1},
    {{1, 61, 29, 31}, DEFAULT, 1, 2},
    {{1, 1, 300, 17}, DEFAULT, 1, 2},
    {{1, 2, 3, 5}, DEFAULT, 2, 1},
    {{1, 13, 70, 21}, SMALL, 2, 1},
    {{1, 13, 70, 21}, SMALL, 1, 2},
    {{1, 41, 83, 19}, SMALL_NP, 1, 2},
    {{3, 29, 71, 37}, NOPACK_A, 2, 1},
    {{1, 33, 140, 20}, WIDE, 2, 1},
    {{1, 100, 30, 10}, TALL, 1, 2},
    {{2, 50, 50, 50}, DEFAULT, 2, 0},
    /* threads over batches (an odd batch leaves the last thread short) */
    {{5, 9, 21, 13}, DEFAULT, 1, 1, 2},
    {{3, 17, 40, 9}, SMALL, 1, 1, 2},
    {{8, 16, 16, 16}, DEFAULT, 2, 0},
    {{1, 7, 13, 11}, DEFAULT, 1, 1, 2},
    /* narrow last column tiles (N = 196, 289, 49 as in ResNet-50 and Inception-V3, and
     * a tile of only narrow columns), one and two threads, both thread grids */
    {{1, 24, 196, 40}, NARROW, 1, 0},
    {{1, 19, 289, 33}, NARROW, 2, 1},
    {{2, 13, 49, 17}, NARROW, 1, 2},
    {{1, 21, 3, 29}, NARROW, 1, 0},
    {{1, 24, 196, 40}, NARROW_NP, 2, 1},
    {{1, 9, 37, 50}, NARROW_NP, 1, 0},
    {{1, 24, 196, 40}, NARROW_WO, 1, 0},
    {{2, 11, 289, 30}, NARROW_WO, 2, 1},
    /* register tiles row by row: tails in every block loop, 1 and 2 threads, narrow tiles */
    {{1, 13, 70, 21}, ROWS, 1, 0},
    {{2, 29, 37, 41}, ROWS, 2, 0},
    {{1, 19, 66, 17}, ROWS, 1, 2},
    {{1, 24, 196, 40}, ROWS, 2, 1},
    /* B kept in L2 (the transformers' weights on a small L2): several K, N and M blocks
     * with tails, 1 and 2 threads, both grids */
    {{1, 53, 67, 401}, BSTAT, 1, 0},
    {{1, 97, 101, 130}, BSTAT, 1, 2},
    {{1, 131, 47, 65}, BSTAT, 2, 1},
    {{1, 25, 300, 64}, BSTAT, 1, 0},
    /* one vector per row (the narrow tile of NCHW convs on Zen 4; the host's lanes): N =
     * 196, 49, primes, 1; M tails of the 16-row tile; the default split and both grids */
    {{1, 96, 196, 57}, NARROW1, 2, 0},
    {{1, 37, 49, 40}, NARROW1, 1, 0},
    {{1, 61, 13, 17}, NARROW1, 2, 1},
    {{1, 17, 1, 9}, NARROW1, 1, 2},
    {{2, 33, 49, 23}, NARROW1, 2, 0},
    {{1, 1100, 49, 20}, NARROW1, 2, 0},
};

static float *random_buffer(int64_t n, uint64_t seed) {
    float *x = malloc(sizeof(float) * (size_t)(n ? n : 1));
    hc_rng r = {seed};
    for (int64_t i = 0; i < n; i++) x[i] = (float)hc_rng_uniform(&r, -1, 1);
    return x;
}

/* A kernel to test: a shape and a config. */
typedef struct job {
    hc_matmul_shape s;
    hc_matmul_config c;
} job;

/* Valid but unusual configs on random small shapes: every knob the tuner may turn. */
static void random_job(hc_rng *r, const hc_target *t, job *j) {
    int L = hc_target_f32_lanes(t);
    hc_matmul_config *c = &j->c;
    j->s.batch = 1 + (int64_t)(hc_rng_next(r) % 3); /* one statement each: a fixed order */
    j->s.m = 1 + (int64_t)(hc_rng_next(r) % 70);
    j->s.n = 1 + (int64_t)(hc_rng_next(r) % 90);
    j->s.k = 1 + (int64_t)(hc_rng_next(r) % 80);
    *c = hc_matmul_default_config(t, &j->s);
    int nv = 1 + (int)(hc_rng_next(r) % 4);
    c->nr = nv * L;
    c->mr = 1 + (int)(hc_rng_next(r) % (uint64_t)HC_MIN(16, HC_MATMUL_MAX_VECS / nv));
    c->kc = 1 + (int64_t)(hc_rng_next(r) % 40);
    c->mc = c->mr * (1 + (int64_t)(hc_rng_next(r) % 4));
    c->nc = c->nr * (1 + (int64_t)(hc_rng_next(r) % 3));
    c->tb = 1 + (int)(hc_rng_next(r) % 2);
    c->tm = 1 + (int)(hc_rng_next(r) % 2);
    c->tn = 1 + (int)(hc_rng_next(r) % 2);
    c->pack_a = hc_rng_next(r) % 2, c->pack_b = hc_rng_next(r) % 2;
    c->rows_first = hc_rng_next(r) % 2;
}

/* A random job whose A and/or B arrive pre-packed (hc_matmul_prepack), A maybe shared by
 * every batch: the path of constant weights. */
static void random_prepacked_job(hc_rng *r, const hc_target *t, job *j) {
    random_job(r, t, j);
    int which = 1 + (int)(hc_rng_next(r) % 3);
    j->c.pre_a = which & 1, j->c.pre_b = (which & 2) != 0;
    j->c.a_shared = j->c.pre_a && j->s.batch > 1 && hc_rng_next(r) % 2;
}

/* Kernel `name` of `lib` on its operands ka, kb (A and B, or their packed forms) into C
 * (NaN first: an element never stored shows), and the interpreter on A, B into R; false
 * (with the failure counted) when either could not run. */
static bool run_with_reference(hc_jit_lib *lib, const char *name, const hc_matmul_shape *s,
                               const float *A, const float *B, const float *ka,
                               const float *kb, float *C, float *R) {
    for (int64_t j = 0, n = s->batch * s->m * s->n; j < n; j++) C[j] = NAN;
    hc_matmul_kernel kern;
    hc_error err;
    CHECK_MSG(hc_matmul_kernel_from_lib(lib, name, &kern, &err) == HC_OK, "%s", err.msg);
    hc_arena a;
    hc_arena_init(&a);
    void *in[2] = {(void *)A, (void *)B}, *out[1] = {R};
    hc_status st = hc_interpret_task(hc_matmul_task(&a, s), in, out, &err);
    CHECK_MSG(st == HC_OK, "interpreter: %s", err.msg);
    hc_arena_free(&a);
    if (!kern.fn || st != HC_OK) return false;
    hc_matmul_run(&kern, ka, kb, C);
    return true;
}

/* Run job i from `lib` and compare with the interpreter. */
static void check_job(int i, const job *jb, hc_jit_lib *lib) {
    const hc_matmul_shape *s = &jb->s;
    int64_t na = s->batch * s->m * s->k, nb = s->batch * s->k * s->n, nc = s->batch * s->m * s->n;
    float *A = random_buffer(na, 100 + i), *B = random_buffer(nb, 200 + i);
    if (jb->c.a_shared) /* one A for every batch */
        for (int64_t b = 1; b < s->batch; b++)
            memcpy(A + b * s->m * s->k, A, sizeof(float) * (size_t)(s->m * s->k));
    float *Ap = NULL, *Bp = NULL;
    if (jb->c.pre_a) {
        int64_t n = hc_matmul_packed_size(s, &jb->c, 0);
        Ap = malloc(sizeof(float) * (size_t)n);
        for (int64_t j = 0; j < n; j++) Ap[j] = NAN; /* every element is written */
        hc_matmul_prepack(s, &jb->c, 0, A, Ap);
    }
    if (jb->c.pre_b) {
        int64_t n = hc_matmul_packed_size(s, &jb->c, 1);
        Bp = malloc(sizeof(float) * (size_t)n);
        for (int64_t j = 0; j < n; j++) Bp[j] = NAN;
        hc_matmul_prepack(s, &jb->c, 1, B, Bp);
    }
    float *C = malloc(sizeof(float) * (size_t)nc), *R = malloc(sizeof(float) * (size_t)nc);
    char name[32];
    snprintf(name, sizeof name, "matmul_%d", i);
    if (run_with_reference(lib, name, s, A, B, Ap ? Ap : A, Bp ? Bp : B, C, R)) {
        double maxerr = 0, tol = 1e-5 + 2e-6 * (double)s->k;
        int64_t where = -1;
        for (int64_t j = 0; j < nc; j++) {
            double e = fabs((double)C[j] - (double)R[j]);
            if (!(e <= maxerr)) maxerr = isnan(e) ? INFINITY : e, where = j;
        }
        hc_sb sb;
        hc_sb_init(&sb);
        hc_matmul_config_print(&sb, &jb->c);
        CHECK_MSG(maxerr <= tol, "job %d (%lldx%lldx%lldx%lld, %s): max error %g at %lld", i,
                  (long long)s->batch, (long long)s->m, (long long)s->n, (long long)s->k,
                  hc_sb_str(&sb), maxerr, (long long)where);
        hc_sb_free(&sb);
    }
    free(A), free(B), free(C), free(R), free(Ap), free(Bp);
}

static void test_kernels(void) {
    const hc_target *t = hc_target_host();
    /* PER_UNIT kernels per translation unit: the prelude (immintrin.h) is parsed once */
    enum { NCASES = HC_ARRAY_LEN(cases), NRANDOM = 8, NPRE = 12 };
    enum { N = NCASES + NRANDOM + NPRE, PER_UNIT = 4 };
    enum { NUNITS = (N + PER_UNIT - 1) / PER_UNIT };
    job jobs[N];
    char *sources[NUNITS];
    hc_jit_lib *libs[NUNITS];
    hc_error err;
    double t0 = hc_now_ms();
    hc_rng r = {42};
    hc_arena a;
    hc_arena_init(&a);
    hc_func *funcs[N];
    int columns = 0;
    for (int i = 0; i < N; i++) {
        if (i < NCASES) jobs[i] = (job){cases[i].s, case_config(&cases[i], t)};
        else if (i < NCASES + NRANDOM) random_job(&r, t, &jobs[i]);
        else random_prepacked_job(&r, t, &jobs[i]);
        CHECK_MSG(hc_matmul_validate(&jobs[i].c, &err) == HC_OK, "job %d: %s", i, err.msg);
        char name[32];
        snprintf(name, sizeof name, "matmul_%d", i);
        funcs[i] = hc_matmul_cpu(&a, name, &jobs[i].s, &jobs[i].c, t, &err);
        HC_ASSERT_MSG(funcs[i], err.msg); /* every job's config is valid */
        /* pre-packed operands are prefetched a tile ahead (prefetch_next), others not;
         * the partial sums of C before every K block but the first (prefetch_c_tile) */
        hc_sb sb;
        hc_sb_init(&sb);
        hc_print_func(&sb, funcs[i]);
        const char *ir = hc_sb_str(&sb);
        bool pre = jobs[i].c.pre_a || jobs[i].c.pre_b;
        CHECK_MSG((strstr(ir, "prefetch(&A[") || strstr(ir, "prefetch(&B[")) == pre,
                  "job %d: prefetch %s", i, pre ? "missing" : "without a pre-packed operand");
        bool blocks = jobs[i].s.k > jobs[i].c.kc;
        bool sums = jobs[i].c.c_write_once ? strstr(ir, "prefetch(&Cs[") != NULL
                                           : strstr(ir, "prefetch(&C[") != NULL;
        CHECK_MSG(sums == blocks && (strstr(ir, "prefetch(&C") != NULL) == blocks,
                  "job %d: partial sums prefetch %s", i, blocks ? "missing" : "with one K block");
        /* the column kernel is there exactly when A comes in panels */
        bool panels = jobs[i].c.pack_a || jobs[i].c.pre_a;
        CHECK_MSG((strstr(hc_sb_str(&sb), "cacc") != NULL) == panels,
                  "job %d: column kernel %s", i, panels ? "missing" : "without A panels");
        columns += i < NCASES && cases[i].kind >= NARROW && cases[i].kind <= NARROW_WO;
        hc_sb_free(&sb);
    }
    for (int u = 0; u < NUNITS; u++) {
        int first = u * PER_UNIT, n = HC_MIN(PER_UNIT, N - first);
        sources[u] = hc_codegen_c(&a, hc_module_new(&a, "matmuls", n, funcs + first), t);
        libs[u] = NULL;
    }
    /* compiled in parallel jobs (and cached for reruns) */
    hc_status st = hc_jit_build_many(NUNITS, (const char *const *)sources, NULL, 0, libs, &err);
    CHECK_MSG(st == HC_OK, "%s", err.msg);
    printf("built %d kernels in %d units in %.1f s\n", N, NUNITS, (hc_now_ms() - t0) / 1000);
    CHECK_EQ_INT(columns, 8);
    for (int i = 0; i < N; i++)
        if (libs[i / PER_UNIT]) check_job(i, &jobs[i], libs[i / PER_UNIT]);
    for (int u = 0; u < NUNITS; u++) {
        if (libs[u]) hc_jit_close(libs[u]);
        free(sources[u]);
    }
    hc_arena_free(&a);
    printf("ran %d kernels in %.1f s\n", N, (hc_now_ms() - t0) / 1000);
}

/* ---- AMX split products ------------------------------------------------------------- */
/* An AMX job: the shape, K block, panel width, thread grid and write-once flag. */
typedef struct amx_case {
    hc_matmul_shape s;
    int kc, nc, tb, tm, tn;
    bool write_once;
    int mc; /* 0: the default's */
} amx_case;

static const amx_case amx_cases[] = {
    /* 1, primes, tails of 16/32 rows, 32 columns and 32 of K; one K block and several */
    {{1, 1, 1, 1}, 128, 32, 1, 1, 1, false},      {{1, 7, 13, 11}, 128, 32, 1, 1, 1, false},
    {{1, 17, 33, 31}, 32, 32, 1, 1, 1, false},    {{1, 33, 65, 97}, 32, 64, 1, 1, 1, false},
    {{1, 64, 64, 64}, 128, 32, 1, 1, 1, false},   {{1, 97, 101, 103}, 64, 64, 1, 1, 1, false},
    {{1, 131, 47, 300}, 128, 32, 1, 1, 1, false}, {{1, 1, 1000, 37}, 128, 96, 1, 1, 1, false},
    /* partial sums in a scratch (write once) and in C */
    {{1, 53, 67, 401}, 64, 32, 1, 1, 1, true},    {{1, 40, 70, 129}, 32, 64, 1, 1, 1, true},
    /* M blocks of 32 rows and N blocks (nc) narrower than a thread's columns */
    {{1, 97, 101, 103}, 32, 32, 1, 1, 1, false, 32},  {{1, 70, 200, 65}, 64, 64, 1, 1, 1, true, 32},
    {{2, 66, 130, 40}, 32, 96, 1, 1, 2, true, 64},
    /* two threads, both grids; batches, split and not */
    {{1, 97, 101, 103}, 32, 32, 1, 2, 1, false},  {{1, 61, 129, 71}, 64, 64, 1, 1, 2, true},
    {{1, 5, 200, 40}, 32, 32, 1, 1, 2, false},    {{1, 70, 3, 33}, 32, 32, 1, 2, 1, true},
    {{3, 29, 71, 37}, 32, 32, 1, 1, 1, false},    {{3, 29, 71, 37}, 32, 32, 2, 1, 1, true},
    {{2, 50, 50, 50}, 32, 32, 1, 1, 2, false},
};

/* Run AMX job i of `lib` against the interpreter; A holds an infinity, a NaN, 3.4e38 and
 * -3.38e38 when `specials` (rows with a value that is not finite or whose bf16 rounding is
 * not are redone in f32). */
static void check_amx_job(int i, const hc_matmul_shape *s, const hc_matmul_config *c,
                          hc_jit_lib *lib, bool specials, const char *how) {
    int64_t na = s->batch * s->m * s->k, nb = s->batch * s->k * s->n, nc = s->batch * s->m * s->n;
    float *A = random_buffer(na, 300 + i), *B = random_buffer(nb, 400 + i);
    if (specials && s->m > 2 && s->k > 2) {
        /* rows 0, 1, 2, 3: 3.4e38 rounds to a bf16 infinity, 3.38e38 does not */
        A[0] = INFINITY, A[s->k + 1] = NAN, A[2 * s->k + 2] = 3.4e38f;
        if (s->m > 3) A[3 * s->k] = -3.38e38f;
        B[s->n] = 0; /* row 1 of B: inf x 0 in column 0 */
    }
    int64_t np = hc_matmul_packed_size(s, c, 1);
    float *Bp = malloc(sizeof(float) * (size_t)np);
    hc_matmul_prepack(s, c, 1, B, Bp);
    float *C = malloc(sizeof(float) * (size_t)nc), *R = malloc(sizeof(float) * (size_t)nc);
    char name[32];
    snprintf(name, sizeof name, "amx_%d", i);
    if (run_with_reference(lib, name, s, A, B, A, Bp, C, R)) {
        double maxerr = 0, tol = 1e-5 + 2e-6 * (double)s->k;
        int64_t where = -1;
        for (int64_t j = 0; j < nc; j++) {
            double e;
            if (!isfinite(R[j]) || !isfinite(C[j])) /* the same infinity, or both NaN */
                e = (isnan(R[j]) && isnan(C[j])) || R[j] == C[j] ? 0 : INFINITY;
            else
                e = fabs((double)C[j] - (double)R[j]) / (fabs((double)R[j]) > 1e30 ? fabs((double)R[j]) : 1);
            if (!(e <= maxerr)) maxerr = isnan(e) ? INFINITY : e, where = j;
        }
        hc_sb sb;
        hc_sb_init(&sb);
        hc_matmul_config_print(&sb, c);
        CHECK_MSG(maxerr <= tol, "amx job %d %s (%lldx%lldx%lldx%lld, %s): max error %g at %lld "
                  "(%g, expected %g)", i, how, (long long)s->batch, (long long)s->m,
                  (long long)s->n, (long long)s->k, hc_sb_str(&sb), maxerr, (long long)where,
                  where >= 0 ? C[where] : 0.0, where >= 0 ? R[where] : 0.0);
        hc_sb_free(&sb);
    }
    free(A), free(B), free(Bp), free(C), free(R);
}

/* The AMX program on a target that states AMX-BF16 (the host's ISA, lanes and caches):
 * on AMX itself where this process can run it (and the compiler targets it), emulated
 * elsewhere;
 * and always emulated too (-DHC_AMX_EMULATE), so both paths meet the interpreter on every
 * host. Also the config rules and the packed size. */
static void test_amx(void) {
    hc_target t = *hc_target_host();
    t.caps.amx_bf16 = 1;
    hc_target none = t;
    none.caps.amx_bf16 = 0;
    hc_matmul_shape big = {1, HC_MATMUL_AMX_MIN_ROWS, 768, 768};
    float *w = random_buffer(768 * 768, 7);
    CHECK(hc_matmul_amx_pays(&big, &t, false, w));
    hc_matmul_shape fewer = {1, HC_MATMUL_AMX_MIN_ROWS - 1, 768, 768}; /* too few rows */
    CHECK(!hc_matmul_amx_pays(&fewer, &t, false, w));
    hc_matmul_shape batches = {4, 128, 768, 768}; /* 4 B of 128 rows each: still 128 */
    float *w4 = random_buffer(4 * 768 * 768, 8);
    CHECK(!hc_matmul_amx_pays(&batches, &t, false, w4));
    free(w4);
    CHECK(!hc_matmul_amx_pays(&big, &none, false, w));
    CHECK(!hc_matmul_amx_pays(&big, &t, false, NULL)); /* B not constant */
    CHECK(!hc_matmul_amx_pays(&big, &t, true, w));     /* A constant too */
    hc_matmul_shape gemv = {1, 1, 768, 768};
    CHECK(!hc_matmul_amx_pays(&gemv, &t, false, w));
    w[768 * 400 + 5] = -INFINITY; /* a weight that is not finite */
    CHECK(!hc_matmul_amx_pays(&big, &t, false, w));
    w[768 * 400 + 5] = NAN;
    CHECK(!hc_matmul_amx_pays(&big, &t, false, w));
    w[768 * 400 + 5] = 3.4e38f; /* finite, but its bf16 rounding is not */
    CHECK(!hc_matmul_amx_pays(&big, &t, false, w));
    w[768 * 400 + 5] = 3.38e38f;
    CHECK(hc_matmul_amx_pays(&big, &t, false, w));
    free(w);
    hc_matmul_config dc = hc_matmul_amx_config(&t, &big);
    hc_error err;
    CHECK_MSG(hc_matmul_validate(&dc, &err) == HC_OK, "%s", err.msg);
    CHECK(dc.amx && dc.pre_b && dc.mr == 32 && dc.nr == 32);
    CHECK_EQ_INT(hc_matmul_packed_size(&(hc_matmul_shape){2, 5, 33, 40}, &dc, 1),
                 2 * 3 * 64 * 64 / 2);
    hc_arena a;
    hc_arena_init(&a);
    CHECK(hc_matmul_cpu(&a, "x", &big, &dc, &none, &err) == NULL); /* no AMX on the target */
    hc_matmul_config bad = dc;
    bad.pre_b = false;
    CHECK(hc_matmul_validate(&bad, &err) != HC_OK);

    enum { N = HC_ARRAY_LEN(amx_cases) };
    hc_matmul_config cfg[N];
    hc_func *funcs[N];
    for (int i = 0; i < N; i++) {
        const amx_case *ac = &amx_cases[i];
        cfg[i] = hc_matmul_amx_config(&t, &ac->s);
        cfg[i].kc = ac->kc, cfg[i].nc = ac->nc;
        cfg[i].tb = ac->tb, cfg[i].tm = ac->tm, cfg[i].tn = ac->tn;
        cfg[i].c_write_once = ac->write_once;
        if (ac->mc) cfg[i].mc = ac->mc;
        char name[32];
        snprintf(name, sizeof name, "amx_%d", i);
        funcs[i] = hc_matmul_cpu(&a, name, &ac->s, &cfg[i], &t, &err);
        HC_ASSERT_MSG(funcs[i], err.msg);
    }
    char *src = hc_codegen_c(&a, hc_module_new(&a, "amx", N, funcs), &t);
    CHECK(strstr(src, "HC_TILE_DP_BF16(") != NULL && strstr(src, "hc_store_bf16_") != NULL);
    char flags[512];
    snprintf(flags, sizeof flags, "%s -DHC_AMX_EMULATE", t.cflags);
    const hc_jit_options emulate = {.cflags = flags};
    for (int pass = 0; pass < 2; pass++) {
        hc_jit_lib *lib = NULL;
        const char *how = pass ? "emulated" : hc_cpu_amx_usable() ? "on AMX" : "emulated (no AMX here)";
        hc_status st = hc_jit_build(src, pass ? &emulate : NULL, &lib, &err);
        CHECK_MSG(st == HC_OK, "%s", err.msg);
        if (st) continue;
        for (int i = 0; i < N; i++) check_amx_job(i, &amx_cases[i].s, &cfg[i], lib, i % 3 == 1, how);
        hc_jit_close(lib);
        printf("AMX split products: %d kernels %s\n", N, how);
    }
    free(src);
    hc_arena_free(&a);
}

int main(void) {
    test_npy_roundtrip();
    test_npy_files();
    test_configs();
    test_amx();
    test_kernels();
    TEST_DONE();
}
