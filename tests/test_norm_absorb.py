"""relu(batch_norm(x)) written apart (F.relu(bn(x)), nn.ReLU(inplace=True) after a BatchNorm):
the autograd engine runs relu's backward inside batch norm's backward kernel
(clgrad.autograd.graph._absorb, batch_norm's Node.fuse), one launch instead of two.

Each case runs twice from the same values, absorbed (graph.ABSORB, the default) and not
(ABSORB False: relu_grad then bn_bwd), and checks
- the two paths' gradients bit for bit (np.array_equal, NaNs in the same places);
- the launches of the backward: one fewer absorbed, the same where the absorption must not
  apply (a second consumer of the batch norm's output, hooks, retain_grad, autograd.grad's
  inputs, saved-tensor hooks, create_graph, a bias changed since the forward, bfloat16's
  casts between the two);
- the gradients against a float64 NumPy oracle of batch norm (training: the batch's
  statistics, biased variance; eval: the running ones) then relu. relu's derivative is taken
  where the forward's relu output is > 0 (PyTorch's threshold_backward reads the result), so
  the oracle's mask is the device's own rounding of the pre-activation (checked against the
  float64 one away from 0). Tolerance: float32's, 1e-4 relative plus 1e-5 of the sum of the
  terms' magnitudes (float32 sums over a channel, a few roundings deep).
The near-zero cases place consecutive float32 inputs around the root of each channel's
pre-activation, so that the fused kernel's recomputed mask and relu's mask of the stored
output are compared where a single rounding decides them; the mixed float16 case (float16
input, float32 parameters: autocast's, or bn.half()'s float32 copies) is absorbed too, its
fused mask cutting where the float32 pre-activation rounds to +0 in float16 (<= 2^-25),
checked at that boundary.
"""
import contextlib

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.autograd import graph
from clgrad.ops import norm
from clgrad.runtime import launch_count

RNG = np.random.default_rng(2024)
EPS = 1e-5
F16, F32, F64 = clgrad.float16, clgrad.float32, clgrad.float64


@pytest.fixture(autouse=True)
def _absorb_on():
    """Every test starts with the absorption on (the default) and leaves it so."""
    prev = graph.ABSORB
    graph.ABSORB = True
    try:
        yield
    finally:
        graph.ABSORB = prev


@contextlib.contextmanager
def absorbing(on):
    prev = graph.ABSORB
    graph.ABSORB = on
    try:
        yield
    finally:
        graph.ABSORB = prev


def launches(fn):
    """(fn's result, the kernel launches it made)."""
    n0 = launch_count()
    out = fn()
    return out, launch_count() - n0


def both(case):
    """case() -> (launches of its backward, [arrays]) run absorbed and not: the arrays
    asserted bit-for-bit equal (NaNs alike); returns (absorbed arrays, launches absorbed,
    launches not)."""
    with absorbing(True):
        n_on, got_on = case()
    with absorbing(False):
        n_off, got_off = case()
    assert len(got_on) == len(got_off)
    for i, (a, b) in enumerate(zip(got_on, got_off)):
        assert a.dtype == b.dtype and a.shape == b.shape, i
        assert np.array_equal(a, b, equal_nan=True), (i, _first_diff(a, b))
    return got_on, n_on, n_off


def _first_diff(a, b):
    bad = ~((a == b) | (np.isnan(a) & np.isnan(b)))
    idx = np.argwhere(bad)
    return len(idx), [(tuple(i), a[tuple(i)], b[tuple(i)]) for i in idx[:5]]


def np_of(t):
    return t.detach().numpy().copy()


# -- the oracle -------------------------------------------------------------------------------
def bshape(nd):
    return (1, -1) + (1,) * (nd - 2)


def oracle(x, w, b, g, mask, training, rm=None, rv=None, eps=EPS, extra=None):
    """float64 (pre-activation, gy, gx, gw, gb, and the magnitudes of gx, gw, gb's terms) of
    relu(batch_norm(x)) with upstream gradient g, relu's derivative 1 where ``mask``; ``extra``
    a gradient that reaches the batch norm's output besides relu's (a second consumer)."""
    x, g = np.asarray(x, np.float64), np.asarray(g, np.float64)
    nd, c = x.ndim, x.shape[1]
    axes = (0,) + tuple(range(2, nd))
    m = x.size // c
    w = np.ones(c) if w is None else np.asarray(w, np.float64)
    b = np.zeros(c) if b is None else np.asarray(b, np.float64)
    if training:
        mean, var = x.mean(axes), x.var(axes)
    else:
        mean, var = np.asarray(rm, np.float64), np.asarray(rv, np.float64)
    s = bshape(nd)
    invstd = 1 / np.sqrt(var + eps)
    xh = (x - mean.reshape(s)) * invstd.reshape(s)
    pre = xh * w.reshape(s) + b.reshape(s)
    gy = np.where(mask, g, 0.0)
    if extra is not None:
        gy = gy + np.asarray(extra, np.float64)
    gb, gw = gy.sum(axes), (gy * xh).sum(axes)
    mb, mw = np.abs(gy).sum(axes), np.abs(gy * xh).sum(axes)
    k = (w * invstd).reshape(s)
    if training:
        gx = k / m * (m * gy - gb.reshape(s) - xh * gw.reshape(s))
        mx = np.abs(k) / m * (m * np.abs(gy) + mb.reshape(s) + np.abs(xh) * mw.reshape(s))
    else:
        gx = k * gy
        mx = np.abs(gx)
    return pre, gy, (gx, mx), (gw, mw), (gb, mb)


def close(got, ref_mag, what, rtol=1e-4, mtol=1e-5):
    """got within rtol |ref| + mtol mag of ref ((ref, mag) of oracle); NaNs in the same
    places."""
    ref, mag = ref_mag
    got = np.asarray(got, np.float64)
    assert got.shape == ref.shape, what
    assert np.array_equal(np.isnan(got), np.isnan(ref)), (what, np.isnan(got).sum(),
                                                          np.isnan(ref).sum())
    ok = ~np.isnan(ref)
    err = np.abs(got[ok] - ref[ok])
    bound = rtol * np.abs(ref[ok]) + mtol * mag[ok] + 1e-30
    assert np.all(err <= bound), (what, float(np.max(err - bound)), float(np.max(err)))


def check_oracle(got, x, w, b, g, z, training, rm=None, rv=None, extra=None, names="xwb",
                 rtol=1e-4, mtol=1e-5):
    """got: the gradients named by ``names`` (x, w, b) against the oracle, relu's mask where
    the forward's output z is not <= 0 (NaN passes, as relu_grad); the mask checked against
    the float64 pre-activation where that is clearly away from 0. Returns the oracle."""
    z = np.asarray(z, np.float64)
    mask = ~(z <= 0)
    ref = oracle(x, w, b, g, mask, training, rm, rv, extra=extra)
    pre = ref[0]
    far = np.abs(pre) > 1e-3 * (1 + np.abs(np.nan_to_num(pre)).max())
    assert np.array_equal(mask[far], pre[far] > 0), "the forward's relu mask"
    parts = dict(zip("xwb", ref[2:]))
    for name, arr in zip(names, got):
        close(arr, parts[name], name, rtol, mtol)
    return ref


def f32(a):
    return np.asarray(a, np.float32)


def make_bn(cls, c, dtype=F32, affine=True):
    """A batch norm module with random (away from 1 and 0) weight and bias."""
    bn = cls(c, affine=affine)
    if affine:
        with clgrad.no_grad():
            bn.weight.copy_(clgrad.tensor(f32(RNG.uniform(0.5, 2.0, c) *
                                              RNG.choice([-1.0, 1.0], c))))
            bn.bias.copy_(clgrad.tensor(f32(RNG.standard_normal(c) * 0.5)))
    return bn.to(dtype) if dtype is not F32 else bn


def set_running(bn, c):
    with clgrad.no_grad():
        bn.running_mean.copy_(clgrad.tensor(f32(RNG.standard_normal(c) * 0.3)))
        bn.running_var.copy_(clgrad.tensor(f32(RNG.uniform(0.5, 2.0, c))))


def bn_relu_case(bn, x_np, g_np, forward=None, dtype=F32):
    """The case of ``forward(bn, x)`` (default F.relu(bn(x))) backward with g: (launches,
    [x.grad, weight.grad, bias.grad, forward's output])."""
    forward = forward or (lambda bn, x: F.relu(bn(x)))

    def case():
        x = clgrad.tensor(x_np, dtype=dtype, requires_grad=True)
        bn.weight.grad = bn.bias.grad = None
        z = forward(bn, x)
        g = clgrad.tensor(g_np, dtype=dtype)
        _, n = launches(lambda: z.backward(g))
        return n, [np_of(x.grad), np_of(bn.weight.grad), np_of(bn.bias.grad), np_of(z)]
    return case


def params_of(bn):
    return np_of(bn.weight), np_of(bn.bias)


# -- 1. training ------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, shape", [(nn.BatchNorm2d, (4, 5, 6, 6)),
                                        (nn.BatchNorm2d, (32, 6, 24, 24)),
                                        (nn.BatchNorm1d, (8, 5)), (nn.BatchNorm1d, (8, 5, 7))])
def test_training_absorbed_equal_and_against_oracle(cls, shape):
    c = shape[1]
    bn = make_bn(cls, c)
    x, g = f32(RNG.standard_normal(shape) * 1.5 + 0.3), f32(RNG.standard_normal(shape))
    (gx, gw, gb, z), n_on, n_off = both(bn_relu_case(bn, x, g))
    assert n_on == n_off - 1
    assert 0 < (z > 0).mean() < 1  # relu cuts some, passes some
    w, b = params_of(bn)
    check_oracle((gx, gw, gb), x, w, b, g, z, True)


@pytest.mark.parametrize("split", [None, 3])
@pytest.mark.parametrize("training", [True, False])
def test_strided_input_and_split_kernels(monkeypatch, split, training):
    """A non-contiguous input (channels last, as a permuted view) and, with BN_SPLIT_FORCE,
    the split kernels (partial sums then the rest: two launches absorbed, three not)."""
    monkeypatch.setattr(norm, "BN_SPLIT_FORCE", split)
    bn = make_bn(nn.BatchNorm2d, 3)
    set_running(bn, 3)
    bn.train(training)
    x_nhwc = f32(RNG.standard_normal((4, 5, 7, 3)))
    g = f32(RNG.standard_normal((4, 3, 5, 7)))

    def fwd(bn, x):  # x: the NHWC leaf; the batch norm reads its NCHW view
        return F.relu(bn(x.permute(0, 3, 1, 2)))

    def case():
        xt = clgrad.tensor(x_nhwc, requires_grad=True)
        bn.weight.grad = bn.bias.grad = None
        z = fwd(bn, xt)
        _, n = launches(lambda: z.backward(clgrad.tensor(g)))
        return n, [np_of(xt.grad).transpose(0, 3, 1, 2), np_of(bn.weight.grad),
                   np_of(bn.bias.grad), np_of(z)]
    (gx, gw, gb, z), n_on, n_off = both(case)
    assert n_on == n_off - 1
    w, b = params_of(bn)
    check_oracle((gx, gw, gb), x_nhwc.transpose(0, 3, 1, 2), w, b, g, z, training,
                 np_of(bn.running_mean), np_of(bn.running_var))


# -- 2. eval ----------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, shape", [(nn.BatchNorm2d, (4, 5, 6, 6)), (nn.BatchNorm1d, (8, 5)),
                                        (nn.BatchNorm1d, (8, 5, 7))])
def test_eval_running_statistics(cls, shape):
    c = shape[1]
    bn = make_bn(cls, c)
    set_running(bn, c)
    bn.eval()
    rm, rv = np_of(bn.running_mean), np_of(bn.running_var)
    x, g = f32(RNG.standard_normal(shape)), f32(RNG.standard_normal(shape))
    (gx, gw, gb, z), n_on, n_off = both(bn_relu_case(bn, x, g))
    assert n_on == n_off - 1
    assert np.array_equal(np_of(bn.running_mean), rm)  # eval: not updated
    w, b = params_of(bn)
    check_oracle((gx, gw, gb), x, w, b, g, z, False, rm, rv)


# -- near zero: the fused kernel's mask and relu's, where one rounding decides ----------------
def _grid_around(root, n):
    """n consecutive float32 values centred on float32(root)."""
    r = np.float32(root)
    k = (np.arange(n) - n // 2).astype(np.float32)
    return (r + k * np.spacing(np.abs(r) if r != 0 else np.float32(1))).astype(np.float32)


@pytest.mark.parametrize("split", [None, 3])
@pytest.mark.parametrize("training", [True, False])
def test_near_zero_pre_activations(monkeypatch, split, training):
    monkeypatch.setattr(norm, "BN_SPLIT_FORCE", split)
    c, n_bulk, n_grid = 3, 1500, 256
    w = f32(RNG.uniform(0.5, 3.0, c) * np.array([1.0, -1.0, 1.0]))
    b = f32(RNG.uniform(0.3, 1.5, c) * np.array([1.0, 1.0, -1.0]))
    rm, rv = f32(RNG.standard_normal(c)), f32(RNG.uniform(0.5, 2.0, c))
    cols = []
    for j in range(c):
        if training:  # the grid moves the batch's statistics: iterate to the fixed point
            bulk = f32(RNG.standard_normal(n_bulk))
            root = 0.0
            for _ in range(60):
                v = np.concatenate([bulk, _grid_around(root, n_grid)]).astype(np.float64)
                root = v.mean() - b[j] * np.sqrt(v.var() + EPS) / w[j]
            cols.append(np.concatenate([bulk, _grid_around(root, n_grid)]))
        else:
            root = rm[j] - b[j] * np.sqrt(np.float64(rv[j]) + EPS) / w[j]
            cols.append(_grid_around(root, n_grid))
    x = f32(np.stack(cols, 1))
    g = f32(RNG.standard_normal(x.shape))

    def case():
        xt = clgrad.tensor(x, requires_grad=True)
        wt, bt = clgrad.tensor(w, requires_grad=True), clgrad.tensor(b, requires_grad=True)
        y = F.batch_norm(xt, clgrad.tensor(rm), clgrad.tensor(rv), wt, bt, training, 0.1, EPS)
        z = F.relu(y)
        _, n = launches(lambda: z.backward(clgrad.tensor(g)))
        return n, [np_of(xt.grad), np_of(wt.grad), np_of(bt.grad), np_of(y), np_of(z)]
    (gx, gw, gb, y, z), n_on, n_off = both(case)
    assert n_on == n_off - 1
    grid = y[-n_grid:]
    for j in range(c):  # the grid straddles 0 in float32's resolution: both masks decided
        assert 0 < (grid[:, j] > 0).sum() < n_grid, j
        assert np.abs(grid[:, j]).min() < 1e-5, (j, np.abs(grid[:, j]).min())
    check_oracle((gx, gw, gb), x, w, b, g, z, training, rm, rv)


# -- 3. the ways of writing it ----------------------------------------------------------------
class _Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bn = make_bn(nn.BatchNorm2d, c)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.bn(x)
        return self.relu(y)


_SPELLINGS = {
    "F.relu(inplace)": lambda bn, x: F.relu(bn(x), inplace=True),
    "F.relu_": lambda bn, x: F.relu_(bn(x)),
    "clgrad.relu": lambda bn, x: clgrad.relu(bn(x)),
    "Tensor.relu": lambda bn, x: bn(x).relu(),
    "Tensor.relu_": lambda bn, x: bn(x).relu_(),
    "nn.ReLU": lambda bn, x: nn.ReLU()(bn(x)),
}


@pytest.mark.parametrize("spelling", list(_SPELLINGS))
def test_spellings(spelling):
    bn = make_bn(nn.BatchNorm2d, 4)
    x, g = f32(RNG.standard_normal((3, 4, 5, 5))), f32(RNG.standard_normal((3, 4, 5, 5)))
    (gx, gw, gb, z), n_on, n_off = both(bn_relu_case(bn, x, g, _SPELLINGS[spelling]))
    assert n_on == n_off - 1
    w, b = params_of(bn)
    check_oracle((gx, gw, gb), x, w, b, g, z, True)


@pytest.mark.parametrize("training", [True, False])
def test_module_with_inplace_relu(training):
    block = _Block(4)
    set_running(block.bn, 4)
    block.train(training)
    rm, rv = np_of(block.bn.running_mean), np_of(block.bn.running_var)
    x, g = f32(RNG.standard_normal((3, 4, 5, 5))), f32(RNG.standard_normal((3, 4, 5, 5)))
    (gx, gw, gb, z), n_on, n_off = both(bn_relu_case(block.bn, x, g,
                                                     lambda bn, x: block(x)))
    assert n_on == n_off - 1
    w, b = params_of(block.bn)
    check_oracle((gx, gw, gb), x, w, b, g, z, training, rm, rv)


def test_functional_without_affine_and_without_bias():
    x, g = f32(RNG.standard_normal((4, 3, 6))), f32(RNG.standard_normal((4, 3, 6)))
    w = f32(RNG.uniform(0.5, 2.0, 3))

    def case(with_weight):
        def run():
            xt = clgrad.tensor(x, requires_grad=True)
            wt = clgrad.tensor(w, requires_grad=True) if with_weight else None
            z = F.relu(F.batch_norm(xt, None, None, wt, None, True))
            _, n = launches(lambda: z.backward(clgrad.tensor(g)))
            return n, [np_of(xt.grad)] + ([np_of(wt.grad)] if with_weight else []) + [np_of(z)]
        return run
    for with_weight in (False, True):
        got, n_on, n_off = both(case(with_weight))
        assert n_on == n_off - 1
        check_oracle(got[:-1], x, w if with_weight else None, None, g, got[-1], True,
                     names="xw")


def test_input_without_grad():
    """The first layer's batch norm: only the parameters' gradients."""
    bn = make_bn(nn.BatchNorm2d, 3)
    x, g = f32(RNG.standard_normal((4, 3, 5, 5))), f32(RNG.standard_normal((4, 3, 5, 5)))

    def case():
        bn.weight.grad = bn.bias.grad = None
        z = F.relu(bn(clgrad.tensor(x)))
        _, n = launches(lambda: z.backward(clgrad.tensor(g)))
        return n, [np_of(bn.weight.grad), np_of(bn.bias.grad), np_of(z)]
    (gw, gb, z), n_on, n_off = both(case)
    assert n_on == n_off - 1
    w, b = params_of(bn)
    check_oracle((gw, gb), x, w, b, g, z, True, names="wb")


def test_hooks_and_retain_grad_on_relu_output_keep_it():
    """A hook on relu's output (doubling its gradient) and retain_grad there run before the
    absorbed pair: still absorbed, the hook's gradient used."""
    bn = make_bn(nn.BatchNorm2d, 3)
    x, g = f32(RNG.standard_normal((4, 3, 5, 5))), f32(RNG.standard_normal((4, 3, 5, 5)))

    def fwd(bn, x):
        z = F.relu(bn(x))
        z.register_hook(lambda t: t * 2)
        z.retain_grad()
        fwd.z = z
        return z

    case = bn_relu_case(bn, x, g, fwd)

    def with_zgrad():
        n, got = case()
        return n, got + [np_of(fwd.z.grad)]
    (gx, gw, gb, z, zgrad), n_on, n_off = both(with_zgrad)
    assert n_on == n_off - 1
    assert np.array_equal(zgrad, 2 * g)  # retain_grad's after the hooks (PyTorch's order)
    w, b = params_of(bn)
    check_oracle((gx, gw, gb), x, w, b, 2 * g, z, True)


def test_autograd_grad_of_leaves_only():
    bn = make_bn(nn.BatchNorm2d, 3)
    x, g = f32(RNG.standard_normal((4, 3, 5, 5))), f32(RNG.standard_normal((4, 3, 5, 5)))

    def case():
        xt = clgrad.tensor(x, requires_grad=True)
        z = F.relu(bn(xt))
        got, n = launches(lambda: clgrad.autograd.grad(z, [xt, bn.weight, bn.bias],
                                                       clgrad.tensor(g)))
        assert xt.grad is None and bn.weight.grad is None
        return n, [np_of(t) for t in got] + [np_of(z)]
    (gx, gw, gb, z), n_on, n_off = both(case)
    assert n_on == n_off - 1
    w, b = params_of(bn)
    check_oracle((gx, gw, gb), x, w, b, g, z, True)


# -- 4. where it must not apply ---------------------------------------------------------------
def _setup(shape=(4, 3, 5, 5), c=3):
    bn = make_bn(nn.BatchNorm2d, c)
    return bn, f32(RNG.standard_normal(shape)), f32(RNG.standard_normal(shape))


def test_second_consumer_of_the_batch_norm_output():
    bn, x, g = _setup()
    h = f32(RNG.standard_normal(x.shape))

    def case():
        xt = clgrad.tensor(x, requires_grad=True)
        bn.weight.grad = bn.bias.grad = None
        y = bn(xt)
        z = F.relu(y)
        loss = (z * clgrad.tensor(g)).sum() + (y * clgrad.tensor(h)).sum()
        _, n = launches(loss.backward)
        return n, [np_of(xt.grad), np_of(bn.weight.grad), np_of(bn.bias.grad), np_of(z)]
    (gx, gw, gb, z), n_on, n_off = both(case)
    assert n_on == n_off
    w, b = params_of(bn)
    check_oracle((gx, gw, gb), x, w, b, g, z, True, extra=h)


def test_two_relus_of_one_batch_norm_output():
    """The first relu's Node follows the batch norm's; the second one's gradient reaches the
    batch norm first."""
    bn, x, g = _setup()
    h = f32(RNG.standard_normal(x.shape))

    def case():
        xt = clgrad.tensor(x, requires_grad=True)
        bn.weight.grad = bn.bias.grad = None
        y = bn(xt)
        z1, z2 = F.relu(y), F.relu(y)
        loss = (z1 * clgrad.tensor(g)).sum() + (z2 * clgrad.tensor(h)).sum()
        _, n = launches(loss.backward)
        return n, [np_of(xt.grad), np_of(bn.weight.grad), np_of(bn.bias.grad), np_of(z1)]
    (gx, gw, gb, z), n_on, n_off = both(case)
    assert n_on == n_off
    w, b = params_of(bn)
    check_oracle((gx, gw, gb), x, w, b, g + h, z, True)


def test_batch_norm_output_also_a_root():
    """backward([z, y], [g, h]): the batch norm's own root gradient is there first."""
    bn, x, g = _setup()
    h = f32(RNG.standard_normal(x.shape))

    def case():
        xt = clgrad.tensor(x, requires_grad=True)
        bn.weight.grad = bn.bias.grad = None
        y = bn(xt)
        z = F.relu(y)
        _, n = launches(lambda: clgrad.autograd.backward(
            [z, y], [clgrad.tensor(g), clgrad.tensor(h)]))
        return n, [np_of(xt.grad), np_of(bn.weight.grad), np_of(bn.bias.grad), np_of(z)]
    (gx, gw, gb, z), n_on, n_off = both(case)
    assert n_on == n_off
    w, b = params_of(bn)
    check_oracle((gx, gw, gb), x, w, b, g, z, True, extra=h)


def test_retain_grad_on_batch_norm_output():
    bn, x, g = _setup()

    def case():
        xt = clgrad.tensor(x, requires_grad=True)
        bn.weight.grad = bn.bias.grad = None
        y = bn(xt)
        y.retain_grad()
        z = F.relu(y)
        _, n = launches(lambda: z.backward(clgrad.tensor(g)))
        return n, [np_of(xt.grad), np_of(bn.weight.grad), np_of(bn.bias.grad), np_of(z),
                   np_of(y.grad)]
    (gx, gw, gb, z, ygrad), n_on, n_off = both(case)
    assert n_on == n_off
    w, b = params_of(bn)
    ref = check_oracle((gx, gw, gb), x, w, b, g, z, True)
    assert np.array_equal(ygrad, ref[1].astype(np.float32))  # relu_grad: g or 0, exactly


def test_hook_on_batch_norm_output():
    bn, x, g = _setup()
    seen = []

    def case():
        xt = clgrad.tensor(x, requires_grad=True)
        bn.weight.grad = bn.bias.grad = None
        y = bn(xt)
        y.register_hook(lambda t: seen.append(np_of(t)))
        z = F.relu(y)
        _, n = launches(lambda: z.backward(clgrad.tensor(g)))
        return n, [np_of(xt.grad), np_of(bn.weight.grad), np_of(bn.bias.grad), np_of(z)]
    (gx, gw, gb, z), n_on, n_off = both(case)
    assert n_on == n_off
    assert len(seen) == 2 and np.array_equal(seen[0], seen[1])  # once per run
    w, b = params_of(bn)
    ref = check_oracle((gx, gw, gb), x, w, b, g, z, True)
    assert np.array_equal(seen[0], ref[1].astype(np.float32))


def test_hook_before_inplace_relu_sees_the_batch_norm_output():
    """A hook registered on y before F.relu_(y) lives on the batch norm's Node (PyTorch: it
    sees the old value's gradient): not absorbed; retain_grad before the in-place relu moves
    to relu's Node (y.grad: the new value's gradient) and does not stop it."""
    bn, x, g = _setup()
    seen = []

    def case_hook():
        xt = clgrad.tensor(x, requires_grad=True)
        bn.weight.grad = bn.bias.grad = None
        y = bn(xt)
        y.register_hook(lambda t: seen.append(np_of(t)))
        F.relu_(y)
        _, n = launches(lambda: y.backward(clgrad.tensor(g)))
        return n, [np_of(xt.grad), np_of(bn.weight.grad), np_of(bn.bias.grad), np_of(y)]
    (gx, gw, gb, z), n_on, n_off = both(case_hook)
    assert n_on == n_off
    w, b = params_of(bn)
    ref = check_oracle((gx, gw, gb), x, w, b, g, z, True)
    assert len(seen) == 2 and np.array_equal(seen[0], ref[1].astype(np.float32))

    def case_retain():
        xt = clgrad.tensor(x, requires_grad=True)
        bn.weight.grad = bn.bias.grad = None
        y = bn(xt)
        y.retain_grad()
        F.relu_(y)
        _, n = launches(lambda: y.backward(clgrad.tensor(g)))
        return n, [np_of(xt.grad), np_of(bn.weight.grad), np_of(bn.bias.grad), np_of(y),
                   np_of(y.grad)]
    (gx, gw, gb, z, ygrad), n_on, n_off = both(case_retain)
    assert n_on == n_off - 1
    assert np.array_equal(ygrad, g)
    check_oracle((gx, gw, gb), x, w, b, g, z, True)


def test_autograd_grad_with_the_batch_norm_output_as_input():
    bn, x, g = _setup()

    def case():
        xt = clgrad.tensor(x, requires_grad=True)
        y = bn(xt)
        z = F.relu(y)
        got, n = launches(lambda: clgrad.autograd.grad(z, [y, xt], clgrad.tensor(g)))
        return n, [np_of(t) for t in got] + [np_of(z)]
    (gy, gx, z), n_on, n_off = both(case)
    assert n_on == n_off
    w, b = params_of(bn)
    ref = check_oracle((gx,), x, w, b, g, z, True, names="x")
    assert np.array_equal(gy, ref[1].astype(np.float32))


def test_saved_tensors_hooks():
    bn, x, g = _setup()
    calls = {"pack": 0, "unpack": 0}

    def pack(t):
        calls["pack"] += 1
        return t

    def unpack(t):
        calls["unpack"] += 1
        return t

    def fwd(bn, x):
        with graph.saved_tensors_hooks(pack, unpack):
            return F.relu(bn(x))
    (gx, gw, gb, z), n_on, n_off = both(bn_relu_case(bn, x, g, fwd))
    assert n_on == n_off
    assert calls["pack"] > 0 and calls["unpack"] > 0
    assert calls["pack"] % 2 == 0 and calls["unpack"] % 2 == 0  # the same in both runs
    w, b = params_of(bn)
    check_oracle((gx, gw, gb), x, w, b, g, z, True)


@pytest.mark.parametrize("training", [True, False])
def test_create_graph(training):
    bn, x, g = _setup()
    set_running(bn, 3)
    bn.train(training)
    rm, rv = np_of(bn.running_mean), np_of(bn.running_var)
    v = f32(RNG.standard_normal(x.shape))

    def case():
        xt = clgrad.tensor(x, requires_grad=True)
        bn.weight.grad = bn.bias.grad = None
        z = F.relu(bn(xt))
        first, n = launches(lambda: clgrad.autograd.grad(
            z, [xt, bn.weight, bn.bias], clgrad.tensor(g), create_graph=True))
        assert all(t.requires_grad for t in first[:2])
        (first[0] * clgrad.tensor(v)).sum().backward()
        got = [np_of(t) for t in first] + [np_of(z), np_of(xt.grad) if xt.grad is not None
                                           else np.zeros(x.shape, np.float32)]
        got.append(np_of(bn.weight.grad))
        return n, got
    (gx, gw, gb, z, ggx, ggw), n_on, n_off = both(case)
    assert n_on == n_off
    w, b = params_of(bn)
    check_oracle((gx, gw, gb), x, w, b, g, z, training, rm, rv)
    if not training:  # eval: gx = w invstd relu'(pre) g, so d(gx . v)/dw = invstd sum(mask g v)
        axes = (0, 2, 3)
        ref = (np.where(z > 0, g, 0.0) * v).sum(axes) / np.sqrt(rv.astype(np.float64) + EPS)
        close(ggw, (ref, np.abs(ref) + 1e-3), "second derivative, weight")
        assert not ggx.any()
    else:
        assert np.abs(ggx).max() > 0 and np.isfinite(ggx).all()


def test_bias_changed_in_place_after_forward_falls_back():
    """relu's mask is the forward's output; the fused kernel would recompute it with the new
    bias: it must not absorb then."""
    bn, x, g = _setup()
    b0 = np_of(bn.bias)

    def fwd(bn, x):
        with clgrad.no_grad():
            bn.bias.copy_(clgrad.tensor(b0))
        z = F.relu(bn(x))
        with clgrad.no_grad():
            bn.bias.add_(1.0)
        return z
    (gx, gw, gb, z), n_on, n_off = both(bn_relu_case(bn, x, g, fwd))
    assert n_on == n_off
    w = np_of(bn.weight)
    check_oracle((gx, gw, gb), x, w, b0, g, z, True)  # the forward's (old) bias


def test_bias_storage_replaced_after_forward_falls_back():
    """bias.data = t (a new storage, whose version may equal the old one's) after the forward:
    relu's mask is still the forward's output, so the gradients must be the unabsorbed
    ones."""
    bn, x, g = _setup()
    b0 = np_of(bn.bias)

    def fwd(bn, x):
        bn.bias.data = clgrad.tensor(b0)
        z = F.relu(bn(x))
        bn.bias.data = clgrad.tensor(b0 + 1.0)
        return z
    (gx, gw, gb, z), n_on, n_off = both(bn_relu_case(bn, x, g, fwd))
    w = np_of(bn.weight)
    check_oracle((gx, gw, gb), x, w, b0, g, z, True)


# -- 5. saved tensors modified ----------------------------------------------------------------
@pytest.mark.parametrize("what", ["weight", "input", "relu_output"])
def test_saved_tensor_modified_raises_in_both_modes(what):
    bn, x, g = _setup()
    w0 = np_of(bn.weight)
    for on in (True, False):
        with absorbing(on):
            xt = clgrad.tensor(x, requires_grad=True)
            xin = xt * 1.0  # a non-leaf: modifiable in place
            if what == "relu_output":
                z = F.relu_(bn(xin))
            else:
                z = F.relu(bn(xin))
            with clgrad.no_grad():
                {"weight": bn.weight, "input": xin, "relu_output": z}[what].mul_(2.0)
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                z.backward(clgrad.tensor(g))
            with clgrad.no_grad():
                bn.weight.copy_(clgrad.tensor(w0))


def test_second_backward_through_freed_graph_raises_in_both_modes():
    bn, x, g = _setup()
    for on in (True, False):
        with absorbing(on):
            xt = clgrad.tensor(x, requires_grad=True)
            y = bn(xt)
            z = F.relu(y)
            z.backward(clgrad.tensor(g))
            with pytest.raises(RuntimeError, match="retain_graph"):
                z.backward(clgrad.tensor(g))
            with pytest.raises(RuntimeError, match="retain_graph"):
                y.backward(clgrad.tensor(g))


# -- 6. retain_graph --------------------------------------------------------------------------
def test_retain_graph_twice_accumulates():
    bn, x, g = _setup()

    def case():
        xt = clgrad.tensor(x, requires_grad=True)
        bn.weight.grad = bn.bias.grad = None
        z = F.relu(bn(xt))
        _, n1 = launches(lambda: z.backward(clgrad.tensor(g), retain_graph=True))
        once = [np_of(xt.grad), np_of(bn.weight.grad), np_of(bn.bias.grad)]
        _, n2 = launches(lambda: z.backward(clgrad.tensor(g)))
        twice = [np_of(xt.grad), np_of(bn.weight.grad), np_of(bn.bias.grad)]
        for a, b in zip(once, twice):
            assert np.array_equal(b, 2 * a)
        return (n1, n2), once + twice + [np_of(z)]
    got, n_on, n_off = both(case)
    assert n_on[0] == n_off[0] - 1 and n_on[1] == n_off[1] - 1  # each backward
    w, b = params_of(bn)
    check_oracle(got[:3], x, w, b, g, got[-1], True)
    check_oracle(got[3:6], x, w, b, 2 * g, got[-1], True)


def test_retain_graph_bias_stepped_between_backwards():
    """backward(retain_graph=True), an optimizer-like in-place step of the bias, backward
    again: the second one falls back (relu's mask is the forward's) and gives the first's
    values."""
    bn, x, g = _setup()
    b0 = np_of(bn.bias)

    def case():
        with clgrad.no_grad():
            bn.bias.copy_(clgrad.tensor(b0))
        xt = clgrad.tensor(x, requires_grad=True)
        bn.weight.grad = bn.bias.grad = None
        z = F.relu(bn(xt))
        _, n1 = launches(lambda: z.backward(clgrad.tensor(g), retain_graph=True))
        once = [np_of(xt.grad), np_of(bn.weight.grad), np_of(bn.bias.grad)]
        with clgrad.no_grad():
            bn.bias.sub_(0.7)
        _, n2 = launches(lambda: z.backward(clgrad.tensor(g)))
        for t, a in zip((xt, bn.weight, bn.bias), once):
            assert np.array_equal(np_of(t.grad), 2 * a)
        return (n1, n2), once + [np_of(z)]
    (gx, gw, gb, z), n_on, n_off = both(case)
    assert n_on[0] == n_off[0] - 1 and n_on[1] == n_off[1]
    check_oracle((gx, gw, gb), x, bn.weight.detach().numpy(), b0, g, z, True)


def test_eval_running_statistics_changed_before_backward():
    """eval's backward (and the fused mask) use the statistics saved by the forward, not the
    running ones a later training forward updated in place."""
    bn, x, g = _setup()
    set_running(bn, 3)
    rm, rv = np_of(bn.running_mean), np_of(bn.running_var)

    def fwd(bn, x):
        with clgrad.no_grad():
            bn.running_mean.copy_(clgrad.tensor(rm))
            bn.running_var.copy_(clgrad.tensor(rv))
        bn.eval()
        z = F.relu(bn(x))
        bn.train()
        bn(clgrad.tensor(x.detach().numpy() * 3 + 1))  # updates the running statistics
        assert not np.array_equal(np_of(bn.running_mean), rm)
        return z
    (gx, gw, gb, z), n_on, n_off = both(bn_relu_case(bn, x, g, fwd))
    assert n_on == n_off - 1
    w, b = params_of(bn)
    check_oracle((gx, gw, gb), x, w, b, g, z, False, rm, rv)


@pytest.mark.parametrize("reentrant", [True, False])
def test_under_checkpoint(reentrant):
    from clgrad.utils.checkpoint import checkpoint
    bn, x, g = _setup()
    (gx, gw, gb, z), n_on, n_off = both(bn_relu_case(
        bn, x, g, lambda bn, x: checkpoint(lambda t: F.relu(bn(t)), x,
                                           use_reentrant=reentrant)))
    assert n_on <= n_off
    w, b = params_of(bn)
    check_oracle((gx, gw, gb), x, w, b, g, z, True)


# -- 7. NaN -----------------------------------------------------------------------------------
@pytest.mark.parametrize("training", [True, False])
def test_nan_input(training):
    bn, x, g = _setup()
    set_running(bn, 3)
    bn.train(training)
    rm, rv = np_of(bn.running_mean), np_of(bn.running_var)
    x = x.copy()
    x[1, 1, 2, 3] = np.nan
    (gx, gw, gb, z), n_on, n_off = both(bn_relu_case(bn, x, g))
    assert n_on == n_off - 1
    assert np.isnan(gw[1]) and not np.isnan(gb).any()
    w, b = params_of(bn)
    if training:  # the channel's statistics are NaN
        assert np.isnan(gx[:, 1]).all() and np.isfinite(gx[:, [0, 2]]).all()
    else:  # only that element's pre-activation, whose gradient passes (relu_grad at NaN);
        # its input gradient is left out here: test_eval_input_gradient_at_a_nan_input
        gx = gx.copy()
        gx[1, 1, 2, 3] = np.nan
        x = x.copy()
        x[1, 1, 2, 3] = 0.0
        z = z.copy()
        z[1, 1, 2, 3] = 1.0  # (the mask passes there, as at NaN)
        gw = gw.copy()
        gw[1] = 0.0
        ref = oracle(x, w, b, g, ~(z <= 0), False, rm, rv)
        ref[2][0][1, 1, 2, 3] = np.nan
        close(gx, ref[2], "x")
        close(gb, ref[4], "b")
        return
    check_oracle((gx, gw, gb), x, w, b, g, z, training, rm, rv)


@pytest.mark.parametrize("absorb", [True, False])
def test_eval_input_gradient_at_a_nan_input(absorb):
    """eval: the input gradient is weight * invstd * (relu'd) grad, whatever x is
    (PyTorch's native_batch_norm_backward in eval)."""
    bn, x, g = _setup()
    set_running(bn, 3)
    bn.eval()
    x = x.copy()
    x[1, 1, 2, 3] = np.nan
    with absorbing(absorb):
        _, (gx, _, _, z) = bn_relu_case(bn, x, g)()
    k = np_of(bn.weight)[1] / np.sqrt(np_of(bn.running_var)[1].astype(np.float64) + EPS)
    assert np.isnan(z[1, 1, 2, 3])
    np.testing.assert_allclose(gx[1, 1, 2, 3], k * g[1, 1, 2, 3], rtol=1e-5)


# -- 8. float64 -------------------------------------------------------------------------------
@pytest.mark.parametrize("training", [True, False])
def test_float64(training):
    if not clgrad.default_device().fp64:
        pytest.skip("the default device has no float64")
    bn = make_bn(nn.BatchNorm2d, 4, F64)
    set_running(bn, 4)
    bn.train(training)
    rm, rv = np_of(bn.running_mean), np_of(bn.running_var)
    x, g = RNG.standard_normal((3, 4, 5, 6)), RNG.standard_normal((3, 4, 5, 6))
    (gx, gw, gb, z), n_on, n_off = both(bn_relu_case(bn, x, g, dtype=F64))
    assert n_on == n_off - 1
    assert gx.dtype == np.float64 and gw.dtype == np.float64
    w, b = params_of(bn)
    check_oracle((gx, gw, gb), x, w, b, g, z, training, rm, rv, rtol=1e-10, mtol=1e-12)


# -- 9. float16 (mixed: float16 input, float32 parameters) ----------------------------------
def _kind():
    return "cuda" if clgrad.empty(0)._storage.device.kind == "gpu" else "cpu"


def test_mixed_float16_under_autocast(fp16):
    conv = nn.Conv2d(3, 4, 3, padding=1)
    bn = make_bn(nn.BatchNorm2d, 4)
    x = f32(RNG.standard_normal((2, 3, 6, 6)))
    g = RNG.standard_normal((2, 4, 6, 6)).astype(np.float16)

    def case():
        xt = clgrad.tensor(x, requires_grad=True)
        for p in (conv.weight, conv.bias, bn.weight, bn.bias):
            p.grad = None
        with clgrad.autocast(_kind(), dtype=F16):
            h = conv(xt)
            z = F.relu(bn(h))
        assert h.dtype is F16 and z.dtype is F16 and bn.weight.dtype is F32
        _, n = launches(lambda: z.backward(clgrad.tensor(g, dtype=F16)))
        return n, [np_of(xt.grad), np_of(conv.weight.grad), np_of(bn.weight.grad),
                   np_of(bn.bias.grad), np_of(h), np_of(z)]
    (gx, gcw, gw, gb, h, z), n_on, n_off = both(case)
    assert n_on == n_off - 1
    assert gw.dtype == np.float32 and np.isfinite(gx).all()
    # the batch norm's parameter gradients against the oracle on the float16 input h (the
    # input gradient is float16: checked equal between the modes only)
    w, b = params_of(bn)
    check_oracle((gw, gb), h, w, b, g.astype(np.float64), z, True, names="wb", rtol=1e-3,
                 mtol=1e-3)


def test_float16_parameters(fp16):
    """bn.half(): computed on float32 copies of the parameters (the mixed case)."""
    bn = make_bn(nn.BatchNorm2d, 3, F16)
    x = RNG.standard_normal((4, 3, 5, 5)).astype(np.float16)
    g = RNG.standard_normal((4, 3, 5, 5)).astype(np.float16)
    (gx, gw, gb, z), n_on, n_off = both(bn_relu_case(bn, x, g, dtype=F16))
    assert n_on == n_off - 1
    assert gx.dtype == np.float16 and gw.dtype == np.float16
    w, b = params_of(bn)
    check_oracle((gw, gb), x, w, b, g, z, True, names="wb", rtol=2e-3, mtol=2e-3)


def test_mixed_float16_pre_activations_at_the_rounding_to_zero(fp16):
    """The mixed case's relu reads the output rounded to float16: a float32 pre-activation
    in (0, 2^-25] rounds to +0 (a tie at 2^-25: to even) and relu cuts it, one just above
    rounds to 2^-24 and passes. eval with mean 0 and shift = bias: at x = 0 the
    pre-activation is the bias exactly; x among float16's subnormals moves it by a few
    2^-25."""
    t = 2.0 ** -25
    up = float(np.nextafter(np.float32(t), np.float32(1)))
    down = float(np.nextafter(np.float32(t), np.float32(0)))
    bias = f32([0.0, t / 4, t / 2, down, t, up, 1.5 * t, 2 * t, 3 * t, -t / 2, -t, -2 * t,
                -up, 2.0 ** -24 + t])
    c = len(bias)
    sub = [0.0, 2.0 ** -24, -2.0 ** -24, 2.0 ** -23, -2.0 ** -23, 3 * 2.0 ** -24,
           -3 * 2.0 ** -24, 2.0 ** -22, -2.0 ** -22, 2.0 ** -14, -2.0 ** -14, 0.5, -0.5]
    x = np.tile(np.array(sub, np.float16)[:, None], (1, c))
    for w_val in (1.0, 0.75):
        w = f32(np.full(c, w_val))
        rm, rv = np.zeros(c, np.float32), f32(np.full(c, 1.0 - EPS))
        g = f32(RNG.standard_normal(x.shape) + 3.0)  # (nonzero: the mask shows)

        def case():
            xt = clgrad.tensor(x, dtype=F16, requires_grad=True)
            wt, bt = clgrad.tensor(w, requires_grad=True), clgrad.tensor(bias, requires_grad=True)
            y = F.batch_norm(xt, clgrad.tensor(rm), clgrad.tensor(rv), wt, bt, False, 0.1, EPS)
            z = F.relu(y)
            assert z.dtype is F16
            _, n = launches(lambda: z.backward(clgrad.tensor(g, dtype=F16)))
            return n, [np_of(xt.grad), np_of(wt.grad), np_of(bt.grad), np_of(z)]
        (gx, gw, gb, z), n_on, n_off = both(case)
        assert n_on == n_off - 1
        zero_row = z[0]  # x = 0: the bias rounded to float16, then relu
        want = np.array(bias, np.float64)
        want = np.where(want > t, 2.0 ** -24 * np.round(want / 2.0 ** -24), 0.0)
        assert np.array_equal(zero_row.astype(np.float64), np.maximum(want, 0)), zero_row
        mask = ~(z <= 0)
        g16 = g.astype(np.float16).astype(np.float64)
        assert mask[0].sum() == (np.array(bias) > t).sum()
        assert not gx[~mask].any() and np.all(gx[mask] != 0)  # relu's mask, exactly
        k = w / np.sqrt(rv.astype(np.float64) + EPS)
        close(gx, (k * np.where(mask, g16, 0), np.abs(k * g16)), "x", rtol=1e-3, mtol=0)
        gb_ref = np.where(mask, g16, 0).sum(0)
        close(gb, (gb_ref, np.abs(g16).sum(0)), "b")
# -- 10. training steps -----------------------------------------------------------------------
def test_two_layer_net_sgd_steps_identical():
    clgrad.manual_seed(5)
    net = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1, bias=False), nn.BatchNorm2d(6),
                        nn.Conv2d(6, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4))
    with clgrad.no_grad():
        for m in (net[1], net[3]):
            m.weight.copy_(clgrad.tensor(f32(RNG.uniform(0.5, 1.5, m.weight.shape[0]))))
            m.bias.copy_(clgrad.tensor(f32(RNG.standard_normal(m.bias.shape[0]) * 0.3)))
    init = {k: np_of(v) for k, v in net.state_dict().items()}
    xs = [f32(RNG.standard_normal((4, 3, 8, 8))) for _ in range(3)]
    t = f32(RNG.standard_normal((4, 4, 8, 8)))

    def forward(x):  # relu written apart (nn.Sequential would fuse BatchNorm2d + ReLU itself)
        h = F.relu(net[1](net[0](x)))
        return (F.relu(net[3](net[2](h))) * clgrad.tensor(t)).mean()

    def case():
        net.load_state_dict({k: clgrad.tensor(v) for k, v in init.items()})
        opt = clgrad.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        counts, losses = [], []
        for x in xs:
            opt.zero_grad()
            loss = forward(clgrad.tensor(x))
            losses.append(loss.item())
            _, n = launches(loss.backward)
            counts.append(n)
            opt.step()
        assert len(set(counts)) == 1
        return counts[0], [np_of(p) for p in net.parameters()] + [
            np_of(net[1].running_mean), np_of(net[3].running_var), np.array(losses)]
    got, n_on, n_off = both(case)
    assert n_on == n_off - 2  # two batch norm + relu pairs
    for p, (k, v) in zip(got, [(k, v) for k, v in init.items() if "running" not in k and
                               "num_batches" not in k]):
        assert not np.array_equal(p, v), k  # the steps moved every parameter


# -- profiler ---------------------------------------------------------------------------------
def test_profiler_records_both_backward_nodes_and_restores_absorb():
    """Under clgrad.profiler.profile each Node's backward is its own event, as PyTorch's: the
    absorption is off while recording (ReluBackward0 and the batch norm's Node both appear) and
    back on after."""
    from collections import Counter

    from clgrad.profiler import profile
    bn, x, g = _setup()
    xt = clgrad.tensor(x, requires_grad=True)
    z = F.relu(bn(xt))
    with profile() as prof:
        z.backward(clgrad.tensor(g))
    names = Counter(e.name for e in prof.events())
    assert names["autograd::engine::evaluate_function: ReluBackward0"] == 1
    bn_events = [n for n in names if n.startswith("autograd::engine::evaluate_function: ")
                 and "BatchNorm" in n]
    assert len(bn_events) == 1 and names[bn_events[0]] == 1, names
    assert graph.ABSORB is True
    with absorbing(False):
        ref = clgrad.tensor(x, requires_grad=True)
        F.relu(bn(ref)).backward(clgrad.tensor(g))
    np.testing.assert_array_equal(xt.grad.numpy(), ref.grad.numpy())


# -- the batch norm's output, its inputs or the gradient not as relu's mask assumes ---------------
def _zero_channel_1(module, inputs, out):
    with clgrad.no_grad():  # a pruning / ablation hook: a write autograd does not record
        out[:, 1] = 0


@pytest.mark.parametrize("edit", ["forward_hook", "data_add_", "detach_sub_then_relu_",
                                  "data_assigned"])
def test_output_written_outside_autograd_before_relu_is_not_absorbed(edit):
    """relu ran on the edited values, so its mask is theirs (PyTorch's, which saves relu's
    result): the batch norm's recomputed pre-activation would not be. Its version (or
    storage) differs from the one its Node recorded: not absorbed, and the gradients are the
    two Nodes' (channel 1 zeroed: no gradient through it at all)."""
    bn, x, g = _setup()

    def fwd(bn, x):
        if edit == "forward_hook":
            handle = bn.register_forward_hook(_zero_channel_1)
            try:
                return nn.ReLU()(bn(x))
            finally:
                handle.remove()
        y = bn(x)
        if edit == "data_add_":
            y.data[:, 1].mul_(0.0)
        elif edit == "data_assigned":
            v = np_of(y)
            v[:, 1] = 0
            y.data = clgrad.tensor(v)
        else:
            y.detach()[:, 1].mul_(0.0)
            return F.relu_(y)
        return F.relu(y)
    (gx, gw, gb, z), n_on, n_off = both(bn_relu_case(bn, x, g, fwd))
    assert n_on == n_off
    assert (z[:, 1] == 0).all()
    assert gb[1] == 0 and gw[1] == 0 and not gx[:, 1].any()


@pytest.mark.parametrize("which", ["weight", "input"])
def test_data_assigned_to_weight_or_input_after_forward_is_not_absorbed(which):
    """weight.data = / x.data = after the forward (a new storage at the same version, so the
    saved-tensor check passes): batch norm's backward reads the new values, as without the
    absorption, but relu's mask stays the forward's: not absorbed, the two Nodes' values."""
    x0 = f32(RNG.standard_normal((4, 3, 5, 5)))
    g0 = f32(RNG.standard_normal(x0.shape))
    w0, b0 = f32([0.5, -1.0, 2.0]), f32([0.1, 0.2, -0.3])

    def case():
        w = clgrad.tensor(w0, requires_grad=True)  # version 0, as the storage swapped in
        b = clgrad.tensor(b0, requires_grad=True)
        leaf = clgrad.tensor(x0, requires_grad=True)
        x = leaf * 1.0
        z = F.relu(F.batch_norm(x, None, None, w, b, training=True))
        if which == "weight":
            w.data = clgrad.tensor(-w0)
        else:
            x.data = clgrad.tensor(-x0)
        _, n = launches(lambda: z.backward(clgrad.tensor(g0)))
        return n, [np_of(leaf.grad), np_of(w.grad), np_of(b.grad)]
    _, n_on, n_off = both(case)
    assert n_on == n_off


@pytest.mark.parametrize("grad", ["sum", "mean_hw", "permuted"])
def test_gradient_not_dense_is_not_absorbed(grad):
    """relu_grad hands batch norm a fresh dense gradient; relu's own gradient may be a
    stride-0 one (sum, mean) or another layout, with which the kernel sums in another order
    (last bits): not absorbed, the two Nodes' values bit for bit."""
    bn, x, g = _setup((4, 3, 6, 6))

    def case():
        xt = clgrad.tensor(x, requires_grad=True)
        bn.weight.grad = bn.bias.grad = None
        z = F.relu(bn(xt))
        if grad == "sum":
            loss = z.sum()
        elif grad == "mean_hw":
            loss = (z.mean((2, 3)) * clgrad.tensor(g[:, :, 0, 0])).sum()
        else:
            loss = (z.permute(0, 2, 3, 1).contiguous() *
                    clgrad.tensor(np.ascontiguousarray(g.transpose(0, 2, 3, 1)))).sum()
        _, n = launches(lambda: loss.backward())
        return n, [np_of(xt.grad), np_of(bn.weight.grad), np_of(bn.bias.grad)]
    _, n_on, n_off = both(case)
    assert n_on == n_off


def test_batch_norm_output_freed_after_relu_and_still_absorbed():
    """The Node keeps only a weak reference to its output's storage (graph.absorbable): in
    F.relu(bn(x)) the batch norm's output is freed once relu has read it, as without the
    absorption (relu saves its own output), and the backward is still absorbed."""
    import weakref
    bn, x, g = _setup()
    for on in (True, False):
        with absorbing(on):
            xt = clgrad.tensor(x, requires_grad=True)
            bn.weight.grad = bn.bias.grad = None
            y = bn(xt)
            held = weakref.ref(y._storage)
            z = F.relu(y)
            del y
            assert held() is None
            _, n = launches(lambda: z.backward(clgrad.tensor(g)))
            if on:
                n_on, gx_on = n, np_of(xt.grad)
    assert n_on == n - 1
    np.testing.assert_array_equal(gx_on, np_of(xt.grad))
