"""Padding: pad (constant, reflect, replicate) with its gradient.

Inputs may be any strided view; the output is new and contiguous.
Kernels: kernels/padding.cl :: pad_fwd/pad_bwd.
"""
from __future__ import annotations

import numpy as np

from clgrad import dtypes
from clgrad.autograd import record
from clgrad.ops import elementwise as ew
from clgrad.ops._util import LOCAL, MAXD, defines_for, empty, scalar, shape_arg
from clgrad.ops._util import view_arg
from clgrad.tensor import Tensor

__all__ = ["pad"]

_FILE = "padding.cl"
_MODES = {"constant": 0, "reflect": 1, "replicate": 2}
_BF16 = dtypes.bfloat16


def pad(input: Tensor, pad, mode: str = "constant", value=0) -> Tensor:
    """Pad the last len(pad) // 2 dims: pad = (left, right, top, bottom, ...), last dim first.

    Modes: 'constant' (``value``), 'reflect' (mirror without repeating the edge; each amount
    < the dim's size), 'replicate' (repeat the edge), 'circular' (wrap around: the other
    end's elements; each amount <= the size left after cropping). The last three pad at
    most the last 3 dims and leave the first dim alone. In every mode a negative amount
    crops, as PyTorch: reflect and replicate read output position o from input o - left,
    mirrored or clamped at the input's own edges; circular crops first and wraps within
    what is left.
    Shapes:  (*S) -> each padded dim n becomes n + left + right (>= 1 for reflect and
             replicate, >= 0 otherwise).
    Grad:    input (each output position's gradient goes to the element it copied);
             differentiable again (create_graph: the backward's gather recorded, its backward
             the padding with zeros, both linear, so every order flows).
    Raises:  ValueError for an odd or too long pad, a bad mode, or amounts out of range (an
             output size below those bounds included).
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"pad: expected a Tensor, got {type(input).__name__}")
    amounts = tuple(int(a) for a in pad)
    if len(amounts) % 2 or len(amounts) // 2 > input.ndim:
        raise ValueError(f"pad: expected an even number of amounts, at most 2 per dim of the "
                         f"{input.ndim}-dim input, got {amounts}")
    if mode not in _MODES and mode != "circular":
        raise ValueError(f"pad: expected mode 'constant', 'reflect', 'replicate' or "
                         f"'circular', got {mode!r}")
    x = input
    lo, hi = [0] * x.ndim, [0] * x.ndim
    for k in range(len(amounts) // 2):
        lo[x.ndim - 1 - k], hi[x.ndim - 1 - k] = amounts[2 * k], amounts[2 * k + 1]
    if mode != "constant":
        _check_nonconstant(mode, x, amounts, lo, hi)
    if mode == "circular":
        return _pad_circular(x, lo, hi)  # (cat: bfloat16's bits copied)
    if x._storage.dtype is _BF16:  # pad_fwd/pad_bwd on float32 copies: the moves exact, value
        # rounded to bfloat16, reflect's and replicate's gradient sums rounded once
        return ew.via_float32(_pad, x, amounts, mode, value)
    oshape = tuple(n + a + b for n, a, b in zip(x.shape, lo, hi))
    if mode != "constant" and min(oshape, default=1) < 1:
        raise ValueError(f"pad: {mode} padding {amounts} gives an empty output {oshape} for "
                         f"input of shape {tuple(x.shape)}: each padded dim must keep at "
                         f"least one element")
    if min(oshape, default=1) < 0:
        raise ValueError(f"pad: padding {amounts} gives a negative output size {oshape} for "
                         f"input of shape {tuple(x.shape)}")
    out = empty(oshape, x.dtype, x._storage.device)
    m = np.int32(_MODES[mode])
    _launch_pad("pad_fwd", x, out.numel(), len(oshape), shape_arg(oshape), out._storage.buffer,
                x._storage.buffer, view_arg(x), shape_arg(x.shape), shape_arg(lo), m,
                scalar(x.dtype, value))
    if not x.dtype.is_floating_point:
        return out

    def backward(g):  # (_pad_bwd inline: no call more on the first-order path)
        gx = empty(x.shape, x.dtype, x._storage.device)
        _launch_pad("pad_bwd", x, gx.numel(), x.ndim, shape_arg(x.shape), gx._storage.buffer,
                    g._storage.buffer, view_arg(g), shape_arg(oshape), shape_arg(lo), m)
        return (gx,)
    if mode == "constant" and min(lo + hi) >= 0:  # (create_graph: the backward is a slice)
        def double(g, node):
            for d, (a, n) in enumerate(zip(lo, x.shape)):
                if a or n != g.shape[d]:
                    g = g.narrow(d, a, n)
            return (ew.contiguous(g),)  # (a dense gradient, as the kernel's and PyTorch's)
    else:  # reflect, replicate, a crop: the backward's kernel recorded, its adjoint pad_fwd
        def double(g, node):
            return (_pad_bwd_rec(g, tuple(x.shape), oshape, tuple(lo), m),)
    # reflect, replicate: PyTorch's backward reads the input (linked: autograd.graph._linked)
    return record("pad", out, (x,), backward,
                  double=double if mode == "constant" else (double, (0,), True))


def _pad_fwd(x: Tensor, oshape, lo, m, value=0) -> Tensor:
    """pad_fwd's output of shape ``oshape`` (``lo`` the amounts before each dim, ``m`` the
    mode's number), unrecorded (pad's own forward, inline there)."""
    out = empty(oshape, x.dtype, x._storage.device)
    _launch_pad("pad_fwd", x, out.numel(), len(oshape), shape_arg(oshape), out._storage.buffer,
                x._storage.buffer, view_arg(x), shape_arg(x.shape), shape_arg(lo), m,
                scalar(x.dtype, value))
    return out


def _pad_bwd(g: Tensor, x_shape, oshape, lo, m) -> Tensor:
    """pad_bwd: per input element of ``x_shape``, the sum of ``g`` (``oshape``) over the
    output positions that read it; unrecorded (pad's own backward, inline there)."""
    gx = empty(x_shape, g.dtype, g._storage.device)
    _launch_pad("pad_bwd", g, gx.numel(), len(x_shape), shape_arg(x_shape), gx._storage.buffer,
                g._storage.buffer, view_arg(g), shape_arg(oshape), shape_arg(lo), m)
    return gx


def _pad_bwd_rec(g: Tensor, x_shape, oshape, lo, m) -> Tensor:
    """_pad_bwd recorded (create_graph): linear in ``g``, its backward is the padding again
    (pad_fwd with 0 as the constant), itself recorded with this as its backward, so every
    order of derivative flows."""
    geom = (x_shape, oshape, lo, m)
    return record("pad_backward", _pad_bwd(g.detach(), *geom), (g,),
                  lambda gg: (_pad_fwd_rec(gg, *geom),), double=True)


def _pad_fwd_rec(gg: Tensor, x_shape, oshape, lo, m) -> Tensor:
    """The padding (pad_fwd, constant 0) of ``gg`` (``x_shape``), recorded with _pad_bwd_rec
    as its backward (create_graph)."""
    geom = (x_shape, oshape, lo, m)
    return record("pad", _pad_fwd(gg.detach(), oshape, lo, m), (gg,),
                  lambda g: (_pad_bwd_rec(g, *geom),), double=True)


def _pad_circular(x, lo, hi):
    """Circular padding as a concatenation of narrow views (its gradient is theirs); negative
    amounts crop first (narrow), then the positive ones wrap within what is left."""
    from clgrad.ops import index as ix
    padded = any(a > 0 for a in lo + hi)
    for d in range(x.ndim):
        if lo[d] < 0 or hi[d] < 0:
            start = max(-lo[d], 0)
            x = x.narrow(d, start, x.shape[d] - start - max(-hi[d], 0))
        left, right = max(lo[d], 0), max(hi[d], 0)
        if left == 0 and right == 0:
            continue
        n = x.shape[d]
        parts = [x.narrow(d, n - left, left)] if left else []
        parts += [x] + ([x.narrow(d, 0, right)] if right else [])
        x = ix.cat(parts, d)
    return x if padded else ew.clone(x)


_pad = pad  # (inside pad, its name is the argument's)


# -- helpers ----------------------------------------------------------------------------------
def _check_nonconstant(mode, x, amounts, lo, hi):
    k = len(amounts) // 2
    if k > 3 or k > x.ndim - 1:
        raise ValueError(f"pad: {mode} padding pads at most the last 3 dims and not the first "
                         f"one; got {k} dims of padding for an input of shape "
                         f"{tuple(x.shape)}")
    for d in range(x.ndim - k, x.ndim):
        n = x.shape[d]
        kept = n - max(-lo[d], 0) - max(-hi[d], 0)  # what is left after cropping
        if mode == "circular" and kept < 0:
            raise ValueError(f"pad: circular padding ({lo[d]}, {hi[d]}) at dim {d} crops more "
                             f"than the dim's size {n} (input shape {tuple(x.shape)})")
        if mode == "circular" and (lo[d] > kept or hi[d] > kept):
            raise ValueError(f"pad: circular padding ({lo[d]}, {hi[d]}) at dim {d} must be at "
                             f"most the dim's size {kept} after cropping: it would wrap around "
                             f"more than once (input shape {tuple(x.shape)})")
        if mode == "reflect" and (lo[d] >= n or hi[d] >= n):
            raise ValueError(f"pad: reflect padding ({lo[d]}, {hi[d]}) at dim {d} must be "
                             f"less than the dim's size {n} (input shape {tuple(x.shape)})")
        if n == 0:
            raise ValueError(f"pad: {mode} padding of an empty dim {d} (input shape "
                             f"{tuple(x.shape)})")


def _launch_pad(name, x, total, nd, *args):
    if total == 0:
        return
    if nd > MAXD:
        raise RuntimeError(f"pad: tensors of more than {MAXD} dims are not supported, got "
                           f"{x.ndim}")
    dev = x._storage.device
    dev.launch(dev.kernel(_FILE, name, defines_for(x.dtype)), (total,), (LOCAL,),
               np.int64(total), np.int32(nd), *args)
