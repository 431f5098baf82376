"""from_torch(): a PyTorch module exported to ONNX (in memory) and compiled."""
from __future__ import annotations

import inspect
import io
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from ._session import InferenceSession

#: dynamic_axes as torch.onnx.export takes them: per input/output name, the dynamic axes
#: as {axis: symbol} or a list of axes.
DynamicAxes = Mapping[str, Union[Mapping[int, str], Sequence[int]]]


def _tensors(example_inputs: Any) -> tuple:
    if isinstance(example_inputs, (tuple, list)):
        return tuple(example_inputs)
    return (example_inputs,)


def from_torch(module: Any, example_inputs: Any,
               dynamic_axes: Optional[DynamicAxes] = None,
               input_names: Optional[Sequence[str]] = None,
               output_names: Optional[Sequence[str]] = None,
               opset: int = 17, **session_kwargs: Any) -> InferenceSession:
    """Export a ``torch.nn.Module`` to ONNX and compile it into an InferenceSession.

    The module is exported with ``torch.onnx.export`` (the TorchScript exporter, in
    eval mode, ONNX opset ``opset``) into memory, then compiled by hidetc; no file is
    written. Outputs of the session's :meth:`~InferenceSession.run` match
    ``module(*example_inputs)`` (numpy arrays instead of tensors).

    Args:
        module: the module (or a ScriptModule / ScriptFunction).
        example_inputs: a tensor or a tuple of tensors the module is called with.
        dynamic_axes: as ``torch.onnx.export``'s: the exported model keeps those axes
            symbolic. hidetc compiles static shapes today (symbolic dimensions at run
            time are not implemented yet): the session fixes every such dimension to
            the example inputs' size (``dims=`` for named symbols, ``shapes=`` for axes
            given as a list), so it runs those shapes only. The ONNX model itself stays
            dynamic; compile another session for another size.
        input_names, output_names: the ONNX names (default: torch's); they are the
            names :meth:`~InferenceSession.run` takes and gives.
        opset: the ONNX opset to export (hidetc reads 7..17; default 17).
        **session_kwargs: :class:`InferenceSession`'s keyword arguments (``threads``,
            ``tune``, ``target``, ``dims``, ``shapes``, ...); explicit ``dims`` and
            ``shapes`` are merged over the ones derived from ``dynamic_axes``.

    Returns:
        The compiled session.
    """
    import torch  # only here: the rest of hidetc does not need PyTorch

    args = _tensors(example_inputs)
    buf = io.BytesIO()
    kw: Dict[str, Any] = dict(input_names=list(input_names) if input_names else None,
                              output_names=list(output_names) if output_names else None,
                              dynamic_axes=dict(dynamic_axes) if dynamic_axes else None,
                              opset_version=opset, do_constant_folding=True)
    try:
        params: Sequence[str] = list(inspect.signature(torch.onnx.export).parameters)
    except (TypeError, ValueError):
        params = []
    if "dynamo" in params:  # torch >= 2.5: keep the TorchScript exporter (no onnxscript)
        kw["dynamo"] = False
    with torch.no_grad():
        torch.onnx.export(module, args, buf, **kw)

    dims: Dict[str, int] = {}
    shapes: Dict[str, List[int]] = {}
    if dynamic_axes:
        names = list(input_names) if input_names else []
        for name, axes in dynamic_axes.items():
            if name not in names:
                continue  # an output's dynamic axes follow from the inputs'
            i = names.index(name)
            if i >= len(args) or not hasattr(args[i], "shape"):
                continue
            shape = [int(d) for d in args[i].shape]
            if isinstance(axes, Mapping):
                for axis, symbol in axes.items():
                    dims[str(symbol)] = shape[int(axis)]
            else:  # torch names the symbols itself: fix the input's whole shape
                shapes[name] = shape
    dims.update(session_kwargs.pop("dims", None) or {})
    shapes.update(session_kwargs.pop("shapes", None) or {})
    return InferenceSession(buf.getvalue(), dims=dims or None, shapes=shapes or None,
                            **session_kwargs)
