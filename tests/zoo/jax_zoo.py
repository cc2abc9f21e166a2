"""The JAX half of the zoo: equinox, flax.nnx, MJX and brax programs (jax_programs/),
analysed as a user runs them (`solar analyze FILE`, ``--train`` for the step files).

`run_jax_program(entry)` returns a `zoo_run.ZooRow`; the independent FLOP count is XLA's
own ``cost_analysis`` of the unoptimised HLO (figures in the report's frontend notes), so
the floor is 0 (XLA counts what SOLAR does not, e.g. the transcendentals of a ``tanh`` as
FLOPs, and the reverse: the row shows both)."""

from __future__ import annotations

import re
import resource
import time
from dataclasses import dataclass
from pathlib import Path

from zoo_run import ZooRow

PROGRAMS = Path(__file__).resolve().parent / "jax_programs"


@dataclass(frozen=True, slots=True)
class JaxZooEntry:
    """One JAX zoo program.

    Attributes:
        name: ``library/program``.
        file: under jax_programs/.
        requires: the modules it imports.
        train: analysed with ``--train`` (the file's function is the step).
        slow: too heavy for the default CI run.
        known_gap: why it is not yet complete and validated (the test expects the gap).
    """

    name: str
    file: str
    requires: tuple[str, ...]
    train: bool = False
    slow: bool = False
    known_gap: str = ""


JAX_ZOO: tuple[JaxZooEntry, ...] = (
    JaxZooEntry("equinox/mlp", "equinox_mlp.py", ("equinox",)),
    JaxZooEntry("equinox/mlp_sgd_step", "equinox_mlp_train.py", ("equinox",), train=True),
    JaxZooEntry("flax.nnx/mlp", "nnx_mlp.py", ("flax",)),
    JaxZooEntry("flax.nnx/mlp_sgd_step", "nnx_mlp_train.py", ("flax",), train=True),
    JaxZooEntry(
        "mjx/double_pendulum", "mjx_double_pendulum.py", ("mujoco",), slow=True,
    ),
    JaxZooEntry(
        "brax/inverted_pendulum", "brax_inverted_pendulum.py", ("brax",), slow=True,
    ),
)


def _xla_flops(notes: tuple[str, ...]) -> float:
    for note in notes:
        m = re.search(r"XLA cost_analysis \(unoptimized\):.*flops ([\d.e+]+)", note)
        if m:
            return float(m.group(1))
    return 0.0


def run_jax_program(entry: JaxZooEntry, *, validate: str = "auto") -> ZooRow:
    """``solar analyze jax_programs/FILE [--train] [--validate MODE]`` through the pipeline."""
    from solar.pipeline import AnalyzeOptions, analyze

    start = time.monotonic()
    options = AnalyzeOptions(train_step=entry.train, validate=validate)  # type: ignore[arg-type]
    report = analyze(PROGRAMS / entry.file, options)
    wall = time.monotonic() - start
    val = report.validation
    xla = _xla_flops(tuple(report.frontend.notes))
    return ZooRow(
        name=entry.name,
        kernels=report.ir.kernels,
        solar_flops=report.flops,
        counter_flops=xla,
        counter_floor=0.0,
        coverage_complete=report.coverage.complete,
        uncovered=tuple(f"{u.op} x{u.count}" for u in report.coverage.uncovered),
        validation=f"{val.status}/{val.strategy}",
        wall_s=wall,
        peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    )
