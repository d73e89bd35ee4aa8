"""Embedding (PyTorch's torch.nn.Embedding): a lookup table whose gradient is a scatter-add."""
from __future__ import annotations

from clgrad._args import _check_positive
from clgrad.autograd import no_grad
from clgrad.creation import empty
from clgrad.nn import functional as F
from clgrad.nn import init
from clgrad.nn.module import Module, Parameter

__all__ = ["Embedding"]


class Embedding(Module):
    """Rows of ``weight`` (num_embeddings, embedding_dim), initialised N(0, 1); the row
    ``padding_idx`` starts at 0 and gets no gradient. ``max_norm``: the rows an input names
    whose ``norm_type``-norm exceeds it are rescaled IN PLACE in ``weight`` before the lookup
    (PyTorch's); ``scale_grad_by_freq`` divides each row's gradient by its count in the
    batch; ``sparse=True`` raises NotImplementedError (no sparse tensors; see F.embedding)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None,
                 max_norm=None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight=None, _freeze: bool = False, device=None,
                 dtype=None):
        super().__init__()
        _check_positive("Embedding", num_embeddings=num_embeddings, embedding_dim=embedding_dim)
        if sparse:
            raise NotImplementedError("Embedding: sparse=True asks for sparse gradients, and "
                                      "clgrad has no sparse tensors; use sparse=False")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: expected padding_idx in [{-num_embeddings}, "
                                 f"{num_embeddings}), got {padding_idx}")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(empty(num_embeddings, embedding_dim, dtype=dtype,
                                          device=device), requires_grad=not _freeze)
            self.reset_parameters()
        else:
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self):
        """weight ~ N(0, 1), the padding row 0."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                init.zeros_(self.weight[self.padding_idx])

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx=None, **kwargs):
        """An Embedding holding ``embeddings`` (V, D); frozen unless ``freeze=False``."""
        if embeddings.ndim != 2:
            raise ValueError(f"Embedding.from_pretrained: expected a 2-D tensor, got shape "
                             f"{tuple(embeddings.shape)}")
        return cls(*embeddings.shape, padding_idx=padding_idx, _weight=embeddings,
                   _freeze=freeze, **kwargs)

    def forward(self, input):
        """Rows of weight at the integer indices ``input``.

        Shapes:  input (*) int -> (*, embedding_dim); see clgrad.nn.functional.embedding
        Raises:  IndexError for an index outside [0, num_embeddings)
        """
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        """PyTorch's: 'num_embeddings, embedding_dim' then the non-default padding_idx,
        max_norm, norm_type, scale_grad_by_freq and sparse."""
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s + _norm_repr(self)


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of rows of ``weight`` (num_embeddings, embedding_dim),
    initialised N(0, 1) (the row ``padding_idx`` 0), without the per-element embeddings
    being returned (see F.embedding_bag). ``sparse=True`` raises NotImplementedError (no
    sparse tensors)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight=None, include_last_offset: bool = False,
                 padding_idx=None, device=None, dtype=None):
        super().__init__()
        _check_positive("EmbeddingBag", num_embeddings=num_embeddings,
                        embedding_dim=embedding_dim)
        if sparse:
            raise NotImplementedError("EmbeddingBag: sparse=True asks for sparse gradients, "
                                      "and clgrad has no sparse tensors; use sparse=False")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError("padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset, self.padding_idx = include_last_offset, padding_idx
        if _weight is None:
            self.weight = Parameter(empty(num_embeddings, embedding_dim, dtype=dtype,
                                          device=device))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError("Shape of weight does not match num_embeddings and "
                                 "embedding_dim")
            self.weight = Parameter(_weight)

    reset_parameters = Embedding.reset_parameters  # (weight ~ N(0, 1), the padding row 0)

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, max_norm=None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        mode: str = "mean", sparse: bool = False,
                        include_last_offset: bool = False, padding_idx=None):
        """An EmbeddingBag holding ``embeddings`` (V, D); frozen unless ``freeze=False``."""
        if embeddings.ndim != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        bag = cls(*embeddings.shape, _weight=embeddings, max_norm=max_norm,
                  norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq, mode=mode,
                  sparse=sparse, include_last_offset=include_last_offset,
                  padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag

    def forward(self, input, offsets=None, per_sample_weights=None):
        """(B, D) bags of rows; see clgrad.nn.functional.embedding_bag (shapes, errors)."""
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        """PyTorch's: 'V, D' then the non-default max_norm, norm_type, then mode and
        padding_idx."""
        s = f"{self.num_embeddings}, {self.embedding_dim}" + _norm_repr(self)
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx!r}"
        return s


__all__ += ["EmbeddingBag"]


def _norm_repr(m) -> str:
    """The non-default max_norm, norm_type and scale_grad_by_freq of an Embedding or
    EmbeddingBag, as PyTorch's reprs list them."""
    s = ""
    if m.max_norm is not None:
        s += f", max_norm={m.max_norm!r}"
    if m.norm_type != 2:
        s += f", norm_type={m.norm_type!r}"
    if m.scale_grad_by_freq is not False:
        s += f", scale_grad_by_freq={m.scale_grad_by_freq!r}"
    return s
