"""Conv1d, ConvTranspose1d and ConvTranspose2d with PyTorch's arguments, parameter shapes,
initialisation and reprs, and Conv2d.
The math lives in clgrad/ops/conv/ (transpose.py, on top of conv2d: op.py)."""
from __future__ import annotations

from clgrad._args import _check_positive, _ntuple, _pair
from clgrad.creation import empty
from clgrad.nn import functional as F
from clgrad.nn.init import _default_init
from clgrad.autograd import no_grad
from clgrad.nn.lazy import LazyModuleMixin
from clgrad.nn.module import Module, Parameter, UninitializedParameter, is_lazy
from clgrad.tensor import Tensor

__all__ = ["Conv2d", "Conv1d", "ConvTranspose1d", "ConvTranspose2d", "LazyConv1d", "LazyConv2d",
           "LazyConvTranspose1d", "LazyConvTranspose2d"]


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


class _ConvNd(Module):
    """Shared state: ONE weight (out, in/groups, *k) — (in, out/groups, *k) when transposed —
    and bias (out,); kaiming_uniform_(a=sqrt(5)) init as PyTorch."""
    _dims, _transposed = 1, False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        _check_positive(name, in_channels=in_channels, out_channels=out_channels,
                        groups=groups)
        for what, c in (("in_channels", in_channels), ("out_channels", out_channels)):
            if c % groups:
                raise ValueError(f"{name}: expected {what} divisible by groups, got "
                                 f"{what}={c}, groups={groups}")
        if padding_mode != "zeros":
            raise ValueError(f"{name}: expected padding_mode 'zeros', got {padding_mode!r}")
        n = self._dims
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _ntuple(name, "kernel_size", kernel_size, n, 1)
        self.stride = _ntuple(name, "stride", stride, n, 1)
        self.padding = padding if isinstance(padding, str) else \
            _ntuple(name, "padding", padding, n, 0)
        self.dilation = _ntuple(name, "dilation", dilation, n, 1)
        self.output_padding = _ntuple(name, "output_padding", output_padding, n, 0)
        self.padding_mode = padding_mode
        io = (in_channels, out_channels // groups) if self._transposed else \
            (out_channels, in_channels // groups)
        self.weight = Parameter(empty(io + self.kernel_size, dtype=dtype, device=device))
        self.bias = Parameter(empty(out_channels, dtype=dtype, device=device)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's default initialisation (see the class docstring)."""
        _default_init(self.weight, self.bias)

    def extra_repr(self):
        """PyTorch's repr: channels, kernel_size, stride; padding, dilation, output_padding, groups
        and bias only when not the default.
        """
        n = self._dims
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv1d(_ConvNd):
    """1-D convolution of (N, C, L): conv2d over unit-height views (zero-copy)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, 0, groups,
                         bias, dilation, padding_mode, device, dtype)

    def forward(self, x):
        """The 1-D convolution of ``x`` with this layer's weight and bias.

        Shapes:  (N, in_channels, L) -> (N, out_channels, L'), unbatched (in_channels, L) ->
                 (out_channels, L'); see clgrad.nn.functional.conv1d
        """
        return F.conv1d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class ConvTranspose2d(_ConvNd):
    """2-D transposed convolution: H' = (H - 1) s - 2 p + d (k - 1) + output_padding + 1."""
    _dims, _transposed = 2, True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: expected int padding, got {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         output_padding, groups, bias, dilation, padding_mode, device, dtype)

    def forward(self, x, output_size=None):
        """The transposed convolution of ``x`` (2-D, or 1-D for ConvTranspose1d).

        Shapes:  (N, in_channels, H, W) -> (N, out_channels, H', W') (1-D: (N, C, L) ->
                 (N, out_channels, L')); unbatched inputs lack the N dim in and out;
                 see clgrad.nn.functional.conv_transpose2d / conv_transpose1d
        Raises:  NotImplementedError for ``output_size`` (unlike PyTorch; pass output_padding)
        """
        if output_size is not None:
            raise NotImplementedError(f"{type(self).__name__}: output_size is not supported; "
                                      f"pass output_padding")
        fn = F.conv_transpose2d if self._dims == 2 else F.conv_transpose1d
        return fn(x, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                  self.groups, self.dilation)


class ConvTranspose1d(ConvTranspose2d):
    """1-D transposed convolution of (N, C, L)."""
    _dims = 1


class _LazyConvMixin(LazyModuleMixin):
    """in_channels inferred from the first input (dim 1, or dim 0 unbatched), then the
    weight and bias materialised and initialised as the eager class's (PyTorch's
    _LazyConvXdMixin)."""

    _spatial, _transposed = 2, False

    def _lazy_params(self, bias, device, dtype):
        self.in_channels = 0
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        """The eager class's, once materialised (nothing before)."""
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        """in_channels from ``input``; materialise weight and bias; the eager init."""
        if not self.has_uninitialized_params():
            return
        nb = self._spatial + 1
        if input.ndim not in (nb, nb + 1):
            raise RuntimeError(f"Expected {nb}D (unbatched) or {nb + 1}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: "
                               f"{tuple(input.shape)}")
        c = input.shape[1] if input.ndim == nb + 1 else input.shape[0]
        if c % self.groups:
            raise ValueError(f"{type(self).__name__}: in_channels must be divisible by "
                             f"groups, got in_channels={c}, groups={self.groups}")
        self.in_channels = c
        g = self.groups
        io = (c, self.out_channels // g) if self._transposed else (self.out_channels, c // g)
        with no_grad():
            self.weight.materialize(io + tuple(self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _sizes_from_params(self):
        if not is_lazy(self.weight):
            w = self.weight.shape
            self.in_channels = w[0] if self._transposed else w[1] * self.groups


class LazyConv1d(_LazyConvMixin, Conv1d):
    """A Conv1d whose in_channels is inferred at the first call (PyTorch's nn.LazyConv1d)."""

    cls_to_become, _spatial = Conv1d, 1

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(groups, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype)
        self._lazy_params(bias, device, dtype)


class LazyConv2d(_LazyConvMixin, Conv2d):
    """A Conv2d whose in_channels is inferred at the first call (PyTorch's nn.LazyConv2d)."""

    cls_to_become = Conv2d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(groups, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype)
        self._lazy_params(bias, device, dtype)


class LazyConvTranspose1d(_LazyConvMixin, ConvTranspose1d):
    """A ConvTranspose1d whose in_channels is inferred at the first call."""

    cls_to_become, _spatial, _transposed = ConvTranspose1d, 1, True

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(groups, out_channels, kernel_size, stride, padding, output_padding,
                         groups, bias, dilation, padding_mode, device, dtype)
        self._lazy_params(bias, device, dtype)


class LazyConvTranspose2d(_LazyConvMixin, ConvTranspose2d):
    """A ConvTranspose2d whose in_channels is inferred at the first call."""

    cls_to_become, _transposed = ConvTranspose2d, True

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(groups, out_channels, kernel_size, stride, padding, output_padding,
                         groups, bias, dilation, padding_mode, device, dtype)
        self._lazy_params(bias, device, dtype)
