"""The GPU kernels of clgrad/ops/conv/gpu.py (kernels/conv_dw_gpu.cl) on whatever device runs
the suite (the CPU runtimes too): forward, input and weight gradients against the float64
NumPy reference of test_conv, every pass asserted to have run these kernels, over the tiles
(outputs per work item, work-group sizes, splits) and the problem features they must cover:
channel multiplier, stride, dilation, asymmetric and over-large padding, strided views,
float64."""
import numpy as np
import pytest

import clgrad
import clgrad.backends as backends
from clgrad.ops.conv import gpu as conv_gpu
from clgrad.ops.conv.problem import Problem
from clgrad.ops.conv.algorithms import _reduce
from test_conv import _close, _data, _run

PASSES = {"forward", "grad_input", "grad_weight"}


@pytest.fixture(autouse=True)
def _restore():
    saved = backends.conv_algorithm, {k: dict(v) for k, v in conv_gpu._CFG.items()}
    backends.conv_algorithm = "depthwise_gpu"
    yield
    backends.conv_algorithm = saved[0]
    conv_gpu._CFG.clear()
    conv_gpu._CFG.update(saved[1])


def _tiles(**kw):
    for cfg in conv_gpu._CFG.values():
        cfg.update(kw)


def _check(n, c, h, w, mult, k, kwargs, kind="narrow", dtype=clgrad.float32, tol=1e-4,
           ran=PASSES):
    x, wt, b = _data(n, c, h, w, c * mult, 1, *k)
    got, ref = _run(x, wt, b, kind=kind, dtype=dtype, groups=c, **kwargs)
    _close(got, ref, tol)
    assert {p for p, a in backends.last_conv_algorithms.items() if a == "depthwise_gpu"} \
        >= ran, backends.last_conv_algorithms


CASES = [  # (N, C, H, W, multiplier, (kH, kW), kwargs, view kind)
    (2, 3, 9, 11, 1, (3, 3), dict(padding=1), "narrow"),
    (2, 2, 10, 13, 3, (3, 2), dict(padding=(2, 0), dilation=(1, 2)), "transpose"),
    (1, 4, 12, 9, 1, (3, 3), dict(stride=2, padding=1), "step"),
    (2, 2, 11, 10, 2, (2, 3), dict(stride=(2, 3), dilation=2, padding=(0, 3)), "narrow"),
    (1, 2, 7, 6, 1, (3, 3), dict(padding=5), "contig"),  # padding beyond the kernel
    (2, 3, 8, 8, 1, (1, 1), dict(stride=3), "narrow"),  # input-gradient phases with no tap
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[:6]}-{c[6]}-{c[7]}")
def test_passes_vs_numpy(case):
    n, c, h, w, mult, k, kwargs, kind = case
    _check(n, c, h, w, mult, k, kwargs, kind)


@pytest.mark.parametrize("tiles", [
    dict(fvx=1, fvy=1, fwg=32, wvx=1, wwg=16, wsplit=1),
    dict(fvx=4, fvy=2, fwg=128, wvx=4, wwg=64, wsplit=4),
    dict(fvx=3, fvy=3, fwg=64, wvx=5, wwg=8, wsplit=2),  # wide rows: nwx > work-group
], ids=("1x1", "4x2", "3x3"))
def test_tiles(tiles):
    _tiles(**tiles)
    _check(3, 2, 13, 37, 1, (3, 3), dict(padding=1), "narrow")
    _check(2, 2, 9, 10, 2, (3, 3), dict(stride=2, dilation=(2, 1), padding=2), "transpose")


def test_float64():
    _check(2, 3, 7, 9, 2, (3, 3), dict(padding=1, stride=(1, 2)), "narrow",
           dtype=clgrad.float64, tol=1e-10)


def test_fallback_and_auto_choice():
    # more taps than the weight-gradient kernel holds: that pass gives way, still correct
    _check(1, 2, 10, 10, 1, (9, 9), dict(padding=4), ran={"forward", "grad_input"})
    assert backends.last_conv_algorithms["grad_weight"] != "depthwise_gpu"
    # auto: GPUs take these kernels for few channel pairs per group, CPUs the depthwise ones
    backends.conv_algorithm = "auto"
    _check(1, 4, 6, 6, 1, (3, 3), dict(padding=1), ran=set())
    gpu = clgrad.default_device().kind == "gpu"
    assert set(backends.last_conv_algorithms.values()) == {
        "depthwise_gpu" if gpu else "depthwise"}
    p = Problem(n=1, g=1, c=1, h=9, w=9, o=1, oh=1, ow=1, kh=9, kw=9, sh=1, sw=1, dh=1, dw=1,
                ph=0, pw=0)
    assert conv_gpu.few_channels_algorithm("grad_weight", p, None) == "direct"
    assert conv_gpu.few_channels_algorithm("forward", p, None) == "depthwise_gpu"


# -- igemm_gpu: the implicit GEMM of kernels/conv_igemm_gpu.cl ---------------------------------
IGEMM_CASES = [  # (N, C, H, W, O, (kH, kW), kwargs, view kind): several tiles along every axis
    (3, 12, 9, 11, 140, (3, 3), dict(padding=1, groups=2), "narrow"),  # 70 rows: wide tiles
    (2, 6, 13, 12, 10, (2, 3), dict(stride=(2, 1), dilation=(1, 2), padding=(0, 2)), "step"),
    (1, 4, 10, 9, 8, (3, 3), dict(stride=2, padding=1, groups=2), "transpose"),  # phases
    (2, 16, 6, 7, 20, (3, 3), dict(padding=1), "narrow"),  # 145 weight-gradient columns
    (1, 8, 7, 9, 60, (3, 3), dict(padding=1), "narrow"),  # mid tiles (49..64 rows)
]


@pytest.mark.parametrize("case", IGEMM_CASES, ids=lambda c: f"{c[:6]}-{c[6]}-{c[7]}")
def test_igemm_vs_numpy(case, monkeypatch):
    monkeypatch.setattr(conv_gpu, "_SPLIT_PIXELS", 5)  # several splits of the weight gradient
    backends.conv_algorithm = "igemm_gpu"
    n, c, h, w, o, k, kwargs, kind = case
    x, wt, b = _data(n, c, h, w, o, c // kwargs.get("groups", 1), *k)
    got, ref = _run(x, wt, b, kind=kind, **kwargs)
    _close(got, ref, 1e-4)
    assert set(backends.last_conv_algorithms.values()) == {"igemm_gpu"}


def test_igemm_float64():
    backends.conv_algorithm = "igemm_gpu"
    x, wt, b = _data(2, 4, 7, 9, 6, 2, 3, 3)
    got, ref = _run(x, wt, b, dtype=clgrad.float64, padding=1, stride=2, groups=2)
    _close(got, ref, 1e-10)


def test_measured_1x1_includes_pointwise(monkeypatch, tmp_path):
    """A 1 x 1 unpadded problem: 'auto' on GPUs measures the pointwise batched GEMM beside the
    others in every pass, and its choice computes the conv (against float64 NumPy)."""
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CLGRAD_CONV_TUNE", "on")
    monkeypatch.setattr(conv_gpu, "_TUNE_MIN_MACS", 0)
    monkeypatch.setattr(conv_gpu, "_TUNED", {})
    from clgrad.ops.conv import choice, problem as C
    from clgrad.ops.conv.problem import v5
    x, w, y = clgrad.zeros((2, 8, 5, 6)), clgrad.zeros((6, 8, 1, 1)), clgrad.zeros((2, 6, 5, 6))
    geo = C._check(x, w, None, 1, 0, 1, 1)
    dev = clgrad.default_device()
    probs = {"forward": C._forward_problem(geo, x, w, y, None),
             "grad_input": C._grad_input_problem(geo, y, w, x),
             "grad_weight": geo._replace(x=v5(x, 1))}
    for k, q in probs.items():
        conv_gpu.measured(k, q, dev, clgrad.float32, choice._trial)
    import json
    stored = json.loads(conv_gpu.tune_file().read_text())
    assert len(stored) == 3 and all("pointwise" in e["ms"] for e in stored.values())
    backends.conv_algorithm = "pointwise"
    x, wt, b = _data(2, 8, 5, 6, 6, 8, 1, 1)
    got, ref = _run(x, wt, b, kind="narrow", dtype=clgrad.float32)
    _close(got, ref, 1e-4)
    assert set(backends.last_conv_algorithms.values()) == {"pointwise"}


def test_measured_choice_is_cached(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CLGRAD_CONV_TUNE", "on")
    monkeypatch.setenv("CLGRAD_CONV_DEBUG", "1")
    monkeypatch.setattr(conv_gpu, "_TUNE_MIN_MACS", 0)
    monkeypatch.setattr(conv_gpu, "_TUNED", {})
    from clgrad.ops.conv import choice, problem as C
    x, w = clgrad.zeros((2, 4, 6, 6)), clgrad.zeros((6, 2, 3, 3))
    geo = C._check(x, w, None, 1, 1, 1, 2)
    p = C._forward_problem(geo, x, w, C._as4(clgrad.zeros((2, 6, 6, 6))), None)
    dev = clgrad.default_device()
    algo = conv_gpu.measured("forward", p, dev, clgrad.float32, choice._trial)
    assert algo in conv_gpu.CANDIDATES["forward"]
    assert "measured {" in capsys.readouterr().err
    import json
    stored = json.loads(conv_gpu.tune_file().read_text())
    (entry,) = stored.values()
    # every candidate whose planner takes the 3 x 3 problem (pointwise: 1 x 1 only)
    assert entry["algo"] == algo
    assert set(entry["ms"]) == set(conv_gpu.CANDIDATES["forward"]) - {"pointwise"}
    conv_gpu._TUNED.clear()  # read back from the file: no new measurement
    assert conv_gpu.measured("forward", p, dev, clgrad.float32, choice._trial) == algo
    assert "measured {" not in capsys.readouterr().err
    monkeypatch.setenv("CLGRAD_CONV_TUNE", "off")
    assert conv_gpu.measured("forward", p, dev, clgrad.float32, choice._trial) is None


@pytest.mark.parametrize("kind", ["gpu", "cpu"])
def test_measured_times_bursts_on_gpus(monkeypatch, tmp_path, kind):
    """On GPUs each of a candidate's three timings is BURST back-to-back runs between two
    synchronisations (the step's queue overlaps their host time), its time the burst's
    divided by BURST, and the key says so (" b<BURST>"); elsewhere a timing is one run."""
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(conv_gpu, "_TUNE_MIN_MACS", 0)
    monkeypatch.setattr(conv_gpu, "_TUNED", {})
    dev = clgrad.default_device()
    monkeypatch.setattr(dev, "kind", kind)
    runs, syncs = [], []
    monkeypatch.setattr(dev, "synchronize", lambda: syncs.append(len(runs)))
    clock = iter(range(0, 10 ** 6, 10))  # each perf_counter() call 10 s after the last
    monkeypatch.setattr(conv_gpu.time, "perf_counter", lambda: float(next(clock)))

    def trial(pass_name, geo, dtype, dev_):
        def run(algo):
            runs.append(algo)
            return True
        return run
    p = Problem(2, 1, 4, 6, 6, 6, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1)
    algo = conv_gpu.measured("forward", p, dev, clgrad.float32, trial, ("a", "b"), 0, " t")
    burst = conv_gpu.BURST if kind == "gpu" else 1
    assert runs == ["a", "b"] + (["a"] * burst + ["b"] * burst) * 3
    assert syncs == [2] + [2 + burst * (i + 1) for i in range(6)]  # after each timing
    (key, entry), = [kv for kv in conv_gpu._TUNED.items() if kv[0] != "_"]
    assert key.endswith(" t b4" if kind == "gpu" else " t")
    assert entry["ms"] == {"a": 10e3 / burst, "b": 10e3 / burst} and algo == "a"


@pytest.mark.parametrize("tiles", [(128, 64, 8, 8, 4), (48, 64, 12, 4, 4), (64, 64, 16, 4, 4),
                                   (128, 128, 16, 8, 4)],
                         ids=lambda t: "x".join(map(str, t)))
def test_igemm_tiles(tiles, monkeypatch):
    t = dict(zip(("TSM", "TSN", "TSK", "WPTM", "WPTN"), tiles))
    monkeypatch.setattr(conv_gpu, "_IGEMM", {k: t for k in conv_gpu._IGEMM})
    monkeypatch.setattr(conv_gpu, "_SPLIT_PIXELS", 5)
    backends.conv_algorithm = "igemm_gpu"
    x, wt, b = _data(2, 8, 9, 10, 100, 4, 3, 3)
    got, ref = _run(x, wt, b, padding=(1, 2), groups=2)
    _close(got, ref, 1e-4)
    assert set(backends.last_conv_algorithms.values()) == {"igemm_gpu"}
    # 48 channels either way, a multiple of every depth: taps outer, forward and input grad
    seen = _spy_weight_reads(monkeypatch)
    x, wt, b = _data(1, 48, 6, 7, 48, 48, 3, 3)
    got, ref = _run(x, wt, b, padding=(2, 1), dilation=(2, 1))
    _close(got, ref, 1e-4)
    assert seen == ["copy TAPS_OUTER,W_FLAT"] * 2, seen


def test_64bit_offsets(monkeypatch):
    # the kernels' long-offset variants (planes or pixel counts past 2^31), forced
    monkeypatch.setattr(conv_gpu, "_INT_LIMIT", 0)
    _check(2, 3, 8, 9, 2, (3, 3), dict(padding=1, stride=(2, 1)), "transpose")
    backends.conv_algorithm = "igemm_gpu"
    x, wt, b = _data(2, 4, 7, 9, 6, 2, 3, 3)
    got, ref = _run(x, wt, b, padding=1, groups=2)
    _close(got, ref, 1e-4)
    assert set(backends.last_conv_algorithms.values()) == {"igemm_gpu"}


@pytest.mark.parametrize("kwargs", [dict(stride=1, padding=1, dilation=1, groups=2),
                                    dict(stride=(2, 3), padding=(0, 2), dilation=(1, 2),
                                         groups=1)])
def test_forward_geometry_of_each_pass(kwargs):
    # the measurement cache keys every pass by the forward geometry: grad_input's problem
    # (input and output swapped, padding (k-1)*d - p, insertion = stride) maps back to it
    from clgrad.ops.conv import problem as C
    x, w = clgrad.zeros((2, 4, 9, 11)), clgrad.zeros((6, 4 // kwargs["groups"], 3, 2))
    geo = C._check(x, w, None, kwargs["stride"], kwargs["padding"], kwargs["dilation"],
                   kwargs["groups"])
    y = clgrad.zeros((2, 6, geo.oh, geo.ow))
    pi = C._grad_input_problem(geo, y, w, x)
    assert (pi.h, pi.w, pi.oh, pi.ow, pi.uh, pi.uw) == (geo.oh, geo.ow, 9, 11) + geo[10:12]
    assert conv_gpu.forward_geometry("grad_input", pi) == geo
    assert conv_gpu.forward_geometry("forward", C._forward_problem(geo, x, w, y, None)) == geo


def test_measured_each_pass(monkeypatch, tmp_path):
    # every pass measures its candidates on scratch operands of the forward geometry
    # (conv._trial), keyed by that geometry; grad_input with stride > 1 is not measured
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CLGRAD_CONV_TUNE", "on")
    monkeypatch.setattr(conv_gpu, "_TUNE_MIN_MACS", 0)
    monkeypatch.setattr(conv_gpu, "_TUNED", {})
    from clgrad.ops.conv import choice, problem as C
    from clgrad.ops.conv.problem import v5
    x, w, y = clgrad.zeros((2, 4, 7, 8)), clgrad.zeros((6, 2, 3, 3)), clgrad.zeros((2, 6, 7, 8))
    geo = C._check(x, w, None, 1, 1, 1, 2)
    dev = clgrad.default_device()
    probs = {"forward": C._forward_problem(geo, x, w, y, None),
             "grad_input": C._grad_input_problem(geo, y, w, x),
             "grad_weight": geo._replace(x=v5(x, 2))}
    got = {k: conv_gpu.measured(k, q, dev, clgrad.float32, choice._trial)
           for k, q in probs.items()}
    assert all(a in conv_gpu.CANDIDATES[k] for k, a in got.items()), got
    import json
    stored = json.loads(conv_gpu.tune_file().read_text())
    geo_key = " ".join(f"{k}={v}" for k, v in zip(geo._fields[:16], geo))
    # a key is "<settings.device_key(dev)> | <pass> <dtype> <geometry> | <candidates>" (the
    # device key has one more " | " part where CLGRAD_CPU_VECTOR_WIDTH /
    # CL_CONFIG_CPU_TARGET_ARCH are set)
    from clgrad import settings
    head = settings.device_key(dev) + " | "
    assert all(k.startswith(head) for k in stored)
    assert {k[len(head):].split(" ", 1)[0]: e["algo"] for k, e in stored.items()} == got
    for key, entry in stored.items():  # each pass measured its own candidates (all take geo)
        pass_name = key[len(head):].split(" ", 1)[0]
        cands = ",".join(conv_gpu.CANDIDATES[pass_name])
        assert key.endswith(f"{geo_key} | {cands}")
        assert set(entry["ms"]) == set(conv_gpu.CANDIDATES[pass_name]) - {"pointwise"}
    strided = C._check(x, w, None, 2, 1, 1, 2)
    gi = C._grad_input_problem(strided, clgrad.zeros((2, 6, 4, 4)), w, x)
    assert conv_gpu.measured("grad_input", gi, dev, clgrad.float32, choice._trial) is None


def test_measurement_inside_a_capture_runs_eagerly(monkeypatch, tmp_path):
    """A conv2d whose algorithm is measured (conv_gpu.measured) first met inside a CUDAGraph
    capture: the trial runs must run (and be timed) then, not be recorded into the graph,
    which would replay them every time (20 kernels for the conv's 2) after timing only their
    recording (a meaningless choice, stored in the tuning file). The graph holds the conv's
    own launches and replays its values (NumPy: direct sums)."""
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(conv_gpu, "_TUNED", {})
    monkeypatch.setattr(conv_gpu, "_TUNE_MIN_MACS", 0)
    monkeypatch.setattr(conv_gpu, "CPU_TUNE_MIN_MACS", 0)
    monkeypatch.setenv("CLGRAD_CONV_TUNE", "on")
    monkeypatch.setattr(backends, "conv_algorithm", "auto")  # (this file's fixture sets one)
    from clgrad.runtime import launch_count
    rng = np.random.default_rng(11)
    xn = rng.standard_normal((1, 16, 9, 7)).astype(np.float32)
    wn = rng.standard_normal((16, 16, 3, 3)).astype(np.float32)
    x, w = clgrad.tensor(xn), clgrad.tensor(wn)
    g = clgrad.cuda.CUDAGraph()
    with clgrad.cuda.graph(g):
        y = clgrad.nn.functional.conv2d(x, w, padding=1)
    assert [k for k in conv_gpu._TUNED if k != "_"]  # measured during the capture
    (entry,) = [v for k, v in conv_gpu._TUNED.items() if k != "_"]
    before = launch_count()
    eager = clgrad.nn.functional.conv2d(x, w, padding=1)
    assert g.num_kernels == launch_count() - before  # the conv's launches only
    assert all(ms > 0 for ms in entry["ms"].values())
    g.replay()
    xp = np.pad(xn, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((1, 16, 9, 7))
    for i in range(3):
        for j in range(3):
            want += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 9, j:j + 7], wn[:, :, i, j])
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(eager.numpy(), want, rtol=1e-4, atol=1e-4)


# -- igemm_gpu's weight reads (W_KC, W_FLAT, the view), direct weight gradient, insertion ----
def _run_wview(x_np, w_np, b_np, wkind, dtype=clgrad.float32, seed=0, **kw):
    """_run with the weight as a view of kind ``wkind`` (test_conv._noncontig) and the
    input contiguous: (y, gx, gw, gb) and the float64 reference."""
    from test_conv import _noncontig, ref_conv
    rng = np.random.default_rng(seed)
    x = clgrad.tensor(x_np, dtype=dtype, requires_grad=True)
    wbase, w = _noncontig(w_np, wkind, dtype)
    b = clgrad.tensor(b_np, dtype=dtype, requires_grad=True)
    y = clgrad.nn.functional.conv2d(x, w, b, **kw)
    gout = rng.standard_normal(tuple(y.shape))
    y.backward(clgrad.tensor(gout, dtype=dtype))
    gw = wbase.grad.numpy()
    gw = {"narrow": lambda g: g[:, 2:2 + w_np.shape[1]], "step": lambda g: g[..., ::2],
          "transpose": lambda g: g.transpose(0, 1, 3, 2)}.get(wkind, lambda g: g)(gw)
    got = (y.detach().numpy(), x.grad.numpy(), gw, b.grad.numpy())
    return got, ref_conv(x_np, w_np, b_np, gout, **kw)


def _spy_weight_reads(monkeypatch):
    """The defines of every igemm_gpu_fwd launch's weight reads, in order (a list)."""
    seen, real = [], conv_gpu._igemm_weight

    def spy(p, w, tsk):
        out = real(p, w, tsk)
        seen.append(("copy " if out[1] is not w else "") + ",".join(sorted(out[2])))
        return out
    monkeypatch.setattr(conv_gpu, "_igemm_weight", spy)
    return seen


WREAD_CASES = [  # (N, C, H, W, O, (kH, kW), kwargs, weight view kind, dtype, what "auto" reads:
    #             forward, input gradient (each phase))
    (2, 8, 9, 10, 70, (3, 3), dict(padding=1, groups=2), "contig", clgrad.float32,
     "copy W_FLAT", "copy W_FLAT"),
    (1, 6, 11, 9, 10, (3, 2), dict(stride=2, dilation=(2, 1), padding=(2, 1)), "transpose",
     clgrad.float64, "copy W_FLAT", "copy W_FLAT"),
    (2, 5, 8, 13, 12, (2, 3), dict(stride=(2, 1), padding=(0, 2), groups=1), "step",
     clgrad.float32, "copy W_FLAT", "copy TAPS_OUTER,W_FLAT"),  # input gradient: 12 channels
    (1, 12, 7, 9, 60, (3, 3), dict(dilation=(1, 2), padding=2, groups=3), "narrow",
     clgrad.float32, "copy W_FLAT", "copy W_FLAT"),
    # channels a multiple of the depth (8 forward, 12 input gradient): taps outer
    (2, 16, 7, 9, 72, (3, 3), dict(dilation=2, padding=2), "transpose", clgrad.float32,
     "copy TAPS_OUTER,W_FLAT", "copy TAPS_OUTER,W_FLAT"),
    (1, 32, 9, 8, 144, (3, 3), dict(stride=2, padding=1, groups=2), "contig", clgrad.float64,
     "copy TAPS_OUTER,W_FLAT", "copy TAPS_OUTER,W_FLAT"),
]


@pytest.mark.parametrize("mode", ("auto", "cmajor", "copy", "view"))
@pytest.mark.parametrize("case", WREAD_CASES, ids=lambda c: f"{c[7]}-{c[4]}-{c[8].name}")
def test_igemm_weight_reads(case, mode, monkeypatch):
    # every depth order and weight-read path of igemm_gpu_fwd (forward, the input gradient's
    # flipped view and its stride phases) against the float64 NumPy reference, on plain and
    # strided weights
    monkeypatch.setattr(conv_gpu, "_W_READ", mode)
    seen = _spy_weight_reads(monkeypatch)
    backends.conv_algorithm = "igemm_gpu"
    n, c, h, w, o, k, kwargs, wkind, dt, auto_fwd, auto_gi = case
    x, wt, b = _data(n, c, h, w, o, c // kwargs.get("groups", 1), *k)
    got, ref = _run_wview(x, wt, b, wkind, dtype=dt, **kwargs)
    _close(got, ref, 1e-10 if dt is clgrad.float64 else 1e-4)
    assert set(backends.last_conv_algorithms.values()) == {"igemm_gpu"}
    cmajor = "W_KC" if wkind in ("contig", "narrow") else "copy W_FLAT"
    want = {"auto": auto_fwd, "cmajor": cmajor, "copy": "copy W_FLAT", "view": ""}[mode]
    assert seen[0] == want, seen  # the forward
    if mode == "auto":
        assert seen[1:] and all(s == auto_gi for s in seen[1:]), seen  # the input gradient
    elif mode != "view":
        assert all(s in ("W_KC", "copy W_FLAT") for s in seen), seen


def test_igemm_weight_layouts(monkeypatch):
    # which read each weight view gets, and the copy's contents: the flipped, transposed
    # weight of the input gradient as [g][c*kh*kw][rows] (NumPy: the same flip and transpose)
    from clgrad.ops.conv import problem as C
    monkeypatch.setattr(conv_gpu, "_W_READ", "cmajor")
    rng = np.random.default_rng(3)
    wn = rng.standard_normal((6, 2, 3, 2)).astype(np.float32)
    x, w, y = clgrad.zeros((1, 4, 5, 5)), clgrad.tensor(wn), clgrad.zeros((1, 6, 3, 4))
    geo = C._check(x, w, None, 1, 0, 1, 2)
    pf = C._forward_problem(geo, x, w, y, None)
    assert conv_gpu._igemm_weight(pf, w, 8)[2] == {"W_KC": 1}
    pi = C._grad_input_problem(geo, y, w, x)
    q, buf, d, _ = conv_gpu._igemm_weight(pi, w, 8)
    assert d == {"W_FLAT": 1} and buf is not w and q.k == (0, 18 * 2, 1, 6 * 2, 2 * 2, 2)
    # group g's weight of the input gradient: rows = input channels c, taps = (o, kh, kw)
    want = wn[:, :, ::-1, ::-1].reshape(2, 3, 2, 3, 2).transpose(0, 1, 3, 4, 2).reshape(2, 18, 2)
    np.testing.assert_array_equal(buf.numpy(), want)
    # "auto": copied, taps outer where the channels are a multiple of the depth:
    # [g][kh][kw][c][rows], else [g][c*kh*kw][rows]
    monkeypatch.setattr(conv_gpu, "_W_READ", "auto")
    q, buf, d, _ = conv_gpu._igemm_weight(pf, w, 4)
    assert d == {"W_FLAT": 1} and buf is not w and q.k == (0, 36, 1, 3 * 6, 2 * 3, 3)
    want = wn.reshape(2, 3, 12).transpose(0, 2, 1)
    np.testing.assert_array_equal(buf.numpy(), want)
    q, buf, d, _ = conv_gpu._igemm_weight(pf, w, 2)
    assert d == {"TAPS_OUTER": 1, "W_FLAT": 1} and q.k == (0, 36, 1, 3, 2 * 2 * 3, 2 * 3)
    want = wn.reshape(2, 3, 2, 3, 2).transpose(0, 3, 4, 2, 1).reshape(2, 12, 3)
    np.testing.assert_array_equal(buf.numpy(), want)
    # "cmajor", 1 x 1: the input gradient's transposed weight has unit row stride: no copy
    monkeypatch.setattr(conv_gpu, "_W_READ", "cmajor")
    w1 = clgrad.tensor(wn[:, :, :1, :1].copy())
    geo1 = C._check(x, w1, None, 1, 0, 1, 2)
    p1 = C._grad_input_problem(geo1, clgrad.zeros((1, 6, 5, 5)), w1, x)
    q1, b1, d1, _ = conv_gpu._igemm_weight(p1, w1, 8)
    assert d1 == {"W_FLAT": 1} and b1 is w1 and q1.k[2] == 1 and q1.k[5] == 2  # taps: forward rows


@pytest.mark.parametrize("direct", (True, False), ids=("split1", "split"))
def test_igemm_wgrad_direct(direct, monkeypatch):
    # one split: the weight and bias gradients written by the GEMM itself, no reduce launch
    calls = []
    monkeypatch.setattr(conv_gpu, "_reduce", lambda *a: (calls.append(1), _reduce(*a)))
    monkeypatch.setattr(conv_gpu, "_SPLIT_PIXELS", 1 << 40 if direct else 5)
    backends.conv_algorithm = "igemm_gpu"
    x, wt, b = _data(2, 6, 9, 8, 20, 3, 3, 3)
    got, ref = _run(x, wt, b, kind="narrow", padding=1, groups=2)
    _close(got, ref, 1e-4)
    assert calls == ([] if direct else [1])
    wb = _data(2, 6, 9, 8, 20, 3, 3, 3, bias=False)
    got, ref = _run(*wb, kind="narrow", padding=(0, 1), dilation=2, groups=2)  # no bias
    _close(got, ref, 1e-4)
    assert set(backends.last_conv_algorithms.values()) == {"igemm_gpu"}


@pytest.mark.parametrize("mode", ("auto", "cmajor", "view"))
def test_igemm_zero_insertion(mode, monkeypatch):
    # the input gradient of a strided conv run as one problem with zeros inserted (UH, UW > 1:
    # what transposed convolutions are), not as phases: the kernel's UH/UW path
    from clgrad.ops.conv import choice
    from clgrad.ops.conv.problem import Plan
    monkeypatch.setattr(conv_gpu, "_W_READ", mode)
    fwd, wgrad = choice._KERNELS["igemm_gpu"]
    monkeypatch.setitem(choice._KERNELS, "igemm_gpu",
                        ((lambda p, dt, dev: Plan(inserts=p.uh * p.uw > 1), fwd[1]), wgrad))
    backends.conv_algorithm = "igemm_gpu"
    x, wt, b = _data(2, 4, 11, 10, 6, 2, 3, 2)
    got, ref = _run(x, wt, b, kind="step", stride=(2, 3), padding=(1, 0), dilation=(1, 2),
                    groups=2)
    _close(got, ref, 1e-4)
    x, wt, b = _data(1, 3, 7, 8, 5, 3, 3, 3)
    got, ref = _run(x, wt, b, dtype=clgrad.float64, stride=2, padding=1)
    _close(got, ref, 1e-10)
    # 24 output channels: the input gradient's 24 channels are two tiles of depth 12
    seen = _spy_weight_reads(monkeypatch)
    x, wt, b = _data(2, 4, 9, 7, 24, 4, 3, 3)
    got, ref = _run(x, wt, b, stride=2, padding=1, dilation=(1, 2))
    _close(got, ref, 1e-4)
    assert seen[1] == {"auto": "copy TAPS_OUTER,W_FLAT", "cmajor": "copy W_FLAT",
                       "view": ""}[mode], seen


def test_igemm_weight_copy_in_a_capture(monkeypatch):
    # the forward's weight copy (TAPS_OUTER: 24 channels, depth 12) is recorded with the conv:
    # a replay after an in-place weight update reads the new weight (NumPy: direct sums)
    monkeypatch.setattr(backends, "conv_algorithm", "igemm_gpu")
    seen = _spy_weight_reads(monkeypatch)
    rng = np.random.default_rng(12)
    xn = rng.standard_normal((2, 24, 6, 5)).astype(np.float32)
    wn = rng.standard_normal((24, 24, 3, 3)).astype(np.float32)
    x, w = clgrad.tensor(xn), clgrad.tensor(wn)
    g = clgrad.cuda.CUDAGraph()
    with clgrad.cuda.graph(g):
        y = clgrad.nn.functional.conv2d(x, w, padding=1)
    assert seen == ["copy TAPS_OUTER,W_FLAT"] and g.num_kernels == 2
    w.copy_(clgrad.tensor(-2 * wn))
    g.replay()
    xp = np.pad(xn.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((2, 24, 6, 5))
    for i in range(3):
        for j in range(3):
            want += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 6, j:j + 5], -2 * wn[:, :, i, j])
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
