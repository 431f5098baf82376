#!/bin/bash
# gemm.sh [bench_gemm options] — build with -DHIDETC_BENCH=ON and compare hidetc's matmul
# with OpenBLAS sgemm; writes bench/results/gemm.md.
#
# For a fair baseline OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset (OpenBLAS picks
# its kernel for the CPU itself), and OMP_WAIT_POLICY=passive keeps idle OpenMP workers of
# hidetc from spinning on the cores while OpenBLAS runs. OpenBLAS's own idle workers keep
# spinning (yielding) for a long while by default and then slow down the next hidetc run
# on a 2-core machine, so a second pass measures 2 threads again with
# OPENBLAS_THREAD_TIMEOUT=10 (its idle workers sleep promptly too) and appends that table.
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$SRC/build-bench}
OUT=$SRC/bench/results/gemm.md
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DHIDETC_BENCH=ON >/dev/null
cmake --build "$BUILD" --target bench_gemm -j2 >/dev/null
BASE="env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_WAIT_POLICY=passive"
CMD1="$BASE bench_gemm --out bench/results/gemm.md $*"
$BASE "$BUILD/bench_gemm" --out "$OUT" --command "bash bench/gemm.sh $* (runs: $CMD1)" "$@"
CMD2="$BASE OPENBLAS_THREAD_TIMEOUT=10 bench_gemm --threads 2 $*"
$BASE OPENBLAS_THREAD_TIMEOUT=10 "$BUILD/bench_gemm" --threads 2 --out "$OUT.2t.tmp" \
    --section "Two threads, idle OpenBLAS workers sleeping promptly" \
    --command "bash bench/gemm.sh $* (second pass: $CMD2)" "$@"
cat "$OUT.2t.tmp" >>"$OUT"
rm -f "$OUT.2t.tmp"
