"""InferenceSession (ONNX Runtime's call shape) and compile(), over hidetc_session_*."""
from __future__ import annotations

import ctypes
import os
import tempfile
import threading
from ctypes import byref, c_char_p, c_int64, c_void_p
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _lib
from ._lib import InvalidArgument, Unsupported, check, lib

#: What a model may be given as: a path (ONNX file, ``builtin:NAME`` or a compiled-model
#: file written by :func:`compile`), or the bytes of an ONNX model or compiled-model file.
ModelSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]
#: A compile-progress callback: ``progress(stage, done, total)``.
ProgressFn = Callable[[str, int, int], None]

# numpy dtype -> hidetc_dtype (bfloat16 only where ml_dtypes gives it its own dtype)
_CODES: Dict[np.dtype, int] = {}
for _code, (_dt, _) in _lib.DTYPES.items():
    _CODES.setdefault(_dt, _code)

# ONNX Runtime's execution providers and the hidetc targets they stand for
_PROVIDER_TARGETS = {"CPUExecutionProvider": "cpu", "CUDAExecutionProvider": "cuda"}

# Outputs the session allocates are aligned like the library's own tensors.
_ALIGN = 64


class NodeArg:
    """An input or output of a session, as ONNX Runtime's ``NodeArg``.

    Attributes:
        name: the ONNX value's name.
        shape: one entry per dimension: an ``int``, or the ONNX symbol (a ``str``) of a
            dimension that stays symbolic at run time (``None`` for one without a name).
            Today every symbol is fixed when the session compiles (``dims=``), so shapes
            are all ints; :attr:`dim_names` still tells which symbol each came from.
        type: ONNX Runtime's type string, e.g. ``'tensor(float)'``.
        dtype: the numpy dtype of the arrays this input takes / output gives.
        dim_names: per dimension, the ONNX symbol (``dim_param``) it came from, or None.
    """

    __slots__ = ("name", "shape", "type", "dtype", "dim_names", "_code")

    def __init__(self, name: str, shape: List[Union[int, str, None]], type: str,
                 dtype: np.dtype, dim_names: List[Optional[str]], code: int) -> None:
        self.name = name
        self.shape = shape
        self.type = type
        self.dtype = dtype
        self.dim_names = dim_names
        self._code = code

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"

    def _static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)


class GraphOptimizationLevel:
    """ONNX Runtime's optimization levels, accepted for compatibility (hidetc always
    optimizes fully)."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode:
    """ONNX Runtime's execution modes, accepted for compatibility (ignored)."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    """ONNX Runtime's ``SessionOptions``, for programs that pass one.

    Only ``intra_op_num_threads`` is read (the run's thread count; 0: all cores); the
    other attributes are accepted and ignored. hidetc's own options are the keyword
    arguments of :class:`InferenceSession`.
    """

    def __init__(self) -> None:
        self.intra_op_num_threads: int = 0
        self.inter_op_num_threads: int = 0
        self.graph_optimization_level: int = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode: int = ExecutionMode.ORT_SEQUENTIAL
        self.log_severity_level: int = 2
        self.enable_profiling: bool = False
        self.enable_mem_pattern: bool = True
        self.enable_cpu_mem_arena: bool = True


class RunOptions:
    """ONNX Runtime's ``RunOptions``, accepted by :meth:`InferenceSession.run` and
    ignored."""

    def __init__(self) -> None:
        self.log_severity_level: int = 2
        self.run_tag: str = ""
        self.terminate: bool = False


def get_available_providers() -> List[str]:
    """ONNX Runtime's provider names that ``providers=`` maps to hidetc targets."""
    return list(_PROVIDER_TARGETS)


def _encode(s: Optional[Union[str, "os.PathLike[str]"]]) -> Optional[bytes]:
    return None if s is None else os.fsencode(os.fspath(s))


def _int(name: str, v: Any, lo: int = 0) -> int:
    try:
        i = int(v)
    except (TypeError, ValueError):
        raise InvalidArgument(f"{name} must be an integer, got {v!r}") from None
    if i != v or i < lo:
        raise InvalidArgument(f"{name} must be an integer >= {lo}, got {v!r}")
    return i


class _Options:
    """hidetc_session_options built from keyword arguments, with everything its pointers
    point to kept alive as long as this object."""

    def __init__(self, threads: Optional[int], tune: int, target: Optional[str],
                 dims: Optional[Mapping[str, int]],
                 shapes: Optional[Mapping[str, Sequence[int]]], cache_dir: Optional[str],
                 pin_threads: bool, verbose: bool, max_memory: Optional[int],
                 progress: Optional[ProgressFn],
                 tune_shapes: Optional[Mapping[str, Sequence[int]]] = None) -> None:
        self.padded = _lib.PaddedSessionOptions()
        o = self.padded.o
        lib.hidetc_session_options_init(byref(o))
        self._keep: List[Any] = []
        self.progress_error: Optional[BaseException] = None
        if threads is not None:
            o.num_threads = _int("threads", threads)
        if tune not in (0, 1, 2):
            raise InvalidArgument(f"tune must be 0, 1 or 2, got {tune!r}")
        o.tune_level = int(tune)
        if target is not None:
            o.target = self._str(target)
        if cache_dir is not None:
            o.cache_dir = self._str(cache_dir)
        if dims:
            arr = (_lib.Dim * len(dims))()
            for k, (name, value) in enumerate(dims.items()):
                arr[k].name = self._str(name)
                arr[k].value = _int(f"dims[{name!r}]", value)
            self._keep.append(arr)
            o.num_dims, o.dims = len(dims), ctypes.cast(arr, ctypes.POINTER(_lib.Dim))
        if shapes:
            arr2 = (_lib.InputShape * len(shapes))()
            for k, (name, shape) in enumerate(shapes.items()):
                sizes = [_int(f"shapes[{name!r}]", d) for d in shape]
                arr2[k].input = self._str(name)
                arr2[k].ndim = len(sizes)
                arr2[k].dims = self._i64s(sizes)
            self._keep.append(arr2)
            o.num_shapes = len(shapes)
            o.shapes = ctypes.cast(arr2, ctypes.POINTER(_lib.InputShape))
        if tune_shapes:
            arr3 = (_lib.TuneShape * len(tune_shapes))()
            for k, (name, values) in enumerate(tune_shapes.items()):
                vals = [_int(f"tune_shapes[{name!r}]", v, 1) for v in values]
                if not vals:
                    raise InvalidArgument(f"tune_shapes[{name!r}]: no values")
                arr3[k].name = self._str(name)
                arr3[k].num_values = len(vals)
                arr3[k].values = self._i64s(vals)
            self._keep.append(arr3)
            o.num_tune_shapes = len(tune_shapes)
            o.tune_shapes = ctypes.cast(arr3, ctypes.POINTER(_lib.TuneShape))
        o.pin_threads = 1 if pin_threads else 0
        o.verbose = 1 if verbose else 0
        if max_memory is not None:
            o.max_memory = _int("max_memory", max_memory)
        if progress is not None:
            def call(user: Any, stage: bytes, done: int, total: int) -> None:
                if self.progress_error is not None:
                    return
                try:
                    progress(stage.decode() if stage else "", done, total)
                except BaseException as e:  # re-raised when the call returns
                    self.progress_error = e

            fn = _lib.PROGRESS_FN(call)
            self._keep.append(fn)
            o.progress = fn

    def _i64s(self, values: Sequence[int]) -> Any:
        """An int64 array of values (at least one element), kept alive with the options."""
        buf = (c_int64 * max(1, len(values)))(*values)
        self._keep.append(buf)
        return ctypes.cast(buf, ctypes.POINTER(c_int64))

    def _str(self, s: Union[str, "os.PathLike[str]"]) -> bytes:
        b = _encode(s)
        assert b is not None
        self._keep.append(b)
        return b

    def ref(self) -> Any:
        return byref(self.padded.o)


def _node_arg(info: _lib.ValueInfo) -> NodeArg:
    dtype, type_str = _lib.DTYPES.get(info.dtype, (np.dtype(np.uint8), f"hidetc({info.dtype})"))
    shape: List[Union[int, str, None]] = []
    names: List[Optional[str]] = []
    for d in range(info.ndim):
        n = info.dim_names[d]
        name = n.decode() if n is not None else None
        names.append(name)
        v = int(info.dims[d])
        shape.append(v if v >= 0 else name)
    return NodeArg(info.name.decode() if info.name else "", shape, type_str, dtype, names,
                   info.dtype)


def _empty_aligned(shape: Tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An uninitialized C-contiguous array whose data starts at a 64-byte boundary."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + _ALIGN, dtype=np.uint8)
    off = (-raw.ctypes.data) % _ALIGN
    return raw[off:off + nbytes].view(dtype).reshape(shape)


def _wrap(arr: np.ndarray, code: int, keep: List[Any]) -> int:
    """hidetc_tensor_wrap over an array's memory (no copy); returns the handle."""
    dims = (c_int64 * max(1, arr.ndim))(*arr.shape)
    keep.append(dims)
    t = c_void_p()
    check(lib.hidetc_tensor_wrap(byref(t), code, arr.ndim, dims, c_void_p(arr.ctypes.data)))
    assert t.value is not None
    return t.value


def _tensor_to_array(t: int) -> np.ndarray:
    """A copy of a library-allocated tensor as a numpy array."""
    dims = (c_int64 * _lib.MAX_DIMS)()
    ndim = lib.hidetc_tensor_dims(t, dims)
    code = lib.hidetc_tensor_dtype(t)
    dtype = _lib.DTYPES[code][0]
    out = np.empty(tuple(dims[:ndim]), dtype=dtype)
    n = lib.hidetc_tensor_bytes(t)
    if n:
        ctypes.memmove(out.ctypes.data, lib.hidetc_tensor_data(t), min(n, out.nbytes))
    return out


def _target_provider(target: str) -> str:
    if target.startswith("cpu"):
        return "CPUExecutionProvider"
    if target.startswith("cuda"):
        return "CUDAExecutionProvider"
    if target.startswith("opencl"):
        return "OpenCLExecutionProvider"
    return target


class InferenceSession:
    """A compiled model, run like ONNX Runtime's ``InferenceSession``.

    ``hidetc.InferenceSession(path)`` compiles an ONNX model (a file, ``builtin:NAME``, or
    its bytes) for the target at creation, or loads a compiled-model file written by
    :func:`hidetc.compile` (told by its magic bytes); :meth:`run` then runs it. A program
    written for ONNX Runtime switches by changing its import: ``sess_options=`` (only
    ``intra_op_num_threads`` is read), ``providers=`` (``CUDAExecutionProvider`` and
    ``CPUExecutionProvider`` map to the targets ``cuda`` and ``cpu``, tried in order) and
    the ``run_options`` argument of :meth:`run` are accepted.

    Args:
        path_or_bytes: the model: a path, or the bytes of an ONNX model or compiled-model
            file (an ONNX model's external data is not available from bytes).
        threads: worker threads of each run (None: all cores). A compiled-model file runs
            with the count it was compiled for: leave this None or give that count.
        tune: 0 (the templates' default configs), 1 or 2 (tune over the small / full
            schedule space at creation; winners are kept in the kernel cache).
        tune_shapes: with ``tune``, the values symbolic dimensions are tuned at, e.g.
            ``{"seq": [32, 128]}`` (every combination; default: the hints). A kernel whose
            best config differs keeps one program per size range; each run picks the one
            tuned nearest its shape (docs/dynamic.md).
        target: ``"cpu"`` (this CPU; the default), ``"cpu:avx2"``, ``"opencl"``,
            ``"cuda"``, ... (docs/targets.md).
        dims: fix symbolic dimensions (ONNX ``dim_param``) by name, e.g.
            ``{"batch": 8}``: static kernels for that value. A symbol left open stays
            symbolic: one compile serves every value, and :meth:`run` takes inputs of
            any valid shape (docs/dynamic.md).
        shapes: fix inputs' whole shapes by input name, e.g. ``{"x": [8, 3, 224, 224]}``
            (also dimensions without a name).
        cache_dir: the kernel cache folder (None: ``$HIDETC_CACHE_DIR`` or
            ``~/.cache/hidetc``).
        pin_threads: pin the run's threads to CPUs.
        verbose: compile notes on stderr.
        max_memory: bytes a run may hold (arena, weights, inputs and outputs); None: no
            limit. A model over it is refused at creation, naming its largest tensor.
        progress: called as ``progress(stage, done, total)`` while the model compiles
            (stage: ``"import"``, ``"optimize"``, ``"schedule"``, ``"tune"``,
            ``"build"``, ``"done"``); an exception it raises is re-raised at the end.
        sess_options, providers, provider_options: ONNX Runtime's arguments (above).

    Raises:
        HidetcError: a subclass by status, with the library's message (e.g.
            :class:`InvalidArgument` for a model with an unfixed symbolic dimension,
            :class:`IOFailure` for a missing file).

    Runs may be called from several threads at once (each concurrent run gets its own
    intermediate memory; weights and kernels are shared). The session is freed when it is
    garbage-collected, by :meth:`close`, or at the end of a ``with`` block.
    """

    def __init__(self, path_or_bytes: ModelSource, threads: Optional[int] = None,
                 tune: int = 0, target: Optional[str] = None,
                 dims: Optional[Mapping[str, int]] = None,
                 shapes: Optional[Mapping[str, Sequence[int]]] = None,
                 cache_dir: Optional[str] = None, pin_threads: bool = False,
                 verbose: bool = False, *, max_memory: Optional[int] = None,
                 progress: Optional[ProgressFn] = None,
                 tune_shapes: Optional[Mapping[str, Sequence[int]]] = None,
                 sess_options: Any = None,
                 providers: Optional[Sequence[Any]] = None,
                 provider_options: Optional[Sequence[Any]] = None) -> None:
        self._handle: Optional[int] = None
        self._cond = threading.Condition()
        self._active = 0
        self._target: str = ""
        self._inputs: List[NodeArg] = []
        self._outputs: List[NodeArg] = []
        self._input_by_name: Dict[str, NodeArg] = {}
        self._output_by_name: Dict[str, NodeArg] = {}
        # ONNX Runtime's second positional argument is sess_options.
        if threads is not None and not isinstance(threads, (int, np.integer)):
            if sess_options is not None:
                raise TypeError("InferenceSession: threads given twice")
            sess_options, threads = threads, None
        if threads is None and sess_options is not None:
            n = getattr(sess_options, "intra_op_num_threads", 0) or 0
            threads = n if n > 0 else None
        targets: List[Optional[str]] = [target]
        if target is None and providers:
            names = [p[0] if isinstance(p, (tuple, list)) else p for p in providers]
            targets = [_PROVIDER_TARGETS[p] for p in names if p in _PROVIDER_TARGETS] or [None]
        for k, tgt in enumerate(targets):
            try:
                self._create(path_or_bytes, threads, tune, tgt, dims, shapes, cache_dir,
                             pin_threads, verbose, max_memory, progress, tune_shapes)
                break
            except _lib.HidetcError:
                if k == len(targets) - 1:
                    raise
        assert self._handle is not None
        h = self._handle
        self._target = (lib.hidetc_session_target(h) or b"").decode()
        self._inputs = [self._info(lib.hidetc_session_input_info, i)
                        for i in range(lib.hidetc_session_num_inputs(h))]
        self._outputs = [self._info(lib.hidetc_session_output_info, i)
                         for i in range(lib.hidetc_session_num_outputs(h))]
        self._input_by_name = {a.name: a for a in self._inputs}
        self._output_by_name = {a.name: a for a in self._outputs}

    def _create(self, src: ModelSource, threads: Optional[int], tune: int,
                target: Optional[str], dims: Optional[Mapping[str, int]],
                shapes: Optional[Mapping[str, Sequence[int]]], cache_dir: Optional[str],
                pin_threads: bool, verbose: bool, max_memory: Optional[int],
                progress: Optional[ProgressFn],
                tune_shapes: Optional[Mapping[str, Sequence[int]]] = None) -> None:
        opts = _Options(threads, tune, target, dims, shapes, cache_dir, pin_threads, verbose,
                        max_memory, progress, tune_shapes)
        h = c_void_p()
        if isinstance(src, (bytes, bytearray, memoryview)):
            data = src if isinstance(src, bytes) else bytes(src)
            st = lib.hidetc_session_create_from_bytes(byref(h), data, len(data), opts.ref())
        else:
            if not isinstance(src, (str, os.PathLike)):
                raise TypeError(f"InferenceSession: a path or bytes, not {type(src).__name__}")
            st = lib.hidetc_session_create(byref(h), _encode(src), opts.ref())
        if st != _lib.OK:
            raise _lib.error_for(st, _lib.last_error())
        self._handle = h.value
        if opts.progress_error is not None:
            self.close()
            raise opts.progress_error

    def _info(self, fn: Any, i: int) -> NodeArg:
        info = _lib.ValueInfo()
        check(fn(self._handle, i, byref(info)))
        return _node_arg(info)

    # ---- ONNX Runtime's methods ----

    def get_inputs(self) -> List[NodeArg]:
        """The model's inputs, in order."""
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        """The model's outputs, in order."""
        return list(self._outputs)

    def get_providers(self) -> List[str]:
        """ONNX Runtime's name for the target the session runs on."""
        return [_target_provider(self._target)]

    @property
    def target(self) -> str:
        """The target the session's kernels run on (``"cpu"``, ``"cpu:avx2"``,
        ``"opencl"``, ...)."""
        return self._target

    def run(self, output_names: Optional[Sequence[str]],
            input_feed: Mapping[str, Any], run_options: Any = None, *,
            outputs: Optional[Mapping[str, np.ndarray]] = None) -> List[np.ndarray]:
        """Run the model once.

        Args:
            output_names: the outputs to compute, by name (None: every output, in order).
            input_feed: every input by name: numpy arrays (or anything
                ``numpy.asarray`` takes). A C-contiguous, aligned array of the input's
                dtype is read in place; any other is converted first
                (``numpy.ascontiguousarray(x, dtype)``; only conversions within a kind
                or to a wider one, e.g. float64 -> float32 or int -> float, never
                float -> int).
            run_options: ONNX Runtime's RunOptions; ignored.
            outputs: hidetc's own: arrays to write outputs into, by name (C-contiguous,
                writeable, of the output's dtype and shape); they are returned as given.

        Returns:
            One numpy array per requested output. Each is allocated here and written by
            the library in place (no copy).

        Raises:
            InvalidArgument: an unknown or missing input or output, or an input of the
                wrong shape (the message names the input, dimension and expected size).
        """
        if input_feed is None:
            raise TypeError("run: input_feed is required (a dict of input name -> array)")
        # Named here when the count is off (the library names them when it is right).
        if len(input_feed) != len(self._inputs):
            have = ", ".join(repr(k) for k in input_feed) or "none"
            unknown = [k for k in input_feed if k not in self._input_by_name]
            if unknown:
                raise InvalidArgument(
                    f"run: the model has no input {unknown[0]!r} (its inputs: "
                    f"{', '.join(repr(a.name) for a in self._inputs)})")
            missing = [a.name for a in self._inputs if a.name not in input_feed]
            raise InvalidArgument(
                f"run: input {', '.join(repr(m) for m in missing)} missing from the input "
                f"feed (it has: {have})")
        keep: List[Any] = []
        handles: List[int] = []
        self._enter()
        try:
            n = len(input_feed)
            in_names = (c_char_p * max(1, n))()
            in_tensors = (c_void_p * max(1, n))()
            for k, (name, value) in enumerate(input_feed.items()):
                arr, code = self._input_array(name, value)
                keep.append(arr)
                nb = name.encode()
                keep.append(nb)
                in_names[k] = nb
                t = _wrap(arr, code, keep)
                handles.append(t)
                in_tensors[k] = t

            names = list(output_names) if output_names is not None else None
            sel = names if names is not None else [a.name for a in self._outputs]
            m = len(sel)
            out_names = (c_char_p * max(1, m))()
            out_tensors = (c_void_p * max(1, m))()
            results: List[Optional[np.ndarray]] = [None] * m
            given: Mapping[str, np.ndarray] = outputs or {}
            made: Dict[str, np.ndarray] = {}  # an output asked for twice: one array
            for j, name in enumerate(sel):
                if not isinstance(name, str):
                    raise TypeError(f"run: output names are strings, got {name!r}")
                nb = name.encode()
                keep.append(nb)
                out_names[j] = nb
                meta = self._output_by_name.get(name)
                out: Optional[np.ndarray] = given.get(name)
                out_code = 0
                if out is not None:
                    if not isinstance(out, np.ndarray) or not out.flags.c_contiguous \
                            or not out.flags.writeable:
                        raise InvalidArgument(
                            f"run: outputs[{name!r}] must be a writeable C-contiguous "
                            f"numpy array")
                    c = _CODES.get(out.dtype)
                    if c is None:
                        raise InvalidArgument(
                            f"run: outputs[{name!r}] has dtype {out.dtype}, which hidetc "
                            f"has no type for")
                    out_code = c
                elif meta is not None and meta._static():
                    out = made.get(name)
                    if out is None:
                        out = _empty_aligned(tuple(meta.shape), meta.dtype)  # type: ignore
                        made[name] = out
                    out_code = meta._code
                if out is not None:
                    t = _wrap(out, out_code, keep)
                    handles.append(t)
                    out_tensors[j] = t
                    results[j] = out
                # else: NULL, the library allocates it (a dimension known only at run time)
            for name in given:
                if name not in sel:
                    raise InvalidArgument(f"run: outputs[{name!r}] is not a requested output")

            st = lib.hidetc_session_run(self._handle, n, in_names, in_tensors, m,
                                        out_names if names is not None else None,
                                        out_tensors)
            # The library's own tensors: copied out, then freed (also after a failure).
            for j in range(m):
                lt = out_tensors[j]
                if results[j] is None and lt:
                    handles.append(lt)
                    if st == _lib.OK:
                        results[j] = _tensor_to_array(lt)
            if st != _lib.OK:
                raise _lib.error_for(st, _lib.last_error())
            return results  # type: ignore[return-value]
        finally:
            for t in handles:
                lib.hidetc_tensor_free(t)
            self._leave()

    def _input_array(self, name: Any, value: Any) -> Tuple[np.ndarray, int]:
        if not isinstance(name, str):
            raise TypeError(f"run: input names are strings, got {name!r}")
        meta = self._input_by_name.get(name)
        if meta is None:  # the library reports the unknown name
            arr = np.ascontiguousarray(value)
            code = _CODES.get(arr.dtype)
            if code is None:
                raise InvalidArgument(f"run: input {name!r}: unsupported dtype {arr.dtype}")
            return arr, code
        want = meta.dtype
        arr = value if isinstance(value, np.ndarray) else np.asarray(value)
        if arr.dtype != want:
            if not np.can_cast(arr.dtype, want, casting="same_kind"):
                raise InvalidArgument(
                    f"run: input {name!r} is {meta.type}; an array of {arr.dtype} is not "
                    f"converted to {want} (convert it explicitly)")
            arr = np.ascontiguousarray(arr, dtype=want)
        elif not (arr.flags.c_contiguous and arr.flags.aligned):
            arr = np.ascontiguousarray(arr)
        return arr, meta._code

    # ---- lifetime ----

    def _enter(self) -> None:
        with self._cond:
            if self._handle is None:
                raise InvalidArgument("run: the session is closed")
            self._active += 1

    def _leave(self) -> None:
        with self._cond:
            self._active -= 1
            if self._active == 0:
                self._cond.notify_all()

    def close(self) -> None:
        """Free the session now (after the runs in flight on other threads return)."""
        with self._cond:
            while self._active:
                self._cond.wait()
            h, self._handle = self._handle, None
        if h is not None:
            lib.hidetc_session_free(h)

    def __enter__(self) -> "InferenceSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self, _free: Any = lib.hidetc_session_free) -> None:
        h = getattr(self, "_handle", None)
        if h is not None:
            self._handle = None
            _free(h)

    def __repr__(self) -> str:
        ins = ", ".join(f"{a.name}{a.shape}" for a in self._inputs)
        outs = ", ".join(f"{a.name}{a.shape}" for a in self._outputs)
        return f"<hidetc.InferenceSession target={self._target!r} inputs=[{ins}] outputs=[{outs}]>"


def compile(model: ModelSource, out_path: Union[str, "os.PathLike[str]"],
            threads: Optional[int] = None, tune: int = 0, target: Optional[str] = None,
            dims: Optional[Mapping[str, int]] = None,
            shapes: Optional[Mapping[str, Sequence[int]]] = None, *,
            cache_dir: Optional[str] = None, verbose: bool = False,
            tune_shapes: Optional[Mapping[str, Sequence[int]]] = None) -> None:
    """Compile a model once and write a compiled-model file (as ``hidetc compile``).

    The file holds the kernels' shared objects, the memory plan and the weights:
    ``InferenceSession(out_path)`` loads it without a C compiler or the kernel cache and
    gives the same outputs, bit for bit, on a machine with the same CPU features. It runs
    with the thread count it was compiled with (``threads``; None: all cores here). The
    other arguments are :class:`InferenceSession`'s. A compiled model holds machine code:
    load only files you trust.

    Raises:
        HidetcError: a subclass by status, with the library's message.
    """
    out = _encode(out_path)
    if _lib.HAS_SESSION_SAVE:
        with InferenceSession(model, threads=threads, tune=tune, target=target, dims=dims,
                              shapes=shapes, cache_dir=cache_dir, verbose=verbose,
                              tune_shapes=tune_shapes) as s:
            check(lib.hidetc_session_save(s._handle, out))
        return
    # A library without hidetc_session_save: the model API, which has no tune, target,
    # dims or shapes options.
    if tune or dims or shapes or tune_shapes or target not in (None, "cpu"):
        raise Unsupported(
            "hidetc.compile: tune, target, dims and shapes need hidetc_session_save, which "
            "this hidetc library does not have")
    opts = _lib.Options()
    cd = _encode(cache_dir)
    opts.cache_dir = cd
    opts.num_threads = _int("threads", threads) if threads is not None else 0
    opts.verbose = 1 if verbose else 0
    tmp: Optional[str] = None
    try:
        if isinstance(model, (bytes, bytearray, memoryview)):
            fd, tmp = tempfile.mkstemp(suffix=".onnx", prefix="hidetc-")
            with os.fdopen(fd, "wb") as f:
                f.write(model)
            path = os.fsencode(tmp)
        else:
            path = _encode(model)  # type: ignore[assignment]
        m = c_void_p()
        check(lib.hidetc_model_load_onnx(byref(m), path, byref(opts)))
        try:
            check(lib.hidetc_model_save(m, out))
        finally:
            lib.hidetc_model_free(m)
    finally:
        if tmp is not None:
            os.unlink(tmp)
