"""Where batch and sweep tasks run: threads on this machine, or a Dask cluster.

Contract: `run_tasks` ``(fn, items, EngineOptions, stop, on_done) -> None`` (or
`task_runner`, which keeps an engine open over several rounds of tasks) calls
``fn(item, stop_event)`` once per item and hands each outcome to ``on_done(index,
outcome)`` in the calling thread, as tasks finish. ``fn`` starts and supervises one
child process per call (`solar.batch.child`), so the engine only schedules: a
``local`` engine is a `concurrent.futures.ThreadPoolExecutor` of ``workers``
threads; a ``dask`` engine is a Dask cluster (`solar.batch.cluster`: a
``LocalCluster`` of ``workers`` process workers, or the scheduler at ``scheduler``),
where an outcome may also be a `TaskFailure` (Note [Retries] there). Dask is
imported only when the ``dask`` engine runs.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from solar.diagnostics import UsageError
from solar.options import EngineName

__all__ = ["EngineOptions", "TaskFailure", "TaskFn", "TaskRunner", "run_tasks", "task_runner"]

T = TypeVar("T")
R = TypeVar("R")

TaskFn = Callable[[T, threading.Event], R]
"""A task: ``fn(item, stop) -> outcome``; on Dask it must be picklable (a module-level
function, or a `functools.partial` of one)."""


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """Which engine runs the tasks.

    Attributes:
        engine: ``local`` (threads here) or ``dask``.
        workers: tasks at the same time (``local``), or the ``LocalCluster``'s
            process workers (``dask`` without ``scheduler``).
        scheduler: a Dask scheduler's address (``tcp://host:8786``); only with
            ``dask``.

    Raises:
        UsageError: E0932 ``scheduler`` without the ``dask`` engine; E0931 a worker
            count out of range.
    """

    engine: EngineName = "local"
    workers: int = 2
    scheduler: str | None = None

    def __post_init__(self) -> None:
        if self.scheduler is not None and self.engine != "dask":
            raise UsageError("--scheduler needs --engine dask", code="E0932")
        if not 1 <= self.workers <= 256:
            raise UsageError(f"--workers must be 1 to 256, got {self.workers}", code="E0931")


@dataclass(frozen=True, slots=True)
class TaskFailure:
    """A task that returned no outcome (Dask engine only).

    Attributes:
        kind: ``lost-worker`` (the workers running it died, `KilledWorker`),
            ``cancelled`` (the run stopped first), ``internal`` (the task raised: a
            bug in SOLAR, never the user's program).
        cause: one line, for the row's ``error``.
    """

    kind: Literal["lost-worker", "cancelled", "internal"]
    cause: str


class TaskRunner(Protocol):
    """An open engine: runs tasks, several rounds of them if need be (`task_runner`)."""

    def run(
        self,
        fn: TaskFn[T, R],
        items: Sequence[T],
        *,
        stop: threading.Event,
        on_done: Callable[[int, R | TaskFailure], None],
        name: str = "solar",
    ) -> None:
        """Run ``fn`` over ``items``; ``on_done`` gets each outcome (see `run_tasks`)."""
        ...


@dataclass(frozen=True, slots=True)
class _LocalRunner:
    workers: int

    def run(
        self,
        fn: TaskFn[T, R],
        items: Sequence[T],
        *,
        stop: threading.Event,
        on_done: Callable[[int, R | TaskFailure], None],
        name: str = "solar",
    ) -> None:
        if not items:
            return
        pool = cf.ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix=name)
        try:
            futures = {pool.submit(fn, item, stop): i for i, item in enumerate(items)}
            for future in cf.as_completed(futures):
                on_done(futures[future], future.result())
        except BaseException:
            stop.set()  # a bug or an unwritable output: stop the children before raising
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=False)


@contextlib.contextmanager
def task_runner(engine: EngineOptions) -> Iterator[TaskRunner]:
    """Open ``engine`` (for ``dask``: connect, or start a ``LocalCluster``) until exit.

    Raises:
        UsageError: E0908 ``dask`` without Dask installed; E0932 no scheduler there.
    """
    if engine.engine == "dask":
        from solar.batch.cluster import DaskRunner, dask_client

        with dask_client(engine) as client:
            yield DaskRunner(client)
        return
    yield _LocalRunner(engine.workers)


def run_tasks(
    fn: TaskFn[T, R],
    items: Sequence[T],
    engine: EngineOptions,
    *,
    stop: threading.Event,
    on_done: Callable[[int, R | TaskFailure], None],
    name: str = "solar",
) -> None:
    """Run ``fn`` over ``items`` on ``engine``; ``on_done`` gets each outcome.

    Args:
        fn: the task (see `TaskFn`).
        items: one task each.
        engine: where they run (opened and closed here; `task_runner` keeps it open
            over several rounds).
        stop: when set, running tasks are told to stop (their ``stop`` argument is
            set) and their outcomes still arrive.
        on_done: called in this thread with ``(index, outcome)``.
        name: a prefix for the Dask task keys (the dashboard shows it).

    Raises:
        UsageError: E0908 ``dask`` without Dask installed; E0932 no scheduler there.
    """
    if not items:
        return
    with task_runner(engine) as runner:
        runner.run(fn, items, stop=stop, on_done=on_done, name=name)
