"""Zero-padding multiply-adds inside torch's convolution FLOP count, and the formulas
that fill or correct torch's table (Note [Counter gaps], Note [Grouped convolution
backward]).

Contract: ``(convolution call arguments, torch's FLOPs) -> FLOPs spent on padding``.
torch's ``FlopCounterMode`` counts a convolution as ``2 * out elements * in channels
per group * kernel taps``, every tap included; SOLAR's lowering guards the taps that
fall in the zero padding (a multiply by zero is no necessary work, so a lower bound
does not charge it). A transposed convolution's ``padding`` crops its output instead:
the taps that would write the cropped positions are no necessary work either. Note
[Padding FLOPs]: to compare SOLAR's FLOPs with torch's
count (Note [Independent FLOP count] in capture.py), the taps over padding are counted
here from the shapes alone, independently of SOLAR's lowering, and subtracted, for
the forward and for ``convolution_backward`` alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from solar.frontends.pytorch.capture_types import RecordedCall

__all__ = [
    "CONVOLUTION_BACKWARD_OPS",
    "CONVOLUTION_OPS",
    "CORRECTED_FORMULAS",
    "EXTRA_FORMULAS",
    "padding_flops",
    "uncounted_ops",
    "valid_tap_fraction",
]

CONVOLUTION_OPS = frozenset({"convolution", "_convolution", "convolution_overrideable"})
"""ATen convolutions whose positional arguments are ``(input, weight, bias, stride,
padding, dilation, transposed, ...)``."""
CONVOLUTION_BACKWARD_OPS = frozenset({"convolution_backward", "convolution_backward_overrideable"})
"""ATen convolution backwards: ``(grad_output, input, weight, bias_sizes, stride, padding,
dilation, transposed, ...)``. The gradients of the input and of the weight each pair
every output position with every tap, as the forward does: the taps over zero padding
are no necessary work in either."""


def _valid_taps(size: int, kernel: int, stride: int, pad: int, dilation: int) -> tuple[int, int]:
    """(taps inside the input, all taps) summed over the output positions of one dim.

    >>> _valid_taps(7, 3, 1, 1, 1)  # positions 0 and 6 lose one tap each
    (19, 21)
    """
    out = (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
    valid = 0
    for o in range(max(out, 0)):
        start = o * stride - pad
        valid += sum(1 for k in range(kernel) if 0 <= start + k * dilation < size)
    return valid, max(out, 0) * kernel


def valid_tap_fraction(
    spatial: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
) -> float:
    """The share of a convolution's taps that read the input, not its zero padding.

    >>> round(valid_tap_fraction((7, 7), (3, 3), (1, 1), (1, 1), (1, 1)), 4)
    0.8186
    >>> valid_tap_fraction((8,), (3,), (1,), (0,), (1,))
    1.0
    """
    frac = 1.0
    for d, k in enumerate(kernel):
        valid, total = _valid_taps(
            spatial[d], k, _at(stride, d), _at(padding, d), _at(dilation, d)
        )
        frac *= valid / total if total else 1.0
    return frac


def _at(values: Sequence[int], d: int) -> int:
    return int(values[d] if len(values) > d else values[-1])


def _kept_taps(
    size: int, kernel: int, stride: int, pad: int, dilation: int, out: int
) -> tuple[int, int]:
    """(taps that land inside the output, all taps) of one dim of a transposed
    convolution: input position ``i``'s tap ``t`` writes output ``i*stride - pad +
    t*dilation``, and ``padding`` crops the outputs before 0 and past ``out``.

    >>> _kept_taps(4, 3, 2, 1, 1, 7)  # outputs -1..7: the first and last are cropped
    (10, 12)
    """
    kept = sum(
        1 for i in range(size) for t in range(kernel) if 0 <= i * stride - pad + t * dilation < out
    )
    return kept, size * kernel


def _transposed_fraction(x: Sequence[int], w: Sequence[int], args: Sequence[Any]) -> float:
    """The share of a transposed convolution's taps whose output is not cropped."""
    stride, padding, dilation = args[3], args[4], args[5]
    out_pad = args[7] if len(args) > 7 else (0,)
    frac = 1.0
    for d, k in enumerate(tuple(w)[2:]):
        size = int(tuple(x)[2 + d])
        s, p, dil = _at(stride, d), _at(padding, d), _at(dilation, d)
        out = (size - 1) * s - 2 * p + dil * (k - 1) + _at(out_pad, d) + 1
        kept, total = _kept_taps(size, int(k), s, p, dil, out)
        frac *= kept / total if total else 1.0
    return frac


def padding_flops(op: str, args: Sequence[Any], flops: int) -> int:
    """The part of torch's ``flops`` for a call of ``op`` that multiplies zero padding,
    or, for a transposed convolution, that lands on outputs its ``padding`` crops.

    ``args`` are the call's positional arguments with tensors replaced by their shapes.
    Zero for anything but a convolution (or its backward) with padding. The backward's
    two products, ``grad_input`` (the transposed convolution of ``grad_output``) and
    ``grad_weight`` (``input`` against ``grad_output``), pair the same output positions
    with the same taps as the forward, so the share over padding is the forward's.
    """
    if op in CONVOLUTION_BACKWARD_OPS and len(args) >= 9:
        _grad_out, x, w, _bias_sizes, stride, padding, dilation, transposed, out_pad = args[:9]
        op, args = "convolution", (x, w, None, stride, padding, dilation, transposed, out_pad)
    if op not in CONVOLUTION_OPS or len(args) < 7 or flops <= 0:
        return 0
    x, w, _bias, stride, padding, dilation, transposed = args[:7]
    spatial, kernel = tuple(x)[2:], tuple(w)[2:]
    if not kernel or len(spatial) != len(kernel):
        return 0
    if transposed:
        frac = _transposed_fraction(x, w, args)
    elif not any(int(p) for p in padding):
        return 0
    else:
        frac = valid_tap_fraction(spatial, kernel, stride, padding, dilation)
    return round(flops * (1.0 - frac))


# Note [Counter gaps]
# ~~~~~~~~~~~~~~~~~~~
# torch's ``flop_registry`` has no formula for the CPU flash-attention ops that
# ``scaled_dot_product_attention`` dispatches to on CPU, so the independent count saw no
# attention FLOPs there and a SOLAR lowering that dropped them would pass the shortfall
# check. `EXTRA_FORMULAS` fills the gap with torch's own ``sdpa_flop_count`` /
# ``sdpa_backward_flop_count`` (the formulas of the CUDA flash ops, checked against the
# registry in tests/frontends/pytorch/test_padding_flops.py); a causal call counts only
# the query-key pairs the mask keeps (``k <= q``, top-left aligned as torch's is_causal),
# which is what a lower bound may charge.


def _causal_share(query: Any, key: Any, is_causal: bool) -> tuple[int, int]:
    """(kept query-key pairs, all pairs) of an attention call."""
    s_q, s_k = int(query.shape[-2]), int(key.shape[-2])
    if not is_causal:
        return s_q * s_k, s_q * s_k
    return sum(min(q + 1, s_k) for q in range(s_q)), s_q * s_k


def _cpu_flash(
    query: Any, key: Any, value: Any, dropout_p: float = 0.0, is_causal: bool = False,
    *_args: Any, out_val: Any = None, **_kwargs: Any,
) -> int:
    from torch.utils.flop_counter import sdpa_flop_count

    count = cast("Callable[..., int]", sdpa_flop_count)  # torch leaves it unannotated
    full = count(tuple(query.shape), tuple(key.shape), tuple(value.shape))
    kept, total = _causal_share(query, key, bool(is_causal))
    return int(full) * kept // total if total else 0


def _cpu_flash_backward(
    grad_out: Any, query: Any, key: Any, value: Any, _out: Any, _lse: Any,
    dropout_p: float = 0.0, is_causal: bool = False,
    *_args: Any, out_val: Any = None, **_kwargs: Any,
) -> int:
    from torch.utils.flop_counter import sdpa_backward_flop_count

    count = cast("Callable[..., int]", sdpa_backward_flop_count)  # torch: unannotated
    full = count(tuple(grad_out.shape), tuple(query.shape), tuple(key.shape), tuple(value.shape))
    kept, total = _causal_share(query, key, bool(is_causal))
    return int(full) * kept // total if total else 0


EXTRA_FORMULAS: dict[str, Any] = {
    "_scaled_dot_product_flash_attention_for_cpu": _cpu_flash,
    "_scaled_dot_product_fused_attention_overrideable": _cpu_flash,
    "_scaled_dot_product_flash_attention_for_cpu_backward": _cpu_flash_backward,
}
"""Formulas for ops torch's ``flop_registry`` does not know (Note [Counter gaps]), by
overload-packet name, called like the registry's (tensors, then ``out_val``)."""


# Note [Grouped convolution backward]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torch's ``conv_backward_flop`` counts ``grad_weight`` as the convolution of ``input``
# (batch and channels swapped) with ``grad_output``, whose channel product is then
# ``C_in * C_out``: every input channel against every output channel, which is right
# for ``groups = 1`` only. A grouped convolution pairs each output channel with the
# ``C_in / groups`` input channels of its group, so the true count is the forward's,
# ``1 / groups`` of torch's (a depthwise convolution's ``grad_weight``: ``C`` times too
# many FLOPs, and a training step of EfficientNet or MobileNet read as a 90% "shortfall").
# `CORRECTED_FORMULAS` applies torch's formula and divides that term by ``groups``;
# ``grad_input`` (a transposed convolution with the grouped weight) torch counts right.


def _conv_backward(
    grad_out: Any, x: Any, w: Any, bias_sizes: Any, stride: Any, padding: Any,
    dilation: Any, transposed: bool, output_padding: Any, groups: int, output_mask: Any,
    *_args: Any, out_val: Any = None, **_kwargs: Any,
) -> int:
    import torch
    from torch.utils.flop_counter import conv_flop_count, flop_registry

    torch_count = flop_registry[torch.ops.aten.convolution_backward]
    total = int(torch_count(grad_out, x, w, bias_sizes, stride, padding, dilation, transposed,
                            output_padding, groups, output_mask, out_val=out_val))
    grad_w = out_val[1] if out_val is not None and len(out_val) > 1 else None
    if int(groups) <= 1 or not output_mask[1] or grad_w is None:
        return total

    def t(shape: Any) -> list[int]:
        return [int(shape[1]), int(shape[0]), *map(int, shape[2:])]

    a, b = (grad_out.shape, x.shape) if transposed else (x.shape, grad_out.shape)
    counted = int(conv_flop_count(t(a), t(b), t(grad_w.shape)))
    return total - counted + counted // int(groups)


CORRECTED_FORMULAS: dict[str, Any] = {"convolution_backward": _conv_backward}
"""Formulas that replace torch's where its count is wrong (Note [Grouped convolution
backward]), by overload-packet name, called like the registry's."""


def uncounted_ops(calls: Iterable[RecordedCall]) -> tuple[str, ...]:
    """The ops of ``calls`` that compute but that torch's FLOP counter has no formula
    for: fused internal ops (``_transformer_encoder_layer_fwd``) first, then by the
    elements they write, most first (the report names them beside the FLOPs check)."""
    from solar.frontends.pytorch.capture_types import op_name

    written: dict[str, int] = {}
    for c in calls:
        if c.counted_flops is None and c.kind not in ("view", "host"):
            op = op_name(c.target)
            written[op] = written.get(op, 0) + sum(m.numel for m in c.outputs if m is not None)
    return tuple(sorted(written, key=lambda op: (not op.startswith("_"), -written[op], op)))
