"""The algorithms of conv2d (clgrad/ops/conv/op.py): per algorithm a planner (the tiles and
local memory for a problem on a device, or None when it cannot run it) beside its launchers,
in the order of the kernel files: kernels/conv_igemm_cpu.cl (implicit GEMM for CPUs, and the
weight-gradient reduction), conv_gemm_gpu.cl (implicit GEMM for GPUs), conv_dw_cpu.cl,
conv_direct_any.cl, conv_im2col_any.cl (+ clgrad.ops.matmul.gemm), and the pointwise 1 x 1 convs
(kernels/conv_pw_cpu.cl on CPUs; one batched clgrad.ops.matmul.gemm elsewhere). The problem
type and its packing: clgrad/ops/conv/problem.py (kernels/conv.h).

Launchers take ``(problem, plan, a, b, c, d)``: ``(x, w, y, bias)`` for the forward pass (and
the input gradient, run as a forward problem), ``(x, g, gw, gb)`` for the weight gradient.
"""
from __future__ import annotations


import numpy as np
import pyopencl as cl

from clgrad.kernel_structs import V5_T, longs
from clgrad import backends, dtypes, layout
from clgrad import settings
from clgrad.ops import reduce as rd
from clgrad.ops._util import copy_raw, defines_for, defines_of, empty, fill_raw
from clgrad.ops.plan import key as plan_key
from clgrad.ops.conv.problem import Plan, Problem, Tiles, cdiv, raw, v5
from clgrad.ops.elementwise import contiguous
from clgrad.ops.matmul import SPLIT_FILL, gemm, has_mma_f32out, mma_precision
from clgrad.ops.matmul import tiles as mm_tiles
from clgrad.runtime import pack
from clgrad.tensor import Tensor

__all__ = ["KERNELS", "IM2COL", "kview", "fill_bias", "im2col_dgrad", "gpu_variant",
           "blocked_phases"]

# Tuning constants. Their values date from the commit that wrote the kernels (5801e68); no
# sweep of any one of them is recorded: they are measured only through whole-conv timings
# (bench/conv.py -> bench/results/conv.md; GPUs: bench/gpu/conv_algos.py).
LOCAL_ALIGN = 128          # bytes: each local argument is padded to it (aligned vector reads)
WG = 64                    # work-group size of the 1-D kernels (direct, im2col, reduce)
IGEMM_BLOCK = 96           # output channels per forward work-group, at most (16 x 6)
IGEMM_ITEMS = 256          # outputs (th * tw) a forward tile aims at
IGEMM_TAPS = 256           # channel-taps (cc * kh * kw) staged per forward chunk
WINDOW_MAX = 64 << 10      # bytes of staged input window (forward, depthwise forward)
FILL_GROUPS = 8            # forward work-groups per compute unit that tiling aims for
WGRAD_MC = 32              # output channels per weight-gradient work-group (at most)
WGRAD_TW = 64              # output columns per weight-gradient tile (at most)
WGRAD_ITEMS = 1024         # outputs (th * tw) per weight-gradient tile (at most)
WGRAD_GT = 256 << 10       # bytes of staged output gradient per weight-gradient tile (at most)
WGRAD_XT = 16 << 10        # bytes of staged input per chunk of cc channels
WGRAD_ACC = 160 << 10      # bytes of weight accumulators per work-group
SPLIT_GROUPS = 4           # weight-gradient work-groups per compute unit (batch splits)
DW_WIDE_COLS = 32          # output columns from which the depthwise kernels use WIDE vectors
DW_WINDOW_MAX = 96 << 10   # bytes of staged window + output gradient, depthwise weight grad
# window elements per map (rows x columns, padding included) up to which pure depthwise convs
# run channels in lanes (dw_cv_*), and the bytes of window + outputs they stage at most: Xeon,
# 1 thread, batch 8, forward: 144 32x32 maps 0.97 against 1.26 ms with the phase planes, at
# stride 2 0.51 against 0.99 ms; 576 8x8 maps 0.32 against 0.60 ms
DW_CV_WINDOW = 1600
DW_CV_BYTES = 160 << 10
DW_CV_WIDE = True          # dw_cv_* with WIDE where the device has 16-float vectors (tests: off)
DIRECT_ITEMS = 64 * 64     # direct_wgrad work items per compute unit (batch splits)
# GPU variant (kernels/conv_gemm_gpu.cl): TS x TS tiles, (TS/WPT)^2 work items, depth TK.
GTILE = dict(TS=64, WPT=4, TK=16)
if settings.getenv("CLGRAD_CONV_GTILE"):  # benchmarking other tiles: "TS,WPT,TK"
    GTILE = dict(zip(("TS", "WPT", "TK"), map(int, settings.getenv("CLGRAD_CONV_GTILE").split(
        ","))))


# -- shared helpers ---------------------------------------------------------------------------
def _up(a, b):
    return cdiv(a, b) * b


def _wide(dev) -> bool:
    """16-float native vectors (AVX-512): the CPU kernels build with WIDE (conv.h)."""
    return dev.kind == "cpu" and dev.vector_width >= 16


def _vw(dtype, dev):
    """Elements per vector of the conv.h kernels built for dev (None: without WIDE)."""
    return (4 if dtype.itemsize == 8 else 8) * (2 if dev is not None and _wide(dev) else 1)


def _cpu_defines(dt, dev):
    """defines_for(dt), with WIDE where the device has 16-float vectors (dev None: never)."""
    return dict(defines_for(dt), WIDE=1) if dev is not None and _wide(dev) else defines_for(dt)


def _dw_dev(p: Problem, dev):
    """dev where the depthwise kernels build WIDE for p, else None: only for output rows of
    at least DW_WIDE_COLS (S5's 16x16 and 8x8 layers ran slower with it, 32x32 faster)."""
    return dev if p.ow >= DW_WIDE_COLS else None


def _locals(sizes):
    """Local-memory kernel arguments, each a multiple of LOCAL_ALIGN bytes: drivers place them
    one after the other, and the kernels read aligned vectors from them."""
    return [_local_memory(_up(max(int(b), 1), LOCAL_ALIGN)) for b in sizes]


def _local_memory(nbytes: int):
    """One cl.LocalMemory of ``nbytes`` (only a size: shared by every launch asking for it)."""
    got = _LOCAL_MEMORY.get(nbytes)
    if got is None:
        got = _LOCAL_MEMORY[nbytes] = cl.LocalMemory(nbytes)
    return got


_LOCAL_MEMORY: dict = {}  # bytes -> cl.LocalMemory


def _fits(sizes, dev, kernel=None) -> bool:
    """Whether local arguments of ``sizes`` bytes fit the device's local memory, counting what
    ``kernel`` (file, name, defines) uses by itself: on the H200 a depthwise weight-gradient
    plan whose three buffers added to exactly the 48 KiB failed its launch with
    OUT_OF_RESOURCES before the kernel's own local memory was counted."""
    own = dev.kernel_local_mem(*kernel) if kernel is not None else 0
    return own + sum(_up(max(int(b), 1), LOCAL_ALIGN) for b in sizes) <= dev.local_mem_size


def _units(dev):
    return dev.compute_units


def _window(p: Problem, th, tw, vw) -> Tiles:
    """The staged-window layout of conv.h for tiles of th x tw outputs."""
    rows = (th - 1) * p.sh + (p.kh - 1) * p.dh + 1
    if p.sw == 1:
        rp, kws, slab = _up(tw + (p.kw - 1) * p.dw, vw), p.dw, 0
    else:
        rp, kws, slab = p.kw * tw, tw, 1
    return Tiles(th=th, tw=tw, ntw=cdiv(p.ow, tw), rows=rows, rp=rp, cp=rows * rp, kws=kws,
                 slab=slab)


def _even_rows(total, th):
    """Rows per tile: at most th, splitting total into equal tiles."""
    th = max(1, min(total, th))
    return cdiv(total, cdiv(total, th))


def _shrink(knobs: dict, order, floor: dict) -> bool:
    """Halve the first knob in order that is above its floor; False when none is."""
    for k in order:
        if knobs[k] > floor[k]:
            knobs[k] = max(floor[k], cdiv(knobs[k], 2))
            return True
    return False


def _workspace(p: Problem, split, dtype, dev):
    return empty((split, p.g, p.o, p.c * p.kh * p.kw + 1), dtype, dev)


def _reduce(p: Problem, tiles: Tiles, ws, gw, gb):
    """Sum the split partial sums ws into gw (through its grouped view) and gb; a float32 ws
    of float16 gradients (depthwise_gpu's) is summed in float32 and rounded once."""
    dev, dt = ws._storage.device, gw.dtype
    so, sc, skh, skw = gw._strides
    gv = pack((gw._offset, so * p.o, so, sc, skh, skw), longs(V5_T))
    k1, rows = p.c * p.kh * p.kw + 1, min(p.g * p.o, 65535)
    bbuf = gb._storage.buffer if gb is not None else gw._storage.buffer
    boff, bs = (gb._offset, gb._strides[0]) if gb is not None else (0, 0)
    d = (defines_for(dt) if ws.dtype is dt else
         dict(defines_for(dt), WS=ws.dtype.cl, IS_HALF=1))  # (float16's: conv.h)
    dev.launch(dev.kernel("conv_igemm_cpu.cl", "wgrad_reduce", d), (k1, rows),
               (WG, 1),
               p.pack(tiles), ws._storage.buffer, gw._storage.buffer, gv, bbuf,
               np.int64(boff), np.int64(bs), np.int32(1), np.int32(gb is not None))


def _bias_buffer(bias, y):
    return (bias if bias is not None else y)._storage.buffer


def _no_plan(p, dt, dev) -> Plan:
    return Plan()


# -- implicit GEMM, CPUs (kernels/conv_igemm_cpu.cl) ------------------------------------------
def _plan_implicit(p: Problem, dt, dev):
    vw, isz, khw = _vw(dt, dev), dt.itemsize, p.kh * p.kw
    tw = min(_up(p.ow, 2 * vw), 8 * vw)
    nblk = cdiv(p.o, IGEMM_BLOCK)
    nth = cdiv(p.oh, max(1, IGEMM_ITEMS // tw))
    while nth < p.oh and p.n * p.g * nblk * nth * cdiv(p.ow, tw) < FILL_GROUPS * _units(dev):
        nth += 1
    kn = dict(cc=max(1, min(p.c, IGEMM_TAPS // khw)), th=cdiv(p.oh, nth), mc=cdiv(p.o, nblk),
              tw=tw)
    while True:
        t = _window(p, kn["th"], kn["tw"], vw)
        cc = cdiv(p.c, cdiv(p.c, kn["cc"]))  # equal chunks
        local = (cc * t.cp * isz, 8 * cc * khw, (kn["mc"] + 4) * kn["th"] * kn["tw"] * isz)
        if cc * t.cp * isz <= WINDOW_MAX and _fits(local, dev):
            return Plan(t._replace(mc=kn["mc"], cc=cc), local)
        if not _shrink(kn, ("cc", "th", "mc", "tw"), dict(cc=1, th=1, mc=6, tw=2 * vw)):
            return None


def _implicit_fwd(p: Problem, plan: Plan, x, w, y, bias):
    dev, dt, t = x._storage.device, x.dtype, plan.tiles
    tiles = cdiv(p.oh, t.th) * t.ntw
    dev.launch(dev.kernel("conv_igemm_cpu.cl", "igemm", _cpu_defines(dt, dev)),
               (tiles, cdiv(p.o, t.mc), p.n * p.g), (1, 1, 1), p.pack(t),
               x._storage.buffer, w._storage.buffer, y._storage.buffer, _bias_buffer(bias, y),
               *_locals(plan.local))


def _plan_implicit_wgrad(p: Problem, dt, dev):
    vw, isz, khw = _vw(dt, dev), dt.itemsize, p.kh * p.kw
    mc = min(_up(p.o, 4), WGRAD_MC)
    tw = min(_up(p.ow, vw), WGRAD_TW)
    kn = dict(th=_even_rows(p.oh, min(WGRAD_ITEMS // tw, WGRAD_GT // (mc * tw * isz))), mc=mc,
              tw=tw, cr=p.c)
    while True:
        t = _window(p, kn["th"], kn["tw"], vw)
        cc = max(1, min(p.c, WGRAD_XT // (t.cp * isz)))
        cr = min(kn["cr"], max(1, WGRAD_ACC // (kn["mc"] * khw * isz) // cc) * cc)
        cc = min(cc, cr)
        mc4 = _up(kn["mc"], 4)
        local = (cc * t.cp * isz, mc4 * kn["th"] * kn["tw"] * isz, 4 * _up(cc * khw, 3),
                 mc4 * (cr * khw + 1) * isz)
        if _fits(local, dev):
            wgs = cdiv(p.c, cr) * cdiv(p.o, kn["mc"]) * p.g
            split = max(1, min(p.n, cdiv(SPLIT_GROUPS * _units(dev), wgs)))
            return Plan(t._replace(mc=kn["mc"], cc=cc, split=split), local, cr)
        kn["cr"] = cr
        if not _shrink(kn, ("cr", "th", "mc", "tw"), dict(cr=1, th=1, mc=4, tw=vw)):
            return None


def _implicit_wgrad(p: Problem, plan: Plan, x, g4, gw, gb):
    dev, dt, t = x._storage.device, x.dtype, plan.tiles
    ws = _workspace(p, t.split, dt, dev)
    dev.launch(dev.kernel("conv_igemm_cpu.cl", "igemm_wgrad", _cpu_defines(dt, dev)),
               (cdiv(p.c, plan.cr), cdiv(p.o, t.mc), p.g * t.split), (1, 1, 1),
               p.pack(t), np.int64(plan.cr), x._storage.buffer, g4._storage.buffer,
               pack(v5(g4, p.g), longs(V5_T)), ws._storage.buffer, *_locals(plan.local))
    _reduce(p, t, ws, gw, gb)


# -- implicit GEMM, GPUs (kernels/conv_gemm_gpu.cl): TS x TS tiles, local memory ------------------
def gpu_variant(dev) -> bool:
    """True when 'implicit' runs the GPU kernels on ``dev``."""
    v = backends.conv_implicit_variant
    return v == "gpu" or (v == "auto" and dev.kind == "gpu")


def _gemm_fwd(p: Problem, plan: Plan, x, w, y, bias):
    dev, dt = x._storage.device, x.dtype
    ts, rts = GTILE["TS"], GTILE["TS"] // GTILE["WPT"]
    dev.launch(dev.kernel("conv_gemm_gpu.cl", "gemm_fwd", dict(defines_for(dt), **GTILE)),
               (cdiv(p.n * p.oh * p.ow, ts) * rts, cdiv(p.o, ts) * rts, p.g),
               (rts, rts, 1), p.pack(plan.tiles), x._storage.buffer, w._storage.buffer,
               y._storage.buffer, _bias_buffer(bias, y))


def _plan_gemm_wgrad(p: Problem, dt, dev):
    ts = GTILE["TS"]
    wgs = cdiv(p.c * p.kh * p.kw + 1, ts) * cdiv(p.o, ts) * p.g
    red = p.n * p.oh * p.ow
    split = max(1, min(cdiv(red, 8 * GTILE["TK"]), cdiv(SPLIT_GROUPS * _units(dev), wgs)))
    return Plan(Tiles(split=split))


def _gemm_wgrad(p: Problem, plan: Plan, x, g4, gw, gb):
    dev, dt, t = x._storage.device, x.dtype, plan.tiles
    ts, rts = GTILE["TS"], GTILE["TS"] // GTILE["WPT"]
    kall = p.c * p.kh * p.kw
    ws = _workspace(p, t.split, dt, dev)
    dev.launch(dev.kernel("conv_gemm_gpu.cl", "gemm_wgrad", dict(defines_for(dt), **GTILE)),
               (cdiv(kall + 1, ts) * rts, cdiv(p.o, ts) * rts, p.g * t.split),
               (rts, rts, 1), p.pack(t), x._storage.buffer, g4._storage.buffer,
               pack(v5(g4, p.g), longs(V5_T)), ws._storage.buffer)
    _reduce(p, t, ws, gw, gb)


# -- depthwise: direct stencils for few channels per group (kernels/conv_dw_cpu.cl) ---------
def _dw_window(p: Problem, th, tw, vw) -> Tiles:
    """The phase-plane window of kernels/conv_dw_cpu.cl for tiles of th x tw outputs: sh * sw
    planes of `rows` rows of pitch rp per channel, cp elements per channel (with the zeroed
    tail the vector reads past the last plane meet)."""
    rows, rp = th + (p.kh - 1) * p.dh // p.sh, tw + (p.kw - 1) * p.dw // p.sw
    return Tiles(th=th, tw=tw, ntw=cdiv(p.ow, tw), rows=rows, rp=rp,
                 cp=p.sh * p.sw * rows * rp + 4 * vw)


def _cv_dev(p: Problem, dev):
    """dev where the channels-in-lanes kernels build WIDE (16 lanes on AVX-512; 576x8 maps,
    batch 8: 0.55 against 0.58 ms), else None: not where 16-lane blocks of channels would
    leave more lanes idle than 8-lane ones (24 channels: 3 blocks of 8, not 2 of 16) unless
    there are many channels."""
    narrow = _vw(dtypes.float32, None)
    even = _up(p.g, 2 * narrow) == _up(p.g, narrow) or p.g >= 16 * narrow
    return dev if DW_CV_WIDE and even else None


def _vw_max(dt):
    """The widest vector of the depthwise kernels: their plans size local memory for it, as
    the device's plans do not depend on its vector width (tests force either)."""
    return _vw(dt, None) * 2


def _plan_cv(p: Problem, dt, dev, wgrad: bool):
    """The channels-in-lanes plan (dw_cv_*: slab = 1) for pure depthwise problems (C/G ==
    O/G == 1) whose window is at most DW_CV_WINDOW elements per map and fits; else None."""
    rows = (p.oh - 1) * p.sh + (p.kh - 1) * p.dh + 1
    wp = (p.ow - 1) * p.sw + (p.kw - 1) * p.dw + 1
    if p.c != 1 or p.o != 1 or rows * wp > DW_CV_WINDOW or (p.uh * p.uw > 1 and wgrad):
        return None
    vw, isz, kk, npix = _vw_max(dt), dt.itemsize, p.kh * p.kw, p.oh * p.ow
    t = Tiles(th=p.oh, tw=p.ow, ntw=1, rows=rows, rp=wp, cp=rows * wp, slab=1)
    local = (rows * wp * vw * isz, npix * vw * isz, (kk + 1) * vw * isz, 4 * npix, 4 * kk,
             4 * p.h * p.w)
    if not wgrad:  # dw_cv_fwd's class tables (zero insertion)
        cls = p.uh * p.uw
        local += (4 * (2 * cls + 1 + 2 * npix + 2 * cls * kk) if cls > 1 else 4,)
    if local[0] + local[1] > DW_CV_BYTES or not _fits(
            local, dev, ("conv_dw_cpu.cl", "dw_cv_wgrad" if wgrad else "dw_cv_fwd",
                         defines_for(dt))):
        return None
    if wgrad:
        lanes = _vw(dt, _cv_dev(p, dev))
        split = max(1, min(p.n, cdiv(SPLIT_GROUPS * _units(dev), cdiv(p.g, lanes))))
        t = t._replace(split=split)
    return Plan(t, local, inserts=p.uh * p.uw > 1)


def _plan_dw(p: Problem, dt, dev):
    """Tiles of whole maps where the window fits WINDOW_MAX (else fewer rows, then fewer
    columns); pure depthwise problems whose window fits run channels in lanes (_plan_cv), with
    zero insertion too (a strided layer's input gradient in one launch). Other problems with
    zero insertion get an empty plan: choice._grad_input runs them as phase problems without
    insertion, each planned on its own."""
    cv = _plan_cv(p, dt, dev, False)
    if cv is not None:
        return cv
    if p.uh != 1 or p.uw != 1:
        return Plan()
    vw, isz, kk = _vw_max(dt), dt.itemsize, p.kh * p.kw
    kn = dict(th=p.oh, tw=p.ow)
    while True:
        t = _dw_window(p, kn["th"], kn["tw"], vw)
        local = (p.c * t.cp * isz, (t.th * t.rp + vw) * isz, p.o * p.c * kk * isz, 4 * kk)
        if local[0] <= WINDOW_MAX and _fits(local, dev, ("conv_dw_cpu.cl", "dw_fwd",
                                                         defines_for(dt))):
            return Plan(t, local)
        if not _shrink(kn, ("th", "tw"), dict(th=1, tw=vw)):
            return None


def _dw_fwd(p: Problem, plan: Plan, x, w, y, bias):
    dev, dt, t = x._storage.device, x.dtype, plan.tiles
    if t.slab:
        dv = _cv_dev(p, dev)
        blocks = p.n * cdiv(p.g, _vw(dt, dv))
        per = max(1, blocks // (FILL_GROUPS * _units(dev)))  # channel blocks per group
        dev.launch(dev.kernel("conv_dw_cpu.cl", "dw_cv_fwd", _cpu_defines(dt, dv)),
                   (cdiv(blocks, per),), (1,), p.pack(t), np.int64(per), x._storage.buffer,
                   w._storage.buffer, y._storage.buffer, _bias_buffer(bias, y),
                   *_locals(plan.local))
        return
    assert p.uh == p.uw == 1, "depthwise: zero insertion runs as phases (conv._grad_input)"
    tiles = cdiv(p.oh, t.th) * t.ntw
    planes = p.n * p.g
    per = max(1, planes * tiles // (FILL_GROUPS * _units(dev)))  # (n, g) planes per group
    dev.launch(dev.kernel("conv_dw_cpu.cl", "dw_fwd", _cpu_defines(dt, _dw_dev(p, dev))),
               (tiles, cdiv(planes, per)), (1, 1), p.pack(t), np.int64(per), x._storage.buffer,
               w._storage.buffer, y._storage.buffer, _bias_buffer(bias, y),
               *_locals(plan.local))


def _plan_dw_wgrad(p: Problem, dt, dev):
    """Tiles as _plan_dw (window and output gradient within DW_WINDOW_MAX); batch splits
    (summed by wgrad_reduce) only where there are fewer groups than SPLIT_GROUPS per compute
    unit, else each work-group sums all samples of its group and writes the gradient."""
    if p.uh != 1 or p.uw != 1:
        return None
    cv = _plan_cv(p, dt, dev, True)
    if cv is not None:
        return cv
    vw, isz, kk = _vw_max(dt), dt.itemsize, p.kh * p.kw
    kn = dict(th=p.oh, tw=p.ow)
    while True:
        t = _dw_window(p, kn["th"], kn["tw"], vw)
        local = (p.c * t.cp * isz, p.o * (t.th * t.rp + 4 * vw) * isz,
                 p.o * (p.c * kk + 1) * isz, 4 * kk)
        if local[0] + local[1] <= DW_WINDOW_MAX and _fits(
                local, dev, ("conv_dw_cpu.cl", "dw_wgrad", defines_for(dt))):
            split = max(1, min(p.n, cdiv(SPLIT_GROUPS * _units(dev), p.g)))
            return Plan(t._replace(split=split), local)
        if not _shrink(kn, ("th", "tw"), dict(th=1, tw=vw)):
            return None


def _dw_wgrad(p: Problem, plan: Plan, x, g4, gw, gb):
    dev, dt, t = x._storage.device, x.dtype, plan.tiles
    direct = t.split == 1
    ws = gw if direct else _workspace(p, t.split, dt, dev)
    so, sc, skh, skw = gw._strides
    gwv = pack((gw._offset, so * p.o, so, sc, skh, skw), longs(V5_T))
    if direct and gb is not None:
        p = p._replace(boff=gb._offset, bs=gb._strides[0], bias=1)
    else:
        p = p._replace(boff=0, bs=0, bias=0)
    bufs = (x._storage.buffer, g4._storage.buffer, pack(v5(g4, p.g), longs(V5_T)),
            ws._storage.buffer, gwv, (gb if gb is not None else gw)._storage.buffer)
    if t.slab:
        dv = _cv_dev(p, dev)
        dev.launch(dev.kernel("conv_dw_cpu.cl", "dw_cv_wgrad", _cpu_defines(dt, dv)),
                   (cdiv(p.g, _vw(dt, dv)), t.split), (1, 1), p.pack(t), *bufs,
                   *_locals(plan.local))
    else:
        dev.launch(dev.kernel("conv_dw_cpu.cl", "dw_wgrad", _cpu_defines(dt, _dw_dev(p, dev))),
                   (p.g, t.split), (1, 1), p.pack(t), np.int64(1), *bufs, *_locals(plan.local))
    if not direct:
        _reduce(p, t, ws, gw, gb)


# -- direct: one work item per output (kernels/conv_direct_any.cl) ---------------------------------
def _direct_fwd(p: Problem, plan: Plan, x, w, y, bias):
    dev, dt = x._storage.device, x.dtype
    n = p.n * p.g * p.o * p.oh * p.ow
    dev.launch(dev.kernel("conv_direct_any.cl", "direct_fwd", defines_for(dt)), (n,), (WG,),
               p.pack(plan.tiles), x._storage.buffer, w._storage.buffer, y._storage.buffer,
               _bias_buffer(bias, y))


def _plan_direct_wgrad(p: Problem, dt, dev):
    items = p.g * p.o * (p.c * p.kh * p.kw + 1)
    return Plan(Tiles(split=max(1, min(p.n, cdiv(DIRECT_ITEMS * _units(dev), items)))))


def _direct_wgrad(p: Problem, plan: Plan, x, g4, gw, gb):
    dev, dt, t = x._storage.device, x.dtype, plan.tiles
    items = p.g * p.o * (p.c * p.kh * p.kw + 1)
    ws = _workspace(p, t.split, dt, dev)
    dev.launch(dev.kernel("conv_direct_any.cl", "direct_wgrad", defines_for(dt)),
               (t.split * items,), (WG,), p.pack(t), x._storage.buffer, g4._storage.buffer,
               pack(v5(g4, p.g), longs(V5_T)), ws._storage.buffer)
    _reduce(p, t, ws, gw, gb)


# -- im2col + GEMM (kernels/conv_im2col_any.cl, clgrad.ops.matmul.gemm) ---------------------------
MERGE_PIXELS = 256  # float16 output maps below this many pixels take merged GEMMs (_merged)
# samples per im2col chunk at most: conv_im2col_any.cl's launch dimension 2 (65535 is the
# smallest limit of a grid dimension on GPUs; the kernels' 32-bit index math stays below 2^31)
IM2COL_CHUNK = 65535
WGRAD_SLICE_MIN = 1024  # float16 weight gradients: GEMM depth per split-K slice, at least


def kview(w: Tensor):
    """The weight as (G?, O, K) strides (so, sk) when (c, kh, kw) merge into one stride K."""
    o, c, kh, kw = w.shape
    st = layout.view_strides((c, kh, kw), w._strides[1:], (c * kh * kw,))
    return None if st is None else (w._strides[0], st[0])


def _chunks(p: Problem, per_sample_elems, dtype):
    """(n0, nc) sample chunks of at most backends.conv_workspace_limit bytes of workspace
    (one sample at least) and at most IM2COL_CHUNK samples (a launch dimension)."""
    nc = max(1, min(p.n, IM2COL_CHUNK, backends.conv_workspace_limit //
                    max(1, per_sample_elems * dtype.itemsize)))
    return [(n0, min(nc, p.n - n0)) for n0 in range(0, p.n, nc)]


def _im2col(p: Problem, x, n0, nc, col):
    dev = x._storage.device
    P = p.oh * p.ow
    if max(P, p.h * p.w, p.g * p.c) >= 1 << 31:
        raise RuntimeError(f"conv2d: im2col's 32-bit index math takes maps and channel counts "
                           f"below 2**31, got {p.h}x{p.w} -> {p.oh}x{p.ow}, {p.g * p.c} "
                           f"channels")
    dev.launch(dev.kernel("conv_im2col_any.cl", "im2col", defines_of(x.dtype)),
               (_up(P, WG), p.g * p.c, nc), (WG, 1, 1), p.pack(), np.int64(n0),
               np.int64(nc), x._storage.buffer, col._storage.buffer)


def _col2im(p: Problem, n0, nc, col, gi):
    dev = gi._storage.device
    dev.launch(dev.kernel("conv_im2col_any.cl", "col2im", defines_of(gi.dtype)),
               (_up(p.h * p.w, WG), p.g * p.c, nc), (WG, 1, 1), p.pack(), np.int64(n0),
               np.int64(nc), col._storage.buffer, gi._storage.buffer)


def _merged(p: Problem, dtype) -> bool:
    """Whether the im2col GEMMs of a float16 problem run over all the chunk's samples at once,
    (G batches of O x K @ K x (nc * P)), through a (G, O, nc, P) copy of the output (or of
    its gradient; the tensor itself where its samples and pixels merge: _runs), rather than
    per sample (nc * G batches of K x P columns, writing NCHW
    directly): when a sample's P output pixels are fewer than MERGE_PIXELS, where per-sample
    GEMMs leave most of a tensor-core tile's 128 columns empty (ResNet-18's 4 x 4 maps: 16
    of 128). float32 keeps the per-sample GEMMs its choices were measured with."""
    return dtype is dtypes.float16 and p.oh * p.ow < MERGE_PIXELS


def _gemm_operands(p: Problem, w, nc):
    """Views for one chunk: weight (nc, G, O, K) broadcast over samples (stride 0)."""
    so, sk = kview(w)
    return raw(w, (nc, p.g, p.o, p.c * p.kh * p.kw), (0, so * p.o, so, sk))


def fill_bias(y: Tensor, bias):
    """y (N, O, oH, oW) = bias broadcast, or 0."""
    if bias is None:
        fill_raw(y, 0)
    else:
        copy_raw(y, raw(bias, y.shape, (0, bias._strides[0], 0, 0), bias._offset))


def _split_gemm(p: Problem, nc: int, pixels: int, dev) -> bool:
    """Whether the im2col forward GEMM of ``nc`` images takes gemm's split-K path
    (matmul.gemm ``split=True``): on GPUs, when the whole layer's output (nc images x all
    G * O channels x pixels) is fewer small tiles than half of SPLIT_FILL per compute unit.
    AlexNet's convolutions at batch 1 on the H200 (18-48 tiles, K up to 3456). Decided on the
    layer, not per group, so the launch count does not depend on groups."""
    cfg = mm_tiles(dev)
    if dev.kind != "gpu" or "small" not in cfg:
        return False
    t = cfg["small"]
    tiles = cdiv(p.g * p.o, t["TSM"]) * cdiv(pixels, t["TSN"]) * nc
    return 2 * tiles < SPLIT_FILL * dev.compute_units


def _dense_1x1(p: Problem, v) -> int | None:
    """The merged pixel stride of the 5-D view v (p.x, or p.y: the input gradient's) where p
    is a 1 x 1 conv without stride, padding or zero insertion whose output map is its input
    map (conv_transpose2d's output_padding makes the input larger: H = oH + output_padding
    at stride 1): im2col's columns are then that view's own pixels, and the GEMM reads (or
    writes) it directly; None otherwise."""
    if (p.kh, p.kw, p.sh, p.sw, p.ph, p.pw, p.uh, p.uw) != (1, 1, 1, 1, 0, 0, 1, 1) or \
            (p.h, p.w) != (p.oh, p.ow):
        return None
    return _pixels(v, p.h, p.w)


def _sample_chunks(n: int):
    """(n0, nc) chunks of at most IM2COL_CHUNK samples (a launch dimension), no workspace."""
    return [(n0, min(IM2COL_CHUNK, n - n0)) for n0 in range(0, n, IM2COL_CHUNK)]


def _runs(v, nc: int, h: int, w: int) -> int | None:
    """The one stride of the (nc samples, h, w pixels) of the 5-D view v (offset, s0..s4),
    or None where they do not merge: a merged GEMM's columns run over (n, p), so where they
    merge (1 x 1 maps, one sample) its operand is the view itself, not a (G, ., nc, P) copy."""
    st = layout.view_strides((nc, h, w), (v[1], v[4], v[5]), (nc * h * w,))
    return None if st is None else st[0]


def _merged_view(t: Tensor, v, g: int, rows: int, n0: int, nc: int, h: int, w: int):
    """The (g, rows, nc * h * w) view of the 5-D view v of t's samples [n0, n0 + nc), or
    None where its samples and pixels do not merge (_runs)."""
    r = _runs(v, nc, h, w)
    return None if r is None else raw(t, (g, rows, nc * h * w), (v[2], v[3], r),
                                      v[0] + n0 * v[1])


def _im2col_fwd(p: Problem, x, w, y, bias):
    K, P, G = p.c * p.kh * p.kw, p.oh * p.ow, p.g
    if _merged(p, x.dtype):
        return _im2col_fwd_merged(p, x, w, y, bias)
    if bias is not None:
        fill_bias(y, bias)
    pix = _dense_1x1(p, p.x)
    for n0, nc in _chunks(p, G * K * P, x.dtype) if pix is None else _sample_chunks(p.n):
        if pix is None:
            col = empty((G, K, nc, P), x.dtype, x._storage.device)
            _im2col(p, x, n0, nc, col)
            cv = raw(col, (nc, G, K, P), (P, K * nc * P, nc * P, 1), 0)
        else:  # a dense 1 x 1: the columns are x's pixels (no im2col launch, no workspace)
            cv = raw(x, (nc, G, K, P), (p.x[1], p.x[2], p.x[3], pix), p.x[0] + n0 * p.x[1])
        yv = raw(y, (nc, G, p.o, P), (y._strides[0], y._strides[1] * p.o,
                                      y._strides[1], 1), y._offset + n0 * y._strides[0])
        gemm(yv, _gemm_operands(p, w, nc), cv, 1.0, 1.0 if bias is not None else 0.0,
             split=_split_gemm(p, nc, P, x._storage.device))


def _gcol(p: Problem, g4, n0, nc):
    """The output (gradient) chunk of samples [n0, n0 + nc) of g4 (N, G * O, oH, oW) copied
    into a fresh (G, O, nc, P) tensor: the GEMM operand whose columns run over (n, p)."""
    G, O, P = p.g, p.o, p.oh * p.ow
    gcol = empty((G, O, nc, P), g4.dtype, g4._storage.device)
    copy_raw(raw(gcol, (nc, G, O, p.oh, p.ow), (P, O * nc * P, nc * P, p.ow, 1), 0),
             raw(g4, (nc, G, O, p.oh, p.ow),
                 (g4._strides[0], g4._strides[1] * O, g4._strides[1], g4._strides[2],
                  g4._strides[3]), g4._offset + n0 * g4._strides[0]))
    return gcol


def _im2col_fwd_merged(p: Problem, x, w, y, bias):
    """_im2col_fwd with merged GEMMs (see _merged): y's chunk (G, O, nc * P) = W[g] @ col[g]
    (+ the bias, filled in first), then copied into y's (nc, G * O, oH, oW) view. Where
    samples and pixels merge (_runs: 1 x 1 maps, one sample) the GEMM writes y itself, and
    a dense 1 x 1 (_dense_1x1) reads x itself for col."""
    K, P, G, O = p.c * p.kh * p.kw, p.oh * p.ow, p.g, p.o
    dev = x._storage.device
    so, sk = kview(w)
    wv = raw(w, (G, O, K), (so * O, so, sk))
    yv5, dense = v5(y, G), _dense_1x1(p, p.x) is not None
    beta = 1.0 if bias is not None else 0.0
    for n0, nc in _chunks(p, G * (K + O) * P, x.dtype):
        cm = _merged_view(x, p.x, G, K, n0, nc, p.h, p.w) if dense else None
        if cm is None:
            col = empty((G, K, nc, P), x.dtype, dev)
            _im2col(p, x, n0, nc, col)
            cm = raw(col, (G, K, nc * P), (K * nc * P, nc * P, 1), 0)
        ym = _merged_view(y, yv5, G, O, n0, nc, p.oh, p.ow)
        if ym is not None:
            if bias is not None:
                fill_bias(raw(y, (nc, G * O, p.oh, p.ow), y._strides,
                              y._offset + n0 * y._strides[0]), bias)
            gemm(ym, wv, cm, 1.0, beta, split=False)
            continue
        yc = empty((G, O, nc, P), x.dtype, dev)
        if bias is not None:
            bs = bias._strides[0]
            copy_raw(yc, raw(bias, (G, O, nc, P), (O * bs, bs, 0, 0), bias._offset))
        gemm(raw(yc, (G, O, nc * P), (O * nc * P, nc * P, 1), 0), wv, cm, 1.0, beta,
             split=False)
        copy_raw(raw(y, (nc, G, O, p.oh, p.ow),
                     (y._strides[0], y._strides[1] * O, y._strides[1], y._strides[2],
                      y._strides[3]), y._offset + n0 * y._strides[0]),
                 raw(yc, (nc, G, O, p.oh, p.ow), (P, O * nc * P, nc * P, p.ow, 1), 0))


def im2col_dgrad(p: Problem, g4, w, gi):
    """The input gradient: per chunk col = W^T g (GEMM), then col2im sums col into gi.
    p: the forward problem, with y the (N, G, C/G, H, W) view of gi. Merged (see _merged):
    one GEMM over the chunk's samples from a (G, O, nc, P) copy of g. A dense 1 x 1
    (_dense_1x1) writes W^T g into gi itself: col2im would copy it there."""
    K, P, G = p.c * p.kh * p.kw, p.oh * p.ow, p.g
    if _merged(p, g4.dtype):
        so, sk = kview(w)
        wt = raw(w, (G, K, p.o), (so * p.o, sk, so))
        gv5, dense = v5(g4, G), _dense_1x1(p, p.y) is not None
        for n0, nc in _chunks(p, G * (K + p.o) * P, g4.dtype):
            gm = _merged_view(g4, gv5, G, p.o, n0, nc, p.oh, p.ow)  # (_runs: g itself)
            if gm is None:
                gm = raw(_gcol(p, g4, n0, nc), (G, p.o, nc * P), (p.o * nc * P, nc * P, 1), 0)
            im = _merged_view(gi, p.y, G, K, n0, nc, p.h, p.w) if dense else None
            if im is not None:  # a dense 1 x 1 whose samples and pixels merge: gi itself
                gemm(im, wt, gm, split=False)
                continue
            col = empty((G, K, nc, P), g4.dtype, g4._storage.device)
            gemm(raw(col, (G, K, nc * P), (K * nc * P, nc * P, 1), 0), wt, gm, split=False)
            _col2im(p, n0, nc, col, gi)
        return
    if layout.view_strides(tuple(g4.shape[2:]), g4._strides[2:], (P,)) is None:
        g4 = contiguous(g4)
    pix = _dense_1x1(p, p.y)
    for n0, nc in _chunks(p, G * K * P, g4.dtype) if pix is None else _sample_chunks(p.n):
        a = _gemm_operands(p, w, nc)
        at = raw(a, (nc, G, K, p.o), (0, a._strides[1], a._strides[3], a._strides[2]))
        gv = raw(g4, (nc, G, p.o, P), (g4._strides[0], g4._strides[1] * p.o,
                                       g4._strides[1], g4._strides[3]),
                 g4._offset + n0 * g4._strides[0])
        if pix is not None:  # a dense 1 x 1: W^T g is gi itself (no col2im, no workspace)
            gemm(raw(gi, (nc, G, K, P), (p.y[1], p.y[2], p.y[3], pix), p.y[0] + n0 * p.y[1]),
                 at, gv, split=False)
            continue
        col = empty((G, K, nc, P), g4.dtype, g4._storage.device)
        gemm(raw(col, (nc, G, K, P), (P, K * nc * P, nc * P, 1), 0), at, gv, split=False)
        _col2im(p, n0, nc, col, gi)


def _im2col_wgrad(p: Problem, x, g4, gw, gb):
    """gw[g] (O, K) = sum over the chunks of gcol[g] (O, nc * P) @ col[g]^T (nc * P, K): a
    GEMM of depth N * P (the samples' pixels). float16 sums every chunk into one float32
    workspace and rounds once at the end (rounding after each chunk lost the small sums of
    large chunk partials: 423 ulps at 32 chunks); on tensor cores the depth also splits into
    slices (_wgrad_slices), whose float32 partial sums the same reduction adds."""
    K, P, G, O = p.c * p.kh * p.kw, p.oh * p.ow, p.g, p.o
    dev = x._storage.device
    gwv = raw(gw, (G, O, K), (gw._strides[0] * O, gw._strides[0], 1))
    chunks = _chunks(p, G * (K + O) * P, x.dtype)
    half = x.dtype is dtypes.float16
    split = half and mma_precision(dev, x.dtype, False) == "f16" and has_mma_f32out(dev)
    S = _wgrad_slices(p, chunks[0][1] * P, dev) if split else 1
    ws = (empty((S, G, O, K), dtypes.float32, dev) if half and (S > 1 or len(chunks) > 1)
          else None)
    gv5, dense = v5(g4, G), _dense_1x1(p, p.x) is not None
    for i, (n0, nc) in enumerate(chunks):
        depth = nc * P
        s = S if depth % (S * 8) == 0 else 1  # (a short last chunk: into slice 0)
        ks = depth // s
        # the operands over the depth (n, p) in s slices: g and x themselves where their
        # samples and pixels merge (_runs; x for a dense 1 x 1 only), else copies
        xm = _merged_view(x, p.x, G, K, n0, nc, p.h, p.w) if dense else None
        if xm is None:
            col = empty((G, K, nc, P), x.dtype, dev)
            _im2col(p, x, n0, nc, col)
            xm = raw(col, (G, K, depth), (K * depth, depth, 1), 0)
        gm = _merged_view(g4, gv5, G, O, n0, nc, p.oh, p.ow)
        if gm is None:
            gm = raw(_gcol(p, g4, n0, nc), (G, O, depth), (O * depth, depth, 1), 0)
        (xg, xk, xd), (gg, go, gd) = xm._strides, gm._strides
        c = (raw(gw, (1, G, O, K), (0, gwv._strides[0], gwv._strides[1], 1), gw._offset)
             if ws is None else raw(ws, (s, G, O, K), (G * O * K, O * K, K, 1), 0))
        gemm(c, raw(gm, (s, G, O, ks), (ks * gd, gg, go, gd), gm._offset),
             raw(xm, (s, G, ks, K), (ks * xd, xg, xd, xk), xm._offset), 1.0,
             1.0 if i else 0.0, split=False)
    if ws is not None:
        rd.sum_into(gwv, ws, 0)
    if gb is not None:
        rd.sum_into(gb, g4, (0, 2, 3))


def _wgrad_slices(p: Problem, depth: int, dev) -> int:
    """The slices S of the float16 weight gradient's GEMM depth (N * P, the first chunk's):
    a power of two dividing the depth into multiples of 8 (16-byte rows for the pipelined
    kernel), with at least WGRAD_SLICE_MIN per slice, and enough slices for two work-groups
    of 128 x 128 outputs per compute unit. ResNet-18's first 3 x 3 layer at batch 128 is a
    64 x 576 output of depth 131 072: 5 tiles on an H200's 132 compute units, so its GEMM ran
    each tile's whole depth on one unit (1.3 ms of 1.5 ms for its three GEMMs)."""
    tiles = p.g * cdiv(p.o, 128) * cdiv(p.c * p.kh * p.kw, 128)
    want = min(cdiv(2 * _units(dev), tiles), depth // WGRAD_SLICE_MIN)
    s = 1
    while s * 2 <= want and depth % (s * 2 * 8) == 0:
        s *= 2
    return s


# -- pointwise: a 1 x 1, stride-1, unpadded conv is a GEMM (conv_pw_cpu.cl; matmul.gemm) ----
def _pixels(v, h, w):
    """The (h, w) strides of the 5-D view v merged into one stride, or None."""
    st = layout.view_strides((h, w), v[4:6], (h * w,))
    return None if st is None else st[0]


def _plan_pointwise(p: Problem, dt, dev):
    """Plan(inserts=True) when p is a 1 x 1 conv without padding: y[n, g] (O, P) = K[g] (O, C)
    @ x[n, g] (C, P) with P = H * W, one launch. A stride reads x subsampled, a zero insertion
    (a strided layer's input gradient) writes y subsampled and the rest of y zero (see
    _pw_dense); views whose pixels do not merge into one stride go through a contiguous copy.
    None also where the maps do not pair up so (_pw_fits)."""
    if (p.kh, p.kw, p.ph, p.pw) != (1, 1, 0, 0) or not _pw_fits(p):
        return None
    return Plan(inserts=True)


def _pw_fits(p: Problem) -> bool:
    """Whether the 1 x 1 problem p's output map is the one its input map gives, per axis:
    without stride or insertion oH = H; a stride s reads rows 0, s, ... (oH - 1) s, which
    must lie below H; a zero insertion u writes rows 0, u, ... (H - 1) u, below oH (rows
    past them are zeroed). conv_transpose2d's output_padding (at least the stride, possible
    with dilation > 1) makes H larger than a conv of oH rows needs: such problems are
    refused, as the pointwise GEMM would write H x W pixels into oH x oW (memory past the
    output, found in review of 9b27320)."""
    for h, oh, s, u in ((p.h, p.oh, p.sh, p.uh), (p.w, p.ow, p.sw, p.uw)):
        if u > 1 and s > 1:
            return False
        if u > 1:
            if (h - 1) * u >= oh:
                return False
        elif s > 1:
            if (oh - 1) * s >= h:
                return False
        elif h != oh:
            return False
    return True


def _pw_dense(p: Problem) -> Problem:
    """The 1 x 1 problem p as an unstrided one without zero insertion: a stride s reads x's
    view subsampled (its pixel strides times s, H x W = oH x oW); a zero insertion u writes
    y's view subsampled (its pixel strides times u, oH x oW = H x W; the caller zeroes y)."""
    if p.sh * p.sw > 1:
        xo, x0, x1, x2, x3, x4 = p.x
        p = p._replace(h=p.oh, w=p.ow, sh=1, sw=1, x=(xo, x0, x1, x2, x3 * p.sh, x4 * p.sw))
    if p.uh * p.uw > 1:
        yo, y0, y1, y2, y3, y4 = p.y
        p = p._replace(oh=p.h, ow=p.w, uh=1, uw=1, y=(yo, y0, y1, y2, y3 * p.uh, y4 * p.uw))
    return p


def _view5(t, v, n, g, c, h, w):
    """The 5-D view v (offset, strides) of t's storage as a tensor (n, g, c, h, w)."""
    return raw(t, (n, g, c, h, w), v[1:], v[0])


def _merged_x(p: Problem, x):
    """(p, x) with x's view of p copied into a fresh contiguous (n, g, c, h, w) tensor where
    its pixels do not merge into one stride (what the pointwise kernels index)."""
    if _pixels(p.x, p.h, p.w) is not None:
        return p, x
    xc = empty((p.n, p.g, p.c, p.h, p.w), x.dtype, x._storage.device)
    copy_raw(xc, _view5(x, p.x, p.n, p.g, p.c, p.h, p.w))
    return p._replace(x=(xc._offset,) + tuple(xc._strides)), xc


def _pointwise_operands(p: Problem, x, y):
    """x as (N, G, C, P) and y as (N, G, O, P) views (P: the merged pixels)."""
    P = p.h * p.w
    xv = raw(x, (p.n, p.g, p.c, P), p.x[1:4] + (_pixels(p.x, p.h, p.w),), p.x[0])
    yv = raw(y, (p.n, p.g, p.o, P), p.y[1:4] + (_pixels(p.y, p.oh, p.ow),), p.y[0])
    return xv, yv


def _pointwise_fwd(p: Problem, plan: Plan, x, w, y, bias):
    """y[n, g] (O, P) = K[g] (O, C) @ x[n, g] (C, P) (+ bias): on CPUs one pw_gemm launch
    (kernels/conv_pw_cpu.cl) over the columns (n, p); elsewhere one batched gemm. Strided
    and zero-inserting problems run through _pw_dense (x gathered, y scattered where their
    pixels do not merge)."""
    if p.uh * p.uw > 1:  # the input gradient of a strided 1 x 1: y is zero between samples
        fill_raw(_view5(y, p.y, p.n, p.g, p.o, p.oh, p.ow), 0)
    p, x = _merged_x(_pw_dense(p), x)
    if _pixels(p.y, p.oh, p.ow) is None:
        yc = empty((p.n, p.g, p.o, p.oh, p.ow), y.dtype, y._storage.device)
        _pointwise_fwd(p._replace(y=(yc._offset,) + tuple(yc._strides)), plan, x, w, yc, bias)
        copy_raw(_view5(y, p.y, p.n, p.g, p.o, p.oh, p.ow), yc)
        return
    dev = x._storage.device
    if dev.kind == "cpu" and PW_CPU:
        return _pw_launch(dev, _pw_fwd_plan(p, x.dtype, dev, bias is not None), y, w, x,
                          bias)
    if bias is not None:
        fill_bias(raw(y, (p.n, p.g * p.o, p.oh, p.ow), (p.y[1], p.y[3], p.y[4], p.y[5]),
                      p.y[0]), bias)
    beta = 1.0 if bias is not None else 0.0
    if p.oh * p.ow == 1:  # 1 x 1 maps (squeeze-excitation): y[g] (N, O) = x[g] (N, C) @ K[g]^T
        gemm(raw(y, (p.g, p.n, p.o), (p.y[2], p.y[1], p.y[3]), p.y[0]),
             raw(x, (p.g, p.n, p.c), (p.x[2], p.x[1], p.x[3]), p.x[0]),
             raw(w, (p.g, p.c, p.o), (p.k[1], p.k[3], p.k[2]), p.k[0]), 1.0, beta,
             split=_few_tiles(p.g * cdiv(p.n, 64) * cdiv(p.o, 64), dev))
        return
    xv, yv = _pointwise_operands(p, x, y)
    kv = raw(w, (p.n, p.g, p.o, p.c), (0,) + p.k[1:4], p.k[0])
    gemm(yv, kv, xv, 1.0, beta, split=False)


def _few_tiles(tiles: int, dev) -> bool:
    """Whether a GPU GEMM of ``tiles`` 64 x 64 tiles is split along K (matmul.gemm
    ``split=True``): fewer than half of SPLIT_FILL per compute unit (a deep GEMM on a
    few work-groups runs its K loop's latency: EfficientNet-B0's squeeze-excitation 1 x 1
    convs at batch 128, 6-24 tiles of depth up to 1152, ~90 us each on the H200)."""
    return dev.kind == "gpu" and 2 * tiles < SPLIT_FILL * _units(dev)


def _pointwise_wgrad(p: Problem, plan: Plan, x, g4, gw, gb):
    """gw[g] (O, C) = sum over n of g[n, g] (O, P) @ x[n, g]^T (P, C): on CPUs one pw_gemm
    launch whose depth runs over (n, p); elsewhere per sample into split partial sums
    (split = N), summed by wgrad_reduce. The bias gradient as a sum over (N, H, W). A
    stride reads x subsampled (_pw_dense); x or g whose pixels do not merge are copied."""
    dev = x._storage.device
    if gb is not None:
        rd.sum_into(gb, g4, (0, 2, 3))
    p, x = _merged_x(_pw_dense(p), x)
    if _pixels(v5(g4, p.g), p.oh, p.ow) is None:
        gc = empty(tuple(g4.shape), g4.dtype, dev)
        copy_raw(gc, g4)
        g4 = gc
    if dev.kind == "cpu" and PW_CPU:
        gp = p._replace(y=v5(g4, p.g), k=(gw._offset, gw._strides[0] * p.o) + gw._strides)
        plan = _pw_wgrad_plan(gp, x.dtype, dev)
        if plan[0] == "dot":
            _pw_dot(dev, plan, gw, g4, x)
        elif plan[0] == "xt":
            _, kernel, gsize, targs, gplan = plan
            xt = empty((p.g * p.n * p.h * p.w * p.c,), x.dtype, dev)
            dev.launch(kernel, gsize, (1, 1, 1), *targs[:3], x._storage.buffer, *targs[3:],
                       xt._storage.buffer)
            _pw_launch(dev, gplan, gw, g4, xt, None)
        else:
            _pw_launch(dev, plan, gw, g4, x, None)
    elif p.oh * p.ow == 1:  # 1 x 1 maps: gw[g] (O, C) = g[g]^T (O, N) @ x[g] (N, C), depth N
        gv = v5(g4, p.g)
        so, sc = gw._strides[:2]
        gemm(raw(gw, (p.g, p.o, p.c), (so * p.o, so, sc), gw._offset),
             raw(g4, (p.g, p.o, p.n), (gv[2], gv[3], gv[1]), gv[0]),
             raw(x, (p.g, p.n, p.c), (p.x[2], p.x[1], p.x[3]), p.x[0]), split=False)
    else:
        gv = v5(g4, p.g)
        xv, gov = _pointwise_operands(p._replace(y=gv), x, g4)
        ws = _workspace(p, p.n, x.dtype, dev)
        c1 = p.c + 1
        wsv = raw(ws, (p.n, p.g, p.o, p.c), (p.g * p.o * c1, p.o * c1, c1, 1), 0)
        xt = raw(xv, (p.n, p.g, xv.shape[3], p.c), xv._strides[:2] + xv._strides[:1:-1])
        gemm(wsv, gov, xt, split=False)
        _reduce(p, Tiles(split=p.n), ws, gw, None)


# pw_gemm (kernels/conv_pw_cpu.cl): register tiles of MR rows x NV vectors by float lanes: 6 x 4
# vectors on AVX-512 (24 of the 32 vector registers), GEMM_CPU's 6 x 2 on AVX2; KC deep B
# panels (KC x NR in L1), at most PW_ROWS rows per work item. Xeon, 1 thread, batch 8, the
# forward of the zoo's 1x1 layers, alternated in one process (12 x 2 / 6 x 4 / 4 x 4 ms):
# Intel 58-58 16x16 0.35 / 0.25 / 0.24, 320-1280 4x4 1.43 / 1.20 / 1.42; PoCL 0.50 / 0.39 /
# 0.28, 3.9 / 1.4 / 1.5, 96-24 32x32 3.1 / 1.1 / 1.1 (12 x 2 is GEMM_CPU's AVX-512 tile; why
# it runs so much slower on PoCL was not profiled).
PW_TILES = {16: (6, 4), 8: (6, 2)}
PW_CPU = True  # False: CPUs run the batched gemm too (bench/pointwise.py's "before" peer)
PW_LANES = None  # float lanes of pw_gemm; None: the device's (tests force 8)
PW_KC = 256
PW_ROWS = 192
# pw_wgrad: RO x RC vector accumulators by float lanes (24 of 32 registers on AVX-512, 12 of
# 16 on AVX2); used from PW_DOT_MIN pixels (n * h * w) on (each accumulator's lanes are summed
# once at the end: not worth it for a few vectors per accumulator; the value was not swept)
PW_DOT_TILES = {16: (4, 6), 8: (3, 4)}
# Maps of at most PW_XT_PIXELS pixels (8 x 8 and smaller; PW_DOT_MIN pixels in all) run the
# weight gradient as pw_transpose (x to (g, n, p, c), TP pixels per work item) then pw_gemm
# with whole vectors along c (B_VEC) and PW_XT_KC deep panels (64 columns of 16 floats:
# 32 KB, in L1): pw_wgrad's work items there run 4 vectors a sample between their pointer
# updates and lane sums. Xeon, 1 thread, batch 8, forward + weight gradient alternated in one
# process, per-kernel sums, best of 11 (pw_wgrad / transpose + pw_gemm at KC 128 / 256, ms):
# 512-1024 8x8 10.1 / 8.4 / 8.5; 512-256 16x16 9.6 / 9.8 / 9.6; 128-256 32x32 15.6 / 14.8 /
# 15.3; 256-256 32x32 22.7 / 23.7 / 21.5 (the transpose costs there what the GEMM saves)
PW_XT_PIXELS = 64
PW_XT_KC = 128
PW_TP = 64
PW_DOT_MIN = 512
# bytes of output-gradient and input rows (n * p * (O + C)) per pw_wgrad sample chunk: larger
# batches are split into chunks whose partial sums are then added (reduce.sum_into), so that a
# chunk's rows stay in cache while every tile of the layer reads them. Xeon, 1 thread, batch 128
# (chunks of 1 MB / 4 MB / none): 96-24 32x32 22 / 20 / 35 ms, 64-384 8x8 6 / 10 / 12 ms; at
# batch 8 chunks of 1 MB were slower than none (the extra launch, smaller work items)
PW_DOT_CHUNK = 4 << 20


def _pw_split(n, q, hi, lo):
    """(Q, hi, lo) of an index over (n, q) (strides hi, lo) for pw_gemm: one dim where they
    merge (q == 1: the index is n, stride hi; n == 1: q)."""
    if q == 1:
        return n, hi, hi
    if n == 1:
        return q, 0, lo
    return q, hi, lo


def _pw_plan(dev, dt, mjkg, ksplit, nsplit, a, b, c, bias_arg, kc=None):
    """(kernel, global size, by-value arguments) of a pw_gemm C[g] (M, J) = A[g] (M, K) @
    B[g] (K, J) + bias: mjkg (M, J, K, G); ksplit (KQ, a_khi, a_klo, b_khi, b_klo) and nsplit
    (NQ, b_nhi, b_nlo, c_nhi, c_nlo) (see the kernel file); a and c (offset, group stride,
    row stride), b (offset, group stride); bias_arg (offset, stride) or None; kc: the depth
    of a B panel (PW_KC by default)."""
    m, j, k, g = mjkg
    lanes = PW_LANES or (16 if dev.vector_width >= 16 else 8)
    mr, nv = PW_TILES[lanes]
    vw = lanes // 2 if dt.itemsize == 8 else lanes
    nr = nv * vw
    d = dict(defines_for(dt), MR=mr, NV=nv, VW=vw, KC=kc or PW_KC)
    nq, b_nlo, c_nlo = nsplit[0], nsplit[2], nsplit[4]
    whole = nq >= j or nq % vw == 0  # vw columns from a multiple of vw lie in one q
    if whole and b_nlo == 1:
        d["B_VEC"] = 1
    elif ksplit[4] == 1:
        d["B_KIN"] = 1
    if whole and c_nlo == 1:
        d["C_VEC"] = 1
    if bias_arg is not None:
        d["HAS_BIAS"] = 1
    mt = min(cdiv(m, mr), max(1, PW_ROWS // mr))
    while mt > 1 and cdiv(j, nr) * cdiv(m, mr * mt) * g < FILL_GROUPS * _units(dev):
        mt = cdiv(mt, 2)
    kq, a_khi, a_klo, b_khi, b_klo = ksplit
    _, b_nhi, _, c_nhi, _ = nsplit
    args = tuple(map(np.int64, (m, j, k, mt, kq, nq, *c, c_nhi, c_nlo, *a, a_khi, a_klo, *b,
                                b_khi, b_klo, b_nhi, b_nlo, *(bias_arg or (0, 0)))))
    kernel = dev.kernel("conv_pw_cpu.cl", "pw_gemm", d)
    return kernel, (cdiv(j, nr), cdiv(m, mr * mt), g), args


def _pw_launch(dev, plan, c, a, b, bias):
    """Run a _pw_plan with C = c, A = a, B = b (tensors whose storage the plan indexes)."""
    kernel, gsize, args = plan
    if 0 in gsize:
        return
    dev.launch(kernel, gsize, (1, 1, 1), *args[:6], c._storage.buffer, *args[6:11],
               a._storage.buffer, *args[11:16], b._storage.buffer, *args[16:22],
               (bias if bias is not None else c)._storage.buffer, *args[22:])


def _pw_dot(dev, plan, gw, g4, x):
    """Run a pw_wgrad plan: into gw, or per sample chunk into a workspace summed into gw."""
    _, kernel, gsize, head, wargs, tail, chunks = plan
    if 0 in gsize:
        return
    if chunks == 1:
        dev.launch(kernel, gsize, (1, 1, 1), *head, gw._storage.buffer, *wargs,
                   g4._storage.buffer, *tail[:4], x._storage.buffer, *tail[4:])
        return
    o, c, g = int(head[0]), int(head[1]), int(head[4])
    ws = empty((chunks, g, o, c), gw.dtype, dev)
    dev.launch(kernel, gsize, (1, 1, 1), *head, ws._storage.buffer,
               *map(np.int64, (0, o * c, c, 1, g * o * c)), g4._storage.buffer, *tail[:4],
               x._storage.buffer, *tail[4:])
    w_off, w_g, w_o, w_c = (int(v) for v in wargs[:4])  # gw's memory as (G, O, C)
    rd.sum_into(Tensor(gw._storage, (g, o, c), (w_g, w_o, w_c), w_off), ws, 0)


def _pw_fwd_plan(p: Problem, dt, dev, has_bias):
    """The forward problem's pw_gemm: y (O, (n, p)) = K (O, C) @ x (C, (n, p))."""
    key = plan_key("pw_fwd", (), (p, dt, has_bias, PW_LANES))  # (ops/plan.py: + settings)
    plan = dev.plans.get(key)
    if plan is None:
        hw = p.h * p.w
        q, b_nhi, b_nlo = _pw_split(p.n, hw, p.x[1], _pixels(p.x, p.h, p.w))
        _, c_nhi, c_nlo = _pw_split(p.n, hw, p.y[1], _pixels(p.y, p.oh, p.ow))
        plan = dev.keep_plan(key, _pw_plan(
            dev, dt, (p.o, p.n * hw, p.c, p.g), (max(p.c, 1), 0, p.k[3], 0, p.x[3]),
            (q, b_nhi, b_nlo, c_nhi, c_nlo), p.k[:3], (p.x[0], p.x[2]), (p.y[0],) + p.y[2:4],
            (p.boff, p.bs) if has_bias else None))
    return plan


def _pw_wgrad_plan(p: Problem, dt, dev):
    """The weight gradient's launch: gw (O, C) = g (O, (n, p)) @ x^T ((n, p), C), as pw_wgrad
    (dot products along the pixels) where the pixels are contiguous vectors in x and g and
    there are at least PW_DOT_MIN of them (n * p), else as pw_gemm. p's y is the output
    gradient's view, its k the weight gradient's."""
    key = plan_key("pw_wgrad", (), (p, dt, PW_LANES, PW_DOT_MIN, PW_DOT_CHUNK, PW_XT_PIXELS,
                                    PW_XT_KC, PW_TP))
    plan = dev.plans.get(key)
    if plan is None:
        hw = p.h * p.w
        lanes = PW_LANES or (16 if dev.vector_width >= 16 else 8)
        vw = lanes // 2 if dt.itemsize == 8 else lanes
        dense = _pixels(p.x, p.h, p.w) == 1 and _pixels(p.y, p.oh, p.ow) == 1
        if dense and hw <= PW_XT_PIXELS and p.n * hw >= PW_DOT_MIN:
            i64 = np.int64
            kernel = dev.kernel("conv_pw_cpu.cl", "pw_transpose", dict(defines_for(dt),
                                                                       TP=PW_TP))
            gplan = _pw_plan(dev, dt, (p.o, p.c, p.n * hw, p.g),
                             (hw, p.y[1], 1, hw * p.c, p.c), (max(p.c, 1), 0, 1, 0, p.k[3]),
                             (p.y[0],) + p.y[2:4], (0, p.n * hw * p.c), p.k[:3], None,
                             kc=PW_XT_KC)
            return dev.keep_plan(key, (
                "xt", kernel, (cdiv(hw, PW_TP), cdiv(p.c, 8), p.g * p.n),
                tuple(map(i64, (p.c, hw, p.n, p.x[0], p.x[2], p.x[1], p.x[3]))), gplan))
        if dense and hw % vw == 0 and p.n * hw >= PW_DOT_MIN:
            ro, rc = PW_DOT_TILES[lanes]
            ns = max(1, min(p.n, PW_DOT_CHUNK // max(1, hw * (p.o + p.c) * dt.itemsize)))
            chunks = cdiv(p.n, ns)
            i64 = np.int64
            kernel = dev.kernel("conv_pw_cpu.cl", "pw_wgrad",
                                dict(defines_for(dt), VW=vw, RO=ro, RC=rc))
            return dev.keep_plan(key, (
                "dot", kernel, (cdiv(p.o, ro), cdiv(p.c, rc), p.g * chunks),
                tuple(map(i64, (p.o, p.c, p.n, hw, p.g, ns))),
                tuple(map(i64, (*p.k[:4], 0))),
                tuple(map(i64, (p.y[0], p.y[2], p.y[1], p.y[3], p.x[0], p.x[2], p.x[1],
                                p.x[3]))), chunks))
        kq, a_khi, a_klo = _pw_split(p.n, hw, p.y[1], _pixels(p.y, p.oh, p.ow))
        _, b_khi, b_klo = _pw_split(p.n, hw, p.x[1], _pixels(p.x, p.h, p.w))
        plan = dev.keep_plan(key, _pw_plan(
            dev, dt, (p.o, p.c, p.n * hw, p.g), (kq, a_khi, a_klo, b_khi, b_klo),
            (max(p.c, 1), 0, p.x[3], 0, p.k[3]), (p.y[0],) + p.y[2:4], (p.x[0], p.x[2]),
            p.k[:3], None))
    return plan


# -- blocked over output channels (kernels/conv_blocked_cpu.cl) ------------------------------------
BLOCK_LANES = None  # lanes per vector of the blocked kernels; None: the device's (tests force it)
# (MB vectors per block, PX pixels per forward work-group, TK taps per weight-gradient one) by
# float lanes: 16 (AVX-512: 32 vector registers) 2 x 8 accumulators in both kernels, 8 (AVX2:
# 16 vector registers) 2 x 6. The PX pixel offsets (TK tap offsets) live in the 16 general
# registers too: on a Xeon (1 thread, N=8, 3x3, 128-512 channels, 16x16 to 4x4) PX = 12 ran
# the forward at 59-92 GFLOP/s, PX = 8 at 89-131, PX = 10 and MB = 4, PX = 6 in between; the
# weight gradient at TK = 12 or 9 took twice TK = 8's time.
BLOCK_TILES = {16: (2, 8, 8), 8: (2, 6, 6)}
# Grouped convs with few output channels per group (ResNeXt's 8 and 16): BLOCK_FEW takes
# fewer vectors per block where the group has fewer channels than MB vectors (MB = 1 for 16
# of 16 lanes: no empty vector) and more pixels (taps) per work item instead, at most
# BLOCK_FEW_PX; BLOCK_NARROW halves the lanes (8 floats on AVX-512) where a group has at most
# half a vector of them. Xeon, 1 thread, batch 8, 3x3 groups=32, forward + input + weight
# gradient per-kernel sums, alternated (implicit / blocked / FEW / FEW + NARROW, ms): 256
# channels 16x16 12.0 / 19.7 / 16.3 / 13.8, 512 channels 8x8 15.4 / 10.0 / 7.5 / 7.0 ('auto'
# measures implicit against blocked per problem)
BLOCK_NARROW = True
BLOCK_FEW = True
BLOCK_FEW_PX = 16
# vector FMAs a forward work-group aims at, in tiles of PX pixels (at least one tile): the
# input-gradient phases of a stride-2 layer have 1-4 taps per channel (64-128 32x32 s2: 4 x 1
# to 4 x 4 tiles' worth of FMAs per work-group at 1 tile)
BLOCK_FWD_FMAS = 1 << 15
BLOCK_WGRAD_FMAS = 1 << 18  # vector FMAs a weight-gradient work-group aims at per chunk
# bytes of packed output gradient a weight-gradient work-group sums over before moving to its
# next tap block (its pixels in chunks: at batch 128 on 16x16 maps the whole 4 MB per block
# was streamed from memory once per tap block)
BLOCK_WGRAD_CHUNK = 128 << 10
_INT_MAX = (1 << 31) - 1


# Packing the weight (and unpacking its gradient): pack_weight / unpack_wgrad run one item per
# lane (output channel) of a block, which Intel's compiler vectorises across items; on PoCL,
# whose compiler does not, and for the input gradient's transposed view (a block's lanes 9
# floats apart) pack_weight_t / unpack_wgrad_t run one item per chunk of BLOCK_PACK_TAPS
# taps. Xeon, 1 thread, 512-512 4x4 (9.4 MB of weight): PoCL forward pack 9.8 -> 6.3 ms,
# 256-512 0.59 against 2.3 ms; Intel's transposed view 6.7 -> 4.3 ms (forward: 1.45 against
# 1.8 ms for the per-lane kernel, kept).
BLOCK_PACK_ELEMS = 4096  # weight elements per pack_weight_t / unpack_wgrad_t item (16 KB)
BLOCK_PACK_BY_TAPS = None  # force the per-tap kernels (True) or the per-lane ones (False)


# blocked_fwd_fused: the forward pass of a layer whose packed weight takes at least
# BLOCK_FUSE_BYTES (beyond L2) and which has at most BLOCK_FUSE_PIXELS output pixels (n * oh *
# ow: the work per block, one work-group each) packs each block of the weight in the
# work-group that uses it. Xeon, 1 thread, batch 8, Intel's runtime: 512-512 4x4 6.04 -> 5.31
# ms, 256-256 8x8 4.72 -> 4.35, 256-512 8x8 s2 3.16 -> 2.79, 512-512 2x2 2.77 -> 2.59; PoCL
# 5.86 -> 5.64, 4.97 -> 4.71, 2.99 -> 3.02, 2.54 -> 2.45. Not for the input gradient's
# transposed weight view (its lanes 9 floats apart): mixed there (512-512 2x2: 2.87 -> 3.18 ms
# on Intel's runtime, 6.2 -> 3.6 on PoCL).
BLOCK_FUSE = True
BLOCK_FUSE_BYTES = 2 << 20
BLOCK_FUSE_PIXELS = 4096


def _pack_chunk(p: Problem, d):
    """Taps per pack_weight_t / unpack_wgrad_t item, pixels per pack_grad_t item:
    BLOCK_PACK_ELEMS elements (pack_grad_t against the per-pixel kernel it replaced, Xeon,
    batch 8: 64-64 32x32 0.46 -> 0.33 ms, 128-128 16x16 0.29 -> 0.18 ms, Intel's runtime;
    0.48 -> 0.31, 0.25 -> 0.22 on PoCL)."""
    return max(1, BLOCK_PACK_ELEMS // (d["MB"] * d["BW"]))


def _by_taps(dev, lane_stride, c_stride) -> bool:
    """Whether the weight (gradient) view whose output channels lie lane_stride apart and
    input channels c_stride apart is packed (unpacked) per chunk of taps (see above)."""
    if BLOCK_PACK_BY_TAPS is not None:
        return BLOCK_PACK_BY_TAPS
    return "-DLOOP_VECTORIZER=1" in dev.build_options or abs(lane_stride) < abs(c_stride)


def _fuse_pack(p: Problem, d, obm, dt, dev) -> bool:
    """Whether the forward packs the weight inside blocked_fwd_fused (one work-group per
    block: it packs its block, then runs all the pixels over it from cache): for weights of
    at least BLOCK_FUSE_BYTES packed, with blocks enough for the compute units."""
    size = p.g * obm * d["MB"] * d["BW"] * p.c * p.kh * p.kw * dt.itemsize
    return (BLOCK_FUSE and size >= BLOCK_FUSE_BYTES and p.g * obm >= _units(dev)
            and p.n * p.oh * p.ow <= BLOCK_FUSE_PIXELS and abs(p.k[2]) >= abs(p.k[3]))


def _block_lanes(dt, dev):
    """Lanes BW of the blocked kernels: the device's float vector width (8 or 16, or the
    BLOCK_LANES override), halved for float64."""
    lanes = BLOCK_LANES or (16 if dev.vector_width >= 16 else 8)
    return lanes // 2 if dt.itemsize == 8 else lanes


def _block_geometry(p: Problem, dt, dev):
    """(defines, hp, wp, obm): the padded input's rows and columns (exactly what the taps
    read), and the number of output-channel blocks of MB vectors."""
    bw = _block_lanes(dt, dev)
    if BLOCK_NARROW and p.o <= bw // 2 and bw * dt.itemsize > 32:
        bw //= 2  # a grouped conv's few output channels: half vectors, not empty lanes
    mb, px, tk = BLOCK_TILES[bw if dt.itemsize == 4 else bw * 2]
    if BLOCK_FEW and p.o <= (mb - 1) * bw:  # fewer vectors, more pixels and taps
        m1 = max(cdiv(p.o, bw), cdiv(8, bw))  # blocks of at least LG = 8 lanes (the packs)
        px, tk, mb = min(BLOCK_FEW_PX, px * mb // m1), min(BLOCK_FEW_PX, tk * mb // m1), m1
    hp = (p.oh - 1) * p.sh + (p.kh - 1) * p.dh + 1
    wp = (p.ow - 1) * p.sw + (p.kw - 1) * p.dw + 1
    return dict(defines_for(dt), BW=bw, MB=mb, PX=px, TK=tk), hp, wp, cdiv(p.o, mb * bw)


def _plan_blocked(p: Problem, dt, dev):
    """Plan() where the padded input, packed weight and packed output gradient fit the
    workspace limit and 32-bit offsets; else None."""
    d, hp, wp, obm = _block_geometry(p, dt, dev)
    blk = d["MB"] * d["BW"]
    sizes = (p.g * p.n * p.c * hp * wp, p.g * obm * blk * p.c * p.kh * p.kw,
             p.g * obm * blk * p.n * p.oh * p.ow)
    if max(sizes) > _INT_MAX or sum(sizes) * dt.itemsize > backends.conv_workspace_limit:
        return None
    return Plan()


def _pad_input(p: Problem, d, hp, wp, x):
    dev = x._storage.device
    xp = empty((p.g * p.n * p.c * hp * wp,), x.dtype, dev)
    planes = p.g * p.n * p.c
    pc = max(1, min(BLOCK_PACK_ELEMS // (hp * wp), planes // (FILL_GROUPS * _units(dev))))
    dev.launch(dev.kernel("conv_blocked_cpu.cl", "pad_input", d), (cdiv(planes, pc),), (1,),
               p.pack(), np.int64(hp), np.int64(wp), np.int64(pc), x._storage.buffer,
               xp._storage.buffer)
    return xp


def _blocked_fwd(p: Problem, plan: Plan, x, w, y, bias):
    d, hp, wp, obm = _block_geometry(p, x.dtype, x._storage.device)
    _blocked_fwd_padded(p, d, hp, wp, obm, _pad_input(p, d, hp, wp, x), 0, w, y, bias)


def blocked_phases(phases, g4, w, gi4) -> bool:
    """The input-gradient phase problems of a strided layer (conv._phases; those no tap
    reaches left out) with the blocked kernels, all reading one padded copy of the output
    gradient g4 (instead of one per phase); False (nothing run) where a phase cannot run
    blocked."""
    dev, dt = g4._storage.device, g4.dtype
    if any(_plan_blocked(q, dt, dev) is None for q in phases):
        return False
    if not phases:
        return True
    geo = [_block_geometry(q, dt, dev) for q in phases]
    top, left = max(q.ph for q in phases), max(q.pw for q in phases)
    hp = top + max(hq - q.ph for q, (_, hq, _, _) in zip(phases, geo))
    wp = left + max(wq - q.pw for q, (_, _, wq, _) in zip(phases, geo))
    d = geo[0][0]
    xp = _pad_input(phases[0]._replace(ph=top, pw=left), d, hp, wp, g4)
    for q, (_, _, _, obm) in zip(phases, geo):
        _blocked_fwd_padded(q, d, hp, wp, obm, xp, (top - q.ph) * wp + left - q.pw, w, gi4,
                            None)
    return True


def _blocked_fwd_padded(p: Problem, d, hp, wp, obm, xp, xoff, w, y, bias):
    """The forward over xp + xoff, p's input padded to rows of wp (hp rows per plane)."""
    dev, dt = w._storage.device, w.dtype
    kall = p.c * p.kh * p.kw
    wb = empty((p.g * obm * d["MB"] * d["BW"] * kall,), dt, dev)
    if xoff == 0 and _fuse_pack(p, d, obm, dt, dev):
        koffs = empty((p.g * obm * kall,), dtypes.int32, dev)
        dev.launch(dev.kernel("conv_blocked_cpu.cl", "blocked_fwd_fused", d), (1, obm, p.g),
                   (1, 1, 1), p.pack(), np.int64(hp), np.int64(wp), np.int64(obm),
                   w._storage.buffer, wb._storage.buffer, koffs._storage.buffer,
                   xp._storage.buffer, y._storage.buffer, _bias_buffer(bias, y))
        return
    koff = empty((kall,), dtypes.int32, dev)
    if _by_taps(dev, p.k[2], p.k[3]):
        kc = _pack_chunk(p, d)
        dev.launch(dev.kernel("conv_blocked_cpu.cl", "pack_weight_t", d),
                   (cdiv(p.c * p.kh * p.kw, kc), p.g * obm), (1, 1), p.pack(), np.int64(obm),
                   np.int64(hp), np.int64(wp), np.int64(kc), w._storage.buffer,
                   wb._storage.buffer,
                   koff._storage.buffer)
    else:
        dev.launch(dev.kernel("conv_blocked_cpu.cl", "pack_weight", d),
                   (d["MB"] * d["BW"], p.g * obm), None, p.pack(), np.int64(obm),
                   np.int64(hp), np.int64(wp), w._storage.buffer, wb._storage.buffer,
                   koff._storage.buffer)
    tiles = cdiv(p.n * p.oh * p.ow, d["PX"])
    tpw = max(1, min(BLOCK_FWD_FMAS // (d["MB"] * d["PX"] * p.c * p.kh * p.kw),
                     tiles * obm * p.g // (FILL_GROUPS * _units(dev))))
    dev.launch(dev.kernel("conv_blocked_cpu.cl", "blocked_fwd", d),
               (cdiv(tiles, tpw), obm, p.g), (1, 1, 1), p.pack(),
               np.int64(hp), np.int64(wp), np.int64(obm), np.int64(tpw), np.int64(xoff),
               xp._storage.buffer,
               wb._storage.buffer, koff._storage.buffer, y._storage.buffer,
               _bias_buffer(bias, y))


def _blocked_wgrad(p: Problem, plan: Plan, x, g4, gw, gb):
    dev, dt = x._storage.device, x.dtype
    d, hp, wp, obm = _block_geometry(p, dt, dev)
    xp = _pad_input(p, d, hp, wp, x)
    gt = empty((p.g * obm * d["MB"] * d["BW"] * p.n * p.oh * p.ow,), dt, dev)
    qoff = empty((p.n * p.oh * p.ow,), dtypes.int32, dev)
    qc = _pack_chunk(p, d)
    dev.launch(dev.kernel("conv_blocked_cpu.cl", "pack_grad_t", d),
               (cdiv(p.n * p.oh * p.ow, qc), p.g * obm), (1, 1), p.pack(), np.int64(obm),
               np.int64(hp), np.int64(wp), np.int64(qc), pack(v5(g4, p.g), longs(V5_T)),
               g4._storage.buffer, gt._storage.buffer, qoff._storage.buffer)
    so, sc, skh, skw = gw._strides
    gv = pack((gw._offset, so * p.o, so, sc, skh, skw), longs(V5_T))
    nkb = cdiv(p.c * p.kh * p.kw, d["TK"])
    wt = empty((p.g * obm * d["MB"] * d["BW"] * p.c * p.kh * p.kw,), dt, dev)
    # pixels per chunk, and tap blocks per work-group: about BLOCK_WGRAD_FMAS vector FMAs per
    # chunk (a work-group costs about a microsecond to start on the CPU runtimes; each block
    # reuses the chunk from cache), but enough work-groups for the units
    qc = max(1, BLOCK_WGRAD_CHUNK // (d["MB"] * d["BW"] * dt.itemsize))
    per_block = min(qc, p.n * p.oh * p.ow) * d["MB"] * d["TK"]
    kb = max(1, min(nkb, BLOCK_WGRAD_FMAS // per_block,
                    cdiv(nkb * obm * p.g, FILL_GROUPS * _units(dev))))
    dev.launch(dev.kernel("conv_blocked_cpu.cl", "blocked_wgrad", d),
               (cdiv(nkb, kb), obm, p.g), (1, 1, 1), p.pack(), np.int64(hp), np.int64(wp),
               np.int64(obm), np.int64(kb), np.int64(qc), xp._storage.buffer,
               gt._storage.buffer, qoff._storage.buffer, wt._storage.buffer)
    if _by_taps(dev, gw._strides[0], gw._strides[1]):
        kc = _pack_chunk(p, d)
        dev.launch(dev.kernel("conv_blocked_cpu.cl", "unpack_wgrad_t", d),
                   (cdiv(p.c * p.kh * p.kw, kc), p.g * obm), (1, 1), p.pack(), np.int64(obm),
                   np.int64(kc),
                   wt._storage.buffer, gw._storage.buffer, gv)
    else:
        dev.launch(dev.kernel("conv_blocked_cpu.cl", "unpack_wgrad", d),
                   (d["MB"] * d["BW"], p.g * obm), None,
                   p.pack(), np.int64(obm), wt._storage.buffer, gw._storage.buffer, gv)
    if gb is not None:
        rd.sum_into(gb, g4, (0, 2, 3))


KERNELS = {  # algorithm: ((planner, forward launcher), (planner, weight-gradient launcher))
    "implicit": ((_plan_implicit, _implicit_fwd), (_plan_implicit_wgrad, _implicit_wgrad)),
    "implicit:gpu": ((_no_plan, _gemm_fwd), (_plan_gemm_wgrad, _gemm_wgrad)),
    "depthwise": ((_plan_dw, _dw_fwd), (_plan_dw_wgrad, _dw_wgrad)),
    "direct": ((_no_plan, _direct_fwd), (_plan_direct_wgrad, _direct_wgrad)),
    "pointwise": ((_plan_pointwise, _pointwise_fwd), (_plan_pointwise, _pointwise_wgrad)),
    "blocked": ((_plan_blocked, _blocked_fwd), (_plan_blocked, _blocked_wgrad)),
}
IM2COL = {"forward": _im2col_fwd, "grad_weight": _im2col_wgrad}  # grad_input: im2col_dgrad
