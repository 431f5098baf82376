"""ctypes bindings of the C library's public API (include/hidetc.h), and its errors.

Only what the Python package uses is declared. The structures mirror the header field by
field; the header's ABI version (HIDETC_ABI_VERSION) is checked against the library's at
import, so a library built from another header is refused instead of misread.
"""
from __future__ import annotations

import ctypes
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_int, c_int64,
                    c_size_t, c_void_p)
from typing import Dict, Type

import numpy as np

#: The ABI version these bindings were written against (HIDETC_ABI_VERSION).
ABI_VERSION = 2
#: HIDETC_MAX_DIMS: the largest rank of a tensor.
MAX_DIMS = 8

# ---- status codes and errors ---------------------------------------------------------

OK = 0
ERR_INVALID = 1
ERR_IO = 2
ERR_COMPILE = 3
ERR_UNSUPPORTED = 4
ERR_NOMEM = 5
ERR_DEVICE = 6


class HidetcError(Exception):
    """An error reported by the hidetc library.

    ``str(e)`` is the library's message (``hidetc_last_error()``); ``e.status`` is the
    ``hidetc_status`` code and ``e.status_name`` its name (``hidetc_status_string()``).
    Each status has its own subclass, so ``except hidetc.InvalidArgument`` (or the
    matching builtin, ``except ValueError``) catches exactly that kind.
    """

    status: int = -1

    @property
    def status_name(self) -> str:
        """The status's English name, e.g. ``"HIDETC_ERR_INVALID: ..."``."""
        return status_string(self.status)


class InvalidArgument(HidetcError, ValueError):
    """HIDETC_ERR_INVALID: a bad argument, model or file content (also a ValueError)."""

    status = ERR_INVALID


class IOFailure(HidetcError, OSError):
    """HIDETC_ERR_IO: a file could not be read or written (also an OSError)."""

    status = ERR_IO


class CompileError(HidetcError, RuntimeError):
    """HIDETC_ERR_COMPILE: the system C compiler failed (also a RuntimeError)."""

    status = ERR_COMPILE


class Unsupported(HidetcError, NotImplementedError):
    """HIDETC_ERR_UNSUPPORTED: valid input that hidetc does not handle (also a
    NotImplementedError)."""

    status = ERR_UNSUPPORTED


class OutOfMemory(HidetcError, MemoryError):
    """HIDETC_ERR_NOMEM: out of memory (also a MemoryError)."""

    status = ERR_NOMEM


class DeviceError(HidetcError, RuntimeError):
    """HIDETC_ERR_DEVICE: a GPU call failed: launch, copy, device memory (also a
    RuntimeError)."""

    status = ERR_DEVICE


_ERRORS: Dict[int, Type[HidetcError]] = {
    ERR_INVALID: InvalidArgument,
    ERR_IO: IOFailure,
    ERR_COMPILE: CompileError,
    ERR_UNSUPPORTED: Unsupported,
    ERR_NOMEM: OutOfMemory,
    ERR_DEVICE: DeviceError,
}


def error_for(status: int, message: str) -> HidetcError:
    """The exception for a status and message (HidetcError for an unknown status)."""
    cls = _ERRORS.get(status, HidetcError)
    # One argument only: OSError would read two as (errno, strerror).
    e = cls(message or status_string(status))
    e.status = status
    return e


# ---- element types -------------------------------------------------------------------

try:  # bfloat16 as a numpy dtype where the ml_dtypes package is installed
    import ml_dtypes  # type: ignore

    _BF16: np.dtype = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # otherwise its 16-bit patterns, as uint16
    _BF16 = np.dtype(np.uint16)

# hidetc_dtype -> (numpy dtype, ONNX Runtime type string)
DTYPES: Dict[int, "tuple[np.dtype, str]"] = {
    1: (np.dtype(np.bool_), "tensor(bool)"),
    2: (np.dtype(np.int8), "tensor(int8)"),
    3: (np.dtype(np.int16), "tensor(int16)"),
    4: (np.dtype(np.int32), "tensor(int32)"),
    5: (np.dtype(np.int64), "tensor(int64)"),
    6: (np.dtype(np.uint8), "tensor(uint8)"),
    7: (np.dtype(np.uint16), "tensor(uint16)"),
    8: (np.dtype(np.uint32), "tensor(uint32)"),
    9: (np.dtype(np.uint64), "tensor(uint64)"),
    10: (np.dtype(np.float16), "tensor(float16)"),
    11: (_BF16, "tensor(bfloat16)"),
    12: (np.dtype(np.float32), "tensor(float)"),
    13: (np.dtype(np.float64), "tensor(double)"),
}
DTYPE_BF16 = 11

# ---- structures (include/hidetc.h, field by field) ------------------------------------


class Dim(Structure):
    """hidetc_dim: a symbolic dimension fixed to a value at compile time."""

    _fields_ = [("name", c_char_p), ("value", c_int64)]


class InputShape(Structure):
    """hidetc_input_shape: an input's whole shape fixed at compile time."""

    _fields_ = [("input", c_char_p), ("ndim", c_int), ("dims", POINTER(c_int64))]


class TuneShape(Structure):
    """hidetc_tune_shape: the values a symbol takes when the kernels are tuned."""

    _fields_ = [("name", c_char_p), ("num_values", c_int), ("values", POINTER(c_int64))]


#: hidetc_progress_fn: void (*)(void *user, const char *stage, int done, int total)
PROGRESS_FN = CFUNCTYPE(None, c_void_p, c_char_p, c_int, c_int)


class SessionOptions(Structure):
    """hidetc_session_options."""

    _fields_ = [
        ("abi_version", c_int),
        ("num_threads", c_int),
        ("tune_level", c_int),
        ("target", c_char_p),
        ("cache_dir", c_char_p),
        ("num_dims", c_int),
        ("dims", POINTER(Dim)),
        ("num_shapes", c_int),
        ("shapes", POINTER(InputShape)),
        ("pin_threads", c_int),
        ("verbose", c_int),
        ("progress", PROGRESS_FN),
        ("progress_user", c_void_p),
        ("max_memory", c_size_t),
        ("num_tune_shapes", c_int),
        ("tune_shapes", POINTER(TuneShape)),
    ]


class PaddedSessionOptions(Structure):
    """The options with room after them: options structs only grow at their end, so a
    newer library's hidetc_session_options_init may write fields these bindings do not
    know; they land in the padding (and are left at the library's defaults)."""

    _fields_ = [("o", SessionOptions), ("_reserved", c_char * 256)]


class Options(Structure):
    """hidetc_options (the model API's options)."""

    _fields_ = [("cache_dir", c_char_p), ("num_threads", c_int), ("verbose", c_int)]


class ValueInfo(Structure):
    """hidetc_value_info: an input or output's name, dtype, rank, dims, dim names."""

    _fields_ = [
        ("name", c_char_p),
        ("dtype", c_int),
        ("ndim", c_int),
        ("dims", c_int64 * MAX_DIMS),
        ("dim_names", c_char_p * MAX_DIMS),
    ]


# ---- the library ---------------------------------------------------------------------


def _library_path() -> str:
    """$HIDETC_LIBRARY, else libhidetc.so next to this file (where the wheel puts it)."""
    env = os.environ.get("HIDETC_LIBRARY")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libhidetc.so")


def _load() -> ctypes.CDLL:
    path = _library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            f"hidetc: cannot load the C library {path}: {e} (install the package with "
            f"`pip install .` from the hidetc checkout, or set HIDETC_LIBRARY to a "
            f"built libhidetc.so)") from e
    return lib


lib = _load()

# status and version
lib.hidetc_version.restype = c_char_p
lib.hidetc_version.argtypes = []
lib.hidetc_last_error.restype = c_char_p
lib.hidetc_last_error.argtypes = []

try:
    lib.hidetc_abi_version.restype = c_int
    lib.hidetc_abi_version.argtypes = []
    lib.hidetc_status_string.restype = c_char_p
    lib.hidetc_status_string.argtypes = [c_int]
except AttributeError as e:  # a library older than the session API
    raise ImportError(f"hidetc: {_library_path()} has no session API ({e}); rebuild it") from e

_abi = lib.hidetc_abi_version()
if _abi != ABI_VERSION:
    raise ImportError(
        f"hidetc: the C library {_library_path()} implements ABI version {_abi}; this "
        f"Python package was written for version {ABI_VERSION} (reinstall both from one "
        f"checkout)")

_SESSION = c_void_p  # hidetc_session *
_TENSOR = c_void_p  # hidetc_tensor *


def _fn(name: str, restype, argtypes) -> None:
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = argtypes


_fn("hidetc_session_options_init", None, [POINTER(SessionOptions)])
_fn("hidetc_session_create", c_int, [POINTER(_SESSION), c_char_p, POINTER(SessionOptions)])
_fn("hidetc_session_create_from_bytes", c_int,
    [POINTER(_SESSION), c_void_p, c_size_t, POINTER(SessionOptions)])
_fn("hidetc_session_free", None, [_SESSION])
_fn("hidetc_session_num_inputs", c_int, [_SESSION])
_fn("hidetc_session_num_outputs", c_int, [_SESSION])
_fn("hidetc_session_input_info", c_int, [_SESSION, c_int, POINTER(ValueInfo)])
_fn("hidetc_session_output_info", c_int, [_SESSION, c_int, POINTER(ValueInfo)])
_fn("hidetc_session_input_index", c_int, [_SESSION, c_char_p])
_fn("hidetc_session_output_index", c_int, [_SESSION, c_char_p])
_fn("hidetc_session_target", c_char_p, [_SESSION])
_fn("hidetc_tensor_wrap", c_int,
    [POINTER(_TENSOR), c_int, c_int, POINTER(c_int64), c_void_p])
_fn("hidetc_tensor_free", None, [_TENSOR])
_fn("hidetc_tensor_data", c_void_p, [_TENSOR])
_fn("hidetc_tensor_dtype", c_int, [_TENSOR])
_fn("hidetc_tensor_dims", c_int, [_TENSOR, POINTER(c_int64)])
_fn("hidetc_tensor_bytes", c_size_t, [_TENSOR])
_fn("hidetc_session_run", c_int,
    [_SESSION, c_int, POINTER(c_char_p), POINTER(_TENSOR), c_int, POINTER(c_char_p),
     POINTER(_TENSOR)])
# the model API (compile() without hidetc_session_save)
_fn("hidetc_model_load_onnx", c_int, [POINTER(c_void_p), c_char_p, POINTER(Options)])
_fn("hidetc_model_save", c_int, [c_void_p, c_char_p])
_fn("hidetc_model_free", None, [c_void_p])

#: hidetc_session_save(const hidetc_session *, const char *path), where the library has it.
HAS_SESSION_SAVE = hasattr(lib, "hidetc_session_save")
if HAS_SESSION_SAVE:
    _fn("hidetc_session_save", c_int, [_SESSION, c_char_p])


def status_string(status: int) -> str:
    """hidetc_status_string(): a constant English name of a status."""
    s = lib.hidetc_status_string(status)
    return s.decode("utf-8", "replace") if s else f"hidetc status {status}"


def last_error() -> str:
    """hidetc_last_error(): the message of this thread's last failed call."""
    s = lib.hidetc_last_error()
    return s.decode("utf-8", "replace") if s else ""


def check(status: int) -> None:
    """Raise the status's exception, with this thread's message, unless it is OK."""
    if status != OK:
        raise error_for(status, last_error())


def version() -> str:
    """hidetc_version()."""
    return lib.hidetc_version().decode()
