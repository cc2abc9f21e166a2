"""Cross-check against XLA's own cost analysis of the captured program.

Contract: ``JaxCapture -> XlaCrossCheck``. ``jax.jit(f).lower(*abstract)`` gives the
unoptimised HLO (one HLO op per jaxpr equation, roughly); ``.compile()`` gives the
optimised, fused executable for the local backend (CPU here). Both expose
``cost_analysis()`` with ``flops``, ``transcendentals`` and ``bytes accessed``. Nothing
runs: lowering and compiling work on abstract values. docs/jax.md records how these
numbers differ from SOLAR's IR counts and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solar.diagnostics import FrontendError
from solar.frontends.jaxfe.capture import JaxCapture, require_jax, user_code

__all__ = [
    "XlaCost",
    "XlaCrossCheck",
    "equation_flops",
    "xla_cost_analysis",
    "xla_cross_check",
]


@dataclass(frozen=True, slots=True)
class XlaCost:
    """XLA's cost estimate of one HLO module.

    Attributes:
        flops: arithmetic FLOPs (a multiply-add is 2; transcendentals not included).
        transcendentals: exp/log/tanh/... evaluations.
        bytes_accessed: operand and result bytes summed over every HLO instruction.
    """

    flops: float
    transcendentals: float
    bytes_accessed: float


@dataclass(frozen=True, slots=True)
class XlaCrossCheck:
    """XLA's costs for the unoptimised (lowered) and the compiled (fused) program.

    Attributes:
        unoptimized: from ``jit(f).lower(...).cost_analysis()``; ``None`` if unavailable.
        compiled: from ``.compile().cost_analysis()``; ``None`` if unavailable.
        backend: the platform compiled for (``"cpu"``...).
    """

    unoptimized: XlaCost | None
    compiled: XlaCost | None
    backend: str


def _cost(raw: Any) -> XlaCost | None:
    if isinstance(raw, list | tuple):
        raw = raw[0] if raw else None
    if not isinstance(raw, dict):
        return None
    return XlaCost(
        flops=float(raw.get("flops", 0.0)),
        transcendentals=float(raw.get("transcendentals", 0.0)),
        bytes_accessed=float(raw.get("bytes accessed", 0.0)),
    )


def xla_cross_check(capture: JaxCapture) -> XlaCrossCheck:
    """XLA's cost analysis of the captured program, before and after optimisation.

    Raises:
        FrontendError: E0521 if lowering or compiling the program fails.
    """
    jax = require_jax()
    jitted = jax.jit(capture.flat_fn)
    with user_code(f"lowering {capture.name} with XLA"):
        lowered = jitted.lower(*capture.abstract_args)
    unopt = _cost(_analysis(lowered))
    with user_code(f"compiling {capture.name} with XLA"):
        compiled = lowered.compile()
    return XlaCrossCheck(unopt, _cost(_analysis(compiled)), jax.default_backend())


def _analysis(obj: Any) -> Any:
    try:
        return obj.cost_analysis()
    except (NotImplementedError, RuntimeError, AttributeError) as err:
        raise FrontendError(f"XLA cost analysis unavailable: {err}", code="E0528") from err


def xla_cost_analysis(capture: JaxCapture) -> dict[str, dict[str, float]]:
    """`xla_cross_check` as plain dicts (for the JSON report).

    Returns:
        ``{"unoptimized": {...}, "compiled": {...}}``, each with ``flops``,
        ``transcendentals`` and ``bytes_accessed`` (missing analyses are omitted).
    """
    check = xla_cross_check(capture)
    out: dict[str, dict[str, float]] = {}
    for key, cost in (("unoptimized", check.unoptimized), ("compiled", check.compiled)):
        if cost is not None:
            out[key] = {
                "flops": cost.flops,
                "transcendentals": cost.transcendentals,
                "bytes_accessed": cost.bytes_accessed,
            }
    return out


def equation_flops(eqn: Any) -> int | None:
    """XLA's unoptimised FLOPs for one jaxpr equation alone (flops + transcendentals).

    The independent count of an equation SOLAR could not lower, so that the coverage
    report gives uncovered ops a FLOP figure, not only a bytes share. XLA's HLO cost
    analysis costs a loop body once and gives library calls (``custom_call``) no FLOPs:
    a ``while``, ``scan``, ``eigh`` or ``qr`` count is then unknown or a floor.

    Returns:
        The FLOPs, or ``None`` when the equation cannot be lowered alone or XLA gives
        no (or a negative) estimate.
    """
    jax = require_jax()
    avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in eqn.invars]

    def alone(*args: Any) -> Any:
        return eqn.primitive.bind(*args, **eqn.params)

    if eqn.primitive.name in _BODY_ONCE:
        return None
    try:
        with user_code(f"lowering `{eqn.primitive.name}` alone with XLA"):
            lowered = jax.jit(alone).lower(*avals)
            raw = lowered.cost_analysis()
            library_call = "custom_call" in lowered.as_text()
    except FrontendError:
        return None
    cost = _cost(raw)
    if cost is None or library_call or "flops" not in _first(raw):
        return None  # no estimate (approx_top_k) is not zero FLOPs
    if cost.flops < 0 or cost.transcendentals < 0:
        return None
    return int(cost.flops + cost.transcendentals)


def _first(raw: Any) -> dict[str, Any]:
    if isinstance(raw, list | tuple):
        raw = raw[0] if raw else None
    return raw if isinstance(raw, dict) else {}


_BODY_ONCE = frozenset({"while", "scan", "cond"})
"""Primitives whose XLA count covers one body (or one branch), not the work that runs."""
