"""2-D convolution with PyTorch's semantics (groups, stride, padding, dilation), forward and
backward, as one shared op over a batch of groups.

The input is seen as (N, G, C/G, H, W), the weight as (G, O/G, C/G, kH, kW) and the output as
(N, G, O/G, oH, oW): 5-D views (offset + strides) of the caller's tensors, so group g is the
memory of ``input.narrow(1, g*C/G, C/G)``, ``weight.narrow(0, g*O/G, O/G)`` and
``out.narrow(1, g*O/G, O/G)``. Every kernel takes the group as a launch dimension: a conv2d is
one launch forward and, backward, one for the input gradient plus two for the weight and bias
gradients (partial sums over batch splits, then their sum written through a view of the one
weight gradient), whatever ``groups`` is. Nothing is copied; any strided input is read through
its strides. The input gradient is the forward problem again (kernels/conv.h): the output
gradient with stride-1 zeros inserted, padding (k-1)*d - p and the weight view transposed and
flipped (negative strides, still a view).

Algorithms (``clgrad.backends.conv_algorithm`` or ``CLGRAD_CONV_ALGO``; 'auto' picks by shape):
  implicit   kernels/conv.cl — implicit GEMM: a work-group stages an input window and a weight
             block in local memory and runs a register-blocked 6 x 16 micro-kernel; no workspace.
  depthwise  kernels/conv_depthwise.cl — direct stencil per (output, input) channel pair, for
             C/G == 1 (channel multiplier allowed): no GEMM, vectors along output rows.
  direct     kernels/conv_direct.cl — one work item per output element; any device, no local
             memory (the portable baseline).
  im2col     kernels/conv_im2col.cl + matmul.gemm — an im2col workspace chunked over the batch
             (at most ``backends.conv_workspace_limit`` bytes), groups and samples as GEMM batch
             dims (the weight broadcast over samples by a stride-0 view).
"""
from __future__ import annotations

import math
import os
import sys

import numpy as np
import pyopencl as cl

from clgrad import backends
from clgrad.autograd import no_grad, record
from clgrad.device import pack
from clgrad.ops import elementwise as ew
from clgrad.ops._util import defines_for, empty, same_device
from clgrad.tensor import Tensor

__all__ = ["conv2d"]

_ORDER = ("n g c h w o oh ow kh kw sh sw dh dw ph pw uh uw".split() + ["x", "k", "y"] +
          "boff bs bias mc th tw cc ntw split rows rp cp kws slab".split())
_NARGS = 18 + 3 * 6 + 3 + 11


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """2-D cross-correlation of ``input`` with ``weight`` (PyTorch's ``conv2d``).

    Shapes:  input (N, C, H, W) or unbatched (C, H, W); weight (O, C/groups, kH, kW);
             bias (O,) -> (N, O, oH, oW) (or (O, oH, oW)) with
             oH = (H + 2*pad_h - dil_h*(kH-1) - 1) // stride_h + 1, likewise oW.
    Args:    stride, dilation: int or pair; padding: int, pair, 'valid' or 'same' (stride 1).
    Dtypes:  float32, float64; all tensors alike.
    Views:   any strided input, weight and bias (read through their strides); out is new.
    Grad:    input, weight, bias.
    Raises:  RuntimeError for inconsistent shapes, channels not divisible by groups, a kernel
             larger than the padded input, non-positive stride/dilation/groups, negative
             padding, dtype or device mismatch; TypeError for non-tensors.
    Kernels: kernels/conv.cl, conv_depthwise.cl, conv_direct.cl, conv_im2col.cl (see module).
    """
    geo = _check(input, weight, bias, stride, padding, dilation, groups)
    n, o, oh, ow = geo["n"], geo["o"] * geo["g"], geo["oh"], geo["ow"]
    x4 = input if input.ndim == 4 else _raw(input, (1,) + tuple(input.shape),
                                            (0,) + input._strides)
    out = empty((n, o, oh, ow) if input.ndim == 4 else (o, oh, ow), input.dtype, input.device)
    if out.numel():
        _forward(geo, x4, weight, bias, _as4(out))

    def backward(grad):
        gi = gw = gb = None
        g4 = _as4(grad)
        if input.requires_grad:
            gi = empty(input.shape, input.dtype, input.device)
            _grad_input(geo, g4, weight, _as4(gi))
        want_b = bias is not None and bias.requires_grad
        if weight.requires_grad or want_b:
            gw = empty(weight.shape, weight.dtype, weight.device)
            gb = empty(bias.shape, bias.dtype, bias.device) if want_b else None
            _grad_weight(geo, x4, g4, gw, gb)
            gw = gw if weight.requires_grad else None
        return gi, gw, gb

    return record("conv2d", out, (input, weight, bias), backward, saved=[input, weight])


# -- argument checks --------------------------------------------------------------------------
def _pair(v, name):
    if isinstance(v, (list, tuple)):
        v = tuple(v)
        if len(v) == 1:
            v = v * 2
        if len(v) != 2 or not all(isinstance(e, (int, np.integer)) for e in v):
            raise RuntimeError(f"conv2d: expected {name} to be a single integer value or a list "
                               f"of 2 values to match the convolution dimensions, but got "
                               f"{name}={list(v)}")
        return int(v[0]), int(v[1])
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        raise TypeError(f"conv2d: expected {name} to be an int or a pair of ints, got {v!r}")
    return int(v), int(v)


def _check(x, w, b, stride, padding, dilation, groups) -> dict:
    for name, t in (("input", x), ("weight", w)):
        if not isinstance(t, Tensor):
            raise TypeError(f"conv2d: expected {name} to be a Tensor, got {type(t).__name__}")
    if b is not None and not isinstance(b, Tensor):
        raise TypeError(f"conv2d: expected bias to be a Tensor or None, got {type(b).__name__}")
    same_device("conv2d", x, w, b)
    for name, t in (("weight", w), ("bias", b)):
        if t is not None and t.dtype is not x.dtype:
            raise RuntimeError(f"conv2d: expected input and {name} of the same dtype, got input "
                               f"{x.dtype} and {name} {t.dtype}")
    if x.dtype.name not in ("float32", "float64"):
        raise RuntimeError(f"conv2d: expected float32 or float64 tensors, got {x.dtype}")
    if x.ndim not in (3, 4):
        raise RuntimeError(f"conv2d: expected 3-D (unbatched) or 4-D (batched) input, got "
                           f"input of size {list(x.shape)}")
    if w.ndim != 4:
        raise RuntimeError(f"conv2d: expected 4-D weight (out_channels, in_channels/groups, kH, "
                           f"kW), got weight of size {list(w.shape)}")
    if not isinstance(groups, (int, np.integer)) or isinstance(groups, bool):
        raise TypeError(f"conv2d: expected groups to be an int, got {groups!r}")
    if groups < 1:
        raise RuntimeError(f"conv2d: non-positive groups is not supported: expected groups >= "
                           f"1, got groups={groups}")
    sh, sw = _pair(stride, "stride")
    dh, dw = _pair(dilation, "dilation")
    if sh < 1 or sw < 1:
        raise RuntimeError(f"conv2d: non-positive stride is not supported: expected stride > "
                           f"0, got stride={[sh, sw]}")
    if dh < 1 or dw < 1:
        raise RuntimeError(f"conv2d: dilation should be greater than zero, got "
                           f"dilation={[dh, dw]}")
    x4 = tuple(x.shape) if x.ndim == 4 else (1,) + tuple(x.shape)
    n, c, h, wd = x4
    o, cg, kh, kw = w.shape
    g = int(groups)
    if c % g:
        raise RuntimeError(f"conv2d: input has {c} channels, which is not divisible by "
                           f"groups={g} (input.shape={tuple(x.shape)})")
    if o % g:
        raise RuntimeError(f"conv2d: given groups={g}, expected weight to be divisible by {g} "
                           f"at dimension 0, but got weight of size {list(w.shape)} instead")
    if cg * g != c:
        raise RuntimeError(f"conv2d: given groups={g}, weight of size {list(w.shape)}, "
                           f"expected input{list(x.shape)} to have {cg * g} channels, but got "
                           f"{c} channels instead")
    if b is not None and tuple(b.shape) != (o,):
        raise RuntimeError(f"conv2d: given weight of size {list(w.shape)}, expected bias to be "
                           f"1-dimensional with {o} elements, but got bias of size "
                           f"{list(b.shape)} instead")
    ekh, ekw = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    if isinstance(padding, str):
        if padding == "valid":
            ph = pw = 0
            hp, wp = h, wd
        elif padding == "same":
            if sh != 1 or sw != 1:
                raise RuntimeError(f"conv2d: padding='same' is not supported for strided "
                                   f"convolutions, got stride={[sh, sw]}")
            ph, pw = (ekh - 1) // 2, (ekw - 1) // 2
            hp, wp = h + ekh - 1, wd + ekw - 1
        else:
            raise RuntimeError(f"conv2d: expected padding 'valid', 'same', an int or a pair of "
                               f"ints, got {padding!r}")
    else:
        ph, pw = _pair(padding, "padding")
        if ph < 0 or pw < 0:
            raise RuntimeError(f"conv2d: negative padding is not supported, got "
                               f"padding={[ph, pw]}")
        hp, wp = h + 2 * ph, wd + 2 * pw
    if hp < ekh or wp < ekw:
        raise RuntimeError(f"conv2d: calculated padded input size per channel: ({hp} x {wp}). "
                           f"Kernel size: ({ekh} x {ekw}). Kernel size can't be greater than "
                           f"actual input size")
    return dict(n=n, g=g, c=c // g, h=h, w=wd, o=o // g, oh=(hp - ekh) // sh + 1,
                ow=(wp - ekw) // sw + 1, kh=kh, kw=kw, sh=sh, sw=sw, dh=dh, dw=dw, ph=ph, pw=pw)


# -- views ------------------------------------------------------------------------------------
def _raw(t: Tensor, shape, strides, offset=None) -> Tensor:
    """An alias of t's storage with this layout, outside autograd (a kernel operand)."""
    return Tensor(t._storage, shape, strides, t._offset if offset is None else offset)


def _as4(t: Tensor) -> Tensor:
    return t if t.ndim == 4 else _raw(t, (1,) + tuple(t.shape), (0,) + t._strides)


def _v5(t: Tensor, g: int) -> tuple:
    """(offset, strides) of the (N, G, C/G, H, W) view of a 4-D (N, C, H, W) tensor."""
    sn, sc, sh, sw = t._strides
    return (t._offset, sn, sc * (t.shape[1] // g), sc, sh, sw)


def _problem(geo, x, k, y, **extra) -> dict:
    p = dict(geo, uh=1, uw=1, x=x, k=k, y=y, boff=0, bs=0, bias=0)
    p.update(extra)
    return p


def _arg(p: dict) -> np.ndarray:
    vals = []
    for f in _ORDER:
        v = p.get(f, 0)
        vals.extend(v if isinstance(v, tuple) else (v,))
    return pack(vals, _NARGS)


def _forward_problem(geo, x4, w, out4, bias) -> dict:
    so, sc, skh, skw = w._strides
    kv = (w._offset, so * geo["o"], so, sc, skh, skw)
    p = _problem(geo, _v5(x4, geo["g"]), kv, _v5(out4, geo["g"]))
    if bias is not None:
        p.update(boff=bias._offset, bs=bias._strides[0], bias=1)
    return p


def _grad_input_problem(geo, g4, w, gi4) -> dict:
    """The input gradient as a forward problem over the output gradient (see module doc)."""
    so, sc, skh, skw = w._strides
    kh, kw = geo["kh"], geo["kw"]
    kv = (w._offset + (kh - 1) * skh + (kw - 1) * skw, so * geo["o"], sc, so, -skh, -skw)
    return dict(n=geo["n"], g=geo["g"], c=geo["o"], h=geo["oh"], w=geo["ow"], o=geo["c"],
                oh=geo["h"], ow=geo["w"], kh=kh, kw=kw, sh=1, sw=1, dh=geo["dh"],
                dw=geo["dw"], ph=(kh - 1) * geo["dh"] - geo["ph"],
                pw=(kw - 1) * geo["dw"] - geo["pw"], uh=geo["sh"], uw=geo["sw"],
                x=_v5(g4, geo["g"]), k=kv, y=_v5(gi4, geo["g"]), boff=0, bs=0, bias=0)


# -- passes -----------------------------------------------------------------------------------
def _forward(geo, x4, w, bias, out4):
    p = _forward_problem(geo, x4, w, out4, bias)
    algo = _choose("forward", p, x4.device)
    _FWD[algo](p, x4, w, out4, bias)


def _grad_input(geo, g4, w, gi4):
    p = _grad_input_problem(geo, g4, w, gi4)
    algo = _choose("grad_input", p, g4.device)
    _FWD[algo](p, g4, w, gi4, None)


def _grad_weight(geo, x4, g4, gw, gb):
    p = _problem(geo, _v5(x4, geo["g"]), (0,) * 6, (0,) * 6)
    algo = _choose("grad_weight", p, x4.device)
    _WGRAD[algo](p, x4, g4, gw, gb)


def _choose(pass_name: str, p: dict, dev) -> str:
    want = backends.conv_algorithm
    if want not in backends.CONV_ALGORITHMS:
        raise ValueError(f"conv2d: expected clgrad.backends.conv_algorithm in "
                         f"{backends.CONV_ALGORITHMS}, got {want!r}")
    algo = _auto(pass_name, p, dev) if want == "auto" else want
    backends.last_conv_algorithm = algo
    backends.last_conv_algorithms[pass_name] = algo
    if os.environ.get("CLGRAD_CONV_DEBUG"):
        print(f"conv2d {pass_name}: {algo} (N={p['n']} G={p['g']} C/G={p['c']} O/G={p['o']} "
              f"{p['h']}x{p['w']} -> {p['oh']}x{p['ow']} k={p['kh']}x{p['kw']} "
              f"s={p['sh']},{p['sw']} u={p['uh']},{p['uw']})", file=sys.stderr)
    return algo


def _auto(pass_name, p, dev) -> str:
    return "implicit"


# -- implicit GEMM (kernels/conv.cl) ----------------------------------------------------------
def _up(a, b):
    return -(-a // b) * b


def _window(p, th, tw, vw):
    """Fill in the staged-window layout of conv.h for tiles of th x tw outputs."""
    rows = (th - 1) * p["sh"] + (p["kh"] - 1) * p["dh"] + 1
    if p["sw"] == 1:
        rp, kws, slab = _up(tw + (p["kw"] - 1) * p["dw"], vw), p["dw"], 0
    else:
        rp, kws, slab = p["kw"] * tw, tw, 1
    p.update(th=th, tw=tw, ntw=-(-p["ow"] // tw), rows=rows, rp=rp, cp=rows * rp, kws=kws,
             slab=slab)


def _vw(dtype):
    return 4 if dtype.itemsize == 8 else 8


def _local(nbytes):
    return cl.LocalMemory(max(int(nbytes), 16))


def _implicit_fwd(p, x, w, y, bias):
    dev, dt = x.device, x.dtype
    vw, isz = _vw(dt), dt.itemsize
    nr = 2 * vw
    tw = min(_up(p["ow"], nr), 4 * nr)
    nblk = -(-p["o"] // 96)
    mc = -(-p["o"] // nblk)
    nth = -(-p["oh"] // max(1, 256 // tw))
    units = dev.cl_device.max_compute_units
    while nth < p["oh"] and p["n"] * p["g"] * nblk * nth * -(-p["ow"] // tw) < 8 * units:
        nth += 1
    th = -(-p["oh"] // nth)
    khw = p["kh"] * p["kw"]
    cc = max(1, min(p["c"], 256 // khw))
    _window(p, th, tw, vw)
    while cc > 1 and cc * p["cp"] * isz > 64 << 10:
        cc = (cc + 1) // 2
    p.update(mc=mc, cc=cc)
    kc = cc * khw
    tiles = -(-p["oh"] // th) * p["ntw"]
    bias_buf = bias._storage.buffer if bias is not None else y._storage.buffer
    dev.launch(dev.kernel("conv.cl", "igemm", defines_for(dt)), (tiles, nblk, p["n"] * p["g"]),
               (1, 1, 1), _arg(p), x._storage.buffer, w._storage.buffer, y._storage.buffer,
               bias_buf, _local(cc * p["cp"] * isz), _local(kc * 8),
               _local((mc + 4) * th * tw * isz))


_TUNE = {}


def _implicit_wgrad(p, x, g4, gw, gb):
    dev, dt = x.device, x.dtype
    vw, isz = _vw(dt), dt.itemsize
    khw = p["kh"] * p["kw"]
    tw = min(_up(p["ow"], vw), 64)
    mc = min(_up(p["o"], 4), _TUNE.get("mc", 64))
    th = max(1, min(p["oh"], 1024 // tw, (_TUNE.get("gt", 128) << 10) // (mc * tw * isz)))
    th = -(-p["oh"] // -(-p["oh"] // th))
    _window(p, th, tw, vw)
    cc = max(1, min(p["c"], (_TUNE.get("xt", 16) << 10) // (p["cp"] * isz)))
    cr = max(1, (_TUNE.get("wa", 160) << 10) // (mc * khw * isz) // cc) * cc
    cr = p["c"] if cr >= p["c"] else cr
    wgs = -(-p["c"] // cr) * -(-p["o"] // mc) * p["g"]
    split = max(1, min(p["n"], -(-4 * dev.cl_device.max_compute_units // wgs)))
    p.update(mc=mc, cc=cc, split=split)
    kall = p["c"] * khw
    ws = empty((split, p["g"], p["o"], kall + 1), dt, dev)
    gv = pack(_v5(g4, p["g"]), 6)
    dev.launch(dev.kernel("conv.cl", "igemm_wgrad", defines_for(dt)),
               (-(-p["c"] // cr), -(-p["o"] // mc), p["g"] * split), (1, 1, 1), _arg(p),
               np.int64(cr), x._storage.buffer, g4._storage.buffer, gv, ws._storage.buffer,
               _local(cc * p["cp"] * isz), _local(_up(mc, 4) * th * tw * isz),
               _local(_up(cc * khw, 3) * 4), _local(_up(mc, 4) * (cr * khw + 1) * isz))
    _reduce(p, ws, gw, gb)


def _reduce(p, ws, gw, gb):
    dev, dt = ws.device, ws.dtype
    so, sc, skh, skw = gw._strides
    gv = pack((gw._offset, so * p["o"], so, sc, skh, skw), 6)
    n = p["g"] * p["o"] * (p["c"] * p["kh"] * p["kw"] + 1)
    bbuf = gb._storage.buffer if gb is not None else gw._storage.buffer
    boff, bs = (gb._offset, gb._strides[0]) if gb is not None else (0, 0)
    dev.launch(dev.kernel("conv.cl", "wgrad_reduce", defines_for(dt)), (n,), (64,), _arg(p),
               ws._storage.buffer, gw._storage.buffer, gv, bbuf, np.int64(boff), np.int64(bs),
               np.int32(1), np.int32(gb is not None))


_FWD = {"implicit": _implicit_fwd}
_WGRAD = {"implicit": _implicit_wgrad}
