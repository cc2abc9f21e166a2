"""Load the user's program: a model file, a plain function, or a live module.

Contract: `ProgramSource` says where a program comes from; `instantiate(source,
fake_mode=...)` runs the user's code (seeded, deterministic) and returns an
`Instance`: the callable, its arguments, and the named parameters/buffers. With a
``fake_mode`` nothing is allocated: the model and its inputs are built as
FakeTensors. Every call into user code goes through `user_code`, the single place
where arbitrary exceptions are caught and turned into `FrontendError` (E0501).

Model-file convention (KernelBench): ``class Model(nn.Module)``, ``get_inputs()``,
optionally ``get_init_inputs()``; sizes are module-level integer constants, which
`ProgramSource.overrides` can replace before the entry points run.

Error codes: E0501 user code raised; E0502 entry point missing; E0503 entry point
returned an unexpected value; E0504 model file missing or not Python; E0507 inputs
file unreadable.
"""

from __future__ import annotations

import contextlib
import importlib
import random
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solar.diagnostics import FrontendError, UsageError
from solar.frontends.kit import (
    check_overrides,
    import_model_file,
    module_int_constants,
    raised_by_solar,
    user_frames,
)
from solar.frontends.kit.loader import user_stdout_to_stderr

__all__ = [
    "Instance",
    "ProgramSource",
    "instantiate",
    "module_int_constants",
    "seed_everything",
    "user_code",
]

SEED = 0


@dataclass(frozen=True, slots=True)
class ProgramSource:
    """Where a program comes from, enough to rebuild it (fake or real) any number of times.

    Attributes:
        name: a readable program name (file stem, function or class name).
        path: the model file (model-file and function-entry modes).
        entry: the function to call instead of ``Model`` (``"fn"`` or ``"pkg.mod:fn"``).
        inputs_path: ``.npz``/``.pt`` file with the entry function's inputs.
        overrides: module-level integer constants to replace before running.
        target: a live ``nn.Module`` or callable (Python API mode).
        example_inputs: positional inputs for ``target``.
        train: keep modules in training mode (default: ``eval()``, the inference forward).
    """

    name: str
    path: Path | None = None
    entry: str | None = None
    inputs_path: Path | None = None
    overrides: tuple[tuple[str, int], ...] = ()
    target: Any = field(default=None, compare=False)
    example_inputs: tuple[Any, ...] = field(default=(), compare=False)
    train: bool = False


@dataclass(slots=True)
class Instance:
    """A built program ready to run.

    Attributes:
        fn: the callable to run (a module, a function, or a functional_call wrapper).
        module: the root ``nn.Module`` if any (for module-path names).
        args: positional inputs.
        state: parameters and buffers by state_dict name (tensors as passed to ``fn``).
        sizes: module-level integer constants of the model file.
        attr_names: ``id(tensor) -> attribute path`` for plain tensor attributes.
    """

    fn: Callable[..., Any]
    module: Any
    args: tuple[Any, ...]
    state: dict[str, Any]
    sizes: dict[str, int]
    attr_names: dict[int, str]


def seed_everything(seed: int = SEED) -> None:
    """Seed torch, numpy and ``random`` so model and inputs are reproducible."""
    import numpy as np
    import torch

    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


@contextlib.contextmanager
def user_code(what: str) -> Iterator[None]:
    """Run user code; any exception it raises becomes `FrontendError` E0501.

    Raises:
        FrontendError: E0501 with the user traceback's last frames as notes.
    """
    try:
        with user_stdout_to_stderr():  # Note [User output]
            yield
    except FrontendError:
        raise
    except Exception as err:
        if raised_by_solar(err):
            raise  # a SOLAR bug inside a dispatch hook, not the user's fault
        notes = (*user_frames(err), f"{type(err).__name__}: {err}")
        raise FrontendError(
            f"{what} raised {type(err).__name__}", code="E0501", notes=notes
        ) from err


def _entry_point(module: types.ModuleType, name: str, path: Path) -> Callable[..., Any]:
    fn = getattr(module, name, None)
    if fn is None or not callable(fn):
        raise FrontendError(
            f"{path.name} has no `{name}`",
            code="E0502",
            notes=(
                "a model file defines `class Model(nn.Module)`, `get_inputs()` and "
                "`get_init_inputs()`",
            ),
        )
    return fn  # type: ignore[no-any-return]


def _as_args(value: Any, what: str) -> tuple[Any, ...]:
    if isinstance(value, list | tuple):
        return tuple(value)
    raise FrontendError(
        f"{what} returned {type(value).__name__}, expected a list or tuple", code="E0503"
    )


def _load_inputs_file(path: Path) -> tuple[Any, ...]:
    import pickle

    import torch

    from solar.files import load_npz

    if path.suffix == ".npz":
        try:  # the one .npz reader (empty, corrupt, .npy, pickled: all refused)
            return tuple(torch.from_numpy(a) for a in load_npz(path).values())
        except UsageError as err:
            raise FrontendError(err.message, code="E0507") from err
    try:
        obj = torch.load(path, weights_only=True)
    except (OSError, ValueError, RuntimeError, EOFError, pickle.UnpicklingError) as err:
        raise FrontendError(f"cannot read inputs file {path}: {err}", code="E0507") from err
    if isinstance(obj, torch.Tensor):
        return (obj,)
    if isinstance(obj, list | tuple):
        return tuple(obj)
    raise FrontendError(f"inputs file {path} holds {type(obj).__name__}", code="E0507")


def _tensor_attrs(root: Any) -> dict[int, str]:
    """``id -> path`` of plain tensor attributes (not parameters/buffers) of a module tree."""
    import torch

    names: dict[int, str] = {}
    if not isinstance(root, torch.nn.Module):
        return names
    for mod_name, mod in root.named_modules():
        for attr, val in vars(mod).items():
            if isinstance(val, torch.Tensor) and not attr.startswith("_"):
                names.setdefault(id(val), f"{mod_name}.{attr}" if mod_name else attr)
    return names


def _state(module: Any) -> dict[str, Any]:
    import torch

    if not isinstance(module, torch.nn.Module):
        return {}
    state: dict[str, Any] = dict(module.named_parameters())
    state.update(dict(module.named_buffers()))
    return state


def _import_source(source: ProgramSource) -> types.ModuleType:
    """The model file, or the ``pkg.mod`` of an ``entry="pkg.mod:fn"`` without a file,
    with the size constants of ``source.overrides`` rebound."""
    if source.path is not None:
        return import_model_file(
            source.path,
            kind="model file",
            code="E0504",
            user_code=user_code,
            overrides=source.overrides,
        )
    if source.entry is None or ":" not in source.entry:
        raise FrontendError("no model file and no `module:function` entry", code="E0504")
    name = source.entry.rsplit(":", 1)[0]
    with user_code(f"importing {name}"):
        if "" not in sys.path and "." not in sys.path:
            sys.path.insert(0, "")  # like `python -m`: the working directory is importable
        module = importlib.import_module(name)
    return check_overrides(module, dict(source.overrides), name)


def _build_from_file(source: ProgramSource, fake_mode: Any) -> Instance:
    import torch

    module = _import_source(source)
    where = source.path if source.path is not None else Path(module.__name__)
    sizes = module_int_constants(module)
    ctx = fake_mode if fake_mode is not None else contextlib.nullcontext()
    if source.entry is not None:
        fn = _entry_point(module, source.entry.rsplit(":", 1)[-1], where)
        if source.inputs_path is not None:
            args = _load_inputs_file(source.inputs_path)
            if fake_mode is not None:
                args = tuple(
                    fake_mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args
                )
        else:
            get_inputs = _entry_point(module, "get_inputs", where)
            with ctx, user_code("get_inputs()"):
                seed_everything()
                args = _as_args(get_inputs(), "get_inputs()")
        return Instance(fn, None, args, {}, sizes, {})
    model_cls = _entry_point(module, "Model", where)
    get_inputs = _entry_point(module, "get_inputs", where)
    get_init = getattr(module, "get_init_inputs", None)
    with ctx:
        with user_code("get_init_inputs()"):
            init = _as_args(get_init(), "get_init_inputs()") if callable(get_init) else ()
        with user_code("Model(*get_init_inputs())"):
            seed_everything()
            model = model_cls(*init)
        if not callable(model):
            raise FrontendError(
                f"Model(...) gave {type(model).__name__}, not a callable", code="E0503"
            )
        with user_code("get_inputs()"):
            seed_everything()
            args = _as_args(get_inputs(), "get_inputs()")
    if isinstance(model, torch.nn.Module) and not source.train:
        model.eval()
    return Instance(model, model, args, _state(model), sizes, _tensor_attrs(model))


def _fake_wrap(inst: Instance, fake_mode: Any) -> Instance:
    """Turn a real instance into a fake one: params and inputs via ``from_tensor``."""
    import torch
    from torch.func import functional_call

    def conv(x: Any) -> Any:
        return fake_mode.from_tensor(x) if isinstance(x, torch.Tensor) else x

    args = tuple(torch.utils._pytree.tree_map(conv, a) for a in inst.args)
    if not inst.state:
        return Instance(inst.fn, inst.module, args, {}, inst.sizes, inst.attr_names)
    state = {k: conv(v) for k, v in inst.state.items()}
    module = inst.module

    def run(*a: Any, **kw: Any) -> Any:
        return functional_call(module, state, a, kw)

    return Instance(run, module, args, state, inst.sizes, inst.attr_names)


def instantiate(
    source: ProgramSource, *, fake_mode: Any = None, real_fallback: bool = True
) -> Instance:
    """Build the program described by ``source``.

    Args:
        source: where the program comes from.
        fake_mode: a ``FakeTensorMode`` (or `capture.MetaMode`) to build it without
            allocating, or ``None`` for real tensors (seeded, so two real builds are
            identical).
        real_fallback: when building under ``fake_mode`` fails, build it for real and
            convert (default); ``False`` re-raises instead.

    Returns:
        The built `Instance`.

    Raises:
        FrontendError: E0501-E0504, E0507 (see module docstring).
    """
    import torch

    if source.target is not None:
        target = source.target
        if isinstance(target, torch.nn.Module) and not source.train:
            target.eval()
        # Clone the example inputs so a program that mutates its inputs leaves the
        # caller's tensors (and later replays) untouched.
        args = tuple(
            torch.utils._pytree.tree_map(
                lambda t: t.detach().clone() if isinstance(t, torch.Tensor) else t, a
            )
            for a in source.example_inputs
        )
        module = target if isinstance(target, torch.nn.Module) else None
        inst = Instance(target, module, args, _state(target), {}, _tensor_attrs(target))
        return _fake_wrap(inst, fake_mode) if fake_mode is not None else inst
    if fake_mode is None:
        return _build_from_file(source, None)
    try:
        return _build_from_file(source, fake_mode)
    except FrontendError as err:
        if err.code != "E0501" or not real_fallback:
            raise
        # Construction needed real values (e.g. an init that calls .item()): build it
        # for real and convert. The caller's memory budget check happens later.
        return _fake_wrap(_build_from_file(source, None), fake_mode)


def source_for_file(
    path: str | Path | None,
    *,
    entry: str | None = None,
    inputs: str | Path | None = None,
    overrides: Mapping[str, int] | None = None,
    train: bool = False,
) -> ProgramSource:
    """A `ProgramSource` for a model file, a function in it, or ``entry="pkg.mod:fn"``."""
    p = Path(path) if path is not None else None
    name = entry.rsplit(":", 1)[-1] if entry else (p.stem if p is not None else "program")
    return ProgramSource(
        name=name,
        path=p,
        entry=entry,
        inputs_path=Path(inputs) if inputs is not None else None,
        overrides=tuple(sorted((overrides or {}).items())),
        train=train,
    )
