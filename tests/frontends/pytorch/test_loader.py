"""Loading model files and functions: conventions, determinism and error codes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from solar.diagnostics import FrontendError, UsageError
from solar.frontends.pytorch import lower_capture, reference_data, trace_model_file
from solar.ir import print_program

torch = pytest.importorskip("torch")

from torch_check import assert_outputs_close, run_lowered  # noqa: E402

pytestmark = pytest.mark.torch

GOOD = """
import torch
import torch.nn as nn

B = 3
D = 4


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return self.fc(x).relu()


def get_inputs():
    return [torch.randn(B, D)]


def get_init_inputs():
    return [D]
"""


def write(tmp_path: Path, text: str, name: str = "model.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


BAD_FILES = [
    ("raise ValueError('boom at import')\n", "E0501", "boom at import"),
    (
        GOOD.replace("return self.fc(x).relu()", "raise KeyError('in forward')"),
        "E0501",
        "in forward",
    ),
    (
        GOOD.replace("return [torch.randn(B, D)]", "return [torch.randn(B, D + 1)]"),
        "E0501",
        "RuntimeError",
    ),
    (GOOD.replace("class Model", "class Modle"), "E0502", "`Model`"),
    (GOOD.replace("def get_inputs", "def get_input"), "E0502", "`get_inputs`"),
    (
        GOOD.replace("return [torch.randn(B, D)]", "return torch.randn(B, D)"),
        "E0503",
        "get_inputs()",
    ),
    (GOOD.replace("return [D]", "return D"), "E0503", "get_init_inputs()"),
    (GOOD.replace("return self.fc(x).relu()", "return 'text', object()"), "E0503", "object"),
]


@pytest.mark.parametrize(("text", "code", "needle"), BAD_FILES)
def test_bad_model_files(tmp_path: Path, text: str, code: str, needle: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(FrontendError) as info:
        trace_model_file(path)
    err = info.value
    assert err.code == code
    assert needle in err.render()
    assert "<frozen" not in err.render()  # the import machinery's frames are noise


def test_user_traceback_is_summarised(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("return self.fc(x).relu()", "raise KeyError('in forward')"))
    with pytest.raises(FrontendError) as info:
        trace_model_file(path)
    assert any(str(path) in note and "forward" in note for note in info.value.notes)


def test_missing_file_and_wrong_suffix(tmp_path: Path) -> None:
    with pytest.raises(FrontendError) as info:
        trace_model_file(tmp_path / "absent.py")
    assert info.value.code == "E0504"
    with pytest.raises(FrontendError) as info:
        trace_model_file(write(tmp_path, "x = 1\n", "model.txt"))
    assert info.value.code == "E0504"


def test_capture_is_deterministic(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    a, b = trace_model_file(path), trace_model_file(path)
    la, lb = lower_capture(a), lower_capture(b)
    assert print_program(la.program) == print_program(lb.program)
    (ia, oa), (ib, ob) = reference_data(la, a), reference_data(lb, b)
    for key in ia:
        np.testing.assert_array_equal(ia[key], ib[key])
    for key in oa:
        np.testing.assert_array_equal(oa[key], ob[key])


def test_sizes_and_overrides(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    cap = trace_model_file(path, overrides={"B": 5})
    assert cap.info.sizes == {"B": 5, "D": 4}
    assert cap.inputs[0] is not None
    assert cap.inputs[0].shape == (5, 4)


FUNC = """
import torch

SCALE = 2.0


def scaled_softmax(x, y):
    return torch.softmax(x * SCALE, -1) @ y


def get_inputs():
    return [torch.randn(2, 3), torch.randn(3, 4)]
"""


def test_function_entry_with_npz_inputs(tmp_path: Path) -> None:
    path = write(tmp_path, FUNC)
    npz = tmp_path / "inputs.npz"
    np.savez(npz, np.ones((2, 3), np.float32), np.arange(12, dtype=np.float32).reshape(3, 4))
    cap = trace_model_file(path, entry="scaled_softmax", inputs=npz)
    low = lower_capture(cap)
    ins, outs = reference_data(low, cap)
    np.testing.assert_array_equal(ins["x0"], np.ones((2, 3), np.float32))
    assert_outputs_close(run_lowered(low, ins), outs, 1e-5, 1e-5)


def test_function_entry_with_pt_inputs_and_module_prefix(tmp_path: Path) -> None:
    path = write(tmp_path, FUNC)
    pt = tmp_path / "inputs.pt"
    torch.save([torch.randn(2, 3), torch.randn(3, 4)], pt)
    cap = trace_model_file(path, entry="model:scaled_softmax", inputs=pt)
    assert [m.shape for m in cap.inputs if m is not None] == [(2, 3), (3, 4)]
    cap2 = trace_model_file(path, entry="scaled_softmax")  # inputs from get_inputs()
    assert lower_capture(cap2).fully_covered


def test_missing_entry_function(tmp_path: Path) -> None:
    with pytest.raises(FrontendError) as info:
        trace_model_file(write(tmp_path, FUNC), entry="nope")
    assert info.value.code == "E0502"


def test_unreadable_inputs_file(tmp_path: Path) -> None:
    bad = tmp_path / "inputs.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(UsageError) as info:  # as every invalid .npz (docs/reliability.md)
        trace_model_file(write(tmp_path, FUNC), entry="scaled_softmax", inputs=bad)
    assert info.value.code == "E0942"


def test_module_function_entry_without_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, FUNC, "solar_entry_mod.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    cap = trace_model_file(None, entry="solar_entry_mod:scaled_softmax")
    assert cap.name == "scaled_softmax"
    assert lower_capture(cap).fully_covered


class _SharedBlock(torch.nn.Module):
    """One conv reachable by two paths (``pos`` and ``blocks.k.pos``, as timm's CoaT
    shares its position encodings), plus a tied linear weight, plus a buffer."""

    def __init__(self, *, sdpa: bool) -> None:
        super().__init__()
        self.pos = torch.nn.Conv1d(4, 4, 3, padding=1, groups=4)
        self.blocks = torch.nn.ModuleList(torch.nn.ModuleDict({"pos": self.pos}) for _ in range(2))
        self.a = torch.nn.Linear(4, 4)
        self.b = torch.nn.Linear(4, 4)
        self.b.weight = self.a.weight
        self.register_buffer("shift", torch.full((4,), 0.5))
        self.sdpa = sdpa

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for blk in self.blocks:
            x = x + blk["pos"](x)
        h = self.b(self.a(x.transpose(1, 2))) + self.shift
        if self.sdpa:  # device-sensitive: captured over FakeTensors, not on meta
            h = torch.nn.functional.scaled_dot_product_attention(h, h, h)
        return h


@pytest.mark.parametrize("sdpa", [False, True])
def test_live_module_keeps_its_state(sdpa: bool) -> None:
    """Note [Shared submodules] (reparam.py): the capture swaps fake tensors into every
    slot once and puts the originals back, so the live module is untouched."""
    import solar

    torch.manual_seed(0)
    model = _SharedBlock(sdpa=sdpa)
    before = {k: v.clone() for k, v in model.state_dict(keep_vars=True).items()}
    report = solar.analyze(model, (torch.randn(2, 4, 6),))
    assert report.validation.status == "passed", report.validation.reason
    after = model.state_dict(keep_vars=True)
    for name, value in before.items():
        assert after[name].device.type == "cpu", name
        assert torch.equal(after[name], value), name
    assert model.b.weight is model.a.weight
    assert isinstance(model.pos.weight, torch.nn.Parameter)
