"""`solar batch`: one file's global state never reaches another (issue 15).

The three leaks of a reused worker, run in the order that exposed them (one worker,
the leaking file first): ``torch.set_default_dtype(torch.float64)`` doubled a later
file's bytes, ``set_float32_matmul_precision("high")`` switched it to TF32, and two
folders with their own ``helpers.py`` made the second model import the first one's.
The leaking file also touches 300 MB, which must not show in the next file's
``peak_rss_mib``. Helper modules are skipped, not failed.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from solar.batch import BatchOptions, expand_sources, run_batch

pytestmark = [pytest.mark.torch, pytest.mark.slow]
pytest.importorskip("torch")

MODEL = """\
import torch
from torch import nn

from helpers import N
{extra}

class Model(nn.Module):
    def forward(self, x, y):
        return x @ y


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]
"""

LEAKS = """
torch.set_default_dtype(torch.float64)
torch.set_float32_matmul_precision("high")
_ballast = b"x" * (300 << 20)  # touched: 300 MB resident
del _ballast
"""


def test_no_global_state_passes_between_files(tmp_path: Path) -> None:
    src = tmp_path / "models"
    for folder, n, extra in (("a_leaky", 4, LEAKS), ("b_plain", 64, "")):
        (src / folder).mkdir(parents=True)
        (src / folder / "helpers.py").write_text(f"N = {n}\n")
        (src / folder / "model.py").write_text(MODEL.format(extra=textwrap.dedent(extra)))
    files = expand_sources(str(src))
    assert [f.relative_to(src).as_posix() for f in files] == [
        "a_leaky/helpers.py",
        "a_leaky/model.py",
        "b_plain/helpers.py",
        "b_plain/model.py",
    ]
    summary = run_batch(
        files, BatchOptions(validate="off", timeout_s=300), tmp_path / "out", workers=1
    )
    by_file = {Path(f.file).relative_to(src).as_posix(): f for f in summary.files}
    assert by_file["a_leaky/helpers.py"].status == "skipped"
    assert by_file["b_plain/helpers.py"].status == "skipped"
    assert summary.failed == 0, [f.rows[0].error for f in summary.files]
    leaky = by_file["a_leaky/model.py"].rows[0]
    plain = by_file["b_plain/model.py"].rows[0]
    # the leaky file sees its own settings ...
    assert (leaky.flops, leaky.compulsory_dram_bytes, leaky.precision) == (
        2 * 4**3,
        3 * 16 * 8,
        "tf32",
    )
    # ... and the next file none of them: its own helpers (N=64), float32, no TF32
    assert plain.flops == 2 * 64**3
    assert plain.compulsory_dram_bytes == 3 * 64 * 64 * 4
    assert plain.precision == "default"
    assert leaky.peak_rss_mib > 300
    assert plain.peak_rss_mib < leaky.peak_rss_mib - 200
