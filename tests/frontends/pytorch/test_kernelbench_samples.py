"""KernelBench-style samples (samples/torch/l[123]_*.py) lower fully, validate, and count exactly.

Samples are discovered by name, so a new ``l2_*.py``/``l3_*.py`` file is tested as soon
as it exists; `test_every_sample_is_tested` keeps every file of samples/torch in one
of the sample tests. Besides validation, the fused model's compulsory bytes of a
sample that reads all of its inputs must equal its inputs + parameters + outputs:
every element is touched, and none is counted twice.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_core_samples import CORE_SAMPLES
from test_nn_samples import NN_SAMPLES
from torch_check import assert_outputs_close, run_lowered

from solar.bounds import evaluate_costs
from solar.einsum import lift_to_einsum
from solar.frontends.pytorch import lower_capture, reference_data, trace_model_file

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "torch"
KERNELBENCH = sorted(p.stem for p in SAMPLES.glob("l[123]_*.py"))
PARITY = sorted(p.stem for p in SAMPLES.glob("parity_*.py"))
TRAINING = sorted(p.stem for p in SAMPLES.glob("train_*.py"))
"""Training-step samples: analysed with ``--train`` in tests/training."""
DISTRIBUTED = sorted(p.stem for p in SAMPLES.glob("dist_*.py"))
"""torch.distributed samples: captured per rank in test_torch_distributed.py."""
PARTIAL_READS = {"l3_mingpt_attention": "reads bias[:, :, :T, :T] of a larger mask buffer"}
"""Samples that read only part of some input or parameter (fewer compulsory bytes)."""


def test_every_sample_is_tested() -> None:
    tested = set(CORE_SAMPLES) | set(NN_SAMPLES) | set(KERNELBENCH) | set(PARITY) | set(TRAINING)
    tested |= set(DISTRIBUTED)
    assert KERNELBENCH, "no KernelBench-style samples found"
    assert {p.stem for p in SAMPLES.glob("*.py")} <= tested


@pytest.mark.parametrize("name", KERNELBENCH + PARITY)
def test_sample_lowers_fully_validates_and_counts_every_byte_once(name: str) -> None:
    capture = trace_model_file(SAMPLES / f"{name}.py")
    lowered = lower_capture(capture)
    assert lowered.coverage == (), f"uncovered ops: {lowered.coverage}"
    inputs, outputs = reference_data(lowered, capture)
    got = run_lowered(lowered, inputs)
    assert_outputs_close(got, outputs, rtol=1e-4, atol=1e-5)

    costs = evaluate_costs(lift_to_einsum(lowered.program))
    compulsory = float(costs.compulsory_read_bytes.sum() + costs.compulsory_written_bytes.sum())
    interface = sum(
        int(np.prod([int(getattr(d, "value", d)) for d in t.shape])) * t.dtype.itemsize_bytes
        for t in lowered.program.tensors
        if t.role in ("input", "param", "output")
    )
    assert compulsory <= interface
    if name not in PARTIAL_READS:
        assert compulsory == interface
