"""Grad mode: is_grad_enabled, no_grad, enable_grad, set_grad_enabled, inference_mode.

The mode is per thread; each context manager restores the previous mode on exit and, used as a
decorator, enters a fresh context on every call.
"""
from __future__ import annotations

import functools
import threading

__all__ = ["is_grad_enabled", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode"]

class _State(threading.local):
    """Per-thread grad mode and autocast map; the class attributes are each thread's values
    until it sets its own, so a read never misses (``getattr`` with a default on a missing
    attribute raises and catches an AttributeError inside: about 1 µs, paid by every op's
    ``record`` in a thread that never set the mode)."""

    enabled = True
    autocast = None


_state = _State()


# -- grad mode --------------------------------------------------------------------------------
def is_grad_enabled() -> bool:
    """True when ops record Nodes (the default); False inside ``no_grad()``. Per thread."""
    return getattr(_state, "enabled", True)


def _set_enabled(mode: bool):
    _state.enabled = bool(mode)


class _GradMode:
    """Sets grad mode for a ``with`` block, restoring the previous mode on exit. As a
    decorator it enters a fresh context on every call, so recursion and threads are safe."""

    mode = True

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set_enabled(self.mode)
        return self

    def __exit__(self, *exc):
        _set_enabled(self._prev)
        return False

    def _fresh(self):
        return type(self)()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self._fresh():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    """Ops inside record nothing (optimizer updates, evaluation).

    ``with no_grad():``, ``@no_grad()`` or ``@no_grad``.
    """

    mode = False

    def __new__(cls, fn=None):
        return cls()(fn) if fn is not None else super().__new__(cls)


class enable_grad(_GradMode):
    """Turn grad mode back on inside a ``no_grad`` block; ``with``, ``@enable_grad()`` or
    ``@enable_grad``."""

    mode = True

    def __new__(cls, fn=None):
        return cls()(fn) if fn is not None else super().__new__(cls)


class set_grad_enabled(_GradMode):
    """Grad mode ``mode``: for a ``with`` block, around each call of a decorated function, or,
    called as a plain statement, from now on (PyTorch semantics)."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._prev = is_grad_enabled()
        _set_enabled(self.mode)

    def __enter__(self):
        _set_enabled(self.mode)  # the previous mode was taken in __init__
        return self

    def _fresh(self):
        return set_grad_enabled(self.mode)

    def __call__(self, fn):
        _set_enabled(self._prev)  # decorating does not change the mode
        return super().__call__(fn)


# -- inference_mode ---------------------------------------------------------------------------
class inference_mode(_GradMode):
    """PyTorch's inference_mode as a context manager or decorator (``@inference_mode()``,
    ``@inference_mode``): here it is ``no_grad()`` (``inference_mode(False)`` changes nothing).

    Unlike PyTorch, tensors made inside are ordinary tensors, not "inference tensors": they
    may be saved for backward or written in place later, and nothing is faster than under
    no_grad (clgrad has no per-tensor autograd bookkeeping to skip).
    """

    def __new__(cls, mode=True):
        if callable(mode):  # bare @inference_mode
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        self.enabled = bool(mode)

    def __enter__(self):
        self._prev = is_grad_enabled()
        if self.enabled:
            _set_enabled(False)
        return self

    def _fresh(self):
        return type(self)(self.enabled)



# -- autocast state (clgrad.amp.autocast sets it; the ops of its lists read it) -------------
def autocast_dtype(device_type: str):
    """The dtype that autocast runs ``device_type``'s ('cpu' or 'cuda') lower-precision ops
    in, or None when autocast is off for it (the default). Per thread; off while backward
    runs (graph.backward), so a backward formula computes in its operands' dtypes."""
    on = getattr(_state, "autocast", None)
    return on.get(device_type) if on else None


def autocast_state() -> tuple | None:
    """This thread's autocast map as a hashable value, ``((device_type, dtype), ...)``, or
    None when autocast is off (a key of ``compile``'s captures)."""
    on = getattr(_state, "autocast", None)
    return tuple(on.items()) if on else None


def _set_autocast(on: dict | None) -> dict | None:
    """Replace this thread's autocast map {device_type: dtype} (None: off); return the old."""
    prev = getattr(_state, "autocast", None)
    _state.autocast = on
    return prev


class _autocast_off:  # noqa: N801  (a context manager, as no_grad)
    """Autocast off for a ``with`` block (the backward pass), restored on exit."""

    def __enter__(self):
        self._prev = _set_autocast(None)
        return self

    def __exit__(self, *exc):
        _set_autocast(self._prev)
        return False
