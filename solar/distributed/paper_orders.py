"""The ZB-V and DualPipe operation orders as their authors generate them.

Contract: ``zbv_orders(p, m, (F, B, W), P) -> orders`` and ``dualpipe_orders(p, m) ->
orders``, pure; an order is each rank's sequence of ``(kind, micro-batch, virtual
stage)`` operations in the layout of `solar.distributed.schedules` (zbv: virtual stage
``s`` and ``2p-1-s`` on rank ``s``; dualpipe: even micro-batches enter at rank 0, odd ones
at rank ``p-1``, virtual stage ``v`` of an odd micro-batch on rank ``p-1-v``).

Note [ZB-V order]: Qi et al., "Zero Bubble Pipeline Parallelism" (arXiv 2401.10241,
the ZB-V section) and "Pipeline Parallelism with Controllable Memory" (arXiv 2405.15362)
build the V schedule with a heuristic over the profiled F, B, W and transfer times
(sail-sg/zero-bubble-pipeline-parallelism,
``megatron/core/pipeline_parallel/zerobubble/scheduler/zbv.py``, ``PipelineGraph``),
re-implemented here step by step: every rank's first-chunk forwards, the warm-up that
fills rank ``i`` with first-chunk forwards while the second chunk's forward comes back
(memory limit ``2p`` chunk activations), the forwards that balance the ranks, then
``2m`` rounds of one input gradient and one forward per rank, each preceded by the
pending weight gradients that fit the wait for its input (and one more when the wait
exceeds the bubble the rank may still take); the pending weight gradients close the
step. The generator is re-run with each rank's bubble as its allowance while the
largest bubble shrinks, with W filled before B and/or F or not (four variants), and the
variant with the least bubble is kept, as the reference does. Memory per chunk-micro-
batch: a forward holds 34 units, an input gradient frees 2, a weight gradient 32 (the
reference's ``34 h`` and ``32 h`` per layer, its attention term left out).

Note [DualPipe order]: DeepSeek-V3 (arXiv 2412.19437) Sec. 3.2.1 and deepseek-ai/DualPipe
``dualpipe/dualpipe.py`` (``DualPipe.step``): rank ``r``, ``h = min(r, p-1-r)``, phase 0 its
own direction (forward from rank 0 for the first half of the ranks, from rank ``p-1``
for the second), phase 1 the other, ``m/2`` micro-batches per direction, ``m >= 2p``:

1. ``2(p/2 - h - 1)`` forwards of phase 0;
2. ``h + 1`` times a forward of phase 0 and one of phase 1;
3. ``p/2 - h - 1`` times: input gradient of phase 1 (its W deferred), one deferred W,
   a forward of phase 1;
4. ``m/2 - p + h + 1`` times: F0 with B1, then F1 with B0 (full backwards);
5. ``p/2 - h - 1`` times: B1, then F1 with B0;
6. ``h + 1`` times B1 and B0, W deferred from the middle one on;
7. ``p/2 - h - 1`` times a deferred W and B0 (W deferred);
8. the ``h + 1`` deferred W's, first in first out.

A "full" backward is B followed at once by its W; an overlapped "F with B" pair is two
operations on the rank's one compute stream.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Final, Literal, TypeAlias

from solar.diagnostics import PlanError

__all__ = ["dualpipe_orders", "zbv_orders"]

Kind: TypeAlias = Literal["F", "B", "W"]
Op: TypeAlias = tuple[Kind, int, int]
_KINDS: Final[tuple[Kind, Kind, Kind]] = ("F", "B", "W")
_MEM: Final = (34.0, -2.0, -32.0)  # Note [ZB-V order]


# -- ZB-V ---------------------------------------------------------------------------

class _VState:
    """One run of the V-schedule generator (Note [ZB-V order])."""

    def __init__(self, p: int, m: int, cost: tuple[float, float, float], send: float,
                 allowance: Sequence[float] | None) -> None:
        self.p, self.m, self.cost, self.send = p, m, cost, send
        self.count = [[0] * 6 for _ in range(p)]  # index 2 * kind + chunk
        self.end: dict[tuple[int, int, int, int], float] = {}
        self.cur = [0.0] * p
        self.mem = [0.0] * p
        self.bubble = [0.0] * p
        self.pending: list[deque[int]] = [deque() for _ in range(p)]
        self.order: list[list[tuple[int, int, int]]] = [[] for _ in range(p)]
        self.allowance = list(allowance) if allowance is not None else [-1.0] * p
        self.limit = _MEM[0] * 2 * p

    def max_bubble(self, stage: int = -1) -> float:
        out = max([0.0, *self.bubble])
        if stage >= 0:
            out = max(out, max(self.allowance) - self.allowance[stage])
        return out

    def put(self, cat: int, chunk: int, s: int) -> None:
        k = self.count[s][2 * cat + chunk]
        if k >= self.m:
            raise PlanError("internal: the V-schedule generator overran its micro-batches",
                            code="E0808")
        t = free = self.cur[s] + self.cost[cat]
        nb = s + 1 if chunk == 1 else s - 1
        if cat < 2 and 0 <= nb < self.p:
            dep = self.end.get((cat, chunk, nb, k))
            if dep is None:
                raise PlanError("internal: the V-schedule generator broke a dependency",
                                code="E0808")
            t = max(t, dep + self.send + self.cost[cat])
        if self.count[s][0] > 0:
            self.bubble[s] += t - free
        self.end[(cat, chunk, s, k)] = self.cur[s] = t
        self.mem[s] += _MEM[cat]
        self.order[s].append((cat, chunk, k))
        if cat == 1:
            self.pending[s].append(chunk)
        self.count[s][2 * cat + chunk] += 1

    def put_w(self, s: int) -> None:
        self.put(2, self.pending[s].popleft(), s)

    def ended(self, key: tuple[int, int, int, int]) -> bool:
        return key in self.end

    def fill_wait(self, s: int, key: tuple[int, int, int, int] | None, fill: bool) -> None:
        """Weight gradients that fit while rank ``s`` waits for ``key``'s input, and one
        more when the wait is longer than the bubble it may still take."""
        while self.pending[s] and key is not None and key in self.end and \
                self.end[key] + self.send >= self.cur[s] + self.cost[2]:
            self.put_w(s)
        dep = self.end.get(key, -1.0) if key is not None else -1.0
        if self.pending[s] and fill and \
                dep + self.send - self.cur[s] > self.max_bubble(s) - self.bubble[s]:
            self.put_w(s)


def _v_warmup(st: _VState) -> None:
    p, m = st.p, st.m
    for i in range(p):
        st.put(0, 0, i)
    for i in reversed(range(p)):
        if i < p - 1:
            back = st.end[(0, 1, i + 1, 0)] + st.send
            while (st.mem[i] + _MEM[0] * (2 + 2 * i) <= st.limit
                   and st.cur[i] + st.cost[0] <= back and st.count[i][0] < m):
                for j in range(i + 1):
                    if st.count[j][0] < m:
                        st.put(0, 0, j)
        st.put(0, 1, i)
    chunk = 0
    for i in range(1, p):
        while (sum(st.count[i][:2]) < sum(st.count[i - 1][:2])
               or st.count[i][1] <= st.count[i - 1][1] < m):
            for j in range(p - 1, i - 1, -1):
                if st.count[j][chunk] < m:
                    st.put(0, chunk, j)
            chunk = 1 - chunk


def _v_backward(st: _VState, fill_b: bool) -> None:
    p, m = st.p, st.m
    b0, b1 = [], []
    for i in range(p):
        if st.count[i][3] >= st.count[i][2]:
            b0.append(i)
        elif i == p - 1 or st.ended((1, 1, i + 1, st.count[i][3])) or st.count[i][2] >= m:
            b1.append(i)
        else:
            b0.append(i)
    for i, chunk in [(i, 1) for i in reversed(b1)] + [(i, 0) for i in b0]:
        key: tuple[int, int, int, int] | None = None
        if chunk == 1 and i < p - 1:
            key = (1, 1, i + 1, st.count[i][3])
        if chunk == 0 and i > 0:
            key = (1, 0, i - 1, st.count[i][2])
        st.fill_wait(i, key, fill=chunk == 1 or fill_b)
        st.put(1, chunk, i)


def _v_forward(st: _VState, fill_f: bool) -> None:
    p, m = st.p, st.m
    for i in range(p):
        if st.count[i][1] >= m:
            continue
        item: int | None = None
        if st.count[i][1] >= st.count[i][0]:
            item = 0
        elif i == p - 1 or st.ended((0, 1, i + 1, st.count[i][1])):
            item = 1
        elif st.count[i][0] < m and (i == 0 or st.ended((0, 0, i - 1, st.count[i][0]))):
            item = 0
        if item is None:
            continue
        while st.mem[i] + _MEM[0] > st.limit and st.pending[i]:
            st.put_w(i)
        key: tuple[int, int, int, int] | None = None
        if item == 0 and i > 0:
            key = (0, 0, i - 1, st.count[i][0])
        if item == 1 and i < p - 1:
            key = (0, 1, i + 1, st.count[i][1])
        st.fill_wait(i, key, fill=fill_f)
        st.put(0, item, i)


def _v_try(p: int, m: int, cost: tuple[float, float, float], send: float, fill_f: bool,
           fill_b: bool) -> tuple[list[list[tuple[int, int, int]]], float]:
    best: tuple[list[list[tuple[int, int, int]]], float] | None = None
    allowance: list[float] | None = None
    while True:
        st = _VState(p, m, cost, send, allowance)
        _v_warmup(st)
        for _ in range(2 * m):
            _v_backward(st, fill_b)
            _v_forward(st, fill_f)
        for i in range(p):
            while st.pending[i]:
                st.put_w(i)
        worst = st.max_bubble()
        if best is not None and worst >= best[1]:
            return best
        best = (st.order, worst)
        allowance = list(st.bubble)


def zbv_orders(p: int, m: int, cost: tuple[float, float, float],
               send: float) -> list[list[Op]]:
    """Each rank's ZB-V order for per-chunk costs ``cost = (F, B, W)`` and transfer
    ``send`` (Note [ZB-V order])."""
    best: tuple[list[list[tuple[int, int, int]]], float] | None = None
    for fill_b in (True, False):
        for fill_f in (True, False):
            got = _v_try(p, m, cost, send, fill_f, fill_b)
            if best is None or got[1] < best[1]:
                best = got
    assert best is not None
    out: list[list[Op]] = []
    for s, order in enumerate(best[0]):
        ops: list[Op] = []
        for cat, chunk, k in order:
            real = chunk if cat == 0 else 1 - chunk  # the generator counts B/W chunks back
            ops.append((_KINDS[cat], k, s if real == 0 else 2 * p - 1 - s))
        out.append(ops)
    return out


# -- DualPipe -----------------------------------------------------------------------

class _DualRank:
    """One rank's DualPipe order (Note [DualPipe order])."""

    def __init__(self, p: int, r: int) -> None:
        self.p, self.r = p, r
        self.own = 0 if r < p // 2 else 1  # direction of phase 0
        self.next_f = [0, 0]
        self.next_b = [0, 0]
        self.deferred: deque[Op] = deque()
        self.ops: list[Op] = []

    def _op(self, kind: Kind, phase: int, k: int) -> Op:
        direction = self.own ^ phase
        stage = self.r if direction == 0 else self.p - 1 - self.r
        return (kind, 2 * k + direction, stage)

    def f(self, phase: int) -> None:
        self.ops.append(self._op("F", phase, self.next_f[phase]))
        self.next_f[phase] += 1

    def b(self, phase: int, defer: bool = False) -> None:
        k = self.next_b[phase]
        self.next_b[phase] += 1
        self.ops.append(self._op("B", phase, k))
        w = self._op("W", phase, k)
        if defer:
            self.deferred.append(w)
        else:
            self.ops.append(w)

    def w(self) -> None:
        self.ops.append(self.deferred.popleft())


def dualpipe_orders(p: int, m: int) -> list[list[Op]]:
    """Each rank's DualPipe order (Note [DualPipe order]).

    Raises:
        PlanError: E0808 odd ``p`` or ``m``, or fewer than ``2p`` micro-batches.
    """
    if p % 2 or m % 2 or m < 2 * p:
        raise PlanError(f"dualpipe needs an even number of stages and an even number of "
                        f"at least 2 x stages micro-batches (pp={p}, micro-batches={m})",
                        code="E0808", notes=("deepseek-ai/DualPipe asserts num_chunks % 2 "
                                             "== 0 and num_chunks >= 2 x num_ranks",))
    half, half_m = p // 2, m // 2
    out: list[list[Op]] = []
    for r in range(p):
        h = min(r, p - 1 - r)
        x = _DualRank(p, r)
        for _ in range(2 * (half - h - 1)):
            x.f(0)
        for _ in range(h + 1):
            x.f(0)
            x.f(1)
        for _ in range(half - h - 1):
            x.b(1, defer=True)
            x.w()
            x.f(1)
        for _ in range(half_m - p + h + 1):
            x.f(0)
            x.b(1)
            x.f(1)
            x.b(0)
        for _ in range(half - h - 1):
            x.b(1)
            x.f(1)
            x.b(0)
        defer = False
        for i in range(h + 1):
            defer = defer or (i == (h + 1) // 2 and h % 2 == 1)
            x.b(1, defer=defer)
            defer = defer or (i == (h + 1) // 2 and h % 2 == 0)
            x.b(0, defer=defer)
        for _ in range(half - h - 1):
            x.w()
            x.b(0, defer=True)
        while x.deferred:
            x.w()
        out.append(x.ops)
    return out
