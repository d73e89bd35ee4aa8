"""Pooling layers (PyTorch's names and arguments): max, average and adaptive pooling in 1-D and
2-D; the math lives in clgrad/ops/pool.py."""
from __future__ import annotations

from clgrad._args import _ntuple
from clgrad.nn import functional as F
from clgrad.nn.module import Module

__all__ = ["MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "MaxPool1d", "AvgPool1d",
           "AdaptiveAvgPool1d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d"]


class _MaxPoolNd(Module):
    """MaxPool1d/2d/3d's arguments and repr (PyTorch's); ``stride`` defaults to
    ``kernel_size``. Subclasses give forward."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self):
        """kernel_size, stride, padding, dilation and ceil_mode, as PyTorch's repr."""
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class _AvgPoolNd(Module):
    """AvgPool1d/2d/3d's arguments and repr (PyTorch's); ``stride`` defaults to
    ``kernel_size``. Subclasses give forward."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def extra_repr(self):
        """kernel_size, stride and padding, as PyTorch's repr."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_MaxPoolNd):
    """Max over kH x kW windows; ``stride`` defaults to ``kernel_size``."""

    def forward(self, x):
        """Window maxima of ``x``.

        Shapes:  (N, C, H, W) -> (N, C, OH, OW), unbatched (C, H, W) -> (C, OH, OW);
                 see clgrad.nn.functional.max_pool2d
        Returns: out, or (out, int64 indices into each H*W plane) with ``return_indices``
        """
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool2d(_AvgPoolNd):
    """Mean over kH x kW windows; ``stride`` defaults to ``kernel_size``."""

    def forward(self, x):
        """Window means of ``x``.

        Shapes:  (N, C, H, W) -> (N, C, OH, OW), unbatched (C, H, W) -> (C, OH, OW);
                 see clgrad.nn.functional.avg_pool2d
        """
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class _Adaptive(Module):
    """The adaptive pools' output_size (and return_indices) and repr; subclasses give
    forward."""

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def extra_repr(self):
        """'output_size=S'."""
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(_Adaptive):
    """Average pooling to a fixed ``output_size`` (an int or (H, W); None keeps that dim)."""

    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, x):
        """Means over PyTorch's adaptive windows.

        Shapes:  (N, C, H, W) -> (N, C, *output_size), unbatched (C, H, W) -> (C, *output_size);
                 see clgrad.nn.functional.adaptive_avg_pool2d
        """
        return F.adaptive_avg_pool2d(x, self.output_size)


class MaxPool1d(_MaxPoolNd):
    """Max over windows along L; ``stride`` defaults to ``kernel_size``."""

    def forward(self, x):
        """Window maxima along L.

        Shapes:  (N, C, L) -> (N, C, OL), (C, L) -> (C, OL); see clgrad.nn.functional.max_pool1d
        Returns: out, or (out, int64 indices into L) with ``return_indices``
        """
        return F.max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class AvgPool1d(_AvgPoolNd):
    """Mean over windows along L; ``stride`` defaults to ``kernel_size``."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):  # (PyTorch's has no divisor_override)
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)

    def forward(self, x):
        """Window means along L.

        Shapes:  (N, C, L) -> (N, C, OL), (C, L) -> (C, OL); see clgrad.nn.functional.avg_pool1d
        """
        return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AdaptiveAvgPool1d(_Adaptive):
    """Average pooling along L to a fixed ``output_size``."""

    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, x):
        """Means over adaptive windows: (N, C, L) -> (N, C, output_size), (C, L) likewise.

        See clgrad.nn.functional.adaptive_avg_pool1d.
        """
        return F.adaptive_avg_pool1d(x, self.output_size)


class AdaptiveMaxPool1d(_Adaptive):
    """Max pooling along L to a fixed ``output_size``."""

    def forward(self, x):
        """Maxima over adaptive windows: (N, C, L) -> (N, C, output_size), (C, L) likewise.

        Returns: out, or (out, int64 indices) with ``return_indices``; see F.adaptive_max_pool1d
        """
        return F.adaptive_max_pool1d(x, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_Adaptive):
    """Max pooling to a fixed ``output_size`` (an int or (H, W); None keeps that dim)."""

    def forward(self, x):
        """Maxima over adaptive windows: (N, C, H, W) -> (N, C, *output_size), (C, H, W) likewise.

        Returns: out, or (out, int64 indices y * W + x) with ``return_indices``;
                 see clgrad.nn.functional.adaptive_max_pool2d
        """
        return F.adaptive_max_pool2d(x, self.output_size, self.return_indices)


class _LPPoolNd(Module):
    """Power-average pooling: (sum over each window of x^p)^(1/p), p = norm_type."""

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def extra_repr(self):
        """'norm_type=P, kernel_size=K, stride=S, ceil_mode=B', as PyTorch's repr."""
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool2d(_LPPoolNd):
    """Power-average pooling of (N, C, H, W) or (C, H, W)."""

    def forward(self, input):
        """See clgrad.nn.functional.lp_pool2d."""
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)


class LPPool1d(_LPPoolNd):
    """Power-average pooling of (N, C, L) or (C, L)."""

    def forward(self, input):
        """See clgrad.nn.functional.lp_pool1d."""
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)


__all__ += ["LPPool1d", "LPPool2d"]


class _MaxUnpoolNd(Module):
    """max_pool's partial inverse: values put back at their indices, zeros elsewhere."""

    _n = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        n, name = self._n, type(self).__name__
        self.kernel_size = _ntuple(name, "kernel_size", kernel_size, n, 1)
        self.stride = self.kernel_size if stride is None else \
            _ntuple(name, "stride", stride, n, 1)
        self.padding = _ntuple(name, "padding", padding, n, 0)

    def forward(self, input, indices, output_size=None):
        """See clgrad.nn.functional.max_unpool2d / max_unpool1d (shapes, errors)."""
        fn = F.max_unpool2d if self._n == 2 else F.max_unpool1d
        return fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        """'kernel_size=K, stride=S, padding=P', as PyTorch's repr."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of MaxPool2d (SegNet): (N, C, h, w) values and indices ->
    (N, C, H, W)."""


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of MaxPool1d: (N, C, l) values and indices -> (N, C, L)."""
    _n = 1


__all__ += ["MaxUnpool1d", "MaxUnpool2d"]
