"""A worker of bench/compare: one system (ONNX Runtime, PyTorch or OpenVINO) in its own
process, driven one request at a time over stdin/stdout, the protocol of
`hidetc bench --serve`:

    python compare_worker.py ort MODEL.onnx INPUT_DIR --threads T [--pin] [--op-counts]
    python compare_worker.py torch NAME BATCH INPUT_DIR --threads T
    python compare_worker.py ov MODEL.onnx INPUT_DIR --threads T [--pin] [--perf-counts]

prints "ready" once loaded (the ov worker first prints "NAME: VALUE" lines, the compiled
model's properties and "ops: ..." (its compute layers, below), as hidetc bench prints its
header; the ort worker prints "ops: ..." with --op-counts), then answers each line read from
stdin:
    run       -> "ms X"  (one timed inference, perf_counter around the call)
    save DIR  -> "ok"    (outputs written as DIR/out<i>.npy in the model's output order)
    perf FILE SKIP -> "ok" (ov --perf-counts only: per-layer times of the runs after the
                 first SKIP, medians, written to FILE as markdown)
    quit/EOF  -> exit 0
Nothing else is written to stdout (messages go to stderr).

ort: CPUExecutionProvider, intra_op_num_threads=T, inter_op_num_threads=1, sequential
execution, ORT_ENABLE_ALL (as bench/ort_bench.py). torch: the module of
tests/models/export.py (same builder, same seed, so the same random weights as the ONNX
file), eval mode, torch.set_num_threads(T), torch.inference_mode. ov: pip openvino,
Core().read_model(MODEL.onnx), compile_model on "CPU" with INFERENCE_NUM_THREADS=T,
INFERENCE_PRECISION_HINT=f32 (the CPU plugin's default is bf16 where the CPU has bf16
instructions), PERFORMANCE_HINT=LATENCY, ENABLE_CPU_PINNING=(--pin given): OpenVINO's
pinning places the calling thread, which takes part in a synchronous inference, on the
first CPU and its worker threads one per CPU after it, like hidetc and `ort --pin`;
--perf-counts adds PERF_COUNT=YES. Inputs: INPUT_DIR/*.npy, the files the ONNX model was
exported with.

What runs (for quantized models: int8 kernels or not):
  ov  "ops: " the compiled model's compute layers (Convolution, FullyConnected, MatMul, ...)
      from its runtime model, counted by layer type, primitive type (the implementation,
      e.g. brgconv_avx512_1x1_f32 or brgconv_avx512_amx_I8) and the precisions of the
      activations and the weights read (the source layers' output precisions);
  ort --op-counts: the session is created with profiling on, run once, and "ops: " counts
      the nodes of that run by op type (QLinearConv, Conv, ...) from the profile; for a
      worker of its own (profiling stays on for the later runs).
"""

import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def ort_session(model, threads, pin=False, profile_prefix=None):
    import onnxruntime as ort
    so = ort.SessionOptions()
    if profile_prefix:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
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
    pin, op_counts = "--pin" in args, "--op-counts" in args
    model, input_dir = [x for x in args if x not in ("--pin", "--op-counts")]
    tmp = tempfile.mkdtemp(prefix="compare-ort-prof-") if op_counts else None
    sess = ort_session(model, threads, pin, tmp and os.path.join(tmp, "ort"))
    names = [i.name for i in sess.get_inputs()]
    feeds = dict(zip(names, load_inputs(input_dir, names)))
    if op_counts:
        sess.run(None, feeds)
        print("ops: " + ort_op_counts(sess.end_profiling()), flush=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return lambda: sess.run(None, feeds)


def ort_op_counts(profile):
    """The nodes of the profiled run by op type, e.g. "QLinearConv 33, Conv 20, ..."."""
    counts = {}
    for e in json.load(open(profile)):
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            op = e.get("args", {}).get("op_name", "?")
            counts[op] = counts.get(op, 0) + 1
    return ", ".join("%s %d" % kv for kv in sorted(counts.items(), key=lambda x: (-x[1], x[0])))


OV_COMPUTE = ("Convolution", "GroupConvolution", "Deconvolution", "FullyConnected", "MatMul",
              "Gemm")


def ov_compute_layers(compiled):
    """The compiled model's compute layers by type, implementation and the precisions of
    their first two inputs (activations, weights), e.g. "Convolution brgconv_avx512_f32
    (in f32, weights i8) x17, ..."."""
    def rt(node, key):
        info = node.get_rt_info()
        return info[key].astype(str) if key in info else "?"
    counts = {}
    for op in compiled.get_runtime_model().get_ordered_ops():
        ltype = rt(op, "layerType")
        if ltype not in OV_COMPUTE:
            continue
        precs = []
        for port in list(op.inputs())[:2]:
            src = port.get_source_output()
            p = rt(src.get_node(), "outputPrecisions").split(",")
            # a layer with more outputs may list one precision only: the port's type then
            precs.append(p[src.get_index()].strip() if src.get_index() < len(p) else
                         src.get_element_type().get_type_name())
        key = "%s %s (in %s)" % (ltype, rt(op, "primitiveType"), ", weights ".join(precs))
        counts[key] = counts.get(key, 0) + 1
    return ", ".join("%s x%d" % kv for kv in sorted(counts.items(), key=lambda x: -x[1])) \
        or "none"


def make_ov(args, threads):
    pin, perf = "--pin" in args, "--perf-counts" in args
    model, input_dir = [x for x in args if x not in ("--pin", "--perf-counts")]
    import openvino as ov
    import openvino.properties as props
    import openvino.properties.hint as hints
    core = ov.Core()
    config = {
        props.inference_num_threads(): threads,
        hints.inference_precision(): ov.Type.f32,
        hints.performance_mode(): hints.PerformanceMode.LATENCY,
        hints.enable_cpu_pinning(): pin,
        props.enable_profiling(): perf,
    }
    compiled = core.compile_model(core.read_model(model), "CPU", config)
    for k in ("NUM_STREAMS", "INFERENCE_NUM_THREADS", "INFERENCE_PRECISION_HINT",
              "PERFORMANCE_HINT", "ENABLE_CPU_PINNING", "ENABLE_HYPER_THREADING",
              "PERF_COUNT"):
        v = compiled.get_property(k)
        v = ({True: "YES", False: "NO"}[v] if isinstance(v, bool) else
             v.get_type_name() if isinstance(v, ov.Type) else str(v).split(".")[-1])
        print("%s: %s" % (k, v), flush=True)
    try:
        ops = ov_compute_layers(compiled)
    except Exception as e:  # an informative line only: never a reason to fail the worker
        ops = "unknown (%s)" % str(e).splitlines()[0][:100]
    print("ops: " + ops, flush=True)
    meta = json.load(open(os.path.join(input_dir, "..", "meta.json")))
    req = compiled.create_infer_request()
    # the inputs are set once, sharing the arrays' memory (as ORT reads its feeds in place);
    # the arrays must outlive the request: `keep` holds them (without it they were freed after
    # this loop and the request read freed memory: BERT's and GPT-2's outputs were wrong)
    keep = [np.ascontiguousarray(a) for a in load_inputs(input_dir, meta["inputs"])]
    for name, arr in zip(meta["inputs"], keep):
        req.set_tensor(compiled.input(name), ov.Tensor(arr, shared_memory=True))
    outs = []  # in meta.json's order (the ONNX graph's), by name where OpenVINO kept it
    for i, name in enumerate(meta["outputs"]):
        try:
            outs.append(compiled.output(name))
        except RuntimeError:
            outs.append(compiled.outputs[i])
    profiles, executed = [], ov.ProfilingInfo.Status.EXECUTED

    def run():
        assert keep  # the shared input arrays stay alive as long as run does
        req.infer(share_outputs=True)  # no copy: the request's output tensors, read at save
        if perf:
            profiles.append({(p.node_name, p.node_type, p.exec_type):
                             p.real_time.total_seconds() * 1e3
                             for p in req.profiling_info if p.status == executed})
        return [req.get_tensor(o).data for o in outs]

    run.perf = (lambda path, skip: write_perf(path, profiles[skip:])) if perf else None
    return run


def write_perf(path, profiles):
    """Per-layer medians (ms) over the runs in `profiles`, by layer and by type."""
    if not profiles:
        raise RuntimeError("no profiled runs")
    layers = {}
    for prof in profiles:
        for k, ms in prof.items():
            layers.setdefault(k, []).append(ms)
    med = {k: float(np.median(v + [0.0] * (len(profiles) - len(v)))) for k, v in layers.items()}
    total = sum(med.values()) or 1.0
    by_type = {}
    for (_, ntype, etype), ms in med.items():
        t = by_type.setdefault((ntype, etype), [0, 0.0])
        t[0] += 1
        t[1] += ms
    L = ["Median over %d runs of each executed layer's real_time (PERF_COUNT); sum of the "
         "medians: %.3f ms." % (len(profiles), total), "",
         "| layer type | implementation | layers | ms per run | share |",
         "|---|---|---:|---:|---:|"]
    for (ntype, etype), (n, ms) in sorted(by_type.items(), key=lambda x: -x[1][1]):
        L.append("| %s | %s | %d | %.3f | %.1f%% |" % (ntype, etype, n, ms, 100 * ms / total))
    L += ["", "| layer | type | implementation | ms per run | share |",
          "|---|---|---|---:|---:|"]
    for (name, ntype, etype), ms in sorted(med.items(), key=lambda x: -x[1]):
        L.append("| %s | %s | %s | %.3f | %.1f%% |" % (name.replace("|", "/"), ntype, etype,
                                                      ms, 100 * ms / total))
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


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
    makers = {"ort": make_ort, "torch": make_torch, "ov": make_ov}
    if len(sys.argv) < 4 or sys.argv[1] not in makers or "--threads" not in sys.argv:
        print(__doc__, file=sys.stderr)
        return 2
    argv = sys.argv[2:]
    t = argv.index("--threads")
    threads = int(argv[t + 1])
    args = argv[:t] + argv[t + 2:]
    run = makers[sys.argv[1]](args, threads)
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
        elif req.startswith("perf ") and getattr(run, "perf", None):
            path, skip = req[5:].rsplit(" ", 1)
            run.perf(path, int(skip))
            print("ok", flush=True)
        else:
            print("error unknown request %r" % req, flush=True)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
