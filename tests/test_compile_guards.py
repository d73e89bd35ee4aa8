"""compile(mode="reduce-overhead") never replays stale Python state (issue 32 §1): guards on
the state a capture read re-capture when it changes, side effects a replay would skip are
refused, the body runs once per call, arguments changed in place reach the caller, outputs
are fresh per call. The oracle is the eager run of the same function on a copy of the state,
and hand-computed values."""
import gc
import random
import warnings
import weakref

import numpy as np
import pytest

import clgrad as torch
from clgrad import capture, nn

CALLS = 6  # warm-up, capture, replays


def _compiled(fn):
    return torch.compile(fn, mode="reduce-overhead")


def _quiet(cf, *args, **kwargs):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = cf(*args, **kwargs)
    return out, [str(m.message) for m in w]


# -- numbers read from Python --------------------------------------------------------------------
def test_closure_number_change_recaptures():
    scale = 2
    cf = _compiled(lambda x: x * scale)
    x = torch.tensor([1.0, 2.0, 3.0])
    for _ in range(3):
        assert cf(x).numpy().tolist() == [2.0, 4.0, 6.0]
    scale = 5
    for _ in range(3):
        assert cf(x).numpy().tolist() == [5.0, 10.0, 15.0]
    assert cf._stats["captures"] == 2


OFFSET = 1.0


def _add_offset(x):
    return x + OFFSET


def test_global_number_change_recaptures():
    global OFFSET
    cf = _compiled(_add_offset)
    x = torch.tensor([1.0, 2.0])
    try:
        for _ in range(3):
            assert cf(x).numpy().tolist() == [2.0, 3.0]
        OFFSET = 10.0
        for _ in range(3):
            assert cf(x).numpy().tolist() == [11.0, 12.0]
        OFFSET = 10  # an int now: same value, another type (another dtype for int tensors)
        xi = torch.tensor([1, 2])
        assert cf(xi).dtype == torch.int64 and cf(xi).numpy().tolist() == [11, 12]
    finally:
        OFFSET = 1.0


class _Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 2.0

    def forward(self, x):
        return x * self.scale


def test_module_number_attribute_change_recaptures():
    m = _Scaled()
    cm = _compiled(m)
    x = torch.tensor([1.0, -1.0])
    for _ in range(3):
        assert cm(x).numpy().tolist() == [2.0, -2.0]
    m.scale = 5.0
    for _ in range(3):
        assert cm(x).numpy().tolist() == [5.0, -5.0]


def test_scalar_argument_keyed_by_type():
    cf = _compiled(lambda x, s: x * s)
    xi = torch.tensor([1, 2, 3])
    for _ in range(3):
        out = cf(xi, 2)
        assert out.dtype == torch.int64 and out.numpy().tolist() == [2, 4, 6]
    out = cf(xi, 2.0)  # 2 == 2.0, but the result is float (PyTorch's promotion)
    assert out.dtype == torch.float32 and out.numpy().tolist() == [2.0, 4.0, 6.0]
    assert cf(xi, 2).dtype == torch.int64
    cb = _compiled(lambda x, flag: x + flag)
    xb = torch.tensor([True, False])
    for _ in range(3):
        assert cb(xb, True).dtype == torch.bool
    out = cb(xb, 1)  # True == 1: bool + int is int64
    assert out.dtype == torch.int64 and out.numpy().tolist() == [2, 1]


# -- modules -------------------------------------------------------------------------------------
def _bn_net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Dropout(0.5))


def test_eval_after_capture_turns_dropout_and_batch_stats_off():
    model, ref = _bn_net(), _bn_net()
    cm = _compiled(model)
    torch.manual_seed(1)
    xs = [torch.randn(8, 4) for _ in range(CALLS)]
    with torch.no_grad():
        for x in xs[:3]:
            cm(x)
            ref(x)
        model.eval()
        ref.eval()
        for x in xs[3:]:
            got, want = cm(x).numpy(), ref(x).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
            assert (got != 0).all()  # no dropout
    assert int(model[1].num_batches_tracked.item()) == 3  # not counted in eval
    # eval: y = gamma (z - mean) / sqrt(var + eps) + beta with the running statistics
    lin = model[0]
    bn = model[1]
    z = xs[-1].numpy() @ lin.weight.detach().numpy().T + lin.bias.detach().numpy()
    hand = ((z - bn.running_mean.numpy()) / np.sqrt(bn.running_var.numpy() + bn.eps)
            * bn.weight.detach().numpy() + bn.bias.detach().numpy())
    with torch.no_grad():
        np.testing.assert_allclose(cm(xs[-1]).numpy(), hand, rtol=1e-5, atol=1e-5)
    model.train()  # back to the first capture: kept with its guards
    with torch.no_grad():
        cm(xs[0])
    assert int(model[1].num_batches_tracked.item()) == 4
    assert cm._stats["captures"] == 2


def test_batchnorm_momentum_change_recaptures():
    torch.manual_seed(0)
    bn, ref = nn.BatchNorm1d(3), nn.BatchNorm1d(3)
    cb = _compiled(bn)
    torch.manual_seed(2)
    xs = [torch.randn(6, 3) for _ in range(CALLS)]
    with torch.no_grad():
        for i, x in enumerate(xs):
            if i == 3:
                bn.momentum = ref.momentum = 0.9
            cb(x)
            ref(x)
    np.testing.assert_allclose(bn.running_mean.numpy(), ref.running_mean.numpy(), rtol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), ref.running_var.numpy(), rtol=1e-6)
    # hand: running = (1 - m) running + m mean, momentum 0.1 three times then 0.9
    mean = np.zeros(3)
    for i, x in enumerate(xs):
        m = 0.1 if i < 3 else 0.9
        mean = (1 - m) * mean + m * x.numpy().astype(np.float64).mean(0)
    np.testing.assert_allclose(bn.running_mean.numpy(), mean, rtol=1e-5, atol=1e-6)


# -- parameters and optimizers -------------------------------------------------------------------
def _lin(seed=0):
    torch.manual_seed(seed)
    return nn.Linear(3, 2)


def _copy(dst, src):
    dst.load_state_dict(src.state_dict())


def _train_steps(model, opt, xs, changes, compiled):
    """Per-call losses of a training step (zero_grad, loss, backward, step); ``changes[i]``
    (a callable of (model, opt)) runs before call i."""
    def step(x):
        opt.zero_grad()
        loss = (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        return loss.detach()
    run = _compiled(step) if compiled else step
    losses = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no refusal: every change is guarded and re-captured
        for i, x in enumerate(xs):
            if i in changes:
                changes[i](model, opt)
            losses.append(float(run(x).item()))
    return losses, run


def _xs():
    torch.manual_seed(3)
    return [torch.randn(5, 3) for _ in range(CALLS)]


def _compare(changes, opt_fn=lambda ps: torch.optim.SGD(ps, lr=0.1)):
    ref_model, model = _lin(), _lin()
    ref_losses, _ = _train_steps(ref_model, opt_fn(ref_model.parameters()), _xs(), changes,
                                 False)
    losses, run = _train_steps(model, opt_fn(model.parameters()), _xs(), changes, True)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-6)
    for (n, p), q in zip(model.named_parameters(), ref_model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6,
                                   atol=1e-7, err_msg=n)
    return model, run


def test_replaced_parameter_is_used():
    def replace(m, opt):
        torch.manual_seed(9)
        new = nn.Parameter(torch.randn(2, 3))
        m.weight = new
        opt.param_groups[0]["params"][0] = new
    model, run = _compare({3: replace})
    assert run._stats["replays"] >= 2


def test_frozen_layer_stops_training():
    def freeze(m, opt):
        m.weight.requires_grad_(False)
        m.weight.grad = None
    model, run = _compare({3: freeze})
    assert run._stats["captures"] == 2 and run._stats["replays"] >= 2


def test_frozen_weight_keeps_its_value():
    model, ref = _lin(), _lin()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    xs = _xs()

    def step(x):
        opt.zero_grad()
        (model(x) ** 2).mean().backward()
        opt.step()
    cs = _compiled(step)
    for x in xs[:3]:
        cs(x)
    model.weight.requires_grad_(False)
    model.weight.grad = None
    frozen = model.weight.detach().numpy().copy()
    for x in xs[3:]:
        cs(x)
    np.testing.assert_array_equal(model.weight.detach().numpy(), frozen)
    assert not np.array_equal(ref.weight.detach().numpy(), frozen)


def test_added_param_group_is_updated():
    extra = {}

    def add(m, opt):
        torch.manual_seed(4)
        w = nn.Parameter(torch.randn(2, 3))
        extra["w"] = w
        m.extra = w  # used by forward below through the module: a new parameter
        opt.add_param_group({"params": [w], "lr": 0.5})
    ref_model, model = _lin(), _lin()
    for mod in (ref_model, model):
        mod.forward = _forward_with_extra(mod)
    xs = _xs()
    ref_opt = torch.optim.SGD(ref_model.parameters(), lr=0.1)
    ref_losses, _ = _train_steps(ref_model, ref_opt, xs, {3: add}, False)
    ref_w = extra["w"].detach().numpy().copy()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses, run = _train_steps(model, opt, xs, {3: add}, True)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-6)
    np.testing.assert_allclose(extra["w"].detach().numpy(), ref_w, rtol=1e-6)
    torch.manual_seed(4)
    assert not np.allclose(extra["w"].detach().numpy(), torch.randn(2, 3).numpy())


def _forward_with_extra(mod):
    def forward(x):
        y = nn.functional.linear(x, mod.weight, mod.bias)
        w = mod._parameters.get("extra")
        return y if w is None else y + nn.functional.linear(x, w)
    return forward


def test_added_param_group_alone_is_updated():
    model = _lin()
    opt = torch.optim.SGD([model.weight], lr=0.1)

    def step(x):
        opt.zero_grad()
        (model(x) ** 2).mean().backward()
        opt.step()
    cs = _compiled(step)
    xs = _xs()
    for x in xs[:3]:
        cs(x)
    opt.add_param_group({"params": [model.bias], "lr": 0.1})
    for x in xs[3:]:  # the group's first step, its capture, a replay
        b0 = model.bias.detach().numpy().copy()
        cs(x)
        # hand: SGD b -= lr * grad, with the gradient of this call
        g = model.bias.grad.numpy()
        assert np.abs(g).max() > 0
        np.testing.assert_allclose(model.bias.detach().numpy(), b0 - 0.1 * g, rtol=1e-6)
    assert cs._stats["replays"] >= 2


_STRUCTURAL = {  # hyperparameters that choose another kernel (baked into a capture)
    "sgd": (lambda ps: torch.optim.SGD(ps, lr=0.1), {"momentum": 0.9}),
    "rmsprop": (lambda ps: torch.optim.RMSprop(ps, lr=0.01), {"momentum": 0.5,
                                                              "centered": True}),
    "adam": (lambda ps: torch.optim.Adam(ps, lr=0.01), {"amsgrad": True,
                                                        "betas": (0.5, 0.9)}),
}


@pytest.mark.parametrize("opt_name", sorted(_STRUCTURAL))
def test_hyperparameter_change_in_param_groups(opt_name):
    opt_fn, new = _STRUCTURAL[opt_name]

    def change(m, opt):
        opt.param_groups[0].update(new)
    _compare({3: change}, opt_fn)


def test_lr_change_replays_without_recapture():
    def change(m, opt):
        opt.param_groups[0]["lr"] = 0.01
    model, run = _compare({3: change})
    assert run._stats["captures"] == 1


# -- side effects --------------------------------------------------------------------------------
def test_scheduler_step_inside_is_refused_and_steps_every_call():
    def run(compiled):
        model = _lin()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

        def step(x):
            opt.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            opt.step()
            sched.step()
            return loss.detach()
        f = _compiled(step) if compiled else step
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            losses = [float(f(x).item()) for x in _xs()]
        return losses, opt.param_groups[0]["lr"], sched.last_epoch, [str(m.message) for m in w]
    ref, ref_lr, ref_epoch, _ = run(False)
    got, lr, epoch, msgs = run(True)
    assert epoch == ref_epoch == CALLS and lr == ref_lr == 0.1 * 0.5 ** CALLS
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    assert len(msgs) == 1 and "LR scheduler 'sched' (StepLR)" in msgs[0]
    assert "last_epoch" in msgs[0]


def test_list_append_inside_runs_every_call():
    log = []

    def f(x):
        log.append(1)
        return x + 1
    cf = _compiled(f)
    x = torch.tensor([1.0])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(CALLS):
            assert cf(x).numpy().tolist() == [2.0]
    assert len(log) == CALLS
    assert any("list 'log'" in str(m.message) for m in w)


def test_module_counter_inside_forward_is_refused():
    class Counting(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return x * 2
    m = Counting()
    cm = _compiled(m)
    x = torch.tensor([1.0, 2.0])
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for _ in range(CALLS):
            assert cm(x).numpy().tolist() == [2.0, 4.0]
    assert m.calls == CALLS


def test_refused_capture_runs_body_once_per_call():
    runs = [0]

    def f(x):
        runs[0] += 1
        return x * float(x.sum().item())  # a host read: the capture is refused
    cf = _compiled(f)
    x = torch.tensor([1.0, 2.0])
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for i in range(CALLS):
            assert cf(x).numpy().tolist() == [3.0, 6.0]
            assert runs[0] == i + 1


def test_refused_capture_steps_scheduler_once_per_call():
    model = _lin()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

    def step(x):
        opt.zero_grad()
        loss = (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        sched.step()
        if loss.item() > -1:  # a data-dependent if, after the scheduler's step: refused
            return loss
        return -loss
    cs = _compiled(step)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for i, x in enumerate(_xs()):
            cs(x)
            assert sched.last_epoch == i + 1


# -- tensors in and out --------------------------------------------------------------------------
def test_inplace_update_of_argument_reaches_caller():
    cf = _compiled(lambda x, acc: acc.add_(x))
    acc = torch.zeros(3)
    x = torch.tensor([1.0, 2.0, 3.0])
    for i in range(CALLS):
        out = cf(x, acc)
        np.testing.assert_array_equal(acc.numpy(), (i + 1) * np.array([1.0, 2.0, 3.0]))
        assert out is acc  # returns its argument, as eagerly


def test_inplace_update_before_exception_is_kept():
    def f(x, acc):
        acc.add_(x)
        if fail[0]:
            raise ValueError("boom")
        return acc * 2
    fail = [False]
    cf = _compiled(f)
    acc, x = torch.zeros(2), torch.ones(2)
    cf(x, acc)  # warm-up
    fail[0] = True
    with pytest.raises(ValueError, match="boom"):
        cf(x, acc)  # the capture call: acc changed before the raise
    assert acc.numpy().tolist() == [2.0, 2.0]


def test_outputs_of_earlier_calls_are_not_overwritten():
    cf = _compiled(lambda x: x * 2)
    outs = [cf(torch.full((3,), float(i))) for i in range(CALLS)]
    for i, o in enumerate(outs):
        assert o.numpy().tolist() == [2.0 * i] * 3


def test_tensors_in_a_tuple_are_not_kept():
    cf = _compiled(lambda xs: xs[0] + xs[1])
    refs = []
    for i in range(CALLS):
        a, b = torch.full((4,), float(i)), torch.ones(4)
        refs.append(weakref.ref(a))
        assert cf((a, b)).numpy().tolist() == [i + 1.0] * 4
        del a, b
    gc.collect()
    assert all(r() is None for r in refs)
    assert cf._stats["captures"] == 1  # one signature: the tuple's tensors are inputs


def test_compiled_model_inside_compiled_step_runs():
    torch.manual_seed(0)
    lin = nn.Linear(3, 2)
    inner = _compiled(lin)
    outer = _compiled(lambda x: inner(x).relu() * 2)
    torch.manual_seed(1)
    with torch.no_grad():
        for _ in range(CALLS):
            x = torch.randn(4, 3)
            w, b = lin.weight.numpy(), lin.bias.numpy()
            hand = np.maximum(x.numpy() @ w.T + b, 0) * 2
            np.testing.assert_allclose(outer(x).numpy(), hand, rtol=1e-5, atol=1e-6)
    assert outer._stats["captures"] == 1


def test_output_with_backward_graph_runs_once_and_differentiates():
    torch.manual_seed(0)
    lin = nn.Linear(3, 1)
    runs = []
    cl = _compiled(lambda x: (runs.append(1), lin(x))[1])
    x = torch.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for i in range(CALLS):
            x.grad = None
            cl(x).sum().backward()
            np.testing.assert_allclose(x.grad.numpy(), lin.weight.detach().numpy(), rtol=1e-6)
            assert len(runs) == i + 1


# -- the recompile limit -------------------------------------------------------------------------
def test_recompile_limit_warns_and_runs_eagerly():
    m = _Scaled()
    cm = _compiled(m)
    x = torch.tensor([1.0])
    msgs = []
    for i in range(capture.RECOMPILE_LIMIT + 3):
        m.scale = float(i)
        for _ in range(2):
            out, w = _quiet(cm, x)
            msgs += w
            assert out.numpy().tolist() == [float(i)]
    assert sum("recompile limit" in s for s in msgs) == 1
    assert cm._stats["captures"] == capture.RECOMPILE_LIMIT


def test_library_step_closure_is_guarded():
    """clgrad.train's step closes over the model: its state is guarded too."""
    from clgrad.train import make_train_step
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: the model does not change
    step = _compiled(make_train_step(model, nn.CrossEntropyLoss(), opt))
    x, y = torch.ones(8, 3), torch.zeros(8, dtype=torch.int64)
    for _ in range(3):
        step(x, y)
    model.eval()  # no dropout now: the loss is the eager loss of the eval model
    loss, _ = step(x, y)
    with torch.no_grad():
        ref = nn.functional.cross_entropy(model(x), y)
    assert loss.numpy().tobytes() == ref.numpy().tobytes()


def test_same_tensor_twice_and_shared_memory():
    def f(a, b):
        a.add_(1)
        return a + b  # b is a: sees the update
    cf = _compiled(f)
    for i in range(4):
        x = torch.zeros(2)
        assert cf(x, x).numpy().tolist() == [2.0, 2.0]
        assert x.numpy().tolist() == [1.0, 1.0]
    for i in range(4):  # distinct tensors: another signature
        x, y = torch.zeros(2), torch.zeros(2)
        assert cf(x, y).numpy().tolist() == [1.0, 1.0]
    base = torch.zeros(4)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for i in range(4):  # views of one tensor: eager, right values
            out = cf(base[:2], base[1:3])
            assert base.numpy().tolist() == [i + 1.0, i + 1.0, 0.0, 0.0]
            assert out.numpy().tolist() == [2.0 * (i + 1), i + 1.0]  # a + b after a += 1
    assert any("share memory" in str(m.message) for m in w)


def test_view_of_an_input_is_a_fresh_output():
    cf = _compiled(lambda x: x[1:])
    outs = [cf(torch.full((3,), float(i))) for i in range(CALLS)]
    for i, o in enumerate(outs):
        assert o.numpy().tolist() == [float(i)] * 2


def test_argument_requiring_grad_replays():
    torch.manual_seed(0)
    w = torch.randn(3)
    cf = _compiled(lambda x: (x * w).sum().detach())
    for i in range(CALLS):
        x = torch.full((3,), float(i), requires_grad=True)
        assert abs(float(cf(x).item()) - i * float(w.sum().item())) < 1e-5
    assert cf._stats["replays"] == CALLS - 2


@pytest.mark.parametrize("set_to_none", [True, False])
def test_gradient_accumulation_outside_the_compiled_function(set_to_none):
    """The compiled function runs forward and backward only; every second call the caller
    steps and zeroes the gradients (to None, or to zeros in place)."""
    def run(compiled):
        model = _lin()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

        def fb(x):
            loss = (model(x) ** 2).mean()
            loss.backward()
            return loss.detach()
        f = _compiled(fb) if compiled else fb
        losses = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for i, x in enumerate(_xs() * 2):
                losses.append(float(f(x).item()))
                if i % 2 == 1:
                    opt.step()
                    opt.zero_grad(set_to_none=set_to_none)
        return losses, [p.detach().numpy() for p in model.parameters()], f
    ref_losses, ref_params, _ = run(False)
    losses, params, f = run(True)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-6)
    for a, b in zip(params, ref_params):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert f._stats["replays"] >= 4


class _Act(nn.Module):
    factor = 2.0  # a class attribute

    def __init__(self):
        super().__init__()
        self.act = torch.relu

    def forward(self, x):
        return self.act(x) * self.factor


def test_module_function_attribute_and_class_attribute_change():
    m = _Act()
    cm = _compiled(m)
    x = torch.tensor([-1.0, 0.5])
    for _ in range(3):
        assert cm(x).numpy().tolist() == [0.0, 1.0]
    m.act = torch.neg
    for _ in range(3):
        assert cm(x).numpy().tolist() == [2.0, -1.0]
    _Act.factor = 4.0
    try:
        for _ in range(3):
            assert cm(x).numpy().tolist() == [4.0, -2.0]
    finally:
        _Act.factor = 2.0


class _Config:
    pass


CFG = _Config()
CFG.shift = 1.0


def _shifted(x):
    return x + CFG.shift


def test_config_object_attribute_change():
    cf = _compiled(_shifted)
    x = torch.tensor([1.0])
    try:
        for _ in range(3):
            assert cf(x).numpy().tolist() == [2.0]
        CFG.shift = -3.0
        for _ in range(3):
            assert cf(x).numpy().tolist() == [-2.0]
    finally:
        CFG.shift = 1.0


def test_raw_tensor_frozen_stops_training():
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    v = torch.zeros(3, requires_grad=True)
    opt = torch.optim.SGD([w, v], lr=0.1)

    def step(x):
        opt.zero_grad()
        (x * w + x * v).sum().backward()
        opt.step()
    cs = _compiled(step)
    x = torch.ones(3)
    for _ in range(3):
        cs(x)
    np.testing.assert_allclose(w.detach().numpy(), _w0() - 0.3, rtol=1e-6)  # grad = x = 1
    w.requires_grad_(False)
    for _ in range(3):
        cs(x)
    np.testing.assert_allclose(w.detach().numpy(), _w0() - 0.3, rtol=1e-6)
    np.testing.assert_allclose(v.detach().numpy(), [-0.6] * 3, rtol=1e-6)  # v trains on


def _w0():
    torch.manual_seed(0)
    return torch.randn(3).numpy()


class _Namespace:
    scale = 3.0


def _scaled_by_class(x):
    return x * _Namespace.scale


def test_class_used_as_namespace_is_guarded():
    cf = _compiled(_scaled_by_class)
    x = torch.tensor([1.0, 2.0])
    try:
        for _ in range(3):
            assert cf(x).numpy().tolist() == [3.0, 6.0]
        _Namespace.scale = 0.5
        for _ in range(3):
            assert cf(x).numpy().tolist() == [0.5, 1.0]
    finally:
        _Namespace.scale = 3.0


def test_refusal_warning_points_at_the_caller():
    cf = _compiled(lambda x: x * float(x.sum().item()))
    x = torch.tensor([1.0])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            cf(x)
    assert [m.filename for m in w] == [__file__]


def test_parameter_update_before_exception_in_capture_call_is_kept():
    model = _lin()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    fail = [False]

    def step(x):
        opt.zero_grad()
        model(x).sum().backward()  # d sum(x W^T + b) / db = number of rows
        opt.step()
        if fail[0]:
            raise ValueError("after the step")
    cs = _compiled(step)
    x = torch.ones(4, 3)
    cs(x)  # warm-up
    b0 = model.bias.detach().numpy().copy()
    fail[0] = True
    with pytest.raises(ValueError, match="after the step"):
        cs(x)  # the capture call
    np.testing.assert_allclose(model.bias.detach().numpy(), b0 - 0.5 * 4, rtol=1e-6)


def test_parameter_data_replaced_and_module_cast():
    lin = _lin()
    cl = _compiled(lin)
    x = torch.ones(2, 3)
    with torch.no_grad():
        for _ in range(3):
            cl(x)
        lin.weight.data = torch.zeros(2, 3)  # same Parameter object, another storage
        for _ in range(3):
            np.testing.assert_allclose(cl(x).numpy(), np.tile(lin.bias.numpy(), (2, 1)),
                                       rtol=1e-6)
        lin.double()  # Module.to swaps every parameter's storage in place
        xd = torch.ones(2, 3, dtype=torch.float64)
        for _ in range(3):
            out = cl(xd)
            assert out.dtype == torch.float64
            np.testing.assert_allclose(out.numpy(), np.tile(lin.bias.numpy(), (2, 1)))


def test_buffer_storage_replaced():
    torch.manual_seed(0)
    bn = nn.BatchNorm1d(2)
    bn.eval()
    cb = _compiled(bn)
    x = torch.ones(3, 2)
    with torch.no_grad():
        for _ in range(3):
            cb(x)
        bn.running_mean.data = torch.full((2,), 1.0)  # (1 - 1) / sqrt(1 + eps) = 0
        for _ in range(3):
            np.testing.assert_allclose(cb(x).numpy(), np.zeros((3, 2)), atol=1e-6)


def test_capture_call_counts_its_launches_as_eager():
    from clgrad import runtime
    cf = _compiled(lambda x: (x * 2 + 1).relu())
    x = torch.ones(5)
    n0 = runtime.launch_count()
    cf(x)  # warm-up
    eager = runtime.launch_count() - n0
    n0 = runtime.launch_count()
    cf(x)  # capture: the same kernels run, plus the output's copy
    assert runtime.launch_count() - n0 >= eager


MEAN = np.array([1.0, 2.0], dtype=np.float32)


def _normalise(x):
    return x - torch.from_numpy(MEAN)


def test_numpy_array_values_are_guarded():
    cf = _compiled(_normalise)
    x = torch.tensor([5.0, 5.0])
    try:
        for _ in range(3):
            assert cf(x).numpy().tolist() == [4.0, 3.0]
        MEAN[:] = [0.0, 1.0]  # changed in place
        for _ in range(3):
            assert cf(x).numpy().tolist() == [5.0, 4.0]
    finally:
        MEAN[:] = [1.0, 2.0]


# -- adversarial review (issue 37) ---------------------------------------------------------------
def _five(cf, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [cf(x)[0].item() for _ in range(5)]


@pytest.mark.parametrize("draw", [
    lambda g: torch.randn(3, generator=g),
    lambda g: torch.rand(3, generator=g),
    lambda g: torch.randint(0, 1000000, (3,), generator=g).float(),
    lambda g: torch.randperm(1000, generator=g)[:3].float(),
    lambda g: torch.empty(3).normal_(generator=g),
])
def test_random_draw_from_generator_is_not_replayed(draw):
    g = torch.Generator().manual_seed(0)
    x = torch.zeros(3)
    got = _five(_compiled(lambda x: x + draw(g)), x)
    g.manual_seed(0)  # the oracle: the same draws made eagerly
    want = [(x + draw(g))[0].item() for _ in range(5)]
    assert got == want and len(set(got)) == 5


_COUNTER = __import__("itertools").count()


def _next_count(x):
    return x * next(_COUNTER)


@pytest.mark.parametrize("make", [
    lambda: (lambda x: x * random.random()),
    lambda: (lambda x: x * np.random.rand()),
    lambda: (lambda x: x * torch.tensor(np.random.rand(3), dtype=torch.float32)),
    lambda: _next_count,
])
def test_host_random_values_are_not_baked_in(make):
    x = torch.ones(3)
    got = _five(_compiled(make()), x)
    assert len(set(got)) == 5  # eager: a new value per call (torch too)


def test_host_random_refusal_names_the_cause():
    cf = _compiled(lambda x: x * random.random())
    x = torch.ones(2)
    msgs = [m for _ in range(4) for m in _quiet(cf, x)[1]]
    assert any("random" in m and "baked" in m for m in msgs)
    assert cf._stats["replays"] == 0


_W = None


def _bump_and_add_w(x):
    x.add_(1)
    return x + _W


def test_argument_sharing_memory_with_a_global_tensor():
    global _W
    try:
        outs = []
        for compiled in (False, True):  # eager is the oracle; by hand: W+1 doubled, +2 a call
            _W = torch.ones(2)
            f = _compiled(_bump_and_add_w) if compiled else _bump_and_add_w
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outs.append([f(_W).tolist() for _ in range(4)])
        assert outs[0] == [[4.0, 4.0], [6.0, 6.0], [8.0, 8.0], [10.0, 10.0]]
        assert outs[1] == outs[0]
    finally:
        _W = None


def test_a_shared_argument_refusal_is_kept_not_walked_again(monkeypatch):
    """The refusal is recorded for the signature: later calls run eagerly without building the
    guards again (a walk of every module reached, ~1 ms on a 50-layer net, per call)."""
    from clgrad import _compile
    walks = []
    real = _compile._Guards

    def counting(*a, **k):
        walks.append(1)
        return real(*a, **k)
    monkeypatch.setattr(_compile, "_Guards", counting)
    global _W
    try:
        _W = torch.ones(2)
        f = _compiled(_bump_and_add_w)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = [f(_W).tolist() for _ in range(6)]
        assert got == [[4.0, 4.0], [6.0, 6.0], [8.0, 8.0], [10.0, 10.0], [12.0, 12.0],
                       [14.0, 14.0]]  # by hand: W+1 doubled, +2 a call (eager's values)
        assert len(walks) == 1
    finally:
        _W = None


def test_argument_sharing_memory_with_a_parameter_after_capture():
    m = nn.Linear(1, 1, bias=False)

    def f(w, x):
        with torch.no_grad():
            w.mul_(2)
            return m(x)

    with torch.no_grad():
        m.weight.fill_(1.0)
    cf = _compiled(f)
    x = torch.ones(1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):  # warm-up, capture, replay with a separate tensor
            assert cf(torch.ones(1, 1), x).item() == 1.0
        assert cf(m.weight, x).item() == 2.0  # the parameter itself: eager doubles it first
        assert cf(m.weight, x).item() == 4.0
        m2 = nn.Linear(1, 1, bias=False)
        with torch.no_grad():
            m2.weight.fill_(1.0)
        m = m2  # a fresh closure value: captured again, then the argument is its weight
        assert [cf(m.weight, x).item() for _ in range(4)] == [2.0, 4.0, 8.0, 16.0]


def test_autocast_state_is_part_of_the_signature(cpu_fp16):
    m = nn.Linear(3, 2)
    cm = _compiled(m)
    x = torch.ones(4, 3)
    with torch.no_grad():
        for _ in range(3):
            assert cm(x).dtype == torch.float32
        with torch.autocast("cpu", dtype=torch.float16):
            want = m(x)
            outs = [cm(x) for _ in range(3)]
        assert want.dtype == torch.float16
        for o in outs:
            assert o.dtype == torch.float16
            np.testing.assert_array_equal(o.numpy(), want.numpy())
        assert cm(x).dtype == torch.float32


def test_negative_zero_is_another_argument_and_global():
    x = torch.ones(2)
    cf = _compiled(lambda x, a: 1 / (x * a))
    for _ in range(3):
        assert cf(x, 0.0).tolist() == [np.inf, np.inf]
    assert cf(x, -0.0).tolist() == [-np.inf, -np.inf]  # eager and torch: -inf
    assert (1 / (x * -0.0)).tolist() == [-np.inf, -np.inf]
    nan = float("nan")
    for _ in range(4):  # another NaN object each call: one signature, replayed
        assert np.isnan(cf(x, nan * 1.0).numpy()).all()
    assert len(cf._entries) == 2 + 1 and cf._stats["replays"] >= 2
    a = 0.0
    cg = _compiled(lambda x: 1 / (x * a))
    for _ in range(3):
        assert cg(x).tolist() == [np.inf, np.inf]
    a = -0.0
    assert cg(x).tolist() == [-np.inf, -np.inf]


def test_strides_are_part_of_the_signature():
    cf = _compiled(lambda x: x.view(-1) * 1)
    for _ in range(3):
        assert cf(torch.ones(2, 3)).shape == (6,)
    xt = torch.ones(3, 2).t()
    with pytest.raises(RuntimeError):
        xt.view(-1)  # the eager oracle
    with pytest.raises(RuntimeError):
        cf(xt)
    cg = _compiled(lambda x: x * torch.tensor([[1.0], [2.0]]))  # a transposed input replays
    xt = torch.arange(6.0).reshape(3, 2).t()
    want = (xt * torch.tensor([[1.0], [2.0]])).tolist()
    assert want == [[0.0, 2.0, 4.0], [2.0, 6.0, 10.0]]
    for _ in range(4):
        out = cg(xt)
        assert out.tolist() == want
    assert cg._stats["replays"] == 2


class _Batch:
    def __init__(self, x):
        self.x = x


def test_signatures_are_bounded_and_do_not_keep_arguments_alive():
    cf = _compiled(lambda b: b.x * 2)
    refs, msgs = [], []
    for i in range(50):
        t = torch.full((3,), float(i))
        refs.append(weakref.ref(t))
        out, w = _quiet(cf, _Batch(t))
        msgs += w
        assert out.tolist() == [2.0 * i] * 3
        del t, out
    gc.collect()
    assert len(cf._entries) <= capture.SIGNATURE_LIMIT
    assert sum(r() is not None for r in refs) <= capture.SIGNATURE_LIMIT
    assert sum("signature limit" in m for m in msgs) == 1


def test_a_float_changing_every_call_stays_bounded_and_right():
    cf = _compiled(lambda x, t: x * t)
    x = torch.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(50):
            t = 1.0 - i / 50
            assert cf(x, t).tolist() == (x * t).tolist() == [np.float32(t)] * 2
    assert len(cf._entries) <= capture.SIGNATURE_LIMIT
    with warnings.catch_warnings():  # a fixed value still gets captured and replayed
        warnings.simplefilter("ignore")
        for _ in range(4):
            assert cf(x, 0.5).tolist() == [0.5, 0.5]
    assert cf._stats["replays"] >= 1


def test_outputs_keep_their_aliasing():
    def f(x):
        y = x * 2
        return y, y, y.view(2, 1)

    cf = _compiled(f)
    for _ in range(4):
        x = torch.tensor([1.0, 2.0])
        a, b, c = cf(x)
        assert a is b  # eager: the same tensor twice
        a.add_(10)
        assert b.tolist() == [12.0, 14.0] and c.tolist() == [[12.0], [14.0]]
    assert cf._stats["replays"] == 2
    p, q, r = cf(torch.tensor([3.0, 4.0]))  # a replay's outputs are fresh: earlier ones kept
    assert a.tolist() == [12.0, 14.0] and p.tolist() == [6.0, 8.0] and r.shape == (2, 1)


def _hooked_calls(m, change):
    """The compiled and eager outputs of ``m`` on ones(1, 1) for three calls, ``change()``,
    three calls."""
    x = torch.ones(1, 1)
    cm = _compiled(m)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        got = [cm(x).item() for _ in range(3)]
        want = [m(x).item() for _ in range(3)]
        assert cm._stats["replays"] == 1
        change()
        got += [cm(x).item() for _ in range(3)]
        want += [m(x).item() for _ in range(3)]
    return got, want


def _unit():
    m = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        m.weight.fill_(1.0)
    return m


def test_state_read_by_module_hooks_is_guarded():
    m, s = _unit(), [2.0]
    m.register_forward_hook(lambda mod, i, o: o * s[0])
    got, want = _hooked_calls(m, lambda: s.__setitem__(0, 5.0))
    assert got == want == [2.0] * 3 + [5.0] * 3

    class Scale:
        def __init__(self):
            self.k = 3.0

        def __call__(self, mod, i, o):
            return o * self.k

    m, h = _unit(), Scale()
    m.register_forward_hook(h)
    got, want = _hooked_calls(m, lambda: setattr(h, "k", 7.0))
    assert got == want == [3.0] * 3 + [7.0] * 3

    m, cfg = _unit(), {"add": 1.0}
    m.register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] + cfg["add"],), kwargs),
                                with_kwargs=True)
    got, want = _hooked_calls(m, lambda: cfg.__setitem__("add", 4.0))
    assert got == want == [2.0] * 3 + [5.0] * 3


def test_state_read_by_a_global_module_hook_is_guarded():
    s = [2.0]
    h = nn.modules.module.register_module_forward_hook(lambda mod, i, o: o * s[0])
    try:
        got, want = _hooked_calls(_unit(), lambda: s.__setitem__(0, 3.0))
    finally:
        h.remove()
    assert got == want == [2.0] * 3 + [3.0] * 3


def _before_after(f, change):
    """Compiled and eager values of ``f(ones(1))``: three calls, ``change()``, two calls."""
    x = torch.ones(1)
    cf = _compiled(f)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        got = [cf(x).item() for _ in range(3)]
        assert cf._stats["replays"] == 1
        change()
        got += [cf(x).item() for _ in range(2)]
        want = f(x).item()
    return got, want


class _ClassCfg(nn.Module):
    cfg = [2.0]

    def forward(self, x):
        return x * _ClassCfg.cfg[0]


_CFGMOD = __import__("types").ModuleType("cfgmod_for_test")
_CFGMOD.params = {"s": 2.0}


def _read_cfgmod(x):
    return x * _CFGMOD.params["s"]


class _Slotted:
    __slots__ = ("k",)

    def __init__(self):
        self.k = 2.0


class _Patched(nn.Module):
    def forward(self, x):
        return x * 2


def test_class_list_module_dict_slots_patched_method_defaults_are_guarded():
    m = _ClassCfg()
    got, want = _before_after(m, lambda: _ClassCfg.cfg.__setitem__(0, 7.0))
    assert got == [2.0] * 3 + [7.0] * 2 and want == 7.0
    try:
        got, want = _before_after(_read_cfgmod, lambda: _CFGMOD.params.__setitem__("s", 7.0))
    finally:
        _CFGMOD.params["s"] = 2.0
    assert got == [2.0] * 3 + [7.0] * 2 and want == 7.0
    o = _Slotted()
    got, want = _before_after(lambda x: x * o.k, lambda: setattr(o, "k", 7.0))
    assert got == [2.0] * 3 + [7.0] * 2 and want == 7.0
    forward = _Patched.forward
    try:
        got, want = _before_after(_Patched(), lambda: setattr(
            _Patched, "forward", lambda self, x: x * 7))
    finally:
        _Patched.forward = forward
    assert got == [2.0] * 3 + [7.0] * 2 and want == 7.0

    def kd(x, *, s=2.0):
        return x * s

    def dd(x, s=2.0):
        return x * s
    got, want = _before_after(kd, lambda: setattr(kd, "__kwdefaults__", {"s": 7.0}))
    assert got == [2.0] * 3 + [7.0] * 2 and want == 7.0
    got, want = _before_after(dd, lambda: setattr(dd, "__defaults__", (7.0,)))
    assert got == [2.0] * 3 + [7.0] * 2 and want == 7.0


def test_strides_of_size_one_dims_do_not_refuse():
    cf = _compiled(lambda x: x * 2)
    a = torch.arange(3.0).reshape(3, 1).t()  # shape (1, 3), strides (1, 1)
    for _ in range(4):
        assert cf(a).tolist() == [[0.0, 2.0, 4.0]]
    assert cf._stats["replays"] == 2
