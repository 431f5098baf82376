# common.sh — what bench/fusion.sh and bench/tuning.sh share; source it after setting
# NAME (the script's name, for messages):
#   - SRC (the repository), BUILD (default build-bench: a Release build of hidetc),
#     HIDETC (the program), MODELS (the five full-size models, opset 17, exported by
#     tests/models/export.py into $BUILD/models-full; cached, shared with bench/models.sh
#     and make test-models);
#   - die MESSAGE, median (of the numbers on stdin), now / secs START (wall clock).
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$SRC/build-bench}
die() { echo "bench/$NAME: $*" >&2; exit 1; }
median() { sort -g | awk '{v[NR]=$1} END {if (NR % 2) print v[(NR+1)/2]; else printf "%.3f\n", (v[NR/2]+v[NR/2+1])/2}'; }
now() { date +%s%N; }
secs() { awk -v ns=$(($(now) - $1)) 'BEGIN { printf "%.1f", ns / 1e9 }'; }

cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null || die "cmake failed"
cmake --build "$BUILD" --target hidetc -j2 >/dev/null || die "build failed"
HIDETC=$BUILD/hidetc
MODELS=$BUILD/models-full
bash "$SRC/tests/models/export_cached.sh" "$MODELS" --full --opset 13 17 || die "export failed"
