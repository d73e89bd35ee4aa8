"""Helpers shared by the ops modules: argument packing, output allocation, 1-D launches."""
from __future__ import annotations

import struct

import numpy as np

from clgrad import dtypes, layout
from clgrad.tensor import Tensor

MAXD = 8
LOCAL = 256  # one work-group size for 1-D launches: PoCL compiles once per size
_VIEW_T = struct.Struct(f"<{MAXD + 1}q")  # view_t: offset, strides[MAXD]
_SHAPE_T = struct.Struct(f"<{MAXD}q")     # shape_t: n[MAXD]
_ZEROS = (0,) * MAXD
_LONG = struct.Struct("<q").pack
_INT = struct.Struct("<i").pack


def empty(shape, dtype, device) -> Tensor:
    """A fresh contiguous root tensor."""
    return Tensor._empty(shape, dtype, device)


def view_arg(t: Tensor, strides=None) -> bytes:
    """The by-value ``view_t`` of ``t`` (offset, strides padded to MAXD), packed as bytes."""
    st = t._strides if strides is None else strides
    return _VIEW_T.pack(t._offset, *st, *_ZEROS[len(st):])


def shape_arg(shape) -> bytes:
    """The by-value ``shape_t``, packed as bytes."""
    return _SHAPE_T.pack(*shape, *_ZEROS[len(shape):])


def scalar(dtype: dtypes.DType, value):
    """A Python number as the NumPy scalar a kernel argument of ``dtype`` needs."""
    if dtype.is_bool:
        return np.uint8(bool(value))
    return dtype.np.type(value)


def same_device(op: str, *tensors):
    """Raise RuntimeError when tensors live on different devices."""
    devs = {id(t.device): t.device for t in tensors if isinstance(t, Tensor)}
    if len(devs) > 1:
        names = ", ".join(d.name for d in devs.values())
        raise RuntimeError(f"{op}: expected all tensors on the same device, got {names}")


def defines_for(dtype: dtypes.DType) -> dict:
    """Defines selecting a kernel file's element type."""
    d = {"T": dtype.cl}
    if dtype.is_floating_point:
        d["IS_FLOAT"] = 1
    flag = {"double": "IS_DOUBLE", "long": "IS_LONG", "int": "IS_INT"}.get(dtype.cl)
    if flag:
        d[flag] = 1
    return d


def launch_1d(file: str, name: str, defines: dict, out: Tensor, operands, extra=(),
              out_first=True):
    """Launch an elementwise-style kernel over ``out.shape``.

    ``operands``: tensors already broadcast to ``out.shape`` (stride-0 views allowed), or
    ``(raw_scalar,)`` entries passed through in place. Dims are collapsed first, so contiguous
    operands are indexed as 1-D.
    """
    n = out.numel()
    if n == 0:
        return
    ost = out._strides
    if all(o._strides == ost for o in operands if isinstance(o, Tensor)) and \
            layout.is_contiguous(out._shape, ost):
        # the common case: every operand contiguous like the fresh output, indexed as 1-D
        shape = (n,)
        strides = [(1,)] * (len(operands) + 1)
    else:
        tens = [o for o in operands if isinstance(o, Tensor)]
        shape, strides = layout.collapse(out._shape, ost, *[t._strides for t in tens])
        if len(shape) > MAXD:
            raise RuntimeError(f"{name}: tensors of more than {MAXD} non-mergeable dims are "
                               f"not supported, got shape {tuple(out.shape)}")
    args = [_LONG(n), _INT(len(shape)), shape_arg(shape),
            out._storage.buffer, view_arg(out, strides[0])]
    k = 1
    for o in operands:
        if isinstance(o, Tensor):
            args += (o._storage.buffer, view_arg(o, strides[k]))
            k += 1
        else:
            args.append(o)
    args += extra
    dev = out.device
    dev.launch(dev.kernel(file, name, defines), (n,), (LOCAL,), *args)
