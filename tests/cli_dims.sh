#!/bin/bash
# cli_dims.sh HIDETC SOURCE_DIR — symbolic input dimensions fixed at compile time with
# --dim NAME=N and --shape INPUT=D0,D1,... (docs/onnx.md, docs/sessions.md) on run, compile
# and inspect: right results with them (numpy reference), typos and malformed values
# refused; without them the symbols stay symbolic (one compile for every shape,
# docs/dynamic.md: --bind picks the run's values, the --input files fix them). Models
# written with Debian's python3-onnx; skipped (77) without it.
set -u
HIDETC=$1
PY=${HIDETC_PYTHON:-/usr/bin/python3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

if ! "$PY" -c 'import onnx, numpy' 2>/dev/null; then
    echo "SKIP: $PY has no onnx/numpy module (Debian: python3-onnx)"
    exit 77
fi

# y = Softmax(x @ W + b) over [batch, seq, 6] -> [batch, seq, 4]; s = x summed over seq
"$PY" - "$TMP" <<'EOF' || { echo "FAIL: could not write the test model"; exit 1; }
import os, sys
import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper
d = sys.argv[1]
rng = np.random.default_rng(7)
W = rng.standard_normal((6, 4)).astype(np.float32)
b = rng.standard_normal(4).astype(np.float32)
nodes = [h.make_node("MatMul", ["x", "W"], ["xw"]), h.make_node("Add", ["xw", "b"], ["z"]),
         h.make_node("Softmax", ["z"], ["y"], axis=-1),
         h.make_node("ReduceSum", ["x", "axes"], ["s"], keepdims=0)]
g = h.make_graph(nodes, "dims", [h.make_tensor_value_info("x", T.FLOAT, ["batch", "seq", 6])],
                 [h.make_tensor_value_info("y", T.FLOAT, ["batch", "seq", 4]),
                  h.make_tensor_value_info("s", T.FLOAT, ["batch", 6])],
                 initializer=[numpy_helper.from_array(W, "W"), numpy_helper.from_array(b, "b"),
                              numpy_helper.from_array(np.array([1], np.int64), "axes")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, os.path.join(d, "dims.onnx"))
x = rng.standard_normal((3, 5, 6)).astype(np.float32)
np.save(os.path.join(d, "x.npy"), x)
np.save(os.path.join(d, "x2d.npy"), x[0])
z = x @ W + b
e = np.exp(z - z.max(-1, keepdims=True))
np.save(os.path.join(d, "y_ref.npy"), e / e.sum(-1, keepdims=True))
np.save(os.path.join(d, "s_ref.npy"), x.sum(1))
EOF

M="$TMP/dims.onnx"
# expect_fail RC PATTERN... -- ARGS: hidetc ARGS exits RC with every PATTERN on stderr
expect_fail() {
    local rc=$1
    shift
    local pats=()
    while [ "$1" != "--" ]; do pats+=("$1"); shift; done
    shift
    timeout 120 "$HIDETC" "$@" >"$TMP/out" 2>"$TMP/err"
    local got=$?
    [ $got -eq "$rc" ] || fail "hidetc $*: exit $got (want $rc): $(head -c 400 "$TMP/err")"
    for p in "${pats[@]}"; do
        grep -qF -- "$p" "$TMP/err" || fail "hidetc $*: stderr lacks '$p': $(head -c 400 "$TMP/err")"
    done
}

# symbols left open stay symbolic: the run is at the hints, or at --bind
"$HIDETC" run "$M" >"$TMP/out" 2>"$TMP/err" || fail "run, symbolic: $(head -c 400 "$TMP/err")"
grep -qF "symbols: batch=16 seq=24" "$TMP/out" || fail "run, symbolic: $(head -c 400 "$TMP/out")"
grep -qF "output y: f32 [16, 24, 4]" "$TMP/out" || fail "run, symbolic: $(head -c 400 "$TMP/out")"
"$HIDETC" run "$M" --dim batch=3 --bind seq=2 >"$TMP/out" 2>"$TMP/err" ||
    fail "run --dim --bind: $(head -c 400 "$TMP/err")"
grep -qF "symbols: seq=2" "$TMP/out" || fail "run --dim --bind: $(head -c 400 "$TMP/out")"
grep -qF "output s: f32 [3, 6]" "$TMP/out" || fail "run --dim --bind: $(head -c 400 "$TMP/out")"
expect_fail 1 "--bind bacth: the model has no such symbol" -- run "$M" --bind bacth=3
expect_fail 1 "--bind batch: the model has no such symbol (its shapes are fixed)" -- run "$M" --shape x=3,5,6 --bind batch=2
expect_fail 1 "dim override bacth=..." "no symbolic dimension 'bacth'" "batch, seq" -- run "$M" --dim bacth=3 --dim seq=5
expect_fail 1 "shape override q=..." "no input 'q'" "its inputs: x" -- run "$M" --shape q=3,5,6
expect_fail 1 "shape override x=...: dimension 2 is 6 in the model, 7 given" -- run "$M" --shape x=3,5,7
expect_fail 1 "shape override x=...: 2 dimensions given, the input has 3" -- run "$M" --shape x=3,5
expect_fail 1 "the shape override gives 4, the dim override batch=3" -- run "$M" --dim batch=3 --shape x=4,5,6
expect_fail 2 "--dim expects NAME=N" -- run "$M" --dim batch
expect_fail 2 "--dim expects NAME=N" -- run "$M" --dim batch=0
expect_fail 2 "--shape expects INPUT=D0,D1" -- run "$M" --shape x=3,,6
expect_fail 1 "apply to ONNX files" -- run builtin:bert-tiny --dim batch=1

check_outputs() { # DIR: y.npy and s.npy against the references
    "$PY" - "$TMP" "$1" <<'EOF' || fail "outputs of $1 differ from numpy"
import sys, numpy as np
d, o = sys.argv[1], sys.argv[2]
for n in ("y", "s"):
    got, ref = np.load("%s/%s.npy" % (o, n)), np.load("%s/%s_ref.npy" % (d, n))
    assert got.shape == ref.shape, (n, got.shape, ref.shape)
    assert np.allclose(got, ref, rtol=1e-5, atol=1e-5), (n, np.abs(got - ref).max())
EOF
}

mkdir -p "$TMP/o1" "$TMP/o2" "$TMP/o3"
"$HIDETC" run "$M" --dim batch=3 --dim seq=5 --input x="$TMP/x.npy" --output-dir "$TMP/o1" \
    >"$TMP/out" 2>"$TMP/err" || fail "run --dim: $(head -c 400 "$TMP/err")"
check_outputs "$TMP/o1"
"$HIDETC" run "$M" --shape x=3,5,6 --input x="$TMP/x.npy" --output-dir "$TMP/o2" \
    >"$TMP/out" 2>"$TMP/err" || fail "run --shape: $(head -c 400 "$TMP/err")"
check_outputs "$TMP/o2"
# a compiled file keeps the fixed shape; it needs no overrides to run
"$HIDETC" compile "$M" --dim batch=3 --dim seq=5 -o "$TMP/dims.hcm" >"$TMP/out" 2>"$TMP/err" ||
    fail "compile --dim: $(head -c 400 "$TMP/err")"
"$HIDETC" run "$TMP/dims.hcm" --input x="$TMP/x.npy" --output-dir "$TMP/o3" \
    >"$TMP/out" 2>"$TMP/err" || fail "run of the compiled file: $(head -c 400 "$TMP/err")"
check_outputs "$TMP/o3"
# compiled once with the symbols: the same file at two shapes
"$HIDETC" compile "$M" -o "$TMP/sym.hcm" >"$TMP/out" 2>"$TMP/err" ||
    fail "compile, symbolic: $(head -c 400 "$TMP/err")"
mkdir -p "$TMP/o4"
"$HIDETC" run "$TMP/sym.hcm" --input x="$TMP/x.npy" --output-dir "$TMP/o4" \
    >"$TMP/out" 2>"$TMP/err" || fail "run of the symbolic file: $(head -c 400 "$TMP/err")"
grep -qF "symbols: batch=3 seq=5" "$TMP/out" || fail "run of the symbolic file: $(head -c 400 "$TMP/out")"
check_outputs "$TMP/o4"
"$HIDETC" run "$TMP/sym.hcm" --bind batch=2 --bind seq=9 >"$TMP/out" 2>"$TMP/err" ||
    fail "run of the symbolic file --bind: $(head -c 400 "$TMP/err")"
grep -qF "output y: f32 [2, 9, 4]" "$TMP/out" || fail "run --bind: $(head -c 400 "$TMP/out")"
expect_fail 1 "input 'x' has 2 dimensions" -- run "$TMP/sym.hcm" --input x="$TMP/x2d.npy"
# a wrong input shape for the fixed dims: the input and dimension named
expect_fail 1 "'x'" "[3, 5, 6]" -- run "$M" --dim batch=2 --dim seq=5 --input x="$TMP/x.npy"
"$HIDETC" inspect "$M" --dim batch=1 --dim seq=7 >"$TMP/out" 2>"$TMP/err" ||
    fail "inspect --dim: $(head -c 400 "$TMP/err")"
grep -qF "[1, 7, 6]" "$TMP/out" || fail "inspect --dim: no [1, 7, 6] in: $(head -c 400 "$TMP/out")"

if [ $fails -ne 0 ]; then
    echo "cli_dims: $fails failure(s)"
    exit 1
fi
echo "cli_dims: all passed"
