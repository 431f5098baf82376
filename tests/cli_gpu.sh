#!/bin/bash
# cli_gpu.sh HIDETC SOURCE_DIR — the GPU targets from the command line (docs/gpu.md):
# `kernel matmul --target opencl` on awkward shapes checked against the reference, the
# tiny built-in models run with --target opencl and compared with the CPU target, the CUDA
# source printed for a target without a device (and compiled by nvcc when there is one),
# and clear refusals (no CUDA device, saving a GPU model). Without an OpenCL device the
# script exits 77 (ctest: skipped) after the checks that need none.
set -u
HIDETC=$1
PY=${HIDETC_PYTHON:-/usr/bin/python3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# CUDA C for sm_90 anywhere; nvcc (when installed) compiles it
"$HIDETC" kernel matmul --target cuda:sm_90 --m 100 --n 70 --k 33 --print-source >"$TMP/mm.txt" ||
    fail "kernel matmul --target cuda:sm_90 --print-source failed"
grep -q '__global__' "$TMP/mm.txt" || fail "no __global__ kernel in the CUDA source"
grep -q '__syncthreads' "$TMP/mm.txt" || fail "no barrier in the CUDA matmul"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ -x "$NVCC" ]; then
    tail -n +2 "$TMP/mm.txt" >"$TMP/mm.cu"
    "$NVCC" -arch=sm_90 -cubin -o "$TMP/mm.cubin" "$TMP/mm.cu" >"$TMP/nvcc.log" 2>&1 ||
        { fail "nvcc rejects the matmul's CUDA C"; cat "$TMP/nvcc.log" >&2; }
else
    echo "skipped: nvcc not installed (the NVRTC compiles of test_gpu still run)"
fi
# every model program as CUDA C
"$HIDETC" inspect builtin:bert-tiny --target cuda --dump-ir source 2>"$TMP/bert.cu" >/dev/null ||
    fail "inspect --target cuda --dump-ir source failed"
grep -q '__global__' "$TMP/bert.cu" || fail "inspect --target cuda: no CUDA kernels"

# without a CUDA device: refused, naming why
if ! command -v nvidia-smi >/dev/null 2>&1; then
    out=$("$HIDETC" run builtin:bert-tiny --target cuda 2>&1)
    [ $? -eq 2 ] || fail "run --target cuda without a device: expected exit 2"
    echo "$out" | grep -q "CUDA" || fail "run --target cuda: the message does not say why: $out"
fi

if ! "$HIDETC" kernel matmul --target opencl --m 1 --n 1 --k 1 >"$TMP/probe.txt" 2>&1 &&
    grep -q "cannot run here" "$TMP/probe.txt"; then
    cat "$TMP/probe.txt"
    echo "SKIP: no OpenCL device (Debian: pocl-opencl-icd ocl-icd-libopencl1)"
    [ $fails -eq 0 ] || exit 1
    exit 77
fi

# the matmul template on awkward shapes, batched too
for s in "257 131 77 1" "1 1 1 1" "1 300 5 1" "31 17 129 3"; do
    set -- $s
    out=$("$HIDETC" kernel matmul --target opencl --m $1 --n $2 --k $3 --batch $4 2>&1) ||
        fail "kernel matmul --target opencl $s: $out"
    echo "$out" | grep -q '^max_error: ' || fail "kernel matmul $s: no max_error line"
done
out=$("$HIDETC" kernel matmul --target opencl --m 65 --n 33 --k 17 --tune 1 --candidate 3 2>&1) ||
    fail "kernel matmul --tune 1 --candidate 3: $out"
out=$("$HIDETC" kernel matmul --target opencl --m 8 --n 8 --k 8 --tune 1 --candidate 9999 2>&1)
[ $? -ne 0 ] && echo "$out" | grep -q candidates || fail "a candidate beyond the space: $out"

# tiny models: the OpenCL target gives the CPU target's outputs
for M in bert-tiny resnet18-tiny; do
    "$HIDETC" run builtin:$M --output-dir "$TMP/cpu_$M" >/dev/null 2>&1 || fail "$M on the CPU"
    "$HIDETC" run builtin:$M --target opencl --output-dir "$TMP/ocl_$M" >"$TMP/ocl_$M.log" 2>&1 ||
        { fail "$M --target opencl"; tail -5 "$TMP/ocl_$M.log" >&2; }
    "$PY" - "$TMP/cpu_$M" "$TMP/ocl_$M" <<'PY' || fail "$M: OpenCL and CPU outputs differ"
import sys, os, numpy as np
a, b = sys.argv[1], sys.argv[2]
names = sorted(f for f in os.listdir(a) if f.endswith(".npy"))
assert names, "no outputs"
for f in names:
    x, y = np.load(os.path.join(a, f)), np.load(os.path.join(b, f))
    err = float(np.max(np.abs(x - y) / np.maximum(1.0, np.abs(x))))
    print(f"{f}: max rel err {err:.3g}")
    assert x.shape == y.shape and err < 1e-4, f
PY
done
out=$("$HIDETC" bench builtin:bert-tiny --target opencl --warmup 1 --repeat 3 2>&1) ||
    fail "bench --target opencl: $out"
echo "$out" | grep -q '^median_ms: ' || fail "bench --target opencl: no median_ms"
# a compiled-model file holds the device code: it runs from another cache, with the same
# outputs; on a machine without the device it is refused, naming the target
"$HIDETC" compile builtin:bert-tiny --target opencl -o "$TMP/m.hcm" >"$TMP/compile.log" 2>&1 ||
    fail "compile --target opencl -o: $(cat "$TMP/compile.log")"
grep -q "target opencl" "$TMP/compile.log" || fail "compile --target opencl: $(cat "$TMP/compile.log")"
HIDETC_CACHE_DIR="$TMP/fresh-cache" "$HIDETC" run "$TMP/m.hcm" --output-dir "$TMP/file_out" \
    >/dev/null 2>&1 || fail "run of the compiled opencl model"
for f in "$TMP/ocl_bert-tiny"/*.npy; do
    cmp -s "$f" "$TMP/file_out/$(basename "$f")" ||
        fail "the compiled opencl model's $(basename "$f") differs from the compiled-in-process one"
done

[ $fails -eq 0 ] && echo "cli_gpu: all checks passed"
[ $fails -eq 0 ]
