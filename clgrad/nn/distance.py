"""Distance layers with PyTorch's names, arguments and defaults (torch.nn.modules.distance):
CosineSimilarity, PairwiseDistance. The math and gradients live in clgrad/ops/loss.py."""
from __future__ import annotations

from clgrad.nn import functional as F
from clgrad.nn.module import Module

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """sum(x1 x2) / (max(||x1||, eps) max(||x2||, eps)) along ``dim``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        """x1, x2 broadcast to (*S) -> S without ``dim``. See F.cosine_similarity."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """||x1 - x2 + eps||_p along the last dim."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        """(*S, D) -> S (S + (1,) with ``keepdim``). See F.pairwise_distance."""
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
