"""Optimizers that update parameters in place on their device (PyTorch's names and equations).

    Optimizer                 base class: param groups, state, zero_grad, state dicts
    SGD                       momentum, dampening, Nesterov, weight decay
    Adam, AdamW               L2-in-gradient vs decoupled weight decay
    lr_scheduler              StepLR, CosineAnnealingLR
"""
from clgrad.optim import lr_scheduler
from clgrad.optim.adam import Adam, AdamW
from clgrad.optim.optimizer import Optimizer
from clgrad.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler"]
