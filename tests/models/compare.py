#!/usr/bin/python3
"""Compare hidetc's outputs with PyTorch's: compare.py EXPECTED_DIR GOT_DIR NAME...

For each output NAME, EXPECTED_DIR/NAME.npy (PyTorch) against GOT_DIR/NAME.npy (hidetc):
same shape, no NaN/Inf where PyTorch has none, and
    max |got - expected| <= 1e-3 * max(1, max |expected|).
Prints one line per output: "NAME: max_err E tol T max_ref R OK|FAIL [reason]", and exits
1 when any output fails (2 on a usage error).
"""

import os
import sys

import numpy as np

RTOL = 1e-3


def compare(expected_path, got_path):
    """Returns (ok, max_err, tol, max_ref, reason)."""
    want = np.load(expected_path)
    if not os.path.exists(got_path):
        return False, float("nan"), float("nan"), float("nan"), "missing " + got_path
    got = np.load(got_path)
    max_ref = float(np.max(np.abs(want))) if want.size else 0.0
    tol = RTOL * max(1.0, max_ref)
    if got.shape != want.shape:
        return False, float("nan"), tol, max_ref, "shape %s, expected %s" % (got.shape,
                                                                              want.shape)
    if got.dtype != want.dtype:
        return False, float("nan"), tol, max_ref, "dtype %s, expected %s" % (got.dtype,
                                                                              want.dtype)
    if want.size == 0:
        return True, 0.0, tol, max_ref, ""
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    bad = ~np.isfinite(diff) & np.isfinite(want)
    if bad.any():
        return False, float("inf"), tol, max_ref, "%d non-finite values" % int(bad.sum())
    err = float(np.max(np.where(np.isfinite(diff), diff, 0.0)))
    return err <= tol, err, tol, max_ref, ""


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    expected_dir, got_dir, names = argv[1], argv[2], argv[3:]
    failed = 0
    for name in names:
        ok, err, tol, max_ref, reason = compare(os.path.join(expected_dir, name + ".npy"),
                                                os.path.join(got_dir, name + ".npy"))
        failed += not ok
        print("%s: max_err %.3g tol %.3g max_ref %.3g %s%s" % (
            name, err, tol, max_ref, "OK" if ok else "FAIL", " " + reason if reason else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
