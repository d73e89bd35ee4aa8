"""2-D pooling of (N, C, H, W) or unbatched (C, H, W) inputs: max, average, adaptive average
and max; the 1-D poolings as 2-D ones over unit-height views (zero-copy).

Every input may be any strided view; outputs are new and contiguous. Backward kernels gather
(one work item per input element), so gradients are deterministic and need no atomics.
Kernels: kernels/pool.cl :: max_fwd/max_bwd(_tiled), avg_fwd/avg_bwd(_tiled),
adaptive_fwd/adaptive_bwd, adaptive_max_fwd/adaptive_max_bwd.
bfloat16 pools in float32 on float32 copies, its result rounded once (ew.via_float32: exact
for the max pools, PyTorch's float accumulation for the averages); indices stay int64.
"""
from __future__ import annotations

import numpy as np

from clgrad.kernel_structs import GEOM_T, longs
from clgrad import dtypes
from clgrad._args import _pair, plain_key
from clgrad.autograd import record
from clgrad.runtime import pack
from clgrad.ops import elementwise as ew
from clgrad.ops import index as ix
from clgrad.ops._util import LOCAL, defines_for, defines_of, empty, view_arg, zeros
from clgrad.tensor import Tensor

__all__ = ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "adaptive_max_pool2d",
           "max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d",
           "max_pool1d_with_indices", "max_pool2d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "max_unpool1d", "max_unpool2d"]

_FILE = "pool.cl"
_BF16 = dtypes.bfloat16
# Node.double links (autograd.graph._linked): PyTorch's pool backwards read the input, so
# a create_graph gradient requires grad and differentiates to zeros for it
_LINK_X = (0,)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """The maximum of each (dilated) window; padding counts as -inf.

    Shapes:  (N, C, H, W) -> (N, C, OH, OW), OH = floor_or_ceil((H + 2p - d(k-1) - 1) / s) + 1;
             unbatched (C, H, W) likewise. Under ceil_mode the last window must start inside
             the input or the left padding (PyTorch's rule).
    Returns: out, or (out, indices) with int64 indices y * W + x into each (H, W) plane.
    Grad:    input; on ties the first element of the window (row-major) gets the gradient.
    Raises:  RuntimeError for a bad rank, non-positive kernel/stride/dilation, negative
             padding, padding > kernel / 2, or an empty output; TypeError for non-float input.
    """
    g, out_shape, v = _geometry("max_pool2d", input, kernel_size, stride, padding, dilation,
                                ceil_mode)
    x = input
    if x._storage.dtype is _BF16:  # (see the module's docstring)
        return ew.via_float32(max_pool2d, input, kernel_size, stride, padding, dilation,
                              ceil_mode, return_indices)
    out = empty(out_shape, x._storage.dtype, x._storage.device)
    idx = empty(out_shape, dtypes.int64, x._storage.device)
    n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw = v
    tiled = _tiles_input(v)
    # small tiling windows: the window's size as defines (its loads unrolled, pool.cl)
    small = dict(TKH=kh, TKW=kw) if tiled and kh <= 4 and kw <= 4 else {}
    _launch_rows("max_fwd_tiled" if tiled else "max_fwd", x, (ow, oh, n * c), g,
                 out._storage.buffer, idx._storage.buffer, x._storage.buffer, _view4(x),
                 defines=small)

    def backward(gy):
        gx = empty(x.shape, x.dtype, x._storage.device)
        if tiled:
            _launch_rows("max_bwd_tiled", x, (ow, oh, n * c), g, gx._storage.buffer,
                         gy._storage.buffer, _view4(gy), idx._storage.buffer)
        else:
            groups = (w - 1 + pw) // sw + 1  # column groups: x + pw = group * sw + j, j < sw
            _launch_rows("max_bwd", x, (groups, h, n * c), np.int64(groups), g,
                         gx._storage.buffer, gy._storage.buffer, _view4(gy),
                         idx._storage.buffer)
        return (gx,)

    def double(gy, node):  # create_graph: gx recorded, its own backward a gather at idx
        return (record("max_pool2d_backward", backward(gy)[0], (gy,),
                       lambda ggx: (_at_argmax(ggx, idx),)),)
    out = record("max_pool2d", out, (x,), backward, saved=[idx], double=(double, _LINK_X, True))
    return (out, idx) if return_indices else out


def _at_argmax(t: Tensor, idx: Tensor) -> Tensor:
    """``t`` (the input's shape) read at the pool's argmax indices ``idx`` (flat per (H, W)
    plane): max_pool2d's backward's adjoint, recorded (a gather)."""
    return ix.gather(t.flatten(-2), -1, idx.flatten(-2)).reshape(idx.shape)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    """The mean of each window (PyTorch's avg_pool2d).

    Divisor: ``divisor_override`` if given; else the window clipped to the padded input
    (``count_include_pad``) or to the input itself. A window wholly in the padding gives 0.
    Shapes and errors as max_pool2d (dilation 1); divisor_override == 0 raises RuntimeError.
    Grad:    input.
    """
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError("avg_pool2d: expected a non-zero divisor_override, got 0")
    g, out_shape, v = _geometry("avg_pool2d", input, kernel_size, stride, padding, 1,
                                ceil_mode)
    x = input
    if x._storage.dtype is _BF16:
        return ew.via_float32(avg_pool2d, input, kernel_size, stride, padding, ceil_mode,
                              count_include_pad, divisor_override)
    div = np.int64(0 if divisor_override is None else int(divisor_override))
    inc = _INC[bool(count_include_pad)]
    out = empty(out_shape, x._storage.dtype, x._storage.device)
    n, c, h, w, oh, ow, kh, kw = v[:8]
    tiled = _tiles_input(v)  # (avg_pool2d's geometry has dilation 1)
    _launch_rows("avg_fwd_tiled" if tiled else "avg_fwd", x, (ow, oh, n * c), g,
                 out._storage.buffer, x._storage.buffer, _view4(x), div, inc,
                 defines=dict(TKH=kh, TKW=kw) if kh <= 4 and kw <= 4 else None)

    def backward(gy):
        gx = empty(x.shape, x.dtype, x._storage.device)
        if tiled:  # each input element in at most one window: one item per window
            _launch_rows("avg_bwd_tiled", x, (ow, oh, n * c), g, gx._storage.buffer,
                         gy._storage.buffer, _view4(gy), div, inc)
        else:
            _launch_rows("avg_bwd", x, (w, h, n * c), g, gx._storage.buffer,
                         gy._storage.buffer, _view4(gy), div, inc)
        return (gx,)

    def double(gy, node):  # create_graph: gx recorded; avg_bwd's adjoint is avg_fwd
        return (record("avg_pool2d_backward", backward(gy)[0], (gy,), lambda ggx: (avg_pool2d(
            ggx, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override),),
            double=True),)
    return record("avg_pool2d", out, (x,), backward, double=(double, _LINK_X, True))


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average pooling to a fixed output size (an int, or a pair whose entries may be None
    for "same as the input"). Output (i, j) pools rows [floor(i H / OH), ceil((i+1) H / OH))
    and likewise for columns (PyTorch's windows). Grad: input.
    """
    g, shape, v = _adaptive_geometry("adaptive_avg_pool2d", input, output_size)
    x = input
    if x._storage.dtype is _BF16:
        return ew.via_float32(adaptive_avg_pool2d, input, output_size)
    n, c, h, w, oh, ow = v[:6]
    out = empty(shape, x._storage.dtype, x._storage.device)
    _launch("adaptive_fwd", x, g, out.numel(), out._storage.buffer, x._storage.buffer,
            _view4(x))

    def backward(gy):
        if oh == ow == 1 and h * w:  # global pooling: gy / (H*W) broadcast, an elementwise
            # launch (adaptive_bwd took ~6 ms for 64x128x8x8 on Intel's CPU runtime, this ~1);
            # float16 divides by the float32 H*W (the tensor-number kernels' opmath)
            return (ew.div(gy.expand(x.shape), float(h * w)),)
        gx = empty(x.shape, x.dtype, x._storage.device)
        if h * w * oh * ow >= 2 ** 32:
            raise RuntimeError(f"adaptive_avg_pool2d: expected H*W*OH*OW < 2**32 (32-bit "
                               f"window math), got {h}*{w}*{oh}*{ow}")
        _launch_rows("adaptive_bwd", x, (w, h, n * c), g, gx._storage.buffer,
                     gy._storage.buffer, _view4(gy))
        return (gx,)

    def double(gy, node):  # create_graph: gx recorded; adaptive_bwd's adjoint is the forward
        return (record("adaptive_avg_pool2d_backward", backward(gy)[0], (gy,),
                       lambda ggx: (adaptive_avg_pool2d(ggx, (oh, ow)),), double=True),)
    return record("adaptive_avg_pool2d", out, (x,), backward, double=(double, _LINK_X, True))


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Max over adaptive_avg_pool2d's windows (all output sizes, also larger than the input).
    Returns out, or (out, int64 indices y * W + x). Grad: input (to the first maximum)."""
    g, shape, _ = _adaptive_geometry("adaptive_max_pool2d", input, output_size)
    x = input
    if x._storage.dtype is _BF16:
        return ew.via_float32(adaptive_max_pool2d, input, output_size, return_indices)
    out = empty(shape, x.dtype, x._storage.device)
    idx = empty(shape, dtypes.int64, x._storage.device)
    _launch("adaptive_max_fwd", x, g, out.numel(), out._storage.buffer, idx._storage.buffer,
            x._storage.buffer, _view4(x))

    def backward(gy):
        gx = empty(x.shape, x.dtype, x._storage.device)
        _launch("adaptive_max_bwd", x, g, gx.numel(), gx._storage.buffer, gy._storage.buffer,
                _view4(gy), idx._storage.buffer)
        return (gx,)

    def double(gy, node):  # create_graph: gx recorded, its own backward a gather at idx
        return (record("adaptive_max_pool2d_backward", backward(gy)[0], (gy,),
                       lambda ggx: (_at_argmax(ggx, idx),)),)
    out = record("adaptive_max_pool2d", out, (x,), backward, saved=[idx],
                 double=(double, _LINK_X, True))
    return (out, idx) if return_indices else out


# -- 1-D pooling: the 2-D ops over (N, C, 1, L) views ----------------------------------------
def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """Max over windows of (N, C, L) or (C, L) (max_pool2d over unit-height views).
    Returns out, or (out, int64 indices into L)."""
    k = _one("max_pool1d", kernel_size)
    s = k if stride is None else _one("max_pool1d", stride)
    res = max_pool2d(_unit_height("max_pool1d", input), (1, k), (1, s),
                     (0, _one("max_pool1d", padding)), (1, _one("max_pool1d", dilation)),
                     ceil_mode, return_indices)
    return (res[0].squeeze(-2), res[1].squeeze(-2)) if return_indices else res.squeeze(-2)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Mean over windows of (N, C, L) or (C, L) (avg_pool2d over unit-height views)."""
    k = _one("avg_pool1d", kernel_size)
    s = k if stride is None else _one("avg_pool1d", stride)
    return avg_pool2d(_unit_height("avg_pool1d", input), (1, k), (1, s),
                      (0, _one("avg_pool1d", padding)), ceil_mode,
                      count_include_pad).squeeze(-2)


# -- power-average pooling (composed: avg_pool of x^p, PyTorch's formula) --------------------
def lp_pool2d(input: Tensor, norm_type, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """(sum over each window of x^p)^(1/p), p = ``norm_type`` (PyTorch's F.lp_pool2d:
    (sign(s) relu(|s|) kH kW)^(1/p) with s = avg_pool2d(x^p), no padding); p = inf is
    max_pool2d(|x|), -inf -max_pool2d(-|x|).

    Shapes:  (N, C, H, W) or (C, H, W) -> pooled as avg_pool2d (stride defaults to kernel)
    Grad:    input; 0 where a window's sum is 0 (relu's mask); NaN for negative x and a
             fractional p (x^p), as PyTorch
    Raises:  ValueError for norm_type 0; avg_pool2d's errors
    """
    kh, kw = _pair("lp_pool2d", "kernel_size", kernel_size, 1)
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, kh * kw, avg_pool2d,
                    max_pool2d)


def lp_pool1d(input: Tensor, norm_type, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """(sum over each window of x^p)^(1/p) of (N, C, L) or (C, L) (see lp_pool2d)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode,
                    _one("lp_pool1d", kernel_size), avg_pool1d, max_pool1d)


def _lp_pool(x, p, kernel_size, stride, ceil_mode, numel, avg, mx):
    if isinstance(p, (int, float)) and not isinstance(p, bool):
        if p == 0:
            raise ValueError(f"norm_type must be a non-zero value, but got {p}")
        if p == float("inf"):
            return mx(ew.abs(x), kernel_size, stride, 0, 1, ceil_mode)
        if p == -float("inf"):
            return ew.neg(mx(ew.neg(ew.abs(x)), kernel_size, stride, 0, 1, ceil_mode))
    s = avg(ew.pow(x, p), kernel_size, stride, 0, ceil_mode)
    s = ew.mul(ew.mul(ew.sign(s), ew.relu(ew.abs(s))), float(numel))
    return ew.pow(s, 1.0 / p)


__all__ += ["lp_pool1d", "lp_pool2d"]


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Adaptive average of (N, C, L) or (C, L) to ``output_size`` along L."""
    return adaptive_avg_pool2d(_unit_height("adaptive_avg_pool1d", input),
                               (1, _one("adaptive_avg_pool1d", output_size))).squeeze(-2)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Adaptive max of (N, C, L) or (C, L) to ``output_size`` along L."""
    res = adaptive_max_pool2d(_unit_height("adaptive_max_pool1d", input),
                              (1, _one("adaptive_max_pool1d", output_size)), return_indices)
    return (res[0].squeeze(-2), res[1].squeeze(-2)) if return_indices else res.squeeze(-2)


# -- helpers ----------------------------------------------------------------------------------
def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False):
    """F.max_pool1d_with_indices: (values, int64 indices along L), whatever
    ``return_indices`` says (PyTorch's)."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False):
    """F.max_pool2d_with_indices: (values, int64 indices y * W + x per plane)."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size,
                                     return_indices: bool = False):
    """F.adaptive_max_pool1d_with_indices: (values, indices), always."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size,
                                     return_indices: bool = False):
    """F.adaptive_max_pool2d_with_indices: (values, indices), always."""
    return adaptive_max_pool2d(input, output_size, True)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The partial inverse of max_pool2d (SegNet): zeros with each input value put at its
    index (y * W + x per plane) of the (N, C, H, W) output.

    Shapes:  input and indices (N, C, h, w) or (C, h, w) -> (N, C, H, W) / (C, H, W),
             H = (h - 1) stride - 2 padding + kernel_size unless ``output_size`` ((H, W), or
             with the leading dims)
    Grad:    input (the output's gradient gathered at the indices)
    Raises:  RuntimeError for indices of another shape, or an index outside the output
    """
    return _unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding,
                   output_size)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """max_unpool2d's 1-D form: (N, C, l) or (C, l) -> (N, C, L),
    L = (l - 1) stride - 2 padding + kernel_size unless ``output_size``."""
    return _unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding,
                   output_size)


def _unpool(op, n, x, indices, kernel_size, stride, padding, output_size):
    if x.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{op}: expected a {n + 1}D or {n + 2}D input, got shape "
                           f"{list(x.shape)}")
    if not isinstance(indices, Tensor) or tuple(indices.shape) != tuple(x.shape):
        got = list(indices.shape) if isinstance(indices, Tensor) else type(indices).__name__
        raise RuntimeError(f"{op}: expected indices of the input's shape {list(x.shape)}, "
                           f"got {got}")
    if indices.dtype is not dtypes.int64:
        raise RuntimeError(f"{op}: expected int64 indices, got {indices.dtype}")
    k = _ntuple_of(op, "kernel_size", kernel_size, n)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and not stride) else \
        _ntuple_of(op, "stride", stride, n)
    p = _ntuple_of(op, "padding", padding, n)
    spatial = tuple(x.shape[-n:])
    if output_size is None:
        out = tuple((i - 1) * s_ - 2 * p_ + k_ for i, s_, p_, k_ in zip(spatial, s, p, k))
    else:
        out = tuple(int(v) for v in output_size)[-n:]
        if len(out) != n:
            raise ValueError(f"{op}: expected output_size of {n} or {n + 2} elements, got "
                             f"{output_size}")
    lead = tuple(x.shape[:-n])
    m = int(np.prod(out))
    flat = ew.contiguous(x).reshape(lead + (-1,))
    idx = ew.contiguous(indices).reshape(lead + (-1,))
    base = zeros(lead + (m,), x.dtype, x._storage.device)
    try:
        y = ix.scatter(base, -1, idx, flat)
    except IndexError as e:
        raise RuntimeError(f"{op}: found an invalid max index (output volumes are of size "
                           f"{'x'.join(map(str, out))})") from e
    return y.reshape(lead + out)


def _ntuple_of(op, name, v, n):
    t = (v,) * n if isinstance(v, (int, np.integer)) else tuple(v)
    if len(t) == 1 and n > 1:
        t = t * n
    if len(t) != n or not all(isinstance(e, (int, np.integer)) for e in t):
        raise ValueError(f"{op}: expected {name} an int or {n} ints, got {v!r}")
    return tuple(int(e) for e in t)


def _adaptive_geometry(op, x, output_size):
    """Checks; (packed geom_t, output shape, geom_t's values as ints) of an adaptive pooling,
    kept per signature (see _geometry)."""
    key = _signature(op, x, True, output_size)
    got = _GEOMETRY.get(key) if key is not None else None
    if got is None:
        got = _adaptive_checked(op, x, output_size)
        if key is not None:
            _keep(key, got)
    return got


def _adaptive_checked(op, x, output_size):
    _check_input(op, x)
    h, w = x.shape[-2:]
    size = _pair(op, "output_size", output_size, allow_none=True, error=TypeError)
    oh, ow = (h if size[0] is None else size[0]), (w if size[1] is None else size[1])
    if oh < 0 or ow < 0:
        raise RuntimeError(f"{op}: expected output_size >= 0, got {size}")
    n, c = (x.shape[0], x.shape[1]) if x.ndim == 4 else (1, x.shape[0])
    v = tuple(map(int, (n, c, h, w, oh, ow, 1, 1, 1, 1, 0, 0, 1, 1)))
    return pack(v, longs(GEOM_T)), ((n, c, oh, ow) if x.ndim == 4 else (c, oh, ow)), v


def _one(op, v):
    """An int or a 1-sequence of one (1-D pooling arguments)."""
    vals = tuple(v) if isinstance(v, (tuple, list)) else (v,)
    if len(vals) != 1 or not isinstance(vals[0], (int, np.integer)) or isinstance(vals[0], bool):
        raise TypeError(f"{op}: expected an int or a 1-tuple of one, got {v!r}")
    return int(vals[0])


def _unit_height(op, x):
    if not isinstance(x, Tensor) or x.ndim not in (2, 3):
        raise RuntimeError(f"{op}: expected a 2-D (C, L) or 3-D (N, C, L) input, got "
                           f"{getattr(x, 'shape', type(x).__name__)}")
    return x.unsqueeze(-2)


def _check_input(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if x.ndim not in (3, 4) or any(s == 0 for s in x.shape[-3:]):
        raise RuntimeError(f"{op}: expected a 3D (C, H, W) or 4D (N, C, H, W) input with "
                           f"non-zero C, H, W, got shape {tuple(x.shape)}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: expected a floating point input, got {x.dtype}")


def _out_size(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape: floor or ceil, then the last window must start inside
    the input or its left padding."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


_GEOMETRY: dict = {}  # _signature -> what _geometry / _adaptive_geometry gave
_GEOMETRY_MAX = 4096
_INC = (np.int32(0), np.int32(1))  # avg_pool2d's count_include_pad argument


def _signature(op, x, flag, *args):
    """What the pooling checks read, as a key: the input's type, dtype and shape, a bool
    ``flag`` (ceil_mode) and the size arguments (``plain_key``: exact ints and tuples of
    them); None (checked on every call) for anything else."""
    if type(flag) is not bool or not isinstance(x, Tensor) or plain_key(*args) is None:
        return None
    return (op, type(x), x._storage.dtype, x._shape, flag, *args)


def _keep(key, got):
    if len(_GEOMETRY) >= _GEOMETRY_MAX:
        _GEOMETRY.clear()
    _GEOMETRY[key] = got


def _geometry(op, x, kernel_size, stride, padding, dilation, ceil_mode):
    """Checks and the packed geom_t; returns (geom, output shape, geom's values as ints),
    kept per argument signature (``_signature``: the checks read nothing else, so a kept
    signature passed them; a call that raises keeps nothing)."""
    key = _signature(op, x, ceil_mode, kernel_size, stride, padding, dilation)
    got = _GEOMETRY.get(key) if key is not None else None
    if got is None:
        got = _checked(op, x, kernel_size, stride, padding, dilation, ceil_mode)
        if key is not None:
            _keep(key, got)
    return got


def _checked(op, x, kernel_size, stride, padding, dilation, ceil_mode):
    _check_input(op, x)
    k = _pair(op, "kernel_size", kernel_size, error=TypeError)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and not stride) else \
        _pair(op, "stride", stride, error=TypeError)
    p = _pair(op, "padding", padding, error=TypeError)
    d = _pair(op, "dilation", dilation, error=TypeError)
    for name, v, lo in (("kernel_size", k, 1), ("stride", s, 1), ("dilation", d, 1),
                        ("padding", p, 0)):
        if min(v) < lo:
            raise RuntimeError(f"{op}: expected {name} >= {lo}, got {v}")
    if p[0] > k[0] // 2 or p[1] > k[1] // 2:
        raise RuntimeError(f"{op}: pad should be at most half of kernel size, got padding={p} "
                           f"and kernel_size={k}")
    h, w = x.shape[-2:]
    oh = _out_size(h, k[0], s[0], p[0], d[0], ceil_mode)
    ow = _out_size(w, k[1], s[1], p[1], d[1], ceil_mode)
    c = x.shape[-3]
    if oh < 1 or ow < 1:
        raise RuntimeError(f"{op}: given input size ({c}x{h}x{w}), the calculated output size "
                           f"({c}x{oh}x{ow}) is too small (kernel_size={k}, stride={s}, "
                           f"padding={p}, dilation={d})")
    n = x.shape[0] if x.ndim == 4 else 1
    v = tuple(map(int, (n, c, h, w, oh, ow) + k + s + p + d))
    return pack(v, longs(GEOM_T)), (v[1], v[4], v[5]) if x.ndim == 3 else v[:2] + v[4:6], v


def _view4(t: Tensor) -> bytes:
    """view_t of a (N, C, H, W) or (C, H, W) tensor with the strides of N, C, H, W."""
    st = t._strides if t.ndim == 4 else (0,) + tuple(t._strides)
    return view_arg(t, st)


def _tiles_input(v) -> bool:
    """Whether the windows of geometry ``v`` (geom_t's values) tile the input (kernel ==
    stride, no padding, no dilation): each input element lies in at most one window (the
    *_tiled kernels)."""
    kh, kw, sh, sw, ph, pw, dh, dw = v[6:14]
    return (kh, kw) == (sh, sw) and ph == pw == 0 and dh == dw == 1


ROWS_LOCAL = (16, 4, 1)  # work-group of the 3-D pool kernels: 16 = Intel's CPU vector width


def _launch_rows(name, x, size, *args, defines=None):
    """A 3-D launch over ``size`` = (along a row, rows, planes); planes must fit 32 bits.
    ``defines``: more defines of the kernel's build (max_fwd_tiled's TKH, TKW)."""
    if size[0] * size[1] * size[2] == 0:
        return
    if size[2] >= 2 ** 32:
        raise RuntimeError(f"{name}: expected fewer than 2**32 (N*C) planes, got {size[2]}")
    dev = x._storage.device
    d = dict(defines_for(x.dtype), **defines) if defines else defines_of(x.dtype)
    dev.launch(dev.kernel(_FILE, name, d), size, ROWS_LOCAL, *args)


def _launch(name, x, g, total, *args):
    if total == 0:
        return
    dev = x._storage.device
    dev.launch(dev.kernel(_FILE, name, defines_of(x.dtype)), (total,), (LOCAL,),
               np.int64(total), g, *args)
