"""Builders of the zoo's third round (issue 29): models written as users write them, from
transformers, diffusers, timm, torch_geometric, monai, open_clip and einops, each from
its config or constructor (random init, no weights, no network) at small sizes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Built = tuple[Any, tuple[Any, ...], dict[str, Any]]


def _ids(batch: int = 1, seq: int = 16, vocab: int = 128) -> Any:
    import torch

    return torch.randint(3, vocab, (batch, seq))


def hf_vision(config_cls: str, model_cls: str, size: int = 32, **cfg: Any) -> Callable[[], Built]:
    """A transformers vision model on one ``size`` x ``size`` image."""

    def build() -> Built:
        import torch
        import transformers

        torch.manual_seed(0)
        model = getattr(transformers, model_cls)(getattr(transformers, config_cls)(**cfg))
        return model, (torch.randn(1, 3, size, size),), {}

    return build


def hf_bart() -> Built:
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = transformers.BartConfig(
        d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=128,
        max_position_embeddings=64, use_cache=False,
    )
    return transformers.BartForConditionalGeneration(cfg), (_ids(),), {}


def hf_t5_encoder_padded() -> Built:
    """T5's encoder on a padded batch (its relative-position bias and padding mask)."""
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = transformers.T5Config(vocab_size=128, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                                num_heads=4, feed_forward_proj="gated-gelu")
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[1, 10:] = 0
    return transformers.T5EncoderModel(cfg), (_ids(2),), {"attention_mask": mask}


def hf_llama_left_padded() -> Built:
    """Llama's loss on a left-padded batch: the pad rows of its attention see no key
    (Note [Fully masked rows] in ops_attention.py)."""
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, vocab_size=128,
                                   use_cache=False)
    ids = _ids(2)
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[1, :5] = 0
    return transformers.LlamaForCausalLM(cfg), (ids,), {"attention_mask": mask, "labels": ids}


def hf_clip() -> Built:
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = transformers.CLIPConfig(
        text_config={"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                     "num_attention_heads": 4, "vocab_size": 128, "max_position_embeddings": 16},
        vision_config={"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                       "num_attention_heads": 4, "image_size": 32, "patch_size": 8},
        projection_dim=32,
    )
    return transformers.CLIPModel(cfg), (), {"input_ids": _ids(2),
                                             "pixel_values": torch.randn(2, 3, 32, 32)}


def hf_detr() -> Built:
    import torch
    import transformers

    torch.manual_seed(0)
    backbone = transformers.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 32, 64],
                                         depths=[1, 1, 1, 1], out_features=["stage4"])
    cfg = transformers.DetrConfig(
        use_timm_backbone=False, backbone_config=backbone, use_pretrained_backbone=False,
        d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=10,
        num_labels=5,
    )
    return transformers.DetrForObjectDetection(cfg), (torch.randn(1, 3, 64, 64),), {}


def sd3() -> Built:
    import torch
    from diffusers import SD3Transformer2DModel

    torch.manual_seed(0)
    model = SD3Transformer2DModel(
        sample_size=8, patch_size=2, in_channels=4, num_layers=2, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=32, caption_projection_dim=32,
        pooled_projection_dim=16, out_channels=4, pos_embed_max_size=16,
    )
    inputs = {"hidden_states": torch.randn(1, 4, 8, 8),
              "encoder_hidden_states": torch.randn(1, 6, 32),
              "pooled_projections": torch.randn(1, 16), "timestep": torch.tensor([3])}
    return model, (), inputs


def flux() -> Built:
    import torch
    from diffusers import FluxTransformer2DModel

    torch.manual_seed(0)
    model = FluxTransformer2DModel(
        patch_size=1, in_channels=16, num_layers=1, num_single_layers=1, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=32, pooled_projection_dim=16,
        guidance_embeds=False, axes_dims_rope=(4, 6, 6),
    )
    img_ids = torch.zeros(16, 3)
    img_ids[:, 1] = torch.arange(16) // 4
    img_ids[:, 2] = torch.arange(16) % 4
    inputs = {"hidden_states": torch.randn(1, 16, 16),
              "encoder_hidden_states": torch.randn(1, 6, 32),
              "pooled_projections": torch.randn(1, 16), "timestep": torch.tensor([0.5]),
              "img_ids": img_ids, "txt_ids": torch.zeros(6, 3)}
    return model, (), inputs


def pixart() -> Built:
    import torch
    from diffusers import PixArtTransformer2DModel

    torch.manual_seed(0)
    model = PixArtTransformer2DModel(
        num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=8,
        num_layers=2, cross_attention_dim=32, sample_size=8, patch_size=2, caption_channels=24,
        norm_num_groups=8,
    )
    cond = {"resolution": None, "aspect_ratio": None}
    return model, (torch.randn(1, 4, 8, 8),), {"encoder_hidden_states": torch.randn(1, 6, 24),
                                               "timestep": torch.tensor([3]),
                                               "added_cond_kwargs": cond}


def controlnet() -> Built:
    import torch
    from diffusers import ControlNetModel

    torch.manual_seed(0)
    model = ControlNetModel(
        in_channels=4, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        block_out_channels=(16, 32), layers_per_block=1, cross_attention_dim=32,
        norm_num_groups=8, attention_head_dim=8, conditioning_embedding_out_channels=(8, 16),
    )
    inputs = (torch.randn(1, 4, 16, 16), torch.tensor([10]))
    return model, inputs, {"encoder_hidden_states": torch.randn(1, 8, 32),
                           "controlnet_cond": torch.randn(1, 3, 32, 32)}


def vq_model() -> Built:
    """A VQ autoencoder: its codebook lookup is ``torch.cdist`` over 256 rows."""
    import torch
    from diffusers import VQModel

    torch.manual_seed(0)
    model = VQModel(
        in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(16, 32),
        layers_per_block=1, latent_channels=4, num_vq_embeddings=32, norm_num_groups=8,
        vq_embed_dim=4,
    )
    return model, (torch.randn(1, 3, 32, 32),), {}


def pyg_pair(make: Callable[[Any], tuple[Any, Any]], edge_dim: int = 0) -> Callable[[], Built]:
    """Two graph convolutions with a ReLU between, on the zoo's 20-node graph."""

    def build() -> Built:
        import torch
        import torch_geometric.nn as pyg_nn

        class Pair(torch.nn.Module):  # type: ignore[misc]
            def __init__(self) -> None:
                super().__init__()
                self.c1, self.c2 = make(pyg_nn)

            def forward(self, x: Any, edge_index: Any, *edge: Any) -> Any:
                return self.c2(self.c1(x, edge_index, *edge).relu(), edge_index, *edge)

        torch.manual_seed(0)
        gen = torch.Generator().manual_seed(1)
        x, edges = torch.randn(20, 16, generator=gen), torch.randint(0, 20, (2, 60), generator=gen)
        extra = (torch.randn(60, edge_dim, generator=gen),) if edge_dim else ()
        return Pair(), (x, edges, *extra), {}

    return build


def pyg_pooled() -> Built:
    """A GCN layer, then mean and max pooling per graph of a four-graph batch."""
    import torch
    import torch_geometric.nn as pyg_nn

    class Pooled(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.conv, self.head = pyg_nn.GCNConv(16, 32), torch.nn.Linear(64, 3)

        def forward(self, x: Any, edge_index: Any, batch: Any) -> Any:
            h = self.conv(x, edge_index).relu()
            pooled = (pyg_nn.global_mean_pool(h, batch, size=4),
                      pyg_nn.global_max_pool(h, batch, size=4))
            return self.head(torch.cat(pooled, dim=-1))

    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    x, edges = torch.randn(20, 16, generator=gen), torch.randint(0, 20, (2, 60), generator=gen)
    return Pooled(), (x, edges, torch.arange(20) // 5), {}


def monai(cls: str, shape: tuple[int, ...], **kwargs: Any) -> Callable[[], Built]:
    """A ``monai.networks.nets`` network on one random volume or image of ``shape``."""

    def build() -> Built:
        import monai.networks.nets as nets
        import torch

        torch.manual_seed(0)
        return getattr(nets, cls)(**kwargs), (torch.randn(*shape),), {}

    return build


def clip_resnet() -> Built:
    """open_clip's CLIP with a ModifiedResNet image tower (attention pooling)."""
    import open_clip
    import torch

    torch.manual_seed(0)
    model = open_clip.CLIP(
        embed_dim=32,
        vision_cfg=open_clip.CLIPVisionCfg(layers=(1, 1, 1, 1), width=16, image_size=64),
        text_cfg=open_clip.CLIPTextCfg(context_length=16, vocab_size=100, width=64, heads=4,
                                       layers=2),
    )
    return model, (torch.randn(2, 3, 64, 64), torch.randint(0, 100, (2, 16))), {}


def einops_vit() -> Built:
    """A ViT written with einops: ``Rearrange`` patches, ``rearrange`` heads, ``einsum``."""
    import torch
    from einops import rearrange, repeat
    from einops.layers.torch import Rearrange

    class Attention(torch.nn.Module):  # type: ignore[misc]
        def __init__(self, dim: int, heads: int) -> None:
            super().__init__()
            self.heads = heads
            self.qkv = torch.nn.Linear(dim, 3 * dim, bias=False)
            self.out = torch.nn.Linear(dim, dim)

        def forward(self, x: Any) -> Any:
            q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads)
                       for t in self.qkv(x).chunk(3, dim=-1))
            att = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5
            o = torch.einsum("bhij,bhjd->bhid", att.softmax(-1), v)
            return self.out(rearrange(o, "b h n d -> b n (h d)"))

    class ViT(torch.nn.Module):  # type: ignore[misc]
        def __init__(self, dim: int = 64, patch: int = 8) -> None:
            super().__init__()
            self.embed = torch.nn.Sequential(
                Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch, p2=patch),
                torch.nn.Linear(patch * patch * 3, dim))
            self.cls = torch.nn.Parameter(torch.randn(1, 1, dim))
            self.norm, self.att = torch.nn.LayerNorm(dim), Attention(dim, 4)
            self.head = torch.nn.Linear(dim, 10)

        def forward(self, img: Any) -> Any:
            x = self.embed(img)
            x = torch.cat([repeat(self.cls, "1 1 d -> b 1 d", b=x.shape[0]), x], dim=1)
            x = x + self.att(self.norm(x))
            return self.head(x[:, 0])

    torch.manual_seed(0)
    return ViT(), (torch.randn(2, 3, 32, 32),), {}


def einops_mix() -> Built:
    """einops layers and functions: ``EinMix`` token and channel mixing, ``Reduce``,
    ``reduce`` and ``einsum``."""
    import torch
    from einops import einsum, reduce
    from einops.layers.torch import EinMix, Rearrange, Reduce

    class Mixer(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.patch = Rearrange("b c (h p) (w q) -> b (h w) (p q c)", p=4, q=4)
            self.mix = EinMix("b t c -> b t d", weight_shape="c d", bias_shape="d", c=48, d=32)
            self.tok = EinMix("b t d -> b s d", weight_shape="t s", t=64, s=64)
            self.pool = Reduce("b t d -> b d", "mean")
            self.w = torch.nn.Parameter(torch.randn(32, 10))

        def forward(self, x: Any) -> Any:
            h = self.mix(self.patch(x)).relu()
            h = h + self.tok(h)
            top = reduce(h, "b t d -> b d", "max")
            return einsum(self.pool(h) + top, self.w, "b d, d k -> b k")

    torch.manual_seed(0)
    return Mixer(), (torch.randn(2, 3, 32, 32),), {}
