"""The convolution problem of kernels/conv.h on the host: ``Problem`` (conv_t up to its tiling),
``Tiles`` (its tiling fields), ``Plan`` (what a planner chose), the view helpers shared by the
package's modules, conv2d's argument checks (``_check``: the geometry of a call, or PyTorch's
errors) and the problems of its passes (``_forward_problem``, ``_grad_input_problem`` and the
stride phases of the input gradient, ``_phases``).
"""
from __future__ import annotations

import math
import struct
from collections import namedtuple
from typing import NamedTuple

import numpy as np

from clgrad._args import _pair
from clgrad.kernel_structs import CONV_T, longs
from clgrad.layout import cdiv
from clgrad.ops._util import same_device
from clgrad.tensor import Tensor

__all__ = ["Problem", "Tiles", "Plan", "cdiv", "raw", "v5"]

_Z5 = (0,) * 6  # a v5_t that is not used: offset 0, strides 0
_PROBLEM = "n g c h w o oh ow kh kw sh sw dh dw ph pw uh uw x k y boff bs bias"
_TILES = "mc th tw cc ntw split rows rp cp kws slab"


class Problem(namedtuple("Problem", _PROBLEM, defaults=(1, 1, _Z5, _Z5, _Z5, 0, 0, 0))):
    """One convolution of a batch of groups: ``conv_t`` of kernels/conv.h up to its tiling, in
    the struct's order (see conv.h for what each field means). x, k, y are v5_t views
    (offset, 5 strides) of X (n, g, c, h, w), K (g, o, c, kh, kw) and Y (n, g, o, oh, ow);
    uh, uw (zero insertion) default to 1, the bias fields to 0 (no bias)."""
    __slots__ = ()

    def pack(self, tiles: "Tiles" = None) -> bytes:
        """``conv_t`` (this problem and ``tiles``) as the bytes of a by-value kernel argument."""
        return _CONV_T.pack(*self[:18], *self.x, *self.k, *self.y, self.boff, self.bs,
                            self.bias, *(tiles or _NO_TILES))


# The tiling fields of conv_t, chosen by a planner (all 0 unless set): tiles of th output rows
# x tw columns (ntw tiles per row) of mc output channels, cc input channels staged at a time,
# split batch splits (weight gradient); the staged window's rows, pitch rp, channel pitch cp,
# tap offset kws and layout slab (kernels/conv.h).
Tiles = namedtuple("Tiles", _TILES, defaults=(0,) * len(_TILES.split()))
_NO_TILES = Tiles()
_CONV_T = struct.Struct(f"<{longs(CONV_T)}q")  # conv_t: all longs


class Plan(NamedTuple):
    """What a planner chose: the tiles, the local-memory arguments (bytes each), for
    igemm_wgrad the input channels per work-group (cr, an argument of its own), and whether
    the kernels run zero insertion (U > 1) themselves (inserts: conv._grad_input then runs a
    strided layer's input gradient as one problem, not as phases)."""
    tiles: Tiles = _NO_TILES
    local: tuple = ()
    cr: int = 0
    inserts: bool = False


def raw(t: Tensor, shape, strides, offset=None) -> Tensor:
    """An alias of t's storage with this layout, outside autograd (a kernel operand)."""
    return Tensor(t._storage, shape, strides, t._offset if offset is None else offset)


def v5(t: Tensor, g: int) -> tuple:
    """(offset, strides) of the (N, G, C/G, H, W) view of a 4-D (N, C, H, W) tensor."""
    sn, sc, sh, sw = t._strides
    return (t._offset, sn, sc * (t.shape[1] // g), sc, sh, sw)


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
    if x.dtype.name not in ("float16", "float32", "float64"):
        raise RuntimeError(f"conv2d: expected float16, float32 or float64 tensors, got "
                           f"{x.dtype}")
    if x.dtype.name == "float16" and not x._storage.device.fp16:
        raise RuntimeError(f"conv2d: float16 tensors need a device with cl_khr_fp16; "
                           f"{x._storage.device.name!r} lacks it")
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


def _grad_input_problem(geo: Problem, g4, w, gi4) -> Problem:
    """The input gradient as a forward problem over the output gradient (see module doc)."""
    so, sc, skh, skw = w._strides
    kh, kw = geo.kh, geo.kw
    kv = (w._offset + (kh - 1) * skh + (kw - 1) * skw, so * geo.o, sc, so, -skh, -skw)
    return Problem(n=geo.n, g=geo.g, c=geo.o, h=geo.oh, w=geo.ow, o=geo.c, oh=geo.h,
                   ow=geo.w, kh=kh, kw=kw, sh=1, sw=1, dh=geo.dh, dw=geo.dw,
                   ph=(kh - 1) * geo.dh - geo.ph, pw=(kw - 1) * geo.dw - geo.pw, uh=geo.sh,
                   uw=geo.sw, x=v5(g4, geo.g), k=kv, y=v5(gi4, geo.g))


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
