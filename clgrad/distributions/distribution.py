"""The base class of clgrad's distributions (PyTorch's torch.distributions.Distribution)."""
from __future__ import annotations

from clgrad import creation
from clgrad.tensor import Size, Tensor

__all__ = ["Distribution", "as_param"]


class Distribution:
    """Shapes and the sampling interface: ``batch_shape``, ``event_shape``, ``sample``,
    ``rsample`` (reparameterised, where the family has one), ``log_prob``, ``entropy``."""

    has_rsample = False

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape, self._event_shape = Size(batch_shape), Size(event_shape)

    @property
    def batch_shape(self) -> Size:
        """The shape of the batch of independent distributions."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of one sample of one distribution."""
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> Size:
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def sample(self, sample_shape=()):
        """Draw ``sample_shape + batch_shape + event_shape`` values (no gradient)."""
        raise NotImplementedError(f"{type(self).__name__}.sample is not implemented")

    def rsample(self, sample_shape=()):
        """A reparameterised sample (gradients flow to the parameters). Raises
        NotImplementedError for families without one."""
        raise NotImplementedError(f"{type(self).__name__} has no rsample")

    def sample_n(self, n: int):
        """``sample((n,))``."""
        return self.sample((n,))

    def __repr__(self):
        return f"{type(self).__name__}()"


def as_param(value, like=None) -> Tensor:
    """A parameter as a float tensor (numbers become 0-dim tensors of ``like``'s dtype)."""
    if isinstance(value, Tensor):
        return value if value.dtype.is_floating_point else value.float()
    dt = like.dtype if isinstance(like, Tensor) else None
    dev = like.device if isinstance(like, Tensor) else None
    return creation.tensor(float(value), dtype=dt, device=dev)
