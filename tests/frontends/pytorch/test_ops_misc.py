"""ops_misc.py against torch: im2col (F.unfold), col2im (F.fold), trace, cdist (and its
_euclidean_dist form), pdist, cross."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from torch_check import check_program

torch = pytest.importorskip("torch")
F = torch.nn.functional
pytestmark = pytest.mark.torch

CASES: dict[str, tuple[Callable[..., Any], tuple[tuple[int, ...], ...]]] = {
    "unfold": (lambda m: F.unfold(m, 2), ((2, 3, 5, 6),)),
    "unfold_padded_strided_dilated": (
        lambda m: F.unfold(m, (3, 2), dilation=(1, 2), padding=1, stride=(2, 1)),
        ((2, 3, 5, 6),),
    ),
    "unfold_unbatched": (lambda m: F.unfold(m, 2, padding=1), ((3, 4, 4),)),
    "fold": (lambda m: F.fold(m, (4, 5), 2), ((2, 12, 12),)),
    "fold_padded_strided_dilated": (
        lambda m: F.fold(m, (5, 6), (3, 2), dilation=(1, 2), padding=1, stride=(2, 1)),
        ((2, 18, 18),),
    ),
    "fold_overlapping_unbatched": (lambda m: F.fold(m, 4, 3, padding=1), ((18, 16),)),
    "fold_of_unfold": (
        lambda m: F.fold(F.unfold(m, 3, stride=2), (7, 7), 3, stride=2),
        ((1, 2, 7, 7),),
    ),
    "trace_wide": (lambda x: torch.trace(x), ((4, 6),)),
    "trace_tall": (lambda x: torch.trace(x), ((6, 4),)),
    "cdist_p2": (lambda x, y: torch.cdist(x, y), ((4, 6), (5, 6))),
    "cdist_p1": (lambda x, y: torch.cdist(x, y, p=1.0), ((4, 6), (5, 6))),
    "cdist_p3": (lambda x, y: torch.cdist(x, y, p=3.0), ((4, 6), (5, 6))),
    "cdist_pinf": (lambda x, y: torch.cdist(x, y, p=float("inf")), ((4, 6), (5, 6))),
    "cdist_batched": (lambda x, y: torch.cdist(x, y), ((2, 3, 4), (2, 5, 4))),
    # over 25 rows p = 2 runs as _euclidean_dist (a VQ codebook lookup: diffusers' VQModel)
    "cdist_euclidean_many_rows": (lambda x, y: torch.cdist(x, y), ((2, 30, 4), (2, 32, 4))),
    "euclidean_dist": (lambda x, y: torch.ops.aten._euclidean_dist(x, y), ((3, 5), (4, 5))),
    "pdist_p2": (lambda x: torch.pdist(x), ((5, 3),)),
    "pdist_p1": (lambda x: torch.pdist(x, p=1.0), ((4, 6),)),
    "pdist_pinf": (lambda x: torch.pdist(x, p=float("inf")), ((6, 2),)),
    "pdist_p3": (lambda x: torch.pdist(x, p=3.0), ((3, 4),)),
    "pdist_half": (lambda x: torch.pdist(x, p=0.5), ((4, 3),)),
    "pdist_p0": (lambda x: torch.pdist(x.round(), p=0.0), ((5, 4),)),
    "pdist_two_rows": (lambda x: torch.pdist(x), ((2, 7),)),
    "pdist_one_feature": (lambda x: torch.pdist(x), ((5, 1),)),
    "cross_last": (lambda x, y: torch.linalg.cross(x, y), ((4, 3), (4, 3))),
    "cross_vector": (lambda x, y: torch.linalg.cross(x, y), ((3,), (3,))),
    "cross_dim0": (lambda x, y: torch.linalg.cross(x, y, dim=0), ((3, 4, 2), (3, 4, 2))),
    "cross_middle_negative": (
        lambda x, y: torch.linalg.cross(x, y, dim=-2),
        ((2, 3, 5), (2, 3, 5)),
    ),
    "cross_broadcast": (lambda x, y: torch.linalg.cross(x, y), ((2, 1, 3), (1, 4, 3))),
    "cross_broadcast_both": (lambda x, y: torch.linalg.cross(x, y, dim=1), ((1, 3, 5), (2, 3, 1))),
    "cross_legacy": (lambda x, y: torch.cross(x, y, dim=1), ((2, 3), (2, 3))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_lowering_matches_torch(name: str) -> None:
    fn, shapes = CASES[name]
    lowered = check_program(fn, *(torch.randn(*s) for s in shapes))
    assert lowered.coverage == ()


def test_fold_adds_only_in_bounds_taps() -> None:
    """Taps on the padding are neither read nor added: the reductions run once per
    in-bounds tap (folding ones counts them)."""
    from nn_opcheck import reduce_points

    cols = torch.ones(1, 2 * 3 * 3, 9)
    lowered = check_program(lambda m: F.fold(m, (5, 5), 3, padding=1, stride=2), cols)
    taps = int(F.fold(cols, (5, 5), 3, padding=1, stride=2).sum())
    assert reduce_points(lowered.program) == taps < cols.numel()


@pytest.mark.parametrize(
    ("a", "b", "dim"),
    [((4, 3), (4, 3), -1), ((2, 1, 3), (1, 4, 3), -1), ((3, 5), (3, 1), 0), ((3,), (3,), 0)],
)
def test_cross_flops_are_six_products_three_differences(
    a: tuple[int, ...], b: tuple[int, ...], dim: int
) -> None:
    from solar.einsum import lift_to_einsum

    x, y = torch.randn(*a), torch.randn(*b)
    out = torch.linalg.cross(x, y, dim=dim)
    lowered = check_program(lambda p, q: torch.linalg.cross(p, q, dim=dim), x, y)
    graph = lift_to_einsum(lowered.program)
    assert sum(node.flops.evaluate({}) for node in graph.nodes) == 9 * (out.numel() // 3)


@pytest.mark.parametrize(("n", "m", "p"), [(5, 3, 2.0), (4, 6, 1.0), (6, 2, float("inf"))])
def test_pdist_flops_and_bytes_per_pair(n: int, m: int, p: float) -> None:
    """Note [pdist rows]: each pair ``i < j`` costs a difference, a term and an
    accumulation per feature (plus ``sqrt`` for p = 2; the difference counted once, not
    twice as ``d * d`` would); the output is written once."""
    from solar.bounds import evaluate_costs
    from solar.einsum import lift_to_einsum

    x = torch.randn(n, m)
    lowered = check_program(lambda t: torch.pdist(t, p=p), x)
    graph = lift_to_einsum(lowered.program)
    pairs = n * (n - 1) // 2
    per_feature = 3  # difference, square or abs, accumulate (the difference once)
    assert sum(node.flops.evaluate({}) for node in graph.nodes) == pairs * (
        per_feature * m + (1 if p == 2.0 else 0)
    )
    costs = evaluate_costs(graph)
    assert float(costs.written_bytes.sum()) == pairs * 4
    assert float(costs.read_bytes.sum()) <= x.nbytes


def test_cdist_p2_counts_each_difference_once() -> None:
    from solar.einsum import lift_to_einsum

    lowered = check_program(lambda x, y: torch.cdist(x, y), torch.randn(4, 6), torch.randn(5, 6))
    flops = sum(node.flops.evaluate({}) for node in lift_to_einsum(lowered.program).nodes)
    assert flops == 4 * 5 * (3 * 6 + 1)


def test_pdist_of_many_rows_stays_uncovered() -> None:
    """Note [pdist rows]: one nest per row, so very many rows are reported uncovered."""
    from solar.frontends.pytorch import lower_capture, trace_module

    lowered = lower_capture(trace_module(torch.pdist, (torch.randn(300, 2),)))
    assert [u.target for u in lowered.coverage] == ["aten._pdist_forward.default"]
