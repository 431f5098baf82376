"""Time one ONNX model with ONNX Runtime, the way bench/models.sh compares it with hidetc.

    python ort_bench.py MODEL.onnx INPUT_DIR [--threads 2] [--warmup 3] [--repeat 10]

CPUExecutionProvider, intra_op_num_threads = THREADS, inter_op_num_threads = 1, sequential
execution, ORT_ENABLE_ALL graph optimizations. Inputs: INPUT_DIR/<input name>.npy. The
last line has hidetc bench's format: "median_ms: X min_ms: Y max_ms: Z"; before it,
"load_ms: L" (session creation, ORT's counterpart of hidetc's compile).
"""

import argparse
import os
import statistics
import time

import numpy as np
import onnxruntime as ort


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("inputs")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeat", type=int, default=10)
    a = p.parse_args()

    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    t0 = time.perf_counter()
    sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    load_ms = (time.perf_counter() - t0) * 1e3
    feeds = {i.name: np.load(os.path.join(a.inputs, i.name + ".npy")) for i in sess.get_inputs()}
    for _ in range(a.warmup):
        sess.run(None, feeds)
    times = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    print("onnxruntime %s, %d intra-op threads" % (ort.__version__, a.threads))
    print("load_ms: %.1f" % load_ms)
    print("median_ms: %.3f min_ms: %.3f max_ms: %.3f" % (statistics.median(times), min(times),
                                                         max(times)))


if __name__ == "__main__":
    main()
