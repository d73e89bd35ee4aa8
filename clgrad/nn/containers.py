"""Containers: Sequential, ModuleList and the Identity placeholder (PyTorch's semantics)."""
from __future__ import annotations

from collections import OrderedDict

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

    def __setitem__(self, idx, module: Module):
        """Replace the child at position ``idx`` (negative counts from the end), in place: it
        keeps its name and its position, as in PyTorch (``model.classifier[1] = Linear(...)``).

        Raises: TypeError if idx is not an int or module not a Module; IndexError out of range
        """
        op = type(self).__name__
        key = list(self._modules)[_wrap_index(idx, len(self._modules), op)]
        if not isinstance(module, Module):
            raise TypeError(f"{op}: expected a Module to assign at index {idx}, got "
                            f"{type(module).__name__}")
        self._modules[key] = module

    def __delitem__(self, idx):
        """Remove the child(ren) at ``idx`` (an int or a slice); the remaining children are
        renamed ``0``, ``1``, ... in order, as PyTorch does.

        Raises: TypeError if idx is not an int or a slice; IndexError out of range
        """
        keys = list(self._modules)
        if isinstance(idx, slice):
            drop = keys[idx]
        else:
            drop = [keys[_wrap_index(idx, len(keys), type(self).__name__)]]
        for key in drop:
            del self._modules[key]
        kept = list(self._modules.values())
        self._modules.clear()
        for i, m in enumerate(kept):
            self._modules[str(i)] = m


class Sequential(_Indexed):
    """Modules applied in order; children are named ``0``, ``1``, ... (or by an OrderedDict)."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
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
