"""The user's source line of a jaxpr equation, for the report's ``kernels[].source``.

Contract: ``eqn -> "file.py:line" | ""`` (`eqn_source`). Note [JAX kernel sources]: jax
records a traceback with every equation (``eqn.source_info``); its user frames are those
outside jax itself. Of those, the frames of SOLAR (which traced the program), the
standard library and the JAX libraries that wrap ``lax`` calls (Flax, equinox, haiku,
optax: their module paths already name the kernel, Note [Kernel origins]) are skipped
too, so the line is the innermost one of the user's own code. Only file names and line
numbers are read, no traceback is formatted.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

__all__ = ["eqn_source"]

_LIBRARIES = ("jax", "jaxlib", "flax", "equinox", "haiku", "optax", "solar")
_SKIP: list[str] = []


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
