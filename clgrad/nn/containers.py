"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict, and the
Identity layer (PyTorch's semantics)."""
from __future__ import annotations

from collections import OrderedDict

from clgrad.nn.activation import ReLU, ReLU6, SiLU
from clgrad.nn.module import Module, Parameter
from clgrad.nn import module_hooks
from clgrad.nn.normalization import BatchNorm2d

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity"]


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

    def extend(self, modules):
        """Append every module of the iterable ``modules`` in order. Returns self.
        Raises:  TypeError for a member that is not a Module (add_module's check)"""
        for m in list(modules):  # (a list first: ``x.extend(x)`` ends)
            self.append(m)
        return self

    def insert(self, index: int, module: Module):
        """Insert ``module`` before position ``index`` (negative counts from the end; ``len``
        appends); the children after it move one place on and every child is renamed ``0``,
        ``1``, ... in order (as after ``del``). Returns self.

        Raises:  TypeError for an index that is not an int or a module that is not a Module;
                 IndexError unless -len <= index <= len
        """
        op = f"{type(self).__name__}.insert"
        if not isinstance(module, Module):
            raise TypeError(f"{op}: expected a Module, got {type(module).__name__}")
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError(f"{op}: expected an int index, got {type(index).__name__}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"{op}: index {index} is out of range for {n} modules")
        mods = list(self._modules.values())
        mods.insert(index if index >= 0 else index + n, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self._modules[str(i)] = m
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


# The activations nn.Sequential runs inside a preceding BatchNorm2d's launches (exact classes)
_FUSED_ACTS = {ReLU: "relu", ReLU6: "relu6", SiLU: "silu"}


class Sequential(_Indexed):
    """Modules applied in order; children are named ``0``, ``1``, ... (or by an OrderedDict).

    A BatchNorm2d directly followed by a ReLU, ReLU6 or SiLU (those exact classes) runs as one
    fused op (clgrad.ops.norm.batch_norm with activation=; the values and gradients of the
    two ops: bit for bit for ReLU and ReLU6).
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
        """Apply each child in order: ``x = m(x)``; returns the last output (x if empty).
        An exact BatchNorm2d followed by an exact ReLU, ReLU6 or SiLU runs as one fused op."""
        mods = tuple(self._modules.values())
        i = 0
        while i < len(mods):
            m = mods[i]
            if type(m) is BatchNorm2d and i + 1 < len(mods):
                act = _FUSED_ACTS.get(type(mods[i + 1]))
                if act is not None and "forward" not in m.__dict__ and \
                        "forward" not in mods[i + 1].__dict__ and not \
                        module_hooks.has_hooks(m) and not module_hooks.has_hooks(mods[i + 1]):
                    # (forward not replaced on the instance, no hooks to call)
                    x = m._forward(x, act)  # one fused op, the values of the two
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

    def __add__(self, other) -> "ModuleList":
        """A new ModuleList of this list's modules then those of the iterable ``other``
        (the modules themselves, not copies; neither operand changes).
        Raises:  TypeError for a member of ``other`` that is not a Module"""
        return ModuleList(list(self) + list(other))

    def __iadd__(self, other) -> "ModuleList":
        """``extend`` in place: ``self += other``."""
        return self.extend(other)


class Identity(Module):
    """Returns its input unchanged (a placeholder layer)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        """Returns ``x`` itself (not a copy)."""
        return x


class _Keyed(Module):
    """Members under string keys, in insertion order, in the registry ``_store`` names."""
    _store = "_modules"

    def _register(self, key, value):
        raise NotImplementedError

    def __getitem__(self, key: str):
        return getattr(self, self._store)[key]

    def __setitem__(self, key: str, value):
        self._register(key, value)

    def __delitem__(self, key: str):
        del getattr(self, self._store)[key]

    def __len__(self):
        return len(getattr(self, self._store))

    def __iter__(self):
        return iter(getattr(self, self._store))

    def __contains__(self, key):
        return key in getattr(self, self._store)

    def keys(self):
        """The keys, in insertion order (a live view of the registry)."""
        return getattr(self, self._store).keys()

    def values(self):
        """The members, in insertion order (a live view of the registry)."""
        return getattr(self, self._store).values()

    def items(self):
        """(key, member) pairs, in insertion order (a live view of the registry)."""
        return getattr(self, self._store).items()

    def pop(self, key: str):
        """Remove ``key`` and return its member."""
        return getattr(self, self._store).pop(key)

    def clear(self):
        """Remove every member."""
        getattr(self, self._store).clear()

    def update(self, members):
        """Add (key, member) pairs from a mapping or an iterable of pairs."""
        for k, v in (members.items() if hasattr(members, "items") else members):
            self._register(k, v)


class ModuleDict(_Keyed):
    """Modules registered under string keys, in insertion order (no forward of its own)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def _register(self, key, module):
        self.add_module(key, module)


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
        """Append every value of ``values`` (Tensors are made Parameters). Returns self."""
        for v in values:
            self.append(v)
        return self


class ParameterDict(_Keyed):
    """Parameters registered under string keys, in insertion order; tensors given are wrapped
    as Parameters."""
    _store = "_parameters"

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def _register(self, key, value):
        self.register_parameter(key, _as_parameter(value))


# ---------------------------------------------------------------------------- private helpers

def _wrap_index(idx, n, op):
    if not isinstance(idx, int):
        raise TypeError(f"{op}: expected an int index or a slice, got {type(idx).__name__}")
    if not -n <= idx < n:
        raise IndexError(f"{op}: index {idx} is out of range for {n} modules")
    return idx % n


def _as_parameter(v):
    return v if isinstance(v, Parameter) or v is None else Parameter(v)
