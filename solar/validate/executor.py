"""The vectorised IR executor: run a verified `Program` over numpy arrays.

Contract: ``(Program, inputs) -> outputs``. The executor *interprets* the IR; it never
turns IR text into Python source and never calls ``eval``/``exec`` (IR may come from
an LLM). Each statement runs once over its whole iteration space as whole-array numpy
work (loop fission, which the IR's independence promise for plain loops makes exact):

* iteration spaces are broadcast index grids (`solar.validate.grids.Domain`); guards
  and triangular bounds are boolean masks over the box of loop values;
* affine reads are zero-copy strided views (sliding windows for convolutions and
  pooling), other reads are fancy-index gathers;
* ``+=`` of products is a contraction (`solar.validate.contraction`: BLAS matmul or
  broadcast multiply-adds); other reductions are ``ufunc.reduce`` over loop axes, or
  ``ufunc.at`` when iteration points collide on target elements;
* ``seq`` loops run one iteration at a time in Python, each iteration vectorised over
  the inner loops, unless `solar.validate.scan` recognises a scan;
* grids larger than `CHUNK_POINTS` are processed in chunks of the outer loops.

Faults raise `ExecutionError` (codes in `solar.validate.faults`) naming the statement
and its span; reads of never-written elements are caught through a per-tensor written
mask. Dtypes follow Note [Executor dtypes] in `solar.validate.dtypes`.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from solar.diagnostics import ExecutionError
from solar.ir import Assign, For, If, Kernel, Program, Reduce, Stmt, print_stmt, resolve_sizes
from solar.validate import parallel
from solar.validate.contraction import plan_contraction, run_contraction
from solar.validate.dtypes import output_array
from solar.validate.evaluate import Evaluator, ExecCache, Value
from solar.validate.faults import raise_fault, raise_resource
from solar.validate.grids import (
    CHUNK_POINTS,
    SMALL_REDUCTION,
    Axis,
    Domain,
    iter_chunks,
    split_taps,
)
from solar.validate.memory import memory_budget_bytes, over_budget_message, workload_of
from solar.validate.prepare import KernelPlan, PreparedProgram, prepare_program
from solar.validate.scan import ScanMatch, match_scan, run_scan
from solar.validate.state import (
    TensorState,
    allocate_tensors,
    allocate_unwritten,
    temp_lifetimes,
)
from solar.validate.writes import assign, reduce_into, target_axes

__all__ = [
    "CHUNK_POINTS",
    "Machine",
    "RunResult",
    "default_budget",
    "execute_program",
    "prepared_program",
    "run_program",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RunResult:
    """Everything a run produced.

    Attributes:
        outputs: output name -> array (see Note [Executor dtypes] for dtypes).
        written: output name -> boolean mask of written elements, ``None`` when all are.
        sizes: the size binding the program ran at.
    """

    outputs: Mapping[str, np.ndarray]
    written: Mapping[str, np.ndarray | None]
    sizes: Mapping[str, int]


class Machine:
    """The execution state of one run (tensors, caches, deadline)."""

    def __init__(
        self,
        prepared: PreparedProgram,
        sizes: Mapping[str, int],
        tensors: dict[str, TensorState],
        cache: ExecCache,
        *,
        deadline: float | None,
        restrict: Mapping[tuple[int, int], np.ndarray] | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.prepared = prepared
        self.sizes = dict(sizes)
        self.tensors = tensors
        self.deadline = deadline
        self.clock = clock
        self.restrict = dict(restrict or {})
        self.cache = cache
        self.plan: KernelPlan | None = None
        self.kernel_index = 0

    # ---- driving ------------------------------------------------------------------
    def run(self) -> None:
        self.start()
        program = self.prepared.program
        try:
            with np.errstate(all="ignore"):
                for index, (kernel, plan) in enumerate(
                    zip(program.kernels, self.prepared.plans, strict=True)
                ):
                    self.enter(index)
                    self.run_kernel(kernel, plan)
                    self.leave(index)
        finally:
            self.cache.padded.clear()

    def start(self) -> None:
        """Plan the temps' lifetimes (Note [Temp lifetimes]) before the first kernel."""
        program = self.prepared.program
        if self.cache.lifetimes is None:
            self.cache.lifetimes = temp_lifetimes(program)
        self.born: dict[int, list[str]] = {}
        self.dies: dict[int, list[str]] = {}
        for name, (first, last) in self.cache.lifetimes.items():
            self.born.setdefault(first, []).append(name)
            self.dies.setdefault(last, []).append(name)
        self.decls = {d.name: d for d in program.tensors}

    def enter(self, index: int) -> None:
        """Allocate the temps kernel ``index`` is the first to touch."""
        self.kernel_index = index
        for name in self.born.get(index, ()):
            self.tensors[name] = allocate_unwritten(self.decls[name], self.sizes)

    def leave(self, index: int) -> None:
        """Drop the temps kernel ``index`` is the last to touch."""
        for name in self.dies.get(index, ()):
            self.tensors.pop(name, None)
            for key in [k for k in self.cache.padded if k[0] == name]:
                del self.cache.padded[key]  # a padded copy of it

    def run_kernel(self, kernel: Kernel, plan: KernelPlan) -> None:
        self.plan = plan
        for decl in kernel.locals:
            self.tensors[decl.name] = allocate_unwritten(decl, self.sizes)
        try:
            root = self.cache.roots.get(self.kernel_index)
            if root is None or root.ndim != plan.ndim:
                root = Domain(plan.ndim, {}, {}, None)
                self.cache.roots[self.kernel_index] = root
            self.exec_body(kernel.body, root)
        finally:
            for decl in kernel.locals:
                self.tensors.pop(decl.name, None)

    def check_time(self, stmt: Stmt) -> None:
        if self.deadline is not None and self.clock() > self.deadline:
            raise_resource(
                "E0308",
                "execution exceeded its time budget",
                span=stmt.span,
            )

    def exec_body(self, body: tuple[Stmt, ...], domain: Domain) -> None:
        for stmt in body:
            self.exec_stmt(stmt, domain)

    def exec_stmt(self, stmt: Stmt, domain: Domain) -> None:
        try:
            self._dispatch(stmt, domain)
        except MemoryError:
            raise_resource("E0305", f"out of memory in `{_head(stmt)}`", span=stmt.span)
        except (ValueError, TypeError, IndexError, OverflowError, ArithmeticError) as err:
            # Any numpy error left is still reported as a SOLAR fault of this statement.
            raise_fault("E0307", f"invalid operation ({type(err).__name__}: {err})", stmt)

    def _dispatch(self, stmt: Stmt, domain: Domain) -> None:
        match stmt:
            case Assign():
                self.check_time(stmt)
                self.run_pieces(stmt, domain)
            case Reduce():
                self.check_time(stmt)
                self.reduce(stmt, domain)
            case For():
                self.loop(stmt, domain)
            case If():
                self.guard(stmt, domain)
            case _:
                raise_fault("E0309", f"unsupported statement {type(stmt).__name__}", stmt)

    def run_pieces(self, stmt: Assign | Reduce, domain: Domain) -> None:
        """Run a leaf statement, in two threads when it is large (`solar.validate.parallel`).

        A large statement with an injective strided target is cut in two along its
        outermost target axis, so the pieces write disjoint elements.
        """
        run = self._assign_piece if isinstance(stmt, Assign) else self._reduce_piece
        if parallel.WORKERS > 1 and domain.volume >= 2 * parallel.PARALLEL_MIN_POINTS:
            plan = target_axes(self.evaluator(domain, stmt), stmt.target)
            axis = (
                next((k for k in sorted(plan[1]) if domain.shape[k] >= 2), None)
                if plan is not None
                else None
            )
            if axis is not None:
                cuts = parallel.split_evenly(domain.shape[axis], parallel.WORKERS)
                parallel.run_all(
                    [functools.partial(run, stmt, domain.sliced(axis, lo, hi)) for lo, hi in cuts]
                )
                return
        run(stmt, domain)

    def _assign_piece(self, stmt: Assign | Reduce, domain: Domain) -> None:
        assert isinstance(stmt, Assign)
        for chunk in iter_chunks(domain, CHUNK_POINTS):
            if not chunk.is_empty():
                assign(self.evaluator(chunk, stmt), stmt.target, stmt.value)

    def _reduce_piece(self, stmt: Assign | Reduce, domain: Domain) -> None:
        assert isinstance(stmt, Reduce)
        for chunk in iter_chunks(domain, CHUNK_POINTS):
            if chunk.is_empty():
                continue
            ev = self.evaluator(chunk, stmt)
            value = ev.eval(stmt.value, chunk.mask)
            reduce_into(ev, stmt.target, stmt.op, value, plan=target_axes(ev, stmt.target))

    def evaluator(self, domain: Domain, stmt: Stmt) -> Evaluator:
        return Evaluator(self.tensors, self.sizes, domain, stmt, self.cache)

    # ---- statements ----------------------------------------------------------------
    def reduce(self, stmt: Reduce, domain: Domain) -> None:
        if domain.is_empty():
            return
        ev = self.evaluator(domain, stmt)
        plan = target_axes(ev, stmt.target)
        if stmt.op == "+" and plan is not None:
            contraction = plan_contraction(ev, stmt, plan[1])
            if contraction is not None:
                # contractions build no grid: run on the whole domain at once
                summed = run_contraction(ev, contraction)
                if summed is not None:
                    reduce_into(ev, stmt.target, "+", summed, plan=plan, summed=True)
                    return
        if plan is None and stmt.op == "+":
            forms = ev.forms(stmt.target)
            pieces = split_taps(domain, forms) if forms is not None else None
            if pieces is not None:  # Note [Taps]: strided pieces, contractions again
                for piece in pieces:
                    self.reduce(stmt, piece)
                return
        window = math.prod(
            n for k, n in enumerate(domain.shape) if plan is None or k not in plan[1]
        )
        if plan is not None and window <= SMALL_REDUCTION:
            self._reduce_piece(stmt, domain)  # window loops split their blocks themselves
            return
        self.run_pieces(stmt, domain)

    def guard(self, stmt: If, domain: Domain) -> None:
        cond = self.evaluator(domain, stmt).eval(stmt.cond, domain.mask)
        if not isinstance(cond, np.ndarray) or cond.ndim == 0:
            if bool(cond):
                self.exec_body(stmt.body, domain)
            return
        inner = domain.with_mask(np.asarray(cond, dtype=bool))
        if not inner.is_empty():
            self.exec_body(stmt.body, inner)

    def _bounds(self, stmt: For, domain: Domain) -> tuple[Value, Value]:
        if stmt.step < 1:
            raise_fault("E0309", f"loop step {stmt.step} is not positive", stmt)
        ev = self.evaluator(domain, stmt)
        lo, hi = ev.eval(stmt.lo, domain.mask), ev.eval(stmt.hi, domain.mask)
        for bound in (lo, hi):
            if np.asarray(bound).dtype.kind not in "iu":
                raise_fault("E0307", "loop bound is not an integer", stmt)
        return lo, hi

    def loop(self, stmt: For, domain: Domain) -> None:
        assert self.plan is not None
        lo, hi = self._bounds(stmt, domain)
        axis = self.plan.axis[id(stmt)]
        if stmt.seq or id(stmt) in self.plan.sequential:
            self.sequential_loop(stmt, domain, lo, hi)
            return
        if _scalar(lo) and _scalar(hi):
            lo_i, hi_i = int(lo), int(hi)
            count = max(0, -(-(hi_i - lo_i) // stmt.step))
            values = None
            if self.restrict and not domain.axes:
                position = _top_level_position(stmt, self.prepared, self.kernel_index)
                values = self.restrict.get((self.kernel_index, position))
            if values is not None:
                keep = values[
                    (values >= lo_i) & (values < hi_i) & ((values - lo_i) % stmt.step == 0)
                ]
                if keep.size == 0:
                    return
                ax = Axis(stmt.var, axis, int(keep[0]), 1, keep.size, keep)
                self.exec_body(stmt.body, domain.with_axis(ax))
                return
            if count == 0:
                return
            inner = domain.child(
                (id(stmt), lo_i, hi_i),
                lambda: domain.with_axis(Axis(stmt.var, axis, lo_i, stmt.step, count)),
            )
            self.exec_body(stmt.body, inner)
            return
        # bounds depend on outer vectorised loops: the box of all values, masked
        span = _active_span(domain, lo, hi)
        if span is None:
            return
        lo_min, hi_max = span
        if hi_max <= lo_min:
            return
        ax = Axis(stmt.var, axis, lo_min, 1, hi_max - lo_min)
        inner = domain.with_axis(ax)
        v = inner.var_array(stmt.var)
        cond = (v >= lo) & (v < hi)
        if stmt.step > 1:
            cond &= (v - lo) % stmt.step == 0
        inner = inner.with_mask(cond)
        if not inner.is_empty():
            self.exec_body(stmt.body, inner)

    def sequential_loop(self, stmt: For, domain: Domain, lo: Value, hi: Value) -> None:
        scalar = _scalar(lo) and _scalar(hi)
        if scalar and stmt.seq:
            match = self.scan_of(stmt)
            if match is not None and run_scan(
                match,
                stmt,
                domain,
                int(lo),
                int(hi),
                dict(self.plan.axis) if self.plan else {},
                self.tensors,
                self.sizes,
                self.cache,
            ):
                return
        if scalar:
            for t in range(int(lo), int(hi), stmt.step):
                self.check_time(stmt)
                inner = domain.child(
                    (id(stmt), t), functools.partial(domain.with_scalar, stmt.var, t)
                )
                self.exec_body(stmt.body, inner)
            return
        span = _active_span(domain, lo, hi)
        if span is None:
            return
        for t in range(*span):
            self.check_time(stmt)
            cond = (np.asarray(lo) <= t) & (t < np.asarray(hi))
            if stmt.step > 1:
                cond &= (t - np.asarray(lo)) % stmt.step == 0
            inner = domain.with_scalar(stmt.var, t).with_mask(np.asarray(cond))
            if not inner.is_empty():
                self.exec_body(stmt.body, inner)

    def scan_of(self, stmt: For) -> ScanMatch | None:
        key = id(stmt)
        if key not in self.cache.scans:
            self.cache.scans[key] = match_scan(stmt, self.sizes)
        match = self.cache.scans[key]
        return match if isinstance(match, ScanMatch) else None


def _scalar(x: Value) -> bool:
    return not isinstance(x, np.ndarray) or x.ndim == 0


def _active_span(domain: Domain, lo: Value, hi: Value) -> tuple[int, int] | None:
    """``(min lo, max hi)`` of per-point loop bounds over the active points of ``domain``.

    None when no point is active (the mask is all false).
    """
    active = domain.mask if domain.mask is not None else True
    lo_b = np.broadcast_to(lo, np.broadcast_shapes(np.shape(lo), np.shape(hi), domain.shape))
    hi_b = np.broadcast_to(hi, lo_b.shape)
    sel = np.broadcast_to(active, lo_b.shape)
    if not sel.any():
        return None
    return int(lo_b[sel].min()), int(hi_b[sel].max())


def _head(stmt: Stmt) -> str:
    return print_stmt(stmt).strip().split("\n", 1)[0]


def _top_level_position(stmt: For, prepared: PreparedProgram, kernel_index: int) -> int:
    body = prepared.program.kernels[kernel_index].body
    return next((k for k, s in enumerate(body) if s is stmt), -1)


def run_program(
    program: Program,
    inputs: Mapping[str, object],
    *,
    sizes: Mapping[str, int] | None = None,
    memory_budget_bytes: int | None = None,
    deadline: float | None = None,
    restrict: Mapping[tuple[int, int], np.ndarray] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> RunResult:
    """Run ``program`` and return its outputs and their written masks.

    Args:
        program: a parsed, verified program.
        inputs: one array per input and param.
        sizes: overrides of free sizes (default bindings otherwise).
        memory_budget_bytes: refuse (E0305) when the estimate exceeds this; ``None``
            uses `memory_budget_bytes` (half of the validation memory).
        deadline: ``clock()`` value after which to stop (E0308).
        restrict: ``(kernel index, statement position) -> values``: run that top-level
            loop of that kernel over these values only (sampled validation).
        clock: the clock ``deadline`` is read on (tests pass a frozen one).

    Returns:
        A `RunResult`; outputs may be partially written only under ``restrict``.
    """
    if program.world is not None:
        raise ExecutionError(
            f"`{program.name}` is a distributed program (`world {program.world}`): run it with "
            "solar.validate.execute_distributed, one input set per rank",
            code="E0350",
            span=program.span,
        )
    bound = resolve_sizes(program, sizes)
    budget = memory_budget_bytes if memory_budget_bytes is not None else default_budget()
    prepared, needed, cache = prepared_program(program, bound)
    if needed > budget:
        raise_resource(
            "E0305",
            over_budget_message(f"`{program.name}`", needed, budget),
            span=program.span,
        )
    tensors = allocate_tensors(program, bound, inputs)
    with parallel.one_blas_thread():  # Note [One BLAS thread per piece]
        machine = Machine(
            prepared, bound, tensors, cache, deadline=deadline, restrict=restrict, clock=clock
        )
        machine.run()
    outputs: dict[str, np.ndarray] = {}
    written: dict[str, np.ndarray | None] = {}
    for decl in program.tensors_with_role("output"):
        st = tensors[decl.name]
        outputs[decl.name] = output_array(st.data, decl.dtype, copy=False)  # ours to give
        written[decl.name] = None if st.written is None else st.written.copy()
    return RunResult(outputs, written, bound)


_Entry = tuple[Program, PreparedProgram, int, ExecCache]
_PREPARED: OrderedDict[tuple[int, tuple[tuple[str, int], ...]], _Entry] = OrderedDict()
_PREPARED_CAPACITY = 16


def prepared_program(
    program: Program, bound: Mapping[str, int]
) -> tuple[PreparedProgram, int, ExecCache]:
    """`prepare_program` and the memory estimate, cached per program object and sizes.

    Repeated runs of one program (validation retries, benchmarks) skip the analysis.
    The cache holds the program itself, so its ``id`` cannot be reused while cached.
    """
    key = (id(program), tuple(sorted(bound.items())))
    hit = _PREPARED.get(key)
    if hit is not None and hit[0] is program:
        _PREPARED.move_to_end(key)
        return hit[1], hit[2], hit[3]
    prepared = prepare_program(program, bound)
    needed = workload_of(prepared, bound).memory_bytes
    cache = ExecCache()
    _PREPARED[key] = (program, prepared, needed, cache)
    while len(_PREPARED) > _PREPARED_CAPACITY:
        _PREPARED.popitem(last=False)
    return prepared, needed, cache


def default_budget() -> int:
    """`memory_budget_bytes`, re-read at most once a second."""
    global _BUDGET
    now = time.monotonic()
    if _BUDGET is None or now - _BUDGET[0] > 1.0:
        _BUDGET = (now, memory_budget_bytes())
    return _BUDGET[1]


_BUDGET: tuple[float, int] | None = None


def execute_program(
    program: Program,
    inputs: Mapping[str, np.ndarray],
    *,
    sizes: Mapping[str, int] | None = None,
    memory_budget_bytes: int | None = None,
) -> dict[str, np.ndarray]:
    """Execute ``program`` on ``inputs`` and return its outputs.

    Args:
        program: a parsed, verified program.
        inputs: one array per ``input`` and ``param`` tensor, by IR name, of the
            declared shape at the size binding (bf16/fp8 as float32 or ml_dtypes).
        sizes: overrides of free sizes (default bindings otherwise).
        memory_budget_bytes: the most memory the run may need (default:
            `memory_budget_bytes`, half of the validation memory).

    Returns:
        Output name -> array: float64/float32/float16 for f64/f32/f16, float32 holding
        exactly representable values for bf16/fp8, the declared width for integers.

    Raises:
        ExecutionError: a fault (E0301-E0304, E0306, E0307, E0309) with the statement.
        ResourceError: the memory budget is exceeded (E0305).
        IRVerifyError: bad size overrides (E0220-E0222).
    """
    result = run_program(program, inputs, sizes=sizes, memory_budget_bytes=memory_budget_bytes)
    for decl in program.tensors_with_role("output"):
        mask = result.written[decl.name]
        if mask is not None:
            first = tuple(int(i) for i in np.argwhere(~mask)[0])
            raise ExecutionError(
                f"output `{decl.name}` is not fully written: {int((~mask).sum())} of "
                f"{mask.size} elements never written, first at {list(first)}",
                code="E0306",
                span=decl.span,
            )
    return dict(result.outputs)
