"""Processes a program leaves running: adopted, then stopped (Note [Left-behind processes]).

Contract: `adopt_orphans()` makes this process the one that inherits its descendants'
orphans; `stop_orphans(keep)` kills and reaps every child of this process but ``keep``
and returns how many it stopped. Linux only (elsewhere both do nothing).

Note [Left-behind processes]: the guarded child runs the program in a process group of
its own and the group is killed when the child ends (Note [Guarded run] in
`solar.guard`), but a process the program started can leave the group (``setsid``) and
outlive the analysis: ``solar analyze`` then ends while a stranger's process keeps
running, holding the command's stdout and stderr open, so a CI step that reads them
waits for it. With ``PR_SET_CHILD_SUBREAPER`` the parent inherits every orphan of its
descendants instead of init, so once the child has ended, whatever is still the parent's
child (and was not before the run) was left behind by the program: it is killed, each
process it started comes to the parent in turn and is killed too, and each is reaped.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
from typing import Final

__all__ = ["adopt_orphans", "children", "stop_orphans"]

logger = logging.getLogger("solar")

_PR_SET_CHILD_SUBREAPER: Final = 36
_ROUNDS: Final = 100
"""How many generations of a program's processes are stopped (each round kills the
children the previous round's processes left to this one)."""


def adopt_orphans() -> bool:
    """Inherit the orphans of this process's descendants (Linux); True when it took."""
    if not sys.platform.startswith("linux"):
        return False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    return False


def children(*, ended: bool = False) -> set[int]:
    """The processes whose parent is this process, live ones (``ended``: the ones that
    ended and wait to be reaped) (from ``/proc``; empty elsewhere)."""
    me, found = os.getpid(), set()
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as fh:
                    stat = fh.read(4096)
            except OSError:  # it ended while we looked
                continue
            fields = stat[stat.rfind(b")") + 2 :].split()  # after the command's name
            if len(fields) > 1 and int(fields[1]) == me and (fields[0] == b"Z") == ended:
                found.add(int(entry.name))
    return found


def stop_orphans(keep: set[int]) -> int:
    """Kill and reap every child of this process except ``keep`` (Note [Left-behind
    processes]); return how many were stopped."""
    stopped = 0
    for _ in range(_ROUNDS):
        left = children() - keep
        if not left:
            break
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for pid in left:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, 0)
        stopped += len(left)
    for pid in children(ended=True) - keep:  # adopted processes that had already ended
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, 0)
    if stopped:
        logger.warning(
            "warning: the program left %d process%s running after the analysis; stopped",
            stopped, "" if stopped == 1 else "es",
        )
    return stopped
