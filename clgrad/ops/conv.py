"""2-D convolution with PyTorch's semantics (groups, stride, padding, dilation), forward and
backward, as one shared op over a batch of groups.

The input is seen as (N, G, C/G, H, W), the weight as (G, O/G, C/G, kH, kW) and the output as
(N, G, O/G, oH, oW): 5-D views (offset + strides) of the caller's tensors, so group g is the
memory of ``input.narrow(1, g*C/G, C/G)``, ``weight.narrow(0, g*O/G, O/G)`` and
``out.narrow(1, g*O/G, O/G)``. Every kernel takes the group as a launch dimension, so a pass is
a fixed number of launches whatever ``groups`` is (implicit, depthwise, direct: one forward;
backward one for the input gradient and two for the weight and bias gradients: partial sums
over batch splits, then their sum written through the grouped view of the one weight
gradient). No parameter is copied; any strided input is read through its strides. The input
gradient is the forward problem again (kernels/conv.h): the output gradient with stride-1
zeros inserted, padding (k-1)*d - p, and the weight view transposed and flipped (negative
strides, still a view).

Algorithms (``clgrad.backends.conv_algorithm`` or ``CLGRAD_CONV_ALGO``; see ``_auto``):
  implicit   implicit GEMM, no workspace. CPUs: kernels/conv.cl, one work item per work-group
             staging an input window in local memory and running a 6 x 16 register-blocked
             micro-kernel. GPUs: kernels/conv_gemm.cl, 16 x 16 work items sharing 64 x 64 tiles.
  depthwise  kernels/conv_depthwise.cl — direct stencils for few channels per group
             (C/G == 1, channel multiplier allowed): no GEMM, vectors along output rows.
  direct     kernels/conv_direct.cl — one work item per output; any device, no local memory.
  im2col     kernels/conv_im2col.cl + matmul.gemm — an im2col workspace chunked over the batch
             (at most ``backends.conv_workspace_limit`` bytes); groups and samples are GEMM
             batch dims, the weight broadcast over samples by a stride-0 view.
An algorithm that cannot run a problem (local memory too small; for im2col, a weight whose
(C/G, kH, kW) do not merge into one stride) gives way to implicit, then direct.
"""
from __future__ import annotations

import functools
import math
import os
import sys

import numpy as np
import pyopencl as cl

from clgrad import backends, layout
from clgrad.autograd import record
from clgrad.runtime import pack
from clgrad.ops import elementwise as ew
from clgrad.ops import reduce as rd
from clgrad.ops._util import defines_for, empty, same_device
from clgrad.ops.matmul import gemm
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
    Kernels: kernels/conv.cl, conv_gemm.cl, conv_depthwise.cl, conv_direct.cl, conv_im2col.cl.
    """
    geo = _check(input, weight, bias, stride, padding, dilation, groups)
    n, o, oh, ow = geo["n"], geo["o"] * geo["g"], geo["oh"], geo["ow"]
    x4 = _as4(input)
    out = empty((n, o, oh, ow) if input.ndim == 4 else (o, oh, ow), input.dtype, input.device)
    empty_sum = out.numel() == 0 or geo["c"] == 0  # nothing to convolve
    if not empty_sum:
        p = _forward_problem(geo, x4, weight, _as4(out), bias)
        _choose("forward", p, weight)(p, x4, weight, _as4(out), bias)
    elif out.numel():
        _fill_bias(_as4(out), bias)

    def backward(grad):
        gi = gw = gb = None
        g4 = _as4(grad)
        want_b = bias is not None and bias.requires_grad
        if input.requires_grad:
            gi = empty(input.shape, input.dtype, input.device)
            if empty_sum:
                ew.fill_raw(gi, 0)
            else:
                _grad_input(geo, g4, weight, _as4(gi))
        if weight.requires_grad or want_b:
            gw = empty(weight.shape, weight.dtype, weight.device)
            gb = empty(bias.shape, bias.dtype, bias.device) if want_b else None
            if empty_sum:
                ew.fill_raw(gw, 0)
                if gb is not None:
                    ew.copy_raw(gb, rd.sum(g4, dim=(0, 2, 3)))
            else:
                p = _problem(geo, _v5(x4, geo["g"]), (0,) * 6, (0,) * 6)
                _choose("grad_weight", p, weight)(p, x4, g4, gw, gb)
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
    n, c, h, wd = tuple(x.shape) if x.ndim == 4 else (1,) + tuple(x.shape)
    o, cg, kh, kw = w.shape
    if kh < 1 or kw < 1:
        raise RuntimeError(f"conv2d: expected a kernel of positive size, got weight of size "
                           f"{list(w.shape)}")
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
                x=_v5(g4, geo["g"]), k=kv, y=_v5(gi4, geo["g"]), boff=0, bs=0, bias=0, geo=geo)


def _grad_input(geo, g4, w, gi4):
    """The input gradient. With stride s > 1 the transformed problem has s-1 zeros between
    output-gradient values; it runs as s_h * s_w phase problems instead, each a dense stride-1
    convolution of the output gradient with the taps that meet that phase (a strided view of
    the flipped weight) writing a strided view of gi: no multiply by an inserted zero."""
    p = _grad_input_problem(geo, g4, w, gi4)
    run = _choose("grad_input", p, w)
    algo = backends.last_conv_algorithm
    if algo == "im2col" or p["uh"] * p["uw"] == 1:
        return run(p, g4, w, gi4, None)
    phases = [q for q in _phases(p) if q is not None]
    if any(q["kh"] == 0 for q in phases):  # some phase no tap reaches: its gradient is 0
        isz = gi4.dtype.itemsize  # gi4 is fresh and contiguous: clear it, not a kernel
        cl.enqueue_fill_buffer(gi4.device.queue, gi4._storage.buffer,
                               np.zeros(1, gi4.dtype.np), gi4._offset * isz, gi4.numel() * isz)
    for q in phases:
        if q["kh"]:
            run = _runner(algo, "grad_input", q, w) or _runner("direct", "grad_input", q, w)
            run(q, g4, w, gi4, None)


def _phases(p):
    """The phase problems of an input-gradient problem p with insertion (uh, uw) > 1: None for
    a phase without outputs; kh = kw = 0 for one that no tap reaches."""
    def taps(r, u, pad, d, k):
        """First tap, tap step, sub-dilation and input offset of phase r along one axis."""
        step = u // math.gcd(u, d)
        for k0 in range(min(k, step)):
            if (r - pad + k0 * d) % u == 0:
                return k0, step, d * step // u, (r - pad + k0 * d) // u
        return None

    out = []
    for ri in range(p["uh"]):
        for rj in range(p["uw"]):
            oh, ow = -(-(p["oh"] - ri) // p["uh"]), -(-(p["ow"] - rj) // p["uw"])
            if oh <= 0 or ow <= 0:
                out.append(None)
                continue
            yo, y0, y1, y2, y3, y4 = p["y"]
            q = dict(p, oh=oh, ow=ow, uh=1, uw=1, sh=1, sw=1,
                     y=(yo + ri * y3 + rj * y4, y0, y1, y2, y3 * p["uh"], y4 * p["uw"]))
            th, tw = taps(ri, p["uh"], p["ph"], p["dh"], p["kh"]), \
                taps(rj, p["uw"], p["pw"], p["dw"], p["kw"])
            if th is None or tw is None:
                out.append(dict(q, kh=0, kw=0))
                continue
            ko, k0, k1, k2, k3, k4 = p["k"]
            q.update(kh=-(-(p["kh"] - th[0]) // th[1]), kw=-(-(p["kw"] - tw[0]) // tw[1]),
                     dh=th[2], dw=tw[2], ph=-th[3], pw=-tw[3],
                     k=(ko + th[0] * k3 + tw[0] * k4, k0, k1, k2, k3 * th[1], k4 * tw[1]))
            out.append(q)
    return out


# -- dispatch ---------------------------------------------------------------------------------
def _choose(pass_name: str, p: dict, w: Tensor):
    """The runner of one pass ('forward', 'grad_input', 'grad_weight') for problem p: the
    algorithm set in clgrad.backends (or 'auto'), else the first of implicit, direct that can
    run p. Records it in backends.last_conv_algorithm(s)."""
    want = backends.conv_algorithm
    if want not in backends.CONV_ALGORITHMS:
        raise ValueError(f"conv2d: expected clgrad.backends.conv_algorithm in "
                         f"{backends.CONV_ALGORITHMS}, got {want!r}")
    if backends.conv_implicit_variant not in backends.CONV_IMPLICIT_VARIANTS:
        raise ValueError(f"conv2d: expected clgrad.backends.conv_implicit_variant in "
                         f"{backends.CONV_IMPLICIT_VARIANTS}, got "
                         f"{backends.conv_implicit_variant!r}")
    first = _auto(pass_name, p, w.device) if want == "auto" else want
    for algo in (first, "implicit", "direct"):
        run = _runner(algo, pass_name, p, w)
        if run is not None:
            break
    backends.last_conv_algorithm = algo
    backends.last_conv_algorithms[pass_name] = algo
    if os.environ.get("CLGRAD_CONV_DEBUG"):
        print(f"conv2d {pass_name}: {algo} (N={p['n']} G={p['g']} C/G={p['c']} O/G={p['o']} "
              f"{p['h']}x{p['w']} -> {p['oh']}x{p['ow']} k={p['kh']}x{p['kw']} "
              f"s={p['sh']},{p['sw']} u={p['uh']},{p['uw']})", file=sys.stderr)
    return run


def _runner(algo: str, pass_name: str, p: dict, w: Tensor):
    """A callable running the pass with algo, or None when algo cannot run p."""
    if algo == "im2col":
        return None if _kview(w) is None else _IM2COL[pass_name]
    dev = w.device
    if algo == "implicit" and _gpu_variant(dev):
        algo = "implicit:gpu"
    planner, run = _KERNELS[algo][pass_name == "grad_weight"]
    local = planner(p, w.dtype, dev) if planner else ()
    return None if local is None else functools.partial(run, local=local)


def _auto(pass_name, p, dev) -> str:
    """The algorithm 'auto' runs, from measurements (PoCL on 2 Zen 4 cores; an H200 through
    NVIDIA's OpenCL). grad_weight's p is the forward problem. Few channel pairs per group
    (C/G * O/G <= 16: depthwise with a channel multiplier up to 16 and the like; the crossover
    measured on PoCL lies between 16 and 32): the direct stencils on CPUs, one work item per
    output on GPUs. Otherwise the implicit GEMM (its CPU or GPU kernels), except for big
    problems on GPUs: there im2col + the tuned GEMM wins (H200, AlexNet conv2 groups=2 at
    N=128: fwd+bwd 24 ms against 33 ms; bench/results/gpu/conv_algos.txt), while on small ones
    (S1, N=64: 3.1 ms against 0.9 ms) it loses. im2col's launch count follows its workspace
    chunks, whose size (N * C * kH * kW * H_out * W_out) does not depend on groups."""
    few = p["c"] * p["o"] <= 16
    if dev.kind == "cpu":
        return "depthwise" if few else "implicit"
    if few:
        return "direct"
    big = p["n"] * p["g"] * p["o"] * p["oh"] * p["ow"] >= (8 << 20)
    return "im2col" if big else "implicit"


# -- shared helpers ---------------------------------------------------------------------------
def _up(a, b):
    return -(-a // b) * b


def _vw(dtype):
    return 4 if dtype.itemsize == 8 else 8


def _locals(sizes):
    """Local-memory kernel arguments, each a multiple of 128 bytes: drivers place them one
    after the other, and the kernels read aligned vectors from them."""
    return [cl.LocalMemory(_up(max(int(b), 1), 128)) for b in sizes]


def _fits(sizes, dev) -> bool:
    return sum(_up(max(int(b), 1), 128) for b in sizes) <= dev.local_mem_size


def _units(dev):
    return dev.cl_device.max_compute_units


def _window(p, th, tw, vw):
    """Fill in the staged-window layout of conv.h for tiles of th x tw outputs."""
    rows = (th - 1) * p["sh"] + (p["kh"] - 1) * p["dh"] + 1
    if p["sw"] == 1:
        rp, kws, slab = _up(tw + (p["kw"] - 1) * p["dw"], vw), p["dw"], 0
    else:
        rp, kws, slab = p["kw"] * tw, tw, 1
    p.update(th=th, tw=tw, ntw=-(-p["ow"] // tw), rows=rows, rp=rp, cp=rows * rp, kws=kws,
             slab=slab)


def _even_rows(total, th):
    """Rows per tile: at most th, splitting total into equal tiles."""
    th = max(1, min(total, th))
    return -(-total // -(-total // th))


def _workspace(p, dtype, dev):
    return empty((p["split"], p["g"], p["o"], p["c"] * p["kh"] * p["kw"] + 1), dtype, dev)


def _reduce(p, ws, gw, gb):
    """Sum the split partial sums ws into gw (through its grouped view) and gb."""
    dev, dt = ws.device, ws.dtype
    so, sc, skh, skw = gw._strides
    gv = pack((gw._offset, so * p["o"], so, sc, skh, skw), 6)
    n = p["g"] * p["o"] * (p["c"] * p["kh"] * p["kw"] + 1)
    bbuf = gb._storage.buffer if gb is not None else gw._storage.buffer
    boff, bs = (gb._offset, gb._strides[0]) if gb is not None else (0, 0)
    dev.launch(dev.kernel("conv.cl", "wgrad_reduce", defines_for(dt)), (n,), (64,), _arg(p),
               ws._storage.buffer, gw._storage.buffer, gv, bbuf, np.int64(boff), np.int64(bs),
               np.int32(1), np.int32(gb is not None))


# -- implicit GEMM (kernels/conv.cl) ----------------------------------------------------------
# Planners choose tiles (written into p) and return the local-memory sizes in bytes, or None
# when even the smallest tiles exceed the device's local memory.
def _shrink(knobs: dict, order, floor: dict) -> bool:
    """Halve the first knob in order that is above its floor; False when none is."""
    for k in order:
        if knobs[k] > floor[k]:
            knobs[k] = max(floor[k], -(-knobs[k] // 2))
            return True
    return False


def _plan_implicit(p, dt, dev):
    vw, isz, khw = _vw(dt), dt.itemsize, p["kh"] * p["kw"]
    tw = min(_up(p["ow"], 2 * vw), 8 * vw)
    nblk = -(-p["o"] // 96)
    nth = -(-p["oh"] // max(1, 256 // tw))
    while nth < p["oh"] and p["n"] * p["g"] * nblk * nth * -(-p["ow"] // tw) < 8 * _units(dev):
        nth += 1
    kn = dict(cc=max(1, min(p["c"], 256 // khw)), th=-(-p["oh"] // nth), mc=-(-p["o"] // nblk),
              tw=tw)
    while True:
        _window(p, kn["th"], kn["tw"], vw)
        cc = -(-p["c"] // -(-p["c"] // kn["cc"]))  # equal chunks
        local = [cc * p["cp"] * isz, 8 * cc * khw, (kn["mc"] + 4) * kn["th"] * kn["tw"] * isz]
        if cc * p["cp"] * isz <= (64 << 10) and _fits(local, dev):
            p.update(mc=kn["mc"], cc=cc)
            return local
        if not _shrink(kn, ("cc", "th", "mc", "tw"), dict(cc=1, th=1, mc=6, tw=2 * vw)):
            return None


def _implicit_fwd(p, x, w, y, bias, local):
    dev, dt = x.device, x.dtype
    tiles = -(-p["oh"] // p["th"]) * p["ntw"]
    bbuf = (bias if bias is not None else y)._storage.buffer
    dev.launch(dev.kernel("conv.cl", "igemm", defines_for(dt)),
               (tiles, -(-p["o"] // p["mc"]), p["n"] * p["g"]), (1, 1, 1), _arg(p),
               x._storage.buffer, w._storage.buffer, y._storage.buffer, bbuf,
               *_locals(local))


def _plan_implicit_wgrad(p, dt, dev):
    vw, isz, khw = _vw(dt), dt.itemsize, p["kh"] * p["kw"]
    mc = min(_up(p["o"], 4), 32)
    tw = min(_up(p["ow"], vw), 64)
    kn = dict(th=_even_rows(p["oh"], min(1024 // tw, (256 << 10) // (mc * tw * isz))), mc=mc,
              tw=tw, cr=p["c"])
    while True:
        _window(p, kn["th"], kn["tw"], vw)
        cc = max(1, min(p["c"], (16 << 10) // (p["cp"] * isz)))
        cr = min(kn["cr"], max(1, (160 << 10) // (kn["mc"] * khw * isz) // cc) * cc)
        cc = min(cc, cr)
        mc4 = _up(kn["mc"], 4)
        local = [cc * p["cp"] * isz, mc4 * kn["th"] * kn["tw"] * isz, 4 * _up(cc * khw, 3),
                 mc4 * (cr * khw + 1) * isz]
        if _fits(local, dev):
            wgs = -(-p["c"] // cr) * -(-p["o"] // kn["mc"]) * p["g"]
            p.update(mc=kn["mc"], cc=cc, cr=cr,
                     split=max(1, min(p["n"], -(-4 * _units(dev) // wgs))))
            return local
        kn["cr"] = cr
        if not _shrink(kn, ("cr", "th", "mc", "tw"), dict(cr=1, th=1, mc=4, tw=vw)):
            return None


def _implicit_wgrad(p, x, g4, gw, gb, local):
    dev, dt = x.device, x.dtype
    ws = _workspace(p, dt, dev)
    dev.launch(dev.kernel("conv.cl", "igemm_wgrad", defines_for(dt)),
               (-(-p["c"] // p["cr"]), -(-p["o"] // p["mc"]), p["g"] * p["split"]), (1, 1, 1),
               _arg(p), np.int64(p["cr"]), x._storage.buffer, g4._storage.buffer,
               pack(_v5(g4, p["g"]), 6), ws._storage.buffer, *_locals(local))
    _reduce(p, ws, gw, gb)


# GPU variant (kernels/conv_gemm.cl): 64 x 64 tiles, 16 x 16 work items, local memory.
_GTILE = dict(TS=64, WPT=4, TK=16)
if os.environ.get("CLGRAD_CONV_GTILE"):  # benchmarking other tiles: "TS,WPT,TK"
    _GTILE = dict(zip(("TS", "WPT", "TK"), map(int, os.environ["CLGRAD_CONV_GTILE"].split(","))))


def _gpu_variant(dev) -> bool:
    v = backends.conv_implicit_variant
    return v == "gpu" or (v == "auto" and dev.kind == "gpu")


def _gemm_fwd(p, x, w, y, bias, local=()):
    dev, dt = x.device, x.dtype
    ts, rts = _GTILE["TS"], _GTILE["TS"] // _GTILE["WPT"]
    bbuf = (bias if bias is not None else y)._storage.buffer
    dev.launch(dev.kernel("conv_gemm.cl", "gemm_fwd", dict(defines_for(dt), **_GTILE)),
               (-(-p["n"] * p["oh"] * p["ow"] // ts) * rts, -(-p["o"] // ts) * rts, p["g"]),
               (rts, rts, 1), _arg(p), x._storage.buffer, w._storage.buffer,
               y._storage.buffer, bbuf)


def _gemm_wgrad(p, x, g4, gw, gb, local=()):
    dev, dt = x.device, x.dtype
    ts, rts = _GTILE["TS"], _GTILE["TS"] // _GTILE["WPT"]
    kall = p["c"] * p["kh"] * p["kw"]
    wgs = -(-(kall + 1) // ts) * -(-p["o"] // ts) * p["g"]
    red = p["n"] * p["oh"] * p["ow"]
    p["split"] = max(1, min(-(-red // (8 * _GTILE["TK"])), -(-4 * _units(dev) // wgs)))
    ws = _workspace(p, dt, dev)
    dev.launch(dev.kernel("conv_gemm.cl", "gemm_wgrad", dict(defines_for(dt), **_GTILE)),
               (-(-(kall + 1) // ts) * rts, -(-p["o"] // ts) * rts, p["g"] * p["split"]),
               (rts, rts, 1), _arg(p), x._storage.buffer, g4._storage.buffer,
               pack(_v5(g4, p["g"]), 6), ws._storage.buffer)
    _reduce(p, ws, gw, gb)


# -- depthwise: direct stencils for few channels per group (kernels/conv_depthwise.cl) ---------
def _plan_dw(p, dt, dev):
    vw, isz = _vw(dt), dt.itemsize
    kn = dict(th=p["oh"], tw=min(_up(p["ow"], 2 * vw), 64))
    while True:
        _window(p, kn["th"], kn["tw"], vw)
        local = [(p["c"] * p["cp"] + p["sh"] * p["rp"] + 4 * vw) * isz]
        if local[0] <= (64 << 10) and _fits(local, dev):
            return local
        if not _shrink(kn, ("th", "tw"), dict(th=1, tw=2 * vw)):
            return None


def _dw_fwd(p, x, w, y, bias, local):
    dev, dt = x.device, x.dtype
    tiles = -(-p["oh"] // p["th"]) * p["ntw"]
    planes = p["n"] * p["g"]
    per = max(1, planes * tiles // (8 * _units(dev)))  # (n, g) planes per work-group
    bbuf = (bias if bias is not None else y)._storage.buffer
    dev.launch(dev.kernel("conv_depthwise.cl", "dw_fwd", defines_for(dt)),
               (tiles, -(-planes // per)), (1, 1), _arg(p), np.int64(per), x._storage.buffer,
               w._storage.buffer, y._storage.buffer, bbuf, *_locals(local))


def _plan_dw_wgrad(p, dt, dev):
    vw, isz = _vw(dt), dt.itemsize
    kn = dict(th=p["oh"], tw=min(_up(p["ow"], vw), 64))
    while True:
        _window(p, kn["th"], kn["tw"], vw)
        local = [p["c"] * p["cp"] * isz, p["o"] * kn["th"] * kn["tw"] * isz,
                 p["o"] * (p["c"] * p["kh"] * p["kw"] + 1) * isz]
        if local[0] + local[1] <= (96 << 10) and _fits(local, dev):
            p["split"] = max(1, min(p["n"], -(-4 * _units(dev) // p["g"])))
            return local
        if not _shrink(kn, ("th", "tw"), dict(th=1, tw=vw)):
            return None


def _dw_wgrad(p, x, g4, gw, gb, local):
    dev, dt = x.device, x.dtype
    ws = _workspace(p, dt, dev)
    dev.launch(dev.kernel("conv_depthwise.cl", "dw_wgrad", defines_for(dt)),
               (p["g"], p["split"]), (1, 1), _arg(p), np.int64(1), x._storage.buffer,
               g4._storage.buffer, pack(_v5(g4, p["g"]), 6), ws._storage.buffer,
               *_locals(local))
    _reduce(p, ws, gw, gb)


# -- direct: one work item per output (kernels/conv_direct.cl) ---------------------------------
def _direct_fwd(p, x, w, y, bias, local=()):
    dev, dt = x.device, x.dtype
    n = p["n"] * p["g"] * p["o"] * p["oh"] * p["ow"]
    bbuf = (bias if bias is not None else y)._storage.buffer
    dev.launch(dev.kernel("conv_direct.cl", "direct_fwd", defines_for(dt)), (n,), (64,),
               _arg(p), x._storage.buffer, w._storage.buffer, y._storage.buffer, bbuf)


def _direct_wgrad(p, x, g4, gw, gb, local=()):
    dev, dt = x.device, x.dtype
    items = p["g"] * p["o"] * (p["c"] * p["kh"] * p["kw"] + 1)
    p["split"] = max(1, min(p["n"], -(-64 * 64 * _units(dev) // items)))
    ws = _workspace(p, dt, dev)
    dev.launch(dev.kernel("conv_direct.cl", "direct_wgrad", defines_for(dt)),
               (p["split"] * items,), (64,), _arg(p), x._storage.buffer, g4._storage.buffer,
               pack(_v5(g4, p["g"]), 6), ws._storage.buffer)
    _reduce(p, ws, gw, gb)


# -- im2col + GEMM (kernels/conv_im2col.cl, clgrad.ops.matmul.gemm) ---------------------------
def _kview(w: Tensor):
    """The weight as (G?, O, K) strides (so, sk) when (c, kh, kw) merge into one stride K."""
    o, c, kh, kw = w.shape
    st = layout.view_strides((c, kh, kw), w._strides[1:], (c * kh * kw,))
    return None if st is None else (w._strides[0], st[0])


def _chunks(p, per_sample_elems, dtype):
    nc = max(1, min(p["n"], backends.conv_workspace_limit //
                    max(1, per_sample_elems * dtype.itemsize)))
    return [(n0, min(nc, p["n"] - n0)) for n0 in range(0, p["n"], nc)]


def _im2col(p, x, n0, nc, col):
    dev = x.device
    dev.launch(dev.kernel("conv_im2col.cl", "im2col", defines_for(x.dtype)), (col.numel(),),
               (64,), _arg(p), np.int64(n0), np.int64(nc), x._storage.buffer,
               col._storage.buffer)


def _gemm_operands(p, w, nc):
    """Views for one chunk: weight (nc, G, O, K) broadcast over samples (stride 0)."""
    so, sk = _kview(w)
    return _raw(w, (nc, p["g"], p["o"], p["c"] * p["kh"] * p["kw"]), (0, so * p["o"], so, sk))


def _fill_bias(y: Tensor, bias):
    """y (N, O, oH, oW) = bias broadcast, or 0."""
    if bias is None:
        ew.fill_raw(y, 0)
    else:
        ew.copy_raw(y, _raw(bias, y.shape, (0, bias._strides[0], 0, 0), bias._offset))


def _im2col_fwd(p, x, w, y, bias):
    K, P, G = p["c"] * p["kh"] * p["kw"], p["oh"] * p["ow"], p["g"]
    if bias is not None:
        _fill_bias(y, bias)
    for n0, nc in _chunks(p, G * K * P, x.dtype):
        col = empty((G, K, nc, P), x.dtype, x.device)
        _im2col(p, x, n0, nc, col)
        yv = _raw(y, (nc, G, p["o"], P), (y._strides[0], y._strides[1] * p["o"],
                                         y._strides[1], 1), y._offset + n0 * y._strides[0])
        cv = _raw(col, (nc, G, K, P), (P, K * nc * P, nc * P, 1), 0)
        gemm(yv, _gemm_operands(p, w, nc), cv, 1.0, 1.0 if bias is not None else 0.0)


def _im2col_dgrad(p, g4, w, gi, bias=None):
    """Per chunk col = W^T g (GEMM), then col2im sums col into gi. p: the input-gradient
    problem; its "geo" is the forward geometry."""
    p = _problem(p["geo"], (0,) * 6, (0,) * 6, _v5(gi, p["g"]))
    K, P, G = p["c"] * p["kh"] * p["kw"], p["oh"] * p["ow"], p["g"]
    if layout.view_strides(tuple(g4.shape[2:]), g4._strides[2:], (P,)) is None:
        g4 = ew.contiguous(g4)
    for n0, nc in _chunks(p, G * K * P, g4.dtype):
        col = empty((G, K, nc, P), g4.dtype, g4.device)
        a = _gemm_operands(p, w, nc)
        at = _raw(a, (nc, G, K, p["o"]), (0, a._strides[1], a._strides[3], a._strides[2]))
        gv = _raw(g4, (nc, G, p["o"], P), (g4._strides[0], g4._strides[1] * p["o"],
                                          g4._strides[1], g4._strides[3]),
                  g4._offset + n0 * g4._strides[0])
        gemm(_raw(col, (nc, G, K, P), (P, K * nc * P, nc * P, 1), 0), at, gv)
        dev = gi.device
        dev.launch(dev.kernel("conv_im2col.cl", "col2im", defines_for(gi.dtype)),
                   (nc * G * p["c"] * p["h"] * p["w"],), (64,), _arg(p), np.int64(n0),
                   np.int64(nc), col._storage.buffer, gi._storage.buffer)


def _im2col_wgrad(p, x, g4, gw, gb):
    K, P, G, O = p["c"] * p["kh"] * p["kw"], p["oh"] * p["ow"], p["g"], p["o"]
    gwv = _raw(gw, (G, O, K), (gw._strides[0] * O, gw._strides[0], 1))
    for i, (n0, nc) in enumerate(_chunks(p, G * (K + O) * P, x.dtype)):
        col = empty((G, K, nc, P), x.dtype, x.device)
        _im2col(p, x, n0, nc, col)
        gcol = empty((G, O, nc, P), x.dtype, x.device)
        ew.copy_raw(_raw(gcol, (nc, G, O, p["oh"], p["ow"]),
                         (P, O * nc * P, nc * P, p["ow"], 1), 0),
                    _raw(g4, (nc, G, O, p["oh"], p["ow"]),
                         (g4._strides[0], g4._strides[1] * O, g4._strides[1], g4._strides[2],
                          g4._strides[3]), g4._offset + n0 * g4._strides[0]))
        gemm(gwv, _raw(gcol, (G, O, nc * P), (O * nc * P, nc * P, 1), 0),
             _raw(col, (G, nc * P, K), (K * nc * P, 1, nc * P), 0), 1.0, 1.0 if i else 0.0)
    if gb is not None:
        ew.copy_raw(gb, rd.sum(g4, dim=(0, 2, 3)))


_KERNELS = {  # algorithm: ((planner, forward runner), (planner, weight-gradient runner))
    "implicit": ((_plan_implicit, _implicit_fwd), (_plan_implicit_wgrad, _implicit_wgrad)),
    "implicit:gpu": ((None, _gemm_fwd), (None, _gemm_wgrad)),
    "depthwise": ((_plan_dw, _dw_fwd), (_plan_dw_wgrad, _dw_wgrad)),
    "direct": ((None, _direct_fwd), (None, _direct_wgrad)),
}
_IM2COL = {"forward": _im2col_fwd, "grad_input": _im2col_dgrad, "grad_weight": _im2col_wgrad}
