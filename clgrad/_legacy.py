"""PyTorch's legacy tensor types (``torch.FloatTensor``, ``torch.cuda.LongTensor`` ...) and
``torch.autograd.Variable``, which older programs still use.

Each type is a constructor and an ``isinstance`` test, as in PyTorch:
``FloatTensor(2, 3)`` (uninitialised; clgrad's ``empty``), ``FloatTensor([1, 2])`` (a copy of
the data), ``FloatTensor(t)`` (t, which must have the type's dtype: an alias sharing its
storage), ``FloatTensor()`` (shape (0,)); ``isinstance(x, FloatTensor)`` is True for a float32
tensor on a CPU device (``torch.cuda.FloatTensor``: on a GPU device). Calling one returns a
plain clgrad.Tensor. ``Variable(t, requires_grad=False)``: a new leaf sharing t's storage
(clgrad/autograd/variable.py).
"""
from __future__ import annotations

from clgrad import dtypes
from clgrad.autograd.variable import Variable  # noqa: F401  (exported here too)
from clgrad.tensor import _LEGACY_INIT, Size, Tensor

__all__ = ["Variable", "cpu_types", "cuda_types", "set_default_tensor_type"]

_NAMES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
          "LongTensor": "int64", "IntTensor": "int32", "ShortTensor": "int16",
          "CharTensor": "int8", "ByteTensor": "uint8", "BoolTensor": "bool"}


class _LegacyType(type):
    """The metaclass: construction and isinstance by dtype and device kind."""

    def __instancecheck__(cls, obj):
        return (isinstance(obj, Tensor) and obj.dtype is cls.dtype
                and bool(obj.is_cuda) == cls.is_cuda)

    def __call__(cls, *args, device=None):
        dev = device if device is not None else ("cuda" if cls.is_cuda else None)
        if len(args) == 1 and isinstance(args[0], Tensor) and args[0].dtype is not cls.dtype:
            raise TypeError(f"{cls.__name__}: expected a tensor of dtype {cls.dtype}, got "
                            f"{args[0].dtype}; use .to({cls.dtype}) to convert")
        return _construct(cls.__name__, cls.dtype, args, dev)


def _construct(name, dtype, args, device):
    """A legacy constructor's tensor: sizes (ints or one Size) -> uninitialised, a sequence
    (list, tuple, range: pygcn's ``LongTensor(range(140))``) or array -> a copy of the data, a
    Tensor -> an alias (detached), nothing -> shape (0,)."""
    from clgrad import creation
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0].detach()
    sizes = tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) else args
    if all(isinstance(a, int) and not isinstance(a, bool) for a in sizes):
        return creation.empty(sizes or (0,), dtype=dtype, device=device)
    if len(args) == 1 and (isinstance(args[0], (list, tuple, range))
                           or hasattr(args[0], "__array__")):
        return creation.tensor(args[0], dtype=dtype, device=device)
    raise TypeError(f"{name}: expected sizes (ints), a sequence or a Tensor, got "
                    f"{tuple(type(a).__name__ for a in args)}")


def _tensor_init(self, args, device):
    """``torch.Tensor(...)``, PyTorch's legacy constructor (tensor.py calls it for a
    ``Tensor(...)`` whose first argument is not a Storage): as ``FloatTensor(...)`` with the
    default dtype, except that a Tensor of any dtype gives an alias of it."""
    t = _construct("Tensor", dtypes.get_default_dtype(), args, device)
    for name in ("_storage", "_shape", "_strides", "_offset", "_requires_grad", "_grad",
                 "_grad_fn", "_base", "_rebase", "_rebase_seen", "_retains_grad",
                 "_post_acc_hooks"):
        setattr(self, name, getattr(t, name))


def _make(name, is_cuda):
    dt = dtypes.to_dtype(_NAMES[name])
    doc = (f"Legacy tensor type: a {dt} tensor on a {'GPU' if is_cuda else 'CPU'} device "
           f"(constructor and isinstance test; see clgrad/_legacy.py).")
    return _LegacyType(name, (), {"dtype": dt, "is_cuda": is_cuda, "__doc__": doc,
                                  "__module__": "clgrad.cuda" if is_cuda else "clgrad"})


cpu_types = {n: _make(n, False) for n in _NAMES}
_LEGACY_INIT[0] = _tensor_init
cuda_types = {n: _make(n, True) for n in _NAMES}


def set_default_tensor_type(t) -> None:
    """torch.set_default_tensor_type (deprecated in PyTorch): ``FloatTensor``,
    ``DoubleTensor``, ``HalfTensor``, ``BFloat16Tensor`` or their names ('torch.DoubleTensor')
    set the default floating dtype (``dtypes.set_default_dtype``).

    Raises:  TypeError for a CUDA type ('torch.cuda.FloatTensor', clgrad.cuda.FloatTensor):
             PyTorch's also moves the default device to CUDA, which clgrad does with
             ``set_default_device("cuda")`` and ``set_default_dtype`` instead; TypeError for a
             non-floating type or anything else (as PyTorch's)."""
    name = t if isinstance(t, str) else getattr(t, "__name__", None)
    cuda = getattr(t, "is_cuda", False) if not isinstance(t, str) else t.startswith("torch.cuda.")
    if cuda:
        raise TypeError(f"set_default_tensor_type: a CUDA tensor type ({t!r}) would also make "
                        f"CUDA the default device; clgrad does not tie the device to a type: "
                        f"use clgrad.set_default_device('cuda') and clgrad.set_default_dtype()")
    key = name.rsplit(".", 1)[-1] if isinstance(name, str) else None
    dt = {"FloatTensor": dtypes.float32, "DoubleTensor": dtypes.float64,
          "HalfTensor": dtypes.float16, "BFloat16Tensor": dtypes.bfloat16}.get(key)
    if dt is None:
        raise TypeError(f"set_default_tensor_type: expected a floating tensor type "
                        f"(FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor) or its name, "
                        f"got {t!r}; only floating-point types are supported as the default type")
    dtypes.set_default_dtype(dt)
