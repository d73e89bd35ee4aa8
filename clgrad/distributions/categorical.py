"""Categorical over {0, ..., K - 1} (PyTorch's torch.distributions.Categorical)."""
from __future__ import annotations

import numpy as np

from clgrad import creation, dtypes
from clgrad.distributions import constraints
from clgrad.distributions.distribution import Distribution
from clgrad.ops import elementwise as ew
from clgrad.tensor import Tensor

__all__ = ["Categorical"]


class Categorical(Distribution):
    """K categories per row of ``probs`` (non-negative, normalised along the last dim) or of
    ``logits`` (unnormalised log-probabilities); exactly one of them.

    Shapes:  probs/logits (*B, K) -> batch_shape B, event_shape (); samples int64
    Grad:    log_prob, entropy and probs/logits carry gradients to the parameter given
    Raises:  ValueError unless exactly one of probs and logits is given, or for a 0-dim one;
             (validate_args, see Distribution) for probs with a negative entry (after
             normalising: PyTorch's simplex check), NaN logits, or a log_prob value that is
             not an integer in [0, K - 1]
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        param = probs if probs is not None else logits
        if not isinstance(param, Tensor) or param.ndim < 1:
            raise ValueError("`probs` / `logits` parameter must be at least one-dimensional.")
        self._given = "probs" if probs is not None else "logits"
        if probs is not None:
            self.probs = ew.div(probs, probs.sum(-1, keepdim=True))
            eps = dtypes.finfo(self.probs.dtype).eps  # (bfloat16's too)
            self.logits = ew.log(ew.clamp(self.probs, eps, 1 - eps))  # PyTorch's clamp_probs
        else:
            self.logits = ew.sub(logits, logits.logsumexp(-1, keepdim=True))
            self.probs = self.logits.softmax(-1)
        self._num_events = param.shape[-1]
        super().__init__(tuple(param.shape[:-1]), (), validate_args)

    def _given_params(self):
        return (self._given,)

    @property
    def support(self):
        """The integers 0..K-1."""
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def param_shape(self):
        """The shape of probs/logits."""
        return self.probs.shape

    @property
    def mean(self):
        """NaN (a category has no mean), of batch_shape."""
        return creation.full(tuple(self.batch_shape), float("nan"), dtype=self.probs.dtype,
                             device=self.probs.device)

    @property
    def variance(self):
        """NaN, of batch_shape."""
        return self.mean

    @property
    def mode(self):
        """The most likely category per batch element."""
        return self.probs.argmax(-1)

    def sample(self, sample_shape=()):
        """int64 categories of ``sample_shape + batch_shape``, drawn on the host by inverse
        CDF from clgrad's generator (no gradient)."""
        p = self.probs.detach()._values().astype(np.float64).reshape(-1, self._num_events)
        n = int(np.prod(tuple(sample_shape), dtype=np.int64))
        cdf = np.cumsum(p, axis=-1)
        cdf /= cdf[:, -1:]
        u = creation.seed_generator().random((n, p.shape[0], 1))
        idx = np.minimum((cdf[None] < u).sum(-1), self._num_events - 1)
        shape = tuple(sample_shape) + tuple(self.batch_shape)
        return creation.tensor(idx.reshape(shape), dtype=dtypes.int64,
                               device=self.probs.device)

    def log_prob(self, value: Tensor) -> Tensor:
        """log P(value), value an integer tensor broadcast against batch_shape."""
        if self._validate_args:
            self._validate_sample(value)
        value = ew.to(value, dtypes.int64).unsqueeze(-1)
        shape = _broadcast(value.shape, self.logits.shape)
        value = value.expand(shape)[..., :1]
        return self.logits.expand(shape).gather(-1, ew.contiguous(value)).squeeze(-1)

    def entropy(self) -> Tensor:
        """-sum p log p over the categories (PyTorch's formula: logits clamped to the dtype's
        smallest value, so a zero probability adds nothing)."""
        low = dtypes.finfo(self.logits.dtype).min
        return ew.neg(ew.mul(ew.clamp(self.logits, min=low), self.probs).sum(-1))

    def enumerate_support(self, expand: bool = True):
        """0..K-1 along a new first dim, expanded over batch_shape (expand=True)."""
        values = creation.arange(self._num_events, device=self.probs.device)
        values = values.reshape((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1,) + tuple(self.batch_shape)) if expand else values

    def expand(self, batch_shape, _instance=None):
        """probs and logits broadcast to ``batch_shape + (K,)``."""
        shape = tuple(batch_shape) + (self._num_events,)
        return self._expanded(shape[:-1], probs=self.probs.expand(shape),
                              logits=self.logits.expand(shape))

    def __repr__(self):
        return f"Categorical(probs: {tuple(self.probs.shape)})"


def _broadcast(a, b):
    from clgrad import layout
    return layout.broadcast_shapes(tuple(a), tuple(b), op="Categorical.log_prob")
