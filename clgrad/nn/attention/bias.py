"""``torch.nn.attention.bias``: the causal attention biases for F.scaled_dot_product_attention
when the query and key lengths differ (decoding): CausalVariant, CausalBias,
causal_upper_left, causal_lower_right.

A CausalBias is a Tensor: the boolean mask itself (True = attended), so F.scaled_dot_product_
attention takes it as ``attn_mask`` and gives PyTorch's results (upper left: query i attends
to keys j <= i, the ``is_causal=True`` mask; lower right: the last query row aligned with the
last key, j <= i + S - L). PyTorch's CausalBias holds no data and works only with
scaled_dot_product_attention; clgrad's holds the (L, S) mask, so other ops take it as the
bool tensor it is. With L > S the lower-right mask's first rows attend to nothing: clgrad's
attention gives zeros there (its safe softmax), where PyTorch warns of NaN.
"""
from __future__ import annotations

from enum import IntEnum

from clgrad import creation, dtypes
from clgrad.tensor import Tensor

__all__ = ["CausalVariant", "CausalBias", "causal_upper_left", "causal_lower_right"]


class CausalVariant(IntEnum):
    """Where the causal mask's diagonal starts: the upper left corner, or aligned so that the
    last query attends to every key (lower right)."""
    UPPER_LEFT = 1
    LOWER_RIGHT = 2


class CausalBias(Tensor):
    """The (seq_len_q, seq_len_kv) boolean causal mask of one variant (see the module
    docstring); ``variant``, ``seq_len_q``, ``seq_len_kv`` as PyTorch's.

    Raises: ValueError for a variant that is not a CausalVariant"""

    __slots__ = ("variant", "seq_len_q", "seq_len_kv")

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int):
        if not isinstance(variant, CausalVariant):
            raise ValueError(f"CausalBias: expected a CausalVariant, got {variant!r}")
        mask = self._mask(variant, int(seq_len_q), int(seq_len_kv))
        super().__init__(mask._storage, mask._shape, mask._strides, mask._offset)
        self.variant, self.seq_len_q, self.seq_len_kv = variant, int(seq_len_q), \
            int(seq_len_kv)

    @staticmethod
    def _mask(variant, q, kv, device=None) -> Tensor:
        ones = creation.ones(q, kv, dtype=dtypes.bool_, device=device)
        return ones.tril() if variant is CausalVariant.UPPER_LEFT else ones.tril(kv - q)

    def _upper_left(self, device=None) -> Tensor:
        """The upper-left mask as a plain bool tensor."""
        return self._mask(CausalVariant.UPPER_LEFT, self.seq_len_q, self.seq_len_kv, device)

    def _lower_right(self, device=None) -> Tensor:
        """The lower-right mask as a plain bool tensor."""
        return self._mask(CausalVariant.LOWER_RIGHT, self.seq_len_q, self.seq_len_kv, device)

    def _materialize(self, device=None) -> Tensor:
        """This bias as a plain bool tensor (on ``device``)."""
        return self._mask(self.variant, self.seq_len_q, self.seq_len_kv, device)


def causal_upper_left(*size) -> CausalBias:
    """The upper-left causal bias of ``size`` (seq_len_q, seq_len_kv).

    Raises: ValueError unless two sizes are given"""
    if len(size) != 2:
        raise ValueError(f"causal_upper_left: expected (seq_len_q, seq_len_kv), got {size}")
    return CausalBias(CausalVariant.UPPER_LEFT, size[0], size[1])


def causal_lower_right(*size) -> CausalBias:
    """The lower-right causal bias of ``size`` (seq_len_q, seq_len_kv).

    Raises: ValueError unless two sizes are given"""
    if len(size) != 2:
        raise ValueError(f"causal_lower_right: expected (seq_len_q, seq_len_kv), got {size}")
    return CausalBias(CausalVariant.LOWER_RIGHT, size[0], size[1])
