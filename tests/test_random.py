"""In-place random fills and torch.bernoulli/normal: statistics against the distributions'
moments (tolerances of ~6 standard errors), reproducibility under clgrad.manual_seed, bounds,
strided targets and the autograd rules of in-place writes."""
import math

import numpy as np
import pytest

import clgrad

N = 20_000


def _stat_close(value, want, sd):
    assert abs(value - want) < 6 * sd / math.sqrt(N), (value, want)


def test_normal_uniform_exponential_moments():
    x = clgrad.empty(N, dtype=clgrad.float64)
    v = x.normal_(2.0, 3.0).numpy()
    _stat_close(v.mean(), 2.0, 3.0)
    _stat_close(v.std(), 3.0, 3.0 * math.sqrt(0.5))
    v = x.uniform_(-1.0, 3.0).numpy()
    assert v.min() >= -1.0 and v.max() < 3.0
    _stat_close(v.mean(), 1.0, 4 / math.sqrt(12))
    v = x.exponential_(4.0).numpy()
    assert v.min() >= 0.0
    _stat_close(v.mean(), 0.25, 0.25)
    v = clgrad.empty(N).uniform_(**{"from": 5.0, "to": 6.0}).numpy()
    assert v.min() >= 5.0 and v.max() < 6.0


def test_bernoulli_frequencies_and_probability_tensors():
    x = clgrad.empty(N)
    _stat_close(x.bernoulli_(0.3).numpy().mean(), 0.3, math.sqrt(0.21))
    assert set(np.unique(x.numpy())) <= {0.0, 1.0}
    p = clgrad.tensor([0.0, 1.0, 0.5]).expand(N // 4, 3)
    b = clgrad.bernoulli(p.contiguous()).numpy()
    assert (b[:, 0] == 0).all() and (b[:, 1] == 1).all()
    _stat_close(b[:, 2].mean(), 0.5, 0.5 * math.sqrt(N / (N // 4)))  # N // 4 draws
    ints = clgrad.zeros(1000, dtype=clgrad.int64).bernoulli_(0.5)
    assert ints.dtype is clgrad.int64 and set(np.unique(ints.numpy())) <= {0, 1}
    with pytest.raises(RuntimeError, match="0 <= p <= 1"):
        x.bernoulli_(1.5)


def test_manual_seed_reproduces_the_stream():
    def draw():
        clgrad.manual_seed(123)
        return (clgrad.empty(5).normal_().numpy(), clgrad.empty(3).uniform_().numpy(),
                clgrad.empty(4).bernoulli_(0.5).numpy(), clgrad.normal(0.0, 1.0, (2,)).numpy())
    a, b = draw(), draw()
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a[0], clgrad.empty(5).normal_().numpy())


def test_fills_write_through_views_and_keep_the_rest():
    base = clgrad.zeros(4, 6, dtype=clgrad.float64)
    view = base[1:3, ::2]
    out = view.normal_()
    assert out is view and base._version > 0
    host = base.numpy()
    mask = np.zeros((4, 6), bool)
    mask[1:3, ::2] = True
    assert (host[~mask] == 0).all() and (host[mask] != 0).all()


def test_autograd_rules_of_in_place_fills():
    w = clgrad.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        w.normal_()
    with clgrad.no_grad():
        w.uniform_(-1, 1)
    assert w.requires_grad and w.grad_fn is None
    a = clgrad.ones(3, requires_grad=True)
    y = a * 2.0
    y.bernoulli_(1.0)
    (y * a).sum().backward()  # y is a constant 1 now: d/da = y = 1, nothing through old y
    assert a.grad.tolist() == [1.0, 1.0, 1.0]


def test_normal_with_tensor_arguments_and_errors():
    m = clgrad.tensor([0.0, 100.0])
    s = clgrad.tensor([[1e-6], [1e-6]])
    out = clgrad.normal(m, s)
    assert out.shape == (2, 2)
    np.testing.assert_allclose(out.numpy(), [[0.0, 100.0]] * 2, atol=1e-4)
    with pytest.raises(RuntimeError, match="std"):
        clgrad.empty(2).normal_(0.0, -1.0)
    with pytest.raises(TypeError, match="floating"):
        clgrad.zeros(2, dtype=clgrad.int64).normal_()
    with pytest.raises(TypeError, match=r"normal_\(\): argument 'generator' must be "
                                        r"torch.Generator, not object"):
        clgrad.empty(2).normal_(generator=object())


def test_normal_with_requires_grad_is_a_leaf():
    """d2l's init_params: torch.normal(0, 1, size=(n, 1), requires_grad=True) (clgrad's
    normal had no requires_grad)."""
    clgrad.manual_seed(3)
    w = clgrad.normal(0, 0.01, size=(4, 3), requires_grad=True)
    assert w.is_leaf and w.requires_grad and w.grad_fn is None and w.dtype is clgrad.float32
    (w * 2).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((4, 3), 2.0))
    assert not clgrad.normal(0, 1, size=(2,)).requires_grad
    with pytest.raises(TypeError, match="requires_grad"):
        clgrad.normal(clgrad.zeros(2), 1.0, requires_grad=True)


def test_initial_seed_and_seed():
    clgrad.manual_seed(123)
    assert clgrad.initial_seed() == 123
    clgrad.manual_seed(-1)                       # wraps modulo 2**64, as in PyTorch
    assert clgrad.initial_seed() == 2**64 - 1
    s = clgrad.seed()
    assert clgrad.initial_seed() == s and 0 <= s < 2**64
    a = clgrad.rand(3).numpy()
    clgrad.manual_seed(s)
    np.testing.assert_array_equal(clgrad.rand(3).numpy(), a)


class _SeedOfWorker(clgrad.utils.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = clgrad.utils.data.get_worker_info()
        return np.array([clgrad.initial_seed(), info.seed, info.id])


def test_initial_seed_in_a_worker_is_the_worker_seed():
    """PyTorch's seed_worker idiom reads torch.initial_seed() in a worker: base_seed + id."""
    loader = clgrad.utils.data.DataLoader(_SeedOfWorker(), batch_size=1, num_workers=2,
                                          generator=clgrad.Generator().manual_seed(0))
    rows = np.concatenate([b.numpy() for b in loader])
    np.testing.assert_array_equal(rows[:, 0], rows[:, 1])
    by_worker = {int(w): int(s) for s, _, w in rows}
    assert sorted(by_worker) == [0, 1] and by_worker[1] == by_worker[0] + 1


def test_generator_argument_on_every_random_factory():
    """generator= as PyTorch: the same seed, the same draws, whatever the global generator did
    in between; NumPy's PCG64 stream of that seed (clgrad's documented streams)."""
    def draws(seed):
        g = clgrad.Generator().manual_seed(seed)
        clgrad.manual_seed(99)
        out = [clgrad.randn(2, 3, generator=g), clgrad.rand(4, generator=g),
               clgrad.randint(0, 7, (5,), generator=g), clgrad.randint(7, (2,), generator=g),
               clgrad.randperm(6, generator=g), clgrad.empty(3).normal_(1.0, 2.0, generator=g),
               clgrad.empty(3).uniform_(-1, 1, generator=g),
               clgrad.normal(0.0, 1.0, (2,), generator=g)]
        clgrad.rand(5)  # the global stream moves; g's does not depend on it
        return [t.numpy() for t in out]
    a, b = draws(5), draws(5)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(draws(6)[0], a[0])
    r = np.random.default_rng(5)
    np.testing.assert_array_equal(a[0], r.standard_normal((2, 3)).astype(np.float32))
    np.testing.assert_array_equal(a[1], r.random(4).astype(np.float32))
    np.testing.assert_array_equal(a[2], r.integers(0, 7, size=5))
    np.testing.assert_array_equal(a[3], r.integers(0, 7, size=2))
    np.testing.assert_array_equal(a[4], r.permutation(6))
    np.testing.assert_array_equal(a[5], r.normal(1.0, 2.0, 3).astype(np.float32))
    with pytest.raises(TypeError, match=r"randn\(\): argument 'generator' must be "
                                        r"torch.Generator, not int"):
        clgrad.randn(2, generator=3)


def test_generator_argument_matches_pytorchs_signatures():
    torch = pytest.importorskip("torch")
    for t in (torch, clgrad):
        g = t.Generator().manual_seed(0)
        assert t.randn(2, 3, generator=g).shape == (2, 3)
        assert t.rand(2, generator=g, requires_grad=True).requires_grad
        assert t.randint(3, (4,), generator=g).dtype == t.int64
        assert sorted(t.randperm(5, generator=g).tolist()) == list(range(5))
        x = t.empty(2).normal_(generator=g)
        assert x.shape == (2,)


def test_randint_high_only_with_size_by_keyword():
    """torch.randint(5, size=(3,)): high alone, size by keyword (it gave a 0-dim tensor)."""
    t = clgrad.randint(5, size=(3,))
    assert tuple(t.shape) == (3,) and t.dtype == clgrad.int64
    assert all(0 <= v < 5 for v in t.tolist())
    assert tuple(clgrad.randint(5, (2, 2)).shape) == (2, 2)
    assert tuple(clgrad.randint(5).shape) == ()


def test_randint_bounds_must_fit_the_dtype():
    with pytest.raises(RuntimeError, match=r"from.*-5.*uint8.*\[0, 255\]"):
        clgrad.randint(-5, 5, (6,), dtype=clgrad.uint8)
    with pytest.raises(RuntimeError, match=r"to - 1.*299.*int8.*\[-128, 127\]"):
        clgrad.randint(0, 300, (6,), dtype=clgrad.int8)
    with pytest.raises(RuntimeError, match=r"to - 1.*bool.*\[0, 1\]"):
        clgrad.randint(0, 3, (6,), dtype=clgrad.bool)
    with pytest.raises(RuntimeError, match="int16"):
        clgrad.randint_like(clgrad.zeros(3, dtype=clgrad.int16), 0, 40000)
    b = clgrad.randint(0, 2, (200,), dtype=clgrad.bool).tolist()
    assert set(b) == {False, True}
    v = clgrad.randint(-128, 128, (500,), dtype=clgrad.int8).numpy()
    assert v.min() >= -128 and v.max() <= 127 and v.min() < -100 and v.max() > 100
    u = clgrad.randint(0, 256, (500,), dtype=clgrad.uint8).numpy()
    assert u.max() > 200 and u.dtype == np.uint8


def test_random_bounds_forms_and_generator():
    x = clgrad.empty(2000)
    assert sorted(set(x.random_(5).numpy().tolist())) == [0, 1, 2, 3, 4]  # random_(to)
    assert sorted(set(x.random_(3, 6).numpy().tolist())) == [3, 4, 5]
    assert sorted(set(x.random_(to=2).numpy().tolist())) == [0, 1]
    v = x.random_().numpy()  # float32: [0, 2^24]
    assert v.min() >= 0 and v.max() <= 2 ** 24 and v.max() > 2 ** 23 and np.all(v == np.round(v))
    assert x.random_(**{"from": 2 ** 24 - 1}).numpy().min() >= 2 ** 24 - 1
    i8 = clgrad.empty(2000, dtype=clgrad.int8).random_().numpy()
    assert i8.min() >= 0 and i8.max() == 127  # integers: [0, max]
    i64 = clgrad.empty(50, dtype=clgrad.int64).random_(-3, 0).numpy()
    assert set(i64.tolist()) <= {-3, -2, -1}
    b = clgrad.empty(200, dtype=clgrad.bool).random_().numpy()
    assert 0 < b.sum() < 200
    g = clgrad.Generator()
    a1 = clgrad.empty(8).random_(0, 100, generator=g.manual_seed(4)).numpy()
    a2 = clgrad.empty(8).random_(0, 100, generator=g.manual_seed(4)).numpy()
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(a1, np.random.default_rng(4).integers(0, 99, 8, endpoint=True))
    with pytest.raises(RuntimeError, match="less than"):
        x.random_(5, 5)
    with pytest.raises(RuntimeError, match="out of bounds"):
        clgrad.empty(2, dtype=clgrad.uint8).random_(0, 300)
    with pytest.raises(TypeError):
        x.random_(1.5)
