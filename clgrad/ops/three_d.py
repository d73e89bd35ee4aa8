"""The 3-D family (video, medical volumes): conv3d, conv_transpose3d, max/avg/adaptive pools
and channel dropout over (N, C, D, H, W), each a composition of the 2-D ops on views.

No kernel of its own: every op below is a few zero-copy views, at most a few layout copies
(``contiguous``) and the 2-D op, so its launch count does not depend on the depth, the
number of output frames or ``groups``, and its gradient is the gradient of the composition
(autograd through the views, copies and 2-D ops).

  conv3d            depth columns: the (N, OD, C, kD, H, W) view of the input's depth
                    windows copied once to (N*OD, C*kD, H, W), then ONE conv2d with the weight
                    viewed (O, C/G*kD, kH, kW) (a group's channels stay contiguous), then the
                    (N*OD, O, OH, OW) result copied back to (N, O, OD, OH, OW)
  conv_transpose3d  ONE conv_transpose2d of the frames (N*D, C_in, H, W) with the weight
                    viewed (C_in, C_out/G*kD, kH, kW), then the depth overlap-add (col2im
                    along depth: one F.fold), cropped by the depth padding
  max/avg pool3d    the 2-D pool over (N, C*D, H, W), then the same 2-D pool over the
                    (N, C, D, OH*OW) view of its result with a (kD, 1) window: the depth pool
                    (PyTorch's 3-D windows, divisors and ceil-mode rules are separable)
  adaptive pools    likewise, an adaptive 2-D pool then an adaptive (OD, OH*OW) one
  dropout3d         channel dropout of (N, C, D, H, W) (or unbatched (C, D, H, W))
"""
from __future__ import annotations

import numpy as np

from clgrad.ops import dropout as do
from clgrad.ops import padding as pd
from clgrad.ops import pool
from clgrad.ops.conv import fold as fo
from clgrad.ops.conv.transpose import conv2d, conv_transpose2d
from clgrad.tensor import Tensor

__all__ = ["conv3d", "conv_transpose3d", "max_pool3d", "max_pool3d_with_indices", "avg_pool3d",
           "adaptive_avg_pool3d", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices",
           "dropout3d", "torch_max_pool3d"]


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """3-D cross-correlation (PyTorch's ``conv3d``).

    Shapes:  input (N, C, D, H, W) or unbatched (C, D, H, W); weight (O, C/groups, kD, kH, kW);
             bias (O,) -> (N, O, OD, OH, OW), OD = (D + 2 pD - dD (kD - 1) - 1) // sD + 1, ...
    Args:    stride, dilation: int or triple; padding: int, triple, 'valid' or 'same'
             (stride 1; an odd total pads one more on the right, as PyTorch).
    How:     the depth windows as channels. The input (depth-padded by F.pad when pD > 0)
             is unfolded along depth to the view (N, OD, C, kD, H, W) (frame d * sD + k * dD),
             copied once to (N * OD, C * kD, H, W); ONE conv2d with the weight viewed
             (O, C/G * kD, kH, kW) (zero-copy for a contiguous weight; group g's channels are
             rows [g C/G kD, (g+1) C/G kD) as conv2d's groups want) and the bias; the result
             (N * OD, O, OH, OW) is copied to (N, O, OD, OH, OW). Launches: conv2d's plus 2
             copies (+1 pad), whatever D, OD, kD and groups. Memory: the columns are kD / sD
             times the input.
    Grad:    input, weight, bias (through the composition).
    Raises:  RuntimeError (PyTorch's messages) for a wrong rank, channels, groups or sizes;
             the rest as conv2d's.
    """
    x, w, batched = _conv_args("conv3d", input, weight)
    s, d = _triple("conv3d", "stride", stride), _triple("conv3d", "dilation", dilation)
    k = tuple(w.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            lohi = [(0, 0)] * 3
        elif padding == "same":
            if any(si != 1 for si in s):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            lohi = [(di * (ki - 1) // 2, di * (ki - 1) - di * (ki - 1) // 2)
                    for di, ki in zip(d, k)]
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        lohi = [(p, p) for p in _triple("conv3d", "padding", padding)]
    if isinstance(groups, (int, np.integer)) and groups > 0 and x.shape[1] != w.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(w.shape)}, expected "
                           f"input{list(x.shape)} to have {w.shape[1] * groups} channels, but "
                           f"got {x.shape[1]} channels instead")
    # depth padding (and any asymmetric 'same' padding) by F.pad; symmetric H/W to conv2d
    asym = any(lo != hi for lo, hi in lohi[1:])
    amounts = (lohi[2] + lohi[1] if asym else (0, 0, 0, 0)) + lohi[0]
    if any(amounts):
        x = pd.pad(x, amounts)
    p2 = (0, 0) if asym else (lohi[1][0], lohi[2][0])
    n, c, dp = x.shape[:3]
    span = d[0] * (k[0] - 1) + 1
    od = (dp - span) // s[0] + 1 if dp >= span else 0
    if od < 1:
        raise RuntimeError(f"conv3d: the kernel depth {k[0]} (dilation {d[0]}) is larger than "
                           f"the padded input depth {dp}")
    # (N, C, OD, H, W, span)[..., ::dD] -> (N, C, OD, H, W, kD) -> (N, OD, C, kD, H, W)
    cols = x.unfold(2, span, s[0])[..., ::d[0]].permute(0, 2, 1, 5, 3, 4)
    cols = cols.reshape(n * od, c * k[0], x.shape[3], x.shape[4])
    y = conv2d(cols, w.reshape(w.shape[0], w.shape[1] * k[0], k[1], k[2]), bias, s[1:], p2,
               d[1:], groups)
    o, oh, ow = y.shape[1:]
    y = y.view(n, od, o, oh, ow).permute(0, 2, 1, 3, 4).contiguous()
    return y if batched else y.squeeze(0)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """3-D transposed convolution (PyTorch's ``conv_transpose3d``; argument order as there).

    Shapes:  input (N, C_in, D, H, W) or (C_in, D, H, W); weight (C_in, C_out/groups, kD, kH,
             kW); bias (C_out,) -> (N, C_out, D', H', W'),
             D' = (D - 1) sD - 2 pD + dD (kD - 1) + output_padding + 1, likewise H', W'.
    How:     the frames (N * D, C_in, H, W) (one copy) through ONE conv_transpose2d with the
             weight viewed (C_in, C_out/G * kD, kH, kW): channel co * kD + kd of frame i is
             the contribution to output frame i sD + kd dD; then the depth overlap-add, one
             F.fold (col2im) of those (C_out * OH * OW * kD, D) columns (one copy) to depth
             (D - 1) sD + dD (kD - 1) + 1, cropped by pD (and zero-padded by output_padding)
             and copied to (N, C_out, D', H', W'). Launches: conv_transpose2d's plus fold's
             plus 3 copies (+1 bias add), whatever D, kD and groups.
    Grad:    input, weight, bias (through the composition).
    Raises:  RuntimeError for a wrong rank, inconsistent shapes or groups, output_padding not
             smaller than stride or dilation, a non-positive output size.
    """
    x, w, batched = _conv_args("conv_transpose3d", input, weight)
    s, d = _triple("conv_transpose3d", "stride", stride), _triple("conv_transpose3d",
                                                                  "dilation", dilation)
    p = _triple("conv_transpose3d", "padding", padding)
    op = _triple("conv_transpose3d", "output_padding", output_padding)
    n, cin, dd, h, wd = x.shape
    kd = w.shape[2]
    if cin != w.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(w.shape)}, expected "
                           f"input{list(x.shape)} to have {w.shape[0]} channels, but got {cin} "
                           f"channels instead")
    if op[0] < 0 or op[0] >= max(s[0], d[0]) or min(s) < 1 or min(d) < 1 or min(p) < 0:
        raise RuntimeError(f"conv_transpose3d: expected stride, dilation >= 1, padding >= 0 and "
                           f"output padding smaller than either stride or dilation, got "
                           f"stride={s}, padding={p}, output_padding={op}, dilation={d}")
    out_d = (dd - 1) * s[0] - 2 * p[0] + d[0] * (kd - 1) + op[0] + 1
    if out_d < 1:
        raise RuntimeError(f"conv_transpose3d: the output depth ({out_d}) is too small for "
                           f"input {list(x.shape)} and weight {list(w.shape)}")
    frames = x.permute(0, 2, 1, 3, 4).reshape(n * dd, cin, h, wd)
    w2 = w.reshape(cin, w.shape[1] * kd, w.shape[3], w.shape[4])
    y = conv_transpose2d(frames, w2, None, s[1:], p[1:], op[1:], groups, d[1:])
    cout, oh, ow = y.shape[1] // kd, y.shape[2], y.shape[3]
    full = (dd - 1) * s[0] + d[0] * (kd - 1) + 1
    if kd == 1 and s[0] == 1:
        z = y.view(n, dd, cout, oh, ow).permute(0, 2, 1, 3, 4)  # (no overlap: frame i -> i)
    else:
        cols = y.view(n, dd, cout, kd, oh, ow).permute(0, 2, 4, 5, 3, 1)
        cols = cols.reshape(n, cout * oh * ow * kd, dd)
        z = fo.fold(cols, (full, 1), (kd, 1), (d[0], 1), 0, (s[0], 1))
        z = z.view(n, cout, oh, ow, full).permute(0, 1, 4, 2, 3)
    keep = min(out_d, full - p[0])
    z = z.narrow(2, p[0], keep)
    z = pd.pad(z, (0, 0, 0, 0, 0, out_d - keep)) if keep < out_d else z.contiguous()
    if bias is not None:
        if not isinstance(bias, Tensor) or tuple(bias.shape) != (cout,):
            raise RuntimeError(f"conv_transpose3d: expected bias of shape ({cout},), got "
                               f"{getattr(bias, 'shape', bias)!r}")
        z = z + bias.view(1, cout, 1, 1, 1)
    return z if batched else z.squeeze(0)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W) (PyTorch's ``max_pool3d``).

    Shapes:  -> (N, C, OD, OH, OW), OD = floor-or-ceil((D + 2 pD - dD (kD - 1) - 1) / sD) + 1
             (ceil_mode: PyTorch's rule, a last window starting in the right padding dropped)
    How:     max_pool2d (with indices) over the (N, C*D, H, W) view, then max_pool2d over the
             (N, C, D, OH*OW) view of its result with window (kD, 1), stride (sD, 1), padding
             (pD, 0), dilation (dD, 1); the index is frame * H * W + the first pool's index
             at the frame chosen (one gather), PyTorch's flat D*H*W index, ties to the first
             in (d, h, w) order. Launches: 2 pools, 1 gather, 2 for the index arithmetic.
    Grad:    input. Raises: RuntimeError for another rank; the 2-D pools' errors otherwise.
    """
    x, batched = _pool_input("max_pool3d", input)
    k = _triple("max_pool3d", "kernel_size", kernel_size)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and not stride) else \
        _triple("max_pool3d", "stride", stride)
    p, dl = _triple("max_pool3d", "padding", padding), _triple("max_pool3d", "dilation", dilation)
    n, c, dd, h, w = x.shape
    y2, i2 = pool.max_pool2d(x.reshape(n, c * dd, h, w), k[1:], s[1:], p[1:], dl[1:],
                             ceil_mode, True)
    oh, ow = y2.shape[2:]
    y3, i3 = pool.max_pool2d(y2.view(n, c, dd, oh * ow), (k[0], 1), (s[0], 1), (p[0], 0),
                             (dl[0], 1), ceil_mode, True)
    y = y3.view(n, c, y3.shape[2], oh, ow)
    if not return_indices:
        return y if batched else y.squeeze(0)
    frame = i3.div(oh * ow, rounding_mode="floor")
    idx = (frame * (h * w) + i2.view(n, c, dd, oh * ow).gather(2, frame)).view(y.shape)
    return (y, idx) if batched else (y.squeeze(0), idx.squeeze(0))


def max_pool3d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False):
    """F.max_pool3d_with_indices: (values, flat D*H*W indices) whatever return_indices."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    """3-D average pooling (PyTorch's ``avg_pool3d``; no dilation, as there).

    How:     avg_pool2d over the (N, C*D, H, W) view (a sum when divisor_override is given),
             then avg_pool2d over the (N, C, D, OH*OW) view of its result with window (kD, 1):
             PyTorch's 3-D divisor is the product of the per-dim window counts (padding
             counted or not), so the two means make the 3-D one, and with divisor_override the
             second divides the sum by it. Launches: 2 pools (each its 2-D launches).
    Grad:    input. Raises: RuntimeError for another rank or a zero divisor_override.
    """
    x, batched = _pool_input("avg_pool3d", input)
    k = _triple("avg_pool3d", "kernel_size", kernel_size)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and not stride) else \
        _triple("avg_pool3d", "stride", stride)
    p = _triple("avg_pool3d", "padding", padding)
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError("divisor must be not zero")
    n, c, dd, h, w = x.shape
    y2 = pool.avg_pool2d(x.reshape(n, c * dd, h, w), k[1:], s[1:], p[1:], ceil_mode,
                         count_include_pad, None if divisor_override is None else 1)
    oh, ow = y2.shape[2:]
    y3 = pool.avg_pool2d(y2.view(n, c, dd, oh * ow), (k[0], 1), (s[0], 1), (p[0], 0),
                         ceil_mode, count_include_pad, divisor_override)
    y = y3.view(n, c, y3.shape[2], oh, ow)
    return y if batched else y.squeeze(0)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Adaptive 3-D average pooling: output_size an int or a triple (None keeps a dim).

    How: adaptive_avg_pool2d over (N, C*D, H, W) to (OH, OW), then over the (N, C, D, OH*OW)
    view to (OD, OH*OW) (the windows and their means are separable). Grad: input."""
    x, batched = _pool_input("adaptive_avg_pool3d", input, adaptive=True)
    od, oh, ow = _adaptive_sizes(x, output_size)
    n, c, dd, h, w = x.shape
    y2 = pool.adaptive_avg_pool2d(x.reshape(n, c * dd, h, w), (oh, ow))
    y = pool.adaptive_avg_pool2d(y2.view(n, c, dd, oh * ow), (od, oh * ow)).view(n, c, od, oh, ow)
    return y if batched else y.squeeze(0)


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """Adaptive 3-D max pooling; with return_indices, PyTorch's flat D*H*W indices.

    How: adaptive_max_pool2d (with indices) over (N, C*D, H, W), then over the
    (N, C, D, OH*OW) view to (OD, OH*OW); the index gathered as max_pool3d's. Grad: input."""
    x, batched = _pool_input("adaptive_max_pool3d", input, adaptive=True)
    od, oh, ow = _adaptive_sizes(x, output_size)
    n, c, dd, h, w = x.shape
    y2, i2 = pool.adaptive_max_pool2d(x.reshape(n, c * dd, h, w), (oh, ow), True)
    y3, i3 = pool.adaptive_max_pool2d(y2.view(n, c, dd, oh * ow), (od, oh * ow), True)
    y = y3.view(n, c, od, oh, ow)
    if not return_indices:
        return y if batched else y.squeeze(0)
    frame = i3.div(oh * ow, rounding_mode="floor")
    idx = (frame * (h * w) + i2.view(n, c, dd, oh * ow).gather(2, frame)).view(y.shape)
    return (y, idx) if batched else (y.squeeze(0), idx.squeeze(0))


def adaptive_max_pool3d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """F.adaptive_max_pool3d_with_indices: (values, indices) whatever return_indices."""
    return adaptive_max_pool3d(input, output_size, True)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Channel dropout of (N, C, D, H, W) or unbatched (C, D, H, W): whole channels zeroed
    with probability p, the rest scaled by 1 / (1 - p) (see dropout2d). Other ranks, as
    PyTorch's: a UserWarning (deprecated), then read as unbatched. Grad: input.
    Raises ValueError for p outside [0, 1]."""
    return do.channel_dropout("dropout3d", input, p, training, inplace, 3)


def _triple(op, name, v):
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            v = tuple(v) * 3
        if len(v) != 3:
            raise RuntimeError(f"{op}: expected {name} to be an int or 3 ints, got {list(v)}")
        vals = tuple(v)
    else:
        vals = (v,) * 3
    if any(not isinstance(a, (int, np.integer)) or isinstance(a, bool) for a in vals):
        raise TypeError(f"{op}: expected {name} to be ints, got {v!r}")
    return tuple(int(a) for a in vals)


def _conv_args(op, input, weight):
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if input.ndim not in (4, 5):
        raise RuntimeError(f"Expected 4D (unbatched) or 5D (batched) input to {op}, but got "
                           f"input of size: {list(input.shape)}")
    if weight.ndim != 5:
        raise RuntimeError(f"{op}: expected a 5-D weight, got {list(weight.shape)}")
    batched = input.ndim == 5
    return (input if batched else input.unsqueeze(0)), weight, batched


def _pool_input(op, input, adaptive=False):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim not in (4, 5) or (not adaptive and input.numel() == 0 and
                                    any(s == 0 for s in input.shape[-4:])):
        if adaptive:
            raise RuntimeError(f"{op}(): Expected 4D or 5D tensor, but got {list(input.shape)}")
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    batched = input.ndim == 5
    return (input if batched else input.unsqueeze(0)), batched


def _adaptive_sizes(x, output_size):
    sizes = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * 3
    if len(sizes) != 3:
        raise RuntimeError(f"adaptive pool 3d: output_size must be 3, got {output_size!r}")
    return tuple(int(x.shape[2 + i]) if o is None else int(o) for i, o in enumerate(sizes))


def torch_max_pool3d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                     ceil_mode: bool = False) -> Tensor:
    """``torch.max_pool3d``: F.max_pool3d without ``return_indices``."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode)
