/* hidetc run MODEL [--input NAME=FILE.npy ...] [--output-dir DIR] [--threads T] [--verbose]
 *
 * Compiles the model (or loads a file written by `hidetc compile`: docs/model_file.md),
 * runs it once and prints one line per input and output (relied on by scripts):
 *   input NAME: DTYPE [SHAPE] from FILE | random (seed S)
 *   output NAME: DTYPE [SHAPE] min X max Y mean Z values [a, b, ...]
 * With --output-dir, each output is also written as DIR/NAME.npy (characters other than
 * letters, digits, '.', '-' and '_' in NAME become '_'). */
#include <string.h>

#include "cli.h"
#include "core/npy.h"
#include "passes/passes.h"
#include "model_load.h"

#define MAX_INPUT_ARGS 64
#define SUMMARY_VALUES 6

typedef struct run_args {
    const char *model, *output_dir;
    int ninputs;
    const char *input_names[MAX_INPUT_ARGS], *input_files[MAX_INPUT_ARGS];
    long threads;
    bool verbose;
    hc_compile_options co;
} run_args;

static void usage(FILE *f) {
    fprintf(f, "usage: hidetc run MODEL [--input NAME=FILE.npy ...] [--output-dir DIR] "
               "[--threads T] " CLI_COMPILE_OPTIONS_USAGE " [--verbose]\n"
               "  MODEL: an ONNX file or builtin:NAME (or a file written by hidetc "
               "compile)\n" CLI_COMPILE_OPTIONS_HELP);
}

static int parse_input_arg(run_args *r, char *val) {
    char *eq = val ? strchr(val, '=') : NULL;
    if (!eq || eq == val || !eq[1]) {
        fprintf(stderr, "hidetc run: --input expects NAME=FILE.npy, got '%s'\n",
                val ? val : "(nothing)");
        return 2;
    }
    if (r->ninputs == MAX_INPUT_ARGS) {
        fprintf(stderr, "hidetc run: more than %d --input options\n", MAX_INPUT_ARGS);
        return 2;
    }
    *eq = '\0';
    r->input_names[r->ninputs] = val;
    r->input_files[r->ninputs++] = eq + 1;
    return 0;
}

/* Returns 0, or the exit code for a usage error. */
static int parse_args(int argc, char **argv, run_args *r) {
    memset(r, 0, sizeof *r);
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) return usage(stdout), -1;
        int co = cli_compile_option("run", o, val, &r->co);
        if (co < 0) return 2;
        if (co) {
            i += co - 1;
            continue;
        }
        if (!strcmp(o, "--verbose")) r->verbose = true;
        else if (!strcmp(o, "--input")) {
            int rc = parse_input_arg(r, val);
            if (rc) return rc;
            i++;
        } else if (!strcmp(o, "--output-dir")) {
            if (!val) return fprintf(stderr, "hidetc run: --output-dir needs a directory\n"), 2;
            r->output_dir = val, i++;
        } else if (!strcmp(o, "--threads")) {
            if (!cli_parse_int("run", o, val, 1, 1024, &r->threads)) return 2;
            i++;
        } else if (o[0] == '-' && o[1]) {
            fprintf(stderr, "hidetc run: unknown option '%s'\n", o);
            return usage(stderr), 2;
        } else if (r->model) {
            fprintf(stderr, "hidetc run: more than one MODEL ('%s', '%s')\n", r->model, o);
            return 2;
        } else r->model = o;
    }
    if (!r->model) return usage(stderr), 2;
    return 0;
}

static const hc_tensor *find_input(const hc_graph *g, const char *name) {
    for (size_t i = 0; i < g->inputs.len; i++)
        if (!strcmp(g->inputs.data[i]->name, name)) return g->inputs.data[i];
    return NULL;
}

static void list_inputs(const hc_graph *g) {
    fprintf(stderr, "  the model's inputs:");
    for (size_t i = 0; i < g->inputs.len; i++) {
        hc_sb sb;
        hc_sb_init(&sb);
        const hc_tensor *t = g->inputs.data[i];
        hc_print_shape(&sb, t->ndim, t->shape);
        fprintf(stderr, " %s (%s %s)", t->name, hc_dtype_name(t->dtype), hc_sb_str(&sb));
        hc_sb_free(&sb);
    }
    fprintf(stderr, "%s\n", g->inputs.len ? "" : " none");
}

static bool same_shape(const hc_tensor *t, const hc_npy *n) {
    if (t->ndim != n->ndim) return false;
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] != n->shape[d]) return false;
    return true;
}

/* Reads the --input files not read yet (each once: the symbols' binding reads them
 * before the model compiles, a model without symbols after). */
static int read_inputs(const run_args *r, hc_npy *npys) {
    for (int i = 0; i < r->ninputs; i++) {
        hc_error err = {0};
        if (!npys[i].data && hc_npy_read(r->input_files[i], &npys[i], &err) != HC_OK) {
            fprintf(stderr, "hidetc run: input '%s': %s\n", r->input_names[i], err.msg);
            return 1;
        }
    }
    return 0;
}

/* Checks every --input file against the model's declared input. */
static int check_inputs(const run_args *r, const hc_graph *g, const hc_npy *npys, bool symbolic) {
    for (int i = 0; i < r->ninputs; i++) {
        const hc_tensor *t = find_input(g, r->input_names[i]);
        if (!t) {
            fprintf(stderr, "hidetc run: the model has no input '%s'\n", r->input_names[i]);
            list_inputs(g);
            return 1;
        }
        hc_sb want, got;
        hc_sb_init(&want), hc_sb_init(&got);
        hc_print_shape(&want, t->ndim, t->shape);
        hc_print_shape(&got, npys[i].ndim, npys[i].shape);
        bool ok = npys[i].dtype == t->dtype && (symbolic || same_shape(t, &npys[i]));
        if (!ok)
            fprintf(stderr, "hidetc run: input '%s': %s holds %s %s, the model expects %s %s\n",
                    t->name, r->input_files[i], hc_dtype_name(npys[i].dtype), hc_sb_str(&got),
                    hc_dtype_name(t->dtype), hc_sb_str(&want));
        hc_sb_free(&want), hc_sb_free(&got);
        if (!ok) return 1;
    }
    return 0;
}

static void print_header(const char *kind, const hc_tensor *t) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_shape(&sb, t->ndim, t->shape);
    printf("%s %s: %s %s", kind, t->name, hc_dtype_name(t->dtype), hc_sb_str(&sb));
    hc_sb_free(&sb);
}

static void fill_inputs(const run_args *r, const cli_io *io, hc_npy *npys, cli_buffers *b) {
    for (int i = 0; i < b->nin; i++) {
        const hc_tensor *t = &io->in[i];
        int k = r->ninputs - 1; /* the last --input for a name wins */
        while (k >= 0 && strcmp(r->input_names[k], t->name)) k--;
        print_header("input", t);
        if (k >= 0) {
            memcpy(b->in[i], npys[k].data, hc_tensor_nbytes(t));
            printf(" from %s\n", r->input_files[k]);
        } else {
            cli_fill_random(t, b->in[i], CLI_RANDOM_SEED + (uint64_t)i);
            printf(" random (seed %llu)\n", (unsigned long long)(CLI_RANDOM_SEED + (uint64_t)i));
        }
    }
}

static void print_summary(const hc_tensor *t, const void *buf) {
    print_header("output", t);
    int64_t n = hc_tensor_numel(t);
    if (n == 0) {
        printf(" empty\n");
        return;
    }
    double lo = hc_elem_get(buf, t->dtype, 0), hi = lo, sum = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = hc_elem_get(buf, t->dtype, i);
        lo = v < lo ? v : lo, hi = v > hi ? v : hi, sum += v;
    }
    printf(" min %.6g max %.6g mean %.6g values [", lo, hi, sum / (double)n);
    for (int64_t i = 0; i < n && i < SUMMARY_VALUES; i++)
        printf("%s%.6g", i ? ", " : "", hc_elem_get(buf, t->dtype, i));
    printf("%s]\n", n > SUMMARY_VALUES ? ", ..." : "");
}

static char *output_path(const char *dir, const char *name) {
    char *file = hc_xstrdup(name);
    for (char *p = file; *p; p++) {
        bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_';
        if (!ok || (p == file && *p == '.')) *p = '_';
    }
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sb_printf(&sb, "%s/%s.npy", dir, file);
    free(file);
    return hc_sb_take(&sb);
}

static int write_outputs(const char *dir, const cli_io *io, const cli_buffers *b) {
    hc_error err = {0};
    if (hc_mkdirs(dir, &err) != HC_OK) {
        fprintf(stderr, "hidetc run: %s\n", err.msg);
        return 1;
    }
    for (int i = 0; i < b->nout; i++) {
        const hc_tensor *t = &io->out[i];
        char *path = output_path(dir, t->name);
        hc_status st = hc_npy_write(path, t->dtype, t->ndim, t->shape, b->out[i], &err);
        if (st == HC_OK) printf("wrote %s\n", path);
        else fprintf(stderr, "hidetc run: output '%s': %s\n", t->name, err.msg);
        free(path);
        if (st != HC_OK) return 1;
    }
    return 0;
}

static int run_model(const run_args *r, hc_model *m, hc_npy *npys) {
    hc_error err = {0};
    const char *names[MAX_INPUT_ARGS];
    int ndims[MAX_INPUT_ARGS];
    int64_t (*shapes)[HC_MAX_DIMS] = hc_xcalloc(MAX_INPUT_ARGS + 1, sizeof *shapes);
    for (int i = 0; i < r->ninputs; i++) {
        names[i] = r->input_names[i], ndims[i] = npys[i].ndim;
        memcpy(shapes[i], npys[i].shape, sizeof(int64_t) * (size_t)npys[i].ndim);
    }
    cli_io io;
    hc_status st = cli_io_make(m, r->ninputs, names, ndims, (const int64_t(*)[HC_MAX_DIMS])shapes,
                               &io, &err);
    free(shapes);
    if (st != HC_OK) {
        fprintf(stderr, "hidetc run: %s\n", err.msg);
        return 1;
    }
    if (io.binding) printf("symbols: %s\n", io.binding);
    cli_buffers b;
    cli_buffers_alloc_io(&io, &b);
    fill_inputs(r, &io, npys, &b);
    int rc = 0;
    if (hc_model_run_dims(m, b.in, io.dims, b.out, NULL, &err) != HC_OK) {
        fprintf(stderr, "hidetc run: %s\n", err.msg);
        rc = 1;
    }
    for (int i = 0; !rc && i < b.nout; i++) print_summary(&io.out[i], b.out[i]);
    if (!rc && r->output_dir) rc = write_outputs(r->output_dir, &io, &b);
    cli_buffers_free(&b);
    cli_io_free(&io);
    return rc;
}

/* A model file with symbolic dimensions that --dim/--shape leave open: the --input files
 * fix them (their shapes bind the symbols, checked against the model: rank, fixed
 * dimensions, the same symbol on several inputs, the ops' constraints), as if given
 * with --dim. Kernels are built for fixed shapes (docs/dynamic.md). 0: done (or nothing
 * to do), else the exit code. A model without symbols is loaded once: *fixed is its
 * graph, to compile as it is. */
static int bind_from_inputs(const run_args *r, hc_npy *npys, hc_graph **fixed) {
    *fixed = NULL;
    if (!strncmp(r->model, "builtin:", 8) || hc_model_file_is(r->model)) return 0;
    hc_graph *g = NULL;
    hc_error err = {0};
    if (cli_load_model_symbolic(r->model, &g, &err) != HC_OK) return 0; /* reported later */
    int rc = 0;
    if (!hc_graph_has_symbols(g)) {
        *fixed = g; /* the same graph a static import makes */
        return 0;
    }
    if (hc_pass_infer_shapes(g, &err) != HC_OK) {
        fprintf(stderr, "hidetc run: %s\n", err.msg);
        rc = 1;
        goto done;
    }
    if ((rc = read_inputs(r, npys))) goto done;
    const char *names[MAX_INPUT_ARGS];
    int ndims[MAX_INPUT_ARGS];
    int64_t (*shapes)[HC_MAX_DIMS] = hc_xcalloc(MAX_INPUT_ARGS + 1, sizeof *shapes);
    int n = 0;
    for (int i = 0; i < r->ninputs; i++, n++) {
        names[n] = r->input_names[i], ndims[n] = npys[i].ndim;
        memcpy(shapes[n], npys[i].shape, sizeof(int64_t) * (size_t)npys[i].ndim);
    }
    int64_t values[64];
    size_t ns = g->sym_names.len;
    if (!rc && ns > 64) rc = 1, fprintf(stderr, "hidetc run: more than 64 symbols\n");
    if (!rc && hc_graph_bind_inputs(g, n, names, ndims, (const int64_t(*)[HC_MAX_DIMS])shapes,
                                    values, &err) != HC_OK) {
        fprintf(stderr, "hidetc run: %s\n", err.msg);
        rc = 1;
    }
    free(shapes);
    for (size_t k = 0; !rc && k < ns; k++) {
        if (values[k] >= 0) continue;
        const char *where = "";
        for (size_t i = 0; i < g->inputs.len && !*where; i++)
            for (int d = 0; d < g->inputs.data[i]->ndim && !*where; d++) {
                const hc_sym *e = g->inputs.data[i]->sym ? g->inputs.data[i]->sym[d] : NULL;
                if (e && hc_sym_mentions(e, g->sym_names.data[k]))
                    where = hc_arena_printf(&g->arena, " (input '%s', dimension %d)",
                                            g->inputs.data[i]->name, d);
            }
        fprintf(stderr, "hidetc run: the inputs given do not fix the symbolic dimension '%s'%s: "
                "give that input with --input, or --dim %s=N (docs/dynamic.md)\n",
                g->sym_names.data[k], where, g->sym_names.data[k]);
        rc = 1;
    }
    if (!rc && r->verbose) fprintf(stderr, "hidetc: the inputs fix");
    for (size_t k = 0; !rc && k < ns; k++) {
        if (!cli_fix_dim(g->sym_names.data[k], values[k])) {
            fprintf(stderr, "hidetc run: too many symbols\n");
            rc = 1;
        }
        if (!rc && r->verbose)
            fprintf(stderr, " %s=%lld", g->sym_names.data[k], (long long)values[k]);
    }
    if (!rc && r->verbose) fprintf(stderr, " (kernels for this shape: docs/dynamic.md)\n");
done:
    hc_graph_free(g);
    return rc;
}

int cmd_run(int argc, char **argv) {
    run_args r;
    int rc = parse_args(argc, argv, &r);
    if (rc) return rc < 0 ? 0 : rc;
    hc_error err = {0};
    hc_compile_options opt = r.co;
    opt.num_threads = (int)r.threads, opt.verbose = r.verbose;
    hc_model *m = NULL;
    hc_npy npys[MAX_INPUT_ARGS];
    memset(npys, 0, sizeof npys);
    hc_graph *g = NULL;
    /* one compile for every shape; where an operator's kernel is not symbolic yet, the
     * shapes of the --input files fix the symbols and the kernels are built for them */
    if (cli_open_model(r.model, &opt, &m, &err) != HC_OK) {
        bool retry = err.status == HC_ERR_UNSUPPORTED && r.ninputs && !hc_model_file_is(r.model);
        if (retry) {
            fprintf(stderr, "hidetc: note: %s; compiling for the shapes of the inputs given "
                            "(docs/dynamic.md)\n", err.msg);
            rc = bind_from_inputs(&r, npys, &g);
        }
        if (!retry || (!rc && (g ? cli_compile_graph(g, &opt, &m, &err)
                                 : cli_open_model(r.model, &opt, &m, &err)) != HC_OK)) {
            fprintf(stderr, "hidetc run: %s\n", err.msg);
            rc = 1;
        }
    }
    if (!rc) rc = read_inputs(&r, npys);
    if (!rc) rc = check_inputs(&r, hc_model_graph(m), npys, hc_model_is_symbolic(m));
    if (!rc) rc = run_model(&r, m, npys);
    for (int i = 0; i < r.ninputs; i++) hc_npy_free(&npys[i]);
    hc_model_free(m);
    return rc;
}
