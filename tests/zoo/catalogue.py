"""The model zoo: real models from torchvision, timm and transformers, built from their
constructors (random init, nothing downloaded) at small batch and sequence sizes.

Each `ZooModel` builds ``(module, inputs, kwargs)``; `tests/zoo/test_zoo.py` analyses
every one and `benchmarks/zoo.py` prints the table. Sizes are chosen so the whole zoo
runs in a few minutes on two cores: images 64x64 where the architecture allows (ViTs
need their patch grid, so they get a smaller ``image_size`` where the constructor takes
one), transformers with 2 layers, hidden 64, sequence 16.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import catalogue_libs as libs
import catalogue_more as more

import solar  # noqa: F401  (as for every user: PyPI's CUDA torchvision imports, solar.torchvision_shim)

Built = tuple[Any, tuple[Any, ...], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class ZooModel:
    """One zoo entry.

    Attributes:
        name: ``library/model``.
        build: makes ``(module, positional inputs, keyword inputs)``, seeded.
        slow: too heavy for the default CI run (``-m slow`` runs it).
        validate: the ``--validate`` mode the zoo uses for it.
        note: why an entry is not plain (slow, validation off).
        train: CI also bounds and validates its training step (one model per library).
    """

    name: str
    build: Callable[[], Built] = field(repr=False)
    slow: bool = False
    validate: str = "auto"
    note: str = ""
    train: bool = False

    @property
    def library(self) -> str:
        """The import name of the library it comes from (``torch_geometric/gcn``)."""
        return self.name.split("/")[0]


def _image(batch: int = 1, size: int = 64) -> tuple[Any, ...]:
    import torch

    return (torch.randn(batch, 3, size, size),)


def _tv(name: str, size: int = 64, **kwargs: Any) -> Callable[[], Built]:
    def build() -> Built:
        import torch
        import torchvision

        torch.manual_seed(0)
        model = torchvision.models.get_model(name, weights=None, **kwargs)
        return model, _image(1, size), {}

    return build


def _tv_seg(name: str, size: int = 64, **kwargs: Any) -> Callable[[], Built]:
    def build() -> Built:
        import torch
        import torchvision

        torch.manual_seed(0)
        model = torchvision.models.get_model(
            name, weights=None, weights_backbone=None, num_classes=4, **kwargs
        )
        return model, _image(1, size), {}

    return build


def _timm(name: str, size: int = 64, **kwargs: Any) -> Callable[[], Built]:
    def build() -> Built:
        import timm
        import torch

        torch.manual_seed(0)
        model = timm.create_model(name, pretrained=False, num_classes=10, **kwargs)
        return model, _image(1, size), {}

    return build


_SMALL = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "vocab_size": 128,
    "max_position_embeddings": 64,
}


def _hf_causal(config_cls: str, seq: int = 16, **overrides: Any) -> Callable[[], Built]:
    def build() -> Built:
        import torch
        import transformers

        torch.manual_seed(0)
        cfg = getattr(transformers, config_cls)(**{**_SMALL, **overrides})
        cfg.use_cache = False
        model = transformers.AutoModelForCausalLM.from_config(cfg)
        ids = torch.randint(0, cfg.vocab_size, (1, seq))
        return model, (ids,), {}

    return build


def _hf_bert(config_cls: str, model_cls: str, seq: int = 16, **over: Any) -> Callable[[], Built]:
    def build() -> Built:
        import torch
        import transformers

        torch.manual_seed(0)
        cfg = getattr(transformers, config_cls)(**{**_SMALL, **over})
        model = getattr(transformers, model_cls)(cfg)
        ids = torch.randint(0, cfg.vocab_size, (1, seq))
        return model, (ids,), {"attention_mask": torch.ones(1, seq, dtype=torch.long)}

    return build


def _hf_t5() -> Built:
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = transformers.T5Config(
        vocab_size=128,
        d_model=64,
        d_kv=16,
        d_ff=128,
        num_layers=2,
        num_heads=4,
        use_cache=False,
    )
    model = transformers.T5ForConditionalGeneration(cfg)
    ids = torch.randint(0, 128, (1, 16))
    return model, (), {"input_ids": ids, "decoder_input_ids": ids[:, :8]}


def _hf_whisper() -> Built:
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = transformers.WhisperConfig(
        vocab_size=128,
        num_mel_bins=16,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        d_model=64,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        max_source_positions=32,
        max_target_positions=32,
        use_cache=False,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
    )
    model = transformers.WhisperForConditionalGeneration(cfg)
    feats = torch.randn(1, 16, 64)
    return model, (feats,), {"decoder_input_ids": torch.randint(0, 128, (1, 8))}


def _hf_vit() -> Built:
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = transformers.ViTConfig(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        image_size=32,
        patch_size=8,
        num_labels=10,
    )
    return transformers.ViTForImageClassification(cfg), _image(1, 32), {}


def _hf_wav2vec2() -> Built:
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = transformers.Wav2Vec2Config(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        conv_dim=(32,) * 7,
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4,
    )
    return transformers.Wav2Vec2Model(cfg), (torch.randn(1, 4000),), {}


ZOO: tuple[ZooModel, ...] = (
    # torchvision classifiers
    ZooModel("torchvision/resnet18", _tv("resnet18")),
    ZooModel("torchvision/resnet50", _tv("resnet50")),
    ZooModel("torchvision/vit_b_16", _tv("vit_b_16", size=32, image_size=32), slow=True),
    ZooModel("torchvision/swin_t", _tv("swin_t"), slow=True),
    ZooModel("torchvision/convnext_tiny", _tv("convnext_tiny")),
    ZooModel("torchvision/mobilenet_v3_small", _tv("mobilenet_v3_small")),
    ZooModel("torchvision/efficientnet_b0", _tv("efficientnet_b0")),
    ZooModel("torchvision/densenet121", _tv("densenet121"), slow=True),
    ZooModel("torchvision/regnet_y_400mf", _tv("regnet_y_400mf")),
    ZooModel("torchvision/squeezenet1_0", _tv("squeezenet1_0")),
    ZooModel("torchvision/shufflenet_v2_x0_5", _tv("shufflenet_v2_x0_5")),
    ZooModel("torchvision/mnasnet0_5", _tv("mnasnet0_5")),
    ZooModel("torchvision/googlenet", _tv("googlenet", init_weights=True, aux_logits=False)),
    # torchvision segmentation heads
    ZooModel("torchvision/fcn_resnet50", _tv_seg("fcn_resnet50")),
    ZooModel("torchvision/deeplabv3_mobilenet_v3_large", _tv_seg("deeplabv3_mobilenet_v3_large")),
    ZooModel("torchvision/lraspp_mobilenet_v3_large", _tv_seg("lraspp_mobilenet_v3_large")),
    # timm
    ZooModel("timm/mixer_s16_224", _timm("mixer_s16_224", img_size=64)),
    ZooModel("timm/convnext_atto", _timm("convnext_atto")),
    ZooModel("timm/deit_tiny_patch16_224", _timm("deit_tiny_patch16_224", img_size=64)),
    ZooModel("timm/resnet18d", _timm("resnet18d")),
    ZooModel("timm/mobilevit_xxs", _timm("mobilevit_xxs")),
    ZooModel("timm/poolformer_s12", _timm("poolformer_s12")),
    ZooModel("timm/levit_128s", _timm("levit_128s", img_size=64)),
    ZooModel(
        "timm/volo_d1_224",
        _timm("volo_d1_224", img_size=64),
        note="outlook attention folds its windows back (F.fold: col2im)",
    ),
    ZooModel(
        "timm/coat_lite_tiny",
        _timm("coat_lite_tiny", img_size=64),
        note="position encodings shared by two module paths (Note [Shared submodules])",
    ),
    # transformers, shrunk
    ZooModel(
        "transformers/gpt2",
        _hf_causal(
            "GPT2Config",
            n_embd=64,
            n_layer=2,
            n_head=4,
            n_positions=64,
            bos_token_id=0,
            eos_token_id=0,
        ),
    ),
    ZooModel("transformers/llama", _hf_causal("LlamaConfig", num_key_value_heads=2)),
    ZooModel("transformers/mistral", _hf_causal("MistralConfig", num_key_value_heads=2)),
    ZooModel("transformers/qwen2", _hf_causal("Qwen2Config", num_key_value_heads=2)),
    ZooModel(
        "transformers/mixtral",
        _hf_causal(
            "MixtralConfig", num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2
        ),
    ),
    ZooModel("transformers/bert", _hf_bert("BertConfig", "BertForSequenceClassification")),
    ZooModel(
        "transformers/roberta",
        _hf_bert("RobertaConfig", "RobertaForSequenceClassification", pad_token_id=1),
    ),
    ZooModel("transformers/t5", _hf_t5),
    ZooModel("transformers/whisper", _hf_whisper),
    ZooModel("transformers/vit", _hf_vit),
    ZooModel(
        "transformers/wav2vec2",
        _hf_wav2vec2,
        note="weight-normed positional convolution (_weight_norm_interface)",
    ),
    # torch_geometric: node features (20, 16), 60 random edges (self-loops: mask indexing)
    ZooModel("torch_geometric/gcn", libs.pyg("GCN"), train=True),
    ZooModel("torch_geometric/gat", libs.pyg("GAT", heads=2)),
    ZooModel("torch_geometric/graphsage", libs.pyg("GraphSAGE")),
    ZooModel("torch_geometric/gin", libs.pyg("GIN")),
    ZooModel("torch_geometric/transformer_conv", libs.pyg_transformer_conv),
    # diffusers, shrunk (16x16 latents, two blocks)
    ZooModel("diffusers/unet2d", libs.unet2d, train=True),
    ZooModel("diffusers/unet2d_condition", libs.unet2d_condition),
    ZooModel("diffusers/autoencoder_kl", libs.autoencoder_kl),
    ZooModel("diffusers/dit", libs.dit),
    # monai, 3-D at 16^3 (SwinUNETR 2-D at 64^2: its last stage needs 2^5 per dim)
    ZooModel("monai/unet3d", libs.monai_net("UNet", channels=(8, 16, 32), strides=(2, 2),
                                            num_res_units=1), train=True),
    ZooModel("monai/segresnet", libs.monai_net("SegResNet", init_filters=8,
                                               blocks_down=(1, 1, 1), blocks_up=(1, 1))),
    ZooModel("monai/dynunet", libs.monai_net("DynUNet", kernel_size=[3, 3, 3],
                                             strides=[1, 2, 2], upsample_kernel_size=[2, 2],
                                             filters=[8, 16, 32])),
    ZooModel("monai/swinunetr", libs.swinunetr),
    # ultralytics, from the packaged model YAMLs (no weights), 64x64
    ZooModel("ultralytics/yolov8n", libs.yolo("yolov8n.yaml"), train=True),
    ZooModel("ultralytics/yolo11n", libs.yolo("yolo11n.yaml")),
    # open_clip, a two-layer CLIP from its config classes
    ZooModel("open_clip/clip_tiny", libs.clip_tiny, train=True),
    *(ZooModel(name, build, slow=True, note=note, train=train)
      for name, build, note, train in (  # issue 29, round three: -m slow runs them
        ("transformers/gemma2", _hf_causal("Gemma2Config", num_key_value_heads=2, head_dim=16,
                                           sliding_window=8), "", True),
        ("transformers/phi3", _hf_causal("Phi3Config", num_key_value_heads=2, pad_token_id=0),
         "", False),
        ("transformers/qwen2_moe", _hf_causal(
            "Qwen2MoeConfig", num_key_value_heads=2, moe_intermediate_size=32,
            shared_expert_intermediate_size=64, num_experts=4, num_experts_per_tok=2), "", True),
        ("transformers/gpt_neox", _hf_causal("GPTNeoXConfig"), "", False),
        ("transformers/bloom", _hf_causal("BloomConfig"), "", False),
        ("transformers/falcon", _hf_causal("FalconConfig"), "", False),
        ("transformers/opt", _hf_causal("OPTConfig", ffn_dim=128, word_embed_proj_dim=64), "",
         False),
        ("transformers/gemma", _hf_causal("GemmaConfig", num_key_value_heads=1, head_dim=16),
         "", False),
        ("transformers/phi", _hf_causal("PhiConfig"), "", False),
        ("transformers/olmo", _hf_causal("OlmoConfig", pad_token_id=0), "", False),
        ("transformers/starcoder2", _hf_causal("Starcoder2Config", num_key_value_heads=2), "",
         False),
        ("transformers/mamba", _hf_causal("MambaConfig", state_size=8, expand=2,
                                          conv_kernel=4), "depthwise causal conv1d", True),
        ("transformers/llama_left_padded", more.hf_llama_left_padded,
         "pad rows see no key (Note [Fully masked rows])", True),
        ("transformers/albert", _hf_bert("AlbertConfig", "AlbertForMaskedLM",
                                         embedding_size=32), "", False),
        ("transformers/distilbert", _hf_bert("DistilBertConfig",
                                             "DistilBertForSequenceClassification",
                                             hidden_dim=128), "", False),
        ("transformers/electra", _hf_bert("ElectraConfig", "ElectraForPreTraining",
                                          embedding_size=32), "", False),
        ("transformers/deberta_v2", _hf_bert(
            "DebertaV2Config", "DebertaV2ForSequenceClassification", relative_attention=True,
            position_buckets=8, pos_att_type=["p2c", "c2p"]), "", True),
        ("transformers/modernbert", _hf_bert("ModernBertConfig", "ModernBertForMaskedLM",
                                             global_attn_every_n_layers=2, local_attention=8,
                                             pad_token_id=0), "", False),
        ("transformers/bart", more.hf_bart, "", True),
        ("transformers/t5_encoder_padded", more.hf_t5_encoder_padded, "", False),
        ("transformers/clip", more.hf_clip, "", True),
        ("transformers/detr", more.hf_detr, "", False),
        ("transformers/swin", more.hf_vision(
            "SwinConfig", "SwinForImageClassification", image_size=32, patch_size=4,
            embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4, num_labels=10), "",
         True),
        ("transformers/segformer", more.hf_vision(
            "SegformerConfig", "SegformerForSemanticSegmentation", num_encoder_blocks=2,
            depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32], num_attention_heads=[1, 2],
            patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[2, 2], decoder_hidden_size=32,
            num_labels=4), "", False),
        ("transformers/dinov2", more.hf_vision(
            "Dinov2Config", "Dinov2Model", hidden_size=64, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=128, image_size=32, patch_size=8), "",
         False),
        ("transformers/beit", more.hf_vision(
            "BeitConfig", "BeitForImageClassification", hidden_size=64, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=128, image_size=32, patch_size=8,
            use_relative_position_bias=True, num_labels=10),
         "lru_cache'd position index (Note [Function caches])", False),
        ("transformers/resnet", more.hf_vision(
            "ResNetConfig", "ResNetForImageClassification", embedding_size=16,
            hidden_sizes=[16, 32], depths=[1, 1], layer_type="bottleneck", num_labels=10), "",
         False),
        ("transformers/mobilevit", more.hf_vision(
            "MobileViTConfig", "MobileViTForImageClassification", image_size=32,
            hidden_sizes=[32, 48, 64], neck_hidden_sizes=[8, 16, 24, 32, 48, 64, 96],
            num_labels=10), "", False),
        ("diffusers/sd3_transformer", more.sd3, "", True),
        ("diffusers/flux_transformer", more.flux, "", True),
        ("diffusers/pixart_transformer", more.pixart, "", True),
        ("diffusers/controlnet", more.controlnet, "", False),
        ("diffusers/vq_model", more.vq_model, "codebook cdist (_euclidean_dist)", True),
        ("timm/efficientnet_b0", _timm("efficientnet_b0"), "depthwise backward", True),
        ("timm/regnetx_002", _timm("regnetx_002"), "", False),
        ("timm/vit_tiny_patch16_224", _timm("vit_tiny_patch16_224", size=32, img_size=32,
                                            patch_size=8), "", True),
        ("timm/mobilenetv3_small_100", _timm("mobilenetv3_small_100"), "", False),
        ("timm/ghostnet_100", _timm("ghostnet_100"), "", False),
        ("timm/edgenext_xx_small", _timm("edgenext_xx_small"), "", False),
        ("timm/fastvit_t8", _timm("fastvit_t8"), "", False),
        ("timm/repvgg_a0", _timm("repvgg_a0"), "", False),
        ("timm/cait_xxs24_224", _timm("cait_xxs24_224", size=32, img_size=32, patch_size=8,
                                      depth=2), "", False),
        ("timm/maxvit_tiny_rw_224", _timm("maxvit_tiny_rw_224", img_size=64), "", False),
        ("timm/hrnet_w18_small", _timm("hrnet_w18_small"), "", False),
        ("torch_geometric/gatv2", more.pyg_pair(
            lambda g: (g.GATv2Conv(16, 8, heads=2), g.GATv2Conv(16, 4))), "", True),
        ("torch_geometric/cheb", more.pyg_pair(
            lambda g: (g.ChebConv(16, 32, K=3), g.ChebConv(32, 4, K=3))), "", False),
        ("torch_geometric/sgconv", more.pyg_pair(
            lambda g: (g.SGConv(16, 32, K=2), g.SGConv(32, 4, K=2))), "", False),
        ("torch_geometric/graphconv", more.pyg_pair(
            lambda g: (g.GraphConv(16, 32, aggr="max"), g.GraphConv(32, 4, aggr="mean"))), "",
         False),
        ("torch_geometric/tag", more.pyg_pair(
            lambda g: (g.TAGConv(16, 32, K=2), g.TAGConv(32, 4, K=2))), "", False),
        ("torch_geometric/resgated", more.pyg_pair(
            lambda g: (g.ResGatedGraphConv(16, 32), g.ResGatedGraphConv(32, 4))), "", False),
        ("torch_geometric/gine", more.pyg_pair(
            lambda g: (g.GINEConv(_linear(16, 32), edge_dim=8),
                       g.GINEConv(_linear(32, 4), edge_dim=8)), edge_dim=8), "", True),
        ("torch_geometric/edgeconv", more.pyg_pair(
            lambda g: (g.EdgeConv(_linear(32, 32), aggr="max"), g.EdgeConv(_linear(64, 4)))),
         "", False),
        ("torch_geometric/global_pool", more.pyg_pooled, "", True),
        ("monai/attention_unet", more.monai(
            "AttentionUnet", (1, 1, 32, 32), spatial_dims=2, in_channels=1, out_channels=2,
            channels=(8, 16, 32), strides=(2, 2)), "", False),
        ("monai/unetr", more.monai(
            "UNETR", (1, 1, 32, 32, 32), in_channels=1, out_channels=2, img_size=(32, 32, 32),
            feature_size=8, hidden_size=48, mlp_dim=96, num_heads=4), "", True),
        ("monai/vnet", more.monai("VNet", (1, 1, 16, 16, 16), spatial_dims=3, in_channels=1,
                                  out_channels=2), "", False),
        ("monai/densenet121", more.monai("DenseNet121", (1, 1, 32, 32), spatial_dims=2,
                                         in_channels=1, out_channels=3), "", False),
        ("monai/highresnet", more.monai("HighResNet", (1, 1, 32, 32), spatial_dims=2,
                                        in_channels=1, out_channels=2), "", False),
        ("monai/resnet3d", more.monai(
            "ResNet", (1, 1, 16, 16, 16), block="basic", layers=[1, 1, 1, 1],
            block_inplanes=[8, 16, 32, 64], spatial_dims=3, n_input_channels=1, num_classes=2),
         "", False),
        ("open_clip/clip_resnet", more.clip_resnet, "ModifiedResNet, attention pooling", False),
        ("einops/vit", more.einops_vit, "", True),
        ("einops/mixer", more.einops_mix, "EinMix, Reduce, einsum", True),
      )),
)


def _linear(n_in: int, n_out: int) -> Any:
    import torch

    return torch.nn.Sequential(torch.nn.Linear(n_in, n_out), torch.nn.ReLU())

