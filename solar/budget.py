"""A memory budget for user code that allocates for real, enforced before it allocates.

Contract: ``with memory_budget(n):`` lets the block allocate about ``n`` more bytes;
`is_allocation_failure` recognises the error an allocation past it raises (numpy's
``MemoryError``, torch's ``RuntimeError: ... can't allocate memory``). Used by the torch
frontend's real build (`solar.frontends.pytorch.loader.build_real_within_budget`).
"""

from __future__ import annotations

import contextlib
import resource
from collections.abc import Iterator
from typing import Final

__all__ = ["is_allocation_failure", "memory_budget"]

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
