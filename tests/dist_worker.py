"""Run under ``mpiexec -n 2`` by tests/test_distributed.py: ``python dist_worker.py SCENARIO``.

Every rank computes what every other rank holds (data is a function of the rank), so each
checks its results against NumPy by itself. A failed check raises, the rank exits non-zero and
the launcher ends the job; the pytest side asserts the exit status and the printed lines.
"""
import os
import sys
import time

import numpy as np

import clgrad
import clgrad.distributed as dist
from clgrad import nn

OPS = {dist.ReduceOp.SUM: np.sum, dist.ReduceOp.PRODUCT: np.prod, dist.ReduceOp.MAX: np.max,
       dist.ReduceOp.MIN: np.min, dist.ReduceOp.AVG: np.mean}
DTYPES = [clgrad.float32, clgrad.float64, clgrad.int32, clgrad.int64, clgrad.bool]


def data(rank, shape, dtype, salt=0):
    """Distinct values per rank, small enough that products stay exact."""
    n = int(np.prod(shape, dtype=np.int64))
    v = (np.arange(n) * 7 + 3 * rank + salt) % 5 + 1 - 2 * (rank == 1) * (np.arange(n) % 2)
    if dtype is clgrad.bool:
        return (v % 2 == 0).reshape(shape)
    return v.astype(dtype.np).reshape(shape)


def layouts(dtype, rank, salt=0):
    """(name, base tensor, view, values written into the view) for each layout."""
    out = []
    for name, base_shape, make in (
            ("contiguous", (3, 4), lambda b: b),
            ("step slice", (3, 8), lambda b: b[:, 1::2]),        # t[:, ::2] with an offset
            ("transpose", (4, 3), lambda b: b.t()),
            ("0-d", (5,), lambda b: b[2]),
            ("empty", (0, 3), lambda b: b[:, ::2])):
        base = clgrad.tensor(np.full(base_shape, 9, dtype=dtype.np) if dtype is not clgrad.bool
                             else np.ones(base_shape, bool))
        view = make(base)
        vals = data(rank, tuple(view.shape), dtype, salt)
        view.copy_(clgrad.tensor(vals))
        out.append((name, base, view, vals))
    return out


def check_untouched(base, view, name):
    """Elements of ``base`` outside ``view`` still hold the fill value."""
    mask = np.ones(tuple(base.shape), bool)
    idx = np.arange(base.numel()).reshape(tuple(base.shape))
    inside = clgrad.tensor(idx)
    sel = {"contiguous": lambda t: t, "step slice": lambda t: t[:, 1::2],
           "transpose": lambda t: t.t(), "0-d": lambda t: t[2],
           "empty": lambda t: t[:, ::2]}[name](inside).numpy()
    mask.reshape(-1)[np.asarray(sel).reshape(-1)] = False
    rest = base.numpy()[mask]
    assert (rest == (9 if base.dtype is not clgrad.bool else True)).all(), (name, rest)


def collectives():
    dist.init_process_group("mpi", timeout=60)
    r, n = dist.get_rank(), dist.get_world_size()
    assert n == 2 and dist.get_backend() == "mpi" and dist.is_initialized()
    for dtype in DTYPES:
        for op, fn in OPS.items():
            if op is dist.ReduceOp.AVG and not dtype.is_floating_point:
                continue
            for name, base, view, _ in layouts(dtype, r):
                everyone = [data(k, tuple(view.shape), dtype) for k in range(n)]
                if dtype is clgrad.bool:
                    fn_b = np.any if op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX) else np.all
                    want = fn_b(np.stack(everyone), axis=0)
                else:
                    want = fn(np.stack(everyone).astype(np.float64), axis=0)
                dist.all_reduce(view, op)
                np.testing.assert_allclose(view.numpy().astype(np.float64),
                                           np.asarray(want, np.float64), rtol=1e-6,
                                           err_msg=f"all_reduce {op} {dtype} {name}")
                check_untouched(base, view, name)
        for name, base, view, vals in layouts(dtype, r):
            dist.broadcast(view, src=1)
            np.testing.assert_array_equal(view.numpy(), data(1, tuple(view.shape), dtype))
            check_untouched(base, view, name)
            # all_gather into step-slice views of one output
            like = data(r, tuple(view.shape), dtype)
            src = clgrad.tensor(like)
            shape = tuple(view.shape)  # outputs: column-major views for 2-d shapes
            outs = [clgrad.empty(shape[::-1], dtype=dtype).t() if len(shape) == 2 else
                    clgrad.empty(shape, dtype=dtype) for _ in range(n)]
            dist.all_gather(outs, src)
            for k in range(n):
                np.testing.assert_array_equal(outs[k].numpy(),
                                              data(k, tuple(view.shape), dtype))
            print(f"rank {r}: broadcast/all_gather {dtype} {name} ok", flush=True)
    # all_gather_into_tensor into a step slice; reduce_scatter_tensor from a transpose
    big = clgrad.zeros((4, 10), dtype=clgrad.float32)
    out = big[:, ::2]  # (4, 5), world * (2, 5)
    mine = clgrad.tensor(data(r, (2, 5), clgrad.float32))
    dist.all_gather_into_tensor(out, mine)
    np.testing.assert_array_equal(out.numpy(), np.concatenate(
        [data(k, (2, 5), clgrad.float32) for k in range(n)]))
    assert (big.numpy()[:, 1::2] == 0).all()
    src = clgrad.tensor(data(r, (6, 4), clgrad.float64)).t()  # (4, 6) view
    res = clgrad.zeros((4, 6), dtype=clgrad.float64)[:, ::2]  # 12 elements of a view
    dist.reduce_scatter_tensor(res, src, dist.ReduceOp.SUM)
    full = sum(data(k, (6, 4), clgrad.float64).T.reshape(-1) for k in range(n))
    np.testing.assert_array_equal(res.numpy().reshape(-1), full.reshape(n, -1)[r])
    lst = [clgrad.tensor(data(r, (3,), clgrad.int64, salt=k)) for k in range(n)]
    o = clgrad.zeros(3, dtype=clgrad.int64)
    dist.reduce_scatter(o, lst, dist.ReduceOp.MAX)
    np.testing.assert_array_equal(o.numpy(), np.max([data(k, (3,), clgrad.int64, salt=r)
                                                     for k in range(n)], axis=0))
    # reduce to rank 1 (rank 0's tensor unchanged), gather to 0, scatter from 1
    t = clgrad.tensor(data(r, (2, 3), clgrad.int32))
    dist.reduce(t, dst=1, op=dist.ReduceOp.SUM)
    want = sum(data(k, (2, 3), clgrad.int32) for k in range(n)) if r == 1 else \
        data(r, (2, 3), clgrad.int32)
    np.testing.assert_array_equal(t.numpy(), want)
    g = [clgrad.zeros((8,), dtype=clgrad.float32)[::2] for _ in range(n)] if r == 0 else None
    dist.gather(clgrad.tensor(data(r, (4,), clgrad.float32)), g, dst=0)
    if r == 0:
        for k in range(n):
            np.testing.assert_array_equal(g[k].numpy(), data(k, (4,), clgrad.float32))
    s = clgrad.zeros((2, 4), dtype=clgrad.float32)[:, 1::2]
    sl = [clgrad.tensor(data(k, (2, 2), clgrad.float32, salt=3)) for k in range(n)] \
        if r == 1 else None
    dist.scatter(s, sl, src=1)
    np.testing.assert_array_equal(s.numpy(), data(r, (2, 2), clgrad.float32, salt=3))
    # send/recv: rank 0 sends a step slice, rank 1 receives into a transpose
    if r == 0:
        dist.send(clgrad.tensor(data(0, (3, 4), clgrad.float32))[:, ::2], dst=1, tag=3)
    else:
        into = clgrad.zeros((2, 3), dtype=clgrad.float32).t()
        assert dist.recv(into, src=None, tag=3) == 0
        np.testing.assert_array_equal(into.numpy(), data(0, (3, 4), clgrad.float32)[:, ::2])
    # a ring exchange: irecv returns at once, so both ranks may post it before sending
    into = clgrad.zeros((3, 2), dtype=clgrad.int64)[::2]
    work = dist.irecv(into, src=1 - r, tag=5)
    dist.send(clgrad.tensor(data(r, (2, 2), clgrad.int64)), dst=1 - r, tag=5)
    work.wait()
    np.testing.assert_array_equal(into.numpy(), data(1 - r, (2, 2), clgrad.int64))
    assert work.source == 1 - r
    # async: the result appears after wait(); is_completed() then True
    a = clgrad.tensor(data(r, (5,), clgrad.float32))
    work = dist.all_reduce(a, dist.ReduceOp.SUM, async_op=True)
    assert work.wait() is True and work.is_completed()
    np.testing.assert_array_equal(a.numpy(), sum(data(k, (5,), clgrad.float32)
                                                 for k in range(n)))
    # large async all_reduce: its host buffers must outlive the call (memory reused meanwhile)
    big = clgrad.tensor(np.arange(1 << 20, dtype=np.float32) % 1000 + r)
    work = dist.all_reduce(big, async_op=True)
    junk = [np.full(1 << 20, -7.0, np.float32) for _ in range(8)]
    work.wait()
    del junk
    np.testing.assert_array_equal(big.numpy(), 2 * (np.arange(1 << 20) % 1000) + 1)
    work = dist.barrier(async_op=True)
    work.wait()
    # NaN in, NaN out for MAX and MIN
    x = clgrad.tensor([np.nan if r == 1 else 1.0, 2.0 + r])
    dist.all_reduce(x, dist.ReduceOp.MAX)
    assert np.isnan(x.numpy()[0]) and x.numpy()[1] == 3.0
    # a leaf that requires grad may be reduced (not recorded); a saved tensor may not be
    w = clgrad.ones(3, requires_grad=True)
    dist.all_reduce(w)
    np.testing.assert_array_equal(w.detach().numpy(), [2.0, 2.0, 2.0])
    assert w.grad_fn is None and w.is_leaf
    y = (w * 1.0).exp()
    dist.all_reduce(y)
    try:
        y.sum().backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e), e
    else:
        raise AssertionError("backward through a reduced saved tensor did not raise")
    errors()
    dist.barrier()
    print(f"rank {r}: collectives ok", flush=True)
    dist.destroy_process_group()
    assert not dist.is_initialized()


def expect(exc, fragments, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc as e:
        for f in fragments:
            assert f in str(e), (f, str(e))
        return str(e)
    raise AssertionError(f"{fn.__name__} did not raise {exc.__name__}")


def errors():
    r = dist.get_rank()
    msg = expect(ValueError, ["all_reduce: expected the same dtype, shape", "rank 0: float32 "
                              "(2,)", "rank 1: float32 (3,)"],
                 dist.all_reduce, clgrad.zeros(2 + r))
    print(f"rank {r}: mismatch error: {msg}", flush=True)
    expect(ValueError, ["float64"], dist.all_reduce,
           clgrad.zeros(2, dtype=clgrad.float32 if r == 0 else clgrad.float64))
    expect(ValueError, ["broadcast", "rank 0: float32 (2,) src=0; rank 1: float32 (2,) src=1"],
           dist.broadcast, clgrad.zeros(2), src=r)
    expect(ValueError, ["op=SUM", "op=MAX"], dist.all_reduce, clgrad.zeros(2),
           dist.ReduceOp.SUM if r == 0 else dist.ReduceOp.MAX)
    # an error on one rank only (an overlapping output) is raised on both
    t = clgrad.zeros(1).expand(3) if r == 1 else clgrad.zeros(3)
    expect(RuntimeError, ["do not overlap"] if r == 1 else ["rank 1 failed", "overlap"],
           dist.all_reduce, t)
    expect(TypeError, ["ReduceOp.AVG"], dist.all_reduce, clgrad.zeros(2, dtype=clgrad.int64),
           dist.ReduceOp.AVG)
    expect(ValueError, ["world_size=2"], dist.all_gather, [clgrad.zeros(2)], clgrad.zeros(2))
    expect(RuntimeError, ["twice"], dist.init_process_group, "mpi")
    expect(ValueError, ["group"], dist.get_rank, group="other")
    # a recv whose tensor differs from what was sent
    if r == 0:
        dist.send(clgrad.zeros(4), dst=1)
    else:
        expect(RuntimeError, ["recv: expected a float32 (3,)", "float32 (4,)", "rank 0"],
               dist.recv, clgrad.zeros(3), 0)
    ok = clgrad.ones(2)
    dist.all_reduce(ok)  # the group still works after the errors
    np.testing.assert_array_equal(ok.numpy(), [2.0, 2.0])


def init_checks():
    # the launcher's rank: MPICH's Hydra (and Intel MPI) set PMI_RANK, Open MPI its own
    r = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "-1")))
    assert r in (0, 1), "no rank variable from the launcher (PMI_RANK, OMPI_COMM_WORLD_RANK)"
    expect(ValueError, ["world_size is 5 but MPI says 2"], dist.init_process_group, "mpi",
           world_size=5)
    os.environ["RANK"] = "7"
    expect(ValueError, ["RANK is 7"], dist.init_process_group)
    del os.environ["RANK"]
    expect(ValueError, ["backend 'mpi'"], dist.init_process_group, "nccl")
    expect(ValueError, ["init_method"], dist.init_process_group, "mpi", "tcp://x:1")
    expect(ValueError, ["not been initialized"], dist.get_rank)
    os.environ["WORLD_SIZE"] = "2"
    os.environ["RANK"] = str(r)
    dist.init_process_group("mpi", init_method="env://")
    assert dist.get_rank() == r


def small_cnn(bn=False):
    layers = [nn.Conv2d(2, 4, 3, padding=1, groups=2), nn.ReLU()]
    if bn:
        layers.append(nn.BatchNorm2d(4))
    layers += [nn.Conv2d(4, 4, 3, groups=2, bias=False), nn.ReLU(), nn.Flatten(),
               nn.Linear(4 * 4 * 4, 3)]
    return nn.Sequential(*layers)


def ddp():
    init_checks()
    r, n = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(42)
    X = rng.standard_normal((8, 2, 6, 6)).astype(np.float32)
    Y = rng.integers(0, 3, 8)
    loss_fn = nn.CrossEntropyLoss()
    clgrad.manual_seed(0)
    ref = small_cnn()                      # rank 0's initial weights: the reference
    clgrad.manual_seed(0 if r == 0 else 100 + r)  # rank 1 differs: DDP must broadcast
    model = nn.parallel.DistributedDataParallel(small_cnn(), bucket_cap_mb=0.0005)
    assert len(model.bucket_sizes) > 1, model.bucket_sizes  # several buckets in flight
    for (k, a), b in zip(model.module.state_dict().items(), ref.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
    assert list(model.state_dict())[0].startswith("module.")
    opt = clgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = clgrad.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    mine = slice(4 * r, 4 * r + 4)
    for step in range(3):
        opt.zero_grad()
        loss_fn(model(clgrad.tensor(X[mine])), clgrad.tensor(Y[mine])).backward()
        opt.step()
        ref_opt.zero_grad()
        loss_fn(ref(clgrad.tensor(X)), clgrad.tensor(Y)).backward()
        ref_opt.step()
    for (k, a), b in zip(model.module.state_dict().items(), ref.state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    stats = model.comm_stats
    assert stats["bytes"] == 4 * sum(p.numel() for p in ref.parameters()), stats
    # the first bucket started while gradients of other parameters were still to come
    assert stats["launched_after"][0] < len(list(ref.parameters())), stats
    print(f"rank {r}: ddp equals single-process training ok", flush=True)

    # no_sync: half the local batch accumulated locally, the other half synced
    opt.zero_grad()
    ref_opt.zero_grad()
    with model.no_sync():
        (loss_fn(model(clgrad.tensor(X[mine][:2])), clgrad.tensor(Y[mine][:2])) / 2).backward()
    (loss_fn(model(clgrad.tensor(X[mine][2:])), clgrad.tensor(Y[mine][2:])) / 2).backward()
    loss_fn(ref(clgrad.tensor(X)), clgrad.tensor(Y)).backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
    print(f"rank {r}: no_sync ok", flush=True)

    # BatchNorm buffers: rank 0's running statistics reach rank 1 at the next forward
    clgrad.manual_seed(0)
    bn_model = nn.parallel.DistributedDataParallel(small_cnn(bn=True))
    bn_model(clgrad.tensor(X[mine]))  # each rank updates its running stats with its batch
    stats = bn_model.module[2].running_mean.numpy()
    both = [clgrad.zeros(4) for _ in range(n)]
    dist.all_gather(both, clgrad.tensor(stats))
    assert not np.allclose(both[0].numpy(), both[1].numpy())
    bn_model.eval()
    with clgrad.no_grad():
        bn_model(clgrad.tensor(X[mine]))  # syncs (the previous forward was a training one)
    np.testing.assert_array_equal(bn_model.module[2].running_mean.numpy(), both[0].numpy())
    print(f"rank {r}: buffers ok", flush=True)

    # unused parameters: head b is used on rank 0 only, head c nowhere
    class Heads(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = nn.Linear(3, 2), nn.Linear(3, 2), nn.Linear(3, 2)

        def forward(self, x):
            return self.a(x) + (self.b(x) if r == 0 else 0.0)

    clgrad.manual_seed(1)
    heads = nn.parallel.DistributedDataParallel(Heads(), find_unused_parameters=True)
    x = clgrad.tensor(data(r, (4, 3), clgrad.float32))
    heads(x).sum().backward()
    xs = [data(k, (4, 3), clgrad.float32) for k in range(n)]
    np.testing.assert_allclose(heads.module.a.weight.grad.numpy(),
                               np.mean([np.ones((2, 4)) @ v for v in xs], axis=0), rtol=1e-6)
    np.testing.assert_allclose(heads.module.b.weight.grad.numpy(),
                               np.ones((2, 4)) @ xs[0] / n, rtol=1e-6)
    assert heads.module.c.weight.grad is None
    clgrad.manual_seed(1)
    strict = nn.parallel.DistributedDataParallel(Heads())
    strict(x).sum().backward()
    expect(RuntimeError, ["find_unused_parameters=True"], strict, x)
    print(f"rank {r}: unused parameters ok", flush=True)
    import weakref
    alive = weakref.ref(heads)
    inner = heads.module
    del heads  # the parameters' hooks do not keep the wrapper alive (no gc needed)
    assert alive() is None
    inner(x).sum().backward()  # the hooks left on the module's parameters do nothing
    expect(ValueError, ["same parameters"], nn.parallel.DistributedDataParallel,
           nn.Linear(3, 2 + r))
    print(f"rank {r}: ddp ok", flush=True)


def hang():
    dist.init_process_group("mpi", timeout=2)
    if dist.get_rank() == 1:
        time.sleep(60)  # never joins: rank 0 must time out, not hang
    dist.all_reduce(clgrad.ones(3))


def crash():
    dist.init_process_group("mpi", timeout=20)
    if dist.get_rank() == 1:
        os._exit(3)  # dies without a word
    dist.all_reduce(clgrad.ones(3))


if __name__ == "__main__":
    {"collectives": collectives, "ddp": ddp, "hang": hang, "crash": crash}[sys.argv[1]]()
