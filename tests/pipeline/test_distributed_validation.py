"""`solar analyze` on a distributed file validates it against a real run (Note
[Distributed validation] in solar/pipeline/validation.py): a PyTorch file on WORLD_SIZE
gloo CPU processes, a JAX file on WORLD_SIZE host devices, recorded in the report."""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import CliResult, run_cli

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
BUDGET = ("--time-budget", "300")  # a loaded 2-core machine starts four processes slowly

_TORCH = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
_JAX = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax")

WRONG_OP = """
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

WORLD_SIZE = 2
B, D = 4, 8


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # captured under the fake group as a max, run under gloo as a sum: the IR the
        # analysis bounds is not what the real run computes
        op = "max" if dist.get_backend() == "fake" else "sum"
        return funcol.all_reduce(x * (dist.get_rank() + 1), op, dist.group.WORLD)


def get_inputs() -> list[torch.Tensor]:
    return [torch.ones(B, D)]
"""

CRASHES = """
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

WORLD_SIZE = 2


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if dist.get_backend() == "gloo" and dist.get_rank() == 1:
            raise RuntimeError("rank 1 fails in the real run")
        return funcol.all_reduce(x, "sum", dist.group.WORLD)


def get_inputs() -> list[torch.Tensor]:
    return [torch.ones(4, 8)]
"""


def _analyze(capsys: pytest.CaptureFixture[str], tmp_path: Path, source: Path,
             *args: str) -> tuple[CliResult, dict[str, Any] | None]:
    out = tmp_path / "report.json"
    r = run_cli(capsys, "analyze", str(source), "-q", "-o", str(out), *args)
    return r, json.loads(out.read_text()) if out.exists() else None


def _validation(capsys: pytest.CaptureFixture[str], tmp_path: Path, source: Path,
                *args: str) -> dict[str, Any]:
    """The report's ``validation`` of an analysis that succeeds."""
    r, report = _analyze(capsys, tmp_path, source, *args)
    assert r.code == 0, r.err
    assert report is not None
    return dict(report["validation"])


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(text))
    return path


def _assert_diagnostic(r: CliResult, code: str, exit_code: int) -> None:
    assert r.code == exit_code, (r.out, r.err)
    assert f"error[{code}]" in r.err, r.err
    assert "Traceback" not in r.err, r.err


REAL_RUNS = [
    pytest.param("torch/dist_tp_mlp.py", "2 gloo CPU processes", 2, None,
                 {"WORLD_SIZE": 2, "B": 8, "D": 32, "F": 64, "W": 2},
                 marks=[pytest.mark.torch, _TORCH], id="torch-gloo"),
    pytest.param("jax/dist_shard_map_mlp.py", "4 host devices (shard_map)", 4,
                 {"dp": 2, "tp": 2}, {"WORLD_SIZE": 4, "B": 8, "D": 16, "F": 32},
                 marks=[pytest.mark.jax, _JAX], id="jax-host-devices"),
]


@pytest.mark.parametrize(("sample", "real_run", "world", "mesh", "sizes"), REAL_RUNS)
def test_a_distributed_file_is_validated_against_its_real_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, sample: str, real_run: str,
    world: int, mesh: dict[str, int] | None, sizes: dict[str, int],
) -> None:
    v = _validation(capsys, tmp_path, SAMPLES / sample, *BUDGET)
    assert (v["status"], v["strategy"], v["fraction_checked"]) == ("passed", "full", 1.0)
    assert (v["real_run"], v["world_size"], v["mesh"], v["sizes"]) == (real_run, world, mesh,
                                                                     sizes)
    (out,) = v["outputs"]  # each sample has one output, compared on every rank
    assert out["name"] == "y0" and out["passed"]
    # gloo: rtol 1e-4, atol 1e-5; JAX: those or the policy's for its reductions, if larger
    assert out["rtol"] == 1e-4 and 1e-5 <= out["atol"] < 1e-3
    assert out["max_abs_error"] < out["atol"]


@pytest.mark.torch
@_TORCH
def test_an_ir_that_differs_from_the_real_run_is_e0556(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    r, _ = _analyze(capsys, tmp_path, _write(tmp_path, WRONG_OP), *BUDGET)
    _assert_diagnostic(r, "E0556", 1)
    assert "differs from the real gloo run" in r.err


@pytest.mark.torch
@_TORCH
@pytest.mark.parametrize(("mode", "code"), [("auto", 0), ("full", 1)])
def test_a_real_run_that_fails_skips_under_auto_and_is_e0555_under_full(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, mode: str, code: int
) -> None:
    path = _write(tmp_path, CRASHES)
    if mode == "full":
        r, _ = _analyze(capsys, tmp_path, path, "--validate", mode, *BUDGET)
        _assert_diagnostic(r, "E0555", code)
        return
    v = _validation(capsys, tmp_path, path, "--validate", mode, *BUDGET)
    assert v["status"] == "skipped" and v["real_run"] is None
    assert v["reason"].startswith("no real run: error[E0555]")


@pytest.mark.torch
@_TORCH
def test_validate_off_skips_the_real_run_and_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    v = _validation(capsys, tmp_path, SAMPLES / "torch" / "dist_tp_mlp.py", "--validate", "off")
    assert (v["status"], v["reason"]) == ("skipped", "validation disabled (--validate off)")
    assert (v["real_run"], v["world_size"], v["outputs"]) == (None, None, [])
