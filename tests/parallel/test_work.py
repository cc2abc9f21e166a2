"""Per-rank compute (solar/distributed/work.py): pipes on one unit add, as on one device."""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.bounds import compile_costs, compute_bounds
from solar.distributed import DistributedRequest, bound_prepared, parse_parallel
from solar.hw import load_hardware_spec
from solar.pipeline import AnalyzeOptions, lift_source

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

# an fp32 Linear (tensor:3xtf32 on H100 under `default`) and a bf16 matmul (tensor:bf16):
# two pipes of the one set of tensor cores
MIXED = '''
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(256, 256)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x).to(torch.bfloat16)
        return (y @ y.t()).float()


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(64, 256)]
'''


def test_tensor_pipes_at_two_precisions_add(tmp_path: Path) -> None:
    src = tmp_path / "mixed.py"
    src.write_text(MIXED)
    p = lift_source(src, AnalyzeOptions(validate="off"))
    req = DistributedRequest("DGX_H100", parse_parallel("tp=1,dp=1"), 64, 64, phase="prefill")
    info = bound_prepared(p.program, p.graph, p.sizes, req, phase_of=None,
                          precision=p.precision)
    fused = compute_bounds(compile_costs(p.graph), load_hardware_spec("H100_SXM"),
                           model="fused", precision_policy=p.precision, sizes=p.sizes)
    by_pipe = {pipe.label: t for pipe, t in fused.compute_time_s_by_pipe.items()}
    assert set(by_pipe) == {"tensor:3xtf32", "tensor:bf16"}
    # one rank, one micro-batch: the single-device rule, the sum of the two (before: the max)
    assert info.ranks[0].compute_s == pytest.approx(sum(by_pipe.values()), rel=1e-12)
    assert info.ranks[0].compute_s == pytest.approx(fused.compute_time_s, rel=1e-12)
    assert info.ranks[0].compute_s > max(by_pipe.values())
