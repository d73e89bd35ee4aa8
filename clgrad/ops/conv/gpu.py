"""GPU convolution algorithms of conv2d (beside clgrad/ops/conv/algorithms.py, whose helpers
they share; clgrad/ops/conv/choice.py merges the KERNELS tables): planners and launchers of
kernels/conv_dw_gpu.cl (``depthwise_gpu``) and kernels/conv_igemm_gpu.cl (``igemm_gpu``), and
``auto``'s choice by measurement on GPUs (``measured``). Every kernel takes the conv_t problem
of kernels/conv.h (buffers + element offsets + strides of the 5-D group views), float32 and
float64 (depthwise_gpu float16 too: halves read, summed in float32, rounded once), and runs
on any OpenCL device (the tests run them on the CPU runtimes); they pay on GPUs (numbers:
bench/README.md, H200 section of issue 15).

depthwise_gpu — few channels per group. Forward (and the input gradient, the forward problem
on the flipped weight view: conv.h): one work item per VY x VX outputs of one (n, g, o) plane,
reading the input through the caches, the taps and an input row segment in registers; kernel
size, stride, dilation and insertion are compile-time constants, so the tap loops unroll.
Weight and bias gradient: a two-stage reduction over N * oH * oW, work-groups of one (g, o)
each summing a split of the output rows in registers and then across their work items in
local memory into a small workspace ws[split][g][o][K+1], which conv_igemm_cpu.cl's ``wgrad_reduce``
sums through the weight's grouped view. ``auto`` takes it on GPUs for few channel pairs per
group (C/G * O/G <= 16). Tiles: ``_CFG`` per device kind, or
``CLGRAD_CONV_DWG="fvx=4,fvy=4,fwg=128,wvx=4,wwg=256,wsplit=1"`` (any subset) to benchmark.

igemm_gpu — implicit GEMM like matmul.cl's GEMM_TILED (register tiles, double-buffered local
memory), one launch over all groups: forward and input gradient (stride > 1: problem.py's
phase problems), and the weight gradient as a split-K GEMM over the pixels with partial sums
for ``wgrad_reduce`` (with one split, written into the gradients directly). The forward's depth
order and weight reads: ``_W_READ`` (taps outer over a tap-major copy of the weight where the
channels are a multiple of the tile depth, else coalesced reads of the weight or of a copy).
Tiles: ``_IGEMM`` by rows per group, or ``CLGRAD_CONV_IGEMM``.
"""
from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pyopencl as cl

from clgrad.kernel_structs import V5_T, longs
from clgrad import backends, capture as _capture, dtypes, settings
from clgrad.ops._util import copy_raw, defines_for, empty
from clgrad.ops.conv.algorithms import (SPLIT_GROUPS, _bias_buffer, _no_plan, _reduce, _units,
                                        _workspace)
from clgrad.ops.conv.problem import Plan, Problem, Tiles, cdiv, raw, v5
from clgrad.runtime import cache_dir, pack

__all__ = ["KERNELS", "few_channels_algorithm", "half_depthwise", "measured",
           "forward_geometry"]

# fvx, fvy, fwg: outputs per work item along W and H, work-group size (forward);
# wvx, wwg: the same for the weight gradient; wsplit: work-groups per (g, o) and per
# (8 x compute units / (g * o)) (the reduction's first-stage split factor).
_CFG = {"gpu": dict(fvx=4, fvy=4, fwg=128, wvx=4, wwg=256, wsplit=1),
        "cpu": dict(fvx=8, fvy=1, fwg=64, wvx=8, wwg=64, wsplit=1)}
if settings.getenv("CLGRAD_CONV_DWG"):
    for _kind in _CFG:
        _CFG[_kind] = dict(_CFG[_kind], **{k: int(v) for k, v in (
            kv.split("=") for kv in settings.getenv("CLGRAD_CONV_DWG").split(","))})

_MAX_TAPS = 64  # c * kh * kw accumulators per work item in the weight gradient


def _cfg(dev) -> dict:
    return _CFG["gpu" if dev.kind == "gpu" else "cpu"]


_INT_LIMIT = (1 << 31) - 1  # offsets below this are computed in 32 bits (I32, P32)


def _extent(v, rows, cols) -> int:
    """Largest |offset| inside one plane of a 5-D view (offset, s0..s4) of rows x cols."""
    return (rows - 1) * abs(v[4]) + (cols - 1) * abs(v[5])


def _defines(p: Problem, dt, views, **extra) -> dict:
    """The kernel's defines: the problem's geometry, unit column strides (XS1, YS1, GS1 for
    the views named in ``views``: x, y, g) and I32 when every plane's offsets fit an int."""
    d = dict(defines_for(dt), KH=p.kh, KW=p.kw, SH=p.sh, SW=p.sw, DH=p.dh, DW=p.dw, UH=p.uh,
             UW=p.uw)
    if dt is dtypes.float16:
        d["IS_HALF"] = 1  # (conv.h: no float vectors)
    ext = [_extent(p.x, p.h, p.w), _extent(p.k, p.kh, p.kw)]
    for name, v in views.items():
        if v[5] == 1:
            d[name.upper() + "S1"] = 1
        ext.append(_extent(v, p.oh, p.ow) if name != "x" else 0)
    if max(ext) < _INT_LIMIT:
        d["I32"] = 1
    d.update(extra)
    return d


def _takes_fwd(p: Problem) -> bool:
    """Whether the forward kernel takes p: few input channels per group."""
    return p.c <= 16


def _takes_wgrad(p: Problem) -> bool:
    """Whether the weight-gradient kernel takes p: at most _MAX_TAPS taps per (g, o)."""
    return p.c * p.kh * p.kw <= _MAX_TAPS and p.uh == p.uw == 1


def _plan_fwd(p: Problem, dt, dev):
    return Plan() if _takes_fwd(p) else None


def _fwd(p: Problem, plan: Plan, x, w, y, bias):
    dev, dt, cfg = x._storage.device, x.dtype, _cfg(x._storage.device)
    vx, vy, wg = cfg["fvx"], cfg["fvy"], cfg["fwg"]
    items = cdiv(p.oh, vy) * cdiv(p.ow, vx)
    d = _defines(p, dt, dict(x=p.x, y=p.y), VX=vx, VY=vy)
    dev.launch(dev.kernel("conv_dw_gpu.cl", "dwg_fwd", d), (items * p.g * p.o, p.n, 1),
               (wg, 1, 1), p.pack(plan.tiles), x._storage.buffer, w._storage.buffer,
               y._storage.buffer, _bias_buffer(bias, y))


def _wgrad_wg(dev) -> int:
    """The weight gradient's work-group size: a power of two (the tree), at most the device's."""
    wg = min(_cfg(dev)["wwg"], dev.max_work_group_size)
    return 1 << (wg.bit_length() - 1)


def _plan_wgrad(p: Problem, dt, dev):
    """The first stage's split of the N * oH rows: wsplit work-groups per (g, o) and per
    (8 x compute units / (g * o)), each covering at least a work-group's worth of rows."""
    if not _takes_wgrad(p):
        return None
    cfg = _cfg(dev)
    per = max(1, _wgrad_wg(dev) // cdiv(p.ow, cfg["wvx"]))  # rows a work-group covers per step
    want = max(1, cfg["wsplit"] * 8 * _units(dev) // (p.g * p.o))
    return Plan(Tiles(split=max(1, min(want, cdiv(p.n * p.oh, per)))))


def _wgrad(p: Problem, plan: Plan, x, g4, gw, gb):
    dev, dt, t = x._storage.device, x.dtype, plan.tiles
    vx, wg, gv = _cfg(dev)["wvx"], _wgrad_wg(dev), v5(g4, p.g)
    ws = _workspace(p, t.split, dtypes.float32 if dt is dtypes.float16 else dt, dev)  # (sums)
    dev.launch(dev.kernel("conv_dw_gpu.cl", "dwg_wgrad",
                          _defines(p, dt, dict(x=p.x, g=gv), VX=vx, VY=1, CG=p.c, WG=wg)),
               (wg, p.g * p.o, t.split), (wg, 1, 1), p.pack(t), x._storage.buffer,
               g4._storage.buffer, pack(gv, longs(V5_T)), ws._storage.buffer,
               cl.LocalMemory(wg * ws.dtype.itemsize))
    _reduce(p, t, ws, gw, gb)


# -- implicit GEMM (kernels/conv_igemm_gpu.cl) ------------------------------------------------
# Tiles by the rows (output channels per group) they cover: wide for more than 64, mid for
# 49..64, narrow for at most 48; the weight gradient's wide tiles are wgrad. Measured on an
# H200 (bench/results/gpu/conv_passes_S2.jsonl, AlexNet conv2 at N=128): forward (o = 128)
# 128x128x8 2.09 ms against 2.23 with depth 16; input gradient (o = 48) 48x64x12 2.85 ms
# against 3.07 for 64x128x16 and 4.93 for 128x128x8; weight gradient (o = 128) 128x128x16
# 2.66 ms against 2.90 with depth 8. CLGRAD_CONV_IGEMM="TSM,TSN,TSK,WPTM,WPTN" replaces all,
# "wide:...;narrow:..." the ones named (benchmarking).
_IGEMM = {"wide": dict(TSM=128, TSN=128, TSK=8, WPTM=8, WPTN=8),
          "mid": dict(TSM=64, TSN=128, TSK=16, WPTM=4, WPTN=8),
          "narrow": dict(TSM=48, TSN=64, TSK=12, WPTM=4, WPTN=4),
          "wgrad": dict(TSM=128, TSN=128, TSK=16, WPTM=8, WPTN=8)}
for _part in filter(None, settings.getenv("CLGRAD_CONV_IGEMM").split(";")):
    _name, _, _vals = _part.rpartition(":")
    for _kind in [_name] if _name else list(_IGEMM):
        _IGEMM[_kind] = dict(zip(("TSM", "TSN", "TSK", "WPTM", "WPTN"),
                                 map(int, _vals.split(","))))
_SPLIT_PIXELS = 512  # the fewest pixels a split of the weight gradient sums


def _igemm_tile(p: Problem, wgrad=False) -> dict:
    o = p.o
    return _IGEMM[("wgrad" if wgrad else "wide") if o > 64 else "mid" if o > 48 else "narrow"]


def _igemm_defines(p: Problem, dt, t, ext) -> dict:
    """The kernel defines for tile t; ext: the largest in-slab offsets."""
    d = _defines(p, dt, {"x": p.x}, **t)
    if max(ext) >= _INT_LIMIT:
        d.pop("I32", None)
    if p.n * p.oh * p.ow + t["TSN"] < _INT_LIMIT:
        d["P32"] = 1
    return d


# How igemm_gpu_fwd orders and reads its depth (kernels/conv_igemm_gpu.cl). "auto": the
# weight copied (one small extra launch per call: weights are small, ResNet-18's largest is
# 9.4 MB; always, so the launch count does not depend on the problem) into the layout read
# best, along its rows (W_FLAT, coalesced, stored to local memory without conflicts): where
# the input channels are a multiple of the tile depth (every ResNet/VGG layer but the first)
# [g][kh][kw][c][rows] with taps outer and channels inner (TAPS_OUTER: a tile lies in one tap,
# so the window's bounds check and row offset are per tile, not per element), else
# [g][c*kh*kw][rows] (channels outer, taps inner: k = c*kh*kw + i*kw + j). "cmajor": channels
# outer and no copy where the view allows: a weight whose taps are contiguous per output
# channel (a plain forward weight) read along the taps (W_KC), one whose taps flatten with
# unit row stride along the rows (W_FLAT), any other view (the input gradient's flipped,
# transposed weight, whose rows are KH*KW apart and whose taps run backwards in runs of KH*KW
# only; its stride phases) copied as in "auto". "copy": channels outer, every weight copied;
# "view": read through the view, (c, kh, kw) decoded per element (the kernel before W_KC).
# Benchmarks (bench/gpu/conv_passes.py --case R18) and tests set the others.
_W_READ = "auto"


def _flat_unit(p: Problem):
    """The stride u at which the weight view's taps flatten (tap k = c*kh*kw + i*kw + j at
    k*u from its row), or None."""
    s2, s3, s4 = p.k[3:]
    u = s4 if p.kw > 1 else s3 if p.kh > 1 else s2 if p.c > 1 else 1
    if (p.kh == 1 or s3 == p.kw * u) and (p.c == 1 or s2 == p.kh * p.kw * u):
        return u
    return None


def _igemm_weight(p: Problem, w, tsk: int):
    """(problem, weight tensor, defines, weight extent) of igemm_gpu_fwd's depth order and
    weight reads (see _W_READ) for tiles of depth tsk; the extent bounds |offsets| in one
    group of the weight (I32)."""
    kall, shape = p.c * p.kh * p.kw, (p.g, p.o, p.c, p.kh, p.kw)
    if _W_READ == "view":
        kv = p.k
        return p, w, {}, (p.o - 1) * abs(kv[2]) + (p.c - 1) * abs(kv[3]) + _extent(
            kv, p.kh, p.kw)
    if _W_READ == "auto" and p.c % tsk == 0:
        kv = (0, kall * p.o, 1, p.o, p.kw * p.c * p.o, p.c * p.o)  # [g][kh][kw][c][rows]
        d = {"TAPS_OUTER": 1, "W_FLAT": 1}
    else:
        u = _flat_unit(p) if _W_READ == "cmajor" else None
        if u is not None and (u == 1 or p.k[2] == 1 or p.o == 1):
            kv = p.k[:5] + (u,)
            return p._replace(k=kv), w, {"W_KC": 1} if u == 1 else {"W_FLAT": 1}, (
                (p.o - 1) * abs(kv[2]) + (kall - 1) * abs(u))
        kv = (0, kall * p.o, 1, p.kh * p.kw * p.o, p.kw * p.o, p.o)  # [g][taps][rows]
        d = {"W_FLAT": 1}
    buf = empty((p.g, kall, p.o), w.dtype, w._storage.device)
    copy_raw(raw(buf, shape, kv[1:], 0), raw(w, shape, p.k[1:], p.k[0]))
    return p._replace(k=kv), buf, d, kall * p.o


def _igemm_fwd(p: Problem, plan: Plan, x, w, y, bias):
    dev, dt, xv, t = x._storage.device, x.dtype, p.x, _igemm_tile(p)
    p, w, wd, wext = _igemm_weight(p, w, t["TSK"])
    d = _igemm_defines(p, dt, t, [(p.c - 1) * abs(xv[3]) + _extent(xv, p.h, p.w), wext])
    d.update(wd)
    rtsm, rtsn = t["TSM"] // t["WPTM"], t["TSN"] // t["WPTN"]
    dev.launch(dev.kernel("conv_igemm_gpu.cl", "igemm_gpu_fwd", d),
               (cdiv(p.n * p.oh * p.ow, t["TSN"]) * rtsn, cdiv(p.o, t["TSM"]) * rtsm, p.g),
               (rtsn, rtsm, 1), p.pack(plan.tiles), x._storage.buffer, w._storage.buffer,
               y._storage.buffer, _bias_buffer(bias, y))


def _plan_igemm_wgrad(p: Problem, dt, dev):
    """Split-K over the N * oH * oW pixels: enough work-groups for SPLIT_GROUPS per compute
    unit, each split summing at least _SPLIT_PIXELS pixels."""
    t = _igemm_tile(p, wgrad=True)
    wgs = cdiv(p.c * p.kh * p.kw + 1, t["TSN"]) * cdiv(p.o, t["TSM"]) * p.g
    split = min(cdiv(SPLIT_GROUPS * _units(dev), wgs), p.n * p.oh * p.ow // _SPLIT_PIXELS)
    return Plan(Tiles(split=max(1, split)))


def _igemm_wgrad(p: Problem, plan: Plan, x, g4, gw, gb):
    """The weight gradient; with one split written into gw and gb directly (WG_DIRECT), else
    split partial sums in a workspace that _reduce sums."""
    dev, dt, xv, gv, t = x._storage.device, x.dtype, p.x, v5(g4, p.g), _igemm_tile(p, wgrad=True)
    d = _igemm_defines(p, dt, t, [(p.c - 1) * abs(xv[3]) + _extent(xv, p.h, p.w),
                                  (p.o - 1) * abs(gv[3]) + _extent(gv, p.oh, p.ow)])
    rtsm, rtsn = t["TSM"] // t["WPTM"], t["TSN"] // t["WPTN"]
    kall, split = p.c * p.kh * p.kw, plan.tiles.split
    so, sc, skh, skw = gw._strides
    gwv = (gw._offset, so * p.o, so, sc, skh, skw)
    if split == 1:
        d["WG_DIRECT"] = 1
        ws = gw
    else:
        ws = _workspace(p, split, dt, dev)
    dev.launch(dev.kernel("conv_igemm_gpu.cl", "igemm_gpu_wgrad", d),
               (cdiv(kall + 1, t["TSN"]) * rtsn, cdiv(p.o, t["TSM"]) * rtsm, p.g * split),
               (rtsn, rtsm, 1), p.pack(plan.tiles), x._storage.buffer, g4._storage.buffer,
               pack(gv, longs(V5_T)), ws._storage.buffer, gw._storage.buffer,
               pack(gwv, longs(V5_T)), (gb if gb is not None else gw)._storage.buffer,
               np.int64(gb._offset if gb is not None else 0),
               np.int64(gb._strides[0] if gb is not None else 0), np.int32(gb is not None))
    if split > 1:
        _reduce(p, plan.tiles, ws, gw, gb)


KERNELS = {"depthwise_gpu": ((_plan_fwd, _fwd), (_plan_wgrad, _wgrad)),
           "igemm_gpu": ((_no_plan, _igemm_fwd), (_plan_igemm_wgrad, _igemm_wgrad))}


HALF_DEPTHWISE = True  # False: float16 depthwise layers on GPUs take the float32 route (benches)


def half_depthwise(dev, weight) -> bool:
    """Whether a float16 conv2d of few channel pairs per group with ``weight`` (O, C/G, kH,
    kW) runs depthwise_gpu's kernels on float16 operands (op.half_via_float32's "float16"
    route; choice._choose then picks depthwise_gpu for every pass): on GPUs, under
    conv_algorithm 'auto', where the weight gradient's kernel takes the taps (C/G * kH * kW
    at most _MAX_TAPS; the forward's and the input gradient's take any few-pairs problem)."""
    _, c, kh, kw = weight.shape
    return (HALF_DEPTHWISE and dev.kind == "gpu" and backends.conv_algorithm == "auto" and
            c * kh * kw <= _MAX_TAPS)


def few_channels_algorithm(pass_name: str, p: Problem, dev) -> str:
    """The algorithm ``auto`` runs on a GPU for few channel pairs per group: depthwise_gpu
    where its kernels take the problem, else direct (one work item per output)."""
    takes = _takes_wgrad if pass_name == "grad_weight" else _takes_fwd
    return "depthwise_gpu" if takes(p) else "direct"


# -- auto by measurement ----------------------------------------------------------------------
# GPUs, problems of at least _TUNE_MIN_MACS multiply-adds (2^20; 2^24 before: AlexNet's
# convolutions at batch 1 are 75-224 M; below 2^28 the shape rule's implicit GEMM ran them on
# 18-96 of the H200's work-group slots, 2.4 ms of a 3.3 ms inference; and EfficientNet-B0's
# squeeze-excitation 1 x 1 convs on 1 x 1 maps at batch 128, 2-15 M each, went to that rule's
# implicit kernel at ~90 us a launch: 6 ms of a 27 ms step's kernels): the first time a (device +
# driver, pass, dtype, problem) is seen, every candidate algorithm runs it on scratch operands
# of the same shapes (choice._trial: filled with 0.5, not zeros), the fastest is stored in
# <cache_dir>/conv_algos.json and used from then on. CLGRAD_CONV_TUNE=off: never measure (the
# shape rules of conv._auto decide); =on: measure on any device (the tests use it on CPUs).
# The Winograd variants (clgrad/ops/conv/winograd.py: 3 x 3, stride 1, dilation 1) run only
# the problems they take, in every pass; a trial skips the candidates whose planner refuses
# the problem. A key holds its pass's candidates: a change measures again.
# 'pointwise' (1 x 1 without padding: one batched gemm of the tuned GEMM_TILED kernel; its
# planner refuses other problems) joined when the zoo's kernel profile at batch 128 had the
# 1 x 1 layers on the older implicit kernel at ~1.4 TFLOP/s (DenseNet-BC: 8.6 ms of a 34 ms
# step's kernels, bench/gpu/kernel_profile.py).
CANDIDATES = {"forward": ("igemm_gpu", "im2col", "implicit", "pointwise", "winograd:2",
                          "winograd:4"),
              "grad_input": ("igemm_gpu", "im2col", "implicit", "pointwise", "winograd:2",
                             "winograd:4"),
              "grad_weight": ("igemm_gpu", "im2col", "implicit", "pointwise", "winograd:2",
                              "winograd:4")}
_TUNE_MIN_MACS = 1 << 20
# CPUs (conv._auto): the implicit GEMM against the kernels blocked over output channels
# (kernels/conv_blocked_cpu.cl), measured from CPU_TUNE_MIN_MACS multiply-adds (a 3 x 3 conv
# of 512 channels on 2 x 2 maps at batch 8 has 2^26; one trial of it takes milliseconds), any
# pass and stride. Measured on a Xeon (AVX-512), batch 8: blocked runs ResNet-18's and
# VGG-11's 3 x 3 convs on 16 x 16 maps and below 1.5-4x faster (bench/conv_layers.py).
CPU_CANDIDATES = ("implicit", "blocked")
CPU_TUNE_MIN_MACS = 1 << 22
# kept in the CPU measurements' keys (measured's tag): raised where a candidate's kernels
# change (choices measured on older kernels are measured again); 2: blocked's tiles for few
# channels a group. float16 conv2d's route (im2col's float16 GEMMs or float32's kernels on
# float32 copies) is measured through here too, on tensor cores: op.py half_via_float32.
CPU_TUNE_VERSION = 2
_TUNED: dict = {}  # file contents, loaded once
# Held while a measurement looks up, runs its trials and stores. Reentrant: a trial may run
# ops that measure their own choices in the same thread (conv2d's float16 route, op.py
# half_via_float32: its float32 route's conv2d measures the float32 algorithms of each pass
# during its warm-up run), which then store their entries first; another thread waits.
_LOCK = threading.RLock()


def tune_file():
    """The JSON file of measured conv choices (per device, driver and problem class), in
    clgrad's cache folder (clgrad.runtime.cache_dir)."""
    return cache_dir() / "conv_algos.json"


def forward_geometry(pass_name: str, p: Problem) -> Problem:
    """The forward problem's geometry (views unset) of a pass's problem p: p itself but for
    grad_input, whose problem (problem._grad_input_problem) swaps input and output."""
    if pass_name != "grad_input":
        return Problem(*p[:16])
    return Problem(n=p.n, g=p.g, c=p.o, h=p.oh, w=p.ow, o=p.c, oh=p.h, ow=p.w, kh=p.kh,
                   kw=p.kw, sh=p.uh, sw=p.uw, dh=p.dh, dw=p.dw, ph=(p.kh - 1) * p.dh - p.ph,
                   pw=(p.kw - 1) * p.dw - p.pw)


def choice_epoch() -> tuple:
    """What choice.py's cached choices depend on besides the problem, clgrad.backends and the
    settings (CLGRAD_CONV_TUNE, the vector width, CL_CONFIG_CPU_TARGET_ARCH: counted by
    ``settings.epoch()``, which plan.key holds): the measured table (its identity and size: a
    new measurement, a clear or a replacement change it)."""
    return id(_TUNED), len(_TUNED)


# On GPUs each timing of a candidate is BURST back-to-back runs: in a step the queue overlaps
# a pass's host time (its launches and allocations) with the kernels before it, so a lone run
# between two synchronisations charges a pass of several launches its host time too (H100,
# batch 128, ResNet-18's 256-channel 8 x 8 layer in float16: 'auto' measured im2col faster and
# ran it, forward + backward 0.457 ms, where igemm_mma's step takes 0.326; bench/README.md,
# 2026-12-06e). Measurements keyed " b<BURST>" (older lone-run entries measure again).
BURST = 4


def _key(dev, pass_name, geo: Problem, dtype, candidates) -> str:
    """The measurement's key in the table: device, pass, dtype, geometry and the candidates
    measured (a changed list measures again; callers' own candidates add their tag)."""
    return (f"{settings.device_key(dev)} | {pass_name} {dtype.name} " + " ".join(
        f"{k}={v}" for k, v in zip(geo._fields[:16], geo)) + " | " + ",".join(candidates))


def measured(pass_name: str, p: Problem, dev, dtype, trial, candidates=None, min_macs=None,
             tag: str = "") -> str | None:
    """The fastest of the candidates on p, measured once per device, driver, pass, dtype
    and problem and cached on disk; None where no measurement applies (CLGRAD_CONV_TUNE=off,
    small problems, ...).
    Without ``candidates``: the algorithms of CANDIDATES[pass_name], on GPUs only (any
    device with CLGRAD_CONV_TUNE=on), from _TUNE_MIN_MACS multiply-adds, never for an input
    gradient with stride > 1. With ``candidates``: the caller's own choice, measured on the
    devices it asks for and any stride, from ``min_macs`` multiply-adds (None:
    _TUNE_MIN_MACS), ``tag`` ending the key (a version: raised where a candidate changes, so
    that older entries are measured again). Callers: choice._auto (CPUs: CPU_CANDIDATES,
    CPU_TUNE_MIN_MACS, " v{CPU_TUNE_VERSION}") and op.py half_via_float32 (float16's route).
    ``trial(pass_name, geo, dtype, dev)`` (choice._trial) gives run(candidate) -> bool: one
    pass of the forward geometry geo on scratch operands, False when the candidate cannot
    run it. Trials run eagerly, even inside a capture, and may measure again (see _LOCK).
    A candidate's time is the best of 3 timings; on GPUs a timing is BURST back-to-back runs
    between two synchronisations, divided by BURST (see there)."""
    mode = settings.getenv("CLGRAD_CONV_TUNE")
    if mode == "off":
        return None
    if candidates is None:
        if (mode != "on" and dev.kind != "gpu") or (pass_name == "grad_input" and
                                                      p.uh * p.uw > 1):
            return None
        candidates, min_macs, tag = CANDIDATES[pass_name], _TUNE_MIN_MACS, ""
    geo = forward_geometry(pass_name, p)
    macs = geo.n * geo.g * geo.o * geo.oh * geo.ow * geo.c * geo.kh * geo.kw
    if macs < (_TUNE_MIN_MACS if min_macs is None else min_macs):
        return None
    burst = BURST if dev.kind == "gpu" else 1
    key = _key(dev, pass_name, geo, dtype, candidates) + tag + (f" b{burst}" if burst > 1 else "")
    with _LOCK:
        if not _TUNED:
            _TUNED.update(settings.read_json(tune_file()) or {"_": {}})
        hit = _TUNED.get(key)
        if hit is not None:
            return hit["algo"]
        with _capture.paused():  # run and timed now, even in a capture (no part of its graph)
            run, best = trial(pass_name, geo, dtype, dev), {}
            for algo in candidates:
                if run(algo):  # also compiles and warms up
                    best[algo] = float("inf")
            dev.synchronize()
            for _ in range(3):  # the candidates alternate: a burst of load hits them alike
                for algo in best:
                    t0 = time.perf_counter()
                    for _ in range(burst):
                        run(algo)
                    dev.synchronize()
                    best[algo] = min(best[algo], (time.perf_counter() - t0) / burst)
        times = {algo: round(t * 1e3, 4) for algo, t in best.items()}
        if not times:
            return None
        algo = min(times, key=times.get)
        _TUNED[key] = {"algo": algo, "ms": times}
        settings.write_json(tune_file(), {k: v for k, v in _TUNED.items() if k != "_"})
    if settings.getenv("CLGRAD_CONV_DEBUG"):
        print(f"conv2d {pass_name}: measured {times} -> {algo}", file=sys.stderr)
    return algo
