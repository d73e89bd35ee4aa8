"""Stochastic weight averaging and EMA of a model's parameters (PyTorch's
torch.optim.swa_utils): AveragedModel, SWALR, update_bn and the averaging functions."""
from __future__ import annotations

import itertools
import math
from copy import deepcopy

from clgrad import nn
from clgrad.autograd import no_grad
from clgrad.creation import tensor
from clgrad import dtypes
from clgrad.optim.lr_scheduler import LRScheduler, _per_group
from clgrad.optim.optimizer import Optimizer

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def _count(num_averaged) -> int:
    """The number of models averaged so far (an int or a one-element tensor)."""
    return int(num_averaged.item()) if hasattr(num_averaged, "item") else int(num_averaged)


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         f"[0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """An exponential moving average over lists: ema = lerp(ema, current, 1 - decay)."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _):
        with no_grad():
            for e, c in zip(ema_param_list, current_param_list):
                if e.dtype.is_floating_point:
                    e.lerp_(c, 1 - decay)
                else:
                    e.copy_(e * decay + c * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """The running mean over lists: avg = lerp(avg, current, 1 / (n + 1))."""
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        n = _count(num_averaged)
        with no_grad():
            for a, c in zip(averaged_param_list, current_param_list):
                if a.dtype.is_floating_point:
                    a.lerp_(c, 1 / (n + 1))
                else:
                    a.add_(c - a, alpha=1.0 / (n + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """An exponential moving average of one tensor: decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """The running mean of one tensor: avg + (current - avg) / (n + 1)."""
    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (_count(num_averaged)
                                                                        + 1)
    return swa_update


class AveragedModel(nn.Module):
    """A deep copy of ``model`` whose parameters (and with ``use_buffers`` its buffers) are an
    average of the parameters ``update_parameters`` is given: by default their running mean
    (SWA, P. Izmailov et al., "Averaging Weights Leads to Wider Optima and Better
    Generalization", UAI 2018), or what ``avg_fn(avg, current, n)`` returns per tensor, or
    what ``multi_avg_fn(avgs, currents, n)`` does in place to lists (get_ema_multi_avg_fn:
    an EMA). The first update copies the model; without use_buffers, buffers are copied at
    each update (run ``update_bn`` for batch-norm statistics). ``n_averaged`` is an int64
    buffer, as PyTorch's (so a state dict loads into torch.optim.swa_utils.AveragedModel).

    Args:    model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False
    Raises:  ValueError when both avg_fn and multi_avg_fn are given (PyTorch: an
             AssertionError)
    """

    def __init__(self, model: nn.Module, device=None, avg_fn=None, multi_avg_fn=None,
                 use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise ValueError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=dtypes.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model: nn.Module):
        """Average ``model``'s parameters (and buffers, with use_buffers) into this copy."""
        if self.use_buffers:
            mine = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            theirs = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            mine, theirs = list(self.module.parameters()), list(model.parameters())
        mine = [p.detach() for p in mine]
        theirs = [q.detach().to(p.device) for p, q in zip(mine, theirs)]
        n = int(self.n_averaged.item())
        with no_grad():
            if n == 0:
                for p, q in zip(mine, theirs):
                    p.copy_(q)
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn(mine, theirs, self.n_averaged)
            else:
                avg_fn = self.avg_fn or get_swa_avg_fn()  # (PyTorch's CPU default)
                for p, q in zip(mine, theirs):
                    p.copy_(avg_fn(p, q, self.n_averaged))
            if not self.use_buffers:
                for b, c in zip(self.module.buffers(), model.buffers()):
                    b.copy_(c.detach().to(b.device))
            self.n_averaged.add_(1)


def _is_batch_norm(module) -> bool:
    """PyTorch's _BatchNorm family (BatchNorm1d/2d/3d, SyncBatchNorm), not instance norms."""
    return any(c.__name__.startswith(("BatchNorm", "SyncBatchNorm", "_BatchNorm"))
               for c in type(module).__mro__)


def update_bn(loader, model: nn.Module, device=None):
    """Recompute the batch-norm running statistics of ``model`` in one pass over ``loader``
    (a cumulative average, momentum None, over batches; for a list/tuple batch its first
    item is the input), then restore the momenta and the training mode."""
    momenta = {}
    for module in model.modules():
        if _is_batch_norm(module):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to ``swa_lr`` over ``anneal_epochs`` epochs, then holds it
    (PyTorch's form, from the lr the group has when stepped: alpha = anneal(t) with t the
    fraction of the annealing done, 'cos' (1 - cos(pi t)) / 2 or 'linear' t;
    lr = swa_lr * alpha + lr0 * (1 - alpha), lr0 recovered from the previous step's lr).

    Args:    optimizer, swa_lr (one or one per group), anneal_epochs=10,
             anneal_strategy='cos', last_epoch=-1
    Raises:  ValueError for an unknown anneal_strategy or anneal_epochs not an int >= 0
             (PyTorch's messages)
    """

    def __init__(self, optimizer: Optimizer, swa_lr, anneal_epochs=10,
                 anneal_strategy: str = "cos", last_epoch=-1):
        for lr, group in zip(_per_group("SWALR", "swa_lr", optimizer, swa_lr),
                             optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_strategy = anneal_strategy
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t):
        if self._anneal_strategy == "cos":
            return (1 - math.cos(math.pi * t)) / 2
        return t

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        groups = self.optimizer.param_groups
        prev = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev)]
