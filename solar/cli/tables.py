"""Plain data tables on stdout, drawn by rich (``solar bounds``, ``solar specs list``).

Contract: `print_table(headers, rows)` writes one table to stdout: a header row, a rule,
then the rows; no colour and no wrapping, whatever the terminal (a pipe or a CI log gets
the same text), so the output can be read by eye and by ``grep``/``awk`` alike.
Numeric columns (headers ending in ``>``) are right-aligned.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["print_table"]


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Print ``rows`` under ``headers``; a header ``"bound>"`` right-aligns its column."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style=None)
    for header in headers:
        numeric = header.endswith(">")
        table.add_column(
            header.removesuffix(">"), justify="right" if numeric else "left", no_wrap=True
        )
    for row in rows:
        table.add_row(*row)
    console = Console(
        file=sys.stdout, width=10_000, color_system=None, highlight=False, markup=False
    )
    with console.capture() as captured:
        console.print(table)
    lines = (line.rstrip() for line in captured.get().splitlines())
    sys.stdout.write("\n".join(lines) + "\n")
