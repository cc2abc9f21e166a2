"""Run the real `solar` entry point in-process and capture exit code and streams."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

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


def make_hostile_path(path: Path, kind: str) -> Path:
    """Put at ``path`` something that is not a readable input file, of ``kind``: ``fifo``,
    ``dev-zero`` (a link to it), ``directory`` or ``huge`` (a sparse 64 MiB + 1 file,
    over every text limit, using no disk)."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "huge":
        with path.open("wb") as fh:
            fh.truncate((64 << 20) + 1)
    else:
        raise ValueError(kind)
    return path
