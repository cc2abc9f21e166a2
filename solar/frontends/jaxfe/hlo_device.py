"""The per-device function of a partitioned HLO module, with every replay handler
registered (`hlo_replay`'s own and `hlo_ops_indexed`'s gather, scatter, convolution and
sort).

Contract: ``(HloModule, mesh axes) -> per-device function`` (`replay_entry`); see
`solar.frontends.jaxfe.hlo_replay` for the replay itself and its errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from solar.diagnostics import FrontendError
from solar.frontends.jaxfe import hlo_ops_indexed  # noqa: F401 - registers its handlers
from solar.frontends.jaxfe.hlo_mesh import Mesh
from solar.frontends.jaxfe.hlo_parse import ArrayType, HloModule
from solar.frontends.jaxfe.hlo_replay import OPS, Replayer

__all__ = ["entry_parameter_types", "mapped_opcodes", "replay_entry"]


def mapped_opcodes() -> frozenset[str]:
    """The HLO opcodes the replay maps (any other is E0571)."""
    return frozenset(OPS)


def replay_entry(module: HloModule, mesh: Mesh) -> Callable[..., tuple[Any, ...]]:
    """The per-device function of ``module``'s ENTRY computation (see the module doc)."""
    replayer = Replayer(module, mesh)
    entry = module.entry_computation

    def flatten(value: Any) -> list[Any]:
        if isinstance(value, tuple):
            return [leaf for v in value for leaf in flatten(v)]
        return [value]

    def device_program(*args: Any) -> tuple[Any, ...]:
        return tuple(flatten(replayer.run(entry, args)))

    return device_program


def entry_parameter_types(module: HloModule) -> tuple[ArrayType, ...]:
    """The ENTRY computation's parameter types in parameter order (arrays only).

    Raises:
        FrontendError: a tuple-typed parameter (E0571).
    """
    out = []
    for name, t in module.entry_computation.params:
        if not isinstance(t, ArrayType):
            raise FrontendError(f"ENTRY parameter %{name} is a tuple", code="E0571")
        out.append(t)
    return tuple(out)
