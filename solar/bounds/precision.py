"""Precision policies: which compute unit and peak a piece of work may use.

Contract: ``(work class, dtype, convolution?, policy) -> Pipe`` (spec-independent),
then ``(spec, Pipe) -> peak`` with a documented fallback. A bound divides FLOPs by
the chosen peak, so every choice errs toward the LARGER peak: where a device lacks
the requested figure, the highest peak of that device that could execute the work
is used, and the fallback is reported as an assumption.

Policies (docs/bounds.md, "Precision policy"):

=============  =====================================================================
``default``    mirrors PyTorch: fp32 matmuls on the fp32 vector units
               (``allow_tf32=False`` for matmul), fp32 convolutions on TF32 tensor
               cores (cuDNN ``allow_tf32=True``), bf16/fp16/fp8/int8 contractions on
               tensor cores, everything else on vector units at its dtype
``strict-fp32``  every float op on the fp32 vector units (no TF32, no tensor cores);
               fp64 stays fp64
``tf32``       as default, but fp32 matmuls also on TF32 tensor cores
``bf16``       as default, but every float contraction at bf16 on tensor cores
``fp16``       likewise at fp16
``fp8``        likewise at fp8
=============  =====================================================================
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
    """A compute unit at a precision, e.g. ``tensor:tf32``.

    Attributes:
        unit: the compute unit (``tensor`` or ``vector``), not a work class.
        precision: the operand precision the unit runs at.
    """

    unit: ComputeUnit
    precision: Precision

    @property
    def label(self) -> str:
        """``unit:precision``."""
        return f"{self.unit}:{self.precision.value}"


@dataclass(frozen=True, slots=True)
class ResolvedPipe:
    """A pipe resolved on a device.

    Attributes:
        requested: what the policy asks for (its label keys compute time).
        peak_flops_per_s: the peak used.
        source: the device figure behind the peak, e.g. ``vector:fp32``.
        fallback: why the requested figure was not used, or ``""``.
    """

    requested: Pipe
    peak_flops_per_s: float
    source: Pipe
    fallback: str

    @property
    def label(self) -> str:
        """The requested pipe's label."""
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

    >>> [p.label for p in policy_pipe("contraction", DType.F32, False, "default")]
    ['vector:fp32']
    >>> [p.label for p in policy_pipe("contraction", DType.F32, True, "default")]
    ['tensor:tf32']
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
            return (Pipe("tensor", Precision.TF32),)
        return (Pipe("vector", Precision.FP32),)
    return (Pipe("tensor", prec),)


def resolve_pipe(
    spec: HardwareSpec, work: WorkClass, dtype: DType, convolution: bool,
    policy: PrecisionPolicy,
) -> ResolvedPipe:
    """The peak some work runs at on ``spec`` under ``policy``.

    Fallback when the device lacks every allowed figure: the highest peak of the
    device among the units that could execute the work (any float figure for
    float work, any figure for integer work), which keeps the bound a lower bound.

    Raises:
        BoundError: E0452 the device has no usable peak at all.
    """
    wanted = policy_pipe(work, dtype, convolution, policy)
    found = [(p, v) for p in wanted if (v := spec.peak_for(p.precision, p.unit)) is not None]
    if found:
        best, peak = max(found, key=lambda pv: pv[1])
        return ResolvedPipe(wanted[0], float(peak), best, "")
    # Note [Peak fallback]: the device publishes none of the allowed figures.
    is_float = dtype.is_float
    vector = _figures(spec, "vector", is_float)
    tensor = _figures(spec, "tensor", is_float)
    req = wanted[0]
    if req.unit == "vector" and vector:
        best, peak = max(vector, key=lambda pv: pv[1])
        if req.precision in (Precision.BF16, Precision.FP16):
            return ResolvedPipe(req, 2.0 * peak, best, (
                f"no {req.label} figure: assumed packed two-wide, 2x {best.label} (upper end)"
            ))
        return ResolvedPipe(req, peak, best, f"no {req.label} figure: used {best.label}")
    candidates = vector + tensor
    if not candidates:
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
