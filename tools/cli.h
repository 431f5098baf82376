/* cli.h — subcommands of the hidetc program. Each returns the process exit code:
 * 0 success, 1 failure (bad input, wrong result), 2 usage error. */
#ifndef HC_CLI_H
#define HC_CLI_H

int cmd_mapping(int argc, char **argv);
int cmd_kernel(int argc, char **argv);
int cmd_onnx_test(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_bench(int argc, char **argv);

#endif
