#!/bin/bash
# cli_run.sh HIDETC SOURCE_DIR — checks `hidetc run`, `inspect` and `bench` on small ONNX
# models from Debian's libonnx-testdata: outputs against values computed here from the
# inputs, --input/--output-dir round trips, the formats scripts rely on, and errors.
set -u
HIDETC=$1
DATA=/usr/share/libonnx-testdata/data/node
if [ ! -f "$DATA/test_add/model.onnx" ]; then
    echo "SKIP: $DATA not installed (Debian package libonnx-testdata)"
    exit 77
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
RELU=$DATA/test_relu/model.onnx     # x [3, 4, 5] -> y
ADD=$DATA/test_add/model.onnx       # x, y [3, 4, 5] -> sum
MATMUL=$DATA/test_matmul_2d/model.onnx  # a [3, 4], b [4, 3] -> c [3, 3]

# A reader for the f32 .npy files hidetc writes (python3 without numpy).
cat >"$TMP/npy.py" <<'EOF'
import ast, struct
def load(path):
    raw = open(path, "rb").read()
    assert raw[:6] == b"\x93NUMPY", path
    hlen = struct.unpack("<H", raw[8:10])[0] if raw[6] == 1 else struct.unpack("<I", raw[8:12])[0]
    start = 10 if raw[6] == 1 else 12
    hdr = ast.literal_eval(raw[start:start + hlen].decode())
    assert hdr["descr"] == "<f4" and not hdr["fortran_order"], hdr
    n = 1
    for d in hdr["shape"]:
        n *= d
    data = raw[start + hlen:]
    assert len(data) == 4 * n, (len(data), n)
    return hdr["shape"], list(struct.unpack("<%df" % n, data))
EOF
npy() { PYTHONPATH=$TMP python3 -c "import sys, npy; $1" "${@:2}"; }

# --- inspect: inputs, outputs, histogram, parameters, FLOPs, --dot -----------------------
out=$("$HIDETC" inspect "$MATMUL" --dot "$TMP/g.dot") || fail "inspect: exit $?"
grep -qx '  a: f32 \[3, 4\]' <<<"$out" || fail "inspect: input a in '$out'"
grep -qx '  b: f32 \[4, 3\]' <<<"$out" || fail "inspect: input b"
grep -qx '  c: f32 \[3, 3\]' <<<"$out" || fail "inspect: output c"
grep -qx '  MatMul 1' <<<"$out" || fail "inspect: histogram"
grep -qx 'parameters: 0' <<<"$out" || fail "inspect: parameters"
# a 3x4 by 4x3 matmul: 2 * 3 * 3 * 4 multiply-adds
grep -q '^flops: 72 (' <<<"$out" || fail "inspect: flops of the matmul"
grep -q '^digraph' "$TMP/g.dot" || fail "inspect: --dot file"
out=$("$HIDETC" inspect "$ADD") || fail "inspect add: exit $?"
grep -q '^flops: 60 (' <<<"$out" || fail "inspect: flops of a 60-element add"
grep -q '^ops: 1 nodes$' <<<"$out" || fail "inspect: node count"

# builtin ResNet-50: torchvision's published figures (25,557,032 parameters without the
# BatchNorm statistics; 4.1 G multiply-adds, about 8.2 GFLOPs)
out=$("$HIDETC" inspect builtin:resnet50) || fail "inspect resnet50: exit $?"
grep -qx '  input: f32 \[1, 3, 224, 224\]' <<<"$out" || fail "inspect resnet50: input"
grep -qx 'parameters: 25557032' <<<"$out" || fail "inspect resnet50: parameter count"
flops=$(sed -n 's/^flops: \([0-9]*\) .*/\1/p' <<<"$out")
[ -n "$flops" ] && [ "$flops" -gt 8000000000 ] && [ "$flops" -lt 8500000000 ] ||
    fail "inspect resnet50: flops '$flops'"

# --- run with random inputs: summary lines, output file, determinism ----------------------
out=$("$HIDETC" run "$RELU" --output-dir "$TMP/r1") || fail "run relu: exit $?"
grep -qE '^input x: f32 \[3, 4, 5\] random \(seed [0-9]+\)$' <<<"$out" || fail "run: input line '$out'"
line=$(grep '^output y: f32 \[3, 4, 5\] min ' <<<"$out") || fail "run: output line in '$out'"
[ -s "$TMP/r1/y.npy" ] || fail "run: y.npy missing"
npy 'shape, v = npy.load(sys.argv[1]); assert shape == (3, 4, 5) and min(v) == 0.0 and max(v) > 0 and 0 < v.count(0.0) < 60' \
    "$TMP/r1/y.npy" || fail "run: relu output values"
# the summary's min/max/mean agree with the file
npy 'import re; shape, v = npy.load(sys.argv[1]); m = re.search(r"min (\S+) max (\S+) mean (\S+)", sys.argv[2]); assert abs(float(m.group(2)) - max(v)) < 1e-5 and abs(float(m.group(3)) - sum(v) / len(v)) < 1e-5' \
    "$TMP/r1/y.npy" "$line" || fail "run: summary statistics '$line'"
"$HIDETC" run "$RELU" --output-dir "$TMP/r2" --threads 1 >/dev/null || fail "run relu again: exit $?"
cmp -s "$TMP/r1/y.npy" "$TMP/r2/y.npy" || fail "run: random inputs are not deterministic"

# --- run with --input files: relu's output fed to add (sum = 2 relu) ----------------------
out=$("$HIDETC" run "$ADD" --input "x=$TMP/r1/y.npy" --input "y=$TMP/r1/y.npy" \
      --output-dir "$TMP/a") || fail "run add --input: exit $?"
grep -q "^input x: f32 \[3, 4, 5\] from $TMP/r1/y.npy$" <<<"$out" || fail "run: input from file line"
npy 'shape, r = npy.load(sys.argv[1]); s2, s = npy.load(sys.argv[2]); assert s2 == shape and all(abs(b - 2 * a) <= 1e-6 for a, b in zip(r, s))' \
    "$TMP/r1/y.npy" "$TMP/a/sum.npy" || fail "run: add of the given inputs"
# one input from a file, the other random
"$HIDETC" run "$ADD" --input "y=$TMP/r1/y.npy" >"$TMP/mixed.txt" || fail "run add, one input: exit $?"
grep -q '^input x: .* random' "$TMP/mixed.txt" || fail "run: the missing input should be random"

# --- bench: closing line ------------------------------------------------------------------
out=$("$HIDETC" bench "$MATMUL" --warmup 1 --repeat 3 --threads 1) || fail "bench: exit $?"
tail -n 1 <<<"$out" | grep -qE '^median_ms: [0-9.]+ min_ms: [0-9.]+ max_ms: [0-9.]+$' ||
    fail "bench: last line of '$out'"
python3 - "$(tail -n 1 <<<"$out")" <<'EOF' || fail "bench: min <= median <= max"
import sys
f = sys.argv[1].split()
med, lo, hi = float(f[1]), float(f[3]), float(f[5])
assert lo <= med <= hi
EOF

out=$("$HIDETC" bench "$ADD" --warmup 0 --repeat 2 --profile 3) || fail "bench --profile: exit $?"
grep -qE '^profile: 1 kernels, ' <<<"$out" || fail "bench --profile: header in '$out'"
grep -qE '^ +[0-9.]+ ms +[0-9.]+%  .* \(Add, auto\) -> \[3, 4, 5\]$' <<<"$out" ||
    fail "bench --profile: kernel line in '$out'"
tail -n 1 <<<"$out" | grep -q '^median_ms: ' || fail "bench --profile: last line"

# --- a multi-node model made with onnx.helper, checked against numpy ----------------------
SYSPY=/usr/bin/python3
if $SYSPY -c 'import onnx, numpy' 2>/dev/null; then
    $SYSPY - "$TMP" <<'EOF' || fail "onnx.helper model: generation"
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto as TP
d = sys.argv[1]
rng = np.random.default_rng(5)
w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
b = rng.standard_normal(4).astype(np.float32)
w2 = rng.standard_normal((4, 5)).astype(np.float32)
b2 = rng.standard_normal(5).astype(np.float32)
nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["h"]),
         helper.make_node("GlobalAveragePool", ["h"], ["p"]),
         helper.make_node("Flatten", ["p"], ["f"]),
         helper.make_node("Gemm", ["f", "w2", "b2"], ["y"])]
g = helper.make_graph(nodes, "small_cnn",
                      [helper.make_tensor_value_info("x", TP.FLOAT, [1, 3, 8, 8])],
                      [helper.make_tensor_value_info("y", TP.FLOAT, [1, 5]),
                       helper.make_tensor_value_info("h", TP.FLOAT, [1, 4, 8, 8])],
                      [numpy_helper.from_array(a, n) for a, n in
                       ((w, "w"), (b, "b"), (w2, "w2"), (b2, "b2"))])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d + "/cnn.onnx")
x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
np.save(d + "/x.npy", x)
xp = np.pad(x[0], ((0, 0), (1, 1), (1, 1)))
c = np.array([[[(xp[:, i:i + 3, j:j + 3] * w[o]).sum() + b[o] for j in range(8)]
               for i in range(8)] for o in range(4)])[None]
h = np.maximum(c, 0)
np.save(d + "/h_ref.npy", h.astype(np.float32))
np.save(d + "/y_ref.npy", (h.mean(axis=(2, 3)) @ w2 + b2).astype(np.float32))
EOF
    out=$("$HIDETC" inspect "$TMP/cnn.onnx") || fail "cnn inspect: exit $?"
    grep -qx 'parameters: 137' <<<"$out" || fail "cnn inspect: 4*27+4+4*5+5 parameters in '$out'"
    grep -qx 'ops: 5 nodes' <<<"$out" || fail "cnn inspect: node count"
    grep -qx '  h: f32 \[1, 4, 8, 8\]' <<<"$out" || fail "cnn inspect: inferred output shape"
    "$HIDETC" run "$TMP/cnn.onnx" --input "x=$TMP/x.npy" --output-dir "$TMP/cnn" >/dev/null ||
        fail "cnn run: exit $?"
    $SYSPY - "$TMP" <<'EOF' || fail "cnn run: outputs differ from numpy"
import sys, numpy as np
d = sys.argv[1]
for n in "yh":
    got, ref = np.load(f"{d}/cnn/{n}.npy"), np.load(f"{d}/{n}_ref.npy")
    assert got.shape == ref.shape and got.dtype == np.float32, (n, got.shape, got.dtype)
    err = np.abs(got - ref).max()
    assert err <= 1e-4 * max(1, np.abs(ref).max()), (n, err)
EOF
else
    echo "note: /usr/bin/python3 has no onnx/numpy; skipping the onnx.helper model"
fi

# --- errors: exit 1 with a message, no crash ----------------------------------------------
expect_error() { # expect_error LABEL PATTERN CMD...
    local label=$1 pat=$2
    shift 2
    "$@" >"$TMP/out.txt" 2>"$TMP/err.txt"
    local rc=$?
    [ $rc -eq 1 ] || fail "$label: exit $rc, expected 1"
    grep -qi -- "$pat" "$TMP/err.txt" || fail "$label: message '$(cat "$TMP/err.txt")'"
}
expect_error "unknown input" "no input 'nope'" "$HIDETC" run "$ADD" --input "nope=$TMP/r1/y.npy"
"$HIDETC" run "$MATMUL" --output-dir "$TMP/m" >/dev/null || fail "run matmul: exit $?"
expect_error "wrong shape" "expects f32 \[3, 4, 5\]" "$HIDETC" run "$ADD" --input "x=$TMP/m/c.npy"
expect_error "missing npy" "x" "$HIDETC" run "$ADD" --input "x=$TMP/none.npy"
expect_error "missing model" "$TMP/none.onnx" "$HIDETC" run "$TMP/none.onnx"
head -c 3000 /dev/urandom >"$TMP/random.onnx"
expect_error "random bytes" "." "$HIDETC" inspect "$TMP/random.onnx"
head -c 40 "$DATA/test_matmul_2d/model.onnx" >"$TMP/truncated.onnx"
expect_error "truncated model" "." "$HIDETC" bench "$TMP/truncated.onnx"
expect_error "unknown builtin" "builtin" "$HIDETC" inspect builtin:no_such_model
"$HIDETC" run >/dev/null 2>&1
[ $? -eq 2 ] || fail "run without MODEL: expected usage error (2)"
"$HIDETC" bench "$ADD" --repeat 0 >/dev/null 2>&1
[ $? -eq 2 ] || fail "bench --repeat 0: expected usage error (2)"

[ $fails -eq 0 ] && echo "cli_run: all passed"
exit $((fails > 0))
