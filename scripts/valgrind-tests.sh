#!/usr/bin/env bash
# Runs the unit-test programs of a build tree under valgrind memcheck (leaks and invalid
# accesses are errors). JIT-compiled kernels run under valgrind too; the compiler child
# processes are not traced. Kernels are generated for AVX2 (valgrind has no AVX-512). Usage: scripts/valgrind-tests.sh [BUILD_DIR] [TEST_NAME...]
set -uo pipefail
build=${1:-build}
shift || true
cd "$build"
export HIDETC_CACHE_DIR=$PWD/valgrind-cache
# valgrind 3.19 cannot execute AVX-512: JIT kernels are built for AVX2 under it.
export HIDETC_ISA=avx2
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=($(ls test_* | grep -v '\.'))
status=0
for t in "${tests[@]}"; do
    # fused kernels are long straight-line code: smaller superblocks keep VEX within its
    # temporary storage ("VEX temporary storage exhausted" otherwise)
    if valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
        --vex-guest-max-insns=10 \
        --suppressions=/dev/null ./"$t" >"valgrind-$t.log" 2>&1; then
        echo "valgrind ok   $t"
    else
        echo "valgrind FAIL $t (see $build/valgrind-$t.log)"
        status=1
    fi
done
exit $status
