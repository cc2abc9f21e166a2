"""Entries, entry arguments and given inputs, as a user runs them (issues 30 and 31).

Issue 31, dead end 2: ``--entry torchvision.models:resnet50 --input-shape ...`` called
the factory with the input; factories and classes are entries now (built, with
``--entry-args`` if needed, then called). Dead end 3: ``compare``, ``provision`` and
``sweep`` rejected the input options their errors advise. Issue 30: a constructor that
needs arguments, ``--entry os:system``, entries returning no tensor, ``.pt`` inputs of
meta/sparse/quantized/nested tensors or a deflated bomb, ``.npz`` arrays of bytes,
datetimes, structured or big-endian dtypes, ``arr_1`` before ``arr_0``, 5000-digit or
40 GB ``--input-shape``: each was E0999, a wrong success or an allocation. Each case
asserts the exit code, the error code and that no traceback reaches stderr.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import CliResult, run_cli

pytestmark = pytest.mark.torch

torch = pytest.importorskip("torch")


def assert_diagnostic(r: CliResult, code: str, exit_code: int) -> None:
    """``r`` ended with ``error[code]`` and ``exit_code``, without a traceback."""
    assert r.code == exit_code, (r.out, r.err)
    assert re.search(rf"^error\[{code}\]", r.err, re.MULTILINE), r.err
    assert "Traceback" not in r.err and "E0999" not in r.err, r.err


PROGRAMS = """\
import torch

class Model(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.l = torch.nn.Linear(width, width)

    def forward(self, x):
        return self.l(x)

def get_inputs():
    return [torch.randn(2, 8)]

def build(width=8):
    return Model(width)

def returns_none(x):
    y = x * 2
    return None

def returns_str(x):
    return "done"

def returns_number(x):
    return 3

def two(x, y):
    return x + y

table = {"a": 1}
"""


@pytest.fixture
def programs(tmp_path: Path) -> Path:
    path = tmp_path / "progs.py"
    path.write_text(PROGRAMS)
    return path


# ------------------------------------------------------------ entries (class 2, 5)
ENTRY_FAULTS = {  # (argv after `analyze` and the file, or `--entry pkg:NAME`), code, exit,
    "a class that needs arguments": ((), "E0513", 1, "missing a required argument: 'width'"),
    "torch.nn:Linear without arguments": (
        ("--entry", "torch.nn:Linear", "--input-shape", "2,8"), "E0513", 1, "in_features"
    ),
    "os:system": (("--entry", "os:system", "--input-shape", "2,8"), "E0513", 1, "builtin"),
    "an entry that is no callable": (("--entry", "table", "--input-shape", "2,8"), "E0513", 1,
                                     "dict"),
    "too few inputs": (("--entry", "two", "--input-shape", "2,8"), "E0513", 1, "'y'"),
    "returns None": (("--entry", "returns_none", "--input-shape", "2,8"), "E0503", 1, "None"),
    "returns a str": (("--entry", "returns_str", "--input-shape", "2,8"), "E0503", 1, "str"),
    "returns a number": (("--entry", "returns_number", "--input-shape", "2,8"), "E0503", 1,
                         "int"),
    "arguments that do not fit": (("--entry-args", "{depth: 3}",), "E0513", 1, "depth"),
    "entry args not YAML": (("--entry-args", "{a: [",), "E0916", 2, "not YAML"),
    "entry args a number": (("--entry-args", "7",), "E0916", 2, "a list"),
    "entry args 20,000 deep": (("--entry-args", "[" * 20_000 + "]" * 20_000), "E0916", 2,
                               "nested"),
    "entry args for a function of the inputs": (
        ("--entry", "two", "--entry-args", "[1]", "--input-shape", "2,8"), "E0513", 1, "'y'"
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", ENTRY_FAULTS, ids=list(ENTRY_FAULTS))
def test_an_entry_that_cannot_run_says_what_was_called(
    case: str, programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, code, exit_code, message = ENTRY_FAULTS[case]
    entry = argv[argv.index("--entry") + 1] if "--entry" in argv else ""
    file = () if ":" in entry else (str(programs),)  # `--entry pkg.mod:NAME` needs no file
    r = run_cli(capsys, "analyze", *file, *argv, "-q", "--validate", "off")
    assert_diagnostic(r, code, exit_code)
    assert message in r.err


def test_a_class_is_built_with_entry_args(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = run_cli(capsys, "analyze", str(programs), "--entry-args", "{width: 8}", "-q",
                "--format", "json")  # fmt: skip
    assert r.code == 0, r.err
    report = json.loads(r.out)
    assert report["flops"] == 2 * 2 * 8 * 8  # the Linear's GEMM (its bias rides along)


def test_a_factory_is_built_then_called(programs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "bounds", str(programs), "--entry", "build", "--input-shape", "2,8",
                "--format", "json")  # fmt: skip
    assert r.code == 0, r.err
    fused = json.loads(r.out)["archs"][0]["bounds"][1]
    assert fused["flops"] == 2 * 2 * 8 * 8


def test_a_package_factory_with_entry_args_from_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = tmp_path / "args.yaml"
    args.write_text("in_features: 8\nout_features: 4\n")
    r = run_cli(capsys, "bounds", "--entry", "torch.nn:Linear", "--entry-args", str(args),
                "--input-shape", "3,8", "--format", "json")  # fmt: skip
    assert r.code == 0, r.err
    assert json.loads(r.out)["archs"][0]["bounds"][1]["flops"] == 2 * 3 * 8 * 4


@pytest.mark.slow  # a fresh interpreter importing torch and torchvision
def test_torchvision_factory_is_an_entry() -> None:
    """Issue 31, dead end 2, as the user typed it (in a fresh process, a smaller image)."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("torchvision") is None:
        pytest.skip("torchvision is not installed")
    proc = subprocess.run(
        [sys.executable, "-m", "solar", "bounds", "--entry", "torchvision.models:resnet18",
         "--input-shape", "1,3,64,64", "--format", "json", "-q"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["archs"][0]["bounds"][1]["flops"] > 1e8


# -------------------------------------------- one input option set (issue 31, dead end 3)
FN = "import torch\n\ndef f(x):\n    return x @ x\n"


@pytest.mark.parametrize(
    "command",
    [("analyze", "-q", "--validate", "off"), ("bounds",), ("compare", "--arch", "H100_SXM"),
     ("provision", "--target-ms", "1", "--arch", "H100_SXM")],
    ids=["analyze", "bounds", "compare", "provision"],
)  # fmt: skip
@pytest.mark.parametrize("given", ["shape", "npz", "pt"])
def test_every_command_takes_the_input_options(
    command: tuple[str, ...], given: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "fn.py"
    src.write_text(FN)
    x = np.ones((6, 6), dtype=np.float32)
    if given == "shape":
        inputs = ["--input-shape", "6,6"]
    elif given == "npz":
        np.savez(tmp_path / "in.npz", x)
        inputs = ["--inputs", str(tmp_path / "in.npz")]
    else:
        torch.save([torch.from_numpy(x)], tmp_path / "in.pt")
        inputs = ["--inputs", str(tmp_path / "in.pt")]
    r = run_cli(capsys, command[0], str(src), "--entry", "f", *inputs, *command[1:])
    assert r.code == 0, r.err
    assert "H100_SXM" in r.out


def test_sweep_takes_the_input_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "fn.py"
    src.write_text("import torch\nN = 8\n\ndef f(x):\n    return x @ x\n")
    out = tmp_path / "out"
    r = run_cli(capsys, "sweep", str(src), "--entry", "f", "--input-shape", "6,6", "--set",
                "N=8", "--table", "csv", "--out", str(out), "--validate", "off",
                "--workers", "1")  # fmt: skip
    assert r.code == 0, r.err
    assert ",ok," in (out / "sweep.csv").read_text()
    r = run_cli(capsys, "sweep", str(src), "--entry", "f", "--input-shape", "6,x", "--set",
                "N=8", "--out", str(out))  # fmt: skip
    assert_diagnostic(r, "E0912", 2)  # checked like analyze's


# ---------------------------------------------------------- given inputs (class 2, 3)
def _pt(path: Path, value: object) -> Path:
    torch.save(value, path)
    return path


def _pt_bomb(path: Path) -> Path:
    """A .pt whose one record is deflated: 4 MiB of zeros in a few KiB."""
    torch.save([torch.zeros(4)], path)
    with zipfile.ZipFile(path) as src:
        items = [(i, src.read(i)) for i in src.infolist()]
    with zipfile.ZipFile(path, "w") as dst:
        for info, data in items:
            if info.filename.endswith("/data/0"):
                data = bytes(4 << 20)
            dst.writestr(info.filename, data, compress_type=zipfile.ZIP_DEFLATED)
    return path


def _empty(path: Path) -> Path:
    path.write_bytes(b"")
    return path


def _npz(path: Path, **arrays: object) -> Path:
    np.savez(path, **arrays)  # type: ignore[arg-type]
    return path


INPUT_FAULTS = {  # builder(tmp) -> path, code, exit
    "pt: a meta tensor": (lambda t: _pt(t / "a.pt", [torch.empty(6, 6, device="meta")]),
                          "E0507", 1),
    "pt: a sparse tensor": (lambda t: _pt(t / "a.pt", [torch.eye(6).to_sparse()]), "E0507", 1),
    "pt: a quantized tensor": (
        lambda t: _pt(t / "a.pt", [torch.quantize_per_tensor(torch.ones(6, 6), 0.1, 0,
                                                              torch.qint8)]), "E0507", 1),
    "pt: a nested tensor": (
        lambda t: _pt(t / "a.pt", [torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])]),
        "E0507", 1),
    "pt: a deflated bomb": (lambda t: _pt_bomb(t / "a.pt"), "E0507", 1),
    "npz: bytes": (lambda t: _npz(t / "a.npz", arr_0=np.array([b"ab", b"cd"])), "E0507", 1),
    "npz: strings": (lambda t: _npz(t / "a.npz", arr_0=np.array(["ab"])), "E0507", 1),
    "npz: datetimes": (lambda t: _npz(t / "a.npz", arr_0=np.array(["2020-01-01"],
                                                                  dtype="M8[D]")), "E0507", 1),
    "npz: structured": (lambda t: _npz(t / "a.npz", arr_0=np.zeros(2, dtype=[("a", "f4")])),
                        "E0507", 1),
    "npz: a gap in the positions": (lambda t: _npz(t / "a.npz", arr_1=np.ones((6, 6))),
                                    "E0507", 1),
    "npz: empty": (lambda t: _empty(t / "a.npz"), "E0942", 2),
}  # fmt: skip


def _analyze_f(capsys: pytest.CaptureFixture[str], tmp_path: Path, *inputs: str) -> CliResult:
    """``solar analyze fn.py --entry f INPUTS`` for ``f(x) = x @ x``."""
    src = tmp_path / "fn.py"
    src.write_text(FN)
    return run_cli(capsys, "analyze", str(src), "--entry", "f", *inputs, "-q")


@pytest.mark.parametrize("case", INPUT_FAULTS, ids=list(INPUT_FAULTS))
def test_an_inputs_file_solar_cannot_use_is_refused(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build, code, exit_code = INPUT_FAULTS[case]
    r = _analyze_f(capsys, tmp_path, "--inputs", str(build(tmp_path)))
    assert_diagnostic(r, code, exit_code)


def test_npz_positions_are_ordered_by_index_and_big_endian_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "fn.py"
    src.write_text("import torch\n\ndef f(a, b):\n    return a @ b\n")  # runs in one order
    a, b = np.full((2, 3), 5.0, dtype=">f4"), np.ones((3, 4), dtype="<f4")
    path = tmp_path / "in.npz"
    with zipfile.ZipFile(path, "w") as z:  # arr_1 stored before arr_0
        for name, arr in (("arr_1", b), ("arr_0", a)):
            with z.open(f"{name}.npy", "w") as fh:
                np.lib.format.write_array(fh, arr)
    r = run_cli(capsys, "analyze", str(src), "--entry", "f", "--inputs", str(path), "-q",
                "--format", "json")  # fmt: skip
    assert r.code == 0, r.err
    report = json.loads(r.out)
    assert report["validation"]["status"] == "passed"
    assert report["flops"] == 2 * 2 * 3 * 4  # a @ b: arr_0 first, though stored second


SHAPES = {
    "5000-digit dim": ("9" * 5000 + ",2", "E0912", 2),
    "5000-digit bound": ("2,2:i64<" + "9" * 5000, "E0912", 2),
    "40 GB": ("100000,100000", "E0505", 1),
}


@pytest.mark.parametrize("case", SHAPES, ids=list(SHAPES))
def test_a_hostile_input_shape_is_refused_before_allocation(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shape, code, exit_code = SHAPES[case]
    assert_diagnostic(_analyze_f(capsys, tmp_path, "--input-shape", shape), code, exit_code)


BACKWARD_RAISES = """\
import torch

class Boom(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("no backward here")

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(8, 8)

    def forward(self, x):
        return Boom.apply(self.l(x))

def get_inputs():
    return [torch.randn(4, 8)]
"""


def test_train_whose_backward_raises_is_an_error_not_a_forward_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "bw.py"
    src.write_text(BACKWARD_RAISES)
    r = run_cli(capsys, "analyze", str(src), "--train", "-q")  # was: exit 0, forward only
    assert_diagnostic(r, "E0501", 1)
    assert "no backward here" in r.err


def test_sys_exit_at_the_size_probe_keeps_the_size_constant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "probe.py"
    src.write_text(
        "import sys, torch\nN = 8\n\nclass Model(torch.nn.Module):\n"
        "    def forward(self, a):\n        if a.shape[0] != 8:\n            sys.exit(3)\n"
        "        return a @ a\n\ndef get_inputs():\n    return [torch.randn(N, N)]\n"
    )
    r = run_cli(capsys, "analyze", str(src), "-q", "--format", "json")  # was: E0530
    assert r.code == 0, r.err
    json.loads(r.out)  # a whole report
    assert "size N stays constant in the formulas: capturing at N=16 failed: the program " \
        "called sys.exit(3)" in r.out
