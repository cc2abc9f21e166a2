"""Memory and work estimates of running a program, and the default memory budget.

Contract: pure functions ``(Program, sizes) -> numbers``, computed from declarations and
loop bounds (interval arithmetic) without allocating anything. `estimate_memory_bytes`
is what the executor checks against its budget before it allocates (E0305): inputs,
params and outputs in their storage dtypes, the peak of the live temps and locals over
the kernels (Note [Temp lifetimes]), the written masks, one padded copy, and the
largest per-statement working set (an index grid of at most `CHUNK_POINTS` points, or
the operands of a recognised contraction). `estimate_workload`
adds a conservative wall-time prediction that `validate` uses to pick reduced sizes.
`memory_budget_bytes` (from `solar.budget`, re-exported) is the default budget of the
executor (and, through `solar.frontends.kit.reference_budget_bytes`, of a real reference
run): a share of the validation memory (Note [Validation memory]).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from solar.budget import (
    FALLBACK_BUDGET_BYTES,
    VALIDATION_MEMORY_BYTES,
    VALIDATION_MEMORY_ENV,
    executor_budget_bytes,
    memory_budget_bytes,
    validation_memory_bytes,
)
from solar.ir import (
    Access,
    Assign,
    Binary,
    Call,
    Cast,
    Expr,
    For,
    If,
    Program,
    Reduce,
    Stmt,
    Unary,
    eval_int,
    resolve_sizes,
    walk_exprs,
)
from solar.validate.affine import free_names, int_range
from solar.validate.contraction import split_product
from solar.validate.dtypes import storage_dtype
from solar.validate.grids import CHUNK_POINTS
from solar.validate.prepare import PreparedProgram, prepare_program
from solar.validate.scan import match_scan
from solar.validate.state import temp_lifetimes

__all__ = [
    "FALLBACK_BUDGET_BYTES",
    "VALIDATION_MEMORY_BYTES",
    "VALIDATION_MEMORY_ENV",
    "Workload",
    "estimate_memory_bytes",
    "estimate_workload",
    "executor_budget_bytes",
    "memory_budget_bytes",
    "over_budget_message",
    "validation_memory_bytes",
    "workload_of",
]

def over_budget_message(what: str, needed: float, budget: float) -> str:
    """The E0305 message, for every executor that checks its budget before allocating.

    >>> over_budget_message("`mm`", 3 * 2**20, 2**30)
    'executing `mm` needs about 3 MiB, over the memory budget of 1,024 MiB'
    >>> over_budget_message("`p`", 2**4000, 2**30)
    'executing `p` needs about 10^1198 MiB, over the memory budget of 1,024 MiB'
    """
    return (f"executing {what} needs about {_mib(needed)} MiB, over the memory budget "
            f"of {_mib(budget)} MiB")


def _mib(size_bytes: float) -> str:
    """``size_bytes`` in MiB with thousands separators; an exact integer too large for a
    float (a product of thousands of sizes) as a power of ten."""
    if isinstance(size_bytes, int) and size_bytes >= 2**20 * 10**15:
        return f"10^{int(((size_bytes >> 20).bit_length() - 1) * math.log10(2))}"
    return f"{size_bytes / 2**20:,.0f}"


# Conservative throughput model of the executor on a small CPU (2 cores).
_SECONDS_PER_POINT_OP = 3e-9
_FLOPS_PER_SECOND = 2e10
_SECONDS_PER_PYTHON_STEP = 60e-6
_GRID_BYTES_PER_POINT = 8 * 4


@dataclass(frozen=True, slots=True)
class Workload:
    """Predicted cost of one run.

    Attributes:
        memory_bytes: peak memory estimate.
        points: total iteration points over all statements.
        flops: rough floating-point operation count (points times operations).
        seconds: conservative wall-time prediction for the executor.
    """

    memory_bytes: int
    points: int
    flops: int
    seconds: float


def _ops(expr: Expr) -> int:
    """Operations in ``expr``: every node that is not a literal or a name."""
    return sum(isinstance(e, Binary | Unary | Cast | Call | Access) for e in walk_exprs(expr))


@dataclass(slots=True)
class _Tally:
    points: int = 0
    flops: int = 0
    seconds: float = 0.0
    working_bytes: int = 0


@dataclass(frozen=True, slots=True)
class _Loop:
    var: str
    trips: int
    python: bool  # runs one iteration at a time


def _leaf(stmt: Assign | Reduce, loops: tuple[_Loop, ...], tally: _Tally) -> None:
    volume = math.prod(lp.trips for lp in loops)
    vector = math.prod(lp.trips for lp in loops if not lp.python)
    python_steps = math.prod(lp.trips for lp in loops if lp.python)
    ops = _ops(stmt.value) + 1
    tally.points += volume
    tally.seconds += python_steps * _SECONDS_PER_PYTHON_STEP
    trips = {lp.var: lp.trips for lp in loops if not lp.python}
    _, factors = split_product(stmt.value)
    if isinstance(stmt, Reduce) and stmt.op == "+" and len(factors) >= 2:
        operand_points = sum(math.prod(trips.get(v, 1) for v in free_names(e)) for e, _ in factors)
        out_points = math.prod(trips.get(v, 1) for i in stmt.target.indices for v in free_names(i))
        tally.flops += 2 * volume
        tally.seconds += python_steps * (
            2 * vector / _FLOPS_PER_SECOND + operand_points * 2 * _SECONDS_PER_POINT_OP
        )
        tally.working_bytes = max(tally.working_bytes, (2 * operand_points + out_points) * 8)
        return
    tally.flops += volume * ops
    tally.seconds += volume * ops * _SECONDS_PER_POINT_OP
    tally.working_bytes = max(
        tally.working_bytes, min(vector, CHUNK_POINTS) * _GRID_BYTES_PER_POINT
    )


def _walk(
    body: tuple[Stmt, ...],
    sizes: Mapping[str, int],
    ranges: dict[str, tuple[int, int]],
    loops: tuple[_Loop, ...],
    sequential: frozenset[int],
    tally: _Tally,
) -> None:
    for s in body:
        match s:
            case Assign() | Reduce():
                _leaf(s, loops, tally)
            case If():
                _walk(s.body, sizes, ranges, loops, sequential, tally)
            case For():
                lo, hi = int_range(s.lo, sizes, ranges), int_range(s.hi, sizes, ranges)
                if lo is None or hi is None:
                    continue
                trips = max(0, -(-(hi[1] - lo[0]) // s.step))
                python = id(s) in sequential or (s.seq and match_scan(s, dict(sizes)) is None)
                inner = {**ranges, s.var: (lo[0], max(lo[0], hi[1] - 1))}
                _walk(
                    s.body, sizes, inner, (*loops, _Loop(s.var, trips, python)), sequential, tally
                )


def _tensor_bytes(prepared: PreparedProgram, sizes: Mapping[str, int]) -> int:
    """Inputs, params and outputs for the whole run; temps and locals at the peak of the
    live set over the kernels (Note [Temp lifetimes] in `solar.validate.state`)."""
    program = prepared.program
    total = largest = 0
    temp_bytes: dict[str, int] = {}
    for decl in program.tensors:
        n = math.prod(eval_int(d, sizes) for d in decl.shape)
        item = storage_dtype(decl.dtype).itemsize
        largest = max(largest, n * item)
        if decl.role == "temp":
            temp_bytes[decl.name] = n + n * item  # data + written mask
        else:
            total += n * item
            if decl.role == "output":
                total += n + n * item  # written mask + the returned copy
    live = [0] * (len(program.kernels) + 1)  # difference array over kernel indices
    for name, (first, last) in temp_lifetimes(program).items():
        live[first] += temp_bytes[name]
        live[last + 1] -= temp_bytes[name]
    peak = running = 0
    for index, kernel in enumerate(program.kernels):
        running += live[index]
        kernel_bytes = 0
        for decl in kernel.locals:
            n = math.prod(eval_int(d, sizes) for d in decl.shape)
            kernel_bytes += n * (storage_dtype(decl.dtype).itemsize + 1)
            largest = max(largest, n * storage_dtype(decl.dtype).itemsize)
        peak = max(peak, running + kernel_bytes)
    return total + peak + largest


def workload_of(prepared: PreparedProgram, bound: Mapping[str, int]) -> Workload:
    """`estimate_workload` for a prepared program at a resolved size binding."""
    tally = _Tally()
    for kernel, plan in zip(prepared.program.kernels, prepared.plans, strict=True):
        _walk(kernel.body, bound, {}, (), plan.sequential, tally)
    memory = _tensor_bytes(prepared, bound) + tally.working_bytes
    return Workload(memory, tally.points, tally.flops, tally.seconds)


def estimate_workload(program: Program, sizes: Mapping[str, int] | None = None) -> Workload:
    """Predict memory, work and executor wall time of one run at ``sizes``.

    Args:
        program: a verified program.
        sizes: overrides of free sizes (defaults otherwise).

    Returns:
        The `Workload`.
    """
    bound = resolve_sizes(program, sizes)
    return workload_of(prepare_program(program, bound), bound)


def estimate_memory_bytes(program: Program, sizes: Mapping[str, int] | None = None) -> int:
    """Bytes the executor needs to run ``program`` at ``sizes`` (an upper estimate).

    Args:
        program: a verified program.
        sizes: overrides of free sizes (defaults otherwise).

    Returns:
        Tensors in their storage dtypes, written masks, locals of the largest kernel,
        one padded copy, and the largest statement working set.

    >>> from solar.ir import parse_program
    >>> p = parse_program("solar-ir 1\\nprogram p\\nsize N = 1024\\ninput X : f32[N]\\n")
    >>> estimate_memory_bytes(p)
    8192
    """
    return estimate_workload(program, sizes).memory_bytes
