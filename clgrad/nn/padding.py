"""Padding layers (PyTorch's torch.nn.modules.padding names, arguments and reprs): reflection,
replication, zero, constant and circular padding of the last 1 or 2 dims. Each calls
clgrad.nn.functional.pad, whose kernels (kernels/activation.cl :: pad_fwd/pad_bwd) do the work.
"""
from __future__ import annotations

from clgrad.nn.module import Module
from clgrad.ops.padding import pad

__all__ = ["ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d",
           "ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "CircularPad1d",
           "CircularPad2d"]


def _amounts(padding, k, name):
    """An int (the same on every side) or a 2k-tuple, as PyTorch's _pair/_quadruple."""
    if isinstance(padding, int) and not isinstance(padding, bool):
        return (padding,) * (2 * k)
    padding = tuple(padding)
    if len(padding) != 2 * k or not all(isinstance(p, int) for p in padding):
        raise ValueError(f"{name}: expected padding to be an int or a tuple of {2 * k} ints, "
                         f"got {padding!r}")
    return padding


class _Pad(Module):
    """``F.pad(x, self.padding, mode)`` over the last ``_k`` dims."""
    _k = 1
    _mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = _amounts(padding, self._k, type(self).__name__)

    def forward(self, input):
        """F.pad(input, padding, mode); input (N, C, *) or (C, *) -> padded."""
        return pad(input, self.padding, self._mode)

    def extra_repr(self):
        """The padding tuple."""
        return f"{self.padding}"


class ReflectionPad1d(_Pad):
    """Mirror the last dim without repeating the edge: padding (left, right), each < W."""
    _mode = "reflect"


class ReflectionPad2d(_Pad):
    """Mirror the last 2 dims without repeating the edge: (left, right, top, bottom)."""
    _k, _mode = 2, "reflect"


class ReplicationPad1d(_Pad):
    """Repeat the edge of the last dim: padding (left, right)."""
    _mode = "replicate"


class ReplicationPad2d(_Pad):
    """Repeat the edges of the last 2 dims: padding (left, right, top, bottom)."""
    _k, _mode = 2, "replicate"


class CircularPad1d(_Pad):
    """Wrap the last dim around: padding (left, right), each <= W."""
    _mode = "circular"


class CircularPad2d(_Pad):
    """Wrap the last 2 dims around: padding (left, right, top, bottom)."""
    _k, _mode = 2, "circular"


class ConstantPad1d(_Pad):
    """Pad the last dim with ``value``: padding (left, right); negative amounts crop."""

    def __init__(self, padding, value: float):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        """F.pad(input, padding, 'constant', value)."""
        return pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        """'padding=..., value=...'."""
        return f"padding={self.padding}, value={self.value}"


class ConstantPad2d(ConstantPad1d):
    """Pad the last 2 dims with ``value``: padding (left, right, top, bottom)."""
    _k = 2


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros: padding (left, right); negative amounts crop."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        """The padding tuple."""
        return f"{self.padding}"


class ZeroPad2d(ZeroPad1d):
    """Pad the last 2 dims with zeros: padding (left, right, top, bottom)."""
    _k = 2
