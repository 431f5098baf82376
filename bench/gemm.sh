#!/bin/bash
# gemm.sh [bench_gemm options] — build with -DHIDETC_BENCH=ON and compare hidetc's matmul
# with OpenBLAS sgemm; writes bench/results/gemm.md.
#
# For a fair baseline OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset (OpenBLAS picks
# its kernel for the CPU itself), and OMP_WAIT_POLICY=passive keeps idle OpenMP workers of
# one library from spinning on the cores while the other library's threads run.
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$SRC/build-bench}
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DHIDETC_BENCH=ON >/dev/null
cmake --build "$BUILD" --target bench_gemm -j2 >/dev/null
CMD="bash bench/gemm.sh $*"
exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_WAIT_POLICY=passive \
    "$BUILD/bench_gemm" --out "$SRC/bench/results/gemm.md" \
    --command "$CMD (runs: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_WAIT_POLICY=passive bench_gemm --out bench/results/gemm.md $*)" "$@"
