"""Pipeline schedules: each schedule's step bound, bubble and activation memory, and the
bounds that hold for every schedule.

Contract: ``(StageCosts, schedule, micro_batches, chunks) -> ScheduleBound`` and
``StageCosts -> PipelineBounds``, pure. Inputs are per pipeline rank (``stage``) and per
micro-batch: F (forward), B (input gradient), W (weight gradient), the optimizer step O
(once per step) and the boundary transfer P (one micro-batch's activations, or their
gradient, over the link between neighbouring ranks). Uneven ranks (embedding on the
first, LM head on the last) are the normal case.

Note [Fixed orders]: a schedule is a fixed order of operations per rank. GPipe, 1F1B,
interleaved 1F1B, ZB-H1/H2 and DualPipe follow their published rules, which do not read
the costs; ZB-V's generator reads the mean F, B, W and P the way its authors' runtime
reads the profiled ones (Note [ZB-V order] in `paper_orders`). The order is then timed
with the real costs as a longest path: an operation starts when its rank is free and
its inputs have arrived. Each rank is one resource that never runs two operations at
once. For a fixed order the timed step is monotone in every cost, and with costs that
are lower bounds it is a lower bound of any run of that order. Schedules without a
split backward (gpipe, 1f1b, interleaved) run B and W as one operation.

Note [Schedule-free bounds] (docs/distributed.md derives them): for every synchronous
schedule that flushes each step, whose micro-batches all enter at rank 0 and whose ranks
hold at most ``v`` equal chunks (Megatron's layer split),

* fill + work:  T >= fill_s + m (F_s + B_s + W_s) + O_s,  fill_s = sum_{j<s} (F_j / v + P);
* fill + drain: T >= fill_s + m (F_s + B_s) + sum_{r<=j<s} (B_j / v + P) + W_r / v + O_r
  for every r <= s (the last input gradient of rank s must come back to rank r);

and the periodic bound of a schedule without a global optimizer sync (steady state,
one step per period) is ``max_s m (F_s + B_s + W_s) + O_s``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, get_args

from solar.diagnostics import PlanError
from solar.distributed.paper_orders import dualpipe_orders, zbv_orders

__all__ = [
    "SCHEDULES",
    "OpKind",
    "PipelineBounds",
    "Schedule",
    "ScheduleBound",
    "StageCosts",
    "TimedOp",
    "bound_schedule",
    "pipeline_bounds",
    "schedule_orders",
]

Schedule: TypeAlias = Literal["gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zbv",
                              "dualpipe"]
SCHEDULES: Final[tuple[Schedule, ...]] = get_args(Schedule)
OpKind: TypeAlias = Literal["F", "B", "W"]

_SPLIT: Final = frozenset({"zb-h1", "zb-h2", "zbv", "dualpipe"})


@dataclass(frozen=True, slots=True)
class StageCosts:
    """Per-rank costs of one micro-batch, in seconds (lower bounds).

    Attributes:
        forward_s: F per rank.
        input_grad_s: B per rank (the backward that the previous rank waits for).
        weight_grad_s: W per rank (weight gradients; nobody waits for them).
        optimizer_s: O per rank, once per step.
        send_s: P, one boundary transfer (activations forward or gradients back).
        activation_bytes: activations one micro-batch keeps on each rank until its W.
    """

    forward_s: tuple[float, ...]
    input_grad_s: tuple[float, ...]
    weight_grad_s: tuple[float, ...]
    optimizer_s: tuple[float, ...]
    send_s: float = 0.0
    activation_bytes: tuple[float, ...] = ()

    @property
    def stages(self) -> int:
        """Pipeline ranks."""
        return len(self.forward_s)


@dataclass(frozen=True, slots=True)
class TimedOp:
    """One operation of the timed schedule (for the Gantt chart)."""

    stage: int
    kind: OpKind
    micro_batch: int
    chunk: int
    start_s: float
    end_s: float


@dataclass(frozen=True, slots=True)
class ScheduleBound:
    """A schedule's step bound.

    Attributes:
        schedule: its name.
        chunks: chunks per rank (virtual stages).
        time_s: the step bound (every rank's optimizer step done).
        busy_s: each rank's work (m (F + B + W) + O).
        bubble_s: each rank's idle time within the step (time_s - busy_s).
        in_flight: each rank's peak micro-batches held (F done, W not done), in units
            of a whole rank's activations.
        activation_bytes: in_flight x the rank's activation bytes.
        ops: the timed operations.
    """

    schedule: Schedule
    chunks: int
    time_s: float
    busy_s: tuple[float, ...]
    bubble_s: tuple[float, ...]
    in_flight: tuple[float, ...]
    activation_bytes: tuple[float, ...]
    ops: tuple[TimedOp, ...]


@dataclass(frozen=True, slots=True)
class PipelineBounds:
    """Bounds that hold for every schedule (Note [Schedule-free bounds]).

    Attributes:
        time_s: max of the fill + work and fill + drain bounds.
        work_s: max over ranks of m (F + B + W) + O (no fill).
        fill_work_s: the fill + work bound.
        drain_s: the fill + drain bound.
        periodic_s: the period of a schedule with no global optimizer sync.
        binding: ``work``, ``fill`` or ``drain``.
        binding_stage: the rank whose term binds.
        chunks: the chunks per rank the bound allows.
    """

    time_s: float
    work_s: float
    fill_work_s: float
    drain_s: float
    periodic_s: float
    binding: Literal["work", "fill", "drain"]
    binding_stage: int
    chunks: int


def _check(costs: StageCosts, micro_batches: int, chunks: int) -> None:
    p = costs.stages
    lists = (costs.forward_s, costs.input_grad_s, costs.weight_grad_s, costs.optimizer_s)
    if p < 1 or any(len(x) != p for x in lists):
        raise PlanError("stage costs need one F, B, W and O per pipeline stage", code="E0807")
    if any(t < 0 for x in lists for t in x) or costs.send_s < 0:
        raise PlanError("stage costs must be non-negative", code="E0807")
    if micro_batches < 1 or chunks < 1:
        raise PlanError("a schedule needs at least one micro-batch and one chunk",
                        code="E0807")


def pipeline_bounds(costs: StageCosts, micro_batches: int, chunks: int = 1, *,
                    bidirectional: bool = False) -> PipelineBounds:
    """The schedule-free bounds (Note [Schedule-free bounds]).

    ``bidirectional``: the bound for schedules that feed half the micro-batches from
    each end with rank d holding stages d and p-1-d (DualPipe): fill is the nearer
    end's, work is the two stages' halves, no drain term.

    >>> b = pipeline_bounds(StageCosts((1.0,) * 4, (1.0,) * 4, (1.0,) * 4, (0.0,) * 4), 8)
    >>> b.work_s, b.time_s, b.binding
    (24.0, 27.0, 'fill')
    """
    _check(costs, micro_batches, chunks)
    p, m, v, send = costs.stages, micro_batches, chunks, costs.send_s
    f, b, w, o = costs.forward_s, costs.input_grad_s, costs.weight_grad_s, costs.optimizer_s
    fill = [sum(f[j] / v + send for j in range(s)) for s in range(p)]
    work = [m * (f[s] + b[s] + w[s]) + o[s] for s in range(p)]
    if bidirectional:
        fill = [min(fill[s], fill[p - 1 - s]) for s in range(p)]
        half = [(m // 2) * (f[s] + b[s] + w[s]) for s in range(p)]
        work = [half[s] + half[p - 1 - s] + o[s] + (o[p - 1 - s] if 2 * s + 1 != p else 0.0)
                for s in range(p)]
    fill_work = [fill[s] + work[s] for s in range(p)]
    drain: list[tuple[float, int]] = []
    for s in range(p if not bidirectional else 0):
        for r in range(s + 1):
            back = sum(b[j] / v + send for j in range(r, s))
            drain.append((fill[s] + m * (f[s] + b[s]) + back + w[r] / v + o[r], s))
    s_fill = max(range(p), key=lambda s: fill_work[s])
    d_time, s_drain = max(drain, default=(0.0, 0))
    best = max(fill_work[s_fill], d_time)
    kind: Literal["work", "fill", "drain"]
    if d_time > fill_work[s_fill]:
        kind, stage = "drain", s_drain
    else:
        kind, stage = ("fill" if fill[s_fill] > 0 else "work"), s_fill
    return PipelineBounds(time_s=best, work_s=max(work), fill_work_s=fill_work[s_fill],
                          drain_s=d_time, periodic_s=max(work), binding=kind,
                          binding_stage=stage, chunks=v)


# -- orders (Note [Fixed orders]) ------------------------------------------------------

Op: TypeAlias = tuple[OpKind, int, int]
"""(kind, micro-batch, virtual stage)."""


@dataclass(frozen=True, slots=True)
class _Shape:
    """How a schedule lays virtual stages on ranks."""

    p: int
    m: int
    v: int
    device: tuple[int, ...]  # rank of each virtual stage (one direction)
    split: bool
    forward_first: bool  # gpipe: every forward before any backward
    bidirectional: bool = False


def _shape(schedule: Schedule, p: int, m: int, v: int) -> _Shape:
    split = schedule in _SPLIT
    if schedule == "gpipe":
        return _Shape(p, m, 1, tuple(range(p)), False, True)
    if schedule in ("1f1b", "zb-h1", "zb-h2"):  # zb-h1/h2 orders: `_zero_bubble_h`
        return _Shape(p, m, 1, tuple(range(p)), split, False)
    if schedule == "interleaved":
        if v < 2:
            raise PlanError("the interleaved schedule needs vpp >= 2 chunks per rank",
                            code="E0808")
        if m % p:
            raise PlanError(f"the interleaved schedule needs micro-batches ({m}) to be a "
                            f"multiple of the pipeline stages ({p})", code="E0808",
                            notes=("Megatron-LM's interleaved schedule groups micro-batches "
                                   "by pipeline depth",))
        return _Shape(p, m, v, tuple(vs % p for vs in range(p * v)), False, False)
    if schedule == "zbv":  # Note [ZB-V order]
        return _Shape(p, m, 2, tuple(range(p)) + tuple(reversed(range(p))), True, False)
    # dualpipe (Note [DualPipe order]): micro-batches enter from both ends; rank d holds
    # stages d and p-1-d; `dualpipe_orders` checks its sizes
    return _Shape(p, m, 1, tuple(range(p)), True, False, bidirectional=True)


def _rank_of(shape: _Shape, op: Op) -> int:
    d = shape.device[op[2]]
    return shape.p - 1 - d if shape.bidirectional and op[1] % 2 else d


def _deps(shape: _Shape, op: Op) -> list[tuple[Op, bool]]:
    """An op's inputs and whether each crosses a link."""
    kind, mb, vs = op
    last = len(shape.device) - 1
    out: list[tuple[Op, bool]] = []
    if kind == "F" and vs > 0:
        out.append((("F", mb, vs - 1), True))
    elif kind == "B":
        out.append((("B", mb, vs + 1), True) if vs < last else (("F", mb, vs), False))
    elif kind == "W":
        out.append((("B", mb, vs), False))
    me = _rank_of(shape, op)
    return [(d, cross and _rank_of(shape, d) != me) for d, cross in out]


def _successors(shape: _Shape, op: Op) -> list[Op]:
    kind, mb, vs = op
    last = len(shape.device) - 1
    if kind == "F":
        return [("F", mb, vs + 1)] if vs < last else [("B", mb, vs)]
    if kind == "B":
        out: list[Op] = [("W", mb, vs)] if shape.split else []
        return out + ([("B", mb, vs - 1)] if vs > 0 else [])
    return []


def _one_f_one_b(shape: _Shape) -> list[list[Op]]:
    """Megatron-LM's 1F1B orders (interleaved with v > 1 chunks): warm-up forwards,
    then one forward and one backward, then the cool-down backwards
    (megatron/core/pipeline_parallel/schedules.py)."""
    p, m, v = shape.p, shape.m, len(shape.device) // shape.p
    orders: list[list[Op]] = []
    for d in range(p):
        total = m * v
        warm = min(total, (p - d - 1) * 2 + (v - 1) * p if v > 1 else p - d - 1)
        if shape.forward_first:
            warm = total

        def fwd(k: int, d: int = d) -> Op:
            return ("F", (k // (p * v)) * p + k % p, ((k // p) % v) * p + d)

        def bwd(k: int, d: int = d) -> Op:
            return ("B", (k // (p * v)) * p + k % p, (v - 1 - (k // p) % v) * p + d)

        if v == 1:
            fwd, bwd = (lambda k, d=d: ("F", k, d)), (lambda k, d=d: ("B", k, d))
        order = [fwd(k) for k in range(warm)]
        for i in range(total - warm):
            order += [fwd(warm + i), bwd(i)]
        order += [bwd(k) for k in range(total - warm, total)]
        orders.append(order)
    return orders


def _zero_bubble_h(shape: _Shape, extra_warmup: bool) -> list[list[Op]]:
    """ZB-H1 (ZB-H2 with ``extra_warmup``): 1F1B's forwards and input gradients, rank
    ``s`` keeping its ``s`` latest weight gradients pending so that input gradients
    travel back first; one pending W after each cool-down B (Qi et al., arXiv
    2401.10241, Fig. 3; with F = B = W this order takes m(F+B+W) + (p-1)(F+B-W), the
    paper's ZB-H1 figure, a test)."""
    p, m = shape.p, shape.m
    orders: list[list[Op]] = []
    for d in range(p):
        warm = min(m, (2 if extra_warmup else 1) * (p - d - 1))
        order: list[Op] = [("F", k, d) for k in range(warm)]
        pending: list[Op] = []
        for k in range(m - warm):
            order += [("F", warm + k, d), ("B", k, d)]
            pending.append(("W", k, d))
            while len(pending) > d:
                order.append(pending.pop(0))
        for k in range(m - warm, m):
            order.append(("B", k, d))
            pending.append(("W", k, d))
            order.append(pending.pop(0))
        orders.append(order + pending)
    return orders


def _orders(schedule: Schedule, shape: _Shape, costs: StageCosts | None) -> list[list[Op]]:
    if schedule in ("zb-h1", "zb-h2"):
        return _zero_bubble_h(shape, extra_warmup=schedule == "zb-h2")
    if schedule == "dualpipe":
        return dualpipe_orders(shape.p, shape.m)
    if schedule == "zbv":  # the generator reads the mean per-chunk costs, as the reference
        mean = (1.0, 1.0, 1.0) if costs is None else tuple(
            sum(x) / (2 * shape.p) for x in (costs.forward_s, costs.input_grad_s,
                                            costs.weight_grad_s))
        return zbv_orders(shape.p, shape.m, (mean[0], mean[1], mean[2]),
                          0.0 if costs is None else costs.send_s)
    return _one_f_one_b(shape)


def schedule_orders(schedule: Schedule, stages: int, micro_batches: int,
                    chunks: int = 1) -> tuple[tuple[Op, ...], ...]:
    """Each rank's operation order for ``schedule`` (Note [Fixed orders]).

    Raises:
        PlanError: E0808 a schedule that cannot run with these sizes.
    """
    shape = _shape(schedule, stages, micro_batches, chunks)
    return tuple(tuple(o) for o in _orders(schedule, shape, None))


def _cost(costs: StageCosts, shape: _Shape, op: Op) -> float:
    kind, _, vs = op
    stage = shape.device[vs]  # a dualpipe rank d runs stage p-1-d for odd micro-batches
    chunk_share = 1.0 / (len(shape.device) / shape.p)
    f, b, w = costs.forward_s[stage], costs.input_grad_s[stage], costs.weight_grad_s[stage]
    if kind == "F":
        return f * chunk_share
    if kind == "B":
        return (b if shape.split else b + w) * chunk_share
    return w * chunk_share


def bound_schedule(costs: StageCosts, schedule: Schedule, micro_batches: int,
                   chunks: int = 1, *, order_costs: StageCosts | None = None) -> ScheduleBound:
    """Time ``schedule``'s fixed orders with ``costs`` (a longest path).

    ``chunks`` is the interleaved schedule's vpp (zbv uses 2, the others 1). The zbv
    order is generated from ``order_costs`` (default ``costs``; Note [ZB-V order]).

    Raises:
        PlanError: E0807 malformed costs; E0808 a schedule these sizes cannot run.
    """
    _check(costs, micro_batches, chunks)
    shape = _shape(schedule, costs.stages, micro_batches, chunks)
    orders = _orders(schedule, shape, order_costs or costs)
    end: dict[Op, float] = {}
    free = [0.0] * shape.p
    pos = [0] * shape.p
    timed: list[TimedOp] = []
    total = sum(len(o) for o in orders)
    while len(end) < total:
        progressed = False
        for r in range(shape.p):
            while pos[r] < len(orders[r]):
                op = orders[r][pos[r]]
                deps = _deps(shape, op)
                if any(d not in end for d, _ in deps):
                    break
                start = max([free[r], *(end[d] + (costs.send_s if cross else 0.0)
                                        for d, cross in deps)])
                end[op] = free[r] = start + _cost(costs, shape, op)
                chunk = op[1] % 2 if shape.bidirectional else op[2] // shape.p
                timed.append(TimedOp(r, op[0], op[1], chunk, start, end[op]))
                pos[r] += 1
                progressed = True
        if not progressed:
            raise PlanError("internal: schedule order deadlock", code="E0808")
    opt = _optimizer(costs, shape)
    finish = [free[r] + opt[r] for r in range(shape.p)]
    time_s = max(finish)
    busy = [sum(t.end_s - t.start_s for t in timed if t.stage == r) + opt[r]
            for r in range(shape.p)]
    flight = _in_flight(shape, orders)
    acts = costs.activation_bytes or (0.0,) * shape.p
    return ScheduleBound(
        schedule=schedule, chunks=len(shape.device) // shape.p, time_s=time_s,
        busy_s=tuple(busy), bubble_s=tuple(time_s - x for x in busy),
        in_flight=tuple(flight),
        activation_bytes=tuple(flight[r] * _acts(shape, acts, r) for r in range(shape.p)),
        ops=tuple(timed),
    )


def _acts(shape: _Shape, acts: Sequence[float], r: int) -> float:
    """One micro-batch's activations on rank ``r`` (dualpipe: the smaller of its two
    stages', a lower estimate)."""
    return min(acts[r], acts[shape.p - 1 - r]) if shape.bidirectional else acts[r]


def _optimizer(costs: StageCosts, shape: _Shape) -> list[float]:
    if shape.bidirectional:  # rank d updates the parameters of stages d and p-1-d
        return [costs.optimizer_s[r] + costs.optimizer_s[shape.p - 1 - r]
                if 2 * r + 1 != shape.p else costs.optimizer_s[r] for r in range(shape.p)]
    return list(costs.optimizer_s)


def _in_flight(shape: _Shape, orders: Sequence[Sequence[Op]]) -> list[float]:
    """Peak micro-batches each rank holds (in whole-rank units), walking its order."""
    release: OpKind = "W" if shape.split else "B"
    share = 1.0 / (len(shape.device) / shape.p)
    out = []
    for order in orders:
        held = peak = 0
        for kind, _, _ in order:
            held += 1 if kind == "F" else -1 if kind == release else 0
            peak = max(peak, held)
        out.append(peak * share)
    return out
