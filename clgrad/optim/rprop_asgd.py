"""Rprop (sign-based steps) and ASGD (averaged SGD): PyTorch's names, arguments, state keys
and single-tensor update equations."""
from __future__ import annotations

import numpy as np

from clgrad import capture as _capture
from clgrad.ops._util import bump_version, defines_for, launch_1d, scalar
from clgrad.optim.optimizer import (Optimizer, check_execution_flags, scalar_state,
                                    state_buffer)
from clgrad.tensor import Tensor

__all__ = ["Rprop", "ASGD"]


def _sign(group: dict) -> float:
    return -1.0 if group.get("maximize") else 1.0


def _count(state: dict, commit: bool) -> int:
    """This step's number; counted in ``state['step']`` when ``commit``."""
    t = state["step"] + 1
    if commit:
        state["step"] = t
    return t


class Rprop(Optimizer):
    """Rprop (M. Riedmiller and H. Braun, "A Direct Adaptive Method for Faster Backpropagation
    Learning: The RPROP Algorithm", ICNN 1993) with PyTorch's update, per element:

        g = -g if maximize
        f = etaplus if g * prev > 0, etaminus if < 0, else 1
        step = clamp(step * f, step_min, step_max)       (step starts at the group's lr)
        g = 0 where f == etaminus   (no move after a sign change; prev forgets it)
        p = p - sign(g) * step;  prev = g

    Args:    params, lr=1e-2, etas=(etaminus, etaplus)=(0.5, 1.2),
             step_sizes=(step_min, step_max)=(1e-6, 50), maximize=False; foreach,
             capturable: accepted (one launch per parameter); differentiable must be False
    State:   ``step`` (int), ``prev``, ``step_size``
    Kernels: kernels/optim.cl :: rprop (one launch per parameter per step)
    Raises:  ValueError (PyTorch's messages) for lr < 0 or etas not 0 < etaminus < 1 < etaplus
    Note:    a NaN gradient element gives sign(NaN) = 0 (PyTorch's torch.sign, and OpenCL's):
             that element does not move, and its prev becomes NaN.
    """

    def __init__(self, params, lr: float = 1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable: bool = False, foreach=None, maximize: bool = False,
                 differentiable: bool = False):
        check_execution_flags("Rprop", differentiable=differentiable)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(
            lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), foreach=foreach,
            maximize=bool(maximize), differentiable=differentiable, capturable=capturable))

    def _update(self, p: Tensor, grad: Tensor, group: dict, state: dict):
        if "step" not in state:
            state["step"] = 0
        prev = state_buffer(state, "prev", p)
        step = state_buffer(state, "step_size", p, group["lr"])
        dt = p.dtype

        def tail(commit):
            _count(state, commit)
            (etaminus, etaplus), (lo, hi) = group["etas"], group["step_sizes"]
            return tuple(scalar(dt, x) for x in (etaminus, etaplus, lo, hi, _sign(group)))
        launch_1d("optim.cl", "rprop", defines_for(dt), p, (grad, prev, step),
                  _capture.dynamic(tail))
        bump_version(prev, step)


class ASGD(Optimizer):
    """Averaged SGD (B. T. Polyak and A. B. Juditsky, "Acceleration of Stochastic
    Approximation by Averaging", SIAM J. Control Optim. 1992) with PyTorch's update, t counting
    this parameter's steps from 1 (eta and mu start at lr and 1):

        g = -g if maximize
        g = g + weight_decay * p
        p = p * (1 - lambd * eta);  p = p - eta * g
        ax = ax + (p - ax) * mu  if mu != 1, else ax = p
        eta = lr / (1 + lambd * lr * t)^alpha;  mu = 1 / max(1, t - t0)

    Args:    params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
             maximize=False; differentiable must be False; capturable: accepted
    State:   ``step`` (int), ``eta``, ``mu`` (floats, rounded as PyTorch's float32 0-d
             tensors), ``ax`` (the averaged parameter)
    Kernels: kernels/optim.cl :: asgd (one launch per parameter per step)
    Raises:  ValueError (PyTorch's messages) for lr or weight_decay < 0
    """

    _float_state = ("eta", "mu")

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach=None,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False):
        check_execution_flags("ASGD", differentiable=differentiable)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(
            lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
            foreach=foreach, maximize=bool(maximize), differentiable=differentiable,
            capturable=capturable))

    def _update(self, p: Tensor, grad: Tensor, group: dict, state: dict):
        if "step" not in state:
            state.update(step=0, eta=scalar_state(group["lr"]), mu=1.0)
        ax = state_buffer(state, "ax", p)
        dt = p.dtype

        def tail(commit):
            eta, mu = state["eta"], state["mu"]
            t = float(_count(state, commit))
            lr, lambd = group["lr"], group["lambd"]
            if commit:
                state["eta"] = scalar_state(lr / ((1 + lambd * lr * t) ** group["alpha"]))
                state["mu"] = scalar_state(1 / max(1, t - group["t0"]))
            return tuple(scalar(dt, x) for x in (
                1 - lambd * eta, eta, group["weight_decay"], mu, _sign(group))) + (
                np.int32(mu != 1),)
        launch_1d("optim.cl", "asgd", defines_for(dt), p, (grad, ax), _capture.dynamic(tail))
        bump_version(ax)
