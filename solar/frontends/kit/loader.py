"""Import the user's program file, for every frontend that runs one.

Contract: ``path -> types.ModuleType``. `import_model_file` executes the file as a fresh
module (a unique module name, so two runs never share state; Note [Model-file runs] in
`solar.frontends.protocol`), with its folder on ``sys.path`` (so its sibling imports
work), then rebinds the module-level size constants the caller overrides
(`module_int_constants` reads them back). Exceptions the file itself raises go through
the frontend's own ``user_code`` guard, so each frontend keeps its error codes and
messages; `user_frames` and `raised_by_solar` are what those guards share (the user's
part of a traceback, and whether SOLAR raised it).
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import sys
import traceback
import types
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

from solar.diagnostics import FrontendError

__all__ = [
    "UserCode",
    "import_model_file",
    "module_int_constants",
    "raised_by_solar",
    "user_frames",
    "user_stdout_to_stderr",
]

UserCode = Callable[[str], AbstractContextManager[None]]
"""A frontend's guard around user code: ``with user_code("importing m.py"): ...``."""

_SOLAR_DIR = str(Path(__file__).resolve().parents[2])
_counter = itertools.count()


def import_model_file(
    path: str | Path,
    *,
    kind: str,
    code: str,
    user_code: UserCode,
    overrides: Iterable[tuple[str, int]] = (),
) -> types.ModuleType:
    """Execute a program file as a fresh module and rebind its size constants.

    Args:
        path: the ``.py`` file.
        kind: what the frontend calls the file in messages (``"model file"``...).
        code: the frontend's error code for a file that is missing or not importable.
        user_code: the frontend's guard, around the execution of the file.
        overrides: ``(name, value)`` module-level constants to set once the file ran.

    Returns:
        The module.

    Raises:
        FrontendError: ``code`` if the file is missing, not ``.py`` or not importable;
            whatever ``user_code`` raises for an exception of the file itself.
    """
    path = Path(path)
    if not path.is_file() or path.suffix != ".py":
        raise FrontendError(f"{kind} {path} does not exist or is not a .py file", code=code)
    name = f"solar_user_{path.stem}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise FrontendError(f"cannot import {path}", code=code)
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.modules[name] = module
    with user_code(f"importing {path.name}"):
        spec.loader.exec_module(module)
    for key, value in overrides:
        setattr(module, key, value)
    return module


def module_int_constants(module: types.ModuleType) -> dict[str, int]:
    """Public module-level ``int`` constants (the program's sizes; bools are not sizes)."""
    return {k: v for k, v in vars(module).items() if type(v) is int and not k.startswith("_")}


def user_frames(err: BaseException) -> tuple[str, ...]:
    """The last three frames of ``err``'s traceback that are the user's code, as notes.

    Frames of SOLAR and of installed packages are left out.
    """
    frames = traceback.extract_tb(err.__traceback__)
    keep = [
        f
        for f in frames
        if not f.filename.startswith(_SOLAR_DIR) and "site-packages" not in f.filename
    ]
    return tuple(
        f"at {f.filename}:{f.lineno} in {f.name}: {(f.line or '').strip()}" for f in keep[-3:]
    )


def raised_by_solar(err: BaseException) -> bool:
    """True when ``err`` was raised in SOLAR's own code (a bug, not the user's fault)."""
    frames = traceback.extract_tb(err.__traceback__)
    return bool(frames) and frames[-1].filename.startswith(_SOLAR_DIR)


@contextlib.contextmanager
def user_stdout_to_stderr() -> Iterator[None]:
    """While user code runs, send what it prints to stderr.

    Note [User output]: SOLAR's stdout carries data only (``--format json``, tables), so
    a model's own ``print`` must not land in it. Every place that runs user code (the
    frontends' ``user_code`` guards, `solar.measure`, the CLI around library calls)
    uses this one helper. Only Python-level writes to ``sys.stdout`` are redirected;
    native code writing to file descriptor 1 directly is not.
    """
    with contextlib.redirect_stdout(sys.stderr):
        yield
