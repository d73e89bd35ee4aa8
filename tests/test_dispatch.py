"""The per-op dispatch caches (issue 23): launch plans, checks and argument splits cached per
signature must give the same values as a fresh plan for every layout that shares a key's
neighbours (other offsets, strides, dtypes, scalar types), and never accept arguments the
checks refuse. Oracles: NumPy on the same values, and PyTorch's errors."""
import numpy as np
import pytest

import clgrad as torch
from clgrad.ops import _util
from clgrad.ops import matmul as mm
from clgrad.runtime import device as rt


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def test_flat_plan_offsets_and_scalars():
    """Two launches with one plan key's neighbours: views at other offsets (the packed views
    are part of the plan) and other scalars (set per call, never baked in)."""
    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal(64, dtype=np.float32), rng.standard_normal(64, dtype=np.float32)
    a, b = _t(an), _t(bn)
    for k in range(4):  # same n, other offsets: each its own plan
        np.testing.assert_array_equal((a[k:k + 32] + b[3 - k:35 - k]).numpy(),
                                      an[k:k + 32] + bn[3 - k:35 - k])
    for s in (2.0, -3.5, 0.25):  # same plan, other scalar values
        np.testing.assert_array_equal((a * s).numpy(), an * np.float32(s))
    ai = _t(np.arange(64, dtype=np.int32))
    np.testing.assert_array_equal((ai + 7).numpy(), np.arange(64, dtype=np.int32) + 7)
    np.testing.assert_array_equal((a + b).numpy(), an + bn)  # the first plan again


def test_flat_plan_in_place_and_fill_views():
    """fill_ and add_ through views at several offsets of one storage (plans per offset)."""
    x = torch.zeros(12)
    want = np.zeros(12, np.float32)
    for k in range(3):
        x[4 * k:4 * k + 4].fill_(k + 1)
        want[4 * k:4 * k + 4] = k + 1
    x[2:6].add_(torch.ones(4))
    want[2:6] += 1
    np.testing.assert_array_equal(x.numpy(), want)


def test_launch_split_arguments_of_every_kind():
    """Device.launch's per-type-signature split: one kernel launched with the same argument
    types and new values, and with another type at one position (NumPy scalar against bytes),
    gives NumPy's values each time."""
    a = _t(np.arange(8, dtype=np.float32))
    out = torch.empty(8)
    dev = a._storage.device
    k = dev.kernel("elementwise.cl", "add_sb", _util.defines_for(a.dtype))
    for y in (np.float32(1.5), np.float32(-2.0), np.array(4.0, np.float32).tobytes()):
        dev.launch(k, (8,), (8,), np.int64(8), np.int32(1), _util.shape_arg((8,)),
                   out._storage.buffer, _util.view_arg(out), a._storage.buffer,
                   _util.view_arg(a), y)
        v = np.frombuffer(y, np.float32)[0] if isinstance(y, bytes) else y
        np.testing.assert_array_equal(out.numpy(), np.arange(8, dtype=np.float32) + v)
    assert rt.arg_kind(b"x") == 1 and rt.arg_kind(a._storage.buffer) == 0


def test_gemm_plan_other_layouts():
    """gemm's cached plan: the same shapes with other strides (a transposed view) and offsets
    (a slice) plan again and match NumPy; alpha and beta are per call."""
    rng = np.random.default_rng(1)
    an = rng.standard_normal((9, 7), dtype=np.float32)
    bn = rng.standard_normal((7, 5), dtype=np.float32)
    a, b = _t(an), _t(bn)
    np.testing.assert_allclose((a @ b).numpy(), an @ bn, rtol=1e-5, atol=1e-5)
    at = _t(an.T.copy()).t()  # same shape, other strides
    np.testing.assert_allclose((at @ b).numpy(), an @ bn, rtol=1e-5, atol=1e-5)
    big = _t(np.concatenate([np.zeros((1, 7), np.float32), an]))
    np.testing.assert_allclose((big[1:] @ b).numpy(), an @ bn, rtol=1e-5, atol=1e-5)
    c = _t(np.ones((9, 5), np.float32))
    for alpha, beta in ((1.0, 0.0), (2.0, 1.0), (-0.5, 3.0)):
        c0 = c.numpy()
        mm.gemm(c, a, b, alpha=alpha, beta=beta)
        np.testing.assert_allclose(c.numpy(), alpha * (an @ bn) + beta * c0, rtol=1e-4,
                                   atol=1e-4)


def test_conv_check_cache_keeps_exact_types():
    """A cached conv2d check for groups=1 / stride=1 does not let groups=True or stride=1.0
    through (PyTorch raises for both), and other shapes are still checked."""
    x, w = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)
    y = torch.nn.functional.conv2d(x, w, stride=1, groups=1)  # cached
    want = torch.nn.functional.conv2d(x, w, stride=(1, 1), groups=1)
    np.testing.assert_array_equal(y.numpy(), want.numpy())
    with pytest.raises(TypeError):
        torch.nn.functional.conv2d(x, w, groups=True)
    with pytest.raises(TypeError):
        torch.nn.functional.conv2d(x, w, stride=1.0)
    with pytest.raises(RuntimeError):
        torch.nn.functional.conv2d(torch.randn(1, 4, 5, 5), w, stride=1, groups=1)


def test_record_fast_exit_sees_rebased_views():
    """A view taken before its root was written in place with a grad-requiring value
    requires grad afterwards: an op on it records a Node (the fast exit must not skip it)."""
    root = torch.zeros(4)
    v = root[1:3]
    g = torch.ones(4, requires_grad=True)
    root.mul_(0).add_(g * 2)  # root now depends on g
    out = (v + 3).sum()  # add reads no requires_grad property before record
    assert out.requires_grad
    out.backward()
    np.testing.assert_array_equal(g.grad.numpy(), [0, 2, 2, 0])
    with torch.no_grad():
        assert not (g * 2).requires_grad


@pytest.mark.parametrize("relu", [False, True])
def test_batchnorm_counts_batches_in_its_forward_launch(relu):
    """BatchNorm2d's num_batches_tracked += 1 per training forward, inside the forward's one
    launch (BN_COUNT; with a fused ReLU too), and its version moves (autograd sees the write);
    eval does not count; the outputs and running statistics are those of NumPy's float64
    batch norm; a count at an offset inside a larger storage is the element counted."""
    from clgrad.runtime import launch_count
    bn = torch.nn.BatchNorm2d(3)
    net = torch.nn.Sequential(bn, torch.nn.ReLU()) if relu else bn
    xn = np.random.default_rng(0).standard_normal((2, 3, 4, 4))
    x = torch.tensor(xn, dtype=torch.float32)
    v0 = bn.num_batches_tracked._version
    for i in range(3):
        n0 = launch_count()
        y = net(x)
        assert launch_count() - n0 == 1
    assert int(bn.num_batches_tracked.item()) == 3
    assert bn.num_batches_tracked._version == v0 + 3
    mu, var = xn.mean((0, 2, 3)), xn.var((0, 2, 3))
    want = (xn - mu[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5)
    np.testing.assert_allclose(y.detach().numpy(), np.maximum(want, 0) if relu else want,
                               rtol=1e-5, atol=1e-5)
    rm = 0.0
    for _ in range(3):
        rm = 0.9 * rm + 0.1 * mu
    np.testing.assert_allclose(bn.running_mean.numpy(), rm, rtol=1e-5, atol=1e-6)
    bn.eval()
    net(x)
    assert int(bn.num_batches_tracked.item()) == 3
    bn.train()
    store = torch.tensor([7, 40, 9], dtype=torch.int64)
    bn.num_batches_tracked = store[1]  # a 0-dim view at offset 1 of another storage
    net(x)
    assert store.tolist() == [7, 41, 9]


def test_batch_norm_count_argument_is_checked():
    """F.batch_norm's count (clgrad's own) must be a one-element int64 tensor in training."""
    from clgrad.ops import norm
    x = torch.randn(2, 3, 4, 4)
    rm, rv = torch.zeros(3), torch.ones(3)
    with pytest.raises(TypeError, match="count"):
        norm.batch_norm(x, rm, rv, training=True, count=torch.zeros(1))
    with pytest.raises(TypeError, match="count"):
        norm.batch_norm(x, rm, rv, training=False, count=torch.zeros(1, dtype=torch.int64))
    c = torch.zeros((), dtype=torch.int64)
    norm.batch_norm(x, rm, rv, training=True, count=c)
    assert int(c.item()) == 1


def test_conv_plans_per_algorithm_dtype_and_local_memory():
    """conv2d's cached plans: one problem under several algorithms, in float32 and float64,
    and on a device whose local memory shrank (its key changes: planned again) all match
    NumPy's float64 reference, forward and both gradients."""
    from clgrad import backends
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 7, 7))
    w = rng.standard_normal((6, 2, 3, 3))
    g = rng.standard_normal((2, 6, 7, 7))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # n c h w kh kw
    cols = cols.reshape(2, 2, 2, 7, 7, 3, 3)                                   # n g c h w kh kw
    wg = w.reshape(2, 3, 2, 3, 3)                                              # g o c kh kw
    want = np.einsum("ngchwij,gocij->ngohw", cols, wg).reshape(2, 6, 7, 7)
    gw_want = np.einsum("ngchwij,ngohw->gocij", cols, g.reshape(2, 2, 3, 7, 7)).reshape(w.shape)
    saved = backends.conv_algorithm
    dev = torch.default_device()
    try:
        for algo in ("implicit", "direct", "depthwise", "implicit"):
            for dt, tol in ((torch.float32, 1e-4),) + (((torch.float64, 1e-10),)
                                                        if dev.fp64 else ()):
                backends.conv_algorithm = algo
                xt = torch.tensor(x, dtype=dt, requires_grad=True)
                wt = torch.tensor(w, dtype=dt, requires_grad=True)
                y = torch.nn.functional.conv2d(xt, wt, padding=1, groups=2)
                y.backward(torch.tensor(g, dtype=dt))
                np.testing.assert_allclose(y.detach().numpy(), want, rtol=tol, atol=tol)
                np.testing.assert_allclose(wt.grad.numpy(), gw_want, rtol=tol, atol=tol)
        local = dev.local_mem_size
        dev.local_mem_size = 1024  # too little for most plans: others (or fallbacks) run
        try:
            backends.conv_algorithm = "implicit"
            y = torch.nn.functional.conv2d(torch.tensor(x, dtype=torch.float32),
                                           torch.tensor(w, dtype=torch.float32), padding=1,
                                           groups=2)
            np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4)
        finally:
            dev.local_mem_size = local
    finally:
        backends.conv_algorithm = saved


def test_scalar_inplace_one_launch_and_values():
    """``t OP= number`` outside autograd writes straight into t in one launch: values against
    NumPy on contiguous and strided views, integer wraparound, the version bumped once per
    write; what it cannot do takes the general path (autograd involved, a dtype change, alpha)
    with the same errors (overlapping targets, a leaf that requires grad)."""
    rng = np.random.default_rng(5)
    base = rng.standard_normal((6, 8)).astype(np.float32)
    for op, npop in (("add_", np.add), ("sub_", np.subtract), ("mul_", np.multiply)):
        t = _t(base)
        v = t[1::2, ::3]  # a strided view: written through its strides
        n0, v0 = rt.launch_count(), t._version
        getattr(v, op)(1.5)
        assert rt.launch_count() - n0 == 1 and t._version == v0 + 1
        want = base.copy()
        want[1::2, ::3] = npop(want[1::2, ::3], np.float32(1.5))
        np.testing.assert_array_equal(t.numpy(), want)
    u = _t(np.array([250, 3], dtype=np.uint8))
    u += 10
    np.testing.assert_array_equal(u.numpy(), np.array([4, 13], dtype=np.uint8))
    i = _t(np.arange(4, dtype=np.int64))
    i *= 3
    np.testing.assert_array_equal(i.numpy(), np.arange(4) * 3)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.add_(0.5)  # float result into int64: the general path's error
    i.add_(2, alpha=3)  # alpha: the general path
    np.testing.assert_array_equal(i.numpy(), np.arange(4) * 3 + 6)
    np.testing.assert_array_equal(torch.sub(_t(np.arange(3.0)), 2, alpha=0.5).numpy(),
                                  [-1.0, 0.0, 1.0])  # a number scaled by alpha (PyTorch's)
    with pytest.raises(RuntimeError, match="memory location"):
        _t(np.ones(1, np.float32)).expand(4).add_(1.0)
    leaf = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.mul_(2.0)
    with torch.no_grad():
        leaf.mul_(2.0)
    np.testing.assert_array_equal(leaf.detach().numpy(), [2, 2, 2])
    x = torch.ones(3, requires_grad=True)
    y = x * 1.0
    y.mul_(3.0)  # autograd involved: recorded through the general path
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3, 3, 3])
