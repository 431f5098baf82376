#!/bin/bash
# dispatch.sh OUT [--rounds N] [--repeat R] [--threads T] [--level L] [--model M] [--symbol S]
#             [--values V1,V2,...] [--fixed NAME=V]
# Tuning symbolic kernels at several sizes and the dispatch table (docs/dynamic.md,
# "Tuning and dispatch"): one export with dynamic axes (tests/models/export.py --full
# --dynamic, into OUT; default BERT-base, symbol seq at 32 and 128, batch fixed to 1 in the
# runs) compiled three ways, all with --tune L:
#   static    the symbols fixed at each value (--dim): one compile per value
#   hints     symbolic, tuned at the hints only (one config per kernel)
#   dispatch  symbolic, --tune-shapes S=V1,V2,...: one program per winner, picked per run
# and each benched at every value with --bind, alternated in every round. Prints one line
# per (kind, value, round) and a table of medians with the ratios to static.
set -eu
OUT=${1:?usage: bench/dispatch.sh OUT [--rounds N] [--repeat R] [--threads T] [--level L]}
shift
ROUNDS=3 REPEAT=10 THREADS=2 LEVEL=1 MODEL=bert SYMBOL=seq VALUES=32,128 FIXED=batch=1
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --level) LEVEL=$2; shift 2 ;;
    --model) MODEL=$2; shift 2 ;;
    --symbol) SYMBOL=$2; shift 2 ;;
    --values) VALUES=$2; shift 2 ;;
    --fixed) FIXED=$2; shift 2 ;;
    *) echo "bench/dispatch.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
H=${HIDETC:-$ROOT/build/hidetc}
PY=${HIDETC_PYTHON:-/usr/bin/python3}
mkdir -p "$OUT"
M=$OUT/$MODEL-dyn/model_op17.onnx
[ -f "$M" ] || "$PY" "$ROOT/tests/models/export.py" "$OUT" --full --dynamic --opset 17 --models "$MODEL" >/dev/null
fixed_dim=() fixed_bind=() fixed_hint=()
if [ -n "$FIXED" ]; then
    fixed_dim=(--dim "$FIXED") fixed_bind=(--bind "$FIXED") fixed_hint=(--dim-hint "$FIXED")
fi
t0=$(date +%s)
"$H" compile "$M" -o "$OUT/$MODEL-hints.hcm" --threads "$THREADS" --tune "$LEVEL" "${fixed_hint[@]}" >/dev/null
t1=$(date +%s)
"$H" compile "$M" -o "$OUT/$MODEL-dispatch.hcm" --threads "$THREADS" --tune "$LEVEL" "${fixed_hint[@]}" \
    --tune-shapes "$SYMBOL=$VALUES" --verbose 2>"$OUT/dispatch-compile.log" >/dev/null
t2=$(date +%s)
sets=$(grep -c "dispatch entry 1 of" "$OUT/dispatch-compile.log" || true)
echo "compile: hints $((t1 - t0)) s, dispatch $((t2 - t1)) s ($sets kernels with several configs)"
for v in ${VALUES//,/ }; do
    "$H" compile "$M" -o "$OUT/$MODEL-static-$v.hcm" --threads "$THREADS" --tune "$LEVEL" \
        "${fixed_dim[@]}" --dim "$SYMBOL=$v" >/dev/null
done
bench() { # FILE ARGS...: the median
    "$H" bench "$@" --threads "$THREADS" --repeat "$REPEAT" | sed -n 's/^median_ms: \([0-9.]*\).*/\1/p'
}
LOG=$OUT/dispatch.log
: >"$LOG"
for r in $(seq "$ROUNDS"); do
    for v in ${VALUES//,/ }; do
        s=$(bench "$OUT/$MODEL-static-$v.hcm")
        h=$(bench "$OUT/$MODEL-hints.hcm" "${fixed_bind[@]}" --bind "$SYMBOL=$v")
        d=$(bench "$OUT/$MODEL-dispatch.hcm" "${fixed_bind[@]}" --bind "$SYMBOL=$v")
        echo "static $SYMBOL=$v round $r $s" | tee -a "$LOG"
        echo "hints $SYMBOL=$v round $r $h" | tee -a "$LOG"
        echo "dispatch $SYMBOL=$v round $r $d" | tee -a "$LOG"
    done
done
"$PY" - "$LOG" "$MODEL" <<'PY'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    kind, shape, _, r, ms = line.split()
    rows.setdefault(shape, {}).setdefault(kind, []).append(float(ms))
print("| model | shape | static ms | hints ms | dispatch ms | hints / static | dispatch / static |")
print("|---|---|---:|---:|---:|---:|---:|")
for shape, k in rows.items():
    s, h, d = (statistics.median(k[x]) for x in ("static", "hints", "dispatch"))
    print(f"| {sys.argv[2]} | {shape} | {s:.1f} | {h:.1f} | {d:.1f} | {h / s:.2f} | {d / s:.2f} |")
PY
