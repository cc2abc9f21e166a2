"""Budgets that hold before the work: memory for a real build, float range, IR size.

Issue 15: ``.item()`` in a model's ``__init__`` fell back to a full real build with no
budget (40 GB attempted); sizes whose counts pass 1.8e308 ended in E0999 (an
``OverflowError``) or printed ``inf``; ``solar ir check`` of 10^6 statements took over
120 s and 3 GB. Each now fails fast with its own code.
"""

from __future__ import annotations

import json
import math
import re
import resource
import sys
from pathlib import Path

import pytest
from cli_helpers import CliResult, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.budget import memory_budget
from solar.diagnostics import IRSyntaxError
from solar.ir import parse_program

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA")


def assert_diagnostic(r: CliResult, code: str, exit_code: int) -> None:
    """``r`` ended with ``error[code]`` and ``exit_code``, without a traceback."""
    assert r.code == exit_code, (r.out, r.err)
    assert re.search(rf"^error\[{code}\]", r.err, re.MULTILINE), r.err
    assert "Traceback" not in r.err and "E0999" not in r.err, r.err


# ------------------------------------------------------------------ memory budget
HUGE_INIT = """\
import torch
N = 8
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        # .item() of a random tensor: fake construction cannot run it, so SOLAR builds
        # the model for real; the build then asks for 40 GiB
        n = int(torch.randn(1).abs().item() * 0 + 40)
        self.w = torch.nn.Parameter(torch.zeros(n * 2**30 // 4))
    def forward(self, a):
        return a * 2
def get_inputs():
    return [torch.randn(N)]
"""

SMALL_INIT = """\
import torch
N = 8
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.k = int(torch.randn(1).abs().item() * 0 + 3)
        self.w = torch.nn.Parameter(torch.randn(N, N))
    def forward(self, a):
        return a @ self.w * self.k
def get_inputs():
    return [torch.randn(N, N)]
"""


@pytest.mark.torch
def test_a_40_gib_real_build_fails_at_the_allocation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    path = tmp_path / "huge.py"
    path.write_text(HUGE_INIT)
    before = resource.getrlimit(resource.RLIMIT_DATA)
    r = run_cli(capsys, "analyze", str(path), "-q")
    assert_diagnostic(r, "E0505", 1)
    assert "more memory than the 2 GiB budget" in r.err
    assert "huge.py:9 in __init__" in r.err
    assert resource.getrlimit(resource.RLIMIT_DATA) == before  # restored


@pytest.mark.torch
def test_a_small_real_build_still_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    path = tmp_path / "small.py"
    path.write_text(SMALL_INIT)
    r = run_cli(capsys, "analyze", str(path), "-q", "--format", "json")
    assert r.code == 0, r.err
    report = json.loads(r.out)
    assert report["validation"]["status"] == "passed"
    # 2*8^3 FLOPs for the matmul, 8*8 for the scaling by k
    fused = next(b for b in report["archs"][0]["bounds"] if b["model"] == "fused")
    assert fused["flops"] == 2 * 8**3 + 8 * 8


def test_memory_budget_refuses_an_allocation_past_it() -> None:
    before = resource.getrlimit(resource.RLIMIT_DATA)
    with memory_budget(64 << 20) as enforced:
        assert enforced
        with pytest.raises(MemoryError):
            bytearray(1 << 30)
        small = bytearray(1 << 20)  # within the budget
    assert len(small) == 1 << 20
    assert resource.getrlimit(resource.RLIMIT_DATA) == before


# ------------------------------------------------------------------ float overflow
def _deep_ir(tmp_path: Path, depth: int = 17) -> Path:
    """``C[i0] += A[i0, i1]`` inside ``depth`` nested loops over S: S**depth FLOPs."""
    lines = ["solar-ir 1", "program deep", "size S = 4", "input A : f32[S, S]",
             "output C : f32[S]", "kernel k {", "  for i0 in 0 .. S {", "    C[i0] = 0.0"]
    indent = "    "
    for k in range(1, depth):
        lines.append(f"{indent}for i{k} in 0 .. S {{")
        indent += "  "
    lines.append(f"{indent}C[i0] += A[i0, i1]")
    for _ in range(1, depth):
        indent = indent[:-2]
        lines.append(f"{indent}}}")
    lines += ["  }", "}"]
    path = tmp_path / "deep.alir"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("command", ["analyze", "bounds", "compare", "provision"])
def test_counts_past_a_float_are_a_diagnostic(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # 2 * (2**62)**17 FLOPs: about 1e316, past a float's 1.8e308 (was E0999)
    extra = ("--target-ms", "1") if command == "provision" else ()
    r = run_cli(capsys, command, str(_deep_ir(tmp_path)), "--set", f"S={2**62}", *extra)
    assert_diagnostic(r, "E0455", 1)
    assert "too large for a 64-bit float" in r.err
    assert not re.search(r"\b(inf|nan)\b", r.out, re.IGNORECASE)


def test_counts_just_below_a_float_print_as_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = run_cli(capsys, "bounds", str(_deep_ir(tmp_path)), "--set", f"S={2**58}", "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    for bound in data["archs"][0]["bounds"]:
        assert math.isfinite(bound["time_s"]) and bound["time_s"] > 1e270
    text = run_cli(capsys, "bounds", str(_deep_ir(tmp_path)), "--set", f"S={2**58}").out
    assert "e+2" in text and len(max(text.splitlines(), key=len)) < 200


@settings(max_examples=12, deadline=None)
@given(depth=st.integers(1, 17), bits=st.integers(1, 62))
def test_any_size_gives_finite_bounds_or_e0455(depth: int, bits: int) -> None:
    """Hypothesis: whatever the sizes, a bound is a finite number or E0455, never inf/nan."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = _deep_ir(Path(tmp), depth=max(depth, 2))
        r = _run_plain("bounds", str(path), "--set", f"S={2**bits}", "--json")
    if r.code == 0:
        for bound in json.loads(r.out)["archs"][0]["bounds"]:
            assert math.isfinite(bound["time_s"]) and bound["time_s"] > 0
            assert math.isfinite(bound["flops"]) and math.isfinite(bound["dram_bytes"])
    else:
        assert_diagnostic(r, "E0455", 1)
        assert 2 * (2**bits) ** max(depth, 2) > 1e300  # only when the counts are that large


def _run_plain(*args: str) -> CliResult:
    """`run_cli` without a capsys fixture (hypothesis runs many examples per test)."""
    import contextlib
    import io

    from solar.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = sys.argv
    sys.argv = ["solar", *args]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as ex:
        code = int(ex.code or 0)
    finally:
        sys.argv = old
    return CliResult(code, out.getvalue(), err.getvalue())


# ------------------------------------------------------------------------- IR size
def _tiny_statements(n: int) -> str:
    body = "\n".join(["    C[i] = A[i]"] + ["    C[i] += A[i]"] * (n - 1))
    return (
        "solar-ir 1\nprogram big\nsize M = 32\ninput A : f32[M]\noutput C : f32[M]\n"
        f"kernel k {{\n  for i in 0 .. M {{\n{body}\n  }}\n}}\n"
    )


def test_an_ir_over_the_token_limit_is_refused_before_parsing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import time

    text = _tiny_statements(101_000)  # 1.7 MB, 1.01 million tokens
    start = time.monotonic()
    with pytest.raises(IRSyntaxError) as info:
        parse_program(text)
    assert info.value.code == "E0106"
    assert time.monotonic() - start < 5  # a scan, not a parse
    path = tmp_path / "big.alir"
    path.write_text(text)
    r = run_cli(capsys, "ir", "check", str(path))
    assert_diagnostic(r, "E0106", 1)
    assert "more than 1,000,000 tokens" in r.err
