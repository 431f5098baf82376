/* test_dynamic_attention.c — the fused attention template with symbolic extents
 * (docs/dynamic.md, src/target/cpu/templates/attention.h): a symbolic batch, query count
 * and key count.
 *
 * Each graph is built in C with symbolic dims, compiled once and run at several bindings
 * (1, 2, primes, 64, 129) against the reference evaluator on the same graph built at
 * those fixed values (tests/sym_build.h):
 *   - BERT-style: the exporters' MatMul / Div / Add of a padding bias / Softmax / MatMul
 *     over heads split by Reshape and Transpose (the fuse_attention pass makes it one
 *     ATTENTION_FUSED node);
 *   - GPT-style: the same with Where(causal, S, finfo.min), the causal cond a constant
 *     table sliced to the sequence by the sequence's Shape (the causal attribute);
 *   - ATTENTION_FUSED nodes themselves: GQA (2 query heads per KV head), a key count of
 *     its own symbol, a full bias [batch, 2, seq, kv], the causal frontier at T - Sq
 *     (offset_kv), windows.
 * Every attention kernel must be the template's (a silent fallback to the three
 * auto-scheduled kernels fails), where the host's target takes the template (AVX2 and
 * up); compiled at the default hints (16, 24: the packed K^T, one chunk per head) and at
 * small ones (the vectors along D, chunks of rows). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "runtime/runtime.h"
#include "target/cpu/cpu.h"
#include "target/target.h"
#include "test.h"
#include "sym_build.h"

static const sym_hint *hints;
#define input(g, in, b) sym_input((g), (in), (b), hints)
#define node sym_node

static hc_attr a_int(const char *name, int64_t v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_INT, .i = v};
}
static hc_attr a_ints(const char *name, int n, int64_t *v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_INTS, .n = n, .ints = v};
}
static hc_attr a_float(const char *name, double v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_FLOAT, .f = v};
}

static hc_tensor *op2(hc_graph *g, hc_op_kind op, const char *name, hc_tensor *x, hc_tensor *y) {
    return node(g, op, name, 2, (hc_tensor *[]){x, y}, 0, NULL);
}

static hc_tensor *ci64(hc_graph *g, const char *name, int n, const int64_t *v) {
    return hc_graph_constant(g, name, HC_I64, 1, (int64_t[]){n}, v);
}

static hc_tensor *weights(hc_graph *g, const char *name, int64_t rows, int64_t cols,
                          uint64_t seed, double scale) {
    float *w = malloc(sizeof(float) * (size_t)(rows * cols));
    hc_rng rng = {seed};
    for (int64_t i = 0; i < rows * cols; i++) w[i] = (float)(scale * hc_rng_uniform(&rng, -1, 1));
    hc_tensor *t = hc_graph_constant(g, name, HC_F32, 2, (int64_t[]){rows, cols}, w);
    free(w);
    return t;
}

static hc_tensor *transpose(hc_graph *g, const char *name, hc_tensor *x, int64_t p0, int64_t p1,
                            int64_t p2, int64_t p3) {
    int64_t perm[4] = {p0, p1, p2, p3};
    hc_attr pa = a_ints("perm", 4, perm);
    return node(g, HC_OPK_TRANSPOSE, name, 1, (hc_tensor *[]){x}, 1, &pa);
}

/* x [batch, seq, 48] W -> [batch, seq, 2, 24] (a Reshape by 0, 0: the dims kept). */
static hc_tensor *heads(hc_graph *g, const char *name, hc_tensor *x, uint64_t seed) {
    hc_tensor *p = op2(g, HC_OPK_MATMUL, hc_arena_printf(&g->arena, "%s_proj", name), x,
                       weights(g, hc_arena_printf(&g->arena, "%s_w", name), 48, 48, seed, 0.3));
    return op2(g, HC_OPK_RESHAPE, hc_arena_printf(&g->arena, "%s_split", name), p,
               ci64(g, hc_arena_printf(&g->arena, "%s_shape", name), 4, (int64_t[]){0, 0, 2, 24}));
}

/* The exporters' self-attention over x [batch, seq, 48] (2 heads of 24): scores by
 * MatMul(Q, K^T) / sqrt(24), then masked by `mask_of`, Softmax, MatMul by V, heads merged. */
typedef hc_tensor *(*mask_fn)(hc_graph *g, hc_tensor *scores, hc_tensor *x, hc_tensor *m);
static hc_tensor *self_attention(hc_graph *g, hc_tensor *x, hc_tensor *m, mask_fn mask_of) {
    hc_tensor *q = transpose(g, "q", heads(g, "q", x, 1), 0, 2, 1, 3);
    hc_tensor *kt = transpose(g, "kt", heads(g, "k", x, 2), 0, 2, 3, 1);
    hc_tensor *v = transpose(g, "v", heads(g, "v", x, 3), 0, 2, 1, 3);
    float c = sqrtf(24.0f);
    hc_tensor *s = op2(g, HC_OPK_DIV, "scale", op2(g, HC_OPK_MATMUL, "qk", q, kt),
                       hc_graph_constant(g, "c", HC_F32, 0, NULL, &c));
    hc_attr axl = a_int("axis", -1);
    hc_tensor *p = node(g, HC_OPK_SOFTMAX, "softmax", 1, (hc_tensor *[]){mask_of(g, s, x, m)}, 1, &axl);
    hc_tensor *y = transpose(g, "merge_t", op2(g, HC_OPK_MATMUL, "pv", p, v), 0, 2, 1, 3);
    return op2(g, HC_OPK_RESHAPE, "merge", y, ci64(g, "merge_shape", 3, (int64_t[]){0, 0, 48}));
}

/* BERT: S + (1 - m) * -10000 with m [batch, seq] made [batch, 1, 1, seq]. */
static hc_tensor *padding(hc_graph *g, hc_tensor *s, hc_tensor *x, hc_tensor *m) {
    (void)x;
    float one = 1, big = -10000;
    hc_tensor *inv = op2(g, HC_OPK_SUB, "inv", hc_graph_constant(g, "one", HC_F32, 0, NULL, &one), m);
    hc_tensor *b = op2(g, HC_OPK_MUL, "bias", inv, hc_graph_constant(g, "big", HC_F32, 0, NULL, &big));
    hc_tensor *b4 = op2(g, HC_OPK_UNSQUEEZE, "bias4", b, ci64(g, "uaxes", 2, (int64_t[]){1, 2}));
    return op2(g, HC_OPK_ADD, "masked", s, b4);
}

static void build_bert(hc_graph *g, const hc_sym_binding *b) {
    sym_in xi = {"x", 3, {"batch", "seq", "48"}}, mi = {"m", 2, {"batch", "seq"}};
    hc_tensor *x = input(g, &xi, b), *m = input(g, &mi, b);
    hc_graph_add_output(g, self_attention(g, x, m, padding));
}

/* GPT-2: Where(table[:, :, :seq, :seq], S, finfo.min), table a 160 x 160 lower triangle
 * and seq from x's Shape. */
enum { TABLE = 160 };
static hc_tensor *causal(hc_graph *g, hc_tensor *s, hc_tensor *x, hc_tensor *m) {
    (void)m;
    uint8_t *tab = malloc(TABLE * TABLE);
    for (int i = 0; i < TABLE; i++)
        for (int j = 0; j < TABLE; j++) tab[i * TABLE + j] = j <= i;
    hc_tensor *table = hc_graph_constant(g, "table", HC_BOOL, 4, (int64_t[]){1, 1, TABLE, TABLE}, tab);
    free(tab);
    hc_tensor *shp = node(g, HC_OPK_SHAPE, "shape", 1, (hc_tensor *[]){x}, 0, NULL);
    hc_attr ax0 = a_int("axis", 0);
    int64_t one = 1;
    hc_tensor *seq = node(g, HC_OPK_GATHER, "seq", 2,
                          (hc_tensor *[]){shp, hc_graph_constant(g, "i1", HC_I64, 0, NULL, &one)}, 1, &ax0);
    hc_tensor *se = op2(g, HC_OPK_UNSQUEEZE, "seq1", seq, ci64(g, "u0", 1, (int64_t[]){0}));
    /* two Slices, as the exporter writes them: rows, then columns */
    hc_tensor *rows = node(g, HC_OPK_SLICE, "rows", 4,
                           (hc_tensor *[]){table, ci64(g, "z0", 1, (int64_t[]){0}), se,
                                           ci64(g, "a2", 1, (int64_t[]){2})},
                           0, NULL);
    hc_tensor *cond = node(g, HC_OPK_SLICE, "cols", 5,
                           (hc_tensor *[]){rows, ci64(g, "z1", 1, (int64_t[]){0}), se,
                                           ci64(g, "a3", 1, (int64_t[]){3}),
                                           ci64(g, "st", 1, (int64_t[]){1})},
                           0, NULL);
    float fill = -3.4028234663852886e38f;
    return node(g, HC_OPK_WHERE, "where", 3,
                (hc_tensor *[]){cond, s, hc_graph_constant(g, "fill", HC_F32, 0, NULL, &fill)}, 0, NULL);
}

static void build_gpt(hc_graph *g, const hc_sym_binding *b) {
    sym_in xi = {"x", 3, {"batch", "seq", "48"}};
    hc_tensor *x = input(g, &xi, b);
    hc_graph_add_output(g, self_attention(g, x, NULL, causal));
}

/* ATTENTION_FUSED nodes themselves: q [batch, 2, seq, 24], k [batch, 1, kv, 24], v [batch,
 * 1, kv, 20] (GQA), a bias [batch, 2, seq, kv] or none, and the masks of `fused_attrs`. */
static hc_attr fused_attrs[6];
static bool fused_bias;
static void build_fused(hc_graph *g, const hc_sym_binding *b) {
    sym_in qi = {"q", 4, {"batch", "2", "seq", "24"}}, ki = {"k", 4, {"batch", "1", "kv", "24"}};
    sym_in vi = {"v", 4, {"batch", "1", "kv", "20"}}, bi = {"bias", 4, {"batch", "2", "seq", "kv"}};
    hc_tensor *in[4] = {input(g, &qi, b), input(g, &ki, b), input(g, &vi, b)};
    if (fused_bias) in[3] = input(g, &bi, b);
    hc_tensor *y = node(g, HC_OPK_ATTENTION_FUSED, "attn", fused_bias ? 4 : 3, in, 6, fused_attrs);
    hc_graph_add_output(g, y);
}

/* ONNX Attention (opset 23) with symbolic batch and sequences: 4-D q [batch, 2, seq, 24],
 * k and v [batch, 1, kv, 24 | 20] (GQA) or 3-D [batch, seq, 48] with 2 query and 1 KV
 * heads; the attributes of `onnx_attrs`; a float mask [batch, 1, seq, kv] or none; a KV
 * cache of `past` entries or none (the causal frontier then a symbol: past). */
static hc_attr onnx_attrs[3];
static int onnx_nattrs;
static bool onnx_3d, onnx_mask, onnx_past, onnx_new_is_seq;
static void build_onnx(hc_graph *g, const hc_sym_binding *b) {
    /* onnx_new_is_seq: as many new keys as queries (a decoder's step), "seq" for both */
    const char *kv = onnx_new_is_seq ? "seq" : "kv";
    sym_in qi = {"q", 4, {"batch", "2", "seq", "24"}}, ki = {"k", 4, {"batch", "1", kv, "24"}};
    sym_in vi = {"v", 4, {"batch", "1", kv, "20"}}, mi = {"mask", 4, {"batch", "1", "seq", "kv"}};
    sym_in q3 = {"q", 3, {"batch", "seq", "48"}}, k3 = {"k", 3, {"batch", "kv", "24"}};
    sym_in v3 = {"v", 3, {"batch", "kv", "20"}};
    sym_in pk = {"past_key", 4, {"batch", "1", "past", "24"}};
    sym_in pv = {"past_value", 4, {"batch", "1", "past", "20"}};
    hc_tensor *in[6] = {input(g, onnx_3d ? &q3 : &qi, b), input(g, onnx_3d ? &k3 : &ki, b),
                        input(g, onnx_3d ? &v3 : &vi, b)};
    if (onnx_mask) in[3] = input(g, &mi, b);
    if (onnx_past) in[4] = input(g, &pk, b), in[5] = input(g, &pv, b);
    hc_error e = {0};
    hc_node *n = hc_graph_add_node(g, HC_OPK_ATTENTION, "attention", onnx_past ? 6 : onnx_mask ? 4 : 3,
                                   in, 1, NULL, onnx_nattrs, onnx_attrs, &e);
    CHECK_MSG(n != NULL, "attention: %s", e.msg);
    if (!n) abort();
    n->opset = 23;
    n->outputs[0]->name = "y";
    hc_graph_add_output(g, n->outputs[0]);
    /* the reference (a fixed graph): Attention has no Task of its own; lowered for a target
     * without the template it is MatMuls around ATTENTION_CORE, not the fused op's Task */
    hc_optimize_options o = {.target = hc_target_cpu(HC_ISA_SCALAR)};
    if (b)
        CHECK_MSG(hc_pass_infer_shapes(g, &e) == HC_OK && hc_pass_lower_attention_with(g, &o, &e) == HC_OK,
                  "lower: %s", e.msg);
}

/* Compile once; every attention kernel templated (where the host takes the template); run
 * at each binding against the reference. */
static void check_compiled(const char *label, sym_build_fn build, int nb, const char *const *names,
                           const int64_t (*vals)[4]) {
    hc_compile_options o = {.num_threads = 2};
    hc_model *m = sym_compile(label, build, &o);
    if (!m) return;
    bool takes = hc_target_default()->caps.isa >= HC_ISA_AVX2;
    int fused = 0, others = 0;
    for (int i = 0; i < hc_model_num_kernels(m); i++) {
        const hc_node *n = hc_model_kernel_node(m, i);
        if (!n) continue;
        if (n->op == HC_OPK_ATTENTION_FUSED) {
            fused++;
            if (takes)
                CHECK_MSG(hc_model_kernel_templated(m, i), "%s: '%s' not templated", label, n->name);
        }
        others += n->op == HC_OPK_SOFTMAX || n->op == HC_OPK_ATTENTION_CORE;
    }
    if (takes) {
        CHECK_MSG(fused == 1, "%s: %d fused attention kernels", label, fused);
        CHECK_MSG(others == 0, "%s: %d softmax kernels left", label, others);
    }
    sym_run_bindings(label, build, 1, &m, nb, names, vals[0], 4);
    hc_model_free(m);
}

/* Hints that plan other configs: the default ones (16, 24, 32: packed K^T, one chunk of
 * all rows per head), tiny ones (one thread, vectors along D), one head pair over two
 * threads (chunks of rows: packed K^T at 40 rows, vectors along D at 8 rows of 100 keys). */
static const sym_hint small[] = {{"batch", 1}, {"seq", 2}, {"kv", 3}, {NULL, 0}};
static const sym_hint chunked[] = {{"batch", 1}, {"seq", 40}, {"kv", 40}, {NULL, 0}};
static const sym_hint chunked_dot[] = {{"batch", 1}, {"seq", 8}, {"kv", 100}, {NULL, 0}};
static const sym_hint *const hint_sets[] = {NULL, small, chunked, chunked_dot};

static void test_blocks(void) {
    const char *bs[] = {"batch", "seq"};
    const int64_t bv[][4] = {{1, 1}, {3, 2}, {1, 7}, {3, 31}, {1, 64}, {3, 129}, {1, 129}};
    for (int h = 0; h < 3; h++) {
        hints = hint_sets[h];
        check_compiled("bert", build_bert, 7, bs, bv);
        check_compiled("gpt", build_gpt, 7, bs, bv);
    }
    hints = NULL;
}

static void test_fused(void) {
    const char *ns[] = {"batch", "seq", "kv"};
    const int64_t bv[][4] = {{1, 1, 1}, {3, 2, 7}, {1, 7, 2}, {3, 31, 31}, {1, 64, 129}, {2, 129, 64}};
    static const struct {
        const char *label;
        bool bias;
        int64_t causal, offset_kv, left, right;
    } cases[] = {
        {"fused plain", false, 0, 0, -1, -1},
        {"fused bias", true, 0, 0, -1, -1},
        {"fused causal kv", true, 1, 1, -1, -1},
        {"fused causal", false, 1, 0, -1, -1},
        {"fused window", false, 0, 1, 3, 2},
        {"fused causal window", true, 1, 1, 5, -1},
    };
    for (size_t k = 0; k < HC_ARRAY_LEN(cases); k++)
        for (int h = 0; h < 4; h++) {
            hints = hint_sets[h];
            fused_bias = cases[k].bias;
            fused_attrs[0] = a_float("scale", 0.2);
            fused_attrs[1] = a_int("causal", cases[k].causal);
            fused_attrs[2] = a_int("offset", 0);
            fused_attrs[3] = a_int("offset_kv", cases[k].offset_kv);
            fused_attrs[4] = a_int("left", cases[k].left);
            fused_attrs[5] = a_int("right", cases[k].right);
            check_compiled(cases[k].label, build_fused, 6, ns, bv);
        }
    hints = NULL;
}

static void test_onnx(void) {
    const char *ns[] = {"batch", "seq", "kv", "past"};
    const int64_t bv[][4] = {{1, 1, 1, 1}, {3, 2, 7, 5}, {1, 7, 2, 31}, {3, 31, 31, 2},
                             {1, 64, 129, 1}, {2, 129, 64, 7}};
    /* 4-d, 4-d with a mask, 3-d causal, 3-d with a mask (a past: below) */
    for (int k = 0; k < 4; k++) {
        onnx_3d = k == 2 || k == 3, onnx_mask = k == 1 || k == 3, onnx_past = k == 4;
        onnx_nattrs = 0;
        if (onnx_3d) {
            onnx_attrs[onnx_nattrs++] = a_int("q_num_heads", 2);
            onnx_attrs[onnx_nattrs++] = a_int("kv_num_heads", 1);
        }
        onnx_attrs[onnx_nattrs++] = a_int("is_causal", k == 1 || k == 2 || k == 4);
        hints = hint_sets[k % 4];
        check_compiled(onnx_3d ? "onnx 3-d" : "onnx 4-d", build_onnx, 6, ns, bv);
    }
    /* A KV cache of symbolic length (the Concat of the cache and the new keys along a
     * symbolic axis): causal, as many new keys as queries (seq), so the frontier is the
     * past length; non-causal with new keys of their own length (kv); at each hint set */
    const char *ps[] = {"batch", "seq", "past"};
    const int64_t pb[][4] = {{1, 1, 1}, {3, 2, 5}, {1, 7, 31}, {3, 31, 2}, {1, 1, 129}, {2, 64, 7}};
    const char *pn[] = {"batch", "seq", "kv", "past"};
    onnx_3d = onnx_mask = false, onnx_past = true;
    for (int h = 0; h < 4; h++) {
        hints = hint_sets[h];
        for (int causal = 0; causal < 2; causal++) {
            onnx_new_is_seq = causal;
            onnx_attrs[0] = a_int("is_causal", causal), onnx_nattrs = 1;
            check_compiled(causal ? "onnx past causal" : "onnx past", build_onnx, 6,
                           causal ? ps : pn, causal ? pb : bv);
        }
    }
    /* causal with new keys of another length than the queries: the frontier would be
     * T - Sq, not the past length: refused, naming the node and the two lengths */
    onnx_new_is_seq = false;
    onnx_attrs[0] = a_int("is_causal", 1), onnx_nattrs = 1;
    hints = NULL;
    hc_graph *g = hc_graph_new("past refused", 17);
    build_onnx(g, NULL);
    hc_error e = {0};
    hc_model *m = NULL;
    hc_compile_options o = {.num_threads = 2};
    CHECK(hc_pass_infer_shapes(g, &e) == HC_OK);
    CHECK(hc_model_compile(g, &o, &m, &e) == HC_ERR_UNSUPPORTED && m == NULL);
    CHECK_MSG(strstr(e.msg, "'attention'") && strstr(e.msg, "KV cache") && strstr(e.msg, "kv") &&
                  strstr(e.msg, "seq"), "%s", e.msg);
    onnx_past = false;
}

/* With an argument (blocks, fused, onnx), that part alone (valgrind runs one). */
int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL;
    if (!only || !strcmp(only, "blocks")) test_blocks();
    if (!only || !strcmp(only, "fused")) test_fused();
    if (!only || !strcmp(only, "onnx")) test_onnx();
    TEST_DONE();
}
