/* test_fuse.c — post-scheduling fusion: random fusible groups (matmul and conv anchors
 * with prologues and epilogues, reductions with epilogues, injective chains) compiled
 * fused, checked against the reference evaluator on the unfused graph, with the fusion
 * itself asserted (kernel counts, groups without fallback); the partition rules on small
 * graphs; shapes 1, primes and tails of the register tiles. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuse/fuse.h"
#include "target/cpu/cpu.h"
#include "target/cpu/jit.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "test.h"
#include "graph_build.h"

static hc_rng rng;

static int64_t pick(const int64_t *v, int n) { return v[hc_rng_next(&rng) % (uint64_t)n]; }
static int pick_int(int n) { return (int)(hc_rng_next(&rng) % (uint64_t)n); }


/* ---- checking ------------------------------------------------------------------------ */
typedef hc_graph *(*builder)(uint64_t seed, int *expect_kernels);

typedef struct result {
    int kernels, fallbacks, nodes;
    int tuned, cached; /* kernels with a space (tune level > 0), and those from a record */
    int prepacked;     /* kernels reading pre-packed weights */
} result;

/* Compile options of check(): a tuning level and a cache (test_tuned). */
static int check_tune_level;
static hc_tune_weights check_tune_weights;
static const hc_jit_options *check_jit;
static bool check_no_prepack;
static bool check_no_direct; /* convs by im2col or Winograd, never the direct template */
static bool check_no_nchwc;  /* convs NCHW (a 1- or 3-channel conv is a blocked stem else) */
static const hc_target *check_target; /* NULL: the host */
/* An absolute error the check admits besides 1e-4 of the largest output: one quantization
 * step where outputs are quantized (the reference computes in double, the program in f32,
 * so a value at a rounding boundary may land one step away). */
static double check_abs_tol;

/* Build twice from the same seed (one copy is the reference), compile fused, run on random
 * inputs and compare. */
static result check(const char *label, builder build, uint64_t seed, int threads) {
    result res = {0};
    int expect = 0;
    rng = (hc_rng){seed};
    hc_graph *ref = build(seed, &expect);
    rng = (hc_rng){seed};
    hc_graph *g = build(seed, &expect);
    hc_error err = {0};
    CHECK_MSG(hc_pass_infer_shapes(ref, &err) == HC_OK, "%s: %s", label, err.msg);
    hc_model *m = NULL;
    hc_compile_options opt = {.num_threads = threads,
                              .tune_level = check_tune_level,
                              .tune_weights = check_tune_weights,
                              .jit = check_jit,
                              .target = check_target,
                              .no_prepack = check_no_prepack,
                              .paths.no_direct = check_no_direct,
                              .paths.no_nchwc = check_no_nchwc};
    hc_status st = hc_model_compile(g, &opt, &m, &err);
    CHECK_MSG(st == HC_OK, "%s (seed %llu): compile: %s", label, (unsigned long long)seed,
              err.msg);
    if (st != HC_OK) {
        hc_graph_free(ref);
        return res;
    }
    res.kernels = hc_model_num_kernels(m);
    for (int i = 0; i < res.kernels; i++) {
        int ncand, chosen;
        bool cached;
        hc_model_kernel_tuning(m, i, &ncand, &chosen, &cached);
        if (ncand <= 1) continue;
        res.tuned++, res.cached += cached;
        CHECK(chosen >= 0 && chosen < ncand);
    }
    for (int i = 0; i < res.kernels; i++) res.prepacked += hc_model_kernel_prepacked(m, i) != 0;
    res.nodes = (int)hc_model_graph(m)->nodes.len;
    for (int i = 0; i < res.kernels; i++) {
        const hc_group *grp = hc_model_kernel_group(m, i);
        if (grp->fallback) {
            res.fallbacks++;
            fprintf(stderr, "%s (seed %llu): kernel %d unfused: %s\n", label,
                    (unsigned long long)seed, i, grp->fallback);
        }
    }
    if (expect) CHECK_MSG(res.kernels == expect, "%s (seed %llu): %d kernels, expected %d", label,
                          (unsigned long long)seed, res.kernels, expect);
    CHECK_MSG(res.fallbacks == 0, "%s (seed %llu): %d fallbacks", label,
              (unsigned long long)seed, res.fallbacks);
    int nin = (int)ref->inputs.len, nout = (int)ref->outputs.len;
    void **in = calloc((size_t)nin + 1, sizeof(void *)), **out = calloc((size_t)nout + 1, sizeof(void *));
    void **want = calloc((size_t)nout + 1, sizeof(void *));
    hc_rng r = {seed * 31 + 5};
    for (int i = 0; i < nin; i++) {
        const hc_tensor *t = ref->inputs.data[i];
        float *f = malloc(hc_tensor_nbytes(t) + 4);
        for (int64_t k = 0; k < hc_tensor_numel(t); k++) f[k] = (float)hc_rng_uniform(&r, -1, 1);
        in[i] = f;
    }
    for (int i = 0; i < nout; i++) {
        out[i] = calloc(1, hc_tensor_nbytes(ref->outputs.data[i]) + 4);
        want[i] = calloc(1, hc_tensor_nbytes(ref->outputs.data[i]) + 4);
    }
    st = hc_graph_eval_reference(ref, in, want, &err);
    CHECK_MSG(st == HC_OK, "%s: reference: %s", label, err.msg);
    st = hc_model_run(m, in, out, &err);
    CHECK_MSG(st == HC_OK, "%s: run: %s", label, err.msg);
    for (int i = 0; i < nout; i++) {
        const float *a = out[i], *b = want[i];
        int64_t n = hc_tensor_numel(ref->outputs.data[i]);
        double worst = 0, scale = 1;
        for (int64_t k = 0; k < n; k++) scale = fmax(scale, fabs(b[k]));
        for (int64_t k = 0; k < n; k++) worst = fmax(worst, fabs((double)a[k] - b[k]));
        CHECK_MSG(worst <= fmax(1e-4 * scale, check_abs_tol), "%s (seed %llu, %d threads): output %d max error %g",
                  label, (unsigned long long)seed, threads, i, worst);
    }
    for (int i = 0; i < nin; i++) free(in[i]);
    for (int i = 0; i < nout; i++) free(out[i]), free(want[i]);
    free(in), free(out), free(want);
    hc_model_free(m);
    hc_graph_free(ref);
    return res;
}

/* ---- random groups ------------------------------------------------------------------- */
static const int64_t dims[] = {1, 3, 7, 13, 16, 17, 31, 33, 64, 65};
#define NDIMS (int)(sizeof dims / sizeof dims[0])

/* An epilogue op on y (shape [m, n]) that keeps it fusible; may read a new graph input. */
static hc_tensor *epilogue_op(hc_graph *g, hc_tensor *y, int64_t m, int64_t n, int *ninputs) {
    switch (pick_int(7)) {
    case 0: return OP(g, ADD, y, rand_const(g, &rng, 1, (int64_t[]){n}));        /* bias on columns */
    case 1: return OP(g, ADD, y, rand_const(g, &rng, 2, (int64_t[]){m, 1}));     /* bias on rows */
    case 2: return OP(g, RELU, y);
    case 3: return OP(g, TANH, y);
    case 4: {                                                              /* residual input */
        char name[16];
        snprintf(name, sizeof name, "r%d", (*ninputs)++);
        return OP(g, ADD, y, hc_graph_add_input(g, name, HC_F32, 2, (int64_t[]){m, n}));
    }
    case 5: return OP(g, MUL, y, rand_const(g, &rng, 0, NULL));                 /* scalar scale */
    default: return OP(g, SIGMOID, y);
    }
}

/* MatMul with a random prologue on A or B and a random epilogue chain. */
static hc_graph *build_matmul(uint64_t seed, int *expect) {
    (void)seed;
    hc_graph *g = hc_graph_new("mm", 13);
    int64_t m = pick(dims, NDIMS), n = pick(dims, NDIMS), k = pick(dims, NDIMS);
    hc_tensor *a, *b;
    int pro = pick_int(5), ninputs = 0;
    if (pro == 1) { /* A = transpose(x) */
        hc_tensor *x = hc_graph_add_input(g, "xt", HC_F32, 2, (int64_t[]){k, m});
        a = OPA(g, TRANSPOSE, (hc_attr[]){ints_attr("perm", 2, (int64_t[]){1, 0})}, 1, x);
    } else if (pro == 2) { /* A = relu(x) */
        a = OP(g, RELU, hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){m, k}));
    } else {
        a = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){m, k});
    }
    if (pro == 4) { /* B = a zero-padded input: the pad's reads are guarded by its select */
        int64_t lo = n > 2 ? 2 : 0, hi = n > 3 ? 1 : 0;
        hc_tensor *x = hc_graph_add_input(g, "bp", HC_F32, 2, (int64_t[]){k, n - lo - hi});
        b = OP(g, PAD, x, i64_const(g, 4, (int64_t[]){0, lo, 0, hi}));
    } else if (pro == 3) { /* B = reshape + transpose of an input */
        hc_tensor *x = hc_graph_add_input(g, "bt", HC_F32, 3, (int64_t[]){n, 1, k});
        hc_tensor *r = OP(g, RESHAPE, x, i64_const(g, 2, (int64_t[]){n, k}));
        b = OPA(g, TRANSPOSE, (hc_attr[]){ints_attr("perm", 2, (int64_t[]){1, 0})}, 1, r);
    } else {
        b = rand_const(g, &rng, 2, (int64_t[]){k, n});
    }
    hc_tensor *y = OP(g, MATMUL, a, b);
    int chain = pick_int(4);
    for (int i = 0; i < chain; i++) y = epilogue_op(g, y, m, n, &ninputs);
    if (pick_int(3) == 0) y = OP(g, RESHAPE, y, i64_const(g, 3, (int64_t[]){1, m, n}));
    hc_graph_add_output(g, y);
    *expect = 1;
    return g;
}

/* Conv (implicit GEMM: im2col prologue) + bias + optional relu / residual. */
static hc_graph *build_conv(uint64_t seed, int *expect) {
    (void)seed;
    hc_graph *g = hc_graph_new("conv", 13);
    static const int64_t chans[] = {1, 3, 8, 17};
    static const int64_t sizes[] = {1, 5, 7, 12, 23, 40};
    int64_t c = pick(chans, 4), oc = pick(chans, 4), h = pick(sizes, 6), w = pick(sizes, 6);
    int64_t kk = h >= 3 && w >= 3 && pick_int(2) ? 3 : 1, s = pick_int(3) == 0 ? 2 : 1;
    int64_t p = kk == 3 ? pick_int(2) : 0, nb = pick_int(3) == 0 ? 2 : 1;
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){nb, c, h, w});
    hc_attr at[] = {ints_attr("pads", 4, (int64_t[]){p, p, p, p}),
                    ints_attr("strides", 2, (int64_t[]){s, s})};
    hc_tensor *y = OPA(g, CONV, at, 2, x, rand_const(g, &rng, 4, (int64_t[]){oc, c, kk, kk}),
                       rand_const(g, &rng, 1, (int64_t[]){oc}));
    int64_t oh = (h + 2 * p - kk) / s + 1, ow = (w + 2 * p - kk) / s + 1;
    if (pick_int(2)) {
        hc_tensor *r = hc_graph_add_input(g, "res", HC_F32, 4, (int64_t[]){nb, oc, oh, ow});
        y = OP(g, ADD, y, r);
    }
    if (pick_int(2)) y = OP(g, RELU, y);
    hc_graph_add_output(g, y);
    *expect = 1;
    return g;
}

/* A 3x3 stride-1 conv over wide rows (the vectorized im2col path), with a residual. */
static hc_graph *build_conv_wide(uint64_t seed, int *expect) {
    (void)seed;
    hc_graph *g = hc_graph_new("wide", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 5, 11, 37});
    hc_attr at[] = {ints_attr("pads", 4, (int64_t[]){1, 2, 1, 0})};
    hc_tensor *y = OPA(g, CONV, at, 1, x, rand_const(g, &rng, 4, (int64_t[]){6, 5, 3, 3}),
                       rand_const(g, &rng, 1, (int64_t[]){6}));
    y = OP(g, ADD, y, hc_graph_add_input(g, "r", HC_F32, 4, (int64_t[]){1, 6, 11, 37}));
    hc_graph_add_output(g, OP(g, RELU, y));
    *expect = 1;
    return g;
}

/* A reduction anchor with an epilogue, fed by an injective prologue. */
static hc_graph *build_reduce(uint64_t seed, int *expect) {
    (void)seed;
    hc_graph *g = hc_graph_new("reduce", 13);
    int64_t m = pick(dims, NDIMS), n = pick(dims, NDIMS);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){m, n});
    hc_tensor *y = OP(g, MUL, x, rand_const(g, &rng, 1, (int64_t[]){n}));
    if (pick_int(2)) {
        y = OPA(g, SOFTMAX, (hc_attr[]){int_attr("axis", -1)}, 1, y);
        y = OP(g, ADD, y, rand_const(g, &rng, 2, (int64_t[]){m, n}));
    } else {
        y = OPA(g, REDUCE_MEAN, (hc_attr[]){ints_attr("axes", 1, (int64_t[]){1})}, 1, y);
        y = OP(g, SQRT, OP(g, ABS, y));
    }
    hc_graph_add_output(g, y);
    *expect = 1;
    return g;
}

/* An injective chain with broadcasting and a transpose: one kernel. */
static hc_graph *build_chain(uint64_t seed, int *expect) {
    (void)seed;
    hc_graph *g = hc_graph_new("chain", 13);
    int64_t m = pick(dims, NDIMS), n = pick(dims, NDIMS);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){m, n});
    hc_tensor *y = OP(g, ADD, x, rand_const(g, &rng, 1, (int64_t[]){n}));
    y = OP(g, MUL, y, OP(g, SIGMOID, x)); /* x read twice inside the group */
    y = OPA(g, TRANSPOSE, (hc_attr[]){ints_attr("perm", 2, (int64_t[]){1, 0})}, 1, y);
    y = OP(g, RELU, y);
    hc_graph_add_output(g, y);
    *expect = 1;
    return g;
}

static void run_random(const char *label, builder b, int cases, uint64_t base) {
    for (int i = 0; i < cases; i++) check(label, b, base + (uint64_t)i, 1 + i % 2);
}

/* ---- partition rules ----------------------------------------------------------------- */
/* A tensor with two readers stops the epilogue; both readers still get fused elsewhere. */
static hc_graph *build_two_readers(uint64_t seed, int *expect) {
    (void)seed;
    hc_graph *g = hc_graph_new("two", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){9, 20});
    hc_tensor *y = OP(g, MATMUL, x, rand_const(g, &rng, 2, (int64_t[]){20, 11}));
    hc_tensor *a = OP(g, RELU, y), *b = OP(g, NEG, y);
    hc_graph_add_output(g, OP(g, ADD, a, b));
    *expect = 1; /* matmul | relu, neg, add: an elementwise DAG epilogue */
    return g;
}

/* A cheap DAG after a linear layer: y = x * relu(x + c) + x, x read three times. */
static hc_graph *build_cheap_dag(uint64_t seed, int *expect) {
    hc_graph *g = hc_graph_new("cheap_dag", 13);
    int64_t m = 1 + (int64_t)(seed % 13), k = 19, n = 41;
    hc_tensor *in = hc_graph_add_input(g, "x", HC_F32, 3, (int64_t[]){1, m, k});
    hc_tensor *x = OP(g, MATMUL, in, rand_const(g, &rng, 2, (int64_t[]){k, n}));
    x = OP(g, ADD, x, rand_const(g, &rng, 1, (int64_t[]){n})); /* [1, m, n]: a size-1 dim */
    hc_tensor *r = OP(g, RELU, OP(g, ADD, x, rand_const(g, &rng, 0, NULL)));
    hc_graph_add_output(g, OP(g, ADD, OP(g, MUL, x, r), x));
    *expect = 1;
    return g;
}

/* GELU (tanh form) after a linear layer, as GPT-2 writes it: x read three times. The
 * whole GELU, tanh included, is the matmul's epilogue DAG: matmul + bias + GELU | the
 * next matmul. */
static hc_graph *build_gelu(uint64_t seed, int *expect) {
    hc_graph *g = hc_graph_new("gelu", 13);
    int64_t m = 1 + (int64_t)(seed % 13), k = 29, n = 37;
    hc_tensor *in = hc_graph_add_input(g, "x", HC_F32, 3, (int64_t[]){1, m, k});
    hc_tensor *x = OP(g, MATMUL, in, rand_const(g, &rng, 2, (int64_t[]){k, n}));
    x = OP(g, ADD, x, rand_const(g, &rng, 1, (int64_t[]){n})); /* [1, m, n]: a size-1 dim */
    hc_tensor *c = rand_const(g, &rng, 0, NULL);
    hc_tensor *x3 = OP(g, MUL, OP(g, MUL, x, x), x);
    hc_tensor *inner = OP(g, MUL, OP(g, ADD, x, OP(g, MUL, x3, c)), rand_const(g, &rng, 0, NULL));
    hc_tensor *t = OP(g, ADD, OP(g, TANH, inner), rand_const(g, &rng, 0, NULL));
    hc_tensor *y = OP(g, MUL, OP(g, MUL, x, rand_const(g, &rng, 0, NULL)), t);
    /* the next layer reads the GELU; the DAG ends at its last node */
    hc_graph_add_output(g, OP(g, MATMUL, y, rand_const(g, &rng, 2, (int64_t[]){n, 5})));
    *expect = 2;
    return g;
}

/* A DAG member's output that is read outside (here a graph output) cannot stay inside:
 * the DAG shrinks to nothing, x is materialized. */
static hc_graph *build_dag_escape(uint64_t seed, int *expect) {
    (void)seed;
    hc_graph *g = hc_graph_new("dag_escape", 13);
    hc_tensor *in = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){7, 11});
    hc_tensor *x = OP(g, MATMUL, in, rand_const(g, &rng, 2, (int64_t[]){11, 13}));
    hc_tensor *a = OP(g, RELU, x);
    hc_graph_add_output(g, a);
    hc_graph_add_output(g, OP(g, MUL, a, x));
    *expect = 3; /* matmul | relu | mul */
    return g;
}

/* A padded average pool feeding a 1x1 conv: the conv's Im2Col is read in the matmul's
 * packing, not copied by the pool's kernel. */
static hc_graph *build_pool_conv(uint64_t seed, int *expect) {
    (void)seed;
    hc_graph *g = hc_graph_new("pool_conv", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 24, 11, 13});
    hc_attr pa[] = {ints_attr("kernel_shape", 2, (int64_t[]){3, 3}),
                    ints_attr("pads", 4, (int64_t[]){1, 1, 1, 1}),
                    ints_attr("strides", 2, (int64_t[]){1, 1})};
    hc_tensor *p = OPA(g, AVERAGE_POOL, pa, 3, x);
    hc_tensor *y = OP(g, CONV, p, rand_const(g, &rng, 4, (int64_t[]){17, 24, 1, 1}),
                      rand_const(g, &rng, 1, (int64_t[]){17}));
    hc_graph_add_output(g, OP(g, RELU, y));
    *expect = 2;
    return g;
}

static void test_pool_conv(void) {
    check("pool conv", build_pool_conv, 1, 2);
    int e;
    rng = (hc_rng){1};
    hc_graph *g = build_pool_conv(1, &e);
    hc_model *m = NULL;
    hc_error err = {0};
    hc_compile_options opt = {.num_threads = 2};
    CHECK_MSG(hc_model_compile(g, &opt, &m, &err) == HC_OK, "%s", err.msg);
    if (!m) return;
    const hc_group *g0 = hc_model_kernel_group(m, 0), *g1 = hc_model_kernel_group(m, 1);
    CHECK(g0->anchor->op == HC_OPK_AVERAGE_POOL && g0->nepilogue == 0);
    CHECK(g1->anchor->op == HC_OPK_MATMUL && g1->nprologue >= 1);
    hc_model_free(m);
}

/* A reader at another element (a transpose) is not a DAG member. */
static hc_graph *build_dag_transpose(uint64_t seed, int *expect) {
    (void)seed;
    hc_graph *g = hc_graph_new("dag_transpose", 13);
    hc_tensor *in = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){9, 9});
    hc_tensor *x = OP(g, MATMUL, in, rand_const(g, &rng, 2, (int64_t[]){9, 9}));
    hc_attr perm[] = {ints_attr("perm", 2, (int64_t[]){1, 0})};
    hc_tensor *t = OPA(g, TRANSPOSE, perm, 1, x);
    hc_graph_add_output(g, OP(g, ADD, OP(g, NEG, x), t));
    *expect = 2; /* matmul | transpose, neg, add */
    return g;
}

/* The output of a group that is also a graph output is materialized. */
static hc_graph *build_graph_output_mid(uint64_t seed, int *expect) {
    (void)seed;
    hc_graph *g = hc_graph_new("mid", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){5, 7});
    hc_tensor *y = OP(g, MATMUL, x, rand_const(g, &rng, 2, (int64_t[]){7, 3}));
    hc_graph_add_output(g, y);
    hc_graph_add_output(g, OP(g, RELU, y));
    *expect = 2;
    return g;
}

static void test_rules(void) {
    check("two readers", build_two_readers, 1, 2);
    for (uint64_t seed = 1; seed <= 3; seed++) check("cheap dag", build_cheap_dag, seed, 2);
    check("gelu", build_gelu, 1, 2);
    check("dag escape", build_dag_escape, 1, 2);
    check("dag transpose", build_dag_transpose, 1, 2);
    test_pool_conv();
    check("graph output in the middle", build_graph_output_mid, 1, 2);
    /* the partition alone: no fusion -> one group per kernel node */
    int e;
    rng = (hc_rng){3};
    hc_graph *g = build_two_readers(3, &e);
    hc_error err = {0};
    CHECK(hc_pass_infer_shapes(g, &err) == HC_OK);
    hc_arena a;
    hc_arena_init(&a);
    hc_partition p;
    CHECK(hc_fuse_partition(&a, g, hc_target_default(), (int)g->nodes.len, g->nodes.data, false, &p, &err) == HC_OK);
    CHECK_EQ_INT(p.ngroups, (int)g->nodes.len);
    CHECK(hc_fuse_partition(&a, g, hc_target_default(), (int)g->nodes.len, g->nodes.data, true, &p, &err) == HC_OK);
    CHECK_EQ_INT(p.ngroups, 1);
    CHECK(p.groups[0].anchor->op == HC_OPK_MATMUL && p.groups[0].nepilogue == 3);
    CHECK(p.groups[0].epilogue[2]->op == HC_OPK_ADD); /* the DAG's sink last */
    /* splitting a group keeps a topological order of its members */
    hc_partition_split(&a, &p, 0, "test");
    CHECK_EQ_INT(p.ngroups, 4);
    CHECK(p.groups[0].anchor->op == HC_OPK_MATMUL);
    CHECK(p.groups[3].anchor->op == HC_OPK_ADD && p.groups[3].fallback);
    hc_arena_free(&a);
    hc_graph_free(g);
}

/* --tune 1 on fused groups: candidates benchmarked with the group fused in, results
 * still right (check() compares with the reference), and a second compile takes the
 * winners from the records. */
static void test_tuned(void) {
    char dir[] = "/tmp/hidetc_fuse_tune_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    hc_jit_options jit = {.cache_dir = dir};
    check_tune_level = 1, check_jit = &jit;
    for (int pass = 0; pass < 2; pass++) {
        result r = check("tuned conv", build_conv, 900, 2);
        CHECK_MSG(r.tuned >= 1, "no kernel was tuned");
        CHECK_MSG(r.cached == (pass ? r.tuned : 0), "pass %d: %d of %d from records", pass,
                  r.cached, r.tuned);
        r = check("tuned matmul", build_matmul, 901, 2);
        CHECK_MSG(r.cached == (pass ? r.tuned : 0), "pass %d: matmul records", pass);
    }
    /* tuned with the weights evicted before every run: right results, records of their
     * own (the cached-weights ones above are not taken), taken on the second compile */
    check_tune_weights = HC_TUNE_WEIGHTS_COLD;
    for (int pass = 0; pass < 2; pass++) {
        result r = check("tuned conv, cold weights", build_conv, 900, 2);
        CHECK_MSG(r.tuned >= 1 && r.cached == (pass ? r.tuned : 0),
                  "cold pass %d: %d of %d from records", pass, r.cached, r.tuned);
        r = check("tuned matmul, cold weights", build_matmul, 901, 2);
        CHECK_MSG(r.tuned >= 1 && r.cached == (pass ? r.tuned : 0),
                  "cold pass %d: matmul, %d of %d from records", pass, r.cached, r.tuned);
    }
    check_tune_weights = HC_TUNE_WEIGHTS_AUTO;
    check_tune_level = 0, check_jit = NULL;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* A stride-1 padded 3x3 conv on rows wider than a vector: the im2col prologue in the
 * packing of B becomes one masked vector load per row piece (vload_range), with the
 * lane-by-lane gather only where a vector crosses a row. */
static void test_im2col_vectorized(void) {
    rng = (hc_rng){5};
    hc_graph *g = hc_graph_new("conv", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 3, 9, 40});
    hc_attr at[] = {ints_attr("pads", 4, (int64_t[]){1, 1, 1, 1})};
    hc_tensor *y = OPA(g, CONV, at, 1, x, rand_const(g, &rng, 4, (int64_t[]){8, 3, 3, 3}));
    hc_graph_add_output(g, OP(g, RELU, y));
    hc_error err = {0};
    CHECK(hc_graph_optimize_with(g, &(hc_optimize_options){.no_direct = true}, &err) == HC_OK);
    hc_arena a;
    hc_arena_init(&a);
    hc_partition p;
    CHECK(hc_fuse_partition(&a, g, hc_target_default(), (int)g->nodes.len, g->nodes.data, true, &p, &err) == HC_OK);
    CHECK_EQ_INT(p.ngroups, 1);
    bool templated;
    const char *why = NULL;
    hc_func *f = hc_fuse_schedule(&a, &p.groups[0], hc_target_default(), NULL, "k", &templated,
                                  &why, &err);
    CHECK_MSG(f && templated, "schedule: %s", why ? why : err.msg);
    if (f && hc_target_default()->caps.isa != HC_ISA_SCALAR) {
        hc_sb sb;
        hc_sb_init(&sb);
        hc_print_func(&sb, f);
        CHECK_MSG(strstr(hc_sb_str(&sb), "vload_range") != NULL, "no vector im2col");
        hc_sb_free(&sb);
    }
    hc_arena_free(&a);
    hc_graph_free(g);
    check("im2col vectorized", build_conv_wide, 7, 2);
}

/* Constant weights of convs (and of matmuls with a constant B) are packed at compile time;
 * --no-prepack keeps them as they are; both agree with the reference (check()). */
static void test_prepacked(void) {
    check_no_direct = true; /* the im2col path's matmul packs the weights */
    for (int np = 0; np < 2; np++) {
        check_no_prepack = np;
        for (int seed = 0; seed < 4; seed++) {
            for (int threads = 1; threads <= 2; threads++) {
                result r = check("prepacked conv", build_conv, 1000 + (uint64_t)seed, threads);
                CHECK_MSG(np ? r.prepacked == 0 : r.prepacked >= 1,
                          "conv seed %d: %d kernels with pre-packed weights (no_prepack %d)",
                          seed, r.prepacked, np);
                check("prepacked matmul", build_matmul, 1100 + (uint64_t)seed, threads);
            }
        }
    }
    check_no_prepack = false;
    check_no_direct = false;
}

/* ---- strided prologues: gathers, not lane-by-lane code ------------------------------- */
/* The group's fused program, printed (NULL when it did not schedule as a template). */
static char *fused_program(hc_graph *g) {
    hc_error err = {0};
    /* im2col's gathers: convs stay off the direct template */
    CHECK_MSG(hc_graph_optimize_with(g, &(hc_optimize_options){.no_direct = true}, &err) == HC_OK,
              "optimize: %s", err.msg);
    hc_arena a;
    hc_arena_init(&a);
    hc_partition p;
    char *res = NULL;
    CHECK(hc_fuse_partition(&a, g, hc_target_default(), (int)g->nodes.len, g->nodes.data, true, &p, &err) == HC_OK);
    CHECK_EQ_INT(p.ngroups, 1);
    bool templated = false;
    const char *why = NULL;
    hc_func *f = p.ngroups == 1 ? hc_fuse_schedule(&a, &p.groups[0], hc_target_default(), NULL,
                                                   "k", &templated, &why, &err)
                                : NULL;
    CHECK_MSG(f && templated, "schedule: %s", why ? why : err.msg);
    if (f && templated) {
        hc_sb sb;
        hc_sb_init(&sb);
        hc_print_func(&sb, f);
        res = hc_sb_take(&sb);
    }
    hc_arena_free(&a);
    return res;
}

/* Attention scores as GPT-2 masks them: matmul / scale, then Where(causal bool mask,
 * scores, fill). The epilogue stays vector code: the bool condition is one vector load
 * per output vector, the fill (a constant at index 0) a broadcast. */
static hc_graph *build_masked_scores(uint64_t seed, int *expect) {
    hc_graph *g = hc_graph_new("masked", 13);
    int64_t m = 5 + (int64_t)(seed % 29), k = 24, n = 37 + (int64_t)seed;
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 3, (int64_t[]){1, m, k});
    hc_tensor *y = OP(g, MATMUL, x, rand_const(g, &rng, 2, (int64_t[]){k, n}));
    y = OP(g, DIV, y, rand_const(g, &rng, 0, NULL));
    bool *mask = malloc(sizeof(bool) * (size_t)(m * n));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) mask[i * n + j] = j <= i + 3;
    hc_tensor *c = hc_graph_constant(g, NULL, HC_BOOL, 2, (int64_t[]){m, n}, mask);
    free(mask);
    hc_graph_add_output(g, OP(g, WHERE, c, y, rand_const(g, &rng, 0, NULL)));
    *expect = 1;
    return g;
}

static void test_masked_scores(void) {
    for (uint64_t seed = 1; seed <= 3; seed++) check("masked scores", build_masked_scores, seed, 2);
    int e;
    rng = (hc_rng){7};
    hc_graph *g = build_masked_scores(2, &e);
    char *src = fused_program(g);
    if (src && hc_target_default()->caps.isa != HC_ISA_SCALAR) {
        CHECK_MSG(strstr(src, "lanes") == NULL, "masked scores: lane-by-lane epilogue left");
    }
    free(src);
    hc_graph_free(g);
}

/* A matmul with a QDQ epilogue as lower_quant writes QuantizeLinear and DequantizeLinear
 * (x / s, round, + z, clip to the type's range, cast to i8 or u8 and back, - z, * s), then
 * Relu: the epilogue stays vector code (the casts saturate and truncate through i32
 * lanes), no lane-by-lane store. The scale is small enough that the clip cuts the largest
 * values. Rows and columns: primes and tails of the tiles. */
static hc_graph *build_qdq_epilogue(uint64_t seed, int *expect) {
    hc_graph *g = hc_graph_new("qdq", 13);
    int64_t m = 1 + (int64_t)(seed * 6 % 37), k = 64, n = 16 + (int64_t)(seed * 7 % 41);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 3, (int64_t[]){1, m, k});
    hc_tensor *y = OP(g, MATMUL, x, rand_const(g, &rng, 2, (int64_t[]){k, n}));
    bool u8 = seed % 2 == 0;
    float sc = 0.03f, zp = u8 ? 128 : 3, lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
    hc_tensor *s = hc_graph_constant(g, NULL, HC_F32, 0, NULL, &sc);
    hc_tensor *z = hc_graph_constant(g, NULL, HC_F32, 0, NULL, &zp);
    y = OP(g, ADD, OP(g, ROUND, OP(g, DIV, y, s)), z);
    y = OP(g, CLIP, y, hc_graph_constant(g, NULL, HC_F32, 0, NULL, &lo),
           hc_graph_constant(g, NULL, HC_F32, 0, NULL, &hi));
    hc_attr to_int[] = {int_attr("to", u8 ? 2 : 3)}, to_f32[] = {int_attr("to", 1)};
    y = OPA(g, CAST, to_f32, 1, OPA(g, CAST, to_int, 1, y));
    y = OP(g, MUL, OP(g, SUB, y, z), s);
    hc_graph_add_output(g, OP(g, RELU, y));
    *expect = 1;
    return g;
}

static void test_qdq_epilogue(void) {
    check_abs_tol = 0.0301;
    for (uint64_t seed = 1; seed <= 4; seed++) check("qdq epilogue", build_qdq_epilogue, seed, 2);
    check_abs_tol = 0;
    for (uint64_t seed = 1; seed <= 2; seed++) {
        int e;
        rng = (hc_rng){seed};
        hc_graph *g = build_qdq_epilogue(seed, &e);
        char *src = fused_program(g);
        if (src && hc_target_default()->caps.isa != HC_ISA_SCALAR)
            CHECK_MSG(strstr(src, "lanes") == NULL, "qdq epilogue (seed %llu): lane-by-lane "
                      "epilogue left", (unsigned long long)seed);
        free(src);
        hc_graph_free(g);
    }
}

/* The fused program reads its strided prologue with vload_strided and has no register
 * array filled lane by lane (the rewrite's fallback). */
static void check_gathers(const char *label, builder build, uint64_t seed) {
    int e;
    rng = (hc_rng){seed};
    hc_graph *g = build(seed, &e);
    char *src = fused_program(g);
    if (src && hc_target_default()->caps.isa != HC_ISA_SCALAR) {
        CHECK_MSG(strstr(src, "vload_strided") != NULL, "%s: no strided load", label);
        CHECK_MSG(strstr(src, "lanes") == NULL, "%s: lane-by-lane gather left", label);
    }
    free(src);
    hc_graph_free(g);
}

typedef struct conv_case {
    int64_t n, c, h, w, oc, k, s, p;
} conv_case;
static conv_case ccase;

/* Conv with the stride, kernel and padding of ccase, bias, relu. */
static hc_graph *build_conv_case(uint64_t seed, int *expect) {
    (void)seed;
    const conv_case *q = &ccase;
    hc_graph *g = hc_graph_new("sconv", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){q->n, q->c, q->h, q->w});
    hc_attr at[] = {ints_attr("pads", 4, (int64_t[]){q->p, q->p, q->p, q->p}),
                    ints_attr("strides", 2, (int64_t[]){q->s, q->s})};
    hc_tensor *y = OPA(g, CONV, at, 2, x,
                       rand_const(g, &rng, 4, (int64_t[]){q->oc, q->c, q->k, q->k}),
                       rand_const(g, &rng, 1, (int64_t[]){q->oc}));
    hc_graph_add_output(g, OP(g, RELU, y));
    *expect = 1;
    return g;
}

/* Strided convolutions (ResNet's conv1 is 7x7 stride 2 pad 3): the im2col of every row
 * piece is one gather. Sizes 1, primes and tails of a 16-lane vector. */
static void test_strided_conv(void) {
    static const conv_case cases[] = {
        {1, 3, 23, 23, 8, 7, 2, 3},  /* conv1-like */
        {1, 3, 40, 37, 5, 7, 2, 3},  /* rows wider than a vector */
        {1, 4, 17, 17, 7, 3, 2, 1},  /* ResNet's stride-2 3x3 */
        {2, 5, 13, 31, 6, 3, 2, 0},  /* no padding, batch 2 */
        {1, 3, 29, 53, 4, 3, 3, 1},  /* stride 3 */
        {1, 2, 11, 11, 3, 7, 3, 2},  /* stride 3, 7x7 */
        {1, 8, 33, 33, 9, 1, 2, 0},  /* 1x1 stride 2 (the downsample) */
        {1, 3, 7, 41, 5, 1, 3, 0},   /* 1x1 stride 3 */
        {1, 1, 1, 1, 1, 1, 2, 0},    /* one pixel */
        {1, 2, 5, 2, 3, 3, 2, 1},    /* one output column */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ccase = cases[i];
        char label[64];
        snprintf(label, sizeof label, "strided conv %zu (%lldx%lld s%lld)", i,
                 (long long)ccase.k, (long long)ccase.k, (long long)ccase.s);
        if (ccase.h * ccase.w > 1) check_gathers(label, build_conv_case, 40 + i);
        check(label, build_conv_case, 40 + i, 1 + (int)(i % 2));
        check(label, build_conv_case, 40 + i, 2 - (int)(i % 2));
    }
}

static int64_t slice_step, slice_m, slice_n, slice_k;

/* MatMul whose B is every slice_step-th column of an input (a negative step reads it
 * backwards) and whose A is every other column of another: strided prologues on both. */
static hc_graph *build_slice_matmul(uint64_t seed, int *expect) {
    (void)seed;
    hc_graph *g = hc_graph_new("slice", 13);
    int64_t m = slice_m, n = slice_n, k = slice_k, st = slice_step;
    int64_t wide = (n - 1) * (st < 0 ? -st : st) + 1 + 2;
    hc_tensor *xb = hc_graph_add_input(g, "xb", HC_F32, 2, (int64_t[]){k, wide});
    int64_t b0 = st > 0 ? 1 : wide - 2, b1 = st > 0 ? wide : -wide - 1;
    hc_tensor *b = OP(g, SLICE, xb, i64_const(g, 1, (int64_t[]){b0}),
                      i64_const(g, 1, (int64_t[]){b1}), i64_const(g, 1, (int64_t[]){1}),
                      i64_const(g, 1, (int64_t[]){st}));
    hc_tensor *xa = hc_graph_add_input(g, "xa", HC_F32, 2, (int64_t[]){m, 2 * k});
    hc_tensor *a = OP(g, SLICE, xa, i64_const(g, 1, (int64_t[]){0}),
                      i64_const(g, 1, (int64_t[]){2 * k}), i64_const(g, 1, (int64_t[]){1}),
                      i64_const(g, 1, (int64_t[]){2}));
    hc_graph_add_output(g, OP(g, RELU, OP(g, MATMUL, a, b)));
    *expect = 1;
    return g;
}

static void test_strided_slice(void) {
    static const int64_t cases[][4] = {/* step, m, n, k */
                                       {2, 5, 37, 13}, {3, 1, 17, 1},   {-1, 7, 33, 5},
                                       {-2, 3, 16, 17}, {2, 64, 65, 31}, {5, 2, 1, 3}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        slice_step = cases[i][0], slice_m = cases[i][1], slice_n = cases[i][2];
        slice_k = cases[i][3];
        char label[64];
        snprintf(label, sizeof label, "slice step %lld (%lldx%lldx%lld)",
                 (long long)slice_step, (long long)slice_m, (long long)slice_n,
                 (long long)slice_k);
        if (slice_n > 1) check_gathers(label, build_slice_matmul, 60 + i);
        check(label, build_slice_matmul, 60 + i, 1);
        check(label, build_slice_matmul, 60 + i, 2);
    }
}

/* ---- default configs on a stated machine ------------------------------------------- */
/* The config of g's only kernel on target t (2 threads, scheduled only: no code is built,
 * so any host checks any ISA); NULL if g compiles to other than one kernel. Frees g. */
static char *kernel_config(hc_graph *g, const hc_target *t, bool no_prepack) {
    hc_compile_options opt = {.target = t, .num_threads = 2, .schedule_only = true,
                              .no_prepack = no_prepack};
    hc_model *mod = NULL;
    hc_error err = {0};
    CHECK_MSG(hc_model_compile(g, &opt, &mod, &err) == HC_OK, "%s", err.msg);
    if (!mod) return NULL;
    const char *c = hc_model_num_kernels(mod) == 1 ? hc_model_kernel_config(mod, 0) : NULL;
    char *res = c ? hc_xstrdup(c) : NULL;
    hc_model_free(mod);
    return res;
}

/* x[m, 768] @ W[768, n] + bias, W a constant */
static hc_graph *build_dense(int64_t m, int64_t n) {
    hc_rng r = {77};
    hc_graph *g = hc_graph_new("split", 17);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){m, 768});
    hc_tensor *y = OP(g, MATMUL, x, rand_const(g, &r, 2, (int64_t[]){768, n}));
    hc_graph_add_output(g, OP(g, ADD, y, rand_const(g, &r, 1, &n)));
    return g;
}

/* With B pre-packed, the default splits the rows (M = 128 tokens, each thread one block
 * of rows); when B is packed on every call, or a thread's rows would take several blocks
 * (M = 1024: 512 rows a thread, blocks of 168), it splits the columns (each thread packs
 * its half of B once per block of rows). */
/* x[m, 768] @ W[768, n] + bias on target t: its config must contain `want`. */
typedef struct dense_case {
    const hc_target *t;
    int64_t m, n;
    bool no_prepack;
    const char *want;
} dense_case;

static void check_dense_configs(const char *what, const dense_case *cases, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char *c = kernel_config(build_dense(cases[i].m, cases[i].n), cases[i].t,
                                cases[i].no_prepack);
        CHECK_MSG(c && strstr(c, cases[i].want), "%s case %zu: config '%s', wanted%s", what, i,
                  c ? c : "(none)", cases[i].want);
        free(c);
    }
}

static void test_prepacked_split(void) {
    const hc_target x512 = hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 << 10, 2 << 20, 105 << 20);
    const hc_target x2 = hc_target_cpu_describe(HC_ISA_AVX2, 2, 48 << 10, 2 << 20, 105 << 20);
    const dense_case cases[] = {
        {&x512, 128, 3072, false, " t1x2x1 "}, {&x512, 128, 768, false, " t1x2x1 "},
        {&x2, 128, 3072, false, " t1x2x1 "},   {&x512, 128, 3072, true, " t1x1x2 "},
        {&x512, 1024, 3072, false, " t1x1x2 "}};
    check_dense_configs("split", cases, HC_ARRAY_LEN(cases));
}

/* The K block of x @ W on a stated Sapphire/Emerald Rapids core with AVX-512: a B
 * micro-panel of half of L1 (kc 192 for K = 768 on 48 KiB) where a thread's share of C
 * fits in half of L2, whether W is pre-packed or not; all of K in one block (kc 768) where
 * it exceeds half of L2 (1024 rows, an LM head's 50000 columns); 1.5 x L1 (kc 384) on
 * other cores. Then
 * the program against the reference, where this host runs AVX-512 code (the pre-packed
 * layout follows kc). */
static hc_graph *build_dense_rand(uint64_t seed, int *expect) {
    (void)seed;
    *expect = 1;
    return build_dense(128, 3072);
}
static hc_graph *build_dense_small(uint64_t seed, int *expect) {
    (void)seed;
    *expect = 1;
    return build_dense(48, 768);
}

/* W[m, 96] @ x[96, n], W a constant: an NCHW 1x1 conv as a matmul */
static int64_t wx_m = 1280, wx_n = 49;
static hc_graph *build_wx(int64_t m, int64_t n) {
    hc_rng r = {78};
    hc_graph *g = hc_graph_new("wx", 17);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){96, n});
    hc_graph_add_output(g, OP(g, MATMUL, rand_const(g, &r, 2, (int64_t[]){m, 96}), x));
    return g;
}
static hc_graph *build_wx_rand(uint64_t seed, int *expect) {
    (void)seed;
    *expect = 1;
    return build_wx(wx_m, wx_n);
}

/* The narrow tile on a stated Zen 4 with AVX-512 (hc_matmul_narrow_pays): constant A, a B
 * of fewer than 16 vectors of columns: one vector per row, 16 rows, the rows split over
 * the threads, B in place below 32 row tiles a core; not on another core, with AVX2 code,
 * or with 256 columns. Then the programs against the reference where this host runs
 * AVX-512 code. */
static void test_zen4_narrow(void) {
    hc_target zen4 = hc_target_cpu_describe(HC_ISA_AVX512, 2, 32 << 10, 1 << 20, 32 << 20);
    hc_target zen4_avx2 = hc_target_cpu_describe(HC_ISA_AVX2, 2, 32 << 10, 1 << 20, 32 << 20);
    const hc_target other = zen4;
    zen4.caps.core = zen4_avx2.caps.core = HC_CORE_AMD_ZEN4;
    const struct {
        const hc_target *t;
        int64_t m, n;
        const char *want[3];
    } cases[] = {
        {&zen4, 1280, 49, {"mr16 nr16 ", " t1x2x1 ", " pb1 "}},
        {&zen4, 96, 196, {"mr16 nr16 ", " t1x2x1 ", " pb0 "}},
        {&zen4, 37, 13, {"mr13 nr16 ", " pb0 ", " "}},
        {&zen4, 96, 256, {" nr32 ", " ", " "}},
        {&other, 96, 196, {"mr8 nr32 ", " ", " "}},
        {&zen4_avx2, 96, 196, {" nr16 ", " ", " "}},
    };
    for (size_t i = 0; i < HC_ARRAY_LEN(cases); i++) {
        char *c = kernel_config(build_wx(cases[i].m, cases[i].n), cases[i].t, false);
        for (int j = 0; j < 3; j++)
            CHECK_MSG(c && strstr(c, cases[i].want[j]), "narrow case %zu: config '%s', wanted%s", i,
                      c ? c : "(none)", cases[i].want[j]);
        free(c);
    }
    if (hc_cpu_isa() == HC_ISA_AVX512) {
        static const int64_t shapes[][2] = {{1280, 49}, {96, 196}, {37, 13}, {17, 1}};
        check_target = &zen4;
        for (size_t i = 0; i < HC_ARRAY_LEN(shapes); i++) {
            wx_m = shapes[i][0], wx_n = shapes[i][1];
            for (int np = 0; np < 2; np++) {
                check_no_prepack = np;
                check("W @ x, the narrow tile", build_wx_rand, (int)i, 2);
            }
        }
        check_target = NULL, check_no_prepack = false;
    }
}

static void test_spr_kblock(void) {
    hc_target spr = hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 << 10, 2 << 20, 105 << 20);
    hc_target spr2 = hc_target_cpu_describe(HC_ISA_AVX2, 2, 48 << 10, 2 << 20, 105 << 20);
    const hc_target other = spr;
    spr.caps.core = spr2.caps.core = HC_CORE_INTEL_SPR;
    const dense_case cases[] = {
        {&spr, 128, 3072, false, " kc192 "},  {&spr, 128, 768, false, " kc192 "},
        {&spr, 128, 3072, true, " kc192 "},   {&spr, 1024, 3072, false, " kc768 mc80 "},
        {&spr, 128, 50000, false, " kc768 "}, {&other, 128, 3072, false, " kc384 "},
        {&spr2, 128, 3072, false, " kc768 "}, {&other, 1024, 3072, false, " kc384 "},
        {&spr, 1024, 3072, true, " kc768 "}};
    check_dense_configs("K block", cases, HC_ARRAY_LEN(cases));
    /* with 128 KiB of L2 a 48 x 768 output takes one K block (74 KB of C a thread; small,
     * for the reference interpreter under the sanitizers) */
    hc_target spr_l2 = hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 << 10, 128 << 10, 105 << 20);
    spr_l2.caps.core = HC_CORE_INTEL_SPR;
    const dense_case one[] = {{&spr_l2, 48, 768, false, " kc768 "}};
    check_dense_configs("one K block", one, 1);
    if (hc_cpu_isa() == HC_ISA_AVX512) {
        spr.caps.num_cores = spr_l2.caps.num_cores = 2;
        for (int np = 0; np < 2; np++) {
            check_no_prepack = np;
            check_target = &spr;
            check("x @ W, half-L1 K blocks", build_dense_rand, 0, 2);
            check_target = &spr_l2;
            check("x @ W, one K block", build_dense_small, 0, 2);
        }
        check_target = NULL, check_no_prepack = false;
    }
}

/* AMX split products (the matmul's amx config) on a stated machine with AMX-BF16: the
 * default for x @ W + bias where W is pre-packed and x has rows enough, not where W is
 * packed on every call, x is one row or the machine has no AMX. Then programs on this
 * host's ISA with AMX stated (AMX itself where the host has it, emulated elsewhere),
 * awkward shapes, bias + ReLU fused, against the reference. */
static int64_t amx_m, amx_k, amx_n;
static hc_graph *build_amx_dense(uint64_t seed, int *expect) {
    hc_rng r = {seed};
    hc_graph *g = hc_graph_new("amx_dense", 17);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){amx_m, amx_k});
    hc_tensor *y = OP(g, MATMUL, x, rand_const(g, &r, 2, (int64_t[]){amx_k, amx_n}));
    y = OP(g, ADD, y, rand_const(g, &r, 1, &amx_n));
    hc_graph_add_output(g, OPA(g, RELU, NULL, 0, y));
    *expect = 1;
    return g;
}

static void test_amx_dense(void) {
    hc_target amx = hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 << 10, 2 << 20, 105 << 20);
    const hc_target plain = amx;
    amx.caps.amx_bf16 = 1;
    const dense_case cases[] = {{&amx, 256, 3072, false, " amx "}, {&amx, 256, 768, false, " amx "},
                                {&amx, 1024, 3072, false, " amx "}};
    check_dense_configs("AMX", cases, HC_ARRAY_LEN(cases));
    /* not pre-packed, a GEMV, fewer rows than HC_MATMUL_AMX_MIN_ROWS (BERT at batch 1), no
     * AMX stated */
    const struct { const hc_target *t; int64_t m; bool no_prepack; } not_amx[] = {
        {&amx, 256, true}, {&amx, 1, false}, {&amx, 128, false}, {&plain, 256, false}};
    for (size_t i = 0; i < HC_ARRAY_LEN(not_amx); i++) {
        char *c = kernel_config(build_dense(not_amx[i].m, 768), not_amx[i].t, not_amx[i].no_prepack);
        CHECK_MSG(c && !strstr(c, " amx"), "AMX: case %zu took amx: '%s'", i, c ? c : "(none)");
        free(c);
    }
    hc_target here = *hc_target_host();
    here.caps.amx_bf16 = 1;
    check_target = &here;
    static const int64_t shapes[][3] = {{256, 100, 70}, {263, 300, 96}, {257, 64, 129}, {293, 131, 64}};
    for (size_t i = 0; i < HC_ARRAY_LEN(shapes); i++) {
        amx_m = shapes[i][0], amx_k = shapes[i][1], amx_n = shapes[i][2];
        int expect;
        char *c = kernel_config(build_amx_dense(9, &expect), &here, false);
        CHECK_MSG(c && strstr(c, " amx"), "AMX shape %zu: config '%s'", i, c ? c : "(none)");
        free(c);
        char label[64];
        snprintf(label, sizeof label, "x[%lld, %lld] @ W + b, ReLU (AMX)", (long long)amx_m,
                 (long long)amx_k);
        check(label, build_amx_dense, 9 + i, 1);
        check(label, build_amx_dense, 9 + i, 2);
    }
    check_target = NULL;
}

/* W[24, 96] (a constant: pre-packed A) @ B[96, 200], B = x[96, 200] itself or the
 * Transpose of x[200, 96] (a prologue that computes). 24 rows are 3 register tiles: B is
 * read in place (pb0) unless a prologue makes every tile's read cost its work again. */
static bool pro_transpose;
static hc_graph *build_prologue_pack(uint64_t seed, int *expect) {
    hc_rng r = {seed};
    hc_graph *g = hc_graph_new("prologue_pack", 17);
    hc_tensor *b;
    if (pro_transpose) {
        hc_attr perm[1] = {ints_attr("perm", 2, (int64_t[]){1, 0})};
        b = OPA(g, TRANSPOSE, perm, 1,
                hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){200, 96}));
    } else {
        b = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){96, 200});
    }
    hc_graph_add_output(g, OP(g, MATMUL, rand_const(g, &r, 2, (int64_t[]){24, 96}), b));
    *expect = 1;
    return g;
}

static void test_prologue_pack(void) {
    const hc_target x512 = hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 << 10, 2 << 20, 105 << 20);
    for (int t = 0; t < 2; t++) {
        pro_transpose = t;
        int expect = 0;
        char *c = kernel_config(build_prologue_pack(5, &expect), &x512, false);
        CHECK_MSG(c && strstr(c, t ? " pb1 " : " pb0 "), "prologue %d: config '%s'", t,
                  c ? c : "(none)");
        free(c);
        /* and the program on this host, against the reference */
        check(t ? "W @ Transpose(x)" : "W @ x", build_prologue_pack, 5, 1);
        check(t ? "W @ Transpose(x)" : "W @ x", build_prologue_pack, 5, 2);
    }
    pro_transpose = false;
}

int main(void) {
    test_prepacked_split();
    test_spr_kblock();
    test_zen4_narrow();
    test_amx_dense();
    test_prologue_pack();
    test_prepacked();
    /* the im2col gathers of the matmul path: NCHW on every host (the small-image rule
     * would block some of these convs, more of them with a larger L2) */
    check_no_nchwc = true;
    test_strided_conv();
    check_no_nchwc = false;
    test_strided_slice();
    test_im2col_vectorized();
    test_tuned();
    test_rules();
    test_masked_scores();
    test_qdq_epilogue();
    run_random("matmul", build_matmul, 16, 100);
    /* the implicit GEMM of build_conv: NCHW (its 1- and 3-channel convs would be blocked
     * stems, CONV_NCHWC and a reorder: tests/test_nchwc.c) */
    check_no_nchwc = true;
    run_random("conv", build_conv, 10, 200);
    check_no_nchwc = false;
    run_random("reduce", build_reduce, 6, 300);
    run_random("chain", build_chain, 4, 400);
    TEST_DONE();
}
