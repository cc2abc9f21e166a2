"""solar/budget.py: Note [Budget before the build] — a plan is made with what the
reference run will hold taken off MemAvailable, so the executor's later reading agrees."""

from __future__ import annotations

import pytest

from solar import budget

GiB = 2**30


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine with 20 GiB available and the validation memory uncapped."""
    monkeypatch.setattr(budget, "_available_bytes", lambda: 20 * GiB)
    monkeypatch.setenv(budget.VALIDATION_MEMORY_ENV, "available")


@pytest.mark.parametrize(
    ("held", "expected"),
    [
        (0, 10 * GiB),  # half of MemAvailable
        (6 * GiB, 7 * GiB),  # the reference's model and values held: half of the rest
        (30 * GiB, 0),  # more than there is: nothing, never negative
    ],
)
def test_the_executor_budget_leaves_out_what_the_reference_holds(
    machine: None, held: int, expected: int
) -> None:
    assert budget.executor_budget_bytes(GiB, held_bytes=held) == expected


@pytest.mark.parametrize("held", [0, GiB, 5 * GiB])
def test_planning_agrees_with_the_reading_after_the_build(
    monkeypatch: pytest.MonkeyPatch, machine: None, held: int
) -> None:
    """What the frontend plans with equals what the executor reads once ``held`` bytes
    are allocated (MemAvailable down by them)."""
    planned = budget.executor_budget_bytes(GiB, held_bytes=held)
    monkeypatch.setattr(budget, "_available_bytes", lambda: 20 * GiB - held)
    assert budget.executor_budget_bytes(GiB) == planned


def test_the_default_cap_is_unchanged_by_what_is_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the 1 GiB validation memory (far below MemAvailable) plans do not move:
    replays of small programs stay byte-identical."""
    monkeypatch.setattr(budget, "_available_bytes", lambda: 20 * GiB)
    monkeypatch.delenv(budget.VALIDATION_MEMORY_ENV, raising=False)
    assert budget.memory_budget_bytes(held_bytes=GiB) == budget.memory_budget_bytes()
