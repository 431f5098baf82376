/* internal.c — operators that only graph passes create (no ONNX name). */
#include "graph/graph.h"

const hc_op_def hc_ops_internal[] = {
    {HC_OPK_COUNT, NULL, NULL, NULL},
};
