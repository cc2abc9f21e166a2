"""The sweep's journal: what ``solar sweep --resume`` reads (Note [Sweep resume]).

Contract: `sweep_key` ``SweepSpec -> str`` names everything that can change a
finished point's rows; `read_finished` ``(out_dir, key, points, reports) -> {point
index: rows}`` returns the points an earlier run of the same key finished;
`Journal` appends one line per landed capture to ``sweep.journal.jsonl`` in the
output folder, after that capture's reports are in place.

Note [Sweep resume]
~~~~~~~~~~~~~~~~~~~
The same semantics as ``solar batch --resume`` (docs/batch.md), per point instead of
per file. A capture that lands appends one line to the journal: the sweep's key, the
capture's index, its rows and the SHA-256 of each report it wrote; the line is
written after the reports, so a line never names a report that is not complete, and
a run killed at any moment leaves whole lines and perhaps one torn last line (never
read). With ``--resume`` a point is not bound again when, under the same key, the
journal holds its rows for every precision and arch, all ``ok`` (or all
``validation-failed``), and (when reports are asked for) every report is still there
with the SHA-256 the line holds, under the name the point has in this sweep. Its
rows are taken over as they were, with the point's index in this sweep and
``resumed`` set. Points are matched by their size binding and, with reports, by
their index too (the report's name): the same sweep run again resumes every finished
point, and a sweep with values appended to its first axis the points it shares with
the earlier one; a point whose index moved is bound again. The key is
``sha256`` of the journal format, the SOLAR version, the model file's SHA-256, the
analysis options (archs, precisions, cache, frontend, validate, time budget, entry)
and the SHA-256 of each resolved hardware spec; the limits, the engine, the table
format and the axes are not in it. New captures are numbered after the journal's, so
their logs never overwrite a resumed capture's.
Without ``--resume`` the journal starts empty.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from solar.batch.job import arch_label, file_sha256, spec_sha256
from solar.diagnostics import UsageError
from solar.files import write_atomic
from solar.sweep.spec import SweepSpec
from solar.sweep.table import is_valid_row
from solar.version import __version__

__all__ = [
    "JOURNAL_FORMAT",
    "JOURNAL_NAME",
    "MAX_JOURNAL_BYTES",
    "Finished",
    "Journal",
    "read_finished",
    "report_name",
    "sweep_key",
]

JOURNAL_FORMAT: Final = "solar-sweep-row/2"  # 2: fused_dram_bytes is the fused row's (issue 31)
JOURNAL_NAME: Final = "sweep.journal.jsonl"
_REUSABLE: Final = frozenset({"ok", "validation-failed"})

Binding = tuple[tuple[str, int], ...]


def sweep_key(spec: SweepSpec) -> str:
    """The resume key of a sweep (Note [Sweep resume]).

    Raises:
        OSError: the model file cannot be read.
        HardwareSpecError: an ``--arch`` that does not load.
    """
    material = {
        "format": JOURNAL_FORMAT,
        "solar_version": __version__,
        "input_sha256": file_sha256(spec.model),
        "options": {
            "archs": list(spec.archs),
            "precisions": list(spec.precisions),
            "cache": spec.cache,
            "frontend": spec.frontend,
            "validate": spec.validate,
            "time_budget_s": spec.time_budget_s,
            "entry": spec.entry,
            "entry_args": spec.entry_args,
            "inputs_sha256": None if spec.inputs_file is None else file_sha256(spec.inputs_file),
            "input_shapes": list(spec.input_shapes),
        },
        "specs": [spec_sha256(a) for a in spec.archs],
    }
    text = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _binding(row: Mapping[str, object]) -> Binding:
    return tuple(sorted((k[5:], v) for k, v in row.items()  # type: ignore[misc]
                        if k.startswith("size_")))  # fmt: skip


MAX_JOURNAL_BYTES: Final = 256 << 20
"""The largest journal ``--resume`` reads (256 MiB: a million points' rows)."""


def _lines(path: Path, key: str) -> list[dict[str, object]]:
    """The journal's whole, well-formed lines of this key.

    A torn line, a foreign one and a tampered one (a field of the wrong type, a NaN, a
    row that is not a table row: `is_valid_row`) are all skipped alike: their points are
    bound again. The journal is read like any input (Note [Guarded reads]): a FIFO or
    a device in its place is not waited on, and is read as an empty journal.
    """
    from solar.files import DataError, parse_data, read_text

    try:
        text = read_text(path, max_bytes=MAX_JOURNAL_BYTES)
    except UsageError:
        return []
    out: list[dict[str, object]] = []
    for line in text.splitlines():
        try:
            entry = parse_data(line, fmt="json")
        except DataError:
            continue
        if isinstance(entry, dict) and _is_line(entry, key):
            out.append(entry)
    return out


def _is_line(entry: dict[str, object], key: str) -> bool:
    """True when ``entry`` is a journal line of ``key`` with every field of its type."""
    rows, reports, capture = entry.get("rows"), entry.get("reports", {}), entry.get("capture")
    return (
        entry.get("format") == JOURNAL_FORMAT
        and entry.get("key") == key
        and type(capture) is int
        and capture >= 0
        and isinstance(rows, list)
        and all(is_valid_row(r) and _has_row_keys(r) for r in rows)
        and isinstance(reports, dict)
        and all(type(v) is str for v in reports.values())
    )


def _has_row_keys(row: Mapping[str, object]) -> bool:
    return all(type(row.get(k)) is str for k in ("precision", "arch", "status"))


def _reports_intact(
    rows: Sequence[Mapping[str, object]], digests: Mapping[str, str], point: int
) -> bool:
    """Every row's report is there, unchanged, under the name this sweep gives the point
    (a point whose index moved is bound again: its new name may be another's old one)."""
    for row in rows:
        report = row.get("report")
        if not report:
            return False
        path = Path(str(report))
        if path.name != report_name(point, str(row["precision"])):
            return False
        try:
            if file_sha256(path) != digests.get(path.name):
                return False
        except OSError:
            return False
    return True


def report_name(point: int, precision: str) -> str:
    """The file name of a point's report under one precision policy."""
    return f"p{point:06d}-{precision}.json"


class Finished:
    """What an earlier run finished: per point index of this sweep, its rows."""

    def __init__(self, rows: dict[int, list[dict[str, object]]], last_capture: int,
                 lines: list[dict[str, object]]) -> None:  # fmt: skip
        self.rows, self.last_capture, self.lines = rows, last_capture, lines


def read_finished(
    out_dir: Path,
    key: str,
    spec: SweepSpec,
    points: Sequence[Mapping[str, int]],
    *,
    reports: bool,
) -> Finished:
    """The points of ``points`` an earlier run of ``key`` finished (Note [Sweep resume])."""
    lines = _lines(out_dir / JOURNAL_NAME, key)
    index = {tuple(sorted(p.items())): i for i, p in enumerate(points)}
    want = {(p, arch_label(a)) for p in spec.precisions for a in spec.archs}
    by_point: dict[Binding, list[dict[str, object]]] = {}
    digests: dict[str, str] = {}
    last = -1
    for entry in lines:  # a later line's rows of a binding replace an earlier line's
        last = max(last, entry["capture"])  # type: ignore[call-overload]
        digests.update(entry.get("reports") or {})  # type: ignore[call-overload]
        mine: dict[Binding, list[dict[str, object]]] = {}
        for row in entry["rows"]:  # type: ignore[attr-defined]
            mine.setdefault(_binding(row), []).append(dict(row))
        by_point.update(mine)
    out: dict[int, list[dict[str, object]]] = {}
    for binding, rows in by_point.items():
        i = index.get(binding)
        if i is None or {(r["precision"], r["arch"]) for r in rows} != want:
            continue
        if len(rows) != len(want) or len({r["status"] for r in rows}) != 1:
            continue
        if rows[0]["status"] not in _REUSABLE:
            continue
        if reports and not _reports_intact(rows, digests, i):
            continue
        out[i] = [{**r, "point": i, "file": str(spec.model), "resumed": True} for r in rows]
    return Finished(out, last, lines)


class Journal:
    """The journal of this run: earlier lines kept when resuming, then one per capture."""

    def __init__(self, out_dir: Path, key: str, kept: Sequence[Mapping[str, object]]) -> None:
        self.path, self.key = out_dir / JOURNAL_NAME, key
        write_atomic(self.path, "".join(json.dumps(e, sort_keys=True) + "\n" for e in kept))

    def record(self, capture: int, rows: Sequence[Mapping[str, object]],
               reports: Mapping[str, bytes]) -> None:  # fmt: skip
        """Append a landed capture's rows and its reports' SHA-256 (written already)."""
        entry = {
            "format": JOURNAL_FORMAT,
            "key": self.key,
            "capture": capture,
            "rows": list(rows),
            "reports": {n: hashlib.sha256(d).hexdigest() for n, d in reports.items()},
        }
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, sort_keys=True) + "\n")
            fh.flush()
