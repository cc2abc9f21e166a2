"""Sweeps: one model file over architectures × size bindings × precision policies.

Contract: ``SweepSpec -> SweepSummary`` (`run_sweep`): the Cartesian product of size
bindings, each distinct program captured and lifted once and re-bound symbolically
where its IR allows (Note [Capture plan] in `solar.sweep.run`, Note [Symbolic
re-binding] in `solar.sweep.worker`), each capture a fresh process under limits, on
this machine or a Dask cluster (`solar.batch.engine`); one Parquet/CSV table, one
report per point and precision, and ``sweep.json`` (docs/scale.md).

Error codes: E0933 a malformed sweep axis or file; E0934 too many points.
"""

from __future__ import annotations

from solar.sweep.run import CaptureRecord, SweepLimits, SweepSummary, run_sweep
from solar.sweep.spec import (
    MAX_POINTS,
    SweepSpec,
    load_sweep_file,
    parse_axis,
    parse_values,
    sweep_points,
)
from solar.sweep.table import TableFormat, columns

__all__ = [
    "MAX_POINTS",
    "CaptureRecord",
    "SweepLimits",
    "SweepSpec",
    "SweepSummary",
    "TableFormat",
    "columns",
    "load_sweep_file",
    "parse_axis",
    "parse_values",
    "run_sweep",
    "sweep_points",
]
