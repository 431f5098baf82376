/* cli.h — subcommands of the hidetc program. Each returns the process exit code:
 * 0 success, 1 failure (bad input, wrong result), 2 usage error. */
#ifndef HC_CLI_H
#define HC_CLI_H

#include "target/target.h"

int cmd_mapping(int argc, char **argv);
int cmd_kernel(int argc, char **argv);
/* hidetc kernel matmul on a GPU target (kernel_gpu.c). */
int kernel_matmul_gpu(const hc_target *t, bool runnable, int64_t batch, int64_t m, int64_t n,
                      int64_t k, int level, int cand, bool print_ir, bool print_source,
                      bool bench);
int cmd_onnx_test(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_cache(int argc, char **argv);

#endif
