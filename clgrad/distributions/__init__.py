"""``torch.distributions``'s most used families: Categorical, Normal, Bernoulli.

Parameters are clgrad tensors, so ``log_prob``, ``entropy``, ``cdf`` and ``rsample``
(Normal) carry gradients to them (policy gradients: ``-m.log_prob(action) * reward``).
Samples are drawn from clgrad's generator (``clgrad.manual_seed``): other numbers than
PyTorch's for the same seed, the same distribution. Arguments are validated as PyTorch
(``validate_args``, ``Distribution.set_default_validate_args``: see Distribution), against
the ``constraints`` PyTorch names; ``expand`` and transforms are not provided.
"""
from clgrad.distributions import constraints
from clgrad.distributions.bernoulli import Bernoulli
from clgrad.distributions.categorical import Categorical
from clgrad.distributions.distribution import Distribution
from clgrad.distributions.normal import Normal

__all__ = ["Distribution", "Categorical", "Normal", "Bernoulli", "constraints"]
