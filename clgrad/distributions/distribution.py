"""The base class of clgrad's distributions (PyTorch's torch.distributions.Distribution)."""
from __future__ import annotations

from clgrad import autograd, creation, layout
from clgrad.distributions import constraints
from clgrad.ops import reduce as rd
from clgrad.tensor import Size, Tensor

__all__ = ["Distribution", "as_param"]


class Distribution:
    """Shapes and the sampling interface: ``batch_shape``, ``event_shape``, ``sample``,
    ``rsample`` (reparameterised, where the family has one), ``log_prob``, ``entropy``.

    Validation (PyTorch's): with ``validate_args`` (default: the class default, True unless
    Python runs with -O; ``Distribution.set_default_validate_args`` changes it) the
    constructor checks each given parameter against ``arg_constraints`` and ``log_prob``
    (and ``cdf``) check the value against ``support`` and the shapes. Each check reads one
    bool from the device.
    Raises:  ValueError naming the parameter (or the value argument), the constraint and the
             invalid values; for a value that is not a Tensor or does not broadcast.
    """

    has_rsample = False
    arg_constraints: dict = {}
    support = None
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn the checks on (True) or off (False) for distributions made from now on
        without their own ``validate_args``. Raises ValueError for anything but a bool."""
        if value not in [True, False]:
            raise ValueError(f"set_default_validate_args: expected True or False, got "
                             f"{value!r}")
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape, self._event_shape = Size(batch_shape), Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if param not in self._given_params() or constraints.is_dependent(constraint):
                    continue
                value = getattr(self, param)
                if not bool(rd.all(constraint.check(value))):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}")

    def _given_params(self):
        """The parameters the constructor was given (the ones it validates)."""
        return tuple(self.arg_constraints)

    def _validate_sample(self, value) -> None:
        """PyTorch's checks of a ``log_prob``/``cdf`` argument (see the class docstring)."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        shape, event = tuple(value.shape), tuple(self._event_shape)
        if shape[len(shape) - len(event):] != event:
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{Size(shape)} vs {Size(event)}.")
        expected = tuple(self._batch_shape) + event
        for i, j in zip(reversed(shape), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{Size(shape)} vs {Size(expected)}.")
        support = self.support
        if support is not None and not bool(rd.all(support.check(value))):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape "
                             f"{shape}) to be within the support ({support!r}) of the "
                             f"distribution {self!r}, but found invalid values:\n{value}")

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

    def expand(self, batch_shape, _instance=None):
        """The same distribution over a larger ``batch_shape`` (parameters broadcast, not
        copied; no new validation). Raises NotImplementedError for a family without it, and
        RuntimeError for a shape the parameters do not broadcast to."""
        raise NotImplementedError(f"{type(self).__name__}.expand is not implemented")

    def _expanded(self, batch_shape, **params):
        """A copy of self with ``params`` replaced and batch_shape ``batch_shape``."""
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.__dict__.update(params)
        new._batch_shape = Size(batch_shape)
        return new

    @property
    def mean(self):
        """The mean, of batch_shape + event_shape."""
        raise NotImplementedError(f"{type(self).__name__}.mean is not implemented")

    @property
    def mode(self):
        """The most likely value, of batch_shape + event_shape."""
        raise NotImplementedError(f"{type(self).__name__}.mode is not implemented")

    @property
    def variance(self):
        """The variance, of batch_shape + event_shape."""
        raise NotImplementedError(f"{type(self).__name__}.variance is not implemented")

    @property
    def stddev(self):
        """sqrt(variance)."""
        return self.variance.sqrt()

    def log_prob(self, value):
        """log density (or mass) at ``value``."""
        raise NotImplementedError(f"{type(self).__name__}.log_prob is not implemented")

    def cdf(self, value):
        """P(X <= value)."""
        raise NotImplementedError(f"{type(self).__name__}.cdf is not implemented")

    def icdf(self, value):
        """The inverse of cdf."""
        raise NotImplementedError(f"{type(self).__name__}.icdf is not implemented")

    def entropy(self):
        """The entropy, of batch_shape."""
        raise NotImplementedError(f"{type(self).__name__}.entropy is not implemented")

    def enumerate_support(self, expand: bool = True):
        """Every value of a discrete support."""
        raise NotImplementedError(f"{type(self).__name__}.enumerate_support is not "
                                  f"implemented")

    def sample(self, sample_shape=()):
        """Draw ``sample_shape + batch_shape + event_shape`` values (no gradient): rsample's
        under no_grad where the family has one (``has_rsample``), as PyTorch's default.
        Raises NotImplementedError for a family with neither."""
        if not self.has_rsample:
            raise NotImplementedError(f"{type(self).__name__}.sample is not implemented")
        with autograd.no_grad():
            return self.rsample(sample_shape)

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


class LocScale(Distribution):
    """A family of ``loc`` and ``scale`` (tensors or numbers broadcast together; batch_shape
    their broadcast shape, event_shape ()): its constructor, ``mean`` and ``mode`` (loc),
    ``expand`` and repr; subclasses give the rest (Normal, Laplace)."""

    has_rsample = True
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        loc = as_param(loc, scale)
        scale = as_param(scale, loc)
        shape = layout.broadcast_shapes(loc.shape, scale.shape, op=type(self).__name__)
        self.loc, self.scale = loc.expand(shape), scale.expand(shape)
        super().__init__(shape, (), validate_args)

    @property
    def mean(self):
        """loc."""
        return self.loc

    @property
    def mode(self):
        """loc."""
        return self.loc

    def expand(self, batch_shape, _instance=None):
        """loc and scale broadcast to ``batch_shape``."""
        shape = tuple(batch_shape)
        return self._expanded(shape, loc=self.loc.expand(shape), scale=self.scale.expand(shape))

    def __repr__(self):
        return (f"{type(self).__name__}(loc: {tuple(self.loc.shape)}, "
                f"scale: {tuple(self.scale.shape)})")
