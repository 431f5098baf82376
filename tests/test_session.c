/* test_session.c — the session API (include/hidetc.h): creation from a file, from bytes
 * and from a compiled-model file; symbolic dimensions fixed by dims / shapes and the
 * errors when they are not; introspection; runs by names with wrapped and allocated
 * tensors, every shape / dtype / name error; concurrent runs from several threads on one
 * session; the caller's OpenMP thread count and CPU mask unchanged. */
#include <omp.h>
#include <pthread.h>
#include <stdbool.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hidetc.h"
#include "onnx.pb-c.h"
#include "test.h"

#define K 5  /* x [batch, K] */
#define N 7  /* W [K, N] */

static float W[K * N], B[N];
static char tmpdir[256];

/* ---- the model: y = Relu(x W + b), z = Sigmoid(y); x [batch, K] with batch symbolic - */
static Onnx__ValueInfoProto *vinfo(const char *name, int nd, const char **syms, const int64_t *dims) {
    static Onnx__ValueInfoProto v[8];
    static Onnx__TypeProto tp[8];
    static Onnx__TypeProto__Tensor tt[8];
    static Onnx__TensorShapeProto sp[8];
    static Onnx__TensorShapeProto__Dimension d[8][4], *dp[8][4];
    static int n;
    int i = n++;
    onnx__value_info_proto__init(&v[i]);
    onnx__type_proto__init(&tp[i]);
    onnx__type_proto__tensor__init(&tt[i]);
    onnx__tensor_shape_proto__init(&sp[i]);
    for (int k = 0; k < nd; k++) {
        onnx__tensor_shape_proto__dimension__init(&d[i][k]);
        if (syms[k]) {
            d[i][k].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d[i][k].dim_param = (char *)syms[k];
        } else {
            d[i][k].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d[i][k].dim_value = dims[k];
        }
        dp[i][k] = &d[i][k];
    }
    sp[i].n_dim = (size_t)nd, sp[i].dim = dp[i];
    tt[i].has_elem_type = 1, tt[i].elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt[i].shape = &sp[i];
    tp[i].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, tp[i].tensor_type = &tt[i];
    v[i].name = (char *)name, v[i].type = &tp[i];
    return &v[i];
}

static uint8_t *model_bytes(size_t *size) {
    static Onnx__TensorProto w = ONNX__TENSOR_PROTO__INIT, b = ONNX__TENSOR_PROTO__INIT;
    static int64_t wd[2] = {K, N}, bd[1] = {N};
    w.name = "W", w.has_data_type = 1, w.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    w.n_dims = 2, w.dims = wd, w.has_raw_data = 1;
    w.raw_data.len = sizeof W, w.raw_data.data = (uint8_t *)W;
    b.name = "b", b.has_data_type = 1, b.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    b.n_dims = 1, b.dims = bd, b.has_raw_data = 1;
    b.raw_data.len = sizeof B, b.raw_data.data = (uint8_t *)B;
    static Onnx__NodeProto n[4];
    static char *io[4][4] = {{"x", "W"}, {"xw", "b"}, {"xwb"}, {"y"}};
    static char *outs[4][1] = {{"xw"}, {"xwb"}, {"y"}, {"z"}};
    const char *ops[4] = {"MatMul", "Add", "Relu", "Sigmoid"};
    static Onnx__NodeProto *np[4];
    for (int i = 0; i < 4; i++) {
        onnx__node_proto__init(&n[i]);
        n[i].op_type = (char *)ops[i];
        n[i].n_input = i < 2 ? 2 : 1, n[i].input = io[i];
        n[i].n_output = 1, n[i].output = outs[i];
        np[i] = &n[i];
    }
    static Onnx__TensorProto *inits[2] = {&w, &b};
    static Onnx__ValueInfoProto *ins[1], *ous[2];
    ins[0] = vinfo("x", 2, (const char *[]){"batch", NULL}, (int64_t[]){0, K});
    ous[0] = vinfo("y", 2, (const char *[]){"batch", NULL}, (int64_t[]){0, N});
    ous[1] = vinfo("z", 2, (const char *[]){"batch", NULL}, (int64_t[]){0, N});
    Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    g.name = "mlp";
    g.n_node = 4, g.node = np;
    g.n_initializer = 2, g.initializer = inits;
    g.n_input = 1, g.input = ins;
    g.n_output = 2, g.output = ous;
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    Onnx__OperatorSetIdProto op = ONNX__OPERATOR_SET_ID_PROTO__INIT, *opp[1] = {&op};
    op.domain = "", op.has_version = 1, op.version = 17;
    m.has_ir_version = 1, m.ir_version = 8;
    m.n_opset_import = 1, m.opset_import = opp;
    m.graph = &g;
    *size = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(*size);
    onnx__model_proto__pack(&m, buf);
    return buf;
}

static void reference(const float *x, int batch, float *y, float *z) {
    for (int r = 0; r < batch; r++)
        for (int j = 0; j < N; j++) {
            double s = B[j];
            for (int k = 0; k < K; k++) s += (double)x[r * K + k] * W[k * N + j];
            y[r * N + j] = s > 0 ? (float)s : 0.0f;
            z[r * N + j] = (float)(1.0 / (1.0 + exp(-(double)y[r * N + j])));
        }
}

static void fill(float *x, int n, unsigned seed) {
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
    }
}

static bool has(const char *msg, const char *part) {
    bool ok = strstr(msg, part) != NULL;
    if (!ok) fprintf(stderr, "  message without '%s': %s\n", part, msg);
    return ok;
}

static const char *model_path;
static uint8_t *model_buf;
static size_t model_size;

static hidetc_session *open_batch(int batch, int threads) {
    hidetc_session_options o;
    hidetc_session_options_init(&o);
    hidetc_dim d = {"batch", batch};
    o.dims = &d, o.num_dims = 1, o.num_threads = threads;
    hidetc_session *s = NULL;
    hidetc_status st = hidetc_session_create(&s, model_path, &o);
    CHECK_MSG(st == HIDETC_OK, "%s", hidetc_last_error());
    return s;
}

/* Run x through s by names; y and z compared with the reference. */
static double run_check(hidetc_session *s, int batch, unsigned seed) {
    float *x = malloc(sizeof(float) * batch * K), *y = malloc(sizeof(float) * batch * N);
    float *z = malloc(sizeof(float) * batch * N), *ry = malloc(sizeof(float) * batch * N);
    float *rz = malloc(sizeof(float) * batch * N);
    fill(x, batch * K, seed);
    reference(x, batch, ry, rz);
    hidetc_tensor *xt, *outs[2] = {NULL, NULL};
    hidetc_tensor_wrap(&xt, HIDETC_F32, 2, (int64_t[]){batch, K}, x);
    const char *in_names[1] = {"x"};
    double e = INFINITY;
    if (hidetc_session_run(s, 1, in_names, &xt, 0, NULL, outs) == HIDETC_OK)
        e = fmax(max_rel_err(hidetc_tensor_data(outs[0]), ry, batch * N),
                 max_rel_err(hidetc_tensor_data(outs[1]), rz, batch * N));
    else fprintf(stderr, "run: %s\n", hidetc_last_error());
    hidetc_tensor_free(outs[0]), hidetc_tensor_free(outs[1]), hidetc_tensor_free(xt);
    free(x), free(y), free(z), free(ry), free(rz);
    return e;
}

/* Without dims the batch stays symbolic: one compile, runs at any batch (docs/dynamic.md). */
static void test_symbolic_session(void) {
    hidetc_session *s = NULL;
    hidetc_session_options o;
    hidetc_session_options_init(&o);
    o.num_threads = 2;
    CHECK_MSG(hidetc_session_create(&s, model_path, &o) == HIDETC_OK, "%s", hidetc_last_error());
    if (!s) return;
    hidetc_value_info v;
    CHECK(hidetc_session_input_info(s, 0, &v) == HIDETC_OK);
    CHECK(v.ndim == 2 && v.dims[0] == -1 && v.dims[1] == K && v.dim_names[0] &&
          !strcmp(v.dim_names[0], "batch"));
    CHECK(hidetc_session_output_info(s, 0, &v) == HIDETC_OK);
    CHECK(v.dims[0] == -1 && v.dims[1] == N);
    const int batches[] = {1, 4, 7, 2, 7, 33};
    for (int i = 0; i < 6; i++) {
        double e = run_check(s, batches[i], 77u + (unsigned)i);
        CHECK_MSG(e < 1e-5, "symbolic session, batch %d: error %g", batches[i], e);
    }
    /* a given output of the wrong batch, a wrong fixed dim: named */
    float x[3 * K] = {0}, y[2 * N];
    hidetc_tensor *xt, *yt, *outs[2] = {NULL, NULL};
    hidetc_tensor_wrap(&xt, HIDETC_F32, 2, (int64_t[]){3, K}, x);
    hidetc_tensor_wrap(&yt, HIDETC_F32, 2, (int64_t[]){2, N}, y);
    outs[0] = yt;
    CHECK(hidetc_session_run(s, 1, NULL, &xt, 0, NULL, outs) == HIDETC_ERR_INVALID);
    CHECK(has(hidetc_last_error(), "output") && has(hidetc_last_error(), "dimension 0") &&
          has(hidetc_last_error(), "expected 3"));
    hidetc_tensor_free(yt), hidetc_tensor_free(xt);
    float xk[2 * (K + 1)];
    hidetc_tensor_wrap(&xt, HIDETC_F32, 2, (int64_t[]){2, K + 1}, xk);
    outs[0] = NULL;
    CHECK(hidetc_session_run(s, 1, NULL, &xt, 0, NULL, outs) == HIDETC_ERR_INVALID);
    CHECK(has(hidetc_last_error(), "'x'") && has(hidetc_last_error(), "dimension 1"));
    hidetc_tensor_free(xt);
    CHECK(hidetc_session_run_buffers(s, (const void *[]){x}, (void *[]){y, y}) == HIDETC_ERR_INVALID);
    CHECK(has(hidetc_last_error(), "symbolic"));
    hidetc_session_free(s);
    /* tuned at two batches (a dispatch table where the winners differ): right at every one */
    hidetc_tune_shape ts = {"batch", 2, (int64_t[]){1, 6}};
    o.tune_level = 1, o.num_tune_shapes = 1, o.tune_shapes = &ts;
    s = NULL;
    CHECK_MSG(hidetc_session_create(&s, model_path, &o) == HIDETC_OK, "%s", hidetc_last_error());
    for (int i = 0; s && i < 6; i++) {
        double e = run_check(s, batches[i], 99u + (unsigned)i);
        CHECK_MSG(e < 1e-5, "tuned symbolic session, batch %d: error %g", batches[i], e);
    }
    hidetc_session_free(s);
    hidetc_tune_shape bad = {"bacth", 1, (int64_t[]){2}};
    o.tune_shapes = &bad;
    CHECK(hidetc_session_create(&s, model_path, &o) == HIDETC_ERR_INVALID);
    CHECK(has(hidetc_last_error(), "bacth") && has(hidetc_last_error(), "its symbols: batch"));
}

static void test_symbolic_errors(void) {
    hidetc_session *s = (hidetc_session *)1;
    hidetc_session_options o;
    hidetc_session_options_init(&o);
    hidetc_dim typo = {"bacth", 2};
    o.dims = &typo, o.num_dims = 1;
    CHECK(hidetc_session_create(&s, model_path, &o) == HIDETC_ERR_INVALID);
    CHECK(has(hidetc_last_error(), "'bacth'") && has(hidetc_last_error(), "batch"));
    hidetc_dim zero = {"batch", 0};
    o.dims = &zero;
    CHECK(hidetc_session_create(&s, model_path, &o) == HIDETC_ERR_INVALID);
    /* shapes: the fixed dim must agree, the rank too, the input must exist */
    hidetc_input_shape bad = {"x", 2, (int64_t[]){2, K + 1}};
    o.num_dims = 0, o.shapes = &bad, o.num_shapes = 1;
    CHECK(hidetc_session_create(&s, model_path, &o) == HIDETC_ERR_INVALID);
    CHECK(has(hidetc_last_error(), "dimension 1") && has(hidetc_last_error(), "5"));
    hidetc_input_shape rank = {"x", 3, (int64_t[]){2, K, 1}};
    o.shapes = &rank;
    CHECK(hidetc_session_create(&s, model_path, &o) == HIDETC_ERR_INVALID);
    hidetc_input_shape none = {"q", 2, (int64_t[]){2, K}};
    o.shapes = &none;
    CHECK(hidetc_session_create(&s, model_path, &o) == HIDETC_ERR_INVALID);
    CHECK(has(hidetc_last_error(), "'q'") && has(hidetc_last_error(), "x"));
    o.num_shapes = 0, o.abi_version = HIDETC_ABI_VERSION + 1;
    CHECK(hidetc_session_create(&s, model_path, &o) == HIDETC_ERR_INVALID);
    CHECK(has(hidetc_last_error(), "ABI version"));
    o.abi_version = -1; /* below HIDETC_ABI_OLDEST (0 reads as the current version) */
    CHECK(hidetc_session_create(&s, model_path, &o) == HIDETC_ERR_INVALID);
    /* a version-1 caller's options end before the tune shapes: what lies there is not read */
    o.abi_version = 1, o.num_tune_shapes = 12345, o.tune_shapes = (const hidetc_tune_shape *)8;
    CHECK_MSG(hidetc_session_create(&s, model_path, &o) == HIDETC_OK, "%s", hidetc_last_error());
    hidetc_session_free(s);
    s = NULL;
    /* the current version reads them: tuning is needed, names checked */
    o.abi_version = HIDETC_ABI_VERSION;
    hidetc_tune_shape ts = {"batch", 2, (int64_t[]){1, 4}};
    o.num_tune_shapes = 1, o.tune_shapes = &ts;
    CHECK(hidetc_session_create(&s, model_path, &o) == HIDETC_ERR_INVALID);
    CHECK(has(hidetc_last_error(), "--tune-shapes"));
    o.num_tune_shapes = 1, o.tune_shapes = NULL;
    CHECK(hidetc_session_create(&s, model_path, &o) == HIDETC_ERR_INVALID);
    CHECK(has(hidetc_last_error(), "num_tune_shapes without tune_shapes"));
    o.num_tune_shapes = 0;
    CHECK(hidetc_session_create(&s, "/nonexistent/m.onnx", NULL) == HIDETC_ERR_IO);
    CHECK(has(hidetc_last_error(), "/nonexistent/m.onnx"));
}

static void test_info_and_runs(void) {
    hidetc_session *s = open_batch(3, 2);
    if (!s) return;
    CHECK_EQ_INT(hidetc_session_num_inputs(s), 1);
    CHECK_EQ_INT(hidetc_session_num_outputs(s), 2);
    hidetc_value_info v;
    CHECK(hidetc_session_input_info(s, 0, &v) == HIDETC_OK);
    CHECK(!strcmp(v.name, "x") && v.dtype == HIDETC_F32 && v.ndim == 2 && v.dims[0] == 3 &&
          v.dims[1] == K && v.dim_names[0] && !strcmp(v.dim_names[0], "batch") && !v.dim_names[1]);
    CHECK(hidetc_session_output_info(s, 1, &v) == HIDETC_OK);
    CHECK(!strcmp(v.name, "z") && v.ndim == 2 && v.dims[0] == 3 && v.dims[1] == N);
    CHECK(hidetc_session_input_info(s, 1, &v) == HIDETC_ERR_INVALID);
    CHECK_EQ_INT(hidetc_session_input_index(s, "x"), 0);
    CHECK_EQ_INT(hidetc_session_output_index(s, "z"), 1);
    CHECK_EQ_INT(hidetc_session_output_index(s, "w"), -1);
    CHECK(!strncmp(hidetc_session_target(s), "cpu", 3));
    CHECK(run_check(s, 3, 1) < 1e-5);

    /* outputs by name, reordered, one given (written in place) and one allocated */
    float x[3 * K], ry[3 * N], rz[3 * N], zbuf[3 * N];
    fill(x, 3 * K, 7);
    reference(x, 3, ry, rz);
    hidetc_tensor *xt, *zt, *outs[2];
    hidetc_tensor_wrap(&xt, HIDETC_F32, 2, (int64_t[]){3, K}, x);
    hidetc_tensor_wrap(&zt, HIDETC_F32, 2, (int64_t[]){3, N}, zbuf);
    outs[0] = zt, outs[1] = NULL;
    const char *on[2] = {"z", "y"}, *in[1] = {"x"};
    CHECK(hidetc_session_run(s, 1, in, &xt, 2, on, outs) == HIDETC_OK);
    CHECK(outs[0] == zt && max_rel_err(zbuf, rz, 3 * N) < 1e-5);
    CHECK(outs[1] && hidetc_tensor_bytes(outs[1]) == sizeof ry &&
          max_rel_err(hidetc_tensor_data(outs[1]), ry, 3 * N) < 1e-5);
    hidetc_tensor_free(outs[1]);
    /* one output only */
    const char *only[1] = {"y"};
    hidetc_tensor *one = NULL;
    CHECK(hidetc_session_run(s, 1, in, &xt, 1, only, &one) == HIDETC_OK);
    CHECK(one && max_rel_err(hidetc_tensor_data(one), ry, 3 * N) < 1e-5);
    hidetc_tensor_free(one);
    /* the positional fast path */
    float yb[3 * N], zb[3 * N];
    CHECK(hidetc_session_run_buffers(s, (const void *[]){x}, (void *[]){yb, zb}) == HIDETC_OK);
    CHECK(max_rel_err(yb, ry, 3 * N) < 1e-5 && max_rel_err(zb, rz, 3 * N) < 1e-5);

    /* errors, each naming what is wrong; nothing is returned on failure */
    hidetc_tensor *bad, *o2[2] = {NULL, NULL};
    hidetc_tensor_wrap(&bad, HIDETC_F32, 2, (int64_t[]){4, K}, x);
    CHECK(hidetc_session_run(s, 1, in, &bad, 0, NULL, o2) == HIDETC_ERR_INVALID && !o2[0] && !o2[1]);
    CHECK(has(hidetc_last_error(), "'x'") && has(hidetc_last_error(), "dimension 0") &&
          has(hidetc_last_error(), "'batch'") && has(hidetc_last_error(), "expected 3"));
    hidetc_tensor_free(bad);
    hidetc_tensor_wrap(&bad, HIDETC_F64, 2, (int64_t[]){3, K}, x);
    CHECK(hidetc_session_run(s, 1, in, &bad, 0, NULL, o2) == HIDETC_ERR_INVALID);
    CHECK(has(hidetc_last_error(), "dtype f64") && has(hidetc_last_error(), "f32"));
    hidetc_tensor_free(bad);
    hidetc_tensor_wrap(&bad, HIDETC_F32, 1, (int64_t[]){3 * K}, x);
    CHECK(hidetc_session_run(s, 1, in, &bad, 0, NULL, o2) == HIDETC_ERR_INVALID);
    CHECK(has(hidetc_last_error(), "rank 1"));
    hidetc_tensor_free(bad);
    const char *wrong[1] = {"input"};
    CHECK(hidetc_session_run(s, 1, wrong, &xt, 0, NULL, o2) == HIDETC_ERR_INVALID);
    CHECK(has(hidetc_last_error(), "'input'") && has(hidetc_last_error(), "'x'"));
    const char *noout[1] = {"q"};
    CHECK(hidetc_session_run(s, 1, in, &xt, 1, noout, o2) == HIDETC_ERR_INVALID);
    CHECK(has(hidetc_last_error(), "'q'"));
    CHECK(hidetc_session_run(s, 0, NULL, NULL, 0, NULL, o2) == HIDETC_ERR_INVALID);
    hidetc_tensor *small;
    hidetc_tensor_alloc(&small, HIDETC_F32, 2, (int64_t[]){3, N - 1});
    o2[0] = small, o2[1] = NULL;
    CHECK(hidetc_session_run(s, 1, in, &xt, 0, NULL, o2) == HIDETC_ERR_INVALID && !o2[1]);
    CHECK(has(hidetc_last_error(), "output 'y'"));
    hidetc_tensor_free(small);
    CHECK(hidetc_tensor_wrap(&bad, HIDETC_F32, 2, (int64_t[]){3, K}, NULL) == HIDETC_ERR_INVALID);
    CHECK(hidetc_tensor_wrap(&bad, HIDETC_F32, 2, (int64_t[]){-1, K}, x) == HIDETC_ERR_INVALID);
    hidetc_tensor_free(xt), hidetc_tensor_free(zt);
    hidetc_session_free(s);
}

static void test_bytes_and_files(void) {
    hidetc_session_options o;
    hidetc_session_options_init(&o);
    hidetc_input_shape sh = {"x", 2, (int64_t[]){4, K}};
    o.shapes = &sh, o.num_shapes = 1, o.num_threads = 1;
    hidetc_session *s = NULL;
    CHECK_MSG(hidetc_session_create_from_bytes(&s, model_buf, model_size, &o) == HIDETC_OK, "%s",
              hidetc_last_error());
    if (!s) return;
    CHECK(run_check(s, 4, 3) < 1e-5);
    char path[300];
    snprintf(path, sizeof path, "%s/mlp.hcm", tmpdir);
    CHECK_MSG(hidetc_session_save(s, path) == HIDETC_OK, "%s", hidetc_last_error());
    hidetc_session_free(s);
    s = NULL;
    CHECK_MSG(hidetc_session_create(&s, path, NULL) == HIDETC_OK, "%s", hidetc_last_error());
    if (s) CHECK(run_check(s, 4, 3) < 1e-5);
    hidetc_session_free(s);
    /* a compiled file from bytes; dims do not apply to it */
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n);
    CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    s = NULL;
    CHECK_MSG(hidetc_session_create_from_bytes(&s, buf, (size_t)n, NULL) == HIDETC_OK, "%s",
              hidetc_last_error());
    if (s) CHECK(run_check(s, 4, 5) < 1e-5);
    hidetc_session_free(s);
    s = (hidetc_session *)1;
    hidetc_dim d = {"batch", 4};
    o.num_shapes = 0, o.dims = &d, o.num_dims = 1;
    CHECK(hidetc_session_create_from_bytes(&s, buf, (size_t)n, &o) == HIDETC_ERR_INVALID && !s);
    CHECK(has(hidetc_last_error(), "already compiled"));
    o.num_dims = 0, o.num_threads = 3;
    CHECK(hidetc_session_create(&s, path, &o) == HIDETC_ERR_INVALID);
    CHECK(has(hidetc_last_error(), "1 threads"));
    buf[n / 2] ^= 0x5a; /* damaged: refused, never loaded */
    CHECK(hidetc_session_create_from_bytes(&s, buf, (size_t)n, NULL) != HIDETC_OK && !s);
    free(buf);
    CHECK(hidetc_session_create_from_bytes(&s, "garbage", 7, NULL) == HIDETC_ERR_INVALID);
}

/* ---- several threads on one session -------------------------------------------------- */
/* 8 threads x 200 runs (HIDETC_TEST_RUNS overrides: fewer under helgrind) on one session,
 * each run's outputs compared bit for bit with the same input's run from one thread. */
enum { T = 8, NIN = 16, TB = 8 };
static int runs_per_thread = 200;
static float thread_x[NIN][TB * K], single_y[NIN][TB * N], single_z[NIN][TB * N];

typedef struct worker {
    hidetc_session *s;
    int id, bad, failed;
} worker;

static void *work(void *p) {
    worker *w = p;
    float y[TB * N], z[TB * N];
    for (int i = 0; i < runs_per_thread; i++) {
        int k = (w->id * 7 + i) % NIN;
        if (hidetc_session_run_buffers(w->s, (const void *[]){thread_x[k]}, (void *[]){y, z}) !=
            HIDETC_OK) {
            w->failed++;
            continue;
        }
        w->bad += memcmp(y, single_y[k], sizeof y) != 0 || memcmp(z, single_z[k], sizeof z) != 0;
    }
    return NULL;
}

static void test_concurrent_runs(void) {
    const char *env = getenv("HIDETC_TEST_RUNS"), *th_env = getenv("HIDETC_TEST_THREADS");
    if (env && atoi(env) > 0) runs_per_thread = atoi(env);
    /* HIDETC_TEST_THREADS=1 (scripts/helgrind-session.sh): one worker per run, so that
     * helgrind, blind to libgomp's futex handoffs, only sees the runs' own threads */
    hidetc_session *s = open_batch(TB, th_env && atoi(th_env) > 0 ? atoi(th_env) : 2);
    if (!s) return;
    for (int k = 0; k < NIN; k++) {
        fill(thread_x[k], TB * K, 100u + (unsigned)k);
        CHECK(hidetc_session_run_buffers(s, (const void *[]){thread_x[k]},
                                         (void *[]){single_y[k], single_z[k]}) == HIDETC_OK);
    }
    CHECK(run_check(s, TB, 100u) < 1e-5); /* and right */
    pthread_t th[T];
    worker w[T];
    for (int i = 0; i < T; i++) {
        w[i] = (worker){s, i, 0, 0};
        pthread_create(&th[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < T; i++)
        CHECK_MSG(w[i].bad == 0 && w[i].failed == 0, "thread %d: %d of %d runs differ from the "
                  "single-threaded run, %d failed", i, w[i].bad, runs_per_thread, w[i].failed);
    hidetc_session_free(s);
}

/* The caller's OpenMP thread count and CPU mask are the same after a run; without
 * pin_threads (and HIDETC_BIND unset) no worker is pinned. */
static void test_process_hygiene(void) {
    unsetenv("HIDETC_BIND");
    omp_set_num_threads(3);
    cpu_set_t before, after;
    pthread_getaffinity_np(pthread_self(), sizeof before, &before);
    hidetc_session *s = open_batch(2, 2);
    if (!s) return;
    CHECK(run_check(s, 2, 9) < 1e-5);
    CHECK_EQ_INT(omp_get_max_threads(), 3);
    pthread_getaffinity_np(pthread_self(), sizeof after, &after);
    CHECK(CPU_EQUAL(&before, &after));
    if (CPU_COUNT(&before) >= 2) {
        int narrow = 0;
#pragma omp parallel num_threads(2)
        {
            cpu_set_t m;
            pthread_getaffinity_np(pthread_self(), sizeof m, &m);
#pragma omp atomic
            narrow += CPU_COUNT(&m) == 1;
        }
        CHECK_MSG(narrow == 0, "%d OpenMP threads pinned without pin_threads", narrow);
    }
    hidetc_session_free(s);
}

static void progress(void *user, const char *stage, int done, int total) {
    int *n = user;
    if (!strcmp(stage, "done") && done == total) n[0]++;
    if (!strcmp(stage, "schedule")) n[1]++;
}

static void test_progress_and_status(void) {
    int seen[2] = {0, 0};
    hidetc_session_options o;
    hidetc_session_options_init(&o);
    hidetc_dim d = {"batch", 1};
    o.dims = &d, o.num_dims = 1, o.progress = progress, o.progress_user = seen;
    hidetc_session *s = NULL;
    CHECK(hidetc_session_create(&s, model_path, &o) == HIDETC_OK);
    CHECK(seen[0] == 1 && seen[1] >= 1);
    if (s) CHECK(run_check(s, 1, 11) < 1e-5);
    hidetc_session_free(s);
    CHECK_EQ_INT(hidetc_abi_version(), HIDETC_ABI_VERSION);
    for (int st = HIDETC_OK; st <= HIDETC_ERR_DEVICE; st++)
        CHECK(strstr(hidetc_status_string((hidetc_status)st), "HIDETC_") != NULL);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hidetc-session-XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    for (int i = 0; i < K * N; i++) W[i] = (float)((i * 37 % 19) - 9) / 10.0f;
    for (int i = 0; i < N; i++) B[i] = (float)(i % 3) / 10.0f - 0.1f;
    model_buf = model_bytes(&model_size);
    static char p[300];
    snprintf(p, sizeof p, "%s/mlp.onnx", tmpdir);
    FILE *f = fopen(p, "wb");
    fwrite(model_buf, 1, model_size, f);
    fclose(f);
    model_path = p;
    const char *only = getenv("HIDETC_TEST_ONLY");
    if (only && !strcmp(only, "concurrency")) { /* scripts/helgrind-session.sh */
        test_concurrent_runs();
        free(model_buf);
        char rm[300];
        snprintf(rm, sizeof rm, "rm -rf %s", tmpdir);
        if (system(rm) != 0) return 1;
        TEST_DONE();
    }
    test_symbolic_errors();
    test_symbolic_session();
    test_info_and_runs();
    test_bytes_and_files();
    test_concurrent_runs();
    test_process_hygiene();
    test_progress_and_status();
    free(model_buf);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) return 1;
    TEST_DONE();
}
