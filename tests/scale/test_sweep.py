"""`solar sweep` (issue 18): one capture per distinct program, sizes re-bound symbolically.

Real captures, no mocks: an IR file is captured once for any number of size
bindings, and every row equals `solar analyze --set` at that binding; a traced
PyTorch program (concrete sizes) is re-captured per binding, on the Dask engine too.
"""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import run_cli
from conftest import ROOT, SAMPLES
from hypothesis import given
from hypothesis import strategies as st
from sample_sizes import small_ir_text

from solar.batch import EngineOptions
from solar.diagnostics import UsageError
from solar.pipeline import AnalyzeOptions, analyze
from solar.report import ArchBounds, BoundResult, Report
from solar.sweep import (
    SweepLimits,
    SweepSpec,
    load_sweep_file,
    parse_axis,
    parse_values,
    run_sweep,
    sweep_points,
)
from solar.sweep.run import capture_groups

BLOCK = SAMPLES / "ir" / "transformer_block.alir"


def test_matmul_sizes_are_rebound_without_recapture(tmp_path: Path) -> None:
    spec = SweepSpec(
        SAMPLES / "ir" / "matmul.alir",
        axes=(("M", (64, 128)), ("N", (32, 256)), ("K", (16,))),
        archs=("H100_SXM", "B200"),
        precisions=("default", "bf16"),
        validate="off",
    )
    summary = run_sweep(spec, tmp_path / "out", limits=SweepLimits(table="csv"))
    assert len(summary.captures) == 1 and summary.captures[0].served == 4
    assert summary.rebindable == ("K", "M", "N")
    assert len(summary.rows) == 4 * 2 * 2
    assert [(r["size_M"], r["size_N"], r["precision"], r["arch"]) for r in summary.rows[:4]] == [
        (64, 32, "default", "H100_SXM"),
        (64, 32, "default", "B200"),
        (64, 32, "bf16", "H100_SXM"),
        (64, 32, "bf16", "B200"),
    ]
    for row in summary.rows:
        m, n = row["size_M"], row["size_N"]
        assert row["flops"] == 2 * m * n * 16  # one multiply-add per (m, n, k)
        item = 2 if row["precision"] == "bf16" else 4  # --precision bf16 moves bf16 bytes
        assert row["compulsory_dram_bytes"] == item * (m * 16 + 16 * n + m * n)  # A, B, C
        assert row["fused_dram_bytes"] == 0.0  # warm: an L2 holds it all
        assert row["binding"] == ("captured" if (m, n) == (64, 32) else "symbolic")
        assert row["status"] == "ok"
    lines = (tmp_path / "out" / "sweep.csv").read_text().splitlines()
    assert lines[0].startswith("point,file,size_M,size_N,size_K,precision,arch,status")
    assert len(lines) == 1 + 16
    data = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert data["points"] == 4 and len(data["captures"]) == 1
    assert len(list((tmp_path / "out" / "reports").glob("*.json"))) == 4 * 2


def _fused_row(arch: ArchBounds) -> BoundResult:
    (row,) = [b for b in arch.bounds if b.model == "fused"]
    return row


@pytest.mark.parametrize("cache", ["warm", "cold"])
def test_fused_dram_bytes_is_the_fused_row_s_on_each_arch(tmp_path: Path, cache: str) -> None:
    """Issue 31: the column is the fused bound's DRAM bytes on that arch (a warm L2 keeps
    up to its capacity), as in the batch CSV; the cold compulsory traffic is its own column."""
    n = 4096
    spec = SweepSpec(SAMPLES / "ir" / "matmul.alir", axes=(("M", (n,)), ("N", (n,)), ("K", (n,))),
                     archs=("H100_SXM", "B200"), validate="off", cache=cache)  # type: ignore[arg-type]
    rows = run_sweep(spec, tmp_path / "out", limits=SweepLimits(table="csv")).rows
    compulsory = 4.0 * 3 * n * n  # A, B, C in f32, once each
    assert [r["compulsory_dram_bytes"] for r in rows] == [compulsory, compulsory]
    for row in rows:
        report = Report.model_validate_json(Path(str(row["report"])).read_text())
        (arch,) = [a for a in report.archs if a.arch == row["arch"]]
        assert row["fused_dram_bytes"] == _fused_row(arch).dram_bytes
    fused = [r["fused_dram_bytes"] for r in rows]
    if cache == "cold":
        assert fused == [compulsory, compulsory]
    else:  # less each arch's L2 (50 MB on H100, more on B200)
        assert compulsory > fused[0] > fused[1]


def test_every_row_equals_solar_analyze_at_its_binding(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    spec = SweepSpec(BLOCK, axes=(("B", (1, 8)), ("T", (16, 64))), precisions=("default", "bf16"))
    summary = run_sweep(spec, tmp_path / "out")
    assert len(summary.captures) == 1
    table = pq.read_table(tmp_path / "out" / "sweep.parquet").to_pylist()
    assert len(table) == 4 * 2
    for row in table[-2:]:  # B=8, T=64
        report = analyze(BLOCK, AnalyzeOptions(sizes={"B": 8, "T": 64}, precision=row["precision"]))
        assert (row["size_B"], row["size_T"]) == (8, 64)
        assert row["flops"] == report.flops
        assert row["compulsory_dram_bytes"] == report.fused_dram_bytes
        assert row["fused_dram_bytes"] == _fused_row(report.archs[0]).dram_bytes
        bounds = {b.model: b.time_s for b in report.archs[0].bounds}
        assert row["unfused_s"] == bounds["unfused"]
        assert row["fused_s"] == bounds["fused"]
        assert row["cache-aware_s"] == bounds["cache-aware"]
        saved = json.loads(Path(row["report"]).read_text())
        assert saved["sizes"] == report.sizes and saved["flops"] == report.flops


def test_sweep_reports_are_solar_analyze_set_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A handful of points (the captured one and re-bound ones, two archs, two policies):
    each sweep report, rendered as `solar analyze -o` renders, is byte-identical to
    ``solar analyze --set`` at that binding, and each table row holds its numbers."""
    out = tmp_path / "sweep"
    done = run_cli(capsys, "sweep", str(BLOCK), "--set", "B=1,8", "--set", "T=16,64",
                   "--set", "H=4,8", "--arch", "H100_SXM", "--arch", "B200",
                   "--precision", "default,bf16", "--out", str(out), "--table", "csv")  # fmt: skip
    assert done.code == 0, done.err
    rows = json.loads((out / "sweep.json").read_text())["rows"]
    assert len(rows) == 8 * 2 * 2
    for point in (0, 5, 7):  # B=1 T=16 H=4 (captured); B=8 T=16 H=8; B=8 T=64 H=8
        for precision in ("default", "bf16"):
            mine = [r for r in rows if r["point"] == point and r["precision"] == precision]
            sizes = {n: mine[0][f"size_{n}"] for n in ("B", "T", "H")}
            path = tmp_path / f"a{point}-{precision}.json"
            ran = run_cli(capsys, "analyze", str(BLOCK),
                          *(a for n, v in sizes.items() for a in ("--set", f"{n}={v}")),
                          "--arch", "H100_SXM", "--arch", "B200", "--precision", precision,
                          "-o", str(path), "-q")  # fmt: skip
            assert ran.code == 0, ran.err
            report = Report.model_validate_json(Path(str(mine[0]["report"])).read_text())
            assert report.to_json() == path.read_text()
            assert [r["arch"] for r in mine] == ["H100_SXM", "B200"]
            for row, arch in zip(mine, report.archs, strict=True):
                assert row["binding"] == ("captured" if point == 0 else "symbolic")
                assert (row["flops"], row["compulsory_dram_bytes"]) == (
                    report.flops,
                    report.fused_dram_bytes,
                )
                assert row["fused_dram_bytes"] == _fused_row(arch).dram_bytes
                assert row["coverage"] == report.coverage.covered_bytes_fraction
                assert {b.model: b.time_s for b in arch.bounds} == {
                    m: row[f"{m}_s"] for m in ("unfused", "fused", "cache-aware")
                }


def test_a_sweep_file_and_its_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "m.alir").write_text(small_ir_text(SAMPLES / "ir" / "matmul.alir"))
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        "model: m.alir\narch: [H100_SXM]\nset:\n  M: [8, 16]\n  N: {from: 8, to: 24, step: 8}\n"
        "precision: [default, fp16]\nvalidate: 'off'\n"
    )
    fields = load_sweep_file(sweep)
    assert fields["axes"] == (("M", (8, 16)), ("N", (8, 16, 24)))
    done = run_cli(capsys, "sweep", str(sweep), "--out", str(tmp_path / "o"), "--table", "csv")
    assert done.code == 0, done.err
    assert "6 points, 1 capture(s), 12 rows (12 ok)" in done.out
    assert "6/6 points" in done.err
    # the table itself is printed too, one line per row (issue 31)
    table = done.out.splitlines()
    assert table[0].split() == ["M", "N", "precision", "arch", "status", "FLOPs", "unfused",
                                "fused", "cache-aware"]
    rows = json.loads((tmp_path / "o" / "sweep.json").read_text())["rows"]
    assert len(table) == 1 + len(rows) + 1
    first = table[1].split()
    assert first[:5] == ["8", "8", "default", "H100_SXM", "ok"]
    from solar.report import format_flops, format_time

    assert " ".join(first[5:7]) == format_flops(rows[0]["flops"])
    assert " ".join(first[7:9]) == format_time(rows[0]["unfused_s"])
    with pytest.raises(UsageError) as bad:
        parse_axis("M=8,zero")
    assert bad.value.code == "E0933"
    unknown = run_cli(capsys, "sweep", str(tmp_path / "m.alir"), "--set", "Q=1,2",
                      "--out", str(tmp_path / "q"), "--table", "csv")  # fmt: skip
    assert unknown.code == 1  # the capture fails: Q is not a size of the program
    assert "E0220" in unknown.err
    wrong = run_cli(capsys, "sweep", str(tmp_path / "m.alir"), "--precision", "fp64")
    assert wrong.code == 2 and "E0933" in wrong.err


def test_help_does_not_import_dask() -> None:
    code = (
        "import sys\nfrom solar.cli import app\n"
        "from typer.testing import CliRunner\n"
        "CliRunner().invoke(app, ['--help'])\nCliRunner().invoke(app, ['sweep', '--help'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed', "
        "'pyarrow')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.torch
@pytest.mark.slow
def test_a_traced_program_is_rebound_without_recapture_on_dask(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("distributed")
    spec = SweepSpec(
        SAMPLES / "torch" / "gpt_block.py",
        axes=(("BATCH", (1, 2)), ("SEQ", (8, 16))),
        precisions=("default", "bf16"),
        validate="off",
    )
    local = run_sweep(spec, tmp_path / "l", limits=SweepLimits(table="csv"))
    dask = run_sweep(
        spec,
        tmp_path / "d",
        limits=SweepLimits(table="csv"),
        engine=EngineOptions(engine="dask", workers=2),
    )
    # the traced program is symbolic in SEQ (BATCH=1 cannot be followed: a size of 1),
    # so the four bindings need fewer captures than points
    assert len(local.captures) == len(dask.captures) < 4
    assert "SEQ" in local.rebindable and local.rebindable == dask.rebindable

    def key(rows: tuple[dict[str, object], ...]) -> list[tuple[object, ...]]:
        return sorted(
            (r["point"], r["precision"], r["arch"], r["flops"], r["fused_s"], r["status"])
            for r in rows
        )

    assert key(local.rows) == key(dask.rows)
    by_point = {(r["size_BATCH"], r["size_SEQ"]): r["flops"] for r in local.rows}
    assert by_point[2, 8] == 2 * by_point[1, 8]  # twice the tokens, twice the work


@given(st.lists(st.integers(1, 10**6), min_size=1, max_size=8))
def test_value_lists_parse_in_order_without_repeats(values: list[int]) -> None:
    assert parse_values(",".join(map(str, values))) == tuple(dict.fromkeys(values))


@given(st.integers(1, 500), st.integers(0, 500), st.integers(1, 50))
def test_ranges_are_inclusive(lo: int, span: int, step: int) -> None:
    assert parse_values(f"{lo}..{lo + span}:{step}") == tuple(range(lo, lo + span + 1, step))


@given(st.lists(st.tuples(st.sampled_from("ABC"), st.lists(st.integers(1, 9), min_size=1,
                                                            max_size=3, unique=True)),
                min_size=1, max_size=3, unique_by=lambda a: a[0]))  # fmt: skip
def test_points_are_the_product_and_groups_cover_them_once(
    axes: list[tuple[str, list[int]]],
) -> None:
    spec = SweepSpec(Path("m.alir"), axes=tuple((n, tuple(v)) for n, v in axes))
    points = sweep_points(spec)
    count = 1
    for _name, values in axes:
        count *= len(values)
    assert len(points) == count == len({tuple(sorted(p.items())) for p in points})
    first = axes[0][0]
    groups = capture_groups(range(len(points)), points, frozenset({first}))
    assert sorted(i for g in groups for i in g) == list(range(len(points)))
    for group in groups:  # one capture each: the points agree on every non-rebindable size
        fixed = {tuple((k, v) for k, v in points[i].items() if k != first) for i in group}
        assert len(fixed) == 1
    assert capture_groups(range(len(points)), points, None) == [list(range(len(points)))]


def test_an_invalid_binding_is_that_points_error(tmp_path: Path) -> None:
    # conv2d.alir: Ho = (H + 2*1 - 2*(3-1) - 1) // 2 + 1, which is 0 at H = 1
    spec = SweepSpec(
        SAMPLES / "ir" / "conv2d.alir",
        axes=(("H", (12, 1)),),
        archs=("H100_SXM", "B200"),
        validate="off",
    )
    summary = run_sweep(spec, tmp_path / "out", limits=SweepLimits(table="csv"))
    assert len(summary.captures) == 1
    assert [(r["size_H"], r["arch"], r["status"]) for r in summary.rows] == [
        (12, "H100_SXM", "ok"),
        (12, "B200", "ok"),
        (1, "H100_SXM", "error"),
        (1, "B200", "error"),
    ]
    assert "E0221" in str(summary.rows[-1]["error"])
    assert summary.failed == 2


_REPEAT_MODEL = """
import torch

N = 16
REPEAT = 1


class Model(torch.nn.Module):
    def forward(self, x):
        for _ in range(REPEAT):  # the structure changes with REPEAT: one capture each
            x = torch.relu(x * 2.0)
        return x


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
"""


@pytest.mark.torch
@pytest.mark.slow
def test_a_killed_sweep_resumes_and_every_point_lands_once(tmp_path: Path) -> None:
    """SIGTERM a sweep once its first capture landed; ``--resume`` binds only the rest."""
    pytest.importorskip("torch")
    model = tmp_path / "model.py"
    model.write_text(_REPEAT_MODEL)
    out = tmp_path / "out"
    args = ["--set", "REPEAT=1,2,3", "--set", "N=16,32", "--out", str(out), "--table", "csv",
            "--workers", "1", "--validate", "off"]  # fmt: skip
    run = subprocess.Popen(
        [sys.executable, "-m", "solar", "sweep", str(model), *args],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    journal = out / "sweep.journal.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and run.poll() is None:
        if journal.is_file() and journal.read_text().count("\n") >= 1:
            break
        time.sleep(0.1)
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=120)
    assert run.returncode == 143, err
    assert "stopped by SIGTERM" in err
    first = [json.loads(line) for line in journal.read_text().splitlines()]
    done = {r["point"] for e in first for r in e["rows"]}
    assert done and len(done) < 6  # one capture serves the 2 values of N, not REPEAT

    spec = SweepSpec(model, axes=(("REPEAT", (1, 2, 3)), ("N", (16, 32))), validate="off")
    again = run_sweep(spec, out, limits=SweepLimits(table="csv"), resume=True)
    assert again.resumed == len(done)
    assert sorted(r["point"] for r in again.rows) == list(range(6))  # every point once
    assert all(r["status"] == "ok" for r in again.rows)
    assert {r["point"] for r in again.rows if r["resumed"]} == done
    assert min(c.index for c in again.captures) > max(e["capture"] for e in first)
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    landed = [r["point"] for e in lines for r in e["rows"]]
    assert sorted(landed) == list(range(6))  # each point landed in exactly one capture
    for row in again.rows:
        assert Path(str(row["report"])).is_file()
    table = list(csv.DictReader((out / "sweep.csv").read_text().splitlines()))
    assert sorted(int(r["point"]) for r in table if r["resumed"] == "yes") == sorted(done)
