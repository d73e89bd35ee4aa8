"""NaN and infinity: isnan, isinf, isfinite, nan_to_num; closeness: isclose, allclose, equal.

Kernels: kernels/numeric.cl (floating T); integer and bool inputs have no NaN or infinity and
are answered without a kernel (isclose compares them as floats).
"""
from __future__ import annotations

import numpy as np

from clgrad import dtypes, layout
from clgrad.autograd import record
from clgrad.ops import elementwise as ew
from clgrad.ops._util import empty, launch_1d, same_device, scalar
from clgrad.tensor import Tensor

__all__ = ["isnan", "isinf", "isfinite", "nan_to_num", "isclose", "allclose", "equal"]

_FILE = "numeric.cl"


def _tensor_in(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")


def _predicate(kname, op, int_value):
    def f(x: Tensor) -> Tensor:
        _tensor_in(op, x)
        out = empty(x.shape, dtypes.bool_, x._storage.device)
        if not x.dtype.is_floating_point:
            ew.fill_raw(out, int_value)
            return out
        if x.dtype is dtypes.bfloat16:  # (its float32 values: exact)
            x = ew.to(x.detach(), dtypes.float32)
        launch_1d(_FILE, kname, {"T": x.dtype.cl}, out, (x,))
        return out
    f.__name__ = op
    f.__doc__ = (f"Elementwise {op}: a bool tensor of x's shape (integer and bool inputs: "
                 f"all {bool(int_value)}). No gradient.")
    return f


isnan = _predicate("isnan_", "isnan", 0)
isinf = _predicate("isinf_", "isinf", 0)
isfinite = _predicate("isfinite_", "isfinite", 1)


def nan_to_num(x: Tensor, nan: float = 0.0, posinf=None, neginf=None) -> Tensor:
    """NaN -> ``nan``, +inf -> ``posinf``, -inf -> ``neginf`` (default: the dtype's largest
    and lowest finite values, as PyTorch: bfloat16's own, ``dtypes.finfo``); other elements
    unchanged.

    Shapes:  (*S) -> (*S), x's dtype (integer inputs: a copy)
    Grad:    passes where x is finite, 0 where a value was replaced (PyTorch)
    Kernels: kernels/numeric.cl :: nan_to_num_
    """
    _tensor_in("nan_to_num", x)
    if not x.dtype.is_floating_point:
        return ew.clone(x)
    if x.dtype is dtypes.bfloat16:  # in float32, with bfloat16's limits
        info = dtypes.finfo(x.dtype)
        return ew.via_float32(nan_to_num, x, nan, info.max if posinf is None else posinf,
                              info.min if neginf is None else neginf)
    info = np.finfo(x.dtype.np)
    vals = (nan, info.max if posinf is None else posinf, info.min if neginf is None else neginf)
    out = empty(x.shape, x.dtype, x._storage.device)
    launch_1d(_FILE, "nan_to_num_", {"T": x.dtype.cl}, out, (x,),
              tuple(scalar(x.dtype, v) for v in vals))
    finite = isfinite(x) if x.requires_grad else None
    return record("nan_to_num", out, (x,),  # (double: where, recording)
                  lambda g: (ew.where(finite, g, ew._zeros_scalar(g)),), saved=[finite],
                  double=True)


def isclose(a: Tensor, b, rtol: float = 1e-5, atol: float = 1e-8,
            equal_nan: bool = False) -> Tensor:
    """Elementwise ``a == b or |a - b| <= atol + rtol * |b|`` with |a - b| finite (so equal
    infinities are close, an infinity and a finite value are not); NaNs are close to each
    other only with ``equal_nan`` (PyTorch's rule). ``b`` may be a number; broadcasting.

    Returns: bool tensor of the broadcast shape. No gradient.
    Raises:  ValueError for a negative rtol or atol, or shapes that do not broadcast
    """
    _tensor_in("isclose", a)
    if rtol < 0 or atol < 0:
        raise ValueError(f"isclose: expected non-negative rtol and atol, got rtol={rtol}, "
                         f"atol={atol}")
    dt = dtypes.result_type(a, b)
    if not isinstance(b, Tensor):
        b = ew._scalar_tensor("isclose", b, dt, a._storage.device)
    a, b = ew._cpu_scalar_along(a, b)  # a 0-dim CPU tensor joins another device's (PyTorch's)
    same_device("isclose", a, b)
    if not dt.is_floating_point:
        dt = dtypes.float64 if a._storage.device.fp64 else dtypes.float32
    elif dt is dtypes.bfloat16:  # compared in float32 (the values convert exactly)
        dt = dtypes.float32
    shape = layout.broadcast_shapes(a.shape, b.shape, op="isclose")
    out = empty(shape, dtypes.bool_, a._storage.device)
    launch_1d(_FILE, "isclose_", {"T": dt.cl}, out,
              (ew.to(a.detach(), dt).expand(shape), ew.to(b.detach(), dt).expand(shape)),
              (scalar(dt, rtol), scalar(dt, atol), np.int32(bool(equal_nan))))
    return out


def allclose(a: Tensor, b, rtol: float = 1e-5, atol: float = 1e-8,
             equal_nan: bool = False) -> bool:
    """True when every element of ``isclose(a, b, ...)`` is (a Python bool)."""
    from clgrad.ops.reduce import all as all_
    return bool(all_(isclose(a, b, rtol, atol, equal_nan)).item())


def equal(a: Tensor, b: Tensor) -> bool:
    """True when a and b have the same shape and equal elements (NaN != NaN).

    Raises:  RuntimeError for tensors on two devices ("expected all tensors on the same
             device"; PyTorch: "Cannot compare two tensors on different devices"), 0-dim ones
             too (no CPU-scalar join here, as PyTorch)."""
    _tensor_in("equal", a)
    _tensor_in("equal", b)
    same_device("equal", a, b)
    if tuple(a.shape) != tuple(b.shape):
        return False
    from clgrad.ops.reduce import all as all_
    return bool(all_(ew.eq(a.detach(), b.detach())).item())
