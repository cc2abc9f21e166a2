"""Run one zoo model through SOLAR and through torch's own FLOP counter.

`run_zoo_model(model)` builds the model, analyses it with `solar.analyze` and counts
its FLOPs with ``torch.utils.flop_counter.FlopCounterMode`` on the same inputs; the
`ZooRow` it returns is what the zoo test asserts on and what `benchmarks/zoo.py` prints.

FlopCounterMode counts only the ops it knows (matmuls, convolutions, attention), so
SOLAR's total (which also counts elementwise work, norms, softmax) must be at least
FlopCounterMode's and close to it: `FLOP_RATIO_MAX` bounds how much more.

One difference is by design: a padded convolution's taps that land on the zero padding
multiply nothing, and SOLAR's bound (a lower bound on the work) does not count them,
while FlopCounterMode does. So the floor SOLAR must reach is FlopCounterMode run with
`unpadded_conv_flop`, its own convolution formula with those taps left out (the same
counter, one formula replaced); the table shows both counts. The floor also counts
``_grouped_mm`` (MoE experts; FlopCounterMode has no formula for it on CPU) as ``2 M K N``
for its ``(M, K) x (G, K, N)`` form, in `grouped_mm_flop`.
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass
from typing import Any

from catalogue import ZooModel

FLOP_RATIO_MAX = 2.0
"""SOLAR's FLOPs / FlopCounterMode's at most: the elementwise work SOLAR adds on top of
the contractions stays well under the contractions' own count in every zoo model."""


@dataclass(frozen=True, slots=True)
class ZooRow:
    """One zoo model's figures.

    Attributes:
        name: ``library/model``.
        kernels: IR kernels.
        solar_flops: the report's total FLOPs.
        counter_flops: FlopCounterMode's total on the same inputs.
        counter_floor: the same without convolution taps on padding (SOLAR's floor).
        coverage_complete: no uncovered op.
        uncovered: ``op xcount`` of each uncovered op.
        validation: the validation status and strategy (``passed/full``).
        wall_s: wall time of the analysis (building the model excluded).
        peak_rss_bytes: this process's peak resident set so far.
    """

    name: str
    kernels: int
    solar_flops: float
    counter_flops: float
    counter_floor: float
    coverage_complete: bool
    uncovered: tuple[str, ...]
    validation: str
    wall_s: float
    peak_rss_bytes: int

    @property
    def flop_ratio(self) -> float:
        """SOLAR's FLOPs over the unpadded FlopCounterMode count (``inf`` if it saw none)."""
        return self.solar_flops / self.counter_floor if self.counter_floor else float("inf")


def valid_taps(n_in: int, n_out: int, k: int, stride: int, pad: int, dil: int) -> int:
    """Pairs (output position, kernel tap) of one conv dim that read inside the input.

    >>> valid_taps(16, 16, 3, 1, 1, 1)  # 16*3 taps, 2 of them on the padding
    46
    >>> valid_taps(5, 3, 3, 2, 1, 1)  # positions -1..1, 1..3, 3..5: 2 + 3 + 2
    7
    """
    return sum(1 for o in range(n_out) for t in range(k) if 0 <= o * stride - pad + t * dil < n_in)


def unpadded_conv_flop(
    x_shape: Any,
    w_shape: Any,
    _bias: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    transposed: bool,
    *args: Any,
    out_shape: Any = None,
    **kwargs: Any,
) -> int:
    """FlopCounterMode's convolution formula without the taps that read padding."""
    from torch.utils.flop_counter import conv_flop_count

    if transposed or isinstance(padding, str):
        return int(conv_flop_count(x_shape, w_shape, out_shape, transposed=transposed))
    nd = len(x_shape) - 2
    taps = 1
    for d in range(nd):
        taps *= valid_taps(
            x_shape[2 + d],
            out_shape[2 + d],
            w_shape[2 + d],
            stride[d] if len(stride) > 1 else stride[0],
            padding[d] if len(padding) > 1 else padding[0],
            dilation[d] if len(dilation) > 1 else dilation[0],
        )
    return 2 * out_shape[0] * w_shape[0] * w_shape[1] * taps


def grouped_mm_flop(
    a_shape: Any, b_shape: Any, *args: Any, out_shape: Any = None, **kw: Any
) -> int:
    """``2 M K N`` for ``(M, K) x (G, K, N)`` (every row in one group); batched 3-D x 3-D
    ``2 G M K N``."""
    if len(a_shape) == 2:
        return 2 * a_shape[0] * a_shape[1] * b_shape[-1]
    return 2 * a_shape[0] * a_shape[1] * a_shape[2] * b_shape[-1]


def counter_flops(
    module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], *, unpadded: bool = False
) -> float:
    """FlopCounterMode's total for one forward (no grad, the module in eval mode);
    ``unpadded`` swaps in `unpadded_conv_flop`."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    if isinstance(module, torch.nn.Module):
        module.eval()
    aten = torch.ops.aten
    custom = {
        aten.convolution: unpadded_conv_flop,
        aten._convolution: unpadded_conv_flop,
        aten._grouped_mm: grouped_mm_flop,
    }
    mode = FlopCounterMode(display=False, custom_mapping=custom if unpadded else None)
    with torch.no_grad(), mode:
        module(*args, **kwargs)
    return float(mode.get_total_flops())


def run_zoo_model(model: ZooModel, *, validate: str | None = None) -> ZooRow:
    """Analyse ``model`` with SOLAR (``validate`` overrides the entry's mode)."""
    import solar

    module, args, kwargs = model.build()
    reference = counter_flops(module, args, kwargs)
    floor = counter_flops(module, args, kwargs, unpadded=True)
    start = time.monotonic()
    report = solar.analyze(module, args, kwargs, validate=validate or model.validate)  # type: ignore[arg-type]
    wall = time.monotonic() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    val = report.validation
    return ZooRow(
        name=model.name,
        kernels=report.ir.kernels,
        solar_flops=report.flops,
        counter_flops=reference,
        counter_floor=floor,
        coverage_complete=report.coverage.complete,
        uncovered=tuple(f"{u.op} x{u.count}" for u in report.coverage.uncovered),
        validation=f"{val.status}/{val.strategy}",
        wall_s=wall,
        peak_rss_bytes=rss,
    )
