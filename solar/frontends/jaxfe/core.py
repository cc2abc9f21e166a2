"""What every jaxpr lowering sees of its operands: tensors, literals, dtypes.

Contract: a lowering (see `solar.frontends.jaxfe.driver.EqnCtx`, the kit's `LowerCtx`
with the equation attached) receives inputs that are `EqnOperand` values (a declared
tensor, possibly a free view of one, or a literal) and emits one kernel through
``ctx.kernel()``, writing each output it asks for with ``ctx.out(k)``; or, for a view or
alias op, returns the output operands itself and emits nothing. Lowerings never import
jax: shapes, dtypes and parameters are plain Python values or jax parameter objects
read by attribute. A variant a lowering cannot express raises `UnsupportedOpError`, which the
driver turns into an uncovered op (its outputs become program inputs).

Views (Note [Free views]): ``reshape``, ``squeeze``, ``expand_dims``,
``broadcast_in_dim``, ``tile``, ``transpose``, ``slice``, ``split`` and ``unstack`` move
no data in XLA (they are layout metadata, fold into a dot's dimension numbers, or fuse
into their consumer's indexing) and are free views here, as ``view``/``expand``/
``permute``/slicing/``split``/``unbind`` are in the PyTorch frontend: the view is a
`TensorInfo` with an index map (affine for all but a reshape's ``//`` and ``%``), and
consumers read through it. Charging a copy kernel for them would put the JAX bound of
``x.T @ w`` above the PyTorch bound of ``x.t() @ w``, and above what XLA runs. Ops that
produce new values element by element (``rev``, ``pad``, ``concatenate``, ``gather``...)
are kernels, because an unfused executor materialises them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from solar.frontends.kit import IR_DTYPES, TensorInfo, UnsupportedOpError, shape_numel
from solar.ir import DType, Expr, lit

__all__ = [
    "DTYPES",
    "UINT8_SAFE",
    "Lit",
    "Opaque",
    "EqnOperand",
    "Value",
    "bread",
    "ir_dtype",
    "operand_shape",
    "read",
    "uint8_inexact",
]


DTYPES: Mapping[str, DType] = {**IR_DTYPES, "uint8": DType.I8}
"""numpy/jax dtype names the IR represents; anything else (uint32 PRNG bits...) is uncovered.

``uint8`` (images, observations) is stored as ``i8`` holding the same bits: same bytes,
so bounds stay exact. Only bit-preserving primitives (`UINT8_SAFE`) may touch uint8
values; ``convert_element_type`` decodes them (``x % 256``). The reference hands uint8
arrays over as their int8 view."""

UINT8_SAFE = frozenset(
    {
        "reshape",
        "squeeze",
        "expand_dims",
        "broadcast_in_dim",
        "transpose",
        "rev",
        "slice",
        "pad",
        "concatenate",
        "stack",
        "split",
        "unstack",
        "tile",
        "dynamic_slice",
        "dynamic_update_slice",
        "gather",
        "scatter",
        "select_n",
        "eq",
        "ne",
        "convert_element_type",
        "copy",
        "copy_p",
        "stop_gradient",
        "device_put",
        "optimization_barrier",
        "scan",
        "while",
        "cond",
    }
)
"""Primitives exact on uint8 values stored as int8 bits (moves, equality, conversion)."""

_INDEX_OPERANDS = {"gather": 1, "scatter": 1, "dynamic_slice": 1, "dynamic_update_slice": 2}
"""Position of the first index operand of primitives that read indices."""


def _is_uint8(atom: Any) -> bool:
    return str(getattr(getattr(atom, "aval", None), "dtype", "")) == "uint8"


def uint8_inexact(eqn: Any) -> bool:
    """True if ``eqn`` would compute on uint8 values stored as int8 bits: it touches uint8
    and is not in `UINT8_SAFE`, or it reads uint8 indices (their bits are not the index)."""
    name = eqn.primitive.name
    if name not in UINT8_SAFE and any(_is_uint8(a) for a in [*eqn.invars, *eqn.outvars]):
        return True
    first = _INDEX_OPERANDS.get(name)
    if first is None:
        return False
    indices = eqn.invars[first : first + 1] if name == "scatter" else eqn.invars[first:]
    return any(_is_uint8(a) for a in indices)


def ir_dtype(dtype: object) -> DType:
    """The IR dtype of a numpy/jax dtype.

    >>> ir_dtype("float32")
    <DType.F32: 'f32'>

    Raises:
        UnsupportedOpError: the dtype has no IR equivalent.
    """
    name = getattr(dtype, "name", None) or str(dtype)
    try:
        return DTYPES[name]
    except KeyError:
        raise UnsupportedOpError(f"dtype {name} has no IR equivalent") from None


@dataclass(frozen=True, slots=True)
class Lit:
    """A literal operand: one value (broadcast to ``shape``) of ``dtype``.

    Scalar jaxpr literals and broadcasts of them (``jnp.zeros``) are literals: reading
    one costs nothing and needs no kernel.
    """

    value: float | int | bool
    dtype: DType
    shape: tuple[int, ...] = ()

    def expr(self) -> Expr:
        """The literal expression, typed like ``dtype`` (floats print as ``1.0``)."""
        if self.dtype == DType.BOOL:
            return lit(bool(self.value))
        if self.dtype.is_float:
            return lit(float(self.value))
        return lit(int(self.value))

    def at(self, idx: Sequence[Expr | int]) -> Expr:
        """Its element at any index: the literal (so a `Lit` is a kit ``Operand``)."""
        del idx
        return self.expr()

    def reshaped(self, shape: Sequence[int]) -> Lit:
        """The same value with another shape."""
        return Lit(self.value, self.dtype, tuple(shape))

    @property
    def nbytes(self) -> int:
        """Size of the value it stands for, in bytes."""
        return shape_numel(self.shape) * self.dtype.itemsize_bytes


EqnOperand = TensorInfo | Lit
"""An equation input or output value."""


@dataclass(frozen=True, slots=True)
class Opaque:
    """A value the IR cannot represent (PRNG keys and bits): consumers are uncovered."""

    shape: tuple[int, ...]
    dtype_name: str


Value = TensorInfo | Lit | Opaque
"""What a jaxpr variable is bound to during lowering."""


def operand_shape(x: EqnOperand) -> tuple[int, ...]:
    """The shape of an operand."""
    return x.shape


def read(x: EqnOperand, idx: Sequence[Expr | int]) -> Expr:
    """The element of ``x`` at ``idx`` (its own indices, through any view map)."""
    if isinstance(x, Lit):
        return x.expr()
    return x.at(idx)


def bread(x: EqnOperand, idx: Sequence[Expr], out_shape: Sequence[int]) -> Expr:
    """Read ``x`` at ``idx`` of ``out_shape`` with numpy broadcasting (size-1/rank-0 dims)."""
    if isinstance(x, Lit):
        return x.expr()
    off = len(out_shape) - x.rank
    if off < 0:
        raise UnsupportedOpError(f"cannot broadcast {x.shape} to {tuple(out_shape)}")
    sub = [
        lit(0) if d == 1 and out_shape[off + k] != 1 else idx[off + k]
        for k, d in enumerate(x.shape)
    ]
    return read(x, sub)
