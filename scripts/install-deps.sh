#!/usr/bin/env bash
# Installs what a fresh machine of this kind lacks (Debian packages), once. Safe to rerun:
# it installs only what is missing. Needs root (or sudo) when something is missing.
set -euo pipefail

need=()
have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

have_cmd cc || need+=(gcc)
have_cmd cmake || need+=(cmake)
have_cmd make || need+=(make)
have_cmd python3 || need+=(python3)
# OpenBLAS is only for the GEMM benchmark baseline, but cheap; numpy is used by CLI tests.
for p in libopenblas-dev python3-numpy; do have_pkg "$p" || need+=("$p"); done
# ONNX import (protobuf-c code generated from the system's onnx.proto), the ONNX backend
# node tests for `hidetc onnx-test`, and python3-onnx for the test-model scripts.
for p in libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata python3-onnx; do
    have_pkg "$p" || need+=("$p")
done
# The model tests export from PyTorch with /usr/bin/python3 (tests/models/export.py);
# python3-venv lets bench/models.sh install pip onnxruntime in a venv (benchmark only).
for p in python3-torch python3-torchvision python3-venv; do have_pkg "$p" || need+=("$p"); done
# valgrind: `make valgrind` and tests/cli_helgrind_session.sh (helgrind on concurrent runs).
have_pkg valgrind || need+=(valgrind)
# The libFuzzer harnesses (fuzz/, scripts/fuzz.sh, .ci/run): clang 15 (clang 14 lacks
# _Float16 on x86-64) and LLVM's omp.h / libomp for the library's omp_* calls.
for p in clang-15 libomp-14-dev; do have_pkg "$p" || need+=("$p"); done
# The GPU programs run and are checked here through OpenCL on the CPU (PoCL): the ICD
# loader and PoCL's driver; the headers are not needed (src/target/gpu declares the API).
for p in pocl-opencl-icd ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-headers clinfo; do
    have_pkg "$p" || need+=("$p")
done

if [ ${#need[@]} -gt 0 ]; then
    echo "install-deps: installing ${need[*]}"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
fi
