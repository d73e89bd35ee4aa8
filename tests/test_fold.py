"""F.unfold / F.fold and nn.Unfold / nn.Fold (im2col, col2im): values against NumPy loop
oracles (PyTorch's documented formulas), each op the other's adjoint, gradients, dtypes, the
chunked launches, errors; against PyTorch where it is importable."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.ops.conv import fold as fold_mod

RNG = np.random.default_rng(7)


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def np_unfold(x, k, d=1, p=0, s=1):
    """out[n, (c kh + i) kw + j, bh oW + bw] = xpad[n, c, bh sh + i dh, bw sw + j dw]."""
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = map(_pair, (k, d, p, s))
    n, c, h, w = x.shape
    xp = np.zeros((n, c, h + 2 * ph, w + 2 * pw), x.dtype)
    xp[:, :, ph:ph + h, pw:pw + w] = x
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, c * kh * kw, oh * ow), x.dtype)
    for ci in range(c):
        for i in range(kh):
            for j in range(kw):
                for bh in range(oh):
                    for bw in range(ow):
                        out[:, (ci * kh + i) * kw + j, bh * ow + bw] = \
                            xp[:, ci, bh * sh + i * dh, bw * sw + j * dw]
    return out


def np_fold(col, size, k, d=1, p=0, s=1):
    """The sum of every block's values into its pixels (padding dropped)."""
    (h, w), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = map(_pair, (size, k, d, p, s))
    n, K, L = col.shape
    c = K // (kh * kw)
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    assert oh * ow == L
    out = np.zeros((n, c, h + 2 * ph, w + 2 * pw), col.dtype)
    for ci in range(c):
        for i in range(kh):
            for j in range(kw):
                for bh in range(oh):
                    for bw in range(ow):
                        out[:, ci, bh * sh + i * dh, bw * sw + j * dw] += \
                            col[:, (ci * kh + i) * kw + j, bh * ow + bw]
    return out[:, :, ph:ph + h, pw:pw + w]


# (input shape (N, C, H, W), kernel_size, dilation, padding, stride)
GEOMS = [((2, 3, 5, 6), 2, 1, 0, 1),
         ((1, 2, 7, 5), (2, 3), (1, 2), 1, (2, 1)),
         ((3, 1, 4, 4), 3, 1, 2, 3),
         ((2, 2, 6, 9), (3, 1), (2, 1), (0, 2), (1, 3)),
         ((1, 4, 3, 3), 1, 1, 0, 1),
         ((2, 1, 5, 5), 5, 1, 0, 1)]
IDS = [f"geom{i}" for i in range(len(GEOMS))]


@pytest.mark.parametrize("shape,k,d,p,s", GEOMS, ids=IDS)
def test_unfold_and_fold_match_the_loops(shape, k, d, p, s):
    x = RNG.standard_normal(shape)
    want = np_unfold(x, k, d, p, s)
    got = F.unfold(clgrad.tensor(x), k, d, p, s)
    assert got.dtype is clgrad.float64 and tuple(got.shape) == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=0)
    col = RNG.standard_normal(want.shape)
    back = F.fold(clgrad.tensor(col), shape[2:], k, d, p, s)
    np.testing.assert_allclose(back.numpy(), np_fold(col, shape[2:], k, d, p, s), rtol=1e-12,
                               atol=1e-12)
    # the keyword names are PyTorch's, and the modules are the functions
    got_kw = F.unfold(clgrad.tensor(x), kernel_size=k, dilation=d, padding=p, stride=s)
    np.testing.assert_array_equal(got_kw.numpy(), want)
    np.testing.assert_array_equal(
        clgrad.nn.Unfold(k, d, p, s)(clgrad.tensor(x)).numpy(), want)
    np.testing.assert_array_equal(
        clgrad.nn.Fold(shape[2:], k, d, p, s)(clgrad.tensor(col)).numpy(), back.numpy())


@pytest.mark.parametrize("shape,k,d,p,s", GEOMS[:3], ids=IDS[:3])
def test_each_is_the_others_adjoint_and_gradient(shape, k, d, p, s):
    """<unfold(x), y> = <x, fold(y)>, and the gradients are fold(g) and unfold(g)."""
    x = RNG.standard_normal(shape)
    y = RNG.standard_normal(np_unfold(x, k, d, p, s).shape)
    ux = F.unfold(clgrad.tensor(x), k, d, p, s).numpy()
    fy = F.fold(clgrad.tensor(y), shape[2:], k, d, p, s).numpy()
    np.testing.assert_allclose((ux * y).sum(), (x * fy).sum(), rtol=1e-12)
    xt = clgrad.tensor(x, requires_grad=True)
    (F.unfold(xt, k, d, p, s) * clgrad.tensor(y)).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), fy, rtol=1e-12, atol=1e-12)
    yt = clgrad.tensor(y, requires_grad=True)
    (F.fold(yt, shape[2:], k, d, p, s) * clgrad.tensor(x)).sum().backward()
    np.testing.assert_allclose(yt.grad.numpy(), ux, rtol=1e-12, atol=1e-12)


def test_gradcheck_through_strided_inputs():
    x = clgrad.tensor(RNG.standard_normal((2, 5, 6, 3)), requires_grad=True)
    xv = x.permute(0, 3, 1, 2)  # (2, 3, 5, 6), not contiguous
    assert clgrad.autograd.gradcheck(lambda v: F.unfold(v, 2, 1, 1, 2), [xv])
    col = clgrad.tensor(RNG.standard_normal((2, 12, 9)), requires_grad=True)
    colv = col.transpose(1, 2).contiguous().transpose(1, 2)  # strided (column-major) view
    assert clgrad.autograd.gradcheck(lambda v: F.fold(v, (4, 4), 2, 1, 1, 2), [colv])


def test_unbatched_zero_batch_and_strided_inputs():
    x = RNG.standard_normal((3, 5, 4))
    got = F.unfold(clgrad.tensor(x), 2, padding=1)
    np.testing.assert_array_equal(got.numpy(), np_unfold(x[None], 2, p=1)[0])
    back = F.fold(got, (5, 4), 2, padding=1)
    assert tuple(back.shape) == (3, 5, 4)
    np.testing.assert_allclose(back.numpy(), np_fold(got.numpy()[None], (5, 4), 2, p=1)[0])
    assert tuple(F.unfold(clgrad.zeros(0, 2, 4, 4), 2).shape) == (0, 8, 9)
    assert tuple(F.fold(clgrad.zeros(0, 8, 9), 4, 2).shape) == (0, 2, 4, 4)
    big = RNG.standard_normal((2, 3, 9, 8))
    view = clgrad.tensor(big)[:, ::-1, 1::2, ::3]  # offset, negative and > 1 strides
    np.testing.assert_array_equal(F.unfold(view, (2, 1)).numpy(),
                                  np_unfold(big[:, ::-1, 1::2, ::3], (2, 1)))
    col = RNG.standard_normal((3, 4, 12))
    colv = clgrad.tensor(col)[1:]  # an offset view: the kernel reads a dense copy
    np.testing.assert_allclose(F.fold(colv, (4, 5), 2).numpy(), np_fold(col[1:], (4, 5), 2))


def test_chunked_launches(monkeypatch):
    """More (sample, channel) maps than one launch takes: chunks of samples give the same."""
    x = RNG.standard_normal((5, 3, 4, 5))
    want_u = np_unfold(x, 2, p=1)
    col = RNG.standard_normal(want_u.shape)
    want_f = np_fold(col, (4, 5), 2, p=1)
    monkeypatch.setattr(fold_mod, "MAPS_PER_LAUNCH", 7)  # 2 samples of 3 channels a launch
    np.testing.assert_array_equal(F.unfold(clgrad.tensor(x), 2, padding=1).numpy(), want_u)
    np.testing.assert_allclose(F.fold(clgrad.tensor(col), (4, 5), 2, padding=1).numpy(),
                               want_f, rtol=1e-12)
    monkeypatch.setattr(fold_mod, "MAPS_PER_LAUNCH", 2)
    with pytest.raises(RuntimeError, match="at most 2 channels"):
        F.unfold(clgrad.tensor(x), 2)


def test_dtypes():
    x = RNG.standard_normal((2, 3, 5, 5)).astype(np.float32)
    want = np_unfold(x, 3, p=1)
    got = F.unfold(clgrad.tensor(x), 3, padding=1)
    assert got.dtype is clgrad.float32
    np.testing.assert_array_equal(got.numpy(), want)
    bf = clgrad.tensor(x).to(clgrad.bfloat16)
    ub = F.unfold(bf, 3, padding=1)
    assert ub.dtype is clgrad.bfloat16
    np.testing.assert_array_equal(ub.float().numpy(), np_unfold(bf.float().numpy(), 3, p=1))
    fb = F.fold(ub, (5, 5), 3, padding=1)
    assert fb.dtype is clgrad.bfloat16
    np.testing.assert_allclose(fb.float().numpy(), np_fold(ub.float().numpy(), 5, 3, p=1),
                               rtol=1e-2, atol=1e-2)
    if clgrad.default_device().fp16:
        h = F.fold(F.unfold(clgrad.tensor(x).half(), 3, padding=1), 5, 3, padding=1)
        assert h.dtype is clgrad.float16
        np.testing.assert_allclose(h.float().numpy(), np_fold(want, 5, 3, p=1), rtol=1e-2,
                                   atol=1e-2)
    for bad in (clgrad.int64, clgrad.int32, clgrad.bool):
        with pytest.raises(RuntimeError, match="floating point input"):
            F.unfold(clgrad.zeros(1, 1, 3, 3, dtype=bad), 2)
        with pytest.raises(RuntimeError, match="floating point input"):
            F.fold(clgrad.zeros(1, 4, 4, dtype=bad), 3, 2)


def test_errors():
    x = clgrad.zeros(1, 1, 3, 3)
    cases = [
        (lambda: F.unfold(clgrad.zeros(3, 4), 2), RuntimeError, "Expected 3D or 4D"),
        (lambda: F.unfold(clgrad.zeros(1, 0, 3, 3), 2), RuntimeError, "Expected 3D or 4D"),
        (lambda: F.unfold(x, 4), RuntimeError, r"sliding blocks as \(0, 0\)"),
        (lambda: F.unfold(x, 0), RuntimeError, "kernel size should be greater than zero"),
        (lambda: F.unfold(x, 2, stride=0), RuntimeError, "stride should be greater than zero"),
        (lambda: F.unfold(x, 2, padding=-1), RuntimeError, "padding should be non-negative"),
        (lambda: F.unfold(x, 2, dilation=0), RuntimeError, "dilation should be greater"),
        (lambda: F.unfold(x, (2, 2, 2)), RuntimeError, "kernel_size equals to 2, but got "
                                                        "size 3"),
        (lambda: F.unfold(x, 2.0), TypeError, "kernel_size"),
        (lambda: F.unfold(np.zeros((1, 1, 3, 3)), 2), TypeError, "Tensor"),
        (lambda: F.fold(clgrad.zeros(1, 5, 4), 3, 2), RuntimeError, "divisible by the product"),
        (lambda: F.fold(clgrad.zeros(1, 4, 5), 3, 2), RuntimeError,
         r"sliding blocks 2 \* 2 = 4, but got input.size\(2\)=5"),
        (lambda: F.fold(clgrad.zeros(1, 1, 4, 4), 3, 2), RuntimeError, "Expected 2D or 3D"),
        (lambda: F.fold(clgrad.zeros(1, 4, 1), 1, 2), RuntimeError, "0 \\* 0 = 0"),
        (lambda: F.fold(clgrad.zeros(1, 4, 4), 0, 2), RuntimeError, "output_size should be"),
        (lambda: F.fold(clgrad.zeros(1, 4, 4), (3, 3, 3), 2), RuntimeError, "output_size"),
    ]
    for fn, err, msg in cases:
        with pytest.raises(err, match=msg):
            fn()


def test_module_reprs_and_faces():
    assert repr(clgrad.nn.Unfold((2, 3), stride=2)) == \
        "Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=2)"
    assert repr(clgrad.nn.Fold(4, 2)) == \
        "Fold(output_size=4, kernel_size=2, dilation=1, padding=0, stride=1)"
    assert "fold" in F.__all__ and "unfold" in F.__all__
    assert F.unfold is not clgrad.Tensor.unfold  # Tensor.unfold stays the dim-window view
    t = clgrad.arange(6.0)
    assert t.unfold(0, 2, 2).tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]


@pytest.mark.parametrize("shape,k,d,p,s", GEOMS, ids=IDS)
def test_against_torch(shape, k, d, p, s):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(shape)
    xt = torch.tensor(x, requires_grad=True)
    xc = clgrad.tensor(x, requires_grad=True)
    ut, uc = torch.nn.functional.unfold(xt, k, d, p, s), F.unfold(xc, k, d, p, s)
    np.testing.assert_array_equal(uc.detach().numpy(), ut.detach().numpy())
    r = RNG.standard_normal(tuple(ut.shape))
    (ut * torch.tensor(r)).sum().backward()
    (uc * clgrad.tensor(r)).sum().backward()
    np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)
    rt = torch.tensor(r, requires_grad=True)
    rc = clgrad.tensor(r, requires_grad=True)
    ft = torch.nn.functional.fold(rt, shape[2:], k, d, p, s)
    fc = F.fold(rc, shape[2:], k, d, p, s)
    np.testing.assert_allclose(fc.detach().numpy(), ft.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    (ft * torch.tensor(x)).sum().backward()
    (fc * clgrad.tensor(x)).sum().backward()
    np.testing.assert_allclose(rc.grad.numpy(), rt.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert repr(clgrad.nn.Fold(shape[2:], k, d, p, s)) == repr(
        torch.nn.Fold(shape[2:], k, d, p, s))
