#!/usr/bin/python3
"""bench/ab.py — two hidetc builds side by side with ONNX Runtime and OpenVINO, round by round.

    bench/ab.py --base OLD_HIDETC --new NEW_HIDETC [--models resnet50,bert,...]
                [--batch 1,8] [--runs 20] [--warmup 3] [--gap-ms 100] [--threads 2]
                [--systems ort,ov] [--build build-bench] [--out FILE] [--isa native|avx2]

On a shared machine two separate `bench/compare` runs differ by more than most changes
(a model's ratio to ONNX Runtime moved 15% between runs of one binary here), so this puts
the old and the new hidetc into the same rounds: per model, one worker process per system
(`hidetc bench FILE --serve` for both builds, each with the model compiled by its own
binary at --tune 0; bench/compare_worker.py for ORT and OpenVINO), each round runs every
worker once in a rotating order with --gap-ms between requests, and the table gives the
medians, new / old, and both against ORT and OpenVINO (their median / hidetc's median).
The machine's speed drifts between regimes, so the table also gives the median of the
per-round new / old (each round's two builds ran seconds apart: steadier than the ratio
of the medians when the regime changes during the run), and the same in the faster and
in the slower half of the rounds, since a change can win in one regime and lose in the
other (a shorter matmul K block for BERT on the Xeon VM: 0.92 in the slower half, 1.00
in the faster). A round's speed is the other systems' times in it (each over its
median), or old + new when they are not run. Opposite signs in the two halves mean the
change tracks the machine's load, not the program.
With --isa avx2 every process runs AVX2 code as under bench/compare --isa avx2 (its
switches, and bench/cpuid_avx2.c preloaded where CPUID faulting works; the table says which).
The models and inputs are bench/compare's exports (BUILD/cache/compare-models/MODEL-bB;
run bench/compare once to make them) and its venv (BUILD/bench-venv). Both builds' outputs
are checked against ORT's (relative tolerance 1e-3 of the largest reference value).
"""
import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Worker:
    def __init__(self, name, argv, env):
        self.name, self.times = name, []
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, env=env)
        while True:
            line = self.p.stdout.readline()
            if not line:
                sys.exit("ab: %s did not start" % name)
            if line.strip() == "ready":
                break

    def ask(self, req):
        self.p.stdin.write(req + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def run(self):
        ans = self.ask("run")
        if not ans.startswith("ms "):
            sys.exit("ab: %s: %s" % (self.name, ans))
        return float(ans.split()[1])

    def close(self):
        try:
            self.ask("quit")
        except BrokenPipeError:
            pass
        self.p.wait()


def split_rounds(old, new, speed=None):
    """The median of the per-round new / old over all rounds, in the faster and in the
    slower half of the rounds, ranked by speed[r] (the reference systems' time in round r;
    old + new without one); a middle round of an odd count goes to neither half. None for
    a half with no rounds."""
    keys = speed if speed is not None else [o + n for o, n in zip(old, new)]
    rounds = [p for _, p in sorted(zip(keys, zip(old, new)), key=lambda kp: kp[0])]
    h = len(rounds) // 2
    fast, slow = rounds[:h], rounds[len(rounds) - h:]
    return tuple(statistics.median(n / o for o, n in part) if part else None
                 for part in (rounds, fast, slow))


def fmt_ratio(x):
    return "-" if x is None else "%.3f" % x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--models", default="resnet50,inception_v3,mobilenet_v2,bert,gpt2")
    ap.add_argument("--batch", default="1")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--gap-ms", type=float, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--systems", default="ort,ov")
    ap.add_argument("--build", default=os.path.join(SRC, "build-bench"))
    ap.add_argument("--out")
    ap.add_argument("--isa", choices=["native", "avx2"], default="native",
                    help="avx2: every process in AVX2 code, as bench/compare --isa avx2 "
                    "(bench/cpuid_avx2.c preloaded where CPUID faulting works)")
    a = ap.parse_args()
    py = os.path.join(a.build, "bench-venv", "bin", "python")
    others = [s for s in a.systems.split(",") if s]
    env = dict(os.environ)
    env.setdefault("HIDETC_CACHE_DIR", os.path.join(a.build, "cache", "kernels"))
    isa_line = ""
    if a.isa != "native":  # bench/compare's switches and CPUID mask
        from importlib.machinery import SourceFileLoader
        compare = SourceFileLoader("compare", os.path.join(SRC, "bench", "compare")).load_module()
        env.update(compare.ISA_ENV[a.isa])
        lib = compare.cpuid_mask(os.path.abspath(a.build))
        if lib:
            env["LD_PRELOAD"] = lib
        isa_line = ("ISA: %s, %s" % (a.isa, "AVX-512 hidden from CPUID for every process "
                                     "(bench/cpuid_avx2.c)" if lib else
                                     "switches only (%s): ONNX Runtime keeps its native ISA" %
                                     ", ".join("%s=%s" % kv for kv in
                                               sorted(compare.ISA_ENV[a.isa].items()))))
    rows = []
    tmp = tempfile.mkdtemp(prefix="hidetc-ab-")
    atexit.register(shutil.rmtree, tmp, True)  # the compiled models: 0.5 GB each for BERT b8
    for batch in [int(b) for b in a.batch.split(",")]:
        for model in a.models.split(","):
            mdir = os.path.join(a.build, "cache", "compare-models", "%s-b%d" % (model, batch))
            if not os.path.isdir(mdir):
                print("ab: no export %s (run bench/compare --models %s --batch %d once)" %
                      (mdir, model, batch), file=sys.stderr)
                continue
            meta = json.load(open(os.path.join(mdir, "meta.json")))
            onnx = os.path.join(mdir, "model.onnx")
            ins = sum((["--input", "%s=%s" % (n, os.path.join(mdir, "inputs", n + ".npy"))]
                       for n in meta["inputs"]), [])
            ws = {}
            for tag, exe in (("old", a.base), ("new", a.new)):
                hcm = os.path.join(tmp, "%s-%s-b%d.hcm" % (tag, model, batch))
                subprocess.run([exe, "compile", onnx, "-o", hcm, "--threads", str(a.threads)],
                               env=env, check=True, stdout=subprocess.DEVNULL)
                ws[tag] = Worker(tag, [exe, "bench", hcm, "--threads", str(a.threads),
                                       "--serve"] + ins, env)
            for s in others:
                ws[s] = Worker(s, [py, os.path.join(SRC, "bench", "compare_worker.py"), s, onnx,
                                   os.path.join(mdir, "inputs"), "--threads", str(a.threads)],
                               env)
            order = list(ws)
            for r in range(a.warmup + a.runs):
                k = r % len(order)
                for s in order[k:] + order[:k]:
                    ms = ws[s].run()
                    if r >= a.warmup:
                        ws[s].times.append(ms)
                    time.sleep(a.gap_ms / 1e3)
            agree = {}
            if "ort" in ws:
                import numpy as np
                dirs = {}
                for s in ("old", "new", "ort"):
                    d = os.path.join(tmp, "out-%s-%s-%d" % (s, model, batch))
                    os.makedirs(d, exist_ok=True)
                    ws[s].ask("save " + d)
                    dirs[s] = d
                for s in ("old", "new"):
                    ok = True
                    for i in range(len(meta.get("outputs", [])) or 1):
                        x = np.load(os.path.join(dirs[s], "out%d.npy" % i)).astype(np.float64)
                        y = np.load(os.path.join(dirs["ort"], "out%d.npy" % i)).astype(np.float64)
                        tol = 1e-3 * max(1.0, float(np.max(np.abs(y))))
                        ok &= x.shape == y.shape and float(np.max(np.abs(x - y))) <= tol
                    agree[s] = "ok" if ok else "MISMATCH"
            med = {s: statistics.median(w.times) for s, w in ws.items()}
            speed = None
            if others:
                speed = [sum(ws[s].times[r] / med[s] for s in others)
                         for r in range(len(ws["old"].times))]
            paired = split_rounds(ws["old"].times, ws["new"].times, speed)
            for w in ws.values():
                w.close()
            rows.append((model, batch, med, agree, paired))
            print("ab: %s b%d: %s" % (model, batch, ", ".join("%s %.1f" % kv for kv in med.items())),
                  file=sys.stderr)
    lines = ["| model | batch | old ms | new ms | new / old | per round: new / old | "
             "faster half | slower half | " +
             "".join("%s ms | old vs %s | new vs %s | " % (s, s, s) for s in others) +
             "outputs vs ORT (old, new) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|" + "---:|---:|---:|" * len(others) + "---|"]
    for model, batch, med, agree, paired in rows:
        cells = "".join("%.1f | %.2f | %.2f | " % (med[s], med[s] / med["old"],
                                                    med[s] / med["new"]) for s in others)
        lines.append("| %s | %d | %.1f | %.1f | %.3f | %s | %s | %s | %s%s, %s |" % (
            model, batch, med["old"], med["new"], med["new"] / med["old"],
            fmt_ratio(paired[0]), fmt_ratio(paired[1]), fmt_ratio(paired[2]), cells,
            agree.get("old", "-"), agree.get("new", "-")))

    def geo(xs):
        return statistics.geometric_mean(xs) if xs else float("nan")
    for s in others:
        lines.append("")
        lines.append("Geometric mean over the rows, %s median / hidetc median: old %.2fx, new %.2fx" % (
            s, geo([m[s] / m["old"] for _, _, m, _, _ in rows]),
            geo([m[s] / m["new"] for _, _, m, _, _ in rows])))
    if isa_line:
        lines += ["", isa_line]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
