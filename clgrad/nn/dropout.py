"""Dropout layers (PyTorch's Dropout, Dropout1d, Dropout2d); the math: clgrad/ops/dropout.py."""
from __future__ import annotations

from clgrad.nn import functional as F
from clgrad.nn.module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d"]


class Dropout(Module):
    """In training, zero each element with probability ``p`` and scale the rest by 1/(1-p);
    in eval mode, the identity (Srivastava et al., JMLR 2014)."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: expected a probability between 0 and 1, got p={p}")
        self.p, self.inplace = p, inplace

    def forward(self, x):
        """Dropout of ``x`` in training mode (``self.training``); ``x`` itself in eval mode.

        Shapes:  x (*) -> same; see clgrad.nn.functional.dropout (the mask's generator)
        """
        return F.dropout(x, self.p, self.training, inplace=self.inplace)

    def extra_repr(self):
        """'p=P, inplace=B', as PyTorch's repr."""
        return f"p={self.p}, inplace={self.inplace}"


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


class AlphaDropout(Dropout):
    """SELU's dropout (Klambauer et al., 2017): in training, elements dropped with
    probability ``p`` are set to SELU's saturation, then all are mapped by a x + b keeping a
    zero-mean, unit-variance input's mean and variance; the identity in eval mode."""

    def forward(self, x):
        """Alpha dropout in training mode, ``x`` itself in eval mode.

        Shapes:  (*) -> same; see clgrad.nn.functional.alpha_dropout
        """
        return F.alpha_dropout(x, self.p, self.training, self.inplace)


class FeatureAlphaDropout(Dropout):
    """AlphaDropout of whole channels ((N, C) planes of an input of 2 or more dims)."""

    def forward(self, x):
        """Channel alpha dropout in training mode, ``x`` itself in eval mode.

        Shapes:  (N, C, *) -> same; see clgrad.nn.functional.feature_alpha_dropout
        """
        return F.feature_alpha_dropout(x, self.p, self.training, self.inplace)


__all__ += ["AlphaDropout", "FeatureAlphaDropout"]
