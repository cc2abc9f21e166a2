"""The JAX frontend behind the `Frontend` protocol.

Contract: ``JAX program file -> FrontendResult``: the jaxpr captured on abstract
values and lowered to IR (one kernel per equation), its coverage, XLA's own cost
analysis as a cross-check (figures only; the pipeline words them), a lazy reference
(the real program jitted on CPU) and a lazy measurer. The file is imported once: the
capture holds the function and its inputs (Note [Model-file runs] in
`solar.frontends.protocol`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from solar.diagnostics import SolarError
from solar.frontends.protocol import (
    FrontendOptions,
    FrontendResult,
    Progress,
    ReferenceCheck,
    ValidationPlan,
    require_extra,
    require_python_file,
)
from solar.options import FrontendName

if TYPE_CHECKING:
    from solar.measure import Timing

__all__ = ["JaxFrontend"]


class JaxFrontend:
    """JAX program files (a function or a Flax module, plus ``get_inputs()``)."""

    @property
    def name(self) -> FrontendName:
        """``jax``."""
        return "jax"

    def load(
        self,
        path: Path,
        options: FrontendOptions,
        *,
        progress: Progress,
        check: ReferenceCheck | None = None,
    ) -> FrontendResult:
        """Capture and lower the program file at ``path`` (sizes: ``options.sizes``).

        Raises:
            UsageError: jax is not installed (E0908).
            FrontendError: loading, capture and lowering errors (`solar.frontends.jaxfe`).
        """
        require_python_file(path, "jax")
        require_extra("jax", "jax")
        from solar.frontends import jaxfe

        progress("capturing jaxpr on abstract values")
        capture = jaxfe.trace_jax_file(
            path, entry=options.entry, overrides=dict(options.sizes) or None
        )
        lowered = jaxfe.lower_jaxpr(capture)
        xla: dict[str, dict[str, float]] | None = None
        unavailable = None
        try:
            xla = jaxfe.xla_cost_analysis(capture)
        except SolarError as err:
            unavailable = err.message

        def reference() -> ValidationPlan:
            inputs, outputs = jaxfe.reference_data(capture, lowered=lowered, entry=options.entry)
            return ValidationPlan(lowered.program, inputs, outputs, "full")

        def measure() -> Timing:
            from solar.measure import measure_jax

            args = (*capture.init_params(), *capture.input_values)
            return measure_jax(capture.flat_fn, args)

        return FrontendResult(
            name="jax",
            program=lowered.program,
            captured_with="jaxpr on abstract values",
            ops_total=lowered.ops_seen,
            uncovered=tuple(lowered.coverage),
            reference=reference,
            measure=measure,
            notes=tuple(lowered.notes),
            keep_live=lowered.keep_alive,
            uncovered_values=tuple(v.name for v in lowered.uncovered_values),
            xla_cost_analysis=xla,
            xla_unavailable=unavailable,
        )
