"""conv2d against an independent NumPy float64 reference (sliding windows + einsum), forward and
backward, on non-contiguous inputs; grouped conv == per-group convs on narrow views == dense conv
with a block-diagonal weight; every algorithm alike; launch counts independent of groups;
errors before any launch."""
import importlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import clgrad
import clgrad.backends as backends
from clgrad.autograd import gradcheck
from clgrad.runtime import launch_count
from clgrad.ops._util import defines_for
from clgrad.ops.conv import algorithms as conv_algorithms, gpu as conv_gpu
from clgrad.ops.conv import conv2d
from clgrad.ops.conv.problem import Problem, Tiles

ALGOS = ("implicit", "depthwise", "direct", "im2col", "implicit:gpu", "pointwise",
         "depthwise_gpu", "igemm_gpu", "blocked:8", "blocked:16")  # blocked:<lanes>


# -- the NumPy reference ----------------------------------------------------------------------
def _pads(padding, k, d, s, h, w):
    """((top, bottom), (left, right)) as PyTorch pads for int/pair/'valid'/'same'."""
    if padding == "valid":
        return (0, 0), (0, 0)
    if padding == "same":
        th, tw = d[0] * (k[0] - 1), d[1] * (k[1] - 1)
        return (th // 2, th - th // 2), (tw // 2, tw - tw // 2)
    p = (padding, padding) if isinstance(padding, int) else padding
    return (p[0], p[0]), (p[1], p[1])


def _windows(x, k, s, d, pads):
    """Padded input and its windows (N, C, kh, kw, oh, ow) as strided slices."""
    xp = np.pad(x, ((0, 0), (0, 0)) + pads)
    oh = (xp.shape[2] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (xp.shape[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    win = np.empty(x.shape[:2] + tuple(k) + (oh, ow))
    for i in range(k[0]):
        for j in range(k[1]):
            win[:, :, i, j] = xp[:, :, i * d[0]: i * d[0] + s[0] * (oh - 1) + 1: s[0],
                                 j * d[1]: j * d[1] + s[1] * (ow - 1) + 1: s[1]]
    return xp, win


def ref_conv(x, w, b, gout=None, stride=1, padding=0, dilation=1, groups=1):
    """Output, and with gout the gradients (input, weight, bias), all float64."""
    s = stride if isinstance(stride, tuple) else (stride, stride)
    d = dilation if isinstance(dilation, tuple) else (dilation, dilation)
    k = w.shape[2:]
    pads = _pads(padding, k, d, s, *x.shape[2:])
    xp, win = _windows(x, k, s, d, pads)
    G, cg, og = groups, w.shape[1], w.shape[0] // groups
    y = np.concatenate([np.einsum("nckluv,ockl->nouv", win[:, g * cg:(g + 1) * cg],
                                  w[g * og:(g + 1) * og]) for g in range(G)], axis=1)
    if b is not None:
        y = y + b[None, :, None, None]
    if gout is None:
        return y
    gw = np.concatenate([np.einsum("nouv,nckluv->ockl", gout[:, g * og:(g + 1) * og],
                                   win[:, g * cg:(g + 1) * cg]) for g in range(G)])
    gxp = np.zeros_like(xp)
    oh, ow = y.shape[2:]
    for g in range(G):
        for i in range(k[0]):
            for j in range(k[1]):
                gxp[:, g * cg:(g + 1) * cg, i * d[0]: i * d[0] + s[0] * (oh - 1) + 1: s[0],
                    j * d[1]: j * d[1] + s[1] * (ow - 1) + 1: s[1]] += np.einsum(
                    "nouv,oc->ncuv", gout[:, g * og:(g + 1) * og], w[g * og:(g + 1) * og, :, i, j])
    (t, _), (lft, _) = pads
    gx = gxp[:, :, t:t + x.shape[2], lft:lft + x.shape[3]]
    return y, gx, gw, gout.sum(axis=(0, 2, 3))


# -- helpers ----------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _restore_backend(monkeypatch):
    monkeypatch.setattr(conv_algorithms, "BLOCK_LANES", conv_algorithms.BLOCK_LANES)
    with backends.flags(conv_algorithm=backends.conv_algorithm,
                        conv_implicit_variant=backends.conv_implicit_variant,
                        conv_workspace_limit=backends.conv_workspace_limit):
        yield


def _use(algo: str):
    """Force an algorithm; 'implicit:gpu' is the implicit GEMM's GPU kernels (any device),
    'blocked:8' / 'blocked:16' the blocked kernels with 8 (AVX2) or 16 (AVX-512) float lanes
    whatever the device's vector width."""
    name, _, variant = algo.partition(":")
    backends.conv_algorithm = name
    if name == "blocked":
        cap = clgrad.default_device().max_vector_width
        if cap and int(variant) > cap:  # the device check capped this runtime's width
            pytest.skip(f"the default device builds kernels at float vector width {cap} at "
                        f"most (python -m clgrad devices says why)")
        conv_algorithms.BLOCK_LANES = int(variant)
        variant = ""
    backends.conv_implicit_variant = variant or "auto"


def _noncontig(a: np.ndarray, kind: str, dtype=clgrad.float32, requires_grad=True):
    """A clgrad view holding a's values: 'narrow' (of a wider tensor), 'transpose' (of W, H),
    'step' (every other column of a wider tensor) or 'contig'."""
    n, c, h, w = a.shape
    if kind == "narrow":
        big = np.zeros((n, c + 3, h, w))
        big[:, 2:2 + c] = a
    elif kind == "transpose":
        big = np.ascontiguousarray(a.transpose(0, 1, 3, 2))
    elif kind == "step":
        big = np.zeros((n, c, h, 2 * w))
        big[..., ::2] = a
    else:
        big = a
    base = clgrad.tensor(big, dtype=dtype, requires_grad=requires_grad)
    x = {"narrow": lambda: base.narrow(1, 2, c), "transpose": lambda: base.transpose(2, 3),
         "step": lambda: base[:, :, :, ::2], "contig": lambda: base}[kind]()
    return base, x


def _run(x_np, w_np, b_np, kind="narrow", dtype=clgrad.float32, seed=0, **kw):
    """Forward + backward on the device; returns y, gx, gw, gb and the reference."""
    rng = np.random.default_rng(seed)
    base, x = _noncontig(x_np, kind, dtype)
    w = clgrad.tensor(w_np, dtype=dtype, requires_grad=True)
    b = None if b_np is None else clgrad.tensor(b_np, dtype=dtype, requires_grad=True)
    y = conv2d(x, w, b, **kw)
    gout = rng.standard_normal(tuple(y.shape))
    y.backward(clgrad.tensor(gout, dtype=dtype))
    gx = base.grad.numpy()
    if kind == "narrow":
        gx = gx[:, 2:2 + x_np.shape[1]]
    elif kind == "transpose":
        gx = gx.transpose(0, 1, 3, 2)
    elif kind == "step":
        gx = gx[..., ::2]
    got = (y.detach().numpy(), gx, w.grad.numpy(), None if b is None else b.grad.numpy())
    ref = ref_conv(x_np, w_np, b_np, gout, **kw)
    return got, ref


def _close(got, ref, tol):
    for name, a, r in zip(("output", "grad_input", "grad_weight", "grad_bias"), got, ref):
        if a is None:
            continue
        scale = max(1.0, float(np.abs(r).max()) if r.size else 1.0)
        np.testing.assert_allclose(a, r, rtol=tol, atol=tol * scale, err_msg=name)


def _data(n, c, h, w, o, cg, kh, kw, bias=True, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, c, h, w)), rng.standard_normal((o, cg, kh, kw)),
            rng.standard_normal(o) if bias else None)


# -- forward and backward against the reference -----------------------------------------------
CASES = [  # (N, C, H, W, O, kH, kW, kwargs)
    (2, 4, 9, 9, 6, 3, 3, dict(padding=1)),
    (2, 6, 11, 7, 9, 3, 2, dict(padding=2, dilation=2, groups=3)),
    (3, 8, 10, 13, 8, 3, 3, dict(stride=3, padding=4, dilation=2, groups=8)),
    (2, 8, 10, 13, 16, 3, 3, dict(stride=2, padding=1, groups=8)),
    (1, 3, 17, 33, 20, 1, 1, dict()),
    (2, 5, 12, 12, 4, 4, 2, dict(padding="same", dilation=(2, 1))),
    (2, 4, 9, 8, 6, 5, 3, dict(padding="valid", stride=(2, 1), groups=2)),
    (2, 16, 20, 19, 32, 3, 3, dict(padding=(1, 0), stride=(1, 2), groups=2)),
    (1, 32, 6, 5, 32, 3, 3, dict(padding=(0, 2), groups=32)),
    (2, 2, 7, 7, 3, 3, 3, dict(padding=7)),  # padding larger than the kernel
    (2, 6, 5, 7, 4, 1, 1, dict(groups=2)),  # 1 x 1, grouped: pointwise's GEMM batch dims
    (2, 4, 6, 5, 6, 1, 1, dict(stride=2)),  # 1 x 1 strided: pointwise gathers x
    (2, 4, 7, 8, 6, 1, 1, dict(stride=2)),  # input-gradient phases no tap reaches
    (2, 4, 11, 10, 4, 2, 3, dict(stride=(2, 4), dilation=2, padding=1)),
]


@pytest.mark.parametrize("algo", ("auto",) + ALGOS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[:7]}-{c[7]}")
def test_forward_backward_vs_numpy(case, algo):
    _use(algo)
    n, c, h, w, o, kh, kw, kwargs = case
    cg = c // kwargs.get("groups", 1)
    got, ref = _run(*_data(n, c, h, w, o, cg, kh, kw), kind="narrow", **kwargs)
    _close(got, ref, 1e-4)


@pytest.mark.parametrize("algo", ("implicit", "depthwise", "im2col", "implicit:gpu"))
@pytest.mark.parametrize("case", [
    (1, 64, 9, 70, 100, 5, 5, dict(padding=2)),  # channel chunks, 2 channel blocks, 2 col tiles
    (1, 2, 150, 150, 4, 3, 3, dict(padding=1, groups=2)),  # depthwise x2, row and col tiles
], ids=("dense", "depthwise"))
def test_many_tiles(case, algo):
    _use(algo)
    n, c, h, w, o, kh, kw, kwargs = case
    got, ref = _run(*_data(n, c, h, w, o, c // kwargs.get("groups", 1), kh, kw), **kwargs)
    _close(got, ref, 1e-4)


@pytest.mark.parametrize("kind", ("contig", "transpose", "step"))
def test_strided_inputs(kind):
    got, ref = _run(*_data(2, 6, 8, 9, 4, 3, 3, 2, bias=False), kind=kind, padding=1, groups=2)
    _close(got, ref, 1e-4)


@pytest.mark.parametrize("algo", ALGOS)
def test_float64(algo):
    _use(algo)
    got, ref = _run(*_data(2, 4, 7, 9, 6, 2, 3, 3), dtype=clgrad.float64, padding=1, stride=2,
                    groups=2)
    _close(got, ref, 1e-10)


def test_unbatched():
    x, w, b = _data(1, 4, 6, 7, 6, 2, 3, 3)
    xt = clgrad.tensor(x[0], requires_grad=True)
    y = conv2d(xt, clgrad.tensor(w), clgrad.tensor(b), padding=1, groups=2)
    assert tuple(y.shape) == (6, 6, 7)
    np.testing.assert_allclose(y.detach().numpy(), ref_conv(x, w, b, padding=1, groups=2)[0],
                               rtol=1e-4, atol=1e-4)
    y.sum().backward()
    assert tuple(xt.grad.shape) == (4, 6, 7)


@pytest.mark.parametrize("algo", ("implicit", "depthwise", "implicit:gpu"))
def test_gradcheck_float64(algo):
    _use(algo)
    rng = np.random.default_rng(3)
    x = clgrad.tensor(rng.standard_normal((1, 4, 5, 4)), dtype=clgrad.float64,
                      requires_grad=True)
    w = clgrad.tensor(rng.standard_normal((4, 2, 2, 3)), dtype=clgrad.float64,
                      requires_grad=True)
    b = clgrad.tensor(rng.standard_normal(4), dtype=clgrad.float64, requires_grad=True)
    assert gradcheck(lambda x, w, b: conv2d(x.transpose(2, 3), w, b, stride=(2, 1),
                                            padding=1, dilation=(1, 2), groups=2), (x, w, b))


# -- hypothesis: random configurations, groups properties -------------------------------------
@st.composite
def configs(draw):
    mode = draw(st.sampled_from(["dense", "groups2", "depthwise", "multiplier"]))
    if mode in ("depthwise", "multiplier"):
        c = g = draw(st.integers(1, 4))
        o = c * (draw(st.integers(2, 3)) if mode == "multiplier" else 1)
    else:
        g = 1 if mode == "dense" else 2
        c, o = g * draw(st.integers(1, 3)), g * draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    d = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    p = (draw(st.integers(0, 5)), draw(st.integers(0, 5)))
    h = max(draw(st.integers(1, 12)), d[0] * (kh - 1) + 1 - 2 * p[0])
    w = max(draw(st.integers(1, 12)), d[1] * (kw - 1) + 1 - 2 * p[1])
    return dict(n=draw(st.integers(1, 3)), c=c, o=o, g=g, h=h, w=w, kh=kh, kw=kw, stride=s,
                dilation=d, padding=p, bias=draw(st.booleans()),
                kind=draw(st.sampled_from(["narrow", "transpose", "step"])),
                algo=draw(st.sampled_from(("auto",) + ALGOS)), seed=draw(st.integers(0, 99)))


@given(configs())
def test_random_configs(cfg):
    _use(cfg["algo"])
    x, w, b = _data(cfg["n"], cfg["c"], cfg["h"], cfg["w"], cfg["o"], cfg["c"] // cfg["g"],
                    cfg["kh"], cfg["kw"], cfg["bias"], cfg["seed"])
    kw = dict(stride=cfg["stride"], padding=cfg["padding"], dilation=cfg["dilation"],
              groups=cfg["g"])
    got, ref = _run(x, w, b, kind=cfg["kind"], seed=cfg["seed"], **kw)
    _close(got, ref, 1e-4)
    # grouped == per-group convs on narrow views == dense conv with a block-diagonal weight
    _, xv = _noncontig(x, cfg["kind"], requires_grad=False)
    wt = clgrad.tensor(w, dtype=clgrad.float32)
    y = conv2d(xv, wt, None, **kw).numpy()
    G, cg, og = cfg["g"], cfg["c"] // cfg["g"], cfg["o"] // cfg["g"]
    dense = dict(kw, groups=1)
    loop = [conv2d(xv.narrow(1, g * cg, cg), wt.narrow(0, g * og, og), None, **dense).numpy()
            for g in range(G)]
    np.testing.assert_allclose(y, np.concatenate(loop, axis=1), rtol=1e-5, atol=1e-5)
    block = np.zeros((cfg["o"], cfg["c"], cfg["kh"], cfg["kw"]))
    for g in range(G):
        block[g * og:(g + 1) * og, g * cg:(g + 1) * cg] = w[g * og:(g + 1) * og]
    dense_y = conv2d(xv, clgrad.tensor(block, dtype=clgrad.float32), None, **dense).numpy()
    np.testing.assert_allclose(y, dense_y, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", CASES[:4] + CASES[7:9], ids=lambda c: f"{c[:7]}")
def test_every_algorithm_same_result(case):
    n, c, h, w, o, kh, kw, kwargs = case
    x, wt, b = _data(n, c, h, w, o, c // kwargs.get("groups", 1), kh, kw)
    results = []
    for algo in ALGOS:
        _use(algo)
        results.append(_run(x, wt, b, kind="transpose", **kwargs)[0])
    for other in results[1:]:
        _close(other, results[0], 1e-4)


# -- launches, parameters, gradients ----------------------------------------------------------
def _launches(groups, algo):
    _use(algo)
    rng = np.random.default_rng(0)
    x = clgrad.tensor(rng.standard_normal((2, 32, 8, 8)), requires_grad=True)
    w = clgrad.tensor(rng.standard_normal((64, 32 // groups, 3, 3)), requires_grad=True)
    b = clgrad.tensor(rng.standard_normal(64), requires_grad=True)
    g = clgrad.tensor(rng.standard_normal((2, 64, 8, 8)))
    conv2d(x, w, b, padding=1, groups=groups).backward(g)  # builds every program first
    x.grad = w.grad = b.grad = None
    n0 = launch_count()
    y = conv2d(x, w, b, padding=1, groups=groups)
    n1 = launch_count()
    y.backward(g)
    return n1 - n0, launch_count() - n1, backends.last_conv_algorithms.copy()


def _depthwise_wgrad_direct(groups, algo):
    """Whether _launches(groups, algo)'s weight gradient ran the CPU depthwise kernel without
    batch splits."""
    from clgrad.ops.conv.problem import _check
    last = _launches(groups, algo)[2]["grad_weight"]
    x = clgrad.zeros((2, 32, 8, 8))
    p = _check(x, clgrad.zeros((64, 32 // groups, 3, 3)), None, 1, 1, 1, groups)
    if last != "depthwise":
        return False
    plan = conv_algorithms._plan_dw_wgrad(p, clgrad.float32, x._storage.device)
    return plan is not None and plan.tiles.split == 1


@pytest.mark.parametrize("algo", ("auto",) + ALGOS)
def test_launch_count_independent_of_groups(monkeypatch, algo):
    # auto: the shape rules' region (GPUs measure problems from _TUNE_MIN_MACS multiply-adds,
    # and a measured choice may differ between group counts; this problem has 1-2 M)
    monkeypatch.setattr(conv_gpu, "_TUNE_MIN_MACS", 1 << 24)
    counts = {g: _launches(g, algo)[:2] for g in (1, 2, 32)}  # 32 == C: depthwise
    assert counts[1] == counts[2], counts
    # groups enough to fill the device: the CPU depthwise weight gradient writes its sums
    # itself (no partial sums to add up in a second launch); never more launches than g = 1
    few_launches = counts[32][1] == counts[1][1] - 1 and _depthwise_wgrad_direct(32, algo)
    assert counts[32][0] == counts[1][0] and (counts[32][1] == counts[1][1] or few_launches)
    if algo in ("auto", "implicit", "depthwise", "direct"):
        assert counts[1][0] == 1  # forward: one launch, bias fused


def test_im2col_split_gemm_launches_and_values(monkeypatch):
    """GPUs run the im2col forward GEMM of small layers through gemm's split-K path (AlexNet's
    convolutions at batch 1): the decision is made on the whole layer, so the launch count
    still does not depend on groups; values against NumPy. Here the GPU's GEMM_TILED tiles
    and the split decision are forced on this device."""
    from clgrad.ops import matmul as mm
    dev = clgrad.default_device()
    monkeypatch.setitem(mm._TUNED, dev, mm.GPU_TILES)
    monkeypatch.setattr(conv_algorithms, "_split_gemm", lambda p, nc, pixels, dev: True)
    calls = []
    real = mm._gemm_split_k
    monkeypatch.setattr(mm, "_gemm_split_k", lambda *a, **k: calls.append(a[5]) or real(*a, **k))
    dev.plans.clear()
    try:
        counts = {g: _launches(g, "im2col")[:2] for g in (1, 2, 32)}
        assert counts[1] == counts[2] == counts[32], counts
        assert calls  # the split path ran
        _use("im2col")
        for n, c, h, o, k, kw in [(1, 8, 9, 6, 3, dict(padding=1)),
                                  (2, 64, 7, 16, 3, dict(padding=1, groups=2)),
                                  (1, 48, 6, 12, 5, dict(padding=2, groups=3))]:
            x_np, w_np, b_np = _data(n, c, h, h, o, c // kw.get("groups", 1), k, k)
            got, ref = _run(x_np, w_np, b_np, **kw)
            _close(got, ref, 1e-4)
        assert max(calls) > 1  # the deep cases (K = 288, 240) split into slices
    finally:
        dev.plans.clear()


def test_auto_choice(monkeypatch):
    monkeypatch.setattr(conv_gpu, "_TUNE_MIN_MACS", 1 << 24)  # the shape rules (see above)
    cpu = clgrad.default_device().kind == "cpu"
    assert set(_launches(32, "auto")[2].values()) == ({"depthwise"} if cpu else {"depthwise_gpu"})
    assert set(_launches(2, "auto")[2].values()) == {"implicit"}


@pytest.mark.parametrize("lanes", (8, 16))
@pytest.mark.parametrize("case", [  # (N, C, H, W, O, kH, kW, kwargs)
    (3, 37, 6, 5, 40, 3, 3, dict(padding=1)),  # 2-3 channel blocks, partial last, pixel tiles
    (1, 24, 4, 4, 53, 3, 3, dict(padding=1)),  # batch 1, 4 x 4: ResNet layer4's small maps
    (2, 18, 9, 8, 21, 3, 3, dict(stride=2, padding=1)),  # input-gradient phases
    (2, 20, 7, 9, 36, 3, 2, dict(padding=(2, 0), dilation=(1, 2), groups=2)),
    (1, 9, 2, 2, 17, 3, 3, dict(padding=1)),  # 2 x 2 maps (VGG-11's last convs)
], ids=("blocks", "batch1-4x4", "stride2", "groups-dilation", "2x2"))
def test_blocked_lanes_vs_numpy(case, lanes):
    """The blocked kernels with 8 and 16 lanes (AVX2's and AVX-512's builds, forced on any
    device) on channel counts that are no multiple of the block, against float64 NumPy."""
    _use(f"blocked:{lanes}")
    n, c, h, w, o, kh, kw, kwargs = case
    got, ref = _run(*_data(n, c, h, w, o, c // kwargs.get("groups", 1), kh, kw), **kwargs)
    _close(got, ref, 1e-4)
    assert set(backends.last_conv_algorithms.values()) == {"blocked"}


@pytest.mark.parametrize("lanes", (8, 16))
def test_blocked_weight_gradient_tap_blocks_and_chunks(monkeypatch, lanes):
    """Several tap blocks per weight-gradient work-group (a small BLOCK_WGRAD_FMAS budget
    makes it one; a large one all) and the pixels summed in chunks (BLOCK_WGRAD_CHUNK: 1
    pixel, 7 pixels of 2 vectors, all): each against NumPy, float64."""
    _use(f"blocked:{lanes}")
    x, w, b = _data(2, 13, 5, 6, 19, 13, 3, 3)
    isz = 8 * 2 * lanes // 2  # bytes per packed pixel: 2 vectors of lanes / 2 doubles
    for fmas, chunk in ((1, 1), (1 << 30, 7 * isz), (1, 1 << 30), (1 << 30, 1)):
        monkeypatch.setattr(conv_algorithms, "BLOCK_WGRAD_FMAS", fmas)
        monkeypatch.setattr(conv_algorithms, "BLOCK_WGRAD_CHUNK", chunk)
        got, ref = _run(x, w, b, dtype=clgrad.float64, padding=1)
        _close(got, ref, 1e-10)


@pytest.mark.parametrize("few", (True, False), ids=("few", "full"))
@pytest.mark.parametrize("lanes", (8, 16))
@pytest.mark.parametrize("case", [  # (N, C, H, W, O, stride): 3 x 3, padding 1, groups=32
    (2, 128, 9, 7, 128, 2),  # ResNeXt stage 1's 4 channels per group, strided, odd map
    (2, 256, 8, 9, 256, 1),  # 8 per group (stage 2): half an AVX-512 vector
    (1, 512, 7, 5, 512, 2),  # 16 per group (stage 3): one vector
    (3, 128, 5, 6, 256, 1),  # 4 in, 8 out per group
], ids=lambda c: "x".join(map(str, c)))
def test_blocked_grouped_few_channels_vs_numpy(monkeypatch, case, lanes, few):
    """The blocked kernels on grouped convs with few channels per group (ResNeXt-29's
    groups=32): with BLOCK_FEW and BLOCK_NARROW (one vector per block, half-width vectors
    where a group fills at most half of one, more pixels and taps per work item) and
    without; all three passes in float64 against NumPy."""
    monkeypatch.setattr(conv_algorithms, "BLOCK_FEW", few)
    monkeypatch.setattr(conv_algorithms, "BLOCK_NARROW", few)
    _use(f"blocked:{lanes}")
    n, c, h, w, o, s = case
    got, ref = _run(*_data(n, c, h, w, o, c // 32, 3, 3, seed=11), dtype=clgrad.float64,
                    padding=1, stride=s, groups=32)
    _close(got, ref, 1e-10)
    assert set(backends.last_conv_algorithms.values()) == {"blocked"}
    dev = clgrad.default_device()
    p = Problem(n=n, g=32, c=c // 32, h=h, w=w, o=o // 32, oh=h, ow=w, kh=3, kw=3, sh=1, sw=1,
                dh=1, dw=1, ph=1, pw=1)
    d = conv_algorithms._block_geometry(p, clgrad.float64, dev)[0]
    og, bw = o // 32, lanes // 2  # float64: lanes / 2 doubles a vector
    if few:  # halved where a group fills at most half of one (of more than 4 doubles)
        bw = bw // 2 if og <= bw // 2 and bw > 4 else bw
        assert (d["MB"], d["BW"]) == (2 if og > bw or bw < 8 else 1, bw)  # 8 lanes at least
    else:
        assert (d["MB"], d["BW"]) == (2, lanes // 2)


@pytest.mark.parametrize("lanes", (8, 16))
@pytest.mark.parametrize("by_taps", (True, False))
def test_blocked_pack_kernels(monkeypatch, lanes, by_taps):
    """The weight packs and the weight-gradient unpack both ways (per lane, per chunk of taps;
    the device picks one per view): chunks of 5 taps (chunks start mid-channel and mid-row),
    12 and 29 output channels (a part-filled block, a part-filled group of LG lanes), a weight
    that is a strided view (every other input channel of a wider tensor), stride 2 (the input
    gradient's phases pack strided tap views); float64 against NumPy."""
    _use(f"blocked:{lanes}")
    monkeypatch.setattr(conv_algorithms, "BLOCK_PACK_BY_TAPS", by_taps)
    monkeypatch.setattr(conv_algorithms, "BLOCK_PACK_ELEMS", 5 * lanes * 2)
    for o, stride in ((12, 1), (29, 2)):
        x, w, b = _data(2, 7, 6, 5, o, 7, 3, 3)
        wide = np.zeros((o, 14, 3, 3))
        wide[:, ::2] = w
        wb = clgrad.tensor(wide, dtype=clgrad.float64, requires_grad=True)
        wv = wb[:, ::2]
        xt = clgrad.tensor(x, dtype=clgrad.float64, requires_grad=True)
        y = conv2d(xt, wv, None, stride=stride, padding=1)
        gout = np.random.default_rng(1).standard_normal(tuple(y.shape))
        y.backward(clgrad.tensor(gout, dtype=clgrad.float64))
        ry, rgx, rgw, _ = ref_conv(x, w, None, gout, stride=stride, padding=1)
        np.testing.assert_allclose(y.detach().numpy(), ry, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(xt.grad.numpy(), rgx, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(wb.grad.numpy()[:, ::2], rgw, rtol=1e-10, atol=1e-10)
        np.testing.assert_array_equal(wb.grad.numpy()[:, 1::2], 0)
        assert set(backends.last_conv_algorithms.values()) == {"blocked"}


@pytest.mark.parametrize("lanes", (8, 16))
@pytest.mark.parametrize("tiles", (3, 1 << 20))
def test_blocked_forward_tiles_per_group(monkeypatch, lanes, tiles):
    """Several pixel tiles per forward work-group (BLOCK_FWD_FMAS: 3 tiles' worth, a last
    work-group with fewer; all tiles in one) and several planes per pad_input item, on a
    stride-2 layer (its input gradient's phases too), float64 against NumPy."""
    _use(f"blocked:{lanes}")
    mb, px, _ = conv_algorithms.BLOCK_TILES[lanes]
    monkeypatch.setattr(conv_algorithms, "BLOCK_FWD_FMAS", tiles * mb * px * 6 * 9)
    monkeypatch.setattr(conv_algorithms, "FILL_GROUPS", 1)
    monkeypatch.setattr(conv_algorithms, "_units", lambda dev: 1)
    for stride in (1, 2):
        got, ref = _run(*_data(3, 6, 9, 7, 11, 6, 3, 3), dtype=clgrad.float64, padding=1,
                        stride=stride)
        _close(got, ref, 1e-10)
        assert set(backends.last_conv_algorithms.values()) == {"blocked"}


@pytest.mark.parametrize("lanes", (8, 16))
def test_blocked_forward_fused_pack(monkeypatch, lanes):
    """blocked_fwd_fused (each work-group packs its own weight block, then all pixels):
    forced on small problems (partial blocks, a pixel tail, bias, groups, a strided weight
    view, dilation), float64 against NumPy."""
    _use(f"blocked:{lanes}")
    monkeypatch.setattr(conv_algorithms, "BLOCK_FUSE_BYTES", 0)
    monkeypatch.setattr(conv_algorithms, "_units", lambda dev: 1)
    fused = []
    real = conv_algorithms._fuse_pack
    monkeypatch.setattr(conv_algorithms, "_fuse_pack",
                        lambda *a: fused.append(real(*a)) or fused[-1])
    for groups, dil in ((1, 1), (2, 2)):
        cg = 10 // groups
        xs, ws, bs = _data(3, 10, 7, 6, 37 - (37 % groups), cg, 3, 3)
        wide = np.zeros(ws.shape[:3] + (6,))
        wide[..., ::2] = ws
        wv = clgrad.tensor(wide, dtype=clgrad.float64)[..., ::2]
        y = conv2d(clgrad.tensor(xs, dtype=clgrad.float64), wv,
                   clgrad.tensor(bs, dtype=clgrad.float64), padding=2, dilation=dil,
                   groups=groups)
        ref = ref_conv(xs, ws, bs, padding=2, dilation=dil, groups=groups)
        np.testing.assert_allclose(y.numpy(), ref, rtol=1e-10, atol=1e-10)
        assert fused and fused[-1] is True
        assert backends.last_conv_algorithms["forward"] == "blocked"


@pytest.mark.parametrize("lanes", (8, 16))
@pytest.mark.parametrize("kwargs", [
    dict(stride=2, padding=0),  # phases with padding 0 and -1 (their shared copy's offsets)
    dict(stride=(2, 3), padding=(1, 2), dilation=(2, 1)),
    dict(stride=3, padding=1),  # phases that no tap reaches at kernel 2 (zero gradient)
    dict(stride=2, padding=2, dilation=3),
], ids=("s2p0", "s23-p12-d21", "s3-k2", "s2p2d3"))
def test_blocked_strided_input_gradient_phases(lanes, kwargs):
    """A strided layer's input gradient as phase problems sharing one padded copy of the
    output gradient (conv_algorithms.blocked_phases), float64 against NumPy."""
    _use(f"blocked:{lanes}")
    k = 2 if kwargs["stride"] == 3 else 3
    got, ref = _run(*_data(2, 5, 11, 10, 9, 5, k, k), dtype=clgrad.float64, **kwargs)
    _close(got, ref, 1e-10)
    assert set(backends.last_conv_algorithms.values()) == {"blocked"}


def test_cpu_auto_measures_blocked(monkeypatch, tmp_path):
    """On CPUs 'auto' runs the faster of implicit and blocked for a conv of at least
    CPU_TUNE_MIN_MACS multiply-adds, measured once per pass and cached in conv_algos.json;
    the result is right whichever wins."""
    if clgrad.default_device().kind != "cpu":
        pytest.skip("CPU rule")
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(conv_gpu, "_TUNED", {})
    monkeypatch.setattr(conv_gpu, "CPU_TUNE_MIN_MACS", 1 << 16)
    _use("auto")
    got, ref = _run(*_data(2, 16, 6, 6, 24, 16, 3, 3), padding=1, stride=(1, 2))
    _close(got, ref, 1e-4)
    import json
    tuned = json.loads((tmp_path / "conv_algos.json").read_text())
    entries = {p: v for k, v in tuned.items()
               if k.endswith(f"| implicit,blocked v{conv_gpu.CPU_TUNE_VERSION}")
               for p in ("forward", "grad_input", "grad_weight") if f"| {p} " in k}
    assert set(entries) == {"forward", "grad_input", "grad_weight"}, tuned
    for pass_name, e in entries.items():
        assert set(e["ms"]) == {"implicit", "blocked"}
        assert e["algo"] == min(e["ms"], key=e["ms"].get)
        assert backends.last_conv_algorithms[pass_name] == e["algo"]


@pytest.mark.parametrize("kind", ("narrow", "step", "transpose"))
def test_pointwise_runs_1x1(kind):
    """On CPUs 'auto' runs every pass of an unpadded 1 x 1 conv as one GEMM, also when the
    input's H, W do not merge into one stride (transposed: it is copied first); values
    against NumPy."""
    got, ref = _run(*_data(3, 6, 5, 4, 8, 3, 1, 1, seed=2), kind=kind, groups=2)
    _close(got, ref, 1e-4)
    if clgrad.default_device().kind == "cpu":
        assert set(backends.last_conv_algorithms.values()) == {"pointwise"}


@pytest.mark.parametrize("split", (False, True))
@pytest.mark.parametrize("case", [  # (N, C, H, W, O, groups, stride)
    (5, 12, 1, 1, 7, 1, 1),  # 1 x 1 maps (squeeze-excitation)
    (4, 12, 1, 1, 8, 2, 1),  # grouped
    (3, 8, 3, 3, 6, 1, 3),  # a stride that leaves 1 x 1 outputs
], ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("kind", ("narrow", "transpose"))
def test_pointwise_gemm_path_on_1x1_maps(monkeypatch, case, split, kind):
    """The batched-GEMM pointwise path (GPUs; forced here with PW_CPU off) on 1 x 1 outputs:
    one GEMM per group over the batch's rows (split along K where few tiles: forced both
    ways), the weight gradient one GEMM of depth N; bias and no bias; float64 against
    NumPy."""
    n, c, h, w, o, g, s = case
    monkeypatch.setattr(conv_algorithms, "PW_CPU", False)
    monkeypatch.setattr(conv_algorithms, "_few_tiles", lambda tiles, dev: split)
    _use("pointwise")
    for bias in (True, False):
        got, ref = _run(*_data(n, c, h, w, o, c // g, 1, 1, bias=bias, seed=11), kind=kind,
                        dtype=clgrad.float64, groups=g, stride=s)
        _close(got, ref, 1e-10)
        assert set(backends.last_conv_algorithms.values()) == {"pointwise"}


def test_weight_grad_is_one_tensor_and_accumulates():
    x, w, b = _data(2, 4, 6, 6, 4, 2, 3, 3)
    base = clgrad.tensor(np.concatenate([w, w]), requires_grad=True)
    wv = base.narrow(0, 4, 4)  # the weight is itself a view of a larger parameter
    xt, bt = clgrad.tensor(x), clgrad.tensor(b, requires_grad=True)
    g = np.random.default_rng(1).standard_normal((2, 4, 6, 6))
    for _ in range(2):
        conv2d(xt, wv, bt, padding=1, groups=2).backward(clgrad.tensor(g))
    _, _, gw, gb = ref_conv(x, w, b, g, padding=1, groups=2)
    assert tuple(base.grad.shape) == (8, 2, 3, 3)
    np.testing.assert_allclose(base.grad.numpy()[4:], 2 * gw, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(base.grad.numpy()[:4], 0)
    np.testing.assert_allclose(bt.grad.numpy(), 2 * gb, rtol=1e-4, atol=1e-4)


def test_empty_batch_and_channels():
    w = clgrad.tensor(np.ones((6, 2, 3, 3)), requires_grad=True)
    b = clgrad.tensor(np.arange(6.0), requires_grad=True)
    x = clgrad.zeros((0, 4, 5, 5), dtype=clgrad.float64, requires_grad=True)
    y = conv2d(x, w, b, groups=2)
    assert tuple(y.shape) == (0, 6, 3, 3)
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), 0)
    np.testing.assert_array_equal(b.grad.numpy(), 0)
    x = clgrad.zeros((2, 0, 5, 5), dtype=clgrad.float64, requires_grad=True)
    w0 = clgrad.zeros((6, 0, 3, 3), dtype=clgrad.float64, requires_grad=True)
    y = conv2d(x, w0, b)  # no input channel: the bias alone
    np.testing.assert_array_equal(y.detach().numpy(), np.broadcast_to(np.arange(6.0)[:, None, None],
                                                              (2, 6, 3, 3)))


def test_im2col_workspace_chunks_over_batch():
    backends.conv_algorithm = "im2col"
    x, w, b = _data(5, 4, 9, 9, 6, 2, 3, 3)
    backends.conv_workspace_limit = 4 * 4 * 9 * 81 * 2  # two samples per chunk
    before = launch_count()
    got, ref = _run(x, w, b, padding=1, groups=2)
    assert launch_count() - before > 10
    _close(got, ref, 1e-4)


def test_algorithm_setting_and_observability(monkeypatch):
    x, w, _ = _data(1, 2, 5, 5, 2, 1, 3, 3)
    backends.conv_algorithm = "direct"
    conv2d(clgrad.tensor(x), clgrad.tensor(w), groups=2)
    assert backends.last_conv_algorithm == "direct"
    backends.conv_algorithm = "fastest"
    with pytest.raises(ValueError, match="conv_algorithm.*'fastest'"):
        conv2d(clgrad.tensor(x), clgrad.tensor(w), groups=2)
    backends.conv_algorithm, backends.conv_implicit_variant = "auto", "tpu"
    with pytest.raises(ValueError, match="conv_implicit_variant.*'tpu'"):
        conv2d(clgrad.tensor(x), clgrad.tensor(w), groups=2)
    monkeypatch.setenv("CLGRAD_CONV_ALGO", "im2col")
    try:
        assert importlib.reload(backends).conv_algorithm == "im2col"
    finally:
        monkeypatch.delenv("CLGRAD_CONV_ALGO")
        importlib.reload(backends)


# -- errors, raised before any launch ---------------------------------------------------------
def _t(*shape, dtype=clgrad.float32):
    return clgrad.zeros(shape, dtype=dtype)


ERRORS = [  # (input, weight, bias, kwargs, exception, message pattern)
    (_t(2, 6, 8, 8), _t(4, 2, 3, 3), None, dict(groups=0), RuntimeError,
     r"non-positive groups.*groups=0"),
    (_t(2, 6, 8, 8), _t(4, 6, 3, 3), None, dict(stride=(1, 0)), RuntimeError,
     r"non-positive stride.*\[1, 0\]"),
    (_t(2, 6, 8, 8), _t(4, 6, 3, 3), None, dict(dilation=0), RuntimeError,
     r"dilation should be greater than zero.*\[0, 0\]"),
    (_t(2, 6, 8, 8), _t(4, 6, 3, 3), None, dict(padding=(-1, 2)), RuntimeError,
     r"negative padding.*\[-1, 2\]"),
    (_t(2, 6, 8, 8), _t(4, 6, 3, 3), None, dict(padding="full"), RuntimeError,
     r"padding 'valid', 'same'.*'full'"),
    (_t(2, 6, 8, 8), _t(4, 6, 3, 3), None, dict(padding="same", stride=2), RuntimeError,
     r"'same' is not supported for strided.*\[2, 2\]"),
    (_t(6, 8), _t(4, 6, 3, 3), None, {}, RuntimeError, r"3-D \(unbatched\) or 4-D.*\[6, 8\]"),
    (_t(1, 2, 6, 8, 8), _t(4, 6, 3, 3), None, {}, RuntimeError, r"4-D.*\[1, 2, 6, 8, 8\]"),
    (_t(2, 6, 8, 8), _t(4, 6, 3), None, {}, RuntimeError, r"4-D weight.*\[4, 6, 3\]"),
    (_t(2, 6, 8, 8), _t(4, 6, 0, 3), None, {}, RuntimeError, r"kernel of positive size"),
    (_t(2, 6, 8, 8), _t(4, 1, 3, 3), None, dict(groups=4), RuntimeError,
     r"input has 6 channels, which is not divisible by groups=4"),
    (_t(2, 8, 8, 8), _t(6, 2, 3, 3), None, dict(groups=4), RuntimeError,
     r"groups=4, expected weight to be divisible by 4 at dimension 0.*\[6, 2, 3, 3\]"),
    (_t(2, 8, 8, 8), _t(4, 3, 3, 3), None, dict(groups=2), RuntimeError,
     r"to have 6 channels, but got 8 channels"),
    (_t(2, 6, 8, 8), _t(0, 6, 3, 3), None, {}, RuntimeError,
     r"groups=1, expected weight to be at least 1 at dimension 0.*\[0, 6, 3, 3\]"),
    (_t(2, 6, 8, 8), _t(0, 3, 3, 3), None, dict(groups=2), RuntimeError,
     r"groups=2, expected weight to be at least 2 at dimension 0.*\[0, 3, 3, 3\]"),
    (_t(2, 6, 8, 8), _t(4, 6, 3, 3), _t(5), {}, RuntimeError,
     r"bias to be 1-dimensional with 4 elements.*\[5\]"),
    (_t(2, 6, 2, 8), _t(4, 6, 3, 3), None, dict(dilation=(2, 1), padding=1), RuntimeError,
     r"padded input size per channel: \(4 x 10\). Kernel size: \(5 x 3\)"),
    (_t(2, 6, 8, 8), _t(4, 6, 3, 3, dtype=clgrad.float64), None, {}, RuntimeError,
     r"same dtype.*float32.*float64"),
    (_t(2, 6, 8, 8), _t(4, 6, 3, 3), _t(4, dtype=clgrad.float64), {}, RuntimeError,
     r"same dtype.*bias clgrad.float64"),
    (_t(2, 6, 8, 8, dtype=clgrad.int32), _t(4, 6, 3, 3, dtype=clgrad.int32), None, {},
     RuntimeError, r"float32 or float64.*int32"),
    (_t(2, 6, 8, 8), _t(4, 6, 3, 3), None, dict(stride=(1, 2, 3)), RuntimeError,
     r"stride to be a single integer value or a list of 2 values.*\[1, 2, 3\]"),
    (np.zeros((2, 6, 8, 8)), _t(4, 6, 3, 3), None, {}, TypeError, r"input to be a Tensor"),
]


@pytest.mark.parametrize("x,w,b,kwargs,exc,msg", ERRORS, ids=lambda v: None)
def test_errors_before_any_launch(x, w, b, kwargs, exc, msg):
    before = launch_count()
    with pytest.raises(exc, match=msg):
        conv2d(x, w, b, **kwargs)
    assert launch_count() == before


def test_no_output_channels_is_refused_as_pytorch():
    """A weight with fewer output channels than groups (0 of them) is refused as PyTorch refuses
    it, not answered with an empty (N, 0, oH, oW) tensor (the same call twice: the checks'
    cache and the fast path must refuse it too)."""
    for _ in range(2):
        with pytest.raises(RuntimeError, match="expected weight to be at least 1 at dim"):
            conv2d(_t(1, 1, 5, 5), _t(0, 1, 2, 2))
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="expected weight to be at least 1 at dim"):
        torch.nn.functional.conv2d(torch.ones(1, 1, 5, 5), torch.ones(0, 1, 2, 2))


def test_problem_packs_conv_t():
    """Problem.pack() is conv_t of kernels/conv.h: the same size, the fields in its order."""
    p = Problem(*range(1, 17), uh=17, uw=18, x=tuple(range(19, 25)), k=tuple(range(25, 31)),
                y=tuple(range(31, 37)), boff=37, bs=38, bias=39)
    tiles = Tiles(*range(40, 51))
    out = clgrad.zeros(8, dtype=clgrad.int64)
    dev = out.device.opencl
    dev.launch(dev.kernel("conv_igemm_cpu.cl", "conv_t_probe", defines_for(clgrad.float32)),
               (1,), (1,), p.pack(tiles), out._storage.buffer)
    assert len(p.pack(tiles)) == 50 * 8
    assert out.tolist() == [len(p.pack(tiles)), 1, 18, 19, 36, 39, 40, 50]


def test_depthwise_plans_count_the_kernels_own_local_memory(monkeypatch):
    """A plan's local buffers plus what the kernel uses by itself (CL_KERNEL_LOCAL_MEM_SIZE)
    must fit: on the H200 a weight-gradient plan whose three buffers added to exactly the
    device's 48 KiB failed its launch with OUT_OF_RESOURCES. With the kernel's own use counted
    the planner shrinks its tiles or gives up, and conv2d falls back to another algorithm."""
    from clgrad.ops.conv import algorithms as alg
    from clgrad.ops.conv.problem import Problem
    from clgrad.runtime import Device
    d0 = clgrad.default_device()
    dev = Device(d0.cl_device, d0.platform_index, d0.device_index)
    p = Problem(n=64, g=4, c=4, h=28, w=28, o=8, oh=28, ow=28, kh=3, kw=3, sh=1, sw=1, dh=1,
                dw=1, ph=1, pw=1)
    plan = alg._plan_dw_wgrad(p, clgrad.float32, dev)
    need = sum(alg._up(b, alg.LOCAL_ALIGN) for b in plan.local)
    dev.local_mem_size = need + dev.kernel_local_mem("conv_dw_cpu.cl", "dw_wgrad",
                                                     {"T": "float", "IS_FLOAT": 1})
    assert alg._plan_dw_wgrad(p, clgrad.float32, dev).local == plan.local  # fits exactly
    monkeypatch.setitem(vars(dev), "kernel_local_mem", lambda *kernel: 4096)
    smaller = alg._plan_dw_wgrad(p, clgrad.float32, dev)
    assert smaller is None or 4096 + sum(alg._up(b, alg.LOCAL_ALIGN)
                                         for b in smaller.local) <= dev.local_mem_size
    # end to end on that device: forced depthwise still gives the right gradients
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 16, 9, 9))
    w = rng.standard_normal((32, 4, 3, 3))
    g = rng.standard_normal((2, 32, 9, 9))
    xt = clgrad.tensor(x, dtype=clgrad.float32, device=dev, requires_grad=True)
    wt = clgrad.tensor(w, dtype=clgrad.float32, device=dev, requires_grad=True)
    _use("depthwise")
    monkeypatch.setitem(vars(dev), "kernel_local_mem", lambda *kernel: dev.local_mem_size)
    y = conv2d(xt, wt, padding=1, groups=4)        # no depthwise plan fits: a fallback runs
    y.backward(clgrad.tensor(g, dtype=clgrad.float32, device=dev))
    want, gx, gw, _ = ref_conv(x, w, np.zeros(32), g, padding=1, groups=4)
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(xt.grad.numpy(), gx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(wt.grad.numpy(), gw, rtol=1e-4, atol=1e-4)
    assert backends.last_conv_algorithms["grad_weight"] != "depthwise"


# -- wgrad_reduce's 2-D launch (issue 23, helper h8) ------------------------------------------
def test_weight_and_bias_grads_over_65535_rows_match_numpy():
    """Depthwise with 66000 channels: g*o rows exceed one launch row's 65535, so the reduce
    kernel's row loop runs; every channel's 3x3 weight gradient and bias gradient checked."""
    rng = np.random.default_rng(3)
    n, c = 2, 66000
    xn = rng.standard_normal((n, c, 3, 3)).astype(np.float32)
    wn = rng.standard_normal((c, 1, 3, 3)).astype(np.float32)
    gn = rng.standard_normal((n, c, 3, 3)).astype(np.float32)
    x = clgrad.from_numpy(xn)
    w = clgrad.from_numpy(wn).requires_grad_()
    b = clgrad.zeros(c).requires_grad_()
    y = clgrad.nn.functional.conv2d(x, w, b, padding=1, groups=c)
    y.backward(clgrad.from_numpy(gn))
    xp = np.pad(xn.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((c, 3, 3))
    for kh in range(3):
        for kw in range(3):
            ref[:, kh, kw] = (gn * xp[:, :, kh:kh + 3, kw:kw + 3]).sum(axis=(0, 2, 3))
    np.testing.assert_allclose(w.grad.numpy()[:, 0], ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(b.grad.numpy(), gn.astype(np.float64).sum(axis=(0, 2, 3)),
                               rtol=1e-4, atol=1e-4)


# -- the pointwise kernels of CPUs (kernels/conv_pw_cpu.cl; issue 23, helper h15) -------------
PW_CASES = [  # (N, C, H, W, O, groups, bias): channels no multiple of the lanes, odd maps
    (1, 5, 3, 5, 7, 1, True),  # batch 1, 15 pixels: one partial column tile
    (3, 37, 4, 4, 53, 1, True),  # 4 x 4 maps: columns over samples, partial row tile
    (2, 12, 6, 6, 18, 3, False),  # grouped pointwise (ShuffleNet / ResNeXt)
    (8, 29, 1, 1, 40, 1, True),  # 1 x 1 maps (squeeze-excitation): samples are the columns
    (4, 20, 16, 16, 13, 1, True),  # 1024 pixels of whole vectors: pw_wgrad's dot products
    (2, 18, 8, 8, 26, 2, False),  # grouped, 128 pixels
    (3, 300, 4, 4, 7, 1, False),  # depth above KC: partial sums through C
    (2, 20, 33, 31, 24, 1, True),  # a large odd map: partial column tiles at 1023 pixels
]


@pytest.mark.parametrize("dtype", (clgrad.float32, clgrad.float64), ids=("f32", "f64"))
@pytest.mark.parametrize("lanes", (8, 16))
@pytest.mark.parametrize("kind", ("contig", "narrow", "step"))
@pytest.mark.parametrize("case", PW_CASES, ids=lambda c: "x".join(map(str, c[:6])))
def test_pointwise_cpu_kernels_vs_numpy(monkeypatch, case, kind, lanes, dtype):
    """pw_gemm and pw_wgrad with 8 and 16 float lanes (AVX2's and AVX-512's tiles, forced on
    any device), float32 and float64, on contiguous inputs, views with an offset (narrow) and
    strided pixels (step: every other column, no vector loads), against float64 NumPy:
    forward, input, weight and bias gradients."""
    n, c, h, w, o, g, bias = case
    monkeypatch.setattr(conv_algorithms, "PW_LANES", lanes)
    _use("pointwise")
    got, ref = _run(*_data(n, c, h, w, o, c // g, 1, 1, bias=bias, seed=5), kind=kind,
                    dtype=dtype, groups=g)
    _close(got, ref, 1e-4 if dtype is clgrad.float32 else 1e-10)
    assert set(backends.last_conv_algorithms.values()) == {"pointwise"}


@pytest.mark.parametrize("dot_min", (0, 1 << 40), ids=("pw_wgrad", "pw_gemm"))
@pytest.mark.parametrize("lanes", (8, 16))
def test_pointwise_weight_gradient_both_kernels(monkeypatch, dot_min, lanes):
    """The weight gradient by pw_wgrad (dot products over every sample's pixels) and by
    pw_gemm (depth over (sample, pixel)) on the same problem, float64 against NumPy; a weight
    that is a strided view (every other input channel of a wider tensor) and grouped."""
    monkeypatch.setattr(conv_algorithms, "PW_LANES", lanes)
    monkeypatch.setattr(conv_algorithms, "PW_DOT_MIN", dot_min)
    _use("pointwise")
    x_np, w_np, b_np = _data(3, 14, 4, 8, 22, 7, 1, 1, seed=9)
    x = clgrad.tensor(x_np, dtype=clgrad.float64, requires_grad=True)
    wbig = clgrad.tensor(np.repeat(w_np, 2, axis=1), dtype=clgrad.float64, requires_grad=True)
    w = wbig[:, ::2]
    b = clgrad.tensor(b_np, dtype=clgrad.float64, requires_grad=True)
    y = conv2d(x, w, b, groups=2)
    gout = np.random.default_rng(1).standard_normal(tuple(y.shape))
    y.backward(clgrad.tensor(gout, dtype=clgrad.float64))
    ry, rgx, rgw, rgb = ref_conv(x_np, w_np, b_np, gout, groups=2)
    np.testing.assert_allclose(y.detach().numpy(), ry, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(x.grad.numpy(), rgx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(wbig.grad.numpy()[:, ::2], rgw, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(wbig.grad.numpy()[:, 1::2], 0)
    np.testing.assert_allclose(b.grad.numpy(), rgb, rtol=1e-10, atol=1e-10)


def test_pointwise_forward_is_one_launch_with_bias():
    """On CPUs the pointwise forward is one pw_gemm launch for the whole batch, the bias added
    in it (the batched gemm needed a bias fill first)."""
    if clgrad.default_device().kind != "cpu":
        pytest.skip("CPU kernels")
    _use("pointwise")
    x_np, w_np, b_np = _data(4, 24, 4, 4, 40, 24, 1, 1, seed=3)
    x, w, b = (clgrad.tensor(v) for v in (x_np, w_np, b_np))
    conv2d(x, w, b)
    n0 = launch_count()
    y = conv2d(x, w, b)
    assert launch_count() - n0 == 1
    np.testing.assert_allclose(y.numpy(), ref_conv(x_np, w_np, b_np), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("lanes", (8, 16))
def test_pointwise_weight_gradient_sample_chunks(monkeypatch, lanes):
    """pw_wgrad over a large batch in chunks of samples (PW_DOT_CHUNK: 1, 2 and all samples
    per chunk; 5 samples: a short last chunk), their partial sums added by reduce.sum_into
    into a grouped weight gradient; float64 against NumPy."""
    monkeypatch.setattr(conv_algorithms, "PW_LANES", lanes)
    monkeypatch.setattr(conv_algorithms, "PW_DOT_MIN", 0)
    _use("pointwise")
    x, w, b = _data(5, 12, 4, 4, 10, 6, 1, 1, seed=4)
    per_sample = 16 * (10 // 2 + 12 // 2) * 8  # bytes of one sample's rows (g and x), float64
    for chunk in (1, 2 * per_sample, 1 << 40):
        monkeypatch.setattr(conv_algorithms, "PW_DOT_CHUNK", chunk)
        got, ref = _run(x, w, b, kind="narrow", dtype=clgrad.float64, groups=2)
        _close(got, ref, 1e-10)


@pytest.mark.parametrize("lanes", (8, 16))
@pytest.mark.parametrize("kind", ("contig", "narrow", "transpose"))
@pytest.mark.parametrize("case", [
    (2, 6, 7, 9, 8, 1, 2),  # odd map: the last row and column are read
    (3, 8, 11, 10, 4, 2, 3),  # grouped, stride 3: a map no multiple of the stride
    (1, 5, 5, 5, 7, 1, (2, 3)),  # unequal strides
    (2, 64, 32, 32, 96, 1, 2),  # a ResNeXt shortcut's shape (smaller): 16 x 16 out
], ids=lambda c: "x".join(map(str, c)))
def test_pointwise_strided_1x1_vs_numpy(monkeypatch, case, kind, lanes):
    """A 1 x 1 conv with stride runs pointwise in every pass on CPUs (ResNet / ResNeXt
    shortcuts: the implicit GEMM took 3-7x PyTorch's time): the forward and weight gradient
    read x subsampled (gathered into a dense copy where its pixels do not merge), the input
    gradient writes every s-th pixel and zeros between (no phase problems); float64 against
    NumPy, both lane counts."""
    n, c, h, w, o, g, s = case
    monkeypatch.setattr(conv_algorithms, "PW_LANES", lanes)
    got, ref = _run(*_data(n, c, h, w, o, c // g, 1, 1, seed=8), kind=kind,
                    dtype=clgrad.float64, groups=g, stride=s)
    _close(got, ref, 1e-10)
    if clgrad.default_device().kind == "cpu":
        assert set(backends.last_conv_algorithms.values()) == {"pointwise"}


@pytest.mark.parametrize("lanes", (8, 16))
@pytest.mark.parametrize("case", [  # (N, C, H, W, O, groups)
    (3, 20, 5, 7, 24, 1),  # 35 pixels: a partial pixel tile, 16 + 4 channels
    (2, 40, 9, 9, 18, 2),  # grouped, 20 channels a group
    (4, 16, 8, 8, 33, 1),  # 8 x 8 maps, one whole channel tile
], ids=lambda c: "x".join(map(str, c)))
def test_pointwise_weight_gradient_transposed(monkeypatch, case, lanes):
    """The weight gradient of small maps as pw_transpose (x to (g, n, pixel, c), tiles of 16
    channels x PW_TP pixels, partial ones included) then pw_gemm with whole vectors along
    c: float64 against NumPy, an input that is a narrowed view; the plan is the transposed
    one."""
    if clgrad.default_device().kind != "cpu":
        pytest.skip("CPU kernels")
    monkeypatch.setattr(conv_algorithms, "PW_LANES", lanes)
    monkeypatch.setattr(conv_algorithms, "PW_DOT_MIN", 0)
    monkeypatch.setattr(conv_algorithms, "PW_TP", 16)
    monkeypatch.setattr(conv_algorithms, "PW_XT_PIXELS", 1 << 20)
    _use("pointwise")
    n, c, h, w, o, g = case
    got, ref = _run(*_data(n, c, h, w, o, c // g, 1, 1, seed=12), kind="narrow",
                    dtype=clgrad.float64, groups=g)
    _close(got, ref, 1e-10)
    dev = clgrad.default_device()
    kinds = {v[0] for k, v in dev.plans.items() if isinstance(k, tuple) and k[0] == "pw_wgrad"
             and k[2].c == c // g and k[2].h == h and k[2].w == w and k[-1] == 16}
    assert kinds == {"xt"}


@pytest.mark.parametrize("stride", (2, (2, 3), 1))
def test_pointwise_strided_1x1_batched_gemm(monkeypatch, stride):
    """The pointwise algorithm's batched-gemm path (what devices other than CPUs run, forced
    here with PW_CPU off) on strided, grouped 1 x 1 convs and a transposed input: float64
    against NumPy."""
    monkeypatch.setattr(conv_algorithms, "PW_CPU", False)
    _use("pointwise")
    got, ref = _run(*_data(3, 8, 11, 10, 6, 4, 1, 1, seed=13), kind="transpose",
                    dtype=clgrad.float64, groups=2, stride=stride)
    _close(got, ref, 1e-10)
    assert set(backends.last_conv_algorithms.values()) == {"pointwise"}


@pytest.mark.parametrize("width", (8, 16))
def test_pointwise_lanes_follow_the_device_vector_width(monkeypatch, width):
    """Without the PW_LANES override pw_gemm takes its lanes from the device's vector width
    (8: AVX2's 6 x 2 tiles of 8 floats, 16 columns a work item; 16: 6 x 4 of 16, 64 columns),
    forced here by patching the property; values against NumPy."""
    dev = clgrad.default_device()
    if dev.kind != "cpu":
        pytest.skip("CPU kernels")
    monkeypatch.setattr(type(dev), "vector_width", property(lambda self: width))
    _use("pointwise")
    n, c, h, w, o = 3, 23 + width, 8, 8, 19  # a shape no other test plans
    got, ref = _run(*_data(n, c, h, w, o, c, 1, 1, seed=6), kind="contig")
    _close(got, ref, 1e-4)
    fwd = [v for k, v in dev.plans.items() if isinstance(k, tuple) and k[0] == "pw_fwd"
           and k[2].c == c and k[2].h == h]
    assert fwd and all(plan[1][0] == -(-n * h * w // (16 if width == 8 else 64))
                       for plan in fwd)


# -- the CPU depthwise kernels (kernels/conv_dw_cpu.cl): both layouts, both vector widths ------
DW_CASES = [  # (N, C, H, W, multiplier, k, kwargs, forward layout): cv channels in lanes, pp
    # phase planes (windows over DW_CV_WINDOW elements, or a channel multiplier)
    (2, 24, 8, 8, 1, 3, dict(padding=1), "cv"),                     # 3 blocks of 8 lanes
    (2, 32, 8, 8, 1, 3, dict(padding=1), "cv"),                     # 2 of 16 (width 16)
    (1, 136, 5, 5, 1, 3, dict(padding=1, stride=2), "cv"),          # a partial block of 16
    (1, 40, 4, 4, 1, 3, dict(padding=1), "cv"),                     # batch 1, 4x4 maps
    (2, 19, 9, 7, 1, 5, dict(padding=2, stride=2), "cv"),           # odd sizes, stride 2
    (2, 17, 8, 8, 1, 3, dict(padding=1, stride=2), "cv"),           # even sizes, stride 2
    (2, 18, 11, 10, 1, 3, dict(padding=2, dilation=2), "cv"),       # dilation
    (2, 3, 13, 12, 1, 3, dict(padding=(4, 0), stride=(3, 2)), "cv"),  # padding > kernel
    (1, 3, 45, 43, 1, 3, dict(padding=1), "pp"),                    # odd sizes
    (1, 4, 50, 47, 1, 3, dict(padding=1, stride=2), "pp"),          # stride 2 (even/odd planes)
    (1, 3, 45, 47, 1, 5, dict(padding=2, stride=2), "pp"),          # 5x5, stride 2, odd sizes
    (2, 3, 44, 45, 1, 3, dict(padding=(1, 0), stride=(2, 1), dilation=(1, 2)), "pp"),
    (2, 4, 9, 10, 2, 3, dict(padding=1), "pp"),                     # channel multiplier 2
    (2, 4, 31, 30, 3, 5, dict(padding=2, stride=2), "pp"),          # multiplier, stride 2
]


@pytest.mark.parametrize("width", (8, 16))
@pytest.mark.parametrize("dtype", (clgrad.float32, clgrad.float64), ids=("f32", "f64"))
@pytest.mark.parametrize("case", DW_CASES, ids=lambda c: f"{c[:6]}-{c[6]}")
def test_depthwise_cpu_kernels_vs_numpy(case, dtype, width, monkeypatch):
    """Depthwise convs (groups == C, channel multiplier m) with the depthwise algorithm forced:
    forward, input and weight gradient and bias gradient against the float64 NumPy reference,
    on non-contiguous inputs, with the kernels built for AVX2 (8 float lanes) and AVX-512
    (16: WIDE) alike; every pass must have run the depthwise kernels (no fallback), the
    forward in the layout the case is for."""
    from clgrad.ops.conv.problem import _check
    from clgrad.runtime import Device
    if clgrad.default_device().kind != "cpu":
        pytest.skip("the CPU depthwise kernels build WIDE only on CPUs")
    monkeypatch.setattr(Device, "vector_width", property(lambda self: width))
    _use("depthwise")
    n, c, h, w, m, k, kwargs, layout = case
    for i, kind in enumerate(("contig", "step", "transpose")):
        got, ref = _run(*_data(n, c, h, w, c * m, 1, k, k, seed=i), kind=kind, dtype=dtype,
                        groups=c, **kwargs)
        _close(got, ref, 1e-4 if dtype == clgrad.float32 else 1e-10)
        assert set(backends.last_conv_algorithms.values()) == {"depthwise"}
    x = clgrad.zeros((n, c, h, w), dtype=dtype)
    p = _check(x, clgrad.zeros((c * m, 1, k, k), dtype=dtype), None, kwargs.get("stride", 1),
               kwargs.get("padding", 0), kwargs.get("dilation", 1), c)
    plan = conv_algorithms._plan_dw(p, dtype, x._storage.device)
    assert plan.tiles.slab == (layout == "cv")


@pytest.mark.parametrize("groups", (2, 64, 256))
def test_depthwise_weight_gradient_split_or_direct(groups):
    """The depthwise weight gradient sums the batch in each work-group and writes gw and gb
    itself where there are groups enough to fill the device (on 2 compute units: 256 groups
    with channels in lanes, 64 with phase planes), else adds batch splits in a second launch
    (2 groups): all equal the reference (input a narrow view), for both kernel layouts."""
    _use("depthwise")
    rng = np.random.default_rng(3)
    for k, h in ((3, 6), (3, 40)):  # channels in lanes, phase planes
        x = rng.standard_normal((5, groups, h, h))
        w = rng.standard_normal((groups, 1, k, k))
        b = rng.standard_normal(groups)
        got, ref = _run(x, w, b, kind="narrow", padding=1, groups=groups)
        _close(got, ref, 1e-4)


def test_cached_choice_follows_the_settings(monkeypatch):
    """_choose keeps its answer per problem and settings: the same conv run again after the
    algorithm setting, the measured table or CLGRAD_CONV_TUNE changed takes the new choice, and
    every pass (a cached one too) records what it ran; the values stay right throughout."""
    from clgrad.ops.conv import choice as conv_mod
    x, w, b = _data(2, 4, 9, 9, 6, 4, 3, 3)
    seen = []
    for algo in ("auto", "direct", "auto", "implicit", "direct"):
        backends.conv_algorithm = algo
        got, ref = _run(x, w, b, padding=1)
        _close(got, ref, 1e-4)
        seen.append(dict(backends.last_conv_algorithms))
    assert seen[0] == seen[2]  # auto's choice, the second time from the cache
    assert set(seen[1].values()) == set(seen[4].values()) == {"direct"}
    assert set(seen[3].values()) == {"implicit"}
    backends.conv_algorithm = "auto"
    dev = clgrad.default_device()

    def chosen():  # _choose's answers kept in the device's plans
        return sum(1 for k in dev.plans if isinstance(k, tuple) and k and
                   k[0] == conv_mod._CHOICE)
    n = chosen()
    monkeypatch.setenv("CLGRAD_CONV_TUNE", "off")  # a new epoch: chosen again, not reused
    got, ref = _run(x, w, b, padding=1)
    _close(got, ref, 1e-4)
    assert chosen() > n
    monkeypatch.setattr(conv_gpu, "_TUNED", {})  # a replaced table: a new key too
    m = chosen()
    _run(x, w, b, padding=1)
    assert chosen() > m


def test_conv_package_face_names_its_modules_ops():
    """clgrad.ops.conv is a package (issue 34: a module per kernel family and idea); its face
    names the ops its modules define, and they compute through it: conv2d and
    conv_transpose2d of a 2 x 2 ones kernel against hand-computed window sums (and PyTorch)."""
    from clgrad.ops import conv
    from clgrad.ops.conv import op, transpose
    assert conv.conv2d is op.conv2d
    assert (conv.conv_transpose2d, conv.conv1d, conv.conv_transpose1d) == (
        transpose.conv_transpose2d, transpose.conv1d, transpose.conv_transpose1d)
    a = np.arange(16.0).reshape(4, 4)
    x = clgrad.tensor(a.reshape(1, 1, 4, 4))
    w = clgrad.ones((1, 1, 2, 2), dtype=clgrad.float64)
    want = a[:-1, :-1] + a[1:, :-1] + a[:-1, 1:] + a[1:, 1:]
    np.testing.assert_array_equal(conv.conv2d(x, w).numpy()[0, 0], want)
    want_t = np.zeros((5, 5))
    for i in range(4):
        for j in range(4):
            want_t[i:i + 2, j:j + 2] += a[i, j]
    np.testing.assert_array_equal(conv.conv_transpose2d(x, w).numpy()[0, 0], want_t)
    torch = pytest.importorskip("torch")
    tx, tw = torch.tensor(a.reshape(1, 1, 4, 4)), torch.ones((1, 1, 2, 2), dtype=torch.float64)
    np.testing.assert_array_equal(conv.conv2d(x, w).numpy(),
                                  torch.nn.functional.conv2d(tx, tw).numpy())
    np.testing.assert_array_equal(conv.conv_transpose2d(x, w).numpy(),
                                  torch.nn.functional.conv_transpose2d(tx, tw).numpy())
