"""Captured kernel sequences (clgrad/capture/): replays equal the eager steps bit for bit,
re-capture on new signatures, clear refusals, no memory growth. The oracle is the same model
trained eagerly on the same batches (same kernels, same order: equal bits)."""
import warnings

import numpy as np
import pytest

import clgrad as torch
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.capture import CaptureError

STEPS = 4


def _net(p_drop):
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.Dropout(p_drop), nn.Flatten(), nn.Linear(4 * 6 * 6, 5))


def _opt(name, params):
    multi = name.endswith("-foreach")
    name = name.removesuffix("-foreach")
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-3, foreach=multi)
    if name == "sgd0":
        return torch.optim.SGD(params, lr=0.1, weight_decay=1e-3, foreach=multi)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-2, weight_decay=1e-3, foreach=multi)
    if name == "adamw":
        # fused=True, or foreach=False for one launch per parameter (None is multi-tensor)
        return torch.optim.AdamW(params, lr=1e-2, fused=multi, foreach=None if multi else False)
    return torch.optim.RMSprop(params, lr=1e-2, momentum=0.5)


def _batches():
    rng = np.random.default_rng(7)
    return [(rng.standard_normal((2, 3, 6, 6)).astype(np.float32),
             rng.integers(0, 5, 2).astype(np.int64)) for _ in range(STEPS)]


def _step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def _train(opt_name, mode, p_drop=0.3):
    """Per-step losses and the final parameters and buffers; mode 'eager', 'graph' (capture
    before any eager step) or 'compile'; the learning rate changes every step."""
    model = _net(p_drop)
    opt = _opt(opt_name, model.parameters())
    torch.manual_seed(123)  # the dropout seeds
    losses = []
    if mode == "graph":
        sx, sy = torch.zeros(2, 3, 6, 6), torch.zeros(2, dtype=torch.int64)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            sloss = _step(model, opt, sx, sy)
    elif mode == "compile":
        step = torch.compile(lambda x, y: _step(model, opt, x, y), mode="reduce-overhead")
    for i, (xb, yb) in enumerate(_batches()):
        for group in opt.param_groups:
            group["lr"] = 0.05 / (i + 1)
        x, y = torch.tensor(xb), torch.tensor(yb)
        if mode == "eager":
            loss = _step(model, opt, x, y)
        elif mode == "graph":
            sx.copy_(x)
            sy.copy_(y)
            g.replay()
            loss = sloss
        else:
            loss = step(x, y)
        losses.append(loss.item())
    state = [t.detach().numpy() for t in model.state_dict().values()]
    return losses, state


@pytest.mark.parametrize("opt_name", ["sgd", "adam", "adamw", "rmsprop", "sgd-foreach",
                                      "adamw-foreach"])
@pytest.mark.parametrize("mode", ["graph", "compile"])
def test_replay_equals_eager_bitwise(opt_name, mode):
    ref_losses, ref_state = _train(opt_name.removesuffix("-foreach"), "eager")
    losses, state = _train(opt_name, mode)
    assert losses == ref_losses
    assert len(state) == len(ref_state)
    for a, b in zip(state, ref_state):
        assert a.tobytes() == b.tobytes()
    assert len(set(ref_losses)) == STEPS  # the steps did change the model


def test_dropout_replays_draw_new_masks():
    x = torch.ones(64)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = F.dropout(x, 0.5, training=True)
    masks = []
    for _ in range(3):
        g.replay()
        masks.append(y.numpy() != 0)
    assert not np.array_equal(masks[0], masks[1])
    assert not np.array_equal(masks[1], masks[2])
    torch.manual_seed(5)
    g.replay()
    replayed = y.numpy()
    torch.manual_seed(5)
    eager = F.dropout(x, 0.5, training=True).numpy()
    assert replayed.tobytes() == eager.tobytes()


def test_replay_of_forward_follows_static_input():
    torch.manual_seed(1)
    w = torch.randn(3, 2)
    x = torch.zeros(4, 3)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = (x @ w).relu() + 1
    wn = w.numpy()
    for s in range(3):
        xn = np.random.default_rng(s).standard_normal((4, 3)).astype(np.float32)
        x.copy_(torch.tensor(xn))
        g.replay()
        assert y.numpy().tobytes() == ((torch.tensor(xn) @ w).relu() + 1).numpy().tobytes()
        np.testing.assert_allclose(y.numpy(), np.maximum(xn @ wn, 0) + 1, rtol=1e-5)
    assert g.num_kernels >= 3


def test_compile_recaptures_on_new_shape():
    def f(x):
        return x * 2 + 1

    cf = torch.compile(f, mode="reduce-overhead")
    for n in (3, 3, 3, 5, 5, 5, 3):
        xn = np.arange(n, dtype=np.float32) + n
        out = cf(torch.tensor(xn))
        np.testing.assert_array_equal(out.numpy(), xn * 2 + 1)
    # eager, capture, replay, eager, capture, replay, replay: Python ran 4 times
    assert cf._stats == {"eager": 2, "captures": 2, "replays": 3}


def test_compile_other_modes_are_identity():
    def f(x):
        return x + 1
    assert torch.compile(f) is f
    assert torch.compile(mode="default")(f) is f


def _embedding():
    m = nn.Embedding(5, 2)
    return lambda x: m(torch.tensor([1, 2]))


def _bn_cumulative():
    m = nn.BatchNorm1d(4, momentum=None)
    return lambda x: m(x.reshape(1, 4).repeat(2, 1))


@pytest.mark.parametrize("setup,op", [
    (lambda: lambda x: (x + 1).sum().item(), "item"),
    (lambda: lambda x: x.tolist(), "tolist"),
    (lambda: lambda x: x.numpy(), "numpy"),
    (lambda: lambda x: x.nonzero(), "nonzero"),
    (lambda: lambda x: torch.randn(3), "randn"),
    (lambda: lambda x: x.normal_(), "normal_"),
    (_embedding, "embedding"),
    (_bn_cumulative, "item"),
])
def test_unsupported_ops_refused_at_capture(setup, op):
    x = torch.ones(4)
    what = setup()
    g = torch.cuda.CUDAGraph()
    with pytest.raises(CaptureError, match=f"^{op}: "):
        with torch.cuda.graph(g):
            what(x)
    assert not torch.cuda.is_current_stream_capturing()
    assert (x + 1).numpy().tolist() == [2.0] * 4  # eager works again afterwards
    with pytest.raises(RuntimeError, match="not captured"):
        g.replay()


def test_compile_falls_back_to_eager_with_one_warning():
    def f(x):
        return x * float((x > 0).sum().item())
    cf = torch.compile(f, mode="reduce-overhead")
    x = torch.tensor([1.0, -2.0, 3.0])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        outs = [cf(x).numpy() for _ in range(4)]
    assert sum("eagerly" in str(m.message) for m in w) == 1
    for o in outs:
        np.testing.assert_array_equal(o, [2.0, -4.0, 6.0])


def test_captured_cross_entropy_out_of_range_target_gives_nan():
    x = torch.zeros(2, 3)
    t = torch.tensor([0, 1])
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        loss = F.cross_entropy(x, t)
    g.replay()
    np.testing.assert_allclose(loss.item(), np.log(3.0), rtol=1e-6)
    t.copy_(torch.tensor([0, 7]))
    g.replay()
    assert np.isnan(loss.item())


def _backends():
    """The replay backends this device can use (the others are skipped, not failed)."""
    from clgrad.capture import REPLAY_BACKENDS, replay_backends
    r = replay_backends()
    return [pytest.param(b, marks=pytest.mark.skipif(
        not r["correct"].get(b, False), reason=f"replay backend {b} unavailable: "
        f"{r['command_buffer'][1]}")) for b in REPLAY_BACKENDS]


@pytest.mark.parametrize("backend", _backends())
def test_no_memory_growth_over_many_replays(backend, monkeypatch):
    """10 000 replays of a small training step (a copy into the static input, the forward,
    backward and an SGD step with momentum whose lr is a per-replay argument): clgrad's device
    memory counters, the graph's pool, Python's traced memory and gc's object count stay flat,
    and the weights follow the recurrence computed in float64."""
    import gc
    import tracemalloc
    monkeypatch.setenv("CLGRAD_REPLAY", backend)
    x = torch.ones(16)
    w = torch.full((16,), 0.5, requires_grad=True)
    opt = torch.optim.SGD([w], lr=1e-4, momentum=0.9)
    src = torch.ones(16)

    def step():
        x.copy_(src)
        opt.zero_grad()
        loss = ((x * w).exp() - 1).sum()
        loss.backward()
        opt.step()
        return loss
    step()  # eager: momentum buffer made; w -= lr * exp(0.5)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    assert g.replay_backend == backend
    dev = x._storage.device
    pool = g.pool().pool_for(dev)
    n = 10_000
    for _ in range(100):
        g.replay()
    dev.synchronize()
    gc.collect()
    mem, held, blocks = torch.memory_allocated(), dev.allocated, pool.held_blocks
    objects = len(gc.get_objects())
    tracemalloc.start()
    try:
        traced0 = tracemalloc.get_traced_memory()[0]
        for _ in range(n - 100):
            g.replay()
        dev.synchronize()
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0] - traced0
    finally:
        tracemalloc.stop()
    assert torch.memory_allocated() == mem
    assert dev.allocated == held
    assert pool.held_blocks == blocks
    assert len(gc.get_objects()) - objects < 50  # a leak of one object per replay: 9900
    assert traced < 32 * 1024, f"{traced} bytes of Python memory kept over {n} replays"
    wv, buf = 0.5, 0.0  # eager step + n replays of w -= lr * (0.9 * buf + exp(w))
    for _ in range(n + 1):
        buf = 0.9 * buf + np.exp(wv)
        wv -= 1e-4 * buf
    np.testing.assert_allclose(w.detach().numpy(), np.full(16, wv), rtol=1e-4)


@pytest.mark.parametrize("backend", _backends())
@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_each_replay_backend_equals_eager_bitwise(backend, opt_name, monkeypatch):
    ref_losses, ref_state = _train(opt_name, "eager")
    monkeypatch.setenv("CLGRAD_REPLAY", backend)
    losses, state = _train(opt_name, "graph")
    assert losses == ref_losses
    for a, b in zip(state, ref_state):
        assert a.tobytes() == b.tobytes()


def test_auto_replay_tries_each_working_way_then_keeps_one(monkeypatch):
    """CLGRAD_REPLAY=auto: the first replays take turns between the ways that work (every
    replay still does the same work), then one way stays."""
    from clgrad.capture import REPLAY_BACKENDS, replay_backends
    monkeypatch.setenv("CLGRAD_REPLAY", "auto")
    works = [b for b in REPLAY_BACKENDS if replay_backends()["correct"].get(b)]
    x = torch.zeros(8)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        x.add_(1)
        x.mul_(2)
    n = 1 + 3 * len(works)
    for i in range(n + 3):
        if len(works) > 1:
            assert (g.replay_backend is None) == (i < n)
        g.replay()
        want = 0.0
        for _ in range(i + 1):
            want = (want + 1) * 2
        np.testing.assert_array_equal(x.numpy(), np.full(8, want, np.float32))
    assert g.replay_backend in works


def test_replay_backends_probe_reports_the_device():
    from clgrad.capture import replay_backends
    r = replay_backends()
    dev = torch.ones(1)._storage.device
    assert r is replay_backends(dev)  # measured once per device
    assert r["best"] in r["us_per_kernel"] and r["correct"][r["best"]]
    assert r["correct"]["pyopencl"]
    offers = "cl_khr_command_buffer" in dev.cl_device.extensions.split()
    assert r["command_buffer"][0] == offers
    assert ("command_buffer" in r["us_per_kernel"]) == (offers and r["correct"]["command_buffer"])
    assert all(v > 0 for v in r["us_per_kernel"].values())


def test_command_buffer_probe_off_refuses_clearly(monkeypatch):
    from clgrad.runtime import native
    monkeypatch.setenv("CLGRAD_COMMAND_BUFFER", "0")
    dev = torch.ones(1)._storage.device
    ok, why = native.command_buffer_support(dev.cl_device)
    assert not ok and "CLGRAD_COMMAND_BUFFER=0" in why
    with pytest.raises(RuntimeError, match="CommandBuffer: turned off"):
        native.CommandBuffer(dev.queue)
    monkeypatch.setenv("CLGRAD_REPLAY", "command_buffer")
    g = torch.cuda.CUDAGraph()
    x = torch.ones(4)
    with pytest.raises(RuntimeError, match="replay backend 'command_buffer'"):
        with torch.cuda.graph(g):
            x.add_(1)
    monkeypatch.setenv("CLGRAD_REPLAY", "fastest")
    with pytest.raises(ValueError, match="expected CLGRAD_REPLAY in"):
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            x.add_(1)
    np.testing.assert_array_equal(x.numpy(), np.ones(4))  # captures run nothing


def test_native_enqueue_with_null_event_and_command_buffer():
    """clEnqueueNDRangeKernel through ctypes (no event) and, where offered, a command buffer
    of the same launches: each launch adds 1 to 16 floats."""
    import pyopencl as cl

    from clgrad.runtime import native
    dev = torch.ones(1)._storage.device
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        prg = cl.Program(dev.context, "__kernel void inc(__global float* x) "
                                      "{ x[get_global_id(0)] += 1.0f; }").build()
    buf = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, 64)
    cl.enqueue_fill_buffer(dev.queue, buf, np.float32(0), 0, 64)
    ks = [cl.Kernel(prg, "inc") for _ in range(5)]
    for k in ks:
        k.set_arg(0, buf)
    enq = native.enqueue_fn()
    assert enq is not None
    for k in ks:
        assert enq(*native.kernel_args(dev.queue, k, (16,), (4,))) == 0
    want = 5
    if native.command_buffer_support(dev.cl_device)[0]:
        cb = native.CommandBuffer(dev.queue)
        for k in ks:
            cb.add(k, (16,), None)
        cb.finalize()
        for _ in range(3):  # enqueued again while the last may be pending
            cb.enqueue()
        want += 15
        cb.release()
    out = np.empty(16, np.float32)
    cl.enqueue_copy(dev.queue, out, buf)
    np.testing.assert_array_equal(out, np.full(16, want, np.float32))


def test_graph_pool_frees_with_reset_and_replay_after_reset_raises():
    x = torch.ones(8)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = x * 3
    g.replay()
    assert y.numpy().tolist() == [3.0] * 8
    g.reset()
    with pytest.raises(RuntimeError, match="not captured"):
        g.replay()


def test_make_graphed_callables():
    torch.manual_seed(2)
    lin = nn.Linear(3, 2)
    x = torch.randn(4, 3)
    with torch.no_grad():
        f = torch.cuda.make_graphed_callables(lin, (x,))
        x2 = torch.randn(4, 3)
        out = f(x2).numpy()
        ref = lin(x2).numpy()
    assert out.tobytes() == ref.tobytes()


def test_compiled_module_keeps_attributes_and_replays():
    torch.manual_seed(3)
    lin = nn.Linear(3, 2)
    cl = torch.compile(lin, mode="reduce-overhead")
    assert len(list(cl.parameters())) == 2
    assert cl.in_features == 3
    with torch.no_grad():
        for s in range(4):
            x = torch.randn(5, 3)
            assert cl(x).numpy().tobytes() == lin(x).numpy().tobytes()


def test_module_compile_in_place():
    """PyTorch's Module.compile(): the module itself replays (mode='reduce-overhead'), its
    forward hook captured too, its state_dict as it was; other modes run eagerly."""
    torch.manual_seed(3)
    lin = nn.Linear(3, 2)
    ref = nn.Linear(3, 2)
    ref.load_state_dict(lin.state_dict())
    lin.register_forward_hook(lambda m, a, out: out * 2)
    assert lin.compile(mode="reduce-overhead") is None
    assert list(lin.state_dict()) == ["weight", "bias"] and lin.in_features == 3
    with torch.no_grad():
        for s in range(4):
            x = torch.randn(5, 3)
            assert lin(x).numpy().tobytes() == (ref(x) * 2).numpy().tobytes()
    assert lin._compiled_call_impl._stats == {"eager": 1, "captures": 1, "replays": 2}
    lin2 = nn.Linear(3, 2)
    lin2.compile()  # the default mode: eager, with autograd
    y = lin2(torch.ones(1, 3))
    assert y.grad_fn is not None
    np.testing.assert_allclose(y.detach().numpy(),
                               (lin2.weight.sum(1) + lin2.bias).detach().numpy()[None],
                               rtol=1e-6)


def test_replay_inside_a_capture_is_refused():
    x = torch.ones(4)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = x + 1
    g2 = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="while a capture is running"):
        with torch.cuda.graph(g2):
            g.replay()
    g.replay()
    assert y.numpy().tolist() == [2.0] * 4


def test_optimizer_execution_flags_accepted():
    p = torch.zeros(2, requires_grad=True)
    torch.optim.Adam([p], capturable=True, foreach=True, fused=False)
    torch.optim.AdamW([p], capturable=True)
    torch.optim.SGD([p], lr=0.1, foreach=False, fused=None)
    with pytest.raises(NotImplementedError, match="differentiable"):
        torch.optim.SGD([p], lr=0.1, differentiable=True)


def test_compile_keys_on_grad_mode_and_kwargs():
    def f(x, *, scale):
        return x * scale

    cf = torch.compile(f, mode="reduce-overhead")
    x = torch.tensor([1.0, 2.0])
    for _ in range(3):
        assert cf(x, scale=3.0).numpy().tolist() == [3.0, 6.0]
    with torch.no_grad():
        for _ in range(3):
            assert cf(x, scale=3.0).numpy().tolist() == [3.0, 6.0]
    assert cf(x, scale=2.0).numpy().tolist() == [2.0, 4.0]  # another value: another entry
    # per grad mode: eager, capture, replay; then another scale's eager warm-up
    assert cf._stats == {"eager": 3, "captures": 2, "replays": 2}


def test_shared_pool_between_graphs():
    x = torch.ones(4)
    pool = torch.cuda.graph_pool_handle()
    g1, g2 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.cuda.graph(g1, pool=pool):
        y = x * 2
    with torch.cuda.graph(g2, pool=pool):
        z = y + 1
    g1.replay()
    g2.replay()
    assert z.numpy().tolist() == [3.0] * 4
    x.copy_(torch.full((4,), 5.0))
    g1.replay()
    g2.replay()
    assert z.numpy().tolist() == [11.0] * 4


def test_main_job_with_compile_matches_eager_bitwise(tmp_path, monkeypatch):
    """The digits job (BatchNorm, dropout, AdamW, cosine LR, a partial last batch) with
    --compile gives the same per-epoch losses and accuracies as the eager job."""
    import argparse

    from clgrad.train import fit

    def run(compiled):
        args = argparse.Namespace(dataset="digits", data=None, epochs=2, batch_size=64,
                                  lr=3e-3, weight_decay=1e-4, device=None,
                                  out=str(tmp_path / str(compiled)), resume=None, seed=0,
                                  quiet=True, val_fraction=0.1, compile=compiled)
        return fit(args)["history"]
    replays = []
    real = torch.cuda.CUDAGraph.replay
    monkeypatch.setattr(torch.cuda.CUDAGraph, "replay",
                        lambda g: (replays.append(g.num_kernels), real(g))[1])
    eager = run(False)
    assert not replays
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no fall-back to eager
        replayed = run(True)
    assert len(replays) > 20 and min(replays) > 20  # most steps replayed, whole steps
    for k in ("train_loss", "train_acc", "val_loss", "val_acc"):
        assert replayed[k] == eager[k], k
    assert eager["train_loss"][1] < eager["train_loss"][0]


@pytest.mark.parametrize("opt_name", ["sgd", "sgd0", "adam", "adamw"])
def test_foreach_step_equals_single_tensor_step_bitwise(opt_name):
    """foreach/fused (8 parameters per launch) gives the single-tensor path's bits, with
    fewer launches."""
    from clgrad.runtime import launch_count
    ref_losses, ref_state = _train(opt_name, "eager")
    losses, state = _train(opt_name + "-foreach", "eager")
    assert losses == ref_losses
    for a, b in zip(state, ref_state):
        assert a.tobytes() == b.tobytes()
    model = _net(0.3)
    opt = _opt(opt_name + "-foreach", model.parameters())
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    opt.step()  # the first step also makes the state (fills)
    n0 = launch_count()
    opt.step()
    assert launch_count() - n0 == 1  # 6 parameters: one launch of up to 8


@pytest.mark.parametrize("opt_name", ["sgd", "sgd0", "adam", "adamw"])
def test_default_multi_tensor_step_over_many_parameters(opt_name):
    """foreach=True/fused=True (and the default on GPUs) update 8 contiguous parameters per
    launch, with the bits of foreach=False (one launch each), over 19 parameters of different
    sizes (chunks of 8, 8, 3) and a transposed (non-contiguous) one that takes the one-launch
    path, for 3 steps; the first step's values are checked against NumPy float64 too. The
    default (foreach=None) launches per parameter on CPU devices (PyTorch's CPU default)."""
    from clgrad.runtime import launch_count
    rng = np.random.default_rng(3)
    shapes = [(int(rng.integers(1, 40)),) for _ in range(19)]
    init = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    init.append(rng.standard_normal((5, 7)).astype(np.float32))
    grads = [[rng.standard_normal(a.shape).astype(np.float32) for a in init] for _ in range(3)]

    def run(foreach):
        ps = [torch.tensor(a, requires_grad=True) for a in init[:-1]]
        ps.append(torch.tensor(init[-1].T.copy()).t().requires_grad_())  # not contiguous
        opt = _opt(opt_name + ("" if foreach is False else "-foreach"), ps) \
            if foreach is not None else _default_opt(opt_name, ps)
        counts = []
        for gs in grads:
            for p, g in zip(ps, gs):
                p.grad = torch.tensor(g.T.copy()).t() if g.ndim == 2 else torch.tensor(g)
            n0 = launch_count()
            opt.step()
            counts.append(launch_count() - n0)
        return [p.detach().numpy() for p in ps], counts
    ref, ref_counts = run(False)
    got, counts = run(True)
    default, default_counts = run(None)
    for a, b, c in zip(got, ref, default):
        assert a.tobytes() == b.tobytes() == c.tobytes()
    assert counts[-1] == 3 + 1 and ref_counts[-1] == 20
    gpu = torch.default_device().kind != "cpu"
    assert default_counts[-1] == (3 + 1 if gpu else 20)
    if opt_name == "sgd0":  # one step of p -= lr (g + wd p), float64
        ps = [torch.tensor(a) for a in init]
        opt = _default_opt(opt_name, [p.requires_grad_() for p in ps])
        for p, g in zip(ps, grads[0]):
            p.grad = torch.tensor(g)
        opt.step()
        for p, a, g in zip(ps, init, grads[0]):
            want = a.astype(np.float64) - 0.1 * (g + 1e-3 * a.astype(np.float64))
            np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-6, atol=1e-7)


def _default_opt(name, params):
    """_opt's hyperparameters with foreach and fused left at their defaults."""
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-3)
    if name == "sgd0":
        return torch.optim.SGD(params, lr=0.1, weight_decay=1e-3)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-2, weight_decay=1e-3)
    return torch.optim.AdamW(params, lr=1e-2)


def test_capture_package_face_names_its_modules():
    """clgrad.capture is a package (issue 34): recording (record.py) over the replay backends
    (replay.py); its face keeps the public names and the private ones other modules use (the
    same objects), and a capture through it replays the eager values."""
    from clgrad import capture
    from clgrad.capture import record, replay
    assert set(capture.__all__) == {
        "CUDAGraph", "graph", "graph_pool_handle", "CaptureError", "dynamic", "paused",
        "is_capturing", "is_current_stream_capturing", "replay_backends", "REPLAY_BACKENDS"}
    assert capture._ACTIVE is record._ACTIVE and capture.refuse_random is record.refuse_random
    assert capture.CUDAGraph is record.CUDAGraph and issubclass(capture.CUDAGraph, replay.Replay)
    assert capture.replay_backends is replay.replay_backends
    assert capture.REPLAY_BACKENDS == ("pyopencl", "ctypes", "command_buffer")
    x = torch.ones(4)
    g = capture.CUDAGraph()
    with capture.graph(g):
        y = x * 2 + 1
    assert capture._ACTIVE[0] is None and g.num_kernels >= 1
    x.copy_(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    for _ in range(12):  # past "auto"'s trial replays (1 + 3 per way that works)
        g.replay()
        assert y.numpy().tolist() == [3.0, 5.0, 7.0, 9.0]
    assert g.replay_backend in capture.REPLAY_BACKENDS
