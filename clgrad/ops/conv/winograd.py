"""Winograd convolution of conv2d (kernels/conv_winograd.cl; Lavin & Gray, "Fast Algorithms for
Convolutional Neural Networks", CVPR 2016): F(2x2, 3x3) and F(4x4, 3x3), for 3 x 3 kernels,
stride 1, dilation 1, any padding, any groups, float32 and float64; the forward pass and the
input gradient (the forward problem on the flipped weight view, kernels/conv.h), not the
weight gradient (its planner refuses: ``auto`` never measures it there, a forced 'winograd'
gives way to implicit as every restricted algorithm does; so do stride > 1, dilation > 1 and
other kernel sizes, in every pass).

A pass is 4 launches whatever the group count: the weight transform U = G g G^T into
U[alpha^2][G][O][C], the input transform V = B^T d B into V[alpha^2][G][C][tiles] (tiles =
N * ceil(oH/m) * ceil(oW/m), the zero padding handled in the gather), the alpha^2 * G GEMMs
M = U @ V in one batched clgrad.ops.matmul.gemm launch (never split along K: the launch count
does not depend on the shape), and the output transform Y = A^T M A (+ bias) written through
the output's strides (alpha = m + 2). Workspaces: alpha^2 * G * (O*C + C*tiles + O*tiles)
elements from the device allocator (OutOfMemoryError where they do not fit; they are not
chunked under ``backends.conv_workspace_limit``, which bounds im2col's), allocated per call,
so conv2d's recorded fast path does not take it (it keeps the general path).

Names (clgrad.backends.conv_algorithm): 'winograd:2' and 'winograd:4' pin the output tile
m; 'winograd' takes m = 4 where both output sides are at least 4, else 2. On GPUs ``auto``
measures 'winograd:2' and 'winograd:4' beside the other candidates (clgrad/ops/conv/gpu.py
CANDIDATES) on the forward and input-gradient problems they take.

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
"""
from __future__ import annotations

from clgrad.ops._util import defines_for, empty
from clgrad.ops.conv.algorithms import _bias_buffer
from clgrad.ops.conv.problem import Plan, Problem, cdiv, raw
from clgrad.ops.matmul import gemm

__all__ = ["KERNELS", "TILES", "ERROR_BOUND", "takes", "tile_side"]

TILES = (2, 4)  # output tile sides m: F(m x m, 3 x 3)
# float32, per tile side: the largest max|y - y64| / max|y64| a pass of the module doc's
# 64-channel 28 x 28 layer may show (tests/test_conv_winograd.py measured 4.0e-7 and 6.5e-6
# with its own output gradient): 2.5x and 3x those
ERROR_BOUND = {2: 1e-6, 4: 2e-5}
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


def _never(p: Problem, dt, dev):
    return None  # the weight gradient: no Winograd kernels


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
               x._storage.buffer, v._storage.buffer)
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


# algorithm: ((planner, forward launcher), (planner, weight-gradient launcher)), as
# algorithms.KERNELS; clgrad/ops/conv/choice.py merges it.
KERNELS = {f"winograd{f':{m}' if m else ''}": ((_plan, _launcher(m)), (_never, None))
           for m in (0, *TILES)}
