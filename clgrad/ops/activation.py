"""Activation-style ops of the CNN layer set: leaky_relu, the pointwise activations (hardtanh,
relu6, gelu, silu, elu, hardswish, hardsigmoid, softplus, mish), prelu, dropout, pad.

Inputs may be any strided view; outputs are new and contiguous (or the input itself, written
in place, with ``inplace=True``).
Kernels: kernels/activation.cl :: leaky_relu_fwd/bwd, <name>_fwd/<name>_bwd (ACT), dropout
(Philox4x32-10, one kernel for both directions: the mask is regenerated from the seed, never
stored), pad_fwd/pad_bwd.
"""
from __future__ import annotations

import numpy as np

from clgrad import capture as _capture, creation, layout
from clgrad.autograd import record
from clgrad.ops import elementwise as ew
from clgrad.ops import inplace as ip
from clgrad.ops._util import LOCAL, MAXD, defines_for, empty, launch_1d, scalar, shape_arg
from clgrad.ops._util import view_arg
from clgrad.tensor import Tensor

__all__ = ["leaky_relu", "hardtanh", "relu6", "gelu", "silu", "elu", "hardswish", "hardsigmoid",
           "softplus", "mish", "prelu", "dropout", "dropout1d", "dropout2d", "pad",
           "logsigmoid"]

_FILE = "activation.cl"
_MODES = {"constant": 0, "reflect": 1, "replicate": 2}


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else negative_slope * x. Grad: input (slope where x <= 0)."""
    _check_float("leaky_relu", input)
    if inplace:
        return ip.inplace("leaky_relu_", input, lambda s: leaky_relu(s, negative_slope))
    x = input
    slope = scalar(x.dtype, negative_slope)
    out = empty(x.shape, x.dtype, x.device)
    launch_1d(_FILE, "leaky_relu_fwd", defines_for(x.dtype), out, (x,), (slope,))

    def backward(g):
        gx = empty(x.shape, x.dtype, x.device)
        launch_1d(_FILE, "leaky_relu_bwd", defines_for(x.dtype), gx, (g, x), (slope,))
        return (gx,)
    return record("leaky_relu", out, (x,), backward, saved=[x])


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


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x relu6(x + 3) / 6 (MobileNetV3); gradient x/3 + 1/2 strictly inside (-3, 3)."""
    return _act("hardswish", input, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6; gradient 1/6 strictly inside (-3, 3)."""
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
    Grad: input (weight where x <= 0, PyTorch's choice at 0) and weight.
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
    return ew.where(ew.gt(input, 0.0), input, ew.mul(w, input))


def _act(kname, input, inplace, p0=0.0, p1=0.0, op=None):
    """out = f(x) and its backward g * f'(x) (the saved input), one launch each."""
    op = op or kname
    _check_float(op, input)
    if inplace:
        return ip.inplace(op + "_", input, lambda s: _act(kname, s, False, p0, p1, op))
    x = input
    d = defines_for(x.dtype)
    args = (scalar(x.dtype, p0), scalar(x.dtype, p1))
    out = empty(x.shape, x.dtype, x.device)
    launch_1d(_FILE, kname + "_fwd", d, out, (x,), args)

    def backward(g):
        gx = empty(x.shape, x.dtype, x.device)
        launch_1d(_FILE, kname + "_bwd", d, gx, (g, x), args)
        return (gx,)
    return record(op, out, (x,), backward, saved=[x])


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p) (training);
    the input itself when not training.

    The mask comes from a counter-based generator on the device keyed by a 64-bit seed drawn
    from clgrad's generator, so ``clgrad.manual_seed`` makes it reproducible. Element k
    (row-major) is kept when word k % 4 of philox(k // 4, seed) is >= p * 2^32.
    Grad:    input (the same mask and scale).
    Raises:  ValueError for p outside [0, 1].
    """
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"dropout: expected a probability p in [0, 1], got {p}")
    _check_float("dropout", input)
    if not training:
        return input
    if inplace:
        return ip.inplace("dropout_", input, lambda s: dropout(s, p, True))
    x = input
    rest = (np.uint64(round(float(p) * 2.0 ** 32)),
            scalar(x.dtype, 0.0 if p == 1 else 1.0 / (1.0 - float(p))))
    seed = [0]

    def fwd_args(commit):  # a new seed per eager call and per replay (clgrad/capture.py)
        if commit:
            seed[0] = int(creation.seed_generator().integers(0, 2 ** 63))
        return (np.uint32(seed[0] & 0xFFFFFFFF), np.uint32(seed[0] >> 32)) + rest

    def bwd_args(commit):  # the forward's seed
        return (np.uint32(seed[0] & 0xFFFFFFFF), np.uint32(seed[0] >> 32)) + rest

    out = _dropout_raw(x, fwd_args)
    return record("dropout", out, (x,), lambda g: (_dropout_raw(g, bwd_args),))


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Channel dropout (Tompson et al., CVPR 2015): zero whole channels of (N, C, H, W) with
    probability p, scale the rest by 1 / (1 - p); a 3-D input is (N, C, L), as PyTorch 2
    reads it. The mask (N, C, 1, 1) is dropout() of ones, then one broadcast multiply.
    Grad: input. Raises ValueError for p outside [0, 1] or an input not 3-D or 4-D."""
    return _feature_dropout("dropout2d", input, p, training, inplace, (3, 4))


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Channel dropout of (N, C, L) or unbatched (C, L) (see dropout2d)."""
    return _feature_dropout("dropout1d", input, p, training, inplace, (2, 3))


def _feature_dropout(op, x, p, training, inplace, ranks):
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"{op}: expected a probability p in [0, 1], got {p}")
    _check_float(op, x)
    if x.ndim not in ranks:
        raise ValueError(f"{op}: expected a {ranks[0]}-D or {ranks[1]}-D input, got shape "
                         f"{tuple(x.shape)}")
    if not training or p == 0:
        return x
    lead = 1 if x.ndim == ranks[0] and op == "dropout1d" else 2
    ones = creation.ones(tuple(x.shape[:lead]) + (1,) * (x.ndim - lead), dtype=x.dtype,
                         device=x.device)
    mask = dropout(ones, p, True)
    if inplace:
        return ip.inplace(op + "_", x, lambda s: ew.mul(s, mask))
    return ew.mul(x, mask)


def pad(input: Tensor, pad, mode: str = "constant", value=0) -> Tensor:
    """Pad the last len(pad) // 2 dims: pad = (left, right, top, bottom, ...), last dim first.

    Modes: 'constant' (``value``; negative amounts crop), 'reflect' (mirror without repeating
    the edge; each amount < the dim's size), 'replicate' (repeat the edge), 'circular' (wrap
    around: the other end's elements; each amount <= the dim's size). The last three pad at
    most the last 3 dims and leave the first dim alone.
    Grad:    input (each output position's gradient goes to the element it copied).
    Raises:  ValueError for an odd or too long pad, a bad mode, or amounts out of range.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"pad: expected a Tensor, got {type(input).__name__}")
    amounts = tuple(int(a) for a in pad)
    if len(amounts) % 2 or len(amounts) // 2 > input.ndim:
        raise ValueError(f"pad: expected an even number of amounts, at most 2 per dim of the "
                         f"{input.ndim}-dim input, got {amounts}")
    if mode not in _MODES and mode != "circular":
        raise ValueError(f"pad: expected mode 'constant', 'reflect', 'replicate' or "
                         f"'circular', got {mode!r}")
    x = input
    lo, hi = [0] * x.ndim, [0] * x.ndim
    for k in range(len(amounts) // 2):
        lo[x.ndim - 1 - k], hi[x.ndim - 1 - k] = amounts[2 * k], amounts[2 * k + 1]
    if mode != "constant":
        _check_nonconstant(mode, x, amounts, lo, hi)
    if mode == "circular":
        return _pad_circular(x, lo, hi)
    oshape = tuple(n + a + b for n, a, b in zip(x.shape, lo, hi))
    if min(oshape, default=1) < 0:
        raise ValueError(f"pad: padding {amounts} gives a negative output size {oshape} for "
                         f"input of shape {tuple(x.shape)}")
    out = empty(oshape, x.dtype, x.device)
    m = np.int32(_MODES[mode])
    _launch_pad("pad_fwd", x, out.numel(), len(oshape), shape_arg(oshape), out._storage.buffer,
                x._storage.buffer, view_arg(x), shape_arg(x.shape), shape_arg(lo), m,
                scalar(x.dtype, value))
    if not x.dtype.is_floating_point:
        return out

    def backward(g):
        gx = empty(x.shape, x.dtype, x.device)
        _launch_pad("pad_bwd", x, gx.numel(), x.ndim, shape_arg(x.shape), gx._storage.buffer,
                    g._storage.buffer, view_arg(g), shape_arg(oshape), shape_arg(lo), m)
        return (gx,)
    return record("pad", out, (x,), backward)


def _pad_circular(x, lo, hi):
    """Circular padding as a concatenation of narrow views (its gradient is theirs)."""
    from clgrad.ops import index as ix
    for d in range(x.ndim):
        if lo[d] == 0 and hi[d] == 0:
            continue
        n = x.shape[d]
        parts = [x.narrow(d, n - lo[d], lo[d])] if lo[d] else []
        parts += [x] + ([x.narrow(d, 0, hi[d])] if hi[d] else [])
        x = ix.cat(parts, d)
    return x if any(lo) or any(hi) else ew.clone(x)


# -- helpers ----------------------------------------------------------------------------------
def _check_float(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: expected a floating point input, got {x.dtype}")


def _check_nonconstant(mode, x, amounts, lo, hi):
    k = len(amounts) // 2
    if k > 3 or k > x.ndim - 1:
        raise ValueError(f"pad: {mode} padding pads at most the last 3 dims and not the first "
                         f"one; got {k} dims of padding for an input of shape "
                         f"{tuple(x.shape)}")
    for d in range(x.ndim - k, x.ndim):
        n = x.shape[d]
        if lo[d] < 0 or hi[d] < 0:
            raise ValueError(f"pad: {mode} padding expects non-negative amounts, got {amounts}")
        if mode == "circular" and (lo[d] > n or hi[d] > n):
            raise ValueError(f"pad: circular padding ({lo[d]}, {hi[d]}) at dim {d} must be at "
                             f"most the dim's size {n}: it would wrap around more than once "
                             f"(input shape {tuple(x.shape)})")
        if mode == "reflect" and (lo[d] >= n or hi[d] >= n):
            raise ValueError(f"pad: reflect padding ({lo[d]}, {hi[d]}) at dim {d} must be "
                             f"less than the dim's size {n} (input shape {tuple(x.shape)})")
        if n == 0:
            raise ValueError(f"pad: {mode} padding of an empty dim {d} (input shape "
                             f"{tuple(x.shape)})")


def _dropout_raw(x, args_fn):
    """One launch of ceil(n / 4) work items, each drawing four random words; ``args_fn`` gives
    the seed and scale arguments (through clgrad.capture.dynamic: new per replay)."""
    out = empty(x.shape, x.dtype, x.device)
    n = out.numel()
    if n == 0:
        return out
    shape, (so, sx) = layout.collapse(x.shape, out._strides, x._strides)
    if len(shape) > MAXD:
        raise RuntimeError(f"dropout: tensors of more than {MAXD} non-mergeable dims are not "
                           f"supported, got shape {tuple(x.shape)}")
    dev = x.device
    args = _capture.dynamic(args_fn)
    dev.launch(dev.kernel(_FILE, "dropout", defines_for(x.dtype)), (layout.cdiv(n, 4),),
               (LOCAL,), np.int64(n), np.int32(len(shape)), shape_arg(shape), out._storage.buffer,
               view_arg(out, so), x._storage.buffer, view_arg(x, sx), *args)
    return out


def _launch_pad(name, x, total, nd, *args):
    if total == 0:
        return
    if nd > MAXD:
        raise RuntimeError(f"pad: tensors of more than {MAXD} dims are not supported, got "
                           f"{x.ndim}")
    dev = x.device
    dev.launch(dev.kernel(_FILE, name, defines_for(x.dtype)), (total,), (LOCAL,),
               np.int64(total), np.int32(nd), *args)
