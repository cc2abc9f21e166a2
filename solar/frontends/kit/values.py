"""Tensor values as lowerings see them: a declared storage tensor, or a free view of one.

Contract: frozen values, no torch, no jax. Views (``view``/``permute``/``expand`` in
PyTorch; ``reshape``/``broadcast_in_dim`` in JAX) move no data: a view is a `TensorInfo`
sharing its producer's storage with an `IndexMap`, and consumers read through it, so no
kernel (and no traffic) is charged for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from solar.frontends.kit.builder import TensorRef, as_expr
from solar.ir import Access, DType, Expr

__all__ = ["IndexMap", "TensorInfo", "shape_numel"]

IndexMap = Callable[[tuple[Expr, ...]], tuple[Expr, ...]]
"""Maps indices of a view to indices of its storage tensor."""


def shape_numel(shape: Sequence[int]) -> int:
    """Number of elements of a shape.

    >>> shape_numel((2, 3, 4))
    24
    """
    n = 1
    for d in shape:
        n *= d
    return n


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """A tensor value: a declared storage tensor, or a free view of one.

    Attributes:
        ref: the storage tensor declared in the program (or kernel, for locals).
        shape: the (concrete) shape of this value; differs from ``ref``'s for a view.
        dtype: element type.
        index_map: for views, maps this value's indices to ``ref``'s; ``None`` if the
            value is ``ref`` itself.
    """

    ref: TensorRef
    shape: tuple[int, ...]
    dtype: DType
    index_map: IndexMap | None = field(default=None, compare=False)

    @property
    def rank(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def numel(self) -> int:
        """Number of elements of this value."""
        return shape_numel(self.shape)

    @property
    def nbytes(self) -> int:
        """Size of this value in bytes."""
        return self.numel * self.dtype.itemsize_bytes

    @property
    def is_storage(self) -> bool:
        """True when this value is its storage tensor itself (not a view)."""
        return self.index_map is None

    def storage_index(self, idx: Sequence[Expr | int]) -> tuple[Expr, ...]:
        """Indices into the storage tensor for indices of this value."""
        exprs = tuple(as_expr(i) for i in idx)
        return self.index_map(exprs) if self.index_map is not None else exprs

    def at(self, idx: Sequence[Expr | int]) -> Access:
        """The access of this value at ``idx`` (through its view map)."""
        return Access(self.ref.name, self.storage_index(idx))

    def view(self, shape: Sequence[int], index_map: IndexMap) -> TensorInfo:
        """A view of this value: ``index_map`` maps the new indices to this value's."""
        inner = self.index_map

        def composed(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
            mapped = index_map(idx)
            return inner(mapped) if inner is not None else mapped

        return TensorInfo(self.ref, tuple(shape), self.dtype, composed)
