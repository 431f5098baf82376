/* graph_api.c — the public graph and model API (include/hidetc.h) over the graph IR,
 * the passes, the runtime and the ONNX importer. */
#include <string.h>

#include "frontend/onnx.h"
#include "graph/ops/versions.h"
#include "hidetc.h"
#include "passes/pass_util.h"
#include "runtime/runtime.h"

hidetc_status hc_api_fail(const hc_error *err); /* api.c */

_Static_assert((int)HIDETC_BOOL == (int)HC_BOOL && (int)HIDETC_I64 == (int)HC_I64 &&
                   (int)HIDETC_U64 == (int)HC_U64 && (int)HIDETC_F16 == (int)HC_F16 &&
                   (int)HIDETC_BF16 == (int)HC_BF16 && (int)HIDETC_F32 == (int)HC_F32 &&
                   (int)HIDETC_F64 == (int)HC_F64,
               "public dtypes are the internal ones");
_Static_assert(HIDETC_MAX_DIMS == HC_MAX_DIMS, "same rank limit");

#define DEFAULT_OPSET 17

struct hidetc_graph {
    hc_graph *g;
};

struct hidetc_model {
    hc_model *m;
    hc_jit_options jit;
    char *cache_dir;
};

static hidetc_status fail(hc_status st, const char *fmt, const char *arg) {
    hc_error err;
    hc_error_set(&err, st, fmt, arg);
    return hc_api_fail(&err);
}

static hidetc_value fail_value(hc_status st, const char *fmt, const char *arg) {
    fail(st, fmt, arg);
    return -1;
}

/* ---- graphs ------------------------------------------------------------------------ */
hidetc_status hidetc_graph_init(hidetc_graph **out, const char *name) {
    if (!out) return fail(HC_ERR_INVALID, "hidetc_graph_init: %s is NULL", "out");
    hidetc_graph *hg = hc_xcalloc(1, sizeof *hg);
    hg->g = hc_graph_new(name ? name : "graph", DEFAULT_OPSET);
    *out = hg;
    return HIDETC_OK;
}

hidetc_status hidetc_graph_set_opset(hidetc_graph *g, int opset) {
    if (!g) return fail(HC_ERR_INVALID, "hidetc_graph_set_opset: %s is NULL", "graph");
    if (opset < HC_ONNX_MIN_OPSET || opset > HC_ONNX_MAX_OPSET) {
        char s[64];
        snprintf(s, sizeof s, "%d (supported: %d..%d)", opset, HC_ONNX_MIN_OPSET,
                 HC_ONNX_MAX_OPSET);
        return fail(HC_ERR_UNSUPPORTED, "hidetc_graph_set_opset: opset %s", s);
    }
    g->g->opset = opset;
    return HIDETC_OK;
}

void hidetc_graph_free(hidetc_graph *g) {
    if (!g) return;
    hc_graph_free(g->g);
    free(g);
}

static bool valid_dtype(hidetc_dtype dt) { return dt >= HIDETC_BOOL && dt <= HIDETC_F64; }

static hidetc_status check_tensor_args(const char *fn, hidetc_dtype dtype, int ndim,
                                       const int64_t *shape) {
    hc_error err = {0};
    if (!valid_dtype(dtype))
        hc_error_set(&err, HC_ERR_INVALID, "%s: unknown dtype %d", fn, (int)dtype);
    else if (ndim < 0 || ndim > HC_MAX_DIMS)
        hc_error_set(&err, HC_ERR_INVALID, "%s: rank %d (at most %d)", fn, ndim, HC_MAX_DIMS);
    else if (ndim > 0 && !shape)
        hc_error_set(&err, HC_ERR_INVALID, "%s: shape is NULL", fn);
    for (int i = 0; err.status == HC_OK && i < ndim; i++)
        if (shape[i] < 0)
            hc_error_set(&err, HC_ERR_INVALID, "%s: dimension %d is negative", fn, i);
    return err.status == HC_OK ? HIDETC_OK : hc_api_fail(&err);
}

hidetc_value hidetc_graph_input(hidetc_graph *g, const char *name, hidetc_dtype dtype, int ndim,
                                const int64_t *shape) {
    if (!g || !name || !*name)
        return fail_value(HC_ERR_INVALID, "hidetc_graph_input: %s", "graph or name missing");
    if (check_tensor_args("hidetc_graph_input", dtype, ndim, shape) != HIDETC_OK) return -1;
    if (hc_graph_find_tensor(g->g, name))
        return fail_value(HC_ERR_INVALID, "hidetc_graph_input: the name '%s' is taken", name);
    return hc_graph_add_input(g->g, name, (hc_dtype)dtype, ndim, shape)->id;
}

hidetc_value hidetc_graph_constant(hidetc_graph *g, const char *name, hidetc_dtype dtype,
                                   int ndim, const int64_t *shape, const void *data) {
    if (!g) return fail_value(HC_ERR_INVALID, "hidetc_graph_constant: %s is NULL", "graph");
    if (check_tensor_args("hidetc_graph_constant", dtype, ndim, shape) != HIDETC_OK) return -1;
    if (name && hc_graph_find_tensor(g->g, name))
        return fail_value(HC_ERR_INVALID, "hidetc_graph_constant: the name '%s' is taken", name);
    return hc_graph_constant(g->g, name, (hc_dtype)dtype, ndim, shape, data)->id;
}

static hc_tensor *value(const hidetc_graph *g, hidetc_value v) {
    if (!g || v < 0 || (size_t)v >= g->g->tensors.len) return NULL;
    return g->g->tensors.data[v];
}

static hc_status convert_attrs(int nattrs, const hidetc_attr *in, hc_attr *out, hc_error *err) {
    for (int i = 0; i < nattrs; i++) {
        const hidetc_attr *a = &in[i];
        if (!a->name)
            return hc_error_set(err, HC_ERR_INVALID, "attribute %d has no name", i);
        hc_attr *o = &out[i];
        *o = (hc_attr){.name = a->name};
        switch (a->kind) {
        case HIDETC_ATTR_INT: o->kind = HC_ATTR_INT, o->i = a->i; break;
        case HIDETC_ATTR_FLOAT: o->kind = HC_ATTR_FLOAT, o->f = a->f; break;
        case HIDETC_ATTR_STRING: o->kind = HC_ATTR_STRING, o->s = a->s ? a->s : ""; break;
        case HIDETC_ATTR_INTS:
            o->kind = HC_ATTR_INTS, o->n = a->n, o->ints = (int64_t *)a->ints;
            break;
        case HIDETC_ATTR_FLOATS:
            o->kind = HC_ATTR_FLOATS, o->n = a->n, o->floats = (double *)a->floats;
            break;
        default:
            return hc_error_set(err, HC_ERR_INVALID, "attribute '%s': unknown kind %d", a->name,
                                (int)a->kind);
        }
        if ((a->kind == HIDETC_ATTR_INTS && a->n > 0 && !a->ints) ||
            (a->kind == HIDETC_ATTR_FLOATS && a->n > 0 && !a->floats) || a->n < 0)
            return hc_error_set(err, HC_ERR_INVALID, "attribute '%s': bad list", a->name);
    }
    return HC_OK;
}

/* Undo a node that failed inference: it is the last one added. */
static void drop_last_node(hc_graph *g, hc_node *n) {
    HC_ASSERT(g->nodes.len > 0 && g->nodes.data[g->nodes.len - 1] == n);
    g->nodes.len--;
    for (int i = 0; i < n->noutputs; i++)
        if (n->outputs[i] && n->outputs[i]->producer == n) n->outputs[i]->producer = NULL;
}

static hc_status add_op(hidetc_graph *hg, hc_op_kind op, const char *op_type, int ninputs,
                        hc_tensor **in, int nattrs, const hc_attr *attrs, int noutputs,
                        hidetc_value *outputs, hc_error *err) {
    hc_graph *g = hg->g;
    const char *name = hc_arena_printf(&g->arena, "%s_%zu", op_type, g->nodes.len);
    hc_node *n = hc_graph_add_node(g, op, name, ninputs, in, noutputs, NULL, nattrs, attrs, err);
    if (!n) return err->status;
    /* infer (and fold shape computations) now: errors point at the call that caused them */
    bool folded = false;
    hc_status st = hc_pass_infer_node(n, err);
    if (st == HC_OK) st = hc_pass_fold_if_known(g, n, &folded, err);
    if (st != HC_OK || folded) drop_last_node(g, n);
    if (st != HC_OK) return st;
    for (int i = 0; i < noutputs; i++) outputs[i] = n->outputs[i]->id;
    return HC_OK;
}

hidetc_status hidetc_graph_op(hidetc_graph *g, const char *op_type, int ninputs,
                              const hidetc_value *inputs, int nattrs, const hidetc_attr *attrs,
                              int noutputs, hidetc_value *outputs) {
    if (!g || !op_type) return fail(HC_ERR_INVALID, "hidetc_graph_op: %s", "graph or op missing");
    hc_op_kind op = hc_op_from_onnx(op_type);
    if (op == HC_OPK_COUNT)
        return fail(HC_ERR_INVALID, "hidetc_graph_op: unknown operator '%s'", op_type);
    if (!hc_op_get(op))
        return fail(HC_ERR_UNSUPPORTED, "hidetc_graph_op: operator '%s' is not supported",
                    op_type);
    hc_error err = {0};
    if (ninputs < 0 || ninputs > HC_MANY || nattrs < 0 || noutputs < 1 ||
        (ninputs && !inputs) || (nattrs && !attrs) || !outputs)
        return fail(HC_ERR_INVALID, "hidetc_graph_op(%s): bad input, attribute or output list",
                    op_type);
    hc_tensor *in[HC_MANY + 1] = {0};
    for (int i = 0; i < ninputs; i++) {
        if (inputs[i] == -1) continue;
        if (!(in[i] = value(g, inputs[i]))) {
            hc_error_set(&err, HC_ERR_INVALID, "hidetc_graph_op(%s): input %d is not a value of "
                         "this graph", op_type, i);
            return hc_api_fail(&err);
        }
    }
    hc_attr *ca = hc_xcalloc((size_t)nattrs + 1, sizeof(hc_attr));
    hc_status st = convert_attrs(nattrs, attrs, ca, &err);
    if (st == HC_OK)
        st = add_op(g, op, op_type, ninputs, in, nattrs, ca, noutputs, outputs, &err);
    free(ca);
    return st == HC_OK ? HIDETC_OK : hc_api_fail(&err);
}

hidetc_status hidetc_graph_output(hidetc_graph *g, hidetc_value v, const char *name) {
    hc_tensor *t = value(g, v);
    if (!t) return fail(HC_ERR_INVALID, "hidetc_graph_output: %s", "not a value of this graph");
    if (name && strcmp(name, t->name) != 0) {
        if (!*name || hc_graph_find_tensor(g->g, name))
            return fail(HC_ERR_INVALID, "hidetc_graph_output: the name '%s' is taken or empty",
                        name);
        t->name = hc_arena_strdup(&g->g->arena, name);
    }
    hc_graph_add_output(g->g, t);
    return HIDETC_OK;
}

int hidetc_graph_value_shape(const hidetc_graph *g, hidetc_value v, hidetc_dtype *dtype,
                             int64_t *shape) {
    const hc_tensor *t = value(g, v);
    if (!t || !t->shape_known) return -1;
    if (dtype) *dtype = (hidetc_dtype)t->dtype;
    if (shape) memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    return t->ndim;
}

char *hidetc_graph_to_string(const hidetc_graph *g) {
    hc_sb sb;
    hc_sb_init(&sb);
    if (g) hc_graph_print(&sb, g->g);
    return hc_sb_take(&sb);
}

/* ---- models ------------------------------------------------------------------------ */
static hidetc_status compile(hidetc_model **out, hc_graph *g, const hidetc_options *opt) {
    hidetc_model *m = hc_xcalloc(1, sizeof *m);
    if (opt && opt->cache_dir) m->cache_dir = hc_xstrdup(opt->cache_dir);
    m->jit.cache_dir = m->cache_dir;
    hc_compile_options co = {
        .num_threads = opt ? opt->num_threads : 0,
        .jit = &m->jit,
        .verbose = opt && opt->verbose,
    };
    hc_error err = {0};
    if (hc_model_compile(g, &co, &m->m, &err) != HC_OK) {
        free(m->cache_dir);
        free(m);
        return hc_api_fail(&err);
    }
    *out = m;
    return HIDETC_OK;
}

hidetc_status hidetc_model_compile(hidetc_model **out, hidetc_graph *g, const hidetc_options *opt) {
    if (!g) return fail(HC_ERR_INVALID, "hidetc_model_compile: %s is NULL", "graph");
    hc_graph *ig = g->g;
    free(g); /* the model owns the graph from here on, whatever happens */
    if (!out) {
        hc_graph_free(ig);
        return fail(HC_ERR_INVALID, "hidetc_model_compile: %s is NULL", "out");
    }
    *out = NULL;
    return compile(out, ig, opt);
}

hidetc_status hidetc_model_load_onnx(hidetc_model **out, const char *path,
                                     const hidetc_options *opt) {
    if (!out || !path) return fail(HC_ERR_INVALID, "hidetc_model_load_onnx: %s", "NULL argument");
    *out = NULL;
    hc_error err = {0};
    hc_graph *g = NULL;
    if (hc_onnx_load(path, &g, &err) != HC_OK) return hc_api_fail(&err);
    return compile(out, g, opt);
}

hidetc_status hidetc_model_run(hidetc_model *m, const void *const *inputs, void *const *outputs) {
    if (!m || (!inputs && hc_model_num_inputs(m->m) > 0) || !outputs)
        return fail(HC_ERR_INVALID, "hidetc_model_run: %s", "NULL argument");
    for (int i = 0; i < hc_model_num_inputs(m->m); i++)
        if (!inputs[i]) return fail(HC_ERR_INVALID, "hidetc_model_run: input '%s' is NULL",
                                    hc_model_input(m->m, i)->name);
    for (int i = 0; i < hc_model_num_outputs(m->m); i++)
        if (!outputs[i]) return fail(HC_ERR_INVALID, "hidetc_model_run: output '%s' is NULL",
                                     hc_model_output(m->m, i)->name);
    hc_error err = {0};
    /* the runtime only reads inputs; its signature is not const-qualified */
    if (hc_model_run(m->m, (void *const *)inputs, outputs, &err) != HC_OK)
        return hc_api_fail(&err);
    return HIDETC_OK;
}

void hidetc_model_free(hidetc_model *m) {
    if (!m) return;
    hc_model_free(m->m);
    free(m->cache_dir);
    free(m);
}

int hidetc_model_num_inputs(const hidetc_model *m) { return m ? hc_model_num_inputs(m->m) : 0; }
int hidetc_model_num_outputs(const hidetc_model *m) { return m ? hc_model_num_outputs(m->m) : 0; }

static const hc_tensor *model_tensor(const hidetc_model *m, int i, bool input) {
    if (!m || i < 0) return NULL;
    if (input) return i < hc_model_num_inputs(m->m) ? hc_model_input(m->m, i) : NULL;
    return i < hc_model_num_outputs(m->m) ? hc_model_output(m->m, i) : NULL;
}

static int tensor_shape(const hc_tensor *t, int64_t *shape) {
    if (!t) return -1;
    if (shape) memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    return t->ndim;
}

const char *hidetc_model_input_name(const hidetc_model *m, int i) {
    const hc_tensor *t = model_tensor(m, i, true);
    return t ? t->name : NULL;
}

const char *hidetc_model_output_name(const hidetc_model *m, int i) {
    const hc_tensor *t = model_tensor(m, i, false);
    return t ? t->name : NULL;
}

hidetc_dtype hidetc_model_input_dtype(const hidetc_model *m, int i) {
    const hc_tensor *t = model_tensor(m, i, true);
    return t ? (hidetc_dtype)t->dtype : (hidetc_dtype)0;
}

hidetc_dtype hidetc_model_output_dtype(const hidetc_model *m, int i) {
    const hc_tensor *t = model_tensor(m, i, false);
    return t ? (hidetc_dtype)t->dtype : (hidetc_dtype)0;
}

int hidetc_model_input_shape(const hidetc_model *m, int i, int64_t *shape) {
    return tensor_shape(model_tensor(m, i, true), shape);
}

int hidetc_model_output_shape(const hidetc_model *m, int i, int64_t *shape) {
    return tensor_shape(model_tensor(m, i, false), shape);
}

size_t hidetc_model_arena_bytes(const hidetc_model *m) {
    return m ? hc_model_arena_bytes(m->m) : 0;
}

hidetc_status hidetc_model_save(const hidetc_model *m, const char *path) {
    if (!m || !path) return fail(HC_ERR_INVALID, "hidetc_model_save: %s", "NULL argument");
    hc_error err = {0};
    return hc_model_save(m->m, path, &err) == HC_OK ? HIDETC_OK : hc_api_fail(&err);
}

hidetc_status hidetc_model_load(hidetc_model **out, const char *path) {
    if (!out || !path) return fail(HC_ERR_INVALID, "hidetc_model_load: %s", "NULL argument");
    *out = NULL;
    hc_error err = {0};
    hidetc_model *m = hc_xcalloc(1, sizeof *m);
    if (hc_model_load(path, &m->m, &err) != HC_OK) {
        free(m);
        return hc_api_fail(&err);
    }
    *out = m;
    return HIDETC_OK;
}
