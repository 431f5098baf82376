#!/bin/bash
# cli_attention.sh HIDETC SOURCE_DIR — ONNX Attention (passes/attention.c, ATTENTION_CORE) on
# awkward shapes against a numpy port of the ONNX reference (onnx/reference/ops/
# op_attention.py): GQA with a KV cache and a causal float mask, a 3-D decode step with a
# short bool mask, softcap and scale, a single key, every qk_matmul_output mode, BERT-like
# heads with a key-padding mask, a causal prompt of a prime length and a GQA decode step
# over 131 keys; on the CPU and (where PoCL is installed) the OpenCL target. On the CPU, an
# f32 Attention without qk_matmul_output is one kernel (ATTENTION_FUSED's template): the
# profile of `hidetc bench` lists exactly one. Models written with Debian's python3-onnx;
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

mkdir -p "$TMP/models"
"$PY" - "$TMP/models" <<'EOF' || { echo "FAIL: could not write the test models"; exit 1; }
import os, sys
import numpy as np
import onnx
from onnx import helper as h, mapping
d = sys.argv[1]
rng = np.random.default_rng(5)

def softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isneginf(m), 0, m)
    t = np.exp(x - m)
    s = np.sum(t, axis=-1, keepdims=True)
    return t / np.where(s == 0, 1, s)

def reference(Q, K, V, mask=None, pk=None, pv=None, scale=None, causal=0, qh=None, kh=None,
              softcap=0.0, mode=0):
    three = Q.ndim == 3
    if three:
        B = Q.shape[0]
        heads = lambda x, n: x.reshape(B, x.shape[1], n, x.shape[2] // n).transpose(0, 2, 1, 3)
        Q, K, V = heads(Q, qh), heads(K, kh), heads(V, kh)
    c = np.float32(np.sqrt(scale if scale else 1 / np.sqrt(Q.shape[3])))
    if pk is not None: K, V = np.concatenate((pk, K), 2), np.concatenate((pv, V), 2)
    pres_k, pres_v = K, V
    sq, T = Q.shape[2], K.shape[2]
    bias = np.zeros((sq, T), np.float32)
    if mask is not None:
        pad = T - mask.shape[-1]
        if pad > 0:
            mask = np.pad(mask, [(0, 0)] * (mask.ndim - 1) + [(0, pad)], constant_values=
                          False if mask.dtype == np.bool_ else -np.inf)
        if mask.dtype == np.bool_: mask = np.where(mask, np.float32(0), np.float32(-np.inf))
    if causal:
        base = bias if mask is None else mask
        off = 0 if pk is None else pk.shape[2]
        allowed = np.arange(T)[None, :] <= np.arange(sq)[:, None] + off
        bias = base + np.where(allowed, np.float32(0), np.float32(-np.inf))
    elif mask is not None:
        bias = bias + mask
    g = Q.shape[1] // K.shape[1]
    K, V = np.repeat(K, g, axis=1), np.repeat(V, g, axis=1)
    qk = np.matmul(Q * c, (K * c).transpose(0, 1, 3, 2))
    if softcap > 0: qk = np.tanh(qk / softcap) * softcap
    z = qk + bias
    out = z if mode == 2 else qk
    p = softmax(z)
    p = np.where(np.isneginf(np.max(bias, axis=-1, keepdims=True)), 0, p)
    if mode == 3: out = p
    y = np.matmul(p, V)
    if three: y = y.transpose(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1)
    return [a.astype(np.float32) for a in (y, pres_k, pres_v, out)]

def save(name, feeds, attrs, outs):
    ins = ["Q", "K", "V", "attn_mask", "past_key", "past_value"]
    names = [n if n in feeds else "" for n in ins]
    while names and names[-1] == "": names.pop()
    ty = lambda v: mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(v.dtype)]
    onames = ["Y", "present_key", "present_value", "qk"][:len(outs)]
    node = h.make_node("Attention", names, onames, **attrs)
    g = h.make_graph([node], name, [h.make_tensor_value_info(k, ty(v), v.shape) for k, v in feeds.items()],
                     [h.make_tensor_value_info(k, ty(v), v.shape) for k, v in zip(onames, outs)])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 23)]); m.ir_version = 10
    os.makedirs(os.path.join(d, name))
    onnx.save(m, os.path.join(d, name, "model.onnx"))
    for k, v in feeds.items(): np.save(os.path.join(d, name, "in_%s.npy" % k), v)
    for k, v in zip(onames, outs): np.save(os.path.join(d, name, "ref_%s.npy" % k), v)

f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
# 1. GQA (6 query heads, 2 KV heads), a KV cache of 4, causal with a float mask, probs out
Q, K, V = f32(2, 6, 7, 5), f32(2, 2, 13, 5), f32(2, 2, 13, 3)
pk, pv = f32(2, 2, 4, 5), f32(2, 2, 4, 3)
mask = np.where(rng.random((7, 17)) < 0.2, -np.inf, rng.standard_normal((7, 17))).astype(np.float32)
save("gqa_cache_causal", {"Q": Q, "K": K, "V": V, "attn_mask": mask, "past_key": pk, "past_value": pv},
     {"is_causal": 1, "qk_matmul_output_mode": 3},
     reference(Q, K, V, mask, pk, pv, causal=1, mode=3))
# 2. a 3-D decode step: one query, a bool mask 2 keys short, softcap and scale, mode 0
Q, K, V = f32(1, 1, 12), f32(1, 11, 12), f32(1, 11, 9)
mask = rng.random((1, 1, 1, 9)) < 0.7
save("decode_3d_bool", {"Q": Q, "K": K, "V": V, "attn_mask": mask},
     {"q_num_heads": 3, "kv_num_heads": 3, "softcap": 2.0, "scale": 0.3},
     reference(Q, K, V, mask, scale=0.3, qh=3, kh=3, softcap=2.0, mode=0)[:1])
# 3. 17 queries on a single key, mode 2 (scores with the bias), rows fully masked
Q, K, V = f32(1, 2, 17, 8), f32(1, 1, 1, 8), f32(1, 1, 1, 4)
mask = np.where(np.arange(17)[:, None] % 3 == 0, -np.inf, 0).astype(np.float32)
r = reference(Q, K, V, mask, mode=2)
save("one_key_masked_rows", {"Q": Q, "K": K, "V": V, "attn_mask": mask},
     {"qk_matmul_output_mode": 2}, [r[0], r[1], r[2], r[3]])
# 4. BERT-like heads (64 wide) with a key-padding mask: the second batch's last 9 keys off
Q, K, V = f32(2, 4, 33, 64), f32(2, 4, 33, 64), f32(2, 4, 33, 64)
mask = np.zeros((2, 1, 1, 33), np.float32)
mask[1, ..., 24:] = -np.inf
save("bert_padding_mask", {"Q": Q, "K": K, "V": V, "attn_mask": mask}, {},
     reference(Q, K, V, mask)[:1])
# 5. a causal prompt of 37 queries over 37 keys, head size 17 (a tail of every vector width)
Q, K, V = f32(1, 3, 37, 17), f32(1, 3, 37, 17), f32(1, 3, 37, 17)
save("causal_prompt_37", {"Q": Q, "K": K, "V": V}, {"is_causal": 1},
     reference(Q, K, V, causal=1)[:1])
# 6. a GQA decode step (8 query heads on 2 KV heads) over a cache of 130 plus one new key
Q, K, V = f32(1, 8, 1, 64), f32(1, 2, 1, 64), f32(1, 2, 1, 64)
pk, pv = f32(1, 2, 130, 64), f32(1, 2, 130, 64)
save("gqa_decode_131", {"Q": Q, "K": K, "V": V, "past_key": pk, "past_value": pv},
     {"is_causal": 1}, reference(Q, K, V, None, pk, pv, causal=1)[:3])
EOF

# one kernel on the CPU where the model asks for Y alone (f32)
for name in bert_padding_mask causal_prompt_37; do
    "$HIDETC" bench "$TMP/models/$name/model.onnx" --target cpu --warmup 1 --repeat 2 --profile 5 \
        >"$TMP/bench.log" 2>&1 || { fail "$name: bench: $(head -c 600 "$TMP/bench.log")"; continue; }
    grep -q '^kernels: 1$' "$TMP/bench.log" && grep -q 'ATTENTION_FUSED, template' "$TMP/bench.log" ||
        fail "$name: not one fused kernel: $(grep -E 'kernels:|ms ' "$TMP/bench.log" | head -5)"
done

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
    ok = got.shape == ref.shape and np.allclose(got, ref, rtol=1e-5, atol=1e-5, equal_nan=False)
    # -inf where the reference has -inf (masked scores of mode 2)
    if ok: ok = np.array_equal(np.isneginf(got), np.isneginf(ref))
    if not ok:
        print("%s: %s vs reference %s, max difference %s" % (n, got.shape, ref.shape,
              np.nanmax(np.abs(np.where(np.isinf(ref), 0, got - ref))) if got.shape == ref.shape else "-"))
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
if [ $fails -ne 0 ]; then
    echo "cli_attention: $fails failure(s)"
    exit 1
fi
echo "cli_attention: all passed ($targets)"
