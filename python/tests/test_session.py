"""Tests of the Python package hidetc (docs/python.md), run by tests/cli_python.sh in a venv
where the package is installed: `python test_session.py` (unittest; exit 0 when all pass).

The models are built here with onnx.helper. PyTorch is optional: without it the
from_torch test is skipped (and says so).
"""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import threading
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import hidetc

THREADS = 2
TOL = 1e-5
RNG = np.random.default_rng(20)
W = RNG.standard_normal((4, 3)).astype(np.float32)
B = RNG.standard_normal(3).astype(np.float32)
TMP = tempfile.mkdtemp(prefix="hidetc-python-test-")
atexit.register(shutil.rmtree, TMP, True)  # under pytest too, where __main__ does not run


def save(name: str, nodes, inputs, outputs, inits=()) -> str:
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    path = os.path.join(TMP, name + ".onnx")
    onnx.save(m, path)
    return path


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


# x [2,4] -> y = relu(x W + b) [2,3], p = softmax(y) [2,3]
MLP = save("mlp", [
    helper.make_node("MatMul", ["x", "W"], ["xw"]),
    helper.make_node("Add", ["xw", "B"], ["xwb"]),
    helper.make_node("Relu", ["xwb"], ["y"]),
    helper.make_node("Softmax", ["y"], ["p"], axis=-1),
], [vi("x", [2, 4])], [vi("y", [2, 3]), vi("p", [2, 3])],
    [numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B")])

# x ['batch', 4] -> y = relu(x W) ['batch', 3]
SYM = save("sym", [
    helper.make_node("MatMul", ["x", "W"], ["xw"]),
    helper.make_node("Relu", ["xw"], ["y"]),
], [vi("x", ["batch", 4])], [vi("y", ["batch", 3])], [numpy_helper.from_array(W, "W")])

# i int64 [3] -> f = float(i) * 2 [3]
CAST = save("cast", [
    helper.make_node("Cast", ["i"], ["c"], to=TensorProto.FLOAT),
    helper.make_node("Add", ["c", "c"], ["f"]),
], [vi("i", [3], TensorProto.INT64)], [vi("f", [3])])


def mlp_ref(x: np.ndarray):
    y = np.maximum(x.astype(np.float64) @ W + B, 0)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return y, e / e.sum(axis=-1, keepdims=True)


def close(a, b, tol=TOL):
    return np.allclose(a, b, rtol=tol, atol=tol)


class Session(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = hidetc.InferenceSession(MLP, threads=THREADS)
        cls.x = RNG.standard_normal((2, 4)).astype(np.float32)

    def test_version_and_target(self):
        self.assertRegex(hidetc.__version__, r"^\d+\.\d+\.\d+")
        self.assertTrue(self.s.target.startswith("cpu"), self.s.target)
        self.assertEqual(self.s.get_providers(), ["CPUExecutionProvider"])

    def test_metadata(self):
        ins, outs = self.s.get_inputs(), self.s.get_outputs()
        self.assertEqual([a.name for a in ins], ["x"])
        self.assertEqual(ins[0].shape, [2, 4])
        self.assertEqual(ins[0].type, "tensor(float)")
        self.assertEqual(ins[0].dtype, np.float32)
        self.assertEqual([a.name for a in outs], ["y", "p"])
        self.assertEqual([a.shape for a in outs], [[2, 3], [2, 3]])
        self.assertEqual({a.type for a in outs}, {"tensor(float)"})
        self.assertIn("NodeArg(name='x'", repr(ins[0]))
        c = hidetc.InferenceSession(CAST, threads=THREADS)
        self.assertEqual(c.get_inputs()[0].type, "tensor(int64)")
        self.assertEqual(c.get_inputs()[0].dtype, np.int64)

    def test_run_against_numpy(self):
        y, p = self.s.run(None, {"x": self.x})
        ry, rp = mlp_ref(self.x)
        self.assertEqual((y.shape, y.dtype, p.shape, p.dtype),
                         ((2, 3), np.float32, (2, 3), np.float32))
        self.assertTrue(close(y, ry), (y, ry))
        self.assertTrue(close(p, rp), (p, rp))

    def test_output_subset(self):
        ry, rp = mlp_ref(self.x)
        (p,) = self.s.run(["p"], {"x": self.x})
        self.assertTrue(close(p, rp))
        p2, y2 = self.s.run(["p", "y"], {"x": self.x})
        self.assertTrue(close(p2, rp) and close(y2, ry))
        pa, pb = self.s.run(["p", "p"], {"x": self.x})  # twice: one array, twice
        self.assertTrue(close(pa, rp) and pa is pb)
        # ONNX Runtime's third argument, run_options, is accepted
        (y3,) = self.s.run(["y"], {"x": self.x}, hidetc.RunOptions())
        self.assertTrue(close(y3, ry))

    def test_zero_copy(self):
        # inputs: a C-contiguous array of the right dtype is wrapped as it is
        arr, _ = self.s._input_array("x", self.x)
        self.assertIs(arr, self.x)
        # outputs: the arrays allocated here are the ones the library wrote and returned
        made = []
        real = hidetc._session._empty_aligned

        def spy(shape, dtype):
            a = real(shape, dtype)
            made.append(a)
            return a

        hidetc._session._empty_aligned = spy
        try:
            y, p = self.s.run(None, {"x": self.x})
        finally:
            hidetc._session._empty_aligned = real
        self.assertEqual(len(made), 2)
        self.assertIs(y, made[0])
        self.assertIs(p, made[1])
        self.assertEqual(y.ctypes.data % 64, 0)
        ry, rp = mlp_ref(self.x)
        self.assertTrue(close(y, ry) and close(p, rp))
        # outputs= : the caller's arrays, written in place and returned
        out = np.full((2, 3), np.nan, np.float32)
        (p2,) = self.s.run(["p"], {"x": self.x}, outputs={"p": out})
        self.assertIs(p2, out)
        self.assertTrue(close(out, rp))
        with self.assertRaises(hidetc.InvalidArgument):
            self.s.run(["p"], {"x": self.x}, outputs={"p": np.empty((3, 2), np.float32).T})
        with self.assertRaises(hidetc.InvalidArgument) as cm:  # the library checks dims
            self.s.run(["p"], {"x": self.x}, outputs={"p": np.empty((2, 4), np.float32)})
        self.assertIn("'p'", str(cm.exception))

    def test_converted_inputs(self):
        ry, rp = mlp_ref(self.x)
        big = np.zeros((2, 9), np.float32)
        big[:, 1:9:2] = self.x
        raw = np.zeros(2 * 4 * 4 + 64 + 4, np.uint8)
        off = (-raw.ctypes.data) % 64 + 4  # 4 bytes past a 64-byte boundary
        unaligned = raw[off:off + 32].view(np.float32).reshape(2, 4)
        unaligned[...] = self.x
        cases = {
            "fortran": np.asfortranarray(self.x),
            "strided": big[:, 1:9:2],
            "transposed": np.ascontiguousarray(self.x.T).T,
            "float64": self.x.astype(np.float64),
            "list": self.x.tolist(),
            "unaligned-64": unaligned,
        }
        for what, x in cases.items():
            with self.subTest(what):
                if isinstance(x, np.ndarray) and what != "unaligned-64":
                    self.assertFalse(x.flags.c_contiguous and x.dtype == np.float32, what)
                y, p = self.s.run(None, {"x": x})
                self.assertTrue(close(y, ry) and close(p, rp), what)
        c = hidetc.InferenceSession(CAST, threads=THREADS)
        (f,) = c.run(None, {"i": np.array([1, 2, 3], np.int32)})  # int32 -> int64
        self.assertTrue(np.array_equal(f, [2, 4, 6]))
        with self.assertRaises(hidetc.InvalidArgument) as cm:  # float -> int64 is refused
            c.run(None, {"i": np.array([1.5, 2, 3])})
        self.assertIn("'i'", str(cm.exception))

    def test_bytes(self):
        data = read(MLP)
        ry, rp = mlp_ref(self.x)
        for src in (data, bytearray(data), memoryview(data)):
            s = hidetc.InferenceSession(src, threads=THREADS)
            y, p = s.run(None, {"x": self.x})
            self.assertTrue(close(y, ry) and close(p, rp), type(src))
        with self.assertRaises(hidetc.HidetcError) as cm:
            hidetc.InferenceSession(b"not a model at all", threads=THREADS)
        self.assertTrue(str(cm.exception))

    def test_ort_compat(self):
        so = hidetc.SessionOptions()
        so.intra_op_num_threads = THREADS
        so.graph_optimization_level = hidetc.GraphOptimizationLevel.ORT_ENABLE_ALL
        s = hidetc.InferenceSession(MLP, so, providers=["CPUExecutionProvider"])
        name = s.get_inputs()[0].name
        outs = s.run([o.name for o in s.get_outputs()], {name: self.x}, None)
        ry, rp = mlp_ref(self.x)
        self.assertTrue(close(outs[0], ry) and close(outs[1], rp))
        s2 = hidetc.InferenceSession(MLP, sess_options=so,
                                     providers=[("CPUExecutionProvider", {})])
        self.assertTrue(close(s2.run(None, {"x": self.x})[1], rp))

    def test_progress_and_close(self):
        stages = []
        s = hidetc.InferenceSession(MLP, threads=THREADS,
                                    progress=lambda st, d, n: stages.append(st))
        self.assertIn("import", stages)
        with s:
            s.run(None, {"x": self.x})
        with self.assertRaises(hidetc.InvalidArgument):
            s.run(None, {"x": self.x})
        s.close()  # twice: nothing

    def test_threads(self):
        xs = [RNG.standard_normal((2, 4)).astype(np.float32) for _ in range(8)]
        refs = [mlp_ref(x) for x in xs]
        bad = []

        def work(k):
            for r in range(25):
                i = (k + r) % len(xs)
                y, p = self.s.run(None, {"x": xs[i]})
                if not (close(y, refs[i][0]) and close(p, refs[i][1])):
                    bad.append((k, r))

        ts = [threading.Thread(target=work, args=(k,)) for k in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(bad, [])


class Dims(unittest.TestCase):
    def test_symbolic(self):
        # without dims the batch stays symbolic: one compile, any batch (docs/dynamic.md)
        s = hidetc.InferenceSession(SYM, threads=THREADS)
        a = s.get_inputs()[0]
        self.assertEqual(a.shape, ["batch", 4])
        self.assertEqual(s.get_outputs()[0].shape, ["batch", 3])
        for b in (1, 5, 2, 17):
            x = RNG.standard_normal((b, 4)).astype(np.float32)
            (y,) = s.run(None, {"x": x})
            self.assertEqual(y.shape, (b, 3))
            self.assertTrue(close(y, np.maximum(x @ W, 0)))
        with self.assertRaises(hidetc.InvalidArgument) as cm:
            s.run(None, {"x": np.zeros((2, 5), np.float32)})
        self.assertIn("'x'", str(cm.exception))

    def test_tune_shapes(self):
        # tuned at two batches (a dispatch table where the winners differ): right at every
        # batch, also between and beyond the tuned ones
        s = hidetc.InferenceSession(SYM, threads=THREADS, tune=1,
                                    tune_shapes={"batch": [1, 9]})
        for b in (1, 3, 9, 40):
            x = RNG.standard_normal((b, 4)).astype(np.float32)
            (y,) = s.run(None, {"x": x})
            self.assertTrue(close(y, np.maximum(x @ W, 0)))
        with self.assertRaises(hidetc.InvalidArgument) as cm:
            hidetc.InferenceSession(SYM, threads=THREADS, tune=1, tune_shapes={"bacth": [2]})
        self.assertIn("bacth", str(cm.exception))
        with self.assertRaises(hidetc.InvalidArgument):
            hidetc.InferenceSession(SYM, threads=THREADS, tune=1, tune_shapes={"batch": [0]})

    def test_dims(self):
        s = hidetc.InferenceSession(SYM, threads=THREADS, dims={"batch": 3})
        a = s.get_inputs()[0]
        self.assertEqual(a.shape, [3, 4])
        self.assertEqual(a.dim_names, ["batch", None])
        self.assertEqual(s.get_outputs()[0].shape, [3, 3])
        x = RNG.standard_normal((3, 4)).astype(np.float32)
        (y,) = s.run(None, {"x": x})
        self.assertTrue(close(y, np.maximum(x @ W, 0)))
        # the wrong batch: the message names the input, the dimension and its symbol
        with self.assertRaises(hidetc.InvalidArgument) as cm:
            s.run(None, {"x": x[:2]})
        msg = str(cm.exception)
        self.assertIn("'x'", msg)
        self.assertIn("batch", msg)
        self.assertIsInstance(cm.exception, ValueError)

    def test_shapes(self):
        s = hidetc.InferenceSession(SYM, threads=THREADS, shapes={"x": [5, 4]})
        x = RNG.standard_normal((5, 4)).astype(np.float32)
        (y,) = s.run(None, {"x": x})
        self.assertTrue(close(y, np.maximum(x @ W, 0)))


class Compile(unittest.TestCase):
    def test_compile_and_load(self):
        out = os.path.join(TMP, "mlp.hcm")
        hidetc.compile(MLP, out, threads=THREADS)
        self.assertGreater(os.path.getsize(out), 0)
        x = RNG.standard_normal((2, 4)).astype(np.float32)
        direct = hidetc.InferenceSession(MLP, threads=THREADS).run(None, {"x": x})
        loaded_s = hidetc.InferenceSession(out)
        self.assertEqual([a.name for a in loaded_s.get_outputs()], ["y", "p"])
        loaded = loaded_s.run(None, {"x": x})
        for a, b in zip(direct, loaded):
            self.assertTrue(np.array_equal(a, b))
        # from bytes too, and with threads it was compiled for
        again = hidetc.InferenceSession(read(out), threads=THREADS)
        self.assertTrue(np.array_equal(again.run(["p"], {"x": x})[0], direct[1]))
        with self.assertRaises(hidetc.InvalidArgument) as cm:  # other threads: refused
            hidetc.InferenceSession(out, threads=THREADS + 1)
        self.assertIn("threads", str(cm.exception))

    def test_compile_with_dims(self):
        out = os.path.join(TMP, "sym.hcm")
        hidetc.compile(read(SYM), out, threads=THREADS, dims={"batch": 2})
        s = hidetc.InferenceSession(out)
        self.assertEqual(s.get_inputs()[0].shape, [2, 4])
        x = RNG.standard_normal((2, 4)).astype(np.float32)
        self.assertTrue(close(s.run(None, {"x": x})[0], np.maximum(x @ W, 0)))


class Torch(unittest.TestCase):
    def test_from_torch(self):
        try:
            import torch
        except ImportError:
            self.skipTest("no torch (Debian: python3-torch)")
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                  torch.nn.Linear(16, 4), torch.nn.Softmax(dim=-1))
        x = torch.randn(5, 8)
        s = hidetc.from_torch(net, (x,), input_names=["x"], output_names=["y"],
                              dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                              threads=THREADS)
        a = s.get_inputs()[0]
        self.assertEqual((a.name, a.shape, a.dim_names[0]), ("x", [5, 8], "batch"))
        (y,) = s.run(None, {"x": x.numpy()})
        with torch.no_grad():
            ref = net(x).numpy()
        self.assertTrue(close(y, ref), np.abs(y - ref).max())
        # a single tensor, torch's own names, no dynamic axes
        s2 = hidetc.from_torch(net, x, threads=THREADS)
        (y2,) = s2.run(None, {s2.get_inputs()[0].name: x.numpy()})
        self.assertTrue(close(y2, ref))


class Errors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = hidetc.InferenceSession(MLP, threads=THREADS)
        cls.x = np.zeros((2, 4), np.float32)

    def test_bad_path(self):
        path = os.path.join(TMP, "no-such-model.onnx")
        with self.assertRaises(hidetc.HidetcError) as cm:
            hidetc.InferenceSession(path)
        self.assertIn("no-such-model.onnx", str(cm.exception))
        self.assertIsInstance(cm.exception, hidetc.IOFailure)
        self.assertIsInstance(cm.exception, OSError)
        self.assertEqual(cm.exception.status, 2)
        self.assertTrue(cm.exception.status_name.startswith("HIDETC_ERR_IO"))

    def test_wrong_shape(self):
        with self.assertRaises(hidetc.InvalidArgument) as cm:
            self.s.run(None, {"x": np.zeros((3, 4), np.float32)})
        self.assertIn("'x'", str(cm.exception))
        with self.assertRaises(hidetc.InvalidArgument) as cm:
            self.s.run(None, {"x": np.zeros((2, 4, 1), np.float32)})
        self.assertIn("'x'", str(cm.exception))

    def test_unknown_names(self):
        with self.assertRaises(hidetc.InvalidArgument) as cm:
            self.s.run(None, {"nope": self.x})
        self.assertIn("nope", str(cm.exception))
        with self.assertRaises(hidetc.InvalidArgument) as cm:
            self.s.run(["nope"], {"x": self.x})
        self.assertIn("nope", str(cm.exception))
        with self.assertRaises(hidetc.InvalidArgument) as cm:
            self.s.run(None, {})
        self.assertIn("'x'", str(cm.exception))
        with self.assertRaises(hidetc.InvalidArgument) as cm:
            self.s.run(None, {"x": self.x, "extra": self.x})
        self.assertIn("'extra'", str(cm.exception))

    def test_bad_options(self):
        with self.assertRaises(hidetc.InvalidArgument):
            hidetc.InferenceSession(MLP, tune=7)
        with self.assertRaises(hidetc.HidetcError) as cm:
            hidetc.InferenceSession(MLP, target="no-such-target")
        self.assertIn("no-such-target", str(cm.exception))
        with self.assertRaises(hidetc.HidetcError):
            hidetc.InferenceSession(MLP, dims={"batch": 0})

    def test_hierarchy(self):
        for cls, base in [(hidetc.InvalidArgument, ValueError), (hidetc.IOFailure, OSError),
                          (hidetc.OutOfMemory, MemoryError), (hidetc.Unsupported, NotImplementedError),
                          (hidetc.CompileError, RuntimeError), (hidetc.DeviceError, RuntimeError)]:
            self.assertTrue(issubclass(cls, hidetc.HidetcError) and issubclass(cls, base), cls)
        e = hidetc._lib.error_for(2, "a message")
        self.assertEqual(str(e), "a message")


if __name__ == "__main__":
    r = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if r.wasSuccessful() else 1)
