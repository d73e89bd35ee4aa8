"""nn.TransformerEncoderLayer and nn.TransformerEncoder (PyTorch's names, arguments,
submodule names and state_dict keys; Vaswani et al. 2017), and
``Transformer.generate_square_subsequent_mask``. Built from MultiheadAttention, Linear,
LayerNorm and Dropout, so their gradients are those modules'.
"""
from __future__ import annotations

import copy

from clgrad import creation
from clgrad.nn import functional as F
from clgrad.nn.attention import MultiheadAttention
from clgrad.nn.containers import ModuleList
from clgrad.nn.dropout import Dropout
from clgrad.nn.linear import Linear
from clgrad.nn.module import Module
from clgrad.nn.normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerEncoder", "Transformer"]


def _activation(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if callable(activation):
        return activation
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual connection and
    LayerNorm (after, or before with ``norm_first``); dropout after each block.

    forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False): src (S, N, E),
    (N, S, E) with batch_first, or (S, E); masks as MultiheadAttention's.
    Raises:  RuntimeError for an activation other than 'relu', 'gelu' or a callable
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        """See the class docstring; returns the same shape as src."""
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal and attn_mask is None)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` applied in turn (``layers``), then
    ``norm`` if given. forward(src, mask=None, src_key_padding_mask=None, is_causal=None).
    ``enable_nested_tensor`` and ``mask_check`` are accepted (no nested tensors here)."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        """Each layer on the previous one's output; returns src's shape."""
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                        is_causal=bool(is_causal))
        return self.norm(out) if self.norm is not None else out


class Transformer(Module):
    """Only ``Transformer.generate_square_subsequent_mask`` (the full encoder-decoder model
    is not provided: constructing one raises NotImplementedError)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("nn.Transformer (encoder-decoder) is not provided; use "
                                  "nn.TransformerEncoder / nn.TransformerEncoderLayer")

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """A float (sz, sz) mask: 0 on and below the diagonal, -inf above (causal)."""
        full = creation.full((sz, sz), float("-inf"), dtype=dtype, device=device)
        return full.triu(1)
