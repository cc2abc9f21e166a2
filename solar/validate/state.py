"""The executor's mutable tensor store: data, written masks and versions.

Contract: one `TensorState` per live tensor. ``data`` is C-contiguous in the storage
dtype (`solar.validate.dtypes`); ``written`` is a boolean array of the same shape, or
``None`` once every element has been written (inputs and params start that way).
``version`` increases on every write, so derived data (padded copies, finiteness)
can be cached per version. `allocate_tensors` binds the caller's inputs (checked: E0304)
and allocates every output and temp, unwritten.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from solar.diagnostics import ExecutionError, IRVerifyError
from solar.ir import Program, TensorDecl, eval_int
from solar.validate.dtypes import round_to_dtype, storage_dtype

__all__ = ["TensorState", "allocate_tensors", "bind_input", "tensor_shape"]


@dataclass(slots=True)
class TensorState:
    """One tensor during execution (mutable by design: it is the machine state)."""

    decl: TensorDecl
    data: np.ndarray
    written: np.ndarray | None
    version: int = 0
    _finite: tuple[int, bool] | None = field(default=None, repr=False)

    @property
    def fully_written(self) -> bool:
        """True when every element has been written."""
        return self.written is None

    def mark_changed(self) -> None:
        """Record a write; drop the written mask once it is all True."""
        self.version += 1
        written = self.written  # one read: statements may run in two threads
        if written is not None and bool(written.all()):
            self.written = None

    def all_finite(self) -> bool:
        """True when no element is inf or NaN (cached per version)."""
        if self._finite is not None and self._finite[0] == self.version:
            return self._finite[1]
        finite = self.data.dtype.kind != "f" or bool(np.isfinite(self.data).all())
        self._finite = (self.version, finite)
        return finite


def tensor_shape(decl: TensorDecl, sizes: Mapping[str, int]) -> tuple[int, ...]:
    """The concrete shape of a declaration at a resolved size binding (memoised)."""
    key = (id(decl), tuple(sizes.items()))
    hit = _SHAPES.get(key)
    if hit is not None and hit[0] is decl:
        return hit[1]
    shape = _tensor_shape(decl, sizes)
    if len(_SHAPES) > 4096:
        _SHAPES.clear()
    _SHAPES[key] = (decl, shape)
    return shape


_SHAPES: dict[tuple[int, tuple[tuple[str, int], ...]], tuple[TensorDecl, tuple[int, ...]]] = {}


def _tensor_shape(decl: TensorDecl, sizes: Mapping[str, int]) -> tuple[int, ...]:
    try:
        return tuple(eval_int(d, sizes) for d in decl.shape)
    except (KeyError, ValueError, ZeroDivisionError) as err:
        raise IRVerifyError(
            f"shape of `{decl.name}` is not an integer expression of sizes ({err})",
            code="E0209",
            span=decl.span,
        ) from None


def bind_input(decl: TensorDecl, value: object, shape: tuple[int, ...]) -> np.ndarray:
    """The caller's array in the storage dtype, read-only (no copy when it already fits)."""
    arr = np.asarray(value)
    if arr.shape != shape:
        raise ExecutionError(
            f"{decl.role} `{decl.name}` has shape {arr.shape}, expected {shape}",
            code="E0304",
            span=decl.span,
        )
    kind = arr.dtype.kind
    want = "f" if decl.dtype.is_float else ("b" if decl.dtype.value == "bool" else "i")
    accepted = {"f": "fiubV", "i": "iub", "b": "b"}[want]
    if kind not in accepted:
        raise ExecutionError(
            f"{decl.role} `{decl.name}` has dtype {arr.dtype}, expected {decl.dtype.value}",
            code="E0304",
            span=decl.span,
        )
    if want == "f" and (kind == "V" or (arr.dtype.itemsize <= 2 and arr.dtype != np.float16)):
        arr = arr.astype(np.float32)  # ml_dtypes bfloat16 / float8 arrays
    data = round_to_dtype(arr, decl.dtype)
    if not data.flags.c_contiguous:
        data = data.copy()  # (np.ascontiguousarray would turn 0-d into 1-d)
    if data is arr or np.shares_memory(data, arr):
        data = data.view()
    data.flags.writeable = False
    return data


def allocate_tensors(
    program: Program, sizes: Mapping[str, int], inputs: Mapping[str, object]
) -> dict[str, TensorState]:
    """Bind inputs/params (checked, E0304) and allocate unwritten outputs and temps."""
    tensors: dict[str, TensorState] = {}
    known = {d.name for d in program.tensors_with_role("input", "param")}
    unknown = sorted(set(inputs) - known)
    if unknown:
        raise ExecutionError(
            f"unknown input(s) {', '.join(unknown)}; the program takes "
            f"{', '.join(sorted(known)) or 'none'}",
            code="E0304",
        )
    for decl in program.tensors:
        shape = tensor_shape(decl, sizes)
        if decl.role in ("input", "param"):
            if decl.name not in inputs:
                raise ExecutionError(
                    f"missing {decl.role} `{decl.name}`", code="E0304", span=decl.span
                )
            tensors[decl.name] = TensorState(decl, bind_input(decl, inputs[decl.name], shape), None)
        else:
            data = np.zeros(shape, dtype=storage_dtype(decl.dtype))
            tensors[decl.name] = TensorState(decl, data, np.zeros(shape, dtype=bool))
    return tensors
