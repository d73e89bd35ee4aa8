"""clgrad.utils.data: PyTorch's datasets, samplers, collation and DataLoader (workers too).

Oracles: hand-computed batches and index sets, NumPy; PyTorch's own utils.data where importable.
"""
import collections
import os
import random
import time
import warnings

import numpy as np
import pytest

import clgrad
from clgrad.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset,
                               IterableDataset, RandomSampler, SequentialSampler, Subset,
                               SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
                               default_collate, default_convert, get_worker_info, random_split)

Point = collections.namedtuple("Point", "x y")


def numbered(n):
    """Sample i: features [i, i + 0.5] float32 and label i int64, so every order shows."""
    x = np.stack([np.arange(n), np.arange(n) + 0.5], axis=1).astype(np.float32)
    return TensorDataset(clgrad.from_numpy(x), clgrad.arange(n))


def labels(loader):
    return [int(v) for _, y in loader for v in y.numpy()]


class Squares(Dataset):
    """Host samples of several kinds: array, int, float, str, dict."""

    def __len__(self):
        return 7

    def __getitem__(self, i):
        return {"x": np.full(3, i, np.float32), "y": i * i, "f": i / 2, "name": f"s{i}"}


class MakesTensors(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return clgrad.tensor([float(i), 2.0 * i])


class Who(Dataset):
    """Which process (and worker) built each sample, and what its generators gave."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return (i, os.getpid(), -1 if info is None else info.id,
                -1 if info is None else info.seed, random.random())


class Shards(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        k, w = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(k, self.n, w))


class Fails(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError(f"no sample {i}")
        return i


class Slow(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        time.sleep(5)
        return i


# ---------------------------------------------------------------------------- datasets

def test_tensor_dataset_returns_tensors_and_stacks_for_index_sequences():
    ds = numbered(6)
    x, y = ds[4]
    assert isinstance(x, clgrad.Tensor) and x.tolist() == [4.0, 4.5]
    assert y.shape == () and y.item() == 4 and y.dtype == clgrad.int64
    assert ds[-1][1].item() == 5
    for index, want in [(slice(1, 5, 2), [1, 3]), ([5, 0, 0], [5, 0, 0]),
                        (clgrad.tensor([2, 1]), [2, 1]), (np.array([3]), [3])]:
        xs, ys = ds[index]
        assert ys.tolist() == want and xs.shape == (len(want), 2)
        np.testing.assert_array_equal(xs.numpy()[:, 1], np.array(want) + 0.5)
    mask = np.array([True, False, False, True, False, True])
    assert ds[mask][1].tolist() == [0, 3, 5]
    assert len(ds.tensors) == 2 and ds.tensors[1].tolist() == list(range(6))
    with pytest.raises(IndexError, match="index 6 is out of range"):
        ds[6]
    with pytest.raises(IndexError, match="in range"):
        ds[[0, 9]]
    with pytest.raises(TypeError, match="index"):
        ds[1.5]


def test_subset_concat_chain():
    ds = numbered(5)
    sub = Subset(ds, [4, 2, 0])
    assert len(sub) == 3 and sub[1][1].item() == 2
    assert [y.item() for _, y in sub[[0, 2]]] == [4, 0]
    cat = ConcatDataset([ds, sub])
    assert len(cat) == 8 and cat.cumulative_sizes == [5, 8]
    assert [cat[i][1].item() for i in (0, 4, 5, 7, -1, -8)] == [0, 4, 4, 0, 0, 0]
    with pytest.raises(IndexError, match="out of range"):
        cat[8]
    with pytest.raises(ValueError, match="exceed dataset length"):
        cat[-9]
    assert len(ds + sub) == 8
    with pytest.raises(ValueError, match="non-empty"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="IterableDataset"):
        ConcatDataset([Shards(3)])
    assert list(ChainDataset([Shards(2), Shards(3)])) == [0, 1, 0, 1, 2]
    assert list(Shards(2) + Shards(1)) == [0, 1, 0]


@pytest.mark.parametrize("n, lengths, sizes", [
    (10, [3, 7], [3, 7]),
    (10, [0.5, 0.5], [5, 5]),
    (10, [0.33, 0.33, 0.34], [4, 3, 3]),  # floor 3+3+3, the remainder to the first split
    (11, [0.1, 0.2, 0.7], [2, 2, 7]),  # floor 1+2+7 = 10, one more to the first
    (5, [5], [5]),
])
def test_random_split_sizes_partition_and_reproducibility(n, lengths, sizes):
    ds = numbered(n)
    parts = random_split(ds, lengths, generator=clgrad.Generator().manual_seed(4))
    assert [len(p) for p in parts] == sizes
    seen = sorted(i for p in parts for i in p.indices)
    assert seen == list(range(n))  # disjoint and complete
    again = random_split(ds, lengths, generator=clgrad.Generator().manual_seed(4))
    assert [p.indices for p in again] == [p.indices for p in parts]
    clgrad.manual_seed(9)
    a = [p.indices for p in random_split(ds, lengths)]
    clgrad.manual_seed(9)
    assert [p.indices for p in random_split(ds, lengths)] == a
    assert parts[0][0][1].item() == parts[0].indices[0]


def test_random_split_errors():
    with pytest.raises(ValueError, match="summing to the dataset's length 4"):
        random_split(numbered(4), [1, 2])
    with pytest.raises(ValueError, match="fractions"):
        random_split(numbered(4), [0.5, 0.2])


# ---------------------------------------------------------------------------- samplers

def test_sequential_and_batch_sampler():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    with pytest.raises(ValueError, match="positive int"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(TypeError, match="drop_last"):
        BatchSampler(range(3), 2, 1)


def test_random_sampler():
    g = clgrad.Generator().manual_seed(1)
    orders = [list(RandomSampler(range(9), generator=g)) for _ in range(3)]
    assert all(sorted(o) == list(range(9)) for o in orders) and orders[0] != orders[1]
    g.manual_seed(1)
    assert list(RandomSampler(range(9), generator=g)) == orders[0]
    with_rep = list(RandomSampler(range(3), replacement=True, num_samples=50, generator=g))
    assert len(with_rep) == 50 and set(with_rep) == {0, 1, 2}  # repeats, all drawn (p~1e-8)
    long = list(RandomSampler(range(4), num_samples=10, generator=g))
    assert sorted(long[:4]) == sorted(long[4:8]) == [0, 1, 2, 3] and len(set(long[8:])) == 2
    assert len(RandomSampler(range(4), num_samples=10)) == 10
    with pytest.raises(ValueError, match="num_samples"):
        RandomSampler(range(4), num_samples=0)
    with pytest.raises(TypeError, match="replacement"):
        RandomSampler(range(4), replacement=1)


def test_subset_random_and_weighted_samplers():
    g = clgrad.Generator().manual_seed(2)
    got = list(SubsetRandomSampler([10, 20, 30], generator=g))
    assert sorted(got) == [10, 20, 30]
    w = [0.0, 1.0, 3.0]
    draws = np.array(list(WeightedRandomSampler(w, 4000, generator=g)))
    assert 0 not in draws  # a zero weight is never drawn
    frac = np.mean(draws == 2)
    assert abs(frac - 0.75) < 0.04  # 4000 draws: std 0.007, so 0.04 is > 5 sigma
    once = list(WeightedRandomSampler([1, 1, 1, 0], 3, replacement=False, generator=g))
    assert sorted(once) == [0, 1, 2]
    with pytest.raises(ValueError, match="positive weights"):
        WeightedRandomSampler([1, 0], 2, replacement=False)
    with pytest.raises(ValueError, match="non-negative"):
        WeightedRandomSampler([1, -1], 2)
    with pytest.raises(ValueError, match="non-negative"):
        WeightedRandomSampler([1, float("nan")], 2)


def test_generator():
    g = clgrad.Generator()
    assert g.initial_seed() == 67280421310721 and g.device == clgrad.device("cpu")
    assert g.manual_seed(-1).initial_seed() == 2**64 - 1
    state = g.get_state()
    a = list(RandomSampler(range(20), generator=g))
    g.set_state(state)
    assert list(RandomSampler(range(20), generator=g)) == a
    with pytest.raises(TypeError, match="expected an int"):
        g.manual_seed("1")


# ---------------------------------------------------------------------------- collation

def test_default_collate_rules():
    batch = default_collate([(np.array([1, 2], np.float32), 3, 0.5, True, "a", np.int32(4)),
                             (np.array([5, 6], np.float32), 7, 1.5, False, "b", np.int32(8))])
    assert isinstance(batch, list) and len(batch) == 6  # tuples collate to a list, as PyTorch
    arr, ints, floats, bools, names, np_ints = batch
    assert arr.dtype == clgrad.float32 and arr.tolist() == [[1, 2], [5, 6]]
    assert ints.dtype == clgrad.int64 and ints.tolist() == [3, 7]
    assert floats.dtype == clgrad.float64 and floats.tolist() == [0.5, 1.5]
    assert bools.dtype == clgrad.bool and bools.tolist() == [True, False]
    assert names == ["a", "b"]
    assert np_ints.dtype == clgrad.int32 and np_ints.tolist() == [4, 8]
    d = default_collate([{"t": clgrad.tensor([1.0]), "p": Point(1, [2, 3])},
                         {"t": clgrad.tensor([2.0]), "p": Point(4, [5, 6])}])
    assert d["t"].shape == (2, 1) and d["t"].tolist() == [[1.0], [2.0]]
    assert isinstance(d["p"], Point) and d["p"].x.tolist() == [1, 4]
    assert isinstance(d["p"].y, list) and [t.tolist() for t in d["p"].y] == [[2, 5], [3, 6]]
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="found object"):
        default_collate([object(), object()])


def test_default_convert_and_batch_size_none():
    c = default_convert((np.arange(3), 5, "s", {"a": np.float32(2.0)}))
    assert isinstance(c, list) and c[0].tolist() == [0, 1, 2] and c[1] == 5 and c[2] == "s"
    assert isinstance(c[3]["a"], clgrad.Tensor) and c[3]["a"].item() == 2.0
    loader = DataLoader(Squares(), batch_size=None)
    assert len(loader) == 7
    first = next(iter(loader))
    assert first["x"].shape == (3,) and first["y"] == 0 and first["name"] == "s0"


def test_torch_default_collate_agrees():
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate
    samples = [Squares()[i] for i in range(3)]
    ours, theirs = default_collate(samples), torch_collate(samples)
    assert list(ours) == list(theirs) and ours["name"] == theirs["name"]
    for k in ("x", "y", "f"):
        assert ours[k].dtype.name == str(theirs[k].dtype).replace("torch.", "")
        np.testing.assert_array_equal(ours[k].numpy(), theirs[k].numpy())
    for lengths in ([0.33, 0.33, 0.34], [0.1, 0.2, 0.7]):
        want = [len(p) for p in torch.utils.data.random_split(range(11), lengths)]
        assert [len(p) for p in random_split(numbered(11), lengths)] == want


# ---------------------------------------------------------------------------- DataLoader

@pytest.mark.parametrize("n, batch, drop_last, sizes", [
    (10, 3, False, [3, 3, 3, 1]), (10, 3, True, [3, 3, 3]), (2, 5, True, []), (0, 4, False, []),
])
def test_loader_batches_in_order(n, batch, drop_last, sizes):
    loader = DataLoader(numbered(n), batch_size=batch, drop_last=drop_last, pin_memory=True)
    assert len(loader) == len(sizes)
    batches = list(loader)
    assert [len(y) for _, y in batches] == sizes
    assert all(isinstance(b, list) for b in batches)  # as PyTorch's default_collate
    assert labels(loader) == list(range(sum(sizes)))


def test_loader_shuffle_follows_manual_seed_and_generator():
    ds = numbered(23)
    loader = DataLoader(ds, batch_size=5, shuffle=True)
    clgrad.manual_seed(11)
    run1 = [labels(loader) for _ in range(3)]
    clgrad.manual_seed(11)
    run2 = [labels(loader) for _ in range(3)]
    assert run1 == run2 and run1[0] != run1[1] and sorted(run1[0]) == list(range(23))
    clgrad.manual_seed(12)
    assert labels(loader) != run1[0]
    g1, g2 = clgrad.Generator().manual_seed(5), clgrad.Generator().manual_seed(5)
    a = labels(DataLoader(ds, batch_size=4, shuffle=True, generator=g1))
    assert a == labels(DataLoader(ds, batch_size=4, shuffle=True, generator=g2))


def test_loader_sampler_batch_sampler_collate_fn():
    ds = numbered(6)
    assert labels(DataLoader(ds, batch_size=2, sampler=[5, 3, 1])) == [5, 3, 1]
    loader = DataLoader(ds, batch_sampler=[[0, 5], [2], [4, 4, 4]])
    assert len(loader) == 3 and labels(loader) == [0, 5, 2, 4, 4, 4]
    sums = list(DataLoader(ds, batch_size=4, collate_fn=lambda b: sum(y.item() for _, y in b)))
    assert sums == [0 + 1 + 2 + 3, 4 + 5]
    out = list(DataLoader(Squares(), batch_size=3))
    assert [b["y"].tolist() for b in out] == [[0, 1, 4], [9, 16, 25], [36]]
    assert out[0]["f"].dtype == clgrad.float64 and out[2]["name"] == ["s6"]


def test_loader_fast_path_one_upload_per_field(monkeypatch):
    calls = []
    real = clgrad.creation.from_numpy   # the loader uploads through clgrad.creation
    monkeypatch.setattr(clgrad.creation, "from_numpy", lambda a: calls.append(a.shape) or real(a))
    ds = TensorDataset(np.zeros((7, 2), np.float32), np.arange(7))
    list(DataLoader(Subset(ds, list(range(7))), batch_size=4))
    assert calls == [(4, 2), (4,), (3, 2), (3,)]


def test_loader_argument_errors():
    ds = numbered(3)
    cases = [
        (dict(sampler=[0], shuffle=True), "mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
        (dict(batch_sampler=[[0]], drop_last=True), "batch_sampler option is mutually exclusive"),
        (dict(batch_size=None, drop_last=True), "mutually exclusive with drop_last"),
        (dict(num_workers=-1), "non-negative"),
        (dict(timeout=-1), "timeout option should be non-negative"),
        (dict(prefetch_factor=2), "only be specified in multiprocessing"),
        (dict(persistent_workers=True), "num_workers > 0"),
        (dict(batch_size=0), "positive integer"),
    ]
    for kwargs, phrase in cases:
        with pytest.raises(ValueError, match=phrase):
            DataLoader(ds, **kwargs)
    with pytest.raises(ValueError, match="IterableDataset: expected unspecified shuffle"):
        DataLoader(Shards(3), shuffle=True)
    with pytest.raises(ValueError, match="unspecified sampler"):
        DataLoader(Shards(3), sampler=[0])


def test_iterable_dataset_in_process():
    loader = DataLoader(Shards(7), batch_size=3)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in DataLoader(Shards(7), batch_size=3, drop_last=True)] == \
        [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(TypeError):
        len(DataLoader(Shards(3)))  # no __len__, as PyTorch


# ---------------------------------------------------------------------------- workers

def test_workers_give_the_batches_of_the_main_process():
    ds = numbered(11)
    for kwargs in (dict(shuffle=False), dict(shuffle=True)):
        main = list(DataLoader(ds, batch_size=3, generator=clgrad.Generator().manual_seed(3),
                               **kwargs))
        work = list(DataLoader(ds, batch_size=3, num_workers=2, prefetch_factor=1,
                               generator=clgrad.Generator().manual_seed(3), **kwargs))
        assert len(main) == len(work) == 4
        for (x1, y1), (x2, y2) in zip(main, work):
            assert isinstance(x2, clgrad.Tensor) and x2.dtype == clgrad.float32
            np.testing.assert_array_equal(x1.numpy(), x2.numpy())
            np.testing.assert_array_equal(y1.numpy(), y2.numpy())
    out = list(DataLoader(Squares(), batch_size=3, num_workers=2))
    assert [b["y"].tolist() for b in out] == [[0, 1, 4], [9, 16, 25], [36]]
    assert out[1]["name"] == ["s3", "s4", "s5"] and out[1]["x"].shape == (3, 3)


def test_worker_info_seeds_and_init_fn():
    calls = []
    loader = DataLoader(Who(), batch_size=2, num_workers=2, worker_init_fn=calls.append,
                        generator=clgrad.Generator().manual_seed(0))
    rows = [list(zip(*(c.tolist() if isinstance(c, clgrad.Tensor) else c for c in b)))
            for b in loader]
    rows = [r for b in rows for r in b]
    assert [r[0] for r in rows] == list(range(8))
    pids = {r[2]: r[1] for r in rows}
    assert set(pids) == {0, 1} and os.getpid() not in pids.values()
    assert [r[2] for r in rows] == [0, 0, 1, 1, 0, 0, 1, 1]  # batches go round-robin
    seeds = {r[2]: r[3] for r in rows}
    assert seeds[1] == seeds[0] + 1  # base_seed + worker id
    r0 = random.Random(seeds[0])
    assert [r[4] for r in rows if r[2] == 0] == [r0.random() for _ in range(4)]
    assert calls == []  # worker_init_fn ran in the workers, not here
    assert get_worker_info() is None


class NumpyNoise(Dataset):
    """NumPy-based augmentation: each sample draws from NumPy's global generator."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return np.array([np.random.rand(), -1 if info is None else info.id])


def test_workers_seed_numpy_per_worker_and_epoch():
    loader = DataLoader(NumpyNoise(), batch_size=2, num_workers=2)

    def epoch():
        rows = np.concatenate([b.numpy() for b in loader])
        by_worker = {int(w): rows[rows[:, 1] == w, 0].tolist() for w in (0, 1)}
        assert all(len(v) == 4 for v in by_worker.values())
        return by_worker
    clgrad.manual_seed(7)
    first, second = epoch(), epoch()
    assert not set(first[0]) & set(first[1])  # the workers' NumPy streams differ
    assert first != second and not set(first[0]) & set(second[0])  # so do the epochs'
    clgrad.manual_seed(7)
    assert epoch() == first and epoch() == second  # and repeat under manual_seed
    clgrad.manual_seed(8)
    assert epoch() != first


def test_forked_worker_making_tensors_before_any_tensor_falls_back(tmp_path):
    """A fresh interpreter whose first tensor is made in a forked worker (device discovery
    there meets the sealed Device) loads in the main process with a warning, as when the main
    process had made a tensor first."""
    import subprocess
    import sys

    from subproc import checkout_env
    script = tmp_path / "first_tensor_in_worker.py"
    script.write_text('''
import warnings
import numpy as np
import clgrad as torch
from clgrad.utils.data import DataLoader, Dataset


def image(i):
    return ((np.arange(4 * 5 * 3).reshape(4, 5, 3) * 3 + i) % 256).astype(np.uint8)


class Images(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return torch.from_numpy(image(i)).permute(2, 0, 1).float().div(255)


if __name__ == "__main__":
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = [b.numpy() for b in DataLoader(Images(), batch_size=2, num_workers=2)]
    assert any("forked worker processes cannot" in str(w.message) for w in caught)
    want = np.stack([image(i).transpose(2, 0, 1).astype(np.float32) / 255 for i in range(5)])
    assert [b.shape for b in batches] == [(2, 3, 4, 5), (2, 3, 4, 5), (1, 3, 4, 5)]
    np.testing.assert_allclose(np.concatenate(batches), want, rtol=1e-6)
    print("OK")
''')
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       env=checkout_env(), timeout=600, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout + r.stderr


def test_iterable_dataset_with_workers_shards():
    loader = DataLoader(Shards(10), batch_size=3, num_workers=2)
    assert [b.tolist() for b in loader] == [[0, 2, 4], [1, 3, 5], [6, 8], [7, 9]]  # as PyTorch


def test_worker_exception_is_reraised_with_its_type():
    with pytest.raises(KeyError, match="in DataLoader worker process 0(.|\n)*no sample 2"):
        list(DataLoader(Fails(), batch_size=1, num_workers=2))


def test_forked_worker_making_tensors_falls_back_in_process():
    want = [[[0.0, 0.0], [1.0, 2.0]], [[2.0, 4.0], [3.0, 6.0]], [[4.0, 8.0]]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [b.tolist() for b in DataLoader(MakesTensors(), batch_size=2, num_workers=2)]
    assert got == want
    assert any("forked worker processes cannot" in str(w.message) for w in caught)

    class TensorStream(IterableDataset):
        def __iter__(self):
            return iter([clgrad.ones(1)])
    with pytest.raises(RuntimeError, match="OpenCL contexts do not survive fork"):
        list(DataLoader(TensorStream(), num_workers=1))


def test_forked_worker_says_use_spawn_as_for_a_gpu_device():
    from clgrad.runtime import ForkedDeviceError

    class TensorStream(IterableDataset):
        def __iter__(self):
            return iter([clgrad.ones(1)])
    with pytest.raises(ForkedDeviceError, match="cannot use the OpenCL GPU device in a forked "
                                                "process; use the spawn start method"):
        list(DataLoader(TensorStream(), num_workers=1))


def test_persistent_workers_and_unordered():
    loader = DataLoader(Who(), batch_size=4, num_workers=2, persistent_workers=True)
    pids = [{int(p) for b in loader for p in b[1].tolist()} for _ in range(2)]
    assert pids[0] == pids[1] and len(pids[0]) == 2
    it = iter(loader)
    next(it)  # abandon this epoch half-way; the next one starts clean
    assert [int(i) for b in loader for i in b[0].tolist()] == list(range(8))
    unordered = DataLoader(numbered(9), batch_size=2, num_workers=2, in_order=False)
    assert sorted(labels(unordered)) == list(range(9))


def test_tensor_indices_from_a_sampler_reach_the_workers():
    sampler = [clgrad.tensor(4), clgrad.tensor(0), clgrad.tensor(2)]
    assert labels(DataLoader(numbered(5), batch_size=2, sampler=sampler, num_workers=1)) == \
        [4, 0, 2]


def test_worker_timeout():
    with pytest.raises(RuntimeError, match="timed out after 0.5 seconds"):
        list(DataLoader(Slow(), num_workers=1, timeout=0.5))


def test_spawned_workers_may_make_tensors():
    got = [b.tolist() for b in DataLoader(MakesTensors(), batch_size=2, num_workers=1,
                                          multiprocessing_context="spawn")]
    assert got == [[[0.0, 0.0], [1.0, 2.0]], [[2.0, 4.0], [3.0, 6.0]], [[4.0, 8.0]]]


def test_package_face_paths():
    import clgrad as torch
    assert torch.utils.data.DataLoader is DataLoader
    assert torch.utils.data.TensorDataset is TensorDataset


def test_generic_dataset_and_sampler_subscripts():
    class Pairs(Dataset[tuple]):
        def __getitem__(self, i):
            return i, i

    assert Pairs()[2] == (2, 2) and RandomSampler[int] is RandomSampler
