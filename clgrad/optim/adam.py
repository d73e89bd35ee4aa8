"""Adam (L2 penalty added to the gradient) and AdamW (decoupled weight decay)."""
from __future__ import annotations

import math

import numpy as np

from clgrad import capture as _capture
from clgrad.creation import zeros
from clgrad.ops._util import bump_version, defines_for, launch_1d_kept
from clgrad.ops.plan import key as plan_key
from clgrad.optim.optimizer import (Optimizer, check_execution_flags, launch_multi,
                                    multi_default, state_buffer)
from clgrad.tensor import Tensor

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam (D. P. Kingma and J. Ba, "Adam: A Method for Stochastic Optimization", ICLR 2015)
    with PyTorch's update, t counting this parameter's steps from 1:

        g = -g if maximize
        g = g + weight_decay * p                     (L2 penalty in the gradient)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g^2
        v = vmax = maximum(vmax, v) if amsgrad       (S. J. Reddi, S. Kale and S. Kumar, "On
                                                      the Convergence of Adam and Beyond",
                                                      ICLR 2018; NaN propagates)
        p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

    Args:    params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False,
             maximize=False; foreach=True / fused=True (and the default, None, on GPUs): up
             to 8 contiguous parameters per launch (kernels/optim.cl :: adam_multi, not with
             amsgrad; the same bits as foreach=False's one launch per parameter);
             capturable: accepted, no effect (every step can be captured: clgrad/capture/
             re-reads lr and the step count per replay); the four flags join ``defaults``
             and every param group, as PyTorch's (``optimizer.defaults["fused"]``);
             decoupled_weight_decay=True: AdamW's update (PyTorch 2.13's flag; a param
             group's own value counts, so PyTorch's state dicts load with it)
    State:   ``step`` (int), ``exp_avg`` (m), ``exp_avg_sq`` (v), with amsgrad
             ``max_exp_avg_sq`` (vmax), per parameter
    Kernels: kernels/optim.cl :: adam (AMSGRAD) (one launch per parameter per step; the bias
             corrections are computed on the host from the step count, no read-back)
    Raises:  ValueError for lr < 0, eps < 0, a beta outside [0, 1) or weight_decay < 0
    """

    _decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, maximize: bool = False, *,
                 foreach=None, capturable: bool = False, differentiable: bool = False,
                 fused=None, decoupled_weight_decay: bool = False):
        name = type(self).__name__
        check_execution_flags(name, differentiable=differentiable)
        self._multi = multi_default(foreach, fused)
        if lr < 0.0:
            raise ValueError(f"{name}: expected lr >= 0, got {lr}")
        if eps < 0.0:
            raise ValueError(f"{name}: expected eps >= 0, got {eps}")
        betas = tuple(betas)
        if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"{name}: expected betas (beta1, beta2) in [0, 1), got {betas}")
        if weight_decay < 0.0:
            raise ValueError(f"{name}: expected weight_decay >= 0, got {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=bool(amsgrad), maximize=bool(maximize),
                                      foreach=foreach, capturable=capturable,
                                      differentiable=differentiable, fused=fused,
                                      decoupled_weight_decay=bool(decoupled_weight_decay)))

    def _update_multi(self, todo, group):
        if group.get("amsgrad"):
            return todo
        slots, states = [], []
        for p, g in todo:
            state = self.state.get(p)
            if not state:
                state = self.state[p] = {}
                self._init_state(p, state)
            slots.append((p, g, state["exp_avg"], state["exp_avg_sq"]))
            states.append(state)
        step = states[0]["step"]
        for state in states:
            if state["step"] != step:  # parameters that skipped steps: one launch per count
                return self._update_multi_steps(slots, states, group)

        def tail_of(idx, dt):  # as _update's, for all slots of a launch at once
            def tail(commit):
                t = states[idx[0]]["step"] + 1
                if commit:
                    for i in idx:
                        states[i]["step"] = t
                return self._scalars(group, dt, t)
            return tail
        rest = []
        for i in launch_multi("adam_multi", slots, tail_of):
            rest.append(todo[i])
        return rest

    def _update_multi_steps(self, slots, states, group):
        """_update_multi of parameters whose step counts differ: launch_multi per count."""
        by_step: dict = {}
        for i, state in enumerate(states):
            by_step.setdefault(state["step"], []).append(i)
        rest = []
        for idx in by_step.values():
            sts = [states[i] for i in idx]

            def tail_of(j, dt, sts=sts):
                def tail(commit):
                    t = sts[j[0]]["step"] + 1
                    if commit:
                        for i in j:
                            sts[i]["step"] = t
                    return self._scalars(group, dt, t)
                return tail
            sub = [slots[i] for i in idx]
            rest += [sub[i][:2] for i in launch_multi("adam_multi", sub, tail_of)]
        return rest

    def _scalars(self, group: dict, dt, t: int) -> tuple:
        """The scalar kernel arguments of step ``t`` (adam and adam_multi in optim.cl): lr,
        betas, eps, weight decay, lr / (1 - beta1^t), sqrt(1 - beta2^t), decoupled, sign."""
        beta1, beta2 = group["betas"]
        lr = group["lr"]
        num = dt.np.type  # scalar()'s answer for floating dtypes (every parameter's)
        return (num(lr), num(beta1), num(beta2), num(group["eps"]), num(group["weight_decay"]),
                num(lr / (1 - beta1 ** t)), num(math.sqrt(1 - beta2 ** t)),
                np.int32(group.get("decoupled_weight_decay", self._decoupled)),
                num(-1.0 if group.get("maximize") else 1.0))

    @staticmethod
    def _init_state(p, state):
        if not state:
            with _capture.paused():  # made eagerly, never part of a captured step's replay
                state["step"] = 0
                state["exp_avg"] = zeros(p.shape, dtype=p.dtype, device=p._storage.device)
                state["exp_avg_sq"] = zeros(p.shape, dtype=p.dtype, device=p._storage.device)

    def _update(self, p: Tensor, grad: Tensor, group: dict, state: dict):
        self._init_state(p, state)
        m, v = state["exp_avg"], state["exp_avg_sq"]
        dt, d, bufs = p.dtype, defines_for(p.dtype), (grad, m, v)
        if group.get("amsgrad"):
            d["AMSGRAD"] = 1
            bufs += (state_buffer(state, "max_exp_avg_sq", p),)

        def tail(commit):  # per eager step and per replay of a captured step (clgrad/capture)
            t = state["step"] + 1
            if commit:
                state["step"] = t
            return self._scalars(group, dt, t)
        # (the plan's key: the layouts, amsgrad's buffer among them; the dtype fixes the
        # defines and the scalars' types)
        launch_1d_kept(plan_key(_ADAM, (p, *bufs)), "optim.cl", "adam", d, p, bufs,
                       _capture.dynamic(tail))
        bump_version(*bufs[1:])


_ADAM = ("optim.cl", "adam")  # _update's plan.key tag


class AdamW(Adam):
    """AdamW (I. Loshchilov and F. Hutter, "Decoupled Weight Decay Regularization", ICLR 2019):
    Adam without the L2 term, with the decay applied to the weights directly first:

        p = p * (1 - lr * weight_decay)
        then Adam's m, v and p updates with the raw gradient g

    Args:    params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False,
             maximize=False
    """

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, maximize: bool = False, *,
                 foreach=None, capturable: bool = False, differentiable: bool = False,
                 fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, maximize=maximize, foreach=foreach, fused=fused,
                         capturable=capturable, differentiable=differentiable,
                         decoupled_weight_decay=True)
