"""The lowering context, one for every frontend: what a lowering may do with one op.

Contract: a frontend's driver builds one `LowerCtx` per op, over a `KernelHost` (itself,
or a `BuilderKernels` over its program builder), and hands it to the op's lowering
together with the op's arguments (PyTorch: an ``OpCall``; JAX: the equation, which its
``EqnCtx`` subclass carries). A lowering starts the op's kernels with `LowerCtx.kernel`,
which names them after the op and returns the `Sink` to emit into: a new kernel, or
(JAX loop bodies) the body of an enclosing one. The kit's emitters
(`solar.frontends.kit.emit`) need nothing but this class, so one emitter serves both
frontends. No torch, no jax.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from solar.frontends.kit.builder import KernelBuilder, ProgramBuilder, TensorRef
from solar.frontends.kit.table import UnsupportedOpError
from solar.frontends.kit.values import TensorInfo
from solar.ir import Access, Collective, DType, Expr, Name, Stmt

__all__ = ["BuilderKernels", "KernelHost", "LowerCtx", "Sink"]


class Sink(Protocol):
    """Where a lowering emits: a `KernelBuilder`, or the body of an enclosing loop."""

    def local(self, dtype: DType, shape: Sequence[Expr | int], hint: str = ...) -> TensorRef:
        """Declare a kernel-local temporary."""
        ...

    def fresh_vars(self, n: int, hint: str = ...) -> tuple[Name, ...]:
        """Fresh loop variables."""
        ...

    def emit(self, *stmts: Stmt) -> None:
        """Append statements."""
        ...


class KernelHost(Protocol):
    """What starts an op's kernels: the frontend's driver, or a `BuilderKernels`."""

    def start_kernel(self, hint: str) -> Sink:
        """The emission target for a kernel named after ``hint``."""
        ...


class BuilderKernels:
    """A `KernelHost` over a `ProgramBuilder`: kernels named ``<prefix>_<hint>``.

    The started kernels join the program only on `finish`, so a driver that rolls an op
    back (its lowering raised) simply never calls it.

    >>> pb = ProgramBuilder("p")
    >>> host = BuilderKernels(pb, "layer1")
    >>> LowerCtx(host, "relu").kernel().name
    'layer1_relu'
    """

    def __init__(self, pb: ProgramBuilder, prefix: str = "") -> None:
        self.pb = pb
        self.prefix = prefix
        self.started: list[KernelBuilder] = []

    def start_kernel(self, hint: str) -> KernelBuilder:
        """A new kernel of the program builder."""
        kb = self.pb.kernel(f"{self.prefix}_{hint}" if self.prefix else hint)
        self.started.append(kb)
        return kb

    def finish(self) -> None:
        """Add the started kernels to the program, in order."""
        for kb in self.started:
            self.pb.finish_kernel(kb)


class LowerCtx:
    """What a lowering may do with one op: start its kernels, read inputs, write outputs.

    Attributes:
        host: what starts the kernels.
        op: the op's name (``convolution``, ``conv_general_dilated``): kernels are named
            after it unless a lowering gives a hint.
        kernels: the kernels started so far, in order.
    """

    def __init__(self, host: KernelHost, op: str) -> None:
        self.host = host
        self.op = op
        self.kernels: list[Sink] = []

    def kernel(self, hint: str | None = None) -> Sink:
        """Start a kernel for this op (one launch), named after the op or ``hint``."""
        kb = self.host.start_kernel(hint or self.op)
        self.kernels.append(kb)
        return kb

    def collective(self, hint: str, collective: Collective) -> str:
        """Start a collective kernel (no body) for this op; returns the kernel's name.

        Raises:
            UnsupportedOpError: the op's statements go into an enclosing loop body (a JAX
                scan or while body), where a kernel of its own cannot start.
        """
        kb = self.kernel(hint)
        if not isinstance(kb, KernelBuilder):
            raise UnsupportedOpError(f"a collective ({collective.kind}) inside a loop body")
        kb.collective = collective
        return kb.name

    @staticmethod
    def read(t: TensorInfo, idx: Sequence[Expr | int]) -> Access:
        """An access of ``t`` at ``idx`` through its view map."""
        return t.at(idx)

    @staticmethod
    def write(t: TensorInfo, idx: Sequence[Expr | int]) -> Access:
        """The access to store into output ``t`` at ``idx``."""
        return t.at(idx)

    @staticmethod
    def vars(kb: Sink, n: int, hint: str = "i") -> tuple[Name, ...]:
        """Fresh loop variables for ``kb`` (``i0, i1, ...``; unique within the kernel)."""
        return kb.fresh_vars(n, hint)
