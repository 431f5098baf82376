/* test_ops_shape.c — shape, data-movement and constant operators (src/graph/ops/shape*.c):
 * inference (shapes, attribute defaults per opset, errors naming the node, need_const),
 * the Tasks in the interpreter against values computed here independently, and every
 * Task scheduled, compiled and run against the interpreter on awkward shapes. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "target/cpu/cpu.h"
#include "graph/graph.h"
#include "target/cpu/jit.h"
#include "test.h"

static hc_arena A;

/* ---- one-node graphs ------------------------------------------------------------------ */
typedef struct tcase {
    hc_task *t;
    void *in[48], *out[8];
} tcase;

#define MAX_CASES 112
static tcase cases[MAX_CASES];
static int ncases;
static hc_graph *graphs[MAX_CASES * 2];
static int ngraphs;

static hc_graph *G; /* the graph being built */

static void new_graph(int opset) {
    G = hc_graph_new("t", opset);
    HC_ASSERT(ngraphs < (int)HC_ARRAY_LEN(graphs));
    graphs[ngraphs++] = G;
}

static hc_tensor *input(const char *name, hc_dtype t, int ndim, const int64_t *shape) {
    return hc_graph_add_input(G, name, t, ndim, shape);
}

static hc_tensor *ints(const char *name, int n, const int64_t *v) {
    int64_t s = n;
    return hc_graph_constant(G, name, HC_I64, 1, &s, v);
}

static hc_tensor *scalar(const char *name, hc_dtype t, const void *v) {
    return hc_graph_constant(G, name, t, 0, NULL, v);
}

static hc_attr attr_i(const char *name, int64_t v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_INT, .i = v};
}

static hc_attr attr_s(const char *name, const char *v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_STRING, .s = v};
}

static hc_attr attr_is(const char *name, int n, int64_t *v) {
    return (hc_attr){.name = name, .kind = HC_ATTR_INTS, .n = n, .ints = v};
}

static hc_node *node(hc_op_kind op, int nin, hc_tensor *const *ins, int nout, int nattrs,
                     const hc_attr *attrs) {
    hc_error e = {0};
    hc_node *n = hc_graph_add_node(G, op, "n1", nin, ins, nout, NULL, nattrs, attrs, &e);
    HC_ASSERT_MSG(n, e.msg);
    return n;
}

static hc_status infer(hc_node *n, hc_error *e) {
    const hc_op_def *d = hc_op_get(n->op);
    HC_ASSERT(d);
    return d->infer(n, e);
}

static size_t nbytes(const hc_tnode *n) {
    return (size_t)hc_tnode_numel(n) * (size_t)hc_dtype_size(n->dtype) + 1;
}

/* Infer, build the task and interpret it; xs are the buffers of the non-constant inputs
 * in order. The case is kept for the compiled check. */
static tcase *run(hc_node *n, void *const *xs) {
    hc_error e = {0};
    hc_status st = infer(n, &e);
    CHECK_MSG(st == HC_OK, "infer: %s", e.msg);
    if (st) return NULL;
    hc_task *t = hc_op_get(n->op)->task(&A, n, &e);
    CHECK_MSG(t != NULL, "task: %s", e.msg);
    if (!t) return NULL;
    HC_ASSERT(ncases < MAX_CASES);
    tcase *c = &cases[ncases++];
    c->t = t;
    for (int i = 0, k = 0, j = 0; i < n->ninputs; i++) {
        const hc_tensor *x = n->inputs[i];
        if (!x) continue;
        c->in[k] = hc_xmalloc(nbytes(t->inputs[k]));
        memcpy(c->in[k], x->data ? x->data : xs[j++], nbytes(t->inputs[k]) - 1);
        k++;
    }
    for (int i = 0; i < t->noutputs; i++) c->out[i] = hc_xcalloc(1, nbytes(t->outputs[i]));
    st = hc_interpret_task(t, c->in, c->out, &e);
    CHECK_MSG(st == HC_OK, "interpret %s: %s", t->name, e.msg);
    return st == HC_OK ? c : NULL;
}

static bool shape_is(const hc_tensor *t, int ndim, const int64_t *s) {
    if (t->ndim != ndim) return false;
    for (int d = 0; d < ndim; d++)
        if (t->shape[d] != s[d]) return false;
    return true;
}

static float *iota_f(int64_t n, float start) {
    float *p = HC_NEW_ARRAY(&A, float, n);
    for (int64_t i = 0; i < n; i++) p[i] = start + (float)i;
    return p;
}

/* ---- reshapes --------------------------------------------------------------------------- */
static void test_reshape(void) {
    new_graph(14);
    hc_tensor *x = input("x", HC_F32, 3, (int64_t[]){2, 3, 4});
    hc_node *n = node(HC_OPK_RESHAPE, 2, (hc_tensor *[]){x, ints("s", 2, (int64_t[]){0, -1})},
                      1, 0, NULL);
    float *xv = iota_f(24, 0);
    tcase *c = run(n, (void *[]){xv});
    CHECK(shape_is(n->outputs[0], 2, (int64_t[]){2, 12}));
    if (c) CHECK(memcmp(c->out[0], xv, 24 * 4) == 0);

    /* errors name the node; a non-constant shape asks for a constant */
    hc_error e = {0};
    n = node(HC_OPK_RESHAPE, 2, (hc_tensor *[]){x, ints("s2", 2, (int64_t[]){-1, -1})}, 1, 0,
             NULL);
    CHECK(infer(n, &e) == HC_ERR_INVALID && strstr(e.msg, "'n1") && strstr(e.msg, "Reshape"));
    hc_tensor *dyn = input("dyn", HC_I64, 1, (int64_t[]){2});
    n = node(HC_OPK_RESHAPE, 2, (hc_tensor *[]){x, dyn}, 1, 0, NULL);
    hc_clear_need_const();
    CHECK(infer(n, &e) == HC_ERR_UNSUPPORTED);
    CHECK(hc_last_need_const() && !strcmp(hc_last_need_const(), "dyn"));

    /* allowzero: 0 is a real zero */
    hc_tensor *z = input("z", HC_F32, 2, (int64_t[]){0, 3});
    hc_attr az = attr_i("allowzero", 1);
    n = node(HC_OPK_RESHAPE, 2, (hc_tensor *[]){z, ints("s3", 2, (int64_t[]){3, 0})}, 1, 1, &az);
    CHECK(infer(n, &e) == HC_OK && shape_is(n->outputs[0], 2, (int64_t[]){3, 0}));

    hc_attr ax = attr_i("axis", -1);
    n = node(HC_OPK_FLATTEN, 1, &x, 1, 1, &ax);
    CHECK(infer(n, &e) == HC_OK && shape_is(n->outputs[0], 2, (int64_t[]){6, 4}));
    ax.i = 0;
    n = node(HC_OPK_FLATTEN, 1, &x, 1, 1, &ax);
    CHECK(infer(n, &e) == HC_OK && shape_is(n->outputs[0], 2, (int64_t[]){1, 24}));
}

static void test_squeeze(void) {
    int64_t ax[2] = {0, -1};
    /* opset 11: axes attribute; opset 13: axes input */
    for (int opset = 11; opset <= 13; opset += 2) {
        new_graph(opset);
        hc_tensor *x = input("x", HC_F32, 3, (int64_t[]){1, 5, 1});
        hc_attr at = attr_is("axes", 2, ax);
        hc_node *n = opset < 13 ? node(HC_OPK_SQUEEZE, 1, &x, 1, 1, &at)
                                : node(HC_OPK_SQUEEZE, 2, (hc_tensor *[]){x, ints("a", 2, ax)},
                                       1, 0, NULL);
        tcase *c = run(n, (void *[]){iota_f(5, 1)});
        CHECK(shape_is(n->outputs[0], 1, (int64_t[]){5}));
        if (c) CHECK(((float *)c->out[0])[4] == 5);
        hc_tensor *y = input("y", HC_F32, 2, (int64_t[]){3, 4});
        n = opset < 13 ? node(HC_OPK_UNSQUEEZE, 1, &y, 1, 1, &at)
                       : node(HC_OPK_UNSQUEEZE, 2, (hc_tensor *[]){y, ints("b", 2, ax)}, 1, 0,
                              NULL);
        hc_error e = {0};
        CHECK(infer(n, &e) == HC_OK && shape_is(n->outputs[0], 4, (int64_t[]){1, 3, 4, 1}));
    }
    new_graph(13);
    hc_tensor *x = input("x", HC_F32, 3, (int64_t[]){1, 5, 1});
    hc_node *n = node(HC_OPK_SQUEEZE, 1, &x, 1, 0, NULL); /* no axes: every size-1 dim */
    hc_error e = {0};
    CHECK(infer(n, &e) == HC_OK && shape_is(n->outputs[0], 1, (int64_t[]){5}));
    n = node(HC_OPK_SQUEEZE, 2, (hc_tensor *[]){x, ints("a", 1, (int64_t[]){1})}, 1, 0, NULL);
    CHECK(infer(n, &e) == HC_ERR_INVALID && strstr(e.msg, "not 1"));
}

static void test_transpose_concat_split(void) {
    new_graph(13);
    hc_tensor *x = input("x", HC_F32, 3, (int64_t[]){2, 3, 5});
    hc_node *n = node(HC_OPK_TRANSPOSE, 1, &x, 1, 0, NULL); /* default: reversed */
    tcase *c = run(n, (void *[]){iota_f(30, 0)});
    CHECK(shape_is(n->outputs[0], 3, (int64_t[]){5, 3, 2}));
    if (c) {
        const float *y = c->out[0];
        bool ok = true;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                for (int k = 0; k < 5; k++) ok &= y[(k * 3 + j) * 2 + i] == i * 15 + j * 5 + k;
        CHECK(ok);
    }

    hc_tensor *a = input("a", HC_F32, 2, (int64_t[]){2, 1});
    hc_tensor *b = input("b", HC_F32, 2, (int64_t[]){2, 3});
    hc_attr ax = attr_i("axis", -1);
    n = node(HC_OPK_CONCAT, 2, (hc_tensor *[]){a, b}, 1, 1, &ax);
    c = run(n, (void *[]){iota_f(2, 100), iota_f(6, 0)});
    CHECK(shape_is(n->outputs[0], 2, (int64_t[]){2, 4}));
    if (c) {
        const float *y = c->out[0];
        CHECK(y[0] == 100 && y[1] == 0 && y[3] == 2 && y[4] == 101 && y[7] == 5);
    }

    /* Split: sizes from the input (opset 13), the attribute (11), or equal parts */
    hc_attr ax1 = attr_i("axis", 1);
    n = node(HC_OPK_SPLIT, 2, (hc_tensor *[]){b, ints("sp", 2, (int64_t[]){1, 2})}, 2, 1, &ax1);
    c = run(n, (void *[]){iota_f(6, 0)});
    CHECK(shape_is(n->outputs[1], 2, (int64_t[]){2, 2}));
    if (c) {
        const float *y0 = c->out[0], *y1 = c->out[1];
        CHECK(y0[0] == 0 && y0[1] == 3 && y1[0] == 1 && y1[1] == 2 && y1[3] == 5);
    }
    new_graph(11);
    hc_tensor *v = input("v", HC_F32, 1, (int64_t[]){6});
    hc_attr sp[1] = {attr_is("split", 3, (int64_t[]){1, 2, 3})};
    n = node(HC_OPK_SPLIT, 1, &v, 3, 1, sp);
    c = run(n, (void *[]){iota_f(6, 0)});
    if (c) CHECK(((float *)c->out[2])[0] == 3 && ((float *)c->out[1])[1] == 2);
    n = node(HC_OPK_SPLIT, 1, &v, 4, 0, NULL);
    hc_error e = {0};
    CHECK(infer(n, &e) == HC_ERR_INVALID && strstr(e.msg, "equal"));
}

/* ---- opset 18-28 versions: Split num_outputs, Pad axes and wrap, SpaceToDepth CRD ----- */
static void test_newer_versions(void) {
    hc_error e = {0};
    float *v7 = iota_f(7, 0);
    /* Split-18 without sizes: chunks of ceil(7 / 4) = 2, the last one smaller */
    new_graph(18);
    hc_tensor *v = input("v", HC_F32, 1, (int64_t[]){7});
    hc_node *n = node(HC_OPK_SPLIT, 1, &v, 4, 0, NULL);
    tcase *c = run(n, (void *[]){v7});
    CHECK(shape_is(n->outputs[0], 1, (int64_t[]){2}) && shape_is(n->outputs[3], 1, (int64_t[]){1}));
    if (c) CHECK(((float *)c->out[1])[1] == 3 && ((float *)c->out[3])[0] == 6);
    hc_attr no = attr_i("num_outputs", 3);
    n = node(HC_OPK_SPLIT, 1, &v, 3, 1, &no); /* 3, 3, 1 */
    c = run(n, (void *[]){v7});
    CHECK(shape_is(n->outputs[1], 1, (int64_t[]){3}) && shape_is(n->outputs[2], 1, (int64_t[]){1}));
    if (c) CHECK(((float *)c->out[2])[0] == 6 && ((float *)c->out[1])[0] == 3);
    n = node(HC_OPK_SPLIT, 1, &v, 2, 1, &no);
    CHECK(infer(n, &e) == HC_ERR_INVALID && strstr(e.msg, "num_outputs is 3 but the node has 2"));
    hc_tensor *six = input("six", HC_F32, 1, (int64_t[]){5});
    n = node(HC_OPK_SPLIT, 1, &six, 4, 0, NULL); /* chunks of 2: 2, 2, 2, -1 */
    CHECK(infer(n, &e) == HC_ERR_INVALID && strstr(e.msg, "does not split into 4 chunks of 2"));
    new_graph(13); /* before 18: equal parts only */
    v = input("v", HC_F32, 1, (int64_t[]){7});
    n = node(HC_OPK_SPLIT, 1, &v, 4, 0, NULL);
    CHECK(infer(n, &e) == HC_ERR_INVALID && strstr(e.msg, "equal"));

    /* Pad-18 with axes: pads only the last dim of a [2, 3] */
    new_graph(18);
    hc_tensor *p = input("p", HC_F32, 2, (int64_t[]){2, 3});
    float cv = 9;
    hc_tensor *ins[4] = {p, ints("pads", 2, (int64_t[]){1, 2}), scalar("cv", HC_F32, &cv),
                         ints("axes", 1, (int64_t[]){-1})};
    n = node(HC_OPK_PAD, 4, ins, 1, 0, NULL);
    c = run(n, (void *[]){iota_f(6, 1)});
    CHECK(shape_is(n->outputs[0], 2, (int64_t[]){2, 6}));
    float wa[12] = {9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9, 9};
    if (c) CHECK(memcmp(c->out[0], wa, sizeof wa) == 0);
    ins[1] = ints("pads3", 3, (int64_t[]){1, 2, 3});
    n = node(HC_OPK_PAD, 4, ins, 1, 0, NULL);
    CHECK(infer(n, &e) == HC_ERR_INVALID && strstr(e.msg, "pads has 3 values, expected 2"));
    /* wrap: only from Pad-19 */
    hc_attr wrap = attr_s("mode", "wrap");
    hc_tensor *q = input("q", HC_F32, 2, (int64_t[]){1, 4});
    hc_tensor *wins[2] = {q, ints("wp", 4, (int64_t[]){0, 3, 0, 5})};
    n = node(HC_OPK_PAD, 2, wins, 1, 1, &wrap);
    CHECK(infer(n, &e) == HC_ERR_UNSUPPORTED && strstr(e.msg, "mode 'wrap'"));
    new_graph(19);
    q = input("q", HC_F32, 2, (int64_t[]){1, 4});
    wins[0] = q, wins[1] = ints("wp", 4, (int64_t[]){0, 3, 0, 5});
    n = node(HC_OPK_PAD, 2, wins, 1, 1, &wrap);
    c = run(n, (void *[]){iota_f(4, 1)});
    float ww[12] = {2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1};
    CHECK(shape_is(n->outputs[0], 2, (int64_t[]){1, 12}));
    if (c) CHECK(memcmp(c->out[0], ww, sizeof ww) == 0);

    /* SpaceToDepth-28 mode CRD undoes DepthToSpace CRD; before 28 mode is not read */
    enum { C = 8, H = 2, W = 3, B = 2 };
    float *xv = iota_f(C * H * W, 0);
    for (int opset = 13; opset <= 28; opset += 15) {
        new_graph(opset);
        hc_tensor *x = input("x", HC_F32, 4, (int64_t[]){1, C, H, W});
        hc_attr at[2] = {attr_i("blocksize", B), attr_s("mode", "CRD")};
        tcase *d = run(node(HC_OPK_DEPTH_TO_SPACE, 1, &x, 1, 2, at), (void *[]){xv});
        hc_tensor *s = input("s", HC_F32, 4, (int64_t[]){1, C / 4, H * B, W * B});
        n = node(HC_OPK_SPACE_TO_DEPTH, 1, &s, 1, 2, at);
        c = d ? run(n, (void *[]){d->out[0]}) : NULL;
        bool back = c && memcmp(c->out[0], xv, sizeof(float) * C * H * W) == 0;
        CHECK_MSG(back == (opset == 28), "SpaceToDepth CRD at opset %d", opset);
    }
}

/* ---- Slice ------------------------------------------------------------------------------ */
static void test_slice(void) {
    new_graph(13);
    hc_tensor *x = input("x", HC_F32, 2, (int64_t[]){3, 5});
    /* reversed columns (huge negative end clamps to before the first), rows from 1 on */
    hc_tensor *ins[5] = {x, ints("st", 2, (int64_t[]){-1, 1}),
                         ints("en", 2, (int64_t[]){INT64_MIN, INT64_MAX}),
                         ints("ax", 2, (int64_t[]){1, 0}), ints("sp", 2, (int64_t[]){-2, 1})};
    hc_node *n = node(HC_OPK_SLICE, 5, ins, 1, 0, NULL);
    tcase *c = run(n, (void *[]){iota_f(15, 0)});
    CHECK(shape_is(n->outputs[0], 2, (int64_t[]){2, 3}));
    if (c) {
        const float *y = c->out[0];
        float want[6] = {9, 7, 5, 14, 12, 10};
        CHECK(memcmp(y, want, sizeof want) == 0);
    }
    /* empty result */
    hc_tensor *ins2[3] = {x, ints("s2", 1, (int64_t[]){4}), ints("e2", 1, (int64_t[]){1})};
    n = node(HC_OPK_SLICE, 3, ins2, 1, 0, NULL);
    hc_error e = {0};
    CHECK(infer(n, &e) == HC_OK && shape_is(n->outputs[0], 2, (int64_t[]){0, 5}));
    /* a huge step takes the first element only */
    hc_tensor *ins3[5] = {x, ints("s3", 1, (int64_t[]){0}), ints("e3", 1, (int64_t[]){INT64_MAX}),
                          ints("a3", 1, (int64_t[]){1}), ints("p3", 1, (int64_t[]){INT64_MAX})};
    n = node(HC_OPK_SLICE, 5, ins3, 1, 0, NULL);
    CHECK(infer(n, &e) == HC_OK && shape_is(n->outputs[0], 2, (int64_t[]){3, 1}));
    /* opset 9: attributes */
    new_graph(9);
    x = input("x", HC_F32, 2, (int64_t[]){3, 5});
    hc_attr at[3] = {attr_is("starts", 1, (int64_t[]){1}), attr_is("ends", 1, (int64_t[]){-1}),
                     attr_is("axes", 1, (int64_t[]){1})};
    n = node(HC_OPK_SLICE, 1, &x, 1, 3, at);
    c = run(n, (void *[]){iota_f(15, 0)});
    CHECK(shape_is(n->outputs[0], 2, (int64_t[]){3, 3}));
    if (c) CHECK(((float *)c->out[0])[0] == 1 && ((float *)c->out[0])[8] == 13);
}

/* ---- gathers and scatters ---------------------------------------------------------------- */
static void test_gather(void) {
    new_graph(13);
    hc_tensor *x = input("x", HC_F32, 2, (int64_t[]){3, 4});
    hc_tensor *ind = input("i", HC_I64, 2, (int64_t[]){2, 2});
    hc_attr ax = attr_i("axis", 1);
    hc_node *n = node(HC_OPK_GATHER, 2, (hc_tensor *[]){x, ind}, 1, 1, &ax);
    int64_t iv[4] = {0, -1, 2, 1};
    tcase *c = run(n, (void *[]){iota_f(12, 0), iv});
    CHECK(shape_is(n->outputs[0], 3, (int64_t[]){3, 2, 2}));
    if (c) {
        const float *y = c->out[0];
        bool ok = true;
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 4; k++) ok &= y[r * 4 + k] == r * 4 + (iv[k] + 4) % 4;
        CHECK(ok);
    }

    hc_tensor *i32 = input("j", HC_I32, 2, (int64_t[]){2, 4});
    hc_attr ax0 = attr_i("axis", 0);
    n = node(HC_OPK_GATHER_ELEMENTS, 2, (hc_tensor *[]){x, i32}, 1, 1, &ax0);
    int32_t jv[8] = {2, 0, -1, 1, 0, 0, 1, 2};
    c = run(n, (void *[]){iota_f(12, 0), jv});
    if (c) {
        const float *y = c->out[0];
        bool ok = true;
        for (int r = 0; r < 2; r++)
            for (int k = 0; k < 4; k++) ok &= y[r * 4 + k] == ((jv[r * 4 + k] + 3) % 3) * 4 + k;
        CHECK(ok);
    }

    /* GatherND with batch_dims = 1: data [2, 3, 2], indices [2, 1, 1] -> [2, 1, 2] */
    hc_tensor *d = input("d", HC_F32, 3, (int64_t[]){2, 3, 2});
    hc_tensor *gi = input("gi", HC_I64, 3, (int64_t[]){2, 1, 1});
    hc_attr bd = attr_i("batch_dims", 1);
    n = node(HC_OPK_GATHER_ND, 2, (hc_tensor *[]){d, gi}, 1, 1, &bd);
    c = run(n, (void *[]){iota_f(12, 0), (int64_t[]){2, -3}});
    CHECK(shape_is(n->outputs[0], 3, (int64_t[]){2, 1, 2}));
    if (c) {
        const float *y = c->out[0];
        CHECK(y[0] == 4 && y[1] == 5 && y[2] == 6 && y[3] == 7);
    }
}

static void test_scatter(void) {
    new_graph(16);
    hc_tensor *x = input("x", HC_F32, 2, (int64_t[]){3, 3});
    hc_tensor *ind = input("i", HC_I64, 2, (int64_t[]){2, 2});
    hc_tensor *u = input("u", HC_F32, 2, (int64_t[]){2, 2});
    int64_t iv[4] = {1, -1, 1, 0}; /* row 0: cols 1, 2; row 1: col 1 and col 0 */
    float uv[4] = {10, 20, 30, 40};
    const char *reds[3] = {"none", "add", "mul"};
    for (int r = 0; r < 3; r++) {
        hc_attr at[2] = {attr_i("axis", 1), attr_s("reduction", reds[r])};
        hc_node *n = node(HC_OPK_SCATTER_ELEMENTS, 3, (hc_tensor *[]){x, ind, u}, 1, 2, at);
        float *xv = iota_f(9, 1);
        tcase *c = run(n, (void *[]){xv, iv, uv});
        if (!c) continue;
        float want[9];
        memcpy(want, xv, sizeof want);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                float *w = &want[i * 3 + (iv[i * 2 + j] + 3) % 3];
                *w = r == 0 ? uv[i * 2 + j] : r == 1 ? *w + uv[i * 2 + j] : *w * uv[i * 2 + j];
            }
        CHECK_MSG(memcmp(c->out[0], want, sizeof want) == 0, "ScatterElements %s", reds[r]);
    }

    /* ScatterND: indices [2, 1] pick rows of data [4, 2]; duplicates accumulate */
    hc_tensor *d = input("d", HC_F32, 2, (int64_t[]){4, 2});
    hc_tensor *ni = input("ni", HC_I64, 2, (int64_t[]){3, 1});
    hc_tensor *nu = input("nu", HC_F32, 2, (int64_t[]){3, 2});
    int64_t niv[3] = {-1, 0, 3};
    float nuv[6] = {2, 3, 4, 5, 6, 7};
    for (int r = 0; r < 3; r++) {
        hc_attr at = attr_s("reduction", reds[r]);
        hc_node *n = node(HC_OPK_SCATTER_ND, 3, (hc_tensor *[]){d, ni, nu}, 1, 1, &at);
        float *dv = iota_f(8, 1);
        tcase *c = run(n, (void *[]){dv, niv, nuv});
        if (!c) continue;
        float want[8];
        memcpy(want, dv, sizeof want);
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < 2; j++) {
                float *w = &want[((niv[k] + 4) % 4) * 2 + j], v = nuv[k * 2 + j];
                *w = r == 0 ? v : r == 1 ? *w + v : *w * v;
            }
        CHECK_MSG(memcmp(c->out[0], want, sizeof want) == 0, "ScatterND %s", reds[r]);
    }
}

/* ---- Expand, Tile, Pad ------------------------------------------------------------------- */
static void test_expand_tile_pad(void) {
    new_graph(13);
    hc_tensor *x = input("x", HC_F32, 2, (int64_t[]){3, 1});
    hc_node *n = node(HC_OPK_EXPAND, 2, (hc_tensor *[]){x, ints("s", 3, (int64_t[]){2, 1, 4})},
                      1, 0, NULL);
    tcase *c = run(n, (void *[]){iota_f(3, 0)});
    CHECK(shape_is(n->outputs[0], 3, (int64_t[]){2, 3, 4}));
    if (c) CHECK(((float *)c->out[0])[23] == 2 && ((float *)c->out[0])[5] == 1);

    hc_tensor *y = input("y", HC_F32, 2, (int64_t[]){2, 3});
    n = node(HC_OPK_TILE, 2, (hc_tensor *[]){y, ints("r", 2, (int64_t[]){2, 2})}, 1, 0, NULL);
    c = run(n, (void *[]){iota_f(6, 0)});
    CHECK(shape_is(n->outputs[0], 2, (int64_t[]){4, 6}));
    if (c) {
        bool ok = true;
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 6; j++)
                ok &= ((float *)c->out[0])[i * 6 + j] == (i % 2) * 3 + j % 3;
        CHECK(ok);
    }

    /* Pad [1, 4] by 3 before and 1 after along dim 1 (rows unpadded) */
    hc_tensor *p = input("p", HC_F32, 2, (int64_t[]){1, 4});
    float pv[4] = {1, 2, 3, 4};
    const char *modes[3] = {"constant", "reflect", "edge"};
    float want[3][8] = {
        {7, 7, 7, 1, 2, 3, 4, 7}, {4, 3, 2, 1, 2, 3, 4, 3}, {1, 1, 1, 1, 2, 3, 4, 4}};
    float cv = 7;
    for (int m = 0; m < 3; m++) {
        hc_attr at = attr_s("mode", modes[m]);
        hc_tensor *ins[3] = {p, ints("pads", 4, (int64_t[]){0, 3, 0, 1}),
                             scalar("cv", HC_F32, &cv)};
        n = node(HC_OPK_PAD, 3, ins, 1, 1, &at);
        c = run(n, (void *[]){pv});
        CHECK(shape_is(n->outputs[0], 2, (int64_t[]){1, 8}));
        if (c) CHECK_MSG(memcmp(c->out[0], want[m], sizeof want[m]) == 0, "Pad %s", modes[m]);
    }
    /* opset 7: pads and value are attributes; negative pads crop */
    new_graph(7);
    p = input("p", HC_F32, 2, (int64_t[]){1, 4});
    hc_attr at[2] = {attr_is("pads", 4, (int64_t[]){0, -1, 0, 2}),
                     {.name = "value", .kind = HC_ATTR_FLOAT, .f = -1}};
    n = node(HC_OPK_PAD, 1, &p, 1, 2, at);
    c = run(n, (void *[]){pv});
    float w7[5] = {2, 3, 4, -1, -1};
    if (c) CHECK(memcmp(c->out[0], w7, sizeof w7) == 0);
}

/* ---- DepthToSpace / SpaceToDepth ---------------------------------------------------------- */
static void test_depth_space(void) {
    new_graph(13);
    enum { N = 1, C = 8, H = 2, W = 3, B = 2 };
    hc_tensor *x = input("x", HC_F32, 4, (int64_t[]){N, C, H, W});
    float *xv = iota_f(N * C * H * W, 0);
    for (int crd = 0; crd < 2; crd++) {
        hc_attr at[2] = {attr_i("blocksize", B), attr_s("mode", crd ? "CRD" : "DCR")};
        hc_node *n = node(HC_OPK_DEPTH_TO_SPACE, 1, &x, 1, 2, at);
        tcase *c = run(n, (void *[]){xv});
        CHECK(shape_is(n->outputs[0], 4, (int64_t[]){N, C / 4, H * B, W * B}));
        if (!c) continue;
        /* the spec's reshape-transpose-reshape, written out as loops */
        bool ok = true;
        const float *y = c->out[0];
        for (int b1 = 0; b1 < B; b1++)
            for (int b2 = 0; b2 < B; b2++)
                for (int cc = 0; cc < C / 4; cc++)
                    for (int h = 0; h < H; h++)
                        for (int w = 0; w < W; w++) {
                            int ch = crd ? cc * B * B + b1 * B + b2 : (b1 * B + b2) * (C / 4) + cc;
                            float v = xv[(ch * H + h) * W + w];
                            ok &= y[(cc * H * B + h * B + b1) * W * B + w * B + b2] == v;
                        }
        CHECK_MSG(ok, "DepthToSpace %s", crd ? "CRD" : "DCR");
    }
    /* SpaceToDepth undoes DepthToSpace DCR */
    hc_tensor *s = input("s", HC_F32, 4, (int64_t[]){N, C / 4, H * B, W * B});
    hc_attr bs = attr_i("blocksize", B);
    hc_node *n = node(HC_OPK_SPACE_TO_DEPTH, 1, &s, 1, 1, &bs);
    tcase *d2s = &cases[ncases - 2]; /* the DCR case */
    tcase *c = run(n, (void *[]){d2s->out[0]});
    CHECK(shape_is(n->outputs[0], 4, (int64_t[]){N, C, H, W}));
    if (c) CHECK(memcmp(c->out[0], xv, sizeof(float) * N * C * H * W) == 0);
}

/* ---- Trilu, OneHot, EyeLike --------------------------------------------------------------- */
static void test_masks(void) {
    new_graph(14);
    hc_tensor *x = input("x", HC_F32, 2, (int64_t[]){3, 4});
    int64_t k = -1;
    for (int up = 0; up < 2; up++) {
        hc_attr at = attr_i("upper", up);
        hc_node *n = node(HC_OPK_TRILU, 2, (hc_tensor *[]){x, scalar("k", HC_I64, &k)}, 1, 1, &at);
        tcase *c = run(n, (void *[]){iota_f(12, 1)});
        if (!c) continue;
        bool ok = true;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) {
                bool keep = up ? j - i >= k : j - i <= k;
                ok &= ((float *)c->out[0])[i * 4 + j] == (keep ? i * 4 + j + 1 : 0);
            }
        CHECK_MSG(ok, "Trilu upper=%d", up);
    }

    hc_tensor *ind = input("ind", HC_I64, 1, (int64_t[]){3});
    hc_tensor *vals = input("vals", HC_I32, 1, (int64_t[]){2});
    float depth = 4;
    hc_attr ax = attr_i("axis", 0);
    hc_node *n = node(HC_OPK_ONE_HOT, 3, (hc_tensor *[]){ind, scalar("d", HC_F32, &depth), vals},
                      1, 1, &ax);
    int64_t iv[3] = {1, -1, 7};
    tcase *c = run(n, (void *[]){iv, (int32_t[]){-2, 5}});
    CHECK(shape_is(n->outputs[0], 2, (int64_t[]){4, 3}) && n->outputs[0]->dtype == HC_I32);
    if (c) {
        const int32_t *y = c->out[0];
        bool ok = true;
        for (int d = 0; d < 4; d++)
            for (int i = 0; i < 3; i++)
                ok &= y[d * 3 + i] == ((iv[i] + 4) % 4 == d && iv[i] < 4 ? 5 : -2);
        CHECK(ok);
    }

    hc_attr at[2] = {attr_i("k", 1), attr_i("dtype", 6)};
    n = node(HC_OPK_EYE_LIKE, 1, &x, 1, 2, at);
    c = run(n, (void *[]){iota_f(12, 0)});
    CHECK(n->outputs[0]->dtype == HC_I32);
    if (c) {
        const int32_t *y = c->out[0];
        CHECK(y[1] == 1 && y[6] == 1 && y[11] == 1 && y[0] == 0 && y[5] == 0 && y[3] == 0);
    }
}

/* ---- Resize / Upsample -------------------------------------------------------------------- */
/* Linear interpolation of row v (length in) at source coordinate s, edges clamped. */
static double lerp_at(const float *v, int in, double s) {
    double f = floor(s), r = s - f;
    int i0 = (int)f, i1 = i0 + 1;
    i0 = i0 < 0 ? 0 : i0 >= in ? in - 1 : i0;
    i1 = i1 < 0 ? 0 : i1 >= in ? in - 1 : i1;
    return (1 - r) * v[i0] + r * v[i1];
}

static void test_resize(void) {
    new_graph(13);
    hc_tensor *x = input("x", HC_F32, 4, (int64_t[]){1, 1, 2, 3});
    float xv[6] = {1, 2, 4, 8, 16, 32};
    float sc[4] = {1, 1, 2, 1.5f};
    hc_tensor *scales = hc_graph_constant(G, "sc", HC_F32, 1, (int64_t[]){4}, sc);
    /* linear, half_pixel: separable, so rows then columns */
    hc_attr at = attr_s("mode", "linear");
    hc_node *n = node(HC_OPK_RESIZE, 3, (hc_tensor *[]){x, NULL, scales}, 1, 1, &at);
    tcase *c = run(n, (void *[]){xv});
    CHECK(shape_is(n->outputs[0], 4, (int64_t[]){1, 1, 4, 4}));
    if (c) {
        bool ok = true;
        for (int oy = 0; oy < 4; oy++) {
            double sy = (oy + 0.5) / 2 - 0.5;
            float rows[2][3];
            for (int r = 0; r < 2; r++)
                for (int j = 0; j < 3; j++) rows[r][j] = xv[r * 3 + j];
            for (int ox = 0; ox < 4; ox++) {
                double sx = (ox + 0.5) / 1.5 - 0.5;
                double a0 = lerp_at(rows[0], 3, sx), a1 = lerp_at(rows[1], 3, sx);
                float col[2] = {(float)a0, (float)a1};
                double want = lerp_at(col, 2, sy);
                ok &= fabs(((float *)c->out[0])[oy * 4 + ox] - want) < 1e-4;
            }
        }
        CHECK(ok);
    }
    /* nearest from sizes, asymmetric + floor: out[i] = x[floor(i * in / out)] */
    hc_tensor *sizes = ints("sz", 4, (int64_t[]){1, 1, 3, 5});
    hc_attr at2[3] = {attr_s("mode", "nearest"), attr_s("coordinate_transformation_mode",
                                                        "asymmetric"),
                      attr_s("nearest_mode", "floor")};
    n = node(HC_OPK_RESIZE, 4, (hc_tensor *[]){x, NULL, NULL, sizes}, 1, 3, at2);
    c = run(n, (void *[]){xv});
    CHECK(shape_is(n->outputs[0], 4, (int64_t[]){1, 1, 3, 5}));
    if (c) {
        bool ok = true;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 5; j++)
                ok &= ((float *)c->out[0])[i * 5 + j] == xv[(i * 2 / 3) * 3 + j * 3 / 5];
        CHECK(ok);
    }
    /* invalid and unsupported requests */
    hc_error e = {0};
    hc_attr bad = attr_s("mode", "lanczos");
    n = node(HC_OPK_RESIZE, 3, (hc_tensor *[]){x, NULL, scales}, 1, 1, &bad);
    CHECK(infer(n, &e) == HC_ERR_UNSUPPORTED && strstr(e.msg, "lanczos"));
    n = node(HC_OPK_RESIZE, 4, (hc_tensor *[]){x, NULL, scales, sizes}, 1, 0, NULL);
    CHECK(infer(n, &e) == HC_ERR_INVALID && strstr(e.msg, "exactly one"));
    /* cubic with align_corners is supported; at integer source coordinates it copies */
    hc_attr cub[2] = {attr_s("mode", "cubic"),
                      attr_s("coordinate_transformation_mode", "align_corners")};
    hc_tensor *x1 = input("x1", HC_F32, 1, (int64_t[]){4});
    n = node(HC_OPK_RESIZE, 4, (hc_tensor *[]){x1, NULL, NULL, ints("s7", 1, (int64_t[]){7})},
             1, 2, cub);
    float x1v[4] = {3, -1, 2, 5};
    c = run(n, (void *[]){x1v});
    if (c) {
        const float *y = c->out[0];
        CHECK(y[0] == 3 && y[2] == -1 && y[4] == 2 && y[6] == 5);
    }

    /* Upsample (opset 9: scales input), nearest: out[i] = x[floor(i / scale)] */
    new_graph(9);
    x = input("x", HC_F32, 2, (int64_t[]){2, 3});
    float us[2] = {2, 2};
    scales = hc_graph_constant(G, "sc", HC_F32, 1, (int64_t[]){2}, us);
    n = node(HC_OPK_UPSAMPLE, 2, (hc_tensor *[]){x, scales}, 1, 0, NULL);
    c = run(n, (void *[]){xv});
    CHECK(shape_is(n->outputs[0], 2, (int64_t[]){4, 6}));
    if (c) {
        bool ok = true;
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 6; j++)
                ok &= ((float *)c->out[0])[i * 6 + j] == xv[i / 2 * 3 + j / 2];
        CHECK(ok);
    }
}

/* ---- constants, Shape, Cast, Range, Dropout ---------------------------------------------- */
static void test_constants(void) {
    new_graph(15);
    hc_tensor *x = input("x", HC_F32, 4, (int64_t[]){2, 3, 5, 7});
    hc_attr se[2] = {attr_i("start", 1), attr_i("end", -1)};
    hc_node *n = node(HC_OPK_SHAPE, 1, &x, 1, 2, se);
    float *xv = iota_f(210, 0);
    tcase *c = run(n, (void *[]){xv});
    CHECK(shape_is(n->outputs[0], 1, (int64_t[]){2}) && n->outputs[0]->dtype == HC_I64);
    if (c) CHECK(((int64_t *)c->out[0])[0] == 3 && ((int64_t *)c->out[0])[1] == 5);
    n = node(HC_OPK_SIZE, 1, &x, 1, 0, NULL);
    c = run(n, (void *[]){xv});
    if (c) CHECK(n->outputs[0]->ndim == 0 && *(int64_t *)c->out[0] == 210);

    hc_attr vi = attr_is("value_ints", 3, (int64_t[]){4, -5, INT64_MAX - 1});
    n = node(HC_OPK_CONSTANT, 0, NULL, 1, 1, &vi);
    c = run(n, NULL);
    if (c) CHECK(((int64_t *)c->out[0])[1] == -5 && ((int64_t *)c->out[0])[2] == INT64_MAX - 1);
    double fv[5] = {0.5, 1.5, -2.25, 3, 9};
    hc_attr vf = {.name = "value_floats", .kind = HC_ATTR_FLOATS, .n = 5, .floats = fv};
    n = node(HC_OPK_CONSTANT, 0, NULL, 1, 1, &vf);
    c = run(n, NULL);
    if (c) {
        bool ok = true;
        for (int i = 0; i < 5; i++) ok &= ((float *)c->out[0])[i] == (float)fv[i];
        CHECK(ok);
    }

    int32_t seven = 7;
    hc_tensor *vt = hc_graph_constant(G, "v", HC_I32, 1, (int64_t[]){1}, &seven);
    hc_attr va = {.name = "value", .kind = HC_ATTR_TENSOR, .t = vt};
    n = node(HC_OPK_CONSTANT_OF_SHAPE, 1, (hc_tensor *[]){ints("s", 2, (int64_t[]){2, 3})}, 1, 1,
             &va);
    c = run(n, NULL);
    CHECK(shape_is(n->outputs[0], 2, (int64_t[]){2, 3}) && n->outputs[0]->dtype == HC_I32);
    if (c) CHECK(((int32_t *)c->out[0])[5] == 7);

    float r0 = 1, r1 = -2, r2 = -0.75f;
    n = node(HC_OPK_RANGE, 3, (hc_tensor *[]){scalar("a", HC_F32, &r0), scalar("b", HC_F32, &r1),
                                              scalar("c", HC_F32, &r2)}, 1, 0, NULL);
    c = run(n, NULL);
    CHECK(shape_is(n->outputs[0], 1, (int64_t[]){4})); /* ceil(3 / 0.75) */
    if (c) CHECK(((float *)c->out[0])[3] == -1.25f);

    /* Hann, Hamming and Blackman windows: periodic and symmetric, a prime size, size 1
     * (symmetric: the single value a0 - a1 + a2) and 0, double output */
    {
        static const hc_op_kind wops[3] = {HC_OPK_HANN_WINDOW, HC_OPK_HAMMING_WINDOW,
                                           HC_OPK_BLACKMAN_WINDOW};
        static const double coef[3][3] = {{0.5, 0.5, 0}, {25.0 / 46, 21.0 / 46, 0}, {0.42, 0.5, 0.08}};
        for (int k = 0; k < 3; k++)
            for (int periodic = 0; periodic < 2; periodic++)
                for (int64_t size = 0; size <= 7; size += size == 1 ? 6 : 1) {
                    hc_attr wa[2] = {attr_i("periodic", periodic), attr_i("output_datatype", 11)};
                    n = node(wops[k], 1, (hc_tensor *[]){scalar("sz", HC_I64, &size)}, 1, 2, wa);
                    c = run(n, NULL);
                    CHECK(shape_is(n->outputs[0], 1, &size) && n->outputs[0]->dtype == HC_F64);
                    double np = periodic ? (double)size : (double)size - 1;
                    for (int64_t i = 0; c && i < size; i++) {
                        double th = np > 0 ? 2 * M_PI * (double)i / np : 0;
                        double want = coef[k][0] - coef[k][1] * cos(th) + coef[k][2] * cos(2 * th);
                        double got = ((const double *)c->out[0])[i];
                        CHECK_MSG(fabs(got - want) < 1e-12, "window %d periodic %d size %lld [%lld]: "
                                  "%g, want %g", k, periodic, (long long)size, (long long)i, got, want);
                    }
                }
        int64_t neg = -3;
        hc_error we = {0};
        n = node(HC_OPK_HANN_WINDOW, 1, (hc_tensor *[]){scalar("sz", HC_I64, &neg)}, 1, 0, NULL);
        CHECK(infer(n, &we) == HC_ERR_INVALID && strstr(we.msg, "size -3"));
    }

    /* Cast truncates toward zero; to bool is != 0 */
    hc_tensor *f = input("f", HC_F32, 1, (int64_t[]){4});
    float fvals[4] = {-2.7f, 0.0f, 3.9f, 0.25f};
    hc_attr to = attr_i("to", 6);
    n = node(HC_OPK_CAST, 1, &f, 1, 1, &to);
    c = run(n, (void *[]){fvals});
    if (c) {
        const int32_t *y = c->out[0];
        CHECK(y[0] == -2 && y[1] == 0 && y[2] == 3 && y[3] == 0);
    }
    to.i = 9;
    n = node(HC_OPK_CAST, 1, &f, 1, 1, &to);
    c = run(n, (void *[]){fvals});
    if (c) {
        const uint8_t *y = c->out[0];
        CHECK(y[0] == 1 && y[1] == 0 && y[2] == 1 && y[3] == 1);
    }
    /* to bfloat16: the mantissa is truncated (ONNX 1.12 reference), not rounded */
    float bv[4] = {1.005859375f, -2.9f, 0.81640625f, 3.0e38f};
    to.i = 16;
    n = node(HC_OPK_CAST, 1, &f, 1, 1, &to);
    c = run(n, (void *[]){bv});
    if (c) {
        bool ok = true;
        for (int i = 0; i < 4; i++) {
            uint32_t u;
            memcpy(&u, &bv[i], 4);
            ok &= ((uint16_t *)c->out[0])[i] == (uint16_t)(u >> 16);
        }
        CHECK(ok);
    }
    hc_error e = {0};
    to.i = 8; /* string */
    n = node(HC_OPK_CAST, 1, &f, 1, 1, &to);
    CHECK(infer(n, &e) == HC_ERR_UNSUPPORTED && strstr(e.msg, "string"));
    hc_tensor *like = input("like", HC_F64, 0, NULL);
    n = node(HC_OPK_CAST_LIKE, 2, (hc_tensor *[]){f, like}, 1, 0, NULL);
    c = run(n, (void *[]){fvals, &fv[0]});
    if (c) CHECK(n->outputs[0]->dtype == HC_F64 && ((double *)c->out[0])[2] == (double)3.9f);

    /* Dropout in inference: a copy and an all-true mask; training is refused */
    n = node(HC_OPK_DROPOUT, 1, &f, 2, 0, NULL);
    c = run(n, (void *[]){fvals});
    CHECK(n->outputs[1]->dtype == HC_BOOL);
    if (c) CHECK(memcmp(c->out[0], fvals, sizeof fvals) == 0 && ((uint8_t *)c->out[1])[3] == 1);
    bool tr = true;
    float ratio = 0.5f;
    n = node(HC_OPK_DROPOUT, 3, (hc_tensor *[]){f, scalar("r", HC_F32, &ratio),
                                                scalar("t", HC_BOOL, &tr)}, 1, 0, NULL);
    CHECK(infer(n, &e) == HC_ERR_UNSUPPORTED && strstr(e.msg, "training_mode"));
    ratio = 0; /* training that drops nothing is still the identity */
    n = node(HC_OPK_DROPOUT, 3, (hc_tensor *[]){f, scalar("r0", HC_F32, &ratio),
                                                scalar("t0", HC_BOOL, &tr)}, 1, 0, NULL);
    CHECK(infer(n, &e) == HC_OK);
    n = node(HC_OPK_IDENTITY, 1, &x, 1, 0, NULL);
    CHECK(infer(n, &e) == HC_OK && shape_is(n->outputs[0], 4, (int64_t[]){2, 3, 5, 7}));
}

/* ---- awkward shapes, only checked compiled vs interpreted --------------------------------- */
static float *rnd_f(hc_rng *r, int64_t n) {
    float *p = HC_NEW_ARRAY(&A, float, n);
    for (int64_t i = 0; i < n; i++) p[i] = (float)hc_rng_uniform(r, -4, 4);
    return p;
}

static int64_t *rnd_idx(hc_rng *r, int64_t n, int64_t dim) {
    int64_t *p = HC_NEW_ARRAY(&A, int64_t, n);
    for (int64_t i = 0; i < n; i++) p[i] = (int64_t)(hc_rng_next(r) % (uint64_t)(2 * dim)) - dim;
    return p;
}

static int first_awkward; /* cases before it are only interpreted (compile time) */

static void awkward_cases(void) {
    hc_rng r = {42};
    first_awkward = ncases;
    new_graph(13);
    hc_tensor *x = input("x", HC_F32, 3, (int64_t[]){7, 1, 13});
    float *xv = rnd_f(&r, 91);
    run(node(HC_OPK_TRANSPOSE, 1, &x, 1, 1, (hc_attr[]){attr_is("perm", 3, (int64_t[]){2, 0, 1})}),
        (void *[]){xv});
    hc_tensor *sl[5] = {x, ints("a", 2, (int64_t[]){-2, 11}), ints("b", 2, (int64_t[]){-100, 0}),
                        ints("c", 2, (int64_t[]){0, 2}), ints("d", 2, (int64_t[]){-3, -4})};
    run(node(HC_OPK_SLICE, 5, sl, 1, 0, NULL), (void *[]){xv});
    hc_tensor *gi = input("gi", HC_I64, 1, (int64_t[]){5});
    run(node(HC_OPK_GATHER, 2, (hc_tensor *[]){x, gi}, 1, 1, (hc_attr[]){attr_i("axis", -1)}),
        (void *[]){xv, rnd_idx(&r, 5, 13)});
    run(node(HC_OPK_TILE, 2, (hc_tensor *[]){x, ints("t", 3, (int64_t[]){1, 3, 2})}, 1, 0, NULL),
        (void *[]){xv});
    run(node(HC_OPK_PAD, 2, (hc_tensor *[]){x, ints("p", 6, (int64_t[]){2, 0, 5, 3, 0, 17})}, 1,
             1, (hc_attr[]){attr_s("mode", "reflect")}),
        (void *[]){xv});
    run(node(HC_OPK_SPLIT, 1, &x, 7, 1, (hc_attr[]){attr_i("axis", 0)}), (void *[]){xv});
    /* gathers / scatters with random (wrapping) indices */
    hc_tensor *ge = input("ge", HC_I64, 3, (int64_t[]){5, 1, 13});
    run(node(HC_OPK_GATHER_ELEMENTS, 2, (hc_tensor *[]){x, ge}, 1, 0, NULL),
        (void *[]){xv, rnd_idx(&r, 65, 7)});
    /* ReverseSequence over time axis 0 with lengths 0..7 (and 9: clamped) for 1 batch,
     * and over time axis 1 */
    hc_tensor *rl = input("rl", HC_I64, 1, (int64_t[]){1});
    static int64_t rlv[1] = {5};
    run(node(HC_OPK_REVERSE_SEQUENCE, 2, (hc_tensor *[]){x, rl}, 1, 2,
             (hc_attr[]){attr_i("time_axis", 0), attr_i("batch_axis", 1)}),
        (void *[]){xv, rlv});
    hc_tensor *rx = input("rx", HC_F32, 3, (int64_t[]){3, 7, 2});
    hc_tensor *rl3 = input("rl3", HC_I64, 1, (int64_t[]){3});
    static int64_t rl3v[3] = {0, 7, 9};
    run(node(HC_OPK_REVERSE_SEQUENCE, 2, (hc_tensor *[]){rx, rl3}, 1, 2,
             (hc_attr[]){attr_i("time_axis", 1), attr_i("batch_axis", 0)}),
        (void *[]){rnd_f(&r, 42), rl3v});
    hc_tensor *sx = input("sx", HC_F32, 2, (int64_t[]){5, 11});
    hc_tensor *si = input("si", HC_I64, 2, (int64_t[]){3, 11});
    hc_tensor *su = input("su", HC_F32, 2, (int64_t[]){3, 11});
    run(node(HC_OPK_SCATTER_ELEMENTS, 3, (hc_tensor *[]){sx, si, su}, 1, 1,
             (hc_attr[]){attr_s("reduction", "add")}),
        (void *[]){rnd_f(&r, 55), rnd_idx(&r, 33, 5), rnd_f(&r, 33)});
    hc_tensor *ni = input("ni", HC_I64, 3, (int64_t[]){2, 3, 2});
    hc_tensor *nu = input("nu", HC_F32, 2, (int64_t[]){2, 3});
    hc_tensor *nx = input("nx", HC_F32, 2, (int64_t[]){5, 11});
    /* distinct targets, so that "none" is deterministic */
    int64_t niv[12] = {0, 1, 4, -1, 2, 3, -5, 0, 1, 10, 3, 3};
    run(node(HC_OPK_SCATTER_ND, 3, (hc_tensor *[]){nx, ni, nu}, 1, 0, NULL),
        (void *[]){rnd_f(&r, 55), niv, rnd_f(&r, 6)});
    /* Resize linear and cubic on a prime-sized image */
    hc_tensor *img = input("img", HC_F32, 4, (int64_t[]){1, 2, 5, 7});
    float *iv = rnd_f(&r, 70);
    run(node(HC_OPK_RESIZE, 4, (hc_tensor *[]){img, NULL, NULL,
                                               ints("sz", 4, (int64_t[]){1, 2, 3, 11})}, 1, 1,
             (hc_attr[]){attr_s("mode", "linear")}),
        (void *[]){iv});
    run(node(HC_OPK_RESIZE, 4, (hc_tensor *[]){img, NULL, NULL,
                                               ints("sz2", 4, (int64_t[]){1, 2, 9, 4})}, 1, 2,
             (hc_attr[]){attr_s("mode", "cubic"), attr_i("exclude_outside", 0)}),
        (void *[]){iv});
    hc_tensor *oi = input("oi", HC_I64, 2, (int64_t[]){3, 1});
    float depth = 5;
    hc_tensor *ov = input("ov", HC_F32, 1, (int64_t[]){2});
    run(node(HC_OPK_ONE_HOT, 3, (hc_tensor *[]){oi, scalar("dp", HC_F32, &depth), ov}, 1, 1,
             (hc_attr[]){attr_i("axis", 1)}),
        (void *[]){rnd_idx(&r, 3, 5), (float[]){0.5f, 2}});
    run(node(HC_OPK_CAST, 1, &x, 1, 1, (hc_attr[]){attr_i("to", 16)}), (void *[]){xv});
    /* a long concatenation (one empty input) stays a shallow expression */
    hc_tensor *parts[40];
    void *pv[40];
    for (int i = 0; i < 40; i++) {
        int64_t w = i == 17 ? 0 : i % 5 + 1;
        parts[i] = input(hc_arena_printf(&A, "c%d", i), HC_F32, 2, (int64_t[]){3, w});
        pv[i] = rnd_f(&r, 3 * w + 1);
    }
    tcase *c = run(node(HC_OPK_CONCAT, 40, parts, 1, 1, (hc_attr[]){attr_i("axis", 1)}), pv);
    if (c) {
        const float *y = c->out[0];
        int64_t total = 0, col = 0;
        bool ok = true;
        for (int i = 0; i < 40; i++) total += parts[i]->shape[1];
        for (int i = 0; i < 40; i++) {
            int64_t w = parts[i]->shape[1];
            for (int row = 0; row < 3; row++)
                for (int64_t j = 0; j < w; j++)
                    ok &= y[row * total + col + j] == ((float *)pv[i])[row * w + j];
            col += w;
        }
        CHECK(ok);
    }
    hc_tensor *dd = input("dd", HC_F32, 4, (int64_t[]){1, 9, 1, 7});
    run(node(HC_OPK_DEPTH_TO_SPACE, 1, &dd, 1, 2,
             (hc_attr[]){attr_i("blocksize", 3), attr_s("mode", "CRD")}),
        (void *[]){rnd_f(&r, 63)});
}

/* Schedule every awkward case into one module, compile it, run each kernel on the case's
 * inputs and compare with the interpreter's outputs. */
static void check_compiled(void) {
    const hc_target *tg = hc_target_host();
    int nf = ncases - first_awkward;
    hc_func **funcs = HC_NEW_ARRAY(&A, hc_func *, nf);
    for (int i = first_awkward; i < ncases; i++) {
        hc_error e = {0};
        cases[i].t->name = hc_arena_printf(&A, "case%d", i); /* unique kernel names */
        hc_func *f = funcs[i - first_awkward] = hc_auto_schedule(&A, cases[i].t, tg, &e);
        CHECK_MSG(f != NULL, "schedule case %d: %s", i, e.msg);
        if (!f) return;
    }
    char *src = hc_codegen_c(&A, hc_module_new(&A, "ops_shape_test", nf, funcs), tg);
    hc_jit_options opt = {.cflags = tg->cflags};
    hc_jit_lib *lib = NULL;
    hc_error e = {0};
    CHECK_MSG(hc_jit_build(src, &opt, &lib, &e) == HC_OK, "%s", e.msg);
    free(src);
    if (!lib) return;
    for (int i = first_awkward; i < ncases; i++) {
        const hc_task *t = cases[i].t;
        char sym[128];
        snprintf(sym, sizeof sym, "%s__packed", funcs[i - first_awkward]->name);
        hc_packed_fn fn = (hc_packed_fn)hc_jit_symbol(lib, sym);
        CHECK_MSG(fn != NULL, "missing %s", sym);
        if (!fn) continue;
        void *args[56];
        for (int k = 0; k < t->ninputs; k++) args[k] = cases[i].in[k];
        for (int k = 0; k < t->noutputs; k++) {
            args[t->ninputs + k] = hc_xmalloc(nbytes(t->outputs[k]));
            memset(args[t->ninputs + k], 0xA5, nbytes(t->outputs[k]));
        }
        fn(args);
        for (int k = 0; k < t->noutputs; k++) {
            const hc_tnode *o = t->outputs[k];
            size_t sz = nbytes(o) - 1;
            bool same = memcmp(args[t->ninputs + k], cases[i].out[k], sz) == 0;
            if (!same && o->dtype == HC_F32) { /* f32 interpolation may round differently */
                const float *p = args[t->ninputs + k], *q = cases[i].out[k];
                same = true;
                for (int64_t j = 0; j < hc_tnode_numel(o); j++)
                    same &= fabsf(p[j] - q[j]) <= 1e-5f * (1 + fabsf(q[j]));
            }
            CHECK_MSG(same, "case %d (%s) output %d differs from the interpreter", i,
                      o->name, k);
            free(args[t->ninputs + k]);
        }
    }
    hc_jit_close(lib);
}

int main(void) {
    hc_arena_init(&A);
    test_reshape();
    test_squeeze();
    test_transpose_concat_split();
    test_newer_versions();
    test_slice();
    test_gather();
    test_scatter();
    test_expand_tile_pad();
    test_depth_space();
    test_masks();
    test_resize();
    test_constants();
    awkward_cases();
    check_compiled();
    for (int i = 0; i < ncases; i++) {
        for (int k = 0; k < cases[i].t->ninputs; k++) free(cases[i].in[k]);
        for (int k = 0; k < cases[i].t->noutputs; k++) free(cases[i].out[k]);
    }
    for (int i = 0; i < ngraphs; i++) hc_graph_free(graphs[i]);
    hc_arena_free(&A);
    TEST_DONE();
}
