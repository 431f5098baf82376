#!/usr/bin/env python3
"""scripts/wino_mats.py — prints the Toom-Cook transform tables of src/task/winograd_mats.c.

    python3 scripts/wino_mats.py

For F(m, r) (m outputs of an r-tap correlation from a = m + r - 1 inputs) and the finite
points p_0 .. p_{a-2} plus infinity, y = A^T [(G g) . (B^T d)] with
  A^T[i][k] = p_k^i (the infinity column: 1 in row m - 1),
  G[k][j]   = p_k^j / prod_{l != k} (p_k - p_l) (the infinity row: 1 at j = r - 1),
  B^T[k]    = the coefficients of prod_{l != k} (x - p_l) (the infinity row: of prod_l (x - p_l)).
Exact rational arithmetic; each table is checked against the direct correlation of random
data before it is printed. F(2, 3) and F(4, 3) in the C file are Lavin and Gray's tables
(other row scalings of the same points), not printed here.
"""
from fractions import Fraction as Fr
import random

POINTS = {6: [0, 1, -1, 2, -2], 8: [0, 1, -1, 2, -2, Fr(1, 2), Fr(-1, 2)],
          10: [0, 1, -1, 2, -2, Fr(1, 2), Fr(-1, 2), Fr(3, 2), Fr(-3, 2)],
          12: [0, 1, -1, 2, -2, Fr(1, 2), Fr(-1, 2), Fr(3, 2), Fr(-3, 2), Fr(2, 3), Fr(-2, 3)]}


def polymul(p, q):
    out = [Fr(0)] * (len(p) + len(q) - 1)
    for i, x in enumerate(p):
        for j, y in enumerate(q):
            out[i + j] += x * y
    return out


def toom(m, r):
    a = m + r - 1
    fin = [Fr(p) for p in POINTS[a]]
    at = [[p ** i for p in fin] + [Fr(1 if i == m - 1 else 0)] for i in range(m)]
    g = []
    for k, pk in enumerate(fin):
        nk = Fr(1)
        for l, pl in enumerate(fin):
            if l != k:
                nk *= pk - pl
        g.append([pk ** j / nk for j in range(r)])
    g.append([Fr(1 if j == r - 1 else 0) for j in range(r)])
    bt = []
    for k in range(a):
        p = [Fr(1)]
        for l, pl in enumerate(fin):
            if l != k:
                p = polymul(p, [-pl, Fr(1)])
        bt.append(p + [Fr(0)] * (a - len(p)))
    rnd = random.Random(m * 100 + r)
    for _ in range(3):
        d = [Fr(rnd.randint(-9, 9)) for _ in range(a)]
        w = [Fr(rnd.randint(-9, 9)) for _ in range(r)]
        u = [sum(g[k][j] * w[j] for j in range(r)) for k in range(a)]
        v = [sum(bt[k][i] * d[i] for i in range(a)) for k in range(a)]
        y = [sum(at[i][k] * u[k] * v[k] for k in range(a)) for i in range(m)]
        assert y == [sum(d[i + j] * w[j] for j in range(r)) for i in range(m)], (m, r)
    return at, g, bt


def c(x):
    return ("%d" % x.numerator) if x.denominator == 1 else "%d.0 / %d" % (x.numerator, x.denominator)


def rows(mat):
    pad = "\n" + " " * 11
    return "{" + ("," + pad).join("{" + ", ".join(c(x) for x in row) + "}" for row in mat) + "}"


# B^T depends on the points only: one macro per point set (F(4, 5) and F(2, 7) share 8)
tables = [(m, r) + toom(m, r) for m, r in [(2, 5), (4, 5), (2, 7), (4, 7), (6, 7)]]
bts = {}
for m, r, at, g, bt in tables:
    a = m + r - 1
    if a not in bts:
        bts[a] = bt
        print("#define WINO_BT%d %s" % (a, rows(bt).replace("\n", " \\\n")))
    assert bts[a] == bt
for m, r, at, g, bt in tables:
    print("static const hc_wino_mats WINO_F%d_%d = {" % (m, r))
    print("    .m = %d, .r = %d, .a = %d," % (m, r, m + r - 1))
    print("    .bt = WINO_BT%d," % (m + r - 1))
    print("    .g = %s," % rows(g))
    print("    .at = %s," % rows(at))
    print("};")
