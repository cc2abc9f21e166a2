"""A program that ends the process, crashes, loops or is interrupted ends in a diagnostic.

Issue 15: ``sys.exit(n)``, ``KeyboardInterrupt`` and ``os._exit`` in a model ended
``solar analyze`` with no diagnostic (exit 3, 130 and a silent 0); a segfault exited
139; a model looping in import or forward had no time limit. `solar.guard.run_guarded`
(Note [Guarded run]) now runs the program in a forked child where that is safe, under
``--time-limit``.

Three layers of tests:

* `run_guarded` itself in a fresh interpreter without torch (so it forks), driven by a
  small script: fast, and every outcome of the child is covered;
* ``python -m solar analyze`` on real torch model files (forked path, end to end);
* the in-process path (``run_cli`` in this process, where torch is already imported and
  forking is unsafe): ``sys.exit``, ``KeyboardInterrupt`` and the time limit are still
  guarded there.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from cli_helpers import CliResult, run_cli

from solar.guard import GRACE_S, fork_is_safe, run_guarded

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's solar, for a script file

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork, signals")

DRIVER = """\
import os, sys, time
from solar.diagnostics import SolarError
from solar.guard import InternalError, fork_is_safe, run_guarded

assert fork_is_safe()
MAIN = os.getpid()

def work():
{body}

try:
    value = run_guarded(work, time_limit_s=float(sys.argv[1]))
except SolarError as err:
    print(err.render(), file=sys.stderr)
    sys.exit(err.exit_code)
except InternalError as err:
    print(f"internal {{err.kind}}: {{err}}", file=sys.stderr)
    sys.exit(2)
print(repr(value))
"""


def _drive(tmp_path: Path, body: str, *, limit_s: float = 30.0) -> CliResult:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(body=textwrap.indent(textwrap.dedent(body), "    ")))
    proc = subprocess.run(
        [sys.executable, str(script), str(limit_s)],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def assert_diagnostic(r: CliResult, code: str, exit_code: int) -> None:
    """``r`` ended with ``error[code]`` and ``exit_code``, without a traceback."""
    assert r.code == exit_code, (r.out, r.err)
    assert re.search(rf"^error\[{code}\]", r.err, re.MULTILINE), r.err
    assert "Traceback" not in r.err and "E0999" not in r.err, r.err


# ------------------------------------------------------------ run_guarded, forked
def test_the_child_returns_its_value(tmp_path: Path) -> None:
    r = _drive(tmp_path, "return {'sum': 1 + 1, 'forked': os.getpid() != MAIN}")
    assert r.code == 0, r.err
    assert r.out.strip() == "{'sum': 2, 'forked': True}"


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
        ("os._exit(4)", "E0530", "exit status 4"),
        ("os._exit(0)", "E0530", "exit status 0"),  # was a silent exit 0
        ("sys.exit(3)", "E0530", "sys.exit(3)"),
        ("raise SystemExit", "E0530", "sys.exit(None)"),
        ("import ctypes; ctypes.string_at(0)", "E0531", "killed by SIGSEGV (segmentation fault)"),
        ("os.kill(os.getpid(), 9)", "E0531", "killed by SIGKILL"),  # no stack: SIGKILL
        ("os.abort()", "E0531", "killed by SIGABRT"),
        ("raise KeyboardInterrupt", "E0532", "no interrupt signal was received"),
    ],
)
def test_how_the_program_ended_is_a_diagnostic(
    tmp_path: Path, body: str, code: str, message: str
) -> None:
    r = _drive(tmp_path, body)
    assert_diagnostic(r, code, 1)
    assert message in r.err
    assert "Fatal Python error" not in r.err
    if "os._exit" not in body and "kill" not in body:  # those two leave no stack
        assert re.search(r"at \S+driver\.py:\d+ in work", r.err), r.err  # the user's line


def test_a_solar_error_that_does_not_pickle_keeps_its_code(tmp_path: Path) -> None:
    body = """
    from solar.diagnostics import FrontendError
    class Odd(FrontendError):
        def __init__(self, a, b):
            super().__init__(f"odd {a} {b}", code="E0599", notes=("kept",))
    raise Odd(1, 2)
    """
    r = _drive(tmp_path, body)
    assert_diagnostic(r, "E0599", 1)
    assert "odd 1 2" in r.err and "= note: kept" in r.err


def test_a_bug_in_the_child_is_an_internal_error(tmp_path: Path) -> None:
    r = _drive(tmp_path, "raise ValueError('boom')")
    assert r.code == 2
    assert "internal ValueError: boom" in r.err


def test_a_python_loop_stops_at_the_time_limit(tmp_path: Path) -> None:
    r = _drive(tmp_path, "while True:\n    pass", limit_s=1.0)
    assert_diagnostic(r, "E0950", 1)
    assert "time limit of 1 s and was stopped" in r.err  # by the alarm, not the kill
    assert "in work: pass" in r.err or "driver.py" in r.err  # the user's frame as a note


def test_an_except_baseexception_loop_still_stops(tmp_path: Path) -> None:
    body = """
    while True:
        try:
            while True:
                pass
        except BaseException:
            pass
    """
    r = _drive(tmp_path, body, limit_s=1.0)
    assert_diagnostic(r, "E0950", 1)


def test_a_program_deaf_to_the_alarm_is_killed_after_the_grace(tmp_path: Path) -> None:
    body = """
    import signal
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    while True:
        pass
    """
    start = time.monotonic()
    r = _drive(tmp_path, body, limit_s=1.0)
    elapsed = time.monotonic() - start
    assert_diagnostic(r, "E0950", 1)
    assert "did not stop; it was killed" in r.err
    assert re.search(r"at \S+driver\.py:\d+ in work", r.err), r.err  # where it was stuck
    assert elapsed > 1.0 + GRACE_S - 0.5  # the grace was given (a lower bound: load-proof)


def test_processes_the_program_started_die_with_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild"
    body = f"""
    import subprocess
    p = subprocess.Popen(["sleep", "300"])
    open({str(pid_file)!r}, "w").write(str(p.pid))
    os._exit(5)
    """
    r = _drive(tmp_path, body)
    assert_diagnostic(r, "E0530", 1)
    assert _dies(int(pid_file.read_text()))


def test_a_forked_grandchild_holding_the_pipe_does_not_stall_the_result(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild"
    body = f"""
    pid = os.fork()
    if pid == 0:  # keeps every inherited descriptor open, the result pipe included
        time.sleep(300)
        os._exit(0)
    open({str(pid_file)!r}, "w").write(str(pid))
    return "done"
    """
    r = _drive(tmp_path, body)
    assert r.code == 0, r.err  # waiting for the pipe to close would end in E0950
    assert r.out.strip() == "'done'"
    assert _dies(int(pid_file.read_text()))


# ------------------------------------------------ the result channel (issue 30, class 1)
# Note [Result channel]: the parent once unpickled what came down the pipe, so a model
# that wrote a pickle into it ran code in the parent. Each case writes into every pipe
# the child holds open for writing except descriptors 1 and 2 (so, the result pipe).
TAMPER = """
import fcntl, pickle
class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + {mark!r},))
def tamper(data):
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            pipe = os.readlink(f"/proc/self/fd/{{fd}}").startswith("pipe:")
            writable = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY
        except OSError:
            continue
        if pipe and writable and fd > 2:
            os.write(fd, data)
"""

CHANNEL_CASES = {
    "pickle, then return": ("tamper(pickle.dumps(('ok', Evil())))\nreturn 1", "E0533"),
    "pickle, then os._exit(0)": ("tamper(pickle.dumps(('ok', Evil())))\nos._exit(0)", "E0533"),
    "pickle, then segfault": (
        "tamper(pickle.dumps(('ok', Evil())))\nimport ctypes; ctypes.string_at(0)",
        "E0531",
    ),
    "forged error class": (
        "tamper(b'{\"kind\": \"error\", \"class\": \"posix.system\"}')\nos._exit(0)",
        "E0533",
    ),
    "forged exit code type": (
        "tamper(b'{\"kind\": \"error\", \"class\": \"SolarError\", \"code\": \"E1\", '"
        "b'\"message\": \"m\", \"notes\": [], \"exit_code\": \"1\"}')\nos._exit(0)",
        "E0533",
    ),
    "200,000-deep JSON": ("tamper(b'[' * 200_000 + b']' * 200_000)\nos._exit(0)", "E0533"),
    "a value for another codec": (
        "tamper(b'{\"kind\": \"ok\", \"value\": 7}')\nos._exit(0)",
        "E0533",
    ),
}


@pytest.mark.parametrize("case", CHANNEL_CASES, ids=list(CHANNEL_CASES))
def test_bytes_the_program_writes_into_the_result_pipe_run_no_code(
    tmp_path: Path, case: str
) -> None:
    mark = tmp_path / "pwned"
    body, code = CHANNEL_CASES[case]
    r = _drive(tmp_path, TAMPER.format(mark=str(mark)) + body)
    assert_diagnostic(r, code, 1)
    assert not mark.exists()  # the parent never ran the pickle's os.system


STREAM_CASES = {
    "print to sys.__stdout__": "print('FORGED', file=sys.__stdout__, flush=True)",
    "write to descriptor 1": "os.write(1, b'FORGED\\n')",
    "close sys.stdout": "sys.stdout.close(); print('FORGED')",
    "close every stream": "sys.stdout.close(); sys.stderr.close(); sys.__stdout__.close()",
    "close descriptor 1": "os.close(1)",
}


@pytest.mark.parametrize("case", STREAM_CASES, ids=list(STREAM_CASES))
def test_stdout_is_the_results_alone(tmp_path: Path, case: str) -> None:
    # Note [Standard streams]: forked, what the program writes to stdout goes to stderr
    r = _drive(tmp_path, STREAM_CASES[case] + "\nreturn 'done'")
    assert r.code == 0, r.err
    assert r.out == "'done'\n"


@pytest.mark.parametrize("case", STREAM_CASES, ids=list(STREAM_CASES))
def test_in_process_stdout_is_the_results_alone(tmp_path: Path, case: str) -> None:
    # the same guard in this process (torch imported: no fork), and the streams come back
    script = tmp_path / "inproc.py"
    script.write_text(
        "import os, sys, threading\n"
        "from solar.guard import run_guarded\n"
        "def work():\n" + textwrap.indent(STREAM_CASES[case] + "\nreturn 'done'", "    ")
        + "\nprint(repr(run_guarded(work, isolate=False)))\n"
        "print('after', file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, env=ENV, capture_output=True, text=True,
        timeout=60, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "'done'\n"
    assert proc.stderr.endswith("after\n")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_to_solar_stops_the_program(tmp_path: Path, sig: signal.Signals) -> None:
    script = tmp_path / "driver.py"
    started = tmp_path / "started"
    body = f"open({str(started)!r}, 'w').close()\nwhile True:\n    pass"
    script.write_text(DRIVER.format(body=textwrap.indent(body, "    ")))
    proc = subprocess.Popen(
        [sys.executable, str(script), "60"], cwd=ROOT, env=ENV, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 30
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig
    assert f"error[E0951]: interrupted by {sig.name}" in err
    assert "Traceback" not in err


def _dies(pid: int) -> bool:
    """``pid`` is gone, or goes within a minute (SIGKILL was sent: how soon the kernel
    reaps it depends on the machine's load, not on SOLAR)."""
    deadline = time.monotonic() + 60
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


# ----------------------------------------------------------- solar analyze, forked
MODEL = """\
import torch
N = 8
class Model(torch.nn.Module):
    def forward(self, a):
        {forward}
def get_inputs():
    return [torch.randn(N, N)]
"""


def _analyze(tmp_path: Path, forward: str, *extra: str) -> CliResult:
    path = tmp_path / "m.py"
    path.write_text(MODEL.format(forward=forward))
    proc = subprocess.run(
        [sys.executable, "-m", "solar", "analyze", str(path), "-q", "--format", "json", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@pytest.mark.torch
@pytest.mark.slow  # a fresh interpreter importing torch: 5-30 s each on a busy machine
@pytest.mark.parametrize(
    ("forward", "code", "message"),
    [
        ("import sys; sys.exit(3)", "E0530", "sys.exit(3)"),  # was: exit 3, no diagnostic
        ("raise KeyboardInterrupt", "E0532", "KeyboardInterrupt"),  # was: exit 130
        ("import os; os._exit(0)", "E0530", "exit status 0"),  # was: a silent exit 0
        ("import ctypes; ctypes.string_at(0)", "E0531", "SIGSEGV"),  # was: exit 139
    ],
    ids=["sys.exit", "KeyboardInterrupt", "os._exit", "segfault"],
)
def test_analyze_a_model_that_ends_the_process(
    tmp_path: Path, forward: str, code: str, message: str
) -> None:
    pytest.importorskip("torch")
    r = _analyze(tmp_path, forward)
    assert_diagnostic(r, code, 1)
    assert message in r.err
    assert r.out == ""  # no report on stdout


@pytest.mark.torch
@pytest.mark.slow
def test_analyze_a_model_that_loops_forever(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    r = _analyze(tmp_path, "while True: pass", "--time-limit", "15")
    assert_diagnostic(r, "E0950", 1)
    assert "m.py:5 in forward: while True: pass" in r.err


@pytest.mark.torch
@pytest.mark.slow
def test_analyze_still_reports_a_good_model(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    forward = (
        "import sys; print('noise from the model'); "
        "print('forged', file=sys.__stdout__); sys.stdout.close(); return a @ a"
    )
    r = _analyze(tmp_path, forward)
    assert r.code == 0, r.err
    report = json.loads(r.out)  # stdout is the report alone, even from the child
    fused = next(b for b in report["archs"][0]["bounds"] if b["model"] == "fused")
    assert fused["flops"] == 2 * 8**3
    assert "noise from the model" in r.err


# ------------------------------------------------------------- in-process fallback
def test_in_process_the_guards_still_hold(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    import torch  # noqa: F401 - makes forking unsafe, as in a test or the Python API

    assert not fork_is_safe()
    # whatever this process inherited (SIG_IGN in a background job) must come back
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)}
    with pytest.raises(Exception) as info:
        run_guarded(lambda: sys.exit(4))
    assert getattr(info.value, "code", None) == "E0530"
    with pytest.raises(Exception) as info:
        run_guarded(_raise_keyboard_interrupt)
    assert getattr(info.value, "code", None) == "E0532"
    with pytest.raises(Exception) as info:
        run_guarded(_spin, time_limit_s=0.5)
    assert getattr(info.value, "code", None) == "E0950"
    assert run_guarded(lambda: 42) == 42
    for limit in (1e-320, 1e-6, 1e-3):  # an alarm at once: handlers and timer still restored
        with pytest.raises(Exception) as info:
            run_guarded(_spin, time_limit_s=limit)
        assert getattr(info.value, "code", None) == "E0950"
    assert {s: signal.getsignal(s) for s in before} == before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def _raise_keyboard_interrupt() -> None:
    raise KeyboardInterrupt


def _spin() -> None:
    while True:
        pass


@pytest.mark.torch
def test_in_process_analyze_of_a_model_that_exits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    for forward, code in (("import sys; sys.exit(3)", "E0530"),
                          ("raise KeyboardInterrupt", "E0532")):
        path = tmp_path / "m.py"
        path.write_text(MODEL.format(forward=forward))
        assert_diagnostic(run_cli(capsys, "analyze", str(path), "-q"), code, 1)
        for command in ("bounds", "compare", "provision"):  # guarded in-process
            extra = ("--target-ms", "1") if command == "provision" else ()
            assert_diagnostic(run_cli(capsys, command, str(path), *extra), code, 1)
    path.write_text(MODEL.format(forward="while True: pass"))
    r = run_cli(capsys, "analyze", str(path), "-q", "--time-limit", "2")
    assert_diagnostic(r, "E0950", 1)
    assert "m.py:5 in forward: while True: pass" in r.err
    path.write_text("while True:\n    pass\n")  # an endless loop at import
    r = run_cli(capsys, "analyze", str(path), "-q", "--time-limit", "2")
    assert_diagnostic(r, "E0950", 1)
    assert "m.py:1 in <module>" in r.err or "m.py:2 in <module>" in r.err


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e9"])
def test_a_bad_time_limit_is_a_usage_error(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "analyze", "missing.alir", "--time-limit", value)
    assert_diagnostic(r, "E0905", 2)


COMPILED_MODEL = """\
import torch, torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(16, 16)
    @torch.compile
    def forward(self, x):
        return torch.nn.functional.gelu(self.l(x))
def get_inputs():
    return [torch.randn(4, 16)]
"""


@pytest.mark.torch
def test_a_compiled_forward_leaves_nothing_on_stderr_at_exit(tmp_path: Path) -> None:
    # Capturing a torch.compile'd forward once left half-built StorageWeakRefs whose
    # finaliser printed "Exception ignored ... _free_weak_ref" when the process ended.
    model = tmp_path / "compiled.py"
    model.write_text(COMPILED_MODEL)
    proc = subprocess.run(
        [sys.executable, "-m", "solar", "analyze", str(model), "-q", "--validate", "off"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "coverage: complete" in proc.stdout
    assert "Exception ignored" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.parametrize(
    ("ending", "why"),
    [
        ("import ctypes; ctypes.string_at(0)", "killed by SIGSEGV (segmentation fault)"),
        ("import os; os.abort()", "killed by SIGABRT (aborted)"),
        ("import os; os._exit(4)", "exit status 4"),
        ("import sys; sys.exit(3)", "sys.exit(3)"),
    ],
    ids=["segfault", "abort", "os._exit", "sys.exit"],
)
def test_a_crash_at_the_size_probe_keeps_the_size_constant(
    tmp_path: Path, ending: str, why: str
) -> None:
    """Note [Probes in a process of their own]: a program that crashes only at SOLAR's own
    2x size probe is analysed at the sizes asked for (was: E0531, exit 1)."""
    pytest.importorskip("torch")
    r = _analyze(tmp_path, f"if a.shape[0] != 8: {ending}\n        return a @ a")
    assert r.code == 0, r.err
    report = json.loads(r.out)
    assert report["sizes"] == {"N": 8} and report["symbolic_sizes"] == []
    assert "size N stays constant in the formulas: capturing at N=16 failed: " in r.out
    assert why in r.out
