"""The vocabulary of batch and sweep tasks: what a task is, where it runs, how it fails.

Contract: a leaf of `solar.batch` (no engine, no Dask): `solar.batch.engine` (threads)
and `solar.batch.cluster` (Dask) both implement `TaskRunner` over these types, so
neither imports the other's vocabulary from it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from solar.diagnostics import UsageError
from solar.options import EngineName

__all__ = ["EngineOptions", "TaskFailure", "TaskFn", "TaskRunner"]

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
