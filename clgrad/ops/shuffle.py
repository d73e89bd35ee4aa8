"""Rearrangements of channels and pixels: pixel_shuffle, pixel_unshuffle, channel_shuffle.

Each is a reshape (a view when the input allows), a permute (a view) and a reshape (one copy),
so the gradient is the views' and the copy's; no kernel of its own.
"""
from __future__ import annotations

from clgrad.tensor import Tensor

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle"]


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r): each group of r^2 channels becomes an r x r block
    of pixels (Shi et al. 2016; PyTorch's F.pixel_shuffle).

    out[..., c, h r + i, w r + j] = input[..., c r^2 + i r + j, h, w]
    Grad:    input (through reshape/permute)
    Raises:  RuntimeError for fewer than 3 dims, r <= 0, or channels not divisible by r^2
    """
    r = _factor("pixel_shuffle", input, upscale_factor, "upscale_factor")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    k = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W): the inverse of pixel_shuffle (PyTorch's
    F.pixel_unshuffle).

    Grad:    input (through reshape/permute)
    Raises:  RuntimeError for fewer than 3 dims, r <= 0, or H or W not divisible by r
    """
    r = _factor("pixel_unshuffle", input, downscale_factor, "downscale_factor")
    *lead, c, h, w = input.shape
    for name, n, pos in (("height", h, -2), ("width", w, -1)):
        if n % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by "
                               f"downscale_factor, but input.size({pos})={n} is not divisible "
                               f"by {r}")
    k = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, C, *) -> (N, C, *) with the channels of g groups interleaved (ShuffleNet; PyTorch's
    F.channel_shuffle): out[:, i * g + j] = input[:, j * (C / g) + i].

    Grad:    input (through reshape/permute)
    Raises:  RuntimeError for fewer than 3 dims, groups <= 0, or C not divisible by groups
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"channel_shuffle: expected a Tensor, got {type(input).__name__}")
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    if not isinstance(groups, int) or groups <= 0:
        raise RuntimeError(f"channel_shuffle: expected a positive number of groups, got "
                           f"{groups!r}")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"channel_shuffle: expected the number of channels {c} to be "
                           f"divisible by groups {groups}")
    x = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return x.reshape(n, c, *rest)


def _factor(op, x, r, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if x.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input "
                           f"with {x.ndim} dimension(s)")
    if not isinstance(r, int) or isinstance(r, bool) or r <= 0:
        raise RuntimeError(f"{op} expects a positive {name}, but got {r}")
    return r
