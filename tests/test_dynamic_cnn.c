/* test_dynamic_cnn.c — ResNet-style CNN blocks with a symbolic batch (docs/dynamic.md,
 * docs/nchwc.md): compiled once, run at several batches against the reference evaluator
 * of the same graph built at that batch; the convs and pools must take their templates
 * (the channel-blocked conv and pool, blocked Winograd's transforms and batched matmul),
 * not the auto-scheduler. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_util.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "test.h"
#include "sym_build.h"

static hc_error err;

/* ---- graphs built here (tests/sym_build.h) --------------------------------------------- */
#define input(g, in, b) sym_input((g), (in), (b), NULL)
#define node sym_node

static hc_attr a_int(const char *name, int64_t v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_INT, .i = v};
}
static hc_attr a_ints(const char *name, int n, const int64_t *v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_INTS, .n = n, .ints = (int64_t *)v};
}

typedef sym_build_fn build_fn;

static hc_tensor *rand_const(hc_graph *g, hc_rng *rng, const char *name, int nd,
                             const int64_t *shape, double lo, double hi) {
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= shape[d];
    float *v = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) v[i] = (float)hc_rng_uniform(rng, lo, hi);
    hc_tensor *t = hc_graph_constant(g, name, HC_F32, nd, shape, v);
    free(v);
    return t;
}

/* Conv (kxk, stride s, pad p) of c -> m channels with a bias. */
static hc_tensor *conv(hc_graph *g, hc_rng *rng, const char *name, hc_tensor *x, int64_t c,
                       int64_t m, int64_t k, int64_t s, int64_t p) {
    double r = 1.0 / sqrt((double)(c * k * k));
    hc_tensor *w = rand_const(g, rng, hc_arena_printf(&g->arena, "%s_w", name), 4,
                              (int64_t[]){m, c, k, k}, -r, r);
    hc_tensor *b = rand_const(g, rng, hc_arena_printf(&g->arena, "%s_b", name), 1,
                              (int64_t[]){m}, -0.5, 0.5);
    int64_t ks[2] = {k, k}, st[2] = {s, s}, pd[4] = {p, p, p, p};
    hc_attr ca[3] = {a_ints("kernel_shape", 2, ks), a_ints("strides", 2, st),
                     a_ints("pads", 4, pd)};
    return node(g, HC_OPK_CONV, name, 3, (hc_tensor *[]){x, w, b}, 3, ca);
}

static hc_tensor *bn(hc_graph *g, hc_rng *rng, const char *name, hc_tensor *x, int64_t c) {
    hc_tensor *sc = rand_const(g, rng, hc_arena_printf(&g->arena, "%s_s", name), 1,
                               (int64_t[]){c}, 0.5, 1.5);
    hc_tensor *bi = rand_const(g, rng, hc_arena_printf(&g->arena, "%s_b", name), 1,
                               (int64_t[]){c}, -0.5, 0.5);
    hc_tensor *mu = rand_const(g, rng, hc_arena_printf(&g->arena, "%s_m", name), 1,
                               (int64_t[]){c}, -0.5, 0.5);
    hc_tensor *va = rand_const(g, rng, hc_arena_printf(&g->arena, "%s_v", name), 1,
                               (int64_t[]){c}, 0.5, 2.0);
    return node(g, HC_OPK_BATCH_NORMALIZATION, name, 5, (hc_tensor *[]){x, sc, bi, mu, va}, 0,
                NULL);
}

static hc_tensor *relu(hc_graph *g, const char *name, hc_tensor *x) {
    return node(g, HC_OPK_RELU, name, 1, (hc_tensor *[]){x}, 0, NULL);
}

/* x [batch, C, S, S] -> conv 3x3 pad 1 -> Relu (the stem) -> conv 3x3 pad 1 -> BN -> Relu -> conv 3x3 pad 1 -> BN -> + x ->
 * Relu -> MaxPool 3x3 s2 p1 -> conv 1x1 (C -> 2C) -> Relu -> conv 3x3 s2 p1 -> Relu ->
 * GlobalAveragePool -> Flatten -> Gemm (2C -> 10). Outputs: the logits and the pooled
 * map (a blocked tensor read back in NCHW). */
static int64_t g_c = 16, g_s = 14;
static void build_block(hc_graph *g, const hc_sym_binding *b) {
    hc_rng rng = {7};
    char c[16], s[16];
    snprintf(c, sizeof c, "%lld", (long long)g_c);
    snprintf(s, sizeof s, "%lld", (long long)g_s);
    sym_in xi = {"x", 4, {"batch", c, s, s}};
    hc_tensor *x = input(g, &xi, b);
    int64_t C = g_c;
    x = relu(g, "relu0", conv(g, &rng, "conv0", x, C, C, 3, 1, 1)); /* the stem */
    hc_tensor *y = relu(g, "relu1", bn(g, &rng, "bn1", conv(g, &rng, "conv1", x, C, C, 3, 1, 1), C));
    y = bn(g, &rng, "bn2", conv(g, &rng, "conv2", y, C, C, 3, 1, 1), C);
    y = node(g, HC_OPK_ADD, "residual", 2, (hc_tensor *[]){y, x}, 0, NULL);
    y = relu(g, "relu2", y);
    int64_t k3[2] = {3, 3}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1};
    hc_attr pa[3] = {a_ints("kernel_shape", 2, k3), a_ints("strides", 2, s2),
                     a_ints("pads", 4, p1)};
    hc_tensor *mp = node(g, HC_OPK_MAX_POOL, "pool", 1, (hc_tensor *[]){y}, 3, pa);
    y = relu(g, "relu3", conv(g, &rng, "conv1x1", mp, C, 2 * C, 1, 1, 0));
    y = relu(g, "relu4", conv(g, &rng, "conv_s2", y, 2 * C, 2 * C, 3, 2, 1));
    hc_tensor *gp = node(g, HC_OPK_GLOBAL_AVERAGE_POOL, "gap", 1, (hc_tensor *[]){y}, 0, NULL);
    hc_attr ax1 = a_int("axis", 1);
    hc_tensor *fl = node(g, HC_OPK_FLATTEN, "flat", 1, (hc_tensor *[]){gp}, 1, &ax1);
    hc_tensor *W = rand_const(g, &rng, "fc_w", 2, (int64_t[]){10, 2 * C}, -0.3, 0.3);
    hc_tensor *B = rand_const(g, &rng, "fc_b", 1, (int64_t[]){10}, -0.3, 0.3);
    hc_attr tb = a_int("transB", 1);
    hc_tensor *fc = node(g, HC_OPK_GEMM, "fc", 3, (hc_tensor *[]){fl, W, B}, 1, &tb);
    hc_graph_add_output(g, fc);
    hc_graph_add_output(g, mp);
}

/* A ResNet/MobileNet stem: x [batch, 3, 20, 20] -> conv 7x7 s2 p3 (3 -> 16: blocked on
 * its NCHW input, docs/nchwc.md "Blocked stems") -> Relu -> MaxPool 3x3 s2 p1 (blocked) ->
 * conv 1x1 (16 -> 32, blocked) -> Relu -> depthwise conv 3x3 p1 (blocked) -> Relu ->
 * AveragePool 2x2 (blocked) -> GAP -> Flatten -> Gemm. */
static void build_stem(hc_graph *g, const hc_sym_binding *b) {
    hc_rng rng = {13};
    sym_in xi = {"x", 4, {"batch", "3", "20", "20"}};
    hc_tensor *x = input(g, &xi, b);
    hc_tensor *y = relu(g, "relu0", conv(g, &rng, "stem", x, 3, 16, 7, 2, 3));
    int64_t k3[2] = {3, 3}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1};
    hc_attr pa[3] = {a_ints("kernel_shape", 2, k3), a_ints("strides", 2, s2),
                     a_ints("pads", 4, p1)};
    y = node(g, HC_OPK_MAX_POOL, "pool", 1, (hc_tensor *[]){y}, 3, pa);
    y = relu(g, "relu1", conv(g, &rng, "conv1x1", y, 16, 32, 1, 1, 0));
    hc_tensor *w = rand_const(g, &rng, "dw_w", 4, (int64_t[]){32, 1, 3, 3}, -0.3, 0.3);
    hc_tensor *bb = rand_const(g, &rng, "dw_b", 1, (int64_t[]){32}, -0.3, 0.3);
    int64_t one[2] = {1, 1};
    hc_attr da[4] = {a_ints("kernel_shape", 2, k3), a_ints("strides", 2, one),
                     a_ints("pads", 4, p1), a_int("group", 32)};
    y = relu(g, "relu2", node(g, HC_OPK_CONV, "dw", 3, (hc_tensor *[]){y, w, bb}, 4, da));
    int64_t k2[2] = {2, 2};
    hc_attr aa[2] = {a_ints("kernel_shape", 2, k2), a_ints("strides", 2, one)};
    y = node(g, HC_OPK_AVERAGE_POOL, "avg", 1, (hc_tensor *[]){y}, 2, aa);
    hc_tensor *gp = node(g, HC_OPK_GLOBAL_AVERAGE_POOL, "gap", 1, (hc_tensor *[]){y}, 0, NULL);
    hc_attr ax1 = a_int("axis", 1);
    hc_tensor *fl = node(g, HC_OPK_FLATTEN, "flat", 1, (hc_tensor *[]){gp}, 1, &ax1);
    hc_tensor *W = rand_const(g, &rng, "fc_w", 2, (int64_t[]){32, 10}, -0.3, 0.3);
    hc_tensor *fc = node(g, HC_OPK_GEMM, "fc", 2, (hc_tensor *[]){fl, W}, 0, NULL);
    hc_graph_add_output(g, fc);
    hc_graph_add_output(g, y);
}

/* Conv 3x3 of c -> m channels, pads [top, left, bottom, right], a bias when `bias`. */
static hc_tensor *conv3(hc_graph *g, hc_rng *rng, const char *name, hc_tensor *x, int64_t c,
                        int64_t m, const int64_t *pads, bool bias) {
    double r = 1.0 / sqrt((double)(c * 9));
    hc_tensor *in[3] = {x, rand_const(g, rng, hc_arena_printf(&g->arena, "%s_w", name), 4,
                                      (int64_t[]){m, c, 3, 3}, -r, r), NULL};
    if (bias)
        in[2] = rand_const(g, rng, hc_arena_printf(&g->arena, "%s_b", name), 1, (int64_t[]){m},
                           -0.5, 0.5);
    int64_t ks[2] = {3, 3};
    hc_attr ca[2] = {a_ints("kernel_shape", 2, ks), a_ints("pads", 4, pads)};
    return node(g, HC_OPK_CONV, name, bias ? 3 : 2, in, 2, ca);
}

/* Winograd-eligible 3x3 convs (stride 1, no more output than input channels: the rule
 * takes Winograd over the direct conv; 16 channels, a multiple of every target's block)
 * on awkward images: x [batch, 16, 11, 7] -> conv pad 1 + bias -> Relu -> conv pad 1 (no
 * bias) -> output; 11 x 7 (primes) leaves a tail of tiles in both directions for F(2x2)
 * and F(4x4). */
static void build_wino_chain(hc_graph *g, const hc_sym_binding *b) {
    hc_rng rng = {17};
    sym_in xi = {"x", 4, {"batch", "16", "11", "7"}};
    hc_tensor *x = input(g, &xi, b);
    const int64_t p1[4] = {1, 1, 1, 1};
    hc_tensor *y = relu(g, "relu0", conv3(g, &rng, "wconv0", x, 16, 16, p1, true));
    y = conv3(g, &rng, "wconv1", y, 16, 16, p1, false);
    hc_graph_add_output(g, y);
}

/* One conv with no padding (13 x 13 -> 11 x 11) and one with asymmetric pads on a 7 x 9
 * image (-> 6 x 8), each with a bias. */
static void build_wino_single(hc_graph *g, const hc_sym_binding *b) {
    hc_rng rng = {19};
    sym_in xi = {"x", 4, {"batch", "16", "13", "13"}};
    sym_in zi = {"z", 4, {"batch", "16", "7", "9"}};
    hc_tensor *x = input(g, &xi, b), *z = input(g, &zi, b);
    const int64_t p0[4] = {0, 0, 0, 0}, pa[4] = {0, 1, 1, 0};
    hc_graph_add_output(g, conv3(g, &rng, "wvalid", x, 16, 16, p0, true));
    hc_graph_add_output(g, conv3(g, &rng, "wasym", z, 16, 16, pa, true));
}

/* Conv kh x kw of c -> m channels, pads [top, left, bottom, right], with a bias. */
static hc_tensor *convk(hc_graph *g, hc_rng *rng, const char *name, hc_tensor *x, int64_t c,
                        int64_t m, int64_t kh, int64_t kw, const int64_t *pads) {
    double r = 1.0 / sqrt((double)(c * kh * kw));
    hc_tensor *in[3] = {
        x,
        rand_const(g, rng, hc_arena_printf(&g->arena, "%s_w", name), 4, (int64_t[]){m, c, kh, kw},
                   -r, r),
        rand_const(g, rng, hc_arena_printf(&g->arena, "%s_b", name), 1, (int64_t[]){m}, -0.5, 0.5)};
    int64_t ks[2] = {kh, kw};
    hc_attr ca[2] = {a_ints("kernel_shape", 2, ks), a_ints("pads", 4, pads)};
    return node(g, HC_OPK_CONV, name, 3, in, 2, ca);
}

/* The factorized kernels (docs/winograd.md, "Other kernels"): x [batch, 16, 9, 11] -> 1x7
 * -> Relu -> 7x1 -> Relu -> 5x5 -> output, each padded to keep the image. */
static void build_wino_factorized(hc_graph *g, const hc_sym_binding *b) {
    hc_rng rng = {29};
    sym_in xi = {"x", 4, {"batch", "16", "9", "11"}};
    hc_tensor *x = input(g, &xi, b);
    const int64_t p17[4] = {0, 3, 0, 3}, p71[4] = {3, 0, 3, 0}, p55[4] = {2, 2, 2, 2};
    hc_tensor *y = relu(g, "frelu0", convk(g, &rng, "f1x7", x, 16, 16, 1, 7, p17));
    y = relu(g, "frelu1", convk(g, &rng, "f7x1", y, 16, 16, 7, 1, p71));
    hc_graph_add_output(g, convk(g, &rng, "f5x5", y, 16, 16, 5, 5, p55));
}

/* An 8 x 8 image: F(4x4) has 4 tiles per image, so the tile rule (9 tiles per batch)
 * decides by the batch: at the hint (g_hint) for a symbolic one. */
static int64_t g_hint = 16;
static void build_wino_hint(hc_graph *g, const hc_sym_binding *b) {
    hc_rng rng = {23};
    sym_in xi = {"x", 4, {"batch", "16", "8", "8"}};
    const sym_hint h[2] = {{"batch", g_hint}, {NULL, 0}};
    hc_tensor *x = sym_input(g, &xi, b, h);
    const int64_t p1[4] = {1, 1, 1, 1};
    hc_graph_add_output(g, relu(g, "relu0", conv3(g, &rng, "wconv0", x, 16, 16, p1, true)));
}

/* Kernels of the model whose node is op (templated ones in *templated). */
static int count_kernels(const hc_model *m, hc_op_kind op, int *templated) {
    int n = 0;
    *templated = 0;
    for (int i = 0; i < hc_model_num_kernels(m); i++) {
        const hc_node *k = hc_model_kernel_node(m, i);
        if (!k || k->op != op) continue;
        n++;
        *templated += hc_model_kernel_templated(m, i);
    }
    return n;
}

/* nconv convs took blocked Winograd with F(tile x tile) (tile 0: either): both transforms
 * and the batched matmul templated, the matmul reading its transformed weights pre-packed
 * as a static compile's does. A fallback (the direct conv, the auto-scheduler, weights
 * packed on every call) fails; `only`: no other conv in the model. */
static void check_winograd(const char *label, const hc_model *m, int nconv, int tile, bool only) {
    int ni = 0, no = 0, nm = 0, ti = 0, to = 0, tm = 0, packed = 0, tiles = 0;
    for (int i = 0; i < hc_model_num_kernels(m); i++) {
        const hc_node *k = hc_model_kernel_node(m, i);
        if (!k) continue;
        bool t = hc_model_kernel_templated(m, i);
        if (k->op == HC_OPK_WINO_INPUT_NCHWC) {
            /* a forced 6 is F(6) for 1x7 / 7x1 kernels only, F(4) for the others */
            int64_t kt = hc_node_attr_int(k, "tile", 2);
            int cnt = 0;
            const int64_t *kk = hc_node_attr_ints(k, "kernel", &cnt);
            bool f6 = kk && cnt == 2 && HC_MIN(kk[0], kk[1]) == 1 && HC_MAX(kk[0], kk[1]) == 7;
            int want = tile == 6 && !f6 ? 4 : tile;
            ni++, ti += t, tiles += tile == 0 ? (kt == 2 || kt == 4 || kt == 6) : kt == want;
        } else if (k->op == HC_OPK_WINO_OUTPUT_NCHWC) {
            no++, to += t;
        } else if (k->op == HC_OPK_MATMUL && strstr(k->name, "_wino_mm")) {
            nm++, tm += t, packed += (hc_model_kernel_prepacked(m, i) & 2u) != 0;
        }
    }
    CHECK_MSG(ni == nconv && ti == nconv && tiles == nconv,
              "%s: %d Winograd input transforms, %d templated, %d of tile %d (want %d)", label, ni,
              ti, tiles, tile, nconv);
    CHECK_MSG(no == nconv && to == nconv, "%s: %d Winograd output transforms, %d templated",
              label, no, to);
    CHECK_MSG(nm == nconv && tm == nconv && packed == nconv,
              "%s: %d Winograd matmuls, %d templated, %d with pre-packed weights", label, nm, tm,
              packed);
    int tc = 0;
    bool others = count_kernels(m, HC_OPK_CONV_NCHWC, &tc) || count_kernels(m, HC_OPK_CONV, &tc);
    CHECK_MSG(!only || !others, "%s: a conv left off Winograd", label);
}

/* Compile the symbolic graph once; at each binding run it against the reference
 * evaluator on the graph built at that binding (tests/sym_build.h). */
static hc_model *check_compiled(const char *label, build_fn build, const hc_compile_options *o,
                                int nb, const char *const *names, const int64_t (*vals)[8]) {
    hc_model *m = sym_compile(label, build, o);
    if (m) sym_run_bindings(label, build, 1, &m, nb, names, vals[0], 8);
    return m;
}

static const char *const batch_names[] = {"batch"};
static const int64_t batches[][8] = {{1}, {2}, {3}, {5}, {8}, {2}};

/* The block at the target's block of channels: every conv blocked (small images too) and
 * templated (the three 3x3 stride-1 ones by Winograd, as at a fixed batch), the pool
 * templated. */
static void test_block(void) {
    hc_compile_options o = {.num_threads = 2};
    o.paths.nchwc_small_pixels = -1;
    hc_model *m = check_compiled("cnn", build_block, &o, 6, batch_names, batches);
    if (!m) return;
    int tc = 0, tp = 0;
    for (int i = 0; getenv("DYN_VERBOSE") && i < hc_model_num_kernels(m); i++) {
        const hc_node *k = hc_model_kernel_node(m, i);
        fprintf(stderr, "kernel %d: %s (%s)%s\n", i, k ? k->name : "?", k ? hc_op_name(k->op) : "",
                hc_model_kernel_templated(m, i) ? " templated" : "");
    }
    int nc = count_kernels(m, HC_OPK_CONV_NCHWC, &tc);
    int np = count_kernels(m, HC_OPK_MAX_POOL_NCHWC, &tp);
    CHECK_MSG(nc == 2 && tc == 2, "%d blocked conv kernels, %d templated", nc, tc);
    check_winograd("cnn", m, 3, 0, false);
    CHECK_MSG(np == 1 && tp == 1, "%d blocked pool kernels, %d templated", np, tp);
    hc_model_free(m);
}

/* The stem: the blocked stem (a symbolic batch of 4-D input), MaxPool, 1x1 and depthwise
 * convs and average pool, all templated; no NCHW conv left. */
static void test_stem(void) {
    hc_compile_options o = {.num_threads = 2, .verbose = getenv("DYN_VERBOSE") != NULL};
    o.paths.nchwc_small_pixels = -1;
    hc_model *m = check_compiled("stem", build_stem, &o, 6, batch_names, batches);
    if (!m) return;
    int tc = 0, tb = 0, tp = 0, tm = 0;
    int nc = count_kernels(m, HC_OPK_CONV, &tc);
    int nb = count_kernels(m, HC_OPK_CONV_NCHWC, &tb);
    int np = count_kernels(m, HC_OPK_AVERAGE_POOL_NCHWC, &tp);
    int nm = count_kernels(m, HC_OPK_MAX_POOL_NCHWC, &tm);
    CHECK_MSG(nc == 0, "%d NCHW conv kernels", nc);
    CHECK_MSG(nb == 3 && tb == 3, "%d blocked conv kernels, %d templated", nb, tb);
    CHECK_MSG(np == 1 && tp == 1, "%d blocked average pools, %d templated", np, tp);
    CHECK_MSG(nm == 1 && tm == 1, "%d blocked max pools, %d templated", nm, tm);
    hc_model_free(m);
}

/* The kernels of a model (DYN_VERBOSE=1 lists them). */
static void list_kernels(const char *label, const hc_model *m) {
    for (int i = 0; getenv("DYN_VERBOSE") && i < hc_model_num_kernels(m); i++) {
        const hc_node *k = hc_model_kernel_node(m, i);
        fprintf(stderr, "%s kernel %d: %s (%s)%s tile %lld\n", label, i, k ? k->name : "?",
                k ? hc_op_name(k->op) : "", hc_model_kernel_templated(m, i) ? " templated" : "",
                k ? (long long)hc_node_attr_int(k, "tile", 0) : 0LL);
    }
}

/* build's graph compiled at a fixed batch, the hint's (hint), and with the batch symbolic:
 * the same kernels (the same fusion) of the same ops, Winograd with the same tiles: the
 * passes decide at the hint as at that fixed batch (small: with the small-image rule).
 * Returns the symbolic model. */
static hc_model *same_decisions(const char *label, build_fn build, int64_t hint, bool small) {
    hc_compile_options o = {.num_threads = 2};
    o.paths.nchwc_small_pixels = small ? 0 : -1; /* small: the small-image rule */
    hc_sym_binding b = {1, batch_names, &hint};
    hc_graph *f = hc_graph_new(label, 17);
    build(f, &b);
    hc_model *ms = NULL, *md = NULL;
    CHECK(hc_pass_infer_shapes(f, &err) == HC_OK);
    CHECK_MSG(hc_model_compile(f, &o, &ms, &err) == HC_OK, "%s: %s", label, err.msg);
    o.verbose = getenv("DYN_VERBOSE") != NULL;
    md = sym_compile(label, build, &o);
    if (ms && md) {
        list_kernels("static", ms);
        list_kernels("symbolic", md);
        int nk = hc_model_num_kernels(md);
        CHECK_MSG(nk == hc_model_num_kernels(ms), "%s: %d kernels symbolic, %d static", label, nk,
                  hc_model_num_kernels(ms));
        for (int i = 0; i < nk && nk == hc_model_num_kernels(ms); i++) {
            const hc_node *d = hc_model_kernel_node(md, i), *s = hc_model_kernel_node(ms, i);
            if (!d || !s) continue;
            CHECK_MSG(d->op == s->op && hc_node_attr_int(d, "tile", 0) == hc_node_attr_int(s, "tile", 0),
                      "%s (hint %lld): kernel %d is %s tile %lld symbolic, %s tile %lld static",
                      label, (long long)hint, i, hc_op_name(d->op),
                      (long long)hc_node_attr_int(d, "tile", 0), hc_op_name(s->op),
                      (long long)hc_node_attr_int(s, "tile", 0));
        }
    }
    hc_model_free(ms);
    return md;
}

static void test_same_kernels(void) { hc_model_free(same_decisions("cnn", build_block, 16, false)); }

/* The tile rule at the hint: a hint of 1 takes what batch 1 takes, 16 what 16 takes; both
 * models run at every batch. */
static void test_hint_decides(void) {
    const int64_t hints[2] = {1, 16};
    hc_model *ms[2];
    for (int i = 0; i < 2; i++) {
        g_hint = hints[i];
        ms[i] = same_decisions("wino hint", build_wino_hint, hints[i], true);
        if (ms[i]) check_winograd("wino hint", ms[i], 1, 0, true);
    }
    g_hint = 16;
    if (ms[0] && ms[1]) sym_run_bindings("wino hint", build_wino_hint, 2, ms, 5, batch_names, batches[0], 8);
    for (int i = 0; i < 2; i++) hc_model_free(ms[i]);
}

/* Blocked Winograd at a symbolic batch: compiled once for each of the first ntiles tiles
 * (the rule's, F(2x2), F(4x4), 6: F(6) for the 1x7 / 7x1 kernels and F(4) for the others;
 * for 1xk, kx1 and 5x5 kernels F(m) along their axes of several taps), each model run at
 * batches 1, 2, 3, 5, 8 against the reference evaluator. */
static void test_winograd(const char *label, build_fn build, int nconv, int ntiles) {
    static const int tiles[4] = {0, 2, 4, 6};
    hc_model *ms[4] = {NULL, NULL, NULL, NULL};
    bool all = true;
    for (int i = 0; i < ntiles; i++) {
        hc_compile_options o = {.num_threads = 2};
        o.paths.wino_tile = tiles[i];
        char l[64];
        snprintf(l, sizeof l, "%s tile %d", label, tiles[i]);
        ms[i] = sym_compile(l, build, &o);
        all = all && ms[i];
        if (!ms[i]) continue;
        list_kernels(l, ms[i]);
        check_winograd(l, ms[i], nconv, tiles[i], true);
    }
    if (all) sym_run_bindings(label, build, ntiles, ms, 5, batch_names, batches[0], 8);
    for (int i = 0; i < ntiles; i++) hc_model_free(ms[i]);
}

/* A batch symbol whose hint is 1 (`--dim-hint batch=1`): an im2col conv (stride 2, small
 * image: NCHW) keeps the batch dim of its columns and its fused im2col prologue reads
 * every image (the column matrix was squeezed to one image at a hint of 1, refused; its
 * Reshape's inverse map read every batch at 0). Then a 1x1 conv and a blocked block at the
 * same hint. */
static void build_hint1(hc_graph *g, const hc_sym_binding *b) {
    hc_rng rng = {41};
    sym_in xi = {"x", 4, {"batch", "16", "8", "8"}};
    const sym_hint h[2] = {{"batch", 1}, {NULL, 0}};
    hc_tensor *x = sym_input(g, &xi, b, h);
    hc_tensor *y = relu(g, "h1_relu0", conv(g, &rng, "h1_conv0", x, 16, 8, 3, 2, 1));
    y = relu(g, "h1_relu1", conv(g, &rng, "h1_conv1", y, 8, 12, 1, 1, 0));
    hc_graph_add_output(g, y);
}

static void test_hint_one(void) {
    hc_compile_options o = {.num_threads = 2};
    hc_model *m = check_compiled("hint 1", build_hint1, &o, 6, batch_names, batches);
    if (m) list_kernels("hint 1", m);
    hc_model_free(m);
}

int main(void) {
    test_hint_one();
    test_same_kernels();
    test_hint_decides();
    test_block();
    test_stem();
    test_winograd("wino chain", build_wino_chain, 2, 3);
    test_winograd("wino single", build_wino_single, 2, 3);
    test_winograd("wino factorized", build_wino_factorized, 3, 4);
    TEST_DONE();
}
