"""The lowering table: an op name -> the function that lowers it, for any frontend.

Contract: a `LoweringTable` is a read-only mapping filled by the ``@table.register(...)``
decorator of each op module. The op modules of a frontend are discovered, not listed:
a table made with ``package=`` imports every ``ops_*`` module of that package the first
time it is read (`load_op_modules`), so a family written separately registers itself as
soon as its module exists, and importing a frontend stays cheap. The table is generic
over the lowering signature: the PyTorch table maps ATen overload names to
``(LowerCtx, OpCall)`` functions, the JAX table maps primitive names to ``(EqnCtx)``
functions (an `EqnCtx` is a `solar.frontends.kit.LowerCtx`). A lowering that cannot
express a variant raises `UnsupportedOpError`; the frontend's driver then reports the op
as uncovered (never dropped).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

__all__ = ["LoweringTable", "UnsupportedOpError", "load_op_modules"]

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

    def __init__(self, *, package: str | None = None, op_wide: bool = False) -> None:
        self._fns: dict[str, F] = {}
        self._op_wide = op_wide
        self._package = package

    def _entries(self) -> dict[str, F]:
        """The entries, after loading the op modules of ``package`` once."""
        if self._package is not None:
            package, self._package = self._package, None
            load_op_modules(package)
        return self._fns

    def __getitem__(self, name: str) -> F:
        return self._entries()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())

    def find(self, name: str) -> F | None:
        """The lowering for ``name``: exact match first, then the op-wide entry."""
        fns = self._entries()
        fn = fns.get(name)
        if fn is None and self._op_wide:
            fn = fns.get(name.rsplit(".", 1)[0])
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


def load_op_modules(package: str) -> None:
    """Import every ``ops_*`` module of ``package``, in name order (each registers its
    lowerings with its frontend's table)."""
    pkg = importlib.import_module(package)
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("ops_"):
            importlib.import_module(f"{package}.{info.name}")
