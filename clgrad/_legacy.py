"""PyTorch's legacy tensor types (``torch.FloatTensor``, ``torch.cuda.LongTensor`` ...) and
``torch.autograd.Variable``, which older programs still use.

Each type is a constructor and an ``isinstance`` test, as in PyTorch:
``FloatTensor(2, 3)`` (uninitialised; clgrad's ``empty``), ``FloatTensor([1, 2])`` (a copy of
the data), ``FloatTensor(t)`` (t, which must have the type's dtype: an alias sharing its
storage), ``FloatTensor()`` (shape (0,)); ``isinstance(x, FloatTensor)`` is True for a float32
tensor on a CPU device (``torch.cuda.FloatTensor``: on a GPU device). Calling one returns a
plain clgrad.Tensor. ``Variable(t, requires_grad=False)``: a new leaf sharing t's storage.
"""
from __future__ import annotations

from clgrad import dtypes
from clgrad.tensor import Tensor

__all__ = ["Variable", "cpu_types", "cuda_types"]

_NAMES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
          "LongTensor": "int64", "IntTensor": "int32", "ShortTensor": "int16",
          "CharTensor": "int8", "ByteTensor": "uint8", "BoolTensor": "bool"}


class _LegacyType(type):
    """The metaclass: construction and isinstance by dtype and device kind."""

    def __instancecheck__(cls, obj):
        return (isinstance(obj, Tensor) and obj.dtype is cls.dtype
                and bool(obj.is_cuda) == cls.is_cuda)

    def __call__(cls, *args, device=None):
        from clgrad import creation
        dev = device if device is not None else ("cuda" if cls.is_cuda else None)
        if len(args) == 1 and isinstance(args[0], Tensor):
            t = args[0]
            if t.dtype is not cls.dtype:
                raise TypeError(f"{cls.__name__}: expected a tensor of dtype {cls.dtype}, got "
                                f"{t.dtype}; use .to({cls.dtype}) to convert")
            return t.detach()
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return creation.empty(args or (0,), dtype=cls.dtype, device=dev)
        if len(args) == 1 and (isinstance(args[0], (list, tuple)) or
                               hasattr(args[0], "__array__")):
            return creation.tensor(args[0], dtype=cls.dtype, device=dev)
        raise TypeError(f"{cls.__name__}: expected sizes (ints), a sequence or a Tensor, got "
                        f"{tuple(type(a).__name__ for a in args)}")


def _make(name, is_cuda):
    dt = dtypes.to_dtype(_NAMES[name])
    doc = (f"Legacy tensor type: a {dt} tensor on a {'GPU' if is_cuda else 'CPU'} device "
           f"(constructor and isinstance test; see clgrad/_legacy.py).")
    return _LegacyType(name, (), {"dtype": dt, "is_cuda": is_cuda, "__doc__": doc,
                                  "__module__": "clgrad.cuda" if is_cuda else "clgrad"})


cpu_types = {n: _make(n, False) for n in _NAMES}
cuda_types = {n: _make(n, True) for n in _NAMES}


def Variable(data, requires_grad: bool = False, volatile: bool = False):  # noqa: N802
    """``torch.autograd.Variable`` (merged into Tensor since PyTorch 0.4): a new leaf sharing
    ``data``'s storage, requiring grad if asked. ``volatile`` is accepted and ignored (use
    no_grad()). Raises TypeError for a non-Tensor."""
    if not isinstance(data, Tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
    out = data.detach()
    if requires_grad:
        out.requires_grad_(True)
    return out
