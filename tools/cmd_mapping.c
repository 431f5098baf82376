#include <stdio.h>
#include "cli.h"
int cmd_mapping(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "hidetc mapping: not built yet\n"); return 1; }
