#!/usr/bin/env python3
"""Writes the ONNX node tests of the installed `onnx` package into OUT/<test name>/ in the
backend-test layout (model.onnx, test_data_set_N/{input,output}_K.pb), as
`onnx.backend.test.cmd_tools generate-data` does, but only the tests whose graph inputs
and outputs are all tensors (no sequences, maps or optionals). Prints the counts."""
import os
import sys

import onnx
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node as node_test


def tensor_only(model):
    vals = list(model.graph.input) + list(model.graph.output)
    return all(v.type.HasField("tensor_type") for v in vals)


def write_tensor(path, value, name):
    with open(path, "wb") as f:
        if isinstance(value, TensorProto):
            f.write(value.SerializeToString())
        else:
            f.write(numpy_helper.from_array(value, name).SerializeToString())


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_onnx_node_tests.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    cases = node_test.collect_testcases(None)
    written = skipped = 0
    for case in cases:
        if case.model is None or not case.data_sets or not tensor_only(case.model):
            skipped += 1
            continue
        d = os.path.join(out, case.name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        g = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, f"test_data_set_{i}")
            os.makedirs(ds, exist_ok=True)
            for j, v in enumerate(inputs):
                write_tensor(os.path.join(ds, f"input_{j}.pb"), v, g.input[j].name)
            for j, v in enumerate(outputs):
                write_tensor(os.path.join(ds, f"output_{j}.pb"), v, g.output[j].name)
        written += 1
    print(f"onnx {onnx.__version__} (opset {onnx.defs.onnx_opset_version()}): "
          f"{written} tensor-only node tests written to {out}, {skipped} others left out")


if __name__ == "__main__":
    main()
