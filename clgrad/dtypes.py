"""Element types: the PyTorch names, their NumPy dtype and their OpenCL C type.

bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, with PyTorch's
promotion rules in one place: ``promote`` (two dtypes, torch.promote_types),
``result_type`` (operands: tensors, 0-dim tensors, Python numbers; torch.result_type), which
every binary/ternary op, comparison, where, clamp and in-place op dispatches through,
``scalar_dtype`` (its shortcut for a tensor and one number) and ``can_cast`` (the in-place
rule, torch.can_cast). Integer arithmetic wraps around in the type (uint8 200 + 100 is 44),
as PyTorch and NumPy; sums of integers are int64. Differences from PyTorch: no
uint16/uint32/uint64 (NumPy arrays of those widen to int64), no complex (``dtype=complex``
raises TypeError). The legacy tensor types (``FloatTensor`` ...) are clgrad/_legacy.py's.

bfloat16 (Google Brain's "brain floating point": float32's sign, 8-bit exponent and top 7
mantissa bits) has no OpenCL C type and no NumPy one: its elements are stored as ``ushort``
bits (``np`` is uint16) and converted to and from float32 by ``to_bf16_bits`` (round to
nearest even, NaN kept a quiet NaN, as PyTorch's c10::BFloat16) and ``bf16_to_float32``
(exact). Ops compute on it in float32 and round their result once (clgrad/ops/elementwise.py
via_float32).
"""
from __future__ import annotations

import numpy as np

__all__ = ["DType", "float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64",
           "bool_", "from_numpy_dtype", "promote", "to_dtype", "get_default_dtype",
           "set_default_dtype", "check_fits",
           "check_array_fits", "result_type", "scalar_dtype", "promote_types", "can_cast",
           "torch_name", "bfloat16", "to_bf16_bits", "bf16_to_float32", "host_np",
           "to_storage", "finfo", "iinfo"]


class DType:
    """An element type. ``np`` is the NumPy dtype of the stored elements (bfloat16: uint16,
    its bits), ``cl`` the OpenCL C type used in kernels (bfloat16: ``ushort``, which only
    kernels built for it read: ``clgrad/runtime/device.py``'s program refuses the rest)."""

    __slots__ = ("name", "np", "cl", "itemsize", "is_floating_point", "is_bool", "is_signed",
                 "_rank")

    def __init__(self, name: str, np_dtype, cl_type: str, rank: int, floating: bool = False):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.cl = cl_type
        self.itemsize = self.np.itemsize
        self.is_floating_point = floating or self.np.kind == "f"
        self.is_bool = self.np.kind == "b"
        self.is_signed = self.is_floating_point or self.np.kind == "i"
        self._rank = rank

    @property
    def is_complex(self) -> bool:
        """False: clgrad has no complex dtypes (PyTorch's ``dtype.is_complex``)."""
        return False

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
bfloat16 = DType("bfloat16", np.uint16, "ushort", 5, floating=True)  # (float16's rank)
float32 = DType("float32", np.float32, "float", 6)
float64 = DType("float64", np.float64, "double", 7)

_ALL = {d.name: d for d in (bool_, uint8, int8, int16, int32, int64, float16, bfloat16,
                            float32, float64)}
_BY_NP = {d.np: d for d in _ALL.values() if d is not bfloat16}  # (uint16 arrays: not bits)
_ALIASES = {"float": float32, "double": float64, "int": int32, "long": int64, "half": float16,
            "short": int16, "byte": uint8, "char": int8}


# The default floating dtype: one per process, shared by its threads (PyTorch's is global too,
# not thread-local). A list so that ``set_default_dtype`` rebinds nothing.
_DEFAULT = [float32]
_DEFAULT_ALLOWED = (float32, float64, float16, bfloat16)


def get_default_dtype() -> DType:
    """The default floating dtype: float32 until ``set_default_dtype`` changes it.

    It is the dtype of tensors made from Python floats (``tensor(1.5)``), of the factories
    called without a dtype (``zeros``, ``empty``, ``rand``, ``linspace``, ``arange(0.5)``,
    ``full(s, 1.5)``, ``Tensor(2, 3)``), of nn layers' parameters and buffers, and of an
    integer or bool operand promoted by a Python float, by true division or by a float
    function (``result_type``: ``int_t * 1.5``, ``int_t / 2``, ``int_t.sqrt()``)."""
    return _DEFAULT[0]


def set_default_dtype(d: DType, /) -> None:
    """torch.set_default_dtype: ``d`` becomes the default floating dtype of the process.

    ``get_default_dtype()`` then returns it in every thread (PyTorch's is global, not
    thread-local; a spawned process starts from float32). Unaffected: tensors that exist,
    NumPy arrays' and NumPy scalars' own dtypes, the dtypes stored in checkpoints, the
    integer default (int64), ``FloatTensor`` (float32) and ``Tensor.float()``.

    Dtypes:  float32, float64, float16, bfloat16 (PyTorch's set; clgrad has no complex). The
             device is not consulted here: float64 (cl_khr_fp64) and float16 (cl_khr_fp16)
             are checked where a tensor is made, which raises TypeError on a device lacking
             the extension.
    Raises:  TypeError for any other dtype, or anything that is not a dtype (a string, a
             NumPy dtype, ``float``), as PyTorch's."""
    if not (isinstance(d, DType) and d in _DEFAULT_ALLOWED):  # (DType: == is identity)
        got = repr(d) if isinstance(d, DType) else f"{type(d).__name__} {d!r}"
        raise TypeError(f"set_default_dtype: expected argument 'd' to be a floating dtype "
                        f"(float32, float64, float16, bfloat16), got {got}; only floating-point "
                        f"types are supported as the default type")
    _DEFAULT[0] = d


def from_numpy_dtype(np_dtype) -> DType:
    """The DType of a NumPy dtype. Raises TypeError for unsupported ones (e.g. complex, uint16)."""
    d = np.dtype(np_dtype)
    if d in _BY_NP:
        return _BY_NP[d]
    raise TypeError(f"dtype: expected one of bool, uint8, int8, int16, int32, int64, float16, "
                    f"float32, float64, got numpy dtype {d}")


def to_dtype(x) -> DType:
    """Accept a DType, its name ('float32'), a NumPy dtype or the Python types float/int/bool.

    The one parser of a dtype argument (factories, ``to``, ``new_*``, ``sum(dtype=)`` ...).
    Python's types map as PyTorch's do, whatever the default dtype: ``float`` -> float64,
    ``int`` -> int64, ``bool`` -> bool (``torch.zeros(2, dtype=float)`` is float64).
    Raises:  TypeError for ``complex`` (clgrad has no complex dtypes) and anything else."""
    if isinstance(x, DType):
        return x
    if x is float:
        return float64
    if x is int:
        return int64
    if x is bool:
        return bool_
    if x is complex:
        raise TypeError("dtype: expected a real dtype, got complex; clgrad has no complex "
                        "dtypes (use float32 or float64 tensors for the real parts)")
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
    int16 < int32 < int64 < float16, bfloat16 < float32 < float64; uint8 with int8 gives int16
    and float16 with bfloat16 float32 (the smallest types holding both ranges)."""
    if a._rank == b._rank and a is not b:  # uint8 and int8; float16 and bfloat16
        return int16 if a._rank == 1 else float32
    return a if a._rank >= b._rank else b


def check_fits(op: str, dtype: DType, value):
    """Raise RuntimeError when the Python number ``value`` does not fit ``dtype`` (PyTorch's
    ``overflows`` rule for fills, full(), tensor() literals, masked_fill and clamp bounds):
    an int fits a signed dtype within [min, max], an unsigned one within [-max, max] (a
    negative int wraps, uint8 -1 is 255); a float fits an integer dtype when finite and within
    [min, max] (uint8 -1.0 and 255.5 do not), float32, float16 and bfloat16 unless finite
    beyond the largest finite value (float16 65519.0 does not fit though it rounds to 65504:
    c10's overflows compares with the maximum). PyTorch's full() checks float32 only, so
    full(70000.0, float16) is inf there and here. Arithmetic with a scalar wraps around
    instead (uint8 + 300 is uint8 + 44), and a float16 x + 70000.0 is inf."""
    if dtype.is_bool or isinstance(value, (bool, np.bool_)):
        return
    if isinstance(value, (float, np.floating)):
        if dtype.is_floating_point:
            top = _FLOAT_MAX.get(dtype.name) if dtype is float32 or op != "full" else None
            bad = top is not None and np.isfinite(value) and abs(value) > top
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


_FLOAT_MAX = {"float32": float(np.finfo(np.float32).max),
              "float16": float(np.finfo(np.float16).max),
              "bfloat16": 3.3895313892515355e+38}  # (2 - 2^-7) * 2^127


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


def _kind(d: DType) -> int:
    """0 bool, 1 integer, 2 floating: PyTorch's categories of dtypes."""
    return 2 if d.is_floating_point else 0 if d.is_bool else 1


def _number_dtype(value) -> DType:
    """The dtype a Python number takes part in promotion with (PyTorch's wrapped numbers): bool,
    int64, or the default float dtype. NumPy scalars count as Python numbers."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (float, np.floating)):
        return get_default_dtype()
    raise TypeError(f"result_type: expected a Tensor or a number (bool, int, float), got "
                    f"{type(value).__name__}")


def _combine(higher: DType | None, lower: DType | None) -> DType | None:
    """PyTorch's combine_categories: the dtype of a higher priority category wins unless the
    lower one is of a higher kind (bool < integer < floating); then they promote."""
    if higher is None:
        return lower
    if lower is None or higher.is_floating_point:
        return higher
    if higher.is_bool or lower.is_floating_point:
        return promote(higher, lower)
    return higher


def result_type(*operands) -> DType:
    """The dtype an op on ``operands`` computes in and returns (torch.result_type's rules,
    for any number of operands; None entries are skipped).

    Operands fall in three priority categories: tensors with dims > 0-dim tensors > Python
    numbers. Within the highest category present the dtypes promote (``promote``); a lower
    category matters only when it is of a higher kind (bool < integer < floating), and then a
    0-dim tensor brings its own dtype, a Python number its kind's default (bool, int64,
    get_default_dtype(): float32 unless set). So uint8 [1, 2] + int64 tensor(300) is uint8,
    bool mask * tensor(2) int64, int32 tensor * 2.5 float32 (the default), int32 tensor *
    float64 tensor(2.5) float64.

    Operands: anything with a clgrad ``dtype`` and ``ndim`` (a Tensor), or a bool, int or
    float (NumPy scalars alike). Raises TypeError for anything else, and when there is none.
    """
    best: list = [None, None, None]  # dimensioned tensors, 0-dim tensors, numbers
    for v in operands:
        if v is None:
            continue
        dt = getattr(v, "dtype", None)
        if isinstance(dt, DType):
            cat = 0 if v.ndim else 1
        else:
            cat, dt = 2, _number_dtype(v)
        best[cat] = dt if best[cat] is None else promote(best[cat], dt)
    out = _combine(best[0], _combine(best[1], best[2]))
    if out is None:
        raise TypeError("result_type: expected at least one Tensor or number, got none")
    return out


def scalar_dtype(tensor_dtype: DType, value) -> DType:
    """Result type of ``tensor op python_scalar`` (result_type's rule for a tensor of any
    ndim and one number: the number only lifts the kind)."""
    return _combine(tensor_dtype, _number_dtype(value))


def _dtype_arg(op: str, name: str, pos: int, d) -> DType:
    if not isinstance(d, DType):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be torch.dtype, not "
                        f"{type(d).__name__}")
    return d


def promote_types(type1: DType, type2: DType) -> DType:
    """torch.promote_types: the smallest dtype both ``type1`` and ``type2`` convert to without
    changing kind downwards (``promote``). Raises TypeError for an argument that is not a
    dtype."""
    return promote(_dtype_arg("promote_types", "type1", 1, type1),
                   _dtype_arg("promote_types", "type2", 2, type2))


def can_cast(from_: DType, to: DType) -> bool:
    """Whether an op's result of dtype ``from_`` may be written into a tensor of dtype ``to``
    (torch.can_cast, the rule of every in-place op and ``out=``): never to a lower kind
    (floating to integer or bool, integer to bool); any cast within a kind or upwards.
    Raises TypeError for an argument that is not a dtype."""
    return _kind(_dtype_arg("can_cast", "from_", 1, from_)) <= \
        _kind(_dtype_arg("can_cast", "to", 2, to))


_TORCH_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short",
                "int32": "Int", "int64": "Long", "float16": "Half", "float32": "Float",
                "float64": "Double", "bfloat16": "BFloat16"}


def torch_name(d: DType) -> str:
    """PyTorch's ScalarType name of ``d`` ('Float', 'Long' ...), as its error messages say."""
    return _TORCH_NAMES[d.name]


def to_bf16_bits(values) -> np.ndarray:
    """The bfloat16 bits (uint16) of ``values`` (any real array or number): rounded to float32
    first (a float64 as PyTorch's conversion, through float), then to the nearest bfloat16,
    ties to even; NaN stays NaN (quiet, its sign kept), beyond bfloat16's range is inf.
    Source: the rounding of c10/util/BFloat16.h (round_to_nearest_even)."""
    with np.errstate(over="ignore", invalid="ignore"):
        f = np.array(values, dtype=np.float32, order="C")  # (a copy; 0-dim kept)
    u = f.view(np.uint32)
    bits = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))
    nan = np.isnan(f)
    if nan.any():
        bits = np.where(nan, (u >> np.uint32(16)) | np.uint32(0x40), bits)
    return bits.astype(np.uint16)


def host_np(d: DType) -> np.dtype:
    """The NumPy dtype ``d``'s VALUES take on the host: ``d.np``, float32 for bfloat16 (whose
    ``np`` is its stored bits)."""
    return _F32_NP if d is bfloat16 else d.np


def to_storage(values, d: DType) -> np.ndarray:
    """``values`` (an array or number) as ``d``'s stored elements (``d.np``; bfloat16: its
    bits, ``to_bf16_bits``), C-contiguous; casts as NumPy's astype."""
    if d is bfloat16:
        return to_bf16_bits(values)
    return np.ascontiguousarray(np.asarray(values).astype(d.np, copy=False))


_F32_NP = np.dtype(np.float32)


def bf16_to_float32(bits) -> np.ndarray:
    """The float32 values of bfloat16 ``bits`` (uint16; exact: the bits are float32's top 16)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


class finfo:
    """torch.finfo: machine limits of a floating dtype (``bits``, ``eps``, ``max``, ``min``,
    ``tiny``/``smallest_normal``, ``resolution``, ``dtype``), floats as PyTorch's. Default:
    ``get_default_dtype()``. Raises TypeError for a dtype that is not floating."""

    _BF16 = {"bits": 16, "eps": 0.0078125, "max": 3.3895313892515355e+38,
             "min": -3.3895313892515355e+38, "tiny": 1.1754943508222875e-38,
             "resolution": 0.01}  # (2^-7; (2 - 2^-7) * 2^127; 2^-126; 10^-2)

    def __init__(self, type=None):
        d = get_default_dtype() if type is None else to_dtype(type)
        if not d.is_floating_point:
            raise TypeError(f"finfo: expected a floating point dtype, got {d!r} (iinfo takes "
                            f"integer ones)")
        if d is bfloat16:
            for k, v in self._BF16.items():
                setattr(self, k, v)
        else:
            i = np.finfo(d.np)
            self.bits, self.eps, self.max = int(i.bits), float(i.eps), float(i.max)
            self.min, self.tiny = float(i.min), float(i.tiny)
            self.resolution = float(i.resolution)
        self.smallest_normal = self.tiny
        self.dtype = d.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """torch.iinfo: limits of an integer dtype (``bits``, ``min``, ``max``, ``dtype``).
    Raises TypeError for a floating dtype or bool (as PyTorch)."""

    def __init__(self, type):
        d = to_dtype(type)
        if d.is_floating_point or d.is_bool:
            raise TypeError(f"iinfo: expected an integer dtype, got {d!r} (finfo takes "
                            f"floating ones)")
        i = np.iinfo(d.np)
        self.bits, self.min, self.max = int(i.bits), int(i.min), int(i.max)
        self.dtype = d.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
