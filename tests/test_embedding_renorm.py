"""F.embedding's max_norm (embedding_renorm_), scale_grad_by_freq, and torch.embedding_bag's
ATen 4-tuple. Oracles: float64 NumPy written from PyTorch's kernels (embedding_renorm_cpu_:
scale = max_norm / (norm + 1e-7) per distinct row; embedding_dense_backward: gradient / count;
_embedding_bag_cpu: offset2bag, bag_size, max_indices), hand-computed numbers, and PyTorch 2.14
where importable."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn

RNG = np.random.default_rng(1207)


def torch_or_skip():
    return pytest.importorskip("torch")


def renorm_np(w, idx, max_norm, p):
    """PyTorch's embedding_renorm_ in float64: each distinct row once."""
    w = w.copy()
    for r in np.unique(idx):
        norm = np.max(np.abs(w[r])) if p == np.inf else np.sum(np.abs(w[r]) ** p) ** (1 / p)
        if norm > max_norm:
            w[r] *= max_norm / (norm + 1e-7)
    return w


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, np.inf])
def test_max_norm_renormalises_named_rows_in_place(p):
    w = RNG.standard_normal((7, 4)) * 2
    w[6] *= 0.01                                                  # a row under max_norm
    idx = np.array([[1, 4, 1], [0, 6, 4]])                        # repeated: renormed once
    wt = clgrad.tensor(w, requires_grad=True)
    v0 = wt._version
    out = F.embedding(clgrad.tensor(idx.T.copy()).t(), wt, max_norm=1.5, norm_type=p)
    want = renorm_np(w, idx, 1.5, p)
    np.testing.assert_allclose(wt.detach().numpy(), want, rtol=1e-14, atol=0)
    assert wt._version > v0                                       # written in place
    np.testing.assert_array_equal(wt.detach().numpy()[[2, 3, 5]], w[[2, 3, 5]])  # not named
    np.testing.assert_array_equal(wt.detach().numpy()[6], w[6])   # under max_norm
    np.testing.assert_allclose(out.detach().numpy(), want[idx], rtol=1e-14)
    g = RNG.standard_normal(out.shape)
    out.backward(clgrad.tensor(g))
    ref = np.zeros_like(w)
    np.add.at(ref, idx, g)                      # the lookup's gradient; renorm not recorded
    np.testing.assert_allclose(wt.grad.numpy(), ref, rtol=1e-14)


def test_max_norm_hand_numbers_padding_and_nan():
    # row 0 (3, 4): norm 5 > 1 -> * 1 / (5 + 1e-7); row 1 (0.6, 0.8): norm 1, not > 1
    w = clgrad.tensor([[3.0, 4.0], [0.6, 0.8], [float("nan"), 1.0], [6.0, 8.0]],
                      dtype=clgrad.float64)
    F.embedding(clgrad.tensor([0, 1, 2, 3, 0]), w, padding_idx=3, max_norm=1.0)
    s = 1 / (5 + 1e-7)
    got = w.numpy()
    np.testing.assert_allclose(got[0], [3 * s, 4 * s], rtol=1e-15)
    np.testing.assert_array_equal(got[1], [0.6, 0.8])
    assert np.isnan(got[2, 0]) and got[2, 1] == 1.0               # a NaN norm: left alone
    np.testing.assert_allclose(got[3], [6 / (10 + 1e-7), 8 / (10 + 1e-7)], rtol=1e-15)  # pad


def test_embedding_module_max_norm_and_repr():
    emb = nn.Embedding(5, 3, padding_idx=1, max_norm=1.0, norm_type=1.0,
                       scale_grad_by_freq=True)
    with clgrad.no_grad():
        emb.weight.copy_(clgrad.tensor(np.arange(15.0).reshape(5, 3)))
    emb(clgrad.tensor([4, 4, 2]))
    want = renorm_np(np.arange(15.0).reshape(5, 3), [4, 2], 1.0, 1.0)
    np.testing.assert_allclose(emb.weight.detach().numpy(), want, rtol=1e-6)
    assert repr(emb) == ("Embedding(5, 3, padding_idx=1, max_norm=1.0, norm_type=1.0, "
                         "scale_grad_by_freq=True)")
    assert repr(nn.Embedding(5, 3, max_norm=2)) == "Embedding(5, 3, max_norm=2)"
    with pytest.raises(NotImplementedError, match="sparse=True"):
        nn.Embedding(5, 3, sparse=True)
    with pytest.raises(NotImplementedError, match="sparse=True"):
        nn.EmbeddingBag(5, 3, sparse=True)


def test_embedding_renorm_top_level():
    w = RNG.standard_normal((6, 3)) * 3
    wt = clgrad.tensor(w)
    idx = np.array([5, 0, 5, 2])
    assert clgrad.embedding_renorm_(wt, clgrad.tensor(idx), 0.5, 2.0) is wt
    np.testing.assert_allclose(wt.numpy(), renorm_np(w, idx, 0.5, 2), rtol=1e-14)
    with pytest.raises(IndexError, match="embedding_renorm_"):
        clgrad.embedding_renorm_(wt, clgrad.tensor([6]), 0.5, 2.0)


@pytest.mark.parametrize("padding_idx", [None, 2])
def test_scale_grad_by_freq(padding_idx):
    w = RNG.standard_normal((5, 3))
    idx = np.array([[0, 2, 2], [4, 2, 0]])
    wt = clgrad.tensor(w, requires_grad=True)
    out = F.embedding(clgrad.tensor(idx), wt, padding_idx=padding_idx,
                      scale_grad_by_freq=True)
    np.testing.assert_array_equal(out.detach().numpy(), w[idx])
    g = RNG.standard_normal(out.shape)
    out.backward(clgrad.tensor(g))
    ref = np.zeros_like(w)
    count = np.bincount(idx.reshape(-1), minlength=5)
    np.add.at(ref, idx, g / count[idx][..., None])
    if padding_idx is not None:
        ref[padding_idx] = 0
    np.testing.assert_allclose(wt.grad.numpy(), ref, rtol=1e-14)
    # torch.embedding (ATen's order; a negative padding_idx is none)
    w2 = clgrad.tensor(w, requires_grad=True)
    clgrad.embedding(w2, clgrad.tensor(idx), -1, True).backward(clgrad.tensor(g))
    ref = np.zeros_like(w)
    np.add.at(ref, idx, g / count[idx][..., None])
    np.testing.assert_allclose(w2.grad.numpy(), ref, rtol=1e-14)
    with pytest.raises(NotImplementedError, match="sparse"):
        clgrad.embedding(w2, clgrad.tensor(idx), -1, False, True)


def test_embedding_bag_max_norm_renorms_all_input_and_sgbf():
    w = RNG.standard_normal((6, 3)) * 3
    wt = clgrad.tensor(w, requires_grad=True)
    idx = np.array([1, 2, 4, 5, 4, 3])
    out = F.embedding_bag(clgrad.tensor(idx), wt, clgrad.tensor([0, 2]), max_norm=1.0,
                          padding_idx=4, mode="sum", scale_grad_by_freq=True)
    want = renorm_np(w, idx, 1.0, 2)                   # the padding row too, as PyTorch's
    np.testing.assert_allclose(wt.detach().numpy(), want, rtol=1e-14)
    np.testing.assert_allclose(out.detach().numpy(),
                               [want[1] + want[2], want[5] + want[3]], rtol=1e-14)
    g = RNG.standard_normal(out.shape)
    out.backward(clgrad.tensor(g))
    ref = np.zeros_like(w)
    for b, rows in ((0, [1, 2]), (1, [5, 3])):
        for r in rows:
            ref[r] += g[b]                              # each index occurs once here
    np.testing.assert_allclose(wt.grad.numpy(), ref, rtol=1e-14)
    wt2 = clgrad.tensor(w, requires_grad=True)      # repeated indices: divided by the count
    F.embedding_bag(clgrad.tensor([[1, 1, 2], [2, 0, 1]]), wt2, mode="mean",
                    scale_grad_by_freq=True).sum().backward()
    cnt = {0: 1, 1: 3, 2: 2}
    want = np.zeros_like(w)
    for row, hits in ((1, 3), (2, 2), (0, 1)):
        want[row] = hits / 3 / cnt[row]
    np.testing.assert_allclose(wt2.grad.numpy(), want, rtol=1e-14)


# -- torch.embedding_bag (ATen) ---------------------------------------------------------------
IDX = np.array([1, 2, 4, 5, 4, 3, 2, 0])
OFF = np.array([0, 2, 2, 5])                 # bags [1 2] [] [4 5 4] [3 2 0]


def _aten(w, mode, pad=None, ilo=False, rg=False, index_dtype=clgrad.int64):
    wt = clgrad.tensor(w, requires_grad=rg)
    off = np.append(OFF, len(IDX)) if ilo else OFF
    return wt, clgrad.embedding_bag(wt, clgrad.tensor(IDX).to(index_dtype),
                                    clgrad.tensor(off).to(index_dtype), False, mode, False,
                                    None, ilo, pad)


def test_aten_embedding_bag_hand_values():
    w = np.arange(18.0).reshape(6, 3)
    # mode 1 (mean), padding 4: bag sizes 2 0 1 3; max_indices repeats bag_size (PyTorch's)
    _, (out, o2b, size, mi) = _aten(w, 1, pad=4)
    np.testing.assert_allclose(out.numpy(), [(w[1] + w[2]) / 2, [0, 0, 0], w[5],
                                             (w[3] + w[2] + w[0]) / 3], rtol=1e-15)
    assert o2b.tolist() == [0, 0, 2, 2, 2, 3, 3, 3]
    assert size.tolist() == [2, 0, 1, 3] and mi.tolist() == [2, 0, 1, 3]
    # mode 2 (max): the row of each column's maximum, 0 for the empty bag
    _, (out, o2b, size, mi) = _aten(w, 2, pad=-1)                   # -1: row 5 (ATen's)
    assert mi.tolist() == [[2, 2, 2], [0, 0, 0], [4, 4, 4], [3, 3, 3]]
    assert size.tolist() == [2, 0, 2, 3]
    np.testing.assert_array_equal(out.numpy(), [w[2], [0, 0, 0], w[4], w[3]])
    # mode 0 (sum): bag_size and max_indices zeros; float64 computes offset2bag
    _, (out, o2b, size, mi) = _aten(w, 0)
    assert o2b.tolist() == [0, 0, 2, 2, 2, 3, 3, 3] and size.tolist() == [0] * 4 == mi.tolist()
    # float32 without padding: PyTorch's fast path leaves offset2bag empty
    _, (out, o2b, size, mi) = _aten(w.astype(np.float32), 0)
    assert tuple(o2b.shape) == (0,)
    # include_last_offset: bag_size has len(offsets) entries unless weight requires grad
    assert tuple(_aten(w, 0, ilo=True)[1][2].shape) == (5,)
    assert tuple(_aten(w, 0, ilo=True, rg=True)[1][2].shape) == (4,)
    # int32 indices give int32 results
    r = _aten(w, 1, index_dtype=clgrad.int32)[1]
    assert all(t.dtype is clgrad.int32 for t in r[1:])


def test_aten_embedding_bag_max_gradient_ties_and_nan():
    w = np.array([[1.0, 2.0], [1.0, 3.0], [0.0, 3.0]])
    wt = clgrad.tensor(w, requires_grad=True)
    out, _, _, mi = clgrad.embedding_bag(wt, clgrad.tensor([0, 1, 2]), clgrad.tensor([0]),
                                         False, 2, False, None, False, None)
    assert mi.tolist() == [[0, 1]]                          # the first of tied maxima
    out.sum().backward()
    np.testing.assert_array_equal(wt.grad.numpy(), [[1, 0], [0, 1], [0, 0]])
    w3 = clgrad.tensor([[2.0, 3.0], [1.0, float("nan")]], dtype=clgrad.float64)
    out, _, _, mi = clgrad.embedding_bag(w3, clgrad.tensor([0, 1]), clgrad.tensor([0]), False,
                                         2, False, None, False, None)
    assert out.numpy()[0, 0] == 2.0 and np.isnan(out.numpy()[0, 1])   # NaN in, NaN out
    assert mi.tolist() == [[0, 1]]


def test_aten_embedding_bag_errors():
    w = clgrad.tensor(np.ones((6, 3)))
    i, o = clgrad.tensor(IDX), clgrad.tensor(OFF)
    with pytest.raises(RuntimeError, match="mode"):
        clgrad.embedding_bag(w, i, o, False, 3, False, None, False, None)
    with pytest.raises(RuntimeError, match="indices to be a 1-D"):
        clgrad.embedding_bag(w, i.view(2, 4), o, False, 0, False, None, False, None)
    with pytest.raises(RuntimeError, match="max mode"):
        clgrad.embedding_bag(w, i, o, True, 2, False, None, False, None)
    with pytest.raises(NotImplementedError, match="sparse"):
        clgrad.embedding_bag(w, i, o, False, 0, True, None, False, None)
    with pytest.raises(RuntimeError, match="include_last_offset=True expects"):
        clgrad.embedding_bag(w, i, o, False, 0, False, None, True, None)
    with pytest.raises(RuntimeError, match="padding_idx"):
        clgrad.embedding_bag(w, i, o, False, 0, False, None, False, 6)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_aten_embedding_bag_against_torch(dtype):
    torch = torch_or_skip()
    w = RNG.standard_normal((6, 3)).astype(dtype)
    for mode in (0, 1, 2):
        for ilo in (False, True):
            for pad in (None, 4, -1):
                for rg in (False, True):
                    a, ra = _aten(w, mode, pad, ilo, rg)
                    b = torch.tensor(w, requires_grad=rg)
                    off = np.append(OFF, len(IDX)) if ilo else OFF
                    rb = torch.embedding_bag(b, torch.tensor(IDX), torch.tensor(off), False,
                                             mode, False, None, ilo, pad)
                    np.testing.assert_allclose(ra[0].detach().numpy(), rb[0].detach().numpy(),
                                               rtol=1e-6 if dtype == "float32" else 1e-14)
                    for x, y in zip(ra[1:], rb[1:]):
                        assert x.tolist() == y.tolist(), (mode, ilo, pad, rg)
                    if rg:
                        g = RNG.standard_normal(tuple(ra[0].shape)).astype(dtype)
                        ra[0].backward(clgrad.tensor(g))
                        rb[0].backward(torch.tensor(g))
                        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(),
                                                   rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_embedding_max_norm_against_torch(dtype):
    torch = torch_or_skip()
    w = (RNG.standard_normal((6, 3)) * 2).astype(dtype)
    idx = np.array([[1, 4, 1], [0, 5, 4]])
    for p in (2.0, 1.0, 3.0):
        a = clgrad.tensor(w, requires_grad=True)
        b = torch.tensor(w, requires_grad=True)
        oa = F.embedding(clgrad.tensor(idx), a, padding_idx=4, max_norm=1.5, norm_type=p,
                         scale_grad_by_freq=True)
        ob = torch.nn.functional.embedding(torch.tensor(idx), b, padding_idx=4, max_norm=1.5,
                                           norm_type=p, scale_grad_by_freq=True)
        g = RNG.standard_normal(tuple(oa.shape)).astype(dtype)
        oa.backward(clgrad.tensor(g))
        ob.backward(torch.tensor(g))
        ulp = 4 * np.finfo(dtype).eps
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=ulp)
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=ulp)


def test_sparse_raises_before_any_renormalisation():
    w = np.full((4, 2), 3.0)
    wt = clgrad.tensor(w)
    with pytest.raises(NotImplementedError, match="sparse=True"):
        F.embedding(clgrad.tensor([0, 1]), wt, max_norm=1.0, sparse=True)
    with pytest.raises(NotImplementedError, match="sparse=True"):
        F.embedding_bag(clgrad.tensor([[0, 1]]), wt, max_norm=1.0, sparse=True, mode="sum")
    np.testing.assert_array_equal(wt.numpy(), w)                 # untouched
