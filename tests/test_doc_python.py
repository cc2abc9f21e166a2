"""Every ```` ```python ```` block of README.md and docs/*.md, run as a user would.

Convention: each block runs as its own script in a fresh interpreter (this one's
``python``), from the repository root, with this checkout first on ``PYTHONPATH``; it
passes when it exits 0. A block that is a fragment (it uses a ``model`` the prose
describes) gets its context from an HTML comment on the line right above the fence,
which readers of the rendered page do not see::

    <!-- doc-test setup:
    import torch
    model = torch.nn.Linear(1024, 1024)
    -->

A block that cannot run here says why in the same place (``<!-- doc-test skip: needs a
SLURM cluster -->``); signature listings are ```` ```text ````, not ``python``. A block
whose imports (its setup's included) are not installed is skipped, naming the module, so
the core suite without torch/jax skips them.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
TIMEOUT_S = 300.0
_SETUP = re.compile(r"<!-- doc-test setup:\n(?P<code>(?:(?!-->).)*?)-->\n$", re.DOTALL)
_SKIP = re.compile(r"<!-- doc-test skip: (?P<reason>[^\n]+?) -->\n$")
_FENCE = re.compile(r"^```python\n(?P<code>.*?)^```$", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Block:
    """One ``python`` block: where it is, its code, the setup above it, or why it is not run."""

    where: str  # "docs/x.md:12" (line of the fence)
    code: str
    setup: str = ""
    skip: str = ""

    @property
    def script(self) -> str:
        return self.setup + self.code

    def imports(self) -> set[str]:
        """The top-level modules the script imports."""
        names: set[str] = set()
        for node in ast.walk(ast.parse(self.script)):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
        return names


def parse_blocks(path: Path) -> list[Block]:
    """The ``python`` blocks of one Markdown file, with their setup or skip comments."""
    text = path.read_text(encoding="utf-8")
    blocks: list[Block] = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()]
        line = before.count("\n") + 1
        setup, skip = _SETUP.search(before), _SKIP.search(before)
        blocks.append(
            Block(
                where=f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line}",
                code=match.group("code"),
                setup=setup.group("code") if setup else "",
                skip=skip.group("reason") if skip else "",
            )
        )
    return blocks


BLOCKS = [block for doc in DOCS for block in parse_blocks(doc)]


def _marks(block: Block) -> list[pytest.MarkDecorator]:
    imports, script = block.imports(), block.script
    marks = []
    if imports & {"torch", "torchvision", "transformers", "timm"} or "samples/torch/" in script:
        marks.append(pytest.mark.torch)
    if imports & {"jax", "flax", "equinox"} or "jaxfe" in script or "samples/jax/" in script:
        marks.append(pytest.mark.jax)
    return marks


def test_docs_have_python_blocks_and_few_are_not_run() -> None:
    assert len(BLOCKS) >= 8
    skipped = [b for b in BLOCKS if b.skip]
    assert len(skipped) <= 2, [b.where for b in skipped]
    for block in BLOCKS:
        ast.parse(block.script, filename=block.where)  # a python block is python


def test_setup_and_skip_comments_are_recognised(tmp_path: Path) -> None:
    doc = (
        "<!-- doc-test setup:\nx = 1\n-->\n```python\nprint(x)\n```\n\n"
        "<!-- doc-test skip: needs a cluster -->\n```python\nimport dask\n```\n"
    )
    path = tmp_path / "probe.md"
    path.write_text(doc, encoding="utf-8")
    first, second = parse_blocks(path)
    assert (first.setup, first.code, first.skip) == ("x = 1\n", "print(x)\n", "")
    assert (second.setup, second.skip, second.imports()) == ("", "needs a cluster", {"dask"})


@pytest.mark.parametrize(
    "block", [pytest.param(b, id=b.where, marks=_marks(b)) for b in BLOCKS]
)
def test_python_block_runs(block: Block) -> None:
    if block.skip:
        pytest.skip(block.skip)
    missing = sorted(m for m in block.imports() if importlib.util.find_spec(m) is None)
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-c", block.script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, f"{block.where} exited {done.returncode}:\n{done.stderr[-3000:]}"
