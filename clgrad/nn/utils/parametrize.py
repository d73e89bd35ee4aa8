"""torch.nn.utils.parametrize: a parameter or buffer computed from others on every access.

``register_parametrization(module, "weight", P)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` (a ParametrizationList holding P) and makes
``module.weight`` a property that returns ``P(original)``; as PyTorch, the module's class is
swapped for a subclass named ``Parametrized<Class>`` that carries the property, so the
state_dict keys are PyTorch's (``parametrizations.weight.original``, or ``original0``,
``original1`` ... when P's ``right_inverse`` returns several tensors) and checkpoints load in
either framework. Source: torch/nn/utils/parametrize.py (PyTorch 2.14), followed step by step.
"""
from __future__ import annotations

import collections.abc
import copyreg
from contextlib import contextmanager
from copy import deepcopy

from clgrad.autograd import no_grad
from clgrad.nn.containers import ModuleDict, ModuleList
from clgrad.nn.module import Module, Parameter
from clgrad.ops import elementwise as ew
from clgrad.ops._util import bump_version
from clgrad.tensor import Tensor

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached():
    """Inside this block a parametrized tensor is computed once, on its first access, and
    reused (keyed by module and name); the values are dropped when the outermost block exits.
    Use it where a forward reads a parametrized weight several times (an RNN's recurrent
    kernel, shared weights)."""
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor (``module.parametrizations[name]``), in order, and
    the tensor(s) they start from: ``original`` when the first parametrization's
    ``right_inverse`` returns one tensor (or it has none: the identity), else ``original0``,
    ``original1`` ... Made by register_parametrization, not by users.

    Calling it computes ``self[-1](...self[1](self[0](original)))``.
    Raises:  ValueError (unless ``unsafe``) when the composition changes the tensor's shape or
             dtype, when ``right_inverse`` returns something else than a tensor or a sequence
             of tensors, or one tensor of another dtype or device (PyTorch's checks, messages)
    """

    def __init__(self, modules, original: Tensor, unsafe: bool = False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = tuple(original.shape), original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change "
                                 f"the dtype.\noriginal.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change "
                                 f"the device.\noriginal.device: {original.device}\n"
                                 f"right_inverse(original).device: {new.device}")
            with no_grad():
                _maybe_set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of the "
                                     f"sequence with type {type(originali).__name__}.")
                if isinstance(original, Parameter):
                    originali = Parameter(originali.detach(), original.requires_grad)
                originali.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            Z = self()
            if not isinstance(Z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(Z).__name__}.")
            if Z.dtype != dtype:
                raise ValueError(f"Registering a parametrization may not change the dtype of "
                                 f"the tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized dtype: {dtype}\nparametrized dtype: "
                                 f"{Z.dtype}")
            if tuple(Z.shape) != shape:
                raise ValueError(f"Registering a parametrization may not change the shape of "
                                 f"the tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized shape: {original.shape}\n"
                                 f"parametrized shape: {Z.shape}")

    def right_inverse(self, value: Tensor) -> None:
        """Run the ``right_inverse`` of each parametrization, last registered first, on
        ``value`` and store the result in ``original`` (in place: the same Parameter object,
        so an optimizer holding it keeps working) or in ``original0``, ``original1`` ...
        Raises:  RuntimeError when a parametrization has no right_inverse; ValueError for a
                 result of another dtype, type or length than the originals (PyTorch's)"""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       f"implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _maybe_set(self.original, value)
                return
            if not isinstance(value, collections.abc.Sequence):
                raise ValueError(f"'right_inverse' must return a sequence of tensors. Got "
                                 f"{type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of length "
                                 f"{self.ntensors}. Got a sequence of length {len(value)}.")
            for i, tensor in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not isinstance(tensor, Tensor):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. "
                                     f"Got element {i} of type {type(tensor).__name__}.")
                if original_i.dtype != tensor.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                     f"{tensor.dtype} while `original{i}` has dtype "
                                     f"{original_i.dtype}")
                _maybe_set(original_i, tensor)

    def forward(self) -> Tensor:
        """The parametrized tensor: the parametrizations applied in order to the originals."""
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` (a parameter or buffer, or an already parametrized name)
    the output of ``parametrization``: reading it returns ``parametrization(original)``,
    assigning a tensor to it calls ``right_inverse`` (when the parametrizations define it).
    Registering again on the same name chains the parametrizations (the new one applied last).

    The first registration on a module swaps its class for ``Parametrized<Class>`` and adds
    ``module.parametrizations`` (a ModuleDict of ParametrizationList); the original tensor is
    ``module.parametrizations.<tensor_name>.original`` (the same Parameter object: an
    optimizer that holds it keeps training it) or ``original0``, ``original1`` ... when
    ``right_inverse`` returns several tensors (add those to an optimizer yourself). The
    parametrization takes the module's training mode.
    ``unsafe=True`` skips the checks that the parametrization keeps shape and dtype.
    Returns: module.
    Raises:  ValueError when ``tensor_name`` names no parameter, buffer or parametrized
             tensor, and the checks of ParametrizationList (PyTorch's messages)
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_chained(module, tensor_name, parametrization)
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization on ``tensor_name`` (on any tensor when None)."""
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo register_parametrization on ``tensor_name``: it becomes a parameter (or buffer)
    again, holding its current parametrized value (``leave_parametrized=True``, the same
    Parameter object as ``original``, so optimizers keep it) or the unparametrized
    ``original``. The last removal restores the module's class and drops
    ``module.parametrizations``.
    Returns: module.
    Raises:  ValueError when ``tensor_name`` is not parametrized, or for
             ``leave_parametrized=False`` with several originals (PyTorch's messages)"""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _maybe_set(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a "
                             "tensor that is parametrized in terms of a sequence of tensors.")
        t = getattr(module, tensor_name)
        original = Parameter(t.detach()) if t.requires_grad else t
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before register_parametrization swapped it (its type if none)."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Register on ``to_module`` the parametrizations of ``from_module`` (of ``tensor_name``,
    or of all its parametrized tensors) and give them ``from_module``'s originals (the same
    tensor objects, PyTorch's); a missing tensor is created on ``to_module`` first.
    Returns: to_module."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        src = from_module.parametrizations[name]
        for fn in src:
            register_parametrization(to_module, name, fn)
        dst = to_module.parametrizations[name]
        if hasattr(src, "original"):
            dst.original = src.original
        else:
            i = 0
            while hasattr(src, f"original{i}"):
                setattr(dst, f"original{i}", getattr(src, f"original{i}"))
                i += 1
    return to_module


# ---------------------------------------------------------------------------- private helpers

def _check_chained(module, tensor_name, parametrization):
    """PyTorch's checks for a parametrization added to a parametrized tensor: it and its
    right_inverse keep the tensor's shape and dtype."""
    Y = getattr(module, tensor_name)
    X = parametrization(Y)
    if not isinstance(X, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(X).__name__}.")
    _same_as(Y, X, lambda what: (
        f"Registering a parametrization may not change the {what} of the tensor, unless "
        f"the `unsafe` flag is enabled.\nmodule.{tensor_name}.{what}: {getattr(Y, what)}\n"
        f"parametrization(module.{tensor_name}).{what}: {getattr(X, what)}"))
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        Z = parametrization.right_inverse(X)
    except NotImplementedError:
        return
    if not isinstance(Z, Tensor):
        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: "
                         f"{type(Z).__name__}")
    _same_as(Y, Z, lambda what: (
        f"The tensor returned by parametrization.right_inverse must have the same {what} as "
        f"module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
        f"module.{tensor_name}.{what}: {getattr(Y, what)}\nreturned {what}: "
        f"{getattr(Z, what)}"))


def _same_as(want: Tensor, got: Tensor, message) -> None:
    """Raise ValueError(message(what)) when got's dtype or shape differs from want's."""
    for what in ("dtype", "shape"):
        if getattr(got, what) != getattr(want, what):
            raise ValueError(message(what))


def _register_parameter_or_buffer(module, name, X):
    if isinstance(X, Parameter):
        module.register_parameter(name, X)
    else:
        module.register_buffer(name, X)


def _maybe_set(dest: Tensor, src: Tensor) -> None:
    """PyTorch's ``dest.set_(src)``: ``dest`` (the same object) takes ``src``'s storage; a
    view is copied first (clgrad's ``_set_data`` takes roots only). Bumps dest's version."""
    if src is dest:
        return
    src = src.detach()
    if src._base is not None or not src.is_contiguous() or src._offset:
        src = ew.contiguous(src, force_copy=True)
    dest._set_data(src)
    bump_version(dest)


def _inject_new_class(module: Module) -> None:
    """Swap the module's class for ``Parametrized<Class>``, a subclass that will hold the
    properties; pickling it raises (PyTorch: only state_dict serializes), deepcopy works."""
    cls = module.__class__

    def default_deepcopy(self, memo):
        obj = memo.get(id(self), None)
        if obj is not None:
            return obj
        replica = self.__new__(self.__class__)
        memo[id(self)] = replica
        object.__setattr__(replica, "__dict__", deepcopy(self.__dict__, memo))
        for slot in copyreg._slotnames(self.__class__):
            if hasattr(self, slot):
                setattr(replica, slot, deepcopy(getattr(self, slot), memo))
        return replica

    def getstate(self):
        raise RuntimeError("Serialization of parametrized modules is only supported through "
                           "state_dict(). See:\nhttps://pytorch.org/tutorials/beginner/"
                           "saving_loading_models.html#saving-loading-a-general-checkpoint-"
                           "for-inference-and-or-resuming-training")

    dct = {"__getstate__": getstate}
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), dct)


def _inject_property(module: Module, tensor_name: str) -> None:
    """Give the (parametrized) class a property ``tensor_name``: get -> the parametrization's
    value (cached inside ``cached()``), set -> its right_inverse."""
    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))
