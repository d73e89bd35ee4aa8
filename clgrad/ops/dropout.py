"""Dropout: dropout (elementwise) and the channel dropouts dropout1d/dropout2d and
feature_dropout (PyTorch's top-level ``torch.feature_dropout``: any rank from 2); SELU's
alpha_dropout and feature_alpha_dropout (composed: dropout's mask, then one affine map).

Kernel: kernels/dropout.cl :: dropout (Philox4x32-10, one kernel for both directions: the mask
is regenerated from the seed, never stored).
"""
from __future__ import annotations

import warnings

import numpy as np

from clgrad import capture as _capture, creation, dtypes, layout
from clgrad.autograd import record
from clgrad.ops import elementwise as ew
from clgrad.ops import inplace as ip
from clgrad.ops._util import LOCAL, MAXD, defines_for, empty, scalar, shape_arg
from clgrad.ops._util import view_arg
from clgrad.ops.activation import _check_float
from clgrad.tensor import Tensor

__all__ = ["dropout", "dropout1d", "dropout2d", "feature_dropout", "feature_dropout_",
           "alpha_dropout", "feature_alpha_dropout"]

_FILE = "dropout.cl"


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p) (training);
    the input itself when not training.

    The mask comes from a counter-based generator on the device keyed by a 64-bit seed drawn
    from clgrad's generator, so ``clgrad.manual_seed`` makes it reproducible. Element k
    (row-major) is kept when word k % 4 of philox(k // 4, seed) is >= p * 2^32.
    Grad:    input (the same mask and scale).
    Dtypes:  floating; bfloat16 is masked and scaled in float32, rounded once (the mask of a
             seed is float32's).
    Raises:  ValueError for p outside [0, 1].
    """
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"dropout: expected a probability p in [0, 1], got {p}")
    _check_float("dropout", input)
    if not training:
        return input
    if inplace:
        return ip.inplace("dropout_", input, lambda s: dropout(s, p, True))
    if input.dtype is dtypes.bfloat16:  # masked and scaled in float32, rounded once
        return ew.via_float32(dropout, input, p, True)
    x = input
    rest = (np.uint64(round(float(p) * 2.0 ** 32)),
            scalar(x.dtype, 0.0 if p == 1 else 1.0 / (1.0 - float(p))))
    seed = [0]

    def fwd_args(commit):  # a new seed per eager call and per replay (clgrad/capture/)
        if commit:
            seed[0] = int(creation.seed_generator().integers(0, 2 ** 63))
        return (np.uint32(seed[0] & 0xFFFFFFFF), np.uint32(seed[0] >> 32)) + rest

    def bwd_args(commit):  # the forward's seed
        return (np.uint32(seed[0] & 0xFFFFFFFF), np.uint32(seed[0] >> 32)) + rest

    out = _dropout_raw(x, fwd_args)
    return record("dropout", out, (x,), lambda g: (_dropout_raw(g, bwd_args),),
                  double=lambda g, node: (_masked(g, bwd_args),))


def _masked(g, bwd_args):
    """dropout's backward recorded (create_graph): the forward's mask and scale applied to g,
    linear in g, so its own backward is the same again."""
    return record("dropout", _dropout_raw(g, bwd_args), (g,),
                  lambda gg: (_masked(gg, bwd_args),), double=True)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Channel dropout (Tompson et al., CVPR 2015): zero whole channels of (N, C, H, W) with
    probability p, scale the rest by 1 / (1 - p); a 3-D input is (N, C, L), as PyTorch 2
    reads it. The mask (N, C, 1, 1) is dropout() of ones, then one broadcast multiply.
    Other ranks, as PyTorch's: a UserWarning (deprecated), then the first two dims are
    (N, C) (PyTorch's examples mnist_rnn applies Dropout2d to (batch, features)).
    Grad: input. Raises ValueError for p outside [0, 1]; RuntimeError (PyTorch's) for an
    input of fewer than 2 dims when it would drop."""
    return channel_dropout("dropout2d", input, p, training, inplace, 2)


def channel_dropout(op, x, p, training, inplace, spatial):
    """F.dropout2d / F.dropout3d (``spatial`` 2 or 3) as PyTorch 2.13 runs them: a rank
    other than spatial + 1 or + 2 warns that it is deprecated and still drops the (N, C)
    planes of the first two dims; dropout3d takes a rank other than 5 as unbatched (one
    leading dim added); dropout2d warns that a 3-D input is read as (N, C, L)."""
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"{op}: expected a probability p in [0, 1], got {p}")
    _check_float(op, x)
    if x.ndim not in (spatial + 1, spatial + 2):
        warnings.warn(
            f"{op}: Received a {x.ndim}-D input to {op}, which is deprecated and will result "
            f"in an error in a future release. To retain the behavior and silence this "
            f"warning, please use dropout instead. Note that {op} exists to provide "
            f"channel-wise dropout on inputs with {spatial} spatial dimensions, a channel "
            f"dimension, and an optional batch dimension (i.e. {spatial + 1}D or "
            f"{spatial + 2}D inputs).", UserWarning, stacklevel=4)
    elif spatial == 2 and x.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret "
            "the input as one without a batch dimension, i.e. shape (C, H, W). To maintain "
            "the 1D channel-wise dropout behavior, please switch to using dropout1d instead.",
            UserWarning, stacklevel=4)
    if not training or p == 0 or x.numel() == 0:
        return x
    if spatial == 3 and x.ndim != 5:  # PyTorch's dropout3d: unbatched, whatever the rank
        x1 = x.unsqueeze(0)
        out = _feature_dropout(op, x1, p, training, inplace, (x1.ndim, x1.ndim))
        return x if inplace else out.squeeze(0)
    if x.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _feature_dropout(op, x, p, training, inplace, (x.ndim, x.ndim))


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Channel dropout of (N, C, L) or unbatched (C, L) (see dropout2d).
    Raises RuntimeError (PyTorch's) for another rank."""
    if isinstance(input, Tensor) and input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note "
            f"that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            f"dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            f"inputs).")
    return _feature_dropout("dropout1d", input, p, training, inplace, (2, 3))


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.feature_dropout(input, p, train)``: zero whole channels (the (N, C) planes of
    an input of 2 or more dims) with probability p, scale the rest by 1 / (1 - p); the input
    itself when not training or p == 0. Grad: input.
    Raises RuntimeError (PyTorch's) for p outside [0, 1] or an input of fewer than 2 dims."""
    return _torch_feature_dropout(input, p, train, False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.feature_dropout_``: feature_dropout written into ``input``; returns input."""
    return _torch_feature_dropout(input, p, train, True)


def _torch_feature_dropout(x, p, train, inplace):
    if not 0.0 <= float(p) <= 1.0:  # PyTorch's top-level message (RuntimeError, not F's)
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if x.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _feature_dropout("feature_dropout", x, p, train, inplace, (x.ndim, x.ndim))


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
                         device=x._storage.device)
    mask = dropout(ones, p, True)
    if inplace:
        return ip.inplace(op + "_", x, lambda s: ew.mul(s, mask))
    return ew.mul(x, mask)


# -- alpha dropout (Klambauer et al., "Self-Normalizing Neural Networks", 2017) --------------
_SELU_SAT = 1.7580993408473766  # -alpha': SELU's negative saturation is -scale * alpha


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """SELU's dropout: each element is dropped with probability p, set to SELU's saturation
    alpha' = -1.7580993408473766, then all are mapped by a x + b so that a zero-mean,
    unit-variance input keeps its mean and variance: a = ((1 - p)(1 + p alpha'^2))^-1/2,
    b = -a alpha' p (PyTorch's ATen formula: out = a x + b where kept, a alpha' + b where
    dropped). The input itself when not training, p == 0 or empty; zeros (x * 0) when p == 1.

    The mask is dropout()'s (Philox, see dropout): reproducible under clgrad.manual_seed.
    Grad:    input (a where kept, 0 where dropped).
    Raises:  ValueError for p outside [0, 1] (F's; torch.alpha_dropout raises RuntimeError).
    """
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _alpha("alpha_dropout", input, p, training, inplace, False)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """alpha_dropout of whole channels: the (N, C) planes of an input of 2 or more dims are
    kept or set to alpha' together (one mask entry per (n, c)), then a x + b as alpha_dropout.
    Grad:    input.
    Raises:  ValueError for p outside [0, 1]; RuntimeError (PyTorch's) for fewer than 2 dims
             when training.
    """
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _alpha("feature_alpha_dropout", input, p, training, inplace, True)


def _alpha(op, x, p, train, inplace, feature):
    _check_float(op, x)
    if p == 0 or not train or x.numel() == 0:
        return x
    if feature and x.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1:  # ATen's input * 0: zeros, a zero gradient
        zero = creation.zeros((), dtype=x.dtype, device=x._storage.device)
        if inplace:
            return ip.inplace(op + "_", x, lambda s: ew.mul(s, zero))
        return ew.mul(x, zero)
    p = float(p)
    a = 1.0 / ((_SELU_SAT * _SELU_SAT * p + 1.0) * (1.0 - p)) ** 0.5
    shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2) if feature else tuple(x.shape)
    ones = creation.ones(shape, dtype=x.dtype, device=x._storage.device)
    keep = ew.to(ew.ne(dropout(ones, p, True), 0), x.dtype)  # 1 kept, 0 dropped
    scale = ew.mul(keep, a)
    shift = ew.add(ew.mul(keep, _SELU_SAT * a), _SELU_SAT * a * (p - 1.0))  # b - a alpha' (1-k)

    def apply(s):
        return ew.add(ew.mul(s, scale), shift)
    if inplace:
        return ip.inplace(op + "_", x, apply)
    return apply(x)


# -- helpers ----------------------------------------------------------------------------------
def _dropout_raw(x, args_fn):
    """One launch of ceil(n / 4) work items, each drawing four random words; ``args_fn`` gives
    the seed and scale arguments (through clgrad.capture.dynamic: new per replay)."""
    out = empty(x.shape, x.dtype, x._storage.device)
    n = out.numel()
    if n == 0:
        return out
    shape, (so, sx) = layout.collapse(x.shape, out._strides, x._strides)
    if len(shape) > MAXD:
        raise RuntimeError(f"dropout: tensors of more than {MAXD} non-mergeable dims are not "
                           f"supported, got shape {tuple(x.shape)}")
    dev = x._storage.device
    args = _capture.dynamic(args_fn)
    dev.launch(dev.kernel(_FILE, "dropout", defines_for(x.dtype)), (layout.cdiv(n, 4),),
               (LOCAL,), np.int64(n), np.int32(len(shape)), shape_arg(shape), out._storage.buffer,
               view_arg(out, so), x._storage.buffer, view_arg(x, sx), *args)
    return out
