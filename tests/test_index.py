"""cat, stack, split/chunk round trips, index_select, gather, scatter_add, advanced indexing and
index writes, on strided inputs, against NumPy."""
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import clgrad
from strided import NP, shapes, strided_pair, values

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
    idx = data.draw(st.lists(st.integers(-n, n - 1), max_size=6), label="index")
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
    x[clgrad.tensor([4, 0, -2])] = clgrad.tensor([[1.0, 2, 3]])
    x_np[[4, 0, -2]] = [[1, 2, 3]]
    x[[1]] = 7.0
    x_np[[1]] = 7.0
    np.testing.assert_array_equal(x.numpy(), x_np)
    assert x._version > v


# -- embedding / one_hot ----------------------------------------------------------------------
def test_embedding_forward_backward_padding_idx():
    import clgrad.nn.functional as F
    rng = np.random.default_rng(8)
    w = rng.standard_normal((6, 3))
    idx = np.array([[1, 4, 1], [0, 5, 4]])
    wt = clgrad.tensor(w, requires_grad=True)
    it = clgrad.tensor(idx.T.copy()).t()                     # a non-contiguous index view
    out = F.embedding(it, wt, padding_idx=4)
    np.testing.assert_array_equal(out.numpy(), w[idx])
    g = rng.standard_normal(out.shape)
    out.backward(clgrad.tensor(g))
    ref = np.zeros_like(w)
    np.add.at(ref, idx, g)                                   # repeated indices add up
    ref[4] = 0                                               # padding_idx gets no gradient
    np.testing.assert_allclose(wt.grad.numpy(), ref, rtol=1e-12)
    emb = clgrad.nn.Embedding(6, 3, padding_idx=0)
    np.testing.assert_array_equal(emb.weight.numpy()[0], 0)
    assert emb(clgrad.tensor([0, 2])).shape == (2, 3)
    with pytest.raises(IndexError, match="embedding: index"):
        F.embedding(clgrad.tensor([6]), wt)
    with pytest.raises(IndexError, match="embedding: index -1"):
        F.embedding(clgrad.tensor([-1]), wt)
    with pytest.raises(NotImplementedError, match="max_norm"):
        F.embedding(it, wt, max_norm=1.0)


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
