#!/usr/bin/env bash
# cli_dynamic.sh HIDETC SOURCE_DIR — dynamic shapes (docs/dynamic.md): models exported from
# PyTorch with dynamic axes (a CNN with a symbolic batch; a BERT-style encoder, a GPT-style
# decoder and a recurrent tagger with symbolic batch and sequence, whose Reshapes are built
# from Shape ops), small variants at opsets 13 and 17.
#  - test_sym_infer: the symbolic shapes of every tensor against the shapes inferred with
#    the symbols fixed (--dim), at three bindings each; the constraints hold there;
#  - `hidetc inspect` prints the symbolic inputs, outputs, symbols and constraints;
#  - a binding that breaks a constraint is refused naming the node; --dim-hint sets hints;
#  - ResNet-50, BERT and GPT-2 compile once (`hidetc compile`, the symbols kept in the
#    file) and that file runs at three bindings (batch 2 seq 7, batch 3 seq 17, batch 1
#    seq 1), against PyTorch's
#    outputs there; the tagger, whose unrolled LSTM fixes the sequence, runs with --input
#    files whose shapes fix the symbols (kernels for that shape, with a note); wrong shapes
#    (rank, a fixed dimension, `seq` differing between inputs, a broken constraint) are
#    errors naming the input, the dimension and the expected value;
#  - compiling the tagger without inputs needs fixed symbols: the error names the node;
#  - BERT tuned at two sequence lengths (--tune 1 --tune-shapes seq=7,17: a dispatch
#    table where the winners differ) runs right at both shapes and benches at one between;
#    the --tune-shapes errors.
# Exits 77 without PyTorch (like the model tests).
set -u
HIDETC=$1 SRC=$2
PY=${HIDETC_PYTHON:-/usr/bin/python3}
BUILD=$(cd "$(dirname "$HIDETC")" && pwd)
CHECK=$BUILD/test_sym_infer
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

if ! "$PY" -c 'import torch, torchvision, onnx, numpy' 2>/dev/null; then
    echo "SKIP: needs $PY with torch, torchvision, onnx and numpy"
    exit 77
fi
[ -x "$CHECK" ] || { echo "FAIL: $CHECK is not built"; exit 1; }
OUT=$BUILD/models-dynamic
bash "$SRC/tests/models/export_cached.sh" "$OUT" --small --dynamic --opset 13 17 \
    --models resnet50 bert gpt2 tagger || exit 1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# every tensor at three bindings, both opsets
for m in resnet50 bert gpt2 tagger; do
    case $m in
    resnet50) b=(batch=1 batch=3 batch=8) ;;
    *) b=(batch=1,seq=1 batch=3,seq=17 batch=2,seq=64) ;;
    esac
    for op in 13 17; do
        f=$OUT/$m-small-dyn/model_op$op.onnx
        "$CHECK" "$f" "${b[@]}" >"$TMP/log" 2>&1 || fail "$m op$op: $(grep -m3 FAIL "$TMP/log")"
        grep -q "0 failed" "$TMP/log" || fail "$m op$op: $(tail -3 "$TMP/log")"
        n=$(grep -c "tensors compared" "$TMP/log")
        [ "$n" -eq 3 ] || fail "$m op$op: $n bindings compared, expected 3"
    done
done

# inspect: the symbolic shapes
ins() { "$HIDETC" inspect "$@" >"$TMP/out" 2>"$TMP/err" || fail "inspect $*: $(head -c 300 "$TMP/err")"; }
has() { grep -qF -- "$1" "$TMP/out" || fail "inspect: no '$1' in: $(head -c 600 "$TMP/out")"; }
ins "$OUT/resnet50-small-dyn/model_op17.onnx"
has "input: f32 [batch, 3, "
has "logits: f32 [batch, 1000]"
has "symbols: batch (hint 16)"
ins "$OUT/gpt2-small-dyn/model_op13.onnx"
has "input_ids: i64 [batch, seq]"
has "logits: f32 [batch, seq, 1000]"
has "seq <= 1024"
ins "$OUT/bert-small-dyn/model_op17.onnx" --dim-hint seq=100 --dim batch=2
has "last_hidden_state: f32 [2, seq, 768]"
has "pooler_output: f32 [2, 768]"
has "symbols: seq (hint 100)"
# a hint that breaks a constraint: named
"$HIDETC" inspect "$OUT/bert-small-dyn/model_op17.onnx" --dim-hint seq=600 >"$TMP/out" 2>"$TMP/err" &&
    fail "inspect --dim-hint seq=600 passed"
grep -qF "hint values batch=16, seq=600" "$TMP/err" ||
    fail "hint seq=600: $(head -c 400 "$TMP/err")"
# scheduling needs fixed symbols
"$HIDETC" inspect "$OUT/resnet50-small-dyn/model_op17.onnx" --fusion >"$TMP/out" 2>"$TMP/err" &&
    fail "inspect --fusion of a symbolic model passed"
grep -qF -- "--dim NAME=N" "$TMP/err" || fail "inspect --fusion: $(head -c 400 "$TMP/err")"
"$HIDETC" run "$OUT/resnet50-small-dyn/model_op17.onnx" >"$TMP/out" 2>"$TMP/err" ||
    fail "run of a symbolic ResNet at its hints: $(head -c 400 "$TMP/err")"
grep -qF "symbols: batch=16" "$TMP/out" || fail "run at the hints: $(head -c 400 "$TMP/out")"
grep -qF "output logits: f32 [16, 1000]" "$TMP/out" || fail "run at the hints: $(head -c 400 "$TMP/out")"
"$HIDETC" compile "$OUT/tagger-small-dyn/model_op17.onnx" -o "$TMP/tagger.hcm" >"$TMP/out" 2>"$TMP/err" &&
    fail "compile of the symbolic tagger passed"
grep -qF "fix them with --dim" "$TMP/err" || fail "compile tagger: $(head -c 400 "$TMP/err")"
# and with them fixed it runs
"$HIDETC" run "$OUT/resnet50-small-dyn/model_op17.onnx" --dim batch=2 >"$TMP/out" 2>"$TMP/err" ||
    fail "run --dim batch=2: $(head -c 400 "$TMP/err")"

# run at two bindings other than the export's, against PyTorch's outputs there: one
# compiled file for both where every kernel is symbolic, else kernels for each shape
meta() { "$PY" -c 'import json,sys; m=json.load(open(sys.argv[1])); print(*m[sys.argv[2]])' "$1" "$2"; }
for m in resnet50 bert gpt2 tagger; do
    d=$OUT/$m-small-dyn
    file=$d/model_op17.onnx
    case $m in
    resnet50 | bert | gpt2)
        "$HIDETC" compile "$file" -o "$TMP/$m.hcm" >"$TMP/out" 2>"$TMP/err" ||
            fail "compile $m with its symbols: $(tail -c 400 "$TMP/err")"
        file=$TMP/$m.hcm ;;
    esac
    for sh in $(meta "$d/meta.json" shapes); do
        ins=()
        for i in $(meta "$d/meta.json" inputs); do ins+=(--input "$i=$d/shapes/$sh/inputs/$i.npy"); done
        rm -rf "$TMP/got" && mkdir -p "$TMP/got"
        "$HIDETC" run "$file" "${ins[@]}" --output-dir "$TMP/got" --verbose \
            >"$TMP/out" 2>"$TMP/err" || { fail "run $m at $sh: $(tail -c 400 "$TMP/err")"; continue; }
        b=${sh#batch}; b=${b%%_*}
        case $m in
        resnet50) grep -qF "symbols: batch=$b" "$TMP/out" || fail "run $m at $sh: no symbols line" ;;
        bert | gpt2) grep -qF "symbols: batch=$b seq=" "$TMP/out" || fail "run $m at $sh: no symbols line" ;;
        *) grep -qF "the inputs fix" "$TMP/err" || fail "run $m at $sh: no binding note" ;;
        esac
        "$PY" "$SRC/tests/models/compare.py" "$d/shapes/$sh/expected" "$TMP/got" \
            $(meta "$d/meta.json" outputs) >"$TMP/cmp" 2>&1 || fail "run $m at $sh: $(cat "$TMP/cmp")"
    done
done
# tuned at two sequence lengths (--tune-shapes; a dispatch table where the winners
# differ): one file, right at both shapes and at one between them
d=$OUT/bert-small-dyn
"$HIDETC" compile "$d/model_op17.onnx" -o "$TMP/bert-tuned.hcm" --tune 1 --tune-shapes seq=7,17 \
    --dim-hint batch=2 --verbose >"$TMP/out" 2>"$TMP/err" ||
    fail "compile bert --tune-shapes: $(tail -c 400 "$TMP/err")"
grep -q "hidetc: tuning" "$TMP/err" || fail "compile bert --tune-shapes: tuned nothing"
for sh in $(meta "$d/meta.json" shapes); do
    ins=()
    for i in $(meta "$d/meta.json" inputs); do ins+=(--input "$i=$d/shapes/$sh/inputs/$i.npy"); done
    rm -rf "$TMP/got" && mkdir -p "$TMP/got"
    "$HIDETC" run "$TMP/bert-tuned.hcm" "${ins[@]}" --output-dir "$TMP/got" >"$TMP/out" 2>"$TMP/err" ||
        { fail "run tuned bert at $sh: $(tail -c 400 "$TMP/err")"; continue; }
    "$PY" "$SRC/tests/models/compare.py" "$d/shapes/$sh/expected" "$TMP/got" \
        $(meta "$d/meta.json" outputs) >"$TMP/cmp" 2>&1 || fail "run tuned bert at $sh: $(cat "$TMP/cmp")"
done
"$HIDETC" bench "$TMP/bert-tuned.hcm" --bind batch=1 --bind seq=11 --repeat 2 --profile 3 \
    >"$TMP/out" 2>"$TMP/err" || fail "bench tuned bert at seq=11: $(tail -c 400 "$TMP/err")"
grep -q "^median_ms" "$TMP/out" || fail "bench tuned bert: no median"
"$HIDETC" compile "$d/model_op17.onnx" -o "$TMP/x.hcm" --tune-shapes seq=7 >"$TMP/out" 2>"$TMP/err" &&
    fail "--tune-shapes without --tune passed"
grep -qF -- "--tune-shapes: tuning is off" "$TMP/err" || fail "--tune-shapes without --tune: $(cat "$TMP/err")"
"$HIDETC" compile "$d/model_op17.onnx" -o "$TMP/x.hcm" --tune 1 --tune-shapes sq=7 >"$TMP/out" 2>"$TMP/err" &&
    fail "--tune-shapes sq passed"
grep -qF "the model has no such symbol (its symbols: batch, seq)" "$TMP/err" ||
    fail "--tune-shapes sq: $(cat "$TMP/err")"
"$HIDETC" compile "$d/model_op17.onnx" -o "$TMP/x.hcm" --tune 1 --tune-shapes seq=7,x >"$TMP/out" 2>"$TMP/err" &&
    fail "--tune-shapes seq=7,x passed"
grep -qF "expects sizes of at least 1" "$TMP/err" || fail "--tune-shapes seq=7,x: $(cat "$TMP/err")"

# wrong input shapes: the input, the dimension and the expected value named
B=$OUT/bert-small-dyn
"$PY" - "$TMP" <<'PY'
import sys, numpy as np
d = sys.argv[1]
np.save(d + "/ids_2x7.npy", np.zeros((2, 7), np.int64))
np.save(d + "/mask_2x5.npy", np.ones((2, 5), np.int64))
np.save(d + "/ids_3d.npy", np.zeros((2, 7, 1), np.int64))
np.save(d + "/ids_2x600.npy", np.zeros((2, 600), np.int64))
np.save(d + "/mask_2x600.npy", np.ones((2, 600), np.int64))
np.save(d + "/img_1ch.npy", np.zeros((2, 1, 64, 64), np.float32))
PY
rerr() { # PATTERN -- ARGS: hidetc run ARGS fails with PATTERN on stderr
    local p=$1
    shift 2
    "$HIDETC" run "$@" >"$TMP/out" 2>"$TMP/err" && fail "run $* passed"
    grep -qF -- "$p" "$TMP/err" || fail "run $*: no '$p' in: $(head -c 400 "$TMP/err")"
}
rerr "input 'attention_mask', dimension 1 ('seq'): 5 given, but 'seq' is 7 from input 'input_ids', dimension 1" -- \
    "$B/model_op17.onnx" --input input_ids="$TMP/ids_2x7.npy" --input attention_mask="$TMP/mask_2x5.npy"
rerr "input 'input_ids' has 3 dimensions, the model's has 2: [batch, seq]" -- \
    "$B/model_op17.onnx" --input input_ids="$TMP/ids_3d.npy" --input attention_mask="$TMP/mask_2x5.npy"
rerr "needs seq <= 512, but seq = 600" -- \
    "$B/model_op17.onnx" --input input_ids="$TMP/ids_2x600.npy" --input attention_mask="$TMP/mask_2x600.npy"
# one input fixes both symbols; the other input is random at that shape
"$HIDETC" run "$B/model_op17.onnx" --input input_ids="$TMP/ids_2x7.npy" >"$TMP/out" 2>"$TMP/err" ||
    fail "run with input_ids only: $(head -c 400 "$TMP/err")"
grep -qF "input attention_mask: i64 [2, 7] random" "$TMP/out" ||
    fail "run with input_ids only: $(head -c 400 "$TMP/out")"
grep -qF "output last_hidden_state: f32 [2, 7, 768]" "$TMP/out" ||
    fail "run with input_ids only: $(head -c 400 "$TMP/out")"
rerr "input 'input', dimension 1: 1 given, the model's is 3" -- \
    "$OUT/resnet50-small-dyn/model_op17.onnx" --input input="$TMP/img_1ch.npy"

if [ $fails -ne 0 ]; then
    echo "cli_dynamic: $fails failure(s)"
    exit 1
fi
echo "cli_dynamic: all passed"
