"""The 3-D layers (PyTorch's names, arguments, parameters, state-dict keys and reprs): Conv3d,
ConvTranspose3d, MaxPool3d, AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool3d, BatchNorm3d,
InstanceNorm3d, Dropout3d and the 3-D padding layers. The math: clgrad/ops/three_d.py
(compositions of the 2-D ops) and F.pad."""
from __future__ import annotations

from clgrad.nn import functional as F
from clgrad.nn.conv import _ConvNd
from clgrad.nn.dropout import Dropout
from clgrad.nn.normalization import BatchNorm2d, InstanceNorm2d
from clgrad.nn.pooling import _Adaptive, _AvgPoolNd, _MaxPoolNd
from clgrad.nn.padding import ConstantPad1d, ZeroPad1d, _Pad
from clgrad.tensor import Tensor

__all__ = ["Conv3d", "ConvTranspose3d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d",
           "AdaptiveMaxPool3d", "BatchNorm3d", "InstanceNorm3d", "Dropout3d",
           "ReflectionPad3d", "ReplicationPad3d", "CircularPad3d", "ConstantPad3d", "ZeroPad3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W) (or unbatched (C, D, H, W)), grouped when
    ``groups`` > 1; weight (out_channels, in_channels // groups, kD, kH, kW), bias
    (out_channels,), PyTorch's init. ``padding_mode`` 'reflect', 'replicate' or 'circular'
    pads with F.pad first (as PyTorch's), then convolves without padding."""
    _dims = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {list(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                             f"{{'valid', 'same'}}")
        if padding == "same" and any(s != 1 for s in _three(stride)):
            raise ValueError("padding='same' is not supported for strided convolutions")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, 0, groups,
                         bias, dilation, "zeros", device, dtype)
        self.padding_mode = padding_mode

    def forward(self, x: Tensor) -> Tensor:
        """The 3-D convolution of ``x`` with this layer's weight and bias.

        Shapes:  (N, in_channels, D, H, W) -> (N, out_channels, D', H', W'); unbatched
                 (in_channels, D, H, W) -> (out_channels, D', H', W'); see F.conv3d
        """
        if self.padding_mode == "zeros":
            return F.conv3d(x, self.weight, self.bias, self.stride, self.padding,
                            self.dilation, self.groups)
        if self.padding == "valid":
            amounts = (0,) * 6
        elif self.padding == "same":
            amounts = ()
            for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                total = d * (k - 1)
                amounts += (total // 2, total - total // 2)
        else:
            amounts = tuple(p for p in reversed(self.padding) for _ in range(2))
        return F.conv3d(F.pad(x, amounts, mode=self.padding_mode), self.weight, self.bias,
                        self.stride, 0, self.dilation, self.groups)

    def extra_repr(self):
        """PyTorch's repr (padding_mode when not 'zeros')."""
        s = super().extra_repr()
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class ConvTranspose3d(_ConvNd):
    """3-D transposed convolution: D' = (D - 1) s - 2 p + d (k - 1) + output_padding + 1;
    weight (in_channels, out_channels // groups, kD, kH, kW)."""
    _dims, _transposed = 3, True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if isinstance(padding, str):
            raise ValueError(f"ConvTranspose3d: expected int padding, got {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         output_padding, groups, bias, dilation, padding_mode, device, dtype)

    def forward(self, x, output_size=None):
        """The transposed convolution of ``x``: (N, in_channels, D, H, W) -> (N, out_channels,
        D', H', W') (unbatched without N); see F.conv_transpose3d.
        Raises NotImplementedError for ``output_size`` (unlike PyTorch; pass output_padding)."""
        if output_size is not None:
            raise NotImplementedError("ConvTranspose3d: output_size is not supported; pass "
                                      "output_padding")
        return F.conv_transpose3d(x, self.weight, self.bias, self.stride, self.padding,
                                  self.output_padding, self.groups, self.dilation)


class MaxPool3d(_MaxPoolNd):
    """Max over kD x kH x kW windows; ``stride`` defaults to ``kernel_size``."""

    def forward(self, x):
        """(N, C, D, H, W) or (C, D, H, W) -> pooled; with ``return_indices`` also the int64
        flat D*H*W indices; see F.max_pool3d."""
        return F.max_pool3d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool3d(_AvgPoolNd):
    """Mean over kD x kH x kW windows; ``stride`` defaults to ``kernel_size``."""

    def forward(self, x):
        """(N, C, D, H, W) or (C, D, H, W) -> window means; see F.avg_pool3d."""
        return F.avg_pool3d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(_Adaptive):
    """Adaptive mean pooling to ``output_size`` (an int or a triple; None keeps a dim)."""

    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, x):
        """(N, C, D, H, W) or (C, D, H, W) -> (..., OD, OH, OW); see F.adaptive_avg_pool3d."""
        return F.adaptive_avg_pool3d(x, self.output_size)


class AdaptiveMaxPool3d(_Adaptive):
    """Adaptive max pooling to ``output_size``; indices with ``return_indices``."""

    def forward(self, x):
        """(N, C, D, H, W) or (C, D, H, W) -> (..., OD, OH, OW) (and flat D*H*W indices);
        see F.adaptive_max_pool3d."""
        return F.adaptive_max_pool3d(x, self.output_size, self.return_indices)


class BatchNorm3d(BatchNorm2d):
    """Batch normalisation over (N, D, H, W) per channel of (N, C, D, H, W): BatchNorm2d's
    state, training and eval rules (F.batch_norm reduces every dim but the channels)."""

    def _check_input_dim(self, x: Tensor):
        if x.ndim != 5:
            raise ValueError(f"expected 5D input (got {x.ndim}D input)")


class InstanceNorm3d(InstanceNorm2d):
    """Normalise each (sample, channel) volume of (N, C, D, H, W) (or unbatched (C, D, H, W))
    over D, H, W; InstanceNorm2d's state and rules."""
    _ndim = 5

    def forward(self, x):
        """(N, C, D, H, W) or (C, D, H, W) -> same; see F.instance_norm."""
        if isinstance(x, Tensor) and x.ndim == 4:
            return super().forward(x.unsqueeze(0)).squeeze(0)
        return super().forward(x)


class Dropout3d(Dropout):
    """In training, zero whole channels of (N, C, D, H, W) (or (C, D, H, W)) with probability
    ``p`` and scale the rest by 1/(1-p); the identity in eval mode."""

    def forward(self, x):
        """Channel dropout in training mode, ``x`` itself in eval mode; see F.dropout3d."""
        return F.dropout3d(x, self.p, self.training, self.inplace)


class ReflectionPad3d(_Pad):
    """Mirror the last 3 dims without repeating the edge: (left, right, top, bottom, front,
    back), each < the dim's size."""
    _k, _mode = 3, "reflect"


class ReplicationPad3d(_Pad):
    """Repeat the edges of the last 3 dims: (left, right, top, bottom, front, back)."""
    _k, _mode = 3, "replicate"


class CircularPad3d(_Pad):
    """Wrap the last 3 dims around: (left, right, top, bottom, front, back)."""
    _k, _mode = 3, "circular"


class ConstantPad3d(ConstantPad1d):
    """Pad the last 3 dims with ``value``: (left, right, top, bottom, front, back)."""
    _k = 3


class ZeroPad3d(ZeroPad1d):
    """Pad the last 3 dims with zeros: (left, right, top, bottom, front, back)."""
    _k = 3


def _three(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * 3
