#!/usr/bin/env python3
"""The coefficients of hc_erff and hc_verf (src/target/cpu/emit_c.c, the generated code's
prelude and its vector family).

|x| is clamped to 4 and [0, 4] cut in 8 intervals of 1/2, i = floor(2 |x|); on each a
polynomial of degree 6 in t = |x| - (i / 2 + 1 / 4), |t| <= 1/4:
  i = 0:      erf(x) / x     (minimax in relative error), erf = |x| P0(t)
  i = 1..7:   -erfc(x)       (minimax in absolute error), erf = 1 + Pi(t)
the sign put back after. The vector code fetches each coefficient of its lanes' intervals
with one permute from an 8-entry table, so every lane runs one polynomial: no branches
computed twice, no exponential. Weighted least squares on Chebyshev nodes, reweighted
towards the largest errors (Lawson's iteration); then the float32 evaluation (with and
without FMA contraction) is swept over 3 million points in [0, 4.5] and powers of two
down to 2^-126 against math.erf, and the worst error in ulp printed. Needs numpy.
Run: python3 scripts/fit_erf.py
"""
from math import erf, erfc

import numpy as np

N = 2000
DEG = 6
W = 0.5  # interval width
NI = 8   # intervals: [0, 4]


def nodes(lo, hi):
    t = np.cos(np.pi * (np.arange(N) + 0.5) / N)
    return lo + (hi - lo) * (t + 1) / 2


def minimax(xs, ys, deg, rel, iters=60):
    V = np.vstack([xs ** k for k in range(deg + 1)]).T
    w = np.ones(len(xs))
    for _ in range(iters):
        Wt = w / rel
        c, *_ = np.linalg.lstsq(V * Wt[:, None], ys * Wt, rcond=None)
        err = np.abs(V @ c - ys) / rel
        w = w * (err / err.max()) + 1e-14
        w /= w.max()
    return c, err.max()


def fit():
    table = []
    for i in range(NI):
        lo, hi = i * W, (i + 1) * W
        mid = lo + W / 2
        if i == 0:
            x = nodes(1e-6, hi)
            g = np.array([erf(v) / v for v in x])
            c, e = minimax(x - mid, g, DEG, g)
        else:
            x = nodes(lo, hi)
            g = np.array([-erfc(v) for v in x])
            c, e = minimax(x - mid, g, DEG, np.ones(len(x)))
        print("interval %d [%.1f, %.1f): fit error %.2g (%s)" %
              (i, lo, hi, e, "relative" if i == 0 else "absolute"))
        table.append(c)
    return np.array(table, dtype=np.float32)  # [interval][power]


def evaluate(C, xs, fma):
    f32 = lambda a: np.asarray(a, dtype=np.float32)
    ax = np.minimum(np.abs(xs), np.float32(4.0))
    i = np.minimum((ax * np.float32(2)).astype(np.int32), NI - 1)
    t = f32(ax - f32(i.astype(np.float32) * np.float32(0.5) + np.float32(0.25)))
    p = C[i, DEG].copy()
    for j in range(DEG - 1, -1, -1):
        p = f32(p.astype(np.float64) * t + C[i, j]) if fma else f32(f32(p * t) + C[i, j])
    r = np.where(i == 0, f32(ax * p), f32(np.float32(1) + p))
    return np.copysign(r, xs)


def main():
    C = fit()
    xs = np.linspace(0, 4.5, 3000001).astype(np.float32)
    xs = np.concatenate([xs, np.float32(2.0) ** np.arange(-126, 0, 0.173).astype(np.float32)])
    ref = np.array([erf(float(v)) for v in xs])
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    for fma in (False, True):
        e = np.abs(evaluate(C, xs, fma).astype(np.float64) - ref) / ulp
        print("float32 evaluation, %s FMA: worst %.3f ulp at x = %.7g" %
              ("with" if fma else "without", e.max(), xs[e.argmax()]))
    print("coefficients (power j, intervals 0..7):")
    for j in range(DEG + 1):
        print("  {" + ", ".join("%.9e" % float(C[i, j]) for i in range(NI)) + "}")


if __name__ == "__main__":
    main()
