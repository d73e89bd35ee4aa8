"""sort, argsort, topk, unique against NumPy's stable sorts (float64), on strided views, with ties
and NaN, rows of 1..2000 elements; gradients by finite differences; torch as an extra check."""
import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck
from strided import strided

LENGTHS = [1, 2, 3, 5, 17, 33, 64, 257, 1000, 1025, 2000, 2500]  # 3 kernels: <=32, <=2048, more


def ref_argsort(a, axis, descending):
    """Stable argsort with NaN as the largest value (PyTorch's order), NumPy only."""
    a = np.moveaxis(np.asarray(a, dtype=np.float64), axis, -1)
    nan = np.isnan(a)
    filled = np.where(nan, 0.0, a)
    out = np.empty(a.shape, dtype=np.int64)
    for idx in np.ndindex(a.shape[:-1]):
        if descending:  # NaN first, then descending values, ties in index order
            out[idx] = np.lexsort((-filled[idx], ~nan[idx]))
        else:
            out[idx] = np.lexsort((filled[idx], nan[idx]))
    return np.moveaxis(out, -1, axis)


def _row(rng, n):
    """Ties (small integers), both zeros' signs, infinities and NaNs."""
    v = rng.integers(-5, 6, n).astype(np.float64)
    k = max(1, n // 7)
    v[rng.integers(0, n, k)] = np.nan
    v[rng.integers(0, n, k)] = np.inf
    v[rng.integers(0, n, k)] = -np.inf
    v[rng.integers(0, n, k)] = -0.0
    return v


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("n", LENGTHS)
def test_sort_rows_of_many_lengths(n, descending):
    a = np.stack([_row(np.random.default_rng(n), n), _row(np.random.default_rng(n + 1), n)])
    vals, idx = clgrad.sort(strided(a), dim=1, descending=descending)
    want = ref_argsort(a, 1, descending)
    np.testing.assert_array_equal(idx.numpy(), want)
    np.testing.assert_array_equal(vals.numpy(), np.take_along_axis(a, want, 1))
    assert idx.dtype is clgrad.int64 and vals.dtype is clgrad.float64


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", [clgrad.float32, clgrad.int64, clgrad.int32])
def test_sort_any_dim_of_a_strided_view(dim, dtype):
    a = np.random.default_rng(3).integers(-4, 5, (4, 5, 6)).astype(np.float64)
    if dtype is clgrad.float32:
        a[1, 2, 3] = a[0, 0, 0] = np.nan
    x = strided(a, dtype)
    assert not x.is_contiguous()
    for desc in (False, True):
        vals, idx = x.sort(dim, descending=desc)
        want = ref_argsort(a, dim, desc)
        np.testing.assert_array_equal(idx.numpy(), want)
        np.testing.assert_array_equal(vals.numpy(), np.take_along_axis(a, want, dim))
        assert vals.dtype is dtype
        np.testing.assert_array_equal(x.argsort(dim, descending=desc).numpy(), want)


def test_sort_bool_zero_dim_and_empty():
    b = clgrad.tensor([True, False, True, False])
    v, i = clgrad.sort(b)
    assert v.tolist() == [False, False, True, True] and i.tolist() == [1, 3, 0, 2]
    assert v.dtype is clgrad.bool
    v, i = clgrad.sort(clgrad.tensor(2.5))
    assert v.shape == () and v.item() == 2.5 and i.item() == 0
    v, i = clgrad.zeros(3, 0).sort(1)
    assert v.shape == (3, 0) and i.shape == (3, 0)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("n,k", [(1, 1), (5, 0), (5, 5), (17, 3), (257, 10), (2000, 7),
                                 (40, 33), (300, 64), (2500, 40)])
def test_topk_is_the_head_of_the_stable_sort(n, k, largest):
    a = np.stack([_row(np.random.default_rng(n + 7), n) for _ in range(3)])
    vals, idx = clgrad.topk(strided(a), k, dim=1, largest=largest)
    want = ref_argsort(a, 1, largest)[:, :k]
    np.testing.assert_array_equal(idx.numpy(), want)
    np.testing.assert_array_equal(vals.numpy(), np.take_along_axis(a, want, 1))
    vals0, idx0 = strided(a.T).topk(k, dim=0, largest=largest, sorted=False)
    np.testing.assert_array_equal(idx0.numpy(), want.T)


def test_topk_hand_values_and_errors():
    x = clgrad.tensor([[1.0, 5.0, 3.0, 5.0], [float("nan"), 0.0, 2.0, -1.0]])
    v, i = x.topk(2)
    assert i.tolist() == [[1, 3], [0, 2]]  # ties: lower index first; NaN is the largest
    assert v[0].tolist() == [5.0, 5.0] and np.isnan(v[1, 0].item()) and v[1, 1].item() == 2.0
    v, i = x.topk(1, dim=0, largest=False)
    assert i.tolist() == [[0, 1, 1, 1]]
    with pytest.raises(RuntimeError, match="k in"):
        x.topk(5)
    with pytest.raises(IndexError):
        x.topk(1, dim=2)


def test_gradients_flow_through_the_permutation():
    a = np.random.default_rng(4).permutation(24).reshape(4, 6) * 0.3 - 2.0
    x = clgrad.tensor(a, dtype=clgrad.float64, requires_grad=True)
    assert gradcheck(lambda t: t.t().sort(dim=0, descending=True).values, (x,))
    assert gradcheck(lambda t: t.topk(3, dim=1).values, (x,))
    assert gradcheck(lambda t: t.topk(2, dim=0, largest=False).values * 2.0, (x,))
    v, _ = x.topk(2, dim=1)
    v.sum().backward()
    want = np.zeros_like(a)
    np.put_along_axis(want, np.argsort(-a, 1)[:, :2], 1.0, 1)
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_unique():
    a = np.array([[3, 1, 2], [1, 3, 3]])
    x = clgrad.tensor(a)
    np.testing.assert_array_equal(clgrad.unique(x).numpy(), [1, 2, 3])
    vals, inv, counts = x.unique(return_inverse=True, return_counts=True)
    assert vals.tolist() == [1, 2, 3] and counts.tolist() == [2, 1, 3]
    np.testing.assert_array_equal(inv.numpy(), [[2, 0, 1], [0, 2, 2]])
    rows, inv = clgrad.unique(clgrad.tensor([[1, 2], [0, 5], [1, 2]]), dim=0,
                              return_inverse=True)
    assert rows.tolist() == [[0, 5], [1, 2]] and inv.tolist() == [1, 0, 1]
    f = clgrad.tensor([2.0, float("nan"), 1.0, float("nan"), 2.0])
    vals, counts = f.unique(return_counts=True)
    assert vals[:2].tolist() == [1.0, 2.0] and np.isnan(vals[2:].numpy()).all()
    assert counts.tolist() == [1, 2, 1, 1]  # each NaN is its own value (PyTorch)


def test_sort_and_topk_match_torch():
    torch = pytest.importorskip("torch")
    a = np.stack([_row(np.random.default_rng(11), 300) for _ in range(4)])
    for desc in (False, True):
        tv, ti = torch.sort(torch.tensor(a), dim=1, descending=desc, stable=True)
        v, i = clgrad.sort(clgrad.tensor(a, dtype=clgrad.float64), dim=1, descending=desc)
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
        np.testing.assert_array_equal(v.numpy(), tv.numpy())
    d = np.random.default_rng(12).permutation(400).reshape(4, 100).astype(np.float64)
    d[0, 5] = np.nan
    for largest in (True, False):
        tv, ti = torch.topk(torch.tensor(d), 9, dim=1, largest=largest)
        v, i = clgrad.topk(clgrad.tensor(d, dtype=clgrad.float64), 9, dim=1, largest=largest)
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
        np.testing.assert_array_equal(v.numpy(), tv.numpy())
    tvals, tinv, tcounts = torch.unique(torch.tensor([2.0, np.nan, 1.0, np.nan]),
                                        return_inverse=True, return_counts=True)
    vals, inv, counts = clgrad.unique(clgrad.tensor([2.0, np.nan, 1.0, np.nan]),
                                      return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(vals.numpy(), tvals.numpy())
    np.testing.assert_array_equal(inv.numpy(), tinv.numpy())
    np.testing.assert_array_equal(counts.numpy(), tcounts.numpy())
