"""Which files a batch analyses.

Contract: ``directory or glob -> sorted files`` (`expand_sources`) and
``file -> bool`` (`is_model_file`), both without running any of the user's code.

Note [Model files]
~~~~~~~~~~~~~~~~~~
A folder of models often holds helper modules too (``helpers.py``, ``layers.py``)
that the models import. Analysing those fails (they define no program) and would count
as failures, so a batch *skips* them, by a static rule on the file's syntax tree:

* an ``.alir`` file is always analysed;
* a ``.py`` file is analysed when its module level (including inside top-level
  ``if``/``try``/``with`` blocks, not inside functions or classes) binds ``Model`` or
  ``get_inputs``, or the ``--entry`` function's name, by a ``def``, a ``class``, an
  assignment or an import; a ``from m import *`` counts as binding them (it may);
* a ``.py`` file that does not parse, or is larger than `MAX_PARSE_BYTES`, is
  analysed, and then fails with its own diagnostic: a broken model is a failure, not
  a helper.

Every other ``.py`` file is a helper: its rows say ``skipped`` and it is not counted
as a failure. JAX files define ``f`` *and* ``get_inputs``, so ``get_inputs`` finds them.
"""

from __future__ import annotations

import ast
import glob
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from solar.diagnostics import UsageError

__all__ = ["MAX_PARSE_BYTES", "MODEL_NAMES", "expand_sources", "is_model_file", "skip_reason"]

MODEL_NAMES: Final = frozenset({"Model", "get_inputs"})
MAX_PARSE_BYTES: Final = 8 << 20
_SUFFIXES: Final = (".py", ".alir")
_BLOCKS = (ast.If, ast.Try, ast.TryStar, ast.With, ast.For, ast.While)


def expand_sources(spec: str) -> list[Path]:
    """A directory (its ``*.py``/``*.alir`` files, recursively) or a glob, sorted.

    Inside a directory, files whose name starts with ``_`` or ``.``, and everything in
    folders named ``.*`` or ``cache``, are left out (``__init__.py``, ``.venv``, LLM caches).

    Raises:
        UsageError: nothing matched (E0930).
    """
    path = Path(spec)
    if path.is_dir():
        files = [
            p
            for p in path.rglob("*")
            if p.suffix in _SUFFIXES and not _hidden(p.relative_to(path).parts)
        ]
    else:
        files = [Path(p) for p in glob.glob(spec, recursive=True)]
        files = [p for p in files if p.suffix in _SUFFIXES]
    files = sorted(p for p in files if p.is_file())
    if not files:
        raise UsageError(f"no model or IR files match `{spec}`", code="E0930")
    return files


def _hidden(parts: tuple[str, ...]) -> bool:
    """``_x.py``, anything under a ``.folder``, anything under a ``cache`` folder."""
    return (
        parts[-1].startswith(("_", "."))
        or any(p.startswith(".") for p in parts)
        or "cache" in parts[:-1]
    )


def _bound_names(body: list[ast.stmt]) -> Iterator[str]:
    """Names bound at module level (``*`` for a star import)."""
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield stmt.name
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        yield node.id
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            for alias in stmt.names:
                yield alias.asname or alias.name.split(".")[0]
        elif isinstance(stmt, _BLOCKS):
            for block in ("body", "orelse", "finalbody"):
                yield from _bound_names(getattr(stmt, block, []))
            for handler in getattr(stmt, "handlers", []):
                yield from _bound_names(handler.body)


def skip_reason(path: Path, *, entry: str | None = None) -> str | None:
    """Why ``path`` is not a model file (Note [Model files]), or ``None`` if it is one."""
    if path.suffix != ".py":
        return None
    try:
        if path.stat().st_size > MAX_PARSE_BYTES:
            return None
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError, RecursionError):
        return None  # analysed: it fails there with its own diagnostic
    wanted = set(MODEL_NAMES)
    if entry:
        wanted.add(entry.rsplit(":", 1)[-1])
    names = set(_bound_names(tree.body))
    if "*" in names or names & wanted:
        return None
    listed = ", ".join(f"`{n}`" for n in sorted(wanted))
    return f"not a model file: defines none of {listed} (a helper module)"


def is_model_file(path: Path, *, entry: str | None = None) -> bool:
    """True when a batch analyses ``path`` (Note [Model files]).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "helpers.py").write_text("N = 4\\ndef block(x):\\n    return x\\n")
    >>> _ = (d / "model.py").write_text("from helpers import N\\ndef get_inputs(): ...\\n")
    >>> is_model_file(d / "helpers.py"), is_model_file(d / "model.py")
    (False, True)
    >>> is_model_file(d / "helpers.py", entry="block")
    True
    """
    return skip_reason(path, entry=entry) is None
