"""The reduced-sizes search: which sizes to shrink, in which order, and when to stop.

Contract: ``(size map, rebuild, cost, budget) -> ReducedSizes[B]``. A program too large
to check (its reference run, or the executor, would exceed a budget) is checked at
smaller sizes instead. This module holds the one search every caller uses; the caller
supplies how to rebuild its program at a size binding and what a build costs:

* the PyTorch and JAX frontends rebuild a model file with its module-level size
  constants overridden (a fresh capture; cost: the bytes a real run touches);
* `validate`'s ``reduced-sizes`` strategy rebinds an IR program's free sizes (cost:
  the executor's predicted memory and time) and then asks ``reference_at``.

The search (Note [Reduced sizes]) never runs the program: it only rebuilds and
estimates, and the caller runs the reference once, at the sizes it returns. No torch,
no jax.

Note [Reduced sizes]
~~~~~~~~~~~~~~~~~~~~
Candidates are the sizes above `MIN_SHRUNK_SIZE` (smaller ones are kernel sizes,
heads, ...) whose names do not say they are fixed (``kernel``, ``stride``, ``head``,
...). For a model file's constants, which may be anything (seeds, counts), a name must
also look like a size (``batch``, ``seq``, ``dim``, a single letter, ...); an IR
program's free sizes are declared sizes, so they need not. Batch and sequence sizes
come first, then the rest by name. Each step halves every candidate still above
`MIN_SHRUNK_SIZE` together; when the program cannot be rebuilt there (a size must
divide another, ...), it halves the first single candidate that rebuilds. It stops at
the first build whose cost fits the budget, and reports no fit when no step rebuilds
or no candidate is left to halve.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from solar.budget import format_memory
from solar.diagnostics import SolarError

__all__ = [
    "MIN_SHRUNK_SIZE",
    "ReducedSizes",
    "RunBudget",
    "RunCost",
    "reduce_sizes",
    "size_candidates",
]

B = TypeVar("B")

MIN_SHRUNK_SIZE = 8
"""Sizes at or below this are never shrunk (kernel sizes, heads, ...)."""

_SIZE_WORDS = (
    "batch",
    "seq",
    "len",
    "size",
    "dim",
    "height",
    "width",
    "hidden",
    "feature",
    "channel",
    "token",
    "vocab",
    "embed",
    "num_",
    "n_",
    "ffn",
    "intermediate",
    "model",
)
_FIXED_WORDS = (
    "kernel",
    "stride",
    "pad",
    "dilation",
    "group",
    "head",
    "layer",
    "seed",
    "window",
    "scale",
    "block",
    "patch",
)
_LETTERS = re.compile(r"^[A-Z][0-9]?$|^[bnmkltdhwcse]$")
_PRIORITY = ("batch", "seq", "len", "token")


@dataclass(frozen=True, slots=True)
class RunCost:
    """The predicted cost of checking a program at some sizes.

    Attributes:
        bytes: memory it touches (a real run's tensors, or the executor's estimate).
        seconds: predicted time (0 when the caller budgets memory only).
    """

    bytes: int
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class RunBudget:
    """What a check may cost.

    Attributes:
        bytes: the memory budget.
        seconds: the time budget (unbounded by default).
    """

    bytes: int
    seconds: float = math.inf

    def admits(self, cost: RunCost) -> bool:
        """True when ``cost`` is within both budgets.

        >>> RunBudget(100).admits(RunCost(100)), RunBudget(100, 1.0).admits(RunCost(10, 2.0))
        (True, False)
        """
        return cost.bytes <= self.bytes and cost.seconds <= self.seconds


@dataclass(frozen=True, slots=True)
class ReducedSizes(Generic[B]):
    """The outcome of `reduce_sizes`.

    Attributes:
        built: the caller's build at ``sizes`` (the last one tried when nothing fits).
        sizes: every size of the map, at the chosen binding.
        overrides: the sizes that changed, at their new values.
        original: the size map the search started from.
        candidates: the sizes the search could shrink, in order.
        full_cost: the cost at ``original``.
        cost: the cost at ``sizes``.
        fits: whether ``cost`` is within the budget.
    """

    built: B
    sizes: Mapping[str, int]
    overrides: Mapping[str, int]
    original: Mapping[str, int]
    candidates: tuple[str, ...]
    full_cost: RunCost
    cost: RunCost
    fits: bool

    @property
    def description(self) -> str:
        """What was scaled, in words (the validation report shows it).

        >>> r = ReducedSizes(None, {"B": 4}, {"B": 4}, {"B": 16}, ("B",), RunCost(2**20),
        ...                  RunCost(2**18), True)
        >>> r.description
        'scaled B 16->4 (program 1.0 MiB -> 256.0 KiB)'
        """
        full = format_memory(self.full_cost.bytes)
        if not self.overrides:
            return f"full size ({full})"
        scaled = ", ".join(
            f"{k} {self.original[k]}->{v}" for k, v in sorted(self.overrides.items())
        )
        return f"scaled {scaled} (program {full} -> {format_memory(self.cost.bytes)})"


def size_candidates(sizes: Mapping[str, int], *, declared: bool = False) -> list[str]:
    """The sizes the search may shrink, most reducible first (Note [Reduced sizes]).

    Args:
        sizes: size names and values.
        declared: every name is a declared size (an IR program's free sizes); else the
            names are a model file's integer constants and must look like sizes.

    Returns:
        The candidate names, batch and sequence sizes first, then by name.

    >>> size_candidates({"batch_size": 128, "kernel_size": 3, "dim": 4096, "num_heads": 32})
    ['batch_size', 'dim']
    >>> size_candidates({"Dh": 64, "M": 512, "HEADS": 16}, declared=True)
    ['Dh', 'M']
    """
    out = []
    for name, value in sizes.items():
        low = name.lower()
        if value <= MIN_SHRUNK_SIZE or any(w in low for w in _FIXED_WORDS):
            continue
        if declared or any(w in low for w in _SIZE_WORDS) or _LETTERS.match(name):
            out.append(name)

    def rank(n: str) -> tuple[int, str]:
        low = n.lower()
        hits = [k for k, w in enumerate(_PRIORITY) if w in low]
        return (hits[0] if hits else len(_PRIORITY), n)

    return sorted(out, key=rank)


def reduce_sizes(
    sizes: Mapping[str, int],
    rebuild: Callable[[Mapping[str, int]], B],
    cost: Callable[[B], RunCost],
    budget: RunBudget,
    *,
    start: B | None = None,
    declared: bool = False,
) -> ReducedSizes[B]:
    """Shrink ``sizes`` until the rebuilt program's cost fits ``budget``.

    Args:
        sizes: the size map of the program as asked (module constants, IR free sizes).
        rebuild: builds the program with some of ``sizes`` overridden (the argument
            holds only the overrides); raises `SolarError` when it cannot.
        cost: the predicted cost of a build.
        budget: what a build may cost.
        start: the build at ``sizes`` when the caller has it (else ``rebuild({})``).
        declared: the names are declared sizes (see `size_candidates`).

    Returns:
        The chosen binding and its build (``fits`` is False when nothing fits; the
        build is then the smallest one tried).

    Raises:
        SolarError: ``rebuild({})`` failed (at the sizes as asked).
    """
    built = start if start is not None else rebuild({})
    full = current = cost(built)
    names = size_candidates(sizes, declared=declared)
    overrides: dict[str, int] = {}
    fits = budget.admits(current)
    while not fits:
        step = _halve_once(rebuild, overrides, names, sizes)
        if step is None:
            break
        overrides, built = step
        current = cost(built)
        fits = budget.admits(current)
    return ReducedSizes(
        built=built,
        sizes={**sizes, **overrides},
        overrides=overrides,
        original=dict(sizes),
        candidates=tuple(names),
        full_cost=full,
        cost=current,
        fits=fits,
    )


def _halve_once(
    rebuild: Callable[[Mapping[str, int]], B],
    overrides: Mapping[str, int],
    names: Sequence[str],
    original: Mapping[str, int],
) -> tuple[dict[str, int], B] | None:
    """One step: halve every live candidate together, else the first single one that
    rebuilds; ``None`` when none does."""
    live = [n for n in names if overrides.get(n, original[n]) > MIN_SHRUNK_SIZE]
    groups = [live, *([n] for n in live)] if len(live) > 1 else [live]
    for group in groups:
        if not group:
            continue
        trial = dict(overrides)
        for n in group:
            trial[n] = max(1, overrides.get(n, original[n]) // 2)
        try:
            built = rebuild(trial)
        except SolarError:
            continue
        return trial, built
    return None
