"""Reductions over any set of dims (with keepdim) on strided views, against NumPy in float64."""
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import clgrad
from strided import NP, shapes, strided_pair, values

F32, F64, I64, I32 = clgrad.float32, clgrad.float64, clgrad.int64, clgrad.int32
FLOATS = [F32, F64]


def examples(n: int) -> int:
    return int(os.environ.get("CLGRAD_HYPOTHESIS_EXAMPLES", n))


def close(got, ref, dtype, scale=None, what=""):
    """float32: relative to the magnitude ``scale`` of the summed terms; float64: tight."""
    g = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    assert g.shape == np.shape(ref), f"{what}: shape {g.shape} vs {np.shape(ref)}"
    if dtype is F32:
        atol = 2e-6 * (np.max(scale) if scale is not None and np.size(scale) else 1.0)
        np.testing.assert_allclose(g, ref, rtol=2e-5, atol=atol, err_msg=what)
    elif dtype is F64:
        np.testing.assert_allclose(g, ref, rtol=1e-11, atol=1e-12, err_msg=what)
    else:
        np.testing.assert_array_equal(g, ref, err_msg=what)


def _draw_dims(data, ndim):
    """None (all dims), one int, or a tuple of distinct dims (negative ones too)."""
    if ndim == 0 or data.draw(st.integers(0, 4), label="all") == 0:
        return None, tuple(range(ndim))
    picked = sorted(set(data.draw(st.lists(st.integers(0, ndim - 1), min_size=1,
                                           max_size=ndim), label="dims")))
    dims = tuple(d - ndim if data.draw(st.booleans(), label="neg") else d for d in picked)
    if len(dims) == 1 and data.draw(st.booleans(), label="as_int"):
        return dims[0], tuple(picked)
    return dims, tuple(picked)


def _var(x, axis, keepdims, ddof):
    n = np.prod([x.shape[a] for a in axis]) if axis else 1
    if n - ddof <= 0:
        return np.full(np.sum(x, axis=axis, keepdims=keepdims).shape, np.nan)
    return np.var(x, axis=axis, keepdims=keepdims, ddof=ddof)


def _np(fn):
    return lambda x, axis, keepdims: fn(x, axis=axis, keepdims=keepdims)


# name: (clgrad call(x, dim, keepdim), NumPy call(x64, axis, keepdims), dtypes, input kind,
#        allows size-0 inputs)
REDUCE = {
    "sum": (lambda x, d, k: x.sum(d, keepdim=k), _np(np.sum), FLOATS + [I64, I32], "normal", True),
    "mean": (lambda x, d, k: x.mean(d, keepdim=k), _np(np.mean), FLOATS, "normal", False),
    "prod": (lambda x, d, k: x.prod(d, keepdim=k), _np(np.prod), FLOATS + [I64], "positive", True),
    "var": (lambda x, d, k: x.var(d, keepdim=k), lambda x, a, k: _var(x, a, k, 1), FLOATS,
            "normal", False),
    "var_biased": (lambda x, d, k: x.var(d, keepdim=k, unbiased=False),
                   lambda x, a, k: _var(x, a, k, 0), FLOATS, "normal", False),
    "std": (lambda x, d, k: x.std(d, keepdim=k),
            lambda x, a, k: np.sqrt(_var(x, a, k, 1)), FLOATS, "normal", False),
    "amax": (lambda x, d, k: x.amax(d, keepdim=k), _np(np.amax), FLOATS + [I64], "normal", False),
    "amin": (lambda x, d, k: x.amin(d, keepdim=k), _np(np.amin), FLOATS + [I64], "normal", False),
    "norm2": (lambda x, d, k: x.norm(2, d, keepdim=k),
              lambda x, a, k: np.sqrt(np.sum(x * x, axis=a, keepdims=k)), FLOATS, "normal",
              True),
    "norm1": (lambda x, d, k: x.norm(1, d, keepdim=k),
              lambda x, a, k: np.sum(np.abs(x), axis=a, keepdims=k), FLOATS, "normal", True),
    "logsumexp": (lambda x, d, k: clgrad.logsumexp(x, d, keepdim=k),
                  lambda x, a, k: np.log(np.sum(np.exp(x), axis=a, keepdims=k)), FLOATS,
                  "normal", False),
}


@pytest.mark.parametrize("name", sorted(REDUCE))
@settings(max_examples=examples(20))
@given(data=st.data())
def test_reduce_over_any_dims(name, data):
    op, ref_op, dts, kind, allow_empty = REDUCE[name]
    dtype = data.draw(st.sampled_from(dts), label="dtype")
    shape = data.draw(shapes(max_dims=4, min_side=0 if allow_empty else 1), label="shape")
    if name == "logsumexp" and not shape:
        shape = (3,)
    x_np, x = data.draw(strided_pair(shape, dtype, kind))
    dim, axis = _draw_dims(data, len(shape))
    if name == "logsumexp" and dim is None:
        dim, axis = tuple(range(len(shape))), tuple(range(len(shape)))
    keepdim = data.draw(st.booleans(), label="keepdim")
    out = op(x, dim, keepdim)
    x64 = x_np.astype(np.float64) if dtype.is_floating_point else x_np.astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        ref = np.asarray(ref_op(x64, axis, keepdim))  # axis is a tuple: () means none
    if not dtype.is_floating_point:
        want = dtype if name in ("amax", "amin") else I64
        assert out.dtype is want
        ref = ref.astype(NP[want])
    else:
        assert out.dtype is dtype
        if dtype is F32:  # a float32 result past float32's range is inf (a product of 2s)
            with np.errstate(over="ignore"):
                ref = ref.astype(np.float32).astype(np.float64)
    scale = np.sum(np.abs(x64), axis=axis, keepdims=keepdim) if name != "prod" else None
    if name in ("var", "var_biased", "std"):
        scale = np.sum(x64 * x64, axis=axis, keepdims=keepdim)
    close(out, ref, dtype, scale, f"{name} dim={dim} keepdim={keepdim} shape={shape}")
    np.testing.assert_array_equal(x.numpy(), x_np)


@pytest.mark.parametrize("which", ["max", "min"])
@pytest.mark.parametrize("dtype", [F32, F64, I64])
@settings(max_examples=examples(20))
@given(shape=shapes(min_dims=1, max_dims=4, min_side=1), data=st.data())
def test_max_min_values_and_indices(which, dtype, shape, data):
    x_np, x = data.draw(strided_pair(shape, dtype, "distinct", broadcast=False))
    d = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    vals, idx = getattr(x, which)(d, keepdim=keepdim)
    arg = (np.argmax if which == "max" else np.argmin)(x_np, axis=d, keepdims=keepdim)
    ref = (np.amax if which == "max" else np.amin)(x_np, axis=d, keepdims=keepdim)
    assert idx.dtype is I64 and vals.dtype is dtype
    np.testing.assert_array_equal(vals.numpy(), ref)
    np.testing.assert_array_equal(idx.numpy(), arg)
    np.testing.assert_array_equal(getattr(x, "arg" + which)(d, keepdim=keepdim).numpy(), arg)
    whole = getattr(x, which)()
    assert whole.shape == ()
    np.testing.assert_array_equal(whole.numpy(), ref_all := getattr(np, which)(x_np))
    assert getattr(x, "arg" + which)().item() == getattr(np, "arg" + which)(x_np)
    assert np.ravel(x_np)[getattr(x, "arg" + which)().item()] == ref_all


def test_argmax_ties_take_the_first_index():
    x = clgrad.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]]).T
    np.testing.assert_array_equal(x.argmax(0).numpy(), [1, 0])
    np.testing.assert_array_equal(x.argmin(0).numpy(), [3, 0])
    big = clgrad.zeros(3000)
    big[1000] = 5.0
    big[2500] = 5.0
    assert big.argmax().item() == 1000
    v, i = clgrad.tensor([[float("nan"), 1.0], [0.0, 2.0]]).max(1)
    assert np.isnan(v.numpy()[0]) and i.numpy()[0] == 0 and v.numpy()[1] == 2.0


@pytest.mark.parametrize("layout", ["contiguous", "expanded", "rows", "cols", "strided"])
def test_float32_sum_is_compensated(layout):
    n = 62_500
    if layout == "contiguous":
        x = clgrad.full((n,), 1.23456)
    elif layout == "expanded":
        x = clgrad.tensor([1.23456]).expand(n)
    elif layout == "rows":
        x = clgrad.full((250, 250), 1.23456)
    elif layout == "cols":
        x = clgrad.full((250, 250), 1.23456).T
    else:
        x = clgrad.full((2 * n + 1,), 1.23456)[1::2]
    total = x.sum().item()
    assert abs(total - 77160.0) < 0.05, total
    assert abs(x.mean().item() - 1.23456) < 1e-6
    if x.ndim == 2:
        assert abs(x.sum(0).sum().item() - 77160.0) < 0.05
        np.testing.assert_allclose(x.sum(1).numpy(), np.full(250, 308.64), rtol=1e-6)


@pytest.mark.parametrize("ni", [1, 7, 9, 257, 1025, 2049, 4099])
@pytest.mark.parametrize("no", [1, 3])
def test_sizes_around_work_group(ni, no):
    rng = np.random.default_rng(ni * 10 + no)
    x_np = values(rng, (ni, no), F64, "distinct")
    x = clgrad.tensor(x_np).T                       # (no, ni), reduced along stride-no dim
    ref = x_np.T
    close(x.sum(1), ref.sum(1), F64)
    close(x.prod(1) if ni <= 9 else x.mean(1), ref.prod(1) if ni <= 9 else ref.mean(1), F64)
    np.testing.assert_array_equal(x.argmax(1).numpy(), ref.argmax(1))
    np.testing.assert_array_equal(x.min(1).values.numpy(), ref.min(1))
    close(x.var(1) if ni > 1 else x.sum(1), ref.var(1, ddof=1) if ni > 1 else ref.sum(1), F64)
    xf = clgrad.tensor(x_np.astype(np.float32)).T
    close(xf.sum(1), ref.sum(1), F32, np.abs(ref).sum(1))
    close(xf.sum(), ref.sum(), F32, np.abs(ref).sum())


def test_empty_reductions():
    x = clgrad.zeros(3, 0)
    np.testing.assert_array_equal(x.sum(1).numpy(), np.zeros(3))
    np.testing.assert_array_equal(x.prod(1).numpy(), np.ones(3))
    assert np.isnan(x.mean(1).numpy()).all()
    assert x.sum(0).shape == (0,)
    with pytest.raises(IndexError, match="non-zero size"):
        x.max(1)
    with pytest.raises(RuntimeError, match="numel"):
        x.argmax()


# -- softmax family ---------------------------------------------------------------------------
def _np_log_softmax(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


@pytest.mark.parametrize("dtype", FLOATS)
@settings(max_examples=examples(25))
@given(shape=shapes(min_dims=1, max_dims=4, min_side=1), data=st.data())
def test_softmax_on_strided_views(dtype, shape, data):
    x_np, x = data.draw(strided_pair(shape, dtype))
    scale = data.draw(st.sampled_from([1.0, 30.0, 1e4]), label="scale")
    x_np, x = x_np * dtype.np.type(scale), x * scale
    d = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    ls = _np_log_softmax(x_np.astype(np.float64), d)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype is F32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(clgrad.softmax(x, d).numpy(), np.exp(ls), **tol)
    np.testing.assert_allclose(x.log_softmax(d).numpy(), ls,
                               rtol=tol["rtol"], atol=tol["atol"] * (1 + np.abs(ls).max()))


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_is_stable_for_huge_logits(dtype):
    x = clgrad.tensor(np.array([[1e8, 0.0, -1e8], [1e8, 1e8, 1e8], [-1e8, -1e8 + 64, -1e8]],
                               dtype=NP[dtype]))
    p = x.softmax(1).numpy()
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p[0], [1, 0, 0])
    np.testing.assert_allclose(p[1], [1 / 3] * 3, rtol=1e-6)
    np.testing.assert_allclose(p[2], [0, 1, 0], atol=1e-27)
    ls = x.log_softmax(1).numpy()
    assert np.isfinite(ls).all()
    np.testing.assert_allclose(ls[0], [0, -1e8, -2e8], rtol=1e-7)
    np.testing.assert_allclose(ls[1], [-np.log(3)] * 3, rtol=1e-6)
    np.testing.assert_allclose(clgrad.logsumexp(x, 1).numpy(),
                               [1e8, 1e8 + np.log(3), -1e8 + 64], rtol=1e-7)
    np.testing.assert_allclose(x.T.softmax(0).numpy(), p.T)


@pytest.mark.parametrize("p,dim", [(2, 1), (1, 0), (3.0, -1), (float("inf"), 1)])
def test_normalize(p, dim):
    import clgrad.nn.functional as F
    from strided import leaf_and_view, numeric_vjp
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4, 2))
    x[0, :, 0] = 0.0                                        # a zero vector: divided by eps

    def ref(a):
        if p == float("inf"):
            n = np.abs(a).max(dim, keepdims=True)
        else:
            n = (np.abs(a) ** p).sum(dim, keepdims=True) ** (1 / p)
        return a / np.maximum(n, 1e-12)
    leaf, view = leaf_and_view(x)
    y = F.normalize(view(leaf), p, dim)
    np.testing.assert_allclose(y.detach().numpy(), ref(x), rtol=1e-12)
    x[0, :, 0] = [0.3, -0.7, 0.5, 0.1]                     # no ties (max is a kink)
    leaf, view = leaf_and_view(x)
    g = rng.standard_normal(x.shape)
    F.normalize(view(leaf), p, dim).backward(clgrad.tensor(g))
    np.testing.assert_allclose(view(leaf.grad).numpy(), numeric_vjp(ref, x, g), atol=1e-7)
    z = clgrad.zeros(2, 3, dtype=clgrad.float64, requires_grad=True)   # a zero vector:
    F.normalize(z, p, 1, eps=1e-3).backward(clgrad.ones(2, 3, dtype=clgrad.float64))
    np.testing.assert_allclose(z.grad.numpy(), np.full((2, 3), 1e3))   # g / eps, no NaN


# -- float16 (helper h2): half scalars passed at their size, accumulation in float32 ----------
_FP16 = pytest.mark.skipif(not clgrad.runtime.default_device().fp16,
                           reason="the default device lacks cl_khr_fp16")


@_FP16
@pytest.mark.parametrize("name", ["max", "min", "amax", "amin", "argmax", "argmin", "logsumexp",
                                  "norm"])
def test_float16_reductions_passing_a_half_scalar(name):
    """These launch the reduce kernel with ACC = half: its by-value scale argument must be 2
    bytes (a float32 there was clSetKernelArg INVALID_ARG_SIZE)."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((3, 40)).astype(np.float16) * 4
    for dim in (None, 1):
        if name == "logsumexp" and dim is None:
            continue
        args = () if dim is None else (dim,)
        got = getattr(clgrad, name)(clgrad.tensor(x), *args)
        want = getattr(torch, name)(torch.tensor(x), *args)
        got, want = (got[0], want[0]) if name in ("max", "min") and dim is not None else (got,
                                                                                         want)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_allclose(got.numpy().astype(np.float64),
                                   want.numpy().astype(np.float64), rtol=1e-3, atol=1e-3)


@_FP16
def test_float16_var_std_norm_accumulate_in_float32():
    """A float16 sum of squares overflows (65504) where PyTorch's float accumulation does not:
    var([0, 200, 400]) is 40000, std(arange(100)) 29.02, the 2-norm of 3000 hundreds 5476
    (float32 5477.2 rounded once; rounding twice gave 5480)."""
    torch = pytest.importorskip("torch")
    cases = [np.array([0, 200, 400], np.float16), np.arange(100, dtype=np.float16),
             np.full(3000, 100, np.float16)]
    for x in cases:
        for name in ("var", "std", "norm", "mean", "sum"):
            got = getattr(clgrad, name)(clgrad.tensor(x))
            want = getattr(torch, name)(torch.tensor(x))
            assert got.dtype == clgrad.float16
            assert got.item() == want.item(), (name, x[:3], got.item(), want.item())
    x = np.arange(100, dtype=np.float16).reshape(4, 25)
    for dim in (0, 1):
        np.testing.assert_array_equal(clgrad.std(clgrad.tensor(x), dim).numpy(),
                                      torch.std(torch.tensor(x), dim).numpy())
    row = clgrad.nn.functional.normalize(clgrad.tensor(cases[2][None]), dim=1)
    want = torch.nn.functional.normalize(torch.tensor(cases[2][None]), dim=1)
    np.testing.assert_array_equal(row.numpy(), want.numpy())


@_FP16
def test_float16_var_gradient_flows_through_float32():
    torch = pytest.importorskip("torch")
    x = np.array([0, 200, 400, 50], np.float16)
    a = clgrad.tensor(x, requires_grad=True)
    clgrad.var(a).backward()
    t = torch.tensor(x, requires_grad=True)
    torch.var(t).backward()
    assert a.grad.dtype == clgrad.float16
    # PyTorch's backward runs in float16; ours in float32, rounded once: within one half ulp
    exact = 2 / 3 * (x.astype(np.float64) - x.astype(np.float64).mean())
    np.testing.assert_allclose(a.grad.numpy(), exact, rtol=2 ** -11)
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=2 ** -10)


@_FP16
def test_float16_softmax_sums_in_float32():
    """A float16 sum of exps overflows past 65504: softmax over 70000 zeros was 0 (PyTorch:
    1/70000 = 1.43e-05); random rows are within half a float16 ulp of the float64 softmax."""
    torch = pytest.importorskip("torch")
    got = clgrad.softmax(clgrad.zeros(70000, dtype=clgrad.float16), 0)
    assert got.dtype == clgrad.float16
    np.testing.assert_array_equal(got.numpy(), np.full(70000, 1 / 70000, np.float16))
    x = (np.random.default_rng(0).standard_normal((4, 5000)) * 3).astype(np.float16)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(1, keepdims=True))
    for name, exact in (("softmax", e / e.sum(1, keepdims=True)),
                        ("log_softmax", np.log(e / e.sum(1, keepdims=True)))):
        y = getattr(clgrad, name)(clgrad.tensor(x), 1).numpy().astype(np.float64)
        ulp = np.spacing(np.abs(exact).astype(np.float16)).astype(np.float64)
        assert (np.abs(y - exact) <= 0.5001 * ulp).all(), name
    a = clgrad.tensor(x[:, :50], requires_grad=True)
    t = torch.tensor(x[:, :50], requires_grad=True)
    w = np.random.default_rng(1).standard_normal((4, 50)).astype(np.float16)
    (clgrad.softmax(a, 1) * clgrad.tensor(w)).sum().backward()
    (torch.softmax(t, 1) * torch.tensor(w)).sum().backward()
    assert a.grad.dtype == clgrad.float16
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=2 ** -9, atol=2 ** -14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_over_rows_of_conv_maps(dtype):
    """The sums of a training step (the SE block's mean over the map, a bias gradient's sum
    over batch and map, a full sum, stepped and transposed inputs, row lengths around 8, inf
    and NaN) against float64 NumPy: on CPU devices these run kernels/reduce.cl's reduce_runs
    (8 Kahan-compensated partial sums per output)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 20, 13, 11)).astype(dtype) + 3
    t = clgrad.tensor(x)
    tol = dict(rtol=2e-6 if dtype == np.float32 else 1e-13, atol=0)
    x64 = x.astype(np.float64)
    cases = [(t.mean((2, 3)), x64.mean((2, 3))), (t.sum((0, 2, 3)), x64.sum((0, 2, 3))),
             (t.sum(), x64.sum()),
             (t[:, ::3, 1:, ::2].sum((1, 3)), x64[:, ::3, 1:, ::2].sum((1, 3))),
             (t.transpose(1, 3).sum(3), x64.transpose(0, 3, 2, 1).sum(3)),
             (t[..., :9].mean(-1), x64[..., :9].mean(-1)),
             (t.sum(0, keepdim=True), x64.sum(0, keepdims=True))]
    for got, want in cases:
        assert got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want, **tol)
    # 62 500 copies of 1.23456 (Kahan per partial sum) and rows of inf/NaN
    ones = np.full((3, 62500), 1.23456, dtype)
    ones[1, 17] = np.inf
    ones[2, 5] = np.nan
    got = clgrad.tensor(ones).sum(1).numpy()
    np.testing.assert_allclose(got[0], 62500 * np.float64(dtype(1.23456)),
                               rtol=1.2e-7 if dtype == np.float32 else 2.3e-16)
    assert np.isposinf(got[1]) and np.isnan(got[2])
    mixed = np.zeros((2, 40), dtype)
    mixed[0, 3], mixed[0, 30] = np.inf, -np.inf
    mixed[1, 9] = -np.inf
    got = clgrad.tensor(mixed).sum(1).numpy()
    assert np.isnan(got[0]) and np.isneginf(got[1])


# -- sums over outer dims (kernels/reduce.cl reduce_cols) --------------------------------------
def _kernels_run(monkeypatch):
    """The names of the kernels launched from now on (a list that fills)."""
    from clgrad.runtime import device as rt
    names = []
    for method in ("launch", "launch_split"):
        def spy(self, kernel, *args, _real=getattr(rt.Device, method)):
            names.append(kernel.function_name)
            return _real(self, kernel, *args)
        monkeypatch.setattr(rt.Device, method, spy)
    return names


def _exact_sum(a, dims, keepdims=False):
    """The float64 sums of ``a`` over ``dims``, correctly rounded (math.fsum; NumPy's sum over
    an outer axis adds row after row, off by more than the sums it is checking here)."""
    import math
    a = np.asarray(a, np.float64)
    kept = [d for d in range(a.ndim) if d not in dims]
    rows = np.moveaxis(a, list(dims), list(range(a.ndim - len(dims), a.ndim)))
    rows = rows.reshape([a.shape[d] for d in kept] + [-1])
    out = np.array([math.fsum(r) for r in rows.reshape(-1, rows.shape[-1])]).reshape(
        rows.shape[:-1])
    return out.reshape([1 if d in dims else a.shape[d] for d in range(a.ndim)]) if keepdims \
        else out


def _outer_cases():
    """(name, NumPy array, its clgrad view, dims): sums whose reduced dims are strided wider
    than the outputs' innermost dim, in many layouts: runs around the vector blocks (1..70
    outputs), outer rows that do not merge, steps, offsets, a permuted storage."""
    rng = np.random.default_rng(11)
    out = []
    for run in (1, 2, 7, 8, 9, 31, 32, 33, 63, 64, 65, 70):
        a = rng.standard_normal((13, run))
        out.append((f"(13, {run}) dim 0", a, clgrad.tensor(a), (0,)))
    a = rng.standard_normal((5, 3, 40))
    out.append(("rows of 37 of 40", a[:, :, :37], clgrad.tensor(a)[:, :, :37], (0,)))
    for w in (7, 20):  # rows of short runs: scalars, and a vector with a tail
        m = rng.standard_normal((6, 11, w))
        out.append((f"dim 1 of (6, 11, {w})", m, clgrad.tensor(m), (1,)))
    out.append(("dims (0, 1) of 3-D", a, clgrad.tensor(a), (0, 1)))
    out.append(("stepped", a[::2, :, 1::3], clgrad.tensor(a)[::2, :, 1::3], (0,)))
    b = rng.standard_normal((6, 9, 4, 35))
    out.append(("dims (0, 2)", b, clgrad.tensor(b), (0, 2)))
    out.append(("offset view", b[1:, 2:], clgrad.tensor(b)[1:, 2:], (0, 1, 2)))
    c = rng.standard_normal((35, 4, 9))  # stored (35, 4, 9), viewed (9, 4, 35): run stride 1?
    out.append(("permuted storage", c.transpose(2, 1, 0), clgrad.tensor(c).permute(2, 1, 0),
                (2,)))
    out.append(("expanded reduced dim", np.broadcast_to(c[:1], (50, 4, 9)),
                clgrad.tensor(c[:1]).expand(50, 4, 9), (0,)))
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("keepdim", [False, True])
def test_outer_dim_sums_against_float64(dtype, keepdim):
    """sum and mean over outer dims of many layouts, float32 and float64, against NumPy in
    float64 (the tolerance: a few eps of the summed magnitudes)."""
    eps = np.finfo(dtype).eps
    for name, a, t, dims in _outer_cases():
        a = a.astype(dtype)
        t = t.to(clgrad.float32 if dtype == np.float32 else clgrad.float64)
        ref = _exact_sum(a, dims, keepdim)
        mag = _exact_sum(np.abs(a), dims, keepdim)
        got = t.sum(dims, keepdim=keepdim).numpy()
        assert got.shape == ref.shape and got.dtype == dtype, name
        assert (np.abs(got - ref) <= 6 * eps * mag + 1e-300).all(), name
        n = np.prod([a.shape[d] for d in dims])
        np.testing.assert_allclose(t.mean(dims, keepdim=keepdim).numpy(), ref / n,
                                   rtol=0, atol=float(6 * eps * mag.max() / n), err_msg=name)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_outer_dim_integer_sums_are_exact(dtype):
    """int64 sums (of int64, int32 and bool inputs) over outer dims are exact, also past
    2^24 and 2^53 (a float accumulator would round them)."""
    rng = np.random.default_rng(3)
    for name, a, t, dims in _outer_cases():
        if dtype is np.bool_:
            a = a > 0
        else:
            big = (1 << 40) + 1 if dtype is np.int64 else (1 << 24) + 1
            a = (np.sign(a) * big + rng.integers(-9, 10, a.shape)).astype(dtype)
        t = clgrad.tensor(np.ascontiguousarray(a))
        got = t.sum(dims)
        assert got.dtype is I64, name
        np.testing.assert_array_equal(got.numpy(), a.astype(np.int64).sum(dims), err_msg=name)
    x = np.full((2000, 3), (1 << 53) // 1000 + 7, np.int64)
    np.testing.assert_array_equal(clgrad.tensor(x).sum(0).numpy(), x.sum(0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_long_outer_dim_sums_are_compensated(dtype):
    """A million rows summed over dim 0: 1.23456 each, and values around 1e4 with small
    parts, where a plain float32 sum drifts visibly (shown below against NumPy's sequential
    float32 cumsum), within a few eps of float64."""
    n = 1_000_000
    x = np.full((n, 3), 1.23456, dtype)
    x[:, 1] = np.linspace(1e4, 1e4 + 1, n, dtype=dtype)
    x[:, 2] = np.random.default_rng(0).standard_normal(n).astype(dtype)
    ref = _exact_sum(x, (0,))
    mag = _exact_sum(np.abs(x), (0,))
    if dtype == np.float32:  # plain float32 sums are visibly off
        plain = np.cumsum(x[:, :2], axis=0, dtype=np.float32)[-1]
        assert (np.abs(plain - ref[:2]) > 1e-4 * ref[:2]).all()
    got = clgrad.tensor(x).sum(0).numpy()
    assert (np.abs(got - ref) <= 6 * np.finfo(dtype).eps * mag).all(), (got, ref)
    np.testing.assert_allclose(clgrad.tensor(x).mean(0).numpy(), ref / n,
                               rtol=0, atol=float(6 * np.finfo(dtype).eps * mag.max() / n))


def test_outer_dim_sums_propagate_nan_and_inf():
    """NaN in gives NaN out; inf gives inf; inf and -inf give NaN (in the vector blocks and
    in a run's last, partial block)."""
    x = np.ones((40, 37), np.float32)
    x[5, 0], x[9, 35] = np.nan, np.nan
    x[7, 1], x[30, 36] = np.inf, -np.inf
    x[3, 2], x[4, 2] = np.inf, -np.inf
    x[0, 34], x[39, 34] = -np.inf, np.inf
    got = clgrad.tensor(x).sum(0).numpy()
    with np.errstate(invalid="ignore"):
        want = x.astype(np.float64).sum(0)
    np.testing.assert_array_equal(got, want.astype(np.float32))
    assert np.isnan(got[[0, 2, 34, 35]]).all() and got[1] == np.inf and got[36] == -np.inf


def test_outer_dim_sums_of_empty_dims():
    """An empty reduced dim sums to 0 (mean: NaN); an empty kept dim gives an empty result."""
    z = clgrad.zeros(0, 5, 3)
    np.testing.assert_array_equal(z.sum(0).numpy(), np.zeros((5, 3)))
    np.testing.assert_array_equal(z.sum(0, keepdim=True).numpy(), np.zeros((1, 5, 3)))
    assert np.isnan(z.mean(0).numpy()).all()
    np.testing.assert_array_equal(clgrad.zeros(0, 9, dtype=clgrad.int64).sum(0).numpy(),
                                  np.zeros(9, np.int64))
    assert clgrad.zeros(4, 0).sum(0).shape == (0,)


def test_sum_into_a_strided_view():
    """reduce.sum_into (the split-K GEMM's and the 1x1 weight gradient's sum of stacked
    partial sums) writes through a strided view with an offset, scaled."""
    from clgrad.ops import reduce as rd
    from clgrad.runtime import launch_count
    rng = np.random.default_rng(2)
    parts = rng.standard_normal((6, 5, 37)).astype(np.float32)
    big = clgrad.zeros(7, 40)
    rd.sum_into(big[1:6, 2:39], clgrad.tensor(parts), 0, 0.5)
    want = np.zeros((7, 40), np.float32)
    want[1:6, 2:39] = 0.5 * parts.astype(np.float64).sum(0)
    np.testing.assert_allclose(big.numpy(), want, rtol=1e-6, atol=1e-6)
    col = clgrad.zeros(37, 5)
    rd.sum_into(col.T, clgrad.tensor(parts), 0)  # out's run strided 5
    np.testing.assert_allclose(col.numpy(), parts.astype(np.float64).sum(0).T, rtol=1e-6,
                               atol=1e-6)
    g = rng.standard_normal((3, 6, 4, 5)).astype(np.float32)  # a conv's bias gradient
    bias, gt = clgrad.zeros(13), clgrad.tensor(g)
    launches = launch_count()
    rd.sum_into(bias[1::2], gt, (3, 0, 2))  # dims in any order
    assert launch_count() - launches == 1
    want = np.zeros(13)
    want[1::2] = g.astype(np.float64).sum((0, 2, 3))
    np.testing.assert_allclose(bias.numpy(), want, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_outer_dim_sums_pick_reduce_cols(monkeypatch, kind):
    """x.sum(0), a bias gradient's sum over the batch, runs reduce_cols (the device taken as
    a CPU, and as a GPU: work-groups of 32 outputs x 8 items, a tree over the 8); sums over
    the innermost dim do not; values against float64 either way."""
    dev = clgrad.default_device()
    monkeypatch.setattr(dev, "kind", kind)
    monkeypatch.setattr(dev, "plans", {})  # (the plans of the device's own kind)
    names = _kernels_run(monkeypatch)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((300, 2 * 32 * dev.compute_units + 5)).astype(np.float32)
    t = clgrad.tensor(a)
    for fn, want, kernel in [(lambda: t.sum(0), _exact_sum(a, (0,)), "reduce_cols"),
                             (lambda: t[:, 3:].mean(0), _exact_sum(a[:, 3:], (0,)) / 300,
                              "reduce_cols"),
                             (lambda: t.sum(1), _exact_sum(a, (1,)), "reduce")]:
        names.clear()
        np.testing.assert_allclose(fn().numpy(), want, rtol=1e-5, atol=1e-5)
        assert names[0] == kernel or kernel == "reduce" and names[0] in ("reduce",
                                                                         "reduce_runs"), names


def test_reduce_plans_follow_every_input_of_their_key():
    """Reductions keep their launch plans per layout (Device.plans): calls that differ in one
    input of the key at a time (x's offset, strides, dtype; dims, keepdim, the op, arg; out's
    view and offset; the scale: mean after sum) each give NumPy's answer."""
    from clgrad.ops import reduce as rd
    rng = np.random.default_rng(9)
    base = rng.standard_normal((7, 6, 40))
    t = clgrad.tensor(base)
    views = [(base[:, :, :33], t[:, :, :33]), (base[:, :, 1:34], t[:, :, 1:34]),
             (base[:, :, 2:35:1].transpose(0, 2, 1)[:, :6], t[:, :, 2:35].transpose(1, 2)[:, :6])]
    for a, v in views:
        for dt, npdt in ((clgrad.float64, np.float64), (clgrad.float32, np.float32)):
            av, vv = a.astype(npdt), v.to(dt)
            for dims in ((0,), (1,), (0, 1), (2,)):
                for keep in (False, True):
                    ref = _exact_sum(av, dims, keep)
                    tol = dict(rtol=1e-5 if npdt == np.float32 else 1e-12, atol=1e-5)
                    np.testing.assert_allclose(vv.sum(dims, keepdim=keep).numpy(), ref, **tol)
                    n = np.prod([av.shape[d] for d in dims])
                    np.testing.assert_allclose(vv.mean(dims, keepdim=keep).numpy(), ref / n,
                                               **tol)
                    np.testing.assert_allclose(vv.sum(dims, keepdim=keep).numpy(), ref, **tol)
                    np.testing.assert_array_equal(vv.amax(dims, keepdim=keep).numpy(),
                                                  av.max(dims, keepdims=keep))
            np.testing.assert_array_equal(vv.argmax(1).numpy(), av.argmax(1))
            np.testing.assert_array_equal(vv.max(0).values.numpy(), av.max(0))
    ints = clgrad.tensor(rng.integers(-9, 9, (7, 6, 40)))
    np.testing.assert_array_equal(ints[:, :, :33].sum(0).numpy(), ints.numpy()[:, :, :33].sum(0))
    parts = clgrad.tensor(rng.standard_normal((5, 6, 33)))
    for off in (0, 1, 7):
        big = clgrad.zeros(8, 40, dtype=clgrad.float64)
        rd.sum_into(big[1:7, off:off + 33], parts, 0, 2.0)
        want = np.zeros((8, 40))
        want[1:7, off:off + 33] = 2 * _exact_sum(parts.numpy(), (0,))
        np.testing.assert_allclose(big.numpy(), want, rtol=1e-12, atol=1e-12)


# -- issue 32: prod's gradient where the group holds zeros ----------------------------------
_PROD_ROWS = [[2.0, 0.0, 3.0, 5.0],    # exactly one zero: the others' product at the zero
              [0.0, 4.0, 0.0, 1.5],    # two zeros: 0 everywhere
              [1.5, -2.0, 0.5, 4.0],   # no zero: out / x
              [0.0, 7.0, -1.0, 2.0]]   # the zero first


def _prod_grad_by_hand(rows):
    """d prod(row) / d row[i] = the product of the row's other elements (no division)."""
    rows = np.asarray(rows, np.float64)
    return np.array([[np.prod(np.delete(r, i)) for i in range(r.size)] for r in rows])


@pytest.mark.parametrize("full", [False, True], ids=["dim", "all"])
def test_prod_gradient_with_zeros(full):
    base = np.asarray(_PROD_ROWS, np.float64)
    # a non-contiguous view: the rows are stored as the columns of a transposed buffer
    xt = clgrad.tensor(base.T.copy(), dtype=F64, requires_grad=True)
    x = xt.t()
    assert not x.is_contiguous()
    weights = np.array([1.0, -2.0, 0.5, 3.0])
    if full:
        sub = base[:1]  # one zero in the whole tensor: only the first row
        x1 = clgrad.tensor(sub, dtype=F64, requires_grad=True)
        x1.prod().backward()
        np.testing.assert_array_equal(x1.grad.numpy(), _prod_grad_by_hand(sub.reshape(1, -1)))
        xt.grad = None
        x.prod().backward()  # several zeros in the tensor: 0 everywhere
        np.testing.assert_array_equal(xt.grad.t().numpy(), np.zeros_like(base))
    else:
        (x.prod(1) * clgrad.tensor(weights, dtype=F64)).sum().backward()
        np.testing.assert_allclose(xt.grad.t().numpy(),
                                   _prod_grad_by_hand(base) * weights[:, None], rtol=1e-15)
    assert clgrad.autograd.gradcheck(lambda a: a.prod(1), [x.detach().requires_grad_()])
    assert clgrad.autograd.gradcheck(lambda a: a[:1].prod(), [x.detach().requires_grad_()])


def test_prod_gradient_with_zeros_matches_torch():
    torch = pytest.importorskip("torch")
    base = np.asarray(_PROD_ROWS, np.float64)
    for dims, keep in [(1, False), (0, True), (None, False), ((0, 1), True)]:
        for rows in (base, base[:1], base[2:3]):
            x = clgrad.tensor(rows, dtype=F64, requires_grad=True)
            r = torch.tensor(rows, requires_grad=True)
            out = x.prod() if dims is None else x.prod(dims, keepdim=keep)
            ref = r.prod() if dims is None else (r.prod(dims, keepdim=keep) if isinstance(
                dims, int) else r.prod(dims[1], keepdim=True).prod(dims[0], keepdim=True))
            out.sum().backward()
            ref.sum().backward()
            np.testing.assert_allclose(x.grad.numpy(), r.grad.numpy(), rtol=1e-15,
                                       err_msg=f"dims {dims} keepdim {keep}")


@pytest.mark.parametrize("call", [
    lambda t, x: x.argmax(), lambda t, x: x.argmin(), lambda t, x: x.argmax(0),
    lambda t, x: t.argmin(x, 0, keepdim=True), lambda t, x: t.argmax(x),
])
def test_argmax_argmin_refuse_bool(call):
    """PyTorch: "argmax(): does not support bool input" (clgrad used to answer 0 and 1)."""
    with pytest.raises(RuntimeError, match=r"arg(max|min)\(\): does not support bool input"):
        call(clgrad, clgrad.tensor([True, False, True]))
    assert call(clgrad, clgrad.tensor([1, 0, 1])).tolist() in (0, 1, [0], [1])  # ints: fine
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=r"arg(max|min)\(\): does not support bool input"):
        call(torch, torch.tensor([True, False, True]))


@pytest.mark.parametrize("name", ["any", "all"])
@pytest.mark.parametrize("dtype", [clgrad.float32, clgrad.int64, clgrad.bool])
def test_any_all_against_numpy(name, dtype):
    """any/all over every dim, one dim or a tuple (keepdim too) of a strided view, as
    np.any/np.all: bool results, rows all nonzero, all zero and mixed."""
    rng = np.random.default_rng(34)
    host = rng.integers(0, 3, size=(4, 6, 5)).astype(np.float64)
    host[0], host[1] = 1.0, 0.0  # an all-nonzero and an all-zero slab
    x = clgrad.tensor(host).to(dtype)[:, ::2].transpose(0, 2)  # (5, 3, 4), strided
    v = host[:, ::2].transpose(2, 1, 0) != 0
    fn = getattr(clgrad, name)
    for dim in (None, 0, 2, -2, (0, 2)):
        for keepdim in (False, True):
            if dim is None:
                got, want = getattr(x, name)(), getattr(np, name)(v)
            else:
                got = fn(x, dim, keepdim=keepdim)
                want = getattr(np, name)(v, axis=dim, keepdims=keepdim)
            assert got.dtype is clgrad.bool, (dim, keepdim)
            np.testing.assert_array_equal(got.numpy(), want, err_msg=f"{dim} {keepdim}")


@pytest.mark.parametrize("nsplit", [2, 7, 64])
@pytest.mark.parametrize("shape,dims", [((9000,), None), ((3, 5001), 1), ((2, 4000, 3), 1),
                                        ((5, 4, 1201), (0, 2)), ((4, 3000), 0)])
def test_split_reduction(monkeypatch, nsplit, shape, dims):
    """Reductions over S work-groups per output (what GPUs take for few outputs of many
    elements; forced here on any device): the parts into a workspace, then `reduce` over them.
    sum, mean, prod, amax, amin of float32 and float64 against float64 NumPy, an int sum
    exactly, a NaN anywhere propagates, a strided view and a strided `out` view."""
    from clgrad.ops import reduce as R
    monkeypatch.setattr(R, "SPLIT_FORCE", nsplit)
    rng = np.random.default_rng(nsplit)
    for dt in (np.float32, np.float64):
        x = rng.standard_normal(shape).astype(dt)
        t = clgrad.tensor(x)
        tol = 1e-6 if dt is np.float32 else 1e-13
        for op, ref in (("sum", np.sum), ("mean", np.mean), ("amax", np.max), ("amin", np.min)):
            got = getattr(t, op)(dim=dims) if dims is not None else getattr(t, op)()
            want = ref(x.astype(np.float64), axis=dims)
            np.testing.assert_allclose(got.numpy(), want, rtol=tol,
                                       atol=tol * max(1.0, float(np.abs(want).max())))
        xp = (1 + 1e-3 * rng.standard_normal(shape)).astype(dt)
        got = clgrad.tensor(xp).prod(dim=dims if isinstance(dims, int) else None)
        want = np.prod(xp.astype(np.float64), axis=dims if isinstance(dims, int) else None)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4 if dt is np.float32 else 1e-12)
    xi = rng.integers(-1000, 1000, shape).astype(np.int32)
    got = clgrad.tensor(xi).sum(dim=dims) if dims is not None else clgrad.tensor(xi).sum()
    np.testing.assert_array_equal(got.numpy(), xi.astype(np.int64).sum(axis=dims))
    xn = rng.standard_normal(shape).astype(np.float32)
    xn.reshape(-1)[xn.size // 2 + 3] = np.nan
    want = np.sum(xn.astype(np.float64), axis=dims)
    for op in ("sum", "amax", "amin"):
        got = getattr(clgrad.tensor(xn), op)(dim=dims) if dims is not None else \
            getattr(clgrad.tensor(xn), op)()
        np.testing.assert_array_equal(np.isnan(got.numpy()), np.isnan(want), err_msg=op)
    # a strided view in, a strided out (sum_into: the scale, written through its view)
    big = rng.standard_normal((3, 2 * 9000)).astype(np.float32)
    v = clgrad.tensor(big)[:, ::2]
    out_base = clgrad.zeros(6)
    R.sum_into(out_base[::2], v, 1, scale=0.5)
    np.testing.assert_allclose(out_base.numpy()[::2],  # float32: relative to the terms' sizes
                               0.5 * big[:, ::2].astype(np.float64).sum(1), rtol=1e-5,
                               atol=1e-6 * float(np.abs(big).sum(1).max()))
    np.testing.assert_array_equal(out_base.numpy()[1::2], 0)


@pytest.mark.parametrize("nsplit", [3, 64])
def test_split_reduction_more_ops_dtypes_and_layouts(monkeypatch, nsplit):
    """The split reduction (forced) beyond sum/mean/prod/amax/amin of floats: bool, uint8 and
    int64 sums exactly, float16 sums (float32 parts; where the device has cl_khr_fp16), nansum
    with NaNs, var/std/logsumexp/norm, keepdim over non-adjacent dims, a stride-0 (expanded)
    input and a transposed one, against float64 NumPy."""
    from clgrad.ops import reduce as R
    monkeypatch.setattr(R, "SPLIT_FORCE", nsplit)
    rng = np.random.default_rng(nsplit + 1)
    shape, dims = (3, 700, 5, 7), (0, 1, 3)
    for dt in (np.bool_, np.uint8, np.int64):
        x = rng.integers(0, 2 if dt is np.bool_ else 100, shape).astype(dt)
        got = clgrad.tensor(x).sum(dims, keepdim=True)
        np.testing.assert_array_equal(got.numpy(), x.astype(np.int64).sum(dims, keepdims=True))
        np.testing.assert_array_equal(clgrad.tensor(x).amax().numpy(), x.max())
    if clgrad.runtime.default_device().fp16:  # PoCL and NVIDIA list no cl_khr_fp16
        xh = (1 + 0.01 * rng.standard_normal(shape)).astype(np.float16)
        got = clgrad.tensor(xh).sum(dims).float().numpy()
        np.testing.assert_allclose(got, xh.astype(np.float64).sum(dims), rtol=1e-3)
    x = rng.standard_normal((40, 3000))
    xn = x.copy()
    xn[rng.random(x.shape) < 0.01] = np.nan
    np.testing.assert_allclose(clgrad.tensor(xn).nansum(1).numpy(), np.nansum(xn, 1),
                               rtol=1e-12)
    for t, v in ((clgrad.tensor(x).t(), x.T), (clgrad.tensor(x)[3:4].expand(40, 3000),
                                              np.broadcast_to(x[3:4], (40, 3000)))):
        for d in (None, 0, 1):
            np.testing.assert_allclose((t.var(d) if d is not None else t.var()).numpy(),
                                       np.var(v, d, ddof=1), rtol=1e-11, atol=1e-13)
            np.testing.assert_allclose((t.std(d) if d is not None else t.std()).numpy(),
                                       np.std(v, d, ddof=1), rtol=1e-11, atol=1e-13)
            np.testing.assert_allclose(t.norm(dim=d).numpy() if d is not None else
                                       t.norm().numpy(), np.sqrt((v * v).sum(d)), rtol=1e-12)
        np.testing.assert_allclose(t.logsumexp(1).numpy(), np.log(np.exp(v).sum(1)),
                                   rtol=1e-12)


def test_numpy_names_axis_and_keepdims_as_pytorch():
    """PyTorch's argument parser takes axis= for dim= and keepdims= for keepdim=: clgrad's
    functions do (torch.sum(X, axis=1, keepdims=True)), and the Tensor methods that check
    arguments."""
    a = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 1.0]], np.float32)
    x = clgrad.tensor(a)
    assert clgrad.argmax(x, axis=1).tolist() == [1, 0]
    np.testing.assert_array_equal(clgrad.sum(x, axis=1, keepdims=True).numpy(),
                                  a.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(clgrad.mean(x, axis=0).numpy(), a.mean(axis=0))
    np.testing.assert_array_equal(clgrad.max(x, axis=0).values.numpy(), a.max(axis=0))
    assert clgrad.cat([x, x], axis=0).shape == (4, 3)
    np.testing.assert_allclose(clgrad.softmax(x, axis=1).sum(1).numpy(), [1, 1], rtol=1e-6)
    with pytest.raises(TypeError, match="alias"):
        clgrad.sum(x, dim=0, axis=1)


def test_numpy_names_on_unchecked_tensor_methods():
    """The reductions' Tensor methods (d2l.ai's y_hat.argmax(axis=1)) against NumPy."""
    a = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 1.0]], np.float32)
    x = clgrad.tensor(a)
    assert x.argmax(axis=1).tolist() == [1, 0]
    assert x.sum(axis=0, keepdims=True).tolist() == [[8.0, 5.0, 3.0]]
    np.testing.assert_allclose(x.mean(axis=1, keepdims=True).numpy(),
                               a.mean(axis=1, keepdims=True))
    np.testing.assert_array_equal(x.max(axis=1).values.numpy(), a.max(axis=1))
    np.testing.assert_array_equal(x.amin(axis=0).numpy(), a.min(axis=0))
    with pytest.raises(TypeError, match="alias"):
        x.sum(dim=0, axis=1)


def test_mean_is_the_sum_divided_by_the_count():
    # PyTorch's CPU mean (sum, then div_ by n) and NumPy's: 20 ones among 200 zeros give
    # float32(0.1) exactly; times float32(1/200) gave 0.099999994 (one ulp low)
    a = np.zeros(200, np.float32)
    a[:20] = 1
    assert clgrad.tensor(a).mean().item() == float(np.float32(0.1))
    # per row: the float32 sum of the row divided by 7, correctly rounded (small integers:
    # the sums are exact, so the quotient is the only rounding)
    x = np.random.RandomState(3).randint(-50, 50, size=(64, 7)).astype(np.float32)
    expect = (x.sum(1, dtype=np.float64) / 7).astype(np.float32)
    np.testing.assert_array_equal(clgrad.tensor(x).mean(1).numpy(), expect)
    np.testing.assert_array_equal(clgrad.tensor(x.T.copy()).mean(0).numpy(), expect)


def test_reductions_with_a_dim_of_a_0_dim_tensor():
    # PyTorch takes dim 0 and -1 of a 0-dim tensor: a 0-dim result
    x = clgrad.tensor(3.0)
    for got in (x.sum(0), x.mean(-1), x.prod(0), x.amax(0), x.amin(-1),
                clgrad.logsumexp(x, 0), x.norm(dim=0), clgrad.nansum(x, 0),
                x.sum(0, keepdim=True), x.sum((0,)), x.gather(0, clgrad.tensor(0)),
                x.index_select(0, clgrad.tensor([0]))):
        assert got.shape == () and got.item() == 3.0
    for r in (x.max(0), x.min(-1), clgrad.max(x, 0, keepdim=True)):
        assert r.values.shape == () and r.values.item() == 3.0 and r.indices.item() == 0
    assert x.argmax(0).item() == 0 and x.argmin(-1).shape == ()
    assert math.isnan(x.std(0).item()) and math.isnan(x.var(0).item())
    assert x.var(0, correction=0).item() == 0.0
    assert x.all(0).item() is True and clgrad.tensor(0.0).any(0).item() is False
    assert clgrad.count_nonzero(x, 0).item() == 1
    mn, mx = clgrad.aminmax(x, dim=0)
    assert (mn.item(), mx.item()) == (3.0, 3.0)
    for op in ("sum", "mean", "max"):
        y = clgrad.tensor(3.0, requires_grad=True)
        r = getattr(y, op)(0)
        (2 * (r.values if op == "max" else r)).backward()
        assert y.grad.item() == 2.0
    with pytest.raises(IndexError, match=r"\[-1, 0\], but got 1"):
        x.sum(1)
    with pytest.raises(IndexError, match=r"\[-1, 0\], but got 1"):
        x.max(1)
    with pytest.raises(IndexError, match="only 1 value"):
        x.index_select(0, clgrad.tensor([0, 0]))


def test_keepdim_must_be_a_bool():
    x = clgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    for f in (lambda: x.sum(1, clgrad.float64), lambda: x.mean(1, clgrad.float64),
              lambda: x.sum(1, "no"), lambda: x.amax(1, clgrad.float64),
              lambda: x.max(1, clgrad.float64), lambda: clgrad.logsumexp(x, 1, "no")):
        with pytest.raises(TypeError, match="keepdim.*bool"):
            f()
    assert x.sum(1, True).tolist() == [[3.0], [7.0]]


def test_var_std_take_a_positional_unbiased():
    x = clgrad.tensor([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]])  # mean 4, sum of squares 40
    assert x.var(False).item() == pytest.approx(40 / 6)
    assert x.var(True).item() == pytest.approx(8.0)
    assert clgrad.var(x, False).item() == pytest.approx(40 / 6)
    assert x.std(True).item() == pytest.approx(math.sqrt(8.0))
    assert x.std(False).item() == pytest.approx(math.sqrt(40 / 6))
    v, m = clgrad.var_mean(x, False)
    assert (v.item(), m.item()) == (pytest.approx(40 / 6), 4.0)
    s, m = clgrad.std_mean(x, True)
    assert (s.item(), m.item()) == (pytest.approx(math.sqrt(8.0)), 4.0)
    with pytest.raises(TypeError):
        x.var(False, unbiased=True)
