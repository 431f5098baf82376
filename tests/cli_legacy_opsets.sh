#!/bin/bash
# cli_legacy_opsets.sh HIDETC SOURCE_DIR — models of opsets 1 to 6 (docs/onnx.md, "Opsets 1
# to 6"): the attribute forms that later versions turned into inputs or other types
# (Reshape-1's shape, Cast-1's type name, Pad-1's paddings, Concat-1's default axis,
# Upsample-1's scales, Split-1's constant split input), legacy broadcasting (broadcast=1 with
# B a suffix of A, with and without axis), Gemm-6, BatchNormalization-6 and Dropout-6 with
# is_test=1, each against numpy; and the refusals, each naming the node: legacy broadcast
# at another axis, unequal shapes without broadcast=1, is_test=0 (training) for
# BatchNormalization and Dropout, PRelu-6, Tile-1; Scan-8 (batch-major, a reverse scan
# input) and its sequence_lens shorter than the sequence refused. Models written with Debian's python3-onnx;
# skipped (77) without it.
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

"$PY" - "$TMP" <<'EOF' || { echo "FAIL: could not write the test models"; exit 1; }
import os, sys
import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
d = sys.argv[1]
rng = np.random.default_rng(3)
vi = lambda n, s, t=T.FLOAT: h.make_tensor_value_info(n, t, s)

def save(name, nodes, inputs, outputs, opset, inits=(), feeds=None, refs=None):
    g = h.make_graph(nodes, name, [vi(n, list(a.shape), t) for n, a, t in inputs],
                     [vi(n, None, t) for n, t in outputs], initializer=list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 3
    onnx.save(m, os.path.join(d, name + ".onnx"))
    for n, a, _ in inputs:
        np.save(os.path.join(d, "%s_%s.npy" % (name, n)), a)
    for k, v in (refs or {}).items():
        np.save(os.path.join(d, "%s_ref_%s.npy" % (name, k)), v)
    with open(os.path.join(d, name + ".args"), "w") as f:
        f.write(" ".join("--input %s=%s/%s_%s.npy" % (n, d, name, n) for n, _, _ in inputs))

x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
# Reshape-1 (shape attribute, 0 copies a dim, -1 inferred), Cast-1 (to="INT32"), Concat-1
# (axis 1 by default), Pad-1 (paddings), Split-1 with its split as a constant input
save("reshape1", [h.make_node("Reshape", ["x"], ["r"], shape=[0, -1, 5]),
                  h.make_node("Cast", ["r"], ["c"], to="INT32"),
                  h.make_node("Concat", ["x", "x"], ["cat"]),
                  h.make_node("Pad", ["x"], ["p"], paddings=[0, 0, 1, 0, 0, 0, 2, 1], value=1.5),
                  h.make_node("Split", ["x", "sp"], ["s0", "s1"], axis=3)],
     [("x", x * 3, T.FLOAT)], [("c", T.INT32), ("cat", T.FLOAT), ("p", T.FLOAT),
                               ("s0", T.FLOAT), ("s1", T.FLOAT)], 1,
     inits=[nh.from_array(np.array([2, 3], np.int64), "sp")],
     refs={"c": (x * 3).reshape(2, -1, 5).astype(np.int32),
           "cat": np.concatenate([x * 3, x * 3], 1),
           "p": np.pad(x * 3, [(0, 0), (0, 0), (1, 2), (0, 1)], constant_values=1.5),
           "s0": (x * 3)[..., :2], "s1": (x * 3)[..., 2:]})
# Upsample-1 (height_scale, width_scale; nearest)
save("upsample1", [h.make_node("Upsample", ["x"], ["u"], height_scale=2.0, width_scale=3.0)],
     [("x", x, T.FLOAT)], [("u", T.FLOAT)], 1,
     refs={"u": x.repeat(2, axis=2).repeat(3, axis=3)})
# legacy broadcast: B a suffix of A, by default and with the matching axis; equal shapes
b = rng.standard_normal((4, 5)).astype(np.float32)
y = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
save("bcast6", [h.make_node("Add", ["x", "b"], ["a"], broadcast=1),
                h.make_node("Mul", ["x", "b"], ["m"], broadcast=1, axis=2),
                h.make_node("Sub", ["x", "y"], ["s"]),
                h.make_node("Pow", ["xa", "b"], ["pw"], broadcast=1),
                h.make_node("Greater", ["x", "b"], ["g"], broadcast=1)],
     [("x", x, T.FLOAT), ("y", y, T.FLOAT), ("xa", np.abs(x) + 0.5, T.FLOAT)],
     [("a", T.FLOAT), ("m", T.FLOAT), ("s", T.FLOAT), ("pw", T.FLOAT), ("g", T.BOOL)], 6,
     inits=[nh.from_array(b, "b")],
     refs={"a": x + b, "m": x * b, "s": x - y, "pw": (np.abs(x) + 0.5) ** b, "g": x > b})
# Gemm-6 with broadcast C, BatchNormalization-6 and Dropout-6 with is_test=1, Relu-1 with
# consumed_inputs
A = rng.standard_normal((3, 7)).astype(np.float32)
B = rng.standard_normal((7, 5)).astype(np.float32)
C = rng.standard_normal(5).astype(np.float32)
sc, bi, mu = [rng.standard_normal(3).astype(np.float32) for _ in range(3)]
var = (np.abs(rng.standard_normal(3)) + 0.5).astype(np.float32)
bn = (x - mu[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5) * sc[:, None, None] + bi[:, None, None]
save("nn6", [h.make_node("Gemm", ["A", "B", "C"], ["gm"], broadcast=1, alpha=0.5, beta=2.0),
             h.make_node("BatchNormalization", ["x", "sc", "bi", "mu", "var"], ["bn"], is_test=1),
             h.make_node("Dropout", ["bn"], ["dr"], is_test=1, ratio=0.3),
             h.make_node("Relu", ["dr"], ["re"], consumed_inputs=[0])],
     [("A", A, T.FLOAT), ("x", x, T.FLOAT)], [("gm", T.FLOAT), ("re", T.FLOAT)], 6,
     inits=[nh.from_array(v, n) for v, n in ((B, "B"), (C, "C"), (sc, "sc"), (bi, "bi"),
                                             (mu, "mu"), (var, "var"))],
     refs={"gm": 0.5 * A @ B + 2.0 * C, "re": np.maximum(bn, 0)})

# Scan-8: batch-major, a constant sequence_lens, the second scan input read in reverse
sv = lambda n, s: h.make_tensor_value_info(n, T.FLOAT, s)
body = h.make_graph([h.make_node("Mul", ["xt", "yt"], ["p"]), h.make_node("Add", ["s", "p"], ["so"]),
                     h.make_node("Add", ["so", "so"], ["o2"])], "body",
                    [sv("s", [3]), sv("xt", [3]), sv("yt", [3])], [sv("so", [3]), sv("o2", [3])])
s0 = rng.standard_normal((2, 3)).astype(np.float32)
xs = rng.standard_normal((2, 4, 3)).astype(np.float32)
ys = rng.standard_normal((2, 4, 3)).astype(np.float32)
fin, outs = [], []
for k in range(2):
    st, o = s0[k].copy(), []
    for t in range(4):
        st = st + xs[k, t] * ys[k, 3 - t]
        o.append(st * 2)
    fin.append(st); outs.append(np.stack(o))
for name, lens in (("scan8", [4, 4]), ("bad_scan8", [4, 2])):
    save(name, [h.make_node("Scan", ["lens", "s0", "xs", "ys"], ["sf", "so"], body=body,
                            num_scan_inputs=2, directions=[0, 1])],
         [("s0", s0, T.FLOAT), ("xs", xs, T.FLOAT), ("ys", ys, T.FLOAT)],
         [("sf", T.FLOAT), ("so", T.FLOAT)], 8, inits=[nh.from_array(np.array(lens, np.int64), "lens")],
         refs={"sf": np.stack(fin), "so": np.stack(outs)} if name == "scan8" else None)

# refusals
def refuse(name, node, inputs, opset, inits=()):
    save(name, [node], inputs, [("o", T.FLOAT)], opset, inits=inits)
refuse("bad_axis", h.make_node("Add", ["x", "c"], ["o"], broadcast=1, axis=1),
       [("x", x, T.FLOAT)], 6, inits=[nh.from_array(np.ones(3, np.float32), "c")])
refuse("bad_shapes", h.make_node("Add", ["x", "b"], ["o"]), [("x", x, T.FLOAT)], 6,
       inits=[nh.from_array(b, "b")])
refuse("bad_bn", h.make_node("BatchNormalization", ["x", "sc", "bi", "mu", "var"], ["o"]),
       [("x", x, T.FLOAT)], 6, inits=[nh.from_array(v, n) for v, n in
                                      ((sc, "sc"), (bi, "bi"), (mu, "mu"), (var, "var"))])
refuse("bad_dropout", h.make_node("Dropout", ["x"], ["o"]), [("x", x, T.FLOAT)], 6)
refuse("bad_prelu", h.make_node("PRelu", ["x", "sl"], ["o"]), [("x", x, T.FLOAT)], 6,
       inits=[nh.from_array(np.ones(3, np.float32), "sl")])
refuse("bad_tile", h.make_node("Tile", ["x", "t", "ax"], ["o"]), [("x", x, T.FLOAT)], 1,
       inits=[nh.from_array(np.array(2, np.int64), "t"), nh.from_array(np.array(1, np.int64), "ax")])
refuse("bad_gemm", h.make_node("Gemm", ["A", "B", "C"], ["o"]), [("A", A, T.FLOAT)], 6,
       inits=[nh.from_array(B, "B"), nh.from_array(C, "C")])
EOF

targets=cpu # and OpenCL where a device is there (PoCL on the CPU)
"$HIDETC" run builtin:resnet18-tiny --target opencl >/dev/null 2>&1 && targets="cpu opencl"
for m in reshape1 upsample1 bcast6 nn6 scan8; do
    for target in $targets; do
        rm -rf "$TMP/out"
        # shellcheck disable=SC2046
        if ! "$HIDETC" run "$TMP/$m.onnx" --target $target $(cat "$TMP/$m.args") \
            --output-dir "$TMP/out" >"$TMP/log" 2>&1; then
            fail "$m ($target): run failed: $(tail -3 "$TMP/log")"
            continue
        fi
        for r in "$TMP/${m}_ref_"*.npy; do
            o=${r##*_ref_}
            "$PY" -c "import numpy as np,sys; a=np.load('$TMP/out/$o'); b=np.load('$r'); sys.exit(0 if a.shape==b.shape and a.dtype==b.dtype and np.allclose(a,b,rtol=1e-5,atol=1e-5) else 1)" ||
                fail "$m ($target): output ${o%.npy} differs from numpy"
        done
    done
done

refused() { # NAME PATTERN
    "$HIDETC" run "$TMP/$1.onnx" $(cat "$TMP/$1.args") >"$TMP/out.txt" 2>"$TMP/err"
    local rc=$?
    [ $rc -ne 0 ] || fail "$1: ran (exit 0), expected a refusal"
    [ $rc -lt 128 ] || fail "$1: crashed (exit $rc)"
    grep -q -- "$2" "$TMP/err" || fail "$1: error does not say '$2': $(cat "$TMP/err")"
}
refused bad_axis "node 'Add_0'.*legacy broadcast at axis 1"
refused bad_shapes "node 'Add_0'.*without broadcast=1"
refused bad_bn "node 'BatchNormalization_0'.*is_test is 0"
refused bad_dropout "node 'Dropout_0'.*is_test is 0"
refused bad_prelu "version 6 of PRelu (selected by opset 6) is not supported"
refused bad_tile "version 1 of Tile (selected by opset 1) is not supported"
refused bad_gemm "node 'Gemm_0'.*C must be 3x5 without broadcast=1"
refused bad_scan8 "node 'Scan_0'.*sequence_lens\[1\] = 2 is not the 4 steps"

[ $fails -eq 0 ] && echo "cli_legacy_opsets: all passed"
exit $((fails > 0))
