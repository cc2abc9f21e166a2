"""What a program changed in the interpreter it shares with SOLAR (Note [Shared interpreter]).

Contract: `remember_interpreter()` notes, once per module, the attributes of the
libraries SOLAR itself calls (and the recursion limit); `interpreter_changes()` lists
what differs since. The user-code gate (`solar.frontends.kit.guard_user_code`)
remembers before the program's code first runs; the guarded run consults the list when
SOLAR's own code fails afterwards.

Note [Shared interpreter]: the program runs in SOLAR's interpreter, so it can replace
``numpy.asarray`` or ``torch.Tensor``, or lower ``sys.setrecursionlimit`` to 60, and
SOLAR's own code then fails in ways that look like a bug in SOLAR (E0999). When such a
failure follows a change of this kind, the diagnostic is E0534 (exit 1, the program is
at fault) naming what was changed; the failure itself is a note.
"""

from __future__ import annotations

import sys
from typing import Final

from solar.diagnostics import FrontendError, exception_text

__all__ = ["WATCHED_MODULES", "interpreter_changes", "remember_interpreter", "tampering_error"]

WATCHED_MODULES: Final = (
    "builtins", "copy", "json", "math", "os", "numpy", "torch", "torch.nn",
    "torch.nn.functional", "jax", "jax.numpy",
)  # fmt: skip
"""The modules whose attributes SOLAR relies on (module-level names only)."""

_remembered: dict[str, dict[str, object]] = {}
_recursion_limit: list[int] = []
_modules: dict[str, object] = {}


def remember_interpreter() -> None:
    """Note the watched modules imported by now (each once) and the recursion limit."""
    if not _recursion_limit:
        _recursion_limit.append(sys.getrecursionlimit())
    for name in WATCHED_MODULES:
        module = sys.modules.get(name)
        if name not in _remembered and module is not None:
            _remembered[name] = dict(vars(module))
    for name, module in list(sys.modules.items()):  # SOLAR's own modules, as imported
        if name == "solar" or name.startswith("solar.") or name in WATCHED_MODULES:
            _modules.setdefault(name, module)
    torch = sys.modules.get("torch")
    if "torch.Tensor" not in _remembered and torch is not None:
        _remembered["torch.Tensor"] = dict(vars(torch.Tensor))


def interpreter_changes() -> tuple[str, ...]:
    """What differs from what `remember_interpreter` noted: ``numpy.asarray replaced``,
    ``sys.setrecursionlimit(60)``; empty when nothing does (or nothing was noted)."""
    found: list[str] = []
    if _recursion_limit and sys.getrecursionlimit() < _recursion_limit[0]:
        found.append(f"sys.setrecursionlimit({sys.getrecursionlimit()})")
    found += [f"sys.modules[{name!r}] replaced" for name, module in _modules.items()
              if sys.modules.get(name) is not module]
    for name, before in _remembered.items():
        owner: object = sys.modules.get(name)
        if name == "torch.Tensor" and "torch" in sys.modules:
            owner = getattr(sys.modules["torch"], "Tensor", None)
        now = vars(owner) if owner is not None and hasattr(owner, "__dict__") else {}
        if not now:
            found.append(f"{name} removed")
            continue
        found += [f"{name}.{k} {'replaced' if k in now else 'deleted'}"
                  for k, v in before.items() if now.get(k, _MISSING) is not v]
    return tuple(found)


_MISSING: Final = object()


def tampering_error(err: BaseException) -> FrontendError | None:
    """E0534 for a failure of SOLAR's own code that follows a change of the interpreter
    (Note [Shared interpreter]); ``None`` when nothing was changed (a bug in SOLAR)."""
    changes = interpreter_changes()
    if not changes:
        return None
    shown = ", ".join(changes[:4]) + (f" and {len(changes) - 4} more" if len(changes) > 4 else "")
    return FrontendError(
        f"SOLAR failed after the program changed the interpreter they share: {shown}",
        code="E0534",
        notes=(
            f"SOLAR's own code then raised {type(err).__name__}: {exception_text(err)}",
            "a model file must not replace library functions or lower the recursion limit",
        ),
    )
