#!/usr/bin/env bash
# Model tests on the OpenCL target (PoCL here): the small PyTorch-exported ResNet-50,
# MobileNet-V2, Inception-V3, BERT, GPT-2 and the LSTM + GRU tagger at opset 17, run with --target opencl and
# compared with PyTorch's outputs (tests/models/run.sh). Exits 77 (skipped) without
# PyTorch or without an OpenCL device.
# usage: cli_models_gpu.sh HIDETC SOURCE_DIR
set -u
hidetc=$1 src=$2
build=$(cd "$(dirname "$hidetc")" && pwd)
if "$hidetc" kernel matmul --target opencl --m 1 --n 1 --k 1 2>&1 | grep -q "cannot run here"; then
    echo "SKIP: no OpenCL device (Debian: pocl-opencl-icd ocl-icd-libopencl1)"
    exit 77
fi
out="$build/models-small-gpu"
bash "$src/tests/models/run.sh" --small "$hidetc" "$out" --opset 17 --target opencl || exit 1
# every program of the models as CUDA C for sm_80 and sm_90, through nvcc (when installed)
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ ! -x "$NVCC" ]; then
    echo "skipped: CUDA compiles of the models: nvcc not installed"
    exit 0
fi
fails=0
for dir in "$out"/*/; do
    m="$dir/model_op17.onnx"
    [ -f "$m" ] || continue
    for arch in sm_80 sm_90; do
        "$hidetc" inspect "$m" --target cuda:$arch --dump-ir source 2>"$dir/cuda_$arch.txt" \
            >/dev/null || { echo "FAIL $(basename "$dir"): inspect --target cuda:$arch"; fails=1; }
        grep -v '^== hidetc source' "$dir/cuda_$arch.txt" >"$dir/cuda_$arch.cu"
        if "$NVCC" -arch=$arch -cubin -o "$dir/cuda_$arch.cubin" "$dir/cuda_$arch.cu" \
            >"$dir/nvcc_$arch.log" 2>&1; then
            echo "PASS $(basename "$dir") CUDA C for $arch: $(grep -c __global__ "$dir/cuda_$arch.cu") kernels compiled"
        else
            echo "FAIL $(basename "$dir") CUDA C for $arch (nvcc):"
            tail -n 5 "$dir/nvcc_$arch.log" | sed 's/^/    /'
            fails=1
        fi
    done
done
exit $fails
