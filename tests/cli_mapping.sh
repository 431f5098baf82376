#!/bin/bash
# cli_mapping.sh HIDETC SOURCE_DIR — checks `hidetc mapping`: text, JSON, SVG, errors.
set -u
HIDETC=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# --- text: the DESIGN.md example -------------------------------------------------------
out=$("$HIDETC" mapping 'spatial(4,8).repeat(2,2)') || fail "text: exit $?"
[ "$(sed -n 1p <<<"$out")" = "num_workers: 32" ] || fail "text: num_workers line"
[ "$(sed -n 2p <<<"$out")" = "task_shape: [8, 16]" ] || fail "text: task_shape line"
[ "$(grep -c '^worker ' <<<"$out")" = 32 ] || fail "text: expected 32 worker lines"
grep -qx 'worker 9: (2,2) (2,3) (3,2) (3,3)' <<<"$out" || fail "text: worker 9"

out=$("$HIDETC" mapping 'repeat(2,2).spatial(4,8)' --worker 9) || fail "text --worker: exit"
[ "$(sed -n 3,99p <<<"$out")" = "worker 9: (1,1) (1,9) (5,1) (5,9)" ] ||
    fail "text --worker 9: got '$out'"

# --- JSON: one object, checked with python ---------------------------------------------
"$HIDETC" mapping 'auto_map((8,96),64)' --json >"$TMP/a.json" || fail "json: exit"
python3 - "$TMP/a.json" <<'EOF' || fail "json: content"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["num_workers"] == 64, d["num_workers"]
assert d["task_shape"] == [8, 96]
assert sorted(d["workers"], key=int) == [str(w) for w in range(64)]
# repeat(4,3).spatial(2,32): worker w owns (2a + w//32, 32b + w%32), a-major order
for w, tasks in d["workers"].items():
    w = int(w)
    want = [[2 * a + w // 32, 32 * b + w % 32] for a in range(4) for b in range(3)]
    assert tasks == want, (w, tasks)
cells = sorted(tuple(t) for ts in d["workers"].values() for t in ts)
assert cells == [(i, j) for i in range(8) for j in range(96)]
EOF
out=$("$HIDETC" mapping 'spatial(2).repeat(3)' --json --worker 1) || fail "json --worker: exit"
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["workers"]=={"1":[[3],[4],[5]]}' \
    "$out" || fail "json --worker: '$out'"

# --- SVG: well-formed XML, one cell per task, workers get different colours ---------------
"$HIDETC" mapping 'spatial(4,8).repeat(2,2)' --svg "$TMP/m.svg" >/dev/null || fail "svg: exit"
python3 - "$TMP/m.svg" <<'EOF' || fail "svg: content"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
cells = [r for r in root.iter(ns + "rect") if r.find(ns + "title") is not None]
assert len(cells) == 8 * 16, len(cells)
owner = {}
for r in cells:
    words = r.find(ns + "title").text.split()   # task (i,j) worker W order K
    owner[words[1]] = (int(words[3]), r.get("fill"))
assert owner["(2,3)"][0] == 9 and owner["(7,15)"][0] == 31
fills = {}
for w, f in owner.values():
    fills.setdefault(w, set()).add(f)
assert all(len(s) == 1 for s in fills.values())           # one colour per worker
assert len({next(iter(s)) for s in fills.values()}) == 32  # distinct colours
labels = [t.text for t in root.iter(ns + "text") if t.get("class") == "w"]
assert labels.count("9") == 4, labels.count("9")
EOF

# --- errors ----------------------------------------------------------------------------
"$HIDETC" mapping 'spatial(4,8' 2>"$TMP/err" >/dev/null
[ $? = 1 ] || fail "bad expression: exit code"
grep -q 'column 12' "$TMP/err" || fail "bad expression: message '$(cat "$TMP/err")'"
"$HIDETC" mapping 'spatial(4)' --worker 4 2>"$TMP/err" >/dev/null
[ $? = 1 ] || fail "worker out of range: exit code"
grep -q 'out of range' "$TMP/err" || fail "worker out of range: message"
"$HIDETC" mapping 'spatial(4)' --svg "$TMP/no/such/dir/x.svg" 2>"$TMP/err" >/dev/null
[ $? = 1 ] || fail "unwritable svg: exit code"
[ -s "$TMP/err" ] || fail "unwritable svg: no message"
"$HIDETC" mapping 2>/dev/null >/dev/null
[ $? = 2 ] || fail "missing EXPR: exit code"
"$HIDETC" mapping 'spatial(4)' --bogus 2>/dev/null >/dev/null
[ $? = 2 ] || fail "unknown option: exit code"
"$HIDETC" mapping 'spatial(4)' --worker 2>/dev/null >/dev/null
[ $? = 2 ] || fail "--worker without value: exit code"

if [ $fails -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "cli_mapping: all passed"
