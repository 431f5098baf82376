#!/bin/bash
# fusion.sh [--repeat R] [--threads T] [--models NAME...] — fused against --no-fusion on the
# five models of the paper, in one run: kernels per run (`hidetc inspect --fusion`) and
# latency (`hidetc bench`, interleaved rounds so that machine noise hits both alike;
# medians over rounds of the per-round medians). Writes bench/results/fusion.md.
#
# Models: tests/models/export.py --full (PyTorch, fixed seed, random weights, opset 17),
# exported into $BUILD/models-full (cached; shared with bench/models.sh and make
# test-models). BUILD defaults to build-bench (a Release build of the hidetc program).
set -u
OUT=$(cd "$(dirname "$0")" && pwd)/results/fusion.md
NAME=fusion.sh
source "$(dirname "$0")/common.sh" "$@"
export HIDETC_CACHE_DIR=${HIDETC_CACHE_DIR:-$BUILD/bench-cache}
bench_ms() { "$HIDETC" bench "$1" --threads "$threads" --warmup 3 --repeat "$repeat" "${@:2}" |
             sed -n 's/^median_ms: \([^ ]*\).*/\1/p'; }

rows=()
for m in "${models[@]}"; do
    f=$MODELS/$m/model_op17.onnx
    [ -f "$f" ] || die "missing $f"
    kf=$("$HIDETC" inspect "$f" --fusion --threads "$threads" | sed -n 's/^kernels: //p')
    ku=$("$HIDETC" inspect "$f" --fusion --no-fusion --threads "$threads" | sed -n 's/^kernels: //p')
    fused=() unfused=()
    for r in $(seq "$rounds"); do  # interleaved: fused, unfused, fused, ...
        fused+=("$(bench_ms "$f")")
        unfused+=("$(bench_ms "$f" --no-fusion)")
    done
    mf=$(printf '%s\n' "${fused[@]}" | median)
    mu=$(printf '%s\n' "${unfused[@]}" | median)
    sp=$(awk -v a="$mu" -v b="$mf" 'BEGIN { printf "%.2f", a / b }')
    echo "$m: kernels $kf vs $ku, $mf ms vs $mu ms (x$sp)"
    rows+=("| $m | $kf | $ku | $mf | $mu | $sp |")
done
{
    echo "# Fusion: fused against --no-fusion"
    echo
    echo "Command: \`bench/fusion.sh $args\` ($(date -u +%Y-%m-%d), commit $(git -C "$SRC" rev-parse --short HEAD))."
    echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $threads threads;" \
         "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "Latency: median over $rounds interleaved rounds of \`hidetc bench --warmup 3 --repeat $repeat\` medians (ms)."
    echo "Kernels: launched per run (\`hidetc inspect MODEL --fusion\`, last line)."
    echo
    echo "| model | kernels fused | kernels unfused | fused ms | unfused ms | speedup |"
    echo "|---|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
} > "$OUT"
echo "wrote $OUT"
