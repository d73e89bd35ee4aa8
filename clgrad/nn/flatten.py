"""Flatten and Unflatten (PyTorch's torch.nn.Flatten/Unflatten): views of the input."""
from __future__ import annotations

from clgrad.nn.module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Merge dims ``start_dim..end_dim`` (default: all but the batch dim); a view if possible."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        """``x.flatten(start_dim, end_dim)``: a view when the strides allow, else a copy.

        Shapes:  (N, *S) -> (N, prod(S)) with the defaults
        """
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        """'start_dim=S, end_dim=E'."""
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size`` (a view when strides allow)."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, x):
        """``x.unflatten(dim, unflattened_size)``: a view.

        Shapes:  (*A, S, *B) -> (*A, *unflattened_size, *B), prod(unflattened_size) == S (one
                 entry may be -1)
        """
        return x.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        """'dim=D, unflattened_size=S'."""
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
