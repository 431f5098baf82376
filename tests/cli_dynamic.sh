#!/usr/bin/env bash
# cli_dynamic.sh HIDETC SOURCE_DIR — dynamic shapes (docs/dynamic.md): models exported from
# PyTorch with dynamic axes (a CNN with a symbolic batch; a BERT-style encoder, a GPT-style
# decoder and a recurrent tagger with symbolic batch and sequence, whose Reshapes are built
# from Shape ops), small variants at opsets 13 and 17.
#  - test_sym_infer: the symbolic shapes of every tensor against the shapes inferred with
#    the symbols fixed (--dim), at three bindings each; the constraints hold there;
#  - `hidetc inspect` prints the symbolic inputs, outputs, symbols and constraints;
#  - a binding that breaks a constraint is refused naming the node; --dim-hint sets hints;
#  - compiling still needs fixed symbols: the error says how.
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
"$HIDETC" run "$OUT/resnet50-small-dyn/model_op17.onnx" >"$TMP/out" 2>"$TMP/err" &&
    fail "run of a symbolic model without --dim passed"
grep -qF "symbolic dimension 'batch'" "$TMP/err" || fail "run: $(head -c 400 "$TMP/err")"
# and with them fixed it runs
"$HIDETC" run "$OUT/resnet50-small-dyn/model_op17.onnx" --dim batch=2 >"$TMP/out" 2>"$TMP/err" ||
    fail "run --dim batch=2: $(head -c 400 "$TMP/err")"

if [ $fails -ne 0 ]; then
    echo "cli_dynamic: $fails failure(s)"
    exit 1
fi
echo "cli_dynamic: all passed"
