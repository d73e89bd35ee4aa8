"""``torch.amp`` (and ``torch.autocast``, ``torch.cuda.amp``): mixed precision.

``autocast(device_type, dtype=float16)`` runs, on tensors of that device type ('cpu': the
OpenCL CPU device, 'cuda': an OpenCL GPU), the ops of PyTorch's lower-precision list that
clgrad has -- matmul, mm, bmm, linear, addmm, baddbmm (and what is built on matmul: einsum,
attention, mv, outer), conv1d, conv2d, conv_transpose1d/2d -- in float16: floating operands
other than float64 are cast (the casts are recorded, so gradients reach the parameters in
their own dtype), products are summed in float32 and rounded once, the result is float16, as
PyTorch's (clgrad/ops/conv/op.py conv2d: float16 convolutions and their one extra rounding in
the input gradient). ``dtype=bfloat16`` (autocast('cpu')'s default) alike: bfloat16
operands, float32 arithmetic (clgrad/ops/elementwise.py via_float32), a bfloat16 result
rounded once. The losses of PyTorch's float32 list (cross_entropy, nll_loss, mse_loss,
l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy(_with_logits), kl_div) cast float16
and bfloat16 inputs to float32 (their results are float32, under any autocast dtype), and so
do layer_norm, group_norm, softmax and log_softmax under autocast('cuda') only: they are on
PyTorch's CUDA float32 list, not on its CPU one (checked with PyTorch 2.14: under
autocast('cpu') a bfloat16 softmax stays bfloat16). Backward runs with autocast off:
each formula computes in its saved operands' dtypes. As PyTorch's, batch_norm (a float32
BatchNorm after a float16 conv) takes a float16 input with float32 parameters and running
statistics: float32 statistics, a float16 output (ops/norm.py batch_norm); a float16
batch_norm and the average pools compute in float32 too.

Differences from PyTorch, each a clear error or stated here:
- float16 on a device without cl_khr_fp16 raises RuntimeError at an op of the
  lower-precision list. Other dtypes (float32, float64) warn and disable autocast, as
  PyTorch's.
- bfloat16 has no OpenCL C type: its ops convert to float32 and back around float32 kernels
  (two more launches per operand and result), so on clgrad bfloat16 saves memory, not time.
- The rest of PyTorch's float32 list (sum, cumsum, exp, log, pow, norm, ...) and the
  elementwise ops run in their inputs' dtypes: a float16 input stays float16 there, where
  PyTorch's autocast computes and returns float32.

``GradScaler`` is PyTorch's dynamic loss scaler: ``scale(loss)`` multiplies by the scale (a
float32 0-dim tensor on the loss's device), ``unscale_(optimizer)`` divides the gradients in
place and checks them for inf/NaN on the device, ``step(optimizer)`` skips ``optimizer.step()``
when one was found (one host read of that flag per step, as PyTorch's), ``update()`` backs the
scale off after such a step and grows it after ``growth_interval`` finite steps in a row;
``state_dict()`` has PyTorch's keys and plain Python values (a torch GradScaler's loads).
As PyTorch's, ``GradScaler("cuda")`` (the default) without a GPU warns and is disabled:
pass ``device="cpu"`` for the OpenCL CPU device. Gradients must be float32 (float16 ones
raise ValueError, as PyTorch: keep the parameters float32 under autocast).
"""
from __future__ import annotations

import functools
import warnings
from collections import abc

import numpy as np

from clgrad import dtypes, layout, runtime
from clgrad.autograd import grad_mode, no_grad
from clgrad.ops import elementwise as ew
from clgrad.ops import reduce as rd
from clgrad.ops._util import full
from clgrad.ops.foreach import launch_multi
from clgrad.ops.index import stack
from clgrad.tensor import Tensor

__all__ = ["autocast", "GradScaler", "is_autocast_available", "custom_fwd", "custom_bwd",
           "is_autocast_enabled", "get_autocast_dtype"]

_DEVICE_TYPES = ("cpu", "cuda")


class autocast:  # noqa: N801  (PyTorch's name)
    """Context manager and decorator: the ops of autocast's list run in ``dtype`` on tensors
    of ``device_type`` ('cpu' or 'cuda') inside (see the module docstring).

    Args:    device_type 'cpu' or 'cuda'; dtype float16 or bfloat16 (default: float16 for
             'cuda', bfloat16 for 'cpu', as PyTorch); enabled False changes nothing;
             cache_enabled is accepted (clgrad casts each time).
    Raises:  RuntimeError for another device_type; (at an op of the list) for float16 on a
             device without it, see the module docstring.
    """

    def __init__(self, device_type: str = "cuda", dtype=None, enabled: bool = True,
                 cache_enabled=None):
        if device_type not in _DEVICE_TYPES:
            raise RuntimeError(f"autocast: expected device_type 'cpu' or 'cuda', got "
                               f"{device_type!r}")
        self.device_type, self.fast_dtype = device_type, dtype
        self._enabled, self.cache_enabled = bool(enabled), cache_enabled
        self._dtype = None  # what the ops see: float16, bfloat16, None (off)
        if self._enabled:
            if dtype is None:
                self._dtype = _default_dtype(device_type)
            elif dtypes.to_dtype(dtype) in (dtypes.float16, dtypes.bfloat16):
                self._dtype = dtypes.to_dtype(dtype)
            else:
                warnings.warn(f"In {device_type} autocast, but the target dtype "
                              f"{dtypes.to_dtype(dtype)} is not supported (float16 and "
                              f"bfloat16 are). Disabling autocast.", UserWarning, stacklevel=2)
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


def _default_dtype(device_type: str):
    return dtypes.float16 if device_type == "cuda" else dtypes.bfloat16


def get_autocast_dtype(device_type: str):
    """The dtype autocast(device_type) runs its ops in now, else the default PyTorch
    reports: float16 for 'cuda', bfloat16 for 'cpu'. Raises TypeError for a device_type
    that is not a str (PyTorch's message), RuntimeError for another than 'cpu' or 'cuda'."""
    if not isinstance(device_type, str):
        raise TypeError(f"get_autocast_dtype(): argument 'device_type' (position 1) must be "
                        f"str, not {type(device_type).__name__}")
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError(f"get_autocast_dtype: expected device_type 'cpu' or 'cuda', got "
                           f"{device_type!r}")
    dt = grad_mode.autocast_dtype(device_type)
    return _default_dtype(device_type) if dt is None else dt


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
    """PyTorch's dynamic loss scaler (``torch.amp.GradScaler``; see the module docstring).

    Args:    device 'cuda' (default) or 'cpu': as PyTorch, 'cuda' without an OpenCL GPU warns
             and disables the scaler; init_scale (float, the first scale), growth_factor
             (> 1), backoff_factor (in (0, 1)), growth_interval (int > 0: finite steps in a
             row before the scale grows); enabled False makes every method a pass-through
             (scale returns outputs, step calls optimizer.step, get_scale is 1.0,
             state_dict is {}).
    Raises:  ValueError naming growth_factor, backoff_factor or growth_interval when out of
             range (checked when enabled, as PyTorch).
    """

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = bool(enabled)
        if self._enabled and device == "cuda" and not runtime.devices("gpu"):
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available "
                          "(no OpenCL GPU).  Disabling.", UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled:
            _check_factors(growth_factor=growth_factor, backoff_factor=backoff_factor,
                           growth_interval=growth_interval)
        self._init_scale, self._growth_factor = init_scale, growth_factor
        self._backoff_factor, self._growth_interval = backoff_factor, growth_interval
        self._init_growth_tracker = 0
        self._scale = None           # a Python float (float32-rounded) once scale() ran
        self._growth_tracker = None  # an int once scale() ran
        self._scale_on = {}          # runtime Device -> the scale as a float32 0-dim tensor
        self._per_optimizer = {}     # id(optimizer) -> _OptState

    # -- scaling -------------------------------------------------------------------------------
    def scale(self, outputs):
        """``outputs`` times the scale: a tensor, or a list/tuple/dict (nested) of tensors,
        the same structure back (another iterable: a lazy map, as PyTorch). The scale is a
        float32 0-dim tensor on each output's device (made on first use); the products are
        recorded, so backward() gives scaled gradients. Disabled: ``outputs`` unchanged.

        Raises:  ValueError for an output that is neither a tensor nor an iterable of them.
        """
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = float(np.float32(self._init_scale))
            self._growth_tracker = self._init_growth_tracker

        def apply(v):
            if isinstance(v, Tensor):
                return ew.mul(v, self._scale_tensor(v._storage.device))
            if isinstance(v, dict):
                return type(v)((k, apply(x)) for k, x in v.items())
            if isinstance(v, (list, tuple)):
                return type(v)(apply(x) for x in v)
            if isinstance(v, abc.Iterable) and not isinstance(v, (str, bytes)):
                return map(apply, v)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply(outputs)

    def _scale_tensor(self, dev):
        t = self._scale_on.get(dev)
        if t is None:
            t = self._scale_on[dev] = full((), self._scale, dtypes.float32, dev)
        return t

    def _set_scale(self, value) -> None:
        self._scale = float(np.float32(value))
        self._scale_on = {}

    def _check_started(self, funcname: str) -> None:
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  This may indicate "
                                 f"your script did not use scaler.scale(loss or outputs) "
                                 f"earlier in the iteration.")

    # -- per optimizer -------------------------------------------------------------------------
    def unscale_(self, optimizer) -> None:
        """Divide (in place) every gradient of ``optimizer``'s parameters by the scale and
        record, on the device, whether any of them holds an inf or NaN (read once, by step()
        or update()). Once per optimizer between two update() calls. Disabled: nothing.

        Gradients: float32 (or float64), any shapes, on one or several devices.
        Raises:  RuntimeError when called twice for ``optimizer`` since the last update(), or
                 after step(); ValueError for a float16 gradient ("Attempting to unscale FP16
                 gradients.", as PyTorch); AssertionError before any scale() call.
        """
        if not self._enabled:
            return
        self._check_started("unscale_")
        st = self._per_optimizer.setdefault(id(optimizer), _OptState())
        if st.stage == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if st.stage == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        grads = [p.grad for group in optimizer.param_groups for p in group["params"]
                 if p.grad is not None]
        for g in grads:
            if g.dtype is dtypes.float16:
                raise ValueError("Attempting to unscale FP16 gradients.")
        with np.errstate(divide="ignore", over="ignore"):  # PyTorch's float32 reciprocal
            inv = float(np.float32(np.float64(1.0) / np.float64(self._scale)))  # (a scale
            #   that underflowed to 0 or a subnormal gives inf, as PyTorch's; no exception)
        with no_grad():
            if grads:
                st.found_inf = self._unscale_grads(grads, inv)
        st.stage = _UNSCALED

    @staticmethod
    def _unscale_grads(grads: list, inv: float) -> Tensor:
        """Multiply ``grads`` by ``inv`` in place; the flag (a 0-dim float32 tensor on the
        first gradient's device): nonzero (1 or NaN) when an element was inf or NaN before.
        Contiguous gradients of one device: kernels/optim.cl :: unscale_multi, 8 a launch
        (PyTorch's multi-tensor kernel); any others, and those sharing memory with an earlier
        one (a launch would race on it), after them, one at a time: 0 * g (0 where finite, NaN
        where not) summed, then a multiply, per gradient (a shared element is divided once per
        gradient holding it, as PyTorch's CPU loop does). bfloat16 gradients take the second
        way (their multiply in float32, rounded once)."""
        first = grads[0]._storage.device
        flag = full((), 0.0, dtypes.float32, first)
        rest = list(range(len(grads)))
        if all(g._storage.device is first for g in grads):
            shared = _overlapping(grads)  # (one launch would read and write them at once)
            multi = [i for i in rest if i not in shared and  # (bfloat16: no such kernel)
                     grads[i]._storage.dtype is not dtypes.bfloat16]
            taken = launch_multi("unscale_multi", [(grads[i], flag) for i in multi],
                                 lambda idx, dt: lambda commit: (dt.np.type(inv),)) \
                if multi else []
            rest = sorted([multi[j] for j in taken] + [i for i in rest if i not in multi])
        if rest:
            nonfinite = [flag] + [ew.to_device(rd.sum(ew.mul(grads[i], 0.0),
                                                      dtype=dtypes.float32), first)
                                  for i in rest]
            flag = rd.sum(stack(nonfinite))
            for i in rest:
                grads[i].mul_(inv)
        return flag

    def step(self, optimizer, *args, **kwargs):
        """unscale_(optimizer) unless done, then ``optimizer.step(*args, **kwargs)`` and its
        result, or None without stepping when a gradient held an inf or NaN (one host read of
        that flag). Disabled: ``optimizer.step(*args, **kwargs)``.

        Raises:  RuntimeError for a ``closure`` keyword (as PyTorch) and for a second step()
                 since the last update(); AssertionError when ``optimizer`` has no gradient
                 (no inf check was recorded) or before any scale() call.
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_started("step")
        st = self._per_optimizer.setdefault(id(optimizer), _OptState())
        if st.stage == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st.stage == _READY:
            self.unscale_(optimizer)
        if st.found_inf is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not st.found():
            retval = optimizer.step(*args, **kwargs)
        st.stage = _STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Set the scale for the next iteration and forget the optimizers' state: with
        ``new_scale`` (a float or a 1-element tensor) that value; else, when any optimizer
        unscaled since the last update() found an inf/NaN, scale *= backoff_factor and the
        growth tracker restarts; otherwise the tracker counts one more finite step and, at
        growth_interval, scale *= growth_factor (kept when finite in float32) and it
        restarts. Disabled: nothing.

        Raises:  AssertionError before any scale() call, or (without new_scale) when no
                 optimizer was unscaled since the last update(); ValueError for a
                 ``new_scale`` tensor with more than one element.
        """
        if not self._enabled:
            return
        self._check_started("update")
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                if new_scale.numel() != 1:
                    raise ValueError(f"update: new_scale must be a float or a 1-element "
                                     f"tensor, got a tensor of {new_scale.numel()} elements")
                new_scale = new_scale.item()
            self._set_scale(float(new_scale))
        else:
            states = [s for s in self._per_optimizer.values() if s.found_inf is not None]
            if not states:
                raise AssertionError("No inf checks were recorded prior to update.")
            if any([s.found() for s in states]):
                self._set_scale(self._scale * self._backoff_factor)
                self._growth_tracker = 0
            else:
                successful = self._growth_tracker + 1
                if successful == self._growth_interval:
                    with np.errstate(over="ignore"):  # overflow to inf: not kept
                        grown = np.float32(self._scale * self._growth_factor)
                    if np.isfinite(grown):
                        self._set_scale(grown)
                    successful = 0
                self._growth_tracker = successful
        self._per_optimizer = {}

    # -- getters, setters, state ---------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale (init_scale before the first scale()); 1.0 when disabled."""
        if not self._enabled:
            return 1.0
        return float(self._init_scale) if self._scale is None else self._scale

    def is_enabled(self) -> bool:
        """Whether the scaler scales (``enabled`` and, for 'cuda', an OpenCL GPU found)."""
        return self._enabled

    def get_growth_factor(self) -> float:
        """The factor the scale grows by after growth_interval finite steps."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set growth_factor (> 1; ValueError otherwise)."""
        _check_factors(growth_factor=new_factor)
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale shrinks by after a step with an inf/NaN gradient."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set backoff_factor (in (0, 1); ValueError otherwise)."""
        _check_factors(backoff_factor=new_factor)
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """The number of finite steps in a row after which the scale grows."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set growth_interval (an int > 0; ValueError otherwise)."""
        _check_factors(growth_interval=new_interval)
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return self._growth_tracker

    def state_dict(self) -> dict:
        """PyTorch's keys with plain Python values: "scale" (float), "growth_factor",
        "backoff_factor", "growth_interval", "_growth_tracker" (int); {} when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict) -> None:
        """Load a state_dict() (also one saved by PyTorch's GradScaler). Ignored when
        disabled.

        Raises:  RuntimeError for an empty dict (saved by a disabled scaler), as PyTorch;
                 KeyError for a missing key.
        """
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        scale = state_dict["scale"]
        scale = scale.item() if isinstance(scale, Tensor) else float(scale)
        tracker = state_dict["_growth_tracker"]
        tracker = int(tracker.item() if isinstance(tracker, Tensor) else tracker)
        self._init_scale, self._init_growth_tracker = scale, tracker
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        if self._scale is not None:
            self._set_scale(scale)
            self._growth_tracker = tracker

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_scale_on"], state["_per_optimizer"] = {}, {}
        return state


_READY, _UNSCALED, _STEPPED = 0, 1, 2


def _overlapping(tensors: list) -> set:
    """Indices of the tensors whose span of elements in their storage overlaps another's
    (all but the lowest-starting of each overlapping run; spans sorted: O(n log n))."""
    spans: dict = {}
    for i, t in enumerate(tensors):
        ext = layout.extent(t.shape, t._strides, t._offset)
        if ext is not None:
            spans.setdefault(id(t._storage), []).append((ext[0], ext[1] + 1, i))
    out = set()
    for lst in spans.values():
        if len(lst) > 1:
            lst.sort()
            end = -1
            for lo, hi, i in lst:
                if lo < end:
                    out.add(i)
                end = max(end, hi)
    return out


class _OptState:
    """One optimizer's stage since the last update() and its found_inf flag (a 0-dim float32
    tensor on the device, 0 or else 1 or NaN; read once, on the host, by found())."""

    def __init__(self):
        self.stage, self.found_inf, self._found = _READY, None, None

    def found(self) -> bool:
        """Whether a gradient held an inf or NaN (the flag read to the host once, cached)."""
        if self._found is None:
            self._found = self.found_inf.item() != 0.0  # (NaN != 0 too)
        return self._found


def _check_factors(**given) -> None:
    """ValueError naming the argument when growth_factor <= 1, backoff_factor outside
    (0, 1) or growth_interval not an int > 0."""
    for name, v in given.items():
        if name == "growth_interval":
            ok = isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0
            want = "an int > 0"
        elif name == "growth_factor":
            ok, want = isinstance(v, (int, float)) and v > 1.0, "> 1.0"
        else:
            ok, want = isinstance(v, (int, float)) and 0.0 < v < 1.0, "in (0, 1)"
        if not ok:
            raise ValueError(f"GradScaler: {name} must be {want}, got {v!r}")


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
