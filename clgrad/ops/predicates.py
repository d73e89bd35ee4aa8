"""Predicates (PyTorch's names): is_floating_point, is_nonzero, is_complex, is_signed,
is_same_size, is_inference, and signbit elementwise.

Kernels: kernels/elementwise.cl (``signbit_op``).
"""
from __future__ import annotations

from clgrad import dtypes
from clgrad.ops import elementwise as ew
from clgrad.ops._util import defines_of, empty, launch_1d, zeros
from clgrad.ops.special import _BF16
from clgrad.tensor import Tensor

__all__ = ["signbit", "is_floating_point", "is_nonzero", "is_complex", "is_signed",
           "is_same_size", "is_inference"]

_FILE = "elementwise.cl"

def signbit(input: Tensor) -> Tensor:
    """True where the sign bit is set (PyTorch's torch.signbit): x < 0 for integers (never for
    unsigned ones and bool); for floats also -0.0 and a NaN with its sign bit set.

    Shapes: kept. Dtypes: any input; bool result. Grad: none.
    Kernels: kernels/elementwise.cl :: signbit_op
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"signbit: expected a Tensor, got {type(input).__name__}")
    if input._storage.dtype is _BF16:
        return ew.via_float32(signbit, input)
    if input.dtype.is_bool:
        return zeros(input.shape, dtypes.bool_, input._storage.device)
    out = empty(input.shape, dtypes.bool_, input._storage.device)
    launch_1d(_FILE, "signbit_op", defines_of(input.dtype), out, (input,))
    return out


def is_floating_point(input: Tensor) -> bool:
    """True for a tensor of a floating dtype (float16, bfloat16, float32, float64): PyTorch's
    torch.is_floating_point. Raises TypeError for a non-Tensor (the public entry)."""
    return input.dtype.is_floating_point


def is_nonzero(input: Tensor) -> bool:
    """Whether a one-element tensor is not zero (PyTorch's torch.is_nonzero; NaN is
    nonzero). Reads the value back from the device.

    Raises:  RuntimeError for an empty tensor or one of more than one element (PyTorch's
             messages).
    """
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.detach().reshape(()).item() != 0)


def is_complex(input: Tensor) -> bool:
    """False: clgrad has no complex dtypes (PyTorch's torch.is_complex)."""
    return input.dtype.is_complex


def is_signed(input: Tensor) -> bool:
    """Whether ``input``'s dtype is signed: floats and int8..int64, not uint8 or bool
    (PyTorch's torch.is_signed)."""
    return input.dtype.is_signed


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether two tensors have the same shape (PyTorch's torch.is_same_size)."""
    return tuple(input.shape) == tuple(other.shape)


def is_inference(input: Tensor) -> bool:
    """False: clgrad's ``inference_mode`` makes ordinary tensors, not inference tensors
    (PyTorch's torch.is_inference is True only for tensors made inside it)."""
    return False
