"""Regression and classification losses: MSE, L1, smooth L1, Huber, BCE, BCE with logits,
KL divergence, NLL, hinge embedding, margin ranking, soft margin, multi-margin, triplet
margin, cosine embedding, and cosine similarity."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4
FEATURES = 6


class Model(nn.Module):
    def forward(
        self, x: torch.Tensor, y: torch.Tensor, p: torch.Tensor, t: torch.Tensor,
        labels: torch.Tensor, sign: torch.Tensor, w: torch.Tensor,
    ) -> tuple[torch.Tensor, ...]:
        return (
            F.mse_loss(x, y),
            F.mse_loss(x, y, reduction="none"),
            F.l1_loss(x, y, reduction="sum"),
            F.smooth_l1_loss(x, y, beta=0.5),
            F.huber_loss(x, y, delta=0.7, reduction="sum"),
            F.binary_cross_entropy(p, t, weight=w),
            F.binary_cross_entropy_with_logits(x, t, pos_weight=w, reduction="none"),
            F.kl_div(F.log_softmax(x, dim=1), F.softmax(y, dim=1), reduction="batchmean"),
            F.nll_loss(F.log_softmax(x, dim=1), labels, weight=w),
            F.hinge_embedding_loss(x, sign, margin=0.5),
            F.margin_ranking_loss(x[:, 0], y[:, 0], sign[:, 0], margin=0.1),
            F.soft_margin_loss(x, sign),
            F.multi_margin_loss(x, labels, margin=0.8),
            F.triplet_margin_loss(x, y, p, margin=0.5),
            F.cosine_embedding_loss(x, y, sign[:, 0]),
            F.cosine_similarity(x, y, dim=1),
        )


def get_inputs():
    x, y = torch.randn(BATCH, FEATURES), torch.randn(BATCH, FEATURES)
    p, t = torch.rand(BATCH, FEATURES) * 0.9 + 0.05, torch.rand(BATCH, FEATURES)
    labels = torch.randint(0, FEATURES, (BATCH,))
    sign = torch.where(torch.rand(BATCH, FEATURES) > 0.5, 1.0, -1.0)
    return [x, y, p, t, labels, sign, torch.rand(FEATURES) + 0.5]


def get_init_inputs():
    return []
