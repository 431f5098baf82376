#!/bin/bash
# cli_control.sh HIDETC SOURCE_DIR — If (src/frontend/onnx.c: both branches imported into the
# graph, IF_SELECT picks; a constant condition keeps one branch): a runtime condition both
# ways, branches that read outer-scope values and initializers of their own, an If nested in
# a branch, a constant condition (only one branch's kernels are left), branches of different
# shapes refused with both shapes named. Models written with Debian's python3-onnx; skipped
# (77) without it.
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

"$PY" - "$TMP" <<'EOF2' || { echo "FAIL: could not write the test models"; exit 1; }
import os, sys
import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
d = sys.argv[1]
vi = lambda n, s, t=T.FLOAT: h.make_tensor_value_info(n, t, s)
w = np.arange(15, dtype=np.float32).reshape(3, 5) / 7
# then: relu(x @ W) (W an outer initializer) + b (the branch's own initializer);
# else: an If nested on c2: x @ W * 2 or sigmoid(x @ W)
then_g = h.make_graph([h.make_node("MatMul", ["x", "W"], ["t0"]), h.make_node("Relu", ["t0"], ["t1"]),
                       h.make_node("Add", ["t1", "b"], ["yt"])], "then", [], [vi("yt", [2, 5])],
                      initializer=[nh.from_array(np.full(5, 0.5, np.float32), "b")])
inner_then = h.make_graph([h.make_node("Mul", ["xw", "two"], ["it"])], "it", [], [vi("it", [2, 5])],
                          initializer=[nh.from_array(np.array(2, np.float32), "two")])
inner_else = h.make_graph([h.make_node("Sigmoid", ["xw"], ["ie"])], "ie", [], [vi("ie", [2, 5])])
else_g = h.make_graph([h.make_node("MatMul", ["x", "W"], ["xw"]),
                       h.make_node("If", ["c2"], ["ye"], then_branch=inner_then, else_branch=inner_else)],
                      "else", [], [vi("ye", [2, 5])])
g = h.make_graph([h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)], "ifs",
                 [vi("c", [], T.BOOL), vi("c2", [1], T.BOOL), vi("x", [2, 3])], [vi("y", [2, 5])],
                 initializer=[nh.from_array(w, "W")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)]); m.ir_version = 8
onnx.save(m, os.path.join(d, "if.onnx"))
x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
np.save(os.path.join(d, "x.npy"), x)
for name, c, c2 in (("tt", True, [True]), ("ft", False, [True]), ("ff", False, [False])):
    np.save(os.path.join(d, "c_%s.npy" % name), np.array(c))
    np.save(os.path.join(d, "c2_%s.npy" % name), np.array(c2))
    xw = x @ w
    ref = np.maximum(xw, 0) + 0.5 if c else (xw * 2 if c2[0] else 1 / (1 + np.exp(-xw)))
    np.save(os.path.join(d, "ref_%s.npy" % name), ref.astype(np.float32))
# a constant condition: only the else branch (Sigmoid) is left
g = h.make_graph([h.make_node("If", ["k"], ["y"], then_branch=h.make_graph(
                     [h.make_node("Relu", ["x"], ["a"])], "t", [], [vi("a", [2, 3])]),
                     else_branch=h.make_graph([h.make_node("Sigmoid", ["x"], ["s"])], "e", [], [vi("s", [2, 3])]))],
                 "constif", [vi("x", [2, 3])], [vi("y", [2, 3])],
                 initializer=[nh.from_array(np.array(False), "k")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)]); m.ir_version = 8
onnx.save(m, os.path.join(d, "constif.onnx"))
# branches of different shapes
g = h.make_graph([h.make_node("If", ["c"], ["y"], then_branch=h.make_graph(
                     [h.make_node("Relu", ["x"], ["a"])], "t", [], [vi("a", None)]),
                     else_branch=h.make_graph([h.make_node("Transpose", ["x"], ["s"])], "e", [], [vi("s", None)]))],
                 "badif", [vi("c", [], T.BOOL), vi("x", [2, 3])], [vi("y", None)])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)]); m.ir_version = 8
onnx.save(m, os.path.join(d, "badif.onnx"))
# a condition known once shapes are (rank == 2): the untaken branch does not fit x's
# shape (a Reshape to 7 elements) and is no error, as ONNX runs only the taken one; with
# the condition the other way the same Reshape is taken and is the error
def shape_if(name, rank):
    nodes = [h.make_node("Shape", ["x"], ["s"]), h.make_node("Size", ["s"], ["r"]),
             h.make_node("Equal", ["r", "two"], ["c"]),
             h.make_node("If", ["c"], ["y"],
                         then_branch=h.make_graph([h.make_node("Relu", ["x"], ["a"])], "t", [], [vi("a", None)]),
                         else_branch=h.make_graph([h.make_node("Reshape", ["x", "seven"], ["b"])], "e", [],
                                                  [vi("b", None)]))]
    g = h.make_graph(nodes, name, [vi("x", [2, 3])], [vi("y", None)],
                     initializer=[nh.from_array(np.array(rank, np.int64), "two"),
                                  nh.from_array(np.array([7], np.int64), "seven")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)]); m.ir_version = 8
    onnx.save(m, os.path.join(d, name + ".onnx"))
shape_if("shapeif_taken_ok", 2)
shape_if("shapeif_taken_bad", 3)

# Scan: a running sum over x's rows read in reverse (state [3]), the partial sums as a scan
# output stacked along axis 1, plus an outer value (w) the body reads
sb = h.make_graph([h.make_node("Add", ["s_in", "row"], ["s_out"]), h.make_node("Mul", ["s_out", "w"], ["o"])],
                  "sb", [vi("s_in", [3]), vi("row", [3])], [vi("s_out", [3]), vi("o", [3])])
g = h.make_graph([h.make_node("Scan", ["s0", "x"], ["s", "ys"], body=sb, num_scan_inputs=1,
                              scan_input_directions=[1], scan_output_axes=[1])], "scan",
                 [vi("s0", [3]), vi("x", [5, 3])], [vi("s", [3]), vi("ys", [3, 5])],
                 initializer=[nh.from_array(np.array([1, 2, 3], np.float32), "w")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 11)]); m.ir_version = 8
onnx.save(m, os.path.join(d, "scan.onnx"))
s0 = np.array([0.5, -1, 2], np.float32); xs = np.arange(15, dtype=np.float32).reshape(5, 3) / 4
np.save(os.path.join(d, "s0.npy"), s0); np.save(os.path.join(d, "xs.npy"), xs)
acc, parts = s0.copy(), []
for t in range(4, -1, -1):
    acc = acc + xs[t]; parts.append(acc * np.array([1, 2, 3], np.float32))
np.save(os.path.join(d, "ref_s.npy"), acc); np.save(os.path.join(d, "ref_ys.npy"), np.stack(parts, 1))

# Loop: M = 10, the body doubles v and stops itself after iteration 2 (cond_out = i < 2):
# v * 8; and a Loop of 4 with a scan output of v + i
lb = h.make_graph([h.make_node("Mul", ["v", "two"], ["v2"]), h.make_node("Less", ["i", "k2"], ["c2"])],
                  "lb", [vi("i", [], T.INT64), vi("c", [], T.BOOL), vi("v", [2, 2])],
                  [vi("c2", [], T.BOOL), vi("v2", [2, 2])],
                  initializer=[nh.from_array(np.array(2, np.float32), "two"),
                               nh.from_array(np.array(2, np.int64), "k2")])
lb2 = h.make_graph([h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT), h.make_node("Add", ["v", "fi"], ["v3"]),
                    h.make_node("Identity", ["c"], ["c3"])],
                   "lb2", [vi("i", [], T.INT64), vi("c", [], T.BOOL), vi("v", [2, 2])],
                   [vi("c3", [], T.BOOL), vi("v3", [2, 2]), vi("v3", [2, 2])])
lb2.output[2].name = "v3"
g = h.make_graph([h.make_node("Loop", ["M", "", "x"], ["y"], body=lb),
                  h.make_node("Loop", ["M4", "", "x"], ["y2", "ys2"], body=lb2)], "loop",
                 [vi("x", [2, 2])], [vi("y", [2, 2]), vi("y2", [2, 2]), vi("ys2", [4, 2, 2])],
                 initializer=[nh.from_array(np.array(10, np.int64), "M"),
                              nh.from_array(np.array(4, np.int64), "M4")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)]); m.ir_version = 8
onnx.save(m, os.path.join(d, "loop.onnx"))
xl = np.array([[1, -2], [0.5, 3]], np.float32); np.save(os.path.join(d, "xl.npy"), xl)
np.save(os.path.join(d, "ref_y.npy"), xl * 8)
v, ys = xl.copy(), []
for i in range(4):
    v = v + i; ys.append(v)
np.save(os.path.join(d, "ref_y2.npy"), v); np.save(os.path.join(d, "ref_ys2.npy"), np.stack(ys))
# a million iterations: refused, not unrolled
g = h.make_graph([h.make_node("Loop", ["M", "", "x"], ["y"], body=lb)], "bigloop", [vi("x", [2, 2])],
                 [vi("y", [2, 2])], initializer=[nh.from_array(np.array(10 ** 6, np.int64), "M")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)]); m.ir_version = 8
onnx.save(m, os.path.join(d, "bigloop.onnx"))
EOF2

for case in tt ft ff; do
    mkdir -p "$TMP/o_$case"
    "$HIDETC" run "$TMP/if.onnx" --input c="$TMP/c_$case.npy" --input c2="$TMP/c2_$case.npy" \
        --input x="$TMP/x.npy" --output-dir "$TMP/o_$case" >"$TMP/out" 2>"$TMP/err" ||
        fail "if.onnx ($case): $(head -c 400 "$TMP/err")"
    "$PY" -c "import numpy as np,sys; a=np.load('$TMP/o_$case/y.npy'); b=np.load('$TMP/ref_$case.npy'); sys.exit(0 if np.allclose(a,b,rtol=1e-5,atol=1e-6) else 1)" ||
        fail "if.onnx ($case): y differs from numpy"
done
"$HIDETC" inspect "$TMP/constif.onnx" --fusion >"$TMP/out" 2>"$TMP/err" || fail "constif: $(head -c 400 "$TMP/err")"
grep -q "^kernel .*Sigmoid" "$TMP/out" || fail "constif: no Sigmoid kernel: $(cat "$TMP/out")"
grep -q "^kernel .*Relu" "$TMP/out" && fail "constif: the untaken branch (Relu) is still compiled"
"$HIDETC" run "$TMP/badif.onnx" >"$TMP/out" 2>"$TMP/err"
[ $? -eq 1 ] || fail "badif: exit code (want 1)"
grep -qF "the branches give f32 [2, 3]" "$TMP/err" && grep -qF "f32 [3, 2]" "$TMP/err" ||
    fail "badif: $(head -c 400 "$TMP/err")"

"$HIDETC" run "$TMP/shapeif_taken_ok.onnx" --output-dir "$TMP" >"$TMP/out" 2>"$TMP/err" ||
    fail "shapeif_taken_ok (the untaken branch does not fit): $(head -c 400 "$TMP/err")"
"$HIDETC" run "$TMP/shapeif_taken_bad.onnx" >"$TMP/out" 2>"$TMP/err"
[ $? -eq 1 ] && grep -qF "If_3/else/" "$TMP/err" && grep -qF "Reshape" "$TMP/err" ||
    fail "shapeif_taken_bad: the taken branch's error: $(head -c 400 "$TMP/err")"

check() { # NAME...: out/NAME.npy against ref_NAME.npy
    for n in "$@"; do
        "$PY" -c "import numpy as np,sys; a=np.load('$TMP/res/$n.npy'); b=np.load('$TMP/ref_$n.npy'); sys.exit(0 if a.shape==b.shape and np.allclose(a,b,rtol=1e-6,atol=1e-6) else 1)" ||
            fail "$n differs from numpy"
    done
}
mkdir -p "$TMP/res"
"$HIDETC" run "$TMP/scan.onnx" --input s0="$TMP/s0.npy" --input x="$TMP/xs.npy" --output-dir "$TMP/res" \
    >"$TMP/log" 2>&1 || fail "scan: $(head -c 400 "$TMP/log")"
check s ys
"$HIDETC" run "$TMP/loop.onnx" --input x="$TMP/xl.npy" --output-dir "$TMP/res" >"$TMP/log" 2>&1 ||
    fail "loop: $(head -c 400 "$TMP/log")"
check y y2 ys2
"$HIDETC" run "$TMP/bigloop.onnx" >"$TMP/out.txt" 2>"$TMP/err"
[ $? -eq 1 ] && grep -qF "1000000 iterations: loops are unrolled, at most 4096" "$TMP/err" ||
    fail "bigloop: $(head -c 400 "$TMP/err")"

if [ $fails -ne 0 ]; then
    echo "cli_control: $fails failure(s)"
    exit 1
fi
echo "cli_control: all passed"
