"""Run the real `solar` entry point in-process and capture exit code and streams."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pytest

from solar.cli import main


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> CliResult:
    """Call ``solar ARGS`` through `solar.cli.main`, as the console script does."""
    old = sys.argv
    sys.argv = ["solar", *args]
    code = 0
    try:
        main()
    except SystemExit as ex:
        code = int(ex.code or 0)
    finally:
        sys.argv = old
    captured = capsys.readouterr()
    return CliResult(code, captured.out, captured.err)
