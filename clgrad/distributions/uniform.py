"""Continuous uniform distribution (PyTorch's torch.distributions.Uniform)."""
from __future__ import annotations

import math

from clgrad import creation, layout
from clgrad.distributions import constraints
from clgrad.distributions.distribution import Distribution, as_param
from clgrad.ops import elementwise as ew
from clgrad.ops import reduce as rd

__all__ = ["Uniform"]


class Uniform(Distribution):
    """U[low, high), low and high tensors or numbers broadcast together.

    Shapes:  batch_shape = broadcast(low, high); event_shape ()
    Grad:    rsample, log_prob, entropy, cdf, icdf, mean... -> low and high
    Raises:  ValueError (validate_args, see Distribution) where low >= high, or for a
             log_prob/cdf value outside [low, high]
    """

    has_rsample = True
    arg_constraints = {"low": constraints.dependent(is_discrete=False, event_dim=0),
                       "high": constraints.dependent(is_discrete=False, event_dim=0)}

    def __init__(self, low, high, validate_args=None):
        low = as_param(low, high)
        high = as_param(high, low)
        shape = layout.broadcast_shapes(low.shape, high.shape, op="Uniform")
        self.low, self.high = low.expand(shape), high.expand(shape)
        super().__init__(shape, (), validate_args)
        if self._validate_args and not bool(rd.all(ew.lt(self.low, self.high))):
            raise ValueError("Uniform is not defined when low>= high")

    @property
    def support(self):
        """[low, high]."""
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        """(low + high) / 2."""
        return ew.div(ew.add(self.high, self.low), 2.0)

    @property
    def mode(self):
        """NaN (every point of the interval is as likely)."""
        return ew.mul(self.high, float("nan"))

    @property
    def stddev(self):
        """(high - low) / sqrt(12)."""
        return ew.div(ew.sub(self.high, self.low), math.sqrt(12.0))

    @property
    def variance(self):
        """(high - low)^2 / 12."""
        return ew.div(ew.sub(self.high, self.low).square(), 12.0)

    def rsample(self, sample_shape=()):
        """low + (high - low) u, u ~ U[0, 1) from clgrad's generator (gradients flow)."""
        shape = tuple(self._extended_shape(sample_shape))
        u = creation.rand(shape, dtype=self.low.dtype, device=self.low.device)
        return ew.add(self.low, ew.mul(u, ew.sub(self.high, self.low)))

    def log_prob(self, value):
        """-log(high - low) on [low, high), -inf outside."""
        if self._validate_args:
            self._validate_sample(value)
        inside = ew.logical_and(ew.le(self.low, value), ew.gt(self.high, value))
        return ew.sub(ew.to(inside, self.low.dtype).log(), ew.sub(self.high, self.low).log())

    def cdf(self, value):
        """(value - low) / (high - low), clamped to [0, 1]."""
        if self._validate_args:
            self._validate_sample(value)
        return ew.clamp(ew.div(ew.sub(value, self.low), ew.sub(self.high, self.low)), 0, 1)

    def icdf(self, value):
        """low + value (high - low)."""
        return ew.add(ew.mul(value, ew.sub(self.high, self.low)), self.low)

    def entropy(self):
        """log(high - low)."""
        return ew.sub(self.high, self.low).log()

    def expand(self, batch_shape, _instance=None):
        """low and high broadcast to ``batch_shape``."""
        shape = tuple(batch_shape)
        return self._expanded(shape, low=self.low.expand(shape), high=self.high.expand(shape))

    def __repr__(self):
        return f"Uniform(low: {tuple(self.low.shape)}, high: {tuple(self.high.shape)})"
