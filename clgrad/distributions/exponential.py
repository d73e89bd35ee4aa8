"""Exponential distribution (PyTorch's torch.distributions.Exponential)."""
from __future__ import annotations

from clgrad import creation
from clgrad.distributions import constraints
from clgrad.distributions.distribution import Distribution, as_param
from clgrad.ops import elementwise as ew
from clgrad.ops import random as rn

__all__ = ["Exponential"]


class Exponential(Distribution):
    """Density rate exp(-rate x) on x >= 0, ``rate`` a tensor or number.

    Shapes:  batch_shape = rate's; event_shape ()
    Grad:    rsample, log_prob, entropy, cdf, icdf -> rate
    Raises:  ValueError (validate_args, see Distribution) for rate <= 0 or NaN, or a
             log_prob/cdf value < 0
    """

    has_rsample = True
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative

    def __init__(self, rate, validate_args=None):
        self.rate = as_param(rate)
        super().__init__(tuple(self.rate.shape), (), validate_args)

    @property
    def mean(self):
        """1 / rate."""
        return self.rate.reciprocal()

    @property
    def mode(self):
        """0."""
        return creation.zeros_like(self.rate)

    @property
    def stddev(self):
        """1 / rate."""
        return self.rate.reciprocal()

    @property
    def variance(self):
        """1 / rate^2."""
        return self.rate.square().reciprocal()

    def rsample(self, sample_shape=()):
        """e / rate, e ~ Exponential(1) from clgrad's generator (gradients flow)."""
        shape = tuple(self._extended_shape(sample_shape))
        e = rn.exponential_(creation.empty(shape, dtype=self.rate.dtype,
                                           device=self.rate.device))
        return ew.div(e, self.rate)

    def log_prob(self, value):
        """log rate - rate value."""
        if self._validate_args:
            self._validate_sample(value)
        return ew.sub(self.rate.log(), ew.mul(self.rate, value))

    def cdf(self, value):
        """1 - exp(-rate value)."""
        if self._validate_args:
            self._validate_sample(value)
        return ew.neg(ew.neg(ew.mul(self.rate, value)).expm1())

    def icdf(self, value):
        """-log(1 - value) / rate."""
        value = as_param(value, self.rate)
        return ew.div(ew.neg(ew.neg(value).log1p()), self.rate)

    def entropy(self):
        """1 - log rate."""
        return ew.sub(1.0, self.rate.log())

    def expand(self, batch_shape, _instance=None):
        """rate broadcast to ``batch_shape``."""
        shape = tuple(batch_shape)
        return self._expanded(shape, rate=self.rate.expand(shape))

    def __repr__(self):
        return f"Exponential(rate: {tuple(self.rate.shape)})"
