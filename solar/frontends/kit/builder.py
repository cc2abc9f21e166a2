"""The program builder every frontend emits through: unique names, kernels, rollback.

Contract: frontends (torch, jax) build IR through `ProgramBuilder`/`KernelBuilder`
instead of printing text. Names are made unique and valid; the result of
`ProgramBuilder.build()` is an unverified `Program` (run `verify_program` on it).
A lowering that turns out unsupported half-way is undone with `checkpoint` /
`rollback` (names handed out are logged, so a checkpoint is four integers).

Example:
    >>> from solar.ir import DType, print_program
    >>> from solar.frontends.kit import nest
    >>> pb = ProgramBuilder("double")
    >>> x = pb.tensor("input", DType.F32, (4,), "x")
    >>> y = pb.tensor("output", DType.F32, (4,), "y")
    >>> kb = pb.kernel("mul")
    >>> (i,) = kb.fresh_vars(1)
    >>> kb.emit(*nest([(i, 4)], [Assign(y[i], Binary("*", x[i], lit(2)))]))
    >>> pb.finish_kernel(kb)
    >>> print(print_program(pb.build()).splitlines()[-3])
        y[i0] = x[i0] * 2
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from solar.ir import (
    KEYWORDS,
    Access,
    Assign,
    Binary,
    Collective,
    DType,
    Expr,
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


class KernelBuilder:
    """Collects the locals and statements of one kernel.

    ``alias`` builds an alias kernel (`solar.ir.Kernel`): copies into outputs that the
    real program returns as views or aliases, run by validation, free in the bounds;
    ``inplace`` an in-place kernel (the storage of an input handed to the tensor later
    kernels update in place; Note [In-place updates] in docs/bounds.md).
    """

    def __init__(self, program: ProgramBuilder, name: str, *, alias: bool = False) -> None:
        self._program = program
        self.name = name
        self.alias = alias
        self.inplace = False
        self.locals: list[TensorDecl] = []
        self.body: list[Stmt] = []
        self.collective: Collective | None = None  # a collective kernel: no body
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
        self._log: list[str] = []
        # Per hint, the lowest suffix that may be free (0: the bare hint): `unique` starts
        # its search there, so naming N tensors after one hint is linear, not quadratic.
        self._next: dict[str, int] = {}
        self._suffix: dict[str, tuple[str, int]] = {}
        self._sizes: list[SizeDecl] = []
        self._tensors: list[TensorDecl] = []
        self._kernels: list[Kernel] = []
        # the user's source line of the op being lowered (`model.py:42`), and that of
        # each kernel added meanwhile: the report's `kernels[].source`
        self.source = ""
        self.kernel_sources: dict[str, str] = {}

    def unique(self, hint: str) -> str:
        """A fresh identifier based on ``hint`` (logged for `rollback`)."""
        base = sanitize_name(hint)
        k = self._next.get(base, 0)
        name = f"{base}_{k}" if k else base
        while name in self._used:
            k += 1
            name = f"{base}_{k}"
        self._next[base] = k + 1
        self._suffix[name] = (base, k)
        self._used.add(name)
        self._log.append(name)
        return name

    def checkpoint(self) -> tuple[int, int, int, int]:
        """The builder state to return to."""
        return (len(self._sizes), len(self._tensors), len(self._kernels), len(self._log))

    def rollback(self, cp: tuple[int, int, int, int]) -> None:
        """Forget everything declared since ``cp``."""
        self._sizes = self._sizes[: cp[0]]
        self._tensors = self._tensors[: cp[1]]
        self._kernels = self._kernels[: cp[2]]
        for name in self._log[cp[3] :]:
            self._used.discard(name)
            base, k = self._suffix.pop(name)
            self._next[base] = min(self._next.get(base, k), k)
        del self._log[cp[3] :]

    def declaration(self, name: str) -> TensorDecl | None:
        """The program-level declaration of ``name`` (``None`` for locals)."""
        return next((t for t in self._tensors if t.name == name), None)

    def kernel_names(self) -> list[str]:
        """Names of the finished kernels, in order."""
        return [k.name for k in self._kernels]

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

    def kernel(self, hint: str, *, alias: bool = False) -> KernelBuilder:
        """Start a kernel (an alias kernel with ``alias``); call `finish_kernel` when its
        body is complete."""
        return KernelBuilder(self, self.unique(hint), alias=alias)

    def finish_kernel(self, kb: KernelBuilder) -> None:
        """Append a finished kernel to the program."""
        self.add_kernel(
            Kernel(
                kb.name, tuple(kb.locals), tuple(kb.body), alias=kb.alias,
                collective=kb.collective, inplace=kb.inplace,
            )
        )

    def add_kernel(self, kernel: Kernel) -> None:
        """Append a finished kernel."""
        self._kernels.append(kernel)
        if self.source:
            self.kernel_sources[kernel.name] = self.source

    def build(self) -> Program:
        """The program built so far."""
        return Program(self.name, tuple(self._sizes), tuple(self._tensors), tuple(self._kernels))
