"""Independent: batch dims of a distribution read as event dims (PyTorch's
torch.distributions.Independent)."""
from __future__ import annotations

from clgrad.distributions import constraints
from clgrad.distributions.distribution import Distribution

__all__ = ["Independent"]


def sum_rightmost(x, n: int):
    """x summed over its last ``n`` dims (x itself for n = 0)."""
    return x.sum(tuple(range(-n, 0))) if n > 0 else x


class Independent(Distribution):
    """``base_distribution`` with its last ``reinterpreted_batch_ndims`` batch dims taken
    as event dims: log_prob and entropy sum over them (a diagonal Normal over vectors is
    ``Independent(Normal(loc, scale), 1)``).

    Shapes:  batch_shape = base batch_shape minus its last n dims; event_shape = those dims
             + the base event_shape
    Grad:    as the base distribution
    Raises:  ValueError for reinterpreted_batch_ndims > len(base batch_shape) (or < 0)
    """

    arg_constraints: dict = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        n = int(reinterpreted_batch_ndims)
        base_batch = tuple(base_distribution.batch_shape)
        if n > len(base_batch) or n < 0:
            raise ValueError(f"Expected reinterpreted_batch_ndims <= len(base_distribution."
                             f"batch_shape), actual {n} vs {len(base_batch)}")
        shape = base_batch + tuple(base_distribution.event_shape)
        event_dim = n + len(base_distribution.event_shape)
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        super().__init__(shape[:len(shape) - event_dim], shape[len(shape) - event_dim:],
                         validate_args)

    @property
    def has_rsample(self):
        """The base's."""
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self):
        """The base's, when no dims are reinterpreted."""
        if self.reinterpreted_batch_ndims > 0:
            return False
        return getattr(self.base_dist, "has_enumerate_support", False)

    @property
    def support(self):
        """The base's support over the reinterpreted dims as one event."""
        base = self.base_dist.support
        if self.reinterpreted_batch_ndims:
            return constraints.independent(base, self.reinterpreted_batch_ndims)
        return base

    @property
    def mean(self):
        """The base's."""
        return self.base_dist.mean

    @property
    def mode(self):
        """The base's."""
        return self.base_dist.mode

    @property
    def variance(self):
        """The base's."""
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        """The base's sample."""
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        """The base's rsample."""
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        """The base's log_prob summed over the reinterpreted dims."""
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        """The base's entropy summed over the reinterpreted dims."""
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True):
        """The base's, when no dims are reinterpreted (NotImplementedError otherwise)."""
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def expand(self, batch_shape, _instance=None):
        """The base expanded to ``batch_shape`` + the reinterpreted dims."""
        n = self.reinterpreted_batch_ndims
        base_shape = tuple(batch_shape) + tuple(self.event_shape)[:n]
        return self._expanded(tuple(batch_shape), base_dist=self.base_dist.expand(base_shape))

    def __repr__(self):
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
