"""Import the user's program file, for every frontend that runs one.

Contract: ``path -> types.ModuleType``. `import_model_file` executes the file as a fresh
module (a unique module name; Note [Model-file runs] in `solar.frontends.protocol`) the
first time, and hands that module back for every later build of the same file, its
constants rebound, where that is exact (Note [One import per file]); with its folder on
``sys.path`` (so its sibling imports
work), with the module-level size constants the caller overrides rebound *where they
are assigned* (Note [Rebinding sizes]; `module_int_constants` reads them back). An
override that names no integer constant of the file is a usage error (E0913) listing
the names that exist. Exceptions the file itself raises go through
the frontend's own ``user_code`` guard, so each frontend keeps its error codes and
messages; `guard_user_code` is that guard, once for every frontend (each passes its
error code and how it explains its framework's own errors).
"""

from __future__ import annotations

import ast
import contextlib
import copy
import hashlib
import importlib.util
import itertools
import sys
import traceback
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from solar.diagnostics import FrontendError, UsageError, exception_text
from solar.guard import user_stdout_to_stderr
from solar.tampering import remember_interpreter

__all__ = [
    "UserCode",
    "check_overrides",
    "guard_user_code",
    "import_model_file",
    "module_int_constants",
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
    rebind: bool = True,
) -> types.ModuleType:
    """Execute a program file as a fresh module and rebind its size constants.

    Args:
        path: the ``.py`` file.
        kind: what the frontend calls the file in messages (``"model file"``...).
        code: the frontend's error code for a file that is missing or not importable.
        user_code: the frontend's guard, around the execution of the file.
        overrides: ``(name, value)`` module-level int constants to rebind (Note
            [Rebinding sizes]).
        rebind: a module imported before may stand for other sizes (Note [One import
            per file]); ``False`` reuses it at the same sizes only (JAX: a ``jax.jit``
            made at import caches traces by argument shapes, so a constant read inside
            it would be stale at other sizes).

    Returns:
        The module.

    Raises:
        FrontendError: ``code`` if the file is missing, not ``.py`` or not importable;
            whatever ``user_code`` raises for an exception of the file itself.
        UsageError: E0913, an override names no integer constant of the file.
    """
    path = Path(path)
    wanted = dict(overrides)
    if not path.is_file() or path.suffix != ".py":
        raise FrontendError(f"{kind} {path} does not exist or is not a .py file", code=code)
    try:
        source = path.read_bytes()
    except OSError as err:
        raise FrontendError(f"cannot read {path}: {err.strerror}", code=code) from err
    key = (str(path.resolve()), hashlib.sha256(source).hexdigest())
    cached = _IMPORTED.get(key)
    if cached is not None and ((rebind and cached.rebindable) or cached.overrides == wanted):
        return cached.reuse(wanted, path.name)
    name = f"solar_user_{path.stem}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise FrontendError(f"cannot import {path}", code=code)
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.modules[name] = module
    tree = _parse(source, path)
    rebound, code_obj = _rebound_code(tree, path, wanted)
    with user_code(f"importing {path.name}"):
        if code_obj is None:
            spec.loader.exec_module(module)
        else:
            exec(code_obj, module.__dict__)
    # the names the file assigns at top level were rebound in place; what remains (a
    # constant set in a loop, imported...) is checked and set on the module
    module = check_overrides(
        module, {k: v for k, v in wanted.items() if k not in rebound}, path.name
    )
    _IMPORTED[key] = _Imported.of(module, tree, wanted)
    return module


@dataclass(slots=True)
class _Imported:
    """A model file executed once, and whether it may stand for other sizes.

    Note [One import per file]: a file whose size constants are only *read when its
    functions run* (``get_inputs``, ``get_init_inputs``, ``forward``; never at import
    time by another top-level statement, a class body, a default argument or a
    decorator) and never assigned by them (no ``global``) behaves exactly like a fresh
    import at other sizes once its constants are set to them: the module is executed
    once per analysis and every later build (the symbolic re-captures, the reduced-size
    search, the reference, ``--measure``) rebinds its constants instead. Any other
    file is executed again whenever the sizes change (Note [Rebinding sizes]), and
    reused only at the same sizes. The JAX frontend asks for the latter always
    (``rebind=False``): a ``jax.jit`` function made at import caches its traces by
    argument shapes, and a constant it reads would keep its first value.
    """

    module: types.ModuleType
    overrides: dict[str, int]
    defaults: dict[str, int]
    rebindable: bool

    @classmethod
    def of(
        cls, module: types.ModuleType, tree: ast.Module | None, overrides: dict[str, int]
    ) -> _Imported:
        """The record of ``module`` just executed from ``tree`` with ``overrides``."""
        defaults = module_int_constants(module)
        literals = _literal_ints(tree) if tree is not None else {}
        for k in overrides:
            defaults.pop(k, None)
            if k in literals:
                defaults[k] = literals[k]
        rebindable = (
            tree is not None
            and all(k in defaults for k in overrides)
            and not (_names_read_at_import(tree) & set(defaults))
        )
        return cls(module, dict(overrides), defaults, rebindable)

    def reuse(self, overrides: Mapping[str, int], where: str) -> types.ModuleType:
        """The module with its constants at the file's values, then ``overrides``.

        Raises:
            UsageError: E0913, an override names no integer constant of the file.
        """
        if self.rebindable:
            for k, v in self.defaults.items():
                setattr(self.module, k, v)
            self.overrides = dict(overrides)
        return check_overrides(self.module, overrides, where)


_IMPORTED: dict[tuple[str, str], _Imported] = {}
"""The model files this process executed, by resolved path and content hash."""


def _parse(source: bytes, path: Path) -> ast.Module | None:
    try:
        return ast.parse(source, filename=str(path))
    except (SyntaxError, ValueError):
        return None  # the import reports it


def _literal_ints(tree: ast.Module) -> dict[str, int]:
    """The top-level ``NAME = <int literal>`` values of the file."""
    out: dict[str, int] = {}
    for stmt in tree.body:
        for target, value, _ in _int_assignments(stmt):
            if isinstance(value, ast.Constant) and type(value.value) is int:
                out[target] = value.value
    return out


def _names_read_at_import(tree: ast.Module) -> set[str]:
    """Names the file's top level reads while it executes (function bodies excluded),
    plus every name a ``global`` statement declares (it may be assigned later)."""
    read: set[str] = set()
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Global):
            read.update(node.names)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            read.add(node.id)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            # decorators, defaults and annotations run at import; the body later
            todo.extend(node.decorator_list)
            todo.extend(node.args.defaults)
            todo.extend(d for d in node.args.kw_defaults if d is not None)
            args = node.args
            todo.extend(a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
                        if a.annotation is not None)
            if node.returns is not None:
                todo.append(node.returns)
            todo.extend(_globals_in(node.body))
            continue
        if isinstance(node, ast.Lambda):
            todo.extend(node.args.defaults)
            todo.extend(d for d in node.args.kw_defaults if d is not None)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return read


def _globals_in(body: list[ast.stmt]) -> list[ast.AST]:
    """The ``global`` statements anywhere in a function body."""
    return [n for s in body for n in ast.walk(s) if isinstance(n, ast.Global)]


def check_overrides(
    module: types.ModuleType, overrides: Mapping[str, int], where: str
) -> types.ModuleType:
    """Set ``overrides`` on ``module``, refusing names that are not its int constants.

    Raises:
        UsageError: E0913, listing the size names the module has.
    """
    known = module_int_constants(module)
    unknown = sorted(set(overrides) - set(known))
    if unknown:
        names = ", ".join(f"{k}={v}" for k, v in sorted(known.items())) or "none"
        raise UsageError(
            f"--set {', '.join(unknown)}: {where} has no size constant of that name",
            code="E0913",
            notes=(f"the sizes it has (module-level int constants): {names}",),
        )
    for key, value in overrides.items():
        setattr(module, key, value)
    return module


def _rebound_code(
    tree: ast.Module | None, path: Path, overrides: Mapping[str, int]
) -> tuple[set[str], types.CodeType | None]:
    """The file compiled with its top-level ``NAME = <int>`` assignments of ``overrides``
    replaced by the new values.

    Note [Rebinding sizes]: setting a constant after the file ran would leave every
    value the file derived from it at import time (``HIDDEN = 4 * D``, a shape tuple, a
    default argument) at the old size. Rewriting the assignment itself makes the file
    run as if the user had edited it. Only plain top-level assignments of an ``int``
    literal are rewritten; anything else falls back to setting the attribute afterwards.
    A file that does not parse is left to the normal import (which reports the error).
    """
    if not overrides or tree is None:
        return set(), None
    tree = copy.deepcopy(tree)  # the caller keeps the file's own tree
    rebound: set[str] = set()
    for stmt in tree.body:
        for target, value, put in _int_assignments(stmt):
            if target in overrides:
                put(ast.copy_location(ast.Constant(int(overrides[target])), value))
                rebound.add(target)
    if not rebound:
        return set(), None
    return rebound, compile(tree, str(path), "exec")


_Put = Callable[[ast.expr], None]


def _int_assignments(stmt: ast.stmt) -> list[tuple[str, ast.expr, _Put]]:
    """``(name, value, put)`` per int literal a top-level statement assigns: ``N = 8``,
    ``N: int = 8`` and ``B, S = 2, 16``; ``put`` replaces the literal in the tree."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target, value = stmt.targets[0], stmt.value
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        target, value = stmt.target, stmt.value
    else:
        return []
    if isinstance(target, ast.Name) and _is_int(value):

        def put_value(new: ast.expr) -> None:
            stmt.value = new

        return [(target.id, value, put_value)]
    if (
        isinstance(target, ast.Tuple)
        and isinstance(value, ast.Tuple)
        and len(target.elts) == len(value.elts)
    ):
        out: list[tuple[str, ast.expr, _Put]] = []
        for i, (t, v) in enumerate(zip(target.elts, value.elts, strict=True)):
            if isinstance(t, ast.Name) and _is_int(v):
                out.append((t.id, v, _element_setter(value, i)))
        return out
    return []


def _element_setter(node: ast.Tuple, i: int) -> _Put:
    def put(new: ast.expr) -> None:
        node.elts[i] = new

    return put


def _is_int(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and type(value.value) is int


def module_int_constants(module: types.ModuleType) -> dict[str, int]:
    """Public module-level ``int`` constants (the program's sizes; bools are not sizes)."""
    return {k: v for k, v in vars(module).items() if type(v) is int and not k.startswith("_")}


def user_frames(err: BaseException) -> tuple[str, ...]:
    """The last three frames of ``err``'s traceback that are the user's code, as notes.

    Frames of SOLAR, of installed packages and of the interpreter's import machinery
    (``<frozen importlib._bootstrap>``) are left out.
    """
    frames = traceback.extract_tb(err.__traceback__)
    keep = [
        f
        for f in frames
        if not f.filename.startswith((_SOLAR_DIR, "<frozen "))
        and "site-packages" not in f.filename
    ]
    return tuple(
        f"at {f.filename}:{f.lineno} in {f.name}: {(f.line or '').strip()}" for f in keep[-3:]
    )


def _raised_by_solar(err: BaseException) -> bool:
    """True when ``err`` was raised in SOLAR's own code (a bug, not the user's fault)."""
    frames = traceback.extract_tb(err.__traceback__)
    return bool(frames) and frames[-1].filename.startswith(_SOLAR_DIR)


Explain = Callable[[str, Exception], FrontendError | None]
"""A frontend's own diagnostic for an exception of its framework (JAX's tracer errors),
or ``None`` for the plain E05xx one."""


@contextlib.contextmanager
def guard_user_code(
    what: str, *, code: str, explain: Explain | None = None, first_line: bool = False
) -> Iterator[None]:
    """Run user code: any exception it raises becomes a `FrontendError` (the one gate
    into user code of every frontend; each wraps it as its ``user_code``).

    Args:
        what: what runs (``"importing m.py"``, ``"the model's forward"``).
        code: the frontend's error code for an exception of the user's code.
        explain: the frontend's own diagnostic for some exceptions, tried first.
        first_line: keep only the first line of the exception's message.

    Raises:
        FrontendError: ``code`` (or ``explain``'s) with the user traceback's last
            frames and the exception's message as notes. An exception SOLAR's own code
            raised inside the block (a dispatch hook of the capture) is a bug and
            propagates as it is.
    """
    remember_interpreter()  # Note [Shared interpreter], before the program's code runs
    try:
        with user_stdout_to_stderr():  # Note [User output]
            yield
    except FrontendError:
        raise
    except Exception as err:  # the user-code boundary: any exception of theirs
        if _raised_by_solar(err):
            raise  # a SOLAR bug inside a hook the user's code called, not the user's fault
        text = exception_text(err)  # None: the exception's own __str__ failed
        special = explain(what, err) if explain is not None and text is not None else None
        if special is not None:
            raise special from err
        name = type(err).__name__
        message = "(its message cannot be shown: its __str__ fails)" if text is None else text
        if first_line:
            message = message.splitlines()[0] if message else ""
        notes = (*user_frames(err), f"{name}: {message}")
        raise FrontendError(f"{what} raised {name}", code=code, notes=notes) from err
