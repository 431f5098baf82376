#!/bin/bash
# attention.sh [--repeat R] [--rounds N] [--threads T] — ONNX Attention (one
# ATTENTION_FUSED kernel on the CPU) against the same attention written as MatMul +
# Softmax + MatMul (as exported transformers write it; run with HIDETC_NO_FUSE_ATTENTION=1
# so that the fuse_attention pass leaves it as three kernels), at BERT-base shapes
# (batch 1, 12 heads, head size 64): a 128-token prompt, the same with a key-padding mask,
# a decode step over 512 keys and a 512-token prompt. Interleaved rounds (machine noise
# hits both alike), medians over rounds of `hidetc bench` medians; then the builtin BERT
# (12 layers at seq 128) with the fuse_attention pass on and off, and an exported GPT-2 where
# GPT2_MODEL names one (bench/compare's gpt2-b1/model.onnx). Models written with
# python3-onnx into $BUILD/attention-models. BUILD defaults to build-bench (a Release
# build of the hidetc program). Writes bench/results/attention.md.
set -u
repeat=50 threads=2 rounds=5
args="$*"
while [ $# -gt 0 ]; do
    case $1 in
    --repeat) repeat=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) echo "usage: bench/attention.sh [--repeat R] [--rounds N] [--threads T]" >&2; exit 2 ;;
    esac
done
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=$SRC/bench/results/attention.md
BUILD=${BUILD:-$SRC/build-bench}
PY=${HIDETC_PYTHON:-/usr/bin/python3}
die() { echo "bench/attention.sh: $*" >&2; exit 1; }
median() { sort -g | awk '{v[NR]=$1} END {if (NR % 2) print v[(NR+1)/2]; else printf "%.3f\n", (v[NR/2]+v[NR/2+1])/2}'; }
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null || die "cmake failed"
cmake --build "$BUILD" --target hidetc -j2 >/dev/null || die "build failed"
HIDETC=$BUILD/hidetc
export HIDETC_CACHE_DIR=${HIDETC_CACHE_DIR:-$BUILD/bench-cache}
M=$BUILD/attention-models
mkdir -p "$M"
"$PY" - "$M" <<'PYEOF' || die "could not write the models (python3-onnx)"
import os, sys
import numpy as np
import onnx
from onnx import helper as h, TensorProto as TP
d = sys.argv[1]
def inputs(B, H, Sq, T, D, mask):
    ins = [h.make_tensor_value_info("Q", TP.FLOAT, [B, H, Sq, D]),
           h.make_tensor_value_info("K", TP.FLOAT, [B, H, T, D]),
           h.make_tensor_value_info("V", TP.FLOAT, [B, H, T, D])]
    if mask: ins.append(h.make_tensor_value_info("M", TP.FLOAT, [B, 1, 1, T]))
    return ins
def save(nodes, name, ins, out, opset, inits=()):
    g = h.make_graph(nodes, name, ins, [h.make_tensor_value_info("Y", TP.FLOAT, out)], list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)]); m.ir_version = 10 if opset >= 23 else 8
    onnx.save(m, os.path.join(d, name + ".onnx"))
def attn(name, B, H, Sq, T, D, mask=False):
    names = ["Q", "K", "V"] + (["M"] if mask else [])
    save([h.make_node("Attention", names, ["Y"])], name, inputs(B, H, Sq, T, D, mask), [B, H, Sq, D], 23)
def unfused(name, B, H, Sq, T, D, mask=False):
    sc = h.make_tensor("sc", TP.FLOAT, [], [float(np.sqrt(D))])
    nodes = [h.make_node("Transpose", ["K"], ["Kt"], perm=[0, 1, 3, 2]),
             h.make_node("MatMul", ["Q", "Kt"], ["S0"]), h.make_node("Div", ["S0", "sc"], ["S1"])]
    last = "S1"
    if mask: nodes.append(h.make_node("Add", ["S1", "M"], ["S2"])); last = "S2"
    nodes += [h.make_node("Softmax", [last], ["P"], axis=-1), h.make_node("MatMul", ["P", "V"], ["Y"])]
    save(nodes, name, inputs(B, H, Sq, T, D, mask), [B, H, Sq, D], 17, [sc])
for f, p in ((attn, "attn"), (unfused, "mm")):
    f(p + "_s128", 1, 12, 128, 128, 64)
    f(p + "_s128_mask", 1, 12, 128, 128, 64, True)
    f(p + "_decode", 1, 12, 1, 512, 64)
    f(p + "_s512", 1, 12, 512, 512, 64)
PYEOF
bench_ms() { "$HIDETC" bench "$1" --threads "$threads" --warmup 5 --repeat "$repeat" |
             sed -n 's/^median_ms: \([^ ]*\).*/\1/p'; }
kernels() { env "${@:2}" "$HIDETC" bench "$1" --threads "$threads" --warmup 1 --repeat 1 |
            sed -n 's/^kernels: //p'; }
rows=()
for s in s128 s128_mask decode s512; do
    a=$M/attn_$s.onnx u=$M/mm_$s.onnx
    ka=$(kernels "$a") ku=$(kernels "$u" HIDETC_NO_FUSE_ATTENTION=1) kp=$(kernels "$u")
    fa=() fu=() fp=()
    for r in $(seq "$rounds"); do  # interleaved
        fa+=("$(bench_ms "$a")")
        fu+=("$(HIDETC_NO_FUSE_ATTENTION=1 bench_ms "$u")")
        fp+=("$(bench_ms "$u")")
    done
    ma=$(printf '%s\n' "${fa[@]}" | median) mu=$(printf '%s\n' "${fu[@]}" | median)
    mp=$(printf '%s\n' "${fp[@]}" | median)
    ratio=$(awk -v a="$ma" -v b="$mu" 'BEGIN { printf "%.2f", b / a }')
    echo "$s: Attention $ma ms ($ka kernel), MatMul+Softmax+MatMul $mu ms ($ku kernels), " \
         "the same through fuse_attention $mp ms ($kp kernel): x$ratio"
    rows+=("| $s | $ka | $ma | $ku | $mu | $kp | $mp | $ratio |")
done
# the builtin BERT: its attention is MatMul + Mul + Add + Softmax + MatMul per layer
bk=$(kernels builtin:bert) bu=$(kernels builtin:bert HIDETC_NO_FUSE_ATTENTION=1)
bf=() bn=()
for r in $(seq "$rounds"); do
    bf+=("$("$HIDETC" bench builtin:bert --threads "$threads" --warmup 3 --repeat 20 | sed -n 's/^median_ms: \([^ ]*\).*/\1/p')")
    bn+=("$(HIDETC_NO_FUSE_ATTENTION=1 "$HIDETC" bench builtin:bert --threads "$threads" --warmup 3 --repeat 20 | sed -n 's/^median_ms: \([^ ]*\).*/\1/p')")
done
mbf=$(printf '%s\n' "${bf[@]}" | median) mbn=$(printf '%s\n' "${bn[@]}" | median)
echo "builtin:bert: $mbf ms ($bk kernels) against $mbn ms ($bu kernels) without fuse_attention"
gline=""
if [ -n "${GPT2_MODEL:-}" ] && [ -f "$GPT2_MODEL" ]; then
    gk=$(kernels "$GPT2_MODEL") gu=$(kernels "$GPT2_MODEL" HIDETC_NO_FUSE_ATTENTION=1)
    gf=() gn=()
    for r in $(seq "$rounds"); do
        gf+=("$("$HIDETC" bench "$GPT2_MODEL" --threads "$threads" --warmup 3 --repeat 20 | sed -n 's/^median_ms: \([^ ]*\).*/\1/p')")
        gn+=("$(HIDETC_NO_FUSE_ATTENTION=1 "$HIDETC" bench "$GPT2_MODEL" --threads "$threads" --warmup 3 --repeat 20 | sed -n 's/^median_ms: \([^ ]*\).*/\1/p')")
    done
    mgf=$(printf '%s\n' "${gf[@]}" | median) mgn=$(printf '%s\n' "${gn[@]}" | median)
    gline="An exported GPT-2 ($(basename "$(dirname "$GPT2_MODEL")")/$(basename "$GPT2_MODEL"), 12 layers at seq 128, its causal mask a constant Where): $mgf ms with fuse_attention ($gk kernels), $mgn ms without ($gu kernels)."
    echo "$gline"
fi
{
    echo "# Attention: one fused kernel against MatMul + Softmax + MatMul"
    echo
    echo "Command: \`bench/attention.sh $args\` ($(date -u +%Y-%m-%d), commit $(git -C "$SRC" rev-parse --short HEAD))."
    echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $threads threads;" \
         "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "Latency: median over $rounds interleaved rounds of \`hidetc bench --threads $threads --warmup 5 --repeat $repeat\` medians (ms)."
    echo "Shapes: batch 1, 12 heads, head size 64; s128: 128 queries and keys; s128_mask: with a float"
    echo "key-padding mask [1, 1, 1, 128]; decode: 1 query, 512 keys; s512: 512 queries and keys."
    echo "Columns: ONNX Attention (opset 23, lower_attention: ATTENTION_FUSED); the same written as"
    echo "Transpose + MatMul + Div + [Add] + Softmax + MatMul (opset 17) with the fuse_attention pass"
    echo "off (HIDETC_NO_FUSE_ATTENTION=1: the two matmul-template kernels around the softmax) and on."
    echo
    echo "| shape | Attention kernels | Attention ms | unfused kernels | unfused ms | matched kernels | matched ms | unfused / Attention |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "The builtin BERT (\`hidetc bench builtin:bert --threads $threads --warmup 3 --repeat 20\`, medians of"
    echo "$rounds interleaved rounds): $mbf ms with fuse_attention ($bk kernels), $mbn ms with"
    echo "HIDETC_NO_FUSE_ATTENTION=1 ($bu kernels)."
    [ -z "$gline" ] || { echo; echo "$gline"; }
} > "$OUT"
echo "wrote $OUT"
