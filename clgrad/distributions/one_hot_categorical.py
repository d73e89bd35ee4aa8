"""One-hot categorical distribution (PyTorch's torch.distributions.OneHotCategorical)."""
from __future__ import annotations

import numpy as np

from clgrad import creation
from clgrad.distributions import constraints
from clgrad.distributions.categorical import Categorical
from clgrad.distributions.distribution import Distribution
from clgrad.ops import elementwise as ew

__all__ = ["OneHotCategorical"]


class OneHotCategorical(Distribution):
    """A Categorical whose values are one-hot vectors of length K.

    Shapes:  probs/logits (*B, K) -> batch_shape B, event_shape (K,); samples of probs' dtype
    Grad:    log_prob, entropy, mean, variance -> the parameter given
    Raises:  as Categorical; (validate_args) a log_prob value that is not one-hot
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        self._given = self._categorical._given
        batch = tuple(self._categorical.batch_shape)
        super().__init__(batch, (self._categorical._num_events,), validate_args)

    def _given_params(self):
        return (self._given,)

    @property
    def probs(self):
        """The normalised probabilities (*B, K)."""
        return self._categorical.probs

    @property
    def logits(self):
        """The normalised log-probabilities (*B, K)."""
        return self._categorical.logits

    @property
    def param_shape(self):
        """The shape of probs/logits."""
        return self._categorical.param_shape

    @property
    def mean(self):
        """probs."""
        return self._categorical.probs

    @property
    def mode(self):
        """The one-hot vector of the most likely category."""
        return self._one_hot(self._categorical.mode.numpy())

    @property
    def variance(self):
        """probs (1 - probs)."""
        p = self._categorical.probs
        return ew.mul(p, ew.sub(1.0, p))

    def _one_hot(self, idx):
        k = self._categorical._num_events
        p = self._categorical.probs
        return creation.tensor(np.eye(k)[idx], dtype=p.dtype, device=p.device)

    def sample(self, sample_shape=()):
        """One-hot vectors of ``sample_shape + batch_shape + (K,)`` (no gradient)."""
        return self._one_hot(self._categorical.sample(sample_shape).numpy())

    def log_prob(self, value):
        """log P(the category value marks)."""
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        """The Categorical's entropy."""
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True):
        """The K one-hot vectors along a new first dim, expanded over batch_shape."""
        k = self._categorical._num_events
        p = self._categorical.probs
        values = creation.eye(k, dtype=p.dtype, device=p.device)
        values = values.reshape((k,) + (1,) * len(self.batch_shape) + (k,))
        return values.expand((k,) + tuple(self.batch_shape) + (k,)) if expand else values

    def expand(self, batch_shape, _instance=None):
        """The Categorical expanded to ``batch_shape``."""
        return self._expanded(tuple(batch_shape),
                              _categorical=self._categorical.expand(batch_shape))

    def __repr__(self):
        return f"OneHotCategorical(probs: {tuple(self.probs.shape)})"
