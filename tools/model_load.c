/* model_load.c — shared by the model commands: MODEL arguments, buffers, random inputs. */
#include "model_load.h"

#include <errno.h>
#include <string.h>

#include "frontend/onnx.h"
#include "models/builtin.h"

#define BUILTIN_PREFIX "builtin:"

/* --dim NAME=N and --shape INPUT=D0,D1,...: symbolic input dimensions fixed at import. */
#define CLI_MAX_OVERRIDES 32
static hc_onnx_dim g_dims[CLI_MAX_OVERRIDES];
static hc_onnx_shape g_shapes[CLI_MAX_OVERRIDES];
static char g_dim_names[CLI_MAX_OVERRIDES][256], g_shape_names[CLI_MAX_OVERRIDES][256];
static int g_ndims, g_nshapes;
/* --dim-hint NAME=N: the hint values of symbols that stay symbolic (docs/dynamic.md) */
static hc_onnx_dim g_hints[CLI_MAX_OVERRIDES];
static char g_hint_names[CLI_MAX_OVERRIDES][256];
static int g_nhints;
/* --bind NAME=N: the value of a symbol for the runs of a symbolic model */
static hc_onnx_dim g_binds[CLI_MAX_OVERRIDES];
static char g_bind_names[CLI_MAX_OVERRIDES][256];
static int g_nbinds;

/* --tune-shapes NAME=V1,V2,...: the values symbolic kernels are tuned at (dispatch) */
#define CLI_MAX_TUNE_VALUES 64
static hc_tune_shape g_tshapes[CLI_MAX_OVERRIDES];
static int64_t g_tshape_values[CLI_MAX_OVERRIDES][CLI_MAX_TUNE_VALUES];
static char g_tshape_names[CLI_MAX_OVERRIDES][256];
static int g_ntshapes;

static hc_status load_model(const char *spec, bool symbolic, hc_graph **out, hc_error *err);

/* NAME=V1,V2,... into tune shape i; false with a message. */
static bool parse_tune_shape(const char *cmd, const char *val, int i) {
    const char *eq = val ? strchr(val, '=') : NULL;
    if (!eq || eq == val || (size_t)(eq - val) >= sizeof g_tshape_names[0]) {
        fprintf(stderr, "hidetc %s: --tune-shapes expects NAME=V1,V2,..., got '%s'\n", cmd,
                val ? val : "(nothing)");
        return false;
    }
    snprintf(g_tshape_names[i], sizeof g_tshape_names[0], "%.*s", (int)(eq - val), val);
    int n = 0;
    for (const char *p = eq + 1;;) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 1 || (*end && *end != ',') || n == CLI_MAX_TUNE_VALUES) {
            fprintf(stderr, "hidetc %s: --tune-shapes %s: expects sizes of at least 1 separated "
                    "by commas (at most %d), got '%s'\n", cmd, g_tshape_names[i],
                    CLI_MAX_TUNE_VALUES, eq + 1);
            return false;
        }
        g_tshape_values[i][n++] = v;
        if (!*end) break;
        p = end + 1;
    }
    g_tshapes[i] = (hc_tune_shape){g_tshape_names[i], n, g_tshape_values[i]};
    return true;
}

hc_status cli_load_model(const char *spec, hc_graph **out, hc_error *err) {
    return load_model(spec, true, out, err); /* symbols kept: one compile for every shape */
}

hc_status cli_load_model_symbolic(const char *spec, hc_graph **out, hc_error *err) {
    return load_model(spec, true, out, err);
}

bool cli_fix_dim(const char *name, int64_t value) {
    if (g_ndims >= CLI_MAX_OVERRIDES) return false;
    snprintf(g_dim_names[g_ndims], sizeof g_dim_names[0], "%s", name);
    g_dims[g_ndims] = (hc_onnx_dim){g_dim_names[g_ndims], value};
    g_ndims++;
    return true;
}

static hc_status load_model(const char *spec, bool symbolic, hc_graph **out, hc_error *err) {
    *out = NULL;
    size_t np = strlen(BUILTIN_PREFIX);
    if (!strncmp(spec, BUILTIN_PREFIX, np)) {
        if (g_ndims || g_nshapes)
            return hc_error_set(err, HC_ERR_INVALID, "%s: --dim and --shape apply to ONNX "
                                "files (a built-in model's shapes are fixed)", spec);
        return hc_builtin_model(spec + np, out, err);
    }
    hc_onnx_options o = {g_ndims, g_dims, g_nshapes, g_shapes, symbolic, g_nhints, g_hints};
    return hc_onnx_load_with(spec, &o, out, err);
}

/* --no-pin: the program pins its runs' threads unless told not to (the library does not
 * by default: docs/runtime.md, "Thread placement"). */
static bool g_no_pin;

hc_status cli_compile_graph(hc_graph *g, const hc_compile_options *co, hc_model **out,
                            hc_error *err) {
    hc_compile_options o = co ? *co : (hc_compile_options){0};
    o.pin_threads = !g_no_pin;
    return hc_model_compile(g, &o, out, err);
}

hc_status cli_open_model(const char *spec, const hc_compile_options *co, hc_model **out,
                         hc_error *err) {
    *out = NULL;
    if (!hc_model_file_is(spec)) {
        hc_graph *g;
        hc_status st = cli_load_model(spec, &g, err);
        return st == HC_OK ? cli_compile_graph(g, co, out, err) : st;
    }
    double t0 = hc_now_ms();
    hc_status st = hc_model_load(spec, out, err);
    if (st != HC_OK) return st;
    hc_model_set_pin_threads(*out, !g_no_pin);
    int threads = hc_model_num_threads(*out);
    if (co && co->num_threads > 0 && co->num_threads != threads) {
        hc_model_free(*out);
        *out = NULL;
        return hc_error_set(err, HC_ERR_INVALID,
                            "%s was compiled for %d threads, not %d: compile it again with "
                            "--threads %d (or leave --threads out)",
                            spec, threads, co->num_threads, co->num_threads);
    }
    const hc_optimize_options *p = co ? &co->paths : NULL;
    if (co && (co->no_fusion || co->tune_level || co->tune_nshapes || co->no_prepack || p->no_winograd ||
               p->force_winograd || p->no_direct || p->force_direct || p->no_nchwc ||
               p->no_int8 || p->wino_tile))
        fprintf(stderr,
                "hidetc: note: %s is already compiled: --no-fusion, --no-prepack, "
                "--no-winograd, --winograd-all, --winograd-tile, --no-direct, --direct-all, "
                "--no-nchwc, --no-int8, --tune and --tune-shapes do not apply\n",
                spec);
    if (co && co->verbose)
        fprintf(stderr, "hidetc: loaded %s: %d kernels, %d programs, %d threads, %.0f ms\n",
                spec, hc_model_num_kernels(*out), hc_model_num_programs(*out), threads,
                hc_now_ms() - t0);
    return HC_OK;
}

void cli_fill_random(const hc_tensor *t, void *buf, uint64_t seed) {
    hc_rng r = {seed};
    int64_t n = hc_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (hc_dtype_is_float(t->dtype)) v = hc_rng_uniform(&r, -1.0, 1.0);
        else if (t->dtype == HC_BOOL) v = (double)(hc_rng_next(&r) & 1);
        else v = (double)(hc_rng_next(&r) % CLI_RANDOM_INT_MAX);
        hc_elem_set(buf, t->dtype, i, v);
    }
}

/* At least one byte, so that empty tensors still get a non-NULL buffer. */
static void *alloc_for(const hc_tensor *t) { return hc_xcalloc(1, hc_tensor_nbytes(t) + 1); }

void cli_buffers_alloc(const hc_model *m, cli_buffers *b) {
    b->nin = hc_model_num_inputs(m);
    b->nout = hc_model_num_outputs(m);
    b->in = hc_xcalloc((size_t)b->nin + 1, sizeof(void *));
    b->out = hc_xcalloc((size_t)b->nout + 1, sizeof(void *));
    for (int i = 0; i < b->nin; i++) b->in[i] = alloc_for(hc_model_input(m, i));
    for (int i = 0; i < b->nout; i++) b->out[i] = alloc_for(hc_model_output(m, i));
}

/* ---- the shapes of one run (dynamic shapes, docs/dynamic.md) ---------------------------- */
static hc_tensor view_at(const hc_tensor *t, const hc_sym_binding *b, bool *ok) {
    hc_tensor v = *t;
    for (int d = 0; t->sym && d < t->ndim; d++)
        if (t->sym[d] && !hc_sym_eval(t->sym[d], b, &v.shape[d])) *ok = false;
    v.sym = NULL, v.symval = NULL;
    return v;
}

hc_status cli_io_make(const hc_model *m, int ngiven, const char *const *names, const int *ndims,
                      const int64_t (*shapes)[HC_MAX_DIMS], cli_io *io, hc_error *err) {
    const hc_graph *g = hc_model_graph(m);
    memset(io, 0, sizeof *io);
    io->nin = hc_model_num_inputs(m), io->nout = hc_model_num_outputs(m);
    io->in = hc_xcalloc((size_t)io->nin + 1, sizeof(hc_tensor));
    io->out = hc_xcalloc((size_t)io->nout + 1, sizeof(hc_tensor));
    io->dims = hc_xcalloc((size_t)io->nin + 1, sizeof(int64_t *));
    size_t ns = g->sym_names.len;
    int64_t *values = hc_xcalloc(ns + 1, sizeof(int64_t));
    hc_status st = HC_OK;
    if (ns) st = hc_graph_bind_inputs(g, ngiven, names, ndims, shapes, values, err);
    for (size_t k = 0; st == HC_OK && k < ns; k++) {
        for (int j = 0; j < g_nbinds; j++) {
            if (strcmp(g_binds[j].name, g->sym_names.data[k])) continue;
            if (values[k] >= 0 && values[k] != g_binds[j].value)
                st = hc_error_set(err, HC_ERR_INVALID, "--bind %s=%lld, but the inputs given "
                                  "make it %lld", g_binds[j].name, (long long)g_binds[j].value,
                                  (long long)values[k]);
            values[k] = g_binds[j].value;
        }
        if (values[k] < 0) values[k] = g->sym_hints.data[k];
        io->nbound += 1;
    }
    for (int j = 0; st == HC_OK && j < g_nbinds; j++) {
        bool known = false;
        for (size_t k = 0; k < ns; k++) known |= !strcmp(g_binds[j].name, g->sym_names.data[k]);
        if (!known)
            st = hc_error_set(err, HC_ERR_INVALID, "--bind %s: the model has no such symbol%s",
                              g_binds[j].name, ns ? "" : " (its shapes are fixed)");
    }
    hc_sym_binding b = {(int)ns, g->sym_names.data, values};
    if (st == HC_OK && ns) st = hc_graph_check_binding(g, &b, err);
    bool ok = true;
    for (int i = 0; st == HC_OK && i < io->nin; i++) {
        io->in[i] = view_at(hc_model_input(m, i), &b, &ok);
        io->dims[i] = io->in[i].shape;
    }
    for (int i = 0; st == HC_OK && i < io->nout; i++) io->out[i] = view_at(hc_model_output(m, i), &b, &ok);
    for (int i = 0; st == HC_OK && ok && i < io->nin + io->nout; i++) {
        const hc_tensor *t = i < io->nin ? &io->in[i] : &io->out[i - io->nin];
        if (hc_shape_too_large(t->dtype, t->ndim, t->shape)) ok = false;
    }
    if (st == HC_OK && !ok)
        st = hc_error_set(err, HC_ERR_INVALID, "a tensor's size cannot be had at this binding");
    if (st == HC_OK && ns) {
        hc_sb sb;
        hc_sb_init(&sb);
        for (size_t k = 0; k < ns; k++)
            hc_sb_printf(&sb, "%s%s=%lld", k ? " " : "", g->sym_names.data[k], (long long)values[k]);
        io->binding = hc_sb_take(&sb);
    }
    free(values);
    if (st != HC_OK) cli_io_free(io);
    return st;
}

void cli_io_free(cli_io *io) {
    free(io->in), free(io->out), free(io->dims), free(io->binding);
    memset(io, 0, sizeof *io);
}

void cli_buffers_alloc_io(const cli_io *io, cli_buffers *b) {
    b->nin = io->nin, b->nout = io->nout;
    b->in = hc_xcalloc((size_t)b->nin + 1, sizeof(void *));
    b->out = hc_xcalloc((size_t)b->nout + 1, sizeof(void *));
    for (int i = 0; i < b->nin; i++) b->in[i] = alloc_for(&io->in[i]);
    for (int i = 0; i < b->nout; i++) b->out[i] = alloc_for(&io->out[i]);
}

void cli_buffers_free(cli_buffers *b) {
    for (int i = 0; i < b->nin; i++) free(b->in[i]);
    for (int i = 0; i < b->nout; i++) free(b->out[i]);
    free(b->in);
    free(b->out);
    memset(b, 0, sizeof *b);
}

void cli_random_inputs(const hc_model *m, cli_buffers *b) {
    for (int i = 0; i < b->nin; i++)
        cli_fill_random(hc_model_input(m, i), b->in[i], CLI_RANDOM_SEED + (uint64_t)i);
}

bool cli_parse_int(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "hidetc %s: %s expects an integer in [%ld, %ld], got '%s'\n", cmd, opt,
                lo, hi, s ? s : "(nothing)");
        return false;
    }
    *out = v;
    return true;
}

int cli_compile_option(const char *cmd, const char *o, const char *val, hc_compile_options *co) {
    const struct {
        const char *name;
        bool *flag;
    } flags[] = {
        {"--no-fusion", &co->no_fusion},           {"--no-prepack", &co->no_prepack},
        {"--no-cuda-graph", &co->no_graph},
        {"--no-winograd", &co->paths.no_winograd}, {"--winograd-all", &co->paths.force_winograd},
        {"--no-direct", &co->paths.no_direct},     {"--direct-all", &co->paths.force_direct},
        {"--no-nchwc", &co->paths.no_nchwc},
        {"--no-int8", &co->paths.no_int8},
    };
    if (!strcmp(o, "--dim-hint") || !strcmp(o, "--bind")) {
        bool hint = o[2] == 'd';
        int *cnt = hint ? &g_nhints : &g_nbinds;
        hc_error e = {0};
        if (*cnt >= CLI_MAX_OVERRIDES) {
            fprintf(stderr, "hidetc %s: at most %d %s options\n", cmd, CLI_MAX_OVERRIDES, o);
            return -1;
        }
        if (!val || !hc_onnx_parse_dim(val, hint ? &g_hints[*cnt] : &g_binds[*cnt],
                                       hint ? g_hint_names[*cnt] : g_bind_names[*cnt],
                                       sizeof g_hint_names[0], &e)) {
            fprintf(stderr, "hidetc %s: %s\n", cmd, val ? e.msg : "expects NAME=N");
            return -1;
        }
        (*cnt)++;
        return 2;
    }
    if (!strcmp(o, "--dim") || !strcmp(o, "--shape")) {
        bool dim = o[2] == 'd';
        hc_error e = {0};
        if ((dim ? g_ndims : g_nshapes) >= CLI_MAX_OVERRIDES) {
            fprintf(stderr, "hidetc %s: at most %d %s options\n", cmd, CLI_MAX_OVERRIDES, o);
            return -1;
        }
        bool ok = val && (dim ? hc_onnx_parse_dim(val, &g_dims[g_ndims], g_dim_names[g_ndims],
                                                  sizeof g_dim_names[0], &e)
                              : hc_onnx_parse_shape(val, &g_shapes[g_nshapes],
                                                    g_shape_names[g_nshapes],
                                                    sizeof g_shape_names[0], &e));
        if (!ok) {
            fprintf(stderr, "hidetc %s: %s\n", cmd, val ? e.msg : "--dim/--shape expects a value");
            return -1;
        }
        dim ? g_ndims++ : g_nshapes++;
        return 2;
    }
    if (!strcmp(o, "--no-pin")) {
        g_no_pin = true;
        return 1;
    }
    for (size_t i = 0; i < HC_ARRAY_LEN(flags); i++)
        if (!strcmp(o, flags[i].name)) {
            *flags[i].flag = true;
            return 1;
        }
    if (!strcmp(o, "--tune-shapes")) {
        if (g_ntshapes >= CLI_MAX_OVERRIDES) {
            fprintf(stderr, "hidetc %s: at most %d %s options\n", cmd, CLI_MAX_OVERRIDES, o);
            return -1;
        }
        if (!parse_tune_shape(cmd, val, g_ntshapes)) return -1;
        co->tune_shapes = g_tshapes, co->tune_nshapes = ++g_ntshapes;
        return 2;
    }
    if (!strcmp(o, "--tune")) {
        long level;
        if (!cli_parse_int(cmd, o, val, 0, 2, &level)) return -1;
        co->tune_level = (int)level;
        return 2;
    }
    if (!strcmp(o, "--winograd-tile")) {
        long m;
        if (!cli_parse_int(cmd, o, val, 2, 6, &m)) return -1;
        if (m % 2) {
            fprintf(stderr, "hidetc %s: --winograd-tile expects 2, 4 or 6, got '%s'\n", cmd, val);
            return -1;
        }
        co->paths.wino_tile = (int)m;
        return 2;
    }
    if (!strcmp(o, "--target")) {
        hc_error e = {0};
        bool runnable = false;
        if (!val || hc_target_find(val, &co->target, &runnable, &e) != HC_OK) {
            fprintf(stderr, "hidetc %s: --target: %s\n", cmd,
                    val ? e.msg : "expects a target name");
            return -1;
        }
        /* inspect only schedules; the others build and run kernels */
        if (!runnable && strcmp(cmd, "inspect") != 0) {
            fprintf(stderr, "hidetc %s: target '%s' cannot run here (%s); "
                    "`hidetc inspect --target %s --dump-ir source` and `hidetc kernel ... "
                    "--target %s --print-source` emit its code\n", cmd, val,
                    hc_target_why_not_runnable(co->target), val, val);
            return -1;
        }
        return 2;
    }
    if (!strcmp(o, "--dump-ir")) {
        co->dump_stage = val ? hc_stage_parse(val) : HC_STAGE_NONE;
        if (co->dump_stage == HC_STAGE_NONE) {
            fprintf(stderr, "hidetc %s: --dump-ir expects one of %s, got '%s'\n", cmd,
                    HC_STAGE_NAMES, val ? val : "(nothing)");
            return -1;
        }
        return 2;
    }
    if (!strcmp(o, "--max-memory")) { /* BYTES, or with a K, M, G or T suffix (1024s) */
        char *end = NULL;
        errno = 0;
        unsigned long long v = val && *val && *val != '-' ? strtoull(val, &end, 10) : 0;
        int shift = 0;
        if (end && *end && !end[1]) {
            const char *units = "KMGT", *u = strchr(units, *end);
            if (u) shift = 10 * (int)(u - units + 1), end++;
        }
        if (!v || !end || *end || errno || v > (SIZE_MAX >> shift)) {
            fprintf(stderr, "hidetc %s: --max-memory expects a positive number of bytes "
                    "(a K, M, G or T suffix for 1024s), got '%s'\n", cmd, val ? val : "(nothing)");
            return -1;
        }
        co->max_memory = (size_t)(v << shift);
        return 2;
    }
    if (!strcmp(o, "--tune-weights")) {
        static const char *const names[] = {"auto", "cached", "cold"};
        for (int i = 0; i < 3; i++)
            if (val && !strcmp(val, names[i])) {
                co->tune_weights = (hc_tune_weights)i;
                return 2;
            }
        fprintf(stderr, "hidetc %s: --tune-weights expects auto, cached or cold, got '%s'\n",
                cmd, val ? val : "(nothing)");
        return -1;
    }
    return 0;
}
