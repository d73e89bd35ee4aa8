"""Parameter initialisation with PyTorch's names, fan computations and gains.

Every function fills its tensor in place (no autograd) and returns it. Random values come from
clgrad's generator (``clgrad.manual_seed``), or from the ``generator=`` given (a
``clgrad.Generator``: the same seed gives the same values), drawn on the host in float64 and
uploaded once.

References: X. Glorot and Y. Bengio, "Understanding the difficulty of training deep feedforward
neural networks", AISTATS 2010 (xavier_*); K. He et al., "Delving Deep into Rectifiers", ICCV
2015 (kaiming_*); A. Saxe et al., "Exact solutions to the nonlinear dynamics of learning in
deep linear neural networks", ICLR 2014 (orthogonal_).
"""
from __future__ import annotations

import math

import numpy as np

from clgrad import dtypes
from clgrad.creation import from_numpy, rng
from clgrad.ops import elementwise as ew
from clgrad.ops._util import bump_version
from clgrad.tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "trunc_normal_", "orthogonal_", "eye_", "dirac_"]

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


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with samples of U(a, b), drawn from ``generator`` (a clgrad.Generator) if given.
    Raises TypeError for a generator that is not a clgrad.Generator."""
    _check_tensor(tensor, "uniform_")
    return _fill(tensor, rng(generator, "uniform_").uniform(a, b, tuple(tensor.shape)))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with samples of N(mean, std^2), drawn from ``generator`` if given (a
    clgrad.Generator, else TypeError)."""
    _check_tensor(tensor, "normal_")
    return _fill(tensor, rng(generator, "normal_").normal(mean, std, tuple(tensor.shape)))


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


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor, "xavier_uniform_")
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor, "xavier_normal_")
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """He uniform: U(-bound, bound), bound = gain * sqrt(3 / fan), gain from ``nonlinearity``
    with slope ``a``; ``fan`` is fan_in or fan_out per ``mode``.

    PyTorch's default Conv2d/Linear weight init is ``kaiming_uniform_(w, a=sqrt(5))``, which
    gives bound = 1 / sqrt(fan_in).
    """
    fan = _fan(tensor, mode, "kaiming_uniform_")
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """He normal: N(0, std^2), std = gain / sqrt(fan) (see kaiming_uniform_)."""
    fan = _fan(tensor, mode, "kaiming_normal_")
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator=None) -> Tensor:
    """Fill with N(mean, std^2) conditioned on [a, b] (absolute bounds, as PyTorch): draws
    outside are redrawn (rejection sampling, the exact truncated law).
    Raises ValueError if a >= b or std <= 0."""
    _check_tensor(tensor, "trunc_normal_")
    if not a < b or std <= 0:
        raise ValueError(f"trunc_normal_: expected a < b and std > 0, got a={a}, b={b}, "
                         f"std={std}")
    gen = rng(generator, "trunc_normal_")
    out = gen.normal(mean, std, tuple(tensor.shape))
    bad = (out < a) | (out > b)
    for _ in range(10000):
        if not bad.any():
            break
        out[bad] = gen.normal(mean, std, int(bad.sum()))
        bad = (out < a) | (out > b)
    else:
        raise ValueError(f"trunc_normal_: [a, b] = [{a}, {b}] holds too little mass of "
                         f"N({mean}, {std}^2) to sample by rejection")
    return _fill(tensor, out)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix times ``gain``: the Q of the QR decomposition of
    a normal matrix (rows = size(0), cols = the rest), signs fixed by diag(R) (PyTorch's).
    Raises ValueError for fewer than 2 dims."""
    _check_tensor(tensor, "orthogonal_")
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: only tensors with 2 or more dimensions are supported, "
                         f"got shape {tuple(tensor.shape)}")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    a = rng(generator, "orthogonal_").normal(0.0, 1.0, (rows, cols))
    if rows < cols:
        a = a.T
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, (gain * q).reshape(tuple(tensor.shape)))


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity (ones on the diagonal).
    Raises ValueError for other ranks."""
    _check_tensor(tensor, "eye_")
    if tensor.ndim != 2:
        raise ValueError(f"eye_: only 2-D tensors are supported, got shape "
                         f"{tuple(tensor.shape)}")
    return _fill(tensor, np.eye(*tensor.shape))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-D conv weight with the Dirac delta: the convolution keeps the
    first min(out/groups, in) channels of each group. Raises ValueError for other ranks or
    out channels not divisible by groups."""
    _check_tensor(tensor, "dirac_")
    if tensor.ndim not in (3, 4, 5) or tensor.shape[0] % groups:
        raise ValueError(f"dirac_: expected a 3, 4 or 5-D tensor with dim 0 divisible by "
                         f"groups={groups}, got shape {tuple(tensor.shape)}")
    out = np.zeros(tuple(tensor.shape))
    per = tensor.shape[0] // groups
    centre = tuple(k // 2 for k in tensor.shape[2:])
    for g in range(groups):
        for d in range(min(per, tensor.shape[1])):
            out[(g * per + d, d) + centre] = 1.0
    return _fill(tensor, out)


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
    host = values.astype(dtypes.host_np(tensor.dtype))  # (bfloat16: float32, converted below)
    ew.copy_raw(tensor, from_numpy(host, device=tensor._storage.device))
    bump_version(tensor)
    return tensor


def _default_init(weight: Tensor, bias: Tensor | None):
    """PyTorch's Linear/Conv init: kaiming_uniform_(a=sqrt(5)); bias U(+-1/sqrt(fan_in))."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = _calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        uniform_(bias, -bound, bound)


# -- h4 (issue 22): sparse_ and PyTorch's deprecated names without the underscore --------------
def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """Fill the 2-D ``tensor`` with N(0, std^2) samples, then zero ceil(sparsity * rows)
    randomly chosen rows in each column (Martens 2010; PyTorch's nn.init.sparse_).

    Raises: ValueError for a tensor that is not 2-D
    """
    _check_tensor(tensor, "sparse_")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    gen = rng(generator, "sparse_")
    values = gen.normal(0.0, std, (rows, cols))
    zeros = math.ceil(sparsity * rows)
    for c in range(cols):
        values[gen.permutation(rows)[:zeros], c] = 0.0
    return _fill(tensor, values)


def _deprecated(fn):
    """PyTorch's old spelling of an init function: warns (FutureWarning) and calls ``fn``."""
    import functools
    import warnings
    old = fn.__name__[:-1]

    @functools.wraps(fn)
    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{fn.__name__}`.",
                      FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)
    deprecated_init.__name__ = old
    deprecated_init.__doc__ = f"Deprecated (as in PyTorch): use ``{fn.__name__}``."
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
__all__ += ["sparse_", "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform",
            "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]
