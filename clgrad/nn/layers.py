"""Layers and losses with PyTorch's names, arguments, parameters, defaults and reprs.

Each layer holds its parameters and buffers and calls one function of ``clgrad.nn.functional``
in ``forward``; the math (and its gradient) lives there and in ``clgrad.ops``.
"""
from __future__ import annotations

import math

from clgrad import dtypes
from clgrad.autograd import no_grad
from clgrad.creation import empty, ones, zeros
from clgrad.nn import functional as F
from clgrad.nn import init
from clgrad.nn.module import Module, Parameter
from clgrad.ops import elementwise as ew
from clgrad.ops import norm
from clgrad.ops._util import bump_version
from clgrad.tensor import Tensor

__all__ = ["Linear", "Conv2d", "ReLU", "LeakyReLU", "MaxPool2d", "AvgPool2d",
           "AdaptiveAvgPool2d", "BatchNorm2d", "LocalResponseNorm", "Dropout", "Flatten",
           "CrossEntropyLoss", "NLLLoss", "MSELoss"]


class Linear(Module):
    """y = x W^T + b.

    Shapes:  x (*, in_features) -> (*, out_features); weight (out, in), bias (out,)
    Init:    weight kaiming_uniform_(a=sqrt(5)), i.e. U(+-1/sqrt(in)); bias U(+-1/sqrt(in))
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        _check_positive("Linear", in_features=in_features, out_features=out_features)
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(empty(out_features, in_features, dtype=dtype, device=device))
        self.bias = Parameter(empty(out_features, dtype=dtype, device=device)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's default initialisation (see the class docstring)."""
        _default_init(self.weight, self.bias)

    def forward(self, x: Tensor) -> Tensor:
        """x @ weight.T + bias.

        Shapes:  x (*, in_features) -> (*, out_features); see clgrad.nn.functional.linear
        Dtypes:  x.dtype == weight.dtype (RuntimeError otherwise)
        Raises:  RuntimeError when x.shape[-1] != in_features
        """
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        """'in_features=I, out_features=O, bias=B', as PyTorch's repr."""
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Conv2d(Module):
    """2-D convolution (cross-correlation) over (N, C, H, W), grouped when ``groups`` > 1.

    Shapes:  x (N, in_channels, H, W) -> (N, out_channels, H', W'),
             H' = (H + 2 pad - dil (k - 1) - 1) // stride + 1
    Params:  ONE weight (out_channels, in_channels // groups, kH, kW); bias (out_channels,).
             Group g maps input channels [g C/G, (g+1) C/G) to output channels
             [g O/G, (g+1) O/G); groups == in_channels is a depthwise convolution.
    Init:    weight kaiming_uniform_(a=sqrt(5)); bias U(+-1/sqrt(fan_in)),
             fan_in = in_channels // groups * kH * kW
    Raises:  ValueError if in_channels or out_channels is not divisible by groups, or for
             non-positive sizes, negative padding or an unsupported padding_mode
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None):
        super().__init__()
        _check_positive("Conv2d", in_channels=in_channels, out_channels=out_channels,
                        groups=groups)
        if in_channels % groups:
            raise ValueError(f"Conv2d: expected in_channels divisible by groups, got "
                             f"in_channels={in_channels}, groups={groups}")
        if out_channels % groups:
            raise ValueError(f"Conv2d: expected out_channels divisible by groups, got "
                             f"out_channels={out_channels}, groups={groups}")
        if padding_mode != "zeros":
            raise ValueError(f"Conv2d: expected padding_mode 'zeros', got {padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _pair("Conv2d", "kernel_size", kernel_size, 1)
        self.stride = _pair("Conv2d", "stride", stride, 1)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Conv2d: expected padding 'same', 'valid' or ints, got "
                                 f"{padding!r}")
            self.padding = padding  # resolved by F.conv2d, as in PyTorch
        else:
            self.padding = _pair("Conv2d", "padding", padding, 0)
        self.dilation = _pair("Conv2d", "dilation", dilation, 1)
        self.padding_mode = padding_mode
        shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(empty(shape, dtype=dtype, device=device))
        self.bias = Parameter(empty(out_channels, dtype=dtype, device=device)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's default initialisation (see the class docstring)."""
        _default_init(self.weight, self.bias)

    def forward(self, x: Tensor) -> Tensor:
        """The convolution of ``x`` with this layer's weight and bias.

        Shapes:  x (N, in_channels, H, W) -> (N, out_channels, H', W'); unbatched
                 (in_channels, H, W) -> (out_channels, H', W'); see clgrad.nn.functional.conv2d
                 (clgrad.ops.conv.conv2d) for H', dtypes and errors
        """
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)

    def extra_repr(self):
        """PyTorch's repr: channels, kernel_size, stride; padding, dilation, groups, bias only when
        not the default.
        """
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding not in ((0, 0), "valid"):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class ReLU(Module):
    """max(x, 0) elementwise (written into x when ``inplace``)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        """max(x, 0); with ``inplace`` written into x, which is returned.

        Shapes:  x (*) -> same; see clgrad.nn.functional.relu
        """
        return F.relu(x, inplace=self.inplace)

    def extra_repr(self):
        """'inplace=True' when in place, else ''."""
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """x if x > 0 else negative_slope * x."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, x):
        """x where x > 0, else negative_slope * x (in x when ``inplace``).

        Shapes:  x (*) -> same; see clgrad.nn.functional.leaky_relu
        Raises:  TypeError for a non-floating input
        """
        return F.leaky_relu(x, self.negative_slope, inplace=self.inplace)

    def extra_repr(self):
        """'negative_slope=S' (and ', inplace=True'), as PyTorch's repr."""
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace
                                                          else "")


class MaxPool2d(Module):
    """Max over kH x kW windows; ``stride`` defaults to ``kernel_size``."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, x):
        """Window maxima of ``x``.

        Shapes:  (N, C, H, W) -> (N, C, OH, OW), unbatched (C, H, W) -> (C, OH, OW);
                 see clgrad.nn.functional.max_pool2d
        Returns: out, or (out, int64 indices into each H*W plane) with ``return_indices``
        """
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self):
        """kernel_size, stride, padding, dilation and ceil_mode, as PyTorch's repr."""
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    """Mean over kH x kW windows; ``stride`` defaults to ``kernel_size``."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, x):
        """Window means of ``x``.

        Shapes:  (N, C, H, W) -> (N, C, OH, OW), unbatched (C, H, W) -> (C, OH, OW);
                 see clgrad.nn.functional.avg_pool2d
        """
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        """kernel_size, stride and padding, as PyTorch's repr."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """Average pooling to a fixed ``output_size`` (an int or (H, W); None keeps that dim)."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        """Means over PyTorch's adaptive windows.

        Shapes:  (N, C, H, W) -> (N, C, *output_size), unbatched (C, H, W) -> (C, *output_size);
                 see clgrad.nn.functional.adaptive_avg_pool2d
        """
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self):
        """'output_size=S'."""
        return f"output_size={self.output_size}"


class BatchNorm2d(Module):
    """Batch normalisation over (N, H, W) per channel (Ioffe & Szegedy, ICML 2015).

    Shapes:  x (N, C, H, W) -> same
    Params:  weight (C,) = 1 and bias (C,) = 0 when ``affine``
    Buffers: running_mean (C,) = 0, running_var (C,) = 1, num_batches_tracked () int64 = 0
             when ``track_running_stats`` (all in the state dict, PyTorch's names)
    Train:   normalise with the batch mean and biased variance; update
             running = (1 - momentum) running + momentum batch_stat (the unbiased variance);
             ``momentum=None`` uses the cumulative average 1 / num_batches_tracked
    Eval:    normalise with the running statistics (batch statistics if not tracked)
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None):
        super().__init__()
        _norm_state(self, "BatchNorm2d", num_features, eps, momentum, affine,
                    track_running_stats, device, dtype)

    _version = 2  # PyTorch's: version 2 added num_batches_tracked

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """As Module's; a checkpoint of version < 2 (or without metadata) that lacks
        ``num_batches_tracked`` keeps the module's count instead of reporting it missing."""
        version = local_metadata.get("version", None)
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and \
                key not in state_dict and self.num_batches_tracked is not None:
            state_dict[key] = self.num_batches_tracked
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def reset_running_stats(self):
        """running_mean = 0, running_var = 1, num_batches_tracked = 0."""
        if self.track_running_stats:
            for buf, value in ((self.running_mean, 0), (self.running_var, 1),
                               (self.num_batches_tracked, 0)):
                ew.fill_raw(buf, value)
                bump_version(buf)

    def _check_input_dim(self, x: Tensor):
        if x.ndim != 4:
            raise ValueError(f"BatchNorm2d: expected 4D input (N, C, H, W), got "
                             f"{x.ndim}D input of shape {tuple(x.shape)}")

    def forward(self, x: Tensor) -> Tensor:
        """Normalise ``x`` per channel (see the class docstring for train and eval).

        Shapes:  x (N, C, H, W) -> same; see clgrad.nn.functional.batch_norm
        In training with tracked statistics, num_batches_tracked += 1 and the running statistics
        are updated in place; ``momentum=None`` reads num_batches_tracked on the host (a sync).
        Raises:  ValueError for an input that is not 4-D; as F.batch_norm otherwise
        """
        return self._forward(x, relu=False)

    def _forward(self, x: Tensor, relu: bool) -> Tensor:
        """forward, then relu when ``relu`` (fused: nn.Sequential's BatchNorm2d + ReLU)."""
        self._check_input_dim(x)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average: needs the count on the host
                momentum = 1.0 / float(self.num_batches_tracked.item())
        use_batch_stats = self.training or not self.track_running_stats
        return norm.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                               use_batch_stats, momentum, self.eps, relu=relu)

    def extra_repr(self):
        """num_features, eps, momentum, affine and track_running_stats, as PyTorch's repr."""
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class LocalResponseNorm(Module):
    """Normalise each channel by the activity of ``size`` neighbouring channels:
    b_c = a_c / (k + alpha / size * sum_{c'} a_{c'}^2) ^ beta (Krizhevsky et al., 2012)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        _check_positive("LocalResponseNorm", size=size)
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x):
        """Local response normalisation across channels.

        Shapes:  (N, C, *) with at least 3 dims -> same;
                 see clgrad.nn.functional.local_response_norm
        """
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        """'size, alpha=A, beta=B, k=K', as PyTorch's repr."""
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class Dropout(Module):
    """In training, zero each element with probability ``p`` and scale the rest by 1/(1-p);
    in eval mode, the identity (Srivastava et al., JMLR 2014)."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: expected a probability between 0 and 1, got p={p}")
        self.p, self.inplace = p, inplace

    def forward(self, x):
        """Dropout of ``x`` in training mode (``self.training``); ``x`` itself in eval mode.

        Shapes:  x (*) -> same; see clgrad.nn.functional.dropout (the mask's generator)
        """
        return F.dropout(x, self.p, self.training, inplace=self.inplace)

    def extra_repr(self):
        """'p=P, inplace=B', as PyTorch's repr."""
        return f"p={self.p}, inplace={self.inplace}"


class Flatten(Module):
    """Merge dims ``start_dim..end_dim`` (default: all but the batch dim); a view if possible."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        """``x.flatten(start_dim, end_dim)``: a view when the strides allow, else a copy.

        Shapes:  (N, *S) -> (N, prod(S)) with the defaults
        """
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        """'start_dim=S, end_dim=E'."""
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class CrossEntropyLoss(Module):
    """Softmax cross entropy of logits (N, C) against class indices (N,) int64."""

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__()
        _check_reduction("CrossEntropyLoss", reduction)
        self.register_buffer("weight", weight)
        self.ignore_index, self.reduction = ignore_index, reduction
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        """Cross entropy of logits ``input`` against ``target`` (class indices or probabilities).

        Shapes:  input (N, C) or (N, C, d1, ...) or (C,); target (N,) / (N, d1, ...) / () int64,
                 or probabilities of input's shape -> () ('mean', 'sum') or the positions
                 (N,) / (N, d1, ...) / () ('none'); see clgrad.nn.functional.cross_entropy
        """
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class NLLLoss(Module):
    """Negative log likelihood of log-probabilities (N, C) against class indices (N,)."""

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean"):
        super().__init__()
        _check_reduction("NLLLoss", reduction)
        self.register_buffer("weight", weight)
        self.ignore_index, self.reduction = ignore_index, reduction

    def forward(self, input, target):
        """Negative log likelihood of log-probabilities ``input`` at class indices ``target``.

        Shapes:  as CrossEntropyLoss with class indices; see clgrad.nn.functional.nll_loss
        """
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class MSELoss(Module):
    """Mean (or sum, or none) of the squared differences."""

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        _check_reduction("MSELoss", reduction)
        self.reduction = reduction

    def forward(self, input, target):
        """(input - target)^2 reduced by ``reduction``.

        Shapes:  input, target broadcast together -> () or the broadcast shape ('none');
                 see clgrad.nn.functional.mse_loss
        """
        return F.mse_loss(input, target, reduction=self.reduction)


# ---------------------------------------------------------------------------- private helpers

def _default_init(weight: Parameter, bias: Parameter | None):
    """PyTorch's Linear/Conv init: kaiming_uniform_(a=sqrt(5)); bias U(+-1/sqrt(fan_in))."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)


def _norm_state(m, op, num_features, eps, momentum, affine, track_running_stats, device,
                dtype):
    """The parameters (weight = 1, bias = 0 when ``affine``) and buffers (running_mean = 0,
    running_var = 1, num_batches_tracked = 0 when tracking) of the per-channel norms."""
    _check_positive(op, num_features=num_features)
    m.num_features, m.eps, m.momentum = num_features, eps, momentum
    m.affine, m.track_running_stats = affine, track_running_stats
    kw = dict(dtype=dtype, device=device)
    m.weight = Parameter(ones(num_features, **kw)) if affine else None
    m.bias = Parameter(zeros(num_features, **kw)) if affine else None
    if track_running_stats:
        m.register_buffer("running_mean", zeros(num_features, **kw))
        m.register_buffer("running_var", ones(num_features, **kw))
        m.register_buffer("num_batches_tracked", zeros((), dtype=dtypes.int64, device=device))
    else:
        m.running_mean = m.running_var = m.num_batches_tracked = None


def _check_positive(op, **sizes):
    for name, v in sizes.items():
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ValueError(f"{op}: expected {name} to be a positive int, got {v!r}")


def _pair(op, name, v, minimum):
    """An int or a 2-sequence of ints as a 2-tuple, each >= minimum."""
    if isinstance(v, int) and not isinstance(v, bool):
        pair = (v, v)
    else:
        pair = tuple(v) if isinstance(v, (tuple, list)) else ()
    if len(pair) != 2 or any(not isinstance(x, int) or isinstance(x, bool) or x < minimum
                             for x in pair):
        raise ValueError(f"{op}: expected {name} to be an int >= {minimum} or a pair of them, "
                         f"got {v!r}")
    return pair


def _check_reduction(op, reduction):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{op}: expected reduction 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
