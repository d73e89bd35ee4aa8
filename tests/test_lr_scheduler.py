"""Learning-rate schedules: sequences against closed forms from PyTorch's documentation and hand
values, and (where torch is installed) against torch.optim.lr_scheduler step by step."""
import math
from collections import Counter

import numpy as np

import pytest

import clgrad
from clgrad import optim
from clgrad.optim import lr_scheduler as ls


def _opt(cls=optim.SGD, lrs=(0.1,), **kw):
    groups = [{"params": [clgrad.ones(1, requires_grad=True)], "lr": lr} for lr in lrs]
    return cls(groups, **kw)


def _run(sched, epochs, metrics=None):
    out = [sched.get_last_lr()]
    for e in range(epochs):
        sched.optimizer.step()
        sched.step() if metrics is None else sched.step(metrics[e])
        out.append(sched.get_last_lr())
    return out


def _check(lrs, want, rtol=1e-13):
    np.testing.assert_allclose(np.array(lrs, dtype=float), np.array(want, dtype=float),
                               rtol=rtol, atol=1e-300)


# -- closed forms (PyTorch's documented formulas) -------------------------------------------
CLOSED = [
    ("MultiStepLR", dict(milestones=[2, 5, 5], gamma=0.5),
     lambda b, e: b * 0.5 ** sum(m <= e for m in (2, 5, 5))),
    ("ExponentialLR", dict(gamma=0.8), lambda b, e: b * 0.8 ** e),
    ("LambdaLR", dict(lr_lambda=lambda e: 1 / (e + 1)), lambda b, e: b / (e + 1)),
    ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.9), lambda b, e: b * 0.9 ** e),
    ("LinearLR", dict(start_factor=0.25, end_factor=0.75, total_iters=4),
     lambda b, e: b * (0.25 + 0.5 * min(e, 4) / 4)),
    ("ConstantLR", dict(factor=0.5, total_iters=3), lambda b, e: b * (0.5 if e < 3 else 1.0)),
    ("PolynomialLR", dict(total_iters=6, power=2.0), lambda b, e: b * (1 - min(e, 6) / 6) ** 2),
    ("StepLR", dict(step_size=3, gamma=0.1), lambda b, e: b * 0.1 ** (e // 3)),
    ("CosineAnnealingLR", dict(T_max=4, eta_min=0.01),
     lambda b, e: 0.01 + (b - 0.01) * (1 + math.cos(math.pi * e / 4)) / 2),
]


@pytest.mark.parametrize("name,kw,f", CLOSED, ids=[c[0] for c in CLOSED])
def test_schedule_matches_closed_form(name, kw, f):
    opt = _opt(lrs=(0.1, 0.7))
    lrs = _run(getattr(ls, name)(opt, **kw), 9)
    _check(lrs, [[f(0.1, e), f(0.7, e)] for e in range(10)])
    assert [g["lr"] for g in opt.param_groups] == lrs[-1]


CHAINABLE = [c for c in CLOSED if c[0] not in ("LambdaLR", "MultiplicativeLR")]


@pytest.mark.parametrize("name,kw,f", CHAINABLE, ids=[c[0] for c in CHAINABLE])
def test_step_with_epoch_jumps_to_the_closed_form(name, kw, f):
    sched = getattr(ls, name)(_opt(), **kw)
    with pytest.warns(UserWarning, match="epoch parameter"):
        sched.step(7)
    _check(sched.get_last_lr(), [f(0.1, 7)])


def test_hand_values():
    # MultiStepLR docs example: lr 0.05 for epoch < 30, 0.005 for 30 <= epoch < 80, 0.0005 after
    sched = ls.MultiStepLR(_opt(lrs=(0.05,)), milestones=[30, 80], gamma=0.1)
    lrs = _run(sched, 85)
    assert lrs[29] == [0.05] and lrs[30] == pytest.approx([0.005], rel=1e-15)
    assert lrs[80] == pytest.approx([0.0005], rel=1e-15)
    # LinearLR docs example: 0.025, 0.03125, 0.0375, 0.04375, then 0.05
    lrs = _run(ls.LinearLR(_opt(lrs=(0.05,)), start_factor=0.5, total_iters=4), 5)
    _check(lrs, [[v] for v in (0.025, 0.03125, 0.0375, 0.04375, 0.05, 0.05)])
    # PolynomialLR docs example: 0.001, 0.00075, 0.0005, 0.00025, 0
    lrs = _run(ls.PolynomialLR(_opt(lrs=(0.001,)), total_iters=4, power=1.0), 5)
    _check(lrs, [[v] for v in (0.001, 0.00075, 0.0005, 0.00025, 0.0, 0.0)])


def test_chained_scheduler_multiplies():
    opt = _opt(lrs=(1.0,))
    s = ls.ChainedScheduler([ls.ConstantLR(opt, factor=0.1, total_iters=2),
                             ls.ExponentialLR(opt, gamma=0.9)])
    # by hand: ExponentialLR's initial step leaves lr alone (PyTorch >= 2.2); then each step
    # multiplies by 0.9, and ConstantLR divides by 0.1 at epoch 2
    _check(_run(s, 4), [[v] for v in (0.1, 0.09, 0.81, 0.729, 0.6561)])


def test_sequential_lr_hands_over_at_milestones():
    opt = _opt(lrs=(1.0,))
    s = ls.SequentialLR(opt, [ls.ConstantLR(opt, factor=0.1, total_iters=2),
                              ls.ExponentialLR(opt, gamma=0.9)], milestones=[2])
    # PyTorch's docs example: 0.1, 0.1, then 1.0 * 0.9 ** (e - 2)
    _check(_run(s, 5), [[v] for v in (0.1, 0.1, 1.0, 0.9, 0.81, 0.729)])
    warm = ls.SequentialLR(opt2 := _opt(lrs=(0.2,)), [
        ls.LinearLR(opt2, start_factor=0.5, total_iters=2),
        ls.CosineAnnealingLR(opt2, T_max=4)], milestones=[3])
    want = [0.1, 0.15, 0.2] + [0.1 * (1 + math.cos(math.pi * e / 4)) for e in range(5)]
    _check(_run(warm, 7), [[v] for v in want])


def test_sequential_and_chained_reject_bad_arguments():
    opt, other = _opt(), _opt()
    with pytest.raises(ValueError, match="milestones"):
        ls.SequentialLR(opt, [ls.StepLR(opt, 2), ls.StepLR(opt, 3)], milestones=[1, 2])
    with pytest.raises(ValueError, match="same optimizer"):
        ls.ChainedScheduler([ls.StepLR(opt, 2), ls.StepLR(other, 3)])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        ls.ChainedScheduler([ls.ReduceLROnPlateau(opt)])
    with pytest.raises(ValueError, match="at least one"):
        ls.ChainedScheduler([])


def test_reduce_lr_on_plateau_hand_sequence():
    opt = _opt(lrs=(1.0, 0.5))
    s = ls.ReduceLROnPlateau(opt, factor=0.5, patience=1, cooldown=1, min_lr=[0.0, 0.2])
    metrics = [10, 9, 9.5, 9.2, 9.1, 9.0, 9.0, 9.0, 8.0, 8.5, 8.5]
    # by hand: bad epochs 0,0,1,2 -> halve at epoch 4, cooldown eats epoch 5's, 1, 2 -> halve
    # at 7, cooldown, 8.0 improves (9), 1, 2 -> halve at 11
    lrs = [r[0] for r in _run(s, len(metrics), metrics)]
    assert lrs == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 0.125]
    assert opt.param_groups[1]["lr"] == 0.2  # 0.5 -> 0.25 -> max(0.125, 0.2)
    s = ls.ReduceLROnPlateau(_opt(lrs=(1.0,)), mode="max", threshold=0.1,
                             threshold_mode="abs", patience=0)
    # 1.05 is not better than 1.0 + 0.1 in abs mode: reduce at once
    assert [r[0] for r in _run(s, 3, [1.0, 1.05, 1.2])] == pytest.approx([1.0, 1.0, 0.1, 0.1])


def test_reduce_lr_on_plateau_rel_threshold_and_eps():
    s = ls.ReduceLROnPlateau(_opt(lrs=(1.0,)), patience=0, threshold=0.1)
    # rel min: improved only when metric < best * 0.9
    assert [r[0] for r in _run(s, 3, [1.0, 0.95, 0.8])] == pytest.approx([1.0, 1.0, 0.1, 0.1])
    s = ls.ReduceLROnPlateau(_opt(lrs=(1.0,)), patience=0)
    s.step(clgrad.tensor(2.0))  # a one-element tensor metric, as a loss
    s.step(clgrad.tensor([3.0]))
    assert s.get_last_lr() == pytest.approx([0.1]) and s.best == 2.0
    s = ls.ReduceLROnPlateau(_opt(lrs=(1e-9,)), patience=0, eps=1e-8)
    assert _run(s, 2, [1.0, 2.0])[-1] == [1e-9]  # a change below eps is not applied
    with pytest.raises(ValueError, match="factor"):
        ls.ReduceLROnPlateau(_opt(), factor=1.0)
    with pytest.raises(ValueError, match="mode"):
        ls.ReduceLROnPlateau(_opt(), mode="up")


def test_cosine_annealing_warm_restarts():
    f = lambda tc, ti: 0.1 * (1 + math.cos(math.pi * tc / ti)) / 2  # noqa: E731
    s = ls.CosineAnnealingWarmRestarts(_opt(lrs=(0.2,)), T_0=2, T_mult=2, eta_min=0.1)
    tcur_ti = [(0, 2), (1, 2), (0, 4), (1, 4), (2, 4), (3, 4), (0, 8), (1, 8)]
    _check(_run(s, 7), [[0.1 + f(tc, ti)] for tc, ti in tcur_ti])
    s = ls.CosineAnnealingWarmRestarts(_opt(lrs=(0.2,)), T_0=2, T_mult=2, eta_min=0.1)
    for epoch, (tc, ti) in ((0.5, (0.5, 2)), (2.5, (0.5, 4)), (6.25, (0.25, 8)),
                            (1.0, (1.0, 2))):
        s.step(epoch)
        _check(s.get_last_lr(), [0.1 + f(tc, ti)])
        assert s.last_epoch == math.floor(epoch)
    s = ls.CosineAnnealingWarmRestarts(_opt(lrs=(1.0,)), T_0=3)
    s.step(7.5)  # T_mult 1: T_cur = 7.5 % 3
    _check(s.get_last_lr(), [(1 + math.cos(math.pi * 1.5 / 3)) / 2])
    with pytest.raises(ValueError, match="T_0"):
        ls.CosineAnnealingWarmRestarts(_opt(), T_0=0)
    with pytest.raises(ValueError, match="non-negative"):
        s.step(-1)


def _one_cycle_ref(step, total, max_lr, pct, div, final, anneal, three):
    lo, hi = max_lr / div, max_lr
    end = lo / final
    cos = lambda a, b, t: b + (a - b) / 2 * (math.cos(math.pi * t) + 1)  # noqa: E731
    lin = lambda a, b, t: a + (b - a) * t  # noqa: E731
    an = cos if anneal == "cos" else lin
    up = pct * total - 1
    if three:
        down = 2 * pct * total - 2
        if step <= up:
            return an(lo, hi, step / up), an(0.95, 0.85, step / up)
        if step <= down:
            return an(hi, lo, (step - up) / (down - up)), an(0.85, 0.95, (step - up) / (down - up))
        t = (step - down) / (total - 1 - down)
        return an(lo, end, t), 0.95
    if step <= up:
        return an(lo, hi, step / up), an(0.95, 0.85, step / up)
    t = (step - up) / (total - 1 - up)
    return an(hi, end, t), an(0.85, 0.95, t)


@pytest.mark.parametrize("anneal,three,cls", [("cos", False, optim.SGD),
                                              ("linear", False, optim.Adam),
                                              ("cos", True, optim.Adam),
                                              ("linear", True, optim.SGD)])
def test_one_cycle_lr_and_momentum(anneal, three, cls):
    opt = _opt(cls, lrs=(0.1,), **({"momentum": 0.9} if cls is optim.SGD else {}))
    s = ls.OneCycleLR(opt, max_lr=1.0, total_steps=20, pct_start=0.25, anneal_strategy=anneal,
                      three_phase=three, div_factor=10.0, final_div_factor=100.0)
    got_lr, got_m = [], []
    for step in range(20):
        g = opt.param_groups[0]
        got_lr.append(g["lr"])
        got_m.append(g["momentum"] if cls is optim.SGD else g["betas"][0])
        if step < 19:
            opt.step()
            s.step()
    want = [_one_cycle_ref(k, 20, 1.0, 0.25, 10.0, 100.0, anneal, three) for k in range(20)]
    _check(got_lr, [w[0] for w in want])
    _check(got_m, [w[1] for w in want])
    assert got_lr[0] == pytest.approx(0.1) and got_lr[-1] == pytest.approx(0.001)
    if cls is optim.Adam:
        assert opt.param_groups[0]["betas"][1] == 0.999
    s.step()
    with pytest.raises(ValueError, match="total steps"):
        s.step()


def test_one_cycle_lr_arguments():
    s = ls.OneCycleLR(_opt(lrs=(0.1, 0.1)), max_lr=[1.0, 2.0], epochs=2, steps_per_epoch=5,
                      cycle_momentum=False)
    assert s.total_steps == 10 and s.get_last_lr() == pytest.approx([0.04, 0.08])
    with pytest.raises(ValueError, match="total_steps"):
        ls.OneCycleLR(_opt(), max_lr=1.0)
    with pytest.raises(ValueError, match="momentum or beta1"):
        ls.OneCycleLR(_opt(optim.Adagrad), max_lr=1.0, total_steps=5)
    with pytest.raises(ValueError, match="anneal_strategy"):
        ls.OneCycleLR(_opt(), max_lr=1.0, total_steps=5, anneal_strategy="exp")


def _all_schedulers():
    """(name, factory(opt), metrics or None) for each schedule kind."""
    return [
        ("StepLR", lambda o: ls.StepLR(o, 2, 0.5), None),
        ("MultiStepLR", lambda o: ls.MultiStepLR(o, [1, 3, 3, 6], 0.5), None),
        ("ExponentialLR", lambda o: ls.ExponentialLR(o, 0.7), None),
        ("MultiplicativeLR", lambda o: ls.MultiplicativeLR(o, lambda e: 0.95), None),
        ("LambdaLR", lambda o: ls.LambdaLR(o, lambda e: 0.9 ** e), None),
        ("LinearLR", lambda o: ls.LinearLR(o, 0.2, 0.9, 4), None),
        ("ConstantLR", lambda o: ls.ConstantLR(o, 0.3, 2), None),
        ("PolynomialLR", lambda o: ls.PolynomialLR(o, 5, 1.5), None),
        ("CosineAnnealingLR", lambda o: ls.CosineAnnealingLR(o, 3, 0.01), None),
        ("CosineAnnealingWarmRestarts",
         lambda o: ls.CosineAnnealingWarmRestarts(o, 2, 2, 0.01), None),
        ("OneCycleLR", lambda o: ls.OneCycleLR(o, 1.0, total_steps=12, three_phase=True), None),
        ("ReduceLROnPlateau", lambda o: ls.ReduceLROnPlateau(o, patience=1, cooldown=1),
         [5, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3]),
        ("ChainedScheduler", lambda o: ls.ChainedScheduler(
            [ls.LinearLR(o, 0.5, total_iters=3), ls.MultiStepLR(o, [2, 4], 0.5),
             ls.CosineAnnealingLR(o, 6)]), None),
        ("SequentialLR", lambda o: ls.SequentialLR(
            o, [ls.LinearLR(o, 0.5, total_iters=2), ls.ExponentialLR(o, 0.8),
                ls.StepLR(o, 2, 0.5)], [3, 6]), None),
    ]


@pytest.mark.parametrize("name,make,metrics", _all_schedulers(),
                         ids=[s[0] for s in _all_schedulers()])
def test_state_dict_round_trip_through_a_checkpoint(tmp_path, name, make, metrics):
    def fresh():
        opt = _opt(optim.SGD, lrs=(0.1, 0.3), momentum=0.9)
        return opt, make(opt)
    opt, s = fresh()
    first = _run(s, 5, metrics)
    clgrad.save({"opt": opt.state_dict(), "sched": s.state_dict()}, tmp_path / "ck.safetensors")
    ck = clgrad.load(tmp_path / "ck.safetensors")
    opt2, s2 = fresh()
    opt2.load_state_dict(ck["opt"])
    s2.load_state_dict(ck["sched"])
    assert s2.get_last_lr() == first[-1]
    rest = metrics[5:] if metrics else None
    _check(_run(s2, 5, rest), _run(s, 5, rest), rtol=0)


@pytest.mark.parametrize("name,make,metrics", _all_schedulers(),
                         ids=[s[0] for s in _all_schedulers()])
def test_sequence_matches_torch(name, make, metrics):
    torch = pytest.importorskip("torch")
    opt = _opt(optim.SGD, lrs=(0.1, 0.3), momentum=0.9)
    topt = torch.optim.SGD([{"params": [torch.ones(1, requires_grad=True)], "lr": lr}
                            for lr in (0.1, 0.3)], momentum=0.9)
    mine = _run(make(opt), 10, metrics)
    src = make.__code__  # the same factory, evaluated with torch's module for `ls`
    theirs_make = type(make)(src, {**make.__globals__, "ls": torch.optim.lr_scheduler})
    theirs = _run(theirs_make(topt), 10, metrics)
    _check(mine, theirs, rtol=1e-15)
    moms = [g["momentum"] for g in opt.param_groups]
    assert moms == pytest.approx([g["momentum"] for g in topt.param_groups], rel=1e-15)


def test_multisteplr_state_dict_milestones_are_a_counter(tmp_path):
    from collections import Counter
    opt = _opt(lrs=(0.1,))
    s = ls.MultiStepLR(opt, [2, 5, 5], 0.5)
    _run(s, 3)
    sd = s.state_dict()
    assert type(sd["milestones"]) is Counter and sd["milestones"] == Counter({5: 2, 2: 1})
    assert sd["milestones"] is not s.milestones  # a copy
    # PyTorch's format (a pickled Counter) loads back with weights_only (as torch's load)
    clgrad.save(sd, tmp_path / "s.pt")
    back = clgrad.load(tmp_path / "s.pt")
    assert type(back["milestones"]) is Counter and back["milestones"] == sd["milestones"]
    s2 = ls.MultiStepLR(_opt(lrs=(0.05,)), [9], 0.5)  # the optimizer as restored: lr 0.05
    s2.load_state_dict(back)
    # by hand: milestones 2 once and 5 twice, gamma 0.5; epochs 3..7 after the load
    _check(_run(s2, 4), [[0.05], [0.05], [0.0125], [0.0125], [0.0125]])
    s3 = ls.MultiStepLR(_opt(lrs=(0.1,)), [9], 0.5)
    s3.load_state_dict({**sd, "milestones": [2, 5, 5]})  # the list older versions saved
    assert s3.milestones == Counter({5: 2, 2: 1})
    torch = pytest.importorskip("torch")
    topt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.05)
    ts = torch.optim.lr_scheduler.MultiStepLR(topt, [9], 0.5)
    ts.load_state_dict(s.state_dict())  # failed with the list: torch's get_lr indexes a Counter
    got = []
    for _ in range(4):
        topt.step()
        ts.step()
        got.append(ts.get_last_lr())
    _check(got, _run(s, 4)[1:])
    tsd = torch.load(tmp_path / "s.pt", weights_only=True)  # clgrad's file in torch
    assert tsd["milestones"] == Counter({5: 2, 2: 1})


@pytest.mark.parametrize("name,make,metrics", _all_schedulers(),
                         ids=[s[0] for s in _all_schedulers()])
def test_state_dict_loads_into_torch_and_back(tmp_path, name, make, metrics):
    """Step clgrad's and torch's schedulers side by side, save each one's state dict with its
    own library, load it into a fresh scheduler of the other and keep stepping: the same lrs."""
    torch = pytest.importorskip("torch")
    theirs_make = type(make)(make.__code__, {**make.__globals__, "ls": torch.optim.lr_scheduler})

    def fresh(lib):
        if lib is torch:
            opt = torch.optim.SGD([{"params": [torch.ones(1, requires_grad=True)], "lr": lr}
                                   for lr in (0.1, 0.3)], momentum=0.9)
            return opt, theirs_make(opt)
        opt = _opt(optim.SGD, lrs=(0.1, 0.3), momentum=0.9)
        return opt, make(opt)
    split = 2  # before MultiStepLR's repeated milestone, OneCycleLR's peak, a restart ...
    head = metrics[:split] if metrics else None
    rest = metrics[split:] if metrics else None
    (opt, ours), (topt, theirs) = fresh(clgrad), fresh(torch)
    _check(_run(ours, split, head), _run(theirs, split, head), rtol=1e-15)
    clgrad.save({"opt": opt.state_dict(), "sched": ours.state_dict()}, tmp_path / "c.pt")
    torch.save({"opt": topt.state_dict(), "sched": theirs.state_dict()}, tmp_path / "t.pt")
    from_clgrad = torch.load(tmp_path / "c.pt", weights_only=True)
    from_torch = clgrad.load(tmp_path / "t.pt", weights_only=False)  # MultiStepLR: a Counter
    (topt2, theirs2), (opt2, ours2) = fresh(torch), fresh(clgrad)
    topt2.load_state_dict(from_clgrad["opt"])
    theirs2.load_state_dict(from_clgrad["sched"])
    opt2.load_state_dict(from_torch["opt"])
    ours2.load_state_dict(from_torch["sched"])
    want = _run(ours, 8, rest)
    _check(_run(theirs, 8, rest), want, rtol=1e-15)
    _check(_run(theirs2, 8, rest), want, rtol=1e-15)  # torch resumed from clgrad's state
    _check(_run(ours2, 8, rest), want, rtol=1e-15)  # clgrad resumed from torch's state


def test_multistep_state_dict_milestones_are_what_torch_indexes():
    # PyTorch's MultiStepLR.get_lr reads milestones[last_epoch] (the count of that milestone),
    # so the saved milestones must map each milestone to its count, not list them
    s = ls.MultiStepLR(_opt(), [6, 3, 1, 3], 0.5)
    saved = s.state_dict()["milestones"]
    assert saved == {1: 1, 3: 2, 6: 1} and type(saved) is Counter  # as PyTorch's
    s2 = ls.MultiStepLR(_opt(), [2], 0.5)
    s2.load_state_dict(s.state_dict())
    _check(_run(s2, 7)[1:], [[v] for v in (0.05, 0.05, 0.0125, 0.0125, 0.0125, 0.00625, 0.00625)])


def test_steplr_and_cosine_take_a_whole_float_period_as_pytorch():
    """The nn.Transformer tutorial's StepLR(optimizer, 1.0, gamma=0.95): PyTorch checks
    nothing; its lrs with 2.0 and 4.0 (PyTorch 2.14's values)."""
    p = [clgrad.nn.Parameter(clgrad.zeros(1))]
    opt = clgrad.optim.SGD(p, lr=1.0)
    s = clgrad.optim.lr_scheduler.StepLR(opt, 2.0, gamma=0.5)
    lrs = []
    for _ in range(5):
        opt.step()
        s.step()
        lrs.append(s.get_last_lr()[0])
    assert lrs == [1.0, 0.5, 0.5, 0.25, 0.25]
    opt = clgrad.optim.SGD(p, lr=1.0)
    s = clgrad.optim.lr_scheduler.CosineAnnealingLR(opt, 4.0)
    lrs = []
    for _ in range(3):
        opt.step()
        s.step()
        lrs.append(s.get_last_lr()[0])
    assert lrs == pytest.approx([0.8535533905932737, 0.5, 0.14644660940672627], rel=1e-12)
    with pytest.raises(ValueError, match="positive int"):
        clgrad.optim.lr_scheduler.StepLR(opt, 1.5)
