"""The bytes of a precision what-if: a low-precision policy recasts the program's tensors.

Contract: ``(CompiledCosts, policy) -> CompiledCosts`` (`recast_costs`), the program
whose bytes every bound model charges under that policy; `recast_note` says what was
assumed.

Note [Precision what-if bytes]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``--precision bf16`` (``fp16``, ``fp8``) asks what the program would take cast to that
dtype, as ``model.to(torch.bfloat16)`` run on bf16 inputs: contractions run at the
policy's tensor peak (`solar.bounds.precision`), and the tensors the cast recasts move
at its element size. Every floating-point tensor narrower than fp64 and wider than the
policy's dtype is recast: inputs, parameters, activations, outputs and kernel-local
temporaries alike (fp32, and 16-bit floats under ``fp8``). Integer and boolean tensors
(indices, masks) keep their dtype, and so do fp64 tensors, whose contractions the
policy leaves on fp64 pipes; conversions written inside a kernel (``f32(x)``) keep
theirs too. The recast tensors' vector work then runs at their new dtype, as in the
cast model. Every bound model (unfused, fused, cache-aware) and the inverse roofline
see the recast program; `recast_costs` compiles it once per compiled graph and policy.
A what-if may so charge fewer bytes than a cast model that keeps some tensors wide on
purpose (an fp32 softmax inside a bf16 model): it is the bound of the program cast
whole, which the note of each bound states.
"""

from __future__ import annotations

from dataclasses import replace

from solar.bounds.costs import CompiledCosts, compile_costs
from solar.bounds.precision import PrecisionPolicy
from solar.einsum import lift_to_einsum
from solar.ir import DType, Program, TensorDecl

__all__ = ["recast_costs", "recast_dtype", "recast_note", "recast_program"]

_TARGET: dict[str, DType] = {"bf16": DType.BF16, "fp16": DType.F16, "fp8": DType.F8E4M3}
_RECASTABLE = frozenset({DType.F32, DType.F16, DType.BF16})


def recast_dtype(policy: PrecisionPolicy) -> DType | None:
    """The dtype ``policy`` casts tensors to, or ``None`` when it casts none.

    >>> recast_dtype("bf16"), recast_dtype("tf32")
    (<DType.BF16: 'bf16'>, None)
    """
    return _TARGET.get(policy)


def _recast(decl: TensorDecl, dtype: DType) -> TensorDecl:
    if decl.dtype in _RECASTABLE and decl.dtype.itemsize_bytes > dtype.itemsize_bytes:
        return replace(decl, dtype=dtype)
    return decl


def recast_program(program: Program, dtype: DType) -> Program:
    """``program`` with its recastable tensors at ``dtype`` (Note [Precision what-if
    bytes]); ``program`` itself when none is.

    >>> from solar.ir import parse_program
    >>> p = parse_program('''solar-ir 1
    ... program g
    ... size N = 8
    ... input X : f32[N]
    ... input I : i64[N]
    ... output Y : f32[N]
    ... kernel k { for i in 0 .. N { Y[i] = X[i] + f32(I[i]) } }''')
    >>> [(t.name, t.dtype.value) for t in recast_program(p, DType.BF16).tensors]
    [('X', 'bf16'), ('I', 'i64'), ('Y', 'bf16')]
    """
    tensors = tuple(_recast(t, dtype) for t in program.tensors)
    kernels = tuple(
        replace(k, locals=tuple(_recast(t, dtype) for t in k.locals)) for k in program.kernels
    )
    if tensors == program.tensors and kernels == program.kernels:
        return program
    return replace(program, tensors=tensors, kernels=kernels)


def recast_costs(compiled: CompiledCosts, policy: PrecisionPolicy) -> CompiledCosts:
    """The compiled costs the bounds charge under ``policy``: ``compiled`` itself, or
    those of its program recast (Note [Precision what-if bytes]), compiled once and
    kept with ``compiled``."""
    dtype = recast_dtype(policy)
    if dtype is None:
        return compiled
    key = ("recast", dtype)
    memo = compiled._memo  # the compiled graph's own memo (costs.py, same package)
    found = memo.get(key)
    if isinstance(found, CompiledCosts):
        return found
    program = recast_program(compiled.graph.program, dtype)
    recast = compiled if program is compiled.graph.program else compile_costs(
        lift_to_einsum(program))
    memo[key] = recast
    return recast


def recast_note(policy: PrecisionPolicy) -> str | None:
    """The assumption a recasting policy adds to each bound, or ``None``.

    >>> recast_note("tf32") is None
    True
    """
    dtype = recast_dtype(policy)
    if dtype is None:
        return None
    wider = "fp32, bf16 and fp16" if dtype.itemsize_bytes == 1 else "fp32"
    return (f"precision what-if `{policy}`: every {wider} tensor (inputs, parameters, "
            f"activations, outputs) is charged at {dtype.itemsize_bytes} byte"
            f"{'s' if dtype.itemsize_bytes > 1 else ''} per element, as the program cast to "
            f"{dtype.value}; integer, boolean and fp64 tensors keep their dtype "
            "(Note [Precision what-if bytes])")
