"""Parameter initialisation with PyTorch's names, fan computations and gains.

Every function fills its tensor in place (no autograd) and returns it. Random values come from
clgrad's generator (``clgrad.manual_seed``), drawn on the host in float64 and uploaded once.

References: X. Glorot and Y. Bengio, "Understanding the difficulty of training deep feedforward
neural networks", AISTATS 2010 (xavier_*); K. He et al., "Delving Deep into Rectifiers", ICCV
2015 (kaiming_*).
"""
from __future__ import annotations

import math

import numpy as np

from clgrad.creation import from_numpy, seed_generator
from clgrad.ops import elementwise as ew
from clgrad.ops._util import bump_version
from clgrad.tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_"]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for ``nonlinearity``: 1 for linear/conv/sigmoid, 5/3 for tanh,
    sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky_relu (slope ``param``, default 0.01),
    3/4 for selu.

    Raises ValueError for an unknown nonlinearity or a non-number slope.
    """
    if nonlinearity in _LINEAR:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"calculate_gain: expected a number as negative_slope, got "
                             f"{param!r}")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: expected one of {', '.join(_LINEAR)}, tanh, relu, "
                     f"leaky_relu, selu, got {nonlinearity!r}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill with samples of U(a, b)."""
    _check_tensor(tensor, "uniform_")
    return _fill(tensor, seed_generator().uniform(a, b, tuple(tensor.shape)))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill with samples of N(mean, std^2)."""
    _check_tensor(tensor, "normal_")
    return _fill(tensor, seed_generator().normal(mean, std, tuple(tensor.shape)))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    _check_tensor(tensor, "constant_")
    ew.fill_raw(tensor, val)
    bump_version(tensor)
    return tensor


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with 0."""
    return constant_(tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with 1."""
    return constant_(tensor, 1)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor, "xavier_uniform_")
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor, "xavier_normal_")
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu") -> Tensor:
    """He uniform: U(-bound, bound), bound = gain * sqrt(3 / fan), gain from ``nonlinearity``
    with slope ``a``; ``fan`` is fan_in or fan_out per ``mode``.

    PyTorch's default Conv2d/Linear weight init is ``kaiming_uniform_(w, a=sqrt(5))``, which
    gives bound = 1 / sqrt(fan_in).
    """
    fan = _fan(tensor, mode, "kaiming_uniform_")
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu") -> Tensor:
    """He normal: N(0, std^2), std = gain / sqrt(fan) (see kaiming_uniform_)."""
    fan = _fan(tensor, mode, "kaiming_normal_")
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan))


# ---------------------------------------------------------------------------- private helpers

def _calculate_fan_in_and_fan_out(tensor: Tensor, op: str = "init"):
    """(fan_in, fan_out) = (size(1), size(0)) times the receptive field (product of dims 2:).

    Raises ValueError for tensors with fewer than 2 dims.
    """
    _check_tensor(tensor, op)
    if tensor.ndim < 2:
        raise ValueError(f"{op}: fan in and fan out can not be computed for a tensor with "
                         f"fewer than 2 dimensions, got shape {tuple(tensor.shape)}")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode, op):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"{op}: expected mode 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor, op)
    fan = fan_in if mode == "fan_in" else fan_out
    if fan == 0:
        raise ValueError(f"{op}: cannot initialise a tensor with {mode} = 0 "
                         f"(shape {tuple(tensor.shape)})")
    return fan


def _check_tensor(tensor, op):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(tensor).__name__}")
    if not tensor.dtype.is_floating_point:
        raise TypeError(f"{op}: expected a floating tensor, got {tensor.dtype}")


def _fill(tensor: Tensor, values: np.ndarray) -> Tensor:
    """Copy host ``values`` into ``tensor`` (any view) without autograd."""
    ew.copy_raw(tensor, from_numpy(values.astype(tensor.dtype.np), device=tensor.device))
    bump_version(tensor)
    return tensor
