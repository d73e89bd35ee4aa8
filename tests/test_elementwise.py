"""Elementwise ops, casts, copies and in-place writes against NumPy, on strided views.

Every operand is a non-contiguous view (storage offset, permuted storage order, steps,
negative steps, stride-0 broadcast dims: see tests/strided.py) unless a test says otherwise.
"""
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import clgrad
from clgrad.tensor import Tensor
from strided import NP, broadcastable_shapes, make_strided, shapes, strided_pair, values

F32, F64, I64, I32, BOOL = clgrad.float32, clgrad.float64, clgrad.int64, clgrad.int32, clgrad.bool
FLOATS = [F32, F64]
ALL = [F32, F64, I64, I32]


def examples(n: int) -> int:
    return int(os.environ.get("CLGRAD_HYPOTHESIS_EXAMPLES", n))


def check(got: Tensor, ref: np.ndarray, dtype, what=""):
    """Values equal to ``ref`` (float32 to ~1 ulp of a float64 reference, float64 tighter)."""
    assert tuple(got.shape) == ref.shape, what
    g = got.numpy()
    if dtype is F32:
        np.testing.assert_allclose(g, ref, rtol=3e-6, atol=1e-6, err_msg=what)
    elif dtype is F64:
        np.testing.assert_allclose(g, ref, rtol=1e-13, atol=1e-14, err_msg=what)
    else:
        np.testing.assert_array_equal(g, ref, err_msg=what)


def ref64(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64) if x.dtype.kind == "f" else x


# -- binary ops -------------------------------------------------------------------------------
# name: (clgrad op, NumPy op on float64/int64, dtypes, kind of b, result dtype or None)
BINARY = {
    "add": (lambda a, b: a + b, np.add, ALL, "normal", None),
    "sub": (lambda a, b: a - b, np.subtract, ALL, "normal", None),
    "mul": (lambda a, b: a * b, np.multiply, ALL, "normal", None),
    "div": (lambda a, b: a / b, np.true_divide, ALL, "positive", "float"),
    "divide": (clgrad.divide, np.true_divide, ALL, "positive", "float"),
    "true_divide": (clgrad.true_divide, np.true_divide, ALL, "positive", "float"),
    "true_divide_method": (lambda a, b: a.true_divide(b), np.true_divide, ALL, "positive",
                           "float"),
    "floordiv": (lambda a, b: a // b, np.floor_divide, ALL, "positive", None),
    "pow": (lambda a, b: a ** b, np.power, FLOATS, "normal", None),
    "maximum": (clgrad.maximum, np.maximum, ALL, "normal", None),
    "minimum": (clgrad.minimum, np.minimum, ALL, "normal", None),
    "eq": (lambda a, b: a == b, np.equal, ALL, "normal", BOOL),
    "ne": (lambda a, b: a != b, np.not_equal, ALL, "normal", BOOL),
    "lt": (lambda a, b: a < b, np.less, ALL, "normal", BOOL),
    "le": (lambda a, b: a <= b, np.less_equal, ALL, "normal", BOOL),
    "gt": (lambda a, b: a > b, np.greater, ALL, "normal", BOOL),
    "ge": (lambda a, b: a >= b, np.greater_equal, ALL, "normal", BOOL),
    "logical_and": (clgrad.logical_and, np.logical_and, ALL, "normal", BOOL),
    "logical_or": (clgrad.logical_or, np.logical_or, ALL, "normal", BOOL),
}


def _result_dtype(dtype, rule):
    if rule == "float":
        return dtype if dtype.is_floating_point else F32
    return rule or dtype


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=examples(20))
@given(shape=shapes(max_dims=4), data=st.data())
def test_binary_on_strided_views(name, shape, data):
    op, ref_op, dts, kind_b, rule = BINARY[name]
    dtype = data.draw(st.sampled_from(dts), label="dtype")
    a_np, a = data.draw(strided_pair(shape, dtype, "positive" if name == "pow" else "normal"))
    b_np, b = data.draw(strided_pair(shape, dtype, kind_b))
    out = op(a, b)
    want = _result_dtype(dtype, rule)
    assert out.dtype is want
    ref = ref_op(ref64(a_np), ref64(b_np))
    check(out, ref.astype(NP[want]) if want in (BOOL, I64, I32) else ref, want, name)
    np.testing.assert_array_equal(a.numpy(), a_np)  # inputs intact
    np.testing.assert_array_equal(b.numpy(), b_np)


BROADCAST_OPS = ["add", "sub", "mul", "maximum", "gt", "div"]


@pytest.mark.parametrize("dtype", [F32, F64, I64])
@settings(max_examples=examples(40))
@given(shape=shapes(min_dims=1, max_dims=4), data=st.data())
def test_binary_broadcasting(dtype, shape, data):
    name = data.draw(st.sampled_from(BROADCAST_OPS), label="op")
    op, ref_op, _, kind_b, rule = BINARY[name]
    other = data.draw(broadcastable_shapes(shape), label="other_shape")
    if data.draw(st.booleans(), label="swap"):
        shape, other = other, shape
    a_np, a = data.draw(strided_pair(shape, dtype))
    b_np, b = data.draw(strided_pair(other, dtype, kind_b))
    out = op(a, b)
    want = _result_dtype(dtype, rule)
    ref = ref_op(ref64(a_np), ref64(b_np))
    check(out, ref.astype(NP[want]) if not want.is_floating_point else ref, want,
          f"{name} {shape} {other}")


@pytest.mark.parametrize("expr, ref", [
    (lambda t: t + 2, lambda a: a + 2), (lambda t: 2 - t, lambda a: 2 - a),
    (lambda t: t * -1.5, lambda a: a * -1.5), (lambda t: 3.0 / t, lambda a: 3.0 / a),
    (lambda t: t ** 2, lambda a: a ** 2), (lambda t: 2.0 ** t, lambda a: 2.0 ** a),
    (lambda t: -t, lambda a: -a), (lambda t: abs(t), np.abs),
    (lambda t: t > 1, lambda a: a > 1), (lambda t: 1.5 <= t, lambda a: 1.5 <= a),
    (lambda t: t - np.float64(0.5), lambda a: a - 0.5),
])
@pytest.mark.parametrize("dtype", FLOATS)
def test_scalar_operands(expr, ref, dtype):
    a_np = np.linspace(0.5, 3, 12).reshape(3, 4).astype(NP[dtype])
    t = make_strided(a_np, (1, (1, 0), [(2, 1, False), (-1, 0, False)]), dtype)
    out = expr(t)
    r = ref(a_np.astype(np.float64))
    check(out, r.astype(np.bool_) if r.dtype == np.bool_ else r,
          BOOL if r.dtype == np.bool_ else dtype)


@pytest.mark.parametrize("a_dt, b, want", [
    (I64, 2.5, F32), (I64, 2, I64), (I32, 2, I32), (F64, 2.5, F64), (F32, 2, F32),
    (BOOL, 1, I64), (I32, clgrad.tensor([1, 2], dtype=I64), I64),
    (F32, clgrad.tensor([1, 2], dtype=F64), F64), (I64, clgrad.tensor([0.5, 1]), F32),
])
def test_type_promotion(a_dt, b, want):
    a = clgrad.tensor([1, 0], dtype=a_dt)
    out = a + b
    assert out.dtype is want
    b_np = b.numpy() if isinstance(b, Tensor) else b
    np.testing.assert_allclose(out.numpy(), np.array([1, 0], dtype=np.float64) + b_np)


# -- unary ops --------------------------------------------------------------------------------
# name: (clgrad op, NumPy op, dtypes, input kind)
UNARY = {
    "neg": (clgrad.neg, np.negative, ALL, "normal"),
    "abs": (clgrad.abs, np.abs, ALL, "normal"),
    "exp": (clgrad.exp, np.exp, FLOATS, "normal"),
    "log": (clgrad.log, np.log, FLOATS, "positive"),
    "sqrt": (clgrad.sqrt, np.sqrt, FLOATS, "positive"),
    "rsqrt": (clgrad.rsqrt, lambda x: 1 / np.sqrt(x), FLOATS, "positive"),
    "tanh": (clgrad.tanh, np.tanh, FLOATS, "normal"),
    "sigmoid": (clgrad.sigmoid, lambda x: 1 / (1 + np.exp(-x)), FLOATS, "normal"),
    "relu": (clgrad.relu, lambda x: np.maximum(x, 0), ALL, "normal"),
    "sin": (clgrad.sin, np.sin, FLOATS, "normal"),
    "cos": (clgrad.cos, np.cos, FLOATS, "normal"),
    "square": (clgrad.square, np.square, FLOATS, "normal"),
    "reciprocal": (clgrad.reciprocal, np.reciprocal, FLOATS, "positive"),
    "sign": (clgrad.sign, np.sign, ALL, "normal"),
    "floor": (clgrad.floor, np.floor, ALL, "normal"),
    "ceil": (clgrad.ceil, np.ceil, ALL, "normal"),
    "round": (clgrad.round, np.round, ALL, "normal"),
    "clamp": (lambda x: clgrad.clamp(x, -1, 1), lambda x: np.clip(x, -1, 1), ALL, "normal"),
    "clamp_min": (lambda x: x.clamp(min=0.25), lambda x: np.maximum(x, 0.25), FLOATS, "normal"),
    "clamp_max": (lambda x: x.clamp(max=-0.5), lambda x: np.minimum(x, -0.5), FLOATS, "normal"),
    "clamp_min_method": (lambda x: x.clamp_min(0.25), lambda x: np.maximum(x, 0.25), FLOATS,
                         "normal"),
    "clamp_max_method": (lambda x: x.clamp_max(-0.5), lambda x: np.minimum(x, -0.5), FLOATS,
                         "normal"),
    "logical_not": (clgrad.logical_not, np.logical_not, ALL, "normal"),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=examples(15))
@given(shape=shapes(max_dims=4), data=st.data())
def test_unary_on_strided_views(name, shape, data):
    op, ref_op, dts, kind = UNARY[name]
    dtype = data.draw(st.sampled_from(dts), label="dtype")
    x_np, x = data.draw(strided_pair(shape, dtype, kind))
    out = op(x)
    ref = ref_op(ref64(x_np))
    want = BOOL if ref.dtype == np.bool_ else dtype
    assert out.dtype is want
    check(out, ref.astype(NP[want]) if not want.is_floating_point else ref, want, name)
    np.testing.assert_array_equal(x.numpy(), x_np)


def test_unary_edge_values():
    x = clgrad.tensor([-1000.0, -88.0, 0.0, 88.0, 1000.0])
    np.testing.assert_allclose(clgrad.sigmoid(x).numpy(), [0, 1 / (1 + np.exp(88.0)), 0.5,
                                                          1 / (1 + np.exp(-88.0)), 1],
                               rtol=1e-6, atol=1e-38)
    np.testing.assert_allclose(clgrad.tanh(x).numpy(), np.tanh(x.numpy()), rtol=2e-7)
    np.testing.assert_array_equal(clgrad.relu(x).numpy(), [0, 0, 0, 88, 1000])
    np.testing.assert_array_equal(clgrad.round(clgrad.tensor([0.5, 1.5, 2.5, -0.5])).numpy(),
                                  [0, 2, 2, -0])



def _exp_range_f32():
    """float32 inputs over exp's whole range (a few thousand, so the kernels' vector loops
    run): the overflow and denormal edges, zeros, infinities and NaN."""
    x = np.concatenate([np.linspace(-110, 95, 4001), [-103.9, -87.4, -87.3, 88.72, 88.73, 0.0,
                                                      -0.0, 1e-8, -1e-8, np.inf, -np.inf, np.nan]])
    return x.astype(np.float32)


def test_exp_and_sigmoid_float32_over_the_whole_range():
    """exp and sigmoid of float32 within 2 ulp of float64 NumPy everywhere, denormal results
    and overflow included (on PoCL kernels/common.h's EXP_T is a polynomial, not exp)."""
    x = _exp_range_f32()
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore"):
        want_exp = np.exp(x64).astype(np.float32)
        want_sig = (1 / (1 + np.exp(-x64))).astype(np.float32)
    for got, want in ((clgrad.exp(clgrad.tensor(x)).numpy(), want_exp),
                      (clgrad.sigmoid(clgrad.tensor(x)).numpy(), want_sig)):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
        fin = np.isfinite(want)
        ulp = np.spacing(np.abs(want[fin]))
        assert np.all(np.abs(got[fin] - want[fin]) <= 2 * ulp), \
            np.max(np.abs(got[fin] - want[fin]) / ulp)

@pytest.mark.parametrize("dtype", [F32, F64, I64])
@settings(max_examples=examples(25))
@given(shape=shapes(max_dims=3), data=st.data())
def test_where_broadcasts_three_ways(dtype, shape, data):
    c_shape = data.draw(broadcastable_shapes(shape), label="cond_shape")
    b_shape = data.draw(broadcastable_shapes(shape), label="b_shape")
    c_np, c = data.draw(strided_pair(c_shape, BOOL))
    a_np, a = data.draw(strided_pair(shape, dtype))
    b_np, b = data.draw(strided_pair(b_shape, dtype))
    check(clgrad.where(c, a, b), np.where(c_np, a_np, b_np), dtype)
    check(clgrad.where(c, a, 0), np.where(c_np, a_np, 0).astype(NP[dtype]), dtype)


def test_clamp_with_tensor_bounds():
    x = clgrad.tensor([[-3.0, 0.5, 4.0], [1.0, -0.2, 9.0]])
    lo = clgrad.tensor([-1.0, 0.0, 1.0])
    out = clgrad.clamp(x.T.T, min=lo, max=clgrad.tensor(2.0))
    np.testing.assert_array_equal(out.numpy(), np.clip(x.numpy(), lo.numpy(), 2.0))


# -- casts and copies -------------------------------------------------------------------------
CAST_DTYPES = [F32, F64, I64, I32, BOOL]


@pytest.mark.parametrize("src", CAST_DTYPES)
@pytest.mark.parametrize("dst", CAST_DTYPES)
@settings(max_examples=examples(6))
@given(shape=shapes(max_dims=3), data=st.data())
def test_casts_on_strided_views(src, dst, shape, data):
    x_np, x = data.draw(strided_pair(shape, src))
    if src.is_floating_point:
        x_np = x_np * 3  # values in [-6, 6]: truncation toward zero shows
        x = x * 3
    out = x.to(dst)
    assert out.dtype is dst
    if src is dst:
        assert out is x
    np.testing.assert_array_equal(out.numpy(), x_np.astype(NP[dst]))


@pytest.mark.parametrize("src_dt, dst_dt", [(F32, F32), (F64, F32), (I64, F64), (F32, I32)])
@settings(max_examples=examples(20))
@given(shape=shapes(max_dims=4), data=st.data())
def test_copy_between_any_two_views(src_dt, dst_dt, shape, data):
    s_np, s = data.draw(strided_pair(shape, src_dt))
    d_np, d = data.draw(strided_pair(shape, dst_dt, broadcast=False))
    root = d._base
    before = Tensor(root.untyped_storage(), (root.untyped_storage().size,), (1,), 0).numpy()
    version = d._version
    d.copy_(s)
    np.testing.assert_array_equal(d.numpy(), s_np.astype(NP[dst_dt]))
    np.testing.assert_array_equal(s.numpy(), s_np)
    # nothing outside the destination view changed
    after = Tensor(root.untyped_storage(), (root.untyped_storage().size,), (1,), 0).numpy()
    inside = np.zeros(after.shape, bool)
    if d.numel():
        idx = d.storage_offset() + sum(
            np.arange(n).reshape([-1 if i == j else 1 for j in range(d.ndim)]) * st_
            for i, (n, st_) in enumerate(zip(d.shape, d.stride())))
        inside[np.asarray(idx).reshape(-1)] = True
    np.testing.assert_array_equal(after[~inside], before[~inside])
    if d.numel():
        assert d._version > version



def _view_kinds():
    """(name, NumPy source, clgrad view of it): the views whose contiguous() is a strided copy,
    sized around kernels/copy.cl's copy_runs runs (COPY_RUN elements: rows split into runs,
    short rows grouped, partial last groups)."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((8, 116, 16, 16)).astype(np.float32)
    ta = clgrad.tensor(a)
    big = rng.standard_normal((3, 5000)).astype(np.float32)
    tb = clgrad.tensor(big)
    c = rng.standard_normal((2, 3, 1, 5, 7)).astype(np.float32)
    tc = clgrad.tensor(c)
    col = rng.standard_normal((4, 1, 3)).astype(np.float32)
    e = np.arange(2 * 3 * 4 * 2 * 3 * 2 * 2 * 3).reshape(2, 3, 4, 2, 3, 2, 2, 3)
    te = clgrad.tensor(e)
    return [
        ("shuffle", a.reshape(8, 2, 58, 16, 16).transpose(0, 2, 1, 3, 4),
         ta.view(8, 2, 58, 16, 16).transpose(1, 2)),
        ("chunk", a[:, 58:], ta.chunk(2, 1)[1]),
        ("narrow_offset", a[1:7, 3:100, 2:15, 1:], ta[1:7, 3:100, 2:15, 1:]),
        ("last_dim_transposed", a[0, 0].T, ta[0, 0].t()),
        ("permute", a[:2].transpose(0, 3, 1, 2), ta[:2].permute(0, 3, 1, 2)),
        ("long_rows_split", big[:, 1:4998], tb[:, 1:4998]),
        ("long_rows_step", big[:, ::3], tb[:, ::3]),
        ("rank1_step", big[1, 7::5], tb[1, 7::5]),
        ("unit_dims", c.transpose(4, 2, 1, 0, 3), tc.permute(4, 2, 1, 0, 3)),
        ("expand_0_stride", np.broadcast_to(col, (4, 2500, 3)),
         clgrad.tensor(col).expand(4, 2500, 3)),
        ("expand_inner", np.broadcast_to(a[:, :, :1, :1], (8, 116, 16, 16)),
         ta[:, :, :1, :1].expand(8, 116, 16, 16)),
        ("eight_dims", e.transpose(7, 6, 5, 4, 3, 2, 1, 0), te.permute(7, 6, 5, 4, 3, 2, 1, 0)),
        ("one_element", a[3:4, 5:6, 7:8, 2:3], ta[3:4, 5:6, 7:8, 2:3]),
    ]


@pytest.mark.parametrize("kind", range(13))
@pytest.mark.parametrize("dst_dt", [F32, F64, I32, BOOL])
def test_contiguous_of_every_view_kind(kind, dst_dt):
    """contiguous() (same dtype) and .to(dtype) of strided views, and a copy_ into a strided
    destination, against NumPy: the CPU devices copy these with copy_runs."""
    name, ref, v = _view_kinds()[kind]
    want = ref.astype(NP[dst_dt]) if dst_dt is not BOOL else ref != 0
    out = v.to(dst_dt).contiguous() if dst_dt is not v.dtype else v.contiguous()
    assert out.is_contiguous() and out.dtype is dst_dt, name
    np.testing.assert_array_equal(out.numpy(), want, err_msg=name)
    # into a strided destination (a transposed view over a padded buffer)
    root = clgrad.zeros(*(n + 1 for n in reversed(ref.shape)), dtype=dst_dt)
    dst = root[tuple(slice(1, None) for _ in ref.shape)].permute(*reversed(range(ref.ndim)))
    dst.copy_(v)
    np.testing.assert_array_equal(dst.numpy(), want, err_msg=name)
    outside = root.numpy().copy()
    outside[tuple(slice(1, None) for _ in ref.shape)] = 0
    assert not outside.any(), name


def test_copy_int64_and_bool_strided():
    """int64 and bool sources through the strided copy (transposed, stepped), exactly."""
    x = np.arange(-3000, 3000, dtype=np.int64).reshape(60, 100)
    t = clgrad.tensor(x)
    np.testing.assert_array_equal(t.t().contiguous().numpy(), x.T)
    np.testing.assert_array_equal(t[:, ::7].to(clgrad.float32).numpy(),
                                  x[:, ::7].astype(np.float32))
    m = x % 3 == 0
    tm = clgrad.tensor(m)
    np.testing.assert_array_equal(tm.t().contiguous().numpy(), m.T)
    np.testing.assert_array_equal(tm[::2].t().to(clgrad.int32).numpy(),
                                  m[::2].T.astype(np.int32))

# -- sizes around work-group boundaries -------------------------------------------------------
@pytest.mark.parametrize("n", [1, 255, 256, 257, 1025, 4099])
@pytest.mark.parametrize("dtype", FLOATS)
def test_sizes_around_work_group(n, dtype):
    rng = np.random.default_rng(n)
    base = values(rng, (2 * n + 3,), dtype)
    t = clgrad.tensor(base)
    a_np, b_np = base[3::2], base[:n][::-1]
    a, b = t[3::2], t[:n][::-1]
    check(a * b + a, a_np.astype(np.float64) * b_np + a_np, dtype)
    check(clgrad.exp(a), np.exp(a_np.astype(np.float64)), dtype)
    z = clgrad.zeros(n, 2, dtype=dtype)
    z[:, 1] = a
    np.testing.assert_array_equal(z.numpy(), np.stack([np.zeros(n), a_np], 1).astype(NP[dtype]))


# -- in-place writes --------------------------------------------------------------------------
INPLACE = {
    "copy_": (lambda t, o: t.copy_(o), lambda a, o: o),
    "add_": (lambda t, o: t.add_(o), lambda a, o: a + o),
    "sub_": (lambda t, o: t.sub_(o), lambda a, o: a - o),
    "mul_": (lambda t, o: t.mul_(o), lambda a, o: a * o),
    "div_": (lambda t, o: t.div_(o), lambda a, o: a / o),
    "iadd": (lambda t, o: t.__iadd__(o), lambda a, o: a + o),
    "itruediv": (lambda t, o: t.__itruediv__(o), lambda a, o: a / o),
    "clamp_": (lambda t, o: t.clamp_(-0.5, 0.5), lambda a, o: np.clip(a, -0.5, 0.5)),
    "fill_": (lambda t, o: t.fill_(2.5), lambda a, o: np.full_like(a, 2.5)),
    "zero_": (lambda t, o: t.zero_(), lambda a, o: np.zeros_like(a)),
    "setitem_tensor": (lambda t, o: t.__setitem__(Ellipsis, o), lambda a, o: o),
    "setitem_scalar": (lambda t, o: t.__setitem__(Ellipsis, -4.0), lambda a, o: -4.0),
    "setitem_numpy": (lambda t, o: t.__setitem__(Ellipsis, o.numpy()), lambda a, o: o),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
@settings(max_examples=examples(12))
@given(shape=shapes(min_dims=1, max_dims=3), data=st.data())
def test_inplace_into_view_lands_in_base(name, shape, data):
    fn, ref = INPLACE[name]
    dtype = data.draw(st.sampled_from(FLOATS), label="dtype")
    base_np = values(np.random.default_rng(0), (7, 7, 7), dtype)
    base = clgrad.tensor(base_np)
    # the target: a strided view into base, of a random shape that fits
    key = tuple(data.draw(st.sampled_from([slice(1, 1 + n), slice(6, 6 - 2 * n, -2)
                                           if n <= 3 else slice(0, n)]))
                for n in shape)
    key = key + (slice(None),) * (3 - len(key))
    perm = data.draw(st.permutations(range(3)), label="perm")
    t, a = base[key].permute(*perm), base_np[key].transpose(perm)
    other_shape = data.draw(broadcastable_shapes(tuple(t.shape)), label="other_shape")
    o_np, o = data.draw(strided_pair(other_shape, dtype, "positive"))
    version = t._version
    fn(t, o)
    a[...] = ref(a.astype(np.float64), o_np.astype(np.float64))
    check(base, base_np, dtype, name)
    if t.numel():
        assert t._version > version and base._version == t._version


def test_div_by_shifted_self_gives_numpy_values():
    a_np = np.arange(1.0, 11.0, dtype=np.float32)
    a = clgrad.tensor(a_np)
    a[1:] /= a[:-1]
    a_np[1:] /= a_np[:-1]
    np.testing.assert_allclose(a.numpy(), a_np, rtol=1e-7)
    b_np = np.arange(1.0, 11.0)
    b = clgrad.tensor(b_np)
    b[:-1].mul_(b[1:])
    b_np[:-1] *= b_np[1:].copy()
    np.testing.assert_array_equal(b.numpy(), b_np)
    c = clgrad.arange(12.0).reshape(3, 4)
    c_np = np.arange(12.0).reshape(3, 4)
    c.copy_(c.T.reshape(3, 4))   # a source overlapping the destination in another layout
    c_np[...] = c_np.T.reshape(3, 4).copy()
    np.testing.assert_array_equal(c.numpy(), c_np)
    c[1:].copy_(c[0])            # a stride-0 source inside the destination's storage
    c_np[1:] = c_np[0].copy()
    np.testing.assert_array_equal(c.numpy(), c_np)


@pytest.mark.parametrize("make", [
    lambda: clgrad.zeros(3, 1).expand(3, 4),
    lambda: clgrad.zeros(4)[None].expand(2, 4),
    lambda: clgrad.zeros(10).as_strided((3, 3), (2, 1)),
    lambda: clgrad.zeros(10).unfold(0, 4, 2),
    lambda: clgrad.zeros(6).as_strided((2, 3), (1, 1), 1),
])
@pytest.mark.parametrize("write", [  # (fill_, zero_ and a number through setitem fill: they
    lambda t: t.copy_(clgrad.ones(t.shape)),  # take overlapping views, as PyTorch's, whose
    lambda t: t.add_(1), lambda t: t.mul_(2), lambda t: t.clamp_(0, 1),  # fill is idempotent)
    lambda t: t.div_(clgrad.ones(t.shape)),
])
def test_write_into_overlapping_view_raises(make, write):
    t = make()
    root = t._base
    version = t._version
    with pytest.raises(RuntimeError, match="memory location"):
        write(t)
    np.testing.assert_array_equal(root.numpy(), np.zeros(root.shape))
    assert t._version == version


def test_setitem_forms():
    a_np = np.zeros((4, 5), np.float64)
    a = clgrad.tensor(a_np)
    a[1] = 1.5
    a_np[1] = 1.5
    a[:, 2] = clgrad.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64)
    a_np[:, 2] = [1, 2, 3, 4]
    a[2:, ::2] = np.array([7.0, 8.0, 9.0])                  # a NumPy value, broadcast
    a_np[2:, ::2] = [7, 8, 9]
    a[..., -1] = clgrad.tensor(5, dtype=I64)                # another dtype, 0-dim
    a_np[..., -1] = 5
    a[None, 0, 1:3] = [[-1.0, -2.0]]                        # nested lists
    a_np[None, 0, 1:3] = [[-1, -2]]
    a[np.int64(3), np.int32(0)] = 42
    a_np[3, 0] = 42
    np.testing.assert_array_equal(a.numpy(), a_np)


def test_writes_into_detached_strided_views():
    """detach() of a non-contiguous view is a root of its own: its layout must still count."""
    a_np = np.zeros((4, 6), np.float32)
    a = clgrad.tensor(a_np)
    v = a[:, ::2].detach()
    v.fill_(1)
    a_np[:, ::2] = 1
    np.testing.assert_array_equal(a.numpy(), a_np)
    w = a.T[1:].detach()
    w.add_(clgrad.ones(w.shape))
    a_np.T[1:] += 1
    np.testing.assert_array_equal(a.numpy(), a_np)
    np.testing.assert_array_equal((w + w).numpy(), 2 * a_np.T[1:])
    np.testing.assert_allclose(clgrad.exp(v).numpy(), np.exp(a_np[:, ::2]), rtol=3e-7)


# -- remainder, masked_fill, integer division by zero -----------------------------------------
@pytest.mark.parametrize("a,b", [([7, -7, 5, -5], [3, 3, -3, -3]),
                                 ([7.5, -7.5, 1.25], [2.0, 2.0, -0.5])])
def test_remainder_matches_python_mod(a, b):
    na, nb = np.array(a), np.array(b)
    got = (clgrad.tensor(a) % clgrad.tensor(b)).numpy()
    np.testing.assert_allclose(got, np.mod(na, nb), rtol=1e-6)
    np.testing.assert_allclose((clgrad.tensor(a) % 3).numpy(), np.mod(na, 3), rtol=1e-6)


def test_integer_floor_division_by_zero_raises():
    with pytest.raises(ZeroDivisionError, match="division by zero"):
        clgrad.tensor([7, -7]) // clgrad.tensor([1, 0])
    with pytest.raises(ZeroDivisionError):
        clgrad.tensor([7]) // 0
    np.testing.assert_array_equal((clgrad.tensor([7, -7]) // 2).numpy(), [3, -4])


def test_masked_fill_values_and_gradient():
    x = clgrad.tensor([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]], dtype=clgrad.float64,
                      requires_grad=True)
    y = x.masked_fill(x < 0, 0.5)
    np.testing.assert_array_equal(y.detach().numpy(), [[1, 0.5, 3], [0.5, 5, 0.5]])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 0, 1], [0, 1, 0]])
    with pytest.raises(TypeError, match="bool mask"):
        x.masked_fill(clgrad.ones(2, 3), 1.0)


@pytest.mark.parametrize("rank", [2, 3, 5, 8])
@pytest.mark.parametrize("inner", [1, 3, 17])
def test_strided_ranks_rows_launch(rank, inner):
    """Strided operands of ranks up to MAXD (step 2 on the last dim, the first two transposed,
    stride-0 broadcasts), through the 2-D row launches of launch_1d (common.h's ROWS2D, one
    program per collapsed rank), in place through a permuted view too, against NumPy."""
    rng = np.random.default_rng(rank * 10 + inner)
    shape = (2, 3, 2, 3, 2, 2, 3, 2)[:rank - 1] + (inner,)
    base = rng.standard_normal(shape[:-1] + (2 * inner,)).astype(np.float32)
    a_np = base[..., ::2].swapaxes(0, 1)
    b_np = rng.standard_normal((1,) + a_np.shape[1:-1] + (1,)).astype(np.float32)  # 2 bcasts
    a = clgrad.tensor(base)[..., ::2].transpose(0, 1)
    b = clgrad.tensor(b_np)
    np.testing.assert_array_equal((a * b).numpy(), a_np * b_np)
    np.testing.assert_array_equal(a.contiguous().numpy(), a_np)
    np.testing.assert_array_equal(b.expand(a.shape).contiguous().numpy(),
                                  np.broadcast_to(b_np, a_np.shape))
    out = clgrad.zeros(tuple(reversed(a_np.shape))).permute(*reversed(range(rank)))
    out.copy_(a)  # in place through a permuted view
    np.testing.assert_array_equal(out.numpy(), a_np)


# -- issue 32: atan2's gradient at the origin, sign's zero gradient ------------------------
def test_atan2_gradient_at_origin_is_zero():
    # (input, other) pairs: the origin twice, points on the axes, a tiny point whose
    # input^2 + other^2 is subnormal (1 / it overflows: NaN / inf, as PyTorch)
    a_np = np.array([0.0, 0.0, 1.0, 0.0, -2.0])
    b_np = np.array([0.0, 0.0, 0.0, 1.0, 3.0])
    a = clgrad.tensor(a_np, dtype=F64, requires_grad=True)
    b = clgrad.tensor(b_np, dtype=F64, requires_grad=True)
    g = np.array([1.0, -2.0, 0.5, 3.0, 1.5])
    clgrad.atan2(a, b).backward(clgrad.tensor(g, dtype=F64))
    r2 = a_np ** 2 + b_np ** 2
    recip = np.where(r2 == 0, 0.0, 1.0 / np.where(r2 == 0, 1.0, r2))
    np.testing.assert_array_equal(a.grad.numpy(), g * b_np * recip)
    np.testing.assert_array_equal(b.grad.numpy(), g * -a_np * recip)
    assert a.grad.numpy()[0] == 0 and b.grad.numpy()[0] == 0
    torch = pytest.importorskip("torch")
    for pair in [(a_np, b_np), (np.array([1e-20, 0.0]), np.array([0.0, 1e-20]))]:
        x = clgrad.tensor(pair[0], dtype=F32, requires_grad=True)
        y = clgrad.tensor(pair[1], dtype=F32, requires_grad=True)
        tx = torch.tensor(pair[0], dtype=torch.float32, requires_grad=True)
        ty = torch.tensor(pair[1], dtype=torch.float32, requires_grad=True)
        clgrad.atan2(x, y).sum().backward()
        torch.atan2(tx, ty).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
        np.testing.assert_array_equal(y.grad.numpy(), ty.grad.numpy())


def test_sign_has_a_zero_gradient():
    x = clgrad.tensor([[1.5, -2.0], [0.0, float("nan")]], requires_grad=True)
    s = x.t().sign()  # a strided view
    assert s.requires_grad and s.grad_fn is not None
    (s * clgrad.tensor([[2.0, float("nan")], [3.0, 4.0]])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 2)))  # zeros, even under NaN g
    assert clgrad.tensor([3, -1]).sign().grad_fn is None
    torch = pytest.importorskip("torch")
    t = torch.tensor([[1.5, -2.0], [0.0, float("nan")]], requires_grad=True)
    (t.t().sign() * torch.tensor([[2.0, float("nan")], [3.0, 4.0]])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("conv", [float, int])
def test_float_int_of_a_tensor_that_is_not_one_element_raise_value_error(conv):
    for t in (clgrad.ones(2), clgrad.ones(0), clgrad.ones(1, 2, dtype=I64)):
        with pytest.raises(ValueError, match="only one element tensors can be converted to "
                                             "Python scalars"):
            conv(t)
    assert conv(clgrad.tensor([[2.5]])) == conv(2.5)
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        clgrad.ones(2).item()  # item() keeps PyTorch's RuntimeError
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="only one element tensors"):
        conv(torch.ones(2))


@pytest.mark.parametrize("call", [lambda t, x: x.abs(), lambda t, x: t.abs(x),
                                  lambda t, x: x.abs_()])
def test_abs_refuses_bool(call):
    """PyTorch: NotImplementedError '"abs_cpu" not implemented for 'Bool'' (clgrad used to
    return the input)."""
    x = clgrad.tensor([True, False])
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        call(clgrad, x)
    assert x.tolist() == [True, False]
    assert call(clgrad, clgrad.tensor([-2, 3])).tolist() == [2, 3]
    torch = pytest.importorskip("torch")
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        call(torch, torch.tensor([True, False]))


@pytest.mark.parametrize("name", ["maximum", "minimum"])
@pytest.mark.parametrize("call, message", [
    (lambda t, f: getattr(t, f)(t.tensor([1., 2.]), 1.5), "argument 'other' (position 2)"),
    (lambda t, f: getattr(t, f)(1.5, t.tensor([1., 2.])), "argument 'input' (position 1)"),
    (lambda t, f: getattr(t.tensor([1., 2.]), f)(1.5), "argument 'other' (position 1)"),
])
def test_maximum_minimum_refuse_a_number(name, call, message):
    """PyTorch's TypeError "maximum(): argument 'other' (position 2) must be Tensor, not
    float" (clgrad used to broadcast the number; clamp is PyTorch's op for that)."""
    want = f"{name}(): {message} must be Tensor, not float"
    with pytest.raises(TypeError) as info:
        call(clgrad, name)
    assert str(info.value) == want
    pick = np.maximum if name == "maximum" else np.minimum
    np.testing.assert_array_equal(getattr(clgrad, name)(clgrad.tensor([1., 2.]),
                                                        clgrad.tensor(1.5)).numpy(),
                                  pick([1., 2.], 1.5))
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError) as info:
        call(torch, name)
    assert str(info.value).startswith(want)


def test_four_elements_per_work_item_on_gpus(monkeypatch):
    """GPUs run large contiguous elementwise launches through kernels/elementwise.cl's
    <name>_x4 forms (four elements per work item, all loads before the stores; _util.py
    flat_plan; copy.cl's copy_x4). Forced here on the default device (posing as a GPU, every
    size): binary, scalar-operand, comparison and unary ops, copies and casts (to bool too), an
    in-place op (its operand is its output), sizes
    around the multiples of 4 work items, against NumPy; the _x4 kernel really ran."""
    from clgrad.ops import _util
    dev = clgrad.default_device()
    monkeypatch.setattr(_util, "X4_MIN", 1)
    monkeypatch.setattr(dev, "kind", "gpu")
    launched = []
    real = dev.launch_split

    def spy(kernel, *a, **k):
        launched.append(kernel.function_name)
        return real(kernel, *a, **k)
    monkeypatch.setitem(vars(dev), "launch_split", spy)  # (setattr would leave the
    # bound method in the instance on undo, hiding the class from later spies)
    dev.plans.clear()
    rng = np.random.default_rng(4)
    try:
        for n in (1, 3, 4, 5, 257, 1023, 4096 + 3):
            for dt in (F32, F64, I64):
                a = rng.standard_normal(n) * 8
                b = rng.standard_normal(n) * 8
                if dt is I64:
                    a, b = np.round(a).astype(np.int64), np.round(b).astype(np.int64)
                ta, tb = clgrad.tensor(a, dtype=dt), clgrad.tensor(b, dtype=dt)
                a64, b64 = ref64(ta.numpy()), ref64(tb.numpy())
                check(ta + tb, a64 + b64, dt, f"add {n} {dt}")
                check(ta * 3, a64 * 3, dt, f"mul_sb {n} {dt}")
                check(2 - tb, 2 - b64, dt, f"sub_sa {n} {dt}")
                check(ta < tb, a64 < b64, BOOL, f"lt {n} {dt}")
                check(clgrad.relu(ta), np.maximum(a64, 0), dt, f"relu {n} {dt}")
                check(-ta, -a64, dt, f"neg {n} {dt}")
                tc = ta.clone()
                check(tc, a64, dt, f"clone {n} {dt}")
                check(ta.to(F32 if dt is not F32 else F64), a64, F32 if dt is not F32 else F64,
                      f"cast {n} {dt}")
                check(ta.to(BOOL), a64 != 0, BOOL, f"to bool {n} {dt}")
                tc.mul_(tb)  # in place: the output is an operand
                check(tc, a64 * b64, dt, f"mul_ {n} {dt}")
        x4 = {k for k in launched if k.endswith("_x4")}
        assert {"add_x4", "mul_sb_x4", "sub_sa_x4", "lt_x4", "relu_x4", "neg_x4",
                "mul_x4", "copy_x4"} <= x4, x4
    finally:
        dev.plans.clear()


def test_half_tensor_number_arithmetic_in_float(cpu_fp16):
    """float16 with a Python number: add, sub, mul and div compute with the number in float32
    and round once (PyTorch's opmath): x / 70000. is 1.43e-05 (a float16 divisor was inf,
    every result 0) and x * 0.1 is float32's product rounded, in both operand orders, fresh,
    in place and on a cached signature; comparisons still round the number to float16 first
    (x == 1.0001 for x = 1, as PyTorch's)."""
    v = np.array([1.0, 0.3, 3.0, 65504.0, -2.5, 1e-4], np.float16)
    x = clgrad.tensor(v)
    f = v.astype(np.float32)
    for _ in range(2):  # the second: the kept plans
        for got, want in (((x / 70000.), f / np.float32(70000)), ((x * 0.1), f * np.float32(0.1)),
                          ((0.1 * x), np.float32(0.1) * f), ((x + 0.1), f + np.float32(0.1)),
                          ((x - 0.3), f - np.float32(0.3)), ((1 / x), np.float32(1) / f),
                          ((x * 2.0 ** 20), f * np.float32(2.0 ** 20))):
            assert got.dtype is clgrad.float16
            with np.errstate(over="ignore"):  # (65504 * 2^20: inf in both)
                np.testing.assert_array_equal(got.numpy(), want.astype(np.float16))
    y = clgrad.tensor(v)
    y.mul_(0.1)
    np.testing.assert_array_equal(y.numpy(), (f * np.float32(0.1)).astype(np.float16))
    assert (clgrad.tensor(np.float16(1.0)) == 1.0001).item()  # 1.0001 rounds to 1
    half_03 = clgrad.tensor(np.float16(0.3))  # 0.30004883 > 0.3, but not > half(0.3)
    assert not (half_03 > 0.3).item()


@pytest.mark.parametrize("name", ["floor", "ceil", "round"])
def test_floor_ceil_round_copy_integers_and_record_a_zero_gradient(name):
    """PyTorch's: an integer tensor gives a copy (writing into it leaves the input alone),
    and a float result of a tensor requiring grad requires grad, with a zero gradient."""
    x = clgrad.tensor([1, 2, 3])
    y = getattr(clgrad, name)(x)
    y += 1
    assert x.tolist() == [1, 2, 3] and y.tolist() == [2, 3, 4]
    f = clgrad.tensor([1.25, -2.5, 3.75], requires_grad=True)
    z = getattr(f, name)()
    assert z.requires_grad and z.grad_fn.name() == name.capitalize() + "Backward0"
    with pytest.raises(NotImplementedError, match=f'"{name}_vml_.*Bool'):  # PyTorch's
        getattr(clgrad, name)(clgrad.tensor([True, False]))
    (z * f).sum().backward()  # d/df (z * f) = z + f * 0
    assert f.grad.tolist() == z.detach().tolist()


def test_round_decimals_hand_values():
    """round(x * 10^d) / 10^d with half to even (PyTorch's formula): -0.125 -> -12.5 -> -12."""
    x = clgrad.tensor([1.2345, -0.125, 1234.5, 0.5])
    np.testing.assert_allclose(clgrad.round(x, decimals=2).numpy(), [1.23, -0.12, 1234.5, 0.5],
                               rtol=1e-6)
    assert clgrad.round(clgrad.tensor([1250.0, 1351.0]), decimals=-2).tolist() == [1200.0, 1400.0]
    assert x.round(decimals=1).dtype is clgrad.float32
    with pytest.raises(RuntimeError, match="floating"):
        clgrad.round(clgrad.tensor([1, 2]), decimals=1)
    with pytest.raises(TypeError, match="decimals"):
        clgrad.round(x, decimals=1.5)


# -- operators with operands they do not take: NotImplemented, as PyTorch's ---------------------
def test_comparison_with_a_non_number_is_python_equality():
    x = clgrad.tensor([1.0, 2.0])
    assert (x == None) is False and (x != None) is True  # noqa: E711
    assert (x == "a") is False and (x != "a") is True
    assert (x in [None]) is False and (None in [x]) is False
    assert (x in [None, x]) is True
    assert (x == [1.0, 2.0]) is False  # PyTorch: False too (list is no Tensor/Number operand)
    np.testing.assert_array_equal((x == 2.0).numpy(), [False, True])
    np.testing.assert_array_equal((x != np.float32(2.0)).numpy(), [True, False])
    np.testing.assert_array_equal((x == np.array([1.0, 0.0], np.float32)).numpy(), [True, False])


def test_arithmetic_with_a_non_number_raises_type_error():
    """clgrad's arithmetic operators raise their own TypeError for a non-operand (PyTorch's
    return NotImplemented, so an object's __radd__ gets a turn there: README, "Deliberately
    different")."""
    x = clgrad.tensor([1.0, 2.0])
    for f in (lambda: x + "a", lambda: "a" + x, lambda: x * None, lambda: x @ None,
              lambda: x < None):
        with pytest.raises(TypeError):
            f()
    np.testing.assert_array_equal((x + True).numpy(), [2.0, 3.0])
    np.testing.assert_array_equal((np.float32(1) - x).numpy(), [0.0, -1.0])


# -- PyTorch's deprecated scalar-first overloads: accepted with a UserWarning -------------------
@pytest.mark.parametrize("call, expect", [
    (lambda p, g: p.clone().add_(-0.1, g), 1 - 0.1 * 3),
    (lambda p, g: p.clone().data.add_(-0.1, g), 1 - 0.1 * 3),
    (lambda p, g: p.add(-0.1, g), 1 - 0.1 * 3),
    (lambda p, g: clgrad.add(p, -0.1, g), 1 - 0.1 * 3),
    (lambda p, g: p.clone().sub_(0.5, g), 1 - 0.5 * 3),
    (lambda p, g: p.sub(0.5, g), 1 - 0.5 * 3),
    (lambda p, g: clgrad.sub(p, 0.5, g), 1 - 0.5 * 3),
    (lambda p, g: p.clone().addcdiv_(0.5, g, g + 1), 1 + 0.5 * 3 / 4),
    (lambda p, g: p.addcdiv(0.5, g, g + 1), 1 + 0.5 * 3 / 4),
    (lambda p, g: clgrad.addcdiv(p, 0.5, g, g + 1), 1 + 0.5 * 3 / 4),
    (lambda p, g: p.clone().addcmul_(0.5, g, g + 1), 1 + 0.5 * 3 * 4),
    (lambda p, g: p.addcmul(0.5, g, g + 1), 1 + 0.5 * 3 * 4),
])
def test_deprecated_scalar_first_overloads(call, expect):
    p, g = clgrad.ones(2), clgrad.full((2,), 3.0)
    with pytest.warns(UserWarning, match="This overload of .* is deprecated"):
        out = call(p, g)
    np.testing.assert_allclose(out.numpy(), [expect] * 2, rtol=1e-6)
    np.testing.assert_array_equal(p.numpy(), [1.0, 1.0])
