#!/bin/bash
# cli_compile.sh HIDETC SOURCE_DIR — `hidetc compile MODEL -o FILE`, then `hidetc run FILE`
# with no compiler (HIDETC_CC=/nonexistent) and an empty kernel cache: the outputs must
# be byte-identical to a direct `hidetc run MODEL`, and the cache must stay empty. Also:
# the file is told by its magic bytes (any name), --threads must match the file, usage
# errors, and damaged files (truncated, one flipped byte, random bytes, not a model)
# fail with a message that names the file.
set -u
HIDETC=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
MODEL=builtin:resnet18-tiny

out=$("$HIDETC" compile "$MODEL" -o "$TMP/model.bin" --threads 2) || fail "compile: exit $?"
echo "$out"
echo "$out" | grep -Eq "^compiled $MODEL -> $TMP/model.bin: [0-9]+ kernels, [0-9]+ programs, [0-9]+ bytes, 2 threads, " ||
    fail "compile: summary line: $out"
[ -s "$TMP/model.bin" ] || fail "compile: no file"

# The direct run, then the file's, with neither a compiler nor a cache.
"$HIDETC" run "$MODEL" --threads 2 --output-dir "$TMP/direct" >"$TMP/direct.txt" ||
    fail "run MODEL: exit $?"
mkdir "$TMP/cache"
HIDETC_CACHE_DIR="$TMP/cache" HIDETC_CC=/nonexistent \
    "$HIDETC" run "$TMP/model.bin" --output-dir "$TMP/loaded" >"$TMP/loaded.txt" 2>"$TMP/loaded.err" ||
    fail "run FILE: exit $? ($(cat "$TMP/loaded.err"))"
[ -z "$(ls -A "$TMP/cache")" ] || fail "run FILE wrote into the kernel cache: $(ls -A "$TMP/cache")"
n=0
for f in "$TMP"/direct/*.npy; do
    n=$((n + 1))
    cmp -s "$f" "$TMP/loaded/$(basename "$f")" || fail "output $(basename "$f") differs"
done
[ "$n" -gt 0 ] || fail "the direct run wrote no outputs"
# the printed summaries too, except the "wrote" lines' directories
diff <(grep -v '^wrote ' "$TMP/direct.txt") <(grep -v '^wrote ' "$TMP/loaded.txt") >/dev/null ||
    fail "run summaries differ: $(diff "$TMP/direct.txt" "$TMP/loaded.txt")"

# Where the temporary directory is unusable, the libraries are loaded from a memfd.
TMPDIR=/nonexistent HIDETC_CACHE_DIR="$TMP/cache" HIDETC_CC=/nonexistent \
    "$HIDETC" run "$TMP/model.bin" --output-dir "$TMP/memfd" >/dev/null 2>"$TMP/e.txt" ||
    fail "run FILE with TMPDIR=/nonexistent: $(cat "$TMP/e.txt")"
for f in "$TMP"/direct/*.npy; do
    cmp -s "$f" "$TMP/memfd/$(basename "$f")" || fail "memfd: output $(basename "$f") differs"
done

# An explicit --input goes through as well.
in=$(ls "$TMP"/direct/*.npy | head -1)
iname=$("$HIDETC" run "$TMP/model.bin" | sed -n 's/^input \([^:]*\):.*/\1/p' | head -1)
HIDETC_CC=/nonexistent "$HIDETC" run "$TMP/model.bin" --input "$iname=$in" >/dev/null 2>"$TMP/e.txt" &&
    fail "run FILE --input with a wrong shape: exit 0"
grep -q "the model expects" "$TMP/e.txt" || fail "run FILE --input: $(cat "$TMP/e.txt")"

# --threads must match the file; the same count is fine.
HIDETC_CC=/nonexistent "$HIDETC" run "$TMP/model.bin" --threads 2 >/dev/null || fail "run FILE --threads 2"
"$HIDETC" run "$TMP/model.bin" --threads 1 >/dev/null 2>"$TMP/e.txt" && fail "run FILE --threads 1: exit 0"
grep -q "compiled for 2 threads" "$TMP/e.txt" || fail "--threads mismatch: $(cat "$TMP/e.txt")"

# Usage errors.
"$HIDETC" compile "$MODEL" >/dev/null 2>"$TMP/e.txt"
[ $? -eq 2 ] || fail "compile without -o: not exit 2"
grep -q -- "-o FILE" "$TMP/e.txt" || fail "compile without -o: $(cat "$TMP/e.txt")"
"$HIDETC" compile "$MODEL" -o "$TMP/x" --tune 7 >/dev/null 2>&1
[ $? -eq 2 ] || fail "compile --tune 7: not exit 2"
"$HIDETC" compile builtin:nope -o "$TMP/x" >/dev/null 2>"$TMP/e.txt" && fail "compile builtin:nope: exit 0"
[ -e "$TMP/x" ] && fail "a failed compile left $TMP/x"
# contradicting path options are an error naming both
for pair in "--no-direct --direct-all" "--no-winograd --winograd-all"; do
    "$HIDETC" compile "$MODEL" -o "$TMP/x" $pair >/dev/null 2>"$TMP/e.txt" && fail "compile $pair: exit 0"
    for o in $pair; do grep -q -- "$o" "$TMP/e.txt" || fail "compile $pair: $o not named: $(cat "$TMP/e.txt")"; done
    [ -e "$TMP/x" ] && fail "compile $pair left $TMP/x"
done
"$HIDETC" compile "$MODEL" -o "$TMP/x" --winograd-tile 3 >/dev/null 2>"$TMP/e.txt"
[ $? -eq 2 ] || fail "compile --winograd-tile 3: not exit 2"
grep -q -- "--winograd-tile" "$TMP/e.txt" || fail "--winograd-tile 3: $(cat "$TMP/e.txt")"
"$HIDETC" compile "$MODEL" -o "$TMP/x" --winograd-tile 5 >/dev/null 2>"$TMP/e.txt"
[ $? -eq 2 ] || fail "compile --winograd-tile 5: not exit 2"
"$HIDETC" compile "$MODEL" -o "$TMP/x" --winograd-tile 6 >/dev/null 2>"$TMP/e.txt" || fail "--winograd-tile 6: $(cat "$TMP/e.txt")"
rm -f "$TMP/x"
# both Winograd tiles run on ResNet-18 (224x224: its 3x3 convs take blocked Winograd) and
# give the default's outputs (below)
for t in default 2 4; do
    opt=""; [ $t = default ] || opt="--winograd-tile $t"
    "$HIDETC" run builtin:resnet18 --threads 2 $opt --output-dir "$TMP/r18$t" \
        >/dev/null 2>"$TMP/e.txt" || fail "run resnet18 $opt: $(cat "$TMP/e.txt")"
done
# --direct-all, --no-direct and --no-nchwc compile and run
for o in --direct-all --no-direct --no-nchwc; do
    "$HIDETC" run "$MODEL" --threads 2 $o --output-dir "$TMP/o$o" >/dev/null 2>"$TMP/e.txt" || fail "run $o: $(cat "$TMP/e.txt")"
done
# the channel-blocked layout (default) and NCHW (--no-nchwc) give the same outputs; so do
# ResNet-18's Winograd F(2x2) and F(4x4)
"$HIDETC" run "$MODEL" --threads 2 --output-dir "$TMP/odefault" >/dev/null 2>"$TMP/e.txt" || fail "run: $(cat "$TMP/e.txt")"
for pair in "$TMP/odefault $TMP/o--no-nchwc" "$TMP/r18default $TMP/r182" "$TMP/r18default $TMP/r184"; do
python3 - $pair <<'PY' || fail "outputs differ: $pair"
import array, os, sys
def load(path):  # an f32 .npy: magic, version, header length, header, data
    raw = open(path, "rb").read()
    hlen = int.from_bytes(raw[8:10], "little") if raw[6] == 1 else int.from_bytes(raw[8:12], "little")
    start = (10 if raw[6] == 1 else 12) + hlen
    assert b"<f4" in raw[:start], raw[:start]
    return raw[:start], array.array("f", raw[start:])
a, b = sys.argv[1], sys.argv[2]
names = sorted(f for f in os.listdir(a) if f.endswith(".npy"))
assert names and names == sorted(f for f in os.listdir(b) if f.endswith(".npy")), names
for f in names:
    (hx, x), (hy, y) = load(os.path.join(a, f)), load(os.path.join(b, f))
    err = max(abs(u - v) for u, v in zip(x, y)) / max(1.0, max(abs(v) for v in y))
    print(f, "max rel err", err)
    assert hx == hy and len(x) == len(y) and err < 1e-4, (f, err)
PY
done

# Damaged files: each fails (exit 1) with a message naming the file.
size=$(stat -c %s "$TMP/model.bin")
head -c 1000 "$TMP/model.bin" >"$TMP/trunc.bin"
python3 - "$TMP/model.bin" "$TMP/flip.bin" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) // 2] ^= 0x04
open(sys.argv[2], "wb").write(b)
PY
head -c 8 "$TMP/model.bin" >"$TMP/random.bin"
head -c 5000 /dev/urandom >>"$TMP/random.bin"
echo "hello" >"$TMP/text.bin"
check_bad() { # FILE EXPECTED-TEXT
    HIDETC_CC=/nonexistent "$HIDETC" run "$1" >/dev/null 2>"$TMP/e.txt"
    local rc=$?
    [ $rc -eq 1 ] || fail "run $1: exit $rc, expected 1"
    grep -q "$1" "$TMP/e.txt" || fail "run $1: the message does not name the file: $(cat "$TMP/e.txt")"
    grep -q "$2" "$TMP/e.txt" || fail "run $1: '$2' not in: $(cat "$TMP/e.txt")"
    grep -qi "sanitizer\|segmentation\|assert" "$TMP/e.txt" && fail "run $1: crashed: $(cat "$TMP/e.txt")"
    echo "  $(basename "$1"): $(head -1 "$TMP/e.txt")"
}
echo "damaged files ($size bytes originally):"
check_bad "$TMP/trunc.bin" "truncated"
check_bad "$TMP/flip.bin" "checksum"
check_bad "$TMP/random.bin" "compiled model"
check_bad "$TMP/text.bin" "ONNX" # no magic: taken for an ONNX file, which it is not either

# A compiled file is not a MODEL for compile (it is not a graph).
"$HIDETC" compile "$TMP/model.bin" -o "$TMP/y" >/dev/null 2>&1 && fail "compile FILE: exit 0"

if [ "$fails" -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "cli_compile: all checks passed"
