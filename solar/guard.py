"""Run the user's program under guards: a time limit, and a process of its own.

Contract: ``run_guarded(fn, time_limit_s=...) -> fn()``. ``fn`` is the part of a command
that runs user code (importing the model file, building it, the forward pass, the
reference run). Whatever the program does, `run_guarded` returns ``fn``'s value or
raises a `SolarError`; it never lets the program end SOLAR's process silently.

Codes (all exit 1: the program is at fault, except E0951):

=====  ==================================================================================
E0530  the program ended the process: ``sys.exit(n)``, ``os._exit(n)``, ``exit()``
E0531  the process running the program was killed by a signal (a segfault in native
       code, an abort, SIGKILL from the OOM killer)
E0532  the program raised ``KeyboardInterrupt`` itself (no Ctrl-C was pressed)
E0533  the child's result could not be read (Note [Result channel] in `solar.outcome`)
E0534  SOLAR failed after the program changed the interpreter (Note [Shared interpreter]
       in `solar.tampering`): a library function replaced, the recursion limit lowered
E0950  the program ran past ``--time-limit`` (an endless loop in import or forward)
E0951  SOLAR was interrupted (SIGINT, SIGTERM, SIGHUP); exit 128 + the signal number
=====  ==================================================================================

Note [Guarded run]: where it is safe, ``fn`` runs in a forked child process, so a
segfault, an ``os._exit`` or a kill ends the child and the parent reports it as a
diagnostic. Forking costs about a millisecond because it happens before torch or jax
is imported. It is safe only then: their thread pools (and CUDA) do not survive a
fork. So the child is used when ``os.fork`` exists, this is the main thread and the
only thread, neither torch, jax nor tensorflow is imported, and stdout and stderr are
real file descriptors (the child writes progress and the model's prints to them).
Otherwise (the Python API, tests in one process) ``fn`` runs in this process, where the
time limit, ``sys.exit`` and ``KeyboardInterrupt`` are still guarded but a segfault or
``os._exit`` cannot be.

The time limit is enforced twice. In the process running ``fn``, a SIGALRM at the
limit raises `TimeLimitReachedError` (a ``BaseException``, so a program's ``except
Exception`` cannot swallow it; it is raised again every second until it gets out)
between two Python bytecodes, which stops a Python loop with the user's frames as
notes. A program stuck in native code (or blocking SIGALRM) is killed by the parent
`GRACE_S` seconds later: SIGKILL to the child's process group, which holds any
process the program started.

Signals: the child runs in a process group of its own (a model that starts processes
is killed with them) and dies with the parent (``PR_SET_PDEATHSIG``, Linux). SIGINT,
SIGTERM and SIGHUP sent to the parent are forwarded to the child; the child stops at
the next bytecode, or is killed `GRACE_S` seconds later, and the command ends with
E0951. A ``KeyboardInterrupt`` the program raises without a signal is E0532, not an
interrupt.

Note [Standard streams] (in `solar.streams`): while ``fn`` runs, stdout is the report's alone.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import os
import re
import select
import signal
import sys
import sysconfig
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import IO, Any, Final, TypeVar

from solar.diagnostics import FrontendError, ResourceError, SolarError
from solar.orphans import adopt_orphans, children, stop_orphans
from solar.outcome import (
    JSON_VALUES,
    MAX_RESULT_BYTES,
    InternalError,
    InterruptedRunError,
    ResultCodec,
    UnreadableOutcomeError,
    decode_outcome,
    encode_bug,
    encode_error,
    encode_value,
)
from solar.streams import standard_streams, user_stdout_to_stderr
from solar.tampering import tampering_error

__all__ = [
    "DEFAULT_TIME_LIMIT_S",
    "GRACE_S",
    "JSON_VALUES",
    "MAX_RESULT_BYTES",
    "InterruptedRunError",
    "InternalError",
    "ResultCodec",
    "TimeLimitReachedError",
    "fork_is_safe",
    "run_guarded",
    "run_own_process",
    "user_stdout_to_stderr",
]

T = TypeVar("T")

DEFAULT_TIME_LIMIT_S: Final = 3600.0
"""``--time-limit`` by default: an hour, far above any analysis that is not stuck."""

GRACE_S: Final = 5.0
"""How long after the time limit (or a forwarded signal) the child may take to stop
before it is killed."""

_UNFORKABLE: Final = ("torch", "jax", "tensorflow")
_STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG: Final = 1
_SOLAR_DIR: Final = str(Path(__file__).resolve().parent)
_SIGNAL_CAUSES: Final = {
    signal.SIGSEGV: "segmentation fault",
    signal.SIGBUS: "bus error",
    signal.SIGFPE: "floating-point exception",
    signal.SIGILL: "illegal instruction",
    signal.SIGABRT: "aborted",
    signal.SIGKILL: "the kernel's OOM killer, or another process",
}


_guarded_until: float | None = None
"""In a guarded child: when its time limit runs out (``time.monotonic()``); else None."""
_guarded_stacks_fd: int | None = None
"""In a guarded child: where its faulthandler writes (`run_own_process` re-arms it)."""


class TimeLimitReachedError(BaseException):
    """Raised by the SIGALRM handler at the time limit (a BaseException on purpose)."""


def fork_is_safe() -> bool:
    """True when ``fn`` may run in a forked child (Note [Guarded run])."""
    if not hasattr(os, "fork") or os.environ.get("SOLAR_NO_FORK"):
        return False
    if threading.current_thread() is not threading.main_thread():
        return False
    if threading.active_count() != 1 or any(m in sys.modules for m in _UNFORKABLE):
        return False
    try:
        sys.stdout.fileno()
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return False
    return True


def run_guarded(
    fn: Callable[[], T],
    *,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    isolate: bool = True,
    codec: ResultCodec[T] = JSON_VALUES,
) -> T:
    """``fn()``, guarded (Note [Guarded run], Note [Standard streams]).

    Args:
        fn: the work that runs user code.
        time_limit_s: the time limit in seconds.
        isolate: run ``fn`` in a forked child where that is safe; ``False`` always runs
            it in this process.
        codec: how the child sends ``fn``'s value back (Note [Result channel]).

    Returns:
        What ``fn`` returns.

    Raises:
        SolarError: what ``fn`` raises; E0530-E0533, E0950, E0951 as in the module
            docstring.
        InternalError: a bug in SOLAR raised in the child process.
    """
    if isolate and fork_is_safe():
        return _run_in_child(fn, time_limit_s, codec)
    return _run_here(fn, time_limit_s)


def run_own_process(fn: Callable[[], T], *, codec: ResultCodec[T]) -> T:
    """``fn()`` in a process of its own where the guarded run can give it one, else here.

    Note [Probes in a process of their own]: SOLAR runs some user code of its own
    choosing, beyond what the user asked for: the re-captures at other sizes for the
    symbolic formulas (Note [Symbolic sizes by re-binding]). A program that crashes only
    at such a size (a segfault, an abort) must not take the analysis with it: the size
    stays constant with a note, as after ``sys.exit`` there. So in a guarded child
    (Note [Guarded run]) such a probe is forked once more, with the rest of the time
    limit. That child has torch imported, which a fork survives while CUDA is not
    initialised and nothing runs on torch's thread pool: the child works on one thread
    (the probe captures over meta or fake tensors, which compute nothing). Where the
    fork is not safe (CUDA, JAX, threads, no guarded child: the Python API, tests in one
    process) the probe runs here, as before.

    Raises:
        SolarError: what ``fn`` raises; E0530/E0531 when the probe's process ends or
            is killed; E0950, E0951 as `run_guarded`.
    """
    if _guarded_until is None or _guarded_stacks_fd is None or not _fork_is_safe_here():
        return fn()
    left = max(_guarded_until - time.monotonic(), 1e-3)
    # the watchdog's thread would not survive the fork (its lock stays taken there)
    faulthandler.cancel_dump_traceback_later()
    try:
        if _native_threads() != 1:
            return fn()

        def single_threaded() -> T:
            if "torch" in sys.modules:
                sys.modules["torch"].set_num_threads(1)
            return fn()

        return _run_in_child(single_threaded, left, codec)
    finally:
        left = max(_guarded_until - time.monotonic(), 0.0)
        faulthandler.dump_traceback_later(
            left + GRACE_S - 1.0, file=_guarded_stacks_fd, exit=False
        )


def _native_threads() -> int:
    """This process's threads, native ones included (1 where it cannot tell)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _fork_is_safe_here() -> bool:
    """A fork of this guarded child can run a probe: the main and only thread, no JAX or
    TensorFlow, and torch (if imported) without CUDA initialised."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if threading.active_count() != 1 or "jax" in sys.modules or "tensorflow" in sys.modules:
        return False
    torch = sys.modules.get("torch")
    return torch is None or not torch.cuda.is_initialized()


# ------------------------------------------------------------------ in this process
class _Signals:
    """Which stop signal arrived while ``fn`` ran (to tell a Ctrl-C from a program's
    own ``raise KeyboardInterrupt``)."""

    def __init__(self) -> None:
        self.received: int | None = None

    def handler(self, signum: int, frame: FrameType | None) -> None:
        del frame
        self.received = signum
        raise KeyboardInterrupt


@contextlib.contextmanager
def _guards(time_limit_s: float, signals: _Signals) -> Iterator[None]:
    """SIGALRM at the time limit and flagged stop signals, where signals can be handled."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def alarm(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        raise TimeLimitReachedError

    old: dict[int, Any] = {}
    try:  # armed inside the try: an alarm that fires at once still restores everything
        for s in _STOP_SIGNALS:
            old[s] = signal.signal(s, signals.handler)
        old[signal.SIGALRM] = signal.signal(signal.SIGALRM, alarm)
        # at least 1 ms: setitimer reads a tiny positive value as 0, which disarms it
        signal.setitimer(signal.ITIMER_REAL, max(time_limit_s, 1e-3), 1.0)
        yield
    finally:
        while True:  # an alarm already pending may still fire here: disarm, then retry
            try:
                signal.setitimer(signal.ITIMER_REAL, 0.0)
                for sig, handler in old.items():
                    signal.signal(sig, handler)
                break
            except TimeLimitReachedError:
                continue


def _run_here(fn: Callable[[], T], time_limit_s: float) -> T:
    signals = _Signals()
    try:
        with standard_streams(), _guards(time_limit_s, signals):
            return fn()
    except (TimeLimitReachedError, SystemExit, KeyboardInterrupt) as err:
        raise _diagnose(err, signals, time_limit_s) from None


def _diagnose(err: BaseException, signals: _Signals, time_limit_s: float) -> SolarError:
    """The diagnostic for a BaseException that got out of the user's program."""
    frames = _user_frames(err)
    if isinstance(err, TimeLimitReachedError):
        return ResourceError(
            f"the program ran past the time limit of {time_limit_s:g} s and was stopped",
            code="E0950",
            notes=(*frames, "raise it with --time-limit SECONDS if the program is just slow"),
        )
    if isinstance(err, SystemExit):
        return FrontendError(
            f"the program called sys.exit({_exit_code_text(err.code)}): a model file must not "
            "end the process",
            code="E0530",
            notes=frames,
        )
    if signals.received is not None:
        return InterruptedRunError(signals.received)
    return FrontendError(
        "the program raised KeyboardInterrupt (no interrupt signal was received)",
        code="E0532",
        notes=frames,
    )


def _exit_code_text(code: object) -> str:
    """How ``sys.exit(code)`` is shown: an int, a string or None as written, anything else
    by its type (its ``repr`` is the user's code, and may fail or never end).

    >>> _exit_code_text(3), _exit_code_text(10**5000), _exit_code_text([1])
    ('3', 'an int of 16,610 bits', 'a list')
    """
    if isinstance(code, int) and not isinstance(code, bool) and code.bit_length() > 60:
        return f"an int of {code.bit_length():,} bits"
    if code is None or type(code) in (bool, int, str):
        return repr(code)
    return f"a {type(code).__name__}"


def _user_frames(err: BaseException) -> tuple[str, ...]:
    """The last three frames of ``err``'s traceback in the user's own files (not SOLAR,
    installed packages or the standard library), as notes."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if _is_user_file(f.filename)]
    return tuple(
        f"at {f.filename}:{f.lineno} in {f.name}: {(f.line or '').strip()}" for f in frames[-3:]
    )


def _is_user_file(filename: str) -> bool:
    if filename.startswith(("<", _SOLAR_DIR)) or "site-packages" in filename:
        return False
    stdlib = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib")}
    return not any(filename.startswith(d) for d in stdlib)


# ---------------------------------------------------------------- in a child process
def _run_in_child(fn: Callable[[], T], time_limit_s: float, codec: ResultCodec[T]) -> T:
    parent = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    read_fd, write_fd = os.pipe()
    # a stop signal that comes before the child exists is kept and forwarded once it does
    # (whatever the handler was: SIG_IGN in a background job included)
    forward = _Forwarder()
    old = {s: signal.signal(s, forward.handler) for s in _STOP_SIGNALS}
    keep = children() if adopt_orphans() else None  # Note [Left-behind processes]
    # where the child's faulthandler writes its stack on a crash, or just before the kill
    try:
        with tempfile.TemporaryFile() as stacks:
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the child; tests/hostile see its effects
                os.close(read_fd)
                _child(fn, time_limit_s, codec, write_fd, parent, stacks.fileno())
            os.close(write_fd)
            with contextlib.suppress(OSError):  # the child may already have set it itself
                os.setpgid(pid, pid)
            forward.attach(pid)
            payload, status = _parent(pid, read_fd, time_limit_s, stacks, forward)
            return _outcome(payload, status, stacks, codec)
    finally:
        if keep is not None and os.getpid() == parent:
            stop_orphans(keep)
        for s, h in old.items():
            signal.signal(s, h)


def _child(
    fn: Callable[[], T],
    time_limit_s: float,
    codec: ResultCodec[T],
    write_fd: int,
    parent: int,
    stacks_fd: int,
) -> None:
    """Run ``fn``, send its outcome down ``write_fd`` as JSON and leave (never returns)."""
    global _guarded_until, _guarded_stacks_fd
    _guarded_until, _guarded_stacks_fd = time.monotonic() + time_limit_s, stacks_fd
    status = 0
    try:
        os.setpgid(0, 0)
        _die_with_parent(parent)
        faulthandler.enable(file=stacks_fd, all_threads=False)
        faulthandler.dump_traceback_later(
            time_limit_s + GRACE_S - 1.0, file=stacks_fd, exit=False
        )
        signals = _Signals()
        try:
            with standard_streams(restore=False), _guards(time_limit_s, signals):
                value = fn()
            payload = encode_value(value, codec)
        except SolarError as err:
            payload = encode_error(err)
        except (TimeLimitReachedError, SystemExit, KeyboardInterrupt) as err:
            payload = encode_error(_diagnose(err, signals, time_limit_s))
        except Exception as err:  # noqa: BLE001 - a SOLAR bug: carried to the parent's E0999
            tampered = tampering_error(err)  # Note [Shared interpreter]: or the program's doing
            payload = encode_bug(err) if tampered is None else encode_error(tampered)
        with os.fdopen(write_fd, "wb") as out:
            out.write(payload)
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - whatever happens, the child must not return
        status = 70
    finally:
        os._exit(status)


def _die_with_parent(parent: int) -> None:
    """SIGKILL this process when the parent goes away (Linux only)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(3)


class _Forwarder:
    """Forwards stop signals from the parent to the child's process group."""

    def __init__(self) -> None:
        self.pgid: int | None = None
        self.received: int | None = None
        self.at = 0.0

    def handler(self, signum: int, frame: FrameType | None) -> None:
        del frame
        if self.received is None:
            self.received, self.at = signum, time.monotonic()
        self._send(signum)

    def attach(self, pgid: int) -> None:
        """Forward to ``pgid`` from now on, and the signal that came before, if any."""
        self.pgid = pgid
        if self.received is not None:
            self._send(self.received)

    def _send(self, signum: int) -> None:
        if self.pgid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pgid, signum)


def _parent(
    pid: int, read_fd: int, time_limit_s: float, stacks: IO[bytes], forward: _Forwarder
) -> tuple[bytes, int]:
    """What the child sent and its wait status, once it ended (or was killed).

    Raises:
        ResourceError: E0950 past the time limit.
        InterruptedRunError: E0951 a stop signal was forwarded.
        FrontendError: E0533 the child sent more than `MAX_RESULT_BYTES`.
    """
    chunks: list[bytes] = []
    deadline = time.monotonic() + time_limit_s + GRACE_S
    timed_out = False
    status: int | None = None
    try:
        while True:
            now = time.monotonic()
            limit = deadline if forward.received is None else min(deadline, forward.at + GRACE_S)
            if now >= limit:
                timed_out = forward.received is None
                _kill_group(pid)
                break
            if status is not None:  # the child is gone: take what it wrote, then stop
                if not _read_ready(read_fd, chunks, 0.0):
                    break
                continue
            if _read_ready(read_fd, chunks, min(limit - now, 1.0)) is None:
                break  # end of file: the child closed its end
            if sum(map(len, chunks)) > MAX_RESULT_BYTES:
                _kill_group(pid)
                break
            # a process the program forked may hold the pipe open: watch the child itself
            done, wait_status = os.waitpid(pid, os.WNOHANG)
            if done:
                status = wait_status
        if status is None:
            _, status = os.waitpid(pid, 0)
        _kill_group(pid)  # anything the program started and left behind
    finally:
        os.close(read_fd)
    if timed_out:
        raise ResourceError(
            f"the program ran past the time limit of {time_limit_s:g} s and did not stop; "
            "it was killed",
            code="E0950",
            notes=(
                *_stack_notes(stacks),
                "raise it with --time-limit SECONDS if the program is just slow",
            ),
        )
    if forward.received is not None:
        raise InterruptedRunError(forward.received)
    payload = b"".join(chunks)
    if len(payload) > MAX_RESULT_BYTES:
        raise _unreadable(f"more than {MAX_RESULT_BYTES:,} bytes")
    return payload, status


def _read_ready(fd: int, chunks: list[bytes], timeout_s: float) -> bool | None:
    """Read what ``fd`` has within ``timeout_s``: True if data came, False if none,
    None at end of file."""
    ready, _, _ = select.select([fd], [], [], timeout_s)
    if not ready:
        return False
    data = os.read(fd, 1 << 20)
    if not data:
        return None
    chunks.append(data)
    return True


_FRAME_RE: Final = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<name>\S+)')


def _stack_notes(stacks: IO[bytes]) -> tuple[str, ...]:
    """The innermost user frame of the stack the child's faulthandler wrote, as a note."""
    stacks.seek(0)
    text = stacks.read(1 << 20).decode("utf-8", errors="replace")
    for line in text.splitlines():  # most recent call first
        m = _FRAME_RE.match(line)
        if m and _is_user_file(m["file"]):
            return (f"at {m['file']}:{m['line']} in {m['name']}",)
    return ()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _outcome(payload: bytes, status: int, stacks: IO[bytes], codec: ResultCodec[T]) -> T:
    """``fn``'s value from the child's outcome, or the diagnostic for how it ended."""
    if payload:
        try:
            return decode_outcome(payload, codec)
        except UnreadableOutcomeError as err:
            if status == 0:  # the child finished: what it sent was tampered with
                raise _unreadable(str(err)) from None
            # else the child died (while writing, perhaps): how it died is the diagnostic
    raise _ended(status, stacks)


def _unreadable(detail: str) -> FrontendError:
    return FrontendError(
        "the result of the analysis could not be read: the program wrote into SOLAR's "
        "result channel (Note [Result channel] in solar/outcome.py)",
        code="E0533",
        notes=(detail,),
    )


def _ended(status: int, stacks: IO[bytes]) -> FrontendError:
    """The diagnostic for a child that ended without a readable outcome."""
    if os.WIFSIGNALED(status):
        sig = signal.Signals(os.WTERMSIG(status))
        return FrontendError(
            f"the process running the program was killed by {sig.name} "
            f"({_SIGNAL_CAUSES.get(sig, 'a signal')})",
            code="E0531",
            notes=(
                *_stack_notes(stacks),
                "the error is in native code the program called (or it ran out of memory)",
            ),
        )
    code = os.WEXITSTATUS(status)
    return FrontendError(
        f"the program ended the process with exit status {code} before SOLAR finished "
        "(os._exit in the program?)",
        code="E0530",
    )
