"""Run a module with its parameters and buffers replaced, then put every original back.

Contract: `swapped_state(module, originals, state)` is a context manager. ``originals``
maps the module's state names (deduplicated, as `loader._state` lists them) to its own
tensors, ``state`` the same names to their replacements (FakeTensors or meta tensors
of a capture). Inside, every parameter or buffer slot of every submodule that holds
one of the originals holds its replacement; on exit every slot holds its original.

Note [Shared submodules]: ``torch.func.functional_call`` swaps and restores tensors
per *path*. A submodule reachable by two paths (timm's CoaT registers its shared
convolutional position encodings as ``cpe1`` and again inside every serial block) is
swapped once per path: the second swap saves the already swapped (fake) tensor as the
"original", and the restore leaves the caller's live module holding meta tensors
(torch 2.13), so the real reference run that follows failed ("Cannot copy out of meta
tensor"). Here each slot (a submodule's ``_parameters``/``_buffers`` entry) is swapped
once, however many paths or tied names reach it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["attributes_restored", "swapped_state"]


@contextlib.contextmanager
def swapped_state(
    module: Any, originals: Mapping[str, Any], state: Mapping[str, Any]
) -> Iterator[None]:
    """Swap ``originals[name]`` for ``state[name]`` in every slot of ``module`` holding it.

    Args:
        module: a ``torch.nn.Module``.
        originals: state name -> the module's own tensor.
        state: state name -> its replacement (names missing here are left alone).
    """
    by_id = {id(t): state[name] for name, t in originals.items() if name in state}
    slots: list[tuple[dict[str, Any], str, Any]] = []
    for mod in module.modules():  # each submodule object once
        for table in (mod._parameters, mod._buffers):
            slots += [(table, k, t) for k, t in table.items() if id(t) in by_id]
    try:
        for table, key, orig in slots:
            table[key] = by_id[id(orig)]
        yield
    finally:
        for table, key, orig in slots:
            table[key] = orig


@contextlib.contextmanager
def attributes_restored(module: Any) -> Iterator[None]:
    """Undo the plain attributes a fake/meta forward sets on the modules (ultralytics'
    detection head caches ``self.anchors`` computed on the input): the user's module
    must not keep fake tensors for its real runs (the reference, ``--measure``)."""
    import torch

    mods = list(module.modules()) if isinstance(module, torch.nn.Module) else []
    saved = [dict(vars(m)) for m in mods]
    try:
        yield
    finally:
        for m, before in zip(mods, saved, strict=True):
            now = vars(m)
            for key in [k for k in now if k not in before]:
                del now[key]
            for key, value in before.items():
                if now.get(key, _MISSING) is not value:
                    now[key] = value


_MISSING = object()
