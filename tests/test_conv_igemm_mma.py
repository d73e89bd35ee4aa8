"""igemm_mma (clgrad/ops/conv/mma.py, kernels/conv_igemm_mma_nv.cl): float16 implicit-GEMM
convolution on tensor cores, against float64 NumPy.

On any device the kernel runs emulated (mma.EMULATE: kernels/mma_async_nv.h's MMA_EMULATE, the
same tiles, swizzles, gathers and stores with plain loops for mma.sync, cp.async and ldmatrix);
on a device where ``mma.available`` holds without emulation (NVIDIA's OpenCL), the real kernel
runs the same tests.
"""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import backends
from clgrad.ops.conv import mma
from clgrad.ops.conv import op as conv_op
from clgrad.runtime import launch_count

DEV = clgrad.zeros(1)._storage.device
pytestmark = pytest.mark.skipif(not DEV.fp16, reason=f"the default device {DEV.name!r} lacks "
                                "cl_khr_fp16 (float16)")
MODES = ["emulated"] + (["tensor cores"] if DEV.kind == "gpu" and "NVIDIA" in DEV.platform
                        else [])


@pytest.fixture(params=MODES)
def mode(request, monkeypatch):
    """The kernel as this mode builds it; the float16 convolutions on their float16 route
    (conv_op.HALF_IM2COL) with conv_algorithm 'igemm_mma'."""
    emulate = request.param == "emulated"
    monkeypatch.setattr(mma, "EMULATE", emulate)
    monkeypatch.setattr(mma, "_OK", {})
    if not emulate and not mma.available(DEV):
        pytest.fail("the tensor-core kernel failed its self-check on this NVIDIA device")
    monkeypatch.setattr(conv_op, "HALF_IM2COL", True)
    monkeypatch.setattr(backends, "conv_algorithm", "igemm_mma")
    return request.param


# (n, g, c, h, w, o, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw, uh, uw, bias, flipped weight)
CASES = list(mma._CHECKS) + [
    (2, 3, 8, 9, 8, 8, 5, 4, 3, 3, 2, 2, 2, 2, 2, 1, 1, 1, True, False),   # dilation, groups
    (1, 1, 40, 4, 4, 136, 4, 4, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, True, False),  # 1 x 1, 2 M tiles
    (2, 1, 3, 12, 12, 20, 6, 6, 5, 5, 2, 2, 1, 1, 2, 2, 1, 1, False, False),  # taps 75
    (1, 2, 9, 3, 5, 12, 7, 9, 3, 3, 1, 1, 1, 1, 0, 0, 3, 2, True, True),    # insertion 3, 2
]


def _spy_kernels(monkeypatch) -> list:
    """The (kernel name, tiles) of every mma._kernel call from now on, in order."""
    real, calls = mma._kernel, []

    def spy(p, dev, t, name="igemm_mma_fwd", *args, **kw):
        calls.append((name, tuple(sorted(t.items()))))
        return real(p, dev, t, name, *args, **kw)
    monkeypatch.setattr(mma, "_kernel", spy)
    return calls


@pytest.mark.parametrize("tile", sorted(mma.TILES))
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[:10])))
def test_kernel_matches_float64(mode, monkeypatch, tile, case):
    """Every tile on every problem: within 2 float16 roundings of the float64 result (the
    products exact, float32 sums, one rounding), padding, insertion, groups and the bias
    included; weights read in place and through the kernel's copy."""
    monkeypatch.setattr(mma, "_tile", lambda p, dev: mma.TILES[tile])
    err = mma.check_problem(DEV, case, np.random.default_rng(7))
    assert err <= 2.0, err


@pytest.mark.parametrize("case", [c for c in CASES if c[2] % 8 == 0][:3],
                         ids=lambda c: "x".join(map(str, c[:10])))
def test_window_gather_and_nhwc_both_match(mode, monkeypatch, case):
    """Problems whose channels a group are a multiple of 8 run on an NHWC copy of X (to_nhwc8
    where its planes come in 16-byte chunks, else to_nhwc): igemm_mma_fwd_nhwc, and
    igemm_mma_wgrad_nhwc where the output gradient's planes come in 16-byte chunks, unless
    mma.NHWC is off; both ways within 2 float16 roundings of float64
    (the forward) and within the float32 bound of the depth (the weight gradient's split
    sums), on the mid tile."""
    calls = _spy_kernels(monkeypatch)
    chunked = case[6] * case[7] % 8 == 0 and case[16] * case[17] == 1
    for nhwc in (True, False):
        monkeypatch.setattr(mma, "NHWC", nhwc)
        calls.clear()
        err = mma.check_problem(DEV, case, np.random.default_rng(9), mma.TILES["mid"])
        assert err <= 2.0, (nhwc, err)
        if case[16] * case[17] == 1:
            err = mma.check_wgrad(DEV, case, np.random.default_rng(9), mma.TILES["mid"])
            assert err <= 1.0, (nhwc, err)
        copy = "to_nhwc8" if case[3] * case[4] % 8 == 0 else "to_nhwc"  # X is contiguous
        want = ([copy, "igemm_mma_fwd_nhwc"] if nhwc else ["igemm_mma_fwd"]) + (
            [] if case[16] * case[17] != 1 else
            [copy, "igemm_mma_wgrad_nhwc"] if nhwc and chunked else ["igemm_mma_wgrad"])
        assert [name for name, _ in calls] == want, (nhwc, calls)


def _windows(x, kh, kw, s, p, d):
    """(i, j, window): x (N, C, H, W) zero-padded by p, and per tap (i, j) its (N, C, oH, oW)
    strided window (stride s, dilation d)."""
    n, c, h, wd = x.shape
    oh, ow = (h + 2 * p - d * (kh - 1) - 1) // s + 1, (wd + 2 * p - d * (kw - 1) - 1) // s + 1
    xp = np.zeros((n, c, h + 2 * p, wd + 2 * p))
    xp[:, :, p:p + h, p:p + wd] = x
    for i in range(kh):
        for j in range(kw):
            yield i, j, xp[:, :, i * d:i * d + s * (oh - 1) + 1:s, j * d:j * d + s * (ow - 1) + 1:s]


def _np_conv(x, w, b, stride, padding, dilation, groups):
    """conv2d in float64 NumPy: x (N, C, H, W), w (O, C/G, kH, kW)."""
    o, cg, kh, kw = w.shape
    og, y = o // groups, 0.0
    for i, j, win in _windows(x, kh, kw, stride, padding, dilation):
        y = y + np.concatenate([np.einsum("nchw,oc->nohw", win[:, g * cg:(g + 1) * cg],
                                          w[g * og:(g + 1) * og, :, i, j])
                                for g in range(groups)], axis=1)
    return y if b is None else y + b.reshape(1, -1, 1, 1)


def _np_grad_input(gy, w, xshape, stride, padding, dilation, groups):
    """The input gradient of _np_conv for output gradient gy, in float64."""
    n, c, h, wd = xshape
    o, cg, kh, kw = w.shape
    s, p, d = stride, padding, dilation
    oh, ow = gy.shape[2:]
    gxp = np.zeros((n, c, h + 2 * p + s * kh * d, wd + 2 * p + s * kw * d))
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                contrib = np.einsum("nohw,oc->nchw", gy[:, g * og:(g + 1) * og],
                                    w[g * og:(g + 1) * og, :, i, j])
                gxp[:, g * cg:(g + 1) * cg, i * d:i * d + s * (oh - 1) + 1:s,
                    j * d:j * d + s * (ow - 1) + 1:s] += contrib
    return gxp[:, :, p:p + h, p:p + wd]


def _np_grad_weight(gy, x, wshape, stride, padding, dilation, groups):
    """The weight gradient of _np_conv for output gradient gy, in float64."""
    o, cg, kh, kw = wshape
    og, gw = o // groups, np.zeros(wshape)
    for i, j, win in _windows(x, kh, kw, stride, padding, dilation):
        for g in range(groups):
            gw[g * og:(g + 1) * og, :, i, j] = np.einsum(
                "nohw,nchw->oc", gy[:, g * og:(g + 1) * og], win[:, g * cg:(g + 1) * cg])
    return gw


LAYERS = [  # (n, c, h, o, k, stride, padding, dilation, groups)
    (2, 16, 9, 24, 3, 1, 1, 1, 1),
    (2, 16, 10, 32, 3, 2, 1, 1, 2),
    (3, 24, 6, 16, 1, 2, 0, 1, 1),
    (2, 3, 11, 8, 5, 2, 2, 1, 1),
    (2, 8, 8, 8, 3, 1, 2, 2, 1),
    (2, 16, 8, 32, 3, 1, 1, 1, 2),
]


@pytest.mark.parametrize("layer", LAYERS, ids=lambda l: "-".join(map(str, l)))
def test_conv2d_every_pass(mode, layer):
    """F.conv2d in float16 through igemm_mma (forward; input gradient as one problem with
    zero insertion; weight and bias gradients from float32 split sums) against float64
    NumPy of the same float16 values: within 2 float16 roundings of the sum of the
    products' magnitudes."""
    n, c, h, o, k, s, p, d, g = layer
    rng = np.random.default_rng(11)
    xa = rng.standard_normal((n, c, h, h)).astype(np.float16)
    wa = rng.standard_normal((o, c // g, k, k)).astype(np.float16)
    ba = rng.standard_normal(o).astype(np.float16)
    x = clgrad.tensor(xa, requires_grad=True)
    w = clgrad.tensor(wa, requires_grad=True)
    b = clgrad.tensor(ba, requires_grad=True)
    y = F.conv2d(x, w, b, stride=s, padding=p, dilation=d, groups=g)
    gy = rng.standard_normal(tuple(y.shape)).astype(np.float16)
    y.backward(clgrad.tensor(gy))
    assert backends.last_conv_algorithms == dict.fromkeys(
        ("forward", "grad_input", "grad_weight"), "igemm_mma")
    x64, w64, b64, g64 = [a.astype(np.float64) for a in (xa, wa, ba, gy)]
    ax, aw, ag = np.abs(x64), np.abs(w64), np.abs(g64)
    checks = (
        (y, _np_conv(x64, w64, b64, s, p, d, g), _np_conv(ax, aw, np.abs(b64), s, p, d, g)),
        (x.grad, _np_grad_input(g64, w64, xa.shape, s, p, d, g),
         _np_grad_input(ag, aw, xa.shape, s, p, d, g)),
        (w.grad, _np_grad_weight(g64, x64, wa.shape, s, p, d, g),
         _np_grad_weight(ag, ax, wa.shape, s, p, d, g)),
        (b.grad, g64.sum(axis=(0, 2, 3)), ag.sum(axis=(0, 2, 3))))
    for got, ref, mag in checks:
        assert got.dtype == clgrad.float16
        err = np.abs(got.detach().numpy().astype(np.float64) - ref)
        assert np.all(err <= 2.0 ** -10 * (mag + 1e-3)), float(np.max(err / (mag + 1e-3)))


def test_nan_in_gives_nan_out_where_its_window_reaches(mode):
    """A NaN input pixel makes exactly the outputs whose windows hold it NaN; the padding's
    zeros never meet it (the gather reads no value outside the map)."""
    xa = np.ones((1, 8, 6, 6), np.float16)
    xa[0, 3, 2, 4] = np.nan
    y = F.conv2d(clgrad.tensor(xa), clgrad.ones((8, 8, 3, 3), dtype=clgrad.float16),
                 padding=1).numpy()
    want = np.zeros((6, 6), bool)
    want[1:4, 3:6] = True
    for o in range(8):
        assert np.array_equal(np.isnan(y[0, o]), want)


@pytest.mark.parametrize("nhwc", [True, False], ids=["nhwc", "gather"])
def test_launches_do_not_depend_on_groups(mode, monkeypatch, nhwc):
    """One launch over all groups: the forward's launch count is the same for groups 1 and 4,
    and so is the backward's. Gathering the window: the weight is read in place, one launch
    in all; NHWC: to_nhwc's copy of the input, the weight's copy into (kh, kw, c) order and
    the kernel."""
    monkeypatch.setattr(mma, "NHWC", nhwc)
    counts = []
    for g in (1, 4):
        x = clgrad.ones((2, 32, 8, 8), dtype=clgrad.float16, requires_grad=True)
        w = clgrad.ones((32, 32 // g, 3, 3), dtype=clgrad.float16, requires_grad=True)
        F.conv2d(x, w, padding=1, groups=g).sum().backward()  # (warm: plans, builds)
        n0 = launch_count()
        y = F.conv2d(x, w, padding=1, groups=g)
        n1 = launch_count()
        y.backward(clgrad.ones(tuple(y.shape), dtype=clgrad.float16))
        counts.append((n1 - n0, launch_count() - n1))
        assert np.all(y.detach().numpy() == (32 // g) * _inside_taps())
    assert counts[0] == counts[1] and counts[0][0] == (3 if nhwc else 1), counts


def _inside_taps():
    """How many of a 3 x 3 window's taps lie inside an 8 x 8 map padded by 1, per pixel."""
    r = np.array([2] + [3] * 6 + [2])
    return r[:, None] * r[None, :]


def test_transposed_weight_view_is_copied_not_misread(mode):
    """A weight view whose taps are not contiguous (a permuted tensor) gives the same result
    as its contiguous copy (the kernel reads a copy in its own layout)."""
    rng = np.random.default_rng(5)
    xa = rng.standard_normal((2, 16, 7, 7)).astype(np.float16)
    wt = clgrad.tensor(rng.standard_normal((16, 3, 3, 24)).astype(np.float16)).permute(3, 0, 1, 2)
    x = clgrad.tensor(xa)
    a = F.conv2d(x, wt, padding=1).numpy()
    b = F.conv2d(x, wt.contiguous(), padding=1).numpy()
    assert np.array_equal(a, b)


def test_where_it_cannot_run_conv2d_gives_way(monkeypatch):
    """conv_algorithm 'igemm_mma' where the kernel is not available (a device without tensor
    cores, not emulated): float16 passes run im2col, float32 ones implicit, both right."""
    monkeypatch.setattr(mma, "EMULATE", False)
    monkeypatch.setattr(mma, "_OK", {(DEV, False, mma.NHWC): False})
    monkeypatch.setattr(conv_op, "HALF_IM2COL", True)
    monkeypatch.setattr(backends, "conv_algorithm", "igemm_mma")
    rng = np.random.default_rng(2)
    xa = rng.standard_normal((2, 8, 6, 6)).astype(np.float16)
    wa = rng.standard_normal((16, 8, 3, 3)).astype(np.float16)
    ref = _np_conv(xa.astype(np.float64), wa.astype(np.float64), None, 1, 1, 1, 1)
    mag = _np_conv(np.abs(xa).astype(np.float64), np.abs(wa).astype(np.float64), None, 1, 1, 1, 1)
    y16 = F.conv2d(clgrad.tensor(xa), clgrad.tensor(wa), padding=1)
    assert backends.last_conv_algorithms["forward"] == "im2col"
    assert np.all(np.abs(y16.numpy().astype(np.float64) - ref) <= 2.0 ** -10 * (mag + 1e-3))
    y32 = F.conv2d(clgrad.tensor(xa.astype(np.float32)), clgrad.tensor(wa.astype(np.float32)),
                   padding=1)
    assert backends.last_conv_algorithms["forward"] == "implicit"
    assert np.allclose(y32.numpy(), ref, rtol=1e-5, atol=1e-5 * np.max(mag))


def test_nhwc_copy_of_a_strided_view(mode):
    """to_nhwc reads the caller's view through its strides and offset: a channel slice of a
    tensor whose H and W are swapped gives the same result as its contiguous copy, with
    more than one 32 x 32 tile of channels and pixels (edges included)."""
    rng = np.random.default_rng(8)
    base = clgrad.tensor(rng.standard_normal((2, 56, 9, 7)).astype(np.float16))
    xv = base.transpose(2, 3)[:, 8:48]  # (2, 40, 7, 9), channels from 8
    w = clgrad.tensor(rng.standard_normal((16, 40, 3, 3)).astype(np.float16))
    assert mma._nhwc(mma.Problem(2, 1, 40, 7, 9, 16, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1))
    a = F.conv2d(xv, w, padding=1).numpy()
    b = F.conv2d(xv.contiguous(), w, padding=1).numpy()
    assert backends.last_conv_algorithms["forward"] == "igemm_mma"
    assert np.array_equal(a, b)


# (shape of the tensor, the view's index, groups, the copy that runs)
_ALL = slice(None)
NHWC_VIEWS = {"blocks past the edges": ((3, 72, 4, 6), (_ALL,), 1, "to_nhwc8"),
              "channel slice": ((2, 40, 4, 4), (_ALL, slice(8, 32)), 1, "to_nhwc8"),
              "groups": ((2, 48, 2, 4), (_ALL,), 3, "to_nhwc8"),
              "rows sliced off a chunk": ((2, 16, 5, 4), (_ALL, _ALL, slice(1, None)), 1,
                                          "to_nhwc"),
              "plane not in chunks": ((2, 16, 3, 5), (_ALL,), 2, "to_nhwc"),
              "channels not a multiple of 8": ((2, 12, 2, 4), (_ALL,), 1, "to_nhwc")}


@pytest.mark.parametrize("view", sorted(NHWC_VIEWS))
def test_nhwc_copies_are_exact_transposes(mode, monkeypatch, view):
    """Both NHWC copies give exactly NumPy's (N, H, W, C) transpose of the view, bit for bit:
    to_nhwc8 (8 x 8 blocks, 16-byte accesses) where the view's planes, offset and strides
    come in 16-byte chunks and the channels a group are a multiple of 8, to_nhwc otherwise
    (rows sliced off so the view starts 4 halves into a chunk; a 3 x 5 plane; 12 channels);
    block counts that do not divide the work-groups."""
    shape, index, g, want = NHWC_VIEWS[view]
    calls = _spy_kernels(monkeypatch)
    a = np.random.default_rng(3).standard_normal(shape).astype(np.float16)
    x = clgrad.tensor(a)[index]
    n, c, h, w = x.shape
    p = mma.Problem(n, g, c // g, h, w, 8, h, w, 1, 1, 1, 1, 1, 1, 0, 0)._replace(
        x=mma.v5(x, g))
    xh = mma._to_nhwc(p, DEV, mma.TILES["mid"], x, True)
    assert [name for name, _ in calls] == [want]
    assert np.array_equal(xh.numpy(), a[index].transpose(0, 2, 3, 1))


def test_self_check_covers_every_tile(monkeypatch):
    """available() runs each of its problems on every tile configuration (the one a device
    picks for a layer need not be the one it picks for a small check)."""
    monkeypatch.setattr(mma, "EMULATE", True)
    monkeypatch.setattr(mma, "_OK", {})
    calls = _spy_kernels(monkeypatch)
    assert mma.available(DEV) is True
    assert {t for _, t in calls} == {tuple(sorted(t.items())) for t in mma.TILES.values()}


def test_self_check_refuses_a_wrong_kernel(monkeypatch):
    """available() runs its problems against NumPy and refuses (with a warning naming the
    kernel) a build whose results are wrong: here the emulated kernel built for a dilation
    one larger than the problem's (its taps read the wrong pixels)."""
    monkeypatch.setattr(mma, "EMULATE", True)
    monkeypatch.setattr(mma, "_OK", {})
    real = mma._kernel

    def wrong(p, dev, t, name="igemm_mma_fwd", gv=None, nhwc_build=None):
        return real(p._replace(dw=p.dw + 1), dev, t, name, gv, nhwc_build)
    monkeypatch.setattr(mma, "_kernel", wrong)
    with pytest.warns(RuntimeWarning, match="conv_igemm_mma_nv.cl") as warned:
        assert mma.available(DEV) is False
    assert "roundings" in str(warned[0].message)  # (a wrong result, not a failed call)


def test_auto_measures_it_against_im2col_per_pass(mode, monkeypatch, tmp_path):
    """Under 'auto' where igemm_mma is available, each float16 pass measures igemm_mma
    against im2col once (conv_gpu.measured, keyed with mma.VERSION) and runs the faster; the
    result stays right (float64 NumPy)."""
    from clgrad.ops.conv import gpu as conv_gpu
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(conv_gpu, "_TUNE_MIN_MACS", 0)
    monkeypatch.setattr(conv_gpu, "_TUNED", {})
    monkeypatch.setattr(backends, "conv_algorithm", "auto")
    rng = np.random.default_rng(4)
    xa = rng.standard_normal((2, 16, 6, 6)).astype(np.float16)
    wa = rng.standard_normal((24, 16, 3, 3)).astype(np.float16)
    x = clgrad.tensor(xa, requires_grad=True)
    y = F.conv2d(x, clgrad.tensor(wa, requires_grad=True), padding=1)
    y.backward(clgrad.ones(tuple(y.shape), dtype=clgrad.float16))
    entries = {k.split(" float16 ")[0].rsplit(" ", 1)[1]: v  # (the pass, from the key)
               for k, v in conv_gpu._TUNED.items() if k.endswith(f" v{mma.VERSION}")}
    assert set(entries) == {"forward", "grad_input", "grad_weight"}
    for e in entries.values():  # (igemm_mma's own tiles are the small ones here)
        assert set(e["ms"]) == {"igemm_mma", "im2col"} and e["algo"] in e["ms"]
    assert backends.last_conv_algorithms == {k: e["algo"] for k, e in entries.items()}
    x64, w64 = xa.astype(np.float64), wa.astype(np.float64)
    mag = _np_conv(np.abs(x64), np.abs(w64), None, 1, 1, 1, 1)
    err = np.abs(y.detach().numpy().astype(np.float64) - _np_conv(x64, w64, None, 1, 1, 1, 1))
    assert np.all(err <= 2.0 ** -10 * (mag + 1e-3))


def test_auto_measures_the_small_tiles_where_its_own_differ(mode, monkeypatch, tmp_path):
    """Where igemm_mma's own tiles (mma._tile) are not the small ones, 'auto' measures
    igemm_mma:small too, per pass, and runs the fastest of the three."""
    from clgrad.ops.conv import gpu as conv_gpu
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(conv_gpu, "_TUNE_MIN_MACS", 0)
    monkeypatch.setattr(conv_gpu, "_TUNED", {})
    monkeypatch.setattr(backends, "conv_algorithm", "auto")
    monkeypatch.setattr(mma, "_tile", lambda p, dev: mma.TILES["mid"])
    x = clgrad.ones((2, 16, 6, 6), dtype=clgrad.float16, requires_grad=True)
    w = clgrad.ones((24, 16, 3, 3), dtype=clgrad.float16, requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    y.sum().backward()
    entries = [v for k, v in conv_gpu._TUNED.items() if k.endswith(f" v{mma.VERSION}")]
    assert len(entries) == 3
    for e in entries:
        assert set(e["ms"]) == {"igemm_mma", "igemm_mma:small", "im2col"}
    assert backends.last_conv_algorithms == {"forward": entries[0]["algo"],
                                             "grad_input": entries[1]["algo"],
                                             "grad_weight": entries[2]["algo"]}
    inside = np.array([2, 3, 3, 3, 3, 2])  # a 3 x 3 window's taps inside the 6 x 6 map
    assert np.all(y.detach().numpy() == 16 * inside[:, None] * inside[None, :])


@pytest.mark.parametrize("tiles", sorted(mma.TILES))
def test_pinned_tiles_run_every_pass(mode, monkeypatch, tiles):
    """conv_algorithm 'igemm_mma:<tiles>' runs every pass (forward, input and weight
    gradients) with those tiles, whatever mma._tile would pick, and stays right: the forward
    and both gradients against float64 NumPy (all-ones output gradient)."""
    assert mma.available(DEV)  # (its self-check runs every tile: before the spy)
    seen = _spy_kernels(monkeypatch)
    monkeypatch.setattr(backends, "conv_algorithm", f"igemm_mma:{tiles}")
    rng = np.random.default_rng(5)
    xa = rng.standard_normal((2, 16, 8, 8)).astype(np.float16)
    wa = rng.standard_normal((72, 16, 3, 3)).astype(np.float16)
    x = clgrad.tensor(xa, requires_grad=True)
    w = clgrad.tensor(wa, requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    y.backward(clgrad.ones(tuple(y.shape), dtype=clgrad.float16))
    assert backends.last_conv_algorithms == dict.fromkeys(
        ("forward", "grad_input", "grad_weight"), f"igemm_mma:{tiles}")
    assert {t for _, t in seen} == {tuple(sorted(mma.TILES[tiles].items()))}, seen
    assert {n for n, _ in seen} >= {"igemm_mma_fwd_nhwc", "igemm_mma_wgrad_nhwc"}
    x64, w64 = xa.astype(np.float64), wa.astype(np.float64)
    mag = _np_conv(np.abs(x64), np.abs(w64), None, 1, 1, 1, 1)
    err = np.abs(y.detach().numpy() - _np_conv(x64, w64, None, 1, 1, 1, 1))
    assert np.all(err <= 2.0 ** -10 * (mag + 1e-3))
    ones = np.ones((2, 72, 8, 8))  # d(sum y)/dw[o, c, i, j] = sum of x's window at tap (i, j)
    gw = np.stack([np.einsum("nchw,nohw->oc", win, ones)
                   for _, _, win in _windows(x64, 3, 3, 1, 1, 1)], -1).reshape(wa.shape)
    assert np.allclose(w.grad.numpy(), gw, rtol=2.0 ** -9, atol=2.0 ** -9 * np.abs(gw).max())
    # d(sum y)/dx[n, c, y, x] = sum over o and the taps (i, j) whose output pixel
    # (y + 1 - i, x + 1 - j) lies in the 8 x 8 map of w[o, c, i, j]
    gx = np.zeros(xa.shape)
    for i in range(3):
        for j in range(3):
            rows = (np.arange(8) + 1 - i >= 0) & (np.arange(8) + 1 - i < 8)
            cols = (np.arange(8) + 1 - j >= 0) & (np.arange(8) + 1 - j < 8)
            gx += w64[:, :, i, j].sum(0)[None, :, None, None] * np.outer(rows, cols)
    assert np.allclose(x.grad.numpy(), gx, rtol=2.0 ** -9, atol=2.0 ** -9 * np.abs(gx).max())
