"""searchsorted, bucketize, isin (clgrad/ops/sort.py, kernels/sort.cl :: searchsorted) and
multinomial (clgrad/ops/random.py): NumPy oracles (np.searchsorted, np.isin), exact
properties and chi-square tests with fixed seeds; PyTorch where importable."""
import math

import numpy as np
import pytest

import clgrad

NAN = math.nan


# -- searchsorted, bucketize ---------------------------------------------------------------------
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_1d_against_numpy(side):
    rng = np.random.default_rng(0)
    seq = np.sort(rng.integers(-20, 20, 50)).astype(np.float64)  # ties included
    vals = rng.integers(-25, 25, (3, 7)).astype(np.float64)
    want = np.searchsorted(seq, vals, side=side)
    for kw in ({"right": side == "right"}, {"side": side}):
        got = clgrad.searchsorted(clgrad.tensor(seq), clgrad.tensor(vals), **kw)
        assert got.dtype is clgrad.int64 and got.shape == (3, 7)
        np.testing.assert_array_equal(got.numpy(), want)
    got = clgrad.searchsorted(clgrad.tensor(seq, dtype=clgrad.float32),
                              clgrad.tensor(vals).t(), side=side, out_int32=True)
    assert got.dtype is clgrad.int32
    np.testing.assert_array_equal(got.numpy(), want.T)
    b = clgrad.bucketize(clgrad.tensor(vals), clgrad.tensor(seq), right=side == "right")
    np.testing.assert_array_equal(b.numpy(), want)


def test_searchsorted_rows_sorter_scalars_and_nan():
    rng = np.random.default_rng(1)
    seq = np.sort(rng.normal(size=(2, 3, 9)), axis=-1)
    vals = rng.normal(size=(2, 3, 4))
    got = clgrad.searchsorted(clgrad.tensor(seq), clgrad.tensor(vals)).numpy()
    for i in np.ndindex(2, 3):
        np.testing.assert_array_equal(got[i], np.searchsorted(seq[i], vals[i]))
    unsorted = rng.permutation(seq[0, 0])
    sorter = np.argsort(unsorted)
    got = clgrad.searchsorted(clgrad.tensor(unsorted), clgrad.tensor(vals[0, 0]),
                              sorter=clgrad.tensor(sorter))
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(unsorted, vals[0, 0],
                                                               sorter=sorter))
    s = clgrad.tensor([1.0, 2.0, 3.0])
    assert clgrad.searchsorted(s, 2.5).shape == () and clgrad.searchsorted(s, 2.5).item() == 2
    assert clgrad.bucketize(2, s).item() == 1 and clgrad.bucketize(2, s, right=True).item() == 2
    # integer sequence, float values: compared in the promoted dtype
    assert clgrad.searchsorted(clgrad.tensor([1, 2, 3]), clgrad.tensor([2.5])).tolist() == [2]
    # PyTorch's comparisons: a NaN value goes last, -inf first
    assert clgrad.searchsorted(s, clgrad.tensor([NAN, -math.inf, math.inf])).tolist() == \
        [3, 0, 3]
    assert clgrad.searchsorted(clgrad.tensor([]), clgrad.tensor([1.0, 2.0])).tolist() == [0, 0]
    assert clgrad.searchsorted(s, clgrad.tensor([])).shape == (0,)
    bf = clgrad.searchsorted(s.to(clgrad.bfloat16), clgrad.tensor([2.0], dtype=clgrad.bfloat16))
    assert bf.dtype is clgrad.int64 and bf.tolist() == [1]
    out = clgrad.empty(2, dtype=clgrad.int64)
    assert clgrad.searchsorted(s, clgrad.tensor([0.0, 9.0]), out=out) is out
    assert out.tolist() == [0, 3]


def test_searchsorted_errors():
    s = clgrad.tensor([1.0, 2.0, 3.0])
    msg = r"torch\.searchsorted\(\): "
    with pytest.raises(RuntimeError, match=msg + "boundaries tensor should be 1 dimension or"):
        clgrad.searchsorted(clgrad.ones(2, 3), clgrad.ones(3, 3))
    with pytest.raises(RuntimeError, match=msg + "boundaries tensor should have positive"):
        clgrad.searchsorted(clgrad.tensor(1.0), s)
    with pytest.raises(RuntimeError, match=msg + "side can only be 'left' or 'right'"):
        clgrad.searchsorted(s, s, side="middle")
    with pytest.raises(RuntimeError, match=msg + "side and right can't be set to opposites"):
        clgrad.searchsorted(s, s, side="left", right=True)
    with pytest.raises(RuntimeError, match=msg + "boundary and sorter must have the same size"):
        clgrad.searchsorted(s, s, sorter=clgrad.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=msg + "sorter must be a tensor of long dtype"):
        clgrad.searchsorted(s, s, sorter=clgrad.tensor([0.0, 1.0, 2.0]))
    for bad in ([0, 1, 3], [0, 1, -1]):
        with pytest.raises(RuntimeError, match=msg + "sorter index out of range"):
            clgrad.searchsorted(s, s, sorter=clgrad.tensor(bad))
    with pytest.raises(RuntimeError, match=msg + "input value can be a scalar only"):
        clgrad.searchsorted(clgrad.ones(2, 3), 1.0)
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        clgrad.searchsorted(s, [1.0])
    with pytest.raises(RuntimeError, match=r"boundaries tensor must be 1 dimension, but got "
                       r"dim\(2\)"):
        clgrad.bucketize(s, clgrad.ones(2, 2))


def test_searchsorted_bucketize_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    seq = np.sort(rng.integers(0, 10, (4, 12)), axis=-1).astype(np.float32)
    seq[1, -2:] = NAN
    vals = rng.integers(-1, 11, (4, 5)).astype(np.float32)
    vals[0, 0] = NAN
    for right in (False, True):
        got = clgrad.searchsorted(clgrad.tensor(seq), clgrad.tensor(vals), right=right)
        want = torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=right)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        got = clgrad.bucketize(clgrad.tensor(vals), clgrad.tensor(seq[0]), right=right)
        want = torch.bucketize(torch.tensor(vals), torch.tensor(seq[0]), right=right)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


# -- isin ----------------------------------------------------------------------------------------
def test_isin_against_numpy():
    rng = np.random.default_rng(3)
    el = rng.integers(0, 30, (4, 6))
    te = rng.integers(0, 30, 17)
    for invert in (False, True):
        got = clgrad.isin(clgrad.tensor(el).t(), clgrad.tensor(te), invert=invert)
        assert got.dtype is clgrad.bool and got.shape == (6, 4)
        np.testing.assert_array_equal(got.numpy(), np.isin(el.T, te, invert=invert))
    f = clgrad.tensor([1.0, 2.5, NAN, -0.0])
    assert clgrad.isin(f, clgrad.tensor([NAN, 0.0, 2.5])).tolist() == [False, True, False, True]
    assert clgrad.isin(clgrad.tensor([1, 2, 3]), clgrad.tensor([2.0, 3.5])).tolist() == \
        [False, True, False]
    assert clgrad.isin(clgrad.tensor([1, 2, 3]), 2).tolist() == [False, True, False]
    r = clgrad.isin(2, clgrad.tensor([1, 2, 3]))
    assert r.shape == () and r.item() is True
    assert clgrad.isin(clgrad.tensor([1, 2]), clgrad.tensor([], dtype=clgrad.int64),
                       invert=True).tolist() == [True, True]
    assert clgrad.isin(clgrad.tensor([1, 2]), clgrad.tensor([[2, 9], [4, 5]]),
                       assume_unique=True).tolist() == [False, True]
    with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin"):
        clgrad.isin(clgrad.tensor([1, 2]), clgrad.tensor([True]))
    with pytest.raises(TypeError):
        clgrad.isin(2, 3)


def test_isin_against_torch():
    torch = pytest.importorskip("torch")
    el = np.array([[1.0, NAN, 3.0], [-0.0, 7.0, 2.0]])
    te = np.array([0.0, 3.0, NAN, 7.0])
    for invert in (False, True):
        np.testing.assert_array_equal(
            clgrad.isin(clgrad.tensor(el), clgrad.tensor(te), invert=invert).numpy(),
            torch.isin(torch.tensor(el), torch.tensor(te), invert=invert).numpy())


# -- multinomial ---------------------------------------------------------------------------------
# chi-square bound: the 0.999 quantile of chi2 with k - 1 degrees of freedom, from the
# Wilson-Hilferty approximation (exact to ~1 %): a fixed-seed test that fails only when the
# counts are far from the expected ones.
def _chi2_999(dof):
    z = 3.090232  # the normal's 0.999 quantile
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3


def test_multinomial_with_replacement_distribution():
    w = np.array([1.0, 0.0, 2.0, 3.0, 4.0])
    clgrad.manual_seed(0)
    n = 20000
    idx = clgrad.multinomial(clgrad.tensor(w), n, replacement=True)
    assert idx.dtype is clgrad.int64 and idx.shape == (n,)
    counts = np.bincount(idx.numpy(), minlength=5)
    assert counts[1] == 0  # a zero weight is never drawn
    p = w / w.sum()
    nz = p > 0
    chi2 = np.sum((counts[nz] - n * p[nz]) ** 2 / (n * p[nz]))
    assert chi2 < _chi2_999(nz.sum() - 1)


def test_multinomial_without_replacement_distribution_and_properties():
    w = np.array([[1.0, 2.0, 3.0, 4.0], [0.0, 5.0, 0.0, 1.0]])
    clgrad.manual_seed(1)
    trials = 4000
    first = np.zeros((2, 4))
    for _ in range(trials // 400):
        idx = clgrad.multinomial(clgrad.tensor(np.tile(w, (200, 1))), 4).numpy()
        for r in range(idx.shape[0]):
            assert sorted(idx[r]) == [0, 1, 2, 3]  # each category once
            first[r % 2, idx[r, 0]] += 1
        assert set(idx[1::2, :2].reshape(-1).tolist()) <= {1, 3}  # zeros only after the rest
    # the first draw is a draw with probabilities w / sum(w)
    for r in range(2):
        p = w[r] / w[r].sum()
        nz = p > 0
        e = first[r, nz].sum() * p[nz]
        assert np.sum((first[r, nz] - e) ** 2 / e) < _chi2_999(nz.sum() - 1)
        assert first[r, ~nz].sum() == 0
    # the second draw of row 0 given a first: P(second = j | first = i) = w_j / (1 - w_i)
    clgrad.manual_seed(2)
    idx = clgrad.multinomial(clgrad.tensor(np.tile(w[:1], (6000, 1))), 2).numpy()
    pairs = np.zeros((4, 4))
    np.add.at(pairs, (idx[:, 0], idx[:, 1]), 1)
    p = w[0] / w[0].sum()
    want = np.array([[p[i] * p[j] / (1 - p[i]) if i != j else 0 for j in range(4)]
                     for i in range(4)]) * 6000
    off = want > 0
    assert np.all(pairs[~off] == 0)
    assert np.sum((pairs[off] - want[off]) ** 2 / want[off]) < _chi2_999(off.sum() - 1)


def test_multinomial_seeds_generator_and_faces():
    w = clgrad.tensor([[0.2, 0.3, 0.5], [1.0, 1.0, 1.0]])
    clgrad.manual_seed(7)
    a = clgrad.multinomial(w, 3, True)
    clgrad.manual_seed(7)
    b = w.multinomial(3, replacement=True)
    assert a.shape == (2, 3) and a.tolist() == b.tolist()
    g1, g2 = clgrad.Generator().manual_seed(5), clgrad.Generator().manual_seed(5)
    assert clgrad.multinomial(w, 2, generator=g1).tolist() == \
        clgrad.multinomial(w, 2, generator=g2).tolist()
    assert clgrad.multinomial(clgrad.tensor([0.0, 0.0, 1.0]), 1).tolist() == [2]
    assert clgrad.multinomial(clgrad.tensor([1.0, 0.0, 0.0]), 2).tolist()[0] == 0
    assert clgrad.multinomial(clgrad.ones(0, 3), 2).shape == (0, 2)
    if clgrad.default_device().fp16:  # (a device without cl_khr_fp16 has no float16)
        h = clgrad.multinomial(clgrad.tensor([1.0, 3.0], dtype=clgrad.float16), 2)
        assert sorted(h.tolist()) == [0, 1]
    assert clgrad.multinomial(clgrad.tensor([1.0, 3.0], dtype=clgrad.bfloat16), 1).shape == (1,)


def test_multinomial_errors():
    bad = "probability tensor contains either `inf`, `nan` or element < 0"
    for w in ([1.0, -1.0], [1.0, math.inf], [1.0, NAN]):
        with pytest.raises(RuntimeError, match=bad):
            clgrad.multinomial(clgrad.tensor(w), 1)
    for w in ([0.0, 0.0], [[1.0, 1.0], [0.0, 0.0]]):
        with pytest.raises(RuntimeError, match=r"invalid multinomial distribution \(sum of "):
            clgrad.multinomial(clgrad.tensor(w), 1, True)
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        clgrad.multinomial(clgrad.tensor([1.0, 1.0]), 3)
    for n in (0, -1):
        with pytest.raises(RuntimeError, match="cannot sample n_sample <= 0 samples"):
            clgrad.multinomial(clgrad.tensor([1.0, 1.0]), n)
    with pytest.raises(RuntimeError, match="multinomial only supports floating-point dtypes"):
        clgrad.multinomial(clgrad.tensor([1, 1]), 1)
    for shape in ((), (2, 2, 2)):
        with pytest.raises(RuntimeError, match="prob_dist must be 1 or 2 dim"):
            clgrad.multinomial(clgrad.ones(*shape), 1)
    with pytest.raises(TypeError, match="'num_samples'"):
        clgrad.multinomial(clgrad.ones(3), 2.0)
    with pytest.raises(TypeError):
        clgrad.multinomial(clgrad.ones(3), 1, generator=3)


def test_multinomial_errors_match_torch():
    torch = pytest.importorskip("torch")
    for args in (([1.0, -1.0], 1), ([0.0, 0.0], 1), ([1.0, 1.0], 3), ([1.0, 1.0], 0)):
        with pytest.raises(RuntimeError) as want:
            torch.multinomial(torch.tensor(args[0]), args[1])
        with pytest.raises(RuntimeError) as got:
            clgrad.multinomial(clgrad.tensor(args[0]), args[1])
        assert str(got.value) == str(want.value)


def test_isin_with_nan_among_the_test_elements():
    """NaN never equals anything, and a NaN among test_elements must not hide the others
    (it sorts last; NumPy's isin is the oracle)."""
    inf, nan = float("inf"), float("nan")
    for el, te in (([1.0, 0.0, -0.0, 3.0, inf, nan], [nan, 0.0]),
                   ([1.0, 0.0, 3.0, inf], [0.0, nan, inf]), ([2.0, nan], [nan, nan, 2.0])):
        got = clgrad.isin(clgrad.tensor(el), clgrad.tensor(te))
        np.testing.assert_array_equal(got.numpy(), np.isin(el, te))
        inv = clgrad.isin(clgrad.tensor(el), clgrad.tensor(te), invert=True)
        np.testing.assert_array_equal(inv.numpy(), ~np.isin(el, te))


def test_multinomial_of_no_categories_says_so():
    with pytest.raises(RuntimeError, match="at least one category"):
        clgrad.multinomial(clgrad.tensor([]), 1, replacement=True)
