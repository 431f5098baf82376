"""hidetc against onnxruntime: a model's outputs, and an onnxruntime program switched to
hidetc by changing its import. Skipped (pytest.skip) where onnxruntime is not installed;
tests/cli_python.sh installs it from PyPI into the test venv."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

import hidetc

ort = pytest.importorskip("onnxruntime")


def _export_cnn(path: str) -> None:
    """A small CNN + MLP head (conv, batchnorm, pooling, GELU, layernorm, softmax),
    exported from PyTorch with a fixed seed."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    m = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 16, 3, stride=2), torch.nn.GELU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.LayerNorm(16),
        torch.nn.Linear(16, 10), torch.nn.Softmax(dim=-1)).eval()
    x = torch.randn(2, 3, 17, 13)
    kw = dict(input_names=["x"], output_names=["p"], opset_version=17)
    try:  # newer torch: the TorchScript exporter, as Debian's torch uses
        torch.onnx.export(m, (x,), path, dynamo=False, **kw)
    except TypeError:
        torch.onnx.export(m, (x,), path, **kw)


@pytest.fixture(scope="module")
def cnn(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("ort") / "cnn.onnx")
    _export_cnn(path)
    return path


def test_outputs_match_onnxruntime(cnn: str) -> None:
    x = np.random.default_rng(1).standard_normal((2, 3, 17, 13)).astype(np.float32)
    want = ort.InferenceSession(cnn, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = hidetc.InferenceSession(cnn, threads=2).run(None, {"x": x})[0]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


PROGRAM = """
import sys
import numpy as np
import onnxruntime as ort

sess = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
rng = np.random.default_rng(7)
feeds = {i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape])
         .astype(np.float32) for i in sess.get_inputs()}
names = [o.name for o in sess.get_outputs()]
out = sess.run(names, feeds)
np.save(sys.argv[2], out[0])
print(sess.get_inputs()[0].name, sess.get_inputs()[0].shape, sess.get_inputs()[0].type)
"""


def test_program_switched_by_its_import(cnn: str, tmp_path) -> None:
    """The same program, once as written for onnxruntime and once with `import hidetc as
    ort`: the same inputs metadata and the same outputs."""
    prints = []
    for k, text in enumerate((PROGRAM, PROGRAM.replace("import onnxruntime as ort",
                                                       "import hidetc as ort"))):
        script = tmp_path / f"prog{k}.py"
        script.write_text(textwrap.dedent(text))
        r = subprocess.run([sys.executable, str(script), cnn, str(tmp_path / f"out{k}.npy")],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        prints.append(r.stdout.strip().splitlines()[-1])
    assert prints[0] == prints[1]
    a, b = np.load(tmp_path / "out0.npy"), np.load(tmp_path / "out1.npy")
    np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)
