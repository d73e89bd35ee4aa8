"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay."""
from __future__ import annotations

from operator import is_

import numpy as np

from clgrad import capture as _capture
from clgrad.ops._util import defines_of, empty, launch_1d_kept
from clgrad.ops.plan import key as plan_key
from clgrad.optim.optimizer import (MULTI, Optimizer, check_execution_flags, launch_multi,
                                    multi_ok, multi_default)
from clgrad.tensor import Tensor

__all__ = ["SGD"]


class SGD(Optimizer):
    """SGD with PyTorch's update (momentum in the form of Sutskever et al., "On the importance
    of initialization and momentum in deep learning", ICML 2013):

        g = -g if maximize
        d = g + weight_decay * p
        if momentum != 0:
            buf = d                                          (first step)
            buf = momentum * buf + (1 - dampening) * d       (later steps)
            d = d + momentum * buf if nesterov else buf
        p = p - lr * d

    Args:    params (tensors or param groups), lr=1e-3 (PyTorch >= 2.2), momentum=0,
             dampening=0, weight_decay=0, nesterov=False, maximize=False (ascend: the
             gradient is negated first);
             foreach=True / fused=True (and the default, None, on GPUs): up to 8 contiguous
             parameters per launch (kernels/optim.cl :: sgd_multi, sgd_momentum_multi; the
             same bits as foreach=False's one launch per parameter)
    State:   ``momentum_buffer`` per parameter (when momentum != 0)
    Kernels: kernels/optim.cl :: sgd, sgd_momentum (foreach=False, and parameters that are
             not contiguous: one launch per parameter per step)
    Raises:  ValueError for a negative lr, momentum or weight_decay, or nesterov without
             momentum or with dampening
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, maximize: bool = False, *,
                 foreach=None, differentiable: bool = False, fused=None):
        check_execution_flags("SGD", differentiable=differentiable)
        self._multi = multi_default(foreach, fused)
        if lr < 0.0:
            raise ValueError(f"SGD: expected lr >= 0, got {lr}")
        if momentum < 0.0:
            raise ValueError(f"SGD: expected momentum >= 0, got {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"SGD: expected weight_decay >= 0, got {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError(f"SGD: Nesterov momentum requires a momentum and zero dampening, "
                             f"got momentum={momentum}, dampening={dampening}")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=bool(maximize)))

    def _update_multi(self, todo, group):
        if group["momentum"] == 0:
            def tail_of(idx, dt):
                return lambda commit: self._scalars(group, dt)
            rest = []
            for i in launch_multi("sgd_multi", todo, tail_of):
                rest.append(todo[i])
            return rest
        state, slots, first, rest = self.state, [], set(), []
        for p, g in todo:
            st = state.get(p)
            if st is None:
                st = state[p] = {}
            buf = st.get("momentum_buffer")
            if buf is None:  # a first step: the buffer made for the multi-tensor kernel only
                if not multi_ok(p, g):
                    rest.append((p, g))
                    continue
                with _capture.paused():
                    buf = st["momentum_buffer"] = empty(p.shape, p.dtype, p._storage.device)
                first.add(len(slots))
            slots.append((p, g, buf))
        if not slots:
            return rest

        def tail_of(idx, dt):
            def tail(commit):
                flags = [np.int32(0)] * MULTI
                if first:
                    for k, i in enumerate(idx):
                        flags[k] = np.int32(i in first)
                    if commit:
                        first.difference_update(idx)
                lr, wd, gsign = self._scalars(group, dt)
                return (lr, dt.np.type(group["momentum"]), dt.np.type(group["dampening"]), wd,
                        np.int32(bool(group["nesterov"])), gsign, *flags)
            return tail
        for i in launch_multi("sgd_momentum_multi", slots, tail_of):
            rest.append(slots[i][:2])
        return rest

    @staticmethod
    def _scalars(group: dict, dt) -> tuple:
        """lr, weight decay and the gradient's sign (-1 to maximize) as kernel arguments."""
        num = dt.np.type  # scalar()'s answer for floating dtypes (every parameter's)
        return (num(group["lr"]), num(group["weight_decay"]),
                num(-1.0 if group.get("maximize") else 1.0))

    def _update(self, p: Tensor, grad: Tensor, group: dict, state: dict):
        # The scalars come through capture.dynamic: read from the group at every eager step
        # and every replay of a captured step (an LR scheduler's changes take effect).
        dt = p._storage.dtype
        d = defines_of(dt)  # (shared, unchanged: launch_1d copies what it adds to)
        num = dt.np.type  # scalar()'s answer for floating dtypes (every parameter's)

        if group["momentum"] == 0:
            launch_1d_kept(plan_key(_SGD, (p, grad)), "optim.cl", "sgd", d, p, (grad,),
                           _capture.dynamic(lambda c: (
                               num(group["lr"]), num(group["weight_decay"]),
                               num(-1.0 if group.get("maximize") else 1.0))))
            return
        buf = state.get("momentum_buffer")
        first = [buf is None]
        if first[0]:
            with _capture.paused():
                buf = state["momentum_buffer"] = empty(p.shape, p.dtype, p._storage.device)

        def tail(commit):
            f = first[0]
            if commit:
                first[0] = False
            # The group's values, re-read at every call, converted again only when one is
            # not the very object converted last time (identity: 0.0 == -0.0 to a dict, not
            # to the kernel) or is no plain number (a tensor's value may change in place).
            h = (group["lr"], group["momentum"], group["dampening"], group["weight_decay"],
                 group["nesterov"], group.get("maximize"))
            key = (id(group), dt)
            last = _ARGS.get(key)
            if last is None or not all(map(is_, h, last[0])) or \
                    not _PLAIN.issuperset(map(type, h)):
                last = (h, (num(h[0]), num(h[1]), num(h[2]), num(h[3]),
                            np.int32(bool(h[4])), num(-1.0 if h[5] else 1.0)))
                if len(_ARGS) >= _ARGS_MAX:
                    _ARGS.clear()
                _ARGS[key] = last
            args = last[1]
            return (*args[:5], _FIRST[f], args[5])
        # (the plan's key: the layouts; the dtype fixes the defines and the scalars' types)
        launch_1d_kept(plan_key(_SGD_MOMENTUM, (p, grad, buf)), "optim.cl", "sgd_momentum", d,
                       p, (grad, buf), _capture.dynamic(tail))
        buf._storage.version += 1  # (bump_version, inline)


_SGD, _SGD_MOMENTUM = ("optim.cl", "sgd"), ("optim.cl", "sgd_momentum")  # plan.key tags
_ARGS: dict = {}  # (id of a group, dtype) -> (its values, sgd_momentum's scalars from them but
_ARGS_MAX = 256  # the first-step flag); cleared past _ARGS_MAX entries
_PLAIN = frozenset({float, int, bool})  # hyperparameter types whose value the key holds
_FIRST = (np.int32(0), np.int32(1))

