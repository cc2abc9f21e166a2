"""`validate`: run IR against reference outputs within a time budget, and report.

Contract: ``(Program, reference data) -> ValidationResult``; never raises for a program
that faults or mismatches (that is a result), and never reports success it did not
see. Strategies (docs/validation.md):

* ``full``: execute at the reference sizes and compare every element;
* ``reduced-sizes``: shrink the free sizes (the search of `solar.reduced_sizes`,
  which the frontends use too) until the predicted work and memory fit the budget,
  ask the caller's ``reference_at(sizes)`` for reference data at those sizes, and
  compare everything there;
* ``sampled``: when every output is written by one kernel and there are no temps,
  run the outputs' top-level loops over a random sample of their iterations only,
  and compare the elements written (the checked fraction is recorded);
* ``auto``: ``full`` if it fits the budget, else ``reduced-sizes`` if a callback is
  given, else ``sampled`` if possible; otherwise the result is ``skipped``.

Statuses: ``passed`` (every compared element within tolerance), ``failed`` (a
mismatch, or an output not produced), ``error`` (the IR faulted: out of bounds,
uninitialised read, ... with the diagnostic as the reason), ``skipped`` (the check
could not run: no reference data, over budget, not sampleable).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias, TypedDict, Unpack

import numpy as np

from solar.diagnostics import ExecutionError, IRVerifyError, ResourceError, SolarError
from solar.ir import Assign, For, IntLit, Program, Reduce, eval_int, resolve_sizes, walk_stmts
from solar.reduced_sizes import RunBudget, RunCost, reduce_sizes
from solar.validate.affine import free_names
from solar.validate.compare import OutputComparison, Tolerance, compare_outputs, output_tolerances
from solar.validate.executor import run_program
from solar.validate.memory import Workload, estimate_workload, memory_budget_bytes

__all__ = [
    "ReferenceProvider",
    "Status",
    "Strategy",
    "ValidationResult",
    "validate",
]

Strategy = Literal["auto", "full", "reduced-sizes", "sampled"]
Status = Literal["passed", "failed", "skipped", "error"]
Arrays: TypeAlias = Mapping[str, np.ndarray]
ReferenceProvider: TypeAlias = Callable[[Mapping[str, int]], tuple[Arrays, Arrays]]
"""``reference_at(sizes) -> (inputs, outputs)`` at a binding of the free sizes."""

_BUDGET_SHARE = 0.5  # plan for half the time budget: the work model is rough
_MIN_SAMPLE = 4


@dataclass(frozen=True, slots=True)
class ValidationResult:
    """The outcome of one validation.

    Attributes:
        status: ``passed``, ``failed``, ``skipped`` or ``error``.
        reason: why it is not ``passed`` (a diagnostic for ``error``); empty on success.
        strategy: the strategy that ran (``None`` when nothing ran).
        sizes: the binding of every size the check ran at.
        outputs: the per-output comparisons.
        tolerances: the tolerance used per output.
        wall_time_s: wall time of the whole validation.
        checked_fraction: compared elements / output elements (at ``sizes``).
        mismatch: human-readable description of the mismatches, for repair loops.
        description: for ``reduced-sizes``, which sizes were scaled (else empty).
        error: the execution fault when ``status == "error"``.
    """

    status: Status
    reason: str
    strategy: Literal["full", "reduced-sizes", "sampled"] | None
    sizes: Mapping[str, int]
    outputs: tuple[OutputComparison, ...]
    tolerances: Mapping[str, Tolerance]
    wall_time_s: float
    checked_fraction: float
    mismatch: str
    description: str = ""
    error: SolarError | None = field(default=None, compare=False)

    @property
    def passed(self) -> bool:
        """True only when the check ran and every compared element matched."""
        return self.status == "passed"

    @property
    def max_abs_error(self) -> dict[str, float]:
        """Per-output largest absolute error."""
        return {c.name: c.max_abs_error for c in self.outputs}

    @property
    def max_rel_error(self) -> dict[str, float]:
        """Per-output largest relative error."""
        return {c.name: c.max_rel_error for c in self.outputs}


def _free_sizes(program: Program, bound: Mapping[str, int]) -> dict[str, int]:
    return {d.name: bound[d.name] for d in program.sizes if isinstance(d.value, IntLit)}


def _output_loops(program: Program) -> tuple[int, list[int]] | None:
    """The kernel writing every output and the positions of its sampleable loops."""
    if program.tensors_with_role("temp"):
        return None
    outputs = {d.name for d in program.tensors_with_role("output")}
    writers = [
        k
        for k, kernel in enumerate(program.kernels)
        if any(
            isinstance(s, Assign | Reduce) and s.target.tensor in outputs
            for s, _ in walk_stmts(kernel.body)
        )
    ]
    if len(writers) != 1:
        return None
    kernel = program.kernels[writers[0]]
    positions: list[int] = []
    for pos, stmt in enumerate(kernel.body):
        writes = [
            s
            for s, _ in walk_stmts((stmt,))
            if isinstance(s, Assign | Reduce) and s.target.tensor in outputs
        ]
        if not writes:
            continue
        if not isinstance(stmt, For) or stmt.seq:
            return None
        if not all(any(stmt.var in free_names(i) for i in w.target.indices) for w in writes):
            return None
        positions.append(pos)
    return (writers[0], positions) if positions else None


@dataclass(slots=True)
class _Run:
    """Arguments of one execution attempt."""

    strategy: Literal["full", "reduced-sizes", "sampled"]
    free_sizes: dict[str, int]
    inputs: Arrays
    expected: Arrays
    restrict: dict[tuple[int, int], np.ndarray] | None = None
    description: str = ""


def _sample_restrict(
    program: Program, free_sizes: Mapping[str, int], fraction: float, seed: int
) -> dict[tuple[int, int], np.ndarray] | None:
    found = _output_loops(program)
    if found is None:
        return None
    kernel_index, positions = found
    bound = resolve_sizes(program, free_sizes)
    rng = np.random.default_rng(seed)
    restrict: dict[tuple[int, int], np.ndarray] = {}
    for pos in positions:
        loop = program.kernels[kernel_index].body[pos]
        assert isinstance(loop, For)
        try:
            lo, hi = eval_int(loop.lo, bound), eval_int(loop.hi, bound)
        except (KeyError, ValueError, ZeroDivisionError):
            return None
        values = np.arange(lo, hi, loop.step, dtype=np.int64)
        if values.size == 0:
            continue
        count = min(values.size, max(_MIN_SAMPLE, math.ceil(values.size * fraction)))
        restrict[(kernel_index, pos)] = np.sort(rng.choice(values, size=count, replace=False))
    return restrict


@dataclass(frozen=True, slots=True)
class _Request:
    """What `validate` was asked, with the predicted workload at the requested sizes."""

    program: Program
    sizes: Mapping[str, int] | None
    free: dict[str, int]
    inputs: Arrays | None
    outputs: Arrays | None
    time_budget_s: float
    memory_budget: int
    work_s: float
    work_bytes: int
    sample_fraction: float | None
    seed: int

    @property
    def fits(self) -> bool:
        return (
            self.work_s <= self.time_budget_s * _BUDGET_SHARE
            and self.work_bytes <= self.memory_budget
        )


def _try_full(req: _Request, reasons: list[str], *, forced: bool) -> _Run | None:
    if req.inputs is None or req.outputs is None:
        reasons.append("no reference data given")
        return None
    if req.fits or forced:
        return _Run("full", req.free, req.inputs, req.outputs)
    reasons.append(
        f"the full check needs about {req.work_s:.3g} s and "
        f"{req.work_bytes / 2**20:.0f} MiB, over the budget"
    )
    return None


def _try_reduced(
    req: _Request, reasons: list[str], reference_at: ReferenceProvider | None
) -> tuple[_Run | None, float]:
    """A reduced-sizes run and the seconds spent in ``reference_at``.

    Raises:
        SolarError: ``reference_at`` failed.
    """
    if reference_at is None:
        reasons.append("no reference_at(sizes) callback for reduced sizes")
        return None, 0.0

    def rebuild(overrides: Mapping[str, int]) -> Workload:
        return estimate_workload(req.program, {**req.free, **overrides})

    def cost(work: Workload) -> RunCost:
        return RunCost(work.memory_bytes, work.seconds)

    budget = RunBudget(req.memory_budget, req.time_budget_s * _BUDGET_SHARE)
    # the binding as asked was estimated already (`validate`), so only a shrunk one can fail
    found = reduce_sizes(req.free, rebuild, cost, budget, declared=True)
    if not found.fits:
        reasons.append("no reduced size binding fits the time and memory budget")
        return None, 0.0
    trial = dict(found.sizes)
    before = time.monotonic()
    inputs, outputs = reference_at(trial)
    run = _Run("reduced-sizes", trial, inputs, outputs, description=found.description)
    return run, time.monotonic() - before


def _try_sampled(req: _Request, reasons: list[str]) -> _Run | None:
    if req.inputs is None or req.outputs is None:
        if "no reference data given" not in reasons:
            reasons.append("no reference data given")
        return None
    if req.work_bytes > req.memory_budget:
        reasons.append(f"needs {req.work_bytes / 2**20:.0f} MiB, over the memory budget")
        return None
    fraction = min(1.0, req.time_budget_s * _BUDGET_SHARE / max(req.work_s, 1e-9))
    if req.sample_fraction is not None:
        fraction = min(fraction, req.sample_fraction)
    restrict = _sample_restrict(req.program, req.free, fraction, req.seed)
    if restrict is None:
        reasons.append(
            "cannot sample: outputs are not all written by one kernel's top-level loops "
            "(or there are temps)"
        )
        return None
    return _Run("sampled", req.free, req.inputs, req.outputs, restrict)


class _Fields(TypedDict, total=False):
    """The optional fields of a `ValidationResult` (its defaults when absent)."""

    strategy: Literal["full", "reduced-sizes", "sampled"] | None
    sizes: Mapping[str, int]
    outputs: tuple[OutputComparison, ...]
    tolerances: Mapping[str, Tolerance]
    checked_fraction: float
    mismatch: str
    description: str
    error: SolarError | None


class _RunFields(TypedDict):
    """What every result of one run says."""

    strategy: Literal["full", "reduced-sizes", "sampled"]
    sizes: Mapping[str, int]
    description: str


class _ComparedFields(_RunFields):
    """What every result of a run whose outputs were compared says."""

    outputs: tuple[OutputComparison, ...]
    tolerances: Mapping[str, Tolerance]
    checked_fraction: float


class _Finish(Protocol):
    """`_result` with its clock and start bound."""

    def __call__(self, status: Status, reason: str, /, **kw: Unpack[_Fields]
                 ) -> ValidationResult: ...


def _result(
    clock: Callable[[], float], start: float, status: Status, reason: str, /,
    **kw: Unpack[_Fields],
) -> ValidationResult:
    return ValidationResult(
        status=status,
        reason=reason,
        strategy=kw.get("strategy"),
        sizes=kw.get("sizes", {}),
        outputs=kw.get("outputs", ()),
        tolerances=kw.get("tolerances", {}),
        wall_time_s=clock() - start,
        checked_fraction=kw.get("checked_fraction", 0.0),
        mismatch=kw.get("mismatch", ""),
        description=kw.get("description", ""),
        error=kw.get("error"),
    )


def validate(
    program: Program,
    reference_inputs: Arrays | None = None,
    reference_outputs: Arrays | None = None,
    *,
    sizes: Mapping[str, int] | None = None,
    tolerance: Tolerance | Mapping[str, Tolerance] | None = None,
    atol_floor: Mapping[str, float] | None = None,
    strategy: Strategy = "auto",
    time_budget_s: float = 60.0,
    reference_at: ReferenceProvider | None = None,
    memory_budget_bytes: int | None = None,
    sample_fraction: float | None = None,
    seed: int = 0,
    clock: Callable[[], float] = time.monotonic,
) -> ValidationResult:
    """Check ``program`` against reference outputs (see module docstring).

    Args:
        program: a parsed, verified program.
        reference_inputs: inputs and params by name, at ``sizes``.
        reference_outputs: the reference program's outputs on those inputs.
        sizes: the free-size binding of the reference data (defaults otherwise).
        tolerance: override the policy tolerance (one for all, or per output).
        atol_floor: a least ``atol`` per output, over the tolerance (policy or override).
        strategy: ``auto``, ``full``, ``reduced-sizes`` or ``sampled``.
        time_budget_s: wall-time budget of planning and execution (time spent in
            ``reference_at`` is not charged); execution stops past it (``skipped``).
        reference_at: ``sizes -> (inputs, outputs)`` for the reduced-sizes strategy;
            it may raise `SolarError` (the result is then ``skipped``).
        memory_budget_bytes: memory budget (default: half of the validation memory,
            `solar.validate.memory.memory_budget_bytes`).
        sample_fraction: share of the sampled loops' iterations to run (default: what
            the time budget allows).
        seed: seed of the sampled strategy's choice of iterations.
        clock: the clock the budget is spent on (tests pass a frozen one, so that what
            they check does not depend on the machine's load).

    Returns:
        The `ValidationResult`.
    """
    start = clock()
    finish: _Finish = functools.partial(_result, clock, start)
    budget = (
        memory_budget_bytes if memory_budget_bytes is not None else memory_budget_bytes_default()
    )
    try:
        bound = resolve_sizes(program, sizes)
        work = estimate_workload(program, sizes)
    except IRVerifyError as err:
        return finish("error", err.render(), error=err)
    req = _Request(
        program,
        sizes,
        _free_sizes(program, bound),
        reference_inputs,
        reference_outputs,
        time_budget_s,
        budget,
        work.seconds,
        work.memory_bytes,
        sample_fraction,
        seed,
    )
    reasons: list[str] = []
    run: _Run | None = None
    charged = 0.0
    if strategy in ("auto", "full"):
        run = _try_full(req, reasons, forced=strategy == "full")
    if run is None and strategy in ("auto", "reduced-sizes"):
        try:
            run, charged = _try_reduced(req, reasons, reference_at)
        except SolarError as err:
            return finish("skipped", f"reference_at failed: {err.message}", error=err)
    if run is None and strategy in ("auto", "sampled"):
        run = _try_sampled(req, reasons)
    if run is None:
        return finish("skipped", "; ".join(reasons) or "nothing to run", sizes=bound)
    deadline = start + time_budget_s + charged
    return _execute(program, run, tolerance, deadline, budget, finish, clock, atol_floor or {})


def memory_budget_bytes_default() -> int:
    """The default memory budget (see `solar.validate.memory.memory_budget_bytes`)."""
    return memory_budget_bytes()


def _execute(
    program: Program,
    run: _Run,
    tolerance: Tolerance | Mapping[str, Tolerance] | None,
    deadline: float,
    budget: int,
    finish: _Finish,
    clock: Callable[[], float],
    atol_floor: Mapping[str, float],
) -> ValidationResult:
    try:
        bound = resolve_sizes(program, run.free_sizes)
    except IRVerifyError as err:
        return finish("error", err.render(), strategy=run.strategy, error=err)
    common: _RunFields = {
        "strategy": run.strategy, "sizes": bound, "description": run.description,
    }
    try:
        result = run_program(
            program,
            run.inputs,
            sizes=run.free_sizes,
            memory_budget_bytes=budget,
            deadline=deadline,
            restrict=run.restrict,
            clock=clock,
        )
    except ResourceError as err:
        return finish("skipped", err.message, error=err, **common)
    except ExecutionError as err:
        if run.strategy == "sampled" and err.code == "E0302":
            reason = "the sampled run read elements outside the sample: " + err.message
            return finish("skipped", reason, error=err, **common)
        return finish("error", err.render(), error=err, **common)
    except IRVerifyError as err:
        return finish("error", err.render(), error=err, **common)
    tolerances: Mapping[str, Tolerance]
    if tolerance is None:
        tolerances = output_tolerances(program, bound, run.expected)
    elif isinstance(tolerance, Tolerance):
        tolerances = {name: tolerance for name in result.outputs}
    else:
        policy = output_tolerances(program, bound, run.expected)
        tolerances = {**policy, **tolerance}
    tolerances = {
        name: Tolerance(t.rtol, max(t.atol, atol_floor.get(name, 0.0)))
        for name, t in tolerances.items()
    }
    masks = dict(result.written)
    if run.strategy != "sampled":
        unwritten = [name for name, m in masks.items() if m is not None]
        if unwritten:
            reason = f"output(s) {', '.join(sorted(unwritten))} not fully written by the program"
            return finish("failed", reason, tolerances=tolerances, mismatch=reason, **common)
    comparisons = compare_outputs(run.expected, result.outputs, tolerances, masks=masks)
    total = sum(c.total for c in comparisons)
    checked = sum(c.checked for c in comparisons)
    fraction = checked / total if total else 1.0
    bad = [c for c in comparisons if not c.ok]
    extra = sorted(set(result.outputs) - set(run.expected))
    kw: _ComparedFields = {
        **common,
        "outputs": comparisons,
        "tolerances": tolerances,
        "checked_fraction": fraction,
    }
    if bad:
        text = "\n".join(c.description for c in bad)
        return finish("failed", f"{len(bad)} output(s) differ", mismatch=text, **kw)
    if checked == 0 or (extra and not comparisons):
        return finish("skipped", "no output elements were compared", **kw)
    return finish("passed", "", **kw)
