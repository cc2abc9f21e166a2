"""Make a CUDA build of torchvision importable beside a CPU-only torch.

Contract: `retry_with_torchvision_shim(err)` says whether a failed import of the user's
code failed only because torchvision's compiled extension did not load, and if so
declares the two op schemas torchvision's Python code registers fake kernels for at
import (``torchvision::nms``/``qnms``), so a second import succeeds.

Why: PyPI's ``torchvision`` wheels are CUDA builds; beside ``torch==X+cpu`` their
``_C.so`` needs ``libc10_cuda.so`` and does not load, and ``import torchvision`` (so
also ``import timm`` and ``transformers``' vision models) then fails with ``operator
torchvision::nms does not exist``. Every model torchvision builds (classifiers,
segmentation, ViTs) works without the extension; only detection's ``nms``/``roi_align``
need it, and those still fail, with torch's own error, when called. With a working
torchvision this module does nothing. (The zoo tests use the same declaration:
tests/zoo/torchvision_cpu.py.)
"""

from __future__ import annotations

import sys

__all__ = ["retry_with_torchvision_shim"]

_KEEP: list[object] = []


def retry_with_torchvision_shim(err: BaseException) -> bool:
    """Declare torchvision's unguarded schemas if ``err`` is their missing-op error.

    Returns:
        True when the import should be retried (the schemas were just declared).
    """
    if _KEEP or "torchvision::nms does not exist" not in str(err):
        return False
    import torch

    for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[name]
    lib = torch.library.Library("torchvision", "FRAGMENT")  # type: ignore[no-untyped-call]
    lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")  # type: ignore[no-untyped-call]
    lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")  # type: ignore[no-untyped-call]
    _KEEP.append(lib)
    return True
