"""Containers: Sequential, ModuleList and the Identity placeholder (PyTorch's semantics)."""
from __future__ import annotations

from collections import OrderedDict

from clgrad.nn.layers import BatchNorm2d, ReLU
from clgrad.nn.module import Module

__all__ = ["Sequential", "ModuleList", "Identity"]


class _Indexed(Module):
    """Children named ``0``, ``1``, ...: length, iteration and append shared by the lists."""

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module: Module):
        """Add ``module`` at the end. Returns self."""
        self.add_module(str(len(self._modules)), module)
        return self


class Sequential(_Indexed):
    """Modules applied in order; children are named ``0``, ``1``, ... (or by an OrderedDict).

    A BatchNorm2d directly followed by a ReLU (those exact classes) runs as one fused op
    (clgrad.ops.norm.batch_norm with relu=True; the same values and gradients).
    """

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, x):
        mods = tuple(self._modules.values())
        i = 0
        while i < len(mods):
            m = mods[i]
            if type(m) is BatchNorm2d and i + 1 < len(mods) and type(mods[i + 1]) is ReLU:
                x = m._forward(x, relu=True)  # one fused op, the values of the two
                i += 2
                continue
            x = m(x)
            i += 1
        return x

    def __getitem__(self, idx):
        mods = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(mods[idx]))
        return mods[_wrap_index(idx, len(mods), "Sequential")][1]


class ModuleList(_Indexed):
    """A list of Modules registered as children ``0``, ``1``, ... (no forward of its own)."""

    def __init__(self, modules=None):
        super().__init__()
        for m in modules or ():
            self.append(m)

    def __getitem__(self, idx):
        mods = list(self._modules.values())
        if isinstance(idx, slice):
            return ModuleList(mods[idx])
        return mods[_wrap_index(idx, len(mods), "ModuleList")]


    def extend(self, modules):
        """Append every module of ``modules``. Returns self."""
        for m in modules:
            self.append(m)
        return self


class Identity(Module):
    """Returns its input unchanged (a placeholder layer)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


# ---------------------------------------------------------------------------- private helpers

def _wrap_index(idx, n, op):
    if not isinstance(idx, int):
        raise TypeError(f"{op}: expected an int index or a slice, got {type(idx).__name__}")
    if not -n <= idx < n:
        raise IndexError(f"{op}: index {idx} is out of range for {n} modules")
    return idx % n
