"""Every GEMM tile config and load variant (kernels/matmul.cl) against NumPy on this device.

The GPU configs (GEMM_TILED) run here too, on whatever device the suite uses, so a config the
tuner may pick on a GPU is checked before it ever runs there. Operand layouts pick the
variants (defines): 'c' contiguous rows at an offset of 4 (4-vectors along the last dim),
't' transposed (4-vectors along the other dim), 's' a step-2 view at an odd offset (scalar
loads). Each (config, layouts) case is one program build, so the table covers every load
variant and every config with few builds (PoCL takes seconds per GEMM_TILED build cold).
Shapes are awkward on purpose: 1, 7, 65, 129, and multiples of 4 that are not tile multiples.
"""
import numpy as np
import pytest

import clgrad
from clgrad.ops import matmul as mm

CPU0, CPU1, CPU2, CPU3, CPU4, CPU5 = mm.CPU_CANDIDATES  # CPU3..5: 16-float vectors
# GPU2: the small tiles (the last candidate); GPU3..GPU6: 128x64, 64x128, 128x128 of 8x4 per
# work item, 256x128
GPU0, GPU1, GPU3, GPU4, GPU5, GPU6, GPU2 = mm.GPU_CANDIDATES
# (config, A layout, B layout, C layout): every config at least once; GEMM_TILED A_LOAD and
# B_LOAD 0/1/2 and GEMM_CPU B_PACK 0/1/2 with and without C_VEC each at least once.
CASES = [(CPU0, "c", "c", "c"), (CPU0, "t", "t", "s"), (CPU1, "s", "s", "c"),
         (CPU2, "c", "t", "s"), (CPU3, "c", "c", "c"), (CPU3, "t", "t", "s"),
         (CPU4, "s", "s", "c"), (CPU5, "c", "t", "s"),
         (GPU0, "c", "c", "c"), (GPU1, "t", "t", "c"), (GPU2, "s", "s", "s"),
         (GPU2, "c", "t", "c"), (GPU3, "c", "t", "s"), (GPU4, "t", "c", "c"),
         (GPU5, "s", "c", "t"), (GPU6, "c", "c", "c")]


def _case_id(case):
    cfg, a, b, c = case
    kind, pool = ("cpu", mm.CPU_CANDIDATES) if "MR" in cfg else ("tiled", mm.GPU_CANDIDATES)
    return f"{kind}{pool.index(cfg)}-{a}{b}{c}"


IDS = [_case_id(c) for c in CASES]
SHAPES = [(1, 1, 1), (7, 65, 129), (129, 7, 65), (65, 129, 7), (68, 300, 36), (200, 36, 132)]


def operand(rng, shape, kind, dtype, batch=()):
    """(numpy copy, clgrad view) of ``batch + shape`` laid out as ``kind``."""
    r, c = shape
    nb = int(np.prod(batch))
    if kind == "c":
        st, off, size = (r * c, c, 1), 4, nb * r * c + 4
    elif kind == "t":
        st, off, size = (r * c, 1, r), 0, nb * r * c
    else:
        st, off, size = (2 * r * c, 2 * c, 2), 1, 2 * nb * r * c + 1
    base_np = rng.uniform(-2, 2, size).astype(dtype)
    bst = tuple(st[0] * int(np.prod(batch[i + 1:])) for i in range(len(batch)))
    shp, strides = tuple(batch) + shape, bst + st[1:]
    a_np = np.lib.stride_tricks.as_strided(base_np[off:], shp,
                                           [s * base_np.itemsize for s in strides])
    return a_np.copy(), clgrad.as_strided(clgrad.from_numpy(base_np), shp, strides, off)


def assert_product(c, a, b, alpha=1.0, beta=0.0, c0=None):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = alpha * np.matmul(a64, b64) + (beta * c0 if beta else 0)
    scale = np.matmul(np.abs(a64), np.abs(b64)).max(initial=0)
    tol = (2e-6 if a.dtype == np.float32 else 1e-13) * (1 + scale + abs(beta) * 2)
    np.testing.assert_allclose(c.numpy(), ref, rtol=0, atol=tol)


@pytest.mark.parametrize("cfg, la, lb, lc", CASES, ids=IDS)
def test_shapes_match_numpy(cfg, la, lb, lc):
    rng = np.random.default_rng(0)
    for m, k, n in SHAPES:
        a_np, a = operand(rng, (m, k), la, np.float32)
        b_np, b = operand(rng, (k, n), lb, np.float32)
        _, c = operand(rng, (m, n), lc, np.float32)
        mm.gemm(c, a, b, tiles_override=cfg)
        assert_product(c, a_np, b_np)


@pytest.mark.parametrize("cfg, la, lb, lc", CASES, ids=IDS)
def test_batched_stride0_alpha_beta(cfg, la, lb, lc):
    """Batch dims (stride 0 on A), alpha and beta; beta == 0 ignores NaNs in C."""
    rng = np.random.default_rng(1)
    m, k, n = 33, 20, 40
    a_np, a = operand(rng, (m, k), la, np.float32, batch=(3,))
    a_np, a = a_np[None].repeat(2, 0), a.unsqueeze(0).expand(2, 3, m, k)
    b_np, b = operand(rng, (k, n), lb, np.float32, batch=(2, 3))
    c0, c = operand(rng, (m, n), lc, np.float32, batch=(2, 3))
    mm.gemm(c, a, b, 0.5, -2.0, tiles_override=cfg)
    assert_product(c, a_np, b_np, 0.5, -2.0, c0)
    clgrad.ops.elementwise.fill_raw(c, float("nan"))
    mm.gemm(c, a, b, tiles_override=cfg)
    assert_product(c, a_np, b_np)


@pytest.mark.parametrize("cfg, la, lb, lc", [CASES[0], CASES[8]], ids=[IDS[0], IDS[8]])
def test_empty_depth_scales_c(cfg, la, lb, lc):
    rng = np.random.default_rng(2)
    c0, c = operand(rng, (5, 8), lc, np.float32)
    mm.gemm(c, operand(rng, (5, 0), la, np.float32)[1], operand(rng, (0, 8), lb, np.float32)[1],
            1.0, 3.0, tiles_override=cfg)
    np.testing.assert_allclose(c.numpy(), 3.0 * c0, rtol=1e-6)


@pytest.mark.parametrize("cfg, la, lb, lc", [CASES[1], CASES[5], CASES[10]],
                         ids=[IDS[1], IDS[5], IDS[10]])
def test_float64(cfg, la, lb, lc):
    if not clgrad.default_device().fp64:
        pytest.skip("no fp64 on this device")
    rng = np.random.default_rng(3)
    a_np, a = operand(rng, (65, 129), la, np.float64)
    b_np, b = operand(rng, (129, 7), lb, np.float64)
    _, c = operand(rng, (65, 7), lc, np.float64)
    mm.gemm(c, a, b, tiles_override=cfg)
    assert_product(c, a_np, b_np)


def test_stored_tiles_of_another_form_are_ignored(tmp_path, monkeypatch):
    """A tiles file written by another clgrad version (an extra key, a missing one, a string)
    must not break gemm: the entry is ignored and the defaults are used."""
    import json
    from clgrad.ops import matmul as mm
    from clgrad.runtime import Device
    d0 = clgrad.default_device()
    dev = Device(d0.cl_device, d0.platform_index, d0.device_index)
    monkeypatch.setenv("CLGRAD_GEMM_TILES", "off")
    default = mm.tiles(dev)                          # the class defaults of this device
    path = tmp_path / "tiles.json"
    monkeypatch.setenv("CLGRAD_GEMM_TILES", str(path))
    bad = [dict(default, EXTRA=4), {k: v for k, v in list(default.items())[1:]},
           {k: "8" for k in default}, ["not", "a", "dict"]]
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    for entry in bad:
        path.write_text(json.dumps({mm.device_key(dev): entry}))
        mm._TUNED.pop(dev, None)
        assert mm.tiles(dev) == default
        got = (clgrad.tensor(a, device=dev) @ clgrad.tensor(a.T.copy(), device=dev)).numpy()
        np.testing.assert_allclose(got, a @ a.T, rtol=1e-6)


@pytest.mark.parametrize("la, lb, lc", [("c", "c", "c"), ("t", "t", "s"), ("s", "s", "c")])
def test_split_k_matches_numpy(la, lb, lc, monkeypatch):
    """GEMM_TILED problems of few tiles are split along K (a linear layer at batch 1): the
    split path is taken (counted) and gives NumPy's product for every layout, batch dims,
    alpha/beta, beta == 0 over NaNs in C, and depths with few divisors."""
    calls = []
    real = mm._gemm_split_k
    monkeypatch.setattr(mm, "_gemm_split_k", lambda *a, **k: calls.append(a[5]) or real(*a, **k))
    rng = np.random.default_rng(4)
    dev = clgrad.default_device()
    for m, k, n in [(1, 1152, 40), (3, 1200, 7), (1, 131 * 3, 5), (9, 1152, 5), (9, 4096, 5)]:
        # GEMV-like (at most SPLIT_MAX_M rows) or deep (K >= SPLIT_DEEP_K): one tile here
        split = m <= mm.SPLIT_MAX_M or k >= mm.SPLIT_DEEP_K
        want = mm._splits(1, k, dev, 1, clgrad.float32) if split else 1
        a_np, a = operand(rng, (m, k), la, np.float32)
        b_np, b = operand(rng, (k, n), lb, np.float32)
        _, c = operand(rng, (m, n), lc, np.float32)
        clgrad.ops.elementwise.fill_raw(c, float("nan"))
        calls.clear()
        mm.gemm(c, a, b, tiles_override=GPU2)
        assert_product(c, a_np, b_np)
        assert calls == ([want] if want > 1 else [])
        assert k % want == 0 and (want == 1 or k // want >= mm.SPLIT_MIN_K)
    assert mm._splits(1, 1152, dev, 1, clgrad.float32) > 1  # the first shape splits
    a_np, a = operand(rng, (2, 1152), la, np.float32, batch=(2,))
    b_np, b = operand(rng, (1152, 9), lb, np.float32, batch=(2,))
    c0, c = operand(rng, (2, 9), lc, np.float32, batch=(2,))
    calls.clear()
    mm.gemm(c, a, b, 0.5, -2.0, tiles_override=GPU2)
    # two tiles (one per batch entry): split where the device has more than 1 compute unit
    want = mm._splits(2, 1152, dev, 1, clgrad.float32)
    assert calls == ([want] if want > 1 else []) and (want > 1) == (dev.compute_units > 1)
    assert_product(c, a_np, b_np, 0.5, -2.0, c0)


def test_split_k_float64_and_float16_not_split():
    dev = clgrad.default_device()
    assert mm._splits(1, 4096, dev, 1, clgrad.float16) == 1
    assert mm._splits(10 ** 6, 4096, dev, 1, clgrad.float32) == 1  # enough tiles already
    if not dev.fp64:
        pytest.skip("no fp64 on this device")
    rng = np.random.default_rng(5)
    a_np, a = operand(rng, (1, 2048), "c", np.float64)
    b_np, b = operand(rng, (2048, 33), "t", np.float64)
    _, c = operand(rng, (1, 33), "c", np.float64)
    mm.gemm(c, a, b, tiles_override=GPU0)
    assert_product(c, a_np, b_np)


def test_split_argument(monkeypatch):
    """split=True takes the split path even where one slice is all (a single reduction
    pass: same values), split=False never splits a GEMV-like problem."""
    calls = []
    real = mm._gemm_split_k
    monkeypatch.setattr(mm, "_gemm_split_k", lambda *a, **k: calls.append(a[5]) or real(*a, **k))
    rng = np.random.default_rng(6)
    a_np, a = operand(rng, (200, 36), "c", np.float32)
    b_np, b = operand(rng, (36, 132), "t", np.float32)
    _, c = operand(rng, (200, 132), "s", np.float32)
    mm.gemm(c, a, b, tiles_override=GPU2, split=True)
    assert calls == [1]
    assert_product(c, a_np, b_np)
    calls.clear()
    a_np, a = operand(rng, (1, 1152), "c", np.float32)
    b_np, b = operand(rng, (1152, 9), "c", np.float32)
    _, c = operand(rng, (1, 9), "c", np.float32)
    mm.gemm(c, a, b, tiles_override=GPU2, split=False)
    assert calls == []
    assert_product(c, a_np, b_np)


def test_split_path_one_slice_rounds_float16_once():
    """The forced split path with one slice (the float16 im2col convolution's, its bias as
    beta * c) rounds alpha * a @ b + beta * c to float16 once, as the unsplit GEMM: every
    element within 2^-11 relative of the float64 value, plus float32's summation error. The
    bias was once added after the product had been rounded (two roundings)."""
    dev = clgrad.default_device()
    if not dev.fp16:
        pytest.skip(f"{dev.name!r} lacks cl_khr_fp16")
    rng = np.random.default_rng(11)
    m, k, n = 40, 36, 48
    a_np = rng.standard_normal((m, k)).astype(np.float16)
    b_np = rng.standard_normal((k, n)).astype(np.float16)
    c0 = (rng.standard_normal((m, n)) * 4).astype(np.float16)
    for alpha, beta in ((1.0, 1.0), (0.5, -2.0), (0.75, 0.0)):
        c = clgrad.tensor(c0, dtype=clgrad.float16)
        mm.gemm(c, clgrad.tensor(a_np, dtype=clgrad.float16),
                clgrad.tensor(b_np, dtype=clgrad.float16), alpha, beta, tiles_override=GPU2,
                split=True)
        ref = (alpha * (a_np.astype(np.float64) @ b_np.astype(np.float64))
               + beta * c0.astype(np.float64))
        absref = (abs(alpha) * (np.abs(a_np.astype(np.float64)) @ np.abs(b_np.astype(
            np.float64))) + abs(beta) * np.abs(c0.astype(np.float64)))
        # one rounding (2^-11 relative) after float32 sums (k * 2^-24 of the absolute sum each)
        bound = 2.0 ** -11 * np.abs(ref) + k * 2.0 ** -24 * absref
        err = np.abs(c.numpy().astype(np.float64) - ref)
        assert np.all(err <= bound), (alpha, beta, float(np.max(err / bound)))


@pytest.mark.parametrize("cfg", mm.GPU_CANDIDATES, ids=lambda c: "x".join(
    str(c[k]) for k in ("TSM", "TSN", "TSK", "WPTM", "WPTN")))
@pytest.mark.parametrize("i32", (True, False), ids=("i32", "i64"))
def test_whole_tiles(cfg, i32, monkeypatch):
    """Sizes that are tile multiples run GEMM_TILED's EXACT variant (no bounds checks), with
    32-bit offsets (I32) or, forced, 64-bit ones: every candidate against NumPy, batched."""
    dev = clgrad.default_device()
    seen, real = [], dev.kernel
    monkeypatch.setitem(vars(dev), "kernel", lambda f, k, d: seen.append(dict(d)) or real(f, k, d))
    if not i32:
        monkeypatch.setattr(mm, "_INT_LIMIT", 0)
    rng = np.random.default_rng(7)
    m, n, k = 2 * cfg["TSM"], cfg["TSN"], 3 * cfg["TSK"]
    a_np, a = operand(rng, (m, k), "c" if i32 else "t", np.float32, batch=(2,))
    b_np, b = operand(rng, (k, n), "t" if i32 else "s", np.float32, batch=(2,))
    c0, c = operand(rng, (m, n), "c", np.float32, batch=(2,))
    mm.gemm(c, a, b, 0.5, 2.0, tiles_override=cfg)
    assert_product(c, a_np, b_np, 0.5, 2.0, c0)
    assert seen and all(d.get("EXACT") == 1 and ("I32" in d) == i32 for d in seen), seen
    seen.clear()
    a_np, a = operand(rng, (m - 1, k), "c", np.float32)  # one row short: checked loads
    b_np, b = operand(rng, (k, n), "c", np.float32)
    _, c = operand(rng, (m - 1, n), "c", np.float32)
    mm.gemm(c, a, b, tiles_override=cfg)
    assert_product(c, a_np, b_np)
    assert seen and all("EXACT" not in d for d in seen), seen
