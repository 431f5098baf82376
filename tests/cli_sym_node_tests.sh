#!/usr/bin/env bash
# cli_sym_node_tests.sh HIDETC SOURCE_DIR — the symbolic shape rules (docs/dynamic.md) over
# the ONNX backend node tests (Debian libonnx-testdata): every input dimension above 1 of
# each test model made a symbol, hinted at its value (test_sym_infer --all-symbolic).
# Symbolic inference must either work (each rule checked against the op's own inference at
# the hints and at a second binding) or refuse with a message; a rule that disagrees with
# the op is a failure. Exits 77 without the test data.
set -u
HIDETC=$1
CHECK=$(cd "$(dirname "$HIDETC")" && pwd)/test_sym_infer
DATA=${HIDETC_ONNX_NODE_DIR:-/usr/share/libonnx-testdata/data/node}
[ -d "$DATA" ] || { echo "SKIP: no ONNX node tests in $DATA (Debian libonnx-testdata)"; exit 77; }
[ -x "$CHECK" ] || { echo "FAIL: $CHECK is not built"; exit 1; }
out=$("$CHECK" --all-symbolic "$DATA"/*/ 2>&1)
rc=$?
echo "$out" | tail -5
[ $rc -eq 0 ] || { echo "FAIL: a symbolic rule disagrees with its op"; exit 1; }
n=$(echo "$out" | sed -n 's/^all-symbolic: \([0-9]*\) inferred.*/\1/p')
[ -n "$n" ] && [ "$n" -ge 500 ] || { echo "FAIL: only '${n:-?}' models inferred symbolically (>= 500 expected)"; exit 1; }
echo "cli_sym_node_tests: $n models inferred with symbolic shapes"
