"""The sweep's table: one row per size binding, precision policy and architecture.

Contract: ``rows -> sweep.parquet`` (pyarrow, typed columns) or ``sweep.csv``, plus
``sweep.json`` (the plan, the captures and the same rows), all written atomically.
Columns: `fixed_columns` around one ``size_<NAME>`` column per swept size.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from solar.diagnostics import UsageError
from solar.files import atomic_output, write_atomic
from solar.options import BOUND_MODEL_NAMES, TableFormat

__all__ = [
    "SHOWN_ROWS",
    "TableFormat",
    "columns",
    "is_valid_row",
    "text_table",
    "write_json",
    "write_table",
]

SHOWN_ROWS: Final = 40
"""Rows `text_table` prints; the written table holds them all."""

_HEAD: Final = ("point", "file")
_TAIL: Final = (
    "precision",
    "arch",
    "status",
    "resumed",
    "binding",
    "capture",
    "precision_used",
    "frontend",
    "coverage",
    "validation",
    "flops",
    "fused_dram_bytes",
    "compulsory_dram_bytes",
    *(f"{m}_s" for m in BOUND_MODEL_NAMES),
    "report",
    "error",
)
_INTS: Final = frozenset({"point", "capture"})
_BOOLS: Final = frozenset({"resumed"})
_FLOATS: Final = frozenset(
    {"coverage", "flops", "fused_dram_bytes", "compulsory_dram_bytes",
     *(f"{m}_s" for m in BOUND_MODEL_NAMES)}
)


_MAX_INT: Final = 2**63 - 1


def is_valid_row(row: object) -> bool:
    """True when ``row`` is a table row: each column of its type and range (ints in
    ``[0, 2**63)``, sizes positive, floats finite and not negative, strings or None).

    A row read back from a file SOLAR does not control (a ``--resume`` journal) is
    checked with this before it may reach the table.

    >>> is_valid_row({"point": 0, "size_N": 8, "fused_s": 1e-6, "status": "ok"})
    True
    >>> is_valid_row({"point": 0, "size_N": 8.5})
    False
    >>> is_valid_row({"point": 0, "fused_s": -1.0})
    False
    """
    if not isinstance(row, dict) or not all(isinstance(k, str) for k in row):
        return False
    return all(_valid_cell(k, v) for k, v in row.items())


def _valid_cell(column: str, value: object) -> bool:
    if value is None:
        return True
    if column in _INTS or column.startswith("size_"):
        low = 1 if column.startswith("size_") else 0
        return type(value) is int and low <= value <= _MAX_INT
    if column in _FLOATS:
        return (isinstance(value, int | float) and not isinstance(value, bool)
                and 0.0 <= value < math.inf)
    if column in _BOOLS:
        return type(value) is bool
    return type(value) is str


def columns(size_names: Sequence[str]) -> tuple[str, ...]:
    """The table's columns for these swept sizes."""
    return (*_HEAD, *(f"size_{n}" for n in size_names), *_TAIL)


def write_table(
    rows: Sequence[Mapping[str, object]],
    size_names: Sequence[str],
    out_dir: Path,
    table_format: TableFormat,
) -> Path:
    """Write the rows as ``sweep.parquet`` or ``sweep.csv``; return its path.

    Raises:
        UsageError: E0908 Parquet without pyarrow; E0940/E0941 the file cannot be
            written.
    """
    cols = columns(size_names)
    if table_format == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(cols)
        for row in rows:
            writer.writerow(_cell(row.get(c)) for c in cols)
        path = out_dir / "sweep.csv"
        write_atomic(path, buffer.getvalue())
        return path
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError(
            "--table parquet needs pyarrow: pip install 'solar-sol[dask]' (or --table csv)",
            code="E0908",
        ) from None
    fields = [
        pa.field(c, pa.int64() if c in _INTS or c.startswith("size_") else
                 pa.float64() if c in _FLOATS else pa.bool_() if c in _BOOLS else pa.string())
        for c in cols
    ]  # fmt: skip
    table = pa.Table.from_pylist([{c: row.get(c) for c in cols} for row in rows], pa.schema(fields))
    path = out_dir / "sweep.parquet"
    with atomic_output(path) as fh:  # Note [Atomic outputs]: no `.tmp` is left behind
        pq.write_table(table, fh)
    return path


def _cell(value: object) -> str:
    if value is None or value is False:
        return ""
    if value is True:  # `resumed`, as in `solar batch`'s summary.csv
        return "yes"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def write_json(summary: Mapping[str, object], out_dir: Path) -> Path:
    """``sweep.json``: the plan, the captures and the rows."""
    path = out_dir / "sweep.json"
    write_atomic(path, json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return path


def text_table(rows: Sequence[Mapping[str, object]], size_names: Sequence[str],
               table_path: Path) -> list[str]:
    """The rows as the terminal shows them: sizes, policy, device, status, FLOPs and
    the three bounds (the first `SHOWN_ROWS`; the file has every column and row)."""
    from solar.report.render import format_flops, format_time

    def time_cell(value: object) -> str:
        return format_time(float(value)) if isinstance(value, int | float) else "-"

    sizes = [f"size_{n}" for n in size_names]
    head = [*size_names, "precision", "arch", "status", "FLOPs",
            *(m for m in BOUND_MODEL_NAMES)]
    body = []
    for r in rows[:SHOWN_ROWS]:
        flops = r.get("flops")
        body.append([
            *(str(r.get(c, "")) for c in sizes),
            str(r.get("precision", "")), str(r.get("arch", "")), str(r.get("status", "")),
            format_flops(float(flops)) if isinstance(flops, int | float) else "-",
            *(time_cell(r.get(f"{m}_s")) for m in BOUND_MODEL_NAMES),
        ])
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    left = len(size_names) + 3  # sizes and words left-aligned, numbers right-aligned

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i < left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    lines = [line(head), *(line(b) for b in body)]
    if len(rows) > SHOWN_ROWS:
        lines.append(f"... {len(rows) - SHOWN_ROWS} more rows in {table_path}")
    return lines
