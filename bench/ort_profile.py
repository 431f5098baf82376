#!/usr/bin/env python3
"""bench/ort_profile.py — ONNX Runtime's own per-node times for a bench/compare export.

    BUILD/bench-venv/bin/python bench/ort_profile.py MODEL_DIR [--runs 13] [--warmup 3]
                                                     [--threads 2] [--top 20]

MODEL_DIR is a bench/compare export (BUILD/cache/compare-models/MODEL-bB: model.onnx,
meta.json, inputs/). Runs the model with ORT's profiler on (CPU provider, the thread
settings of bench/compare's worker), runs back to back, then prints the sum of the
per-node medians of the timed runs and the nodes grouped by name with layer numbers folded
(`/layers.3/output/MatMul` counts as `/#/output/MatMul`), largest first: what ORT spends
on each kind of op, to set beside `hidetc bench MODEL --profile N` or
bench/kernel_minima.py. For ORT's AVX2 code on an AVX-512 machine, run it under
`LD_PRELOAD=BUILD/cpuid_avx2/libcpuid_avx2.so` (bench/cpuid_avx2.c, docs/bench.md).
"""
import argparse
import collections
import json
import os
import re
import tempfile

import numpy as np
import onnxruntime as ort


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model_dir")
    p.add_argument("--runs", type=int, default=13)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--top", type=int, default=20)
    a = p.parse_args()
    meta = json.load(open(os.path.join(a.model_dir, "meta.json")))
    feeds = {n: np.load(os.path.join(a.model_dir, "inputs", n + ".npy")) for n in meta["inputs"]}
    o = ort.SessionOptions()
    o.intra_op_num_threads, o.inter_op_num_threads = a.threads, 1
    o.enable_profiling = True
    o.profile_file_prefix = os.path.join(tempfile.mkdtemp(prefix="ort-profile-"), "ort")
    s = ort.InferenceSession(os.path.join(a.model_dir, "model.onnx"), o,
                             providers=["CPUExecutionProvider"])
    for _ in range(a.warmup + a.runs):
        s.run(None, feeds)
    events = json.load(open(s.end_profiling()))
    per_node = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            per_node[e["name"][:-len("_kernel_time")]].append(e["dur"])
    groups = collections.defaultdict(float)
    total = 0.0
    for name, durs in per_node.items():
        timed = sorted(durs[a.warmup:]) or sorted(durs)
        ms = timed[len(timed) // 2] / 1000.0
        total += ms
        groups[re.sub(r"(layers|blocks|layer)\.?\d+|_\d+$", "#", name)] += ms
    print("ORT %s, %d threads, %d timed runs: sum of per-node medians %.2f ms" %
          (ort.__version__, a.threads, a.runs, total))
    for name, ms in sorted(groups.items(), key=lambda kv: -kv[1])[:a.top]:
        print("%9.2f ms  %s" % (ms, name))


if __name__ == "__main__":
    main()
