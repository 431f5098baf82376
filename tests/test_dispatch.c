/* test_dispatch.c — tuning symbolic kernels at several bindings and the dispatch table
 * (docs/dynamic.md, "Tuning and dispatch"): a kernel whose winners differ between the
 * bindings of --tune-shapes keeps one program per winner, and a run executes the one tuned
 * nearest its binding (log scale). The winners are decided by a test hook (no timing, so
 * the same on every host), then once by real timing; every model is run at awkward
 * bindings (1, primes, between and beyond the tuned ones) against the reference
 * evaluator, also after a model-file round trip. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/compile_internal.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "test.h"
#include "sym_build.h"

static const sym_hint *hints;

/* y = Relu(x W + b), x [rows, 96], W [96, 40]: one templated kernel with a symbolic M. */
static void build_rows(hc_graph *g, const hc_sym_binding *b) {
    sym_in xi = {"x", 2, {"rows", "96"}};
    hc_tensor *x = sym_input(g, &xi, b, hints);
    float *w = malloc(sizeof(float) * 96 * 40), bias[40];
    hc_rng rng = {5};
    for (int i = 0; i < 96 * 40; i++) w[i] = (float)hc_rng_uniform(&rng, -0.2, 0.2);
    for (int i = 0; i < 40; i++) bias[i] = (float)hc_rng_uniform(&rng, -1, 1);
    hc_tensor *W = hc_graph_constant(g, "W", HC_F32, 2, (int64_t[]){96, 40}, w);
    hc_tensor *B = hc_graph_constant(g, "b", HC_F32, 1, (int64_t[]){40}, bias);
    free(w);
    hc_tensor *mm = sym_node(g, HC_OPK_MATMUL, "mm", 2, (hc_tensor *[]){x, W}, 0, NULL);
    hc_tensor *ad = sym_node(g, HC_OPK_ADD, "bias", 2, (hc_tensor *[]){mm, B}, 0, NULL);
    hc_graph_add_output(g, sym_node(g, HC_OPK_RELU, "relu", 1, (hc_tensor *[]){ad}, 0, NULL));
}

/* x [batch, seq, 64] W [64, 24]: a kernel over both symbols (M = batch * seq). */
static void build_two(hc_graph *g, const hc_sym_binding *b) {
    sym_in xi = {"x", 3, {"batch", "seq", "64"}};
    hc_tensor *x = sym_input(g, &xi, b, hints);
    float *w = malloc(sizeof(float) * 64 * 24);
    hc_rng rng = {9};
    for (int i = 0; i < 64 * 24; i++) w[i] = (float)hc_rng_uniform(&rng, -0.3, 0.3);
    hc_tensor *W = hc_graph_constant(g, "W", HC_F32, 2, (int64_t[]){64, 24}, w);
    free(w);
    hc_graph_add_output(g, sym_node(g, HC_OPK_MATMUL, "mm", 2, (hc_tensor *[]){x, W}, 0, NULL));
}

/* The hook: candidate 1 at the small bindings (every symbol <= 8), else the last. */
typedef struct hook_log {
    int calls, symbolic_calls;
    int64_t seen[16][4];
} hook_log;

static int pick(void *user, int kernel, const char *const *names, const int64_t *point,
                int nsyms, int ncand, double *ms) {
    (void)kernel, (void)names, (void)ms;
    hook_log *h = user;
    h->calls++;
    if (!point) return 0;
    if (h->symbolic_calls < 16)
        for (int i = 0; i < nsyms && i < 4; i++) h->seen[h->symbolic_calls][i] = point[i];
    h->symbolic_calls++;
    bool small = true;
    for (int i = 0; i < nsyms; i++) small &= point[i] <= 8;
    return small ? 1 : ncand - 1;
}

/* The kernel sets of m: the number of entries that are alternatives. */
static int alternatives(const hc_model *m, int *sets) {
    int n = 0;
    *sets = 0;
    for (int i = 0; i < hc_model_num_kernels(m); i++) {
        int first, nalt, np;
        const int64_t *pts;
        hc_model_kernel_dispatch(m, i, &first, &nalt, &np, &pts);
        if (!nalt) continue;
        n++;
        if (first == i) (*sets)++;
        CHECK_MSG(np >= 1 && pts, "kernel %d: an alternative without points", i);
        CHECK(first <= i && i < first + nalt);
    }
    return n;
}

/* Which entry of the first set runs at rows = r: its index, or -1. */
static int entry_at(hc_model *m, int64_t r) {
    int nk = hc_model_num_kernels(m), which = -1, nrun = 0;
    bool *runs = calloc((size_t)nk + 1, sizeof(bool));
    int64_t dims[2] = {r, 96};
    const int64_t *d[] = {dims};
    hc_error e = {0};
    CHECK_MSG(hc_model_kernels_at(m, d, runs, &e) == HC_OK, "%s", e.msg);
    for (int i = 0; i < nk; i++) {
        int first, nalt;
        hc_model_kernel_dispatch(m, i, &first, &nalt, NULL, NULL);
        if (nalt && runs[i]) which = i, nrun++;
    }
    CHECK_MSG(nrun == 1, "rows=%lld: %d entries of the set run", (long long)r, nrun);
    free(runs);
    return which;
}

static const char *const ROWS[] = {"rows"};

static const char *save_path; /* test_dispatch --save PATH: the hooked model's file (a fuzz seed) */

static void test_hooked(void) {
    hook_log log = {0};
    hc_compile_set_tune_hook(pick, &log);
    hc_tune_shape ts = {"rows", 2, (int64_t[]){4, 64}};
    hc_compile_options o = {.num_threads = 2, .tune_level = 1, .tune_nshapes = 1, .tune_shapes = &ts};
    hc_model *m = sym_compile("dispatch_rows", build_rows, &o);
    hc_compile_options plain = {.num_threads = 2};
    hc_model *ref = sym_compile("dispatch_rows_plain", build_rows, &plain);
    hc_compile_set_tune_hook(NULL, NULL);
    if (!m || !ref) {
        hc_model_free(m), hc_model_free(ref);
        return;
    }
    CHECK_EQ_INT(log.symbolic_calls, 2);
    CHECK(log.seen[0][0] == 4 && log.seen[1][0] == 64);
    int sets, nalt = alternatives(m, &sets);
    CHECK_EQ_INT(sets, 1);
    CHECK_EQ_INT(nalt, 2);
    CHECK_EQ_INT(hc_model_num_kernels(m), hc_model_num_kernels(ref) + 1);
    /* nearest in log scale: 7 is nearer 4, 20 nearer 64 (log 20/4 = 1.61 > log 64/20) */
    int small = entry_at(m, 4), big = entry_at(m, 64);
    CHECK(small >= 0 && big >= 0 && small != big);
    CHECK_EQ_INT(entry_at(m, 1), small);
    CHECK_EQ_INT(entry_at(m, 7), small);
    CHECK_EQ_INT(entry_at(m, 20), big);
    CHECK_EQ_INT(entry_at(m, 1000), big);
    int chosen_small, chosen_big;
    hc_model_kernel_tuning(m, small, NULL, &chosen_small, NULL);
    hc_model_kernel_tuning(m, big, NULL, &chosen_big, NULL);
    CHECK_EQ_INT(chosen_small, 1);
    CHECK(chosen_big > 1);
    int64_t vals[] = {1, 3, 7, 11, 20, 61, 64, 200};
    sym_run_bindings("dispatch_rows", build_rows, 1, &m, 8, ROWS, vals, 1);
    /* the set survives a model file */
    char path[64];
    snprintf(path, sizeof path, "/tmp/hidetc-dispatch-%d.hcm", (int)getpid());
    hc_error e = {0};
    hc_model *lm = NULL;
    CHECK_MSG(hc_model_save(m, path, &e) == HC_OK, "save: %s", e.msg);
    if (save_path) CHECK_MSG(hc_model_save(m, save_path, &e) == HC_OK, "save: %s", e.msg);
    CHECK_MSG(hc_model_load(path, &lm, &e) == HC_OK, "load: %s", e.msg);
    unlink(path);
    if (lm) {
        CHECK_EQ_INT(hc_model_num_kernels(lm), hc_model_num_kernels(m));
        int lsets;
        CHECK_EQ_INT(alternatives(lm, &lsets), 2);
        CHECK_EQ_INT(entry_at(lm, 7), small);
        CHECK_EQ_INT(entry_at(lm, 20), big);
        sym_run_bindings("dispatch_rows_loaded", build_rows, 1, &lm, 8, ROWS, vals, 1);
    }
    hc_model_free(lm);
    hc_model_free(m);
    hc_model_free(ref);
}

/* One winner at every binding: no set. */
static int pick_same(void *user, int kernel, const char *const *names, const int64_t *point,
                     int nsyms, int ncand, double *ms) {
    (void)user, (void)kernel, (void)names, (void)point, (void)nsyms, (void)ms;
    return ncand - 1;
}

/* Times given: candidate 1 wins at rows 4 and the last at rows 64, by `gain` over
 * candidate 1 there (candidate 1 is the winner at the first binding, so the set starts
 * with it). */
static double gain;

static int pick_timed(void *user, int kernel, const char *const *names, const int64_t *point,
                      int nsyms, int ncand, double *ms) {
    (void)user, (void)kernel, (void)names, (void)nsyms;
    if (!point) return 0;
    for (int c = 0; c < ncand; c++) ms[c] = 10.0;
    if (point[0] <= 8) {
        ms[1] = 5.0;
        return 1;
    }
    ms[1] = 8.0 * (1 + gain);
    ms[ncand - 1] = 8.0;
    return ncand - 1;
}

/* A winner only a little faster than a config kept for another binding is not worth a
 * program (and its weights) of its own: within 5% the set is one config. */
static void test_gain(void) {
    const double gains[] = {0.03, 0.20};
    const int want[] = {0, 2};
    for (int q = 0; q < 2; q++) {
        gain = gains[q];
        hc_compile_set_tune_hook(pick_timed, NULL);
        hc_tune_shape ts = {"rows", 2, (int64_t[]){4, 64}};
        hc_compile_options o = {.num_threads = 2, .tune_level = 1, .tune_nshapes = 1, .tune_shapes = &ts};
        hc_model *m = sym_compile("dispatch_gain", build_rows, &o);
        hc_compile_set_tune_hook(NULL, NULL);
        if (!m) continue;
        int sets;
        CHECK_MSG(alternatives(m, &sets) == want[q], "gain %.2f: %d alternatives, want %d",
                  gain, alternatives(m, &sets), want[q]);
        int chosen = -1;
        for (int i = 0; i < hc_model_num_kernels(m) && !want[q]; i++)
            if (hc_model_kernel_node(m, i)->op == HC_OPK_MATMUL)
                hc_model_kernel_tuning(m, i, NULL, &chosen, NULL);
        if (!want[q]) CHECK_EQ_INT(chosen, 1); /* the config of rows 4 serves rows 64 */
        int64_t vals[] = {1, 5, 64, 99};
        sym_run_bindings("dispatch_gain", build_rows, 1, &m, 4, ROWS, vals, 1);
        hc_model_free(m);
    }
}

static void test_one_winner(void) {
    hc_compile_set_tune_hook(pick_same, NULL);
    hc_tune_shape ts = {"rows", 3, (int64_t[]){2, 16, 128}};
    hc_compile_options o = {.num_threads = 2, .tune_level = 1, .tune_nshapes = 1, .tune_shapes = &ts};
    o.verbose = getenv("DISPATCH_VERBOSE") != NULL;
    hc_model *m = sym_compile("dispatch_same", build_rows, &o);
    hc_compile_set_tune_hook(NULL, NULL);
    if (!m) return;
    int sets;
    CHECK_EQ_INT(alternatives(m, &sets), 0);
    int64_t vals[] = {1, 5, 130};
    sym_run_bindings("dispatch_same", build_rows, 1, &m, 3, ROWS, vals, 1);
    hc_model_free(m);
}

/* Two symbols: the bindings are every combination; a kernel over both is tuned at each. */
static void test_two_symbols(void) {
    hook_log log = {0};
    hc_compile_set_tune_hook(pick, &log);
    hc_tune_shape ts[] = {{"batch", 2, (int64_t[]){1, 8}}, {"seq", 2, (int64_t[]){4, 32}}};
    hc_compile_options o = {.num_threads = 2, .tune_level = 1, .tune_nshapes = 2, .tune_shapes = ts};
    hc_model *m = sym_compile("dispatch_two", build_two, &o);
    hc_compile_set_tune_hook(NULL, NULL);
    if (!m) return;
    CHECK_EQ_INT(log.symbolic_calls, 4);
    int sets;
    CHECK_EQ_INT(alternatives(m, &sets), 2);
    const char *const names[] = {"batch", "seq"};
    int64_t vals[] = {1, 1, 1, 5, 2, 7, 8, 32, 3, 33, 9, 2};
    sym_run_bindings("dispatch_two", build_two, 1, &m, 6, names, vals, 2);
    hc_model_free(m);
}

/* Real timing at two bindings: whatever wins, the model is right everywhere, and a second
 * compile takes the winners from the records. */
static void test_timed(void) {
    hc_tune_shape ts = {"rows", 2, (int64_t[]){2, 300}};
    hc_compile_options o = {.num_threads = 2, .tune_level = 1, .tune_nshapes = 1, .tune_shapes = &ts};
    hc_model *m = sym_compile("dispatch_timed", build_rows, &o);
    if (!m) return;
    int64_t vals[] = {1, 2, 13, 300, 301};
    sym_run_bindings("dispatch_timed", build_rows, 1, &m, 5, ROWS, vals, 1);
    hc_model *again = sym_compile("dispatch_timed_again", build_rows, &o);
    if (again) {
        CHECK_EQ_INT(hc_model_num_kernels(again), hc_model_num_kernels(m));
        for (int i = 0; i < hc_model_num_kernels(again); i++) {
            int ncand, chosen, chosen0;
            bool cached;
            hc_model_kernel_tuning(again, i, &ncand, &chosen, &cached);
            hc_model_kernel_tuning(m, i, NULL, &chosen0, NULL);
            CHECK_EQ_INT(chosen, chosen0);
            if (ncand > 1) CHECK_MSG(cached, "kernel %d: tuned again, not from its records", i);
        }
    }
    hc_model_free(again);
    hc_model_free(m);
}

static void expect_error(const char *label, sym_build_fn build, hc_tune_shape *ts, int n,
                         const char *want) {
    hc_error e = {0};
    hc_graph *g = hc_graph_new(label, 17);
    build(g, NULL);
    CHECK(hc_pass_infer_shapes(g, &e) == HC_OK);
    hc_compile_options o = {.num_threads = 2, .tune_level = 1, .tune_nshapes = n, .tune_shapes = ts};
    hc_model *m = NULL;
    CHECK_EQ_INT(hc_model_compile(g, &o, &m, &e), HC_ERR_INVALID);
    CHECK_MSG(strstr(e.msg, want) != NULL, "%s: '%s' lacks '%s'", label, e.msg, want);
    hc_model_free(m);
}

static void build_static(hc_graph *g, const hc_sym_binding *b) {
    (void)b;
    sym_in xi = {"x", 2, {"3", "96"}};
    hc_tensor *x = sym_input(g, &xi, NULL, NULL);
    hc_graph_add_output(g, sym_node(g, HC_OPK_RELU, "relu", 1, (hc_tensor *[]){x}, 0, NULL));
}

static void test_errors(void) {
    expect_error("unknown", build_rows, &(hc_tune_shape){"batch", 1, (int64_t[]){2}}, 1,
                 "--tune-shapes batch: the model has no such symbol (its symbols: rows)");
    expect_error("zero", build_rows, &(hc_tune_shape){"rows", 2, (int64_t[]){4, 0}}, 1,
                 "--tune-shapes rows=0: a value must be at least 1");
    expect_error("twice", build_rows,
                 (hc_tune_shape[]){{"rows", 1, (int64_t[]){4}}, {"rows", 1, (int64_t[]){8}}}, 2,
                 "--tune-shapes rows: given twice");
    expect_error("static", build_static, &(hc_tune_shape){"rows", 1, (int64_t[]){2}}, 1,
                 "--tune-shapes: the model has no symbolic dimensions");
    int64_t many[65];
    for (int i = 0; i < 65; i++) many[i] = i + 1;
    expect_error("many", build_rows, &(hc_tune_shape){"rows", 65, many}, 1,
                 "more than 64 bindings");
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--save")) { /* scripts/fuzz.sh: a seed with a set */
        save_path = argv[2];
        test_hooked();
        TEST_DONE();
    }
    test_hooked();
    test_one_winner();
    test_gain();
    test_two_symbols();
    test_timed();
    test_errors();
    TEST_DONE();
}
