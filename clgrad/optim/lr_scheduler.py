"""Learning-rate schedules with PyTorch's names, arguments and semantics (torch.optim.lr_scheduler).

Each ``step()`` (once per epoch, or per batch for OneCycleLR) writes every group's ``lr``.
The chainable schedules (StepLR, MultiStepLR, ExponentialLR, MultiplicativeLR, LinearLR,
ConstantLR, PolynomialLR, CosineAnnealingLR) compute the new lr from the group's current lr,
as PyTorch does, so several of them compose (ChainedScheduler; SequentialLR hands over at its
milestones). ``step(epoch)`` (deprecated in PyTorch, which warns; so does clgrad) jumps to the
closed form of the epoch instead. LambdaLR, OneCycleLR and CosineAnnealingWarmRestarts compute
from each group's ``initial_lr`` and are not chainable (as in PyTorch).

Deliberate differences: PyTorch warns when ``scheduler.step()`` runs before the first
``optimizer.step()``; clgrad does not. State dicts hold numbers, strings, lists and dicts
(MultiStepLR's milestones: a plain dict {milestone: count} in milestone order, where PyTorch
keeps a Counter), so they save with ``clgrad.save`` (both formats) and load into PyTorch's
schedulers, and PyTorch's state dicts load into clgrad's.
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
           "ChainedScheduler", "ReduceLROnPlateau", "CosineAnnealingWarmRestarts", "OneCycleLR",
           "CyclicLR"]


def _check_optimizer(name, optimizer):
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{name}: expected an Optimizer, got {type(optimizer).__name__}")


def _positive_int(name, what, v, whole_float=False):
    """``v`` must be an int >= 1; ``whole_float``: or a float of such a value (PyTorch's StepLR
    and CosineAnnealingLR check nothing; its tutorial passes ``StepLR(optimizer, 1.0)``)."""
    if whole_float and isinstance(v, float) and v.is_integer() and v >= 1:
        return
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
        _positive_int("StepLR", "step_size", step_size, whole_float=True)
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
        """The scheduler's state, milestones a Counter as PyTorch's (so torch's MultiStepLR
        loads it; ``clgrad.save`` writes it in PyTorch's format, not in safetensors)."""
        out = super().state_dict()
        out["milestones"] = Counter(self.milestones)  # a copy: the state does not alias self
        return out

    def load_state_dict(self, state_dict: dict):
        """Restore a state from ``state_dict``; milestones (a Counter, a dict or a list, as
        older clgrad versions saved) become a Counter."""
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
        _positive_int("CosineAnnealingLR", "T_max", T_max, whole_float=True)
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


# -- schedules built from other schedules, and those that are not chainable -------------------
def _check_children(name, optimizer, schedulers):
    if len(schedulers) < 1:
        raise ValueError(f"{name}: expected at least one scheduler, got none")
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{name}: expected schedulers with an optimizer, got "
                            f"{type(s).__name__} at index {i}")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(f"{name}: ReduceLROnPlateau (index {i}) is not supported: its "
                             f"step needs the metric")
        if s.optimizer is not optimizer:
            raise ValueError(f"{name}: expected all schedulers to belong to the same "
                             f"optimizer, got a different one at index {i}")


class _Composite(LRScheduler):
    """State dicts that hold the children's state dicts in ``_schedulers``."""

    def state_dict(self) -> dict:
        """The state, with each child scheduler's state dict in ``_schedulers`` (a list)."""
        return self._state_with("_schedulers", [s.state_dict() for s in self._schedulers])

    def load_state_dict(self, state_dict: dict):
        """Restore the state and each child scheduler's state from ``state_dict``."""
        for s, saved in zip(self._schedulers, self._load_with(state_dict, "_schedulers")):
            s.load_state_dict(saved)


class SequentialLR(_Composite):
    """Run ``schedulers[i]`` between ``milestones[i-1]`` and ``milestones[i]``; at a milestone
    the next scheduler starts from its epoch 0 (its closed form), as PyTorch does.

    Raises:  ValueError unless len(milestones) == len(schedulers) - 1 and every scheduler
             belongs to ``optimizer``
    """

    def __init__(self, optimizer: Optimizer, schedulers, milestones, last_epoch: int = -1):
        _check_children("SequentialLR", optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: expected {len(schedulers) - 1} milestones for "
                             f"{len(schedulers)} schedulers, got {len(milestones)}")
        self._schedulers, self._milestones = list(schedulers), list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self._undo(self)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def _undo(self, s):
        """Take back the initial step of every (nested) scheduler."""
        if hasattr(s, "_schedulers"):
            for child in s._schedulers:
                self._undo(child)
        elif hasattr(s, "last_epoch"):
            s.last_epoch -= 1

    def step(self):
        """Advance one epoch: the scheduler for that epoch steps, or starts at its epoch 0 when the
        epoch is a milestone. Takes no epoch argument (as PyTorch's SequentialLR).
        """
        self.last_epoch += 1
        i = bisect_right(self._milestones, self.last_epoch)
        s = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            s._update_lr(0)
        else:
            s.step()
        self._last_lr = s.get_last_lr()


class ChainedScheduler(_Composite):
    """Step every scheduler in turn at each ``step()``: chainable schedules multiply."""

    def __init__(self, schedulers, optimizer: Optimizer | None = None):
        schedulers = list(schedulers)
        optimizer = optimizer or (schedulers[0].optimizer if schedulers else None)
        _check_children("ChainedScheduler", optimizer, schedulers)
        self._schedulers, self.optimizer = schedulers, optimizer
        self._last_lr = self._lrs()

    def step(self):
        """Step every child scheduler in order; the last lrs are the groups' lrs afterwards."""
        for s in self._schedulers:
            s.step()
        self._last_lr = self._lrs()


class ReduceLROnPlateau(LRScheduler):
    """Multiply every group's lr by ``factor`` once the metric passed to ``step(metric)`` has
    not improved for more than ``patience`` epochs (PyTorch's rule):

        improved (mode 'min', 'rel'):  metric < best * (1 - threshold)
                 (mode 'min', 'abs'):  metric < best - threshold
                 (mode 'max', 'rel'):  metric > best * (1 + threshold)
                 (mode 'max', 'abs'):  metric > best + threshold
        after a reduction, ``cooldown`` epochs count no bad epochs;
        new lr = max(lr * factor, min_lr), applied only when it changes lr by more than eps

    Args:    optimizer, mode='min', factor=0.1, patience=10, threshold=1e-4,
             threshold_mode='rel', cooldown=0, min_lr=0 (one value or one per group), eps=1e-8
    Raises:  ValueError for factor >= 1, an unknown mode or threshold_mode, or a min_lr list
             of the wrong length
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr=0, eps: float = 1e-8):
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: expected factor < 1.0, got {factor}")
        _check_optimizer("ReduceLROnPlateau", optimizer)
        self.factor, self.optimizer = factor, optimizer
        self.default_min_lr = None if isinstance(min_lr, (list, tuple)) else min_lr
        self.min_lrs = _per_group("ReduceLROnPlateau", "min_lr", optimizer, min_lr)
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.last_epoch = 0
        self._last_lr = self._lrs()
        self._init_is_better(mode, threshold, threshold_mode)
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: expected mode 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: expected threshold_mode 'rel' or 'abs', got "
                             f"{threshold_mode!r}")
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.mode_worse = math.inf if mode == "min" else -math.inf

    @property
    def in_cooldown(self) -> bool:
        """True while the cooldown after a reduction lasts."""
        return self.cooldown_counter > 0

    def is_better(self, a: float, best: float) -> bool:
        """Whether metric ``a`` improves on ``best`` under mode and threshold."""
        rel, t = self.threshold_mode == "rel", self.threshold
        if self.mode == "min":
            return a < best * (1.0 - t) if rel else a < best - t
        return a > best * (t + 1.0) if rel else a > best + t

    def step(self, metrics, epoch=None):
        """Record this epoch's metric (a number or a one-element tensor); maybe reduce."""
        current = float(metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self.is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = self._lrs()

    def _reduce_lr(self):
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(f"ReduceLROnPlateau: the optimizer has {len(groups)} param "
                                   f"groups, min_lrs has {len(self.min_lrs)}; set min_lrs")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, lo in zip(groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, lo)
            if old - new > self.eps:
                group["lr"] = new

    def load_state_dict(self, state_dict: dict):
        """Restore a state from ``state_dict`` and rebuild the mode/threshold comparison."""
        super().load_state_dict(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (I. Loshchilov and F. Hutter, "SGDR: Stochastic Gradient Descent with Warm
    Restarts", ICLR 2017): lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi T_cur / T_i)) / 2,
    T_cur counting epochs since the last restart, T_i = T_0 * T_mult ** (restarts so far).

    ``step()`` advances one epoch; ``step(epoch)`` accepts a fractional epoch
    (``epoch + i / iters`` per batch), as PyTorch's.
    Raises:  ValueError for T_0 not a positive int, T_mult not an int >= 1, a non-number
             eta_min, or a negative epoch
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1):
        _positive_int("CosineAnnealingWarmRestarts", "T_0", T_0)
        _positive_int("CosineAnnealingWarmRestarts", "T_mult", T_mult)
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"CosineAnnealingWarmRestarts: expected a number eta_min, got "
                             f"{type(eta_min).__name__}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """[eta_min + (initial_lr - eta_min) (1 + cos(pi T_cur / T_i)) / 2] per group."""
        c = (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
        return [self.eta_min + (base - self.eta_min) * c for base in self.base_lrs]

    def step(self, epoch=None):
        """Advance one epoch (restarting when T_cur reaches T_i), or go to ``epoch`` (may be
        fractional, e.g. ``epoch + i / iters`` per batch) and write every group's lr.

        Raises:  ValueError for a negative epoch. Unlike the other schedules, ``step(epoch)`` does
                 not warn: fractional epochs are this schedule's documented use.
        """
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur %= self.T_i
                self.T_i *= self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"CosineAnnealingWarmRestarts: expected a non-negative "
                                 f"epoch, got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i, self.T_cur = self.T_0, epoch
        self.last_epoch = math.floor(epoch)
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = self._lrs()


class OneCycleLR(LRScheduler):
    """The 1cycle policy (L. N. Smith and N. Topin, "Super-Convergence: Very Fast Training of
    Neural Networks Using Large Learning Rates", arXiv:1708.07120), stepped once per batch:
    lr rises from max_lr / div_factor to max_lr over pct_start of total_steps, then falls to
    max_lr / div_factor / final_div_factor (three_phase: back to the start first, then down);
    momentum (SGD's ``momentum`` or Adam's beta1) moves inversely between max_momentum and
    base_momentum when ``cycle_momentum``. Anneal: 'cos' end + (start - end)(1 + cos(pi t))/2,
    'linear' start + (end - start) t, t the fraction of the phase.

    Args:    optimizer, max_lr (one or one per group), total_steps or (epochs and
             steps_per_epoch), pct_start=0.3, anneal_strategy='cos', cycle_momentum=True,
             base_momentum=0.85, max_momentum=0.95, div_factor=25.0, final_div_factor=1e4,
             three_phase=False, last_epoch=-1
    Raises:  ValueError for missing/invalid step counts, pct_start outside [0, 1], an unknown
             anneal_strategy, cycle_momentum with an optimizer without momentum or betas, or
             stepping past total_steps
    """

    def __init__(self, optimizer: Optimizer, max_lr, total_steps=None, epochs=None,
                 steps_per_epoch=None, pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1):
        name = "OneCycleLR"
        _check_optimizer(name, optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            _positive_int(name, "total_steps", total_steps)
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            _positive_int(name, "epochs", epochs)
            _positive_int(name, "steps_per_epoch", steps_per_epoch)
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError(f"{name}: expected total_steps or (epochs and steps_per_epoch), "
                             f"got neither")
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"{name}: expected a float pct_start in [0, 1], got {pct_start!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"{name}: expected anneal_strategy 'cos' or 'linear', got "
                             f"{anneal_strategy!r}")
        up = float(pct_start * self.total_steps) - 1
        last = self.total_steps - 1
        phases = ([(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                   (float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr",
                    "base_momentum", "max_momentum"),
                   (last, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
                  if three_phase else
                  [(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                   (last, "max_lr", "min_lr", "base_momentum", "max_momentum")])
        keys = ("end_step", "start_lr", "end_lr", "start_momentum", "end_momentum")
        self._schedule_phases = [dict(zip(keys, ph)) for ph in phases]
        self._anneal_func_type = anneal_strategy
        groups = optimizer.param_groups
        if last_epoch == -1:
            for m, group in zip(_per_group(name, "max_lr", optimizer, max_lr), groups):
                group["initial_lr"] = m / div_factor
                group["max_lr"] = m
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(f"{name}: optimizer must support momentum or beta1 with "
                                 f"`cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            if last_epoch == -1:
                for hi, lo, group in zip(
                        _per_group(name, "max_momentum", optimizer, max_momentum),
                        _per_group(name, "base_momentum", optimizer, base_momentum), groups):
                    self._set_momentum(group, hi)
                    group["max_momentum"], group["base_momentum"] = hi, lo
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group, m):
        if self.use_beta1:
            group["betas"] = (m, *group["betas"][1:])
        else:
            group["momentum"] = m

    def _anneal(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        """Each group's lr at step last_epoch of the 1cycle policy; with ``cycle_momentum`` it also
        writes each group's momentum (or beta1), as PyTorch's.

        Raises:  ValueError when stepped more than total_steps times
        """
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: tried to step {step} times; the specified number "
                             f"of total steps is {self.total_steps}")
        lrs, phases = [], self._schedule_phases
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, ph in enumerate(phases):
                if step <= ph["end_step"] or i == len(phases) - 1:
                    pct = (step - start) / (ph["end_step"] - start)
                    lrs.append(self._anneal(group[ph["start_lr"]], group[ph["end_lr"]], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(
                            group[ph["start_momentum"]], group[ph["end_momentum"]], pct))
                    break
                start = ph["end_step"]
        return lrs


class CyclicLR(LRScheduler):
    """Cyclical learning rates (L. N. Smith, "Cyclical Learning Rates for Training Neural
    Networks", WACV 2017), stepped once per batch, PyTorch's form: with n = last_epoch,
    cycle = floor(1 + n / (up + down)), x = 1 + n / (up + down) - cycle and r = up / (up + down),

        s = x / r if x <= r else (x - 1) / (r - 1)         (0 -> 1 -> 0 over a cycle)
        lr = base_lr + (max_lr - base_lr) * s * scale(cycle or n)
        momentum = max_momentum - (max_momentum - base_momentum) * s * scale(cycle or n)

    scale: 'triangular' 1; 'triangular2' 1 / 2^(cycle - 1); 'exp_range' gamma^n (of n);
    a custom ``scale_fn`` of the cycle (scale_mode='cycle') or of n ('iterations').
    With ``cycle_momentum`` the groups' ``momentum`` (or Adam's beta1) moves inversely.

    Args:    optimizer, base_lr, max_lr (one or one per group), step_size_up=2000,
             step_size_down=None (= up), mode='triangular', gamma=1.0, scale_fn=None,
             scale_mode='cycle', cycle_momentum=True, base_momentum=0.8, max_momentum=0.9,
             last_epoch=-1
    Raises:  ValueError for an unknown mode without scale_fn, or cycle_momentum with an
             optimizer that has neither momentum nor betas (PyTorch's messages)
    Note:    ``state_dict`` leaves out a custom scale_fn (a function does not save); pass it
             to the constructor again before ``load_state_dict``.
    """

    def __init__(self, optimizer: Optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down=None, mode: str = "triangular", gamma: float = 1.0,
                 scale_fn=None, scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum=0.8, max_momentum=0.9, last_epoch: int = -1):
        name = "CyclicLR"
        _check_optimizer(name, optimizer)
        self.optimizer = optimizer
        base_lrs = _per_group(name, "base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _per_group(name, "max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        if scale_fn is None:
            self.scale_mode = "iterations" if mode == "exp_range" else "cycle"
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with "
                                 "`cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _per_group(name, "base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group(name, "max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for hi, lo, group in zip(self.max_momentums, self.base_momentums,
                                         optimizer.param_groups):
                    self._set_momentum(group, hi)
                    group["max_momentum"], group["base_momentum"] = hi, lo
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    _set_momentum = OneCycleLR._set_momentum

    def scale_fn(self, x) -> float:
        """The scaling policy at x (the cycle number or the iteration, per scale_mode)."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def get_lr(self):
        """Each group's lr at batch last_epoch; with ``cycle_momentum`` it also writes each
        group's momentum (or beta1), as PyTorch's."""
        n = self.last_epoch
        cycle = math.floor(1 + n / self.total_size)
        x = 1.0 + n / self.total_size - cycle
        s = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else n)
        lrs = [lo + (hi - lo) * s * scale for lo, hi in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for lo, hi, group in zip(self.base_momentums, self.max_momentums,
                                     self.optimizer.param_groups):
                self._set_momentum(group, hi - (hi - lo) * s * scale)
        return lrs

    def state_dict(self) -> dict:
        """As LRScheduler's, without a custom scale_fn."""
        return {k: v for k, v in super().state_dict().items() if k != "_scale_fn_custom"}

