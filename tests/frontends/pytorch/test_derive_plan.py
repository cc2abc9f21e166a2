"""Tensor-parallel plans inferred from a model's module tree (Megatron's pattern), and
plans given by module path (Note [Inferred TP plans] in solar/frontends/pytorch/derive_plan.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from solar.diagnostics import PlanError
from solar.frontends.pytorch.derive_plan import TPPlan, given_tp_plan, infer_tp_plan

torch = pytest.importorskip("torch")
nn = torch.nn
pytestmark = pytest.mark.torch

H = 32


def _stack(block: Callable[[], Any], n: int = 2, **extra: Any) -> Any:
    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(64, H)
            self.layers = nn.ModuleList(block() for _ in range(n))
            for name, mod in extra.items():
                setattr(self, name, mod)

    with torch.device("meta"):
        return Model()


def _gpt() -> Any:
    m = nn.Module()
    m.ln1, m.qkv, m.proj = nn.LayerNorm(H), nn.Linear(H, 3 * H), nn.Linear(H, H)
    m.ln2, m.fc1, m.fc2 = nn.LayerNorm(H), nn.Linear(H, 4 * H), nn.Linear(4 * H, H)
    return m


def _llama() -> Any:
    attn, mlp, m = nn.Module(), nn.Module(), nn.Module()
    attn.q_proj, attn.k_proj = nn.Linear(H, H), nn.Linear(H, H // 4)
    attn.v_proj, attn.o_proj = nn.Linear(H, H // 4), nn.Linear(H, H)
    mlp.gate_proj, mlp.up_proj, mlp.down_proj = nn.Linear(H, 64), nn.Linear(H, 64), \
        nn.Linear(64, H)
    m.self_attn, m.mlp, m.input_layernorm = attn, mlp, nn.RMSNorm(H)
    return m


def _bert() -> Any:
    attn, selfa, out, inter, m = nn.Module(), nn.Module(), nn.Module(), nn.Module(), \
        nn.Module()
    selfa.query, selfa.key, selfa.value = nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, H)
    out.dense, out.LayerNorm = nn.Linear(H, H), nn.LayerNorm(H)
    attn.self, attn.output = selfa, out
    inter.dense = nn.Linear(H, 4 * H)
    m.attention, m.intermediate, m.output = attn, inter, nn.Module()
    m.output.dense = nn.Linear(4 * H, H)
    return m


def _moe() -> Any:
    def expert() -> Any:
        e = nn.Module()
        e.w1, e.w2, e.w3 = nn.Linear(H, 64), nn.Linear(64, H), nn.Linear(H, 64)
        return e

    m = nn.Module()
    m.wqkv, m.wo = nn.Linear(H, 3 * H), nn.Linear(H, H)
    m.gate = nn.Linear(H, 4)  # the router: replicated
    m.experts = nn.ModuleList(expert() for _ in range(4))
    return m


INFERRED = [
    ("gpt", _gpt, "ColwiseParallel: layers.*.qkv, layers.*.fc1; "
                  "RowwiseParallel: layers.*.proj, layers.*.fc2"),
    ("llama", _llama, "ColwiseParallel: layers.*.self_attn.q_proj, layers.*.self_attn.k_proj, "
                      "layers.*.self_attn.v_proj, layers.*.mlp.gate_proj, layers.*.mlp.up_proj; "
                      "RowwiseParallel: layers.*.self_attn.o_proj, layers.*.mlp.down_proj"),
    ("bert", _bert, "ColwiseParallel: layers.*.attention.self.query, layers.*.attention.self.key, "
                    "layers.*.attention.self.value, layers.*.intermediate.dense; "
                    "RowwiseParallel: layers.*.attention.output.dense, layers.*.output.dense"),
    ("moe", _moe, "ColwiseParallel: layers.*.wqkv, layers.*.experts.*.w1, layers.*.experts.*.w3; "
                  "RowwiseParallel: layers.*.wo, layers.*.experts.*.w2"),
]


@pytest.mark.parametrize(("name", "block", "label"), INFERRED, ids=[r[0] for r in INFERRED])
def test_inferred_plan(name: str, block: Callable[[], Any], label: str) -> None:
    plan = infer_tp_plan(_stack(block, lm_head=nn.Linear(H, 64)), 2)
    assert plan.reason is None and plan.source == "inferred"
    assert plan.label() == label
    # every block is sharded alike; the head, router and norms are not in the plan
    assert {p.split(".")[1] for p in plan.styles} == {"0", "1"}
    assert not any(p.endswith(("lm_head", ".gate", "norm")) for p in plan.styles)


def _unpaired() -> Any:
    m = nn.Module()
    m.fc1, m.act = nn.Linear(H, 4 * H), nn.GELU()  # fans out, never back in
    return m


UNINFERABLE = [
    ("no block stack", lambda: _stack(_gpt, n=1), 2, "no repeated block stack"),
    ("convolutions", lambda: _stack(lambda: nn.Conv1d(H, H, 3)), 2, "no column-parallel"),
    ("unpaired", lambda: _stack(_unpaired), 2, "no column-parallel and row-parallel"),
    ("tp does not divide", lambda: _stack(_gpt), 3, "tp=3 does not divide"),
]


@pytest.mark.parametrize(("name", "model", "tp", "why"), UNINFERABLE,
                         ids=[r[0] for r in UNINFERABLE])
def test_uninferable_plan_says_why(name: str, model: Callable[[], Any], tp: int,
                                   why: str) -> None:
    plan = infer_tp_plan(model(), tp)
    assert plan.styles == {} and plan.reason is not None and why in plan.reason


def test_given_plan_by_module_path() -> None:
    plan = given_tp_plan(_stack(_gpt), {"layers.*.fc1": "colwise", "layers.1.fc2": "rowwise"},
                         where="p.yaml")
    assert plan == TPPlan({"layers.0.fc1": "colwise", "layers.1.fc1": "colwise",
                           "layers.1.fc2": "rowwise"}, "plan file")


@pytest.mark.parametrize("patterns", [
    {"layers.*.nope": "colwise"},   # names no module
    {"layers.*.ln1": "colwise"},    # a module, not a Linear
    {"layers.*.fc1": "diagonal"},   # no such style
])
def test_bad_given_plan_is_e0805(patterns: dict[str, str]) -> None:
    with pytest.raises(PlanError) as err:
        given_tp_plan(_stack(_gpt), patterns, where="p.yaml")
    assert err.value.code == "E0805" and "p.yaml" in err.value.message
