"""ops_moe.py (``_grouped_mm``) and the routing ops lowered from the real run's values
(driver.ORDER_OPS: topk, sort, argsort, histc, bincount...), against torch, with the
bounds' hand arithmetic."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from torch_check import check_program

import solar

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _offs(*ends: int) -> Any:
    return torch.tensor(ends, dtype=torch.int32)


GROUPED: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = {
    # name: (a shape (M, K), b shape (G, K, N), group ends)
    "even": ((8, 8), (2, 8, 4), (4, 8)),
    "empty_group": ((10, 8), (3, 8, 12), (3, 3, 10)),
    "one_group": ((6, 4), (1, 4, 4), (6,)),
}


@pytest.mark.parametrize("name", sorted(GROUPED))
def test_grouped_mm_matches_torch(name: str) -> None:
    a_shape, b_shape, ends = GROUPED[name]
    lowered = check_program(
        lambda a, b, o: torch._grouped_mm(a, b, o),
        torch.randn(*a_shape),
        torch.randn(*b_shape),
        _offs(*ends),
    )
    assert len(lowered.program.kernels) == 1


@pytest.mark.parametrize("name", sorted(GROUPED))
def test_grouped_mm_flops(name: str) -> None:
    """2 M K N multiply-adds, plus per row and group boundary one compare, one select and
    one add to find the row's group: M (G - 1) * 3."""
    a_shape, b_shape, ends = GROUPED[name]
    (m, k), (g, _, n) = a_shape, b_shape
    report = solar.analyze(
        lambda a, b, o: torch._grouped_mm(a, b, o),
        (torch.randn(*a_shape), torch.randn(*b_shape), _offs(*ends)),
    )
    assert report.flops == 2 * m * k * n + m * (g - 1) * 3
    assert report.validation.status == "passed"


def test_batched_grouped_mm() -> None:
    check_program(lambda a, b: torch._grouped_mm(a, b), torch.randn(2, 3, 8), torch.randn(2, 8, 4))


ORDER: dict[str, tuple[Callable[..., Any], float]] = {
    # name: (fn of a (4, 8) f32 input x, bytes the selection kernel moves)
    # topk: reads 128 B, writes values 4*2*4 + indices 4*2*8
    "topk": (lambda x: torch.topk(x, 2), 128 + 32 + 64),
    # sort: reads 128, writes values 128 + indices 256
    "sort": (lambda x: torch.sort(x, dim=-1, descending=True), 128 + 128 + 256),
    # argsort over dim 0: reads 128, writes 4*8 int64 indices
    "argsort": (lambda x: torch.argsort(x, dim=0), 128 + 256),
    # histc: reads 128, writes 5 f32 bins
    "histc": (lambda x: torch.histc(x, 5, -1.0, 1.0), 128 + 20),
}


@pytest.mark.parametrize("name", sorted(ORDER))
def test_routing_ops_validate_and_charge_reads_and_writes(name: str) -> None:
    fn, nbytes = ORDER[name]
    lowered = check_program(fn, torch.randn(4, 8))
    assert lowered.fully_covered
    report = solar.analyze(fn, (torch.randn(4, 8),))
    rows = report.archs[0].kernels
    assert [(k.flops, k.bytes) for k in rows] == [(0.0, float(nbytes))]


def test_bincount_and_moe_routing_chain() -> None:
    """Mixtral's dispatch: softmax -> topk -> sort of the expert ids -> histc counts."""

    def route(logits: Any) -> Any:
        w, ids = torch.topk(torch.softmax(logits, -1), 2)
        order = torch.sort(ids.flatten()).indices
        counts = torch.histc(ids.flatten().float(), 4, 0, 3)
        return w.flatten()[order], counts.cumsum(0), torch.bincount(ids.flatten(), minlength=4)

    lowered = check_program(route, torch.randn(6, 4))
    assert lowered.fully_covered
