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
    ``padding_idx`` starts at 0 and gets no gradient. max_norm, scale_grad_by_freq and
    sparse raise NotImplementedError (see F.embedding)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None,
                 max_norm=None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight=None, _freeze: bool = False, device=None,
                 dtype=None):
        super().__init__()
        _check_positive("Embedding", num_embeddings=num_embeddings, embedding_dim=embedding_dim)
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise NotImplementedError("Embedding: max_norm, scale_grad_by_freq and sparse are "
                                      "not supported by clgrad")
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
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self):
        """'num_embeddings, embedding_dim' (and ', padding_idx=P'), as PyTorch's repr."""
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")
