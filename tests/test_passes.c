/* test_passes.c — every graph pass keeps results identical: each case builds a small
 * graph twice, evaluates one copy with shapes inferred node by node (no rewriting) and
 * the other after the pass, both with the reference graph evaluator, and compares; it
 * also checks that the pass did its rewrite. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_util.h"
#include "runtime/runtime.h"
#include "test.h"

typedef hc_graph *(*build_fn)(void);
typedef hc_status (*pass_fn)(hc_graph *g, hc_error *err);

static hc_error err;

/* Shapes only: each node inferred in order, nothing folded or rewritten. */
static bool infer_only(hc_graph *g) {
    for (size_t k = 0; k < g->nodes.len; k++)
        if (hc_pass_infer_node(g->nodes.data[k], &err) != HC_OK) {
            fprintf(stderr, "infer: %s\n", err.msg);
            return false;
        }
    return true;
}

static void fill_random(hc_tensor *t, void *buf, uint64_t seed) {
    hc_rng r = {seed};
    int64_t n = hc_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        if (t->dtype == HC_F32) ((float *)buf)[i] = (float)hc_rng_uniform(&r, -1, 1);
        else if (t->dtype == HC_I64) ((int64_t *)buf)[i] = (int64_t)(hc_rng_next(&r) % 5);
        else HC_ASSERT(0);
    }
}

typedef struct run_result {
    int n;
    void *out[8];
    hc_tensor *t[8];
} run_result;

static bool eval_graph(const hc_graph *g, run_result *r) {
    void *in[8];
    HC_ASSERT(g->inputs.len <= 8 && g->outputs.len <= 8);
    for (size_t i = 0; i < g->inputs.len; i++) {
        in[i] = malloc(hc_tensor_nbytes(g->inputs.data[i]) + 1);
        fill_random(g->inputs.data[i], in[i], 100 + i);
    }
    r->n = (int)g->outputs.len;
    for (int i = 0; i < r->n; i++) {
        r->t[i] = g->outputs.data[i];
        r->out[i] = calloc(1, hc_tensor_nbytes(r->t[i]) + 1);
    }
    hc_status st = hc_graph_eval_reference(g, in, r->out, &err);
    if (st != HC_OK) fprintf(stderr, "eval: %s\n", err.msg);
    for (size_t i = 0; i < g->inputs.len; i++) free(in[i]);
    return st == HC_OK;
}

static void free_result(run_result *r) {
    for (int i = 0; i < r->n; i++) free(r->out[i]);
}

/* Outputs agree in name, shape and value (relative tolerance for reordered sums). */
static void compare(const run_result *a, const run_result *b, double tol, const char *what) {
    CHECK_EQ_INT(a->n, b->n);
    for (int i = 0; i < a->n && i < b->n; i++) {
        const hc_tensor *ta = a->t[i], *tb = b->t[i];
        CHECK_MSG(strcmp(ta->name, tb->name) == 0, "%s: output name %s vs %s", what, ta->name,
                  tb->name);
        CHECK_MSG(ta->ndim == tb->ndim && hc_tensor_numel(ta) == hc_tensor_numel(tb),
                  "%s: output shape", what);
        if (hc_tensor_numel(ta) != hc_tensor_numel(tb) || ta->dtype != HC_F32) continue;
        double maxerr = 0, maxref = 0;
        for (int64_t k = 0; k < hc_tensor_numel(ta); k++) {
            double x = ((float *)a->out[i])[k], y = ((float *)b->out[i])[k];
            maxerr = fmax(maxerr, fabs(x - y));
            maxref = fmax(maxref, fabs(x));
        }
        CHECK_MSG(maxerr <= tol * fmax(1, maxref), "%s: max error %g (max |ref| %g)", what,
                  maxerr, maxref);
    }
}

static bool has_msg(const char *msg, const char *part) {
    bool ok = strstr(msg, part) != NULL;
    if (!ok) fprintf(stderr, "  message: %s\n  lacks: %s\n", msg, part);
    return ok;
}

static int count_op(const hc_graph *g, hc_op_kind op) {
    int c = 0;
    for (size_t k = 0; k < g->nodes.len; k++) c += g->nodes.data[k]->op == op;
    return c;
}

/* The reference graph, when it is not the graph itself (its shapes need folding). */
static build_fn build_reference;

/* Build twice, run the passes on one copy, compare; returns the transformed graph. */
static hc_graph *check_passes(build_fn build, int npass, const pass_fn *passes, double tol,
                              const char *what) {
    hc_graph *ref = build_reference ? build_reference() : build();
    run_result r0 = {0}, r1 = {0};
    CHECK_MSG(infer_only(ref), "%s: reference inference", what);
    CHECK_MSG(eval_graph(ref, &r0), "%s: reference evaluation", what);
    hc_graph *g = build();
    for (int i = 0; i < npass; i++) {
        hc_status st = passes[i](g, &err);
        CHECK_MSG(st == HC_OK, "%s: pass %d: %s", what, i, err.msg);
        if (st != HC_OK) break;
    }
    CHECK_MSG(hc_graph_verify(g, &err) == HC_OK, "%s: verify: %s", what, err.msg);
    CHECK_MSG(eval_graph(g, &r1), "%s: evaluation after the passes", what);
    compare(&r0, &r1, tol, what);
    free_result(&r0);
    free_result(&r1);
    hc_graph_free(ref);
    return g;
}

static hc_tensor *node1(hc_graph *g, hc_op_kind op, const char *name, int nin,
                        hc_tensor *const *in, int nattrs, const hc_attr *attrs) {
    hc_node *n = hc_graph_add_node(g, op, name, nin, in, 0, NULL, nattrs, attrs, &err);
    HC_ASSERT_MSG(n, err.msg);
    return n->outputs[0];
}

static hc_tensor *rand_const(hc_graph *g, const char *name, int ndim, const int64_t *shape,
                             uint64_t seed, double lo, double hi) {
    hc_tensor *t = hc_graph_constant(g, name, HC_F32, ndim, shape, NULL);
    hc_rng r = {seed};
    for (int64_t i = 0; i < hc_tensor_numel(t); i++)
        ((float *)t->data)[i] = (float)hc_rng_uniform(&r, lo, hi);
    return t;
}

static hc_attr ints_attr(const char *name, int n, int64_t *v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_INTS, .n = n, .ints = v};
}

/* ---- shape inference with constant propagation ------------------------------------- */
/* y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): x [2, 3, 4] -> [2, 12] */
static hc_graph *build_shape_chain(void) {
    hc_graph *g = hc_graph_new("shape_chain", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 3, (int64_t[]){2, 3, 4});
    hc_tensor *sh = node1(g, HC_OPK_SHAPE, "shape", 1, &x, 0, NULL);
    hc_tensor *zero = hc_graph_constant(g, "zero", HC_I64, 0, NULL, (int64_t[]){0});
    hc_tensor *gi[2] = {sh, zero};
    hc_tensor *d0 = node1(g, HC_OPK_GATHER, "gather", 2, gi, 0, NULL);
    hc_tensor *ui[2] = {d0, hc_pass_const_i64(g, "axes0", 1, (int64_t[]){0})};
    hc_tensor *d0v = node1(g, HC_OPK_UNSQUEEZE, "unsq", 2, ui, 0, NULL);
    hc_tensor *ci[2] = {d0v, hc_pass_const_i64(g, "minus1", 1, (int64_t[]){-1})};
    hc_attr ax = {.name = "axis", .kind = HC_ATTR_INT, .i = 0};
    hc_tensor *s = node1(g, HC_OPK_CONCAT, "concat", 2, ci, 1, &ax);
    hc_tensor *ri[2] = {x, s};
    hc_tensor *y = node1(g, HC_OPK_RESHAPE, "reshape", 2, ri, 0, NULL);
    hc_tensor *ri2[1] = {y};
    hc_graph_add_output(g, node1(g, HC_OPK_RELU, "relu", 1, ri2, 0, NULL));
    return g;
}

/* what the chain computes, written directly */
static hc_graph *build_shape_chain_ref(void) {
    hc_graph *g = hc_graph_new("shape_chain_ref", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 3, (int64_t[]){2, 3, 4});
    hc_tensor *ri[2] = {x, hc_pass_const_i64(g, "s", 2, (int64_t[]){2, 12})};
    hc_tensor *y = node1(g, HC_OPK_RESHAPE, "reshape", 2, ri, 0, NULL);
    hc_graph_add_output(g, node1(g, HC_OPK_RELU, "relu", 1, &y, 0, NULL));
    return g;
}

static void test_infer_shapes(void) {
    pass_fn p[] = {hc_pass_infer_shapes};
    build_reference = build_shape_chain_ref;
    hc_graph *g = check_passes(build_shape_chain, 1, p, 0, "shape chain");
    build_reference = NULL;
    CHECK_EQ_INT(g->nodes.len, 2); /* Reshape and Relu */
    CHECK_EQ_INT(count_op(g, HC_OPK_SHAPE) + count_op(g, HC_OPK_CONCAT), 0);
    hc_node *rs = g->nodes.data[0];
    CHECK(rs->op == HC_OPK_RESHAPE && rs->inputs[1]->data != NULL);
    int64_t v[2] = {0};
    CHECK_EQ_INT(hc_tensor_const_ints(rs->inputs[1], v, 2), 2);
    CHECK(v[0] == 2 && v[1] == -1);
    const hc_tensor *y = g->outputs.data[0];
    CHECK(y->shape_known && y->ndim == 2 && y->shape[0] == 2 && y->shape[1] == 12);
    hc_graph_free(g);

    /* an operator whose definition is missing is reported with the node's name */
    for (int k = 0; k < HC_OPK_COUNT; k++) {
        if (hc_op_get((hc_op_kind)k) || hc_op_min_inputs((hc_op_kind)k) > 1) continue;
        g = hc_graph_new("unsup", 13);
        hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 1, (int64_t[]){3});
        hc_tensor *in[1] = {x};
        hc_graph_add_node(g, (hc_op_kind)k, "the_node", hc_op_min_inputs((hc_op_kind)k), in, 0,
                          NULL, 0, NULL, &err);
        CHECK(hc_pass_infer_shapes(g, &err) == HC_ERR_UNSUPPORTED);
        CHECK(strstr(err.msg, "the_node") != NULL);
        hc_graph_free(g);
        break;
    }
}

/* ---- constant folding ------------------------------------------------------------- */
/* y = x * Transpose(A + B): the right operand is constant (and large enough that
 * inference leaves it alone) */
static hc_graph *build_fold(void) {
    hc_graph *g = hc_graph_new("fold", 13);
    int64_t big[2] = {1100, 1000}, bigT[2] = {1000, 1100};
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, bigT);
    hc_tensor *ab[2] = {rand_const(g, "A", 2, big, 1, -1, 1), rand_const(g, "B", 2, big, 2, -1, 1)};
    hc_tensor *s = node1(g, HC_OPK_ADD, "add", 2, ab, 0, NULL);
    int64_t perm[2] = {1, 0};
    hc_attr pa = ints_attr("perm", 2, perm);
    hc_tensor *st = node1(g, HC_OPK_TRANSPOSE, "tr", 1, &s, 1, &pa);
    hc_tensor *mi[2] = {x, st};
    hc_graph_add_output(g, node1(g, HC_OPK_MUL, "mul", 2, mi, 0, NULL));
    return g;
}

/* y = x + Reshape(Transpose(C, perm)) and x + Transpose(C) (default perm): folded
 * directly, not through the interpreter, so checked against it */
static hc_graph *build_fold_perm(void) {
    hc_graph *g = hc_graph_new("fold_perm", 13);
    int64_t cs[4] = {2, 3, 4, 5}, rs[4] = {5, 4, 3, 2};
    hc_tensor *c = rand_const(g, "C", 4, cs, 3, -1, 1);
    int64_t perm[4] = {2, 0, 3, 1};
    hc_attr pa = ints_attr("perm", 4, perm);
    hc_tensor *t = node1(g, HC_OPK_TRANSPOSE, "tr", 1, &c, 1, &pa);
    hc_tensor *ri[2] = {t, hc_pass_const_i64(g, "shp", 2, (int64_t[]){8, 15})};
    t = node1(g, HC_OPK_RESHAPE, "rs", 2, ri, 0, NULL);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){8, 15});
    hc_tensor *ai[2] = {x, t};
    hc_graph_add_output(g, node1(g, HC_OPK_ADD, "add", 2, ai, 0, NULL));
    hc_tensor *x2 = hc_graph_add_input(g, "x2", HC_F32, 4, rs);
    hc_tensor *ai2[2] = {x2, node1(g, HC_OPK_TRANSPOSE, "tr_default", 1, &c, 0, NULL)};
    hc_graph_add_output(g, node1(g, HC_OPK_ADD, "add2", 2, ai2, 0, NULL));
    return g;
}

static void test_fold_constants(void) {
    pass_fn pp[] = {hc_pass_infer_shapes};
    hc_graph *gp = check_passes(build_fold_perm, 1, pp, 0, "fold transpose");
    CHECK_EQ_INT(gp->nodes.len, 2);
    hc_graph_free(gp);

    pass_fn p[] = {hc_pass_infer_shapes};
    hc_graph *g = check_passes(build_fold, 1, p, 0, "fold (inference)");
    CHECK_EQ_INT(g->nodes.len, 3); /* 1.1M elements: above the inference limit */
    hc_graph_free(g);
    pass_fn p2[] = {hc_pass_infer_shapes, hc_pass_fold_constants};
    g = check_passes(build_fold, 2, p2, 0, "fold");
    CHECK_EQ_INT(g->nodes.len, 1);
    CHECK(g->nodes.data[0]->op == HC_OPK_MUL && g->nodes.data[0]->inputs[1]->data);
    hc_graph_free(g);
}

/* ---- BatchNorm folding ------------------------------------------------------------- */
static hc_tensor *add_bn(hc_graph *g, const char *name, hc_tensor *x, int64_t c) {
    int64_t cs[1] = {c};
    hc_tensor *in[5] = {x, rand_const(g, NULL, 1, cs, 11, 0.5, 2),
                        rand_const(g, NULL, 1, cs, 12, -1, 1),
                        rand_const(g, NULL, 1, cs, 13, -0.5, 0.5),
                        rand_const(g, NULL, 1, cs, 14, 0.2, 3)};
    hc_attr eps = {.name = "epsilon", .kind = HC_ATTR_FLOAT, .f = 1e-3};
    return node1(g, HC_OPK_BATCH_NORMALIZATION, name, 5, in, 1, &eps);
}

static bool bn_conv_bias = true;
static hc_graph *build_conv_bn(void) {
    hc_graph *g = hc_graph_new("conv_bn", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 3, 7, 6});
    hc_tensor *in[3] = {x, rand_const(g, "w", 4, (int64_t[]){5, 3, 3, 3}, 3, -1, 1),
                        rand_const(g, "b", 1, (int64_t[]){5}, 4, -1, 1)};
    int64_t pads[4] = {1, 1, 1, 1};
    hc_attr pa = ints_attr("pads", 4, pads);
    hc_tensor *y = node1(g, HC_OPK_CONV, "conv", bn_conv_bias ? 3 : 2, in, 1, &pa);
    hc_graph_add_output(g, add_bn(g, "bn", y, 5));
    return g;
}

static bool gemm_trans_b = true;
static hc_graph *build_gemm_bn(void) {
    hc_graph *g = hc_graph_new("gemm_bn", 13);
    hc_tensor *a = hc_graph_add_input(g, "a", HC_F32, 2, (int64_t[]){4, 6});
    int64_t wshape[2] = {gemm_trans_b ? 5 : 6, gemm_trans_b ? 6 : 5};
    hc_tensor *in[3] = {a, rand_const(g, "w", 2, wshape, 5, -1, 1),
                        rand_const(g, "c", 2, (int64_t[]){1, 5}, 6, -1, 1)};
    hc_attr at[3] = {{.name = "transB", .kind = HC_ATTR_INT, .i = gemm_trans_b},
                     {.name = "alpha", .kind = HC_ATTR_FLOAT, .f = 0.75},
                     {.name = "beta", .kind = HC_ATTR_FLOAT, .f = -1.5}};
    hc_tensor *y = node1(g, HC_OPK_GEMM, "gemm", 3, in, 3, at);
    hc_graph_add_output(g, add_bn(g, "bn", y, 5));
    return g;
}

static hc_graph *build_matmul_bn(void) {
    hc_graph *g = hc_graph_new("matmul_bn", 13);
    hc_tensor *a = hc_graph_add_input(g, "a", HC_F32, 2, (int64_t[]){3, 4});
    hc_tensor *in[2] = {a, rand_const(g, "w", 2, (int64_t[]){4, 7}, 7, -1, 1)};
    hc_tensor *y = node1(g, HC_OPK_MATMUL, "mm", 2, in, 0, NULL);
    hc_graph_add_output(g, add_bn(g, "bn", y, 7));
    return g;
}

/* the conv output is also read by a Relu: folding would change what the Relu sees */
static hc_graph *build_conv_bn_shared(void) {
    hc_graph *g = build_conv_bn();
    hc_tensor *y = hc_graph_find_tensor(g, "conv_out");
    HC_ASSERT(y);
    hc_graph_add_output(g, node1(g, HC_OPK_RELU, "relu", 1, &y, 0, NULL));
    return g;
}

static void test_fold_batchnorm(void) {
    pass_fn p[] = {hc_pass_infer_shapes, hc_pass_fold_batchnorm};
    for (int bias = 0; bias < 2; bias++) {
        bn_conv_bias = bias;
        hc_graph *g = check_passes(build_conv_bn, 2, p, 1e-5, "conv+bn");
        CHECK_EQ_INT(count_op(g, HC_OPK_BATCH_NORMALIZATION), 0);
        CHECK_EQ_INT(g->nodes.len, 1);
        CHECK_STR(g->outputs.data[0]->name, "bn_out"); /* the output keeps its name */
        hc_graph_free(g);
    }
    for (int tb = 0; tb < 2; tb++) {
        gemm_trans_b = tb;
        hc_graph *g = check_passes(build_gemm_bn, 2, p, 1e-5, "gemm+bn");
        CHECK_EQ_INT(count_op(g, HC_OPK_BATCH_NORMALIZATION), 0);
        hc_graph_free(g);
    }
    hc_graph *g = check_passes(build_matmul_bn, 2, p, 1e-5, "matmul+bn");
    CHECK_EQ_INT(count_op(g, HC_OPK_BATCH_NORMALIZATION), 0);
    CHECK_EQ_INT(count_op(g, HC_OPK_ADD), 1);
    hc_graph_free(g);
    g = check_passes(build_conv_bn_shared, 2, p, 1e-5, "conv+bn shared");
    CHECK_EQ_INT(count_op(g, HC_OPK_BATCH_NORMALIZATION), 1);
    hc_graph_free(g);
}

/* ---- simplify ---------------------------------------------------------------------- */
/* x -> Identity -> Dropout -> Flatten -> Unsqueeze -> Reshape -> Relu -> Identity (out) */
static hc_graph *build_simplify(void) {
    hc_graph *g = hc_graph_new("simplify", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){2, 3, 4, 5});
    hc_tensor *t = node1(g, HC_OPK_IDENTITY, "id1", 1, &x, 0, NULL);
    hc_tensor *dr[3] = {t, hc_graph_constant(g, "ratio", HC_F32, 0, NULL, (float[]){0.5f}),
                        NULL};
    t = node1(g, HC_OPK_DROPOUT, "drop", 2, dr, 0, NULL);
    hc_attr fa = {.name = "axis", .kind = HC_ATTR_INT, .i = 2};
    t = node1(g, HC_OPK_FLATTEN, "flat", 1, &t, 1, &fa);
    hc_tensor *ui[2] = {t, hc_pass_const_i64(g, "ax", 1, (int64_t[]){0})};
    t = node1(g, HC_OPK_UNSQUEEZE, "unsq", 2, ui, 0, NULL);
    hc_tensor *ri[2] = {t, hc_pass_const_i64(g, "shp", 2, (int64_t[]){-1, 10})};
    t = node1(g, HC_OPK_RESHAPE, "rs", 2, ri, 0, NULL);
    t = node1(g, HC_OPK_RELU, "relu", 1, &t, 0, NULL);
    hc_graph_add_output(g, node1(g, HC_OPK_IDENTITY, "id_out", 1, &t, 0, NULL));
    /* a pass-through graph output: input -> Identity -> output must stay */
    hc_graph_add_output(g, node1(g, HC_OPK_IDENTITY, "id_passthrough", 1, &x, 0, NULL));
    return g;
}

/* Reshape back to the input's shape: the chain is the identity */
static hc_graph *build_reshape_roundtrip(void) {
    hc_graph *g = hc_graph_new("roundtrip", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){6, 4});
    hc_tensor *t = node1(g, HC_OPK_RELU, "relu", 1, &x, 0, NULL);
    t = node1(g, HC_OPK_FLATTEN, "flat", 1, &t, 0, NULL);
    hc_tensor *ri[2] = {t, hc_pass_const_i64(g, "shp", 2, (int64_t[]){6, 4})};
    t = node1(g, HC_OPK_RESHAPE, "rs", 2, ri, 0, NULL);
    hc_graph_add_output(g, node1(g, HC_OPK_NEG, "neg", 1, &t, 0, NULL));
    return g;
}

static void test_simplify(void) {
    pass_fn p[] = {hc_pass_infer_shapes, hc_pass_simplify};
    hc_graph *g = check_passes(build_simplify, 2, p, 0, "simplify");
    CHECK_EQ_INT(count_op(g, HC_OPK_DROPOUT) + count_op(g, HC_OPK_FLATTEN), 0);
    CHECK_EQ_INT(count_op(g, HC_OPK_UNSQUEEZE), 0);
    CHECK_EQ_INT(count_op(g, HC_OPK_RESHAPE), 1);
    CHECK_EQ_INT(count_op(g, HC_OPK_IDENTITY), 1); /* only the pass-through one */
    for (size_t k = 0; k < g->nodes.len; k++) {
        hc_node *n = g->nodes.data[k];
        if (n->op == HC_OPK_RESHAPE) CHECK(n->inputs[0] == g->inputs.data[0] && n->inputs[1]->data);
    }
    hc_graph_free(g);
    g = check_passes(build_reshape_roundtrip, 2, p, 0, "reshape roundtrip");
    CHECK_EQ_INT(g->nodes.len, 2);
    CHECK_EQ_INT(count_op(g, HC_OPK_RESHAPE) + count_op(g, HC_OPK_FLATTEN), 0);
    hc_graph_free(g);
}

/* ---- anchor lowering ---------------------------------------------------------------- */
typedef struct conv_case {
    int64_t n, c, h, w, oc, kh, kw, stride, dil, group;
    const char *auto_pad;
    int64_t pads[4];
    bool bias;
} conv_case;

static conv_case cc;

static hc_graph *build_conv(void) {
    hc_graph *g = hc_graph_new("conv", 13);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){cc.n, cc.c, cc.h, cc.w});
    int64_t ws[4] = {cc.oc, cc.c / cc.group, cc.kh, cc.kw};
    hc_tensor *in[3] = {x, rand_const(g, "w", 4, ws, 21, -1, 1),
                        rand_const(g, "b", 1, (int64_t[]){cc.oc}, 22, -1, 1)};
    int64_t st[2] = {cc.stride, cc.stride}, dl[2] = {cc.dil, cc.dil};
    hc_attr at[5] = {ints_attr("strides", 2, st), ints_attr("dilations", 2, dl),
                     {.name = "group", .kind = HC_ATTR_INT, .i = cc.group},
                     {.name = "auto_pad", .kind = HC_ATTR_STRING, .s = cc.auto_pad},
                     ints_attr("pads", 4, cc.pads)};
    int nat = strcmp(cc.auto_pad, "NOTSET") == 0 ? 5 : 4;
    hc_tensor *y = node1(g, HC_OPK_CONV, "conv", cc.bias ? 3 : 2, in, nat, at);
    hc_graph_add_output(g, y);
    return g;
}

static hc_status lower_no_direct(hc_graph *g, hc_error *e) {
    return hc_pass_lower_anchors_with(g, &(hc_optimize_options){.no_direct = true}, e);
}

static void test_lower_conv(void) {
    static const conv_case cases[] = {
        {1, 3, 7, 6, 4, 3, 3, 2, 1, 1, "NOTSET", {1, 1, 1, 1}, true},
        {2, 2, 9, 5, 3, 3, 2, 1, 2, 1, "SAME_UPPER", {0}, true},
        {1, 3, 5, 5, 2, 2, 2, 2, 1, 1, "SAME_LOWER", {0}, false},
        {3, 4, 4, 3, 5, 1, 1, 1, 1, 1, "NOTSET", {0}, true},  /* pointwise, batched */
        {1, 4, 4, 3, 5, 1, 1, 1, 1, 1, "NOTSET", {0}, false}, /* pointwise */
        {1, 2, 6, 6, 3, 3, 3, 1, 1, 1, "VALID", {0}, true},
        {1, 4, 5, 5, 4, 3, 3, 1, 1, 2, "NOTSET", {1, 1, 1, 1}, true}, /* grouped: kept */
        {1, 1, 3, 4, 2, 3, 1, 3, 1, 1, "NOTSET", {0, 2, 1, 0}, true}, /* asymmetric pads */
    };
    /* rules 0: direct template off, group-1 convs become im2col (or a reshape for
     * pointwise) + matmul; rules 1, the defaults: these few-channel convs with a kernel
     * larger than 1x1 stay Convs for the direct template (none is a 3x3 stride-1 conv
     * Winograd would take), 1x1 kernels still become matmuls */
    for (int rules = 0; rules < 2; rules++) {
        pass_fn p[] = {hc_pass_infer_shapes, rules ? hc_pass_lower_anchors : lower_no_direct};
        for (size_t i = 0; i < HC_ARRAY_LEN(cases); i++) {
            cc = cases[i];
            char what[64];
            snprintf(what, sizeof what, "conv case %zu%s", i, rules ? " (default rules)" : "");
            hc_graph *g = check_passes(build_conv, 2, p, 1e-5, what);
            bool one = cc.kh == 1 && cc.kw == 1, pointwise = one && cc.stride == 1;
            bool conv = cc.group != 1 || (rules && !one);
            CHECK_MSG(count_op(g, HC_OPK_CONV) == conv, "%s", what);
            CHECK_MSG(count_op(g, HC_OPK_IM2COL) == (!conv && !pointwise), "%s", what);
            CHECK_MSG(count_op(g, HC_OPK_MATMUL) == !conv, "%s", what);
            CHECK_STR(g->outputs.data[0]->name, "conv_out");
            hc_graph_free(g);
        }
    }
}

static int gemm_variant;
static hc_graph *build_gemm(void) {
    hc_graph *g = hc_graph_new("gemm", 11);
    bool ta = gemm_variant & 1, tb = gemm_variant & 2, const_a = gemm_variant & 4;
    int64_t m = 3, k = 5, n = 4;
    int64_t as[2] = {ta ? k : m, ta ? m : k}, bs[2] = {tb ? n : k, tb ? k : n};
    hc_tensor *a = const_a ? rand_const(g, "a", 2, as, 31, -1, 1)
                           : hc_graph_add_input(g, "a", HC_F32, 2, as);
    hc_tensor *b = hc_graph_add_input(g, "b", HC_F32, 2, bs);
    hc_tensor *c = gemm_variant & 8 ? hc_graph_add_input(g, "c", HC_F32, 1, (int64_t[]){n})
                                    : rand_const(g, "c", 2, (int64_t[]){m, 1}, 32, -1, 1);
    hc_tensor *in[3] = {a, b, c};
    hc_attr at[4] = {{.name = "transA", .kind = HC_ATTR_INT, .i = ta},
                     {.name = "transB", .kind = HC_ATTR_INT, .i = tb},
                     {.name = "alpha", .kind = HC_ATTR_FLOAT, .f = gemm_variant ? 1.25 : 1},
                     {.name = "beta", .kind = HC_ATTR_FLOAT, .f = gemm_variant & 1 ? 1 : 0.5}};
    hc_graph_add_output(g, node1(g, HC_OPK_GEMM, "gemm", 3, in, 4, at));
    return g;
}

static void test_lower_gemm(void) {
    pass_fn p[] = {hc_pass_infer_shapes, hc_pass_lower_anchors};
    for (gemm_variant = 0; gemm_variant < 16; gemm_variant++) {
        char what[64];
        snprintf(what, sizeof what, "gemm variant %d", gemm_variant);
        hc_graph *g = check_passes(build_gemm, 2, p, 1e-5, what);
        CHECK_MSG(count_op(g, HC_OPK_GEMM) == 0 && count_op(g, HC_OPK_MATMUL) == 1, "%s", what);
        /* a constant transposed operand is transposed at compile time */
        bool const_transpose = (gemm_variant & 1) && (gemm_variant & 4);
        CHECK_MSG(count_op(g, HC_OPK_TRANSPOSE) ==
                      ((gemm_variant & 1) && !const_transpose) + !!(gemm_variant & 2),
                  "%s", what);
        hc_graph_free(g);
    }
}

/* ---- split_to_slices ----------------------------------------------------------------- */
/* h = MatMul(x [2, 5, 7], W [7, 9]) split on the last axis into 3, 1 and 5 columns (an
 * attention's Q, K, V; parts of primes and 1), each read by another op, the last one a
 * graph output as it is; Split of x on axis 0 (negative axis: -3) into 1 + 1 read as
 * graph outputs; a Split of 5 parts stays. */
static int split_opset = 13; /* below 13, Split's sizes are an attribute; below 10 Slice's */
static hc_graph *build_splits(void) {
    hc_graph *g = hc_graph_new("splits", split_opset);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 3, (int64_t[]){2, 5, 7});
    hc_tensor *mi[2] = {x, rand_const(g, "W", 2, (int64_t[]){7, 9}, 51, -1, 1)};
    hc_tensor *h = node1(g, HC_OPK_MATMUL, "mm", 2, mi, 0, NULL);
    int64_t sizes[3] = {3, 1, 5};
    hc_attr last[2] = {{.name = "axis", .kind = HC_ATTR_INT, .i = 2},
                       ints_attr("split", 3, sizes)};
    hc_tensor *si[2] = {h, hc_pass_const_i64(g, "sizes", 3, sizes)};
    bool attr = split_opset < 13;
    hc_node *qkv = hc_graph_add_node(g, HC_OPK_SPLIT, "qkv", attr ? 1 : 2, si, 3, NULL,
                                     attr ? 2 : 1, last, &err);
    HC_ASSERT_MSG(qkv, err.msg);
    hc_graph_add_output(g, node1(g, HC_OPK_RELU, "q", 1, &qkv->outputs[0], 0, NULL));
    hc_tensor *ki[2] = {qkv->outputs[1], qkv->outputs[0]};
    hc_graph_add_output(g, node1(g, HC_OPK_ADD, "k", 2, ki, 0, NULL)); /* broadcast 1 */
    hc_graph_add_output(g, qkv->outputs[2]);
    hc_attr first = {.name = "axis", .kind = HC_ATTR_INT, .i = -3};
    hc_node *halves = hc_graph_add_node(g, HC_OPK_SPLIT, "halves", 1, &x, 2, NULL, 1, &first,
                                        &err);
    HC_ASSERT_MSG(halves, err.msg);
    hc_graph_add_output(g, halves->outputs[0]);
    hc_graph_add_output(g, halves->outputs[1]);
    hc_attr mid = {.name = "axis", .kind = HC_ATTR_INT, .i = 1};
    hc_node *five = hc_graph_add_node(g, HC_OPK_SPLIT, "five", 1, &x, 5, NULL, 1, &mid, &err);
    HC_ASSERT_MSG(five, err.msg);
    hc_tensor *fi[2] = {five->outputs[0], five->outputs[4]};
    hc_graph_add_output(g, node1(g, HC_OPK_SUB, "five_diff", 2, fi, 0, NULL));
    return g;
}

static void test_split_to_slices(void) {
    pass_fn p[] = {hc_pass_infer_shapes, hc_pass_split_to_slices};
    static const int opsets[3] = {13, 11, 9};
    for (int i = 0; i < 3; i++) {
        split_opset = opsets[i];
        char what[48];
        snprintf(what, sizeof what, "split_to_slices, opset %d", split_opset);
        hc_graph *g = check_passes(build_splits, 2, p, 0, what);
        CHECK_MSG(count_op(g, HC_OPK_SPLIT) == 1 && count_op(g, HC_OPK_SLICE) == 5, "%s", what);
        hc_graph_free(g);
    }
    split_opset = 13;
}

/* ---- merge_matmuls ------------------------------------------------------------------- */
/* x [2, 5, 7] read by three MatMuls with constant weights of 3, 1 and 5 columns and
 * constant biases (an attention's Q, K, V; the second Add with its operands swapped), one
 * of them a graph output; r = Relu(x) read by two MatMuls, one with a bias and one a graph
 * output as it is (no bias merged: the biased one keeps its Add after its Slice), and by
 * a MatMul whose weights are no constant (not a member); z [5, 4] read by one MatMul (a
 * group of one stays). */
static int merge_opset = 13; /* below 10 the Slices take attributes */
static hc_graph *build_merge(void) {
    hc_graph *g = hc_graph_new("merge", merge_opset);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 3, (int64_t[]){2, 5, 7});
    hc_tensor *z = hc_graph_add_input(g, "z", HC_F32, 2, (int64_t[]){5, 4});
    hc_tensor *wx = hc_graph_add_input(g, "wx", HC_F32, 2, (int64_t[]){7, 2});
    const int64_t cols[3] = {3, 1, 5};
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", i);
        hc_tensor *mi[2] = {x, rand_const(g, name, 2, (int64_t[]){7, cols[i]}, 60 + i, -1, 1)};
        snprintf(name, sizeof name, "mm%d", i);
        hc_tensor *h = node1(g, HC_OPK_MATMUL, name, 2, mi, 0, NULL);
        snprintf(name, sizeof name, "b%d", i);
        hc_tensor *b = rand_const(g, name, 1, &cols[i], 70 + i, -1, 1);
        hc_tensor *ai[2] = {i == 1 ? b : h, i == 1 ? h : b};
        snprintf(name, sizeof name, "add%d", i);
        hc_tensor *y = node1(g, HC_OPK_ADD, name, 2, ai, 0, NULL);
        if (i == 2) y = node1(g, HC_OPK_RELU, "relu2", 1, &y, 0, NULL);
        hc_graph_add_output(g, y);
    }
    hc_tensor *r = node1(g, HC_OPK_RELU, "r", 1, &x, 0, NULL);
    hc_tensor *ri[2] = {r, rand_const(g, "wr0", 2, (int64_t[]){7, 4}, 80, -1, 1)};
    hc_tensor *r0 = node1(g, HC_OPK_MATMUL, "rmm0", 2, ri, 0, NULL);
    hc_tensor *bi[2] = {r0, rand_const(g, "br0", 1, (int64_t[]){4}, 81, -1, 1)};
    hc_graph_add_output(g, node1(g, HC_OPK_ADD, "radd0", 2, bi, 0, NULL));
    ri[1] = rand_const(g, "wr1", 2, (int64_t[]){7, 2}, 82, -1, 1);
    hc_graph_add_output(g, node1(g, HC_OPK_MATMUL, "rmm1", 2, ri, 0, NULL));
    ri[1] = wx;
    hc_graph_add_output(g, node1(g, HC_OPK_MATMUL, "rmm2", 2, ri, 0, NULL));
    hc_tensor *zi[2] = {z, rand_const(g, "wz", 2, (int64_t[]){4, 6}, 83, -1, 1)};
    hc_graph_add_output(g, node1(g, HC_OPK_MATMUL, "zmm", 2, zi, 0, NULL));
    return g;
}

static void test_merge_matmuls(void) {
    pass_fn p[] = {hc_pass_infer_shapes, hc_pass_merge_matmuls};
    static const int opsets[2] = {13, 9};
    for (int i = 0; i < 2; i++) {
        merge_opset = opsets[i];
        char what[48];
        snprintf(what, sizeof what, "merge_matmuls, opset %d", merge_opset);
        hc_graph *g = check_passes(build_merge, 2, p, 1e-6, what);
        /* x's three as one (weights 7 x 9, biases merged: one Add), r's two as one (7 x 6,
         * its bias Add kept after a Slice), r's third and z's alone: 4 MatMuls, 5 Slices */
        CHECK_MSG(count_op(g, HC_OPK_MATMUL) == 4 && count_op(g, HC_OPK_SLICE) == 5 &&
                      count_op(g, HC_OPK_ADD) == 2,
                  "%s: %d MatMul, %d Slice, %d Add", what, count_op(g, HC_OPK_MATMUL),
                  count_op(g, HC_OPK_SLICE), count_op(g, HC_OPK_ADD));
        int merged = 0;
        for (size_t k = 0; k < g->nodes.len; k++) {
            const hc_node *n = g->nodes.data[k];
            if (n->op != HC_OPK_MATMUL || !n->inputs[1]->data) continue;
            const int64_t *s = n->inputs[1]->shape;
            merged += (s[0] == 7 && s[1] == 9) + (s[0] == 7 && s[1] == 6);
        }
        CHECK_MSG(merged == 2, "%s: %d merged weights", what, merged);
        hc_graph_free(g);
    }
    merge_opset = 13;
}

/* ---- the whole pipeline ------------------------------------------------------------- */
/* conv -> bn -> relu -> conv(1x1) -> flatten -> gemm(transB) -> dropout -> softmax */
static hc_graph *build_small_net(void) {
    hc_graph *g = hc_graph_new("net", 13);
    hc_tensor *x = hc_graph_add_input(g, "image", HC_F32, 4, (int64_t[]){2, 3, 8, 8});
    int64_t pads[4] = {1, 1, 1, 1}, st[2] = {2, 2};
    hc_attr ca[2] = {ints_attr("pads", 4, pads), ints_attr("strides", 2, st)};
    hc_tensor *in[3] = {x, rand_const(g, "w1", 4, (int64_t[]){4, 3, 3, 3}, 41, -1, 1), NULL};
    hc_tensor *t = node1(g, HC_OPK_CONV, "conv1", 2, in, 2, ca);
    t = add_bn(g, "bn1", t, 4);
    t = node1(g, HC_OPK_RELU, "relu1", 1, &t, 0, NULL);
    hc_tensor *in2[3] = {t, rand_const(g, "w2", 4, (int64_t[]){6, 4, 1, 1}, 42, -1, 1),
                         rand_const(g, "b2", 1, (int64_t[]){6}, 43, -1, 1)};
    t = node1(g, HC_OPK_CONV, "conv2", 3, in2, 0, NULL);
    t = node1(g, HC_OPK_FLATTEN, "flat", 1, &t, 0, NULL);
    hc_tensor *in3[3] = {t, rand_const(g, "fc_w", 2, (int64_t[]){10, 96}, 44, -0.2, 0.2),
                         rand_const(g, "fc_b", 1, (int64_t[]){10}, 45, -1, 1)};
    hc_attr tb = {.name = "transB", .kind = HC_ATTR_INT, .i = 1};
    t = node1(g, HC_OPK_GEMM, "fc", 3, in3, 1, &tb);
    t = node1(g, HC_OPK_DROPOUT, "drop", 1, &t, 0, NULL);
    hc_graph_add_output(g, node1(g, HC_OPK_SOFTMAX, "prob", 1, &t, 0, NULL));
    return g;
}

static void test_optimize(void) {
    pass_fn p[] = {hc_graph_optimize};
    hc_graph *g = check_passes(build_small_net, 1, p, 1e-5, "optimize");
    /* conv1 (3 channels, 3x3/2) stays a Conv for the direct template; the 1x1 conv2 and
     * the Gemm become matmuls */
    CHECK_EQ_INT(count_op(g, HC_OPK_CONV), 1);
    CHECK_EQ_INT(count_op(g, HC_OPK_GEMM), 0);
    CHECK_EQ_INT(count_op(g, HC_OPK_BATCH_NORMALIZATION) + count_op(g, HC_OPK_DROPOUT), 0);
    CHECK_EQ_INT(count_op(g, HC_OPK_MATMUL), 2);
    CHECK_STR(g->outputs.data[0]->name, "prob_out");
    hc_graph_free(g);
}

/* ---- lower_training: Adagrad, Adam, Momentum (ai.onnx.preview.training) --------------- */
typedef struct train_case {
    const char *name;
    hc_op_kind op;
    double norm, alpha, beta, eps, decay, post;
    bool nesterov;
} train_case;

enum { TN = 2 }; /* two tensors in one node: [1] and [7] */
static const int64_t train_len[TN] = {1, 7};

static int train_per(hc_op_kind op) { return op == HC_OPK_ADAM ? 4 : 3; }

/* R, T, X1, X2, G1, G2, then the accumulators; every output a graph output. */
static hc_graph *build_train(const train_case *tc) {
    hc_graph *g = hc_graph_new(tc->name, 13);
    hc_tensor *in[2 + 4 * TN], *out[3 * TN];
    in[0] = hc_graph_add_input(g, "R", HC_F32, 0, train_len); /* scalars */
    in[1] = hc_graph_add_input(g, "T", HC_I64, 0, train_len);
    static const char *const roles[2][4] = {{"X", "G", "A", ""}, {"X", "G", "V", "H"}};
    int per = train_per(tc->op);
    for (int k = 0; k < per; k++)
        for (int i = 0; i < TN; i++) {
            const char *nm = hc_arena_printf(&g->arena, "%s%d", roles[per == 4][k], i + 1);
            in[2 + k * TN + i] = hc_graph_add_input(g, nm, HC_F32, 1, &train_len[i]);
        }
    for (int o = 0; o < (per - 1) * TN; o++)
        out[o] = hc_graph_tensor(g, hc_arena_printf(&g->arena, "out%d", o), HC_F32, 0, NULL);
    hc_attr at[6];
    int na = 0;
    at[na++] = (hc_attr){.name = "norm_coefficient", .kind = HC_ATTR_FLOAT, .f = tc->norm};
    at[na++] = (hc_attr){.name = "epsilon", .kind = HC_ATTR_FLOAT, .f = tc->eps};
    if (tc->op != HC_OPK_ADAGRAD) {
        at[na++] = (hc_attr){.name = "alpha", .kind = HC_ATTR_FLOAT, .f = tc->alpha};
        at[na++] = (hc_attr){.name = "beta", .kind = HC_ATTR_FLOAT, .f = tc->beta};
    }
    if (tc->op == HC_OPK_ADAGRAD)
        at[na++] = (hc_attr){.name = "decay_factor", .kind = HC_ATTR_FLOAT, .f = tc->decay};
    if (tc->op == HC_OPK_ADAM)
        at[na++] = (hc_attr){.name = "norm_coefficient_post", .kind = HC_ATTR_FLOAT, .f = tc->post};
    if (tc->op == HC_OPK_MOMENTUM)
        at[na++] = (hc_attr){.name = "mode", .kind = HC_ATTR_STRING,
                             .s = tc->nesterov ? "nesterov" : "standard"};
    hc_node *n = hc_graph_add_node(g, tc->op, "opt", 2 + per * TN, in, (per - 1) * TN, out, na,
                                   at, &err);
    HC_ASSERT_MSG(n, err.msg);
    for (int o = 0; o < (per - 1) * TN; o++) hc_graph_add_output(g, out[o]);
    return g;
}

/* The reference's arithmetic, in f32, for tensor i: outputs into ref[] (graph order). */
static void train_ref(const train_case *tc, void *const *in, float **ref) {
    float R = *(const float *)in[0];
    int64_t T = *(const int64_t *)in[1];
    float norm = (float)tc->norm, alpha = (float)tc->alpha, beta = (float)tc->beta;
    float eps = (float)tc->eps;
    for (int i = 0; i < TN; i++) {
        const float *x = in[2 + i], *gr = in[2 + TN + i], *a = in[2 + 2 * TN + i];
        const float *h = tc->op == HC_OPK_ADAM ? in[2 + 3 * TN + i] : NULL;
        float *xn = ref[i], *an = ref[TN + i], *hn = tc->op == HC_OPK_ADAM ? ref[2 * TN + i] : NULL;
        for (int64_t e = 0; e < train_len[i]; e++) {
            float g = norm * x[e] + gr[e];
            if (tc->op == HC_OPK_ADAGRAD) {
                float r = R / (1.0f + (float)T * (float)tc->decay);
                an[e] = a[e] + g * g;
                xn[e] = x[e] - r * g / (sqrtf(an[e]) + eps);
            } else if (tc->op == HC_OPK_ADAM) {
                an[e] = alpha * a[e] + (float)(1 - tc->alpha) * g;
                hn[e] = beta * h[e] + (float)(1 - tc->beta) * (g * g);
                float r = T > 0 ? R * sqrtf(1.0f - powf(beta, (float)T)) / (1.0f - powf(alpha, (float)T))
                                : R;
                float x1 = x[e] - r * (an[e] / (sqrtf(hn[e]) + eps));
                xn[e] = (float)(1 - tc->post) * x1;
            } else {
                an[e] = alpha * a[e] + (T > 0 ? beta : 1.0f) * g;
                xn[e] = x[e] - R * (tc->nesterov ? g + alpha * an[e] : an[e]);
            }
        }
    }
}

static double train_err(const float *a, const float *b, int64_t n) {
    double worst = 0;
    for (int64_t e = 0; e < n; e++) worst = fmax(worst, fabs((double)a[e] - b[e]) / fmax(1, fabs(b[e])));
    return worst;
}

static void test_lower_training(void) {
    static const train_case cases[] = {
        {"adagrad", HC_OPK_ADAGRAD, 0.001, 0, 0, 1e-5, 0.1, 0, false},
        {"adam", HC_OPK_ADAM, 0.001, 0.95, 0.85, 1e-2, 0, 0.01, false},
        {"momentum", HC_OPK_MOMENTUM, 0.01, 0.9, 0.6, 0, 0, 0, false},
        {"nesterov", HC_OPK_MOMENTUM, 0.01, 0.9, 0.6, 0, 0, 0, true},
    };
    for (size_t ci = 0; ci < HC_ARRAY_LEN(cases); ci++) {
        const train_case *tc = &cases[ci];
        int per = train_per(tc->op), nin = 2 + per * TN, nout = (per - 1) * TN;
        hc_graph *g = build_train(tc);
        hc_status st = hc_graph_optimize(g, &err);
        CHECK_MSG(st == HC_OK, "%s: optimize: %s", tc->name, err.msg);
        CHECK_EQ_INT(count_op(g, tc->op), 0);
        hc_model *m = NULL;
        hc_status cst = hc_model_compile(build_train(tc), NULL, &m, &err);
        CHECK_MSG(cst == HC_OK, "%s: compile: %s", tc->name, err.msg);
        void *in[2 + 4 * TN], *out[3 * TN], *got[3 * TN];
        float *ref[3 * TN];
        hc_rng r = {41 + ci};
        for (int k = 0; k < nin; k++) {
            int64_t len = k < 2 ? 1 : train_len[(k - 2) % TN];
            in[k] = malloc(8 * (size_t)len);
            for (int64_t e = 0; e < len; e++) /* accumulators of squares (H) are >= 0 */
                ((float *)in[k])[e] = (float)hc_rng_uniform(&r, (k - 2) / TN == per - 1 ? 0 : -1, 1);
        }
        for (int o = 0; o < nout; o++) {
            size_t bytes = sizeof(float) * (size_t)train_len[o % TN];
            out[o] = malloc(bytes), got[o] = malloc(bytes), ref[o] = malloc(bytes);
        }
        *(float *)in[0] = 0.1f;
        for (int64_t T = 0; T <= 3 && st == HC_OK; T += 3) { /* no bias correction at T = 0 */
            *(int64_t *)in[1] = T;
            train_ref(tc, in, ref);
            CHECK_MSG(hc_graph_eval_reference(g, in, out, &err) == HC_OK, "%s: %s", tc->name, err.msg);
            for (int o = 0; o < nout; o++) {
                double e = train_err(out[o], ref[o], train_len[o % TN]);
                CHECK_MSG(e <= 1e-6, "%s T=%lld: output %d: error %g against the reference",
                          tc->name, (long long)T, o, e);
            }
            if (cst != HC_OK) continue;
            CHECK_MSG(hc_model_run(m, in, got, &err) == HC_OK, "%s: run: %s", tc->name, err.msg);
            for (int o = 0; o < nout; o++) {
                double e = train_err(got[o], out[o], train_len[o % TN]);
                CHECK_MSG(e <= 1e-6, "%s T=%lld: output %d: compiled differs by %g", tc->name,
                          (long long)T, o, e);
            }
        }
        for (int k = 0; k < nin; k++) free(in[k]);
        for (int o = 0; o < nout; o++) free(out[o]), free(got[o]), free(ref[o]);
        hc_model_free(m);
        hc_graph_free(g);
    }

    /* the checks of inference, each naming the node */
    const train_case *ada = &cases[0], *mom = &cases[2];
    hc_graph *g = build_train(ada);
    hc_node *n = g->nodes.data[0];
    CHECK(hc_pass_infer_node(n, &err) == HC_OK);
    hc_tensor *in[16];
    for (int k = 0; k < n->ninputs; k++) in[k] = n->inputs[k];
    in[n->ninputs] = in[2];
    hc_node *bad = hc_graph_add_node(g, HC_OPK_ADAGRAD, "odd", n->ninputs + 1, in, 1, NULL, 0, NULL, &err);
    CHECK(bad && hc_pass_infer_node(bad, &err) == HC_ERR_INVALID);
    CHECK(has_msg(err.msg, "node 'odd' (ai.onnx.preview.training.Adagrad): 9 inputs: R, T, then X, "
                           "G and H of each optimized tensor expected (2 + 3 per tensor)"));
    hc_tensor *sw[8] = {in[0], in[1], in[2], in[3], in[5], in[4], in[6], in[7]}; /* G1, G2 swapped */
    bad = hc_graph_add_node(g, HC_OPK_ADAGRAD, "swap", 8, sw, 2, NULL, 0, NULL, &err);
    CHECK(bad && hc_pass_infer_node(bad, &err) == HC_ERR_INVALID);
    CHECK(has_msg(err.msg, "node 'swap' (ai.onnx.preview.training.Adagrad): input 4 ('G2', G_1) is "
                           "f32 [7], X_1 ('X1') f32 [1]: they must have the same dtype and shape"));
    hc_tensor *tt[8] = {in[0], in[0], in[2], in[3], in[4], in[5], in[6], in[7]}; /* T a float */
    bad = hc_graph_add_node(g, HC_OPK_ADAGRAD, "tf", 8, tt, 2, NULL, 0, NULL, &err);
    CHECK(bad && hc_pass_infer_node(bad, &err) == HC_ERR_INVALID);
    CHECK(has_msg(err.msg, "input 1 ('R', T) is f32, int64 expected"));
    hc_tensor *mix[8] = {in[0], in[1], in[2], hc_graph_add_input(g, "Xd", HC_F64, 1, &train_len[1]),
                         in[4], in[5], in[6], in[7]};
    bad = hc_graph_add_node(g, HC_OPK_ADAGRAD, "mix", 8, mix, 2, NULL, 0, NULL, &err);
    CHECK(bad && hc_pass_infer_node(bad, &err) == HC_ERR_INVALID);
    CHECK(has_msg(err.msg, "input 3 ('Xd', X_2) is f64, X_1 ('X1') f32: every tensor must have "
                           "the same dtype"));
    bad = hc_graph_add_node(g, HC_OPK_ADAGRAD, "outs", 8, in, 5, NULL, 0, NULL, &err);
    CHECK(bad && hc_pass_infer_node(bad, &err) == HC_ERR_INVALID);
    CHECK(has_msg(err.msg, "5 outputs for 2 optimized tensors: at most 4"));
    bad = hc_graph_add_node(g, HC_OPK_MOMENTUM, "nomode", 8, in, 2, NULL, 0, NULL, &err);
    CHECK(bad && hc_pass_infer_node(bad, &err) == HC_ERR_INVALID);
    CHECK(has_msg(err.msg, "node 'nomode' (ai.onnx.preview.training.Momentum): attribute 'alpha' "
                           "is required"));
    hc_attr ma[4] = {{.name = "alpha", .kind = HC_ATTR_FLOAT, .f = mom->alpha},
                     {.name = "beta", .kind = HC_ATTR_FLOAT, .f = mom->beta},
                     {.name = "norm_coefficient", .kind = HC_ATTR_FLOAT, .f = 0},
                     {.name = "mode", .kind = HC_ATTR_STRING, .s = "heavy_ball"}};
    bad = hc_graph_add_node(g, HC_OPK_MOMENTUM, "mode", 8, in, 2, NULL, 4, ma, &err);
    CHECK(bad && hc_pass_infer_node(bad, &err) == HC_ERR_INVALID);
    CHECK(has_msg(err.msg, "mode 'heavy_ball' (standard or nesterov expected)"));
    hc_graph_free(g);
}

static void test_eval_errors(void) {
    hc_graph *g = build_fold();
    float dummy[4];
    void *in[1] = {dummy}, *out[1] = {dummy};
    CHECK(hc_graph_eval_reference(g, in, out, &err) == HC_ERR_INVALID);
    CHECK(strstr(err.msg, "add") != NULL); /* the first node, whose shape is unknown */
    hc_graph_free(g);
}

int main(void) {
    setenv("HIDETC_VERIFY", "1", 1);
    test_infer_shapes();
    test_fold_constants();
    test_fold_batchnorm();
    test_simplify();
    test_lower_conv();
    test_lower_gemm();
    test_split_to_slices();
    test_merge_matmuls();
    test_optimize();
    test_lower_training();
    test_eval_errors();
    TEST_DONE();
}
