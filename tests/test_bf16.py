"""bfloat16: the dtype, its conversions (host and device), promotion, finfo/iinfo, printing,
modules and optimizers. Oracles: hand-computed bit patterns, the nearest-bfloat16 rule
evaluated in float64 over both candidate neighbours, and NumPy float64 updates. The ops'
bfloat16 arithmetic is tested per family (tests/test_bf16_*.py)."""
import numpy as np
import pytest

import clgrad
from clgrad import dtypes

BF = clgrad.bfloat16


def _bits(t):
    return t._host_bits().astype(np.uint16)


def _nearest_bf16(x: np.ndarray) -> np.ndarray:
    """The oracle: for each finite float32 x, of the two bfloat16 values around it (its
    truncation and the next one away from zero) the nearer in float64, ties to the even bit
    pattern; beyond the largest finite bfloat16 + half an ulp, inf."""
    x = np.asarray(x, np.float32)
    u = x.view(np.uint32)
    lo = (u >> 16).astype(np.uint32)
    hi = lo + 1
    vlo = (lo << 16).view(np.float32).astype(np.float64)
    vhi = (hi << 16).view(np.float32).astype(np.float64)
    xd = x.astype(np.float64)
    dlo, dhi = np.abs(xd - vlo), np.abs(vhi - xd)
    pick_hi = (dhi < dlo) | ((dhi == dlo) & (lo % 2 == 1))
    return np.where(pick_hi, hi, lo).astype(np.uint16)


# hand-computed: value -> bits
HAND = [(1.0, 0x3F80), (-2.5, 0xC020), (0.0, 0x0000), (-0.0, 0x8000),
        (1 + 2 ** -8, 0x3F80),            # a tie: stays on the even pattern 0x3F80
        (1 + 3 * 2 ** -8, 0x3F82),        # a tie: up to the even 0x3F82
        (1 + 2 ** -8 + 2 ** -20, 0x3F81),  # past the tie: up
        (1 / 3, 0x3EAB), (np.inf, 0x7F80), (-np.inf, 0xFF80),
        (3.4028234663852886e38, 0x7F80),  # float32's max rounds past bfloat16's: inf
        (3.3895313892515355e38, 0x7F7F),  # bfloat16's max
        (1e-45, 0x0000), (2 ** -133, 0x0001)]  # float32 denormals: 2^-133 is bfloat16's least


def test_hand_values_host_and_device():
    vals = np.array([v for v, _ in HAND], np.float64)
    want = np.array([b for _, b in HAND], np.uint16)
    np.testing.assert_array_equal(dtypes.to_bf16_bits(vals), want)
    t = clgrad.tensor(vals.astype(np.float32)).to(BF)  # float32 -> bfloat16 on the device
    np.testing.assert_array_equal(_bits(t), want)
    back = t.float().numpy()  # exact
    np.testing.assert_array_equal(back.view(np.uint32), want.astype(np.uint32) << 16)


def test_nan_stays_nan_quiet_and_signed():
    x = np.array([np.nan, -np.nan], np.float32)
    x.view(np.uint32)[0] = 0x7F800001  # a signalling NaN whose payload truncates to inf
    x.view(np.uint32)[1] = 0xFFC00000
    for bits in (dtypes.to_bf16_bits(x), _bits(clgrad.tensor(x).to(BF))):
        assert bits[0] == 0x7FC0 and bits[1] == 0xFFC0
    assert np.isnan(clgrad.tensor(x).to(BF).float().numpy()).all()


def test_random_patterns_round_to_nearest_even():
    rng = np.random.default_rng(0)
    u = rng.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32)
    x = u.view(np.float32)
    x = x[np.isfinite(x) & (np.abs(x) < 3.38e38)]
    want = _nearest_bf16(x)
    np.testing.assert_array_equal(dtypes.to_bf16_bits(x), want)
    np.testing.assert_array_equal(_bits(clgrad.tensor(x).to(BF)), want)


@pytest.mark.parametrize("src", ["float64", "float16", "int64", "int32", "int16", "int8",
                                 "uint8", "bool"])
def test_conversions_from_other_dtypes(src, cpu_fp64_or_skip):
    if src == "float16" and not clgrad.default_device().fp16:
        pytest.skip("no cl_khr_fp16")
    if src == "float64":
        cpu_fp64_or_skip()
    vals = np.array([0, 1, -3, 7, 100, -128, 127, 255, 250.5, 1e-3],
                    dtype=np.float64)
    a = vals.astype(np.dtype(src) if src != "bool" else np.bool_)
    t = clgrad.tensor(a).to(BF)
    assert t.dtype is BF
    # through float32 first (PyTorch's conversions go through float too)
    want = _nearest_bf16(a.astype(np.float32))
    np.testing.assert_array_equal(_bits(t), want)


@pytest.mark.parametrize("dst", ["float32", "float16", "int64", "int32", "int8", "uint8",
                                 "bool"])
def test_conversions_to_other_dtypes(dst):
    if dst == "float16" and not clgrad.default_device().fp16:
        pytest.skip("no cl_khr_fp16")
    vals = np.array([0.0, -0.0, 1.0, -2.5, 3.140625, 100.0, -7.75, 0.0078125], np.float32)
    t = clgrad.tensor(vals, dtype=BF)
    got = t.to(getattr(clgrad, dst)).numpy()
    with np.errstate(invalid="ignore"):
        want = vals.astype(np.dtype(dst) if dst != "bool" else np.bool_)
    np.testing.assert_array_equal(got, want)


@pytest.fixture
def cpu_fp64_or_skip():
    def check():
        if not clgrad.default_device().fp64:
            pytest.skip("no cl_khr_fp64")
    return check


def test_views_and_strided_copies_keep_bits():
    x = clgrad.arange(24, dtype=clgrad.float32).reshape(2, 3, 4).to(BF)
    want = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    v = x.permute(2, 0, 1)
    assert v.dtype is BF and not v.is_contiguous()
    np.testing.assert_array_equal(v.contiguous().float().numpy(), want.transpose(2, 0, 1))
    np.testing.assert_array_equal(x[:, 1, ::2].float().numpy(), want[:, 1, ::2])
    np.testing.assert_array_equal(x.transpose(0, 2).float().numpy(), want.transpose(2, 1, 0))
    np.testing.assert_array_equal(x.expand(3, 2, 3, 4).float().numpy()[2], want)
    c = x.clone()
    assert c.dtype is BF and c._storage is not x._storage
    np.testing.assert_array_equal(_bits(c), _bits(x))


def test_fill_creation_and_host_values():
    assert clgrad.zeros(3, dtype=BF).tolist() == [0.0, 0.0, 0.0]
    assert clgrad.full((2,), 1 / 3, dtype=BF).tolist() == [0.333984375, 0.333984375]
    t = clgrad.tensor([1.0, 2.0, 3.0009765625], dtype=BF)  # the last rounds to 3.0
    assert t.tolist() == [1.0, 2.0, 3.0]
    assert clgrad.tensor(2.5, dtype=BF).item() == 2.5
    assert clgrad.tensor([[1, 2]], dtype=BF).shape == (1, 2)
    assert float(clgrad.tensor([0.1], dtype=BF)) == 0.10009765625
    with pytest.raises(TypeError, match="BFloat16"):
        t.numpy()
    assert "dtype=clgrad.bfloat16" in repr(t)
    assert "3." in repr(t)
    assert t.is_floating_point() and t.element_size() == 2
    assert t.type() == "torch.BFloat16Tensor"


def test_promotion():
    pt = clgrad.promote_types
    assert pt(BF, clgrad.float16) is clgrad.float32
    assert pt(BF, clgrad.float32) is clgrad.float32
    assert pt(BF, clgrad.float64) is clgrad.float64
    for i in (clgrad.int64, clgrad.int32, clgrad.uint8, clgrad.bool):
        assert pt(BF, i) is BF and pt(i, BF) is BF
    x = clgrad.ones(2, dtype=BF)
    assert clgrad.result_type(x, 2.5) is BF
    assert clgrad.result_type(x, clgrad.ones(2)) is clgrad.float32
    assert clgrad.result_type(x, clgrad.tensor(2.0)) is BF  # a 0-dim float32 does not lift
    assert clgrad.can_cast(BF, clgrad.int32) is False
    assert clgrad.can_cast(clgrad.int32, BF) is True
    assert dtypes.to_dtype("bfloat16") is BF
    assert clgrad.tensor(np.zeros(2, np.uint16)).dtype is not BF  # uint16 arrays: not bits


def test_finfo_iinfo():
    f = clgrad.finfo(BF)
    assert (f.bits, f.eps, f.max, f.tiny, f.resolution) == (
        16, 2.0 ** -7, (2 - 2 ** -7) * 2.0 ** 127, 2.0 ** -126, 0.01)
    assert f.min == -f.max and f.smallest_normal == f.tiny and f.dtype == "bfloat16"
    f32 = clgrad.finfo(clgrad.float32)
    assert f32.eps == 2.0 ** -23 and f32.max == float(np.finfo(np.float32).max)
    assert clgrad.finfo().dtype == "float32"
    assert clgrad.finfo(clgrad.float16).max == 65504.0
    i = clgrad.iinfo(clgrad.int8)
    assert (i.bits, i.min, i.max, i.dtype) == (8, -128, 127, "int8")
    assert clgrad.iinfo(clgrad.int64).max == 2 ** 63 - 1
    with pytest.raises(TypeError, match="floating"):
        clgrad.finfo(clgrad.int32)
    with pytest.raises(TypeError, match="integer"):
        clgrad.iinfo(BF)
    with pytest.raises(TypeError):
        clgrad.iinfo(clgrad.bool)
    assert BF.is_signed and not clgrad.uint8.is_signed and clgrad.int8.is_signed
    assert not BF.is_complex


def test_a_kernel_without_a_bfloat16_build_is_refused():
    dev = clgrad.default_device()
    with pytest.raises(TypeError, match="no bfloat16 build"):
        dev.kernel("elementwise.cl", "add", {"T": "ushort"})


def test_module_bfloat16_and_load_state_dict():
    m = clgrad.nn.Linear(3, 2)
    w = m.weight.detach().numpy().copy()
    m.bfloat16()
    assert m.weight.dtype is BF and m.bias.dtype is BF and m.weight.requires_grad
    np.testing.assert_array_equal(_bits(m.weight), _nearest_bf16(w))
    sd = {"weight": clgrad.tensor(np.full((2, 3), 0.5, np.float32)),
          "bias": clgrad.tensor([1.0, -1.0])}
    m.load_state_dict(sd)  # float32 into bfloat16 parameters: converted
    assert m.weight.dtype is BF and m.weight.tolist() == [[0.5] * 3] * 2
    m32 = clgrad.nn.Linear(3, 2)
    m32.load_state_dict(m.state_dict())  # and back
    assert m32.weight.dtype is clgrad.float32 and m32.bias.tolist() == [1.0, -1.0]


def _round(x):
    return dtypes.bf16_to_float32(dtypes.to_bf16_bits(x)).astype(np.float64)


def test_sgd_momentum_on_bfloat16_parameters():
    w0 = np.array([1.0, 2.0, 3.0, -0.5])
    grads = [np.array([0.5, -1.0, 2.0, 0.25]), np.array([0.1, 0.2, -0.3, 4.0]),
             np.array([-1.0, 0.5, 0.5, 0.5])]
    p = clgrad.nn.Parameter(clgrad.tensor(w0, dtype=BF))
    opt = clgrad.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01)
    w, buf = _round(w0), None
    for g in grads:
        p.grad = clgrad.tensor(g, dtype=BF)
        opt.step()
        d = _round(g) + 0.01 * w  # the float32 formula, parameter and state rounded once
        buf = d if buf is None else 0.9 * buf + d
        buf = _round(buf)
        w = _round(w - 0.1 * buf)
    assert p.dtype is BF and opt.state[p]["momentum_buffer"].dtype is BF
    np.testing.assert_allclose(p.detach().float().numpy(), w, rtol=2 ** -7)
    np.testing.assert_allclose(opt.state[p]["momentum_buffer"].float().numpy(), buf,
                               rtol=2 ** -7)


def test_adam_on_bfloat16_parameters():
    p = clgrad.nn.Parameter(clgrad.tensor([1.0, -2.0], dtype=BF))
    opt = clgrad.optim.Adam([p], lr=0.1)
    p.grad = clgrad.tensor([0.5, -4.0], dtype=BF)
    opt.step()
    # first Adam step moves each weight by lr * sign(g) (m_hat / sqrt(v_hat) = g / |g|)
    assert p.tolist() == [0.8984375, -1.8984375]  # 0.9 and -1.9 rounded to bfloat16
    st = opt.state[p]
    assert st["exp_avg"].dtype is BF and st["exp_avg_sq"].dtype is BF


def test_autocast_cpu_default_is_bfloat16():
    assert clgrad.amp.get_autocast_dtype("cpu") is BF
    assert clgrad.amp.get_autocast_dtype("cuda") is clgrad.float16
    with clgrad.autocast("cpu"):
        assert clgrad.amp.is_autocast_enabled("cpu")
        assert clgrad.amp.get_autocast_dtype("cpu") is BF


@pytest.mark.parametrize("dt,big", [("float32", 1e39), ("float16", 65519.0),
                                    ("bfloat16", 3.3961e38)])
def test_number_overflow_raises_as_pytorch(dt, big):
    """c10's overflows: a finite number beyond the dtype's largest finite value raises in
    fill_, masked_fill and clamp (values checked with PyTorch 2.14); full() checks float32
    only (full(70000.0, float16) is inf there)."""
    d = getattr(clgrad, dt)
    if d is clgrad.float16 and not clgrad.default_device().fp16:
        pytest.skip("no cl_khr_fp16")
    x = clgrad.zeros(2, dtype=d)
    m = clgrad.tensor([True, False])
    for f in (lambda: x.clone().fill_(big), lambda: x.masked_fill(m, big),
              lambda: x.clamp(max=big), lambda: x.clamp(min=-big)):
        with pytest.raises(RuntimeError, match=f"type {dt} without overflow"):
            f()
    assert x.clone().fill_(float("inf")).tolist() == [float("inf")] * 2
    if d is clgrad.float32:
        with pytest.raises(RuntimeError, match="overflow"):
            clgrad.full((1,), big)
    else:
        want = float(np.float16(big)) if d is clgrad.float16 else float(_round(big))
        assert clgrad.full((1,), big, dtype=d).tolist() == [want]  # rounded, no error


def test_comparisons_take_the_number_in_bfloat16():
    """PyTorch's comparisons take a Python number in the tensor's dtype: bfloat16 0.1 ==
    0.1 (both round to 0.10009765625), 256 == 257 (257 rounds to 256, ties to even)."""
    x = clgrad.tensor([0.1, 256.0, 1.0], dtype=BF)
    assert (x == 0.1).tolist() == [True, False, False]
    assert (x <= 0.1).tolist() == [True, False, False]
    assert (x > 0.1).tolist() == [False, True, True]
    assert (x == 257).tolist() == [False, True, False]
    assert (x != 1.001).tolist() == [True, True, False]  # 1.001 rounds to 1.0
    assert clgrad.where(x == 0.1, 1, 0).tolist() == [1, 0, 0]


def test_scalars_are_opmath_tensors_with_dims_are_rounded():
    """A 0-dim tensor or a number takes part in float32 (PyTorch's opmath scalar: 3 * 257 =
    771 -> 772 in bfloat16, not 3 * 256); a tensor with dims is loaded as bfloat16 first
    (257 -> 256). Hand-computed, checked with PyTorch 2.14."""
    x = clgrad.tensor([0.5, 3.0, -1.609375], dtype=BF)
    assert (x * clgrad.tensor(257.0)).tolist() == [128.0, 772.0, -414.0]
    assert (x * clgrad.tensor(257.0, dtype=clgrad.float64)).tolist() == [128.0, 772.0, -414.0]
    assert (x + clgrad.tensor([257, 1, 1])).tolist() == [256.0, 4.0, -0.609375]
    assert (x / 3).tolist() == [0.1669921875, 1.0, -0.53515625]
    assert (x * 2).dtype is BF and (x + clgrad.tensor(1.0)).dtype is BF
    w = x.detach().requires_grad_(True)
    assert (w * 2).grad_fn.name() == "MulBackward0"  # the op's name, not the conversion's


def test_grad_scaler_unscales_bfloat16_gradients():
    s = clgrad.amp.GradScaler("cpu")
    p = clgrad.nn.Parameter(clgrad.ones(3, dtype=BF))
    opt = clgrad.optim.SGD([p], lr=0.1)
    s.scale((p * 2).sum()).backward()
    s.step(opt)
    s.update()
    assert p.tolist() == [0.80078125] * 3 and s.get_scale() == 65536.0  # 0.8 in bfloat16
    p.grad = None
    s.scale((p * float("inf")).sum()).backward()
    s.step(opt)  # skipped: an inf gradient
    s.update()
    assert p.tolist() == [0.80078125] * 3 and s.get_scale() == 32768.0


def test_tensor_of_bfloat16_scalars_and_host_datasets():
    t = clgrad.tensor([clgrad.tensor(1.1, dtype=BF), clgrad.tensor(2.2, dtype=BF)])
    assert t.dtype is BF and t.tolist() == [1.1015625, 2.203125]
    with pytest.raises(TypeError, match="bfloat16 data cannot be kept on the host"):
        clgrad.utils.data.TensorDataset(clgrad.tensor([[1.1]], dtype=BF))


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_layer_and_group_norm_of_a_16_bit_input_with_float32_parameters(low):
    """PyTorch's mixed type (what autocast('cpu') gives a float32 LayerNorm after a 16-bit
    conv): computed in float32, the output in the input's dtype, float32 parameter grads."""
    d = getattr(clgrad, low)
    if d is clgrad.float16 and not clgrad.default_device().fp16:
        pytest.skip("no cl_khr_fp16")
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((2, 4, 6)).astype(np.float32)
    x = clgrad.tensor(xv).to(d)
    xd = x.float().numpy().astype(np.float64)
    w = clgrad.nn.Parameter(clgrad.tensor(rng.standard_normal(6).astype(np.float32)))
    b = clgrad.nn.Parameter(clgrad.tensor(rng.standard_normal(6).astype(np.float32)))
    y = clgrad.nn.functional.layer_norm(x, (6,), w, b)
    mu, var = xd.mean(-1, keepdims=True), xd.var(-1, keepdims=True)
    want = (xd - mu) / np.sqrt(var + 1e-5) * w.detach().numpy() + b.detach().numpy()
    assert y.dtype is d
    u = 2 ** -11 if d is clgrad.float16 else 2 ** -8  # one rounding of the result
    np.testing.assert_allclose(y.float().detach().numpy(), want, rtol=u, atol=u)
    y.float().sum().backward()
    assert w.grad.dtype is clgrad.float32 and b.grad.dtype is clgrad.float32
    np.testing.assert_allclose(b.grad.numpy(), np.full(6, 8.0))
    g = clgrad.nn.functional.group_norm(x, 2, clgrad.ones(4), clgrad.zeros(4))
    assert g.dtype is d


def test_get_autocast_dtype_checks_its_argument():
    assert clgrad.get_autocast_dtype("cpu") is BF  # also on the package, as torch's
    with pytest.raises(TypeError, match=r"argument 'device_type' \(position 1\) must be str"):
        clgrad.get_autocast_dtype(np.ones(2))
    with pytest.raises(RuntimeError, match="'cpu' or 'cuda'"):
        clgrad.get_autocast_dtype("mps")
