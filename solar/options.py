"""The closed vocabularies of SOLAR's options, each spelled once.

Contract: a leaf module (no SOLAR imports, nothing heavy): the CLI builds its parser
from these types on every run, so typer checks choices (a bad ``--precision`` is a
usage error before any work), and the library, the report schema and the CLI share
them. Values are kebab-case, exactly as they appear on the command line and in reports.

`PrecisionPolicy`, `BoundModel` and `CacheState` are the bound models' vocabularies
(their meaning: docs/bounds.md); `solar.bounds` imports them from here, because
importing `solar.bounds` costs seconds (sympy) and the CLI needs them at start-up.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, get_args

__all__ = [
    "Recompute",
    "StepPhase",
    "BOUND_MODEL_NAMES",
    "DEFAULT_ARCH",
    "FRONTEND_NAMES",
    "BoundModel",
    "CacheState",
    "EngineName",
    "FrontendChoice",
    "FrontendName",
    "OptimizerChoice",
    "OutputFormat",
    "PrecisionPolicy",
    "TableFormat",
    "ValidateMode",
]

PrecisionPolicy: TypeAlias = Literal["default", "strict-fp32", "tf32", "bf16", "fp16", "fp8"]
"""Which compute unit and peak each piece of work may use (`solar.bounds.precision`)."""

BoundModel: TypeAlias = Literal["unfused", "fused", "cache-aware"]
"""The three bound models, in report order."""

CacheState: TypeAlias = Literal["warm", "cold"]
"""``warm``: a benchmark loop (data may be L2-resident); ``cold``: every first touch
comes from DRAM."""

FrontendName: TypeAlias = Literal["torch", "jax", "llm", "ir"]
"""A frontend, as reports name it."""

FrontendChoice: TypeAlias = Literal["auto", FrontendName]
"""``--frontend``: a frontend, or ``auto`` (chosen from the file; see
`solar.frontends.detect_frontend`)."""

ValidateMode: TypeAlias = Literal["auto", "full", "sampled", "off"]
"""``--validate``: how to run the IR against the real program (docs/validation.md)."""

OptimizerChoice: TypeAlias = Literal["auto", "sgd", "adam", "adamw"]
"""``--optimizer`` of a training step (``--train``): ``auto`` is the model file's own
(``get_optimizer``) or SGD (docs/training.md)."""
EngineName: TypeAlias = Literal["local", "dask"]
"""``--engine`` of `solar batch` and `solar sweep`: a local process pool, or a Dask
cluster (docs/scale.md)."""

TableFormat: TypeAlias = Literal["parquet", "csv"]
"""``--table`` of `solar sweep`."""

OutputFormat: TypeAlias = Literal["text", "json"]
"""``--format`` of `solar analyze` on stdout."""

BOUND_MODEL_NAMES: Final[tuple[BoundModel, ...]] = get_args(BoundModel)
FRONTEND_NAMES: Final[tuple[FrontendName, ...]] = get_args(FrontendName)

DEFAULT_ARCH: Final = "H100_SXM"
"""The hardware spec analysed when no ``--arch`` is given."""

Recompute: TypeAlias = Literal["none", "selective", "full"]
"""``--recompute``: activation recomputation of a parallel plan (docs/distributed.md)."""

StepPhase: TypeAlias = Literal["train", "prefill", "decode"]
"""``--phase``: what one step of a parallel plan is (docs/distributed.md)."""
