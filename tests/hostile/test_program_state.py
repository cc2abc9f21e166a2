"""A program that leaves SOLAR's process in a state SOLAR did not expect (red team, round 4).

Each row is a model file found failing before this round: E0999 (an exception whose
``__str__`` raises or recurses, tensors without values or dense storage from
``get_inputs()`` or the forward, ``numpy.asarray`` or ``torch.Tensor`` replaced, the
recursion limit lowered), a Python traceback on stderr (an exception raised in
``__del__``, a ``gc`` callback or a thread), or a command that left a process running
(a ``setsid`` child). Every case runs ``solar analyze`` as a user does, in a fresh
interpreter, and asserts the exit code, the error code or warning, and that no traceback
reaches stderr.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import CliResult

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.torch, pytest.mark.slow]  # a fresh interpreter importing torch each

MODEL = """\
import torch
{before}
class Model(torch.nn.Module):
    def forward(self, a):
{forward}
def get_inputs():
    return [{inputs}]
"""


def _analyze(
    tmp_path: Path, forward: str, *, before: str = "", inputs: str = "", argv: tuple[str, ...] = ()
) -> CliResult:
    path = tmp_path / "m.py"
    body = "".join(f"        {line}\n" for line in forward.splitlines())
    path.write_text(MODEL.format(before=before, forward=body,
                                 inputs=inputs or "torch.randn(8, 8)"))
    proc = subprocess.run(
        [sys.executable, "-m", "solar", *(argv or ("analyze",)), str(path), "-q", "--format",
         "json"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def assert_clean(r: CliResult) -> None:
    assert "Traceback" not in r.err and "E0999" not in r.err, r.err


BAD_STR = "class E(Exception):\n    def __str__(self): {body}\n"
ERRORS = {  # (before, forward, inputs) -> (code, a text of the diagnostic)
    "an exception whose __str__ raises": (
        BAD_STR.format(body="raise RuntimeError('no')"), "raise E()", "", "E0501",
        "its __str__ fails"),
    "an exception whose __str__ recurses": (
        BAD_STR.format(body="return str(self)"), "raise E()", "", "E0501", "its __str__ fails"),
    "a 50 MB exception message": ("", "raise ValueError('x' * 50_000_000)", "", "E0501",
                                  "more characters)"),
    "sys.exit of a 5000-digit int": ("", "import sys\nsys.exit(10**5000)", "", "E0530",
                                     "an int of 16,610 bits"),
    "a sparse input from get_inputs": ("", "return a * 2", "torch.randn(4, 4).to_sparse()",
                                       "E0507", "sparse_coo"),
    "a sparse output": ("", "return a.to_sparse()", "", "E0510", "sparse_coo"),
    "a nested output": ("", "return torch.nested.nested_tensor([a, a[:2]])", "", "E0510",
                        "nested"),
    "numpy.asarray replaced": ("import numpy\nnumpy.asarray = None\nnumpy.array = None\n",
                               "return a * 2", "", "E0534", "numpy.asarray replaced"),
    "torch.Tensor replaced": ("", "torch.Tensor = None\nreturn a * 2", "", "E0534",
                              "torch.Tensor replaced"),
    "sys.modules['solar'] replaced": ("", "import sys\nsys.modules['solar'] = None\n"
                                       "sys.modules['solar.report'] = None\nreturn a * 2", "",
                                       "E0534", "sys.modules['solar'] replaced"),
    "the recursion limit lowered to 60": ("", "import sys\nsys.setrecursionlimit(60)\n"
                                          "return a * 2", "", "E0534",
                                          "sys.setrecursionlimit(60)"),
}


@pytest.mark.parametrize("case", ERRORS, ids=list(ERRORS))
def test_a_hostile_program_is_a_coded_error(case: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    before, forward, inputs, code, text = ERRORS[case]
    r = _analyze(tmp_path, forward, before=before, inputs=inputs)
    assert r.code == 1, r.err
    assert re.search(rf"^error\[{code}\]", r.err, re.MULTILINE), r.err
    assert text in r.err
    assert len(r.err) < 20_000  # a diagnostic shows at most 2000 characters of a message
    assert_clean(r)


WARNINGS = {  # forward -> the warning line (before: Python's "Exception ignored" traceback)
    "__del__ raises": (
        "class D:\n    def __del__(self): raise ValueError('from del')\nD()\nreturn a * 2",
        "warning: Exception ignored in Model.forward.<locals>.D.__del__: ValueError: from del"),
    "a gc callback raises": (
        "import gc\ncb = lambda *x: 1 / 0\ngc.callbacks.append(cb)\ngc.collect()\n"
        "gc.callbacks.remove(cb)\nreturn a * 2", "ZeroDivisionError: division by zero"),
    "a thread raises": (
        "import threading\nt = threading.Thread(target=lambda: 1 / 0, name='t1')\n"
        "t.start(); t.join()\nreturn a * 2",
        "warning: Exception ignored in thread t1: ZeroDivisionError: division by zero"),
}


@pytest.mark.parametrize("case", WARNINGS, ids=list(WARNINGS))
def test_an_exception_nobody_can_catch_is_one_warning_line(case: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    forward, line = WARNINGS[case]
    r = _analyze(tmp_path, forward)
    assert r.code == 0, r.err
    assert line in r.err
    assert_clean(r)


def test_a_process_the_program_left_running_is_stopped(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pids = tmp_path / "pids"
    forward = (  # a grandchild that leaves the process group and would sleep 10 minutes
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        f"    open({str(pids)!r}, 'a').write(f'{{os.getpid()}}\\n')\n"
        "    time.sleep(600)\n"
        "    os._exit(0)\n"
        "return a * 2"
    )
    r = _analyze(tmp_path, forward)  # before: ended, but `communicate` waited 10 minutes
    assert r.code == 0, r.err
    assert re.search(r"left \d+ process(es)? running after the analysis; stopped", r.err), r.err
    for pid in map(int, pids.read_text().split()):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert_clean(r)


@pytest.mark.parametrize("command", ["bounds", "compare", "provision"])
def test_the_in_process_commands_take_a_time_limit(command: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    extra = ("--target-ms", "1") if command == "provision" else ()
    r = _analyze(tmp_path, "while True: pass", argv=(command, "--time-limit", "10", *extra))
    assert r.code == 1, r.err  # before: no --time-limit; the default hour of a hung process
    assert re.search(r"^error\[E0950\]", r.err, re.MULTILINE), r.err
    assert "while True: pass" in r.err
    assert_clean(r)
