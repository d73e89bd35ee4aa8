"""PixelShuffle, PixelUnshuffle and ChannelShuffle layers (PyTorch's names, arguments and
reprs); the math is clgrad/ops/shuffle.py."""
from __future__ import annotations

from clgrad.nn.module import Module
from clgrad.ops import shuffle

__all__ = ["PixelShuffle", "PixelUnshuffle", "ChannelShuffle"]


class PixelShuffle(Module):
    """(*, C r^2, H, W) -> (*, C, H r, W r); see clgrad.nn.functional.pixel_shuffle."""

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        """F.pixel_shuffle(input, upscale_factor)."""
        return shuffle.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        """'upscale_factor=r'."""
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H r, W r) -> (*, C r^2, H, W); see clgrad.nn.functional.pixel_unshuffle."""

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        """F.pixel_unshuffle(input, downscale_factor)."""
        return shuffle.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        """'downscale_factor=r'."""
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Interleave the channels of ``groups`` groups; see F.channel_shuffle."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        """F.channel_shuffle(input, groups)."""
        return shuffle.channel_shuffle(input, self.groups)

    def extra_repr(self):
        """'groups=g'."""
        return f"groups={self.groups}"
