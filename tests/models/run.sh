#!/usr/bin/env bash
# Model tests: export models from PyTorch (export.py), run them with `hidetc run`, compare
# each output with PyTorch's (compare.py).
#
#   run.sh --small|--full HIDETC OUT_DIR [--opset N...] [--models NAME...] [--threads T]
#          [--target NAME]
#
# Exports are cached in OUT_DIR (export_cached.sh): they run again only when export.py or
# the arguments change. One line per model and opset:
#   PASS resnet50-small op13 (compile+run 12.3 s)   or   FAIL ... with the reason
# then the outputs' errors, and a closing "N passed, N failed". Exit codes: 0 all passed,
# 1 a failure, 77 skipped (no PyTorch: the reason is printed; ctest's SKIP_RETURN_CODE).
set -uo pipefail

PY=${HIDETC_PYTHON:-/usr/bin/python3}
HERE=$(cd "$(dirname "$0")" && pwd)

usage() {
    echo "usage: run.sh --small|--full HIDETC OUT_DIR [--opset N...] [--models NAME...]" \
         "[--threads T] [--target NAME]" >&2
    exit 2
}

[ $# -ge 3 ] || usage
size=$1 hidetc=$2 out=$3
shift 3
case $size in --small | --full) ;; *) usage ;; esac
opsets=(13 17)
models=()
threads=2
target=()
while [ $# -gt 0 ]; do
    case $1 in
    --opset) opsets=(); shift
        while [ $# -gt 0 ] && [[ $1 != --* ]]; do opsets+=("$1"); shift; done ;;
    --models) shift
        while [ $# -gt 0 ] && [[ $1 != --* ]]; do models+=("$1"); shift; done ;;
    --threads) threads=$2; shift 2 ;;
    --target) target=(--target "$2"); shift 2 ;;
    *) usage ;;
    esac
done

# Skip (not fail) on a machine without PyTorch: scripts/install-deps.sh installs it.
if ! "$PY" -c 'import torch, torchvision, onnx, numpy' 2>/dev/null; then
    echo "SKIP: model tests need $PY with torch, torchvision, onnx and numpy" \
         "(Debian python3-torch python3-torchvision python3-onnx python3-numpy)"
    exit 77
fi
[ -x "$hidetc" ] || { echo "FAIL: $hidetc is not an executable"; exit 1; }

export_args=("$size" --opset "${opsets[@]}")
[ ${#models[@]} -gt 0 ] && export_args+=(--models "${models[@]}")
bash "$HERE/export_cached.sh" "$out" "${export_args[@]}" || exit 1

# meta.json -> "inputs outputs" lines, read without jq
meta() { "$PY" -c 'import json,sys; m=json.load(open(sys.argv[1])); print(*m[sys.argv[2]])' \
    "$1" "$2"; }

passed=0 failed=0
for dir in "$out"/*/; do
    dir=${dir%/}
    name=$(basename "$dir")
    [ -f "$dir/meta.json" ] || continue
    if [ ${#models[@]} -gt 0 ]; then
        base=${name%-small}
        [[ " ${models[*]} " == *" $base "* ]] || continue
    fi
    ins=()
    for i in $(meta "$dir/meta.json" inputs); do ins+=(--input "$i=$dir/inputs/$i.npy"); done
    outs=$(meta "$dir/meta.json" outputs)
    for op in "${opsets[@]}"; do
        got="$dir/got_op$op"
        rm -rf "$got" && mkdir -p "$got"
        t0=$(date +%s%N)
        "$hidetc" run "$dir/model_op$op.onnx" "${ins[@]}" --output-dir "$got" \
            --threads "$threads" "${target[@]}" >"$dir/run_op$op.log" 2>&1
        rc=$?
        secs=$(awk -v ns=$(($(date +%s%N) - t0)) 'BEGIN { printf "%.1f", ns / 1e9 }')
        if [ $rc -ne 0 ]; then
            echo "FAIL $name op$op: hidetc run exited $rc ($secs s):"
            tail -n 5 "$dir/run_op$op.log" | sed 's/^/    /'
            failed=$((failed + 1))
            continue
        fi
        # shellcheck disable=SC2086
        result=$("$PY" "$HERE/compare.py" "$dir/expected" "$got" $outs)
        if [ $? -eq 0 ]; then
            echo "PASS $name op$op (compile+run $secs s)"
            passed=$((passed + 1))
        else
            echo "FAIL $name op$op (compile+run $secs s)"
            failed=$((failed + 1))
        fi
        echo "$result" | sed 's/^/    /'
    done
done
echo "$passed passed, $failed failed"
[ $((passed + failed)) -gt 0 ] || { echo "FAIL: no models found in $out"; exit 1; }
[ $failed -eq 0 ]
