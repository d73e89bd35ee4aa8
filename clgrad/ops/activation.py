"""Activations: leaky_relu, the pointwise activations (hardtanh, relu6, gelu, silu, elu,
hardswish, hardsigmoid, softplus, mish, selu, celu, softsign, tanhshrink, softshrink,
hardshrink, threshold), prelu, rrelu, glu, softmin, gumbel_softmax.

Inputs may be any strided view; outputs are new and contiguous (or the input itself, written
in place, with ``inplace=True``).
Kernels: kernels/activation.cl :: leaky_relu_fwd/bwd, <name>_fwd/<name>_bwd (ACT); bfloat16
inputs run them in float32, the result rounded once (``elementwise.via_float32``).
Dropout lives in clgrad/ops/dropout.py, pad in clgrad/ops/padding.py.
"""
from __future__ import annotations


import math
import warnings

import numpy as np

from clgrad import creation, dtypes, layout
from clgrad.autograd import record
from clgrad.ops import index as _index
from clgrad.ops import random as _random
from clgrad.ops import reduce as _reduce
from clgrad.ops import elementwise as ew
from clgrad.ops import inplace as ip
from clgrad.ops._util import defines_for, empty, launch_1d, scalar
from clgrad.tensor import Tensor

__all__ = ["leaky_relu", "hardtanh", "relu6", "gelu", "silu", "elu", "hardswish", "hardsigmoid",
           "softplus", "mish", "prelu", "logsigmoid", "selu", "selu_", "celu", "celu_",
           "softsign", "tanhshrink", "softshrink", "hardshrink", "threshold", "threshold_",
           "rrelu", "rrelu_", "glu", "softmin", "gumbel_softmax", "elu_", "leaky_relu_",
           "hardtanh_"]

_FILE = "activation.cl"
_BF16 = dtypes.bfloat16


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else negative_slope * x. Grad: input (slope where x <= 0)."""
    _check_float("leaky_relu", input)
    if inplace:
        return ip.inplace("leaky_relu_", input, lambda s: leaky_relu(s, negative_slope))
    if input.dtype is _BF16:
        return ew.via_float32(leaky_relu, input, negative_slope)
    x = input
    slope = scalar(x.dtype, negative_slope, True)  # (in float for float16: kernels/activation.cl)
    out = empty(x.shape, x.dtype, x._storage.device)
    launch_1d(_FILE, "leaky_relu_fwd", defines_for(x.dtype), out, (x,), (slope,))

    def backward(g):
        gx = empty(x.shape, x.dtype, x._storage.device)
        launch_1d(_FILE, "leaky_relu_bwd", defines_for(x.dtype), gx, (g, x), (slope,))
        return (gx,)
    return record("leaky_relu", out, (x,), backward, saved=[x],
                  double=(lambda g, node: (ew.where(ew.gt(x, 0), g, ew.mul(g, negative_slope)),),
                          _LINK_X, True))


# -- pointwise activations: one kernel each direction (kernels/activation.cl ACT) -------------
def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """clamp(x, min_val, max_val); the gradient is 0 at and beyond the bounds (PyTorch).
    Raises ValueError if min_val > max_val."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: expected min_val <= max_val, got {min_val} > {max_val}")
    return _act("hardtanh", input, inplace, min_val, max_val)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6) = hardtanh(x, 0, 6): gradient 1 strictly inside (0, 6), else 0."""
    return _act("hardtanh", input, inplace, 0.0, 6.0, op="relu6")


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x Phi(x) (Hendrycks & Gimpel 2016): exact with erf ('none'), or
    x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) ('tanh').
    Raises ValueError for another ``approximate``."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: expected approximate 'none' or 'tanh', got {approximate!r}")
    return _act("gelu" if approximate == "none" else "gelu_tanh", input, False, op="gelu")


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x sigmoid(x) (swish)."""
    return _act("silu", input, inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, else alpha (exp(x) - 1) (Clevert et al. 2015)."""
    return _act("elu", input, inplace, alpha)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """elu written into ``input``, which is returned (F.elu_)."""
    return elu(input, alpha, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """leaky_relu written into ``input``, which is returned (F.leaky_relu_)."""
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """hardtanh written into ``input``, which is returned (F.hardtanh_)."""
    return hardtanh(input, min_val, max_val, inplace=True)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x relu6(x + 3) / 6 (MobileNetV3); gradient x/3 + 1/2 strictly inside (-3, 3)."""
    return _act("hardswish", input, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6; gradient 1/6 strictly inside (-3, 3). Differentiable twice
    (create_graph), where PyTorch 2.13 raises (no derivative of hardsigmoid_backward)."""
    return _act("hardsigmoid", input, inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, reverting to x where beta x > threshold."""
    return _act("softplus", input, False, beta, threshold)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)) elementwise, computed as min(x, 0) - log1p(exp(-|x|)): finite for every
    finite x (the plain formula gives -inf below about -88 in float32, -745 in float64).

    Dtypes:  float16/32/64 (TypeError for integers, as PyTorch)
    Grad:    g * sigmoid(-x)
    Kernels: kernels/activation.cl :: logsigmoid_fwd/bwd
    """
    return _act("logsigmoid", input, False)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x tanh(softplus(x)) (Misra 2019)."""
    return _act("mish", input, inplace)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x where x > 0, else weight * x, weight (1,) or (C,) along dim 1 of an input (N, C, *).
    Grad: input (weight where x <= 0, PyTorch's choice at 0) and weight; under create_graph
    the input's gradient requires grad even with a constant weight (linked), as PyTorch's.
    Raises RuntimeError when weight has neither 1 element nor one per channel."""
    _check_float("prelu", input)
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu: expected weight to be a Tensor, got {type(weight).__name__}")
    nw = weight.numel()
    c = input.shape[1] if input.ndim >= 2 else 1
    if weight.ndim > 1 or nw not in (1, c):
        raise RuntimeError(f"prelu: expected weight of 1 element or {c} (the input's dim 1), "
                           f"got shape {tuple(weight.shape)}")
    w = weight.reshape(()) if nw == 1 else weight.reshape((c,) + (1,) * (input.ndim - 2))
    out = ew.where(ew.gt(input, 0.0), input, ew.mul(w, input))
    node = out._grad_fn  # (a slot read: nothing more on a first-order path)
    if node is not None and node._op == "where":  # (bfloat16's last Node is its cast)
        node.double = (True, _LINK_WHERE_A, True)  # linked to the input (see _LINK_WHERE_A)
    return out


# -- selu, celu, the shrinks, threshold (kernels/activation.cl ACT), rrelu, glu, softmin -------
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale (x if x > 0 else alpha (exp(x) - 1)), alpha = 1.6732632423543772848,
    scale = 1.0507009873554804934 (Klambauer et al. 2017; PyTorch's torch.nn.SELU).

    Shapes:  x (*) -> same (x itself, written in place, with ``inplace``)
    Dtypes:  float16/32/64, bfloat16 (in float32, rounded once); TypeError otherwise
    Grad:    scale where x > 0, else scale alpha exp(x)
    Kernels: kernels/activation.cl :: selu_fwd/bwd
    """
    return _act("selu", input, inplace, _SELU_ALPHA, _SELU_SCALE)


def selu_(input: Tensor) -> Tensor:
    """selu written into ``input``, which is returned (torch.selu_)."""
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1)) (Barron 2017; PyTorch's torch.nn.CELU).

    Shapes:  x (*) -> same (x itself with ``inplace``)
    Grad:    1 where x > 0, else exp(x / alpha)
    Raises:  RuntimeError for alpha = 0 (PyTorch's "ZeroDivisionError"); TypeError for a
             non-floating input
    Kernels: kernels/activation.cl :: celu_fwd/bwd
    """
    if alpha == 0:
        raise RuntimeError("celu: ZeroDivisionError: alpha cannot be 0 for CELU")
    return _act("celu", input, inplace, alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """celu written into ``input``, which is returned (torch.celu_)."""
    return celu(input, alpha, inplace=True)


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|) (PyTorch's torch.nn.Softsign). Grad: 1 / (1 + |x|)^2.
    Kernels: kernels/activation.cl :: softsign_fwd/bwd."""
    return _act("softsign", input, False)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x) (PyTorch's torch.nn.Tanhshrink). Grad: tanh(x)^2.
    Kernels: kernels/activation.cl :: tanhshrink_fwd/bwd."""
    return _act("tanhshrink", input, False)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0 (PyTorch's
    torch.nn.Softshrink). Grad: 1 outside [-lambd, lambd], 0 on it.
    float16 takes lambd in float, as bfloat16 and float32 do (PyTorch's float16 rounds it to
    half: softshrink(half(0.3), 0.3) is 4.9e-05 here, 0 there).
    Raises RuntimeError for lambd < 0 (PyTorch's)."""
    if lambd < 0:
        raise RuntimeError(f"softshrink: lambda must be greater or equal to 0, but found to be "
                           f"{lambd}.")
    return _act("softshrink", input, False, lambd)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0 (PyTorch's torch.nn.Hardshrink). Grad: 1 where |x| > lambd,
    else 0. float16 compares with lambd in float (see softshrink).
    Kernels: kernels/activation.cl :: hardshrink_fwd/bwd."""
    return _act("hardshrink", input, False, lambd)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value (PyTorch's torch.nn.Threshold; NaN stays NaN).

    Grad:    1 where x > threshold, else 0 (of the input before an in-place write: PyTorch's
             threshold_ reads its result instead, which differs where value > threshold)
    Dtypes:  floating (TypeError for integers, which PyTorch takes)
    Kernels: kernels/activation.cl :: threshold_fwd/bwd
    """
    return _act("threshold", input, inplace, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """threshold written into ``input``, which is returned (torch.threshold_)."""
    return _act("threshold", input, True, threshold, value)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False, *, generator=None) -> Tensor:
    """Randomized leaky ReLU (Xu et al. 2015; PyTorch's torch.nn.RReLU): in training, x where
    x > 0, else a x with a ~ U(lower, upper) drawn per element from clgrad's RNG (or
    ``generator``); in eval, leaky_relu with the mean slope (lower + upper) / 2.

    Shapes:  x (*) -> same (x itself with ``inplace``)
    Grad:    1 where x > 0, else the element's slope (a; the mean slope in eval)
    Raises:  RuntimeError for lower > upper (training); TypeError for a non-floating input
    """
    _check_float("rrelu", input)
    if not training:
        return leaky_relu(input, (lower + upper) / 2.0, inplace)
    if lower > upper:
        raise RuntimeError(f"rrelu: expected lower <= upper, got lower={lower} > "
                           f"upper={upper}")
    if inplace:
        return ip.inplace("rrelu_", input, lambda s: rrelu(s, lower, upper, True,
                                                         generator=generator))
    a = _random.uniform_(creation.empty(input.shape, dtype=input.dtype,
                                        device=input.device), lower, upper, generator)
    slope = ew.where(ew.le(input, 0.0), a, 1.0)
    out = ew.mul(input, slope)
    node = out._grad_fn  # (PyTorch's rrelu_with_noise_backward reads the input: linked)
    if node is not None and node._op == "mul":  # (bfloat16's last Node is its cast)
        node.double = (node.double, _LINK_X, True)
    return out


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False, *, generator=None) -> Tensor:
    """rrelu written into ``input``, which is returned (torch.rrelu_)."""
    return rrelu(input, lower, upper, training, True, generator=generator)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a sigmoid(b), a and b the two halves of ``input`` along ``dim`` (Dauphin et al. 2016).

    Shapes:  (*, 2n, *) -> (*, n, *)
    Grad:    input (composed of narrow, sigmoid, mul)
    Raises:  RuntimeError for a 0-dim input or an odd size along ``dim``; IndexError for dim
    """
    _check_float("glu", input)
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = layout.wrap_dim(dim, input.ndim, "glu")
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"glu: Halving dimension must be even, but dimension {d} is size "
                           f"{n}")
    a, b = input.narrow(d, 0, n // 2), input.narrow(d, n // 2, n // 2)
    return ew.mul(a, ew.sigmoid(b))


def softmin(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """softmax(-x) along ``dim`` (``dim=None``: PyTorch's legacy choice, as softmax;
    ``dtype`` casts the input first). Grad: input."""
    if not isinstance(input, Tensor):
        raise TypeError(f"softmin: expected a Tensor, got {type(input).__name__}")
    x = input if dtype is None else ew.to(input, dtype)
    return ew.neg(x).softmax(dim)  # (Tensor's method: ops/loss.py imports this module)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """softmax((logits + g) / tau) along ``dim``, g ~ Gumbel(0, 1) drawn from clgrad's RNG
    as -log(E), E ~ Exp(1) (Jang et al. 2016; PyTorch's). With ``hard``, the one-hot of the
    argmax, with the soft sample's gradient (straight-through: y_hard - y.detach() + y).

    Shapes:  logits (*) -> same
    Grad:    logits
    ``eps`` is deprecated and unused (a UserWarning when given, as PyTorch).
    """
    _check_float("gumbel_softmax", logits)
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    e = _random.exponential_(creation.empty(logits.shape, dtype=logits.dtype,
                                            device=logits.device))
    y = ew.div(ew.sub(logits, ew.log(e)), tau).softmax(dim)
    if not hard:
        return y
    index = _reduce.argmax(y, dim, keepdim=True)
    y_hard = _index.scatter(creation.zeros_like(logits), dim, index, value=1.0)
    return ew.add(ew.sub(y_hard, y.detach()), y)


def _act(kname, input, inplace, p0=0.0, p1=0.0, op=None):
    """out = f(x) and its backward g * f'(x) (the saved input), one launch each."""
    op = op or kname
    _check_float(op, input)
    if inplace:
        if kname == "hardtanh" and _bounds_kept(input.dtype, p0, p1):
            # its gradient reads the output alone: one launch into self
            out = ip.output_inplace(op + "_", input, _HardtanhInPlace(p0, p1))
            if out is not None:
                return out
        return ip.inplace(op + "_", input, lambda s: _act(kname, s, False, p0, p1, op))
    if input.dtype is _BF16:  # in float32, the result rounded once (ew.via_float32)
        return ew.via_float32(_act, kname, input, False, p0, p1, op)
    x = input
    d = defines_for(x.dtype)
    args = (scalar(x.dtype, p0, True), scalar(x.dtype, p1, True))  # (OPM: activation.cl)
    out = empty(x.shape, x.dtype, x._storage.device)
    launch_1d(_FILE, kname + "_fwd", d, out, (x,), args)

    def backward(g):
        gx = empty(x.shape, x.dtype, x._storage.device)
        launch_1d(_FILE, kname + "_bwd", d, gx, (g, x), args)
        return (gx,)
    grad_of = _ACT_GRADS.get(kname)
    double = None if grad_of is None else lambda g, node: (grad_of(g, x, p0, p1),)
    return record(op, out, (x,), backward, saved=[x],
                  double=(double, _LINK_X, True) if kname in _LINKED else double)


def _sig_grad(g, x, p0, p1):
    """silu's gradient g s (1 + x (1 - s)), s = sigmoid(x)."""
    s = ew.sigmoid(x)
    return ew.mul(g, ew.mul(s, ew.add(ew.mul(x, ew.sub(1.0, s)), 1.0)))


def _gelu_grad(g, x, p0, p1):
    """gelu's (exact) gradient g (Phi(x) + x phi(x)), Phi(x) = (1 + erf(x / sqrt 2)) / 2."""
    cdf = ew.mul(ew.add(ew.erf(ew.mul(x, math.sqrt(0.5))), 1.0), 0.5)
    pdf = ew.mul(ew.exp(ew.mul(ew.mul(x, x), -0.5)), 1.0 / math.sqrt(2.0 * math.pi))
    return ew.mul(g, ew.add(cdf, ew.mul(x, pdf)))


def _gelu_tanh_grad(g, x, p0, p1):
    """gelu's tanh form's gradient g (1 + t + x (1 - t^2) k (1 + 3 A x^2)) / 2,
    t = tanh(k (x + A x^3)), k = sqrt(2 / pi), A = 0.044715 (PyTorch's gelu_backward)."""
    k = math.sqrt(2.0 / math.pi)
    x2 = ew.mul(x, x)
    t = ew.tanh(ew.mul(ew.mul(x, ew.add(ew.mul(x2, 0.044715), 1.0)), k))
    dt = ew.mul(ew.sub(1.0, ew.mul(t, t)), ew.mul(ew.add(ew.mul(x2, 3 * 0.044715), 1.0), k))
    return ew.mul(g, ew.mul(ew.add(ew.add(t, 1.0), ew.mul(x, dt)), 0.5))


def _mish_grad(g, x, p0, p1):
    """mish's gradient g (tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2)), sp = softplus(x)
    (PyTorch's infinitely_differentiable_mish_backward: softplus with threshold 20)."""
    t = ew.tanh(softplus(x))
    return ew.mul(g, ew.add(t, ew.mul(ew.mul(x, ew.sigmoid(x)), ew.sub(1.0, ew.mul(t, t)))))


def _zero_on(mask, g):
    """g where ``mask`` is false, else 0 (a kink's gradient as a recording op)."""
    return ew.where(mask, 0.0, g)


# The differentiable backward (Node.double, create_graph) of the ACT kernels, as recording
# ops: g * f'(x) from the formulas of kernels/activation.cl's <name>_bwd (the same masks,
# the same NaN choices: a comparison with NaN is false). An activation not here would raise
# under create_graph.
_ACT_GRADS = {
    "gelu_tanh": _gelu_tanh_grad,
    "mish": _mish_grad,
    "hardswish": lambda g, x, p0, p1: _zero_on(ew.le(x, -3.0), ew.where(
        ew.lt(x, 3.0), ew.mul(g, ew.add(ew.div(x, 3.0), 0.5)), g)),
    "hardsigmoid": lambda g, x, p0, p1: ew.where(
        ew.logical_and(ew.gt(x, -3.0), ew.lt(x, 3.0)), ew.div(g, 6.0), 0.0),
    "threshold": lambda g, x, p0, p1: _zero_on(ew.le(x, p0), g),
    "softshrink": lambda g, x, p0, p1: _zero_on(ew.logical_and(ew.ge(x, -p0), ew.le(x, p0)), g),
    "hardshrink": lambda g, x, p0, p1: _zero_on(ew.logical_and(ew.ge(x, -p0), ew.le(x, p0)), g),
    "hardtanh": lambda g, x, p0, p1: ew.where(ew.logical_or(ew.le(x, p0), ew.ge(x, p1)),
                                              0.0, g),
    "gelu": _gelu_grad,
    "silu": _sig_grad,
    "elu": lambda g, x, p0, p1: ew.where(ew.gt(x, 0), g, ew.mul(g, ew.mul(ew.exp(x), p0))),
    "softplus": lambda g, x, p0, p1: ew.where(ew.gt(ew.mul(x, p0), p1), g,
                                              ew.mul(g, ew.sigmoid(ew.mul(x, p0)))),
    "selu": lambda g, x, p0, p1: ew.where(ew.gt(x, 0), ew.mul(g, p1),
                                          ew.mul(g, ew.mul(ew.exp(x), p0 * p1))),
    "celu": lambda g, x, p0, p1: ew.where(ew.gt(x, 0), g, ew.mul(g, ew.exp(ew.div(x, p0)))),
    "logsigmoid": lambda g, x, p0, p1: ew.mul(g, ew.sigmoid(ew.neg(x))),
    "softsign": lambda g, x, p0, p1: ew.div(g, ew.square(ew.add(ew.abs(x), 1.0))),
    "tanhshrink": lambda g, x, p0, p1: ew.mul(g, ew.square(ew.tanh(x))),
}


# The piecewise-linear ones: their gradient's values do not depend on x, but PyTorch's formula
# (threshold_backward(grad, self, t), hardtanh_backward(grad, self, ...)) reads x, so under
# create_graph the gradient requires grad and a second derivative gives zeros for x
# (autograd.graph._linked); the others' gradients depend on x anyway.
_LINKED = frozenset(("threshold", "softshrink", "hardshrink", "hardtanh", "hardsigmoid"))
_LINK_X = (0,)  # (Node.double's links: input 0)
# prelu, composed as where(x > 0, x, w x): PyTorch's _prelu_kernel_backward(grad, self, weight)
# reads the input, so the gradients of where's Node (inputs: cond, x, w x) are linked to x
_LINK_WHERE_A = (1,)


class _HardtanhInPlace:
    """hardtanh(min p0, max p1)'s ``in_place`` spec (clgrad.ops.inplace.output_inplace): its
    gradient g where p0 < x < p1 reads the same from the output y = clamp(x) (y <= p0 exactly
    where x <= p0, y >= p1 where x >= p1, NaN where x is NaN)."""

    def __init__(self, p0, p1):
        self.in_place = (self._launch, self._grad, self._double, True)  # True: linked
        self.p0, self.p1 = p0, p1

    def _double(self, g, y):  # (create_graph: the same mask by recording ops)
        return _ACT_GRADS["hardtanh"](g, y, self.p0, self.p1)

    def _args(self, dt):
        return (scalar(dt, self.p0, True), scalar(dt, self.p1, True))

    def _launch(self, out, x):
        launch_1d(_FILE, "hardtanh_fwd", defines_for(x.dtype), out, (x,), self._args(x.dtype))

    def _grad(self, g, y):
        gx = empty(y.shape, y.dtype, y._storage.device)
        launch_1d(_FILE, "hardtanh_bwd", defines_for(y.dtype), gx, (g, y), self._args(y.dtype))
        return gx


# -- helpers ----------------------------------------------------------------------------------
def _bounds_kept(dt, p0, p1) -> bool:
    """Whether hardtanh's output tells where its gradient is 0: float16 compares x with the
    bounds in float (as PyTorch's), so a bound that half does not hold makes the output
    ambiguous there (min -0.1: half(-0.1) > -0.1 is both x = half(-0.1), gradient 1, and a
    clamped x < -0.1, gradient 0); ``inplace`` then saves the input instead."""
    return dt is not dtypes.float16 or all(_in_half(p) for p in (p0, p1))


def _in_half(v) -> bool:
    """Whether the number ``v`` is a float16 value (infinities included)."""
    v = float(v)
    return math.isinf(v) or abs(v) <= 65504.0 and float(np.float16(v)) == v


def _check_float(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: expected a floating point input, got {x.dtype}")
