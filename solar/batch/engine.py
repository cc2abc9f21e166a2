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
imported only when the ``dask`` engine runs (`solar.batch.cluster` imports it
inside its functions). The types both engines share are `solar.batch.tasks`.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from solar.batch.cluster import DaskRunner, dask_client
from solar.batch.tasks import EngineOptions, TaskFailure, TaskFn, TaskRunner

__all__ = ["EngineOptions", "TaskFailure", "TaskFn", "TaskRunner", "run_tasks", "task_runner"]

T = TypeVar("T")
R = TypeVar("R")


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
