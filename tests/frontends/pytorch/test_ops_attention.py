"""Attention lowerings (ops_attention.py, ops_transformer.py) against torch."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nn_opcheck import check_op, reduce_points

torch = pytest.importorskip("torch")
nn = pytest.importorskip("torch.nn")
pytestmark = pytest.mark.torch

A = torch.ops.aten
FLASH = A._scaled_dot_product_flash_attention_for_cpu.default
_FAST = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_FAST
@given(
    st.integers(1, 2),
    st.integers(1, 2),
    st.integers(1, 3),
    st.integers(1, 6),
    st.integers(1, 6),
    st.sampled_from([None, "float", "bool"]),
    st.booleans(),
    st.sampled_from([None, 0.3]),
)
def test_sdpa(
    b: int,
    kv_heads: int,
    rep: int,
    n_q: int,
    n_k: int,
    mask: str | None,
    causal: bool,
    scale: float | None,
) -> None:
    q = torch.randn(b, kv_heads * rep, n_q, 4)
    k, v = torch.randn(b, kv_heads, n_k, 4), torch.randn(b, kv_heads, n_k, 4)
    attn_mask = None
    if mask is not None and not causal:
        attn_mask = torch.randn(n_q, n_k) if mask == "float" else torch.rand(b, 1, n_q, n_k) > 0.3
        if mask == "bool":
            attn_mask[..., 0] = True
    check_op(
        A.scaled_dot_product_attention.default,
        q,
        k,
        v,
        attn_mask,
        0.0,
        causal,
        scale=scale,
        enable_gqa=rep > 1,
    )


@pytest.mark.parametrize(("n_q", "n_k"), [(5, 5), (3, 6), (7, 4)])
def test_flash_cpu_causal_counts_the_triangle(n_q: int, n_k: int) -> None:
    q, k, v = torch.randn(1, 2, n_q, 4), torch.randn(1, 2, n_k, 4), torch.randn(1, 2, n_k, 4)
    program = check_op(FLASH, q, k, v, 0.0, True)
    # torch's causal mask is top-left aligned: query i sees keys 0 .. min(i, n_k - 1)
    pairs = sum(min(i + 1, n_k) for i in range(n_q))
    # per head and pair: 4 QK multiply-adds, 1 max, 1 sum, 4 PV multiply-adds
    assert reduce_points(program) == 2 * pairs * (4 + 1 + 1 + 4)


def test_flash_cpu_with_mask_and_half() -> None:
    q, k, v = torch.randn(2, 2, 3, 8), torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8)
    check_op(FLASH, q, k, v, 0.0, False, attn_mask=torch.randn(2, 1, 3, 5), scale=0.5)
    check_op(FLASH, q.half(), k.half(), v.half(), 0.0, False, rtol=1e-2, atol=1e-2)


def _left_padded(b: int, n_q: int, n_k: int, pad: int) -> Any:
    """A causal boolean mask whose first ``pad`` query rows see no key (left padding)."""
    mask = torch.ones(b, 1, n_q, n_k, dtype=torch.bool).tril()
    mask[:, :, :pad, :] = False
    return mask


def test_fully_masked_rows_are_zero_as_torch_returns_them() -> None:
    # Note [Fully masked rows]: out 0 (and CPU flash's logsumexp 0), not NaN
    q, k, v = torch.randn(2, 2, 5, 4), torch.randn(2, 2, 5, 4), torch.randn(2, 2, 5, 4)
    mask = _left_padded(2, 5, 5, 2)
    additive = torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))
    check_op(FLASH, q, k, v, 0.0, False, attn_mask=additive)
    check_op(A.scaled_dot_product_attention.default, q, k, v, mask)
    check_op(A._scaled_dot_product_attention_math.default, q, k, v, additive, 0.0, False)


def test_a_left_padded_attention_step_validates() -> None:
    import solar

    class Padded(nn.Module):  # type: ignore[misc]
        def forward(self, q: Any, k: Any, v: Any, mask: Any) -> Any:
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    torch.manual_seed(0)
    qkv = [torch.randn(2, 2, 6, 4, requires_grad=True) for _ in range(3)]
    report = solar.analyze(Padded(), (*qkv, _left_padded(2, 6, 6, 3)), train=True)
    assert report.coverage.complete
    assert report.validation.status == "passed", report.validation


def test_math_attention_weights() -> None:
    q, k, v = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 5)
    check_op(A._scaled_dot_product_attention_math.default, q, k, v, None, 0.0, True)
    check_op(A._scaled_dot_product_attention_math.default, q, k, v, torch.randn(4, 6), 0.0, False)


def test_cuda_path_siblings() -> None:
    q, k, v = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)
    out, lse = FLASH(q, k, v, 0.0, True)
    check_op(
        A._scaled_dot_product_flash_attention.default,
        q,
        k,
        v,
        0.0,
        True,
        expected=(out, lse, None, None, None, None, None, None, None),
    )
    bias = torch.randn(1, 2, 3, 5)
    out = A.scaled_dot_product_attention.default(q, k, v, bias)
    check_op(
        A._scaled_dot_product_efficient_attention.default,
        q,
        k,
        v,
        bias,
        False,
        expected=(out, None, None, None),
    )


def _mha_weights(m: Any) -> list[Any]:
    return [
        t.detach() for t in (m.in_proj_weight, m.in_proj_bias, m.out_proj.weight, m.out_proj.bias)
    ]


@pytest.mark.parametrize("mask_type", [None, 1, 2])
@pytest.mark.parametrize("average", [True, False])
def test_native_multi_head_attention(mask_type: int | None, average: bool) -> None:
    torch.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = torch.randn(2, 5, 8)
    mask = None
    if mask_type == 1:
        mask = torch.zeros(2, 5)
        mask[0, 3:] = float("-inf")
    elif mask_type == 2:
        causal = torch.ones(5, 5).triu(1).bool()
        mask = torch.zeros(5, 5).masked_fill(causal, float("-inf")).expand(2, 2, 5, 5)
    check_op(
        A._native_multi_head_attention.default,
        x,
        x,
        x,
        8,
        2,
        *_mha_weights(m),
        mask,
        True,
        average,
        mask_type,
    )


@pytest.mark.parametrize(("norm_first", "gelu"), [(False, False), (True, True)])
def test_transformer_encoder_layer_fwd(norm_first: bool, gelu: bool) -> None:
    enc = nn.TransformerEncoderLayer(
        8,
        2,
        16,
        dropout=0.0,
        batch_first=True,
        norm_first=norm_first,
        activation="gelu" if gelu else "relu",
    ).eval()
    sa = enc.self_attn
    params = [
        sa.in_proj_weight,
        sa.in_proj_bias,
        sa.out_proj.weight,
        sa.out_proj.bias,
        gelu,
        norm_first,
        1e-5,
        enc.norm1.weight,
        enc.norm1.bias,
        enc.norm2.weight,
        enc.norm2.bias,
        enc.linear1.weight,
        enc.linear1.bias,
        enc.linear2.weight,
        enc.linear2.bias,
    ]
    params = [p.detach() if isinstance(p, torch.Tensor) else p for p in params]
    check_op(A._transformer_encoder_layer_fwd.default, torch.randn(2, 4, 8), 8, 2, *params)


def test_safe_softmax_zeroes_fully_masked_rows() -> None:
    x = torch.randn(3, 4, 5)
    x[1, 2, :] = float("-inf")
    x[0, 0, 1] = float("-inf")
    check_op(A._safe_softmax.default, x, -1)
    check_op(A._safe_softmax.default, torch.randn(4, 3), 0)


class _Sdpa(nn.Module):  # type: ignore[misc]
    def __init__(self, causal: bool) -> None:
        super().__init__()
        self.causal = causal

    def forward(self, q: Any, k: Any, v: Any) -> Any:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=self.causal)


# (B, H, L, E, causal): the hand minimum of an inference attention is q, k, v read and
# out written once (4 * B*H*L*E fp32 values); the logsumexp output of the flash op (B*H*L
# values) is read by nothing, and the flash/memory-efficient kernels do not write it
# without grad: dead, not charged. A training step's backward reads it: charged.
_LSE_TABLE = [(2, 4, 128, 32, True), (1, 8, 256, 64, False)]


@pytest.mark.parametrize(("b", "h", "n", "e", "causal"), _LSE_TABLE)
def test_unread_logsumexp_is_not_charged_at_inference(
    b: int, h: int, n: int, e: int, causal: bool
) -> None:
    from solar.pipeline import AnalyzeOptions, analyze_module

    qkv = [torch.randn(b, h, n, e) for _ in range(3)]
    r = analyze_module(_Sdpa(causal), qkv, AnalyzeOptions(cache="cold"))
    assert r.validation.status == "passed"
    (kernel,) = r.archs[0].kernels
    hand = 4 * 4 * b * h * n * e
    assert kernel.bytes == hand
    assert r.fused_dram_bytes == hand


def test_logsumexp_is_charged_when_the_backward_reads_it() -> None:
    from solar.pipeline import AnalyzeOptions, analyze_module

    b, h, n, e = _LSE_TABLE[0][:4]
    qkv = [torch.randn(b, h, n, e, requires_grad=True) for _ in range(3)]
    r = analyze_module(_Sdpa(True), qkv, AnalyzeOptions(train_step=True, cache="cold"))
    forward = next(k for k in r.archs[0].kernels if k.name.endswith("attention")
                   and not k.name.startswith("backward"))
    assert forward.bytes == 4 * 4 * b * h * n * e + 4 * b * h * n  # + the logsumexp
