/* test_dynamic_matmul.c — the CPU matmul template with symbolic extents (docs/dynamic.md,
 * docs/matmul.md): a symbolic M (the rows of A and C: BERT's [batch, seq, K] and GPT-2's
 * [batch*seq, K] against constant weights) and symbolic batch dims of a batched MatMul.
 *
 * Each graph is built in C with symbolic dims, compiled once and run at several bindings
 * (1, primes, a large one) against the reference evaluator on the same graph built at
 * those fixed values. Every MatMul kernel must be templated (not the auto-scheduler's),
 * with its epilogue fused (bias Add, GELU through Erf, Relu, a residual Add) and its
 * constant weights pre-packed; a kernel whose K or N is symbolic is the auto-scheduler's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_util.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "fuse/fuse.h"
#include "test.h"
#include "sym_build.h"


/* ---- building graphs (tests/sym_build.h) ---------------------------------------- */
/* Hints of the symbols by name (NULL: 16, 24, ... in order of appearance). */
static const sym_hint *hints;
#define input(g, in, b) sym_input((g), (in), (b), hints)
#define node sym_node

static hc_tensor *op2(hc_graph *g, hc_op_kind op, const char *name, hc_tensor *x, hc_tensor *y) {
    return node(g, op, name, 2, (hc_tensor *[]){x, y}, 0, NULL);
}

/* A constant of uniform [-1, 1) values scaled by `scale`, from its own seed. */
static hc_tensor *weights(hc_graph *g, const char *name, int ndim, const int64_t *shape,
                          uint64_t seed, double scale) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    float *w = malloc(sizeof(float) * (size_t)n);
    hc_rng rng = {seed};
    for (int64_t i = 0; i < n; i++) w[i] = (float)(scale * hc_rng_uniform(&rng, -1, 1));
    hc_tensor *t = hc_graph_constant(g, name, HC_F32, ndim, shape, w);
    free(w);
    return t;
}

static hc_tensor *scalar(hc_graph *g, const char *name, float v) {
    return hc_graph_constant(g, name, HC_F32, 0, NULL, &v);
}

/* GELU as exporters write it: x * 0.5 * (1 + erf(x / sqrt(2))). */
static hc_tensor *gelu(hc_graph *g, const char *p, hc_tensor *x) {
    hc_tensor *d = op2(g, HC_OPK_DIV, hc_arena_printf(&g->arena, "%s_div", p), x,
                       scalar(g, hc_arena_printf(&g->arena, "%s_sqrt2", p), 1.4142135f));
    hc_tensor *e = node(g, HC_OPK_ERF, hc_arena_printf(&g->arena, "%s_erf", p), 1,
                        (hc_tensor *[]){d}, 0, NULL);
    hc_tensor *a = op2(g, HC_OPK_ADD, hc_arena_printf(&g->arena, "%s_one", p), e,
                       scalar(g, hc_arena_printf(&g->arena, "%s_1", p), 1.0f));
    hc_tensor *m = op2(g, HC_OPK_MUL, hc_arena_printf(&g->arena, "%s_mul", p), x, a);
    return op2(g, HC_OPK_MUL, hc_arena_printf(&g->arena, "%s_half", p), m,
               scalar(g, hc_arena_printf(&g->arena, "%s_05", p), 0.5f));
}

typedef sym_build_fn build_fn;

/* BERT's FFN on x [batch, seq, 400]: h = GELU(x W1 + b1) (K = 400: two K blocks, so the
 * partial sums go through the scratch; N = 72: a narrow tail tile), then
 * z = Relu(h W2 + b2) + h (a residual Add). */
static void build_ffn(hc_graph *g, const hc_sym_binding *b) {
    sym_in xi = {"x", 3, {"batch", "seq", "400"}};
    hc_tensor *x = input(g, &xi, b);
    hc_tensor *w1 = weights(g, "W1", 2, (int64_t[]){400, 72}, 1, 0.1);
    hc_tensor *b1 = weights(g, "b1", 1, (int64_t[]){72}, 2, 1.0);
    hc_tensor *w2 = weights(g, "W2", 2, (int64_t[]){72, 72}, 3, 0.2);
    hc_tensor *b2 = weights(g, "b2", 1, (int64_t[]){72}, 4, 1.0);
    hc_tensor *h = gelu(g, "gelu", op2(g, HC_OPK_ADD, "bias1", op2(g, HC_OPK_MATMUL, "mm1", x, w1), b1));
    hc_tensor *r = node(g, HC_OPK_RELU, "relu", 1,
                        (hc_tensor *[]){op2(g, HC_OPK_ADD, "bias2", op2(g, HC_OPK_MATMUL, "mm2", h, w2), b2)},
                        0, NULL);
    hc_graph_add_output(g, op2(g, HC_OPK_ADD, "residual", r, h));
}

/* GPT-2's rows on x [rows, 256]: a Gemm with transposed weights and a bias, Relu; and a
 * MatMul with N = 300 (a masked tail of 12 columns) plus a bias. */
static void build_rows(hc_graph *g, const hc_sym_binding *b) {
    sym_in xi = {"x", 2, {"rows", "256"}};
    hc_tensor *x = input(g, &xi, b);
    hc_tensor *w = weights(g, "Wg", 2, (int64_t[]){40, 256}, 5, 0.1);
    hc_tensor *c = weights(g, "bg", 1, (int64_t[]){40}, 6, 1.0);
    hc_attr tb = {.name = "transB", .kind = HC_ATTR_INT, .i = 1};
    hc_tensor *y = node(g, HC_OPK_GEMM, "gemm", 3, (hc_tensor *[]){x, w, c}, 1, &tb);
    hc_graph_add_output(g, node(g, HC_OPK_RELU, "grelu", 1, (hc_tensor *[]){y}, 0, NULL));
    hc_tensor *w3 = weights(g, "W3", 2, (int64_t[]){256, 300}, 7, 0.1);
    hc_tensor *b3 = weights(g, "b3", 1, (int64_t[]){300}, 8, 1.0);
    hc_graph_add_output(g, op2(g, HC_OPK_ADD, "bias3", op2(g, HC_OPK_MATMUL, "mm3", x, w3), b3));
}

/* Batched MatMuls with symbolic batch dims: a [batch, 13, 24] x b [batch, 24, 40] (fixed
 * rows), a2 [batch, seq, 24] x b (symbolic rows too), and constant weights shared by every
 * batch: W [40, 24] x b (pre-packed A, the conv case). */
static void build_batched(hc_graph *g, const hc_sym_binding *b) {
    sym_in ai = {"a", 3, {"batch", "13", "24"}}, a2i = {"a2", 3, {"batch", "seq", "24"}};
    sym_in bi = {"b", 3, {"batch", "24", "40"}};
    hc_tensor *A = input(g, &ai, b), *A2 = input(g, &a2i, b), *B = input(g, &bi, b);
    hc_graph_add_output(g, node(g, HC_OPK_RELU, "brelu", 1,
                                (hc_tensor *[]){op2(g, HC_OPK_MATMUL, "bmm", A, B)}, 0, NULL));
    hc_graph_add_output(g, op2(g, HC_OPK_MATMUL, "bmm2", A2, B));
    hc_tensor *W = weights(g, "Ws", 2, (int64_t[]){40, 24}, 9, 0.3);
    hc_graph_add_output(g, op2(g, HC_OPK_MATMUL, "smm", W, B));
}

/* Heads split after the projection: x [batch, seq, 12] W -> Reshape [batch, seq, 3, 4]
 * -> Transpose [batch, 3, seq, 4], an epilogue whose lanes are not contiguous in the
 * output once seq is symbolic (its stride is an expression). */
static void build_heads(hc_graph *g, const hc_sym_binding *b) {
    sym_in xi = {"x", 3, {"batch", "seq", "12"}};
    hc_tensor *x = input(g, &xi, b);
    hc_tensor *w = weights(g, "W", 2, (int64_t[]){12, 12}, 10, 1.0);
    hc_tensor *q = op2(g, HC_OPK_MATMUL, "q", x, w);
    hc_tensor *r = op2(g, HC_OPK_RESHAPE, "split", q,
                       hc_pass_const_i64(g, NULL, 4, (int64_t[]){0, 0, 3, 4}));
    int64_t perm[4] = {0, 2, 1, 3};
    hc_attr pa = {.name = "perm", .kind = HC_ATTR_INTS, .n = 4, .ints = perm};
    hc_graph_add_output(g, node(g, HC_OPK_TRANSPOSE, "t", 1, (hc_tensor *[]){r}, 1, &pa));
}

/* A symbolic K and a symbolic N: not the template's (declined: the auto-scheduler). */
static void build_declined(hc_graph *g, const hc_sym_binding *b) {
    sym_in xi = {"x", 2, {"12", "kk"}}, wi = {"w", 2, {"kk", "nn"}};
    hc_tensor *x = input(g, &xi, b), *w = input(g, &wi, b);
    hc_graph_add_output(g, op2(g, HC_OPK_MATMUL, "kmm", x, w));
}

/* ---- compiled once, run at each binding ------------------------------------------------- */
/* Compile the symbolic graph once (checking that its MatMuls are templated, or not when
 * `templated` is false); at each binding, run it on random inputs and compare every output
 * with the reference evaluator on the graph built at that binding. */
static void check_compiled(const char *label, build_fn build, int tune, bool templated, int nb,
                           const char *const *names, const int64_t (*vals)[4]) {
    hc_compile_options o = {.num_threads = 2, .tune_level = tune};
    hc_model *m = sym_compile(label, build, &o);
    if (!m) return;
    int matmuls = 0;
    for (int i = 0; i < hc_model_num_kernels(m); i++) {
        const hc_node *n = hc_model_kernel_node(m, i);
        if (n->op != HC_OPK_MATMUL) continue;
        matmuls++;
        CHECK_MSG(hc_model_kernel_templated(m, i) == templated, "%s: kernel of '%s' %s", label,
                  n->name, templated ? "not templated" : "templated");
        /* the constant weights of a templated kernel come packed once */
        const hc_group *grp = hc_model_kernel_group(m, i);
        bool weight = false;
        for (int j = 0; j < 2; j++) weight |= n->inputs[j]->data != NULL;
        if (templated && weight)
            CHECK_MSG(hc_model_kernel_prepacked(m, i) != 0, "%s: '%s' not pre-packed", label,
                      n->name);
        if (templated && !strcmp(label, "ffn"))
            CHECK_MSG(hc_group_size(grp) > 1, "%s: '%s' has no fused epilogue", label, n->name);
        int ncand = 0, chosen = -1;
        bool cached = false;
        hc_model_kernel_tuning(m, i, &ncand, &chosen, &cached);
        /* tuned at the hints (no tune_shapes): a winner of the space, one kernel */
        if (!tune) CHECK_MSG(chosen == 0, "%s: '%s' chose candidate %d untuned", label, n->name, chosen);
        else if (templated)
            CHECK_MSG(ncand > 1 && chosen >= 0 && chosen < ncand, "%s: '%s': candidate %d of %d",
                      label, n->name, chosen, ncand);
    }
    CHECK_MSG(matmuls > 0, "%s: no MatMul kernel", label);
    sym_run_bindings(label, build, 1, &m, nb, names, vals[0], 4);
    hc_model_free(m);
}

static void test_ffn(void) {
    const char *bs[] = {"batch", "seq"};
    const int64_t bv[][4] = {{1, 1}, {1, 7}, {13, 1}, {3, 100}, {2, 13}, {1, 7}};
    hints = NULL; /* batch*seq at 16 * 24 */
    check_compiled("ffn", build_ffn, 0, true, 6, bs, bv);
    /* tiny hints: the config of 5 rows (mr 5, B read in place), run at other sizes */
    static const sym_hint small[] = {{"batch", 1}, {"seq", 5}, {NULL, 0}};
    hints = small;
    check_compiled("ffn", build_ffn, 0, true, 6, bs, bv);
    hints = NULL;
}

static void test_rows(void) {
    const char *rs[] = {"rows"};
    const int64_t rv[][4] = {{1}, {7}, {13}, {300}, {64}};
    check_compiled("rows", build_rows, 0, true, 5, rs, rv);
    /* tuning on: the symbolic kernels are skipped (their default is kept) */
    check_compiled("rows tuned", build_rows, 1, true, 2, rs, rv + 2);
}

static void test_batched(void) {
    const char *bs[] = {"batch", "seq"};
    const int64_t bv[][4] = {{1, 1}, {7, 13}, {13, 7}, {3, 300}};
    check_compiled("batched", build_batched, 0, true, 4, bs, bv);
}

static void test_heads(void) {
    const char *bs[] = {"batch", "seq"};
    const int64_t bv[][4] = {{1, 1}, {3, 7}, {2, 64}, {5, 13}};
    check_compiled("heads", build_heads, 0, true, 4, bs, bv);
}

static void test_declined(void) {
    const char *ks[] = {"kk", "nn"};
    const int64_t kv[][4] = {{1, 1}, {7, 13}, {300, 5}};
    check_compiled("declined", build_declined, 0, false, 3, ks, kv);
}

int main(void) {
    test_ffn();
    test_rows();
    test_batched();
    test_heads();
    test_declined();
    TEST_DONE();
}
