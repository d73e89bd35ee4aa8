"""Matrix products on strided views: matmul/@ with broadcast batch dims, and the GEMM helper.

Kernels: kernels/matmul.cl :: gemm, one of two variants per device class (see the file's
header): GEMM_CPU (register-blocked, B packed into L1, no local memory) on CPU devices, and
GEMM_TILED (local-memory tiles, double-buffered, 4-vector loads where the layout allows) on
GPUs. A transposed view is read through its strides: no copy is made of any operand.

Tensor cores: on NVIDIA GPUs whose OpenCL compiler takes inline PTX ``mma.sync`` (checked once
per device against NumPy, ``has_mma``), float16 GEMMs and, with TF32 allowed
(``backends.cuda.matmul.allow_tf32`` / ``set_float32_matmul_precision('high')``), the float32
GEMMs of matmul, mm, bmm and linear run kernels/matmul_mma_nv.cl :: gemm_mma (``mma_precision``;
``CLGRAD_MMA=off`` turns it off). float16 GEMMs whose operands are 16-byte aligned along k or
along their rows, and TF32 ones whose operands are both aligned along k (``linear``'s
forward), take kernels/matmul_mma_async_nv.cl :: gemm_mma_async instead (cp.async copies,
STAGES tiles in flight, ldmatrix fragments; ``has_mma_async``): float16 2.9x gemm_mma at
8192^3 on the H200 (bench/README.md).

Tile sizes: ``CPU_TILES`` (``CPU_TILES_16`` on AVX-512 devices) / ``GPU_TILES`` below, unless
``bench/gemm.py --tune`` stored a winner for this device and driver in ``tiles_file()``
(``CLGRAD_GEMM_TILES`` names another file; ``CLGRAD_GEMM_TILES=off`` ignores it).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from clgrad import backends, dtypes, layout
from clgrad import settings
from clgrad.runtime import cache_dir
from clgrad.layout import cdiv
from clgrad.autograd import no_grad, record
from clgrad.ops import elementwise as ew
from clgrad.ops.plan import Plan, key as plan_key, record_launches, replay
from clgrad.ops._util import (MAXD, copy_raw, defines_for, defines_of, empty, launch_1d,
                              same_device, scalar, shape_arg,
                              view_arg)
from clgrad.tensor import Tensor

__all__ = ["matmul", "mm", "bmm", "dot", "gemm", "linear"]

# GEMM_CPU: MR x (NV*VW) register tiles (6 x 16 floats = 12 AVX2 registers), MT x NT of them
# per work item, depth blocks of KC (the packed B panel, KC x NV*VW, stays in L1).
CPU_TILES = {"MR": 6, "NV": 2, "MT": 32, "NT": 2, "KC": 256}
# Devices with 16-float native vectors (AVX-512; cl native_vector_width_float): VW = 16 float
# vectors (halved for double), 12 x 32 register tiles (24 of the 32 zmm registers). Measured
# at 1024^3 on the 2-core Xeon (both cores, 2026-12-01): Intel's CPU runtime 60 -> 160
# GFLOP/s, PoCL 89 -> 245 GFLOP/s against CPU_TILES.
CPU_TILES_16 = {"MR": 12, "NV": 2, "MT": 16, "NT": 1, "KC": 256, "VW": 16}
# GEMM_TILED: TSM x TSN tile per work-group, WPTM x WPTN per work item, depth TSK. "large" for
# problems with enough tiles to fill the GPU, "small" otherwise. Depth 16 measured on an H200
# (bench/gemm.py --tune, 2026-12-03, 4096^3): 43.1 TFLOP/s against 34.8 with depth 8, 35.3-35.7
# for 128x64/64x128, 42.1 for 8x4 per work item, 34.0 for 256x128.
GPU_TILES = {"large": {"TSM": 128, "TSN": 128, "TSK": 16, "WPTM": 8, "WPTN": 8},
             "small": {"TSM": 64, "TSN": 64, "TSK": 16, "WPTM": 4, "WPTN": 4}}
# What ``bench/gemm.py --tune`` tries (tests/test_gemm_tiles.py checks every one of them).
CPU_CANDIDATES = [CPU_TILES, {"MR": 4, "NV": 3, "MT": 48, "NT": 2, "KC": 256},
                  {"MR": 3, "NV": 1, "MT": 2, "NT": 3, "KC": 16}, CPU_TILES_16,
                  {"MR": 8, "NV": 2, "MT": 16, "NT": 1, "KC": 256, "VW": 16},
                  {"MR": 6, "NV": 2, "MT": 32, "NT": 1, "KC": 256, "VW": 16}]
# The small tiles stay last (the tuner times the others: its problem fills any GPU).
# 128x64 and 64x128 (256 work items, depth 16), 128x128 of 8x4 per work item (512 work items,
# half the registers each), 256x128 of 16x8 (128 accumulators per work item, as cuBLAS's
# large tiles): for big GPUs (H200 figures above GPU_TILES).
GPU_CANDIDATES = [GPU_TILES["large"], {"TSM": 128, "TSN": 128, "TSK": 8, "WPTM": 8, "WPTN": 8},
                  {"TSM": 128, "TSN": 64, "TSK": 16, "WPTM": 8, "WPTN": 4},
                  {"TSM": 64, "TSN": 128, "TSK": 16, "WPTM": 4, "WPTN": 8},
                  {"TSM": 128, "TSN": 128, "TSK": 16, "WPTM": 8, "WPTN": 4},
                  {"TSM": 256, "TSN": 128, "TSK": 8, "WPTM": 16, "WPTN": 8},
                  GPU_TILES["small"]]
_INT_LIMIT = (1 << 31) - 1  # GEMM_TILED's I32: offsets below this in 32 bits
_MAX_Z = 65535  # the batch launch dim is capped (CUDA grids); the kernel loops over the rest
_TUNED: dict = {}  # Device -> tiles (read from tiles_file() once per device)


def tiles_file() -> Path:
    """The JSON file of tuned tile sizes (one entry per platform, device and driver):
    ``CLGRAD_GEMM_TILES``, else ``gemm_tiles.json`` in clgrad's cache folder
    (clgrad.runtime.cache_dir, as the probe and the conv choices)."""
    env = settings.getenv("CLGRAD_GEMM_TILES")
    if env and env != "off":
        return Path(env)
    return cache_dir() / "gemm_tiles.json"


device_key = settings.device_key  # the key of a device's tuned tiles (bench/gemm.py)


def tiles(dev) -> dict:
    """The tile sizes gemm uses on ``dev``: tuned ones if stored, else the class defaults.

    CPU devices: a dict of GEMM_CPU defines; GPUs: {"large": {...}, "small": {...}}.
    """
    cfg = _TUNED.get(dev)
    if cfg is None:
        cfg = GPU_TILES
        if dev.kind == "cpu":
            wide = dev.vector_width >= 16
            cfg = CPU_TILES_16 if wide else CPU_TILES
        if settings.getenv("CLGRAD_GEMM_TILES") != "off":
            stored = settings.read_json(tiles_file()).get(device_key(dev))
            forms = (CPU_TILES, CPU_TILES_16) if dev.kind == "cpu" else (GPU_TILES,)
            if any(_same_form(stored, f) for f in forms):  # another version's entry: ignored
                cfg = stored
        _TUNED[dev] = cfg
    return cfg


def _same_form(stored, default) -> bool:
    """Whether a stored tile entry has the defaults' keys (nested alike) with int values."""
    if isinstance(default, dict):
        return isinstance(stored, dict) and set(stored) == set(default) and all(
            _same_form(stored[k], v) for k, v in default.items())
    return isinstance(stored, int) and not isinstance(stored, bool) and stored > 0


def gemm(c: Tensor, a: Tensor, b: Tensor, alpha=1.0, beta=0.0, tiles_override=None,
         split=None, tf32=False):
    """c = alpha * a @ b + beta * c in one launch; no autograd.

    Shapes: a (*B, M, K), b (*B, K, N), c (*B, M, N) with the same batch dims *B (stride-0
    batch dims allowed on a and b). Every operand is any strided view; c must not overlap.
    beta == 0: c is only written (NaNs in it do not propagate).
    float16: products are summed in float32 and rounded once (PyTorch's): GEMM_TILED with
    ACC=float, GEMM_CPU on float32 copies of the operands.
    ``tiles_override``: one config as ``tiles()`` returns (the tests and the tuner use it).
    GEMM_TILED problems with too few tiles to fill the device are split along K
    (``_splits``): partial products of each K slice in one batched launch, then summed
    (``_gemm_split_k``). ``split``: None (the default) splits GEMV-like problems (at most
    SPLIT_MAX_M rows: a linear layer at batch <= 4) and deep ones (K >= SPLIT_DEEP_K: AlexNet's
    fc6 and fc7 at batch 128); False never; True always takes the split
    path on GEMM_TILED devices, with one slice where splitting does not pay (callers whose
    launch count must not depend on the problem's shape: the im2col convolution decides on the
    whole layer, so its launch count does not depend on groups).
    A float32 ``c`` of float16 ``a`` and ``b`` (float32 sums, not rounded to float16: the
    float16 convolutions' weight-gradient partial sums, clgrad/ops/conv/algorithms.py) runs
    on tensor cores where float16 does (``mma_precision``, ``has_mma_f32out``), elsewhere on
    float32 copies of the operands; any other mix of dtypes raises RuntimeError.
    ``tf32``: a float32 GEMM may run in TF32 on tensor cores (matmul's callers pass
    ``allow_tf32()``; the convolutions' GEMMs stay float32). Tensor cores (``mma_precision``)
    take float16 and those float32 GEMMs whatever their shape, unless ``tiles_override``.
    """
    dev = c._storage.device
    key = None
    # The launch plan (ops/plan.py), in the device's plans under plan.key of c, a, b (dtypes,
    # shapes, strides, offsets) and ``split``: the kernel, sizes and the arguments that depend
    # only on those; buffers and alpha/beta are bound per call. ``data``: (the tiles planned
    # with, the number of K slices of a split plan or None, whether it is a tensor-core plan:
    # its alpha and beta are float32 whatever the dtype). Only with the device's own tiles
    # (planned again when they were re-read).
    if tiles_override is None:
        key = plan_key("gemm", (c, a, b), (split, tf32))
        plan = dev.plans.get(key)
        if plan is not None and plan.data[0] is tiles(dev):  # (tiles re-read: planned again)
            if plan.data[1] is not None:
                return _gemm_split_k(c, a, b, alpha, beta, plan.data[1])
            dt = c._storage.dtype
            plan.run_with(dev, (c._storage.buffer, a._storage.buffer, b._storage.buffer),
                          (np.float32(alpha), np.float32(beta)) if plan.data[2] else
                          (scalar(dt, alpha), scalar(dt, beta)))
            return c
    *batch, m, k = a.shape
    n = b.shape[-1]
    nb = layout.numel(batch)
    if nb == 0 or m == 0 or n == 0:
        return c
    if k == 0 and beta == 0:
        ew.fill_raw(c, 0)
        return c
    bshape, (cb, ab, bb) = layout.collapse(tuple(batch) or (1,), c._strides[:-2] or (0,),
                                           a._strides[:-2] or (0,), b._strides[:-2] or (0,))
    if len(bshape) > MAXD:
        raise RuntimeError(f"matmul: more than {MAXD} non-mergeable batch dims: {tuple(batch)}")
    cfg = top = tiles_override or tiles(dev)
    (c_rs, c_cs), (a_rs, a_cs), (b_rs, b_cs) = c._strides[-2:], a._strides[-2:], b._strides[-2:]
    # the kernels' arguments but the buffers and alpha, beta (matmul.cl's and matmul_mma_nv.cl's)
    fixed = ((np.int64(m), np.int64(n), np.int64(k), np.int64(nb), np.int32(len(bshape)),
              shape_arg(bshape)),
             (view_arg(c, cb), np.int64(c_rs), np.int64(c_cs)),
             (view_arg(a, ab), np.int64(a_rs), np.int64(a_cs)),
             (view_arg(b, bb), np.int64(b_rs), np.int64(b_cs)))
    c_float = c._storage.dtype is not a._storage.dtype
    if c_float:  # float32 sums of float16 products (see the docstring)
        if not (a.dtype is b.dtype is dtypes.float16 and c.dtype is dtypes.float32):
            raise RuntimeError(f"gemm: expected operands of the result's dtype, or float16 "
                               f"ones for a float32 result, got {a.dtype} @ {b.dtype} into "
                               f"{c.dtype}")
        if not (tiles_override is None and mma_precision(dev, a.dtype, False) == "f16" and
                has_mma_f32out(dev)):
            with no_grad():  # float32 copies of the operands (stride-0 dims kept)
                return gemm(c, _widened(a), _widened(b), alpha, beta, tiles_override, split)
        prec = "f16"
    else:
        prec = None if tiles_override is not None else mma_precision(dev, c.dtype, tf32)
    if prec is not None:
        kernel, gsize, lsize = _mma_launch(dev, prec, m, n, k, min(nb, _MAX_Z),
                                           (a._offset, a_rs, a_cs, *ab),
                                           (b._offset, b_rs, b_cs, *bb), c_float)
        return _launch_gemm(dev, key, kernel, gsize, lsize, fixed, c, a, b,
                            np.float32(alpha), np.float32(beta), top, True)
    if c.dtype is dtypes.float16 and "MR" in cfg:  # GEMM_CPU would round partial sums
        return _gemm_widened(c, a, b, alpha, beta, cfg)
    d = defines_for(c.dtype)
    if "MR" in cfg:
        vw = cfg.get("VW", 8)  # floats per vector: half as many doubles
        d.update({k: v for k, v in cfg.items() if k != "VW"}, GEMM_CPU=1,
                 VW=vw // 2 if c.dtype.itemsize == 8 else vw)
        d["B_PACK"] = 1 if b_cs == 1 else 2 if b_rs == 1 else 0
        if c_cs == 1:
            d["C_VEC"] = 1
        nr, mr = cfg["NV"] * d["VW"] * cfg["NT"], cfg["MR"] * cfg["MT"]
        gsize, lsize = (cdiv(n, nr), cdiv(m, mr), min(nb, _MAX_Z)), (1, 1, 1)
    else:
        if "large" in cfg:
            big = cfg["large"]
            fill = cdiv(m, big["TSM"]) * cdiv(n, big["TSN"]) * nb
            # (the slices of a split GEMM keep the small tiles its split was planned with)
            cfg = big if fill >= dev.compute_units and split is None else cfg["small"]
        splits = 1 if split is False or (split is None and m > SPLIT_MAX_M and
                                         k < SPLIT_DEEP_K) else _splits(
            cdiv(m, cfg["TSM"]) * cdiv(n, cfg["TSN"]) * nb, k, dev, len(bshape), c.dtype,
            split is True)
        if splits > 1 or (split is True and splits == 1):
            if key is not None:
                dev.keep_plan(key, Plan(None, (), None, data=(top, splits, False)))
            return _gemm_split_k(c, a, b, alpha, beta, splits, tiles_override)
        d.update(GEMM_TILED=1, **cfg)  # (float16: ACC float from defines_for, one rounding)
        nthr = (cfg["TSM"] // cfg["WPTM"]) * (cfg["TSN"] // cfg["WPTN"])
        al = [a._offset, cfg["TSM"] * cfg["TSK"] // nthr] + list(ab)  # whole 4-vectors/item
        bl = [b._offset, cfg["TSN"] * cfg["TSK"] // nthr] + list(bb)
        d["A_LOAD"] = (1 if a_cs == 1 and _aligned(k, a_rs, *al) else
                       2 if a_rs == 1 and _aligned(m, a_cs, *al) else 0)
        d["B_LOAD"] = (1 if b_cs == 1 and _aligned(n, b_rs, *bl) else
                       2 if b_rs == 1 and _aligned(k, b_cs, *bl) else 0)
        tm, tn, tk = cfg["TSM"], cfg["TSN"], cfg["TSK"]
        if m % tm == 0 and n % tn == 0 and k % tk == 0:
            d["EXACT"] = 1  # whole tiles only: no bounds checks
        if max((m + tm) * abs(a_rs) + (k + tk) * abs(a_cs),
               (k + tk) * abs(b_rs) + (n + tn) * abs(b_cs)) < _INT_LIMIT:
            d["I32"] = 1  # a batch element's offsets (tile overhang included) fit an int
        rn, rm = cfg["TSN"] // cfg["WPTN"], cfg["TSM"] // cfg["WPTM"]
        gsize = (cdiv(n, cfg["TSN"]) * rn, cdiv(m, cfg["TSM"]) * rm, min(nb, _MAX_Z))
        lsize = (rn, rm, 1)
    kernel = dev.kernel("matmul.cl", "gemm", d)
    return _launch_gemm(dev, key, kernel, gsize, lsize, fixed, c, a, b,
                        scalar(c.dtype, alpha), scalar(c.dtype, beta), top, False)


def _launch_gemm(dev, key, kernel, gsize, lsize, fixed, c, a, b, alpha, beta, top, mma):
    """Keep the plan (under ``key``, unless None) and launch one gemm kernel: ``fixed`` are
    its arguments but the buffers and alpha, beta (kernels/matmul.cl's and matmul_mma_nv.cl's
    argument order; ``mma``: the latter's, alpha and beta float32)."""
    if key is not None:  # the arguments: fixed[0], c, fixed[1], a, fixed[2], b, fixed[3],
        val = []            # alpha, beta
        for i, v in enumerate((*fixed[0], None, *fixed[1], None, *fixed[2], None, *fixed[3])):
            if v is not None:
                val += (i, v)
        dev.keep_plan(key, Plan(kernel, gsize, lsize, val, (6, 10, 14), (18, 19),
                                data=(top, None, mma)))
    dev.launch(kernel, gsize, lsize, *fixed[0], c._storage.buffer, *fixed[1],
               a._storage.buffer, *fixed[2], b._storage.buffer, *fixed[3], alpha, beta)
    return c


# -- tensor cores (kernels/matmul_mma_nv.cl) ------------------------------------------------------
# Work-group tiles (kernels/matmul_mma_nv.cl: WARPS_M x WARPS_N warps of MT x NT mma tiles):
# 128 x 128 (8 warps of 64 x 32) where they fill the GPU, else 64 x 64 (4 warps of 32 x 32).
MMA_TILES = {"large": {"WARPS_M": 2, "WARPS_N": 4, "MT": 4, "NT": 4},
             "small": {"WARPS_M": 2, "WARPS_N": 2, "MT": 2, "NT": 4}}
MMA_BK = 32  # the kernel's tile depth
# kernels/matmul_mma_async_nv.cl (float16, 16-byte aligned operands): STAGES tiles of A and B
# in local memory (3 x 16 KiB for 128 x 128, NVIDIA's OpenCL gives a work-group 48 KiB).
MMA_ASYNC_TILES = {
    "large": {"WARPS_M": 2, "WARPS_N": 2, "MT": 4, "NT": 8, "STAGES": 3, "GROUP_M": 8},
    "small": {"WARPS_M": 2, "WARPS_N": 2, "MT": 2, "NT": 4, "STAGES": 4, "GROUP_M": 8}}
_MMA: dict = {}  # Device -> has_mma's verdict
_MMA_ASYNC: dict = {}  # (Device, precision) -> has_mma_async's verdict
_MMA_F32OUT: dict = {}  # Device -> has_mma_f32out's verdict
_SMEM: dict = {}  # Device -> the SMEM_CVTA define (0, 1) that gives shared-window addresses
_PRECISION = backends.cuda.PRECISION  # ["highest"] unless TF32 is allowed


def allow_tf32() -> bool:
    """Whether float32 matmuls may run in TF32 (backends.cuda.matmul.allow_tf32)."""
    return _PRECISION[0] != "highest"


def mma_precision(dev, dtype, tf32: bool) -> str | None:
    """'f16' for a float16 GEMM, 'tf32' for a float32 one with ``tf32``, on a device where
    ``has_mma`` (and CLGRAD_MMA is not 'off'); else None (the FMA kernels of kernels/matmul.cl).
    Raises ValueError for a CLGRAD_MMA other than 'auto' or 'off'."""
    if dtype is dtypes.float16:
        prec = "f16"
    elif tf32 and dtype is dtypes.float32:
        prec = "tf32"
    else:
        return None
    mode = settings.getenv("CLGRAD_MMA")
    if mode not in ("auto", "off"):
        raise ValueError(f"CLGRAD_MMA: expected 'auto' or 'off', got {mode!r}")
    if dev.kind != "gpu" or mode == "off" or not has_mma(dev):
        return None
    return prec


def _mma_launch(dev, prec, m, n, k, nz, a_geo, b_geo, c_float=False):
    """(kernel, global size, local size) of gemm_mma for an (m, k) @ (k, n) problem of ``nz``
    batch launches; ``a_geo``, ``b_geo``: each operand's (offset, row stride, column stride,
    *batch strides), which pick its tile loader (kernels/matmul_mma_nv.cl: 1 vectors along k,
    0 scalars along k, 2 scalars along m or n; B also 3, vectors along n). GEMMs whose
    operands both travel in 16-byte chunks (``_async_layout``; for TF32, both along k) take the
    pipelined kernel of kernels/matmul_mma_async_nv.cl where ``has_mma_async``. ``c_float``:
    float16 operands, a float32 C (kernels/mma_nv.h's C_FLOAT)."""
    a_off, a_rs, a_cs, *a_bs = a_geo
    b_off, b_rs, b_cs, *b_bs = b_geo
    vec = 8 if prec == "f16" else 4  # elements in 16 bytes
    a_kr = _async_layout(m, k, a_off, a_rs, a_cs, a_bs, vec)
    b_kr = _async_layout(n, k, b_off, b_cs, b_rs, b_bs, vec)
    if (a_kr is not None and b_kr is not None and (prec == "f16" or a_kr == b_kr == 0)
            and has_mma_async(dev, prec)):
        return _mma_async_kernel(dev, prec, _mma_tiles(MMA_ASYNC_TILES, dev, m, n, nz), a_kr,
                                 b_kr, m, n, k, nz, c_float=c_float)
    cfg = _mma_tiles(MMA_TILES, dev, m, n, nz)
    bm, bn, _ = _mma_tile(cfg)
    # the same 16-byte chunks: A's along k are loader 1 (none along m); B's along k 1, along n 3
    a_load = 1 if a_kr == 0 else 2 if a_rs == 1 and a_cs != 1 else 0
    b_load = 1 if b_kr == 0 else 3 if b_kr == 1 else 0 if b_rs == 1 and b_cs != 1 else 2
    return _mma_kernel(dev, prec, cfg, a_load, b_load, m, n, nz,
                       m % bm == 0 and n % bn == 0 and k % MMA_BK == 0, c_float)


def _mma_tiles(table, dev, m, n, nz) -> dict:
    """``table``'s large tiles where they make at least one work-group per compute unit for an
    m x n output of ``nz`` batch launches and m and n each exceed the small tile's, else its
    small ones (a 64-row output filled half of each 128 x 128 tile: the float16 convolutions'
    per-sample GEMMs of 64 output channels)."""
    big, small = table["large"], table["small"]
    bm, bn, _ = _mma_tile(big)
    sm, sn, _ = _mma_tile(small)
    return big if (m > sm and n > sn and
                   cdiv(m, bm) * cdiv(n, bn) * nz >= dev.compute_units) else small


def _async_layout(rows, k, off, rs, ks, bs, vec=8) -> int | None:
    """How kernels/matmul_mma_async_nv.cl copies an operand of ``rows`` x ``k`` (element (r, c)
    at off + r * rs + c * ks, batch strides ``bs``) in 16-byte chunks of ``vec`` elements (8
    halves, 4 floats): 0 along k (ks == 1), 1 along its rows (rs == 1), each where the
    contiguous extent, the other stride, the offset and the batch strides are multiples of
    ``vec``; None where neither holds."""
    if ks == 1 and all(v % vec == 0 for v in (k, off, rs, *bs)):
        return 0
    if rs == 1 and all(v % vec == 0 for v in (rows, off, ks, *bs)):
        return 1
    return None


def _mma_tile(cfg) -> tuple:
    """(rows, columns, work items) of a work-group of the tile config ``cfg``."""
    return (cfg["WARPS_M"] * cfg["MT"] * 16, cfg["WARPS_N"] * cfg["NT"] * 8,
            cfg["WARPS_M"] * cfg["WARPS_N"] * 32)


def _mma_kernel(dev, prec, cfg, a_load, b_load, m, n, nz, exact=False, c_float=False):
    """(kernel, global size, local size) of gemm_mma in precision ``prec`` ('f16', 'tf32')
    with tiles ``cfg`` and tile loaders ``a_load``, ``b_load``, for an m x n output of ``nz``
    batch launches; ``exact``: m, n, k multiples of the tile (no bounds checks)."""
    d = {"T": "half" if prec == "f16" else "float", "MMA_F16" if prec == "f16" else "MMA_TF32": 1,
         **cfg, "A_LOAD": a_load, "B_LOAD": b_load}
    if exact:
        d["EXACT"] = 1
    if c_float:
        d["C_FLOAT"] = 1
    bm, bn, nthr = _mma_tile(cfg)
    return (dev.kernel("matmul_mma_nv.cl", "gemm_mma", d), (cdiv(n, bn) * nthr, cdiv(m, bm), nz),
            (nthr, 1, 1))


def _mma_async_kernel(dev, prec, cfg, a_kr, b_kr, m, n, k, nz, cvta=None, c_float=False):
    """(kernel, global size, local size) of kernels/matmul_mma_async_nv.cl :: gemm_mma_async
    in precision ``prec`` ('f16', 'tf32') with tiles ``cfg`` and operand layouts ``a_kr``,
    ``b_kr`` (``_async_layout``) for an (m, k) @ (k, n) problem of ``nz`` batch launches;
    ``cvta``: the SMEM_CVTA define (default: the device's, found by has_mma_async)."""
    bm, bn, nthr = _mma_tile(cfg)
    d = {"T": "half" if prec == "f16" else "float", **cfg, "WAIT": cfg["STAGES"] - 2,
         "A_KR": a_kr, "B_KR": b_kr}
    if prec == "tf32":
        d["MMA_TF32"] = 1
    if c_float:
        d["C_FLOAT"] = 1
    d.update(smem_defines(dev) if cvta is None else {"SMEM_CVTA": 1} if cvta else {})
    if m % bm == 0 and n % bn == 0 and k % (MMA_BK if prec == "f16" else MMA_BK // 2) == 0:
        d["EXACT"] = 1  # (a tile is 64 bytes deep: 32 halves, 16 floats)
    return (dev.kernel("matmul_mma_async_nv.cl", "gemm_mma_async", d),
            (cdiv(n, bn) * nthr, cdiv(m, bm), nz), (nthr, 1, 1))


def has_mma(dev) -> bool:
    """Whether ``dev`` runs kernels/matmul_mma_nv.cl right: NVIDIA's OpenCL only (its compiler
    passes inline PTX through; another compiler may fail the build in ways that end the
    process), then once per device and process: a 72 x 40 @ 40 x 136 GEMM (edges, two K
    tiles) in each precision on both tile configs and every tile loader (A and B row-major,
    then both transposed) against NumPy in float64, through the device's queue directly
    (never recorded into a capture). A failure warns once and keeps the FMA kernels."""
    ok = _MMA.get(dev)
    if ok is None:
        ok = _MMA[dev] = "NVIDIA" in dev.platform and _check_mma(dev)
    return ok


def has_mma_async(dev, prec: str = "f16") -> bool:
    """Whether ``dev`` runs kernels/matmul_mma_async_nv.cl right in precision ``prec`` ('f16',
    'tf32'): where ``has_mma``, then once per device and process: the shared-window address
    of a local pointer (cp.async and ldmatrix take it; OpenCL has no name for it) is the
    pointer's value or its cvta.to.shared, checked by a kernel that only writes the two
    candidate addresses (a wrong address never reaches a memory instruction); then, once per
    precision, a 72 x 40 @ 40 x 136 GEMM on both tile configs and every operand layout it
    takes (float16 all four, TF32 both along k) against NumPy. A failure warns once and keeps
    kernels/matmul_mma_nv.cl."""
    ok = _MMA_ASYNC.get((dev, prec))
    if ok is None:
        ok = _MMA_ASYNC[(dev, prec)] = has_mma(dev) and _check_mma_async(dev, prec)
    return ok


def smem_defines(dev) -> dict:
    """The defines giving kernels/mma_async_nv.h's shared-window addresses on ``dev`` where
    ``has_mma_async(dev)`` (SMEM_CVTA or none): for the other pipelined tensor-core kernels
    (kernels/conv_igemm_mma_nv.cl)."""
    return {"SMEM_CVTA": 1} if _SMEM.get(dev) else {}


def has_mma_f32out(dev) -> bool:
    """Whether ``dev`` runs the tensor-core GEMMs right with a float32 C of float16 A and B
    (kernels/mma_nv.h's C_FLOAT: the float16 convolutions' split-K partial sums): where
    ``has_mma``, once per device and process, a 72 x 40 @ 40 x 136 GEMM of both operands
    along k (the layout those partial sums have) on both tile configs of both kernels against
    NumPy. A failure warns once; the convolutions then do not split."""
    ok = _MMA_F32OUT.get(dev)
    if ok is None:
        ok = _MMA_F32OUT[dev] = has_mma(dev) and _check_mma_f32out(dev)
    return ok


def _check_mma_f32out(dev) -> bool:
    def check():
        rng = np.random.default_rng(2)
        m, k, n = 72, 40, 136
        a = rng.standard_normal((m, k)).astype(np.float16)
        b = rng.standard_normal((k, n)).astype(np.float16)
        kernels = [_mma_kernel(dev, "f16", cfg, load, load, m, n, 1, c_float=True)
                   for cfg in MMA_TILES.values() for load in (0, 1)]
        if has_mma_async(dev, "f16"):
            kernels += [_mma_async_kernel(dev, "f16", cfg, 0, 0, m, n, k, 1, c_float=True)
                        for cfg in MMA_ASYNC_TILES.values()]
        for i, kern in enumerate(kernels):
            _check_gemm(dev, kern, a, b, False, True, 1e-5, f"float32 C, kernel {i}",
                        c_dtype=np.float32)
    return _verified(dev, "float32 C of float16 operands", check)


def _check_mma(dev) -> bool:
    def check():
        rng = np.random.default_rng(0)
        m, k, n = 72, 40, 136
        for prec, npt, tol in (("f16", np.float16, 1e-3), ("tf32", np.float32, 2e-3)):
            a = rng.standard_normal((m, k)).astype(npt)
            b = rng.standard_normal((k, n)).astype(npt)
            for cfg, (a_load, b_load, trans) in zip(
                    (*MMA_TILES.values(), *MMA_TILES.values()),
                    ((1, 3, False), (0, 2, False), (2, 1, True), (2, 0, True))):
                kern = _mma_kernel(dev, prec, cfg, a_load, b_load, m, n, 1)
                _check_gemm(dev, kern, a, b, trans, trans, tol,
                            f"{prec} ({cfg}, loaders A {a_load}, B {b_load})")
    return _verified(dev, "kernels/matmul_mma_nv.cl", check)  # (else the FMA kernels)


def _check_mma_async(dev, prec: str) -> bool:
    def check():
        rng = np.random.default_rng(1)
        m, k, n = 72, 40, 136
        npt, tol = (np.float16, 1e-3) if prec == "f16" else (np.float32, 2e-3)
        a = rng.standard_normal((m, k)).astype(npt)
        b = rng.standard_normal((k, n)).astype(npt)
        if dev not in _SMEM:
            _SMEM[dev] = _smem_window(dev)
        for cfg in MMA_ASYNC_TILES.values():
            for a_kr, b_kr in ((0, 0), (0, 1), (1, 0), (1, 1)) if prec == "f16" else ((0, 0),):
                kern = _mma_async_kernel(dev, prec, cfg, a_kr, b_kr, m, n, k, 1)
                _check_gemm(dev, kern, a, b, a_kr == 1, b_kr == 0, tol,
                            f"{prec} pipelined ({cfg}, layouts A {a_kr}, B {b_kr})")
    # (else kernels/matmul_mma_nv.cl)
    return _verified(dev, f"kernels/matmul_mma_async_nv.cl, {prec}", check)


def _verified(dev, what: str, check) -> bool:
    """Whether ``check()`` (kernel runs against NumPy, on the device's queue under its lock;
    build warnings silenced) passes; any exception warns once, naming ``what``, and gives
    False."""
    import warnings
    try:
        with dev._lock, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check()
        return True
    except Exception as e:  # noqa: BLE001 — any failure: keep the older kernels
        warnings.warn(f"clgrad: tensor cores (inline PTX, {what}) not used on {dev.name!r}: "
                      f"{' '.join(str(e).split())[:300]}", RuntimeWarning, stacklevel=4)
        return False


def _smem_window(dev) -> int:
    """The SMEM_CVTA define (0: a local pointer's value, 1: its cvta.to.shared) under which
    kernels/matmul_mma_async_nv.cl :: smem_window gives shared-window addresses (below the
    local memory size, 2000 bytes apart for elements 0 and 1000). Raises RuntimeError where
    neither does."""
    import pyopencl as cl
    for cvta in (0, 1):
        d = {"SMEM_PROBE": 1, **({"SMEM_CVTA": 1} if cvta else {})}
        out = np.zeros(2, np.uint64)
        buf = cl.Buffer(dev.context, cl.mem_flags.WRITE_ONLY, out.nbytes)
        dev.kernel("matmul_mma_async_nv.cl", "smem_window", d)(dev.queue, (32,), (32,), buf)
        cl.enqueue_copy(dev.queue, out, buf)
        dev.queue.finish()
        lo, hi = int(out[0]), int(out[1])
        if lo < dev.local_mem_size and hi - lo == 2000:
            return cvta
    raise RuntimeError(f"no shared-window address of a local pointer (the pointer gave "
                       f"{lo:#x}, {hi:#x})")


def _check_gemm(dev, kern, a, b, a_t, b_t, tol, what, c_dtype=None):
    """Run the GEMM kernel ``kern`` ((kernel, global, local) of gemm_mma's arguments) on the
    device's queue directly for a @ b (``a_t``: A stored transposed, (k, m); ``b_t``: B stored
    (n, k)) and compare with float64 NumPy (float16: exact products, float32 sums, one
    rounding to half; ``c_dtype`` float32: a float32 C, not rounded). Raises RuntimeError
    naming ``what`` when off by more than ``tol`` of the largest value or not finite."""
    import pyopencl as cl
    kernel, gsize, lsize = kern
    (m, k), n = a.shape, b.shape[1]
    want = a.astype(np.float64) @ b.astype(np.float64)
    mf = cl.mem_flags
    ah = np.ascontiguousarray(a.T) if a_t else a
    bh = np.ascontiguousarray(b.T) if b_t else b
    a_rs, a_cs = (1, m) if a_t else (k, 1)
    b_rs, b_cs = (1, k) if b_t else (n, 1)
    ab = cl.Buffer(dev.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=ah)
    bb = cl.Buffer(dev.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=bh)
    out = np.full((m, n), np.nan, c_dtype or a.dtype)
    cb = cl.Buffer(dev.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=out)
    one = (np.int64(1), np.int32(1), shape_arg((1,)))
    v0 = np.zeros(1 + MAXD, np.int64).tobytes()  # a view_t at offset 0
    kernel(dev.queue, gsize, lsize, np.int64(m), np.int64(n), np.int64(k), *one,
           cb, v0, np.int64(n), np.int64(1), ab, v0, np.int64(a_rs), np.int64(a_cs),
           bb, v0, np.int64(b_rs), np.int64(b_cs), np.float32(1.0), np.float32(0.0))
    cl.enqueue_copy(dev.queue, out, cb)
    dev.queue.finish()
    got = out.astype(np.float64)
    ref = want.astype(out.dtype).astype(np.float64) if out.dtype == np.float16 else want
    err = np.abs(got - ref).max() / np.abs(want).max()
    if not np.isfinite(got).all() or err > tol:
        raise RuntimeError(f"{what}: GEMM off NumPy by {err:.2e} of the largest value")


# Split-K on GPUs: a GEMM of fewer tiles than SPLIT_FILL x compute units is split along K
# into S slices (S divides K, each at least SPLIT_MIN_K deep) so that about that many
# work-groups run. H200, AlexNet at batch 1 (fc6: 1 x 9216 @ 9216 x 4096, one row of 64
# small tiles: 0.47 ms on 64 of 132 SMs).
SPLIT_FILL = 4
SPLIT_MIN_K = 128
# Only GEMV-like problems (at most SPLIT_MAX_M rows: linear layers at batch <= 4, where a tile
# is mostly empty rows) are split. Splitting the style-loss Gram GEMMs of the fast-neural-style
# program (4 x 8 x 1024 @ 1024 x 8) made its float64 gradient check fail on the H200 (conv1's
# weight gradient 5.8e-4 of the largest, limit 5e-5) although those GEMMs themselves came out
# closer to float64 split than unsplit (2e-7 against 1e-6): not understood, so not split.
SPLIT_MAX_M = 4
# ... and deep ones of more rows (K >= SPLIT_DEEP_K), still only where the tiles do not fill
# the device (_splits). H100, forced split against unsplit (bench/gpu/gemm_mma.py; bench/README
# 2026-12-06h): AlexNet's fc6 at batch 128 (128 x 9216 @ 9216 x 4096, 4 slices) 0.354 against
# 0.640 ms, fc7 (128 x 4096 @ 4096 x 4096) 0.186 against 0.298 ms, and closer to float64
# (1.2e-6 against 4.3e-6 of the largest); fc6's input gradient (N = 9216) fills the device
# unsplit and stays so. The Gram GEMMs above (K = 1024) are not deep.
SPLIT_DEEP_K = 4096


def _splits(fill: int, k: int, dev, batch_dims: int, dtype, forced: bool = False) -> int:
    """How many K slices a GEMM_TILED problem of ``fill`` tiles and depth ``k`` is split into:
    1 for none (``forced``: one slice through the split path), 0 where the split path cannot
    run (more batch dims than MAXD allows once the slice dim is added). float16 is never split
    into more than one slice (its partial sums would be rounded to half)."""
    if batch_dims + 1 > MAXD:
        return 0
    want = SPLIT_FILL * dev.compute_units
    if (fill >= want // 2 and not forced) or dtype is dtypes.float16:
        return 1
    s = min(-(-want // fill), k // SPLIT_MIN_K)
    while s > 1 and k % s:
        s -= 1
    return max(s, 1)


def _gemm_split_k(c: Tensor, a: Tensor, b: Tensor, alpha, beta, splits: int, cfg=None):
    """c = alpha * a @ b + beta * c as ``splits`` K slices: one batched GEMM of the slices
    (the slice is a leading batch dim of stride K/splits on a's columns and b's rows: views,
    no copies) into a contiguous (splits, *B, M, N) workspace, then one reduction over the
    slices (reduce.sum_into, Kahan-compensated) straight into c, scaled by alpha (beta != 0:
    into a scratch tensor, then c = that + beta * c). The order of the additions differs from
    the unsplit GEMM's (each slice's sum, then the slices).
    One slice (``splits`` 1: a forced split path, and every float16 one) takes alpha and beta
    inside its GEMM (c copied into the workspace first), so that the result is rounded once,
    as the unsplit GEMM's: a float16 convolution's bias (beta * c) was added after the
    product had been rounded to half, a second rounding. Its reduction is then a copy.
    """
    from clgrad.ops import reduce
    *batch, m, k = a.shape
    n = b.shape[-1]
    kc = k // splits
    a_cs, b_rs = a._strides[-1], b._strides[-2]  # K's stride in a and in b
    a_s = Tensor(a._storage, (splits, *batch, m, kc), (kc * a_cs, *a._strides), a._offset)
    b_s = Tensor(b._storage, (splits, *batch, kc, n), (kc * b_rs, *b._strides), b._offset)
    dev = c._storage.device
    with no_grad():
        part = empty((splits, *batch, m, n), c.dtype, dev)
        if splits == 1:
            one = Tensor(part._storage, c.shape, part._strides[1:], 0)  # the slice, as c
            if beta != 0:
                copy_raw(one, c)
            gemm(part, a_s, b_s, alpha, beta, cfg, split=False)
            copy_raw(c, one)
            return c
        gemm(part, a_s, b_s, 1.0, 0.0, cfg, split=False)
        if beta == 0:
            reduce.sum_into(c, part, 0, alpha)
        else:
            ew.axpby_(c, reduce.sum_into(empty(c.shape, c.dtype, dev), part, 0), alpha, c,
                      beta)
    return c


def _gemm_widened(c: Tensor, a: Tensor, b: Tensor, alpha, beta, cfg):
    """float16 GEMM through float32 operands: every product summed in float32 and rounded to
    float16 once (GEMM_CPU keeps partial sums in C between depth blocks, which for float16
    would round them every KC steps). Broadcast (stride-0) dims are widened once, not per
    repeat."""
    with no_grad():
        c32 = empty(c.shape, dtypes.float32, c._storage.device)
        if beta != 0:
            copy_raw(c32, c)
        gemm(c32, _widened(a), _widened(b), alpha, beta, cfg)
        copy_raw(c, c32)
    return c


def _widened(t: Tensor) -> Tensor:
    """A float32 copy of the view ``t`` with its stride-0 dims kept as stride-0."""
    base = Tensor(t._storage, tuple(1 if st == 0 else n for n, st in zip(t.shape, t._strides)),
                  t._strides, t._offset)
    return ew.to(base, dtypes.float32).expand(*t.shape)


_BF16 = dtypes.bfloat16


def _aligned(*values) -> bool:
    """True when every value is a multiple of 4 (4-vector loads stay aligned and whole)."""
    return all(v % 4 == 0 for v in values)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Matrix product with PyTorch's rules: 1-D operands are vectors, batch dims broadcast.

    Shapes:  (*B1, M, K) @ (*B2, K, N) -> (broadcast(B1, B2), M, N); (K,) @ (K,) -> ().
    Dtypes:  equal dtypes (RuntimeError otherwise); under ``autocast`` (clgrad.amp) float16
             operands and result (products summed in float32), as PyTorch's. bfloat16: the
             float32 product of float32 copies, rounded once (ew.via_float32).
    Raises:  RuntimeError on a K mismatch or a 0-dim operand; ValueError if batch dims do not
             broadcast.
    """
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(f"matmul: expected Tensors, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    if a._storage.dtype is dtypes.bool_ or b._storage.dtype is dtypes.bool_:
        _no_bool("matmul", a, b)
    a, b = ew.autocast("matmul", a, b)
    return _matmul(a, b)


def _no_bool(op: str, a: Tensor, b: Tensor):
    """PyTorch's RuntimeError for bool operands: its matmul kernels (addmm, dot) have no
    Bool version ("addmm_impl_cpu_" not implemented for 'Bool')."""
    if a.dtype.is_bool or b.dtype.is_bool:
        raise RuntimeError(f"{op}: \"addmm\" not implemented for 'Bool' (cast the operands "
                           f"to a numeric dtype first)")


def _matmul(a: Tensor, b: Tensor) -> Tensor:
    """matmul without autocast (dot: not on autocast's list)."""
    same_device("matmul", a, b)
    if a.dtype is not b.dtype:
        raise RuntimeError(f"matmul: expected m1 and m2 to have the same dtype, but got: "
                           f"{a.dtype} != {b.dtype}")
    if a._storage.dtype is _BF16:  # summed in float32, rounded once (as PyTorch's)
        return ew.via_float32(_matmul, a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"matmul: both arguments need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b.ndim == 1 else b
    m, k = a2.shape[-2:]
    k2, n = b2.shape[-2:]
    if k != k2:
        raise RuntimeError(f"matmul: mat1 and mat2 shapes cannot be multiplied ({m}x{k} and "
                           f"{k2}x{n}); shapes {tuple(a.shape)} @ {tuple(b.shape)}")
    tf32 = _PRECISION[0] != "highest"  # (allow_tf32(), without its call: a hot path)
    if a.ndim == 2 and b.ndim == 2:  # no batch dims: no broadcast views, out is the root
        ae, be = a, b
        out = empty((m, n), a.dtype, a._storage.device)
        gemm(out, a, b, tf32=tf32)
    else:
        batch = layout.broadcast_shapes(a2.shape[:-2], b2.shape[:-2], op="matmul")
        ae = a2.expand(*batch, m, k)
        be = b2.expand(*batch, k, n)
        out = empty(batch + (m, n), a.dtype, a._storage.device)
        with no_grad():
            gemm(out, ae, be, tf32=tf32)
        if a.ndim == 1:
            out = out.squeeze(-2)
        if b.ndim == 1:
            out = out.squeeze(-1)
        out = Tensor(out._storage, out.shape, out._strides, out._offset)  # a root, not a view

    def backward(g):
        g2 = g
        if b.ndim == 1:  # first: for vector @ vector, g is 0-dim
            g2 = g2.unsqueeze(-1)
        if a.ndim == 1:
            g2 = g2.unsqueeze(-2)
        ga = gb = None
        if a.requires_grad:
            ga = ew.sum_to(matmul(g2, be.transpose(-1, -2)), a2.shape).reshape(a.shape)
        if b.requires_grad:
            if b2.ndim == 2 and a2.ndim > 2 and tuple(a2.shape) == tuple(ae.shape):
                # a matrix b under a batch of a: one GEMM over the batch folded into its
                # sum (float16: summed in float32 and rounded once, as PyTorch's, not each
                # batch's product rounded and the rounded products summed)
                gb = matmul(a2.reshape(-1, k).transpose(0, 1), g2.reshape(-1, n))
            else:
                gb = ew.sum_to(matmul(ae.transpose(-1, -2), g2), b2.shape)
            gb = gb.reshape(b.shape)
        return ga, gb
    return record("matmul", out, (a, b), backward, saved=[a, b], double=True)


def mm(a: Tensor, b: Tensor) -> Tensor:
    """(M, K) @ (K, N) -> (M, N). Raises RuntimeError for other ranks."""
    if a.ndim != 2 or b.ndim != 2:
        raise RuntimeError(f"mm: expected 2-D tensors, got {a.ndim}-D and {b.ndim}-D")
    return matmul(a, b)


def bmm(a: Tensor, b: Tensor) -> Tensor:
    """(B, M, K) @ (B, K, N) -> (B, M, N) without broadcasting."""
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0]:
        raise RuntimeError(f"bmm: expected 3-D tensors with equal batch, got "
                           f"{tuple(a.shape)} and {tuple(b.shape)}")
    return matmul(a, b)


def dot(a: Tensor, b: Tensor) -> Tensor:
    """Inner product of two 1-D tensors of equal length."""
    if a.ndim != 1 or b.ndim != 1 or a.shape[0] != b.shape[0]:
        raise RuntimeError(f"dot: expected 1-D tensors of equal size, got {tuple(a.shape)} and "
                           f"{tuple(b.shape)}")
    if a._storage.dtype is dtypes.bool_ or b._storage.dtype is dtypes.bool_:
        _no_bool("dot", a, b)
    return _matmul(a, b)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight.T + bias. Shapes: x (*, in), weight (out, in), bias (out,) -> (*, out).
    Under ``autocast`` (clgrad.amp) all three in float16, as PyTorch's.
    Raises RuntimeError for mismatched shapes or dtypes (a float64 input to float32 weights).
    Kernels: kernels/matmul.cl :: gemm (matmul's GEMM), then elementwise.cl :: add (the bias,
    in place); on a cached signature their recorded launches (see _FAST)."""
    x, weight, bias = ew.autocast("linear", x, weight, bias)
    dev = x._storage.device
    key = plan_key(_FAST, (x, weight, bias))
    fast = dev.plans.get(key)
    if (fast is not None and fast[2] is _TUNED.get(dev) and weight._storage.device is dev and
            (bias is None or bias._storage.device is dev)):
        plans, shape = fast[0], fast[1]
        out = Tensor._empty(shape, x._storage.dtype, dev)
        bufs = (x._storage.buffer, weight._storage.buffer, out._storage.buffer,
                None if bias is None else bias._storage.buffer)
        if plans.scratch:  # workspaces (a split GEMM's partial sums): allocated per call
            replay(dev, plans, bufs)
        else:  # (replay's loop, without its call)
            for plan, roles in plans:
                plan.run(dev, *map(bufs.__getitem__, roles))
        return record("linear", out, (x, weight, bias), _linear_backward(x, weight, bias),
                      saved=[x, weight], double=True)
    if weight.ndim != 2:
        raise RuntimeError(f"linear: expected weight of shape (out, in), got "
                           f"{tuple(weight.shape)}")
    if x.shape[-1:] != weight.shape[1:]:
        raise RuntimeError(f"linear: input has {x.shape[-1] if x.ndim else 0} features but "
                           f"weight expects {weight.shape[1]} (input {tuple(x.shape)}, weight "
                           f"{tuple(weight.shape)})")
    if x.dtype is not weight.dtype:
        raise RuntimeError(f"linear: expected input and weight of one dtype, got input "
                           f"{x.dtype} and weight {weight.dtype}: convert the input with "
                           f"input.to({weight.dtype}) (or the module with "
                           f".to({x.dtype}))")
    if x._storage.dtype is _BF16:  # the GEMM and the bias in float32, rounded once
        return ew.via_float32(linear, x, weight, bias)
    shape = x._shape[:-1] + weight._shape[:1]
    if weight._storage.device is not dev or bias is not None and (
            bias._storage.device is not dev or bias._storage.dtype is not x._storage.dtype or
            bias._shape != shape[-1:]):
        with no_grad():  # other devices (matmul's and add's checks), a promoting or a
            out = matmul(x, weight.t())  # broadcasting bias: matmul, then add
            if bias is not None:
                out = ew.add(out, bias)
        return record("linear", out, (x, weight, bias), _linear_backward(x, weight, bias),
                      saved=[x, weight], double=True)
    out = empty(shape, x.dtype, dev)
    bufs = (x._storage.buffer, weight._storage.buffer, out._storage.buffer,
            None if bias is None else bias._storage.buffer)
    plans = record_launches(dev, lambda: _linear_into(out, x, weight, bias), bufs,
                            scratch=True)
    if plans is not None:
        dev.keep_plan(key, (plans, out._shape, _TUNED.get(dev)))
    return record("linear", out, (x, weight, bias), _linear_backward(x, weight, bias),
                  saved=[x, weight], double=True)


# linear's fast path: dev.plans[plan.key(_FAST, (x, weight, bias))] -> (the launches of
# _linear_into as (Plan, roles) from plan.record_launches, the output shape, the GEMM tiles
# they were planned with). The key fixes what the checks and the GEMM's plan read (layouts,
# dtypes, the settings epoch); the tiles are compared by identity (re-read: planned again);
# the devices are compared per call. A hit allocates the result, binds and enqueues.
_FAST = "linear"


def _linear_into(out: Tensor, x: Tensor, weight: Tensor, bias: Tensor | None):
    """out = x @ weight.T (+ bias) into the fresh contiguous ``out`` (x.shape[:-1] + (out,)):
    the GEMM matmul(x, weight.t()) makes (the same problem: the same bits), then add's kernel
    over (out, bias broadcast), written into out. float16 with a bias: the bias is copied
    into out first and the GEMM adds its float32 sum to it (beta = 1), rounding once."""
    wt = weight.t()
    tf32 = allow_tf32()
    fused = bias is not None and out._storage.dtype is dtypes.float16
    beta = 0.0
    with no_grad():
        if fused:  # float16: the bias joins the GEMM's float32 sum (C = acc + 1 * bias, then
            # one rounding, PyTorch's epilogue), not rounded, added and rounded again
            shp, st, off = layout.expand(bias._shape, bias._strides, bias._offset, out._shape)
            copy_raw(out, Tensor(bias._storage, shp, st, off))
            beta = 1.0
        if x.ndim == 2:
            gemm(out, x, wt, beta=beta, tf32=tf32)
        elif x.ndim == 1:  # matmul's (1, in) @ (in, out) into a (1, out) result
            n = weight._shape[0]
            gemm(Tensor(out._storage, (1, n), (n, 1), 0), x.unsqueeze(0), wt, beta=beta,
                 tf32=tf32)
        else:
            *batch, m, k = x._shape
            gemm(out, x.expand(*batch, m, k), wt.expand(*batch, k, weight._shape[0]),
                 beta=beta, tf32=tf32)
        if bias is not None and not fused:
            shp, st, off = layout.expand(bias._shape, bias._strides, bias._offset, out._shape)
            launch_1d("elementwise.cl", "add", defines_of(out._storage.dtype), out,
                      (out, Tensor(bias._storage, shp, st, off)))


def _linear_backward(x: Tensor, weight: Tensor, bias: Tensor | None):
    """linear's backward closure. The weight gradient is computed as g^T @ x, already in
    weight's (out, in) layout (through matmul's node on weight.t() it came out as x^T @ g,
    (in, out), and was then copied transposed into a contiguous .grad: for AlexNet's fc6
    (4096 x 9216) that strided copy took longer than the GEMMs)."""
    def backward(g):
        gx = gw = gb = None
        if x.requires_grad:
            gx = matmul(g, weight)
        if weight.requires_grad:
            g2 = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])
            x2 = x if x.ndim == 2 else x.reshape(-1, x.shape[-1])
            gw = matmul(g2.t(), x2)
        if bias is not None and bias.requires_grad:
            gb = ew.sum_to(g, bias.shape)
        return gx, gw, gb
    return backward
