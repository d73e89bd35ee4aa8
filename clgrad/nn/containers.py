"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict, and the
Identity and Unflatten layers (PyTorch's semantics)."""
from __future__ import annotations

from collections import OrderedDict

from clgrad.nn.module import Module, Parameter

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity",
           "Unflatten"]


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


class ModuleDict(Module):
    """Modules registered under string keys, in insertion order (no forward of its own)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module):
        self.add_module(key, module)

    def __delitem__(self, key: str):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def pop(self, key: str) -> Module:
        """Remove ``key`` and return its module."""
        return self._modules.pop(key)

    def clear(self):
        self._modules.clear()

    def update(self, modules):
        """Add (key, module) pairs from a mapping or an iterable of pairs."""
        for k, m in (modules.items() if hasattr(modules, "items") else modules):
            self.add_module(k, m)


class ParameterList(Module):
    """Parameters registered as ``0``, ``1``, ...; tensors given are wrapped as Parameters."""

    def __init__(self, values=None):
        super().__init__()
        for v in values or ():
            self.append(v)

    def __getitem__(self, idx):
        ps = list(self._parameters.values())
        if isinstance(idx, slice):
            return ParameterList(ps[idx])
        return ps[_wrap_index(idx, len(ps), "ParameterList")]

    def __setitem__(self, idx, value):
        idx = _wrap_index(idx, len(self._parameters), "ParameterList")
        self.register_parameter(str(idx), _as_parameter(value))

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, value):
        """Add ``value`` (a Parameter, or a Tensor made one) at the end. Returns self."""
        self.register_parameter(str(len(self._parameters)), _as_parameter(value))
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self


class ParameterDict(Module):
    """Parameters registered under string keys, in insertion order."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        return self._parameters[key]

    def __setitem__(self, key: str, value):
        self.register_parameter(key, _as_parameter(value))

    def __delitem__(self, key: str):
        del self._parameters[key]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key):
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def update(self, parameters):
        for k, v in (parameters.items() if hasattr(parameters, "items") else parameters):
            self[k] = v


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size`` (a view when strides allow)."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, x):
        return x.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


# ---------------------------------------------------------------------------- private helpers

def _wrap_index(idx, n, op):
    if not isinstance(idx, int):
        raise TypeError(f"{op}: expected an int index or a slice, got {type(idx).__name__}")
    if not -n <= idx < n:
        raise IndexError(f"{op}: index {idx} is out of range for {n} modules")
    return idx % n


def _as_parameter(v):
    return v if isinstance(v, Parameter) or v is None else Parameter(v)
