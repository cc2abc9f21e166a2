"""Locate the Lark grammars and build the one cached LALR parser.

Contract: `ir_parser()` returns the same `Lark` instance every call. Grammars are
data in the top-level ``grammars/`` directory (source tree, editable installs) or
in ``solar/grammars`` inside a wheel (force-included at build time).
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lark import Lark

__all__ = ["GRAMMAR_FILE", "grammar_dir", "grammar_text", "ir_parser"]

GRAMMAR_FILE = "affine_ir.lark"


def grammar_dir() -> Path:
    """Return the directory holding ``affine_ir.lark``.

    The source tree wins (editable installs cannot see force-included files);
    otherwise the copy packaged inside the wheel.
    """
    source_tree = Path(__file__).resolve().parents[2] / "grammars"
    if (source_tree / GRAMMAR_FILE).is_file():
        return source_tree
    return Path(str(resources.files("solar") / "grammars"))


def grammar_text() -> str:
    """The IR grammar source (used by the LLM prompt and the docs)."""
    return (grammar_dir() / GRAMMAR_FILE).read_text(encoding="utf-8")


@functools.cache
def ir_parser() -> Lark:
    """Build (once) the strict LALR parser for the Affine Loop IR."""
    from lark import Lark  # imported here: a torch or jax analysis never parses IR text

    return Lark.open(
        str(grammar_dir() / GRAMMAR_FILE),
        start="program",
        parser="lalr",
        propagate_positions=True,
        maybe_placeholders=False,
        strict=True,
        cache=False,
    )
