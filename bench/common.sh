# common.sh — what bench/fusion.sh and bench/tuning.sh share; source it with the script's
# arguments after setting NAME (the script's name, for messages):
#   - the options [--repeat R] [--rounds N] [--threads T] [--models NAME...] into repeat,
#     rounds, threads, models (defaults 20, 3, 2, the five models) and args (as given);
#   - SRC (the repository), BUILD (default build-bench: a Release build of hidetc),
#     HIDETC (the program), MODELS (the five full-size models, opset 17, exported by
#     tests/models/export.py into $BUILD/models-full; cached, shared with bench/models.sh
#     and make test-models);
#   - die MESSAGE, median (of the numbers on stdin), now / secs START (wall clock).
repeat=20 threads=2 rounds=3
models=(resnet50 inception_v3 mobilenet_v2 bert gpt2)
args="$*"
while [ $# -gt 0 ]; do
    case $1 in
    --repeat) repeat=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --models) models=(); shift
        while [ $# -gt 0 ] && [[ $1 != --* ]]; do models+=("$1"); shift; done ;;
    *) echo "usage: bench/$NAME [--repeat R] [--rounds N] [--threads T] [--models NAME...]" >&2
       exit 2 ;;
    esac
done
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
