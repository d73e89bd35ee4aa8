"""Tensor-core GEMMs (kernels/matmul_mma_nv.cl, issue 35 part 2) against float64 NumPy, and the
TF32 switch they follow (PyTorch's: backends.cuda.matmul.allow_tf32 is
get_float32_matmul_precision() != 'highest').

The kernel tests run where clgrad/ops/matmul.py's has_mma passes (NVIDIA's OpenCL, sm_80 and
newer: CLGRAD_DEVICE=gpu on the H200) and skip elsewhere; the switch's tests run everywhere.
Layouts: every tile loader of A and B (16-byte vectors along k or n, scalars along k or m/n),
views at offsets, broadcast batch dims; shapes on and off the tile edges (128 x 128 and
64 x 64 tiles, depth 32).
"""
import numpy as np
import pytest

import clgrad
from clgrad import dtypes
from clgrad.ops import matmul as mm


@pytest.fixture
def tf32_off():
    yield
    clgrad.set_float32_matmul_precision("highest")


def test_tf32_flag_is_one_state_with_the_precision(tf32_off):
    cuda = clgrad.backends.cuda
    assert cuda.matmul.allow_tf32 is False and clgrad.get_float32_matmul_precision() == "highest"
    cuda.matmul.allow_tf32 = True
    assert clgrad.get_float32_matmul_precision() == "high" and mm.allow_tf32()
    assert cuda.matmul.fp32_precision == "tf32"
    clgrad.set_float32_matmul_precision("highest")
    assert cuda.matmul.allow_tf32 is False and cuda.matmul.fp32_precision == "none"
    clgrad.set_float32_matmul_precision("medium")
    assert cuda.matmul.allow_tf32 is True
    cuda.matmul.fp32_precision = "ieee"
    assert clgrad.get_float32_matmul_precision() == "highest"
    assert cuda.matmul.fp32_precision == "ieee"
    cuda.matmul.fp32_precision = "none"
    assert cuda.matmul.fp32_precision == "none" and not cuda.matmul.allow_tf32
    with pytest.raises(ValueError, match="fp32_precision: expected 'ieee', 'tf32'"):
        cuda.matmul.fp32_precision = "fast"
    # PyTorch's: a bool only ("no" would be truthy), and no attribute stored by a typo
    for bad in ("no", 1, None):
        with pytest.raises(RuntimeError, match="set_allow_tf32_cublas expects a bool, but got"):
            cuda.matmul.allow_tf32 = bad
    assert cuda.matmul.allow_tf32 is False
    with pytest.raises(AttributeError, match="Unknown attribute allow_tf23"):
        cuda.matmul.allow_tf23 = True
    cuda.matmul.allow_fp16_reduced_precision_reduction = False  # stored (no effect)
    assert cuda.matmul.allow_fp16_reduced_precision_reduction is False
    cuda.matmul.allow_fp16_reduced_precision_reduction = True
    # PyTorch's: another value warns and changes nothing; upper case is matched lower-cased
    clgrad.set_float32_matmul_precision("high")
    with pytest.warns(UserWarning, match="fast is not one of 'highest', 'high', or 'medium'; "
                                         "the currentsetFloat32MatmulPrecision call has no "
                                         "effect"):
        clgrad.set_float32_matmul_precision("fast")
    assert clgrad.get_float32_matmul_precision() == "high"
    clgrad.set_float32_matmul_precision("HIGHEST")
    assert clgrad.get_float32_matmul_precision() == "highest" and not cuda.matmul.allow_tf32
    with pytest.raises(TypeError, match="argument 'precision' must be str, not int"):
        clgrad.set_float32_matmul_precision(1)


def test_tf32_flag_changes_the_settings_epoch(tf32_off):
    """A cached GEMM plan made before the switch is not used after it (plan keys carry it)."""
    e0 = clgrad.settings.epoch()
    clgrad.backends.cuda.matmul.allow_tf32 = True
    assert clgrad.settings.epoch() > e0
    e1 = clgrad.settings.epoch()
    clgrad.backends.cuda.matmul.allow_tf32 = True  # no change: no new epoch
    assert clgrad.settings.epoch() == e1


def _dev():
    return clgrad.zeros(1)._storage.device


def _need_mma(fp16=False):
    dev = _dev()
    if dev.kind != "gpu" or not mm.has_mma(dev):
        pytest.skip("no tensor cores through OpenCL here (NVIDIA's driver, sm_80+)")
    if fp16 and not dev.fp16:
        pytest.skip("no float16 tensors on this device (NVIDIA: CLGRAD_FP16=probe)")
    return dev


def _operand(x, layout, rng):
    """A clgrad view holding x: 'a' contiguous (16-byte vector loads where the sizes allow),
    'c' contiguous at an offset of 3 (scalar loads), 't' a transposed view (the other load
    order; vectors where aligned), 's' a step-2 view of a wider buffer."""
    r, c = x.shape
    if layout == "a":
        return clgrad.tensor(x)
    if layout == "c":
        buf = np.zeros(r * c + 3, x.dtype)
        buf[3:] = x.ravel()
        return clgrad.tensor(buf)[3:].view(r, c)
    if layout == "t":
        return clgrad.tensor(np.ascontiguousarray(x.T)).t()
    wide = rng.standard_normal((r, 2 * c)).astype(x.dtype)
    wide[:, ::2] = x
    return clgrad.tensor(wide)[:, ::2]


SHAPES = [(1, 1, 1), (7, 33, 9), (128, 64, 128), (130, 70, 129), (256, 96, 384), (64, 1000, 72)]
LAYOUTS = ["aa", "at", "ta", "cc", "ct", "tc", "tt", "sc", "cs"]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layouts", LAYOUTS)
def test_float16_matmul_on_tensor_cores(shape, layouts):
    """float16: exact products summed in float32, rounded once to float16 (cuBLAS's, and the
    FMA kernel's): within one float16 unit of the float64 product rounded to float16, plus
    float32's summation error."""
    _need_mma(fp16=True)
    m, k, n = shape
    rng = np.random.default_rng(m * 7 + k + n)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    got = (_operand(a, layouts[0], rng) @ _operand(b, layouts[1], rng)).numpy()
    assert got.dtype == np.float16
    want = a.astype(np.float64) @ b.astype(np.float64)
    ulp = np.spacing(np.abs(want).astype(np.float16)).astype(np.float64)
    err = np.abs(got.astype(np.float64) - want)
    assert (err <= ulp + 1e-6 * np.sqrt(k) * np.abs(want).max() + 1e-7).all(), err.max()


@pytest.mark.parametrize("shape", SHAPES[1:], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layouts", ["aa", "cc", "tt", "sc"])
def test_tf32_matmul_follows_the_switch(shape, layouts, tf32_off):
    """float32 with TF32 allowed: operands rounded to 10-bit mantissas, float32 sums (relative
    error about 2^-11 per product); with it off (the default), float32's own error, on the same
    (cached) shapes."""
    _need_mma()
    m, k, n = shape
    rng = np.random.default_rng(m + k * 3 + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    ta, tb = _operand(a, layouts[0], rng), _operand(b, layouts[1], rng)
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).max() * np.abs(b).max() * np.sqrt(k)
    exact = (ta @ tb).numpy()
    assert np.abs(exact - want).max() <= 1e-6 * scale
    clgrad.backends.cuda.matmul.allow_tf32 = True
    fast = (ta @ tb).numpy()
    err = np.abs(fast - want).max()
    assert err <= 2e-3 * scale
    if k >= 33:  # TF32 really ran: its error is well above float32's
        assert err > 1e-5 * scale
    clgrad.backends.cuda.matmul.allow_tf32 = False
    again = (ta @ tb).numpy()
    assert np.abs(again - want).max() <= 1e-6 * scale


def test_tf32_linear_and_batched_broadcast(tf32_off):
    """linear (its recorded launches) and a broadcast batched matmul under TF32, against
    float64; NaN in an operand gives NaN in its row."""
    _need_mma()
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 50, 96)).astype(np.float32)
    w = rng.standard_normal((40, 96)).astype(np.float32)
    bias = rng.standard_normal(40).astype(np.float32)
    clgrad.backends.cuda.matmul.allow_tf32 = True
    want = x.astype(np.float64) @ w.T.astype(np.float64) + bias
    for _ in range(2):  # the second call replays the recorded plan
        got = clgrad.nn.functional.linear(clgrad.tensor(x), clgrad.tensor(w),
                                          clgrad.tensor(bias)).numpy()
        assert np.abs(got - want).max() <= 2e-3 * np.abs(want).max()
    b2 = rng.standard_normal((96, 17)).astype(np.float32)
    got = (clgrad.tensor(x) @ clgrad.tensor(b2)).numpy()
    want = x.astype(np.float64) @ b2.astype(np.float64)
    assert np.abs(got - want).max() <= 2e-3 * np.abs(want).max()
    xn = x.copy()
    xn[1, 7, 3] = np.nan
    got = (clgrad.tensor(xn) @ clgrad.tensor(b2)).numpy()
    assert np.isnan(got[1, 7]).all() and not np.isnan(np.delete(got[1], 7, axis=0)).any()


def test_float16_gemm_alpha_beta_and_batches():
    """gemm's alpha and beta (C read only when beta != 0) and a batch of views at offsets,
    twice (the second call runs the kept plan)."""
    dev = _need_mma(fp16=True)
    rng = np.random.default_rng(9)
    a = rng.standard_normal((4, 65, 40)).astype(np.float16)
    b = rng.standard_normal((4, 40, 70)).astype(np.float16)
    c0 = rng.standard_normal((4, 65, 70)).astype(np.float16)
    want = 0.5 * (a.astype(np.float64) @ b.astype(np.float64)) + 2.0 * c0
    for _ in range(2):
        c = clgrad.tensor(c0)
        mm.gemm(c, clgrad.tensor(a), clgrad.tensor(b), alpha=0.5, beta=2.0)
        assert np.abs(c.numpy().astype(np.float64) - want).max() <= 4e-3 * np.abs(want).max()
    c = clgrad.tensor(np.full((4, 65, 70), np.nan, np.float16))
    mm.gemm(c, clgrad.tensor(a), clgrad.tensor(b))  # beta == 0: C's NaNs never read
    assert np.isfinite(c.numpy()).all()
    assert mm.mma_precision(dev, dtypes.float16, False) == "f16"
    assert mm.mma_precision(dev, dtypes.float32, False) is None


def test_mma_off_setting_keeps_the_fma_kernels(monkeypatch, tf32_off):
    """CLGRAD_MMA=off: TF32 allowed, and still float32's error (the FMA kernel ran)."""
    _need_mma()
    monkeypatch.setenv("CLGRAD_MMA", "off")
    clgrad.backends.cuda.matmul.allow_tf32 = True
    rng = np.random.default_rng(2)
    a = rng.standard_normal((96, 200)).astype(np.float32)
    b = rng.standard_normal((200, 80)).astype(np.float32)
    got = (clgrad.tensor(a) @ clgrad.tensor(b)).numpy()
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_mma_setting_refuses_other_values(monkeypatch):
    monkeypatch.setenv("CLGRAD_MMA", "on")
    with pytest.raises(ValueError, match=r"CLGRAD_MMA: expected 'auto' or 'off', got 'on'"):
        mm.mma_precision(_dev(), dtypes.float32, True)
    assert mm.mma_precision(_dev(), dtypes.float64, True) is None  # (read only for a GEMM
    #                                                                 tensor cores could take)


def test_float16_bias_and_addmm_round_once():
    """float16 linear with a bias, addmm, baddbmm, addmv: the product's float32 sum, alpha and
    beta * input are rounded to float16 once (PyTorch's epilogue): 1 + 2^-11 + 2^-11 is
    1 + 2^-10, where rounding the product first gives 1. On random data within a few float16
    units of the float64 result rounded once (rounding twice was up to 838 off near 0)."""
    dev = _dev()
    if not dev.fp16:
        pytest.skip("no float16 on this device")
    F = clgrad.nn.functional
    x = clgrad.tensor([[1.0, 2.0 ** -11]]).half()
    w = clgrad.tensor([[1.0, 1.0]]).half()
    b = clgrad.tensor([2.0 ** -11]).half()
    want = 1 + 2.0 ** -10
    assert F.linear(x, w, b).item() == want
    assert clgrad.addmm(b, x, w.t()).item() == want
    assert clgrad.baddbmm(b.view(1, 1, 1), x.view(1, 1, 2), w.t().reshape(1, 2, 1)).item() == want
    assert clgrad.addmv(b, x, w[0]).item() == want
    with clgrad.autocast(dev.type, dtype=clgrad.float16):
        assert F.linear(x.float(), w.float(), b.float()).item() == want
    rng = np.random.default_rng(0)
    X = rng.standard_normal((130, 77)).astype(np.float16)
    W = rng.standard_normal((131, 77)).astype(np.float16)
    B = rng.standard_normal(131).astype(np.float16)
    exact = X.astype(np.float64) @ W.T.astype(np.float64)
    for got, ref in ((F.linear(clgrad.tensor(X), clgrad.tensor(W), clgrad.tensor(B)),
                      exact + B),
                     (clgrad.addmm(clgrad.tensor(B), clgrad.tensor(X), clgrad.tensor(W).t(),
                                   beta=0.5, alpha=2), 0.5 * B.astype(np.float64) + 2 * exact)):
        ref16 = ref.astype(np.float16).astype(np.float64)
        ulp = np.spacing(np.abs(ref).astype(np.float16)).astype(np.float64)
        # float32's summation error over 77 products, in float16 units where it cancels
        err = np.abs(got.numpy().astype(np.float64) - ref16)
        assert (err <= ulp + 1e-6 * np.abs(exact).max()).all(), (err / ulp).max()


def _need_async():
    dev = _need_mma(fp16=True)
    if not mm.has_mma_async(dev):
        pytest.skip("no cp.async/ldmatrix kernel here (kernels/matmul_mma_async_nv.cl)")
    return dev


def _geo(t):
    """(offset, row stride, column stride, *batch strides) of a clgrad operand."""
    return (t._offset, *t._strides[-2:], *t._strides[:-2])


@pytest.mark.parametrize("shape", [(8, 8, 8), (72, 40, 136), (256, 96, 384), (200, 520, 264),
                                   (136, 1000, 64)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layouts", ["aa", "at", "ta", "tt"])
def test_float16_pipelined_kernel_every_layout(shape, layouts):
    """kernels/matmul_mma_async_nv.cl takes every float16 GEMM whose operands are 16-byte
    aligned along k or along their rows (A and B each kept [row][k] or [k][row], fragments by
    ldmatrix or ldmatrix.trans): checked to be the kernel that ran, and its result within one
    float16 unit (+ float32 sums) of float64, on and off the 128 x 128 / 64 x 64 tile edges and
    the depth-32 tile, in batches of views at an offset of 8 elements."""
    dev = _need_async()
    m, k, n = shape
    rng = np.random.default_rng(m + 3 * k + 7 * n)
    a = rng.standard_normal((3, m, k)).astype(np.float16)
    b = rng.standard_normal((3, k, n)).astype(np.float16)

    def operand(x, trans):
        if trans:  # stored (batch, cols, rows), viewed back: contiguous along its rows
            flat = np.concatenate([np.zeros(8, x.dtype), np.swapaxes(x, 1, 2).ravel()])
            return clgrad.tensor(flat)[8:].view(x.shape[0], x.shape[2], x.shape[1]).transpose(1, 2)
        flat = np.concatenate([np.zeros(8, x.dtype), x.ravel()])
        return clgrad.tensor(flat)[8:].view(x.shape)

    ta, tb = operand(a, layouts[0] == "t"), operand(b, layouts[1] == "t")
    kern = mm._mma_launch(dev, "f16", m, n, k, 3, _geo(ta), _geo(tb))[0]
    assert kern.function_name == "gemm_mma_async"
    got = (ta @ tb).numpy().astype(np.float64)
    want = a.astype(np.float64) @ b.astype(np.float64)
    ulp = np.spacing(np.abs(want).astype(np.float16)).astype(np.float64)
    err = np.abs(got - want)
    assert (err <= ulp + 1e-6 * np.sqrt(k) * np.abs(want).max() + 1e-7).all(), err.max()


def test_float16_pipelined_kernel_alpha_beta_nan_and_fallback():
    """The pipelined kernel's epilogue (alpha, beta; C unread at beta == 0), NaN in one row of
    A reaching only that row of C, and operands it cannot copy in 16-byte chunks (k = 41, a
    view at an odd offset) taking kernels/matmul_mma_nv.cl, with the same result."""
    dev = _need_async()
    rng = np.random.default_rng(11)
    a = rng.standard_normal((2, 96, 64)).astype(np.float16)
    b = rng.standard_normal((2, 64, 160)).astype(np.float16)
    c0 = rng.standard_normal((2, 96, 160)).astype(np.float16)
    want = 0.5 * (a.astype(np.float64) @ b.astype(np.float64)) + 2.0 * c0
    for _ in range(2):  # the second call runs the kept plan
        c = clgrad.tensor(c0)
        mm.gemm(c, clgrad.tensor(a), clgrad.tensor(b), alpha=0.5, beta=2.0)
        assert np.abs(c.numpy().astype(np.float64) - want).max() <= 4e-3 * np.abs(want).max()
    c = clgrad.tensor(np.full((2, 96, 160), np.nan, np.float16))
    mm.gemm(c, clgrad.tensor(a), clgrad.tensor(b))
    assert np.isfinite(c.numpy()).all()
    an = a.copy()
    an[1, 5, 17] = np.nan
    got = (clgrad.tensor(an) @ clgrad.tensor(b)).numpy()
    assert np.isnan(got[1, 5]).all() and np.isfinite(np.delete(got[1], 5, axis=0)).all()
    assert np.isfinite(got[0]).all()
    a41 = rng.standard_normal((96, 41)).astype(np.float16)
    b41 = rng.standard_normal((41, 160)).astype(np.float16)
    ta, tb = clgrad.tensor(a41), clgrad.tensor(b41)
    assert mm._mma_launch(dev, "f16", 96, 160, 41, 1, _geo(ta), _geo(tb))[0].function_name == \
        "gemm_mma"
    want = a41.astype(np.float64) @ b41.astype(np.float64)
    got = (ta @ tb).numpy().astype(np.float64)
    assert np.abs(got - want).max() <= 2e-3 * np.abs(want).max()


@pytest.mark.parametrize("shape", [(72, 40, 136), (256, 96, 384), (130, 1000, 64)],
                         ids=lambda s: "x".join(map(str, s)))
def test_tf32_pipelined_kernel_for_operands_along_k(shape, tf32_off):
    """TF32 with both operands contiguous along k (linear's forward, x @ W^T) takes the
    pipelined kernel (fragments rounded to TF32 after ldmatrix): within TF32's error bound of
    float64 and above float32's (TF32 ran); B row-major keeps kernels/matmul_mma_nv.cl
    (ldmatrix.trans has no 32-bit form), with the same bound."""
    dev = _need_mma()
    if not mm.has_mma_async(dev, "tf32"):
        pytest.skip("no TF32 cp.async/ldmatrix kernel here")
    m, k, n = shape
    rng = np.random.default_rng(m + k + n)
    x = rng.standard_normal((3, m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    tx, tw = clgrad.tensor(x), clgrad.tensor(w)
    clgrad.backends.cuda.matmul.allow_tf32 = True
    assert mm._mma_launch(dev, "tf32", m, n, k, 1, _geo(tx[0]), _geo(tw.t()))[0] \
        .function_name == "gemm_mma_async"
    want = x.astype(np.float64) @ w.T.astype(np.float64)
    scale = np.abs(x).max() * np.abs(w).max() * np.sqrt(k)
    for _ in range(2):  # the second call replays linear's recorded launch
        err = np.abs(clgrad.nn.functional.linear(tx, tw).numpy() - want).max()
        assert 1e-5 * scale < err <= 2e-3 * scale
    tb = clgrad.tensor(np.ascontiguousarray(w.T))
    assert mm._mma_launch(dev, "tf32", m, n, k, 1, _geo(tx[0]), _geo(tb))[0] \
        .function_name == "gemm_mma"
    err = np.abs((tx @ tb).numpy() - want).max()
    assert 1e-5 * scale < err <= 2e-3 * scale


def test_reloading_backends_cuda_keeps_one_tf32_state(tf32_off):
    """importlib.reload(clgrad.backends.cuda) resets TF32 to the default ('highest', as
    reloading clgrad.backends resets its settings) in the one state matmul reads: before, the
    reload made a new state, so the flags said False while matmul kept running TF32 and a
    later switch never reached it."""
    import importlib
    cuda = clgrad.backends.cuda
    cuda.matmul.allow_tf32 = True
    assert mm.allow_tf32()
    e = clgrad.settings.epoch()
    cuda = importlib.reload(cuda)
    assert cuda.matmul.allow_tf32 is False and not mm.allow_tf32()
    assert clgrad.settings.epoch() > e
    cuda.matmul.allow_tf32 = True
    assert mm.allow_tf32() and clgrad.get_float32_matmul_precision() == "high"


@pytest.mark.parametrize("layouts", ["aa", "at", "cc", "tt"])
def test_float16_gemm_into_float32(layouts):
    """A float32 C of float16 A and B (C_FLOAT: the float16 convolutions' split-K partial
    sums) keeps float32's sums unrounded: within float32's summation error of the float64
    product, with beta reading the float32 C; both kernels (aligned: pipelined, 'c' at an
    offset of 3: gemm_mma)."""
    _need_mma(fp16=True)
    rng = np.random.default_rng(21)
    a = rng.standard_normal((130, 96)).astype(np.float16)
    b = rng.standard_normal((96, 72)).astype(np.float16)
    c0 = rng.standard_normal((130, 72)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64) + 0.5 * c0
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)) + np.abs(c0)
    c = clgrad.tensor(c0)
    mm.gemm(c, _operand(a, layouts[0], rng), _operand(b, layouts[1], rng), 1.0, 0.5)
    assert c.dtype is clgrad.float32
    err = np.abs(c.numpy().astype(np.float64) - want)
    assert (err <= 2 * 96 * 2.0 ** -24 * mag).all(), (err / mag).max()


def test_float16_gemm_into_float32_everywhere_and_other_mixes_refused():
    """A float32 C of float16 operands on any device with float16 (tensor cores, or float32
    copies of the operands): float32's sums, not rounded to float16, with a stride-0
    (broadcast) operand; any other mix of dtypes raises RuntimeError."""
    if not _dev().fp16:
        pytest.skip("no float16 on this device")
    rng = np.random.default_rng(22)
    a = rng.standard_normal((3, 40, 24)).astype(np.float16)
    b = rng.standard_normal((24, 36)).astype(np.float16)
    c = clgrad.zeros(3, 40, 36)
    mm.gemm(c, clgrad.tensor(a), clgrad.tensor(b).expand(3, 24, 36))
    want = a.astype(np.float64) @ b.astype(np.float64)
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert c.dtype is clgrad.float32
    assert (np.abs(c.numpy() - want) <= 2 * 24 * 2.0 ** -24 * mag).all()
    with pytest.raises(RuntimeError, match="expected operands of the result's dtype"):
        mm.gemm(clgrad.zeros(4, 4), clgrad.ones(4, 4, dtype=clgrad.float64),
                clgrad.ones(4, 4, dtype=clgrad.float64))
