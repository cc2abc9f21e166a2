"""Stage progress on stderr for the commands that run a program (rich).

Contract: `stage_progress(quiet=...)` is a context manager yielding a
``Callable[[str], None]`` that the pipeline calls at each stage (`solar.pipeline.Progress`).

Note [Progress from the first second]: every stage is shown as it starts, from the
first one on; a run that says nothing for seconds (a JAX import, a capture) looks hung.
On a terminal each stage is a line ``[  1.2s] capturing ...`` and a transient spinner
shows the running stage and the time spent in it; elsewhere (CI logs, pipes, tests) each
stage is one plain line. ``--quiet`` shows nothing. Data never goes through here:
stdout is the report's alone.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

__all__ = ["StageProgress", "announce_start", "stage_progress"]


def announce_start(message: str, *, quiet: bool) -> float:
    """Print the first stage before the slow imports (plain, no spinner: the work may
    run in a forked child, which must own the spinner); return the clock's start."""
    start = time.monotonic()
    if not quiet:
        sys.stderr.write(f"[{0.0:6.1f}s] {message}\n")
        sys.stderr.flush()
    return start


class StageProgress:
    """The pipeline's progress callback: one line per stage, plus a spinner on a terminal."""

    def __init__(
        self, *, quiet: bool, start: float | None = None, console: Console | None = None
    ) -> None:
        """Show nothing when ``quiet``; times count from ``start`` (default: now);
        ``console`` defaults to rich's on stderr."""
        self.quiet = quiet
        self.start = time.monotonic() if start is None else start
        self._console = console
        self._spinner: Progress | None = None
        self._task: TaskID | None = None

    def _ensure_console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=True, highlight=False, markup=False)
        return self._console

    def __call__(self, message: str) -> None:
        """Show the stage ``message`` now (Note [Progress from the first second])."""
        if self.quiet:
            return
        console = self._ensure_console()
        console.print(f"[{time.monotonic() - self.start:6.1f}s] {message}")
        if not console.is_terminal:
            return
        if self._spinner is None:
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._spinner = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}", markup=False),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            self._spinner.start()
            self._task = self._spinner.add_task(message, total=None)
        elif self._task is not None:
            self._spinner.reset(self._task, description=message)  # the stage's own clock

    def close(self) -> None:
        """Stop the spinner (it leaves no line behind)."""
        if self._spinner is not None:
            self._spinner.stop()
            self._spinner = None


@contextlib.contextmanager
def stage_progress(
    *, quiet: bool, start: float | None = None
) -> Iterator[Callable[[str], None]]:
    """A `StageProgress` whose spinner stops when the block ends, however it ends."""
    progress = StageProgress(quiet=quiet, start=start)
    try:
        yield progress
    finally:
        progress.close()
