#!/bin/bash
# cli_onnx_test.sh HIDETC SOURCE_DIR — `hidetc onnx-test` on a few ONNX backend tests of
# ops known to work (Debian's libonnx-testdata), plus made-up tests that must FAIL (a wrong
# expected value, a missing folder) or be UNSUPPORTED: the line formats, the closing line
# and the exit code.
set -u
HIDETC=$1
DATA=/usr/share/libonnx-testdata/data/node
if [ ! -f "$DATA/test_relu/model.onnx" ]; then
    echo "SKIP: $DATA not installed (Debian package libonnx-testdata)"
    exit 77
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# --- passing tests: one line each, in order, then the totals; exit 0 ---------------------
out=$("$HIDETC" onnx-test "$DATA/test_add" "$DATA/test_relu/" "$DATA/test_matmul_2d" 2>"$TMP/err")
rc=$?
want="PASS test_add
PASS test_relu
PASS test_matmul_2d
3 passed, 0 failed, 0 skipped"
[ "$out" = "$want" ] || fail "known-good tests: got
$out
$(cat "$TMP/err")"
[ $rc -eq 0 ] || fail "known-good tests: exit code $rc"

# --- a wrong expected value: FAIL with the max error; exit 1 ------------------------------
# The relu test with its last expected value replaced by 1000 (raw_data is the .pb's last
# field, so its last 4 bytes are the last float).
mkdir -p "$TMP/test_bad_relu/test_data_set_0"
cp "$DATA/test_relu/model.onnx" "$TMP/test_bad_relu/"
cp "$DATA/test_relu/test_data_set_0/input_0.pb" "$TMP/test_bad_relu/test_data_set_0/"
python3 - "$DATA/test_relu/test_data_set_0/output_0.pb" \
    "$TMP/test_bad_relu/test_data_set_0/output_0.pb" <<'EOF'
import struct, sys
raw = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(raw[:-4] + struct.pack("<f", 1000.0))
EOF
# --- a model with an op that does not exist: UNSUPPORTED with the op and node ------------
mkdir -p "$TMP/test_no_such_op/test_data_set_0"
python3 - "$TMP/test_no_such_op/model.onnx" <<'EOF'
import sys
def varint(v):
    out = b""
    while True:
        b, v = v & 0x7F, v >> 7
        if not v:
            return out + bytes([b])
        out += bytes([b | 0x80])
def f_varint(num, v): return varint(num << 3) + varint(v)
def f_bytes(num, b):
    b = b.encode() if isinstance(b, str) else b
    return varint(num << 3 | 2) + varint(len(b)) + b
def value_info(name):
    tensor_type = f_varint(1, 1) + f_bytes(2, f_bytes(1, f_varint(1, 3)))
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, tensor_type))
node = f_bytes(1, "x") + f_bytes(2, "y") + f_bytes(3, "n0") + f_bytes(4, "HcNoSuchOp")
graph = f_bytes(1, node) + f_bytes(2, "g") + f_bytes(11, value_info("x")) + \
    f_bytes(12, value_info("y"))
model = f_varint(1, 8) + f_bytes(8, f_bytes(1, "") + f_varint(2, 13)) + f_bytes(7, graph)
open(sys.argv[1], "wb").write(model)
EOF
out=$("$HIDETC" onnx-test "$TMP/test_bad_relu" "$TMP/test_no_such_op" "$TMP/test_missing" \
      "$DATA/test_relu" 2>"$TMP/err")
rc=$?
[ $rc -eq 1 ] || fail "failing tests: exit code $rc (want 1)"
line() { sed -n "$1p" <<<"$out"; }
[[ "$(line 1)" == "FAIL test_bad_relu: output 'y': 1 of 60 values differ, max error "* ]] ||
    fail "wrong value line: $(line 1)"
[[ "$(line 1)" == *"at [2, 3, 4]"*"want 1000"* ]] || fail "wrong value line: $(line 1)"
[ "$(line 2)" = "UNSUPPORTED test_no_such_op: unsupported operator: HcNoSuchOp (node 'n0')" ] ||
    fail "unsupported line: $(line 2)"
[[ "$(line 3)" == "FAIL test_missing: "*"model.onnx"* ]] || fail "missing folder: $(line 3)"
[ "$(line 4)" = "PASS test_relu" ] || fail "pass line: $(line 4)"
[ "$(line 5)" = "1 passed, 2 failed, 1 skipped" ] || fail "closing line: $(line 5)"
[ "$(wc -l <<<"$out")" -eq 5 ] || fail "expected 5 lines, got: $out"
grep -Eq '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' <<<"$(line 5)" ||
    fail "closing line format: $(line 5)"

# --- the same without forking (in-process) gives the same lines --------------------------
out2=$("$HIDETC" onnx-test --no-fork "$TMP/test_bad_relu" "$TMP/test_no_such_op" \
       "$TMP/test_missing" "$DATA/test_relu" 2>/dev/null)
[ "$out2" = "$out" ] || fail "--no-fork differs:
$out2"

# --- a crash or a hang is that test's FAIL; the run goes on -------------------------------
# A "compiler" that kills its caller (the test's process group; SIGKILL, which no
# sanitizer intercepts) and one that hangs; a fresh cache so that the JIT runs them.
printf '#!/bin/sh\nkill -KILL 0\n' >"$TMP/crash_cc"
printf '#!/bin/sh\nsleep 60\n' >"$TMP/hang_cc"
chmod +x "$TMP/crash_cc" "$TMP/hang_cc"
out=$(HIDETC_CC=$TMP/crash_cc "$HIDETC" onnx-test --cache-dir "$TMP/cache1" "$DATA/test_relu" \
      "$TMP/test_no_such_op" 2>/dev/null)
want="FAIL test_relu: crashed (signal 9, Killed)
UNSUPPORTED test_no_such_op: unsupported operator: HcNoSuchOp (node 'n0')
0 passed, 1 failed, 1 skipped"
[ "$out" = "$want" ] || fail "crash: got
$out"
start=$(date +%s)
out=$(HIDETC_CC=$TMP/hang_cc "$HIDETC" onnx-test --timeout 1 --cache-dir "$TMP/cache2" \
      "$DATA/test_relu" 2>/dev/null)
[ "$out" = "FAIL test_relu: timed out after 1 s
0 passed, 1 failed, 0 skipped" ] || fail "timeout: got
$out"
[ $(($(date +%s) - start)) -lt 30 ] || fail "timeout: the run waited for the hung compiler"

# --- usage errors exit 2 -----------------------------------------------------------------
"$HIDETC" onnx-test >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || fail "no folders: exit code $rc (want 2)"
"$HIDETC" onnx-test --rtol x "$DATA/test_relu" >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || fail "bad --rtol: exit code $rc (want 2)"

if [ $fails -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "cli_onnx_test: all checks passed"
