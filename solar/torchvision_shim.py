"""Make PyPI's torchvision importable beside the CPU-only torch wheel, on every path.

Contract: `install()` (called by ``import solar``) puts one finder on ``sys.meta_path``.
The first time anything imports ``torchvision`` (a model file, an ``--entry`` module, a
``transformers``/``timm``/``diffusers`` class resolved lazily at attribute access, the
user's own code after ``import solar``), the finder loads torchvision's compiled
extension the way torchvision does; if it does not load, it declares the two op schemas
torchvision's Python code registers fake kernels for at import (``torchvision::nms``,
``qnms``). It then steps aside: the ordinary finders import the real torchvision. It
imports nothing (torch included) until torchvision itself is imported, and with a
torchvision whose extension loads it only loads that extension a moment early.

Why: the only ``torchvision==0.28.0`` wheel on PyPI for Linux is a CUDA build (it ships
``libcudart``); beside ``torch==2.13.0+cpu`` its ``_C.so`` needs ``libc10_cuda.so`` and
does not load, and ``import torchvision`` then fails with ``operator torchvision::nms
does not exist`` (so do ``import timm``, ``transformers``' models, ``diffusers``,
``ultralytics``, ``open_clip``, which import it). Retrying the user's import after the
error is not enough: transformers resolves classes lazily and wraps the error in a
``ModuleNotFoundError`` several ``__cause__`` links deep, long after the model file was
imported. Every model torchvision builds works without the extension; only detection's
``nms``/``roi_align`` need it, and those still fail, with torch's own error, when called.
A torchvision imported before ``solar`` is not helped: that import already failed.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

__all__ = ["TorchvisionFinder", "install"]

_KEEP: list[object] = []  # the Library fragment must outlive the import that made it


class TorchvisionFinder(importlib.abc.MetaPathFinder):
    """A meta-path finder that prepares torchvision's op schemas once, finds nothing."""

    def __init__(self) -> None:
        self.done = False

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "torchvision" or self.done:
            return None
        self.done = True
        _declare_if_extension_missing()
        return None


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once per process)."""
    if not any(isinstance(f, TorchvisionFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, TorchvisionFinder())


def _declare_if_extension_missing() -> None:
    spec = importlib.machinery.PathFinder.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return
    try:
        import torch
    except ImportError:
        return  # torchvision's own import reports the missing torch
    library = _extension_path(spec.submodule_search_locations)
    if library is not None:
        try:
            torch.ops.load_library(str(library))  # type: ignore[no-untyped-call]
            return
        except OSError:
            pass  # a CUDA build beside CPU torch: libc10_cuda.so is missing
    if hasattr(torch.ops.torchvision, "nms"):
        return  # declared already (a second interpreter state, a user's own fix)
    lib = torch.library.Library("torchvision", "FRAGMENT")  # type: ignore[no-untyped-call]
    lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")  # type: ignore[no-untyped-call]
    lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")  # type: ignore[no-untyped-call]
    _KEEP.append(lib)


def _extension_path(locations: Sequence[str]) -> Path | None:
    """torchvision's ``_C`` extension, found as ``torchvision.extension`` finds it."""
    for location in locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            candidate = Path(location) / f"_C{suffix}"
            if candidate.is_file():
                return candidate
    return None
