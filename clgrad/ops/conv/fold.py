"""``unfold`` (im2col) and ``fold`` (col2im): PyTorch's F.unfold / F.fold, through the im2col
algorithm's kernels (kernels/conv_im2col_any.cl).

Layout: PyTorch's (N, C * kh * kw, L), rows ordered (c, i, j) and the L = oH * oW blocks in
row-major order, with oH = (H + 2 ph - dh (kh - 1) - 1) // sh + 1 (oW likewise). The kernels'
column layout col[g][k][n][p] is that layout when the problem is one sample (n = 1) of N groups
(g = N): the (N, C, H, W) input is viewed as X (1, N, C, H, W), so one launch writes the
result without a transpose. fold is col2im (its kernel sums the overlapping blocks into each
pixel, writing every pixel once); each op is the other's adjoint, so unfold's gradient is fold
of the output gradient and fold's is unfold.

Dtypes: float16 (on devices with cl_khr_fp16), float32, float64; bfloat16 runs in float32
(``elementwise.via_float32``). Other dtypes raise RuntimeError (PyTorch's CPU kernels take only
floating types; bool, which PyTorch also takes, is not supported here).
"""
from __future__ import annotations

import numpy as np

from clgrad import dtypes
from clgrad.autograd import record
from clgrad.ops import elementwise as ew
from clgrad.ops._util import copy_raw, defines_of, empty
from clgrad.ops.conv import op as _op
from clgrad.ops.conv.algorithms import WG, _up
from clgrad.ops.conv.problem import Problem, raw
from clgrad.tensor import Tensor

__all__ = ["unfold", "fold"]

# (sample, channel) maps per launch at most: the kernels' launch dimension 1 (65535 is the
# smallest limit of a grid dimension on GPUs); larger batches run in chunks of samples
MAPS_PER_LAUNCH = 65535
_FLOATS = ("float16", "float32", "float64")


def _pair(op, name, v):
    """PyTorch's IntArrayRef[2] argument: an int or 2 ints (RuntimeError for another length,
    TypeError for a non-int)."""
    vals = tuple(v) if isinstance(v, (tuple, list)) else (v,)
    if isinstance(v, (tuple, list)) and len(vals) != 2:
        raise RuntimeError(f"{op}: It is expected {name} equals to 2, but got size {len(vals)}")
    if len(vals) == 1:
        vals = vals * 2
    for e in vals:
        if not isinstance(e, (int, np.integer)) or isinstance(e, bool):
            raise TypeError(f"{op}: expected {name} to be an int or a pair of ints, got {v!r}")
    return tuple(int(e) for e in vals)


def _geometry(op, kernel_size, dilation, padding, stride):
    k = _pair(op, "kernel_size", kernel_size)
    d = _pair(op, "dilation", dilation)
    p = _pair(op, "padding", padding)
    s = _pair(op, "stride", stride)
    if min(k) <= 0:
        raise RuntimeError(f"{op}: kernel size should be greater than zero, but got "
                           f"kernel_height: {k[0]} kernel_width: {k[1]}")
    if min(s) <= 0:
        raise RuntimeError(f"{op}: stride should be greater than zero, but got stride_height: "
                           f"{s[0]} stride_width: {s[1]}")
    if min(d) <= 0:
        raise RuntimeError(f"{op}: dilation should be greater than zero, but got "
                           f"dilation_height: {d[0]} dilation_width: {d[1]}")
    if min(p) < 0:
        raise RuntimeError(f"{op}: padding should be non-negative, but got pad_height: {p[0]} "
                           f"pad_width: {p[1]}")
    return k, d, p, s


def _blocks(h, w, k, d, p, s):
    """The number of sliding blocks along each dim (oH, oW)."""
    return tuple((n + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1
                 for i, n in enumerate((h, w)))


def _check_dtype(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected input to be a Tensor, got {type(x).__name__}")
    if x.dtype is not dtypes.bfloat16 and x.dtype.name not in _FLOATS:
        raise RuntimeError(f"{op}: expected a floating point input (float16, bfloat16, float32 "
                           f"or float64), got {x.dtype}")
    if x.dtype is dtypes.float16 and not x._storage.device.fp16:
        raise RuntimeError(f"{op}: float16 tensors need a device with cl_khr_fp16; "
                           f"{x._storage.device.name!r} lacks it")


def _problem(n, c, h, w, k, d, p, s, oh, ow, x=(0,) * 6, y=(0,) * 6) -> Problem:
    """conv.h's problem of one sample of n groups of c channels (see the module docstring)."""
    return Problem(1, n, c, h, w, c, oh, ow, k[0], k[1], s[0], s[1], d[0], d[1], p[0], p[1],
                   x=x, y=y)


def _chunks(n, c):
    if c > MAPS_PER_LAUNCH:
        raise RuntimeError(f"unfold/fold: at most {MAPS_PER_LAUNCH} channels are supported, got "
                           f"{c}")
    step = max(1, MAPS_PER_LAUNCH // c)
    return [(n0, min(step, n - n0)) for n0 in range(0, n, step)]


def _check_index_math(op, h, w, oh, ow, n, c):
    if max(h * w, oh * ow, n * c) >= 1 << 31:
        raise RuntimeError(f"{op}: the kernels' 32-bit index math takes maps and map counts "
                           f"below 2**31, got {h}x{w} -> {oh}x{ow}, {n * c} maps")


def _im2col(x: Tensor, k, d, p, s, oh, ow) -> Tensor:
    """The (N, C kh kw, oH oW) columns of a 4-D float16/32/64 tensor (any strides); no
    autograd."""
    n, c, h, w = x.shape
    L, K = oh * ow, c * k[0] * k[1]
    dev = x._storage.device
    out = empty((n, K, L), x.dtype, dev)
    if out.numel() == 0:
        return out
    _check_index_math("unfold", h, w, oh, ow, n, c)
    kern = dev.kernel("conv_im2col_any.cl", "im2col", defines_of(x.dtype))
    sn, sc, sh, sw = x._strides
    for n0, nb in _chunks(n, c):
        pr = _problem(nb, c, h, w, k, d, p, s, oh, ow,
                      x=(x._offset + n0 * sn, 0, sn, sc, sh, sw))
        col = out if nb == n else empty((nb, K, L), x.dtype, dev)
        dev.launch(kern, (_up(L, WG), nb * c, 1), (WG, 1, 1), pr.pack(), np.int64(0),
                   np.int64(1), x._storage.buffer, col._storage.buffer)
        if col is not out:
            copy_raw(raw(out, (nb, K, L), (K * L, L, 1), n0 * K * L), col)
    return out


def _col2im(col: Tensor, c, h, w, k, d, p, s, oh, ow) -> Tensor:
    """The (N, C, H, W) sums of a (N, C kh kw, L) float16/32/64 tensor's blocks; no
    autograd."""
    n = col.shape[0]
    K, L = col.shape[1], col.shape[2]
    dev = col._storage.device
    out = empty((n, c, h, w), col.dtype, dev)
    if out.numel() == 0:
        return out
    _check_index_math("fold", h, w, oh, ow, n, c)
    kern = dev.kernel("conv_im2col_any.cl", "col2im", defines_of(col.dtype))
    for n0, nb in _chunks(n, c):
        part = raw(col, (nb, K, L), col._strides, col._offset + n0 * col._strides[0])
        if part._offset != 0 or not part.is_contiguous():  # the kernel reads col from 0
            dense = empty((nb, K, L), col.dtype, dev)
            copy_raw(dense, part)
            part = dense
        pr = _problem(nb, c, h, w, k, d, p, s, oh, ow,
                      y=(n0 * c * h * w, 0, c * h * w, h * w, w, 1))
        dev.launch(kern, (_up(h * w, WG), nb * c, 1), (WG, 1, 1), pr.pack(), np.int64(0),
                   np.int64(1), part._storage.buffer, out._storage.buffer)
    return out


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Extract sliding local blocks (im2col; PyTorch's F.unfold).

    Shapes:  (N, C, H, W) -> (N, C kh kw, L); unbatched (C, H, W) -> (C kh kw, L), with
             L = oH oW and oH = (H + 2 padding - dilation (kh - 1) - 1) // stride + 1 (oW
             likewise): out[n, (c kh + i) kw + j, bh oW + bw] = input_padded[n, c,
             bh sh + i dh, bw sw + j dw] (zero in the padding)
    Args:    kernel_size, dilation, padding, stride: an int or a pair of ints
    Dtypes:  float16, bfloat16 (computed in float32), float32, float64
    Grad:    input: fold of the output gradient
    Raises:  RuntimeError for input not 3-D/4-D or with an empty non-batch dim, a size <= 0
             (padding < 0), no whole block, another dtype; TypeError for a non-int size
    Kernel:  conv_im2col_any.cl's im2col
    """
    _check_dtype("unfold", input)
    k, d, p, s = _geometry("unfold", kernel_size, dilation, padding, stride)
    if input.ndim not in (3, 4) or any(v == 0 for v in input.shape[-3:]):
        raise RuntimeError(f"unfold: Expected 3D or 4D (batch mode) tensor with possibly 0 "
                           f"batch size and other non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    if input.dtype is dtypes.bfloat16:
        return ew.via_float32(unfold, input, k, d, p, s)
    if input.ndim == 3:
        return unfold(input.unsqueeze(0), k, d, p, s).squeeze(0)
    n, c, h, w = input.shape
    oh, ow = _blocks(h, w, k, d, p, s)
    if oh < 1 or ow < 1:
        raise RuntimeError(f"unfold: Given input with spatial size ({h}, {w}), kernel_size="
                           f"{k}, dilation={d}, padding={p}, calculated shape of the array of "
                           f"sliding blocks as ({oh}, {ow}), but its components must be at "
                           f"least one.")
    out = _im2col(input, k, d, p, s, oh, ow)

    def backward(g):
        return (fold(g, (h, w), k, d, p, s),)
    return record("unfold", out, (input,), backward, double=True)


_op._UNFOLD.append(unfold)  # conv2d's create_graph path (ops/conv/op.py _composed)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Combine sliding local blocks into a tensor, summing overlaps (col2im; PyTorch's F.fold),
    the adjoint of unfold.

    Shapes:  (N, C kh kw, L) -> (N, C, H, W); unbatched (C kh kw, L) -> (C, H, W), with
             (H, W) = output_size and L the number of blocks unfold gives for it:
             out[n, c, y, x] = sum of input[n, (c kh + i) kw + j, bh oW + bw] over the blocks
             and taps with bh sh + i dh - ph = y and bw sw + j dw - pw = x
    Args:    output_size, kernel_size, dilation, padding, stride: an int or a pair of ints
    Dtypes:  float16, bfloat16 (computed in float32), float32, float64
    Grad:    input: unfold of the output gradient
    Raises:  RuntimeError for input not 2-D/3-D or with an empty non-batch dim, dim -2 not
             divisible by kh kw, dim -1 not the number of blocks, a size <= 0 (padding < 0),
             another dtype; TypeError for a non-int size
    Kernel:  conv_im2col_any.cl's col2im
    """
    _check_dtype("fold", input)
    hw = _pair("fold", "output_size", output_size)
    k, d, p, s = _geometry("fold", kernel_size, dilation, padding, stride)
    if input.ndim not in (2, 3) or any(v == 0 for v in input.shape[-2:]):
        raise RuntimeError(f"fold: Expected 2D or 3D (batch mode) tensor for input with "
                           f"possibly 0 batch size and non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    if min(hw) <= 0:
        raise RuntimeError(f"fold: output_size should be greater than zero, but got "
                           f"output_height: {hw[0]} output_width: {hw[1]}")
    if input.dtype is dtypes.bfloat16:
        return ew.via_float32(fold, input, hw, k, d, p, s)
    if input.ndim == 2:
        return fold(input.unsqueeze(0), hw, k, d, p, s).squeeze(0)
    n, K, L = input.shape
    if K % (k[0] * k[1]):
        raise RuntimeError(f"fold: Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={K} and "
                           f"kernel_size={k}.")
    h, w = hw
    oh, ow = _blocks(h, w, k, d, p, s)
    if oh < 1 or ow < 1 or oh * ow != L:
        raise RuntimeError(f"fold: Given output_size={hw}, kernel_size={k}, dilation={d}, "
                           f"padding={p}, stride={s}, expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks {max(oh, 0)} * "
                           f"{max(ow, 0)} = {max(oh, 0) * max(ow, 0)}, but got "
                           f"input.size(2)={L}.")
    c = K // (k[0] * k[1])
    out = _col2im(input, c, h, w, k, d, p, s, oh, ow)

    def backward(g):
        return (unfold(g, k, d, p, s),)
    return record("fold", out, (input,), backward, double=True)


_op._FOLD.append(fold)  # conv_transpose2d's create_graph path (ops/conv/transpose.py)
