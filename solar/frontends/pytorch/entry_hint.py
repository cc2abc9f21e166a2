"""What to suggest when a model file lacks the entry it was asked for.

Contract: ``(imported module, missing name) -> notes``, pure. A file without ``Model``
that defines ``nn.Module`` classes of its own is most often a model under another
name: the notes name them and the ``--entry`` that analyses them.
"""

from __future__ import annotations

import types

__all__ = ["entry_notes", "own_module_classes"]


def own_module_classes(module: types.ModuleType) -> list[str]:
    """The ``nn.Module`` subclasses ``module`` defines itself (not imported), in
    definition order."""
    import torch

    return [
        name for name, value in vars(module).items()
        if isinstance(value, type) and issubclass(value, torch.nn.Module)
        and value.__module__ == module.__name__ and not name.startswith("_")
    ]


def entry_notes(module: types.ModuleType, name: str) -> tuple[str, ...]:
    """The notes of "file has no `name`": the model-file convention, and the file's own
    ``nn.Module`` classes as ``--entry`` suggestions when ``Model`` was looked for."""
    notes = [
        "a model file defines `class Model(nn.Module)`, `get_inputs()` and "
        "`get_init_inputs()`"
    ]
    found = own_module_classes(module) if name == "Model" else []
    if len(found) == 1:
        notes.append(f"the file defines one nn.Module, `{found[0]}`: analyse it with "
                     f"--entry {found[0]}")
    elif found:
        listed = ", ".join(f"`{n}`" for n in found[:6])
        notes.append(f"the file defines the nn.Modules {listed}: pick one with --entry NAME "
                     f"(the outermost, usually --entry {found[-1]})")
    return tuple(notes)
