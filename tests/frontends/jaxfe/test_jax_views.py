"""JAX outputs that alias held data are alias kernels: validated, never charged.

Issue 14, bug 1, JAX side (Notes [Alias kernels] and [JAX output layouts] in
docs/bounds.md). Each function runs through the whole frontend at a small size (capture,
lowering, IR execution against jit), then its costs are checked by hand: with ``E``
elements per fp32 tensor, the unfused bytes (all kernels) and the fused bytes
(compulsory) are both ``k * 4E``. A returned input, reshape, transpose, slice or split
piece is a view; a concatenation is not (no strided view expresses it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from jax_check import check_fn, program_costs, rand

from solar.frontends.jaxfe import lower_jaxpr, trace_function
from solar.ir import parse_program, print_program

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

pytestmark = pytest.mark.jax

N = 64

# name: (function, number of N x N inputs, k in k * 4E bytes, alias kernels)
CASES: dict[str, tuple[Callable[..., Any], int, int, list[str]]] = {
    "transpose": (lambda x: x.T, 1, 0, ["output_copy"]),
    "identity": (lambda x: x, 1, 0, ["output_copy"]),
    "reshape": (lambda x: x.reshape(-1), 1, 0, ["output_copy"]),
    "slice": (lambda x: x[:, : N // 2], 1, 0, ["output_copy"]),
    "flip": (lambda x: x[::-1], 1, 0, ["rev"]),
    "same_output_twice": (lambda x: (lambda y: (y, y))(x + 1), 1, 2, ["output_copy"]),
    "input_and_result": (lambda x: (x, x + 1), 1, 2, ["output_copy"]),
    "split": (lambda x: tuple(jnp.split(x * 2, 2, axis=1)), 1, 2, ["output_copy", "output_copy_1"]),
    "sum_transposed": (lambda a, b: (a + b).T, 2, 3, ["output_copy"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_views_and_aliases_are_validated_and_free(case: str) -> None:
    fn, n_inputs, k, aliases = CASES[case]
    low = check_fn(fn, *(rand(N, N, seed=s) for s in range(n_inputs)))
    assert [kn.name for kn in low.program.kernels if kn.alias] == aliases
    _, unfused, fused = program_costs(low.program)
    assert (unfused, fused) == (k * 4 * N * N, k * 4 * N * N)


def test_concatenation_is_not_a_view() -> None:
    """``concatenate([x, x])`` moves data in every implementation: read 4E, write 8E."""
    low = check_fn(lambda x: jnp.concatenate([x, x]), rand(N, N))
    assert not any(k.alias for k in low.program.kernels)
    assert program_costs(low.program)[2] == 3 * 4 * N * N


def test_a_transposed_output_read_later_is_still_a_view() -> None:
    """``y = x.T; return y, y + 1``: ``y`` is a view of ``x`` (an alias output), and the add
    reads ``x`` through it (read x, write y + 1: 2 * 4E fused and unfused)."""
    low = check_fn(lambda x: (lambda y: (y, y + 1))(x.T), rand(N, N))
    assert [k.name for k in low.program.kernels if k.alias] == ["output_copy"]
    assert program_costs(low.program)[1:] == (2 * 4 * N * N, 2 * 4 * N * N)


# Note [Free views] in solar.frontends.jaxfe.core: transpose, slice, split and unstack are
# index maps, as PyTorch's permute/slicing/split/unbind are, so an intermediate one costs no
# kernel. name: (function, number of N x N inputs, k in k * 4E unfused bytes)
INTERMEDIATE_VIEWS: dict[str, tuple[Callable[..., Any], int, float]] = {
    "transpose_matmul": (lambda x, w: x.T @ w, 2, 3),
    "transpose_add": (lambda x, w: x.T + w, 2, 3),
    "heads_permute_bmm": (
        lambda x, w: (
            x.reshape(N, 4, N // 4).transpose(1, 0, 2) @ w.reshape(N, 4, N // 4).transpose(1, 2, 0)
        ),
        2,
        6,
    ),
    "slice_mul": (lambda x, w: x[:, : N // 2] * w[:, N // 2 :], 2, 1.5),
    # every other column of every other row: whole 32-byte sectors of half of x's rows
    "strided_slice_add": (lambda x, w: x[::2, 1::2] + w[: N // 2, : N // 2], 2, 1),
    "split_mul": (lambda x: jnp.multiply(*jnp.split(x, 2, axis=0)), 1, 1.5),
    # 0 + u0 is u0 (free); then three adds of quarter-size pieces
    "unstack_add": (lambda x: sum(jnp.unstack(x.reshape(4, N // 4, N), axis=0)), 1, 2.25),
}


@pytest.mark.parametrize("case", list(INTERMEDIATE_VIEWS))
def test_intermediate_views_are_free(case: str) -> None:
    fn, n_inputs, k = INTERMEDIATE_VIEWS[case]
    low = check_fn(fn, *(rand(N, N, seed=s) for s in range(n_inputs)))
    names = [kn.name for kn in low.program.kernels]
    assert not any(n.startswith(("transpose", "slice", "split", "unstack")) for n in names)
    assert program_costs(low.program)[1] == k * 4 * N * N


def test_alias_kernels_come_last_and_round_trip() -> None:
    low = lower_jaxpr(trace_function(lambda a, b: ((a + b).T, a * 3), (rand(N, N), rand(N, N))))
    kinds = [k.alias for k in low.program.kernels]
    assert kinds == sorted(kinds)  # every alias kernel after every other kernel
    assert parse_program(print_program(low.program)) == low.program
