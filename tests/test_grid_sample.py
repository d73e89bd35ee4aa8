"""grid_sample and affine_grid against a NumPy float64 port of PyTorch's formulas
(GridSampler.h: unnormalize, clip, reflect, bilinear and nearest weights), hand-computed tiny
cases, float64 gradcheck, and PyTorch itself where installed; inputs and grids are
non-contiguous views."""
import itertools

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck
from strided import strided

RNG = np.random.default_rng(33)
COMBOS = list(itertools.product(["bilinear", "nearest"], ["zeros", "border", "reflection"],
                                [False, True]))


def np_source(coord, size, padding, align):
    c = (coord + 1) / 2 * (size - 1) if align else ((coord + 1) * size - 1) / 2
    if padding == "reflection":
        lo2, hi2 = (0, 2 * (size - 1)) if align else (-1, 2 * size - 1)
        if lo2 == hi2:
            c = np.zeros_like(c)
        else:
            lo, span = lo2 / 2, (hi2 - lo2) / 2
            d = np.abs(c - lo)
            extra, flips = np.fmod(d, span), np.floor(d / span)
            c = np.where(flips % 2 == 0, extra + lo, span - extra + lo)
    if padding in ("border", "reflection"):
        c = np.clip(c, 0, size - 1)
    return c


def np_grid_sample(x, grid, mode, padding, align):
    n, ch, h, w = x.shape
    ix = np_source(grid[..., 0], w, padding, align)
    iy = np_source(grid[..., 1], h, padding, align)
    out = np.zeros((n, ch) + grid.shape[1:3])

    def pix(b, yy, xx):
        ok = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
        return np.where(ok, x[b][:, np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)], 0)
    for b in range(n):
        if mode == "nearest":
            out[b] = pix(b, np.rint(iy[b]).astype(int), np.rint(ix[b]).astype(int))
            continue
        x0, y0 = np.floor(ix[b]).astype(int), np.floor(iy[b]).astype(int)
        tx, ty = ix[b] - x0, iy[b] - y0
        out[b] = (pix(b, y0, x0) * (1 - tx) * (1 - ty) + pix(b, y0, x0 + 1) * tx * (1 - ty) +
                  pix(b, y0 + 1, x0) * (1 - tx) * ty + pix(b, y0 + 1, x0 + 1) * tx * ty)
    return out


def grid_values(shape):
    """Points spread over [-1.6, 1.6] (outside the input too), kept off the pixel-boundary
    kinks so finite differences are smooth."""
    return RNG.uniform(-1.6, 1.6, shape)


@pytest.mark.parametrize("mode,padding,align", COMBOS)
def test_values_match_numpy(mode, padding, align):
    x = RNG.standard_normal((2, 3, 4, 5))
    g = grid_values((2, 3, 6, 2))
    got = F.grid_sample(strided(x), strided(g), mode=mode, padding_mode=padding,
                        align_corners=align)
    np.testing.assert_allclose(got.numpy(), np_grid_sample(x, g, mode, padding, align),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode,padding,align", COMBOS)
def test_gradcheck(mode, padding, align):
    x = clgrad.tensor(RNG.standard_normal((1, 2, 3, 4)), requires_grad=True)
    g = clgrad.tensor(grid_values((1, 2, 3, 2)), requires_grad=True)
    assert gradcheck(lambda a, b: F.grid_sample(a.transpose(2, 3), b, mode=mode,
                                                padding_mode=padding, align_corners=align),
                     [x, g])


def test_tiny_by_hand():
    x = clgrad.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    pts = clgrad.tensor([[[[0.0, 0.0], [-1.0, -1.0], [1.0, -1.0]]]])
    want = {("zeros", False): [2.5, 0.25, 0.5], ("zeros", True): [2.5, 1.0, 2.0],
            ("border", False): [2.5, 1.0, 2.0], ("reflection", False): [2.5, 1.0, 2.0],
            ("reflection", True): [2.5, 1.0, 2.0]}
    for (padding, align), vals in want.items():
        got = F.grid_sample(x, pts, padding_mode=padding, align_corners=align)
        np.testing.assert_allclose(got.numpy().ravel(), vals, rtol=1e-6)
    near = F.grid_sample(x, clgrad.tensor([[[[0.1, -0.6], [0.0, 0.0]]]]), mode="nearest",
                         align_corners=False)
    # (0.1, -0.6) -> pixel (0.6, -0.1) -> column 1, row 0; (0, 0) -> (0.5, 0.5): half to even
    np.testing.assert_array_equal(near.numpy().ravel(), [2.0, 1.0])
    g = clgrad.tensor([[[[0.0, 0.0]]]], requires_grad=True)
    xs = clgrad.tensor([[[[1.0, 2.0], [3.0, 4.0]]]], requires_grad=True)
    F.grid_sample(xs, g, align_corners=True).sum().backward()
    np.testing.assert_allclose(xs.grad.numpy().ravel(), [0.25] * 4)
    # d/du: (2 - 1 + 4 - 3) / 2 per pixel * (W - 1) / 2; d/dv: (3 - 1 + 4 - 2) / 2 * 1 / 2
    np.testing.assert_allclose(g.grad.numpy().ravel(), [0.5, 1.0])


def test_affine_grid_by_hand_and_numpy():
    eye = clgrad.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    g = F.affine_grid(eye, (1, 1, 2, 3), align_corners=False).numpy()
    np.testing.assert_allclose(g[0, :, :, 0], [[-2 / 3, 0, 2 / 3]] * 2, rtol=1e-6)
    np.testing.assert_allclose(g[0, :, :, 1], [[-0.5] * 3, [0.5] * 3], rtol=1e-6)
    g = F.affine_grid(eye, (1, 1, 2, 3), align_corners=True).numpy()
    np.testing.assert_allclose(g[0, :, :, 0], [[-1, 0, 1]] * 2)
    np.testing.assert_allclose(g[0, :, :, 1], [[-1] * 3, [1] * 3])
    theta = RNG.standard_normal((2, 2, 3))
    got = F.affine_grid(strided(theta), (2, 5, 3, 4), align_corners=False).numpy()
    xs, ys = (np.linspace(-1, 1, 4) * 3 / 4), (np.linspace(-1, 1, 3) * 2 / 3)
    base = np.stack(np.broadcast_arrays(xs[None, :], ys[:, None], 1.0), -1)
    np.testing.assert_allclose(got, np.einsum("hwk,njk->nhwj", base, theta), rtol=1e-12)
    theta3 = clgrad.tensor(RNG.standard_normal((1, 3, 4)), requires_grad=True)
    assert tuple(F.affine_grid(theta3, (1, 1, 2, 3, 4), align_corners=True).shape) == \
        (1, 2, 3, 4, 3)
    assert gradcheck(lambda t: F.affine_grid(t, (1, 1, 2, 3, 4), align_corners=False), [theta3])


def test_affine_grid_base_cache_keys():
    """The base grid is kept per (sizes, align_corners, dtype): changing each gives the grid
    of the new arguments, not a kept one."""
    theta = RNG.standard_normal((1, 2, 3))

    def ref(h, w, align):
        xs, ys = np.linspace(-1, 1, w), np.linspace(-1, 1, h)
        if not align:
            xs, ys = xs * (w - 1) / w, ys * (h - 1) / h
        base = np.stack(np.broadcast_arrays(xs[None, :], ys[:, None], 1.0), -1)
        return np.einsum("hwk,njk->nhwj", base, theta)
    for h, w, align, dt in ((2, 3, False, clgrad.float64), (2, 3, True, clgrad.float64),
                            (3, 3, True, clgrad.float64), (3, 2, True, clgrad.float64),
                            (3, 2, True, clgrad.float32), (2, 3, False, clgrad.float64)):
        got = F.affine_grid(clgrad.tensor(theta, dtype=dt), (1, 1, h, w), align_corners=align)
        assert got.dtype == dt
        np.testing.assert_allclose(got.numpy(), ref(h, w, align), rtol=1e-6, atol=1e-7)


def test_affine_grid_base_first_made_inside_a_capture():
    """The base grid first made inside a CUDAGraph capture: a capture runs nothing until its
    replay, so a grid uploaded there and kept for later calls held garbage for the eager calls
    after it (silently wrong grids). The eager call after the capture and the graph's replays
    both give the grid (NumPy: base @ theta^T; PyTorch too when installed)."""
    theta_n = RNG.standard_normal((1, 2, 3)).astype(np.float32)
    size = (1, 1, 5, 7)  # sizes no other test uses: the grid is made in the capture
    xs, ys = np.linspace(-1, 1, 7) * 6 / 7, np.linspace(-1, 1, 5) * 4 / 5
    base = np.stack(np.broadcast_arrays(xs[None, :], ys[:, None], 1.0), -1)
    theta = clgrad.tensor(theta_n)
    g = clgrad.cuda.CUDAGraph()
    with clgrad.cuda.graph(g):
        captured = F.affine_grid(theta, size, align_corners=False)
    eager = F.affine_grid(clgrad.tensor(theta_n), size, align_corners=False)
    np.testing.assert_allclose(eager.numpy(), np.einsum("hwk,njk->nhwj", base, theta_n),
                               rtol=1e-5, atol=1e-6)
    g.replay()
    np.testing.assert_allclose(captured.numpy(), eager.numpy(), rtol=1e-6, atol=1e-7)
    torch = pytest.importorskip("torch")
    want = torch.nn.functional.affine_grid(torch.tensor(theta_n), size, align_corners=False)
    np.testing.assert_allclose(eager.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_spatial_transformer_gradient_reaches_theta():
    theta = clgrad.tensor(RNG.standard_normal((2, 2, 3)) * 0.5, requires_grad=True)
    x = clgrad.tensor(RNG.standard_normal((2, 1, 5, 5)), requires_grad=True)
    assert gradcheck(lambda t, a: F.grid_sample(
        a, F.affine_grid(t, (2, 1, 4, 4), align_corners=False), align_corners=False),
        [theta, x])


def test_errors_and_warning():
    x, g = clgrad.zeros(1, 1, 2, 2), clgrad.zeros(1, 3, 3, 2)
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or "
                                         "'bicubic', but got: 'area'"):
        F.grid_sample(x, g, mode="area", align_corners=False)
    with pytest.raises(ValueError, match="padding_mode"):
        F.grid_sample(x, g, padding_mode="circular", align_corners=False)
    with pytest.raises(NotImplementedError, match="bicubic"):
        F.grid_sample(x, g, mode="bicubic", align_corners=False)
    with pytest.raises(RuntimeError, match="same batch size"):
        F.grid_sample(clgrad.zeros(2, 1, 2, 2), g, align_corners=False)
    with pytest.raises(RuntimeError, match="size 2 in last dimension"):
        F.grid_sample(x, clgrad.zeros(1, 3, 3, 3), align_corners=False)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.grid_sample(x, g.double(), align_corners=False)
    with pytest.raises(RuntimeError, match="4D or 5D input"):
        F.grid_sample(clgrad.zeros(1, 2, 2), g, align_corners=False)
    with pytest.raises(NotImplementedError, match="volumetric"):
        F.grid_sample(clgrad.zeros(1, 1, 2, 2, 2), clgrad.zeros(1, 1, 1, 1, 3),
                      align_corners=False)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(x, g)
    with pytest.raises(ValueError, match=r"shape Nx2x3 for size \(1, 1, 2, 2\)"):
        F.affine_grid(clgrad.zeros(1, 3, 4), (1, 1, 2, 2), align_corners=False)
    with pytest.raises(ValueError, match="floating point"):
        F.affine_grid(clgrad.zeros(1, 2, 3, dtype=clgrad.int64), (1, 1, 2, 2),
                      align_corners=False)
    with pytest.raises(NotImplementedError, match="4D and 5D sizes"):
        F.affine_grid(clgrad.zeros(1, 2, 3), (1, 2, 2), align_corners=False)


@pytest.mark.parametrize("mode,padding,align", COMBOS)
def test_matches_torch(mode, padding, align):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 5, 6)).astype(np.float32)
    theta = (RNG.standard_normal((2, 2, 3)) * 0.8).astype(np.float32)
    tx, tt = (torch.tensor(a, requires_grad=True) for a in (x, theta))
    cx, ct = (clgrad.tensor(a, requires_grad=True) for a in (x, theta))
    tg = torch.nn.functional.affine_grid(tt, (2, 3, 4, 7), align_corners=align)
    cg = F.affine_grid(ct, (2, 3, 4, 7), align_corners=align)
    np.testing.assert_allclose(cg.detach().numpy(), tg.detach().numpy(), rtol=1e-5, atol=1e-6)
    # a non-contiguous input (channels last) and a scaled grid reaching outside the input
    to = torch.nn.functional.grid_sample(tx.transpose(2, 3), tg * 1.5, mode=mode,
                                         padding_mode=padding, align_corners=align)
    co = F.grid_sample(cx.transpose(2, 3), cg * 1.5, mode=mode, padding_mode=padding,
                       align_corners=align)
    np.testing.assert_allclose(co.detach().numpy(), to.detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    r = RNG.standard_normal(to.shape).astype(np.float32)
    (to * torch.tensor(r)).sum().backward()
    (co * clgrad.tensor(r)).sum().backward()
    np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    scale = np.abs(tt.grad.numpy()).max() + 1e-30
    np.testing.assert_allclose(ct.grad.numpy() / scale, tt.grad.numpy() / scale, rtol=1e-4,
                               atol=1e-5)


def test_deterministic_algorithms_flag():
    """The input gradient sums with atomics: PyTorch's rule for such ops applies (raise under
    use_deterministic_algorithms(True), warn with warn_only); the grid gradient alone and the
    forward are deterministic and always run."""
    x = clgrad.tensor(RNG.standard_normal((1, 1, 3, 3)), requires_grad=True)
    g = clgrad.tensor(grid_values((1, 2, 2, 2)), requires_grad=True)
    try:
        clgrad.use_deterministic_algorithms(True)
        with pytest.raises(RuntimeError, match="does not have a deterministic implementation"):
            F.grid_sample(x, g, align_corners=False).sum().backward()
        F.grid_sample(x.detach(), g, align_corners=False).sum().backward()
        assert g.grad is not None
        clgrad.use_deterministic_algorithms(True, warn_only=True)
        with pytest.warns(UserWarning, match="deterministic implementation"):
            F.grid_sample(x, g, align_corners=False).sum().backward()
        assert x.grad is not None
    finally:
        clgrad.use_deterministic_algorithms(False)


NAN, INF = float("nan"), float("inf")
# (x, y) points with a NaN or infinite coordinate; the input is 1..12 in a 3 x 4 image, y = 0
# is row 1 (5 6 7 8) with and without align_corners
NONFINITE = [(NAN, 0.0), (INF, 0.0), (-INF, 0.0), (NAN, NAN), (NAN, INF), (NAN, -INF),
             (INF, -INF)]


def nonfinite_by_hand(mode, padding):
    """PyTorch's CPU kernel (GridSamplerKernel.cpp): 'zeros' keeps the coordinate, so the
    bilinear weights are NaN (nearest: out of bounds, 0); 'border' clips NaN to 0 and an
    infinity to the edge it points at; 'reflection' folds NaN and infinities to NaN, then 0."""
    if padding == "zeros":
        return [NAN if mode == "bilinear" else 0.0] * len(NONFINITE)
    if padding == "border":  # (col, row): NaN -> 0, -inf -> 0, +inf -> the last
        return [5.0, 8.0, 5.0, 1.0, 9.0, 1.0, 4.0]
    return [5.0, 5.0, 5.0, 1.0, 1.0, 1.0, 1.0]  # reflection: NaN -> col / row 0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode,padding,align", COMBOS)
def test_nonfinite_grid_values_as_torch(mode, padding, align, dtype):
    """A NaN or +-inf grid coordinate gives PyTorch's values (clgrad used to give 0 for every
    padding): NaN for bilinear 'zeros', the clipped pixel for 'border' and 'reflection'."""
    x = np.arange(1.0, 13.0).reshape(1, 1, 3, 4)
    grid = np.array(NONFINITE).reshape(1, 1, len(NONFINITE), 2)
    dt = getattr(clgrad, dtype)
    out = F.grid_sample(clgrad.tensor(x, dtype=dt), clgrad.tensor(grid, dtype=dt), mode=mode,
                        padding_mode=padding, align_corners=align).numpy().ravel()
    np.testing.assert_array_equal(out, nonfinite_by_hand(mode, padding))
    torch = pytest.importorskip("torch")
    tdt = getattr(torch, dtype)
    want = torch.nn.functional.grid_sample(torch.tensor(x, dtype=tdt),
                                           torch.tensor(grid, dtype=tdt), mode=mode,
                                           padding_mode=padding, align_corners=align)
    np.testing.assert_array_equal(out, want.numpy().ravel())
    # huge finite coordinates (reflection folds them with PyTorch's rounding)
    big = np.array([(1e30, 0.25), (-1e30, 0.5), (0.25, 3e9), (7.3, -5.1)])
    g = big.reshape(1, 1, 4, 2)
    out = F.grid_sample(clgrad.tensor(x, dtype=dt), clgrad.tensor(g, dtype=dt), mode=mode,
                        padding_mode=padding, align_corners=align).numpy()
    want = torch.nn.functional.grid_sample(torch.tensor(x, dtype=tdt), torch.tensor(g, dtype=tdt),
                                           mode=mode, padding_mode=padding, align_corners=align)
    np.testing.assert_allclose(out, want.numpy(), rtol=1e-6, atol=1e-6)


def test_output_is_freed_without_the_cycle_collector():
    """The backward closure holds no reference to the output (it used out's buffer as a
    placeholder: output -> node -> closure -> output kept every result until a gc run)."""
    import gc
    import weakref
    x = clgrad.tensor(np.ones((1, 1, 3, 3), np.float32), requires_grad=True)
    g = clgrad.zeros(1, 2, 2, 2, requires_grad=True)
    gc.disable()
    try:
        y = F.grid_sample(x, g, align_corners=False)
        assert y.tolist() == [[[[1.0, 1.0], [1.0, 1.0]]]]  # the centre of a ones image
        r = weakref.ref(y)
        del y
        assert r() is None
    finally:
        gc.enable()
