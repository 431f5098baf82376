#!/bin/bash
# cli_cache.sh HIDETC SOURCE_DIR — the kernel cache under concurrency and crashes
# (docs/reliability.md, "The kernel cache"): four processes compiling and tuning one
# model into one cache at once all succeed with identical outputs; compiles killed with
# SIGKILL at random points leave a cache the next run uses; a truncated or altered shared
# object is reported, rebuilt and never loaded; `hidetc cache info|prune|clear`.
set -u
HIDETC=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
export HIDETC_CACHE_DIR="$TMP/cache" HIDETC_NO_PROGRESS=1
MODEL=builtin:bert-tiny
run() { # run OUTDIR [ARGS]: the model with --tune 1 on one thread
    local out=$1
    shift
    mkdir -p "$out"
    "$HIDETC" run $MODEL --tune 1 --threads 1 --output-dir "$out" "$@" >"$out/stdout" 2>"$out/stderr"
}
same_outputs() { # same_outputs DIR_A DIR_B
    local n=0
    for f in "$1"/*.npy; do
        cmp -s "$f" "$2/$(basename "$f")" || return 1
        n=$((n + 1))
    done
    [ $n -gt 0 ]
}

# 1. four processes at once into one empty cache
for i in 1 2 3 4; do run "$TMP/p$i" & done
wait
for i in 1 2 3 4; do
    [ -s "$TMP/p$i/stdout" ] && ! grep -q . "$TMP/p$i/stderr" ||
        fail "concurrent run $i: $(head -c 600 "$TMP/p$i/stderr")"
    same_outputs "$TMP/p1" "$TMP/p$i" || fail "concurrent run $i: outputs differ from run 1"
done
"$HIDETC" cache info >"$TMP/info" || fail "cache info: exit $?"
grep -q "^cache: $HIDETC_CACHE_DIR$" "$TMP/info" || fail "cache info: no cache line: $(cat "$TMP/info")"
grep -qE "^  tune records \(tune/\) +[1-9]" "$TMP/info" || fail "cache info: no tune records: $(cat "$TMP/info")"
grep -qE "^  shared objects \(.so, stamps\) +[1-9]" "$TMP/info" || fail "cache info: no .so: $(cat "$TMP/info")"

# 2. a later run finds everything: no compile, no tuning, the same outputs. Tune records
# are kept per kernel (last writer wins) and shared objects per source chunk: when the
# four tuners disagreed on a winner (a loaded machine), the winners the records hold may
# combine programs of different processes into a chunk none of them built, and the first
# run after them builds it once. The run after that must build nothing.
sleep 1.1 # a newer modification time than the first runs'
run "$TMP/settle" --verbose
same_outputs "$TMP/p1" "$TMP/settle" || fail "run after the concurrent ones: outputs differ"
grep -q "(0 cached)" "$TMP/settle/stderr" &&
    echo "note: the run after the concurrent ones built chunks (their tuners disagreed)"
sleep 1.1
touch "$TMP/marker"
run "$TMP/again" --verbose
grep -q "(0 cached)" "$TMP/again/stderr" && fail "second run compiled again"
grep -q "damaged" "$TMP/again/stderr" && fail "second run: $(grep damaged "$TMP/again/stderr")"
same_outputs "$TMP/p1" "$TMP/again" || fail "second run: outputs differ"
# --verbose says what tuning spent: nothing timed here, every winner from the records; a
# fresh cache times every task
grep -qE "^hidetc: tuning: 0 tasks timed .*, [1-9][0-9]* from the tuning records$" \
    "$TMP/again/stderr" || fail "second run: tuning line: $(grep tuning: "$TMP/again/stderr")"
HIDETC_CACHE_DIR="$TMP/cache_fresh" run "$TMP/fresh" --verbose
grep -qE "^hidetc: tuning: [1-9][0-9]* tasks timed \([1-9][0-9]* distinct candidates: compiling them [0-9.]+ s, timing them [0-9.]+ s\), 0 from the tuning records$" \
    "$TMP/fresh/stderr" || fail "fresh cache: tuning line: $(grep tuning: "$TMP/fresh/stderr")"
same_outputs "$TMP/p1" "$TMP/fresh" || echo "note: the fresh tuning picked other winners"

# 3. a truncated and an altered shared object: reported, rebuilt, never loaded
# the entries the run loads: their stamps were touched by the second run
sos=()
for st in $(find "$HIDETC_CACHE_DIR" -maxdepth 1 -name '*.so.stamp' -newer "$TMP/marker" | sort); do
    sos+=("${st%.stamp}")
done
[ ${#sos[@]} -ge 2 ] || fail "the second run touched ${#sos[@]} stamps (want >= 2)"
truncate -s $(($(stat -c %s "${sos[0]}") / 2)) "${sos[0]}"
printf 'X' | dd of="${sos[1]}" bs=1 seek=200 conv=notrunc status=none
run "$TMP/damaged"
[ $? -eq 0 ] || fail "run on a damaged cache: $(head -c 600 "$TMP/damaged/stderr")"
grep -qF "$(basename "${sos[0]}") is damaged (its size differs from its stamp's): rebuilding it" "$TMP/damaged/stderr" ||
    fail "truncated .so not reported: $(head -c 600 "$TMP/damaged/stderr")"
grep -qF "$(basename "${sos[1]}") is damaged (its bytes differ from its stamp's hash): rebuilding it" "$TMP/damaged/stderr" ||
    fail "altered .so not reported: $(head -c 600 "$TMP/damaged/stderr")"
same_outputs "$TMP/p1" "$TMP/damaged" || fail "damaged cache: outputs differ"
run "$TMP/repaired"
grep -q "damaged" "$TMP/repaired/stderr" && fail "rebuilt entries are damaged again"

# 4. compiles killed at random points, each into a cache cleared first; the next run works
for k in 1 2 3; do
    "$HIDETC" cache clear >/dev/null || fail "cache clear: exit $?"
    "$HIDETC" run $MODEL --tune 1 --threads 1 >/dev/null 2>&1 &
    pid=$!
    sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 0.2 + rand() * 4 }')"
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    run "$TMP/killed$k"
    [ $? -eq 0 ] || fail "run after a SIGKILL ($k): $(head -c 600 "$TMP/killed$k/stderr")"
    grep -qi "dlopen\|error" "$TMP/killed$k/stderr" && fail "after SIGKILL $k: $(head -c 600 "$TMP/killed$k/stderr")"
    same_outputs "$TMP/p1" "$TMP/killed$k" || fail "after SIGKILL $k: outputs differ"
done

# 5. prune to a size, clear
"$HIDETC" cache prune --max-size 100K >"$TMP/prune" || fail "cache prune: exit $?"
left=$(sed -n 's/.*; \([0-9]*\) bytes left$/\1/p' "$TMP/prune")
[ -n "$left" ] && [ "$left" -le 102400 ] || fail "cache prune: $(cat "$TMP/prune")"
"$HIDETC" cache clear >"$TMP/clear" || fail "cache clear: exit $?"
"$HIDETC" cache info | grep -q "^entries: 0, 0 bytes" || fail "cache clear left entries"
"$HIDETC" cache prune >/dev/null 2>&1
[ $? -eq 2 ] || fail "cache prune without --max-size: not a usage error"
"$HIDETC" cache prune --max-size 12x >/dev/null 2>&1
[ $? -eq 2 ] || fail "cache prune --max-size 12x: not a usage error"
run "$TMP/fresh"
same_outputs "$TMP/p1" "$TMP/fresh" || fail "after clear: outputs differ"

if [ $fails -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "cli_cache: all checks passed"
