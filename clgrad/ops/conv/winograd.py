"""Winograd convolution of conv2d (kernels/conv_winograd.cl; Lavin & Gray, "Fast Algorithms for
Convolutional Neural Networks", CVPR 2016): F(2x2, 3x3) and F(4x4, 3x3), for 3 x 3 kernels,
stride 1, dilation 1, any padding, any groups, float32 and float64; the forward pass and the
input gradient (the forward problem on the flipped weight view, kernels/conv.h), and the
weight gradient with F(3x3, 2x2) and F(3x3, 4x4), and F(5x5, 2x2) for 5 x 5 kernels (below).
A forced 'winograd' gives way to implicit where it cannot run the problem (stride > 1,
dilation > 1, other kernel sizes), in every pass, as every restricted algorithm does.

A pass is 4 launches whatever the group count: the weight transform U = G g G^T into
U[alpha^2][G][O][C], the input transform V = B^T d B into V[alpha^2][G][C][tiles] (tiles =
N * ceil(oH/m) * ceil(oW/m), the zero padding handled in the gather), the alpha^2 * G GEMMs
M = U @ V in one batched clgrad.ops.matmul.gemm launch (never split along K: the launch count
does not depend on the shape), and the output transform Y = A^T M A (+ bias) written through
the output's strides (alpha = m + 2). Workspaces: alpha^2 * G * (O*C + C*tiles + O*tiles)
elements from the device allocator (OutOfMemoryError where they do not fit; they are not
chunked under ``backends.conv_workspace_limit``, which bounds im2col's), allocated per call,
so conv2d's recorded fast path does not take it (it keeps the general path).

The weight gradient dW[g,o,c] = sum over n and the m x m tiles e of dY of the 3 x 3
correlation of the alpha x alpha input tile d (the forward's, same origin) with e: F(3x3, m x m)
with the same points, whose matrices are the forward's transposed (kernels/conv_winograd.cl
derives them): dW = G^T [sum_t (A e A^T) .* (B^T d B)] G. 5 launches (6 with a bias): the
output-gradient transform E[alpha^2][G][O][ld] (wino_dy), the input transform
V[alpha^2][G][C][ld] (wino_input, the forward's kernel), one batched GEMM
P[s][a][g] (o x c) = E[a][g][slice s] @ V[a][g][slice s]^T over ``splits`` slices of the tiles
(``wgrad_slices``: at most WGRAD_MAX_K tiles deep, for accuracy; more slices to fill the
device; the rows padded with zero tiles to ld = splits x depth), the slices' sum
W[a][g][o][c] (reduce.sum_into), and the output transform wino_wgrad, which writes dW through
the weight gradient's view; the bias gradient is the row sum (reduce.sum_into, one launch) of
E at the point (1, 1), each tile's sum. Workspaces: alpha^2 * G * ((O + C) * ld + (splits +
1) * O * C) elements, from the device allocator (OutOfMemoryError where they do not fit),
allocated per call.

Names (clgrad.backends.conv_algorithm): 'winograd:2' and 'winograd:4' pin the output tile
m; 'winograd' takes m = 4 where both output sides are at least 4, else 2. On GPUs ``auto``
measures 'winograd:2' and 'winograd:4' beside the other candidates (clgrad/ops/conv/gpu.py
CANDIDATES) on the problems they take, in every pass.

Error (F(4x4, 3x3) loses precision: its transforms' entries reach 5, 8 and 1/24, and the GEMM
sums transformed values that cancel): max |y - y64| / max |y64| against a float64 reference,
measured in float32 on Intel's OpenCL CPU runtime for ResNet-like layers (C = O channels on
H x W maps, padding 1, batch 2, N(0, 1) inputs, He-initialised weights std sqrt(2 / (9 C)),
bias), forward / input gradient:

  C x H x W      F(2x2, 3x3)        F(4x4, 3x3)        implicit GEMM (for scale)
  16 x 28 x 28   1.9e-7 / 1.9e-7    3.8e-6 / 2.8e-6    9.4e-7 / 3.3e-7
  64 x 28 x 28   3.0e-7 / 3.6e-7    6.1e-6 / 6.3e-6    8.5e-7 / 9.3e-7
  64 x 56 x 56   3.4e-7 / 3.4e-7    7.6e-6 / 6.8e-6    9.2e-7 / 1.1e-6
  128 x 28 x 28  4.1e-7 / 4.2e-7    7.3e-6 / 7.1e-6    1.1e-6 / 1.3e-6
  256 x 14 x 14  5.5e-7 / 6.4e-7    1.1e-5 / 9.7e-6    1.9e-6 / 1.8e-6
  512 x 7 x 7    8.1e-7 / 9.7e-7    1.9e-5 / 1.8e-5    2.3e-6 / 2.7e-6

F(2x2) is as accurate as the direct sums; F(4x4) about 8x less, growing with C. float64:
below 1e-14 for both (16 channels: 7e-16 and 4e-15). ``ERROR_BOUND`` holds the 64-channel,
28 x 28 layer's errors times about 3 (tests/test_conv_winograd.py runs that layer).

Weight gradient, the same layers and device (N(0, 1) output gradient), max |dW - dW64| /
max |dW64| and the bias gradient's (bench/conv_winograd_error.py):

  C x H x W      F(3x3, 2x2)        F(3x3, 4x4)        implicit GEMM (for scale)
  16 x 28 x 28   7.5e-7 / 9.2e-8    4.1e-6 / 9.2e-8    1.6e-7 / 1.0e-7
  64 x 28 x 28   9.1e-7 / 7.9e-8    5.0e-6 / 7.5e-8    1.3e-7 / 1.2e-7
  64 x 56 x 56   8.3e-7 / 7.6e-8    1.1e-5 / 8.0e-8    1.6e-7 / 1.2e-7
  128 x 28 x 28  9.0e-7 / 8.0e-8    8.0e-6 / 6.7e-8    1.6e-7 / 1.3e-7
  256 x 14 x 14  5.6e-7 / 6.0e-8    3.9e-6 / 1.1e-7    1.2e-7 / 9.3e-8
  512 x 7 x 7    3.0e-7 / 7.0e-8    2.1e-6 / 6.7e-8    1.2e-7 / 8.9e-8

The implicit GEMM's weight gradient (partial sums over batch splits, vector lanes) is 5-8x
more accurate than F(3x3, 2x2), whose GEMM sums up to WGRAD_MAX_K transformed products in
sequence (one slice of all 1568 tiles of the 64 x 56 x 56 layer: 2.1e-6); F(3x3, 4x4) is
another 5-10x less accurate, as the forward's F(4x4, 3x3) (its output transform carries 1/24,
1/6). The GPU kernels sum longer runs: igemm_gpu 6.6e-7 and 6.7e-7 on the first two layers,
'implicit''s GPU kernels (kernels/conv_gemm_gpu.cl) 1.5e-6 on tests/test_conv_winograd.py's
64-channel layer, where F(3x3, 2x2) has 9.6e-7 (Intel's runtime running them).
float64: below 2e-14. ``WGRAD_ERROR_BOUND``: the 64-channel 28 x 28 layer's errors times
about 3.

5 x 5 kernels (AlexNet's conv2, issue 35's S2): the weight gradient F(5x5, 2x2) (2.8x fewer
multiplies than the direct sums; alpha = 6, the points of F(4x4, 3x3), the same kernels with
KS = 5), stride 1, dilation 1, 'winograd' and 'winograd:2' ('winograd:4' gives way); the
forward and input gradient give way to implicit. Error on conv2 (96 -> 256 channels, groups
2, 27 x 27, padding 2, batch 2, He weights): 2.0e-5 (tests/test_conv_winograd.py; 2.5e-5
with bench/conv_winograd_error.py's data) against implicit's 1.5e-7 (igemm_gpu 1.4e-6);
float64 4e-14. Most of it is the GEMM's sequential sums (a float64 accumulation of the same
float32 products: 4e-6; slices of 64 tiles: 6e-6, of 128: 1.2e-5), the rest the transforms
(the points +-1/2 instead of +-2: 1.6x worse in a NumPy model).
"""
from __future__ import annotations

import numpy as np

from clgrad.ops import matmul
from clgrad.ops._util import defines_for, empty
from clgrad.ops.conv.algorithms import _bias_buffer, _units, _up
from clgrad.ops.conv.problem import Plan, Problem, Tiles, cdiv, raw, v5
from clgrad.ops.matmul import gemm
from clgrad.ops.reduce import sum_into

__all__ = ["KERNELS", "TILES", "ERROR_BOUND", "WGRAD_ERROR_BOUND", "takes", "tile_side",
           "wgrad_slices", "wgrad_tile"]

TILES = (2, 4)  # output tile sides m: F(m x m, 3 x 3)
# float32, per tile side: the largest max|y - y64| / max|y64| a pass of the module doc's
# 64-channel 28 x 28 layer may show (tests/test_conv_winograd.py measured 4.0e-7 and 6.5e-6
# with its own output gradient): 2.5x and 3x those
ERROR_BOUND = {2: 1e-6, 4: 2e-5}
# the same for the weight and bias gradients per (tile side, kernel size): F(3x3, m x m) on that
# layer (measured there: 9.6e-7 and 5.1e-6), F(5x5, 2x2) on AlexNet's conv2 at batch 2
# (2.0e-5): about 3x
WGRAD_ERROR_BOUND = {(2, 3): 3e-6, (4, 3): 1.5e-5, (2, 5): 6e-5}
_WG = 64  # work items along the tiles (or input channels) per work-group
_INT_LIMIT = 1 << 31


def takes(p: Problem) -> bool:
    """Whether the Winograd kernels run p: a 3 x 3 kernel, stride 1, dilation 1 and no zero
    insertion (a strided layer's input gradient is not a stride-1 problem), fewer than 2^31
    F(2x2) tiles (the kernels index tiles with ints)."""
    return (p.kh == 3 and p.kw == 3 and p.sh == 1 and p.sw == 1 and p.dh == 1 and p.dw == 1
            and p.uh == 1 and p.uw == 1 and p.n * cdiv(p.oh, 2) * cdiv(p.ow, 2) < _INT_LIMIT)


def tile_side(p: Problem) -> int:
    """The output tile 'winograd' uses: 4 where both output sides are at least 4, else 2."""
    return 4 if min(p.oh, p.ow) >= 4 else 2


def _plan(p: Problem, dt, dev):
    return Plan() if takes(p) else None


# The weight gradient's GEMMs (o x c per transformed element and group) are small and deep
# (the tiles): their depth is cut into `splits` slices of equal depth, a batch dim of the one
# GEMM launch. A slice sums at most WGRAD_MAX_K tiles
# (accuracy: the GEMM sums its depth in sequence, and the error of F(3x3, 2x2) grows with it:
# on the module doc's 64 x 56 x 56 layer 2.1e-6 with one slice of 1568 tiles, 6.2e-7 with 6
# of 262, 4.2e-7 with 25 of 64), and more slices are cut, down to WGRAD_MIN_K tiles, until
# about WGRAD_FILL work-groups of 64 x 64 outputs per compute unit run; a slice's depth is a
# multiple of _K_STEP (whole GEMM tiles along K, aligned 4-vectors). The slices' partial sums
# are summed by reduce.sum_into (reduce.cl's reduce_cols on GPUs: coalesced, Kahan-
# compensated), with one slice too, so the launch count is fixed: 5, 6 with a bias.
WGRAD_MAX_K = 512
WGRAD_MIN_K = 128
WGRAD_FILL = 4
_K_STEP = 64


def wgrad_tile(m: int, p: Problem):
    """The output-gradient tile side of the weight gradient for algorithm tile m (0:
    'winograd'), or None where no kernel takes p: F(3x3, m x m) for 3 x 3 kernels (m as the
    forward's), F(5x5, 2x2) for 5 x 5 ones (m = 2 only); stride 1, dilation 1, as ``takes``."""
    if p.kh == p.kw == 3 and takes(p):
        return m or tile_side(p)
    if p.kh == p.kw == 5 and m in (0, 2) and takes(p._replace(kh=3, kw=3)):
        return 2
    return None


def wgrad_slices(m: int, p: Problem, dev) -> tuple:
    """(splits, depth of a slice) of the weight gradient's GEMM with dY tiles of m x m."""
    tiles = p.n * cdiv(p.oh, m) * cdiv(p.ow, m)
    wgs = (m + p.kh - 1) ** 2 * p.g * cdiv(p.o, 64) * cdiv(p.c, 64)
    splits = max(1, cdiv(tiles, WGRAD_MAX_K),
                 min(cdiv(WGRAD_FILL * _units(dev), wgs), tiles // WGRAD_MIN_K))
    return splits, _up(cdiv(tiles, splits), _K_STEP)


def _wgrad_planner(m):
    def plan(p: Problem, dt, dev):
        side = wgrad_tile(m, p)
        if side is None:
            return None
        splits, depth = wgrad_slices(side, p, dev)
        return Plan(Tiles(split=splits)) if splits * depth < _INT_LIMIT else None
    return plan


def _gemm_tiles(p: Problem, dev):
    """The GEMM's tiles on GPUs (GEMM_TILED): the large ones where they divide o and c, else
    the small ones; None on CPUs (gemm's own)."""
    cfg = matmul.tiles(dev)
    if "large" not in cfg:
        return None
    big = cfg["large"]
    return big if p.o % big["TSM"] == 0 and p.c % big["TSN"] == 0 else cfg["small"]


def _run_wgrad(m: int, p: Problem, plan: Plan, x, g4, gw, gb):
    """The weight (and bias) gradient with F(k x k, m x m), k = p.kh: x the input, g4 the
    output gradient (both 4-D views), gw and gb (or None) the gradients' views."""
    dev, dt = x._storage.device, x.dtype
    alpha, g, o, c, splits = m + p.kh - 1, p.g, p.o, p.c, plan.tiles.split
    a2 = alpha * alpha
    depth = _up(cdiv(p.n * cdiv(p.oh, m) * cdiv(p.ow, m), splits), _K_STEP)
    ld = splits * depth
    so, sc, skh, skw = gw._strides
    pk = p._replace(y=v5(g4, g), k=(gw._offset, so * o, so, sc, skh, skw)).pack()
    d = dict(defines_for(dt), WM=m, KS=p.kh)
    e = empty((a2, g, o, ld), dt, dev)
    v = empty((a2, g, c, ld), dt, dev)
    part = empty((splits, a2, g, o, c), dt, dev)
    w = empty((a2, g, o, c), dt, dev)
    dev.launch(dev.kernel("conv_winograd.cl", "wino_dy", d), (ld, o, g), (_WG, 1, 1), pk,
               np.int64(ld), g4._storage.buffer, e._storage.buffer)
    dev.launch(dev.kernel("conv_winograd.cl", "wino_input", d), (ld, c, g), (_WG, 1, 1), pk,
               np.int64(ld), x._storage.buffer, v._storage.buffer)
    gemm(raw(part, (splits, a2 * g, o, c), (a2 * g * o * c, o * c, c, 1), 0),
         raw(e, (splits, a2 * g, o, depth), (depth, o * ld, ld, 1), 0),
         raw(v, (splits, a2 * g, depth, c), (depth, c * ld, 1, ld), 0),
         tiles_override=_gemm_tiles(p, dev), split=False)
    sum_into(w, part, 0)  # (with one slice too: the launch count does not depend on it)
    dev.launch(dev.kernel("conv_winograd.cl", "wino_wgrad", d), (c, o, g), (min(_WG, c), 1, 1),
               pk, w._storage.buffer, gw._storage.buffer)
    if gb is not None:  # E at the point (1, 1) is each dY tile's sum
        bs = gb._strides[0]
        sum_into(raw(gb, (g, o), (o * bs, bs), gb._offset),
                 raw(e, (g, o, ld), (o * ld, ld, 1), (alpha + 1) * g * o * ld), 2)


def _run(m: int, p: Problem, x, w, y, bias):
    """One pass with F(m x m, 3 x 3): (x, w, y, bias) as every forward launcher takes them."""
    dev, dt = x._storage.device, x.dtype
    a2, g, o, c = (m + 2) ** 2, p.g, p.o, p.c
    tiles = p.n * cdiv(p.oh, m) * cdiv(p.ow, m)
    d = dict(defines_for(dt), WM=m)
    u = empty((a2, g, o, c), dt, dev)
    v = empty((a2, g, c, tiles), dt, dev)
    mm = empty((a2, g, o, tiles), dt, dev)
    pk = p.pack()
    dev.launch(dev.kernel("conv_winograd.cl", "wino_weight", d), (c, o, g), (min(_WG, c), 1, 1),
               pk, w._storage.buffer, u._storage.buffer)
    dev.launch(dev.kernel("conv_winograd.cl", "wino_input", d), (tiles, c, g), (_WG, 1, 1), pk,
               np.int64(tiles), x._storage.buffer, v._storage.buffer)
    gemm(raw(mm, (a2 * g, o, tiles), (o * tiles, tiles, 1), 0),
         raw(u, (a2 * g, o, c), (o * c, c, 1), 0),
         raw(v, (a2 * g, c, tiles), (c * tiles, tiles, 1), 0), split=False)
    dev.launch(dev.kernel("conv_winograd.cl", "wino_output", d), (tiles, o, g), (_WG, 1, 1), pk,
               mm._storage.buffer, y._storage.buffer, _bias_buffer(bias, y))


def _launcher(m):
    def launch(p: Problem, plan: Plan, x, w, y, bias):
        _run(m or tile_side(p), p, x, w, y, bias)
    launch.__name__ = f"_wino{m or ''}_fwd"
    return launch


def _wgrad_launcher(m):
    def launch(p: Problem, plan: Plan, x, g4, gw, gb):
        _run_wgrad(wgrad_tile(m, p), p, plan, x, g4, gw, gb)
    launch.__name__ = f"_wino{m or ''}_wgrad"
    return launch


# algorithm: ((planner, forward launcher), (planner, weight-gradient launcher)), as
# algorithms.KERNELS; clgrad/ops/conv/choice.py merges it.
KERNELS = {f"winograd{f':{m}' if m else ''}": ((_plan, _launcher(m)),
                                               (_wgrad_planner(m), _wgrad_launcher(m)))
           for m in (0, *TILES)}
