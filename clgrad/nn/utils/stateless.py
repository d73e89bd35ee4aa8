"""``torch.nn.utils.stateless``: call a module with other tensors in place of its parameters
and buffers (``functional_call``; ``clgrad.func.functional_call`` is the same call).

For the call, each named tensor ('layer1.0.weight') is swapped into its submodule's
``_parameters``/``_buffers`` dict (or set as a plain attribute where the name is neither),
bypassing the Parameter type check, exactly as PyTorch's NamedMemberAccessor does; afterwards,
also when the call raises, the originals are put back. The given tensors may be anything:
views, tensors that require grad (so gradients flow to them), slices inside vmap.
"""
from __future__ import annotations

import contextlib
import warnings

from clgrad.nn.module import Module
from clgrad.nn.parallel import DataParallel
from clgrad.tensor import Tensor

__all__ = ["functional_call"]

_MISSING = object()


def functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """``module(*args, **kwargs)`` with ``parameters_and_buffers`` ({'name': Tensor}) in place
    of the module's parameters and buffers of those names (PyTorch's deprecated
    ``torch.nn.utils.stateless.functional_call``; it warns FutureWarning as PyTorch does: use
    ``clgrad.func.functional_call``, which also takes a tuple of dicts).

    Args:
      args: a tuple of positional arguments, or one argument (anything not a tuple).
      tie_weights: names that share one tensor in the module (tied weights) share the value
        given for any of them; different values for two tied names raise ValueError.
      strict: the names must be exactly the module's parameters and buffers (each tied name
        counted), else RuntimeError listing the unexpected and missing keys.
    Writes: a module that assigns a new tensor to a swapped attribute during the call
      (``self.foo = self.foo + 1``) leaves it in ``parameters_and_buffers`` under that name;
      in-place writes land in the given tensors. The module is as before after the call.
    Raises: ValueError (tied names given different values), RuntimeError (strict key
      mismatch, a DataParallel module), TypeError (a value that is not a Tensor or None),
      AttributeError (a path through a submodule that does not exist).
    """
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                     tie_weights=True, strict=False):
    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    if not isinstance(module, Module):
        raise TypeError(f"functional_call: expected a clgrad.nn.Module, got "
                        f"{type(module).__name__}")
    kwargs = {} if kwargs is None else kwargs
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _reparametrize(module, parameters_and_buffers, tie_weights, strict):
        return module(*args, **kwargs)


def named_tensors(module: Module, prefix: str = ""):
    """(name, tensor) for every parameter then every buffer of the tree, tied ones under each
    of their names (PyTorch's ``remove_duplicate=False``); None entries skipped."""
    for store in ("_parameters", "_buffers"):
        yield from _walk(module, prefix, store)


def _walk(module, prefix, store):
    for name, t in getattr(module, store).items():
        if t is not None:
            yield prefix + name, t
    for name, m in module._modules.items():
        if m is not None:
            yield from _walk(m, f"{prefix}{name}.", store)


def _untie(module, given: dict) -> dict:
    """``given`` with each tied name's value copied to the names it is tied to."""
    groups = {}
    for name, t in named_tensors(module):
        groups.setdefault(id(t), set()).add(name)
    tied = {n: names for names in groups.values() if len(names) > 1 for n in names}
    out = dict(given)
    for name in [n for n in given if n in tied]:
        named = sorted(tied[name] & set(given))
        if len({id(given[n]) for n in named}) != 1:
            raise ValueError(f"functional_call got multiple values for keys "
                             f"{sorted(tied[name])}, which are tied. Consider using "
                             f"tie_weights=False")
        for other in tied[name]:
            out[other] = given[name]
    return out


@contextlib.contextmanager
def _reparametrize(module, given, tie_weights, strict):
    values = _untie(module, given) if tie_weights else given
    if strict:
        valid = {n for n, _ in named_tensors(module)}
        missing, unexpected = sorted(valid - set(values)), sorted(set(values) - valid)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                type(module).__name__, "\n\t".join(msgs)))
    orig = {}
    try:
        for name, t in values.items():
            orig[name] = _swap(module, name, t)
        yield
    finally:
        now = {name: _swap(module, name, t) for name, t in orig.items()}
        given.update({k: now[k] for k in given if k in now and now[k] is not _MISSING})


def _submodule(module, path):
    for attr in path.split(".") if path else ():
        try:
            sub = getattr(module, attr)
        except AttributeError as ex:
            raise AttributeError(f"{type(module).__name__} has no attribute `{attr}`") from ex
        if not isinstance(sub, Module):
            raise TypeError(f"submodule `{path}`: {sub} is not an instance of torch.nn.Module")
        module = sub
    return module


def _swap(module, name, tensor):
    """Put ``tensor`` (``_MISSING``: remove) at ``name``; return what was there."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    path, _, attr = name.rpartition(".")
    mod = _submodule(module, path)
    for store in (mod._parameters, mod._buffers):
        if attr in store:
            orig = store[attr]
            if tensor is _MISSING:
                del store[attr]
            else:
                store[attr] = tensor
            return orig
    orig = getattr(mod, attr, _MISSING)
    if orig is not _MISSING and orig is not None and not isinstance(orig, Tensor):
        raise TypeError(f"attribute `{attr}`: {orig} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        setattr(mod, attr, tensor)
    elif orig is not _MISSING or attr in mod.__dict__:
        delattr(mod, attr)
    return orig
