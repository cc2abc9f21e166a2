"""In-place updates of inputs, buffers and caches charge only the elements they touch.

Issue 28 item 1 (Note [In-place updates] in docs/bounds.md). The IR never writes an
input, so a partial in-place update first copies it to a new version; that copy is an
``inplace kernel`` (the version *is* the input's storage, as in eager): validated, never
charged. Each program runs through the whole frontend at a small size (capture, lowering,
IR execution against torch), then its bytes are checked against a hand-computed minimum.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.bounds import compute_bound_set, evaluate_costs
from solar.einsum import lift_to_einsum
from solar.frontends.pytorch import lower_capture, trace_module
from solar.hw import load_hardware_spec
from solar.ir import Program

torch = pytest.importorskip("torch")

from torch_check import check_program  # noqa: E402

pytestmark = pytest.mark.torch

N = 64


def _row(x: Any, v: Any) -> Any:
    x[5] = v
    return x


def _index_copy(x: Any, s: Any) -> Any:
    return x.index_copy_(0, torch.tensor([3, 9]), s)


def _slice_add(x: Any) -> Any:
    x[:, :4] += 1
    return x


def _row_mul(x: Any) -> Any:
    x[3] *= 2
    return x


def _column_sub(x: Any) -> Any:
    x[:, 5] -= 1
    return x


def _narrow_add(x: Any) -> Any:
    x.narrow(1, 2, 3).add_(1)
    return x


def _diagonal_add(x: Any) -> Any:
    x.diagonal().add_(1)
    return x


def _strided_rows(x: Any) -> Any:
    x[::2] *= 3
    return x


def _decode(cache: Any, q: Any, k: Any) -> Any:
    cache[7:8] = k  # a KV cache written in place at position 7, then attended over
    return torch.softmax(q @ cache.T, -1) @ cache


def _decode_index_copy(cache: Any, q: Any, k: Any) -> Any:
    cache.index_copy_(0, torch.tensor([7]), k)  # gpt-fast's cache update
    return torch.softmax(q @ cache.T, -1) @ cache


# name: (program, input shapes, fused bytes (hand minimum), unfused bytes)
CASES: dict[str, tuple[Callable[..., Any], list[tuple[int, ...]], int, int]] = {
    # read v, write row 5: 2 x 64 fp32
    "row_set": (_row, [(N, N), (N,)], 2 * 4 * N, 2 * 4 * N),
    # read the index (2 x i64) and the source rows; the written rows are counted through
    # a gathered subscript, so as one row (a lower bound)
    "index_copy_": (_index_copy, [(N, N), (2, N)], 2 * 8 + 2 * 4 * N + 4 * N,
                    2 * 8 + 2 * 4 * N + 4 * N),
    # read and write the 64 x 4 slice, one kernel (``add_`` on the view): the write-back
    # ``copy_`` has the same view as source and destination, which eager skips
    "slice_add": (_slice_add, [(N, N)], 2 * 4 * 4 * N, 2 * 4 * 4 * N),
    # in-place ops on other views: read and write the view's elements once
    "row_mul": (_row_mul, [(N, N)], 2 * 4 * N, 2 * 4 * N),
    "column_sub": (_column_sub, [(N, N)], 2 * 4 * N, 2 * 4 * N),
    "narrow_add_": (_narrow_add, [(N, N)], 2 * 4 * 3 * N, 2 * 4 * 3 * N),
    "diagonal_add_": (_diagonal_add, [(N, N)], 2 * 4 * N, 2 * 4 * N),
    "strided_rows_mul": (_strided_rows, [(N, N)], 2 * 4 * (N // 2) * N, 2 * 4 * (N // 2) * N),
    # q and k read, the 63 old cache rows read (the new one is k), one output row written
    "kv_cache_decode": (_decode, [(N, N), (1, N), (1, N)],
                        4 * (N + N + (N - 1) * N + N), 34816),
    # the same through index_copy_: the gathered row is bounded by its one write point,
    # so the 63 old rows are still the source's reads (plus the i64 index)
    "kv_cache_index_copy_": (_decode_index_copy, [(N, N), (1, N), (1, N)],
                             4 * (N + N + (N - 1) * N + N) + 8, 0),
}


def _bytes(program: Program) -> tuple[float, float]:
    """``(unfused bytes, fused bytes)``."""
    c = evaluate_costs(lift_to_einsum(program))
    return (float(c.read_bytes.sum() + c.written_bytes.sum()),
            float(c.compulsory_read_bytes.sum() + c.compulsory_written_bytes.sum()))


@pytest.mark.parametrize("case", list(CASES))
def test_in_place_updates_charge_the_touched_elements(case: str) -> None:
    fn, shapes, fused, unfused = CASES[case]
    low = check_program(fn, *(torch.randn(*s) for s in shapes))
    assert [k.name for k in low.program.kernels if k.inplace] == ["x0_version"]
    got = _bytes(low.program)
    assert got[1] == fused
    if unfused:
        assert got[0] == unfused


def test_issue_size_row_set() -> None:
    """The issue's example: ``x[5] = v; return x`` on 32768 x 4096 fp32, cold cache, was
    bounded at 320 µs (a whole copy); one 16 KiB row read and one written is the minimum."""
    capture = trace_module(_row, (torch.empty(32768, 4096), torch.empty(4096)))
    graph = lift_to_einsum(lower_capture(capture).program)
    spec = load_hardware_spec("H100_SXM")
    want = 2 * 4 * 4096 / spec.dram_bandwidth_bytes_per_s
    for bound in compute_bound_set(graph, spec, cache="cold"):
        assert bound.time_s == pytest.approx(want, rel=1e-9, abs=0.0), bound.model


class _Buffered(torch.nn.Module):
    """A registered buffer updated in place, then read whole (a running state)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("state", torch.randn(N, N))

    def forward(self, x: Any) -> Any:
        self.state[3] = x
        return self.state.sum(0)


def test_a_buffer_updated_in_place_reads_its_old_rows_once() -> None:
    low = check_program(_Buffered(), torch.randn(N))
    assert [k.inplace for k in low.program.kernels].count(True) == 1
    # read x and the 63 old rows of the buffer, write the N sums
    assert _bytes(low.program)[1] == 4 * (N + (N - 1) * N + N)


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.data())
def test_a_box_set_in_place_moves_the_box_twice(rows: int, cols: int, data: st.DataObject) -> None:
    """``x[a:a+r, b:b+c] = v`` on a returned input: read v, write the box, nothing else."""
    a = data.draw(st.integers(0, 8 - rows))
    b = data.draw(st.integers(0, 8 - cols))

    def fn(x: Any, v: Any) -> Any:
        x[a:a + rows, b:b + cols] = v
        return x

    low = check_program(fn, torch.randn(8, 8), torch.randn(rows, cols))
    assert _bytes(low.program) == (2 * 4 * rows * cols, 2 * 4 * rows * cols)
