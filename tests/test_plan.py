"""Launch plans (clgrad/ops/plan.py, issue 34): one Plan type, one structural key. A key that
missed a dependency would reuse a plan made for another layout or setting: a silently wrong
result. Each test changes one input of the key and checks a new plan and right values."""
import numpy as np
import pytest

import clgrad
from clgrad import backends, settings
from clgrad.ops import plan as plan_mod


def _plans_of(dev, tag):
    return {k for k in dev.plans if k and k[0] == tag}


def test_key_holds_every_part_of_a_layout_and_the_settings_epoch(monkeypatch):
    x = clgrad.arange(24, dtype=clgrad.float32).reshape(4, 6)
    base = plan_mod.key("t", (x, 2.0), ("k",))
    assert base == ("t", settings.epoch(), (4, 6), (6, 1), 0, clgrad.float32, float, "k")
    assert plan_mod.key("t", (x.t(),), ("k",)) != plan_mod.key("t", (x,), ("k",))  # strides
    assert plan_mod.key("t", (x[1:],),) != plan_mod.key("t", (x[:3],),)  # offset only
    assert plan_mod.key("t", (x.double(),),) != plan_mod.key("t", (x,),)  # dtype
    assert plan_mod.key("t", (x, 2),) != base[:-1]  # a raw argument's type
    monkeypatch.setenv("CLGRAD_CONV_TUNE", "off")  # any setting: a new epoch
    assert plan_mod.key("t", (x, 2.0), ("k",)) != base
    e = settings.epoch()
    monkeypatch.setattr(backends, "conv_algorithm", "direct")
    assert settings.epoch() == e + 1


def test_changed_offset_or_stride_gets_its_own_plan_and_right_values():
    """Same shape and kernel, another offset or stride: another plan, NumPy's values."""
    xn = np.arange(40, dtype=np.float32)
    x = clgrad.from_numpy(xn)
    dev = x._storage.device
    for a, b, an, bn in ((x[2:12], x[0:10], xn[2:12], xn[0:10]),
                         (x[0:10], x[5:15], xn[0:10], xn[5:15]),
                         (x[0:20:2], x[1:11], xn[0:20:2], xn[1:11]),
                         (x[0:10], x[5:15], xn[0:10], xn[5:15])):
        np.testing.assert_array_equal((a + b).numpy(), an + bn)
        np.testing.assert_array_equal((a * b).numpy(), an * bn)
    # the flat launches (offsets (2, 0), (0, 5), (1,)...): one plan per layout
    flat = {k for k in _plans_of(dev, "elementwise.cl") if k[2] == (10,) and "add" in k}
    assert len(flat) >= 2


def test_changed_setting_makes_a_new_plan(monkeypatch):
    """A settings change (here an environment write) bumps the epoch: the same add is planned
    again under the new epoch instead of reusing the old plan."""
    a = clgrad.from_numpy(np.arange(7, dtype=np.float32))
    b = clgrad.from_numpy(np.full(7, 0.5, np.float32))
    dev = a._storage.device
    np.testing.assert_array_equal((a + b).numpy(), np.arange(7) + 0.5)
    before = {k for k in _plans_of(dev, "elementwise.cl") if k[1] == settings.epoch()}
    assert before
    monkeypatch.setenv("CLGRAD_CONV_DEBUG", "")
    now = settings.epoch()
    np.testing.assert_array_equal((a + b).numpy(), np.arange(7) + 0.5)
    after = {k for k in _plans_of(dev, "elementwise.cl") if k[1] == now}
    assert after and not (after & before)


def test_plan_run_binds_buffers_and_values():
    """Plan.run / run_with bind buffers and per-call values at their indices and enqueue."""
    from clgrad.ops._util import flat_plan, empty, scalar
    a = clgrad.from_numpy(np.arange(5, dtype=np.float32))
    dev = a._storage.device
    out = empty((5,), clgrad.float32, dev)
    p = flat_plan(dev, "elementwise.cl", "mul_sb", {"T": "float", "IS_FLOAT": 1}, 5, out,
                   (a, scalar(clgrad.float32, 0)), ())
    assert p.mem[0::2] == [3, 5] and p.vals[0::2] == [7] and p.data == (None, 1)
    assert p.gsize[0] % p.lsize[0] == 0 and p.gsize[0] >= 5
    for v in (3.0, -2.0):
        p.run_with(dev, [out._storage.buffer, a._storage.buffer],
                   [scalar(clgrad.float32, v)])
        np.testing.assert_array_equal(out.numpy(), np.arange(5) * v)
    with pytest.raises(ValueError):  # a buffer more than the plan has places for
        p.run(dev, out._storage.buffer, a._storage.buffer, a._storage.buffer)


def test_add_fast_path_follows_every_change_of_signature():
    """add's fast path (a cached plan: no promotion, broadcast or layout checks) is taken only
    for the exact layouts and dtypes it was kept for: each variation below, run after a cached
    same-shape float32 add, gives NumPy's values and dtype (float64 differences) and grads."""
    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal((6, 6)), rng.standard_normal((6, 6))
    a32, b32 = (clgrad.from_numpy(v.astype(np.float32)) for v in (an, bn))
    af, bf = an.astype(np.float32), bn.astype(np.float32)
    for _ in range(3):  # cached
        np.testing.assert_array_equal((a32 + b32).numpy(), af + bf)
    cases = [
        (a32, b32.t(), an.astype(np.float32) + bn.astype(np.float32).T),     # strides
        (a32[1:], b32[:5], af[1:] + bf[:5]),                                 # offsets, shape
        (a32, clgrad.from_numpy(bn), an.astype(np.float32) + bn),            # promotion
        (a32, b32[0], an.astype(np.float32) + bn[0].astype(np.float32)),     # broadcast
        (a32.int(), b32.int(), an.astype(np.float32).astype(np.int32) +
         bn.astype(np.float32).astype(np.int32)),                            # dtype
        (a32, 2, an.astype(np.float32) + 2),                                 # a number
    ]
    for _ in range(2):  # the second round: each case's own plan cached
        for x, y, want in cases:
            got = x + y
            assert got.dtype == clgrad.from_numpy(np.asarray(want)).dtype
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    # alpha is never the fast path: it scales
    np.testing.assert_allclose(clgrad.add(a32, b32, alpha=2).numpy(), af + 2 * bf, rtol=1e-6)
    # gradients through the fast path: the incoming gradient to both inputs
    ag = clgrad.from_numpy(an.astype(np.float32)).requires_grad_()
    bg = clgrad.from_numpy(bn.astype(np.float32)).requires_grad_()
    g = rng.standard_normal((6, 6)).astype(np.float32)
    for _ in range(3):
        ag.grad = bg.grad = None
        y = ag + bg
        assert y.grad_fn is not None
        y.backward(clgrad.from_numpy(g))
        np.testing.assert_array_equal(ag.grad.numpy(), g)
        np.testing.assert_array_equal(bg.grad.numpy(), g)


def test_add_fast_path_checks_the_devices_and_keeps_errors():
    """A cached signature with the second operand on another device is not a hit (the plan
    lives in the first operand's device); shape errors keep their message."""
    a = clgrad.ones(4)
    for _ in range(3):
        a + a
    with pytest.raises((ValueError, RuntimeError), match="broadcast|size"):
        a + clgrad.ones(3)


def _bn_ref(x, w, b, eps=1e-5):
    mu = x.mean(axis=(0, 2, 3), keepdims=True)
    var = x.var(axis=(0, 2, 3), keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w[None, :, None, None] + b[None, :, None, None]


def test_batch_norm_on_a_cached_plan_with_and_without_grad():
    """batch_norm's statistics go to the plan's scratch pair when no Node can read them: calls
    without grad between calls with grad never change what backward reads (NumPy forward and
    running statistics; bias gradient = sum of g; weight gradient against PyTorch)."""
    import clgrad.nn.functional as F
    rng = np.random.default_rng(1)
    xn = rng.standard_normal((2, 3, 4, 5))
    wn, bn_ = rng.standard_normal(3), rng.standard_normal(3)
    gn = rng.standard_normal((2, 3, 4, 5))
    f32 = np.float32
    x = clgrad.from_numpy(xn.astype(f32))
    x2 = clgrad.from_numpy((2 * xn + 1).astype(f32))
    w = clgrad.from_numpy(wn.astype(f32)).requires_grad_()
    b = clgrad.from_numpy(bn_.astype(f32)).requires_grad_()
    rm, rv = clgrad.zeros(3), clgrad.ones(3)
    y = F.batch_norm(x, rm, rv, w, b, training=True)  # saves its statistics
    with clgrad.no_grad():
        for _ in range(3):  # the same plan, the scratch pair: other statistics written there
            y2 = F.batch_norm(x2, None, None, w.detach(), b.detach(), training=True)
    np.testing.assert_allclose(y2.numpy(), _bn_ref(2 * xn + 1, wn, bn_), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y.detach().numpy(), _bn_ref(xn, wn, bn_), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(rm.numpy(), 0.1 * xn.mean(axis=(0, 2, 3)), rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(rv.numpy(), 0.9 + 0.1 * xn.var(axis=(0, 2, 3), ddof=1),
                               rtol=1e-4)
    y.backward(clgrad.from_numpy(gn.astype(f32)))
    np.testing.assert_allclose(b.grad.numpy(), gn.sum(axis=(0, 2, 3)), rtol=1e-4, atol=1e-4)
    xhat = _bn_ref(xn, np.ones(3), np.zeros(3))
    np.testing.assert_allclose(w.grad.numpy(), (gn * xhat).sum(axis=(0, 2, 3)), rtol=1e-3,
                               atol=1e-3)
    torch = pytest.importorskip("torch")
    tw = torch.tensor(wn.astype(f32), requires_grad=True)
    tb = torch.tensor(bn_.astype(f32), requires_grad=True)
    tx = torch.tensor(xn.astype(f32), requires_grad=True)
    torch.nn.functional.batch_norm(tx, None, None, tw, tb, training=True).backward(
        torch.tensor(gn.astype(f32)))
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-4)


def _conv_ref(x, w, b, stride, pad):
    """NumPy float64 conv2d (cross-correlation), groups 1."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return y + (0 if b is None else b[None, :, None, None])


def test_conv2d_fast_path_follows_layouts_arguments_and_settings(monkeypatch):
    """conv2d on a cached signature replays its recorded launches; every change of an
    operand's layout, an argument or a setting takes the general path (and its own plan):
    NumPy float64 values throughout, and the algorithm reported is the one that ran."""
    import clgrad.nn.functional as F
    rng = np.random.default_rng(2)
    xn = rng.standard_normal((2, 4, 9, 9))
    wn = rng.standard_normal((5, 4, 3, 3))
    bn_ = rng.standard_normal(5)
    f32 = np.float32
    x, w, b = (clgrad.from_numpy(v.astype(f32)) for v in (xn, wn, bn_))
    xbig = clgrad.from_numpy(np.pad(xn, ((0, 0), (0, 0), (1, 0), (2, 0))).astype(f32))
    xview = xbig[:, :, 1:, 2:]  # x's values at an offset, other strides
    wt = clgrad.from_numpy(np.ascontiguousarray(wn.transpose(0, 2, 3, 1)).astype(f32)
                           ).permute(0, 3, 1, 2)  # w's values, channels-last strides
    cases = [((x, w, b), {"padding": 1}, (xn, wn, bn_, 1, 1)),
             ((xview, w, b), {"padding": 1}, (xn, wn, bn_, 1, 1)),
             ((x, wt, b), {"padding": 1}, (xn, wn, bn_, 1, 1)),
             ((x, w, None), {"padding": 1}, (xn, wn, None, 1, 1)),
             ((x, w, b), {"padding": 0}, (xn, wn, bn_, 1, 0)),
             ((x, w, b), {"padding": 1, "stride": 2}, (xn, wn, bn_, 2, 1)),
             ((x, w, b), {"padding": 1, "stride": (2, 2)}, (xn, wn, bn_, 2, 1))]
    for _ in range(3):  # the first round records, the later ones replay
        for args, kw, ref in cases:
            np.testing.assert_allclose(F.conv2d(*args, **kw).numpy(), _conv_ref(*ref),
                                       rtol=1e-4, atol=1e-4)
    dev = x._storage.device
    assert any(k[0] == "conv2d" for k in dev.plans if isinstance(k, tuple) and k)
    for algo in ("direct", "implicit", "im2col"):  # a setting: a new epoch, a new choice
        monkeypatch.setattr(backends, "conv_algorithm", algo)
        for _ in range(3):
            np.testing.assert_allclose(F.conv2d(x, w, b, padding=1).numpy(),
                                       _conv_ref(xn, wn, bn_, 1, 1), rtol=1e-4, atol=1e-4)
            assert backends.last_conv_algorithms["forward"] == algo
    fast = [v for k, v in dev.plans.items() if isinstance(k, tuple) and k and
            k[0] == "conv2d" and k[1] == settings.epoch()]
    # im2col allocates its workspace: recorded as a scratch buffer, allocated afresh per replay
    # (the values above: the later rounds replayed)
    assert len(fast) == 1 and fast[0][3] == "im2col" and fast[0][0].scratch


def test_record_launches_refuses_what_it_cannot_replay():
    """record_launches gives Plans only for launches whose buffers are all given ones; an
    allocation, a foreign buffer or two roles on one buffer give None (run still runs)."""
    from clgrad.ops._util import copy_raw, empty
    a = clgrad.from_numpy(np.arange(6, dtype=np.float32))
    out = empty((6,), clgrad.float32, a._storage.device)
    dev = a._storage.device
    got = plan_mod.record_launches(dev, lambda: copy_raw(out, a),
                                   (out._storage.buffer, a._storage.buffer))
    assert got is not None and len(got) == 1 and got[0][1] == (0, 1)
    np.testing.assert_array_equal(out.numpy(), np.arange(6))
    b = clgrad.from_numpy(np.full(6, 7, np.float32))
    got[0][0].run(dev, out._storage.buffer, b._storage.buffer)  # replayed on other buffers
    np.testing.assert_array_equal(out.numpy(), np.full(6, 7))
    assert plan_mod.record_launches(dev, lambda: copy_raw(out, a), (out._storage.buffer,)) \
        is None  # a's buffer is not given
    assert plan_mod.record_launches(dev, lambda: a + a, (a._storage.buffer,)) is None  # allocs
    assert plan_mod.record_launches(dev, lambda: copy_raw(out, a),
                                    (out._storage.buffer, out._storage.buffer)) is None
    assert "_capture" not in dev.__dict__


def test_record_launches_with_scratch_replays_workspaces_afresh():
    """With scratch=True a run's own workspaces (allocated and dropped inside it) are recorded
    as scratch roles past the given buffers; replay allocates them per call, gives their
    bytes back, and computes on the new operands; a buffer that outlives the run (a result)
    refuses."""
    from clgrad.ops._util import copy_raw, empty
    dev = clgrad.zeros(1)._storage.device
    a = clgrad.from_numpy(np.arange(6, dtype=np.float32))
    out = empty((6,), clgrad.float32, dev)

    def run():  # a -> workspace -> out, the workspace dropped at the end
        ws = empty((6,), clgrad.float32, dev)
        copy_raw(ws, a)
        copy_raw(out, ws)
    got = plan_mod.record_launches(dev, run, (out._storage.buffer, a._storage.buffer),
                                   scratch=True)
    np.testing.assert_array_equal(out.numpy(), np.arange(6))
    assert got is not None and got.scratch == (24,)
    assert [roles for _, roles in got] == [(2, 1), (0, 2)]
    assert plan_mod.record_launches(dev, run, (out._storage.buffer, a._storage.buffer)) \
        is None  # without scratch an allocation refuses
    b = clgrad.from_numpy(np.full(6, -3.5, np.float32))
    held = dev.allocated
    plan_mod.replay(dev, got, (out._storage.buffer, b._storage.buffer))
    assert dev.allocated == held
    np.testing.assert_array_equal(out.numpy(), np.full(6, -3.5, np.float32))
    kept = []
    assert plan_mod.record_launches(dev, lambda: kept.append(a + a), (a._storage.buffer,),
                                    scratch=True) is None  # its result outlives the run
    np.testing.assert_array_equal(kept[0].numpy(), 2 * np.arange(6))
    assert "_capture" not in dev.__dict__


def test_conv2d_blocked_passes_replay_with_workspaces(monkeypatch):
    """The blocked algorithm pads and packs into workspaces: its forward, input gradient and
    weight gradient are recorded with scratch buffers and replayed on later calls; values and
    gradients stay NumPy's (float64 reference) on every call, also with new values."""
    import clgrad.nn.functional as F
    monkeypatch.setattr(backends, "conv_algorithm", "blocked")
    rng = np.random.default_rng(5)
    f32 = np.float32
    wn, bn_ = rng.standard_normal((6, 4, 3, 3)), rng.standard_normal(6)
    dev = clgrad.zeros(1)._storage.device
    for i in range(4):  # the first call records, the later ones replay (new values each)
        xn, gn = rng.standard_normal((2, 4, 7, 7)), rng.standard_normal((2, 6, 4, 4))
        x = clgrad.from_numpy(xn.astype(f32)).requires_grad_()
        w = clgrad.from_numpy(wn.astype(f32)).requires_grad_()
        b = clgrad.from_numpy(bn_.astype(f32)).requires_grad_()
        y = F.conv2d(x, w, b, stride=2, padding=1)
        np.testing.assert_allclose(y.detach().numpy(), _conv_ref(xn, wn, bn_, 2, 1),
                                   rtol=1e-4, atol=1e-4)
        y.backward(clgrad.from_numpy(gn.astype(f32)))
        # d/dw[o,c,i,j] = sum g[n,o,y,x] xp[n,c,2y+i,2x+j]; d/dx by finite-free adjoint
        xp = np.pad(xn, ((0, 0), (0, 0), (1, 1), (1, 1)))
        gw = np.zeros_like(wn)
        gx = np.zeros_like(xp)
        for ki in range(3):
            for kj in range(3):
                patch = xp[:, :, ki:ki + 8:2, kj:kj + 8:2]
                gw[:, :, ki, kj] = np.einsum("nohw,nchw->oc", gn, patch)
                gx[:, :, ki:ki + 8:2, kj:kj + 8:2] += np.einsum("nohw,oc->nchw", gn,
                                                                wn[:, :, ki, kj])
        np.testing.assert_allclose(w.grad.numpy(), gw, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(x.grad.numpy(), gx[:, :, 1:-1, 1:-1], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(b.grad.numpy(), gn.sum(axis=(0, 2, 3)), rtol=1e-4,
                                   atol=1e-4)
        for tag in ("conv2d", "conv2d_grad_input", "conv2d_grad_weight"):
            kept = [v for k, v in dev.plans.items() if isinstance(k, tuple) and k and
                    k[0] == tag and k[1] == settings.epoch()]
            assert len(kept) == 1 and kept[0][0].scratch, tag
        assert backends.last_conv_algorithms == {"forward": "blocked", "grad_input": "blocked",
                                                 "grad_weight": "blocked"}


def test_strided_launch_1d_plans_follow_layouts_and_never_fix_raw_values():
    """launch_1d's strided launches (views: a gradient summed with a slice of cat's) keep a
    Plan per layout of out and operands; every offset, stride and shape change gives its own,
    new values are read through the buffers, and raw operands (numbers) are bound per call,
    never planned: NumPy values throughout."""
    from clgrad.ops import _util
    rng = np.random.default_rng(11)
    f32 = np.float32
    dev = clgrad.zeros(1)._storage.device
    for _ in range(3):  # the first round plans, the later ones replay (new values each)
        bn = rng.standard_normal((4, 12, 5, 6)).astype(f32)
        dn = rng.standard_normal((4, 6, 5, 6)).astype(f32)
        big, d = clgrad.from_numpy(bn), clgrad.from_numpy(dn)
        for sl in (slice(0, 6), slice(3, 9), slice(6, 12)):  # offsets
            np.testing.assert_array_equal((big[:, sl] + d).numpy(), bn[:, sl] + dn)
            np.testing.assert_array_equal((d - big[:, sl]).numpy(), dn - bn[:, sl])
        np.testing.assert_array_equal((big[:, ::2] * d).numpy(), bn[:, ::2] * dn)  # strides
        t = big.permute(0, 1, 3, 2)[:, 2:8]  # another stride order, other shape
        np.testing.assert_array_equal((t + t).numpy(), 2 * bn.transpose(0, 1, 3, 2)[:, 2:8])
        for c in (2.5, -1.0):  # a raw operand: its value bound per call
            np.testing.assert_array_equal((big[:, 3:9] * c).numpy(), bn[:, 3:9] * f32(c))
    strided = [k for k in dev.plans if isinstance(k, tuple) and len(k) > 2 and
               _util._STRIDED in k and k[1] == settings.epoch()]
    assert len(strided) >= 5


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_binary_fast_paths_values_grads_and_refusals(op):
    """sub and mul take add's fast path too: on a cached signature the values, gradients
    (NumPy: d(a-b) = (g, -g), d(a*b) = (g*b, g*a)) and errors stay the general path's."""
    rng = np.random.default_rng(3)
    an, bn, gn = (rng.standard_normal((3, 4)).astype(np.float32) for _ in range(3))
    fn = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y}[op]
    want_ga = {"add": gn, "sub": gn, "mul": gn * bn}[op]
    want_gb = {"add": gn, "sub": -gn, "mul": gn * an}[op]
    for _ in range(3):  # the later rounds on the cached plan
        a = clgrad.from_numpy(an).requires_grad_()
        b = clgrad.from_numpy(bn).requires_grad_()
        y = fn(a, b)
        np.testing.assert_array_equal(y.detach().numpy(), fn(an, bn))
        y.backward(clgrad.from_numpy(gn))
        np.testing.assert_allclose(a.grad.numpy(), want_ga, rtol=1e-6)
        np.testing.assert_allclose(b.grad.numpy(), want_gb, rtol=1e-6)
        with clgrad.no_grad():  # the same plan without a graph
            np.testing.assert_array_equal(fn(a, b).numpy(), fn(an, bn))
        # in-place writes into an operand after the call: backward sees the version change
        if op == "mul":
            a2 = clgrad.from_numpy(an).requires_grad_()
            b2 = clgrad.from_numpy(bn)
            y2 = a2 * b2
            b2.add_(1)
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                y2.backward(clgrad.from_numpy(gn))
    t = clgrad.from_numpy(np.array([True, False]))
    if op == "sub":
        for _ in range(2):
            with pytest.raises(RuntimeError, match="with two bool tensors is not supported"):
                t - t
    else:
        np.testing.assert_array_equal(fn(t, t).numpy(), fn(np.array([True, False]),
                                                            np.array([True, False])))


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_binary_fast_paths_of_strided_operands_follow_each_layout(op):
    """Two tensors of one shape in any layouts (views at offsets, transposed, stepped: the
    engine's sum of a gradient and a view of another) take the binary fast path once the
    general path ran them unchanged: each pair of layouts its own plan, NumPy's values and
    gradients on every round; mixed dtypes (a promotion) keep the general path."""
    rng = np.random.default_rng(8)
    base = rng.standard_normal((6, 10)).astype(np.float32)
    bt = clgrad.from_numpy(base)
    fn = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y}[op]
    views = [(lambda t: t[:, 2:7], lambda n: n[:, 2:7]),        # offset, strides of (6, 10)
             (lambda t: t[1:6, :5], lambda n: n[1:6, :5]),       # another offset
             (lambda t: t[:5, ::2], lambda n: n[:5, ::2]),       # stepped
             (lambda t: t.t()[:5, :5], lambda n: n.T[:5, :5])]   # transposed
    dense = rng.standard_normal((5, 5)).astype(np.float32)
    for _ in range(3):  # round 0 plans, later rounds hit
        for (va, na) in views:
            for (vb, nb) in views + [(lambda t: clgrad.from_numpy(dense), lambda n: dense)]:
                a = va(bt)
                a = a[:5] if a.shape[0] == 6 else a
                b = vb(bt)
                b = b[:5] if b.shape[0] == 6 else b
                an, bn = na(base), nb(base)
                an = an[:5] if an.shape[0] == 6 else an
                bn = bn[:5] if bn.shape[0] == 6 else bn
                np.testing.assert_array_equal(fn(a, b).numpy(), fn(an, bn))
                np.testing.assert_array_equal(fn(b, a).numpy(), fn(bn, an))
        x = clgrad.from_numpy(base[:5, :5].copy()).requires_grad_()
        y = clgrad.from_numpy(base[1:, 5:].T.copy()).requires_grad_()
        out = fn(x, y.t())  # a transposed view of a leaf: its gradient is transposed back
        g = rng.standard_normal((5, 5)).astype(np.float32)
        out.backward(clgrad.from_numpy(g))
        xn, yn = base[:5, :5], base[1:, 5:]
        want_x = {"add": g, "sub": g, "mul": g * yn}[op]
        want_y = {"add": g, "sub": -g, "mul": g * xn}[op].T
        np.testing.assert_allclose(x.grad.numpy(), want_x, rtol=1e-6)
        np.testing.assert_allclose(y.grad.numpy(), want_y, rtol=1e-6)
    if clgrad.default_device().fp64:  # same shape, other dtypes: promoted on every call
        for _ in range(2):
            d = clgrad.from_numpy(base.astype(np.float64))
            got = fn(bt[:, 1:6], d[:, 1:6])
            assert got.dtype == clgrad.float64
            np.testing.assert_array_equal(got.numpy(), fn(base[:, 1:6].astype(np.float64),
                                                          base[:, 1:6].astype(np.float64)))


def test_conv2d_input_gradient_replayed_across_layouts():
    """conv2d's input gradient replays its recorded launches on a cached signature (the
    backward of a same-layout call); other strides, paddings or gradient layouts take the
    general path. Values: float64 finite differences of the NumPy reference through R."""
    import clgrad.nn.functional as F
    rng = np.random.default_rng(4)
    xn = rng.standard_normal((2, 3, 6, 6))
    wn = rng.standard_normal((4, 3, 3, 3))
    w = clgrad.from_numpy(wn)
    for stride, pad in ((1, 1), (1, 0), (2, 1), (1, 1)):
        y_shape = _conv_ref(xn, wn, None, stride, pad).shape
        r = rng.standard_normal(y_shape)
        # the vector-Jacobian product R^T J by central differences, every element of x
        eps, want = 1e-6, np.zeros_like(xn)
        for i in np.ndindex(xn.shape):
            d = np.zeros_like(xn)
            d[i] = eps
            want[i] = ((_conv_ref(xn + d, wn, None, stride, pad) -
                        _conv_ref(xn - d, wn, None, stride, pad)) * r).sum() / (2 * eps)
        for rnd in range(3):  # the later rounds replay
            x = clgrad.from_numpy(xn).requires_grad_()
            g = clgrad.from_numpy(r) if rnd != 2 else \
                clgrad.from_numpy(np.ascontiguousarray(r.transpose(0, 1, 3, 2))).transpose(2, 3)
            F.conv2d(x, w, None, stride=stride, padding=pad).backward(g)
            np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6, atol=1e-6)
            assert backends.last_conv_algorithms["grad_input"]


def test_tensor_number_fast_paths_follow_the_number_and_dtype():
    """tensor OP number on a cached plan: the number's value is bound per call and its type
    is in the key (an int after a float, a bool, a promotion to float): NumPy's values and
    PyTorch's dtypes; gradients of a * 3, a + 1, a - 1; wrap-around of uint8 + 300."""
    f = np.arange(6, dtype=np.float32) - 2.5
    i = np.arange(6, dtype=np.int64) - 3
    a, ai = clgrad.from_numpy(f), clgrad.from_numpy(i)
    u = clgrad.from_numpy(np.array([10, 250], np.uint8))
    for _ in range(3):  # cached from the second round on
        for v in (2, 2.5, -1, True):
            np.testing.assert_array_equal((a * v).numpy(), f * np.float32(v))
            np.testing.assert_array_equal((a + v).numpy(), f + np.float32(v))
            if v is True:  # PyTorch's sub_check: a Python bool is refused too
                with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
                    a - v
            else:
                np.testing.assert_array_equal((a - v).numpy(), f - np.float32(v))
        got = ai * 2
        assert got.dtype == clgrad.int64
        np.testing.assert_array_equal(got.numpy(), i * 2)
        got = ai * 2.5  # promoted to the default float dtype: the general path
        assert got.dtype == clgrad.float32
        np.testing.assert_allclose(got.numpy(), i * 2.5)
        np.testing.assert_array_equal((u + 300).numpy(), np.array([54, 38], np.uint8))
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool"):
            clgrad.from_numpy(np.array([True])) - 1
    for fn, want in ((lambda x: x * 3, 3.0), (lambda x: x + 1, 1.0), (lambda x: x - 1, 1.0)):
        for _ in range(3):
            x = clgrad.from_numpy(f).requires_grad_()
            fn(x).backward(clgrad.ones(6))
            np.testing.assert_array_equal(x.grad.numpy(), np.full(6, want, np.float32))
    torch = pytest.importorskip("torch")
    assert str((ai * 2.5).dtype).split(".")[-1] == str(
        (torch.from_numpy(i) * 2.5).dtype).split(".")[-1]


def test_a_capture_in_another_thread_during_a_recording_keeps_its_launches():
    """record_launches hooks the device (``dev._capture``, an instance attribute) while it
    records; a graph captured meanwhile by another thread hooks the class (``Device._capture``).
    The capturing thread's launches must still reach its graph, not the recorder (which ran
    them eagerly, so the graph missed them and its replays computed nothing: stale outputs)."""
    import threading
    from clgrad.ops._util import copy_raw, empty
    a = clgrad.from_numpy(np.arange(6, dtype=np.float32))
    out = empty((6,), clgrad.float32, a._storage.device)
    dev = a._storage.device
    x = clgrad.from_numpy(np.ones(4, np.float32))
    (x * 3).numpy()  # warm: mul's kernel built, no build inside the capture
    g, started, captured, got = clgrad.cuda.CUDAGraph(), threading.Event(), threading.Event(), {}

    def capture():
        started.wait()
        try:
            with clgrad.cuda.graph(g):
                got["y"] = x * 3
        finally:
            captured.set()

    def run():  # the recorded op: another thread captures a graph while it records
        started.set()
        assert captured.wait(60)
        copy_raw(out, a)
    t = threading.Thread(target=capture)
    t.start()
    plans = plan_mod.record_launches(dev, run, (out._storage.buffer, a._storage.buffer))
    t.join()
    assert plans is None  # another thread's work spoils a recording (kept conservative)
    np.testing.assert_array_equal(out.numpy(), np.arange(6))  # run ran
    assert "_capture" not in dev.__dict__
    for v in (2.0, -5.0):
        with clgrad.no_grad():
            x.copy_(clgrad.from_numpy(np.full(4, v, np.float32)))
        g.replay()
        np.testing.assert_array_equal(got["y"].numpy(), np.full(4, 3 * v))
    assert g.num_kernels >= 1


def test_two_threads_recording_at_once_keep_no_wrong_recording(monkeypatch):
    """Two threads entering record_launches together (two first calls of a signature): the
    check for a recording already running and the hooking must be one step, else both hook the
    device, one recorder sees nothing (a clean, empty recording: a replay that computes
    nothing) and the second unhook fails (AttributeError). Forced here: both threads pass
    the recorder's construction together, then both launch once both are in ``run``."""
    import threading
    from clgrad.ops._util import copy_raw, empty
    dev = clgrad.zeros(1)._storage.device
    made, running = threading.Barrier(2, timeout=20), threading.Barrier(2, timeout=20)

    class Together(plan_mod._Recorder):
        def __init__(self):
            super().__init__()
            made.wait()
    monkeypatch.setattr(plan_mod, "_Recorder", Together)
    got = {}

    def one(i):
        a = clgrad.from_numpy(np.arange(6, dtype=np.float32) * (i + 1))
        out = empty((6,), clgrad.float32, dev)

        def run():
            running.wait()
            copy_raw(out, a)
        try:
            got[i] = plan_mod.record_launches(dev, run, (out._storage.buffer,
                                                          a._storage.buffer)), out
        except Exception as e:  # noqa: BLE001  (reported below)
            got[i] = e
    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert "_capture" not in dev.__dict__
    for i in range(2):
        assert not isinstance(got[i], Exception), got[i]
        plans, out = got[i]
        np.testing.assert_array_equal(out.numpy(), np.arange(6) * (i + 1))  # run ran
        if plans is not None:  # a recording kept must replay the op
            assert len(plans) == 1
            b = clgrad.from_numpy(np.full(6, 7, np.float32))
            plans[0][0].run(dev, *[(out._storage.buffer, b._storage.buffer)[r]
                                   for r in plans[0][1]])
            np.testing.assert_array_equal(out.numpy(), np.full(6, 7))


def test_key_of_raw_arguments_is_their_type_and_objects_with_a_layout_are_read():
    """Raw argument types are remembered (no exception per call) only where no instance can
    carry a layout (static C types: numbers, NumPy scalars): an object of a class written in
    Python, with a ``__dict__`` or a ``__getattr__``, is read afresh each time."""
    x = clgrad.arange(6, dtype=clgrad.float32)
    for _ in range(2):  # the second round takes the remembered types
        assert plan_mod.key("t", (np.float32(1), np.int32(2), 3, None, x)) == (
            "t", settings.epoch(), np.float32, np.int32, int, None, (6,), (1,), 0,
            clgrad.float32)

    class Loose:  # instances with a __dict__: one may have a layout, the next not
        pass
    bare, laid = Loose(), Loose()
    laid._shape, laid._strides, laid._offset, laid._storage = (2,), (1,), 3, x._storage
    assert plan_mod.key("t", (bare,))[2:] == (Loose,)
    assert plan_mod.key("t", (laid,))[2:] == ((2,), (1,), 3, clgrad.float32)
    assert plan_mod.key("t", (bare,))[2:] == (Loose,)

    class Slotted:  # no __dict__, but a class of Python's: its __getattr__ may give a layout
        __slots__ = ("on",)

        def __getattr__(self, name):
            if self.on and name in ("_shape", "_strides", "_offset", "_storage"):
                return {"_shape": (4,), "_strides": (2,), "_offset": 1,
                        "_storage": x._storage}[name]
            raise AttributeError(name)
    off, on = Slotted(), Slotted()
    off.on, on.on = False, True
    assert plan_mod.key("t", (off,))[2:] == (Slotted,)
    assert plan_mod.key("t", (on,))[2:] == ((4,), (2,), 1, clgrad.float32)
