#!/bin/bash
# tuning.sh [--repeat R] [--rounds N] [--threads T] [--models NAME...] — for the five models
# of the paper: the wall time of a cold compile at each tuning level (0: default configs,
# 1: small spaces, 2: full spaces; an empty cache each time, so it includes tuning and
# compiling every kernel), the time of a --tune 2 compile with its records warm, and the
# latency of the model compiled at each level (interleaved rounds of `hidetc bench` on the
# compiled files; medians). Writes bench/results/tuning.md.
#
# Models: tests/models/export.py --full (opset 17) in $BUILD/models-full (cached; shared with
# bench/models.sh and bench/fusion.sh). BUILD defaults to build-bench.
set -u
OUT=$(cd "$(dirname "$0")" && pwd)/results/tuning.md
NAME=tuning.sh
source "$(dirname "$0")/common.sh" "$@"
WORK=$BUILD/tuning
mkdir -p "$WORK"
export HIDETC_NO_PROGRESS=1

bench_ms() { "$HIDETC" bench "$1" --warmup 3 --repeat "$repeat" | sed -n 's/^median_ms: \([^ ]*\).*/\1/p'; }

rows=()
for m in "${models[@]}"; do
    f=$MODELS/$m/model_op17.onnx
    [ -f "$f" ] || die "missing $f"
    t=() files=()
    for level in 0 1 2; do
        export HIDETC_CACHE_DIR=$WORK/cache-$m
        rm -rf "$HIDETC_CACHE_DIR"
        s=$(now)
        "$HIDETC" compile "$f" -o "$WORK/$m-tune$level.hcm" --threads "$threads" --tune "$level" \
            >/dev/null || die "$m: compile --tune $level failed"
        t+=("$(secs "$s")")
        files+=("$WORK/$m-tune$level.hcm")
    done
    s=$(now)  # records warm (and kernels cached): the recompile
    "$HIDETC" compile "$f" -o "$WORK/$m-warm.hcm" --threads "$threads" --tune 2 >/dev/null ||
        die "$m: warm compile failed"
    warm=$(secs "$s")
    l0=() l1=() l2=()
    for r in $(seq "$rounds"); do
        l0+=("$(bench_ms "${files[0]}")")
        l1+=("$(bench_ms "${files[1]}")")
        l2+=("$(bench_ms "${files[2]}")")
    done
    m0=$(printf '%s\n' "${l0[@]}" | median)
    m1=$(printf '%s\n' "${l1[@]}" | median)
    m2=$(printf '%s\n' "${l2[@]}" | median)
    echo "$m: compile ${t[0]} / ${t[1]} / ${t[2]} s (warm $warm s); latency $m0 / $m1 / $m2 ms"
    rows+=("| $m | ${t[0]} | ${t[1]} | ${t[2]} | $warm | $m0 | $m1 | $m2 |")
done
{
    echo "# Tuning: time and latency per level"
    echo
    echo "Command: \`bench/tuning.sh $args\` ($(date -u +%Y-%m-%d), commit $(git -C "$SRC" rev-parse --short HEAD))."
    echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $threads threads;" \
         "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "Compile: wall seconds of \`hidetc compile MODEL --tune L\` with an empty cache (tuning +"
    echo "compiling every kernel); warm: \`--tune 2\` again with the records and kernels cached."
    echo "Latency: median over $rounds interleaved rounds of \`hidetc bench FILE --repeat $repeat\` medians (ms)."
    echo
    echo "| model | compile L0 (s) | compile L1 (s) | compile L2 (s) | warm L2 (s) | latency L0 (ms) | latency L1 (ms) | latency L2 (ms) |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
} > "$OUT"
echo "wrote $OUT"
