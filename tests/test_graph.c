/* test_graph.c — the graph IR: op table, tensors, constants, nodes, attributes,
 * topological order, dead-node removal, printing and the op-implementation helpers. */
#include <string.h>

#include "graph/graph.h"
#include "test.h"

static void test_op_table(void) {
    CHECK_STR(hc_op_name(HC_OPK_CONV), "CONV");
    CHECK_STR(hc_op_onnx_name(HC_OPK_CONV), "Conv");
    CHECK_STR(hc_op_onnx_name(HC_OPK_IM2COL), "");
    CHECK(hc_op_class_of(HC_OPK_CONV) == HC_OPC_ANCHOR);
    CHECK(hc_op_class_of(HC_OPK_RELU) == HC_OPC_INJECTIVE);
    CHECK(hc_op_class_of(HC_OPK_SHAPE) == HC_OPC_SOURCE);
    CHECK_EQ_INT(hc_op_min_inputs(HC_OPK_CONV), 2);
    CHECK_EQ_INT(hc_op_max_inputs(HC_OPK_CONV), 3);
    CHECK_EQ_INT(hc_op_max_outputs(HC_OPK_SPLIT), HC_MANY);
    CHECK(hc_op_from_onnx("MatMul") == HC_OPK_MATMUL);
    CHECK(hc_op_from_onnx("NoSuchOp") == HC_OPK_COUNT);
    CHECK(hc_op_from_onnx("") == HC_OPK_COUNT); /* internal ops have no ONNX name */
    /* every ONNX name maps back to its own row */
    for (int k = 0; k < HC_OPK_COUNT; k++) {
        const char *on = hc_op_onnx_name((hc_op_kind)k);
        if (*on) CHECK_MSG(hc_op_from_onnx(on) == (hc_op_kind)k, "%s", on);
        const hc_op_def *d = hc_op_get((hc_op_kind)k);
        if (d) CHECK_MSG(d->op == (hc_op_kind)k && d->infer && d->task, "%s", hc_op_name(k));
    }
    CHECK(hc_op_get(HC_OPK_COUNT) == NULL);
}

static void test_tensors(void) {
    hc_graph *g = hc_graph_new("t", 13);
    int64_t s[2] = {2, 3};
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, s);
    CHECK(x->shape_known && x->id == 0 && !x->data);
    CHECK_EQ_INT(hc_tensor_numel(x), 6);
    CHECK_EQ_INT(hc_tensor_nbytes(x), 24);
    int32_t v[6] = {1, -2, 3, -4, 5, 6};
    hc_tensor *c = hc_graph_constant(g, "c", HC_I32, 2, s, v);
    v[0] = 100; /* the graph holds a copy */
    int64_t out[6];
    CHECK_EQ_INT(hc_tensor_const_ints(c, out, 6), 6);
    CHECK_EQ_INT(out[0], 1);
    CHECK_EQ_INT(out[3], -4);
    CHECK_EQ_INT(hc_tensor_const_ints(c, out, 2), 6); /* count, even if fewer are read */
    CHECK_EQ_INT(hc_tensor_const_ints(x, out, 6), -1);
    CHECK_NEAR(hc_tensor_const_at(c, 1), -2.0, 0);
    float fv[2] = {0.5f, -1.25f};
    hc_tensor *f = hc_graph_constant(g, NULL, HC_F32, 1, (int64_t[]){2}, fv);
    CHECK_EQ_INT(hc_tensor_const_ints(f, out, 2), -1); /* not an integer tensor */
    CHECK_NEAR(hc_tensor_const_at(f, 1), -1.25, 0);
    _Float16 hv[1] = {(_Float16)0.75f};
    hc_tensor *h = hc_graph_constant(g, "h", HC_F16, 0, NULL, hv);
    CHECK_NEAR(hc_tensor_const_at(h, 0), 0.75, 0);
    hc_tensor *z = hc_graph_constant(g, "z", HC_F32, 1, (int64_t[]){0}, NULL);
    CHECK(z->data != NULL); /* an empty constant is still a constant */
    hc_tensor *zeros = hc_graph_constant(g, "zeros", HC_I64, 1, (int64_t[]){3}, NULL);
    CHECK_EQ_INT(hc_tensor_const_ints(zeros, out, 3), 3);
    CHECK_EQ_INT(out[2], 0);
    /* fresh names do not collide with user names */
    hc_graph_tensor(g, "t5", HC_F32, 0, NULL);
    hc_tensor *u = hc_graph_tensor(g, NULL, HC_F32, 0, NULL);
    CHECK(strcmp(u->name, "t5") != 0);
    CHECK(!u->shape_known);
    CHECK(hc_graph_find_tensor(g, "c") == c);
    CHECK(hc_graph_find_tensor(g, "nope") == NULL);
    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_shape(&sb, 2, s);
    hc_print_shape(&sb, 0, s);
    CHECK_STR(hc_sb_str(&sb), "[2, 3][]");
    hc_sb_free(&sb);
    hc_graph_free(g);
}

static void test_nodes_and_attrs(void) {
    hc_graph *g = hc_graph_new("n", 13);
    hc_error err = {0};
    int64_t s[2] = {2, 3};
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, s);
    int64_t perm[2] = {1, 0};
    const char *strs[2] = {"a", "b"};
    double fl[2] = {0.5, 2};
    hc_attr attrs[4] = {
        {.name = "perm", .kind = HC_ATTR_INTS, .n = 2, .ints = perm},
        {.name = "alpha", .kind = HC_ATTR_FLOAT, .f = 0.25},
        {.name = "mode", .kind = HC_ATTR_STRING, .s = "nearest"},
        {.name = "names", .kind = HC_ATTR_STRINGS, .n = 2, .strings = strs},
    };
    hc_node *n = hc_graph_add_node(g, HC_OPK_TRANSPOSE, "tr", 1, &x, 0, NULL, 4, attrs, &err);
    CHECK(n != NULL);
    perm[0] = 7; /* attributes are copied */
    int cnt = 0;
    const int64_t *p = hc_node_attr_ints(n, "perm", &cnt);
    CHECK_EQ_INT(cnt, 2);
    CHECK_EQ_INT(p[0], 1);
    CHECK_NEAR(hc_node_attr_float(n, "alpha", 1), 0.25, 0);
    CHECK_EQ_INT(hc_node_attr_int(n, "missing", 42), 42);
    CHECK_STR(hc_node_attr_string(n, "mode", "x"), "nearest");
    CHECK_STR(hc_node_attr_string(n, "alpha", "dflt"), "dflt"); /* wrong kind: default */
    CHECK(hc_node_attr_floats(n, "perm", &cnt) == NULL && cnt == 0);
    (void)fl;
    CHECK_EQ_INT(n->noutputs, 1);
    CHECK(n->outputs[0]->producer == n);
    CHECK(!n->outputs[0]->shape_known);
    /* a duplicate node name is made unique */
    hc_node *n2 = hc_graph_add_node(g, HC_OPK_RELU, "tr", 1, &x, 0, NULL, 0, NULL, &err);
    CHECK(n2 && strcmp(n2->name, "tr") != 0);
    CHECK(strcmp(n2->outputs[0]->name, n->outputs[0]->name) != 0);
    /* a nameless node gets one */
    hc_node *n3 = hc_graph_add_node(g, HC_OPK_RELU, NULL, 1, &x, 0, NULL, 0, NULL, &err);
    CHECK(n3 && n3->name && *n3->name);
    /* arity errors name the node */
    hc_tensor *two[2] = {x, x};
    CHECK(!hc_graph_add_node(g, HC_OPK_RELU, "bad_relu", 2, two, 0, NULL, 0, NULL, &err));
    CHECK(err.status == HC_ERR_INVALID && strstr(err.msg, "bad_relu"));
    CHECK(!hc_graph_add_node(g, HC_OPK_CONV, "bad_conv", 1, &x, 0, NULL, 0, NULL, &err));
    CHECK(strstr(err.msg, "bad_conv") && strstr(err.msg, "Conv"));
    hc_tensor *missing[2] = {x, NULL};
    CHECK(!hc_graph_add_node(g, HC_OPK_ADD, "bad_add", 2, missing, 0, NULL, 0, NULL, &err));
    CHECK(strstr(err.msg, "bad_add"));
    /* optional inputs may be absent; multiple explicit outputs */
    hc_tensor *clip_in[3] = {x, NULL, NULL};
    hc_node *cl = hc_graph_add_node(g, HC_OPK_CLIP, "clip", 3, clip_in, 0, NULL, 0, NULL, &err);
    CHECK(cl && hc_node_num_present_inputs(cl) == 1);
    hc_tensor *outs[2] = {hc_graph_tensor(g, "s0", HC_F32, 0, NULL), NULL};
    hc_node *sp = hc_graph_add_node(g, HC_OPK_SPLIT, "split", 1, &x, 2, outs, 0, NULL, &err);
    CHECK(sp && sp->outputs[0] == outs[0] && sp->outputs[1] == NULL);
    CHECK(outs[0]->producer == sp);
    /* helpers */
    int ax = -1;
    CHECK(hc_node_axis(n, -1, 3, &ax, &err) == HC_OK && ax == 2);
    CHECK(hc_node_axis(n, 3, 3, &ax, &err) == HC_ERR_INVALID && strstr(err.msg, "'tr'"));
    hc_node_set_output(n, 0, HC_F32, 2, (int64_t[]){3, 2});
    CHECK(n->outputs[0]->shape_known && n->outputs[0]->shape[0] == 3);
    hc_graph_free(g);
}

static void test_need_const(void) {
    hc_graph *g = hc_graph_new("nc", 13);
    hc_error err = {0};
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 1, (int64_t[]){6});
    hc_tensor *sh = hc_graph_add_input(g, "shape_in", HC_I64, 1, (int64_t[]){2});
    hc_tensor *in[2] = {x, sh};
    hc_node *n = hc_graph_add_node(g, HC_OPK_RESHAPE, "rs", 2, in, 0, NULL, 0, NULL, &err);
    hc_clear_need_const();
    CHECK(hc_last_need_const() == NULL);
    CHECK(hc_node_need_const(n, 1, &err) == HC_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "rs") && strstr(err.msg, "shape_in"));
    CHECK(hc_last_need_const() && strcmp(hc_last_need_const(), "shape_in") == 0);
    hc_clear_need_const();
    CHECK(hc_last_need_const() == NULL);
    n->inputs[1] = hc_graph_constant(g, "k", HC_I64, 1, (int64_t[]){2}, (int64_t[]){2, 3});
    CHECK(hc_node_need_const(n, 1, &err) == HC_OK);
    CHECK(hc_node_need_const(n, 5, &err) == HC_ERR_INVALID);
    hc_graph_free(g);
}

/* a -> r1 -> r2 -> out, plus a dead branch; nodes added out of order */
static void test_toposort_and_dead(void) {
    hc_graph *g = hc_graph_new("topo", 13);
    hc_error err = {0};
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 1, (int64_t[]){4});
    hc_tensor *a = hc_graph_tensor(g, "a", HC_F32, 0, NULL);
    hc_tensor *b = hc_graph_tensor(g, "b", HC_F32, 0, NULL);
    hc_node *n2 = hc_graph_add_node(g, HC_OPK_RELU, "second", 1, &a, 1, &b, 0, NULL, &err);
    hc_node *n1 = hc_graph_add_node(g, HC_OPK_NEG, "first", 1, &x, 1, &a, 0, NULL, &err);
    hc_node *dead = hc_graph_add_node(g, HC_OPK_EXP, "dead", 1, &a, 0, NULL, 0, NULL, &err);
    hc_graph_add_output(g, b);
    CHECK(hc_graph_toposort(g, &err) == HC_OK);
    CHECK(g->nodes.data[0] == n1);
    CHECK(g->nodes.data[1] == n2 || g->nodes.data[2] == n2);
    CHECK_EQ_INT(hc_graph_num_uses(g, a), 2);
    hc_graph_remove_dead(g);
    CHECK_EQ_INT(g->nodes.len, 2);
    CHECK(dead->outputs[0]->producer == NULL);
    CHECK_EQ_INT(hc_graph_num_uses(g, a), 1);
    /* replace_uses rewires node inputs and graph outputs */
    hc_graph_replace_uses(g, b, a);
    CHECK(g->outputs.data[0] == a);
    hc_graph_remove_dead(g);
    CHECK_EQ_INT(g->nodes.len, 1);
    CHECK(g->nodes.data[0] == n1);
    hc_graph_free(g);
}

/* Nothing to sort, remove or print but the frame. */
static void test_empty_graph(void) {
    hc_graph *g = hc_graph_new(NULL, 17);
    hc_error err = {0};
    CHECK(hc_graph_toposort(g, &err) == HC_OK);
    hc_graph_remove_dead(g);
    hc_sb sb;
    hc_sb_init(&sb);
    hc_graph_print(&sb, g);
    CHECK_STR(hc_sb_str(&sb), "graph graph (opset 17) {\n  return\n}\n");
    hc_sb_free(&sb);
    hc_graph_free(g);
}

static void test_toposort_errors(void) {
    hc_graph *g = hc_graph_new("cyc", 13);
    hc_error err = {0};
    hc_tensor *a = hc_graph_tensor(g, "a", HC_F32, 0, NULL);
    hc_tensor *b = hc_graph_tensor(g, "b", HC_F32, 0, NULL);
    hc_graph_add_node(g, HC_OPK_RELU, "r1", 1, &a, 1, &b, 0, NULL, &err);
    hc_graph_add_node(g, HC_OPK_RELU, "r2", 1, &b, 1, &a, 0, NULL, &err);
    CHECK(hc_graph_toposort(g, &err) == HC_ERR_INVALID);
    CHECK(strstr(err.msg, "cycle") && (strstr(err.msg, "r1") || strstr(err.msg, "r2")));
    hc_graph_free(g);

    g = hc_graph_new("orphan", 13);
    hc_tensor *o = hc_graph_tensor(g, "orphan_t", HC_F32, 0, NULL);
    hc_graph_add_node(g, HC_OPK_RELU, "reader", 1, &o, 0, NULL, 0, NULL, &err);
    CHECK(hc_graph_toposort(g, &err) == HC_ERR_INVALID);
    CHECK(strstr(err.msg, "reader") && strstr(err.msg, "orphan_t"));
    hc_graph_free(g);
}

/* A long chain must not overflow a recursive sort. */
static void test_deep_chain(void) {
    hc_graph *g = hc_graph_new("deep", 13);
    hc_error err = {0};
    enum { N = 5000 };
    hc_tensor *t = hc_graph_add_input(g, "x", HC_F32, 1, (int64_t[]){1});
    hc_tensor **ts = malloc(sizeof(hc_tensor *) * (N + 1));
    ts[0] = t;
    for (int i = 1; i <= N; i++) ts[i] = hc_graph_tensor(g, NULL, HC_F32, 0, NULL);
    for (int i = N; i >= 1; i--) /* reverse order: the sort has to do all the work */
        hc_graph_add_node(g, HC_OPK_RELU, NULL, 1, &ts[i - 1], 1, &ts[i], 0, NULL, &err);
    hc_graph_add_output(g, ts[N]);
    CHECK(hc_graph_toposort(g, &err) == HC_OK);
    bool ok = true;
    for (int i = 0; i < N; i++) ok &= g->nodes.data[i]->inputs[0] == ts[i];
    CHECK(ok);
    free(ts);
    hc_graph_free(g);
}

static void test_print_and_dot(void) {
    hc_graph *g = hc_graph_new("pr", 13);
    hc_error err = {0};
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 2, (int64_t[]){1, 4});
    hc_tensor *w = hc_graph_constant(g, "w", HC_F32, 2, (int64_t[]){4, 2}, NULL);
    hc_tensor *in[2] = {x, w};
    hc_tensor *y = hc_graph_tensor(g, "y", HC_F32, 2, (int64_t[]){1, 2});
    hc_graph_add_node(g, HC_OPK_MATMUL, "mm", 2, in, 1, &y, 0, NULL, &err);
    hc_attr al = {.name = "alpha", .kind = HC_ATTR_FLOAT, .f = 0.5};
    hc_tensor *z = hc_graph_tensor(g, "z", HC_F32, 2, (int64_t[]){1, 2});
    hc_graph_add_node(g, HC_OPK_LEAKY_RELU, "lr", 1, &y, 1, &z, 1, &al, &err);
    hc_graph_add_output(g, z);
    hc_sb sb;
    hc_sb_init(&sb);
    hc_graph_print(&sb, g);
    CHECK_STR(hc_sb_str(&sb), "graph pr (opset 13) {\n"
                              "  input %x: [1, 4] f32\n"
                              "  const %w: [4, 2] f32\n"
                              "  %y = MatMul(%x, %w)  # [1, 2] f32\n"
                              "  %z = LeakyRelu(%y) {alpha=0.5}  # [1, 2] f32\n"
                              "  return %z\n"
                              "}\n");
    hc_sb_free(&sb);
    hc_sb_init(&sb);
    hc_graph_dot(&sb, g);
    const char *d = hc_sb_str(&sb);
    CHECK(strncmp(d, "digraph \"pr\" {", 14) == 0);
    CHECK(strstr(d, "n0 -> n1 [label=\"[1, 2] f32\"]"));
    CHECK(strstr(d, "+1 const"));
    CHECK(strstr(d, "n1 -> out0"));
    hc_sb_free(&sb);
    hc_graph_free(g);
}

int main(void) {
    test_op_table();
    test_tensors();
    test_nodes_and_attrs();
    test_need_const();
    test_toposort_and_dead();
    test_toposort_errors();
    test_empty_graph();
    test_deep_chain();
    test_print_and_dot();
    TEST_DONE();
}
