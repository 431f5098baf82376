/* model_load.h — what the model commands (run, inspect, bench) share: opening a MODEL
 * argument, buffers for a compiled model's inputs and outputs, deterministic random
 * inputs, and option parsing. */
#ifndef HC_MODEL_LOAD_H
#define HC_MODEL_LOAD_H

#include "runtime/runtime.h"

/* MODEL is "builtin:NAME" (hc_builtin_model) or the path of an ONNX file. */
hc_status cli_load_model(const char *spec, hc_graph **out, hc_error *err);
/* The same, keeping the dimensions that --dim / --shape do not fix as symbols (their hint
 * values from --dim-hint NAME=N). */
hc_status cli_load_model_symbolic(const char *spec, hc_graph **out, hc_error *err);
/* Add a --dim NAME=V override (false: too many). */
bool cli_fix_dim(const char *name, int64_t value);

/* Open a MODEL argument as a runnable model: a file written by `hidetc compile` (told by
 * its magic bytes, whatever its name) is loaded without compiling; anything else is
 * loaded as a graph (cli_load_model) and compiled with `co`. For a compiled file,
 * co->num_threads must be 0 or the file's thread count, and the other compile options
 * do not apply (a note on stderr says so when they are set). */
hc_status cli_open_model(const char *spec, const hc_compile_options *co, hc_model **out,
                         hc_error *err);

/* Compile a loaded graph as cli_open_model does (it takes g, also on failure). */
hc_status cli_compile_graph(hc_graph *g, const hc_compile_options *co, hc_model **out,
                            hc_error *err);

/* Seed of the random inputs (documented in docs/runtime.md). */
#define CLI_RANDOM_SEED 20240229u
/* Integer inputs get values in [0, CLI_RANDOM_INT_MAX): valid token ids and indices for
 * any vocabulary of at least that many entries. */
#define CLI_RANDOM_INT_MAX 100

/* Fill `buf` (t's dtype and shape) with deterministic random values: floats uniform in
 * [-1, 1), integers in [0, CLI_RANDOM_INT_MAX), bools 0 or 1. Input i of a model uses
 * CLI_RANDOM_SEED + i. */
void cli_fill_random(const hc_tensor *t, void *buf, uint64_t seed);

/* One malloc'ed, zeroed buffer per model input and output. */
typedef struct cli_buffers {
    int nin, nout;
    void **in, **out;
} cli_buffers;
void cli_buffers_alloc(const hc_model *m, cli_buffers *b);
/* The shapes of one run (docs/dynamic.md): for a model with symbols, the values come from
 * the shapes of the inputs given (ngiven of them, by name), then --bind NAME=N, then the
 * hints; the constraints are checked. in/out are the model's inputs and outputs with
 * those shapes (sym NULL), dims[i] input i's for hc_model_run_dims; binding "batch=8
 * seq=128" (NULL without symbols). A static model's are its own. */
typedef struct cli_io {
    int nin, nout, nbound;
    hc_tensor *in, *out;
    const int64_t **dims;
    char *binding;
} cli_io;
hc_status cli_io_make(const hc_model *m, int ngiven, const char *const *names, const int *ndims,
                      const int64_t (*shapes)[HC_MAX_DIMS], cli_io *io, hc_error *err);
void cli_io_free(cli_io *io);
/* Buffers for io's inputs and outputs. */
void cli_buffers_alloc_io(const cli_io *io, cli_buffers *b);
void cli_buffers_free(cli_buffers *b);
/* Random values in every input (cli_fill_random). */
void cli_random_inputs(const hc_model *m, cli_buffers *b);

/* Parse an integer option value in [lo, hi]; prints "hidetc CMD: ..." and returns false
 * when it is missing or invalid. */
bool cli_parse_int(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out);

/* The compile options every model command shares: --no-fusion, --no-prepack, the conv path
 * flags (--no-winograd, --winograd-all, --no-direct, --direct-all), --tune 0|1|2. Returns 0
 * when `o` is not one of them, 1 when it was a flag, 2 when it also consumed `val`, and
 * -1 after printing "hidetc CMD: ..." for a bad value. */
int cli_compile_option(const char *cmd, const char *o, const char *val, hc_compile_options *co);
#define CLI_COMPILE_OPTIONS_USAGE                                                                  \
    "[--no-fusion] [--no-prepack] [--no-winograd] [--no-direct] [--tune 0|1|2] "         \
    "[--tune-shapes NAME=V1,V2,...] "                                                       \
    "[--target NAME] [--no-cuda-graph] [--dump-ir STAGE] [--max-memory BYTES] [--no-pin] "  \
    "[--dim NAME=N] [--shape INPUT=D0,D1,...] [--dim-hint NAME=N] [--bind NAME=N]"
/* Their help lines, for each command's usage text. */
#define CLI_COMPILE_OPTIONS_HELP                                                                   \
    "  --no-fusion: one kernel per node; --no-prepack: pack weights on every call, not once\n"     \
    "  at compile time; --tune L: schedule-space level (0 default)\n"                              \
    "  --tune-shapes NAME=V1,V2,...: with --tune, tune a symbolic model's kernels at these\n"      \
    "  values of symbol NAME (every combination with the other options; default: the\n"            \
    "  hints); a kernel whose best config differs keeps one program per size range, and\n"         \
    "  each run picks the one tuned nearest its shape (docs/dynamic.md)\n"                         \
    "  --no-winograd: no conv by Winograd (3x3; blocked: 5x5, 1x7, 7x1, ...) even where\n"         \
    "  it pays; --winograd-all: by Winograd wherever it applies (docs/winograd.md)\n"              \
    "  --winograd-tile 2|4|6: tiles of 2, 4 or 6 outputs along each axis of several taps,\n"       \
    "  F(2x2, 3x3) or F(4x4, 3x3), F(2, 7), F(4, 7) or F(6, 7), for every blocked Winograd\n"      \
    "  conv; 6 for the 1x7 / 7x1 kernels, 4 for the others (default: the larger tile where\n"      \
    "  its weights stay small or pay, docs/winograd.md)\n"                                         \
    "  --no-direct: no conv by the direct template; --direct-all: every conv by it\n"              \
    "  (docs/conv_dw.md)\n"                                                                        \
    "  --target NAME: cpu (default: this CPU), cpu:avx512, cpu:avx2, cpu:scalar, opencl,\n"        \
    "  cuda, cuda:sm_80, cuda:sm_90 (docs/gpu.md); --no-cuda-graph: launch every kernel on\n"      \
    "  every run instead of replaying the first run as a CUDA graph\n"                             \
    "  --dim NAME=N: fix the symbolic input dimension NAME (ONNX dim_param) to N;\n"               \
    "  --shape INPUT=D0,D1,...: fix input INPUT's whole shape (docs/onnx.md); symbols\n"           \
    "  left open stay symbolic: one compile for every shape (docs/dynamic.md)\n"                   \
    "  --dim-hint NAME=N: the value heuristics assume for symbol NAME (default 16, 24, ...);\n"    \
    "  --bind NAME=N: run a symbolic model with NAME=N (inputs given with --input fix\n"           \
    "  their symbols; the others default to their hints)\n"                                        \
    "  --no-pin: leave the run's threads unpinned (the program pins them to CPUs by\n"             \
    "  default; the library only when asked: docs/runtime.md)\n"                                   \
    "  --max-memory BYTES: refuse a model whose run needs more (arena, weights, inputs and\n"      \
    "  outputs; K, M, G, T suffixes), naming its largest tensor\n"                                 \
    "  --dump-ir STAGE: print every program after STAGE (scheduled, fused, lowered, source)\n"     \
    "  to stderr (also HIDETC_DUMP=STAGE; HIDETC_VERIFY=1 verifies between stages)\n"

#endif
