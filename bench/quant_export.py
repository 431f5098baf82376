"""Statically quantize an f32 ONNX model the way ONNX Runtime's users do (QDQ format):

    PYTHON quant_export.py MODEL_DIR [--calib N]

MODEL_DIR holds model.onnx and inputs/*.npy (bench/compare_export.py writes them). Writes
MODEL_DIR/model_qdq.onnx: onnxruntime.quantization.quantize_static with the defaults of
ONNX Runtime 1.2x (QDQ, int8 activations and weights, per-tensor, MinMax calibration),
calibrated on N (default 8) inputs drawn like the model's own (normal images, seed 1234), so
the file is the same on every run. PYTHON: a Python with onnxruntime (the bench venv of
bench/compare, BUILD/bench-venv/bin/python).
"""

import argparse
import os

import numpy as np
import onnx
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static


class Reader(CalibrationDataReader):
    def __init__(self, inputs, n):
        rng = np.random.default_rng(1234)
        self.items = []
        for _ in range(n):
            self.items.append({k: rng.standard_normal(v.shape).astype(v.dtype) if v.dtype.kind == "f"
                               else v for k, v in inputs.items()})
        self.i = 0

    def get_next(self):
        if self.i >= len(self.items):
            return None
        self.i += 1
        return self.items[self.i - 1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--calib", type=int, default=8)
    p.add_argument("--per-channel", action="store_true")
    a = p.parse_args()
    src = os.path.join(a.dir, "model.onnx")
    names = [i.name for i in onnx.load(src).graph.input]
    inputs = {n: np.load(os.path.join(a.dir, "inputs", n + ".npy")) for n in names}
    quantize_static(src, os.path.join(a.dir, "model_qdq.onnx"), Reader(inputs, a.calib),
                    quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8,
                    weight_type=QuantType.QInt8, per_channel=a.per_channel)


if __name__ == "__main__":
    main()
