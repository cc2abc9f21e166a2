"""The JAX frontend: jaxpr -> Affine Loop IR, reference data and an XLA cost cross-check.

Stage contract: a JAX program file (a function ``f`` or a Flax module, plus
``get_inputs()``) -> `JaxCapture` (a closed jaxpr traced on abstract values) ->
`LoweredProgram` (one IR kernel per jaxpr equation, coverage, notes). `reference_data`
runs the real program on CPU for validation; `xla_cost_analysis` reports XLA's own
FLOP/byte estimates. jax is imported lazily, so importing this package needs neither
jax nor flax (nor torch). See docs/jax.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from solar.frontends.jaxfe.capture import CaptureKind, JaxCapture, is_jax_file
from solar.frontends.jaxfe.result import (
    CondRegion,
    ExtraInput,
    LoweredProgram,
    UncoveredOp,
)

if TYPE_CHECKING:
    import numpy as np

    from solar.frontends.jaxfe.xla import XlaCrossCheck

__all__ = [
    "CaptureKind",
    "CondRegion",
    "ExtraInput",
    "JaxCapture",
    "LoweredProgram",
    "UncoveredOp",
    "is_jax_file",
    "lower_jaxpr",
    "reference_data",
    "trace_function",
    "trace_jax_file",
    "xla_cost_analysis",
    "xla_cross_check",
]


def trace_jax_file(
    path: str | Path, *, entry: str | None = None, overrides: dict[str, int] | None = None
) -> JaxCapture:
    """Load a JAX program file and capture it on abstract values (see `capture`)."""
    from solar.frontends.jaxfe.capture import trace_jax_file as _trace

    return _trace(path, entry=entry, overrides=overrides)


def trace_function(
    target: Any, inputs: Sequence[Any], *, init_args: Sequence[Any] = (), name: str = "fn"
) -> JaxCapture:
    """Capture a live function or Flax module on example inputs (see `capture`)."""
    from solar.frontends.jaxfe.capture import trace_function as _trace

    return _trace(target, inputs, init_args=init_args, name=name)


def lower_jaxpr(capture: JaxCapture) -> LoweredProgram:
    """Lower a capture to Affine Loop IR, one kernel per jaxpr equation."""
    from solar.frontends.jaxfe.lowering import lower_jaxpr as _lower

    return _lower(capture)


def reference_data(
    source: JaxCapture | str | Path,
    *,
    lowered: LoweredProgram | None = None,
    entry: str | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Run the real program on CPU: ``(inputs, outputs)`` keyed by IR tensor names."""
    from solar.frontends.jaxfe.reference import reference_data as _ref

    return _ref(source, lowered=lowered, entry=entry)


def xla_cost_analysis(capture: JaxCapture) -> dict[str, dict[str, float]]:
    """XLA's cost analysis (unoptimised and compiled) as plain dicts."""
    from solar.frontends.jaxfe.xla import xla_cost_analysis as _xla

    return _xla(capture)


def xla_cross_check(capture: JaxCapture) -> XlaCrossCheck:
    """XLA's cost analysis (unoptimised and compiled) as an `XlaCrossCheck`."""
    from solar.frontends.jaxfe.xla import xla_cross_check as _xla

    return _xla(capture)
