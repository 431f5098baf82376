#!/bin/bash
# cli_onnx_errors.sh HIDETC SOURCE_DIR — damaged or unsupported ONNX files given to
# `hidetc run` end with a clear message and exit code 1, never a crash: a model with
# unsupported operators (one message listing every op type with its nodes), a truncated
# file, a file of random bytes, and a missing file.
set -u
HIDETC=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# The model is encoded here by hand (protobuf wire format, python3 standard library only),
# so the test needs no ONNX tooling: x [3] -> HcNoSuchOpA -> HcNoSuchOpB -> HcNoSuchOpB -> y
python3 - "$TMP" <<'EOF'
import random, struct, sys
def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])
def f_varint(num, v): return varint(num << 3) + varint(v)
def f_bytes(num, b):
    b = b.encode() if isinstance(b, str) else b
    return varint(num << 3 | 2) + varint(len(b)) + b
def value_info(name):
    dim = f_bytes(1, f_varint(1, 3))                       # Dimension.dim_value = 3
    tensor_type = f_varint(1, 1) + f_bytes(2, dim)        # elem_type FLOAT, shape
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, tensor_type))
def node(op, name, x, y):
    return f_bytes(1, x) + f_bytes(2, y) + f_bytes(3, name) + f_bytes(4, op)
graph = (f_bytes(1, node("HcNoSuchOpA", "foo_1", "x", "a")) +
         f_bytes(1, node("HcNoSuchOpB", "b1", "a", "b")) +
         f_bytes(1, node("HcNoSuchOpB", "b2", "b", "y")) +
         f_bytes(2, "g") + f_bytes(11, value_info("x")) + f_bytes(12, value_info("y")))
opset = f_bytes(1, "") + f_varint(2, 13)
model = f_varint(1, 8) + f_bytes(8, opset) + f_bytes(7, graph)
d = sys.argv[1]
open(d + "/unsupported.onnx", "wb").write(model)
open(d + "/truncated.onnx", "wb").write(model[:len(model) - 7])
rng = random.Random(20240229)
open(d + "/random.onnx", "wb").write(bytes(rng.randrange(256) for _ in range(4096)))
EOF
[ -s "$TMP/unsupported.onnx" ] || { echo "FAIL: could not write the test models"; exit 1; }

# expect FILE PATTERN...: `hidetc run FILE` exits 1 and stderr contains every PATTERN.
expect() {
    local file=$1
    shift
    "$HIDETC" run "$file" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    [ $rc -eq 1 ] || fail "run $(basename "$file"): exit code $rc (want 1): $(cat "$TMP/err")"
    for p in "$@"; do
        grep -qF -- "$p" "$TMP/err" ||
            fail "run $(basename "$file"): stderr lacks '$p': $(cat "$TMP/err")"
    done
    [ $(wc -l <"$TMP/err") -le 2 ] || fail "run $(basename "$file"): more than a short message"
}

listing="unsupported operators: HcNoSuchOpA (node 'foo_1'), HcNoSuchOpB (nodes 'b1', 'b2')"
expect "$TMP/unsupported.onnx" "$TMP/unsupported.onnx: $listing"
expect "$TMP/truncated.onnx" "$TMP/truncated.onnx" "truncated or malformed"
expect "$TMP/random.onnx" "$TMP/random.onnx"
expect "$TMP/missing.onnx" "$TMP/missing.onnx"
# the same through inspect, which only loads
"$HIDETC" inspect "$TMP/truncated.onnx" >/dev/null 2>&1
rc=$?
[ $rc -eq 1 ] || fail "inspect truncated.onnx: exit code $rc (want 1)"

if [ $fails -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "cli_onnx_errors: all checks passed"
