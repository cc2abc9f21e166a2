"""Twins: a PyTorch program and its JAX twin lower to the same IR work, one row per family.

Each row of `TWINS` is one op family's most general shape, written once in PyTorch and
once in JAX over the same input arrays (weights are inputs too, in each framework's
layout). Both frontends lower it through the same kit emitter, so the programs must
cost the same: identical FLOPs and compulsory (fused) bytes.
A family that gains an emitter adds its row here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from solar.bounds import evaluate_costs
from solar.einsum import lift_to_einsum
from solar.ir import Program, verify_program

jax = pytest.importorskip("jax")
torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.jax, pytest.mark.torch]

import jax.numpy as jnp  # noqa: E402
import torch.nn.functional as F  # noqa: E402, N812
from jax import lax  # noqa: E402


@dataclass(frozen=True)
class Twin:
    """One family: the PyTorch and JAX programs over inputs of ``shapes``; ``jax_inputs``
    rearranges the arrays for JAX (another weight layout, same bytes)."""

    family: str
    torch_fn: Callable[..., Any]
    jax_fn: Callable[..., Any]
    shapes: tuple[tuple[int, ...], ...]
    jax_inputs: Callable[..., tuple[np.ndarray, ...]] = lambda *a: a
    ints: tuple[tuple[tuple[int, ...], int], ...] = ()
    """Extra int32 index arrays after the float ones: ``(shape, high)`` each."""
    same_bytes: bool = True
    """False where the frameworks' output dtypes differ (torch's int64 indices vs JAX's
    int32): the FLOPs must still agree."""


def _flip_transpose(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, ...]:
    """A transposed conv's weight ``[C, K, R, S]`` as the reversed ``[K, C, R, S]`` kernel."""
    return x, np.ascontiguousarray(w.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1])


TWINS = [
    Twin(
        "contraction",
        lambda a, b: torch.bmm(a, b),
        lambda a, b: jnp.einsum("bik,bkj->bij", a, b),
        ((3, 8, 16), (3, 16, 12)),
    ),
    Twin(
        "conv",
        lambda x, w: F.conv2d(x, w, stride=2, padding=1, groups=2),
        lambda x, w: lax.conv_general_dilated(
            x, w, (2, 2), ((1, 1), (1, 1)), feature_group_count=2
        ),
        ((2, 4, 9, 8), (6, 2, 3, 3)),
    ),
    Twin(
        "conv_transpose",
        lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1),
        lambda x, w: lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)), lhs_dilation=(2, 2)),
        ((2, 3, 5, 5), (3, 4, 3, 3)),
        _flip_transpose,
    ),
    Twin(  # eager's max pooling also computes indices, so the windowed sum is the twin
        "pool",
        lambda x: F.avg_pool2d(x, 3, stride=2),
        lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 1, 3, 3), (1, 1, 2, 2), "VALID") / 9.0,
        ((2, 3, 9, 8),),
    ),
]


_GATHER_ROWS = lax.GatherDimensionNumbers(
    offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)
)
_SCATTER_ROWS = lax.ScatterDimensionNumbers(
    update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)
_IN_BOUNDS = lax.GatherScatterMode.PROMISE_IN_BOUNDS

TWINS += [
    Twin("reduce_sum", lambda x: x.sum(1), lambda x: jnp.sum(x, 1), ((4, 6, 5),)),
    Twin("reduce_max_leading", lambda x: x.amax(0), lambda x: jnp.max(x, 0), ((4, 6, 5),)),
    Twin(
        "reduce_bool",
        lambda x: (x > 0).all(1),
        lambda x: jnp.all(x > 0, 1),
        ((4, 6),),
    ),
    Twin(  # torch's indices are int64, JAX's int32
        "arg_reduce",
        lambda x: x.argmax(1),
        lambda x: jnp.argmax(x, 1),
        ((4, 6, 5),),
        same_bytes=False,
    ),
    Twin("scan_sum", lambda x: torch.cumsum(x, 1), lambda x: lax.cumsum(x, 1), ((3, 7, 2),)),
    Twin(
        "scan_logsumexp",
        lambda x: torch.logcumsumexp(x, 0),
        lambda x: lax.cumlogsumexp(x, 0),
        ((5, 3),),
    ),
    Twin(
        "pad_constant",
        lambda x: F.pad(x, (1, 2, -1, 1), value=0.5),
        lambda x: lax.pad(x, 0.5, ((0, 0, 0), (-1, 1, 0), (1, 2, 0))),
        ((2, 5, 4),),
    ),
    Twin(
        "gather",
        lambda x, i: torch.index_select(x, 0, i),
        lambda x, i: lax.gather(x, i[:, None], _GATHER_ROWS, (1, 4), mode=_IN_BOUNDS),
        ((5, 4),),
        ints=(((3,), 5),),
    ),
    Twin(
        "embedding",
        lambda w, i: F.embedding(i, w),
        lambda w, i: lax.gather(w, i[..., None], _GATHER_ROWS, (1, 4), mode=_IN_BOUNDS),
        ((5, 4),),
        ints=(((6,), 5),),
    ),
    Twin(
        "scatter",
        lambda x, s, i: x.index_add(0, i, s),
        lambda x, s, i: lax.scatter_add(x, i[:, None], s, _SCATTER_ROWS, mode=_IN_BOUNDS),
        ((5, 4), (3, 4)),
        ints=(((3,), 5),),
    ),
]

_MOVES = {"pad_constant", "gather", "embedding"}
"""Families that only move data: their twins agree on bytes, at 0 FLOPs."""


def _work(program: Program) -> tuple[float, float]:
    """``(FLOPs, fused bytes)``: the work a bound charges, whatever the kernel split."""
    verify_program(program)
    c = evaluate_costs(lift_to_einsum(program))
    fused = c.compulsory_read_bytes.sum() + c.compulsory_written_bytes.sum()
    return float(c.group_flops.sum()), float(fused)


@pytest.mark.parametrize("twin", TWINS, ids=[t.family for t in TWINS])
def test_twins_lower_to_the_same_work(twin: Twin) -> None:
    from solar.frontends.jaxfe import lower_jaxpr, trace_function
    from solar.frontends.pytorch import lower_capture, trace_module

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in twin.shapes]
    arrays += [rng.integers(0, high, shape).astype(np.int32) for shape, high in twin.ints]
    torch_low = lower_capture(trace_module(twin.torch_fn, [torch.from_numpy(a) for a in arrays]))
    jax_low = lower_jaxpr(trace_function(twin.jax_fn, list(twin.jax_inputs(*arrays))))
    assert torch_low.fully_covered and jax_low.fully_covered
    torch_work, jax_work = _work(torch_low.program), _work(jax_low.program)
    assert torch_work == jax_work if twin.same_bytes else torch_work[0] == jax_work[0]
    assert torch_work[0] > 0 or twin.family in _MOVES

