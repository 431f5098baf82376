/* test_runtime.c — the CPU executor: compiled graphs against the reference graph
 * evaluator, the memory plan (directly and as a property of random live ranges), kernel
 * deduplication, outputs that are inputs or constants, empty tensors, run-time errors. */
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>

#include "fuse/fuse.h"
#include "passes/passes.h"
#include "target/cpu/affinity.h"
#include "runtime/runtime.h"
#include "test.h"
#include "graph_build.h"

static hc_rng weights_rng;

/* ---- graph building ---------------------------------------------------------------- */

/* conv -> relu -> maxpool -> reshape -> gemm -> softmax */
static hc_graph *build_cnn(void) {
    hc_graph *g = hc_graph_new("cnn", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 3, 9, 9});
    hc_tensor *w = rand_const(g, &weights_rng, 4, (int64_t[]){4, 3, 3, 3});
    hc_tensor *b = rand_const(g, &weights_rng, 1, (int64_t[]){4});
    hc_attr conv[] = {ints_attr("pads", 4, (int64_t[]){1, 1, 1, 1})};
    hc_tensor *y = OPA(g, CONV, conv, 1, x, w, b);
    y = OP(g, RELU, y);
    hc_attr pool[] = {ints_attr("kernel_shape", 2, (int64_t[]){2, 2}),
                      ints_attr("strides", 2, (int64_t[]){2, 2})};
    y = OPA(g, MAX_POOL, pool, 2, y);
    y = OP(g, RESHAPE, y, i64_const(g, 2, (int64_t[]){1, 64}));
    hc_tensor *w2 = rand_const(g, &weights_rng, 2, (int64_t[]){10, 64});
    hc_tensor *b2 = rand_const(g, &weights_rng, 1, (int64_t[]){10});
    hc_attr gemm[] = {int_attr("transB", 1)};
    y = OPA(g, GEMM, gemm, 1, y, w2, b2);
    hc_attr sm[] = {int_attr("axis", -1)};
    hc_graph_add_output(g, OPA(g, SOFTMAX, sm, 1, y));
    return g;
}

/* Shared inputs; outputs that are a graph input, a constant, and the same tensor twice. */
static hc_graph *build_shared(void) {
    hc_graph *g = hc_graph_new("shared", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){5, 7});
    hc_tensor *y = hc_graph_add_input(g, "y", HC_F32, 2, (int64_t[]){5, 7});
    hc_tensor *a = OP(g, ADD, x, y);
    hc_tensor *b = OP(g, MUL, x, x);
    hc_tensor *c = OP(g, SUB, a, b);
    hc_graph_add_output(g, c);
    hc_graph_add_output(g, a);
    hc_graph_add_output(g, x);
    hc_graph_add_output(g, rand_const(g, &weights_rng, 2, (int64_t[]){2, 3}));
    hc_graph_add_output(g, a);
    return g;
}

/* transpose -> reduce -> sigmoid -> matmul with a constant -> tanh */
static hc_graph *build_reduce(void) {
    hc_graph *g = hc_graph_new("reduce", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 3, (int64_t[]){2, 3, 17});
    hc_attr perm[] = {ints_attr("perm", 3, (int64_t[]){0, 2, 1})};
    hc_tensor *y = OPA(g, TRANSPOSE, perm, 1, x);
    hc_attr red[] = {ints_attr("axes", 1, (int64_t[]){1}), int_attr("keepdims", 1)};
    y = OPA(g, REDUCE_MEAN, red, 2, y);
    y = OP(g, SIGMOID, y);
    y = OP(g, MATMUL, y, rand_const(g, &weights_rng, 2, (int64_t[]){3, 6}));
    hc_graph_add_output(g, OP(g, TANH, y));
    return g;
}

/* An embedding lookup: integer input ids. */
static hc_graph *build_gather(void) {
    hc_graph *g = hc_graph_new("gather", 13);
    hc_tensor *ids = hc_graph_add_input(g, "ids", HC_I64, 2, (int64_t[]){2, 5});
    hc_tensor *table = rand_const(g, &weights_rng, 2, (int64_t[]){20, 8});
    hc_tensor *e = OP(g, GATHER, table, ids);
    hc_attr red[] = {ints_attr("axes", 1, (int64_t[]){2}), int_attr("keepdims", 0)};
    hc_graph_add_output(g, OPA(g, REDUCE_SUM, red, 2, e));
    return g;
}

/* An empty input: an empty intermediate and output, and a concat with an empty piece. */
static hc_graph *build_empty(void) {
    hc_graph *g = hc_graph_new("empty", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){0, 4});
    hc_tensor *y = hc_graph_add_input(g, "y", HC_F32, 2, (int64_t[]){3, 4});
    hc_tensor *e = OP(g, RELU, x);
    hc_graph_add_output(g, OP(g, NEG, e));
    hc_attr ax[] = {int_attr("axis", 0)};
    hc_graph_add_output(g, OPA(g, CONCAT, ax, 1, e, y));
    hc_graph_add_output(g, OP(g, RELU, y));
    return g;
}

/* A chain of elementwise ops on one shape: intermediates can share memory, and the
 * repeated ops have identical programs. */
static hc_graph *build_chain(void) {
    hc_graph *g = hc_graph_new("chain", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){32, 64});
    hc_tensor *y = x;
    for (int i = 0; i < 4; i++) {
        y = OP(g, RELU, y);
        y = OP(g, NEG, y);
    }
    hc_graph_add_output(g, OP(g, SIGMOID, y));
    return g;
}

/* Concats: two in place, one nested in the other (relu(conv(x)) and sigmoid(x) end to end
 * along channels at batch 1, then that and -x along axis -3), their slices also read by
 * other kernels; and three that must stay kernels: an input that is a graph input, an
 * outer dimension of 2, an output that is a graph output. */
static hc_graph *build_concat(void) {
    hc_graph *g = hc_graph_new("concat", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 5, 7, 3});
    hc_tensor *z = hc_graph_add_input(g, "z", HC_F32, 3, (int64_t[]){2, 3, 5});
    hc_tensor *w = rand_const(g, &weights_rng, 4, (int64_t[]){4, 5, 1, 1});
    hc_tensor *a = OP(g, RELU, OP(g, CONV, x, w));
    hc_tensor *b = OP(g, SIGMOID, x);
    hc_attr ax0[] = {int_attr("axis", 0)}, ax1[] = {int_attr("axis", 1)},
            axm3[] = {int_attr("axis", -3)};
    hc_tensor *c = OPA(g, CONCAT, ax1, 1, a, b);
    hc_tensor *d = OP(g, NEG, x);
    hc_tensor *e = OPA(g, CONCAT, axm3, 1, c, d); /* [1, 14, 7, 3] */
    hc_tensor *w2 = rand_const(g, &weights_rng, 4, (int64_t[]){3, 14, 3, 3});
    hc_attr pads[] = {ints_attr("pads", 4, (int64_t[]){1, 1, 1, 1})};
    hc_graph_add_output(g, OPA(g, CONV, pads, 1, e, w2));
    hc_graph_add_output(g, OP(g, MUL, b, d)); /* slices read again after the concat */
    hc_graph_add_output(g, OP(g, RELU, c));    /* and the nested concat itself */
    /* kernels: x is a graph input; z's outer dimension is 2; the output is a graph output */
    hc_graph_add_output(g, OP(g, TANH, OPA(g, CONCAT, ax1, 1, x, d)));
    hc_graph_add_output(g, OP(g, TANH, OPA(g, CONCAT, ax1, 1, OP(g, NEG, z), OP(g, RELU, z))));
    hc_graph_add_output(g, OPA(g, CONCAT, ax0, 1, OP(g, SIGMOID, z), OP(g, TANH, z)));
    return g;
}

/* ---- comparison with the reference evaluator ------------------------------------- */
static void fill_input(const hc_tensor *t, void *buf, hc_rng *r) {
    int64_t n = hc_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        if (t->dtype == HC_F32) ((float *)buf)[i] = (float)hc_rng_uniform(r, -2, 2);
        else if (t->dtype == HC_I64) ((int64_t *)buf)[i] = (int64_t)(hc_rng_next(r) % 20);
        else HC_ASSERT(0 && "test inputs are f32 or i64");
    }
}

static double max_abs(const float *v, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(v[i]));
    return m;
}

typedef struct io {
    int nin, nout;
    void **in, **out, **ref;
} io;

static void io_alloc(io *b, const hc_graph *g) {
    b->nin = (int)g->inputs.len, b->nout = (int)g->outputs.len;
    b->in = calloc((size_t)b->nin + 1, sizeof(void *));
    b->out = calloc((size_t)b->nout + 1, sizeof(void *));
    b->ref = calloc((size_t)b->nout + 1, sizeof(void *));
    for (int i = 0; i < b->nin; i++) b->in[i] = calloc(1, hc_tensor_nbytes(g->inputs.data[i]) + 1);
    for (int i = 0; i < b->nout; i++) {
        size_t n = hc_tensor_nbytes(g->outputs.data[i]) + 1;
        b->out[i] = calloc(1, n), b->ref[i] = calloc(1, n);
    }
}

static void io_free(io *b) {
    for (int i = 0; i < b->nin; i++) free(b->in[i]);
    for (int i = 0; i < b->nout; i++) free(b->out[i]), free(b->ref[i]);
    free(b->in), free(b->out), free(b->ref);
}

static void compare_outputs(const char *label, const hc_graph *ref, const io *b) {
    for (int i = 0; i < b->nout; i++) {
        const hc_tensor *t = ref->outputs.data[i];
        int64_t n = hc_tensor_numel(t);
        if (t->dtype != HC_F32) {
            CHECK_MSG(!memcmp(b->out[i], b->ref[i], hc_tensor_nbytes(t)), "%s: output %d", label,
                      i);
            continue;
        }
        const float *got = b->out[i], *want = b->ref[i];
        double tol = 1e-4 * fmax(1.0, max_abs(want, n)), worst = 0;
        for (int64_t k = 0; k < n; k++) worst = fmax(worst, fabs((double)got[k] - want[k]));
        CHECK_MSG(worst <= tol, "%s: output %d (%s): max error %g > %g", label, i, t->name, worst,
                  tol);
    }
}

/* Compile build() with `threads`, run it on two sets of random inputs and compare with the
 * reference evaluator on a separately built copy. Returns the model (caller frees). */
/* Unfused: one kernel per node (the plan and dedup tests count them). */
static bool no_fusion;

static hc_model *check_model(const char *label, hc_graph *(*build)(void), int threads) {
    weights_rng = (hc_rng){7};
    hc_graph *ref = build();
    weights_rng = (hc_rng){7}; /* the same weights */
    hc_graph *g = build();
    hc_error err = {0};
    hc_status st = hc_pass_infer_shapes(ref, &err);
    CHECK_MSG(st == HC_OK, "%s: infer: %s", label, err.msg);
    hc_model *m = NULL;
    hc_compile_options opt = {.num_threads = threads, .no_fusion = no_fusion};
    hc_status cst = hc_model_compile(g, &opt, &m, &err);
    CHECK_MSG(cst == HC_OK, "%s: compile: %s", label, err.msg);
    if (st != HC_OK || cst != HC_OK) {
        hc_graph_free(ref);
        return NULL;
    }
    CHECK_EQ_INT(hc_model_num_inputs(m), (int)ref->inputs.len);
    CHECK_EQ_INT(hc_model_num_outputs(m), (int)ref->outputs.len);
    io b;
    io_alloc(&b, ref);
    hc_rng r = {11};
    for (int round = 0; round < 2; round++) { /* a second run sees new input values */
        for (int i = 0; i < b.nin; i++) fill_input(ref->inputs.data[i], b.in[i], &r);
        st = hc_graph_eval_reference(ref, b.in, b.ref, &err);
        CHECK_MSG(st == HC_OK, "%s: reference: %s", label, err.msg);
        st = hc_model_run(m, b.in, b.out, &err);
        CHECK_MSG(st == HC_OK, "%s: run: %s", label, err.msg);
        compare_outputs(label, ref, &b);
    }
    io_free(&b);
    hc_graph_free(ref);
    return m;
}

/* ---- the memory plan ------------------------------------------------------------- */
static bool ranges_meet(int f1, int l1, int f2, int l2) { return f1 <= l2 && f2 <= l1; }

static void check_plan(const char *label, const hc_model *m) {
    int n;
    const hc_plan_entry *p = hc_model_plan(m, &n);
    size_t arena = hc_model_arena_bytes(m), sum = 0;
    for (int i = 0; i < n; i++) {
        CHECK_MSG(p[i].offset + p[i].bytes <= arena, "%s: %s past the arena", label,
                  p[i].tensor->name);
        CHECK(p[i].first <= p[i].last && p[i].bytes == hc_tensor_nbytes(p[i].tensor));
        int r = p[i].alias_of;
        if (r >= 0) { /* a slice of an in-place Concat's output: inside it, live within it */
            CHECK_MSG(r < i && p[r].alias_of == -1, "%s: %s: alias of %d", label,
                      p[i].tensor->name, r);
            if (r >= i || p[r].alias_of != -1) continue;
            CHECK_MSG(p[i].offset >= p[r].offset &&
                          p[i].offset + p[i].bytes <= p[r].offset + p[r].bytes,
                      "%s: %s lies outside %s", label, p[i].tensor->name, p[r].tensor->name);
            CHECK_MSG(p[r].first <= p[i].first && p[i].last <= p[r].last,
                      "%s: %s lives outside %s", label, p[i].tensor->name, p[r].tensor->name);
            continue;
        }
        sum += p[i].bytes;
        CHECK_MSG(p[i].offset % 64 == 0, "%s: %s at %zu", label, p[i].tensor->name, p[i].offset);
        for (int j = 0; j < i; j++) {
            if (p[j].alias_of >= 0) continue; /* checked through its root */
            if (!ranges_meet(p[i].first, p[i].last, p[j].first, p[j].last)) continue;
            bool apart = p[i].offset + p[i].bytes <= p[j].offset ||
                         p[j].offset + p[j].bytes <= p[i].offset;
            CHECK_MSG(apart, "%s: %s and %s are live together and overlap", label,
                      p[i].tensor->name, p[j].tensor->name);
        }
    }
    CHECK_EQ_INT(sum, hc_model_intermediate_bytes(m));
}

/* Random live ranges: invariants, and the arena between the peak of live bytes and the
 * sum of all sizes. */
static void test_plan_random(void) {
    hc_rng r = {3};
    enum { N = 60, STEPS = 25 };
    for (int round = 0; round < 20; round++) {
        size_t bytes[N], offs[N];
        int first[N], last[N];
        for (int i = 0; i < N; i++) {
            bytes[i] = hc_rng_next(&r) % 7 == 0 ? 0 : (size_t)(hc_rng_next(&r) % 5000);
            first[i] = (int)(hc_rng_next(&r) % STEPS);
            last[i] = first[i] + (int)(hc_rng_next(&r) % 6);
        }
        size_t arena = hc_plan_memory(N, bytes, first, last, offs);
        size_t sum = 0, peak = 0;
        for (int i = 0; i < N; i++) sum += (bytes[i] + 63) / 64 * 64;
        for (int s = 0; s < STEPS + 6; s++) {
            size_t live = 0;
            for (int i = 0; i < N; i++)
                if (first[i] <= s && s <= last[i]) live += (bytes[i] + 63) / 64 * 64;
            peak = live > peak ? live : peak;
        }
        CHECK_MSG(arena >= peak && arena <= sum, "arena %zu, peak %zu, sum %zu", arena, peak, sum);
        CHECK_MSG(arena < sum, "no reuse at all: arena %zu, sum %zu", arena, sum);
        int bad = 0;
        for (int i = 0; i < N; i++) {
            bad += offs[i] % 64 != 0 || offs[i] + bytes[i] > arena;
            for (int j = 0; j < i; j++)
                bad += bytes[i] && bytes[j] && ranges_meet(first[i], last[i], first[j], last[j]) &&
                       offs[i] < offs[j] + bytes[j] && offs[j] < offs[i] + bytes[i];
        }
        CHECK_EQ_INT(bad, 0);
    }
    CHECK_EQ_INT(hc_plan_memory(0, NULL, NULL, NULL, NULL), 0);
}

/* Three buffers where the first and third never meet: the third reuses the first. */
static void test_plan_small(void) {
    size_t bytes[] = {1000, 100, 1000}, offs[3];
    int first[] = {0, 1, 2}, last[] = {1, 2, 3};
    size_t arena = hc_plan_memory(3, bytes, first, last, offs);
    CHECK_EQ_INT(offs[0], offs[2]);
    CHECK_EQ_INT(arena, 1024 + 128);
}

/* ---- models ---------------------------------------------------------------------- */
static void test_models(void) {
    hc_model *m = check_model("cnn", build_cnn, 2);
    if (m) check_plan("cnn", m), hc_model_free(m);
    m = check_model("cnn/1 thread", build_cnn, 1);
    hc_model_free(m);
    m = check_model("reduce", build_reduce, 2);
    if (m) check_plan("reduce", m), hc_model_free(m);
    m = check_model("gather", build_gather, 2);
    hc_model_free(m);
}

/* Concat nodes the kernels run (as anchors or fused into their groups). */
static int concat_kernels(const hc_model *m) {
    int n = 0;
    for (int i = 0; i < hc_model_num_kernels(m); i++) {
        const hc_group *g = hc_model_kernel_group(m, i);
        n += g->anchor->op == HC_OPK_CONCAT;
        for (int j = 0; j < g->nprologue; j++) n += g->prologue[j]->op == HC_OPK_CONCAT;
        for (int j = 0; j < g->nepilogue; j++) n += g->epilogue[j]->op == HC_OPK_CONCAT;
    }
    return n;
}

/* In-place concats run no kernel and their inputs are planned inside their outputs;
 * the others stay kernels; unfused, every concat is a kernel. */
static void test_concat_in_place(void) {
    for (int threads = 1; threads <= 2; threads++) {
        hc_model *m = check_model("concat", build_concat, threads);
        if (!m) continue;
        check_plan("concat", m);
        CHECK_EQ_INT(concat_kernels(m), 3);
        int n, aliases = 0;
        const hc_plan_entry *p = hc_model_plan(m, &n);
        for (int i = 0; i < n; i++) aliases += p[i].alias_of >= 0;
        CHECK_EQ_INT(aliases, 4); /* relu(conv), sigmoid, their concat, neg: in the outer */
        CHECK_EQ_INT(hc_model_num_kernels(m), 9); /* 11 with the two concats as kernels */
        hc_model_free(m);
    }
    no_fusion = true;
    hc_model *m = check_model("concat/unfused", build_concat, 2);
    no_fusion = false;
    if (m) {
        check_plan("concat/unfused", m);
        CHECK_EQ_INT(concat_kernels(m), 5);
        hc_model_free(m);
    }
}

static void test_shared_and_io_outputs(void) {
    no_fusion = true;
    hc_model *m = check_model("shared", build_shared, 2);
    no_fusion = false;
    if (!m) return;
    check_plan("shared", m);
    CHECK_EQ_INT(hc_model_num_kernels(m), 3);
    hc_model_free(m);
    m = check_model("shared/fused", build_shared, 2); /* checked against the reference */
    hc_model_free(m);
}

static void test_empty(void) {
    hc_model *m = check_model("empty", build_empty, 2);
    if (!m) return;
    /* the empty tensors take no arena room and run no kernel */
    int n;
    const hc_plan_entry *p = hc_model_plan(m, &n);
    for (int i = 0; i < n; i++) CHECK(p[i].bytes > 0);
    CHECK(hc_model_num_kernels(m) <= 2);
    hc_model_free(m);
}

static void test_chain_memory_and_dedup(void) {
    no_fusion = true;
    hc_model *m = check_model("chain", build_chain, 2);
    no_fusion = false;
    if (!m) return;
    check_plan("chain", m);
    size_t one = 32 * 64 * sizeof(float);
    CHECK_EQ_INT(hc_model_intermediate_bytes(m), 8 * one);
    CHECK_MSG(hc_model_arena_bytes(m) <= 2 * one, "arena %zu", hc_model_arena_bytes(m));
    CHECK_EQ_INT(hc_model_num_kernels(m), 9);
    CHECK_MSG(hc_model_num_programs(m) == 3, "%d programs", hc_model_num_programs(m));
    hc_model_free(m);
    /* fused: the injective chain is one kernel, with no intermediate tensor */
    m = check_model("chain/fused", build_chain, 2);
    if (!m) return;
    CHECK_EQ_INT(hc_model_num_kernels(m), 1);
    CHECK_EQ_INT(hc_model_intermediate_bytes(m), 0);
    hc_model_free(m);
}

static void test_run_errors(void) {
    weights_rng = (hc_rng){7};
    hc_model *m;
    hc_error err = {0};
    if (hc_model_compile(build_chain(), NULL, &m, &err) != HC_OK) {
        CHECK_MSG(0, "compile: %s", err.msg);
        return;
    }
    float x[32 * 64] = {0};
    void *in[] = {x}, *out[] = {NULL};
    CHECK_EQ_INT(hc_model_run(m, in, out, &err), HC_ERR_INVALID);
    CHECK(strstr(err.msg, "output") != NULL);
    hc_model_free(m);
}

/* A node reading a tensor nobody produces: an error, not a crash. */
static void test_compile_errors(void) {
    hc_graph *g = hc_graph_new("dangling", 13);
    hc_tensor *ghost = hc_graph_tensor(g, "ghost", HC_F32, 1, (int64_t[]){4});
    hc_graph_add_output(g, OP(g, RELU, ghost));
    hc_model *m = NULL;
    hc_error err = {0};
    CHECK(hc_model_compile(g, NULL, &m, &err) != HC_OK);
    CHECK(m == NULL && err.msg[0] != '\0');
}

/* Thread placement (runtime/affinity.c): a 2-thread run pins OpenMP's worker to the
 * second CPU the process may use and gives the caller its own mask back. */
static void test_thread_placement(void) {
    cpu_set_t orig, after;
    CHECK(pthread_getaffinity_np(pthread_self(), sizeof orig, &orig) == 0);
    int ncpu = CPU_COUNT(&orig), second = -1;
    for (int c = 0, seen = 0; c < CPU_SETSIZE && second < 0; c++)
        if (CPU_ISSET(c, &orig) && seen++ == 1) second = c;
    setenv("HIDETC_BIND", "0", 1);
    CHECK(!hc_pin_wanted(2, true));
    unsetenv("HIDETC_BIND");
    CHECK(!hc_pin_wanted(2, false)); /* the library pins only when asked */
    setenv("HIDETC_BIND", "1", 1);
    CHECK(hc_pin_wanted(2, false) == (ncpu >= 2));
    CHECK(!hc_pin_wanted(1, true));
    CHECK(!hc_pin_wanted(ncpu + 1, true));
    hc_model *m = check_model("placement", build_cnn, 2);
    hc_model_free(m);
    CHECK(pthread_getaffinity_np(pthread_self(), sizeof after, &after) == 0);
    CHECK_MSG(CPU_EQUAL(&orig, &after), "the caller's CPU mask changed across a run");
    if (ncpu >= 2) {
        cpu_set_t w;
        CPU_ZERO(&w);
        int team = 0;
#pragma omp parallel num_threads(2)
        {
            if (omp_get_thread_num() == 1) pthread_getaffinity_np(pthread_self(), sizeof w, &w);
            if (omp_get_thread_num() == 0) team = omp_get_num_threads();
        }
        CHECK_EQ_INT(team, 2);
        CHECK_MSG(CPU_COUNT(&w) == 1 && CPU_ISSET(second, &w),
                  "worker 1 is not pinned to CPU %d (%d CPUs in its mask)", second, CPU_COUNT(&w));
    }
    unsetenv("HIDETC_BIND");
}

int main(void) {
    test_plan_small();
    test_plan_random();
    test_models();
    test_shared_and_io_outputs();
    test_concat_in_place();
    test_empty();
    test_chain_memory_and_dedup();
    test_run_errors();
    test_compile_errors();
    test_thread_placement();
    TEST_DONE();
}
