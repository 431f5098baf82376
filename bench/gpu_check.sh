#!/usr/bin/env bash
# bench/gpu_check.sh — everything to check on a lent GPU machine, in one unattended run of
# about 5 minutes (a hard budget of GPU_CHECK_BUDGET_S = 450 s; every step has its own
# `timeout`, and a failed step is reported, never fatal). Run from anywhere:
#
#     bash bench/gpu_check.sh
#
# Before lending: `bash bench/gpu_prepare.sh BUILD_DIR` here, then the device call with
# carry [".gpu-carry"] (the GPU image has neither protoc-c nor protobuf-c).
#
# Steps: (a) build (cmake Release in build-gpu, -j16) and bench/cublas_sgemm.c;
# (b) device facts (nvidia-smi; `hidetc kernel matmul --target cuda` 4x4x4);
# (c) `ctest -R gpu`; (d) hidetc's matmul against cuBLAS SGEMM (fp32, no TF32) on square
# and model shapes, rounds alternating; (e) builtin models on cuda and on the CPU, and
# cuda outputs against CPU outputs; (g) if time is left, a sweep over the candidates of the
# matmul template's level-1 space on a few shapes; (f) the report, bench/results/gpu.md,
# also copied with the logs to $OUT (when set: the lending tool returns what is there).
# Nothing is installed or downloaded: a build that lacks packages of
# scripts/install-deps.sh (protobuf-c, the ONNX headers) fails and says so, and the cuBLAS
# baseline still runs.
#
# Environment (all optional):
#   GPU_CHECK_DRY=1       no build and no GPU: every command is replaced by a fake that
#                         prints what the real one prints (some fakes fail on purpose), to
#                         test the parsing and the report; the report goes to the work dir
#                         (build-gpu/gpu-check/gpu-dry.md), not bench/results/
#   GPU_CHECK_TARGET=T    hidetc's GPU target (default cuda; opencl runs the hidetc steps on
#                         PoCL where there is no GPU: cuBLAS and nvidia-smi then fail)
#   GPU_CHECK_BUILD=DIR   build directory (default build-gpu)
#   GPU_CHECK_BUDGET_S=S  overall budget in seconds (default 450)
#   GPU_CHECK_ROUNDS=N    rounds of the matmul comparison (default 3)
#   GPU_CHECK_SHAPES="MxNxK ..."   matmul shapes (default: below)
#   GPU_CHECK_MODELS="NAME ..."    builtin models (default: resnet50 bert resnet18)
#   GPU_CHECK_SWEEP_SHAPES="MxNxK ..." / GPU_CHECK_SWEEP_S=S   the sweep (default 3 shapes,
#                         60 s; 0 skips it)
#   GPU_CHECK_REPORT=FILE the report (default bench/results/gpu.md)
#   GPU_CHECK_NO_NUMPY=1  compare outputs with the C fallback even if numpy is there
set -u

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$SRC" || exit 1
DRY=${GPU_CHECK_DRY:-0}
TARGET=${GPU_CHECK_TARGET:-cuda}
BUILD=${GPU_CHECK_BUILD:-build-gpu}
BUDGET=${GPU_CHECK_BUDGET_S:-450}
ROUNDS=${GPU_CHECK_ROUNDS:-3}
SHAPES=${GPU_CHECK_SHAPES:-"1024x1024x1024 4096x4096x4096 128x768x768 128x3072x768 128x768x3072 3136x64x576 784x128x1152"}
MODELS=${GPU_CHECK_MODELS:-"resnet50 bert resnet18"}
SWEEP_SHAPES=${GPU_CHECK_SWEEP_SHAPES:-"1024x1024x1024 128x768x768 3136x64x576"}
SWEEP_S=${GPU_CHECK_SWEEP_S:-60}
WORK=$BUILD/gpu-check
if [ "$DRY" = 1 ]; then REPORT=${GPU_CHECK_REPORT:-$WORK/gpu-dry.md}
else REPORT=${GPU_CHECK_REPORT:-bench/results/gpu.md}; fi
HIDETC=$BUILD/hidetc
CUBLAS=$BUILD/cublas_sgemm
NPROC=$(nproc 2>/dev/null || echo 16)
JOBS=16
RESERVE=15 # seconds kept for the report
case $WORK in /*) ABS_WORK=$WORK ;; *) ABS_WORK=$SRC/$WORK ;; esac
export HIDETC_CACHE_DIR=${HIDETC_CACHE_DIR:-$ABS_WORK/cache}

mkdir -p "$WORK/logs"
rm -f "$WORK"/logs/*.log "$WORK/steps.tsv"
: >"$WORK/steps.tsv"
CACHE_STATE=$([ -d "$HIDETC_CACHE_DIR" ] && echo "warm (kept from an earlier run)" || echo cold)
T0=$(date +%s)
DEADLINE=$((T0 + BUDGET))
START_DATE=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
NOTES=() # lines for the report
REPORT_DONE=0

# On any exit: if the script stopped before the report (a bug, a signal), a short report
# from what steps.tsv holds; then the report and the logs go to $OUT.
finish() {
    local rc=$?
    if [ "$REPORT_DONE" != 1 ]; then
        mkdir -p "$(dirname "$REPORT")"
        {
            echo "# GPU check: INCOMPLETE (the script stopped early, exit $rc)"
            echo
            echo "\`bash bench/gpu_check.sh\`, $START_DATE. Steps run (name, exit code, seconds, log):"
            echo
            echo '```'
            cat "$WORK/steps.tsv" 2>/dev/null
            echo '```'
            echo
            for n in "${NOTES[@]+"${NOTES[@]}"}"; do echo "- $n"; done
            awk -F'\t' '$2 !~ /^(0|ok.*|handled.*)$/ { print $4 }' "$WORK/steps.tsv" 2>/dev/null |
                head -n 12 | while read -r log; do
                    echo
                    echo "Tail of \`$log\`:"
                    echo '```'
                    tail -n 25 "$log" 2>/dev/null | cut -c1-300
                    echo '```'
                done
        } >"$REPORT"
        echo "gpu_check: stopped early (exit $rc): a short report is in $REPORT" >&2
        cat "$REPORT" >&2
    fi
    if [ -n "${OUT:-}" ]; then
        mkdir -p "$OUT/logs"
        cp "$REPORT" "$OUT/gpu.md"
        local f
        for f in "$WORK"/logs/*.log; do [ -e "$f" ] && out_copy "$f"; done
    fi
    return "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

say() { echo "gpu_check: $*"; }
# the last step's failure was handled (a retry follows): recorded as "handled(RC)"
step_handled() {
    awk -F'\t' -v OFS='\t' 'NR > 1 { print prev } { prev = $0 } END { split(prev, f, "\t"); f[2] = "handled(" f[2] ")"; print f[1], f[2], f[3], f[4] }' \
        "$WORK/steps.tsv" >"$WORK/steps.tsv.new" && mv "$WORK/steps.tsv.new" "$WORK/steps.tsv"
}
note() { NOTES+=("$*"); say "note: $*"; }
now_s() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now_s)" 'BEGIN { printf "%.1f", b - a }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# the value after "median_ms:" on the last line that starts with it; "" when none
median_ms_of() { awk '/^median_ms:/ { m = $2 } END { print m }' "$1" 2>/dev/null; }
gflops_of_ms() { awk -v f="$1" -v ms="$2" 'BEGIN { if (ms > 0) printf "%.1f", f / ms * 1e-6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b > 0) printf "%.3f", a / b }'; }
shape_flops() { echo "$1" | awk -Fx '{ printf "%.0f", 2 * $1 * $2 * $3 }'; }

# Each log goes to $OUT/logs as soon as its step ends (if the run is killed, they are there).
out_copy() {
    [ -n "${OUT:-}" ] || return 0
    mkdir -p "$OUT/logs" && tail -n 3000 "$1" >"$OUT/logs/$(basename "$1" | tr -c 'A-Za-z0-9._\n-' '_')"
    cp "$WORK/steps.tsv" "$OUT/logs/" 2>/dev/null
    return 0
}

# ---- running a step ------------------------------------------------------------------
# step NAME TIMEOUT LOG CMD...: runs CMD (stdout and stderr to LOG) under `timeout`,
# shortened to what the budget leaves; records NAME, exit code and seconds in steps.tsv.
# Returns CMD's exit code (124 on a timeout, 125 when the budget was already spent). With
# EXPECT_RC=N set for the call, exit code N is the expected outcome: recorded as "ok(N)".
step() {
    local name=$1 t=$2 log=$3
    shift 3
    local left=$((DEADLINE - $(date +%s) - RESERVE)) rc s
    if [ "$left" -lt 5 ]; then
        echo "skipped: the overall budget of ${BUDGET}s is spent" >"$log"
        printf '%s\t%s\t%s\t%s\n' "$name" 125 0 "$log" >>"$WORK/steps.tsv"
        say "$name: SKIPPED (budget spent)"
        return 125
    fi
    [ "$t" -gt "$left" ] && t=$left
    s=$(now_s)
    if [ "$DRY" = 1 ]; then
        (dry_fake "$@") >"$log" 2>&1
    else
        timeout -k 5 "$t" "$@" >"$log" 2>&1
    fi
    rc=$?
    local secs
    secs=$(elapsed "$s")
    [ "$rc" = 124 ] || [ "$rc" = 137 ] && echo "gpu_check: timed out after ${t}s" >>"$log"
    if [ "$rc" = "${EXPECT_RC:-0}" ]; then
        printf '%s\t%s\t%s\t%s\n' "$name" "$([ "$rc" = 0 ] && echo 0 || echo "ok($rc)")" "$secs" "$log" >>"$WORK/steps.tsv"
        out_copy "$log"
        say "$name: ok$([ "$rc" = 0 ] || echo ", exit $rc as expected") (${secs}s)"
        return "$rc"
    fi
    printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$secs" "$log" >>"$WORK/steps.tsv"
    out_copy "$log"
    if [ "$rc" = 0 ]; then say "$name: ok (${secs}s)"
    else
        say "$name: FAILED rc=$rc (${secs}s), log $log; its tail:"
        tail -n "${TAIL_LINES:-8}" "$log" | sed 's/^/    | /'
    fi
    return "$rc"
}

# ---- the fakes of GPU_CHECK_DRY=1 ----------------------------------------------------
# Outputs in the formats of tools/cmd_kernel.c, tools/kernel_gpu.c, tools/cmd_bench.c,
# tools/cmd_run.c, bench/cublas_sgemm.c, nvidia-smi and ctest; some fail on purpose.
write_fake_npy() { # FILE VARIANT: a float32 [2, 2] array; variant 1 is off by 1 ulp
    local hdr="{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }"
    while [ $(((10 + ${#hdr} + 1) % 64)) != 0 ]; do hdr="$hdr "; done
    {
        printf '\x93NUMPY\x01\x00'
        printf "\\x$(printf %02x $(((${#hdr} + 1) % 256)))\\x$(printf %02x $(((${#hdr} + 1) / 256)))"
        printf '%s\n' "$hdr"
        printf '\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x80\xbf' # 1, 2, -1
        if [ "$2" = 1 ]; then printf '\x01\x00\x40\x40'; else printf '\x00\x00\x40\x40'; fi # 3
    } >"$1"
}
dry_fake() {
    local all=" $* " m='' n='' k='' i
    local -a a=("$@")
    for ((i = 0; i < ${#a[@]}; i++)); do
        case ${a[i]} in --m) m=${a[i + 1]} ;; --n) n=${a[i + 1]} ;; --k) k=${a[i + 1]} ;; esac
    done
    case $all in
    *" -S . -B "* | *"cmake --build"*) echo "[100%] Built target hidetc" ;;
    *nvidia-smi*) printf 'name, driver_version, memory.total [MiB]\nNVIDIA H200 (fake), 570.00, 143771 MiB\n' ;;
    *ctest*) printf 'test 8\n8: skipped: none\n1/1 Test #8: test_gpu_cuda ....   Passed    1.00 sec\n\n100%% tests passed, 0 tests failed out of 1\n' ;;
    *" kernel matmul "*)
        if [[ $all == *" --tune "* && $all != *" --candidate "* ]]; then
            echo "hidetc kernel: unknown option '--tune'"
            echo "usage: hidetc kernel matmul --m M --n N --k K [--batch B] [--threads T]"
            return 2
        fi
        if [[ $all == *" --candidate 1000000 "* ]]; then
            echo "hidetc kernel: matmul: --candidate 1000000: the space at level 1 has 4 candidates"
            return 1
        fi
        local cand=0
        [[ $all =~ --candidate\ ([0-9]+) ]] && cand=${BASH_REMATCH[1]}
        echo "matmul batch=1 m=$m n=$n k=$k target=cuda candidate $cand of level 0"
        echo "reference: double-accumulating loop"
        echo "max_error: 1.91e-06 (tolerance $(awk -v k="$k" 'BEGIN { print 1e-5 + 2e-6 * k }'))"
        if [[ $all == *" --bench "* ]]; then
            local f ms
            f=$(shape_flops "${m}x${n}x${k}")
            ms=$(awk -v f="$f" -v c="$cand" -v r=$RANDOM 'BEGIN { printf "%.4f", f / (20000e6 * (1 + 0.1 * (c % 3))) * (1 + r / 327680) }')
            echo "runs: 100 x 10 launches"
            echo "median_ms: $ms gflops: $(gflops_of_ms "$f" "$ms")"
        fi ;;
    *cublas_sgemm*)
        local f ms
        f=$(shape_flops "${a[1]}x${a[2]}x${a[3]}")
        ms=$(awk -v f="$f" -v r=$RANDOM 'BEGIN { printf "%.4f", f / 40000e6 * (1 + r / 327680) }')
        echo "median_ms: $ms gflops: $(gflops_of_ms "$f" "$ms")" ;;
    *" bench builtin:"*)
        if [[ $all == *" --help "* ]]; then echo "usage: hidetc bench MODEL [--threads T]"; return 0; fi
        if [[ $all == *"builtin:resnet18 "* && $all == *" --target "* ]]; then
            echo "hidetc bench: fake failure: CUDA error 700 (an illegal memory access)"
            return 1
        fi
        echo "model: builtin:fake"
        echo "compile_ms: 1234"
        echo "kernels: 42"
        echo "threads: 16 warmup: 5 repeat: 50"
        echo "median_ms: $([[ $all == *" --target "* ]] && echo 1.234 || echo 12.345) min_ms: 1.0 max_ms: 2.0" ;;
    *" run builtin:"*)
        local dir=${all##*--output-dir }
        dir=${dir%% *}
        mkdir -p "$dir"
        write_fake_npy "$dir/logits.npy" "$([[ $all == *" --target "* ]] && echo 1 || echo 0)"
        [[ $all == *bert* ]] && write_fake_npy "$dir/pooled.npy" 0
        echo "wrote $dir/logits.npy" ;;
    *) "$@" ;; # everything else (compiling cublas_sgemm.c, npydiff.c) runs for real
    esac
}

# ---- (a) build ------------------------------------------------------------------------
BUILD_OK=0
say "budget ${BUDGET}s, target $TARGET, build dir $BUILD, cache $HIDETC_CACHE_DIR ($CACHE_STATE)"
if [ "$DRY" = 1 ]; then
    note "GPU_CHECK_DRY=1: nothing was built and no GPU command ran; every number below is fake"
fi
# The GPU machine's image has no protoc-c nor protobuf-c: bench/gpu_prepare.sh (run where
# apt works) leaves the generated importer and the protobuf-c runtime in .gpu-carry/.
CMAKE_EXTRA=""
if [ -d "$SRC/.gpu-carry/pb" ]; then
    C=$SRC/.gpu-carry
    PBLIB=$(find "$C/prefix" -name 'libprotobuf-c.so' | head -1)
    CMAKE_EXTRA="-DHC_ONNX_PB_DIR=$C/pb -DHC_PROTOBUF_C_LIB=$PBLIB -DHC_PROTOBUF_C_INCLUDE=$C/prefix/usr/include"
    export LD_LIBRARY_PATH="$(dirname "$PBLIB")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    say "using .gpu-carry (protobuf-c and the generated ONNX importer from bench/gpu_prepare.sh)"
fi
TAIL_LINES=40 step build 300 "$WORK/logs/build.log" bash -c \
    "cmake -S . -B '$BUILD' -DCMAKE_BUILD_TYPE=Release $CMAKE_EXTRA >/dev/null && cmake --build '$BUILD' -j$JOBS"
if [ $? = 0 ]; then BUILD_OK=1
else
    if grep -qiE 'protoc-c|protobuf-c|PROTOBUF_C|onnx\.proto|OpenMP' "$WORK/logs/build.log"; then
        note "the build lacks packages that scripts/install-deps.sh installs (protobuf-c, protoc-c, the ONNX headers or OpenMP: see the log); nothing is installed here"
    fi
    # tests that do not compile should not stop the rest: the program alone
    if TAIL_LINES=20 step build-hidetc 200 "$WORK/logs/build-hidetc.log" cmake --build "$BUILD" --target hidetc -j$JOBS; then
        BUILD_OK=1
        note "the full build failed but the hidetc program built: the steps that need it ran"
    fi
fi
[ "$DRY" = 1 ] && BUILD_OK=1
mkdir -p "$BUILD"
CUBLAS_OK=0
step cublas-build 60 "$WORK/logs/cublas-build.log" cc -O2 -Wall -Wextra bench/cublas_sgemm.c -ldl -o "$CUBLAS" &&
    CUBLAS_OK=1
[ "$BUILD_OK" = 1 ] || note "no hidetc program: the hidetc steps were skipped"

# ---- (b) device facts -----------------------------------------------------------------
SMI=""
if step nvidia-smi 30 "$WORK/logs/nvidia-smi.log" nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; then
    SMI=$(sed -n 2p "$WORK/logs/nvidia-smi.log")
fi
CC_CAP=""
if [ "$DRY" != 1 ] && command -v nvidia-smi >/dev/null; then
    CC_CAP=$(timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)
fi
NVCC=$( (timeout 20 nvcc --version 2>/dev/null || timeout 20 /usr/local/cuda/bin/nvcc --version 2>/dev/null) | grep -i release | head -1)
K4_LINE=""
if [ "$BUILD_OK" = 1 ]; then
    step kernel-4x4x4 120 "$WORK/logs/kernel-4x4x4.log" "$HIDETC" kernel matmul --target "$TARGET" --m 4 --n 4 --k 4
    K4_LINE=$(grep '^max_error:' "$WORK/logs/kernel-4x4x4.log" | tail -1)
fi

# ---- (c) GPU tests --------------------------------------------------------------------
CTEST_LINE="" CTEST_SKIPS="" CTEST_TESTS=""
if [ "$BUILD_OK" = 1 ]; then
    step ctest-gpu 150 "$WORK/logs/ctest-gpu.log" bash -c \
        "cd '$BUILD' && ctest -R gpu --output-on-failure -j4 -V --timeout 120"
    CTEST_TESTS=$(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$WORK/logs/ctest-gpu.log" |
        sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) [ .*]*(.*)$/\1: \2/' | tr -s ' ')
    CTEST_LINE=$(grep -E 'tests passed|No tests were found' "$WORK/logs/ctest-gpu.log" | tail -1)
    CTEST_SKIPS=$(grep -cE '^[0-9]+: skipped:' "$WORK/logs/ctest-gpu.log")
fi

# ---- (d) matmul against cuBLAS ----------------------------------------------------------
declare -A H_MS=()
declare -A C_MS=()
declare -A H_CFG=()
declare -A H_ERR=()
declare -A H_FAIL=()
declare -A C_FAIL=()
TUNE_ARGS=(--tune 2)
kernel_bench() { # SHAPE ROUND: hidetc's matmul, --tune 2 while it is accepted
    local s=$1 r=$2 m n k log rc
    IFS=x read -r m n k <<<"$s"
    log=$WORK/logs/matmul-$s-hidetc-r$r.log
    step "matmul $s hidetc r$r" 90 "$log" "$HIDETC" kernel matmul --target "$TARGET" \
        --m "$m" --n "$n" --k "$k" --bench "${TUNE_ARGS[@]+"${TUNE_ARGS[@]}"}"
    rc=$?
    if [ "$rc" != 0 ] && [ ${#TUNE_ARGS[@]} != 0 ] &&
        { grep -qiE "unknown option|usage:" "$log" || [ "$rc" = 124 ]; }; then
        if [ "$rc" = 124 ]; then note "'hidetc kernel matmul --tune 2' ran past its timeout on $s: the rest ran without --tune"
        else
            note "'hidetc kernel matmul' refused --tune 2 (usage message): ran without it"
            step_handled
        fi
        TUNE_ARGS=()
        log=$WORK/logs/matmul-$s-hidetc-r$r-notune.log
        step "matmul $s hidetc r$r (no --tune)" 90 "$log" "$HIDETC" kernel matmul \
            --target "$TARGET" --m "$m" --n "$n" --k "$k" --bench
        rc=$?
    fi
    local ms
    ms=$(median_ms_of "$log")
    if [ "$rc" = 0 ] && [ -n "$ms" ]; then H_MS[$s]="${H_MS[$s]-} $ms"
    else H_FAIL[$s]=$((${H_FAIL[$s]-0} + 1)); fi
    [ -z "${H_CFG[$s]-}" ] && H_CFG[$s]=$(grep '^matmul ' "$log" | head -1 | sed 's/.*target=[^ ]* //')
    [ -z "${H_ERR[$s]-}" ] && H_ERR[$s]=$(grep '^max_error:' "$log" | tail -1 | awk '{ print $2 }')
}
cublas_bench() { # SHAPE ROUND
    local s=$1 r=$2 m n k log ms
    IFS=x read -r m n k <<<"$s"
    log=$WORK/logs/matmul-$s-cublas-r$r.log
    step "matmul $s cublas r$r" 60 "$log" "$CUBLAS" "$m" "$n" "$k" --repeat 50
    local rc=$?
    ms=$(median_ms_of "$log")
    if [ "$rc" = 0 ] && [ -n "$ms" ]; then C_MS[$s]="${C_MS[$s]-} $ms"
    else C_FAIL[$s]=$((${C_FAIL[$s]-0} + 1)); fi
}
CUBLAS_DEAD=0 # cuBLAS exited 2 (no device, no library): not tried again
# rounds after the first start only while the matmul part is within 55% of the budget,
# so that the models always get their turn
MATMUL_END=$((T0 + BUDGET * 55 / 100))
ROUNDS_RUN=0
for ((r = 1; r <= ROUNDS; r++)); do
    if [ "$r" -gt 1 ] && [ "$(date +%s)" -ge "$MATMUL_END" ]; then
        note "matmul: rounds $r..$ROUNDS skipped, the matmul part had used its share (55%) of the budget"
        break
    fi
    ROUNDS_RUN=$r
    for s in $SHAPES; do
        # alternate which runs first, round by round
        if [ $((r % 2)) = 1 ]; then
            [ "$BUILD_OK" = 1 ] && kernel_bench "$s" "$r"
            if [ "$CUBLAS_OK" = 1 ] && [ "$CUBLAS_DEAD" = 0 ]; then cublas_bench "$s" "$r"; fi
        else
            if [ "$CUBLAS_OK" = 1 ] && [ "$CUBLAS_DEAD" = 0 ]; then cublas_bench "$s" "$r"; fi
            [ "$BUILD_OK" = 1 ] && kernel_bench "$s" "$r"
        fi
        if [ "$CUBLAS_DEAD" = 0 ] && [ -f "$WORK/logs/matmul-$s-cublas-r$r.log" ] &&
            grep -q '^cublas_sgemm: no ' "$WORK/logs/matmul-$s-cublas-r$r.log"; then
            CUBLAS_DEAD=1
            note "cuBLAS could not run: $(grep '^cublas_sgemm: no ' "$WORK/logs/matmul-$s-cublas-r$r.log" | head -1); not tried again"
        fi
    done
done

# ---- (e) models -------------------------------------------------------------------------
# outputs: cuda against CPU; python3 + numpy, else a small C program
PY=""
if [ "${GPU_CHECK_NO_NUMPY:-0}" != 1 ]; then
    for p in python3 /usr/bin/python3; do
        if command -v "$p" >/dev/null && "$p" -c 'import numpy' 2>/dev/null; then PY=$p; break; fi
    done
fi
NPYDIFF=""
cat >"$WORK/npydiff.py" <<'EOF'
# npydiff.py GPU_DIR CPU_DIR: every CPU_DIR/*.npy against GPU_DIR's of the same name
import os, sys
import numpy as np
g, c = sys.argv[1], sys.argv[2]
worst_abs, worst_rel, bad = 0.0, 0.0, False
for name in sorted(f for f in os.listdir(c) if f.endswith(".npy")):
    ref = np.load(os.path.join(c, name)).astype(np.float64)
    try:
        got = np.load(os.path.join(g, name)).astype(np.float64)
    except OSError:
        print(f"output {name}: missing from {g}"); bad = True; continue
    if got.shape != ref.shape:
        print(f"output {name}: shape {got.shape} vs {ref.shape}"); bad = True; continue
    d = np.abs(got - ref)
    mabs = float(d.max()) if d.size else 0.0
    if not np.isfinite(got).all():
        mabs = float("inf")
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    mrel = mabs / scale if scale > 0 else mabs
    worst_abs, worst_rel = max(worst_abs, mabs), max(worst_rel, mrel)
    print(f"output {name}: shape {ref.shape} max_abs {mabs:.3g} max_rel {mrel:.3g} max_ref {scale:.3g}")
print(f"total max_abs {worst_abs:.3g} max_rel {worst_rel:.3g}{' INCOMPLETE' if bad else ''}")
EOF
cat >"$WORK/npydiff.c" <<'EOF'
/* npydiff GPU.npy CPU.npy: the same report as npydiff.py for one little-endian float32
 * array ('<f4', C order; other dtypes are refused) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static float *load(const char *path, long *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char h[10];
    if (fread(h, 1, 10, f) != 10 || memcmp(h, "\x93NUMPY", 6)) return fclose(f), NULL;
    long hl = h[8] | h[9] << 8;
    if (h[6] >= 2) { /* version 2/3: a 4-byte length */
        unsigned char e[2];
        if (fread(e, 1, 2, f) != 2) return fclose(f), NULL;
        hl |= (long)e[0] << 16 | (long)e[1] << 24;
    }
    char *hdr = calloc((size_t)hl + 1, 1);
    if (!hdr || fread(hdr, 1, (size_t)hl, f) != (size_t)hl || !strstr(hdr, "'<f4'") ||
        strstr(hdr, "True")) {
        fprintf(stderr, "npydiff: %s: not a C-order float32 array (%s)\n", path, hdr ? hdr : "");
        return free(hdr), fclose(f), NULL;
    }
    free(hdr);
    long start = ftell(f);
    fseek(f, 0, SEEK_END);
    *n = (ftell(f) - start) / 4;
    fseek(f, start, SEEK_SET);
    float *x = malloc((size_t)*n * 4 + 4);
    if (!x || fread(x, 4, (size_t)*n, f) != (size_t)*n) return free(x), fclose(f), NULL;
    fclose(f);
    return x;
}
int main(int argc, char **argv) {
    long ng = 0, nc = 0;
    if (argc != 3) return 2;
    float *g = load(argv[1], &ng), *c = load(argv[2], &nc);
    if (!g || !c || ng != nc) return printf("error: cannot compare (missing, dtype or size)\n"), 1;
    double mabs = 0, scale = 0;
    for (long i = 0; i < nc; i++) {
        double d = fabs((double)g[i] - (double)c[i]);
        if (!(d <= mabs)) mabs = isnan(d) ? INFINITY : d;
        if (fabs((double)c[i]) > scale) scale = fabs((double)c[i]);
    }
    printf("max_abs %.3g max_rel %.3g max_ref %.3g numel %ld\n", mabs, scale > 0 ? mabs / scale : mabs,
           scale, nc);
    return 0;
}
EOF
if [ -z "$PY" ]; then
    if step npydiff-build 30 "$WORK/logs/npydiff-build.log" cc -O2 "$WORK/npydiff.c" -lm -o "$WORK/npydiff"; then
        NPYDIFF=$WORK/npydiff
        note "numpy is not here: outputs compared by a small C program (float32 outputs only)"
    else
        note "neither numpy nor a C compiler for the fallback: outputs not compared"
    fi
fi
# compare_dirs GPU_DIR CPU_DIR: prints per-output lines and "total max_abs X max_rel Y"
compare_dirs() {
    if [ -n "$PY" ]; then "$PY" "$WORK/npydiff.py" "$1" "$2"; return; fi
    local wa=0 wr=0 bad="" f base line
    for f in "$2"/*.npy; do
        [ -e "$f" ] || continue
        base=$(basename "$f")
        if ! line=$("$NPYDIFF" "$1/$base" "$f"); then
            echo "output $base: $line"
            bad=" INCOMPLETE"
            continue
        fi
        echo "output $base: $line"
        read -r wa wr <<<"$(echo "$line" | awk -v wa="$wa" -v wr="$wr" '{ a = $2 + 0; r = $4 + 0; if ($2 == "inf") a = "inf"; print (a > wa ? a : wa), (r > wr ? r : wr) }')"
    done
    echo "total max_abs $wa max_rel $wr$bad"
}

declare -A M_GPU=()
declare -A M_CPU=()
declare -A M_GPU_COMPILE=()
declare -A M_CPU_COMPILE=()
declare -A M_ABS=()
declare -A M_REL=()
declare -A M_KERNELS=()
BATCH_NOTE=""
if [ "$BUILD_OK" = 1 ]; then
    if step bench-help 20 "$WORK/logs/bench-help.log" "$HIDETC" bench builtin:resnet50 --help &&
        grep -q -- '--batch' "$WORK/logs/bench-help.log"; then
        BATCH_NOTE="\`hidetc bench --help\` lists --batch: batch 8 rows below"
        BATCH8=1
    else
        BATCH_NOTE="batch 8: not measured. tools/ has no way to set a model's batch: \`hidetc bench\` and \`hidetc run\` take no --batch (their --help), and the builtin models (src/models/builtin.c) are batch 1; only \`hidetc kernel matmul\` has --batch"
        BATCH8=0
    fi
    for name in $MODELS; do
        for b in 1 $([ "$BATCH8" = 1 ] && echo 8); do
            key=$name
            bargs=()
            [ "$b" = 8 ] && key="$name (batch 8)" && bargs=(--batch 8)
            tag=$name-b$b
            log=$WORK/logs/model-$tag-$TARGET-bench.log
            if step "model $tag $TARGET bench" 180 "$log" "$HIDETC" bench "builtin:$name" \
                --target "$TARGET" --warmup 5 --repeat 50 "${bargs[@]+"${bargs[@]}"}"; then
                M_GPU[$key]=$(median_ms_of "$log")
            fi
            M_GPU_COMPILE[$key]=$(awk '/^compile_ms:/ { print $2 }' "$log")
            M_KERNELS[$key]=$(awk '/^kernels:/ { print $2 }' "$log")
            log=$WORK/logs/model-$tag-cpu-bench.log
            if step "model $tag cpu bench" 150 "$log" "$HIDETC" bench "builtin:$name" \
                --threads "$NPROC" --warmup 2 --repeat 10 "${bargs[@]+"${bargs[@]}"}"; then
                M_CPU[$key]=$(median_ms_of "$log")
            fi
            M_CPU_COMPILE[$key]=$(awk '/^compile_ms:/ { print $2 }' "$log")
            gdir=$WORK/out/gpu/$tag cdir=$WORK/out/cpu/$tag
            rm -rf "$gdir" "$cdir"
            step "model $tag $TARGET run" 150 "$WORK/logs/model-$tag-$TARGET-run.log" "$HIDETC" run \
                "builtin:$name" --target "$TARGET" --output-dir "$gdir" "${bargs[@]+"${bargs[@]}"}"
            grc=$?
            step "model $tag cpu run" 150 "$WORK/logs/model-$tag-cpu-run.log" "$HIDETC" run \
                "builtin:$name" --threads "$NPROC" --output-dir "$cdir" "${bargs[@]+"${bargs[@]}"}"
            crc=$?
            if [ "$grc" = 0 ] && [ "$crc" = 0 ] && { [ -n "$PY" ] || [ -n "$NPYDIFF" ]; }; then
                compare_dirs "$gdir" "$cdir" >"$WORK/logs/model-$tag-compare.log" 2>&1
                total=$(grep '^total ' "$WORK/logs/model-$tag-compare.log" | tail -1)
                M_ABS[$key]=$(echo "$total" | awk '{ print $3 }')
                M_REL[$key]=$(echo "$total" | awk '{ print $5 ($6 ? " " $6 : "") }')
                say "model $tag: $TARGET vs cpu: $total"
            fi
        done
    done
fi

# ---- (g) sweep over the matmul template's candidates (what time is left) -----------------
declare -A SW_BEST=()
declare -A SW_BEST_MS=()
declare -A SW_TRIED=()
declare -A SW_COUNT=()
declare -A SW_DEF_MS=()
sweep_end=$(($(date +%s) + SWEEP_S))
[ "$sweep_end" -gt $((DEADLINE - RESERVE - 10)) ] && sweep_end=$((DEADLINE - RESERVE - 10))
if [ "$BUILD_OK" = 1 ] && [ "$SWEEP_S" -gt 0 ]; then
    for s in $SWEEP_SHAPES; do
        IFS=x read -r m n k <<<"$s"
        [ "$(date +%s)" -lt "$sweep_end" ] || break
        log=$WORK/logs/sweep-$s-count.log
        EXPECT_RC=1 step "sweep $s count" 30 "$log" "$HIDETC" kernel matmul --target "$TARGET" --m "$m" \
            --n "$n" --k "$k" --tune 1 --candidate 1000000
        count=$(sed -n 's/.*the space at level 1 has \([0-9]*\) candidates.*/\1/p' "$log" | head -1)
        if [ -z "$count" ]; then
            note "sweep: 'hidetc kernel matmul --tune 1 --candidate C' did not say the size of the space: no sweep"
            break
        fi
        SW_COUNT[$s]=$count
        tried=0
        for ((c = 0; c < count; c++)); do
            [ "$(date +%s)" -lt "$sweep_end" ] || break
            log=$WORK/logs/sweep-$s-c$c.log
            step "sweep $s c$c" 30 "$log" "$HIDETC" kernel matmul --target "$TARGET" --m "$m" \
                --n "$n" --k "$k" --tune 1 --candidate "$c" --bench
            tried=$((tried + 1))
            ms=$(median_ms_of "$log")
            [ -n "$ms" ] || continue
            [ "$c" = 0 ] && SW_DEF_MS[$s]=$ms
            if [ -z "${SW_BEST_MS[$s]-}" ] || awk -v a="$ms" -v b="${SW_BEST_MS[$s]}" 'BEGIN { exit !(a < b) }'; then
                SW_BEST_MS[$s]=$ms
                SW_BEST[$s]="$c: $(grep '^matmul ' "$log" | head -1 | sed 's/.*target=[^ ]* //')"
            fi
        done
        SW_TRIED[$s]=$tried
    done
fi

# ---- (f) the report ------------------------------------------------------------------------
mkdir -p "$(dirname "$REPORT")"
TOTAL_S=$(($(date +%s) - T0))
FAILED_STEPS=$(awk -F'\t' '$2 !~ /^(0|ok.*|handled.*)$/' "$WORK/steps.tsv" | wc -l)
{
    echo "# GPU check"
    echo
    echo "\`bash bench/gpu_check.sh\`$( [ "$DRY" = 1 ] && echo ' with GPU_CHECK_DRY=1 (fake data)')$( [ "$TARGET" != cuda ] && echo " with GPU_CHECK_TARGET=$TARGET"), $START_DATE, ${TOTAL_S}s in all (budget ${BUDGET}s)."
    echo "Commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)'); host $(uname -n), $NPROC CPUs; hidetc target \`$TARGET\`; kernel cache $CACHE_STATE."
    echo
    echo "## Device"
    echo
    echo "- nvidia-smi (name, driver, memory): ${SMI:-(not available: see the failed steps)}"
    [ -n "$CC_CAP" ] && echo "- compute capability: $CC_CAP"
    echo "- nvcc: ${NVCC:-(not found)}"
    echo "- \`hidetc kernel matmul --target $TARGET --m 4 --n 4 --k 4\`: ${K4_LINE:-(no max_error line: see the failed steps)}"
    echo
    echo "## Notes"
    echo
    [ ${#NOTES[@]} = 0 ] && echo "- none"
    for n in "${NOTES[@]+"${NOTES[@]}"}"; do echo "- $n"; done
    echo
    echo "## Steps"
    echo
    echo "$FAILED_STEPS of $(wc -l <"$WORK/steps.tsv") steps failed (exit code 124: timed out; 125: skipped, the budget was spent)."
    if [ "$FAILED_STEPS" != 0 ]; then
        echo
        awk -F'\t' '$2 !~ /^(0|ok.*|handled.*)$/' "$WORK/steps.tsv" | head -n 12 |
            while IFS=$'\t' read -r name rc secs log; do
                echo "### failed: $name (exit $rc, ${secs}s)"
                echo
                echo "Log \`$log\`, its tail:"
                echo
                echo '```'
                tail -n 25 "$log" | cut -c1-300
                echo '```'
                echo
            done
        [ "$FAILED_STEPS" -gt 12 ] && echo "(and $((FAILED_STEPS - 12)) more: $WORK/steps.tsv)" && echo
    fi
    echo
    echo "## GPU tests (\`ctest -R gpu\`)"
    echo
    echo "${CTEST_LINE:-(no summary: see the failed steps)}$( [ -n "$CTEST_SKIPS" ] && [ "$CTEST_SKIPS" != 0 ] && echo "; $CTEST_SKIPS checks reported 'skipped:' (log ctest-gpu.log)")"
    if [ -n "$CTEST_TESTS" ]; then
        echo
        echo "$CTEST_TESTS" | sed 's/^/- /'
    fi
    if [ -n "$CTEST_SKIPS" ] && [ "$CTEST_SKIPS" != 0 ]; then
        echo
        echo "Skipped checks:"
        echo
        grep -E '^[0-9]+: skipped:' "$WORK/logs/ctest-gpu.log" | head -n 10 | sed 's/^[0-9]*: /- /'
    fi
    echo
    echo "## Matmul: hidetc (\`kernel matmul --target $TARGET --bench\`) against cuBLAS SGEMM"
    echo
    echo "fp32, cuBLAS without TF32 (CUBLAS_DEFAULT_MATH, bench/cublas_sgemm.c: device time of"
    echo "one call, CUDA events, median of 50); hidetc: its --bench (host clock over batches of"
    echo "launches, median). ${ROUNDS_RUN:-0} rounds, the two alternating; each cell the median of the"
    echo "rounds' medians; ratio = hidetc GFLOPS / cuBLAS GFLOPS; config: the candidate as
hidetc's own first line names it. hidetc options: $([ ${#TUNE_ARGS[@]} = 0 ] && echo "none beyond --bench" || echo "\`${TUNE_ARGS[*]}\`")."
    echo
    echo "| shape MxNxK | hidetc ms | cuBLAS ms | hidetc GFLOPS | cuBLAS GFLOPS | ratio | hidetc config | max_error |"
    echo "|---|---:|---:|---:|---:|---:|---|---:|"
    for s in $SHAPES; do
        f=$(shape_flops "$s")
        hm=$(echo ${H_MS[$s]-} | tr ' ' '\n' | median)
        cm=$(echo ${C_MS[$s]-} | tr ' ' '\n' | median)
        hg=$( [ -n "$hm" ] && gflops_of_ms "$f" "$hm")
        cg=$( [ -n "$cm" ] && gflops_of_ms "$f" "$cm")
        hfail=${H_FAIL[$s]-0} cfail=${C_FAIL[$s]-0}
        cdash=failed hdash=failed
        [ "$BUILD_OK" = 1 ] || hdash="not built"
        [ "$CUBLAS_OK" = 1 ] || cdash="not built"
        [ "$CUBLAS_DEAD" = 1 ] && [ "$cfail" = 0 ] && cdash="not run"
        echo "| $s | ${hm:-$hdash}$( [ "$hfail" != 0 ] && echo " ($hfail failed)") | ${cm:-$cdash}$( [ "$cfail" != 0 ] && echo " ($cfail failed)") | ${hg:--} | ${cg:--} | $(ratio "$hg" "$cg" | grep . || echo -) | ${H_CFG[$s]:--} | ${H_ERR[$s]:--} |"
    done
    echo
    echo "Per-round medians (ms): hidetc / cuBLAS"
    echo
    for s in $SHAPES; do echo "- $s: hidetc${H_MS[$s]:- -} / cuBLAS${C_MS[$s]:- -}"; done
    echo
    echo "## Models, batch 1 (\`hidetc bench builtin:NAME\`)"
    echo
    echo "$TARGET: \`--target $TARGET --warmup 5 --repeat 50\`; CPU: \`--threads $NPROC --warmup 2 --repeat 10\`;"
    echo "median ms of a whole run (host clock, inputs and outputs on the host). Outputs of"
    echo "\`hidetc run\` (the same deterministic random inputs) on $TARGET against the CPU's:"
    echo "max abs diff, and max rel diff = max abs diff / max |CPU output| (over all outputs)."
    echo
    echo "| model | hidetc $TARGET ms | CPU ms | CPU / $TARGET | max abs diff | max rel diff | kernels | compile ms ($TARGET / CPU) |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    for name in $MODELS; do
        for key in "$name" "$name (batch 8)"; do
            [ "$key" != "$name" ] && [ "${BATCH8:-0}" != 1 ] && continue
            g=${M_GPU[$key]-} c=${M_CPU[$key]-}
            mdash=failed
            [ "$BUILD_OK" = 1 ] || mdash="not built"
            echo "| $key | ${g:-$mdash} | ${c:-$mdash} | $(ratio "$c" "$g" | grep . || echo -) | ${M_ABS[$key]:--} | ${M_REL[$key]:--} | ${M_KERNELS[$key]:--} | ${M_GPU_COMPILE[$key]:--} / ${M_CPU_COMPILE[$key]:--} |"
        done
    done
    echo
    echo "${BATCH_NOTE:-batch 8: not measured (no hidetc program)}"
    echo
    echo "## Sweep: the matmul template's level-1 candidates (\`--tune 1 --candidate C --bench\`)"
    echo
    if [ ${#SW_COUNT[@]} = 0 ]; then echo "Not run (no time left, no hidetc program, or GPU_CHECK_SWEEP_S=0)."
    else
        echo "At most ${SWEEP_S}s in all; candidate 0 is the default config."
        echo
        echo "| shape | tried / candidates | default ms | best ms | best GFLOPS | best / cuBLAS | best (hidetc's matmul line) |"
        echo "|---|---:|---:|---:|---:|---:|---|"
        for s in $SWEEP_SHAPES; do
            [ -n "${SW_COUNT[$s]-}" ] || continue
            f=$(shape_flops "$s")
            bm=${SW_BEST_MS[$s]-}
            bg=$( [ -n "$bm" ] && gflops_of_ms "$f" "$bm")
            cm=$(echo ${C_MS[$s]-} | tr ' ' '\n' | median)
            cg=$( [ -n "$cm" ] && gflops_of_ms "$f" "$cm")
            echo "| $s | ${SW_TRIED[$s]-0} / ${SW_COUNT[$s]} | ${SW_DEF_MS[$s]:--} | ${bm:--} | ${bg:--} | $(ratio "$bg" "$cg" | grep . || echo -) | ${SW_BEST[$s]:--} |"
        done
    fi
    echo
    echo "Logs: \`$WORK/logs/\`$( [ -n "${OUT:-}" ] && echo " (also in \$OUT/logs/)")."
} >"$REPORT"

REPORT_DONE=1
echo
cat "$REPORT"
echo
say "report: $REPORT$( [ -n "${OUT:-}" ] && echo " (and \$OUT/gpu.md)"); ${TOTAL_S}s; $FAILED_STEPS failed steps"
[ "$FAILED_STEPS" = 0 ]
