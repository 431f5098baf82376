#!/usr/bin/env bash
# scripts/onnx-node-tests.sh [OUT_DIR] — the node tests of the current `onnx` release from
# PyPI (docs/onnx.md, "The node tests of ONNX 1.23"): installs it in a venv under the build
# folder (Debian's python3-onnx is 1.12) and writes its tensor-only node tests
# (onnx.backend.test.case.node.collect_testcases, through scripts/gen_onnx_node_tests.py)
# into OUT_DIR (default build/onnx-node-latest). ONNX_VERSION pins a release (default: the
# latest); a rerun with the venv in place installs nothing.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT=${1:-$ROOT/build/onnx-node-latest}
VENV=${ONNX_VENV:-$ROOT/build/onnx-latest-venv}
PY=${PYTHON:-$(command -v python3)}
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
    "$VENV/bin/pip" install -q ${ONNX_VERSION:+"onnx==$ONNX_VERSION"} ${ONNX_VERSION:-onnx}
fi
rm -rf "$OUT.tmp"
"$VENV/bin/python" "$ROOT/scripts/gen_onnx_node_tests.py" "$OUT.tmp" | tee "$OUT.log"
"$VENV/bin/python" -c 'import onnx, onnx.defs; print("onnx %s (opset %d)" % (onnx.__version__, onnx.defs.onnx_opset_version()))' >"$OUT.tmp/VERSION"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
