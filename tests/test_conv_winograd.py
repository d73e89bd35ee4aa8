"""The Winograd convolution (clgrad/ops/conv/winograd.py, kernels/conv_winograd.cl) on whatever
device runs the suite: forward and input gradient of F(2x2, 3x3) and F(4x4, 3x3), weight and
bias gradients of F(3x3, 2x2) and F(3x3, 4x4), against the float64 NumPy reference of
test_conv (and PyTorch where installed), within the error bounds measured for the module doc;
every pass asserted to have run it; the problems it does not take give way to implicit;
'auto''s measurement includes it on the problems it takes; a fixed launch count a pass
whatever the group count."""
import json
from pathlib import Path

import numpy as np
import pytest

import clgrad
import clgrad.backends as backends
from clgrad.ops.conv import conv2d, conv_transpose2d, gpu as conv_gpu, winograd
from clgrad.runtime import launch_count
from test_conv import _close, _data, _run, ref_conv

TILES = ("winograd:2", "winograd:4")


@pytest.fixture(autouse=True)
def _restore():
    with backends.flags(conv_algorithm=backends.conv_algorithm):
        yield


def _rel(a, r) -> float:
    """max |a - r| / max |r|: the error measure of winograd.ERROR_BOUND."""
    return float(np.abs(a - r).max() / max(np.abs(r).max(), 1e-300))


def _check(got, ref, algo, bound, wbound):
    """Output and input gradient within ``bound`` (relative to their max), the weight and
    bias gradients within ``wbound``, and the algorithms that ran (every pass: algo)."""
    assert _rel(got[0], ref[0]) <= bound, ("output", _rel(got[0], ref[0]))
    assert _rel(got[1], ref[1]) <= bound, ("grad_input", _rel(got[1], ref[1]))
    assert _rel(got[2], ref[2]) <= wbound, ("grad_weight", _rel(got[2], ref[2]))
    if got[3] is not None:
        assert _rel(got[3], ref[3]) <= wbound, ("grad_bias", _rel(got[3], ref[3]))
    last = backends.last_conv_algorithms
    assert last["forward"] == last["grad_input"] == last["grad_weight"] == algo, last


def _bounds(algo):
    m = int(algo[-1])
    return winograd.ERROR_BOUND[m], winograd.WGRAD_ERROR_BOUND[m, 3]


CASES = [  # (N, C, H, W, O, kwargs, view kind, bias)
    (1, 3, 8, 8, 4, dict(padding=1), "narrow", True),          # even sides, tiles exact (m=4)
    (3, 4, 9, 11, 6, dict(padding=1), "contig", False),        # odd sides: clipped tiles
    (2, 4, 7, 10, 8, dict(padding=0, groups=2), "transpose", True),
    (1, 8, 12, 9, 8, dict(padding=2, groups=4), "step", False),
    (3, 8, 6, 5, 4, dict(padding=(2, 1), groups=2), "narrow", True),
    (2, 2, 5, 6, 3, dict(padding=3), "contig", True),  # input gradient: padding -1
    (1, 2, 3, 3, 2, dict(padding=0), "narrow", True),  # 1 x 1 output: less than one tile
    (3, 4, 4, 5, 2, dict(padding=0, groups=2), "step", True),  # 2 x 3: less than one F(4) tile
    (1, 4, 7, 7, 8, dict(padding=1, groups=4), "transpose", False),  # 7 x 7, groups 4
    (3, 6, 5, 9, 4, dict(padding=2, groups=2), "narrow", True),  # 5 x 9 (7 x 11 out)
]


@pytest.mark.parametrize("algo", TILES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[:5]}-{c[5]}-{c[6]}-bias{c[7]}")
def test_passes_vs_numpy(case, algo):
    n, c, h, w, o, kwargs, kind, bias = case
    backends.conv_algorithm = algo
    x, wt, b = _data(n, c, h, w, o, c // kwargs.get("groups", 1), 3, 3, bias=bias)
    got, ref = _run(x, wt, b, kind=kind, **kwargs)
    # these layers are smaller than the module doc's (fewer channels): its bounds hold
    _check(got, ref, algo, *_bounds(algo))


@pytest.mark.parametrize("algo", TILES)
def test_float64(algo):
    backends.conv_algorithm = algo
    x, wt, b = _data(3, 4, 9, 10, 6, 2, 3, 3, seed=3)
    got, ref = _run(x, wt, b, kind="transpose", dtype=clgrad.float64, padding=1, groups=2)
    _check(got, ref, algo, 1e-10, 1e-10)
    _close(got, ref, 1e-10)


@pytest.mark.parametrize("algo", TILES)
def test_resnet_layer_error_bound(algo):
    """The error of a ResNet-like layer (64 channels, 28 x 28, He-initialised weights, batch
    2, bias), as in the module doc; measured here (Intel's OpenCL CPU runtime): F(2x2) 4.0e-7
    forward, 3.1e-7 input gradient, 9.6e-7 weight gradient; F(4x4) 6.0e-6, 6.1e-6, 5.1e-6
    (the implicit GEMM: 8.7e-7, 9.9e-7, 2.0e-7; its GPU kernels 1.5e-6 weight gradient).
    winograd.ERROR_BOUND and WGRAD_ERROR_BOUND are 2.5-3x these (other devices sum the GEMM
    in another order). The output gradient is drawn with another seed than the input (the
    same draws would make dW an autocorrelation, whose large diagonal hides the error)."""
    backends.conv_algorithm = algo
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 64, 28, 28))
    w = rng.standard_normal((64, 64, 3, 3)) * np.sqrt(2 / (9 * 64))
    b = rng.standard_normal(64) * 0.1
    got, ref = _run(x, w, b, kind="contig", seed=1, padding=1)
    _check(got, ref, algo, *_bounds(algo))


def test_vs_torch_weight_view():
    """A weight that is a strided view (every other input channel of a wider tensor), forward
    and input gradient against PyTorch in float64; 'winograd' picks F(4x4) here (both output
    sides >= 4) and F(2x2) for a 3-wide output."""
    torch = pytest.importorskip("torch")
    backends.conv_algorithm = "winograd"
    rng = np.random.default_rng(5)
    for h, w in ((9, 8), (6, 5)):
        xn, wn = rng.standard_normal((2, 4, h, w)), rng.standard_normal((6, 4, 3, 3))
        big = np.zeros((6, 8, 3, 3))
        big[:, ::2] = wn
        x = clgrad.tensor(xn, dtype=clgrad.float64, requires_grad=True)
        wv = clgrad.tensor(big, dtype=clgrad.float64)[:, ::2]
        y = conv2d(x, wv, None, padding=(0, 1))
        gout = rng.standard_normal(tuple(y.shape))
        y.backward(clgrad.tensor(gout, dtype=clgrad.float64))
        xt = torch.tensor(xn, requires_grad=True)
        yt = torch.nn.functional.conv2d(xt, torch.tensor(wn), None, padding=(0, 1))
        yt.backward(torch.tensor(gout))
        np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-10)
        assert backends.last_conv_algorithms["forward"] == "winograd"
        ref = ref_conv(xn, wn, None, gout, padding=(0, 1))  # torch-free: NumPy
        np.testing.assert_allclose(y.detach().numpy(), ref[0], rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(x.grad.numpy(), ref[1], rtol=1e-10, atol=1e-10)
    from clgrad.ops.conv.problem import Problem
    p = Problem(n=1, g=1, c=1, h=5, w=6, o=1, oh=5, ow=3, kh=3, kw=3, sh=1, sw=1, dh=1, dw=1,
                ph=1, pw=0)
    assert winograd.tile_side(p) == 2 and winograd.tile_side(p._replace(ow=4)) == 4


def test_conv_transpose2d():
    """conv_transpose2d is conv2d's input-gradient pass: stride 1 runs Winograd too."""
    backends.conv_algorithm = "winograd:4"
    rng = np.random.default_rng(2)
    xn, wn = rng.standard_normal((2, 4, 7, 6)), rng.standard_normal((4, 3, 3, 3))
    y = conv_transpose2d(clgrad.tensor(xn, dtype=clgrad.float64),
                         clgrad.tensor(wn, dtype=clgrad.float64), padding=1)
    assert backends.last_conv_algorithm == "winograd:4"
    # the transposed conv is the input gradient of a conv of weight wn (O=4 -> C=3)
    _, gx, _, _ = ref_conv(np.zeros((2, 3, 7, 6)), wn, None, xn, padding=1)
    np.testing.assert_allclose(y.numpy(), gx, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kwargs", [dict(stride=2, padding=1), dict(dilation=2, padding=2),
                                    dict(padding=2, k=5), dict(stride=2, padding=2, k=5)],
                         ids=("stride2", "dilation2", "5x5", "5x5stride2"))
def test_problems_it_does_not_take_give_way(kwargs):
    """As every restricted algorithm (depthwise_gpu, blocked ...): a forced 'winograd' gives
    way to implicit where it cannot run the problem, in every pass (a stride-1 5 x 5 conv: the
    forward and input gradient; its weight gradient runs F(5x5, 2x2) but with 'winograd:4');
    values right."""
    k = kwargs.pop("k", 3)
    for algo in ("winograd",) + TILES:
        backends.conv_algorithm = algo
        x, wt, b = _data(2, 4, 9, 9, 6, 4, k, k)
        got, ref = _run(x, wt, b, **kwargs)
        _close(got, ref, 1e-4)
        wgrad = algo if k == 5 and "stride" not in kwargs and algo != "winograd:4" else \
            "implicit"
        assert backends.last_conv_algorithms == {"forward": "implicit", "grad_input": "implicit",
                                                 "grad_weight": wgrad}, \
            backends.last_conv_algorithms


def test_unknown_setting_names_the_choices():
    backends.conv_algorithm = "winograd:3"
    with pytest.raises(ValueError, match=r"conv_algorithm in .*'winograd:4'.*got 'winograd:3'"):
        conv2d(clgrad.zeros((1, 2, 5, 5)), clgrad.zeros((2, 2, 3, 3)))


@pytest.mark.parametrize("algo", TILES)
def test_four_launches_whatever_the_groups(algo):
    backends.conv_algorithm = algo
    rng = np.random.default_rng(0)
    counts = {}
    for g in (1, 2, 8):
        x = clgrad.tensor(rng.standard_normal((2, 8, 9, 9)), requires_grad=True)
        w = clgrad.tensor(rng.standard_normal((16, 8 // g, 3, 3)))
        gout = clgrad.tensor(rng.standard_normal((2, 16, 9, 9)))
        conv2d(x, w, None, padding=1, groups=g).backward(gout)  # builds the programs
        x.grad = None  # (no accumulation into it below)
        n0 = launch_count()
        y = conv2d(x, w, None, padding=1, groups=g)
        n1 = launch_count()
        y.backward(gout)
        counts[g] = (n1 - n0, launch_count() - n1)
        assert backends.last_conv_algorithms["grad_input"] == algo
    assert counts == {g: (4, 4) for g in (1, 2, 8)}, counts


def test_a_second_call_is_the_same():
    """Winograd allocates its workspaces per call: conv2d's recorded fast path refuses it and
    the general path runs again, with the same values."""
    backends.conv_algorithm = "winograd:4"
    x, wt, b = _data(2, 4, 9, 10, 6, 4, 3, 3)
    args = [clgrad.tensor(a) for a in (x, wt, b)]
    y1 = conv2d(*args, padding=1).numpy()
    y2 = conv2d(*args, padding=1).numpy()
    np.testing.assert_array_equal(y1, y2)
    assert _rel(y2, ref_conv(x, wt, b, padding=1)) <= winograd.ERROR_BOUND[4]


# -- auto: measured on GPUs --------------------------------------------------------------------
def _measure(monkeypatch, tmp_path, **kwargs):
    from clgrad.ops.conv import choice, problem as C
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CLGRAD_CONV_TUNE", "on")
    monkeypatch.setattr(conv_gpu, "_TUNE_MIN_MACS", 0)
    x, w = clgrad.zeros((2, 4, 8, 9)), clgrad.zeros((6, 4, 3, 3))
    geo = C._check(x, w, None, kwargs.get("stride", 1), 1, kwargs.get("dilation", 1), 1)
    y = clgrad.zeros((2, 6, geo.oh, geo.ow))
    probs = {"forward": C._forward_problem(geo, x, w, y, None),
             "grad_input": C._grad_input_problem(geo, y, w, x),
             "grad_weight": geo._replace(x=C.v5(x, 1))}
    dev = clgrad.default_device()
    return {k: conv_gpu.measured(k, q, dev, clgrad.float32, choice._trial)
            for k, q in probs.items()}


def _stored():
    return {k: v for k, v in json.loads(conv_gpu.tune_file().read_text()).items()}


def test_auto_measures_winograd_where_it_takes_the_problem(monkeypatch, tmp_path):
    monkeypatch.setattr(conv_gpu, "_TUNED", {})
    got = _measure(monkeypatch, tmp_path)
    # keys: "<device> | <pass> <dtype> <geometry> | <candidates>"
    ms = {k.split(" | ")[-2].split(" ", 1)[0]: e["ms"] for k, e in _stored().items()}
    assert set(ms["forward"]) == set(ms["grad_input"]) == set(ms["grad_weight"]) == {
        "igemm_gpu", "im2col", "implicit", "winograd:2", "winograd:4"}
    for pass_name, algo in got.items():
        assert algo == min(ms[pass_name], key=ms[pass_name].get)
    # a problem it does not take: not measured (a trial skips it)
    conv_gpu._TUNED.clear()
    conv_gpu.tune_file().unlink()
    _measure(monkeypatch, tmp_path, dilation=2)
    for entry in _stored().values():
        assert not any(a.startswith("winograd") for a in entry["ms"]), entry


def test_a_new_candidate_list_measures_again(monkeypatch, tmp_path):
    """conv_algos.json keys hold the pass's candidates: a table measured before Winograd was a
    candidate is not used once it is one."""
    monkeypatch.setattr(conv_gpu, "_TUNED", {})
    old = {k: tuple(a for a in v if not a.startswith("winograd"))
           for k, v in conv_gpu.CANDIDATES.items()}
    monkeypatch.setattr(conv_gpu, "CANDIDATES", old)
    _measure(monkeypatch, tmp_path)
    before = _stored()
    assert all("winograd" not in json.dumps(e) for e in before.values())
    monkeypatch.undo()  # the real candidates, and the table kept as it was written
    monkeypatch.setattr(conv_gpu, "_TUNED", {})
    _measure(monkeypatch, tmp_path)
    after = _stored()
    assert set(before) < set(after)  # the old entries stay, new keys were measured
    new = [e for k, e in after.items() if k not in before]
    assert sum("winograd:4" in e["ms"] for e in new) == 3  # every pass


def test_captured_and_replayed():
    """Inside a CUDAGraph capture the workspaces are the graph's allocations: the graph holds
    the pass's 4 launches and a replay reads the input's new values."""
    backends.conv_algorithm = "winograd:4"
    rng = np.random.default_rng(1)
    xn, wn = rng.standard_normal((2, 8, 9, 7)), rng.standard_normal((8, 8, 3, 3))
    x, w = clgrad.tensor(xn), clgrad.tensor(wn)
    conv2d(x, w, None, padding=1)  # builds the programs outside the capture
    g = clgrad.cuda.CUDAGraph()
    with clgrad.cuda.graph(g):
        y = conv2d(x, w, None, padding=1)
    assert g.num_kernels == 4
    x.copy_(clgrad.tensor(2 * xn))
    g.replay()
    assert _rel(y.numpy(), ref_conv(2 * xn, wn, None, padding=1)) <= winograd.ERROR_BOUND[4]


def test_takes():
    from clgrad.ops.conv.problem import Problem
    p = Problem(n=2, g=1, c=4, h=9, w=9, o=4, oh=9, ow=9, kh=3, kw=3, sh=1, sw=1, dh=1, dw=1,
                ph=1, pw=1)
    assert winograd.takes(p)
    for change in (dict(kh=5), dict(kw=1), dict(sh=2), dict(dw=2), dict(uh=2),
                   dict(n=1 << 31)):  # 2^31 tiles and more: the kernels' tile index is an int
        assert not winograd.takes(p._replace(**change)), change
    assert not winograd.takes(p._replace(n=(1 << 31) // 25 + 1))  # 25 F(2x2) tiles a sample
    assert winograd.takes(p._replace(n=(1 << 31) // 25))


def test_workspace_past_the_device_memory_raises_out_of_memory(monkeypatch):
    """The workspaces come from the device allocator: past the device's memory, PyTorch's
    OutOfMemoryError (clgrad.OutOfMemoryError), not a fallback."""
    backends.conv_algorithm = "winograd:4"
    x, w = clgrad.zeros((1, 16, 8, 8)), clgrad.zeros((16, 16, 3, 3))
    dev = x._storage.device
    # room for the 4 KiB output, not for U (36 x 16 x 16 floats: 36 KiB)
    monkeypatch.setattr(dev, "total_memory", dev.allocated + (16 << 10))
    with pytest.raises(clgrad.OutOfMemoryError, match="out of memory"):
        conv2d(x, w, None, padding=1)
    monkeypatch.undo()
    assert np.all(conv2d(x, w, None, padding=1).numpy() == 0)


@pytest.mark.parametrize("algo", TILES)
def test_random_problems_match_implicit_float64(algo):
    """Random geometries (hypothesis): Winograd and the implicit GEMM agree in float64, every
    pass."""
    from hypothesis import given, settings as hsettings, strategies as st

    @hsettings(max_examples=15, deadline=None)
    @given(st.integers(1, 3), st.sampled_from([1, 2, 3]), st.integers(1, 4), st.integers(1, 3),
           st.integers(1, 11), st.integers(1, 11), st.integers(0, 3), st.integers(0, 3),
           st.booleans(), st.integers(0, 2**31 - 1))
    def check(n, g, cg, og, h, w, ph, pw, bias, seed):
        if h + 2 * ph < 3 or w + 2 * pw < 3:
            return
        rng = np.random.default_rng(seed)
        xn, wn = rng.standard_normal((n, g * cg, h, w)), rng.standard_normal((g * og, cg, 3, 3))
        bn = rng.standard_normal(g * og) if bias else None
        gn = rng.standard_normal((n, g * og, h + 2 * ph - 2, w + 2 * pw - 2))
        got = {}
        for a in (algo, "implicit"):
            backends.conv_algorithm = a
            x = clgrad.tensor(xn, requires_grad=True)
            args = [clgrad.tensor(v, requires_grad=True) if v is not None else None
                    for v in (wn, bn)]
            y = conv2d(x, *args, padding=(ph, pw), groups=g)
            y.backward(clgrad.tensor(gn))
            got[a] = (y.detach().numpy(), x.grad.numpy(), args[0].grad.numpy(),
                      args[1].grad.numpy() if bias else 0.0, dict(backends.last_conv_algorithms))
        assert set(got[algo][4].values()) == {algo}, got[algo][4]
        for i in (0, 1, 2, 3):
            np.testing.assert_allclose(got[algo][i], got["implicit"][i], rtol=1e-10, atol=1e-10)
    check()


def test_unbatched_input():
    """A (C, H, W) input (a stride-0 batch view inside conv2d), forward and input gradient."""
    backends.conv_algorithm = "winograd:4"
    rng = np.random.default_rng(0)
    xn, wn = rng.standard_normal((3, 7, 6)), rng.standard_normal((5, 3, 3, 3))
    x = clgrad.tensor(xn, requires_grad=True)
    y = conv2d(x, clgrad.tensor(wn), None, padding=1)
    gout = rng.standard_normal((5, 7, 6))
    y.backward(clgrad.tensor(gout))
    ref = ref_conv(xn[None], wn, None, gout[None], padding=1)
    np.testing.assert_allclose(y.detach().numpy(), ref[0][0], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(x.grad.numpy(), ref[1][0], rtol=1e-10, atol=1e-10)
    assert backends.last_conv_algorithms["grad_input"] == "winograd:4"


# -- the weight gradient: F(3x3, 2x2) and F(3x3, 4x4) ----------------------------------------
def _matrices(m: int, k: int = 3):
    """(B^T, G, A^T) of kernels/conv_winograd.cl for WM == m, KS == k, read from the source:
    its #defines in order are (2, 3)'s three, alpha 6's B^T, (4, 3)'s G and A^T, (2, 5)'s."""
    src = (Path(__file__).resolve().parent.parent / "kernels" / "conv_winograd.cl").read_text()

    def rows(text):
        text = text.split("\n#")[0].replace("\\", "").replace("(T)", "").replace("H", "(1/2)")
        return np.array(eval(text.replace("{", "[").replace("}", "]")), dtype=float)
    bts, gs, ats = ([rows(t) for t in src.split(f"#define {name}")[1:]]
                    for name in ("BT_ROWS", "G_ROWS", "AT_ROWS"))
    i = {(2, 3): 0, (4, 3): 1, (2, 5): 2}[m, k]
    return bts[min(i, 1)], gs[i], ats[i]


@pytest.mark.parametrize("m, k", [(2, 3), (4, 3), (2, 5)])
def test_wgrad_matrices_on_random_tiles(m, k):
    """F(k x k, m x m) with the forward's points: input transform B^T, output-gradient
    transform A (m x m -> alpha x alpha), output transform G^T (-> k x k). On random float64
    tiles it is the k x k correlation of the alpha x alpha input tile d with the m x m tile e:
    dW[r][s] = sum_{i,j} e[i][j] d[i+r][j+s] (and in 1-D the identity behind it); for k = 3 the
    forward F(m, 3) too, y[i] = sum_r g[r] d[i+r]."""
    bt, g, at = _matrices(m, k)
    alpha = m + k - 1
    assert bt.shape == (alpha, alpha) and g.shape == (alpha, k) and at.shape == (m, alpha)
    ident = np.einsum("rk,ki,kj->rij", g.T, at.T, bt)  # A'^T = G^T, G' = A
    want = np.zeros((k, m, alpha))
    for r in range(k):
        for i in range(m):
            want[r, i, i + r] = 1
    np.testing.assert_allclose(ident, want, atol=1e-14)
    rng = np.random.default_rng(m)
    for _ in range(20):
        d, e = rng.standard_normal((alpha, alpha)), rng.standard_normal((m, m))
        got = g.T @ ((at.T @ e @ at) * (bt @ d @ bt.T)) @ g
        direct = np.array([[np.sum(e * d[r:r + m, s:s + m]) for s in range(k)]
                           for r in range(k)])
        np.testing.assert_allclose(got, direct, rtol=1e-12, atol=1e-12)
    assert np.allclose(at[:, 1], 1)  # point 1: E[(1, 1)] is the tile's sum (the bias gradient)


def _wgrad_direct(algo, xv, gv, gw, gb, padding, groups):
    """Run the weight-gradient pass alone (choice._choose and _run, as conv2d's backward) on
    the given views; returns the algorithm that ran."""
    from clgrad.ops.conv import choice, problem as C
    w = clgrad.empty(tuple(gw.shape), dtype=gw.dtype)
    geo = C._check(xv, w, None, 1, padding, 1, groups)
    p = geo._replace(x=C.v5(xv, groups))
    backends.conv_algorithm = algo
    a, plan = choice._choose("grad_weight", p, w)
    choice._run(a, plan, "grad_weight", p, xv, gv, gw, gb)
    return a


@pytest.mark.parametrize("algo, k", [("winograd:2", 3), ("winograd:4", 3), ("winograd:2", 5)])
@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_wgrad_strided_views(algo, k, dtype):
    """Input and output gradient as transposed / stepped views, the weight and bias gradients
    written through strided views of wider tensors (the elements between stay untouched)."""
    dt = getattr(clgrad, dtype)
    rng = np.random.default_rng(7)
    n, c, h, w, o, g, pad = 3, 6, 9, 7, 4, 2, k // 2
    xn, gn = rng.standard_normal((n, c, h, w)), rng.standard_normal((n, o, h, w))
    xv = clgrad.tensor(xn.transpose(0, 1, 3, 2).copy(), dtype=dt).transpose(2, 3)
    big = np.zeros((n, o, h, 2 * w))
    big[..., ::2] = gn
    gv = clgrad.tensor(big, dtype=dt)[..., ::2]
    gw_big = clgrad.full((o, c // g + 1, k, k), 7.0, dtype=dt)
    gb_big = clgrad.full((2 * o,), 7.0, dtype=dt)
    gw, gb = gw_big[:, 1:], gb_big[1::2]
    assert _wgrad_direct(algo, xv, gv, gw, gb, pad, g) == algo
    _, _, rw, rb = ref_conv(xn, np.zeros((o, c // g, k, k)), None, gn, padding=pad, groups=g)
    bound = winograd.WGRAD_ERROR_BOUND[int(algo[-1]), k] if dtype == "float32" else 1e-10
    assert _rel(gw.numpy(), rw) <= bound and _rel(gb.numpy(), rb) <= bound
    assert np.all(gw_big.numpy()[:, 0] == 7) and np.all(gb_big.numpy()[::2] == 7)


@pytest.mark.parametrize("algo", TILES)
def test_wgrad_slices(algo, monkeypatch):
    """The GEMM's depth cut into many slices (thin ones forced: WGRAD_MAX_K small) and into
    one: the same gradients, float64; the rows' zero padding never adds anything."""
    m = int(algo[-1])
    rng = np.random.default_rng(3)
    n, c, h, w, o = 3, 4, 11, 10, 6
    xn, gn = rng.standard_normal((n, c, h, w)), rng.standard_normal((n, o, h - 2, w - 2))
    _, _, rw, rb = ref_conv(xn, np.zeros((o, c, 3, 3)), None, gn)
    dev = clgrad.default_device()
    from clgrad.ops.conv.problem import Problem
    p = Problem(n=n, g=1, c=c, h=h, w=w, o=o, oh=h - 2, ow=w - 2, kh=3, kw=3, sh=1, sw=1,
                dh=1, dw=1, ph=0, pw=0)
    for max_k, want in ((1, n * -(-(h - 2) // m) * -(-(w - 2) // m)), (1 << 20, 1)):
        monkeypatch.setattr(winograd, "WGRAD_MAX_K", max_k)
        monkeypatch.setattr(winograd, "WGRAD_FILL", 0)
        dev.plans.clear()  # (the choices and plans of the previous split)
        splits, depth = winograd.wgrad_slices(m, p, dev)
        assert splits == want and depth % 64 == 0 and splits * depth >= want
        gw, gb = clgrad.empty((o, c, 3, 3), dtype=clgrad.float64), \
            clgrad.empty((o,), dtype=clgrad.float64)
        assert _wgrad_direct(algo, clgrad.tensor(xn), clgrad.tensor(gn), gw, gb, 0, 1) == algo
        np.testing.assert_allclose(gw.numpy(), rw, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(gb.numpy(), rb, rtol=1e-10, atol=1e-10)
    dev.plans.clear()


@pytest.mark.parametrize("algo", TILES)
def test_wgrad_launches_whatever_the_groups(algo):
    """The weight gradient: 5 launches (dY and input transforms, GEMM, the sum of its slices,
    output transform), 6 with the bias gradient, whatever the group count."""
    backends.conv_algorithm = algo
    rng = np.random.default_rng(0)
    counts = {}
    for g in (1, 2, 8):
        for bias in (False, True):
            x = clgrad.tensor(rng.standard_normal((2, 8, 9, 9)))
            w = clgrad.tensor(rng.standard_normal((16, 8 // g, 3, 3)), requires_grad=True)
            b = clgrad.tensor(rng.standard_normal(16), requires_grad=True) if bias else None
            gout = clgrad.tensor(rng.standard_normal((2, 16, 9, 9)))
            conv2d(x, w, b, padding=1, groups=g).backward(gout)  # builds the programs
            for t in (w, b) if bias else (w,):
                t.grad = None  # (no accumulation into them below)
            y = conv2d(x, w, b, padding=1, groups=g)
            n0 = launch_count()
            y.backward(gout)
            counts[g, bias] = launch_count() - n0
            assert backends.last_conv_algorithms["grad_weight"] == algo
    assert counts == {(g, b): 5 + b for g in (1, 2, 8) for b in (False, True)}, counts


@pytest.mark.parametrize("k", (3, 5))
def test_wgrad_vs_torch(k):
    """Weight and bias gradients against PyTorch in float64 (groups 2, padding 2, 5 x 9)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    xn, wn = rng.standard_normal((3, 4, 5, 9)), rng.standard_normal((6, 2, k, k))
    bn, gn = rng.standard_normal(6), rng.standard_normal((3, 6, 10 - k, 14 - k))
    xt, wt, bt = (torch.tensor(v, requires_grad=True) for v in (xn, wn, bn))
    torch.nn.functional.conv2d(xt, wt, bt, padding=2, groups=2).backward(torch.tensor(gn))
    for algo in TILES if k == 3 else ("winograd:2",):
        backends.conv_algorithm = algo
        w, b = (clgrad.tensor(v, dtype=clgrad.float64, requires_grad=True) for v in (wn, bn))
        conv2d(clgrad.tensor(xn, dtype=clgrad.float64), w, b, padding=2, groups=2).backward(
            clgrad.tensor(gn, dtype=clgrad.float64))
        assert backends.last_conv_algorithms["grad_weight"] == algo
        np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(b.grad.numpy(), bt.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_wgrad_workspace_past_the_device_memory_raises_out_of_memory(monkeypatch):
    """The weight gradient's workspaces come from the device allocator too: past the device's
    memory, OutOfMemoryError."""
    backends.conv_algorithm = "winograd:2"
    x, gw = clgrad.zeros((1, 16, 8, 8)), clgrad.empty((16, 16, 3, 3))
    g4 = clgrad.zeros((1, 16, 8, 8))
    dev = x._storage.device
    # E alone is 16 x 16 x 64 floats (64 KiB)
    monkeypatch.setattr(dev, "total_memory", dev.allocated + (16 << 10))
    with pytest.raises(clgrad.OutOfMemoryError, match="out of memory"):
        _wgrad_direct("winograd:2", x, g4, gw, None, 1, 1)
    monkeypatch.undo()
    _wgrad_direct("winograd:2", x, g4, gw, None, 1, 1)
    assert np.all(gw.numpy() == 0)


CASES5 = [  # (N, C, H, W, O, kwargs, view kind, bias): 5 x 5 kernels, F(5x5, 2x2)
    (1, 3, 8, 8, 4, dict(padding=2), "narrow", True),
    (3, 4, 9, 11, 6, dict(padding=1, groups=2), "transpose", False),  # odd sides, groups 2
    (2, 8, 7, 7, 8, dict(padding=0, groups=4), "step", True),  # 3 x 3 output, groups 4
    (1, 2, 5, 9, 3, dict(padding=(2, 0)), "contig", True),  # 5 x 9
]


@pytest.mark.parametrize("algo", ("winograd", "winograd:2"))
@pytest.mark.parametrize("case", CASES5, ids=lambda c: f"{c[:5]}-{c[5]}-{c[6]}-bias{c[7]}")
def test_wgrad_5x5_vs_numpy(case, algo):
    """The weight and bias gradients of 5 x 5 stride-1 convs, float32 within the bound of
    AlexNet's conv2 and float64 to 1e-10; the forward and input gradient run implicit."""
    n, c, h, w, o, kwargs, kind, bias = case
    backends.conv_algorithm = algo
    x, wt, b = _data(n, c, h, w, o, c // kwargs.get("groups", 1), 5, 5, bias=bias)
    for dtype, bound in ((clgrad.float32, winograd.WGRAD_ERROR_BOUND[2, 5]),
                         (clgrad.float64, 1e-10)):
        got, ref = _run(x, wt, b, kind=kind, dtype=dtype, seed=1, **kwargs)
        _close(got[:2], ref[:2], 1e-4 if dtype is clgrad.float32 else 1e-10)
        assert _rel(got[2], ref[2]) <= bound, _rel(got[2], ref[2])
        if bias:
            assert _rel(got[3], ref[3]) <= bound, _rel(got[3], ref[3])
        assert backends.last_conv_algorithms == {
            "forward": "implicit", "grad_input": "implicit", "grad_weight": algo}


def test_wgrad_5x5_alexnet_conv2_error_bound():
    """AlexNet's conv2 (96 -> 256 channels, groups 2, 27 x 27, padding 2) at batch 2, He
    weights: F(5x5, 2x2)'s weight gradient measured 2.0e-5 (the module doc), the bound 3x."""
    backends.conv_algorithm = "winograd:2"
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 96, 27, 27))
    w = rng.standard_normal((256, 48, 5, 5)) * np.sqrt(2 / (25 * 48))
    b = rng.standard_normal(256) * 0.1
    got, ref = _run(x, w, b, kind="contig", seed=1, padding=2, groups=2)
    assert backends.last_conv_algorithms["grad_weight"] == "winograd:2"
    assert _rel(got[2], ref[2]) <= winograd.WGRAD_ERROR_BOUND[2, 5], _rel(got[2], ref[2])
    assert _rel(got[3], ref[3]) <= winograd.WGRAD_ERROR_BOUND[2, 5], _rel(got[3], ref[3])


def test_wgrad_tile():
    from clgrad.ops.conv.problem import Problem
    p = Problem(n=2, g=1, c=4, h=9, w=9, o=4, oh=9, ow=9, kh=3, kw=3, sh=1, sw=1, dh=1, dw=1,
                ph=1, pw=1)
    assert [winograd.wgrad_tile(m, p) for m in (0, 2, 4)] == [4, 2, 4]
    assert winograd.wgrad_tile(0, p._replace(ow=3)) == 2
    p5 = p._replace(kh=5, kw=5, ph=2, pw=2)
    assert [winograd.wgrad_tile(m, p5) for m in (0, 2, 4)] == [2, 2, None]
    for change in (dict(kw=3), dict(kh=7, kw=7), dict(sh=2), dict(dh=2)):
        assert winograd.wgrad_tile(2, p5._replace(**change)) is None, change


@pytest.mark.parametrize("k", (3, 5))
def test_wgrad_a_second_call_is_the_same(k):
    """conv2d's backward replays the weight gradient's recorded launches on a signature it ran
    before (its workspaces allocated afresh per call): the same values, bit for bit."""
    backends.conv_algorithm = "winograd:2"
    x, wt, b = _data(2, 4, 9, 10, 6, 4, k, k)
    gout = np.random.default_rng(1).standard_normal((2, 6, 12 - k, 13 - k))
    grads = []
    for _ in range(3):
        w, bb = clgrad.tensor(wt, requires_grad=True), clgrad.tensor(b, requires_grad=True)
        conv2d(clgrad.tensor(x), w, bb, padding=1).backward(clgrad.tensor(gout))
        assert backends.last_conv_algorithms["grad_weight"] == "winograd:2"
        grads.append((w.grad.numpy(), bb.grad.numpy()))
    for gw, gb in grads[1:]:
        np.testing.assert_array_equal(gw, grads[0][0])
        np.testing.assert_array_equal(gb, grads[0][1])
    _, _, rw, rb = ref_conv(x, wt, b, gout, padding=1)
    assert _rel(grads[0][0], rw) <= winograd.WGRAD_ERROR_BOUND[2, k]
    assert _rel(grads[0][1], rb) <= winograd.WGRAD_ERROR_BOUND[2, k]
