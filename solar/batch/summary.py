"""The batch summaries: ``summary.csv`` and ``summary.json``, one row per file and arch.

Contract: ``rows -> (csv path, json path)``, both written atomically
(`solar.files.write_atomic`), so a reader never sees half a summary. The formats are documented
in docs/batch.md (§ Summaries); `CSV_COLUMNS` is the CSV header.

* ``summary.json``: a JSON list of row objects with the fields of `BatchRow`
  (``bounds_s`` and ``headroom`` are objects keyed by bound model, or ``null``).
* ``summary.csv``: `CSV_COLUMNS`; the per-model fields are flattened to
  ``<model>_s`` and ``headroom_<model>``; empty cells for missing values; numbers with
  6 significant digits (``wall_s`` 2 decimals, ``peak_rss_mib`` whole MiB).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Final

from solar.batch.job import BatchRow
from solar.files import write_atomic
from solar.options import BOUND_MODEL_NAMES

__all__ = ["CSV_COLUMNS", "write_summaries"]

CSV_COLUMNS: Final[tuple[str, ...]] = (
    "file",
    "arch",
    "status",
    "resumed",
    "frontend",
    "coverage",
    "validation",
    "precision",
    "flops",
    "fused_dram_bytes",
    "compulsory_dram_bytes",
    *(f"{m}_s" for m in BOUND_MODEL_NAMES),
    *(f"headroom_{m}" for m in BOUND_MODEL_NAMES),
    "wall_s",
    "peak_rss_mib",
    "report",
    "log",
    "error",
)


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def _csv_row(r: BatchRow) -> list[str]:
    return [
        r.file,
        r.arch,
        r.status,
        "yes" if r.resumed else "",
        r.frontend or "",
        _fmt(r.coverage),
        r.validation or "",
        r.precision or "",
        _fmt(r.flops),
        _fmt(r.fused_dram_bytes),
        _fmt(r.compulsory_dram_bytes),
        *(_fmt((r.bounds_s or {}).get(m)) for m in BOUND_MODEL_NAMES),
        *(_fmt((r.headroom or {}).get(m)) for m in BOUND_MODEL_NAMES),
        f"{r.wall_s:.2f}",
        f"{r.peak_rss_mib:.0f}",
        r.report or "",
        r.log or "",
        r.error or "",
    ]


def write_summaries(rows: Sequence[BatchRow], out_dir: Path) -> tuple[Path, Path]:
    """Write ``summary.csv`` and ``summary.json`` into ``out_dir``; return their paths.

    Raises:
        UsageError: E0940/E0941 a summary cannot be written.
    """
    csv_path, json_path = out_dir / "summary.csv", out_dir / "summary.json"
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    writer.writerows(_csv_row(r) for r in rows)
    write_atomic(csv_path, buffer.getvalue())
    data = [asdict(r) for r in rows]
    write_atomic(json_path, json.dumps(data, indent=2, sort_keys=True) + "\n")
    return csv_path, json_path
