"""torch.distributions' argument validation (issue 32): invalid parameters and values raise
ValueError naming the constraint, as PyTorch's (validate_args). Torch-free: each case runs on
clgrad alone, and on torch too (the oracle of the same message) where it is installed."""
import numpy as np
import pytest

import clgrad

INVALID = [
    ("Normal scale < 0", lambda D, T: D.Normal(0.0, T([1.0, -1.0])), "scale", "GreaterThan"),
    ("Normal scale 0", lambda D, T: D.Normal(T([0.0]), 0.0), "scale", "GreaterThan"),
    ("Normal loc NaN", lambda D, T: D.Normal(T([0.0, float("nan")]), 1.0), "loc", r"Real\(\)"),
    ("Bernoulli probs > 1", lambda D, T: D.Bernoulli(probs=T([0.5, 1.2])), "probs",
     r"Interval\(lower_bound=0.0, upper_bound=1.0\)"),
    ("Bernoulli probs < 0", lambda D, T: D.Bernoulli(probs=T([-0.1])), "probs", "Interval"),
    ("Bernoulli logits NaN", lambda D, T: D.Bernoulli(logits=T([float("nan")])), "logits",
     r"Real\(\)"),
    ("Categorical probs < 0", lambda D, T: D.Categorical(probs=T([0.5, -0.1, 0.6])), "probs",
     r"Simplex\(\)"),
    ("Categorical logits NaN", lambda D, T: D.Categorical(logits=T([0.5, float("nan")])),
     "logits", r"IndependentConstraint\(Real\(\), 1\)"),
]
BAD_VALUES = [
    ("Bernoulli 0.5", lambda D, T: D.Bernoulli(T([0.3])).log_prob(T([0.5])), r"Boolean\(\)"),
    ("Categorical 2 of 2", lambda D, T: D.Categorical(probs=T([0.5, 0.5])).log_prob(T(2)),
     r"IntegerInterval\(lower_bound=0, upper_bound=1\)"),
    ("Categorical 1.5", lambda D, T: D.Categorical(probs=T([0.5, 0.5])).log_prob(T(1.5)),
     "IntegerInterval"),
    ("Normal NaN", lambda D, T: D.Normal(0.0, T([1.0])).log_prob(T([float("nan")])), r"Real\(\)"),
    ("Normal cdf NaN", lambda D, T: D.Normal(0.0, T([1.0])).cdf(T([float("nan")])), r"Real\(\)"),
]


def _faces():
    faces = [(clgrad.distributions, clgrad.tensor)]
    try:
        import torch
        faces.append((torch.distributions, torch.tensor))
    except ImportError:
        pass
    return faces


@pytest.mark.parametrize("case", INVALID, ids=[c[0] for c in INVALID])
def test_invalid_parameters_raise_naming_the_constraint(case):
    _, make, param, constraint = case
    for D, T in _faces():  # clgrad, then torch as the oracle of the same message
        with pytest.raises(ValueError, match=rf"Expected parameter {param} .* to satisfy the "
                                             rf"constraint {constraint}"):
            make(D, T)
    D = clgrad.distributions
    d = None
    try:
        D.Distribution.set_default_validate_args(False)
        d = make(D, clgrad.tensor)  # no check: made without error
    finally:
        D.Distribution.set_default_validate_args(True)
    assert d is not None


@pytest.mark.parametrize("case", BAD_VALUES, ids=[c[0] for c in BAD_VALUES])
def test_invalid_values_raise_naming_the_support(case):
    _, call, support = case
    for D, T in _faces():
        with pytest.raises(ValueError, match=rf"Expected value argument .* to be within the "
                                             rf"support \({support}"):
            call(D, T)


def test_validate_args_switches():
    D = clgrad.distributions
    assert D.Distribution._validate_args is True  # the default (Python without -O)
    d = D.Bernoulli(clgrad.tensor([0.3]), validate_args=False)
    np.testing.assert_allclose(d.log_prob(clgrad.tensor([0.5])).numpy(),
                               [0.5 * np.log(0.3) + 0.5 * np.log(0.7)], rtol=1e-6)
    assert D.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    with pytest.raises(ValueError, match="Expected parameter scale"):
        D.Normal(0.0, -1.0, validate_args=True)
    with pytest.raises(ValueError, match="expected True or False"):
        D.Distribution.set_default_validate_args(1.5)
    with pytest.raises(ValueError, match="must be a Tensor"):
        D.Normal(0.0, 1.0).log_prob(0.5)
    with pytest.raises(ValueError, match="not broadcastable"):
        D.Normal(clgrad.zeros(3), 1.0).log_prob(clgrad.zeros(2))
    # valid edge values pass: probs 0 and 1, log_prob at 0/1, the last category, inf for Normal
    D.Bernoulli(probs=clgrad.tensor([0.0, 1.0])).log_prob(clgrad.tensor([0.0, 1.0]))
    assert D.Categorical(probs=clgrad.tensor([1.0, 3.0])).log_prob(
        clgrad.tensor(1)).item() == pytest.approx(np.log(0.75), rel=1e-6)
    assert D.Normal(0.0, 1.0).log_prob(clgrad.tensor(float("inf"))).item() == float("-inf")
    assert repr(D.constraints.positive) == "GreaterThan(lower_bound=0.0)"
