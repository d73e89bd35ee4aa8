"""clgrad.amp.autocast (issue 32): the matmul family runs in float16 with float32 sums, the
losses of PyTorch's float32 list in float32, against NumPy (float16-rounded operands,
float64 sums, one rounding) and, where installed, torch's CPU autocast."""
import warnings

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F

F16, F32, F64 = clgrad.float16, clgrad.float32, clgrad.float64
RNG = np.random.default_rng(32)
EPS16 = 2.0 ** -10  # float16's spacing at 1: one rounding of a float16 result


def _ref(a, b):
    """float16 operands, an exact (float64) sum, rounded once to float16."""
    return (a.astype(np.float16).astype(np.float64) @ b.astype(np.float16).astype(np.float64)
            ).astype(np.float16)


def _close16(got, want, scale=None):
    """Within one float16 spacing of the reference, per element, relative to ``scale`` (the
    magnitude of the rounded terms; default |want|): a float32 and a float64 sum may round
    the product to neighbouring float16 values, and a bias added afterwards keeps that
    difference at the product's magnitude."""
    g = got.detach().numpy().astype(np.float64)
    w = np.asarray(want, np.float64)
    bound = EPS16 * (np.abs(w) if scale is None else scale)
    assert np.all(np.abs(g - w) <= bound), np.max(np.abs(g - w) - bound)


def test_matmul_family_runs_in_float16_under_autocast(cpu_fp16):
    a = RNG.standard_normal((2, 5, 33))
    b = RNG.standard_normal((2, 33, 7))
    bias = RNG.standard_normal(7)
    ta = clgrad.tensor(a, dtype=F32)
    tb = clgrad.tensor(b.transpose(0, 2, 1).copy(), dtype=F32).transpose(1, 2)  # strided
    with clgrad.autocast("cpu", dtype=F16):
        assert clgrad.is_autocast_enabled("cpu") and not clgrad.is_autocast_enabled("cuda")
        outs = {"matmul": ta @ tb, "bmm": clgrad.bmm(ta, tb), "mm": clgrad.mm(ta[0], tb[0]),
                "linear": F.linear(ta, tb[0].t(), clgrad.tensor(bias, dtype=F32)),
                "addmm": clgrad.addmm(clgrad.tensor(bias, dtype=F32), ta[1], tb[1]),
                "baddbmm": clgrad.baddbmm(clgrad.tensor(bias, dtype=F32), ta, tb)}
        dot = clgrad.dot(ta[0, 0], ta[0, 1])  # not on the list: float32
        f64 = clgrad.tensor(a[0], dtype=F64) @ clgrad.tensor(b[0], dtype=F64)  # never cast
    assert not clgrad.is_autocast_enabled("cpu")
    for name, out in outs.items():
        assert out.dtype is F16, name
    _close16(outs["matmul"], _ref(a, b))
    _close16(outs["bmm"], _ref(a, b))
    _close16(outs["mm"], _ref(a[0], b[0]))
    b16 = bias.astype(np.float16).astype(np.float64)
    for name, prod in (("linear", _ref(a, b[0])), ("addmm", _ref(a[1], b[1])),
                       ("baddbmm", _ref(a, b))):
        prod = prod.astype(np.float64)
        _close16(outs[name], (prod + b16).astype(np.float16), np.abs(prod) + np.abs(b16))
    assert dot.dtype is F32 and f64.dtype is F64
    assert (ta @ tb).dtype is F32  # off again after the block


def test_autocast_gradients_and_losses(cpu_fp16):
    x = RNG.standard_normal((6, 10))
    w = RNG.standard_normal((4, 10)) * 0.3
    y = np.array([0, 3, 1, 2, 2, 0])
    lin = clgrad.nn.Linear(10, 4)
    with clgrad.no_grad():
        lin.weight.copy_(clgrad.tensor(w, dtype=F32))
        lin.bias.zero_()
    with clgrad.autocast("cpu", dtype=F16):
        out = lin(clgrad.tensor(x, dtype=F32))
        loss = F.cross_entropy(out, clgrad.tensor(y))
        mse = F.mse_loss(out, clgrad.zeros(6, 4))
        loss.backward()  # backward inside autocast: formulas in their saved dtypes
    assert out.dtype is F16 and loss.dtype is F32 and mse.dtype is F32
    assert lin.weight.grad.dtype is F32 and lin.bias.grad.dtype is F32
    # NumPy: float16 logits, float32 softmax cross entropy; d/dW = (p - onehot)^T x / N
    logits = _ref(x, w.T).astype(np.float64)
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    want = -np.log(p[np.arange(6), y]).mean()
    assert loss.item() == pytest.approx(want, rel=1e-5)
    gl = (p - np.eye(4)[y]) / 6
    np.testing.assert_allclose(lin.weight.grad.numpy(), gl.T @ x, rtol=2e-2, atol=2e-3)
    np.testing.assert_allclose(lin.bias.grad.numpy(), gl.sum(0), rtol=2e-2, atol=2e-3)


def test_autocast_matches_torch_cpu_autocast(cpu_fp16):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((8, 16)).astype(np.float32)
    w = (RNG.standard_normal((5, 16)) * 0.2).astype(np.float32)
    b = RNG.standard_normal(5).astype(np.float32)
    y = RNG.integers(0, 5, 8)
    got, want = {}, {}
    for name, lib in (("clgrad", clgrad), ("torch", torch)):
        tw = lib.tensor(w, requires_grad=True)
        tb = lib.tensor(b, requires_grad=True)
        with lib.autocast("cpu", dtype=lib.float16):
            out = lib.nn.functional.linear(lib.tensor(x), tw, tb)
            mm = lib.tensor(x) @ tw.t()
            loss = lib.nn.functional.cross_entropy(out, lib.tensor(y))
        loss.backward()
        res = got if name == "clgrad" else want
        res.update(out=out, mm=mm, loss=loss, gw=tw.grad, gb=tb.grad)
    for k in got:
        assert str(got[k].dtype).split(".")[-1] == str(want[k].dtype).split(".")[-1], k
    prod = np.abs(_ref(x, w.T).astype(np.float64))
    _close16(got["mm"], want["mm"].detach().numpy(), prod)
    # torch adds the bias inside its GEMM (one rounding), clgrad after it (two)
    _close16(got["out"], want["out"].detach().numpy(),
             prod + np.abs(b.astype(np.float16).astype(np.float64)))
    assert got["loss"].item() == pytest.approx(want["loss"].item(), rel=1e-4)
    np.testing.assert_allclose(got["gw"].numpy(), want["gw"].numpy(), rtol=1e-2, atol=1e-3)
    np.testing.assert_allclose(got["gb"].numpy(), want["gb"].numpy(), rtol=1e-2, atol=1e-3)


def test_autocast_switches_and_errors(cpu_fp16):
    a, b = clgrad.ones(2, 3), clgrad.ones(3, 2)
    with clgrad.autocast("cpu", dtype=F16):
        with clgrad.autocast("cpu", enabled=False):
            assert (a @ b).dtype is F32
        assert (a @ b).dtype is F16
        with clgrad.autocast("cuda", dtype=F16):  # another device type: cpu stays on
            assert (a @ b).dtype is F16

    @clgrad.autocast("cpu", dtype=F16)
    def f(u, v):
        return u @ v
    assert f(a, b).dtype is F16 and (a @ b).dtype is F32
    with clgrad.autocast("cuda", dtype=F16):  # CPU-device tensors are not 'cuda' ones
        assert (a @ b).dtype is F32
    # bfloat16 operands (rounded once each), float32 sums, the result rounded once
    want = (a.bfloat16().float() @ b.bfloat16().float()).numpy()
    with clgrad.autocast("cpu"):  # PyTorch's default for 'cpu' is bfloat16
        y = a @ b
        assert y.dtype is clgrad.bfloat16
        np.testing.assert_allclose(y.float().numpy(), want, rtol=2 ** -8, atol=1e-6)
        assert (a * 2).dtype is F32  # ops off the list run as before
        # PyTorch's CPU float32 list has the losses, not softmax or the norms (PyTorch 2.14)
        assert F.softmax(a, 1).dtype is F32 and F.layer_norm(a, (3,)).dtype is F32
        assert F.softmax(a.half(), 1).dtype is F16
        assert F.softmax(a.bfloat16(), 1).dtype is clgrad.bfloat16
        assert F.layer_norm(a.bfloat16(), (3,)).dtype is clgrad.bfloat16
        assert F.mse_loss(a.bfloat16(), a.bfloat16()).dtype is F32
        assert F.cross_entropy(a.half(), clgrad.tensor([0, 1])).dtype is F32
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with clgrad.autocast("cpu", dtype=F32):
            assert (a @ b).dtype is F32 and not clgrad.is_autocast_enabled("cpu")
    assert any("Disabling autocast" in str(w.message) for w in caught)
    with pytest.raises(RuntimeError, match="device_type 'cpu' or 'cuda'"):
        clgrad.autocast("mps")


def test_autocast_on_a_device_without_fp16_says_so(monkeypatch):
    """Every device: float16 autocast on a device without cl_khr_fp16 raises, naming it."""
    a, b = clgrad.ones(2, 3), clgrad.ones(3, 2)
    dev = a._storage.device
    monkeypatch.setattr(dev, "fp16", False)
    kind = "cuda" if dev.type == "cuda" else "cpu"
    with clgrad.autocast(kind, dtype=F16):
        with pytest.raises(RuntimeError, match="lacks cl_khr_fp16"):
            a @ b


@pytest.mark.parametrize("kind", ["cuda", "cpu"])
def test_float32_list_norms_and_softmax_under_autocast(cpu_fp16, monkeypatch, kind):
    """PyTorch's CUDA float32 list: layer_norm, group_norm, softmax and log_softmax of a
    float16 input under autocast('cuda') compute and return float32; its CPU list lacks
    them: under autocast('cpu') they return float16, a float32 GroupNorm / LayerNorm after a
    float16 conv computing in float32 (PyTorch's CPU mixed type; dtypes checked with PyTorch
    2.14). Both train; an explicit softmax dtype wins. ('cuda': this device posing as a
    GPU's device type, as autocast reads it.)"""
    if kind == "cuda":
        monkeypatch.setattr(clgrad.default_device(), "type", "cuda")
    rng = np.random.default_rng(8)
    conv = clgrad.nn.Conv2d(4, 8, 3, padding=1)
    gn = clgrad.nn.GroupNorm(2, 8)
    ln = clgrad.nn.LayerNorm(6)
    x = clgrad.tensor(rng.standard_normal((2, 4, 6, 6)), dtype=F32)
    with clgrad.autocast(kind, dtype=F16):
        h = conv(x)
        g = gn(h)
        l16 = ln(h)
        sm = F.softmax(h, dim=1)
        lsm = F.log_softmax(h, dim=1)
        sm16 = F.softmax(h, dim=1, dtype=F16)
    assert h.dtype is F16
    want_dt = F32 if kind == "cuda" else F16
    assert g.dtype is want_dt and l16.dtype is want_dt and sm.dtype is want_dt
    assert lsm.dtype is want_dt and sm16.dtype is F16
    g, sm = g.float(), sm.float()
    hv = h.detach().numpy().astype(np.float64)
    e = np.exp(hv - hv.max(1, keepdims=True))
    tol = 1e-5 if kind == "cuda" else 2 ** -11  # (a float16 result: rounded once)
    np.testing.assert_allclose(sm.detach().numpy(), e / e.sum(1, keepdims=True), rtol=tol,
                               atol=1e-7)
    grp = hv.reshape(2, 2, -1)
    want = ((grp - grp.mean(-1, keepdims=True)) / np.sqrt(grp.var(-1, keepdims=True) + 1e-5))
    np.testing.assert_allclose(g.detach().numpy(), want.reshape(hv.shape), rtol=1e-4 + tol,
                               atol=1e-4 + tol)
    (g.sum() + l16.sum() + lsm.sum()).backward()
    assert conv.weight.grad.dtype is F32 and gn.weight.grad.dtype is F32
