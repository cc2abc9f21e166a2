"""The ATen lowering table: op name -> function that emits one IR kernel.

Contract: a lowering receives an `OpCall` whose tensor arguments are `TensorInfo`
values (already declared in the program, possibly views of another tensor) and
whose outputs are already declared; it emits exactly one kernel (or none, for a
pure view, by returning view `TensorInfo`s) through the kit's `LowerCtx` (the one
lowering context of every frontend; its kernels are named ``<module path>_<op>``). Lowerings never
import torch at module import time and never see torch tensors: shapes, dtypes
and scalar arguments are plain Python values.

Views: eager PyTorch moves no data for ``view``/``permute``/``expand``/``slice``...
A view lowering returns `TensorInfo` objects sharing the producer's storage with
an index map; consumers read through `LowerCtx.read`, which composes the map, so
no kernel (and no traffic) is charged. Ops that really copy (``clone``,
``contiguous`` on a permuted tensor, ``_to_copy``) emit a copy kernel.

In-place ops (``add_``, ``index_put_``...) are looked up under their functional name
(``aten.add.Tensor``); their declared output is either a new version of the mutated
tensor or (for a partial or scatter-like write) the mutated view itself, so a
lowering that can skip copying ``self`` checks `lowering_utils.same_value`. Scalar
arguments that were 0-d constant tensors (``x[:, 0] = 0.0``) arrive as Python numbers.
A lowering that cannot handle a variant raises `UnsupportedOpError`; the driver then
reports the op as uncovered instead of failing.
The values, index helpers, the context and the table type are `solar.frontends.kit`'s;
the table loads every ``ops_*`` module of this package on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from solar.frontends.kit import LowerCtx, LoweringTable, TensorInfo
from solar.ir import DType, Program

__all__ = ["LOWERINGS", "LowerCtx", "LoweringFn", "OpCall", "OpFallback"]


@dataclass(frozen=True, slots=True)
class OpCall:
    """One recorded ATen call.

    Attributes:
        target: the overload name, e.g. ``"aten.addmm.default"``.
        args: positional arguments; tensors replaced by `TensorInfo`, lists kept as
            tuples, scalars as Python values.
        kwargs: keyword arguments, likewise.
        outputs: the declared output tensors (in the op's output order, list outputs
            flattened); ``None`` for non-tensor outputs and for the outputs of view ops
            (``aten.view``, ``aten.permute``...), which a lowering returns itself.
        out_shapes: the shapes eager PyTorch gave the outputs (``None`` for non-tensors);
            view lowerings use these instead of re-deriving ``-1`` sizes or clamped slices.
        out_dtypes: the dtypes of the outputs, likewise.
        index: position of the call in the capture (``-1`` when built by hand).
        module_path: dotted ``nn.Module`` path the call ran in (``""`` at top level).
        arg_layouts: eager's ``(strides, storage_offset)`` of each positional tensor
            argument when the call ran (``None`` for other arguments); only the
            stride-level ops (``as_strided``) need them.
    """

    target: str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    outputs: tuple[TensorInfo | None, ...]
    out_shapes: tuple[tuple[int, ...] | None, ...] = ()
    out_dtypes: tuple[DType | None, ...] = ()
    index: int = -1
    module_path: str = ""
    arg_layouts: tuple[tuple[tuple[int, ...], int] | None, ...] = ()

    @property
    def op(self) -> str:
        """The op name without namespace and overload: ``"addmm"`` for ``aten.addmm.default``."""
        parts = self.target.split(".")
        return parts[1] if len(parts) > 1 else parts[0]

    def arg(self, index: int, name: str, default: Any = None) -> Any:
        """The argument at ``index`` or keyword ``name``, else ``default``."""
        if index < len(self.args):
            return self.args[index]
        return self.kwargs.get(name, default)


LoweringFn = Callable[[LowerCtx, OpCall], "tuple[TensorInfo | None, ...] | None"]
"""A lowering emits one kernel via ``ctx`` (returning ``None``), or returns views."""

LOWERINGS: LoweringTable[LoweringFn] = LoweringTable(
    package="solar.frontends.pytorch", op_wide=True
)
"""ATen overload name (``aten.mm.default``) or op-wide name (``aten.mm``) -> lowering."""

OpFallback = Callable[[OpCall], Program | None]
"""Per-op fallback: given an uncovered call, return a kernel program whose inputs are
``a0, a1, ...`` (the call's tensor arguments in order, args then kwargs, lists
flattened, at their logical shapes) and whose outputs are ``out0, out1, ...`` (the
call's tensor outputs), or ``None`` to leave the op uncovered."""
