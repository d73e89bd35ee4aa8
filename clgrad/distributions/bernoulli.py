"""Bernoulli distribution (PyTorch's torch.distributions.Bernoulli)."""
from __future__ import annotations

from clgrad import autograd, dtypes
from clgrad.distributions import constraints
from clgrad.distributions.distribution import Distribution, as_param
from clgrad.ops import elementwise as ew
from clgrad.ops import loss as ls
from clgrad.ops import random as rn

__all__ = ["Bernoulli"]


class Bernoulli(Distribution):
    """1 with probability ``probs`` (or sigmoid(``logits``)), else 0; exactly one given.

    Shapes:  batch_shape = the parameter's; samples float, of the parameter's dtype
    Grad:    log_prob, entropy -> the parameter
    Raises:  ValueError unless exactly one of probs and logits is given; (validate_args, see
             Distribution) for probs outside [0, 1], NaN logits, or a log_prob value that
             is not 0 or 1
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        self._given = "probs" if probs is not None else "logits"
        if probs is not None:
            self.probs = as_param(probs)
            eps = dtypes.finfo(self.probs.dtype).eps  # (bfloat16's too)
            p = ew.clamp(self.probs, eps, 1 - eps)
            self.logits = ew.sub(ew.log(p), ew.log1p(ew.neg(p)))
        else:
            self.logits = as_param(logits)
            self.probs = ew.sigmoid(self.logits)
        super().__init__(tuple(self.probs.shape), (), validate_args)

    def _given_params(self):
        return (self._given,)

    @property
    def mean(self):
        """probs."""
        return self.probs

    @property
    def mode(self):
        """1 where probs > 0.5, 0 where below, NaN at 0.5."""
        one = ew.to(ew.ge(self.probs, 0.5), self.probs.dtype)
        return ew.where(ew.eq(self.probs, 0.5), float("nan"), one)

    @property
    def variance(self):
        """probs (1 - probs)."""
        return ew.mul(self.probs, ew.sub(1.0, self.probs))

    def sample(self, sample_shape=()):
        """0./1. values of ``sample_shape + batch_shape`` (no gradient)."""
        with autograd.no_grad():
            p = self.probs.expand(tuple(self._extended_shape(sample_shape)))
            return rn.bernoulli(ew.contiguous(p))

    def log_prob(self, value):
        """value log p + (1 - value) log(1 - p), computed from the logits (stable)."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = _broadcast(self.logits, value)
        return ew.neg(ls.binary_cross_entropy_with_logits(logits, value, reduction="none"))

    def entropy(self):
        """-(p log p + (1 - p) log(1 - p))."""
        return ls.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def expand(self, batch_shape, _instance=None):
        """probs and logits broadcast to ``batch_shape``."""
        shape = tuple(batch_shape)
        return self._expanded(shape, probs=self.probs.expand(shape),
                              logits=self.logits.expand(shape))

    def __repr__(self):
        return f"Bernoulli(probs: {tuple(self.probs.shape)})"


def _broadcast(a, b):
    from clgrad.ops import composite as cp
    b = as_param(b, a)
    return cp.broadcast_tensors(a, b)
