"""cat, stack, split/chunk round trips, index_select, gather, scatter_add, advanced indexing and
index writes, on strided inputs, against NumPy."""
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import clgrad
from clgrad.autograd import gradcheck
from clgrad.errors import IndexRangeError
from strided import NP, shapes, strided_pair, values
from strided import strided

F32, F64, I64, I32, BOOL = clgrad.float32, clgrad.float64, clgrad.int64, clgrad.int32, clgrad.bool


def examples(n: int) -> int:
    return int(os.environ.get("CLGRAD_HYPOTHESIS_EXAMPLES", n))


@settings(max_examples=examples(40))
@given(shape=shapes(min_dims=1, max_dims=4), data=st.data())
def test_cat_of_strided_views(shape, data):
    d = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    dts = data.draw(st.lists(st.sampled_from([F32, F64, I64]), min_size=1, max_size=4),
                    label="dtypes")
    parts_np, parts = [], []
    for dt in dts:
        piece = list(shape)
        piece[d] = data.draw(st.integers(0, 4), label="len")
        p_np, p = data.draw(strided_pair(tuple(piece), dt))
        parts_np.append(p_np)
        parts.append(p)
    out = clgrad.cat(parts, d)
    ref = np.concatenate(parts_np, axis=d)
    want = max(dts, key=lambda t: [I64, F32, F64].index(t))
    assert out.dtype is want
    np.testing.assert_array_equal(out.numpy(), ref.astype(NP[want]))
    for p, p_np in zip(parts, parts_np):
        np.testing.assert_array_equal(p.numpy(), p_np)


@settings(max_examples=examples(30))
@given(shape=shapes(max_dims=3), data=st.data())
def test_stack_of_strided_views(shape, data):
    k = data.draw(st.integers(1, 4), label="count")
    dt = data.draw(st.sampled_from([F32, I64]), label="dtype")
    pairs = [data.draw(strided_pair(shape, dt)) for _ in range(k)]
    d = data.draw(st.integers(-len(shape) - 1, len(shape)), label="dim")
    out = clgrad.stack([p for _, p in pairs], d)
    np.testing.assert_array_equal(out.numpy(), np.stack([a for a, _ in pairs], axis=d))


@settings(max_examples=examples(30))
@given(shape=shapes(min_dims=1, max_dims=3), data=st.data())
def test_split_chunk_cat_round_trip(shape, data):
    x_np, x = data.draw(strided_pair(shape, F32))
    d = data.draw(st.integers(0, len(shape) - 1), label="dim")
    size = data.draw(st.integers(1, 4), label="size")
    pieces = x.split(size, d)
    assert [p.shape[d] for p in pieces] == (
        [min(size, shape[d] - i) for i in range(0, shape[d], size)] or [0])
    np.testing.assert_array_equal(clgrad.cat(pieces, d).numpy(), x_np)
    chunks = x.chunk(size, d)
    assert len(chunks) <= size
    np.testing.assert_array_equal(clgrad.cat(chunks, d).numpy(), x_np)
    if shape[d]:
        np.testing.assert_array_equal(clgrad.stack(x.unbind(d), d).numpy(), x_np)


@pytest.mark.parametrize("n", [1, 257, 1025, 4099])
def test_cat_sizes_around_work_group(n):
    a = np.arange(2 * n, dtype=np.float32)
    b = np.arange(n, dtype=np.float32) * -1
    t = clgrad.cat([clgrad.tensor(a)[::2], clgrad.tensor(b)[::-1], clgrad.tensor(a)[:3]])
    np.testing.assert_array_equal(t.numpy(), np.concatenate([a[::2], b[::-1], a[:3]]))



@pytest.mark.parametrize("dim", [0, 1, 2, 3])
def test_cat_along_each_dim_of_non_contiguous_inputs(dim):
    """cat of transposed, narrowed and expanded 4-D inputs (DenseNet's and ShuffleNet's sizes:
    rows longer than copy_runs' runs) along each dim, against NumPy, with the gradient of each
    input its slice of the output's gradient."""
    rng = np.random.default_rng(dim)
    shape = [8, 40, 16, 16]
    s1, s2, s3 = list(shape), list(shape), list(shape)
    s1[dim], s2[dim], s3[dim] = 3, 12, 5
    a = rng.standard_normal(s1[:2] + s1[:1:-1]).astype(np.float32)  # made (s1) by a transpose
    b = rng.standard_normal([n + 2 for n in s2]).astype(np.float32)
    c = rng.standard_normal(s3[:3] + [1]).astype(np.float32)
    parts_np = [a.transpose(0, 1, 3, 2), b[1:-1, 1:-1, 1:-1, 1:-1], np.broadcast_to(c, s3)]
    ta = clgrad.tensor(a, requires_grad=True)
    pa = ta.transpose(2, 3)
    parts = [pa, clgrad.tensor(b)[1:-1, 1:-1, 1:-1, 1:-1], clgrad.tensor(c).expand(*s3)]
    out = clgrad.cat(parts, dim)
    np.testing.assert_array_equal(out.detach().numpy(), np.concatenate(parts_np, dim))
    g = rng.standard_normal(out.shape).astype(np.float32)
    out.backward(clgrad.tensor(g))
    np.testing.assert_array_equal(ta.grad.numpy(),
                                  np.take(g, range(3), dim).transpose(0, 1, 3, 2))

def test_cat_skips_legacy_empty_1d():
    x = clgrad.ones(2, 3)
    out = clgrad.cat([x, clgrad.zeros(0), x * 2])
    np.testing.assert_array_equal(out.numpy(), np.concatenate([np.ones((2, 3)),
                                                               2 * np.ones((2, 3))]))


# -- gathers and scatters ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [F32, F64, I64])
@settings(max_examples=examples(25))
@given(shape=shapes(min_dims=1, max_dims=3, min_side=1), data=st.data())
def test_index_select(dtype, shape, data):
    x_np, x = data.draw(strided_pair(shape, dtype))
    d = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    n = shape[d]
    idx = data.draw(st.lists(st.integers(0, n - 1), max_size=6), label="index")  # PyTorch: >= 0
    i_np = np.array(idx, dtype=np.int64)
    i = clgrad.tensor(np.stack([i_np, i_np]))[1] if idx else clgrad.tensor(i_np)
    out = x.index_select(d, i)
    np.testing.assert_array_equal(out.numpy(), np.take(x_np, i_np, axis=d))


@settings(max_examples=examples(30))
@given(shape=shapes(min_dims=1, max_dims=3, min_side=1), data=st.data())
def test_gather_and_scatter_add(shape, data):
    x_np, x = data.draw(strided_pair(shape, F64))
    d = data.draw(st.integers(0, len(shape) - 1), label="dim")
    i_shape = tuple(data.draw(st.integers(1, 4)) if j == d else data.draw(st.integers(1, n))
                    for j, n in enumerate(shape))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000), label="seed"))
    i_np = rng.integers(0, shape[d], size=i_shape)
    i = clgrad.tensor(i_np.T.copy()).T            # a transposed index view
    g = x.gather(d, i)
    sub = x_np[tuple(slice(None) if j == d else slice(0, n) for j, n in enumerate(i_shape))]
    np.testing.assert_array_equal(g.numpy(), np.take_along_axis(sub, i_np, axis=d))
    src_np = values(rng, i_shape, F64)
    out = x.scatter_add(d, i, clgrad.tensor(src_np))
    ref = x_np.copy()
    for pos in np.ndindex(*i_shape):
        tgt = list(pos)
        tgt[d] = i_np[pos]
        ref[tuple(tgt)] += src_np[pos]
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(x.numpy(), x_np)            # out of place


@pytest.mark.parametrize("key_fn", [
    lambda: np.array([2, 0, 2, -1]),
    lambda: [1, 1],
    lambda: (slice(None), np.array([0, 3])),
    lambda: (1, [0, 2, 2]),
    lambda: np.array([[0, 1], [2, 2]]),
    lambda: (slice(1, None), np.array([[3], [0]])),
])
def test_advanced_getitem(key_fn):
    x_np = np.arange(20.0).reshape(4, 5)
    x = clgrad.tensor(np.arange(40.0).reshape(4, 10))[:, ::2]
    key = key_fn()
    cl_key = tuple(clgrad.tensor(k) if isinstance(k, np.ndarray) else k for k in key) \
        if isinstance(key, tuple) else (clgrad.tensor(key) if isinstance(key, np.ndarray)
                                        else key)
    assert x.numpy().tolist() == (2 * x_np).tolist()
    np.testing.assert_array_equal(x[cl_key].numpy(), (2 * x_np)[key])
    np.testing.assert_array_equal(x[key].numpy(), (2 * x_np)[key])


def test_bool_mask_get_and_set():
    x_np = np.arange(12.0).reshape(3, 4) - 5
    x = clgrad.tensor(x_np.T.copy()).T
    mask = x > 0
    np.testing.assert_array_equal(x[mask].numpy(), x_np[x_np > 0])
    rows = clgrad.tensor([True, False, True])
    np.testing.assert_array_equal(x[rows].numpy(), x_np[[True, False, True]])
    x[mask] = 0.5
    x_np[x_np > 0] = 0.5
    np.testing.assert_array_equal(x.numpy(), x_np)


def test_setitem_with_index_tensor():
    x_np = np.zeros((5, 3))
    x = clgrad.tensor(x_np)
    v = x._version
    x[clgrad.tensor([4, 0, -2])] = clgrad.tensor([[1.0, 2, 3]], dtype=F64)  # torch: same dtype
    x_np[[4, 0, -2]] = [[1, 2, 3]]
    x[[1]] = 7.0
    x_np[[1]] = 7.0
    np.testing.assert_array_equal(x.numpy(), x_np)
    assert x._version > v


@pytest.mark.parametrize("call", [
    lambda x: x.index_select(0, clgrad.tensor([-1])),         # PyTorch raises for negatives
    lambda x: x.index_select(1, clgrad.tensor([0, 4])),
    lambda x: clgrad.index_select(x, 0, clgrad.tensor([3])),
    lambda x: x.gather(0, clgrad.tensor([[0, -1, 0, 0]])),
    lambda x: x.gather(1, clgrad.tensor([[4], [0], [0]])),
    lambda x: x.scatter_add(0, clgrad.tensor([[-1, 0, 0, 0]]), clgrad.tensor(np.ones((1, 4)))),
    lambda x: x[clgrad.tensor([3])],
    lambda x: x[clgrad.tensor([-4])],
    lambda x: x[:, clgrad.tensor([0, 9])],
])
def test_index_out_of_range_raises_before_launch(call):
    from clgrad.runtime import launch_count
    x = clgrad.tensor(np.arange(12.0).reshape(3, 4))
    before = launch_count()
    with pytest.raises(IndexError, match=r"out of bounds for dimension [01] with size"):
        call(x)
    assert launch_count() == before
    np.testing.assert_array_equal(x.numpy(), np.arange(12.0).reshape(3, 4))


def test_negative_indices_where_pytorch_takes_them():
    """x[idx] and x[idx] = v wrap negative indices (PyTorch, NumPy)."""
    a = np.arange(12.0).reshape(3, 4)
    x = clgrad.tensor(a)
    np.testing.assert_array_equal(x[clgrad.tensor([-1, 0])].numpy(), a[[-1, 0]])
    np.testing.assert_array_equal(x[:, clgrad.tensor([-4])].numpy(), a[:, [-4]])
    x[clgrad.tensor([-1])] = 7.0
    b = a.copy()
    b[[-1]] = 7.0
    np.testing.assert_array_equal(x.numpy(), b)


# -- scatter, roll, tril/triu, nonzero, count_nonzero, masked_fill_, Tensor.where (issue 13) ----
def _ref_scatter(x, dim, index, src, add=False):
    out = x.copy()
    for pos in np.ndindex(index.shape):
        tgt = list(pos)
        tgt[dim] = index[pos]
        v = src[pos] if isinstance(src, np.ndarray) else src
        out[tuple(tgt)] = out[tuple(tgt)] + v if add else v
    return out


def _perm_index(rng, shape, size, dim):
    """An index of ``shape`` whose entries along ``dim`` are distinct (deterministic scatter)."""
    idx = np.empty(shape, dtype=np.int64)
    for pos in np.ndindex(*[n for i, n in enumerate(shape) if i != dim]):
        sl = list(pos)
        sl.insert(dim, slice(None))
        idx[tuple(sl)] = rng.permutation(size)[:shape[dim]]
    return idx


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_src_value_and_add_match_numpy(dim):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(4, 5))
    d = dim % 2
    ishape = (3, 4) if d == 0 else (4, 3)
    idx = _perm_index(rng, ishape, x.shape[d], d)
    src = rng.normal(size=(4, 5))
    t_idx = clgrad.tensor(idx)
    out = clgrad.scatter(strided(x), dim, t_idx, strided(src))
    np.testing.assert_array_equal(out.numpy(), _ref_scatter(x, d, idx, src))
    np.testing.assert_array_equal(strided(x).scatter(dim, t_idx, 2.5).numpy(),
                                  _ref_scatter(x, d, idx, 2.5))
    dup = rng.integers(0, x.shape[d], ishape)
    np.testing.assert_allclose(
        strided(x).scatter(dim, clgrad.tensor(dup), strided(src), reduce="add").numpy(),
        _ref_scatter(x, d, dup, src, add=True), rtol=1e-14)
    y = clgrad.tensor(x, dtype=clgrad.float64)
    assert y.scatter_(dim, t_idx, strided(src)) is y
    np.testing.assert_array_equal(y.numpy(), _ref_scatter(x, d, idx, src))
    y.scatter_add_(dim, clgrad.tensor(dup), strided(src))
    np.testing.assert_allclose(y.numpy(), _ref_scatter(_ref_scatter(x, d, idx, src), d, dup,
                                                       src, add=True), rtol=1e-14)


def test_scatter_gradients():
    rng = np.random.default_rng(8)
    idx = clgrad.tensor(_perm_index(rng, (2, 4), 3, 0))
    x = clgrad.tensor(rng.normal(size=(3, 4)), dtype=clgrad.float64, requires_grad=True)
    s = clgrad.tensor(rng.normal(size=(2, 5)), dtype=clgrad.float64, requires_grad=True)
    assert gradcheck(lambda a, b: clgrad.scatter(a, 0, idx, b), (x, s))
    assert gradcheck(lambda a, b: clgrad.scatter(a, 0, idx, b, reduce="add"), (x, s))
    assert gradcheck(lambda a: a.scatter(0, idx, 3.0), (x,))
    z = x * 1.0
    z.scatter_(0, idx, s)
    z.sum().backward()
    written = _ref_scatter(np.zeros((3, 4)), 0, idx.numpy(), 1.0)
    np.testing.assert_array_equal(x.grad.numpy(), 1.0 - written)
    want_s = np.zeros((2, 5))
    want_s[:, :4] = 1.0  # src elements outside the index's shape are not read
    np.testing.assert_array_equal(s.grad.numpy(), want_s)


def test_scatter_errors():
    x = clgrad.zeros(3, 4)
    with pytest.raises(IndexRangeError):
        x.scatter(0, clgrad.tensor([[3]]), 1.0)
    with pytest.raises(RuntimeError, match="dims"):
        x.scatter(0, clgrad.tensor([1]), 1.0)
    with pytest.raises(NotImplementedError, match="multiply"):
        x.scatter(0, clgrad.tensor([[1]]), clgrad.ones(1, 1), reduce="multiply")
    with pytest.raises(RuntimeError, match="src"):
        x.scatter(0, clgrad.tensor([[0, 1]]), clgrad.ones(1, 1))


@pytest.mark.parametrize("shifts,dims", [(2, 0), (-1, 1), ((1, 3), (0, 1)), (7, None),
                                         ((2,), None), (0, 1), (11, -1)])
def test_roll_matches_numpy(shifts, dims):
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(clgrad.roll(strided(a), shifts, dims).numpy(),
                                  np.roll(a, shifts, dims))
    x = clgrad.tensor(a, dtype=clgrad.float64, requires_grad=True)
    assert gradcheck(lambda t: t.roll(shifts, dims), (x,))
    with pytest.raises(RuntimeError, match="same length"):
        x.roll((1, 2), 0)


@pytest.mark.parametrize("diagonal", [-2, -1, 0, 1, 3])
def test_tril_triu_match_numpy(diagonal):
    a = np.arange(2 * 3 * 5, dtype=np.float64).reshape(2, 3, 5) + 1
    np.testing.assert_array_equal(clgrad.tril(strided(a), diagonal).numpy(),
                                  np.tril(a, diagonal))
    np.testing.assert_array_equal(strided(a).triu(diagonal).numpy(), np.triu(a, diagonal))
    y = clgrad.tensor(a[0], dtype=clgrad.float64)
    y.tril_(diagonal)
    np.testing.assert_array_equal(y.numpy(), np.tril(a[0], diagonal))
    x = clgrad.tensor(a[0], dtype=clgrad.float64, requires_grad=True)
    x.triu(diagonal).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.triu(np.ones((3, 5)), diagonal))
    with pytest.raises(RuntimeError, match="2 dims"):
        clgrad.tril(clgrad.ones(3))


def test_nonzero_argwhere_count_nonzero():
    a = np.array([[0, 1, 0], [2, 0, 3]])
    x = strided(a, clgrad.int64)
    np.testing.assert_array_equal(clgrad.nonzero(x).numpy(), np.argwhere(a))
    assert clgrad.nonzero(x).dtype is clgrad.int64
    for got, want in zip(x.nonzero(as_tuple=True), np.nonzero(a)):
        np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(clgrad.argwhere(x).numpy(), np.argwhere(a))
    assert clgrad.nonzero(clgrad.zeros(2, 3)).shape == (0, 2)
    assert clgrad.nonzero(clgrad.tensor(5)).shape == (1, 0)
    assert clgrad.count_nonzero(x).item() == 3
    assert x.count_nonzero(dim=0).tolist() == np.count_nonzero(a, axis=0).tolist()


def test_masked_fill_in_place_and_where_method():
    a = np.arange(6.0).reshape(2, 3)
    m = np.array([True, False, True])
    y = clgrad.tensor(a, dtype=clgrad.float64)
    assert y.masked_fill_(clgrad.tensor(m), -1.0) is y
    np.testing.assert_array_equal(y.numpy(), np.where(m, -1.0, a))
    x = clgrad.tensor(a, dtype=clgrad.float64, requires_grad=True)
    v = clgrad.tensor(2.0, dtype=clgrad.float64, requires_grad=True)
    z = x * 1.0
    z.masked_fill_(clgrad.tensor(m), v)
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.where(m, 0.0, 1.0) * np.ones((2, 3)))
    assert v.grad.item() == 4.0  # the value lands in 4 places
    w = strided(a).where(clgrad.tensor(m), strided(-a))
    np.testing.assert_array_equal(w.numpy(), np.where(m, a, -a))


def test_type_strings_and_casts():
    x = clgrad.zeros(2)
    assert x.type() == "torch.FloatTensor"
    assert x.double().type() == "torch.DoubleTensor" and x.long().type() == "torch.LongTensor"
    assert x.int().type() == "torch.IntTensor" and x.bool().type() == "torch.BoolTensor"
    assert x.type(clgrad.float64).dtype is clgrad.float64
    assert x.type("torch.LongTensor").dtype is clgrad.int64
    assert x.type("torch.cuda.DoubleTensor").dtype is clgrad.float64
    assert x.type(clgrad.float32) is x
    with pytest.raises(TypeError, match="tensor type name"):
        x.type("torch.ComplexTensor")


# -- advanced indexing with several index arrays (PyTorch's semantics) ------------------------
# Keys whose result PyTorch and NumPy agree on (no int between index arrays): NumPy is the
# oracle. The base is a strided view (every other column of a wider tensor).
ADVANCED_KEYS = {
    "two_lists": lambda: ([0, 1], [2, 1]),
    "list_slice_list": lambda: ([0, 1], slice(None), [1, 3]),  # separated: B goes first
    "slice_two_adjacent": lambda: (slice(None), [0, 2], [1, 3], slice(1, 3)),
    "broadcast_column_row": lambda: ([[0], [1]], slice(None), [1, 2, 3]),
    "ellipsis_negative": lambda: (Ellipsis, [4, -1]),
    "none_ellipsis": lambda: (None, [1], Ellipsis, [0, 2]),
    "range_and_list": lambda: (range(2), [2, 0], 1),
    "numpy_int_array": lambda: (np.array([1, 1, 0]),),
    "negative_step": lambda: (slice(None, None, -1), [0, 0], slice(None), [4, 3]),
    "true": lambda: (True,),
    "false": lambda: (False,),
    "bool_list": lambda: ([True, False],),
    "bool_mask_2d": lambda: (np.array([[True, False, True], [False, False, True]]),),
    "mask_between": lambda: (slice(None), np.array([True, False, True]), [1, 2]),
    "empty_list": lambda: ([],),
    "index_2d_then_step": lambda: (slice(None), [[0, 1], [2, 2]], slice(None, None, 2)),
    "duplicates": lambda: ([1, 1, 1], [0, 0, 2]),
    "numpy_0dim_bool": lambda: (np.array(False), 0),
    "numpy_int_scalar_and_list": lambda: (np.int64(1), [2, 0]),
}


def _base4():
    """float64 (2, 3, 4, 5) values 0..119, as a strided view; and its NumPy twin."""
    x_np = np.arange(120.0).reshape(2, 3, 4, 5)
    return x_np, clgrad.tensor(np.arange(240.0).reshape(2, 3, 4, 10))[..., ::2] * 0.5


def _cl_key(key):
    return tuple(clgrad.tensor(k) if isinstance(k, np.ndarray) else k for k in key)


@pytest.mark.parametrize("name", ADVANCED_KEYS)
def test_advanced_getitem_against_numpy(name):
    key = ADVANCED_KEYS[name]()
    x_np, x = _base4()
    ref = x_np[key]
    for k in (key, _cl_key(key)):  # NumPy arrays and clgrad tensors as indices
        out = x[k]
        assert out.shape == ref.shape
        np.testing.assert_array_equal(out.numpy(), ref)


@pytest.mark.parametrize("name", ["two_lists", "list_slice_list", "none_ellipsis",
                                  "bool_mask_2d", "duplicates", "negative_step"])
def test_advanced_getitem_backward_scatter_adds(name):
    key = ADVANCED_KEYS[name]()
    x_np, _ = _base4()
    w = np.random.default_rng(3).standard_normal(x_np[key].shape)
    x = clgrad.tensor(x_np, requires_grad=True)
    (x[key] * clgrad.tensor(w)).sum().backward()
    ref = np.zeros_like(x_np)
    np.add.at(ref, key, w)  # duplicates accumulate
    np.testing.assert_allclose(x.grad.numpy(), ref)


def test_advanced_getitem_gradcheck_on_a_strided_view():
    x = clgrad.tensor(np.random.default_rng(4).standard_normal((4, 6)), requires_grad=True)
    idx = clgrad.tensor([[2, 0], [2, 3]])
    assert clgrad.autograd.gradcheck(lambda t: t.t()[1:, ::1][idx, [[1, 1], [0, 3]]] * 2.0,
                                     (x,))


def test_int_between_index_arrays_follows_pytorch_not_numpy():
    # PyTorch applies ints first (as select), so the index arrays left are adjacent.
    x_np, x = _base4()
    out = x[0, :, [0, 1]]  # NumPy: shape (2, 3, 5); PyTorch: (3, 2, 5)
    assert out.shape == (3, 2, 5)
    np.testing.assert_array_equal(out.numpy(), x_np[0][:, [0, 1]])
    out = x[1, [0, 2], 2, [1, 3]]
    np.testing.assert_array_equal(out.numpy(), x_np[1][:, 2][[0, 2], [1, 3]])


def test_nll_idiom_input_range_target():
    lp = np.random.default_rng(5).standard_normal((5, 3))
    t = np.array([0, 2, 1, 1, 0])
    x = clgrad.tensor(lp, requires_grad=True)
    loss = -x[range(5), clgrad.tensor(t)].mean()
    assert loss.item() == pytest.approx(-lp[np.arange(5), t].mean())
    loss.backward()
    ref = np.zeros((5, 3))
    ref[np.arange(5), t] = -0.2
    np.testing.assert_allclose(x.grad.numpy(), ref)


def test_list_of_sequences_reads_as_a_tuple_with_a_warning():
    x = clgrad.tensor(np.arange(12).reshape(3, 4))
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        out = x[[[0, 1], [1, 2]]]
    assert out.numpy().tolist() == [1, 6]  # x[[0, 1], [1, 2]], as PyTorch 2.x


def test_uint8_index_is_a_mask_with_a_deprecation_warning():
    x_np = np.arange(12.0).reshape(4, 3)
    x = clgrad.tensor(x_np)
    with pytest.warns(UserWarning, match="uint8 is deprecated"):
        out = x[clgrad.tensor([1, 0, 0, 1], dtype=clgrad.uint8)]
    np.testing.assert_array_equal(out.numpy(), x_np[[0, 3]])


@pytest.mark.parametrize("key,match", [
    (([0, 7],), r"index 7 is out of bounds for dimension 0 with size 4"),
    (([0, -5],), r"index -5 is out of bounds"),
    (([0, 1], [0, 1, 2]), r"could not be broadcast together with shapes \[\(2,\), \(3,\)\]"),
    ((np.array([True, False]),), r"shape of the mask \(2,\) does not match .* \(4,\)"),
    (([0], [0], [0]), r"too many indices for tensor of dimension 2"),
    ((Ellipsis, [0], Ellipsis), r"single ellipsis"),
])
def test_advanced_index_errors_before_any_launch(key, match):
    x = clgrad.tensor(np.zeros((4, 3)))
    before = clgrad.runtime.launch_count()
    with pytest.raises(IndexError, match=match):
        x[key]
    with pytest.raises(IndexError, match=match.replace("getitem", "setitem")):
        x[key] = 1.0
    assert clgrad.runtime.launch_count() == before


@pytest.mark.parametrize("dtype", [F32, clgrad.int8, clgrad.int16])
def test_index_dtypes_pytorch_refuses(dtype):
    x = clgrad.tensor(np.zeros((4, 3)))
    with pytest.raises(IndexError, match="must be long, int, uint8 or bool"):
        x[clgrad.tensor([0, 1], dtype=dtype)]


@pytest.mark.parametrize("name", ["two_lists", "list_slice_list", "none_ellipsis",
                                  "bool_mask_2d", "mask_between", "negative_step", "true"])
def test_advanced_setitem_against_numpy(name):
    key = ADVANCED_KEYS[name]()
    x_np, x = _base4()
    shape = x_np[key].shape
    v = np.random.default_rng(6).standard_normal(shape[-1:])  # broadcast along the rest
    x[_cl_key(key)] = clgrad.tensor(v)
    x_np[key] = v
    np.testing.assert_array_equal(x.numpy(), x_np)
    x[key] = 2.5
    x_np[key] = 2.5
    np.testing.assert_array_equal(x.numpy(), x_np)


def test_index_put_accumulate_adds_duplicates():
    x_np = np.arange(15.0).reshape(5, 3)
    x = clgrad.tensor(x_np)
    idx, v = np.array([4, 0, 4, 4]), np.arange(12.0).reshape(4, 3)
    assert x.index_put_((clgrad.tensor(idx),), clgrad.tensor(v), accumulate=True) is x
    np.add.at(x_np, idx, v)
    np.testing.assert_array_equal(x.numpy(), x_np)
    y = clgrad.index_put(x, (clgrad.tensor([1]), None), clgrad.tensor(-1.0, dtype=F64))
    x_np2 = x_np.copy()
    x_np2[1, :] = -1.0
    np.testing.assert_array_equal(y.numpy(), x_np2)
    np.testing.assert_array_equal(x.numpy(), x_np)  # out of place


def test_index_put_accumulate_small_int_wraps():
    u = clgrad.tensor([1, 2, 3], dtype=clgrad.uint8)
    u.index_put_((clgrad.tensor([0, 0, 2]),), clgrad.tensor([200, 100, 5], dtype=clgrad.uint8),
                 accumulate=True)
    assert u.dtype is clgrad.uint8 and u.numpy().tolist() == [(1 + 300) % 256, 2, 8]


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_gradients(accumulate):
    # Hand rule (PyTorch's index_put backward): self gets g with the written elements zeroed
    # (unchanged with accumulate); values get g gathered at the indices.
    rng = np.random.default_rng(7)
    a, v, w = rng.standard_normal((4, 5)), rng.standard_normal((3, 5)), rng.standard_normal((4, 5))
    x = clgrad.tensor(a, requires_grad=True)
    vv = clgrad.tensor(v, requires_grad=True)
    y = x * 2.0
    y.index_put_((clgrad.tensor([2, 0, 3]),), vv, accumulate=accumulate)
    (y * clgrad.tensor(w)).sum().backward()
    gx = 2 * w
    if not accumulate:
        gx[[2, 0, 3]] = 0
    np.testing.assert_allclose(x.grad.numpy(), gx)
    np.testing.assert_allclose(vv.grad.numpy(), w[[2, 0, 3]])


def test_setitem_index_tensor_gradcheck_through_a_view():
    rng = np.random.default_rng(8)
    x = clgrad.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    v = clgrad.tensor(rng.standard_normal((2,)), requires_grad=True)

    def f(x, v):
        y = x.sin()
        y[:, 1:][[0, 2], [2, 0]] = v * 3.0  # a write through a view of y
        return y
    assert clgrad.autograd.gradcheck(f, (x, v))


def test_iadd_through_an_index_reads_writes_back():
    x_np = np.zeros(4)
    x = clgrad.tensor(x_np, requires_grad=True)
    v = clgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1.0
    y[[0, 0, 3]] += v  # a gather, an add, a write-back: duplicates do not accumulate
    assert y.detach().numpy()[3] == 3.0 and y.detach().numpy()[0] in (1.0, 2.0)
    y.sum().backward()
    # PyTorch's rule (checked with torch 2.13): the write-back sends g to every duplicate of
    # the gathered copy, whose backward scatter-adds into y: x[0] collects 2.
    np.testing.assert_allclose(x.grad.numpy(), [2, 1, 1, 1])
    np.testing.assert_allclose(v.grad.numpy(), [1, 1, 1])


@pytest.mark.parametrize("name", [k for k in ADVANCED_KEYS if k != "negative_step"])
def test_advanced_indexing_against_pytorch(name):
    torch = pytest.importorskip("torch")
    key = ADVANCED_KEYS[name]()
    x_np, x = _base4()
    tk = tuple(torch.tensor(k) if isinstance(k, np.ndarray) else k for k in key)
    xt = torch.tensor(x_np, requires_grad=True)
    w = np.random.default_rng(9).standard_normal(tuple(xt[tk].shape))
    (xt[tk] * torch.tensor(w)).sum().backward()
    xc = clgrad.tensor(x_np, requires_grad=True)
    out = xc[key]
    (out * clgrad.tensor(w)).sum().backward()
    np.testing.assert_array_equal(out.detach().numpy(), xt[tk].detach().numpy())
    np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy())


def test_setitem_value_that_does_not_broadcast_raises_before_writing():
    x = clgrad.tensor(np.zeros((4, 3)))
    with pytest.raises(RuntimeError, match=r"value tensor of shape \(2,\) cannot be broadcast "
                                           r"to indexing result of shape \(3, 3\)"):
        x[[0, 1, 2]] = clgrad.tensor([1.0, 2.0])
    assert not x.numpy().any()


def test_index_put_into_a_tensor_without_grad_makes_it_a_function_of_values():
    x = clgrad.zeros(4, dtype=clgrad.float64)
    v = clgrad.tensor([1.0, 2.0], dtype=clgrad.float64, requires_grad=True)
    x[[3, 1]] = v
    assert x.requires_grad and x.grad_fn is not None
    (x * clgrad.tensor([1.0, 2.0, 3.0, 4.0], dtype=clgrad.float64)).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [4.0, 2.0])
    leaf = clgrad.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf[[0]] = 1.0


# -- embedding / one_hot ----------------------------------------------------------------------
def test_embedding_forward_backward_padding_idx():
    import clgrad.nn.functional as F
    rng = np.random.default_rng(8)
    w = rng.standard_normal((6, 3))
    idx = np.array([[1, 4, 1], [0, 5, 4]])
    wt = clgrad.tensor(w, requires_grad=True)
    it = clgrad.tensor(idx.T.copy()).t()                     # a non-contiguous index view
    out = F.embedding(it, wt, padding_idx=4)
    np.testing.assert_array_equal(out.detach().numpy(), w[idx])
    g = rng.standard_normal(out.shape)
    out.backward(clgrad.tensor(g))
    ref = np.zeros_like(w)
    np.add.at(ref, idx, g)                                   # repeated indices add up
    ref[4] = 0                                               # padding_idx gets no gradient
    np.testing.assert_allclose(wt.grad.numpy(), ref, rtol=1e-12)
    emb = clgrad.nn.Embedding(6, 3, padding_idx=0)
    np.testing.assert_array_equal(emb.weight.detach().numpy()[0], 0)
    assert emb(clgrad.tensor([0, 2])).shape == (2, 3)
    with pytest.raises(IndexError, match="embedding: index"):
        F.embedding(clgrad.tensor([6]), wt)
    with pytest.raises(IndexError, match="embedding: index -1"):
        F.embedding(clgrad.tensor([-1]), wt)
    with pytest.raises(NotImplementedError, match="sparse=True"):
        F.embedding(it, wt, sparse=True)


def test_one_hot():
    import clgrad.nn.functional as F
    t = clgrad.tensor([[0, 2], [1, 2]])
    out = F.one_hot(t)
    assert out.dtype is clgrad.int64 and out.shape == (2, 2, 3)
    np.testing.assert_array_equal(out.numpy(), np.eye(3, dtype=np.int64)[t.numpy()])
    assert F.one_hot(t[:, 0], 5).numpy().tolist() == [[1, 0, 0, 0, 0], [0, 1, 0, 0, 0]]
    with pytest.raises(RuntimeError, match="smaller than num_classes=2"):
        F.one_hot(t, 2)
    with pytest.raises(RuntimeError, match="integer"):
        F.one_hot(clgrad.tensor([1.0]))


# -- cat in one launch (kernels/copy.cl cat_elems / cat_runs) ----------------------------------
def _launches(fn):
    """(result of fn(), kernel launches it made)."""
    from clgrad.runtime import device as rt
    n0 = rt._LAUNCHES[0]
    out = fn()
    return out, rt._LAUNCHES[0] - n0


_TORCH_DT = {F32: "float32", F64: "float64", I64: "int64", I32: "int32", BOOL: "bool"}


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_cat_many_inputs_mixed_dtypes_and_layouts(monkeypatch, kind):
    """cat of 2 to 19 inputs along each dim: transposed, stepped, offset and expanded views,
    empty inputs among them, dtypes mixed (the result's dtype is torch.cat's), against NumPy;
    the device taken as a CPU (cat_runs) and as a GPU (cat_elems)."""
    torch = pytest.importorskip("torch")
    dev = clgrad.default_device()
    monkeypatch.setattr(dev, "kind", kind)
    monkeypatch.setattr(dev, "plans", {})
    rng = np.random.default_rng(7)
    for count in (2, 3, 8, 9, 19):
        for dim in (0, 1, 2):
            parts_np, parts = [], []
            for i in range(count):
                dt = [F32, F64, I64, I32, BOOL][(i * 7 + count + dim) % 5]
                shape = [3, 4, 5]
                shape[dim] = (i * 5 + dim) % 4  # 0 to 3: some inputs are empty
                a = values(rng, shape, dt)
                t, how = clgrad.tensor(a), i % 4
                if how == 1:  # transposed storage
                    t = clgrad.tensor(np.ascontiguousarray(a.transpose(2, 1, 0))).permute(2, 1, 0)
                elif how == 2:  # stepped and offset
                    big = np.zeros([2 * n + 1 for n in shape], a.dtype)
                    big[1::2, 1::2, 1::2] = a
                    t = clgrad.tensor(big)[1::2, 1::2, 1::2]
                elif how == 3 and shape[0]:  # expanded along dim 0
                    a = np.broadcast_to(a[:1], shape)
                    t = clgrad.tensor(np.ascontiguousarray(a[:1])).expand(*shape)
                parts_np.append(a)
                parts.append(t)
            out = clgrad.cat(parts, dim)
            want = torch.cat([torch.from_numpy(np.array(a)) for a in parts_np], dim)
            assert _TORCH_DT[out.dtype] == str(want.dtype).split(".")[1], (count, dim)
            np.testing.assert_array_equal(out.numpy(), want.numpy(), err_msg=f"{count} {dim}")


@pytest.mark.parametrize("dt", [F32, F64, clgrad.float16, clgrad.int16, clgrad.uint8, BOOL])
def test_cat_elems_vectors_of_four(monkeypatch, dt):
    """cat_elems (the device taken as a GPU) copies 4 elements a work item for inputs of the
    output's dtype whose last dim is unit-stride and whose offsets and strides are multiples
    of 4 (a bit copy of 4 x 1, 2, 4 or 8 bytes), and one for the rest, in the same launch: an
    input at an odd offset, a last dim of 6, a transposed one, one of another dtype; against
    NumPy. The launch's work items count the vectors."""
    from clgrad.ops import index
    dev = clgrad.default_device()
    if (dt is clgrad.float16 and not dev.fp16) or (dt is F64 and not dev.fp64):
        pytest.skip(f"the default device {dev.name!r} lacks {dt}")  # (int16: 2 bytes too)
    monkeypatch.setattr(dev, "kind", "gpu")
    monkeypatch.setattr(dev, "plans", {})
    plans = []
    real = index._cat_plan
    monkeypatch.setattr(index, "_cat_plan", lambda *a: plans.append(real(*a)) or plans[-1])
    rng = np.random.default_rng(11)
    big = values(rng, (2, 9, 8), dt)
    aligned = [values(rng, (2, c, 8), dt) for c in (1, 3, 4)]
    parts_np = aligned + [big[:, 1:, :], big[:, :1, :]]
    tb = clgrad.tensor(big)
    parts = [clgrad.tensor(a) for a in aligned] + [tb[:, 1:, :], tb[:, :1, :]]
    out, k = _launches(lambda: clgrad.cat(parts, 1))
    assert k == 1 and out.dtype is dt
    np.testing.assert_array_equal(out.numpy(), np.concatenate(parts_np, 1))
    # every input aligned (tb[:, 1:] starts at element 8): 2 x 17 x 8 elements in vectors of 4
    assert plans[-1].gsize[0] == -(-(2 * 17 * 8 // 4) // index.CAT_LOCAL) * index.CAT_LOCAL
    other = F32 if dt is F64 else F64
    flat = values(rng, (19,), dt)
    odd_np = [values(rng, (3, 6), dt), flat[1:].reshape(3, 6), values(rng, (6, 3), dt),
              values(rng, (3, 6), other)]
    odd = [clgrad.tensor(odd_np[0]), clgrad.tensor(flat)[1:].view(3, 6),
           clgrad.tensor(np.ascontiguousarray(odd_np[2])).t(), clgrad.tensor(odd_np[3])]
    odd_np[2] = odd_np[2].T
    out = clgrad.cat(odd, 1)
    want = np.concatenate([a.astype(NP[out.dtype]) for a in odd_np], 1)
    np.testing.assert_array_equal(out.numpy(), want)
    assert plans[-1].gsize[0] == index.CAT_LOCAL  # 4 x 18 elements, one item each
    x_np = values(rng, (4, 16), dt)
    x = clgrad.tensor(x_np)
    pieces = [x[:, :4], x[:, 4:12], x[:, 12:]]  # views at offsets 0, 4 and 12 of rows of 16
    np.testing.assert_array_equal(clgrad.cat(pieces, 1).numpy(), x_np)
    np.testing.assert_array_equal(clgrad.cat(pieces[:1] * 3, 0).numpy(),
                                  np.concatenate([x_np[:, :4]] * 3, 0))


def test_cat_and_stack_launch_once_per_eight_inputs():
    """cat copies up to 8 inputs in one launch (mixed dtypes and layouts too), more in
    batches of 8; stack (cat of unsqueezed views) likewise; empty inputs take no slot."""
    xs = [clgrad.randn(4, i + 1, 6) for i in range(17)]
    for n, launches in ((2, 1), (8, 1), (9, 2), (16, 2), (17, 3)):
        out, k = _launches(lambda: clgrad.cat(xs[:n], 1))
        assert k == launches, (n, k)
        np.testing.assert_array_equal(out.numpy(),
                                      np.concatenate([x.numpy() for x in xs[:n]], 1))
    mixed = [xs[0].transpose(0, 2), clgrad.ones(6, 1, 4, dtype=clgrad.float64),
             clgrad.zeros(6, 0, 4), xs[2].transpose(0, 2)[:, ::2]]
    out, k = _launches(lambda: clgrad.cat(mixed, 1))
    assert k == 1 and out.dtype is F64 and out.shape == (6, 4, 4)
    same = [clgrad.randn(3, 5) for _ in range(6)]
    out, k = _launches(lambda: clgrad.stack(same, 1))
    assert k == 1
    np.testing.assert_array_equal(out.numpy(), np.stack([s.numpy() for s in same], 1))


def test_cat_gradients_match_torch():
    """Gradients through cat (of views, in a larger graph: each input used again after the
    cat) against torch's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    arrays = [rng.standard_normal((2, n, 4, 4)) for n in (1, 3, 2, 4, 1, 2, 2, 3, 1, 5)]
    w = rng.standard_normal((2, 24, 4, 4))

    def run(lib, mk):
        leaves = [mk(a) for a in arrays]
        views = [v.transpose(2, 3) if i % 2 else v * 2 for i, v in enumerate(leaves)]
        y = lib.cat(views, 1)
        loss = (y * mk(w, False)).sum() + sum((v * v).sum() for v in views[:3])
        loss.backward()
        return [v.grad.numpy() for v in leaves]

    got = run(clgrad, lambda a, g=True: clgrad.tensor(a, requires_grad=g))
    want = run(torch, lambda a, g=True: torch.tensor(a, requires_grad=g))
    for g, t in zip(got, want):
        np.testing.assert_allclose(g, t, rtol=1e-12, atol=1e-12)


def test_cat_plans_follow_every_input_of_their_key():
    """cat keeps its launch plans per layout (Device.plans): cats that differ in one input of
    the key at a time (an input's offset, strides, dtype, order, the dim) give NumPy's
    answer."""
    rng = np.random.default_rng(10)
    base = rng.standard_normal((4, 9, 12))
    t = clgrad.tensor(base)
    variants = [[(base[:, :3], t[:, :3]), (base[:, 3:6], t[:, 3:6])],
                [(base[:, 1:4], t[:, 1:4]), (base[:, 3:6], t[:, 3:6])],
                [(base[:, 1:4], t[:, 1:4]), (base[:, 4:7], t[:, 4:7])],
                [(base[:, 4:7], t[:, 4:7]), (base[:, 1:4], t[:, 1:4])],
                [(base[:, :3, ::-1].copy(), t[:, :3].flip(2)), (base[:, 3:6], t[:, 3:6])],
                [(base[:, :3].astype(np.float32), t[:, :3].float()),
                 (base[:, 3:6], t[:, 3:6])],
                [(base[:, :3].astype(np.float32), t[:, :3].float()),
                 (base[:, 3:6].astype(np.float32), t[:, 3:6].float())]]
    for parts in variants:
        for dim in (1, 2):
            got = clgrad.cat([v for _, v in parts], dim)
            want = np.concatenate([a for a, _ in parts], dim)
            assert got.dtype is (F32 if want.dtype == np.float32 else F64)
            np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("name, call", [
    ("scatter", lambda t, x, i, s: x.scatter(0, i, s)),
    ("scatter_", lambda t, x, i, s: x.scatter_(0, i, s)),
    ("scatter_add", lambda t, x, i, s: x.scatter_add(0, i, s)),
    ("torch.scatter", lambda t, x, i, s: t.scatter(x, 0, i, s)),
])
def test_scatter_refuses_a_src_of_another_dtype(name, call):
    """PyTorch's rule: a src tensor has self's dtype (an int64 self with a float src used to
    be truncated, scatter_add added the float's bits); a number src is cast."""
    x = clgrad.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match=r"scatter\(\): Expected self.dtype to be equal to "
                                           r"src.dtype"):
        call(clgrad, x, clgrad.tensor([0, 1]), clgrad.tensor([1.5, 2.5]))
    assert x.tolist() == [1, 2, 3]
    assert x.scatter(0, clgrad.tensor([0, 1]), 2.5).tolist() == [2, 2, 3]  # truncated
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=r"scatter\(\): Expected self.dtype to be equal to "
                                           r"src.dtype"):
        call(torch, torch.tensor([1, 2, 3]), torch.tensor([0, 1]), torch.tensor([1.5, 2.5]))
    assert torch.tensor([1, 2, 3]).scatter(0, torch.tensor([0, 1]), 2.5).tolist() == [2, 2, 3]


@pytest.mark.parametrize("call", [
    lambda t, x, v: x.index_put_((t.tensor([0, 1]),), v),
    lambda t, x, v: x.index_put((t.tensor([0, 1]),), v),
    lambda t, x, v: x.index_put_((t.tensor([0, 1]),), v, accumulate=True),
    lambda t, x, v: x.__setitem__(t.tensor([0, 1]), v),
    lambda t, x, v: x.__setitem__([0, 1], v),
    lambda t, x, v: x.__setitem__(t.tensor([True, False, True]), v),
])
@pytest.mark.parametrize("value", [[1.5, 2.5], [1, 2]])
def test_index_put_refuses_a_value_tensor_of_another_dtype(call, value):
    """PyTorch's "Index put requires the source and destination dtypes match" for a value
    tensor (float or int32 into int64; before, clgrad wrote wrong values); numbers are cast."""
    vdt = clgrad.int32 if value == [1, 2] else clgrad.float32
    src = "Int" if vdt is clgrad.int32 else "Float"
    x = clgrad.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match=f"Index put requires the source and destination "
                                           f"dtypes match, got Long for the destination and "
                                           f"{src} for the source"):
        call(clgrad, x, clgrad.tensor(value, dtype=vdt))
    assert x.tolist() == [1, 2, 3]
    x[clgrad.tensor([0, 2])] = 2.5              # a number: truncated, as PyTorch
    assert x.tolist() == [2, 2, 2]
    torch = pytest.importorskip("torch")
    tdt = torch.int32 if vdt is clgrad.int32 else torch.float32
    with pytest.raises(RuntimeError, match=f"Index put requires the source and destination "
                                           f"dtypes match, got Long for the destination and "
                                           f"{src} for the source"):
        call(torch, torch.tensor([1, 2, 3]), torch.tensor(value, dtype=tdt))


def test_setitem_0dim_value_tensor_of_another_dtype():
    """x[idx] = 0-dim float tensor raises as index_put_ (PyTorch); x[mask] = it is a masked
    fill in PyTorch, which casts: both kept."""
    x = clgrad.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="Index put requires the source and destination "
                                           "dtypes match"):
        x[clgrad.tensor([0, 1])] = clgrad.tensor(1.5)
    x[clgrad.tensor([True, False, True])] = clgrad.tensor(1.5)
    assert x.tolist() == [1, 2, 1]
    torch = pytest.importorskip("torch")
    y = torch.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="Index put requires the source and destination "
                                           "dtypes match"):
        y[torch.tensor([0, 1])] = torch.tensor(1.5)
    y[torch.tensor([True, False, True])] = torch.tensor(1.5)
    assert x.tolist() == y.tolist()


@pytest.fixture
def deterministic():
    clgrad.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        clgrad.use_deterministic_algorithms(False)


def test_scatter_adds_are_deterministic_when_asked(deterministic, monkeypatch):
    """use_deterministic_algorithms(True): the floating scatter-adds (scatter_add, index_add,
    the backward of gather / index_select / embedding, gradients summed into overlapping
    views) add in index order: bit-equal to NumPy's sequential float32 add.at, run to run."""
    index_mod = sys.modules["clgrad.ops.index"]
    calls, real = [], index_mod.add_at_host
    monkeypatch.setattr(index_mod, "add_at_host", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(7)
    src = rng.standard_normal((300, 3)).astype(np.float32) * 1e3
    idx = rng.integers(0, 4, (300, 3))
    want = np.zeros((4, 3), np.float32)
    np.add.at(want, (idx, np.arange(3)[None, :]), src)     # float32, in index order
    got = clgrad.zeros(4, 3).scatter_add(0, clgrad.tensor(idx), clgrad.tensor(src))
    np.testing.assert_array_equal(got.numpy(), want)
    rows = rng.integers(0, 5, 200)
    vals = rng.standard_normal((200, 2)).astype(np.float32) * 1e3
    want = np.zeros((5, 2), np.float32)
    np.add.at(want, rows, vals)
    got = clgrad.zeros(5, 2).index_add(0, clgrad.tensor(rows), clgrad.tensor(vals))
    np.testing.assert_array_equal(got.numpy(), want)
    w = clgrad.zeros(5, 2, requires_grad=True)          # embedding's backward: the same sum
    (clgrad.nn.functional.embedding(clgrad.tensor(rows), w) * clgrad.tensor(vals)).sum() \
        .backward()
    np.testing.assert_array_equal(w.grad.numpy(), want)
    x = clgrad.zeros(3, requires_grad=True)             # overlapping views' gradients
    v = x.as_strided((4, 2), (0, 1))
    g = rng.standard_normal((4, 2)).astype(np.float32)
    v.backward(clgrad.tensor(g))
    want = np.zeros(3, np.float32)
    np.add.at(want, np.tile([0, 1], 4), g.reshape(-1))
    np.testing.assert_array_equal(x.grad.numpy(), want)
    assert len(calls) == 4       # every floating scatter-add above ran in index order
    ints = clgrad.zeros(4, 3, dtype=clgrad.int64).scatter_add(
        0, clgrad.tensor(idx), clgrad.tensor(idx))      # integers: the kernel (any order)
    want = np.zeros((4, 3), np.int64)
    np.add.at(want, (idx, np.arange(3)[None, :]), idx)
    np.testing.assert_array_equal(ints.numpy(), want)


def test_cat_on_a_cached_signature_replays_and_matches_numpy():
    """cat keeps what its general path did per signature (every input's layout and dtype, the
    dim) and replays it: three rounds of new data per case, against NumPy, with the gradient
    slices; cases cover one launch, a launch plus a lone copy (9 inputs), several launches,
    1-D empties skipped, zero-size parts, promotion, transposed and offset views, one tensor
    given twice, a negative dim and stack."""
    rng = np.random.default_rng(7)

    def case(k):
        a = rng.standard_normal((4, 3, 5)).astype(np.float32)
        views = {
            "two": ([a, a[:, :2] * 2], 1),
            "nine": ([a + i for i in range(9)], 0),
            "seventeen": ([a[:, i % 3:i % 3 + 1] for i in range(17)], -2),
            "empties": ([np.zeros(0, np.float32), a.reshape(-1), np.zeros(0, np.float32),
                         a[0].reshape(-1)], 0),
            "zero_size": ([a, a[:, :0], a[:, 1:]], 1),
            "promote": ([a.astype(np.float64), a[:1].astype(np.float32)], 0),
        }
        return views[k]

    for k in ("two", "nine", "seventeen", "empties", "zero_size", "promote"):
        for _ in range(3):
            arrays, d = case(k)
            ts = [clgrad.tensor(x, requires_grad=x.dtype.kind == "f") for x in arrays]
            out = clgrad.cat(ts, d)
            np.testing.assert_array_equal(out.detach().numpy(), np.concatenate(arrays, d),
                                          err_msg=k)
            out.sum().backward()
            for t, x in zip(ts, arrays):
                if x.ndim == 1 and x.size == 0:  # skipped (PyTorch's legacy rule): no grad
                    continue
                np.testing.assert_array_equal(t.grad.numpy(), np.ones_like(x), err_msg=k)
    for _ in range(3):
        a = rng.standard_normal((6, 4)).astype(np.float32)
        t = clgrad.tensor(a)
        got = clgrad.cat([t.t(), t.t()[1:], t.t()], 0).numpy()  # views, one object twice
        np.testing.assert_array_equal(got, np.concatenate([a.T, a.T[1:], a.T], 0))
        got = clgrad.stack([t, t * 2, t + 1], 1).numpy()
        np.testing.assert_array_equal(got, np.stack([a, a * 2, a + 1], 1))


def test_cat_errors_and_a_numpy_dim_as_pytorch():
    """A 0-dim input is PyTorch's RuntimeError naming its position (an IndexError from inside
    before); a NumPy integer dim is taken (PyTorch takes it), a bool or float dim is not."""
    a = clgrad.ones(2, 3)
    for bad in ([clgrad.tensor(3.0), clgrad.tensor(3.0)], [clgrad.zeros(0), clgrad.tensor(3.0)]):
        pos = 0 if bad[0].ndim == 0 else 1
        with pytest.raises(RuntimeError, match=rf"zero-dimensional tensor \(at position {pos}\)"):
            clgrad.cat(bad)
    for d in (np.int64(1), np.int32(-1)):
        np.testing.assert_array_equal(clgrad.cat([a, a * 2], d).numpy(),
                                      np.concatenate([np.ones((2, 3)), np.full((2, 3), 2)], 1))
    np.testing.assert_array_equal(a.sum(np.int64(0)).numpy(), np.full(3, 2.0))
    for d in (True, 1.0, np.bool_(True)):
        with pytest.raises(TypeError, match="expected dim to be an int"):
            clgrad.cat([a, a], d)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_index_put_accumulate_16_bit_floats_adds_fractions(dt):
    """index_put_(accumulate=True) of float16 added in an int32 copy before (0.5 + 0.25 was
    0); float16 and bfloat16 now add in float32 (hand-computed sums, exact in both)."""
    d = getattr(clgrad, dt)
    if d is clgrad.float16 and not clgrad.default_device().fp16:
        pytest.skip("no cl_khr_fp16")
    x = clgrad.zeros(3, dtype=d)
    x.index_put_((clgrad.tensor([0, 0, 1, 0]),),
                 clgrad.tensor([0.5, 0.25, 1.5, -0.125], dtype=d), accumulate=True)
    assert x.dtype is d and x.tolist() == [0.625, 1.5, 0.0]
