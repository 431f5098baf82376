#!/usr/bin/env bash
# bench/gpu_prepare.sh — run HERE (a machine with apt and a build) before lending a GPU
# machine: that machine's image has CUDA but neither protoc-c nor the protobuf-c runtime,
# and nothing can be fetched there. This puts into .gpu-carry/ (ignored by git, named in
# the device call's `carry`):
#   pb/onnx.pb-c.c, pb/onnx.pb-c.h   the ONNX importer's generated code (from BUILD_DIR)
#   prefix/                          libprotobuf-c (runtime + header), unpacked from the
#                                    Debian packages
# bench/gpu_check.sh builds with them when .gpu-carry/ is there. Usage:
#   bash bench/gpu_prepare.sh [BUILD_DIR]     (default: build; it must have been built)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=.gpu-carry
[ -f "$build/generated/onnx.pb-c.c" ] || { echo "gpu_prepare: build $build first (make)" >&2; exit 1; }
grep -qx '/.gpu-carry/' .git/info/exclude 2>/dev/null || echo '/.gpu-carry/' >>.git/info/exclude
rm -rf "$out" && mkdir -p "$out/pb" "$out/prefix" "$out/debs"
cp "$build/generated/onnx.pb-c.c" "$build/generated/onnx.pb-c.h" "$out/pb/"
(cd "$out/debs" && apt-get download libprotobuf-c1 libprotobuf-c-dev >/dev/null)
for f in "$out"/debs/*.deb; do dpkg -x "$f" "$out/prefix"; done
rm -rf "$out/debs"
lib=$(find "$out/prefix" -name 'libprotobuf-c.so*' | head -1)
[ -n "$lib" ] && [ -f "$out/prefix/usr/include/protobuf-c/protobuf-c.h" ] ||
    { echo "gpu_prepare: libprotobuf-c not unpacked" >&2; exit 1; }
du -sh "$out"
echo "gpu_prepare: $out ready; call the device with carry [\".gpu-carry\"] and run bench/gpu_check.sh"
