"""Record whole-sequence recurrent calls as one ATen call, not one per time step.

Contract: `composite_calls(rec)` is a context manager entered inside the capture's
recording (recorder.py); while it is active, every ``torch.lstm`` / ``torch.gru`` /
``torch.rnn_tanh`` / ``torch.rnn_relu`` call on a padded (not packed) batch is recorded
as one call of the matching ATen op (``aten.gru.input``...), which ops_rnn.py lowers to
one kernel with a ``seq for t`` recurrence, and nothing of its per-step decomposition
is recorded.

Why (Note [Composite RNN capture]): on CPU, eager PyTorch decomposes ``nn.GRU`` and
``nn.RNN`` *above* the dispatcher's Python key (CompositeImplicitAutograd), so a
dispatch-level capture sees ``layers x directions x steps`` small calls (``addmm``,
``sigmoid``, ``stack``...). For a KernelBench level-3 GRU (6 layers x 512 steps) that
is ~70 000 calls: minutes of capture, lowering, verifying and lifting, for a program
whose every step is the same cell. Above the dispatcher the call is still whole: while
the capture runs, ``torch._VF.<op>`` and ``torch.<op>`` are wrapped. The outputs are
made without running the decomposition when the tensors carry no data (meta or fake
capture: the shapes and eager's layouts follow from the arguments) and by running it,
unrecorded, when they are real (the reference replay), so every run of the program
records the same calls. On CPU ``nn.LSTM`` reaches one ``mkldnn_rnn_layer`` per layer
and direction, already whole-sequence, but that CPU kernel is device-dependent (a meta
capture would record something else), so it is recorded whole too, as
``aten.lstm.input``: the capture can then stay on ``meta``.

Circular padding is recorded whole too, as ``aten._pad_circular`` (Note [Whole circular
pad]), and so are the ops of `DEVICE_KERNELS` (Note [CUDA kernel granularity]).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Protocol

__all__ = [
    "COMPOSITE_RNNS",
    "DEVICE_KERNELS",
    "composite_calls",
    "is_composite_call",
    "is_whole_circular_pad",
]

COMPOSITE_RNNS = frozenset({"lstm", "gru", "rnn_tanh", "rnn_relu"})
"""Torch functions recorded whole (their ``.input`` overload)."""


class _Sink(Protocol):
    """What the capture's recorder offers this module (recorder.Recorder)."""

    suspended: bool

    def record(
        self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
    ) -> None: ...


def is_composite_call(func: Any, args: tuple[Any, ...]) -> bool:
    """True for a call recorded whole: ``gru(input, hx, params[], has_biases, num_layers,
    dropout, train, bidirectional, batch_first)`` (the ``.input`` overload; ``.data``
    takes packed ``batch_sizes``) with the plain parameter list ops_rnn.py lowers: an
    LSTM with projections (``proj_size``) keeps its per-step decomposition."""
    name = getattr(func, "__name__", "")
    if name not in COMPOSITE_RNNS or len(args) != 9 or not isinstance(args[2], list | tuple):
        return False
    per = 4 if args[3] else 2
    dirs = 2 if args[7] else 1
    return len(args[2]) == int(args[4]) * dirs * per and getattr(args[0], "ndim", 0) == 3


# Note [Whole circular pad]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``F.pad(x, pad, mode="circular")`` (and ``padding_mode="circular"`` convolutions)
# reach ``_pad_circular``, which eager decomposes above the dispatcher into
# ``new_empty`` plus slice copies that fill the output in place: the interior first,
# then each dim's borders from slices of the output itself. Those border copies read
# elements of the uninitialised output that a later copy overwrites (the corners), so
# the captured program reads memory nothing wrote and validation stops there (E0302).
# While the capture runs, ``torch._C._nn.pad`` (what ``F.pad`` calls) is wrapped: a
# circular pad with paddings in ``[0, size]`` is recorded as one ``_pad_circular`` call
# (ops_pad.py lowers it to one kernel of wrapped-around copies) and its decomposition
# runs unrecorded; any other pad is left alone.


def is_whole_circular_pad(x: Any, pad: Any, mode: Any) -> bool:
    """True for a circular ``pad(x, pad, mode)`` recorded whole: every padding in
    ``[0, size]`` of its dim (negative paddings crop: left to the decomposition).

    >>> import torch
    >>> is_whole_circular_pad(torch.empty(1, 2, 3), [1, 3], "circular")
    True
    >>> is_whole_circular_pad(torch.empty(1, 2, 3), [1, 4], "circular")
    False
    """
    if mode != "circular" or not isinstance(pad, list | tuple) or len(pad) % 2:
        return False
    shape = tuple(getattr(x, "shape", ()))
    if len(pad) // 2 > len(shape):
        return False
    return all(0 <= int(p) <= shape[len(shape) - 1 - k // 2] for k, p in enumerate(pad))


# Note [CUDA kernel granularity]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The unfused model charges each kernel the target's library launches, through DRAM
# (issue 28 item 2). A capture on CPU sees the CPU's decomposition of composite ops that
# are one kernel on CUDA: ``nn.RMSNorm`` reaches ``pow, mean, add, rsqrt, mul, mul`` (six
# kernels; CUDA runs ``_fused_rms_norm``), and ``softmax(half, dtype=float32)`` a cast
# then a float softmax (CUDA runs ``_softmax(x, dim, half_to_float=True)``, reading the
# half input). While a forward capture runs, the Python entry of each such op is wrapped:
# the call is recorded as the one ATen op CUDA runs, and its CPU decomposition makes the
# outputs unrecorded. A training step keeps the decomposition (its backward reads the
# decomposition's saved values).

DEVICE_KERNELS: dict[str, str] = {
    "rms_norm": "aten.rms_norm.default (CUDA: one _fused_rms_norm kernel)",
    "softmax": "aten._softmax.default(x, dim, half_to_float=True) for a 16-bit input and "
               "dtype=float32 (one CUDA kernel)",
    "log_softmax": "aten._log_softmax.default(x, dim, half_to_float=True), likewise",
    "scaled_dot_product_attention": "aten.scaled_dot_product_attention.default for 4-D "
                                    "inputs with a mask of another rank than 2 or 4 (ALiBi's "
                                    "[H, L, L]): the CPU takes the math path, upcast to fp32 "
                                    "for 16-bit inputs; CUDA runs one fused kernel at the "
                                    "input dtype (Note [Whole attention])",
}
"""Python entries recorded as the one ATen op CUDA runs for them."""


def _device_call(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, tuple[
        Any, ...]] | None:
    """``(ATen op, its arguments)`` for a call of `DEVICE_KERNELS` CUDA runs as one kernel,
    or None (another form: left to the decomposition)."""
    import torch

    if name == "scaled_dot_product_attention":
        return _attention_call(args, kwargs)
    if name == "rms_norm":
        names = ("input", "normalized_shape", "weight", "eps")
        if len(args) > 4 or any(k not in names for k in kwargs):
            return None
        b = {**dict(zip(names, args, strict=False)), **kwargs}
        return torch.ops.aten.rms_norm.default, (b["input"], list(b["normalized_shape"]),
                                                 b.get("weight"), b.get("eps"))
    params = ("input", "dim", "dtype")
    if len(args) > 3 or any(k not in params for k in kwargs):
        return None
    b = {**dict(zip(params, args, strict=False)), **kwargs}
    x, dim = b.get("input"), b.get("dim")
    if (not isinstance(x, torch.Tensor) or not isinstance(dim, int)
            or b.get("dtype") is not torch.float32
            or x.dtype not in (torch.float16, torch.bfloat16)):
        return None
    op = torch.ops.aten._softmax if name == "softmax" else torch.ops.aten._log_softmax
    return op.default, (x, dim, True)


# Note [Whole attention]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# ``F.scaled_dot_product_attention`` on 4-D inputs reaches the CPU flash kernel only for a
# mask of rank 2 or 4; any other mask (ALiBi's per-head bias ``[H, L, L]``, a ``[L]`` key
# padding row) sends the CPU to the math path, which casts 16-bit inputs to fp32 and runs
# two fp32 ``bmm``s and a softmax. Charged as captured, the contractions ran at the
# fp32-accurate 3xTF32 rate, 6x the bf16 minimum (issue 28 round 3: ALiBi, 2 x 16 heads x
# 2048 x 128 bf16, fused 208.5 us against a 34.7 us minimum). CUDA's memory-efficient
# kernel takes any broadcastable mask at the input dtype, so such a call is recorded whole
# as ``aten.scaled_dot_product_attention`` (ops_attention.py lowers it as one attention
# kernel at the input dtype); masks of rank 2 or 4 already reach a fused CPU kernel.


def _attention_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, tuple[
        Any, ...]] | None:
    """The whole-attention call of Note [Whole attention], or None (left as dispatched)."""
    import torch

    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale",
             "enable_gqa")
    if len(args) > len(names) or any(k not in names for k in kwargs):
        return None
    b = {**dict(zip(names, args, strict=False)), **kwargs}
    q, mask = b.get("query"), b.get("attn_mask")
    if (not isinstance(q, torch.Tensor) or q.ndim != 4 or not isinstance(mask, torch.Tensor)
            or mask.ndim in (2, 4) or float(b.get("dropout_p", 0.0)) != 0.0
            or q.dtype not in (torch.float16, torch.bfloat16, torch.float32)):
        return None
    return torch.ops.aten.scaled_dot_product_attention.default, (
        q, b["key"], b["value"], mask, 0.0, bool(b.get("is_causal", False)), b.get("scale"),
        bool(b.get("enable_gqa", False)))


def _outputs(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``(output, h_n[, c_n])`` of the call without running it (shapes from the arguments)."""
    import torch

    x, hx = args[0], args[1]
    states = tuple(hx) if isinstance(hx, list | tuple) else (hx,)
    dirs = 2 if args[7] else 1
    hidden = int(states[0].shape[-1])
    n_t, n_b = (x.shape[1], x.shape[0]) if args[8] else (x.shape[0], x.shape[1])
    # Eager's output is time-major in memory, a transposed view when batch_first: the
    # layout decides which calls later ops record (``linear`` copies a transposed input).
    out = torch.empty((n_t, n_b, dirs * hidden), dtype=x.dtype, device=x.device)
    if args[8]:
        out = out.transpose(0, 1)
    return (out, *(torch.empty(tuple(h.shape), dtype=h.dtype, device=h.device) for h in states))


def _has_data(t: Any) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return not isinstance(t, FakeTensor) and t.device.type != "meta"


class _Wholes:
    """The replacements that record a call whole into ``rec`` (`composite_calls`)."""

    def __init__(self, rec: _Sink, pad: Any) -> None:
        self.rec, self.pad = rec, pad

    def rnn(self, name: str, func: Any) -> Any:
        """``func`` (``_VF.lstm``...) recorded as one ``aten.<name>.input`` call."""
        import torch

        op = getattr(torch.ops.aten, name).input
        rec = self.rec

        def whole(*args: Any, **kwargs: Any) -> Any:
            if kwargs or rec.suspended or not is_composite_call(func, args):
                return func(*args, **kwargs)
            rec.suspended = True
            try:
                out = func(*args) if _has_data(args[0]) else _outputs(args)
            finally:
                rec.suspended = False
            rec.record(op, args, {}, tuple(out))
            return out

        whole.__name__ = name
        return whole

    def _unrecorded(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self.rec.suspended = True
        try:
            return func(*args, **kwargs)
        finally:
            self.rec.suspended = False

    def circular_pad(self, *args: Any, **kwargs: Any) -> Any:
        """``torch._C._nn.pad``: a whole circular pad as one ``_pad_circular`` call."""
        import torch

        call = _pad_args(args, kwargs)
        if self.rec.suspended or call is None or not is_whole_circular_pad(*call):
            return self.pad(*args, **kwargs)
        out = self._unrecorded(self.pad, args, kwargs)
        self.rec.record(torch.ops.aten._pad_circular.default, (call[0], list(call[1])), {}, out)
        return out

    def op(self, name: str, func: Any) -> Any:
        """``func`` recorded as the device kernel's call (Note [CUDA kernel granularity])."""

        def whole(*args: Any, **kwargs: Any) -> Any:
            call = None if self.rec.suspended else _device_call(name, args, kwargs)
            if call is None:
                return func(*args, **kwargs)
            out = self._unrecorded(func, args, kwargs)
            self.rec.record(call[0], call[1], {}, out)
            return out

        whole.__name__ = name
        return whole


@contextlib.contextmanager
def composite_calls(rec: _Sink, *, rnns: bool = True) -> Iterator[None]:
    """Record circular pads and (with ``rnns``) the calls of `COMPOSITE_RNNS` whole into
    ``rec`` (module docstring).

    Args:
        rec: the recorder; its ``suspended`` flag is set while the outputs are made, so
            the calls making them are not recorded.
        rnns: record the RNNs whole too (off for a training step, which differentiates
            through their per-step ops; a circular pad's decomposition still runs, so
            autograd records its backward).
    """
    import torch
    from torch import _VF

    wholes = _Wholes(rec, torch._C._nn.pad)
    # Note [Composite RNN capture]: patched, not intercepted by a TorchFunctionMode: an
    # active mode makes ``has_torch_function`` true, which turns off the fast paths eager
    # takes (``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer``).
    # nn.RNNBase calls ``_VF.gru``; users may call ``torch.gru``. Note [CUDA kernel
    # granularity]: the device-kernel entries in forward captures only, as the RNNs.
    patches: list[tuple[Any, str, Any]] = [
        (owner, name, wholes.rnn(name, getattr(owner, name)))
        for owner in (_VF, torch) for name in (sorted(COMPOSITE_RNNS) if rnns else ())
    ] + [
        (owner, name, wholes.op(name, getattr(owner, name)))
        for owner, name in ((torch, "rms_norm"), (torch, "softmax"), (torch, "log_softmax"),
                            (torch.Tensor, "softmax"), (torch.Tensor, "log_softmax"),
                            (torch.nn.functional, "scaled_dot_product_attention"))
        if rnns
    ]
    patches.append((torch._C._nn, "pad", wholes.circular_pad))
    with _patched(patches):
        yield


@contextlib.contextmanager
def _patched(patches: list[tuple[Any, str, Any]]) -> Iterator[None]:
    """``setattr(owner, name, new)`` for each patch, undone on exit (an attribute the
    owner did not hold itself is deleted again)."""
    missing = object()
    saved = [(owner, name, vars(owner).get(name, missing)) for owner, name, _ in patches]
    for owner, name, new in patches:
        setattr(owner, name, new)
    try:
        yield
    finally:
        for owner, name, old in reversed(saved):
            if old is missing:
                delattr(owner, name)  # ``_VF`` resolves it through ``__getattr__`` again
            else:
                setattr(owner, name, old)


def _pad_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, Any] | None:
    """``(input, pad, mode)`` of a ``pad(input, pad, mode="constant", value=None)`` call
    (``None`` when it does not bind)."""
    names = ("input", "pad", "mode", "value")
    if len(args) > len(names) or any(k not in names for k in kwargs):
        return None
    bound = {**dict(zip(names, args, strict=False)), **kwargs}
    if "input" not in bound or "pad" not in bound:
        return None
    return bound["input"], bound["pad"], bound.get("mode", "constant")
