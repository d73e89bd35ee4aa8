"""Learning-rate schedules: each ``step()`` (once per epoch) sets every group's ``lr``.

The schedules are the closed forms of PyTorch's (which PyTorch computes recursively; the two
agree while nothing else changes the learning rate).
"""
from __future__ import annotations

import math

from clgrad.optim.optimizer import Optimizer

__all__ = ["LRScheduler", "StepLR", "CosineAnnealingLR"]


class LRScheduler:
    """Base class: ``get_lr()`` gives each group's lr at ``last_epoch`` from its ``initial_lr``.

    Construction performs the first ``step()`` (``last_epoch`` becomes 0), as PyTorch does.
    ``last_epoch=-1`` starts fresh; any other value resumes and needs ``initial_lr`` in every
    group (set by the first scheduler, kept in the optimizer's state dict).
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__}: expected an Optimizer, got "
                            f"{type(optimizer).__name__}")
        self.optimizer = optimizer
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"{type(self).__name__}: param 'initial_lr' is not specified in "
                               f"param_groups[{i}] when resuming an optimizer")
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def get_lr(self) -> list:
        """The learning rate of each group at ``self.last_epoch``."""
        raise NotImplementedError

    def step(self):
        """Advance one epoch and write the new learning rates into the optimizer."""
        self.last_epoch += 1
        lrs = self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = list(lrs)

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


class StepLR(LRScheduler):
    """lr = initial_lr * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1):
        if not isinstance(step_size, int) or step_size < 1:
            raise ValueError(f"StepLR: expected step_size to be a positive int, got "
                             f"{step_size!r}")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size)
                for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from initial_lr to eta_min over T_max epochs (I. Loshchilov and
    F. Hutter, "SGDR: Stochastic Gradient Descent with Warm Restarts", ICLR 2017, without the
    restarts): lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2.
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1):
        if not isinstance(T_max, int) or T_max < 1:
            raise ValueError(f"CosineAnnealingLR: expected T_max to be a positive int, got "
                             f"{T_max!r}")
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        c = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base - self.eta_min) * c for base in self.base_lrs]
