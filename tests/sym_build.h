/* sym_build.h — graphs with symbolic dims built in C, and a compiled symbolic model run at
 * several bindings against the reference evaluator (include after test.h). Shared by the
 * dynamic-shape tests (test_sym_infer, test_dynamic_matmul, test_dynamic_cnn). */
#ifndef HC_TESTS_SYM_BUILD_H
#define HC_TESTS_SYM_BUILD_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "runtime/runtime.h"

typedef struct sym_in {
    const char *name;
    int ndim;
    const char *dims[HC_MAX_DIMS]; /* a symbol name, or digits */
} sym_in;

/* A symbol's hint by name; a table ends with a NULL name. */
typedef struct sym_hint {
    const char *name;
    int64_t value;
} sym_hint;

/* An f32 input whose dims are symbols (names) or fixed (digits): the symbols bound by b
 * when b is given (a fixed graph), else symbolic with their hint from `hints` (may be
 * NULL), else 16, 24, ... in order of appearance (as the importer gives them). */
static inline hc_tensor *sym_input(hc_graph *g, const sym_in *in, const hc_sym_binding *b,
                                   const sym_hint *hints) {
    int64_t shape[HC_MAX_DIMS] = {0};
    const hc_sym *d[HC_MAX_DIMS];
    bool symbolic = false;
    for (int k = 0; k < in->ndim; k++) {
        const char *s = in->dims[k];
        if (s[0] >= '0' && s[0] <= '9') {
            shape[k] = atoll(s);
            d[k] = hc_sym_const(&g->arena, shape[k]);
            continue;
        }
        if (b) {
            int64_t v = 0;
            for (int j = 0; j < b->n; j++)
                if (!strcmp(b->names[j], s)) v = b->values[j];
            shape[k] = v;
            d[k] = hc_sym_const(&g->arena, v);
            continue;
        }
        symbolic = true;
        int64_t h = 16 + 8 * (int64_t)g->sym_names.len;
        for (const sym_hint *p = hints; p && p->name; p++)
            if (!strcmp(p->name, s)) {
                h = p->value;
                break;
            }
        d[k] = hc_sym_var(&g->arena, hc_graph_symbol(g, s, h));
        shape[k] = 1;
    }
    hc_tensor *t = hc_graph_add_input(g, in->name, HC_F32, in->ndim, shape);
    if (symbolic) CHECK(hc_tensor_set_sym_shape(t, in->ndim, d));
    return t;
}

/* A node whose first output is named NAME_out; a node the graph rejects aborts. */
static inline hc_tensor *sym_node(hc_graph *g, hc_op_kind op, const char *name, int nin,
                                  hc_tensor **in, int nattrs, const hc_attr *attrs) {
    hc_error e = {0};
    hc_node *n = hc_graph_add_node(g, op, name, nin, in, 0, NULL, nattrs, attrs, &e);
    CHECK_MSG(n != NULL, "%s: %s", name, e.msg);
    if (!n) abort();
    n->outputs[0]->name = hc_arena_printf(&g->arena, "%s_out", name);
    return n->outputs[0];
}

/* Builds the graph: symbolic when b is NULL, else with the symbols fixed to b's values. */
typedef void (*sym_build_fn)(hc_graph *g, const hc_sym_binding *b);

/* Compile build's symbolic graph (inferred first); NULL (a failed check) when it fails. */
static inline hc_model *sym_compile(const char *label, sym_build_fn build,
                                    const hc_compile_options *o) {
    hc_error e = {0};
    hc_graph *g = hc_graph_new(label, 17);
    build(g, NULL);
    hc_model *m = NULL;
    hc_status st = hc_pass_infer_shapes(g, &e);
    CHECK_MSG(st == HC_OK, "%s: %s", label, e.msg);
    if (st == HC_OK) st = hc_model_compile(g, o, &m, &e);
    else hc_graph_free(g);
    CHECK_MSG(st == HC_OK, "%s: compile: %s", label, e.msg);
    if (m) CHECK(hc_model_is_symbolic(m));
    return m;
}

/* At each of the nb bindings (names: the symbols; vals + k * stride: binding k's values),
 * run every model of ms (nm of them, compiled from build's symbolic graph; NULL entries
 * skipped) on random inputs: the outputs' dims must be those of the graph built at that
 * binding, and every output within 1e-4 (relative) of the reference evaluator there. */
static inline void sym_run_bindings(const char *label, sym_build_fn build, int nm,
                                    hc_model *const *ms, int nb, const char *const *names,
                                    const int64_t *vals, int stride) {
    hc_error e = {0};
    hc_rng rng = {11};
    for (int k = 0; k < nb; k++) {
        const hc_model *m0 = ms[0];
        if (!m0) return;
        hc_sym_binding b = {(int)hc_model_graph(m0)->sym_names.len, names, vals + k * stride};
        hc_graph *f = hc_graph_new(label, 17);
        build(f, &b);
        hc_status st = hc_pass_infer_shapes(f, &e);
        CHECK_MSG(st == HC_OK, "%s binding %d: %s", label, k, e.msg);
        if (st != HC_OK) {
            hc_graph_free(f);
            continue;
        }
        int ni = hc_model_num_inputs(m0), no = hc_model_num_outputs(m0);
        void **in = calloc((size_t)ni + 1, sizeof(void *)), **out = calloc((size_t)no + 1, sizeof(void *));
        void **ref = calloc((size_t)no + 1, sizeof(void *));
        const int64_t **dims = calloc((size_t)ni + 1, sizeof(int64_t *));
        for (int i = 0; i < ni; i++) {
            const hc_tensor *t = f->inputs.data[i];
            float *v = malloc(hc_tensor_nbytes(t) + 4);
            for (int64_t j = 0; j < hc_tensor_numel(t); j++) v[j] = (float)hc_rng_uniform(&rng, -2, 2);
            in[i] = v;
            dims[i] = t->shape;
        }
        for (int i = 0; i < no; i++) {
            const hc_tensor *t = f->outputs.data[i];
            int64_t od[HC_MAX_DIMS];
            CHECK(hc_model_output_dims(m0, dims, i, od, &e) == HC_OK);
            for (int d = 0; d < t->ndim; d++)
                CHECK_MSG(od[d] == t->shape[d], "%s binding %d: output %d dim %d: %lld, want %lld",
                          label, k, i, d, (long long)od[d], (long long)t->shape[d]);
            out[i] = calloc(1, hc_tensor_nbytes(t) + 4);
            ref[i] = calloc(1, hc_tensor_nbytes(t) + 4);
        }
        hc_status rs = hc_graph_eval_reference(f, in, ref, &e);
        CHECK_MSG(rs == HC_OK, "%s binding %d: reference: %s", label, k, e.msg);
        for (int j = 0; j < nm && rs == HC_OK; j++) {
            if (!ms[j]) continue;
            st = hc_model_run_dims(ms[j], in, dims, out, NULL, &e);
            CHECK_MSG(st == HC_OK, "%s binding %d, model %d: run: %s", label, k, j, e.msg);
            for (int i = 0; st == HC_OK && i < no; i++) {
                const hc_tensor *t = f->outputs.data[i];
                double worst = max_rel_err(out[i], ref[i], hc_tensor_numel(t));
                CHECK_MSG(worst < 1e-4, "%s binding %d (%s=%lld), model %d: output %s differs "
                          "by %g", label, k, names[0], (long long)vals[k * stride], j, t->name,
                          worst);
            }
        }
        for (int i = 0; i < ni; i++) free(in[i]);
        for (int i = 0; i < no; i++) free(out[i]), free(ref[i]);
        free(in), free(out), free(ref), free(dims);
        hc_graph_free(f);
    }
}

#endif
