"""Per-rank programs derived by torch's tensor parallelism (Note [Derived ranks] in
solar/distributed/derived.py): against the analytic division, by plan file, the fallback,
and one derived rank checked against a real gloo run."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from solar.bounds import compile_costs, compute_bounds
from solar.diagnostics import PlanError
from solar.distributed import DistributedRequest, PlanFile, bound_prepared, parse_parallel
from solar.distributed.derived import (
    DerivedRank,
    RankDeriver,
    derive_for,
    derive_rank,
    tp_collectives_of,
)
from solar.distributed.structure import infer_structure
from solar.frontends import FrontendResult
from solar.hw import load_hardware_spec
from solar.ir import Program
from solar.pipeline import AnalyzeOptions, PreparedProgram, analyze, lift_source
from solar.pipeline.prepare import bounds_program
from solar.report import DistributedInfo

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parents[2]
GPT = ROOT / "benchmarks" / "distributed" / "gpt.py"
SMALL = {"LAYERS": 2, "HIDDEN": 64, "HEADS": 4, "SEQ": 16, "VOCAB": 128}
TP = 2

LLAMA = textwrap.dedent('''\
"""A Llama-like decoder in plain PyTorch, float32, written so that torch's tensor
parallelism can shard it (heads as ``-1``): the model of tests/parallel/test_derived.py."""

import torch
from torch import nn
from torch.nn import functional

LAYERS = 2
HIDDEN = 32
HEADS = 4
FFN = 64
SEQ = 8
BATCH = 2
VOCAB = 64


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn_norm = nn.RMSNorm(HIDDEN)
        self.q_proj = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.k_proj = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.v_proj = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.o_proj = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.mlp_norm = nn.RMSNorm(HIDDEN)
        self.gate_proj = nn.Linear(HIDDEN, FFN, bias=False)
        self.up_proj = nn.Linear(HIDDEN, FFN, bias=False)
        self.down_proj = nn.Linear(FFN, HIDDEN, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        h = self.attn_norm(x)
        q, k, v = (p(h).view(b, s, -1, HIDDEN // HEADS).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        y = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(y.transpose(1, 2).reshape(b, s, -1))
        h = self.mlp_norm(x)
        return x + self.down_proj(functional.silu(self.gate_proj(h)) * self.up_proj(h))


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.layers = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = nn.RMSNorm(HIDDEN)
        self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.embed(idx)
        for block in self.layers:
            x = block(x)
        return self.lm_head(self.norm(x))


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def get_targets():
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def loss_fn(logits, target):
    return functional.cross_entropy(logits.reshape(-1, VOCAB), target.reshape(-1))
''')


def _request(plan: str = "tp=2,dp=2", plan_file: PlanFile | None = None) -> DistributedRequest:
    return DistributedRequest("DGX_H100", parse_parallel(plan), 1, 4, plan_file=plan_file)


@pytest.fixture(scope="module")
def single() -> PreparedProgram:
    options = AnalyzeOptions(validate="off", train=True, train_step=True, sizes=SMALL,
                             distributed=DistributedRequest("DGX_H100", None, 1, 1))
    return lift_source(GPT, options)


@pytest.fixture(scope="module")
def derived() -> DerivedRank:
    d = derive_rank(GPT, _request(), overrides=SMALL, train=True, prepare=_prepare)
    assert isinstance(d, DerivedRank), d
    return d


def _prepare(front: FrontendResult, program: Program) -> Program:
    return bounds_program(front, program).program


def _bound(p: PreparedProgram, d: DerivedRank | None, plan: str = "tp=2,dp=2",
           ) -> DistributedInfo:
    assert p.front.step is not None
    return bound_prepared(p.program, p.graph, p.sizes, _request(plan),
                          phase_of=p.front.step.phase_of, precision=p.precision,
                          size_constants=p.front.source_sizes, derived=d)


def _flops(graph: object, sizes: object) -> dict[str, float]:
    spec = load_hardware_spec("H100_SXM")
    bound = compute_bounds(compile_costs(graph), spec, model="unfused",  # type: ignore[arg-type]
                           sizes=sizes)  # type: ignore[arg-type]
    return {k.name: k.flops for k in bound.kernels}


def test_derived_flops_are_the_analytic_plus_the_replicated_work(
        single: PreparedProgram, derived: DerivedRank) -> None:
    """Forward: each kernel of the derived rank does 1/tp of the single-device kernel of
    its name (the sharded Linears and what runs between them: attention, GELU) or all of
    it (embeddings, residual adds, norms, the head, the loss); the analytic rule divides
    all but the norms, so derived = analytic + (1 - 1/tp) x the replicated non-norm work."""
    assert single.front.step is not None
    phase = single.front.step.phase_of
    one, rank = _flops(single.graph, single.sizes), _flops(derived.graph, derived.sizes)
    s = infer_structure(single.program, single.sizes, phase)
    forward = [k for k in one if phase(k) == "forward" and one[k] > 0]
    sharded = {k for k in forward if rank[k] == pytest.approx(one[k] / TP, rel=1e-12)}
    replicated = {k for k in forward if rank[k] == pytest.approx(one[k], rel=1e-12)}
    assert sharded | replicated == set(forward)
    for k in forward:  # the Linears TP shards, and attention between them
        if any(f"_{name}_" in k for name in ("qkv", "proj", "fc1", "fc2")) or \
                k.endswith(("_attention", "_gelu")):
            assert k in sharded, k
    assert {"add", "mm", "log_softmax"} <= replicated  # positions, the tied head, the loss
    norms = s.replicated & set(forward)
    assert norms and norms <= replicated
    analytic = sum(one[k] if k in s.replicated else one[k] / TP for k in forward)
    extra = sum(one[k] for k in replicated - s.replicated)
    assert sum(rank[k] for k in forward if k in one) == pytest.approx(
        analytic + (1 - 1 / TP) * extra, rel=1e-12)
    # the whole step (backward and optimizer too): between the analytic rank and one device
    steps = [k for k in one if phase(k) != "optimizer"]
    assert sum(one[k] / TP for k in steps) <= sum(
        v for k, v in rank.items() if derived.phase_of(k) != "optimizer") <= sum(
        one[k] for k in steps)


def test_derived_tp_collectives_are_megatrons(single: PreparedProgram,
                                              derived: DerivedRank) -> None:
    """A fused QKV and one MLP pair per block: one all-reduce per row-parallel output in
    the forward and per column-parallel input in the backward, of tokens x hidden, as
    the analytic plan has them (Shoeybi et al. 2019, Fig. 4)."""
    analytic, ours = _bound(single, None), _bound(single, derived)

    def rows(info: DistributedInfo) -> list[tuple[str, str, float, float]]:
        return sorted((c.op, c.phase, c.bytes_per_rank, c.count_per_step)
                      for c in info.collectives if c.axis == "tp")

    tokens_by_hidden = SMALL["SEQ"] * SMALL["HIDDEN"] * 2  # bf16
    m, per_layer = 2, 2  # micro-batches per rank; attention + MLP
    expected = [("all_reduce", ph, tokens_by_hidden, m * SMALL["LAYERS"] * per_layer)
                for ph in ("backward", "forward")]
    assert rows(analytic) == expected
    plan = parse_parallel("tp=2,dp=2")
    captured = tp_collectives_of(derived, plan, micro_batches=m, recompute="none",
                                 phase="train")
    assert sorted((c.op, c.phase, c.bytes, c.count) for c in captured) == expected
    # the step bound is the lower of the two (Note [Derived ranks]): the derived rank
    # charges the replicated embedding, head and loss in full, which Megatron shards
    assert ours.step.time_s is not None and analytic.step.time_s is not None
    assert ours.step.derived_step_s is not None
    assert ours.step.derived_step_s >= analytic.step.time_s == ours.step.time_s
    assert any("step.derived_step_s" in a for a in ours.assumptions)
    assert analytic.step.derived_step_s is None
    assert ours.step.model_flops == analytic.step.model_flops  # MFU counts the model


def test_plan_file_shards_by_module_path() -> None:
    pf = PlanFile(parse_parallel("tp=2"),
                  tp_plan=(("layers.*.fc1", "colwise"), ("layers.*.fc2", "rowwise")))
    d = derive_rank(GPT, _request("tp=2", pf), overrides=SMALL, train=False, prepare=_prepare)
    assert isinstance(d, DerivedRank)
    assert (d.source, d.label) == ("plan file",
                                   "ColwiseParallel: layers.*.fc1; RowwiseParallel: layers.*.fc2")
    assert "plan file plan" in d.note()
    # the MLP's all-reduce only: attention stays replicated
    from solar.ir import collectives

    assert [c.kind for c in collectives(d.program, d.sizes)] == ["all_reduce"] * SMALL["LAYERS"]


def test_a_bad_plan_file_path_is_e0805() -> None:
    pf = PlanFile(parse_parallel("tp=2"), tp_plan=(("layers.*.mlp", "colwise"),))
    with pytest.raises(PlanError) as err:
        derive_rank(GPT, _request("tp=2", pf), overrides=SMALL, train=False, prepare=_prepare)
    assert err.value.code == "E0805" and "layers.*.mlp" in err.value.message


CONV = """
import torch
from torch import nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(4, 8, 3), nn.ReLU(), nn.Conv2d(8, 8, 3))

    def forward(self, x):
        return self.net(x)

def get_inputs():
    return [torch.randn(2, 4, 16, 16)]
"""


def test_an_uninferable_model_falls_back_to_the_analytic_rank(tmp_path: Path) -> None:
    path = tmp_path / "conv.py"
    path.write_text(CONV)
    req = DistributedRequest("DGX_H100", parse_parallel("tp=2"), 2, 2, phase="prefill")
    report = analyze(path, AnalyzeOptions(validate="off", distributed=req))
    assert report.distributed is not None
    note = report.distributed.assumptions[0]
    assert note.startswith("per-rank program: analytic") and "no repeated block stack" in note


def test_only_a_pytorch_file_is_derived() -> None:
    derived, note = derive_for(None, _request(), frontend="torch", sizes={}, train=True,
                               optimizer="auto", prepare=_prepare)
    assert derived is None and note is not None and note.startswith("per-rank program: analytic")
    assert derive_for(GPT, DistributedRequest("DGX_H100", None, 1, 1), frontend="torch",
                      sizes={}, train=True, optimizer="auto", prepare=_prepare) == (None, None)


def test_sequence_parallel_stays_analytic() -> None:
    assert "sequence parallelism" in str(
        derive_rank(GPT, _request("tp=2,sp=1"), overrides=SMALL, train=True, prepare=_prepare))


def test_a_derived_rank_matches_a_real_gloo_run(tmp_path: Path) -> None:
    """The inferred plan of a Llama-like model (separate Q/K/V, gate/up/down), applied by
    parallelize_module on 2 gloo processes: one training step of each rank as the
    simulated derived program computes it."""
    from solar.frontends.pytorch.derive_plan_capture import capture_tp_rank
    from solar.frontends.pytorch.distributed import validate_with_gloo
    from solar.frontends.pytorch.train_step import TrainStep

    path = tmp_path / "llama.py"
    path.write_text(LLAMA)
    d = capture_tp_rank(path, tp=TP, step=TrainStep())
    assert d.front is not None and len(d.plan.styles) == 14
    check = validate_with_gloo(path, world=TP, train=True, timeout_s=400,
                               derive={"styles": dict(d.plan.styles)})
    assert check.world == TP and check.sizes["HIDDEN"] == 32
    assert max(check.max_abs_error.values()) < 1e-5


def test_a_bad_plan_fails_before_any_derivation(single: PreparedProgram) -> None:
    req = _request("tp=8,dp=1")  # 4 heads: E0802
    deriver = RankDeriver(GPT, req, frontend="torch", sizes=SMALL, train=True,
                          optimizer="auto", prepare=_prepare)
    assert single.front.step is not None
    with pytest.raises(PlanError) as err:
        bound_prepared(single.program, single.graph, single.sizes, req,
                       phase_of=single.front.step.phase_of, precision=single.precision,
                       size_constants=single.front.source_sizes, derived=deriver)
    assert err.value.code == "E0802" and deriver.note is None
