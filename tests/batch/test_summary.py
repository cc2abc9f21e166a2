"""The batch summaries (solar.batch.summary): each column shows what its label says.

Issue 31: the CSV's ``fused_dram_bytes`` was the compulsory cold traffic, not the fused
row's DRAM bytes: a 32x24x16 fp32 matmul fits in H100's warm L2, so the report's fused
row said 0 B and the CSV 6656. Now ``fused_dram_bytes`` is the fused row's, per arch,
and ``compulsory_dram_bytes`` the arch-independent compulsory traffic.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from conftest import SAMPLES
from sample_sizes import small_ir_text

from solar.batch import CSV_COLUMNS, write_summaries
from solar.batch.job import rows_from_report
from solar.pipeline import AnalyzeOptions, analyze

ARCHS = ("H100_SXM", "A100_SXM_80GB")


def test_fused_dram_bytes_is_the_fused_rows(tmp_path: Path) -> None:
    path = tmp_path / "matmul.alir"
    path.write_text(small_ir_text(SAMPLES / "ir" / "matmul.alir"))
    report = analyze(path, AnalyzeOptions(archs=ARCHS, validate="off", cache="warm"))
    result = rows_from_report(report, file=str(path), report_path=tmp_path / "r.json",
                              log=None, archs=ARCHS, wall_s=1.0, peak_rss_mib=10.0)
    csv_path, json_path = write_summaries(result.rows, tmp_path)
    with csv_path.open(newline="") as f:
        table = list(csv.reader(f))
    assert tuple(table[0]) == CSV_COLUMNS
    cells = [dict(zip(table[0], row, strict=True)) for row in table[1:]]
    summary = json.loads(json_path.read_text())
    assert [c["arch"] for c in cells] == list(ARCHS)
    for arch, cell, row in zip(report.archs, cells, summary, strict=True):
        fused = next(b for b in arch.bounds if b.model == "fused")
        assert row["fused_dram_bytes"] == fused.dram_bytes
        assert cell["fused_dram_bytes"] == f"{fused.dram_bytes:.6g}"
        assert row["compulsory_dram_bytes"] == report.fused_dram_bytes
        assert cell["compulsory_dram_bytes"] == f"{report.fused_dram_bytes:.6g}"
    # the case of the issue: a warm L2 holds the whole program, the two numbers differ
    assert report.fused_dram_bytes == (32 * 16 + 16 * 24 + 32 * 24) * 4
    assert cells[0]["fused_dram_bytes"] == "0"
