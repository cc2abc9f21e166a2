"""What one batch file is analysed with, and what comes back: options, rows, resume keys.

Contract: plain frozen values, JSON-able, shared by the parent (`solar.batch.runner`) and
the per-file child process (`solar.batch.worker`). `BatchOptions` splits into the
*analysis* options (what the report depends on: they go to the child and into the
resume key) and the *limits* (time, memory, resume), which never change a result.
`rows_from_report` turns one report into one `BatchRow` per architecture.

Note [Resume key]
~~~~~~~~~~~~~~~~~
A finished file is not redone by ``--resume`` when its row record holds the same key::

    key = sha256(canonical JSON of {
        "format": ROW_FORMAT,
        "solar_version": solar.__version__,
        "input_sha256": sha256(<file bytes>),
        "options": BatchOptions.analysis_fields(),   # archs, precision, sizes, ...
        "specs": [sha256(<resolved hardware spec>) per --arch],
    })

and its report is still there, unchanged (its SHA-256 is in the record too). The
hardware specs enter by content, so editing a spec YAML (or a SOLAR upgrade that
changes a bundled one) redoes the files. ``--timeout``, ``--max-rss`` and
``--workers`` are not in the key: they cannot change a finished result.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, get_args

from solar.diagnostics import UsageError
from solar.options import (
    DEFAULT_ARCH,
    CacheState,
    FrontendChoice,
    OptimizerChoice,
    PrecisionPolicy,
    ValidateMode,
)
from solar.version import __version__

if TYPE_CHECKING:
    from solar.pipeline import AnalyzeOptions
    from solar.report import Report

__all__ = [
    "BATCH_STATUSES",
    "FAILED_STATUSES",
    "JOB_FORMAT",
    "MAX_TIMEOUT_S",
    "ROW_FORMAT",
    "BatchOptions",
    "BatchRow",
    "BatchStatus",
    "FileResult",
    "arch_label",
    "failure_rows",
    "file_sha256",
    "resume_key",
    "rows_from_report",
    "spec_sha256",
]

BatchStatus: TypeAlias = Literal[
    "ok",
    "validation-failed",
    "error",
    "timeout",
    "memory-limit",
    "crashed",
    "cancelled",
    "skipped",
]
"""What happened to one file (every row of the file has it).

``ok``/``validation-failed``: analysed (validation passed or was skipped / failed);
``error``: a SOLAR diagnostic (the input is at fault, or an internal error);
``timeout``/``memory-limit``: stopped at ``--timeout``/``--max-rss``; ``crashed``: the
process died (a signal such as SIGSEGV, an OOM kill, ``os._exit``); ``cancelled``: the
batch was interrupted first; ``skipped``: not a model file (`solar.batch.discover`).
"""

BATCH_STATUSES: Final[tuple[BatchStatus, ...]] = get_args(BatchStatus)
FAILED_STATUSES: Final = frozenset({"error", "timeout", "memory-limit", "crashed"})
ROW_FORMAT: Final = "solar-batch-row/2"  # 2: fused_dram_bytes is the fused row's (issue 31)
JOB_FORMAT: Final = "solar-batch-job/1"
MAX_TIMEOUT_S: Final = 7 * 24 * 3600.0


@dataclass(frozen=True, slots=True)
class BatchOptions:
    """The options of a batch run (the analysis flags of `solar analyze`, plus limits).

    Attributes:
        archs: hardware specs (names or YAML paths); one row per file and arch.
        precision, cache, frontend, sizes, validate, time_budget_s, entry, train,
            train_step, optimizer: as for `solar.pipeline.AnalyzeOptions` (``train``: a
            training-mode forward; ``train_step``: one training step, docs/training.md).
        timeout_s: wall-clock limit per file (``None``: none).
        max_rss_mib: memory limit per file in MiB (``None``: none).
        resume: reuse finished files whose row record has the same key (Note [Resume key]).

    Raises:
        UsageError: E0931 a limit that is not a positive finite number.
    """

    archs: tuple[str, ...] = (DEFAULT_ARCH,)
    precision: PrecisionPolicy = "default"
    cache: CacheState = "warm"
    frontend: FrontendChoice = "auto"
    sizes: Mapping[str, int] = field(default_factory=dict)
    validate: ValidateMode = "auto"
    time_budget_s: float = 60.0
    entry: str | None = None
    train: bool = False
    train_step: bool = False
    optimizer: OptimizerChoice = "auto"
    timeout_s: float | None = 900.0
    max_rss_mib: float | None = None
    resume: bool = False

    def __post_init__(self) -> None:
        if not self.archs:
            raise UsageError("a batch needs at least one --arch", code="E0931")
        checks = (
            ("--timeout", self.timeout_s, MAX_TIMEOUT_S),
            ("--max-rss", self.max_rss_mib, 1 << 30),
        )
        for flag, value, most in checks:
            if value is not None and not 0 < value <= most:
                raise UsageError(
                    f"{flag} must be a positive number (at most {most:,.0f}), got {value}",
                    code="E0931",
                )
        if not 0 < self.time_budget_s <= MAX_TIMEOUT_S:
            raise UsageError(
                f"--time-budget must be positive and finite, got {self.time_budget_s}",
                code="E0931",
            )

    def analysis_fields(self) -> dict[str, object]:
        """The options a report depends on, as JSON (the child's job and the resume key)."""
        return {
            "archs": list(self.archs),
            "precision": self.precision,
            "cache": self.cache,
            "frontend": self.frontend,
            "sizes": dict(sorted(self.sizes.items())),
            "validate": self.validate,
            "time_budget_s": self.time_budget_s,
            "entry": self.entry,
            "train": self.train,
            "train_step": self.train_step,
            "optimizer": self.optimizer,
        }

    def analyze_options(self) -> AnalyzeOptions:
        """The `AnalyzeOptions` of one file (run in the child)."""
        from solar.pipeline import AnalyzeOptions

        return AnalyzeOptions(
            archs=self.archs,
            precision=self.precision,
            cache=self.cache,
            frontend=self.frontend,
            sizes=dict(self.sizes),
            validate=self.validate,
            time_budget_s=self.time_budget_s,
            entry=self.entry,
            train=self.train or self.train_step,
            train_step=self.train_step,
            optimizer=self.optimizer,
        )

    @classmethod
    def from_analysis_fields(cls, data: Mapping[str, Any]) -> BatchOptions:
        """Inverse of `analysis_fields` (the limits keep their defaults).

        Raises:
            TypeError, KeyError: malformed data.
        """
        archs, sizes = data["archs"], data["sizes"]
        if not isinstance(archs, list) or not isinstance(sizes, dict):
            raise TypeError("archs/sizes have the wrong types")
        budget, entry = data["time_budget_s"], data["entry"]
        if not isinstance(budget, int | float) or not (entry is None or isinstance(entry, str)):
            raise TypeError("time_budget_s/entry have the wrong types")
        return cls(
            archs=tuple(str(a) for a in archs),
            precision=data["precision"],
            cache=data["cache"],
            frontend=data["frontend"],
            sizes={str(k): int(v) for k, v in sizes.items()},
            validate=data["validate"],
            time_budget_s=float(budget),
            entry=entry,
            train=bool(data["train"]),
            train_step=bool(data.get("train_step", False)),
            optimizer=data.get("optimizer", "auto"),
        )


@dataclass(frozen=True, slots=True)
class BatchRow:
    """One file on one architecture: a row of ``summary.csv``/``summary.json``.

    Attributes:
        file: the input file, as given.
        arch: the hardware spec's name.
        status: what happened to the file (`BatchStatus`).
        resumed: taken over from an earlier run by ``--resume`` (all fields as then).
        error: the diagnostic or the cause of the failure, on one line.
        report: the file's JSON report (analysed files only).
        log: the file's captured stdout/stderr.
        frontend, coverage, validation, precision, flops: from the report
            (``coverage`` is the covered share of tensor bytes; ``precision`` the arch's
            precision policy).
        fused_dram_bytes: the DRAM bytes of the fused bound on this arch, as the report's
            fused row (a warm L2 may hold all of it: then 0).
        compulsory_dram_bytes: the compulsory DRAM traffic, cold, on any arch (inputs,
            parameters, outputs once: the report's top-level ``fused_dram_bytes``).
        bounds_s: seconds per bound model on this arch.
        headroom: measured time over each bound (only with a measurement).
        wall_s: the file's wall time (the whole analysis, all archs).
        peak_rss_mib: the peak resident memory of the file's own process.
    """

    file: str
    arch: str
    status: BatchStatus
    resumed: bool = False
    error: str | None = None
    report: str | None = None
    log: str | None = None
    frontend: str | None = None
    coverage: float | None = None
    validation: str | None = None
    precision: str | None = None
    flops: float | None = None
    fused_dram_bytes: float | None = None
    compulsory_dram_bytes: float | None = None
    bounds_s: dict[str, float] | None = None
    headroom: dict[str, float] | None = None
    wall_s: float = 0.0
    peak_rss_mib: float = 0.0


@dataclass(frozen=True, slots=True)
class FileResult:
    """The outcome of one file: its status and one row per architecture."""

    file: str
    status: BatchStatus
    rows: tuple[BatchRow, ...]
    resumed: bool = False

    @property
    def failed(self) -> bool:
        """The file errored, timed out, hit the memory limit or crashed."""
        return self.status in FAILED_STATUSES


@functools.cache
def _spec_identity(arch: str) -> tuple[str, str]:
    """``(spec name, sha256 of the resolved spec)`` of an ``--arch`` value.

    Raises:
        HardwareSpecError: unknown or malformed spec.
    """
    from solar.hw import load_hardware_spec

    spec = load_hardware_spec(arch)
    return spec.name, hashlib.sha256(spec.model_dump_json().encode()).hexdigest()


def spec_sha256(arch: str) -> str:
    """The SHA-256 of the resolved hardware spec an ``--arch`` value names (it enters
    resume keys by content).

    Raises:
        HardwareSpecError: unknown or malformed spec.
    """
    return _spec_identity(arch)[1]


def arch_label(arch: str) -> str:
    """The spec name of an ``--arch`` value (a YAML path names its spec), else the value."""
    from solar.diagnostics import HardwareSpecError

    try:
        return _spec_identity(arch)[0]
    except HardwareSpecError:
        return arch


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in chunks.

    Raises:
        OSError: it cannot be read, or is not a regular file (a FIFO is not waited on,
            a device not read without end: Note [Guarded reads] in `solar.files`).
    """
    import errno
    import os
    import stat

    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def resume_key(input_sha256: str, options: BatchOptions) -> str:
    """The resume key of a file with these contents and options (Note [Resume key]).

    Raises:
        HardwareSpecError: an ``--arch`` that does not load.
    """
    material = {
        "format": ROW_FORMAT,
        "solar_version": __version__,
        "input_sha256": input_sha256,
        "options": options.analysis_fields(),
        "specs": [_spec_identity(a)[1] for a in options.archs],
    }
    text = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def rows_from_report(
    report: Report,
    *,
    file: str,
    report_path: Path,
    log: Path | None,
    archs: Sequence[str],
    wall_s: float,
    peak_rss_mib: float,
) -> FileResult:
    """One row per architecture of an analysed file."""
    status: BatchStatus = (
        "validation-failed" if report.validation.status in ("failed", "error") else "ok"
    )
    labels = [arch_label(a) for a in archs]
    if len(labels) != len(report.archs):
        labels = [a.arch for a in report.archs]
    rows = tuple(
        BatchRow(
            file=file,
            arch=label,
            status=status,
            error=report.validation.reason if status != "ok" else None,
            report=str(report_path),
            log=str(log) if log is not None else None,
            frontend=report.frontend.name,
            coverage=report.coverage.covered_bytes_fraction,
            validation=report.validation.status,
            precision=bounds.precision_policy,
            flops=report.flops,
            fused_dram_bytes=next(
                (b.dram_bytes for b in bounds.bounds if b.model == "fused"), None),
            compulsory_dram_bytes=report.fused_dram_bytes,
            bounds_s={b.model: b.time_s for b in bounds.bounds},
            headroom={h.model: h.ratio for h in bounds.headroom} or None,
            wall_s=wall_s,
            peak_rss_mib=peak_rss_mib,
        )
        for label, bounds in zip(labels, report.archs, strict=True)
    )
    return FileResult(file, status, rows)


def failure_rows(
    file: str,
    archs: Sequence[str],
    status: BatchStatus,
    error: str,
    *,
    log: Path | None = None,
    wall_s: float = 0.0,
    peak_rss_mib: float = 0.0,
) -> FileResult:
    """One row per requested architecture of a file that was not analysed."""
    rows = tuple(
        BatchRow(
            file=file,
            arch=arch_label(a),
            status=status,
            error=error,
            log=str(log) if log is not None else None,
            wall_s=wall_s,
            peak_rss_mib=peak_rss_mib,
        )
        for a in archs
    )
    return FileResult(file, status, rows)
