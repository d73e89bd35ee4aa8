"""PyTorch's top-level forms of nn.functional ops (``torch.conv2d``, ``torch.dropout``,
``torch.batch_norm`` ...), with torch's own signatures, which are ATen's and often differ
from nn.functional's: ``dropout(input, p, train)`` (``train`` required), ``embedding(weight,
indices, ...)`` (arguments reversed, a negative ``padding_idx`` meaning none),
``batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
cudnn_enabled)`` (every argument required), reductions as ints (0 none, 1 mean, 2 sum),
``max_pool2d`` without ``return_indices``, ``adaptive_max_pool1d`` returning the indices too.

Each is an adapter over the op its family module holds (no computation of its own, no
kernel); the rows of clgrad/ops/registry.py bind them as ``clgrad.<name>`` (their ``torch=``
field) where nn.functional keeps its own signature. The ``cudnn_enabled`` flags are accepted
and ignored, as on PyTorch's CPU.
"""
from __future__ import annotations

import numbers

import numpy as np

from clgrad import creation, dtypes
from clgrad.ops import dropout as do
from clgrad.ops import elementwise as ew
from clgrad.ops import index as ix
from clgrad.ops import loss
from clgrad.ops import norm
from clgrad.ops import padding
from clgrad.ops import pool
from clgrad.ops import scatters as sx
from clgrad.ops._util import same_device
from clgrad.ops.conv import op as conv
from clgrad.ops.conv import transpose as convt
from clgrad.tensor import Tensor

__all__ = ["convolution", "max_pool1d", "max_pool2d", "max_pool1d_with_indices",
           "adaptive_max_pool1d", "dropout", "dropout_", "alpha_dropout", "alpha_dropout_",
           "feature_alpha_dropout", "feature_alpha_dropout_", "batch_norm", "instance_norm",
           "layer_norm", "group_norm", "embedding", "embedding_bag",
           "binary_cross_entropy_with_logits", "kl_div", "constant_pad_nd", "rsub", "detach_"]

_FAST_DTYPES = (dtypes.float32, dtypes.float16, dtypes.bfloat16)

# ATen's reduction enum (torch.nn._reduction: 0 none, 1 mean, 2 sum)
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


# -- conv and pool ----------------------------------------------------------------------------
def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation,
                transposed: bool, output_padding, groups: int) -> Tensor:
    """``torch.convolution``: conv1d/conv2d (or their transposes, ``transposed``) of a batched
    3-D or 4-D input; every argument required, as ATen's.
    Raises NotImplementedError for other ranks (clgrad has no 3-D convolution)."""
    if input.ndim == 3:
        if transposed:
            return convt.conv_transpose1d(input, weight, bias, stride, padding, output_padding,
                                          groups, dilation)
        return convt.conv1d(input, weight, bias, stride, padding, dilation, groups)
    if input.ndim == 4:
        if transposed:
            return convt.conv_transpose2d(input, weight, bias, stride, padding, output_padding,
                                          groups, dilation)
        return conv.conv2d(input, weight, bias, stride, padding, dilation, groups)
    raise NotImplementedError(f"convolution: clgrad has 1-D and 2-D convolutions of batched "
                              f"inputs, expected a 3-D or 4-D input, got shape "
                              f"{tuple(input.shape)}")


def _stride(stride):
    """ATen's ``stride=[]`` (the default): the kernel size, as nn.functional's None."""
    return None if stride is None or (isinstance(stride, (tuple, list)) and not stride) else \
        stride


def max_pool1d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    """``torch.max_pool1d``: F.max_pool1d without ``return_indices``."""
    return pool.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    """``torch.max_pool2d``: F.max_pool2d without ``return_indices``."""
    return pool.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode: bool = False):
    """``torch.max_pool1d_with_indices``: (values, int64 indices along L), F.max_pool1d's
    ``return_indices=True``."""
    return pool.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode,
                           True)


def adaptive_max_pool1d(input: Tensor, output_size):
    """``torch.adaptive_max_pool1d``: (values, indices), always (F's ``return_indices=True``)."""
    return pool.adaptive_max_pool1d(input, output_size, True)


# -- dropout ----------------------------------------------------------------------------------
def _check_p(p):
    if not 0.0 <= float(p) <= 1.0:  # torch's top-level forms raise RuntimeError (F: ValueError)
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.dropout(input, p, train)``: F.dropout with ``train`` required, positional."""
    _check_p(p)
    return do.dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.dropout_``: dropout written into ``input``; returns input."""
    _check_p(p)
    return do.dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.alpha_dropout(input, p, train)``: F.alpha_dropout, ``train`` required."""
    _check_p(p)
    return do.alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.alpha_dropout_``: alpha_dropout written into ``input``; returns input."""
    _check_p(p)
    return do.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.feature_alpha_dropout(input, p, train)``: F.feature_alpha_dropout."""
    _check_p(p)
    return do.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.feature_alpha_dropout_``: feature_alpha_dropout written into ``input``."""
    _check_p(p)
    return do.feature_alpha_dropout(input, p, train, inplace=True)


# -- normalization ----------------------------------------------------------------------------
def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
               running_mean: Tensor | None, running_var: Tensor | None, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    """``torch.batch_norm``: F.batch_norm with ATen's argument order, every argument
    required."""
    return norm.batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                           eps)


def instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
                  running_mean: Tensor | None, running_var: Tensor | None,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Tensor:
    """``torch.instance_norm``: F.instance_norm with ATen's argument order, every argument
    required."""
    return norm.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                              momentum, eps)


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5,
               cudnn_enable: bool = True) -> Tensor:
    """``torch.layer_norm``: F.layer_norm and ATen's ``cudnn_enable`` (ignored)."""
    return norm.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Tensor:
    """``torch.group_norm``: F.group_norm and ATen's ``cudnn_enabled`` (ignored)."""
    return norm.group_norm(input, num_groups, weight, bias, eps)


# -- embedding, losses, padding, arithmetic ---------------------------------------------------
def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``torch.embedding(weight, indices, ...)``: F.embedding with the tensors in ATen's order;
    a negative ``padding_idx`` means none (F.embedding turns its own negative index into a
    row before it calls this in PyTorch)."""
    return ix.embedding_rows(indices, weight, None if padding_idx < 0 else padding_idx,
                             scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor,
                  scale_grad_by_freq: bool = False, mode: int = 0, sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None):
    """``torch.embedding_bag``: ATen's form of F.embedding_bag (``mode`` 0 sum, 1 mean,
    2 max; 1-D ``indices`` and ``offsets`` required; a negative ``padding_idx`` counts from
    the end, -1 is row V - 1 as in ATen; None: no padding). Returns PyTorch's 4-tuple
    ``(output, offset2bag, bag_size, max_indices)``, the last three of indices' dtype, with
    the values of PyTorch's CPU kernel:

    - output (B, D): as F.embedding_bag (B = len(offsets), less one with include_last_offset)
    - offset2bag (n,): each position's bag; empty (0,) where PyTorch's CPU takes its fast
      path (mode 0, a float32/float16/bfloat16 weight of unit column stride, no padding_idx)
    - bag_size (B,): each bag's non-padding count (zeros in mode 0, then of len(offsets)
      entries unless include_last_offset and weight.requires_grad, as PyTorch's)
    - max_indices: mode 2 (B, D) the row each maximum came from (0 for an empty bag);
      mode 1 bag_size again; mode 0 zeros like bag_size

    Raises:  RuntimeError for a mode outside 0..2, indices that are not 1-D, and the errors
             of F.embedding_bag; NotImplementedError for sparse=True.
    """
    if mode not in (0, 1, 2):
        raise RuntimeError(f"embedding_bag: `mode` must be sum, mean, or max (0, 1 or 2), "
                           f"got {mode!r}")
    sx.no_sparse(sparse)
    for name, t in (("indices", indices), ("offsets", offsets)):
        if not isinstance(t, Tensor) or t.ndim != 1:
            raise RuntimeError(f"embedding_bag: expected {name} to be a 1-D Tensor, got "
                               f"{getattr(t, 'shape', type(t).__name__)}")
    padding_idx = ix.embedding_weight("embedding_bag", weight, padding_idx)
    if mode == 2 and scale_grad_by_freq:
        raise RuntimeError("embedding_bag: max mode does not support scaling the gradient by "
                           "the frequency")
    if per_sample_weights is not None and (mode != 0 or tuple(per_sample_weights.shape) !=
                                           tuple(indices.shape)):
        raise RuntimeError(f"embedding_bag: per_sample_weights expected mode 0 (sum) and the "
                           f"shape of indices {tuple(indices.shape)}, got mode {mode} and "
                           f"shape {tuple(per_sample_weights.shape)}")
    same_device("embedding_bag", weight, indices, offsets, per_sample_weights)
    idx = indices.numpy().astype(np.int64)
    starts = sx._bag_starts(offsets, idx.size, include_last_offset)
    out, bag, sizes, argmax = sx._bags(weight, idx, starts, mode, per_sample_weights,
                                       padding_idx, scale_grad_by_freq)
    dev, it = weight.device, indices.dtype

    def ints(a):
        return ew.to(creation.tensor(np.ascontiguousarray(a, np.int64), device=dev), it)
    fast = (mode == 0 and padding_idx is None and weight.dtype in _FAST_DTYPES and
            weight.stride(1) == 1 and (per_sample_weights is None or
                                       per_sample_weights.stride(0) == 1))
    offset2bag = ints(np.zeros(0) if fast else bag)
    if mode == 0:
        n = len(offsets) if include_last_offset and not weight.requires_grad else len(starts)
        zeros = np.zeros(n, np.int64)
        return out, offset2bag, ints(zeros), ints(zeros)
    return out, offset2bag, ints(sizes), ints(sizes if mode == 1 else argmax)


def _reduction(op, reduction, pos):
    if isinstance(reduction, bool) or not isinstance(reduction, numbers.Integral):
        raise TypeError(f"{op}(): argument 'reduction' (position {pos}) must be int, not "
                        f"{type(reduction).__name__}")
    if int(reduction) not in _REDUCTIONS:
        raise ValueError(f"{op}: expected reduction 0 (none), 1 (mean) or 2 (sum), got "
                         f"{reduction}")
    return _REDUCTIONS[int(reduction)]


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None,
                                     reduction: int = 1) -> Tensor:
    """``torch.binary_cross_entropy_with_logits``: ATen's order (``pos_weight`` before
    ``reduction``) and reduction as an int (0 none, 1 mean, 2 sum)."""
    red = _reduction("binary_cross_entropy_with_logits", reduction, 5)
    return loss.binary_cross_entropy_with_logits(input, target, weight, red, pos_weight)


def kl_div(input: Tensor, target: Tensor, reduction: int = 1, *,
           log_target: bool = False) -> Tensor:
    """``torch.kl_div``: reduction as an int (0 none, 1 mean, 2 sum), ``log_target``
    keyword-only."""
    return loss.kl_div(input, target, _reduction("kl_div", reduction, 3), log_target)


def constant_pad_nd(input: Tensor, pad, value=0) -> Tensor:
    """``torch.constant_pad_nd``: F.pad(input, pad, 'constant', value) (negative amounts
    crop)."""
    return padding.pad(input, pad, "constant", value)


def rsub(input: Tensor, other: Tensor | float, alpha=1) -> Tensor:
    """``torch.rsub``: ``other - alpha * input`` (sub with the operands swapped)."""
    return ew.sub(other, input, alpha=alpha)


def detach_(input: Tensor) -> Tensor:
    """``torch.detach_``: ``input.detach_()``."""
    return input.detach_()
