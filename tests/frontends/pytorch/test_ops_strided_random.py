"""ops_strided.py (``as_strided``/``as_strided_``) and random ops (driver.RANDOM_OPS)
against torch, with the bounds' hand arithmetic: views are free, draws are writes only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from torch_check import check_program

import solar
from solar.frontends.pytorch.ops_strided import decompose_offset, strided_map_affine

torch = pytest.importorskip("torch")
F = torch.nn.functional
pytestmark = pytest.mark.torch


def _restride_pooled(x: Any) -> Any:
    """ConvNeXt's pattern: a pooled (N, C, 1, 1) restrided to channels-last in place."""
    y = x.mean((-1, -2), keepdim=True)
    y.as_strided_(y.shape, (y.shape[1], 1, y.shape[1], y.shape[1]))
    return y.permute(0, 2, 3, 1) * 2


STRIDED: dict[str, tuple[Callable[..., Any], tuple[int, ...]]] = {
    # affine: each result dim steps one input dim
    "transpose": (lambda x: x.as_strided((6, 4), (1, 6)) + 1, (4, 6)),
    "slice_with_offset": (lambda x: x.as_strided((3, 4), (6, 1), 7) + 1, (4, 6)),
    "every_other_row": (lambda x: x.as_strided((2, 6), (12, 1)) + 1, (4, 6)),
    "of_permuted_view": (lambda x: x.permute(1, 0).as_strided((4, 6), (6, 1)) + 1, (4, 6)),
    "channels_last_input": (
        lambda x: (
            x.contiguous(memory_format=torch.channels_last).as_strided((2, 3, 4, 5), (60, 1, 15, 3))
            + 1
        ),
        (2, 3, 4, 5),
    ),
    "inplace_restride": (_restride_pooled, (2, 8, 3, 3)),
    # gather: storage positions unravelled (// and %)
    "overlapping_windows": (lambda x: x.as_strided((5, 4), (2, 1)) + 1, (12,)),
    "merge_rows": (lambda x: x.as_strided((6, 4), (4, 1)) + 1, (4, 6)),
    "window_partition": (lambda x: x.as_strided((2, 2, 2, 3), (12, 3, 6, 1)) + 1, (4, 6)),
}


@pytest.mark.parametrize("name", sorted(STRIDED))
def test_as_strided_matches_torch(name: str) -> None:
    fn, shape = STRIDED[name]
    lowered = check_program(fn, torch.randn(*shape))
    # the view itself moves nothing: only the consumer's kernel(s) remain
    assert all("strided" not in k.name for k in lowered.program.kernels)


def test_as_strided_view_is_free_in_the_bounds() -> None:
    """``x.as_strided((6, 4), (1, 6)) + 1`` on a 4x6 f32 input: one add kernel,
    24 FLOPs, 24*4 bytes read + 24*4 written = 192 bytes; no copy for the view."""
    report = solar.analyze(lambda x: x.as_strided((6, 4), (1, 6)) + 1, (torch.randn(4, 6),))
    rows = report.archs[0].kernels
    assert [(k.flops, k.bytes) for k in rows] == [(24.0, 192.0)]
    assert report.coverage.complete


def test_affine_and_offset_helpers() -> None:
    assert decompose_offset(7, (4, 6), (6, 1)) == (1, 1)
    assert decompose_offset(24, (4, 6), (6, 1)) is None  # past the last element
    # a (3, 4) window at offset 7 of a 4x6 row-major tensor: rows 1.., cols 1..
    assert strided_map_affine((4, 6), (6, 1), 7, (3, 4), (6, 1)) == ((1, 1), (0, 1))
    # a window running past the last column is not affine
    assert strided_map_affine((4, 6), (6, 1), 3, (3, 4), (6, 1)) is None


RANDOM: dict[str, tuple[Callable[..., Any], int, int]] = {
    # name: (fn of a (2, 8) f32 input, drawn elements, bytes per drawn element)
    "randn": (lambda x: x + torch.randn(2, 8), 16, 4),
    "rand_like": (lambda x: x * torch.rand_like(x), 16, 4),
    "randint": (lambda x: x + torch.randint(0, 5, (2, 8)), 16, 8),
    "bernoulli": (lambda x: x * torch.bernoulli(torch.full_like(x, 0.3)), 16, 4),
    "normal_": (lambda x: x + torch.empty(2, 8).normal_(), 16, 4),
    "uniform_": (lambda x: x + torch.empty(2, 8).uniform_(-1, 1), 16, 4),
    "dropout_train": (lambda x: F.dropout(x, 0.25, training=True), 16, 4),
    "randn_row": (lambda x: x + torch.randn(1, 8), 8, 4),
}


@pytest.mark.parametrize("name", sorted(RANDOM))
def test_random_ops_validate_on_the_real_draws(name: str) -> None:
    fn, _, _ = RANDOM[name]
    lowered = check_program(fn, torch.randn(2, 8))
    assert lowered.generated  # the draws are fed from the real run
    assert {v.name for v in lowered.uncovered_values} >= set(lowered.generated)


@pytest.mark.parametrize("name", sorted(RANDOM))
def test_random_draws_are_charged_as_writes_only(name: str) -> None:
    fn, drawn, itemsize = RANDOM[name]
    report = solar.analyze(fn, (torch.randn(2, 8),))
    assert report.coverage.complete
    assert report.validation.status == "passed"
    written = sorted(k.bytes for k in report.archs[0].kernels if k.flops == 0.0)
    assert drawn * itemsize in written  # the draw kernel writes its elements, reads none


def test_dropout_module_in_train_mode() -> None:
    """nn.Dropout in training mode: bernoulli_ (16 draws, 64 B written), div_, mul."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5)).train()
    torch.manual_seed(0)
    report = solar.analyze(model, (torch.randn(2, 8),), train_mode=True)
    assert report.validation.status == "passed"
    rows = {k.name: (k.flops, k.bytes) for k in report.archs[0].kernels}
    assert rows["t1_bernoulli"] == (0.0, 64.0)


def test_lstm_with_a_random_initial_state() -> None:
    """KernelBench L3 LSTM's pattern: h0/c0 drawn with randn inside forward."""

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True)

        def forward(self, x: Any) -> Any:
            h0 = torch.randn(2, x.shape[0], 16)
            c0 = torch.randn(2, x.shape[0], 16)
            out, _ = self.lstm(x, (h0, c0))
            return out[:, -1, :]

    report = solar.analyze(Net(), (torch.randn(3, 5, 8),))
    assert report.coverage.complete
    assert report.validation.status == "passed"
    draws = [k for k in report.archs[0].kernels if "randn" in k.name]
    assert [k.bytes for k in draws] == [2 * 3 * 16 * 4] * 2  # writes only
