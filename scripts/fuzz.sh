#!/usr/bin/env bash
# scripts/fuzz.sh NAME SECONDS [LIBFUZZER ARGS...] — build the libFuzzer harnesses
# (fuzz/CMakeLists.txt, clang + ASan + UBSan, into $FUZZ_BUILD, default build-fuzz), make
# NAME's seed corpus there (generated, not committed) and fuzz for SECONDS.
#   NAME: onnx, npy, model-file, mapping or records (docs/reliability.md)
# Exits non-zero on a crash, a leak, a timeout or an out-of-memory, with the reproducer's
# path printed (libFuzzer writes it as crash-*/leak-*/timeout-*/oom-* under
# $FUZZ_BUILD/artifacts/NAME/). Replay one: $FUZZ_BUILD/fuzz_NAME FILE. Keep it, once
# fixed, under tests/fuzz-regress/NAME/ (test_fuzz_regress replays them in `make test`).
# Seeds: the ONNX backend node tests' model.onnx and a sample of their .pb tensors
# (Debian libonnx-testdata), ONNX files under tests/models exports (build*/models-*),
# small .npy files, compiled-model files of the tiny built-in models (made with
# $HIDETC, default build/hidetc, built if missing), mapping expressions, tune records.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NAME=${1:?usage: scripts/fuzz.sh onnx|npy|model-file|mapping|records SECONDS [ARGS...]}
SECONDS_TO_RUN=${2:?usage: scripts/fuzz.sh NAME SECONDS [ARGS...]}
shift 2
case "$NAME" in onnx | npy | model-file | mapping | records) ;;
*) echo "scripts/fuzz.sh: unknown harness '$NAME' (onnx, npy, model-file, mapping, records)" >&2; exit 2 ;;
esac
BIN=${NAME//-/_}
B=${FUZZ_BUILD:-$ROOT/build-fuzz}
JOBS=${JOBS:-2}

if [ ! -f "$B/CMakeCache.txt" ]; then
    cmake -S "$ROOT/fuzz" -B "$B" -DCMAKE_C_COMPILER="${FUZZ_CC:-$(command -v clang-15 || command -v clang)}" >/dev/null
fi
cmake --build "$B" -j"$JOBS" --target "fuzz_$BIN" >/dev/null

CORPUS="$B/corpus/$NAME" SEEDS="$B/seeds/$NAME" ART="$B/artifacts/$NAME"
mkdir -p "$CORPUS" "$ART"
if [ ! -d "$SEEDS" ]; then
    mkdir -p "$SEEDS.tmp"
    case "$NAME" in
    onnx)
        n=0
        for f in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
            [ -f "$f" ] || continue
            cp "$f" "$SEEDS.tmp/$(basename "$(dirname "$f")").onnx"
            n=$((n + 1))
        done
        # tensors are protobuf too: a sample of the tests' inputs
        i=0
        for f in /usr/share/libonnx-testdata/data/node/*/test_data_set_0/input_0.pb; do
            [ -f "$f" ] || continue
            i=$((i + 1))
            [ $((i % 8)) -eq 0 ] && [ "$(stat -c %s "$f")" -lt 65536 ] &&
                cp "$f" "$SEEDS.tmp/pb-$(basename "$(dirname "$(dirname "$f")")").pb"
        done
        for f in "$ROOT"/build*/models-*/*.onnx "$ROOT"/build*/models-*/*/*.onnx; do
            [ -f "$f" ] && [ "$(stat -c %s "$f")" -lt 1048576 ] && cp "$f" "$SEEDS.tmp/" || true
        done
        # tiny transformers and a CNN exported with dynamic axes (symbolic shape inference,
        # exporters' Shape -> Gather -> Concat -> Reshape subgraphs), when PyTorch is here
        /usr/bin/python3 - "$SEEDS.tmp" "$ROOT/tests/models" <<'PY' 2>/dev/null || true
import sys, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, sys.argv[2])
import torch, export as ex
d = sys.argv[1]
torch.manual_seed(0)
for name, m, args, ins, outs, axes in [
        ("bert", ex.Bert(1, 8, 2, 16, 11, 4), (torch.zeros(1, 4, dtype=torch.int64),
                                              torch.ones(1, 4, dtype=torch.int64)),
         ["input_ids", "attention_mask"], ["h", "p"],
         {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}),
        ("gpt2", ex.Gpt2(1, 8, 2, 11, 4, max_pos=16), (torch.zeros(1, 4, dtype=torch.int64),),
         ["input_ids"], ["logits"], {"input_ids": {0: "batch", 1: "seq"}}),
        ("cnn", torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, 2, 1), torch.nn.ReLU(),
                                    torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                                    torch.nn.Linear(16, 5)),
         (torch.zeros(1, 3, 8, 8),), ["x"], ["y"], {"x": {0: "batch"}})]:
    m.eval()
    for op in (13, 17):
        torch.onnx.export(m, args, "%s/dyn-%s-op%d.onnx" % (d, name, op), opset_version=op,
                          input_names=ins, output_names=outs, dynamic_axes=axes,
                          do_constant_folding=op > 13)
PY
        ;;
    npy)
        /usr/bin/python3 - "$SEEDS.tmp" <<'PY'
import sys, numpy as np
d = sys.argv[1]
arrays = [np.zeros((2, 3), np.float32), np.arange(7, dtype=np.int64), np.array(3.5),
          np.ones((1, 2, 1, 2), np.float16), np.array([True, False]), np.zeros((0, 4), np.uint8),
          np.arange(6, dtype=">i4"), np.asfortranarray(np.ones((2, 2))), np.zeros(3, np.float64)]
for i, a in enumerate(arrays):
    np.save("%s/a%d.npy" % (d, i), a)
PY
        ;;
    model-file)
        H=${HIDETC:-$ROOT/build/hidetc}
        [ -x "$H" ] || cmake --build "$ROOT/build" --target hidetc -j"$JOBS" >/dev/null
        for m in resnet18-tiny bert-tiny; do
            HIDETC_CACHE_DIR="$B/cache" "$H" compile "builtin:$m" -o "$SEEDS.tmp/$m.hcm" --threads 1 \
                >/dev/null 2>&1 || echo "scripts/fuzz.sh: note: could not compile builtin:$m" >&2
        done
        # a model with symbols (batch, seq): symbols, constraints, symbolic dims, kernels'
        # symbol parameters
        /usr/bin/python3 - "$SEEDS.tmp" <<'PY' 2>/dev/null &&
import sys, numpy as np, onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
W = np.ones((6, 4), np.float32)
nodes = [h.make_node("MatMul", ["x", "W"], ["xw"]), h.make_node("Softmax", ["xw"], ["y"], axis=-1),
         h.make_node("Shape", ["x"], ["s"]), h.make_node("Reshape", ["x", "r"], ["z"])]
g = h.make_graph(nodes, "sym", [h.make_tensor_value_info("x", T.FLOAT, ["batch", "seq", 6])],
                 [h.make_tensor_value_info("y", T.FLOAT, ["batch", "seq", 4]),
                  h.make_tensor_value_info("z", T.FLOAT, None)],
                 initializer=[nh.from_array(W, "W"), nh.from_array(np.array([-1, 6], np.int64), "r")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, sys.argv[1] + "/sym.onnx")
PY
            { HIDETC_CACHE_DIR="$B/cache" "$H" compile "$SEEDS.tmp/sym.onnx" -o "$SEEDS.tmp/sym.hcm" \
                  --threads 1 >/dev/null 2>&1 || echo "scripts/fuzz.sh: note: could not compile sym.onnx" >&2
              rm -f "$SEEDS.tmp/sym.onnx"; }
        # a model with a dispatch set (kernels tuned to two configs at two bindings)
        [ -x "$ROOT/build/test_dispatch" ] || cmake --build "$ROOT/build" --target test_dispatch -j"$JOBS" >/dev/null
        HIDETC_CACHE_DIR="$B/cache" "$ROOT/build/test_dispatch" --save "$SEEDS.tmp/dispatch.hcm" >/dev/null 2>&1 ||
            echo "scripts/fuzz.sh: note: could not write the dispatch seed" >&2
        ;;
    mapping)
        i=0
        for e in 'spatial(4,8)' 'repeat(2,2)' 'spatial(4,8).repeat(2u,2p)' 'repeat(3).spatial(5)' \
            'auto_map((8,96),64)' 'spatial(2,3,4).repeat(1,2,1).spatial(2,1,1)' \
            'auto_map((7,5),35)' 'repeat(4u,4u,2)' 'spatial(1)'; do
            printf '%s' "$e" >"$SEEDS.tmp/m$i"
            i=$((i + 1))
        done
        ;;
    records)
        printf 'hidetc-tune 1\nbest 3\nbest_ms 0.412000\nncand 24\ndesc candidate 3 of 24, 0.4120 ms\n' >"$SEEDS.tmp/tune"
        printf 'hidetc-tune 1\nbest 0\nbest_ms 1e-3\nncand 1\n' >"$SEEDS.tmp/tune1"
        printf 'hidetc-so 1\nsize 15888\nhash 52ed17fea135efad715d15b8e10a147a\n' >"$SEEDS.tmp/stamp"
        ;;
    esac
    mv "$SEEDS.tmp" "$SEEDS"
fi
echo "scripts/fuzz.sh: $NAME for $SECONDS_TO_RUN s: $(ls "$SEEDS" | wc -l) seeds, corpus $CORPUS"

# -rss_limit_mb: an input that makes the library take 2 GB is a finding (OOM), as is one
# that takes 10 s (timeout). Leaks are findings too (detect_leaks).
set +e
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}" \
UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
HIDETC_CACHE_DIR="$B/cache-fuzz" \
"$B/fuzz_$BIN" -max_total_time="$SECONDS_TO_RUN" -rss_limit_mb=2048 -timeout=10 \
    -max_len=$([ "$NAME" = model-file ] && echo 1048576 || echo 262144) \
    -artifact_prefix="$ART/" -print_final_stats=1 "$@" "$CORPUS" "$SEEDS" 2>&1 | tee "$B/$NAME.log" |
    grep -E "^#[0-9]+[[:space:]]+(DONE|pulse)|ERROR|SUMMARY|Test unit written|stat::|==[0-9]+==|fuzz check"
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
    echo "scripts/fuzz.sh: $NAME FAILED (exit $rc); reproducer(s):" >&2
    grep -o "Test unit written to .*" "$B/$NAME.log" | sed 's/Test unit written to /  /' >&2 || true
    echo "  full log: $B/$NAME.log" >&2
    exit 1
fi
echo "scripts/fuzz.sh: $NAME: no crash in $SECONDS_TO_RUN s"
