"""Upsample and its fixed-mode variants (PyTorch's names); see clgrad/ops/upsample.py."""
from __future__ import annotations

from clgrad.nn import functional as F
from clgrad.nn.module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    """F.interpolate with fixed ``size`` or ``scale_factor``, ``mode`` and ``align_corners``."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest",
                 align_corners=None, recompute_scale_factor=None):
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, x):
        """Resize ``x`` with F.interpolate and this layer's size/scale_factor, mode, align_corners.

        Shapes:  (N, C, L) or (N, C, H, W) -> same N, C, resized; see
                 clgrad.nn.functional.interpolate (modes supported, errors)
        """
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.recompute_scale_factor)

    def extra_repr(self):
        """'scale_factor=F, mode=M' (or 'size=S, mode=M'), as PyTorch's repr."""
        what = (f"scale_factor={float(self.scale_factor)}"
                if self.scale_factor is not None and not isinstance(self.scale_factor, tuple)
                else f"scale_factor={tuple(float(f) for f in self.scale_factor)}"
                if self.scale_factor is not None
                else f"size={self.size}")
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Upsample(mode='nearest')."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample(mode='bilinear', align_corners=True)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "bilinear", True)
