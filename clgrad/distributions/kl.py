"""KL divergence between distributions (PyTorch's torch.distributions.kl): ``kl_divergence``
dispatches on the pair of types to the most specific function ``register_kl`` recorded."""
from __future__ import annotations

import warnings

from clgrad.distributions.bernoulli import Bernoulli
from clgrad.distributions.categorical import Categorical
from clgrad.distributions.distribution import Distribution
from clgrad.distributions.exponential import Exponential
from clgrad.distributions.independent import Independent, sum_rightmost
from clgrad.distributions.laplace import Laplace
from clgrad.distributions.normal import Normal
from clgrad.distributions.one_hot_categorical import OneHotCategorical
from clgrad.distributions.uniform import Uniform
from clgrad.ops import elementwise as ew

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}  # (type_p, type_q) -> fn(p, q)
_KL_MEMO: dict = {}  # (type(p), type(q)) -> the fn dispatch chose


def register_kl(type_p, type_q):
    """Decorator: ``@register_kl(P, Q) def kl_p_q(p, q): ...`` makes ``kl_divergence`` use it
    for p an instance of P and q of Q (subclasses included, the most specific pair winning).

    Raises:  TypeError unless both are Distribution subclasses
    """
    for name, t in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise TypeError(f"Expected {name} to be a Distribution subclass but got {t}")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMO.clear()
        return fn
    return decorator


def _dispatch(type_p, type_q):
    """The function of the most specific registered pair (p's type first, then q's: the
    distance up each MRO); a RuntimeWarning where another pair is as specific the other way
    round. None where no pair matches."""
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY
               if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return None
    mro_p, mro_q = type_p.__mro__, type_q.__mro__
    left = min(matches, key=lambda m: (mro_p.index(m[0]), mro_q.index(m[1])))
    right = min(matches, key=lambda m: (mro_q.index(m[1]), mro_p.index(m[0])))
    fn = _KL_REGISTRY[left]
    if fn is not _KL_REGISTRY[right]:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left[0].__name__}, {right[1].__name__})",
                      RuntimeWarning, stacklevel=3)
    return fn


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], of the batch shape (summed over events).

    Raises:  NotImplementedError where no function is registered for the pair of types
    """
    key = (type(p), type(q))
    if key not in _KL_MEMO:
        _KL_MEMO[key] = _dispatch(*key)
    fn = _KL_MEMO[key]
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p of type "
                                  f"{type(p).__name__} and q of type {type(q).__name__}")
    return fn(p, q)


def _inf_where(cond, x, value=float("inf")):
    return ew.where(cond, value, x)


def _softplus(x):
    """log(1 + exp(x)), stable for either sign."""
    return ew.add(ew.clamp(x, min=0), ew.neg(x.abs()).exp().log1p())


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = ew.div(p.scale, q.scale).square()
    t1 = ew.div(ew.sub(p.loc, q.loc), q.scale).square()
    return ew.mul(ew.sub(ew.sub(ew.add(var_ratio, t1), 1.0), var_ratio.log()), 0.5)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = ew.mul(p.probs, ew.sub(p.logits, q.logits))
    t = _inf_where(ew.eq(q.probs, 0), t)
    t = _inf_where(ew.eq(p.probs, 0), t, 0.0)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = ew.mul(p.probs, ew.sub(_softplus(ew.neg(q.logits)), _softplus(ew.neg(p.logits))))
    t1 = _inf_where(ew.eq(p.probs, 0), _inf_where(ew.eq(q.probs, 0), t1), 0.0)
    t2 = ew.mul(ew.sub(1.0, p.probs), ew.sub(_softplus(q.logits), _softplus(p.logits)))
    t2 = _inf_where(ew.eq(p.probs, 1), _inf_where(ew.eq(q.probs, 1), t2), 0.0)
    return ew.add(t1, t2)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ew.sub(ew.sub(q.high, q.low).log(), ew.sub(p.high, p.low).log())
    outside = ew.logical_or(ew.gt(q.low, p.low), ew.lt(q.high, p.high))
    return _inf_where(outside, result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = ew.div(q.rate, p.rate)
    return ew.sub(ew.sub(ratio, ratio.log()), 1.0)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = ew.div(p.scale, q.scale)
    d = ew.sub(p.loc, q.loc).abs()
    t3 = ew.mul(scale_ratio, ew.neg(ew.div(d, p.scale)).exp())
    return ew.sub(ew.add(ew.add(ew.neg(scale_ratio.log()), ew.div(d, q.scale)), t3), 1.0)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independents with different "
                                  "reinterpreted_batch_ndims is not implemented")
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
