#!/bin/bash
# cli_hostile.sh HIDETC SOURCE_DIR — hostile but well-formed ONNX models (docs/reliability.md,
# "Hostile models"): each ends with its clear error and exit code 1 (or compiles, for the
# long chain and the long names), never an abort, an OOM kill or a hang. The models are
# generated here with Debian's python3-onnx; without it the test is skipped (exit 77).
set -u
# the --max-memory cases check exact byte counts of the f32 weights' packed layout (AMX's
# split layout is 1.5 x as large)
export HIDETC_AMX=0
HIDETC=$1
PY=${HIDETC_PYTHON:-/usr/bin/python3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

if ! "$PY" -c 'import onnx' 2>/dev/null; then
    echo "SKIP: $PY has no onnx module (Debian: python3-onnx)"
    exit 77
fi

"$PY" - "$TMP" <<'EOF' || { echo "FAIL: could not write the test models"; exit 1; }
import os, sys
import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper
d = sys.argv[1]

def vi(name, shape, dtype=T.FLOAT):
    return h.make_tensor_value_info(name, dtype, shape)

def save(name, nodes, inputs, outputs, inits=(), opset=13):
    g = h.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, os.path.join(d, name + ".onnx"))

def i64(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)

big = 2 ** 40
relu = [h.make_node("Relu", ["x"], ["y"])]
save("overflow_input", relu, [vi("x", [big, big])], [vi("y", [big, big])])
save("huge_input", relu, [vi("x", [big])], [vi("y", [big])])
# an initializer of 2^40 elements that declares its dims but holds 16 bytes
c = T(); c.name = "c"; c.data_type = T.FLOAT; c.dims.extend([2 ** 20, 2 ** 20]); c.raw_data = b"\0" * 16
save("huge_initializer", [h.make_node("Add", ["x", "c"], ["y"])], [vi("x", [1])], [vi("y", None)], [c])
# a constant made at compile time: ConstantOfShape([2^20, 2^20])
cos = h.make_node("ConstantOfShape", ["s"], ["c"], value=h.make_tensor("v", T.FLOAT, [1], [1.0]))
save("huge_constant", [cos, h.make_node("Add", ["x", "c"], ["y"])], [vi("x", [1])], [vi("y", None)],
     [i64("s", [2 ** 20, 2 ** 20])])
save("huge_reshape", [h.make_node("Reshape", ["x", "s"], ["y"])], [vi("x", [4])], [vi("y", None)],
     [i64("s", [big, big])])
save("huge_expand", [h.make_node("Expand", ["x", "s"], ["y"])], [vi("x", [1])], [vi("y", None)],
     [i64("s", [2 ** 31, 2 ** 31, 4])])

# subgraphs nested `depth` deep: If -> then_branch If -> ...
def leaf(k):
    return h.make_graph([h.make_node("Identity", ["x"], ["o%d" % k])], "leaf%d" % k, [], [vi("o%d" % k, [1])])
def nest(k):
    if k == 0:
        return leaf(0)
    n = h.make_node("If", ["cond"], ["o%d" % k], then_branch=nest(k - 1), else_branch=leaf(k))
    return h.make_graph([n], "g%d" % k, [], [vi("o%d" % k, [1])])
for name, depth in (("nested_subgraphs", 20), ("nested_subgraphs_deep", 400)):
    top = h.make_node("If", ["cond"], ["y"], then_branch=nest(depth), else_branch=leaf(depth + 1))
    save(name, [top], [vi("cond", [], T.BOOL), vi("x", [1])], [vi("y", [1])])

save("cycle", [h.make_node("Add", ["x", "b"], ["a"]), h.make_node("Relu", ["a"], ["b"]),
               h.make_node("Identity", ["a"], ["y"])], [vi("x", [4])], [vi("y", [4])])
save("self_cycle", [h.make_node("Relu", ["a"], ["a"]), h.make_node("Identity", ["a"], ["y"])],
     [vi("x", [4])], [vi("y", [4])])

N = 100000
chain = [h.make_node("Relu", ["x" if i == 0 else "t%d" % (i - 1)], ["y" if i == N - 1 else "t%d" % i])
         for i in range(N)]
save("relu_chain", chain, [vi("x", [16])], [vi("y", [16])])

long = "n" * (1 << 20)
save("long_names", [h.make_node("Relu", [long], ["y"], name=long)], [vi(long, [4])], [vi("y", [4])])

for name, loc in (("external_outside", "../secret.bin"), ("external_device", "/dev/zero"),
                  ("external_absolute", "/etc/passwd"), ("external_dev_link", "zero.bin")):
    w = T(); w.name = "w"; w.data_type = T.FLOAT; w.dims.extend([4]); w.data_location = T.EXTERNAL
    e = w.external_data.add(); e.key = "location"; e.value = loc
    save(name, [h.make_node("Add", ["x", "w"], ["y"])], [vi("x", [4])], [vi("y", [4])], [w])
os.symlink("/dev/zero", os.path.join(d, "zero.bin"))

# a GRU over a million time steps (unrolled over time: refused, not millions of nodes)
save("long_sequence", [h.make_node("GRU", ["x", "W", "R"], ["y"], hidden_size=2)],
     [vi("x", [1000000, 1, 1])], [vi("y", [1000000, 1, 1, 2])],
     [numpy_helper.from_array(np.ones([1, 6, 1], np.float32), "W"),
      numpy_helper.from_array(np.ones([1, 6, 2], np.float32), "R")], opset=14)

# 64 MiB of weights and a 64 MiB intermediate, for --max-memory
w = numpy_helper.from_array(np.ones([4096, 4096], np.float32), "weight")
save("big_weights", [h.make_node("MatMul", ["x", "weight"], ["m"]), h.make_node("Relu", ["m"], ["y"])],
     [vi("x", [4096, 4096])], [vi("y", [4096, 4096])], [w])
EOF

# expect NAME PATTERN... : `hidetc run NAME.onnx` exits 1 within 60 s, stderr has every
# PATTERN and is one short message.
expect() {
    local name=$1
    shift
    timeout 60 "$HIDETC" run "$TMP/$name.onnx" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    [ $rc -eq 1 ] || fail "$name: exit code $rc (want 1): $(head -c 600 "$TMP/err")"
    for p in "$@"; do
        grep -qF -- "$p" "$TMP/err" || fail "$name: stderr lacks '$p': $(head -c 600 "$TMP/err")"
    done
    [ "$(wc -c <"$TMP/err")" -le 2000 ] || fail "$name: the message is $(wc -c <"$TMP/err") bytes"
}

expect overflow_input "input 'x' is too large: dimension 0 (1099511627776)"
expect huge_input "input 'x' is too large: dimension 0 (1099511627776)"
expect huge_initializer "initializer 'c' is too large"
expect huge_constant "node 'ConstantOfShape_0' (ConstantOfShape): output 'c' of shape [1048576, 1048576] is too large"
expect huge_reshape "node 'Reshape_0' (Reshape): shape's element count overflows int64"
expect huge_expand "node 'Expand_0' (Expand): output 'y' of shape [2147483648, 2147483648, 4] is too large"
expect nested_subgraphs "(If): subgraphs nested deeper than 16"
expect nested_subgraphs_deep "not a valid ONNX model (messages nested too deeply)"
expect long_sequence "node 'GRU_0' (GRU): sequence length 1000000 x 1 direction(s)" "at most 8192 steps"
expect cycle "graph has a cycle through node"
expect self_cycle "graph has a cycle through node 'Relu_0'"
expect external_outside "external data location '../secret.bin' leaves the model's folder"
expect external_device "external data location '/dev/zero' is an absolute path"
expect external_absolute "external data location '/etc/passwd' is an absolute path"
expect external_dev_link "external data file 'zero.bin' resolves outside the model's folder"

# 100k ReLUs in a chain compile and run within a generous minute (it was > 120 s: the
# C compiler on one 100k-deep fused kernel, quadratic scans in fusion and node naming)
start=$(date +%s)
timeout 120 "$HIDETC" run "$TMP/relu_chain.onnx" >"$TMP/out" 2>"$TMP/err"
rc=$? secs=$(($(date +%s) - start))
[ $rc -eq 0 ] || fail "relu_chain: exit code $rc: $(head -c 600 "$TMP/err")"
[ $secs -le 60 ] || fail "relu_chain: $secs s (want <= 60)"
grep -q "output y: f32 \[16\]" "$TMP/out" || fail "relu_chain: no output line: $(cat "$TMP/out")"
echo "relu_chain: 100000 nodes in $secs s"

timeout 60 "$HIDETC" run "$TMP/long_names.onnx" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] || fail "long_names: exit code $rc: $(head -c 600 "$TMP/err")"
grep -q "output y: f32 \[4\]" "$TMP/out" || fail "long_names: no output line"

# --max-memory: the plan (weights + arena + inputs and outputs) against a budget
for cmd in run compile bench; do
    extra=""
    [ $cmd = compile ] && extra="-o $TMP/big.hcm"
    timeout 60 "$HIDETC" $cmd "$TMP/big_weights.onnx" --max-memory 100000000 $extra >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ $rc -eq 1 ] || fail "$cmd --max-memory: exit code $rc (want 1): $(head -c 600 "$TMP/err")"
    # 64 MiB of weights (pre-packed), a 64 MiB input and a 64 MiB output; ReLU fuses
    grep -qF "needs 201326592 bytes, more than --max-memory 100000000 (arena 0, constants 67108864, inputs and outputs 134217728); the largest: constant 'weight" "$TMP/err" ||
        fail "$cmd --max-memory: $(head -c 600 "$TMP/err")"
done
timeout 60 "$HIDETC" run "$TMP/big_weights.onnx" --max-memory 1G >"$TMP/out" 2>"$TMP/err" ||
    fail "run --max-memory 1G: $(head -c 600 "$TMP/err")"
for bad in 0 -5 12x ""; do
    "$HIDETC" run "$TMP/long_names.onnx" --max-memory "$bad" >"$TMP/out" 2>"$TMP/err"
    [ $? -eq 2 ] || fail "--max-memory '$bad': not a usage error: $(cat "$TMP/err")"
done

if [ $fails -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "cli_hostile: all checks passed"
