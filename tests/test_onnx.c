/* test_onnx.c — the ONNX importer on models built here with the generated protobuf-c code:
 * initializers of every dtype and data field, Constant nodes, attributes, external data
 * inside and outside the model's folder, the unsupported-operator listing, opsets,
 * symbolic dims, and damaged files (truncated, random bytes: clean errors, no crash). */
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/onnx.h"
#include "graph/ops/versions.h"
#include "passes/passes.h"
#include "onnx.pb-c.h"
#include "test.h"

static char tmpdir[256];
static hc_arena A; /* everything a test model is built from */

/* ---- building protos ------------------------------------------------------------ */
#define CAP 32 /* room for repeated fields: every test model is small */

static Onnx__TensorProto *tensor(const char *name, int dtype, int ndim, const int64_t *dims) {
    Onnx__TensorProto *t = HC_NEW(&A, Onnx__TensorProto);
    onnx__tensor_proto__init(t);
    t->name = hc_arena_strdup(&A, name);
    t->has_data_type = 1, t->data_type = dtype;
    t->n_dims = (size_t)ndim;
    t->dims = HC_NEW_ARRAY(&A, int64_t, ndim + 1);
    if (ndim) memcpy(t->dims, dims, sizeof(int64_t) * (size_t)ndim);
    return t;
}

static void raw(Onnx__TensorProto *t, const void *data, size_t n) {
    t->has_raw_data = 1;
    t->raw_data.len = n;
    t->raw_data.data = hc_arena_memdup(&A, data, n ? n : 1);
}

static Onnx__AttributeProto *attr(const char *name, int type) {
    Onnx__AttributeProto *a = HC_NEW(&A, Onnx__AttributeProto);
    onnx__attribute_proto__init(a);
    a->name = hc_arena_strdup(&A, name);
    a->has_type = 1, a->type = type;
    return a;
}

static Onnx__NodeProto *node(Onnx__GraphProto *g, const char *op, const char *name,
                             const char *ins, const char *outs) {
    Onnx__NodeProto *n = HC_NEW(&A, Onnx__NodeProto);
    onnx__node_proto__init(n);
    n->op_type = hc_arena_strdup(&A, op);
    n->name = hc_arena_strdup(&A, name);
    n->input = HC_NEW_ARRAY(&A, char *, CAP);
    n->output = HC_NEW_ARRAY(&A, char *, CAP);
    n->attribute = HC_NEW_ARRAY(&A, Onnx__AttributeProto *, CAP);
    /* "a,b,,c": comma-separated names; an empty one is an omitted optional value */
    const char *lists[2] = {ins, outs};
    for (int l = 0; l < 2; l++) {
        for (const char *p = lists[l]; p && *p;) {
            size_t len = strcspn(p, ",");
            char *s = hc_arena_alloc(&A, len + 1);
            memcpy(s, p, len);
            if (l == 0) n->input[n->n_input++] = s;
            else n->output[n->n_output++] = s;
            p += len + (p[len] == ',');
        }
    }
    g->node[g->n_node++] = n;
    return n;
}

/* A value info; a negative dim is symbolic ("N"). */
static Onnx__ValueInfoProto *value(const char *name, int elem, int ndim, const int64_t *dims) {
    Onnx__ValueInfoProto *v = HC_NEW(&A, Onnx__ValueInfoProto);
    onnx__value_info_proto__init(v);
    v->name = hc_arena_strdup(&A, name);
    Onnx__TypeProto *tp = HC_NEW(&A, Onnx__TypeProto);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = HC_NEW(&A, Onnx__TypeProto__Tensor);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1, tt->elem_type = elem;
    Onnx__TensorShapeProto *sp = HC_NEW(&A, Onnx__TensorShapeProto);
    onnx__tensor_shape_proto__init(sp);
    sp->dim = HC_NEW_ARRAY(&A, Onnx__TensorShapeProto__Dimension *, CAP);
    for (int i = 0; i < ndim; i++) {
        Onnx__TensorShapeProto__Dimension *d = HC_NEW(&A, Onnx__TensorShapeProto__Dimension);
        onnx__tensor_shape_proto__dimension__init(d);
        if (dims[i] >= 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[i];
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = hc_arena_strdup(&A, "N");
        }
        sp->dim[sp->n_dim++] = d;
    }
    tt->shape = sp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->type = tp;
    return v;
}

static Onnx__GraphProto *graph(void) {
    Onnx__GraphProto *g = HC_NEW(&A, Onnx__GraphProto);
    onnx__graph_proto__init(g);
    g->name = hc_arena_strdup(&A, "g");
    g->node = HC_NEW_ARRAY(&A, Onnx__NodeProto *, CAP);
    g->initializer = HC_NEW_ARRAY(&A, Onnx__TensorProto *, CAP);
    g->input = HC_NEW_ARRAY(&A, Onnx__ValueInfoProto *, CAP);
    g->output = HC_NEW_ARRAY(&A, Onnx__ValueInfoProto *, CAP);
    return g;
}

/* Serialize a model of graph g importing version versions[i] of domains[i] (malloc'ed
 * bytes). */
static uint8_t *pack_model_imports(Onnx__GraphProto *g, int n, const char *const *domains,
                                   const int64_t *versions, size_t *size) {
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    Onnx__OperatorSetIdProto op[4], *ops[4];
    HC_ASSERT(n <= 4);
    for (int i = 0; i < n; i++) {
        onnx__operator_set_id_proto__init(&op[i]);
        op[i].domain = (char *)domains[i];
        op[i].has_version = 1, op[i].version = versions[i];
        ops[i] = &op[i];
    }
    m.has_ir_version = 1, m.ir_version = 8;
    m.n_opset_import = (size_t)n, m.opset_import = ops;
    m.graph = g;
    *size = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(*size + 1);
    onnx__model_proto__pack(&m, buf);
    return buf;
}

/* Serialize a model of graph g at `opset` (malloc'ed bytes). */
static uint8_t *pack_model(Onnx__GraphProto *g, int64_t opset, size_t *size) {
    const char *dflt = "";
    return pack_model_imports(g, 1, &dflt, &opset, size);
}

static char *path_of(const char *rel) {
    return hc_arena_printf(&A, "%s/%s", tmpdir, rel);
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    HC_ASSERT(f);
    HC_ASSERT(fwrite(data, 1, n, f) == n || n == 0);
    fclose(f);
}

static const char *write_model(Onnx__GraphProto *g, int64_t opset, const char *rel) {
    size_t size;
    uint8_t *buf = pack_model(g, opset, &size);
    const char *p = path_of(rel);
    write_bytes(p, buf, size);
    free(buf);
    return p;
}

/* Load; on success the graph is returned (caller frees), else NULL with err set. */
static hc_graph *load(const char *path, hc_error *err) {
    hc_graph *g = NULL;
    memset(err, 0, sizeof *err);
    hc_status s = hc_onnx_load(path, &g, err);
    CHECK((s == HC_OK) == (g != NULL));
    CHECK(s == HC_OK || err->status == s);
    return g;
}

static bool has(const char *msg, const char *part) {
    bool ok = strstr(msg, part) != NULL;
    if (!ok) fprintf(stderr, "  message: %s\n  lacks: %s\n", msg, part);
    return ok;
}

static bool op_supported(const char *op) {
    hc_op_kind k = hc_op_from_onnx(op);
    return k != HC_OPK_COUNT && hc_op_get(k) != NULL;
}

/* ---- initializers of every dtype and data field ----------------------------------- */
static void add_output(Onnx__GraphProto *g, const char *name) {
    g->output[g->n_output++] = value(name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL);
}

static void test_initializers(void) {
    Onnx__GraphProto *g = graph();
    int64_t d23[2] = {2, 3}, d4[1] = {4}, d2[1] = {2};
    float f[6] = {1.5f, -2, 3, 4, 5, 6e10f};
    Onnx__TensorProto *t;
    t = tensor("f_raw", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, d23);
    raw(t, f, sizeof f);
    g->initializer[g->n_initializer++] = t;
    t = tensor("f_typed", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, d23);
    t->n_float_data = 6, t->float_data = f;
    g->initializer[g->n_initializer++] = t;
    int64_t i64[4] = {-1, 1ll << 40, 0, 7};
    t = tensor("i64", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, d4);
    t->n_int64_data = 4, t->int64_data = i64;
    g->initializer[g->n_initializer++] = t;
    int32_t i32s[4] = {-5, 200, 0x3c00, 1};
    static const int int32_types[] = {
        ONNX__TENSOR_PROTO__DATA_TYPE__INT32,   ONNX__TENSOR_PROTO__DATA_TYPE__INT8,
        ONNX__TENSOR_PROTO__DATA_TYPE__UINT8,   ONNX__TENSOR_PROTO__DATA_TYPE__INT16,
        ONNX__TENSOR_PROTO__DATA_TYPE__UINT16,  ONNX__TENSOR_PROTO__DATA_TYPE__BOOL,
        ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16};
    static const char *int32_names[] = {"i32", "i8", "u8", "i16", "u16", "b", "h", "bh"};
    for (size_t k = 0; k < HC_ARRAY_LEN(int32_types); k++) {
        t = tensor(int32_names[k], int32_types[k], 1, d4);
        t->n_int32_data = 4, t->int32_data = i32s;
        g->initializer[g->n_initializer++] = t;
    }
    uint64_t u64[2] = {~0ull, 3};
    t = tensor("u64", ONNX__TENSOR_PROTO__DATA_TYPE__UINT64, 1, d2);
    t->n_uint64_data = 2, t->uint64_data = u64;
    g->initializer[g->n_initializer++] = t;
    t = tensor("u32", ONNX__TENSOR_PROTO__DATA_TYPE__UINT32, 1, d2);
    t->n_uint64_data = 2, t->uint64_data = u64 + 1;
    t->n_uint64_data = 1, t->dims[0] = 1;
    g->initializer[g->n_initializer++] = t;
    double f64[2] = {0.1, -1e300};
    t = tensor("f64", ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, 1, d2);
    t->n_double_data = 2, t->double_data = f64;
    g->initializer[g->n_initializer++] = t;
    t = tensor("scalar", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL);
    raw(t, f, 4);
    g->initializer[g->n_initializer++] = t;
    int64_t d0[2] = {0, 3};
    t = tensor("empty", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, d0);
    g->initializer[g->n_initializer++] = t;
    /* a graph input that is also an initializer is a constant */
    g->input[g->n_input++] = value("f_raw", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, d23);
    g->input[g->n_input++] = value("x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, d23);
    add_output(g, "x");

    hc_error err;
    hc_graph *hg = load(write_model(g, 13, "init.onnx"), &err);
    CHECK_MSG(hg, "%s", err.msg);
    if (!hg) return;
    CHECK_EQ_INT(hg->opset, 13);
    CHECK_EQ_INT(hg->inputs.len, 1);
    CHECK_STR(hg->inputs.data[0]->name, "x");
    CHECK(hg->inputs.data[0]->data == NULL);
    CHECK_EQ_INT(hg->inputs.data[0]->shape[1], 3);
    const hc_tensor *a = hc_graph_find_tensor(hg, "f_raw");
    const hc_tensor *b = hc_graph_find_tensor(hg, "f_typed");
    CHECK(a && b && a->data && b->data);
    if (a && b) {
        CHECK(a->dtype == HC_F32 && a->ndim == 2 && a->shape[0] == 2 && a->shape[1] == 3);
        CHECK(!memcmp(a->data, f, sizeof f) && !memcmp(b->data, f, sizeof f));
    }
    const hc_tensor *x = hc_graph_find_tensor(hg, "i64");
    CHECK(x && x->dtype == HC_I64 && !memcmp(x->data, i64, sizeof i64));
    x = hc_graph_find_tensor(hg, "i8");
    CHECK(x && x->dtype == HC_I8 && ((int8_t *)x->data)[0] == -5 && ((int8_t *)x->data)[1] == -56);
    x = hc_graph_find_tensor(hg, "u8");
    CHECK(x && x->dtype == HC_U8 && ((uint8_t *)x->data)[1] == 200);
    x = hc_graph_find_tensor(hg, "i16");
    CHECK(x && x->dtype == HC_I16 && ((int16_t *)x->data)[2] == 0x3c00);
    x = hc_graph_find_tensor(hg, "b");
    CHECK(x && x->dtype == HC_BOOL && !memcmp(x->data, "\1\1\1\1", 4));
    x = hc_graph_find_tensor(hg, "h");
    CHECK(x && x->dtype == HC_F16 && ((uint16_t *)x->data)[2] == 0x3c00);
    x = hc_graph_find_tensor(hg, "bh");
    CHECK(x && x->dtype == HC_BF16 && ((uint16_t *)x->data)[1] == 200);
    x = hc_graph_find_tensor(hg, "i32");
    CHECK(x && x->dtype == HC_I32 && !memcmp(x->data, i32s, sizeof i32s));
    x = hc_graph_find_tensor(hg, "u16");
    CHECK(x && x->dtype == HC_U16 && ((uint16_t *)x->data)[0] == 0xfffb);
    x = hc_graph_find_tensor(hg, "u64");
    CHECK(x && x->dtype == HC_U64 && ((uint64_t *)x->data)[0] == ~0ull);
    x = hc_graph_find_tensor(hg, "u32");
    CHECK(x && x->dtype == HC_U32 && x->shape[0] == 1 && ((uint32_t *)x->data)[0] == 3);
    x = hc_graph_find_tensor(hg, "f64");
    CHECK(x && x->dtype == HC_F64 && ((double *)x->data)[1] == -1e300);
    x = hc_graph_find_tensor(hg, "scalar");
    CHECK(x && x->ndim == 0 && ((float *)x->data)[0] == 1.5f);
    x = hc_graph_find_tensor(hg, "empty");
    CHECK(x && x->data && hc_tensor_numel(x) == 0);
    hc_graph_free(hg);
}

/* ---- bad tensors ----------------------------------------------------------------- */
static void expect_bad_initializer(Onnx__TensorProto *t, hc_status st, const char *part) {
    Onnx__GraphProto *g = graph();
    g->initializer[g->n_initializer++] = t;
    g->input[g->n_input++] = value("x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL);
    add_output(g, "x");
    hc_error err;
    const char *path = write_model(g, 13, "bad_init.onnx");
    hc_graph *hg = load(path, &err);
    CHECK(!hg);
    hc_graph_free(hg);
    CHECK_EQ_INT(err.status, st);
    CHECK(has(err.msg, part));
    CHECK(has(err.msg, path));
}

static void test_bad_tensors(void) {
    int64_t d23[2] = {2, 3}, dneg[1] = {-2}, dbig[3] = {1 << 20, 1 << 20, 1 << 20};
    float f[7] = {0};
    Onnx__TensorProto *t = tensor("w", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, d23);
    raw(t, f, 5 * 4);
    expect_bad_initializer(t, HC_ERR_INVALID, "initializer 'w' has 20 bytes of raw_data");
    t = tensor("w", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, d23);
    t->n_float_data = 7, t->float_data = f;
    expect_bad_initializer(t, HC_ERR_INVALID, "7 values in float_data");
    t = tensor("w", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, d23);
    expect_bad_initializer(t, HC_ERR_INVALID, "initializer 'w' has no data");
    t = tensor("w", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, dneg);
    expect_bad_initializer(t, HC_ERR_INVALID, "negative dimension");
    t = tensor("w", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, dbig);
    expect_bad_initializer(t, HC_ERR_INVALID, "too large");
    t = tensor("w", ONNX__TENSOR_PROTO__DATA_TYPE__STRING, 2, d23);
    expect_bad_initializer(t, HC_ERR_UNSUPPORTED, "data type string");
    t = tensor("w", ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64, 2, d23);
    expect_bad_initializer(t, HC_ERR_UNSUPPORTED, "complex64");
    t = tensor("w", 77, 2, d23);
    expect_bad_initializer(t, HC_ERR_UNSUPPORTED, "type 77");
    t = tensor("", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL);
    expect_bad_initializer(t, HC_ERR_INVALID, "initializer 0 has no name");
}

/* ---- Constant nodes and attributes -------------------------------------------------- */
static void test_constants_and_attributes(void) {
    Onnx__GraphProto *g = graph();
    int64_t d2[1] = {2}, d3[1] = {3};
    Onnx__NodeProto *c = node(g, "Constant", "", "", "c_tensor");
    Onnx__AttributeProto *a = attr("value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    int64_t vals[2] = {4, -9};
    a->t = tensor("", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, d2);
    a->t->n_int64_data = 2, a->t->int64_data = vals;
    c->attribute[c->n_attribute++] = a;
    c = node(g, "Constant", "cf", "", "c_float");
    a = attr("value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1, a->f = 2.5f;
    c->attribute[c->n_attribute++] = a;
    c = node(g, "Constant", "cfs", "", "c_floats");
    a = attr("value_floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    float fl[3] = {1, 2, 3.25f};
    a->n_floats = 3, a->floats = fl;
    c->attribute[c->n_attribute++] = a;
    c = node(g, "Constant", "ci", "", "c_int");
    a = attr("value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1, a->i = -42;
    c->attribute[c->n_attribute++] = a;
    c = node(g, "Constant", "cis", "", "c_ints");
    a = attr("value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = 3, a->ints = (int64_t[]){7, 8, 9};
    c->attribute[c->n_attribute++] = a;
    /* a supported op carrying one attribute of each kind, defined before its input */
    g->input[g->n_input++] = value("x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d3);
    Onnx__NodeProto *n = node(g, "Add", "", "x,c_floats", "y");
    /* move it in front of the Constants: the importer must restore the order */
    memmove(g->node + 1, g->node, sizeof *g->node * (g->n_node - 1));
    g->node[0] = n;
    a = attr("i", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1, a->i = 3;
    n->attribute[n->n_attribute++] = a;
    a = attr("f", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1, a->f = 0.5f;
    n->attribute[n->n_attribute++] = a;
    a = attr("s", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1, a->s.data = (uint8_t *)"NOTSET", a->s.len = 6;
    n->attribute[n->n_attribute++] = a;
    a = attr("ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = 2, a->ints = (int64_t[]){1, -1};
    n->attribute[n->n_attribute++] = a;
    a = attr("floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = 2, a->floats = (float[]){0.25f, -4};
    n->attribute[n->n_attribute++] = a;
    a = attr("strings", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    ProtobufCBinaryData strs[2] = {{1, (uint8_t *)"a"}, {2, (uint8_t *)"bc"}};
    a->n_strings = 2, a->strings = strs;
    n->attribute[n->n_attribute++] = a;
    a = attr("t", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = tensor("tv", ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, 1, d2);
    a->t->n_double_data = 2, a->t->double_data = (double[]){1.25, 2};
    n->attribute[n->n_attribute++] = a;
    /* IR version 1 style: no type field, the content tells */
    a = attr("untyped", 0);
    a->has_type = 0, a->has_i = 1, a->i = 11;
    n->attribute[n->n_attribute++] = a;
    add_output(g, "y");
    add_output(g, "c_tensor");
    add_output(g, "c_float");
    add_output(g, "c_int");
    add_output(g, "c_ints");

    hc_error err;
    hc_graph *hg = load(write_model(g, 17, "attrs.onnx"), &err);
    if (!op_supported("Add")) {
        CHECK(!hg && err.status == HC_ERR_UNSUPPORTED && has(err.msg, "Add (node 'Add_0')"));
        hc_graph_free(hg);
        return;
    }
    CHECK_MSG(hg, "%s", err.msg);
    if (!hg) return;
    const hc_tensor *t = hc_graph_find_tensor(hg, "c_tensor");
    CHECK(t && t->data && t->dtype == HC_I64 && t->ndim == 1 && !memcmp(t->data, vals, 16));
    t = hc_graph_find_tensor(hg, "c_float");
    CHECK(t && t->data && t->dtype == HC_F32 && t->ndim == 0 && *(float *)t->data == 2.5f);
    t = hc_graph_find_tensor(hg, "c_floats");
    CHECK(t && t->data && t->dtype == HC_F32 && t->shape[0] == 3 && ((float *)t->data)[2] == 3.25f);
    t = hc_graph_find_tensor(hg, "c_int");
    CHECK(t && t->data && t->dtype == HC_I64 && t->ndim == 0 && *(int64_t *)t->data == -42);
    t = hc_graph_find_tensor(hg, "c_ints");
    CHECK(t && t->data && t->shape[0] == 3 && ((int64_t *)t->data)[2] == 9);
    CHECK_EQ_INT(hg->nodes.len, 1); /* Constant nodes became constants */
    CHECK_EQ_INT(hg->outputs.len, 5);
    if (hg->nodes.len != 1) {
        hc_graph_free(hg);
        return;
    }
    const hc_node *an = hg->nodes.data[0];
    CHECK_STR(an->name, "Add_0");
    CHECK_EQ_INT(an->opset, 17);
    CHECK(an->ninputs == 2 && an->inputs[1] == hc_graph_find_tensor(hg, "c_floats"));
    CHECK_EQ_INT(hc_node_attr_int(an, "i", 0), 3);
    CHECK_EQ_INT(hc_node_attr_int(an, "untyped", 0), 11);
    CHECK(hc_node_attr_float(an, "f", 0) == 0.5);
    CHECK_STR(hc_node_attr_string(an, "s", ""), "NOTSET");
    int cnt = 0;
    const int64_t *iv = hc_node_attr_ints(an, "ints", &cnt);
    CHECK(cnt == 2 && iv && iv[1] == -1);
    const double *fv = hc_node_attr_floats(an, "floats", &cnt);
    CHECK(cnt == 2 && fv && fv[0] == 0.25 && fv[1] == -4);
    const hc_attr *sa = hc_node_attr(an, "strings");
    CHECK(sa && sa->kind == HC_ATTR_STRINGS && sa->n == 2 && !strcmp(sa->strings[1], "bc"));
    const hc_attr *ta = hc_node_attr(an, "t");
    CHECK(ta && ta->kind == HC_ATTR_TENSOR && ta->t && ta->t->dtype == HC_F64 &&
          ((double *)ta->t->data)[0] == 1.25);
    CHECK(hc_node_attr(an, "missing") == NULL);
    hc_graph_free(hg);
}

/* ---- external data ------------------------------------------------------------------- */
static Onnx__StringStringEntryProto *entry(const char *k, const char *v) {
    Onnx__StringStringEntryProto *e = HC_NEW(&A, Onnx__StringStringEntryProto);
    onnx__string_string_entry_proto__init(e);
    e->key = hc_arena_strdup(&A, k);
    e->value = hc_arena_strdup(&A, v);
    return e;
}

/* A model in folder `dir` whose initializer 'w' (f32 [4]) is external data. */
static hc_graph *load_external(const char *dir, const char *loc, const char *off,
                               const char *len, hc_error *err) {
    Onnx__GraphProto *g = graph();
    int64_t d4[1] = {4};
    Onnx__TensorProto *t = tensor("w", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d4);
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    t->external_data = HC_NEW_ARRAY(&A, Onnx__StringStringEntryProto *, 3);
    t->external_data[t->n_external_data++] = entry("location", loc);
    if (off) t->external_data[t->n_external_data++] = entry("offset", off);
    if (len) t->external_data[t->n_external_data++] = entry("length", len);
    g->initializer[g->n_initializer++] = t;
    add_output(g, "w");
    return load(write_model(g, 13, hc_arena_printf(&A, "%s/ext.onnx", dir)), err);
}

static void expect_external_error(const char *loc, const char *off, const char *len,
                                  const char *part) {
    hc_error err;
    hc_graph *g = load_external("model", loc, off, len, &err);
    CHECK_MSG(!g, "external data '%s' was accepted", loc);
    hc_graph_free(g);
    CHECK(err.status != HC_OK && has(err.msg, part));
}

static void test_external_data(void) {
    CHECK(mkdir(path_of("model"), 0755) == 0 && mkdir(path_of("model/sub"), 0755) == 0);
    float w[6] = {9, 1, 2, 3, 4, 9};
    write_bytes(path_of("model/w.bin"), w, sizeof w);
    write_bytes(path_of("model/sub/w.bin"), w + 1, 16);
    write_bytes(path_of("outside.bin"), w + 1, 16);
    CHECK(symlink("../outside.bin", path_of("model/link.bin")) == 0);
    CHECK(symlink("w.bin", path_of("model/inlink.bin")) == 0);

    hc_error err;
    hc_graph *g = load_external("model", "w.bin", "4", "16", &err);
    CHECK_MSG(g, "%s", err.msg);
    const hc_tensor *t = g ? hc_graph_find_tensor(g, "w") : NULL;
    CHECK(t && t->data && !memcmp(t->data, w + 1, 16));
    hc_graph_free(g);
    g = load_external("model", "sub/w.bin", NULL, NULL, &err); /* offset 0, whole length */
    t = g ? hc_graph_find_tensor(g, "w") : NULL;
    CHECK_MSG(t && t->data && !memcmp(t->data, w + 1, 16), "%s", err.msg);
    hc_graph_free(g);
    g = load_external("model", "./inlink.bin", "4", NULL, &err); /* a link that stays inside */
    CHECK_MSG(g, "%s", err.msg);
    hc_graph_free(g);

    expect_external_error("../outside.bin", NULL, NULL, "leaves the model's folder");
    expect_external_error("sub/../../outside.bin", NULL, NULL, "leaves the model's folder");
    expect_external_error(path_of("outside.bin"), NULL, NULL, "absolute path");
    expect_external_error("link.bin", NULL, NULL, "outside the model's folder");
    expect_external_error("missing.bin", NULL, NULL, "missing.bin");
    expect_external_error("w.bin", "12", NULL, "do not fit");
    expect_external_error("w.bin", NULL, "12", "length 12 does not match");
    expect_external_error("w.bin", "-4", NULL, "offset '-4'");
    expect_external_error("w.bin", "4x", NULL, "offset '4x'");
    expect_external_error("", NULL, NULL, "empty external data location");
    expect_external_error("sub", NULL, NULL, "not a regular file");
}

/* ---- graph-level errors ---------------------------------------------------------------- */
static void test_unsupported_listing(void) {
    Onnx__GraphProto *g = graph();
    int64_t d3[1] = {3};
    g->input[g->n_input++] = value("x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d3);
    node(g, "Foo", "foo_1", "x", "a");
    node(g, "Bar", "b1", "a", "b");
    node(g, "Bar", "b2", "b", "c");
    Onnx__NodeProto *n = node(g, "Baz", "", "c", "d");
    n->domain = "com.example";
    add_output(g, "d");
    hc_error err;
    const char *path = write_model(g, 13, "unsupported.onnx");
    hc_graph *hg = load(path, &err);
    CHECK(!hg);
    hc_graph_free(hg);
    CHECK_EQ_INT(err.status, HC_ERR_UNSUPPORTED);
    char want[1024];
    snprintf(want, sizeof want, "%s: unsupported operators: Foo (node 'foo_1'), Bar (nodes "
             "'b1', 'b2'), com.example.Baz (node 'Baz_3')", path);
    CHECK_STR(err.msg, want);
}

static hc_graph *load_simple(Onnx__GraphProto *g, int64_t opset, hc_error *err) {
    return load(write_model(g, opset, "simple.onnx"), err);
}

static Onnx__GraphProto *identity_graph(const int64_t *dims, int ndim) {
    Onnx__GraphProto *g = graph();
    g->input[g->n_input++] = value("x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, ndim, dims);
    add_output(g, "x");
    return g;
}

static void test_graph_errors(void) {
    int64_t d3[1] = {3}, sym[2] = {-1, 3};
    hc_error err;
    hc_graph *hg;
    for (int64_t opset = 0; opset <= 30; opset++) {
        hg = load_simple(identity_graph(d3, 1), opset, &err);
        bool ok = opset >= 1 && opset <= 28;
        CHECK_MSG((hg != NULL) == ok, "opset %lld", (long long)opset);
        if (!ok) CHECK(err.status == HC_ERR_UNSUPPORTED && has(err.msg, "opset"));
        hc_graph_free(hg);
    }
    /* An op used at an opset before it was added: the node, the op and both opsets. */
    if (op_supported("LayerNormalization")) {
        for (int64_t opset = 16; opset <= 17; opset++) {
            Onnx__GraphProto *lg = identity_graph(d3, 1);
            Onnx__TensorProto *st = tensor("s", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d3);
            raw(st, (float[]){1, 2, 3}, 3 * sizeof(float));
            lg->initializer[lg->n_initializer++] = st;
            node(lg, "LayerNormalization", "ln", "x,s", "y");
            add_output(lg, "y");
            hg = load_simple(lg, opset, &err);
            if (opset == 16) {
                CHECK(!hg && err.status == HC_ERR_INVALID);
                CHECK_MSG(has(err.msg, "node 'ln' (LayerNormalization): LayerNormalization is "
                              "not defined in opset 16 (it was added in opset 17)"), "%s",
                          err.msg);
            } else {
                CHECK_MSG(hg != NULL, "%s", err.msg);
            }
            hc_graph_free(hg);
        }
    }
    /* The version an opset selects, and the implemented versions. */
    CHECK_EQ_INT(hc_op_onnx_version(HC_OPK_REDUCE_MAX, 17), 13);
    CHECK_EQ_INT(hc_op_onnx_version(HC_OPK_REDUCE_MAX, 19), 18);
    CHECK_EQ_INT(hc_op_onnx_version(HC_OPK_REDUCE_MAX, 28), 20);
    CHECK_EQ_INT(hc_op_onnx_version(HC_OPK_LAYER_NORMALIZATION, 16), 0);
    CHECK_EQ_INT(hc_op_onnx_version(HC_OPK_IM2COL, 17), -1);
    CHECK(hc_op_onnx_version_supported(HC_OPK_SPLIT, 18));
    CHECK(!hc_op_onnx_version_supported(HC_OPK_SPLIT, 17));
    /* every table op has its first version at or below the newest opset, and the versions
     * an opset selects never decrease */
    for (int k = 0; k < HC_OPK_COUNT; k++) {
        if (!*hc_op_onnx_name((hc_op_kind)k)) continue;
        int first = hc_op_onnx_first_version((hc_op_kind)k);
        CHECK_MSG(first >= 1 && first <= HC_ONNX_MAX_OPSET, "%s: first version %d",
                  hc_op_onnx_name((hc_op_kind)k), first);
        for (int o = HC_ONNX_MIN_OPSET + 1; o <= HC_ONNX_MAX_OPSET; o++)
            CHECK(hc_op_onnx_version((hc_op_kind)k, o) >= hc_op_onnx_version((hc_op_kind)k, o - 1));
    }
    hg = load_simple(identity_graph(sym, 2), 13, &err);
    CHECK(!hg && err.status == HC_ERR_UNSUPPORTED);
    CHECK(has(err.msg, "input 'x' has a symbolic dimension 'N' (dimension 0)"));
    hc_graph_free(hg);

    Onnx__GraphProto *g = identity_graph(d3, 1);
    g->output[0]->name = "nowhere";
    hg = load_simple(g, 13, &err);
    CHECK(!hg && has(err.msg, "graph output 'nowhere' is not defined"));
    hc_graph_free(hg);

    if (op_supported("Relu")) {
        g = identity_graph(d3, 1);
        node(g, "Relu", "r", "undefined_value", "y");
        hg = load_simple(g, 13, &err);
        CHECK(!hg && has(err.msg, "node 'r' (Relu): input 'undefined_value' is not defined"));
        hc_graph_free(hg);
        g = identity_graph(d3, 1);
        node(g, "Relu", "r1", "x", "y");
        node(g, "Relu", "r2", "x", "y");
        hg = load_simple(g, 13, &err);
        CHECK(!hg && has(err.msg, "value 'y' (an output of node 'r2') is defined twice"));
        hc_graph_free(hg);
        g = identity_graph(d3, 1);
        node(g, "Relu", "r1", "z", "y");
        node(g, "Relu", "r2", "y", "z");
        hg = load_simple(g, 13, &err);
        CHECK(!hg && err.status == HC_ERR_INVALID); /* a cycle */
        hc_graph_free(hg);
        g = identity_graph(d3, 1);
        node(g, "Relu", "same", "x", "y");
        node(g, "Relu", "same", "y", "z");
        add_output(g, "z");
        hg = load_simple(g, 13, &err);
        CHECK_MSG(hg && hg->nodes.len == 2 &&
                      strcmp(hg->nodes.data[0]->name, hg->nodes.data[1]->name),
                  "%s", err.msg);
        hc_graph_free(hg);
    }
}

/* ---- damaged files ----------------------------------------------------------------------- */
static void test_damaged_files(void) {
    Onnx__GraphProto *g = graph();
    int64_t d4[1] = {4};
    float f[4] = {1, 2, 3, 4};
    Onnx__TensorProto *t = tensor("w", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d4);
    raw(t, f, sizeof f);
    g->initializer[g->n_initializer++] = t;
    g->input[g->n_input++] = value("x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d4);
    node(g, "Add", "add", "x,w", "y");
    add_output(g, "y");
    size_t size;
    uint8_t *buf = pack_model(g, 13, &size);
    const char *path = path_of("damaged.onnx");
    hc_error err;
    int errors = 0;
    /* every truncation: an error or (cut at a field boundary) a smaller valid model */
    for (size_t n = 0; n < size; n++) {
        write_bytes(path, buf, n);
        hc_graph *hg = load(path, &err);
        if (!hg) {
            errors++;
            CHECK_MSG(err.status == HC_ERR_INVALID || err.status == HC_ERR_UNSUPPORTED,
                      "cut at %zu: %s", n, err.msg);
            CHECK(has(err.msg, path));
        }
        hc_graph_free(hg);
    }
    CHECK(errors > (int)size / 2);
    write_bytes(path, buf, size - 3); /* inside the last field */
    hc_graph *hg = load(path, &err);
    CHECK(!hg && err.status == HC_ERR_INVALID);
    hc_graph_free(hg);
    /* random bytes, and the model with random bytes flipped */
    hc_rng rng = {12345};
    uint8_t junk[512];
    for (int k = 0; k < 300; k++) {
        size_t n = 1 + hc_rng_next(&rng) % sizeof junk;
        for (size_t i = 0; i < n; i++) junk[i] = (uint8_t)hc_rng_next(&rng);
        write_bytes(path, junk, n);
        hg = load(path, &err);
        CHECK_MSG(!hg, "random bytes #%d loaded", k);
        CHECK(hg || has(err.msg, path));
        hc_graph_free(hg);
        memcpy(junk, buf, size);
        for (int j = 0; j < 3; j++) junk[hc_rng_next(&rng) % size] = (uint8_t)hc_rng_next(&rng);
        write_bytes(path, junk, size);
        hg = load(path, &err); /* may load or not; must not crash */
        hc_graph_free(hg);
    }
    hg = load(path_of("no_such_file.onnx"), &err);
    CHECK(!hg && err.status == HC_ERR_IO && has(err.msg, "no_such_file.onnx"));
    write_bytes(path, "", 0);
    hg = load(path, &err);
    CHECK(!hg && has(err.msg, "no graph"));
    free(buf);
}

/* ---- deep nesting ------------------------------------------------------------------ */
static size_t put_varint(uint8_t *p, uint64_t v) {
    size_t n = 0;
    do {
        p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

/* Wrap buf[0..*n) as length-delimited field `num`, in place (buf has room). */
static void wrap(uint8_t *buf, size_t *n, unsigned num) {
    uint8_t head[16];
    size_t h = put_varint(head, (uint64_t)num << 3 | 2);
    h += put_varint(head + h, *n);
    memmove(buf + h, buf, *n);
    memcpy(buf, head, h);
    *n += h;
}

/* A model of graphs nested `levels` deep through node attributes (AttributeProto.g). */
static uint8_t *nested_model(int levels, size_t *n) {
    uint8_t *buf = malloc((size_t)levels * 16 + 64);
    *n = 0;
    for (int i = 0; i < levels; i++) {
        wrap(buf, n, 6); /* AttributeProto.g */
        wrap(buf, n, 5); /* NodeProto.attribute */
        wrap(buf, n, 1); /* GraphProto.node */
    }
    wrap(buf, n, 7); /* ModelProto.graph */
    return buf;
}

static void test_deep_nesting(void) {
    const char *path = path_of("nested.onnx");
    size_t n;
    uint8_t *buf = nested_model(100000, &n);
    write_bytes(path, buf, n);
    free(buf);
    hc_error err;
    hc_graph *g = load(path, &err); /* protobuf-c alone would overflow the stack */
    CHECK(!g && err.status == HC_ERR_INVALID && has(err.msg, "nested too deeply"));
    hc_graph_free(g);
    buf = nested_model(5, &n); /* a plausible depth decodes (and fails later) */
    write_bytes(path, buf, n);
    free(buf);
    g = load(path, &err);
    CHECK(!g && !strstr(err.msg, "nested too deeply"));
    hc_graph_free(g);
}

/* ---- test-data tensors ------------------------------------------------------------------- */
static void test_load_tensor(void) {
    int64_t d23[2] = {2, 3};
    int32_t v[6] = {1, 0, 1, 1, 0, 0};
    Onnx__TensorProto *t = tensor("in0", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 2, d23);
    t->n_int32_data = 6, t->int32_data = v;
    size_t size = onnx__tensor_proto__get_packed_size(t);
    uint8_t *buf = malloc(size);
    onnx__tensor_proto__pack(t, buf);
    const char *path = path_of("input_0.pb");
    write_bytes(path, buf, size);
    hc_host_tensor h;
    hc_error err = {0};
    CHECK_EQ_INT(hc_onnx_load_tensor(path, &h, &err), HC_OK);
    CHECK(!strcmp(h.name, "in0") && h.dtype == HC_BOOL && h.ndim == 2 && h.shape[1] == 3);
    CHECK(!memcmp(h.data, "\1\0\1\1\0\0", 6));
    hc_host_tensor_free(&h);
    write_bytes(path, buf, size - 2);
    CHECK(hc_onnx_load_tensor(path, &h, &err) != HC_OK && has(err.msg, path));
    CHECK(h.data == NULL);
    free(buf);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    return remove(p);
}

/* ---- other domains: ai.onnx.preview.training ------------------------------------------ */
#define TRAINING "ai.onnx.preview.training"

/* y = Adagrad(R, T, x, G, H) of domain `domain` (op_type `op`) on [3] tensors. */
static Onnx__GraphProto *adagrad_graph(const char *domain, const char *op) {
    int64_t d3[1] = {3};
    Onnx__GraphProto *g = graph();
    g->input[g->n_input++] = value("R", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL);
    g->input[g->n_input++] = value("T", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 0, NULL);
    const char *names[3] = {"x", "G", "H"};
    for (int i = 0; i < 3; i++)
        g->input[g->n_input++] = value(names[i], ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d3);
    Onnx__NodeProto *n = node(g, op, "ada", "R,T,x,G,H", "y,h");
    n->domain = hc_arena_strdup(&A, domain);
    g->output[g->n_output++] = value("y", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d3);
    return g;
}

static hc_graph *load_imports(Onnx__GraphProto *g, int n, const char *const *domains,
                              const int64_t *versions, hc_error *err) {
    size_t size;
    uint8_t *buf = pack_model_imports(g, n, domains, versions, &size);
    const char *p = path_of("domains.onnx");
    write_bytes(p, buf, size);
    free(buf);
    return load(p, err);
}

static void test_domains(void) {
    hc_error err;
    const char *both[2] = {"", TRAINING}, *train[1] = {TRAINING}, *dflt[1] = {""};
    /* the domain alone (as ONNX's node tests): the default opset is the newest */
    hc_graph *hg = load_imports(adagrad_graph(TRAINING, "Adagrad"), 1, train, (int64_t[]){1}, &err);
    CHECK_MSG(hg != NULL, "%s", err.msg);
    if (hg) {
        CHECK_EQ_INT(hg->opset, HC_ONNX_MAX_OPSET);
        CHECK_EQ_INT(hg->nodes.len, 1);
        CHECK(hg->nodes.data[0]->op == HC_OPK_ADAGRAD);
        CHECK_EQ_INT(hg->nodes.data[0]->opset, 1); /* the version of its domain */
    }
    hc_graph_free(hg);
    hg = load_imports(adagrad_graph(TRAINING, "Adagrad"), 2, both, (int64_t[]){13, 1}, &err);
    CHECK_MSG(hg && hg->opset == 13 && hg->nodes.data[0]->opset == 1, "%s", err.msg);
    hc_graph_free(hg);
    /* not imported; imported at another version */
    hg = load_imports(adagrad_graph(TRAINING, "Adagrad"), 1, dflt, (int64_t[]){13}, &err);
    CHECK(!hg && err.status == HC_ERR_INVALID);
    CHECK(has(err.msg, "domains.onnx: node 'ada' (ai.onnx.preview.training.Adagrad): the model "
                       "does not import the domain ai.onnx.preview.training (its opset_import has "
                       "no version of it)"));
    hc_graph_free(hg);
    hg = load_imports(adagrad_graph(TRAINING, "Adagrad"), 2, both, (int64_t[]){13, 2}, &err);
    CHECK(!hg && err.status == HC_ERR_UNSUPPORTED);
    CHECK(has(err.msg, "node 'ada' (ai.onnx.preview.training.Adagrad): version 2 of the domain "
                       "ai.onnx.preview.training is not supported (version 1 is)"));
    hc_graph_free(hg);
    /* an op of the domain hidetc lacks, Adagrad in the default domain, and the qualified
     * name as a default-domain op_type: unsupported */
    hg = load_imports(adagrad_graph(TRAINING, "Gradient"), 1, train, (int64_t[]){1}, &err);
    CHECK(!hg && err.status == HC_ERR_UNSUPPORTED);
    CHECK(has(err.msg, "domains.onnx: unsupported operator: ai.onnx.preview.training.Gradient "
                       "(node 'ada')"));
    hc_graph_free(hg);
    hg = load_imports(adagrad_graph("", "Adagrad"), 2, both, (int64_t[]){13, 1}, &err);
    CHECK(!hg && has(err.msg, "unsupported operator: Adagrad (node 'ada')"));
    hc_graph_free(hg);
    hg = load_imports(adagrad_graph("", TRAINING ".Adagrad"), 2, both, (int64_t[]){13, 1}, &err);
    CHECK(!hg && has(err.msg, "unsupported operator: ai.onnx.preview.training.Adagrad (node 'ada')"));
    hc_graph_free(hg);
    /* a default-domain node needs the default domain imported */
    Onnx__GraphProto *g = adagrad_graph(TRAINING, "Adagrad");
    node(g, "Relu", "r", "y", "z");
    hg = load_imports(g, 1, train, (int64_t[]){1}, &err);
    CHECK(!hg && has(err.msg, "the model imports no opset of the default ONNX domain"));
    hc_graph_free(hg);

    /* a Loop body's nodes see the versions the model imports */
    for (int imported = 1; imported >= 0; imported--) {
        int64_t d3[1] = {3};
        Onnx__GraphProto *body = graph();
        body->input[body->n_input++] = value("i", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 0, NULL);
        body->input[body->n_input++] = value("c", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL);
        body->input[body->n_input++] = value("v", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d3);
        node(body, "Identity", "cid", "c", "c2");
        Onnx__NodeProto *ad = node(body, "Adagrad", "step", "R,T,v,G,H", "v2");
        ad->domain = TRAINING;
        body->output[body->n_output++] = value("c2", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL);
        body->output[body->n_output++] = value("v2", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d3);
        Onnx__GraphProto *lg = adagrad_graph(TRAINING, "Adagrad");
        lg->n_node = 0, lg->n_output = 0;
        Onnx__TensorProto *mt = tensor("M", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 0, NULL);
        raw(mt, (int64_t[]){2}, sizeof(int64_t));
        lg->initializer[lg->n_initializer++] = mt;
        Onnx__NodeProto *lp = node(lg, "Loop", "loop", "M,,x", "y");
        Onnx__AttributeProto *ba = attr("body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
        ba->g = body;
        lp->attribute[lp->n_attribute++] = ba;
        lg->output[lg->n_output++] = value("y", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d3);
        hg = load_imports(lg, 1 + imported, both, (int64_t[]){13, 1}, &err);
        CHECK_MSG(hg != NULL, "%s", err.msg);
        if (!hg) continue;
        hc_status st = hc_pass_infer_shapes(hg, &err);
        int steps = 0;
        for (size_t k = 0; k < hg->nodes.len; k++) steps += hg->nodes.data[k]->op == HC_OPK_ADAGRAD;
        if (imported) CHECK_MSG(st == HC_OK && steps == 2, "%s (%d steps)", err.msg, steps);
        else CHECK(st != HC_OK && has(err.msg, "(ai.onnx.preview.training.Adagrad): the model does "
                                              "not import the domain ai.onnx.preview.training"));
        hc_graph_free(hg);
    }
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hc_test_onnx_XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    hc_arena_init(&A);
    test_initializers();
    test_bad_tensors();
    test_constants_and_attributes();
    test_external_data();
    test_unsupported_listing();
    test_graph_errors();
    test_domains();
    test_damaged_files();
    test_deep_nesting();
    test_load_tensor();
    hc_arena_free(&A);
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    TEST_DONE();
}
