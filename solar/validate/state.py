"""The executor's mutable tensor store: data, written masks and versions.

Contract: one `TensorState` per live tensor. ``data`` is C-contiguous in the storage
dtype (`solar.validate.dtypes`); ``written`` is a boolean array of the same shape, or
``None`` once every element has been written (inputs and params start that way).
``version`` increases on every write, so derived data (padded copies, finiteness)
can be cached per version. `allocate_tensors` binds the caller's inputs (checked: E0304)
and allocates every output, unwritten; a temp lives only from the first kernel that
touches it to the last (`temp_lifetimes`, `allocate_unwritten`; Note [Temp lifetimes]).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from solar.diagnostics import ExecutionError, IRVerifyError
from solar.ir import (
    Access,
    Assign,
    Expr,
    For,
    If,
    Program,
    Reduce,
    TensorDecl,
    eval_int,
    walk_exprs,
)
from solar.ir.traversal import walk_stmts
from solar.validate.dtypes import round_to_dtype, storage_dtype

__all__ = [
    "TensorState",
    "allocate_unwritten",
    "allocate_tensors",
    "bind_input",
    "temp_lifetimes",
    "tensor_shape",
]


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


# Note [Temp lifetimes]
# A training step's IR holds every activation, gradient and optimizer intermediate as
# a program-level temp; allocating them all for the whole run made the executor's
# footprint the sum of every temp (ViT-B/16's AdamW step: one parameter-sized temp per
# update kernel, ~8.5 GiB at batch 2). Kernels run in launch order, so a temp is
# allocated (unwritten) before the first kernel that touches it and dropped after the
# last; the memory estimate (`solar.validate.memory`) charges the peak of the live set.


def temp_lifetimes(program: Program) -> dict[str, tuple[int, int]]:
    """Per temp, the first and the last kernel (launch order) that reads or writes it.

    A temp no kernel touches is absent: it is never allocated.
    """
    temps = {d.name for d in program.tensors_with_role("temp")}
    out: dict[str, tuple[int, int]] = {}
    for index, kernel in enumerate(program.kernels):
        if kernel.collective is not None:
            for name in (kernel.collective.source, kernel.collective.target):
                if name in temps:
                    out[name] = (out.get(name, (index, index))[0], index)
            continue
        for stmt, _ in walk_stmts(kernel.body):
            roots: tuple[Expr, ...]
            match stmt:
                case Assign(target=t, value=v) | Reduce(target=t, value=v):
                    roots = (t, v)
                case For(lo=lo, hi=hi):
                    roots = (lo, hi)
                case If(cond=c):
                    roots = (c,)
            for root in roots:
                for e in walk_exprs(root):
                    if isinstance(e, Access) and e.tensor in temps:
                        first = out.get(e.tensor, (index, index))[0]
                        out[e.tensor] = (first, index)
    return out


def allocate_unwritten(decl: TensorDecl, sizes: Mapping[str, int]) -> TensorState:
    """An output, temp or kernel-local, zeroed and unwritten (Note [Temp lifetimes]);
    an empty one (a zero extent) is already fully written: it has nothing to write."""
    shape = tensor_shape(decl, sizes)
    data = np.zeros(shape, dtype=storage_dtype(decl.dtype))
    return TensorState(decl, data, np.zeros(shape, dtype=bool) if data.size else None)


def allocate_tensors(
    program: Program, sizes: Mapping[str, int], inputs: Mapping[str, object]
) -> dict[str, TensorState]:
    """Bind inputs/params (checked, E0304) and allocate unwritten outputs.

    Temps are left to the executor, which allocates each for its lifetime.
    """
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
        elif decl.role == "output":
            tensors[decl.name] = allocate_unwritten(decl, sizes)
    return tensors
