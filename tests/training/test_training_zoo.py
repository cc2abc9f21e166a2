"""``--train`` on zoo models built from their constructors (no weights downloaded):
torchvision ResNet-18, timm ViT, Hugging Face GPT-2, BERT and Mixtral at small sizes (the
whole zoo: ``benchmarks/zoo.py --train``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from solar.pipeline import AnalyzeOptions, analyze_module

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "zoo"))


def _step(model: object, inputs: list[object], optimizer: str = "adamw") -> object:
    torch.manual_seed(0)
    options = AnalyzeOptions(
        train_step=True,
        optimizer=optimizer,
        cache="cold",
        time_budget_s=900.0,  # type: ignore[arg-type]
    )
    return analyze_module(model, inputs, options)


class _Logits(torch.nn.Module):
    """A Hugging Face model returning one tensor (its logits or last hidden state)."""

    def __init__(self, model: torch.nn.Module, field: str) -> None:
        super().__init__()
        self.model, self.field = model, field

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return getattr(self.model(ids), self.field)  # type: ignore[no-any-return]


def _check(report: object) -> None:
    r = report
    assert r.validation.status == "passed", r.validation  # type: ignore[attr-defined]
    # dropout's mask draws are filled from the real run's (Note [Random ops])
    assert r.coverage.complete, r.coverage.uncovered  # type: ignore[attr-defined]
    phases = {p.phase: p for p in r.training.phases}  # type: ignore[attr-defined]
    assert phases["backward"].flops > 1.5 * phases["forward"].flops


def _transformers() -> object:
    return pytest.importorskip("transformers")


def test_gpt2() -> None:
    transformers: Any = _transformers()
    cfg = transformers.GPT2Config(
        n_layer=2,
        n_embd=64,
        n_head=4,
        vocab_size=100,
        n_positions=32,
        bos_token_id=0,
        eos_token_id=0,
    )
    torch.manual_seed(0)
    model = _Logits(transformers.GPT2LMHeadModel(cfg), "logits")
    _check(_step(model, [torch.randint(0, 100, (2, 16))]))


def test_bert() -> None:
    transformers: Any = _transformers()
    cfg = transformers.BertConfig(
        num_hidden_layers=2,
        hidden_size=64,
        num_attention_heads=4,
        intermediate_size=128,
        vocab_size=100,
        max_position_embeddings=32,
    )
    torch.manual_seed(0)
    model = _Logits(transformers.BertModel(cfg), "last_hidden_state")
    _check(_step(model, [torch.randint(0, 100, (2, 16))]))


@pytest.mark.slow
def test_vit() -> None:
    timm = pytest.importorskip("timm")
    torch.manual_seed(0)
    model = timm.create_model(
        "vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8, num_classes=10
    )
    _check(_step(model, [torch.randn(2, 3, 32, 32)]))


@pytest.mark.slow
def test_resnet18() -> None:
    import torchvision

    torch.manual_seed(0)
    # batch 4 at 32x32: layer4's batch norm sees 4 values per channel (2 would make every
    # upstream gradient exactly zero, i.e. rounding noise: docs/validation.md)
    model = torchvision.models.resnet18(num_classes=10)
    _check(_step(model, [torch.randn(4, 3, 32, 32)], optimizer="sgd"))


def test_mixtral() -> None:
    """Grouped-query attention backward (4 query heads over 2 key heads, under
    ``enable_gqa``) and the experts' ``_grouped_mm`` weight gradient."""
    transformers: Any = _transformers()
    cfg = transformers.MixtralConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_local_experts=4,
        num_experts_per_tok=2,
        vocab_size=100,
        max_position_embeddings=32,
        use_cache=False,
    )
    torch.manual_seed(0)
    model = _Logits(transformers.MixtralForCausalLM(cfg), "logits")
    _check(_step(model, [torch.randint(0, 100, (2, 16))]))
