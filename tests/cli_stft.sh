#!/bin/bash
# cli_stft.sh HIDETC SOURCE_DIR — STFT (passes/stft.c: Gather of the frames, window, DFT)
# against numpy's FFT on awkward shapes: a prime signal length (29) in frames of an odd
# length (7) every 3 samples, batch 2, with and without a window, onesided 0 and 1, a
# complex signal, at opsets 17 and 20 (the DFT's axis an attribute, then an input), on the
# CPU and (with PoCL) OpenCL; and the refusals (a frame longer than the signal, a runtime
# frame_step), naming the node. Models written with Debian's python3-onnx; skipped (77)
# without it.
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
rng = np.random.default_rng(9)
L, step = 7, 3
def stft(x, w, onesided):
    xc = x[..., 0] + (1j * x[..., 1] if x.shape[-1] == 2 else 0)
    frames = (x.shape[1] - L) // step + 1
    fr = np.stack([xc[:, f * step:f * step + L] for f in range(frames)], 1)
    if w is not None: fr = fr * w
    y = np.fft.fft(fr, axis=-1)
    if onesided: y = y[..., :L // 2 + 1]
    return np.stack([y.real, y.imag], -1).astype(np.float32)
cases = []
for opset in (17, 20):
    for win in (False, True):
        for onesided in (0, 1):
            cases.append(("real_o%d_w%d_s%d" % (opset, win, onesided), opset, win, onesided, 1))
cases.append(("complex_o17", 17, True, 0, 2))
for name, opset, win, onesided, ch in cases:
    x = rng.standard_normal((2, 29, ch)).astype(np.float32)
    w = rng.uniform(0.5, 1, L).astype(np.float32) if win else None
    inits = [nh.from_array(np.array(step, np.int64), "step")]
    ins = ["x", "step"]
    if win: inits.append(nh.from_array(w, "w")); ins.append("w")
    else: inits.append(nh.from_array(np.array(L, np.int64), "len")); ins += ["", "len"]
    ref = stft(x, w, onesided)
    g = h.make_graph([h.make_node("STFT", ins, ["y"], onesided=onesided)], name,
                     [h.make_tensor_value_info("x", T.FLOAT, x.shape)],
                     [h.make_tensor_value_info("y", T.FLOAT, ref.shape)], initializer=inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)]); m.ir_version = 8
    onnx.save(m, os.path.join(d, name + ".onnx"))
    np.save(os.path.join(d, name + "_x.npy"), x)
    np.save(os.path.join(d, name + "_ref.npy"), ref)
# refusals: a frame longer than the signal; frame_step a graph input
x = np.zeros((1, 5, 1), np.float32)
g = h.make_graph([h.make_node("STFT", ["x", "step", "", "len"], ["y"])], "long",
                 [h.make_tensor_value_info("x", T.FLOAT, x.shape)], [h.make_tensor_value_info("y", T.FLOAT, None)],
                 initializer=[nh.from_array(np.array(1, np.int64), "step"), nh.from_array(np.array(8, np.int64), "len")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)]); m.ir_version = 8
onnx.save(m, os.path.join(d, "bad_long.onnx"))
g = h.make_graph([h.make_node("STFT", ["x", "step", "", "len"], ["y"])], "rt",
                 [h.make_tensor_value_info("x", T.FLOAT, x.shape), h.make_tensor_value_info("step", T.INT64, [])],
                 [h.make_tensor_value_info("y", T.FLOAT, None)], initializer=[nh.from_array(np.array(2, np.int64), "len")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)]); m.ir_version = 8
onnx.save(m, os.path.join(d, "bad_runtime_step.onnx"))
EOF

targets=cpu
"$HIDETC" run builtin:resnet18-tiny --target opencl >/dev/null 2>&1 && targets="cpu opencl"
n=0
for m in "$TMP"/*_ref.npy; do
    name=$(basename "$m" _ref.npy)
    for t in $targets; do
        rm -rf "$TMP/out"
        if ! "$HIDETC" run "$TMP/$name.onnx" --target $t --input x="$TMP/${name}_x.npy" \
            --output-dir "$TMP/out" >"$TMP/log" 2>&1; then
            fail "$name ($t): $(tail -2 "$TMP/log")"
            continue
        fi
        "$PY" -c "import numpy as np,sys; a=np.load('$TMP/out/y.npy'); b=np.load('$m'); sys.exit(0 if a.shape==b.shape and np.allclose(a,b,rtol=1e-4,atol=1e-5) else 1)" ||
            fail "$name ($t): differs from numpy"
        n=$((n + 1))
    done
done
refused() { # MODEL PATTERN
    "$HIDETC" run "$TMP/$1.onnx" --input x=/dev/null >"$TMP/out.txt" 2>"$TMP/err"
    local rc=$?
    [ $rc -ne 0 ] && [ $rc -lt 128 ] || fail "$1: exit $rc, expected a refusal"
    grep -q -- "$2" "$TMP/err" || fail "$1: error does not say '$2': $(cat "$TMP/err")"
}
refused bad_long "node 'STFT_0'.*frame length 8 is not in \[1, 5\]"
refused bad_runtime_step "node 'STFT_0'.*input 1 ('step') must be a compile-time constant"

[ $fails -eq 0 ] && echo "cli_stft: all passed ($n runs)"
exit $((fails > 0))
