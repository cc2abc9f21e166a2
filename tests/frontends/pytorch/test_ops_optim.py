"""Fused optimizers (``fused=True``): one kernel per parameter at its CUDA granularity.

Hand minima (Note [Fused optimizer] in ops_optim.py): a fused update reads the parameter,
its gradient and its state once and writes the parameter and the state once, so the
optimizer phase moves ``(reads + writes) * 4 * n`` bytes for ``n`` fp32 parameters in
ONE kernel per parameter, in the unfused model as in the fused one. The single-tensor
form (``fused`` unset) launches a kernel per ATen op and sums their bytes (above).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.pipeline import AnalyzeOptions, analyze

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

N = 256
SHAPES = ((N, N), (N,))  # a weight and a bias: two parameters, two kernels
ELEMS = N * N + N

# (optimizer, values read + written per parameter element, single-tensor kernels per param)
TABLE = [
    ("Adam(params, lr=1e-3, fused=True)", 4 + 3, 1),
    ("Adam(params, lr=1e-3, weight_decay=0.01, fused=True)", 4 + 3, 1),
    ("AdamW(params, lr=1e-3, weight_decay=0.01, fused=True)", 4 + 3, 1),
    ("SGD(params, lr=0.1, fused=True)", 2 + 1, 1),
    ("SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-4, fused=True)", 3 + 2, 1),
    ("SGD(params, lr=0.1, momentum=0.9, nesterov=True, fused=True)", 3 + 2, 1),
]


def _step(tmp_path: Path, optimizer: str) -> object:
    src = tmp_path / "opt.py"
    src.write_text(
        "import torch\n\nclass Model(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        f"        self.w = torch.nn.Parameter(torch.randn({N}, {N}) * 0.01)\n"
        f"        self.b = torch.nn.Parameter(torch.randn({N}) * 0.01)\n"
        "    def forward(self, x):\n        return x @ self.w + self.b\n\n"
        f"def get_inputs():\n    return [torch.randn(8, {N})]\n\n"
        f"def get_optimizer(params):\n    return torch.optim.{optimizer}\n"
    )
    return analyze(src, AnalyzeOptions(train_step=True, cache="cold"))


def _optimizer_phase(report: object) -> object:
    return next(p for p in report.training.phases if p.phase == "optimizer")  # type: ignore[attr-defined]


@pytest.mark.parametrize(("optimizer", "values", "kernels"), TABLE)
def test_fused_update_is_one_kernel_per_parameter_at_the_hand_minimum(
    tmp_path: Path, optimizer: str, values: int, kernels: int
) -> None:
    r = _step(tmp_path, optimizer)
    assert r.validation.status == "passed"  # type: ignore[attr-defined]
    opt = _optimizer_phase(r)
    assert opt.kernels == kernels * len(SHAPES)  # type: ignore[attr-defined]
    hand = values * 4 * ELEMS
    assert opt.fused_dram_bytes == hand  # type: ignore[attr-defined]
    bounds = {b.model: b for b in opt.archs[0].bounds}  # type: ignore[attr-defined]
    # each kernel is its own launch and moves exactly its operands once: unfused == fused
    assert bounds["unfused"].dram_bytes == hand
    assert bounds["unfused"].time_s == pytest.approx(bounds["fused"].time_s, rel=1e-9)
    assert "fused" in r.training.optimizer  # type: ignore[attr-defined]


def test_single_tensor_adam_keeps_its_launches(tmp_path: Path) -> None:
    opt = _optimizer_phase(_step(tmp_path, "Adam(params, lr=1e-3)"))
    assert opt.kernels > len(SHAPES)  # type: ignore[attr-defined]
    bounds = {b.model: b for b in opt.archs[0].bounds}  # type: ignore[attr-defined]
    # the intermediates (lerp's, sqrt's... outputs) go through memory between launches
    assert bounds["unfused"].time_s > bounds["fused"].time_s * 1.1


@pytest.mark.parametrize("kind", ["sgd", "adam", "adamw"])
def test_fused_update_runs_on_meta_tensors(kind: str) -> None:
    # torch has no meta kernel for _fused_sgd_: the training step registers a no-op one
    from solar.frontends.pytorch.train_step import OptimizerSpec, _fused_update

    p, g, s = (torch.empty(5, 3, device="meta") for _ in range(3))
    spec = OptimizerSpec(kind, momentum=0.9, fused=True)  # type: ignore[arg-type]
    new_p, state = _fused_update(spec, p, g, [s] if kind == "sgd" else [s, s])
    assert new_p.device.type == "meta" and tuple(new_p.shape) == (5, 3)
    assert len(state) == len(spec.state_kinds)
