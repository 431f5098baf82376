#!/usr/bin/env bash
# Export models with export.py into OUT_DIR unless OUT_DIR already holds this export: a
# stamp file records a hash of export.py, its arguments and the torch/torchvision versions.
#   export_cached.sh OUT_DIR EXPORT_ARGS...      (e.g. --small --opset 13 17)
# Exit 0 when OUT_DIR is up to date, 1 when the export failed (its log is printed).
# HIDETC_PYTHON overrides /usr/bin/python3.
set -uo pipefail
PY=${HIDETC_PYTHON:-/usr/bin/python3}
HERE=$(cd "$(dirname "$0")" && pwd)
out=$1
shift
stamp=$( (cat "$HERE/export.py"; echo "$*"; "$PY" -c \
    'import torch, torchvision; print(torch.__version__, torchvision.__version__)') |
    sha256sum | cut -c1-32)
mkdir -p "$out"
[ "$(cat "$out/.stamp" 2>/dev/null)" = "$stamp" ] && exit 0
rm -f "$out/.stamp"
echo "exporting models into $out"
if ! "$PY" "$HERE/export.py" "$out" "$@" 2>"$out/export.log"; then
    cat "$out/export.log"
    echo "FAIL: export.py failed"
    exit 1
fi
echo "$stamp" >"$out/.stamp"
