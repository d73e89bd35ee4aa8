"""Factories (PyTorch names) and the random number generator.

Random tensors are drawn on the host from one NumPy PCG64 generator, seeded by
``manual_seed``, and uploaded: the same seed gives the same numbers on every device.
"""
from __future__ import annotations

import itertools
import numbers
import os
import warnings

import numpy as np

from clgrad import _memory_format, capture as _capture, dtypes
from clgrad.runtime import Device, get_device
from clgrad.ops._util import copy_raw, fill_raw
from clgrad.tensor import Tensor

__all__ = ["tensor", "as_tensor", "from_numpy", "empty", "zeros", "ones", "full", "arange",
           "linspace", "rand", "randn", "randint", "zeros_like", "ones_like", "full_like",
           "empty_like", "rand_like", "randn_like", "manual_seed", "seed_generator", "eye",
           "logspace", "rng",
           "randperm", "initial_seed", "seed"]

_RNG = [np.random.default_rng(0)]
_SEED = [0]  # the seed _RNG[0] started from (clgrad's default start is 0)
# How often a random op drew from an explicit clgrad.Generator (``rng`` below): vmap's
# randomness='error'/'same' (clgrad/func/_vmap.py) see such draws by this count, and those
# from the global generator by its state.
EXPLICIT_DRAWS = [0]


def manual_seed(seed: int):
    """Seed the generator behind rand/randn/randint/randperm/dropout.

    Negative seeds wrap modulo 2**64, as in PyTorch. Returns the NumPy generator (PyTorch
    returns a torch.Generator; clgrad's global generator is a NumPy PCG64 one).
    Raises: TypeError for a seed that is not an int
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise TypeError(f"manual_seed: expected an int, got {type(seed).__name__}")
    _SEED[0] = int(seed) % 2**64
    _RNG[0] = np.random.default_rng(_SEED[0])
    return _RNG[0]


def initial_seed() -> int:
    """The seed the global generator started from: the last ``manual_seed``/``seed`` (0 before
    either). Inside a DataLoader worker it is the worker's seed (base_seed + worker id), as in
    PyTorch, so the ``seed_worker`` idiom (``numpy.random.seed(torch.initial_seed() % 2**32)``)
    works."""
    return _SEED[0]


def seed() -> int:
    """Reseed the global generator from the OS's randomness; returns the new seed."""
    s = int.from_bytes(os.urandom(8), "little")
    manual_seed(s)
    return s


def seed_generator() -> np.random.Generator:
    """The NumPy generator used by the random factories (for code that draws its own).
    Raises clgrad.capture.CaptureError inside a captured region (the draw would be baked in)."""
    if _capture._ACTIVE[0] is not None:
        _capture.refuse_random()
    return _RNG[0]


def rng(generator, op: str) -> np.random.Generator:
    """The NumPy generator a random op draws from: the global one (None), or that of
    ``generator`` (a ``clgrad.Generator``, made by ``Generator().manual_seed(s)``).
    Raises TypeError naming ``op`` for anything else; inside a captured region, as
    ``seed_generator``, for either (a draw from a generator would be baked in too)."""
    if generator is None:
        return seed_generator()
    g = getattr(generator, "_np", None)  # clgrad.Generator (clgrad/_generator.py, above here)
    if not isinstance(g, np.random.Generator):
        raise TypeError(f"{op}(): argument 'generator' must be torch.Generator, not "
                        f"{type(generator).__name__}")
    if _capture._ACTIVE[0] is not None:
        _capture.refuse_random()
    EXPLICIT_DRAWS[0] += 1
    return g


def _device(device) -> Device:
    if device is None or isinstance(device, Device):
        return device or get_device(None)
    from clgrad._device import resolve
    return resolve(device)


def _shape(size, op, keyword=None):
    """The shape given as ints, one sequence or a Size (PyTorch's ``*size``); ``keyword``: the
    ``size=`` keyword's value (``torch.empty(size=(2, 3))``), which excludes positional sizes.
    Raises TypeError for a non-int size or both forms, RuntimeError for a negative size."""
    if keyword is not None:
        if size:
            raise TypeError(f"{op}: expected the size either positionally or as size=, got "
                            f"both {tuple(size)!r} and size={keyword!r}")
        size = (keyword,)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = int(s.item())
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"{op}: expected a sequence of ints as size, got "
                            f"{type(s).__name__} in {size!r}")
        if s < 0:
            raise RuntimeError(f"{op}: Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
        out.append(int(s))
    return tuple(out)


def _upload(arr: np.ndarray, dtype: dtypes.DType, device: Device, requires_grad=False,
            bits=False):
    """A tensor of dtype ``dtype`` holding ``arr``'s values (converted), or with ``bits=True``
    holding ``arr``'s elements unchanged as the stored ones (an array of ``dtype.np``:
    bfloat16's uint16 bits, as file formats store them; TypeError for another NumPy dtype)."""
    if bits:
        arr = np.asarray(arr)
        if arr.dtype.newbyteorder("=") != np.dtype(dtype.np):
            raise TypeError(f"_upload: expected the stored elements of {dtype.name} (NumPy "
                            f"{np.dtype(dtype.np)}), got an array of {arr.dtype}")
        arr = arr.astype(dtype.np, order="C", copy=False)  # native order, dense (0-dim kept)
    elif dtype is dtypes.bfloat16:  # its bits, rounded to nearest even (keeps 0-dim shapes)
        arr = dtypes.to_bf16_bits(np.asarray(arr))
    else:
        with np.errstate(over="ignore"):  # float64 beyond float32's range is inf, as PyTorch
            arr = np.asarray(arr).astype(dtype.np, order="C", copy=False)  # keeps 0-dim shapes
    t = Tensor._empty(arr.shape, dtype, device)
    if arr.size:
        device.copy(t._storage.buffer, arr)
        t._storage.keep_host(arr)  # small integer tensors: targets checked on the host
    if requires_grad:
        t.requires_grad_(True)
    return t


_KEPT_INTS = (np.uint8, np.int8, np.int16, np.int32, np.int64)
_KEPT_NP = {np.dtype(t) for t in (np.bool_, *_KEPT_INTS, np.float16, np.float32, np.float64)}


def _infer_dtype(arr: np.ndarray, data) -> dtypes.DType:
    if arr.dtype.kind == "f":
        # Python floats take the default dtype (PyTorch's); NumPy float arrays keep theirs.
        if isinstance(data, np.ndarray) or isinstance(data, np.floating):
            return dtypes.from_numpy_dtype(arr.dtype)
        return dtypes.get_default_dtype()
    if arr.dtype.kind == "b":
        return dtypes.bool_
    if arr.dtype.kind in "iu":
        if isinstance(data, (np.ndarray, np.integer)) and arr.dtype in _KEPT_INTS:
            return dtypes.from_numpy_dtype(arr.dtype)
        if arr.dtype == np.uint64 and arr.size and int(arr.max()) >= 2**63:
            raise OverflowError(f"tensor: the value {int(arr.max())} does not fit in int64")
        return dtypes.int64
    raise TypeError(f"tensor: expected numbers (bool, int, float), got data of numpy dtype "
                    f"{arr.dtype}")


def _sequence_dtype(data) -> dtypes.DType | None:
    """The dtype PyTorch infers for a nested list/tuple holding NumPy scalars (or arrays): each
    element's own type (a NumPy scalar's dtype, the default dtype for a Python float, int64 for
    an int, bool), promoted pairwise (torch/csrc/utils/tensor_new.cpp infer_scalar_type with
    promoteTypes: ``[np.int32(1), 2.5]`` float32, ``[np.float16(1), 2]`` float16). None when
    the sequence holds no NumPy value (the plain rules apply) or something else (a Tensor).
    The element types are gathered a nesting level at a time (``set(map(type, ...))``: the
    leaves are not visited in Python)."""
    kinds, level = set(), [data]
    while level:
        found = set(map(type, itertools.chain.from_iterable(level)))
        if list in found or tuple in found:
            level = [v for v in itertools.chain.from_iterable(level) if type(v) in _NESTED]
            found -= _NESTED
        else:
            level = ()
        kinds |= found
    if not any(issubclass(k, (np.generic, np.ndarray)) for k in kinds):
        return None
    dt = None
    for k in kinds:
        if k is float:
            e = dtypes.get_default_dtype()
        elif k is int:
            e = dtypes.int64
        elif k is bool:
            e = dtypes.bool_
        elif issubclass(k, np.generic):
            e = _np_element_dtype(np.dtype(k))
        elif k is np.ndarray:  # each array's own dtype (rare: walked in Python)
            e = _arrays_dtype(data)
        else:
            e = None
        if e is None:
            return None  # (a Tensor, complex...: the plain path decides or raises)
        dt = e if dt is None else dtypes.promote(dt, e)
    return dt


_NESTED = {list, tuple}


def _np_element_dtype(d: np.dtype) -> dtypes.DType | None:
    """A NumPy element's dtype in clgrad: its own, int64 for the unsigned ints clgrad lacks
    (uint16/32/64), None for the rest (complex, object...)."""
    return (dtypes.from_numpy_dtype(d) if d in _KEPT_NP else
            dtypes.int64 if d.kind in "iu" else None)


def _arrays_dtype(data) -> dtypes.DType | None:
    """The promoted dtype of the NumPy arrays in nested ``data`` (see _sequence_dtype)."""
    dt = None
    for v in data:
        if isinstance(v, np.ndarray):
            e = _np_element_dtype(v.dtype)
        elif type(v) in _NESTED:
            e = _arrays_dtype(v)
        else:
            continue
        if e is None:
            return None
        dt = e if dt is None else dtypes.promote(dt, e)
    return dt


def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (number, nested lists, NumPy array or Tensor).

    Dtype: ``dtype`` if given, else the default dtype (``get_default_dtype()``, float32 unless
    set) for Python floats, int64 for ints, bool for bools, the array's own dtype for NumPy
    arrays (and NumPy scalars) of a clgrad dtype (bool, uint8, int8, int16, int32, int64,
    float16/32/64, as PyTorch, whatever the default); a nested list holding NumPy scalars
    the promotion of its elements' own types, as PyTorch (``[np.float64(1), 2.0]`` float64,
    ``[np.int32(1)]`` int32, ``[np.int32(1), 2.5]`` the default float); uint16, uint32 and
    uint64 widen to
    int64 — PyTorch keeps them, but clgrad has no such dtypes (uint64 values >= 2**63 raise
    OverflowError). A list of tensors takes each as a number (one element each, any ndim).
    Raises ValueError for ragged nested lists or a list holding a tensor of more than one
    element (PyTorch's; stack joins tensors), TypeError for non-numeric data,
    RuntimeError for Python numbers that do not fit an integer ``dtype`` (PyTorch's rule,
    dtypes.check_fits: uint8 256 or 255.5 raise, -1 wraps to 255).
    """
    if isinstance(data, Tensor):  # a copy on data's own device, or on ``device`` if given
        dt = dtypes.to_dtype(dtype) if dtype is not None else data.dtype
        dev = data._storage.device if device is None else _device(device)
        if dev is not data._storage.device:  # across devices: through the host
            host = data._values()  # (bfloat16 as float32: exact; no grad check: a copy)
            return _upload(host, dt, dev, requires_grad)
        out = Tensor._empty(data.shape, dt, dev)
        copy_raw(out, data)
        return out.requires_grad_(requires_grad) if requires_grad else out
    dev = _device(device)
    if isinstance(data, (list, tuple)) and data and all(isinstance(v, Tensor) for v in data):
        # a sequence of tensors (tensor([t0, t1])): each one element, taken as a number (of
        # any ndim: tensor([tensor([1.]), tensor([2.])]) has shape (2,)), as PyTorch's;
        # their values (bfloat16's too, which NumPy lacks) and, without a dtype, their
        # promoted dtype (PyTorch's)
        big = next((v for v in data if v.numel() != 1), None)
        if big is not None:
            raise ValueError(f"tensor: only one element tensors can be converted to Python "
                             f"scalars, got an element of shape {tuple(big.shape)} (to join "
                             f"tensors, use stack or cat)")
        if dtype is None:
            dtype = data[0].dtype
            for v in data[1:]:
                dtype = dtypes.promote(dtype, v.dtype)
        data = np.stack([v.detach()._values().reshape(()) for v in data])
    try:
        arr = np.asarray(data)
    except ValueError as e:
        raise ValueError(f"tensor: expected a rectangular nested sequence of numbers, got a "
                         f"ragged one ({e})") from None
    if arr.dtype == object:
        big = next((v for v in np.ravel(arr) if isinstance(v, int) and not isinstance(v, bool)
                    and not -2**63 <= v < 2**63), None)
        if big is not None:
            raise OverflowError(f"tensor: the value {big} does not fit in int64")
        bad = next((type(v).__name__ for v in np.ravel(arr)
                    if not isinstance(v, numbers.Number)), "object")
        raise TypeError(f"tensor: expected numbers, got {bad}")
    if dtype is not None:
        dt = dtypes.to_dtype(dtype)
    elif isinstance(data, (list, tuple)) and arr.dtype.kind in "biuf":
        dt = _sequence_dtype(data) or _infer_dtype(arr, data)
    else:
        dt = _infer_dtype(arr, data)
    if dtype is not None and not isinstance(data, (np.ndarray, np.generic)):
        dtypes.check_array_fits("tensor", dt, arr)  # Python literals: PyTorch's overflow check
    if requires_grad and not dt.is_floating_point:
        raise RuntimeError(f"tensor: only Tensors of floating point dtype can require "
                           f"gradients, got {dt}")
    return _upload(arr, dt, dev, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` itself if it is a Tensor of that dtype, else ``tensor(data, dtype)``."""
    if isinstance(data, Tensor) and (dtype is None or dtypes.to_dtype(dtype) is data.dtype):
        return data
    return tensor(data, dtype=dtype, device=device)


def from_numpy(arr: np.ndarray, device=None) -> Tensor:
    """A device copy of a NumPy array, same dtype and shape.

    Unlike PyTorch the memory is not shared: the tensor lives in an OpenCL buffer, which the
    host array cannot alias in general. Raises TypeError for non-arrays or unsupported dtypes.
    """
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"from_numpy: expected np.ndarray, got {type(arr).__name__}")
    return _upload(arr, dtypes.from_numpy_dtype(arr.dtype), _device(device))


def empty(*sizes, size=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor of ``size`` (the default dtype unless ``dtype``).

    The size: ints, one sequence or a Size as ``sizes``, or the ``size=`` keyword (PyTorch's
    ``torch.empty(size=(2, 3))``), not both (TypeError)."""
    dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    t = Tensor._empty(_shape(sizes, "empty", size), dt, _device(device))
    return t.requires_grad_(True) if requires_grad else t


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from the value).
    Without ``dtype``: bool, int64, or for a float the default dtype (``get_default_dtype()``)."""
    if dtype is None:
        dtype = dtypes.bool_ if isinstance(fill_value, bool) else \
            dtypes.int64 if isinstance(fill_value, (int, np.integer)) else \
            dtypes.get_default_dtype()
    dt = dtypes.to_dtype(dtype)
    dtypes.check_fits("full", dt, fill_value)
    shape = _shape((size,) if isinstance(size, int) else (tuple(size),), "full")
    t = Tensor._empty(shape, dt, _device(device))
    fill_raw(t, fill_value)
    return t.requires_grad_(True) if requires_grad else t


def zeros(*sizes, size=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros (the default dtype unless ``dtype``).

    The size: ``sizes`` or the ``size=`` keyword, as ``empty``."""
    return full(_shape(sizes, "zeros", size), 0, dtype=dtype or dtypes.get_default_dtype(),
                device=device, requires_grad=requires_grad)


def ones(*sizes, size=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones (the default dtype unless ``dtype``).

    The size: ``sizes`` or the ``size=`` keyword, as ``empty``."""
    return full(_shape(sizes, "ones", size), 1, dtype=dtype or dtypes.get_default_dtype(),
                device=device, requires_grad=requires_grad)


def _like(x: Tensor, dtype, device):
    return (dtypes.to_dtype(dtype) if dtype is not None else x.dtype,
            device if device is not None else x._storage.device)


# The *_like factories and clone take PyTorch's memory_format (None, torch.preserve_format,
# torch.contiguous_format): their results are always contiguous (clgrad/_memory_format.py).
def zeros_like(x: Tensor, dtype=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    """Zeros with the shape (and by default dtype and device) of ``x``."""
    _memory_format.check(memory_format, "zeros_like")
    dt, dev = _like(x, dtype, device)
    return zeros(x.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def ones_like(x: Tensor, dtype=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    """Ones with the shape (and by default dtype and device) of ``x``."""
    _memory_format.check(memory_format, "ones_like")
    dt, dev = _like(x, dtype, device)
    return ones(x.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def full_like(x: Tensor, fill_value, dtype=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    """``fill_value`` with the shape (and by default dtype and device) of ``x``."""
    _memory_format.check(memory_format, "full_like")
    dt, dev = _like(x, dtype, device)
    return full(x.shape, fill_value, dtype=dt, device=dev, requires_grad=requires_grad)


def empty_like(x: Tensor, dtype=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    """Uninitialised, with the shape (and by default dtype and device) of ``x``."""
    _memory_format.check(memory_format, "empty_like")
    dt, dev = _like(x, dtype, device)
    return empty(x.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) by ``step`` (int64; floats: default dtype).
    A float bound or step gives the default dtype (``get_default_dtype()``), as PyTorch's."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    is_float = any(isinstance(v, float) for v in (start, end, step))
    dt = dtypes.to_dtype(dtype) if dtype is not None else \
        (dtypes.get_default_dtype() if is_float else dtypes.int64)
    n = int(np.ceil((end - start) / step))
    if is_float and not (dt.is_floating_point or dt.is_bool):
        # an integer dtype (PyTorch's): the length in double, then int(start) + i * int(step),
        # start and step truncated toward zero (arange(0, 5, 1.5, dtype=int64) is [0, 1, 2, 3])
        arr = int(start) + int(step) * np.arange(n, dtype=np.int64)
    else:
        arr = start + step * np.arange(n, dtype=np.float64 if is_float else np.int64)
    return _upload(arr, dt, _device(device), requires_grad)


def linspace(start, end, steps: int, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    return _upload(np.linspace(start, end, steps), dt, _device(device), requires_grad)


def logspace(start, end, steps: int, base: float = 10.0, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    """``steps`` values ``base ** v`` for v evenly spaced from ``start`` to ``end``."""
    if steps < 0:
        raise RuntimeError(f"logspace: number of steps must be non-negative, got {steps}")
    dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    return _upload(np.logspace(start, end, steps, base=base), dt, _device(device),
                   requires_grad)


def eye(n: int, m: int | None = None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """The identity matrix (n, m)."""
    dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    return _upload(np.eye(n, m), dt, _device(device), requires_grad)


def _float_dtype(dtype, op: str):
    """The floating dtype a sampler draws in (the default one for None). Raises TypeError for
    an integer or bool dtype (PyTorch's samplers raise: rounding [0, 1) samples gave zeros)."""
    dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if not dt.is_floating_point:
        raise TypeError(f"{op}: expected a floating point dtype, got {dt.name} (randint draws "
                        f"integers)")
    return dt


def rand(*sizes, size=None, generator=None, dtype=None, device=None,
         requires_grad=False) -> Tensor:
    """Uniform [0, 1) samples (from ``generator``'s stream when given, see ``rng``).

    The size: ``sizes`` or the ``size=`` keyword, as ``empty``. Raises TypeError for an
    integer or bool dtype (as rand_like of an integer tensor)."""
    dt = _float_dtype(dtype, "rand")
    u = rng(generator, "rand").random(_shape(sizes, "rand", size))
    if dt is dtypes.bfloat16:  # multiples of 2^-8 (rounded to nearest, u could give 1.0)
        u = np.floor(u * 256.0) / 256.0
    return _upload(u, dt, _device(device),
                   requires_grad)


def randn(*sizes, size=None, generator=None, dtype=None, device=None,
          requires_grad=False) -> Tensor:
    """Standard normal samples (from ``generator``'s stream when given, see ``rng``).

    The size: ``sizes`` or the ``size=`` keyword, as ``empty``. Raises TypeError for an
    integer or bool dtype (as randn_like of an integer tensor)."""
    dt = _float_dtype(dtype, "randn")
    return _upload(rng(generator, "randn").standard_normal(_shape(sizes, "randn", size)), dt,
                   _device(device), requires_grad)


def randint(low, high=None, size=(), *, generator=None, dtype=None, device=None,
            requires_grad=False) -> Tensor:
    """Integers uniform in [low, high) (``randint(high, size)`` as PyTorch); int64.
    Raises RuntimeError for low >= high (and, as PyTorch, for requires_grad on integers)."""
    if high is None:  # randint(high, size=...)
        low, high = 0, low
    elif isinstance(high, (tuple, list)) and size == ():  # randint(high, size) by position
        low, high, size = 0, low, high
    if high <= low:
        raise RuntimeError(f"randint: expected low < high, got low={low}, high={high}")
    dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.int64
    _check_randint_range(low, high, dt)
    shape = _shape((tuple(size),), "randint")
    return _upload(rng(generator, "randint").integers(low, high, size=shape), dt,
                   _device(device), requires_grad)


def _check_randint_range(low, high, dt):
    """[low, high) must fit ``dt`` (PyTorch's random_ checks): bool [0, 1], an integer dtype
    its range, a floating one the integers it holds exactly (+-2^digits). Raises
    RuntimeError naming the bound, the dtype and its range (no silent wrap)."""
    if dt.is_bool:
        lo, hi = 0, 1
    elif dt.is_floating_point:
        digits = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}[dt.name]
        lo, hi = -(1 << digits), 1 << digits
    else:
        info = np.iinfo(dt.np)
        lo, hi = int(info.min), int(info.max)
    if not lo <= low <= hi:
        raise RuntimeError(f"randint: from (low={low}) is out of bounds for {dt.name}, whose "
                           f"range is [{lo}, {hi}]")
    if not lo <= high - 1 <= hi:
        raise RuntimeError(f"randint: to - 1 (high - 1 = {high - 1}) is out of bounds for "
                           f"{dt.name}, whose range is [{lo}, {hi}]")


def randperm(n: int, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A random permutation of 0..n-1 (int64)."""
    dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.int64
    return _upload(rng(generator, "randperm").permutation(n), dt, _device(device),
                   requires_grad)


def rand_like(x: Tensor, dtype=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    """Uniform [0, 1) samples with the shape (and by default dtype and device) of ``x``."""
    _memory_format.check(memory_format, "rand_like")
    dt, dev = _like(x, dtype, device)
    return rand(x.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def randn_like(x: Tensor, dtype=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    """Standard normal samples with the shape (and by default dtype and device) of ``x``."""
    _memory_format.check(memory_format, "randn_like")
    dt, dev = _like(x, dtype, device)
    return randn(x.shape, dtype=dt, device=dev, requires_grad=requires_grad)


# -- legacy and lesser factories: range, scalar_tensor, empty_strided, randint_like, asarray --
def range(start=0, end=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Values from ``start`` to ``end`` INCLUSIVE by ``step`` (PyTorch's deprecated
    torch.range; ``range(end)`` starts at 0); the default float dtype unless ``dtype``.
    Warns (UserWarning) as PyTorch: use ``arange``, whose end is exclusive.
    Raises:  RuntimeError for step 0 or a step of the wrong sign"""
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("range: step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError(f"range: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    n = int(np.floor((end - start) / step)) + 1
    arr = start + step * np.arange(n, dtype=np.float64)
    return _upload(arr, dt, _device(device), requires_grad)


def scalar_tensor(s, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A 0-dim tensor holding the number ``s``, of the default float dtype unless ``dtype``
    (PyTorch's torch.scalar_tensor: ``scalar_tensor(3)`` is float too)."""
    dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    return tensor(s, dtype=dt, device=device, requires_grad=requires_grad)


def empty_strided(size, stride, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor of ``size`` with the given ``stride`` (PyTorch's
    torch.empty_strided): a view of a storage just large enough for the layout.
    Raises:  RuntimeError when size and stride differ in length or a stride is negative"""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"empty_strided: mismatch in length of strides and shape, got "
                           f"{len(size)} sizes and {len(stride)} strides")
    if any(s < 0 for s in stride) or any(n < 0 for n in size):
        raise RuntimeError(f"empty_strided: expected non-negative sizes and strides, got "
                           f"size {size}, stride {stride}")
    need = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    root = empty(need, dtype=dtype, device=device)
    out = root.as_strided(size, stride)
    return out.requires_grad_(True) if requires_grad else out


def randint_like(x: Tensor, low=0, high=None, *, dtype=None, device=None,
                 requires_grad=False, memory_format=None) -> Tensor:
    """Integers uniform in [low, high) with the shape (and by default dtype and device) of
    ``x`` (PyTorch's torch.randint_like; ``randint_like(x, high)``)."""
    _memory_format.check(memory_format, "randint_like")
    if high is None:
        low, high = 0, low
    dt, dev = _like(x, dtype, device)
    return randint(low, high, tuple(x.shape), dtype=dt, device=dev,
                   requires_grad=requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor:
    """``obj`` as a tensor (PyTorch's torch.asarray): a Tensor of that dtype and device is
    returned itself unless ``copy=True``; anything else (sequences, NumPy arrays, numbers) is
    copied to the device (clgrad cannot alias host memory, so ``copy=False`` of non-tensor
    data raises ValueError)."""
    if isinstance(obj, Tensor):
        dt = obj.dtype if dtype is None else dtypes.to_dtype(dtype)
        dev = obj._storage.device if device is None else _device(device)
        if copy is not True and dt is obj.dtype and dev is obj._storage.device:
            out = obj
        elif copy is False:
            raise ValueError("asarray: copy=False, but a copy is needed for the dtype or "
                             "device asked for")
        else:
            out = obj.to(dev, dt, copy=True)
    else:
        if copy is False:
            raise ValueError("asarray: copy=False of non-tensor data: clgrad's tensors live "
                             "in device memory and cannot alias it")
        out = tensor(obj, dtype=dtype, device=device)
    return out.requires_grad_(True) if requires_grad else out


__all__ += ["range", "scalar_tensor", "empty_strided", "randint_like", "asarray"]
