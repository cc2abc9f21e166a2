"""Zero-padding multiply-adds inside torch's convolution FLOP count.

Contract: ``(convolution call arguments, torch's FLOPs) -> FLOPs spent on padding``.
torch's ``FlopCounterMode`` counts a convolution as ``2 * out elements * in channels
per group * kernel taps``, every tap included; SOLAR's lowering guards the taps that
fall in the zero padding (a multiply by zero is no necessary work, so a lower bound
does not charge it). Note [Padding FLOPs]: to compare SOLAR's FLOPs with torch's
count (Note [Independent FLOP count] in capture.py), the taps over padding are counted
here from the shapes alone, independently of SOLAR's lowering, and subtracted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solar.frontends.pytorch.capture_types import RecordedCall

__all__ = ["CONVOLUTION_OPS", "padding_flops", "uncounted_ops", "valid_tap_fraction"]

CONVOLUTION_OPS = frozenset({"convolution", "_convolution", "convolution_overrideable"})
"""ATen convolutions whose positional arguments are ``(input, weight, bias, stride,
padding, dilation, transposed, ...)``."""


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


def padding_flops(op: str, args: Sequence[Any], flops: int) -> int:
    """The part of torch's ``flops`` for a call of ``op`` that multiplies zero padding.

    ``args`` are the call's positional arguments with tensors replaced by their shapes.
    Zero for anything but a non-transposed convolution with padding.
    """
    if op not in CONVOLUTION_OPS or len(args) < 7 or flops <= 0:
        return 0
    x, w, _bias, stride, padding, dilation, transposed = args[:7]
    if transposed or not any(int(p) for p in padding):
        return 0
    spatial, kernel = tuple(x)[2:], tuple(w)[2:]
    if not kernel or len(spatial) != len(kernel):
        return 0
    frac = valid_tap_fraction(spatial, kernel, stride, padding, dilation)
    return round(flops * (1.0 - frac))


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
