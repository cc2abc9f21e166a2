"""What an entry is, and how it is built before it is called on the inputs.

Contract: `build_entry(target, ...) -> callable`: the program to call on the inputs.
An entry (``Model``, ``--entry NAME`` or ``--entry pkg.mod:NAME``) is one of:

* a **class** (``Model``, ``torch.nn:Linear``): built with ``--entry-args`` if given,
  else the file's ``get_init_inputs()``, else no arguments; the instance is called;
* a **factory**, a function that builds a module (``torchvision.models:resnet50``):
  a function given ``--entry-args``, or one whose parameters all have defaults; it is
  called with those arguments and what it returns is called on the inputs;
* a **function of the inputs** (any other Python function, or a module instance):
  called on the inputs as it is.

Anything else (a built-in such as ``os:system``) is refused, as is a class or factory
whose signature the arguments do not fit: the diagnostic names what was called, with
which arguments, and why it failed (E0513), before anything runs.

Error codes: E0513 the entry cannot be built or called with the arguments given;
E0503 a factory returned something that cannot be called.
"""

from __future__ import annotations

import inspect
import json
import types
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Literal

from solar.diagnostics import FrontendError

__all__ = ["EntryKind", "build_entry", "check_call", "entry_kind"]

EntryKind = Literal["class", "factory", "function"]


def entry_kind(target: Any, name: str, *, entry_args: str | None) -> EntryKind:
    """What ``target`` is as an entry (module docstring).

    Raises:
        FrontendError: E0513 a built-in function or other object that is no entry.
    """
    if isinstance(target, type):
        return "class"
    if inspect.isfunction(target) or inspect.ismethod(target):
        if entry_args is not None or not _required(target):
            return "factory"
        return "function"
    if entry_args is not None:
        raise FrontendError(
            f"--entry-args build a class or a factory; `{name}` is a "
            f"{type(target).__name__}, called on the inputs as it is",
            code="E0513",
        )
    if callable(target) and not isinstance(target, types.BuiltinFunctionType):
        return "function"  # a module instance, a functools.partial...
    raise FrontendError(
        f"`{name}` is a {type(target).__name__}, not a program SOLAR can analyse",
        code="E0513",
        notes=(
            "an entry is an nn.Module class, a Python function that builds a module "
            "(with --entry-args), or a Python function of the inputs",
        ),
    )


def _required(fn: Callable[..., Any]) -> list[str]:
    """The parameters of ``fn`` that have no default (``*args``/``**kwargs`` excluded)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ["?"]
    return [
        p.name
        for p in params
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def build_entry(
    target: Any,
    name: str,
    *,
    kind: EntryKind,
    entry_args: str | None,
    init: Callable[[], tuple[Any, ...]] | None,
    user_code: Callable[[str], AbstractContextManager[None]],
    seed: Callable[[], None],
) -> Any:
    """The program to call on the inputs: ``target`` built if it is a class or factory.

    Args:
        target: the entry.
        name: its name, for messages.
        kind: `entry_kind`.
        entry_args: ``--entry-args`` as JSON (a list or an object), or None.
        init: the file's ``get_init_inputs`` (a class's arguments without
            ``--entry-args``), or None.
        user_code: the frontend's guard around user code (E0501).
        seed: seeds the random generators before the build.

    Raises:
        FrontendError: E0513 the arguments do not fit; E0503 a factory returned
            something that cannot be called; E0501 the build raised.
    """
    if kind == "function":
        return target
    args, kwargs, given = _arguments(entry_args, init if kind == "class" else None, user_code)
    shown = f"{name}({given})"
    check_call(target, args, kwargs, what=shown, hint=_hint(target, name))
    with user_code(shown):
        seed()
        built = target(*args, **kwargs)
    if not callable(built):
        raise FrontendError(
            f"{shown} returned {type(built).__name__}, not a module or function to call on "
            "the inputs",
            code="E0503",
        )
    return built


def _arguments(
    entry_args: str | None,
    init: Callable[[], tuple[Any, ...]] | None,
    user_code: Callable[[str], AbstractContextManager[None]],
) -> tuple[tuple[Any, ...], dict[str, Any], str]:
    """``(args, kwargs, how they are shown)`` that build the entry."""
    if entry_args is not None:
        data = json.loads(entry_args)
        if isinstance(data, dict):
            return (), data, ", ".join(f"{k}={v!r}" for k, v in data.items())
        return tuple(data), {}, ", ".join(repr(v) for v in data)
    if init is not None:
        with user_code("get_init_inputs()"):
            return init(), {}, "*get_init_inputs()"
    return (), {}, ""


def check_call(
    fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], *, what: str, hint: str = ""
) -> None:
    """Refuse a call whose arguments do not fit ``fn``'s signature, before it is made.

    Raises:
        FrontendError: E0513 with the reason and the signature.
    """
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # no signature to check against: the call will say
        return
    try:
        signature.bind(*args, **kwargs)
    except TypeError as err:
        shown = getattr(fn, "__name__", type(fn).__name__)
        raise FrontendError(
            f"cannot call {what}: {err}",
            code="E0513",
            notes=tuple(n for n in (f"its signature: {shown}{signature}", hint) if n),
        ) from None


def _hint(target: Any, name: str) -> str:
    missing = [m for m in _required(target) if m != "self"]
    if not missing or missing == ["?"]:
        return ""
    example = ", ".join(f"{m}: ..." for m in missing)
    return f"give the arguments that build `{name}` with --entry-args '{{{example}}}'"
