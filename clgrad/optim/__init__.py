"""Optimizers that update parameters in place on their device (PyTorch's names and equations).

    Optimizer                 base class: param groups, state, zero_grad, state dicts
    SGD                       momentum, dampening, Nesterov, weight decay, maximize
    Adam, AdamW               L2-in-gradient vs decoupled weight decay, amsgrad, maximize
    Adagrad, Adadelta, RMSprop  per-element step sizes from running gradient statistics
    lr_scheduler              StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, OneCycleLR,
                              ReduceLROnPlateau, ... (see clgrad/optim/lr_scheduler.py)
"""
from clgrad.optim import lr_scheduler
from clgrad.optim.adam import Adam, AdamW
from clgrad.optim.adaptive import Adadelta, Adagrad, RMSprop
from clgrad.optim.optimizer import Optimizer
from clgrad.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "RMSprop",
           "lr_scheduler"]
