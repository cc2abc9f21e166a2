"""Make PyPI's torchvision importable beside the CPU-only torch wheel CI installs.

PyPI's ``torchvision==0.28.0`` is a CUDA build: its ``_C.so`` needs ``libc10_cuda.so``,
so beside ``torch==2.13.0+cpu`` the extension does not load and ``import torchvision``
fails in ``_meta_registrations`` (``operator torchvision::nms does not exist``), which
also breaks ``import timm``. The models the zoo builds (classifiers, segmentation
heads) use no compiled torchvision op; only ``nms``/``qnms`` are registered
unconditionally. Declaring those two schemas (no kernel: calling them still fails)
lets the real torchvision Python code import. With a working torchvision this is a
no-op.
"""

from __future__ import annotations


def ensure_torchvision() -> None:
    """Import torchvision, declaring its two unguarded op schemas if the extension is missing."""
    import sys

    import torch

    try:
        import torchvision
        return
    except RuntimeError as err:
        if "torchvision::nms" not in str(err):
            raise
    for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[name]
    lib = torch.library.Library("torchvision", "FRAGMENT")
    lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _KEEP.append(lib)
    import torchvision  # noqa: F401


_KEEP: list[object] = []
