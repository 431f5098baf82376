/* session.c — sessions and tensors (include/hidetc.h, "sessions: the embedding API"): a
 * compiled model made from a file or bytes with options, described input by input, run by
 * names with checked tensors or by position. Concurrent runs are the runtime's
 * (runtime.c, "Runs in flight"). */
#include "hidetc.h"

#include <stddef.h>
#include <string.h>

#include "frontend/onnx.h"
#include "models/builtin.h"
#include "runtime/runtime.h"

hidetc_status hc_api_fail(const hc_error *err); /* api.c: the thread's last error */

static hidetc_status failf(hc_status st, const char *fmt, ...) HC_PRINTF(2, 3);
static hidetc_status failf(hc_status st, const char *fmt, ...) {
    hc_error err = {0};
    va_list ap;
    va_start(ap, fmt);
    err.status = st;
    vsnprintf(err.msg, sizeof err.msg, fmt, ap);
    va_end(ap);
    return hc_api_fail(&err);
}

int hidetc_abi_version(void) { return HIDETC_ABI_VERSION; }

const char *hidetc_status_string(hidetc_status s) {
    switch (s) {
    case HIDETC_OK: return "HIDETC_OK: success";
    case HIDETC_ERR_INVALID: return "HIDETC_ERR_INVALID: bad argument, model or file content";
    case HIDETC_ERR_IO: return "HIDETC_ERR_IO: a file could not be read or written";
    case HIDETC_ERR_COMPILE: return "HIDETC_ERR_COMPILE: the system C compiler failed";
    case HIDETC_ERR_UNSUPPORTED: return "HIDETC_ERR_UNSUPPORTED: valid input hidetc does not handle";
    case HIDETC_ERR_NOMEM: return "HIDETC_ERR_NOMEM: out of memory";
    case HIDETC_ERR_DEVICE: return "HIDETC_ERR_DEVICE: a GPU call failed";
    }
    return "unknown status";
}

void hidetc_session_options_init(hidetc_session_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->abi_version = HIDETC_ABI_VERSION;
}

/* ---- tensors ------------------------------------------------------------------------ */
struct hidetc_tensor {
    hidetc_dtype dtype;
    int ndim;
    int64_t dims[HIDETC_MAX_DIMS];
    void *data;
    bool owned; /* data was allocated here */
};

static bool valid_dtype(hidetc_dtype d) { return d >= HIDETC_BOOL && d <= HIDETC_F64; }

static hidetc_status check_dims(const char *fn, hidetc_dtype dtype, int ndim, const int64_t *dims) {
    if (!valid_dtype(dtype)) return failf(HC_ERR_INVALID, "%s: unknown dtype %d", fn, (int)dtype);
    if (ndim < 0 || ndim > HIDETC_MAX_DIMS)
        return failf(HC_ERR_INVALID, "%s: rank %d (0 to %d)", fn, ndim, HIDETC_MAX_DIMS);
    if (ndim && !dims) return failf(HC_ERR_INVALID, "%s: dims is NULL", fn);
    for (int d = 0; d < ndim; d++)
        if (dims[d] < 0)
            return failf(HC_ERR_INVALID, "%s: dimension %d is %lld", fn, d, (long long)dims[d]);
    if (hc_shape_too_large((hc_dtype)dtype, ndim, dims))
        return failf(HC_ERR_INVALID, "%s: more than 2^40 bytes", fn);
    return HIDETC_OK;
}

static size_t tensor_bytes(hidetc_dtype dtype, int ndim, const int64_t *dims) {
    size_t n = hc_dtype_size((hc_dtype)dtype);
    for (int d = 0; d < ndim; d++) n *= (size_t)dims[d];
    return n;
}

static hidetc_status tensor_new(hidetc_tensor **out, const char *fn, hidetc_dtype dtype, int ndim,
                                const int64_t *dims, void *data, bool alloc) {
    if (!out) return failf(HC_ERR_INVALID, "%s: out is NULL", fn);
    *out = NULL;
    hidetc_status st = check_dims(fn, dtype, ndim, dims);
    if (st != HIDETC_OK) return st;
    size_t bytes = tensor_bytes(dtype, ndim, dims);
    if (!alloc && !data && bytes)
        return failf(HC_ERR_INVALID, "%s: data is NULL for a %zu-byte tensor", fn, bytes);
    hidetc_tensor *t = calloc(1, sizeof *t);
    if (!t) return failf(HC_ERR_NOMEM, "%s: out of memory", fn);
    t->dtype = dtype, t->ndim = ndim;
    if (ndim) memcpy(t->dims, dims, sizeof(int64_t) * (size_t)ndim);
    if (alloc) {
        t->data = hc_alloc_big(bytes ? bytes : 64);
        if (!t->data) {
            free(t);
            return failf(HC_ERR_NOMEM, "%s: out of memory for a %zu-byte tensor", fn, bytes);
        }
        memset(t->data, 0, bytes);
        t->owned = true;
    } else {
        t->data = data;
    }
    *out = t;
    return HIDETC_OK;
}

hidetc_status hidetc_tensor_wrap(hidetc_tensor **out, hidetc_dtype dtype, int ndim,
                                 const int64_t *dims, void *data) {
    return tensor_new(out, "hidetc_tensor_wrap", dtype, ndim, dims, data, false);
}

hidetc_status hidetc_tensor_alloc(hidetc_tensor **out, hidetc_dtype dtype, int ndim,
                                  const int64_t *dims) {
    return tensor_new(out, "hidetc_tensor_alloc", dtype, ndim, dims, NULL, true);
}

void hidetc_tensor_free(hidetc_tensor *t) {
    if (!t) return;
    if (t->owned) free(t->data);
    free(t);
}

void *hidetc_tensor_data(const hidetc_tensor *t) { return t ? t->data : NULL; }
hidetc_dtype hidetc_tensor_dtype(const hidetc_tensor *t) { return t ? t->dtype : (hidetc_dtype)0; }
int hidetc_tensor_dims(const hidetc_tensor *t, int64_t *dims) {
    if (!t) return -1;
    if (dims && t->ndim) memcpy(dims, t->dims, sizeof(int64_t) * (size_t)t->ndim);
    return t->ndim;
}
size_t hidetc_tensor_bytes(const hidetc_tensor *t) {
    return t ? tensor_bytes(t->dtype, t->ndim, t->dims) : 0;
}

/* ---- sessions ----------------------------------------------------------------------- */
struct hidetc_session {
    hc_model *m;
    hc_jit_options jit;
    char *cache_dir;
    char target[64];
    int nin, nout;
    hidetc_value_info *in, *out;
};

static void describe(const hc_tensor *t, hidetc_value_info *v) {
    memset(v, 0, sizeof *v);
    v->name = t->name;
    v->dtype = (hidetc_dtype)t->dtype;
    v->ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++) {
        v->dims[d] = t->shape[d];
        v->dim_names[d] = t->dim_names ? t->dim_names[d] : NULL;
        if (t->sym && t->sym[d] && t->graph) { /* symbolic at run time: its expression */
            v->dims[d] = -1;
            v->dim_names[d] = hc_sym_str(&t->graph->arena, t->sym[d]);
        }
    }
}

static void progress_cb(void *user, const char *stage, int done, int total) {
    const hidetc_session_options *o = user;
    o->progress(o->progress_user, stage, done, total);
}

static const char *BUILTIN = "builtin:";

/* The model of `path` (when data is NULL) or of the bytes `data`, compiled with o. */
static hc_status open_model(hidetc_session *s, const char *path, const void *data, size_t size,
                            const hidetc_session_options *o, hc_error *err) {
    const hc_target *target = NULL;
    if (o->target && *o->target) {
        bool runnable = false;
        hc_status st = hc_target_find(o->target, &target, &runnable, err);
        if (st != HC_OK) return st;
        if (!runnable)
            return hc_error_set(err, HC_ERR_UNSUPPORTED, "target '%s' cannot run here: %s",
                                o->target, hc_target_why_not_runnable(target));
    }
    const char *name = data ? "<bytes>" : path;
    bool file = data ? hc_model_file_is_bytes(data, size)
                     : strncmp(path, BUILTIN, strlen(BUILTIN)) && hc_model_file_is(path);
    if (file) {
        hc_status st = data ? hc_model_load_memory(data, size, name, &s->m, err)
                            : hc_model_load(path, &s->m, err);
        if (st != HC_OK) return st;
        int threads = hc_model_num_threads(s->m);
        if (o->num_threads > 0 && o->num_threads != threads)
            return hc_error_set(err, HC_ERR_INVALID, "%s was compiled for %d threads, not %d: "
                                "compile it again (or leave num_threads 0)", name, threads,
                                o->num_threads);
        if (target && hc_model_target(s->m) != target &&
            strcmp(hc_model_target(s->m)->name, target->name))
            return hc_error_set(err, HC_ERR_INVALID, "%s was compiled for target '%s', not '%s'",
                                name, hc_model_target(s->m)->name, target->name);
        if (o->num_dims || o->num_shapes || o->tune_level || o->num_tune_shapes)
            return hc_error_set(err, HC_ERR_INVALID, "%s is already compiled: dims, shapes, "
                                "tune_level and tune_shapes do not apply to it", name);
        hc_model_set_pin_threads(s->m, o->pin_threads != 0);
        return HC_OK;
    }
    if (o->tune_level < 0 || o->tune_level > 2)
        return hc_error_set(err, HC_ERR_INVALID, "tune_level %d (0, 1 or 2)", o->tune_level);
    if (o->num_dims < 0 || o->num_shapes < 0 || (o->num_dims && !o->dims) ||
        (o->num_shapes && !o->shapes))
        return hc_error_set(err, HC_ERR_INVALID, "num_dims / num_shapes without dims / shapes");
    if (o->num_tune_shapes < 0 || (o->num_tune_shapes && !o->tune_shapes))
        return hc_error_set(err, HC_ERR_INVALID, "num_tune_shapes without tune_shapes");
    for (int i = 0; i < o->num_tune_shapes; i++)
        if (!o->tune_shapes[i].name || o->tune_shapes[i].num_values < 1 ||
            !o->tune_shapes[i].values)
            return hc_error_set(err, HC_ERR_INVALID, "tune_shapes[%d]: a name and at least one "
                                "value are needed", i);
    hc_onnx_dim *dims = hc_xcalloc((size_t)o->num_dims + 1, sizeof *dims);
    hc_onnx_shape *shapes = hc_xcalloc((size_t)o->num_shapes + 1, sizeof *shapes);
    hc_status st = HC_OK;
    for (int i = 0; i < o->num_dims && st == HC_OK; i++) {
        if (!o->dims[i].name || o->dims[i].value < 1)
            st = hc_error_set(err, HC_ERR_INVALID, "dims[%d]: a name and a positive value are "
                              "needed (got %s=%lld)", i, o->dims[i].name ? o->dims[i].name : "NULL",
                              (long long)o->dims[i].value);
        dims[i] = (hc_onnx_dim){o->dims[i].name, o->dims[i].value};
    }
    for (int i = 0; i < o->num_shapes && st == HC_OK; i++) {
        const hidetc_input_shape *is = &o->shapes[i];
        if (!is->input || is->ndim < 0 || is->ndim > HC_MAX_DIMS || (is->ndim && !is->dims)) {
            st = hc_error_set(err, HC_ERR_INVALID, "shapes[%d]: an input name and 0 to %d dims "
                              "are needed", i, HC_MAX_DIMS);
            break;
        }
        shapes[i].input = is->input, shapes[i].ndim = is->ndim;
        for (int d = 0; d < is->ndim; d++) {
            if (is->dims[d] < 0)
                st = hc_error_set(err, HC_ERR_INVALID, "shapes[%d] ('%s'): dimension %d is %lld",
                                  i, is->input, d, (long long)is->dims[d]);
            shapes[i].dims[d] = is->dims[d];
        }
    }
    hc_graph *g = NULL;
    /* symbols that dims/shapes leave open stay symbolic: one compile for every shape */
    hc_onnx_options oo = {o->num_dims, dims, o->num_shapes, shapes, .symbolic = true};
    if (st == HC_OK) {
        if (data) st = hc_onnx_load_memory_with(data, size, name, &oo, &g, err);
        else if (!strncmp(path, BUILTIN, strlen(BUILTIN))) {
            st = o->num_dims || o->num_shapes
                     ? hc_error_set(err, HC_ERR_INVALID, "%s: dims and shapes apply to ONNX "
                                    "models (a built-in model's shapes are fixed)", path)
                     : hc_builtin_model(path + strlen(BUILTIN), &g, err);
        } else st = hc_onnx_load_with(path, &oo, &g, err);
    }
    free(dims), free(shapes);
    if (st != HC_OK) return st;
    if (o->cache_dir) s->cache_dir = hc_xstrdup(o->cache_dir);
    s->jit.cache_dir = s->cache_dir;
    hc_compile_options co = {
        .target = target,
        .num_threads = o->num_threads,
        .jit = &s->jit,
        .verbose = o->verbose != 0,
        .tune_level = o->tune_level,
        .pin_threads = o->pin_threads != 0,
        .progress = o->progress ? progress_cb : NULL,
        .progress_user = (void *)o,
        .max_memory = o->max_memory,
    };
    hc_tune_shape *ts = NULL;
    if (o->num_tune_shapes) { /* the same struct under the library's name */
        ts = hc_xcalloc((size_t)o->num_tune_shapes, sizeof *ts);
        for (int i = 0; i < o->num_tune_shapes; i++)
            ts[i] = (hc_tune_shape){o->tune_shapes[i].name, o->tune_shapes[i].num_values,
                                    o->tune_shapes[i].values};
        co.tune_nshapes = o->num_tune_shapes, co.tune_shapes = ts;
    }
    if (o->progress) o->progress(o->progress_user, "import", 1, 1);
    st = hc_model_compile(g, &co, &s->m, err);
    free(ts);
    return st;
}

static hidetc_status create(hidetc_session **out, const char *path, const void *data,
                            size_t size, const hidetc_session_options *opt) {
    const char *fn = data ? "hidetc_session_create_from_bytes" : "hidetc_session_create";
    if (!out) return failf(HC_ERR_INVALID, "%s: out is NULL", fn);
    *out = NULL;
    if (!data && !path) return failf(HC_ERR_INVALID, "%s: path is NULL", fn);
    if (path == NULL && !size) return failf(HC_ERR_INVALID, "%s: no bytes", fn);
    hidetc_session_options o;
    hidetc_session_options_init(&o);
    /* the version first: it says how large the caller's struct is (a later ABI copies only
     * the fields that version has) */
    if (opt && opt->abi_version != 0 && (opt->abi_version < HIDETC_ABI_OLDEST || opt->abi_version > HIDETC_ABI_VERSION))
        return failf(HC_ERR_INVALID, "%s: the caller was built against ABI version %d of "
                     "hidetc.h; this library implements versions %d to %d", fn,
                     opt->abi_version, HIDETC_ABI_OLDEST, HIDETC_ABI_VERSION);
    if (opt && opt->abi_version == 1) /* its struct ends before the tune shapes */
        memcpy(&o, opt, offsetof(hidetc_session_options, num_tune_shapes));
    else if (opt) o = *opt;
    hidetc_session *s = calloc(1, sizeof *s);
    if (!s) return failf(HC_ERR_NOMEM, "%s: out of memory", fn);
    hc_error err = {0};
    if (open_model(s, path, data, size, &o, &err) != HC_OK) {
        hidetc_session_free(s);
        return hc_api_fail(&err);
    }
    const hc_target *t = hc_model_target(s->m);
    if (t->kind == HC_TARGET_CPU) /* "cpu:avx512": the ISA the kernels were built for */
        snprintf(s->target, sizeof s->target, "cpu:%s", hc_isa_name(t->caps.isa));
    else snprintf(s->target, sizeof s->target, "%s", t->name);
    s->nin = hc_model_num_inputs(s->m), s->nout = hc_model_num_outputs(s->m);
    s->in = calloc((size_t)s->nin + 1, sizeof *s->in);
    s->out = calloc((size_t)s->nout + 1, sizeof *s->out);
    if (!s->in || !s->out) {
        hidetc_session_free(s);
        return failf(HC_ERR_NOMEM, "%s: out of memory", fn);
    }
    for (int i = 0; i < s->nin; i++) describe(hc_model_input(s->m, i), &s->in[i]);
    for (int i = 0; i < s->nout; i++) describe(hc_model_output(s->m, i), &s->out[i]);
    *out = s;
    return HIDETC_OK;
}

hidetc_status hidetc_session_create(hidetc_session **out, const char *path,
                                    const hidetc_session_options *opt) {
    return create(out, path, NULL, 0, opt);
}

hidetc_status hidetc_session_create_from_bytes(hidetc_session **out, const void *data,
                                               size_t size, const hidetc_session_options *opt) {
    if (!data) {
        if (out) *out = NULL;
        return failf(HC_ERR_INVALID, "hidetc_session_create_from_bytes: data is NULL");
    }
    return create(out, NULL, data, size, opt);
}

void hidetc_session_free(hidetc_session *s) {
    if (!s) return;
    hc_model_free(s->m);
    free(s->cache_dir);
    free(s->in), free(s->out);
    free(s);
}

hidetc_status hidetc_session_save(const hidetc_session *s, const char *path) {
    if (!s || !path) return failf(HC_ERR_INVALID, "hidetc_session_save: NULL argument");
    hc_error err = {0};
    return hc_model_save(s->m, path, &err) == HC_OK ? HIDETC_OK : hc_api_fail(&err);
}

int hidetc_session_num_inputs(const hidetc_session *s) { return s ? s->nin : -1; }
int hidetc_session_num_outputs(const hidetc_session *s) { return s ? s->nout : -1; }
const char *hidetc_session_target(const hidetc_session *s) { return s ? s->target : NULL; }

static hidetc_status info(const hidetc_session *s, int i, hidetc_value_info *v, bool input) {
    const char *fn = input ? "hidetc_session_input_info" : "hidetc_session_output_info";
    if (!s || !v) return failf(HC_ERR_INVALID, "%s: NULL argument", fn);
    int n = input ? s->nin : s->nout;
    if (i < 0 || i >= n)
        return failf(HC_ERR_INVALID, "%s: index %d of %d %s", fn, i, n, input ? "inputs" : "outputs");
    *v = input ? s->in[i] : s->out[i];
    return HIDETC_OK;
}

hidetc_status hidetc_session_input_info(const hidetc_session *s, int i, hidetc_value_info *v) {
    return info(s, i, v, true);
}
hidetc_status hidetc_session_output_info(const hidetc_session *s, int i, hidetc_value_info *v) {
    return info(s, i, v, false);
}

static int find(const hidetc_value_info *vs, int n, const char *name) {
    for (int i = 0; name && i < n; i++)
        if (!strcmp(vs[i].name, name)) return i;
    return -1;
}
int hidetc_session_input_index(const hidetc_session *s, const char *name) {
    return s ? find(s->in, s->nin, name) : -1;
}
int hidetc_session_output_index(const hidetc_session *s, const char *name) {
    return s ? find(s->out, s->nout, name) : -1;
}

static const char *dtype_name(hidetc_dtype d) {
    return valid_dtype(d) ? hc_dtype_name((hc_dtype)d) : "(unknown)";
}

/* t against v: dtype, rank and every dimension. */
static hidetc_status check_tensor(const hidetc_tensor *t, const hidetc_value_info *v,
                                  const char *what) {
    if (t->dtype != v->dtype)
        return failf(HC_ERR_INVALID, "%s '%s': dtype %s, expected %s", what, v->name,
                     dtype_name(t->dtype), dtype_name(v->dtype));
    if (t->ndim != v->ndim)
        return failf(HC_ERR_INVALID, "%s '%s': rank %d, expected %d", what, v->name, t->ndim,
                     v->ndim);
    for (int d = 0; d < v->ndim; d++)
        if (v->dims[d] >= 0 && t->dims[d] != v->dims[d]) {
            char sym[300] = "";
            if (v->dim_names[d]) snprintf(sym, sizeof sym, " ('%s')", v->dim_names[d]);
            return failf(HC_ERR_INVALID, "%s '%s': dimension %d%s is %lld, expected %lld", what,
                         v->name, d, sym, (long long)t->dims[d], (long long)v->dims[d]);
        }
    if (!t->data && tensor_bytes(t->dtype, t->ndim, t->dims))
        return failf(HC_ERR_INVALID, "%s '%s': data is NULL", what, v->name);
    return HIDETC_OK;
}

hidetc_status hidetc_session_run(hidetc_session *s, int ninputs, const char *const *input_names,
                                 hidetc_tensor *const *inputs, int noutputs,
                                 const char *const *output_names, hidetc_tensor **outputs) {
    const char *fn = "hidetc_session_run";
    if (!s) return failf(HC_ERR_INVALID, "%s: session is NULL", fn);
    if (ninputs != s->nin) {
        hc_sb sb;
        hc_sb_init(&sb);
        for (int j = 0; j < s->nin; j++) hc_sb_printf(&sb, "%s'%s'", j ? ", " : "", s->in[j].name);
        hidetc_status st = failf(HC_ERR_INVALID, "%s: %d inputs given, the model has %d: %s", fn,
                                 ninputs, s->nin, sb.len ? sb.buf : "none");
        hc_sb_free(&sb);
        return st;
    }
    if (ninputs && !inputs) return failf(HC_ERR_INVALID, "%s: inputs is NULL", fn);
    if (!output_names && noutputs == 0) noutputs = s->nout;
    if (noutputs < 0 || noutputs > s->nout || (!output_names && noutputs != s->nout))
        return failf(HC_ERR_INVALID, "%s: %d outputs asked for, the model has %d", fn, noutputs,
                     s->nout);
    if (noutputs && !outputs) return failf(HC_ERR_INVALID, "%s: outputs is NULL", fn);
    /* one slot per model input / output; outputs not asked for go to scratch tensors */
    void **in = calloc((size_t)s->nin + 1, sizeof(void *));
    void **out = calloc((size_t)s->nout + 1, sizeof(void *));
    int *slot = calloc((size_t)noutputs + 1, sizeof(int));
    hidetc_tensor **made = calloc((size_t)s->nout + 1, sizeof(hidetc_tensor *)); /* ours */
    bool *given_new = calloc((size_t)noutputs + 1, sizeof(bool));
    bool symbolic = hc_model_is_symbolic(s->m);
    const int64_t **idims = calloc((size_t)s->nin + 1, sizeof(int64_t *));
    hidetc_value_info *ovi = calloc((size_t)s->nout + 1, sizeof *ovi); /* at this run's dims */
    hidetc_status st = HIDETC_OK;
    if (!in || !out || !slot || !made || !given_new || !idims || !ovi)
        st = failf(HC_ERR_NOMEM, "%s: out of memory", fn);
    for (int k = 0; ovi && k < s->nout; k++) ovi[k] = s->out[k];
    for (int i = 0; i < ninputs && st == HIDETC_OK; i++) {
        int k = i;
        if (input_names) {
            k = find(s->in, s->nin, input_names[i]);
            if (k < 0) {
                hc_sb sb;
                hc_sb_init(&sb);
                for (int j = 0; j < s->nin; j++) hc_sb_printf(&sb, "%s'%s'", j ? ", " : "", s->in[j].name);
                st = failf(HC_ERR_INVALID, "%s: the model has no input '%s' (its inputs: %s)", fn,
                           input_names[i] ? input_names[i] : "(NULL)", sb.buf ? sb.buf : "none");
                hc_sb_free(&sb);
                break;
            }
            if (in[k]) {
                st = failf(HC_ERR_INVALID, "%s: input '%s' is given twice", fn, s->in[k].name);
                break;
            }
        }
        if (!inputs[i]) {
            st = failf(HC_ERR_INVALID, "%s: input '%s': tensor is NULL", fn, s->in[k].name);
            break;
        }
        if ((st = check_tensor(inputs[i], &s->in[k], "input")) != HIDETC_OK) break;
        in[k] = inputs[i]->data ? inputs[i]->data : (void *)""; /* empty: any non-NULL */
        idims[k] = inputs[i]->dims;
    }
    /* a symbolic model: the outputs' dims at the inputs' (the binding checks those) */
    for (int k = 0; symbolic && k < s->nout && st == HIDETC_OK; k++) {
        hc_error err = {0};
        if (hc_model_output_dims(s->m, idims, k, ovi[k].dims, &err) != HC_OK) st = hc_api_fail(&err);
    }
    for (int j = 0; j < noutputs && st == HIDETC_OK; j++) {
        int k = j;
        if (output_names) {
            k = find(s->out, s->nout, output_names[j]);
            if (k < 0) {
                st = failf(HC_ERR_INVALID, "%s: the model has no output '%s'", fn,
                           output_names[j] ? output_names[j] : "(NULL)");
                break;
            }
        }
        slot[j] = k;
        if (outputs[j]) {
            if ((st = check_tensor(outputs[j], &ovi[k], "output")) != HIDETC_OK) break;
            if (out[k] && out[k] != outputs[j]->data) {
                st = failf(HC_ERR_INVALID, "%s: output '%s' is asked for twice", fn, s->out[k].name);
                break;
            }
            out[k] = outputs[j]->data ? outputs[j]->data : (void *)"";
        }
    }
    /* outputs left NULL, and outputs not asked for: tensors of ours */
    for (int k = 0; k < s->nout && st == HIDETC_OK; k++) {
        if (out[k]) continue;
        const hidetc_value_info *v = &ovi[k];
        st = tensor_new(&made[k], fn, v->dtype, v->ndim, v->dims, NULL, true);
        if (st == HIDETC_OK) out[k] = made[k]->data;
    }
    if (st == HIDETC_OK) {
        hc_error err = {0};
        if (hc_model_run_dims(s->m, in, symbolic ? idims : NULL, out, NULL, &err) != HC_OK)
            st = hc_api_fail(&err);
    }
    if (st == HIDETC_OK)
        for (int j = 0; j < noutputs; j++)
            if (!outputs[j]) {
                int k = slot[j];
                /* the same output asked for twice, left NULL both times: one tensor each */
                if (made[k]) outputs[j] = made[k], made[k] = NULL, given_new[j] = true;
                else if (tensor_new(&outputs[j], fn, ovi[k].dtype, ovi[k].ndim, ovi[k].dims,
                                    NULL, true) == HIDETC_OK) {
                    memcpy(outputs[j]->data, out[k], hidetc_tensor_bytes(outputs[j]));
                    given_new[j] = true;
                } else {
                    st = HIDETC_ERR_NOMEM;
                    break;
                }
            }
    if (st != HIDETC_OK) /* nothing half-made is returned */
        for (int j = 0; j < noutputs && given_new; j++)
            if (given_new[j]) hidetc_tensor_free(outputs[j]), outputs[j] = NULL;
    for (int k = 0; made && k < s->nout; k++) hidetc_tensor_free(made[k]);
    free(in), free(out), free(slot), free(made), free(given_new), free(idims), free(ovi);
    return st;
}

hidetc_status hidetc_session_run_buffers(hidetc_session *s, const void *const *inputs,
                                         void *const *outputs) {
    if (!s) return failf(HC_ERR_INVALID, "hidetc_session_run_buffers: session is NULL");
    if (hc_model_is_symbolic(s->m))
        return failf(HC_ERR_INVALID, "hidetc_session_run_buffers: the model has symbolic "
                     "dimensions: run it with hidetc_session_run, whose tensors give their dims");
    hc_error err = {0};
    return hc_model_run(s->m, (void *const *)inputs, outputs, &err) == HC_OK ? HIDETC_OK
                                                                              : hc_api_fail(&err);
}
