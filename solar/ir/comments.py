"""Canonical IR text that keeps the source's comments (``solar ir fmt``).

Contract: ``format_program(text, *, filename) -> str``: the text `print_program`
prints for ``parse_program(text)``, with every ``#`` comment of ``text`` put back
(Note [Comments in formatted IR]). ``parse_program`` of the result equals
``parse_program(text)``, and formatting is idempotent.

Note [Comments in formatted IR]: the grammar ignores comments (``%ignore COMMENT``),
so the AST has none; rather than threading them through every node, the formatter
pairs *anchors* (the header lines, each size and tensor declaration, kernel, local,
statement and closing brace) of the source with the same anchors of the printed
text, which parses to the same tree in the same order. A comment on a line of its
own goes just before the first anchor below it, at that anchor's indentation (a
comment before a closing brace stays inside the block); a comment after code on a
line stays at the end of that line's anchor; comments after the last anchor end the
text. The IR has no string literals, so ``#`` always starts a comment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from solar.diagnostics import Span
from solar.ir.nodes import Assign, For, If, Kernel, Program, Reduce, Stmt
from solar.ir.printer import INDENT, print_program

__all__ = ["format_program"]


@dataclass(frozen=True, slots=True)
class _Anchor:
    line: int  # 1-based line of the anchor in its text
    depth: int  # indentation level of the anchor's line
    closing: bool = False  # a block's `}`: comments above it are inside the block

    @property
    def inner_depth(self) -> int:
        """The indentation of a comment placed just above this anchor."""
        return self.depth + 1 if self.closing else self.depth


def _line_of(span: Span | None, *, end: bool = False) -> int:
    if span is None:  # every node the parser builds has a span
        raise ValueError("formatting needs a parsed program (with spans)")
    return span.source.line_col(max(span.end - 1, span.start) if end else span.start)[0]


def _stmt_anchors(stmt: Stmt, depth: int, out: list[_Anchor]) -> None:
    out.append(_Anchor(_line_of(stmt.span), depth))
    match stmt:
        case For(body=body) | If(body=body):
            for s in body:
                _stmt_anchors(s, depth + 1, out)
            out.append(_Anchor(_line_of(stmt.span, end=True), depth, closing=True))
        case Assign() | Reduce():
            pass
        case _:
            assert_never(stmt)


def _kernel_anchors(kernel: Kernel, out: list[_Anchor]) -> None:
    out.append(_Anchor(_line_of(kernel.span), 0))
    out += [_Anchor(_line_of(d.span), 1) for d in kernel.locals]
    for s in kernel.body:
        _stmt_anchors(s, 1, out)
    out.append(_Anchor(_line_of(kernel.span, end=True), 0, closing=True))


def _header_lines(text: str) -> list[_Anchor]:
    """The ``solar-ir`` and ``program`` lines: the first two lines holding code."""
    found: list[_Anchor] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.split("#", 1)[0].strip():
            found.append(_Anchor(number, 0))
            if len(found) == 2:
                break
    return found


def _anchors(program: Program, text: str) -> list[_Anchor]:
    out = _header_lines(text)
    out += [_Anchor(_line_of(s.span), 0) for s in program.sizes]
    out += [_Anchor(_line_of(t.span), 0) for t in program.tensors]
    for k in program.kernels:
        _kernel_anchors(k, out)
    return out


def format_program(text: str, *, filename: str = "<string>") -> str:
    """``text`` printed canonically, its comments kept (Note [Comments in formatted IR]).

    >>> print(format_program("solar-ir 1\\nprogram p  # demo\\n# sizes\\nsize N = 4\\n"), end="")
    solar-ir 1
    program p  # demo
    <BLANKLINE>
    # sizes
    size N = 4

    Raises:
        IRSyntaxError: ``text`` does not parse.
    """
    from solar.ir.parser import parse_program  # lark only when IR text is formatted

    program = parse_program(text, filename=filename)
    printed = print_program(program)
    source_anchors = _anchors(program, text)
    printed_anchors = _anchors(parse_program(printed, filename=filename), printed)
    # one printed anchor per source anchor, in the same order (same tree, same walk)
    pairs = list(zip(source_anchors, printed_anchors, strict=True))
    before: dict[int, list[str]] = {}  # printed line -> own-line comments above it
    after: dict[int, str] = {}  # printed line -> its trailing comment
    tail: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        code, hash_, comment = line.partition("#")
        if not hash_:
            continue
        comment = "#" + comment.rstrip()
        if code.strip():
            on_line = [p for s, p in pairs if s.line == number]
            target = on_line[0] if on_line else _last_above(pairs, number)
            if target is not None:
                known = after.get(target.line)
                after[target.line] = comment if known is None else f"{known} {comment}"
                continue
        below = next((p for s, p in pairs if s.line > number), None)
        if below is None:
            tail.append(comment)
        else:
            before.setdefault(below.line, []).append(INDENT * below.inner_depth + comment)
    lines: list[str] = []
    for number, line in enumerate(printed.splitlines(), start=1):
        lines += before.get(number, [])
        lines.append(f"{line}  {after[number]}" if number in after else line)
    return "\n".join(lines + tail) + "\n"


def _last_above(pairs: list[tuple[_Anchor, _Anchor]], number: int) -> _Anchor | None:
    """The printed anchor of the last source anchor starting above line ``number``."""
    above = [p for s, p in pairs if s.line < number]
    return above[-1] if above else None
