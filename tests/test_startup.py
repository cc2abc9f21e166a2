"""Start-up: commands that need no framework never import torch or jax (issue: Speed).

Each command runs in a fresh interpreter through `solar.cli.main`, as the console script
does, and the child reports which heavy modules ended up in ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, SAMPLES

_PROBE = """
import json, sys
from solar.cli import main
sys.argv = ["solar", *sys.argv[1:]]
try:
    main()
except SystemExit as ex:
    code = ex.code
else:
    code = 0
heavy = ("torch", "jax", "sympy", "numpy", "lark")
sys.stderr.write("\\nPROBE " + json.dumps({m: m in sys.modules for m in heavy}) + "\\n")
sys.exit(code)
"""

MATMUL = str(SAMPLES / "ir" / "matmul.alir")


def _loaded(*args: str, env: dict[str, str] | None = None) -> dict[str, bool]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(x for x in proc.stderr.splitlines() if x.startswith("PROBE "))
    return dict(json.loads(line.removeprefix("PROBE ")))


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("analyze", "--help"),
        ("specs", "list"),
        ("ir", "check", MATMUL),
        ("analyze", MATMUL, "--validate", "off", "-q"),
        ("analyze", MATMUL, "-q"),
    ],
    ids=["help", "analyze-help", "specs-list", "ir-check", "analyze-ir", "analyze-ir-validated"],
)
def test_commands_without_a_framework_import_neither_torch_nor_jax(args: tuple[str, ...]) -> None:
    loaded = _loaded(*args)
    assert not loaded["torch"]
    assert not loaded["jax"]


def test_help_imports_nothing_heavy() -> None:
    assert not any(_loaded("--help").values())


@pytest.mark.torch
def test_torch_analysis_imports_no_parser_and_no_jax() -> None:
    # a traced program is built as IR nodes: lark (and the `regex` module it loads,
    # about 0.15 s) is for IR text only; no fork, so the probe sees the analysis' imports
    loaded = _loaded(
        "analyze",
        str(SAMPLES / "torch" / "layernorm.py"),
        "--validate",
        "off",
        "-q",
        env={"SOLAR_NO_FORK": "1"},
    )
    assert loaded["torch"]
    assert not loaded["lark"]
    assert not loaded["jax"]
