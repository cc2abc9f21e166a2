"""A published MoE run held to its measured cost: DeepSeek-V3's pre-training on H800s.

DeepSeek-AI, "DeepSeek-V3 Technical Report" (arXiv 2412.19437): 671B parameters, 37B
activated per token, 14.8T training tokens, 2.788M H800 GPU hours for the whole training
(pre-training, context extension and post-training: charging all of them to the 14.8T
pre-training tokens overstates the measured cost per token by the later stages' share),
FP8 mixed precision. Architecture (same report, Sec. 4.2): 61 layers, the first 3 dense,
58 MoE layers of 256 routed experts (top-8) plus one shared expert, hidden 7168, expert
intermediate 2048.

The bound per token, in GPU-seconds: the routed experts' phase under the balanced load
their auxiliary-loss-free balancing aims at (`bound_moe` with a uniform load; a skewed
load only raises it), plus every other activated parameter's 6 FLOPs per token (one
multiply-add forward, two backward; attention scores left out), at the FP8 dense peak of
`hardware_specs/h100_sxm.yaml` (the H800 SXM is the H100 SXM with its NVLink cut; its
tensor cores are the same, an assumption this test states). Binds: compute.
"""

from __future__ import annotations

import pytest

from solar.distributed.moe import ExpertLoad, MoeSetup, bound_moe
from solar.hw import load_hardware_spec

ACTIVATED = 37e9
EXPERT_PARAMS = 3 * 7168 * 2048
MOE_LAYERS, TOP_K, EXPERTS, EP = 58, 8, 256, 64
MEASURED_GPU_S_PER_TOKEN = 2.788e6 * 3600 / 14.8e12


def _fp8_peak() -> float:
    return float(load_hardware_spec("H100_SXM").tensor_flops_per_s["fp8"])


def test_deepseek_v3_measured_cost_is_above_the_bound() -> None:
    peak = _fp8_peak()
    tokens = 4096  # per EP group and step; the bound per token does not depend on it
    per_expert = tokens * TOP_K // EXPERTS
    load = ExpertLoad(((tuple([per_expert] * EXPERTS),),), "uniform")
    setup = MoeSetup(group=EP, experts=EXPERTS, flops_per_token=2.0 * EXPERT_PARAMS,
                     expert_bytes=EXPERT_PARAMS, token_bytes=7168.0, peak_flops_per_s=peak,
                     link_bytes_per_s=4.5e11, node_gpus=8, nic_bytes_per_s=8 * 5e10)
    b = bound_moe(load, setup)
    experts_gpu_s = b.balanced_s[0] * EP / tokens * MOE_LAYERS  # GPU-seconds per token
    dense = 6.0 * (ACTIVATED - MOE_LAYERS * TOP_K * EXPERT_PARAMS) / peak
    bound = experts_gpu_s + dense
    assert bound == pytest.approx(6.0 * ACTIVATED / peak, rel=1e-9)
    ratio = MEASURED_GPU_S_PER_TOKEN / bound
    assert 1.0 <= ratio < 10.0  # measured / bound = 6.05
    assert b.static_s[0] == pytest.approx(b.balanced_s[0])  # uniform: no imbalance
