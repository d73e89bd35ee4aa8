"""Spatial transformers: affine_grid (the sampling grid of a batch of affine maps) and
grid_sample (bilinear or nearest sampling of an input at grid points, with zeros, border or
reflection padding), PyTorch's semantics (aten/src/ATen/native/GridSampler.h).

grid_sample inputs: (N, C, H, W) and a (N, OH, OW, 2) grid, any strided views; the output is new
and contiguous. affine_grid is a matmul of a constant base grid with theta, so its gradient is
matmul's.
Kernels: kernels/grid_sample.cl :: grid_fwd/grid_bwd (one work item per grid point, looping
over channels; the input gradient is a scatter-add with atomics, the grid gradient a write).
"""
from __future__ import annotations

import warnings

import numpy as np

from clgrad import backends, capture as _capture, dtypes
from clgrad.autograd import record
from clgrad.autograd.graph import recomputed
from clgrad.ops import elementwise as ew
from clgrad.kernel_structs import UGEOM_T, longs
from clgrad.ops._util import launch_items, empty, view_arg, zeros
from clgrad.ops.index import gather
from clgrad.ops.matmul import matmul
from clgrad.ops.pool import _view4
from clgrad.runtime import pack
from clgrad.tensor import Tensor

__all__ = ["grid_sample", "affine_grid"]

_FILE = "grid_sample.cl"
_MODES = {"bilinear": 0, "nearest": 1}
_PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the "
                  "old behavior is desired. See the documentation of grid_sample for details.")


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` at the normalised points of ``grid`` (PyTorch's F.grid_sample).

    grid[n, y, x] = (u, v) in [-1, 1] addresses input[n, :] at pixel column
    ((u + 1) W - 1) / 2 and row ((v + 1) H - 1) / 2, or with ``align_corners`` (u + 1)(W - 1) / 2
    and (v + 1)(H - 1) / 2 (-1 and 1 the centres of the corner pixels). Points outside the
    input read 0 ('zeros'), the nearest edge pixel ('border') or the input mirrored at its
    edges ('reflection'); 'bilinear' weighs the 4 neighbours, 'nearest' rounds half to even.
    A NaN or infinite grid coordinate gives PyTorch's CPU results: NaN with 'bilinear' and
    'zeros' (0 with 'nearest'); 'border' and 'reflection' clip it into the input (NaN to the
    first pixel, an infinity with 'border' to the edge it points at).
    Shapes:  input (N, C, H, W), grid (N, OH, OW, 2) -> (N, C, OH, OW)
    Dtypes:  float32 or float64, the same for both
    Grad:    input (a scatter-add: the summation order of overlapping points may vary between
             runs, so backward raises RuntimeError under use_deterministic_algorithms(True),
             or warns with warn_only, as PyTorch's CUDA kernel) and grid (0 for 'nearest', as
             PyTorch). Differentiable again (create_graph: the sampling recomputed of
             recorded ops, _sample_recorded, and differentiated; the kernel's derivatives,
             0 at and beyond the border, NaN coordinates as the kernel's).
    Raises:  ValueError for an unknown mode or padding_mode; NotImplementedError for
             'bicubic' and 5-D (volumetric) inputs; RuntimeError for mismatched shapes,
             dtypes or devices (PyTorch's grid_sampler() messages); TypeError for other dtypes.
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in _PADDINGS:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if mode == "bicubic":
        raise NotImplementedError("grid_sample: mode 'bicubic' is not supported by clgrad "
                                  "(use 'bilinear' or 'nearest')")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=3)  # past the faces' argument check
        align_corners = False
    xs, gs = list(input.shape), list(grid.shape)
    if input.ndim == 5 and grid.ndim == 5:
        raise NotImplementedError("grid_sample: 5-D (volumetric) inputs are not supported by "
                                  "clgrad, only (N, C, H, W) inputs with (N, OH, OW, 2) grids")
    if input.ndim != 4 or grid.ndim != 4:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {xs} and grid with sizes "
                           f"{gs}")
    if xs[0] != gs[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {xs} and grid with sizes {gs}")
    if gs[3] != 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size 2 in last dimension, "
                           f"but got grid with sizes {gs}")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but "
                           f"input has {input.dtype} and grid has {grid.dtype}")
    if input.dtype is dtypes.bfloat16:  # in float32 on float32 copies, rounded once
        return ew.via_float32(grid_sample, input, grid, mode, padding_mode, align_corners)
    if input.dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"grid_sample: expected float32 or float64 input and grid, got "
                        f"{input.dtype}")
    if input._storage.device is not grid._storage.device:
        raise RuntimeError(f"grid_sampler(): expected input and grid to be on same device, "
                           f"but input is on {input.device} and grid is on {grid.device}")
    for d in (2, 3):
        if xs[d] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {xs} with dimension {d} being "
                               f"empty")
    n, c, h, w = xs
    oh, ow = gs[1], gs[2]
    geom = pack((n, c, h, w, oh, ow), longs(UGEOM_T))
    flags = (np.int32(_MODES[mode]), np.int32(_PADDINGS[padding_mode]),
             np.int32(bool(align_corners)))
    dev = input._storage.device
    out = empty((n, c, oh, ow), input.dtype, dev)
    launch_items(_FILE, "grid_fwd", input, n * oh * ow, geom, out._storage.buffer,
                 input._storage.buffer, _view4(input), grid._storage.buffer, view_arg(grid),
                 *flags)
    want = (input.requires_grad, grid.requires_grad)

    def backward(gy):
        if want[0]:
            _check_deterministic()
        gx = zeros(tuple(xs), input.dtype, dev) if want[0] else None
        gg = empty(tuple(gs), grid.dtype, dev) if want[1] else None
        launch_items(_FILE, "grid_bwd", input, n * oh * ow, geom,
                     (gx if want[0] else gy)._storage.buffer,  # gy: an unwritten placeholder
                     (gg if want[1] else gy)._storage.buffer, gy._storage.buffer, _view4(gy),
                     input._storage.buffer, _view4(input), grid._storage.buffer, view_arg(grid),
                     *flags, np.int32(want[0]), np.int32(want[1]))
        return gx, gg
    return record("grid_sample", out, (input, grid), backward, saved=[input, grid],
                  double=(lambda g, node: _double(g, input, grid, mode, padding_mode,
                                                  bool(align_corners)), _LINK_BOTH, False))


# Node.double links (autograd.graph._linked): PyTorch's grid_sampler_2d_backward reads input
# and grid, so the create_graph gradients require grad; differentiated again, they give no
# gradient (None, PyTorch's undefined one) along those links
_LINK_BOTH = (0, 1)


def _double(g, input, grid, mode, padding, align):
    """grid_sample's gradients with a graph (create_graph): the sampling recomputed by
    _sample_recorded and differentiated; 'nearest' gives grid a recorded zero gradient (the
    kernel's 0, still depending on g as PyTorch's)."""
    gx, gg = recomputed(lambda x, gr: _sample_recorded(x, gr, mode, padding, align),
                        (input, grid))(g, None)
    if gg is None and grid.requires_grad:
        gg = ew.record_zero_grad("grid_sample_backward",
                                 zeros(tuple(grid.shape), grid.dtype, grid._storage.device), (g,))
    return gx, gg


def _sample_recorded(x: Tensor, grid: Tensor, mode: str, padding: str, align: bool) -> Tensor:
    """grid_sample of recorded ops (its create_graph path): the source coordinates of the
    grid (kernels/grid_sample.cl's source(): unnormalize, reflect, clip, with the kernel's
    derivatives: the fold's sign, 0 at and beyond the border), the pixels' indices and
    masks on the host from their values, the neighbours read by a gather."""
    n, c, h, w = x.shape
    p = grid.shape[1] * grid.shape[2]
    ix = _source(grid[..., 0], w, padding, align)
    iy = _source(grid[..., 1], h, padding, align)
    flat = x.reshape(n, c, h * w)

    def read(yy, xx):  # x at integer pixels (host arrays (N, OH, OW)), 0 outside, (N, C, P)
        ok = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
        at = np.where(ok, np.clip(yy, 0, h - 1) * w + np.clip(xx, 0, w - 1), 0)
        idx = grid.new_tensor(at.reshape(n, 1, p), dtype=dtypes.int64).expand(n, c, p)
        # (a where, not a product with the mask: a NaN weight then reaches no input pixel
        # outside, as the kernel's, and still makes the output and the grid's gradient NaN)
        ok = grid.new_tensor(ok.reshape(n, 1, p), dtype=dtypes.bool_)
        return ew.where(ok, gather(flat, 2, idx), 0.0)
    hx, hy = ix.detach().numpy(), iy.detach().numpy()
    with np.errstate(invalid="ignore"):
        if mode == "nearest":
            out = read(_pixel(np.rint(hy)), _pixel(np.rint(hx)))
            return out.reshape(n, c, grid.shape[1], grid.shape[2])
        fx, fy = np.floor(hx), np.floor(hy)
    x0, y0 = _pixel(fx), _pixel(fy)
    wx = ew.sub(ix, grid.new_tensor(fx)).reshape(n, 1, p)  # the weights of x0 + 1, y0 + 1
    wy = ew.sub(iy, grid.new_tensor(fy)).reshape(n, 1, p)
    ex, ey = ew.sub(1.0, wx), ew.sub(1.0, wy)
    out = ew.add(ew.add(ew.mul(read(y0, x0), ew.mul(ex, ey)),
                        ew.mul(read(y0, x0 + 1), ew.mul(wx, ey))),
                 ew.add(ew.mul(read(y0 + 1, x0), ew.mul(ex, wy)),
                        ew.mul(read(y0 + 1, x0 + 1), ew.mul(wx, wy))))
    return out.reshape(n, c, grid.shape[1], grid.shape[2])


def _pixel(v: np.ndarray) -> np.ndarray:
    """Whole-valued coordinates as int64 pixels, -100 (outside) for NaN, infinite or huge
    ones (the kernel's pixel())."""
    ok = np.abs(v) <= 2147483647
    return np.where(ok, np.where(ok, v, 0), -100).astype(np.int64)


def _source(coord: Tensor, size: int, padding: str, align: bool) -> Tensor:
    """The pixel coordinate of normalised ``coord`` along an axis of ``size`` pixels with
    ``padding``, of recorded ops (the kernel's source(), its derivatives included)."""
    if align:
        c = ew.mul(ew.add(coord, 1.0), (size - 1) / 2)
    else:
        c = ew.div(ew.sub(ew.mul(ew.add(coord, 1.0), float(size)), 1.0), 2.0)
    if padding == "reflection":
        lo, span = (0.0, 2.0 * (size - 1)) if align else (-0.5, 2.0 * size)
        if span == 0:  # one pixel: the kernel's 0 (its derivative 0)
            return zeros(tuple(c.shape), c.dtype, c._storage.device)
        d = ew.sub(c, lo)
        a = ew.abs(d)
        folds = ew.mul(ew.floor(ew.div(a.detach(), span)), span)  # (constant)
        extra = ew.sub(a, folds)
        reflected = ew.sub(span, extra)
        c = ew.add(ew.where(ew.gt(extra.detach(), reflected.detach()), reflected, extra), lo)
    if padding != "zeros":  # clip to [0, size - 1]: NaN to 0, derivative 0 at the bounds
        c = ew.where(ew.gt(c, 0.0), ew.where(ew.lt(c, size - 1.0), c, size - 1.0), 0.0)
    return c


def _check_deterministic():
    """PyTorch's rule for an op without a deterministic implementation (its CUDA
    grid_sampler_2d_backward): raise under use_deterministic_algorithms(True), warn with
    warn_only=True. The input gradient's atomic adds sum in a varying order."""
    if not backends.determinism["deterministic"]:
        return
    msg = ("grid_sampler_2d_backward does not have a deterministic implementation, but you set "
           "'torch.use_deterministic_algorithms(True)'. You can turn off determinism just for "
           "this operation, or you can use the 'warn_only=True' option, if that's acceptable "
           "for your application.")
    if backends.determinism["warn_only"]:
        warnings.warn(msg, stacklevel=2)
    else:
        raise RuntimeError(msg)


def _base_axis(steps: int, align: bool) -> np.ndarray:
    """PyTorch's linspace_from_neg_one: the pixel centres' normalised coordinates."""
    if steps <= 1:
        return np.zeros(max(steps, 0))
    r = np.linspace(-1.0, 1.0, steps)
    return r if align else r * (steps - 1) / steps


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """The sampling grid of affine maps (PyTorch's F.affine_grid), for grid_sample.

    grid[n, y, x] = theta[n] @ (u_x, v_y, 1): u, v the normalised centres of the output pixels
    (see grid_sample; with align_corners -1 and 1 are the corner pixels' centres).
    Shapes:  theta (N, 2, 3), size (N, C, H, W) -> (N, H, W, 2); theta (N, 3, 4), size
             (N, C, D, H, W) -> (N, D, H, W, 3)
    Dtypes:  theta floating point; the grid has theta's dtype
    Grad:    theta (a matmul with the constant base grid).
    Raises:  ValueError for a non-floating theta, a theta shape that does not fit size, a
             batch size != size[0], non-positive sizes; NotImplementedError for sizes not 4-D
             or 5-D.
    """
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=3)  # past the faces' argument check
        align_corners = False
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if theta.dtype is dtypes.bfloat16:  # in float32, rounded once (dtype.np is its bits:
        return ew.via_float32(affine_grid, theta, size, align_corners)  # no base grid of it)
    size = tuple(int(s) for s in size)
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    k = len(size) - 2
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (k, k + 1):
        raise ValueError(f"Expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} for "
                         f"size {size}. Got {tuple(theta.shape)}.")
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise ValueError(f"affine_grid: expected theta's batch size {theta.shape[0]} to equal "
                         f"size[0], got size {size}")
    grid = matmul(_base_grid(theta, spatial, bool(align_corners)), theta.transpose(1, 2))
    return grid.reshape((size[0],) + spatial + (k,))         # from (N, prod(spatial), k)


def _base_grid(theta: Tensor, spatial: tuple, align: bool) -> Tensor:
    """The constant (1, prod(spatial), k + 1) rows (x, y(, z), 1) of the output pixels, kept on
    theta's device per (spatial, align, dtype): an upload is a host sync (13 ms of a 15 ms
    affine_grid + grid_sample step at 64x28x28 on the Intel CPU runtime)."""
    dev = theta._storage.device
    key = ("affine_grid_base", spatial, align, theta.dtype)
    base = dev.plans.get(key)
    if base is None:
        axes = [_base_axis(s, align) for s in reversed(spatial)]   # x, y (, z)
        mesh = np.meshgrid(*axes, indexing="ij")                    # dims (W, H(, D))
        rows = np.stack([m.transpose() for m in mesh] + [np.ones(spatial)], axis=-1)
        with _capture.paused():  # uploaded now, even in a capture (which runs nothing until
            base = dev.keep_plan(key, theta.new_tensor(  # its replay): later calls read it
                rows.reshape(1, -1, len(spatial) + 1).astype(theta.dtype.np)))
    return base
