"""The JAX frontend: jaxpr -> Affine Loop IR, reference data and an XLA cost cross-check.

Stage contract: a JAX program file (a function ``f`` or a Flax module, plus
``get_inputs()``) -> `JaxCapture` (a closed jaxpr traced on abstract values) ->
`LoweredProgram` (one IR kernel per jaxpr equation, coverage, notes). `reference_data`
runs the real program on CPU for validation (`reference_at_reduced_sizes` at smaller
sizes of its module-level constants when the real run would be too large);
`xla_cost_analysis` reports XLA's own FLOP/byte estimates. jax is imported lazily, so
importing this package needs neither jax nor flax (nor torch). See docs/jax.md.
"""

from __future__ import annotations

from solar.frontends.jaxfe.capture import (
    CaptureKind,
    JaxCapture,
    is_jax_file,
    trace_function,
    trace_jax_file,
)
from solar.frontends.jaxfe.frontend import JaxFrontend
from solar.frontends.jaxfe.reference import reference_at_reduced_sizes, reference_data
from solar.frontends.jaxfe.xla import XlaCrossCheck, xla_cost_analysis, xla_cross_check
from solar.frontends.kit import CondRegion, LoweredProgram, UncoveredOp, UncoveredValue

__all__ = [
    "CaptureKind",
    "CondRegion",
    "JaxCapture",
    "JaxFrontend",
    "LoweredProgram",
    "UncoveredOp",
    "UncoveredValue",
    "XlaCrossCheck",
    "is_jax_file",
    "lower_jaxpr",
    "reference_at_reduced_sizes",
    "reference_data",
    "trace_function",
    "trace_jax_file",
    "xla_cost_analysis",
    "xla_cross_check",
]


def lower_jaxpr(capture: JaxCapture, *, count_uncovered: bool = False) -> LoweredProgram:
    """Lower a capture to Affine Loop IR, one kernel per jaxpr equation.

    The lowering modules (every ``ops_*`` table entry) load on the first call, so
    ``import solar.frontends.jaxfe`` (``--frontend auto`` detection) stays cheap.
    ``count_uncovered`` gives each uncovered equation XLA's FLOPs for it alone.
    """
    from solar.frontends.jaxfe.lowering import lower_jaxpr as lower

    return lower(capture, count_uncovered=count_uncovered)
