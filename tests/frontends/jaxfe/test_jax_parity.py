"""Parity: the same computation in PyTorch and JAX costs the same FLOPs and bytes.

Each ``samples/jax/parity_*.py`` has a PyTorch twin in ``samples/torch/`` with the same
weight layout. Both frontends must produce identical total FLOPs, identical per-kernel-sum
(unfused) bytes and identical compulsory (fused: inputs + params + outputs) bytes.
"""

from __future__ import annotations

import pytest
from jax_check import ROOT, SAMPLES, program_costs

from solar.frontends.jaxfe import lower_jaxpr, trace_jax_file
from solar.ir import verify_program

pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("torch")
pytestmark = [pytest.mark.jax, pytest.mark.torch]

PARITY = sorted(p.stem.removeprefix("parity_") for p in SAMPLES.glob("parity_*.py"))


def test_parity_set() -> None:
    assert {"matmul", "conv2d", "attention", "layernorm", "mlp"} <= set(PARITY)


@pytest.mark.parametrize("name", PARITY)
def test_parity(name: str) -> None:
    from solar.frontends.pytorch import lower_capture, trace_model_file

    jax_prog = lower_jaxpr(trace_jax_file(SAMPLES / f"parity_{name}.py")).program
    torch_low = lower_capture(trace_model_file(ROOT / "samples" / "torch" / f"parity_{name}.py"))
    assert torch_low.fully_covered
    verify_program(jax_prog)
    verify_program(torch_low.program)
    jf, ju, jc = program_costs(jax_prog)
    tf, tu, tc = program_costs(torch_low.program)
    assert (jf, ju, jc) == (tf, tu, tc)
    assert len(jax_prog.kernels) == len(torch_low.program.kernels)
    assert jf > 0
    assert ju >= jc > 0
