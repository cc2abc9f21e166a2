"""Capture on the meta device records what the FakeTensor capture records (Note [Meta capture]).

For every sample in samples/torch the meta capture, when accepted, must lower to the
very IR the FakeTensor capture lowers to; programs whose eager implementation depends
on the device (fused CPU attention, mkldnn RNNs, transformer fast paths, tensors made
from Python data in the forward) must fall back to FakeTensors. A subprocess checks
the point of it all: a meta capture does not import ``torch._dynamo`` and leaves
torch's ``_disable_dynamo`` wrappers as it found them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from solar.frontends.pytorch import capture as capture_mod
from solar.frontends.pytorch import lower_capture
from solar.frontends.pytorch.capture import capture_program
from solar.frontends.pytorch.loader import source_for_file
from solar.ir import print_program

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "torch"
ALL_SAMPLES = sorted(p.stem for p in SAMPLES.glob("*.py") if not p.stem.startswith("dist_"))
"""The dist_*.py samples need a process group: test_torch_distributed.py captures them."""
FALLS_BACK = {
    "sdpa": "aten._scaled_dot_product_flash_attention_for_cpu.default",
    "mha": "aten._scaled_dot_product_flash_attention_for_cpu.default",  # fast path off
    "transformer_encoder": "aten._scaled_dot_product_flash_attention_for_cpu.default",
    "inplace_ops": "aten.lift_fresh.default",  # x[:, 0] = 0.0 lifts a CPU constant
    "l2_convtranspose_add_min_gelu": "aten.lift_fresh.default",  # torch.tensor(0.0)
    "gpt_block": "aten._scaled_dot_product_flash_attention_for_cpu.default",
    "sdpa_masked_gqa": "aten._scaled_dot_product_flash_attention_for_cpu.default",
}
"""Samples captured on FakeTensors, with a call only the CPU path records (if any)."""


def _fake_capture(name: str, monkeypatch: pytest.MonkeyPatch) -> capture_mod.TorchCapture:
    with monkeypatch.context() as m:
        m.setattr(capture_mod, "_capture_on_meta", lambda source, **_: (None, None))
        return capture_program(source_for_file(SAMPLES / f"{name}.py"))


@pytest.mark.parametrize("name", ALL_SAMPLES)
def test_meta_capture_lowers_to_the_fake_capture_ir(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    meta, _ = capture_mod._capture_on_meta(source_for_file(SAMPLES / f"{name}.py"))
    if name in FALLS_BACK:
        assert meta is None
        return
    assert meta is not None, "meta capture rejected: list the sample in FALLS_BACK"
    fake = _fake_capture(name, monkeypatch)
    assert [c.target for c in meta.calls] == [c.target for c in fake.calls]
    assert print_program(lower_capture(meta).program) == print_program(lower_capture(fake).program)


@pytest.mark.parametrize(("name", "target"), sorted((k, v) for k, v in FALLS_BACK.items() if v))
def test_device_dependent_programs_are_captured_as_on_cpu(
    name: str, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The meta build is captured over fake tensors without building it again (Note
    [Model-file runs]), and gives what a fresh fake build gives."""
    capture = capture_program(source_for_file(SAMPLES / f"{name}.py"))
    assert target in {c.target for c in capture.calls}
    assert not capture.info.used_real_values
    fresh = _fake_capture(name, monkeypatch)
    assert print_program(lower_capture(capture).program) == print_program(
        lower_capture(fresh).program
    )


_NO_DYNAMO = """
import gc, sys
from solar.frontends.pytorch import lower_capture, trace_model_file
cap = trace_model_file(sys.argv[1])
assert lower_capture(cap).coverage == ()
assert "torch._dynamo" not in sys.modules, "meta capture imported torch._dynamo"
import torch._compile as tc
code = tc._disable_dynamo(lambda: None).__code__
slot = code.co_freevars.index("fn")
left = [
    o for o in gc.get_objects()
    if type(o).__name__ == "function" and o.__code__ is code and o.__closure__
    and getattr(o.__closure__[slot].cell_contents, "__dynamo_disable", None)
    is o.__closure__[slot].cell_contents
]
assert not left, f"{len(left)} _disable_dynamo caches left patched"
"""


def test_meta_capture_does_not_import_dynamo_and_restores_torch() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _NO_DYNAMO, str(SAMPLES / "l3_mobilenetv2_block.py")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


_SPLIT_MODEL = """\
import torch, torch.nn as nn
D = 8
class Model(nn.Module):
    def forward(self, x):
        a, b = torch.split(x, [3, 5], dim=-1)  # D = 16 breaks the split: a shape error
        return a.sum(-1) + b.sum(-1)
def get_inputs():
    return [torch.randn(4, D)]
"""

_RECAPTURES = """
import sys
from solar.pipeline import AnalyzeOptions, analyze
from pathlib import Path
report = analyze(Path(sys.argv[1]), AnalyzeOptions(archs=("H100_SXM",), validate="off"))
assert report.coverage.complete
assert "torch._dynamo" not in sys.modules, "a failed re-capture fell back to fake tensors"
"""


def test_a_recapture_that_fails_on_meta_stays_there(tmp_path: Path) -> None:
    # Note [Meta re-captures]: doubling D breaks the split on meta; the fake path would
    # fail the same way after importing torch._dynamo (about 0.7 s)
    model = tmp_path / "split.py"
    model.write_text(_SPLIT_MODEL)
    proc = subprocess.run(
        [sys.executable, "-c", _RECAPTURES, str(model)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
