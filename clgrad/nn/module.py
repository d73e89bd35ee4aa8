"""Module and Parameter, with PyTorch's semantics (containers: clgrad/nn/containers.py).

A Module registers what is assigned to its attributes: a Parameter goes to ``_parameters``, a
Module to ``_modules``, a tensor passed to ``register_buffer`` to ``_buffers``. Everything that
walks the tree (``named_parameters``, ``state_dict``, ``train`` ...) follows these three dicts in
insertion order, so the names are PyTorch's: ``0.weight``, ``features.1.running_mean``.
"""
from __future__ import annotations

import threading
from collections import OrderedDict, namedtuple
from types import MappingProxyType

import numpy as np

from clgrad._compile import compile as _compile
from clgrad.autograd import no_grad
from clgrad.creation import empty, from_numpy
from clgrad.nn import module_hooks
from clgrad.ops import elementwise as ew
from clgrad.ops._util import bump_version
from clgrad.tensor import Tensor

_GLOBAL_CALL_HOOKS = module_hooks.GLOBAL_CALL_HOOKS

__all__ = ["Parameter", "Module", "Buffer", "UninitializedParameter", "UninitializedBuffer"]


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


class Buffer(Tensor):
    """``self.x = nn.Buffer(t, persistent=True)`` registers ``t`` as a buffer of the module
    (PyTorch 2.5's ``torch.nn.Buffer``): the module keeps a detached tensor sharing ``t``'s
    storage (requires_grad as ``t``'s); ``persistent=False`` keeps it out of state_dict."""

    __slots__ = ("persistent",)

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer: expected a Tensor, got {type(data).__name__}")
        d = data.detach()
        super().__init__(d._storage, d._shape, d._strides, d._offset, d._base)
        self.persistent = bool(persistent)
        if data.requires_grad:
            self.requires_grad_(True)

    def _plain(self) -> Tensor:
        """The tensor a module registers: a plain Tensor over this one's storage."""
        t = self.detach()
        return t.requires_grad_(True) if self.requires_grad else t


_LAZY_MSG = ("Can't access the shape of an uninitialized parameter or buffer. This error "
             "usually happens in `load_state_dict` when trying to load an uninitialized "
             "parameter into an initialized one. Call `forward` to initialize the parameters "
             "before accessing their attributes.")


class _Uninitialized:
    """What UninitializedParameter and UninitializedBuffer share (PyTorch's
    UninitializedTensorMixin): an empty storage that knows its dtype and device until
    ``materialize(shape)`` gives it its shape and turns the object into ``cls_to_become``
    (the same object: optimizers and modules holding it see the materialised tensor)."""

    __slots__ = ()
    cls_to_become: type = Tensor

    def materialize(self, shape, device=None, dtype=None):
        """Allocate ``shape`` (uninitialised values) with this tensor's dtype and device
        unless given, and become ``cls_to_become`` in place."""
        shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
        new = empty(shape, dtype=dtype or self._storage.dtype,
                    device=device if device is not None else self._storage.device)
        self._set_data(new)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(_LAZY_MSG)

    def size(self, dim=None):
        raise RuntimeError(_LAZY_MSG)

    def numel(self):
        raise ValueError(f"Attempted to use an uninitialized parameter in numel. This error "
                         f"happens when you are using a `LazyModule` or explicitly "
                         f"manipulating `{type(self).__name__}` objects. When using "
                         f"LazyModules Call `forward` with a dummy batch to initialize the "
                         f"parameters before calling torch functions")

    dim = numel

    @property
    def ndim(self):
        return self.numel()

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, proto):
        return (type(self), (self.requires_grad,))


class UninitializedParameter(_Uninitialized, Parameter):
    """A Parameter whose shape is not known yet (lazy modules): ``materialize(shape)`` makes
    it a Parameter of that shape. Reading its shape raises RuntimeError, as PyTorch's."""

    __slots__ = ()
    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        super().__init__(empty(0, dtype=dtype, device=device), requires_grad)


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer whose shape is not known yet (lazy modules' running statistics):
    ``materialize(shape)`` makes it a Tensor of that shape."""

    __slots__ = ()
    cls_to_become = Tensor

    def __init__(self, requires_grad: bool = False, device=None, dtype=None):
        d = empty(0, dtype=dtype, device=device)
        super().__init__(d._storage, d._shape, d._strides, d._offset)
        if requires_grad:
            self.requires_grad_(True)


def is_lazy(t) -> bool:
    """Whether ``t`` is an UninitializedParameter or UninitializedBuffer."""
    return isinstance(t, _Uninitialized)


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns: (missing_keys, unexpected_keys), lists of str."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


_HOOK_STORES = ("_state_dict_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
                "_load_state_dict_post_hooks")
_loading = threading.local()  # .pending: the (module, name, dst, src, assign) of a load


class Module:
    """Base class of layers and models: subclasses set attributes in ``__init__`` (after
    ``super().__init__()``) and define ``forward``; calling the module calls ``forward``.

    ``_version`` (class attribute, 1 here) is saved per module in ``state_dict()._metadata``
    and handed to ``_load_from_state_dict`` as ``local_metadata["version"]``, so a subclass
    can convert checkpoints of older versions (BatchNorm2d is version 2, as in PyTorch).
    """

    training: bool
    _version: int = 1

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        for store in _HOOK_STORES:
            object.__setattr__(self, store, OrderedDict())

    def forward(self, *args, **kwargs):
        """The computation; subclasses override it. Raises NotImplementedError here.

        Calling the module calls forward, with its hooks around it when it has any
        (clgrad/nn/module_hooks.py: PyTorch's order and rules).
        """
        raise NotImplementedError(f"{type(self).__name__}: expected a forward() method, got "
                                  f"none; define forward in the subclass")

    def __call__(self, *args, **kwargs):
        d = self.__dict__  # (module_hooks.has_hooks, inline: one Python call per module call)
        compiled = d.get("_compiled_call_impl")
        if compiled is not None:
            return compiled(*args, **kwargs)
        if any(_GLOBAL_CALL_HOOKS) or d.get("_forward_pre_hooks") or d.get("_forward_hooks") \
                or d.get("_backward_pre_hooks") or d.get("_backward_hooks"):
            return module_hooks.call(self, args, kwargs)
        return self.forward(*args, **kwargs)

    def _call_impl(self, *args, **kwargs):
        """A call without the compiled wrapper (PyTorch's name): forward with its hooks."""
        d = self.__dict__
        if any(_GLOBAL_CALL_HOOKS) or d.get("_forward_pre_hooks") or d.get("_forward_hooks") \
                or d.get("_backward_pre_hooks") or d.get("_backward_hooks"):
            return module_hooks.call(self, args, kwargs)
        return self.forward(*args, **kwargs)

    def compile(self, *args, **kwargs):
        """Compile this module's call in place (PyTorch's ``Module.compile``): later calls
        go through ``clgrad.compile(self._call_impl, *args, **kwargs)``, so
        ``mode="reduce-overhead"`` replays captured kernels and any other mode runs eagerly
        (clgrad/_compile.py). The module itself, its ``state_dict`` and its parameters stay
        as they were (``torch.compile(module)`` returns a wrapper instead). Returns None."""
        object.__setattr__(self, "_compiled_call_impl", _compile(self._call_impl, *args,
                                                                 **kwargs))

    # -- call hooks (PyTorch's; run by module_hooks.call) --------------------------------------
    # Until a hook is registered (module_hooks.store gives the instance its own OrderedDict),
    # reading m._forward_hooks ... finds these empty read-only class-level mappings.
    _forward_pre_hooks = _forward_hooks = _backward_pre_hooks = _backward_hooks = \
        _forward_pre_hooks_with_kwargs = _forward_hooks_with_kwargs = \
        _forward_hooks_always_called = MappingProxyType({})

    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False):
        """Run ``hook(module, args)`` before each forward (``with_kwargs``: ``hook(module, args,
        kwargs)``, returning None or ``(args, kwargs)``); a non-None result replaces args (a
        non-tuple becomes a 1-tuple). ``prepend``: before the hooks already registered.
        Returns a handle whose ``remove()`` unregisters it. Raises TypeError for a non-callable.
        """
        flags = [module_hooks.store(self, "_forward_pre_hooks_with_kwargs")] if with_kwargs \
            else []
        return module_hooks.register(module_hooks.store(self, "_forward_pre_hooks"), hook,
                                     "register_forward_pre_hook", prepend, flags)

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        """Run ``hook(module, args, output)`` after each forward (``with_kwargs``: ``hook(module,
        args, kwargs, output)``); a non-None result replaces the output. ``always_call``: also
        when forward raises (then output is None). ``prepend``: before the hooks already
        registered. Returns a handle with ``remove()``. Raises TypeError for a non-callable.
        """
        flags = [module_hooks.store(self, name) for name, on in (
            ("_forward_hooks_with_kwargs", with_kwargs),
            ("_forward_hooks_always_called", always_call)) if on]
        return module_hooks.register(module_hooks.store(self, "_forward_hooks"), hook,
                                     "register_forward_hook", prepend, flags)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """Run ``hook(module, grad_output)`` when the gradients of the module's outputs are
        computed: ``grad_output`` a tuple with one entry per output (None for a non-tensor or
        an output without gradient); a non-None result (same length, else RuntimeError)
        replaces it. Returns a handle with ``remove()``."""
        return module_hooks.register(module_hooks.store(self, "_backward_pre_hooks"), hook,
                                     "register_full_backward_pre_hook", prepend)

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """Run ``hook(module, grad_input, grad_output)`` when the gradients of the module's
        inputs are computed: tuples with one entry per positional argument / output (None for
        non-tensors and tensors without gradient); a non-None result (same length, else
        RuntimeError) replaces grad_input. When no input requires grad, the hook runs with
        grad_input all None once grad_output is known (with PyTorch's warning). Returns a
        handle with ``remove()``."""
        return module_hooks.register(module_hooks.store(self, "_backward_hooks"), hook,
                                     "register_full_backward_hook", prepend)

    def register_backward_hook(self, hook):
        """Not supported (PyTorch deprecates it: its grad_input is that of the last op only);
        raises NotImplementedError: use register_full_backward_hook."""
        raise NotImplementedError("register_backward_hook: the non-full backward hook is not "
                                  "supported; use register_full_backward_hook")

    # -- registration -------------------------------------------------------------------------
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: cannot assign {name!r} before "
                                 f"Module.__init__() call")
        params, buffers, modules = self._parameters, self._buffers, self._modules
        if isinstance(value, Buffer):
            self.register_buffer(name, value._plain(), persistent=value.persistent)
        elif isinstance(value, (Parameter, Module)):
            store = params if isinstance(value, Parameter) else modules
            if store is params and name not in params and \
                    isinstance(getattr(type(self), name, None), property):
                # a parametrized tensor (nn.utils.parametrize): PyTorch's register_parameter
                raise KeyError(f"attribute '{name}' already exists")
            _forget(self, name, keep=store)  # a re-assigned name keeps its place (PyTorch)
            store[name] = value
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
        d = self.__dict__  # (the stores in turn, unrolled: ~170 calls per ResNet-18 forward)
        store = d.get("_parameters")
        if store is not None and name in store:
            return store[name]
        store = d.get("_buffers")
        if store is not None and name in store:
            return store[name]
        store = d.get("_modules")
        if store is not None and name in store:
            return store[name]
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
        _forget(self, name, keep=self._parameters)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True):
        """Add a tensor that is state but not a parameter (e.g. BatchNorm's running_mean).

        Persistent buffers appear in ``state_dict``; non-persistent ones only in ``buffers()``.
        """
        _check_name(self, name, "register_buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: expected a Tensor or None for {name!r}, got "
                            f"{type(tensor).__name__}")
        if isinstance(tensor, Buffer):
            tensor = tensor._plain()
        _forget(self, name, keep=self._buffers)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent.add(name)
        else:
            self._non_persistent.discard(name)

    def add_module(self, name: str, module: Module | None):
        """Register ``module`` as a child called ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: expected a Module for {name!r}, got "
                            f"{type(module).__name__}")
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"add_module: expected a non-empty name without '.', got {name!r}")
        _forget(self, name, keep=self._modules)
        self._modules[name] = module

    register_module = add_module

    # -- dotted paths -------------------------------------------------------------------------
    def get_submodule(self, target: str = "") -> "Module":
        """The submodule at the dotted path ``target`` ("" is self), as PyTorch's:
        ``net.get_submodule("encoder.layers.0")``.
        Raises:  AttributeError naming the missing part, or a part that is no Module"""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(type(mod).__name__ + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target: str):
        """The Parameter at the dotted path ``target`` ("layer.weight"), as PyTorch's.
        Raises:  AttributeError when the module path is wrong, the module has no such
                 attribute, or it is not an nn.Parameter"""
        mod, name, value = self._leaf_at(target)
        if not isinstance(value, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return value

    def get_buffer(self, target: str):
        """The buffer at the dotted path ``target`` ("bn.running_mean"), as PyTorch's.
        Raises:  AttributeError when the module path is wrong, the module has no such
                 attribute, or it is not a registered buffer"""
        mod, name, value = self._leaf_at(target)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return value

    def _leaf_at(self, target: str) -> tuple:
        """(module, name, attribute) at the dotted path ``target``; AttributeError as
        get_submodule's, or naming the missing last part."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{type(mod).__name__} has no attribute `{name}`")
        return mod, name, getattr(mod, name)

    # -- walking the tree ---------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """(name, module) for this module and every descendant, depth first in registration
        order; names are dotted paths under ``prefix``.

        memo:             a set of modules already seen (they and their subtrees are
                          skipped, and the ones yielded are added; PyTorch's)
        remove_duplicate: True (default) yields a module reached along several paths once,
                          under its first name; False yields it along every path (memo
                          unused)
        """
        if not remove_duplicate:
            yield prefix, self
        else:
            memo = set() if memo is None else memo
            if self in memo:
                return
            memo.add(self)
            yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, prefix + ("." if prefix else "") + name,
                                           remove_duplicate)

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
    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An OrderedDict name -> tensor of every parameter and persistent buffer, PyTorch's
        structure: pre-hooks, ``_save_to_state_dict`` of each module, post-hooks.

        The tensors share storage with the module (detached unless ``keep_vars``); copy them
        (or save them) before changing the module if you need a snapshot. The dict carries
        ``_metadata``: {module prefix without its dot: {"version": module._version}}, as
        PyTorch's. ``destination, prefix, keep_vars`` may also be given positionally.
        """
        if args:
            if len(args) > 3:
                raise TypeError(f"state_dict: expected at most 3 positional arguments "
                                f"(destination, prefix, keep_vars), got {len(args)}")
            destination, prefix, keep_vars = (args + (destination, prefix, keep_vars)[
                len(args):])[:3]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in list(_hooks(self, "_state_dict_pre_hooks").values()):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".",
                             keep_vars=keep_vars)
        for hook in list(_hooks(self, "_state_dict_hooks").values()):
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                destination = result
        return destination

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """Put this module's own parameters and persistent buffers (not its children's) into
        ``destination`` under ``prefix + name``; a subclass may override it."""
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent:
                destination[prefix + name] = b if keep_vars else b.detach()

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` runs before this module's state_dict; returns a
        handle whose ``remove()`` unregisters it."""
        return _register(self, "_state_dict_pre_hooks", hook)

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` runs after this module's
        state_dict (it may change the dict in place, or return a new one); returns a handle."""
        return _register(self, "_state_dict_hooks", hook)

    _register_state_dict_hook = register_state_dict_post_hook

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False):
        """``hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` (``hook(module, ...)`` with ``with_module``) runs at the start of this
        module's ``_load_from_state_dict``, and may edit ``state_dict``; returns a handle."""
        if with_module:
            module = self
            return _register(self, "_load_state_dict_pre_hooks",
                             lambda *args: hook(module, *args))
        return _register(self, "_load_state_dict_pre_hooks", hook)

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before this module loads; returns a handle."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` after this module and its children loaded; it
        may edit ``incompatible_keys.missing_keys`` / ``.unexpected_keys`` in place (and must
        return None); returns a handle."""
        return _register(self, "_load_state_dict_post_hooks", hook)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy tensors (clgrad Tensors or NumPy arrays) from ``state_dict`` into the module,
        PyTorch's structure: for this module and then each descendant (depth first),
        ``_load_from_state_dict(sub_dict, prefix, local_metadata, True, missing_keys,
        unexpected_keys, error_msgs)`` (a subclass may override it, e.g. to convert an older
        ``local_metadata["version"]``), then its load_state_dict post-hooks.
        ``local_metadata`` comes from ``state_dict._metadata`` (empty without it).

        Every shape must match; values of another dtype are cast to the parameter's or
        buffer's dtype as they are copied (PyTorch's ``copy_``), and with ``assign=True`` the
        checkpoint's tensor is put in as it is, dtype included (PyTorch's). With
        ``strict`` a missing or unexpected key is an error; without it they are only reported.
        ``assign=True`` puts the checkpoint's tensors into the module instead of copying
        (a Parameter keeps the module parameter's requires_grad), as PyTorch.
        Returns: _IncompatibleKeys(missing_keys, unexpected_keys).
        Raises:  TypeError for a state_dict that is not a mapping; RuntimeError listing every
                 missing/unexpected key (strict) and every shape mismatch. The
                 default _load_from_state_dict defers its copies to the end, so nothing it
                 would copy is copied when any check fails (an override's own writes are
                 its own).
        """
        if not hasattr(state_dict, "items") or not hasattr(state_dict, "keys"):
            raise TypeError(f"load_state_dict: expected a dict of tensors, got "
                            f"{type(state_dict).__name__}")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)  # _load_from_state_dict may edit its copy
        if metadata is not None:
            state_dict._metadata = metadata
        outer = getattr(_loading, "pending", None)
        _loading.pending = pending = []
        try:
            def load(module, local, prefix=""):
                meta = dict(metadata.get(prefix[:-1], {})) if metadata is not None else {}
                if assign:
                    meta["assign_to_params_buffers"] = True
                module._load_from_state_dict(local, prefix, meta, True, missing, unexpected,
                                             errors)
                for name, child in module._modules.items():
                    if child is not None:
                        child_prefix = prefix + name + "."
                        load(child, {k: v for k, v in local.items()
                                     if k.startswith(child_prefix)}, child_prefix)
                keys = _IncompatibleKeys(missing, unexpected)
                for hook in list(_hooks(module, "_load_state_dict_post_hooks").values()):
                    if hook(module, keys) is not None:
                        raise RuntimeError("load_state_dict: a load_state_dict post-hook "
                                           "returned a value; it should edit "
                                           "incompatible_keys in place and return None")

            load(self, state_dict)
        finally:
            _loading.pending = outer
        if strict:
            if unexpected:
                errors.insert(0, "unexpected key(s) in state_dict: " +
                              ", ".join(map(repr, unexpected)))
            if missing:
                errors.insert(0, "missing key(s) in state_dict: " +
                              ", ".join(map(repr, missing)))
        if errors:
            raise RuntimeError(f"load_state_dict: error(s) loading state_dict for "
                               f"{type(self).__name__}:\n\t" + "\n\t".join(errors))
        with no_grad():
            for module, name, dst, src, to_assign in pending:
                _store(module, name, dst, src, to_assign)
        return _IncompatibleKeys(missing, unexpected)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """Load this module's own parameters and persistent buffers (not its children's)
        from ``state_dict`` (keys ``prefix + name``), PyTorch's signature: load_state_dict
        pre-hooks first; a key it lacks goes to ``missing_keys`` (when ``strict``), a key
        under ``prefix`` that names nothing here to ``unexpected_keys``; shape and type
        problems to ``error_msgs`` (another dtype is cast when copied). Inside
        load_state_dict the copies happen once every module was checked; called directly,
        at once. ``local_metadata["version"]`` is the saved
        ``_version``; ``local_metadata.get("assign_to_params_buffers")`` means assign.
        """
        for hook in list(_hooks(self, "_load_state_dict_pre_hooks").values()):
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        local = {name: t for name, t in self._parameters.items() if t is not None}
        local.update((name, b) for name, b in self._buffers.items()
                     if b is not None and name not in self._non_persistent)
        assign = bool(local_metadata.get("assign_to_params_buffers", False))
        pending = getattr(_loading, "pending", None)
        for name, dst in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            src = state_dict[key]
            if not isinstance(src, (Tensor, np.ndarray)):
                error_msgs.append(f"{key}: expected a Tensor or ndarray, got "
                                  f"{type(src).__name__}")
                continue
            if tuple(src.shape) != tuple(dst.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{tuple(src.shape)} from checkpoint, the shape in current "
                                  f"model is {tuple(dst.shape)}")
                continue
            if pending is not None:
                pending.append((self, name, dst, src, assign))
            else:
                with no_grad():
                    _store(self, name, dst, src, assign)
        if strict:
            for key in state_dict:
                if key.startswith(prefix):
                    first = key[len(prefix):].split(".", 1)
                    if (first[0] not in self._modules) if len(first) > 1 else \
                            (first[0] not in local):
                        unexpected_keys.append(key)

    # -- device and dtype -----------------------------------------------------------------------
    def _apply(self, fn):
        """Replace every parameter's and buffer's data by ``fn(data)``, keeping the objects;
        a gradient becomes ``fn(grad)`` (moved and cast with its tensor, as PyTorch's)."""
        for m in self.modules():
            for store in (m._parameters, m._buffers):
                for name, t in store.items():
                    if t is None:
                        continue
                    new = fn(t.detach())
                    if new is t or (new._storage is t._storage and new._shape == t._shape):
                        continue
                    new = ew.contiguous(new, force_copy=new._base is not None)
                    g = t._grad
                    t._set_data(new)
                    t._grad = None if g is None else fn(g)
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

    def share_memory(self):
        """``share_memory_()`` every parameter and buffer (Hogwild: processes given this
        module train the same weights); returns self.
        Raises:  RuntimeError for a module on a GPU device (see Tensor.share_memory_)"""
        for t in (*self.parameters(), *self.buffers()):
            t.share_memory_()
        return self

    def float(self):
        """Cast floating parameters and buffers to float32. Returns self."""
        return self.to("float32")

    def double(self):
        """Cast floating parameters and buffers to float64. Returns self."""
        return self.to("float64")

    def half(self):
        """Cast floating parameters and buffers to float16. Returns self."""
        return self.to("float16")

    def bfloat16(self):
        """Cast floating parameters and buffers to bfloat16. Returns self."""
        return self.to("bfloat16")

    def type(self, dst_type):
        """Cast EVERY parameter and buffer to ``dst_type`` (a dtype, or a name Tensor.type
        takes: "torch.DoubleTensor"), in place, integer ones included (a BatchNorm's
        ``num_batches_tracked`` too): unlike ``to(dtype)``/``double()``, which cast only the
        floating ones (PyTorch's rule). Returns self.
        Raises:  TypeError/ValueError for an unknown type (Tensor.type's)"""
        return self._apply(lambda t: t.type(dst_type))

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

def _forget(module, name, keep=None):
    """Remove ``name`` from the module's attributes and registries (before re-registering),
    except from ``keep``: the registry it goes back to, where it keeps its place."""
    module.__dict__.pop(name, None)
    for store in (module._parameters, module._buffers, module._modules):
        if store is not keep:
            store.pop(name, None)
    if keep is not module._buffers:
        module._non_persistent.discard(name)


_hooks = module_hooks.store  # the hooks OrderedDict of a module, made on first use


def _register(module, store, hook):
    """Register ``hook`` in the module's OrderedDict ``store`` (state-dict hooks)."""
    return module_hooks.register(module_hooks.store(module, store), hook, store[1:-1])


def _store(module, name, dst, src, assign):
    """Load ``src`` into ``module.name`` (now ``dst``): copied in, or with ``assign`` put in its
    place (a Parameter stays a Parameter with dst's requires_grad, as PyTorch)."""
    if not assign:
        _copy_into(dst, src)
        return
    if isinstance(src, np.ndarray):
        src = from_numpy(np.ascontiguousarray(src), device=dst._storage.device)
    if isinstance(dst, Parameter):
        if isinstance(src, Parameter):
            src.requires_grad_(dst.requires_grad)
        else:
            src = Parameter(src.detach(), requires_grad=dst.requires_grad)
    setattr(module, name, src)


def _copy_into(dst, src):
    """Copy ``src`` (a checked Tensor or ndarray of dst's shape) into ``dst``, cast to dst's
    dtype first (PyTorch's ``param.copy_(input_param)``)."""
    if isinstance(src, np.ndarray):
        host = np.float32 if dst.dtype.name == "bfloat16" else dst.dtype.np  # (np: its bits)
        src = from_numpy(np.ascontiguousarray(src, dtype=host), device=dst._storage.device)
    if src is dst:
        return
    if src._storage.device is not dst._storage.device:  # map_location="cpu" on a GPU machine
        # cast on src's device first: dst's device may lack src's dtype (float64)
        src = ew.to_device(ew.to(src, dst.dtype), dst._storage.device)
    ew.copy_raw(dst, src)  # converts the dtype (one copy, no cast copy first)
    bump_version(dst)


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
                                        "double", "bfloat16")


def _indent(text: str) -> str:
    return text.replace("\n", "\n  ")
