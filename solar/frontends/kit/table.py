"""The lowering table: an op name -> the function that lowers it, for any frontend.

Contract: a `LoweringTable` is a read-only mapping filled at import time by the
``@table.register(...)`` decorator of each op module. It is generic over the lowering
signature, so the PyTorch table maps ATen overload names to ``(LowerCtx, OpCall)``
functions and the JAX table maps primitive names to ``(EqnCtx)`` functions. A lowering
that cannot express a variant raises `UnsupportedOpError`; the frontend's driver then
reports the op as uncovered (never dropped).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

__all__ = ["LoweringTable", "UnsupportedOpError"]

F = TypeVar("F", bound=Callable[..., object])


class UnsupportedOpError(Exception):
    """Raised by a lowering for a variant it does not handle (e.g. an unsupported dtype).

    Internal control flow only: the driver catches it and reports the op as uncovered
    (with this message as the reason); it never reaches a user.
    """


class LoweringTable(Mapping[str, F], Generic[F]):
    """Op name -> lowering; names are registered once.

    With ``op_wide=True`` (ATen), a name without overload (``aten.mm``) also matches
    every overload (``aten.mm.default``) that has no entry of its own.

    >>> table: LoweringTable[Callable[[], None]] = LoweringTable(op_wide=True)
    >>> @table.register("aten.mm")
    ... def mm() -> None: ...
    >>> table.find("aten.mm.default") is mm, table.find("aten.bmm.default")
    (True, None)
    """

    def __init__(self, *, op_wide: bool = False) -> None:
        self._fns: dict[str, F] = {}
        self._op_wide = op_wide

    def __getitem__(self, name: str) -> F:
        return self._fns[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fns)

    def __len__(self) -> int:
        return len(self._fns)

    def find(self, name: str) -> F | None:
        """The lowering for ``name``: exact match first, then the op-wide entry."""
        fn = self._fns.get(name)
        if fn is None and self._op_wide:
            fn = self._fns.get(name.rsplit(".", 1)[0])
        return fn

    def register(self, *names: str) -> Callable[[F], F]:
        """Decorator: register a lowering under one or more names.

        Raises:
            ValueError: a name already has a lowering.
        """

        def register(fn: F) -> F:
            for n in names:
                if n in self._fns:
                    raise ValueError(f"duplicate lowering for {n}")
                self._fns[n] = fn
            return fn

        return register
