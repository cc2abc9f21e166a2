"""docs/report_reading.md reads the README's first session piece by piece: each excerpt
of the summary it shows must be a run of consecutive lines of that session's output as
README.md shows it (which tests/test_readme.py checks against a real run), so the page
never explains a line the tool no longer prints (its validation line said `full, 1.62 s`
after the README's had become `reduced-sizes`)."""

from __future__ import annotations

from conftest import ROOT
from test_readme import normalise, parse_examples

READING = ROOT / "docs" / "report_reading.md"
FIRST_SESSION = "solar analyze examples/kernelbench_mlp.py --set BATCH=512 --set DIM=2048"


def _session_lines() -> list[str]:
    example = next(
        e for e in parse_examples((ROOT / "README.md").read_text(encoding="utf-8"))
        if e.command == FIRST_SESSION
    )  # fmt: skip
    return normalise(example.expected).splitlines()


def excerpts() -> list[list[str]]:
    """The summary excerpts of report_reading.md: plain blocks that begin like a summary."""
    blocks: list[str] = []
    body: list[str] | None = None
    for line in READING.read_text(encoding="utf-8").splitlines():
        if body is None and line.startswith("```"):
            body = [] if line == "```" else None if line.startswith("````") else ["\0"]
        elif body is not None and line == "```":
            if not body or body[0] != "\0":  # a labelled block (```sh) is no excerpt
                blocks.append("".join(f"{x}\n" for x in body))
            body = None
        elif body is not None:
            body.append(line)
    starts = ("SOLAR ", "NVIDIA ", "  next steps:")
    return [normalise(b).splitlines() for b in blocks if b.startswith(starts)]


def _is_run_of(part: list[str], whole: list[str]) -> bool:
    return any(whole[i : i + len(part)] == part for i in range(len(whole) - len(part) + 1))


def test_the_page_quotes_the_first_session() -> None:
    assert FIRST_SESSION in READING.read_text(encoding="utf-8")
    found = excerpts()
    assert len(found) == 3, "the header, the bounds table and the next steps"
    session = _session_lines()
    for part in found:
        assert _is_run_of(part, session), (
            "docs/report_reading.md quotes lines the README's first session no longer prints "
            f"in this order: {part}"
        )


def test_a_changed_line_is_caught() -> None:
    session = _session_lines()
    header = excerpts()[0]
    stale = [line.replace("reduced-sizes", "full") for line in header]
    assert _is_run_of(header, session)
    assert not _is_run_of(stale, session)
