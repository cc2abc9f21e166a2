"""The executor's mutable tensor store: data, written masks and versions.

Contract: one `TensorState` per live tensor. ``data`` is C-contiguous in the storage
dtype (`solar.validate.dtypes`); ``written`` is a boolean array of the same shape, or
``None`` once every element has been written (inputs and params start that way).
``version`` increases on every write, so derived data (padded copies, finiteness)
can be cached per version.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solar.ir import TensorDecl

__all__ = ["TensorState"]


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
        if self.written is not None and bool(self.written.all()):
            self.written = None

    def all_finite(self) -> bool:
        """True when no element is inf or NaN (cached per version)."""
        if self._finite is not None and self._finite[0] == self.version:
            return self._finite[1]
        finite = self.data.dtype.kind != "f" or bool(np.isfinite(self.data).all())
        self._finite = (self.version, finite)
        return finite
