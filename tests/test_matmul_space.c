/* test_matmul_space.c — the matmul template's schedule space: candidate 0 is the default,
 * every candidate is valid and distinct, levels nest in size, the order is deterministic,
 * and level-1 candidates compute what the reference interpreter computes. */
#include "target/cpu/cpu.h"
#include "target/cpu/templates/matmul.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#define MAXC 256

/* The machines the rules are checked on, stated (injected targets), so that each check
 * holds on the machine it names whatever the host is. */
#define KIB ((int64_t)1 << 10)
#define MIB ((int64_t)1 << 20)
static hc_target xeon_2c(void) { /* AVX-512 Xeon, the machine the rules were measured on */
    return hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 * KIB, 2 * MIB, 105 * MIB);
}
static hc_target epyc_2c(void) { /* an AVX2 EPYC with 1 MiB L2 */
    return hc_target_cpu_describe(HC_ISA_AVX2, 2, 32 * KIB, 1 * MIB, 32 * MIB);
}
static hc_target xeon_16c(void) {
    return hc_target_cpu_describe(HC_ISA_AVX512, 16, 48 * KIB, 2 * MIB, 105 * MIB);
}
static hc_target epyc_16c(void) {
    return hc_target_cpu_describe(HC_ISA_AVX2, 16, 32 * KIB, 1 * MIB, 32 * MIB);
}

static const hc_matmul_shape shapes[] = {
    {1, 1, 1, 1},       {1, 7, 13, 5},     {1, 65, 31, 129},  {3, 17, 40, 9},
    {1, 64, 12544, 147}, {1, 64, 3136, 576}, {1, 256, 3136, 64}, {1, 128, 784, 1152},
    {1, 512, 49, 4608}, {1, 2048, 49, 512}, {1, 1000, 1, 2048}, {12, 128, 128, 64},
    {1, 2, 4096, 4096}, {1, 4096, 3, 17},
};

static bool same(const hc_matmul_config *x, const hc_matmul_config *y) {
    return x->lanes == y->lanes && x->mr == y->mr && x->nr == y->nr && x->kc == y->kc &&
           x->mc == y->mc && x->nc == y->nc && x->tb == y->tb && x->tm == y->tm &&
           x->tn == y->tn && x->pack_a == y->pack_a && x->pack_b == y->pack_b &&
           x->c_write_once == y->c_write_once && x->rows_first == y->rows_first;
}

static const char *describe(const hc_matmul_shape *s, const hc_matmul_config *c) {
    static char buf[256];
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sb_printf(&sb, "%lldx%lldx%lldx%lld ", (long long)s->batch, (long long)s->m,
                 (long long)s->n, (long long)s->k);
    if (c) hc_matmul_config_print(&sb, c);
    snprintf(buf, sizeof buf, "%s", hc_sb_str(&sb));
    hc_sb_free(&sb);
    return buf;
}

/* The properties of one target's space on every shape above. */
static void check_target(const hc_target *t) {
    static hc_matmul_config a[MAXC], b[MAXC];
    for (size_t si = 0; si < HC_ARRAY_LEN(shapes); si++) {
        const hc_matmul_shape *s = &shapes[si];
        hc_matmul_config def = hc_matmul_default_config(t, s);
        int sizes[3];
        for (int level = 0; level <= 2; level++) {
            int n = hc_matmul_space(t, s, level, a, MAXC);
            sizes[level] = n;
            CHECK_MSG(n >= 1 && n <= MAXC, "%s level %d: %d candidates", describe(s, NULL), level,
                      n);
            if (n < 1 || n > MAXC) continue;
            /* candidate 0 is the default itself, not a clipped copy */
            CHECK_MSG(same(&a[0], &def), "%s level %d: candidate 0 is not the default",
                      describe(s, &a[0]), level);
            /* deterministic: a second call gives the same list; a short buffer its prefix */
            CHECK_EQ_INT(hc_matmul_space(t, s, level, b, MAXC), n);
            bool equal = true;
            for (int i = 0; i < n; i++) equal = equal && same(&a[i], &b[i]);
            CHECK_MSG(equal, "%s level %d: two calls differ", describe(s, NULL), level);
            CHECK_EQ_INT(hc_matmul_space(t, s, level, b, 1), n);
            CHECK(same(&b[0], &def));
            CHECK_EQ_INT(hc_matmul_space(t, s, level, NULL, 0), n);
            for (int i = 0; i < n; i++) {
                hc_error err;
                CHECK_MSG(hc_matmul_validate(&a[i], &err) == HC_OK, "%s: %s",
                          describe(s, &a[i]), err.msg);
                CHECK_EQ_INT(a[i].lanes, hc_target_f32_lanes(t));
                CHECK_EQ_INT((int64_t)a[i].tb * a[i].tm * a[i].tn, HC_MAX(t->caps.num_cores, 1));
                CHECK(!a[i].c_write_once);
                /* register tiles fit the register file (accumulators, B vectors, a
                 * broadcast), except the default's own */
                int nv = a[i].nr / a[i].lanes;
                if (i > 0)
                    CHECK_MSG(a[i].mr * nv + nv + 1 <= t->caps.num_regs, "%s: tile over %d registers",
                              describe(s, &a[i]), t->caps.num_regs);
                /* no register tile taller than the shape */
                CHECK_MSG(a[i].mr <= HC_MAX(s->m, 1), "%s", describe(s, &a[i]));
            }
            /* no two candidates generate the same program */
            char **src = calloc((size_t)n, sizeof *src);
            for (int i = 0; i < n; i++) src[i] = hc_matmul_source(s, &a[i], t, "k", NULL);
            for (int i = 0; i < n; i++) {
                CHECK_MSG(src[i] != NULL, "%s: no source", describe(s, &a[i]));
                for (int j = 0; j < i && src[i]; j++)
                    CHECK_MSG(!src[j] || strcmp(src[i], src[j]) != 0,
                              "%s level %d: candidates %d and %d generate the same program",
                              describe(s, NULL), level, j, i);
            }
            for (int i = 0; i < n; i++) free(src[i]);
            free(src);
        }
        CHECK_EQ_INT(sizes[0], 1);
        CHECK_MSG(1 <= sizes[1] && sizes[1] <= sizes[2], "%s: levels %d %d %d",
                  describe(s, NULL), sizes[0], sizes[1], sizes[2]);
        /* budgets (docs/tuning.md): level 1 about 6-10, level 2 tens */
        CHECK_MSG(sizes[1] <= 10 && sizes[2] <= 40, "%s: levels %d %d", describe(s, NULL),
                  sizes[1], sizes[2]);
    }
}

/* Level sizes on shapes big enough to have choices: level 2 is a real space. */
static void test_sizes(void) {
    const hc_target machines[] = {xeon_2c(), epyc_2c(), xeon_16c(), epyc_16c()};
    const hc_matmul_shape big[] = {{1, 64, 3136, 576}, {1, 256, 196, 2304}, {1, 512, 49, 4608}};
    for (size_t mi = 0; mi < HC_ARRAY_LEN(machines); mi++) {
        const hc_target *t = &machines[mi];
        for (size_t i = 0; i < HC_ARRAY_LEN(big); i++) {
            int n1 = hc_matmul_space(t, &big[i], 1, NULL, 0);
            int n2 = hc_matmul_space(t, &big[i], 2, NULL, 0);
            CHECK_MSG(n1 >= 4 && n2 > n1 && n2 >= 16, "%s, %s, %d cores: levels %d %d",
                      describe(&big[i], NULL), hc_isa_name(t->caps.isa), t->caps.num_cores, n1,
                      n2);
        }
        /* a bad shape still gets its default (the template reports the error) */
        hc_matmul_shape bad = {1, 0, 5, 5};
        CHECK_EQ_INT(hc_matmul_space(t, &bad, 2, NULL, 0), 1);
    }
}

/* More cores: every factorization of the thread count is a candidate grid. */
static void test_many_cores(void) {
    hc_target t = hc_target_cpu_describe(HC_ISA_AVX512, 12, 48 * KIB, 2 * MIB, 105 * MIB);
    check_target(&t);
    hc_matmul_shape s = {4, 512, 512, 512};
    hc_matmul_config c[MAXC];
    int n = hc_matmul_space(&t, &s, 2, c, MAXC);
    bool batch_split = false, col_split = false;
    for (int i = 0; i < n && i < MAXC; i++) {
        batch_split = batch_split || c[i].tb > 1;
        col_split = col_split || c[i].tn > 1;
    }
    CHECK(batch_split && col_split);
    /* one core: a single grid */
    t.caps.num_cores = 1;
    n = hc_matmul_space(&t, &s, 2, c, MAXC);
    for (int i = 0; i < n && i < MAXC; i++) CHECK(c[i].tb == 1 && c[i].tm == 1 && c[i].tn == 1);
}

static float *random_buffer(int64_t n, uint64_t seed) {
    float *x = malloc(sizeof(float) * (size_t)(n ? n : 1));
    hc_rng r = {seed};
    for (int64_t i = 0; i < n; i++) x[i] = (float)hc_rng_uniform(&r, -1, 1);
    return x;
}

/* Every level-1 candidate on awkward shapes against the interpreter. */
static void test_against_interpreter(void) {
    const hc_target *t = hc_target_default();
    const hc_matmul_shape awkward[] = {{1, 1, 1, 1}, {1, 7, 13, 5}, {1, 65, 31, 129},
                                       {2, 3, 37, 11}};
    char cache[] = "/tmp/hidetc-test-space-XXXXXX";
    CHECK(mkdtemp(cache) != NULL);
    hc_jit_options opt = {.cache_dir = cache};
    int checked = 0;
    for (size_t si = 0; si < HC_ARRAY_LEN(awkward); si++) {
        const hc_matmul_shape *s = &awkward[si];
        hc_matmul_config c[MAXC];
        int n = hc_matmul_space(t, s, 1, c, MAXC);
        int64_t na = s->batch * s->m * s->k, nb = s->batch * s->k * s->n;
        int64_t nc = s->batch * s->m * s->n;
        float *A = random_buffer(na, 11 + si), *B = random_buffer(nb, 23 + si);
        float *R = malloc(sizeof(float) * (size_t)nc), *C = malloc(sizeof(float) * (size_t)nc);
        hc_arena a;
        hc_arena_init(&a);
        hc_error err;
        void *in[2] = {A, B}, *out[1] = {R};
        hc_status st = hc_interpret_task(hc_matmul_task(&a, s), in, out, &err);
        CHECK_MSG(st == HC_OK, "interpreter: %s", err.msg);
        for (int i = 0; i < n && st == HC_OK; i++) {
            hc_matmul_kernel k;
            if (hc_matmul_build(s, &c[i], t, &opt, &k, &err) != HC_OK) {
                CHECK_MSG(0, "%s: %s", describe(s, &c[i]), err.msg);
                continue;
            }
            for (int64_t j = 0; j < nc; j++) C[j] = NAN; /* elements never stored stay NaN */
            hc_matmul_run(&k, A, B, C);
            double maxerr = 0, tol = 1e-5 + 2e-6 * (double)s->k;
            for (int64_t j = 0; j < nc; j++) {
                double e = fabs((double)C[j] - (double)R[j]);
                if (!(e <= maxerr)) maxerr = isnan(e) ? INFINITY : e;
            }
            CHECK_MSG(maxerr <= tol, "%s: max error %g", describe(s, &c[i]), maxerr);
            hc_matmul_kernel_close(&k);
            checked++;
        }
        hc_arena_free(&a);
        free(A), free(B), free(C), free(R);
    }
    CHECK_MSG(checked >= 8, "only %d candidates checked", checked);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
    CHECK(system(cmd) == 0);
}

/* The loop order rule (hc_matmul_rows_first_pays): rows first for short K (at most 128)
 * over long rows (a thread's at least 512 columns) whose B block (K x a thread's columns)
 * fits in half of L2. Each case states the machine it checks: the outcome depends on the
 * caches and on how the cores split the columns. */
static void test_rows_first(void) {
    static const hc_matmul_shape shapes_rf[] = {
        {1, 256, 3136, 64},  /* ResNet-50's K = 64 1x1 conv on 56x56 */
        {16, 64, 784, 64},   /* its layer1 Winograd matmul (one batch per thread) */
        {1, 64, 3136, 256},  /* K = 256 */
        {16, 128, 196, 128}, /* short rows (layer2's Winograd matmul) */
        {1, 128, 3072, 768}, /* BERT's FFN */
    };
    const struct {
        const char *name;
        hc_target t;
        bool rows[5]; /* the outcome for each shape above */
    } cases[] = {
        /* 2 threads split the conv's 3136 columns: a B block of 64 x 1568 (392 KiB) */
        {"AVX-512 Xeon, 2 cores, 2 MiB L2", xeon_2c(), {true, true, false, false, false}},
        {"AVX2 EPYC, 2 cores, 1 MiB L2", epyc_2c(), {true, true, false, false, false}},
        {"AVX2 EPYC, 2 cores, 512 KiB L2",
         hc_target_cpu_describe(HC_ISA_AVX2, 2, 32 * KIB, 512 * KIB, 32 * MIB),
         {false, true, false, false, false}},
        /* one thread: the conv's whole rows, a B block of 64 x 3136 (784 KiB) */
        {"AVX-512 Xeon, 1 core, 2 MiB L2",
         hc_target_cpu_describe(HC_ISA_AVX512, 1, 48 * KIB, 2 * MIB, 105 * MIB),
         {true, true, false, false, false}},
        {"AVX-512 Xeon, 1 core, 1 MiB L2",
         hc_target_cpu_describe(HC_ISA_AVX512, 1, 48 * KIB, 1 * MIB, 105 * MIB),
         {false, true, false, false, false}},
        /* 16 threads split the conv's columns 8 ways: rows of about 400 columns, short */
        {"AVX-512 Xeon, 16 cores, 2 MiB L2", xeon_16c(), {false, true, false, false, false}},
        {"AVX2 EPYC, 16 cores, 1 MiB L2", epyc_16c(), {false, true, false, false, false}},
    };
    for (size_t mi = 0; mi < HC_ARRAY_LEN(cases); mi++) {
        const hc_target *t = &cases[mi].t;
        for (size_t i = 0; i < HC_ARRAY_LEN(shapes_rf); i++) {
            const hc_matmul_shape *s = &shapes_rf[i];
            hc_matmul_config c = hc_matmul_default_config(t, s);
            CHECK_MSG(c.rows_first == cases[mi].rows[i], "%s: %s: rows_first %d, expected %d",
                      cases[mi].name, describe(s, &c), c.rows_first, cases[mi].rows[i]);
            hc_matmul_config all[MAXC];
            int n = hc_matmul_space(t, s, 2, all, MAXC);
            for (int j = 0; j < n && j < MAXC; j++)
                CHECK_MSG(all[j].rows_first == hc_matmul_rows_first_pays(&all[j], s, t),
                          "%s: %s candidate %d", cases[mi].name, describe(s, &all[j]), j);
        }
    }
}

int main(void) {
    test_rows_first();
    check_target(hc_target_default());
    check_target(hc_target_cpu(HC_ISA_AVX2));
    check_target(hc_target_cpu(HC_ISA_SCALAR));
    /* stated machines (their sources are generated, not run) */
    hc_target named[] = {xeon_2c(), epyc_2c(), xeon_16c(), epyc_16c()};
    for (size_t i = 0; i < HC_ARRAY_LEN(named); i++) check_target(&named[i]);
    test_sizes();
    test_many_cores();
    test_against_interpreter();
    TEST_DONE();
}
