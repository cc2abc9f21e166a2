"""Input paths that are not plain files, or are too large, fail before a byte is read.

Issue 15: ``/dev/zero`` as an input was read without bound, a FIFO blocked forever, an
npz bomb was decompressed in full before its shape was checked, and ``solar ir check``
of 10^6 statements took minutes and gigabytes. Each case now ends at once with a coded
diagnostic (Note [Guarded reads] in `solar.files`). Large files are sparse, so the
tests write nothing of their size.
"""

from __future__ import annotations

import io
import os
import re
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import CliResult, run_cli
from conftest import SAMPLES

from solar.diagnostics import UsageError
from solar.files import MAX_IR_BYTES, MAX_TEXT_BYTES, load_npz, read_text

MATMUL = SAMPLES / "ir" / "matmul.alir"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIFOs, /dev/zero")


def assert_diagnostic(r: CliResult, code: str, exit_code: int) -> None:
    """``r`` ended with ``error[code]`` and ``exit_code``, without a traceback."""
    assert r.code == exit_code, (r.out, r.err)
    assert re.search(rf"^error\[{code}\]", r.err, re.MULTILINE), r.err
    assert "Traceback" not in r.err and "E0999" not in r.err, r.err


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    """A FIFO nobody writes to: opening it for a blocking read would wait forever."""
    path = tmp_path / "pipe.alir"
    os.mkfifo(path)
    return path


def _sparse(path: Path, size: int) -> Path:
    with path.open("wb") as fh:
        fh.truncate(size)
    return path


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
@pytest.mark.parametrize(
    "argv",
    [
        ("analyze", "{}"),
        ("ir", "check", "{}"),
        ("ir", "fmt", "{}"),
        ("ir", "run", "{}"),
        ("ir", "run", str(MATMUL), "--inputs", "{}"),
        ("ir", "validate", str(MATMUL), "--reference", "{}"),
        ("analyze", str(MATMUL), "--reference", "{}"),
    ],
    ids=lambda a: "-".join(x for x in a if x != "{}" and "/" not in x),
)
def test_a_path_that_is_not_a_file_is_refused_unread(
    kind: str,
    argv: tuple[str, ...],
    fifo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = {"fifo": fifo, "dev-zero": Path("/dev/zero"), "directory": tmp_path}[kind]
    r = run_cli(capsys, *(a.replace("{}", str(path)) for a in argv))
    assert_diagnostic(r, "E0902", 2)
    expected = {"fifo": "a FIFO", "dev-zero": "a device", "directory": "a directory"}[kind]
    assert expected in r.err


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_report_or_spec_that_is_not_a_file(
    kind: str, fifo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(fifo if kind == "fifo" else Path("/dev/zero"))
    assert_diagnostic(run_cli(capsys, "gate", path), "E0701", 1)
    assert_diagnostic(run_cli(capsys, "plot", path, "-o", "/tmp/x.png"), "E0701", 1)
    r = run_cli(capsys, "analyze", str(MATMUL), "--arch", path)
    assert_diagnostic(r, "E0401", 2)


def test_ir_over_the_limit_is_refused_before_parsing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 10^6 statements of `C[i] += A[i]` are 17 MB: over the 8 MiB limit (was 120+ s, 3 GB)
    big = _sparse(tmp_path / "big.alir", 17_000_106)
    for argv in (("ir", "check"), ("ir", "fmt"), ("analyze",), ("bounds",)):
        r = run_cli(capsys, *argv, str(big))
        assert_diagnostic(r, "E0943", 2)
        assert "over the limit of 8,388,608" in r.err


def test_text_inputs_over_their_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _sparse(tmp_path / "r.json", MAX_TEXT_BYTES + 1)
    r = run_cli(capsys, "gate", str(report))
    assert_diagnostic(r, "E0701", 1)
    assert "over the limit" in r.err
    spec = _sparse(tmp_path / "box.yaml", (1 << 20) + 1)
    assert_diagnostic(run_cli(capsys, "analyze", str(MATMUL), "--arch", str(spec)), "E0401", 2)


def test_read_text_reads_at_most_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "a.alir"
    path.write_text("x" * 100)
    assert read_text(path, max_bytes=100) == "x" * 100
    with pytest.raises(UsageError) as info:
        read_text(path, max_bytes=99)
    assert info.value.code == "E0943"
    assert MAX_IR_BYTES < MAX_TEXT_BYTES


# --------------------------------------------------------------------- npz archives
def _npz_with_header(
    path: Path, shape: tuple[int, ...], payload: bytes, descr: str = "<f4"
) -> Path:
    """An archive whose ``x.npy`` declares ``shape`` and holds ``payload``."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": descr, "fortran_order": False, "shape": shape}
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("x.npy", header.getvalue() + payload)
    return path


def test_an_npz_declaring_more_than_it_holds_is_refused_before_allocating(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 32 GiB declared, 64 bytes held: numpy would allocate the 32 GiB first
    liar = _npz_with_header(tmp_path / "liar.npz", (2**33,), bytes(64))
    r = run_cli(capsys, "ir", "run", str(MATMUL), "--inputs", str(liar))
    assert_diagnostic(r, "E0942", 2)
    assert "declares 34,359,738,368 bytes" in r.err
    r = run_cli(capsys, "analyze", str(MATMUL), "--reference", str(liar))
    assert_diagnostic(r, "E0942", 2)
    # a bare .npy that declares 32 GiB: refused from its magic bytes, never loaded
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": (2**33,)}
    )
    npy = tmp_path / "liar.npz"
    npy.write_bytes(header.getvalue() + bytes(64))
    r = run_cli(capsys, "ir", "run", str(MATMUL), "--inputs", str(npy))
    assert_diagnostic(r, "E0942", 2)
    assert "a single .npy array" in r.err


def test_an_npz_bomb_is_refused_from_its_headers(tmp_path: Path) -> None:
    # an honest archive: 4 MiB of zeros compress to a few KiB; a limit of 1 MiB refuses
    # it from the zip directory and the .npy header, before anything is decompressed
    path = tmp_path / "bomb.npz"
    np.savez_compressed(path, x=np.zeros(1 << 20, dtype=np.float32))
    assert path.stat().st_size < 64 << 10
    with pytest.raises(UsageError) as info:
        load_npz(path, max_bytes=1 << 20)
    assert info.value.code == "E0942"
    assert "once decompressed, over the limit" in info.value.message
    assert load_npz(path, max_bytes=8 << 20)["x"].shape == (1 << 20,)


def test_an_npz_header_with_objects_is_refused(tmp_path: Path) -> None:
    path = _npz_with_header(tmp_path / "obj.npz", (2,), bytes(16), descr="|O")
    with pytest.raises(UsageError) as info:
        load_npz(path)
    assert info.value.code == "E0942"


def test_a_valid_npz_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "ok.npz"
    np.savez(path, a=np.arange(6.0), b=np.ones((2, 3), dtype=np.int32))
    arrays = load_npz(path)
    assert arrays["a"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert arrays["b"].dtype == np.int32
