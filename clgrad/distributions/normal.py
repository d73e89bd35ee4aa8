"""Normal (Gaussian) distribution (PyTorch's torch.distributions.Normal)."""
from __future__ import annotations

import math

from clgrad import creation
from clgrad.distributions.distribution import LocScale, as_param
from clgrad.ops import composite as cp
from clgrad.ops import elementwise as ew

__all__ = ["Normal"]


class Normal(LocScale):
    """N(loc, scale^2), loc and scale tensors or numbers broadcast together.

    Shapes:  batch_shape = broadcast(loc, scale); event_shape ()
    Grad:    rsample, log_prob, entropy, cdf -> loc and scale
    Raises:  ValueError (validate_args, see Distribution) for a NaN loc, a scale <= 0, or a
             NaN value given to log_prob/cdf
    """

    @property
    def stddev(self):
        """scale."""
        return self.scale

    @property
    def variance(self):
        """scale^2."""
        return ew.mul(self.scale, self.scale)

    def rsample(self, sample_shape=()):
        """loc + scale * eps, eps ~ N(0, 1) from clgrad's generator (gradients flow)."""
        shape = self._extended_shape(sample_shape)
        eps = creation.randn(tuple(shape), dtype=self.loc.dtype, device=self.loc.device)
        return ew.add(self.loc, ew.mul(self.scale, eps))

    def log_prob(self, value):
        """-(value - loc)^2 / (2 scale^2) - log scale - log sqrt(2 pi)."""
        if self._validate_args:
            self._validate_sample(value)
        d = ew.sub(value, self.loc)
        return ew.sub(ew.sub(ew.neg(ew.div(ew.mul(d, d), ew.mul(self.variance, 2.0))),
                             ew.log(self.scale)), math.log(math.sqrt(2 * math.pi)))

    def entropy(self):
        """0.5 + 0.5 log(2 pi) + log scale."""
        return ew.add(ew.log(self.scale), 0.5 + 0.5 * math.log(2 * math.pi))

    def cdf(self, value):
        """0.5 (1 + erf((value - loc) / (scale sqrt 2)))."""
        if self._validate_args:
            self._validate_sample(value)
        z = ew.div(ew.sub(value, self.loc), ew.mul(self.scale, math.sqrt(2)))
        return ew.mul(ew.add(cp.erf(z), 1.0), 0.5)

    def icdf(self, value):
        """loc + scale sqrt(2) erfinv(2 value - 1) (no support check, as PyTorch)."""
        value = as_param(value, self.loc)
        return ew.add(self.loc, ew.mul(self.scale, ew.mul(ew.sub(ew.mul(value, 2.0), 1.0)
                                                          .erfinv(), math.sqrt(2))))
