"""Failed data-parallel replicas re-routed to the survivors (`solar.distributed.failures`)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.diagnostics import PlanError
from solar.distributed.failures import Failure, bound_failures, parse_failure
from solar.distributed.schedules import StageCosts, bound_schedule, pipeline_bounds

EVEN = StageCosts((1.0,) * 8, (1.0,) * 8, (1.0,) * 8, (0.0,) * 8, 0.0, (1.0,) * 8)


def test_recycle_condition_one_failure_per_stage_is_absorbed() -> None:
    """docs/distributed.md: against 1F1B's (m+p-1)(F+B+W), failures are free iff
    ceil(m k / (d - k)) <= p - 1 (p=8, m=32, d=8 absorbs k=1: ceil(32/7) = 5 <= 7)."""
    sched = bound_schedule(EVEN, "1f1b", 32)
    fb = bound_failures(EVEN, [Failure(3, 1)], dp=8, micro_batches=32,
                        bubble_s=sched.bubble_s)
    assert fb.extra_micro_batches == (5,)
    assert fb.extra_work_s == (15.0,)
    assert fb.fits_in_bubble == (True,)  # 15 <= (p-1)(F+B+W) = 21
    assert fb.time_s >= fb.no_failure_s == pytest.approx(pipeline_bounds(EVEN, 32).time_s)
    assert fb.time_s <= sched.time_s  # the failure fits under 1F1B's own step
    assert fb.drop_pipelines_s > fb.time_s  # dropping a pipeline costs 32 * 8/7 micro-batches


def test_more_failures_cost_more_and_crossings_count() -> None:
    one = bound_failures(EVEN, [Failure(0, 1)], dp=4, micro_batches=8, boundary_bytes=10.0)
    two = bound_failures(EVEN, [Failure(0, 1), Failure(0, 1)], dp=4, micro_batches=8,
                         boundary_bytes=10.0)
    assert two.failures == (Failure(0, 2),)
    assert two.time_s > one.time_s
    assert one.extra_boundary_bytes == (2 * 1 * 8 * 10.0,)  # stage 0: out only, both ways
    mid = bound_failures(EVEN, [Failure(4, 1)], dp=4, micro_batches=8, boundary_bytes=10.0)
    assert mid.extra_boundary_bytes == (2 * 2 * 8 * 10.0,)
    assert [t for _, t in one.curve] == sorted(t for _, t in one.curve)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6), st.integers(1, 8), st.integers(1, 16), st.data())
def test_failure_bound_is_at_least_the_no_failure_bound(p: int, dp: int, m: int,
                                                        data: st.DataObject) -> None:
    if dp < 2:
        return
    stage = data.draw(st.integers(0, p - 1))
    k = data.draw(st.integers(1, dp - 1))
    costs = StageCosts(tuple(data.draw(st.lists(st.floats(0, 3), min_size=p, max_size=p))),
                       (1.0,) * p, (0.5,) * p, (0.1,) * p, 0.05)
    fb = bound_failures(costs, [Failure(stage, k)], dp=dp, micro_batches=m)
    assert fb.time_s >= fb.no_failure_s
    assert fb.extra_micro_batches[0] * (dp - k) >= k * m  # every re-routed batch placed


@pytest.mark.parametrize(("failures", "dp", "code"), [
    ([Failure(9, 1)], 4, "E0809"),                   # no such stage
    ([Failure(2, 4)], 4, "E0809"),                   # every replica down
    ([Failure(2, 2), Failure(2, 2)], 4, "E0809"),    # adds up to every replica
])
def test_impossible_failures_are_coded(failures: list[Failure], dp: int, code: str) -> None:
    with pytest.raises(PlanError) as err:
        bound_failures(EVEN, failures, dp=dp, micro_batches=8)
    assert err.value.code == code


@pytest.mark.parametrize("text", ["stage=1", "stage=a:k=1", "stage=1:k=0", "k=1:stage=2"])
def test_malformed_fail_is_coded(text: str) -> None:
    with pytest.raises(PlanError) as err:
        parse_failure(text)
    assert err.value.code == "E0804"
