"""Validation never blocks analysis; coverage is checked against torch's FlopCounterMode.

Issue 12, items 1 and 2: a program whose real run does not fit the reference budget
and has no size constants is validated with its inputs' batch cut (``reduced-batch``),
or reported ``skipped`` with the reason (never exit 1); the work feeding an uncovered
op is kept and counted, and SOLAR's FLOPs are compared with torch's own count.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from solar.pipeline import AnalyzeOptions, FileSource, analyze, analyze_front, load_program
from solar.report import InputInfo, coverage_info, render_text

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

# No size constants: the inputs are made with literal sizes, as torchvision users write.
CONV = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.head = nn.Linear(8, 10)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        return self.head(y.mean(dim=(2, 3)))


def get_inputs():
    return [torch.randn(8, 3, 32, 32)]


def get_init_inputs():
    return []
"""

# An op SOLAR does not lower (an FFT) at the output, fed by a linear layer.
FFT_AT_OUTPUT = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(64, 128)

    def forward(self, x):
        return torch.fft.rfft(torch.relu(self.lin(x)), dim=-1)


def get_inputs():
    return [torch.randn(4, 64)]


def get_init_inputs():
    return []
"""


@pytest.fixture
def conv_file(tmp_path: Path) -> Path:
    path = tmp_path / "conv.py"
    path.write_text(CONV)
    return path


def test_full_size_under_the_memory_derived_budget(conv_file: Path) -> None:
    report = analyze(conv_file, AnalyzeOptions())
    assert report.validation.status == "passed"
    assert report.validation.strategy == "full"
    ind = report.coverage.independent_flops
    assert ind is not None and not ind.shortfall
    # torch: conv 2*8*8*32*32*27 = 3,538,944 + linear 2*8*8*10 = 1,280
    assert ind.total_flops == 3_538_944 + 1_280
    # the taps over the padding: per dim (30*3 + 2*2) of 32*3 read the input, so
    # 1 - (94/96)**2 = 380/9216 of the conv's count: 145,920
    assert ind.padding_flops == 145_920
    # SOLAR counts the conv's valid taps 2*8*8*3*94*94 = 3,393,024 and more (relu, mean)
    assert ind.solar_flops >= 3_393_024 + 1_280


def test_batch_is_cut_when_the_real_run_does_not_fit(conv_file: Path) -> None:
    # full program: input 8*3*32*32*4 = 98,304 B, conv out and relu 2 * 8*8*32*32*4 =
    # 524,288 B, ... about 0.6 MiB; params 224*4 + 90*4 = 1,256 B. A budget of 160 KiB
    # fits one or two images, not eight.
    report = analyze(conv_file, AnalyzeOptions(reference_budget_bytes=160 << 10))
    v = report.validation
    assert v.status == "passed", v
    assert v.strategy == "reduced-batch"
    assert v.reason is not None and v.reason.startswith("cut the inputs' batch 8->")
    # the bounds are for the analysed batch: the conv alone is 2*8*8*32*32*27 FLOPs
    assert report.flops >= 2 * 8 * 8 * 30 * 30 * 27  # at least the interior taps


def test_nothing_fits_is_skipped_not_an_error(conv_file: Path) -> None:
    report = analyze(conv_file, AnalyzeOptions(reference_budget_bytes=512))
    v = report.validation
    assert v.status == "skipped"
    assert v.strategy == "none"
    assert v.reason is not None and "E0511" in v.reason and "batch" in v.reason
    assert any("validation skipped" in w for w in report.warnings)
    assert report.flops >= 2 * 8 * 8 * 30 * 30 * 27  # at least the interior taps


def test_validate_full_still_insists(conv_file: Path) -> None:
    from solar.diagnostics import FrontendError

    with pytest.raises(FrontendError) as info:
        analyze(conv_file, AnalyzeOptions(reference_budget_bytes=512, validate="full"))
    assert info.value.code == "E0511"


def test_live_module_batch_cut() -> None:
    from solar.pipeline import analyze_module

    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU())
    x = torch.randn(64, 16)
    report = analyze_module(model, [x], AnalyzeOptions(reference_budget_bytes=4 << 10))
    v = report.validation
    assert v.status == "passed", v
    assert v.strategy == "reduced-batch"
    assert report.flops >= 2 * 64 * 16 * 32


# ---- coverage ------------------------------------------------------------------------
@pytest.fixture
def fft_file(tmp_path: Path) -> Path:
    path = tmp_path / "fft_at_output.py"
    path.write_text(FFT_AT_OUTPUT)
    return path


def test_work_feeding_an_uncovered_output_op_is_counted(fft_file: Path) -> None:
    report = analyze(fft_file, AnalyzeOptions(validate="off"))
    cov = report.coverage
    assert not cov.complete
    assert [u.op for u in cov.uncovered] == ["aten._fft_r2c.default"]
    assert cov.uncovered[0].counted_flops is None  # FlopCounterMode has no FFT formula
    # linear 2*4*64*128 = 65,536 (the bias initialises the sum: a copy) + relu 4*128
    assert report.flops == 66_048
    ind = cov.independent_flops
    assert ind is not None
    assert ind.counter == "torch.utils.flop_counter.FlopCounterMode"
    assert ind.total_flops == 65_536  # torch counts addmm's multiply-adds only
    assert ind.covered_flops == 65_536
    assert ind.solar_flops == 66_048
    assert ind.padding_flops == 0
    assert not ind.shortfall
    assert cov.uncovered_flops_fraction == 0.0
    text = render_text(report)
    assert "FLOPs check vs FlopCounterMode: SOLAR 66 kFLOP, counted 65.5 kFLOP" in text
    assert "(ok)" in text


def test_dropped_work_is_reported_as_a_shortfall(fft_file: Path) -> None:
    """The failure the issue saw (ConvNeXt's work feeding an uncovered op dropped as dead
    code): without the keep-alive, the FLOP check catches it loudly."""
    options = AnalyzeOptions(validate="off")
    front = load_program(FileSource(fft_file), options)
    assert front.keep_live  # the linear's output, read by the uncovered FFT
    dropped = dataclasses.replace(front, keep_live=())
    source = InputInfo(path=str(fft_file), sha256="0" * 64)
    from solar.hw import load_hardware_spec

    report = analyze_front(dropped, source, [load_hardware_spec("H100_SXM")], options,
                           lambda _m: None)
    assert report.flops == 0
    ind = report.coverage.independent_flops
    assert ind is not None and ind.shortfall
    assert any(w.startswith("FLOP SHORTFALL") for w in report.warnings)
    assert "!! SHORTFALL" in render_text(report)


def test_capture_count_equals_flop_counter_mode(conv_file: Path) -> None:
    """Note [Independent FLOP count]: the capture applies FlopCounterMode's own formula
    table per call; its total equals FlopCounterMode over a real forward."""
    from torch.utils.flop_counter import FlopCounterMode

    from solar.frontends.pytorch import trace_model_file, trace_module

    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Flatten(), torch.nn.Linear(8 * 64, 4)
    )
    x = torch.randn(2, 3, 8, 8)
    with FlopCounterMode(display=False) as fc, torch.no_grad():
        model(x)
    cap = trace_module(model, (x,))
    assert cap.info.counted_flops == fc.get_total_flops() == 2 * 2 * 8 * 64 * 27 + 2 * 2 * 512 * 4
    assert trace_model_file(conv_file).info.counted_flops == 3_538_944 + 1_280


def test_uncovered_flops_share_from_the_counter() -> None:
    @dataclasses.dataclass
    class Row:
        target: str
        count: int
        bytes_share: float
        counted_flops: int | None

    cov = coverage_info(
        10, [Row("aten._grouped_mm.default", 2, 0.25, 300)], counted_flops=1_000,
        solar_flops=800.0,
    )
    assert cov.uncovered_flops_fraction == pytest.approx(0.3)
    assert cov.covered_bytes_fraction == pytest.approx(0.75)
    ind = cov.independent_flops
    assert ind is not None
    assert (ind.total_flops, ind.uncovered_flops, ind.covered_flops) == (1000, 300, 700)
    assert not ind.shortfall
    short = coverage_info(10, [], counted_flops=1_000, solar_flops=989.0)
    assert short.independent_flops is not None and short.independent_flops.shortfall


def test_cli_reference_budget_cuts_the_batch(
    conv_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli_helpers import run_cli

    from solar.report import Report

    r = run_cli(capsys, "analyze", str(conv_file), "--reference-budget", "0.16", "--format",
                "json", "-q")
    assert r.code == 0, r.err
    v = Report.model_validate_json(r.out).validation
    assert (v.status, v.strategy) == ("passed", "reduced-batch")
    bad = run_cli(capsys, "analyze", str(conv_file), "--reference-budget", "inf", "-q")
    assert bad.code == 2
    assert "E0905" in bad.err
