"""Tasks on a Dask cluster: a ``LocalCluster`` of process workers, or a scheduler's address.

Contract: `dask_client` ``(EngineOptions) -> Client`` (a context manager that closes
what it opened) and `map_on_dask` ``(client, fn, items, stop, on_done)``, the
``dask`` side of `solar.batch.engine.run_tasks`. Without ``--scheduler`` the cluster
is a ``LocalCluster`` of ``workers`` nanny-supervised process workers with one
thread each and no memory limit of Dask's own (each task's child has its own
``--max-rss``); with ``--scheduler tcp://host:8786`` the same code submits to that
scheduler's workers. Imported only when the ``dask`` engine runs (never by
``solar --help``).

Note [Retries]
~~~~~~~~~~~~~~
A task never raises for the user's program: a model that crashes, hangs or exhausts
its memory does so in the task's own child process (`solar.batch.child`), and the
task returns that row (``crashed``, ``timeout``, ``memory-limit``, ``error``). So a
model's own failure is recorded once and never retried. What Dask retries is the
infrastructure: when the worker process running a task dies (its machine went away,
its nanny killed it, the OOM killer took it), the scheduler reschedules the task on
another worker, up to ``distributed.scheduler.allowed-failures`` times (3 by
default; ``DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES`` sets it), after which
the future raises ``KilledWorker``: that is recorded as ``crashed``, with the cause.
The child of a task whose worker died dies with it (``PR_SET_PDEATHSIG``), and a
task's outputs reach ``--out`` only from the client, after the task returned, so a
retried task lands exactly once. Tasks are submitted with ``retries=0``: Dask's own
retries re-run a task whose function *raised*, which here is only a bug in SOLAR
(recorded as E0999).

Note [Stopping tasks on a cluster]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A running task cannot be interrupted by cancelling its future (Dask lets the
function run on). Each task therefore watches a ``distributed.Event`` named for the
run; `map_on_dask` sets it when the run is stopped, every running task's child is
killed within half a second, and those tasks return ``cancelled`` rows; tasks not
started yet return ``cancelled`` at once. Futures still pending after
`STOP_GRACE_S` are cancelled and recorded as ``cancelled``.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeVar

from solar.batch.tasks import EngineOptions, TaskFailure, TaskFn
from solar.diagnostics import UsageError

if TYPE_CHECKING:
    from distributed import Client, Future

__all__ = ["STOP_GRACE_S", "DaskRunner", "dask_client", "map_on_dask"]

T = TypeVar("T")
R = TypeVar("R")

STOP_GRACE_S: Final = 30.0
_WAIT_S: Final = 0.25


@contextlib.contextmanager
def dask_client(engine: EngineOptions) -> Iterator[Client]:
    """A client of ``engine.scheduler``, or of a new ``LocalCluster`` (closed on exit).

    Raises:
        UsageError: E0908 Dask is not installed; E0932 the scheduler cannot be reached.
    """
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise UsageError(
            "--engine dask needs Dask: pip install 'solar-sol[dask]'", code="E0908"
        ) from None
    if engine.scheduler is not None:
        try:
            client = Client(engine.scheduler, timeout="20s", set_as_default=False)
        except (OSError, TimeoutError, ValueError) as err:
            raise UsageError(
                f"cannot reach the Dask scheduler at {engine.scheduler}: {err}", code="E0932"
            ) from None
        with contextlib.closing(client):
            yield client
        return
    # the scheduler runs in this process: its INFO lines are not the user's business
    quiet = logging.getLogger("distributed")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        with _workers_deaf_to_ctrl_c():
            cluster = LocalCluster(
                n_workers=engine.workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",  # any free port: two clusters on one machine never clash
                memory_limit=0,
                silence_logs=logging.ERROR,
            )
        with contextlib.closing(cluster), Client(cluster, set_as_default=False) as client:
            yield client
    finally:
        quiet.setLevel(level)


@contextlib.contextmanager
def _workers_deaf_to_ctrl_c() -> Iterator[None]:
    """SIGINT ignored while the local cluster starts its processes, which inherit it.

    A Ctrl-C reaches every process of the terminal's foreground group: the workers too,
    whose event loops then died printing ``CancelledError`` and ``KeyboardInterrupt``
    tracebacks while the client was stopping them cleanly (Note [Stopping tasks on a
    cluster]). An ignored signal is the one disposition a started interpreter keeps,
    so the workers (and those the nannies restart) leave stopping to the client.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _run_task(fn: TaskFn[T, R], item: T, stop_name: str) -> R:
    """On a worker: ``fn(item, stop)``, with ``stop`` set when the run's Event is."""
    from distributed import Event, get_client

    stop, done = threading.Event(), threading.Event()
    event = Event(stop_name, client=get_client())

    def watch() -> None:
        while not done.is_set():
            try:
                if event.wait(timeout=0.5):
                    stop.set()
                    return
            except (OSError, TimeoutError):
                return  # the scheduler is gone; the task's own limits still hold

    watcher = threading.Thread(target=watch, name="solar-stop-watch", daemon=True)
    watcher.start()
    try:
        return fn(item, stop)
    finally:
        done.set()


def _outcome(future: Future[R]) -> R | TaskFailure:
    """A finished future's result, or the `TaskFailure` it stands for."""
    from distributed import KilledWorker

    if future.status == "finished":
        return future.result()
    if future.status == "cancelled":
        return TaskFailure("cancelled", "the run stopped before this task finished")
    error = future.exception()
    if isinstance(error, KilledWorker):
        return TaskFailure(
            "lost-worker",
            f"the Dask workers running this task died, too often to retry ({error})",
        )
    return TaskFailure(
        "internal",
        f"error[E0999]: internal error on a Dask worker: {type(error).__name__}: {error}",
    )


def map_on_dask(
    client: Client,
    fn: TaskFn[T, R],
    items: Sequence[T],
    *,
    stop: threading.Event,
    on_done: Callable[[int, R | TaskFailure], None],
    name: str = "solar",
) -> None:
    """Submit ``fn(item)`` per item and report each outcome as it lands (Note [Retries])."""
    from distributed import Event, as_completed

    token = uuid.uuid4().hex[:12]
    stop_name = f"solar-stop-{token}"
    event = Event(stop_name, client=client)
    futures = [
        client.submit(
            _run_task, fn, item, stop_name, key=f"{name}-{i}-{token}", pure=False, retries=0
        )
        for i, item in enumerate(items)
    ]
    index = {f.key: i for i, f in enumerate(futures)}
    pending = set(futures)
    finished: queue.SimpleQueue[Future[R]] = queue.SimpleQueue()

    def collect() -> None:  # as_completed blocks without a timeout: feed a queue instead
        for future in as_completed(futures, loop=client.loop):
            finished.put(future)

    threading.Thread(target=collect, name="solar-dask-collect", daemon=True).start()
    give_up_at: float | None = None
    try:
        while pending:
            with contextlib.suppress(queue.Empty):
                future = finished.get(timeout=_WAIT_S)
                pending.discard(future)
                outcome = _outcome(future)
                on_done(index[future.key], outcome)
            if stop.is_set() and give_up_at is None:
                event.set()  # Note [Stopping tasks on a cluster]
                give_up_at = time.monotonic() + STOP_GRACE_S
            if give_up_at is not None and time.monotonic() > give_up_at:
                break
    except BaseException:
        event.set()
        raise
    finally:
        if pending:
            client.cancel(list(pending))
    for future in sorted(pending, key=lambda f: index[f.key]):
        on_done(index[future.key], TaskFailure("cancelled", "the run stopped first"))


@dataclass(frozen=True, slots=True)
class DaskRunner:
    """An open Dask client as a `solar.batch.tasks.TaskRunner`."""

    client: Client

    def run(
        self,
        fn: TaskFn[T, R],
        items: Sequence[T],
        *,
        stop: threading.Event,
        on_done: Callable[[int, R | TaskFailure], None],
        name: str = "solar",
    ) -> None:
        """`map_on_dask` on this client."""
        if items:
            map_on_dask(self.client, fn, items, stop=stop, on_done=on_done, name=name)
