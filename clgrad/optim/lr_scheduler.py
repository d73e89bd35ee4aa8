"""Learning-rate schedules with PyTorch's names, arguments and semantics (torch.optim.lr_scheduler).

Each ``step()`` (once per epoch, or per batch for OneCycleLR) writes every group's ``lr``.
The chainable schedules (StepLR, MultiStepLR, ExponentialLR, MultiplicativeLR, LinearLR,
ConstantLR, PolynomialLR, CosineAnnealingLR) compute the new lr from the group's current lr,
as PyTorch does, so several of them compose (ChainedScheduler; SequentialLR hands over at its
milestones). ``step(epoch)`` (deprecated in PyTorch, which warns; so does clgrad) jumps to the
closed form of the epoch instead. LambdaLR, OneCycleLR and CosineAnnealingWarmRestarts compute
from each group's ``initial_lr`` and are not chainable (as in PyTorch).

Deliberate differences: PyTorch warns when ``scheduler.step()`` runs before the first
``optimizer.step()``; clgrad does not. State dicts hold numbers, strings, lists and dicts with
str keys only, so they save with ``clgrad.save`` (MultiStepLR's milestones: a sorted list).
"""
from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter

from clgrad.optim.optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
           "LinearLR", "ExponentialLR", "PolynomialLR", "CosineAnnealingLR", "SequentialLR",
           "ChainedScheduler", "ReduceLROnPlateau", "CosineAnnealingWarmRestarts", "OneCycleLR"]


def _check_optimizer(name, optimizer):
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{name}: expected an Optimizer, got {type(optimizer).__name__}")


def _positive_int(name, what, v):
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ValueError(f"{name}: expected {what} to be a positive int, got {v!r}")


def _in_range(name, what, v, lo, hi, lo_open=False):
    if not ((lo < v) if lo_open else (lo <= v)) or not v <= hi:
        raise ValueError(f"{name}: expected {what} in {'(' if lo_open else '['}{lo}, {hi}], "
                         f"got {v}")


def _per_group(name, what, optimizer, value) -> list:
    """``value`` for every group: a list/tuple (one per group) or one value for all."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name}: expected {n} values for {what}, got {len(value)}")
        return list(value)
    return [value] * n


class LRScheduler:
    """Base class: ``get_lr()`` gives each group's next lr (chainable schedules read the
    group's current ``lr``; the others its ``initial_lr``, kept in ``base_lrs``).

    Construction performs the first ``step()`` (``last_epoch`` becomes 0), as PyTorch does.
    ``last_epoch=-1`` starts fresh; any other value resumes and needs ``initial_lr`` in every
    group (set by the first scheduler, kept in the optimizer's state dict).
    Raises:  TypeError for a non-Optimizer; KeyError when resuming without ``initial_lr``
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        _check_optimizer(type(self).__name__, optimizer)
        self.optimizer = optimizer
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"{type(self).__name__}: param 'initial_lr' is not specified in "
                               f"param_groups[{i}] when resuming an optimizer")
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list:
        """The learning rate of each group at ``self.last_epoch``."""
        raise NotImplementedError

    def _lrs(self) -> list:
        return [g["lr"] for g in self.optimizer.param_groups]

    def step(self, epoch=None):
        """Advance one epoch and write the new learning rates into the optimizer.

        ``epoch`` (deprecated, as in PyTorch): jump to that epoch's closed-form lr.
        """
        self._step_count += 1
        if epoch is not None:
            warnings.warn("The epoch parameter in `scheduler.step()` was not necessary and is "
                          "being deprecated where possible (PyTorch)", UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        if epoch is None:
            self.last_epoch += 1
            lrs = self.get_lr()
        else:
            self.last_epoch = epoch
            lrs = self._closed_form() if hasattr(self, "_closed_form") else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = self._lrs()

    def get_last_lr(self) -> list:
        """The learning rates set by the last ``step()``."""
        return list(self._last_lr)

    def state_dict(self) -> dict:
        """Everything but the optimizer (numbers and lists: saves with ``clgrad.save``)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict):
        """Restore a state saved by ``state_dict``."""
        self.__dict__.update({k: list(v) if isinstance(v, tuple) else v
                              for k, v in state_dict.items()})

    def _state_with(self, key: str, items: list) -> dict:
        """The state dict with the entry ``key`` replaced by ``items`` (a savable list)."""
        out = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", key)}
        out[key] = items
        return out

    def _load_with(self, state_dict: dict, key: str) -> list:
        """Restore all but ``key``; return its saved list (the caller restores those)."""
        state_dict = dict(state_dict)
        items = state_dict.pop(key)
        LRScheduler.load_state_dict(self, state_dict)
        return items


_LRScheduler = LRScheduler  # PyTorch's old name, still used by custom schedulers


class _LambdaState:
    """State dicts of schedules holding functions: a plain function is not saved (None); a
    callable object's ``__dict__`` is (PyTorch's rule)."""

    def _set_lambdas(self, optimizer, lr_lambda):
        _check_optimizer(type(self).__name__, optimizer)
        self.lr_lambdas = _per_group(type(self).__name__, "lr_lambda", optimizer, lr_lambda)
        for f in self.lr_lambdas:
            if not callable(f):
                raise TypeError(f"{type(self).__name__}: expected lr_lambda to be callable, "
                                f"got {type(f).__name__}")

    def state_dict(self) -> dict:
        """The scheduler's state; each lr_lambda saved as None (a plain function) or a copy of its
        ``__dict__`` (a callable object), PyTorch's rule.
        """
        return self._state_with("lr_lambdas", [
            None if isinstance(f, types.FunctionType) else dict(f.__dict__)
            for f in self.lr_lambdas])

    def load_state_dict(self, state_dict: dict):
        """Restore a state from ``state_dict``; saved callable-object dicts update the current
        lr_lambdas' ``__dict__`` (the functions themselves are not restored, as in PyTorch).
        """
        for f, saved in zip(self.lr_lambdas, self._load_with(state_dict, "lr_lambdas")):
            if saved is not None:
                f.__dict__.update(saved)


class LambdaLR(_LambdaState, LRScheduler):
    """lr = initial_lr * lr_lambda(epoch); ``lr_lambda`` one function or one per group."""

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1):
        self._set_lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """[initial_lr * lr_lambda(last_epoch)] per group (not chainable)."""
        return [base * f(self.last_epoch) for f, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaState, LRScheduler):
    """lr = lr * lr_lambda(epoch) at every step after the first (chainable)."""

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1):
        self._set_lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """[lr * lr_lambda(last_epoch)] per group; the current lr unchanged at construction."""
        if self._is_initial:
            return self._lrs()
        return [lr * f(self.last_epoch) for f, lr in zip(self.lr_lambdas, self._lrs())]


class StepLR(LRScheduler):
    """lr = initial_lr * gamma ** (epoch // step_size) (chainable: lr *= gamma every
    step_size epochs)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1):
        _positive_int("StepLR", "step_size", step_size)
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The current lr, times gamma when last_epoch is a positive multiple of step_size."""
        if self.last_epoch == 0 or self.last_epoch % self.step_size:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]

    def _closed_form(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size)
                for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """lr = initial_lr * gamma ** (number of milestones <= epoch); a milestone listed twice
    counts twice (chainable: lr *= gamma ** count at each milestone)."""

    def __init__(self, optimizer: Optimizer, milestones, gamma: float = 0.1,
                 last_epoch: int = -1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The current lr, times gamma ** (times last_epoch is listed in milestones)."""
        k = self.milestones.get(self.last_epoch, 0)
        return self._lrs() if not k else [lr * self.gamma ** k for lr in self._lrs()]

    def _closed_form(self):
        k = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma ** k for base in self.base_lrs]

    def state_dict(self) -> dict:
        """The scheduler's state, milestones as a sorted list (a Counter's int keys do not save)."""
        out = super().state_dict()
        out["milestones"] = sorted(self.milestones.elements())  # int keys do not save
        return out

    def load_state_dict(self, state_dict: dict):
        """Restore a state from ``state_dict``; milestones (a list or a dict) become a Counter."""
        super().load_state_dict(state_dict)
        m = self.milestones
        self.milestones = Counter(m) if isinstance(m, dict) else Counter(list(m))


class ConstantLR(LRScheduler):
    """lr = initial_lr * factor until epoch total_iters, then initial_lr."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1):
        _in_range("ConstantLR", "factor", factor, 0.0, 1.0)
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The current lr times factor at epoch 0, divided by factor at epoch total_iters, else
        unchanged (chainable).
        """
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._lrs()]
        if self.last_epoch != self.total_iters:
            return self._lrs()
        return [lr * (1.0 / self.factor) for lr in self._lrs()]

    def _closed_form(self):
        f = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [base * f for base in self.base_lrs]


class LinearLR(LRScheduler):
    """lr = initial_lr * (start_factor + (end_factor - start_factor) * min(epoch, total_iters)
    / total_iters)."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1):
        _in_range("LinearLR", "start_factor", start_factor, 0.0, 1.0, lo_open=True)
        _in_range("LinearLR", "end_factor", end_factor, 0.0, 1.0)
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """lr * start_factor at epoch 0, then the recursive step towards end_factor until
        total_iters (PyTorch's chainable form); the current lr afterwards.
        """
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._lrs()
        d = self.end_factor - self.start_factor
        f = 1.0 + d / (self.total_iters * self.start_factor + (self.last_epoch - 1) * d)
        return [lr * f for lr in self._lrs()]

    def _closed_form(self):
        f = self.start_factor + (self.end_factor - self.start_factor) * \
            min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * f for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr = initial_lr * gamma ** epoch (chainable: lr *= gamma every step)."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The current lr times gamma (unchanged at construction)."""
        return self._lrs() if self._is_initial else [lr * self.gamma for lr in self._lrs()]

    def _closed_form(self):
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """lr = initial_lr * (1 - min(epoch, total_iters) / total_iters) ** power."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1):
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The current lr times ((1 - e/n) / (1 - (e-1)/n)) ** power, e = last_epoch,
        n = total_iters (PyTorch's chainable form); unchanged past total_iters.
        """
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._lrs()
        e, n = self.last_epoch, self.total_iters
        f = ((1.0 - e / n) / (1.0 - (e - 1) / n)) ** self.power
        return [lr * f for lr in self._lrs()]

    def _closed_form(self):
        f = (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
        return [base * f for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from initial_lr to eta_min over T_max epochs (I. Loshchilov and
    F. Hutter, "SGDR: Stochastic Gradient Descent with Warm Restarts", ICLR 2017, without the
    restarts): lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2,
    computed in PyTorch's recursive form (so it chains); past T_max it rises again.
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1):
        _positive_int("CosineAnnealingLR", "T_max", T_max)
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The next lr of the cosine curve in PyTorch's recursive (chainable) form (the current
        lr at construction).
        """
        e, n, lo = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._lrs()
        if self._step_count == 1 and e > 0:
            return self._closed_form()
        if (e - 1 - n) % (2 * n) == 0:
            return [lr + (base - lo) * (1 - math.cos(math.pi / n)) / 2
                    for base, lr in zip(self.base_lrs, self._lrs())]
        r = (1 + math.cos(math.pi * e / n)) / (1 + math.cos(math.pi * (e - 1) / n))
        return [r * (lr - lo) + lo for lr in self._lrs()]

    def _closed_form(self):
        c = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base - self.eta_min) * c for base in self.base_lrs]


from clgrad.optim.schedules import (ChainedScheduler, CosineAnnealingWarmRestarts,  # noqa: E402
                                    OneCycleLR, ReduceLROnPlateau, SequentialLR)
