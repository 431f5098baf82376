#!/usr/bin/env python3
"""bench/kernel_minima.py — per-kernel minima of compiled models, in alternated rounds.

    bench/kernel_minima.py [--rounds 8] [--repeat 10] [--threads 2] [--hidetc PATH]
                           [--seed 7] A.hcm B.hcm ...

On a shared machine whole-model medians move by 5-15% between runs of one program, and
noise only adds time. This runs `hidetc bench FILE --profile 1000` for every file once per
round (the order shuffled each round, a fixed seed), keeps each kernel's fastest time over
all rounds and prints: per file, the sum of its kernels' minima and the medians of its
runs; then one row per kernel name, its minimum in each file (nan where a file has no
such kernel), the slowest first. Kernels that run the same program in two files are the
control: when they differ, the noise was not alike for the files, so read the changed
kernels against them. Compile the files with `hidetc compile` first (the same --threads).
"""
import argparse
import os
import random
import re
import subprocess
import sys

ROW = re.compile(r"^\s+([\d.]+) ms\s+[\d.]+%\s+[\d.]+ GFLOP/s\s+[\d.]+%\s+(\S+) \(")


def main():
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--hidetc", default=os.path.join(src, "build-bench", "hidetc"))
    a = p.parse_args()
    mins = [dict() for _ in a.files]
    medians = [[] for _ in a.files]
    rng = random.Random(a.seed)
    for _ in range(a.rounds):
        order = list(range(len(a.files)))
        rng.shuffle(order)
        for i in order:
            cmd = [a.hidetc, "bench", a.files[i], "--threads", str(a.threads), "--repeat",
                   str(a.repeat), "--profile", "1000"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit("kernel_minima: %s failed:\n%s" % (" ".join(cmd), r.stderr[-2000:]))
            for line in r.stdout.splitlines():
                m = ROW.match(line)
                if m:
                    k, v = m.group(2), float(m.group(1))
                    mins[i][k] = min(mins[i].get(k, v), v)
                m = re.search(r"median_ms: ([\d.]+)", line)
                if m:
                    medians[i].append(float(m.group(1)))
    for i, f in enumerate(a.files):
        print("%s: sum of kernel minima %.3f ms; run medians %s" %
              (f, sum(mins[i].values()), " ".join("%.2f" % v for v in sorted(medians[i]))))
    names = set().union(*[m.keys() for m in mins])
    for k in sorted(names, key=lambda k: -max(m.get(k, 0) for m in mins)):
        print("%-70s " % k[-70:] + " ".join("%9.3f" % m.get(k, float("nan")) for m in mins))


if __name__ == "__main__":
    main()
