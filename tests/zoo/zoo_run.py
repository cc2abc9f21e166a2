"""Run one zoo model through SOLAR and through torch's own FLOP counter.

`run_zoo_model(model)` builds the model, analyses it with `solar.analyze` and counts
its FLOPs with ``torch.utils.flop_counter.FlopCounterMode`` on the same inputs; the
`ZooRow` it returns is what the zoo test asserts on and what `benchmarks/zoo.py` prints.

FlopCounterMode counts only the ops it knows (matmuls, convolutions, attention), so
SOLAR's total (which also counts elementwise work, norms, softmax) must be at least
FlopCounterMode's and close to it: `FLOP_RATIO_MAX` bounds how much more.

One difference is by design: a padded convolution's taps that land on the zero padding
multiply nothing, nor do a transposed convolution's taps that write the outputs its
``padding`` crops, and SOLAR's bound (a lower bound on the work) counts neither, while
FlopCounterMode counts both. So the floor SOLAR must reach is FlopCounterMode run with
`unpadded_conv_flop`, its own convolution formula with those taps left out (the same
counter, one formula replaced); the table shows both counts. The floor also counts
``_grouped_mm`` (MoE experts; FlopCounterMode has no formula for it on CPU) as ``2 M K N``
for its ``(M, K) x (G, K, N)`` form, in `grouped_mm_flop`, and CPU flash attention (no
formula either) as its CUDA twin, in `cpu_attention_flop`.
"""

from __future__ import annotations

import re
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

    if isinstance(padding, str):
        return int(conv_flop_count(x_shape, w_shape, out_shape, transposed=transposed))
    nd = len(x_shape) - 2
    if transposed:  # input position i's tap t writes output i*s - p + t*d: count the kept
        kept = 1
        for d in range(nd):
            s, p, dil = (v[d] if len(v) > 1 else v[0] for v in (stride, padding, dilation))
            kept *= sum(1 for i in range(x_shape[2 + d]) for t in range(w_shape[2 + d])
                        if 0 <= i * s - p + t * dil < out_shape[2 + d])
        return 2 * x_shape[0] * w_shape[0] * w_shape[1] * kept
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


def cpu_attention_flop(
    q_shape: Any, k_shape: Any, v_shape: Any, _dropout: float = 0.0, is_causal: bool = False,
    *args: Any, out_shape: Any = None, **kw: Any,
) -> int:
    """The CPU flash-attention op, which FlopCounterMode does not know: its CUDA twin's
    formula (``sdpa_flop_count``), over the query-key pairs a causal mask keeps."""
    from torch.utils.flop_counter import sdpa_flop_count

    full = int(sdpa_flop_count(q_shape, k_shape, v_shape))
    s_q, s_k = q_shape[-2], k_shape[-2]
    kept = sum(min(i + 1, s_k) for i in range(s_q)) if is_causal else s_q * s_k
    return full * kept // (s_q * s_k)


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
        aten._scaled_dot_product_flash_attention_for_cpu: cpu_attention_flop,
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


TRAIN_BATCH = 2
"""Batch of a zoo training step: two samples, so a batch norm over a 1x1 map (the last
stage of a 64x64 CNN) sees two values per channel in training mode (one is an error)."""


@dataclass(frozen=True, slots=True)
class TrainRow:
    """One zoo model's training step (``--train``, cold cache, H100_SXM, fused model).

    Attributes:
        name: ``library/model``.
        optimizer: the update, in words.
        phase_flops: FLOPs of the forward, backward and optimizer phases.
        phase_time_s: the fused bound of each phase alone, in seconds.
        step_flops: FLOPs of the whole step.
        step_time_s: the fused bound of the whole step.
        saved_activation_bytes: what the forward writes for the backward.
        coverage_complete: no uncovered op.
        uncovered: ``op xcount (share of bytes)`` of each uncovered op.
        validation: the validation status and strategy.
        wall_s: wall time of the analysis (building the model excluded).
    """

    name: str
    optimizer: str
    phase_flops: tuple[float, float, float]
    phase_time_s: tuple[float, float, float]
    step_flops: float
    step_time_s: float
    saved_activation_bytes: int
    coverage_complete: bool
    uncovered: tuple[str, ...]
    validation: str
    wall_s: float


def _batched(x: Any, batch: int) -> Any:
    """``x`` (a batch-1 zoo input) grown to ``batch`` distinct samples: fresh seeded
    normals for floats, the ids rolled along the sequence for integers (the same
    vocabulary). Repeating one sample would make a training-mode batch norm normalise
    identical values wherever a map has collapsed to one value per sample (GoogLeNet's
    3x3 pools over a 2x2 map): its gradients would be rounding noise on both sides."""
    import torch

    if not (isinstance(x, torch.Tensor) and x.dim() > 0 and x.shape[0] == 1):
        return x
    gen = torch.Generator().manual_seed(1)
    rows = [x]
    for k in range(1, batch):
        if x.is_floating_point():
            rows.append(torch.randn(x.shape, generator=gen, dtype=x.dtype))
        elif x.dim() > 1:
            rows.append(x.roll(k, dims=-1))
        else:
            rows.append(x)
    return torch.cat(rows)


def _fused(archs: Any) -> float:
    return float(next(b.time_s for b in archs[0].bounds if b.model == "fused"))


def run_zoo_train(
    model: ZooModel, *, optimizer: str = "adamw", validate: str | None = None
) -> TrainRow:
    """One training step of ``model`` at batch `TRAIN_BATCH` (default loss: the mean of
    every floating output; ``optimizer`` update), cold cache, the entry's validation (an
    fp32 comparison that fails is re-checked in float64 by the pipeline itself, Note
    [Float64 re-check] in solar/pipeline/validation.py)."""
    import torch

    from solar.pipeline import AnalyzeOptions, analyze_module

    options = AnalyzeOptions(
        train_step=True,
        train=True,
        optimizer=optimizer,  # type: ignore[arg-type]
        cache="cold",
        validate=validate or model.validate,  # type: ignore[arg-type]
        time_budget_s=900.0,
    )
    module, args, kwargs = model.build()
    args = tuple(_batched(a, TRAIN_BATCH) for a in args)
    kwargs = {k: _batched(v, TRAIN_BATCH) for k, v in kwargs.items()}
    torch.manual_seed(0)
    start = time.monotonic()
    report = analyze_module(module, args, options, kwargs=kwargs)
    wall = time.monotonic() - start
    return train_row(model.name, report, _status(report.validation), wall)


def train_row(name: str, report: Any, validation: str, wall_s: float) -> TrainRow:
    """The `TrainRow` of a training-step report (H100_SXM first, fused bounds)."""
    training = report.training
    assert training is not None
    phases = {p.phase: p for p in training.phases}
    order = ("forward", "backward", "optimizer")
    return TrainRow(
        name=name,
        optimizer=training.optimizer,
        phase_flops=tuple(phases[p].flops if p in phases else 0.0 for p in order),  # type: ignore[arg-type]
        phase_time_s=tuple(_fused(phases[p].archs) if p in phases else 0.0 for p in order),  # type: ignore[arg-type]
        step_flops=report.flops,
        step_time_s=_fused(report.archs),
        saved_activation_bytes=training.saved_activation_bytes,
        coverage_complete=report.coverage.complete,
        uncovered=tuple(
            f"{u.op} x{u.count} ({u.bytes_share:.2%})" for u in report.coverage.uncovered
        ),
        validation=validation,
        wall_s=wall_s,
    )


def run_sample_train(path: str) -> TrainRow:
    """``solar analyze PATH --train --cache cold`` (the file's own loss and optimizer)."""
    from pathlib import Path

    from solar.pipeline import AnalyzeOptions, analyze

    start = time.monotonic()
    report = analyze(Path(path), AnalyzeOptions(train_step=True, train=True, cache="cold"))
    wall = time.monotonic() - start
    return train_row(Path(path).name, report, _status(report.validation), wall)


def _status(val: Any) -> str:
    """``passed/full``; a skip with its diagnostic code (``skipped (E0511)``)."""
    if val.status == "skipped":
        codes = re.findall(r"error\[(E\d+)\]", val.reason or "")
        return f"skipped ({codes[0] if codes else (val.reason or '?')[:60]})"
    if val.dtype == "float64":  # Note [Float64 re-check] in solar/pipeline/validation.py
        return f"{val.status}/{val.strategy} (float64; fp32 failed)"
    return f"{val.status}/{val.strategy}"

