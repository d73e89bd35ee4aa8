"""``torch.amp`` (and ``torch.autocast``, ``torch.cuda.amp``): mixed precision.

``autocast(device_type, dtype=float16)`` runs, on tensors of that device type ('cpu': the
OpenCL CPU device, 'cuda': an OpenCL GPU), the ops of PyTorch's lower-precision list that
clgrad has -- matmul, mm, bmm, linear, addmm, baddbmm (and what is built on matmul: einsum,
attention, mv, outer) -- in float16: floating operands other than float64 are cast (the casts
are recorded, so gradients reach the parameters in their own dtype), products are summed in
float32 and rounded once, the result is float16, as PyTorch's. The losses of PyTorch's
float32 list (cross_entropy, nll_loss, mse_loss, l1_loss, smooth_l1_loss, huber_loss,
binary_cross_entropy(_with_logits), kl_div) cast float16 inputs to float32. Backward runs
with autocast off: each formula computes in its saved operands' dtypes.

Differences from PyTorch, each a clear error or stated here:
- autocast('cpu')'s default dtype is bfloat16, which clgrad does not have: an op of the list
  then raises RuntimeError (pass ``dtype=torch.float16``); so does float16 on a device without
  cl_khr_fp16. Other dtypes (float32, float64) warn and disable autocast, as PyTorch's.
- Convolutions are not lowered (clgrad has no float16 convolution): they run in their
  inputs' dtype (float32), where PyTorch's autocast gives float16. Elementwise ops and the
  rest of PyTorch's float32 list run in their inputs' dtypes.

``GradScaler`` behaves as PyTorch's disabled scaler: ``scale(loss)`` returns loss,
``step(optimizer)`` calls ``optimizer.step()``, ``unscale_`` and ``update`` do nothing,
``get_scale()`` is 1.0 and ``state_dict()`` is empty (parameters and their gradients stay
float32; a float16 gradient inside the graph can underflow as without a scaler).
"""
from __future__ import annotations

import functools
import warnings

from clgrad import dtypes
from clgrad.autograd import grad_mode

__all__ = ["autocast", "GradScaler", "is_autocast_available", "custom_fwd", "custom_bwd",
           "is_autocast_enabled", "get_autocast_dtype"]

_DEVICE_TYPES = ("cpu", "cuda")


class autocast:  # noqa: N801  (PyTorch's name)
    """Context manager and decorator: the ops of autocast's list run in ``dtype`` on tensors
    of ``device_type`` ('cpu' or 'cuda') inside (see the module docstring).

    Args:    device_type 'cpu' or 'cuda'; dtype float16 (default: float16 for 'cuda',
             bfloat16 for 'cpu', as PyTorch); enabled False changes nothing;
             cache_enabled is accepted (clgrad casts each time).
    Raises:  RuntimeError for another device_type; (at an op of the list) for bfloat16 or a
             device without float16, see the module docstring.
    """

    def __init__(self, device_type: str = "cuda", dtype=None, enabled: bool = True,
                 cache_enabled=None):
        if device_type not in _DEVICE_TYPES:
            raise RuntimeError(f"autocast: expected device_type 'cpu' or 'cuda', got "
                               f"{device_type!r}")
        self.device_type, self.fast_dtype = device_type, dtype
        self._enabled, self.cache_enabled = bool(enabled), cache_enabled
        self._dtype = None  # what the ops see: float16, "bfloat16" (refused), None (off)
        if self._enabled:
            if dtype is None:
                self._dtype = dtypes.float16 if device_type == "cuda" else "bfloat16"
            elif dtypes.to_dtype(dtype) is dtypes.float16:
                self._dtype = dtypes.float16
            else:
                warnings.warn(f"In {device_type} autocast, but the target dtype "
                              f"{dtypes.to_dtype(dtype)} is not supported (float16 is). "
                              f"Disabling autocast.", UserWarning, stacklevel=2)
                self._enabled = False

    def __enter__(self):
        on = dict(grad_mode._state.__dict__.get("autocast") or {})
        if self._enabled:
            on[self.device_type] = self._dtype
        else:
            on.pop(self.device_type, None)
        self._prev = grad_mode._set_autocast(on or None)
        return self

    def __exit__(self, *exc):
        grad_mode._set_autocast(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.device_type, self.fast_dtype, self._enabled,
                          self.cache_enabled):
                return fn(*args, **kwargs)
        return wrapper


def is_autocast_available(device_type: str) -> bool:
    """True for 'cpu' and 'cuda' (the device types autocast takes)."""
    return device_type in _DEVICE_TYPES


def is_autocast_enabled(device_type=None) -> bool:
    """True inside an enabled ``autocast(device_type)`` (default 'cuda', as PyTorch)."""
    return grad_mode.autocast_dtype(device_type or "cuda") is not None


def get_autocast_dtype(device_type: str):
    """The dtype autocast(device_type) runs its ops in now (float16), else the default
    dtype PyTorch reports: float16 for 'cuda'; 'cpu' would be bfloat16, which clgrad does
    not have (RuntimeError)."""
    dt = grad_mode.autocast_dtype(device_type)
    if dt is None:
        dt = dtypes.float16 if device_type == "cuda" else "bfloat16"
    if dt == "bfloat16":
        raise RuntimeError("get_autocast_dtype: autocast('cpu')'s dtype is bfloat16, which "
                           "clgrad does not have")
    return dt


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
    """``torch.compile``: see clgrad._compile.compile (mode="reduce-overhead" replays captured
    kernels; other modes return ``model`` unchanged)."""
    from clgrad._compile import compile as _compile
    return _compile(model, **kwargs)
