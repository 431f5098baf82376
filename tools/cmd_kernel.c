#include <stdio.h>
#include "cli.h"
int cmd_kernel(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "hidetc kernel: not built yet\n"); return 1; }
