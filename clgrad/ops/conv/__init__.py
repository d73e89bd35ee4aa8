"""Convolutions (PyTorch's ``conv2d``, ``conv_transpose2d``, ``conv1d``, ``conv_transpose1d``):
one shared op over a batch of groups, its kernel families and its algorithm choice, a module
each, from the bottom:

  problem.py     the problem of kernels/conv.h (``Problem``, ``Tiles``, ``Plan``, views),
                 conv2d's argument checks and the problems of its passes (stride phases)
  algorithms.py  the CPU algorithms (and any device's): implicit GEMM, depthwise, direct,
                 im2col, pointwise, blocked: per algorithm a planner beside its launchers
  gpu.py         the GPU algorithms (depthwise_gpu, igemm_gpu) and 'auto''s measured choice
  mma.py         igemm_mma: float16 forward and input gradient as one implicit GEMM on
                 NVIDIA's tensor cores (inline PTX; an emulated build for the tests)
  winograd.py    Winograd F(2x2, 3x3) and F(4x4, 3x3): 3 x 3 stride-1 forward and input
                 gradient, F(3x3, 2x2) and F(3x3, 4x4) the weight gradient, F(5x5, 2x2)
                 5 x 5 ones' (kernels/conv_winograd.cl + matmul.gemm)
  choice.py      the algorithm choice per pass and problem, the dispatch over both KERNELS
                 tables, the input-gradient pass
  op.py          ``conv2d``: checks, forward, backward, fast paths (the module doc tells the
                 algorithms)
  transpose.py   ``conv_transpose2d`` (conv2d's input-gradient pass), ``conv1d``,
                 ``conv_transpose1d``
  fold.py        ``unfold`` and ``fold`` (F.unfold, F.fold: im2col and col2im over the im2col
                 algorithm's kernels; imported here, as it registers unfold for conv2d's
                 create_graph path, but not re-exported: the op table imports the module)
"""
from clgrad.ops.conv import fold as _fold  # noqa: F401 (registers unfold with op.py)
from clgrad.ops.conv.op import conv2d
from clgrad.ops.conv.transpose import conv1d, conv_transpose1d, conv_transpose2d

__all__ = ["conv2d", "conv_transpose2d", "conv1d", "conv_transpose1d"]
