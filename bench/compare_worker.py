"""A worker of bench/compare: one system (ONNX Runtime or PyTorch) in its own process,
driven one request at a time over stdin/stdout, the protocol of `hidetc bench --serve`:

    python compare_worker.py ort MODEL.onnx INPUT_DIR --threads T [--pin]
    python compare_worker.py torch NAME BATCH INPUT_DIR --threads T

prints "ready" once loaded, then answers each line read from stdin:
    run       -> "ms X"  (one timed inference, perf_counter around the call)
    save DIR  -> "ok"    (outputs written as DIR/out<i>.npy in the model's output order)
    quit/EOF  -> exit 0
Nothing else is written to stdout (messages go to stderr).

ort: CPUExecutionProvider, intra_op_num_threads=T, inter_op_num_threads=1, sequential
execution, ORT_ENABLE_ALL (as bench/ort_bench.py). torch: the module of
tests/models/export.py (same builder, same seed, so the same random weights as the ONNX
file), eval mode, torch.set_num_threads(T), torch.inference_mode. Inputs: INPUT_DIR/*.npy,
the files the ONNX model was exported with.
"""

import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def ort_session(model, threads, pin=False):
    import onnxruntime as ort
    so = ort.SessionOptions()
    if pin:  # intra-op thread k (the caller's thread is 0, not listed) on processor k + 1
        so.add_session_config_entry("session.intra_op_thread_affinities",
                                    ";".join(str(k + 1) for k in range(1, threads)))
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    if pin:  # ORT leaves the caller's thread alone: pin it to the first CPU, as hidetc does
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    return sess


def load_inputs(input_dir, names):
    return [np.load(os.path.join(input_dir, n + ".npy")) for n in names]


def make_ort(args, threads):
    pin = "--pin" in args
    model, input_dir = [x for x in args if x != "--pin"]
    sess = ort_session(model, threads, pin)
    names = [i.name for i in sess.get_inputs()]
    feeds = dict(zip(names, load_inputs(input_dir, names)))
    return lambda: sess.run(None, feeds)


def make_torch(args, threads):
    name, _batch, input_dir = args
    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "models"))
    import export  # tests/models/export.py: the model builders
    torch.set_num_threads(threads)
    torch.manual_seed(export.SEED)  # as export.export_model: the same weights
    model = export.MODELS[name](False)[0].eval()
    meta = json.load(open(os.path.join(input_dir, "..", "meta.json")))
    inputs = [torch.from_numpy(a) for a in load_inputs(input_dir, meta["inputs"])]

    def run():
        with torch.inference_mode():
            out = model(*inputs)
        out = (out,) if isinstance(out, torch.Tensor) else out
        return [o.numpy() for o in out]
    return run


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("ort", "torch") or "--threads" not in sys.argv:
        print(__doc__, file=sys.stderr)
        return 2
    argv = sys.argv[2:]
    t = argv.index("--threads")
    threads = int(argv[t + 1])
    args = argv[:t] + argv[t + 2:]
    run = (make_ort if sys.argv[1] == "ort" else make_torch)(args, threads)
    outputs = None
    print("ready", flush=True)
    for line in sys.stdin:
        req = line.strip()
        if req == "quit":
            break
        if req == "run":
            t0 = time.perf_counter()
            outputs = run()
            print("ms %.4f" % ((time.perf_counter() - t0) * 1e3), flush=True)
        elif req.startswith("save ") and outputs is not None:
            for i, o in enumerate(outputs):
                np.save(os.path.join(req[5:], "out%d.npy" % i), np.asarray(o))
            print("ok", flush=True)
        else:
            print("error unknown request %r" % req, flush=True)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
