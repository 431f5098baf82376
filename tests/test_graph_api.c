/* test_graph_api.c — the public graph and model API (include/hidetc.h): graphs built op
 * by op, compiled and run, checked against results computed here with plain loops;
 * errors name what is wrong; an ONNX backend test runs through hidetc_model_load_onnx. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontend/onnx.h"
#include "hidetc.h"
#include "test.h"

static hidetc_options opts = {.num_threads = 2};

static void fill(float *p, int n, unsigned seed) {
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
    }
}

static double max_diff(const float *a, const float *b, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

/* y = LeakyRelu(x @ w + b, 0.1) */
static void test_mlp(void) {
    enum { M = 3, K = 5, N = 4 };
    float x[M * K], w[K * N], b[N], y[M * N], ref[M * N];
    fill(x, M * K, 1);
    fill(w, K * N, 2);
    fill(b, N, 3);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = b[j];
            for (int k = 0; k < K; k++) s += (double)x[i * K + k] * w[k * N + j];
            ref[i * N + j] = (float)(s > 0 ? s : 0.1 * s);
        }

    hidetc_graph *g;
    CHECK(hidetc_graph_init(&g, "mlp") == HIDETC_OK);
    hidetc_value vx = hidetc_graph_input(g, "x", HIDETC_F32, 2, (int64_t[]){M, K});
    hidetc_value vw = hidetc_graph_constant(g, "w", HIDETC_F32, 2, (int64_t[]){K, N}, w);
    hidetc_value vb = hidetc_graph_constant(g, NULL, HIDETC_F32, 1, (int64_t[]){N}, b);
    CHECK(vx >= 0 && vw >= 0 && vb >= 0);
    hidetc_value t, in[2] = {vx, vw};
    CHECK(hidetc_graph_op(g, "MatMul", 2, in, 0, NULL, 1, &t) == HIDETC_OK);
    int64_t shape[HIDETC_MAX_DIMS];
    hidetc_dtype dt = 0;
    CHECK_EQ_INT(hidetc_graph_value_shape(g, t, &dt, shape), 2);
    CHECK(dt == HIDETC_F32 && shape[0] == M && shape[1] == N);
    in[0] = t;
    in[1] = vb;
    CHECK(hidetc_graph_op(g, "Add", 2, in, 0, NULL, 1, &t) == HIDETC_OK);
    hidetc_attr alpha = {.name = "alpha", .kind = HIDETC_ATTR_FLOAT, .f = 0.1};
    CHECK(hidetc_graph_op(g, "LeakyRelu", 1, &t, 1, &alpha, 1, &t) == HIDETC_OK);
    CHECK(hidetc_graph_output(g, t, "y") == HIDETC_OK);
    char *text = hidetc_graph_to_string(g);
    CHECK(strstr(text, "LeakyRelu") && strstr(text, "alpha=0.1") && strstr(text, "return %y"));
    free(text);

    hidetc_model *m = NULL;
    hidetc_status st = hidetc_model_compile(&m, g, &opts);
    CHECK_MSG(st == HIDETC_OK, "%s", hidetc_last_error());
    if (st != HIDETC_OK) return;
    CHECK_EQ_INT(hidetc_model_num_inputs(m), 1);
    CHECK_EQ_INT(hidetc_model_num_outputs(m), 1);
    CHECK_STR(hidetc_model_input_name(m, 0), "x");
    CHECK_STR(hidetc_model_output_name(m, 0), "y");
    CHECK(hidetc_model_input_dtype(m, 0) == HIDETC_F32);
    CHECK_EQ_INT(hidetc_model_output_shape(m, 0, shape), 2);
    CHECK(shape[0] == M && shape[1] == N);
    CHECK_EQ_INT(hidetc_model_input_shape(m, 1, shape), -1);
    CHECK(hidetc_model_output_name(m, 3) == NULL);
    const void *ins[1] = {x};
    void *outs[1] = {y};
    st = hidetc_model_run(m, ins, outs);
    CHECK_MSG(st == HIDETC_OK, "%s", hidetc_last_error());
    CHECK_MSG(max_diff(y, ref, M * N) < 1e-5, "max diff %g", max_diff(y, ref, M * N));
    /* a second run with other data */
    fill(x, M * K, 7);
    memset(y, 0, sizeof y);
    CHECK(hidetc_model_run(m, ins, outs) == HIDETC_OK);
    CHECK(y[0] != 0 || y[1] != 0);
    outs[0] = NULL;
    CHECK(hidetc_model_run(m, ins, outs) == HIDETC_ERR_INVALID);
    CHECK(strstr(hidetc_last_error(), "'y'") != NULL);
    hidetc_model_free(m);
}

/* Conv (3x3, pad 1, bias) -> BatchNorm -> Relu -> GlobalAveragePool -> Flatten -> Gemm,
 * with a Shape-computed Reshape in the middle: the whole optimizer and runtime path. */
enum { CN = 2, CC = 3, CH = 6, CW = 5, CO = 4, CF = 3 };
static float cx[CN * CC * CH * CW], cw[CO * CC * 9], cb[CO], bn[4][CO], fw[CF * CO], fb[CF];

static void conv_reference(float *out) {
    for (int n = 0; n < CN; n++) {
        double pooled[CO];
        for (int o = 0; o < CO; o++) {
            double sum = 0;
            for (int i = 0; i < CH; i++)
                for (int j = 0; j < CW; j++) {
                    double s = cb[o];
                    for (int c = 0; c < CC; c++)
                        for (int ki = 0; ki < 3; ki++)
                            for (int kj = 0; kj < 3; kj++) {
                                int ii = i + ki - 1, jj = j + kj - 1;
                                if (ii < 0 || ii >= CH || jj < 0 || jj >= CW) continue;
                                s += (double)cx[((n * CC + c) * CH + ii) * CW + jj] *
                                     cw[((o * CC + c) * 3 + ki) * 3 + kj];
                            }
                    double v = (s - bn[2][o]) / sqrt(bn[3][o] + 1e-5) * bn[0][o] + bn[1][o];
                    sum += v > 0 ? v : 0;
                }
            pooled[o] = sum / (CH * CW);
        }
        for (int f = 0; f < CF; f++) {
            double s = fb[f];
            for (int o = 0; o < CO; o++) s += pooled[o] * fw[f * CO + o];
            out[n * CF + f] = (float)s;
        }
    }
}

static hidetc_value op1(hidetc_graph *g, const char *op, int nin, const hidetc_value *in,
                        int nattrs, const hidetc_attr *attrs) {
    hidetc_value v = -1;
    hidetc_status st = hidetc_graph_op(g, op, nin, in, nattrs, attrs, 1, &v);
    CHECK_MSG(st == HIDETC_OK, "%s: %s", op, hidetc_last_error());
    return v;
}

static void test_convnet(void) {
    fill(cx, CN * CC * CH * CW, 11);
    fill(cw, CO * CC * 9, 12);
    fill(cb, CO, 13);
    for (int k = 0; k < 4; k++) fill(bn[k], CO, 20 + k);
    for (int o = 0; o < CO; o++) bn[3][o] = 0.5f + fabsf(bn[3][o]); /* variances > 0 */
    fill(fw, CF * CO, 14);
    fill(fb, CF, 15);
    float ref[CN * CF], y[CN * CF];
    conv_reference(ref);

    hidetc_graph *g;
    hidetc_graph_init(&g, "convnet");
    hidetc_value x = hidetc_graph_input(g, "image", HIDETC_F32, 4, (int64_t[]){CN, CC, CH, CW});
    hidetc_value in[5] = {x, hidetc_graph_constant(g, "w", HIDETC_F32, 4,
                                                  (int64_t[]){CO, CC, 3, 3}, cw),
                          hidetc_graph_constant(g, "b", HIDETC_F32, 1, (int64_t[]){CO}, cb)};
    int64_t pads[4] = {1, 1, 1, 1};
    hidetc_attr pa = {.name = "pads", .kind = HIDETC_ATTR_INTS, .n = 4, .ints = pads};
    hidetc_value t = op1(g, "Conv", 3, in, 1, &pa);
    in[0] = t;
    for (int k = 0; k < 4; k++)
        in[1 + k] = hidetc_graph_constant(g, NULL, HIDETC_F32, 1, (int64_t[]){CO}, bn[k]);
    t = op1(g, "BatchNormalization", 5, in, 0, NULL);
    t = op1(g, "Relu", 1, &t, 0, NULL);
    t = op1(g, "GlobalAveragePool", 1, &t, 0, NULL);
    /* Reshape(t, Concat(Shape(t)[0:1], [-1])): a shape computation folded while building */
    hidetc_value shp = op1(g, "Shape", 1, &t, 0, NULL);
    hidetc_value sl[3] = {shp, hidetc_graph_constant(g, NULL, HIDETC_I64, 1, (int64_t[]){1},
                                                     (int64_t[]){0}),
                          hidetc_graph_constant(g, NULL, HIDETC_I64, 1, (int64_t[]){1},
                                                (int64_t[]){1})};
    hidetc_value n0 = op1(g, "Slice", 3, sl, 0, NULL);
    hidetc_value cat[2] = {n0, hidetc_graph_constant(g, NULL, HIDETC_I64, 1, (int64_t[]){1},
                                                     (int64_t[]){-1})};
    hidetc_attr axis = {.name = "axis", .kind = HIDETC_ATTR_INT, .i = 0};
    hidetc_value rs[2] = {t, op1(g, "Concat", 2, cat, 1, &axis)};
    t = op1(g, "Reshape", 2, rs, 0, NULL);
    int64_t shape[HIDETC_MAX_DIMS];
    CHECK_EQ_INT(hidetc_graph_value_shape(g, t, NULL, shape), 2);
    CHECK(shape[0] == CN && shape[1] == CO);
    hidetc_value gi[3] = {t, hidetc_graph_constant(g, NULL, HIDETC_F32, 2, (int64_t[]){CF, CO}, fw),
                          hidetc_graph_constant(g, NULL, HIDETC_F32, 1, (int64_t[]){CF}, fb)};
    hidetc_attr tb = {.name = "transB", .kind = HIDETC_ATTR_INT, .i = 1};
    t = op1(g, "Gemm", 3, gi, 1, &tb);
    CHECK(hidetc_graph_output(g, t, "logits") == HIDETC_OK);

    hidetc_model *m = NULL;
    hidetc_status st = hidetc_model_compile(&m, g, &opts);
    CHECK_MSG(st == HIDETC_OK, "%s", hidetc_last_error());
    if (st != HIDETC_OK) return;
    CHECK(hidetc_model_arena_bytes(m) > 0);
    const void *ins[1] = {cx};
    void *outs[1] = {y};
    st = hidetc_model_run(m, ins, outs);
    CHECK_MSG(st == HIDETC_OK, "%s", hidetc_last_error());
    CHECK_MSG(max_diff(y, ref, CN * CF) < 1e-4, "max diff %g", max_diff(y, ref, CN * CF));
    hidetc_model_free(m);
}

static void test_errors(void) {
    hidetc_graph *g;
    hidetc_graph_init(&g, "errors");
    hidetc_value x = hidetc_graph_input(g, "x", HIDETC_F32, 2, (int64_t[]){2, 3});
    hidetc_value y;
    CHECK(hidetc_graph_op(g, "NoSuchOp", 1, &x, 0, NULL, 1, &y) == HIDETC_ERR_INVALID);
    CHECK(strstr(hidetc_last_error(), "NoSuchOp") != NULL);
    hidetc_value bad = 12345;
    CHECK(hidetc_graph_op(g, "Relu", 1, &bad, 0, NULL, 1, &y) == HIDETC_ERR_INVALID);
    CHECK(strstr(hidetc_last_error(), "input 0") != NULL);
    hidetc_value two[2] = {x, x};
    CHECK(hidetc_graph_op(g, "MatMul", 2, two, 0, NULL, 1, &y) == HIDETC_ERR_INVALID);
    CHECK(strstr(hidetc_last_error(), "MatMul") != NULL); /* names the node */
    CHECK(hidetc_graph_op(g, "Relu", 2, two, 0, NULL, 1, &y) == HIDETC_ERR_INVALID);
    CHECK(hidetc_graph_input(g, "x", HIDETC_F32, 1, (int64_t[]){1}) == -1);
    CHECK(strstr(hidetc_last_error(), "'x'") != NULL);
    CHECK(hidetc_graph_input(g, "z", (hidetc_dtype)99, 1, (int64_t[]){1}) == -1);
    CHECK(hidetc_graph_input(g, "z", HIDETC_F32, 9, (int64_t[9]){0}) == -1);
    CHECK(hidetc_graph_input(g, "z", HIDETC_F32, 1, (int64_t[]){-2}) == -1);
    CHECK(hidetc_graph_set_opset(g, 0) == HIDETC_ERR_UNSUPPORTED);
    CHECK(hidetc_graph_set_opset(g, 29) == HIDETC_ERR_UNSUPPORTED);
    CHECK(hidetc_graph_set_opset(g, 13) == HIDETC_OK);
    hidetc_attr nameless = {.kind = HIDETC_ATTR_INT};
    CHECK(hidetc_graph_op(g, "Relu", 1, &x, 1, &nameless, 1, &y) == HIDETC_ERR_INVALID);
    /* a failed op leaves the graph usable */
    CHECK(hidetc_graph_op(g, "Relu", 1, &x, 0, NULL, 1, &y) == HIDETC_OK);
    CHECK(hidetc_graph_output(g, y, "x") == HIDETC_ERR_INVALID); /* name taken */
    CHECK(hidetc_graph_output(g, -1, NULL) == HIDETC_ERR_INVALID);
    CHECK(hidetc_graph_value_shape(g, -1, NULL, NULL) == -1);
    hidetc_graph_free(g);

    hidetc_model *m = (hidetc_model *)&m;
    CHECK(hidetc_model_compile(&m, NULL, NULL) == HIDETC_ERR_INVALID);
    CHECK(hidetc_model_load_onnx(&m, "/nonexistent/model.onnx", NULL) != HIDETC_OK);
    CHECK(m == NULL);
    CHECK(strstr(hidetc_last_error(), "/nonexistent/model.onnx") != NULL);
    hidetc_model_free(NULL);
    hidetc_graph_free(NULL);
}

/* An ONNX backend test through the public API, against its stored output. */
static void test_onnx(void) {
    const char *dir = "/usr/share/libonnx-testdata/data/node/test_relu";
    if (access(dir, R_OK) != 0) {
        printf("skip: %s not installed\n", dir);
        return;
    }
    char path[512];
    hc_host_tensor in = {0}, out = {0};
    hc_error err = {0};
    snprintf(path, sizeof path, "%s/test_data_set_0/input_0.pb", dir);
    CHECK_MSG(hc_onnx_load_tensor(path, &in, &err) == HC_OK, "%s", err.msg);
    snprintf(path, sizeof path, "%s/test_data_set_0/output_0.pb", dir);
    CHECK_MSG(hc_onnx_load_tensor(path, &out, &err) == HC_OK, "%s", err.msg);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    hidetc_model *m = NULL;
    hidetc_status st = hidetc_model_load_onnx(&m, path, &opts);
    CHECK_MSG(st == HIDETC_OK, "%s", hidetc_last_error());
    if (st == HIDETC_OK && in.data && out.data) {
        int64_t shape[HIDETC_MAX_DIMS];
        int nd = hidetc_model_output_shape(m, 0, shape);
        int64_t n = 1;
        for (int i = 0; i < nd; i++) n *= shape[i];
        float *y = calloc((size_t)n, sizeof(float));
        const void *ins[1] = {in.data};
        void *outs[1] = {y};
        CHECK(hidetc_model_run(m, ins, outs) == HIDETC_OK);
        CHECK(max_diff(y, out.data, (int)n) == 0);
        free(y);
    }
    hidetc_model_free(m);
    hc_host_tensor_free(&in);
    hc_host_tensor_free(&out);
}

int main(void) {
    test_mlp();
    test_convnet();
    test_errors();
    test_onnx();
    TEST_DONE();
}
