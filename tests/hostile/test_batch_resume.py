"""`solar batch --resume` (issue 15): keyed on input, options, specs and SOLAR version.

Before, resume compared input hashes only (a changed ``--arch`` kept the old reports),
and resumed rows lost their coverage and bounds. IR files only: no torch needed.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import SAMPLES
from sample_sizes import small_ir_text

import solar.batch.job as job
from solar.batch import CSV_COLUMNS, BatchOptions, run_batch
from solar.batch.job import resume_key


def _files(tmp_path: Path) -> list[Path]:
    src = tmp_path / "models"
    src.mkdir(exist_ok=True)
    files = []
    for name in ("matmul", "softmax"):
        path = src / f"{name}.alir"
        path.write_text(small_ir_text(SAMPLES / "ir" / f"{name}.alir"))
        files.append(path)
    return files


def test_resume_keeps_every_field_and_redoes_what_changed(tmp_path: Path) -> None:
    files, out = _files(tmp_path), tmp_path / "out"
    options = BatchOptions(archs=("H100_SXM", "MI300X"), validate="off")
    first = run_batch(files, options, out)
    assert [(r.file, r.arch, r.status) for r in first.rows] == [
        (str(files[0]), "H100_SXM", "ok"),
        (str(files[0]), "MI300X", "ok"),
        (str(files[1]), "H100_SXM", "ok"),
        (str(files[1]), "MI300X", "ok"),
    ]
    header = (out / "summary.csv").read_text().splitlines()[0]
    assert header == ",".join(CSV_COLUMNS)
    options = replace(options, resume=True)
    again = run_batch(files, options, out)
    assert all(f.resumed for f in again.files)
    for before, after in zip(first.rows, again.rows, strict=True):
        assert after == replace(before, resumed=True)  # coverage, bounds, peak RSS...
        assert after.coverage == 1.0
        assert after.bounds_s and after.flops and after.peak_rss_mib > 0
    # another --arch is another analysis (before: the old reports were kept)
    other_arch = run_batch(files, replace(options, archs=("B200",)), out)
    assert not any(f.resumed for f in other_arch.files)
    assert {r.arch for r in other_arch.rows} == {"B200"}
    # an edited input, and a tampered report, are redone
    files[0].write_text(files[0].read_text() + "\n# edited\n")
    report_path = Path(other_arch.rows[1].report or "")
    report = json.loads(report_path.read_text())
    report["flops"] = 1.0
    report_path.write_text(json.dumps(report))
    third = run_batch(files, replace(options, archs=("B200",)), out)
    assert [f.resumed for f in third.files] == [False, False]
    assert third.rows[1].flops == other_arch.rows[1].flops
    fourth = run_batch(files, replace(options, archs=("B200",)), out)
    assert [f.resumed for f in fourth.files] == [True, True]


def test_the_key_covers_version_options_and_specs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = BatchOptions()
    key = resume_key("0" * 64, base)
    assert resume_key("0" * 64, replace(base, timeout_s=5, max_rss_mib=100, resume=True)) == key
    for changed in (
        replace(base, archs=("B200",)),
        replace(base, archs=("H100_SXM", "B200")),
        replace(base, precision="bf16"),
        replace(base, cache="cold"),
        replace(base, validate="off"),
        replace(base, sizes={"N": 8}),
        replace(base, entry="f"),
        replace(base, train=True),
        replace(base, train_step=True),
        replace(base, optimizer="adamw"),
    ):
        assert resume_key("0" * 64, changed) != key, changed
    assert resume_key("1" * 64, base) != key
    monkeypatch.setattr(job, "__version__", "99.0.0")
    assert resume_key("0" * 64, base) != key
    monkeypatch.undo()
    spec = tmp_path / "box.yaml"  # a spec by path enters the key by its content
    bundled = (SAMPLES.parent / "hardware_specs" / "h100_sxm.yaml").read_text()
    spec.write_text(bundled)
    by_path = resume_key("0" * 64, replace(base, archs=(str(spec),)))
    spec.write_text(bundled.replace("display_name: NVIDIA", "display_name: My", 1))
    job._spec_identity.cache_clear()
    assert resume_key("0" * 64, replace(base, archs=(str(spec),))) != by_path
