"""Regressions found by the KernelBench-style robustness sweep (small sizes).

* Convolutions with padding: their guarded domains need deferred counts, and the lift's
  contraction table used a second counting context whose deferred-count names
  collided with the first, so a conv kernel was charged another count's value
  (10x the bytes of a padded 3x3 conv).
* ``cat``/``stack`` write their output in disjoint pieces: the union of the pieces
  was taken as the largest one (half the output bytes of a two-way ``cat``).
* A bool ``tril`` built in the forward (Mamba's segsum mask) stored the int literal
  ``0`` into a bool tensor.
"""

from __future__ import annotations

import numpy as np
import pytest
from torch_check import check_program

from solar.bounds import evaluate_costs
from solar.einsum import lift_to_einsum
from solar.frontends.pytorch import LoweredProgram
from solar.ir import parse_program

torch = pytest.importorskip("torch")
nn = torch.nn
pytestmark = pytest.mark.torch


def _size_bytes(lowered: LoweredProgram, name: str) -> int:
    decl = lowered.program.tensor(name)
    return int(np.prod([int(getattr(d, "value", d)) for d in decl.shape])) * (
        decl.dtype.itemsize_bytes
    )


def _kernel_bytes(lowered: LoweredProgram) -> dict[str, tuple[float, int]]:
    """Per kernel: (charged bytes, full size of every tensor it touches)."""
    graph = lift_to_einsum(lowered.program)
    costs = evaluate_costs(graph)
    out: dict[str, tuple[float, int]] = {}
    entry = 0
    for k in graph.kernels:
        charged, full = 0.0, 0
        for t in k.traffic:
            charged += costs.read_bytes[entry] + costs.written_bytes[entry]
            full += _size_bytes(lowered, t.tensor)
            entry += 1
        out[k.name] = (charged, full)
    return out


class _Convs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.same = nn.Conv2d(4, 8, 3, padding="same", bias=False)
        self.dil = nn.Conv2d(4, 8, 3, padding=2, dilation=2)
        self.grp = nn.Conv2d(4, 8, (3, 5), padding=(1, 2), groups=2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.same(x), self.dil(x), self.grp(x)


def test_padded_convolutions_charge_exactly_their_tensors() -> None:
    lowered = check_program(_Convs(), torch.randn(2, 4, 12, 10))
    per_kernel = _kernel_bytes(lowered)
    assert len(per_kernel) == 3
    for name, (charged, full) in per_kernel.items():
        assert charged == full, name


class _Inception(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.b1 = nn.Conv2d(4, 3, 1)
        self.b3 = nn.Conv2d(4, 5, 3, padding=1)
        self.pool = nn.MaxPool2d(3, stride=1, padding=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        cat = torch.cat([self.b1(x), self.b3(x), self.pool(x)], dim=1)
        return cat, torch.stack([x, x * 2.0], dim=0)


def test_cat_and_stack_outputs_are_written_in_full() -> None:
    lowered = check_program(_Inception(), torch.randn(2, 4, 6, 6))
    costs = evaluate_costs(lift_to_einsum(lowered.program))
    outputs = [t.name for t in lowered.program.tensors if t.role == "output"]
    assert float(costs.compulsory_written_bytes.sum()) == sum(
        _size_bytes(lowered, n) for n in outputs
    )
    for name, (charged, full) in _kernel_bytes(lowered).items():
        assert charged <= full, name
        if name.endswith(("cat", "stack")):
            assert charged == full, name


_SPLIT_WRITE = """solar-ir 1
program split_write
input X : f32[8]
temp T : f32[8]
output Y : f32[8]
kernel k {
  for i in 0 .. 4 { T[i] = X[i] }
  for j in 0 .. 4 { T[j + 4] = 0.0 }
  for m in 0 .. 8 { Y[m] = T[m] * 2.0 }
}
"""


def test_a_tensor_written_in_pieces_then_read_needs_no_read_traffic() -> None:
    graph = lift_to_einsum(parse_program(_SPLIT_WRITE))
    costs = evaluate_costs(graph)
    traffic = {t.tensor: k for k, t in enumerate(graph.kernels[0].traffic)}
    assert costs.read_bytes[traffic["T"]] == 0.0
    assert costs.written_bytes[traffic["T"]] == 32.0
    assert costs.read_bytes[traffic["X"]] == 16.0


def _segsum_mask(x: torch.Tensor, n: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    t = x.size(-1)
    c = torch.cumsum(x, dim=-1)
    seg = c[..., :, None] - c[..., None, :]
    mask = torch.tril(torch.ones(t, t, dtype=torch.bool), diagonal=0)
    return seg.masked_fill(~mask, -torch.inf), n.masked_fill(n > 3, 2.0)


def test_bool_tril_and_int_fill_built_in_the_forward() -> None:
    check_program(_segsum_mask, torch.randn(2, 3, 5), torch.randint(0, 6, (4, 5)))
