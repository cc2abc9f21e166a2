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
    torch_int64: bool = False
    """Give PyTorch the index arrays as int64 (its default; JAX without x64 keeps int32)."""
    byte_gap: int = 0
    """PyTorch's fused bytes minus JAX's, where the frameworks' dtypes differ (int64
    indices or results vs int32): 4 bytes per such element. The FLOPs must agree."""


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
    Twin(  # torch's indices are int64, JAX's int32: 4 bytes more per result
        "arg_reduce",
        lambda x: x.argmax(1),
        lambda x: jnp.argmax(x, 1),
        ((4, 6, 5),),
        byte_gap=4 * 4 * 5,
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


def _max_pool_grad_torch(x: Any, g: Any) -> tuple[Any, Any]:
    """Eager's max pooling keeps its indices for the backward."""
    a = torch.ops.aten
    y, i = a.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1])
    return y, a.max_pool2d_with_indices_backward(g, x, [3, 3], [2, 2], [1, 1], [1, 1], False, i)


def _max_pool_grad_jax(x: Any, g: Any) -> tuple[Any, Any]:
    """``reduce_window`` max and its VJP, ``select_and_scatter_add``."""
    pads = ((0, 0), (0, 0), (1, 1), (1, 1))
    y, vjp = jax.vjp(
        lambda v: lax.reduce_window(v, -jnp.inf, lax.max, (1, 1, 3, 3), (1, 1, 2, 2), pads), x
    )
    return y, vjp(g)[0]


def _conv_weight_grad_torch(x: Any, w: Any, g: Any) -> Any:
    return torch.ops.aten.convolution_backward(
        g, x, w, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 2, [False, True, False]
    )[1]


def _conv_weight_grad_jax(x: Any, w: Any, g: Any) -> Any:
    def conv(v: Any) -> Any:
        return lax.conv_general_dilated(x, v, (2, 2), ((1, 1), (1, 1)), feature_group_count=2)

    return jax.vjp(conv, w)[1](g)[0]


_SCATTER_ALONG_0 = lax.ScatterDimensionNumbers(
    update_window_dims=(),
    inserted_window_dims=(0,),
    scatter_dims_to_operand_dims=(0,),
    operand_batching_dims=(1,),
    scatter_indices_batching_dims=(1,),
)

TWINS += [
    Twin(  # 3 int64 indices against 3 int32 ones
        "gather_int64",
        lambda x, i: torch.index_select(x, 0, i),
        lambda x, i: lax.gather(x, i[:, None], _GATHER_ROWS, (1, 4), mode=_IN_BOUNDS),
        ((5, 4),),
        ints=(((3,), 5),),
        torch_int64=True,
        byte_gap=3 * 4,
    ),
    Twin("var", lambda x: x.var(1), lambda x: jnp.var(x, 1, ddof=1), ((4, 6, 5),)),
    Twin("std", lambda x: x.std(1), lambda x: jnp.std(x, 1, ddof=1), ((4, 6, 5),)),
    Twin(
        "pad_reflect",
        lambda x: F.pad(x, (2, 1), mode="reflect"),
        lambda x: jnp.pad(x, ((0, 0), (0, 0), (2, 1)), mode="reflect"),
        ((2, 5, 6),),
    ),
    Twin(  # eager charges the select in the forward (its indices), XLA in the backward
        "max_pool_grad",
        _max_pool_grad_torch,
        _max_pool_grad_jax,
        ((2, 3, 8, 8), (2, 3, 4, 4)),
    ),
    Twin(
        "conv_weight_grad",
        _conv_weight_grad_torch,
        _conv_weight_grad_jax,
        ((2, 4, 9, 8), (6, 2, 3, 3), (2, 6, 5, 4)),
    ),
    Twin(
        "scatter_add",
        lambda x, s, i: x.scatter_add(0, i, s),
        lambda x, s, i: lax.scatter_add(x, i[..., None], s, _SCATTER_ALONG_0, mode=_IN_BOUNDS),
        ((5, 4), (3, 4)),
        ints=(((3, 4), 5),),
        torch_int64=True,
        byte_gap=3 * 4 * 4,
    ),
]

_MOVES = {"pad_constant", "pad_reflect", "gather", "gather_int64", "embedding"}
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
    ints = [rng.integers(0, high, shape) for shape, high in twin.ints]
    torch_ints = [i.astype(np.int64 if twin.torch_int64 else np.int32) for i in ints]
    torch_args = [torch.from_numpy(a) for a in [*arrays, *torch_ints]]
    torch_low = lower_capture(trace_module(twin.torch_fn, torch_args))
    jax_args = list(twin.jax_inputs(*arrays, *[i.astype(np.int32) for i in ints]))
    jax_low = lower_jaxpr(trace_function(twin.jax_fn, jax_args))
    assert torch_low.fully_covered and jax_low.fully_covered
    (torch_flops, torch_bytes), (jax_flops, jax_bytes) = (
        _work(torch_low.program),
        _work(jax_low.program),
    )
    assert torch_flops == jax_flops
    assert torch_bytes - jax_bytes == twin.byte_gap
    assert torch_flops > 0 or twin.family in _MOVES
