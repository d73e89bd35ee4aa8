"""LazyModuleMixin (PyTorch's torch.nn.modules.lazy): modules whose input size is inferred at
the first call.

A lazy module is its eager class (``LazyLinear`` is a ``Linear``) whose parameters and buffers
that depend on the input size are ``UninitializedParameter``/``UninitializedBuffer``. Two hooks
do the rest, as PyTorch's:

- a forward pre-hook runs ``initialize_parameters(*args)`` on the first call (the class's:
  infer the size, ``materialize`` each tensor, then the eager class's initialisation), removes
  both hooks and turns the object into ``cls_to_become`` (``Linear``);
- a load_state_dict pre-hook materialises each uninitialised tensor with the checkpoint's
  shape, so a checkpoint loads into a module that never ran.

``state_dict`` before the first call holds the uninitialised objects themselves (PyTorch's).
An optimizer may be made before the first call: it holds the same objects, which materialise
in place.
"""
from __future__ import annotations

from clgrad.autograd import no_grad
from clgrad.nn.module import is_lazy

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Put before the eager class: ``class LazyLinear(LazyModuleMixin, Linear)``; the class
    defines ``initialize_parameters(input)`` and ``cls_to_become``."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars or is_lazy(p) else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent:
                destination[prefix + name] = b if keep_vars or is_lazy(b) else b.detach()

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs):
        """Materialise each uninitialised tensor that the checkpoint holds, with its shape."""
        loaded = False
        for store in (self._parameters, self._buffers):
            for name, t in store.items():
                key = prefix + name
                if t is None or not is_lazy(t) or key not in state_dict:
                    continue
                src = state_dict[key]
                if is_lazy(src):
                    continue
                with no_grad():
                    t.materialize(tuple(src.shape))
                loaded = True
        if loaded:
            self._sizes_from_params()

    def _sizes_from_params(self):
        """Set the inferred size attributes (in_features ...) from materialised parameters
        (after a load; PyTorch leaves them 0)."""

    def initialize_parameters(self, *args, **kwargs):
        """Infer the sizes from the first input and materialise (the lazy class's)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{type(self).__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this module (not its children) is uninitialised."""
        return any(t is not None and is_lazy(t) for store in (self._parameters, self._buffers)
                   for t in store.values())

    def _infer_parameters(self, module, args, kwargs=None):
        """The first call's pre-hook: initialise, drop the hooks, become ``cls_to_become``."""
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {type(module).__name__} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        del module._initialize_hook
        del module._load_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with "
                           "`DataParallel`. Run a dummy forward pass to correctly initialize "
                           "the modules")
