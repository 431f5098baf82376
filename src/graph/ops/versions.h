/* versions.h — ONNX operator versions (src/graph/ops/versions.c). */
#ifndef HC_OPS_VERSIONS_H
#define HC_OPS_VERSIONS_H

#include <stdbool.h>

#include "core/core.h"
#include "graph/ops.h"

/* The default-domain opsets the importer accepts (opset 28: ONNX 1.23). */
#define HC_ONNX_MIN_OPSET 1
#define HC_ONNX_MAX_OPSET 28

/* The other domains hidetc has operators of, each with the versions of it the importer
 * accepts (a model selects one in its opset_import). Their ops' rows in graph/ops.h are
 * named "<domain>.<op_type>"; their since-versions below are versions of their domain, and
 * a node's `opset` is its domain's version. */
typedef struct hc_onnx_domain {
    const char *name;
    int min_version, max_version;
} hc_onnx_domain;
#define HC_ONNX_NUM_DOMAINS 1
extern const hc_onnx_domain hc_onnx_domains[HC_ONNX_NUM_DOMAINS];
/* The index of `domain` in hc_onnx_domains; -1 for the default domain and for a domain
 * hidetc has no operator of. */
int hc_onnx_domain_index(const char *domain);

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
