"""Element types: the PyTorch names, their NumPy dtype and their OpenCL C type.

bool, uint8, int8, int16, int32, int64, float16, float32, float64, with PyTorch's promotion
(``promote``) and scalar rules (``scalar_dtype``). Integer arithmetic wraps around in the
type (uint8 200 + 100 is 44), as PyTorch and NumPy; sums of integers are int64. Differences
from PyTorch: no uint16/uint32/uint64 (NumPy arrays of those widen to int64), no complex or
bfloat16; ``Tensor.type()``-style legacy tensor classes (``ByteTensor``) are not provided.
"""
from __future__ import annotations

import numpy as np

__all__ = ["DType", "float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64",
           "bool_", "from_numpy_dtype", "promote", "to_dtype", "get_default_dtype", "check_fits",
           "check_array_fits"]


class DType:
    """An element type. ``np`` is the NumPy dtype, ``cl`` the OpenCL C type used in kernels."""

    __slots__ = ("name", "np", "cl", "itemsize", "is_floating_point", "is_bool", "_rank")

    def __init__(self, name: str, np_dtype, cl_type: str, rank: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.cl = cl_type
        self.itemsize = self.np.itemsize
        self.is_floating_point = self.np.kind == "f"
        self.is_bool = self.np.kind == "b"
        self._rank = rank

    def __repr__(self):
        return f"clgrad.{self.name}"

    def __reduce__(self):
        return (to_dtype, (self.name,))


# uint8 shares its OpenCL type with bool: the kernels see uchar for both (and the programs
# built for one serve the other); where bool differs (casts to bool) a define says so.
bool_ = DType("bool", np.bool_, "uchar", 0)
uint8 = DType("uint8", np.uint8, "uchar", 1)
int8 = DType("int8", np.int8, "char", 1)
int16 = DType("int16", np.int16, "short", 2)
int32 = DType("int32", np.int32, "int", 3)
int64 = DType("int64", np.int64, "long", 4)
float16 = DType("float16", np.float16, "half", 5)
float32 = DType("float32", np.float32, "float", 6)
float64 = DType("float64", np.float64, "double", 7)

_ALL = {d.name: d for d in (bool_, uint8, int8, int16, int32, int64, float16, float32, float64)}
_BY_NP = {d.np: d for d in _ALL.values()}
_ALIASES = {"float": float32, "double": float64, "int": int32, "long": int64, "half": float16,
            "short": int16, "byte": uint8, "char": int8}


def get_default_dtype() -> DType:
    """The floating dtype of tensors made from Python floats (float32, as PyTorch)."""
    return float32


def from_numpy_dtype(np_dtype) -> DType:
    """The DType of a NumPy dtype. Raises TypeError for unsupported ones (e.g. complex, uint16)."""
    d = np.dtype(np_dtype)
    if d in _BY_NP:
        return _BY_NP[d]
    raise TypeError(f"dtype: expected one of bool, uint8, int8, int16, int32, int64, float16, "
                    f"float32, float64, got numpy dtype {d}")


def to_dtype(x) -> DType:
    """Accept a DType, its name ('float32'), a NumPy dtype or the Python types float/int/bool."""
    if isinstance(x, DType):
        return x
    if x is float:
        return float32
    if x is int:
        return int64
    if x is bool:
        return bool_
    if isinstance(x, str):
        d = _ALL.get(x) or _ALIASES.get(x)
        if d is not None:
            return d
        raise TypeError(f"dtype: expected one of {sorted(_ALL)}, got {x!r}")
    try:
        return from_numpy_dtype(x)
    except TypeError:
        raise TypeError(f"dtype: expected a clgrad dtype, got {x!r}") from None


def promote(a: DType, b: DType) -> DType:
    """Result type of a binary op on two tensors (PyTorch's promotion): bool < uint8, int8 <
    int16 < int32 < int64 < float16 < float32 < float64, and uint8 with int8 gives int16 (the
    smallest type holding both ranges)."""
    if a._rank == b._rank and a is not b:  # uint8 and int8
        return int16
    return a if a._rank >= b._rank else b


def check_fits(op: str, dtype: DType, value):
    """Raise RuntimeError when the Python number ``value`` does not fit ``dtype`` (PyTorch's
    ``overflows`` rule for fills, full(), tensor() literals, masked_fill and clamp bounds):
    an int fits a signed dtype within [min, max], an unsigned one within [-max, max] (a
    negative int wraps, uint8 -1 is 255); a float fits an integer dtype when finite and within
    [min, max] (uint8 -1.0 and 255.5 do not), float32 unless finite beyond its range.
    Arithmetic with a scalar wraps around instead (uint8 + 300 is uint8 + 44)."""
    if dtype.is_bool or isinstance(value, (bool, np.bool_)):
        return
    if isinstance(value, (float, np.floating)):
        if dtype.is_floating_point:
            bad = dtype is float32 and np.isfinite(value) and \
                abs(value) > float(np.finfo(np.float32).max)
        else:
            info = np.iinfo(dtype.np)
            bad = not np.isfinite(value) or not info.min <= value <= info.max
    elif dtype.is_floating_point:
        return
    else:
        info = np.iinfo(dtype.np)
        bad = value > info.max or value < (-info.max if info.min == 0 else info.min)
    if bad:
        raise RuntimeError(f"{op}: value cannot be converted to type {dtype.name} without "
                           f"overflow, got {value!r}")


def check_array_fits(op: str, dtype: DType, arr: np.ndarray):
    """check_fits for every element of a NumPy array of Python literals (bool, int64 or
    float64; tensor() of nested lists): raises RuntimeError naming the first misfit. Float
    dtypes are not checked (tensor([1e40], dtype=float32) is inf in PyTorch too)."""
    if dtype.is_bool or dtype.is_floating_point or arr.size == 0 or arr.dtype.kind == "b":
        return
    info = np.iinfo(dtype.np)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr < info.min) | (arr > info.max)
    else:
        lo = -int(info.max) if info.min == 0 else int(info.min)
        bad = (arr < lo) | (arr > info.max)
    if bad.any():
        v = arr[bad].flat[0]
        raise RuntimeError(f"{op}: value cannot be converted to type {dtype.name} without "
                           f"overflow, got {v.item()!r}")


def scalar_dtype(tensor_dtype: DType, value) -> DType:
    """Result type of ``tensor op python_scalar`` (PyTorch: the scalar only lifts the category)."""
    if isinstance(value, bool):
        return tensor_dtype
    if isinstance(value, int):
        return int64 if tensor_dtype.is_bool else tensor_dtype
    if isinstance(value, float):
        return tensor_dtype if tensor_dtype.is_floating_point else float32
    raise TypeError(f"expected a number, got {type(value).__name__}")
