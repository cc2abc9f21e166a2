"""``torch._scaled_mm`` (fp8) is one kernel on the fp8 tensor-core roof (issue 28 item 7)."""

from __future__ import annotations

import pytest

from solar.bounds import compute_bounds, pipe_labels
from solar.einsum import lift_to_einsum
from solar.hw import load_hardware_spec

torch = pytest.importorskip("torch")

from torch_check import check_program  # noqa: E402

pytestmark = pytest.mark.torch

M, K, N = 32, 64, 16


# row-wise scales need a bf16 output
@pytest.mark.parametrize(("out_dtype", "rowwise"), [(torch.bfloat16, False),
                                                    (torch.float32, False), (torch.bfloat16, True)])
def test_scaled_mm_is_one_fp8_kernel(out_dtype: object, rowwise: bool) -> None:
    a = torch.randn(M, K).to(torch.float8_e4m3fn)
    b = torch.randn(N, K).to(torch.float8_e4m3fn)
    sa = torch.rand(M, 1) + 0.5 if rowwise else torch.tensor(0.5)
    sb = torch.rand(1, N) + 0.5 if rowwise else torch.tensor(2.0)
    low = check_program(lambda x, y, s, t: torch._scaled_mm(x, y.t(), s, t, out_dtype=out_dtype),
                        a, b, sa, sb, rtol=1e-2, atol=1e-2)
    assert [k.name for k in low.program.kernels if "scaled_mm" in k.name] == ["scaled_mm"]
    graph = lift_to_einsum(low.program)
    # 2 M N K for the products and their sums, then two scale multiplies per output
    assert sum(n.flops.evaluate({}) for n in graph.nodes) == 2 * M * N * K + 2 * M * N
    spec = load_hardware_spec("H100_SXM")
    fused = compute_bounds(graph, spec, model="fused")
    assert pipe_labels(fused.flops_by_pipe)["tensor:fp8"] == 2 * M * N * K
