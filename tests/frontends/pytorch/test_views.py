"""Outputs eager returns as views or aliases are alias kernels: validated, never charged.

Issue 14, bug 1 (Note [Alias kernels] in docs/bounds.md). Each program runs through the
whole frontend at a small size (capture, lowering, IR execution against torch), then its
costs are checked by hand: with ``E`` elements per fp32 tensor, the unfused bytes (all
kernels) and the fused bytes (compulsory) are both ``k * 4E``. The same programs on
8192 x 8192 (capture only) give the issue's numbers: 0 where it printed 129 µs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.bounds import compute_bound_set, evaluate_costs
from solar.einsum import lift_to_einsum
from solar.frontends.pytorch import lower_capture, trace_module
from solar.hw import list_hardware_specs, load_hardware_spec
from solar.ir import Program

torch = pytest.importorskip("torch")

from torch_check import check_program  # noqa: E402

pytestmark = pytest.mark.torch

N = 64

# name: (program, number of N x N inputs, k in k * 4E bytes, alias kernels)
CASES: dict[str, tuple[Callable[..., Any], int, int, list[str]]] = {
    "transpose": (lambda x: x.t(), 1, 0, ["y0_copy"]),
    "identity": (lambda x: x, 1, 0, ["y0_copy"]),
    "reshape": (lambda x: x.reshape(-1), 1, 0, ["y0_copy"]),
    "slice": (lambda x: x[:, : N // 2], 1, 0, ["y0_copy"]),
    # y = x + 1; return y, y: read x, write y once
    "same_output_twice": (lambda x: (lambda y: (y, y))(x + 1), 1, 2, ["y1_copy"]),
    # return x, x + 1: read x, write x + 1
    "input_and_result": (lambda x: (x, x + 1), 1, 2, ["y0_copy"]),
    # two views of one product: read x, write the product once
    "chunk": (lambda x: (x * 2).chunk(2, 1), 1, 2, ["y0_copy", "y1_copy"]),
    # read a and b, write the sum once
    "sum_transposed": (lambda a, b: (a + b).t(), 2, 3, ["y0_copy"]),
}


def _costs(program: Program) -> tuple[float, float, float]:
    """``(FLOPs, unfused bytes, fused bytes)``."""
    c = evaluate_costs(lift_to_einsum(program))
    return (
        float(c.group_flops.sum()),
        float(c.read_bytes.sum() + c.written_bytes.sum()),
        float(c.compulsory_read_bytes.sum() + c.compulsory_written_bytes.sum()),
    )


@pytest.mark.parametrize("case", list(CASES))
def test_views_and_aliases_are_validated_and_free(case: str) -> None:
    fn, n_inputs, k, aliases = CASES[case]
    low = check_program(fn, *(torch.randn(N, N) for _ in range(n_inputs)))
    assert [kn.name for kn in low.program.kernels if kn.alias] == aliases
    _, unfused, fused = _costs(low.program)
    assert (unfused, fused) == (k * 4 * N * N, k * 4 * N * N)


@pytest.mark.parametrize("case", list(CASES))
def test_issue_sizes(case: str) -> None:
    """8192 x 8192 fp32, cold cache: every model is ``k * 4 * 8192**2 / B`` (0 for a view)."""
    fn, n_inputs, k, _ = CASES[case]
    big = 8192
    if case == "slice":
        fn = lambda x: x[:, : big // 2]  # noqa: E731
    capture = trace_module(fn, tuple(torch.empty(big, big) for _ in range(n_inputs)))
    graph = lift_to_einsum(lower_capture(capture).program)
    spec = load_hardware_spec("H100_SXM")
    want = k * 4 * big * big / spec.dram_bandwidth_bytes_per_s
    for bound in compute_bound_set(graph, spec, cache="cold"):
        assert bound.time_s == pytest.approx(want, rel=1e-9, abs=0.0), bound.model


# -- properties ---------------------------------------------------------------------------


@st.composite
def view_chains(draw: st.DrawFn) -> list[tuple[str, tuple[int, ...]]]:
    """Random chains of eager views of a (4, 6, 5) tensor (reshape only while contiguous)."""
    x = torch.empty(4, 6, 5)
    ops: list[tuple[str, tuple[int, ...]]] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["permute", "slice", "expand", "reshape", "t"]))
        if kind == "permute":
            arg: tuple[int, ...] = tuple(draw(st.permutations(range(x.dim()))))
        elif kind == "slice":
            d = draw(st.integers(0, x.dim() - 1))
            start = draw(st.integers(0, x.shape[d] - 1))
            arg = (d, start, draw(st.integers(1, 3)))
        elif kind == "expand":
            arg = (draw(st.integers(2, 3)),)
        elif (kind == "reshape" and x.is_contiguous() and x.dim() >= 2) or (
            kind == "t" and x.dim() == 2
        ):
            arg = ()
        else:
            continue
        ops.append((kind, arg))
        x = _apply(x, kind, arg)
    return ops


def _apply(x: Any, kind: str, arg: tuple[int, ...]) -> Any:
    if kind == "permute":
        return x.permute(*arg)
    if kind == "slice":
        d, start, step = arg
        index = [slice(None)] * x.dim()
        index[d] = slice(start, None, step)
        return x[tuple(index)]
    if kind == "expand":
        return x.unsqueeze(0).expand(arg[0], *x.shape)
    if kind == "reshape":
        return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])
    return x.t()


def _chain(ops: list[tuple[str, tuple[int, ...]]]) -> Callable[[Any], Any]:
    def fn(x: Any) -> Any:
        for kind, arg in ops:
            x = _apply(x, kind, arg)
        return x

    return fn


@settings(max_examples=15, deadline=None)
@given(view_chains())
def test_an_input_returned_through_views_costs_nothing(
    ops: list[tuple[str, tuple[int, ...]]],
) -> None:
    low = check_program(_chain(ops), torch.randn(4, 6, 5))
    assert all(k.alias for k in low.program.kernels)
    assert _costs(low.program) == (0.0, 0.0, 0.0)
    graph = lift_to_einsum(low.program)
    for spec in list_hardware_specs():
        assert all(b.time_s == 0.0 for b in compute_bound_set(graph, spec))


@settings(max_examples=10, deadline=None)
@given(view_chains(), st.integers(2, 3))
def test_returning_a_result_again_never_increases_a_bound(
    ops: list[tuple[str, tuple[int, ...]]], times: int
) -> None:
    view = _chain(ops)
    once = check_program(lambda x: view(x * 2), torch.randn(4, 6, 5))
    again = check_program(lambda x: (view(x * 2),) * times, torch.randn(4, 6, 5))
    assert _costs(again.program) == _costs(once.program)
    g1, g2 = lift_to_einsum(once.program), lift_to_einsum(again.program)
    for spec in list_hardware_specs():
        for b1, b2 in zip(compute_bound_set(g1, spec), compute_bound_set(g2, spec), strict=True):
            assert b2.time_s <= b1.time_s * (1 + 1e-12), (spec.name, b1.model)


def test_a_contiguous_copy_is_still_charged() -> None:
    """``x.t().contiguous()``: eager runs a copy kernel (read and write 4E each)."""
    low = check_program(lambda x: x.t().contiguous(), torch.randn(N, N))
    assert not any(k.alias for k in low.program.kernels)
    assert _costs(low.program)[1:] == (2 * 4 * N * N, 2 * 4 * N * N)


# Copies eager makes of a view (Note [Copies] in solar.ir.passes): readers read through them.
# name: (program, k in k * 4E bytes for both models once read through, copies read through)
COPIES: dict[str, tuple[Callable[..., Any], int, int]] = {
    # x.t().reshape(-1) copies; [::2] keeps the even rows of x: read E/2, write E/2
    "reshape_of_transpose_half": (lambda x: x.t().reshape(-1)[::2] * 2, 1, 1),
    # the whole copy is used: read E, write E (eager: the copy's 2E on top, unfused)
    "contiguous_then_add": (lambda x: x.t().contiguous() + 1, 2, 1),
    # a broadcast copy summed back: each element of x read once, E written
    "expand_contiguous_sum": (lambda x: x.expand(3, N, N).contiguous().sum(0), 2, 1),
    # a copy of a copy: both read through
    "two_copies": (lambda x: x.t().contiguous().t().contiguous()[: N // 2] - 1, 1, 2),
}


@pytest.mark.parametrize("case", list(COPIES))
def test_copies_of_views_are_read_through(case: str) -> None:
    from solar.ir import eliminate_dead_code, forward_copies

    fn, k, copies = COPIES[case]
    low = check_program(fn, torch.randn(N, N))  # validation runs the copies as eager does
    bounds_program = eliminate_dead_code(forward_copies(low.program))
    assert len(low.program.kernels) - len(bounds_program.kernels) == copies
    _, unfused, fused = _costs(bounds_program)
    assert (unfused, fused) == (k * 4 * N * N, k * 4 * N * N)
    # never more than charging the copies (reading through only removes traffic)
    _, unfused_before, fused_before = _costs(low.program)
    assert unfused <= unfused_before and fused <= fused_before


def test_the_report_counts_copies_read_through(tmp_path: Any) -> None:
    from solar.pipeline import AnalyzeOptions, analyze

    path = tmp_path / "half.py"
    path.write_text(
        "import torch, torch.nn as nn\n"
        "class Model(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x.transpose(1, 2).reshape(x.shape[0], -1)[:, ::2] * 2\n"
        "def get_inputs():\n"
        "    return [torch.randn(64, 128, 256)]\n"
    )
    report = analyze(path, AnalyzeOptions(archs=("H100_SXM",), cache="cold"))
    assert report.validation.status == "passed"
    assert (report.ir.kernels, report.ir.copy_kernels, report.ir.dead_kernels) == (2, 1, 0)
    fused = next(b for b in report.archs[0].bounds if b.model == "fused")
    assert fused.dram_bytes == 2 * 4 * 64 * 128 * 256 // 2  # half of x read, half written


@settings(max_examples=15, deadline=None)
@given(view_chains(), st.integers(1, 3))
def test_reading_through_copies_keeps_every_output(
    ops: list[tuple[str, tuple[int, ...]]], step: int
) -> None:
    # a random chain of views, made contiguous (a copy), then partly used: the program
    # forward_copies makes computes the same outputs and never charges more
    from solar.ir import eliminate_dead_code, forward_copies, verify_program
    from solar.validate import execute_program

    view = _chain(ops)
    x = torch.randn(4, 6, 5)
    low = check_program(lambda x: view(x).contiguous().reshape(-1)[::step] + 1, x)
    through = eliminate_dead_code(forward_copies(low.program))
    verify_program(through)
    inputs = {low.inputs[0]: x.numpy()}
    want = execute_program(low.program, inputs)
    got = execute_program(through, inputs)
    assert want.keys() == got.keys()
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value)
    _, unfused_before, fused_before = _costs(low.program)
    _, unfused, fused = _costs(through)
    assert unfused <= unfused_before and fused <= fused_before
