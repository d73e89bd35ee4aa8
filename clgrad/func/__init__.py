"""``torch.func`` (functorch's function transforms) over clgrad's autograd tape.

  vmap(func, in_dims=0, out_dims=0, randomness='error', *, chunk_size=None)   a LOOP over
      the mapped dimension, stacking the outputs (clgrad/func/_vmap.py; no batching rules,
      so no speed-up: README "Deliberately different from PyTorch")
  grad, grad_and_value, vjp, jacrev             reverse mode (clgrad/func/_autodiff.py)
  jacfwd, hessian, jvp                          the same numbers computed in reverse mode
                                                (clgrad has no forward-mode AD)
  functional_call(module, dicts, args, kwargs)  a module called with other parameters/buffers
  stack_module_state(models)                    stacked parameters and buffers, for vmap

Derivatives of derivatives (hessian, jvp, grad of grad, grad through parameters that
require grad) use ``clgrad.autograd.grad(..., create_graph=True)``. PyTorch's other torch.func
names (functionalize, linearize, replace_all_batch_norm_modules_, debug_unwrap) raise
AttributeError naming them as not implemented.
"""
from __future__ import annotations

from collections.abc import Sequence

from clgrad.errors import missing_attribute as _missing_attribute
from clgrad.func._autodiff import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from clgrad.func._vmap import vmap
from clgrad.nn.module import Module
from clgrad.nn.utils.stateless import _functional_call
from clgrad.ops.index import stack

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
           "functional_call", "stack_module_state"]


def functional_call(module: Module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """``module(*args, **kwargs)`` with the given tensors in place of its parameters and
    buffers of those names, restored afterwards, also when the call raises (PyTorch's
    ``torch.func.functional_call``).

    ``parameter_and_buffer_dicts``: a dict {'name': Tensor} ('0.weight', 'bn.running_mean'),
    or a tuple/list of such dicts with distinct keys. ``args``: a tuple of positional
    arguments or one argument. ``tie_weights``/``strict`` and what the call writes: as
    ``clgrad.nn.utils.stateless.functional_call`` (clgrad/nn/utils/stateless.py).

    Raises: ValueError for something else than a dict or a sequence of dicts, a key in two
            dicts, two different values for tied names; RuntimeError for strict key mismatches
            (PyTorch's messages).
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        values = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        dicts = parameter_and_buffer_dicts
        if not all(isinstance(d, dict) for d in dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                             "dictionaries")
        counts = {}
        for d in dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             f"functional call is ambiguous")
        values = {k: v for d in dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple "
                         f"of dicts, but got {type(parameter_and_buffer_dicts)}")
    return _functional_call(module, values, args, kwargs, tie_weights=tie_weights,
                            strict=strict)


def stack_module_state(models) -> tuple[dict, dict]:
    """``(params, buffers)``: for M modules of one class, dicts {'name': tensor of shape
    (M, *shape)} stacking each parameter and buffer (PyTorch's
    ``torch.func.stack_module_state``, for ``vmap(functional_call ...)`` over an ensemble).
    Stacked parameters are new leaves (requiring grad when the models' do), unrelated to the
    models' own, so an optimizer can take them.

    Raises: RuntimeError for no models, models of mixed training modes or classes, or a
            parameter that requires grad in some models and not others (PyTorch's messages).
    """
    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def _stacked_leaf(tensors, name):
    flags = {t.requires_grad for t in tensors}
    if len(flags) != 1:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    out = stack([t.detach() for t in tensors])
    return out.requires_grad_() if flags.pop() else out


def __getattr__(name):
    """A torch.func name clgrad lacks: PyTorch's AttributeError, naming it as not
    implemented."""
    raise _missing_attribute(__name__, name)
