"""nn.MultiheadAttention (PyTorch's names, parameters, state_dict keys and defaults; in
PyTorch it lives in torch.nn.modules.activation); the attention itself is
clgrad/ops/attention.py."""
from __future__ import annotations

import math
import warnings

from clgrad import creation, dtypes
from clgrad.nn import init
from clgrad.nn.linear import Linear
from clgrad.nn.module import Module, Parameter
from clgrad.ops import dropout as dr
from clgrad.ops import elementwise as ew
from clgrad.ops import loss
from clgrad.ops import matmul as mm
from clgrad.ops._util import same_device
from clgrad.ops.attention import _apply_mask, safe_softmax

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Multi-head attention (Vaswani et al. 2017): ``num_heads`` heads of embed_dim //
    num_heads dims over a packed input projection.

    Parameters: in_proj_weight (3E, E), in_proj_bias (3E,), out_proj (Linear E -> E), as
    PyTorch (so its state_dicts load here). Inputs (L, N, E), or (N, L, E) with
    batch_first=True, or unbatched (L, E).
    forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False) -> (output, weights or None): masks follow
    nn.MultiheadAttention (bool True = NOT attended; float masks are added); weights are
    averaged over heads unless average_attn_weights=False; dropout on the weights in
    training mode. A query row with every key masked gives NaN with need_weights=True and
    zeros (before out_proj) with need_weights=False, as PyTorch (whose latter path is SDPA).
    Not supported (NotImplementedError): kdim/vdim other than embed_dim, add_bias_kv,
    add_zero_attn.
    A key_padding_mask and attn_mask of different dtypes (the translation tutorial's bool
    padding mask with a float causal mask) warn as PyTorch's ("Support for mismatched ...").
    Raises:  ValueError when embed_dim is not divisible by num_heads
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise ValueError("embed_dim must be divisible by num_heads")
        if (kdim not in (None, embed_dim)) or (vdim not in (None, embed_dim)):
            raise NotImplementedError("MultiheadAttention: kdim/vdim other than embed_dim are "
                                      "not supported")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are "
                                      "not supported")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.batch_first, self.head_dim = batch_first, embed_dim // num_heads
        self.kdim = self.vdim = embed_dim
        self._qkv_same_embed_dim = True
        self.in_proj_weight = Parameter(creation.empty(3 * embed_dim, embed_dim, dtype=dtype,
                                                       device=device))
        self.in_proj_bias = Parameter(creation.empty(3 * embed_dim, dtype=dtype,
                                                     device=device)) if bias else None
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        self._reset_parameters()

    def _reset_parameters(self):
        init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        """See the class docstring. Returns (attn_output, attn_weights or None).
        Raises RuntimeError, before any launch, for tensors (masks and weights included) of
        two devices."""
        same_device("MultiheadAttention", query, key, value, self.in_proj_weight,
                    key_padding_mask, attn_mask)
        if key_padding_mask is not None and attn_mask is not None and \
                key_padding_mask.dtype is not attn_mask.dtype:  # PyTorch's _canonical_mask
            warnings.warn("Support for mismatched key_padding_mask and attn_mask is "
                          "deprecated. Use same type for both instead.", UserWarning,
                          stacklevel=2)
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = (t.unsqueeze(1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        L, N, E = query.shape
        S = key.shape[0]
        H, D = self.num_heads, self.head_dim
        w = self.in_proj_weight
        b = self.in_proj_bias
        q, k, v = (mm.linear(t, w.narrow(0, i * E, E),
                             None if b is None else b.narrow(0, i * E, E))
                   for i, t in enumerate((query, key, value)))
        q, k, v = (t.reshape(t.shape[0], N * H, D).transpose(0, 1) for t in (q, k, v))
        scores = ew.mul(mm.bmm(q, k.transpose(1, 2)), 1.0 / math.sqrt(D))  # (N H, L, S)
        if is_causal and attn_mask is None:
            attn_mask = creation.ones(L, S, dtype=dtypes.bool_, device=query.device).triu(1)
        if attn_mask is not None:
            m = attn_mask if attn_mask.ndim == 3 else attn_mask.unsqueeze(0)
            scores = _apply_mask(scores, m, keep_true=False)
        if key_padding_mask is not None:
            s4 = scores.reshape(N, H, L, S)
            kpm = key_padding_mask.reshape(N, 1, 1, S)
            scores = _apply_mask(s4, kpm, keep_true=False).reshape(N * H, L, S)
        if not need_weights and (attn_mask is not None or key_padding_mask is not None):
            # PyTorch runs SDPA here: a fully masked query row gives zeros (and only the out
            # projection's bias), where the need_weights path's softmax gives NaN
            weights = safe_softmax(scores)
        else:
            weights = loss.softmax(scores, -1)
        if self.training and self.dropout > 0.0:
            weights_d = dr.dropout(weights, self.dropout, True)
        else:
            weights_d = weights
        out = mm.bmm(weights_d, v).transpose(0, 1).reshape(L, N, E)
        out = self.out_proj(out)
        if unbatched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        wts = weights.reshape(N, H, L, S)
        if average_attn_weights:
            wts = wts.mean(1)
        if unbatched:
            wts = wts.squeeze(0)
        return out, wts
