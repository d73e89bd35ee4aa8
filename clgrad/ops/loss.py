"""Softmax, log_softmax and the losses built on them: cross_entropy, nll_loss, mse_loss; the
pointwise losses l1, smooth_l1, huber, binary_cross_entropy (with logits), kl_div; the
distances cosine_similarity and pairwise_distance and the losses composed of existing ops
(margin_ranking, hinge_embedding, soft_margin, multilabel_soft_margin, cosine_embedding,
triplet_margin, poisson_nll, gaussian_nll, multi_margin).

softmax/log_softmax are one row kernel each direction (online log-sum-exp). cross_entropy with
class indices is log_softmax + nll fused: one row kernel and one summing kernel forward, one
elementwise kernel backward; targets are checked on the host before any launch.
Every input may be any strided view; outputs are new and contiguous.
Kernels: kernels/loss.cl :: softmax_fwd, softmax_bwd, ce_fwd, ce_finish, ce_bwd,
<name>_fwd/<name>_bwd (POINTWISE_LOSS: one launch per loss and per gradient, then a sum).
"""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from clgrad import capture as _capture, creation, dtypes, layout
from clgrad.autograd import no_grad, record
from clgrad.autograd.graph import output_of, recomputed
from clgrad.ops import activation as act
from clgrad.ops import elementwise as ew
from clgrad.ops import index as ix
from clgrad.ops import linalg
from clgrad.ops import reduce as rd
from clgrad.ops import scan as sc
from clgrad.ops._util import (defines_for, empty, launch_1d, same_device, scalar, shape_arg,
                              view_arg)
from clgrad.ops.norm import split_dim
from clgrad.ops.plan import key as plan_key, run_recorded
from clgrad.tensor import Tensor

__all__ = ["softmax", "log_softmax", "cross_entropy", "nll_loss", "mse_loss", "l1_loss",
           "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "cosine_similarity",
           "pairwise_distance", "margin_ranking_loss", "hinge_embedding_loss",
           "soft_margin_loss", "multilabel_soft_margin_loss", "cosine_embedding_loss",
           "triplet_margin_loss", "poisson_nll_loss", "gaussian_nll_loss", "multi_margin_loss",
           "multilabel_margin_loss", "triplet_margin_with_distance_loss"]

_FILE = "loss.cl"
_ROW_GROUP = 64    # work items per row when rows are long; one work item per row otherwise
_REDUCTIONS = ("mean", "sum", "none")
_BF16 = dtypes.bfloat16  # bfloat16 inputs: the loss computed in float32, rounded once
#                          (ew.via_float32): OpenCL C has no bfloat16 type
_CE_FWD, _CE_BWD = ("loss.cl", "ce_fwd"), ("loss.cl", "ce_bwd")  # plan.key tags of _nll
_F16, _F32 = dtypes.float16, dtypes.float32
# binary_cross_entropy's floor of x (1 - x) in its gradient: loss.cl's BCE_EPS, (T)1e-12f
_BCE_EPS = float(np.float32(1e-12))
_LOSS_ACC = {"LOSS_T": "float"}  # a float16 loss reduced by ce_finish: its rows in float


def softmax(input: Tensor, dim=None, dtype=None) -> Tensor:
    """exp(x - logsumexp(x)) along ``dim``; safe for logits like 1e8; NaN propagates.

    ``dim=None`` takes PyTorch's legacy choice (0 for 0-, 1- and 3-dim inputs, else 1).
    ``dtype`` casts the input first; without it, under ``autocast`` (clgrad.amp) a float16
    input is cast to float32 (PyTorch's float32 list). float16 is computed in float32 and
    rounded once; so is bfloat16. Grad: input.
    """
    return _softmax("softmax", input, dim, dtype, False)


def log_softmax(input: Tensor, dim=None, dtype=None) -> Tensor:
    """x - logsumexp(x) along ``dim`` (see softmax). Grad: input."""
    return _softmax("log_softmax", input, dim, dtype, True)


def cross_entropy(input: Tensor, target: Tensor, weight=None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy between logits and class indices (or class probabilities), PyTorch's.

    Shapes:  input (N, C) or (N, C, d1, ...) or unbatched (C,); target of class indices
             (N,) / (N, d1, ...) / () — or probabilities of the input's shape.
    Per position: l = (1 - eps) w[t] (-log p_t) + eps / C * sum_c w[c] (-log p_c), with
             eps = label_smoothing; 0 where t == ignore_index. 'mean' divides the sum by the
             sum of w[t] over the positions not ignored (nan when every position is).
    Grad:    input
    Raises:  IndexError for a target outside [0, C) that is not ignore_index (checked on the
             host before any launch); RuntimeError for float class labels (a floating target
             of the class-index shape: use ``target.long()``); ValueError for shapes,
             reduction or label_smoothing; TypeError for dtypes.
    """
    input, target, weight = ew.autocast("cross_entropy", input, target, weight, lower=False)
    _check_common("cross_entropy", input, target, reduction)
    if not 0.0 <= float(label_smoothing) <= 1.0:
        raise ValueError(f"cross_entropy: expected label_smoothing in [0, 1], got "
                         f"{label_smoothing}")
    if input._storage.dtype is _BF16:
        return ew.via_float32(cross_entropy, input, target, weight, ignore_index, reduction,
                              label_smoothing)
    if target.dtype.is_floating_point:
        if input._storage.dtype is _F16:  # composed of float16 ops, it rounded each to half
            return ew.low_via_float32(_F16, _soft_cross_entropy, input, target, weight,
                                      reduction, float(label_smoothing))
        return _soft_cross_entropy(input, target, weight, reduction, float(label_smoothing))
    return _nll("cross_entropy", input, target, weight, ignore_index, reduction,
                float(label_smoothing), True)


def nll_loss(input: Tensor, target: Tensor, weight=None, ignore_index: int = -100,
             reduction: str = "mean") -> Tensor:
    """Negative log likelihood of log-probabilities ``input`` at class indices ``target``.

    l = -w[t] input[t] per position (0 where t == ignore_index); shapes, reduction and
    errors as cross_entropy with class indices. Grad: input.
    """
    input, target, weight = ew.autocast("nll_loss", input, target, weight, lower=False)
    _check_common("nll_loss", input, target, reduction)
    if input._storage.dtype is _BF16:
        return ew.via_float32(nll_loss, input, target, weight, ignore_index, reduction)
    if target.dtype.is_floating_point:
        raise TypeError(f"nll_loss: expected integer class indices as target, got "
                        f"{target.dtype}")
    return _nll("nll_loss", input, target, weight, ignore_index, reduction, 0.0, False)


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """(input - target)^2, reduced by 'mean', 'sum' or 'none'; shapes broadcast (with
    PyTorch's UserWarning when they differ). Grad: input and target."""
    _warn_broadcast("mse_loss", input, target)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"mse_loss: expected reduction 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
    input, target = ew.autocast("mse_loss", input, target, lower=False)
    if (isinstance(input, Tensor) and input._storage.dtype is _BF16 or isinstance(
            target, Tensor) and target._storage.dtype is _BF16) and \
            dtypes.result_type(input, target) is _BF16:  # (bfloat16 with float32: float32)
        return ew.via_float32(mse_loss, input, target, reduction)
    if not (isinstance(input, Tensor) and isinstance(target, Tensor)):
        return _mse_of(ew.sub(input, target), reduction)
    _broadcast_first("mse_loss", input, target)
    return _mse(input, target, reduction)


def _mse_composed(reduction):
    def forward(input, target):
        return _mse_of(ew.sub(input, target), reduction)
    return forward


def _mse_of(d, reduction):
    """The loss from the difference d = input - target."""
    sq = ew.mul(d, d)
    return sq if reduction == "none" else rd.mean(sq) if reduction == "mean" else rd.sum(sq)


def _mse(input, target, reduction):
    """mse_loss as one Node whose edges are (input, target), as PyTorch's MseLossBackward0
    (the "Neural Networks" blitz walks ``loss.grad_fn.next_functions[0][0]`` to the model's
    last layer); its gradient 2 (x - t) g (/ n for 'mean'), summed to each operand's shape."""
    with no_grad():
        d = ew.sub(input, target)
        out = _mse_of(d, reduction)

    def backward(g):
        n = d.numel() if reduction == "mean" else 1
        gd = ew.mul(d, ew.mul(g, 2.0 / n) if n else g)
        return (ew.sum_to(gd, input.shape) if input.requires_grad else None,
                ew.neg(ew.sum_to(gd, target.shape)) if target.requires_grad else None)
    return record("mse_loss", out, (input, target), backward, saved=[input, target],
                  double=lambda g, node: recomputed(_mse_composed(reduction),
                                                    (input, target))(g, node))


# -- pointwise losses: one kernel for the loss, one per gradient, then the reduction ----------
def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """|input - target|, reduced ('mean', 'sum', 'none'); shapes broadcast.
    Grad: input and target (sign(x - t), 0 where equal)."""
    input, target = ew.autocast("l1_loss", input, target, lower=False)
    if isinstance(input, Tensor) and input._storage.dtype is _BF16:
        return ew.via_float32(l1_loss, input, target, reduction)
    _warn_broadcast("l1_loss", input, target)
    return _pointwise("l1_loss", "l1", input, target, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - beta / 2 (d = input - target; Girshick,
    Fast R-CNN); beta = 0 is the L1 loss. Grad: input and target.
    Raises ValueError for beta < 0."""
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: expected beta >= 0, got {beta}")
    input, target = ew.autocast("smooth_l1_loss", input, target, lower=False)
    if isinstance(input, Tensor) and input._storage.dtype is _BF16:
        return ew.via_float32(smooth_l1_loss, input, target, reduction, beta)
    _warn_broadcast("smooth_l1_loss", input, target)
    return _one_node("smooth_l1_loss", _pointwise("smooth_l1_loss", "smooth_l1", input,
                                                  target, reduction, p0=beta))


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean",
               delta: float = 1.0) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - delta / 2) (Huber 1964); equals
    delta * smooth_l1_loss(beta=delta). Grad: input and target. Raises ValueError for
    delta <= 0."""
    if delta <= 0:
        raise ValueError(f"huber_loss: expected delta > 0, got {delta}")
    input, target = ew.autocast("huber_loss", input, target, lower=False)
    if isinstance(input, Tensor) and input._storage.dtype is _BF16:
        return ew.via_float32(huber_loss, input, target, reduction, delta)
    _warn_broadcast("huber_loss", input, target)
    return _one_node("huber_loss", _pointwise("huber_loss", "huber", input, target,
                                              reduction, p0=delta))


def binary_cross_entropy(input: Tensor, target: Tensor, weight=None,
                         reduction: str = "mean") -> Tensor:
    """-w (t log x + (1 - t) log(1 - x)) of probabilities x, each log clamped at -100 (so
    x = 0 or 1 gives a finite loss; PyTorch's). Grad: input, w (x - t) / max(x (1 - x),
    1e-12); target. Unlike PyTorch, x outside [0, 1] is not checked (it would need a device
    to host read): it gives NaN. Raises ValueError when target's shape differs from input's."""
    input, target, weight = ew.autocast("binary_cross_entropy", input, target, weight,
                                        lower=False)
    if isinstance(input, Tensor) and input._storage.dtype is _BF16:
        return ew.via_float32(binary_cross_entropy, input, target, weight, reduction)
    _same_shape("binary_cross_entropy", input, target)
    loss = _pointwise("binary_cross_entropy", "bce", input, target, "none")
    return _one_node("binary_cross_entropy",
                     _reduce(_weighted(loss, weight), reduction, "binary_cross_entropy"))


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight=None,
                                     reduction: str = "mean", pos_weight=None) -> Tensor:
    """w ((1 - t) x + (1 + (p - 1) t) log(1 + exp(-x))) for logits x, computed stably
    (log1p(exp(-|x|)) + max(-x, 0)); ``pos_weight`` p broadcasts along the last (class) dim.
    Grad: input, target, weight and pos_weight. Raises ValueError when target's shape
    differs from input's."""
    op = "binary_cross_entropy_with_logits"
    input, target, weight, pos_weight = ew.autocast(op, input, target, weight, pos_weight,
                                                    lower=False)
    if isinstance(input, Tensor) and input._storage.dtype is _BF16:
        return ew.via_float32(binary_cross_entropy_with_logits, input, target, weight,
                              reduction, pos_weight)
    _same_shape(op, input, target)
    aux = None
    if pos_weight is not None:  # the log weight 1 + (p - 1) t, an operand of the kernel
        aux = ew.add(ew.mul(ew.sub(pos_weight, 1.0), target), 1.0)
    loss = _pointwise(op, "bce_logits", input, target, "none", aux=aux)
    return _one_node(op, _reduce(_weighted(loss, weight), reduction, op))


def kl_div(input: Tensor, target: Tensor, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """Pointwise KL divergence of log-probabilities ``input`` from ``target``:
    t (log t - x) (0 where t = 0), or exp(t) (t - x) with ``log_target``. Reductions: 'mean'
    (over every element, as PyTorch's), 'batchmean' (sum / input.size(0), the true KL
    divergence), 'sum', 'none'. Grad: input and target."""
    if reduction not in _REDUCTIONS + ("batchmean",):
        raise ValueError(f"kl_div: expected reduction 'mean', 'batchmean', 'sum' or 'none', "
                         f"got {reduction!r}")
    input, target = ew.autocast("kl_div", input, target, lower=False)
    if isinstance(input, Tensor) and input._storage.dtype is _BF16:
        return ew.via_float32(kl_div, input, target, reduction, log_target)
    loss = _pointwise("kl_div", "kl_div_log" if log_target else "kl_div", input, target,
                      "none")
    if reduction == "batchmean":
        return ew.div(rd.sum(loss), float(input.shape[0] if input.ndim else 1))
    return _reduce(loss, reduction, "kl_div")


# the _pointwise losses whose 0-dim CPU operand may join another device (PyTorch's are
# elementwise ops there); binary_cross_entropy's CUDA kernel refuses it, and BCE-with-logits
# computes (1 - target).mul_(input) in place on the target's device. Those of
# _BROADCAST_FIRST join another 0-dim tensor only (_broadcast_first).
_JOIN_0DIM = frozenset({"l1", "smooth_l1", "huber", "kl_div", "kl_div_log"})
_BROADCAST_FIRST = frozenset({"l1", "smooth_l1", "huber"})


def _broadcast_first(op, x, t):
    """PyTorch's mse, l1, smooth L1 and Huber losses broadcast input and target first
    (torch.broadcast_tensors), after which a 0-dim CPU operand beside a tensor of one dim or
    more has that tensor's dims and no longer joins another device: raises the device error
    then (same_device)."""
    if x._storage.device is not t._storage.device and (x.ndim or t.ndim):
        same_device(op, x, t)


def _pointwise(op, kname, x, t, reduction, p0=0.0, aux=None):
    """The loss kernel over broadcast (x, t, aux) and its backward; then the reduction.
    As PyTorch's, a 0-dim CPU input or target of kl_div joins a tensor of another device
    (copied there), and one of l1, smooth L1 and Huber joins another 0-dim tensor only
    (``_broadcast_first``); binary_cross_entropy's and BCE-with-logits' never do."""
    if not isinstance(x, Tensor) or not isinstance(t, Tensor):
        raise TypeError(f"{op}: expected Tensors for input and target, got "
                        f"{type(x).__name__} and {type(t).__name__}")
    if kname in _BROADCAST_FIRST:
        _broadcast_first(op, x, t)
    if kname in _JOIN_0DIM:
        x, t = ew._cpu_scalar_along(x, t)
    same_device(op, x, t, aux)
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: expected a floating point input, got {x.dtype}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: expected reduction 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
    t = t if t.dtype is x.dtype else ew.to(t, x.dtype)
    a = aux if aux is not None else creation.ones((), dtype=x.dtype, device=x._storage.device)
    a = a if a.dtype is x.dtype else ew.to(a, x.dtype)
    shape = layout.broadcast_shapes(x.shape, t.shape, a.shape, op=op)
    ops = tuple(v if tuple(v.shape) == shape else v.expand(shape) for v in (x, t, a))
    d = defines_for(x.dtype)
    d["WG"] = 1
    c = scalar(x.dtype, p0)
    out = empty(shape, x.dtype, x._storage.device)
    launch_1d(_FILE, kname + "_fwd", d, out, ops, (c,))

    def backward(g):
        grads = []
        for k, v in enumerate(ops):
            gv = None
            if v.requires_grad:
                gv = empty(shape, x.dtype, x._storage.device)
                launch_1d(_FILE, kname + "_bwd", d, gv, (g,) + ops, (c, np.int32(k)))
            grads.append(gv)
        return tuple(grads)

    def double(g, node):  # create_graph: the kernels' formulas of recorded ops
        want = tuple(v.requires_grad for v in ops)
        return tuple(None if d is None else ew.mul(g, d)
                     for d in _loss_derivatives(kname, *ops, p0, want))
    loss = record(op, out, ops, backward, saved=list(ops), double=double)
    return _reduce(loss, reduction, op)


def _loss_derivatives(kname, x, t, a, p0, want):
    """d loss / d(x, t, a) of the pointwise loss ``kname`` (None where ``want`` is False) of
    recorded ops, so differentiable again (create_graph): kernels/loss.cl's POINTWISE_LOSS
    formulas and clamps (PyTorch's: Loss.cpp, BinaryCrossEntropy.cpp)."""
    dx = dt = da = None
    if kname in ("l1", "smooth_l1", "huber"):
        d = ew.sub(x, t)
        if kname == "huber":
            dx = ew.clamp(d, -p0, p0)
        elif kname == "l1" or p0 == 0:  # (smooth_l1 with beta 0 is l1)
            dx = ew.sign(d)
        else:
            dx = ew.where(ew.lt(ew.abs(d), p0), ew.div(d, p0), ew.sign(d))
        dt = ew.neg(dx) if want[1] else None
        return dx if want[0] else None, dt, None
    if kname == "bce":
        if want[0]:
            dx = ew.div(ew.sub(x, t), ew.clamp(ew.mul(ew.sub(1.0, x), x), min=_BCE_EPS))
        if want[1]:
            dt = ew.sub(_log100(ew.sub(1.0, x)), _log100(x))
    elif kname == "bce_logits":  # a: the log weight 1 + (pos_weight - 1) t
        if want[0]:
            dx = ew.sub(ew.sub(1.0, t), ew.mul(a, ew.sigmoid(ew.neg(x))))
        dt = ew.neg(x) if want[1] else None
        da = ew.neg(act.logsigmoid(x)) if want[2] else None  # log(1 + exp(-x))
    elif kname == "kl_div":
        dx = ew.neg(t) if want[0] else None
        dt = ew.sub(ew.add(ew.log(t), 1.0), x) if want[1] else None
    else:  # kl_div_log
        dx = ew.neg(ew.exp(t)) if want[0] else None
        dt = ew.mul(ew.exp(t), ew.add(ew.sub(t, x), 1.0)) if want[1] else None
    return dx, dt, da


def _log100(v):
    """log(v) clamped below at -100 (binary_cross_entropy's, PyTorch's), NaN kept."""
    return ew.clamp(ew.log(v), min=-100.0)


def _reduce(loss, reduction, op):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: expected reduction 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
    return loss if reduction == "none" else rd.mean(loss) if reduction == "mean" else \
        rd.sum(loss)


def _one_node(op, out):
    """``out`` with its grad_fn named ``op``: PyTorch computes this loss as one op, so its
    grad_fn prints as 'BinaryCrossEntropyWithLogitsBackward0' (a tutorial prints it); clgrad's
    last node (a reduction, a weighting) gets that name. Only the name changes."""
    node = out._grad_fn if isinstance(out, Tensor) else None
    if node is not None:
        node._op = op
    return out


def _weighted(loss, weight):
    return loss if weight is None else ew.mul(loss, weight)


def _same_shape(op, x, t):
    if isinstance(x, Tensor) and isinstance(t, Tensor) and tuple(x.shape) != tuple(t.shape):
        raise ValueError(f"{op}: expected target of the input's size {tuple(x.shape)}, got "
                         f"{tuple(t.shape)}")


# -- distances (PyTorch's aten/src/ATen/native/Distance.cpp) ----------------------------------
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 x2) / (max(||x1||, eps) max(||x2||, eps)) along ``dim`` (PyTorch 2's formula:
    each tensor divided by its norm clamped at eps, then the product summed).

    Shapes:  x1, x2 broadcast together to (*S) -> S without ``dim``
    Dtypes:  the promoted dtype, which must be floating (integer operands are converted)
    Grad:    x1 and x2; the clamp of the norms is not differentiated (PyTorch clamps under
             no_grad: the norm's own gradient is taken as if unclamped)
    Raises:  RuntimeError when the promoted dtype is not floating; IndexError for ``dim``
    """
    dt = dtypes.result_type(x1, x2)
    if not dt.is_floating_point:
        raise RuntimeError(f"cosine_similarity: expected common dtype to be floating point, yet "
                           f"common dtype is {dt}")
    x1, x2 = (v if v.dtype is dt else ew.to(v, dt) for v in (x1, x2))
    shape = layout.broadcast_shapes(x1.shape, x2.shape, op="cosine_similarity")
    x1, x2 = (v if tuple(v.shape) == shape else v.expand(shape) for v in (x1, x2))
    d = layout.wrap_dim(dim, len(shape), "cosine_similarity")

    def unit(v):
        n = linalg.vector_norm(v, 2, d, True)
        with no_grad():
            lift = ew.sub(ew.clamp(n, min=eps), n)  # max(n, eps) - n, not differentiated
        return ew.div(v, ew.add(n, lift))
    return rd.sum(ew.mul(unit(x1), unit(x2)), d)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """||x1 - x2 + eps||_p along the last dim of the broadcast shape (PyTorch's).

    Shapes:  x1, x2 broadcast together to (*S, D) -> S (S + (1,) with ``keepdim``)
    Grad:    x1 and x2 (vector_norm's)
    """
    diff = ew.add(ew.sub(x1, x2), eps)
    return linalg.vector_norm(diff, p, -1 if diff.ndim else None, keepdim)


# -- losses composed of existing ops (PyTorch's aten/src/ATen/native/Loss.cpp formulas) -------
def _legacy_reduction(op, size_average, reduce, reduction):
    """PyTorch's deprecated size_average / reduce turned into a reduction (with its warning)."""
    if size_average is None and reduce is None:
        return _check_red(op, reduction)
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  "reduction='sum' instead." if size_average is False and reduce is not False
                  else "size_average and reduce args will be deprecated, please use "
                  "reduction='mean' instead." if reduce is not False else
                  "size_average and reduce args will be deprecated, please use "
                  "reduction='none' instead.", UserWarning, stacklevel=3)
    if reduce is False:
        return "none"
    return "sum" if size_average is False else "mean"


def _check_red(op, reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: expected reduction 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
    return reduction


def _tensors(op, **named):
    for name, v in named.items():
        if not isinstance(v, Tensor):
            raise TypeError(f"{op}: expected {name} to be a Tensor, got {type(v).__name__}")


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """max(0, -y (x1 - x2) + margin), reduced (PyTorch's torch.nn.MarginRankingLoss).

    Shapes:  input1, input2, target of one number of dims, broadcast together
    Grad:    input1, input2 (and target); at the kink the gradient passes (PyTorch's
             clamp_min)
    Raises:  RuntimeError when the numbers of dims differ; ValueError for reduction
    """
    red = _legacy_reduction("margin_ranking_loss", size_average, reduce, reduction)
    _tensors("margin_ranking_loss", input1=input1, input2=input2, target=target)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {tuple(input1.shape)}, input2: "
                           f"{tuple(input2.shape)}, target: {tuple(target.shape)} ")
    loss = ew.clamp(ew.add(ew.mul(ew.neg(target), ew.sub(input1, input2)), margin), min=0)
    return _reduce(loss, red, "margin_ranking_loss")


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    """x where y = 1, max(0, margin - x) where y = -1 (PyTorch's torch.nn.HingeEmbeddingLoss:
    where(y != 1, max(0, margin - x), 0) + where(y != -1, x, 0)), reduced.

    Shapes:  input (*), target (*) of +-1 (broadcast) -> () or (*) ('none')
    Grad:    input
    """
    red = _legacy_reduction("hinge_embedding_loss", size_average, reduce, reduction)
    _tensors("hinge_embedding_loss", input=input, target=target)
    zeros = creation.zeros((), dtype=input.dtype, device=input.device)
    margin_part = ew.where(ew.ne(target, 1), ew.clamp(ew.sub(margin, input), min=0), zeros)
    self_part = ew.where(ew.ne(target, -1), input, zeros)
    return _reduce(ew.add(margin_part, self_part), red, "hinge_embedding_loss")


def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """log(1 + exp(-y x)), reduced (PyTorch's torch.nn.SoftMarginLoss), computed stably as
    -logsigmoid(y x) (PyTorch's log1p(exp(.)) overflows to inf past y x < -88 in float32).

    Shapes:  input (*), target (*) (broadcast) -> () or (*) ('none')
    Grad:    input and target: -y sigmoid(-y x) for the input
    """
    red = _legacy_reduction("soft_margin_loss", size_average, reduce, reduction)
    _tensors("soft_margin_loss", input=input, target=target)
    loss = ew.neg(act.logsigmoid(ew.mul(input, target)))
    return _one_node("soft_margin_loss", _reduce(loss, red, "soft_margin_loss"))


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """-(y logsigmoid(x) + (1 - y) logsigmoid(-x)), times ``weight`` (per class), averaged
    over the last (class) dim, then reduced (PyTorch's torch.nn.MultiLabelSoftMarginLoss).

    Shapes:  input (N, C) or (C,), target of 0/1 the same -> () or (N,) ('none')
    Grad:    input, target and weight
    """
    red = _legacy_reduction("multilabel_soft_margin_loss", size_average, reduce, reduction)
    _tensors("multilabel_soft_margin_loss", input=input, target=target)
    loss = ew.neg(ew.add(ew.mul(target, act.logsigmoid(input)),
                         ew.mul(ew.sub(1.0, target), act.logsigmoid(ew.neg(input)))))
    if weight is not None:
        loss = ew.mul(loss, weight)
    cdim = input.ndim - 1
    loss = ew.div(rd.sum(loss, cdim), float(input.shape[cdim]))
    return _reduce(loss, red, "multilabel_soft_margin_loss")


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where y = 1, max(0, cos(x1, x2) - margin) where y = -1 (0 elsewhere),
    cos = sum(x1 x2) / sqrt((sum(x1^2) + 1e-12) (sum(x2^2) + 1e-12)) (PyTorch's
    torch.nn.CosineEmbeddingLoss), reduced.

    Shapes:  input1, input2 (N, D) with target (N,), or (D,) with a 0-dim target
    Grad:    input1 and input2
    Raises:  RuntimeError for other shapes (PyTorch's messages); ValueError for reduction
    """
    red = _legacy_reduction("cosine_embedding_loss", size_average, reduce, reduction)
    _tensors("cosine_embedding_loss", input1=input1, input2=input2, target=target)
    td = target.ndim
    if td not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    want = 2 if td == 1 else 1
    if input1.ndim != want or input2.ndim != want:
        raise RuntimeError(f"{td}D target tensor expects {want}D input tensors, but found "
                           f"inputs with sizes {list(input1.shape)} and {list(input2.shape)}.")
    prod = rd.sum(ew.mul(input1, input2), td)
    mag1 = ew.add(rd.sum(ew.mul(input1, input1), td), 1e-12)
    mag2 = ew.add(rd.sum(ew.mul(input2, input2), td), 1e-12)
    cos = ew.div(prod, ew.sqrt(ew.mul(mag1, mag2)))
    zeros = creation.zeros((), dtype=cos.dtype, device=cos.device)
    pos = ew.where(ew.eq(target, 1), ew.sub(1.0, cos), zeros)
    neg = ew.where(ew.eq(target, -1), ew.clamp(ew.sub(cos, margin), min=0), zeros)
    return _reduce(ew.add(pos, neg), red, "cosine_embedding_loss")


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    """max(0, margin + d(a, p) - d(a, n)), d = pairwise_distance(., ., p, eps); with ``swap``
    d(a, n) is min(d(a, n), d(p, n)) (PyTorch's torch.nn.TripletMarginLoss), reduced.

    Shapes:  anchor, positive, negative (N, D) or (D,), one number of dims -> () or (N,)
    Grad:    anchor, positive and negative
    Raises:  ValueError for margin <= 0 or reduction; RuntimeError when the numbers of dims
             differ
    """
    red = _legacy_reduction("triplet_margin_loss", size_average, reduce, reduction)
    _tensors("triplet_margin_loss", anchor=anchor, positive=positive, negative=negative)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, pd, nd = anchor.ndim, positive.ndim, negative.ndim
    if not a == pd == nd:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a}D, positive {pd}D, "
                           f"and negative {nd}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = ew.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    loss = ew.clamp(ew.sub(ew.add(d_pos, margin), d_neg), min=0)
    return _reduce(loss, red, "triplet_margin_loss")


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """Poisson negative log likelihood (PyTorch's torch.nn.PoissonNLLLoss): exp(x) - y x
    (``log_input``) or x - y log(x + eps); with ``full`` Stirling's term
    y log y - y + log(2 pi y) / 2 added where y > 1. Reduced.

    Shapes:  input (*), target (*) (broadcast) -> () or (*) ('none')
    Grad:    input and target
    """
    red = _legacy_reduction("poisson_nll_loss", size_average, reduce, reduction)
    _tensors("poisson_nll_loss", input=input, target=target)
    if log_input:
        loss = ew.sub(ew.exp(input), ew.mul(target, input))
    else:
        loss = ew.sub(input, ew.mul(target, ew.log(ew.add(input, eps))))
    if full:
        stirling = ew.add(ew.sub(ew.mul(target, ew.log(target)), target),
                          ew.mul(ew.log(ew.mul(target, 2 * math.pi)), 0.5))
        stirling = ew.where(ew.le(target, 1), creation.zeros(
            (), dtype=stirling.dtype, device=stirling.device), stirling)
        loss = ew.add(loss, stirling)
    return _reduce(loss, red, "poisson_nll_loss")


def gaussian_nll_loss(input: Tensor, target: Tensor, var, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """(log(max(var, eps)) + (x - y)^2 / max(var, eps)) / 2 (+ log(2 pi) / 2 with ``full``),
    reduced (PyTorch's torch.nn.GaussianNLLLoss).

    Shapes:  input (N, *) and target (broadcast); var of the input's shape, or one dim
             short of it (a last dim of 1 added), or of its number of dims with exactly one
             dim of size 1 where the input's differs; or a non-negative float
    Grad:    input, target and var (the clamp at eps is not differentiated: PyTorch clamps
             under no_grad)
    Raises:  ValueError for a negative var (read on the host: a device-to-host read of var,
             as PyTorch's check), a var of another size, or reduction
    """
    _tensors("gaussian_nll_loss", input=input, target=target)
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = creation.full(tuple(input.shape), float(var), dtype=input.dtype,
                            device=input.device)
    elif not isinstance(var, Tensor):
        raise TypeError(f"gaussian_nll_loss: expected var to be a Tensor or a float, got "
                        f"{type(var).__name__}")
    elif not _capture.is_capturing() and bool(rd.any(ew.lt(var, 0)).item()):
        raise ValueError("var has negative entry/entries")
    xs, vs = tuple(input.shape), tuple(var.shape)
    if vs != xs:
        if xs[:-1] == vs:
            var = var.unsqueeze(-1)
        elif not (len(xs) == len(vs) and sum(v for x, v in zip(xs, vs) if x != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    with no_grad():
        lift = ew.sub(ew.clamp(var, min=eps), var)  # max(var, eps) - var, not differentiated
    var = ew.add(var, lift)
    d = ew.sub(input, target)
    loss = ew.mul(ew.add(ew.log(var), ew.div(ew.square(d), var)), 0.5)
    if full:
        loss = ew.add(loss, 0.5 * math.log(2 * math.pi))
    return _reduce(loss, reduction, "gaussian_nll_loss")


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average=None, reduce=None,
                      reduction: str = "mean") -> Tensor:
    """sum over i != y of w[y] max(0, margin - x[y] + x[i])^p / C per sample (PyTorch's
    torch.nn.MultiMarginLoss), reduced.

    Shapes:  input (N, C) or (C,); target (N,) / () int64 class indices -> () or (N,) / ()
    Grad:    input (0 where a term is exactly 0, PyTorch's strict z > 0) and weight
    Raises:  ValueError for p not 1 or 2, a weight that is not 1-D, or reduction;
             RuntimeError for shapes; IndexError for a target outside [0, C) (read on the
             host, as cross_entropy's)
    """
    red = _legacy_reduction("multi_margin_loss", size_average, reduce, reduction)
    _tensors("multi_margin_loss", input=input, target=target)
    if p not in (1, 2) or isinstance(p, bool):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    if not input.dtype.is_floating_point:
        raise TypeError(f"multi_margin_loss: expected a floating point input, got "
                        f"{input.dtype}")
    if input.ndim not in (1, 2) or input.ndim == 2 and input.shape[1] == 0 or (
            input.ndim == 1 and input.shape[0] == 0):
        raise RuntimeError(f"multi_margin_loss: Expected non-empty vector or matrix with "
                           f"optional 0-dim batch size, but got: {list(input.shape)}")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    nc = x.shape[1]
    t = target.reshape(-1) if target.ndim <= 1 else target
    if target.ndim > 1 or t.shape[0] != x.shape[0]:
        raise RuntimeError(f"multi_margin_loss: inconsistent target size: "
                           f"{list(target.shape)} for input of size: {list(input.shape)}")
    if t.dtype.is_floating_point or t.dtype.is_bool:
        raise RuntimeError(f"multi_margin_loss: expected target of dtype int64 (Long), got "
                           f"{t.dtype}")
    t = t if t.dtype is dtypes.int64 else ew.to(t, dtypes.int64)
    if not _capture.is_capturing():
        tv = _host_values(t)
        if np.count_nonzero((tv < 0) | (tv >= nc)):
            raise IndexError(f"multi_margin_loss: target out of range: expected class indices "
                             f"in [0, {nc}), got {tv.tolist()}")
    ti = t.unsqueeze(1)
    z = ew.relu(ew.add(ew.sub(x, ix.gather(x, 1, ti)), margin))  # relu: strict z > 0
    if p == 2:
        z = ew.mul(z, z)
    if weight is not None:
        z = ew.mul(z, ix.gather(weight, 0, t).unsqueeze(1))
    other = ew.ne(creation.arange(nc, device=x.device), ti)  # i != y
    loss = ew.div(rd.sum(ew.mul(z, other), 1), float(nc))
    if input.ndim == 1 and target.ndim == 0:  # (a (1,) target keeps its dim: PyTorch's)
        loss = loss.reshape(())
    return _reduce(loss, red, "multi_margin_loss")


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """sum over target classes j and non-target classes i of max(0, 1 - (x[j] - x[i])) / C
    per sample (PyTorch's torch.nn.MultiLabelMarginLoss); the target classes of a sample are
    its target's entries up to the first -1 (a class listed twice counts twice, as ATen's
    loop), reduced.

    Shapes:  input (N, C) or (C,) (or 0-dim); target int64 of the input's shape -> () or
             (N,) / () ('none')
    Grad:    input (0 where a term is exactly 0, PyTorch's strict z > 0)
    Raises:  RuntimeError for shapes, a target not int64, or a target entry outside
             [-1, C) (read on the host, as multi_margin_loss's); ValueError for reduction
    """
    red = _legacy_reduction("multilabel_margin_loss", size_average, reduce, reduction)
    _tensors("multilabel_margin_loss", input=input, target=target)
    if input.ndim > 2 or input.ndim == 2 and input.shape[1] == 0 or (
            input.ndim == 1 and input.shape[0] == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    if target.dtype is not dtypes.int64:
        raise RuntimeError(f"expected scalar type Long but found "
                           f"{dtypes.torch_name(target.dtype)}")
    x = input.reshape(-1, max(input.shape[-1], 1) if input.ndim else 1)
    t = target.reshape(x.shape)
    nc = x.shape[1]
    if not _capture.is_capturing() and t.numel():
        tv = _host_values(t)
        if np.count_nonzero((tv < -1) | (tv >= nc)):
            raise RuntimeError("argument #2 'target' is out of range")
    # the targets before the first -1: a prefix mask; cnt[n, j] = how often class j is listed
    valid = ew.eq(sc.cumsum(ew.to(ew.lt(t, 0), dtypes.int64), 1), 0)
    classes = creation.arange(nc, device=x.device)
    listed = ew.logical_and(ew.eq(t.unsqueeze(2), classes), valid.unsqueeze(2))  # (N, k, j)
    cnt = rd.sum(ew.to(listed, x.dtype), 1)                                       # (N, C)
    other = ew.to(ew.eq(cnt, 0), x.dtype)                                         # i not listed
    z = ew.relu(ew.add(ew.sub(x.unsqueeze(1), x.unsqueeze(2)), 1.0))  # [n, j, i]: 1 - xj + xi
    terms = ew.mul(ew.mul(z, cnt.unsqueeze(2)), other.unsqueeze(1))
    loss = ew.div(rd.sum(terms, (1, 2)), float(nc))
    if input.ndim < 2:
        loss = loss.reshape(())
    return _reduce(loss, red, "multilabel_margin_loss")


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """max(0, margin + d(a, p) - d(a, n)) with any distance ``d`` (default pairwise_distance);
    with ``swap`` d(a, n) is min(d(a, n), d(p, n)) (PyTorch's
    torch.nn.TripletMarginWithDistanceLoss), reduced.

    Shapes:  anchor, positive, negative of one number of dims, what d takes -> d's shape
             reduced
    Grad:    anchor, positive and negative (through d)
    Raises:  ValueError for reduction or margin <= 0; RuntimeError when the numbers of dims
             differ
    """
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _tensors("triplet_margin_with_distance_loss", anchor=anchor, positive=positive,
             negative=negative)
    a, pd, nd = anchor.ndim, positive.ndim, negative.ndim
    if not a == pd == nd:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a}D, positive {pd}D, "
                           f"and negative {nd}D inputs")
    d = pairwise_distance if distance_function is None else distance_function
    d_pos, d_neg = d(anchor, positive), d(anchor, negative)
    if swap:
        d_neg = ew.minimum(d_neg, d(positive, negative))
    loss = ew.clamp(ew.sub(ew.add(d_pos, margin), d_neg), min=0)
    return _reduce(loss, reduction, "triplet_margin_with_distance_loss")


# -- softmax ----------------------------------------------------------------------------------
def _softmax(op, x, dim, dtype, log_out):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if dtype is not None:
        x = ew.to(x, dtype)
    else:  # autocast: PyTorch's float32 list (an explicit dtype wins, as there)
        x, = ew.autocast(op, x, lower=False, cuda_only=True)
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: expected a floating point input (or dtype=), got {x.dtype}")
    if x.ndim == 0:
        return _softmax(op, x.reshape(1), 0, None, log_out).reshape(())
    if x._storage.dtype is dtypes.float16 or x._storage.dtype is _BF16:
        # in float32, rounded once (PyTorch's): a float16 sum of exps overflows past 65504
        y32 = _softmax(op, ew.to(x, dtypes.float32), dim, None, log_out)
        return ew.to(y32, x.dtype)
    if dim is None:
        dim = 0 if x.ndim in (0, 1, 3) else 1
    d = layout.wrap_dim(dim, x.ndim, op)
    y = empty(x.shape, x.dtype, x._storage.device)
    length = x.shape[d]
    rest, (vy, vx), (sy, sx) = _rows(x.shape, d, y, x)
    nrows = layout.numel(rest) if length else 0
    flag = np.int32(1 if log_out else 0)
    _launch_rows("softmax_fwd", x, nrows, length, len(rest), shape_arg(rest), np.int64(length),
                 y._storage.buffer, vy, sy, x._storage.buffer, vx, sx, flag)

    yd = y.detach()  # the closure must not hold its own output (a reference cycle)

    def backward(gy):
        gx = empty(x.shape, x.dtype, x._storage.device)
        rest2, (vgx, vgy, vy2), (sgx, sgy, sy2) = _rows(x.shape, d, gx, gy, yd)
        _launch_rows("softmax_bwd", x, nrows, length, len(rest2), shape_arg(rest2),
                     np.int64(length), gx._storage.buffer, vgx, sgx, gy._storage.buffer, vgy,
                     sgy, yd._storage.buffer, vy2, sy2, flag)
        return (gx,)

    def double(gy, node):  # create_graph: the same formulas of recording ops
        yy = output_of(node, yd)
        if log_out:  # gy - exp(y) sum(gy)
            return (ew.sub(gy, ew.mul(ew.exp(yy), rd.sum(gy, d, keepdim=True))),)
        return (ew.mul(yy, ew.sub(gy, rd.sum(ew.mul(gy, yy), d, keepdim=True))),)
    return record(op, y, (x,), backward, saved=[yd], double=double)


# -- cross entropy with class indices ---------------------------------------------------------
def _nll(op, x, target, weight, ignore, reduction, eps, logits):
    """Class-index losses: one row launch (+ one summing launch) forward, one launch back."""
    xshape = x._shape  # (the slots, not the properties: host time per call)
    cdim = 0 if len(xshape) == 1 else 1
    nc = xshape[cdim]
    if type(ignore) is not int:  # (PyTorch: an int argument; 1.5 is not truncated to 1)
        try:
            ignore = operator.index(ignore)
        except TypeError:
            raise TypeError(f"{op}(): argument 'ignore_index' must be int, not "
                            f"{type(ignore).__name__}") from None
    target = _check_class_args(op, x, target, weight, nc, ignore)
    dev, dt = x._storage.device, x._storage.dtype
    # the row statistics, the sums and a reduced loss's rows in ACC (kernels/loss.cl: float
    # for float16, so that its loss and gradient are rounded once), LOSS_T's define with them
    acc = _F32 if dt is _F16 else dt
    more = _LOSS_ACC if dt is _F16 and reduction != "none" else None
    nrows = math.prod(target._shape)
    loss = Tensor._empty(target._shape, acc if more else dt, dev)  # per position
    wrow, rmax, rsum = (Tensor._empty((nrows,), acc, dev), Tensor._empty((nrows,), acc, dev),
                        Tensor._empty((nrows,), acc, dev))
    t_st = _with_dim(target._strides, cdim)
    mean = np.int32(reduction == "mean")

    def args():  # (the launches' weight and constant arguments: made when recorded)
        w = (weight._storage.buffer, view_arg(weight), np.int32(1)) if weight is not None \
            else (x._storage.buffer, view_arg(x, (0,)), np.int32(0))
        return w, (np.int64(ignore), scalar(dt, eps, True), np.int32(1 if logits else 0))
    out, denom = loss, loss
    if reduction != "none":
        out, denom = Tensor._empty((), dt, dev), Tensor._empty((), acc, dev)

    def forward():
        w, consts = args()
        if nrows:
            rest, (vx, vt), (sxc, _) = _rows(x.shape, cdim, x, _Strided(target, t_st))
            _launch_rows("ce_fwd", x, nrows, nc if logits else 1, len(rest), shape_arg(rest),
                         np.int64(nc), x._storage.buffer, vx, sxc, target._storage.buffer, vt,
                         *w, *consts, loss._storage.buffer, wrow._storage.buffer,
                         rmax._storage.buffer, rsum._storage.buffer, more=more)
        if reduction != "none":
            dev.launch(dev.kernel(_FILE, "ce_finish", _defines(x, 1, more)), (256,), (256,),
                       np.int64(nrows), loss._storage.buffer, wrow._storage.buffer, mean,
                       out._storage.buffer, denom._storage.buffer)
    # The launches recorded once per signature and replayed after: every layout they read
    # (input, target, weight) and every constant in the key (the device: the dict).
    params = (ignore, eps, math.copysign(1.0, eps), bool(logits), reduction)  # (-0.0)
    wb = None if weight is None else weight._storage.buffer
    run_recorded(dev, plan_key(_CE_FWD, (x, target, weight), params), forward, (
        x._storage.buffer, target._storage.buffer, wb, loss._storage.buffer,
        wrow._storage.buffer, rmax._storage.buffer, rsum._storage.buffer,
        *((out._storage.buffer, denom._storage.buffer) if reduction != "none" else ())))

    def backward(gy):
        gx = Tensor._empty(xshape, dt, dev)
        if not math.prod(xshape):
            return (gx,)
        wsum = gx
        if weight is not None and eps and logits:  # sum_c w_c, in ACC
            wsum = rd.sum_into(Tensor._empty((), acc, dev), weight, 0)

        def launch():
            w, consts = args()
            g = gy if reduction == "none" else _Strided(gy, (0,) * target.ndim)  # one value
            rest, (vx, vt, vg), (sxc, _, _) = _rows(x.shape, cdim, x, _Strided(target, t_st),
                                                    _Strided(g, _with_dim(g._strides, cdim)))
            ns = layout.numel(x.shape[2:]) if x.ndim > 1 else 1
            dev.launch(dev.kernel(_FILE, "ce_bwd", _defines(x, 1)), (gx.numel(),), (256,),
                       np.int64(gx.numel()), np.int64(nc), np.int64(ns), np.int32(len(rest)),
                       shape_arg(rest), gx._storage.buffer, x._storage.buffer, vx, sxc,
                       target._storage.buffer, vt, *w, gy._storage.buffer, vg,
                       denom._storage.buffer, mean, rmax._storage.buffer,
                       rsum._storage.buffer, wsum._storage.buffer, *consts)
        own = wsum is not gx  # (else gx's buffer stands in for it)
        run_recorded(dev, plan_key(_CE_BWD, (x, target, weight, gy), (*params, own)), launch, (
            gx._storage.buffer, x._storage.buffer, target._storage.buffer, wb,
            gy._storage.buffer, denom._storage.buffer, rmax._storage.buffer,
            rsum._storage.buffer, wsum._storage.buffer if own else None))
        return (gx,)
    saved = [x, target] + ([weight] if weight is not None else [])
    double = lambda g, node: recomputed(  # noqa: E731 (made when needed)
        _nll_composed(op, target, weight, ignore, reduction, eps, logits, cdim), (x,))(g, node)
    # nll_loss: PyTorch's nll_loss_backward reads the input (linked: autograd.graph._linked)
    return record(op, out, (x,), backward, saved=saved,
                  double=double if logits else (double, (0,), True))


def _nll_composed(op, target, weight, ignore, reduction, eps, logits, cdim):
    """The class-index loss of ``target`` as ops whose backward is differentiable (one-hot
    masks, log_softmax, sums): what create_graph differentiates (Node.double through
    autograd.graph.recomputed). Raises RuntimeError for label_smoothing (not differentiable
    twice in clgrad yet)."""
    def forward(x):
        if eps:
            raise RuntimeError(f"create_graph: the backward of {op!r} with label_smoothing is "
                               f"not differentiable in clgrad yet")
        logp = _softmax("log_softmax", x, cdim, None, True) if logits else x
        nc = x.shape[cdim]
        classes = creation.arange(nc, device=x.device).reshape(
            tuple(nc if i == cdim else 1 for i in range(x.ndim)))
        t = target.unsqueeze(cdim)
        hot = ew.to(ew.eq(t, classes), x.dtype)  # (N, C, ...): 1 at the target class
        if weight is not None:
            hot = ew.mul(hot, weight.reshape(tuple(nc if i == cdim else 1
                                                   for i in range(x.ndim))))
        hot = ew.mul(hot, ew.to(ew.ne(t, ignore), x.dtype))  # ignored positions: 0
        loss = ew.neg(rd.sum(ew.mul(hot, logp), cdim))  # per position, weighted
        if reduction == "none":
            return loss
        if reduction == "sum":
            return rd.sum(loss)
        return ew.div(rd.sum(loss), rd.sum(hot))  # the weighted mean
    return forward


def _soft_cross_entropy(x, target, weight, reduction, eps):
    """Probability targets: -sum_c w_c q_c log p_c with q smoothed by eps (PyTorch)."""
    cdim = 0 if x.ndim == 1 else 1
    if tuple(target.shape) == tuple(x.shape[:cdim] + x.shape[cdim + 1:]):
        raise RuntimeError(f"cross_entropy: expected class indices of dtype int64 (Long) as "
                           f"target, got {target.dtype} of shape {tuple(target.shape)}: use "
                           f"target.long() (probability targets have the input's shape "
                           f"{tuple(x.shape)})")
    if tuple(target.shape) != tuple(x.shape):
        raise ValueError(f"cross_entropy: expected probability targets of the input's shape "
                         f"{tuple(x.shape)}, got {tuple(target.shape)}")
    nc = x.shape[cdim]
    q = ew.add(ew.mul(target, 1.0 - eps), eps / nc) if eps else target
    prod = ew.mul(log_softmax(x, cdim), q)
    if weight is not None:
        prod = ew.mul(prod, weight.reshape((nc,) + (1,) * (x.ndim - cdim - 1)))
    loss = ew.neg(rd.sum(prod, cdim))
    return loss if reduction == "none" else rd.mean(loss) if reduction == "mean" else \
        rd.sum(loss)


# -- helpers ----------------------------------------------------------------------------------
class _Strided:
    """A tensor seen with other strides (only ``_strides`` and ``_offset`` are read)."""

    def __init__(self, t: Tensor, strides):
        self._strides, self._offset, self._storage = tuple(strides), t._offset, t._storage


def _with_dim(strides, dim):
    """Strides of a tensor lacking ``dim`` (a target), with stride 0 inserted there."""
    st = list(strides)
    st.insert(dim, 0)
    return tuple(st)


def _rows(shape, dim, *tensors):
    """(rest shape, [view_t per tensor], [stride along dim per tensor]) for row kernels."""
    rest, rest_st, dim_st = split_dim(tuple(shape), dim, *[t._strides for t in tensors])
    views = [view_arg(t, st) for t, st in zip(tensors, rest_st)]
    return rest, views, [np.int64(s) for s in dim_st]


def _warn_broadcast(op, x, target):
    """PyTorch's UserWarning when a regression loss's target shape differs from the input's:
    (N, 1) against (N,) broadcasts to (N, N) and gives a wrong loss without an error."""
    xs, ts = getattr(x, "shape", None), getattr(target, "shape", None)
    if xs is not None and ts is not None and tuple(xs) != tuple(ts):
        warnings.warn(f"{op}: using a target size {tuple(ts)} that is different to the input "
                      f"size {tuple(xs)}. This will likely lead to incorrect results due to "
                      f"broadcasting. Please ensure they have the same size.", UserWarning,
                      stacklevel=4)  # past the face's argument check (_util)


def _check_common(op, x, target, reduction):
    if not isinstance(x, Tensor) or not isinstance(target, Tensor):
        raise TypeError(f"{op}: expected Tensors for input and target, got "
                        f"{type(x).__name__} and {type(target).__name__}")
    same_device(op, x, target)
    if not x._storage.dtype.is_floating_point:  # (the slots: host time per call)
        raise TypeError(f"{op}: expected a floating point input, got {x.dtype}")
    if not x._shape:
        raise ValueError(f"{op}: expected an input of shape (C,), (N, C) or (N, C, d1, ...), "
                         f"got a 0-dim tensor")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: expected reduction 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
    if target._storage.dtype.is_bool:
        raise TypeError(f"{op}: expected integer class indices or float probabilities as "
                        f"target, got {target.dtype}")


def _host_values(t: Tensor) -> np.ndarray:
    """t's values on the host: from the host copy its storage kept at upload (Storage.
    keep_host; no device read, so no wait for the kernels queued before, e.g. the forward
    pass on a GPU), else read from the device."""
    flat = t._storage.host_values()
    if flat is not None and layout.is_contiguous(t._shape, t._strides):
        return flat[t._offset:t._offset + math.prod(t._shape)].reshape(t._shape)
    return t.detach().numpy()


def _check_class_args(op, x, target, weight, nc, ignore) -> Tensor:
    """Shapes, weight and the targets' range (read on the host, before any launch); returns
    the target as int64."""
    xshape = x._shape  # (the slots, not the properties: host time per call)
    want = () if len(xshape) == 1 else (xshape[0], *xshape[2:])
    if tuple(target._shape) != want:
        raise ValueError(f"{op}: expected target of shape {want} for input of shape "
                         f"{tuple(x.shape)}, got {tuple(target.shape)}")
    if weight is not None:
        if not isinstance(weight, Tensor) or tuple(weight.shape) != (nc,):
            raise ValueError(f"{op}: expected weight of shape ({nc},), got "
                             f"{getattr(weight, 'shape', weight)!r}")
        if weight.dtype is not x.dtype:
            raise TypeError(f"{op}: expected weight of dtype {x.dtype}, got {weight.dtype}")
        same_device(op, x, weight)
    long_ = target._storage.dtype is dtypes.int64
    if _capture.is_capturing():  # no host read in a captured step: the kernels give NaN
        return target if long_ else ew.to(target, dtypes.int64)
    t = _host_values(target)
    bad = (t != ignore) & ((t < 0) | (t >= nc))
    if np.count_nonzero(bad):  # (a C call: ndarray.any() is a Python function of NumPy's)
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        raise IndexError(f"{op}: target {int(t[pos])} is out of bounds: expected class "
                         f"indices in [0, {nc}) or ignore_index={ignore}; at position {pos}")
    return target if long_ else ew.to(target, dtypes.int64)


def _defines(x, wg, more=None):
    d = defines_for(x.dtype)
    d["WG"] = wg
    if more:
        d.update(more)
    return d


def _launch_rows(name, x, nrows, length, nd, *args, more=None):
    """One work item per row for short rows, one work-group per row for long ones (``more``:
    defines added to the kernel's)."""
    if nrows == 0:
        return
    wg = 1 if length <= _ROW_GROUP else _ROW_GROUP
    dev = x._storage.device
    k = dev.kernel(_FILE, name, _defines(x, wg, more))
    gsize, lsize = ((nrows,), (64,)) if wg == 1 else ((nrows * wg,), (wg,))
    dev.launch(k, gsize, lsize, np.int64(nrows), np.int32(nd), *args)
