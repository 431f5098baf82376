/* test_model_file.c — compiled-model files (src/runtime/model_file.c): a compiled model is
 * saved, loaded in a process state where no compiler and no kernel cache can be used
 * (HIDETC_CC=/nonexistent, HIDETC_CACHE_DIR a fresh empty directory), and run on the
 * same random inputs as the compiled one: outputs must be bit-identical, and match the
 * reference evaluator. Models: builtin resnet18-tiny, a graph built with the public graph
 * API (primes, an integer input), and one with awkward outputs (an input, a constant, the
 * same tensor twice, an empty tensor). Then bad files: truncated at many lengths, random
 * bytes, damaged bytes (with and without a matching checksum), another version, a CPU
 * feature this CPU lacks: each must fail with a message naming the file, never crash. */
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include "graph/flops.h"
#include "hidetc.h"
#include "models/builtin.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "runtime/runtime_internal.h"
#include "target/cpu/cpu.h"
#include "test.h"

static char workdir[] = "/tmp/hidetc-test-model-file-XXXXXX";

static char *path_in(const char *name) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sb_printf(&sb, "%s/%s", workdir, name);
    return hc_sb_take(&sb);
}

static bool dir_is_empty(const char *path) {
    DIR *d = opendir(path);
    if (!d) return false;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n == 0;
}

static char *read_bytes(const char *path, size_t *size) {
    char *data = NULL;
    hc_error err = {0};
    hc_status st = hc_read_file(path, &data, size, &err);
    CHECK_MSG(st == HC_OK, "%s", err.msg);
    return data;
}

static void write_bytes(const char *path, const void *data, size_t size) {
    hc_error err = {0};
    CHECK_MSG(hc_write_file(path, data, size, &err) == HC_OK, "%s", err.msg);
}

/* ---- loading without a compiler or a cache ------------------------------------------- */
typedef struct saved_env {
    char *cc, *cache;
} saved_env;

static char *dup_env(const char *name) {
    const char *v = getenv(name);
    return v ? hc_xstrdup(v) : NULL;
}

static void restore(const char *name, char *v) {
    if (v) setenv(name, v, 1);
    else unsetenv(name);
    free(v);
}

/* Load path with HIDETC_CC=/nonexistent and an empty HIDETC_CACHE_DIR, and check that
 * the cache directory is still empty afterwards. */
static hc_status load_isolated(const char *path, hc_model **out, hc_error *err) {
    saved_env s = {dup_env("HIDETC_CC"), dup_env("HIDETC_CACHE_DIR")};
    char *cache = path_in("empty-cache-XXXXXX");
    CHECK(mkdtemp(cache) != NULL);
    setenv("HIDETC_CC", "/nonexistent", 1);
    setenv("HIDETC_CACHE_DIR", cache, 1);
    hc_status st = hc_model_load(path, out, err);
    CHECK_MSG(dir_is_empty(cache), "%s: the load wrote into the cache", path);
    rmdir(cache);
    free(cache);
    restore("HIDETC_CC", s.cc);
    restore("HIDETC_CACHE_DIR", s.cache);
    return st;
}

/* ---- running ----------------------------------------------------------------------- */
typedef struct buffers {
    int nin, nout;
    void **in, **out;
} buffers;

static void buffers_alloc(buffers *b, const hc_model *m) {
    b->nin = hc_model_num_inputs(m), b->nout = hc_model_num_outputs(m);
    b->in = hc_xcalloc((size_t)b->nin + 1, sizeof(void *));
    b->out = hc_xcalloc((size_t)b->nout + 1, sizeof(void *));
    for (int i = 0; i < b->nin; i++)
        b->in[i] = hc_xcalloc(1, hc_tensor_nbytes(hc_model_input(m, i)) + 1);
    for (int i = 0; i < b->nout; i++)
        b->out[i] = hc_xcalloc(1, hc_tensor_nbytes(hc_model_output(m, i)) + 1);
}

static void buffers_free(buffers *b) {
    for (int i = 0; i < b->nin; i++) free(b->in[i]);
    for (int i = 0; i < b->nout; i++) free(b->out[i]);
    free(b->in), free(b->out);
}

static void fill_inputs(const hc_model *m, buffers *b, hc_rng *r) {
    for (int i = 0; i < b->nin; i++) {
        const hc_tensor *t = hc_model_input(m, i);
        for (int64_t k = 0; k < hc_tensor_numel(t); k++) {
            double v = hc_dtype_is_float(t->dtype) ? hc_rng_uniform(r, -1, 1)
                                                   : (double)(hc_rng_next(r) % 3);
            hc_elem_set(b->in[i], t->dtype, k, v);
        }
    }
}

static void check_same_io(const char *label, const hc_model *a, const hc_model *b) {
    CHECK_EQ_INT(hc_model_num_inputs(b), hc_model_num_inputs(a));
    CHECK_EQ_INT(hc_model_num_outputs(b), hc_model_num_outputs(a));
    for (int k = 0; k < 2; k++) {
        int n = k ? hc_model_num_outputs(a) : hc_model_num_inputs(a);
        for (int i = 0; i < n && n == (k ? hc_model_num_outputs(b) : hc_model_num_inputs(b)); i++) {
            const hc_tensor *x = k ? hc_model_output(a, i) : hc_model_input(a, i);
            const hc_tensor *y = k ? hc_model_output(b, i) : hc_model_input(b, i);
            CHECK_MSG(!strcmp(x->name, y->name), "%s: %s %d: '%s' vs '%s'", label,
                      k ? "output" : "input", i, x->name, y->name);
            CHECK_MSG(x->dtype == y->dtype && x->ndim == y->ndim &&
                          !memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->ndim),
                      "%s: %s '%s': dtype or shape differs", label, k ? "output" : "input",
                      x->name);
        }
    }
}

/* The accessors tools use give the same answers for the loaded model. */
static void check_same_kernels(const char *label, const hc_model *a, const hc_model *b) {
    CHECK_EQ_INT(hc_model_num_kernels(b), hc_model_num_kernels(a));
    CHECK_EQ_INT(hc_model_num_programs(b), hc_model_num_programs(a));
    CHECK_EQ_INT(hc_model_arena_bytes(b), hc_model_arena_bytes(a));
    CHECK_EQ_INT(hc_model_intermediate_bytes(b), hc_model_intermediate_bytes(a));
    CHECK_EQ_INT(hc_model_num_threads(b), hc_model_num_threads(a));
    CHECK(!hc_model_is_loaded(a) && hc_model_is_loaded(b));
    for (int i = 0; i < hc_model_num_kernels(a) && i < hc_model_num_kernels(b); i++) {
        const hc_node *x = hc_model_kernel_node(a, i), *y = hc_model_kernel_node(b, i);
        CHECK_MSG(!strcmp(x->name, y->name) && x->op == y->op, "%s: kernel %d: %s (%s) vs %s (%s)",
                  label, i, x->name, hc_op_name(x->op), y->name, hc_op_name(y->op));
        /* shapes and attributes came along: the profile's FLOP count is the same */
        CHECK_MSG(hc_node_flops(x) == hc_node_flops(y), "%s: kernel %d (%s): %g vs %g FLOP",
                  label, i, x->name, hc_node_flops(x), hc_node_flops(y));
        CHECK_EQ_INT(hc_model_kernel_templated(b, i), hc_model_kernel_templated(a, i));
        CHECK_EQ_INT(hc_model_kernel_program(b, i), hc_model_kernel_program(a, i));
        const hc_group *ga = hc_model_kernel_group(a, i), *gb = hc_model_kernel_group(b, i);
        CHECK_EQ_INT(gb->ninputs, ga->ninputs);
        CHECK_EQ_INT(gb->noutputs, ga->noutputs);
        CHECK(gb->anchor == y);
    }
    /* the memory plan, in-place Concat slices (alias_of) included */
    int na, nb;
    const hc_plan_entry *pa = hc_model_plan(a, &na), *pb = hc_model_plan(b, &nb);
    CHECK_EQ_INT(nb, na);
    for (int i = 0; i < na && i < nb; i++)
        CHECK_MSG(pa[i].offset == pb[i].offset && pa[i].bytes == pb[i].bytes &&
                      pa[i].first == pb[i].first && pa[i].last == pb[i].last &&
                      pa[i].alias_of == pb[i].alias_of && !strcmp(pa[i].tensor->name,
                                                                  pb[i].tensor->name),
                  "%s: plan entry %d ('%s') differs after loading", label, i, pa[i].tensor->name);
}

static int plan_aliases(const hc_model *m) {
    int n, c = 0;
    const hc_plan_entry *p = hc_model_plan(m, &n);
    for (int i = 0; i < n; i++) c += p[i].alias_of >= 0;
    return c;
}
static int last_aliases; /* of the model round_trip compiled last */

/* Bit-identical outputs on two rounds of random inputs (the second round also shows that
 * nothing of the first run's inputs stays bound); the loaded one also runs profiled.
 * With `ref` (a shape-inferred copy of the graph), outputs are also checked against the
 * reference evaluator. */
static void check_same_outputs(const char *label, hc_model *a, hc_model *b, const hc_graph *ref) {
    buffers ba, bb;
    buffers_alloc(&ba, a), buffers_alloc(&bb, b);
    void **want = hc_xcalloc((size_t)ba.nout + 1, sizeof(void *));
    for (int i = 0; i < ba.nout; i++)
        want[i] = hc_xcalloc(1, hc_tensor_nbytes(hc_model_output(a, i)) + 1);
    hc_rng r = {20240229};
    for (int round = 0; round < 2; round++) {
        fill_inputs(a, &ba, &r);
        for (int i = 0; i < ba.nin; i++)
            memcpy(bb.in[i], ba.in[i], hc_tensor_nbytes(hc_model_input(a, i)));
        hc_error err = {0};
        CHECK_MSG(hc_model_run(a, ba.in, ba.out, &err) == HC_OK, "%s: %s", label, err.msg);
        double *ms = hc_xcalloc((size_t)hc_model_num_kernels(b) + 1, sizeof(double));
        hc_status st = round ? hc_model_run_profile(b, bb.in, bb.out, ms, &err)
                             : hc_model_run(b, bb.in, bb.out, &err);
        CHECK_MSG(st == HC_OK, "%s: loaded: %s", label, err.msg);
        for (int i = 0; round && i < hc_model_num_kernels(b); i++) CHECK(ms[i] >= 0);
        free(ms);
        for (int i = 0; i < ba.nout; i++) {
            size_t n = hc_tensor_nbytes(hc_model_output(a, i));
            CHECK_MSG(!memcmp(ba.out[i], bb.out[i], n), "%s: round %d: output %d ('%s') differs",
                      label, round, i, hc_model_output(a, i)->name);
        }
        if (!ref) continue;
        st = hc_graph_eval_reference(ref, ba.in, want, &err);
        CHECK_MSG(st == HC_OK, "%s: reference: %s", label, err.msg);
        for (int i = 0; st == HC_OK && i < ba.nout; i++) {
            const hc_tensor *t = hc_model_output(a, i);
            double worst = 0;
            for (int64_t k = 0; k < hc_tensor_numel(t); k++)
                worst = fmax(worst, fabs(hc_elem_get(bb.out[i], t->dtype, k) -
                                         hc_elem_get(want[i], t->dtype, k)));
            CHECK_MSG(worst <= 1e-4, "%s: output '%s' vs the reference: max error %g", label,
                      t->name, worst);
        }
    }
    for (int i = 0; i < ba.nout; i++) free(want[i]);
    free(want);
    buffers_free(&ba), buffers_free(&bb);
}

/* Compile g, save, load in isolation, compare; the loaded model saved again gives the
 * same bytes. Returns the saved file's path (malloc'ed) or NULL. */
static char *round_trip(const char *label, hc_graph *g, const hc_graph *ref,
                        const hc_compile_options *opt) {
    hc_error err = {0};
    hc_model *m = NULL, *l = NULL;
    CHECK_MSG(hc_model_compile(g, opt, &m, &err) == HC_OK, "%s: compile: %s", label, err.msg);
    if (!m) return NULL;
    char *name = hc_arena_printf(&m->arena, "%s.hcm", label);
    char *path = path_in(name);
    CHECK_MSG(hc_model_save(m, path, &err) == HC_OK, "%s: save: %s", label, err.msg);
    CHECK(hc_model_file_is(path));
    last_aliases = plan_aliases(m);
    CHECK_MSG(load_isolated(path, &l, &err) == HC_OK, "%s: load: %s", label, err.msg);
    if (l) {
        check_same_io(label, m, l);
        check_same_kernels(label, m, l);
        check_same_outputs(label, m, l, ref);
        char *again = path_in("again.hcm");
        CHECK_MSG(hc_model_save(l, again, &err) == HC_OK, "%s: save again: %s", label, err.msg);
        size_t n1 = 0, n2 = 0;
        char *b1 = read_bytes(path, &n1), *b2 = read_bytes(again, &n2);
        CHECK_MSG(b1 && b2 && n1 == n2 && !memcmp(b1, b2, n1),
                  "%s: a loaded model saved again differs (%zu vs %zu bytes)", label, n1, n2);
        free(b1), free(b2);
        unlink(again);
        free(again);
        hc_model_free(l);
    }
    hc_model_free(m);
    return path;
}

/* ---- models ------------------------------------------------------------------------- */
static hc_tensor *node1(hc_graph *g, hc_op_kind op, int nin, hc_tensor **in, int nattrs,
                        const hc_attr *attrs) {
    hc_error err = {0};
    hc_node *n = hc_graph_add_node(g, op, NULL, nin, in, 0, NULL, nattrs, attrs, &err);
    CHECK_MSG(n != NULL, "%s", err.msg);
    if (!n) abort();
    return n->outputs[0];
}

static hc_tensor *rand_const(hc_graph *g, hc_rng *r, int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    float *v = hc_xmalloc(sizeof(float) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) v[i] = (float)hc_rng_uniform(r, -1, 1);
    hc_tensor *t = hc_graph_constant(g, NULL, HC_F32, ndim, shape, v);
    free(v);
    return t;
}

/* Outputs no kernel writes (an input, a constant, a tensor twice) and an empty one, next
 * to a 7x13 @ 13x5 matmul with a bias and a softmax. */
static hc_graph *build_awkward(void) {
    hc_rng r = {5};
    hc_graph *g = hc_graph_new("awkward", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){7, 13});
    hc_tensor *e = hc_graph_add_input(g, "e", HC_F32, 2, (int64_t[]){0, 3});
    hc_tensor *w = rand_const(g, &r, 2, (int64_t[]){13, 5});
    hc_tensor *b = rand_const(g, &r, 1, (int64_t[]){5});
    hc_tensor *y = node1(g, HC_OPK_MATMUL, 2, (hc_tensor *[]){x, w}, 0, NULL);
    y = node1(g, HC_OPK_ADD, 2, (hc_tensor *[]){y, b}, 0, NULL);
    hc_attr axis = {.name = "axis", .kind = HC_ATTR_INT, .i = -1};
    hc_tensor *s = node1(g, HC_OPK_SOFTMAX, 1, (hc_tensor *[]){y}, 1, &axis);
    hc_tensor *er = node1(g, HC_OPK_RELU, 1, (hc_tensor *[]){e}, 0, NULL);
    hc_graph_add_output(g, s);
    hc_graph_add_output(g, x);
    hc_graph_add_output(g, rand_const(g, &r, 1, (int64_t[]){3}));
    hc_graph_add_output(g, s);
    hc_graph_add_output(g, er);
    hc_graph_add_output(g, y);
    /* an in-place Concat (fused models): its inputs' plan entries lie inside its output's */
    hc_attr axis0 = {.name = "axis", .kind = HC_ATTR_INT, .i = 0};
    hc_tensor *t = node1(g, HC_OPK_TANH, 1, (hc_tensor *[]){y}, 0, NULL);
    hc_tensor *ng = node1(g, HC_OPK_NEG, 1, (hc_tensor *[]){s}, 0, NULL);
    hc_tensor *cc = node1(g, HC_OPK_CONCAT, 2, (hc_tensor *[]){t, ng}, 1, &axis0);
    hc_graph_add_output(g, node1(g, HC_OPK_SIGMOID, 1, (hc_tensor *[]){cc}, 0, NULL));
    return g;
}

/* Built with the public API: MatMul (11x17 @ 17x3), LeakyRelu, a Gather with an integer
 * input; compiled, saved and loaded through hidetc_model_*. */
static hidetc_graph *build_public(void) {
    hc_rng r = {9};
    float w[17 * 3], table[10 * 3];
    for (int i = 0; i < 17 * 3; i++) w[i] = (float)hc_rng_uniform(&r, -1, 1);
    for (int i = 0; i < 10 * 3; i++) table[i] = (float)hc_rng_uniform(&r, -1, 1);
    hidetc_graph *g;
    CHECK(hidetc_graph_init(&g, "public") == HIDETC_OK);
    hidetc_value x = hidetc_graph_input(g, "x", HIDETC_F32, 2, (int64_t[]){11, 17});
    hidetc_value idx = hidetc_graph_input(g, "idx", HIDETC_I64, 1, (int64_t[]){4});
    hidetc_value wv = hidetc_graph_constant(g, "w", HIDETC_F32, 2, (int64_t[]){17, 3}, w);
    hidetc_value tv = hidetc_graph_constant(g, "table", HIDETC_F32, 2, (int64_t[]){10, 3}, table);
    hidetc_value y, z;
    CHECK(hidetc_graph_op(g, "MatMul", 2, (hidetc_value[]){x, wv}, 0, NULL, 1, &y) == HIDETC_OK);
    hidetc_attr alpha = {.name = "alpha", .kind = HIDETC_ATTR_FLOAT, .f = 0.1};
    CHECK(hidetc_graph_op(g, "LeakyRelu", 1, &y, 1, &alpha, 1, &y) == HIDETC_OK);
    CHECK(hidetc_graph_op(g, "Gather", 2, (hidetc_value[]){tv, idx}, 0, NULL, 1, &z) == HIDETC_OK);
    CHECK(hidetc_graph_output(g, y, "y") == HIDETC_OK);
    CHECK(hidetc_graph_output(g, z, "z") == HIDETC_OK);
    return g;
}

static void test_public_api(void) {
    hidetc_model *m = NULL, *l = NULL;
    hidetc_options opt = {.num_threads = 2};
    CHECK_MSG(hidetc_model_compile(&m, build_public(), &opt) == HIDETC_OK, "%s",
              hidetc_last_error());
    if (!m) return;
    char *path = path_in("public.hcm");
    CHECK_MSG(hidetc_model_save(m, path) == HIDETC_OK, "%s", hidetc_last_error());
    saved_env s = {dup_env("HIDETC_CC"), dup_env("HIDETC_CACHE_DIR")};
    setenv("HIDETC_CC", "/nonexistent", 1);
    setenv("HIDETC_CACHE_DIR", "/nonexistent/cache", 1);
    CHECK_MSG(hidetc_model_load(&l, path) == HIDETC_OK, "%s", hidetc_last_error());
    restore("HIDETC_CC", s.cc);
    restore("HIDETC_CACHE_DIR", s.cache);
    if (l) {
        CHECK_EQ_INT(hidetc_model_num_inputs(l), 2);
        CHECK_EQ_INT(hidetc_model_num_outputs(l), 2);
        CHECK_STR(hidetc_model_input_name(l, 1), "idx");
        CHECK_EQ_INT(hidetc_model_input_dtype(l, 1), HIDETC_I64);
        int64_t shape[HIDETC_MAX_DIMS];
        CHECK_EQ_INT(hidetc_model_output_shape(l, 0, shape), 2);
        CHECK(shape[0] == 11 && shape[1] == 3);
        float x[11 * 17], y1[11 * 3], y2[11 * 3], z1[4 * 3], z2[4 * 3];
        int64_t idx[4] = {9, 0, 3, 9};
        hc_rng r = {3};
        for (int i = 0; i < 11 * 17; i++) x[i] = (float)hc_rng_uniform(&r, -1, 1);
        CHECK(hidetc_model_run(m, (const void *[]){x, idx}, (void *[]){y1, z1}) == HIDETC_OK);
        CHECK(hidetc_model_run(l, (const void *[]){x, idx}, (void *[]){y2, z2}) == HIDETC_OK);
        CHECK(!memcmp(y1, y2, sizeof y1) && !memcmp(z1, z2, sizeof z1));
        /* a spot check of the values themselves: z = table[idx] */
        CHECK(z2[0] == z2[9] && z2[1] == z2[10] && z2[2] == z2[11]);
    }
    hidetc_model_free(l);
    CHECK(hidetc_model_load(&l, "/nonexistent/model.hcm") != HIDETC_OK);
    CHECK(l == NULL && strstr(hidetc_last_error(), "/nonexistent/model.hcm") != NULL);
    hidetc_model_free(m);
    unlink(path);
    free(path);
}

/* ---- bad files ---------------------------------------------------------------------- */
static void set_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> 8 * i);
}

/* The header's size and checksum made to match the (changed) body. */
static void fix_header(unsigned char *b, size_t n) {
    set_u64(b + 16, n);
    set_u64(b + 24, hc_model_file_checksum(b + 32, n - 32));
}

/* Loading must fail with a message that names the file (and contains `want`). Returns
 * whether it failed. */
static bool expect_error(const char *label, const char *path, const char *want) {
    hc_model *m = NULL;
    hc_error err = {0};
    hc_status st = hc_model_load(path, &m, &err);
    CHECK_MSG(st != HC_OK, "%s: loaded", label);
    CHECK_MSG(st == HC_OK || strstr(err.msg, path), "%s: the message does not name the file: %s",
              label, err.msg);
    CHECK_MSG(st == HC_OK || !want || strstr(err.msg, want), "%s: '%s' not in: %s", label, want,
              err.msg);
    hc_model_free(m);
    return st != HC_OK;
}

/* Regions of the file that hold shared-object bytes: damaged, they would reach dlopen,
 * which trusts its input. [start, end) of each ELF image at a 64-byte boundary. */
static bool in_library(const unsigned char *b, size_t n, size_t pos) {
    for (size_t s = 0; s + 64 <= n && s <= pos; s += 64)
        if (!memcmp(b + s, "\x7f" "ELF", 4)) {
            uint64_t shoff = 0;
            for (int i = 7; i >= 0; i--) shoff = shoff << 8 | b[s + 0x28 + (size_t)i];
            size_t end = s + (size_t)shoff + (size_t)(b[s + 0x3c] | b[s + 0x3d] << 8) * 64;
            if (pos < end) return true;
        }
    return false;
}

/* Where the last library ends: after it come the programs, kernels and copies. */
static size_t libraries_end(const unsigned char *b, size_t n) {
    size_t end = 32;
    for (size_t pos = 64; pos < n; pos += 64)
        if (in_library(b, n, pos)) end = pos + 64;
    while (end < n && in_library(b, n, end)) end++;
    return end;
}

static void test_bad_files(const char *good) {
    size_t n = 0;
    unsigned char *orig = (unsigned char *)read_bytes(good, &n);
    if (!orig || n < 1024) {
        CHECK_MSG(false, "no model file to damage");
        free(orig);
        return;
    }
    unsigned char *b = hc_xmalloc(n);
    char *bad = path_in("bad.hcm");

    /* plain truncation: the header's size tells */
    size_t cuts[] = {0, 5, 8, 20, 31, 32, 33, 100, n / 2, n - 1};
    for (size_t i = 0; i < HC_ARRAY_LEN(cuts); i++) {
        write_bytes(bad, orig, cuts[i]);
        expect_error("truncated", bad, cuts[i] < 8 && cuts[i] ? "truncated" : NULL);
    }
    write_bytes(bad, orig, n - 1);
    expect_error("truncated by one", bad, "truncated");

    /* random bytes, without and with the magic */
    hc_rng r = {77};
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char)hc_rng_next(&r);
    write_bytes(bad, b, 4096);
    expect_error("random", bad, "not a hidetc compiled model");
    memcpy(b, orig, 16);
    write_bytes(bad, b, 4096);
    expect_error("random after the magic", bad, NULL);
    fix_header(b, 4096);
    write_bytes(bad, b, 4096);
    expect_error("random body, matching checksum", bad, "corrupt");

    /* one damaged byte: the checksum tells */
    memcpy(b, orig, n);
    b[n / 3] ^= 0x10;
    write_bytes(bad, b, n);
    expect_error("damaged", bad, "checksum");

    /* another format version */
    memcpy(b, orig, n);
    b[8] = 99;
    write_bytes(bad, b, n);
    expect_error("version", bad, "version 99");

    /* compiled for a CPU with an extension this one lacks (bit 62: none has it); the body
     * starts with the target: u32 kind, str name (u32 length + bytes), u32 isa, vector bits,
     * threads, u64 features */
    size_t target_at = 32 + 4 + 4 + ((size_t)orig[36] | (size_t)orig[37] << 8);
    memcpy(b, orig, n);
    b[target_at + 12 + 7] |= 0x40;
    fix_header(b, n);
    write_bytes(bad, b, n);
    expect_error("cpu features", bad, "compiled for another CPU");

    /* a target kind no hidetc has */
    memcpy(b, orig, n);
    b[32] = 7;
    fix_header(b, n);
    write_bytes(bad, b, n);
    expect_error("target kind", bad, "target kind 7");
    if (hc_target_cpu(HC_ISA_AVX512)->caps.isa < HC_ISA_AVX512) {
        memcpy(b, orig, n);
        b[target_at] = HC_ISA_AVX512;
        fix_header(b, n);
        write_bytes(bad, b, n);
        expect_error("isa", bad, "needs avx512");
    }

    /* the body cut anywhere, the header made to match: the parser must notice */
    int failed = 0, tried = 0;
    for (size_t cut = 32; cut < n; cut += cut < 4096 || cut > n - 4096 ? 7 : 509) {
        memcpy(b, orig, cut);
        fix_header(b, cut);
        write_bytes(bad, b, cut);
        failed += expect_error("cut body", bad, "corrupt"), tried++;
    }
    CHECK_EQ_INT(failed, tried);

    /* single damaged bytes outside the libraries, with a matching checksum: an error or a
     * model that loads (a changed weight or name), never a crash */
    int loaded = 0, errors = 0;
    hc_rng pick = {1234};
    size_t tail = libraries_end(orig, n);
    CHECK(tail > 32 && tail < n);
    for (int t = 0; t < 1500; t++) {
        /* one in three anywhere, the others in the kernel tables after the libraries */
        size_t pos = t % 3 == 0 ? 32 + (size_t)(hc_rng_next(&pick) % (n - 32))
                                : tail + (size_t)(hc_rng_next(&pick) % (n - tail));
        if (in_library(orig, n, pos)) continue;
        memcpy(b, orig, n);
        b[pos] ^= (unsigned char)(1 + hc_rng_next(&pick) % 255);
        fix_header(b, n);
        write_bytes(bad, b, n);
        hc_model *m = NULL;
        hc_error err = {0};
        if (hc_model_load(bad, &m, &err) == HC_OK) loaded++;
        else {
            errors++;
            CHECK_MSG(strstr(err.msg, bad) != NULL, "damaged byte %zu: %s", pos, err.msg);
        }
        hc_model_free(m);
    }
    printf("damaged bytes: %d errors, %d still loadable (weights, names)\n", errors, loaded);
    CHECK(errors > 0);

    /* not a file */
    expect_error("missing", "/nonexistent/x.hcm", "cannot open");
    expect_error("directory", workdir, NULL);
    unlink(bad);
    free(bad);
    free(b);
    free(orig);
}

int main(void) {
    CHECK(mkdtemp(workdir) != NULL);
    hc_error err = {0};
    hc_graph *g = NULL;
    CHECK_MSG(hc_builtin_model("resnet18-tiny", &g, &err) == HC_OK, "%s", err.msg);
    hc_graph *ref = NULL;
    CHECK(hc_builtin_model("resnet18-tiny", &ref, &err) == HC_OK);
    CHECK(hc_pass_infer_shapes(ref, &err) == HC_OK);
    hc_compile_options opt = {.num_threads = 2};
    char *resnet = g ? round_trip("resnet18-tiny", g, ref, &opt) : NULL;
    hc_graph_free(ref);

    for (int fuse = 0; fuse < 2; fuse++) {
        hc_graph *a = build_awkward(), *aref = build_awkward();
        CHECK(hc_pass_infer_shapes(aref, &err) == HC_OK);
        hc_compile_options o = {.num_threads = 3, .no_fusion = !fuse};
        free(round_trip(fuse ? "awkward" : "awkward-unfused", a, aref, &o));
        CHECK_EQ_INT(last_aliases, fuse ? 2 : 0); /* the Concat in place when fused */
        hc_graph_free(aref);
    }
    test_public_api();
    if (resnet) test_bad_files(resnet);
    if (resnet) unlink(resnet);
    free(resnet);
    char *empty = path_in("awkward.hcm"), *empty2 = path_in("awkward-unfused.hcm");
    unlink(empty), unlink(empty2);
    free(empty), free(empty2);
    rmdir(workdir);
    TEST_DONE();
}
