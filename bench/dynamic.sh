#!/bin/bash
# dynamic.sh OUT [--rounds N] [--repeat R] [--threads T] — dynamic shapes against static
# kernels (issue 18's table): each model exported with dynamic axes
# (tests/models/export.py --full --dynamic, into OUT) is compiled once with its symbols
# (`hidetc compile`, a model file) and benched at each shape with --bind; the same export
# compiled with those symbols fixed (--dim) is benched alongside, alternated in every
# round. Prints one line per (model, shape, kind, round) and a table of medians.
set -eu
OUT=${1:?usage: bench/dynamic.sh OUT [--rounds N] [--repeat R] [--threads T]}
shift
ROUNDS=3 REPEAT=10 THREADS=2
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    *) echo "bench/dynamic.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
H=${HIDETC:-$ROOT/build/hidetc}
PY=${HIDETC_PYTHON:-/usr/bin/python3}
mkdir -p "$OUT"
for m in resnet50 bert gpt2; do
    [ -f "$OUT/$m-dyn/model_op17.onnx" ] ||
        "$PY" "$ROOT/tests/models/export.py" "$OUT" --full --dynamic --opset 17 --models $m >/dev/null
    "$H" compile "$OUT/$m-dyn/model_op17.onnx" -o "$OUT/$m-dyn.hcm" --threads "$THREADS" >/dev/null
done
# model shape: "NAME=V ..." bindings
cases=("resnet50 batch=1" "resnet50 batch=8" "bert batch=1,seq=32" "bert batch=1,seq=128"
       "gpt2 batch=1,seq=128")
bench() { # FILE ARGS...: the median
    "$H" bench "$@" --threads "$THREADS" --repeat "$REPEAT" | sed -n 's/^median_ms: \([0-9.]*\).*/\1/p'
}
LOG=$OUT/dynamic.log
: >"$LOG"
for r in $(seq "$ROUNDS"); do
    for c in "${cases[@]}"; do
        set -- $c
        m=$1 binds=() dims=()
        for kv in ${2//,/ }; do binds+=(--bind "$kv"); dims+=(--dim "$kv"); done
        s=$(bench "$OUT/$m-dyn/model_op17.onnx" "${dims[@]}")
        d=$(bench "$OUT/$m-dyn.hcm" "${binds[@]}")
        echo "$m $2 static round $r $s" | tee -a "$LOG"
        echo "$m $2 symbolic round $r $d" | tee -a "$LOG"
    done
done
"$PY" - "$LOG" <<'PY'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    m, shape, kind, _, r, ms = line.split()
    rows.setdefault((m, shape), {}).setdefault(kind, []).append(float(ms))
print("| model | shape | static ms | symbolic ms | symbolic / static |")
print("|---|---|---:|---:|---:|")
for (m, shape), k in rows.items():
    s, d = statistics.median(k["static"]), statistics.median(k["symbolic"])
    print(f"| {m} | {shape} | {s:.1f} | {d:.1f} | {d / s:.2f} |")
PY
