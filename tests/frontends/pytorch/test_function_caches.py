"""Note [Function caches] (solar/frontends/pytorch/caches.py): a model that keeps tensors
in a process-wide ``functools.lru_cache`` (transformers' BEiT: its relative-position
index per window size) is captured over fake tensors and then run for real; the cache
must not hand the capture's fake tensors to the real run, nor the real run's tensors to
a re-capture at other sizes."""

from __future__ import annotations

import functools

import pytest

import solar
from solar.frontends.pytorch.caches import caches_filled_here_cleared

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


@functools.lru_cache(maxsize=8)
def _relative_index(n: int) -> torch.Tensor:
    coords = torch.arange(n)
    return (coords[:, None] - coords[None, :]) + (n - 1)


@functools.cache
def _ramp(n: int) -> tuple[torch.Tensor, ...]:
    return (torch.linspace(0.0, 1.0, n),)


@functools.cache
def _plain(n: int) -> int:
    return n * 2


class RelativeBias(torch.nn.Module):  # type: ignore[misc]
    """Attention scores plus a bias gathered through a cached relative-position index."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(2 * n - 1))

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        n = q.shape[-2]
        bias = self.table[_relative_index(n)] * _ramp(n)[0]
        return (q @ k.transpose(-1, -2) + bias).softmax(-1)


def test_a_cached_tensor_does_not_leak_from_the_capture() -> None:
    _relative_index.cache_clear()
    torch.manual_seed(0)
    q, k = torch.randn(2, 6, 8), torch.randn(2, 6, 8)
    report = solar.analyze(RelativeBias(6), (q, k))
    assert report.coverage.complete
    assert report.validation.status == "passed", report.validation
    # formulas symbolic in the sequence: the re-captures at other sizes ran too
    assert report.training is None and report.flops > 0


def test_only_caches_of_tensors_filled_inside_are_cleared() -> None:
    for f in (_relative_index, _ramp, _plain):
        f.cache_clear()
    _relative_index(3)  # filled before: kept
    with caches_filled_here_cleared():
        _relative_index(4)
        _ramp(5)
        _plain(7)
    assert _relative_index.cache_info().currsize == 0  # its misses grew inside
    assert _ramp.cache_info().currsize == 0
    assert _plain.cache_info().currsize == 1  # no tensor: left alone
    _relative_index(3)
    with caches_filled_here_cleared():
        _relative_index(3)  # a hit: nothing added
    assert _relative_index.cache_info().currsize == 1
