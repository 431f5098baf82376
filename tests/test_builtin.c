/* test_builtin.c — the builtin models: the table, shapes and parameter counts of the full
 * models, determinism, and the tiny variants compiled by the runtime against the
 * reference graph evaluator. */
#include <stdlib.h>
#include <string.h>

#include "models/builtin.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "test.h"

static void test_names(void) {
    const char *const *names = hc_builtin_model_names();
    int n = 0;
    bool resnet50 = false, bert = false;
    for (; names[n]; n++) {
        resnet50 |= strcmp(names[n], "resnet50") == 0;
        bert |= strcmp(names[n], "bert") == 0;
    }
    CHECK(n >= 2);
    CHECK(resnet50 && bert);

    hc_error err = {0};
    hc_graph *g = (hc_graph *)1;
    CHECK_EQ_INT(hc_builtin_model("resnet51", &g, &err), HC_ERR_INVALID);
    CHECK(g == NULL);
    CHECK_MSG(strstr(err.msg, "'resnet51'") && strstr(err.msg, "resnet50") &&
                  strstr(err.msg, "bert-tiny"),
              "%s", err.msg);
    /* a NULL error is allowed */
    CHECK_EQ_INT(hc_builtin_model("nope", &g, NULL), HC_ERR_INVALID);
}

static const hc_tensor *find(hc_tensor *const *ts, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++) {
        if (strcmp(ts[i]->name, name) == 0) return ts[i];
    }
    return NULL;
}
static const hc_tensor *find_in(const hc_graph *g, const char *name) {
    return find(g->inputs.data, g->inputs.len, name);
}
static const hc_tensor *find_out(const hc_graph *g, const char *name) {
    return find(g->outputs.data, g->outputs.len, name);
}

static bool shape_is(const hc_tensor *t, int ndim, const int64_t *shape) {
    if (!t || !t->shape_known || t->ndim != ndim) return false;
    for (int d = 0; d < ndim; d++) {
        if (t->shape[d] != shape[d]) return false;
    }
    return true;
}

/* Weights: f32 constants, not counting BN running statistics (torch's buffers). */
static int64_t count_params(const hc_graph *g) {
    int64_t n = 0;
    for (size_t i = 0; i < g->tensors.len; i++) {
        const hc_tensor *t = g->tensors.data[i];
        if (!t->data || t->dtype != HC_F32 || t->ndim == 0) continue;
        if (strstr(t->name, "running_")) continue;
        n += hc_tensor_numel(t);
    }
    return n;
}

static uint64_t hash_constants(const hc_graph *g) {
    hc_hasher h;
    hc_hash_init(&h);
    for (size_t i = 0; i < g->tensors.len; i++) {
        const hc_tensor *t = g->tensors.data[i];
        if (t->data) hc_hash_update(&h, t->data, hc_tensor_nbytes(t));
    }
    return h.h1 ^ h.h2;
}

static hc_graph *build_inferred(const char *name) {
    hc_error err = {0};
    hc_graph *g = NULL;
    CHECK_MSG(hc_builtin_model(name, &g, &err) == HC_OK, "%s: %s", name, err.msg);
    if (!g) return NULL;
    hc_status st = hc_pass_infer_shapes(g, &err);
    CHECK_MSG(st == HC_OK, "%s: shape inference: %s", name, err.msg);
    if (st != HC_OK) {
        hc_graph_free(g);
        return NULL;
    }
    return g;
}

static void test_resnet50(void) {
    hc_graph *g = build_inferred("resnet50");
    if (!g) return;
    int64_t in[4] = {1, 3, 224, 224}, out[2] = {1, 1000};
    CHECK_EQ_INT(g->inputs.len, 1);
    CHECK_EQ_INT(g->outputs.len, 1);
    CHECK(shape_is(find_in(g, "input"), 4, in));
    CHECK(shape_is(find_out(g, "logits"), 2, out));
    /* torchvision's resnet50 has 25,557,032 parameters (BN affine included) */
    CHECK_EQ_INT(count_params(g), 25557032);
    int convs = 0, bns = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        convs += g->nodes.data[i]->op == HC_OPK_CONV;
        bns += g->nodes.data[i]->op == HC_OPK_BATCH_NORMALIZATION;
    }
    CHECK_EQ_INT(convs, 53); /* 1 stem + 16 blocks x 3 + 4 downsample */
    CHECK_EQ_INT(bns, 53);
    hc_graph_free(g);
}

static void test_bert(void) {
    hc_graph *g = build_inferred("bert");
    if (!g) return;
    int64_t ids[2] = {1, 128}, hidden[3] = {1, 128, 768}, pooled[2] = {1, 768};
    CHECK_EQ_INT(g->inputs.len, 2);
    CHECK_EQ_INT(g->outputs.len, 2);
    const hc_tensor *t = find_in(g, "input_ids");
    CHECK(shape_is(t, 2, ids) && t->dtype == HC_I64);
    t = find_in(g, "attention_mask");
    CHECK(shape_is(t, 2, ids) && t->dtype == HC_I64);
    t = find_out(g, "last_hidden_state");
    CHECK(shape_is(t, 3, hidden) && t->dtype == HC_F32);
    t = find_out(g, "pooler_output");
    CHECK(shape_is(t, 2, pooled) && t->dtype == HC_F32);
    /* bert-base-uncased has 109,482,240 parameters with 512 positions and 2 token types;
     * the graph keeps the 128 positions and the one token type a seq-128 input uses */
    CHECK_EQ_INT(count_params(g), 109482240 - (512 - 128) * 768 - 768);
    hc_graph_free(g);
}

static void test_deterministic(void) {
    hc_error err = {0};
    hc_graph *a = NULL, *b = NULL;
    CHECK(hc_builtin_model("resnet18-tiny", &a, &err) == HC_OK);
    CHECK(hc_builtin_model("resnet18-tiny", &b, &err) == HC_OK);
    if (a && b) {
        CHECK(a->tensors.len == b->tensors.len);
        CHECK(hash_constants(a) == hash_constants(b));
    }
    hc_graph_free(a);
    hc_graph_free(b);
}

/* Random inputs: floats in [-1, 1]; for the BERT inputs token ids below `vocab` and a
 * mask of ones with the last quarter zero. */
static void *make_input(const hc_tensor *t, hc_rng *rng, int64_t vocab) {
    int64_t n = hc_tensor_numel(t);
    void *p = calloc((size_t)n, (size_t)hc_dtype_size(t->dtype));
    for (int64_t i = 0; i < n; i++) {
        if (t->dtype == HC_F32) {
            ((float *)p)[i] = (float)hc_rng_uniform(rng, -1, 1);
        } else if (strcmp(t->name, "attention_mask") == 0) {
            ((int64_t *)p)[i] = i < n * 3 / 4;
        } else {
            ((int64_t *)p)[i] = (int64_t)(hc_rng_next(rng) % (uint64_t)vocab);
        }
    }
    return p;
}

static double max_abs(const float *x, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
    return m;
}

static void compare_output(const char *model, const hc_tensor *t, const float *got,
                           const float *want) {
    int64_t n = hc_tensor_numel(t);
    double err = 0, ref = max_abs(want, n);
    for (int64_t i = 0; i < n; i++) err = fmax(err, fabs((double)got[i] - want[i]));
    if (isnan(max_abs(got, n))) err = INFINITY;
    double tol = 1e-3 * fmax(1.0, ref);
    CHECK_MSG(err <= tol, "%s %s: max error %g > %g", model, t->name, err, tol);
    CHECK_MSG(ref > 1e-3, "%s %s: output is all zeros", model, t->name);
    printf("%s %s: max_err %.3g (max_ref %.3g)\n", model, t->name, err, ref);
}

/* Compile the model with the runtime and compare with the reference evaluator. */
static void test_runtime_matches_reference(const char *name, int64_t vocab) {
    hc_graph *ref = build_inferred(name);
    hc_error err = {0};
    hc_graph *g = NULL;
    CHECK(hc_builtin_model(name, &g, &err) == HC_OK);
    if (!ref || !g) {
        hc_graph_free(ref);
        hc_graph_free(g);
        return;
    }
    hc_rng rng = {42};
    int nin = (int)ref->inputs.len, nout = (int)ref->outputs.len;
    void *in[4] = {0}, *want[4] = {0}, *got[4] = {0};
    HC_ASSERT(nin <= 4 && nout <= 4);
    for (int i = 0; i < nin; i++) in[i] = make_input(ref->inputs.data[i], &rng, vocab);
    for (int i = 0; i < nout; i++) {
        size_t bytes = hc_tensor_nbytes(ref->outputs.data[i]);
        want[i] = calloc(1, bytes);
        got[i] = calloc(1, bytes);
    }
    hc_status st = hc_graph_eval_reference(ref, in, want, &err);
    CHECK_MSG(st == HC_OK, "%s: reference: %s", name, err.msg);

    hc_model *m = NULL;
    hc_compile_options opt = {.num_threads = 2};
    hc_status cst = hc_model_compile(g, &opt, &m, &err); /* takes g */
    CHECK_MSG(cst == HC_OK, "%s: compile: %s", name, err.msg);
    if (cst == HC_OK) {
        CHECK_EQ_INT(hc_model_num_inputs(m), nin);
        CHECK_EQ_INT(hc_model_num_outputs(m), nout);
        for (int i = 0; i < nout && i < hc_model_num_outputs(m); i++) {
            CHECK_STR(hc_model_output(m, i)->name, ref->outputs.data[i]->name);
        }
        cst = hc_model_run(m, in, got, &err);
        CHECK_MSG(cst == HC_OK, "%s: run: %s", name, err.msg);
    }
    for (int i = 0; i < nout && st == HC_OK && cst == HC_OK; i++) {
        compare_output(name, ref->outputs.data[i], got[i], want[i]);
    }
    hc_model_free(m);
    for (int i = 0; i < 4; i++) {
        free(in[i]);
        free(want[i]);
        free(got[i]);
    }
    hc_graph_free(ref);
}

int main(void) {
    test_names();
    test_deterministic();
    test_resnet50();
    test_bert();
    test_runtime_matches_reference("resnet18-tiny", 0);
    test_runtime_matches_reference("resnet50-tiny", 0);
    test_runtime_matches_reference("bert-tiny", 100);
    TEST_DONE();
}
