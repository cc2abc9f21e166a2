"""Note [Model-file runs]: an analysis builds the model once per distinct size binding
(over meta or fake tensors for a capture), plus one real build for the reference.

The builds are counted where every one of them happens (`loader._instantiate`; a spy
that calls through, so the analysis is the real one). A build of a prebuilt program
(the reference replaying the real build on copies of its inputs, its float64 copy)
builds no model and is not counted. The model's own side effects (a file it appends
to from its constructor and its forward) are counted too, for ``analyze`` and
``--measure``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import SAMPLES

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from solar.frontends.protocol import FrontendOptions  # noqa: E402
from solar.frontends.pytorch import loader  # noqa: E402
from solar.frontends.pytorch.frontend import TorchFrontend  # noqa: E402
from solar.pipeline import AnalyzeOptions, analyze  # noqa: E402

Build = tuple[str, tuple[tuple[str, int], ...]]


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[Build]:
    """Every model build from now on: (kind of tensors, size binding)."""
    builds: list[Build] = []
    build = loader._instantiate

    def counted(source: loader.ProgramSource, *, fake_mode: Any, real_fallback: bool) -> Any:
        if source.target is None:
            kind = "real" if fake_mode is None else type(fake_mode).__name__
            builds.append((kind, tuple(sorted(source.overrides))))
        return build(source, fake_mode=fake_mode, real_fallback=real_fallback)

    monkeypatch.setattr(loader, "_instantiate", counted)
    return builds


@pytest.mark.parametrize(
    ("sample", "sizes", "captures"),
    [
        # meta cannot run its attention: the meta build of the first binding is captured
        # over fake tensors without building it again; the re-captures go straight to
        # fake tensors (gpt_block: 19 builds, then 11, then 8, now 7)
        ("gpt_block", {"BATCH": 2, "SEQ": 8, "D_MODEL": 32, "HEADS": 4}, "FakeTensorMode"),
        ("bmm", {}, "MetaMode"),  # every capture on meta
    ],
)
def test_one_build_per_binding(
    monkeypatch: pytest.MonkeyPatch, sample: str, sizes: dict[str, int], captures: str
) -> None:
    builds = _spy(monkeypatch)
    path = SAMPLES / "torch" / f"{sample}.py"
    report = analyze(path, AnalyzeOptions(archs=("H100_SXM",), sizes=sizes))
    assert report.validation.status == "passed"
    assert report.symbolic_sizes  # the re-captures at other sizes ran
    constants = len(report.sizes)
    captured = [b for b in builds if b[0] != "real"]
    bindings = {binding for _, binding in captured}
    # the first capture, one per size constant at twice its value, and the check at 3x
    assert len(captured) == len(bindings) == 1 + constants + 1, captured
    assert builds[0][0] == "MetaMode"
    assert Counter(kind for kind, _ in captured)[captures] == len(captured) - (
        captures != "MetaMode"
    )
    assert [b for b in builds if b[0] == "real"] == [("real", builds[0][1])]  # the reference
    assert len(builds) == 1 + constants + 1 + 1


SIDE_EFFECTS = """\
import torch

N = 8
LOG = {log!r}


def _log(what):
    with open(LOG, "a") as f:
        f.write(f"{{what}} N={{N}}\\n")


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        _log("init")
        self.fc = torch.nn.Linear(N, N)

    def forward(self, x):
        _log("forward")
        return torch.relu(self.fc(x))


def get_inputs():
    return [torch.randn(4, N)]
"""


def _runs(tmp_path: Path, **options: Any) -> Counter[str]:
    log = tmp_path / "runs.log"
    log.unlink(missing_ok=True)
    path = tmp_path / "side_effects.py"
    path.write_text(SIDE_EFFECTS.format(log=str(log)))
    report = analyze(path, AnalyzeOptions(archs=("H100_SXM",), **options))
    assert report.validation.status == "passed"
    return Counter(log.read_text().splitlines())


def test_the_model_runs_once_per_binding_and_kind(tmp_path: Path) -> None:
    """Issue 30: the constructor (and a forward with it) runs once per capture binding
    (N=8 first, N=16 for the formula, N=24 to check it) and once for the reference."""
    runs = _runs(tmp_path)
    assert runs == Counter({
        "init N=8": 2, "forward N=8": 2,  # the capture (meta) and the reference
        "init N=16": 1, "forward N=16": 1,
        "init N=24": 1, "forward N=24": 1,
    })  # fmt: skip


def test_measure_builds_nothing_more(tmp_path: Path) -> None:
    """``--measure`` times the reference's build: no constructor runs again; its forward
    runs as often as timing needs it (warm-up, trials and the profiled run)."""
    plain = _runs(tmp_path)
    measured = _runs(tmp_path, measure=True)
    inits = {k: v for k, v in measured.items() if k.startswith("init")}
    assert inits == {k: v for k, v in plain.items() if k.startswith("init")}
    assert measured["forward N=16"] == plain["forward N=16"]
    assert measured["forward N=8"] > plain["forward N=8"]  # the timing runs


def test_the_float64_copy_is_the_reference_build_in_float64(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Note [Float64 re-check]: the float64 run takes a float64 copy of the reference's
    own build (nothing was written in it) instead of building the model again, and
    gives what a fresh float64 build gives."""
    from dataclasses import replace

    from solar.frontends.pytorch.capture import TorchCapture
    from solar.frontends.pytorch.driver import lower_capture
    from solar.frontends.pytorch.plans import _float64_values
    from solar.frontends.pytorch.trace import trace_model_file

    path = SAMPLES / "torch" / "linear_gelu.py"
    result = TorchFrontend().load(path, FrontendOptions(), progress=lambda _: None)
    assert result.reference is not None
    plan = result.reference()
    assert plan.strategy == "full" and plan.float64 is not None
    builds = _spy(monkeypatch)
    wide = plan.float64()
    assert builds == []  # no model built: the reference's, copied
    assert all(a.dtype != np.float32 for a in wide.outputs.values())
    monkeypatch.undo()

    capture: TorchCapture = trace_model_file(path)
    fresh = replace(capture, source=replace(capture.source, float64=True))
    fresh_inputs, fresh_outputs = _float64_values(lower_capture(capture), fresh, 1 << 30)
    for name, value in fresh_outputs.items():
        np.testing.assert_array_equal(wide.outputs[name], value)
    for name, value in fresh_inputs.items():
        np.testing.assert_array_equal(wide.inputs[name], value)
