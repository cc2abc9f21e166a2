"""Boolean-mask indexing (``x[:, mask]``, ``x[mask] = v``): lowered by compaction
(Note [Mask compaction] in ops_mask_index.py), executed and compared with torch, on
masks with none, some and all elements set."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from torch_check import check_program

from solar.einsum import lift_to_einsum
from solar.ir import DType

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _put(x: Any, m: Any, v: Any) -> Any:
    y = x.clone()
    y[:, m] = v
    return y


def _put_scalar(x: Any, m: Any, v: Any) -> Any:
    y = x.clone()
    y[m] = 0.5
    return y * 2


def _accumulate(x: Any, m: Any, v: Any) -> Any:
    return x.index_put((m,), 3 * v[: int(m.sum())], accumulate=True)


CASES: dict[str, tuple[Callable[..., Any], tuple[int, ...], tuple[int, ...]]] = {
    # name: (fn(x, mask, v), x shape, mask shape); v has x's shape
    "rows": (lambda x, m, v: x[m] * 2, (12, 3), (12,)),
    "columns": (lambda x, m, v: x[:, m] + 1, (3, 12), (12,)),
    "middle dim": (lambda x, m, v: x[:, m, :] * 3, (2, 12, 4), (12,)),
    "2-d mask": (lambda x, m, v: x[m.reshape(3, 4)] - 1, (3, 4, 5), (12,)),
    "put slices": (lambda x, m, v: _put(x, m, v[:, : int(m.sum())]), (3, 12), (12,)),
    "put scalar": (_put_scalar, (12, 3), (12,)),
    "accumulate": (_accumulate, (12,), (12,)),
}


@pytest.mark.parametrize("density", [0.0, 0.4, 1.0])
@pytest.mark.parametrize("name", list(CASES))
def test_mask_indexing_matches_torch(name: str, density: float) -> None:
    fn, shape, mshape = CASES[name]
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(*shape, generator=gen)
    mask = torch.rand(*mshape, generator=gen) < density
    check_program(lambda x, m: fn(x, m, x), x, mask)


def test_the_selection_reads_the_whole_mask_and_charges_no_guarded_flop() -> None:
    x, mask = torch.randn(3, 40), torch.arange(40) % 3 == 0
    lowered = check_program(lambda x, m: x[:, m], x, mask)
    graph = lift_to_einsum(lowered.program)
    assert sum(node.flops.evaluate({}) for node in graph.nodes) == 0
    guards = [n for n in graph.nodes if n.kind == "guard"]
    assert len(guards) == 1
    (mask_name,) = [t.name for t in lowered.program.tensors
                    if t.role == "input" and t.dtype == DType.BOOL]
    (count,) = [c for name, c, _ in guards[0].reads if name == mask_name]
    assert count.evaluate({}) == 40
