#!/usr/bin/env python3
"""The coefficients of hc_erff (src/codegen/codegen_c.c, the generated code's prelude).

erf(x) = x S(x^2) for |x| < 1 (S of degree 5, minimax in relative error) and
erf(x) = 1 - exp(B(x)) for 1 <= x < 3.93 (B of degree 8, minimax in absolute error on
log erfc). Weighted least squares on Chebyshev nodes, reweighted towards the largest
errors (Lawson's iteration); coefficients printed as float literals. Needs numpy.
Run: python3 scripts/fit_erf.py
"""
from math import erf, erfc, log

import numpy as np

N = 3000


def nodes(lo, hi):
    t = np.cos(np.pi * (np.arange(N) + 0.5) / N)
    return lo + (hi - lo) * (t + 1) / 2


def minimax(xs, ys, deg, rel=None, iters=80):
    V = np.vstack([xs ** k for k in range(deg + 1)]).T
    w = np.ones(len(xs))
    for _ in range(iters):
        W = w if rel is None else w / rel
        c, *_ = np.linalg.lstsq(V * W[:, None], ys * W, rcond=None)
        err = np.abs(V @ c - ys) / (1 if rel is None else rel)
        w = w * (err / err.max()) + 1e-14
        w /= w.max()
    return c, err.max()


def main():
    x = nodes(0.0, 1.0)
    g = np.array([erf(v) / v for v in x])
    s, es = minimax(x * x, g, 5, rel=g)
    x = nodes(1.0, 3.93)
    b, eb = minimax(x, np.array([log(erfc(v)) for v in x]), 8)
    print("S (constant term first), max relative error %.2g:" % es)
    print("  " + ", ".join("%.9e" % float(np.float32(c)) for c in s))
    print("B (constant term first), max absolute error %.2g:" % eb)
    print("  " + ", ".join("%.9e" % float(np.float32(c)) for c in b))


if __name__ == "__main__":
    main()
