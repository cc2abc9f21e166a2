"""Batch runs: analyse many model files in parallel worker processes.

Contract: ``files + AnalyzeOptions -> BatchSummary``; one report per file in the
output directory plus ``summary.csv`` and ``summary.json``. Failures are isolated:
a file that raises gets its error in the summary and never stops the run. A run
can resume: files whose report exists for the same input hash are not redone.
Workers are separate processes (``spawn``), so a crash or leak in one model file
cannot corrupt another's analysis.
"""

from __future__ import annotations

import concurrent.futures as cf
import csv
import glob
import hashlib
import json
import multiprocessing
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

from solar.diagnostics import SolarError, UsageError
from solar.options import BOUND_MODEL_NAMES

if TYPE_CHECKING:
    from solar.pipeline import AnalyzeOptions

__all__ = ["BatchRow", "BatchStatus", "BatchSummary", "expand_sources", "run_batch"]

BatchStatus: TypeAlias = Literal["ok", "validation-failed", "error"]
"""A resumed file is ``ok``, with ``error`` saying it was resumed."""


@dataclass(frozen=True, slots=True)
class BatchRow:
    """The outcome of one file."""

    file: str
    status: BatchStatus
    report: str | None = None
    error: str | None = None
    frontend: str | None = None
    coverage: float | None = None
    validation: str | None = None
    flops: float | None = None
    bounds_s: dict[str, float] | None = None
    headroom: dict[str, float] | None = None
    wall_s: float = 0.0
    peak_rss_mib: float = 0.0


@dataclass(frozen=True, slots=True)
class BatchSummary:
    """All rows plus where the summaries were written."""

    rows: tuple[BatchRow, ...]
    csv_path: Path
    json_path: Path

    @property
    def failed(self) -> int:
        """Files that errored."""
        return sum(r.status == "error" for r in self.rows)


def expand_sources(spec: str) -> list[Path]:
    """A directory (its ``*.py``/``*.alir`` files, recursively) or a glob, sorted.

    Raises:
        UsageError: nothing matched (E0930).
    """
    path = Path(spec)
    if path.is_dir():
        files = [p for p in path.rglob("*") if p.suffix in (".py", ".alir")]
        files = [p for p in files if not p.name.startswith("_") and "cache" not in p.parts]
    else:
        files = [Path(p) for p in glob.glob(spec, recursive=True)]
    files = sorted(p for p in files if p.is_file())
    if not files:
        raise UsageError(f"no model or IR files match `{spec}`", code="E0930")
    return files


def _report_name(path: Path) -> str:
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]
    return f"{path.stem}-{digest}.json"


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _analyze_one(path_text: str, options: AnalyzeOptions, out_dir_text: str) -> BatchRow:
    """Worker: analyse one file, write its report, never raise."""
    from solar.pipeline import analyze

    path, out_dir = Path(path_text), Path(out_dir_text)
    start = time.monotonic()
    try:
        report = analyze(path, options)
    except SolarError as err:
        return BatchRow(str(path), "error", error=f"error[{err.code}]: {err.message}",
                        wall_s=time.monotonic() - start, peak_rss_mib=_peak_rss_mib())
    except Exception as err:  # noqa: BLE001 — batch isolation: one file never stops the run
        return BatchRow(str(path), "error", error=f"internal error: {type(err).__name__}: {err}",
                        wall_s=time.monotonic() - start, peak_rss_mib=_peak_rss_mib())
    target = out_dir / _report_name(path)
    target.write_text(report.to_json(), encoding="utf-8")
    first = report.archs[0] if report.archs else None
    return BatchRow(
        file=str(path),
        status="ok" if report.validation.status in ("passed", "skipped") else "validation-failed",
        report=str(target),
        frontend=report.frontend.name,
        coverage=report.coverage.covered_bytes_fraction,
        validation=report.validation.status,
        flops=report.flops,
        bounds_s={b.model: b.time_s for b in first.bounds} if first else None,
        headroom={h.model: h.ratio for h in first.headroom} if first and first.headroom else None,
        wall_s=time.monotonic() - start,
        peak_rss_mib=_peak_rss_mib(),
    )


def _resumable(path: Path, out_dir: Path) -> BatchRow | None:
    target = out_dir / _report_name(path)
    if not target.is_file():
        return None
    try:
        data = json.loads(target.read_text(encoding="utf-8"))
        same = data["input"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not same:
        return None
    return BatchRow(str(path), "ok", report=str(target), frontend=data["frontend"]["name"],
                    validation=data["validation"]["status"], flops=data.get("flops"),
                    error="resumed: report already up to date")


def _write_summaries(rows: Sequence[BatchRow], out_dir: Path) -> tuple[Path, Path]:
    csv_path, json_path = out_dir / "summary.csv", out_dir / "summary.json"
    models = BOUND_MODEL_NAMES
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["file", "status", "frontend", "coverage", "validation", "flops",
                    *[f"{m}_s" for m in models], *[f"headroom_{m}" for m in models],
                    "wall_s", "peak_rss_mib", "error"])
        for r in rows:
            w.writerow([r.file, r.status, r.frontend or "", _fmt(r.coverage), r.validation or "",
                        _fmt(r.flops), *[_fmt((r.bounds_s or {}).get(m)) for m in models],
                        *[_fmt((r.headroom or {}).get(m)) for m in models],
                        f"{r.wall_s:.2f}", f"{r.peak_rss_mib:.0f}", r.error or ""])
    json_path.write_text(json.dumps([asdict(r) for r in rows], indent=2, sort_keys=True) + "\n",
                         encoding="utf-8")
    return csv_path, json_path


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def run_batch(
    files: Sequence[Path],
    options: AnalyzeOptions,
    out_dir: Path,
    *,
    workers: int = 2,
    resume: bool = False,
    progress: Callable[[int, int, BatchRow], None] | None = None,
) -> BatchSummary:
    """Analyse ``files`` in ``workers`` processes; write reports and summaries to ``out_dir``."""
    opts = replace(options, save_ir=None)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows: dict[str, BatchRow] = {}
    todo = []
    for f in files:
        done = _resumable(f, out_dir) if resume else None
        if done is not None:
            rows[str(f)] = done
        else:
            todo.append(f)
    total, finished = len(files), 0
    for row in rows.values():
        finished += 1
        if progress:
            progress(finished, total, row)
    if todo:
        ctx = multiprocessing.get_context("spawn")
        with cf.ProcessPoolExecutor(max_workers=max(1, workers), mp_context=ctx) as pool:
            futures = {pool.submit(_analyze_one, str(f), opts, str(out_dir)): f for f in todo}
            for fut in cf.as_completed(futures):
                f = futures[fut]
                try:
                    row = fut.result()
                except cf.process.BrokenProcessPool as err:
                    row = BatchRow(str(f), "error", error=f"worker crashed: {err}")
                rows[str(f)] = row
                finished += 1
                if progress:
                    progress(finished, total, row)
    ordered = tuple(rows[str(f)] for f in files)
    csv_path, json_path = _write_summaries(ordered, out_dir)
    return BatchSummary(ordered, csv_path, json_path)
