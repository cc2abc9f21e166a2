"""Published MoE runs held to their measured cost per token: DeepSeek-V3 and DeepSeek-V2
pre-training on H800s.

* DeepSeek-AI, "DeepSeek-V3 Technical Report" (arXiv 2412.19437): 671B parameters, 37B
  activated per token, 14.8T training tokens, 2.788M H800 GPU hours for the whole
  training (pre-training, context extension and post-training: charging all of them to
  the 14.8T pre-training tokens overstates the measured cost per token by the later
  stages' share), FP8 mixed precision. Architecture (Sec. 4.2): 61 layers, the first 3
  dense, 58 MoE layers of 256 routed experts (top-8) plus one shared expert, hidden
  7168, expert intermediate 2048; 64-way expert parallelism.
* DeepSeek-AI, "DeepSeek-V2" (arXiv 2405.04434), Sec. 3.1.2 and 3.2.3: 236B parameters,
  21B activated per token; 60 layers, hidden 5120, every FFN but the first layer's an
  MoE layer of 2 shared and 160 routed experts (top-6), expert intermediate 1536;
  "during our practical training on the H800 cluster, for training on each trillion
  tokens, ... DeepSeek-V2 needs only 172.8K GPU hours"; 8-way expert parallelism
  (Sec. 3.1.3). The report does not say it trained in FP8; the bound takes the FP8
  peak anyway (a higher peak only lowers a bound).

The bound per token, in GPU-seconds: the routed experts' phase under the balanced load
the runs' balancing aims at (`bound_moe` with a uniform load; a skewed load only raises
it), plus every other activated parameter's 6 FLOPs per token (one multiply-add forward,
two backward; attention scores left out), at the FP8 dense peak of
`hardware_specs/h100_sxm.yaml` (the H800 SXM is the H100 SXM with its NVLink cut; its
tensor cores are the same, an assumption this test states). Binds: compute.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from solar.distributed.moe import ExpertLoad, MoeSetup, bound_moe
from solar.hw import load_hardware_spec


@dataclass(frozen=True)
class MoeRun:
    name: str
    activated: float
    hidden: int
    expert_intermediate: int
    moe_layers: int
    top_k: int
    experts: int
    ep: int
    gpu_s_per_token: float  # measured
    ratio: float            # measured / bound, as computed when the row was added


RUNS = (
    MoeRun("DeepSeek-V3", 37e9, 7168, 2048, 58, 8, 256, 64, 2.788e6 * 3600 / 14.8e12, 6.05),
    MoeRun("DeepSeek-V2", 21e9, 5120, 1536, 59, 6, 160, 8, 172.8e3 * 3600 / 1e12, 9.77),
)


def _fp8_peak() -> float:
    return float(load_hardware_spec("H100_SXM").tensor_flops_per_s["fp8"])


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.name)
def test_measured_cost_per_token_is_above_the_bound(run: MoeRun) -> None:
    peak = _fp8_peak()
    expert_params = 3 * run.hidden * run.expert_intermediate
    tokens = 32 * run.experts  # per EP group and step; the bound per token does not depend on it
    per_expert = tokens * run.top_k // run.experts
    assert per_expert * run.experts == tokens * run.top_k
    load = ExpertLoad(((tuple([per_expert] * run.experts),),), "uniform")
    setup = MoeSetup(group=run.ep, experts=run.experts, flops_per_token=2.0 * expert_params,
                     expert_bytes=expert_params, token_bytes=float(run.hidden),
                     peak_flops_per_s=peak, link_bytes_per_s=4.5e11, node_gpus=8,
                     nic_bytes_per_s=8 * 5e10)
    b = bound_moe(load, setup)
    experts_gpu_s = b.balanced_s[0] * run.ep / tokens * run.moe_layers  # GPU-s per token
    dense = 6.0 * (run.activated - run.moe_layers * run.top_k * expert_params) / peak
    bound = experts_gpu_s + dense
    assert bound == pytest.approx(6.0 * run.activated / peak, rel=1e-9)
    ratio = run.gpu_s_per_token / bound
    assert 1.0 <= ratio < 10.0
    assert ratio == pytest.approx(run.ratio, rel=0.01)
    assert b.static_s[0] == pytest.approx(b.balanced_s[0])  # uniform: no imbalance
