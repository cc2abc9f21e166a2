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
    torch_low = lower_capture(trace_module(twin.torch_fn, [torch.from_numpy(a) for a in arrays]))
    jax_low = lower_jaxpr(trace_function(twin.jax_fn, list(twin.jax_inputs(*arrays))))
    assert torch_low.fully_covered and jax_low.fully_covered
    torch_work = _work(torch_low.program)
    assert torch_work == _work(jax_low.program)
    assert torch_work[0] > 0
