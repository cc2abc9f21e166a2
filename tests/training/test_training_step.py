"""Training-step bounds (``--train``): hand arithmetic, phases, samples, diagnostics."""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.diagnostics import FrontendError
from solar.pipeline import AnalyzeOptions, analyze, analyze_module

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples" / "torch"
M, K, N = 64, 32, 16


def _linear_step(optimizer: str) -> object:
    torch.manual_seed(0)
    lin = torch.nn.Linear(K, N, bias=False)
    x = torch.randn(M, K, requires_grad=True)
    options = AnalyzeOptions(train_step=True, optimizer=optimizer, cache="cold")  # type: ignore[arg-type]
    return analyze_module(lin, [x], options)


def _phases(report: object) -> dict[str, object]:
    return {p.phase: p for p in report.training.phases}  # type: ignore[attr-defined]


def test_linear_step_is_three_matmuls_plus_sgd_update() -> None:
    r = _linear_step("sgd")
    assert r.validation.status == "passed"
    ph = _phases(r)
    mm = 2 * M * K * N
    # forward: X @ W^T, then the default loss: mean = M*N adds + 1 division
    assert ph["forward"].flops == mm + M * N + 1
    # backward: dW = dY^T X and dX = dY W (one matmul each); dY = 1/(M*N) broadcast is a
    # constant (index-only) value, folded into its reads (Note [Constant masks])
    assert ph["backward"].flops == 2 * mm
    # SGD: p - lr * g, 2 FLOPs per parameter; reads p, g and writes p (fp32)
    assert ph["optimizer"].flops == 2 * K * N
    assert ph["optimizer"].fused_dram_bytes == 3 * 4 * K * N
    step_matmuls = r.flops - (M * N + 1) - 2 * K * N
    assert step_matmuls == 3 * mm


def test_adamw_update_is_a_memory_bound_pass_over_p_g_and_two_moments() -> None:
    r = _linear_step("adamw")
    opt = _phases(r)["optimizer"]
    n = K * N
    # mul (decay) 1, lerp 3, mul 1, addcmul 3, sqrt 1, div 1, add 1, addcdiv 3
    assert opt.flops == 14 * n
    # read p, g, m, v; write p, m, v: 7 fp32 values per parameter
    assert opt.fused_dram_bytes == 7 * 4 * n
    assert opt.kernels == 8
    t = r.training
    assert t.parameter_bytes == 4 * n
    assert t.optimizer_state_bytes == 2 * 4 * n
    assert t.gradient_bytes == 4 * n + 4 * M * K  # dW and dX
    bounds = {b.model: b for b in opt.archs[0].bounds}
    assert bounds["fused"].bottleneck == "memory"


def test_phase_flops_add_up_and_the_step_fuses_across_phases() -> None:
    r = analyze(SAMPLES / "train_mlp.py", AnalyzeOptions(train_step=True, cache="cold"))
    phases = r.training.phases
    assert [p.phase for p in phases] == ["forward", "backward", "optimizer"]
    assert sum(p.flops for p in phases) == r.flops
    assert r.fused_dram_bytes <= sum(p.fused_dram_bytes for p in phases)
    for arch in range(len(r.archs)):
        step = {b.model: b.time_s for b in r.archs[arch].bounds}
        for model in ("fused", "cache-aware"):
            total = sum(
                next(b.time_s for b in p.archs[arch].bounds if b.model == model) for p in phases
            )
            assert step[model] <= total * (1 + 1e-9)


@pytest.mark.parametrize(
    ("name", "complete"),
    [
        ("train_mlp", True),
        ("train_transformer_block", True),
        ("train_cnn", True),
        ("train_lstm", True),
    ],
)
def test_training_samples_validate(name: str, complete: bool) -> None:
    r = analyze(SAMPLES / f"{name}.py", AnalyzeOptions(train_step=True, cache="cold"))
    assert r.validation.status == "passed"
    assert r.coverage.complete is complete
    assert r.training is not None
    assert {p.phase for p in r.training.phases} == {"forward", "backward", "optimizer"}
    if name == "train_cnn":
        assert r.training.saved_activation_bytes > 0
        assert r.training.optimizer.startswith("sgd(lr=0.1, momentum=0.9")


def test_forward_that_calls_backward_itself(tmp_path: Path) -> None:
    src = tmp_path / "self_backward.py"
    src.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(8, 4)\n"
        "    def forward(self, x):\n"
        "        loss = torch.relu(self.fc(x)).sum()\n"
        "        loss.backward()\n"
        "        return loss\n\n"
        "def get_inputs():\n    return [torch.randn(5, 8)]\n"
    )
    r = analyze(src, AnalyzeOptions(train_step=True, cache="cold"))
    assert r.validation.status == "passed"
    assert r.coverage.complete
    ph = _phases(r)
    assert ph["backward"].flops >= 2 * 5 * 8 * 4  # dW = dY^T X
    assert r.training.optimizer.startswith("sgd(")
    assert r.training.loss == "mean of the output (default)"


def test_unmodelled_optimizer_is_a_coded_error(tmp_path: Path) -> None:
    src = tmp_path / "rmsprop.py"
    src.write_text(
        "import torch\n\nclass Model(torch.nn.Linear):\n"
        "    def __init__(self):\n        super().__init__(4, 2)\n\n"
        "def get_inputs():\n    return [torch.randn(3, 4)]\n\n"
        "def get_optimizer(params):\n    return torch.optim.RMSprop(params)\n"
    )
    with pytest.raises(FrontendError) as err:
        analyze(src, AnalyzeOptions(train_step=True))
    assert err.value.code == "E0540"


def test_top_level_api_bounds_a_step() -> None:
    import solar

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.GELU())
    r = solar.analyze(model, [torch.randn(5, 8)], train=True, optimizer="adam")
    assert r.validation.status == "passed"
    assert r.training is not None
    assert r.training.optimizer.startswith("adam(")
    assert [p.phase for p in r.training.phases] == ["forward", "backward", "optimizer"]


def test_backward_without_train_says_to_use_train(tmp_path: Path) -> None:
    src = tmp_path / "self_backward.py"
    src.write_text(
        "import torch\n\nclass Model(torch.nn.Linear):\n"
        "    def __init__(self):\n        super().__init__(4, 2)\n"
        "    def forward(self, x):\n"
        "        loss = super().forward(x).sum()\n        loss.backward()\n        return loss\n\n"
        "def get_inputs():\n    return [torch.randn(3, 4)]\n"
    )
    with pytest.raises(FrontendError) as err:
        analyze(src, AnalyzeOptions())
    assert err.value.code == "E0501"
    assert any("--train" in n for n in err.value.notes)
    assert analyze(src, AnalyzeOptions(train_step=True)).validation.status == "passed"


class _UnloweredBackward(torch.autograd.Function):
    """Forward ``2 h`` (lowered); backward ``i0e(g) * h``: ``special_i0e`` has no lowering,
    on purpose, and it reads the input-gradient matmul's output."""

    @staticmethod
    def forward(ctx: object, h: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(h)  # type: ignore[attr-defined]
        return h * 2.0

    @staticmethod
    def backward(ctx: object, g: torch.Tensor) -> torch.Tensor:
        (h,) = ctx.saved_tensors  # type: ignore[attr-defined]
        return torch.special.i0e(g) * h


def test_an_unlowered_backward_op_is_uncovered_and_its_neighbours_kept() -> None:
    """The issue's case: the input-gradient matmul feeding an uncovered backward op and
    the weight-gradient matmul reading its result both stay in the bound."""
    h = 48

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1, self.fc2 = torch.nn.Linear(K, h), torch.nn.Linear(h, N)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc2(_UnloweredBackward.apply(self.fc1(x)))  # type: ignore[no-any-return]

    torch.manual_seed(0)
    r = analyze_module(Net(), [torch.randn(M, K)], AnalyzeOptions(train_step=True, cache="cold"))
    (unc,) = r.coverage.uncovered
    assert unc.op == "aten.special_i0e.default"
    assert unc.count == 1
    assert 0.0 < unc.bytes_share < 0.1
    assert not r.coverage.complete
    # dW2 = dY^T h2, dH2 = dY W2 (feeds i0e), dW1 = (i0e(dH2) * h)^T x (reads its result)
    assert _phases(r)["backward"].flops >= 2 * M * N * h * 2 + 2 * M * K * h
    assert r.validation.status == "passed", r.validation.reason


def test_keyword_inputs_reach_the_step() -> None:
    """A model called with keyword inputs (transformers' ``decoder_input_ids``) keeps
    them in the training step."""

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(K, N)

        def forward(self, x: torch.Tensor, *, shift: torch.Tensor) -> torch.Tensor:
            return self.fc(x + shift)  # type: ignore[no-any-return]

    torch.manual_seed(0)
    options = AnalyzeOptions(train_step=True, cache="cold")
    r = analyze_module(Net(), [torch.randn(M, K)], options, kwargs={"shift": torch.randn(K)})
    assert r.validation.status == "passed", r.validation.reason
    assert r.coverage.complete
