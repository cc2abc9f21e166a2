"""Builders of the zoo's models from torch_geometric, diffusers, monai, ultralytics and
open_clip: each from its library's config or constructor (random init, no weights, no
network), at sizes that keep the whole zoo within a few minutes on two cores."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Built = tuple[Any, tuple[Any, ...], dict[str, Any]]


def _graph() -> tuple[Any, Any]:
    import torch

    gen = torch.Generator().manual_seed(1)
    return torch.randn(20, 16, generator=gen), torch.randint(0, 20, (2, 60), generator=gen)


def pyg(cls: str, **kwargs: Any) -> Callable[[], Built]:
    """A two-layer ``torch_geometric.nn`` basic GNN (GCN, GAT, GraphSAGE, GIN)."""

    def build() -> Built:
        import torch
        import torch_geometric.nn as pyg_nn

        torch.manual_seed(0)
        model = getattr(pyg_nn, cls)(
            in_channels=16, hidden_channels=32, num_layers=2, out_channels=4, **kwargs
        )
        return model, _graph(), {}

    return build


def pyg_transformer_conv() -> Built:
    import torch
    from torch_geometric.nn import TransformerConv

    torch.manual_seed(0)
    return TransformerConv(16, 8, heads=2), _graph(), {}


def unet2d() -> Built:
    import torch
    from diffusers import UNet2DModel

    torch.manual_seed(0)
    model = UNet2DModel(
        sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
        block_out_channels=(16, 32), down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"), norm_num_groups=8, attention_head_dim=8,
    )
    return model, (torch.randn(1, 3, 16, 16), torch.tensor([10])), {}


def unet2d_condition() -> Built:
    import torch
    from diffusers import UNet2DConditionModel

    torch.manual_seed(0)
    model = UNet2DConditionModel(
        sample_size=16, in_channels=4, out_channels=4, layers_per_block=1,
        block_out_channels=(16, 32), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32,
        norm_num_groups=8, attention_head_dim=8,
    )
    return model, (torch.randn(1, 4, 16, 16), torch.tensor([10]), torch.randn(1, 8, 32)), {}


def autoencoder_kl() -> Built:
    import torch
    from diffusers import AutoencoderKL

    torch.manual_seed(0)
    model = AutoencoderKL(
        in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(16, 32),
        latent_channels=4, norm_num_groups=8, layers_per_block=1,
    )
    return model, (torch.randn(1, 3, 32, 32),), {}


def dit() -> Built:
    import torch
    from diffusers import DiTTransformer2DModel

    torch.manual_seed(0)
    model = DiTTransformer2DModel(
        num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=4,
        num_layers=2, sample_size=8, patch_size=2, num_embeds_ada_norm=10, norm_num_groups=8,
    )
    return model, (torch.randn(1, 4, 8, 8), torch.tensor([3]), torch.tensor([1])), {}


def monai_net(cls: str, **kwargs: Any) -> Callable[[], Built]:
    """A 3-D ``monai.networks.nets`` segmentation network, one channel in, two out."""

    def build() -> Built:
        import monai.networks.nets as nets
        import torch

        torch.manual_seed(0)
        model = getattr(nets, cls)(spatial_dims=3, in_channels=1, out_channels=2, **kwargs)
        return model, (torch.randn(1, 1, 16, 16, 16),), {}

    return build


def swinunetr() -> Built:
    import torch
    from monai.networks.nets import SwinUNETR

    torch.manual_seed(0)
    model = SwinUNETR(
        in_channels=1, out_channels=2, feature_size=12, spatial_dims=2,
        depths=(1, 1, 1, 1), num_heads=(1, 1, 1, 1),
    )
    return model, (torch.randn(1, 1, 64, 64),), {}


def yolo(config: str) -> Callable[[], Built]:
    """An ultralytics detection model from its packaged YAML, four classes."""

    def build() -> Built:
        import torch
        from ultralytics.nn.tasks import DetectionModel

        torch.manual_seed(0)
        model = DetectionModel(config, nc=4, verbose=False)
        return model, (torch.randn(1, 3, 64, 64),), {}

    return build


def clip_tiny() -> Built:
    import open_clip
    import torch

    torch.manual_seed(0)
    model = open_clip.CLIP(
        embed_dim=32,
        vision_cfg=open_clip.CLIPVisionCfg(
            layers=2, width=64, head_width=16, patch_size=8, image_size=32
        ),
        text_cfg=open_clip.CLIPTextCfg(
            context_length=16, vocab_size=100, width=64, heads=4, layers=2
        ),
    )
    return model, (torch.randn(1, 3, 32, 32), torch.randint(0, 100, (1, 16))), {}
