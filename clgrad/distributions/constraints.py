"""The constraints the distributions check (PyTorch's torch.distributions.constraints, the
ones clgrad's families use): ``check(value)`` gives a bool tensor, one entry per event
(value's shape without the last ``event_dim`` dims); ``repr`` is PyTorch's.
"""
from __future__ import annotations

from clgrad.ops import elementwise as ew
from clgrad.ops import reduce as rd

__all__ = ["Constraint", "dependent", "is_dependent", "real", "real_vector", "positive",
           "nonnegative", "unit_interval", "boolean", "one_hot", "simplex", "greater_than",
           "greater_than_eq", "interval", "integer_interval", "independent"]


class Constraint:
    """A region of valid values; ``check(value)`` is True where value lies in it."""

    is_discrete = False
    event_dim = 0

    def check(self, value):
        """A bool tensor: value's shape without the last ``event_dim`` dims."""
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__[1:] + "()"


class _Dependent(Constraint):
    """A constraint that depends on other parameters (Uniform's low and high): the
    constructor's check skips it; ``check`` raises ValueError."""

    def __init__(self, *, is_discrete=False, event_dim=0):
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, *, is_discrete=None, event_dim=None):
        return _Dependent(is_discrete=self.is_discrete if is_discrete is None else is_discrete,
                          event_dim=self.event_dim if event_dim is None else event_dim)

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint) -> bool:
    """True for ``dependent`` (and its calls)."""
    return isinstance(constraint, _Dependent)


class _Real(Constraint):
    """Any real number, NaN excluded (infinities are real here, as PyTorch)."""

    def check(self, value):
        return ew.eq(value, value)


class _GreaterThan(Constraint):
    """lower_bound < value."""

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return ew.gt(value, self.lower_bound)

    def __repr__(self):
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _GreaterThanEq(Constraint):
    """lower_bound <= value."""

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return ew.ge(value, self.lower_bound)

    def __repr__(self):
        return f"GreaterThanEq(lower_bound={self.lower_bound})"


class _Interval(Constraint):
    """lower_bound <= value <= upper_bound."""

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return ew.logical_and(ew.ge(value, self.lower_bound), ew.le(value, self.upper_bound))

    def __repr__(self):
        return f"Interval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Boolean(Constraint):
    """0 or 1."""

    is_discrete = True

    def check(self, value):
        return ew.logical_or(ew.eq(value, 0), ew.eq(value, 1))


class _IntegerInterval(Constraint):
    """An integer in [lower_bound, upper_bound]."""

    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        whole = ew.eq(ew.floor(value), value)
        inside = ew.logical_and(ew.ge(value, self.lower_bound), ew.le(value, self.upper_bound))
        return ew.logical_and(whole, inside)

    def __repr__(self):
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _OneHot(Constraint):
    """0/1 entries along the last dim, exactly one of them 1."""

    is_discrete = True
    event_dim = 1

    def check(self, value):
        zero_one = rd.all(ew.logical_or(ew.eq(value, 0), ew.eq(value, 1)), -1)
        return ew.logical_and(zero_one, ew.eq(rd.sum(value, -1), 1))


class _Simplex(Constraint):
    """Non-negative along the last dim, summing to 1 (within 1e-6, PyTorch's tolerance)."""

    event_dim = 1

    def check(self, value):
        nonneg = rd.all(ew.ge(value, 0), -1)
        return ew.logical_and(nonneg, ew.lt(ew.abs(ew.sub(rd.sum(value, -1), 1)), 1e-6))


class _IndependentConstraint(Constraint):
    """``base_constraint`` over the last ``reinterpreted_batch_ndims`` dims as one event."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims: int):
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        self.is_discrete = base_constraint.is_discrete
        self.event_dim = base_constraint.event_dim + reinterpreted_batch_ndims

    def check(self, value):
        ok = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        return rd.all(ok, tuple(range(ok.ndim - n, ok.ndim))) if n else ok

    def __repr__(self):
        return (f"IndependentConstraint({self.base_constraint!r}, "
                f"{self.reinterpreted_batch_ndims})")


dependent = _Dependent()
real = _Real()
real_vector = _IndependentConstraint(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
unit_interval = _Interval(0.0, 1.0)
boolean = _Boolean()
one_hot = _OneHot()
simplex = _Simplex()
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
interval = _Interval
integer_interval = _IntegerInterval
independent = _IndependentConstraint
