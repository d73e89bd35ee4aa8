"""PyTorch names real programs use that clgrad lacked (the misc-api branch): Python types as
dtypes, the statistics, scatter and product ops, module-level helpers and window functions,
Tensor's small methods. Values against NumPy float64 (and PyTorch where importable),
gradients by float64 gradcheck, inputs non-contiguous."""
import warnings

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck
from strided import strided

NAN = float("nan")
RNG = np.random.default_rng(7)


def _torch():
    return pytest.importorskip("torch")


# -- 1. Python types as dtypes: float -> float64, int -> int64, bool -> bool ------------------
ENTRY_POINTS = {
    "tensor": lambda dt: clgrad.tensor([1, 2], dtype=dt),
    "as_tensor": lambda dt: clgrad.as_tensor([1, 2], dtype=dt),
    "zeros": lambda dt: clgrad.zeros(2, dtype=dt),
    "ones": lambda dt: clgrad.ones(2, dtype=dt),
    "empty": lambda dt: clgrad.empty(2, dtype=dt),
    "full": lambda dt: clgrad.full((2,), 1, dtype=dt),
    "arange": lambda dt: clgrad.arange(3, dtype=dt),
    "eye": lambda dt: clgrad.eye(2, dtype=dt),
    "zeros_like": lambda dt: clgrad.zeros_like(clgrad.ones(2), dtype=dt),
    "full_like": lambda dt: clgrad.full_like(clgrad.ones(2), 1, dtype=dt),
    "to": lambda dt: clgrad.ones(2).to(dt),
    "to_kw": lambda dt: clgrad.ones(2).to(dtype=dt),
    "to_device_dtype": lambda dt: clgrad.ones(2).to(clgrad.ones(1).device, dt),
    "new_zeros": lambda dt: clgrad.ones(2).new_zeros(2, dtype=dt),
    "new_full": lambda dt: clgrad.ones(2).new_full((2,), 1, dtype=dt),
    "new_tensor": lambda dt: clgrad.ones(2).new_tensor([1, 2], dtype=dt),
    "sum": lambda dt: clgrad.ones(2).sum(dtype=dt),
    "cumsum": lambda dt: clgrad.ones(2).cumsum(0, dtype=dt),
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("py, want", [(float, "float64"), (int, "int64"), (bool, "bool")])
def test_python_types_as_dtypes(entry, py, want):
    if entry in ("sum", "cumsum", "arange", "eye") and py is bool:
        pytest.skip("PyTorch refuses bool here too")
    assert ENTRY_POINTS[entry](py).dtype is getattr(clgrad, want)


def test_python_float_is_float64_whatever_the_default():
    old = clgrad.get_default_dtype()
    try:
        clgrad.set_default_dtype(clgrad.float64)
        assert clgrad.zeros(1, dtype=float).dtype is clgrad.float64
        clgrad.set_default_dtype(clgrad.float32)
        assert clgrad.zeros(1, dtype=float).dtype is clgrad.float64
    finally:
        clgrad.set_default_dtype(old)


def test_complex_dtype_is_a_clear_error():
    with pytest.raises(TypeError, match="no complex dtypes"):
        clgrad.zeros(2, dtype=complex)
    with pytest.raises(TypeError, match="no complex dtypes"):
        clgrad.ones(2).to(complex)


def test_factories_take_the_size_keyword():
    # pytorch/examples gat: nn.Parameter(torch.empty(size=(in_features, n_hidden * n_heads)))
    assert tuple(clgrad.empty(size=(2, 3)).shape) == (2, 3)
    assert clgrad.zeros(size=[2, 1]).tolist() == [[0.0], [0.0]]
    assert clgrad.ones(size=3, dtype=clgrad.int64).tolist() == [1, 1, 1]
    assert tuple(clgrad.ones(size=clgrad.Size([1, 2])).shape) == (1, 2)
    for fn in (clgrad.rand, clgrad.randn):
        clgrad.manual_seed(7)
        a = fn(size=(2, 3))
        clgrad.manual_seed(7)
        b = fn(2, 3)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert tuple(clgrad.empty(size=()).shape) == ()
    with pytest.raises(TypeError, match="either positionally or as size=, got both"):
        clgrad.zeros(2, size=(3,))
    with pytest.raises(TypeError, match="expected a sequence of ints as size"):
        clgrad.empty(size=(2.5,))


def test_legacy_types_take_a_range_as_pytorch():
    # pygcn's utils.load_data: idx_train = torch.LongTensor(range(140))
    idx = clgrad.LongTensor(range(0, 10, 3))
    assert idx.dtype is clgrad.int64 and idx.tolist() == [0, 3, 6, 9]
    assert clgrad.FloatTensor(range(3)).tolist() == [0.0, 1.0, 2.0]
    assert clgrad.Tensor(range(2, 4)).dtype is clgrad.float32
    assert clgrad.LongTensor(range(0)).tolist() == []
    with pytest.raises(TypeError, match="got \\('str',\\)"):
        clgrad.LongTensor("abc")


def test_type_takes_legacy_types_and_refuses_python_types():
    x = clgrad.arange(3.0)[::2]
    assert x.type(clgrad.DoubleTensor).dtype is clgrad.float64
    assert x.type(clgrad.LongTensor).tolist() == [0, 2]
    assert x.type(clgrad.cuda.FloatTensor).dtype is clgrad.float32
    assert x.type(clgrad.float64).dtype is clgrad.float64
    assert x.type("torch.IntTensor").dtype is clgrad.int32
    with pytest.raises(ValueError, match="invalid type: 'float'"):  # as PyTorch
        x.type(float)


def test_python_types_match_torch():
    torch = _torch()
    for py in (float, int, bool):
        assert str(torch.zeros(1, dtype=py).dtype).split(".")[1] == \
            clgrad.zeros(1, dtype=py).dtype.name
    with pytest.raises(ValueError):
        torch.ones(1).type(float)


# -- helpers ----------------------------------------------------------------------------------
def _np(x):
    return x.detach().numpy() if isinstance(x, clgrad.Tensor) else np.asarray(x)


def _same(got, want, rtol=1e-12, atol=1e-12):
    """got (clgrad, maybe a tuple) equals want (NumPy or torch): values, shapes and dtypes."""
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w.detach().numpy() if hasattr(w, "detach") else np.asarray(w)
        g = _np(g)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)


def _sv(a):
    """A non-contiguous float64 clgrad view holding ``a``'s values."""
    return strided(np.asarray(a, dtype=np.float64))


def _grad_ok(fn, *arrays):
    """float64 gradcheck of fn over non-contiguous leaves built from ``arrays``."""
    leaves = [_sv(a).detach().requires_grad_(True) for a in arrays]
    assert gradcheck(fn, leaves)


def _vs_torch(name, *args, **kwargs):
    """clgrad.<name> and torch.<name> of the same float64/int64 arguments agree."""
    torch = _torch()
    conv = lambda m, v: m.tensor(v) if isinstance(v, np.ndarray) else v  # noqa: E731
    got = getattr(clgrad, name)(*[conv(clgrad, a) for a in args], **kwargs)
    want = getattr(torch, name)(*[conv(torch, a) for a in args], **kwargs)
    _same(tuple(got) if isinstance(got, tuple) else got,
          tuple(want) if isinstance(want, tuple) else want)


A = RNG.standard_normal((3, 5))
AN = A.copy()
AN[0, 1] = NAN
AN[2, :] = NAN


# -- 2. quantile, nanquantile, nanmedian ------------------------------------------------------
@pytest.mark.parametrize("interp", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_against_numpy(interp):
    q = [0.0, 0.1, 0.5, 0.75, 1.0]
    x = _sv(A)
    got = clgrad.quantile(x, clgrad.tensor(q, dtype=clgrad.float64), dim=1,
                          interpolation=interp)
    _same(got, np.quantile(A, q, axis=1, method=interp))
    _same(clgrad.quantile(x, 0.3, interpolation=interp), np.quantile(A, 0.3, method=interp))
    _same(clgrad.quantile(x, 0.3, dim=0, keepdim=True, interpolation=interp),
          np.quantile(A, 0.3, axis=0, keepdims=True, method=interp))
    _same(clgrad.nanquantile(_sv(AN), q, dim=1, interpolation=interp) if False else
          clgrad.nanquantile(_sv(AN), clgrad.tensor(q, dtype=clgrad.float64), dim=1,
                             interpolation=interp),
          np.nanquantile(AN, q, axis=1, method=interp) if not np.isnan(AN).all(1).any() else
          _nanq_rows(AN, q, interp))


def _nanq_rows(a, q, interp):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanquantile(a, q, axis=1, method=interp)


def test_quantile_nan_rows_and_torch():
    _same(clgrad.quantile(_sv(AN), 0.4, dim=1), np.quantile(AN, 0.4, axis=1))
    _vs_torch("quantile", A, 0.25, dim=0, keepdim=True)
    _vs_torch("nanquantile", AN, 0.6)
    # nearest: round half to even, on the rank in input's dtype (PyTorch's)
    x = np.arange(1.0, 7.0, dtype=np.float32)
    for q in (0.1, 0.3, 0.5, 0.7, 0.9):
        torch = _torch()
        want = torch.quantile(torch.tensor(x), q, interpolation="nearest")
        assert clgrad.quantile(clgrad.tensor(x), q, interpolation="nearest").item() == \
            want.item()


def test_quantile_ranks_in_input_dtype():
    # the rank q * (n - 1) is computed in input's dtype, as PyTorch: float32 0.1 * 5 rounds
    # to 0.5 exactly, so 'nearest' (half to even) picks rank 0; float64 q gives 0.5000000075
    x = np.arange(1.0, 7.0, dtype=np.float32)
    assert clgrad.quantile(clgrad.tensor(x), 0.1, interpolation="nearest").item() == 1.0
    assert clgrad.quantile(clgrad.tensor(x), 0.7, interpolation="nearest").item() == 5.0
    # 'linear' weight from the float32 rank: bits of NumPy's float32 formula, PyTorch's too
    a = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    got = clgrad.quantile(clgrad.tensor(a), 0.4, dim=1).numpy()
    rank = np.float32(0.4) * np.float32(3)
    lo, frac = int(np.floor(rank)), np.float32(rank - np.floor(rank))
    srt = np.sort(a, 1)
    np.testing.assert_allclose(got, srt[:, lo] + frac * (srt[:, lo + 1] - srt[:, lo]),
                               rtol=2e-7)
    torch = pytest.importorskip("torch")
    for q in (0.1, 0.4, 0.425, 0.7):
        for how in ("nearest", "linear", "midpoint"):
            want = torch.quantile(torch.tensor(a), q, dim=1, interpolation=how).numpy()
            np.testing.assert_array_equal(
                clgrad.quantile(clgrad.tensor(a), q, dim=1, interpolation=how).numpy(), want)
            want = torch.nanquantile(torch.tensor(a), q, dim=1, interpolation=how).numpy()
            np.testing.assert_array_equal(
                clgrad.nanquantile(clgrad.tensor(a), q, dim=1, interpolation=how).numpy(),
                want)


def test_quantile_errors():
    with pytest.raises(RuntimeError, match="non-empty"):
        clgrad.quantile(clgrad.zeros(0), 0.5)
    with pytest.raises(RuntimeError, match="float or double"):
        clgrad.quantile(clgrad.tensor([1, 2]), 0.5)
    with pytest.raises(RuntimeError, match=r"range \[0, 1\]"):
        clgrad.quantile(clgrad.ones(3), 1.5)
    with pytest.raises(ValueError, match="interpolation"):
        clgrad.quantile(clgrad.ones(3), 0.5, interpolation="cubic")


def test_quantile_gradient():
    _grad_ok(lambda x: clgrad.quantile(x, clgrad.tensor([0.2, 0.7], dtype=clgrad.float64),
                                       dim=1), A)
    _grad_ok(lambda x: clgrad.quantile(x, 0.35, interpolation="midpoint"), A)


def test_nanmedian():
    rows = np.array([[1.0, NAN, 3.0, 2.0], [4.0, 4.0, NAN, 0.5]])
    vals, idx = clgrad.nanmedian(_sv(rows), 1)
    _same(vals, np.array([2.0, 4.0]))
    assert idx.tolist() == [3, 0]
    _same(clgrad.nanmedian(_sv(rows)), np.array(2.0))
    _vs_torch("nanmedian", rows, 1, keepdim=True)
    assert np.isnan(clgrad.nanmedian(clgrad.tensor([[NAN, NAN]]), 1).values.item())
    _grad_ok(lambda x: clgrad.nanmedian(x, 0).values, A)
    _grad_ok(lambda x: clgrad.nanmedian(x), [[1.0, 3.0, 2.0], [5.0, 0.5, 4.0]])


# -- mode, aminmax, bincount, histc -----------------------------------------------------------
def test_mode_ties_and_last_index():
    x = np.array([[1, 2, 2, 3, 3, 1, 5], [4, 4, 0, 0, 9, 9, 9]])
    vals, idx = clgrad.mode(clgrad.tensor(x))
    assert vals.tolist() == [1, 9] and idx.tolist() == [5, 6]  # smallest, last occurrence
    vals, idx = clgrad.mode(clgrad.tensor([NAN, NAN, NAN, 1.0, 1.0]))
    assert vals.item() == 1.0 and idx.item() == 4  # each NaN counts once
    _vs_torch("mode", x, 0, keepdim=True)
    _vs_torch("mode", x.T.copy(), 1)
    with pytest.raises(IndexError):
        clgrad.mode(clgrad.zeros(0))
    # the gradient goes to the element at the index (ties are kinks: no finite differences)
    x = clgrad.tensor([[1.0, 2.0, 2.0], [3.0, 3.0, 7.0]], dtype=clgrad.float64,
                      requires_grad=True)
    clgrad.mode(x, 1).values.backward(clgrad.tensor([10.0, 20.0], dtype=clgrad.float64))
    assert x.grad.tolist() == [[0.0, 0.0, 10.0], [0.0, 20.0, 0.0]]


def test_aminmax():
    mn, mx = clgrad.aminmax(_sv(A), dim=1, keepdim=True)
    _same(mn, A.min(1, keepdims=True))
    _same(mx, A.max(1, keepdims=True))
    r = clgrad.aminmax(_sv(A))
    assert (r.min.item(), r.max.item()) == (A.min(), A.max())


def test_bincount():
    x = clgrad.tensor([1, 3, 3, 0, 7])[::2]
    _same(clgrad.bincount(x), np.bincount([1, 3, 7]))
    _same(clgrad.bincount(x, minlength=10), np.bincount([1, 3, 7], minlength=10))
    w = clgrad.tensor([0.5, 1.5, 2.0], dtype=clgrad.float32)
    assert clgrad.bincount(x, w).dtype is clgrad.float32
    assert clgrad.bincount(x, clgrad.tensor([1, 2, 3])).dtype is clgrad.float64  # PyTorch's
    _same(clgrad.bincount(clgrad.tensor([], dtype=clgrad.int64), minlength=3),
          np.zeros(3, np.int64))
    with pytest.raises(RuntimeError, match="non-negative"):
        clgrad.bincount(clgrad.tensor([1, -1]))
    _vs_torch("bincount", np.array([2, 0, 2, 5]), weights=None, minlength=2)


def test_histc():
    x = np.array([1.0, 2.0, 1.0, 4.0, NAN, 3.0, 0.0])
    _same(clgrad.histc(_sv(x), bins=4, min=0, max=3), np.array([1.0, 2.0, 1.0, 1.0]))
    _vs_torch("histc", A, bins=7)
    _vs_torch("histc", np.array([2.0, 2.0]), bins=4)
    with pytest.raises(RuntimeError):
        clgrad.histc(clgrad.tensor([1, 2]))


# -- cov, corrcoef, trapezoid -----------------------------------------------------------------
def test_cov_corrcoef():
    _same(clgrad.cov(_sv(A)), np.cov(A))
    _same(clgrad.cov(_sv(A[0])), np.cov(A[0]))
    fw, aw = np.array([1, 2, 1, 3, 1]), RNG.uniform(0.5, 2.0, 5)
    _same(clgrad.cov(_sv(A), fweights=clgrad.tensor(fw), aweights=_sv(aw)),
          np.cov(A, fweights=fw, aweights=aw))
    _same(clgrad.cov(_sv(A), correction=0, aweights=_sv(aw)), np.cov(A, ddof=0, aweights=aw))
    _same(clgrad.corrcoef(_sv(A)), np.corrcoef(A))
    assert clgrad.cov(clgrad.tensor([1, 2, 4])).dtype is clgrad.float32
    _vs_torch("cov", A, correction=2)
    _grad_ok(lambda x: clgrad.cov(x), A)
    _grad_ok(lambda x: clgrad.corrcoef(x), A)
    _grad_ok(lambda x, w: clgrad.cov(x, aweights=w), A, aw)


def test_trapezoid():
    xs = np.array([0.0, 1.0, 3.0, 3.5, 6.0])
    _same(clgrad.trapezoid(_sv(A)), np.trapezoid(A))
    _same(clgrad.trapezoid(_sv(A), _sv(xs)), np.trapezoid(A, xs))
    _same(clgrad.trapz(_sv(A), dx=0.5, dim=0), np.trapezoid(A, dx=0.5, axis=0))
    _same(clgrad.trapezoid(_sv(A), _sv(np.tile(xs, (3, 1)))), np.trapezoid(A, np.tile(xs, (3, 1))))
    assert clgrad.trapezoid(clgrad.tensor([1, 2, 4])).dtype is clgrad.float32
    _same(clgrad.trapezoid(clgrad.zeros(2, 0, dtype=clgrad.float64)), np.zeros(2))
    cum = np.cumsum((A[:, 1:] + A[:, :-1]) * np.diff(xs) / 2, axis=1)
    _same(clgrad.cumulative_trapezoid(_sv(A), _sv(xs)), cum)
    _vs_torch("cumulative_trapezoid", A, dx=2.0, dim=0)
    _grad_ok(lambda y, x: clgrad.trapezoid(y, x), A, xs)
    _grad_ok(lambda y, x: clgrad.cumulative_trapezoid(y, x), A, xs)


def test_logcumsumexp():
    want = np.logaddexp.accumulate(A, axis=1)
    _same(clgrad.logcumsumexp(_sv(A), 1), want)
    wide = np.array([-1000.0, 0.0, 1000.0, -5.0, 3.0])  # exp over- and underflows
    _same(clgrad.logcumsumexp(clgrad.tensor(wide), 0), np.logaddexp.accumulate(wide))
    for n in (1, 2, 3, 17, 257):
        a = RNG.standard_normal(n)
        _same(clgrad.logcumsumexp(clgrad.tensor(a), -1), np.logaddexp.accumulate(a),
              rtol=1e-12)
    with pytest.raises(RuntimeError):
        clgrad.logcumsumexp(clgrad.tensor([1, 2]), 0)
    _grad_ok(lambda x: clgrad.logcumsumexp(x, 0), A)


# -- scatters ---------------------------------------------------------------------------------
IDX = np.array([[0, 1, 0, 1, 2], [2, 2, 1, 0, 0]])
SRC = RNG.standard_normal((2, 6))


def _scatter_reduce_np(x, dim, idx, src, reduce, include_self):
    out = x.copy()
    groups = {}
    for pos in np.ndindex(idx.shape):
        t = list(pos)
        t[dim] = idx[pos]
        groups.setdefault(tuple(t), []).append(src[pos])
    fns = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}
    for t, vals in groups.items():
        vals = ([x[t]] if include_self else []) + vals
        out[t] = fns[reduce](vals)
    return out


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    x = A[:2, :4]
    got = clgrad.scatter_reduce(_sv(x), 1, clgrad.tensor(IDX), _sv(SRC), reduce,
                                include_self=include_self)
    _same(got, _scatter_reduce_np(x, 1, IDX, SRC, reduce, include_self))
    _vs_torch("scatter_reduce", x, 1, IDX, SRC, reduce, include_self=include_self)
    _grad_ok(lambda a, s: clgrad.scatter_reduce(a, 1, clgrad.tensor(IDX), s, reduce,
                                                include_self=include_self), x, SRC)


def test_scatter_reduce_torch_gradients_with_ties_and_zeros():
    torch = _torch()
    x = np.array([1.0, 2.0, 0.0, 4.0])
    src = np.array([1.0, 6.0, 3.0, 0.0, 5.0, 6.0])
    idx = np.array([0, 1, 0, 2, 2, 1])
    for reduce in ("amax", "prod", "mean", "amin"):
        xc, sc = (clgrad.tensor(v, requires_grad=True) for v in (x, src))
        xt, st = (torch.tensor(v, requires_grad=True) for v in (x, src))
        w = RNG.standard_normal(4)
        (clgrad.scatter_reduce(xc, 0, clgrad.tensor(idx), sc, reduce) * clgrad.tensor(w)
         ).sum().backward()
        (torch.scatter_reduce(xt, 0, torch.tensor(idx), st, reduce) * torch.tensor(w)
         ).sum().backward()
        _same(xc.grad, xt.grad)
        _same(sc.grad, st.grad)


def test_scatter_reduce_amax_ties_without_self_split_among_src():
    # include_self=False: the output is the max of the src values alone, so tied src values
    # share the gradient 1/n each (hand numbers; PyTorch 2.13 also counts input's own value
    # when it equals the result and gives 1/(n+1): documented difference)
    for reduce in ("amax", "amin"):
        x = clgrad.tensor([[1.0, 5.0, 2.0, 3.0]], requires_grad=True)
        src = clgrad.tensor([[1.0, 1.0, 2.0, 2.0, 0.0, 3.0]], requires_grad=True)
        idx = clgrad.tensor([[0, 0, 2, 2, 1, 3]])
        y = clgrad.scatter_reduce(x, 1, idx, src, reduce, include_self=False)
        _same(y, np.array([[1.0, 0.0, 2.0, 3.0]], np.float32))
        gx, gs = clgrad.autograd.grad((y * clgrad.tensor([[1.0, 2.0, 3.0, 4.0]])).sum(),
                                      [x, src])
        _same(gx, np.zeros((1, 4), np.float32))
        _same(gs, np.array([[0.5, 0.5, 1.5, 1.5, 2.0, 4.0]], np.float32))


def test_scatter_reduce_integer_mean_and_method():
    x = clgrad.tensor([1, 2, 3, 4])
    got = x.scatter_reduce(0, clgrad.tensor([0, 1, 0, 1, 2, 1]),
                           clgrad.tensor([1, 2, 3, 4, 5, 6]), "mean")
    assert got.tolist() == [1, 3, 4, 4]  # floor division, as PyTorch
    y = clgrad.zeros(3, dtype=clgrad.float64)
    assert y.scatter_reduce_(0, clgrad.tensor([0, 0]), clgrad.tensor([2.0, 3.0],
                                                                     dtype=clgrad.float64),
                             "sum") is y
    assert y.tolist() == [5.0, 0.0, 0.0]


def test_index_copy_masked_scatter_put():
    x, src = A, RNG.standard_normal((3, 2))
    want = x.copy()
    want[:, [4, 0]] = src
    _same(clgrad.index_copy(_sv(x), 1, clgrad.tensor([4, 0]), _sv(src)), want)
    y = _sv(x).clone()
    assert y.index_copy_(1, clgrad.tensor([4, 0]), _sv(src)) is y
    _same(y, want)
    _grad_ok(lambda a, s: clgrad.index_copy(a, 1, clgrad.tensor([4, 0]), s), x, src)
    m = RNG.random((3, 5)) < 0.5
    s = RNG.standard_normal(20)
    want = x.copy()
    want[m] = s[:m.sum()]
    _same(clgrad.masked_scatter(_sv(x), clgrad.tensor(m), _sv(s)), want)
    _same(_sv(x).masked_scatter(clgrad.tensor(m[0]), _sv(s)),  # a broadcast mask
          np.where(m[0], np.cumsum(np.tile(m[0], (3, 1))).reshape(3, 5) * 0 +
                   s[np.maximum(np.cumsum(np.tile(m[0], (3, 1))) - 1, 0)].reshape(3, 5), x))
    _grad_ok(lambda a, v: clgrad.masked_scatter(a, clgrad.tensor(m), v), x, s)
    with pytest.raises(RuntimeError, match="at least as many"):
        clgrad.masked_scatter(_sv(x), clgrad.tensor(m), clgrad.ones(1, dtype=clgrad.float64))
    want = x.copy().ravel()
    want[[0, 14, 7]] = [9.0, 8.0, 7.0]
    v = clgrad.tensor([9.0, 8.0, 7.0], dtype=clgrad.float64)
    _same(clgrad.put(_sv(x), clgrad.tensor([0, -1, 7]), v), want.reshape(3, 5))
    acc = x.copy().ravel()
    np.add.at(acc, [0, 0, 7], [9.0, 8.0, 7.0])
    _same(clgrad.put(_sv(x), clgrad.tensor([0, 0, 7]), v, accumulate=True), acc.reshape(3, 5))
    y = _sv(x).clone()
    assert y.put_(clgrad.tensor([0, -1, 7]), v) is y
    _same(y, want.reshape(3, 5))
    with pytest.raises(IndexError):
        clgrad.put(_sv(x), clgrad.tensor([15]), v[:1])
    _grad_ok(lambda a, s: clgrad.put(a, clgrad.tensor([0, -1, 7]), s), x, [9.0, 8.0, 7.0])


def test_diagonal_select_slice_scatter():
    x = A
    want = x.copy()
    want[[0, 1, 2], [1, 2, 3]] = [1.0, 2.0, 3.0]
    src = clgrad.tensor([1.0, 2.0, 3.0], dtype=clgrad.float64)
    _same(clgrad.diagonal_scatter(_sv(x), src, 1), want)
    want = x.copy()
    want[2] = x[0]
    _same(clgrad.select_scatter(_sv(x), _sv(x[0]), 0, 2), want)
    want = x.copy()
    want[:, 1::2] = x[:, :2]
    _same(clgrad.slice_scatter(_sv(x), _sv(x[:, :2]), 1, 1, None, 2), want)
    with pytest.raises(RuntimeError, match="size equal to the slice"):
        clgrad.select_scatter(_sv(x), _sv(x[0, :3]), 0, 2)
    _grad_ok(lambda a, s: clgrad.diagonal_scatter(a, s, -1), x, [4.0, 5.0])
    _grad_ok(lambda a, s: clgrad.select_scatter(a, s, 1, 3), x, [4.0, 5.0, 6.0])
    _grad_ok(lambda a, s: clgrad.slice_scatter(a, s, 0, 0, 3, 2), x, x[:2])
    _vs_torch("slice_scatter", x, x[:, :2], 1, 3)


@pytest.mark.parametrize("kw", [{}, {"return_inverse": True}, {"return_counts": True},
                                {"return_inverse": True, "return_counts": True}])
def test_unique_consecutive(kw):
    _vs_torch("unique_consecutive", np.array([1, 1, 2, 2, 3, 1, 1, 2]), **kw)
    _vs_torch("unique_consecutive", np.array([[1, 1], [1, 2]]), **kw)
    _vs_torch("unique_consecutive", np.array([[1, 1, 2], [1, 1, 2], [3, 3, 3]]), dim=0, **kw)
    _vs_torch("unique_consecutive", np.array([[1, 1, 3], [1, 1, 3]]), dim=1, **kw)
    _vs_torch("unique_consecutive", np.array([NAN, NAN, 1.0, 1.0]), **kw)  # NaN: each its own
    _vs_torch("unique_consecutive", np.zeros(0), **kw)
    x = clgrad.tensor([[3, 3, 1], [0, 0, 2]]).t()  # non-contiguous
    got = x.unique_consecutive(dim=0, **kw)
    vals = got[0] if isinstance(got, tuple) else got
    assert vals.tolist() == [[3, 0], [1, 2]]


# -- products and shapes ----------------------------------------------------------------------
def test_cross_inner_vdot_vander():
    v, w = RNG.standard_normal((4, 3)), RNG.standard_normal((1, 3))
    _same(clgrad.cross(_sv(v), _sv(w), dim=1), np.cross(v, w))
    _same(clgrad.linalg.cross(_sv(v), _sv(w)), np.cross(v, w))
    _same(clgrad.cross(_sv(v.T), _sv(w.T)), np.cross(v, w).T)  # the first dim of size 3
    with pytest.raises(RuntimeError, match="length 3"):
        clgrad.cross(_sv(A), _sv(A), dim=1)
    _grad_ok(lambda a, b: clgrad.cross(a, b, dim=-1), v, w)
    _same(clgrad.inner(_sv(v), _sv(A[:, :3])), np.inner(v, A[:, :3]))
    _same(clgrad.inner(clgrad.tensor(2.0, dtype=clgrad.float64), _sv(v)), 2.0 * v)
    _grad_ok(lambda a, b: clgrad.inner(a, b), v, A[:, :3])
    assert clgrad.vdot(clgrad.tensor([1, 2]), clgrad.tensor([3, 4])).item() == 11
    _same(clgrad.tensor([1.0, 2.0]).vdot(clgrad.tensor([3.0, 4.0])), np.float32(11.0))
    _same(clgrad.vander(clgrad.tensor([1, 2, 3])), np.vander([1, 2, 3]))
    _same(clgrad.vander(_sv([1.0, 2.0, -0.5]), N=4, increasing=True),
          np.vander([1.0, 2.0, -0.5], 4, increasing=True))
    assert tuple(clgrad.vander(clgrad.tensor([1, 2]), N=0).shape) == (2, 0)
    _grad_ok(lambda x: clgrad.vander(x, 4), [1.5, -2.0, 0.5])
    _vs_torch("cross", v, np.tile(w, (4, 1)), dim=1)
    _vs_torch("inner", v, w)


def test_diag_diagflat_split_sum_to_size_ravel():
    _same(clgrad.diag(clgrad.tensor([1, 2]), 1), np.diag([1, 2], 1))
    _same(clgrad.diag(_sv(A), -1), np.diag(A, -1))
    _same(_sv(A).diag(2), np.diag(A, 2))
    _same(clgrad.diagflat(clgrad.tensor([[1, 2], [3, 4]]), -1), np.diagflat([[1, 2], [3, 4]], -1))
    _grad_ok(lambda x: clgrad.diag(x, 1), A)
    _grad_ok(lambda x: clgrad.diag(x, -2), A[0])
    parts = clgrad.split_with_sizes(_sv(A), [2, 3], 1)
    _same(parts[0], A[:, :2])
    _same(parts[1], A[:, 2:])
    with pytest.raises(RuntimeError, match="sum exactly"):
        _sv(A).split_with_sizes([2, 2], 1)
    _same(_sv(A).sum_to_size(1, 5), A.sum(0, keepdims=True))
    _same(_sv(A).sum_to_size((3, 1)), A.sum(1, keepdims=True))
    with pytest.raises(RuntimeError, match="expandable"):
        _sv(A).sum_to_size(2, 5)
    _grad_ok(lambda x: x.sum_to_size(1, 5), A)
    _same(clgrad.ravel(_sv(A).t()), A.T.ravel())
    assert clgrad.broadcast_shapes((2, 1), (3,), 1) == (2, 3)
    with pytest.raises(RuntimeError):
        clgrad.broadcast_shapes((2,), (3,))


def test_frexp():
    x = np.array([0.0, 1.0, -3.5, 8.0, NAN, np.inf, 1e-300, 6.0])
    m, e = clgrad.frexp(_sv(x))
    wm, we = np.frexp(x)
    _same(m, wm)
    _same(e, we.astype(np.int32))
    assert e.dtype is clgrad.int32
    with pytest.raises(TypeError):
        clgrad.frexp(clgrad.tensor([1, 2]))
    _grad_ok(lambda t: clgrad.frexp(t).mantissa, [0.3, -5.0, 17.0])
    _vs_torch("frexp", np.array([1e-40, 3.0, -0.75], dtype=np.float32))


# -- 3. module-level helpers, factories and windows -------------------------------------------
def test_range_scalar_tensor_empty_strided():
    with pytest.warns(UserWarning, match="deprecated"):
        r = clgrad.range(0, 1, 0.25)
    _same(r, np.array([0.0, 0.25, 0.5, 0.75, 1.0], np.float32))
    with pytest.warns(UserWarning):
        assert clgrad.range(1, 4, dtype=clgrad.int64).tolist() == [1, 2, 3, 4]
        assert clgrad.range(5, 1, -2).tolist() == [5.0, 3.0, 1.0]
    s = clgrad.scalar_tensor(3)
    assert s.dtype is clgrad.float32 and s.ndim == 0 and s.item() == 3.0
    e = clgrad.empty_strided((2, 3), (1, 2))
    assert tuple(e.shape) == (2, 3) and e.stride() == (1, 2)
    assert clgrad.empty_strided((0, 3), (3, 1)).numel() == 0
    x = clgrad.ones(4, 2)
    r = clgrad.randint_like(x, 5)
    assert r.dtype is clgrad.float32 and 0 <= r.min().item() and r.max().item() < 5
    r = clgrad.randint_like(x, 3, 6, dtype=clgrad.int64)
    assert r.dtype is clgrad.int64 and 3 <= r.min().item() and r.max().item() < 6


def test_asarray_fill_concatenate():
    x = clgrad.arange(4.0)
    assert clgrad.asarray(x) is x
    assert clgrad.asarray(x, copy=True) is not x
    assert clgrad.asarray(x, dtype=clgrad.float64).dtype is clgrad.float64
    assert clgrad.asarray([1, 2]).dtype is clgrad.int64
    assert clgrad.asarray(np.ones(2, np.float32)).dtype is clgrad.float32
    with pytest.raises(ValueError):
        clgrad.asarray([1, 2], copy=False)
    _same(clgrad.fill(x[::2], 2.5), np.full(2, 2.5, np.float32))
    v = clgrad.tensor(3.0, requires_grad=True)
    clgrad.fill(x, v).sum().backward()
    assert v.grad.item() == 4.0
    assert clgrad.concatenate is clgrad.cat or clgrad.concatenate.__wrapped__ is \
        clgrad.cat.__wrapped__
    _same(clgrad.concatenate([x, x]), np.tile(np.arange(4.0, dtype=np.float32), 2))


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window",
                                  "bartlett_window", "kaiser_window"])
def test_windows(name):
    np_fn = {"hann_window": np.hanning, "hamming_window": np.hamming,
             "blackman_window": np.blackman, "bartlett_window": np.bartlett,
             "kaiser_window": lambda n: np.kaiser(n, 12.0)}[name]
    fn = getattr(clgrad, name)
    for n in (0, 1, 2, 5, 8):
        _same(fn(n, periodic=False, dtype=clgrad.float64), np_fn(n), atol=1e-12)
        _same(fn(n, dtype=clgrad.float64), np_fn(n + 1)[:n] if n > 1 else np.ones(n),
              atol=1e-12)
    assert fn(4).dtype is clgrad.float32
    with pytest.raises(RuntimeError, match="floating"):
        fn(4, dtype=clgrad.int64)
    torch = pytest.importorskip("torch")
    for periodic in (True, False):
        _same(fn(7, periodic, dtype=clgrad.float64),
              getattr(torch, name)(7, periodic, dtype=torch.float64), atol=1e-12)


def test_set_default_tensor_type():
    old = clgrad.get_default_dtype()
    try:
        clgrad.set_default_tensor_type(clgrad.DoubleTensor)
        assert clgrad.zeros(1).dtype is clgrad.float64
        clgrad.set_default_tensor_type("torch.FloatTensor")
        assert clgrad.zeros(1).dtype is clgrad.float32
        with pytest.raises(TypeError, match="set_default_device"):
            clgrad.set_default_tensor_type("torch.cuda.FloatTensor")
        with pytest.raises(TypeError, match="set_default_device"):
            clgrad.set_default_tensor_type(clgrad.cuda.DoubleTensor)
        with pytest.raises(TypeError, match="floating"):
            clgrad.set_default_tensor_type(clgrad.LongTensor)
    finally:
        clgrad.set_default_dtype(old)


def test_predicates():
    x, u = clgrad.ones(3), clgrad.ones(3, dtype=clgrad.uint8)
    assert clgrad.is_signed(x) and x.is_signed() and not u.is_signed()
    assert not clgrad.is_complex(x) and not x.is_complex()
    assert clgrad.is_same_size(x, clgrad.zeros(3)) and not x.is_same_size(clgrad.zeros(1, 3))
    assert not clgrad.is_inference(x) and not x.is_inference()


# -- 4. Tensor methods ------------------------------------------------------------------------
def test_small_tensor_methods():
    x = clgrad.ones(2, 3, dtype=clgrad.float64)[:, ::2]
    assert x.nelement() == 4 and x.ndimension() == 2
    assert x.nbytes == 32 and x.itemsize == 8
    assert not x.is_conj() and not x.is_neg()
    assert x.resolve_conj() is x and x.resolve_neg() is x and x.conj() is x
    n = x.new(2, 3)
    assert tuple(n.shape) == (2, 3) and n.dtype is clgrad.float64
    assert x.new([1, 2]).dtype is clgrad.float64
    assert tuple(x.new().shape) == (0,)
    assert clgrad.ones(1, dtype=clgrad.int64).new([1, 2]).dtype is clgrad.int64


def test_renorm_inplace():
    a = RNG.standard_normal((3, 4))
    x = clgrad.tensor(a)
    want = clgrad.renorm(x, 2, 0, 1.0).numpy()
    assert x.renorm_(2, 0, 1.0) is x
    _same(x, want)


@pytest.mark.parametrize("name, args, view", [
    ("unsqueeze_", (1,), lambda a: a[:, None]), ("squeeze_", (), lambda a: a.squeeze()),
    ("t_", (), lambda a: a.T), ("transpose_", (0, 1), lambda a: a.T),
    ("swapaxes_", (1, 0), lambda a: a.T), ("swapdims_", (0, 1), lambda a: a.T)])
def test_inplace_metadata_of_a_view(name, args, view):
    base = clgrad.arange(12.0).reshape(3, 4)
    v = base[:, 1:2] if name == "squeeze_" else base[1:, ::2]
    want = view(v.numpy())
    assert getattr(v, name)(*args) is v
    assert tuple(v.shape) == want.shape
    _same(v, want)
    base[2, 1], base[2, 2] = 100.0, 100.0  # still a view of base
    assert 100.0 in v.numpy()


def test_inplace_metadata_rules():
    x = clgrad.zeros(2, 3)
    assert x._base is None
    assert x.unsqueeze_(0) is x and tuple(x.shape) == (1, 2, 3)  # a root stays contiguous
    assert x.squeeze_() is x and tuple(x.shape) == (2, 3)
    with pytest.raises(RuntimeError, match="contiguous layout"):
        x.t_()
    leaf = clgrad.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        leaf.unsqueeze_(0)
    with clgrad.no_grad():
        leaf.unsqueeze_(0)  # PyTorch allows it under no_grad
    assert tuple(leaf.shape) == (1, 2, 3)
    with pytest.raises(RuntimeError, match="requires grad"):
        (leaf * 2).squeeze_(0)
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="leaf"):
        torch.ones(2, 3, requires_grad=True).t_()


def test_size_slices_and_concatenations_are_tuples():
    """Deliberately different (README): a Size's slice, ``+`` and ``*`` give tuples (PyTorch:
    torch.Size), as a Python-level __getitem__ would put a call into every shape index of
    clgrad's ops (tests/test_op_calls.py's budgets)."""
    s = clgrad.zeros(2, 3, 4).shape
    assert type(s[1:]) is tuple and s[1:] == (3, 4) and clgrad.Size(s[1:]).numel() == 12
    assert type(s + (5,)) is tuple and s + (5,) == (2, 3, 4, 5)
    assert type(s[0]) is int and s[-1] == 4


def test_memory_format_objects():
    p = clgrad.ones(2, 3)
    z = clgrad.zeros_like(p, memory_format=clgrad.preserve_format)
    assert z.tolist() == [[0.0] * 3] * 2
    c = p.t().clone(memory_format=clgrad.contiguous_format)
    assert c.is_contiguous() and c.tolist() == [[1.0, 1.0]] * 3
    assert repr(clgrad.preserve_format) == "torch.preserve_format"
    with pytest.raises(TypeError):
        clgrad.ones_like(p, memory_format="channels_last")


def test_fill_diagonal_():
    for shape, wrap in [((7, 3), True), ((7, 3), False), ((3, 5), False), ((4, 4), True)]:
        a = clgrad.zeros(*shape)
        assert a.fill_diagonal_(5.0, wrap=wrap) is a
        b = np.zeros(shape, np.float32)
        np.fill_diagonal(b, 5.0, wrap=wrap)
        np.testing.assert_array_equal(a.numpy(), b)
    c = clgrad.zeros(3, 3, 3).fill_diagonal_(2.0)
    assert c.sum().item() == 6.0 and c[2, 2, 2].item() == 2.0
    with pytest.raises(RuntimeError):
        clgrad.zeros(3).fill_diagonal_(1.0)


def test_isin_values():
    e = clgrad.tensor([1, 2, 3, 4, 2])
    t = clgrad.tensor([2, 4, 9])
    np.testing.assert_array_equal(clgrad.isin(e, t).numpy(), np.isin([1, 2, 3, 4, 2], [2, 4, 9]))
    np.testing.assert_array_equal(clgrad.isin(e, t, invert=True).numpy(),
                                  np.isin([1, 2, 3, 4, 2], [2, 4, 9], invert=True))


def test_module_get_submodule_parameter_buffer():
    nn = clgrad.nn
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.BatchNorm1d(2)))
    assert m.get_submodule("") is m and m.get_submodule("1.0") is m[1][0]
    assert m.get_parameter("0.weight") is m[0].weight
    assert m.get_buffer("1.0.running_mean") is m[1][0].running_mean
    with pytest.raises(AttributeError, match="Linear has no attribute `foo`"):
        m.get_submodule("0.foo")
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        m.get_submodule("0.weight")
    with pytest.raises(AttributeError, match="`running_mean` is not an nn.Parameter"):
        m.get_parameter("1.0.running_mean")
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        m.get_buffer("0.weight")
