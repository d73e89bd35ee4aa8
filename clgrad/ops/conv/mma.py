"""igemm_mma — float16 implicit-GEMM convolution on NVIDIA's tensor cores (planner and launcher
of kernels/conv_igemm_mma_nv.cl, beside clgrad/ops/conv/gpu.py's float32 kernels).

Every pass of a float16 conv2d as one launch over all groups. Forward and input gradient
(conv.h's forward problem on the output gradient with zero insertion: one launch however
large the stride): Y[g] (O/G x N*oH*oW) = W[g] (O/G x C/G*kH*kW) @ col[g], the im2col matrix
gathered into local memory on the fly (no workspace, no col2im, no layout copies of the
output), the weight tiles copied by cp.async, the products summed in float32 by mma.sync
(inline PTX), the output rounded to float16 once. Weight gradient: GW[g] (O/G x C/G*kH*kW + 1,
the last column the bias gradient's) = GO[g] @ col[g]^T over the batch's pixels, split into
slices summed in float32 (algorithms._reduce, one rounding). Where the channels a group are
a multiple of 8 (``NHWC``), the passes read an NHWC copy of X (to_nhwc8 or to_nhwc, one
launch) by cp.async instead, 8 channels of one window position a 16-byte chunk, the taps
in (kh, kw, c) order (the forward's weight copied into it). Where the float16 convolutions
ran im2col + the pipelined GEMM + col2im before (ResNeXt-29's AMP step on an H200: 17 ms of
24.7 ms of kernels in those and their layout copies; bench/README.md, 2026-12-06b).

Which devices: NVIDIA's OpenCL where the pipelined GEMM runs (matmul.has_mma_async, float16),
then once per device and process four problems (groups and a bias; taps not a multiple of 8;
zero insertion on a flipped weight view; NHWC's forward and weight gradient with groups)
and their weight gradients against float64 NumPy (``available``); a failure warns
and the float16 convolutions keep im2col. ``EMULATE`` (tests) builds the kernel without PTX
(kernels/mma_async_nv.h's MMA_EMULATE: the same tiles, swizzles, gathers and stores; the mma,
cp.async and ldmatrix as plain loops) so that any OpenCL device checks its index math.

``auto`` measures this against im2col per pass and problem (choice.py), and the small tiles
(``igemm_mma:small``) where _tile's are others.
"""
from __future__ import annotations

import warnings

import numpy as np
import pyopencl as cl

from clgrad import capture as _capture, dtypes, layout
from clgrad.ops._util import copy_raw, empty
from clgrad.kernel_structs import V5_T, longs
from clgrad.ops.conv.algorithms import _bias_buffer, _reduce, _workspace
from clgrad.ops.conv.gpu import _INT_LIMIT, _defines, _extent
from clgrad.ops.conv.problem import Plan, Problem, Tiles, cdiv, raw, v5
from clgrad.runtime import pack
from clgrad.ops.matmul import has_mma_async, smem_defines
from clgrad.tensor import Tensor

__all__ = ["KERNELS", "available", "TILES", "repeats"]

# Tiles (kernels/conv_igemm_mma_nv.cl): WARPS_M x WARPS_N warps of MT 16-row by NT 8-column mma
# tiles, STAGES weight tiles in flight. "large" (128 x 128, 256 work items) for more than 64
# output channels a group, "mid" (64 x 128, 128 items) for fewer, "small" (64 x 64) where mid's
# work-groups would not fill the compute units.
TILES = {"large": dict(WARPS_M=2, WARPS_N=4, MT=4, NT=4, STAGES=3),
         "mid": dict(WARPS_M=1, WARPS_N=4, MT=4, NT=4, STAGES=3),
         "small": dict(WARPS_M=2, WARPS_N=2, MT=2, NT=4, STAGES=3)}
VERSION = 3  # in the measured choices' keys (choice.py): raised where the kernel changes
EMULATE = False  # tests: build kernels/conv_igemm_mma_nv.cl without PTX (any device)
# Every pass of problems whose channels a group are a multiple of 8 reads an NHWC copy of X
# (to_nhwc8 or to_nhwc: one launch) by cp.async, 8 channels of a window position a chunk, instead of
# gathering the window element by element (igemm_mma_fwd_nhwc; igemm_mma_wgrad_nhwc where the
# output gradient's planes come in 16-byte chunks, _planes_in_chunks)
NHWC = True
_OK: dict = {}   # (Device, EMULATE, NHWC) -> available's verdict


def _rows_cols(t: dict) -> tuple:
    """(rows, columns, work items) of a work-group of tiles t."""
    return t["WARPS_M"] * t["MT"] * 16, t["WARPS_N"] * t["NT"] * 8, t["WARPS_M"] * t["WARPS_N"] * 32


def _work_groups(p: Problem, t: dict) -> int:
    """The forward launch's work-groups for problem p with tiles t."""
    bm, bn, _ = _rows_cols(t)
    return cdiv(p.o, bm) * cdiv(p.n * p.oh * p.ow, bn) * p.g


def _tile(p: Problem, dev) -> dict:
    """The tiles ``igemm_mma`` runs p with: large for more than 64 output channels a group
    where its work-groups give every compute unit one; else mid where its work-groups give
    each two; else small (H100, batch 128: ResNet-18's 512-channel 4 x 4 layer forward +
    backward 0.46 ms on large, 0.34 on small; bench/README.md, 2026-12-06e). ``auto`` also
    measures the small tiles against these (``igemm_mma:small``)."""
    if p.o > 64 and _work_groups(p, TILES["large"]) >= dev.compute_units:
        return TILES["large"]
    return TILES["mid"] if _work_groups(p, TILES["mid"]) >= 2 * dev.compute_units else \
        TILES["small"]


def available(dev) -> bool:
    """Whether float16 convolutions on ``dev`` may run igemm_mma: NVIDIA's OpenCL with the
    pipelined float16 GEMM (matmul.has_mma_async), or any device under EMULATE, whose build of
    this kernel matches float64 NumPy on _CHECKS (``_self_check``), once per device and
    process (a failure warns once)."""
    ok = _OK.get((dev, EMULATE, NHWC))
    if ok is None:
        ok = _OK[(dev, EMULATE, NHWC)] = (EMULATE or "NVIDIA" in dev.platform and
                                    has_mma_async(dev, "f16")) and _self_check(dev)
    return ok


def _plan_fwd(p: Problem, dt, dev):
    """Plan(inserts=True) for float16 problems on devices where ``available``: zero
    insertion runs in the kernel (a strided layer's input gradient in one launch); None
    otherwise, and where the pixel count or taps exceed 32-bit counters."""
    if dt is not dtypes.float16 or not available(dev):
        return None
    if p.n * p.oh * p.ow >= _INT_LIMIT or p.c * p.kh * p.kw >= _INT_LIMIT:
        return None
    return Plan(inserts=True)


def _wgrad_split(p: Problem, dev, t: dict) -> tuple:
    """(splits, pixels a split) of the weight gradient's depth (the batch's N * oH * oW
    pixels): enough work-groups for WGRAD_FILL per compute unit, each split at least
    WGRAD_MIN_PIXELS pixels, a multiple of the tile depth (32); the splits then as many as
    that leaves."""
    bm, bn, _ = _rows_cols(t)
    npix = p.n * p.oh * p.ow
    wgs = cdiv(p.c * p.kh * p.kw + 1, bn) * cdiv(p.o, bm) * p.g
    want = max(1, min(cdiv(WGRAD_FILL * dev.compute_units, wgs), npix // WGRAD_MIN_PIXELS))
    qs = cdiv(cdiv(npix, want), 32) * 32
    return cdiv(npix, qs), qs


WGRAD_FILL = 2          # work-groups per compute unit the weight gradient's splits aim at
WGRAD_MIN_PIXELS = 1024  # the fewest pixels a split sums


def _plan_wgrad(p: Problem, dt, dev):
    """The weight gradient's plan (its splits in Tiles.split) for float16 problems on devices
    where ``available``; None otherwise (and for zero insertion: never a weight gradient's)."""
    if _plan_fwd(p, dt, dev) is None or p.uh * p.uw != 1:
        return None
    return Plan(Tiles(split=_wgrad_split(p, dev, _tile(p, dev))[0]))


def _wgrad(p: Problem, plan: Plan, x, g4, gw, gb, t: dict | None = None):
    """The weight gradient: _wgrad_partial's split sums (tiles t, default _tile's), summed
    into gw and gb (algorithms._reduce: float32 sums, one rounding)."""
    ws = _wgrad_partial(p, x, g4, t)
    _reduce(p, plan.tiles._replace(split=ws.shape[0]), ws, gw, gb)


def _wgrad_partial(p: Problem, x, g4, t: dict | None = None):
    """Launch igemm_mma_wgrad (igemm_mma_wgrad_nhwc on to_nhwc's copy of x where _nhwc and
    the output gradient's planes allow) with tiles t (default: _tile's): the float32 partial
    sums of each split, bias column included, as a fresh (split, G, O/G, C/G*kH*kW + 1)
    tensor."""
    dev = x._storage.device
    t = t or _tile(p, dev)
    split, qs = _wgrad_split(p, dev, t)
    bm, bn, nthr = _rows_cols(t)
    gv = v5(g4, p.g)
    ws = _workspace(p, split, dtypes.float32, dev)
    name = "igemm_mma_wgrad"
    if _nhwc(p) and _planes_in_chunks(gv, p.oh, p.ow, p.g):
        name, x = "igemm_mma_wgrad_nhwc", _to_nhwc(p, dev, t, x, False)
    dev.launch(_kernel(p, dev, t, name, gv),
               (cdiv(p.c * p.kh * p.kw + 1, bn) * nthr, cdiv(p.o, bm), p.g * split),
               (nthr, 1, 1), p.pack(), x._storage.buffer, g4._storage.buffer,
               pack(gv, longs(V5_T)), ws._storage.buffer, np.int64(qs))
    return ws


def _nhwc(p: Problem) -> bool:
    """Whether the forward problem p runs igemm_mma_fwd_nhwc (NHWC, channels a group a
    multiple of 8)."""
    return NHWC and p.c % 8 == 0 and p.h * p.w < _INT_LIMIT and p.g * p.c < _INT_LIMIT


def _planes_in_chunks(view: tuple, h: int, w: int, g: int) -> bool:
    """Whether a (N, G, C, h, w) view (off, n, g, c, h, w strides) has contiguous (h, w)
    planes read in 16-byte chunks: the plane, the offset and the sample, group and channel
    strides multiples of 8 halves (the output gradient of igemm_mma_wgrad_nhwc; X of
    to_nhwc8)."""
    off, sn, sg, sc, sh, sw = view
    return ((h * w) % 8 == 0 and (sw == 1 or w == 1) and (sh == w or h == 1)
            and all(v % 8 == 0 for v in (off, sn, sc) + ((sg,) if g > 1 else ())))


def _to_nhwc(p: Problem, dev, t: dict, x, nhwc_build: bool):
    """A fresh (N, H, W, G*C) copy of x (the problem's X view) in one launch from the build
    the next kernel comes from (``nhwc_build``: igemm_mma_fwd_nhwc's): to_nhwc8 (16-byte
    accesses, an 8 x 8 block a work item) where the channels a group are a multiple of 8
    (as _nhwc) and X's planes come in 16-byte chunks, else to_nhwc (a 32 x 32 local tile,
    2-byte accesses through the view's strides)."""
    xh = empty((p.n, p.h, p.w, p.g * p.c), x.dtype, dev)
    if p.c % 8 == 0 and _planes_in_chunks(p.x, p.h, p.w, p.g):
        name = "to_nhwc8"
        grid = (cdiv(p.n * p.h * p.w, 64) * 8, cdiv(p.g * p.c, 64) * 8, 1), (8, 8, 1)
    else:
        name = "to_nhwc"
        grid = (cdiv(p.h * p.w, 32) * 32, cdiv(p.g * p.c, 32) * 8, p.n), (32, 8, 1)
    dev.launch(_kernel(p, dev, t, name, nhwc_build=nhwc_build), *grid,
               p.pack(), x._storage.buffer, xh._storage.buffer)
    return xh


def _weight(p: Problem, w: Tensor, nhwc: bool = False):
    """(problem, weight tensor) whose weight view has its taps contiguous in the kernel's
    order ((c, kh, kw); (kh, kw, c) for ``nhwc``) and its row stride, group stride and
    offset multiples of 8 halves (cp.async's 16-byte chunks): the caller's weight where it is
    so (a contiguous forward weight whose taps are a multiple of 8 and, for ``nhwc``, a 1 x 1
    kernel), else a copy [g][o][taps padded to 8] (the input gradient's flipped, transposed
    view; taps not a multiple of 8)."""
    kall = p.c * p.kh * p.kw
    off, s0, s1 = p.k[:3]
    order = (1, 2, 0) if nhwc else (0, 1, 2)  # the kernel's tap digits among (c, kh, kw)
    taps = (1, p.kw * p.c, p.c) if nhwc else (p.kh * p.kw, p.kw, 1)  # their strides there
    dims = (p.c, p.kh, p.kw)
    flat = layout.view_strides(tuple(dims[i] for i in order), tuple(p.k[3 + i] for i in order),
                               (kall,))
    if (flat is not None and (flat[0] == 1 or kall == 1) and s1 % 8 == 0 and off % 8 == 0
            and (p.g == 1 or s0 % 8 == 0)):
        return p._replace(k=(off, s0, s1, *taps)), w
    kp = cdiv(kall, 8) * 8
    shape = (p.g, p.o, p.c, p.kh, p.kw)
    buf = empty((p.g, p.o, kp), w.dtype, w._storage.device)
    kv = (0, p.o * kp, kp, *taps)
    copy_raw(raw(buf, shape, kv[1:], 0), raw(w, shape, p.k[1:], p.k[0]))
    return p._replace(k=kv), buf


def _kernel(p: Problem, dev, t: dict, name: str = "igemm_mma_fwd", gv=None,
            nhwc_build: bool | None = None):
    """The kernel ``name`` for problem p and tiles t (gv: the weight gradient's view of the
    output gradient, whose in-sample offsets I32 bounds too), from the build with NHWC
    defined where ``nhwc_build`` (default: for igemm_mma_fwd_nhwc)."""
    d = _defines(p, dtypes.float16, {"x": p.x}, **t, WAIT=t["STAGES"] - 2)
    d.pop("I32", None)
    ext = (p.c - 1) * abs(p.x[3]) + _extent(p.x, p.h, p.w)
    if gv is not None:
        ext = max(ext, (p.o - 1) * abs(gv[3]) + _extent(gv, p.oh, p.ow))
    if ext < _INT_LIMIT:
        d["I32"] = 1
    _, bn, _ = _rows_cols(t)
    if p.n * p.oh * p.ow + bn < _INT_LIMIT:
        d["P32"] = 1
    if name == "igemm_mma_fwd_nhwc" if nhwc_build is None else nhwc_build:
        d["NHWC"] = 1
    if EMULATE:
        d["MMA_EMULATE"] = 1
    else:
        d.update(smem_defines(dev))
    return dev.kernel("conv_igemm_mma_nv.cl", name, d)


def _fwd(p: Problem, plan: Plan, x, w, y, bias, t: dict | None = None):
    """Launch igemm_mma_fwd: y (the problem's Y view) = conv.h's problem p of x and w (+ bias),
    with tiles t (default: _tile's)."""
    dev = x._storage.device
    t = t or _tile(p, dev)
    nhwc = _nhwc(p)
    p, w = _weight(p, w, nhwc)
    bm, bn, nthr = _rows_cols(t)
    name = "igemm_mma_fwd"
    if nhwc:
        name, x = "igemm_mma_fwd_nhwc", _to_nhwc(p, dev, t, x, True)
    dev.launch(_kernel(p, dev, t, name), (cdiv(p.n * p.oh * p.ow, bn) * nthr, cdiv(p.o, bm), p.g),
               (nthr, 1, 1), p.pack(), x._storage.buffer, w._storage.buffer,
               y._storage.buffer, _bias_buffer(bias, y))


def _pinned(name: str) -> tuple:
    """The KERNELS entry of ``igemm_mma:<name>``: TILES[name] on every problem (igemm_mma's
    planners)."""
    t = TILES[name]

    def fwd(p, plan, x, w, y, bias):
        _fwd(p, plan, x, w, y, bias, t)

    def wgrad(p, plan, x, g4, gw, gb):
        _wgrad(p, plan, x, g4, gw, gb, t)
    return (_plan_fwd, fwd), (_plan_wgrad, wgrad)


def repeats(algo: str, p: Problem, dev) -> bool:
    """Whether ``algo`` (igemm_mma:<tiles>) runs p with the tiles igemm_mma runs it with
    (_tile's): a candidate ``auto`` need not measure."""
    return algo.startswith("igemm_mma:") and _tile(p, dev) is TILES[algo.split(":")[1]]


# algorithm: ((planner, forward launcher), (planner, weight-gradient launcher)), as
# algorithms.KERNELS; clgrad/ops/conv/choice.py merges it. igemm_mma: _tile's tiles per
# problem; igemm_mma:large|mid|small: those tiles on every problem.
KERNELS = {"igemm_mma": ((_plan_fwd, _fwd), (_plan_wgrad, _wgrad)),
           **{f"igemm_mma:{name}": _pinned(name) for name in TILES}}


# -- the self-check ---------------------------------------------------------------------------
def reference(p: Problem, x: np.ndarray, k: np.ndarray, bias=None) -> np.ndarray:
    """conv.h's problem p in float64 NumPy: x (n, g, c, h, w), k (g, o, c, kh, kw), bias (g*o,)
    or None -> y (n, g, o, oh, ow), with zero insertion (uh, uw) and padding."""
    x, k = x.astype(np.float64), k.astype(np.float64)
    hv, wv = (p.h - 1) * p.uh + 1, (p.w - 1) * p.uw + 1
    xv = np.zeros((p.n, p.g, p.c, hv, wv))
    xv[..., ::p.uh, ::p.uw] = x
    y = np.zeros((p.n, p.g, p.o, p.oh, p.ow))
    for i in range(p.kh):
        for j in range(p.kw):
            rows = np.arange(p.oh) * p.sh - p.ph + i * p.dh
            cols = np.arange(p.ow) * p.sw - p.pw + j * p.dw
            rin, cin = (rows >= 0) & (rows < hv), (cols >= 0) & (cols < wv)
            win = np.zeros((p.n, p.g, p.c, p.oh, p.ow))
            win[..., rin[:, None] & cin[None, :]] = xv[..., rows[rin][:, None],
                                                        cols[cin][None, :]].reshape(
                p.n, p.g, p.c, -1)
            y += np.einsum("ngchw,goc->ngohw", win, k[:, :, :, i, j])
    if bias is not None:
        y += bias.astype(np.float64).reshape(1, p.g, p.o, 1, 1)
    return y


def _put(dev, arr: np.ndarray) -> Tensor:
    t = empty(arr.shape, dtypes.float16, dev)
    cl.enqueue_copy(dev.queue, t._storage.buffer, np.ascontiguousarray(arr, np.float16))
    return t


def _get(dev, t: Tensor) -> np.ndarray:
    out = np.empty(t.shape, np.float16)
    cl.enqueue_copy(dev.queue, out, t._storage.buffer)
    return out


# the self-check's problems: (n, g, c, h, w, o, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw, uh,
# uw, bias, flipped weight view)
_CHECKS = ((2, 2, 16, 7, 9, 40, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, True, False),
           (3, 1, 5, 6, 11, 72, 3, 5, 3, 3, 2, 2, 1, 1, 1, 0, 1, 1, False, False),
           (2, 1, 24, 5, 6, 16, 10, 12, 3, 3, 1, 1, 1, 1, 1, 1, 2, 2, False, True),
           (2, 2, 8, 8, 8, 24, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, True, False))


def check_problem(dev, case, rng, t: dict | None = None) -> float:
    """Run one of _CHECKS on dev with tiles t (default: _tile's); the largest error in units
    of the float16 rounding of the output (|y - ref| / (2**-10 * (the sum of |products| +
    |bias|)))."""
    (n, g, c, h, w, o, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw, uh, uw, with_bias,
     flipped) = case
    p = Problem(n, g, c, h, w, o, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw, uh, uw)
    xa = rng.standard_normal((n, g * c, h, w)).astype(np.float16)
    ka = rng.standard_normal((g, o, c, kh, kw)).astype(np.float16)
    x = _put(dev, xa)
    y = empty((n, g * o, oh, ow), dtypes.float16, dev)
    if flipped:  # stored (g, c, o, kh, kw) and read flipped and transposed, as the input
        kt = _put(dev, ka.transpose(0, 2, 1, 3, 4)[:, :, :, ::-1, ::-1].copy())  # gradient
        kv = ((kh - 1) * kw + (kw - 1), c * o * kh * kw, kh * kw, o * kh * kw, -kw, -1)
    else:
        kt = _put(dev, ka)
        kv = (0, o * c * kh * kw, c * kh * kw, kh * kw, kw, 1)
    b = _put(dev, rng.standard_normal(g * o).astype(np.float16)) if with_bias else None
    p = p._replace(x=v5(x, g), k=kv, y=v5(y, g))
    if b is not None:
        p = p._replace(boff=0, bs=1, bias=1)
    _fwd(p, Plan(inserts=True), x, kt, y, b, t)
    got = _get(dev, y).astype(np.float64).reshape(n, g, o, oh, ow)
    bias_np = _get(dev, b) if b is not None else None
    ref = reference(p, xa.reshape(n, g, c, h, w), ka, bias_np)
    mag = reference(p, np.abs(xa.reshape(n, g, c, h, w)), np.abs(ka),
                    None if bias_np is None else np.abs(bias_np))
    return float(np.max(np.abs(got - ref) / (2.0 ** -10 * (mag + 1e-3))))


def reference_wgrad(p: Problem, x: np.ndarray, go: np.ndarray) -> np.ndarray:
    """The weight gradient of conv.h's problem p (no insertion) in float64 NumPy: x (n, g, c,
    h, w), go (n, g, o, oh, ow) -> (g, o, c*kh*kw + 1), the last column the bias gradient."""
    x, go = x.astype(np.float64), go.astype(np.float64)
    xp = np.zeros((p.n, p.g, p.c, p.h + 2 * abs(p.ph) + p.kh * p.dh + p.sh * p.oh,
                   p.w + 2 * abs(p.pw) + p.kw * p.dw + p.sw * p.ow))
    xp[..., abs(p.ph):abs(p.ph) + p.h, abs(p.pw):abs(p.pw) + p.w] = x
    out = np.zeros((p.g, p.o, p.c, p.kh, p.kw))
    for i in range(p.kh):
        for j in range(p.kw):
            r0, c0 = abs(p.ph) - p.ph + i * p.dh, abs(p.pw) - p.pw + j * p.dw
            win = xp[..., r0:r0 + p.sh * (p.oh - 1) + 1:p.sh, c0:c0 + p.sw * (p.ow - 1) + 1:p.sw]
            out[..., i, j] = np.einsum("ngohw,ngchw->goc", go, win)
    return np.concatenate([out.reshape(p.g, p.o, -1), go.sum(axis=(0, 3, 4))[..., None]], -1)


def check_wgrad(dev, case, rng, t: dict | None = None) -> float:
    """The weight gradient (and bias column) of one of _CHECKS without insertion on dev with
    tiles t (default: _tile's), its float32 split sums before the reduction: the largest
    error in float32 roundings of the sum of the products' magnitudes."""
    n, g, c, h, w, o, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw = case[:16]
    p = Problem(n, g, c, h, w, o, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw)
    xa = rng.standard_normal((n, g * c, h, w)).astype(np.float16)
    ga = rng.standard_normal((n, g * o, oh, ow)).astype(np.float16)
    x, go = _put(dev, xa), _put(dev, ga)
    ws = _wgrad_partial(p._replace(x=v5(x, g)), x, go, t)
    got = np.empty(ws.shape, np.float32)
    cl.enqueue_copy(dev.queue, got, ws._storage.buffer)
    got = got.astype(np.float64).sum(axis=0)
    x5, g5 = xa.reshape(n, g, c, h, w), ga.reshape(n, g, o, oh, ow)
    ref = reference_wgrad(p, x5, g5)
    mag = reference_wgrad(p, np.abs(x5), np.abs(g5))
    return float(np.max(np.abs(got - ref) / (2.0 ** -23 * n * oh * ow * (mag + 1e-3))))


def _self_check(dev) -> bool:
    """_CHECKS on dev's queue (outside any capture), each on every tile of TILES: float16
    outputs within 2 roundings of float64 (products exact, float32 sums, one rounding to
    float16), and the weight gradients of those without insertion, whose float32 split sums
    stay within the float32 bound of their depth (n * oH * oW roundings of the magnitudes'
    sum); False and a warning on any failure or build error."""
    try:
        with _capture.paused(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rng = np.random.default_rng(3)
            for case, name in ((c, n) for c in _CHECKS for n in TILES):
                err = check_problem(dev, case, rng, TILES[name])
                if not err <= 2.0:
                    raise RuntimeError(f"problem {case[:18]}, tiles {name}: error {err:.3g} "
                                       f"roundings")
                if case[16] * case[17] == 1:
                    err = check_wgrad(dev, case, rng, TILES[name])
                    if not err <= 1.0:
                        raise RuntimeError(f"weight gradient of {case[:16]}, tiles {name}: "
                                           f"error {err:.3g} float32 roundings of its depth")
        return True
    except Exception as e:  # noqa: BLE001 — any failure: keep im2col
        warnings.warn(f"clgrad: float16 convolutions on tensor cores (inline PTX, "
                      f"kernels/conv_igemm_mma_nv.cl) not used on {dev.name!r}: "
                      f"{' '.join(str(e).split())[:300]}", RuntimeWarning, stacklevel=3)
        return False
