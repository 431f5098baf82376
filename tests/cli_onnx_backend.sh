#!/bin/bash
# cli_onnx_backend.sh HIDETC SOURCE_DIR — the whole ONNX backend node-test suite (Debian's
# libonnx-testdata, 932 tests) through `hidetc onnx-test`: no test of a supported op may
# fail, and at least MIN_PASSED must pass (the figure in README.md guards against silent
# regressions: an op that starts reporting "unsupported" lowers the count).
set -u
HIDETC=$1
MIN_PASSED=${HIDETC_ONNX_MIN_PASSED:-858}
DATA=/usr/share/libonnx-testdata/data/node
if [ ! -f "$DATA/test_relu/model.onnx" ]; then
    echo "SKIP: $DATA not installed (Debian package libonnx-testdata)"
    exit 77
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$HIDETC" onnx-test "$DATA"/*/ >"$out" 2>&1
rc=$?
grep '^FAIL' "$out"
last=$(tail -n 1 "$out")
echo "$last"
if ! [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
    echo "FAIL: closing line not found"
    exit 1
fi
passed=${BASH_REMATCH[1]} failed=${BASH_REMATCH[2]}
status=0
[ "$failed" -eq 0 ] || { echo "FAIL: $failed backend tests failed"; status=1; }
[ "$passed" -ge "$MIN_PASSED" ] || { echo "FAIL: $passed passed, expected >= $MIN_PASSED"; status=1; }
[ $rc -eq $((failed > 0)) ] || { echo "FAIL: exit code $rc with $failed failures"; status=1; }
exit $status
