"""hidetc: a deep-learning compiler and inference runtime, from Python.

A pure-Python package over the C library (``libhidetc.so``, loaded with ctypes; its
public API in include/hidetc.h is the only interface). The session API has ONNX
Runtime's call shape, so a program written for ONNX Runtime switches by its import::

    import hidetc as ort                       # was: import onnxruntime as ort
    sess = ort.InferenceSession("model.onnx")
    x = sess.get_inputs()[0]
    (y,) = sess.run(None, {x.name: data})

See docs/python.md.
"""
from __future__ import annotations

from typing import List

from ._lib import (CompileError, DeviceError, HidetcError, InvalidArgument, IOFailure,
                   OutOfMemory, Unsupported, version as _version)
from ._session import (ExecutionMode, GraphOptimizationLevel, InferenceSession, NodeArg,
                       RunOptions, SessionOptions, compile, get_available_providers)
from ._torch import from_torch

#: The C library's version (hidetc_version()).
__version__: str = _version()

__all__ = [
    "__version__",
    "InferenceSession",
    "NodeArg",
    "compile",
    "from_torch",
    "get_available_targets",
    "HidetcError",
    "InvalidArgument",
    "IOFailure",
    "CompileError",
    "Unsupported",
    "OutOfMemory",
    "DeviceError",
    "SessionOptions",
    "RunOptions",
    "GraphOptimizationLevel",
    "ExecutionMode",
    "get_available_providers",
]


def get_available_targets() -> List[str]:
    """The target names ``target=`` takes (docs/targets.md). Not every one runs on every
    machine: a CPU target above this CPU's ISA, or a GPU target without its device, is
    refused when a session is created, with a message saying why."""
    return ["cpu", "cpu:avx512", "cpu:avx2", "cpu:scalar", "opencl", "cuda"]
