"""Memory budgets: the validation memory and its shares, and a limit for user code.

Contract: `memory_budget_bytes` is a share of the validation memory (Note [Validation
memory]), the one reader of ``MemAvailable`` and ``SOLAR_VALIDATION_MEMORY``; it imports
nothing heavy, so a frontend may ask before anything is validated.
``with memory_budget(n):`` lets the block allocate about ``n`` more bytes;
`is_allocation_failure` recognises the error an allocation past it raises (numpy's
``MemoryError``, torch's ``RuntimeError: ... can't allocate memory``). Used by the torch
frontend's real build (`solar.frontends.pytorch.loader.build_real_within_budget`).

Error codes: E0905 a malformed ``SOLAR_VALIDATION_MEMORY``.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import resource
from collections.abc import Iterator
from typing import Final

from solar.diagnostics import UsageError

__all__ = [
    "format_memory",
    "FALLBACK_BUDGET_BYTES",
    "VALIDATION_MEMORY_BYTES",
    "VALIDATION_MEMORY_ENV",
    "executor_budget_bytes",
    "memory_pool_is_default",
    "uncapped_validation_memory",
    "is_allocation_failure",
    "memory_budget",
    "memory_budget_bytes",
    "validation_memory_bytes",
]

_ALLOCATION_FAILURES: Final = (
    "Cannot allocate memory",
    "can't allocate memory",
    "Unable to allocate",
    "out of memory",
    "std::bad_alloc",
)


@contextlib.contextmanager
def memory_budget(budget_bytes: int) -> Iterator[bool]:
    """Let the block allocate at most ``budget_bytes`` more (Linux; elsewhere no limit).

    Note [Memory budget]: the soft ``RLIMIT_DATA`` is set to this process's data size
    now (``VmData``) plus the budget, and restored when the block ends. Since Linux 4.7
    it counts every private writable mapping, so an allocation past the budget fails at
    once (``MemoryError`` in numpy, ``RuntimeError: ... can't allocate memory`` in
    torch) instead of touching pages until the OOM killer ends the process. The limit
    is process-wide: use it only around user code that runs alone (building a model).

    Yields:
        Whether the budget is enforced.
    """
    current = _data_bytes()
    if current is None:
        yield False
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    want = current + budget_bytes
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    if soft != resource.RLIM_INFINITY and soft <= want:
        yield True  # already at least as strict
        return
    resource.setrlimit(resource.RLIMIT_DATA, (want, hard))
    try:
        yield True
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def _data_bytes() -> int | None:
    """``VmData`` of this process in bytes (``None`` off Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def is_allocation_failure(err: BaseException | None) -> bool:
    """True when ``err`` (or what caused it) is an allocation that failed."""
    seen = 0
    while err is not None and seen < 8:
        if isinstance(err, MemoryError) or any(w in str(err) for w in _ALLOCATION_FAILURES):
            return True
        err, seen = err.__cause__, seen + 1
    return False


FALLBACK_BUDGET_BYTES = 4 * 2**30

VALIDATION_MEMORY_BYTES: Final = 2**30
"""The memory validation plans within by default (Note [Validation memory])."""

VALIDATION_MEMORY_ENV: Final = "SOLAR_VALIDATION_MEMORY"
"""Overrides `VALIDATION_MEMORY_BYTES`: MiB, or ``available`` for no cap."""


def memory_budget_bytes(
    fraction: float = 0.5, *, capped: bool = True, held_bytes: int = 0
) -> int:
    """A safe default budget: ``fraction`` of the validation memory, at most ``fraction``
    of MemAvailable (4 GiB when unknown) (Note [Validation memory]).

    Args:
        fraction: the share.
        capped: ``False``: of MemAvailable alone.
        held_bytes: memory this process will hold by the time the budget is read
            again (a reference run's model and values): MemAvailable less it.

    Raises:
        UsageError: E0905 when ``SOLAR_VALIDATION_MEMORY`` is malformed.

    >>> memory_budget_bytes() > 0
    True
    """
    cap = validation_memory_bytes() if capped else None
    available = max(_available_bytes() - held_bytes, 0)
    if cap is not None:
        available = min(available, cap)
    return int(available * fraction)


def executor_budget_bytes(reference_bytes: int, *, held_bytes: int = 0) -> int:
    """The executor's budget for checking a reference that may touch ``reference_bytes``:
    its default (`memory_budget_bytes`), raised to twice the reference's budget (within
    half of MemAvailable) when that is larger, so a reference the user let run at
    a size (``--reference-budget``) is also checked there (Note [Validation memory]).
    ``held_bytes``: what the reference will hold when the executor reads its budget
    (Note [Budget before the build]).

    >>> executor_budget_bytes(1) == memory_budget_bytes()
    True
    """
    uncapped = memory_budget_bytes(capped=False, held_bytes=held_bytes)
    return max(memory_budget_bytes(held_bytes=held_bytes), min(2 * reference_bytes, uncapped))


# Note [Budget before the build]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Budgets are shares of MemAvailable, read when they are needed. The executor reads its
# own after the reference ran, when this process holds the real build (its parameters
# and inputs) and the reference values copied to arrays: about twice the run's bytes
# less than when the frontend planned. Planned with the larger figure, a plan could
# pass before the build and be refused after it: a KernelBench level-3 MLP (2.7 GB of
# parameters) built, ran and copied its model, peaking at 5.6 GB RSS (12.1 GB in the
# report that found it), for a check the executor then skipped. So the frontend plans
# with what the reference will hold taken off (``held_bytes``): a plan the executor
# would refuse is refused before anything is allocated, and its program is checked at
# reduced sizes or batch, or skipped with the reason, at the capture's footprint.


def validation_memory_bytes() -> int | None:
    """The memory validation plans within, ``None`` for all that is available.

    Note [Validation memory]: validation's memory is bounded by a fixed figure, 1 GiB by
    default, not only by the machine's ``MemAvailable``: the executor may use half of it
    and a real reference run a quarter (`solar.frontends.kit.reference_budget_bytes`),
    so that with the process's own ~330 MiB (torch, numpy, sympy) one file's analysis
    stays under about 1 GiB of peak RSS wherever it runs (issue 17). A larger program is
    checked at reduced sizes or batch, or sampled, as when it exceeds the machine. Full
    size checks of large programs: ``SOLAR_VALIDATION_MEMORY=available`` (the old
    default: shares of ``MemAvailable``), or a figure in MiB; ``--reference-budget``
    sets the reference's share alone and lifts the executor's cap to twice it
    (`executor_budget_bytes`); a reference file (``--reference``) fixes the sizes, so
    its check may use half of ``MemAvailable``. A program that cannot be checked within
    the default at all (nothing smaller fits: a model whose parameters alone exceed the
    reference's share) is planned again within ``MemAvailable``'s shares
    (`uncapped_validation_memory`) rather than skipped, and the report says so: the 1 GiB
    holds for every program that can be checked within it, and validation is not given up
    for the others. A reference plan must fit both: its real run the
    reference budget, and the executor's estimate for checking it the executor's
    (`solar.frontends.kit.executor_seconds` is infinite where it would not).

    Raises:
        UsageError: E0905 when ``SOLAR_VALIDATION_MEMORY`` is not a positive number
            of MiB or ``available``.
    """
    raw = os.environ.get(VALIDATION_MEMORY_ENV, "").strip().lower()
    if not raw:
        return None if _UNCAPPED.get() else VALIDATION_MEMORY_BYTES
    if raw == "available":
        return None
    try:
        mib = float(raw)
    except ValueError:
        mib = math.nan
    if not (0 < mib < 2**40 and math.isfinite(mib)):
        raise UsageError(
            f"{VALIDATION_MEMORY_ENV}={raw!r}: expected a positive number of MiB or "
            "`available`",
            code="E0905",
        )
    return int(mib * 2**20)


def _available_bytes() -> int:
    """MemAvailable (else the free physical pages, else `FALLBACK_BUDGET_BYTES`)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if hasattr(os, "sysconf"):
        try:
            pages, page = os.sysconf("SC_AVPHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
            if pages > 0 and page > 0:
                return int(pages * page)
        except (OSError, ValueError):
            pass
    return FALLBACK_BUDGET_BYTES


_UNCAPPED: contextvars.ContextVar[bool] = contextvars.ContextVar("solar_uncapped", default=False)


def memory_pool_is_default() -> bool:
    """True when neither ``SOLAR_VALIDATION_MEMORY`` nor `uncapped_validation_memory`
    sets the validation memory (the 1 GiB default applies)."""
    return not os.environ.get(VALIDATION_MEMORY_ENV, "").strip() and not _UNCAPPED.get()


@contextlib.contextmanager
def uncapped_validation_memory() -> Iterator[None]:
    """Within the block the default validation memory is ``MemAvailable``'s shares (as
    ``SOLAR_VALIDATION_MEMORY=available``); an explicit setting still wins. The pipeline
    uses it for a program that cannot be checked within the default (Note [Validation
    memory])."""
    token = _UNCAPPED.set(True)
    try:
        yield
    finally:
        _UNCAPPED.reset(token)


def format_memory(n: int) -> str:
    """``n`` bytes of memory in binary units, one decimal (budgets, a program's footprint;
    reports quote traffic in SI units, `solar.report.format_bytes`).

    >>> format_memory(3 * 2**29), format_memory(1536), format_memory(12)
    ('1.5 GiB', '1.5 KiB', '12 B')
    """
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
