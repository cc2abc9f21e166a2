"""Validation: execute Affine Loop IR on numpy arrays and compare with references.

Contract: `execute_program` interprets a verified `Program` over ``dict[name, ndarray]``
(vectorised, never via generated Python source); `validate` runs it against reference
outputs within a time and memory budget and returns a `ValidationResult`;
`reduce_sizes` is the one reduced-sizes search (``validate`` and the frontends use it
to check a program too large for its budget at smaller sizes). This package
never imports torch or jax: reference data comes from `solar.frontends`. See
docs/validation.md for semantics, error codes, dtypes and the tolerance policy.
"""

from __future__ import annotations

from solar.reduced_sizes import ReducedSizes, RunBudget, RunCost, reduce_sizes, size_candidates
from solar.validate.compare import (
    OutputComparison,
    Tolerance,
    compare_outputs,
    output_tolerances,
    tolerance_for,
)
from solar.validate.constants import constant_params
from solar.validate.distributed import execute_distributed, run_distributed
from solar.validate.executor import RunResult, execute_program, run_program
from solar.validate.inputs import random_inputs
from solar.validate.memory import Workload, estimate_memory_bytes, estimate_workload
from solar.validate.validation import ReferenceProvider, ValidationResult, validate

__all__ = [
    "OutputComparison",
    "ReducedSizes",
    "ReferenceProvider",
    "RunBudget",
    "RunCost",
    "RunResult",
    "Tolerance",
    "ValidationResult",
    "Workload",
    "compare_outputs",
    "constant_params",
    "estimate_memory_bytes",
    "estimate_workload",
    "execute_distributed",
    "execute_program",
    "output_tolerances",
    "random_inputs",
    "reduce_sizes",
    "run_distributed",
    "run_program",
    "size_candidates",
    "tolerance_for",
    "validate",
]
