"""ops_trilinear.py against torch: ``_trilinear`` (``F.bilinear`` / ``nn.Bilinear``)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from torch_check import check_program

from solar.einsum import lift_to_einsum

torch = pytest.importorskip("torch")
F = torch.nn.functional
pytestmark = pytest.mark.torch

TRILINEAR = torch.ops.aten._trilinear.default

# (shapes of i1, i2, i3; expand1, expand2, expand3; sumdim)
RAW: dict[str, tuple[tuple[tuple[int, ...], ...], tuple[list[int], ...], list[int]]] = {
    "bilinear": (((4, 3), (6, 3, 5), (4, 5)), ([1, 3], [0], [1, 2]), [2, 3]),
    "bilinear_wide_i": (((4, 7), (6, 7, 2), (4, 2)), ([1, 3], [0], [1, 2]), [2, 3]),
    "chain": (((2, 3), (3, 4), (2, 4)), ([2], [0], [1]), [1]),
    "no_sum": (((2, 3), (3, 4), (2, 4)), ([2], [0], [1]), []),
    "sum_all": (((2, 3), (3, 4), (2, 4)), ([2], [0], [1]), [0, 1, 2]),
    "sum_keeping_middle": (((2, 3), (3, 4), (2, 4)), ([2], [0], [1]), [0, 2]),
    "own_summed_dim": (((2, 3, 5), (3, 4), (2, 4)), ([3], [0, 2], [1, 2]), [1, 2]),
    "broadcast_one": (((1, 3), (3, 4), (2, 4)), ([2], [0], [1]), [1]),
    "negative_dims": (((4, 3), (6, 3, 5), (4, 5)), ([-3, -1], [-4], [-3, -2]), [-2, -1]),
}


@pytest.mark.parametrize("name", sorted(RAW))
def test_raw_trilinear_matches_torch(name: str) -> None:
    shapes, expand, sumdim = RAW[name]
    check_program(
        lambda a, b, c: TRILINEAR(a, b, c, *expand, sumdim), *(torch.randn(*s) for s in shapes)
    )


@pytest.mark.parametrize(
    ("x1", "x2", "out", "bias"),
    [((4, 3), (4, 5), 6, True), ((2, 3, 4), (2, 3, 2), 5, False), ((3,), (2,), 4, True)],
)
def test_bilinear_layers(x1: Sequence[int], x2: Sequence[int], out: int, bias: bool) -> None:
    layer = torch.nn.Bilinear(x1[-1], x2[-1], out, bias=bias)
    check_program(layer, torch.randn(*x1), torch.randn(*x2))


@pytest.mark.parametrize(("n", "o", "i", "j"), [(4, 6, 3, 5), (4, 6, 7, 2), (1, 3, 4, 4)])
def test_bilinear_flops_are_two_pairwise_contractions(n: int, o: int, i: int, j: int) -> None:
    """Note [Trilinear contraction order]: ``2 N O I J`` plus the cheaper of the outer
    product ``x1 x2`` first (``N I J``) or one operand contracted with ``W`` first
    (``2 N O min(I, J)``), not ``3 N O I J`` for one three-operand product."""
    x1, w, x2 = torch.randn(n, i), torch.randn(o, i, j), torch.randn(n, j)
    lowered = check_program(lambda a, b, c: F.bilinear(a, c, b), x1, w, x2)
    graph = lift_to_einsum(lowered.program)
    flops = sum(node.flops.evaluate({}) for node in graph.nodes)
    assert flops == 2 * n * o * i * j + min(n * i * j, 2 * n * o * min(i, j))


def test_own_summed_dim_is_summed_first() -> None:
    """A summed dim only one operand carries is summed on its own (one add per element)
    before the products: ``a[p, q, r]`` summed over ``r`` costs ``P Q R`` adds; then
    ``t[p, s] = sum_q a'[p, q] b[q, s]`` and ``t * c`` (the cheapest order)."""
    a, b, c = torch.randn(2, 3, 5), torch.randn(3, 4), torch.randn(2, 4)
    lowered = check_program(
        lambda x, y, z: TRILINEAR(x, y, z, [3], [0, 2], [1, 2], [1, 2]), a, b, c
    )
    flops = sum(node.flops.evaluate({}) for node in lift_to_einsum(lowered.program).nodes)
    assert flops == 2 * 3 * 5 + 2 * 2 * 3 * 4 + 2 * 4
