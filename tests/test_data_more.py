"""StackDataset (PyTorch's semantics) and DistributedSampler's structural properties (its
shuffled order is NumPy's permutation, not torch.randperm's: clgrad's generator does not
reproduce torch's, so only the non-shuffled indices are compared with PyTorch's)."""
import pytest

import clgrad
from clgrad.utils.data import DataLoader, StackDataset, TensorDataset
from clgrad.utils.data.distributed import DistributedSampler


def test_stack_dataset_tuple_dict_and_errors():
    a, b = list(range(5)), [x * 10 for x in range(5)]
    s = StackDataset(a, b)
    assert len(s) == 5 and s[3] == (3, 30)
    assert s.__getitems__([0, 4]) == [(0, 0), (4, 40)]
    d = StackDataset(x=a, y=b)
    assert d[2] == {"x": 2, "y": 20} and d.__getitems__([1]) == [{"x": 1, "y": 10}]
    for args, kwargs, msg in [((), {}, "At least one dataset should be passed"),
                              ((a,), {"y": b}, "but both types are given"),
                              ((a, b[:3]), {}, "Size mismatch between datasets")]:
        with pytest.raises(ValueError, match=msg):
            StackDataset(*args, **kwargs)


def test_stack_dataset_uses_nested_getitems_and_loads():
    class Batched:
        def __len__(self):
            return 4

        def __getitem__(self, i):
            raise AssertionError("per-item path taken")

        def __getitems__(self, idx):
            return [i * 2 for i in idx]
    s = StackDataset(Batched(), list("abcd"))
    assert s.__getitems__([1, 3]) == [(2, "b"), (6, "d")]
    t = TensorDataset(clgrad.arange(6).float())
    batch = next(iter(DataLoader(StackDataset(t, list(range(6))), batch_size=3)))
    assert len(batch) == 2


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True),
                                                  (2, 5, False), (12, 4, False)])
def test_distributed_sampler_partitions(n, replicas, drop_last):
    shards = [DistributedSampler(range(n), replicas, r, shuffle=True, seed=5,
                                 drop_last=drop_last) for r in range(replicas)]
    for s in shards:
        s.set_epoch(1)
    got = [list(s) for s in shards]
    assert len({len(g) for g in got}) == 1 and all(len(g) == len(s) for g, s in
                                                   zip(got, shards))
    flat = [i for g in got for i in g]
    if drop_last:
        assert len(set(flat)) == len(flat)  # disjoint
    else:
        assert set(flat) == set(range(n))  # covering (padding repeats some)
    if n >= replicas and n % replicas == 0:
        assert sorted(flat) == list(range(n))
    for s in shards:
        s.set_epoch(2)
    assert [list(s) for s in shards] != got or n <= 2  # epoch-dependent order


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (2, 5, False)])
def test_distributed_sampler_unshuffled_equals_torch(n, replicas, drop_last):
    torch = pytest.importorskip("torch")
    for r in range(replicas):
        ours = DistributedSampler(range(n), replicas, r, shuffle=False, drop_last=drop_last)
        theirs = torch.utils.data.DistributedSampler(range(n), replicas, r, shuffle=False,
                                                     drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
