"""A small builder that frontends use to emit `Program` nodes directly.

Contract: frontends (torch, jax) build IR through `ProgramBuilder`/`KernelBuilder`
instead of printing text. Names are made unique and valid; the result of
`ProgramBuilder.build()` is an unverified `Program` (run `verify_program` on it).

Example:
    >>> from solar.ir import DType, print_program
    >>> pb = ProgramBuilder("double")
    >>> x = pb.tensor("input", DType.F32, (4,), "x")
    >>> y = pb.tensor("output", DType.F32, (4,), "y")
    >>> kb = pb.kernel("mul")
    >>> (i,) = kb.fresh_vars(1)
    >>> kb.emit(loop_nest([(i, 4)], [Assign(y[i], Binary("*", x[i], lit(2)))]))
    >>> pb.finish_kernel(kb)
    >>> print(print_program(pb.build()).splitlines()[-3])
        y[i0] = x[i0] * 2
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from solar.ir import (
    KEYWORDS,
    Access,
    Assign,
    Binary,
    DType,
    Expr,
    For,
    Kernel,
    Name,
    Program,
    Role,
    SizeDecl,
    Stmt,
    TensorDecl,
    lit,
)

__all__ = [
    "Assign",
    "Binary",
    "KernelBuilder",
    "ProgramBuilder",
    "TensorRef",
    "as_expr",
    "loop_nest",
    "sanitize_name",
    "lit",
]

_KEYWORDS = KEYWORDS | {"solar-ir"}


def sanitize_name(hint: str) -> str:
    """Turn any string into a valid IR identifier (not a keyword).

    >>> sanitize_name("layer1.0.conv-1")
    'layer1_0_conv_1'
    >>> sanitize_name("for")
    'for_'
    """
    name = re.sub(r"[^A-Za-z0-9_]", "_", hint).strip("_") or "t"
    if name[0].isdigit():
        name = f"t{name}"
    if name in _KEYWORDS:
        name += "_"
    return name


def as_expr(value: Expr | int | float | bool) -> Expr:
    """Wrap a Python number as a literal; pass expressions through."""
    if isinstance(value, bool | int | float):
        return lit(value)
    return value


@dataclass(frozen=True, slots=True)
class TensorRef:
    """A declared tensor; index it (``t[i, j]``) to build an `Access`."""

    name: str
    dtype: DType
    shape: tuple[Expr, ...]

    @property
    def rank(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    def __getitem__(self, idx: object) -> Access:
        items = idx if isinstance(idx, tuple) else (idx,)
        return Access(self.name, tuple(as_expr(i) for i in items))

    def scalar(self) -> Access:
        """The access of a rank-0 tensor, ``T[]``."""
        return Access(self.name, ())


def loop_nest(
    dims: Sequence[tuple[Name, Expr | int]] | Sequence[tuple[Name, Expr | int, Expr | int]],
    body: Sequence[Stmt],
    *,
    seq: frozenset[str] = frozenset(),
) -> Stmt:
    """Wrap ``body`` in nested loops ``for v in 0 .. hi`` (or ``lo .. hi``), outermost first.

    With no dims, the body must be a single statement (it is returned as is).
    """
    stmts: tuple[Stmt, ...] = tuple(body)
    for dim in reversed(dims):
        var = cast(Name, dim[0])
        lo = dim[1] if len(dim) == 3 else 0
        hi = dim[-1]
        stmts = (For(var.name, as_expr(lo), as_expr(hi), stmts, seq=var.name in seq),)
    if len(stmts) != 1:
        raise ValueError("loop_nest with no dims needs exactly one statement")
    return stmts[0]


class KernelBuilder:
    """Collects the locals and statements of one kernel."""

    def __init__(self, program: ProgramBuilder, name: str) -> None:
        self._program = program
        self.name = name
        self.locals: list[TensorDecl] = []
        self.body: list[Stmt] = []
        self._var_counts: dict[str, int] = {}
        self._var_names: set[str] = set()

    def local(self, dtype: DType, shape: Sequence[Expr | int], hint: str = "tmp") -> TensorRef:
        """Declare a kernel-local temporary."""
        name = self._program.unique(hint)
        dims = tuple(as_expr(d) for d in shape)
        self.locals.append(TensorDecl(name, "local", dtype, dims))
        return TensorRef(name, dtype, dims)

    def fresh_vars(self, n: int, hint: str = "i") -> tuple[Name, ...]:
        """Return ``n`` loop variables ``<hint><k>`` unique within this kernel.

        Loop variables are scoped to their kernel, so kernels reuse ``i0, i1, ...``;
        names taken by program-level declarations are skipped.
        """
        out = []
        for _ in range(n):
            while True:
                k = self._var_counts.get(hint, 0)
                self._var_counts[hint] = k + 1
                name = sanitize_name(f"{hint}{k}")
                if name not in self._var_names and not self._program.is_used(name):
                    break
            self._var_names.add(name)
            out.append(Name(name))
        return tuple(out)

    def emit(self, *stmts: Stmt) -> None:
        """Append statements to the kernel body."""
        self.body.extend(stmts)


class ProgramBuilder:
    """Builds a `Program`: sizes, tensors and kernels with unique names."""

    def __init__(self, name: str) -> None:
        self.name = sanitize_name(name)
        self._used: set[str] = set()
        self._sizes: list[SizeDecl] = []
        self._tensors: list[TensorDecl] = []
        self._kernels: list[Kernel] = []

    def unique(self, hint: str) -> str:
        """A fresh identifier based on ``hint``."""
        base = sanitize_name(hint)
        name, k = base, 1
        while name in self._used:
            name = f"{base}_{k}"
            k += 1
        self._used.add(name)
        return name

    def is_used(self, name: str) -> bool:
        """True if ``name`` is taken by a program-level declaration or kernel."""
        return name in self._used

    def size(self, hint: str, value: Expr | int) -> Name:
        """Declare a size (free when ``value`` is an int) and return it as a `Name`."""
        name = self.unique(hint)
        self._sizes.append(SizeDecl(name, as_expr(value)))
        return Name(name)

    def tensor(self, role: Role, dtype: DType, shape: Sequence[Expr | int], hint: str) -> TensorRef:
        """Declare a program-level tensor with a unique name derived from ``hint``."""
        name = self.unique(hint)
        dims = tuple(as_expr(d) for d in shape)
        self._tensors.append(TensorDecl(name, role, dtype, dims))
        return TensorRef(name, dtype, dims)

    def set_role(self, ref: TensorRef, role: Role) -> None:
        """Change the role of a declared tensor (e.g. a temp that turns out to be an output)."""
        self._tensors = [
            TensorDecl(t.name, role, t.dtype, t.shape) if t.name == ref.name else t
            for t in self._tensors
        ]

    def kernel(self, hint: str) -> KernelBuilder:
        """Start a kernel; call `finish_kernel` when its body is complete."""
        return KernelBuilder(self, self.unique(hint))

    def finish_kernel(self, kb: KernelBuilder) -> None:
        """Append a finished kernel to the program."""
        self._kernels.append(Kernel(kb.name, tuple(kb.locals), tuple(kb.body)))

    def build(self) -> Program:
        """The program built so far."""
        return Program(self.name, tuple(self._sizes), tuple(self._tensors), tuple(self._kernels))
