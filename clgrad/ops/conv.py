"""2-D convolution with PyTorch's semantics (groups, stride, padding, dilation), forward and
backward, as one shared op over a batch of groups.

The input is seen as (N, G, C/G, H, W), the weight as (G, O/G, C/G, kH, kW) and the output as
(N, G, O/G, oH, oW): 5-D views (offset + strides) of the caller's tensors, so group g is the
memory of ``input.narrow(1, g*C/G, C/G)``, ``weight.narrow(0, g*O/G, O/G)`` and
``out.narrow(1, g*O/G, O/G)``. Every kernel takes the group as a launch dimension, so a pass is
a fixed number of launches whatever ``groups`` is (implicit, depthwise, direct: one forward;
backward one for the input gradient and two for the weight and bias gradients: partial sums
over batch splits, then their sum written through the grouped view of the one weight
gradient; the CPU depthwise kernels write the sums themselves, one launch, where there are
groups enough to fill the device without batch splits). No parameter is copied; any strided
input is read through its strides. The input gradient is the forward problem again
(kernels/conv.h): the output gradient with stride-1 zeros inserted, padding (k-1)*d - p, and
the weight view transposed and flipped (negative strides, still a view).

Algorithms (``clgrad.backends.conv_algorithm`` or ``CLGRAD_CONV_ALGO``; see ``_auto``;
their planners and launchers: clgrad/ops/conv_algorithms.py):
  implicit   implicit GEMM, no workspace. CPUs: kernels/conv_igemm_cpu.cl, one work item per
             work-group staging an input window in local memory and running a 6 x 16
             register-blocked micro-kernel (6 x 32 on AVX-512 devices: conv.h's WIDE).
             GPUs: kernels/conv_gemm_gpu.cl, 16 x 16 work items sharing 64 x 64 tiles.
  depthwise  kernels/conv_dw_cpu.cl — direct stencils for few channels per group
             (C/G == 1, channel multiplier allowed): no GEMM. Pure depthwise maps up to
             40x40 windows: VW channels in the lanes of a vector (maps transposed in
             registers on the way in and out), a strided layer's input gradient in one
             launch; others: vectors along the flattened output rows of a window staged
             as stride phases.
  direct     kernels/conv_direct_any.cl — one work item per output; any device, no local
             memory.
  pointwise  1 x 1 convs without padding (CPUs' choice), x (N, G, C, H*W) and
             y (N, G, O, H*W) views: on CPUs kernels/conv_pw_cpu.cl, one GEMM per group
             whose columns (forward, input gradient) or depth (weight gradient) run over
             (sample, pixel), the bias added in the kernel; elsewhere one batched matmul.gemm
             (the weight broadcast over samples) and a weight-gradient reduction. A stride
             reads x subsampled; a strided layer's input gradient writes every s-th pixel of
             a zeroed gradient in one pass; views whose pixels do not merge into one stride
             are copied first (gathered, or written back).
  blocked    kernels/conv_blocked_cpu.cl — vectors along output channels (16 on AVX-512, 8
             on AVX2), the input broadcast, for small maps: a zero-padded copy of the input
             and the weight (or output gradient) packed in channel blocks first (layers with
             a large weight pack each block in the forward work-group that uses it; a strided
             layer's input-gradient phases share one padded copy). Any device runs it; 'auto'
             picks it on CPUs where it measured faster than implicit.
  depthwise_gpu, igemm_gpu  clgrad/ops/conv_gpu.py — GPU kernels (any device runs them):
             stencils for few channels per group; an implicit GEMM like matmul's GEMM_TILED.
  im2col     kernels/conv_im2col_any.cl + matmul.gemm — an im2col workspace chunked over the
             batch (at most ``backends.conv_workspace_limit`` bytes); groups and samples are GEMM
             batch dims, the weight broadcast over samples by a stride-0 view.
An algorithm that cannot run a problem (local memory too small; for im2col, a weight whose
(C/G, kH, kW) do not merge into one stride) gives way to implicit, then direct.
"""
from __future__ import annotations

import logging
import math
import sys

import numpy as np

from clgrad import _log, backends
from clgrad import settings
from clgrad._args import _pair
from clgrad.autograd import record
from clgrad.ops import conv_algorithms as alg
from clgrad.ops import conv_gpu
from clgrad.ops import elementwise as ew
from clgrad.ops import reduce as rd
from clgrad.ops._util import empty, same_device
from clgrad.ops.conv_problem import Plan, Problem, cdiv, raw, v5
from clgrad.ops.plan import cached as plan_cached, key as plan_key, record_launches
from clgrad.tensor import Tensor

__all__ = ["conv2d"]

FEW_PAIRS = 16          # C/G * O/G at most this: the stencil algorithms (see _auto)
BIG_OUTPUTS = 8 << 20   # N * O * oH * oW at least this: im2col on GPUs (see _auto)
_KERNELS = {**alg.KERNELS, **conv_gpu.KERNELS}  # algorithm: (forward, weight-gradient) kernels


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
    Raises:  RuntimeError for inconsistent shapes, channels not divisible by groups, fewer
             output channels than groups (none), a kernel larger than the padded input,
             non-positive stride/dilation/groups, negative padding, dtype or device mismatch;
             TypeError for non-tensors.
    Kernels: kernels/conv_<algorithm>_<cpu|gpu|any>.cl: conv_igemm_cpu.cl, conv_gemm_gpu.cl,
             conv_dw_cpu.cl, conv_direct_any.cl, conv_im2col_any.cl, conv_dw_gpu.cl,
             conv_igemm_gpu.cl, conv_blocked_cpu.cl.
    """
    ck = _check_key(input, weight, bias, stride, padding, dilation, groups)
    if ck is not None:  # the fast path of a cached signature: see _FAST
        dev = input._storage.device
        key = plan_key(_FAST, (input, weight, bias),
                       (ck, id(conv_gpu._TUNED), len(conv_gpu._TUNED)))
        fast = dev.plans.get(key)
        if fast is not None:
            plans, geo, shape, algo, debug, _ = fast
            out = Tensor._empty(shape, input._storage.dtype, dev)
            bufs = (input._storage.buffer, weight._storage.buffer, out._storage.buffer,
                    None if bias is None else bias._storage.buffer)
            for plan, roles in plans:
                plan.run(dev, *map(bufs.__getitem__, roles))
            if backends.last_conv_algorithm is not algo:  # a write to backends is a Python
                backends.last_conv_algorithm = algo       # call (its settings' epoch)
            backends.last_conv_algorithms["forward"] = algo
            if debug:
                _debug_choice("forward", fast[5], algo)
            return record("conv2d", out, (input, weight, bias),
                          _backward(geo, False, input, weight, bias), saved=[input, weight])
    geo = _check(input, weight, bias, stride, padding, dilation, groups)
    n, o, oh, ow = geo.n, geo.o * geo.g, geo.oh, geo.ow
    x4 = _as4(input)
    out = empty((n, o, oh, ow) if input.ndim == 4 else (o, oh, ow), input.dtype,
                input._storage.device)
    empty_sum = out.numel() == 0 or geo.c == 0  # nothing to convolve
    if not empty_sum:
        p = _forward_problem(geo, x4, weight, _as4(out), bias)
        algo, plan = _choose("forward", p, weight)
        o4 = _as4(out)

        def run():
            _run(algo, plan, "forward", p, x4, weight, o4, bias)
        if ck is None:
            run()
        else:  # the launches as Plans, for the next call with this signature
            bufs = (input._storage.buffer, weight._storage.buffer, out._storage.buffer,
                    None if bias is None else bias._storage.buffer)
            plans = record_launches(dev, run, bufs)
            if plans is not None:  # (keyed again: _choose may have measured, a new table)
                key = plan_key(_FAST, (input, weight, bias),
                               (ck, id(conv_gpu._TUNED), len(conv_gpu._TUNED)))
                dev.keep_plan(key, (plans, geo, out._shape, algo,
                                    bool(settings.getenv("CLGRAD_CONV_DEBUG")), p))
    elif out.numel():
        alg.fill_bias(_as4(out), bias)
    return record("conv2d", out, (input, weight, bias),
                  _backward(geo, empty_sum, input, weight, bias), saved=[input, weight])


# conv2d's fast path: dev.plans[plan.key(_FAST, (input, weight, bias), (_check_key, the
# measured table's identity and size))] -> (the forward's launches as (Plan, roles) from
# plan.record_launches, the checked geometry, the output shape, the algorithm, whether
# CLGRAD_CONV_DEBUG is set, the problem). Everything the checks, the problem and _choose read
# is in the key (layouts and dtypes of every operand, the arguments with their exact types,
# the settings epoch: clgrad.backends and CLGRAD_*), so a hit skips them and only binds the
# buffers and enqueues. Algorithms that allocate, copy or fill (im2col's workspace, a bias
# fill) are never recorded and keep the general path.
_FAST = "conv2d"


def _backward(geo, empty_sum, input, weight, bias):
    """conv2d's backward closure over its inputs and checked geometry."""
    def backward(grad):
        gi = gw = gb = None
        g4 = _as4(grad)
        want_b = bias is not None and bias.requires_grad
        if input.requires_grad:
            gi = empty(input.shape, input.dtype, input._storage.device)
            if empty_sum:
                ew.fill_raw(gi, 0)
            else:
                _grad_input_replayed(geo, grad, weight, gi)
        if weight.requires_grad or want_b:
            gw = empty(weight.shape, weight.dtype, weight._storage.device)
            gb = empty(bias.shape, bias.dtype, bias._storage.device) if want_b else None
            if empty_sum:
                ew.fill_raw(gw, 0)
                if gb is not None:
                    rd.sum_into(gb, g4, (0, 2, 3))
            else:
                x4 = _as4(input)
                p = geo._replace(x=v5(x4, geo.g))
                _run(*_choose("grad_weight", p, weight), "grad_weight", p, x4, g4, gw, gb)
            gw = gw if weight.requires_grad else None
        return gi, gw, gb
    return backward


# -- argument checks --------------------------------------------------------------------------
def _conv_pair(v, name):
    """clgrad._args._pair with PyTorch's RuntimeError for a sequence of the wrong length."""
    if isinstance(v, (list, tuple)) and len(v) not in (1, 2):
        raise RuntimeError(f"conv2d: expected {name} to be a single integer value or a list "
                           f"of 2 values to match the convolution dimensions, but got "
                           f"{name}={list(v)}")
    return _pair("conv2d", name, v, error=TypeError)


def _check(x, w, b, stride, padding, dilation, groups) -> Problem:
    """The problem's geometry (views still unset), or raise. Cached per everything the
    checks read (see _check_key); only checks that passed are cached."""
    key = _check_key(x, w, b, stride, padding, dilation, groups)
    geo = _CHECKED.get(key) if key is not None else None
    if geo is None:
        geo = _check_args(x, w, b, stride, padding, dilation, groups)
        if key is not None:
            if len(_CHECKED) >= 4096:
                _CHECKED.clear()
            _CHECKED[key] = geo
    return geo


_CHECKED: dict = {}  # _check_key -> the Problem _check_args gave


def _check_key(x, w, b, stride, padding, dilation, groups):
    """What _check_args reads, as a key (types exact: groups=True or stride=1.0 are not
    groups=1 or stride=1 to the checks): the tensors' types, devices, dtypes and shapes and
    the int/str/tuple-of-int arguments; None when an argument is of another kind (no cache)."""
    for v in (stride, padding, dilation):
        t = type(v)
        if t is tuple:
            for e in v:
                if type(e) is not int:
                    return None
        elif t is not int and t is not str:
            return None
    if type(groups) is not int or not isinstance(x, Tensor) or not isinstance(w, Tensor) or (
            b is not None and not isinstance(b, Tensor)):
        return None
    xs, ws = x._storage, w._storage
    bk = None if b is None else (type(b), b._storage.device, b._storage.dtype, b._shape)
    return (type(x), xs.device, xs.dtype, x._shape, type(w), ws.device, ws.dtype, w._shape,
            bk, stride, padding, dilation, groups)


def _check_args(x, w, b, stride, padding, dilation, groups) -> Problem:
    """_check's checks and geometry."""
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
    sh, sw = _conv_pair(stride, "stride")
    dh, dw = _conv_pair(dilation, "dilation")
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
    if o < g:
        raise RuntimeError(f"conv2d: given groups={g}, expected weight to be at least {g} at "
                           f"dimension 0, but got weight of size {list(w.shape)} instead")
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
        ph, pw = _conv_pair(padding, "padding")
        if ph < 0 or pw < 0:
            raise RuntimeError(f"conv2d: negative padding is not supported, got "
                               f"padding={[ph, pw]}")
        hp, wp = h + 2 * ph, wd + 2 * pw
    if hp < ekh or wp < ekw:
        raise RuntimeError(f"conv2d: calculated padded input size per channel: ({hp} x {wp}). "
                           f"Kernel size: ({ekh} x {ekw}). Kernel size can't be greater than "
                           f"actual input size")
    return Problem(n=n, g=g, c=c // g, h=h, w=wd, o=o // g, oh=(hp - ekh) // sh + 1,
                   ow=(wp - ekw) // sw + 1, kh=kh, kw=kw, sh=sh, sw=sw, dh=dh, dw=dw, ph=ph,
                   pw=pw)


# -- problems ---------------------------------------------------------------------------------
def _as4(t: Tensor) -> Tensor:
    return t if t.ndim == 4 else raw(t, (1,) + tuple(t.shape), (0,) + t._strides)


def _forward_problem(geo: Problem, x4, w, out4, bias) -> Problem:
    so, sc, skh, skw = w._strides
    kv = (w._offset, so * geo.o, so, sc, skh, skw)
    p = geo._replace(x=v5(x4, geo.g), k=kv, y=v5(out4, geo.g))
    if bias is not None:
        p = p._replace(boff=bias._offset, bs=bias._strides[0], bias=1)
    return p


def _grad_input_replayed(geo: Problem, grad, w, gi):
    """_grad_input into the fresh ``gi``, replayed from its recorded launches (as conv2d's
    forward, see _FAST) when this geometry, gradient and weight layout, measured table and
    settings epoch ran before without allocating, copying or filling."""
    dev = gi._storage.device
    key = plan_key(_FAST_GI, (grad, w), (geo, id(conv_gpu._TUNED), len(conv_gpu._TUNED)))
    bufs = (grad._storage.buffer, w._storage.buffer, gi._storage.buffer)
    hit = dev.plans.get(key)
    if hit is not None:
        plans, algo, debug = hit
        for plan, roles in plans:
            plan.run(dev, *map(bufs.__getitem__, roles))
        backends.last_conv_algorithm = algo
        backends.last_conv_algorithms["grad_input"] = algo
        if debug is not None:  # CLGRAD_CONV_DEBUG's line, as _choose prints it
            _debug_choice("grad_input", debug, algo)
        return
    plans = record_launches(dev, lambda: _grad_input(geo, _as4(grad), w, _as4(gi)), bufs)
    if plans is not None:  # (keyed again: _choose may have measured, a new table)
        key = plan_key(_FAST_GI, (grad, w), (geo, id(conv_gpu._TUNED), len(conv_gpu._TUNED)))
        debug = (_grad_input_problem(geo, _as4(grad), w, _as4(gi))
                 if settings.getenv("CLGRAD_CONV_DEBUG") else None)
        dev.keep_plan(key, (plans, backends.last_conv_algorithms["grad_input"], debug))


_FAST_GI = "conv2d_grad_input"  # the tag of _grad_input_replayed's plans


def _grad_input_problem(geo: Problem, g4, w, gi4) -> Problem:
    """The input gradient as a forward problem over the output gradient (see module doc)."""
    so, sc, skh, skw = w._strides
    kh, kw = geo.kh, geo.kw
    kv = (w._offset + (kh - 1) * skh + (kw - 1) * skw, so * geo.o, sc, so, -skh, -skw)
    return Problem(n=geo.n, g=geo.g, c=geo.o, h=geo.oh, w=geo.ow, o=geo.c, oh=geo.h,
                   ow=geo.w, kh=kh, kw=kw, sh=1, sw=1, dh=geo.dh, dw=geo.dw,
                   ph=(kh - 1) * geo.dh - geo.ph, pw=(kw - 1) * geo.dw - geo.pw, uh=geo.sh,
                   uw=geo.sw, x=v5(g4, geo.g), k=kv, y=v5(gi4, geo.g))


def _grad_input(geo: Problem, g4, w, gi4, algo=None) -> bool:
    """The input gradient, with ``algo`` (False when it cannot run the problem) or the one
    _choose picks. With stride s > 1 the transformed problem has s-1 zeros between
    output-gradient values; it runs as s_h * s_w phase problems instead, each a dense stride-1
    convolution of the output gradient with the taps that meet that phase (a strided view of
    the flipped weight) writing a strided view of gi: no multiply by an inserted zero."""
    p = _grad_input_problem(geo, g4, w, gi4)
    if algo is None:
        algo, plan = _choose("grad_input", p, w)
    elif (plan := _plan(algo, "grad_input", p, w)) is None:
        return False
    if algo == "im2col":  # runs on the forward problem: W^T g, then col2im into gi
        alg.im2col_dgrad(geo._replace(y=p.y), g4, w, gi4)
        return True
    if p.uh * p.uw == 1 or plan.inserts:
        _run(algo, plan, "grad_input", p, g4, w, gi4, None)
        return True
    phases = [q for q in _phases(p) if q is not None]
    if any(q.kh == 0 for q in phases):  # some phase no tap reaches: its gradient is 0
        isz = gi4.dtype.itemsize  # gi4 is fresh and contiguous: clear it, not a kernel
        gi4._storage.device.fill(gi4._storage.buffer, np.zeros(1, gi4.dtype.np),
                                 gi4._offset * isz, gi4.numel() * isz)
    if algo == "blocked" and alg.blocked_phases([q for q in phases if q.kh], g4, w, gi4):
        return True  # one padded copy of the output gradient for all phases
    for q in phases:
        if q.kh:
            a, qplan = algo, _plan(algo, "grad_input", q, w)
            if qplan is None:
                a, qplan = "direct", _plan("direct", "grad_input", q, w)
            _run(a, qplan, "grad_input", q, g4, w, gi4, None)
    return True


def _phases(p: Problem):
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
    for ri in range(p.uh):
        for rj in range(p.uw):
            oh, ow = cdiv(p.oh - ri, p.uh), cdiv(p.ow - rj, p.uw)
            if oh <= 0 or ow <= 0:
                out.append(None)
                continue
            yo, y0, y1, y2, y3, y4 = p.y
            q = p._replace(oh=oh, ow=ow, uh=1, uw=1, sh=1, sw=1,
                           y=(yo + ri * y3 + rj * y4, y0, y1, y2, y3 * p.uh, y4 * p.uw))
            th, tw = taps(ri, p.uh, p.ph, p.dh, p.kh), taps(rj, p.uw, p.pw, p.dw, p.kw)
            if th is None or tw is None:
                out.append(q._replace(kh=0, kw=0))
                continue
            ko, k0, k1, k2, k3, k4 = p.k
            out.append(q._replace(kh=cdiv(p.kh - th[0], th[1]), kw=cdiv(p.kw - tw[0], tw[1]),
                                  dh=th[2], dw=tw[2], ph=-th[3], pw=-tw[3],
                                  k=(ko + th[0] * k3 + tw[0] * k4, k0, k1, k2, k3 * th[1],
                                     k4 * tw[1])))
    return out


# -- dispatch ---------------------------------------------------------------------------------
def _choose(pass_name: str, p: Problem, w: Tensor):
    """(algorithm, plan) for one pass ('forward', 'grad_input', 'grad_weight') of problem p:
    the algorithm set in clgrad.backends (or 'auto'), else the first of implicit, direct that
    can run p. Records it in backends.last_conv_algorithm(s)."""
    want = backends.conv_algorithm
    dev = w._storage.device
    key = plan_key(_CHOICE, (), (pass_name, p, w._storage.dtype, want,
                                 backends.conv_implicit_variant, *conv_gpu.choice_epoch()))
    hit = dev.plans.get(key)
    if hit is not None:
        algo = hit[0]
        backends.last_conv_algorithm = algo
        backends.last_conv_algorithms[pass_name] = algo
        if settings.getenv("CLGRAD_CONV_DEBUG"):
            _debug_choice(pass_name, p, algo)
        return hit
    if want not in backends.CONV_ALGORITHMS:
        raise ValueError(f"conv2d: expected clgrad.backends.conv_algorithm in "
                         f"{backends.CONV_ALGORITHMS}, got {want!r}")
    if backends.conv_implicit_variant not in backends.CONV_IMPLICIT_VARIANTS:
        raise ValueError(f"conv2d: expected clgrad.backends.conv_implicit_variant in "
                         f"{backends.CONV_IMPLICIT_VARIANTS}, got "
                         f"{backends.conv_implicit_variant!r}")
    first = _auto(pass_name, p, dev, w.dtype) if want == "auto" else want
    for algo in (first, "implicit", "direct"):
        plan = _plan(algo, pass_name, p, w)
        if plan is not None:
            break
    backends.last_conv_algorithm = algo
    backends.last_conv_algorithms[pass_name] = algo
    if want == "auto" and _log.logger.isEnabledFor(logging.DEBUG):
        _log_choice(pass_name, p, w, first, algo)
    if settings.getenv("CLGRAD_CONV_DEBUG"):
        _debug_choice(pass_name, p, algo)
    return dev.keep_plan(key, (algo, plan))


# _choose's answers, (algorithm, plan), in the device's plans under plan.key(_CHOICE, (),
# (pass, problem, dtype, clgrad.backends' algorithm and implicit variant,
# conv_gpu.choice_epoch())). Everything the choice reads is in the key: the problem with its
# views, the settings (the epoch: clgrad.backends, CLGRAD_CONV_TUNE, the vector width), and
# the state of the measured choices (a new measurement, a cleared or replaced table). A cached
# answer saves ~40 µs of Python per conv pass on GPUs.
_CHOICE = "conv_choice"


def _debug_choice(pass_name: str, p: Problem, algo: str):
    """CLGRAD_CONV_DEBUG's line on stderr for one pass."""
    print(f"conv2d {pass_name}: {algo} (N={p.n} G={p.g} C/G={p.c} O/G={p.o} "
          f"{p.h}x{p.w} -> {p.oh}x{p.ow} k={p.kh}x{p.kw} "
          f"s={p.sh},{p.sw} u={p.uh},{p.uw})", file=sys.stderr)


_LOGGED: set = set()  # (pass, problem shape, device, dtype) whose 'auto' choice was logged


def _log_choice(pass_name: str, p: Problem, w: Tensor, first: str, algo: str):
    """Log 'auto''s choice for this pass and shape at DEBUG on the clgrad logger, once."""
    shape = (p.n, p.g, p.c, p.o, p.h, p.w, p.oh, p.ow, p.kh, p.kw, p.sh, p.sw, p.ph, p.pw,
             p.dh, p.dw, p.uh, p.uw)
    key = (pass_name, shape, id(w._storage.device), w.dtype)
    if key in _LOGGED:
        return
    _LOGGED.add(key)
    fell = "" if algo == first else f" ({first} cannot run it)"
    _log.logger.debug("conv2d %s auto: %s%s for N=%d G=%d C/G=%d O/G=%d %dx%d -> %dx%d "
                      "k=%dx%d stride=%d,%d pad=%d,%d dilation=%d,%d zero-insertion=%d,%d "
                      "on %s", pass_name, algo, fell, *shape, w._storage.device.name)


def _kernels(algo: str, pass_name: str, dev):
    if algo == "implicit" and alg.gpu_variant(dev):
        algo = "implicit:gpu"
    return _KERNELS[algo][pass_name == "grad_weight"]


def _plan(algo: str, pass_name: str, p: Problem, w: Tensor):
    """The plan for running the pass with algo, or None when algo cannot run p."""
    if algo == "im2col":
        return None if alg.kview(w) is None else Plan()
    dev = w._storage.device
    planner, _ = _kernels(algo, pass_name, dev)
    if algo not in _PLANNED:
        return planner(p, w.dtype, dev)
    # conv_algorithms' planners read only p, the dtype and the device (its compute units,
    # vector width, local memory and its kernels' own use of it): their plans are cached in
    # the device's plans (a failed plan, None, too) under plan.key of the planner itself (the
    # pass and the implicit variant pick it), the local memory size and the settings epoch
    # (CLGRAD_CPU_VECTOR_WIDTH changes the vector width).
    key = plan_key("conv", (), (planner, p, w._storage.dtype, dev.local_mem_size))
    return plan_cached(dev, key, lambda: planner(p, w._storage.dtype, dev))


_PLANNED = frozenset({"implicit", "depthwise", "pointwise", "direct"})  # conv_algorithms'


def _run(algo: str, plan, pass_name: str, p: Problem, a, b, c, d):
    """Launch the pass: (x, w, y, bias) forward and grad_input, (x, g, gw, gb) grad_weight."""
    if algo == "im2col":
        return alg.IM2COL[pass_name](p, a, b, c, d)
    _, launch = _kernels(algo, pass_name, a._storage.device)
    launch(p, plan, a, b, c, d)


def _auto(pass_name, p: Problem, dev, dtype) -> str:
    """The algorithm 'auto' runs, from measurements (PoCL on 2 Zen 4 cores; an H200 through
    NVIDIA's OpenCL). grad_weight's p is the forward problem. Few channel pairs per group
    (C/G * O/G <= FEW_PAIRS: depthwise with a channel multiplier up to 16 and the like; the
    crossover measured on PoCL lies between 16 and 32): the direct stencils on CPUs,
    conv_gpu's kernels on GPUs. Otherwise the implicit GEMM (its CPU or GPU kernels), except for
    big problems on GPUs (at least BIG_OUTPUTS outputs): there im2col + the tuned GEMM wins
    (H200, AlexNet conv2 groups=2 at N=128: fwd+bwd 24 ms against 33 ms;
    bench/results/gpu/conv_algos.txt), while on small ones (S1, N=64: 3.1 ms against 0.9 ms)
    it loses. im2col's launch count follows its workspace chunks, whose size
    (N * C * kH * kW * H_out * W_out) does not depend on groups. On GPUs a big problem's
    algorithm is measured once and cached (conv_gpu.measured) instead. On CPUs the other
    convs (at least conv_gpu.CPU_TUNE_MIN_MACS multiply-adds) run the faster of implicit and
    blocked, measured once per problem and cached the same way (CLGRAD_CONV_TUNE=off:
    implicit)."""
    few = p.c * p.o <= FEW_PAIRS
    if dev.kind == "cpu":
        if p.kh == p.kw == 1:
            return "pointwise"  # gives way to implicit where it cannot run p
        if few:
            return "depthwise"
        return conv_gpu.measured(pass_name, p, dev, dtype, _trial,
                                 conv_gpu.CPU_CANDIDATES) or "implicit"
    if few:
        return conv_gpu.few_channels_algorithm(pass_name, p, dev)
    big = p.n * p.g * p.o * p.oh * p.ow >= BIG_OUTPUTS
    return conv_gpu.measured(pass_name, p, dev, dtype, _trial) or (
        "im2col" if big else "implicit")


def _trial(pass_name: str, geo: Problem, dtype, dev):
    """run(algo) -> bool for conv_gpu.measured: the pass of the forward geometry geo with algo
    on fresh operands of its shapes (filled with 0.5, not zeros); False when algo cannot run
    it."""
    n, g, c, o = geo.n, geo.g, geo.c, geo.o
    x = empty((n, g * c, geo.h, geo.w), dtype, dev)
    w = empty((g * o, c, geo.kh, geo.kw), dtype, dev)
    y = empty((n, g * o, geo.oh, geo.ow), dtype, dev)
    for t in (x, w, y):
        ew.fill_raw(t, 0.5)
    if pass_name == "grad_input":
        return lambda algo: _grad_input(geo, y, w, x, algo)
    if pass_name == "forward":
        p, args = _forward_problem(geo, x, w, y, None), (x, w, y, None)
    else:
        p, args = geo._replace(x=v5(x, g)), (x, y, w, empty((g * o,), dtype, dev))

    def run(algo):
        plan = _plan(algo, pass_name, p, w)
        if plan is not None:
            _run(algo, plan, pass_name, p, *args)
        return plan is not None
    return run
