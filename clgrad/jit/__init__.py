"""``torch.jit``'s names that eager programs use: markers and queries, no compiler.

clgrad runs every program eagerly (Python calls, one kernel launch per op). The TorchScript
decorators (``unused``, ``ignore``, ``export``, ``_overload``, ``_overload_method``,
``interface``, ``script_if_tracing``) return what they decorate, unchanged; ``Final`` is
``typing.Final``; ``is_scripting()`` and ``is_tracing()`` are False, so programs take their
eager branch. ``script`` and ``trace`` raise NotImplementedError: clgrad has no TorchScript
compiler or tracer (there is no IR to compile to; export a model with clgrad.io instead).
"""
from __future__ import annotations

import typing

from clgrad.jit import annotations  # noqa: F401  (torch.jit.annotations)

__all__ = ["is_scripting", "is_tracing", "unused", "ignore", "export", "Final", "annotations",
           "script", "trace", "interface", "script_if_tracing", "ScriptModule",
           "ScriptFunction", "Error"]

Final = typing.Final


class Error(RuntimeError):
    """``torch.jit.Error``: raised by TorchScript programs; never by clgrad itself."""


class ScriptModule:
    """``torch.jit.ScriptModule``, for ``isinstance`` checks: no clgrad object is one."""


class ScriptFunction:
    """``torch.jit.ScriptFunction``, for ``isinstance`` checks: no clgrad object is one."""


def is_scripting() -> bool:
    """False: clgrad never compiles a program with TorchScript."""
    return False


def is_tracing() -> bool:
    """False: clgrad never traces a program."""
    return False


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
    module or function eagerly as it is)."""
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
