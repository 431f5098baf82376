#!/bin/bash
# models.sh [--warmup W] [--repeat R] [--threads T] [--models NAME...] — latency of the five
# model-test models (full size, opset 17) with hidetc beside ONNX Runtime, in one run;
# writes bench/results/models.md.
#
# - Models: tests/models/export.py --full (PyTorch, fixed seed, random weights), exported
#   into $BUILD/models-full (cached; the same export `make test-models` uses).
# - hidetc: `hidetc bench MODEL --threads T --warmup W --repeat R` (its median, min, max),
#   once with the default OpenMP wait policy and once with OMP_WAIT_POLICY=passive.
# - ONNX Runtime: pip onnxruntime in a virtual environment under $BUILD (created on first
#   use; the default test suite does not need it), CPUExecutionProvider, intra-op threads T,
#   ORT_ENABLE_ALL (bench/ort_bench.py), the same W and R.
# BUILD defaults to build-bench (a Release build of the hidetc program).
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$SRC/build-bench}
OUT=$SRC/bench/results/models.md
PY=${HIDETC_PYTHON:-/usr/bin/python3}
warmup=3 repeat=20 threads=2
models=(resnet50 mobilenet_v2 inception_v3 bert gpt2)
args="$*"
while [ $# -gt 0 ]; do
    case $1 in
    --warmup) warmup=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --models) models=(); shift
        while [ $# -gt 0 ] && [[ $1 != --* ]]; do models+=("$1"); shift; done ;;
    *) echo "usage: bench/models.sh [--warmup W] [--repeat R] [--threads T]" \
            "[--models NAME...]" >&2; exit 2 ;;
    esac
done

die() { echo "bench/models.sh: $*" >&2; exit 1; }

cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null || die "cmake failed"
cmake --build "$BUILD" --target hidetc -j2 >/dev/null || die "build failed"
HIDETC=$BUILD/hidetc
export HIDETC_CACHE_DIR=${HIDETC_CACHE_DIR:-$BUILD/bench-cache}

"$PY" -c 'import torch, torchvision, onnx' 2>/dev/null ||
    die "$PY needs torch, torchvision and onnx (scripts/install-deps.sh)"
MODELS=$BUILD/models-full
# the arguments of tests/models/run.sh --full, so that both share one export
bash "$SRC/tests/models/export_cached.sh" "$MODELS" --full --opset 13 17 || die "export failed"

VENV=$BUILD/bench-venv
if ! "$VENV/bin/python" -c 'import onnxruntime' 2>/dev/null; then
    echo "installing onnxruntime into $VENV"
    "$PY" -m venv --system-site-packages "$VENV" || die "python3 -m venv failed"
    "$VENV/bin/pip" install -q onnxruntime || die "pip install onnxruntime failed"
fi

# "median_ms: X min_ms: Y max_ms: Z" -> "X Y Z"
times() { sed -n 's/^median_ms: \([^ ]*\) min_ms: \([^ ]*\) max_ms: \([^ ]*\)$/\1 \2 \3/p'; }
now() { date +%s%N; }
secs() { awk -v ns=$(($(now) - $1)) 'BEGIN { printf "%.1f", ns / 1e9 }'; }
shape_of() { "$PY" -c 'import json,sys,numpy as np; m=json.load(open(sys.argv[1]+"/meta.json"))
print(", ".join("%s %s" % (n, "x".join(map(str, np.load(sys.argv[1]+"/inputs/"+n+".npy",
    mmap_mode="r").shape))) for n in m["inputs"]))' "$1"; }

# hidetc bench with extra `env` arguments; sets h_med, h_cell, h_range and h_wall
hidetc_bench() {
    local t0 log rc med min max
    t0=$(now)
    log=$(env "$@" "$HIDETC" bench "$onnx" --threads "$threads" --warmup "$warmup" \
        --repeat "$repeat" 2>&1)
    rc=$? h_wall=$(secs "$t0")
    read -r med min max <<<"$(echo "$log" | times)"
    if [ $rc -ne 0 ] || [ -z "$med" ]; then
        h_med="" h_range="" h_wall="-"
        h_cell="failed: $(echo "$log" | grep -v '^\s*$' | tail -n 1 | cut -c1-160 | tr '|' '/')"
    else
        h_med=$med h_cell=$med h_range="$min – $max"
    fi
}
ratio() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

rows=()
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for m in "${models[@]}"; do
    dir=$MODELS/$m
    onnx=$dir/model_op17.onnx
    [ -f "$onnx" ] || die "no $onnx"
    echo "== $m"
    hidetc_bench -u OMP_WAIT_POLICY # compiles (or finds the kernels in the cache)
    d_med=$h_med d_cell=$h_cell d_range=$h_range d_wall=$h_wall
    hidetc_bench OMP_WAIT_POLICY=passive
    olog=$("$VENV/bin/python" "$SRC/bench/ort_bench.py" "$onnx" "$dir/inputs" \
        --threads "$threads" --warmup "$warmup" --repeat "$repeat" 2>&1)
    orc=$?
    read -r omed omin omax <<<"$(echo "$olog" | times)"
    oload=$(echo "$olog" | sed -n 's/^load_ms: //p')
    [ $orc -eq 0 ] && [ -n "${omed:-}" ] || { omed="" omin="" omax=""; }
    echo "hidetc: $d_cell ms ($d_wall s with compile), passive wait: $h_cell ms;" \
         "ORT: ${omed:-failed} ms"
    orange=$([ -n "$omin" ] && echo "$omin – $omax")
    oload_s=$([ -n "${oload:-}" ] && awk -v x="$oload" 'BEGIN { printf "%.1f", x / 1e3 }')
    rows+=("| $m | $(shape_of "$dir") | $d_cell | $h_cell | ${omed:-failed} |\
 $(ratio "$d_med" "$omed") | $(ratio "$h_med" "$omed") | $d_range | $h_range | $orange |\
 $d_wall | ${oload_s:--} |")
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

ort_version=$("$VENV/bin/python" -c 'import onnxruntime as o; print(o.__version__)')
torch_version=$("$PY" -c 'import torch, torchvision; print(torch.__version__,
    "/ torchvision", torchvision.__version__)')
cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)
isa=$(grep -qw avx512f /proc/cpuinfo && echo avx512 || (grep -qw avx2 /proc/cpuinfo &&
    echo avx2 || echo scalar))
mem=$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
commit=$(git -C "$SRC" rev-parse --short HEAD)
git -C "$SRC" diff --quiet HEAD -- src tools || commit="$commit + uncommitted changes"
{
    echo "# Models: hidetc beside ONNX Runtime"
    echo
    echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- Machine: $cpu, $(nproc) cores, ISA $isa, $mem memory;" \
         "load average $load_before before, $load_after after (other jobs share the machine)"
    echo "- hidetc: commit $commit," \
         "Release build, kernels compiled by $(cc --version | head -n 1)"
    echo "- ONNX Runtime: $ort_version (pip), CPUExecutionProvider," \
         "intra_op_num_threads=$threads, inter_op_num_threads=1, sequential, ORT_ENABLE_ALL"
    echo "- Models: tests/models/export.py --full (PyTorch $torch_version, fixed seed, random" \
         "weights), opset 17, batch 1, fp32"
    echo "- Command: \`bash bench/models.sh${args:+ $args}\`"
    echo "- Method: each model is timed by hidetc (\`hidetc bench MODEL --threads $threads" \
         "--warmup $warmup --repeat $repeat\`, deterministic random inputs) and then by ONNX" \
         "Runtime (the exported inputs, same warm-up and repetitions) in the same run;" \
         "latencies are medians of $repeat runs in milliseconds; ratio = hidetc / ONNX Runtime" \
         "(below 1: hidetc is faster). hidetc runs twice: with the default OpenMP wait" \
         "policy (libgomp: idle workers spin for a while at each barrier) and with" \
         "\`OMP_WAIT_POLICY=passive\` (idle workers sleep at once); when other processes" \
         "compete for the cores (see the load average) spinning workers cost hidetc a lot," \
         "so both are shown. \"hidetc total\" is the wall time of the first hidetc bench" \
         "command (import, optimization, compilation or kernel-cache lookup, and the runs);" \
         "\"ORT load\" is ONNX Runtime's session creation."
    echo
    echo "| model | inputs | hidetc ms | hidetc ms, passive | ORT ms | ratio |" \
         "ratio, passive | hidetc min – max | passive min – max | ORT min – max |" \
         "hidetc total s | ORT load s |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
} >"$OUT"
echo "wrote $OUT"
cat "$OUT"
