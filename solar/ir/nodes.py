"""Affine Loop IR nodes: frozen, slotted dataclasses with tuple children.

Contract: these are plain values. Structural equality ignores source spans
(``span`` is ``compare=False``), so ``parse(print(p)) == p`` is meaningful.
Every node category is a closed union (`Expr`, `Stmt`). Nodes are built by the
parser or directly by frontends; `solar.ir.verify_program` establishes
well-formedness, which later stages assume.

See docs/ir.md for the language these nodes represent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal, TypeAlias

from solar.diagnostics import Span

__all__ = [
    "BINARY_OPS",
    "COMPARISON_OPS",
    "DTYPE_BYTES",
    "FUNCTIONS",
    "IR_VERSION",
    "KEYWORDS",
    "RANK",
    "Access",
    "Assign",
    "Binary",
    "BoolLit",
    "Call",
    "COLLECTIVE_KINDS",
    "COLLECTIVE_OPS",
    "Cast",
    "Collective",
    "CollectiveKind",
    "CollectiveOp",
    "DType",
    "Expr",
    "FloatLit",
    "For",
    "GroupDecl",
    "If",
    "IndexName",
    "IntLit",
    "Kernel",
    "Name",
    "Program",
    "Reduce",
    "ReduceOp",
    "Role",
    "SizeDecl",
    "SizeName",
    "Stmt",
    "TensorDecl",
    "TensorName",
    "Unary",
    "lit",
]

IR_VERSION = 1

TensorName: TypeAlias = str
IndexName: TypeAlias = str
SizeName: TypeAlias = str


class DType(StrEnum):
    """Element types of the IR."""

    F64 = "f64"
    F32 = "f32"
    F16 = "f16"
    BF16 = "bf16"
    F8E4M3 = "f8e4m3"
    F8E5M2 = "f8e5m2"
    I64 = "i64"
    I32 = "i32"
    I8 = "i8"
    BOOL = "bool"

    @property
    def is_float(self) -> bool:
        """True for floating-point dtypes."""
        return self.value.startswith(("f", "bf"))

    @property
    def itemsize_bytes(self) -> int:
        """Storage size of one element in bytes."""
        return DTYPE_BYTES[self]


DTYPE_BYTES: dict[DType, int] = {
    DType.F64: 8,
    DType.F32: 4,
    DType.F16: 2,
    DType.BF16: 2,
    DType.F8E4M3: 1,
    DType.F8E5M2: 1,
    DType.I64: 8,
    DType.I32: 4,
    DType.I8: 1,
    DType.BOOL: 1,
}

Role = Literal["input", "param", "output", "temp", "local"]
"""Tensor roles. ``local`` is a kernel-local temporary, declared inside a kernel."""

ReduceOp = Literal["+", "*", "max", "min"]

CollectiveKind = Literal[
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "permute"
]
"""Collective operations (docs/ir.md, "Distributed programs")."""

COLLECTIVE_KINDS: tuple[CollectiveKind, ...] = (
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "permute"
)

CollectiveOp = Literal["sum", "prod", "max", "min", "avg"]
"""Reduction of an ``all_reduce`` or ``reduce_scatter`` (``avg``: the sum over the group
divided by the group size, as NCCL's ``ncclAvg``)."""

COLLECTIVE_OPS: tuple[CollectiveOp, ...] = ("sum", "prod", "max", "min", "avg")

RANK = "rank"
"""The rank index of a distributed program: an integer in ``0 .. world``, usable in
subscripts, loop bounds and group keys like a loop index that encloses the whole program."""

KEYWORDS: frozenset[str] = frozenset(
    [
        "program",
        "size",
        "input",
        "param",
        "output",
        "temp",
        "local",
        "kernel",
        "alias",
        "inplace",
        "for",
        "seq",
        "in",
        "step",
        "if",
        "and",
        "or",
        "not",
        "inf",
        "nan",
        "true",
        "false",
        "world",
        "group",
        RANK,
    ]
) | frozenset(d.value for d in DType)
"""Words of the grammar (besides the version line ``solar-ir``); frontends avoid them as names."""

BINARY_OPS = ("+", "-", "*", "/", "//", "%", "<", "<=", ">", ">=", "==", "!=", "and", "or")
COMPARISON_OPS = frozenset({"<", "<=", ">", ">=", "==", "!="})

FUNCTIONS: dict[str, tuple[int, int]] = {
    # name: (arity, FLOPs per evaluation). See docs/bounds.md "FLOP rules": every
    # library function counts 1 FLOP (it is one special-function or vector
    # instruction sequence on every target; counting it as 1 keeps FLOPs a lower bound).
    "exp": (1, 1),
    "exp2": (1, 1),
    "log": (1, 1),
    "log2": (1, 1),
    "log1p": (1, 1),
    "expm1": (1, 1),
    "sqrt": (1, 1),
    "rsqrt": (1, 1),
    "tanh": (1, 1),
    "sigmoid": (1, 1),
    "erf": (1, 1),
    "abs": (1, 1),
    "sign": (1, 1),
    "floor": (1, 1),
    "ceil": (1, 1),
    "round": (1, 1),
    "trunc": (1, 1),
    "sin": (1, 1),
    "cos": (1, 1),
    "tan": (1, 1),
    "atan": (1, 1),
    "asin": (1, 1),
    "acos": (1, 1),
    "reciprocal": (1, 1),
    "isnan": (1, 1),
    "pow": (2, 1),
    "atan2": (2, 1),
    "fmod": (2, 1),
    "min": (2, 1),
    "max": (2, 1),
    "select": (3, 1),
}


@dataclass(frozen=True, slots=True)
class IntLit:
    """An integer literal (may be negative when the source wrote ``-3``)."""

    value: int
    span: Span | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.value < 0:
            raise ValueError("IntLit is non-negative; write Unary('-', IntLit(n)) or use lit()")


@dataclass(frozen=True, slots=True)
class FloatLit:
    """A floating literal; ``inf`` and ``nan`` are spelled as keywords."""

    value: float
    span: Span | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if math.copysign(1.0, self.value) < 0 and not math.isnan(self.value):
            raise ValueError("FloatLit is non-negative; write Unary('-', FloatLit(x)) or use lit()")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FloatLit):
            return NotImplemented
        if math.isnan(self.value) and math.isnan(other.value):
            return True
        return self.value == other.value

    def __hash__(self) -> int:
        return hash(("FloatLit", "nan" if math.isnan(self.value) else self.value))


@dataclass(frozen=True, slots=True)
class BoolLit:
    """``true`` or ``false``."""

    value: bool
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Name:
    """A reference to a loop index or a size, as a value."""

    name: str
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Access:
    """A tensor element ``T[i, j]``; rank-0 tensors are written ``T[]``."""

    tensor: TensorName
    indices: tuple[Expr, ...]
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Unary:
    """``-x`` or ``not x``."""

    op: Literal["-", "not"]
    operand: Expr
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Binary:
    """A binary operation; ``op`` is one of `BINARY_OPS`."""

    op: str
    lhs: Expr
    rhs: Expr
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Call:
    """A library function call; ``func`` is a key of `FUNCTIONS`."""

    func: str
    args: tuple[Expr, ...]
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Cast:
    """A conversion ``f16(x)``: round the value to ``dtype``."""

    dtype: DType
    operand: Expr
    span: Span | None = field(default=None, compare=False, repr=False)


Expr: TypeAlias = IntLit | FloatLit | BoolLit | Name | Access | Unary | Binary | Call | Cast


def lit(value: float | bool) -> Expr:
    """Build the canonical literal for a Python number (negatives as ``Unary('-', ...)``).

    >>> lit(-2)
    Unary(op='-', operand=IntLit(value=2))
    """
    if isinstance(value, bool):
        return BoolLit(value)
    if isinstance(value, int):
        return Unary("-", IntLit(-value)) if value < 0 else IntLit(value)
    if math.isnan(value):
        return FloatLit(math.nan)
    if math.copysign(1.0, value) < 0:
        return Unary("-", FloatLit(-value))
    return FloatLit(float(value))


@dataclass(frozen=True, slots=True)
class Assign:
    """``target = value``."""

    target: Access
    value: Expr
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Reduce:
    """``target op= value`` with op in ``+ * max min``: an accumulation."""

    target: Access
    op: ReduceOp
    value: Expr
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class For:
    """``[seq] for var in lo .. hi [step s] { body }``; ``hi`` is exclusive.

    A loop without ``seq`` promises that its iterations are independent except
    through `Reduce` statements, so it may run in any order or all at once. A
    ``seq`` loop runs its iterations in order (scans, recurrences).
    """

    var: IndexName
    lo: Expr
    hi: Expr
    body: tuple[Stmt, ...]
    step: int = 1
    seq: bool = False
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class If:
    """``if cond { body }``; ``cond`` is affine (a guard) or value-dependent."""

    cond: Expr
    body: tuple[Stmt, ...]
    span: Span | None = field(default=None, compare=False, repr=False)


Stmt: TypeAlias = Assign | Reduce | For | If


@dataclass(frozen=True, slots=True)
class Collective:
    """``target = kind(source, key=value, ...)``: one collective over a group of ranks.

    Every rank of the group runs it with its own ``source`` and receives its own
    ``target`` (SPMD; docs/ir.md "Distributed programs" gives each kind's semantics):

    - ``all_reduce(X, op=...)``: the reduction of every rank's ``X`` (same shape);
    - ``all_gather(X, dim=d)``: the ranks' ``X`` concatenated along ``d`` in group order;
    - ``reduce_scatter(X, op=..., dim=d)``: the reduction, split along ``d``; rank ``g``
      of the group keeps part ``g``;
    - ``all_to_all(X, split=s, concat=c)``: ``X`` split along ``s`` into one part per
      group rank, part ``g`` sent to group rank ``g``; what arrives is concatenated
      along ``c`` in group order;
    - ``broadcast(X, root=r)``: group rank ``r``'s ``X``;
    - ``permute(X, to=e)``: each rank sends ``X`` to rank ``e`` (an integer expression
      of ``rank`` and sizes; no send where it falls outside ``0 .. world``); a rank
      nobody sends to receives zeros (JAX ``ppermute``; torch ``send``/``recv`` pairs).

    ``group`` names a `GroupDecl`; ``None`` is the whole world.
    """

    kind: CollectiveKind
    target: TensorName
    source: TensorName
    op: CollectiveOp | None = None
    dim: int | None = None
    split: int | None = None
    concat: int | None = None
    root: int | None = None
    to: Expr | None = None
    group: str | None = None
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class SizeDecl:
    """``size M = 4096`` (free, with a default binding) or ``size Ho = (H - 3) // 2 + 1``."""

    name: SizeName
    value: Expr
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class TensorDecl:
    """``role name : dtype[shape]``."""

    name: TensorName
    role: Role
    dtype: DType
    shape: tuple[Expr, ...]
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Kernel:
    """One launch: kernel-local temporaries and a statement body.

    ``alias`` marks an *alias kernel* (``alias kernel NAME { ... }``): plain copies
    into outputs that the real program returns as views or aliases of tensors it
    already holds (``return x.t()``, ``return y, y``). It runs when the IR is executed,
    so validation checks the outputs' values, but it is no launch: the bounds charge it
    nothing (Note [Alias kernels] in docs/bounds.md; rules in docs/ir.md).

    ``inplace`` marks an *in-place kernel* (``inplace kernel NAME { ... }``): a whole
    copy of an input or parameter into the tensor that later kernels update in place
    (``x[5] = v; return x``). It runs when the IR is executed, but the destination *is*
    the source's storage: the bounds charge it nothing, and only the elements later
    kernels touch (Note [In-place updates] in docs/bounds.md; rules in docs/ir.md).

    A *collective kernel* (``collective`` set) is one collective launch: it has no locals
    and an empty ``body``, so every pass that walks statements sees no work in it; the
    executor simulates it and `solar.ir.collectives` lists it for the distributed bounds.
    """

    name: str
    locals: tuple[TensorDecl, ...]
    body: tuple[Stmt, ...]
    alias: bool = False
    collective: Collective | None = None
    inplace: bool = False
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class GroupDecl:
    """``group tp = rank // 4``: ranks whose key expression is equal form one group,
    ordered by rank (MPI's ``comm_split`` colour); the key is an integer expression of
    ``rank`` and sizes."""

    name: str
    key: Expr
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Program:
    """A whole program: sizes, program-level tensors and kernels in launch order.

    A *distributed* program names its world size: ``world`` is the name of a free size
    (declared first, ``world W = 4`` in the text) and every rank ``0 .. W`` runs the same
    program with ``rank`` bound to its index (SPMD); ``groups`` are its communicators.
    """

    name: str
    sizes: tuple[SizeDecl, ...]
    tensors: tuple[TensorDecl, ...]
    kernels: tuple[Kernel, ...]
    version: int = IR_VERSION
    world: SizeName | None = None
    groups: tuple[GroupDecl, ...] = ()
    span: Span | None = field(default=None, compare=False, repr=False)

    def tensor(self, name: TensorName) -> TensorDecl:
        """Return the program-level or kernel-local declaration of ``name``.

        Raises:
            KeyError: no tensor of that name.
        """
        for decl in self.tensors:
            if decl.name == name:
                return decl
        for kernel in self.kernels:
            for decl in kernel.locals:
                if decl.name == name:
                    return decl
        raise KeyError(name)

    def tensors_with_role(self, *roles: Role) -> tuple[TensorDecl, ...]:
        """Program-level tensors whose role is one of ``roles``, in declaration order."""
        return tuple(t for t in self.tensors if t.role in roles)
