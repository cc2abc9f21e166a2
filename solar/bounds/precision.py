"""Precision policies: which compute unit and peak a piece of work may use.

Contract: ``(work class, dtype, convolution?, policy) -> Pipe`` (spec-independent),
then ``(spec, Pipe) -> peak`` with a documented fallback. A bound divides FLOPs by
the chosen peak, so every choice errs toward the LARGER peak: where a device lacks
the requested figure, the highest peak of that device that could execute the work
is used, and the fallback is reported as an assumption.

Policies (docs/bounds.md, "Precision policy"):

=============  =====================================================================
``default``    mirrors PyTorch's CUDA defaults: fp32 matmuls at fp32 accuracy
               (``allow_tf32=False``), which a real kernel may reach on the vector
               units, on an fp32 matrix unit, or by 3xTF32 / 6xBF16 emulation on tensor
               cores (PyTorch's own fp32 attention kernel does so); fp32 convolutions on
               TF32 tensor cores (cuDNN ``allow_tf32=True``); bf16/fp16/fp8/int8
               contractions on tensor cores; everything else on vector units at its
               dtype. On a TPU, fp32 contractions also run as one bf16 MXU pass (XLA's
               DEFAULT precision)
``strict-fp32``  every float op on the fp32 vector units (no TF32, no tensor cores);
               fp64 stays fp64: a what-if that excludes tensor cores
``tf32``       as default, but fp32 matmuls also on TF32 tensor cores
``bf16``       as default, but every float contraction at bf16 on tensor cores
``fp16``       likewise at fp16
``fp8``        likewise at fp8
=============  =====================================================================

Note [Emulated fp32]: an fp32-accurate product can be built from several lower-precision
tensor-core products: 3xTF32 (``a*b ~ a_big*b_big + a_big*b_small + a_small*b_big``,
CUTLASS ``OpMultiplyAddFastF32``; PyTorch's memory-efficient attention runs fp32 this way
on sm80+ whatever the TF32 flags say) and 6xBF16 (XLA's ``BF16_BF16_F32_X6``, JAX's
``Precision.HIGHEST`` on TPU). Such a pipe is a `Pipe` with ``passes > 1``: it runs at the
figure of its precision divided by ``passes``. Because a real fp32-accurate kernel may use
it, the bound of fp32-accurate contractions takes the fastest of these pipes and the
fp32 units.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

from solar.bounds.errors import BoundError
from solar.einsum import WorkClass
from solar.hw import ComputeUnit, HardwareSpec, Precision
from solar.ir import DType
from solar.options import PrecisionPolicy

__all__ = [
    "FP32_ACCURATE",
    "PACKED_VECTOR_FACTOR",
    "PRECISION_POLICIES",
    "Pipe",
    "PrecisionPolicy",
    "ResolvedPipe",
    "check_policy",
    "policy_pipe",
    "resolve_pipe",
]

PRECISION_POLICIES: tuple[PrecisionPolicy, ...] = get_args(PrecisionPolicy)

_DTYPE_PRECISION: dict[DType, Precision] = {
    DType.F64: Precision.FP64,
    DType.F32: Precision.FP32,
    DType.F16: Precision.FP16,
    DType.BF16: Precision.BF16,
    DType.F8E4M3: Precision.FP8,
    DType.F8E5M2: Precision.FP8,
    DType.I8: Precision.INT8,
}
_FLOAT_PRECISIONS = frozenset(
    {Precision.FP64, Precision.FP32, Precision.TF32, Precision.BF16, Precision.FP16,
     Precision.FP8, Precision.FP4}
)


@dataclass(frozen=True, slots=True)
class Pipe:
    """A compute unit at a precision, e.g. ``tensor:tf32``, or an emulation on it.

    Attributes:
        unit: the compute unit (``tensor`` or ``vector``), not a work class.
        precision: the operand precision the unit runs at.
        passes: unit operations per FLOP of the work: 1, or e.g. 3 for 3xTF32
            (Note [Emulated fp32]); the pipe runs at the precision's figure / passes.
    """

    unit: ComputeUnit
    precision: Precision
    passes: int = 1

    @property
    def precision_label(self) -> str:
        """``tf32``, or ``3xtf32`` for an emulation in three passes."""
        p = self.precision.value
        return p if self.passes == 1 else f"{self.passes}x{p}"

    @property
    def label(self) -> str:
        """``unit:precision`` (``tensor:3xtf32`` for an emulation).

        >>> Pipe("tensor", Precision.TF32, 3).label
        'tensor:3xtf32'
        """
        return f"{self.unit}:{self.precision_label}"


# Note [Emulated fp32]: the pipes that reach fp32 accuracy, fastest present wins.
FP32_ACCURATE: tuple[Pipe, ...] = (
    Pipe("vector", Precision.FP32),
    Pipe("tensor", Precision.FP32),  # fp32 matrix units (AMD MFMA f32)
    Pipe("tensor", Precision.TF32, 3),  # 3xTF32 (CUTLASS, PyTorch fp32 attention)
    Pipe("tensor", Precision.BF16, 6),  # 6xBF16 (XLA BF16_BF16_F32_X6)
)

# GA100 runs fp16 (non-tensor) at 4x its fp32 rate (A100 whitepaper, table 1: 78 vs 19.5
# TFLOP/s), the largest ratio any published device has; so an unpublished vector
# bf16/fp16 figure is at most 4x the device's fastest vector figure.
PACKED_VECTOR_FACTOR = 4.0


@dataclass(frozen=True, slots=True)
class ResolvedPipe:
    """A pipe resolved on a device.

    Attributes:
        requested: the pipe the work is charged to (its label keys compute time): the
            fastest pipe the policy allows that the device has a figure for, or, when
            it has none, the pipe the policy names (with a fallback peak).
        peak_flops_per_s: the peak used.
        source: the device figure behind the peak, e.g. ``vector:fp32``.
        fallback: why the policy's figure was not used, or ``""``.
    """

    requested: Pipe
    peak_flops_per_s: float
    source: Pipe
    fallback: str

    @property
    def label(self) -> str:
        """The label of the pipe the work is charged to."""
        return self.requested.label


def check_policy(policy: str) -> PrecisionPolicy:
    """Validate a policy name.

    Raises:
        BoundError: E0451 unknown policy (the message lists the valid ones).

    >>> check_policy("tf32")
    'tf32'
    """
    if policy not in PRECISION_POLICIES:
        raise BoundError(
            f"unknown precision policy `{policy}`; valid: {', '.join(PRECISION_POLICIES)}",
            code="E0451",
        )
    return policy


def policy_pipe(
    work: WorkClass, dtype: DType, convolution: bool, policy: PrecisionPolicy
) -> tuple[Pipe, ...]:
    """The pipes a policy allows for some work; the bound uses the fastest present.

    The first pipe is the one the policy names (it keys the work when the device
    publishes none of them); the others are pipes at least as accurate.

    >>> [p.label for p in policy_pipe("contraction", DType.F32, False, "default")]
    ['vector:fp32', 'tensor:fp32', 'tensor:3xtf32', 'tensor:6xbf16']
    >>> [p.label for p in policy_pipe("contraction", DType.F32, True, "default")][:2]
    ['tensor:tf32', 'vector:fp32']
    >>> [p.label for p in policy_pipe("contraction", DType.F32, False, "bf16")]
    ['tensor:bf16']
    >>> [p.label for p in policy_pipe("vector", DType.BF16, False, "strict-fp32")]
    ['vector:fp32']
    """
    prec = _DTYPE_PRECISION.get(dtype)
    if prec is None:  # i32, i64, bool: integer ALUs, at most the fp32 vector rate
        return (Pipe("vector", Precision.FP32),)
    if policy == "strict-fp32":
        return (Pipe("vector", Precision.FP64 if prec == Precision.FP64 else Precision.FP32),)
    if work == "vector":
        if prec == Precision.FP8:  # no fp8 vector ALUs: computed at fp16 or wider
            return (Pipe("vector", Precision.FP16),)
        if prec == Precision.INT8:
            return (Pipe("vector", Precision.FP32),)
        return (Pipe("vector", prec),)
    if prec == Precision.FP64:
        return (Pipe("tensor", Precision.FP64), Pipe("vector", Precision.FP64))
    if prec == Precision.INT8:
        return (Pipe("tensor", Precision.INT8),)
    if policy in ("bf16", "fp16", "fp8"):
        return (Pipe("tensor", Precision(policy)),)
    if prec == Precision.FP32:
        if convolution or policy == "tf32":
            return (Pipe("tensor", Precision.TF32), *FP32_ACCURATE)
        return FP32_ACCURATE
    return (Pipe("tensor", prec),)


def resolve_pipe(
    spec: HardwareSpec, work: WorkClass, dtype: DType, convolution: bool,
    policy: PrecisionPolicy,
) -> ResolvedPipe:
    """The peak some work runs at on ``spec`` under ``policy``.

    The fastest allowed pipe the device has a figure for (an emulated pipe runs at its
    figure / passes, Note [Emulated fp32]). On a TPU, fp32 contractions under
    ``default`` and ``tf32`` may also take one bf16 MXU pass (XLA's DEFAULT precision,
    what JAX and PyTorch/XLA run fp32 matmuls at on TPUs).

    Note [Peak fallback], when the device has no figure for the pipe the policy names:
    vector bf16/fp16 work runs at `PACKED_VECTOR_FACTOR` times the device's fastest
    vector figure; other work at the highest peak of the device among the units that
    could execute it (any float figure for float work, any figure for integer work).
    The fallback is used unless an allowed pipe the device has is faster (the pipes it
    has may all be slower than the one it does not publish); it is stated. Both keep
    the bound a lower bound.

    Raises:
        BoundError: E0452 the device has no usable peak at all.

    >>> from solar.hw import load_hardware_spec
    >>> r = resolve_pipe(load_hardware_spec("H100_SXM"), "contraction", DType.F32, False,
    ...                  "default")
    >>> r.label, round(r.peak_flops_per_s / 1e12, 1)
    ('tensor:3xtf32', 164.9)
    """
    wanted = policy_pipe(work, dtype, convolution, policy)
    if (spec.kind == "tpu" and work == "contraction" and dtype == DType.F32
            and policy in ("default", "tf32")):
        wanted = (*wanted, Pipe("tensor", Precision.BF16))
    found = [(p, v / p.passes) for p in wanted
             if (v := spec.peak_for(p.precision, p.unit)) is not None]
    best: ResolvedPipe | None = None
    if found:
        top = max(v for _, v in found)
        # the first allowed pipe within rounding of the top (3xTF32 and 6xBF16 tie on NVIDIA)
        pipe, peak = next((p, v) for p, v in found if v >= top * (1 - 1e-9))
        best = ResolvedPipe(pipe, float(peak), pipe, "")
        if found[0][0] == wanted[0]:
            return best
    # Note [Peak fallback]: the device publishes no figure for the pipe the policy names;
    # the pipes it does publish may all be slower than the unpublished one (a TF32
    # convolution on a device without a TF32 figure), so the fallback may win.
    fallback = _fallback(spec, work, dtype, wanted[0], required=best is None)
    if best is None or (fallback is not None and fallback.peak_flops_per_s > best.peak_flops_per_s):
        assert fallback is not None
        return fallback
    return best


def _fallback(spec: HardwareSpec, work: WorkClass, dtype: DType, req: Pipe, *,
              required: bool) -> ResolvedPipe | None:
    is_float = dtype.is_float
    vector = _figures(spec, "vector", is_float)
    tensor = _figures(spec, "tensor", is_float)
    if req.unit == "vector" and vector:
        best, peak = max(vector, key=lambda pv: pv[1])
        if req.precision in (Precision.BF16, Precision.FP16):
            k = PACKED_VECTOR_FACTOR
            return ResolvedPipe(req, k * peak, best, (
                f"no {req.label} figure: assumed {k:g}x {best.label} (the largest published "
                "16-bit/fp32 vector ratio, A100's; upper end)"
            ))
        return ResolvedPipe(req, peak, best, f"no {req.label} figure: used {best.label}")
    candidates = vector + tensor
    if not candidates:
        if not required:
            return None
        raise BoundError(
            f"hardware spec {spec.name} has no peak usable for {work} work in {dtype}",
            code="E0452",
        )
    best, peak = max(candidates, key=lambda pv: pv[1])
    return ResolvedPipe(req, peak, best, (
        f"no {req.label} figure: used the device's highest usable peak {best.label} (upper end)"
    ))


def _figures(spec: HardwareSpec, unit: ComputeUnit, float_only: bool) -> list[tuple[Pipe, float]]:
    table = spec.vector_flops_per_s if unit == "vector" else spec.tensor_flops_per_s
    return [
        (Pipe(unit, prec), float(v)) for prec, v in table.items()
        if not float_only or prec in _FLOAT_PRECISIONS
    ]
