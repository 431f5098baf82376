#!/bin/bash
# cli_kernel.sh HIDETC SOURCE_DIR — checks `hidetc kernel matmul`: results, --dump, --bench,
# --print-ir/--print-source, thread counts and argument errors.
set -u
HIDETC=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# --- a small run: the max_error line, under the tolerance it prints -----------------------
out=$("$HIDETC" kernel matmul --m 7 --n 13 --k 11 --threads 1) || fail "small: exit $?"
line=$(grep '^max_error: ' <<<"$out") || fail "small: no max_error line in '$out'"
python3 - "$line" <<'EOF' || fail "small: max_error above tolerance: $line"
import re, sys
m = re.match(r"max_error: (\S+) \(tolerance (\S+)\)$", sys.argv[1])
assert m and float(m.group(1)) <= float(m.group(2))
EOF
grep -q '^reference: interpreter' <<<"$out" || fail "small: reference should be the interpreter"

# --- batch, two threads, a large problem checked by the double loop -----------------------
"$HIDETC" kernel matmul --m 33 --n 17 --k 5 --batch 3 --threads 2 >/dev/null ||
    fail "batch 3, 2 threads: exit $?"
out=$("$HIDETC" kernel matmul --m 300 --n 200 --k 100 --threads 2) || fail "large: exit $?"
grep -q '^reference: double-accumulating loop' <<<"$out" || fail "large: reference line"

# --- --dump: three .npy files; c = a @ b -------------------------------------------------
"$HIDETC" kernel matmul --m 5 --n 19 --k 3 --batch 2 --dump "$TMP/d" >/dev/null ||
    fail "dump: exit $?"
for f in a b c; do [ -s "$TMP/d/$f.npy" ] || fail "dump: $f.npy missing"; done
if python3 -c 'import numpy' 2>/dev/null; then
    python3 - "$TMP/d" <<'EOF' || fail "dump: numpy check"
import sys, numpy as np
d = sys.argv[1]
a, b, c = (np.load(f"{d}/{n}.npy") for n in "abc")
assert a.shape == (2, 5, 3) and b.shape == (2, 3, 19) and c.shape == (2, 5, 19)
assert a.dtype == np.float32 and c.dtype == np.float32
assert np.abs(a @ b - c).max() < 1e-5
EOF
else # without numpy: header + data, data aligned to 64 bytes
    for spec in "a 30" "b 114" "c 190"; do
        set -- $spec
        size=$(stat -c %s "$TMP/d/$1.npy")
        [ $(((size - $2 * 4) % 64)) = 0 ] && [ "$size" -gt $(($2 * 4)) ] ||
            fail "dump: $1.npy has size $size"
    done
fi

# --- --bench: the last line ---------------------------------------------------------------
out=$("$HIDETC" kernel matmul --m 64 --n 64 --k 64 --bench) || fail "bench: exit $?"
tail -n 1 <<<"$out" | grep -Eq '^median_ms: [0-9]+\.[0-9]+ gflops: [0-9]+\.[0-9]+$' ||
    fail "bench: last line is '$(tail -n 1 <<<"$out")'"

# --- printing -----------------------------------------------------------------------------
out=$("$HIDETC" kernel matmul --m 9 --n 40 --k 7 --print-ir --threads 2) || fail "print-ir: exit"
grep -q 'spatial(' <<<"$out" || fail "print-ir: no thread mapping in the program"
grep -q 'repeat(' <<<"$out" || fail "print-ir: no register-tile mapping in the program"
out=$("$HIDETC" kernel matmul --m 9 --n 40 --k 7 --print-source) || fail "print-source: exit"
grep -q 'matmul__packed' <<<"$out" || fail "print-source: no packed entry point"

# --- config overrides, including one that validation rejects -------------------------------
"$HIDETC" kernel matmul --m 20 --n 50 --k 30 --mr 3 --kc 8 --mc 6 --pack-a 0 --pack-b 0 \
    >/dev/null || fail "overrides: exit $?"
"$HIDETC" kernel matmul --m 20 --n 50 --k 30 --mr 5 --nr 48 >/dev/null ||
    fail "--mr/--nr alone: the default blocks should be rounded to the new tile"
"$HIDETC" kernel matmul --m 20 --n 50 --k 30 --mr 3 --mc 7 >/dev/null 2>"$TMP/err"
[ $? = 2 ] && grep -q 'mc 7' "$TMP/err" || fail "invalid config: expected exit 2 naming mc"
# the loop order and pre-packed B as stated: the B-stationary blocks of the transformers'
# weights (rows first, several K, N and M blocks), checked against the reference
out=$("$HIDETC" kernel matmul --m 37 --n 300 --k 600 --threads 2 --pre-b 1 --rows 1 --kc 256 \
    --nc 128 --mr 5 --mc 20) || fail "--pre-b/--rows: exit $?"
grep -q ' rows preB$' <<<"$out" || fail "--pre-b/--rows: config line without rows and preB"
out=$("$HIDETC" kernel matmul --m 37 --n 300 --k 600 --rows 0 --kc 64) ||
    fail "--rows 0: exit $?"
grep -q ' rows' <<<"$out" && fail "--rows 0: the config still runs rows first"

# --- argument errors: exit 2 with a message -------------------------------------------------
expect_usage() {
    "$HIDETC" "$@" >/dev/null 2>"$TMP/err"
    local rc=$?
    [ $rc = 2 ] || fail "'$*': exit $rc, expected 2"
    [ -s "$TMP/err" ] || fail "'$*': no message"
}
expect_usage kernel matmul --m 0 --n 4 --k 4
expect_usage kernel matmul --m -3 --n 4 --k 4
expect_usage kernel matmul --m abc --n 4 --k 4
expect_usage kernel matmul --m 4 --n 4
expect_usage kernel matmul --m 4 --n 4 --k
expect_usage kernel matmul --m 4 --n 4 --k 4 --frobnicate
expect_usage kernel matmul --m 4 --n 4 --k 4 --threads 0
expect_usage kernel matmul --m 4 --n 4 --k 4 --rows 2
expect_usage kernel matmul --m 4 --n 4 --k 4 --amx --pre-b 1
expect_usage kernel conv --m 4 --n 4 --k 4
expect_usage kernel

if [ $fails -gt 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "cli_kernel: all passed"
