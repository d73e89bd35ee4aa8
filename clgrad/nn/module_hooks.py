"""Module call hooks, as PyTorch's ``Module._call_impl`` and ``torch.utils.hooks.BackwardHook``.

A module's hooks live in its OrderedDicts (PyTorch's names): ``_forward_pre_hooks``,
``_forward_hooks``, ``_backward_pre_hooks``, ``_backward_hooks``, with the ids of the hooks
registered ``with_kwargs``/``always_call`` in ``_forward_pre_hooks_with_kwargs``,
``_forward_hooks_with_kwargs`` and ``_forward_hooks_always_called``. The global hooks
(``nn.modules.module.register_module_forward_hook`` ...) run before every module's own.

A call with hooks (``call``) runs, as PyTorch:
1. the forward pre-hooks, global first: ``hook(module, args)`` (a non-None result replaces
   args; a non-tuple is wrapped in one), with kwargs ``hook(module, args, kwargs)`` (returns
   None or ``(args, kwargs)``, else RuntimeError);
2. with backward hooks, the tensor arguments pass through an identity Function whose backward
   calls the full backward hooks ``hook(module, grad_input, grad_output)``;
3. forward; then the forward hooks, global first: ``hook(module, args, output)`` or with kwargs
   ``hook(module, args, kwargs, output)``; a non-None result replaces the output;
4. with backward hooks, the tensor outputs pass through an identity Function whose backward
   calls the backward pre-hooks ``hook(module, grad_output)`` (a non-None result replaces
   grad_output) and keeps grad_output for the full hooks.
If forward (or a hook) raises, the ``always_call`` forward hooks that have not run yet run
(their own errors become warnings) and the error propagates.
"""
from __future__ import annotations

import warnings
from collections import OrderedDict

from clgrad.autograd import is_grad_enabled
from clgrad.autograd.function import Function
from clgrad.creation import zeros
from clgrad.tensor import Tensor

__all__ = ["register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook"]

# The global hooks (every module's call); ids from autograd.graph's hook counter.
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict = OrderedDict()
_global_forward_hooks_always_called: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
# The global hooks that make a call go through ``call`` (has_hooks; Module.__call__ reads them
# inline with ``any``, a C call). The dicts are changed in place, never rebound.
GLOBAL_CALL_HOOKS = (_global_forward_pre_hooks, _global_forward_hooks, _global_backward_hooks,
                     _global_backward_pre_hooks)

_STORES = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")
_FLAGS = ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
          "_forward_hooks_always_called")


def store(module, name) -> OrderedDict:
    """The module's OrderedDict ``name`` (one of _STORES or _FLAGS), made on first use."""
    d = module.__dict__.get(name)
    if d is None:
        d = OrderedDict()
        object.__setattr__(module, name, d)
    return d


def register(hooks: OrderedDict, hook, op: str, prepend: bool = False, flags=()):
    """Put ``hook`` into ``hooks`` (first with ``prepend``) and its id into each dict of
    ``flags``; returns the RemovableHandle. Raises TypeError for a non-callable hook."""
    from clgrad.autograd.graph import RemovableHandle, _hook_keys
    if not callable(hook):
        raise TypeError(f"{op}: expected a callable hook, got {type(hook).__name__}")
    key = next(_hook_keys)
    hooks[key] = hook
    if prepend:
        hooks.move_to_end(key, last=False)
    for f in flags:
        f[key] = True
    return RemovableHandle(hooks, key, tuple(flags))


def has_hooks(module) -> bool:
    """True when a call of ``module`` must go through ``call`` (own or global hooks)."""
    d = module.__dict__
    return bool(any(GLOBAL_CALL_HOOKS) or d.get("_forward_pre_hooks")
                or d.get("_forward_hooks") or d.get("_backward_pre_hooks")
                or d.get("_backward_hooks"))


def call(module, args: tuple, kwargs: dict):
    """``module(*args, **kwargs)`` with its hooks (see the module docstring)."""
    d = module.__dict__
    own_pre, own_fwd = d.get("_forward_pre_hooks") or {}, d.get("_forward_hooks") or {}
    pre_kw = d.get("_forward_pre_hooks_with_kwargs") or {}
    fwd_kw = d.get("_forward_hooks_with_kwargs") or {}
    always = d.get("_forward_hooks_always_called") or {}
    result, called = None, set()
    try:
        for key, hook in (*_global_forward_pre_hooks.items(), *own_pre.items()):
            if key in pre_kw:
                got = hook(module, args, kwargs)
                if got is not None:
                    if not (isinstance(got, tuple) and len(got) == 2):
                        raise RuntimeError(f"forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {got}.")
                    args, kwargs = got
            else:
                got = hook(module, args)
                if got is not None:
                    args = got if isinstance(got, tuple) else (got,)
        full = [*_global_backward_hooks.values(), *(d.get("_backward_hooks") or {}).values()]
        pre = [*_global_backward_pre_hooks.values(),
               *(d.get("_backward_pre_hooks") or {}).values()]
        bw = _BackwardHook(module, full, pre) if full or pre else None
        if bw is not None:
            args = bw.setup_input_hook(args)
        result = module.forward(*args, **kwargs)
        for key, hook in (*_global_forward_hooks.items(), *own_fwd.items()):
            if key in always or key in _global_forward_hooks_always_called:
                called.add(key)
            if key in fwd_kw or key in _global_forward_hooks_with_kwargs:
                got = hook(module, args, kwargs, result)
            else:
                got = hook(module, args, result)
            if got is not None:
                result = got
        if bw is not None:
            if not isinstance(result, (Tensor, tuple)):
                warnings.warn(f"For backward hooks to be called, module output should be a "
                              f"Tensor or a tuple of Tensors but received {type(result)}",
                              stacklevel=3)
            result = bw.setup_output_hook(result)
        return result
    except Exception:
        for key, hook in (*_global_forward_hooks.items(), *own_fwd.items()):
            is_global = key in _global_forward_hooks_always_called
            if not (is_global or key in always) or key in called:
                continue
            try:
                got = (hook(module, args, kwargs, result) if key in fwd_kw and not is_global
                       else hook(module, args, result))
                if got is not None:
                    result = got
            except Exception as e:  # noqa: BLE001  (PyTorch: a warning, the first error wins)
                warnings.warn(f"{'global ' if is_global else ''}module forward hook with "
                              f"``always_call=True`` raised an exception that was silenced as "
                              f"another error was raised in forward: {e}", stacklevel=3)
        raise


class BackwardHookFunction(Function):
    """Identity on tensors; backward hands the gradients to ``on_grad`` (which may replace
    them): where module backward hooks see a module's grad_output and grad_input."""

    @staticmethod
    def forward(ctx, on_grad, *tensors):
        ctx.on_grad = on_grad
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        ctx.set_materialize_grads(False)
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        return (None, *ctx.on_grad(grads))


class _BackwardHook:
    """PyTorch's torch.utils.hooks.BackwardHook: one per call of a module with backward
    hooks; links the gradient captured at the outputs with the one at the inputs."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module, self.user_hooks, self.user_pre_hooks = module, user_hooks, user_pre_hooks
        self.grad_outputs = None
        self.n_outputs = self.n_inputs = -1
        self.output_index = self.input_index = None

    @staticmethod
    def _pack(index, values, size):
        res = [None] * size
        for i, v in zip(index, values):
            res[i] = v
        return tuple(res)

    def _apply(self, on_grad, args):
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in index]
        if not (is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return args, None
        new = BackwardHookFunction.apply(on_grad, *tensors)
        out = list(args)
        for i, t in zip(index, new):
            out[i] = t
        return (tuple(out) if type(args) is tuple else type(args)(*out)), index

    def setup_input_hook(self, args):
        # shapes, dtypes and devices only: holding the inputs would keep their memory alive
        # until backward (only the zeros for an input without a gradient need them)
        like = [(a.shape, a.dtype, a._storage.device) for a in args if isinstance(a, Tensor)]

        def on_grad(grad_input):
            if self.grad_outputs is None:  # the gradient did not pass through the outputs
                return grad_input
            # PyTorch's hook sees zeros for an input that got no gradient (the Function's
            # materialized gradients), None only for a non-tensor argument
            grad_input = [zeros(shape, dtype=dt, device=dev) if g is None else g
                          for g, (shape, dt, dev) in zip(grad_input, like)]
            res = self._pack(self.input_index, grad_input, self.n_inputs)
            for hook in self.user_hooks:
                out = hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError(f"Backward hook returned an invalid number of "
                                       f"grad_input, got {len(out)}, but expected {len(res)}")
                res = out
            self.grad_outputs = None
            return tuple(res[i] for i in self.input_index)

        res, self.input_index = self._apply(on_grad, args)
        self.n_inputs = len(args)
        return res

    def setup_output_hook(self, result):
        def on_grad(grad_output):
            self.grad_outputs = self._pack(self.output_index, grad_output, self.n_outputs)
            for hook in self.user_pre_hooks:
                got = hook(self.module, self.grad_outputs)
                if got is None:
                    continue
                if len(got) != len(self.grad_outputs):
                    raise RuntimeError(f"Backward pre hook returned an invalid number of "
                                       f"grad_output, got {len(got)}, but expected "
                                       f"{len(self.grad_outputs)}")
                self.grad_outputs = tuple(got)
            local = self.grad_outputs
            if self.input_index is None:  # no input requires grad: the hooks run here
                warnings.warn("Full backward hook is firing when gradients are computed with "
                              "respect to module outputs since no inputs require gradients.",
                              stacklevel=2)
                grad_inputs = (None,) * self.n_inputs
                for hook in self.user_hooks:
                    got = hook(self.module, grad_inputs, self.grad_outputs)
                    if got is not None and not (isinstance(got, tuple) and
                                                all(g is None for g in got)):
                        raise RuntimeError("Backward hook for Modules where no input requires "
                                           "gradient should always return None or None for "
                                           "all gradients.")
                self.grad_outputs = None
            return tuple(local[i] for i in self.output_index)

        single = not isinstance(result, tuple)
        args = (result,) if single else result
        res, self.output_index = self._apply(on_grad, args)
        self.n_outputs = len(args)
        return res[0] if single else res


def _register_global(hooks, hook, op, flags=()):
    return register(hooks, hook, op, flags=flags)


def register_module_forward_pre_hook(hook):
    """A forward pre-hook ``hook(module, args)`` for every module, before their own; returns a
    handle whose ``remove()`` unregisters it. Raises TypeError for a non-callable hook."""
    return _register_global(_global_forward_pre_hooks, hook, "register_module_forward_pre_hook")


def register_module_forward_hook(hook, *, with_kwargs: bool = False,
                                  always_call: bool = False):
    """A forward hook ``hook(module, args, output)`` (``with_kwargs``: ``hook(module, args,
    kwargs, output)``) for every module, before their own; a non-None result replaces the
    output. ``always_call``: also when forward raises. Returns a handle with ``remove()``."""
    flags = [f for f, on in ((_global_forward_hooks_with_kwargs, with_kwargs),
                             (_global_forward_hooks_always_called, always_call)) if on]
    return _register_global(_global_forward_hooks, hook, "register_module_forward_hook", flags)


def register_module_full_backward_pre_hook(hook):
    """A backward pre-hook ``hook(module, grad_output)`` for every module (see
    ``Module.register_full_backward_pre_hook``). Returns a handle with ``remove()``."""
    return _register_global(_global_backward_pre_hooks, hook,
                            "register_module_full_backward_pre_hook")


def register_module_full_backward_hook(hook):
    """A backward hook ``hook(module, grad_input, grad_output)`` for every module (see
    ``Module.register_full_backward_hook``). Returns a handle with ``remove()``."""
    return _register_global(_global_backward_hooks, hook, "register_module_full_backward_hook")
