"""Causal masks in every spelling bound both contractions on the triangle.

Issue 28 item 3 (Note [Mask spellings] in `solar.ir.masks`): an additive ``triu(-inf)``
mask, SDPA with ``attn_mask=generate_square_subsequent_mask``, ``masked_fill`` with a
bool ``tril`` buffer (bf16), minGPT's ``bias[:, :, :T, :T] == 0`` over a symbolic block
size, PyTorch's own math-path decomposition of ``is_causal`` (fp8), and a 0/1 mask
multiplied in. Hand minimum per contraction (Q K^T and P V alike): ``2 * BH * T(T+1)/2 * D``
FLOPs; dense would be ``2 * BH * T * T * D``.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from solar.pipeline import AnalyzeOptions, analyze_module  # noqa: E402

B, H, T, D = 2, 2, 16, 8
nn = torch.nn
F = torch.nn.functional


class Additive(nn.Module):
    def forward(self, q: Any, k: Any, v: Any) -> Any:
        s = q @ k.transpose(-1, -2) / math.sqrt(D)
        s = s + torch.triu(torch.full((T, T), float("-inf")), 1)
        return torch.softmax(s, -1) @ v


class SquareSubsequent(nn.Module):
    def forward(self, q: Any, k: Any, v: Any) -> Any:
        m = nn.Transformer.generate_square_subsequent_mask(T)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m)


class BoolBuffer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

    def forward(self, q: Any, k: Any, v: Any) -> Any:
        s = (q @ k.transpose(-1, -2)).masked_fill(~self.mask, float("-inf"))
        return torch.softmax(s, -1) @ v


BLOCK = 24  # minGPT's block size: the buffer is larger than the sequence


class MinGPT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK))

    def forward(self, q: Any, k: Any, v: Any) -> Any:
        n = q.size(-2)
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        s = s.masked_fill(self.bias[:, :, :n, :n] == 0, float("-inf"))
        return torch.softmax(s, -1) @ v


class Multiplied(nn.Module):
    """A 0/1 mask multiplied into the probabilities (P V only: Q K^T feeds every row)."""

    def forward(self, q: Any, k: Any, v: Any) -> Any:
        p = torch.softmax(q @ k.transpose(-1, -2), -1) * torch.ones(T, T).tril()
        return p @ v


class SdpaCausal(nn.Module):
    def forward(self, q: Any, k: Any, v: Any) -> Any:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


TRI = 2 * B * H * (T * (T + 1) // 2) * D
DENSE = 2 * B * H * T * T * D

# name: (module, dtype, contraction FLOPs (hand), validate)
CASES: dict[str, tuple[type, Any, list[int], str]] = {
    "additive_triu": (Additive, torch.float32, [TRI, TRI], "auto"),
    "sdpa_square_subsequent_mask": (SquareSubsequent, torch.float32, [2 * TRI], "auto"),
    "masked_fill_bool_tril_buffer_bf16": (BoolBuffer, torch.bfloat16, [TRI, TRI], "auto"),
    "mingpt_bias_eq_0": (MinGPT, torch.float32, [TRI, TRI], "auto"),
    "multiplied_0_1": (Multiplied, torch.float32, [DENSE, TRI], "auto"),
    "sdpa_is_causal_math_fp8": (SdpaCausal, torch.float8_e4m3fn, [TRI, TRI], "off"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_causal_mask_spellings_bound_the_triangle(case: str) -> None:
    module, dtype, want, validate = CASES[case]
    qkv = tuple(torch.randn(B, H, T, D).to(dtype) for _ in range(3))
    report = analyze_module(module(), qkv, AnalyzeOptions(archs=("H100_SXM",),
                                                          validate=validate))  # type: ignore[arg-type]
    if validate != "off":
        assert report.validation is not None and report.validation.status == "passed"
    got = [int(k.flops) for k in report.archs[0].kernels if k.unit == "tensor"]
    if case == "sdpa_square_subsequent_mask":
        # one fused attention kernel: its contractions plus the element-wise work
        got = [sum(int(k.flops) for k in report.archs[0].kernels if "attention" in k.name)]
        assert 2 * TRI <= got[0] < 2 * TRI + 4 * B * H * T * T
        return
    assert got == want


HQ, HKV = 4, 2  # grouped-query attention: two query heads per K/V head
GQA_TRI = 2 * B * HQ * (T * (T + 1) // 2) * D


class GqaBoolMask(nn.Module):
    def forward(self, q: Any, k: Any, v: Any) -> Any:
        m = torch.ones(T, T, dtype=torch.bool).tril()
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True)


class GqaAdditiveMask(nn.Module):
    def forward(self, q: Any, k: Any, v: Any) -> Any:
        m = nn.Transformer.generate_square_subsequent_mask(T)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True)


class GqaRepeated(nn.Module):
    def forward(self, q: Any, k: Any, v: Any) -> Any:
        k, v = (x.repeat_interleave(HQ // HKV, dim=1) for x in (k, v))
        m = torch.ones(T, T, dtype=torch.bool).tril()
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m)


class GqaCausal(nn.Module):
    def forward(self, q: Any, k: Any, v: Any) -> Any:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


GQA_CASES = {"enable_gqa_bool_tril": GqaBoolMask, "enable_gqa_square_subsequent": GqaAdditiveMask,
             "repeat_interleave_kv_bool_tril": GqaRepeated, "enable_gqa_is_causal": GqaCausal}


@pytest.mark.parametrize("case", list(GQA_CASES))
def test_grouped_query_attention_masks_bound_the_triangle(case: str) -> None:
    # Note [Split heads]: the query head HQ_per_HKV * h + r of a GQA kernel covers its dim,
    # so the masked scores are a constant region as in MHA: both contractions on the
    # triangle (hand: 2 * GQA_TRI), plus element-wise work below 4 flops per score
    q = torch.randn(B, HQ, T, D)
    k, v = torch.randn(B, HKV, T, D), torch.randn(B, HKV, T, D)
    report = analyze_module(GQA_CASES[case](), (q, k, v),
                            AnalyzeOptions(archs=("H100_SXM",), validate="auto"))  # type: ignore[arg-type]
    assert report.validation is not None and report.validation.status == "passed"
    got = sum(int(x.flops) for x in report.archs[0].kernels if x.unit == "tensor"
              or "attention" in x.name)
    assert 2 * GQA_TRI <= got < 2 * GQA_TRI + 4 * B * HQ * T * T
