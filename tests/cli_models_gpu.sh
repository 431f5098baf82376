#!/usr/bin/env bash
# Model tests on the OpenCL target (PoCL here): the small PyTorch-exported ResNet-50,
# MobileNet-V2, Inception-V3, BERT and GPT-2 at opset 17, run with --target opencl and
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
exec bash "$src/tests/models/run.sh" --small "$hidetc" "$build/models-small-gpu" --opset 17 \
    --target opencl
