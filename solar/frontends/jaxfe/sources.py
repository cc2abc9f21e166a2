"""The user's source line of a jaxpr equation, for the report's ``kernels[].source``.

Contract: ``eqn -> "file.py:line" | ""`` (`eqn_source`). Note [JAX kernel sources]: jax
records a traceback with every equation (``eqn.source_info``); its user frames are those
outside jax itself. Of those, the frames of SOLAR (which traced the program), the
standard library and the JAX libraries that wrap ``lax`` calls (Flax, equinox, haiku,
optax: their module paths already name the kernel, Note [Kernel origins]) are skipped
too, so the line is the innermost one of the user's own code. Only file names and line
numbers are read, no traceback is formatted.

Note [JAX kernel names]
~~~~~~~~~~~~~~~~~~~~~~~
A kernel is named ``<scope>_<primitive>``. Inside a Flax/haiku module the scope is the
module path of jax's name stack (``Dense_0``). Outside every module the name stack says
nothing (jax inlines ``jnp``/``jax.nn`` calls into the caller's jaxpr), so the scope comes
from the equation's traceback (`eqn_function_scope`): the user's own functions between
the entry and the equation (``def attention(...)`` called from the entry ``f``), then the
``jax.nn`` function the innermost of them called (``gelu``, ``softmax``), giving
``attention_softmax_exp`` rather than ``exp_3``. Flax nnx and equinox modules push no
name stack, so a module's ``__call__`` counts by its class (the user's ``Block``), and
between the user's functions and the ``jax.nn`` one comes the outermost module of those
libraries that the innermost user function called (``Block_Linear_dot_general``,
``MLP_relu_max`` for an ``eqx.nn.MLP``, not the ``Linear`` inside it). Methods count
by their own name; other dunder methods, lambdas, private (``_x``) names and a
``jax.nn`` name equal to its primitive (``jax.nn.tanh``'s ``tanh``) add nothing; the
entry is the frame that SOLAR's capture called. jax traces a ``jit`` body (and a
``custom_jvp`` one) on a stack of its own that starts at the jitted function, so a
body's names are relative: they follow the functions of the call that inlines it plus,
for a user's ``@jax.jit`` function, its name (`jit_name`:
``block_attention_softmax_exp`` for ``block`` calling a jitted ``attention``); a jitted
entry's name adds nothing, nor do the jitted helpers of jax's
own libraries (``jnp.where``'s ``_where``). The dotted scope (``attention.softmax``) joins
``module_paths``, so the report's op-type rows still read ``exp`` and its module rows
gain the function (Note [Kernel origins] in `solar.report.breakdown`). Names stay unique
(the builder numbers repeats) and stable (function names, not line numbers).

A ``scan`` or ``while`` is one kernel (docs/jax.md), made where the loop was called but
doing what its body does, so its scope is the body's (`loop_body_scope`): the functions
that all the body's equations share, outermost first (``run_step_scan`` for a ``step``
passed to ``lax.scan`` inside ``run``; ``body_scan`` for ``fori_loop(0, n, body, x)``,
whose jax-made counter equations name nothing and are left out), and the loop's own
scope when the body names nothing.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from typing import Any

__all__ = ["eqn_function_scope", "eqn_source", "jit_name", "loop_body_scope"]

_LIBRARIES = ("jax", "jaxlib", "flax", "equinox", "haiku", "optax", "solar")
_SKIP: list[str] = []
_NN: list[str] = []
_SOLAR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "")


def _skipped() -> tuple[str, ...]:
    if not _SKIP:
        import sysconfig

        for name in _LIBRARIES:
            spec = importlib.util.find_spec(name)
            if spec is not None and spec.submodule_search_locations:
                _SKIP.extend(os.path.join(p, "") for p in spec.submodule_search_locations)
        _SKIP.append(os.path.join(sysconfig.get_paths()["stdlib"], ""))
        _SKIP.append("<")  # <frozen ...>
    return tuple(_SKIP)


def eqn_source(eqn: Any) -> str:
    """``file.py:line`` of the innermost frame of the user's code that made ``eqn``, or
    ``""`` when jax kept none (Note [JAX kernel sources])."""
    from jax._src import source_info_util

    traceback = getattr(getattr(eqn, "source_info", None), "traceback", None)
    if traceback is None:
        return ""
    skip = _skipped()
    for frame in source_info_util.user_frames(traceback):
        if not frame.file_name.startswith(skip):
            return f"{os.path.basename(frame.file_name)}:{frame.start_line}"
    return ""



def _nn_api() -> str:
    if not _NN:
        import jax._src.nn

        _NN.append(os.path.join(os.path.dirname(jax._src.nn.__file__), ""))
    return _NN[0]


def _plain(name: str) -> bool:
    return name.isidentifier() and not name.startswith("_")


_MODULE_LIBRARIES = ("flax", "equinox", "haiku")


@functools.cache
def _module_libraries() -> tuple[str, ...]:
    found: list[str] = []
    for name in _MODULE_LIBRARIES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            found.extend(os.path.join(p, "") for p in spec.submodule_search_locations)
    return tuple(found)


def _called(function_name: str) -> str:
    """A frame's name in a kernel name: a method's own (``Block.attend`` -> ``attend``),
    a module's ``__call__`` its class's (``Block.__call__`` -> ``Block``)."""
    parts = function_name.split(".")
    if len(parts) > 1 and parts[-1] == "__call__":
        return parts[-2]
    return parts[-1]


def _frames(eqn: Any) -> tuple[list[str], str, str, bool]:
    """The user's functions an equation was made in (innermost first), the module class
    of a library (Flax nnx, equinox) the innermost of them called, the ``jax.nn``
    function below it, and whether the frames reach the entry."""
    traceback = getattr(getattr(eqn, "source_info", None), "traceback", None)
    if traceback is None:
        return [], "", "", True
    skip, nn_api, modules = _skipped(), _nn_api(), _module_libraries()
    user: list[str] = []
    api = module = ""
    for frame in traceback.frames:  # innermost first
        if frame.file_name.startswith(_SOLAR):  # the capture that called the entry
            return user, module, api, True
        if not frame.file_name.startswith(skip):
            user.append(_called(frame.function_name))
        elif not user and frame.file_name.startswith(nn_api):
            api = frame.function_name  # ends as the outermost jax.nn frame below the user's
        elif (not user and frame.file_name.startswith(modules)
              and frame.function_name.endswith(".__call__")):
            module = _called(frame.function_name)  # ends as the outermost module
    return user, module, api, False


def _scope(eqn: Any, user: list[str], module: str, api: str) -> list[str]:
    # user[-1]: the entry, or the function a stack of its own starts at
    named = [n for n in reversed(user[:-1]) if _plain(n)]
    if _plain(module):
        named.append(module)
    if _plain(api) and api != eqn.primitive.name:
        named.append(api)
    return named


def eqn_function_scope(eqn: Any) -> tuple[tuple[str, ...], bool]:
    """The functions an equation was made in, outermost first, for its kernel name
    (Note [JAX kernel names]): the user's own functions below the entry, then the
    ``jax.nn`` function the innermost one called (``("attention", "softmax")``); and
    whether they start at the entry (``False``: below the jitted function whose body
    jax traced on a stack of its own)."""
    user, module, api, whole = _frames(eqn)
    return tuple(_scope(eqn, user, module, api)), whole


_LOOP_BODIES = {"scan": "jaxpr", "while": "body_jaxpr"}


def loop_body_scope(eqn: Any) -> tuple[tuple[str, ...], bool] | None:
    """The function scope of a ``scan``/``while`` equation (Note [JAX kernel names]):
    the loop's own, then the body function and the functions below it that all the
    body's equations share (jax traces a body on a stack of its own, which starts at the
    body function); and whether it starts at the entry. ``None`` for other equations and
    for a body whose equations name nothing."""
    key = _LOOP_BODIES.get(eqn.primitive.name)
    if key is None:
        return None
    outer, whole = eqn_function_scope(eqn)
    body = eqn.params[key]
    common: list[str] | None = None
    for e in getattr(body, "jaxpr", body).eqns:
        user, module, api, reaches_entry = _frames(e)
        scope = _scope(e, user, module, api)
        if reaches_entry:  # traced on the caller's stack: relative to the entry
            if scope[: len(outer)] != list(outer):
                continue
            scope = scope[len(outer) :]
        elif user and _plain(user[-1]):
            scope.insert(0, user[-1])
        if not scope:  # jax's own (`fori_loop`'s counter), or nothing to name
            continue
        k = 0
        while common is not None and k < min(len(common), len(scope)) and common[k] == scope[k]:
            k += 1
        common = scope if common is None else common[:k]
    return ((*outer, *common), whole) if common else None


def jit_name(eqn: Any) -> str:
    """The name of the user's function a ``jit`` equation calls (``@jax.jit def
    attention``), or ``""`` for a library's (``jnp.where``'s ``_where``) and other calls."""
    name = eqn.params.get("name") if eqn.primitive.name in ("pjit", "jit") else None
    body = eqn.params.get("jaxpr")
    info = getattr(getattr(body, "jaxpr", body), "debug_info", None)
    where = getattr(info, "func_src_info", None) or ""
    file = where.rpartition(" at ")[2].rpartition(":")[0]
    if not isinstance(name, str) or not _plain(name) or not file or file.startswith(_skipped()):
        return ""
    return name
