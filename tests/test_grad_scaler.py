"""clgrad.amp.GradScaler: PyTorch's dynamic loss scaler (scale, unscale_, step, update, state).

Oracles: hand-computed scale sequences and NumPy (always), torch.amp.GradScaler("cpu") where
PyTorch is installed.
"""
import math

import numpy as np
import pytest

import clgrad

INF, NAN = math.inf, math.nan


def _param(values):
    return clgrad.nn.Parameter(clgrad.tensor(np.asarray(values, np.float32)))


def _run_script(mod, scaler, script, lr=0.5):
    """Drive ``scaler`` with gradients g * scale for each g of ``script`` (mod: clgrad or
    torch); returns [(scale after update, step result skipped?, param values)]."""
    p = mod.nn.Parameter(mod.tensor(np.array([1.0, -2.0, 3.0], np.float32)))
    opt = mod.optim.SGD([p], lr=lr)
    out = []
    for g in script:
        opt.zero_grad()
        loss = (p * mod.tensor(np.asarray(g, np.float32))).sum()
        scaler.scale(loss).backward()  # p.grad = g * scale (inf/nan stay non-finite)
        ret = scaler.step(opt)
        scaler.update()
        out.append((scaler.get_scale(), ret, p.detach().numpy().copy()))
    return out


_SCRIPT = [[1.0, 2.0, 4.0], [0.5, 0.25, 1.0], [INF, 1.0, 1.0], [1.0, 1.0, 1.0],
           [1.0, NAN, 1.0], [2.0, 2.0, 2.0], [4.0, 4.0, 4.0], [-INF, 0.0, 0.0],
           [1.0, 1.0, 1.0]]


def test_scale_sequence_hand_computed():
    # init 8, growth_interval 2: finite, finite -> 16; inf -> 8 (step skipped); finite -> 8
    # (tracker 1); nan -> 4 (skipped); finite, finite -> 8; -inf -> 4; finite -> 4.
    scaler = clgrad.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    assert scaler.get_scale() == 8.0 and scaler.is_enabled()
    res = _run_script(clgrad, scaler, _SCRIPT)
    assert [r[0] for r in res] == [8.0, 16.0, 8.0, 8.0, 4.0, 4.0, 8.0, 4.0, 4.0]
    p = np.array([1.0, -2.0, 3.0], np.float32)
    for g, (_, ret, got) in zip(_SCRIPT, res):
        assert ret is None  # SGD.step returns None; a skipped step too
        if np.isfinite(g).all():
            p = p - np.float32(0.5) * np.asarray(g, np.float32)
        np.testing.assert_array_equal(got, p)  # powers of two: exact; skipped: unchanged
    assert scaler.state_dict() == {"scale": 4.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                                   "growth_interval": 2, "_growth_tracker": 1}


@pytest.mark.parametrize("kw", [dict(init_scale=8.0, growth_interval=2),
                                dict(init_scale=5.0, growth_factor=3.0, backoff_factor=0.3,
                                     growth_interval=3),
                                dict(init_scale=2.0 ** 126, growth_interval=1)])
def test_scale_sequence_matches_torch(kw):
    torch = pytest.importorskip("torch")
    ours = _run_script(clgrad, clgrad.amp.GradScaler("cpu", **kw), _SCRIPT)
    ref_scaler = torch.amp.GradScaler("cpu", **kw)
    ref = _run_script(torch, ref_scaler, _SCRIPT)
    for (s, r, p), (ts, tr, tp) in zip(ours, ref):
        assert s == ts and r is tr
        np.testing.assert_allclose(p, tp, rtol=1e-6, atol=0)


def test_growth_stops_at_float32_max():
    # 2**127 * 2 overflows float32: the scale stays, the tracker restarts (PyTorch's rule).
    scaler = clgrad.amp.GradScaler("cpu", init_scale=2.0 ** 127, growth_interval=1)
    res = _run_script(clgrad, scaler, [[1.0, 1.0, 1.0]] * 2)
    assert [r[0] for r in res] == [2.0 ** 127] * 2
    assert scaler.state_dict()["_growth_tracker"] == 0


def test_unscale_divides_grads_and_training_matches_unscaled():
    clgrad.manual_seed(0)
    x = clgrad.randn(8, 3)
    y = clgrad.randn(8, 2)

    def train(scaler):
        clgrad.manual_seed(1)
        m = clgrad.nn.Linear(3, 2)
        opt = clgrad.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        w0 = [p.detach().numpy().copy() for p in m.parameters()]
        for _ in range(4):
            opt.zero_grad()
            loss = clgrad.nn.functional.mse_loss(m(x), y)
            if scaler is None:
                loss.backward()
                opt.step()
                continue
            scaler.scale(loss).backward()
            scaled = [p.grad.numpy().copy() for p in m.parameters()]
            s = scaler.get_scale()
            scaler.unscale_(opt)
            for p, g in zip(m.parameters(), scaled):  # grads / scale, exact (powers of two)
                np.testing.assert_array_equal(p.grad.numpy(), g / np.float32(s))
            scaler.step(opt)
            scaler.update()
        return w0, [p.detach().numpy() for p in m.parameters()]

    w0, plain = train(None)
    scaler = clgrad.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    w0s, scaled = train(scaler)
    assert scaler.get_scale() == 4096.0
    for a, b, c in zip(plain, scaled, w0):
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)  # it trained


def test_training_loop_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((8, 3), np.float32), rng.standard_normal((8, 2), np.float32)
    w, b = rng.standard_normal((2, 3), np.float32), rng.standard_normal(2, np.float32)
    params = []
    for mod in (clgrad, torch):
        m = mod.nn.Linear(3, 2)
        with mod.no_grad():
            m.weight.copy_(mod.tensor(w))
            m.bias.copy_(mod.tensor(b))
        opt = mod.optim.SGD(m.parameters(), lr=0.1)
        scaler = mod.amp.GradScaler("cpu", init_scale=2.0 ** 20, growth_interval=2)
        for i in range(5):
            opt.zero_grad()
            loss = mod.nn.functional.mse_loss(m(mod.tensor(x)), mod.tensor(y))
            scaler.scale(loss * (INF if i == 2 else 1.0)).backward()
            scaler.step(opt)
            scaler.update()
        params.append(([p.detach().numpy() for p in m.parameters()], scaler.state_dict()))
    (ours, ours_state), (ref, ref_state) = params
    assert ours_state == ref_state
    for a, r in zip(ours, ref):
        np.testing.assert_allclose(a, r, rtol=1e-5, atol=1e-6)


def test_nan_or_inf_in_any_grad_skips_the_step():
    for bad in (NAN, INF, -INF):
        p, q = _param([1.0, 2.0]), _param([[3.0, 4.0], [5.0, 6.0]])
        opt = clgrad.optim.SGD([p, q], lr=1.0)
        scaler = clgrad.amp.GradScaler("cpu", init_scale=4.0)
        loss = (p * clgrad.tensor([1.0, 1.0])).sum() + (q * clgrad.tensor([[1.0, bad],
                                                                         [1.0, 1.0]])).sum()
        scaler.scale(loss).backward()
        assert scaler.step(opt) is None
        np.testing.assert_array_equal(p.detach().numpy(), [1.0, 2.0])
        np.testing.assert_array_equal(q.detach().numpy(), [[3.0, 4.0], [5.0, 6.0]])
        np.testing.assert_array_equal(p.grad.numpy(), [1.0, 1.0])  # unscaled all the same
        scaler.update()
        assert scaler.get_scale() == 2.0


def test_step_returns_the_optimizer_result_and_passes_args():
    p = _param([1.0])
    calls = []

    class Opt(clgrad.optim.SGD):
        def step(self, *args, **kwargs):
            calls.append((args, kwargs))
            return "ret"
    opt = Opt([p], lr=1.0)
    scaler = clgrad.amp.GradScaler("cpu")
    scaler.scale(p.sum()).backward()
    assert scaler.step(opt, 1, k=2) == "ret" and calls == [((1,), {"k": 2})]
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step"):
        scaler.unscale_(opt)
    scaler.update()
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: None)


def test_unscale_twice_raises_and_step_does_not_unscale_again():
    p = _param([1.0, 2.0])
    opt = clgrad.optim.SGD([p], lr=1.0)
    scaler = clgrad.amp.GradScaler("cpu", init_scale=16.0)
    scaler.scale((p * clgrad.tensor([2.0, 4.0])).sum()).backward()
    scaler.unscale_(opt)
    np.testing.assert_array_equal(p.grad.numpy(), [2.0, 4.0])
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called on this "
                                           "optimizer since the last update\\(\\)"):
        scaler.unscale_(opt)
    scaler.step(opt)
    np.testing.assert_array_equal(p.detach().numpy(), [-1.0, -2.0])  # grads unscaled once
    scaler.update()
    scaler.scale((p * 1.0).sum())
    scaler.unscale_(opt)  # allowed again after update()


def test_errors_match_pytorch():
    p = _param([1.0])
    opt = clgrad.optim.SGD([p], lr=1.0)
    scaler = clgrad.amp.GradScaler("cpu")
    for call in (lambda: scaler.unscale_(opt), lambda: scaler.step(opt), scaler.update):
        with pytest.raises(AssertionError, match="_scale is None"):
            call()
    scaler.scale(p.sum())
    with pytest.raises(AssertionError, match="No inf checks were recorded for this optimizer"):
        scaler.step(opt)  # no gradient
    with pytest.raises(AssertionError, match="No inf checks were recorded prior to update"):
        scaler.update()
    if clgrad.runtime.default_device().fp16:  # float16 tensors need cl_khr_fp16
        h = clgrad.nn.Parameter(clgrad.ones(2, dtype=clgrad.float16))
        h.grad = clgrad.ones(2, dtype=clgrad.float16)
        with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
            scaler.unscale_(clgrad.optim.SGD([h], lr=1.0))
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale(3.0)
    with pytest.raises(ValueError, match="new_scale"):
        scaler.update(clgrad.ones(2))


@pytest.mark.parametrize("kw,name", [(dict(growth_factor=1.0), "growth_factor"),
                                     (dict(growth_factor=0.5), "growth_factor"),
                                     (dict(backoff_factor=1.0), "backoff_factor"),
                                     (dict(backoff_factor=0.0), "backoff_factor"),
                                     (dict(growth_interval=0), "growth_interval"),
                                     (dict(growth_interval=2.5), "growth_interval")])
def test_argument_checks_name_the_argument(kw, name):
    with pytest.raises(ValueError, match=name):
        clgrad.amp.GradScaler("cpu", **kw)
    clgrad.amp.GradScaler("cpu", enabled=False, **kw)  # disabled: not checked (PyTorch)
    scaler = clgrad.amp.GradScaler("cpu")
    with pytest.raises(ValueError, match=name):
        getattr(scaler, "set_" + name)(kw[name])


def test_setters_and_new_scale():
    scaler = clgrad.amp.GradScaler("cpu", init_scale=8.0, growth_interval=5)
    scaler.set_growth_factor(4.0)
    scaler.set_backoff_factor(0.25)
    scaler.set_growth_interval(1)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(),
            scaler.get_growth_interval()) == (4.0, 0.25, 1)
    assert [r[0] for r in _run_script(clgrad, scaler, [[1.0] * 3, [INF] * 3])] == [32.0, 8.0]
    scaler.update(3.0)
    assert scaler.get_scale() == 3.0
    scaler.update(clgrad.tensor([0.5]))
    assert scaler.get_scale() == 0.5


def test_scale_structures_and_autograd():
    scaler = clgrad.amp.GradScaler("cpu", init_scale=4.0)
    a = clgrad.tensor([1.0, 2.0], requires_grad=True)
    fp16 = clgrad.runtime.default_device().fp16  # float16 tensors need cl_khr_fp16
    h = clgrad.tensor([1.0, 3.0], dtype=clgrad.float16 if fp16 else clgrad.float32)
    out = scaler.scale({"x": [a, (a * 2.0, h)], "y": a.sum()})
    assert isinstance(out, dict) and isinstance(out["x"], list) and isinstance(out["x"][1],
                                                                                tuple)
    np.testing.assert_array_equal(out["x"][0].detach().numpy(), [4.0, 8.0])
    np.testing.assert_array_equal(out["x"][1][0].detach().numpy(), [8.0, 16.0])
    assert out["x"][1][1].dtype is h.dtype  # a 0-dim float32 scale keeps the dtype
    np.testing.assert_array_equal(out["x"][1][1].numpy(), [4.0, 12.0])
    assert out["y"].item() == 12.0
    assert [t.tolist() for t in scaler.scale(iter([a]))] == [[4.0, 8.0]]
    out["y"].backward()
    np.testing.assert_array_equal(a.grad.numpy(), [4.0, 4.0])


def test_state_dict_round_trip_and_torch_state():
    scaler = clgrad.amp.GradScaler("cpu", init_scale=8.0, growth_factor=3.0,
                                   backoff_factor=0.25, growth_interval=3)
    _run_script(clgrad, scaler, [[1.0] * 3, [1.0] * 3])
    sd = scaler.state_dict()
    assert sd == {"scale": 8.0, "growth_factor": 3.0, "backoff_factor": 0.25,
                  "growth_interval": 3, "_growth_tracker": 2}
    assert type(sd["scale"]) is float and type(sd["_growth_tracker"]) is int
    fresh = clgrad.amp.GradScaler("cpu")
    fresh.load_state_dict(sd)
    assert fresh.state_dict() == sd
    assert [r[0] for r in _run_script(clgrad, fresh, [[1.0] * 3])] == [24.0]  # tracker kept
    with pytest.raises(RuntimeError, match="state dict is empty"):
        fresh.load_state_dict({})
    off = clgrad.amp.GradScaler("cpu", enabled=False)
    off.load_state_dict(sd)
    assert off.state_dict() == {} and off.get_scale() == 1.0
    torch = pytest.importorskip("torch")
    ref = torch.amp.GradScaler("cpu", init_scale=8.0, growth_interval=3)
    _run_script(torch, ref, [[1.0] * 3, [INF] * 3, [1.0] * 3])
    ours = clgrad.amp.GradScaler("cpu")
    ours.load_state_dict(ref.state_dict())
    assert ours.state_dict() == ref.state_dict()
    ref.load_state_dict(sd)
    assert ref.state_dict() == sd


def test_disabled_is_a_pass_through():
    p = _param([1.0, 2.0])
    opt = clgrad.optim.SGD([p], lr=1.0)
    scaler = clgrad.amp.GradScaler("cpu", enabled=False)
    loss = (p * clgrad.tensor([INF, 1.0])).sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    scaler.unscale_(opt)
    scaler.unscale_(opt)
    scaler.step(opt)  # no inf skipping when disabled
    scaler.update()
    assert p.detach().numpy()[0] == -INF and p.detach().numpy()[1] == 1.0
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    assert not scaler.is_enabled()


def test_cuda_scaler_without_gpu_warns_and_disables():
    if clgrad.cuda.is_available():
        pytest.skip("an OpenCL GPU is present: GradScaler('cuda') stays enabled")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        scaler = clgrad.amp.GradScaler()
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0


def test_a_scale_that_underflowed_to_zero_skips_steps_without_raising():
    """Every step overflowing halves the scale; past float32's smallest subnormal it is 0.
    PyTorch's reciprocal is then inf (a float64 1/0 cast to float32): no ZeroDivisionError, no
    overflow warning, the steps go on (clgrad raised ZeroDivisionError at 1 / 0)."""
    import warnings
    p = clgrad.nn.Parameter(clgrad.ones(3))
    opt = clgrad.optim.SGD([p], lr=0.1)
    scaler = clgrad.amp.GradScaler("cpu", init_scale=2.0 ** -148)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            opt.zero_grad()
            scaler.scale((p * float("inf")).sum()).backward()
            scaler.step(opt)
            scaler.update()
    assert scaler.get_scale() == 0.0
    np.testing.assert_array_equal(p.detach().numpy(), np.ones(3))  # every step skipped


@pytest.mark.parametrize("bad_at", [None, 0, 9, 10, 11])
def test_unscale_of_many_grads_in_multi_tensor_launches(bad_at):
    """unscale_ over 12 gradients: 9 contiguous float32 ones (two launches of
    kernels/optim.cl :: unscale_multi, 8 a launch), a transposed view, a float64 one, and one
    over the CPU devices' multi-tensor size limit (those three one at a time): every gradient
    divided exactly (a power-of-two scale) against NumPy, and an inf (or NaN) in any one of
    them, in either path, found; its version counter bumped once."""
    rng = np.random.default_rng(3)
    shapes = [(5,), (3, 4), (1,), (70,), (2, 2, 2), (33,), (8,), (9, 3), (4,)]
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    arrays += [rng.standard_normal((6, 5)).astype(np.float32),
               rng.standard_normal(7), rng.standard_normal(70000).astype(np.float32)]
    if bad_at is not None:
        arrays[bad_at].flat[1] = NAN if bad_at == 10 else INF
    params = [clgrad.nn.Parameter(clgrad.tensor(np.zeros_like(a))) for a in arrays]
    for p, a in zip(params, arrays):
        p.grad = clgrad.tensor(a * 8.0)
    params[9].grad = clgrad.tensor(np.ascontiguousarray((arrays[9] * 8.0).T)).t()
    opt = clgrad.optim.SGD(params, lr=0.0)
    scaler = clgrad.amp.GradScaler("cpu", init_scale=8.0)
    scaler.scale(clgrad.tensor(1.0))
    versions = [p.grad._version for p in params]
    scaler.unscale_(opt)
    for p, a, v in zip(params, arrays, versions):
        np.testing.assert_array_equal(p.grad.numpy(), a)
        assert p.grad._version == v + 1
    scaler.step(opt)
    scaler.update()  # backed off after a non-finite gradient, else kept (growth_interval 2000)
    assert scaler.get_scale() == (4.0 if bad_at is not None else 8.0)


def test_unscale_of_gradients_sharing_memory_divides_once_per_gradient():
    """Parameters whose .grad is one tensor (or overlapping views of one buffer) are unscaled
    one after another, as PyTorch's CPU loop: an element is divided once per gradient holding
    it, never raced on by one multi-tensor launch (that gave a mix of 1 and 32 here); disjoint
    views of one flat buffer are divided once."""
    g = clgrad.tensor(np.full(65536, 2.0 ** 40, np.float32))
    ps = [clgrad.nn.Parameter(clgrad.zeros(65536)) for _ in range(8)]
    for p in ps:
        p.grad = g
    opt = clgrad.optim.SGD(ps, lr=1.0)
    scaler = clgrad.amp.GradScaler("cpu", init_scale=32.0)
    scaler.scale(clgrad.tensor(1.0))
    scaler.unscale_(opt)
    np.testing.assert_array_equal(g.numpy(), np.full(65536, 2.0 ** 40 / 32.0 ** 8, np.float32))
    flat = clgrad.tensor(np.arange(1.0, 41.0, dtype=np.float32) * 4)
    qs = [clgrad.nn.Parameter(clgrad.zeros(10)) for _ in range(5)]
    for i, q in enumerate(qs[:4]):
        q.grad = flat[10 * i:10 * i + 10]  # disjoint
    qs[4].grad = flat[5:15]                # overlaps the first two
    scaler = clgrad.amp.GradScaler("cpu", init_scale=2.0)
    scaler.scale(clgrad.tensor(1.0))
    scaler.unscale_(clgrad.optim.SGD(qs, lr=1.0))
    want = np.arange(1.0, 41.0, dtype=np.float32) * 2
    want[5:15] /= 2
    np.testing.assert_array_equal(flat.numpy(), want)
