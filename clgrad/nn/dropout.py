"""Channel dropout layers (PyTorch's Dropout1d, Dropout2d); see clgrad/ops/activation.py."""
from __future__ import annotations

from clgrad.nn import functional as F
from clgrad.nn.layers import Dropout

__all__ = ["Dropout1d", "Dropout2d"]


class Dropout2d(Dropout):
    """In training, zero whole channels of (N, C, H, W) with probability ``p`` and scale the
    rest by 1/(1-p); the identity in eval mode."""

    def forward(self, x):
        """Channel dropout in training mode, ``x`` itself in eval mode.

        Shapes:  (N, C, H, W) or (N, C, L) -> same; see clgrad.nn.functional.dropout2d
        """
        return F.dropout2d(x, self.p, self.training, self.inplace)


class Dropout1d(Dropout):
    """Channel dropout of (N, C, L) or (C, L) inputs (see Dropout2d)."""

    def forward(self, x):
        """Channel dropout in training mode, ``x`` itself in eval mode.

        Shapes:  (N, C, L) or (C, L) -> same; see clgrad.nn.functional.dropout1d
        """
        return F.dropout1d(x, self.p, self.training, self.inplace)
