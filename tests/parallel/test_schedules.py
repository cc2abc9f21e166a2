"""Pipeline schedules (`solar.distributed.schedules`): closed forms, the schedule-free
bounds, monotonicity, memory, and coded errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.diagnostics import PlanError
from solar.distributed.schedules import (
    SCHEDULES,
    Schedule,
    StageCosts,
    bound_schedule,
    pipeline_bounds,
)


def _even(p: int, f: float = 1.0, b: float = 1.0, w: float = 1.0, o: float = 0.0,
          send: float = 0.0) -> StageCosts:
    return StageCosts((f,) * p, (b,) * p, (w,) * p, (o,) * p, send, (1.0,) * p)


def _chunks(schedule: Schedule) -> int:
    return {"interleaved": 2, "zbv": 2}.get(schedule, 1)


@pytest.mark.parametrize(("p", "m"), [(2, 2), (4, 8), (4, 16), (8, 8), (8, 32)])
@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_gpipe_1f1b_bubble_is_p_minus_1_over_m(schedule: Schedule, p: int, m: int) -> None:
    """Narayanan et al. 2021 Sec. 2.2: bubble fraction (p-1)/m of the ideal m(F+B+W)."""
    r = bound_schedule(_even(p, 1.0, 2.0, 0.5), schedule, m)
    ideal = m * 3.5
    assert r.time_s == pytest.approx(ideal * (1 + (p - 1) / m))
    assert all(x == pytest.approx((p - 1) * 3.5) for x in r.bubble_s)


@pytest.mark.parametrize(("p", "m", "v"), [(4, 8, 2), (4, 16, 4), (2, 8, 3)])
def test_interleaved_bubble_is_p_minus_1_over_vm(p: int, m: int, v: int) -> None:
    r = bound_schedule(_even(p), "interleaved", m, v)
    assert r.time_s == pytest.approx(3 * m * (1 + (p - 1) / (v * m)))


@pytest.mark.parametrize(("p", "m", "f", "b", "w"), [
    (4, 8, 1.0, 1.0, 1.0), (8, 16, 1.0, 1.0, 1.0), (8, 32, 1.0, 1.2, 0.7), (6, 12, 1.0, 2.0, 1.0),
    (8, 8, 1.0, 1.0, 0.5)])
def test_zb_h1_takes_the_papers_bubble(p: int, m: int, f: float, b: float, w: float) -> None:
    """Qi et al. (arXiv 2401.10241): ZB-H1's bubble is (p-1)(F+B-W) (with W <= F, B)."""
    r = bound_schedule(_even(p, f, b, w), "zb-h1", m)
    assert r.time_s == pytest.approx(m * (f + b + w) + (p - 1) * (f + b - w))
    assert max(r.in_flight) <= p  # the same activation memory as 1F1B


def test_1f1b_holds_p_minus_d_micro_batches_and_gpipe_all() -> None:
    assert bound_schedule(_even(4), "1f1b", 8).in_flight == (4.0, 3.0, 2.0, 1.0)
    assert bound_schedule(_even(4), "gpipe", 8).in_flight == (8.0,) * 4
    assert bound_schedule(_even(4), "1f1b", 8).activation_bytes == (4.0, 3.0, 2.0, 1.0)


def test_schedule_free_bound_uniform_is_work_plus_fill() -> None:
    b = pipeline_bounds(_even(4, send=0.25), 8)
    assert b.time_s == pytest.approx(24 + 3 * 1.25)
    assert b.periodic_s == pytest.approx(24)
    assert b.binding == "fill" and b.binding_stage == 3


def test_drain_binds_when_backward_dominates_on_early_stages() -> None:
    # the last stage is cheap; the input gradient must still return to stage 0
    costs = StageCosts((1.0, 1.0, 0.1), (5.0, 5.0, 0.1), (0.0, 0.0, 0.0), (0.0,) * 3)
    b = pipeline_bounds(costs, 1)
    assert b.binding == "drain" and b.drain_s == pytest.approx(1 + 1 + 0.2 + 5 + 5)


_costs = st.integers(2, 6).flatmap(lambda p: st.tuples(
    st.lists(st.floats(0.0, 4.0), min_size=p, max_size=p),
    st.lists(st.floats(0.0, 4.0), min_size=p, max_size=p),
    st.lists(st.floats(0.0, 4.0), min_size=p, max_size=p),
    st.lists(st.floats(0.0, 2.0), min_size=p, max_size=p),
    st.floats(0.0, 1.0),
))


def _make(raw: tuple[list[float], ...] | tuple) -> StageCosts:
    f, b, w, o, send = raw
    return StageCosts(tuple(f), tuple(b), tuple(w), tuple(o), send)


@settings(max_examples=40, deadline=None)
@given(_costs, st.integers(1, 4), st.sampled_from(SCHEDULES))
def test_every_schedule_is_at_least_the_schedule_free_bound(
        raw: tuple, k: int, schedule: Schedule) -> None:
    costs = _make(raw)
    p = costs.stages
    if schedule == "dualpipe" and p % 2:
        costs = _make(tuple([*(x + x[:1] for x in raw[:4]), raw[4]]))
        p += 1
    m = p * k if schedule == "interleaved" else 2 * p * k if schedule == "dualpipe" else k
    v = _chunks(schedule)
    r = bound_schedule(costs, schedule, m, v)
    lb = pipeline_bounds(costs, m, v, bidirectional=schedule == "dualpipe")
    assert r.time_s >= lb.time_s - 1e-9
    assert r.time_s >= max(r.busy_s) - 1e-9
    assert all(x >= -1e-9 for x in r.bubble_s)


@settings(max_examples=40, deadline=None)
@given(_costs, st.sampled_from(SCHEDULES), st.integers(0, 3), st.floats(0.0, 3.0))
def test_schedule_bound_is_monotone_in_each_cost(
        raw: tuple, schedule: Schedule, which: int, extra: float) -> None:
    costs = _make(raw)
    p = costs.stages
    if schedule == "dualpipe" and p % 2:
        costs = _make(tuple([*(x + x[:1] for x in raw[:4]), raw[4]]))
        p += 1
    m, v = 2 * p, _chunks(schedule)
    fields = [list(costs.forward_s), list(costs.input_grad_s), list(costs.weight_grad_s),
              list(costs.optimizer_s)]
    fields[which][p // 2] += extra
    bigger = StageCosts(*(tuple(x) for x in fields), costs.send_s)
    # zbv's generator reads the costs: monotone for the order it made (Note [Fixed orders])
    assert bound_schedule(bigger, schedule, m, v, order_costs=costs).time_s >= \
        bound_schedule(costs, schedule, m, v).time_s - 1e-9
    assert pipeline_bounds(bigger, m, v).time_s >= pipeline_bounds(costs, m, v).time_s - 1e-9


def test_zero_bubble_schedules_beat_1f1b_with_split_backward() -> None:
    costs = _even(4, 1.0, 1.0, 1.0)
    one = bound_schedule(costs, "1f1b", 8).time_s
    assert bound_schedule(costs, "zb-h1", 8).time_s < one
    assert bound_schedule(costs, "zbv", 8, 2).time_s == pytest.approx(
        pipeline_bounds(costs, 8, 2).time_s)


@pytest.mark.parametrize(("p", "m"), [(4, 8), (4, 16), (6, 24), (8, 16), (8, 32)])
def test_zbv_has_the_papers_zero_bubble_and_1f1b_memory(p: int, m: int) -> None:
    """Qi et al. (arXiv 2401.10241; sail-sg README table): with F = B = W, ZB-V's bubble
    is 0 (each rank idle only before its first chunk arrives, (p-1) F/2) and its
    activation memory that of 1F1B (p micro-batches on rank 0)."""
    r = bound_schedule(_even(p), "zbv", m, 2)
    assert r.time_s == pytest.approx(3 * m + (p - 1) / 2)
    assert max(r.in_flight) == p


@pytest.mark.parametrize(("p", "m"), [(4, 8), (8, 16), (8, 32)])
def test_dualpipe_holds_p_plus_1_and_runs_every_op(p: int, m: int) -> None:
    """DeepSeek-V3 Table 2: DualPipe's activation memory is PP + 1 micro-batches."""
    r = bound_schedule(_even(p), "dualpipe", m)
    assert max(r.in_flight) == p + 1
    assert len(r.ops) == 3 * p * m
    assert r.time_s >= pipeline_bounds(_even(p), m, 1, bidirectional=True).time_s


@pytest.mark.parametrize("schedule", ["zbv", "dualpipe"])
def test_paper_orders_beat_1f1b_with_a_heavy_backward(schedule: Schedule) -> None:
    """Full recompute makes B twice F: the papers' orders still beat 1F1B."""
    costs = _even(8, 1.0, 2.0, 1.0)
    assert bound_schedule(costs, schedule, 64, _chunks(schedule)).time_s < \
        bound_schedule(costs, "1f1b", 64).time_s


@pytest.mark.parametrize(("schedule", "p", "m", "v", "code"), [
    ("interleaved", 4, 6, 2, "E0808"),   # m not a multiple of p
    ("interleaved", 4, 8, 1, "E0808"),   # needs chunks
    ("dualpipe", 3, 6, 1, "E0808"),      # odd stages
    ("dualpipe", 4, 9, 1, "E0808"),      # odd micro-batches
    ("dualpipe", 4, 6, 1, "E0808"),      # fewer than 2p micro-batches
])
def test_schedules_that_cannot_run_are_coded(schedule: Schedule, p: int, m: int, v: int,
                                             code: str) -> None:
    with pytest.raises(PlanError) as err:
        bound_schedule(_even(p), schedule, m, v)
    assert err.value.code == code


def test_malformed_costs_are_coded() -> None:
    with pytest.raises(PlanError) as err:
        pipeline_bounds(StageCosts((1.0,), (1.0, 2.0), (1.0,), (0.0,)), 2)
    assert err.value.code == "E0807"
    with pytest.raises(PlanError):
        bound_schedule(StageCosts((-1.0,), (1.0,), (1.0,), (0.0,)), "1f1b", 2)
