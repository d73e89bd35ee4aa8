"""Optimizers that update parameters in place on their device (PyTorch's names and equations).

    Optimizer                 base class: param groups, state, zero_grad, state dicts
    SGD                       momentum, dampening, Nesterov, weight decay, maximize
    Adam, AdamW               L2-in-gradient vs decoupled weight decay, amsgrad, maximize
    Adagrad, Adadelta, RMSprop  per-element step sizes from running gradient statistics
    NAdam, RAdam, Adamax      Adam with Nesterov momentum / rectified variance / infinity norm
    Rprop, ASGD               sign-based steps; SGD with a running average of the iterates
    Adafactor                 factored second moments (PyTorch 2.5+'s form)
    Muon                      momentum orthogonalised by Newton-Schulz (2-D parameters; 2.9+)
    LBFGS                     quasi-Newton steps (a closure), optional strong-Wolfe line search
    SparseAdam                refused (clgrad has no sparse gradients; use Adam)
    lr_scheduler              StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, OneCycleLR,
                              ReduceLROnPlateau, CyclicLR, ... (see clgrad/optim/lr_scheduler.py)
    swa_utils                 AveragedModel (SWA, EMA), SWALR, update_bn
"""
from clgrad.optim import lr_scheduler, swa_utils
from clgrad.optim.adafactor import Adafactor
from clgrad.optim.adam import Adam, AdamW
from clgrad.optim.adam_variants import Adamax, NAdam, RAdam
from clgrad.optim.adaptive import Adadelta, Adagrad, RMSprop
from clgrad.optim.lbfgs import LBFGS, SparseAdam
from clgrad.optim.muon import Muon
from clgrad.optim.optimizer import Optimizer
from clgrad.optim.rprop_asgd import ASGD, Rprop
from clgrad.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "RMSprop", "LBFGS",
           "SparseAdam", "NAdam", "RAdam", "Adamax", "Rprop", "ASGD", "Adafactor", "Muon",
           "lr_scheduler", "swa_utils"]
