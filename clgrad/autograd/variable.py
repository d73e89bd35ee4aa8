"""``torch.autograd.Variable``, which older programs still use (torch/autograd/variable.py)."""
from __future__ import annotations

from clgrad.tensor import Tensor

__all__ = ["Variable"]


def Variable(data, requires_grad: bool = False, volatile: bool = False):  # noqa: N802
    """``torch.autograd.Variable`` (merged into Tensor since PyTorch 0.4): a new leaf sharing
    ``data``'s storage, requiring grad if asked. ``volatile`` is accepted and ignored (use
    no_grad()). Raises TypeError for a non-Tensor."""
    if not isinstance(data, Tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
    out = data.detach()
    if requires_grad:
        out.requires_grad_(True)
    return out
