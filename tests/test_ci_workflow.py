"""docs/ci.md's GitHub Actions workflow, run as written (issue 31, dead end 4).

The ``run:`` commands of the workflow's steps are read from docs/ci.md and run in a
scratch checkout holding ``models/my_model.py``, with two substitutions only: the
``git fetch``/``git show`` of the main branch's copy becomes a copy of an older
version of the model to ``base_model.py`` (under the scratch folder instead of
``/tmp``), and ``solar`` is this checkout's ``python -m solar``. The baseline is thus
analysed from a file of another name, which the gate refused (E0711) even with
``--allow-input-change``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, SAMPLES

pytestmark = [pytest.mark.torch, pytest.mark.slow]

CI_DOC = ROOT / "docs" / "ci.md"


def workflow_steps() -> dict[str, str]:
    """``{step name: its run: script}`` of the first ```yaml block of docs/ci.md."""
    block = re.search(r"```yaml\n(.*?)```", CI_DOC.read_text(), re.DOTALL)
    assert block is not None, "docs/ci.md has no yaml block"
    job = next(iter(yaml.safe_load(block.group(1))["jobs"].values()))
    return {s["name"]: s["run"] for s in job["steps"] if "run" in s and "name" in s}


def _as_here(script: str, base: Path) -> list[list[str]]:
    """The script's commands, continuation lines joined, with the two substitutions."""
    commands = []
    for line in script.replace("\\\n", " ").splitlines():
        words = shlex.split(line)
        if not words or words[:2] == ["git", "fetch"] or words[:1] == ["python"]:
            continue  # fetching main, installing SOLAR: this checkout is installed
        if words[:2] == ["git", "show"]:
            continue  # the main branch's copy: written to `base` by the test
        words = [w.replace("/tmp/base_model.py", str(base)) for w in words]
        assert words[0] == "solar", line
        commands.append([sys.executable, "-m", "solar", *words[1:]])
    return commands


def test_the_documented_workflow_passes(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("matplotlib")
    model = (SAMPLES / "torch" / "bmm.py").read_text()
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "my_model.py").write_text(model + "\n# this change: a comment\n")
    base = tmp_path / "base_model.py"  # the main branch's copy, under another name
    base.write_text(model)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    steps = workflow_steps()
    assert {"Baseline report from the main branch", "Analyse and measure this change"} <= set(
        steps
    )
    for name, script in steps.items():
        if name == "Install SOLAR":
            continue
        for argv in _as_here(script, base):
            proc = subprocess.run(
                argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
                check=False,
            )  # fmt: skip
            assert proc.returncode == 0, (name, argv, proc.stdout, proc.stderr)
            assert "Traceback" not in proc.stderr, proc.stderr
    for artefact in ("report.json", "base.json", "my_model.alir", "roofline.png",
                     "solar-junit.xml"):  # fmt: skip
        assert (tmp_path / artefact).is_file(), artefact
    assert "failures=\"0\"" in (tmp_path / "solar-junit.xml").read_text()
