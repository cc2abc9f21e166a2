"""The README's commands, run: each fails when its output no longer matches the README.

Convention: in README.md, a fenced block opened with ```` ```console ```` holds
examples; a line starting with ``$ `` is a command, and the lines after it (up to
the next ``$ `` line or the closing fence) are its expected output, stdout and stderr
together as a terminal shows them. A last line ``[exit N]`` records a non-zero exit
status. Commands run with ``bash`` from the repository root, with this interpreter's
``bin/`` (the project's ``.venv``) first on ``PATH``; keep each one under ~15 s.

Only what legitimately varies is masked before comparing (`normalise`): stage
timings, validation wall time and error, the version and the repository's absolute
path. Bound numbers are never masked.

After an intended change (sample sizes, summary layout), rewrite the expected
outputs from real runs and review the diff::

    .venv/bin/python -m tests.test_readme --update
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
OPEN_FENCE = "```console"
CLOSE_FENCE = "```"
PROMPT = "$ "
TIMEOUT_S = 120.0

_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^\[\s*\d+\.\ds\]", re.MULTILINE), "[ <t>s]"),  # stage progress
    (re.compile(r"max abs err [-+.\deE]+"), "max abs err <err>"),  # validation, not a bound
    (re.compile(r", \d+\.\d+ s\)"), ", <t> s)"),  # validation wall time
    (re.compile(r"\b(SOLAR|solar) \d+\.\d+\.\d+\S*"), r"\1 <version>"),
)


@dataclass(frozen=True)
class Example:
    """One ``$ command`` of a console block and the output the README shows for it."""

    line: int  # 1-based line of the command in README.md
    command: str
    expected: str

    @property
    def needs_torch(self) -> bool:
        """A model file (.py) needs PyTorch or JAX; IR files and specs do not."""
        return ".py" in self.command


def parse_examples(text: str) -> list[Example]:
    """Every command of every ``console`` block of ``text``, in order."""
    examples: list[Example] = []
    in_block = False
    command: tuple[int, str] | None = None
    output: list[str] = []

    def close() -> None:
        nonlocal command
        if command is not None:
            examples.append(Example(command[0], command[1], "".join(f"{o}\n" for o in output)))
        command = None
        output.clear()

    for number, line in enumerate(text.splitlines(), start=1):
        if not in_block:
            in_block = line.strip() == OPEN_FENCE
        elif line.strip() == CLOSE_FENCE:
            close()
            in_block = False
        elif line.startswith(PROMPT):
            close()
            command = (number, line[len(PROMPT) :])
        elif command is not None:
            output.append(line)
    return examples


def run_example(command: str) -> str:
    """The command's stdout and stderr as a terminal shows them, then ``[exit N]`` if N != 0."""
    env = dict(os.environ)
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        COLUMNS="120",
        PYTHONUNBUFFERED="1",  # the streams interleave as on a terminal
        NO_COLOR="1",
        TERM="dumb",
    )
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    out = done.stdout if done.stdout.endswith("\n") or not done.stdout else done.stdout + "\n"
    return out + (f"[exit {done.returncode}]\n" if done.returncode else "")


def normalise(text: str) -> str:
    """``text`` with only the legitimately variable parts masked (module docstring)."""
    text = text.replace(str(ROOT) + os.sep, "").replace(str(ROOT), ".")
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines()) + "\n"


def update(text: str) -> str:
    """``text`` with every console example's output replaced by a fresh run's, where it
    differs by more than what `normalise` masks."""
    lines = text.splitlines()
    examples = parse_examples(text)
    # from the last example up, so earlier line numbers stay valid
    for example in reversed(examples):
        start = example.line  # index of the line after the command (0-based)
        end = start + len(example.expected.splitlines())
        fresh = run_example(example.command)
        if normalise(fresh) == normalise(example.expected):
            continue  # only timings moved: keep the README's text (no churn in diffs)
        lines[start:end] = [line.rstrip() for line in fresh.rstrip("\n").splitlines()]
    return "\n".join(lines) + "\n"


EXAMPLES = parse_examples(README.read_text(encoding="utf-8"))


def test_the_readme_has_examples() -> None:
    assert len(EXAMPLES) >= 5
    assert all(e.command.startswith("solar ") for e in EXAMPLES), "README examples run solar"


@pytest.mark.readme
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: f"L{e.line}:{e.command[:60]}")
def test_readme_command_prints_what_the_readme_shows(example: Example) -> None:
    if example.needs_torch and importlib.util.find_spec("torch") is None:
        pytest.skip("needs PyTorch")
    actual = normalise(run_example(example.command))
    assert actual == normalise(example.expected), (
        f"README.md:{example.line}: `{example.command}` prints something else now; "
        "if that is intended, run `.venv/bin/python -m tests.test_readme --update`"
    )


def test_normalise_masks_timings_but_never_bounds() -> None:
    text = (
        "[   1.2s] loading x\nvalidation: PASSED (full, max abs err 2.98e-08, 0.07 s)\n"
        "  fused            167.2 ns      50.9 ns     167.2 ns\nSOLAR 0.1.0 — x\n"
    )
    out = normalise(text)
    assert "[ <t>s] loading x" in out and "max abs err <err>, <t> s)" in out
    assert "167.2 ns      50.9 ns" in out and "SOLAR <version>" in out


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.test_readme [--update]``: check (or rewrite) the README's outputs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="rewrite the expected outputs")
    args = parser.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    if args.update:
        README.write_text(update(text), encoding="utf-8")
        print(f"updated {len(parse_examples(text))} example(s) in {README}")
        return 0
    examples = parse_examples(text)
    stale = [e for e in examples if normalise(run_example(e.command)) != normalise(e.expected)]
    for e in stale:
        print(f"README.md:{e.line}: `{e.command}` output differs", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
