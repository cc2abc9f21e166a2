"""Values a PyTorch capture is made of: tensor metas, recorded calls, the capture.

Contract: plain frozen dataclasses, no torch import at module level (``to_numpy``
imports it when called). Produced by capture.py, consumed by driver.py and
reference.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from solar.frontends.kit import NUMPY_WIDENED
from solar.frontends.pytorch.loader import ProgramSource

__all__ = [
    "CallKind",
    "CaptureInfo",
    "NamedTensor",
    "RecordedCall",
    "TensorArg",
    "TensorMeta",
    "TorchCapture",
    "flat_values",
    "functional_target",
    "op_name",
    "tensor_args",
    "to_numpy",
]

CallKind = Literal["functional", "view", "inplace", "out", "host"]


@dataclass(frozen=True, slots=True)
class TensorArg:
    """A tensor argument of a recorded call, by id."""

    id: int


@dataclass(frozen=True, slots=True)
class TensorMeta:
    """What eager PyTorch knows about a tensor value (never its data).

    Attributes:
        id: stable id within the capture (same Python tensor object -> same id).
        shape: sizes.
        dtype: torch dtype name, e.g. ``"float32"``.
        stride: strides in elements.
        storage_offset: offset into the storage, in elements.
        storage_id: id of the underlying storage (views share it).
    """

    id: int
    shape: tuple[int, ...]
    dtype: str
    stride: tuple[int, ...]
    storage_offset: int
    storage_id: int

    @property
    def numel(self) -> int:
        """Number of elements."""
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True, slots=True)
class NamedTensor:
    """A program-level tensor with its source name (state_dict key or attribute path)."""

    name: str
    meta: TensorMeta
    value: np.ndarray | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One ATen call.

    Attributes:
        index: position in the capture.
        target: overload name, ``str(func)``, e.g. ``"aten.addmm.default"``.
        args: positional args; tensors as `TensorArg`, lists as tuples, dtypes as names.
        kwargs: keyword args, likewise.
        outputs: flattened outputs; `TensorMeta` for tensors, else ``None``.
        kind: ``view`` (output aliases an input), ``inplace``/``out`` (writes into
            argument tensors), ``host`` (reads data to the host), else ``functional``.
        mutated: ids of the tensors written in place.
        module_path: dotted path of the innermost ``nn.Module`` running the call.
        counted_flops: FLOPs torch's ``FlopCounterMode`` formulas give this call
            (Note [Independent FLOP count] in capture.py); ``None`` when it has no
            formula for the op (or the capture did not count).
        padding_flops: of ``counted_flops``, the multiply-adds over zero padding
            (convolutions; Note [Padding FLOPs] in flops.py).
        source: the user's source line that made the call, ``model.py:42`` (the
            innermost frame outside torch and SOLAR; Note [Kernel sources] in
            recorder.py), or ``""`` when no such frame ran it.
    """

    index: int
    target: str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    outputs: tuple[TensorMeta | None, ...]
    kind: CallKind
    mutated: tuple[int, ...]
    module_path: str
    counted_flops: int | None = None
    padding_flops: int = 0
    source: str = ""


@dataclass(frozen=True, slots=True)
class CaptureInfo:
    """How a capture was made.

    Attributes:
        used_real_values: the program ran on real tensors (fake execution hit a
            data-dependent op).
        real_reason: why real values were needed.
        input_bytes: bytes of the program inputs.
        param_bytes: bytes of parameters and buffers.
        sizes: module-level integer constants of the model file at capture time.
        num_calls: number of recorded ATen calls.
        counted_flops: FLOPs ``torch.utils.flop_counter.FlopCounterMode``'s formulas
            give the captured forward (``None``: not counted).
        padding_flops: of those, the multiply-adds over zero padding.
        train_step: for a training step, ``(loss, optimizer)`` in words.
        on_meta: captured on the meta device (Note [Meta capture] in meta_mode.py).
    """

    used_real_values: bool
    real_reason: str | None
    input_bytes: int
    param_bytes: int
    sizes: Mapping[str, int]
    num_calls: int
    counted_flops: int | None = None
    padding_flops: int = 0
    train_step: tuple[str, str] | None = None
    on_meta: bool = False


@dataclass(frozen=True, slots=True)
class TorchCapture:
    """A captured program.

    Attributes:
        name: program name.
        calls: the ATen calls in execution order.
        inputs: flattened inputs; `TensorMeta` for tensor leaves, ``None`` otherwise.
        params: parameters and buffers by state_dict name.
        constants: other tensors the program reads (plain tensor attributes,
            ``torch.tensor(...)`` literals); named by attribute path or ``c<k>``.
        outputs: flattened outputs; `TensorMeta` for tensors, ``None`` otherwise.
        info: how the capture was made.
        source: how to rebuild the program (for reference values).
        constant_sites: for each constant, ``(call index, id)`` where it is first read.
    """

    name: str
    calls: tuple[RecordedCall, ...]
    inputs: tuple[TensorMeta | None, ...]
    params: tuple[NamedTensor, ...]
    constants: tuple[NamedTensor, ...]
    outputs: tuple[TensorMeta | None, ...]
    info: CaptureInfo
    source: ProgramSource = field(compare=False)
    constant_sites: tuple[tuple[int, int], ...] = ()


def to_numpy(t: Any) -> np.ndarray:
    """A real tensor as a numpy array (bf16/fp8 widened to f32, as the executor uses);
    a DTensor gives this rank's shard (``to_local``), as the rank's program reads it."""
    import torch
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes(), torch.no_grad():
        if hasattr(t, "to_local") and hasattr(t, "device_mesh"):
            t = t.to_local()
        t = t.detach().cpu()
        if str(t.dtype).removeprefix("torch.") in NUMPY_WIDENED:
            t = t.float()
        return np.array(t.numpy(), copy=True)


def tensor_args(call: RecordedCall) -> list[TensorArg]:
    """The tensor arguments of a call, lists flattened (``out=`` excluded)."""
    return [x for x in flat_values(call.args, call.kwargs) if isinstance(x, TensorArg)]


def flat_values(args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Any]:
    """Arguments then keyword arguments (``out=`` excluded), nested tuples flattened."""
    out: list[Any] = []

    def go(x: Any) -> None:
        if isinstance(x, tuple):
            for y in x:
                go(y)
        else:
            out.append(x)

    for a in args:
        go(a)
    for k, v in kwargs.items():
        if k != "out":
            go(v)
    return out


def op_name(target: str) -> str:
    """``"addmm"`` for ``"aten.addmm.default"``."""
    parts = target.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def functional_target(call: RecordedCall) -> str:
    """``aten.add_.Tensor -> aten.add.Tensor``; ``aten.add.out -> aten.add.out`` (op-wide)."""
    if call.kind != "inplace":
        return call.target
    ns, op, overload = [*call.target.split("."), "default"][:3]
    return f"{ns}.{op[:-1] if op.endswith('_') else op}.{overload}"
