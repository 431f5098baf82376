#!/usr/bin/env bash
# Full-size builtin models (part of `make test-models`): builtin:resnet50 and builtin:bert
# compile and run through `hidetc run` (its deterministic random inputs), and their outputs
# have the declared shapes, are finite and not constant. (The tiny variants are compared
# with the reference evaluator in test_builtin; the interpreter is too slow at full size.)
#   builtin_full.sh HIDETC OUT_DIR
set -uo pipefail
PY=${HIDETC_PYTHON:-/usr/bin/python3}
hidetc=$1 out=$2
"$PY" -c 'import numpy' 2>/dev/null || { echo "SKIP: $PY has no numpy"; exit 77; }
failed=0
check() { # model, then NAME:SHAPE for each output
    local model=$1 dir=$out/builtin-$1
    shift
    rm -rf "$dir" && mkdir -p "$dir"
    if ! "$hidetc" run "builtin:$model" --output-dir "$dir" --threads 2 >"$dir.log" 2>&1; then
        echo "FAIL builtin:$model: hidetc run failed:"
        tail -n 5 "$dir.log" | sed 's/^/    /'
        failed=$((failed + 1))
        return
    fi
    local result
    result=$("$PY" - "$dir" "$@" <<'PYEOF'
import sys, numpy as np
ok = True
for spec in sys.argv[2:]:
    name, shape = spec.split(":")
    x = np.load("%s/%s.npy" % (sys.argv[1], name))
    want = tuple(int(d) for d in shape.split("x"))
    good = x.shape == want and np.isfinite(x).all() and float(x.std()) > 0
    print("    %s: shape %s, min %.3g max %.3g std %.3g %s" % (
        name, "x".join(map(str, x.shape)), x.min(), x.max(), x.std(), "OK" if good else "BAD"))
    ok &= bool(good)
sys.exit(0 if ok else 1)
PYEOF
    )
    if [ $? -eq 0 ]; then
        echo "PASS builtin:$model"
    else
        echo "FAIL builtin:$model"
        failed=$((failed + 1))
    fi
    echo "$result"
}
check resnet50 logits:1x1000
check bert last_hidden_state:1x128x768 pooler_output:1x768
echo "$((2 - failed)) passed, $failed failed"
[ $failed -eq 0 ]
