"""Issue 14 bug 5: a hand-written causal mask is bounded like sdpa(is_causal=True)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from solar.pipeline import AnalyzeOptions, analyze_module  # noqa: E402

B, H, T, D = 2, 4, 64, 32


class Sdpa(torch.nn.Module):
    def forward(self, q, k, v):  # type: ignore[no-untyped-def]
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


class MaskInForward(torch.nn.Module):
    def forward(self, q, k, v):  # type: ignore[no-untyped-def]
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        mask = torch.ones(T, T).tril()
        att = att.masked_fill(mask == 0, float("-inf"))
        return torch.softmax(att, dim=-1) @ v


class MaskBuffer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(self, q, k, v):  # type: ignore[no-untyped-def]
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        return torch.softmax(att, dim=-1) @ v


def _fused(module: torch.nn.Module, validate: str = "off") -> tuple[float, dict[str, float],
                                                                       tuple[str, ...]]:
    qkv = tuple(torch.randn(B, H, T, D) for _ in range(3))
    report = analyze_module(module, qkv, AnalyzeOptions(archs=("H100_SXM",),
                                                        validate=validate))  # type: ignore[arg-type]
    fused = next(b for b in report.archs[0].bounds if b.model == "fused")
    return fused.time_s, fused.compute_time_s_by_unit, report.frontend.notes


@pytest.mark.parametrize(("module", "validate"), [(MaskInForward, "off"), (MaskBuffer, "auto")])
def test_hand_written_causal_attention_matches_sdpa_is_causal(module: type, validate: str) -> None:
    # Both contractions on the triangle: 2 * (B*H) * (T(T+1)/2) * D * 2 FLOPs
    # = 2 * 8 * 2,080 * 32 * 2 = 2,129,920 at 3xTF32 on H100 (494.7 / 3 TFLOP/s):
    # 12.917 ns, exactly the sdpa(is_causal=True) figure (dense: twice that).
    want_s = 2 * 8 * 2080 * 32 * 2 / (494.7e12 / 3)
    _, sdpa, _ = _fused(Sdpa())
    _, hand, notes = _fused(module(), validate)
    assert sdpa["tensor:3xtf32"] == pytest.approx(want_s, rel=1e-9)
    assert hand["tensor:3xtf32"] == pytest.approx(want_s, rel=1e-9)
    assert any(n.startswith("constant values:") for n in notes)
    if module is MaskBuffer:
        assert any("p_bias" in n for n in notes if n.startswith("constant buffers:"))


def test_buffer_mask_is_read_without_validation() -> None:
    # --validate off: preparation still runs the real program once for the buffer's values
    # (Note [One preparation path]), so the bound is the one validation gives
    _, hand, notes = _fused(MaskBuffer(), "off")
    assert hand["tensor:3xtf32"] == pytest.approx(2 * 8 * 2080 * 32 * 2 / (494.7e12 / 3),
                                                  rel=1e-9)
    assert any("p_bias" in n for n in notes if n.startswith("constant buffers:"))


W = 16  # a sliding window: i - 15 <= j <= i


class BandInForward(torch.nn.Module):
    def __init__(self, build: str) -> None:
        super().__init__()
        self.build = build

    def forward(self, q, k, v):  # type: ignore[no-untyped-def]
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        if self.build == "float_tril_triu":
            keep = torch.ones(T, T).tril().triu(-(W - 1)) != 0
        elif self.build == "bool_tril_triu":
            keep = torch.ones(T, T, dtype=torch.bool).tril().triu(-(W - 1))
        elif self.build == "bool_and":
            ones = torch.ones(T, T, dtype=torch.bool)
            keep = ones.tril() & ones.triu(-(W - 1))
        elif self.build == "float_product":
            keep = (torch.ones(T, T).tril() * torch.ones(T, T).triu(-(W - 1))) != 0
        else:  # arange comparisons, as Mistral-style code builds it
            i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
            keep = (j <= i) & (j > i - W)
        att = att.masked_fill(~keep, float("-inf"))
        return torch.softmax(att, dim=-1) @ v


@pytest.mark.parametrize(
    "build", ["float_tril_triu", "bool_tril_triu", "bool_and", "float_product", "arange"]
)
def test_sliding_window_attention_charges_the_band(build: str) -> None:
    # Note [Conjunctions]: rows keep 1, 2, ..., 16 keys, then 16: 136 + 48 * 16 = 904 of
    # the 4,096 (i, j) pairs. Both contractions on the band: 2 * 8 * 904 * 32 * 2 =
    # 925,696 FLOPs; the scale (1) and softmax (max, exp(x - m), sum, divide: 5) per kept
    # point, 8 * 904 * 6 = 43,392 (dense: 4,489,216 FLOPs in all).
    qkv = tuple(torch.randn(B, H, T, D) for _ in range(3))
    report = analyze_module(BandInForward(build), qkv, AnalyzeOptions(archs=("H100_SXM",)))  # type: ignore[arg-type]
    assert report.validation.status == "passed"
    assert report.flops == 925_696 + 43_392
