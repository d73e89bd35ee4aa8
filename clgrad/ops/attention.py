"""Scaled dot-product attention (PyTorch's F.scaled_dot_product_attention) and the
multi-head attention forward behind nn.MultiheadAttention, as compositions of matmul,
softmax and dropout (their gradients are those ops'). No fused kernel: memory is
O(L * S) per head, as PyTorch's math backend.
"""
from __future__ import annotations

import math
import warnings

from clgrad import creation, dtypes
from clgrad.backends import cuda as _backends_cuda
from clgrad.ops import dropout as dr
from clgrad.ops import elementwise as ew
from clgrad.ops import loss
from clgrad.ops import matmul as mm
from clgrad.ops import reduce as rd
from clgrad.tensor import Tensor

__all__ = ["scaled_dot_product_attention"]

_BF16, _F16 = dtypes.bfloat16, dtypes.float16


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask=None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale=None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q k^T * scale + mask) v over the last two dims (PyTorch's
    F.scaled_dot_product_attention, math backend).

    Shapes:  query (*, L, E), key (*, S, E), value (*, S, Ev) -> (*, L, Ev); leading dims
             broadcast
    Mask:    bool: True takes part (False -> -inf); float: added to the scores; is_causal:
             position i attends to j <= i (top-left aligned, as PyTorch). A row with every
             position masked (every score -inf) gives zeros and no gradient, as PyTorch's
             SDPA since 2.5 (its _safe_softmax; plain softmax gives NaN there); a NaN score
             still gives NaN
    Grad:    query, key, value (and a float mask)
    Layout:  for a 4-D query without dropout, out's dims lie in memory in the order of the
             query's strides (PyTorch's fused kernels, its CPU default, allocate it so);
             otherwise (PyTorch's CPU math path) contiguous
    Backend: PyTorch's math backend, clgrad's only one; while it is switched off
             (torch.nn.attention.sdpa_kernel, torch.backends.cuda.enable_math_sdp) a
             warning says why and RuntimeError is raised, as PyTorch's "No available kernel"
    Raises:  RuntimeError for is_causal together with attn_mask (PyTorch's rule) and for a
             disabled math backend, NotImplementedError for enable_gqa
    """
    if not _backends_cuda._SDP["math"]:
        warnings.warn("scaled_dot_product_attention: clgrad implements only the math "
                      "backend (SDPBackend.MATH), which is not among the allowed backends "
                      "(torch.nn.attention.sdpa_kernel / torch.backends.cuda.enable_math_sdp)",
                      stacklevel=2)
        raise RuntimeError("No available kernel. Aborting execution.")
    if enable_gqa:
        raise NotImplementedError("scaled_dot_product_attention: enable_gqa is not supported")
    if is_causal and attn_mask is not None:
        raise RuntimeError("scaled_dot_product_attention: explicit attn_mask should not be set "
                           "when is_causal=True")
    low = query.dtype
    if (low is _BF16 or low is _F16) and key.dtype is low and value.dtype is low:
        # in float32 on float32 copies, rounded once (PyTorch's CPU kernels compute 16-bit
        # attention in float: half scores lose their exp's accuracy); a float mask too
        return ew.low_via_float32(low, scaled_dot_product_attention, query, key, value,
                                  attn_mask, dropout_p, is_causal, scale, enable_gqa)
    e = query.shape[-1]
    scale = 1.0 / math.sqrt(e) if scale is None else float(scale)
    scores = ew.mul(mm.matmul(query, key.transpose(-2, -1)), scale)
    L, S = query.shape[-2], key.shape[-2]
    if is_causal:
        attn_mask = creation.ones(L, S, dtype=dtypes.bool_, device=query.device).tril()
    if attn_mask is not None:  # (a causal mask leaves every row position 0)
        weights = safe_softmax(_apply_mask(scores, attn_mask, keep_true=True))
    else:
        weights = loss.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dr.dropout(weights, dropout_p, True)
    out = mm.matmul(weights, value)
    return out if dropout_p > 0.0 else _in_query_layout(out, query)


def _in_query_layout(out: Tensor, query: Tensor) -> Tensor:
    """``out`` (4-D) laid out in memory with its dims in the order of the query's strides
    (dense),
    as PyTorch's fused CPU and CUDA kernels allocate it (``empty_like(query)``): heads split
    from (B, L, H*E) and transposed to (B, H, L, E) give an output whose
    ``transpose(1, 2).view(B, L, H * E)`` needs no copy, and programs rely on it. One copy,
    recorded; a contiguous query leaves ``out`` as it is."""
    if query.ndim != 4 or query.is_contiguous() or out.shape[:-1] != query.shape[:-1]:
        return out  # (PyTorch's fused kernels take 4-D inputs; others run its math path)
    strides = query.stride()
    order = sorted(range(query.ndim), key=lambda d: -strides[d])  # outermost first (stable)
    if order == list(range(query.ndim)):
        return out
    inverse = [order.index(d) for d in range(query.ndim)]
    return ew.contiguous(out.permute(order)).permute(inverse)


def safe_softmax(scores: Tensor) -> Tensor:
    """softmax over the last dim, with 0 where a row's every score is -inf (a fully masked
    query attends to nothing: PyTorch's _safe_softmax, behind its SDPA since 2.5) instead of
    softmax's NaN; such rows pass no gradient. A row holding a NaN stays NaN (amax keeps it).
    Shapes: (*, S) -> (*, S); S = 0 gives the empty softmax."""
    if not scores.shape[-1]:
        return loss.softmax(scores, -1)
    dead = ew.eq(rd.amax(scores.detach(), -1, keepdim=True), float("-inf"))
    return ew.where(dead, 0.0, loss.softmax(ew.where(dead, 0.0, scores), -1))


def _apply_mask(scores, mask, keep_true):
    """Scores with a bool mask (``keep_true``: True keeps; else True masks) or a float mask
    (added)."""
    if mask.dtype.is_bool:
        blocked = ew.logical_not(mask) if keep_true else mask
        return ew.masked_fill(scores, blocked.expand(tuple(scores.shape))
                              if tuple(blocked.shape) != tuple(scores.shape) else blocked,
                              float("-inf"))
    return ew.add(scores, ew.to(mask, scores.dtype))
