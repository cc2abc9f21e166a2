"""Running independent pieces of one statement on two threads.

Contract: `run_all(tasks)` runs zero-argument callables, possibly concurrently, and
returns when all are done; if any raised, the exception of the *first* failing task
(in list order) is re-raised, so faults stay deterministic. numpy releases the GIL in
its array loops, so two threads working on disjoint halves of a large statement use
two cores, as torch does with ``torch.set_num_threads(2)``. Tasks must write disjoint
memory; the executor only splits along target axes of injective strided writes.

Nested calls (a task that itself calls `run_all`) run inline, so the pool can never
deadlock waiting for itself.

Note [One BLAS thread per piece]: numpy's OpenBLAS keeps a thread pool of its own (one
thread per core). Two pieces that both call BLAS (a matrix-vector sum, a matmul) would
each ask that pool for every core: four busy threads on two cores, and calls that queue
on the pool's lock; a 4096x1024 row sum took 40 ms instead of 2 ms. While pieces run
concurrently, BLAS is set to one thread (each piece is then one core's work, as torch
splits it), and restored afterwards. The executor holds BLAS on one thread for its whole
run (`one_blas_thread`): a statement too small to split (a recurrence step's ``10x128
@ 128x768``) gains nothing from the pool and pays for waking it (a 2-layer GRU's check
took 9.8 s instead of 0.8 s on a loaded 2-core machine), and switching the pool back on
between statements costs its restart (tens of milliseconds) at the next BLAS call.
Where OpenBLAS cannot be found (another BLAS, a numpy without it) nothing is changed.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TypeVar

__all__ = [
    "PARALLEL_MIN_POINTS",
    "WORKERS",
    "one_blas_thread",
    "run_all",
    "run_blocks",
    "split_evenly",
]

T = TypeVar("T")


def _available_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


WORKERS = max(1, min(2, _available_cores()))
"""Threads a statement may use (at most two, like the torch baseline)."""

PARALLEL_MIN_POINTS = 1 << 18
"""Smallest piece of work (points or elements) worth a second thread."""

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
_LOCAL = threading.local()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=WORKERS - 1, thread_name_prefix="solar-exec")
        return _POOL


def _guarded(task: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        _LOCAL.inside = True
        try:
            task()
        finally:
            _LOCAL.inside = False

    return run


def run_all(tasks: Sequence[Callable[[], None]]) -> None:
    """Run ``tasks`` (concurrently when worthwhile) and re-raise the first failure.

    >>> out = []
    >>> run_all([lambda: out.append(1), lambda: out.append(2)])
    >>> sorted(out)
    [1, 2]
    """
    if len(tasks) <= 1 or getattr(_LOCAL, "inside", False):
        for task in tasks:
            task()
        return
    with one_blas_thread():
        futures: list[Future[None]] = [_pool().submit(_guarded(t)) for t in tasks[1:]]
        try:
            _guarded(tasks[0])()
        finally:
            wait(futures)  # a failure of the first task propagates after the others end
    for future in futures:
        future.result()  # re-raises the first failure, in task order


def run_blocks(work: Callable[[list[T]], None], items: Sequence[T], size: int) -> None:
    """Run ``work`` over ``items`` (disjoint output blocks), in one contiguous share of
    the items per thread when the output of ``size`` elements is large enough."""
    if WORKERS < 2 or size < 2 * PARALLEL_MIN_POINTS or len(items) < 2:
        work(list(items))
        return
    run_all(
        [
            functools.partial(work, list(items[lo:hi]))
            for lo, hi in split_evenly(len(items), WORKERS)
        ]
    )


def split_evenly(n: int, parts: int) -> list[tuple[int, int]]:
    """Cut ``range(n)`` into at most ``parts`` contiguous, non-empty ranges.

    >>> split_evenly(5, 2)
    [(0, 2), (2, 5)]
    """
    parts = max(1, min(parts, n))
    bounds = [round(k * n / parts) for k in range(parts + 1)]
    return [(bounds[k], bounds[k + 1]) for k in range(parts) if bounds[k + 1] > bounds[k]]


_BlasThreads = tuple[Callable[[int], None], Callable[[], int]]
_BLAS: list[_BlasThreads | None] = []  # [] until looked up; [None]: no OpenBLAS found

_OPENBLAS_SYMBOLS = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
)


def _openblas() -> _BlasThreads | None:
    """``(set_num_threads, get_num_threads)`` of the OpenBLAS numpy loaded, if any."""
    if not _BLAS:
        _BLAS.append(_find_openblas())
    return _BLAS[0]


def _find_openblas() -> _BlasThreads | None:
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = sorted({ln.split()[-1] for ln in maps if "openblas" in ln.lower()})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for set_name, get_name in _OPENBLAS_SYMBOLS:
            if hasattr(lib, set_name) and hasattr(lib, get_name):
                setter, getter = getattr(lib, set_name), getattr(lib, get_name)
                setter.argtypes, setter.restype = [ctypes.c_int], None
                getter.argtypes, getter.restype = [], ctypes.c_int
                return setter, getter
    return None


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """OpenBLAS on one thread while pieces run concurrently (Note [One BLAS thread per
    piece])."""
    blas = _openblas()
    before = blas[1]() if blas is not None else 1
    if blas is None or before <= 1:
        yield
        return
    blas[0](1)
    try:
        yield
    finally:
        blas[0](before)
