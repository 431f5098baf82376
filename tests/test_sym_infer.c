/* test_sym_infer.c — symbolic shape inference (src/graph/ops/sym_infer.c) against the
 * ops' own inference at fixed shapes.
 *
 * Without arguments: small graphs built here (each op family, shape subgraphs, the
 * constraints and errors), each inferred with symbols and then, for several bindings,
 * built again with those values fixed: every tensor's symbolic shape evaluated at the
 * binding must be the fixed graph's shape, and every symbolic value the fixed graph's
 * constant.
 *
 *   test_sym_infer MODEL.onnx NAME=V[,NAME=V...] ...
 * does the same for an ONNX file (tests/cli_dynamic.sh: models exported with dynamic
 * axes): imported with its symbols, and once per binding with them fixed (--dim). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontend/onnx.h"
#include "passes/pass_util.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "test.h"
#include "sym_build.h"

static hc_error err;

/* ---- comparing a symbolic graph with fixed ones ----------------------------------------- */
/* Every tensor of `fixed` that `sym` has (by name) against sym's expressions at b. */
static int compare_graphs(const hc_graph *sym, const hc_graph *fixed, const hc_sym_binding *b,
                          const char *label) {
    int compared = 0;
    for (size_t i = 0; i < fixed->tensors.len; i++) {
        const hc_tensor *f = fixed->tensors.data[i];
        if (!f->shape_known) continue;
        const hc_tensor *s = hc_graph_find_tensor(sym, f->name);
        if (!s || !s->shape_known) continue;
        bool ok = s->ndim == f->ndim;
        for (int d = 0; ok && d < f->ndim; d++) {
            int64_t v;
            ok = hc_sym_eval(hc_tensor_dim(s, d), b, &v) && v == f->shape[d];
        }
        hc_sb a, c;
        hc_sb_init(&a), hc_sb_init(&c);
        hc_print_tensor_shape(&a, s), hc_print_shape(&c, f->ndim, f->shape);
        CHECK_MSG(ok, "%s: tensor '%s': symbolic %s, fixed %s", label, f->name, a.buf, c.buf);
        hc_sb_free(&a), hc_sb_free(&c);
        if (ok && s->symval && f->data) { /* symbolic values against the folded constant */
            int64_t n = hc_tensor_numel(f);
            for (int64_t k = 0; k < n; k++) {
                int64_t v;
                bool vok = hc_sym_eval(s->symval[k], b, &v) &&
                           v == (int64_t)hc_elem_get(f->data, f->dtype, k);
                CHECK_MSG(vok, "%s: tensor '%s' element %lld: %s vs %g", label, f->name,
                          (long long)k, hc_sym_str((hc_arena *)&sym->arena, s->symval[k]),
                          hc_elem_get(f->data, f->dtype, k));
            }
        }
        compared++;
    }
    return compared;
}

/* ---- ONNX files ------------------------------------------------------------------------- */
static void check_model(const char *path, int nb, char **bindings) {
    hc_graph *g = NULL;
    hc_onnx_options so = {.symbolic = true};
    hc_status st = hc_onnx_load_with(path, &so, &g, &err);
    CHECK_MSG(st == HC_OK, "%s: %s", path, err.msg);
    if (st) return;
    st = hc_pass_infer_shapes(g, &err);
    CHECK_MSG(st == HC_OK, "%s: symbolic inference: %s", path, err.msg);
    CHECK_MSG(hc_graph_has_symbols(g), "%s: no symbols", path);
    for (size_t i = 0; st == HC_OK && i < g->outputs.len; i++) {
        hc_sb sb;
        hc_sb_init(&sb);
        hc_print_tensor_shape(&sb, g->outputs.data[i]);
        printf("%s: output %s %s\n", path, g->outputs.data[i]->name, sb.buf);
        hc_sb_free(&sb);
    }
    for (int k = 0; st == HC_OK && k < nb; k++) {
        /* NAME=V,NAME=V */
        hc_onnx_dim dims[16];
        char names[16][64];
        const char *nm[16];
        int64_t vals[16];
        int nd = 0;
        char *copy = strdup(bindings[k]);
        for (char *tok = strtok(copy, ","); tok && nd < 16; tok = strtok(NULL, ",")) {
            char *eq = strchr(tok, '=');
            HC_ASSERT(eq);
            *eq = 0;
            snprintf(names[nd], sizeof names[nd], "%s", tok);
            dims[nd] = (hc_onnx_dim){names[nd], atoll(eq + 1)};
            nm[nd] = names[nd], vals[nd] = dims[nd].value;
            nd++;
        }
        hc_sym_binding b = {nd, nm, vals};
        CHECK_MSG(hc_graph_check_binding(g, &b, &err) == HC_OK, "%s at %s: %s", path,
                  bindings[k], err.msg);
        hc_onnx_options fo = {.ndims = nd, .dims = dims};
        hc_graph *f = NULL;
        st = hc_onnx_load_with(path, &fo, &f, &err);
        CHECK_MSG(st == HC_OK, "%s at %s: %s", path, bindings[k], err.msg);
        if (st == HC_OK) st = hc_pass_infer_shapes(f, &err);
        CHECK_MSG(st == HC_OK, "%s at %s: fixed inference: %s", path, bindings[k], err.msg);
        if (st == HC_OK) {
            int n = compare_graphs(g, f, &b, bindings[k]);
            printf("%s at %s: %d tensors compared\n", path, bindings[k], n);
            CHECK(n > 0);
        }
        hc_graph_free(f);
        free(copy);
    }
    hc_graph_free(g);
}

/* ---- graphs built here ------------------------------------------------------------------- */
/* (tests/sym_build.h) hints 16, 24, ... by order of appearance */
#define input(g, in, b) sym_input((g), (in), (b), NULL)
#define node sym_node

static hc_tensor *ci64(hc_graph *g, int n, const int64_t *v) {
    return hc_pass_const_i64(g, NULL, n, v);
}

static hc_attr a_int(const char *name, int64_t v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_INT, .i = v};
}
static hc_attr a_ints(const char *name, int n, const int64_t *v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_INTS, .n = n, .ints = (int64_t *)v};
}

typedef sym_build_fn build_fn;

static hc_tensor *rand_weights(hc_graph *g, hc_rng *rng) { /* [8, 3, 3, 3] */
    float w[8 * 3 * 3 * 3];
    for (int i = 0; i < 8 * 27; i++) w[i] = (float)hc_rng_uniform(rng, -1, 1);
    return hc_graph_constant(g, "Wconv", HC_F32, 4, (int64_t[]){8, 3, 3, 3}, w);
}

/* A transformer-style block with a Reshape from Shape ops: x [batch, seq, 12] ->
 * MatMul -> split heads by Shape/Gather/Concat/Reshape -> Transpose -> Softmax ->
 * merge back; a causal-mask Slice of a 64x64 table by seq; a Flatten, a ReduceMean. */
static void build_attention(hc_graph *g, const hc_sym_binding *b) {
    hc_rng rng = {5};
    sym_in xi = {"x", 3, {"batch", "seq", "12"}};
    hc_tensor *x = input(g, &xi, b);
    float w[12 * 12];
    for (int i = 0; i < 144; i++) w[i] = (float)hc_rng_uniform(&rng, -1, 1);
    hc_tensor *W = hc_graph_constant(g, "W", HC_F32, 2, (int64_t[]){12, 12}, w);
    hc_tensor *q = node(g, HC_OPK_MATMUL, "q", 2, (hc_tensor *[]){x, W}, 0, NULL);
    hc_tensor *shp = node(g, HC_OPK_SHAPE, "shape", 1, (hc_tensor *[]){x}, 0, NULL);
    hc_attr ax0 = a_int("axis", 0);
    hc_tensor *b0 = node(g, HC_OPK_GATHER, "g0", 2,
                         (hc_tensor *[]){shp, hc_graph_constant(g, "i0", HC_I64, 0, NULL,
                                                                (int64_t[]){0})},
                         1, &ax0);
    hc_tensor *s1 = node(g, HC_OPK_GATHER, "g1", 2,
                         (hc_tensor *[]){shp, hc_graph_constant(g, "i1", HC_I64, 0, NULL,
                                                                (int64_t[]){1})},
                         1, &ax0);
    hc_tensor *u0 = node(g, HC_OPK_UNSQUEEZE, "u0", 2, (hc_tensor *[]){b0, ci64(g, 1, (int64_t[]){0})}, 0, NULL);
    hc_tensor *u1 = node(g, HC_OPK_UNSQUEEZE, "u1", 2, (hc_tensor *[]){s1, ci64(g, 1, (int64_t[]){0})}, 0, NULL);
    hc_tensor *cat = node(g, HC_OPK_CONCAT, "cat", 3,
                          (hc_tensor *[]){u0, u1, ci64(g, 2, (int64_t[]){3, 4})}, 1, &ax0);
    hc_tensor *r = node(g, HC_OPK_RESHAPE, "split_heads", 2, (hc_tensor *[]){q, cat}, 0, NULL);
    int64_t perm[4] = {0, 2, 1, 3};
    hc_attr pa = a_ints("perm", 4, perm);
    hc_tensor *t = node(g, HC_OPK_TRANSPOSE, "t", 1, (hc_tensor *[]){r}, 1, &pa);
    int64_t perm2[4] = {0, 1, 3, 2};
    hc_attr pb = a_ints("perm", 4, perm2);
    hc_tensor *kt = node(g, HC_OPK_TRANSPOSE, "kt", 1, (hc_tensor *[]){t}, 1, &pb);
    hc_tensor *sc = node(g, HC_OPK_MATMUL, "scores", 2, (hc_tensor *[]){t, kt}, 0, NULL);
    /* mask = table[:seq, :seq] of a 64x64 constant */
    float *tab = calloc(64 * 64, sizeof(float));
    hc_tensor *table = hc_graph_constant(g, "table", HC_F32, 4, (int64_t[]){1, 1, 64, 64}, tab);
    free(tab);
    hc_tensor *se = node(g, HC_OPK_UNSQUEEZE, "se", 2, (hc_tensor *[]){s1, ci64(g, 1, (int64_t[]){0})}, 0, NULL);
    hc_tensor *ends = node(g, HC_OPK_CONCAT, "ends", 2, (hc_tensor *[]){se, se}, 1, &ax0);
    hc_tensor *mask = node(g, HC_OPK_SLICE, "mask", 4,
                           (hc_tensor *[]){table, ci64(g, 2, (int64_t[]){0, 0}), ends,
                                           ci64(g, 2, (int64_t[]){2, 3})},
                           0, NULL);
    hc_tensor *sm = node(g, HC_OPK_ADD, "masked", 2, (hc_tensor *[]){sc, mask}, 0, NULL);
    hc_attr axl = a_int("axis", -1);
    hc_tensor *p = node(g, HC_OPK_SOFTMAX, "p", 1, (hc_tensor *[]){sm}, 1, &axl);
    hc_tensor *o = node(g, HC_OPK_MATMUL, "pv", 2, (hc_tensor *[]){p, t}, 0, NULL);
    hc_tensor *back = node(g, HC_OPK_TRANSPOSE, "back", 1, (hc_tensor *[]){o}, 1, &pa);
    hc_tensor *merged = node(g, HC_OPK_RESHAPE, "merge", 2,
                             (hc_tensor *[]){back, ci64(g, 3, (int64_t[]){0, 0, -1})}, 0, NULL);
    hc_attr ax1 = a_int("axis", 1);
    hc_tensor *fl = node(g, HC_OPK_FLATTEN, "flat", 1, (hc_tensor *[]){merged}, 1, &ax1);
    hc_attr kd = a_int("keepdims", 0);
    hc_tensor *mean = node(g, HC_OPK_REDUCE_MEAN, "mean", 2,
                           (hc_tensor *[]){fl, ci64(g, 1, (int64_t[]){1})}, 1, &kd);
    hc_graph_add_output(g, merged);
    hc_graph_add_output(g, mean);
}

/* A CNN block: Conv (stride 2, pads) -> Relu -> MaxPool -> GlobalAveragePool -> Flatten ->
 * Gemm over x [batch, 3, h, w]: symbolic spatial sizes too. */
static void build_cnn(hc_graph *g, const hc_sym_binding *b) {
    hc_rng rng = {9};
    sym_in xi = {"x", 4, {"batch", "3", "h", "w"}};
    hc_tensor *x = input(g, &xi, b);
    hc_tensor *w = rand_weights(g, &rng);
    int64_t k3[2] = {3, 3}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1};
    hc_attr ca[3] = {a_ints("kernel_shape", 2, k3), a_ints("strides", 2, s2),
                     a_ints("pads", 4, p1)};
    hc_tensor *c = node(g, HC_OPK_CONV, "conv", 2, (hc_tensor *[]){x, w}, 3, ca);
    hc_tensor *r = node(g, HC_OPK_RELU, "relu", 1, (hc_tensor *[]){c}, 0, NULL);
    hc_tensor *mp = node(g, HC_OPK_MAX_POOL, "pool", 1, (hc_tensor *[]){r}, 3, ca);
    hc_tensor *gp = node(g, HC_OPK_GLOBAL_AVERAGE_POOL, "gap", 1, (hc_tensor *[]){mp}, 0, NULL);
    hc_tensor *fl = node(g, HC_OPK_FLATTEN, "flat", 1, (hc_tensor *[]){gp}, 0, NULL);
    float wf[8 * 5];
    for (int i = 0; i < 40; i++) wf[i] = (float)hc_rng_uniform(&rng, -1, 1);
    hc_tensor *W = hc_graph_constant(g, "Wfc", HC_F32, 2, (int64_t[]){8, 5}, wf);
    hc_tensor *fc = node(g, HC_OPK_GEMM, "fc", 2, (hc_tensor *[]){fl, W}, 0, NULL);
    hc_graph_add_output(g, fc);
    hc_graph_add_output(g, mp);
}

/* Attention (ONNX 23, 4-D) with a past of symbolic length and a padding mask; Resize by
 * scales 2 and 0.5 of symbolic image sizes, and by sizes computed from a Shape. */
static void build_attn_resize(hc_graph *g, const hc_sym_binding *b) {
    sym_in qi = {"q", 4, {"batch", "2", "seq", "8"}}, pi = {"past", 4, {"batch", "2", "past_len", "8"}};
    sym_in mi = {"mask", 4, {"batch", "1", "1", "total"}};
    hc_tensor *q = input(g, &qi, b), *past = input(g, &pi, b), *mask = input(g, &mi, b);
    hc_node *n = hc_graph_add_node(g, HC_OPK_ATTENTION, "attn", 6,
                                   (hc_tensor *[]){q, q, q, mask, past, past}, 3, NULL, 0, NULL,
                                   &err);
    CHECK_MSG(n != NULL, "%s", err.msg);
    if (!n) abort();
    for (int i = 0; i < 3; i++) {
        n->outputs[i]->name = hc_arena_printf(&g->arena, "attn_out%d", i);
        hc_graph_add_output(g, n->outputs[i]);
    }
    sym_in xi = {"img", 4, {"batch", "3", "h", "w"}};
    hc_tensor *x = input(g, &xi, b);
    float sc[4] = {1, 1, 2, 0.5f};
    hc_tensor *scales = hc_graph_constant(g, "scales", HC_F32, 1, (int64_t[]){4}, sc);
    hc_tensor *empty = hc_graph_constant(g, "roi", HC_F32, 1, (int64_t[]){0}, NULL);
    hc_tensor *up = node(g, HC_OPK_RESIZE, "up", 3, (hc_tensor *[]){x, empty, scales}, 0, NULL);
    hc_tensor *shp = node(g, HC_OPK_SHAPE, "img_shape", 1, (hc_tensor *[]){x}, 0, NULL);
    hc_tensor *two = ci64(g, 4, (int64_t[]){1, 1, 3, 2});
    hc_tensor *sz = node(g, HC_OPK_MUL, "sizes", 2, (hc_tensor *[]){shp, two}, 0, NULL);
    hc_tensor *up2 = node(g, HC_OPK_RESIZE, "up2", 4, (hc_tensor *[]){x, empty, NULL, sz}, 0, NULL);
    hc_graph_add_output(g, up);
    hc_graph_add_output(g, up2);
}

static void check_build(const char *label, build_fn build, int nb, const char *const *names,
                        const int64_t (*vals)[8]) {
    hc_graph *g = hc_graph_new(label, 17);
    build(g, NULL);
    hc_status st = hc_pass_infer_shapes(g, &err);
    CHECK_MSG(st == HC_OK, "%s: %s", label, err.msg);
    for (int k = 0; st == HC_OK && k < nb; k++) {
        hc_sym_binding b = {(int)g->sym_names.len, names, vals[k]};
        CHECK_MSG(hc_graph_check_binding(g, &b, &err) == HC_OK, "%s binding %d: %s", label, k,
                  err.msg);
        hc_graph *f = hc_graph_new(label, 17);
        build(f, &b);
        hc_status fs = hc_pass_infer_shapes(f, &err);
        CHECK_MSG(fs == HC_OK, "%s binding %d: %s", label, k, err.msg);
        if (fs == HC_OK) CHECK(compare_graphs(g, f, &b, label) > 5);
        hc_graph_free(f);
    }
    hc_graph_free(g);
}

static void test_built(void) {
    const char *bs[] = {"batch", "seq"};
    const int64_t bv[][8] = {{1, 1}, {3, 7}, {2, 64}, {5, 13}};
    check_build("attention", build_attention, 4, bs, bv);
    const char *cs[] = {"batch", "h", "w"};
    const int64_t cv[][8] = {{1, 8, 8}, {2, 17, 9}, {3, 31, 64}};
    check_build("cnn", build_cnn, 3, cs, cv);
    const char *as[] = {"batch", "seq", "past_len", "total", "h", "w"};
    const int64_t av[][8] = {{1, 1, 0, 1, 1, 2}, {2, 5, 3, 8, 7, 9}, {3, 17, 11, 28, 32, 31}};
    check_build("attention-resize", build_attn_resize, 3, as, av);
}

/* The constraints: a Slice of a 64-row table by seq needs seq <= 64; checked per binding,
 * with the node named. */
static void test_constraints(void) {
    hc_graph *g = hc_graph_new("c", 17);
    build_attention(g, NULL);
    CHECK(hc_pass_infer_shapes(g, &err) == HC_OK);
    const char *names[] = {"batch", "seq"};
    int64_t ok[] = {2, 64}, bad[] = {2, 65};
    hc_sym_binding b1 = {2, names, ok}, b2 = {2, names, bad};
    CHECK(hc_graph_check_binding(g, &b1, &err) == HC_OK);
    CHECK(hc_graph_check_binding(g, &b2, &err) != HC_OK);
    CHECK_MSG(strstr(err.msg, "node 'mask'") && strstr(err.msg, "seq <= 64") &&
                  strstr(err.msg, "seq = 65"),
              "%s", err.msg);
    /* the merged output is [batch, seq, 12] exactly */
    const hc_tensor *m = hc_graph_find_tensor(g, "merge_out");
    CHECK(m && m->sym);
    if (m) {
        hc_sb sb;
        hc_sb_init(&sb);
        hc_print_tensor_shape(&sb, m);
        CHECK_STR(sb.buf, "[batch, seq, 12]");
        hc_sb_free(&sb);
    }
    hc_graph_free(g);
}

/* Errors name the node: an output size that depends on data (TopK with a computed k), an
 * op without a rule. */
static void test_errors(void) {
    hc_graph *g = hc_graph_new("e", 17);
    sym_in xi = {"x", 2, {"batch", "10"}};
    hc_tensor *x = input(g, &xi, NULL);
    hc_tensor *k = hc_graph_add_input(g, "k", HC_I64, 1, (int64_t[]){1});
    hc_attr ax = a_int("axis", 1);
    hc_node *n = hc_graph_add_node(g, HC_OPK_TOP_K, "topk", 2, (hc_tensor *[]){x, k}, 0, NULL,
                                   1, &ax, &err);
    CHECK(n != NULL);
    hc_graph_add_output(g, n->outputs[0]);
    CHECK(hc_pass_infer_shapes(g, &err) != HC_OK);
    CHECK_MSG(strstr(err.msg, "node 'topk'") != NULL, "%s", err.msg);
    hc_graph_free(g);
}

/* Binding the symbols from input shapes, and its errors. */
static void test_bind(void) {
    hc_graph *g = hc_graph_new("b", 17);
    build_attention(g, NULL);
    CHECK(hc_pass_infer_shapes(g, &err) == HC_OK);
    const char *names[] = {"x"};
    int nd[] = {3};
    int64_t shp[1][HC_MAX_DIMS] = {{2, 7, 12}}, vals[4];
    CHECK(hc_graph_bind_inputs(g, 1, names, nd, (const int64_t(*)[HC_MAX_DIMS])shp, vals,
                               &err) == HC_OK);
    CHECK_EQ_INT(vals[0], 2);
    CHECK_EQ_INT(vals[1], 7);
    CHECK(hc_graph_bind_inputs(g, 0, names, nd, (const int64_t(*)[HC_MAX_DIMS])shp, vals,
                               &err) == HC_OK);
    CHECK_EQ_INT(vals[0], -1); /* no input given: unbound */
    shp[0][2] = 11;
    CHECK(hc_graph_bind_inputs(g, 1, names, nd, (const int64_t(*)[HC_MAX_DIMS])shp, vals,
                               &err) != HC_OK);
    CHECK_MSG(strstr(err.msg, "input 'x', dimension 2: 11 given, the model's is 12"), "%s",
              err.msg);
    shp[0][2] = 12, shp[0][1] = 65; /* seq <= 64: the mask's Slice */
    CHECK(hc_graph_bind_inputs(g, 1, names, nd, (const int64_t(*)[HC_MAX_DIMS])shp, vals,
                               &err) != HC_OK);
    CHECK_MSG(strstr(err.msg, "seq <= 64"), "%s", err.msg);
    nd[0] = 2;
    CHECK(hc_graph_bind_inputs(g, 1, names, nd, (const int64_t(*)[HC_MAX_DIMS])shp, vals,
                               &err) != HC_OK);
    CHECK_MSG(strstr(err.msg, "has 2 dimensions, the model's has 3: [batch, seq, 12]"), "%s",
              err.msg);
    const char *bad[] = {"y"};
    CHECK(hc_graph_bind_inputs(g, 1, bad, nd, (const int64_t(*)[HC_MAX_DIMS])shp, vals,
                               &err) != HC_OK);
    CHECK_MSG(strstr(err.msg, "no input 'y' (its inputs: x)"), "%s", err.msg);
    hc_graph_free(g);
}

/* --all-symbolic DIR...: each DIR/model.onnx (the ONNX node tests) with every input
 * dimension above 1 made a symbol (hinted at its value): symbolic inference either works
 * (its rules checked at a second binding) or says it cannot; a rule that disagrees with
 * the op's own inference is a failure. */
static void all_symbolic(int n, char **dirs) {
    int ok = 0, nosym = 0, refused = 0, other = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/model.onnx", dirs[i]);
        hc_onnx_options o = {.symbolic = true, .all_symbolic = true};
        hc_graph *g = NULL;
        if (hc_onnx_load_with(path, &o, &g, &err) != HC_OK) {
            other++;
            continue;
        }
        if (!hc_graph_has_symbols(g)) nosym++;
        else if (hc_pass_infer_shapes(g, &err) == HC_OK) ok++;
        else if (strstr(err.msg, "a hidetc bug")) {
            CHECK_MSG(0, "%s: %s", dirs[i], err.msg);
        } else if (strstr(err.msg, "--dim")) {
            refused++;
            if (getenv("SYM_VERBOSE")) fprintf(stderr, "refused %s: %s\n", dirs[i], err.msg);
        } else {
            other++;
            if (getenv("SYM_VERBOSE")) fprintf(stderr, "%s: %s\n", dirs[i], err.msg);
        }
        hc_graph_free(g);
    }
    CHECK(ok > 0);
    printf("all-symbolic: %d inferred, %d without symbols, %d refused (no rule, data-dependent "
           "sizes), %d other errors\n", ok, nosym, refused, other);
}


/* ---- compiled once, run at several shapes ------------------------------------------------ */
/* An MLP-like block over x [batch, seq, 8]: Add of a bias, Relu, Softmax, a reduction
 * over seq, a Transpose and a Reshape that merges batch and seq. */
static void build_elementwise(hc_graph *g, const hc_sym_binding *b) {
    hc_rng rng = {3};
    sym_in xi = {"x", 3, {"batch", "seq", "8"}};
    hc_tensor *x = input(g, &xi, b);
    float bias[8];
    for (int i = 0; i < 8; i++) bias[i] = (float)hc_rng_uniform(&rng, -1, 1);
    hc_tensor *B = hc_graph_constant(g, "bias", HC_F32, 1, (int64_t[]){8}, bias);
    hc_tensor *y = node(g, HC_OPK_ADD, "add", 2, (hc_tensor *[]){x, B}, 0, NULL);
    hc_tensor *r = node(g, HC_OPK_RELU, "relu", 1, (hc_tensor *[]){y}, 0, NULL);
    hc_attr axl = a_int("axis", -1);
    hc_tensor *p = node(g, HC_OPK_SOFTMAX, "softmax", 1, (hc_tensor *[]){r}, 1, &axl);
    hc_tensor *px = node(g, HC_OPK_MUL, "mul", 2, (hc_tensor *[]){p, x}, 0, NULL);
    hc_attr kd = a_int("keepdims", 0);
    hc_tensor *sum = node(g, HC_OPK_REDUCE_SUM, "sum_seq", 2,
                          (hc_tensor *[]){px, ci64(g, 1, (int64_t[]){1})}, 1, &kd);
    int64_t perm[3] = {1, 0, 2};
    hc_attr pa = a_ints("perm", 3, perm);
    hc_tensor *t = node(g, HC_OPK_TRANSPOSE, "t", 1, (hc_tensor *[]){p}, 1, &pa);
    hc_tensor *rows = node(g, HC_OPK_RESHAPE, "rows", 2,
                           (hc_tensor *[]){r, ci64(g, 2, (int64_t[]){-1, 8})}, 0, NULL);
    hc_graph_add_output(g, sum);
    hc_graph_add_output(g, t);
    hc_graph_add_output(g, rows);
}

/* Compile the symbolic graph once; at each binding, run it, and the same model through a
 * file (its symbols, constraints and kernels' symbols kept), against the reference
 * evaluator on the graph built at that binding. */
static void check_compiled(const char *label, build_fn build, int nb, const char *const *names,
                           const int64_t (*vals)[8]) {
    hc_compile_options o = {.num_threads = 2};
    hc_model *m = sym_compile(label, build, &o);
    if (!m) return;
    char path[256];
    snprintf(path, sizeof path, "%s/hc_sym_%s_%d.hcm", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             label, (int)getpid());
    hc_model *lm = NULL;
    CHECK_MSG(hc_model_save(m, path, &err) == HC_OK, "%s: save: %s", label, err.msg);
    CHECK_MSG(hc_model_load(path, &lm, &err) == HC_OK, "%s: load: %s", label, err.msg);
    unlink(path);
    if (lm) CHECK(hc_model_is_symbolic(lm));
    sym_run_bindings(label, build, 2, (hc_model *[]){m, lm}, nb, names, vals[0], 8);
    hc_model_free(m);
    hc_model_free(lm);
}

/* A Pad at the end of a symbolic dim: its Task bounds-checks with the dim's hint value,
 * so the check at a second binding refuses it, naming the node (never a wrong kernel). */
static void build_pad(hc_graph *g, const hc_sym_binding *b) {
    sym_in xi = {"x", 2, {"batch", "8"}};
    hc_tensor *x = input(g, &xi, b);
    hc_tensor *p = node(g, HC_OPK_PAD, "pad_end", 2,
                        (hc_tensor *[]){x, ci64(g, 4, (int64_t[]){0, 0, 2, 0})}, 0, NULL);
    hc_graph_add_output(g, p);
}

static void test_refused(void) {
    hc_graph *g = hc_graph_new("pad", 17);
    build_pad(g, NULL);
    hc_model *m = NULL;
    hc_compile_options o = {.num_threads = 2};
    CHECK(hc_pass_infer_shapes(g, &err) == HC_OK);
    hc_status st = hc_model_compile(g, &o, &m, &err);
    CHECK(st == HC_ERR_UNSUPPORTED && !m);
    CHECK_MSG(strstr(err.msg, "'pad_end'") && strstr(err.msg, "not symbolic") &&
                  strstr(err.msg, "--dim"), "%s", err.msg);
    hc_model_free(m);
}

static void test_compiled(void) {
    const char *bs[] = {"batch", "seq"};
    const int64_t bv[][8] = {{1, 1}, {3, 7}, {2, 64}, {5, 13}, {3, 7}};
    check_compiled("elementwise", build_elementwise, 5, bs, bv);
    check_compiled("attention", build_attention, 5, bs, bv);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--all-symbolic")) {
        all_symbolic(argc - 2, argv + 2);
        TEST_DONE();
    }
    if (argc > 1) {
        for (int i = 1; i < argc;) {
            int j = i + 1;
            while (j < argc && !strstr(argv[j], ".onnx")) j++;
            check_model(argv[i], j - i - 1, argv + i + 1);
            i = j;
        }
        TEST_DONE();
    }
    test_built();
    test_constraints();
    test_errors();
    test_bind();
    test_compiled();
    test_refused();
    TEST_DONE();
}
