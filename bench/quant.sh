#!/usr/bin/env bash
# bench/quant.sh [--threads T] [--rounds N] [--repeat R] [--out FILE] — a statically
# quantized ResNet-50 (QDQ, onnxruntime.quantization.quantize_static: bench/quant_export.py)
# beside the f32 one, hidetc only, interleaved: per round `hidetc bench` of the f32 model,
# of the QDQ model with --no-int8 (its convs in f32) and of the QDQ model (int8 convs), R
# timed runs each; the table gives the medians over the rounds of the per-round medians.
# Models: bench/compare_export.py resnet50 (cached in $BUILD/cache/quant-resnet50), then
# quant_export.py in a venv with onnxruntime ($BUILD/bench-venv, as bench/compare makes it).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$SRC/build-bench}
threads=2 rounds=3 repeat=20 out=""
while [ $# -gt 0 ]; do
    case $1 in
    --threads) threads=$2; shift 2 ;; --rounds) rounds=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;; --out) out=$2; shift 2 ;;
    *) echo "usage: bench/quant.sh [--threads T] [--rounds N] [--repeat R] [--out FILE]" >&2; exit 2 ;;
    esac
done
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --target hidetc -j2 >/dev/null
H=$BUILD/hidetc D=$BUILD/cache/quant-resnet50 PY=$BUILD/bench-venv/bin/python
[ -f "$D/model.onnx" ] || /usr/bin/python3 "$SRC/bench/compare_export.py" resnet50 1 "$D" >/dev/null
if [ ! -f "$D/model_qdq.onnx" ]; then
    [ -x "$PY" ] || { python3 -m venv --system-site-packages "$BUILD/bench-venv"; }
    "$PY" -c 'import onnxruntime.quantization, ml_dtypes' 2>/dev/null ||
        "$PY" -m pip install -q onnxruntime 'onnx>=1.13' ml_dtypes "numpy==$(/usr/bin/python3 -c 'import numpy; print(numpy.__version__)')"
    "$PY" "$SRC/bench/quant_export.py" "$D" >/dev/null 2>&1
fi
median() { sort -g | awk '{v[NR]=$1} END {if (NR % 2) print v[(NR+1)/2]; else printf "%.3f\n", (v[NR/2]+v[NR/2+1])/2}'; }
names=("ResNet-50 f32" "ResNet-50 QDQ, --no-int8" "ResNet-50 QDQ (int8 convs)")
args=("$D/model.onnx" "$D/model_qdq.onnx --no-int8" "$D/model_qdq.onnx")
declare -a res0 res1 res2
for _ in $(seq "$rounds"); do
    for i in 0 1 2; do
        # shellcheck disable=SC2086
        m=$("$H" bench ${args[$i]} --threads "$threads" --repeat "$repeat" --warmup 3 2>&1 |
            sed -n 's/^median_ms: \([0-9.]*\).*/\1/p')
        eval "res$i+=(\"$m\")"
    done
done
f32=$(printf '%s\n' "${res0[@]}" | median)
{
    echo "| model | hidetc ms (median of $rounds rounds of $repeat runs) | per round | vs f32 |"
    echo "|---|---:|---|---:|"
    for i in 0 1 2; do
        eval "vals=(\"\${res$i[@]}\")"
        med=$(printf '%s\n' "${vals[@]}" | median)
        printf '| %s | %s | %s | %s |\n' "${names[$i]}" "$med" "${vals[*]}" \
            "$(awk -v a="$f32" -v b="$med" 'BEGIN { printf "%.2fx", a / b }')"
    done
    echo
    echo "- Command: \`bench/quant.sh --threads $threads --rounds $rounds --repeat $repeat\` at $(git -C "$SRC" rev-parse --short HEAD), $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; ISA ${HIDETC_ISA:-$(grep -q -w avx512f /proc/cpuinfo && echo avx512 || echo avx2)}$(grep -q -w -E 'avx512_vnni|avx_vnni' /proc/cpuinfo && echo ", VNNI"); load average $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee ${out:+"$out"}
