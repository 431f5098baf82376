#!/bin/bash
# cli_python.sh HIDETC SOURCE_DIR — the Python package (docs/python.md): `pip install` of the
# checkout (scikit-build-core builds libhidetc.so with CMake) into a venv made from Debian's
# python3 with its system packages (numpy, onnx, torch), then python/tests/test_session.py:
# metadata, run() against numpy, output subsets, zero-copy I/O, converted inputs, bytes,
# dims/shapes for a symbolic dimension, compile() + load, from_torch, errors, two threads.
#
# The venv and the library's build folder live under the build tree (HIDETC's folder,
# python-test/) and are kept: a rerun rebuilds only what changed and needs no network.
# Skipped (exit 77) without python3 + numpy + onnx + venv, or when PyPI cannot be reached
# for scikit-build-core on the first run.
set -u
HIDETC=$1
SRC=${2:-$(cd "$(dirname "$0")/.." && pwd)}
PY=${HIDETC_PYTHON:-/usr/bin/python3}
BT=$(cd "$(dirname "$HIDETC")" && pwd)
DIR=$BT/python-test
VENV=$DIR/venv
JOBS=${HIDETC_PYTHON_JOBS:-2}

skip() { echo "SKIP: $*"; exit 77; }
[ -x "$PY" ] || skip "no $PY"
"$PY" -c 'import numpy, onnx' 2>/dev/null ||
    skip "$PY lacks numpy or onnx (Debian: python3-numpy python3-onnx)"

mkdir -p "$DIR"
exec 9>"$DIR/lock"
flock 9 # one run at a time in this build tree

t0=$(date +%s)
if [ ! -x "$VENV/bin/python" ]; then
    rm -rf "$VENV"
    "$PY" -m venv --system-site-packages "$VENV" >"$DIR/venv.log" 2>&1 ||
        skip "$PY -m venv failed (Debian: python3-venv): $(tail -1 "$DIR/venv.log")"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check --no-input)
# The build backend, from PyPI, once; the package's own build runs without isolation, so
# a rerun needs no network.
if ! "$VENV/bin/python" -c 'import scikit_build_core' 2>/dev/null; then
    timeout 300 "${PIP[@]}" install -q --retries 1 --timeout 20 'scikit-build-core>=0.10' >"$DIR/backend.log" 2>&1 ||
        skip "could not install scikit-build-core from PyPI (no network?): $(tail -1 "$DIR/backend.log")"
fi
t1=$(date +%s)

# The package: the C library built in the private build folder (only hidetc_shared).
if ! CMAKE_BUILD_PARALLEL_LEVEL=$JOBS "${PIP[@]}" install --no-build-isolation --no-deps \
        --force-reinstall --config-settings=build-dir="$DIR/build" "$SRC" >"$DIR/pip.log" 2>&1; then
    tail -40 "$DIR/pip.log"
    echo "FAIL: pip install of $SRC (log: $DIR/pip.log)"
    exit 1
fi
t2=$(date +%s)
echo "pip install: $((t2 - t1)) s (venv and backend: $((t1 - t0)) s)"

# The installed package, not the checkout's python/ folder; a fresh kernel cache.
rm -rf "$DIR/cache" "$DIR/run"
mkdir -p "$DIR/cache" "$DIR/run"
cd "$DIR/run" || exit 1
unset HIDETC_LIBRARY
HIDETC_CACHE_DIR="$DIR/cache" "$VENV/bin/python" -c \
    'import hidetc, sys; print("hidetc", hidetc.__version__, "from", hidetc.__file__)' || {
    echo "FAIL: import hidetc"
    exit 1
}
# the suite runs under pytest (installed into the venv from PyPI with onnxruntime, the
# baseline of python/tests/test_ort.py; without them the tests run under unittest and the
# onnxruntime comparison is reported as not run)
# (numpy pinned to the system's: Debian's torch is built against it, a numpy from PyPI
# pulled in as a dependency would break it)
if ! "$VENV/bin/python" -c 'import pytest, onnxruntime' 2>/dev/null; then
    "$PY" -c 'import numpy; print("numpy==" + numpy.__version__)' >"$DIR/constraints.txt"
    timeout 600 "${PIP[@]}" install -q --retries 1 --timeout 30 -c "$DIR/constraints.txt" \
        pytest onnxruntime >"$DIR/pytest.log" 2>&1 ||
        echo "note: could not install pytest/onnxruntime from PyPI: $(tail -1 "$DIR/pytest.log")"
fi
if "$VENV/bin/python" -c 'import pytest' 2>/dev/null; then
    HIDETC_CACHE_DIR="$DIR/cache" timeout 900 "$VENV/bin/python" -m pytest -q -rs -p no:cacheprovider \
        "$SRC/python/tests" 2>&1
    rc=$?
else
    echo "note: no pytest: python/tests/test_session.py under unittest; test_ort.py NOT RUN"
    HIDETC_CACHE_DIR="$DIR/cache" timeout 600 "$VENV/bin/python" "$SRC/python/tests/test_session.py" 2>&1
    rc=$?
fi
t3=$(date +%s)
echo "tests: $((t3 - t2)) s; total $((t3 - t0)) s"
if [ $rc -ne 0 ]; then
    echo "FAIL: python/tests (exit $rc)"
    exit 1
fi
echo "PASS"
