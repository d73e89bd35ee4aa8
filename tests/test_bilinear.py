"""F.bilinear and nn.Bilinear: y = x1^T A x2 + b against NumPy's einsum (PyTorch's documented
formula), gradients (analytic and gradcheck), PyTorch's init bounds and errors; against PyTorch
where it is importable."""
import math

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F

RNG = np.random.default_rng(11)


def np_bilinear(x1, x2, w, b=None):
    y = np.einsum("...i,oij,...j->...o", x1, w, x2)
    return y if b is None else y + b


@pytest.mark.parametrize("lead", [(4,), (), (2, 3), (0,)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_values_and_gradients_match_numpy(lead, with_bias):
    x1, x2 = RNG.standard_normal(lead + (3,)), RNG.standard_normal(lead + (4,))
    w, b = RNG.standard_normal((5, 3, 4)), RNG.standard_normal(5)
    ts = [clgrad.tensor(v, requires_grad=True) for v in (x1, x2, w, b)]
    y = F.bilinear(ts[0], ts[1], ts[2], ts[3] if with_bias else None)
    want = np_bilinear(x1, x2, w, b if with_bias else None)
    assert tuple(y.shape) == want.shape and y.dtype is clgrad.float64
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    g = RNG.standard_normal(want.shape)
    (y * clgrad.tensor(g)).sum().backward()
    np.testing.assert_allclose(ts[0].grad.numpy(), np.einsum("...o,oij,...j->...i", g, w, x2),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ts[1].grad.numpy(), np.einsum("...o,oij,...i->...j", g, w, x1),
                               rtol=1e-12, atol=1e-12)
    gw = np.einsum("bo,bi,bj->oij", g.reshape(-1, 5), x1.reshape(-1, 3), x2.reshape(-1, 4))
    np.testing.assert_allclose(ts[2].grad.numpy(), gw, rtol=1e-12, atol=1e-12)
    if with_bias:
        np.testing.assert_allclose(ts[3].grad.numpy(), g.reshape(-1, 5).sum(0), rtol=1e-12,
                                   atol=1e-12)


def test_gradcheck_and_float32_bfloat16():
    ins = [clgrad.tensor(RNG.standard_normal(s), requires_grad=True)
           for s in ((2, 3), (2, 4), (2, 3, 4), (2,))]
    assert clgrad.autograd.gradcheck(lambda a, b, w, c: F.bilinear(a, b.t().t(), w, c), ins)
    x1, x2 = RNG.standard_normal((6, 3)), RNG.standard_normal((6, 4))
    w = RNG.standard_normal((2, 3, 4))
    y32 = F.bilinear(*(clgrad.tensor(v, dtype=clgrad.float32) for v in (x1, x2, w)))
    assert y32.dtype is clgrad.float32
    np.testing.assert_allclose(y32.numpy(), np_bilinear(x1, x2, w), rtol=1e-5, atol=1e-5)
    ybf = F.bilinear(*(clgrad.tensor(v).to(clgrad.bfloat16) for v in (x1, x2, w)))
    assert ybf.dtype is clgrad.bfloat16
    np.testing.assert_allclose(ybf.float().numpy(), np_bilinear(x1, x2, w), rtol=5e-2,
                               atol=5e-2)


def test_module_init_shapes_repr_and_state_dict():
    clgrad.manual_seed(0)
    m = clgrad.nn.Bilinear(9, 4, 6)
    assert tuple(m.weight.shape) == (6, 9, 4) and tuple(m.bias.shape) == (6,)
    assert list(m.state_dict()) == ["weight", "bias"]
    bound = 1 / math.sqrt(9)
    for p in (m.weight, m.bias):
        v = p.detach().numpy()
        assert np.abs(v).max() <= bound and np.abs(v).max() > 0.5 * bound
    assert repr(m) == "Bilinear(in1_features=9, in2_features=4, out_features=6, bias=True)"
    m2 = clgrad.nn.Bilinear(2, 3, 4, bias=False, dtype=clgrad.float64)
    assert m2.bias is None and list(m2.state_dict()) == ["weight"]
    assert m2.weight.dtype is clgrad.float64
    x1, x2 = RNG.standard_normal((5, 2)), RNG.standard_normal((5, 3))
    np.testing.assert_allclose(m2(clgrad.tensor(x1), clgrad.tensor(x2)).detach().numpy(),
                               np_bilinear(x1, x2, m2.weight.detach().numpy()), rtol=1e-12)
    with pytest.raises(ValueError, match="in1_features"):
        clgrad.nn.Bilinear(0, 3, 4)


def test_errors():
    w, b = clgrad.ones(5, 3, 4), clgrad.ones(5)
    cases = [
        ((clgrad.ones(2, 3), clgrad.ones(1, 4), w, b), RuntimeError,
         "batch dimensions do not match at dim 0: got 2 and 1"),
        ((clgrad.ones(2, 3), clgrad.ones(2, 5), w, b), RuntimeError,
         "input2 size does not match weight size: got 5 but expected 4"),
        ((clgrad.ones(2, 4), clgrad.ones(2, 4), w, b), RuntimeError,
         "input1 size does not match weight size: got 4 but expected 3"),
        ((clgrad.ones(2, 3), clgrad.ones(2, 4), clgrad.ones(5, 3), b), RuntimeError,
         "expected weight of shape"),
        ((clgrad.ones(2, 3), clgrad.ones(2, 4), w, clgrad.ones(4)), RuntimeError,
         "bias size does not match"),
        ((clgrad.ones(2, 3), clgrad.ones(2, 4), w, clgrad.ones(1, 5)), RuntimeError,
         "bias size does not match"),
        ((clgrad.ones(2, 3), clgrad.ones(2, 4, dtype=clgrad.float64), w, b), RuntimeError,
         "same dtype"),
        ((clgrad.ones(2, 3), clgrad.ones(4), w, b), RuntimeError, "dimensions do not match"),
        ((np.ones((2, 3)), clgrad.ones(2, 4), w, b), TypeError, "input1"),
        ((clgrad.ones(2, 3), clgrad.ones(2, 4), w, 1.0), TypeError, "bias"),
    ]
    for args, err, msg in cases:
        with pytest.raises(err, match=msg):
            F.bilinear(*args)


@pytest.mark.parametrize("with_bias", [True, False])
def test_against_torch(with_bias):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    mt = torch.nn.Bilinear(3, 4, 5, bias=with_bias).double()
    mc = clgrad.nn.Bilinear(3, 4, 5, bias=with_bias, dtype=clgrad.float64)
    assert repr(mc) == repr(mt)
    assert list(mc.state_dict()) == list(mt.state_dict())
    mc.load_state_dict({k: clgrad.tensor(v.numpy()) for k, v in mt.state_dict().items()})
    x1, x2 = RNG.standard_normal((2, 6, 3)), RNG.standard_normal((2, 6, 4))
    ct = [clgrad.tensor(v, requires_grad=True) for v in (x1, x2)]
    tt = [torch.tensor(v, requires_grad=True) for v in (x1, x2)]
    yc, yt = mc(*ct), mt(*tt)
    np.testing.assert_allclose(yc.detach().numpy(), yt.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    g = RNG.standard_normal(tuple(yt.shape))
    (yc * clgrad.tensor(g)).sum().backward()
    (yt * torch.tensor(g)).sum().backward()
    for a, b in zip(ct, tt):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-12)
    for (n, pc), (_, pt) in zip(mc.named_parameters(), mt.named_parameters()):
        np.testing.assert_allclose(pc.grad.numpy(), pt.grad.numpy(), rtol=1e-12, atol=1e-12,
                                   err_msg=n)
