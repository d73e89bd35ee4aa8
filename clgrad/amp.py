"""``torch.amp`` (and ``torch.autocast``, ``torch.cuda.amp``): mixed precision, accepted and
run in full precision.

clgrad has no autocast: inside ``autocast(...)`` every op runs in its tensors' own dtypes
(float32 stays float32), which gives the same results as PyTorch with ``enabled=False``.
``GradScaler`` therefore behaves as PyTorch's disabled scaler: ``scale(loss)`` returns loss,
``step(optimizer)`` calls ``optimizer.step()``, ``unscale_`` and ``update`` do nothing,
``get_scale()`` is 1.0 and ``state_dict()`` is empty. Loss scaling exists to keep float16
gradients from underflowing; with float32 gradients there is nothing to scale.
"""
from __future__ import annotations

import functools

__all__ = ["autocast", "GradScaler", "is_autocast_available", "custom_fwd", "custom_bwd"]


class autocast:  # noqa: N801  (PyTorch's name)
    """Context manager and decorator; ops inside run in their tensors' dtypes (see the module
    docstring). Arguments are PyTorch's and are stored."""

    def __init__(self, device_type: str = "cuda", dtype=None, enabled: bool = True,
                 cache_enabled=None):
        self.device_type, self.fast_dtype = device_type, dtype
        self._enabled, self.cache_enabled = enabled, cache_enabled

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


def is_autocast_available(device_type: str) -> bool:
    """False: clgrad never lowers precision automatically."""
    return False


def is_autocast_enabled(device_type=None) -> bool:
    """False (see autocast)."""
    return False


def custom_fwd(fwd=None, *, device_type="cuda", cast_inputs=None):
    """Decorator for a Function's forward under autocast: returns it unchanged."""
    if fwd is None:
        return lambda f: f
    return fwd


def custom_bwd(bwd=None, *, device_type="cuda"):
    """Decorator for a Function's backward under autocast: returns it unchanged."""
    if bwd is None:
        return lambda f: f
    return bwd


class GradScaler:
    """PyTorch's GradScaler as when disabled (see the module docstring): no scaling."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device = device
        self._init_scale, self._growth_factor = init_scale, growth_factor
        self._backoff_factor, self._growth_interval = backoff_factor, growth_interval

    def scale(self, outputs):
        """``outputs`` unchanged (a tensor or a structure of tensors)."""
        return outputs

    def unscale_(self, optimizer) -> None:
        """Nothing to undo."""

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` (no inf/NaN skipping: nothing was scaled)."""
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None) -> None:
        """Nothing to update."""

    def get_scale(self) -> float:
        """1.0, as a disabled scaler."""
        return 1.0

    def is_enabled(self) -> bool:
        """False: no scaling happens."""
        return False

    def get_growth_factor(self) -> float:
        """The value given (stored)."""
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        """The value given (stored)."""
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        """The value given (stored)."""
        return self._growth_interval

    def state_dict(self) -> dict:
        """{} (a disabled scaler's state)."""
        return {}

    def load_state_dict(self, state_dict) -> None:
        """Accepted and ignored (there is no state)."""


def _cuda_amp_module():
    """``torch.cuda.amp``: the same autocast/GradScaler (PyTorch deprecates this path)."""
    import sys
    import types
    mod = types.ModuleType("clgrad.cuda.amp", "torch.cuda.amp's names: see clgrad.amp")

    class CudaAutocast(autocast):
        """``torch.cuda.amp.autocast(enabled, dtype, cache_enabled)`` (see clgrad.amp)."""

        def __init__(self, enabled=True, dtype=None, cache_enabled=True):
            super().__init__("cuda", dtype, enabled, cache_enabled)
    CudaAutocast.__name__ = "autocast"
    mod.autocast, mod.GradScaler = CudaAutocast, GradScaler
    mod.custom_fwd, mod.custom_bwd = custom_fwd, custom_bwd
    sys.modules[mod.__name__] = mod
    return mod


def compile(model=None, **kwargs):  # noqa: A001  (PyTorch's name)
    """``torch.compile``: see clgrad.capture.compile (mode="reduce-overhead" replays captured
    kernels; other modes return ``model`` unchanged)."""
    from clgrad.capture import compile as _compile
    return _compile(model, **kwargs)
