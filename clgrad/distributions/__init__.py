"""``torch.distributions``'s most used families: Categorical, OneHotCategorical, Normal,
Bernoulli, Uniform, Exponential, Laplace, Independent; ``kl_divergence``/``register_kl``.

Parameters are clgrad tensors, so ``log_prob``, ``entropy``, ``cdf`` and ``rsample`` (the
continuous families) carry gradients to them (policy gradients:
``-m.log_prob(action) * reward``). Samples are drawn from clgrad's generator
(``clgrad.manual_seed``): other numbers than PyTorch's for the same seed, the same
distribution. Arguments are validated as PyTorch (``validate_args``,
``Distribution.set_default_validate_args``: see Distribution), against the ``constraints``
PyTorch names. Transforms and the other families are not provided: asking for one
(``clgrad.distributions.Dirichlet``) raises AttributeError naming it.
"""
from clgrad.distributions import constraints
from clgrad.distributions.bernoulli import Bernoulli
from clgrad.distributions.categorical import Categorical
from clgrad.distributions.distribution import Distribution
from clgrad.distributions.exponential import Exponential
from clgrad.distributions.independent import Independent
from clgrad.distributions.laplace import Laplace
from clgrad.distributions.normal import Normal
from clgrad.distributions.one_hot_categorical import OneHotCategorical
from clgrad.distributions.uniform import Uniform
from clgrad.distributions.kl import kl_divergence, register_kl  # noqa: E402 (after families)
from clgrad.errors import missing_attribute as _missing_attribute

__all__ = ["Distribution", "Categorical", "OneHotCategorical", "Normal", "Bernoulli",
           "Uniform", "Exponential", "Laplace", "Independent", "kl_divergence", "register_kl",
           "constraints"]


def __getattr__(name):
    """A name not in this package (a PyTorch family clgrad lacks): AttributeError naming it
    as not implemented and listing the names the package has."""
    err = _missing_attribute(__name__, name)
    if not name.startswith("__"):
        err.args = (f"{err.args[0]}; clgrad.distributions has: {', '.join(__all__)}",)
    raise err
