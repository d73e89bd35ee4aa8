"""The legacy torch.nn.utils.weight_norm / remove_weight_norm: a forward pre-hook that
recomputes ``weight = g * v / ||v||`` from the parameters ``weight_g`` and ``weight_v`` before
each forward (PyTorch 2.14's torch/nn/utils/weight_norm.py, followed step by step; PyTorch
deprecates it for torch.nn.utils.parametrizations.weight_norm, whose state_dict loads these
keys)."""
from __future__ import annotations

import warnings

from clgrad.nn.module import Module, Parameter, UninitializedParameter
from clgrad.nn.utils.parametrizations import _weight_norm, norm_except_dim

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    """The forward pre-hook of the legacy weight_norm (one per parametrized name)."""

    def __init__(self, name: str, dim: int | None):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module):
        """g * v / ||v|| from ``module.<name>_g`` and ``module.<name>_v`` (differentiable)."""
        return _weight_norm(getattr(module, self.name + "_v"),
                            getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        """Replace the parameter ``name`` by ``name_g`` (norm_except_dim of it) and ``name_v``
        (its values) and register the hook; ``module.<name>`` becomes a plain attribute.
        Warns FutureWarning (PyTorch's deprecation).
        Raises:  RuntimeError for a second weight_norm on ``name``; ValueError for an
                 uninitialized (lazy) parameter"""
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                      stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized "
                             "parameters. Make sure to run the dummy forward before applying "
                             "weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g",
                                  Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        """Put back ``name`` as one Parameter holding the current g * v / ||v||."""
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Legacy weight normalization (Salimans & Kingma 2016, arXiv:1602.07868):
    ``module.<name>`` is recomputed as g * v / ||v|| before every forward from the new
    parameters ``<name>_g`` (the norm over every dim but ``dim``, keeping the rank; 0-dim for
    ``dim=None``) and ``<name>_v``; state_dict keys ``<name>_g``, ``<name>_v`` (PyTorch's).
    Returns: module.
    Raises:  see WeightNorm.apply"""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo weight_norm: ``name`` is one Parameter again (its current value).
    Returns: module.  Raises ValueError when ``name`` has no weight_norm."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
