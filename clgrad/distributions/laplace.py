"""Laplace distribution (PyTorch's torch.distributions.Laplace)."""
from __future__ import annotations

import math

from clgrad import creation, dtypes
from clgrad.distributions.distribution import LocScale, as_param
from clgrad.ops import elementwise as ew

__all__ = ["Laplace"]


class Laplace(LocScale):
    """Density exp(-|x - loc| / scale) / (2 scale), loc and scale broadcast together.

    Shapes:  batch_shape = broadcast(loc, scale); event_shape ()
    Grad:    rsample, log_prob, entropy, cdf, icdf -> loc and scale
    Raises:  ValueError (validate_args, see Distribution) for a NaN loc, a scale <= 0, or a
             NaN value given to log_prob/cdf
    """

    @property
    def stddev(self):
        """sqrt(2) scale."""
        return ew.mul(self.scale, math.sqrt(2.0))

    @property
    def variance(self):
        """2 scale^2."""
        return ew.mul(self.scale.square(), 2.0)

    def rsample(self, sample_shape=()):
        """loc - scale sign(u) log(1 - |u|), u ~ U(-1, 1) from clgrad's generator (the
        inverse CDF; gradients flow)."""
        shape = tuple(self._extended_shape(sample_shape))
        eps = dtypes.finfo(self.loc.dtype).eps
        u = creation.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        u = ew.add(ew.mul(u, 2.0 - eps), eps - 1.0)  # in [eps - 1, 1): log1p stays finite
        return ew.sub(self.loc, ew.mul(self.scale, ew.mul(u.sign(), ew.neg(u.abs()).log1p())))

    def log_prob(self, value):
        """-log(2 scale) - |value - loc| / scale."""
        if self._validate_args:
            self._validate_sample(value)
        return ew.neg(ew.add(ew.mul(self.scale, 2.0).log(),
                             ew.div(ew.sub(value, self.loc).abs(), self.scale)))

    def cdf(self, value):
        """1/2 - 1/2 sign(value - loc) (exp(-|value - loc| / scale) - 1)."""
        if self._validate_args:
            self._validate_sample(value)
        d = ew.sub(value, self.loc)
        return ew.sub(0.5, ew.mul(ew.mul(d.sign(), 0.5),
                                  ew.neg(ew.div(d.abs(), self.scale)).expm1()))

    def icdf(self, value):
        """loc - scale sign(value - 1/2) log(1 - 2 |value - 1/2|)."""
        t = ew.sub(as_param(value, self.loc), 0.5)
        return ew.sub(self.loc, ew.mul(self.scale, ew.mul(t.sign(),
                                                          ew.mul(t.abs(), -2.0).log1p())))

    def entropy(self):
        """1 + log(2 scale)."""
        return ew.add(ew.mul(self.scale, 2.0).log(), 1.0)
