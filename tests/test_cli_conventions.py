"""CLI conventions (issue 16, point 7): help pages, option names, progress, calibrate.

Every test runs the real `solar` entry point (`cli_helpers.run_cli`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from cli_helpers import run_cli
from conftest import ROOT, SAMPLES

from solar.cli import app

MATMUL = str(SAMPLES / "ir" / "matmul.alir")


def _command_paths(typer_app: typer.Typer, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix]
    for info in typer_app.registered_commands:
        assert info.name is not None
        paths.append((*prefix, info.name))
    for group in typer_app.registered_groups:
        assert group.name is not None and group.typer_instance is not None
        paths += _command_paths(group.typer_instance, (*prefix, group.name))
    return paths


COMMANDS = _command_paths(app)


@pytest.fixture
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wide terminal, so no help text is cut."""
    monkeypatch.setenv("COLUMNS", "200")


@pytest.mark.usefixtures("wide")
@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "solar")
def test_every_help_page_has_examples_exit_codes_and_no_type_tags(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    r = run_cli(capsys, *path, "--help")
    assert r.code == 0, r.err
    assert "<bool>" not in r.out and "list[" not in r.out, r.out
    assert "--no-no-" not in r.out
    assert "Examples:" in r.out and "$ solar" in r.out, r.out
    assert "Exit codes:" in r.out or "Exit codes" in r.out
    assert "Note [" not in r.out, "internal notes belong after \\f in the docstring"


@pytest.mark.usefixtures("wide")
def test_analyze_help_shows_the_arch_default_and_the_inputs_format(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = run_cli(capsys, "analyze", "--help").out
    assert "Default: H100_SXM" in out
    assert ".npz (arrays arr_0, arr_1.. positional, other names keyword)" in out
    assert "--llm-cache-dir" in out and "--no-llm-cache" in out
    # the LLM cache no longer shares a name with --cache warm|cold; old spellings are hidden
    assert not re.search(r"--cache-dir|--no-cache\b", out)
    assert "<warm|cold>" in out


def test_old_llm_cache_spellings_still_work_with_a_deprecation_note(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("openai")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    args = ("analyze", str(SAMPLES / "llm" / "blocked_rmsnorm.py"), "--frontend", "llm",
            "--model", "recorded", "--format", "json", "-q", "--validate", "off")  # fmt: skip
    new = run_cli(capsys, *args, "--llm-cache-dir", str(SAMPLES / "llm" / "cache"))
    old = run_cli(capsys, *args, "--cache-dir", str(SAMPLES / "llm" / "cache"))
    assert new.code == old.code == 0, (new.err, old.err)
    assert json.loads(old.out)["frontend"]["captured_with"] == "llm (cache hit)"
    assert "deprecated" not in new.err
    assert old.err.strip() == "warning: --cache-dir is deprecated; use --llm-cache-dir"


def test_bounds_takes_format_json_and_keeps_json_as_a_hidden_alias(
    capsys: pytest.CaptureFixture[str],
) -> None:
    new = run_cli(capsys, "bounds", MATMUL, "--format", "json")
    old = run_cli(capsys, "bounds", MATMUL, "--json")
    assert new.code == old.code == 0
    assert new.out == old.out and json.loads(new.out)["archs"][0]["arch"] == "H100_SXM"
    assert "--json is deprecated; use --format json" in old.err
    assert "deprecated" not in new.err


def test_analyze_shows_stages_from_the_start_and_quiet_silences_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = run_cli(capsys, "analyze", MATMUL)
    assert r.code == 0, r.err
    first, second = r.err.splitlines()[:2]
    assert re.fullmatch(r"\[\s+0\.0s\] analysing .*matmul\.alir", first), r.err
    assert re.fullmatch(r"\[\s+\d+\.\ds\] loading .*matmul\.alir \(auto frontend\)", second)
    assert "computing bounds" in r.err
    assert r.out.endswith("\n")  # the shell prompt starts on a line of its own
    quiet = run_cli(capsys, "analyze", MATMUL, "-q")
    assert quiet.code == 0 and quiet.err == "" and quiet.out == r.out


def test_ir_fmt_keeps_comments(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "ir", "fmt", MATMUL)
    assert r.code == 0, r.err
    source_comments = [ln for ln in Path(MATMUL).read_text().splitlines() if "#" in ln]
    assert source_comments and all(c in r.out for c in source_comments)


def test_the_readme_ir_run_inputs_file_exists_and_runs(capsys: pytest.CaptureFixture[str]) -> None:
    inputs = ROOT / "examples" / "matmul_inputs.npz"
    r = run_cli(capsys, "ir", "run", MATMUL, "--inputs", str(inputs))
    assert r.code == 0, r.err
    assert re.match(r"C: float32\[\d+, \d+\]  min ", r.out)


# -------------------------------------------------------------------------- calibrate
@pytest.fixture
def slow_fp16(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine whose fp16 matmuls run at 0.3 GFLOP/s (no fast fp16 path)."""
    from solar.hw import calibrate

    real = calibrate.measure_matmul_flops_per_s

    def measure(dtype: str, *, n: int = 1024, trials: int = 3) -> float | None:
        return 3e8 if dtype == "fp16" else real(dtype, n=n, trials=trials)

    monkeypatch.setattr(calibrate, "measure_matmul_flops_per_s", measure)


@pytest.mark.usefixtures("slow_fp16")
def test_calibrate_shows_stages_and_never_writes_a_floor_as_a_measurement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from solar.hw import Precision, load_hardware_spec

    out = tmp_path / "box.yaml"
    r = run_cli(capsys, "calibrate", "-o", str(out), "--quick")
    assert r.code == 0, r.err
    for stage in ("memory bandwidth", "fp64 matmul", "fp32 matmul", "fp16 matmul"):
        assert stage in r.err, r.err
    assert "~10 s" not in r.err
    spec = load_hardware_spec(str(out))
    assert spec.peak_for(Precision.FP16, "vector") != 1e9  # not the old floor
    assert "fp16" not in {p.value for p in spec.vector_flops_per_s}
    assert any("fp16 matmuls measured 0.3 GFLOP/s" in n for n in spec.notes)


def test_calibrate_refuses_a_bandwidth_below_what_a_spec_may_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from solar.hw import calibrate

    monkeypatch.setattr(calibrate, "measure_bandwidth_bytes_per_s", lambda **_: 4e8)
    out = tmp_path / "box.yaml"
    r = run_cli(capsys, "calibrate", "-o", str(out), "--quick")
    assert r.code == 2
    assert "error[E0404]: measured memory bandwidth 0.4 GB/s" in r.err
    assert not out.exists()


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "solar")
def test_every_help_page_fits_an_80_column_terminal(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # Note [Narrow help]
    r = run_cli(capsys, *path, "--help")
    assert r.code == 0, r.err
    wide = [line for line in r.out.splitlines() if len(line) > 80]
    assert not wide, wide
    assert "Examples:" in r.out and "$ solar" in r.out
    assert "Exit codes:" in r.out
    # every example command starts its own line (not joined into a paragraph)
    assert all(line.lstrip().startswith("$ solar") for line in r.out.splitlines()
               if "$ solar" in line)


def test_analyze_help_on_80_columns_keeps_descriptions_beside_options(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    out = run_cli(capsys, "analyze", "--help").out
    assert re.search(r"^  --arch SPEC +Hardware spec: a name from `solar specs$", out, re.M), out
    assert re.search(r"^  -o, --output <path> +Write the JSON report here\.$", out, re.M)


@pytest.mark.parametrize(("argv", "message", "note"), [
    (("analyze", MATMUL, "--arc", "H100_SXM"), "no such option: --arc", "did you mean --arch"),
    (("bounds", MATMUL, "--bogus"), "no such option: --bogus", "bounds --help`"),
    (("analyze", MATMUL, "extra"), "got unexpected extra argument(s) (extra)", "analyze --help`"),
    (("sweep",), "missing argument 'source'", "sweep --help`"),
])  # fmt: skip
def test_command_line_mistakes_are_coded_usage_diagnostics(
    argv: tuple[str, ...], message: str, note: str, capsys: pytest.CaptureFixture[str]
) -> None:
    r = run_cli(capsys, *argv)
    assert r.code == 2
    assert r.err.startswith(f"error[E0904]: {message}\n"), r.err
    assert note in r.err
    assert "Traceback" not in r.err and "Usage:" not in r.err
