"""Capture (fake tensors, real fallback, aliasing) and the driver (naming, coverage)."""

from __future__ import annotations

import resource
import textwrap
from pathlib import Path
from typing import Any

import pytest

from solar.diagnostics import FrontendError
from solar.frontends.pytorch import (
    lower_capture,
    reference_data,
    trace_model_file,
    trace_module,
)
from solar.ir import (
    Assign,
    Binary,
    Program,
    eliminate_dead_code,
    parse_program,
    print_program,
)
from solar.ir.traversal import walk_stmts

torch = pytest.importorskip("torch")
nn = torch.nn

from torch_check import assert_outputs_close, check_program, run_lowered  # noqa: E402

pytestmark = pytest.mark.torch


class Block(nn.Module):  # type: ignore[misc,name-defined]
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.register_buffer("scale", torch.full((3,), 2.0))
        self.mask = torch.tensor([1.0, 0.0, 1.0])  # a plain tensor attribute

    def forward(self, x: Any) -> tuple[Any, Any, int]:
        h = self.fc(x) * self.scale * self.mask
        return h.relu(), h.sum(), 7


def test_names_follow_the_convention() -> None:
    low = check_program(Block(), torch.randn(2, 4))
    decls = {t.name: t.role for t in low.program.tensors}
    assert decls["x0"] == "input"
    assert decls["p_fc_weight"] == decls["p_fc_bias"] == decls["p_scale"] == "param"
    assert decls["p_mask"] == "param"
    assert decls["y0"] == decls["y1"] == "output"
    assert low.outputs == ("y0", "y1", None)
    assert dict(low.params) == {
        "fc.weight": "p_fc_weight",
        "fc.bias": "p_fc_bias",
        "scale": "p_scale",
    }
    assert low.constants == (("mask", "p_mask"),)
    names = [k.name for k in low.program.kernels]
    assert names[0] == "fc_addmm"
    assert all(t.startswith(("x", "p_", "y", "t")) for t in decls)


def test_golden_ir(golden: object) -> None:
    low = check_program(Block(), torch.randn(2, 4))
    golden.check("frontends/pytorch/block.alir", print_program(low.program))  # type: ignore[attr-defined]


HUGE = """
import torch
import torch.nn as nn

batch_size = 8
in_features = 200000
out_features = 50000


class Model(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.fc = nn.Linear(i, o)

    def forward(self, x):
        return torch.relu(self.fc(x))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
"""


def test_fake_capture_of_40_gb_model_allocates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "huge.py"
    path.write_text(HUGE)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cap = trace_model_file(path)
    low = lower_capture(cap)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert cap.info.param_bytes == (200000 * 50000 + 50000) * 4
    assert not cap.info.used_real_values
    assert [k.name for k in low.program.kernels] == ["fc_addmm", "relu"]
    assert grown_kib < 1 << 20  # far below the 40 GB the weights would need


ITEM = """
import torch
import torch.nn as nn

N = 6


class Model(nn.Module):
    def forward(self, x):
        s = x.abs().max().item()
        y = x / s
        if y.sum() > 0:
            y = y * 2
        return y


def get_inputs():
    return [torch.randn(N, N)]
"""


def test_item_falls_back_to_real_capture(tmp_path: Path) -> None:
    path = tmp_path / "item.py"
    path.write_text(ITEM)
    cap = trace_model_file(path)
    assert cap.info.used_real_values
    assert "DataDependent" in str(cap.info.real_reason)
    low = lower_capture(cap)
    assert low.fully_covered
    ins, outs = reference_data(low, cap)
    assert_outputs_close(run_lowered(low, ins), outs, 1e-5, 1e-6)


def test_real_fallback_refused_over_budget(tmp_path: Path) -> None:
    path = tmp_path / "huge_item.py"
    path.write_text(
        HUGE.replace("return torch.relu(self.fc(x))", "return self.fc(x) * self.fc.bias[0].item()")
    )
    with pytest.raises(FrontendError) as info:
        trace_model_file(path)
    assert info.value.code == "E0505"


def test_masked_select_is_reported_not_dropped() -> None:
    def fn(x: Any) -> Any:
        return torch.masked_select(x, x > 0).sum() + x.mean()

    low = check_program(fn, torch.randn(4, 5), covered=False)
    (unc,) = low.coverage
    assert unc.target == "aten.masked_select.default"
    assert unc.count == 1
    assert 0 < unc.bytes_share < 1
    assert low.uncovered_values[0].name.startswith("u")


@torch.library.custom_op("solartest::twice", mutates_args=())  # type: ignore[untyped-decorator]
def twice(x: torch.Tensor) -> torch.Tensor:  # type: ignore[name-defined]
    return x * 2


@twice.register_fake  # type: ignore[untyped-decorator]
def _twice_fake(x: torch.Tensor) -> torch.Tensor:  # type: ignore[name-defined]
    return torch.empty_like(x)


def _uses_custom_op(a: Any) -> tuple[Any, Any]:
    h = a + 1
    return twice(h).sin(), twice(h * 3)


def test_unknown_op_is_uncovered_with_count_and_share() -> None:
    low = check_program(_uses_custom_op, torch.randn(3, 4), covered=False)
    (unc,) = low.coverage
    assert (unc.target, unc.count) == ("solartest.twice.default", 2)
    assert unc.bytes_share == pytest.approx(2 / 5)  # 2 of 5 calls, each moving 96 bytes
    assert not low.fully_covered
    assert low.uncovered_share == unc.bytes_share
    assert [v.name for v in low.uncovered_values] == ["u1_twice", "u4_twice"]


def test_work_feeding_an_uncovered_op_is_kept() -> None:
    low = check_program(lambda a: twice(a.exp() * 3), torch.randn(3, 4), covered=False)
    assert low.keep_alive == ("t1_mul",)
    kept = eliminate_dead_code(low.program, keep=low.keep_alive)
    assert [k.name for k in kept.kernels] == ["exp", "mul", "y0_copy"]
    assert [k.name for k in eliminate_dead_code(low.program).kernels] == ["y0_copy"]


def test_op_fallback_fills_the_gap() -> None:
    seen = []

    def fallback(call: object) -> Program | None:
        seen.append(call)
        shape = ", ".join(str(d) for d in call.outputs[0].shape)  # type: ignore[attr-defined]
        return parse_program(
            textwrap.dedent(f"""\
            solar-ir 1
            program twice
            input a0 : f32[{shape}]
            output out0 : f32[{shape}]
            kernel twice {{
              for i in 0 .. 3 {{
                for j in 0 .. 4 {{
                  out0[i, j] = a0[i, j] * 2.0
                }}
              }}
            }}
            """)
        )

    cap = trace_module(_uses_custom_op, (torch.randn(3, 4),))
    low = lower_capture(cap, op_fallback=fallback)
    assert low.fully_covered
    assert len(seen) == 2
    ins, outs = reference_data(low, cap)
    assert_outputs_close(run_lowered(low, ins), outs, 1e-5, 1e-6)


def test_inplace_on_inputs_is_stated() -> None:
    def fn(x: Any, y: Any) -> Any:
        x.mul_(2)
        y[:, 0] = 1.0
        return x + y

    low = check_program(fn, torch.randn(3, 4), torch.randn(3, 4))
    assert set(low.mutated) == {"x0", "x1"}


def test_writes_into_empty_buffers_and_slices() -> None:
    def fn(a: Any) -> Any:
        out = torch.empty(3, 8)
        out[:, :4] = a
        out[:, 4:] = a * 2
        out[0].fill_(1.0)
        return out

    low = check_program(fn, torch.randn(3, 4))
    (y0,) = [t for t in low.program.tensors if t.name == "y0"]
    assert y0.role == "output"


def test_output_aliasing_an_input_is_an_alias_kernel() -> None:
    low = check_program(lambda x, y: (x, x.t(), y + 1), torch.randn(2, 3), torch.randn(2))
    assert [k.name for k in low.program.kernels] == ["add", "y0_copy", "y1_copy"]
    assert [k.alias for k in low.program.kernels] == [False, True, True]


def test_output_reshape_of_a_temp_is_not_copied() -> None:
    low = check_program(lambda x: (x * 2).view(-1), torch.randn(2, 3))
    assert [k.name for k in low.program.kernels] == ["mul"]
    (kernel,) = low.program.kernels
    stmts = [s for s, _ in walk_stmts(kernel.body) if isinstance(s, Assign)]
    assert len(stmts) == 1
    assert isinstance(stmts[0].value, Binary)


def test_unsupported_dtype_makes_its_readers_uncovered() -> None:
    def fn(img: Any, x: Any) -> tuple[Any, Any]:
        return img.float() / 255, x * 2

    img = torch.randint(0, 255, (2, 3), dtype=torch.uint8)
    low = check_program(fn, img, torch.randn(3), covered=False)
    (unc,) = low.coverage
    assert unc.target == "aten._to_copy.default"
    assert "uint8" in unc.reason
    assert low.inputs == (None, "x1")


def test_module_paths_name_kernels() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.Sequential(nn.Linear(4, 2)))
    low = check_program(model, torch.randn(3, 4))
    assert [k.name for k in low.program.kernels] == ["t0_addmm", "t1_gelu", "t2_0_addmm"]


def test_unsupported_variant_is_uncovered_with_its_reason() -> None:
    low = check_program(lambda x: torch.roll(x, 1) * 2, torch.randn(2, 3), covered=False)
    (unc,) = low.coverage
    assert unc.target == "aten.roll.default"
    assert "flattened roll" in unc.reason
    assert [k.name for k in low.program.kernels] == ["mul"]


def test_boolean_mask_indexing_runs_real_and_is_covered() -> None:
    # a value-dependent shape: captured on the real values, the selection compacted in
    # the IR (ops_mask_index.py) and checked against torch
    low = check_program(lambda x: x[x > 0].sum(), torch.randn(3, 4))
    assert not low.coverage


def test_find_lowering_prefers_exact_overloads() -> None:
    from solar.frontends.pytorch.registry import LOWERINGS

    assert LOWERINGS.find("aten.max.other") is LOWERINGS["aten.max.other"]
    assert LOWERINGS.find("aten.max.dim") is LOWERINGS["aten.max"]
    assert LOWERINGS.find("aten.no_such_op.default") is None
