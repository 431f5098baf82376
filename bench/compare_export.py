#!/usr/bin/python3
"""Export one model of tests/models/export.py at a given batch size for bench/compare:

    /usr/bin/python3 compare_export.py NAME BATCH OUT_DIR

writes OUT_DIR/model.onnx (opset 17, static shapes, exported the way export.py exports
opset 17: BN and constants folded), OUT_DIR/inputs/<name>.npy and OUT_DIR/meta.json. The
model is export.py's builder at full size with export.py's seed, so its random weights are
the ones compare_worker.py's PyTorch worker rebuilds. Batch 1 uses export.py's own inputs;
batch B > 1 draws new ones (seed SEED + B): images from a normal distribution, token ids
uniform in the vocabulary, the attention mask of the batch-1 input on every row.
"""

import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests", "models"))
import export  # noqa: E402

OPSET = 17


def batch_inputs(inputs, names, batch, config):
    if batch == 1:
        return inputs
    g = torch.Generator().manual_seed(export.SEED + batch)
    out = []
    for name, t in zip(names, inputs):
        shape = (batch,) + tuple(t.shape[1:])
        if t.is_floating_point():
            out.append(torch.randn(shape, generator=g, dtype=t.dtype))
        elif name == "input_ids":
            out.append(torch.randint(0, config["vocab"], shape, generator=g, dtype=t.dtype))
        else:  # attention_mask
            out.append(t.expand(shape).contiguous())
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    name, batch, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    torch.manual_seed(export.SEED)
    model, inputs, in_names, out_names, config = export.MODELS[name](False)
    model.eval()
    inputs = batch_inputs(inputs, in_names, batch, config)
    os.makedirs(os.path.join(out, "inputs"), exist_ok=True)
    for n, t in zip(in_names, inputs):
        np.save(os.path.join(out, "inputs", n + ".npy"), t.numpy())
    path = os.path.join(out, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(model, tuple(inputs), path, opset_version=OPSET,
                          input_names=in_names, output_names=out_names,
                          **export.export_mode(OPSET))
    export.check_onnx(path, OPSET, in_names, out_names)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump({"model": name, "batch": batch, "seed": export.SEED, "opset": OPSET,
                   "inputs": in_names, "outputs": out_names, "config": config,
                   "torch": torch.__version__}, f, indent=1)


if __name__ == "__main__":
    main()
