"""Resampling: interpolate (nearest, nearest-exact, linear, bilinear; 'area' is adaptive
average pooling) with PyTorch's sizes, scales and source indices.

Inputs (N, C, L) or (N, C, H, W), any strided view (1-D is 2-D over a unit-height view);
outputs new and contiguous.
Kernels: kernels/upsample.cl :: nearest_fwd/nearest_bwd, linear_fwd/linear_bwd (backward
gathers: deterministic, no atomics).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from clgrad.kernel_structs import UGEOM_T, longs
from clgrad import dtypes
from clgrad.autograd import record
from clgrad.ops import elementwise as ew
from clgrad.ops._util import launch_items, empty, scalar
from clgrad.ops.pool import _view4, adaptive_avg_pool2d
from clgrad.runtime import pack
from clgrad.tensor import Tensor

__all__ = ["upsample_nearest", "upsample_bilinear", "interpolate"]

_FILE = "upsample.cl"
_MODES = {"nearest": 2, "nearest-exact": 2, "linear": 1, "bilinear": 2, "trilinear": 3,
          "area": 2}


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners=None, recompute_scale_factor=None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of ``input`` (PyTorch's F.interpolate).

    Shapes:  (N, C, L) for 'nearest', 'nearest-exact', 'linear', 'area';
             (N, C, H, W) for 'nearest', 'nearest-exact', 'bilinear', 'area';
             (N, C, D, H, W) for 'nearest', 'nearest-exact', 'trilinear', 'area': the 2-D
             resampling of the (N, C*D, H, W) frames, then of the (N, C, D, OH*OW) view of the
             result along D alone (the modes are separable; 2 launches, grad through both).
    Size:    ``size`` (int or tuple) or ``scale_factor`` (float or tuple): out =
             floor(in * scale_factor). Source coordinates use 1 / scale_factor when given
             (unless ``recompute_scale_factor``), else in / out; with ``align_corners``
             (linear modes) (in - 1) / (out - 1), the corner pixels aligned.
    Grad:    input; differentiable again (create_graph: the backward's gather recorded, its
             backward the resampling, both linear, so every order flows).
    Raises:  ValueError for both or neither of size and scale_factor, a bad rank for the
             mode, align_corners with a non-linear mode, non-positive sizes or scales;
             NotImplementedError for 'bicubic' and antialias.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"interpolate: expected a Tensor, got {type(input).__name__}")
    if mode == "bicubic" or antialias:
        raise NotImplementedError(f"interpolate: mode {mode!r} (antialias={antialias}) is not "
                                  f"supported by clgrad")
    if mode not in _MODES:
        raise ValueError(f"interpolate: expected mode 'nearest', 'nearest-exact', 'linear', "
                         f"'bilinear', 'trilinear' or 'area', got {mode!r}")
    dims = input.ndim - 2
    if dims not in (1, 2, 3) or (mode == "linear" and dims != 1) or \
            (mode == "bilinear" and dims != 2) or (mode == "trilinear" and dims != 3):
        want = {"linear": "3", "bilinear": "4", "trilinear": "5"}.get(mode, "3, 4 or 5")
        raise ValueError(f"interpolate: mode {mode!r} expects a {want}-D input, got shape "
                         f"{tuple(input.shape)}")
    linear = mode in ("linear", "bilinear", "trilinear")
    if align_corners is not None and not linear:
        raise ValueError("interpolate: align_corners option can only be set with the "
                         "interpolating modes: linear | bilinear")
    if not input.dtype.is_floating_point:
        raise TypeError(f"interpolate: expected a floating point input, got {input.dtype}")
    if input.dtype is dtypes.bfloat16:  # in float32 on a float32 copy, rounded once
        return ew.via_float32(interpolate, input, size, scale_factor, mode, align_corners,
                              recompute_scale_factor, antialias)
    ins = tuple(input.shape[2:])
    outs, scales = _sizes(ins, size, scale_factor, recompute_scale_factor)
    if dims == 3:
        return _interpolate_5d(input, outs, scales, mode, bool(align_corners))
    if mode == "area":
        x4 = input if dims == 2 else input.unsqueeze(-2)
        out = adaptive_avg_pool2d(x4, outs if dims == 2 else (1, outs[0]))
        return out if dims == 2 else out.squeeze(-2)
    x4 = input if dims == 2 else input.unsqueeze(-2)
    if dims == 1:
        ins, outs, scales = (1,) + ins, (1,) + outs, (None,) + scales
    coord = [_coord_scale(i, o, s, linear, bool(align_corners)) for i, o, s in
             zip(ins, outs, scales)]
    out = _resample(x4, outs, coord, mode, bool(align_corners))
    return out if dims == 2 else out.squeeze(-2)


def _interpolate_5d(x, outs, scales, mode, align):
    """(N, C, D, H, W): the frames resampled in H, W, then the (N, C, D, OH*OW) view in D
    (its second dim kept: scale 1, an identity in every mode)."""
    n, c, d, h, w = x.shape
    od, oh, ow = outs
    frames = x.reshape(n, c * d, h, w)
    if mode == "area":
        y = adaptive_avg_pool2d(frames, (oh, ow)).view(n, c, d, oh * ow)
        return adaptive_avg_pool2d(y, (od, oh * ow)).view(n, c, od, oh, ow)
    linear = mode == "trilinear"
    mode2 = "bilinear" if linear else mode
    coord = [_coord_scale(i, o, s, linear, align) for i, o, s in zip((d, h, w), outs, scales)]
    y = _resample(frames, (oh, ow), coord[1:], mode2, align).view(n, c, d, oh * ow)
    return _resample(y, (od, oh * ow), (coord[0], 1.0), mode2, align).view(n, c, od, oh, ow)


def _sizes(ins, size, scale_factor, recompute):
    """(output sizes, scale factors or None per dim)."""
    n = len(ins)
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: expected either size or scale_factor to be defined, "
                         "and not both")
    if size is not None:
        outs = tuple(size) if isinstance(size, (tuple, list)) else (size,) * n
        if len(outs) != n or any(not isinstance(o, (int, np.integer)) or o < 1 for o in outs):
            raise ValueError(f"interpolate: expected size to be {n} positive ints, got {size!r}")
        return tuple(int(o) for o in outs), (None,) * n
    sf = tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * n
    if len(sf) != n or any(not isinstance(s, (int, float)) or s <= 0 for s in sf):
        raise ValueError(f"interpolate: expected scale_factor to be {n} positive numbers, got "
                         f"{scale_factor!r}")
    outs = tuple(math.floor(float(i) * float(s)) for i, s in zip(ins, sf))
    if min(outs) < 1:
        raise ValueError(f"interpolate: scale_factor {scale_factor!r} gives an empty output "
                         f"for input size {ins}")
    return outs, ((None,) * n if recompute else tuple(float(s) for s in sf))


def _coord_scale(i, o, sf, linear, align):
    """PyTorch's area_pixel_compute_scale (linear) / compute_scales_value (nearest)."""
    if linear and align:
        return (i - 1) / (o - 1) if o > 1 else 0.0
    return 1.0 / sf if sf is not None else i / o


def _resample(x, outs, coord, mode, align):
    n, c, h, w = x.shape
    g = pack((n, c, h, w) + tuple(outs), longs(UGEOM_T))
    out = empty((n, c) + tuple(outs), x.dtype, x._storage.device)
    if mode.startswith("nearest"):
        name, args = "nearest", (np.float32(coord[0]), np.float32(coord[1]),
                                 np.int32(mode == "nearest-exact"))
    else:
        name, args = "linear", (scalar(x.dtype, coord[0]), scalar(x.dtype, coord[1]),
                                np.int32(align))
    _launch(name + "_fwd", x, out.numel(), g, out._storage.buffer, x._storage.buffer,
            _view4(x), *args)

    def backward(gy):
        gx = empty(x.shape, x.dtype, x._storage.device)
        _launch(name + "_bwd", x, gx.numel(), g, gx._storage.buffer, gy._storage.buffer,
                _view4(gy), *args)
        return (gx,)
    plan = (name, g, x._shape, (n, c) + tuple(outs), args)  # (slots: no call)
    return record("interpolate", out, (x,), backward,
                  double=lambda gy, node: (_backward_rec(gy, plan),))


def _run(t: Tensor, plan, forward: bool) -> Tensor:
    """The resampling (``forward``) or its adjoint, the backward's gather, of ``t`` by the
    kernels of ``plan`` = (name, geometry, input shape, output shape, scalar args);
    unrecorded (_resample's own launches, inline there)."""
    name, g, in_shape, out_shape, args = plan
    res = empty(out_shape if forward else in_shape, t.dtype, t._storage.device)
    _launch(name + ("_fwd" if forward else "_bwd"), t, res.numel(), g, res._storage.buffer,
            t._storage.buffer, _view4(t), *args)
    return res


def _backward_rec(gy: Tensor, plan) -> Tensor:
    """interpolate's backward of ``gy`` recorded (create_graph): linear in gy, its backward
    is the resampling again, recorded with this as its own, so every order flows."""
    return record("interpolate_backward", _run(gy.detach(), plan, False), (gy,),
                  lambda gg: (_forward_rec(gg, plan),), double=True)


def _forward_rec(gx: Tensor, plan) -> Tensor:
    """The resampling of ``gx`` (the input's shape), recorded with _backward_rec as its
    backward (create_graph)."""
    return record("interpolate", _run(gx.detach(), plan, True), (gx,),
                  lambda gy: (_backward_rec(gy, plan),), double=True)


def _launch(name, x, total, *args):
    launch_items(_FILE, name, x, total, *args)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated F.upsample_nearest: interpolate(mode='nearest') (with PyTorch's warning)."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated F.upsample_bilinear: interpolate(mode='bilinear', align_corners=True)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
