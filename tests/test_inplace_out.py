"""out= on the public functions (clgrad/ops/inplace.py with_out): the result written into out,
PyTorch's dtype, resize and autograd rules. NumPy values everywhere; the same program under
PyTorch where it is installed."""
import warnings

import numpy as np
import pytest

import clgrad
from clgrad.ops import registry

OUT_OPS = list(registry.outs())  # the rows of clgrad/ops/registry.py with out=

X = np.array([[1.0, -2.0], [3.0, 4.0]], np.float32)


def _x():
    return clgrad.tensor(X)


@pytest.mark.parametrize("name, call, want", [
    ("add", lambda t, o: t.add(_x(), 1, alpha=2, out=o), X + 2),
    ("mul", lambda t, o: t.mul(_x(), _x(), out=o), X * X),
    ("matmul", lambda t, o: t.matmul(_x(), _x(), out=o), X @ X),
    ("mm", lambda t, o: t.mm(_x(), _x().t(), out=o), X @ X.T),
    ("clamp", lambda t, o: t.clamp(_x(), -1, 3.5, out=o), np.clip(X, -1, 3.5)),
    ("sum", lambda t, o: t.sum(_x(), 0, out=o), X.sum(0)),
    ("cat", lambda t, o: t.cat([_x(), _x()], 1, out=o), np.concatenate([X, X], 1)),
    ("exp", lambda t, o: t.exp(_x(), out=o), np.exp(X)),
    ("cumsum", lambda t, o: t.cumsum(_x(), 1, out=o), np.cumsum(X, 1)),
    ("arange", lambda t, o: t.arange(4, out=o), np.arange(4.0)),
])
def test_out_gets_the_result_and_is_returned(name, call, want):
    for start in (clgrad.empty(0), clgrad.empty(want.shape)):  # empty: resized silently
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = call(clgrad, start)
        assert got is start and tuple(got.shape) == want.shape, name
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, err_msg=name)


def test_out_view_is_written_through():
    base = clgrad.zeros(2, 3)
    col = base[:, 1]
    assert clgrad.add(clgrad.tensor([1.0, 2.0]), 1, out=col) is col
    np.testing.assert_array_equal(base.numpy(), [[0, 2, 0], [0, 3, 0]])
    with pytest.raises(RuntimeError, match=r"a view cannot be resized"):
        clgrad.add(_x(), 1, out=col)
    a = clgrad.tensor([1.0, 2.0])
    assert clgrad.add(a, a, out=a).tolist() == [2.0, 4.0]   # out aliasing an input


def test_out_resize_warns_when_out_had_elements():
    out = clgrad.empty(3)
    with pytest.warns(UserWarning, match=r"had shape \[3\], which does not match the required "
                                         r"output shape \[2, 2\]"):
        clgrad.add(_x(), 1, out=out)
    assert out.shape == (2, 2) and out.tolist() == (X + 1).tolist()


def test_out_dtype_rules():
    out = clgrad.empty(2, 2, dtype=clgrad.float64)
    clgrad.add(_x(), 1, out=out)                     # float32 result into float64: cast
    assert out.dtype == clgrad.float64 and out.tolist() == (X + 1).tolist()
    f = clgrad.empty(2)
    clgrad.add(clgrad.tensor([1, 2]), 1, out=f)      # integer into float: cast
    assert f.tolist() == [2.0, 3.0]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the "
                                           "desired output type Long"):  # PyTorch's words
        clgrad.add(_x(), 1, out=clgrad.empty(2, 2, dtype=clgrad.int64))
    with pytest.raises(RuntimeError, match="mm\\(\\): Expected out tensor to have dtype "
                                           "clgrad.float32, but got clgrad.float64 instead"):
        clgrad.mm(_x(), _x(), out=out)
    s = clgrad.sum(_x(), 0, out=clgrad.empty(0, dtype=clgrad.float64))  # sums in out's dtype
    assert s.dtype == clgrad.float64 and s.tolist() == X.sum(0).tolist()
    z = clgrad.zeros(3, out=clgrad.empty(0, dtype=clgrad.int64))        # factories too
    assert z.dtype == clgrad.int64 and z.tolist() == [0, 0, 0]


def test_out_with_several_results():
    v, i = clgrad.empty(0), clgrad.empty(0, dtype=clgrad.int64)
    got = clgrad.max(_x(), 0, out=(v, i))
    assert got.values is v and got.indices is i
    assert v.tolist() == X.max(0).tolist() and i.tolist() == X.argmax(0).tolist()
    s = clgrad.sort(_x(), 1, descending=True,
                    out=(clgrad.empty(0), clgrad.empty(0, dtype=clgrad.int64)))
    assert s[0].tolist() == (-np.sort(-X, 1)).tolist()


def test_out_refuses_autograd():
    x = clgrad.ones(2, requires_grad=True)
    msg = ("add\\(\\): functions with out=... arguments don't support automatic "
           "differentiation, but one of the arguments requires grad.")
    with pytest.raises(RuntimeError, match=msg):
        clgrad.add(x, 1, out=clgrad.empty(2))
    with pytest.raises(RuntimeError, match=msg):
        clgrad.add(clgrad.ones(2), 1, out=clgrad.empty(2, requires_grad=True))
    with pytest.raises(RuntimeError, match="cat\\(\\): functions with out"):
        clgrad.cat([x, x], out=clgrad.empty(0))
    o = clgrad.empty(2, requires_grad=True)
    with clgrad.no_grad():  # allowed, as PyTorch (an optimizer-style write)
        clgrad.add(x, 1, out=o)
    assert o.tolist() == [2.0, 2.0] and o.requires_grad and o.grad_fn is None
    with pytest.raises(TypeError, match="argument 'out' must be Tensor, not list"):
        clgrad.add(clgrad.ones(2), 1, out=[1, 2])


def test_out_functions_exist_and_match_pytorch():
    assert all(hasattr(clgrad, n) for n in OUT_OPS)
    torch = pytest.importorskip("torch")
    t, i = torch.ones(2, 2), torch.tensor([0, 1])
    undocumented = {  # torch ops whose docstring does not name out=: called with it instead
        "clamp_min": lambda o: torch.clamp_min(t, 0.5, out=o),
        "clamp_max": lambda o: torch.clamp_max(t, 0.5, out=o),
        "isin": lambda o: torch.isin(t, t, out=o.bool()),
        "tensordot": lambda o: torch.tensordot(t, t, 1, out=o),
        "take": lambda o: torch.take(t, i, out=o)}
    for name in OUT_OPS:
        fn = getattr(torch, name)
        if name in undocumented:
            undocumented[name](torch.empty(2, 2))
            continue
        assert "out" in (fn.__doc__ or ""), name   # every name here takes out= in PyTorch
    tx = torch.tensor(X)
    for name, call in [("add", lambda t, x, o: t.add(x, x, out=o)),
                       ("cat", lambda t, x, o: t.cat([x, x], out=o)),
                       ("sum", lambda t, x, o: t.sum(x, 1, out=o)),
                       ("clamp", lambda t, x, o: t.clamp(x, max=1.5, out=o)),
                       ("matmul", lambda t, x, o: t.matmul(x, x, out=o))]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = call(torch, tx, torch.empty(3)).numpy()
            got = call(clgrad, _x(), clgrad.empty(3)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)
