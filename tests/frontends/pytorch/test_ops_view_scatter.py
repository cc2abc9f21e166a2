"""ops_view_scatter.py against torch: slice_scatter, select_scatter, diagonal_scatter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from torch_check import check_program

from solar.bounds import evaluate_costs
from solar.einsum import lift_to_einsum

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

X = (4, 5, 6)

CASES: dict[str, tuple[Callable[..., Any], tuple[int, ...]]] = {
    "slice_dim0": (lambda x, s: torch.slice_scatter(x, s, 0, 1, 3), (2, 5, 6)),
    "slice_default": (lambda x, s: torch.slice_scatter(x, s), X),
    "slice_step2": (lambda x, s: torch.slice_scatter(x, s, 1, 0, 5, 2), (4, 3, 6)),
    "slice_step3_offset": (lambda x, s: torch.slice_scatter(x, s, 2, 1, None, 3), (4, 5, 2)),
    "slice_step4_one": (lambda x, s: torch.slice_scatter(x, s, 2, 2, 5, 4), (4, 5, 1)),
    "slice_negative": (lambda x, s: torch.slice_scatter(x, s, -1, -4, -1), (4, 5, 3)),
    "slice_end_past": (lambda x, s: torch.slice_scatter(x, s, 1, 3, 100), (4, 2, 6)),
    "slice_empty": (lambda x, s: torch.slice_scatter(x, s, 1, 3, 3), (4, 0, 6)),
    "select_first": (lambda x, s: torch.select_scatter(x, s, 0, 0), (5, 6)),
    "select_mid": (lambda x, s: torch.select_scatter(x, s, 1, 2), (4, 6)),
    "select_last_negative": (lambda x, s: torch.select_scatter(x, s, -1, -1), (4, 5)),
    "diag_main": (lambda x, s: torch.diagonal_scatter(x, s), (6, 4)),
    "diag_offset": (lambda x, s: torch.diagonal_scatter(x, s, 2, 1, 2), (4, 4)),
    "diag_negative_offset": (lambda x, s: torch.diagonal_scatter(x, s, -1, 0, 2), (5, 3)),
    "diag_swapped_dims": (lambda x, s: torch.diagonal_scatter(x, s, 1, 2, 0), (5, 3)),
    "diag_past_edge": (lambda x, s: torch.diagonal_scatter(x, s, 6, 1, 2), (4, 0)),
}


def _elements(count: Any, key: str) -> int:
    """Elements of an access image (a strided access is charged whole sectors, Note
    [Sectors] in solar/einsum/image.py: its count is scaled by the factor in its key)."""
    factor = int(key.rsplit("|sectors", 1)[1]) if "|sectors" in key else 1
    return int(count.expr) // factor


@pytest.mark.parametrize("name", sorted(CASES))
def test_lowering_matches_torch(name: str) -> None:
    """Each output element is written once: from ``src`` on the view, from ``self``
    elsewhere; no FLOPs, and exactly the surviving part of ``self`` is read. The kernel's
    charged bytes stay within the tensors (the pieces' union is not over-counted)."""
    fn, src_shape = CASES[name]
    x, src = torch.randn(*X), torch.randn(*src_shape)
    lowered = check_program(fn, x, src)
    graph = lift_to_einsum(lowered.program)
    assert sum(node.flops.evaluate({}) for node in graph.nodes) == 0
    written = sum(_elements(c, key) for node in graph.nodes for _, c, key in node.writes)
    read = {
        t: sum(
            _elements(c, key) for node in graph.nodes for name, c, key in node.reads if name == t
        )
        for t in ("x0", "x1")
    }
    assert written == x.numel()
    assert read == {"x0": x.numel() - src.numel(), "x1": src.numel()}
    costs = evaluate_costs(graph)
    assert float(np.sum(costs.written_bytes)) <= x.nbytes
    assert float(np.sum(costs.read_bytes)) <= x.nbytes
