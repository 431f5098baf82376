/* math.c — operator definitions (see graph/ops.h for the table). */
#include "graph/graph.h"

const hc_op_def hc_ops_math[] = {
    {0},
};
