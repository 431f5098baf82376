/* hidetc — the command-line program. Each subcommand lives in tools/cmd_<name>.c. */
#include <stdio.h>
#include <string.h>

#include "cli.h"


static const struct {
    const char *name, *usage;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"mapping", "mapping EXPR [--worker W] [--json] [--svg FILE]", cmd_mapping},
    {"kernel", "kernel matmul --m M --n N --k K [--batch B] [--threads T] [--print-ir] "
               "[--print-source] [--dump DIR] [--bench]", cmd_kernel},
    {"onnx-test", "onnx-test DIR... [--rtol R] [--atol A] [--jobs J] [--timeout S] "
                  "[--threads T] [--cache-dir DIR] [--no-fork] [--verbose]", cmd_onnx_test},
    {"run", "run MODEL [--input NAME=FILE.npy ...] [--output-dir DIR] [--threads T] "
            "[--verbose]", cmd_run},
    {"compile", "compile MODEL -o FILE [--threads T] [--no-fusion] [--tune 0|1|2] "
                "[--tune-weights auto|cached|cold] [--verbose]",
     cmd_compile},
    {"inspect", "inspect MODEL [--dot FILE]", cmd_inspect},
    {"bench", "bench MODEL [--threads T] [--warmup W] [--repeat R] [--profile N] [--verbose]",
     cmd_bench},
    {"cache", "cache info|clear|prune --max-size BYTES [--cache-dir DIR]", cmd_cache},
};

static void usage(FILE *f) {
    fprintf(f, "usage: hidetc COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  hidetc %s\n", commands[i].usage);
    fprintf(f, "\nMODEL: an ONNX file or builtin:NAME; run and bench also take a FILE written "
               "by hidetc compile\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "hidetc: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
