"""Adam's relatives: NAdam (Nesterov momentum), RAdam (rectified variance), Adamax (infinity
norm). PyTorch's names, arguments, state keys and single-tensor update equations."""
from __future__ import annotations

import numpy as np

from clgrad import capture as _capture
from clgrad.ops._util import bump_version, defines_for, launch_1d, scalar
from clgrad.optim.optimizer import (Optimizer, check_execution_flags, scalar_state,
                                    state_buffer)
from clgrad.tensor import Tensor

__all__ = ["NAdam", "RAdam", "Adamax"]


def _check_adam_args(lr, betas, eps, weight_decay) -> tuple:
    """PyTorch's checks and messages (torch.optim.Adamax / NAdam / RAdam); the betas as a
    tuple."""
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    betas = tuple(betas)
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    return betas


def _moments(p: Tensor, state: dict, second: str):
    """``step`` (0), ``exp_avg`` and the second moment ``second``, made at the first step."""
    if "step" not in state:
        state["step"] = 0
    return state_buffer(state, "exp_avg", p), state_buffer(state, second, p)


def _decay_l2(group: dict) -> tuple:
    """(factor on p, L2 coefficient in g): decoupled decay scales p, the other adds to g."""
    wd = group["weight_decay"]
    if group.get("decoupled_weight_decay"):
        return 1.0 - group["lr"] * wd, 0.0
    return 1.0, wd


def _sign(group: dict) -> float:
    return -1.0 if group.get("maximize") else 1.0


class NAdam(Optimizer):
    """NAdam (T. Dozat, "Incorporating Nesterov Momentum into Adam", ICLR 2016 workshop) with
    PyTorch's update, t counting this parameter's steps from 1:

        g = -g if maximize
        p = p * (1 - lr * weight_decay)  if decoupled_weight_decay  (NAdamW)
        g = g + weight_decay * p         otherwise
        mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay));  prod = prod * mu_t
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
        d = sqrt(v / (1 - beta2^t)) + eps
        p = p - lr * (1 - mu_t) / (1 - prod) * g / d
              - lr * mu_{t+1} / (1 - prod * mu_{t+1}) * m / d

    Args:    params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
             momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False; foreach,
             capturable: accepted (one launch per parameter); differentiable must be False
    State:   ``step`` (int), ``mu_product`` (float, rounded as PyTorch's float32 0-d tensor),
             ``exp_avg`` (m), ``exp_avg_sq`` (v)
    Kernels: kernels/optim.cl :: nadam (one launch per parameter per step)
    Raises:  ValueError (PyTorch's messages) for lr, eps, weight_decay or momentum_decay < 0,
             or a beta outside [0, 1)
    """

    _float_state = ("mu_product",)

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False):
        check_execution_flags("NAdam", differentiable=differentiable)
        betas = _check_adam_args(lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        super().__init__(params, dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
            momentum_decay=momentum_decay, decoupled_weight_decay=bool(decoupled_weight_decay),
            maximize=bool(maximize), foreach=foreach, capturable=capturable,
            differentiable=differentiable))

    def _update(self, p: Tensor, grad: Tensor, group: dict, state: dict):
        m, v = _moments(p, state, "exp_avg_sq")
        state.setdefault("mu_product", 1.0)
        dt = p.dtype

        def tail(commit):  # per eager step and per replay of a captured step (clgrad/capture)
            t = state["step"] + 1
            beta1, beta2 = group["betas"]
            lr, md = group["lr"], group["momentum_decay"]
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * md))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * md))
            # (PyTorch: mu_product *= mu on a 0-d tensor, mu rounded to its dtype first; the
            # product of two float32 values is exact in a double, so one rounding after)
            prod = scalar_state(scalar_state(state["mu_product"]) * scalar_state(mu))
            if commit:
                state["step"], state["mu_product"] = t, prod
            decay, l2 = _decay_l2(group)
            return tuple(scalar(dt, x) for x in (
                decay, l2, beta1, beta2, 1 - beta2 ** t, -lr * (1.0 - mu) / (1.0 - prod),
                -lr * mu_next / (1.0 - prod * mu_next), group["eps"], _sign(group)))
        launch_1d("optim.cl", "nadam", defines_for(dt), p, (grad, m, v), _capture.dynamic(tail))
        bump_version(m, v)


class RAdam(Optimizer):
    """RAdam (L. Liu et al., "On the Variance of the Adaptive Learning Rate and Beyond", ICLR
    2020) with PyTorch's update, t counting this parameter's steps from 1:

        g = -g if maximize;  decay (decoupled_weight_decay) or L2 as NAdam's
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
        rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
        rho_t > 5:  r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
                    p = p - m / (1 - beta1^t) * lr * sqrt(1 - beta2^t) / (sqrt(v) + eps) * r
        else:       p = p - m / (1 - beta1^t) * lr

    Args:    params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
             decoupled_weight_decay=False, maximize=False; foreach, capturable: accepted
    State:   ``step`` (int), ``exp_avg`` (m), ``exp_avg_sq`` (v)
    Kernels: kernels/optim.cl :: radam (one launch per parameter per step)
    Raises:  ValueError (PyTorch's messages) for lr, eps or weight_decay < 0, or a beta
             outside [0, 1)
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach=None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False):
        check_execution_flags("RAdam", differentiable=differentiable)
        betas = _check_adam_args(lr, betas, eps, weight_decay)
        super().__init__(params, dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=bool(maximize),
            foreach=foreach, capturable=capturable,
            decoupled_weight_decay=bool(decoupled_weight_decay), differentiable=differentiable))

    def _update(self, p: Tensor, grad: Tensor, group: dict, state: dict):
        m, v = _moments(p, state, "exp_avg_sq")
        dt = p.dtype

        def tail(commit):
            t = state["step"] + 1
            if commit:
                state["step"] = t
            beta1, beta2 = group["betas"]
            t = float(t)  # (PyTorch's step is a float tensor: rho_t from a float)
            bc2 = 1 - beta2 ** t
            rho_inf = 2 / (1 - beta2) - 1
            rho_t = rho_inf - 2 * t * (beta2 ** t) / bc2
            rectify = rho_t > 5.0
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf /
                    ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5 if rectify else 0.0
            decay, l2 = _decay_l2(group)
            return tuple(scalar(dt, x) for x in (
                decay, l2, beta1, beta2, group["lr"], 1 - beta1 ** t, bc2 ** 0.5, rect,
                group["eps"], _sign(group))) + (np.int32(rectify),)
        launch_1d("optim.cl", "radam", defines_for(dt), p, (grad, m, v), _capture.dynamic(tail))
        bump_version(m, v)


class Adamax(Optimizer):
    """Adamax (D. P. Kingma and J. Ba, "Adam: A Method for Stochastic Optimization", ICLR
    2015, section 7.1: Adam with the infinity norm) with PyTorch's update:

        g = -g if maximize
        g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        u = maximum(beta2 * u, |g| + eps)               (NaN propagates)
        p = p - lr / (1 - beta1^t) * m / u

    Args:    params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None,
             maximize=False; differentiable must be False; capturable: accepted
    State:   ``step`` (int), ``exp_avg`` (m), ``exp_inf`` (u)
    Kernels: kernels/optim.cl :: adamax (one launch per parameter per step)
    Raises:  ValueError (PyTorch's messages) for lr, eps or weight_decay < 0, or a beta
             outside [0, 1)
    """

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False):
        check_execution_flags("Adamax", differentiable=differentiable)
        betas = _check_adam_args(lr, betas, eps, weight_decay)
        super().__init__(params, dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
            maximize=bool(maximize), differentiable=differentiable, capturable=capturable))

    def _update(self, p: Tensor, grad: Tensor, group: dict, state: dict):
        m, u = _moments(p, state, "exp_inf")
        dt = p.dtype

        def tail(commit):
            t = state["step"] + 1
            if commit:
                state["step"] = t
            beta1, beta2 = group["betas"]
            return tuple(scalar(dt, x) for x in (
                beta1, beta2, group["eps"], group["weight_decay"],
                group["lr"] / (1 - beta1 ** t), _sign(group)))
        launch_1d("optim.cl", "adamax", defines_for(dt), p, (grad, m, u),
                  _capture.dynamic(tail))
        bump_version(m, u)
