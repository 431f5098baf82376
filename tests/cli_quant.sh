#!/bin/bash
# cli_quant.sh HIDETC SOURCE_DIR — the quantized operators (src/passes/quant.c) on awkward
# shapes (1, primes, tails, groups, strides, per-channel and blocked parameters, convs whose
# sums need f64 to be exact) against numpy ports of the ONNX reference, bit for bit, on the
# CPU and (where PoCL is installed) the OpenCL target. Models written with Debian's
# python3-onnx; skipped (77) without it.
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

mkdir -p "$TMP/models"
"$PY" - "$TMP/models" <<'EOF' || { echo "FAIL: could not write the test models"; exit 1; }
import os, sys
import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, mapping, numpy_helper as nh
d = sys.argv[1]
rng = np.random.default_rng(11)

def save(name, nodes, inputs, outputs, inits, feeds, refs, opset=13):
    ty = lambda v: mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(v.dtype)]
    g = h.make_graph(nodes, name, [h.make_tensor_value_info(k, ty(v), v.shape) for k, v in inputs],
                     [h.make_tensor_value_info(k, ty(refs[k]), refs[k].shape) for k in outputs],
                     initializer=[nh.from_array(v, k) for k, v in inits])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    os.makedirs(os.path.join(d, name), exist_ok=True)
    onnx.save(m, os.path.join(d, name, "model.onnx"))
    for k, v in feeds.items(): np.save(os.path.join(d, name, "in_%s.npy" % k), v)
    for k, v in refs.items(): np.save(os.path.join(d, name, "ref_%s.npy" % k), v)

def q8(shape, dt):
    lo, hi = (0, 256) if dt == np.uint8 else (-128, 128)
    return rng.integers(lo, hi, shape).astype(dt)

def conv_ref(x, w, b, stride, pad, group):  # x [N,C,H,W] int32, w [M,C/g,kh,kw] int32
    n, c, hh, ww = x.shape; m, cg, kh, kw = w.shape
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    oh = (xp.shape[2] - kh) // stride + 1; ow = (xp.shape[3] - kw) // stride + 1
    y = np.zeros((n, m, oh, ow), np.int64); mg = m // group
    for o in range(m):
        gi = o // mg
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, gi * cg:(gi + 1) * cg, i:i + stride * oh:stride, j:j + stride * ow:stride]
                y[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, i, j].astype(np.int64))
    if b is not None: y += b.reshape(1, -1, 1, 1)
    return y.astype(np.int32)

def rint_clip(v, dt):
    i = np.iinfo(dt); return np.clip(np.rint(v), i.min, i.max).astype(dt)

# QLinearConv: per-channel weights, stride 2, pads, groups; C=64 3x3 -> sums need f64
for name, xdt, c, m, group, hw, stride, pad in [
        ("qconv_f64", np.uint8, 64, 13, 1, (11, 9), 2, (1, 1, 1, 1)),
        ("qconv_f32_groups", np.int8, 6, 9, 3, (7, 5), 1, (0, 1, 2, 0)),
        ("qconv_one", np.uint8, 1, 1, 1, (1, 1), 1, (0, 0, 0, 0))]:
    k = 3 if hw[0] > 1 else 1
    x = q8((1, c, *hw), xdt); w = q8((m, c // group, k, k), np.int8)
    xs = np.float32(0.02); xz = np.array(7 if xdt == np.uint8 else -3, xdt)
    ws = rng.uniform(0.001, 0.01, m).astype(np.float32); wz = np.zeros(m, np.int8)
    ys = np.float32(0.05); yz = np.array(128, np.uint8); b = rng.integers(-2000, 2000, m).astype(np.int32)
    acc = conv_ref(x.astype(np.int32) - xz, w.astype(np.int32) - wz.reshape(-1, 1, 1, 1), b, stride, pad, group)
    R = acc * (xs * ws.reshape(1, -1, 1, 1) / ys) + yz
    node = h.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                       strides=[stride, stride], pads=list(pad), group=group)
    save(name, [node], [("x", x)], ["y"], [("xs", xs), ("xz", xz), ("w", w), ("ws", ws), ("wz", wz),
         ("ys", ys), ("yz", yz), ("b", b)], {"x": x}, {"y": rint_clip(R, np.uint8)}, opset=13)

# ConvInteger with a runtime weight (not constant: f64 path) and a scalar zero point
x = q8((2, 5, 6, 7), np.uint8); w = q8((3, 5, 2, 2), np.uint8)
ref = conv_ref(x.astype(np.int32) - 9, w.astype(np.int32) - 100, None, 1, (0, 0, 0, 0), 1)
save("convinteger_runtime_w", [h.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"])],
     [("x", x), ("w", w)], ["y"], [("xz", np.array(9, np.uint8)), ("wz", np.array(100, np.uint8))],
     {"x": x, "w": w}, {"y": ref})

# QLinearMatMul: M=1 and a prime N, K=300; per-row a / per-column b parameters
for name, adt, bdt, mm, kk, nn in [("qmatmul_row", np.uint8, np.int8, 1, 300, 131),
                                   ("qmatmul_3d", np.int8, np.int8, 5, 17, 3)]:
    a = q8((2, mm, kk) if name.endswith("3d") else (mm, kk), adt); b = q8((kk, nn), bdt)
    az = np.array(3, adt); bz = np.array(-1, bdt)
    as_ = np.float32(0.01); bs = np.float32(0.003); ys = np.float32(0.7); yz = np.array(-5, np.int8)
    C = np.matmul(a.astype(np.int32) - az, b.astype(np.int32) - bz)
    D = C * (as_ * bs / ys) + yz
    save(name, [h.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])],
         [("a", a)], ["y"], [("as", as_), ("az", az), ("b", b), ("bs", bs), ("bz", bz), ("ys", ys), ("yz", yz)],
         {"a": a}, {"y": rint_clip(D, np.int8)}, opset=13)

# MatMulInteger: batched, per-row a_zero_point [M] and per-column b_zero_point [N]
a = q8((3, 7, 11), np.uint8); b = q8((11, 13), np.int8)
az = q8(7, np.uint8); bz = q8(13, np.int8)
ref = np.matmul(a.astype(np.int32) - az.reshape(7, 1), b.astype(np.int32) - bz)
save("matmulinteger_zps", [h.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])],
     [("a", a), ("b", b)], ["y"], [("az", az), ("bz", bz)], {"a": a, "b": b}, {"y": ref})

# QuantizeLinear / DequantizeLinear per axis (axis -1, a prime size) and blocked (tail)
x = rng.uniform(-4, 4, (2, 5, 7)).astype(np.float32)
s = rng.uniform(0.01, 0.1, 7).astype(np.float32); z = q8(7, np.int8)
q = np.clip(np.rint(x / s).astype(np.int32) + z, -128, 127).astype(np.int8)
dq = ((q.astype(np.float32) - z) * s).astype(np.float32)
save("qdq_axis", [h.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=-1),
                  h.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=-1)],
     [("x", x)], ["q", "y"], [("s", s), ("z", z)], {"x": x}, {"q": q, "y": dq})
sb = rng.uniform(0.01, 0.1, (2, 5, 3)).astype(np.float32); zb = q8((2, 5, 3), np.uint8)
rep = lambda v: np.repeat(v, 3, axis=2)[:, :, :7]
qb = np.clip(np.rint(x / rep(sb)).astype(np.int32) + rep(zb), 0, 255).astype(np.uint8)
dqb = ((qb.astype(np.float32) - rep(zb)) * rep(sb)).astype(np.float32)
save("qdq_blocked", [h.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=2, block_size=3),
                     h.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=2, block_size=3)],
     [("x", x)], ["q", "y"], [("s", sb), ("z", zb)], {"x": x}, {"q": qb, "y": dqb}, opset=21)

# QDQ as ONNX Runtime's quantize_static writes it: a constant int8 weight dequantized at
# compile time (its scale [1], its zero point [] as for biases), MatMul in f32, the
# activations quantized and dequantized again
wq = q8((7, 5), np.int8); ws = np.array([0.02], np.float32); wz = np.array(0, np.int8)
x = rng.uniform(-2, 2, (3, 7)).astype(np.float32)
xs = np.float32(0.03); xz = np.array(128, np.uint8)
wd = (wq.astype(np.float32) - wz) * ws
mm = x @ wd
qa = np.clip(np.rint(mm / xs).astype(np.int32) + xz, 0, 255).astype(np.uint8)
ya = ((qa.astype(np.float32) - xz) * xs).astype(np.float32)
save("qdq_constant_weight", [h.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"]),
                             h.make_node("MatMul", ["x", "wd"], ["mm"]),
                             h.make_node("QuantizeLinear", ["mm", "xs", "xz"], ["qa"]),
                             h.make_node("DequantizeLinear", ["qa", "xs", "xz"], ["y"])],
     [("x", x)], ["y"], [("wq", wq), ("ws", ws), ("wz", wz), ("xs", np.array(xs)), ("xz", xz)],
     {"x": x}, {"y": ya})

# DynamicQuantizeLinear of a random input
x = rng.uniform(-3, 1, (3, 17)).astype(np.float32)
mx = np.float32(max(0, x.max())); mn = np.float32(min(0, x.min()))
sc = np.float32(mx - mn) / np.float32(255)
zp = np.rint(max(0, min(255, np.float32(0) - mn / sc)))
y = np.clip(np.rint(x / sc) + zp, 0, 255).astype(np.uint8)
save("dynamic", [h.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])], [("x", x)],
     ["y", "s", "z"], [], {"x": x}, {"y": y, "s": np.array(sc, np.float32), "z": np.array(zp, np.uint8)}, opset=13)
EOF

targets="cpu"
"$HIDETC" run builtin:resnet18-tiny --target opencl >/dev/null 2>&1 && targets="cpu opencl"
for t in $targets; do
    for dir in "$TMP"/models/*/; do
        name=$(basename "$dir")
        args=()
        for f in "$dir"in_*.npy; do
            n=$(basename "$f" .npy)
            args+=(--input "${n#in_}=$f")
        done
        out="$TMP/out-$t-$name"
        mkdir -p "$out"
        if ! timeout 300 "$HIDETC" run "$dir/model.onnx" --target "$t" "${args[@]}" --output-dir "$out" \
            >"$TMP/log" 2>&1; then
            fail "$name on $t: $(head -c 600 "$TMP/log")"
            continue
        fi
        "$PY" - "$dir" "$out" <<'EOF' || fail "$name on $t: outputs differ from the reference"
import glob, os, sys
import numpy as np
d, o = sys.argv[1], sys.argv[2]
for r in glob.glob(os.path.join(d, "ref_*.npy")):
    n = os.path.basename(r)[4:-4]
    ref, got = np.load(r), np.load(os.path.join(o, n + ".npy"))
    if got.dtype != ref.dtype or got.shape != ref.shape or not np.array_equal(got, ref):
        bad = np.argwhere(got != ref) if got.shape == ref.shape else None
        print("%s: %s %s vs reference %s %s; first differences at %s" % (
            n, got.dtype, got.shape, ref.dtype, ref.shape, None if bad is None else bad[:3].tolist()))
        sys.exit(1)
EOF
    done
done
# the same programs as CUDA C for sm_80 and sm_90 through nvcc, where it is installed (no
# GPU is needed to compile them; a GPU machine runs them: bench/gpu_check.sh)
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ -x "$NVCC" ]; then
    for dir in "$TMP"/models/*/; do
        name=$(basename "$dir")
        for arch in sm_80 sm_90; do
            "$HIDETC" inspect "$dir/model.onnx" --target cuda:$arch --dump-ir source \
                2>"$TMP/cuda.txt" >/dev/null || { fail "$name: inspect --target cuda:$arch"; continue; }
            grep -v '^== hidetc source' "$TMP/cuda.txt" >"$TMP/cuda.cu"
            "$NVCC" -arch=$arch -cubin -o "$TMP/cuda.cubin" "$TMP/cuda.cu" >"$TMP/nvcc.log" 2>&1 ||
                fail "$name: nvcc $arch: $(tail -n 3 "$TMP/nvcc.log")"
        done
    done
    targets="$targets, CUDA C compiled for sm_80/sm_90"
fi
# QDQ convs as quantize_static writes them (int8 or uint8 activations, per-channel int8
# weights, int32 biases dequantized): on CPUs with AVX2 or AVX-512 they run as int8 convs
# (CONV_NCHWC_Q8, src/passes/qconv.c: sums exact in int32), --no-int8 in f32. Both against
# numpy's f64 convs of the dequantized values: equal up to a quantization step where a
# rounding of the requantized activations falls the other way.
mkdir -p "$TMP/qconv"
"$PY" - "$TMP/qconv" <<'EOF2' || fail "could not write the QDQ conv model"
import os, sys
import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
d = sys.argv[1]
rng = np.random.default_rng(5)
def conv(x, w, b, s, p):  # f64, x [N,C,H,W], w [M,C,kh,kw], pads p (t, l, b, r)
    x = np.pad(x, [(0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])])
    M, C, kh, kw = w.shape
    oh, ow = (x.shape[2] - kh) // s + 1, (x.shape[3] - kw) // s + 1
    y = np.zeros((x.shape[0], M, oh, ow))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,mc->nmhw", x[:, :, i:i + s * oh:s, j:j + s * ow:s], w[:, :, i, j])
    return y + b[None, :, None, None]
nodes, inits = [], []
x = rng.uniform(-1, 1, (1, 16, 11, 7)).astype(np.float32)
def quant(name, t, sc, zp, dt):
    inits.extend([nh.from_array(np.array(sc, np.float32), name + "_s"), nh.from_array(np.array(zp, dt), name + "_z")])
    nodes.append(h.make_node("QuantizeLinear", [t, name + "_s", name + "_z"], [name + "_q"]))
    nodes.append(h.make_node("DequantizeLinear", [name + "_q", name + "_s", name + "_z"], [name + "_d"]))
    return name + "_d"
def qref(v, sc, zp, lo, hi):
    return (np.clip(np.rint(v / np.float32(sc)) + zp, lo, hi) - zp) * np.float64(np.float32(sc))
cur, ref = quant("a0", "x", 0.01, 3, np.int8), qref(x.astype(np.float64), 0.01, 3, -128, 127)
layers = [(32, 3, 1, (1, 1, 1, 1), np.uint8, 0.02, 128), (16, 1, 2, (0, 0, 0, 0), np.int8, 0.015, -5),
          (32, 3, 2, (0, 1, 2, 0), np.uint8, 0.03, 100)]
for i, (m, k, s, p, dt, asc, azp) in enumerate(layers):
    c = ref.shape[1]
    wq = rng.integers(-128, 128, (m, c, k, k)).astype(np.int8)
    ws = rng.uniform(0.001, 0.004, m).astype(np.float32)
    bq = rng.integers(-2000, 2000, m).astype(np.int32)
    xs = np.float32(layers[i - 1][5]) if i else np.float32(0.01)
    bs = (xs * ws).astype(np.float32)
    inits += [nh.from_array(wq, "w%d" % i), nh.from_array(ws, "ws%d" % i), nh.from_array(bq, "b%d" % i),
              nh.from_array(bs, "bs%d" % i)]
    nodes += [h.make_node("DequantizeLinear", ["w%d" % i, "ws%d" % i], ["wd%d" % i], axis=0),
              h.make_node("DequantizeLinear", ["b%d" % i, "bs%d" % i], ["bd%d" % i], axis=0),
              h.make_node("Conv", [cur, "wd%d" % i, "bd%d" % i], ["c%d" % i], kernel_shape=[k, k],
                          strides=[s, s], pads=[p[0], p[1], p[2], p[3]]),
              h.make_node("Relu", ["c%d" % i], ["r%d" % i])]
    wd = wq.astype(np.float64) * ws.astype(np.float64)[:, None, None, None]
    y = np.maximum(conv(ref, wd, bq * bs.astype(np.float64), s, p), 0)
    lo, hi = (0, 255) if dt == np.uint8 else (-128, 127)
    cur, ref = quant("a%d" % (i + 1), "r%d" % i, asc, azp, dt), qref(y, asc, azp, lo, hi)
g = h.make_graph(nodes, "qconv", [h.make_tensor_value_info("x", T.FLOAT, x.shape)],
                 [h.make_tensor_value_info(cur, T.FLOAT, ref.shape)], initializer=inits)
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)]); m.ir_version = 8
onnx.save(m, os.path.join(d, "model.onnx"))
np.save(os.path.join(d, "x.npy"), x)
np.save(os.path.join(d, "ref.npy"), ref.astype(np.float32))
np.save(os.path.join(d, "step.npy"), np.float32(layers[-1][5]))
EOF2
Q8=0
for mode in int8 f32; do
    flag=(); [ $mode = f32 ] && flag=(--no-int8)
    rm -rf "$TMP/qo"
    if ! "$HIDETC" run "$TMP/qconv/model.onnx" --input x="$TMP/qconv/x.npy" "${flag[@]}" \
        --output-dir "$TMP/qo" >"$TMP/log" 2>&1; then
        fail "qconv ($mode): $(tail -3 "$TMP/log")"
        continue
    fi
    "$PY" - "$TMP/qconv" "$TMP/qo" <<'EOF2' || fail "qconv ($mode): outputs differ from numpy"
import glob, sys
import numpy as np
ref, step = np.load(sys.argv[1] + "/ref.npy"), float(np.load(sys.argv[1] + "/step.npy"))
got = np.load(glob.glob(sys.argv[2] + "/*.npy")[0])
d = np.abs(got - ref) / step
print("qconv: max difference %.2f steps, %.2f%% of the outputs differ" % (d.max(), 100 * np.mean(d > 0.5)))
sys.exit(0 if got.shape == ref.shape and d.max() <= 2.01 and np.mean(d > 0.5) < 0.02 else 1)
EOF2
    n=$("$HIDETC" bench "$TMP/qconv/model.onnx" "${flag[@]}" --repeat 1 --warmup 0 --profile 50 2>&1 |
        grep -c 'CONV_NCHWC_Q8')
    [ $mode = int8 ] && Q8=$n
    [ $mode = f32 ] && [ "$n" -ne 0 ] && fail "qconv: --no-int8 still ran $n int8 convs"
done
# every conv of the model is eligible: three int8 kernels where the CPU has AVX2 or AVX-512
if grep -q -w -E 'avx2' /proc/cpuinfo; then
    [ "$Q8" -eq 3 ] || fail "qconv: $Q8 int8 conv kernels, expected 3"
fi

if [ $fails -ne 0 ]; then
    echo "cli_quant: $fails failure(s)"
    exit 1
fi
echo "cli_quant: all passed ($targets)"
