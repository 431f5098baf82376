/* versions.h — ONNX operator versions (src/graph/ops/versions.c). */
#ifndef HC_OPS_VERSIONS_H
#define HC_OPS_VERSIONS_H

#include <stdbool.h>

#include "core/core.h"
#include "graph/ops.h"

/* The default-domain opsets the importer accepts (opset 28: ONNX 1.23). */
#define HC_ONNX_MIN_OPSET 1
#define HC_ONNX_MAX_OPSET 28

/* The version of `op` that `opset` selects: its largest since-version <= opset; 0 when
 * the op is not defined yet at that opset; -1 when the op has no version table (internal
 * ops). */
int hc_op_onnx_version(hc_op_kind op, int opset);
/* The opset that introduced `op` (-1: no table). */
int hc_op_onnx_first_version(hc_op_kind op);
/* Whether hidetc implements that version (one of the op's since-versions). */
bool hc_op_onnx_version_supported(hc_op_kind op, int version);
/* "1, 11, 13": the implemented versions. */
void hc_op_onnx_versions_print(hc_sb *sb, hc_op_kind op);

#endif
