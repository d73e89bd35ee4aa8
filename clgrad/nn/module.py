"""Module and Parameter, with PyTorch's semantics (containers: clgrad/nn/containers.py).

A Module registers what is assigned to its attributes: a Parameter goes to ``_parameters``, a
Module to ``_modules``, a tensor passed to ``register_buffer`` to ``_buffers``. Everything that
walks the tree (``named_parameters``, ``state_dict``, ``train`` ...) follows these three dicts in
insertion order, so the names are PyTorch's: ``0.weight``, ``features.1.running_mean``.
"""
from __future__ import annotations

from collections import OrderedDict, namedtuple

import numpy as np

from clgrad.autograd import no_grad
from clgrad.creation import empty, from_numpy
from clgrad.ops import elementwise as ew
from clgrad.ops._util import bump_version
from clgrad.tensor import Tensor

__all__ = ["Parameter", "Module"]


class Parameter(Tensor):
    """A leaf tensor that a Module registers as a parameter (``requires_grad`` by default).

    ``Parameter(data)`` shares the storage of ``data`` when ``data`` is a root tensor
    (contiguous, owning its storage); a view is copied first, so a Parameter is always a root.
    """

    __slots__ = ()

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: expected a Tensor, got {type(data).__name__}")
        if data._base is not None or not data.is_contiguous() or data._offset:
            data = ew.contiguous(data.detach(), force_copy=True)
        super().__init__(data._storage, data.shape, data._strides, data._offset)
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Module:
    """Base class of layers and models: subclasses set attributes in ``__init__`` (after
    ``super().__init__()``) and define ``forward``; calling the module calls ``forward``.
    """

    training: bool

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())

    def forward(self, *args, **kwargs):
        """The computation; subclasses override it. Raises NotImplementedError here.

        Unlike PyTorch, calling a module calls forward directly (no forward hooks).
        """
        raise NotImplementedError(f"{type(self).__name__}: expected a forward() method, got "
                                  f"none; define forward in the subclass")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # -- registration -------------------------------------------------------------------------
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: cannot assign {name!r} before "
                                 f"Module.__init__() call")
        params, buffers, modules = self._parameters, self._buffers, self._modules
        if isinstance(value, (Parameter, Module)):
            _forget(self, name)
            (params if isinstance(value, Parameter) else modules)[name] = value
        elif name in params or name in modules:
            if value is not None:
                kind = "parameter" if name in params else "child module"
                raise TypeError(f"{type(self).__name__}: cannot assign "
                                f"{type(value).__name__} as {kind} {name!r} (expected a "
                                f"{'Parameter' if name in params else 'Module'} or None)")
            (params if name in params else modules)[name] = None
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"{type(self).__name__}: cannot assign {type(value).__name__} "
                                f"as buffer {name!r} (expected a Tensor or None)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None):
        """Add ``param`` (or None: a declared but absent parameter, like a disabled bias)."""
        _check_name(self, name, "register_parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: expected a clgrad.nn.Parameter or None for "
                            f"{name!r}, got {type(param).__name__}")
        _forget(self, name)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True):
        """Add a tensor that is state but not a parameter (e.g. BatchNorm's running_mean).

        Persistent buffers appear in ``state_dict``; non-persistent ones only in ``buffers()``.
        """
        _check_name(self, name, "register_buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: expected a Tensor or None for {name!r}, got "
                            f"{type(tensor).__name__}")
        _forget(self, name)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Module | None):
        """Register ``module`` as a child called ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: expected a Module for {name!r}, got "
                            f"{type(module).__name__}")
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"add_module: expected a non-empty name without '.', got {name!r}")
        _forget(self, name)
        self._modules[name] = module

    register_module = add_module

    # -- walking the tree ---------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = ""):
        """(name, module) for this module and every descendant, each module once."""
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, prefix + ("." if prefix else "") + name)

    def modules(self):
        """This module and every descendant."""
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        """(name, module) for the direct children."""
        for name, m in self._modules.items():
            if m is not None:
                yield name, m

    def children(self):
        """The direct children."""
        for _, m in self.named_children():
            yield m

    def _named_members(self, store: str, prefix: str, recurse: bool):
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mod_prefix, m in mods:
            for name, t in getattr(m, store).items():
                if t is None or id(t) in seen:
                    continue
                seen.add(id(t))
                yield mod_prefix + ("." if mod_prefix else "") + name, t

    def named_parameters(self, prefix: str = "", recurse: bool = True):
        """(name, Parameter) pairs, each shared parameter once: ``('0.weight', ...)``."""
        return self._named_members("_parameters", prefix, recurse)

    def parameters(self, recurse: bool = True):
        """The Parameters, each once, in registration order."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True):
        """(name, buffer) pairs."""
        return self._named_members("_buffers", prefix, recurse)

    def buffers(self, recurse: bool = True):
        """The buffers (persistent or not)."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn):
        """Call ``fn(m)`` on every descendant, then on self (PyTorch's order). Returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # -- modes and gradients ------------------------------------------------------------------
    def train(self, mode: bool = True):
        """Set training mode (Dropout drops, BatchNorm uses batch statistics). Returns self."""
        if not isinstance(mode, bool):
            raise ValueError(f"train: expected a bool mode, got {type(mode).__name__}")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        """Set evaluation mode (``train(False)``). Returns self."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        """Set ``requires_grad`` of every parameter. Returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True):
        """Reset the gradients of all parameters: to None (default) or to zeros in place."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                ew.fill_raw(p.grad, 0)

    # -- state ----------------------------------------------------------------------------------
    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False):
        """An OrderedDict name -> tensor of every parameter and persistent buffer.

        The tensors share storage with the module (detached unless ``keep_vars``); copy them
        (or save them) before changing the module if you need a snapshot.
        """
        out = OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent:
                out[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(out, prefix + name + ".", keep_vars)
        return out

    def load_state_dict(self, state_dict, strict: bool = True):
        """Copy tensors (clgrad Tensors or NumPy arrays) from ``state_dict`` into the module.

        Every shape and dtype must match exactly (no silent casts). With ``strict`` a missing
        or unexpected key is an error; without it they are returned.
        Returns: (missing_keys, unexpected_keys) as a named tuple.
        Raises:  RuntimeError listing every missing/unexpected key and every shape or dtype
                 mismatch; nothing is copied when any check fails.
        """
        if not hasattr(state_dict, "items"):
            raise TypeError(f"load_state_dict: expected a dict of tensors, got "
                            f"{type(state_dict).__name__}")
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        if strict:
            if missing:
                errors.append("missing key(s) in state_dict: " + ", ".join(map(repr, missing)))
            if unexpected:
                errors.append("unexpected key(s) in state_dict: " +
                              ", ".join(map(repr, unexpected)))
        pairs = []
        for k, dst in own.items():
            if k not in state_dict:
                continue
            src = state_dict[k]
            if not isinstance(src, (Tensor, np.ndarray)):
                errors.append(f"{k}: expected a Tensor or ndarray, got {type(src).__name__}")
                continue
            if tuple(src.shape) != tuple(dst.shape):
                errors.append(f"size mismatch for {k}: copying a param with shape "
                              f"{tuple(src.shape)} from checkpoint, the shape in current model "
                              f"is {tuple(dst.shape)}")
                continue
            src_dtype = src.dtype.np if isinstance(src, Tensor) else np.dtype(src.dtype)
            if src_dtype != dst.dtype.np:
                errors.append(f"dtype mismatch for {k}: copying a tensor of dtype "
                              f"{src_dtype.name} from checkpoint, the dtype in current model "
                              f"is {dst.dtype.name}")
                continue
            pairs.append((dst, src))
        if errors:
            raise RuntimeError(f"load_state_dict: error(s) loading state_dict for "
                               f"{type(self).__name__}:\n\t" + "\n\t".join(errors))
        with no_grad():
            for dst, src in pairs:
                if isinstance(src, np.ndarray):
                    src = from_numpy(np.ascontiguousarray(src), device=dst._storage.device)
                elif src._storage.device is not dst._storage.device:  # map_location="cpu"
                    src = ew.to_device(src, dst._storage.device)
                ew.copy_raw(dst, src)
                bump_version(dst)
        return _IncompatibleKeys(missing, unexpected)

    # -- device and dtype -----------------------------------------------------------------------
    def _apply(self, fn):
        """Replace every parameter's and buffer's data by ``fn(data)``, keeping the objects."""
        for m in self.modules():
            for store in (m._parameters, m._buffers):
                for name, t in store.items():
                    if t is None:
                        continue
                    new = fn(t.detach())
                    if new is t or (new._storage is t._storage and new.shape == t.shape):
                        continue
                    new = ew.contiguous(new, force_copy=new._base is not None)
                    t._set_data(new)
                    t._grad = None
        return self

    def to(self, *args, **kwargs):
        """Move/cast parameters and buffers in place: ``to(device)``, ``to(dtype)``.
        Only floating tensors change dtype (as PyTorch). Returns self."""
        def convert(t):
            if not t.dtype.is_floating_point:
                keep = [a for a in args if not _is_dtype(a)]
                kw = {k: v for k, v in kwargs.items() if k != "dtype"}
                return t.to(*keep, **kw) if keep or kw else t
            return t.to(*args, **kwargs)
        return self._apply(convert)

    def cuda(self, device=None):
        """Move parameters and buffers to GPU ``device`` (default: the current one; see
        ``clgrad.device`` for what "cuda" means on OpenCL). Returns self."""
        from clgrad._device import device as _device
        return self.to(_device("cuda", device))

    def cpu(self):
        """Move parameters and buffers to the OpenCL CPU device. Returns self."""
        return self.to("cpu")

    def float(self):
        """Cast floating parameters and buffers to float32. Returns self."""
        return self.to("float32")

    def double(self):
        """Cast floating parameters and buffers to float64. Returns self."""
        return self.to("float64")

    # -- printing -------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside the parentheses of this module's repr line."""
        return ""

    def __repr__(self):
        children = [f"({name}): " + _indent(repr(m)) for name, m in self._modules.items()]
        head = type(self).__name__ + "("
        extra = self.extra_repr()
        if not children:
            return head + extra + ")"
        lines = ([extra] if extra else []) + children
        return head + "\n  " + "\n  ".join(lines) + "\n)"

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) |
                      set(self._modules))


# ---------------------------------------------------------------------------- private helpers

def _forget(module, name):
    """Remove ``name`` from the module's attributes and registries (before re-registering)."""
    module.__dict__.pop(name, None)
    for store in (module._parameters, module._buffers, module._modules):
        store.pop(name, None)
    module._non_persistent.discard(name)


def _check_name(module, name, op):
    if not isinstance(name, str):
        raise TypeError(f"{op}: expected a str name, got {type(name).__name__}")
    if not name or "." in name:
        raise KeyError(f"{op}: expected a non-empty name without '.', got {name!r}")
    if name in module.__dict__ and name not in module._parameters and \
            name not in module._buffers:
        raise KeyError(f"{op}: attribute {name!r} already exists")


def _is_dtype(a):
    from clgrad import dtypes
    if isinstance(a, dtypes.DType):
        return True
    return isinstance(a, str) and a in ("float16", "float32", "float64", "half", "float",
                                        "double")


def _indent(text: str) -> str:
    return text.replace("\n", "\n  ")
