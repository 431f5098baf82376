#!/bin/bash
# cli_helgrind_session.sh HIDETC SOURCE_DIR — the concurrent runs of test_session (8 threads
# on one session, every output compared bit for bit with a single-threaded run) under
# valgrind's helgrind: no data race and no lock-order problem in the run-context pool, the
# runtime or the session code. Each run uses one worker (HIDETC_TEST_THREADS=1): helgrind
# cannot see libgomp's futex handoffs between a team's threads, which it would report as
# races; libgomp's own internals are suppressed (scripts/helgrind-gomp.supp). 20 runs per
# thread (valgrind is slow); the full 8 x 200 runs without it are in test_session.
# Skipped (77) without valgrind.
set -u
BUILD=$(cd "$(dirname "$1")" && pwd)
SRC=$2
command -v valgrind >/dev/null || { echo "SKIP: no valgrind"; exit 77; }
[ -x "$BUILD/test_session" ] || { echo "FAIL: $BUILD/test_session not built"; exit 1; }
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
# valgrind executes no AVX-512: kernels for AVX2
HIDETC_ISA=avx2 HIDETC_TEST_ONLY=concurrency HIDETC_TEST_THREADS=1 HIDETC_TEST_RUNS=20 \
    valgrind --tool=helgrind --error-exitcode=9 --suppressions="$SRC/scripts/helgrind-gomp.supp" \
    "$BUILD/test_session" >"$LOG" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
    echo "FAIL: helgrind exit $rc"
    grep -B2 -A20 "Possible data race\|lock order\|CHECK failed" "$LOG" | head -80
    exit 1
fi
grep -v "^==" "$LOG" | tail -1
echo "cli_helgrind_session: no race reported"
