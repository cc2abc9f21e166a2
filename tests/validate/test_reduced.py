"""The one reduced-sizes search (`solar.validate.reduce_sizes`): size maps -> chosen sizes."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import pytest

from solar.diagnostics import FrontendError
from solar.validate import ReducedSizes, RunBudget, RunCost, reduce_sizes, size_candidates

Sizes = Mapping[str, int]
Check = Callable[[Sizes], bool]


def _bytes(sizes: Sizes) -> int:
    """A program whose one tensor is the product of every size, in f32."""
    return 4 * math.prod(sizes.values())


def _search(
    sizes: Sizes, budget_bytes: int, valid: Check | None = None, *, declared: bool = False
) -> ReducedSizes[dict[str, int]]:
    def rebuild(overrides: Sizes) -> dict[str, int]:
        built = {**sizes, **overrides}
        if valid is not None and not valid(built):
            raise FrontendError(f"cannot build at {built}")
        return built

    def cost(built: dict[str, int]) -> RunCost:
        return RunCost(_bytes(built))

    return reduce_sizes(sizes, rebuild, cost, RunBudget(budget_bytes), declared=declared)


def _divides(a: str, b: str) -> Check:
    return lambda s: s[a] % s[b] == 0


# (size map, budget in bytes, rebuild constraint, declared, chosen overrides or None: no fit)
CASES: list[tuple[str, dict[str, int], int, Check | None, bool, dict[str, int] | None]] = [
    ("fits as it is", {"B": 4, "N": 1024}, 1 << 20, None, False, {}),
    (
        "size-like constants halve together, heads stay",
        {"batch_size": 64, "seq_len": 32, "dim": 48, "num_heads": 4},
        256 * 1024,
        None,
        False,
        {"batch_size": 32, "seq_len": 16, "dim": 24},
    ),
    (
        "several halvings, a model width too",
        {"BATCH": 64, "SEQ": 4096, "D_MODEL": 64},
        4 * 64 * 64 * 64,
        None,
        False,
        {"BATCH": 16, "SEQ": 1024, "D_MODEL": 16},
    ),
    (
        "a constraint: the batch alone halves when both cannot",
        {"batch": 64, "dim": 96, "heads": 48},
        4 * 8 * 48 * 48,
        _divides("dim", "heads"),
        False,
        {"batch": 8, "dim": 48},
    ),
    ("an odd size halves below 8", {"N": 9}, 4 * 4, None, False, {"N": 4}),
    ("declared sizes need no size-like name", {"Dh": 64, "M": 512, "HEADS": 16}, 4 * 32 * 256 * 16,
     None, True, {"Dh": 32, "M": 256}),
    ("constants must look like sizes", {"Dh": 64, "M": 512, "HEADS": 16}, 4 * 64 * 256 * 16,
     None, False, {"M": 256}),
    ("nothing left to halve", {"batch": 16, "kernel_size": 3}, 1, None, False, None),
    ("no size-like constant", {"seed": 1234, "EPS_SCALE": 100, "x": 64}, 1, None, False, None),
    ("every rebuild fails", {"batch": 64, "n": 64}, 1, lambda s: s["batch"] == 64, False, None),
]


@pytest.mark.parametrize(
    ("sizes", "budget", "valid", "declared", "chosen"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_reduce_sizes_table(
    sizes: dict[str, int],
    budget: int,
    valid: Check | None,
    declared: bool,
    chosen: dict[str, int] | None,
) -> None:
    found = _search(sizes, budget, valid, declared=declared)
    assert found.fits == (chosen is not None)
    if chosen is None:
        return
    assert dict(found.overrides) == chosen
    assert found.sizes == {**sizes, **chosen}
    assert found.built == found.sizes
    assert found.cost == RunCost(_bytes(found.sizes)) and found.cost.bytes <= budget
    assert found.full_cost == RunCost(_bytes(sizes))


def test_no_fit_reports_the_smallest_build_and_the_candidates() -> None:
    found = _search({"batch": 16, "kernel_size": 3, "dim": 12}, 1)
    assert not found.fits
    assert found.candidates == ("batch", "dim")
    assert found.sizes == {"batch": 8, "kernel_size": 3, "dim": 6}
    assert found.cost.bytes == _bytes(found.sizes)


def test_description() -> None:
    sizes = {"batch_size": 64, "seq_len": 32, "dim": 48, "num_heads": 4}
    assert _search(sizes, 256 * 1024).description == (
        "scaled batch_size 64->32, dim 48->24, seq_len 32->16 (program 1.5 MiB -> 192.0 KiB)"
    )
    assert _search(sizes, 1 << 30).description == "full size (1.5 MiB)"


def test_time_budget_counts_too() -> None:
    def rebuild(overrides: Sizes) -> dict[str, int]:
        return {"N": 1024, **overrides}

    def cost(built: dict[str, int]) -> RunCost:
        return RunCost(0, seconds=built["N"] / 1000)

    found = reduce_sizes({"N": 1024}, rebuild, cost, RunBudget(1 << 30, seconds=0.3))
    assert found.fits and found.sizes == {"N": 256}


def test_start_is_the_first_build() -> None:
    calls: list[dict[str, int]] = []

    def rebuild(overrides: Sizes) -> dict[str, int]:
        calls.append(dict(overrides))
        return {"N": 64, **overrides}

    def cost(built: dict[str, int]) -> RunCost:
        return RunCost(built["N"])

    found = reduce_sizes({"N": 64}, rebuild, cost, RunBudget(16), start={"N": 64})
    assert found.sizes == {"N": 16}
    assert calls == [{"N": 32}, {"N": 16}]


def test_size_candidates() -> None:
    sizes = {
        "batch_size": 128,
        "seq_len": 4096,
        "dim": 64,
        "kernel_size": 9,
        "num_heads": 16,
        "N": 32,
        "eps_scale": 100,
        "small_dim": 8,
    }
    assert size_candidates(sizes) == ["batch_size", "seq_len", "N", "dim"]
    assert size_candidates(sizes, declared=True) == ["batch_size", "seq_len", "N", "dim"]
    assert size_candidates({"Dh": 64, "x": 64}, declared=True) == ["Dh", "x"]
