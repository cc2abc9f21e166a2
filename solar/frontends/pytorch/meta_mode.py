"""Capture on the ``meta`` device: the fast path in front of ``FakeTensorMode``.

Contract: `MetaMode` is used like a fake mode by `loader.instantiate` and
`capture.capture_program` (enter it to build and run a program, `from_tensor` to
convert a real tensor); after the run, `MetaMode.blocked` says why the capture must
not be trusted (``None`` when it may). Torch is imported lazily.

Why (Note [Meta capture]): FakeTensors run the very same meta kernels as ``meta``
tensors, but constructing a ``FakeTensorMode`` imports ``torch._dynamo`` (about a
second, a third of a small model's analysis). Meta tensors differ from FakeTensors
in one respect only: their device is ``meta``, not ``cpu``. Eager PyTorch picks some
implementations by device, and then a meta run records different ATen calls than the
CPU run that validation replays. A meta capture is therefore rejected (and the
program re-captured over FakeTensors) when the forward calls any function whose
implementation depends on the device (`DEVICE_SENSITIVE`: fused attention and RNN
kernels, the transformer/multi-head-attention fast paths...), creates a tensor from
data (``torch.tensor(0.0)`` is lifted from a CPU constant in eager, created on the
device under a meta default device), or assigns a Python number into a tensor (whose
scalar is materialised on the tensor's device). Anything else meta execution cannot
do (``.item()``, CPU tensors mixed in, an op without a meta kernel) raises, and the
fake path takes over too. tests/frontends/pytorch/test_meta_capture.py checks that
every sample captured on meta records exactly the calls the fake capture records.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator
from typing import Any

__all__ = [
    "DATA_FACTORIES",
    "DEVICE_SENSITIVE",
    "MetaBlockedError",
    "MetaMode",
    "dynamo_import_deferred",
]

DEVICE_SENSITIVE = frozenset({
    "scaled_dot_product_attention", "lstm", "gru", "rnn_tanh", "rnn_relu",
    "multi_head_attention_forward", "_native_multi_head_attention",
    "_transformer_encoder_layer_fwd", "embedding_bag", "ctc_loss", "channel_shuffle",
    "native_channel_shuffle", "grid_sample", "grid_sampler", "affine_grid",
    "affine_grid_generator", "cudnn_is_acceptable",
})  # fmt: skip
"""Torch functions whose eager implementation is chosen by device (CPU picks fused
kernels: ``_scaled_dot_product_flash_attention_for_cpu``, ``mkldnn_rnn_layer``,
``_transformer_encoder_layer_fwd``...): a forward calling one is captured on FakeTensors."""

DATA_FACTORIES = frozenset({
    "tensor", "as_tensor", "asarray", "from_numpy", "frombuffer", "new_tensor",
})  # fmt: skip
"""Functions creating a tensor from Python data: eager lifts a CPU constant."""


class MetaBlockedError(Exception):
    """Raised by `MetaMode.watch` at the first device-sensitive call: the meta run stops
    there (an RNN over a long sequence would otherwise be run out for nothing).
    Internal control flow; `capture.capture_program` catches it."""


class MetaMode:
    """Builds and runs a program on the ``meta`` device (see the module docstring).

    Attributes:
        blocked: why the last forward run under `watch` may differ from eager on CPU
            (``None`` if it may not).
    """

    def __init__(self) -> None:
        self._stack: list[Any] = []
        self.blocked: str | None = None

    def __enter__(self) -> MetaMode:
        import torch

        ctx = torch.device("meta")
        ctx.__enter__()
        self._stack.append(ctx)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.pop().__exit__(*exc)

    @staticmethod
    def from_tensor(t: Any) -> Any:
        """``t`` on the meta device (shape, dtype and strides kept, no data)."""
        return t.to("meta")

    @contextlib.contextmanager
    def watch(self) -> Iterator[None]:
        """Watch the torch functions the forward calls; at the first device-sensitive
        one, set `blocked` and raise `MetaBlockedError` (should the program catch it,
        the capture is still discarded)."""
        import torch
        from torch.overrides import TorchFunctionMode

        owner = self

        class Watch(TorchFunctionMode):
            def __torch_function__(
                self, func: Any, types: Any, args: Any = (), kwargs: Any = None
            ) -> Any:
                kwargs = kwargs or {}
                if owner.blocked is None:
                    name = getattr(func, "__name__", "")
                    if name in DEVICE_SENSITIVE:
                        owner.blocked = f"calls {name} (device-dependent implementation)"
                    elif name in DATA_FACTORIES:
                        owner.blocked = f"calls {name} (a tensor from Python data)"
                    elif name == "__setitem__" and not isinstance(
                        args[2] if len(args) > 2 else None, torch.Tensor
                    ):
                        owner.blocked = "assigns a Python value into a tensor"
                    if owner.blocked is not None:
                        raise MetaBlockedError(owner.blocked)
                return func(*args, **kwargs)

        with Watch():
            yield


@contextlib.contextmanager
def dynamo_import_deferred() -> Iterator[None]:
    """Run torch's Python meta kernels without importing ``torch._dynamo``.

    Note [Dynamo-free meta]: many of torch's Python meta kernels and refs are wrapped
    in ``torch._disable_dynamo``, whose wrapper imports ``torch._dynamo`` (about a
    second) on its first call, to build a "do not trace this" wrapper that is a plain
    call whenever torch.compile is not tracing; eager capture never is. Each wrapper
    caches that function as ``fn.__dynamo_disable``: while this context is active,
    every existing wrapper's cache holds ``fn`` itself, and on exit the caches it set
    are removed again, so torch is left exactly as it was (the next call outside does
    the usual import). If torch's internals differ from this expectation, nothing is
    changed and the import simply happens.
    """
    patched: list[Any] = []
    if "torch._dynamo" not in sys.modules:
        for fn in _disabled_functions():
            if getattr(fn, "__dynamo_disable", None) is None:
                try:
                    fn.__dynamo_disable = fn
                except (AttributeError, TypeError):
                    continue
                patched.append(fn)
    try:
        yield
    finally:
        for done in patched:
            if getattr(done, "__dynamo_disable", None) is done:
                delattr(done, "__dynamo_disable")


_SCANNED: list[tuple[int, list[Any]]] = []  # (len(sys.modules) at the scan, functions)


def _disabled_functions() -> list[Any]:
    """The functions behind every ``torch._disable_dynamo`` wrapper that exists.

    The wrappers are the functions whose code is the wrapper's: `gc.get_referrers` of
    that code object finds them in one walk of the heap in C (about 30 ms; a Python loop
    over `gc.get_objects` took twice that), and the result is kept until a module is
    imported (wrappers are made when torch's modules are defined); a wrapper made some
    other way is simply not patched, and its first call imports ``torch._dynamo`` as it
    would without this context.
    """
    if _SCANNED and _SCANNED[0][0] == len(sys.modules):
        return _SCANNED[0][1]
    try:
        import torch._compile as tc

        probe = tc._disable_dynamo(lambda: None)
        code = probe.__code__
        slot = code.co_freevars.index("fn")
    except (ImportError, AttributeError, ValueError):
        return []
    found = [
        obj.__closure__[slot].cell_contents
        for obj in gc.get_referrers(code)
        if type(obj) is type(probe) and obj.__code__ is code and obj.__closure__
    ]
    _SCANNED[:] = [(len(sys.modules), found)]
    return found
