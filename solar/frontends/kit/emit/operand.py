"""What an emitter reads: any value with a shape, a dtype and an element at an index.

Contract: a `TensorInfo` (a declared tensor or a free view of one) is an `Operand`; so is
a frontend's literal operand (JAX's ``Lit``: one value broadcast to a shape, whose every
element is the same literal expression). No torch, no jax.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from solar.ir import DType, Expr

__all__ = ["Operand"]


class Operand(Protocol):
    """A value an emitter reads element by element."""

    @property
    def shape(self) -> tuple[int, ...]:
        """Its shape."""
        ...

    @property
    def dtype(self) -> DType:
        """Its element type."""
        ...

    def at(self, idx: Sequence[Expr | int]) -> Expr:
        """Its element at ``idx`` (through any view map)."""
        ...
