"""The SOLAR pipeline: the one place where the stages are composed.

Contract: ``source + AnalyzeOptions -> Report``. It reads top to bottom
(`solar.pipeline.flow.analyze_front`)::

    front = load_program(source, options)           # registry -> frontend -> Program
    prepared = prepare_program(front, options)      # --ir, verify, sizes, precision,
                                                    # constant params, bounds' program, lift
    validation = validate_front(prepared, options)  # run the IR, compare with the real run
    base = report_base(prepared, ...)               # compile costs and formulas once
    point = bounds_at(base, sizes, ...)             # unfused / fused / cache-aware per device
    report = report_at(base, point, options)        # versioned JSON

Modules: `options` (what is asked, of what source), `prepare` (Note [One preparation
path]: every command bounds the program it returns), `validation` (the validation
policy), `assemble` (bounds and the report), `training` (the step's phases), `rebind`
(costs at another binding), `flow` (the commands' flows). Frontends (ir, torch, jax,
llm) implement `solar.frontends.Frontend` and decide nothing for later stages; every
decision that follows from what a frontend observed is taken here.
"""

from __future__ import annotations

from solar.pipeline.assemble import (
    PointBounds,
    ReportBase,
    bound_arch,
    bounds_at,
    free_sizes,
    report_at,
    report_base,
)
from solar.pipeline.flow import analyze, analyze_front, analyze_module, lift_source, prepare
from solar.pipeline.options import (
    AnalyzeOptions,
    EntrySource,
    FileSource,
    ModuleSource,
    Source,
    source_info,
)
from solar.pipeline.prepare import (
    PreparedProgram,
    check_against_reference,
    effective_precision,
    load_program,
    prepare_program,
)
from solar.pipeline.rebind import ReboundCosts, costs_at
from solar.pipeline.training import training_info
from solar.pipeline.validation import validate_front

__all__ = [
    "AnalyzeOptions",
    "EntrySource",
    "FileSource",
    "ModuleSource",
    "PointBounds",
    "PreparedProgram",
    "ReboundCosts",
    "ReportBase",
    "Source",
    "analyze",
    "analyze_front",
    "analyze_module",
    "bound_arch",
    "bounds_at",
    "check_against_reference",
    "costs_at",
    "effective_precision",
    "free_sizes",
    "lift_source",
    "load_program",
    "prepare",
    "prepare_program",
    "report_at",
    "report_base",
    "source_info",
    "training_info",
    "validate_front",
]
