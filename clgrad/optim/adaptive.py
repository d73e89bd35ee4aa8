"""Optimizers with per-element step sizes from running gradient statistics: Adagrad, Adadelta,
RMSprop (PyTorch's names, arguments, state keys and single-tensor update equations)."""
from __future__ import annotations

from clgrad import capture as _capture
from clgrad.ops._util import bump_version, defines_for, launch_1d, scalar
from clgrad.optim.optimizer import (Optimizer, check_execution_flags, check_nonnegative,
                                    state_buffer)
from clgrad.tensor import Tensor

__all__ = ["Adagrad", "Adadelta", "RMSprop"]


def _count(state, commit) -> tuple:
    """Count a step in ``state['step']`` when ``commit`` (see clgrad.capture.dynamic); ()."""
    if commit:
        state["step"] = state.get("step", 0) + 1
    return ()


def _gsign(dt, group):
    """The gradient's sign factor: -1 under maximize (PyTorch negates the gradient first)."""
    return scalar(dt, -1.0 if group.get("maximize") else 1.0)


class Adagrad(Optimizer):
    """Adagrad (J. Duchi, E. Hazan and Y. Singer, "Adaptive Subgradient Methods for Online
    Learning and Stochastic Optimization", JMLR 2011) with PyTorch's update, t counting this
    parameter's steps from 1:

        g = -g if maximize
        g = g + weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        sum = sum + g^2                             (sum starts at initial_accumulator_value)
        p = p - clr * g / (sqrt(sum) + eps)

    Args:    params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
             eps=1e-10, foreach=None, maximize=False; foreach, fused: accepted (one launch
             per parameter); differentiable must be False
    State:   ``step`` (int), ``sum``; made for every parameter at construction, as PyTorch
             does (and for parameters of groups added later, at their first step)
    Kernels: kernels/optim.cl :: adagrad (one launch per parameter per step)
    Raises:  ValueError for a negative lr, lr_decay, weight_decay, initial_accumulator_value
             or eps
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach=None, *,
                 maximize: bool = False, differentiable: bool = False, fused=None):
        check_execution_flags("Adagrad", differentiable=differentiable)
        check_nonnegative("Adagrad", lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                          initial_accumulator_value=initial_accumulator_value, eps=eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, foreach=foreach, maximize=bool(maximize),
                                      differentiable=differentiable, fused=fused))
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group, self.state.setdefault(p, {}))

    @staticmethod
    def _init_state(p: Tensor, group: dict, state: dict):
        if not state:
            state["step"] = 0
            state_buffer(state, "sum", p, group["initial_accumulator_value"])

    def _update(self, p: Tensor, grad: Tensor, group: dict, state: dict):
        self._init_state(p, group, state)
        dt, s = p.dtype, state["sum"]

        def tail(commit):  # per eager step and per replay of a captured step (clgrad/capture)
            t = state["step"] + 1
            if commit:
                state["step"] = t
            clr = group["lr"] / (1 + (t - 1) * group["lr_decay"])
            return (scalar(dt, clr), scalar(dt, group["weight_decay"]),
                    scalar(dt, group["eps"]), _gsign(dt, group))
        launch_1d("optim.cl", "adagrad", defines_for(dt), p, (grad, s), _capture.dynamic(tail))
        bump_version(s)


class Adadelta(Optimizer):
    """Adadelta (M. D. Zeiler, "ADADELTA: An Adaptive Learning Rate Method",
    arXiv:1212.5701, 2012) with PyTorch's update:

        g = -g if maximize
        g = g + weight_decay * p
        sq = rho * sq + (1 - rho) * g^2
        delta = sqrt(acc + eps) / sqrt(sq + eps) * g
        acc = rho * acc + (1 - rho) * delta^2
        p = p - lr * delta

    Args:    params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None,
             maximize=False; foreach, capturable: accepted (one launch per parameter);
             differentiable must be False
    State:   ``step`` (int), ``square_avg`` (sq), ``acc_delta`` (acc)
    Kernels: kernels/optim.cl :: adadelta (one launch per parameter per step)
    Raises:  ValueError for a negative lr, eps or weight_decay, or rho outside [0, 1]
    """

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach=None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False):
        check_execution_flags("Adadelta", differentiable=differentiable)
        check_nonnegative("Adadelta", lr=lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Adadelta: expected rho in [0, 1], got {rho}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, capturable=capturable,
                                      maximize=bool(maximize), differentiable=differentiable))

    def _update(self, p: Tensor, grad: Tensor, group: dict, state: dict):
        sq, acc = state_buffer(state, "square_avg", p), state_buffer(state, "acc_delta", p)
        dt = p.dtype
        launch_1d("optim.cl", "adadelta", defines_for(dt), p, (grad, sq, acc),
                  _capture.dynamic(lambda commit: _count(state, commit) + tuple(
                      scalar(dt, group[k]) for k in ("lr", "rho", "eps", "weight_decay"))
                      + (_gsign(dt, group),)))
        bump_version(sq, acc)


class RMSprop(Optimizer):
    """RMSprop (G. Hinton, "Neural Networks for Machine Learning", lecture 6e; the centered
    form from A. Graves, "Generating Sequences With Recurrent Neural Networks",
    arXiv:1308.0850, 2013) with PyTorch's update:

        g = -g if maximize
        g = g + weight_decay * p
        sq = alpha * sq + (1 - alpha) * g^2
        centered:  ga = ga + (1 - alpha) * (g - ga);  avg = sqrt(sq - ga^2) + eps
        else:      avg = sqrt(sq) + eps
        momentum > 0:  buf = momentum * buf + g / avg;  p = p - lr * buf
        else:          p = p - lr * g / avg

    Args:    params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
             centered=False, capturable=False, foreach=None, maximize=False; foreach,
             capturable: accepted (one launch per parameter, as milesial's U-Net's
             RMSprop(..., foreach=True)); differentiable must be False
    State:   ``step`` (int), ``square_avg`` (sq), ``momentum_buffer`` (when momentum > 0),
             ``grad_avg`` (ga, when centered)
    Kernels: kernels/optim.cl :: rmsprop (CENTERED, MOMENTUM) (one launch per parameter per
             step)
    Raises:  ValueError for a negative lr, alpha, eps, weight_decay or momentum
    """

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach=None, maximize: bool = False,
                 differentiable: bool = False):
        check_execution_flags("RMSprop", differentiable=differentiable)
        check_nonnegative("RMSprop", lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                          momentum=momentum)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=bool(centered),
                                      capturable=capturable, foreach=foreach,
                                      maximize=bool(maximize), differentiable=differentiable))

    def _update(self, p: Tensor, grad: Tensor, group: dict, state: dict):
        dt, d = p.dtype, defines_for(p.dtype)
        bufs = (grad, state_buffer(state, "square_avg", p))
        if group["centered"]:
            d["CENTERED"] = 1
            bufs += (state_buffer(state, "grad_avg", p),)
        if group["momentum"] > 0:
            d["MOMENTUM"] = 1
            bufs += (state_buffer(state, "momentum_buffer", p),)
        launch_1d("optim.cl", "rmsprop", d, p, bufs,
                  _capture.dynamic(lambda commit: _count(state, commit) + tuple(
                      scalar(dt, group[k])
                      for k in ("lr", "alpha", "eps", "weight_decay", "momentum"))
                      + (_gsign(dt, group),)))
        bump_version(*bufs[1:])
