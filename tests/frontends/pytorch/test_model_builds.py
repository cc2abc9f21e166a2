"""Note [Model-file runs]: an analysis builds the model once per distinct size binding
and kind of tensors (meta or fake for a capture, real for the reference).

The builds are counted where every one of them happens (`loader._instantiate`; a spy
that calls through, so the analysis is the real one). A build of a prebuilt program
(the reference replaying the real build on copies of its inputs) builds no model and
is not counted.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from solar.frontends.pytorch import loader  # noqa: E402
from solar.pipeline import AnalyzeOptions, analyze  # noqa: E402

Build = tuple[str, tuple[tuple[str, int], ...]]


def _builds(
    monkeypatch: pytest.MonkeyPatch, path: Path, sizes: dict[str, int]
) -> tuple[list[Build], int]:
    """The builds of one analysis, and how many size constants the file has."""
    builds: list[Build] = []
    build = loader._instantiate

    def counted(source: loader.ProgramSource, *, fake_mode: Any, real_fallback: bool) -> Any:
        if source.target is None:
            kind = "real" if fake_mode is None else type(fake_mode).__name__
            builds.append((kind, tuple(sorted(source.overrides))))
        return build(source, fake_mode=fake_mode, real_fallback=real_fallback)

    monkeypatch.setattr(loader, "_instantiate", counted)
    report = analyze(path, AnalyzeOptions(archs=("H100_SXM",), sizes=sizes))
    assert report.validation.status == "passed"
    assert report.symbolic_sizes  # the re-captures at other sizes ran
    return builds, len(report.sizes)


@pytest.mark.parametrize(
    ("sample", "sizes", "captures"),
    [
        # meta cannot run it: the first binding is tried on meta, then built over fake
        # tensors; the re-captures go straight to fake tensors
        ("gpt_block", {"BATCH": 2, "SEQ": 8, "D_MODEL": 32, "HEADS": 4}, "FakeTensorMode"),
        ("bmm", {}, "MetaMode"),  # every capture on meta
    ],
)
def test_one_build_per_binding_and_kind(
    monkeypatch: pytest.MonkeyPatch, sample: str, sizes: dict[str, int], captures: str
) -> None:
    builds, constants = _builds(monkeypatch, SAMPLES / "torch" / f"{sample}.py", sizes)
    repeated = [b for b, n in Counter(builds).items() if n > 1]
    assert not repeated, f"built twice: {repeated}"
    kinds = Counter(kind for kind, _ in builds)
    assert kinds["real"] == 1  # the reference, at full size
    # the first capture, one per size constant at twice its value, and the check at 3x
    assert kinds[captures] == len({binding for _, binding in builds}) == 1 + constants + 1
    if captures == "FakeTensorMode":
        assert kinds["MetaMode"] == 1 and builds[0][0] == "MetaMode"
