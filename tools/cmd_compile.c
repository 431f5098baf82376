/* hidetc compile MODEL -o FILE [--threads T] [--no-fusion] [--tune 0|1|2]
 *                [--tune-weights auto|cached|cold] [--verbose]
 *
 * Compiles the model and writes it as one file (docs/model_file.md): kernels' shared
 * objects, memory plan, weights, inputs and outputs. `hidetc run FILE` and `hidetc bench
 * FILE` load it without a compiler or the kernel cache. Prints one line:
 *   compiled MODEL -> FILE: K kernels, P programs, B bytes, T threads, ISA */
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "model_load.h"

typedef struct compile_args {
    const char *model, *output;
    long threads;
    bool verbose;
    hc_compile_options co;
} compile_args;

static void usage(FILE *f) {
    fprintf(f, "usage: hidetc compile MODEL -o FILE [--threads T] " CLI_COMPILE_OPTIONS_USAGE
               " [--verbose]\n"
               "  MODEL: an ONNX file or builtin:NAME\n"
               "  FILE: the compiled model, for `hidetc run FILE` and `hidetc bench FILE`\n"
               "  --threads T: the thread count it will run with (default: all "
               "cores)\n" CLI_COMPILE_OPTIONS_HELP);
}

/* Returns 0, -1 after --help, or the exit code of a usage error. */
static int parse_args(int argc, char **argv, compile_args *r) {
    memset(r, 0, sizeof *r);
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) return usage(stdout), -1;
        int co = cli_compile_option("compile", o, val, &r->co);
        if (co < 0) return 2;
        if (co) {
            i += co - 1;
            continue;
        }
        if (!strcmp(o, "--verbose")) r->verbose = true;
        else if (!strcmp(o, "-o") || !strcmp(o, "--output")) {
            if (!val) return fprintf(stderr, "hidetc compile: %s needs a file name\n", o), 2;
            r->output = val, i++;
        } else if (!strcmp(o, "--threads")) {
            if (!cli_parse_int("compile", o, val, 1, 1024, &r->threads)) return 2;
            i++;
        } else if (o[0] == '-' && o[1]) {
            fprintf(stderr, "hidetc compile: unknown option '%s'\n", o);
            return usage(stderr), 2;
        } else if (r->model) {
            fprintf(stderr, "hidetc compile: more than one MODEL ('%s', '%s')\n", r->model, o);
            return 2;
        } else r->model = o;
    }
    if (!r->model || !r->output) {
        if (r->model) fprintf(stderr, "hidetc compile: -o FILE is missing\n");
        return usage(stderr), 2;
    }
    return 0;
}

int cmd_compile(int argc, char **argv) {
    compile_args r;
    int rc = parse_args(argc, argv, &r);
    if (rc) return rc < 0 ? 0 : rc;
    hc_error err = {0};
    if (hc_model_file_is(r.model)) {
        fprintf(stderr, "hidetc compile: %s is already a compiled model (hidetc run or bench "
                        "it)\n", r.model);
        return 1;
    }
    hc_graph *g;
    if (cli_load_model(r.model, &g, &err) != HC_OK) {
        fprintf(stderr, "hidetc compile: %s\n", err.msg);
        return 1;
    }
    hc_compile_options opt = r.co;
    opt.num_threads = (int)r.threads, opt.verbose = r.verbose;
    hc_model *m;
    double t0 = hc_now_ms();
    if (hc_model_compile(g, &opt, &m, &err) != HC_OK) {
        fprintf(stderr, "hidetc compile: %s\n", err.msg);
        return 1;
    }
    double t1 = hc_now_ms();
    if (hc_model_save(m, r.output, &err) != HC_OK) {
        fprintf(stderr, "hidetc compile: %s\n", err.msg);
        hc_model_free(m);
        return 1;
    }
    struct stat sb;
    long long bytes = stat(r.output, &sb) == 0 ? (long long)sb.st_size : -1;
    const hc_target *t = hc_model_target(m);
    if (t->kind == HC_TARGET_GPU)
        printf("compiled %s -> %s: %d kernels, %d programs, %lld bytes, target %s (%s)\n",
               r.model, r.output, hc_model_num_kernels(m), hc_model_num_programs(m), bytes,
               t->name, t->machine());
    else
        printf("compiled %s -> %s: %d kernels, %d programs, %lld bytes, %d threads, %s\n",
               r.model, r.output, hc_model_num_kernels(m), hc_model_num_programs(m), bytes,
               hc_model_num_threads(m), hc_isa_name(t->caps.isa));
    if (r.verbose)
        fprintf(stderr, "hidetc: compile %.0f ms, save %.0f ms\n", t1 - t0, hc_now_ms() - t1);
    hc_model_free(m);
    return 0;
}
