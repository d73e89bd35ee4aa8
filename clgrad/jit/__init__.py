"""``torch.jit``'s names that eager programs use: markers and queries, no compiler.

clgrad runs every program eagerly (Python calls, one kernel launch per op). The TorchScript
decorators (``unused``, ``ignore``, ``export``, ``_overload``, ``_overload_method``,
``interface``, ``script_if_tracing``) return what they decorate, unchanged; ``Final`` is
``typing.Final``; ``is_scripting()`` and ``is_tracing()`` are False, so programs take their
eager branch. ``ScriptModule`` is an ``nn.Module`` base class and ``script_method`` a marker, so
old-style TorchScript classes (``class M(torch.jit.ScriptModule)`` with ``@script_method``
methods) run eagerly. ``script`` and ``trace`` raise NotImplementedError (except ``script`` of
a ScriptModule, returned as it is, as PyTorch does): clgrad has no TorchScript compiler or
tracer (there is no IR to compile to; export a model with clgrad.io instead).
"""
from __future__ import annotations

import typing

from clgrad.jit import annotations  # noqa: F401  (torch.jit.annotations)
from clgrad.nn.module import Module

__all__ = ["is_scripting", "is_tracing", "unused", "ignore", "export", "Final", "annotations",
           "script", "trace", "interface", "script_if_tracing", "ScriptModule",
           "ScriptFunction", "Error", "script_method"]

Final = typing.Final


class Error(RuntimeError):
    """``torch.jit.Error``: raised by TorchScript programs; never by clgrad itself."""


class ScriptModule(Module):
    """``torch.jit.ScriptModule`` as a base class: an ``nn.Module`` whose methods (marked with
    ``script_method`` or not) run eagerly, as Python calls; ``__constants__`` and other
    TorchScript class attributes are ignored. Only old-style TorchScript classes that
    subclass it are ScriptModules (``jit.script`` compiles nothing).

    Raises:  NotImplementedError from ``save`` (no TorchScript archive to write; save the
             ``state_dict`` with clgrad.save)
    """

    def save(self, f, **kwargs):
        """Not supported: raises NotImplementedError (clgrad writes no TorchScript archive)."""
        raise NotImplementedError(
            f"ScriptModule.save: clgrad has no TorchScript compiler, so it cannot write "
            f"{type(self).__name__} as a TorchScript archive; save its state_dict with "
            f"clgrad.save")


class ScriptFunction:
    """``torch.jit.ScriptFunction``, for ``isinstance`` checks: no clgrad object is one."""


def is_scripting() -> bool:
    """False: clgrad never compiles a program with TorchScript."""
    return False


def is_tracing() -> bool:
    """False: clgrad never traces a program."""
    return False


def script_method(fn):
    """Marker for a ScriptModule's compiled methods: returns ``fn`` (it runs eagerly)."""
    return fn


def unused(fn):
    """Marker for code TorchScript should skip: returns ``fn`` (a function or a property)."""
    return fn


def ignore(drop=False, **kwargs):
    """Marker, as ``@ignore`` or ``@ignore(drop=True)``: returns the function unchanged."""
    if callable(drop):
        return drop
    return lambda fn: fn


def export(fn):
    """Marker for methods TorchScript should compile too: returns ``fn``."""
    return fn


def interface(obj):
    """Marker for TorchScript interface classes: returns ``obj``."""
    return obj


def script_if_tracing(fn):
    """Returns ``fn`` (it is only scripted when tracing, which clgrad never does)."""
    return fn


_script_if_tracing = script_if_tracing


def _overload(fn):
    """Marker for an overload declaration of a function: returns ``fn``; the definition that
    follows it (the one called) replaces the name as in plain Python."""
    return fn


def _overload_method(fn):
    """Marker for an overload declaration of a method: returns ``fn`` (see _overload)."""
    return fn


def script(obj, *args, **kwargs):
    """Not supported: raises NotImplementedError (clgrad has no TorchScript compiler; run the
    module or function eagerly as it is). A ScriptModule is returned as it is (PyTorch returns
    an already scripted module unchanged; clgrad's run eagerly)."""
    if isinstance(obj, ScriptModule):
        return obj
    raise NotImplementedError(
        f"jit.script: clgrad has no TorchScript compiler, so it cannot compile "
        f"{type(obj).__name__}; call the module or function directly (it runs eagerly)")


def trace(func, example_inputs=None, *args, **kwargs):
    """Not supported: raises NotImplementedError (clgrad has no tracer or graph IR; run the
    module eagerly, or save its weights with clgrad.save)."""
    raise NotImplementedError(
        f"jit.trace: clgrad has no tracer or graph IR, so it cannot trace "
        f"{type(func).__name__}; call it directly (it runs eagerly), or save its state_dict "
        f"with clgrad.save")


def annotate(the_type, the_value):
    """Returns ``the_value`` (TorchScript's type hint for an empty container)."""
    return the_value


__all__ += ["annotate"]
